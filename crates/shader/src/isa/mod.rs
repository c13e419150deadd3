//! The PICA200 shader instruction set: decoding, encoding and disassembly.
//!
//! Every instruction is one 32-bit word whose opcode is bits 26-31. [`OPCODES`] is the decoder
//! table (one entry per 6-bit opcode: mnemonic and format); [`decode()`] turns a word into a typed
//! [`Instruction`], [`encode()`] is its exact inverse, and [`disasm`] prints picasso-style text.
//!
//! Bits the hardware ignores (format 0 operands, bits 8-9 of the flow-control formats, the DST
//! field of MOVA, ...) are **kept**: each such variant carries an `ignored` field holding those
//! bits in place, so `encode(decode(w)) == w` for every one of the 2^32 words. Unknown opcodes
//! decode to [`Instruction::Unknown`] holding the whole word.

pub mod decode;
pub mod disasm;
pub mod encode;
mod operand;
mod operation;
#[cfg(test)]
pub(crate) mod testing;

pub use decode::{decode, decode_each, decode_words};
pub use encode::{EncodeError, encode};
pub use operand::{
    DestMask, DstReg, LANE_NAMES, OperandDescriptor, RegisterFile, RelIndex, SrcReg, Swizzle,
};
pub use operation::{BinaryOperation, Operand, Operation};

pub use crate::float24::arith::CompareOp;

/// Number of words of shader program memory; the PC wraps at this size.
pub const PROGRAM_WORDS: usize = 4096;
/// Number of operand descriptors in the descriptor memory (7-bit DESC field).
pub const OPDESC_COUNT: usize = 128;
/// MAD and MADI can only address descriptors below this (5-bit DESC field).
pub const MAD_OPDESC_LIMIT: usize = 32;

/// The encoding formats (3dbrew names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// No operands: BREAK, NOP, END, EMIT.
    F0,
    /// Two sources, SRC1 wide.
    F1,
    /// Two sources, SRC2 wide ("inverted").
    F1i,
    /// One wide source.
    F1u,
    /// CMP: two sources and two comparison operators.
    F1c,
    /// Flow control on the condition flags.
    F2,
    /// Flow control on a bool or int uniform.
    F3,
    /// SETEMIT.
    F4,
    /// MAD: SRC2 wide.
    F5,
    /// MADI: SRC3 wide.
    F5i,
    /// An opcode with no known meaning.
    Unknown,
}

/// Every mnemonic, one per distinct operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Mnemonic {
    Add,
    Dp3,
    Dp4,
    Dph,
    Dst,
    Ex2,
    Lg2,
    Litp,
    Mul,
    Sge,
    Slt,
    Flr,
    Max,
    Min,
    Rcp,
    Rsq,
    Mova,
    Mov,
    Dphi,
    Dsti,
    Sgei,
    Slti,
    Break,
    Nop,
    End,
    Breakc,
    Call,
    Callc,
    Callu,
    Ifu,
    Ifc,
    Loop,
    Emit,
    SetEmit,
    Jmpc,
    Jmpu,
    Cmp,
    Madi,
    Mad,
    Unknown,
}

/// One row of the decoder table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpcodeInfo {
    /// The operation.
    pub mnemonic: Mnemonic,
    /// How the word is laid out.
    pub format: Format,
    /// The picasso spelling (`"for"` is `loop` here, named after the hardware operation).
    pub name: &'static str,
}

const fn op(mnemonic: Mnemonic, format: Format, name: &'static str) -> OpcodeInfo {
    OpcodeInfo {
        mnemonic,
        format,
        name,
    }
}

const UNKNOWN: OpcodeInfo = op(Mnemonic::Unknown, Format::Unknown, "unknown");
const CMP: OpcodeInfo = op(Mnemonic::Cmp, Format::F1c, "cmp");
const MADI: OpcodeInfo = op(Mnemonic::Madi, Format::F5i, "madi");
const MAD: OpcodeInfo = op(Mnemonic::Mad, Format::F5, "mad");

/// The decoder table, indexed by the 6-bit opcode (bits 26-31).
pub static OPCODES: [OpcodeInfo; OPCODES_LEN] = {
    use Format::*;
    use Mnemonic as M;
    [
        op(M::Add, F1, "add"),
        op(M::Dp3, F1, "dp3"),
        op(M::Dp4, F1, "dp4"),
        op(M::Dph, F1, "dph"),
        op(M::Dst, F1, "dst"),
        op(M::Ex2, F1u, "ex2"),
        op(M::Lg2, F1u, "lg2"),
        op(M::Litp, F1u, "litp"),
        op(M::Mul, F1, "mul"),
        op(M::Sge, F1, "sge"),
        op(M::Slt, F1, "slt"),
        op(M::Flr, F1u, "flr"),
        op(M::Max, F1, "max"),
        op(M::Min, F1, "min"),
        op(M::Rcp, F1u, "rcp"),
        op(M::Rsq, F1u, "rsq"),
        UNKNOWN, // 0x10
        UNKNOWN, // 0x11
        op(M::Mova, F1u, "mova"),
        op(M::Mov, F1u, "mov"),
        UNKNOWN, // 0x14
        UNKNOWN, // 0x15
        UNKNOWN, // 0x16
        UNKNOWN, // 0x17
        op(M::Dphi, F1i, "dphi"),
        op(M::Dsti, F1i, "dsti"),
        op(M::Sgei, F1i, "sgei"),
        op(M::Slti, F1i, "slti"),
        UNKNOWN, // 0x1C
        UNKNOWN, // 0x1D
        UNKNOWN, // 0x1E
        UNKNOWN, // 0x1F
        op(M::Break, F0, "break"),
        op(M::Nop, F0, "nop"),
        op(M::End, F0, "end"),
        op(M::Breakc, F2, "breakc"),
        op(M::Call, F2, "call"),
        op(M::Callc, F2, "callc"),
        op(M::Callu, F3, "callu"),
        op(M::Ifu, F3, "ifu"),
        op(M::Ifc, F2, "ifc"),
        op(M::Loop, F3, "loop"),
        op(M::Emit, F0, "emit"),
        op(M::SetEmit, F4, "setemit"),
        op(M::Jmpc, F2, "jmpc"),
        op(M::Jmpu, F3, "jmpu"),
        CMP, // 0x2E: bit 26 is the top bit of CMPX
        CMP, // 0x2F
        MADI,
        MADI,
        MADI,
        MADI,
        MADI,
        MADI,
        MADI,
        MADI, // 0x30-0x37: bits 26-28 are the top of DST
        MAD,
        MAD,
        MAD,
        MAD,
        MAD,
        MAD,
        MAD,
        MAD, // 0x38-0x3F
    ]
};

/// The lowest opcode whose table row is `mnemonic` (every mnemonic but `Unknown` has one).
pub const fn opcode_of(mnemonic: Mnemonic) -> u32 {
    OPCODE_OF[mnemonic as usize] as u32
}

/// [`opcode_of`] for every mnemonic, derived from [`OPCODES`] at compile time.
const OPCODE_OF: [u8; Mnemonic::Unknown as usize + 1] = {
    let mut first = [0u8; Mnemonic::Unknown as usize + 1];
    let mut seen = [false; Mnemonic::Unknown as usize + 1];
    let mut opcode = 0;
    while opcode < OPCODES_LEN {
        let m = OPCODES[opcode].mnemonic as usize;
        if !seen[m] {
            seen[m] = true;
            first[m] = opcode as u8;
        }
        opcode += 1;
    }
    first
};

const OPCODES_LEN: usize = 64;

/// The lowest opcode whose table row has the picasso spelling `name` (`for` is LOOP's), for
/// the assembler: the numbers are the table's, never a second list.
pub fn opcode_named(name: &str) -> Option<u32> {
    let name = if name == "for" { "loop" } else { name };
    OPCODES
        .iter()
        .position(|row| row.mnemonic != Mnemonic::Unknown && row.name == name)
        .map(|opcode| opcode as u32)
}

/// The table row for an instruction word.
pub fn opcode_info(word: u32) -> &'static OpcodeInfo {
    &OPCODES[(word >> 26) as usize]
}

/// Two-source operations of formats 1 and 1i.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BinaryOp {
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
    /// DPH with SRC2 wide.
    Dphi,
    /// DST with SRC2 wide.
    Dsti,
    /// SGE with SRC2 wide.
    Sgei,
    /// SLT with SRC2 wide.
    Slti,
}

impl BinaryOp {
    /// Whether this is an inverted-format (1i) opcode, whose wide operand is SRC2.
    pub const fn is_inverted(self) -> bool {
        matches!(
            self,
            BinaryOp::Dphi | BinaryOp::Dsti | BinaryOp::Sgei | BinaryOp::Slti
        )
    }
}

/// One-source operations of format 1u (MOVA has its own variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum UnaryOp {
    Ex2,
    Lg2,
    Litp,
    Flr,
    Rcp,
    Rsq,
    Mov,
}

/// Format-0 operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum SimpleOp {
    Break,
    Nop,
    End,
    Emit,
}

/// Format-2 operations (flow control on the condition flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum CondFlowOp {
    Breakc,
    /// Unconditional; its condition bits are kept but ignored.
    Call,
    Callc,
    Ifc,
    Jmpc,
}

/// Format-3 operations on a bool uniform (LOOP has its own variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BoolFlowOp {
    Callu,
    Ifu,
    /// Jumps when the bool is true, or false when bit 0 of NUM is set.
    Jmpu,
}

/// How a format-2 condition combines the two flag tests (CONDOP, bits 22-23).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CondCombine {
    /// 0: `cmp.x == refx || cmp.y == refy`.
    Or,
    /// 1: `cmp.x == refx && cmp.y == refy`.
    And,
    /// 2: `cmp.x == refx`.
    X,
    /// 3: `cmp.y == refy`.
    Y,
}

/// A format-2 condition: each flag is compared with its reference bit, then combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Condition {
    /// REFX (bit 25).
    pub ref_x: bool,
    /// REFY (bit 24).
    pub ref_y: bool,
    /// CONDOP (bits 22-23).
    pub combine: CondCombine,
}

impl Condition {
    /// Evaluates the condition on the flags `cmp = [x, y]`.
    pub const fn eval(self, cmp: [bool; 2]) -> bool {
        let rx = cmp[0] == self.ref_x;
        let ry = cmp[1] == self.ref_y;
        match self.combine {
            CondCombine::Or => rx || ry,
            CondCombine::And => rx && ry,
            CondCombine::X => rx,
            CondCombine::Y => ry,
        }
    }
}

/// A decoded instruction. Register fields are raw; which source is wide follows from the variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Instruction {
    /// Formats 1 and 1i. The wide source (the one `rel` offsets) is SRC1, or SRC2 for the
    /// inverted operations.
    Binary {
        /// Operation.
        op: BinaryOp,
        /// Destination.
        dst: DstReg,
        /// First source.
        src1: SrcReg,
        /// Second source.
        src2: SrcReg,
        /// Address register offsetting the wide source.
        rel: RelIndex,
        /// Operand-descriptor index (0..128).
        desc: u8,
    },
    /// Format 1u: one wide source. `ignored` holds bits 7-11.
    Unary {
        /// Operation.
        op: UnaryOp,
        /// Destination.
        dst: DstReg,
        /// The source.
        src1: SrcReg,
        /// Address register offsetting the source.
        rel: RelIndex,
        /// Operand-descriptor index (0..128).
        desc: u8,
        /// Bits 7-11, in place.
        ignored: u32,
    },
    /// MOVA (format 1u). The descriptor's mask bits x/y select a0.x/a0.y. `ignored` holds bits
    /// 7-11 and the unused DST field (21-25).
    Mova {
        /// The source.
        src1: SrcReg,
        /// Address register offsetting the source.
        rel: RelIndex,
        /// Operand-descriptor index.
        desc: u8,
        /// Bits 7-11 and 21-25, in place.
        ignored: u32,
    },
    /// CMP (format 1c).
    Cmp {
        /// First (wide) source.
        src1: SrcReg,
        /// Second (narrow) source.
        src2: SrcReg,
        /// Address register offsetting SRC1.
        rel: RelIndex,
        /// Operand-descriptor index.
        desc: u8,
        /// Operator for the x flag.
        cmp_x: CompareOp,
        /// Operator for the y flag.
        cmp_y: CompareOp,
    },
    /// MAD (format 5, SRC2 wide) and MADI (format 5i, SRC3 wide).
    Mad {
        /// True for MADI.
        inverted: bool,
        /// Destination.
        dst: DstReg,
        /// First (narrow) source.
        src1: SrcReg,
        /// Second source (wide in MAD).
        src2: SrcReg,
        /// Third source (wide in MADI).
        src3: SrcReg,
        /// Address register offsetting the wide source.
        rel: RelIndex,
        /// Operand-descriptor index (0..32).
        desc: u8,
    },
    /// Format 0. `ignored` holds bits 0-25.
    Simple {
        /// Operation.
        op: SimpleOp,
        /// Bits 0-25, in place.
        ignored: u32,
    },
    /// Format 2. `ignored` holds bits 8-9.
    CondFlow {
        /// Operation.
        op: CondFlowOp,
        /// The condition (kept but unused by CALL).
        cond: Condition,
        /// DST: target word address (0..4096).
        target: u16,
        /// NUM: instruction count.
        count: u8,
        /// Bits 8-9, in place.
        ignored: u32,
    },
    /// Format 3 on a bool uniform. `ignored` holds bits 8-9.
    BoolFlow {
        /// Operation.
        op: BoolFlowOp,
        /// b0-b15.
        bool_id: u8,
        /// DST: target word address.
        target: u16,
        /// NUM: instruction count (JMPU: bit 0 inverts the test).
        count: u8,
        /// Bits 8-9, in place.
        ignored: u32,
    },
    /// LOOP (format 3 on an int uniform). `ignored` holds bits 8-9 and 24-25.
    Loop {
        /// i0-i3.
        int_id: u8,
        /// DST: the last instruction of the body (inclusive).
        target: u16,
        /// NUM: unused by the hardware, kept.
        count: u8,
        /// Bits 8-9 and 24-25, in place.
        ignored: u32,
    },
    /// SETEMIT (format 4). `ignored` holds bits 0-21.
    SetEmit {
        /// VTXID, the slot the next EMIT writes (0..4; 3 makes EMIT fail).
        vertex: u8,
        /// FLAG_PRIMEMIT: emit a triangle after the next vertex.
        primitive: bool,
        /// FLAG_WINDING: invert the winding of that triangle.
        winding: bool,
        /// Bits 0-21, in place.
        ignored: u32,
    },
    /// An unknown opcode (0x10, 0x11, 0x14-0x17, 0x1C-0x1F); executes as NOP.
    Unknown {
        /// The whole word.
        word: u32,
    },
}

/// Which of two adjacent operands the index register `rel` offsets: the first, unless the second
/// holds the wide field (the inverted formats 1i and 5i). Returns the index of each operand.
pub const fn split_rel(rel: RelIndex, second_is_wide: bool) -> (RelIndex, RelIndex) {
    if second_is_wide {
        (RelIndex::None, rel)
    } else {
        (rel, RelIndex::None)
    }
}

/// One source operand as an instruction reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceOperand {
    /// The register.
    pub reg: SrcReg,
    /// The address register offsetting it (only ever non-`None` on the wide operand).
    pub rel: RelIndex,
    /// Which descriptor slot (0 = SRC1, 1 = SRC2, 2 = SRC3) gives its swizzle and negation.
    pub slot: usize,
    /// The lanes (bit i = lane i, before swizzling) whose values the operation uses.
    pub lanes: u8,
}

impl SourceOperand {
    /// The register components (bit c = component c) read after swizzling with `desc`.
    pub fn components(&self, desc: OperandDescriptor) -> u8 {
        desc.swizzle(self.slot).components_read(self.lanes)
    }
}

impl Instruction {
    /// The operand-descriptor index, for instructions that have one.
    pub const fn desc(&self) -> Option<u8> {
        match *self {
            Instruction::Binary { desc, .. }
            | Instruction::Unary { desc, .. }
            | Instruction::Mova { desc, .. }
            | Instruction::Cmp { desc, .. }
            | Instruction::Mad { desc, .. } => Some(desc),
            _ => None,
        }
    }

    /// The register written, for instructions that write one.
    pub const fn dst(&self) -> Option<DstReg> {
        match *self {
            Instruction::Binary { dst, .. }
            | Instruction::Unary { dst, .. }
            | Instruction::Mad { dst, .. } => Some(dst),
            _ => None,
        }
    }

    /// The source operands and the lanes each one's value is used in, given the descriptor.
    ///
    /// Per-lane operations use the lanes the destination mask enables; DP3 uses x, y, z; DP4 all
    /// four; DPH x, y, z of SRC1 and all of SRC2; DST y, z of SRC1 and y, w of SRC2; EX2, LG2,
    /// RCP, RSQ only x; LITP x, y, w; MOVA x and/or y as its mask says; CMP x and y.
    pub fn sources(&self, desc: OperandDescriptor) -> Vec<SourceOperand> {
        let Some(operation) = self.operation() else {
            return Vec::new();
        };
        let lanes = operation.source_lanes(desc);
        operation
            .operands()
            .map(|operand| SourceOperand {
                reg: operand.reg,
                rel: operand.rel,
                slot: operand.slot,
                lanes: lanes[operand.slot],
            })
            .collect()
    }

    /// The operation, as named in the decoder table.
    pub const fn mnemonic(&self) -> Mnemonic {
        match *self {
            Instruction::Binary { op, .. } => match op {
                BinaryOp::Add => Mnemonic::Add,
                BinaryOp::Dp3 => Mnemonic::Dp3,
                BinaryOp::Dp4 => Mnemonic::Dp4,
                BinaryOp::Dph => Mnemonic::Dph,
                BinaryOp::Dst => Mnemonic::Dst,
                BinaryOp::Mul => Mnemonic::Mul,
                BinaryOp::Sge => Mnemonic::Sge,
                BinaryOp::Slt => Mnemonic::Slt,
                BinaryOp::Max => Mnemonic::Max,
                BinaryOp::Min => Mnemonic::Min,
                BinaryOp::Dphi => Mnemonic::Dphi,
                BinaryOp::Dsti => Mnemonic::Dsti,
                BinaryOp::Sgei => Mnemonic::Sgei,
                BinaryOp::Slti => Mnemonic::Slti,
            },
            Instruction::Unary { op, .. } => match op {
                UnaryOp::Ex2 => Mnemonic::Ex2,
                UnaryOp::Lg2 => Mnemonic::Lg2,
                UnaryOp::Litp => Mnemonic::Litp,
                UnaryOp::Flr => Mnemonic::Flr,
                UnaryOp::Rcp => Mnemonic::Rcp,
                UnaryOp::Rsq => Mnemonic::Rsq,
                UnaryOp::Mov => Mnemonic::Mov,
            },
            Instruction::Mova { .. } => Mnemonic::Mova,
            Instruction::Cmp { .. } => Mnemonic::Cmp,
            Instruction::Mad { inverted: true, .. } => Mnemonic::Madi,
            Instruction::Mad {
                inverted: false, ..
            } => Mnemonic::Mad,
            Instruction::Simple { op, .. } => match op {
                SimpleOp::Break => Mnemonic::Break,
                SimpleOp::Nop => Mnemonic::Nop,
                SimpleOp::End => Mnemonic::End,
                SimpleOp::Emit => Mnemonic::Emit,
            },
            Instruction::CondFlow { op, .. } => match op {
                CondFlowOp::Breakc => Mnemonic::Breakc,
                CondFlowOp::Call => Mnemonic::Call,
                CondFlowOp::Callc => Mnemonic::Callc,
                CondFlowOp::Ifc => Mnemonic::Ifc,
                CondFlowOp::Jmpc => Mnemonic::Jmpc,
            },
            Instruction::BoolFlow { op, .. } => match op {
                BoolFlowOp::Callu => Mnemonic::Callu,
                BoolFlowOp::Ifu => Mnemonic::Ifu,
                BoolFlowOp::Jmpu => Mnemonic::Jmpu,
            },
            Instruction::Loop { .. } => Mnemonic::Loop,
            Instruction::SetEmit { .. } => Mnemonic::SetEmit,
            Instruction::Unknown { .. } => Mnemonic::Unknown,
        }
    }

    /// The table row of this instruction's opcode.
    pub fn info(&self) -> &'static OpcodeInfo {
        // Encoding cannot fail for a decoded instruction; for a hand-built one with out-of-range
        // fields the opcode bits are still right.
        opcode_info(encode::opcode_bits(self) << 26)
    }
}

#[cfg(test)]
mod tests;
