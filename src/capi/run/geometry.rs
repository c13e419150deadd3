//! Geometry-shader invocations from C: the draw's state, and the callbacks its emissions go to.

use super::*;

/// `picajit_vertex_fn`: receives a vertex sent by EMIT (the SETEMIT vertex id, primitive and
/// winding flags, and the emitting bank's o0-o15).
pub type VertexCallback = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        vertex_id: u32,
        primitive: u32,
        winding: u32,
        outputs: *const [f32; 4],
    ),
>;

/// `picajit_primitive_fn`: receives a triangle (the winding flag and the three vertex slots,
/// o0-o15 each, in slot order).
pub type PrimitiveCallback =
    Option<unsafe extern "C" fn(user: *mut c_void, winding: u32, slots: *const [Vec4; 16])>;

/// `picajit_emit_callbacks`: where a geometry-shader invocation's emissions go.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct EmitCallbacks {
    /// Passed to each callback.
    pub user: *mut c_void,
    /// Called for each emitted vertex (NULL: ignored).
    pub vertex: VertexCallback,
    /// Called for each triangle, right after its vertex (NULL: ignored).
    pub primitive: PrimitiveCallback,
}

/// `picajit_geometry_state`: the state a geometry shader keeps across the invocations of a draw.
#[derive(Clone, Debug, Default)]
pub struct GeometryStateHandle(pub GeometryState);

/// An [`EmitSink`] that calls the caller's callbacks.
struct CallbackSink(EmitCallbacks);

impl EmitSink for CallbackSink {
    fn vertex(&mut self, config: EmitConfig, outputs: &[Vec4; 16]) {
        if let Some(vertex) = self.0.vertex {
            // SAFETY: the caller of `picajit_run_geometry` promised a valid function of this
            // signature; `outputs` lives through the call.
            unsafe {
                vertex(
                    self.0.user,
                    config.vertex.into(),
                    config.primitive.into(),
                    config.winding.into(),
                    outputs.as_ptr(),
                )
            }
        }
    }

    fn primitive(&mut self, winding: bool, slots: &[[Vec4; 16]; 3]) {
        if let Some(primitive) = self.0.primitive {
            // SAFETY: as in `vertex`; `slots` lives through the call.
            unsafe { primitive(self.0.user, winding.into(), slots.as_ptr()) }
        }
    }
}
/// Creates a fresh geometry-shader state (the start of a draw) in `*out`.
///
/// # Safety
///
/// `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_geometry_state_create(out: *mut *mut GeometryStateHandle) -> i32 {
    guard("picajit_geometry_state_create", || {
        // SAFETY: null or valid for a write (this function's contract).
        unsafe { store_handle(out, "out", GeometryStateHandle::default()) }
    })
}

/// Frees a geometry-shader state (NULL is ignored).
///
/// # Safety
///
/// `state` is null or a live state handle, used by no other call during or after this one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_geometry_state_free(state: *mut GeometryStateHandle) {
    // SAFETY: null or a live handle of this type (this function's contract).
    guard_infallible("picajit_geometry_state_free", (), || unsafe {
        free_handle(state)
    })
}

/// Resets a geometry-shader state to the start of a draw.
///
/// # Safety
///
/// `state` is null or a live state handle that no other call uses meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_geometry_state_reset(state: *mut GeometryStateHandle) -> i32 {
    guard("picajit_geometry_state_reset", || {
        // SAFETY: null or a live, unshared handle (this function's contract).
        let state = unsafe { ptr_mut(state, "state") }?;
        state.0 = GeometryState::default();
        Ok(OK)
    })
}

/// Runs one geometry-shader invocation on `state` with the sixteen input registers `inputs`,
/// calling `callbacks` (NULL: emissions are dropped) for each emitted vertex and triangle as it
/// is emitted. Returns 0, or the execution status of a failed invocation (the state keeps what
/// it reached, and what it emitted before failing has been delivered).
///
/// # Safety
///
/// `engine` and `uniforms` are null or live handles; `state` is null or a live state handle
/// that no other call uses meanwhile; `inputs` is null or valid for 16×4 floats; `callbacks` is
/// null or valid, its functions null or valid functions of their types that return normally
/// (no exception or longjmp through the library).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_run_geometry(
    engine: *const EngineHandle,
    state: *mut GeometryStateHandle,
    uniforms: *const UniformsHandle,
    inputs: *const InputRegisters,
    callbacks: *const EmitCallbacks,
) -> i32 {
    guard("picajit_run_geometry", || {
        // SAFETY: null or a live handle (this function's contract).
        let engine = unsafe { ptr_ref(engine, "engine") }?;
        // SAFETY: null or a live, unshared handle (this function's contract).
        let state = unsafe { ptr_mut(state, "state") }?;
        // SAFETY: null or a live handle (this function's contract).
        let uniforms = unsafe { ptr_ref(uniforms, "uniforms") }?;
        // SAFETY: null or valid for 16×4 floats (this function's contract).
        let inputs = unsafe { ptr_ref(inputs, "inputs") }?;
        let callbacks = if callbacks.is_null() {
            EmitCallbacks {
                user: std::ptr::null_mut(),
                vertex: None,
                primitive: None,
            }
        } else {
            // SAFETY: not null; valid (this function's contract).
            *unsafe { ptr_ref(callbacks, "callbacks") }?
        };
        require_stage(engine, ShaderKind::Geometry)?;
        let uniforms = uniforms.for_engine(engine.precision)?;
        let mut sink = CallbackSink(callbacks);
        engine
            .engine
            .run_geometry(&mut state.0, uniforms, inputs, &mut sink)?;
        Ok(OK)
    })
}
