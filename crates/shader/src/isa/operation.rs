//! The decoded operand form: an instruction's data operation with its operands fetched the one
//! way the hardware fetches them, which every engine consumes (the interpreter, the JIT, the
//! structure-of-arrays JIT and the vectorised interpreter) instead of restating it.
//!
//! The rules stated here and nowhere else (docs/execution-model.md §3):
//! - the inverted formats (1i: DPHI, DSTI, SGEI, SLTI; 5i: MADI) compute their base operation
//!   ([`BinaryOp::computes`]); only which field is wide changes;
//! - the address register offsets the wide operand only: SRC1 in formats 1, 1u and 1c, SRC2 in
//!   1i and 5, SRC3 in 5i; every other operand reads its register as named;
//! - operand `k` (SRC1, SRC2, SRC3) takes the swizzle and negation of descriptor slot `k`.

use super::{
    BinaryOp, CompareOp, DstReg, Instruction, OperandDescriptor, RelIndex, SrcReg, UnaryOp,
    split_rel,
};

/// What a two-source instruction computes: a [`BinaryOp`] with the inverted forms folded onto
/// their base operation ([`BinaryOp::computes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BinaryOperation {
    Add,
    Dp3,
    Dp4,
    Dph,
    Dst,
    Mul,
    Sge,
    Slt,
    Max,
    Min,
}

impl BinaryOp {
    /// The operation computed: DPHI, DSTI, SGEI and SLTI compute DPH, DST, SGE and SLT.
    pub const fn computes(self) -> BinaryOperation {
        match self {
            BinaryOp::Add => BinaryOperation::Add,
            BinaryOp::Dp3 => BinaryOperation::Dp3,
            BinaryOp::Dp4 => BinaryOperation::Dp4,
            BinaryOp::Dph | BinaryOp::Dphi => BinaryOperation::Dph,
            BinaryOp::Dst | BinaryOp::Dsti => BinaryOperation::Dst,
            BinaryOp::Mul => BinaryOperation::Mul,
            BinaryOp::Sge | BinaryOp::Sgei => BinaryOperation::Sge,
            BinaryOp::Slt | BinaryOp::Slti => BinaryOperation::Slt,
            BinaryOp::Max => BinaryOperation::Max,
            BinaryOp::Min => BinaryOperation::Min,
        }
    }
}

/// One source operand as an operation reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    /// The register.
    pub reg: SrcReg,
    /// The address register offsetting it ([`RelIndex::None`] unless this is the wide operand).
    pub rel: RelIndex,
    /// The descriptor slot (0 = SRC1, 1 = SRC2, 2 = SRC3) that gives its swizzle and negation.
    pub slot: usize,
}

/// An instruction's data operation, its operands resolved: [`Instruction::operation`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// ADD, DP3, DP4, DPH, DST, MUL, SGE, SLT, MAX, MIN and the inverted forms.
    Binary {
        /// The operation computed.
        op: BinaryOperation,
        /// The register written.
        dst: DstReg,
        /// The operand-descriptor index.
        desc: u8,
        /// The first operand (SRC1).
        a: Operand,
        /// The second operand (SRC2).
        b: Operand,
    },
    /// EX2, LG2, LITP, FLR, RCP, RSQ, MOV.
    Unary {
        /// The operation.
        op: UnaryOp,
        /// The register written.
        dst: DstReg,
        /// The operand-descriptor index.
        desc: u8,
        /// The operand (SRC1).
        a: Operand,
    },
    /// MOVA: writes a0.x and/or a0.y as the descriptor's mask says.
    Mova {
        /// The operand-descriptor index.
        desc: u8,
        /// The operand (SRC1).
        a: Operand,
    },
    /// CMP: writes the two condition flags.
    Cmp {
        /// The operand-descriptor index.
        desc: u8,
        /// The first operand (SRC1).
        a: Operand,
        /// The second operand (SRC2).
        b: Operand,
        /// The operator of the x flag.
        cmp_x: CompareOp,
        /// The operator of the y flag.
        cmp_y: CompareOp,
    },
    /// MAD and MADI: a * b + c.
    Mad {
        /// The register written.
        dst: DstReg,
        /// The operand-descriptor index.
        desc: u8,
        /// SRC1.
        a: Operand,
        /// SRC2.
        b: Operand,
        /// SRC3.
        c: Operand,
    },
}

impl Operation {
    /// The operand-descriptor index.
    #[inline]
    pub const fn desc(&self) -> u8 {
        match *self {
            Operation::Binary { desc, .. }
            | Operation::Unary { desc, .. }
            | Operation::Mova { desc, .. }
            | Operation::Cmp { desc, .. }
            | Operation::Mad { desc, .. } => desc,
        }
    }

    /// The register written, when the operation writes one (MOVA and CMP set a0 and cmp).
    #[inline]
    pub const fn destination(&self) -> Option<DstReg> {
        match *self {
            Operation::Binary { dst, .. }
            | Operation::Unary { dst, .. }
            | Operation::Mad { dst, .. } => Some(dst),
            Operation::Mova { .. } | Operation::Cmp { .. } => None,
        }
    }

    /// The lanes of SRC1, SRC2 and SRC3, after the swizzle, that the operation uses (bit `i`:
    /// lane `i`), given its descriptor ([`Instruction::sources`] lists them with the operands).
    pub fn source_lanes(&self, desc: OperandDescriptor) -> [u8; 3] {
        const XYZW: u8 = 0b1111;
        const XYZ: u8 = 0b0111;
        const X: u8 = 0b0001;
        let masked = desc.dest_mask().lanes();
        match *self {
            Operation::Binary { op, .. } => match op {
                BinaryOperation::Dp3 => [XYZ, XYZ, 0],
                BinaryOperation::Dp4 => [XYZW, XYZW, 0],
                BinaryOperation::Dph => [XYZ, XYZW, 0],
                BinaryOperation::Dst => [0b0110, 0b1010, 0],
                _ => [masked, masked, 0],
            },
            Operation::Unary { op, .. } => match op {
                UnaryOp::Ex2 | UnaryOp::Lg2 | UnaryOp::Rcp | UnaryOp::Rsq => [X, 0, 0],
                UnaryOp::Litp => [0b1011, 0, 0],
                UnaryOp::Flr | UnaryOp::Mov => [masked, 0, 0],
            },
            Operation::Mova { .. } => [masked & 0b0011, 0, 0],
            Operation::Cmp { .. } => [0b0011, 0b0011, 0],
            Operation::Mad { .. } => [masked; 3],
        }
    }

    /// The operands in slot order (SRC1 first).
    pub fn operands(&self) -> impl Iterator<Item = Operand> + use<> {
        let (list, count) = match *self {
            Operation::Unary { a, .. } | Operation::Mova { a, .. } => ([a, a, a], 1),
            Operation::Binary { a, b, .. } | Operation::Cmp { a, b, .. } => ([a, b, b], 2),
            Operation::Mad { a, b, c, .. } => ([a, b, c], 3),
        };
        list.into_iter().take(count)
    }
}

impl Instruction {
    /// The data operation with its operands fetched ([`Operation`]); `None` for instructions
    /// without one (flow control, NOP, END, BREAK, EMIT, SETEMIT, unknown opcodes).
    pub fn operation(&self) -> Option<Operation> {
        let operand = |reg, rel, slot| Operand { reg, rel, slot };
        Some(match *self {
            Instruction::Binary {
                op,
                dst,
                src1,
                src2,
                rel,
                desc,
            } => {
                let (rel1, rel2) = split_rel(rel, op.is_inverted());
                Operation::Binary {
                    op: op.computes(),
                    dst,
                    desc,
                    a: operand(src1, rel1, 0),
                    b: operand(src2, rel2, 1),
                }
            }
            Instruction::Unary {
                op,
                dst,
                src1,
                rel,
                desc,
                ..
            } => Operation::Unary {
                op,
                dst,
                desc,
                a: operand(src1, rel, 0),
            },
            Instruction::Mova {
                src1, rel, desc, ..
            } => Operation::Mova {
                desc,
                a: operand(src1, rel, 0),
            },
            Instruction::Cmp {
                src1,
                src2,
                rel,
                desc,
                cmp_x,
                cmp_y,
            } => Operation::Cmp {
                desc,
                a: operand(src1, rel, 0),
                b: operand(src2, RelIndex::None, 1),
                cmp_x,
                cmp_y,
            },
            Instruction::Mad {
                inverted,
                dst,
                src1,
                src2,
                src3,
                rel,
                desc,
            } => {
                let (rel2, rel3) = split_rel(rel, inverted);
                Operation::Mad {
                    dst,
                    desc,
                    a: operand(src1, RelIndex::None, 0),
                    b: operand(src2, rel2, 1),
                    c: operand(src3, rel3, 2),
                }
            }
            Instruction::Simple { .. }
            | Instruction::CondFlow { .. }
            | Instruction::BoolFlow { .. }
            | Instruction::Loop { .. }
            | Instruction::SetEmit { .. }
            | Instruction::Unknown { .. } => return None,
        })
    }
}
