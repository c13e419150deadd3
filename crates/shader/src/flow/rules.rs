//! The data-dependent rules of control flow, stated once for every engine: a flow
//! instruction's test (condition flags, bool uniforms, the JMPU inversion) and the loop
//! counter and aL rules (docs/execution-model.md §5).
//!
//! Each rule is written against [`FlowOps`], a small abstraction of the values it works on.
//! The interpreter's driver ([`super::FlowDriver`]) implements it with plain `bool` and `i32`;
//! the JIT implements it with IR values and so emits exactly these rules as code.

use crate::isa::{BoolFlowOp, CondCombine, CondFlowOp, Condition, Instruction};

/// The byte of an int uniform that holds a LOOP's pass count minus one (i.x).
pub const LOOP_COUNT_BYTE: usize = 0;
/// The byte of an int uniform that holds aL's start value (i.y, unsigned).
pub const LOOP_START_BYTE: usize = 1;
/// The byte of an int uniform that holds aL's increment per pass (i.z, unsigned).
pub const LOOP_STEP_BYTE: usize = 2;

/// The values the rules compute with and where they read the invocation's state.
pub trait FlowOps {
    /// A truth value.
    type Bit: Copy;
    /// A 32-bit integer (aL, loop counters).
    type Int: Copy;
    /// A constant truth value.
    fn constant(&mut self, value: bool) -> Self::Bit;
    /// Logical not.
    fn not(&mut self, a: Self::Bit) -> Self::Bit;
    /// Logical and.
    fn and(&mut self, a: Self::Bit, b: Self::Bit) -> Self::Bit;
    /// Logical or.
    fn or(&mut self, a: Self::Bit, b: Self::Bit) -> Self::Bit;
    /// cmp.x (`lane` 0) or cmp.y (1).
    fn cmp_flag(&mut self, lane: usize) -> Self::Bit;
    /// Bool uniform `id` as the invocation sees it.
    fn bool_uniform(&mut self, id: u8) -> Self::Bit;
    /// Byte `byte` of int uniform `id`, zero-extended.
    fn int_uniform(&mut self, id: u8, byte: usize) -> Self::Int;
    /// Wrapping 32-bit addition.
    fn add(&mut self, a: Self::Int, b: Self::Int) -> Self::Int;
    /// `if condition { a } else { b }`.
    fn select(&mut self, condition: Self::Bit, a: Self::Int, b: Self::Int) -> Self::Int;
}

/// A format-2 condition on the flags: each flag is compared with its reference bit, and the
/// two results are combined (or, and, x only, y only).
pub fn condition<O: FlowOps>(ops: &mut O, cond: Condition) -> O::Bit {
    let mut matches = |lane: usize, reference: bool| {
        let flag = ops.cmp_flag(lane);
        if reference { flag } else { ops.not(flag) }
    };
    let x = matches(0, cond.ref_x);
    let y = matches(1, cond.ref_y);
    match cond.combine {
        CondCombine::Or => ops.or(x, y),
        CondCombine::And => ops.and(x, y),
        CondCombine::X => x,
        CondCombine::Y => y,
    }
}

/// The test of a flow instruction ([`super::Choices::condition`]): whether the IF enters its
/// then-block, the CALLC/CALLU or JMPC/JMPU is taken, the BREAKC breaks. `None` for an
/// instruction without a test (CALL is always taken). JMPU jumps when its bool is *false* if
/// bit 0 of NUM is set.
pub fn test<O: FlowOps>(ops: &mut O, inst: &Instruction) -> Option<O::Bit> {
    match *inst {
        Instruction::CondFlow {
            op: CondFlowOp::Call,
            ..
        } => None,
        Instruction::CondFlow { cond, .. } => Some(condition(ops, cond)),
        Instruction::BoolFlow {
            op, bool_id, count, ..
        } => {
            let value = ops.bool_uniform(bool_id);
            let inverted = op == BoolFlowOp::Jmpu && count & 1 != 0;
            Some(if inverted { ops.not(value) } else { value })
        }
        _ => None,
    }
}

/// What a LOOP with int uniform `id` starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopStart<I> {
    /// Passes left after the first (i.x): the body runs `remaining + 1` times.
    pub remaining: I,
    /// What each pass end adds to aL (i.z, unsigned).
    pub increment: I,
    /// aL's value for the first pass (i.y, unsigned).
    pub al: I,
}

/// LOOP: the counters it pushes and aL's new value. The aL before the LOOP is kept beside the
/// counters and restored by [`al_after_exit`].
pub fn loop_start<O: FlowOps>(ops: &mut O, int_id: u8) -> LoopStart<O::Int> {
    LoopStart {
        remaining: ops.int_uniform(int_id, LOOP_COUNT_BYTE),
        increment: ops.int_uniform(int_id, LOOP_STEP_BYTE),
        al: ops.int_uniform(int_id, LOOP_START_BYTE),
    }
}

/// aL after a loop pass ends (the last body instruction, or a BREAK): every pass end adds the
/// increment, wrapping, whether the loop runs again or not.
pub fn al_after_pass<O: FlowOps>(ops: &mut O, al: O::Int, increment: O::Int) -> O::Int {
    ops.add(al, increment)
}

/// aL after the innermost loop is left: when another loop remains on the stack, aL returns to
/// the value it had before the exited LOOP started; otherwise it keeps its value.
pub fn al_after_exit<O: FlowOps>(
    ops: &mut O,
    outer_remains: O::Bit,
    previous_al: O::Int,
    al: O::Int,
) -> O::Int {
    ops.select(outer_remains, previous_al, al)
}
