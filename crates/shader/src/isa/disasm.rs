//! picasso-style text for instructions and programs.
//!
//! Operands print as picasso writes them: `mul r0.xy, -c4[a0.x].wzyx, v1`. Flow-control
//! instructions print their raw target and count (`ifc cmp.x && !cmp.y, 0x012, 3`), since their
//! block structure is the assembler's business. Ignored bits that are set print as a trailing
//! comment, so nothing in the word is hidden.

use std::fmt::Write;

use super::{
    BoolFlowOp, CondCombine, CondFlowOp, Condition, DstReg, Instruction, OperandDescriptor,
    RelIndex, SimpleOp, SrcReg, Swizzle, split_rel,
};

/// Looks up descriptor `index`, reading a missing entry as 0 (as empty descriptor memory).
fn descriptor(opdescs: &[u32], index: u8) -> OperandDescriptor {
    OperandDescriptor(opdescs.get(index as usize).copied().unwrap_or(0))
}

fn source(reg: SrcReg, rel: RelIndex, desc: OperandDescriptor, slot: usize) -> String {
    let mut text = String::new();
    if desc.negate(slot) {
        text.push('-');
    }
    write!(text, "{reg}").unwrap();
    if let Some(name) = rel.name() {
        write!(text, "[{name}]").unwrap();
    }
    let swizzle = desc.swizzle(slot);
    if swizzle != Swizzle::IDENTITY {
        write!(text, ".{swizzle}").unwrap();
    }
    text
}

fn destination(reg: DstReg, desc: OperandDescriptor) -> String {
    let mask = desc.dest_mask();
    if mask.0 == 0xF {
        reg.to_string()
    } else {
        format!("{reg}.{mask}")
    }
}

/// The picasso spelling of a condition: `cmp.x`, `!cmp.y`, `cmp.x && !cmp.y`, `cmp.x || cmp.y`.
pub fn condition(cond: Condition) -> String {
    let flag = |name: &str, reference: bool| {
        if reference {
            format!("cmp.{name}")
        } else {
            format!("!cmp.{name}")
        }
    };
    match cond.combine {
        CondCombine::X => flag("x", cond.ref_x),
        CondCombine::Y => flag("y", cond.ref_y),
        CondCombine::And => format!("{} && {}", flag("x", cond.ref_x), flag("y", cond.ref_y)),
        CondCombine::Or => format!("{} || {}", flag("x", cond.ref_x), flag("y", cond.ref_y)),
    }
}

/// Formats one instruction, reading swizzles and masks from `opdescs`.
pub fn format_instruction(inst: &Instruction, opdescs: &[u32]) -> String {
    let name = inst.info().name;
    let (text, ignored) = match *inst {
        Instruction::Binary {
            dst,
            src1,
            src2,
            rel,
            desc,
            op,
        } => {
            let d = descriptor(opdescs, desc);
            let (rel1, rel2) = split_rel(rel, op.is_inverted());
            let text = format!(
                "{name} {}, {}, {}",
                destination(dst, d),
                source(src1, rel1, d, 0),
                source(src2, rel2, d, 1)
            );
            (text, 0)
        }
        Instruction::Unary {
            dst,
            src1,
            rel,
            desc,
            ignored,
            ..
        } => {
            let d = descriptor(opdescs, desc);
            (
                format!(
                    "{name} {}, {}",
                    destination(dst, d),
                    source(src1, rel, d, 0)
                ),
                ignored,
            )
        }
        Instruction::Mova {
            src1,
            rel,
            desc,
            ignored,
        } => {
            let d = descriptor(opdescs, desc);
            (
                format!("mova a0.{}, {}", d.dest_mask(), source(src1, rel, d, 0)),
                ignored,
            )
        }
        Instruction::Cmp {
            src1,
            src2,
            rel,
            desc,
            cmp_x,
            cmp_y,
        } => {
            let d = descriptor(opdescs, desc);
            let text = format!(
                "cmp {}, {}, {}, {}",
                source(src1, rel, d, 0),
                cmp_x.name(),
                cmp_y.name(),
                source(src2, RelIndex::None, d, 1)
            );
            (text, 0)
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
            let d = descriptor(opdescs, desc);
            let (rel2, rel3) = split_rel(rel, inverted);
            let text = format!(
                "{name} {}, {}, {}, {}",
                destination(dst, d),
                source(src1, RelIndex::None, d, 0),
                source(src2, rel2, d, 1),
                source(src3, rel3, d, 2)
            );
            (text, 0)
        }
        Instruction::Simple { op, ignored } => {
            let text = match op {
                SimpleOp::Break => "break",
                SimpleOp::Nop => "nop",
                SimpleOp::End => "end",
                SimpleOp::Emit => "emit",
            };
            (text.to_string(), ignored)
        }
        Instruction::CondFlow {
            op,
            cond,
            target,
            count,
            ignored,
        } => {
            let text = match op {
                CondFlowOp::Breakc => format!("breakc {}", condition(cond)),
                CondFlowOp::Jmpc => format!("jmpc {}, {target:#05x}", condition(cond)),
                CondFlowOp::Call => format!("call {target:#05x}, {count}"),
                CondFlowOp::Callc | CondFlowOp::Ifc => {
                    format!("{name} {}, {target:#05x}, {count}", condition(cond))
                }
            };
            (text, ignored)
        }
        Instruction::BoolFlow {
            op,
            bool_id,
            target,
            count,
            ignored,
        } => {
            let text = match op {
                BoolFlowOp::Jmpu => {
                    let bang = if count & 1 != 0 { "!" } else { "" };
                    format!("jmpu {bang}b{bool_id}, {target:#05x}")
                }
                _ => format!("{name} b{bool_id}, {target:#05x}, {count}"),
            };
            (text, ignored)
        }
        Instruction::Loop {
            int_id,
            target,
            ignored,
            ..
        } => (format!("loop i{int_id}, {target:#05x}"), ignored),
        Instruction::SetEmit {
            vertex,
            primitive,
            winding,
            ignored,
        } => {
            let mut text = format!("setemit {vertex}");
            let flags: Vec<&str> = [(primitive, "prim"), (winding, "inv")]
                .iter()
                .filter(|f| f.0)
                .map(|f| f.1)
                .collect();
            if !flags.is_empty() {
                write!(text, ", {}", flags.join(" ")).unwrap();
            }
            (text, ignored)
        }
        Instruction::Unknown { word } => (
            format!(".word {word:#010x} ; unknown opcode {:#04x}", word >> 26),
            0,
        ),
    };
    let mut text = text;
    // Fields that the hardware ignores but a reader must see to know the exact word.
    if let Instruction::CondFlow {
        op: CondFlowOp::Breakc | CondFlowOp::Jmpc,
        count,
        ..
    } = inst
        && *count != 0
    {
        write!(text, " ; num {count}").unwrap();
    }
    if let Instruction::BoolFlow {
        op: BoolFlowOp::Jmpu,
        count,
        ..
    } = inst
        && *count > 1
    {
        write!(text, " ; num {count}").unwrap();
    }
    if ignored != 0 {
        write!(text, " ; ignored bits {ignored:#010x}").unwrap();
    }
    text
}

/// A listing of `code` (one instruction a line, with address and word) for humans.
pub fn format_listing(code: &[u32], opdescs: &[u32]) -> String {
    let mut out = String::new();
    for (address, &word) in code.iter().enumerate() {
        let inst = super::decode(word);
        writeln!(
            out,
            "{address:03x}: {word:08x}    {}",
            format_instruction(&inst, opdescs)
        )
        .unwrap();
    }
    out
}
