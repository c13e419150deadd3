//! The scalar JIT: one invocation at a time, every program (docs/library.md, "Engines and the
//! JIT"). `compile` drives Cranelift over the reachable code (one function, or one per chunk);
//! `analysis` finds what the lowering may assume; `lower` emits the data path and `control` the
//! control-flow stack machine; `context` is the memory the compiled code works in. This file
//! holds the compiled program, how it runs (the fast form first or not) and its
//! [`ShaderEngine`] implementation.

mod analysis;
mod compile;
mod context;
mod lower;

pub use compile::CompileStats;
pub use lower::{CHECKED_PRODUCTS_WORDS, INLINE_TRANSCENDENTALS};

use cranelift_jit::JITModule;

use compile::CompiledFn;
use context::{GeometryRun, JitContext, status};
use lower::control;
use shader::exec::{
    BatchIo, EmitSink, ExecConfig, ExecError, GeometryState, HostPaths, ShaderEngine, VertexResult,
};
use shader::float24::lanes;
use shader::program::{
    FLOAT_UNIFORMS, FlowRegisters, InputRegisters, ShaderKind, ShaderProgram, Uniforms, Vec4,
};

use std::fmt;

/// When a [`JitShader`] runs a whole invocation's fast form first (docs/architecture.md,
/// "Whole invocations on the fast path"). The bits are the same under every policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastPolicy {
    /// By the recent rate of flagged invocations ([`FastDebt`]): on every invocation while
    /// fewer than one in five flag, on about one in 33 where every one does.
    Adaptive,
    /// On every invocation.
    Always,
    /// Never.
    Never,
}

/// The record behind [`FastPolicy::Adaptive`]: a debt that a flagged invocation raises by
/// [`FLAG_DEBT`](Self::FLAG_DEBT), an invocation the fast form finished lowers by
/// [`PASS_RELIEF`](Self::PASS_RELIEF) (not below 0), and one run on the exact function directly
/// lowers by 1; the fast form runs first while the debt is below
/// [`LIMIT`](Self::LIMIT).
///
/// A flagged invocation costs the fast run and the exact one; one the fast form finishes saves
/// the exact function's extra cost, 5-40% of it on the corpus. So the fast form pays while the
/// share of invocations that flag is below that saving's share, which differs by program;
/// the debt stands still at one in five (`PASS_RELIEF / (FLAG_DEBT + PASS_RELIEF)`), the
/// middle of that range. Below it the debt stays under the limit (a lone flag does not reach
/// it) and every invocation runs the fast form; above it the debt climbs, and a program whose
/// every invocation flags runs the fast form once in `FLAG_DEBT + 1`. (The rule it replaced,
/// 16 invocations on the exact function after each flag, ran the fast form on few invocations
/// of a program with one edge-value vertex in six.) Plain loads and stores: threads that race
/// lose an update, not a result.
#[derive(Debug, Default)]
pub struct FastDebt(std::sync::atomic::AtomicI32);

impl FastDebt {
    /// What a flagged invocation adds.
    pub const FLAG_DEBT: i32 = 32;
    /// What an invocation the fast form finished takes off.
    pub const PASS_RELIEF: i32 = 8;
    /// The debt from which invocations run on the exact function directly.
    pub const LIMIT: i32 = 2 * Self::FLAG_DEBT;

    /// Whether the next invocation runs the fast form first (one that does not lowers the
    /// debt).
    #[inline]
    pub fn fast_first(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let debt = self.0.load(Relaxed);
        if debt >= Self::LIMIT {
            self.0.store(debt - 1, Relaxed);
            return false;
        }
        true
    }

    /// Notes an invocation the fast form finished.
    #[inline]
    pub fn note_passed(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        let debt = self.0.load(Relaxed);
        // No store while there is no debt: the common case leaves the line unwritten.
        if debt > 0 {
            self.0.store((debt - Self::PASS_RELIEF).max(0), Relaxed);
        }
    }

    /// Notes an invocation the fast form flagged (or did not end), which runs again.
    pub fn note_flagged(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        let debt = self.0.load(Relaxed);
        self.0.store(debt.saturating_add(Self::FLAG_DEBT), Relaxed);
    }
}

/// A program compiled to native code.
pub struct JitShader {
    program: ShaderProgram,
    config: ExecConfig,
    stats: CompileStats,
    function: CompiledFn,
    /// A whole invocation's fast form, run first when [`JitShader::fast_first`] says so
    /// (docs/architecture.md, "Whole invocations on the fast path"): vertex shaders in the
    /// float24 modes that have checked products.
    fast_function: Option<CompiledFn>,
    /// Whether to run the fast form first under [`FastPolicy::Adaptive`].
    fast_debt: FastDebt,
    /// When the fast form runs first.
    fast_policy: FastPolicy,
    /// Invocations the fast form ran and the exact function ran again.
    fast_reruns: std::sync::atomic::AtomicU64,
    /// The float uniforms reachable code reads (bit n: c`n`; all of them if it reads one
    /// relative to an address register): the fast form runs only when each is
    /// `lanes::within_operand_bounds`, and reads them unchecked.
    fast_uniforms: u128,
    /// The temporaries reachable code reads or writes (bit n: rN), but those the code zeroes
    /// itself (`Lowering::zero_temps`): the only ones the caller of a vertex invocation zeroes.
    temps: u16,
    /// Whether reachable code reads a control-flow stack ([`uses_stacks`]): only then are they
    /// emptied before an invocation.
    uses_stacks: bool,
    /// Owns the code; freed on drop.
    module: Option<JITModule>,
}

// SAFETY: after `finalize_definitions` the module is never used again except to free its memory
// in `Drop` (which needs `&mut self`); the compiled function is immutable code that only touches
// the context passed to it, so it can run on any thread, from several threads at once.
unsafe impl Send for JitShader {}
// SAFETY: see above.
unsafe impl Sync for JitShader {}

impl Drop for JitShader {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: no pointer to the compiled code outlives `self`: `function` is only called
            // through `&self`.
            unsafe { module.free_memory() };
        }
    }
}

impl JitShader {
    /// The program.
    pub fn program(&self) -> &ShaderProgram {
        &self.program
    }

    /// The settings it was compiled with.
    pub fn config(&self) -> ExecConfig {
        self.config
    }

    /// The size of the emitted IR and machine code.
    pub fn compile_stats(&self) -> CompileStats {
        self.stats
    }

    /// Whether the program has a whole invocation's fast form (docs/architecture.md, "Whole
    /// invocations on the fast path").
    pub fn has_fast_form(&self) -> bool {
        self.fast_function.is_some()
    }

    /// Sets when the fast form runs first (the default: [`FastPolicy::Adaptive`]). Every
    /// policy gives the same bits; [`FastPolicy::Always`] is for a tester that wants the fast
    /// form run on every invocation.
    pub fn set_fast_policy(&mut self, policy: FastPolicy) {
        self.fast_policy = policy;
    }

    /// How many invocations ran the fast form and then, flagged or not ended, the exact
    /// function (a measure of how often the fast form's bounds are left, never of results).
    pub fn fast_form_reruns(&self) -> u64 {
        self.fast_reruns.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the uniforms `ctx` reads let the fast form run: every one the program reads is
    /// within the operand bounds (known from `comfortable`, or looked at).
    fn uniforms_allow_fast_form(&self, ctx: &JitContext, comfortable: Option<u128>) -> bool {
        let needed = self.fast_uniforms;
        if needed == 0 {
            return true;
        }
        let known = comfortable.unwrap_or_else(|| {
            // SAFETY: every caller points `ctx.uniform` at the invocation's live uniforms
            // before executing.
            let floats = unsafe { &*ctx.uniform };
            lanes::uniforms_within_operand_bounds(floats, needed)
        });
        known & needed == needed
    }

    /// Whether this invocation runs the fast form first.
    fn fast_first(&self) -> bool {
        match self.fast_policy {
            FastPolicy::Always => true,
            FastPolicy::Never => false,
            FastPolicy::Adaptive => self.fast_debt.fast_first(),
        }
    }

    /// Counts an invocation the fast form flagged (or did not end) and puts `ctx` back as the
    /// invocation started, for the exact function.
    #[cold]
    #[inline(never)]
    fn prepare_rerun(&self, ctx: &mut JitContext) {
        if self.fast_policy == FastPolicy::Adaptive {
            self.fast_debt.note_flagged();
        }
        self.fast_reruns
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ctx.reset_registers(self.temps);
        // SAFETY: a vertex invocation's output registers are valid for writes (every caller
        // sets `ctx.output` before executing).
        unsafe { *ctx.output = [[0.0; 4]; 16] };
    }

    /// Runs the compiled code on a prepared context; the error for a failed status. A vertex
    /// shader with a fast form runs it first, and the exact function after it only when its
    /// operand checks flagged an element or it did not end (from the registers and outputs
    /// the invocation started with).
    ///
    /// `comfortable` holds the float uniforms the caller knows to be
    /// `lanes::within_operand_bounds` (bit n: c`n`); `None`: the fast form checks the ones it
    /// reads here.
    fn execute(&self, ctx: &mut JitContext, comfortable: Option<u128>) -> Result<(), ExecError> {
        if let Some(fast) = self.fast_function
            && self.fast_form_finished(fast, ctx, comfortable)
        {
            return Ok(());
        }
        self.prepare_run(ctx);
        // SAFETY: the code only touches `ctx` and, through the EMIT/SETEMIT host functions,
        // the geometry run `ctx.geometry` points to, which the caller keeps alive.
        let code = unsafe { (self.function)(ctx) };
        if code == status::END {
            return Ok(());
        }
        Err(self.status_error(code, ctx.error_pc as u16))
    }

    /// Gives `ctx` the invocation's budget and, where the program uses them, empty stacks:
    /// what either function needs before it runs.
    #[inline(always)]
    fn prepare_run(&self, ctx: &mut JitContext) {
        ctx.budget = self.config.instruction_budget;
        if self.uses_stacks {
            ctx.reset_flow();
        }
    }

    /// The fast form's part of [`execute`](Self::execute), out of line so that a program
    /// without one (every f32-mode program) keeps a small `execute` its callers inline: runs
    /// the fast form if the uniforms and the policy let it, and says whether it finished the
    /// invocation (if not, `ctx` is back as the invocation started).
    #[inline(never)]
    fn fast_form_finished(
        &self,
        fast: CompiledFn,
        ctx: &mut JitContext,
        comfortable: Option<u128>,
    ) -> bool {
        if !self.uniforms_allow_fast_form(ctx, comfortable) || !self.fast_first() {
            return false;
        }
        self.prepare_run(ctx);
        ctx.checked_largest = [0; 4];
        ctx.checked_least = [lanes::MAGNITUDE_BITS; 4];
        // SAFETY: as in `execute`; a vertex shader's code touches nothing but `ctx` and what
        // it points to.
        let code = unsafe { fast(ctx) };
        let flagged = lanes::FlaggingSignedZeros::<(), ()>::any_flagged_accumulated(
            lower::FAST_INVOCATION_CHECKS,
            ctx.checked_largest,
            ctx.checked_least,
        );
        if code == status::END && !flagged {
            if self.fast_policy == FastPolicy::Adaptive {
                self.fast_debt.note_passed();
            }
            return true;
        }
        self.prepare_rerun(ctx);
        false
    }

    /// The error of a failed status.
    #[cold]
    #[inline(never)]
    fn status_error(&self, code: u32, pc: u16) -> ExecError {
        match code {
            status::BREAK_OUTSIDE_LOOP => ExecError::BreakOutsideLoop { pc },
            status::BUDGET => ExecError::InstructionBudget {
                budget: self.config.instruction_budget,
                pc,
            },
            status::INVALID_EMIT => ExecError::InvalidEmitVertex { pc },
            code => ExecError::Internal { pc, code },
        }
    }

    /// Points `ctx` at the invocation's read-only values (not copied: the compiled code reads
    /// them where `uniforms` keeps them).
    fn set_uniforms(ctx: &mut JitContext, uniforms: &Uniforms, bools: u16) {
        ctx.uniform = &uniforms.float;
        ctx.ints = uniforms.int;
        ctx.bools = bools as u32;
    }

    fn flow_registers(ctx: &JitContext) -> FlowRegisters {
        FlowRegisters {
            a0: ctx.a0,
            al: ctx.al,
            cmp: [ctx.cmp[0] != 0, ctx.cmp[1] != 0],
        }
    }

    /// Runs one vertex-shader invocation from zeroed registers.
    pub fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        with_context(|ctx| {
            Self::set_uniforms(ctx, uniforms, uniforms.bools);
            self.run_vertex_in(ctx, inputs)
        })
    }

    /// Runs one vertex-shader invocation from zeroed registers, writing o0-o15 to `outputs`
    /// (all +0 when it fails) and returning the final flow registers:
    /// [`run_vertex`](Self::run_vertex) for a caller that keeps its own output registers.
    pub fn run_vertex_into(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        with_context(|ctx| self.run_in_context(ctx, uniforms, inputs, outputs, None))
    }

    /// The body of [`run_vertex_into`](Self::run_vertex_into) in the thread's context, on the
    /// inputs at `inputs` (the caller's). Always inlined:
    /// called out of line, its result (flow registers or an error) went back through memory,
    /// written in pieces and read whole, and the read waited on the stores (measured: 4-9 ns a
    /// call, a quarter of a small program's `picajit_run_vertex`).
    #[inline(always)]
    fn run_in_context(
        &self,
        ctx: &mut JitContext,
        uniforms: &Uniforms,
        inputs: *const InputRegisters,
        outputs: &mut [Vec4; 16],
        comfortable: Option<u128>,
    ) -> Result<FlowRegisters, ExecError> {
        Self::set_uniforms(ctx, uniforms, uniforms.bools);
        ctx.input = inputs;
        ctx.reset_registers(self.temps);
        // The code writes the caller's registers: no copy, and no wide reads of what it
        // has just stored in 16-byte pieces.
        *outputs = [[0.0; 4]; 16];
        ctx.output = outputs;
        let outcome = self.execute(ctx, comfortable);
        if outcome.is_err() {
            *outputs = [[0.0; 4]; 16];
        }
        outcome.map(|()| Self::flow_registers(ctx))
    }

    /// [`run_vertex`](Self::run_vertex) in a context whose uniforms are set, reused across a
    /// batch: only the inputs and the zeroed registers change between vertices.
    fn run_vertex_in(
        &self,
        ctx: &mut JitContext,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        ctx.input = inputs;
        ctx.reset_registers(self.temps);
        ctx.bank = [[0.0; 4]; 16];
        ctx.output = &mut ctx.bank;
        self.execute(ctx, None)?;
        Ok(VertexResult {
            outputs: ctx.bank,
            flow: Self::flow_registers(ctx),
        })
    }

    /// Runs one geometry-shader invocation on the persistent `state`, sending what it emits to
    /// `sink`.
    pub fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        with_context(|ctx| {
            let bools = state.invocation_bools(uniforms.bools);
            Self::set_uniforms(ctx, uniforms, bools);
            ctx.input = inputs;
            ctx.temp = state.registers.temp;
            ctx.a0 = state.registers.flow.a0;
            ctx.al = state.registers.flow.al;
            ctx.cmp = state.registers.flow.cmp.map(u32::from);
            ctx.bank = state.banks[state.bank];
            ctx.output = &mut ctx.bank;
            let other_bank = state.banks[state.bank ^ 1];
            let mut run = GeometryRun {
                state,
                other_bank,
                sink,
            };
            ctx.geometry = (&mut run as *mut GeometryRun).cast();
            let outcome = self.execute(ctx, None);
            ctx.geometry = std::ptr::null_mut();
            let state = run.state;
            state.banks[state.bank] = ctx.bank;
            state.banks[state.bank ^ 1] = run.other_bank;
            state.registers.temp = ctx.temp;
            state.registers.flow = Self::flow_registers(ctx);
            state.invoked = true;
            outcome
        })
    }
}

thread_local! {
    /// The context the compiled code runs in on this thread, reused: a fresh one costs more
    /// than a short invocation.
    static CONTEXT: std::cell::Cell<Option<Box<JitContext>>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` on this thread's context (a new one when a call on this thread, from an emission
/// sink, holds it), then keeps the context for the next call. Its input, uniform and output
/// pointers are cleared on the way out: they point into the caller's values, which live only
/// through the call.
fn with_context<R>(f: impl FnOnce(&mut JitContext) -> R) -> R {
    let mut ctx = CONTEXT
        .with(|cell| cell.take())
        .unwrap_or_else(JitContext::new);
    let result = f(&mut ctx);
    ctx.input = std::ptr::null();
    ctx.uniform = std::ptr::null();
    ctx.output = std::ptr::null_mut();
    CONTEXT.with(|cell| cell.set(Some(ctx)));
    result
}

impl ShaderEngine for JitShader {
    fn name(&self) -> &'static str {
        "jit"
    }

    fn program(&self) -> &ShaderProgram {
        &self.program
    }

    fn config(&self) -> ExecConfig {
        self.config
    }

    fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        JitShader::run_vertex(self, uniforms, inputs)
    }

    fn host_paths(&self) -> Option<&dyn HostPaths> {
        Some(self)
    }

    fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        JitShader::run_geometry(self, state, uniforms, inputs, sink)
    }

    /// One context for the whole batch: the uniforms are set once, and each vertex only points
    /// at its inputs and zeroes its registers.
    fn run_batch(
        &self,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        with_context(|ctx| {
            Self::set_uniforms(ctx, uniforms, uniforms.bools);
            io.run_per_vertex(errors, |inputs| self.run_vertex_in(ctx, inputs));
        })
    }
}

/// The scalar JIT's paths for a caller running one vertex at a time: no result to copy, and
/// the inputs read where the caller converted them.
impl HostPaths for JitShader {
    fn run_vertex_into(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        JitShader::run_vertex_into(self, uniforms, inputs, outputs)
    }

    unsafe fn run_partial_knowing_into(
        &self,
        uniforms: &Uniforms,
        comfortable: u128,
        set: shader::exec::RegisterSet,
        inputs: &[std::mem::MaybeUninit<Vec4>; 16],
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        // The code reads, through the pointer, only input registers the program reads, all of
        // them in `set` and so initialized (this function's contract).
        let _ = set;
        let inputs: *const InputRegisters = inputs.as_ptr().cast();
        with_context(|ctx| self.run_in_context(ctx, uniforms, inputs, outputs, Some(comfortable)))
    }
}

impl fmt::Debug for JitShader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JitShader")
            .field("entry", &self.program.entry)
            .field("config", &self.config)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::FastDebt;

    /// Runs `invocations` through `debt`, flagging those `flags` says (by the count of fast
    /// runs so far), and returns how many ran the fast form.
    fn fast_runs(debt: &FastDebt, invocations: usize, flags: impl Fn(usize) -> bool) -> usize {
        let mut fast = 0;
        for _ in 0..invocations {
            if debt.fast_first() {
                fast += 1;
                if flags(fast) {
                    debt.note_flagged();
                } else {
                    debt.note_passed();
                }
            }
        }
        fast
    }

    #[test]
    fn the_fast_form_runs_always_where_flags_are_rare_and_seldom_where_they_are_not() {
        // One flag in six (a fixture with one edge-value vertex in six), and two close
        // together in sixteen: below the rate the debt stands still at, every invocation runs
        // the fast form.
        let rare = FastDebt::default();
        assert_eq!(fast_runs(&rare, 6000, |n| n % 6 == 0), 6000);
        let pair = FastDebt::default();
        assert_eq!(fast_runs(&pair, 1600, |n| n % 16 == 3 || n % 16 == 5), 1600);

        // Every invocation flags: once in FLAG_DEBT + 1 after the first two.
        let always = FastDebt::default();
        let period = (FastDebt::FLAG_DEBT + 1) as usize;
        let runs = fast_runs(&always, 2 + 100 * period, |_| true);
        assert_eq!(runs, 2 + 100);

        // One in four flags (above that rate): fewer than half run the fast form.
        let often = FastDebt::default();
        let runs = fast_runs(&often, 4000, |n| n % 4 == 0);
        assert!(runs < 4000 / 2, "{runs} of 4000 ran the fast form");

        // When the flags stop, the fast form is back within FLAG_DEBT + 1 invocations and
        // stays.
        let back = fast_runs(&always, period, |_| false);
        assert!(back >= 1);
        assert_eq!(fast_runs(&always, 1000, |_| false), 1000);
    }
}
