//! Running: one vertex, a batch of vertices in the caller's planes, and geometry-shader
//! invocations whose emissions go to the caller's callbacks.

use std::ffi::c_void;
use std::mem::MaybeUninit;

use super::program::EngineHandle;
use super::uniforms::UniformsHandle;
use super::{
    CapiError, OK, exec_status, failed, free_handle, guard, guard_infallible, guard_status,
    ptr_mut, ptr_ref, slice_mut, slice_of, store_handle,
};
use crate::exec::{
    BatchIo, EmitConfig, EmitSink, GeometryState, Hosted, RecordIo, RegisterSet, SoaInputs,
    SoaOutputs,
};
use crate::float24::{Precision, convert_f32, lanes};
use crate::program::{FlowRegisters, InputRegisters, ShaderKind, Uniforms, Vec4};

mod geometry;

pub use geometry::{
    EmitCallbacks, GeometryStateHandle, PrimitiveCallback, VertexCallback,
    picajit_geometry_state_create, picajit_geometry_state_free, picajit_geometry_state_reset,
    picajit_run_geometry,
};

/// `picajit_flow`: a0, aL and cmp at the end of an invocation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flow {
    /// a0.x, a0.y.
    pub a0: [i32; 2],
    /// aL.
    pub al: i32,
    /// cmp.x, cmp.y (0 or 1).
    pub cmp: [u8; 2],
    /// Always 0.
    pub reserved: [u8; 2],
}

impl From<FlowRegisters> for Flow {
    fn from(flow: FlowRegisters) -> Flow {
        Flow {
            a0: flow.a0,
            al: flow.al,
            cmp: flow.cmp.map(u8::from),
            reserved: [0; 2],
        }
    }
}

/// `picajit_vertex_error`: one failed vertex of a batch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VertexError {
    /// The vertex index in the batch.
    pub vertex: u32,
    /// Its `PICAJIT_ERROR_*` execution status.
    pub code: i32,
    /// The address where it failed.
    pub pc: u16,
    /// Always 0.
    pub reserved: u16,
}

/// `picajit_batch`: the caller's buffers for one batch of vertices (docs/c-abi.md, the plane
/// layout).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Batch {
    /// The number of vertices (at most `INT32_MAX`).
    pub count: usize,
    /// The input planes: for each register of `input_mask` in register order, planes x, y, z, w
    /// of `count` floats; plane k starts at `inputs + k * input_stride`.
    pub inputs: *const f32,
    /// The input registers present (bit n = vn); must include every register the program reads.
    pub input_mask: u16,
    /// The distance between input planes, in floats (at least `count`).
    pub input_stride: usize,
    /// The output planes, laid out like the inputs.
    pub outputs: *mut f32,
    /// The output registers wanted (bit n = on); only registers the program sends on.
    pub output_mask: u16,
    /// The distance between output planes, in floats (at least `count`).
    pub output_stride: usize,
    /// NULL, or `count` entries for each vertex's final a0/aL/cmp.
    pub flow: *mut Flow,
    /// Room for `error_capacity` failed vertices (NULL allowed when the capacity is 0).
    pub errors: *mut VertexError,
    /// How many entries `errors` has.
    pub error_capacity: usize,
}

/// `picajit_vertices`: one batch in an emulator's own layout (docs/c-abi.md): each vertex its
/// sixteen registers of four floats, in and out, with masks so that only the registers used are
/// copied.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Vertices {
    /// The number of vertices (at most `INT32_MAX`).
    pub count: usize,
    /// `count` vertices' v0-v15.
    pub inputs: *const InputRegisters,
    /// The input registers read (bit n = vn); must include every register the program reads.
    pub input_mask: u16,
    /// `count` vertices' o0-o15.
    pub outputs: *mut [Vec4; 16],
    /// The output registers written (bit n = on; only registers the program sends on); the
    /// others are left as they are.
    pub output_mask: u16,
    /// NULL, or `count` entries for each vertex's final a0/aL/cmp.
    pub flow: *mut Flow,
    /// Room for `error_capacity` failed vertices (NULL allowed when the capacity is 0).
    pub errors: *mut VertexError,
    /// How many entries `errors` has.
    pub error_capacity: usize,
}

#[inline]
fn require_stage(engine: &EngineHandle, stage: ShaderKind) -> Result<(), CapiError> {
    if engine.stage == stage {
        return Ok(());
    }
    Err(wrong_stage(engine.stage, stage))
}

/// The error of [`require_stage`], apart so that the check inlines.
#[cold]
fn wrong_stage(actual: ShaderKind, stage: ShaderKind) -> CapiError {
    let name = |kind| match kind {
        ShaderKind::Vertex => "a vertex shader",
        ShaderKind::Geometry => "a geometry shader",
    };
    CapiError::argument(
        "engine",
        format!(
            "the program is {}; this function runs {}",
            name(actual),
            name(stage)
        ),
    )
}

/// The registers of `mask`, as `v0, v3`.
fn register_list(prefix: char, mask: u16) -> String {
    RegisterSet(mask)
        .iter()
        .map(|n| format!("{prefix}{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many floats planes of `mask` span: `(planes - 1) * stride + count`; 0 when the stride is
/// smaller than the count (the batch then reports that).
fn planes_len(
    mask: u16,
    count: usize,
    stride: usize,
    argument: &'static str,
) -> Result<usize, CapiError> {
    let planes = RegisterSet(mask).planes();
    if stride < count || planes == 0 || count == 0 {
        return Ok(0);
    }
    (planes - 1)
        .checked_mul(stride)
        .and_then(|n| n.checked_add(count))
        .ok_or_else(|| {
            CapiError::argument(
                argument,
                format!("{planes} planes of stride {stride} exceed the address space"),
            )
        })
}

/// Fails when two of the caller's regions (name, address, bytes) overlap (one of them is
/// written).
#[inline(always)]
fn check_disjoint(regions: &[(&'static str, usize, usize)]) -> Result<(), CapiError> {
    for (i, &(a, start_a, len_a)) in regions.iter().enumerate() {
        for &(b, start_b, len_b) in &regions[i + 1..] {
            // A null region is reported as such by the slice checks that follow.
            let present = start_a != 0 && start_b != 0 && len_a != 0 && len_b != 0;
            if present
                && start_a < start_b.saturating_add(len_b)
                && start_b < start_a.saturating_add(len_a)
            {
                return Err(CapiError::argument(
                    b,
                    format!("overlaps {a} (the buffers of a batch must not overlap)"),
                ));
            }
        }
    }
    Ok(())
}

/// The registers of `set` of the caller's input floats as register values under a rounding
/// precision mode (F32 mode keeps the floats exactly, so its callers use the caller's registers
/// as they are), into `converted`: the mode's rounding and range rules for an f32 attribute
/// (docs/execution-model.md §7, `float24::convert_f32`). `set` holds the registers the program
/// can read (no result depends on the others).
///
/// First by [`lanes::round_flagging`], which has the rule's result wherever it flags nothing
/// (the small-value rule included) in half the operations: a NaN, infinite or too large
/// attribute is flagged, and then every register goes through the whole rule
/// ([`converted_register`]).
fn convert_registers(
    set: RegisterSet,
    precision: Precision,
    inputs: &InputRegisters,
    converted: &mut [MaybeUninit<Vec4>; 16],
) {
    let mut unusual = None;
    for index in set.iter() {
        converted[index] = MaybeUninit::new(lanes::round_flagging(
            &mut vinterp::Wide::<4>,
            inputs[index],
            precision,
            &mut unusual,
        ));
    }
    if any_flagged(unusual) {
        for index in set.iter() {
            converted[index] = MaybeUninit::new(converted_register(inputs[index], precision));
        }
    }
}

/// [`convert_registers`] for every vertex of a batch, with one test of the flags for all of
/// them: when one attribute is flagged, every vertex goes through the whole rule. (The set's
/// registers are listed once rather than walked for each vertex, which a batch of 16 needs,
/// 3-6% on small programs; one vertex's call is faster without the list, 4-9%, so the two
/// loops stay apart.)
fn convert_records(
    set: RegisterSet,
    precision: Precision,
    inputs: &[InputRegisters],
    converted: &mut [InputRegisters],
) {
    let mut registers = [0usize; 16];
    let mut len = 0;
    for n in set.iter() {
        registers[len] = n;
        len += 1;
    }
    let registers = &registers[..len];
    let mut unusual = None;
    for (vertex, out) in inputs.iter().zip(converted.iter_mut()) {
        for &n in registers {
            out[n] =
                lanes::round_flagging(&mut vinterp::Wide::<4>, vertex[n], precision, &mut unusual);
        }
    }
    if any_flagged(unusual) {
        for (vertex, out) in inputs.iter().zip(converted.iter_mut()) {
            for &n in registers {
                out[n] = converted_register(vertex[n], precision);
            }
        }
    }
}

/// Whether [`lanes::round_flagging`] flagged an element of the registers it converted.
#[inline(always)]
fn any_flagged(unusual: Option<[u32; 4]>) -> bool {
    unusual.is_some_and(|flags| flags.iter().any(|&flag| flag != 0))
}

/// One register of f32 attributes as the register value under `precision`: `convert_f32`'s
/// rule on four lanes at once ([`lanes::round`] on the vectorised interpreter's vectors in the
/// rounding modes; F32 mode keeps the floats exactly, NaN payloads included).
#[inline(always)]
fn converted_register(register: Vec4, precision: Precision) -> Vec4 {
    if precision == Precision::F32 {
        register
    } else {
        lanes::round(&mut vinterp::Wide::<4>, register, precision)
    }
}

/// A batch call's planes, kept for the next call on the thread.
#[derive(Default)]
struct Planes {
    /// The input planes as register values.
    inputs: Vec<f32>,
    /// The output planes of a call in the vertex layout.
    outputs: Vec<f32>,
}

thread_local! {
    static PLANES: std::cell::RefCell<Planes> = std::cell::RefCell::default();
}

/// Runs one vertex-shader invocation: o0-o15 to `outputs` and, when `flow` is not NULL, the
/// final a0/aL/cmp to `*flow`. The inputs are f32 attributes: each becomes a register value by
/// the engine's precision mode (docs/execution-model.md §7). Returns 0, or the execution status
/// of a failed invocation (its outputs and flow then +0 and zero).
///
/// # Safety
///
/// `engine` and `uniforms` are null or live handles; `inputs` is null or valid for 16×4 floats;
/// `outputs` is null or valid for writing 16×4 floats; `flow` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_run_vertex(
    engine: *const EngineHandle,
    uniforms: *const UniformsHandle,
    inputs: *const InputRegisters,
    outputs: *mut [Vec4; 16],
    flow: *mut Flow,
) -> i32 {
    const NAME: &str = "picajit_run_vertex";
    // The call an emulator makes per vertex, in one frame (`guard_status`); every failure
    // leaves at once through an out-of-line call that stores the message and gives the status.
    guard_status(NAME, || {
        // SAFETY: this function's contract.
        let call = match unsafe { VertexCall::checked(engine, uniforms, inputs, outputs, flow) } {
            Ok(call) => call,
            Err(error) => return failed(NAME, error),
        };
        let VertexCall {
            engine,
            uniforms,
            comfortable,
            inputs,
            outputs,
            flow,
        } = call;
        let runner = engine.vertex_engine();
        let outcome = if engine.precision == Precision::F32 {
            Hosted(runner).run_vertex_into(uniforms, inputs, outputs)
        } else {
            // Converted on this stack, only the registers the program can read (neither
            // cleared nor copied: the stack's lines are the hottest, and zeroing sixteen
            // registers or converting into the thread's context cost 2-3 ns a call).
            let (set, precision) = (engine.layout.inputs, engine.precision);
            let mut converted = [MaybeUninit::<Vec4>::uninit(); 16];
            convert_registers(set, precision, inputs, &mut converted);
            // SAFETY: `convert_registers` initialized the registers of `set`, the layout's
            // input registers, which hold every one the program reads.
            unsafe {
                Hosted(runner).run_partial_knowing_into(
                    uniforms,
                    comfortable,
                    set,
                    &converted,
                    outputs,
                )
            }
        };
        match outcome {
            Ok(registers) => {
                if let Some(flow) = flow {
                    *flow = registers.into();
                }
                OK
            }
            Err(error) => failed_invocation(NAME, error, flow),
        }
    })
}

/// The checked arguments of a [`picajit_run_vertex`] call.
struct VertexCall<'a> {
    engine: &'a EngineHandle,
    uniforms: &'a Uniforms,
    /// [`UniformsHandle::comfortable`].
    comfortable: u128,
    inputs: &'a InputRegisters,
    outputs: &'a mut [Vec4; 16],
    flow: Option<&'a mut Flow>,
}

impl<'a> VertexCall<'a> {
    /// The arguments, or the first one that is wrong.
    ///
    /// # Safety
    ///
    /// As [`picajit_run_vertex`].
    #[inline(always)]
    unsafe fn checked(
        engine: *const EngineHandle,
        uniforms: *const UniformsHandle,
        inputs: *const InputRegisters,
        outputs: *mut [Vec4; 16],
        flow: *mut Flow,
    ) -> Result<VertexCall<'a>, CapiError> {
        // SAFETY: null or a live handle (this function's contract).
        let engine = unsafe { ptr_ref(engine, "engine") }?;
        // SAFETY: null or a live handle (this function's contract).
        let handle = unsafe { ptr_ref(uniforms, "uniforms") }?;
        // SAFETY: null or valid for 16×4 floats (this function's contract).
        let inputs = unsafe { ptr_ref(inputs, "inputs") }?;
        // SAFETY: null or valid for writing 16×4 floats (this function's contract).
        let outputs = unsafe { ptr_mut(outputs, "outputs") }?;
        let flow = if flow.is_null() {
            None
        } else {
            // SAFETY: not null; valid for a write (this function's contract).
            Some(unsafe { ptr_mut(flow, "flow") }?)
        };
        require_stage(engine, ShaderKind::Vertex)?;
        Ok(VertexCall {
            engine,
            uniforms: handle.for_engine(engine.precision)?,
            comfortable: handle.comfortable(),
            inputs,
            outputs,
            flow,
        })
    }
}

/// The end of a call whose invocation failed: the flow registers zero, the message stored,
/// the status returned (the outputs are +0 already).
#[cold]
#[inline(never)]
fn failed_invocation(
    function: &'static str,
    error: crate::exec::ExecError,
    flow: Option<&mut Flow>,
) -> i32 {
    if let Some(flow) = flow {
        *flow = FlowRegisters::default().into();
    }
    failed(function, error.into())
}

/// Runs a batch of vertex-shader invocations from the caller's input planes into its output
/// planes (see [`Batch`]). Returns the number of failed vertices (0 or more; the first
/// `error_capacity` of them are described in `errors`, in vertex order; a failed vertex's
/// outputs are +0), or a negative status when the arguments are wrong (then nothing is written).
///
/// # Safety
///
/// `engine` and `uniforms` are null or live handles; `batch` is null or valid, and its buffers
/// are valid for the extents its counts, masks and strides give, do not overlap, and are not
/// used by anything else during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_run_batch(
    engine: *const EngineHandle,
    uniforms: *const UniformsHandle,
    batch: *const Batch,
) -> i32 {
    guard("picajit_run_batch", || {
        // SAFETY: null or a live handle (this function's contract).
        let engine = unsafe { ptr_ref(engine, "engine") }?;
        // SAFETY: null or a live handle (this function's contract).
        let uniforms = unsafe { ptr_ref(uniforms, "uniforms") }?;
        // SAFETY: null or valid (this function's contract).
        let batch = *unsafe { ptr_ref(batch, "batch") }?;
        let count = batch.count;
        let names = ["batch->count", "batch->input_mask", "batch->output_mask"];
        check_batch(engine, count, batch.input_mask, batch.output_mask, names)?;
        let input_len = planes_len(
            batch.input_mask,
            count,
            batch.input_stride,
            "batch->input_stride",
        )?;
        let output_len = planes_len(
            batch.output_mask,
            count,
            batch.output_stride,
            "batch->output_stride",
        )?;
        let main = [
            (
                "batch->inputs",
                batch.inputs as usize,
                input_len.saturating_mul(4),
            ),
            (
                "batch->outputs",
                batch.outputs as usize,
                output_len.saturating_mul(4),
            ),
        ];
        let sides = ["batch->flow", "batch->errors"];
        let flow_len = check_batch_buffers(
            main,
            sides,
            count,
            batch.flow,
            batch.errors,
            batch.error_capacity,
        )?;
        let uniforms = uniforms.for_engine(engine.precision)?;
        // SAFETY: valid for `input_len` floats (this function's contract: the extent the mask,
        // stride and count give), not written by anyone during the call.
        let input_data = unsafe { slice_of(batch.inputs, input_len, "batch->inputs") }?;
        // SAFETY: valid for `output_len` floats, disjoint from the other buffers (checked) and
        // used by nothing else (this function's contract).
        let output_data = unsafe { slice_mut(batch.outputs, output_len, "batch->outputs") }?;
        // SAFETY: null, or valid for `count` entries and unshared (this function's contract).
        let flow_out = unsafe { slice_mut(batch.flow, flow_len, sides[0]) }?;
        // SAFETY: null with capacity 0, or valid for `error_capacity` entries and unshared
        // (this function's contract).
        let errors_out = unsafe { slice_mut(batch.errors, batch.error_capacity, sides[1]) }?;

        // The inputs are f32 attributes: converted to register values (docs/execution-model.md
        // §7) into a buffer kept for the next call, unless the mode keeps them as they are.
        let precision = engine.precision;
        PLANES.with_borrow_mut(|planes| {
            let input_data = if precision == Precision::F32 {
                input_data
            } else {
                planes.inputs.clear();
                planes
                    .inputs
                    .extend(input_data.iter().map(|&x| convert_f32(x, precision)));
                &planes.inputs[..]
            };
            let inputs = SoaInputs::new(
                input_data,
                RegisterSet(batch.input_mask),
                count,
                batch.input_stride,
            )?;
            let outputs = SoaOutputs::new(
                output_data,
                RegisterSet(batch.output_mask),
                count,
                batch.output_stride,
            )?;
            run_planes(engine, uniforms, inputs, outputs, flow_out, errors_out)
        })
    })
}

/// Runs a batch in an emulator's own layout (see [`Vertices`]): each vertex's registers of
/// `input_mask` are read (converted as [`picajit_run_vertex`] converts them) and its registers
/// of `output_mask` written, the others left as they are. Returns the number of failed vertices
/// (0 or more; the first `error_capacity` of them are described in `errors`, in vertex order; a
/// failed vertex's masked outputs are +0), or a negative status when the arguments are wrong
/// (then nothing is written).
///
/// # Safety
///
/// `engine` and `uniforms` are null or live handles; `vertices` is null or valid, and its
/// buffers are valid for `count` vertices (`flow` for `count` entries, `errors` for
/// `error_capacity`), do not overlap, and are not used by anything else during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_run_vertices(
    engine: *const EngineHandle,
    uniforms: *const UniformsHandle,
    vertices: *const Vertices,
) -> i32 {
    guard("picajit_run_vertices", || {
        // SAFETY: null or a live handle (this function's contract).
        let engine = unsafe { ptr_ref(engine, "engine") }?;
        // SAFETY: null or a live handle (this function's contract).
        let uniforms = unsafe { ptr_ref(uniforms, "uniforms") }?;
        // SAFETY: null or valid (this function's contract).
        let batch = *unsafe { ptr_ref(vertices, "vertices") }?;
        let count = batch.count;
        let names = [
            "vertices->count",
            "vertices->input_mask",
            "vertices->output_mask",
        ];
        check_batch(engine, count, batch.input_mask, batch.output_mask, names)?;
        let bytes = count.saturating_mul(size_of::<InputRegisters>());
        let main = [
            ("vertices->inputs", batch.inputs as usize, bytes),
            ("vertices->outputs", batch.outputs as usize, bytes),
        ];
        let sides = ["vertices->flow", "vertices->errors"];
        let flow_len = check_batch_buffers(
            main,
            sides,
            count,
            batch.flow,
            batch.errors,
            batch.error_capacity,
        )?;
        let uniforms = uniforms.for_engine(engine.precision)?;
        // SAFETY: valid for `count` vertices, not written by anyone during the call (this
        // function's contract).
        let input_vertices = unsafe { slice_of(batch.inputs, count, "vertices->inputs") }?;
        // SAFETY: valid for `count` vertices, disjoint from the other buffers (checked) and
        // used by nothing else (this function's contract).
        let output_vertices = unsafe { slice_mut(batch.outputs, count, "vertices->outputs") }?;
        // SAFETY: null, or valid for `count` entries and unshared (this function's contract).
        let flow_out = unsafe { slice_mut(batch.flow, flow_len, sides[0]) }?;
        // SAFETY: null with capacity 0, or valid for `error_capacity` entries and unshared
        // (this function's contract).
        let errors_out = unsafe { slice_mut(batch.errors, batch.error_capacity, sides[1]) }?;

        let precision = engine.precision;
        let input_set = RegisterSet(batch.input_mask);
        let output_set = RegisterSet(batch.output_mask);
        if output_set == engine.layout.outputs
            && engine.records_worth_trying()
            && let Some(failed) = run_records(
                engine,
                uniforms,
                input_vertices,
                output_vertices,
                flow_out,
                errors_out,
            )?
        {
            return Ok(failed);
        }
        PLANES.with_borrow_mut(|planes| {
            let inputs =
                vertices_to_planes(input_vertices, input_set, precision, &mut planes.inputs);
            // Every element is written by the run (docs: a batch writes every vertex's
            // outputs), so what a longer earlier call left is not cleared.
            let output_len = output_set.planes() * count;
            if planes.outputs.len() < output_len {
                planes.outputs.resize(output_len, 0.0);
            }
            let outputs = &mut planes.outputs[..output_len];
            let inputs = SoaInputs::new(inputs, input_set, count, count)?;
            let soa_outputs = SoaOutputs::new(outputs, output_set, count, count)?;
            let failed = run_planes(engine, uniforms, inputs, soa_outputs, flow_out, errors_out)?;
            planes_to_vertices(outputs, output_set, output_vertices);
            Ok(failed)
        })
    })
}

thread_local! {
    /// A batch call's attributes as register values, kept for the next call on the thread.
    static RECORDS: std::cell::RefCell<Vec<InputRegisters>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs a checked batch of vertex records (its output mask the program's) on the engine's
/// record path, if it has one ready (the kernel reads the records and writes the caller's
/// outputs in place, with no planes between): in F32 mode from the caller's registers, in the
/// float24 modes from the layout's input registers converted into a buffer of the thread's.
/// `None` when the engine did not run them (the caller lays the batch out in planes); else the
/// number of failed vertices, reported as [`run_planes`] does.
fn run_records(
    engine: &EngineHandle,
    uniforms: &Uniforms,
    inputs: &[InputRegisters],
    outputs: &mut [[Vec4; 16]],
    flow_out: &mut [Flow],
    errors_out: &mut [VertexError],
) -> Result<Option<i32>, CapiError> {
    let count = inputs.len();
    let mut flow = (!flow_out.is_empty()).then(|| vec![FlowRegisters::default(); count]);
    let mut errors = Vec::new();
    let written = engine.layout.outputs;
    let ran = if engine.precision == Precision::F32 {
        let mut io = RecordIo::new(inputs, outputs, written, flow.as_deref_mut())?;
        Hosted(&*engine.engine).run_records(uniforms, &mut io, &mut errors)
    } else {
        RECORDS.with_borrow_mut(|converted| {
            if converted.len() < count {
                converted.resize(count, [[0.0; 4]; 16]);
            }
            let converted = &mut converted[..count];
            // Only the registers the program can read: no result depends on the others.
            convert_records(engine.layout.inputs, engine.precision, inputs, converted);
            let mut io = RecordIo::new(converted, outputs, written, flow.as_deref_mut())?;
            Ok::<_, CapiError>(Hosted(&*engine.engine).run_records(uniforms, &mut io, &mut errors))
        })?
    };
    engine.note_records(ran);
    if !ran {
        return Ok(None);
    }
    Ok(Some(report_batch(flow, flow_out, &errors, errors_out)))
}

/// The registers of `set` of each vertex as register values (an f32 attribute's conversion in
/// the mode, docs/execution-model.md §7) in `planes` (grown when short, never cleared: every
/// element of the result is written): plane `4 * slot + lane` of the `vertices.len()` vertices.
/// Four vertices at a time: a 4x4 transposition per register, then each column converted as
/// one vector ([`converted_register`]).
fn vertices_to_planes<'p>(
    vertices: &[InputRegisters],
    set: RegisterSet,
    precision: Precision,
    planes: &'p mut Vec<f32>,
) -> &'p [f32] {
    let count = vertices.len();
    let len = set.planes() * count;
    if planes.len() < len {
        planes.resize(len, 0.0);
    }
    let planes = &mut planes[..len];
    let whole = count / 4 * 4;
    for (slot, n) in set.iter().enumerate() {
        let planes = &mut planes[4 * slot * count..][..4 * count];
        for i in (0..whole).step_by(4) {
            let rows = std::array::from_fn(|k| vertices[i + k][n]);
            for (lane, column) in transposed(rows).into_iter().enumerate() {
                let column = converted_register(column, precision);
                planes[lane * count + i..][..4].copy_from_slice(&column);
            }
        }
        for (i, vertex) in vertices.iter().enumerate().skip(whole) {
            for (lane, &value) in vertex[n].iter().enumerate() {
                planes[lane * count + i] = convert_f32(value, precision);
            }
        }
    }
    planes
}

/// Writes the planes of `set` (as [`vertices_to_planes`] lays them out) to the registers of
/// each vertex; the other registers keep what they hold. Four vertices at a time: the four
/// planes of a register read as rows and transposed, one store per register.
fn planes_to_vertices(planes: &[f32], set: RegisterSet, vertices: &mut [[Vec4; 16]]) {
    let count = vertices.len();
    let whole = count / 4 * 4;
    for (slot, n) in set.iter().enumerate() {
        let planes = &planes[4 * slot * count..][..4 * count];
        for i in (0..whole).step_by(4) {
            let rows = std::array::from_fn(|lane| {
                let mut row = [0.0; 4];
                row.copy_from_slice(&planes[lane * count + i..][..4]);
                row
            });
            for (vertex, register) in vertices[i..i + 4].iter_mut().zip(transposed(rows)) {
                vertex[n] = register;
            }
        }
        for (i, vertex) in vertices.iter_mut().enumerate().skip(whole) {
            vertex[n] = std::array::from_fn(|lane| planes[lane * count + i]);
        }
    }
}

/// The columns of the 4x4 matrix `rows`: element `k` of result `j` is element `j` of row `k`.
#[inline(always)]
fn transposed(rows: [Vec4; 4]) -> [Vec4; 4] {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_loadu_ps, _mm_movehl_ps, _mm_movelh_ps, _mm_storeu_ps, _mm_unpackhi_ps,
            _mm_unpacklo_ps,
        };
        // SAFETY: SSE is part of x86_64; the loads and stores are of whole [f32; 4]s.
        unsafe {
            let [a, b, c, d] = rows.map(|row| _mm_loadu_ps(row.as_ptr()));
            let ab_low = _mm_unpacklo_ps(a, b);
            let cd_low = _mm_unpacklo_ps(c, d);
            let ab_high = _mm_unpackhi_ps(a, b);
            let cd_high = _mm_unpackhi_ps(c, d);
            let columns = [
                _mm_movelh_ps(ab_low, cd_low),
                _mm_movehl_ps(cd_low, ab_low),
                _mm_movelh_ps(ab_high, cd_high),
                _mm_movehl_ps(cd_high, ab_high),
            ];
            columns.map(|column| {
                let mut out = [0.0; 4];
                _mm_storeu_ps(out.as_mut_ptr(), column);
                out
            })
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::array::from_fn(|j| std::array::from_fn(|k| rows[k][j]))
    }
}

/// Checks that no buffer of a batch call overlaps another: `main` are the inputs and outputs
/// (name, address, bytes), `sides` the names of the flow and error arguments, the flow wanted
/// (`count` entries) when `flow` is not null. Returns the flow's length.
#[inline(always)]
fn check_batch_buffers(
    main: [(&'static str, usize, usize); 2],
    sides: [&'static str; 2],
    count: usize,
    flow: *mut Flow,
    errors: *mut VertexError,
    error_capacity: usize,
) -> Result<usize, CapiError> {
    let flow_len = if flow.is_null() { 0 } else { count };
    check_disjoint(&[
        main[0],
        main[1],
        (
            sides[0],
            flow as usize,
            flow_len.saturating_mul(size_of::<Flow>()),
        ),
        (
            sides[1],
            errors as usize,
            error_capacity.saturating_mul(size_of::<VertexError>()),
        ),
    ])?;
    Ok(flow_len)
}

/// The checks every batch call makes on its count and masks against the program's layout;
/// `names` are the arguments' names (count, input mask, output mask) for the messages.
fn check_batch(
    engine: &EngineHandle,
    count: usize,
    input_mask: u16,
    output_mask: u16,
    names: [&'static str; 3],
) -> Result<(), CapiError> {
    require_stage(engine, ShaderKind::Vertex)?;
    if count > i32::MAX as usize {
        return Err(CapiError::argument(
            names[0],
            format!("{count} vertices: a batch has at most INT32_MAX"),
        ));
    }
    let layout = engine.layout;
    let missing = layout.inputs.0 & !input_mask;
    if missing != 0 {
        return Err(CapiError::argument(
            names[1],
            format!(
                "{input_mask:#06x} lacks {} that the program reads (give every register of the \
                 layout's input mask {:#06x}; (0, 0, 0, 1) is the value of an unset input)",
                register_list('v', missing),
                layout.inputs.0
            ),
        ));
    }
    let extra = output_mask & !layout.outputs.0;
    if extra != 0 {
        return Err(CapiError::argument(
            names[2],
            format!(
                "{output_mask:#06x} asks for {} that the program does not send on (its output \
                 mask is {:#06x})",
                register_list('o', extra),
                layout.outputs.0
            ),
        ));
    }
    Ok(())
}

/// Runs a checked batch on its planes: outputs to `outputs`, the flow registers to `flow_out`
/// (empty: not wanted) and the first failures to `errors_out`; the number of failed vertices.
fn run_planes(
    engine: &EngineHandle,
    uniforms: &Uniforms,
    inputs: SoaInputs<'_>,
    outputs: SoaOutputs<'_>,
    flow_out: &mut [Flow],
    errors_out: &mut [VertexError],
) -> Result<i32, CapiError> {
    let count = inputs.count();
    let mut flow = (!flow_out.is_empty()).then(|| vec![FlowRegisters::default(); count]);
    let mut io = BatchIo::new(inputs, outputs, flow.as_deref_mut())?;
    let mut errors = Vec::new();
    engine.engine.run_batch(uniforms, &mut io, &mut errors);
    Ok(report_batch(flow, flow_out, &errors, errors_out))
}

/// A batch's flow registers (when wanted) and first failures in the caller's entries; the
/// number of failed vertices.
fn report_batch(
    flow: Option<Vec<FlowRegisters>>,
    flow_out: &mut [Flow],
    errors: &[(usize, crate::exec::ExecError)],
    errors_out: &mut [VertexError],
) -> i32 {
    if let Some(flow) = flow {
        for (entry, registers) in flow_out.iter_mut().zip(flow) {
            *entry = registers.into();
        }
    }
    for (entry, (vertex, error)) in errors_out.iter_mut().zip(errors) {
        let (code, pc) = exec_status(error);
        *entry = VertexError {
            vertex: *vertex as u32,
            code,
            pc,
            reserved: 0,
        };
    }
    errors.len() as i32
}

#[cfg(test)]
mod tests;
