//! [`Instruction`] → instruction word: the exact inverse of [`decode`](super::decode()).

use std::fmt;

use super::decode::ignored;
use super::{
    CondCombine, Instruction, MAD_OPDESC_LIMIT, OPCODES, OPDESC_COUNT, PROGRAM_WORDS, SrcReg,
};

/// Why a typed instruction has no encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// A source in a narrow (5-bit) field names a float uniform.
    UniformInNarrowSlot {
        /// Which operand (`"src1"`, `"src2"`, `"src3"`).
        operand: &'static str,
        /// The register named.
        reg: SrcReg,
    },
    /// The operand-descriptor index does not fit the field (128, or 32 for MAD/MADI).
    OpdescOutOfRange {
        /// The index.
        desc: u8,
        /// The exclusive limit.
        limit: usize,
    },
    /// A flow-control target beyond program memory.
    TargetOutOfRange(u16),
    /// A field value too wide for its bits.
    FieldOutOfRange {
        /// The field.
        field: &'static str,
        /// The value.
        value: u32,
    },
    /// `ignored` holds bits outside the variant's ignored-bit mask.
    IgnoredBitsOutOfPlace {
        /// The bits given.
        bits: u32,
        /// The bits allowed.
        allowed: u32,
    },
    /// An `Unknown` instruction whose word has a known opcode.
    KnownOpcode(u32),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::UniformInNarrowSlot { operand, reg } => {
                write!(
                    f,
                    "{operand} is {reg}, but its field can only name v0-v15 and r0-r15"
                )
            }
            EncodeError::OpdescOutOfRange { desc, limit } => {
                write!(
                    f,
                    "operand descriptor {desc} does not fit the field (must be below {limit})"
                )
            }
            EncodeError::TargetOutOfRange(t) => {
                write!(
                    f,
                    "target {t:#x} is beyond program memory ({PROGRAM_WORDS} words)"
                )
            }
            EncodeError::FieldOutOfRange { field, value } => {
                write!(f, "{field} = {value} does not fit its field")
            }
            EncodeError::IgnoredBitsOutOfPlace { bits, allowed } => {
                write!(
                    f,
                    "ignored bits {bits:#010x} are outside the ignored mask {allowed:#010x}"
                )
            }
            EncodeError::KnownOpcode(word) => {
                write!(
                    f,
                    "word {word:#010x} has a known opcode but was given as unknown"
                )
            }
        }
    }
}

impl std::error::Error for EncodeError {}

/// The 6-bit opcode of an instruction: the decoder table's row of its mnemonic (for MAD/MADI
/// and CMP, the lowest of their opcode range), so the numbers are stated once, in
/// [`super::OPCODES`].
pub(crate) fn opcode_bits(inst: &Instruction) -> u32 {
    match *inst {
        Instruction::Unknown { word } => word >> 26,
        _ => super::opcode_of(inst.mnemonic()),
    }
}

fn narrow(operand: &'static str, reg: SrcReg) -> Result<u32, EncodeError> {
    if reg.is_narrow() {
        Ok(reg.raw() as u32)
    } else {
        Err(EncodeError::UniformInNarrowSlot { operand, reg })
    }
}

fn desc_field(desc: u8, limit: usize) -> Result<u32, EncodeError> {
    if (desc as usize) < limit {
        Ok(desc as u32)
    } else {
        Err(EncodeError::OpdescOutOfRange { desc, limit })
    }
}

fn target_field(target: u16) -> Result<u32, EncodeError> {
    if (target as usize) < PROGRAM_WORDS {
        Ok(target as u32)
    } else {
        Err(EncodeError::TargetOutOfRange(target))
    }
}

fn bounded(field: &'static str, value: u32, width: u32) -> Result<u32, EncodeError> {
    if value < (1 << width) {
        Ok(value)
    } else {
        Err(EncodeError::FieldOutOfRange { field, value })
    }
}

fn ignored_bits(bits: u32, allowed: u32) -> Result<u32, EncodeError> {
    if bits & !allowed == 0 {
        Ok(bits)
    } else {
        Err(EncodeError::IgnoredBitsOutOfPlace { bits, allowed })
    }
}

/// Encodes an instruction. Fails only for field values that do not fit (a uniform in a narrow
/// slot, a descriptor index too large for the field, ...), never for a decoded instruction.
pub fn encode(inst: &Instruction) -> Result<u32, EncodeError> {
    let opcode = opcode_bits(inst) << 26;
    let word = match *inst {
        Instruction::Binary {
            op,
            dst,
            src1,
            src2,
            rel,
            desc,
        } => {
            let (src1, src2) = if op.is_inverted() {
                (narrow("src1", src1)? << 14, (src2.raw() as u32) << 7)
            } else {
                ((src1.raw() as u32) << 12, narrow("src2", src2)? << 7)
            };
            opcode
                | desc_field(desc, OPDESC_COUNT)?
                | src1
                | src2
                | (rel.bits() << 19)
                | ((dst.raw() as u32) << 21)
        }
        Instruction::Unary {
            dst,
            src1,
            rel,
            desc,
            ignored,
            ..
        } => {
            opcode
                | desc_field(desc, OPDESC_COUNT)?
                | ((src1.raw() as u32) << 12)
                | (rel.bits() << 19)
                | ((dst.raw() as u32) << 21)
                | ignored_bits(ignored, ignored::UNARY)?
        }
        Instruction::Mova {
            src1,
            rel,
            desc,
            ignored,
        } => {
            opcode
                | desc_field(desc, OPDESC_COUNT)?
                | ((src1.raw() as u32) << 12)
                | (rel.bits() << 19)
                | ignored_bits(ignored, ignored::MOVA)?
        }
        Instruction::Cmp {
            src1,
            src2,
            rel,
            desc,
            cmp_x,
            cmp_y,
        } => {
            // Bit 26 (the opcode's low bit) is the top bit of CMPX.
            (0x2E << 26)
                | desc_field(desc, OPDESC_COUNT)?
                | (narrow("src2", src2)? << 7)
                | ((src1.raw() as u32) << 12)
                | (rel.bits() << 19)
                | (cmp_y.bits() << 21)
                | (cmp_x.bits() << 24)
        }
        Instruction::Mad {
            inverted,
            dst,
            src1,
            src2,
            src3,
            rel,
            desc,
        } => {
            let (src2, src3) = if inverted {
                (narrow("src2", src2)? << 12, (src3.raw() as u32) << 5)
            } else {
                ((src2.raw() as u32) << 10, narrow("src3", src3)? << 5)
            };
            // Bits 26-28 belong to DST: only the top three opcode bits are the opcode.
            (opcode & (0x7 << 29))
                | desc_field(desc, MAD_OPDESC_LIMIT)?
                | src3
                | src2
                | (narrow("src1", src1)? << 17)
                | (rel.bits() << 22)
                | ((dst.raw() as u32) << 24)
        }
        Instruction::Simple { ignored, .. } => opcode | ignored_bits(ignored, ignored::SIMPLE)?,
        Instruction::CondFlow {
            cond,
            target,
            count,
            ignored,
            ..
        } => {
            let combine = match cond.combine {
                CondCombine::Or => 0,
                CondCombine::And => 1,
                CondCombine::X => 2,
                CondCombine::Y => 3,
            };
            opcode
                | count as u32
                | ignored_bits(ignored, ignored::FLOW)?
                | (target_field(target)? << 10)
                | (combine << 22)
                | ((cond.ref_y as u32) << 24)
                | ((cond.ref_x as u32) << 25)
        }
        Instruction::BoolFlow {
            bool_id,
            target,
            count,
            ignored,
            ..
        } => {
            opcode
                | count as u32
                | ignored_bits(ignored, ignored::FLOW)?
                | (target_field(target)? << 10)
                | (bounded("bool uniform id", bool_id as u32, 4)? << 22)
        }
        Instruction::Loop {
            int_id,
            target,
            count,
            ignored,
        } => {
            opcode
                | count as u32
                | ignored_bits(ignored, ignored::LOOP)?
                | (target_field(target)? << 10)
                | (bounded("int uniform id", int_id as u32, 2)? << 22)
        }
        Instruction::SetEmit {
            vertex,
            primitive,
            winding,
            ignored,
        } => {
            opcode
                | ignored_bits(ignored, ignored::SETEMIT)?
                | ((winding as u32) << 22)
                | ((primitive as u32) << 23)
                | (bounded("vertex id", vertex as u32, 2)? << 24)
        }
        Instruction::Unknown { word } => {
            if OPCODES[(word >> 26) as usize].mnemonic != super::Mnemonic::Unknown {
                return Err(EncodeError::KnownOpcode(word));
            }
            word
        }
    };
    Ok(word)
}
