//! The uniforms handle: float, int and bool uniforms with the conversions of
//! docs/execution-model.md §7.

use super::{
    CapiError, OK, free_handle, guard, guard_infallible, precision, ptr_mut, ptr_ref, store_handle,
};
use crate::float24::{Precision, convert_f32, unpack_uniform, unpack_uniform_f32};
use crate::program::{ProgramError, Uniforms};

use super::program::ShbinHandle;

/// `picajit_uniforms`: the uniforms of one shader unit (c0-c95, i0-i3, b0-b15).
#[derive(Clone, Debug, Default)]
pub struct UniformsHandle(pub Uniforms);

fn float_index(index: u32) -> Result<usize, CapiError> {
    if index < 96 {
        Ok(index as usize)
    } else {
        Err(CapiError::argument(
            "index",
            format!("c{index} does not exist (float uniforms are c0-c95)"),
        ))
    }
}

fn precision_of(value: u32) -> Result<Precision, CapiError> {
    precision(value).ok_or_else(|| {
        CapiError::argument(
            "precision",
            format!("{value} is not a PICAJIT_PRECISION_* value"),
        )
    })
}

/// Runs `body` on the uniforms behind `uniforms`.
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile.
unsafe fn with_uniforms(
    function: &'static str,
    uniforms: *mut UniformsHandle,
    body: impl FnOnce(&mut Uniforms) -> Result<(), CapiError>,
) -> i32 {
    guard(function, || {
        // SAFETY: null or a live, unshared handle (this function's contract).
        let uniforms = unsafe { ptr_mut(uniforms, "uniforms") }?;
        body(&mut uniforms.0)?;
        Ok(OK)
    })
}

/// Creates uniforms, all zero, in `*out`.
///
/// # Safety
///
/// `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_create(out: *mut *mut UniformsHandle) -> i32 {
    guard("picajit_uniforms_create", || {
        // SAFETY: null or valid for a write (this function's contract).
        unsafe { store_handle(out, "out", UniformsHandle::default()) }
    })
}

/// Frees a uniforms handle (NULL is ignored).
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle, used by no other call during or after this one.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_free(uniforms: *mut UniformsHandle) {
    // SAFETY: null or a live handle of this type (this function's contract).
    guard_infallible("picajit_uniforms_free", (), || unsafe {
        free_handle(uniforms)
    })
}

/// Sets every uniform to zero.
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_reset(uniforms: *mut UniformsHandle) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_uniforms("picajit_uniforms_reset", uniforms, |u| {
            *u = Uniforms::default();
            Ok(())
        })
    }
}

/// Sets float uniform c`index` from four f32 values (x, y, z, w), converted as the float32
/// upload mode converts them under `precision` (docs/execution-model.md §7).
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile; `xyzw` is
/// null or valid for four floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_set_float(
    uniforms: *mut UniformsHandle,
    index: u32,
    xyzw: *const [f32; 4],
    precision: u32,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_uniforms("picajit_uniforms_set_float", uniforms, |u| {
            let index = float_index(index)?;
            let precision = precision_of(precision)?;
            // SAFETY: null or valid for four floats (this function's contract).
            let value = ptr_ref(xyzw, "xyzw")?;
            u.float[index] = value.map(|lane| convert_f32(lane, precision));
            Ok(())
        })
    }
}

/// Sets float uniform c`index` from the three words of the float24 upload format (exactly:
/// subnormals and NaN payloads kept; docs/execution-model.md §7).
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile; `words` is
/// null or valid for three words.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_set_float_f24_words(
    uniforms: *mut UniformsHandle,
    index: u32,
    words: *const [u32; 3],
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_uniforms("picajit_uniforms_set_float_f24_words", uniforms, |u| {
            let index = float_index(index)?;
            // SAFETY: null or valid for three words (this function's contract).
            let words = ptr_ref(words, "words")?;
            u.set_float_f24(index, unpack_uniform(*words));
            Ok(())
        })
    }
}

/// Sets float uniform c`index` from the four words of the float32 upload format (in the order
/// the FIFO receives them: w, z, y, x), converted under `precision` (docs/execution-model.md §7).
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile; `words` is
/// null or valid for four words.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_set_float_f32_words(
    uniforms: *mut UniformsHandle,
    index: u32,
    words: *const [u32; 4],
    precision: u32,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_uniforms("picajit_uniforms_set_float_f32_words", uniforms, |u| {
            let index = float_index(index)?;
            let precision = precision_of(precision)?;
            // SAFETY: null or valid for four words (this function's contract).
            let words = ptr_ref(words, "words")?;
            u.float[index] = unpack_uniform_f32(*words, precision);
            Ok(())
        })
    }
}

/// Writes float uniform c`index` (the register value, x, y, z, w) to `out`.
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle; `out` is null or valid for four floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_get_float(
    uniforms: *const UniformsHandle,
    index: u32,
    out: *mut [f32; 4],
) -> i32 {
    guard("picajit_uniforms_get_float", || {
        // SAFETY: null or a live handle (this function's contract).
        let uniforms = unsafe { ptr_ref(uniforms, "uniforms") }?;
        let index = float_index(index)?;
        // SAFETY: null or valid for four floats (this function's contract).
        let out = unsafe { ptr_mut(out, "out") }?;
        *out = uniforms.0.float[index];
        Ok(OK)
    })
}

/// Sets int uniform i`index` (0-3) from four bytes: x = iterations − 1, y = initial aL,
/// z = aL increment, w unused.
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile; `xyzw` is
/// null or valid for four bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_set_int(
    uniforms: *mut UniformsHandle,
    index: u32,
    xyzw: *const [u8; 4],
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_uniforms("picajit_uniforms_set_int", uniforms, |u| {
            if index >= 4 {
                return Err(CapiError::argument(
                    "index",
                    format!("i{index} does not exist (int uniforms are i0-i3)"),
                ));
            }
            // SAFETY: null or valid for four bytes (this function's contract).
            u.int[index as usize] = *ptr_ref(xyzw, "xyzw")?;
            Ok(())
        })
    }
}

/// Sets the sixteen bool uniforms (bit n = bn).
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_set_bools(
    uniforms: *mut UniformsHandle,
    bools: u16,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_uniforms("picajit_uniforms_set_bools", uniforms, |u| {
            u.bools = bools;
            Ok(())
        })
    }
}

/// Writes the sixteen bool uniforms (bit n = bn) to `*out`.
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle; `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_get_bools(
    uniforms: *const UniformsHandle,
    out: *mut u16,
) -> i32 {
    guard("picajit_uniforms_get_bools", || {
        // SAFETY: null or a live handle (this function's contract).
        let uniforms = unsafe { ptr_ref(uniforms, "uniforms") }?;
        // SAFETY: null or valid for a write (this function's contract).
        let out = unsafe { ptr_mut(out, "out") }?;
        *out = uniforms.0.bools;
        Ok(OK)
    })
}

/// Applies the constant table of DVLE `dvle` of a parsed SHBIN blob over the current values
/// (float constants exactly, as the float24 upload mode; docs/execution-model.md §7).
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile; `shbin` is
/// null or a live SHBIN handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_apply_constants(
    uniforms: *mut UniformsHandle,
    shbin: *const ShbinHandle,
    dvle: u32,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_uniforms("picajit_uniforms_apply_constants", uniforms, |u| {
            // SAFETY: null or a live handle (this function's contract).
            let shbin = &ptr_ref(shbin, "shbin")?.0;
            let entry = shbin
                .dvles
                .get(dvle as usize)
                .ok_or(ProgramError::NoSuchDvle {
                    index: dvle as usize,
                    count: shbin.dvles.len(),
                })?;
            u.apply_constants(entry);
            Ok(())
        })
    }
}
