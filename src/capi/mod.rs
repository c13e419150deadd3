//! The C ABI: `picajit_*` functions over opaque handles, for emulators written in C and C++.
//!
//! The header is `include/picajit.h` (kept by hand; `jit-tests/c_abi.rs` checks that it declares
//! exactly the functions exported here, with the same number of parameters, and that its structs
//! have the sizes of the `#[repr(C)]` types here). docs/c-abi.md describes ownership, threading,
//! the error model and the plane layout.
//!
//! Every function is thin: it checks and converts its arguments, calls the library
//! ([`crate::engine`], [`crate::exec`], [`crate::program`], [`crate::shbin`]) and maps the result
//! to a status. Every entry point runs inside [`std::panic::catch_unwind`], so no panic crosses
//! the boundary; a fallible function returns an `int32_t` status (0 or more on success, a
//! negative `PICAJIT_ERROR_*` code on failure) and leaves a message naming the function, the
//! argument and the problem in a thread-local buffer ([`picajit_last_error_message`]).
//!
//! Unsafe code lives only here, at the boundary: turning the caller's pointers into references
//! and slices (`ptr_ref`, `slice_of`, ...) and calling the caller's callbacks.

mod compile;
mod program;
mod run;
mod translate;
mod uniforms;

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{CString, c_char};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

pub use compile::{picajit_engine_compile_status, picajit_engine_wait_compiled};
pub use program::{
    CacheStats, Config, DvleInfo, EngineHandle, Layout, Program, ProgramCacheHandle, ShbinHandle,
    picajit_cache_clear, picajit_cache_create, picajit_cache_free, picajit_cache_get_stats,
    picajit_engine_create, picajit_engine_create_from_shbin, picajit_engine_free,
    picajit_engine_layout, picajit_engine_name, picajit_shbin_dvle_count, picajit_shbin_dvle_info,
    picajit_shbin_free, picajit_shbin_parse, picajit_shbin_program,
};
pub use run::{
    Batch, EmitCallbacks, Flow, GeometryStateHandle, PrimitiveCallback, VertexCallback,
    VertexError, Vertices, picajit_geometry_state_create, picajit_geometry_state_free,
    picajit_geometry_state_reset, picajit_run_batch, picajit_run_geometry, picajit_run_vertex,
    picajit_run_vertices,
};
pub use translate::{
    LANGUAGE_GLSL_ES300, LANGUAGE_GLSL_ES320, LANGUAGE_GLSL330, LANGUAGE_GLSL450, LANGUAGE_SPIRV,
    OUTPUTS_GLOBALS, OUTPUTS_VARYINGS, TranslateOptions, TranslationHandle, TranslationInfo,
    picajit_translate, picajit_translate_shbin, picajit_translation_free,
    picajit_translation_get_info, picajit_translation_source, picajit_uniforms_block,
};
pub use uniforms::{
    UniformsHandle, picajit_uniforms_apply_constants, picajit_uniforms_create,
    picajit_uniforms_free, picajit_uniforms_get_bools, picajit_uniforms_get_float,
    picajit_uniforms_reset, picajit_uniforms_set_bools, picajit_uniforms_set_float,
    picajit_uniforms_set_float_f24_words, picajit_uniforms_set_float_f32_words,
    picajit_uniforms_set_floats, picajit_uniforms_set_floats_f24_words,
    picajit_uniforms_set_floats_f32_words, picajit_uniforms_set_int, picajit_uniforms_set_ints,
};

use crate::engine::{EngineError, EngineKind};
use crate::exec::{BatchError, ExecError};
use crate::float24::Precision;
use crate::program::{ProgramError, ShaderKind};
use crate::shbin::ShbinError;

/// The version of the C ABI (`PICAJIT_ABI_VERSION` in the header): raised whenever a function
/// or struct of the header changes incompatibly.
pub const ABI_VERSION: u32 = 1;

/// `PICAJIT_OK`: success.
pub const OK: i32 = 0;
/// `PICAJIT_ERROR_NULL_POINTER`: a required pointer was null.
pub const ERROR_NULL_POINTER: i32 = -1;
/// `PICAJIT_ERROR_BAD_ARGUMENT`: an argument is out of range, misaligned, of the wrong stage,
/// or buffers and masks do not fit (a stride smaller than the count, a missing input plane).
pub const ERROR_BAD_ARGUMENT: i32 = -2;
/// `PICAJIT_ERROR_BAD_PROGRAM`: the code or descriptors do not fit program memory, or the entry
/// point is outside it.
pub const ERROR_BAD_PROGRAM: i32 = -3;
/// `PICAJIT_ERROR_BAD_SHBIN`: a malformed SHBIN blob, or a DVLE index it does not have.
pub const ERROR_BAD_SHBIN: i32 = -4;
/// `PICAJIT_ERROR_COMPILE`: the engine could not prepare the program.
pub const ERROR_COMPILE: i32 = -5;
/// `PICAJIT_ERROR_UNSUPPORTED`: the target cannot take this program (a geometry shader
/// translated to GLSL ES 3.00, which has none).
pub const ERROR_UNSUPPORTED: i32 = -7;
/// `PICAJIT_ERROR_PANIC`: the library panicked (a bug); the panic was caught at the boundary.
pub const ERROR_PANIC: i32 = -6;
/// `PICAJIT_ERROR_BREAK_OUTSIDE_LOOP`: an invocation failed with `break-outside-loop`.
pub const ERROR_BREAK_OUTSIDE_LOOP: i32 = -16;
/// `PICAJIT_ERROR_INSTRUCTION_BUDGET`: an invocation failed with `instruction-budget`.
pub const ERROR_INSTRUCTION_BUDGET: i32 = -17;
/// `PICAJIT_ERROR_INVALID_EMIT_VERTEX`: an invocation failed with `invalid-emit-vertex`.
pub const ERROR_INVALID_EMIT_VERTEX: i32 = -18;
/// `PICAJIT_ERROR_INTERNAL`: an invocation failed with `internal` (an engine bug).
pub const ERROR_INTERNAL: i32 = -19;

/// `PICAJIT_ENGINE_BEST`: the engine the library recommends (0, so a zeroed config picks it).
pub const ENGINE_BEST: u32 = 0;
/// `PICAJIT_ENGINE_INTERP`: the reference interpreter.
pub const ENGINE_INTERP: u32 = 1;
/// `PICAJIT_ENGINE_JIT`: the Cranelift JIT.
pub const ENGINE_JIT: u32 = 2;
/// `PICAJIT_ENGINE_SOA_JIT`: the structure-of-arrays JIT for batches (docs/batches.md).
pub const ENGINE_SOA_JIT: u32 = 3;
/// `PICAJIT_ENGINE_VINTERP`: the vectorised interpreter (nothing to compile).
pub const ENGINE_VINTERP: u32 = 4;
/// `PICAJIT_ENGINE_AUTO`: the vectorised interpreter at once, the structure-of-arrays JIT
/// compiled in the background once the program is hot (docs/batches.md).
pub const ENGINE_AUTO: u32 = 5;

/// `PICAJIT_COMPILE_READY`: everything is compiled, or the engine compiles nothing.
pub const COMPILE_READY: u32 = 0;
/// `PICAJIT_COMPILE_FAILED`: a compile failed or was refused; the engine runs on its
/// zero-compile engine for good (same bits).
pub const COMPILE_FAILED: u32 = 1;
/// `PICAJIT_COMPILE_COLD`: a compile waits for the program to be hot (or for its first use).
pub const COMPILE_COLD: u32 = 2;
/// `PICAJIT_COMPILE_RUNNING`: a compile is running on a background thread.
pub const COMPILE_RUNNING: u32 = 3;

/// The engine kind a C engine constant names; new engines get new numbers here and in the
/// header, and [`ENGINE_BEST`] follows the library's default engine.
pub fn engine_kind(value: u32) -> Option<EngineKind> {
    match value {
        ENGINE_BEST => Some(EngineKind::Auto),
        ENGINE_INTERP => Some(EngineKind::Interpreter),
        ENGINE_JIT => Some(EngineKind::Jit),
        ENGINE_SOA_JIT => Some(EngineKind::SoaJit),
        ENGINE_VINTERP => Some(EngineKind::VectorInterpreter),
        ENGINE_AUTO => Some(EngineKind::Auto),
        _ => None,
    }
}

/// The precision mode a C precision constant (`PICAJIT_PRECISION_*`) names: 0 `f24`, 1
/// `f24-rne`, 2 `f32` (docs/execution-model.md §2).
pub fn precision(value: u32) -> Option<Precision> {
    match value {
        0 => Some(Precision::F24Truncate),
        1 => Some(Precision::F24Nearest),
        2 => Some(Precision::F32),
        _ => None,
    }
}

/// The shader stage a C stage constant (`PICAJIT_STAGE_*`) names: 0 vertex, 1 geometry.
pub fn stage(value: u32) -> Option<ShaderKind> {
    u8::try_from(value).ok().and_then(ShaderKind::from_code)
}

/// The status of a failed invocation, and the address where it failed.
pub fn exec_status(error: &ExecError) -> (i32, u16) {
    match *error {
        ExecError::BreakOutsideLoop { pc } => (ERROR_BREAK_OUTSIDE_LOOP, pc),
        ExecError::InstructionBudget { pc, .. } => (ERROR_INSTRUCTION_BUDGET, pc),
        ExecError::InvalidEmitVertex { pc } => (ERROR_INVALID_EMIT_VERTEX, pc),
        ExecError::Internal { pc, .. } => (ERROR_INTERNAL, pc),
    }
}

/// Why a C call failed: the status it returns and the message [`picajit_last_error_message`]
/// gives (after the function's name).
#[derive(Debug)]
pub enum CapiError {
    /// A required pointer was null.
    Null {
        /// The argument (or field) that was null.
        argument: &'static str,
    },
    /// A pointer not aligned for its type.
    Misaligned {
        /// The argument.
        argument: &'static str,
        /// The alignment its type needs.
        align: usize,
    },
    /// An argument out of range or inconsistent with another.
    Argument {
        /// The argument.
        argument: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The program does not fit program memory.
    Program(ProgramError),
    /// The SHBIN blob is malformed.
    Shbin(ShbinError),
    /// The engine could not prepare the program.
    Engine(EngineError),
    /// The batch buffers do not fit their masks and count.
    Batch(BatchError),
    /// An invocation failed.
    Exec(ExecError),
    /// The program was not translated for host GPUs.
    Translate(crate::translate::TranslateError),
}

impl CapiError {
    /// A [`CapiError::Argument`].
    pub fn argument(argument: &'static str, problem: impl Into<String>) -> CapiError {
        CapiError::Argument {
            argument,
            problem: problem.into(),
        }
    }

    /// The status the C function returns.
    pub fn status(&self) -> i32 {
        match self {
            CapiError::Null { .. } => ERROR_NULL_POINTER,
            CapiError::Misaligned { .. } | CapiError::Argument { .. } | CapiError::Batch(_) => {
                ERROR_BAD_ARGUMENT
            }
            CapiError::Program(ProgramError::NoSuchDvle { .. }) | CapiError::Shbin(_) => {
                ERROR_BAD_SHBIN
            }
            CapiError::Program(_) => ERROR_BAD_PROGRAM,
            CapiError::Engine(_) => ERROR_COMPILE,
            CapiError::Exec(error) => exec_status(error).0,
            CapiError::Translate(_) => ERROR_UNSUPPORTED,
        }
    }
}

impl fmt::Display for CapiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapiError::Null { argument } => write!(f, "{argument} is a null pointer"),
            CapiError::Misaligned { argument, align } => {
                write!(f, "{argument} is not aligned to {align} bytes")
            }
            CapiError::Argument { argument, problem } => write!(f, "{argument}: {problem}"),
            CapiError::Program(error) => write!(f, "{error}"),
            CapiError::Shbin(error) => write!(f, "malformed SHBIN: {error}"),
            CapiError::Engine(error) => write!(f, "{error}"),
            CapiError::Batch(error) => write!(f, "batch: {error}"),
            CapiError::Exec(error) => write!(f, "{}: {error}", error.kind()),
            CapiError::Translate(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for CapiError {}

impl From<ProgramError> for CapiError {
    fn from(error: ProgramError) -> CapiError {
        CapiError::Program(error)
    }
}

impl From<ShbinError> for CapiError {
    fn from(error: ShbinError) -> CapiError {
        CapiError::Shbin(error)
    }
}

impl From<EngineError> for CapiError {
    fn from(error: EngineError) -> CapiError {
        CapiError::Engine(error)
    }
}

impl From<BatchError> for CapiError {
    fn from(error: BatchError) -> CapiError {
        CapiError::Batch(error)
    }
}

impl From<ExecError> for CapiError {
    fn from(error: ExecError) -> CapiError {
        CapiError::Exec(error)
    }
}

thread_local! {
    /// The message of the last failed call on this thread.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: String) {
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "a panic without a message"
    }
}

/// Runs the body of C function `function`: its success value, or its error's status with the
/// message stored for [`picajit_last_error_message`]. A panic is caught here and becomes
/// [`ERROR_PANIC`].
///
/// The error becomes its status inside the caught closure, so the value crossing
/// `catch_unwind` (which passes it through memory) is one `i32`: a `Result` there was written
/// in part and read whole, which stalled every call on the store (measured: a third of a
/// one-instruction program's `picajit_run_vertex`).
fn guard(function: &'static str, body: impl FnOnce() -> Result<i32, CapiError>) -> i32 {
    let status = catch_unwind(AssertUnwindSafe(|| match body() {
        Ok(value) => value,
        Err(error) => failed(function, error),
    }));
    match status {
        Ok(status) => status,
        Err(payload) => panicked(function, payload),
    }
}

/// [`guard`] for a body that gives its status itself (leaving through [`failed`] on an
/// error), inlined into its C function, `picajit_run_vertex`: the call an emulator makes per
/// vertex. Out of line, as `guard` is, the closure read each argument through a pointer into
/// the C function's frame, where they were stored for it, behind one more call (measured:
/// 2-3 ns a call, a fifth of a one-instruction program's). `guard` itself inlined into every
/// C function made batches of 16 slower (f24 2.04x the peer to 1.95x), so only this one is.
#[inline(always)]
fn guard_status(function: &'static str, body: impl FnOnce() -> i32) -> i32 {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(status) => status,
        Err(payload) => panicked(function, payload),
    }
}

/// The panic path of [`guard`] and [`guard_status`]: stores the message, returns
/// `ERROR_PANIC`.
#[cold]
#[inline(never)]
fn panicked(function: &'static str, payload: Box<dyn Any + Send>) -> i32 {
    set_last_error(format!(
        "{function}: internal error (a panic in picajit, please report it): {}",
        panic_text(payload.as_ref())
    ));
    ERROR_PANIC
}

/// The error path of [`guard`]: stores the message, returns the status.
#[cold]
#[inline(never)]
fn failed(function: &'static str, error: CapiError) -> i32 {
    set_last_error(format!("{function}: {error}"));
    error.status()
}

/// Runs a C function that cannot fail (a free, a query): a panic is caught and swallowed, with
/// its message stored, and `fallback` returned.
fn guard_infallible<T>(function: &'static str, fallback: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            set_last_error(format!(
                "{function}: internal error (a panic in picajit, please report it): {}",
                panic_text(payload.as_ref())
            ));
            fallback
        }
    }
}

fn check_pointer<T>(ptr: *const T, argument: &'static str) -> Result<(), CapiError> {
    if ptr.is_null() {
        return Err(CapiError::Null { argument });
    }
    if !ptr.is_aligned() {
        return Err(CapiError::Misaligned {
            argument,
            align: align_of::<T>(),
        });
    }
    Ok(())
}

/// `*ptr` as a shared reference, or why not.
///
/// # Safety
///
/// When `ptr` is not null and aligned, it points to a valid `T` that nothing mutates for `'a`.
unsafe fn ptr_ref<'a, T>(ptr: *const T, argument: &'static str) -> Result<&'a T, CapiError> {
    check_pointer(ptr, argument)?;
    // SAFETY: not null and aligned (checked); valid and unaliased by the caller's contract.
    Ok(unsafe { &*ptr })
}

/// `*ptr` as a unique reference, or why not.
///
/// # Safety
///
/// When `ptr` is not null and aligned, it points to a valid `T` that nothing else reads or
/// writes for `'a`.
unsafe fn ptr_mut<'a, T>(ptr: *mut T, argument: &'static str) -> Result<&'a mut T, CapiError> {
    check_pointer(ptr, argument)?;
    // SAFETY: not null and aligned (checked); valid and unaliased by the caller's contract.
    Ok(unsafe { &mut *ptr })
}

fn check_slice<T>(ptr: *const T, len: usize, argument: &'static str) -> Result<(), CapiError> {
    check_pointer(ptr, argument)?;
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|bytes| bytes > isize::MAX as usize)
    {
        return Err(CapiError::argument(
            argument,
            format!("{len} elements exceed the address space"),
        ));
    }
    Ok(())
}

/// `len` elements at `ptr` as a slice, or why not; a null `ptr` is allowed when `len` is 0.
///
/// # Safety
///
/// When `len` is not 0 and `ptr` is not null and aligned, `ptr` points to `len` valid,
/// initialised `T`s that nothing mutates for `'a`.
unsafe fn slice_of<'a, T>(
    ptr: *const T,
    len: usize,
    argument: &'static str,
) -> Result<&'a [T], CapiError> {
    if len == 0 {
        return Ok(&[]);
    }
    check_slice(ptr, len, argument)?;
    // SAFETY: not null, aligned, not too long (checked); valid for `len` elements by the
    // caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// `len` elements at `ptr` as a unique slice, or why not; a null `ptr` is allowed when `len` is 0.
///
/// # Safety
///
/// When `len` is not 0 and `ptr` is not null and aligned, `ptr` points to `len` valid `T`s that
/// nothing else reads or writes for `'a`.
unsafe fn slice_mut<'a, T>(
    ptr: *mut T,
    len: usize,
    argument: &'static str,
) -> Result<&'a mut [T], CapiError> {
    if len == 0 {
        return Ok(&mut []);
    }
    check_slice(ptr, len, argument)?;
    // SAFETY: not null, aligned, not too long (checked); valid and unaliased for `len` elements
    // by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// Stores a new handle at `out`.
///
/// # Safety
///
/// When `out` is not null and aligned, it points to writable storage for a pointer.
unsafe fn store_handle<T>(
    out: *mut *mut T,
    argument: &'static str,
    handle: T,
) -> Result<i32, CapiError> {
    // SAFETY: forwarded from this function's contract.
    let out = unsafe { ptr_mut(out, argument) }?;
    *out = Box::into_raw(Box::new(handle));
    Ok(OK)
}

/// Frees a handle made by [`store_handle`]; null is ignored.
///
/// # Safety
///
/// `handle` is null or a pointer [`store_handle`] made for a `T` and not yet freed.
unsafe fn free_handle<T>(handle: *mut T) {
    if !handle.is_null() {
        // SAFETY: made by `Box::into_raw` in `store_handle` and not freed (the caller's
        // contract).
        drop(unsafe { Box::from_raw(handle) });
    }
}

/// The library version (`"0.1.0"`), a static NUL-terminated string.
#[unsafe(no_mangle)]
pub extern "C" fn picajit_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The C ABI version ([`ABI_VERSION`]); a program compares it with the header's
/// `PICAJIT_ABI_VERSION`.
#[unsafe(no_mangle)]
pub extern "C" fn picajit_abi_version() -> u32 {
    ABI_VERSION
}

/// The message of the last failed call on this thread (`""` when none failed): NUL-terminated,
/// valid until the next failing call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn picajit_last_error_message() -> *const c_char {
    guard_infallible("picajit_last_error_message", c"".as_ptr(), || {
        LAST_ERROR.with(|last| last.borrow().as_ptr())
    })
}

/// The name of a status (`"PICAJIT_ERROR_BAD_ARGUMENT"`), a static NUL-terminated string;
/// `"PICAJIT_OK"` for 0 and more, `"PICAJIT_ERROR_UNKNOWN"` for a code the library does not have.
#[unsafe(no_mangle)]
pub extern "C" fn picajit_status_name(status: i32) -> *const c_char {
    let name = match status {
        0.. => c"PICAJIT_OK",
        ERROR_NULL_POINTER => c"PICAJIT_ERROR_NULL_POINTER",
        ERROR_BAD_ARGUMENT => c"PICAJIT_ERROR_BAD_ARGUMENT",
        ERROR_BAD_PROGRAM => c"PICAJIT_ERROR_BAD_PROGRAM",
        ERROR_BAD_SHBIN => c"PICAJIT_ERROR_BAD_SHBIN",
        ERROR_COMPILE => c"PICAJIT_ERROR_COMPILE",
        ERROR_UNSUPPORTED => c"PICAJIT_ERROR_UNSUPPORTED",
        ERROR_PANIC => c"PICAJIT_ERROR_PANIC",
        ERROR_BREAK_OUTSIDE_LOOP => c"PICAJIT_ERROR_BREAK_OUTSIDE_LOOP",
        ERROR_INSTRUCTION_BUDGET => c"PICAJIT_ERROR_INSTRUCTION_BUDGET",
        ERROR_INVALID_EMIT_VERTEX => c"PICAJIT_ERROR_INVALID_EMIT_VERTEX",
        ERROR_INTERNAL => c"PICAJIT_ERROR_INTERNAL",
        _ => c"PICAJIT_ERROR_UNKNOWN",
    };
    name.as_ptr()
}

#[cfg(test)]
mod tests;
