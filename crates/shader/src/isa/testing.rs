//! Constructors for typed instructions, shared by the unit tests of the modules that analyse or
//! run programs.

use super::{BoolFlowOp, CondCombine, CondFlowOp, Condition, Instruction, SimpleOp};

pub(crate) fn simple(op: SimpleOp) -> Instruction {
    Instruction::Simple { op, ignored: 0 }
}
pub(crate) fn nop() -> Instruction {
    simple(SimpleOp::Nop)
}
pub(crate) fn end() -> Instruction {
    simple(SimpleOp::End)
}
pub(crate) fn brk() -> Instruction {
    simple(SimpleOp::Break)
}
pub(crate) fn emit() -> Instruction {
    simple(SimpleOp::Emit)
}
pub(crate) fn setemit(vertex: u8) -> Instruction {
    Instruction::SetEmit {
        vertex,
        primitive: false,
        winding: false,
        ignored: 0,
    }
}
pub(crate) fn cond_flow(op: CondFlowOp, target: u16, count: u8) -> Instruction {
    Instruction::CondFlow {
        op,
        cond: Condition {
            ref_x: true,
            ref_y: true,
            combine: CondCombine::X,
        },
        target,
        count,
        ignored: 0,
    }
}
pub(crate) fn bool_flow(op: BoolFlowOp, target: u16, count: u8) -> Instruction {
    Instruction::BoolFlow {
        op,
        bool_id: 0,
        target,
        count,
        ignored: 0,
    }
}
pub(crate) fn ifu(target: u16, count: u8) -> Instruction {
    bool_flow(BoolFlowOp::Ifu, target, count)
}
pub(crate) fn ifc(target: u16, count: u8) -> Instruction {
    cond_flow(CondFlowOp::Ifc, target, count)
}
pub(crate) fn callu(target: u16, count: u8) -> Instruction {
    bool_flow(BoolFlowOp::Callu, target, count)
}
pub(crate) fn call(target: u16, count: u8) -> Instruction {
    cond_flow(CondFlowOp::Call, target, count)
}
pub(crate) fn jmpu(target: u16) -> Instruction {
    bool_flow(BoolFlowOp::Jmpu, target, 0)
}
pub(crate) fn breakc() -> Instruction {
    cond_flow(CondFlowOp::Breakc, 0, 0)
}
pub(crate) fn loop_(last: u16) -> Instruction {
    Instruction::Loop {
        int_id: 0,
        target: last,
        count: 0,
        ignored: 0,
    }
}

/// Places instructions at addresses, filling the gaps with NOP.
pub(crate) fn at(parts: &[(u16, Instruction)]) -> Vec<Instruction> {
    let len = parts
        .iter()
        .map(|&(a, _)| a as usize + 1)
        .max()
        .unwrap_or(0);
    let mut program = vec![nop(); len];
    for &(address, inst) in parts {
        program[address as usize] = inst;
    }
    program
}
