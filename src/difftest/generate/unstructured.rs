//! The programs picasso cannot express: flow targets redrawn at random, and words given
//! encodings picasso never writes.

use super::*;

/// Sets the target (and, for calls, the count) of a call or jump.
pub(super) fn set_target(instruction: &mut Instruction, new_target: u16, new_count: u8) {
    match instruction {
        Instruction::CondFlow {
            op, target, count, ..
        } => {
            *target = new_target;
            if matches!(op, CondFlowOp::Call | CondFlowOp::Callc) {
                *count = new_count;
            }
        }
        Instruction::BoolFlow {
            op, target, count, ..
        } => {
            *target = new_target;
            if *op == BoolFlowOp::Callu {
                *count = new_count;
            }
        }
        _ => {}
    }
}

/// Redraws the targets of one to three flow instructions at random (within the program, so
/// that the JIT does not compile all of program memory).
pub(super) fn unstructure(entropy: &mut Entropy, program: &mut TestProgram) {
    let len = program.ops.len();
    let flows: Vec<usize> = (0..len)
        .filter(|&at| {
            matches!(
                program.ops[at].instruction,
                Instruction::CondFlow { .. }
                    | Instruction::BoolFlow { .. }
                    | Instruction::Loop { .. }
            )
        })
        .collect();
    for _ in 0..1 + entropy.index(3) {
        let Some(at) = entropy.pick(&flows) else {
            return;
        };
        let range = |entropy: &mut Entropy, first: usize| {
            let target = first + entropy.index(len.saturating_sub(first).max(1));
            let count = entropy.index((len - target.min(len)).min(8) + 1);
            (target.min(len - 1) as u16, count as u8)
        };
        match &mut program.ops[at].instruction {
            Instruction::CondFlow {
                op, target, count, ..
            } => match op {
                CondFlowOp::Breakc => {}
                CondFlowOp::Jmpc => *target = entropy.index(len) as u16,
                CondFlowOp::Ifc => (*target, *count) = range(entropy, at + 1),
                CondFlowOp::Call | CondFlowOp::Callc => {
                    (*target, *count) = range(entropy, 0);
                    *count = (*count).max(1);
                }
            },
            Instruction::BoolFlow {
                op, target, count, ..
            } => match op {
                BoolFlowOp::Jmpu => *target = entropy.index(len) as u16,
                BoolFlowOp::Ifu => (*target, *count) = range(entropy, at + 1),
                BoolFlowOp::Callu => {
                    (*target, *count) = range(entropy, 0);
                    *count = (*count).max(1);
                }
            },
            // At or after itself: a LOOP ending at its own address ends at once.
            Instruction::Loop { target, .. } => {
                *target = (at + entropy.index(len - at)) as u16;
            }
            _ => {}
        }
    }
}

/// Gives some words encodings picasso never writes, which the engines must still run alike:
/// ignored bits set, unknown opcodes (NOP), CMP operators 6 and 7 (true), an index register on
/// a non-uniform source (no effect), descriptor bits no operation reads, a MOVA mask with z/w
/// bits or none.
pub(super) fn roughen(entropy: &mut Entropy, program: &mut TestProgram) {
    use crate::isa::decode::ignored;
    const UNKNOWN_OPCODES: [u32; 10] = [0x10, 0x11, 0x14, 0x15, 0x16, 0x17, 0x1C, 0x1D, 0x1E, 0x1F];
    for at in 0..program.ops.len() {
        if !entropy.chance(15) {
            continue;
        }
        let before = program.ops[at];
        let op = &mut program.ops[at];
        let ignored_mask = match op.instruction {
            Instruction::Unary { .. } => ignored::UNARY,
            Instruction::Mova { .. } => ignored::MOVA,
            Instruction::Simple { .. } => ignored::SIMPLE,
            Instruction::CondFlow { .. } | Instruction::BoolFlow { .. } => ignored::FLOW,
            Instruction::Loop { .. } => ignored::LOOP,
            Instruction::SetEmit { .. } => ignored::SETEMIT,
            _ => 0,
        };
        match entropy.index(4) {
            0 if ignored_mask != 0 => {
                if let Ok(word) = crate::isa::encode(&op.instruction) {
                    let noise = (entropy.next_u64() as u32) & ignored_mask;
                    op.instruction = crate::isa::decode(word | noise);
                }
            }
            1 if matches!(
                op.instruction,
                Instruction::Simple {
                    op: SimpleOp::Nop,
                    ..
                }
            ) =>
            {
                let opcode = entropy.pick(&UNKNOWN_OPCODES).unwrap_or(0x10);
                let word = opcode << 26 | (entropy.next_u64() as u32 & ((1 << 26) - 1));
                op.instruction = Instruction::Unknown { word };
            }
            _ => {
                match &mut op.instruction {
                    Instruction::Cmp { cmp_x, cmp_y, .. } => {
                        *cmp_x = CompareOp::from_bits(6 + entropy.below(2) as u32);
                        if entropy.chance(50) {
                            *cmp_y = CompareOp::from_bits(6 + entropy.below(2) as u32);
                        }
                    }
                    Instruction::Binary { rel, .. }
                    | Instruction::Unary { rel, .. }
                    | Instruction::Mad { rel, .. }
                        if *rel == RelIndex::None =>
                    {
                        *rel = RelIndex::from_bits(1 + entropy.below(3) as u32);
                    }
                    Instruction::Mova { .. } => op.descriptor.0 ^= entropy.below(16) as u32,
                    _ => {}
                }
                if op.has_descriptor() {
                    // Bit 31, which nothing reads.
                    op.descriptor.0 |= (entropy.next_u64() as u32) & 0x8000_0000;
                }
            }
        }
        // A new descriptor may not fit descriptor memory (or MAD's 32): then not this one.
        if program.ops[at].descriptor != before.descriptor && program.encode().is_err() {
            program.ops[at] = before;
        }
    }
}
