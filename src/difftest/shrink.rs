//! Shrinking a failing test case to a small one that still fails.
//!
//! Greedy passes, repeated while any of them makes progress: fewer invocations; instructions
//! removed (flow targets after them moved down) or, where removing breaks the block structure,
//! replaced by NOP; simpler operands (no relative addressing, no negation, identity swizzles,
//! all lanes written); and simpler inputs (uniforms and input registers dropped, lanes set to 0
//! or 1). A candidate is kept only when the caller's test says it still fails; the caller
//! decides what counts (the same mismatch, a program that is still expressible as source).

use crate::isa::{
    BoolFlowOp, CondFlowOp, DestMask, Instruction, OperandDescriptor, RelIndex, SimpleOp, Swizzle,
};

use super::case::{Lane, Op, TestCase};

/// How many candidates one shrink may try (each costs a compile and a run).
pub const DEFAULT_ATTEMPTS: usize = 4000;

/// Shrinks `case` while `still_fails` holds, trying at most `attempts` candidates.
pub fn shrink(
    case: &TestCase,
    attempts: usize,
    still_fails: &mut dyn FnMut(&TestCase) -> bool,
) -> TestCase {
    let mut shrinker = Shrinker {
        best: case.clone(),
        attempts_left: attempts,
        still_fails,
    };
    loop {
        let before = shrinker.best.clone();
        shrinker.invocations();
        shrinker.remove_instructions();
        shrinker.nop_instructions();
        shrinker.simplify_operands();
        shrinker.simplify_inputs();
        if shrinker.best == before || shrinker.attempts_left == 0 {
            return shrinker.best;
        }
    }
}

struct Shrinker<'a> {
    best: TestCase,
    attempts_left: usize,
    still_fails: &'a mut dyn FnMut(&TestCase) -> bool,
}

impl Shrinker<'_> {
    /// Keeps `candidate` if it differs from the best so far and still fails.
    fn try_candidate(&mut self, candidate: TestCase) -> bool {
        if candidate == self.best || self.attempts_left == 0 {
            return false;
        }
        self.attempts_left -= 1;
        if (self.still_fails)(&candidate) {
            self.best = candidate;
            true
        } else {
            false
        }
    }

    fn invocations(&mut self) {
        let count = self.best.inputs.invocations.len();
        // One invocation alone, then each dropped in turn (later ones first).
        for keep in 0..count {
            if self.best.inputs.invocations.len() <= 1 {
                return;
            }
            let mut candidate = self.best.clone();
            let only = candidate.inputs.invocations
                [keep.min(candidate.inputs.invocations.len() - 1)]
            .clone();
            candidate.inputs.invocations = vec![only];
            if self.try_candidate(candidate) {
                return;
            }
        }
        let mut index = self.best.inputs.invocations.len();
        while index > 0 {
            index -= 1;
            if self.best.inputs.invocations.len() <= 1 {
                return;
            }
            let mut candidate = self.best.clone();
            if index < candidate.inputs.invocations.len() {
                candidate.inputs.invocations.remove(index);
                self.try_candidate(candidate);
            }
        }
    }

    fn remove_instructions(&mut self) {
        let mut index = self.best.program.ops.len();
        while index > 0 {
            index -= 1;
            if index >= self.best.program.ops.len() || self.best.program.ops.len() <= 1 {
                continue;
            }
            let mut candidate = self.best.clone();
            candidate.program.ops = without(&candidate.program.ops, index);
            if usize::from(candidate.program.entry) > index {
                candidate.program.entry -= 1;
            }
            if usize::from(candidate.program.entry) >= candidate.program.ops.len() {
                continue;
            }
            self.try_candidate(candidate);
        }
    }

    fn nop_instructions(&mut self) {
        let nop = Op::plain(Instruction::Simple {
            op: SimpleOp::Nop,
            ignored: 0,
        });
        for index in 0..self.best.program.ops.len() {
            if self.best.program.ops[index] == nop {
                continue;
            }
            let mut candidate = self.best.clone();
            candidate.program.ops[index] = nop;
            self.try_candidate(candidate);
        }
    }

    fn simplify_operands(&mut self) {
        for index in 0..self.best.program.ops.len() {
            let op = self.best.program.ops[index];
            for simpler in simpler_ops(op) {
                let mut candidate = self.best.clone();
                candidate.program.ops[index] = simpler;
                self.try_candidate(candidate);
            }
        }
        // The output table stays: the reproducer's `run` output shows only its registers.
    }

    fn simplify_inputs(&mut self) {
        let simple_lanes = [Lane::ZERO, Lane::F24(0x3F_0000)];
        // Uniforms: dropped, or lane by lane 0 or 1.
        let floats: Vec<u8> = self.best.inputs.floats.keys().copied().collect();
        for n in floats {
            let mut candidate = self.best.clone();
            candidate.inputs.floats.remove(&n);
            if self.try_candidate(candidate) {
                continue;
            }
            for lane in 0..4 {
                for simple in simple_lanes {
                    let mut candidate = self.best.clone();
                    if let Some(vector) = candidate.inputs.floats.get_mut(&n) {
                        vector[lane] = simple;
                    }
                    if self.try_candidate(candidate) {
                        break;
                    }
                }
            }
        }
        for n in 0..4 {
            for lane in 0..4 {
                if self.best.inputs.ints[n][lane] != 0 {
                    let mut candidate = self.best.clone();
                    candidate.inputs.ints[n][lane] = 0;
                    self.try_candidate(candidate);
                }
            }
        }
        if self.best.inputs.bools != 0 {
            let mut candidate = self.best.clone();
            candidate.inputs.bools = 0;
            if !self.try_candidate(candidate) {
                for bit in 0..16 {
                    if self.best.inputs.bools & (1 << bit) != 0 {
                        let mut candidate = self.best.clone();
                        candidate.inputs.bools &= !(1 << bit);
                        self.try_candidate(candidate);
                    }
                }
            }
        }
        // Input registers and uniform writes of each invocation.
        for invocation in 0..self.best.inputs.invocations.len() {
            let registers: Vec<u8> = self.best.inputs.invocations[invocation]
                .registers
                .keys()
                .copied()
                .collect();
            for n in registers {
                let mut candidate = self.best.clone();
                candidate.inputs.invocations[invocation]
                    .registers
                    .remove(&n);
                if self.try_candidate(candidate) {
                    continue;
                }
                for lane in 0..4 {
                    for simple in simple_lanes {
                        let mut candidate = self.best.clone();
                        if let Some(vector) = candidate.inputs.invocations[invocation]
                            .registers
                            .get_mut(&n)
                        {
                            vector[lane] = simple;
                        }
                        if self.try_candidate(candidate) {
                            break;
                        }
                    }
                }
            }
            let writes: Vec<u8> = self.best.inputs.invocations[invocation]
                .uniform_writes
                .keys()
                .copied()
                .collect();
            for n in writes {
                let mut candidate = self.best.clone();
                candidate.inputs.invocations[invocation]
                    .uniform_writes
                    .remove(&n);
                self.try_candidate(candidate);
            }
        }
    }
}

/// Simpler forms of one instruction: without relative addressing, with a plainer descriptor.
fn simpler_ops(op: Op) -> Vec<Op> {
    let mut result = Vec::new();
    let mut instruction = op.instruction;
    let has_rel = match &mut instruction {
        Instruction::Binary { rel, .. }
        | Instruction::Unary { rel, .. }
        | Instruction::Mova { rel, .. }
        | Instruction::Cmp { rel, .. }
        | Instruction::Mad { rel, .. } => {
            let had = *rel != RelIndex::None;
            *rel = RelIndex::None;
            had
        }
        _ => false,
    };
    if has_rel {
        result.push(Op {
            instruction,
            descriptor: op.descriptor,
        });
    }
    if !op.has_descriptor() {
        return result;
    }
    let d = op.descriptor;
    let is_mova = matches!(op.instruction, Instruction::Mova { .. });
    let slots = |negate: bool, identity: bool| -> [(bool, Swizzle); 3] {
        std::array::from_fn(|n| {
            (
                d.negate(n) && !negate,
                if identity {
                    Swizzle::IDENTITY
                } else {
                    d.swizzle(n)
                },
            )
        })
    };
    let with = |mask: DestMask, sources| Op {
        instruction: op.instruction,
        descriptor: OperandDescriptor::new(mask, sources),
    };
    result.push(with(d.dest_mask(), slots(true, false)));
    result.push(with(d.dest_mask(), slots(false, true)));
    if !is_mova {
        result.push(with(DestMask::ALL, slots(false, false)));
    }
    result.retain(|candidate| *candidate != op);
    result
}

/// The code with the word at `index` removed and every flow target after it moved down.
fn without(ops: &[Op], index: usize) -> Vec<Op> {
    let removed = index as u32;
    // A range [start, start + count) loses a word when it contains the removed one.
    let shrink_range = |start: u16, count: u8| -> (u16, u8) {
        let (s, c) = (u32::from(start), u32::from(count));
        if removed < s {
            (start - 1, count)
        } else if removed < s + c {
            (start, count - 1)
        } else {
            (start, count)
        }
    };
    let shift = |address: u16| -> u16 {
        if u32::from(address) > removed {
            address - 1
        } else {
            address
        }
    };
    ops.iter()
        .enumerate()
        .filter(|&(at, _)| at != index)
        .map(|(_, op)| {
            let mut op = *op;
            match &mut op.instruction {
                Instruction::CondFlow {
                    op: flow,
                    target,
                    count,
                    ..
                } => match flow {
                    CondFlowOp::Call | CondFlowOp::Callc | CondFlowOp::Ifc => {
                        (*target, *count) = shrink_range(*target, *count);
                    }
                    CondFlowOp::Jmpc => *target = shift(*target),
                    CondFlowOp::Breakc => {}
                },
                Instruction::BoolFlow {
                    op: flow,
                    target,
                    count,
                    ..
                } => match flow {
                    BoolFlowOp::Callu | BoolFlowOp::Ifu => {
                        (*target, *count) = shrink_range(*target, *count);
                    }
                    BoolFlowOp::Jmpu => *target = shift(*target),
                },
                // The last word of a LOOP body moves down when it is at or after the removed
                // word (removing the last word makes the one before it last).
                Instruction::Loop { target, .. }
                    if u32::from(*target) >= removed && *target > 0 =>
                {
                    *target -= 1;
                }
                _ => {}
            }
            op
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::CondCombine;
    use crate::isa::Condition;

    fn nop() -> Op {
        Op::plain(Instruction::Simple {
            op: SimpleOp::Nop,
            ignored: 0,
        })
    }

    #[test]
    fn removing_a_word_moves_targets_and_shrinks_ranges() {
        let ifc = Op::plain(Instruction::CondFlow {
            op: CondFlowOp::Ifc,
            cond: Condition {
                ref_x: true,
                ref_y: true,
                combine: CondCombine::X,
            },
            target: 3,
            count: 2,
            ignored: 0,
        });
        let looped = Op::plain(Instruction::Loop {
            int_id: 0,
            target: 6,
            count: 0,
            ignored: 0,
        });
        // 0: IFC, THEN 1-2, ELSE 3-4; 5: LOOP over 6.
        let ops = vec![ifc, nop(), nop(), nop(), nop(), looped, nop()];
        let shorter = without(&ops, 1);
        assert!(matches!(
            shorter[0].instruction,
            Instruction::CondFlow {
                target: 2,
                count: 2,
                ..
            }
        ));
        assert!(matches!(
            shorter[4].instruction,
            Instruction::Loop { target: 5, .. }
        ));
        let shorter = without(&ops, 3);
        assert!(matches!(
            shorter[0].instruction,
            Instruction::CondFlow {
                target: 3,
                count: 1,
                ..
            }
        ));
    }
}
