//! Pre-decoding: the reachable words of program memory become a compact array of [`Op`]s with
//! every field the run loop needs resolved (register planes, swizzle components, negation,
//! relative index), plus, per address, the length of the straight line of instructions whose
//! control part does nothing (docs/execution-model.md §5.3), which the run loop executes
//! without consulting the flow driver.

use shader::flow::explore::reachable_addresses;
use shader::flow::{Scope, pushed_scope};
use shader::isa::{
    BinaryOperation, CompareOp, DstReg, Instruction, Operand, OperandDescriptor, Operation,
    PROGRAM_WORDS, RegisterFile, RelIndex, SimpleOp, UnaryOp, decode_words,
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

/// What an op computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Add,
    Mul,
    Mad,
    Dp3,
    Dp4,
    Dph,
    Dst,
    Max,
    Min,
    Sge,
    Slt,
    Mov,
    Flr,
    Rcp,
    Rsq,
    Ex2,
    Lg2,
    Litp,
    Mova,
    Cmp,
    /// No data effect (NOP, flow instructions, END, EMIT and SETEMIT in a vertex invocation,
    /// unknown opcodes).
    Nop,
}

/// Where a source operand's register is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum From {
    /// A v- or r-register: `base` is the plane of its x component.
    Plane,
    /// Float uniform c`base`.
    Uniform,
    /// c`base` offset by a0.x (per vertex).
    RelA0X,
    /// c`base` offset by a0.y (per vertex).
    RelA0Y,
    /// c`base` offset by aL (one per group).
    RelAL,
}

/// One source operand, resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Source {
    pub from: From,
    pub base: u8,
    /// The component each lane reads (the swizzle).
    pub comps: [u8; 4],
    /// The sign bit when negated, else 0 (XORed into the bits).
    pub negate: u32,
}

impl Source {
    /// An unused operand (reads r0, never v0, so it does not make v0 an input).
    const NONE: Source = Source {
        from: From::Plane,
        base: TEMP_BASE,
        comps: [0, 1, 2, 3],
        negate: 0,
    };

    fn new(operand: Operand, desc: OperandDescriptor) -> Source {
        let Operand { reg, rel, slot } = operand;
        let (from, base) = match reg.file_index() {
            (RegisterFile::Input, n) => (From::Plane, INPUT_BASE + 4 * n),
            (RegisterFile::Temporary, n) => (From::Plane, TEMP_BASE + 4 * n),
            (_, n) => {
                let from = match rel {
                    RelIndex::None => From::Uniform,
                    RelIndex::A0X => From::RelA0X,
                    RelIndex::A0Y => From::RelA0Y,
                    RelIndex::AL => From::RelAL,
                };
                (from, n)
            }
        };
        let swizzle = desc.swizzle(slot);
        Source {
            from,
            base,
            comps: std::array::from_fn(|lane| swizzle.component(lane) as u8),
            negate: if desc.negate(slot) { 0x8000_0000 } else { 0 },
        }
    }
}

/// One decoded instruction's data part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Op {
    pub kind: Kind,
    /// The plane of the destination's x component.
    pub dst: u8,
    /// The lanes written (bit i = lane i); for MOVA the a0 lanes.
    pub mask: u8,
    pub src: [Source; 3],
    /// CMP's operators for cmp.x and cmp.y.
    pub compare: [CompareOp; 2],
}

impl Op {
    const NOP: Op = Op {
        kind: Kind::Nop,
        dst: 0,
        mask: 0,
        src: [Source::NONE; 3],
        compare: [CompareOp::Eq; 2],
    };
}

/// Where the op of an address is, and how many instructions from it on need no flow driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    /// Index into [`Decoded::ops`]; [`Entry::UNREACHABLE`] for an address no invocation runs.
    pub op: u16,
    /// How many instructions from this address on (consecutive addresses, not wrapping) have
    /// a control part that does nothing; 0 when this one's does something.
    pub run: u16,
}

impl Entry {
    pub const UNREACHABLE: u16 = u16::MAX;
}

/// A program ready to run.
#[derive(Clone, Debug)]
pub(super) struct Decoded {
    /// The reachable instructions' data parts, in address order.
    pub ops: Box<[Op]>,
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

fn decode_op(inst: &Instruction, opdescs: &[u32]) -> Op {
    let Some(operation) = inst.operation() else {
        return Op::NOP;
    };
    let d = OperandDescriptor(opdescs.get(operation.desc() as usize).copied().unwrap_or(0));
    let mut src = [Source::NONE; 3];
    for (slot, operand) in src.iter_mut().zip(operation.operands()) {
        *slot = Source::new(operand, d);
    }
    let mask = d.dest_mask().lanes();
    match operation {
        Operation::Binary { op, dst, .. } => Op {
            kind: match op {
                BinaryOperation::Add => Kind::Add,
                BinaryOperation::Mul => Kind::Mul,
                BinaryOperation::Dp3 => Kind::Dp3,
                BinaryOperation::Dp4 => Kind::Dp4,
                BinaryOperation::Dph => Kind::Dph,
                BinaryOperation::Dst => Kind::Dst,
                BinaryOperation::Max => Kind::Max,
                BinaryOperation::Min => Kind::Min,
                BinaryOperation::Sge => Kind::Sge,
                BinaryOperation::Slt => Kind::Slt,
            },
            dst: dst_base(dst),
            mask,
            src,
            ..Op::NOP
        },
        Operation::Unary { op, dst, .. } => Op {
            kind: match op {
                UnaryOp::Ex2 => Kind::Ex2,
                UnaryOp::Lg2 => Kind::Lg2,
                UnaryOp::Litp => Kind::Litp,
                UnaryOp::Flr => Kind::Flr,
                UnaryOp::Rcp => Kind::Rcp,
                UnaryOp::Rsq => Kind::Rsq,
                UnaryOp::Mov => Kind::Mov,
            },
            dst: dst_base(dst),
            mask,
            src,
            ..Op::NOP
        },
        Operation::Mova { .. } => Op {
            kind: Kind::Mova,
            mask: mask & 3,
            src,
            ..Op::NOP
        },
        Operation::Cmp { cmp_x, cmp_y, .. } => Op {
            kind: Kind::Cmp,
            src,
            compare: [cmp_x, cmp_y],
            ..Op::NOP
        },
        Operation::Mad { dst, .. } => Op {
            kind: Kind::Mad,
            dst: dst_base(dst),
            mask,
            src,
            ..Op::NOP
        },
    }
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

/// The registers a data op writes, as planes of the group register file.
fn written_planes(op: &Op, out: &mut [bool; PLANES]) {
    if matches!(op.kind, Kind::Nop | Kind::Mova | Kind::Cmp) {
        return;
    }
    for lane in 0..4 {
        if op.mask & (1 << lane) != 0 {
            out[(op.dst as usize + lane) % PLANES] = true;
        }
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
        };
        PROGRAM_WORDS
    ];
    let mut ops = Vec::new();
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
        let op = decode_op(inst, &program.opdescs);
        written_planes(&op, &mut written);
        for source in &op.src[..] {
            if source.from == From::Plane && source.base < TEMP_BASE {
                inputs |= 1 << (source.base / 4);
            }
        }
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
    }
    let written = (0..PLANES)
        .filter(|&k| written[k])
        .map(|k| k as u8)
        .collect();
    Decoded {
        reachable: ops.len(),
        ops: ops.into_boxed_slice(),
        insts: insts.into_boxed_slice(),
        at: at.into_boxed_slice(),
        written,
        inputs,
        entry: program.entry,
    }
}
