//! The memory the compiled code works on, and the few host functions it calls.
//!
//! The compiled function keeps the registers in SSA values while it runs; [`JitContext`] is
//! where they come from and go to at the function's boundary (the geometry shader's persistent
//! state, the vertex shader's results), where the pointers to the read-only inputs and uniforms
//! are, and where the three control-flow stacks live. The inputs and the float uniforms are
//! read where the caller keeps them, never copied: an emulator running one vertex at a time
//! pays for neither a 1.5 KiB uniform copy nor an input copy per vertex. A relatively addressed
//! uniform read clamps its slot to c95 and selects (1, 1, 1, 1) for slots 96-127, so it needs
//! no bounds check to get wrong; every stack access masks its slot index with the stack's
//! depth - 1. The code therefore touches nothing but the context and the 16 input and 96
//! uniform registers its pointers name, whatever the program.
//!
//! The control-flow stacks are compiled code, not host calls: each is a ring of slots with a
//! wrapping `top` counter (the newest entry is in slot `top & (depth - 1)`) and a length capped
//! at the depth. A push onto a full stack overwrites its oldest slot, exactly the ring-buffer
//! behaviour of docs/execution-model.md §5.
//!
//! Only EMIT and SETEMIT (geometry-shader output, which touches Rust-side vectors) are host
//! calls, and EX2 and LG2 in a program with too many to inline
//! (`lower::INLINE_TRANSCENDENTALS`): the functions of [`shader::float24::transcendental`].

use shader::exec::{EmitConfig, EmitSink, GeometryState, RegisterSet};
use shader::float24::transcendental;
use shader::flow::{CALL_DEPTH, IF_DEPTH, LOOP_DEPTH};
use shader::program::{FLOAT_UNIFORMS, InputRegisters, Vec4};

/// Status codes the compiled function returns.
pub mod status {
    /// END was reached.
    pub const END: u32 = 0;
    /// BREAK with an empty loop stack (address in `JitContext::error_pc`).
    pub const BREAK_OUTSIDE_LOOP: u32 = 1;
    /// The instruction budget ran out (address in `JitContext::error_pc`).
    pub const BUDGET: u32 = 2;
    /// EMIT with vertex id 3 (address in `JitContext::error_pc`).
    pub const INVALID_EMIT: u32 = 3;
    /// Control reached an address the compiler proved unreachable: a compiler bug.
    pub const INTERNAL: u32 = 4;
}

/// One control-flow stack: `DEPTH` slots used as a ring (see the module documentation).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StackRing<const DEPTH: usize> {
    /// The entries, packed by the compiler (two 16-bit addresses each).
    pub slots: [u32; DEPTH],
    /// Wrapping counter: the newest entry is in `slots[top % DEPTH]`.
    pub top: u32,
    /// Number of entries (at most `DEPTH`).
    pub len: u32,
}

impl<const DEPTH: usize> StackRing<DEPTH> {
    /// No entries.
    fn empty(&mut self) {
        self.top = 0;
        self.len = 0;
    }
}

impl<const DEPTH: usize> Default for StackRing<DEPTH> {
    fn default() -> Self {
        StackRing {
            slots: [0; DEPTH],
            top: 0,
            len: 0,
        }
    }
}

/// The loop counters beside each LOOP-stack slot.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct LoopCounters {
    /// Passes left after the current one (starts at i.x).
    pub remaining: [u32; LOOP_DEPTH],
    /// aL += increment after each pass (i.z).
    pub increment: [u32; LOOP_DEPTH],
    /// aL before the LOOP started (restored when the loop exits inside another loop).
    pub previous_al: [i32; LOOP_DEPTH],
}

/// Registers and state of one invocation, as the compiled code sees them.
#[repr(C, align(16))]
pub struct JitContext {
    /// r0-r15 (in at the start, out at every exit).
    pub temp: [Vec4; 16],
    /// A whole invocation's fast function: the largest magnitude its operand checks met, per
    /// lane (docs/architecture.md, "Whole invocations on the fast path").
    pub checked_largest: [u32; 4],
    /// The least one, offset as `lanes::FlaggingSignedZeros` offsets it (a zero greatest).
    pub checked_least: [u32; 4],
    /// o0-o15 (for a geometry shader, the current output bank): [`bank`](Self::bank) or the
    /// caller's registers (no alignment beyond an f32's is assumed).
    pub output: *mut [Vec4; 16],
    /// v0-v15 (read only; no alignment beyond an f32's is assumed).
    pub input: *const InputRegisters,
    /// c0-c95 (read only; no alignment beyond an f32's is assumed).
    pub uniform: *const [Vec4; FLOAT_UNIFORMS],
    /// a0.x, a0.y.
    pub a0: [i32; 2],
    /// aL.
    pub al: i32,
    /// cmp.x, cmp.y as 0 or 1.
    pub cmp: [u32; 2],
    /// Bool uniforms as the invocation sees them (b15 set after a geometry shader's first run).
    pub bools: u32,
    /// Int uniforms i0-i3: (x, y, z, w) bytes.
    pub ints: [[u8; 4]; 4],
    /// The IF stack: entries `else | end << 16`.
    pub if_stack: StackRing<IF_DEPTH>,
    /// The CALL stack: entries `end | return << 16`.
    pub call_stack: StackRing<CALL_DEPTH>,
    /// The LOOP stack: entries `first body address | end << 16`.
    pub loop_stack: StackRing<LOOP_DEPTH>,
    /// The counters of the LOOP stack's slots.
    pub loop_counters: LoopCounters,
    /// Address of the instruction that failed.
    pub error_pc: u32,
    /// Instructions the invocation may execute.
    pub budget: u64,
    /// The geometry-shader emission state (null for a vertex shader).
    pub geometry: *mut GeometryRun<'static>,
    /// Output registers for callers that do not give their own.
    pub bank: [Vec4; 16],
}

/// A geometry-shader invocation's emission state, used by the EMIT and SETEMIT host functions.
pub struct GeometryRun<'a> {
    /// The persistent state (its `banks` are synchronised before and after the run).
    pub state: &'a mut GeometryState,
    /// The output bank not currently in `JitContext::output`.
    pub other_bank: [Vec4; 16],
    /// Where emitted vertices and primitives go.
    pub sink: &'a mut dyn EmitSink,
}

impl JitContext {
    /// A context with zeroed registers and empty stacks; its input and uniform pointers are
    /// null until the caller sets them.
    pub fn new() -> Box<JitContext> {
        Box::new(JitContext {
            temp: [[0.0; 4]; 16],
            checked_largest: [0; 4],
            checked_least: [0; 4],
            output: std::ptr::null_mut(),
            input: std::ptr::null(),
            uniform: std::ptr::null(),
            a0: [0; 2],
            al: 0,
            cmp: [0; 2],
            bools: 0,
            ints: [[0; 4]; 4],
            if_stack: StackRing::default(),
            call_stack: StackRing::default(),
            loop_stack: StackRing::default(),
            loop_counters: LoopCounters::default(),
            error_pc: 0,
            budget: 0,
            geometry: std::ptr::null_mut(),
            bank: [[0.0; 4]; 16],
        })
    }

    /// Zeroes the temporaries of `temps` (bit n: rN; the code never touches the others), a0,
    /// aL and cmp: a vertex shader's starting state but for its outputs, which the caller zeroes
    /// where it points [`output`](Self::output).
    pub fn reset_registers(&mut self, temps: u16) {
        for n in RegisterSet(temps).iter() {
            self.temp[n] = [0.0; 4];
        }
        self.a0 = [0; 2];
        self.al = 0;
        self.cmp = [0; 2];
    }

    /// Empties the stacks for a new invocation. Only their counters: a slot (and its loop
    /// counters) is read only after a push has written it.
    pub fn reset_flow(&mut self) {
        self.if_stack.empty();
        self.call_stack.empty();
        self.loop_stack.empty();
    }
}

/// SETEMIT: `packed` is [`EmitConfig::packed`].
///
/// # Safety
/// `ctx` must point to a live [`JitContext`] whose `geometry` is null or points to a live
/// [`GeometryRun`].
pub unsafe extern "C" fn picajit_setemit(ctx: *mut JitContext, packed: u32) {
    // SAFETY: the caller (the compiled code, called by `JitShader`) passes the context it was
    // given; its geometry run outlives the call.
    let Some(run) = (unsafe { (*ctx).geometry.as_mut() }) else {
        return;
    };
    run.state.emit = EmitConfig::unpacked(packed);
}

/// EMIT: [`GeometryState::emit`] with the current bank (already stored where `ctx.output`
/// points), then the two banks swap places. Returns 0, or [`status::INVALID_EMIT`] for vertex
/// id 3.
///
/// # Safety
/// As [`picajit_setemit`]; when `geometry` is not null, `output` points to a live bank that
/// nothing else borrows.
pub unsafe extern "C" fn picajit_emit(ctx: *mut JitContext, pc: u32) -> u32 {
    // SAFETY: as picajit_setemit.
    let ctx = unsafe { &mut *ctx };
    let Some(run) = (unsafe { ctx.geometry.as_mut() }) else {
        return 0;
    };
    // SAFETY: a geometry run points `output` at its own bank (this function's contract).
    let output = unsafe { &mut *ctx.output };
    if run.state.emit(output, pc as u16, &mut *run.sink).is_err() {
        ctx.error_pc = pc;
        return status::INVALID_EMIT;
    }
    std::mem::swap(output, &mut run.other_bank);
    0
}

/// EX2 of one value (the deterministic [`transcendental::exp2`]).
pub extern "C" fn picajit_exp2(x: f32) -> f32 {
    transcendental::exp2(x)
}

/// LG2 of one value (the deterministic [`transcendental::log2`]).
pub extern "C" fn picajit_log2(x: f32) -> f32 {
    transcendental::log2(x)
}
