//! The general form: a dispatch loop over the program's runs, with the three control stacks
//! held in local arrays, exactly as the model's machine holds them (docs/gpu-shaders.md,
//! "The general form"). It translates every program correctly, whatever its control flow:
//! each run (consecutive instructions entered only at its first) is a case of a switch on the
//! PC, and the control part of its last instruction is [`shader::flow::step_on`], the model's
//! one statement of the step order, run on `Stepping`, which emits each stack operation as
//! code. A structured translation replaces this where the flow allows.

use crate::names::Names;
use shader::float24::Precision;
use shader::flow::explore::reachable_addresses;
use shader::flow::rules;
use shader::flow::{
    CALL_DEPTH, IF_DEPTH, LOOP_DEPTH, PossibleEnds, Scope, Stack, StackOps, When, pushed_scope,
    step_on, wrap,
};
use shader::isa::{Instruction, OperandDescriptor, Operation, PROGRAM_WORDS, SimpleOp, disasm};
use shader::program::ShaderProgram;

use crate::geometry::{GeometryForm, StopRoute};
use crate::ir::build::{FnBuilder, ModuleBuilder};
use crate::ir::{ExprId, Global, LocalId, Place, Stmt, Type};
use crate::program::{Costly, Deferral, Emitter, Registers, Service, Status};
use crate::{Options, TranslateError};

/// The greatest budget the translation counts to (a `uint` that must not overflow).
pub const GREATEST_BUDGET: u64 = 0xFFFF_0000;

/// Where scope ends can match, for every address: the step emits only those checks.
pub(crate) struct ScopeAddresses {
    call_end: Vec<bool>,
    if_else: Vec<bool>,
    loop_end: Vec<bool>,
}

impl ScopeAddresses {
    /// Every scope a reachable flow instruction can push.
    pub(crate) fn of(decoded: &[Instruction], reachable: &[bool]) -> ScopeAddresses {
        let mut s = ScopeAddresses {
            call_end: vec![false; PROGRAM_WORDS],
            if_else: vec![false; PROGRAM_WORDS],
            loop_end: vec![false; PROGRAM_WORDS],
        };
        for (pc, inst) in decoded.iter().enumerate() {
            if !reachable[pc] {
                continue;
            }
            match pushed_scope(pc as u16, inst) {
                Some(Scope::If(scope)) => s.if_else[wrap(scope.else_addr as u32) as usize] = true,
                Some(Scope::Call(scope)) => s.call_end[scope.end as usize] = true,
                Some(Scope::Loop(scope)) => s.loop_end[scope.end as usize] = true,
                None => {}
            }
        }
        s
    }

    fn at(&self, next: u16) -> PossibleEnds {
        let n = next as usize;
        PossibleEnds {
            call_pops: if self.call_end[n] { CALL_DEPTH } else { 0 },
            if_end: self.if_else[n],
            loop_end: self.loop_end[n],
        }
    }
}

/// Whether the control part of `inst` does more than go to the next address.
pub(crate) fn is_control(inst: &Instruction) -> bool {
    match inst {
        Instruction::Simple { op, .. } => matches!(op, SimpleOp::End | SimpleOp::Break),
        Instruction::CondFlow { .. } | Instruction::BoolFlow { .. } | Instruction::Loop { .. } => {
            true
        }
        _ => false,
    }
}

/// The three stacks as local arrays: each a ring of slots with the index of the next push
/// and the length, as [`shader::flow::RingStack`] behaves (a push onto a full stack drops the
/// oldest entry).
#[derive(Clone, Copy)]
struct Ring {
    /// The slots' fields: an IF's else and end, a CALL's end and return, a LOOP's entry and
    /// end, then its counters (passes left, aL increment, aL before).
    fields: [Option<LocalId>; 5],
    next: LocalId,
    len: LocalId,
    depth: u32,
}

#[derive(Clone, Copy)]
struct Stacks {
    ifs: Ring,
    calls: Ring,
    loops: Ring,
}

const IF_ELSE: usize = 0;
const IF_END: usize = 1;
const CALL_END: usize = 0;
const CALL_RETURN: usize = 1;
const LOOP_ENTRY: usize = 0;
const LOOP_END: usize = 1;
const LOOP_REMAINING: usize = 2;
const LOOP_INCREMENT: usize = 3;
const LOOP_PREVIOUS_AL: usize = 4;

impl Stacks {
    fn declare(b: &mut FnBuilder) -> Stacks {
        let mut ring = |name: &str, fields: &[&str], depth: usize| {
            let mut slots = [None; 5];
            for (slot, field) in slots.iter_mut().zip(fields) {
                *slot = Some(b.local_array(&format!("{name}_{field}"), Type::INT, depth as u32));
            }
            Ring {
                fields: slots,
                next: b.local(&format!("{name}_next"), Type::INT, [0; 4]),
                len: b.local(&format!("{name}_len"), Type::INT, [0; 4]),
                depth: depth as u32,
            }
        };
        Stacks {
            ifs: ring("if", &["else", "end"], IF_DEPTH),
            calls: ring("call", &["end", "ret"], CALL_DEPTH),
            loops: ring(
                "loop",
                &["entry", "end", "left", "step", "al_before"],
                LOOP_DEPTH,
            ),
        }
    }

    fn of(&self, stack: Stack) -> Ring {
        match stack {
            Stack::If => self.ifs,
            Stack::Call => self.calls,
            Stack::Loop => self.loops,
        }
    }
}

/// The top entry of a stack as read: its slot and whether the stack is non-empty.
#[derive(Clone, Copy)]
pub(crate) struct Top {
    stack: Stack,
    slot: ExprId,
    nonempty: ExprId,
}

/// The function-wide state of the dispatch loop.
#[derive(Clone, Copy)]
struct Dispatch {
    pc: LocalId,
    steps: LocalId,
    routed: LocalId,
    matched: LocalId,
}

/// [`StackOps`] as IR on the dispatch loop's locals: one instruction's control part.
struct Stepping<'e, 'a, 'm> {
    emitter: &'e mut Emitter<'a, 'm>,
    stacks: Stacks,
    dispatch: Dispatch,
    ends: &'e ScopeAddresses,
    inst: Instruction,
    pc: u16,
    end_state: bool,
}

impl<'a, 'm> Stepping<'_, 'a, 'm> {
    fn b(&mut self) -> &mut FnBuilder<'m> {
        self.emitter.b
    }

    fn field(&mut self, top: Top, field: usize) -> Place {
        let array = self.stacks.of(top.stack).fields[field].expect("a field of the stack");
        Place::Element(array, top.slot)
    }

    fn load_field(&mut self, top: Top, field: usize) -> ExprId {
        let place = self.field(top, field);
        let v = self.b().load(place);
        self.b().bind("entry", v)
    }
}

/// Writes the end state (when the translation reports it) and returns: `status`, and `pc` for
/// an error.
pub(crate) fn finish(emitter: &mut Emitter, end_state: bool, status: Status, pc: ExprId) {
    if emitter.registers.geometry.is_some() {
        crate::geometry::stop(emitter, status, pc);
        return;
    }
    if end_state {
        let b = &mut *emitter.b;
        let regs = emitter.registers;
        let a0x = b.get(regs.address[0]);
        let a0y = b.get(regs.address[1]);
        let al = b.get(regs.loop_counter);
        let cx = b.get(regs.cmp[0]);
        let cy = b.get(regs.cmp[1]);
        let cx = b.convert(cx, crate::ir::Scalar::Int);
        let cy = b.convert(cy, crate::ir::Scalar::Int);
        let cy = b.shl_k(cy, 1);
        let flags = b.or(cx, cy);
        let status = b.int((status as i32) << 2);
        let flags = b.or(flags, status);
        let pc = b.shl_k(pc, 8);
        let flags = b.or(flags, pc);
        let state = b.construct(
            Type::vector(crate::ir::Scalar::Int, 4),
            &[a0x, a0y, al, flags],
        );
        b.store(Place::Global(Global::EndState), state);
    }
    emitter.b.ret(None);
}

impl StackOps for Stepping<'_, '_, '_> {
    type Bit = ExprId;
    type Address = ExprId;
    type Top = Top;

    fn address(&mut self, address: u32) -> ExprId {
        self.b().int(address as i32)
    }
    fn not(&mut self, a: ExprId) -> ExprId {
        self.b().not(a)
    }
    fn and(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b().and(a, c)
    }
    fn when(&mut self, condition: ExprId, body: impl FnOnce(&mut Self)) {
        self.b().open();
        body(self);
        let then = self.b().close();
        self.b().push_stmt(Stmt::If(condition, then, Vec::new()));
    }
    fn if_else(
        &mut self,
        condition: ExprId,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        self.b().open();
        then(self);
        let then = self.b().close();
        self.b().open();
        otherwise(self);
        let otherwise = self.b().close();
        self.b().push_stmt(Stmt::If(condition, then, otherwise));
    }
    fn either(
        &mut self,
        condition: ExprId,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        self.if_else(condition, then, otherwise);
    }

    fn push(&mut self, scope: Scope) {
        let (stack, values): (Stack, Vec<(usize, ExprId)>) = match scope {
            Scope::If(s) => (
                Stack::If,
                vec![
                    (IF_ELSE, self.b().int(s.else_addr as i32)),
                    (IF_END, self.b().int(s.end as i32)),
                ],
            ),
            Scope::Call(s) => (
                Stack::Call,
                vec![
                    (CALL_END, self.b().int(s.end as i32)),
                    (CALL_RETURN, self.b().int(s.ret as i32)),
                ],
            ),
            Scope::Loop(s) => {
                let Instruction::Loop { int_id, .. } = self.inst else {
                    unreachable!("a loop scope pushed by another instruction");
                };
                let start = rules::loop_start(&mut *self.emitter, int_id);
                let al = self.emitter.registers.loop_counter;
                let before = self.b().get(al);
                let before = self.b().bind("al_before", before);
                let remaining = self.b().bind("loop_left", start.remaining);
                let increment = self.b().bind("loop_step", start.increment);
                let first = self.b().bind("loop_al", start.al);
                self.b().set(al, first);
                (
                    Stack::Loop,
                    vec![
                        (LOOP_ENTRY, self.b().int(s.entry as i32)),
                        (LOOP_END, self.b().int(s.end as i32)),
                        (LOOP_REMAINING, remaining),
                        (LOOP_INCREMENT, increment),
                        (LOOP_PREVIOUS_AL, before),
                    ],
                )
            }
        };
        let ring = self.stacks.of(stack);
        let slot = self.b().get(ring.next);
        let slot = self.b().bind("slot", slot);
        for (field, value) in values {
            let array = ring.fields[field].expect("the field");
            self.b().store(Place::Element(array, slot), value);
        }
        let next = self.b().add_k(slot, 1);
        let next = self.b().and_k(next, ring.depth - 1);
        self.b().set(ring.next, next);
        let len = self.b().get(ring.len);
        let longer = self.b().add_k(len, 1);
        let depth = self.b().int(ring.depth as i32);
        let full = self.b().gt(longer, depth);
        let len = self.b().select(full, depth, longer);
        self.b().set(ring.len, len);
    }
    fn loops_empty(&mut self) -> ExprId {
        let place = self.stacks.loops.len;
        let len = self.b().get(place);
        self.b().eq_k(len, 0)
    }
    fn hang_if(&mut self, hangs: ExprId) -> bool {
        let pc = self.pc;
        let end_state = self.end_state;
        self.b().open();
        let at = self.b().int(pc as i32);
        finish(self.emitter, end_state, Status::BreakOutsideLoop, at);
        let then = self.b().close();
        self.b().push_stmt(Stmt::If(hangs, then, Vec::new()));
        false
    }
    fn end(&mut self) {
        let at = self.pc as i32;
        let pc = self.b().int(at);
        finish(self.emitter, self.end_state, Status::Ended, pc);
    }

    fn possible_ends(&self, next: u16) -> PossibleEnds {
        self.ends.at(next)
    }
    fn top(&mut self, stack: Stack) -> Top {
        let ring = self.stacks.of(stack);
        let next = self.b().get(ring.next);
        let below = self.b().add_k(next, ring.depth - 1);
        let slot = self.b().and_k(below, ring.depth - 1);
        let slot = self.b().bind("top", slot);
        let len = self.b().get(ring.len);
        let nonempty = self.b().gt_k(len, 0);
        let nonempty = self.b().bind("nonempty", nonempty);
        Top {
            stack,
            slot,
            nonempty,
        }
    }
    fn ends_at(&mut self, top: Top, address: ExprId) -> ExprId {
        let field = match top.stack {
            Stack::If => IF_ELSE,
            Stack::Call => CALL_END,
            Stack::Loop => LOOP_END,
        };
        let end = self.load_field(top, field);
        let hit = self.b().eq(end, address);
        let hit = self.b().and(top.nonempty, hit);
        self.b().bind("ends", hit)
    }
    fn resume_at(&mut self, top: Top) -> ExprId {
        let field = match top.stack {
            Stack::If => IF_END,
            Stack::Call => CALL_RETURN,
            Stack::Loop => LOOP_END,
        };
        self.load_field(top, field)
    }
    fn loop_body(&mut self, top: Top) -> ExprId {
        self.load_field(top, LOOP_ENTRY)
    }
    fn pop(&mut self, top: Top) {
        let ring = self.stacks.of(top.stack);
        self.b().set(ring.next, top.slot);
        let len = self.b().get(ring.len);
        let shorter = self.b().sub_k(len, 1);
        self.b().set(ring.len, shorter);
    }

    fn pass_ended(&mut self, top: Top) {
        let increment = self.load_field(top, LOOP_INCREMENT);
        let al = self.emitter.registers.loop_counter;
        let now = self.b().get(al);
        let next = rules::al_after_pass(&mut *self.emitter, now, increment);
        self.b().set(al, next);
    }
    fn loop_again(&mut self, top: Top) -> ExprId {
        let left = self.load_field(top, LOOP_REMAINING);
        let again = self.b().ne_k(left, 0);
        self.b().bind("again", again)
    }
    fn next_pass(&mut self, top: Top) {
        let left = self.load_field(top, LOOP_REMAINING);
        let fewer = self.b().sub_k(left, 1);
        let place = self.field(top, LOOP_REMAINING);
        self.b().store(place, fewer);
    }
    fn loop_left(&mut self, top: Top) {
        let place = self.stacks.loops.len;
        let len = self.b().get(place);
        let outer = self.b().gt_k(len, 0);
        let before = self.load_field(top, LOOP_PREVIOUS_AL);
        let al = self.emitter.registers.loop_counter;
        let now = self.b().get(al);
        let next = rules::al_after_exit(&mut *self.emitter, outer, before, now);
        self.b().set(al, next);
    }

    fn start_routes(&mut self) {
        let no = self.b().boolean(false);
        let place = self.dispatch.matched;
        self.b().set(place, no);
    }
    fn route(&mut self, address: ExprId) {
        let yes = self.b().boolean(true);
        let place = self.dispatch.matched;
        self.b().set(place, yes);
        let place = self.dispatch.routed;
        self.b().set(place, address);
    }
    fn route_kept(&mut self) {
        let yes = self.b().boolean(true);
        let place = self.dispatch.matched;
        self.b().set(place, yes);
    }
    fn routed(&mut self) -> ExprId {
        let place = self.dispatch.matched;
        let matched = self.b().get(place);
        self.b().bind("matched", matched)
    }
    fn go_routed(&mut self) {
        let place = self.dispatch.routed;
        let routed = self.b().get(place);
        let wrapped = self.b().and_k(routed, PROGRAM_WORDS as u32 - 1);
        let place = self.dispatch.pc;
        self.b().set(place, wrapped);
        self.b().cont();
    }
    fn go(&mut self, address: u32) {
        let to = self.b().int(wrap(address) as i32);
        let place = self.dispatch.pc;
        self.b().set(place, to);
        self.b().cont();
    }
}

/// `operation`'s statements by the model's operation visitor, with its operand descriptor.
pub(crate) fn visit(emitter: &mut Emitter, program: &ShaderProgram, operation: &Operation) {
    let desc = OperandDescriptor(program.opdescs[operation.desc() as usize]);
    shader::exec::operate::operate(emitter, operation, desc);
}

/// Runs of at least this many identical words become a loop.
const REPEAT_AT_LEAST: u16 = 8;

/// How many words from `k` on in the run at `leader` (of `len`, its last word excluded) are
/// the same word as the one at `k`.
fn repeated(decoded: &[Instruction], leader: u16, k: u16, len: u16) -> u16 {
    let at = |k: u16| decoded[wrap(leader as u32 + k as u32) as usize];
    let first = at(k);
    let mut same = 1;
    while k + same + 1 < len && at(k + same) == first {
        same += 1;
    }
    same
}

/// The costly functions (RCP, RSQ, EX2, LG2) more than one reachable instruction computes:
/// those are evaluated at one shared place, each inlined once (docs/gpu-shaders.md, "Compile
/// cost").
fn shared_costly(decoded: &[Instruction], found: &[(u16, u16)]) -> Vec<Costly> {
    let mut uses = [0usize; 5];
    for &(leader, len) in found {
        for k in 0..len {
            let inst = &decoded[wrap(leader as u32 + k as u32) as usize];
            if let Some(c) = inst.operation().as_ref().and_then(Costly::of) {
                uses[c as usize] += 1;
            }
        }
    }
    Costly::ALL
        .into_iter()
        .filter(|&c| uses[c as usize] > 1)
        .collect()
}

/// At the top of each pass of the dispatch loop: the pending costly function, if any, on the
/// argument its instruction handed over.
fn evaluate_service(b: &mut FnBuilder, precision: Precision, service: Service, shared: &[Costly]) {
    let op = b.get(service.op);
    let op = b.bind("service", op);
    let pending = b.ne_k(op, 0);
    b.when(pending, |b| {
        let argument = b.get(service.argument);
        let argument = b.bind("argument", argument);
        let values: Vec<(i32, Costly)> = shared.iter().map(|&c| (c as i32, c)).collect();
        b.switch_each(
            op,
            &values,
            |b, function| {
                let value = function.evaluate(b, precision, argument);
                b.set(service.result, value);
            },
            |_| {},
        );
        let none = b.int(0);
        b.set(service.op, none);
    });
}

/// A run: consecutive reachable addresses entered only at the first, the last one's control
/// part a full step.
pub(crate) fn runs(
    decoded: &[Instruction],
    entry: u16,
) -> (Vec<bool>, ScopeAddresses, Vec<(u16, u16)>) {
    let reachable = reachable_addresses(decoded, entry);
    let ends = ScopeAddresses::of(decoded, &reachable);
    let mut leaders = vec![false; PROGRAM_WORDS];
    leaders[wrap(entry as u32) as usize] = true;
    for (pc, inst) in decoded.iter().enumerate() {
        if !reachable[pc] {
            continue;
        }
        if is_control(inst) {
            leaders[wrap(pc as u32 + 1) as usize] = true;
        }
        if let Instruction::CondFlow { target, .. } | Instruction::BoolFlow { target, .. } = *inst {
            leaders[wrap(target as u32) as usize] = true;
        }
        match pushed_scope(pc as u16, inst) {
            Some(Scope::If(s)) => {
                leaders[wrap(s.else_addr as u32) as usize] = true;
                leaders[s.end as usize] = true;
            }
            Some(Scope::Call(s)) => {
                leaders[s.end as usize] = true;
                leaders[s.ret as usize] = true;
            }
            Some(Scope::Loop(s)) => {
                leaders[s.entry as usize] = true;
                leaders[s.end as usize] = true;
            }
            None => {}
        }
    }
    let mut found = Vec::new();
    for leader in 0..PROGRAM_WORDS {
        if !leaders[leader] || !reachable[leader] {
            continue;
        }
        let mut pc = leader as u16;
        let mut len = 1u16;
        loop {
            let next = wrap(pc as u32 + 1);
            let ends_here = ends.at(next);
            let checks = ends_here.call_pops > 0 || ends_here.if_end || ends_here.loop_end;
            if is_control(&decoded[pc as usize])
                || checks
                || leaders[next as usize]
                || !reachable[next as usize]
                || len as usize >= PROGRAM_WORDS
            {
                break;
            }
            pc = next;
            len += 1;
        }
        found.push((leader as u16, len));
    }
    (reachable, ends, found)
}

/// The general form of `program`'s entry function, `main`, into `module` (`decoded`: its
/// program memory decoded).
pub fn translate(
    module: &mut ModuleBuilder,
    program: &ShaderProgram,
    decoded: &[Instruction],
    options: &Options,
    name: &str,
    names: &Names,
) -> Result<(), TranslateError> {
    let (_, ends, found) = runs(decoded, program.entry);
    let budget = options.instruction_budget.clamp(1, GREATEST_BUDGET) as u32;
    let mut b = FnBuilder::new(module, name, &[], None);
    let mut registers = Registers::declare(&mut b);
    let stacks = Stacks::declare(&mut b);
    let dispatch = Dispatch {
        pc: b.local("pc", Type::INT, [program.entry as u32; 4]),
        steps: b.local("steps", Type::UINT, [0; 4]),
        routed: b.local("routed", Type::INT, [0; 4]),
        matched: b.local("matched", Type::BOOL, [0; 4]),
    };
    let mut stop_route = None;
    if let Some(g) = registers.geometry.as_mut()
        && g.layout.form == GeometryForm::Records
    {
        let route = StopRoute {
            status: b.local("stop_status", Type::UINT, [0; 4]),
            pc: b.local("stop_pc", Type::INT, [0; 4]),
            selector: dispatch.pc,
        };
        g.stop = Some(route);
        stop_route = Some(route);
    }
    let listing = |pc: u16| {
        names.annotate(&disasm::format_instruction(
            &decoded[pc as usize],
            &program.opdescs,
        ))
    };
    let shared = shared_costly(decoded, &found);
    let service = Service {
        op: b.local("service_op", Type::INT, [0; 4]),
        argument: b.local("service_argument", Type::UVEC4, [0; 4]),
        result: b.local("service_result", Type::UVEC4, [0; 4]),
    };
    let repeat = b.local("repeat", Type::INT, [0; 4]);
    let mut continuations = PROGRAM_WORDS as i32;
    b.forever(|b| {
        if !shared.is_empty() {
            evaluate_service(b, options.precision, service, &shared);
        }
        let selector = b.get(dispatch.pc);
        let mut cases = Vec::with_capacity(found.len());
        for &(leader, len) in &found {
            b.open();
            let mut case = leader as i32;
            let mut emitter = Emitter {
                b: &mut *b,
                precision: options.precision,
                registers,
                deferral: Deferral::Inline,
            };
            // The budget for the whole run, before any of it (docs/gpu-shaders.md, "Budget").
            let steps = emitter.b.get(dispatch.steps);
            let steps = emitter.b.bind("steps", steps);
            let after = emitter.b.add_k(steps, len as u32);
            let after = emitter.b.bind("after", after);
            // A geometry invocation's state after a failure persists, so it counts each
            // instruction instead (below).
            let per_run = emitter.registers.geometry.is_none();
            if per_run {
                let over = emitter.b.gt_k(after, budget);
                emitter.b.open();
                // The first instruction not executed: the one that exceeds the budget.
                let budget_k = emitter.b.uint(budget);
                let left = emitter.b.sub(budget_k, steps);
                let left = emitter.b.convert(left, crate::ir::Scalar::Int);
                let at = emitter.b.add_k(left, leader as u32);
                let at = emitter.b.and_k(at, PROGRAM_WORDS as u32 - 1);
                finish(&mut emitter, options.end_state, Status::Budget, at);
                let fail = emitter.b.close();
                emitter.b.push_stmt(Stmt::If(over, fail, Vec::new()));
            }
            emitter.b.set(dispatch.steps, after);
            let mut k = 0;
            while k < len {
                let pc = wrap(leader as u32 + k as u32);
                let inst = decoded[pc as usize];
                let last = k + 1 == len;
                let operation = inst.operation();
                let deferred = operation
                    .as_ref()
                    .and_then(Costly::of)
                    .filter(|c| shared.contains(c));
                // A geometry invocation stops at EMIT (vertex id 3) through its stop case,
                // which a `continue` inside a repeat's loop would not reach.
                let emits = matches!(
                    inst,
                    Instruction::Simple {
                        op: SimpleOp::Emit,
                        ..
                    }
                );
                let same = if last || deferred.is_some() || (emits && !per_run) {
                    1
                } else {
                    repeated(decoded, leader, k, len)
                };
                if !per_run {
                    // Instruction k of the run runs only when fewer than `budget` ran before:
                    // `steps` holds the count after the whole run.
                    let steps = emitter.b.get(dispatch.steps);
                    let over = emitter.b.ge_k(steps, budget + (len - k) as u32);
                    emitter.b.open();
                    let at = emitter.b.int(pc as i32);
                    finish(&mut emitter, options.end_state, Status::Budget, at);
                    let fail = emitter.b.close();
                    emitter.b.push_stmt(Stmt::If(over, fail, Vec::new()));
                }
                if same >= REPEAT_AT_LEAST {
                    // Identical words (the zeros past the uploaded code): one loop, not a copy
                    // each (docs/gpu-shaders.md, "Compile cost").
                    let through = wrap(pc as u32 + same as u32 - 1);
                    emitter.b.comment(|| {
                        format!("{pc:03x}-{through:03x}: {} ({same} times)", listing(pc))
                    });
                    let zero = emitter.b.int(0);
                    emitter.b.set(repeat, zero);
                    // A geometry invocation runs the passes the budget leaves (at least one:
                    // the check above), then stops at the first one it does not run.
                    let allowed = if per_run {
                        emitter.b.int(same as i32)
                    } else {
                        let steps = emitter.b.get(dispatch.steps);
                        let limit = emitter.b.uint(budget + (len - k) as u32);
                        let room = emitter.b.sub(limit, steps);
                        let all = emitter.b.uint(same as u32);
                        let short = emitter.b.lt(room, all);
                        let passes = emitter.b.select(short, room, all);
                        let passes = emitter.b.convert(passes, crate::ir::Scalar::Int);
                        emitter.b.bind("passes", passes)
                    };
                    emitter.b.open();
                    let done = emitter.b.get(repeat);
                    let done = emitter.b.ge(done, allowed);
                    emitter.b.when(done, |b| b.brk());
                    if let Some(operation) = &operation {
                        visit(&mut emitter, program, operation);
                    }
                    crate::geometry::effect(&mut emitter, &inst, pc, options.end_state);
                    let count = emitter.b.get(repeat);
                    let count = emitter.b.add_k(count, 1);
                    emitter.b.set(repeat, count);
                    let body = emitter.b.close();
                    emitter.b.push_stmt(Stmt::Loop(body));
                    if !per_run {
                        let short = emitter.b.lt_k(allowed, same as u32);
                        emitter.b.open();
                        let at = emitter.b.add_k(allowed, pc as u32);
                        let at = emitter.b.and_k(at, PROGRAM_WORDS as u32 - 1);
                        finish(&mut emitter, options.end_state, Status::Budget, at);
                        let fail = emitter.b.close();
                        emitter.b.push_stmt(Stmt::If(short, fail, Vec::new()));
                    }
                    k += same;
                    continue;
                }
                emitter.b.comment(|| format!("{pc:03x}: {}", listing(pc)));
                if let Some(operation) = &operation {
                    if deferred.is_some() {
                        // Hand the function to the service, then resume in a case of its own.
                        emitter.deferral = Deferral::Capture(service);
                        visit(&mut emitter, program, operation);
                        continuations += 1;
                        let to = emitter.b.int(continuations);
                        emitter.b.set(dispatch.pc, to);
                        emitter.b.cont();
                        let body = emitter.b.close();
                        cases.push((vec![case], body));
                        case = continuations;
                        emitter.b.open();
                        emitter
                            .b
                            .comment(|| format!("{pc:03x}: {} (its result)", listing(pc)));
                        emitter.deferral = Deferral::Resume(service);
                    }
                    visit(&mut emitter, program, operation);
                    emitter.deferral = Deferral::Inline;
                }
                crate::geometry::effect(&mut emitter, &inst, pc, options.end_state);
                if last {
                    let test = match rules::test(&mut emitter, &inst) {
                        Some(bit) => {
                            let bit = emitter.b.bind("test", bit);
                            When::If(bit)
                        }
                        None => When::Always,
                    };
                    let mut stepping = Stepping {
                        emitter: &mut emitter,
                        stacks,
                        dispatch,
                        ends: &ends,
                        inst,
                        pc,
                        end_state: options.end_state,
                    };
                    step_on(&mut stepping, pc, &inst, test);
                }
                k += 1;
            }
            let body = b.close();
            cases.push((vec![case], body));
        }
        b.open();
        let pc = b.get(dispatch.pc);
        let mut emitter = Emitter {
            b: &mut *b,
            precision: options.precision,
            registers,
            deferral: Deferral::Inline,
        };
        finish(&mut emitter, options.end_state, Status::Internal, pc);
        let default = b.close();
        if let Some(route) = stop_route {
            b.open();
            let mut emitter = Emitter {
                b: &mut *b,
                precision: options.precision,
                registers,
                deferral: Deferral::Inline,
            };
            crate::geometry::stop_case(&mut emitter, route);
            let body = b.close();
            cases.push((vec![StopRoute::CASE], body));
        }
        b.push_stmt(Stmt::Switch(selector, cases, default));
    });
    prologue(&mut b, options, &registers);
    let function = b.finish();
    module.add(function);
    Ok(())
}

/// The statements before an entry function's body: every output written starts at +0, and
/// the end state (when reported) starts as "stopped by the host", what is left when a driver
/// kills the invocation.
pub(crate) fn prologue(b: &mut FnBuilder, options: &Options, registers: &Registers) {
    let mut start = crate::geometry::prologue(b, registers);
    let outputs = b.module.outputs;
    for n in 0..16u8 {
        if outputs & (1 << n) != 0 {
            let zero = b.splat(Type::UVEC4, 0);
            start.push(Stmt::Store(Place::Global(Global::Output(n)), None, zero));
        }
    }
    if options.end_state && registers.geometry.is_none() {
        let parts: Vec<ExprId> = [0, 0, 0, (Status::HostStopped as i32) << 2]
            .iter()
            .map(|&v| b.int(v))
            .collect();
        let state = b.construct(Type::vector(crate::ir::Scalar::Int, 4), &parts);
        start.push(Stmt::Store(Place::Global(Global::EndState), None, state));
    }
    b.prepend(start);
}
