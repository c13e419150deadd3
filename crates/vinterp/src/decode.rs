//! Pre-decoding: each reachable word of program memory is stated by the operation visitor
//! ([`shader::exec::operate`]) on a recording backend ([`Recorder`]) as [`Step`]s, with every
//! field the run loop needs resolved (register planes, swizzle components, negation, relative
//! index), plus, per address, the length of the straight line of instructions whose
//! control part does nothing (docs/execution-model.md §5.3), which the run loop executes
//! without consulting the flow driver.

use shader::exec::operate::{LaneFrom, OperationBackend, Source, SourceRegister, operate};
use shader::flow::explore::reachable_addresses;
use shader::flow::{Scope, pushed_scope};
use shader::isa::{
    CompareOp, DestMask, DstReg, Instruction, OperandDescriptor, PROGRAM_WORDS, RegisterFile,
    RelIndex, SimpleOp, decode_words,
};
use shader::program::ShaderProgram;

/// Plane index of v0.x in a group's register file (four planes per register).
pub(super) const INPUT_BASE: u8 = 0;
/// Plane index of r0.x.
pub(super) const TEMP_BASE: u8 = 64;
/// Plane index of o0.x.
pub(super) const OUTPUT_BASE: u8 = 128;
/// Planes in a group's register file (a power of two, so a masked index needs no check).
pub(super) const PLANES: usize = 256;

/// Where one lane of a step's operand comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lane {
    /// Plane `plane` of the group's register file (a v- or r-register component), its sign
    /// flipped when `negate`.
    Plane { plane: u8, negate: bool },
    /// Component `comp` of float uniform c`base`, addressed as `from` says, its sign flipped
    /// when `negate`.
    Uniform {
        from: From,
        base: u8,
        comp: u8,
        negate: bool,
    },
    /// This value (its bits) in every vertex.
    Constant(u32),
    /// Lane `lane` of scratch vector `slot`: an earlier step of the same instruction.
    Scratch { slot: u8, lane: u8 },
}

/// Where a float uniform is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum From {
    /// c`base`.
    Uniform,
    /// c`base` offset by a0.x (per vertex).
    RelA0X,
    /// c`base` offset by a0.y (per vertex).
    RelA0Y,
    /// c`base` offset by aL (one per group).
    RelAL,
}

/// What a step computes, by the float24 rule it is (docs/execution-model.md §3): the
/// operation visitor ([`shader::exec::operate`]) states each instruction as these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Add,
    Mul,
    Mad,
    /// The dot product of the first 3 lanes, in every lane.
    Dot3,
    /// Of the 4 lanes.
    Dot4,
    Floor,
    /// Of lane x, in every lane.
    Reciprocal,
    ReciprocalSqrt,
    Exp2,
    Log2,
    /// Lane by lane: `operands[0] test operands[1] ? operands[2] : operands[3]`.
    Select(CompareOp),
    /// Lane by lane: `operands[0]`.
    Move,
    /// cmp.x and cmp.y (the lanes): `operands[0] tests[i] operands[1]` on lane i.
    SetCmp,
    /// a0.x and a0.y (the lanes): MOVA's conversion of `operands[0]` on lane i, both
    /// converted before either is set.
    SetAddress,
}

impl Kind {
    /// How many operands it reads.
    fn arity(self) -> usize {
        match self {
            Kind::Floor
            | Kind::Reciprocal
            | Kind::ReciprocalSqrt
            | Kind::Exp2
            | Kind::Log2
            | Kind::Move
            | Kind::SetAddress => 1,
            Kind::Add | Kind::Mul | Kind::Dot3 | Kind::Dot4 | Kind::SetCmp => 2,
            Kind::Mad => 3,
            Kind::Select(_) => 4,
        }
    }

    /// The lanes of its operands it reads to compute the lanes `lanes`.
    fn reads(self, lanes: u8) -> u8 {
        match self {
            _ if lanes == 0 => 0,
            Kind::Dot3 => 0b0111,
            Kind::Dot4 => 0b1111,
            Kind::Reciprocal | Kind::ReciprocalSqrt | Kind::Exp2 | Kind::Log2 => 0b0001,
            _ => lanes,
        }
    }
}

/// Where a step's result goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Out {
    /// The planes from `base` on (an r- or o-register's x component), its lanes as the step's.
    Planes(u8),
    /// Scratch vector `slot`.
    Scratch(u8),
    /// Flags or address registers (SetCmp, SetAddress).
    Flow,
}

/// Scratch vectors an instruction's steps may use.
pub(super) const SCRATCH_SLOTS: usize = 4;

/// One step of an instruction's data part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Step {
    pub kind: Kind,
    /// The lanes computed (bit i = lane i; a write's mask).
    pub lanes: u8,
    pub out: Out,
    /// SetCmp's operator for cmp.x and cmp.y.
    pub tests: [CompareOp; 2],
    pub operands: [[Lane; 4]; 4],
}

/// One decoded instruction's data part: its steps, and what it writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Op {
    /// Its steps: `steps[first..first + count]` of [`Decoded::steps`].
    pub first: u32,
    pub count: u16,
    /// The plane of the destination's x component, and the lanes written.
    pub dst: u8,
    pub mask: u8,
    /// Whether it sets a0 or cmp.
    pub sets_address: bool,
    pub sets_cmp: bool,
}

/// Where the op of an address is, and how many instructions from it on need no flow driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    /// Index into [`Decoded::ops`]; [`Entry::UNREACHABLE`] for an address no invocation runs.
    pub op: u16,
    /// How many instructions from this address on (consecutive addresses, not wrapping) have
    /// a control part that does nothing; 0 when this one's does something.
    pub run: u16,
    /// The steps of those instructions (of this one when `run` is 0): `steps[first..end]`.
    pub steps: (u32, u32),
}

impl Entry {
    pub const UNREACHABLE: u16 = u16::MAX;
}

/// A program ready to run.
#[derive(Clone, Debug)]
pub(super) struct Decoded {
    /// The reachable instructions' data parts, in address order.
    pub ops: Box<[Op]>,
    /// Their steps, in the same order.
    pub steps: Box<[Step]>,
    /// The same instructions as decoded (the flow driver reads them).
    pub insts: Box<[Instruction]>,
    /// Per address.
    pub at: Box<[Entry]>,
    /// The r- and o-planes some reachable op writes (reset to +0 for each group).
    pub written: Box<[u8]>,
    /// The v-registers some reachable op reads (bit n = vn).
    pub inputs: u16,
    /// The entry point.
    pub entry: u16,
    /// How many addresses are reachable.
    pub reachable: usize,
}

fn dst_base(dst: DstReg) -> u8 {
    match dst.file_index() {
        (RegisterFile::Temporary, n) => TEMP_BASE + 4 * n,
        (_, n) => OUTPUT_BASE + 4 * n,
    }
}

/// The operation visitor's backend that records an instruction as steps: a vector is where
/// each of its lanes comes from, so reads, constants and lane moves cost no step.
#[derive(Default)]
struct Recorder {
    steps: Vec<Step>,
    slots: u8,
}

impl Recorder {
    /// A step of `kind` on `operands`, into a new scratch vector.
    fn step(&mut self, kind: Kind, operands: &[[Lane; 4]]) -> [Lane; 4] {
        let slot = self.slots;
        assert!(
            (slot as usize) < SCRATCH_SLOTS,
            "an instruction of few steps"
        );
        self.slots += 1;
        let mut all = [[Lane::Constant(0); 4]; 4];
        all[..operands.len()].copy_from_slice(operands);
        self.steps.push(Step {
            kind,
            lanes: 0b1111,
            out: Out::Scratch(slot),
            tests: [CompareOp::Eq; 2],
            operands: all,
        });
        std::array::from_fn(|lane| Lane::Scratch {
            slot,
            lane: lane as u8,
        })
    }

    /// The flow step of `kind` this instruction has, made on first use.
    fn flow_step(&mut self, kind: Kind) -> &mut Step {
        let at = match self.steps.iter().position(|s| s.kind == kind) {
            Some(at) => at,
            None => {
                self.steps.push(Step {
                    kind,
                    lanes: 0,
                    out: Out::Flow,
                    tests: [CompareOp::Eq; 2],
                    operands: [[Lane::Constant(0); 4]; 4],
                });
                self.steps.len() - 1
            }
        };
        &mut self.steps[at]
    }

    /// The steps, each computing only the lanes something uses, and the last one's result
    /// written to its destination directly where it was only moved there.
    fn finish(mut self) -> Vec<Step> {
        // Backwards: the lanes of each scratch vector that later steps read.
        let mut needed = [0u8; SCRATCH_SLOTS];
        for step in self.steps.iter_mut().rev() {
            if let Out::Scratch(slot) = step.out {
                step.lanes = needed[slot as usize];
            }
            let reads = step.kind.reads(step.lanes);
            for operand in &step.operands[..step.kind.arity()] {
                for (lane, from) in operand.iter().enumerate() {
                    if reads & (1 << lane) != 0
                        && let Lane::Scratch { slot, lane } = *from
                    {
                        needed[slot as usize] |= 1 << lane;
                    }
                }
            }
        }
        self.steps
            .retain(|step| step.lanes != 0 || matches!(step.out, Out::Planes(_)));
        // A result moved lane for lane to the destination is computed there.
        if let [.., producer, mover] = &self.steps[..]
            && mover.kind == Kind::Move
            && let (Out::Scratch(slot), Out::Planes(dst)) = (producer.out, mover.out)
            && (0..4).all(|lane| {
                mover.lanes & (1 << lane) == 0
                    || mover.operands[0][lane]
                        == Lane::Scratch {
                            slot,
                            lane: lane as u8,
                        }
            })
            && producer.lanes == mover.lanes
        {
            let (lanes, out) = (mover.lanes, Out::Planes(dst));
            self.steps.pop();
            let producer = self.steps.last_mut().expect("the producer");
            producer.lanes = lanes;
            producer.out = out;
        }
        self.steps
    }
}

impl OperationBackend for Recorder {
    type Vector = [Lane; 4];
    type Address = Lane;
    type Flag = (CompareOp, Lane, Lane);

    fn read(&mut self, source: &Source) -> [Lane; 4] {
        std::array::from_fn(|lane| {
            let comp = source.component(lane) as u8;
            let negate = source.negate;
            match source.register {
                SourceRegister::Input(n) => Lane::Plane {
                    plane: INPUT_BASE + 4 * (n % 16) + comp,
                    negate,
                },
                SourceRegister::Temporary(n) => Lane::Plane {
                    plane: TEMP_BASE + 4 * (n % 16) + comp,
                    negate,
                },
                SourceRegister::Uniform { base, rel } => Lane::Uniform {
                    from: match rel {
                        RelIndex::None => From::Uniform,
                        RelIndex::A0X => From::RelA0X,
                        RelIndex::A0Y => From::RelA0Y,
                        RelIndex::AL => From::RelAL,
                    },
                    base,
                    comp,
                    negate,
                },
            }
        })
    }
    fn constant(&mut self, value: f32) -> [Lane; 4] {
        [Lane::Constant(value.to_bits()); 4]
    }
    fn add(&mut self, a: [Lane; 4], b: [Lane; 4]) -> [Lane; 4] {
        self.step(Kind::Add, &[a, b])
    }
    fn mul(&mut self, a: [Lane; 4], b: [Lane; 4]) -> [Lane; 4] {
        self.step(Kind::Mul, &[a, b])
    }
    fn mad(&mut self, a: [Lane; 4], b: [Lane; 4], c: [Lane; 4]) -> [Lane; 4] {
        self.step(Kind::Mad, &[a, b, c])
    }
    fn dot(&mut self, a: [Lane; 4], b: [Lane; 4], count: usize) -> [Lane; 4] {
        let kind = if count == 3 { Kind::Dot3 } else { Kind::Dot4 };
        self.step(kind, &[a, b])
    }
    fn floor(&mut self, a: [Lane; 4]) -> [Lane; 4] {
        self.step(Kind::Floor, &[a])
    }
    fn reciprocal(&mut self, a: [Lane; 4]) -> [Lane; 4] {
        self.step(Kind::Reciprocal, &[a])
    }
    fn reciprocal_sqrt(&mut self, a: [Lane; 4]) -> [Lane; 4] {
        self.step(Kind::ReciprocalSqrt, &[a])
    }
    fn exp2(&mut self, a: [Lane; 4]) -> [Lane; 4] {
        self.step(Kind::Exp2, &[a])
    }
    fn log2(&mut self, a: [Lane; 4]) -> [Lane; 4] {
        self.step(Kind::Log2, &[a])
    }
    fn select_if(
        &mut self,
        test: CompareOp,
        x: [Lane; 4],
        y: [Lane; 4],
        then: [Lane; 4],
        otherwise: [Lane; 4],
    ) -> [Lane; 4] {
        self.step(Kind::Select(test), &[x, y, then, otherwise])
    }
    fn lanes(&mut self, lanes: [LaneFrom<[Lane; 4]>; 4], _used: u8) -> [Lane; 4] {
        std::array::from_fn(|lane| match lanes[lane] {
            LaneFrom::Vector(v) => v[lane],
            LaneFrom::Constant(c) => Lane::Constant(c.to_bits()),
        })
    }
    fn compare(
        &mut self,
        test: CompareOp,
        a: [Lane; 4],
        b: [Lane; 4],
        lane: usize,
    ) -> (CompareOp, Lane, Lane) {
        (test, a[lane], b[lane])
    }
    fn set_cmp(&mut self, lane: usize, (test, a, b): (CompareOp, Lane, Lane)) {
        let step = self.flow_step(Kind::SetCmp);
        step.lanes |= 1 << lane;
        step.tests[lane] = test;
        step.operands[0][lane] = a;
        step.operands[1][lane] = b;
    }
    fn address(&mut self, a: [Lane; 4], lane: usize) -> Lane {
        a[lane]
    }
    fn set_address(&mut self, lane: usize, value: Lane) {
        let step = self.flow_step(Kind::SetAddress);
        step.lanes |= 1 << lane;
        step.operands[0][lane] = value;
    }
    fn write(&mut self, dst: DstReg, mask: DestMask, value: [Lane; 4]) {
        self.steps.push(Step {
            kind: Kind::Move,
            lanes: mask.lanes(),
            out: Out::Planes(dst_base(dst)),
            tests: [CompareOp::Eq; 2],
            operands: [
                value,
                [Lane::Constant(0); 4],
                [Lane::Constant(0); 4],
                [Lane::Constant(0); 4],
            ],
        });
    }
}

/// The steps of `inst`'s data part (none for an instruction without one).
fn decode_steps(inst: &Instruction, opdescs: &[u32]) -> Vec<Step> {
    let Some(operation) = inst.operation() else {
        return Vec::new();
    };
    let desc = OperandDescriptor(opdescs.get(operation.desc() as usize).copied().unwrap_or(0));
    let mut recorder = Recorder::default();
    operate(&mut recorder, &operation, desc);
    recorder.finish()
}

/// What `steps` write.
fn summary(first: u32, steps: &[Step]) -> Op {
    let mut op = Op {
        first,
        count: steps.len() as u16,
        dst: 0,
        mask: 0,
        sets_address: false,
        sets_cmp: false,
    };
    for step in steps {
        match (step.kind, step.out) {
            (_, Out::Planes(dst)) => {
                op.dst = dst;
                op.mask |= step.lanes;
            }
            (Kind::SetCmp, _) => op.sets_cmp = true,
            (Kind::SetAddress, _) => op.sets_address = true,
            _ => {}
        }
    }
    op
}

/// Whether an instruction's control part can do something by itself (besides a scope ending
/// at the next address): a flow instruction, END or BREAK.
fn has_control(inst: &Instruction) -> bool {
    match inst {
        Instruction::Simple { op, .. } => matches!(op, SimpleOp::End | SimpleOp::Break),
        Instruction::CondFlow { .. } | Instruction::BoolFlow { .. } | Instruction::Loop { .. } => {
            true
        }
        _ => false,
    }
}

/// Decodes the reachable part of `program`.
pub(super) fn decode_program(program: &ShaderProgram) -> Decoded {
    let all: Vec<Instruction> = decode_words(&program.code[..]);
    let reachable = reachable_addresses(&all, program.entry);
    let mut at = vec![
        Entry {
            op: Entry::UNREACHABLE,
            run: 0,
            steps: (0, 0),
        };
        PROGRAM_WORDS
    ];
    let mut ops = Vec::new();
    let mut steps = Vec::new();
    let mut insts = Vec::new();
    // Addresses where some scope can end: the next address of an instruction that is one of
    // these goes through the flow driver.
    let mut scope_end = vec![false; PROGRAM_WORDS];
    let mut written = [false; PLANES];
    let mut inputs = 0u16;
    for (pc, inst) in all.iter().enumerate() {
        if !reachable[pc] {
            continue;
        }
        match pushed_scope(pc as u16, inst) {
            Some(Scope::If(scope)) => scope_end[scope.else_addr as usize % PROGRAM_WORDS] = true,
            Some(Scope::Call(scope)) => scope_end[scope.end as usize] = true,
            Some(Scope::Loop(scope)) => scope_end[scope.end as usize] = true,
            None => {}
        }
        let decoded = decode_steps(inst, &program.opdescs);
        let op = summary(steps.len() as u32, &decoded);
        for lane in 0..4 {
            if op.mask & (1 << lane) != 0 {
                written[(op.dst as usize + lane) % PLANES] = true;
            }
        }
        for step in &decoded {
            for operand in &step.operands[..step.kind.arity()] {
                for from in operand {
                    if let Lane::Plane { plane, .. } = *from
                        && plane < TEMP_BASE
                    {
                        inputs |= 1 << (plane / 4);
                    }
                }
            }
        }
        steps.extend(decoded);
        at[pc].op = ops.len() as u16;
        ops.push(op);
        insts.push(*inst);
    }
    // Plain straight lines, computed backwards; they never wrap past the last address.
    let mut next_run = 0u16;
    for pc in (0..PROGRAM_WORDS).rev() {
        let plain = at[pc].op != Entry::UNREACHABLE
            && !has_control(&all[pc])
            && !scope_end[(pc + 1) % PROGRAM_WORDS];
        let run = if plain {
            if pc + 1 < PROGRAM_WORDS {
                next_run + 1
            } else {
                1
            }
        } else {
            0
        };
        at[pc].run = run;
        next_run = run;
        if at[pc].op != Entry::UNREACHABLE {
            let first = &ops[at[pc].op as usize];
            let last = &ops[at[pc].op as usize + (run.max(1) as usize) - 1];
            at[pc].steps = (first.first, last.first + last.count as u32);
        }
    }
    let written = (0..PLANES)
        .filter(|&k| written[k])
        .map(|k| k as u8)
        .collect();
    Decoded {
        reachable: ops.len(),
        ops: ops.into_boxed_slice(),
        steps: steps.into_boxed_slice(),
        insts: insts.into_boxed_slice(),
        at: at.into_boxed_slice(),
        written,
        inputs,
        entry: program.entry,
    }
}
