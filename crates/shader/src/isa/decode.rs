//! Instruction word → [`Instruction`]. Total: every 32-bit word decodes.

use super::{
    BinaryOp, BoolFlowOp, CompareOp, CondCombine, CondFlowOp, Condition, DstReg, Format,
    Instruction, Mnemonic, RelIndex, SimpleOp, SrcReg, UnaryOp, opcode_info,
};

/// Bits of a field `width` wide at bit `offset`.
pub(crate) const fn field(word: u32, offset: u32, width: u32) -> u32 {
    (word >> offset) & ((1 << width) - 1)
}

/// The ignored bits of each format that has some, as masks over the word.
pub mod ignored {
    /// Format 1u: bits 7-11 (the SRC2 slot).
    pub const UNARY: u32 = 0x1F << 7;
    /// MOVA: bits 7-11 and the DST field 21-25.
    pub const MOVA: u32 = UNARY | (0x1F << 21);
    /// Format 0: every operand bit, 0-25.
    pub const SIMPLE: u32 = (1 << 26) - 1;
    /// Formats 2 and 3: bits 8-9.
    pub const FLOW: u32 = 0x3 << 8;
    /// LOOP: bits 8-9 and the top two bits of the uniform id, 24-25.
    pub const LOOP: u32 = FLOW | (0x3 << 24);
    /// SETEMIT: bits 0-21.
    pub const SETEMIT: u32 = (1 << 22) - 1;
}

fn src(raw: u32) -> SrcReg {
    SrcReg::new(raw as u8).expect("a 7-bit field")
}

fn dst(raw: u32) -> DstReg {
    DstReg::new(raw as u8).expect("a 5-bit field")
}

/// Every word of `words` decoded and passed through `f`. Program memory is mostly a run of
/// zeros past the uploaded code (docs/execution-model.md §6.3), so a word equal to the one
/// before it is not decoded again: preparing a program decodes its code, not 4096 words.
pub fn decode_each<T: Clone>(words: &[u32], mut f: impl FnMut(Instruction) -> T) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(words.len());
    let mut rest = words;
    while let Some(&word) = rest.first() {
        let run = rest.iter().take_while(|&&w| w == word).count();
        out.extend(std::iter::repeat_n(f(decode(word)), run));
        rest = &rest[run..];
    }
    out
}

/// Every word of `words` decoded ([`decode_each`]).
pub fn decode_words(words: &[u32]) -> Vec<Instruction> {
    decode_each(words, |inst| inst)
}

/// Decodes one instruction word.
pub fn decode(word: u32) -> Instruction {
    let info = opcode_info(word);
    let desc7 = field(word, 0, 7) as u8;
    match info.format {
        Format::F1 | Format::F1i => {
            let op = match info.mnemonic {
                Mnemonic::Add => BinaryOp::Add,
                Mnemonic::Dp3 => BinaryOp::Dp3,
                Mnemonic::Dp4 => BinaryOp::Dp4,
                Mnemonic::Dph => BinaryOp::Dph,
                Mnemonic::Dst => BinaryOp::Dst,
                Mnemonic::Mul => BinaryOp::Mul,
                Mnemonic::Sge => BinaryOp::Sge,
                Mnemonic::Slt => BinaryOp::Slt,
                Mnemonic::Max => BinaryOp::Max,
                Mnemonic::Min => BinaryOp::Min,
                Mnemonic::Dphi => BinaryOp::Dphi,
                Mnemonic::Dsti => BinaryOp::Dsti,
                Mnemonic::Sgei => BinaryOp::Sgei,
                Mnemonic::Slti => BinaryOp::Slti,
                other => unreachable!("{other:?} is not a two-source operation"),
            };
            let (src1, src2) = if info.format == Format::F1i {
                (field(word, 14, 5), field(word, 7, 7))
            } else {
                (field(word, 12, 7), field(word, 7, 5))
            };
            Instruction::Binary {
                op,
                dst: dst(field(word, 21, 5)),
                src1: src(src1),
                src2: src(src2),
                rel: RelIndex::from_bits(field(word, 19, 2)),
                desc: desc7,
            }
        }
        Format::F1u if info.mnemonic == Mnemonic::Mova => Instruction::Mova {
            src1: src(field(word, 12, 7)),
            rel: RelIndex::from_bits(field(word, 19, 2)),
            desc: desc7,
            ignored: word & ignored::MOVA,
        },
        Format::F1u => {
            let op = match info.mnemonic {
                Mnemonic::Ex2 => UnaryOp::Ex2,
                Mnemonic::Lg2 => UnaryOp::Lg2,
                Mnemonic::Litp => UnaryOp::Litp,
                Mnemonic::Flr => UnaryOp::Flr,
                Mnemonic::Rcp => UnaryOp::Rcp,
                Mnemonic::Rsq => UnaryOp::Rsq,
                Mnemonic::Mov => UnaryOp::Mov,
                other => unreachable!("{other:?} is not a one-source operation"),
            };
            Instruction::Unary {
                op,
                dst: dst(field(word, 21, 5)),
                src1: src(field(word, 12, 7)),
                rel: RelIndex::from_bits(field(word, 19, 2)),
                desc: desc7,
                ignored: word & ignored::UNARY,
            }
        }
        Format::F1c => Instruction::Cmp {
            src1: src(field(word, 12, 7)),
            src2: src(field(word, 7, 5)),
            rel: RelIndex::from_bits(field(word, 19, 2)),
            desc: desc7,
            cmp_x: CompareOp::from_bits(field(word, 24, 3)),
            cmp_y: CompareOp::from_bits(field(word, 21, 3)),
        },
        Format::F5 => Instruction::Mad {
            inverted: false,
            dst: dst(field(word, 24, 5)),
            src1: src(field(word, 17, 5)),
            src2: src(field(word, 10, 7)),
            src3: src(field(word, 5, 5)),
            rel: RelIndex::from_bits(field(word, 22, 2)),
            desc: field(word, 0, 5) as u8,
        },
        Format::F5i => Instruction::Mad {
            inverted: true,
            dst: dst(field(word, 24, 5)),
            src1: src(field(word, 17, 5)),
            src2: src(field(word, 12, 5)),
            src3: src(field(word, 5, 7)),
            rel: RelIndex::from_bits(field(word, 22, 2)),
            desc: field(word, 0, 5) as u8,
        },
        Format::F0 => {
            let op = match info.mnemonic {
                Mnemonic::Break => SimpleOp::Break,
                Mnemonic::Nop => SimpleOp::Nop,
                Mnemonic::End => SimpleOp::End,
                Mnemonic::Emit => SimpleOp::Emit,
                other => unreachable!("{other:?} has operands"),
            };
            Instruction::Simple {
                op,
                ignored: word & ignored::SIMPLE,
            }
        }
        Format::F2 => {
            let op = match info.mnemonic {
                Mnemonic::Breakc => CondFlowOp::Breakc,
                Mnemonic::Call => CondFlowOp::Call,
                Mnemonic::Callc => CondFlowOp::Callc,
                Mnemonic::Ifc => CondFlowOp::Ifc,
                Mnemonic::Jmpc => CondFlowOp::Jmpc,
                other => unreachable!("{other:?} is not format 2"),
            };
            let combine = match field(word, 22, 2) {
                0 => CondCombine::Or,
                1 => CondCombine::And,
                2 => CondCombine::X,
                _ => CondCombine::Y,
            };
            Instruction::CondFlow {
                op,
                cond: Condition {
                    ref_x: field(word, 25, 1) != 0,
                    ref_y: field(word, 24, 1) != 0,
                    combine,
                },
                target: field(word, 10, 12) as u16,
                count: field(word, 0, 8) as u8,
                ignored: word & ignored::FLOW,
            }
        }
        Format::F3 if info.mnemonic == Mnemonic::Loop => Instruction::Loop {
            int_id: field(word, 22, 2) as u8,
            target: field(word, 10, 12) as u16,
            count: field(word, 0, 8) as u8,
            ignored: word & ignored::LOOP,
        },
        Format::F3 => {
            let op = match info.mnemonic {
                Mnemonic::Callu => BoolFlowOp::Callu,
                Mnemonic::Ifu => BoolFlowOp::Ifu,
                Mnemonic::Jmpu => BoolFlowOp::Jmpu,
                other => unreachable!("{other:?} is not format 3"),
            };
            Instruction::BoolFlow {
                op,
                bool_id: field(word, 22, 4) as u8,
                target: field(word, 10, 12) as u16,
                count: field(word, 0, 8) as u8,
                ignored: word & ignored::FLOW,
            }
        }
        Format::F4 => Instruction::SetEmit {
            vertex: field(word, 24, 2) as u8,
            primitive: field(word, 23, 1) != 0,
            winding: field(word, 22, 1) != 0,
            ignored: word & ignored::SETEMIT,
        },
        Format::Unknown => Instruction::Unknown { word },
    }
}
