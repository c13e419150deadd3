//! Background compiles: where an engine's compiles for a draw's uniforms stand, and waiting
//! for them (the auto engine compiles its batch kernel per bool and int uniforms).

use super::program::EngineHandle;
use super::uniforms::UniformsHandle;
use super::{
    COMPILE_COLD, COMPILE_FAILED, COMPILE_READY, COMPILE_RUNNING, OK, guard, ptr_mut, ptr_ref,
    set_last_error,
};
use crate::exec::{CompileStatus, Hosted};

/// Writes where the engine's background compiles stand for calls with `uniforms` to `*status`:
/// `PICAJIT_COMPILE_READY`, `_FAILED` (the reason is then the thread's
/// `picajit_last_error_message`, and calls keep running, with the same bits, on the engine that
/// needs no compile), `_COLD` (waiting for the program to be hot) or `_RUNNING`. The auto engine
/// compiles its batch kernel per bool and int uniforms, hence the uniforms.
///
/// # Safety
///
/// `engine` and `uniforms` are null or live handles; `status` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_engine_compile_status(
    engine: *const EngineHandle,
    uniforms: *const UniformsHandle,
    status: *mut u32,
) -> i32 {
    guard("picajit_engine_compile_status", || {
        // SAFETY: null or a live handle (this function's contract).
        let engine = unsafe { ptr_ref(engine, "engine") }?;
        // SAFETY: null or a live handle (this function's contract).
        let uniforms = unsafe { ptr_ref(uniforms, "uniforms") }?;
        // SAFETY: null or valid for a write (this function's contract).
        let status = unsafe { ptr_mut(status, "status") }?;
        let uniforms = uniforms.for_engine(engine.precision)?;
        *status = match Hosted(&*engine.engine).compile_status(uniforms) {
            CompileStatus::Ready => COMPILE_READY,
            CompileStatus::Failed(reason) => {
                set_last_error(format!(
                    "picajit_engine_compile_status: the compile failed: {reason}"
                ));
                COMPILE_FAILED
            }
            CompileStatus::Cold => COMPILE_COLD,
            CompileStatus::Compiling => COMPILE_RUNNING,
        };
        Ok(OK)
    })
}

/// Starts every compile the engine left for later for calls with `uniforms` (a cold one
/// included) and waits until they have finished, so that the next call runs at full speed
/// (`PICAJIT_COMPILE_READY` after it, or `_FAILED`). Returns at once when nothing is left.
///
/// # Safety
///
/// `engine` and `uniforms` are null or live handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_engine_wait_compiled(
    engine: *const EngineHandle,
    uniforms: *const UniformsHandle,
) -> i32 {
    guard("picajit_engine_wait_compiled", || {
        // SAFETY: null or a live handle (this function's contract).
        let engine = unsafe { ptr_ref(engine, "engine") }?;
        // SAFETY: null or a live handle (this function's contract).
        let uniforms = unsafe { ptr_ref(uniforms, "uniforms") }?;
        let uniforms = uniforms.for_engine(engine.precision)?;
        Hosted(&*engine.engine).warm_up(uniforms);
        Ok(OK)
    })
}
