//! One instruction's control flow, stated once ([`step_on`]) over the stacks as an engine
//! holds them ([`StackOps`]): the machine's own [`FlowState`] ([`step`], which the interpreter's
//! driver and the validator's exploration run), or the scalar JIT's emitted code.
//!
//! The order (docs/execution-model.md §5): the instruction's own effect (a push, a jump
//! request, a BREAK, which hangs on an empty LOOP stack), then the CALL stack pops while its
//! top ends at the next PC (the fourth pop in one step leaves the PC alone), the IF stack pops
//! at most once, the LOOP stack steps at most once (the body again, or the loop left; BREAK
//! leaves), and a jump is taken only when no stack entry matched. A later match overrides the
//! PC of an earlier one, which gives the priority LOOP > IF > CALL > jump > PC+1.

use super::{
    CALL_DEPTH, Choices, FlowState, LoopPass, Scope, Step, is_conditional, pushed_scope, wrap,
};
use crate::isa::{BoolFlowOp, CondFlowOp, Instruction, SimpleOp};

/// A condition as far as it is known when the step is stated: never, always, or a value the
/// engine holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When<B> {
    /// Known false.
    Never,
    /// Known true.
    Always,
    /// True when the value is.
    If(B),
}

/// One of the three stacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    /// The IF stack.
    If,
    /// The CALL stack.
    Call,
    /// The LOOP stack.
    Loop,
}

/// Which scope ends an engine's analysis lets the step check at an address: the checks it can
/// prove never match are left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PossibleEnds {
    /// How many CALL scopes can end there in one step (at most [`CALL_DEPTH`]).
    pub call_pops: usize,
    /// Whether an IF scope's else block can start there.
    pub if_end: bool,
    /// Whether a loop body can end there.
    pub loop_end: bool,
}

impl PossibleEnds {
    /// Every check (an engine that knows nothing of the program).
    pub const ANY: PossibleEnds = PossibleEnds {
        call_pops: CALL_DEPTH,
        if_end: true,
        loop_end: true,
    };
}

/// The stacks and the PC of one invocation as an engine holds them, for [`step_on`]. A truth
/// value is a `Bit`, an address an `Address`, the top entry of a stack, as read, a `Top`.
pub trait StackOps {
    /// A truth value.
    type Bit: Copy;
    /// An address (wrapped to 12 bits where it comes from a stack).
    type Address: Copy;
    /// The top entry of one stack, as read (empty or not).
    type Top: Copy;

    /// `address` (up to 4096, not wrapped).
    fn address(&mut self, address: u32) -> Self::Address;
    /// Not `a`.
    fn not(&mut self, a: Self::Bit) -> Self::Bit;
    /// `a` and `b`.
    fn and(&mut self, a: Self::Bit, b: Self::Bit) -> Self::Bit;
    /// Runs `body` where `condition` holds; what follows runs either way.
    fn when(&mut self, condition: Self::Bit, body: impl FnOnce(&mut Self));
    /// Runs `then` where `condition` holds and `otherwise` where it does not; what follows
    /// runs either way.
    fn if_else(
        &mut self,
        condition: Self::Bit,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    );
    /// Like [`StackOps::if_else`], when both end the step ([`StackOps::go`],
    /// [`StackOps::go_routed`]): nothing follows.
    fn either(
        &mut self,
        condition: Self::Bit,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    );

    /// Pushes `scope` onto its stack; a LOOP's scope starts the engine's loop counters too.
    fn push(&mut self, scope: Scope);
    /// Whether the LOOP stack is empty.
    fn loops_empty(&mut self) -> Self::Bit;
    /// The invocation fails where `hangs` (BREAK outside a loop). Returns whether the step
    /// ends here (known to hang).
    fn hang_if(&mut self, hangs: Self::Bit) -> bool;
    /// END: the invocation stops.
    fn end(&mut self);

    /// The scope ends the step may find at `next` (the wrapped next PC).
    fn possible_ends(&self, next: u16) -> PossibleEnds;
    /// The top of `stack`.
    fn top(&mut self, stack: Stack) -> Self::Top;
    /// Whether the stack is non-empty and its top scope ends at `address`: an IF's else
    /// address, a CALL's or a LOOP's end.
    fn ends_at(&mut self, top: Self::Top, address: Self::Address) -> Self::Bit;
    /// Where control goes when the top scope ends: an IF's end, a CALL's return address, a
    /// LOOP's end.
    fn resume_at(&mut self, top: Self::Top) -> Self::Address;
    /// The first instruction of the top LOOP's body.
    fn loop_body(&mut self, top: Self::Top) -> Self::Address;
    /// Pops `top` off its stack.
    fn pop(&mut self, top: Self::Top);

    /// A pass of the top loop ended (aL steps).
    fn pass_ended(&mut self, top: Self::Top);
    /// Whether the top loop runs its body again (its counter is not exhausted).
    fn loop_again(&mut self, top: Self::Top) -> Self::Bit;
    /// The top loop runs its body again (its counter goes down).
    fn next_pass(&mut self, top: Self::Top);
    /// The top loop was left and popped (aL returns where another loop remains).
    fn loop_left(&mut self, top: Self::Top);

    /// No scope has matched yet.
    fn start_routes(&mut self);
    /// A scope matched: control goes to `address`, unless a later match overrides it.
    fn route(&mut self, address: Self::Address);
    /// A scope matched, the PC routed so far unchanged (the fourth CALL pop).
    fn route_kept(&mut self);
    /// Whether a scope matched.
    fn routed(&mut self) -> Self::Bit;
    /// Ends the step at the address the matched scopes routed to.
    fn go_routed(&mut self);
    /// Ends the step at `address` (not wrapped: up to 4096).
    fn go(&mut self, address: u32);
}

/// Runs `body` as far as `condition` is known.
#[inline(always)]
fn on<S: StackOps>(stacks: &mut S, condition: When<S::Bit>, body: impl FnOnce(&mut S)) {
    match condition {
        When::Never => {}
        When::Always => body(stacks),
        When::If(bit) => stacks.when(bit, body),
    }
}

/// The control flow of `inst`, the instruction at `pc` whose data part has executed, on
/// `stacks`; `test` is whether its test passes ([`crate::flow::rules::test`]; `Always` for an
/// instruction without one). The order is the module's.
#[inline(always)]
pub fn step_on<S: StackOps>(stacks: &mut S, pc: u16, inst: &Instruction, test: When<S::Bit>) {
    let next = pc as u32 + 1;
    let next_wrapped = wrap(next);
    // 1. The instruction's own effect.
    let scope = pushed_scope(pc, inst);
    let push = |stacks: &mut S| stacks.push(scope.expect("a flow instruction that pushes"));
    let mut jump = (When::Never, 0);
    let mut brk = When::Never;
    let unless = |stacks: &mut S, test: When<S::Bit>| match test {
        When::If(bit) => When::If(stacks.not(bit)),
        When::Always => When::Never,
        When::Never => When::Always,
    };
    match *inst {
        Instruction::Simple { op, .. } => match op {
            SimpleOp::End => return stacks.end(),
            SimpleOp::Break => brk = When::Always,
            SimpleOp::Nop | SimpleOp::Emit => {}
        },
        Instruction::CondFlow {
            op: CondFlowOp::Breakc,
            ..
        } => brk = test,
        // CALL's test is `Always`.
        Instruction::CondFlow {
            op: CondFlowOp::Call | CondFlowOp::Callc,
            target,
            ..
        }
        | Instruction::BoolFlow {
            op: BoolFlowOp::Callu,
            target,
            ..
        } => {
            on(stacks, test, push);
            jump = (test, target);
        }
        // A passing test enters the then-block; a failing one jumps to the else block.
        Instruction::CondFlow {
            op: CondFlowOp::Ifc,
            target,
            ..
        }
        | Instruction::BoolFlow {
            op: BoolFlowOp::Ifu,
            target,
            ..
        } => {
            on(stacks, test, push);
            jump = (unless(stacks, test), target);
        }
        Instruction::CondFlow {
            op: CondFlowOp::Jmpc,
            target,
            ..
        }
        | Instruction::BoolFlow {
            op: BoolFlowOp::Jmpu,
            target,
            ..
        } => jump = (test, target),
        Instruction::Loop { .. } => push(stacks),
        _ => {}
    }
    if !matches!(brk, When::Never) {
        let empty = stacks.loops_empty();
        let hangs = match brk {
            When::If(bit) => stacks.and(bit, empty),
            _ => empty,
        };
        if stacks.hang_if(hangs) {
            return;
        }
    }

    // 2. The scope ends, each compared with the next PC.
    let ends = stacks.possible_ends(next_wrapped);
    let loop_step = ends.loop_end || !matches!(brk, When::Never);
    let checks = ends.call_pops > 0 || ends.if_end || loop_step;
    if checks {
        stacks.start_routes();
    }
    if ends.call_pops > 0 {
        let next = stacks.address(next_wrapped as u32);
        call_returns(stacks, 0, ends.call_pops.min(CALL_DEPTH), next);
    }
    // IF: at most one pop.
    if ends.if_end {
        let top = stacks.top(Stack::If);
        let next = stacks.address(next_wrapped as u32);
        let hit = stacks.ends_at(top, next);
        stacks.when(hit, |stacks| {
            stacks.pop(top);
            let end = stacks.resume_at(top);
            stacks.route(end);
        });
    }
    // LOOP: at most one step, at the body's end or forced by BREAK (the stack is non-empty
    // then: an empty one hung above).
    if loop_step {
        let top = stacks.top(Stack::Loop);
        let leave = |stacks: &mut S| {
            stacks.pop(top);
            stacks.loop_left(top);
            let end = stacks.resume_at(top);
            stacks.route(end);
        };
        let broken = |stacks: &mut S| {
            stacks.pass_ended(top);
            leave(stacks);
        };
        let at_end = |stacks: &mut S| {
            if !ends.loop_end {
                return;
            }
            let next = stacks.address(next_wrapped as u32);
            let hit = stacks.ends_at(top, next);
            stacks.when(hit, |stacks| {
                stacks.pass_ended(top);
                let again = stacks.loop_again(top);
                let body = |stacks: &mut S| {
                    stacks.next_pass(top);
                    let entry = stacks.loop_body(top);
                    stacks.route(entry);
                };
                stacks.if_else(again, body, leave);
            });
        };
        match brk {
            When::Always => broken(stacks),
            When::If(bit) => stacks.if_else(bit, broken, at_end),
            When::Never => at_end(stacks),
        }
    }

    // 3. The PC: a matched scope's, else the jump's target, else the next address.
    let (jump, target) = jump;
    let unmatched = |stacks: &mut S| match jump {
        When::Never => stacks.go(next),
        When::Always => stacks.go(target as u32),
        When::If(bit) => stacks.either(
            bit,
            |stacks| stacks.go(target as u32),
            |stacks| stacks.go(next),
        ),
    };
    if checks {
        let matched = stacks.routed();
        stacks.either(matched, |stacks| stacks.go_routed(), unmatched);
    } else {
        unmatched(stacks);
    }
}

/// The CALL stack's pops from the `popped`-th on (at most `pops` in all): the top pops when it
/// ends at `address`, and the next is compared with its return address; the fourth pop in one
/// step leaves the PC alone.
#[inline(always)]
fn call_returns<S: StackOps>(stacks: &mut S, popped: usize, pops: usize, address: S::Address) {
    let top = stacks.top(Stack::Call);
    let hit = stacks.ends_at(top, address);
    stacks.when(hit, |stacks| {
        stacks.pop(top);
        if popped + 1 < CALL_DEPTH {
            let ret = stacks.resume_at(top);
            stacks.route(ret);
            if popped + 1 < pops {
                call_returns(stacks, popped + 1, pops, ret);
            }
        } else {
            stacks.route_kept();
        }
    });
}

/// What [`step_in_place`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stepped {
    /// Execution goes on ([`Step::Continue`] without the state, which was changed in place).
    Continue {
        /// The new PC before wrapping.
        target: u32,
        /// The loop pass that ended here, if one did.
        loop_pass: Option<LoopPass>,
    },
    /// END.
    End,
    /// BREAK outside a loop.
    BreakOutsideLoop,
}

/// [`step_on`] on the machine's own state, changed in place.
struct Machine<'s> {
    state: &'s mut FlowState,
    choices: Choices,
    /// The PC the matched scopes routed to, unwrapped.
    routed_pc: u32,
    matched: bool,
    loop_pass: Option<LoopPass>,
    outcome: Stepped,
    /// Whether the step read `choices.loop_again`.
    asked_loop_again: bool,
}

impl StackOps for Machine<'_> {
    type Bit = bool;
    type Address = u32;
    type Top = Option<Scope>;

    #[inline(always)]
    fn address(&mut self, address: u32) -> u32 {
        address
    }
    #[inline(always)]
    fn not(&mut self, a: bool) -> bool {
        !a
    }
    #[inline(always)]
    fn and(&mut self, a: bool, b: bool) -> bool {
        a && b
    }
    #[inline(always)]
    fn when(&mut self, condition: bool, body: impl FnOnce(&mut Self)) {
        if condition {
            body(self)
        }
    }
    #[inline(always)]
    fn if_else(
        &mut self,
        condition: bool,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        if condition {
            then(self)
        } else {
            otherwise(self)
        }
    }
    #[inline(always)]
    fn either(
        &mut self,
        condition: bool,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        self.if_else(condition, then, otherwise)
    }

    #[inline(always)]
    fn push(&mut self, scope: Scope) {
        match scope {
            Scope::If(entry) => self.state.ifs.push(entry),
            Scope::Call(entry) => self.state.calls.push(entry),
            Scope::Loop(entry) => self.state.loops.push(entry),
        }
    }
    #[inline(always)]
    fn loops_empty(&mut self) -> bool {
        self.state.loops.is_empty()
    }
    #[inline(always)]
    fn hang_if(&mut self, hangs: bool) -> bool {
        if hangs {
            self.outcome = Stepped::BreakOutsideLoop;
        }
        hangs
    }
    #[inline(always)]
    fn end(&mut self) {
        self.outcome = Stepped::End;
    }

    #[inline(always)]
    fn possible_ends(&self, _next: u16) -> PossibleEnds {
        PossibleEnds::ANY
    }
    #[inline(always)]
    fn top(&mut self, stack: Stack) -> Option<Scope> {
        let s = &*self.state;
        match stack {
            Stack::If => s.ifs.top().map(Scope::If),
            Stack::Call => s.calls.top().map(Scope::Call),
            Stack::Loop => s.loops.top().map(Scope::Loop),
        }
    }
    #[inline(always)]
    fn ends_at(&mut self, top: Option<Scope>, address: u32) -> bool {
        let end = match top {
            None => return false,
            Some(Scope::If(scope)) => scope.else_addr,
            Some(Scope::Call(scope)) => scope.end,
            Some(Scope::Loop(scope)) => scope.end,
        };
        end as u32 == address
    }
    #[inline(always)]
    fn resume_at(&mut self, top: Option<Scope>) -> u32 {
        match top {
            None => unreachable!("a scope ended on an empty stack"),
            Some(Scope::If(scope)) => scope.end as u32,
            Some(Scope::Call(scope)) => scope.ret as u32,
            Some(Scope::Loop(scope)) => scope.end as u32,
        }
    }
    #[inline(always)]
    fn loop_body(&mut self, top: Option<Scope>) -> u32 {
        match top {
            Some(Scope::Loop(scope)) => scope.entry as u32,
            _ => unreachable!("a loop body of another scope"),
        }
    }
    #[inline(always)]
    fn pop(&mut self, top: Option<Scope>) {
        let s = &mut *self.state;
        match top {
            None => {}
            Some(Scope::If(_)) => drop(s.ifs.pop()),
            Some(Scope::Call(_)) => drop(s.calls.pop()),
            Some(Scope::Loop(_)) => drop(s.loops.pop()),
        }
    }

    // The loop counters are the driver's ([`crate::flow::FlowDriver`]): the step reports the
    // pass.
    #[inline(always)]
    fn pass_ended(&mut self, _top: Option<Scope>) {}
    #[inline(always)]
    fn loop_again(&mut self, _top: Option<Scope>) -> bool {
        self.asked_loop_again = true;
        self.choices.loop_again
    }
    #[inline(always)]
    fn next_pass(&mut self, _top: Option<Scope>) {
        self.loop_pass = Some(LoopPass::Again);
    }
    #[inline(always)]
    fn loop_left(&mut self, _top: Option<Scope>) {
        self.loop_pass = Some(LoopPass::Exit {
            outer_remains: !self.state.loops.is_empty(),
        });
    }

    #[inline(always)]
    fn start_routes(&mut self) {
        self.matched = false;
    }
    #[inline(always)]
    fn route(&mut self, address: u32) {
        self.matched = true;
        self.routed_pc = address;
    }
    #[inline(always)]
    fn route_kept(&mut self) {
        self.matched = true;
    }
    #[inline(always)]
    fn routed(&mut self) -> bool {
        self.matched
    }
    #[inline(always)]
    fn go_routed(&mut self) {
        self.go(self.routed_pc)
    }
    #[inline(always)]
    fn go(&mut self, address: u32) {
        self.state.pc = wrap(address);
        self.outcome = Stepped::Continue {
            target: address,
            loop_pass: self.loop_pass,
        };
    }
}

/// [`step`] on `state` in place (unchanged at END and on a BREAK outside a loop).
#[inline(always)]
pub(crate) fn step_in_place(
    state: &mut FlowState,
    inst: &Instruction,
    choices: Choices,
) -> Stepped {
    step_in_place_asking(state, inst, choices).0
}

/// [`step_in_place`], and whether the step read `choices.loop_again` (whether a loop ended
/// its pass here); `choices.condition` is read exactly when [`is_conditional`] holds.
#[inline(always)]
fn step_in_place_asking(
    state: &mut FlowState,
    inst: &Instruction,
    choices: Choices,
) -> (Stepped, bool) {
    let pc = state.pc;
    let mut machine = Machine {
        state,
        choices,
        routed_pc: 0,
        matched: false,
        loop_pass: None,
        outcome: Stepped::End,
        asked_loop_again: false,
    };
    let test = if is_conditional(inst) {
        When::If(choices.condition)
    } else {
        When::Always
    };
    step_on(&mut machine, pc, inst, test);
    (machine.outcome, machine.asked_loop_again)
}

/// Executes the control flow of `inst` (the instruction at `state.pc`) on the machine's own
/// state, exactly as the model says ([`step_on`]), with the data-dependent facts `choices`.
pub fn step(state: &FlowState, inst: &Instruction, choices: Choices) -> Step {
    step_asking(state, inst, choices).0
}

/// [`step`], and whether its result depends on `choices.loop_again` (when it does not, the
/// other value gives the same step). Its result depends on `choices.condition` exactly when
/// [`is_conditional`] holds.
pub fn step_asking(state: &FlowState, inst: &Instruction, choices: Choices) -> (Step, bool) {
    let mut state = *state;
    let (stepped, asked) = step_in_place_asking(&mut state, inst, choices);
    let step = match stepped {
        Stepped::Continue { target, loop_pass } => Step::Continue {
            state,
            target,
            loop_pass,
        },
        Stepped::End => Step::End,
        Stepped::BreakOutsideLoop => Step::BreakOutsideLoop,
    };
    (step, asked)
}
