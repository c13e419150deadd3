//! The memory the compiled code works on, and the host functions it calls.
//!
//! Compiled code touches only [`JitContext`]: registers at fixed offsets, and a 128-entry float
//! uniform table whose entries 96-127 hold (1, 1, 1, 1), so a relatively addressed read is one
//! masked load with no bounds check to get wrong. Control flow at the addresses where a scope can
//! end, and the geometry-shader emission, call back into Rust ([`picajit_advance`],
//! [`picajit_emit`], [`picajit_setemit`]), which run the same [`FlowDriver`] as the interpreter.

use crate::float24::transcendental;
use crate::interp::{
    EmitConfig, EmittedVertex, FlowDriver, FlowInputs, GeometryResult, GeometryState, Primitive,
};
use crate::isa::Instruction;
use crate::program::Vec4;

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
    /// A jump to an address the compiler did not prepare: a compiler bug.
    pub const INTERNAL: u32 = 4;
    /// [`super::picajit_advance`] results at or above this are status codes plus this base.
    pub const ADVANCE_BASE: u32 = 0x1_0000;
}

/// Registers and state of one invocation, as the compiled code sees them.
#[repr(C, align(16))]
pub struct JitContext {
    /// r0-r15.
    pub temp: [Vec4; 16],
    /// o0-o15 (for a geometry shader, the current output bank).
    pub output: [Vec4; 16],
    /// v0-v15.
    pub input: [Vec4; 16],
    /// c0-c95, then 32 entries of (1, 1, 1, 1) for relative reads past c95.
    pub uniform: [Vec4; 128],
    /// a0.x, a0.y.
    pub a0: [i32; 2],
    /// aL.
    pub al: i32,
    /// cmp.x, cmp.y as 0 or 1.
    pub cmp: [u32; 2],
    /// Address of the instruction that failed.
    pub error_pc: u32,
    /// Instructions the invocation may still execute.
    pub budget_left: u64,
    /// The Rust-side state the host functions use.
    pub runtime: *mut Runtime<'static>,
}

/// The state the host functions need besides the registers.
pub struct Runtime<'a> {
    /// The control-flow machine.
    pub driver: FlowDriver,
    /// The decoded program memory.
    pub decoded: &'a [Instruction],
    /// Bool uniforms as the invocation sees them.
    pub bools: u16,
    /// Int uniforms.
    pub ints: [[u8; 4]; 4],
    /// Geometry shaders: the persistent state, the bank not being written, and what was sent.
    pub geometry: Option<GeometryRun<'a>>,
}

/// A geometry-shader invocation's emission state.
pub struct GeometryRun<'a> {
    /// The persistent state (its `banks` are synchronised before and after the run).
    pub state: &'a mut GeometryState,
    /// The output bank not currently in `JitContext::output`.
    pub other_bank: [Vec4; 16],
    /// What the invocation sent.
    pub result: GeometryResult,
}

impl JitContext {
    /// A zeroed context with the ones past c95.
    pub fn new() -> Box<JitContext> {
        Box::new(JitContext {
            temp: [[0.0; 4]; 16],
            output: [[0.0; 4]; 16],
            input: [[0.0; 4]; 16],
            uniform: [[1.0; 4]; 128],
            a0: [0; 2],
            al: 0,
            cmp: [0; 2],
            error_pc: 0,
            budget_left: 0,
            runtime: std::ptr::null_mut(),
        })
    }
}

/// Runs the control part of the instruction at `pc` (see [`FlowDriver::advance`]). Returns the
/// next address, or [`status::ADVANCE_BASE`] plus a status code.
///
/// # Safety
/// `ctx` must point to a live [`JitContext`] whose `runtime` points to a live [`Runtime`].
pub unsafe extern "C" fn picajit_advance(ctx: *mut JitContext, pc: u32) -> u32 {
    // SAFETY: the caller (the compiled code, called by `JitShader`) passes the context it was
    // given, whose runtime outlives the call.
    let ctx = unsafe { &mut *ctx };
    let runtime = unsafe { &mut *ctx.runtime };
    // Compiled code moves between addresses where no scope can end without telling the driver;
    // its stacks are unchanged there, so only the PC needs setting.
    runtime.driver.jump_to(pc as u16);
    let inst = runtime.decoded[pc as usize];
    let inputs = FlowInputs {
        cmp: [ctx.cmp[0] != 0, ctx.cmp[1] != 0],
        bools: runtime.bools,
        ints: &runtime.ints,
    };
    match runtime.driver.advance(&inst, inputs, &mut ctx.al) {
        Ok(true) => runtime.driver.pc() as u32,
        Ok(false) => status::ADVANCE_BASE + status::END,
        Err(_) => {
            ctx.error_pc = pc;
            status::ADVANCE_BASE + status::BREAK_OUTSIDE_LOOP
        }
    }
}

/// SETEMIT: `packed` = vertex | primitive << 8 | winding << 16. No effect in a vertex shader.
///
/// # Safety
/// As [`picajit_advance`].
pub unsafe extern "C" fn picajit_setemit(ctx: *mut JitContext, packed: u32) {
    // SAFETY: as picajit_advance.
    let runtime = unsafe { &mut *(*ctx).runtime };
    if let Some(run) = runtime.geometry.as_mut() {
        run.state.emit = EmitConfig {
            vertex: (packed & 0xFF) as u8,
            primitive: packed & 0x100 != 0,
            winding: packed & 0x1_0000 != 0,
        };
    }
}

/// EMIT: send the current bank to its slot (and a triangle), then switch banks. Returns 0, or
/// [`status::INVALID_EMIT`] for vertex id 3. No effect in a vertex shader.
///
/// # Safety
/// As [`picajit_advance`].
pub unsafe extern "C" fn picajit_emit(ctx: *mut JitContext, pc: u32) -> u32 {
    // SAFETY: as picajit_advance.
    let ctx = unsafe { &mut *ctx };
    let runtime = unsafe { &mut *ctx.runtime };
    let Some(run) = runtime.geometry.as_mut() else {
        return 0;
    };
    let config = run.state.emit;
    if config.vertex > 2 {
        ctx.error_pc = pc;
        return status::INVALID_EMIT;
    }
    let outputs = ctx.output;
    run.state.slots[config.vertex as usize] = outputs;
    run.result.vertices.push(EmittedVertex { config, outputs });
    if config.primitive {
        run.result.primitives.push(Primitive {
            winding: config.winding,
            vertices: run.state.slots,
        });
    }
    std::mem::swap(&mut ctx.output, &mut run.other_bank);
    run.state.bank ^= 1;
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
