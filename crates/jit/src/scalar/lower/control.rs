//! PICA200 control flow → Cranelift IR: the stack machine of docs/execution-model.md §5,
//! compiled.
//!
//! Each reachable address has a block. After an instruction's data part, its control part is
//! [`shader::flow::step_on`], the one statement of the step order, run on the context's stacks
//! ([`super::context`]) by [`Stepping`], which emits each of its operations as code: a push, a
//! BREAK's hang check (cold), each scope-end check with its pop, and the PC. Only the checks
//! [`FlowFacts`] says can match are emitted ([`shader::flow::PossibleEnds`]). The PC is the
//! matched scope's address, else the jump target, else PC+1; an address read from a stack is
//! compared with the candidates the analysis found and jumped to directly when they are few
//! ([`DIRECT_CANDIDATES`]); otherwise it goes to the function's one shared dispatch, a jump
//! table over the function's addresses, so every site costs the same whatever the program.
//! Registers are in their homes at every run end, so only the budget crosses these edges.
//!
//! The program is compiled as one function per chunk of program memory ([`FlowFacts::chunks`]);
//! control that goes to another chunk leaves by a tail call of that chunk's function, which
//! enters its dispatch with the address.
//!
//! Every instruction spends one unit of the instruction budget. A run checks its whole cost
//! once, at its end, before its control part and before any effect outside its registers (an
//! EMIT or SETEMIT is a run of its own, checked before it acts): when the budget is short, a
//! cold path stores the registers as they were before the instruction that exceeded it and
//! fails there, so the error and the state are exactly the interpreter's. An exhausted budget,
//! a BREAK outside a loop or a failed EMIT leaves through the shared exit block.

use std::collections::BTreeSet;
use std::mem::offset_of;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, FuncRef, InstBuilder, JumpTableData, Value, types};
use cranelift_frontend::Variable;

use super::{Lowering, Reg, trusted};
use crate::scalar::analysis::{CallReturns, DIRECT_CANDIDATES};
use crate::scalar::context::{JitContext, LoopCounters, StackRing, status};
use shader::flow::rules::{self, FlowOps};
use shader::flow::{
    CALL_DEPTH, IF_DEPTH, LOOP_DEPTH, PossibleEnds, Scope, Stack, StackOps, When, step_on, wrap,
};
use shader::isa::{CondFlowOp, Instruction, SimpleOp};
use shader::program::ShaderKind;

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

    fn of_stack(stack: Stack) -> StackPlace {
        match stack {
            Stack::If => StackPlace::ifs(),
            Stack::Call => StackPlace::calls(),
            Stack::Loop => StackPlace::loops(),
        }
    }
}

/// The top of a stack, as loaded: which stack, its length, top counter, slot index and entry.
#[derive(Clone, Copy)]
struct Top {
    stack: Stack,
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

/// The control state of one function's lowering: the chunk it compiles, the functions of the
/// other chunks, its shared dispatch, and the instructions of the current run whose budget is
/// not yet checked.
pub struct Routing {
    /// The chunk this function compiles (an index into [`FlowFacts::chunks`]).
    chunk: usize,
    /// Every chunk's function as this function calls it (empty when the program is one chunk).
    chunk_functions: Vec<FuncRef>,
    /// The address the shared dispatch goes to.
    dispatch_pc: Variable,
    /// The shared dispatch block, once something jumps to it.
    dispatch: Option<Block>,
    /// The instructions of the current run not yet covered by a budget check, consecutive from
    /// the first.
    pending: Vec<Pending>,
}

/// Instructions of a run whose budget is not yet checked, which start from the same registers.
struct Pending {
    /// The first one's address.
    pc: u16,
    /// How many (more than one only in a filler run).
    count: u16,
    /// The registers that differ from their homes before them (geometry shaders only).
    dirty: Vec<(Reg, Value)>,
}

impl Routing {
    /// The routing of the function of chunk `chunk`; `dispatch_pc` is an `i32` variable.
    pub fn new(chunk: usize, chunk_functions: Vec<FuncRef>, dispatch_pc: Variable) -> Routing {
        Routing {
            chunk,
            chunk_functions,
            dispatch_pc,
            dispatch: None,
            pending: Vec::new(),
        }
    }
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

    fn load_top(&mut self, stack: Stack) -> Top {
        let place = StackPlace::of_stack(stack);
        let len = self.load(types::I32, place.len);
        let top = self.load(types::I32, place.top);
        let slot = self.b.ins().band_imm_s(top, place.depth as i64 - 1);
        let entry = self.load_slot(place.slots, slot);
        Top {
            stack,
            len,
            top,
            slot,
            entry,
        }
    }

    fn pop(&mut self, top: Top) {
        let place = StackPlace::of_stack(top.stack);
        let t = self.b.ins().iadd_imm_s(top.top, -1);
        self.store(t, place.top);
        let len = self.b.ins().iadd_imm_s(top.len, -1);
        self.store(len, place.len);
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

    // ------------------------------------------------------------------ exits

    /// Leaves the function with `code`, recording `pc` as the failing address.
    fn fail(&mut self, pc: u16, code: u32) {
        let code = self.b.ins().iconst(types::I32, code as i64);
        let pc = self.address(pc);
        self.b.ins().jump(self.exit, &[code.into(), pc.into()]);
    }

    /// Whether `pc` is in this function's chunk.
    fn in_chunk(&self, pc: u16) -> bool {
        self.facts
            .chunk_range(self.routing.chunk)
            .contains(&(pc as u32))
    }

    /// Leaves for the function of chunk `chunk`, which goes on at `pc` (an `i32`).
    fn tail_call(&mut self, chunk: usize, pc: Value) {
        let budget = self.b.use_var(self.budget);
        let function = self.routing.chunk_functions[chunk];
        self.b.ins().return_call(function, &[self.ctx, budget, pc]);
    }

    /// Continues at the block of `pc`, in this function or another chunk's (or fails: the
    /// analysis proved it unreachable).
    fn goto(&mut self, pc: u16) {
        if !self.in_chunk(pc) {
            let address = self.address(pc);
            self.tail_call(self.facts.chunk_of(pc), address);
            return;
        }
        match self.blocks[pc as usize] {
            Some(block) => {
                self.b.ins().jump(block, &[]);
            }
            None => self.fail(pc, status::INTERNAL),
        }
    }

    /// Continues at `target`, which is one of `candidates` (sorted; `None`: any address). A
    /// few candidates get a binary search of direct jumps; more, or any, the shared dispatch.
    /// No candidate means the analysis proved this path dead (a BREAK in a program without
    /// loops, whose check above always fails).
    fn goto_among(&mut self, target: Value, candidates: Option<&[u16]>) {
        match candidates {
            Some(candidates) if candidates.len() <= DIRECT_CANDIDATES => {
                self.search(target, candidates)
            }
            _ => self.goto_dispatch(target),
        }
    }

    /// A binary search of direct jumps for `target` among `candidates`.
    fn search(&mut self, target: Value, candidates: &[u16]) {
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
        self.search(target, &candidates[..mid]);
        self.b.switch_to_block(high);
        self.search(target, &candidates[mid..]);
    }

    /// Continues at `target` (an `i32` address) through the shared dispatch.
    pub fn goto_dispatch(&mut self, target: Value) {
        let dispatch = *self
            .routing
            .dispatch
            .get_or_insert_with(|| self.b.create_block());
        self.b.def_var(self.routing.dispatch_pc, target);
        self.b.ins().jump(dispatch, &[]);
    }

    /// Emits the shared dispatch, if something jumps to it: an address of this chunk goes
    /// through a jump table to its block (a leader of this function; anything else is an
    /// address no scope or jump can send control to, an internal error), an address of
    /// another chunk to that chunk's function (a binary search of tail calls).
    pub fn dispatch_block(&mut self) {
        let Some(dispatch) = self.routing.dispatch else {
            return;
        };
        self.b.switch_to_block(dispatch);
        let pc = self.b.use_var(self.routing.dispatch_pc);
        let internal = self.b.create_block();
        self.b.set_cold_block(internal);
        let range = self.facts.chunk_range(self.routing.chunk);
        let local = self.b.create_block();
        let far = self.b.create_block();
        let relative = self.b.ins().iadd_imm_s(pc, -(range.start as i64));
        let len = (range.end - range.start) as i64;
        let inside = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, relative, len);
        self.b.ins().brif(inside, local, &[], far, &[]);

        self.b.switch_to_block(local);
        let default = self.b.func.dfg.block_call(internal, &[]);
        let table: Vec<_> = range
            .clone()
            .map(|address| {
                // A cut that only the address before enters uses that run's values: never a
                // target (nor can any stack or jump lead there).
                let a = address as usize;
                let target = match self.blocks[a] {
                    Some(block) if self.facts.leaders[a] && !self.facts.continues[a] => block,
                    _ => internal,
                };
                self.b.func.dfg.block_call(target, &[])
            })
            .collect();
        let table = self
            .b
            .create_jump_table(JumpTableData::new(default, &table));
        self.b.ins().br_table(relative, table);

        self.b.switch_to_block(far);
        let chunks: Vec<usize> = (0..self.facts.chunks.len())
            .filter(|&k| k != self.routing.chunk)
            .collect();
        self.far_search(pc, &chunks, internal);

        self.b.switch_to_block(internal);
        let code = self.b.ins().iconst(types::I32, status::INTERNAL as i64);
        self.b.ins().jump(self.exit, &[code.into(), pc.into()]);
    }

    /// A binary search of `chunks` (ascending, none of them this one) for the chunk of `pc`,
    /// then a tail call of its function.
    fn far_search(&mut self, pc: Value, chunks: &[usize], internal: Block) {
        match chunks {
            [] => {
                self.b.ins().jump(internal, &[]);
            }
            [only] => self.tail_call(*only, pc),
            _ => {
                let mid = chunks.len() / 2;
                let low = self.b.create_block();
                let high = self.b.create_block();
                let start = self.facts.chunks[chunks[mid]] as i64;
                let below = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, pc, start);
                self.b.ins().brif(below, low, &[], high, &[]);
                self.b.switch_to_block(low);
                self.far_search(pc, &chunks[..mid], internal);
                self.b.switch_to_block(high);
                self.far_search(pc, &chunks[mid..], internal);
            }
        }
    }

    /// The shared exit block: stores the failing address, returns the status. (Whoever jumps
    /// here has stored its dirty registers.)
    pub fn exit_block(&mut self) {
        self.b.switch_to_block(self.exit);
        let params = self.b.block_params(self.exit).to_vec();
        self.store(params[1], offset_of!(JitContext, error_pc));
        self.b.ins().return_(&[params[0]]);
    }

    // ------------------------------------------------------------------ the budget

    /// Ends the run: stores its registers (or keeps them for the next, `carry_into`: see
    /// [`Lowering::end_run`]) and checks the budget for its instructions not yet
    /// covered (those since its start, or since the check before an EMIT or SETEMIT), each of
    /// which spends one unit. When the budget covers them, it goes down by their number;
    /// otherwise the instruction it runs out at fails, on a cold path, at its own address.
    ///
    /// A failed vertex-shader invocation gives only its error, so that path stores nothing. A
    /// geometry-shader invocation keeps the state it reached, so that path stores every
    /// register the run wrote as it was before the failing instruction: the value it had then,
    /// or its value from before the run (loaded before the run's stores). The main path stores
    /// first and branches after, so the optimiser has every value computed on it (values used
    /// only on a cold branch would be computed there again, once per branch).
    fn finish_run(&mut self, carry_into: Option<u16>) {
        let pending = std::mem::take(&mut self.routing.pending);
        let Some(first) = pending.first().map(|p| p.pc) else {
            self.end_run(carry_into);
            return;
        };
        let geometry = self.program.stage == ShaderKind::Geometry;
        let written = self.dirty_registers();
        let before_run: Vec<(Reg, Value)> = if geometry {
            written
                .iter()
                .map(|&(reg, _)| (reg, self.load_reg(reg)))
                .collect()
        } else {
            Vec::new()
        };
        self.end_run(carry_into);

        let count: i64 = pending.iter().map(|p| i64::from(p.count)).sum();
        let left = self.b.use_var(self.budget);
        let enough = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, left, count);
        let go_on = self.b.create_block();
        let short = self.b.create_block();
        self.b.set_cold_block(short);
        self.b.ins().brif(enough, go_on, &[], short, &[]);

        // `left` is below `count` here: pending instruction `left` fails, at `first + left`
        // (the run's addresses are consecutive; no run crosses 4095 → 0, as 0 is a leader).
        self.b.switch_to_block(short);
        let offset = self.b.ins().ireduce(types::I32, left);
        let pc = self.b.ins().iadd_imm_s(offset, first as i64);
        let code = self.b.ins().iconst(types::I32, status::BUDGET as i64);
        if geometry {
            let mut covered = 0;
            for (k, Pending { count, dirty, .. }) in pending.iter().enumerate() {
                covered += i64::from(*count);
                let restore = |s: &mut Self| {
                    for &(reg, old) in &before_run {
                        let value = dirty
                            .iter()
                            .find(|&&(r, _)| r == reg)
                            .map_or(old, |&(_, v)| v);
                        s.store_reg(reg, value);
                    }
                    s.b.ins().jump(s.exit, &[code.into(), pc.into()]);
                };
                if k + 1 == pending.len() {
                    restore(self);
                } else {
                    let this = self.b.create_block();
                    let later = self.b.create_block();
                    self.b.set_cold_block(this);
                    self.b.set_cold_block(later);
                    let here = self
                        .b
                        .ins()
                        .icmp_imm_s(IntCC::UnsignedLessThan, left, covered);
                    self.b.ins().brif(here, this, &[], later, &[]);
                    self.b.switch_to_block(this);
                    restore(self);
                    self.b.switch_to_block(later);
                }
            }
        } else {
            self.b.ins().jump(self.exit, &[code.into(), pc.into()]);
        }

        self.b.switch_to_block(go_on);
        let left = self.b.ins().iadd_imm_s(left, -count);
        self.b.def_var(self.budget, left);
    }

    // ------------------------------------------------------------------ instructions

    /// Lowers the instruction at `pc` into its block: data part, then control part (with the
    /// budget check at the end of the run).
    pub fn instruction(&mut self, pc: u16, route: RouteVars) {
        let block = self.blocks[pc as usize].expect("a reachable address");
        self.b.switch_to_block(block);
        let inst = self.decoded[pc as usize];
        if self.facts.leaders[pc as usize] {
            debug_assert!(
                self.facts.continues[pc as usize] || self.cache_is_empty(),
                "a run ends before a leader"
            );
            if pc == self.program.entry {
                self.start_invocation();
            }
            debug_assert!(self.routing.pending.is_empty(), "a run checks its budget");
        }
        // A geometry shader's budget path needs the registers before each instruction.
        let dirty = if self.program.stage == ShaderKind::Geometry {
            self.dirty_registers()
        } else {
            Vec::new()
        };
        self.routing.pending.push(Pending {
            pc,
            count: 1,
            dirty,
        });
        if self.facts.filler[pc as usize] {
            // A filler run (a leader by construction): its first instruction's data stands for
            // all of them, which start from the registers it leaves.
            let length = self.facts.filler_run(pc);
            self.data(pc, &inst);
            if length > 1 {
                let dirty = if self.program.stage == ShaderKind::Geometry {
                    self.dirty_registers()
                } else {
                    Vec::new()
                };
                self.routing.pending.push(Pending {
                    pc: pc + 1,
                    count: length as u16 - 1,
                    dirty,
                });
            }
            self.control(pc + length as u16 - 1, &inst, route);
            return;
        }

        let acts_outside = self.program.stage == ShaderKind::Geometry
            && matches!(
                inst,
                Instruction::Simple {
                    op: SimpleOp::Emit,
                    ..
                } | Instruction::SetEmit { .. }
            );
        if acts_outside {
            // A run of its own (see `FlowFacts::leaders`): the budget before the effect.
            self.finish_run(None);
        }
        if let Instruction::Simple {
            op: SimpleOp::End, ..
        } = inst
        {
            if self.program.stage == ShaderKind::Vertex {
                self.forget_temporaries();
            }
            self.finish_run(None);
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

    /// The control part of the instruction at `pc`: [`step_on`] emitted as code.
    /// The run goes on into the next address only when it is not a leader; otherwise it ends
    /// here, and the control code works on the registers' homes.
    fn control(&mut self, pc: u16, inst: &Instruction, route: RouteVars) {
        let next = wrap(pc as u32 + 1);
        if !self.facts.leaders[next as usize] {
            self.goto(next);
            return;
        }
        // At a cut only this address leads to, the next run keeps the registers' values.
        self.finish_run(self.facts.continues[next as usize].then_some(next));
        let test = match rules::test(self, inst) {
            Some(test) => When::If(test),
            None => When::Always,
        };
        let call_returns = self.facts.call_returns_at(next);
        let ends = PossibleEnds {
            call_pops: call_returns.pops,
            if_end: self.facts.if_ends.contains_key(&next),
            loop_end: self.facts.loop_entries.contains_key(&next),
        };
        let candidates = self.routed_candidates(next, inst, call_returns);
        let mut stepping = Stepping {
            l: self,
            pc,
            inst: *inst,
            route,
            ends,
            candidates,
            remaining: None,
        };
        step_on(&mut stepping, pc, inst, test);
    }

    /// The addresses a matched scope can send control to after the instruction `inst` whose
    /// next address is `next` (sorted; `None`: too many to list).
    fn routed_candidates(
        &self,
        next: u16,
        inst: &Instruction,
        call_returns: CallReturns,
    ) -> Option<Vec<u16>> {
        let breaks = matches!(
            inst,
            Instruction::Simple {
                op: SimpleOp::Break,
                ..
            } | Instruction::CondFlow {
                op: CondFlowOp::Breakc,
                ..
            }
        );
        let mut candidates = Some(BTreeSet::new());
        let mut add = |more: Option<&BTreeSet<u16>>| match (candidates.as_mut(), more) {
            (Some(set), Some(more)) if set.len() + more.len() <= DIRECT_CANDIDATES => {
                set.extend(more.iter().copied())
            }
            _ => candidates = None,
        };
        if call_returns.pops > 0 {
            add(call_returns.targets.as_ref());
        }
        if let Some(ends) = self.facts.if_ends.get(&next) {
            add(Some(ends));
        }
        let loop_entries = self.facts.loop_entries.get(&next);
        if let Some(entries) = loop_entries {
            add(Some(entries));
        }
        if breaks {
            add(Some(&self.facts.loop_ends));
        } else if loop_entries.is_some() {
            add(Some(&BTreeSet::from([next])));
        }
        candidates.map(|set| set.into_iter().collect())
    }

    /// Pushes `scope` (from [`shader::flow::pushed_scope`]) onto its stack, packed as
    /// [`JitContext`] documents. Returns the slot.
    fn push_scope(&mut self, scope: Scope) -> Value {
        let (stack, low, high) = match scope {
            Scope::If(s) => (StackPlace::ifs(), s.else_addr, s.end),
            Scope::Call(s) => (StackPlace::calls(), s.end, s.ret),
            Scope::Loop(s) => (StackPlace::loops(), s.entry, s.end),
        };
        let entry = self.packed(low, high);
        self.push(stack, entry)
    }

    /// LOOP: pushes the scope and its counters and starts aL ([`rules::loop_start`]); the aL
    /// before the LOOP is kept beside the counters.
    fn push_loop(&mut self, int_id: u8, scope: Scope) {
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

    /// `value` as an `icmp` truth value (a test's `i32` 0 or 1 compared with 0).
    fn truth(&mut self, value: Value) -> Value {
        if self.b.func.dfg.value_type(value) == types::I32 {
            self.b.ins().icmp_imm_s(IntCC::NotEqual, value, 0)
        } else {
            value
        }
    }
}

/// One instruction's control part being emitted: [`step_on`] on the context's stacks, with
/// the checks the analysis ([`FlowFacts`]) proves can match.
struct Stepping<'s, 'a, 'b> {
    l: &'s mut Lowering<'a, 'b>,
    pc: u16,
    inst: Instruction,
    route: RouteVars,
    /// The scope ends the analysis allows at the next address.
    ends: PossibleEnds,
    /// Where a matched scope can send control ([`Lowering::routed_candidates`]).
    candidates: Option<Vec<u16>>,
    /// The top loop's passes left, as [`StackOps::loop_again`] loaded them.
    remaining: Option<Value>,
}

impl Stepping<'_, '_, '_> {
    /// Branches on `condition` to `then` and `otherwise`, each in a block of its own that
    /// jumps to `join` (when they do not end the step themselves).
    fn split(
        &mut self,
        condition: Value,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
        join: Option<Block>,
    ) {
        let then_block = self.l.b.create_block();
        let else_block = self.l.b.create_block();
        self.l
            .b
            .ins()
            .brif(condition, then_block, &[], else_block, &[]);
        self.l.b.switch_to_block(then_block);
        then(self);
        if let Some(join) = join {
            self.l.b.ins().jump(join, &[]);
        }
        self.l.b.switch_to_block(else_block);
        otherwise(self);
        if let Some(join) = join {
            self.l.b.ins().jump(join, &[]);
        }
    }
}

impl StackOps for Stepping<'_, '_, '_> {
    type Bit = Value;
    type Address = Value;
    type Top = Top;

    fn address(&mut self, address: u32) -> Value {
        self.l.address(address as u16)
    }
    fn not(&mut self, a: Value) -> Value {
        FlowOps::not(self.l, a)
    }
    fn and(&mut self, a: Value, b: Value) -> Value {
        let a = self.l.truth(a);
        let b = self.l.truth(b);
        self.l.b.ins().band(a, b)
    }
    fn when(&mut self, condition: Value, body: impl FnOnce(&mut Self)) {
        let then = self.l.b.create_block();
        let after = self.l.b.create_block();
        self.l.b.ins().brif(condition, then, &[], after, &[]);
        self.l.b.switch_to_block(then);
        body(self);
        self.l.b.ins().jump(after, &[]);
        self.l.b.switch_to_block(after);
    }
    fn if_else(
        &mut self,
        condition: Value,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        let after = self.l.b.create_block();
        self.split(condition, then, otherwise, Some(after));
        self.l.b.switch_to_block(after);
    }
    fn either(
        &mut self,
        condition: Value,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        self.split(condition, then, otherwise, None);
    }

    fn push(&mut self, scope: Scope) {
        match (scope, self.inst) {
            (Scope::Loop(_), Instruction::Loop { int_id, .. }) => self.l.push_loop(int_id, scope),
            _ => {
                self.l.push_scope(scope);
            }
        }
    }
    fn loops_empty(&mut self) -> Value {
        let len = self.l.load(types::I32, StackPlace::loops().len);
        self.l.b.ins().icmp_imm_s(IntCC::Equal, len, 0)
    }
    /// A cold path fails; the step goes on where it does not.
    fn hang_if(&mut self, hangs: Value) -> bool {
        let hang = self.l.b.create_block();
        let go_on = self.l.b.create_block();
        self.l.b.set_cold_block(hang);
        self.l.b.ins().brif(hangs, hang, &[], go_on, &[]);
        self.l.b.switch_to_block(hang);
        self.l.fail(self.pc, status::BREAK_OUTSIDE_LOOP);
        self.l.b.switch_to_block(go_on);
        false
    }
    /// END has a run of its own ([`Lowering::instruction`]), which ends before its control part.
    fn end(&mut self) {
        self.l.fail(self.pc, status::END);
    }

    fn possible_ends(&self, next: u16) -> PossibleEnds {
        debug_assert_eq!(next, wrap(self.pc as u32 + 1));
        self.ends
    }
    fn top(&mut self, stack: Stack) -> Top {
        self.l.load_top(stack)
    }
    /// A LOOP entry keeps its end in the high half, the others in the low one.
    fn ends_at(&mut self, top: Top, address: Value) -> Value {
        let shift = if top.stack == Stack::Loop { 16 } else { 0 };
        self.l.top_matches(top, shift, address)
    }
    fn resume_at(&mut self, top: Top) -> Value {
        self.l.b.ins().ushr_imm_s(top.entry, 16)
    }
    fn loop_body(&mut self, top: Top) -> Value {
        self.l.b.ins().band_imm_s(top.entry, 0xFFFF)
    }
    fn pop(&mut self, top: Top) {
        self.l.pop(top);
    }

    fn pass_ended(&mut self, top: Top) {
        self.l.add_increment(top);
    }
    fn loop_again(&mut self, top: Top) -> Value {
        let at = offset_of!(JitContext, loop_counters) + offset_of!(LoopCounters, remaining);
        let remaining = self.l.load_slot(at, top.slot);
        self.remaining = Some(remaining);
        remaining
    }
    fn next_pass(&mut self, top: Top) {
        let at = offset_of!(JitContext, loop_counters) + offset_of!(LoopCounters, remaining);
        let remaining = self
            .remaining
            .expect("the passes left, loaded by `loop_again`");
        let remaining = self.l.b.ins().iadd_imm_s(remaining, -1);
        self.l.store_slot(at, top.slot, remaining);
    }
    /// aL follows [`rules::al_after_exit`]; another loop remains when the stack held more
    /// than the one left.
    fn loop_left(&mut self, top: Top) {
        let counters = offset_of!(JitContext, loop_counters);
        let l = &mut *self.l;
        let outer_remains = l.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThan, top.len, 1);
        let previous_al = l.load_slot(counters + offset_of!(LoopCounters, previous_al), top.slot);
        let al_home = Reg::Al.home().0;
        let al = l.load(types::I32, al_home);
        let al = rules::al_after_exit(l, outer_remains, previous_al, al);
        l.store(al, al_home);
    }

    fn start_routes(&mut self) {
        let zero = self.l.b.ins().iconst(types::I32, 0);
        self.l.b.def_var(self.route.matched, zero);
        self.l.b.def_var(self.route.pc, zero);
    }
    fn route(&mut self, address: Value) {
        self.l.route_to(self.route, address);
    }
    fn route_kept(&mut self) {
        let one = self.l.b.ins().iconst(types::I32, 1);
        self.l.b.def_var(self.route.matched, one);
    }
    fn routed(&mut self) -> Value {
        self.l.b.use_var(self.route.matched)
    }
    fn go_routed(&mut self) {
        let target = self.l.b.use_var(self.route.pc);
        self.l.goto_among(target, self.candidates.as_deref());
    }
    fn go(&mut self, address: u32) {
        self.l.goto(wrap(address));
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
