//! PICA200 control flow → Cranelift IR: the stack machine of docs/execution-model.md §5,
//! compiled.
//!
//! Each reachable address has a block. After an instruction's data part, its control part is
//! emitted inline, in the order of [`crate::flow::step`]:
//!
//! 1. the instruction's own effect: a push onto the IF, CALL or LOOP stack (in the context, see
//!    [`super::context`]), a jump request, or a BREAK (which fails on an empty loop stack);
//! 2. the CALL stack pops while its top ends at the next PC (the fourth pop leaves the PC), the
//!    IF stack pops at most once, the LOOP stack steps at most once. Each check is emitted only
//!    where [`FlowFacts`] says some scope can end; a later match overrides the PC of an earlier
//!    one, which gives the priority LOOP > IF > CALL;
//! 3. the PC: the matched scope's address, else the jump target, else PC+1. Addresses read from
//!    a stack are compared with the few candidates the analysis found and jumped to directly,
//!    so control never goes through a computed jump and the registers stay SSA values.
//!
//! Every instruction first spends one unit of the instruction budget; an exhausted budget or a
//! BREAK outside a loop leaves through the shared exit block, which stores the registers back.

use std::collections::BTreeSet;
use std::mem::offset_of;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};

use super::context::{JitContext, LoopCounters, StackRing, status};
use super::lower::{Lowering, Reg, trusted};
use crate::flow::rules::{self, FlowOps};
use crate::flow::{CALL_DEPTH, IF_DEPTH, LOOP_DEPTH, Scope, pushed_scope, wrap};
use crate::isa::{BoolFlowOp, CondFlowOp, Instruction, SimpleOp};

/// Where a jump request or a BREAK applies.
#[derive(Clone, Copy)]
enum When {
    Never,
    Always,
    /// When the `i32` value is non-zero.
    If(Value),
}

/// One of the three stacks: where it is in the context and how deep it is.
#[derive(Clone, Copy)]
struct StackPlace {
    slots: usize,
    top: usize,
    len: usize,
    depth: usize,
}

impl StackPlace {
    fn of<const DEPTH: usize>(field: usize) -> StackPlace {
        StackPlace {
            slots: field + offset_of!(StackRing<DEPTH>, slots),
            top: field + offset_of!(StackRing<DEPTH>, top),
            len: field + offset_of!(StackRing<DEPTH>, len),
            depth: DEPTH,
        }
    }

    fn ifs() -> StackPlace {
        StackPlace::of::<IF_DEPTH>(offset_of!(JitContext, if_stack))
    }

    fn calls() -> StackPlace {
        StackPlace::of::<CALL_DEPTH>(offset_of!(JitContext, call_stack))
    }

    fn loops() -> StackPlace {
        StackPlace::of::<LOOP_DEPTH>(offset_of!(JitContext, loop_stack))
    }
}

/// The top of a stack, as loaded: its length, top counter, slot index and entry.
#[derive(Clone, Copy)]
struct Top {
    len: Value,
    top: Value,
    slot: Value,
    entry: Value,
}

/// The scope-end outcome variables of one instruction: whether some scope matched, and the
/// address it sends control to.
#[derive(Clone, Copy)]
pub struct RouteVars {
    /// 1 when a scope matched (its address wins over the jump and PC+1).
    pub matched: cranelift_frontend::Variable,
    /// The matched scope's address.
    pub pc: cranelift_frontend::Variable,
}

impl Lowering<'_, '_> {
    // ------------------------------------------------------------------ stacks

    /// The address of slot `slot` (an `i32` index) of a `u32` array at `base` in the context.
    fn slot_address(&mut self, slot: Value) -> Value {
        let slot = self.b.ins().uextend(types::I64, slot);
        let scaled = self.b.ins().ishl_imm_s(slot, 2);
        self.b.ins().iadd(self.ctx, scaled)
    }

    fn load_slot(&mut self, base: usize, slot: Value) -> Value {
        let address = self.slot_address(slot);
        self.b
            .ins()
            .load(types::I32, trusted(), address, base as i32)
    }

    fn store_slot(&mut self, base: usize, slot: Value, value: Value) {
        let address = self.slot_address(slot);
        self.b.ins().store(trusted(), value, address, base as i32);
    }

    /// Pushes `entry`; on a full stack the oldest slot is overwritten. Returns the slot.
    fn push(&mut self, stack: StackPlace, entry: Value) -> Value {
        let top = self.load(types::I32, stack.top);
        let top = self.b.ins().iadd_imm_s(top, 1);
        let slot = self.b.ins().band_imm_s(top, stack.depth as i64 - 1);
        self.store_slot(stack.slots, slot, entry);
        self.store(top, stack.top);
        let len = self.load(types::I32, stack.len);
        let len = self.b.ins().iadd_imm_s(len, 1);
        let depth = self.b.ins().iconst(types::I32, stack.depth as i64);
        let len = self.b.ins().umin(len, depth);
        self.store(len, stack.len);
        slot
    }

    fn load_top(&mut self, stack: StackPlace) -> Top {
        let len = self.load(types::I32, stack.len);
        let top = self.load(types::I32, stack.top);
        let slot = self.b.ins().band_imm_s(top, stack.depth as i64 - 1);
        let entry = self.load_slot(stack.slots, slot);
        Top {
            len,
            top,
            slot,
            entry,
        }
    }

    fn pop(&mut self, stack: StackPlace, top: Top) {
        let t = self.b.ins().iadd_imm_s(top.top, -1);
        self.store(t, stack.top);
        let len = self.b.ins().iadd_imm_s(top.len, -1);
        self.store(len, stack.len);
    }

    /// Whether the stack is non-empty and the 16-bit half of its top entry at `shift` equals
    /// `address`.
    fn top_matches(&mut self, top: Top, shift: i64, address: Value) -> Value {
        let half = if shift == 0 {
            self.b.ins().band_imm_s(top.entry, 0xFFFF)
        } else {
            self.b.ins().ushr_imm_s(top.entry, shift)
        };
        let same = self.b.ins().icmp(IntCC::Equal, half, address);
        let non_empty = self.b.ins().icmp_imm_s(IntCC::NotEqual, top.len, 0);
        self.b.ins().band(same, non_empty)
    }

    fn address(&mut self, address: u16) -> Value {
        self.b.ins().iconst(types::I32, address as i64)
    }

    /// Two 16-bit addresses packed into one stack entry.
    fn packed(&mut self, low: u16, high: u16) -> Value {
        self.b
            .ins()
            .iconst(types::I32, (low as u32 | (high as u32) << 16) as i64)
    }

    /// Runs `body` only when `condition` is non-zero.
    fn when(&mut self, condition: When, body: impl FnOnce(&mut Self)) {
        match condition {
            When::Never => {}
            When::Always => body(self),
            When::If(c) => {
                let then = self.b.create_block();
                let after = self.b.create_block();
                self.b.ins().brif(c, then, &[], after, &[]);
                self.b.switch_to_block(then);
                body(self);
                self.b.ins().jump(after, &[]);
                self.b.switch_to_block(after);
            }
        }
    }

    // ------------------------------------------------------------------ exits

    /// Leaves the function with `code`, recording `pc` as the failing address.
    fn fail(&mut self, pc: u16, code: u32) {
        let code = self.b.ins().iconst(types::I32, code as i64);
        let pc = self.address(pc);
        self.b.ins().jump(self.exit, &[code.into(), pc.into()]);
    }

    /// Continues at the block of `pc` (or fails: the analysis proved it unreachable).
    fn goto(&mut self, pc: u16) {
        match self.blocks[pc as usize] {
            Some(block) => {
                self.b.ins().jump(block, &[]);
            }
            None => self.fail(pc, status::INTERNAL),
        }
    }

    /// Continues at `target`, which is one of `candidates` (sorted): a binary search of direct
    /// jumps. No candidate means the analysis proved this path dead (a BREAK in a program
    /// without loops, whose check above always fails).
    fn goto_among(&mut self, target: Value, candidates: &[u16]) {
        match candidates {
            [] => {
                let code = self.b.ins().iconst(types::I32, status::INTERNAL as i64);
                self.b.ins().jump(self.exit, &[code.into(), target.into()]);
                return;
            }
            [only] => {
                self.goto(*only);
                return;
            }
            _ => {}
        }
        let mid = candidates.len() / 2;
        let low = self.b.create_block();
        let high = self.b.create_block();
        let below =
            self.b
                .ins()
                .icmp_imm_s(IntCC::UnsignedLessThan, target, candidates[mid] as i64);
        self.b.ins().brif(below, low, &[], high, &[]);
        self.b.switch_to_block(low);
        self.goto_among(target, &candidates[..mid]);
        self.b.switch_to_block(high);
        self.goto_among(target, &candidates[mid..]);
    }

    /// The shared exit block: stores the failing address, returns the status. (Whoever jumps
    /// here has stored its dirty registers.)
    pub fn exit_block(&mut self) {
        self.b.switch_to_block(self.exit);
        let params = self.b.block_params(self.exit).to_vec();
        self.store(params[1], offset_of!(JitContext, error_pc));
        self.b.ins().return_(&[params[0]]);
    }

    // ------------------------------------------------------------------ instructions

    /// Lowers the instruction at `pc` into its block: budget, data part, control part.
    pub fn instruction(&mut self, pc: u16, route: RouteVars) {
        let block = self.blocks[pc as usize].expect("a reachable address");
        self.b.switch_to_block(block);
        let inst = self.decoded[pc as usize];
        if self.facts.leaders[pc as usize] {
            debug_assert!(self.cache_is_empty(), "a run ends before a leader");
        }

        // The budget: fail before executing the instruction that would exceed it.
        let left = self.b.use_var(self.budget);
        let go_on = self.b.create_block();
        let exhausted = self.b.create_block();
        self.b.set_cold_block(exhausted);
        self.b.ins().brif(left, go_on, &[], exhausted, &[]);
        self.b.switch_to_block(exhausted);
        self.store_dirty();
        self.fail(pc, status::BUDGET);
        self.b.switch_to_block(go_on);
        let left = self.b.ins().iadd_imm_s(left, -1);
        self.b.def_var(self.budget, left);

        if let Instruction::Simple {
            op: SimpleOp::End, ..
        } = inst
        {
            self.end_run();
            self.fail(pc, status::END);
            return;
        }
        if let Some(emit_status) = self.data(pc, &inst) {
            let ok = self.b.create_block();
            let failed = self.b.create_block();
            self.b.set_cold_block(failed);
            self.b.ins().brif(emit_status, failed, &[], ok, &[]);
            self.b.switch_to_block(failed);
            self.store_dirty();
            let pc = self.address(pc);
            self.b
                .ins()
                .jump(self.exit, &[emit_status.into(), pc.into()]);
            self.b.switch_to_block(ok);
        }
        self.control(pc, &inst, route);
    }

    /// The control part of the instruction at `pc`: its own effect, the scope ends, the PC.
    /// The run goes on into the next address only when it is not a leader; otherwise it ends
    /// here, and the control code works on the registers' homes.
    fn control(&mut self, pc: u16, inst: &Instruction, route: RouteVars) {
        let next = wrap(pc as u32 + 1);
        if !self.facts.leaders[next as usize] {
            self.goto(next);
            return;
        }
        self.end_run();
        let (jump, brk) = self.own_effect(pc, inst);

        if let When::Always | When::If(_) = brk {
            let len = self.load(types::I32, StackPlace::loops().len);
            let empty = self.b.ins().icmp_imm_s(IntCC::Equal, len, 0);
            let hangs = match brk {
                When::If(c) => {
                    let c = self.b.ins().icmp_imm_s(IntCC::NotEqual, c, 0);
                    self.b.ins().band(c, empty)
                }
                _ => empty,
            };
            let hang = self.b.create_block();
            let go_on = self.b.create_block();
            self.b.set_cold_block(hang);
            self.b.ins().brif(hangs, hang, &[], go_on, &[]);
            self.b.switch_to_block(hang);
            self.fail(pc, status::BREAK_OUTSIDE_LOOP);
            self.b.switch_to_block(go_on);
        }

        let mut candidates = BTreeSet::new();
        let call_levels = self.facts.call_return_levels(next);
        let if_ends = self.facts.if_ends.get(&next).cloned();
        let loop_entries = self.facts.loop_entries.get(&next).cloned();
        let loop_step = loop_entries.is_some() || !matches!(brk, When::Never);
        let scopes_can_end = !call_levels.is_empty() || if_ends.is_some() || loop_step;
        if scopes_can_end {
            let zero = self.b.ins().iconst(types::I32, 0);
            self.b.def_var(route.matched, zero);
            self.b.def_var(route.pc, zero);
        }
        if !call_levels.is_empty() {
            self.call_returns(next, call_levels.len(), route);
            candidates.extend(call_levels.iter().take(CALL_DEPTH - 1).flatten());
        }
        if let Some(ends) = if_ends {
            self.if_end(next, route);
            candidates.extend(ends);
        }
        if loop_step {
            self.loop_end(next, loop_entries.is_some(), brk, route);
            candidates.extend(loop_entries.into_iter().flatten());
            if let When::Never = brk {
                candidates.insert(next);
            } else {
                candidates.extend(self.facts.loop_ends.iter().copied());
            }
        }

        if scopes_can_end {
            let matched = self.b.use_var(route.matched);
            let routed = self.b.create_block();
            let unmatched = self.b.create_block();
            self.b.ins().brif(matched, routed, &[], unmatched, &[]);
            self.b.switch_to_block(routed);
            let target = self.b.use_var(route.pc);
            let candidates: Vec<u16> = candidates.into_iter().collect();
            self.goto_among(target, &candidates);
            self.b.switch_to_block(unmatched);
        }
        match jump {
            (When::Never, _) => self.goto(next),
            (When::Always, target) => self.goto(target),
            (When::If(c), target) => {
                let taken = self.b.create_block();
                let not_taken = self.b.create_block();
                self.b.ins().brif(c, taken, &[], not_taken, &[]);
                self.b.switch_to_block(taken);
                self.goto(target);
                self.b.switch_to_block(not_taken);
                self.goto(next);
            }
        }
    }

    /// Step 1 of [`crate::flow::step`]: pushes, and the jump request and BREAK it makes. The
    /// test is [`rules::test`], emitted as code.
    fn own_effect(&mut self, pc: u16, inst: &Instruction) -> ((When, u16), When) {
        let scope = pushed_scope(pc, inst);
        let taken = match rules::test(self, inst) {
            Some(test) => When::If(test),
            None => When::Always,
        };
        let mut jump = (When::Never, 0);
        let mut brk = When::Never;
        match *inst {
            Instruction::Simple {
                op: SimpleOp::Break,
                ..
            } => brk = When::Always,
            Instruction::CondFlow { op, target, .. } => match op {
                CondFlowOp::Breakc => brk = taken,
                CondFlowOp::Call | CondFlowOp::Callc => {
                    self.push_when(taken, scope);
                    jump = (taken, target);
                }
                CondFlowOp::Ifc => jump = (self.push_if(taken, scope), target),
                CondFlowOp::Jmpc => jump = (taken, target),
            },
            Instruction::BoolFlow { op, target, .. } => match op {
                BoolFlowOp::Callu => {
                    self.push_when(taken, scope);
                    jump = (taken, target);
                }
                BoolFlowOp::Ifu => jump = (self.push_if(taken, scope), target),
                BoolFlowOp::Jmpu => jump = (taken, target),
            },
            Instruction::Loop { int_id, .. } => self.push_loop(int_id, scope),
            _ => {}
        }
        (jump, brk)
    }

    /// Pushes `scope` (from [`pushed_scope`]) onto its stack, packed as [`JitContext`]
    /// documents. Returns the slot.
    fn push_scope(&mut self, scope: Option<Scope>) -> Value {
        let (stack, low, high) = match scope.expect("a flow instruction that pushes") {
            Scope::If(s) => (StackPlace::ifs(), s.else_addr, s.end),
            Scope::Call(s) => (StackPlace::calls(), s.end, s.ret),
            Scope::Loop(s) => (StackPlace::loops(), s.entry, s.end),
        };
        let entry = self.packed(low, high);
        self.push(stack, entry)
    }

    fn push_when(&mut self, taken: When, scope: Option<Scope>) {
        self.when(taken, |s| {
            s.push_scope(scope);
        });
    }

    /// IFC/IFU: a passing test pushes the scope; a failing one jumps to the else address.
    /// Returns when the jump applies.
    fn push_if(&mut self, test: When, scope: Option<Scope>) -> When {
        self.push_when(test, scope);
        match test {
            When::If(c) => When::If(self.not(c)),
            _ => When::Never,
        }
    }

    /// LOOP: pushes the scope and its counters and starts aL ([`rules::loop_start`]); the aL
    /// before the LOOP is kept beside the counters.
    fn push_loop(&mut self, int_id: u8, scope: Option<Scope>) {
        let slot = self.push_scope(scope);
        let start = rules::loop_start(self, int_id);
        let counters = offset_of!(JitContext, loop_counters);
        self.store_slot(
            counters + offset_of!(LoopCounters, remaining),
            slot,
            start.remaining,
        );
        self.store_slot(
            counters + offset_of!(LoopCounters, increment),
            slot,
            start.increment,
        );
        let al_home = Reg::Al.home().0;
        let al = self.load(types::I32, al_home);
        self.store_slot(counters + offset_of!(LoopCounters, previous_al), slot, al);
        self.store(start.al, al_home);
    }

    /// The CALL stack pops while its top ends at the next PC (at most `pops` times, as far as
    /// the analysis allows); the fourth pop in one step leaves the PC alone.
    fn call_returns(&mut self, next: u16, pops: usize, route: RouteVars) {
        let stack = StackPlace::calls();
        let done = self.b.create_block();
        let mut compare_with = self.address(next);
        for k in 0..pops {
            let top = self.load_top(stack);
            let hit = self.top_matches(top, 0, compare_with);
            let popped = self.b.create_block();
            self.b.ins().brif(hit, popped, &[], done, &[]);
            self.b.switch_to_block(popped);
            self.pop(stack, top);
            if k < CALL_DEPTH - 1 {
                let ret = self.b.ins().ushr_imm_s(top.entry, 16);
                self.route_to(route, ret);
                compare_with = ret;
            } else {
                // The fourth pop: the scope ends, the PC stays the third return address.
                let one = self.b.ins().iconst(types::I32, 1);
                self.b.def_var(route.matched, one);
            }
        }
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }

    /// The IF stack pops once when its top's else address is the next PC.
    fn if_end(&mut self, next: u16, route: RouteVars) {
        let stack = StackPlace::ifs();
        let top = self.load_top(stack);
        let next = self.address(next);
        let hit = self.top_matches(top, 0, next);
        let popped = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().brif(hit, popped, &[], done, &[]);
        self.b.switch_to_block(popped);
        self.pop(stack, top);
        let end = self.b.ins().ushr_imm_s(top.entry, 16);
        self.route_to(route, end);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }

    /// The LOOP stack steps once: when its top ends at the next PC (`at_loop_end`: some loop
    /// can end here), the pass ends and the body runs again while passes remain; a BREAK
    /// (`brk`; the stack is known non-empty then) leaves the innermost loop. Every pass end adds
    /// the increment to aL; leaving a loop inside another restores aL.
    fn loop_end(&mut self, next: u16, at_loop_end: bool, brk: When, route: RouteVars) {
        let stack = StackPlace::loops();
        let counters = offset_of!(JitContext, loop_counters);
        let top = self.load_top(stack);
        let done = self.b.create_block();
        let exhausted = self.b.create_block();
        let leave = self.b.create_block();
        let at_end = self.b.create_block();
        match brk {
            When::Always => {
                self.b.ins().jump(leave, &[]);
            }
            When::If(c) => {
                let not_broken = if at_loop_end { at_end } else { done };
                self.b.ins().brif(c, leave, &[], not_broken, &[]);
            }
            When::Never => {
                self.b.ins().jump(at_end, &[]);
            }
        }

        if at_loop_end && !matches!(brk, When::Always) {
            // The last body instruction: the pass ends if the innermost loop ends here.
            self.b.switch_to_block(at_end);
            let next = self.address(next);
            let hit = self.top_matches(top, 16, next);
            let pass_ends = self.b.create_block();
            self.b.ins().brif(hit, pass_ends, &[], done, &[]);

            self.b.switch_to_block(pass_ends);
            self.add_increment(top);
            let remaining_at = counters + offset_of!(LoopCounters, remaining);
            let remaining = self.load_slot(remaining_at, top.slot);
            let again = self.b.create_block();
            self.b.ins().brif(remaining, again, &[], exhausted, &[]);

            self.b.switch_to_block(again);
            let remaining = self.b.ins().iadd_imm_s(remaining, -1);
            self.store_slot(remaining_at, top.slot, remaining);
            let body = self.b.ins().band_imm_s(top.entry, 0xFFFF);
            self.route_to(route, body);
            self.b.ins().jump(done, &[]);
        }

        if !matches!(brk, When::Never) {
            // A BREAK ends the pass too, then leaves.
            self.b.switch_to_block(leave);
            self.add_increment(top);
            self.b.ins().jump(exhausted, &[]);
        }

        self.b.switch_to_block(exhausted);
        self.pop(stack, top);
        let outer_remains = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThan, top.len, 1);
        let previous_al =
            self.load_slot(counters + offset_of!(LoopCounters, previous_al), top.slot);
        let al_home = Reg::Al.home().0;
        let al = self.load(types::I32, al_home);
        let al = rules::al_after_exit(self, outer_remains, previous_al, al);
        self.store(al, al_home);
        let end = self.b.ins().ushr_imm_s(top.entry, 16);
        self.route_to(route, end);
        self.b.ins().jump(done, &[]);

        self.b.switch_to_block(done);
    }

    /// A scope matched: control goes to `pc` (unless a later stack's match overrides it).
    fn route_to(&mut self, route: RouteVars, pc: Value) {
        let one = self.b.ins().iconst(types::I32, 1);
        self.b.def_var(route.matched, one);
        self.b.def_var(route.pc, pc);
    }

    fn add_increment(&mut self, top: Top) {
        let at = offset_of!(JitContext, loop_counters) + offset_of!(LoopCounters, increment);
        let increment = self.load_slot(at, top.slot);
        let al_home = Reg::Al.home().0;
        let al = self.load(types::I32, al_home);
        let al = rules::al_after_pass(self, al, increment);
        self.store(al, al_home);
    }
}

/// The control-flow rules of [`rules`] emitted as code: a truth value is an `i32` 0 or 1 (or an
/// `icmp` result), an integer an `i32`. Flags and uniforms are read from the context (every run
/// has stored its registers before its control part).
impl FlowOps for Lowering<'_, '_> {
    type Bit = Value;
    type Int = Value;

    fn constant(&mut self, value: bool) -> Value {
        self.b.ins().iconst(types::I32, value as i64)
    }
    fn not(&mut self, a: Value) -> Value {
        self.b.ins().bxor_imm_s(a, 1)
    }
    fn and(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().band(a, b)
    }
    fn or(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().bor(a, b)
    }
    fn cmp_flag(&mut self, lane: usize) -> Value {
        self.load(types::I32, Reg::Cmp(lane as u8).home().0)
    }
    fn bool_uniform(&mut self, id: u8) -> Value {
        let bools = self.load(types::I32, offset_of!(JitContext, bools));
        let bit = self.b.ins().ushr_imm_s(bools, id as i64);
        self.b.ins().band_imm_s(bit, 1)
    }
    fn int_uniform(&mut self, id: u8, byte: usize) -> Value {
        let at = offset_of!(JitContext, ints) + 4 * id as usize + byte;
        self.b
            .ins()
            .uload8(types::I32, trusted(), self.ctx, at as i32)
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().iadd(a, b)
    }
    fn select(&mut self, condition: Value, a: Value, b: Value) -> Value {
        self.b.ins().select(condition, a, b)
    }
}
