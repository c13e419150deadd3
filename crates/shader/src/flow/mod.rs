//! The control-flow stack machine of docs/execution-model.md §5: the one statement of it
//! ([`step_on`], over the [`StackOps`] trait) that the reference interpreter runs concretely,
//! the validator explores abstractly and the scalar JIT compiles.
//!
//! A [`FlowState`] is the PC and three ring-buffer stacks ([`RingStack`]: IF 8 deep, CALL 4,
//! LOOP 4) that overwrite their oldest entry on overflow. [`step`] executes the control flow of
//! one instruction on it: its own effect (a push, a jump request, a BREAK), then the CALL stack pops
//! while its top ends at the next PC (the fourth pop in one step does not update the PC), the IF
//! stack pops at most once, the LOOP stack steps at most once, and a jump is taken only when no
//! stack entry matched. PC priority LOOP > IF > CALL > jump > PC+1.
//!
//! The machine knows nothing about registers. The two data-dependent facts it needs come in as
//! [`Choices`]: whether the instruction's test passes, and whether the innermost loop runs its
//! body again when its end is reached. The interpreter computes them from the condition flags,
//! the bool uniforms and its loop counters; the validator follows every combination. The loop
//! counters (passes left, aL increment, the aL to restore) are not part of the state, so the
//! set of states is finite; the interpreter keeps them on a stack of its own, beside
//! [`FlowState::loops`], pushed by every LOOP and driven by the [`LoopPass`] that [`step`]
//! reports.
//!
//! Every address is 12 bits ([`wrap`]): scope ends (`DST+NUM`, `DST+1`), return addresses and
//! the next PC all wrap at 4096 before they are compared. This is a choice: nothing is known
//! about the hardware's comparator width.

mod driver;
pub mod explore;
mod machine;
pub mod rules;

pub use driver::{FlowDriver, FlowInputs, Stop};
pub use machine::{PossibleEnds, Stack, StackOps, When, step, step_asking, step_on};

use crate::isa::{BoolFlowOp, CondFlowOp, Instruction, PROGRAM_WORDS};

/// Depth of the IF stack.
pub const IF_DEPTH: usize = 8;
/// Depth of the CALL stack.
pub const CALL_DEPTH: usize = 4;
/// Depth of the LOOP stack.
pub const LOOP_DEPTH: usize = 4;

/// A program address: 12 bits, so every address computation wraps at 4096.
pub fn wrap(address: u32) -> u16 {
    (address % PROGRAM_WORDS as u32) as u16
}

/// A fixed-capacity stack that, when full, drops its oldest (bottom) entry on a push.
///
/// Slots above the length always hold `T::default()`, so two stacks with the same entries are
/// equal and hash alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RingStack<T, const N: usize> {
    items: [T; N],
    len: u8,
}

impl<T: Copy + Default, const N: usize> Default for RingStack<T, N> {
    fn default() -> Self {
        RingStack {
            items: [T::default(); N],
            len: 0,
        }
    }
}

impl<T: Copy + Default, const N: usize> RingStack<T, N> {
    /// An empty stack.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the stack holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[T] {
        &self.items[..self.len()]
    }

    /// The newest entry.
    pub fn top(&self) -> Option<T> {
        self.entries().last().copied()
    }

    /// The newest entry, mutably.
    pub fn top_mut(&mut self) -> Option<&mut T> {
        let len = self.len();
        self.items[..len].last_mut()
    }

    /// Pushes an entry; when the stack is full the oldest entry is overwritten (lost).
    pub fn push(&mut self, item: T) {
        if self.len() == N {
            self.items.copy_within(1.., 0);
            self.items[N - 1] = item;
        } else {
            self.items[self.len()] = item;
            self.len += 1;
        }
    }

    /// Removes and returns the newest entry.
    pub fn pop(&mut self) -> Option<T> {
        let top = self.top()?;
        self.len -= 1;
        self.items[self.len()] = T::default();
        Some(top)
    }
}

/// An IF scope, pushed by an IFC/IFU whose test passes: when the PC after an instruction would
/// be `else_addr`, it goes to `end` instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IfScope {
    /// DST: the first instruction of the else block (as encoded; not wrapped).
    pub else_addr: u16,
    /// DST + NUM (wrapped): the first instruction after the else block.
    pub end: u16,
}

/// A CALL scope, pushed by a CALL, CALLC or CALLU that is taken: when the PC after an
/// instruction would be `end`, it returns to `ret`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CallScope {
    /// DST + NUM (wrapped): the address after the procedure's last instruction.
    pub end: u16,
    /// The address after the CALL (wrapped).
    pub ret: u16,
}

/// A LOOP scope, without its iteration counter (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LoopScope {
    /// The first body instruction (the address after the LOOP, wrapped).
    pub entry: u16,
    /// DST + 1 (wrapped): the address after the last body instruction.
    pub end: u16,
}

/// The control state of one invocation: everything the flow of control depends on besides the
/// condition flags, the uniforms and the loop counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowState {
    /// The address of the next instruction (0..4096).
    pub pc: u16,
    /// The IF stack.
    pub ifs: RingStack<IfScope, IF_DEPTH>,
    /// The CALL stack.
    pub calls: RingStack<CallScope, CALL_DEPTH>,
    /// The LOOP stack.
    pub loops: RingStack<LoopScope, LOOP_DEPTH>,
}

impl FlowState {
    /// The state at the start of an invocation: PC at `entry` (wrapped), every stack empty.
    pub fn new(entry: u16) -> FlowState {
        FlowState {
            pc: wrap(entry as u32),
            ..FlowState::default()
        }
    }
}

/// The data-dependent facts one instruction's control flow depends on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Choices {
    /// Whether the instruction's test passes: the IF enters its then-block, the CALLC/CALLU or
    /// JMPC/JMPU is taken, the BREAKC breaks. (JMPU's NUM-bit-0 inversion is already applied.)
    /// Ignored by instructions without a test ([`is_conditional`]).
    pub condition: bool,
    /// Whether the innermost loop runs its body again when this instruction ends the body: its
    /// counter is not yet exhausted. The innermost loop is the top of the LOOP stack after the
    /// instruction's own push, so a LOOP whose DST is its own address decides with its own
    /// counter. Ignored when no loop body ends here, and on BREAK.
    pub loop_again: bool,
}

/// How a loop pass ended at an instruction (the last body instruction, or a BREAK). aL is
/// incremented after every pass, whichever way it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoopPass {
    /// The body runs again; the innermost scope stays (its counter goes down by one).
    Again,
    /// The loop is left (its last pass, or BREAK): its scope was popped.
    Exit {
        /// Another loop is still on the stack, so aL returns to the value it had before the
        /// exited LOOP started.
        outer_remains: bool,
    },
}

/// The result of executing one instruction's control flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// Execution goes on.
    Continue {
        /// The new state (its PC wrapped to 0..4096).
        state: FlowState,
        /// The new PC before wrapping (up to 4350), to tell a wrap-around from a jump.
        target: u32,
        /// The loop pass that ended here, if one did.
        loop_pass: Option<LoopPass>,
    },
    /// END: the invocation stops, whatever the stacks hold.
    End,
    /// BREAK or a taken BREAKC with an empty LOOP stack: the invocation fails (the GPU hangs).
    BreakOutsideLoop,
}

/// A scope as pushed onto one of the three stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Onto the IF stack.
    If(IfScope),
    /// Onto the CALL stack.
    Call(CallScope),
    /// Onto the LOOP stack.
    Loop(LoopScope),
}

/// The scope the instruction `inst` at address `pc` pushes when it is taken (IFC/IFU whose test
/// passes, CALL/CALLC/CALLU taken, LOOP), with every address wrapped as the model says; `None`
/// for an instruction that pushes nothing. The one place the scope addresses are computed.
pub fn pushed_scope(pc: u16, inst: &Instruction) -> Option<Scope> {
    let after = wrap(pc as u32 + 1);
    match *inst {
        Instruction::CondFlow {
            op: CondFlowOp::Ifc,
            target,
            count,
            ..
        }
        | Instruction::BoolFlow {
            op: BoolFlowOp::Ifu,
            target,
            count,
            ..
        } => Some(Scope::If(IfScope {
            else_addr: target,
            end: wrap(target as u32 + count as u32),
        })),
        Instruction::CondFlow {
            op: CondFlowOp::Call | CondFlowOp::Callc,
            target,
            count,
            ..
        }
        | Instruction::BoolFlow {
            op: BoolFlowOp::Callu,
            target,
            count,
            ..
        } => Some(Scope::Call(CallScope {
            end: wrap(target as u32 + count as u32),
            ret: after,
        })),
        Instruction::Loop { target, .. } => Some(Scope::Loop(LoopScope {
            entry: after,
            end: wrap(target as u32 + 1),
        })),
        _ => None,
    }
}

/// Whether an instruction has a data-dependent test ([`Choices::condition`] matters).
pub fn is_conditional(inst: &Instruction) -> bool {
    match inst {
        Instruction::CondFlow { op, .. } => *op != CondFlowOp::Call,
        Instruction::BoolFlow { .. } => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::testing::*;

    fn at_pc(pc: u16) -> FlowState {
        FlowState::new(pc)
    }

    fn go(state: &FlowState, inst: Instruction, condition: bool, loop_again: bool) -> Step {
        step(
            state,
            &inst,
            Choices {
                condition,
                loop_again,
            },
        )
    }

    fn cont(step: Step) -> FlowState {
        match step {
            Step::Continue { state, .. } => state,
            other => panic!("expected Continue, got {other:?}"),
        }
    }

    fn pass(step: Step) -> Option<LoopPass> {
        match step {
            Step::Continue { loop_pass, .. } => loop_pass,
            other => panic!("expected Continue, got {other:?}"),
        }
    }

    trait With {
        fn with_pc(self, pc: u16) -> Self;
        fn with_calls(self, calls: &[CallScope]) -> Self;
        fn with_ifs(self, ifs: &[IfScope]) -> Self;
        fn with_loops(self, loops: &[LoopScope]) -> Self;
    }

    impl With for FlowState {
        fn with_pc(mut self, pc: u16) -> Self {
            self.pc = pc;
            self
        }
        fn with_calls(mut self, calls: &[CallScope]) -> Self {
            calls.iter().for_each(|&e| self.calls.push(e));
            self
        }
        fn with_ifs(mut self, ifs: &[IfScope]) -> Self {
            ifs.iter().for_each(|&e| self.ifs.push(e));
            self
        }
        fn with_loops(mut self, loops: &[LoopScope]) -> Self {
            loops.iter().for_each(|&e| self.loops.push(e));
            self
        }
    }

    #[test]
    fn ring_stack_drops_the_oldest() {
        let mut s: RingStack<u16, 4> = RingStack::new();
        for i in 1..=5 {
            s.push(i);
        }
        assert_eq!(s.entries(), &[2, 3, 4, 5]);
        assert_eq!(s.pop(), Some(5));
        assert_eq!(s.top(), Some(4));
        assert_eq!(s.len(), 3);
        // Popped slots are cleared, so equal contents compare equal.
        let mut t: RingStack<u16, 4> = RingStack::new();
        for i in 2..=4 {
            t.push(i);
        }
        assert_eq!(s, t);
    }

    #[test]
    fn ring_stack_drops_the_oldest_entry() {
        let mut stack = RingStack::<u16, 4>::default();
        for n in 1..=6 {
            stack.push(n);
        }
        assert_eq!(stack.entries(), &[3, 4, 5, 6]);
        assert_eq!(stack.pop(), Some(6));
        assert_eq!(stack.len(), 3);
        *stack.top_mut().unwrap() = 9;
        assert_eq!(stack.entries(), &[3, 4, 9]);
        assert!(RingStack::<u16, 4>::new().top_mut().is_none());
    }

    #[test]
    fn straight_line_end_and_break() {
        assert_eq!(cont(go(&at_pc(3), nop(), false, false)).pc, 4);
        assert_eq!(go(&at_pc(3), end(), true, true), Step::End);
        assert_eq!(go(&at_pc(3), brk(), false, false), Step::BreakOutsideLoop);
        assert_eq!(go(&at_pc(3), breakc(), true, false), Step::BreakOutsideLoop);
        assert_eq!(cont(go(&at_pc(3), breakc(), false, false)).pc, 4);
    }

    #[test]
    fn pc_wraps_at_4096() {
        let step = go(&at_pc(4095), nop(), false, false);
        assert_eq!(
            step,
            Step::Continue {
                state: at_pc(0),
                target: 4096,
                loop_pass: None,
            }
        );
    }

    #[test]
    fn if_true_pushes_and_if_false_jumps() {
        let s = cont(go(&at_pc(1), ifu(5, 2), true, false));
        assert_eq!(s.pc, 2);
        assert_eq!(
            s.ifs.entries(),
            &[IfScope {
                else_addr: 5,
                end: 7
            }]
        );
        let s = cont(go(&s.with_pc(4), nop(), false, false));
        assert_eq!(s.pc, 7);
        assert!(s.ifs.is_empty());
        let s = cont(go(&at_pc(1), ifu(5, 2), false, false));
        assert_eq!(s.pc, 5);
        assert!(s.ifs.is_empty());
    }

    #[test]
    fn jump_at_the_end_of_a_scope_is_not_taken() {
        let s = cont(go(&at_pc(1), ifu(5, 2), true, false)).with_pc(4);
        let s = cont(go(&s, jmpu(100), true, false));
        assert_eq!(s.pc, 7);
        let free = cont(go(&at_pc(4), jmpu(100), true, false));
        assert_eq!(free.pc, 100);
    }

    #[test]
    fn jump_is_not_taken_when_a_scope_ends() {
        let s = at_pc(10).with_ifs(&[IfScope {
            else_addr: 11,
            end: 20,
        }]);
        let s = cont(go(&s, jmpu(100), true, false));
        assert_eq!(s.pc, 20);
        assert!(s.ifs.is_empty());
    }

    #[test]
    fn call_returns_and_fourth_pop_keeps_the_third_pc() {
        // Tail calls: each procedure's last instruction calls the next one.
        let p = at(&[
            (0, call(10, 2)),
            (11, call(20, 2)),
            (21, call(30, 2)),
            (31, call(40, 2)),
            (41, nop()),
        ]);
        let mut s = at_pc(0);
        for expected in [0, 10, 11, 20, 21, 30, 31, 40, 41] {
            assert_eq!(s.pc, expected);
            s = cont(go(&s, p[s.pc as usize], true, false));
        }
        assert!(s.calls.is_empty());
        // Pops: 42 -> ret 32, 32 -> ret 22, 22 -> ret 12, 12 -> (lost) stays 12.
        assert_eq!(s.pc, 12);

        // Three pops in one step return all the way.
        let mut s = at_pc(21).with_calls(&[CallScope { end: 22, ret: 1 }]);
        for _ in 0..5 {
            s = cont(go(&s, p[s.pc as usize], true, false));
        }
        assert_eq!(s.pc, 1);
        assert!(s.calls.is_empty());
    }

    #[test]
    fn fourth_call_pop_does_not_update_the_pc() {
        // Four nested calls that all end where the previous one returns.
        let s = at_pc(10).with_calls(&[
            CallScope { end: 40, ret: 50 },
            CallScope { end: 30, ret: 40 },
            CallScope { end: 20, ret: 30 },
            CallScope { end: 11, ret: 20 },
        ]);
        let s = cont(go(&s, nop(), false, false));
        assert!(s.calls.is_empty());
        assert_eq!(s.pc, 40, "the third return address wins");
    }

    #[test]
    fn conditional_call_not_taken_falls_through() {
        let s = cont(go(&at_pc(0), callu(10, 2), false, false));
        assert_eq!(s.pc, 1);
        assert!(s.calls.is_empty());
        let s = cont(go(&at_pc(0), callu(10, 2), true, false));
        assert_eq!(s.pc, 10);
        assert_eq!(s.calls.entries(), &[CallScope { end: 12, ret: 1 }]);
    }

    #[test]
    fn loop_again_exit_and_break() {
        let s = cont(go(&at_pc(0), loop_(2), false, false));
        assert_eq!(s.pc, 1);
        assert_eq!(s.loops.entries(), &[LoopScope { entry: 1, end: 3 }]);
        let at2 = s.with_pc(2);
        let again = go(&at2, nop(), false, true);
        assert_eq!(pass(again), Some(LoopPass::Again));
        let again = cont(again);
        assert_eq!((again.pc, again.loops.len()), (1, 1));
        let exit = go(&at2, nop(), false, false);
        let outer_remains = false;
        assert_eq!(pass(exit), Some(LoopPass::Exit { outer_remains }));
        let exit = cont(exit);
        assert_eq!((exit.pc, exit.loops.len()), (3, 0));
        let at1 = s.with_pc(1);
        let broke = go(&at1, brk(), false, true);
        assert_eq!(pass(broke), Some(LoopPass::Exit { outer_remains }));
        let broke = cont(broke);
        assert_eq!((broke.pc, broke.loops.len()), (3, 0));
        assert_eq!(pass(go(&at1, nop(), true, true)), None);
    }

    #[test]
    fn loop_ending_at_itself_decides_at_once() {
        // LOOP whose DST is its own address: the pushed scope ends after the LOOP itself.
        let again = go(&at_pc(5), loop_(5), false, true);
        assert_eq!(pass(again), Some(LoopPass::Again));
        let again = cont(again);
        assert_eq!(again.pc, 6);
        assert_eq!(again.loops.entries(), &[LoopScope { entry: 6, end: 6 }]);
        let exit = go(&at_pc(5), loop_(5), false, false);
        let outer_remains = false;
        assert_eq!(pass(exit), Some(LoopPass::Exit { outer_remains }));
        assert_eq!(cont(exit), at_pc(6));
    }

    #[test]
    fn loop_beats_if_and_call() {
        // Instruction 2 ends an IF then-block and the loop body at once: the loop wins.
        let s = at_pc(2)
            .with_loops(&[LoopScope { entry: 1, end: 3 }])
            .with_ifs(&[IfScope {
                else_addr: 3,
                end: 9,
            }]);
        let again = cont(go(&s, nop(), false, true));
        assert_eq!(again.pc, 1);
        assert!(again.ifs.is_empty(), "the IF still popped");
    }

    #[test]
    fn loop_priority_over_if_and_outer_loop_reported() {
        let s = at_pc(8)
            .with_loops(&[
                LoopScope { entry: 1, end: 9 },
                LoopScope { entry: 5, end: 9 },
            ])
            .with_ifs(&[IfScope {
                else_addr: 9,
                end: 30,
            }]);
        let step = go(&s, nop(), false, false);
        assert_eq!(
            pass(step),
            Some(LoopPass::Exit {
                outer_remains: true
            }),
            "aL is restored because an outer loop remains"
        );
        let s = cont(step);
        assert_eq!(s.pc, 9, "the inner loop ends; LOOP beats IF");
        assert_eq!(s.loops.len(), 1, "one LOOP pop per instruction");
        assert!(s.ifs.is_empty());
    }

    #[test]
    fn tests_are_conditional() {
        assert!(is_conditional(&ifu(1, 1)));
        assert!(is_conditional(&breakc()));
        assert!(!is_conditional(&call(1, 1)));
        assert!(!is_conditional(&loop_(1)));
        assert!(!is_conditional(&nop()));
    }
}
