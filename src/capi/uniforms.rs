//! The uniforms handle: float, int and bool uniforms with the conversions of
//! docs/execution-model.md §7.

use super::{
    CapiError, OK, free_handle, guard, guard_infallible, precision, ptr_mut, ptr_ref, slice_of,
    store_handle,
};
use crate::float24::lanes::within_operand_bounds;
use crate::float24::{Precision, convert_f32, unpack_uniform, unpack_uniform_f32};
use crate::program::{ProgramError, Uniforms};

use super::program::ShbinHandle;

/// `picajit_uniforms`: the uniforms of one shader unit (c0-c95, i0-i3, b0-b15), and the precision
/// mode its f32 floats were converted under, which a run checks against its engine's.
#[derive(Clone, Debug)]
pub struct UniformsHandle {
    /// The values.
    pub uniforms: Uniforms,
    /// The mode of the f32 conversions since the last reset (`None`: none; exact float24
    /// values fit every mode).
    converted: Option<Precision>,
    /// The float uniforms `lanes::within_operand_bounds` (bit n: c`n`), kept up to date by
    /// every write, so that a run knows it without looking ([`UniformsHandle::comfortable`]).
    comfortable: u128,
}

/// Bits 0-95: every float uniform.
const ALL_FLOATS: u128 = (1 << 96) - 1;

impl Default for UniformsHandle {
    fn default() -> Self {
        UniformsHandle {
            uniforms: Uniforms::default(),
            converted: None,
            // +0 everywhere.
            comfortable: ALL_FLOATS,
        }
    }
}

/// The error of [`UniformsHandle::for_engine`], apart so that the check inlines.
#[cold]
fn converted_under(converted: Precision, precision: Precision) -> CapiError {
    CapiError::argument(
        "uniforms",
        format!(
            "their f32 floats were converted under precision {}, the engine runs {}: set them \
             with the engine's PICAJIT_PRECISION_* value",
            converted.name(),
            precision.name()
        ),
    )
}

impl UniformsHandle {
    /// The float uniforms within the scalar JIT's operand bounds
    /// (`HostPaths::run_partial_knowing_into`).
    #[inline]
    pub fn comfortable(&self) -> u128 {
        self.comfortable
    }

    /// Notes the float uniforms of `written` as they now are.
    fn note_written(&mut self, written: std::ops::Range<usize>) {
        for n in written {
            let bit = 1u128 << n;
            if within_operand_bounds(self.uniforms.float[n]) {
                self.comfortable |= bit;
            } else {
                self.comfortable &= !bit;
            }
        }
    }

    /// The uniforms, for an engine running under `precision`: an error when f32 floats were
    /// converted under another mode (they would hold values that engine's rules never make).
    #[inline]
    pub fn for_engine(&self, precision: Precision) -> Result<&Uniforms, CapiError> {
        match self.converted {
            Some(converted) if converted != precision => Err(converted_under(converted, precision)),
            _ => Ok(&self.uniforms),
        }
    }

    /// Notes an f32 conversion under `precision`; an error when earlier ones used another mode.
    fn convert_under(&mut self, precision: Precision) -> Result<(), CapiError> {
        match self.converted {
            Some(converted) if converted != precision => Err(CapiError::argument(
                "precision",
                format!(
                    "{} differs from {}, the mode earlier floats were converted under (reset \
                     the uniforms to change modes)",
                    precision.name(),
                    converted.name()
                ),
            )),
            _ => {
                self.converted = Some(precision);
                Ok(())
            }
        }
    }
}

/// The float uniforms `first`, `first + 1`, ..., `count` of them: an error unless all are c0-c95.
fn float_range(first: u32, count: usize) -> Result<std::ops::Range<usize>, CapiError> {
    let first = float_index(first)?;
    if count > 96 - first {
        return Err(CapiError::argument(
            "count",
            format!("{count} uniforms from c{first} pass c95 (float uniforms are c0-c95)"),
        ));
    }
    Ok(first..first + count)
}

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
    body: impl FnOnce(&mut UniformsHandle) -> Result<(), CapiError>,
) -> i32 {
    guard(function, || {
        // SAFETY: null or a live, unshared handle (this function's contract).
        let uniforms = unsafe { ptr_mut(uniforms, "uniforms") }?;
        body(uniforms)?;
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
            *u = UniformsHandle::default();
            Ok(())
        })
    }
}

/// Sets float uniform c`index` from four f32 values (x, y, z, w), converted as the float32
/// upload mode converts them under `precision` (docs/execution-model.md §7): the engine's mode
/// (a run with another fails).
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
            // SAFETY: null or valid for four floats (this function's contract).
            set_floats(
                u,
                index,
                std::slice::from_ref(ptr_ref(xyzw, "xyzw")?),
                precision,
            )
        })
    }
}

/// Sets float uniforms c`first` to c`first + count - 1` from `count` vectors of four f32 values,
/// as [`picajit_uniforms_set_float`] sets one: a whole upload in one call.
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile; `xyzw` is
/// valid for `count` vectors (NULL allowed when `count` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_set_floats(
    uniforms: *mut UniformsHandle,
    first: u32,
    count: usize,
    xyzw: *const [f32; 4],
    precision: u32,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_uniforms("picajit_uniforms_set_floats", uniforms, |u| {
            let range = float_range(first, count)?;
            // SAFETY: valid for `count` vectors (this function's contract).
            set_floats(u, range.start, slice_of(xyzw, count, "xyzw")?, precision)
        })
    }
}

/// Sets c`first`... from `values`, converted under the PICAJIT_PRECISION_* value `precision`.
fn set_floats(
    u: &mut UniformsHandle,
    first: usize,
    values: &[[f32; 4]],
    precision: u32,
) -> Result<(), CapiError> {
    let precision = precision_of(precision)?;
    u.convert_under(precision)?;
    for (target, value) in u.uniforms.float[first..first + values.len()]
        .iter_mut()
        .zip(values)
    {
        *target = value.map(|lane| convert_f32(lane, precision));
    }
    u.note_written(first..first + values.len());
    Ok(())
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
            u.uniforms.set_float_f24(index, unpack_uniform(*words));
            u.note_written(index..index + 1);
            Ok(())
        })
    }
}

/// Sets float uniforms c`first` to c`first + count - 1` from `count` groups of three words of the
/// float24 upload format, as [`picajit_uniforms_set_float_f24_words`] sets one: the words an
/// emulator's float-uniform FIFO received, in one call.
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile; `words` is
/// valid for `count` groups (NULL allowed when `count` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_set_floats_f24_words(
    uniforms: *mut UniformsHandle,
    first: u32,
    count: usize,
    words: *const [u32; 3],
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_uniforms("picajit_uniforms_set_floats_f24_words", uniforms, |u| {
            let range = float_range(first, count)?;
            // SAFETY: valid for `count` groups (this function's contract).
            let groups = slice_of(words, count, "words")?;
            for (index, group) in range.clone().zip(groups) {
                u.uniforms.set_float_f24(index, unpack_uniform(*group));
            }
            u.note_written(range);
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
            // SAFETY: null or valid for four words (this function's contract).
            let words = std::slice::from_ref(ptr_ref(words, "words")?);
            set_floats_f32_words(u, index, words, precision)
        })
    }
}

/// Sets float uniforms c`first` to c`first + count - 1` from `count` groups of four words of the
/// float32 upload format, as [`picajit_uniforms_set_float_f32_words`] sets one.
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile; `words` is
/// valid for `count` groups (NULL allowed when `count` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_set_floats_f32_words(
    uniforms: *mut UniformsHandle,
    first: u32,
    count: usize,
    words: *const [u32; 4],
    precision: u32,
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_uniforms("picajit_uniforms_set_floats_f32_words", uniforms, |u| {
            let range = float_range(first, count)?;
            // SAFETY: valid for `count` groups (this function's contract).
            let groups = slice_of(words, count, "words")?;
            set_floats_f32_words(u, range.start, groups, precision)
        })
    }
}

/// Sets c`first`... from float32-format word groups, converted under `precision`.
fn set_floats_f32_words(
    u: &mut UniformsHandle,
    first: usize,
    groups: &[[u32; 4]],
    precision: u32,
) -> Result<(), CapiError> {
    let precision = precision_of(precision)?;
    u.convert_under(precision)?;
    for (target, group) in u.uniforms.float[first..first + groups.len()]
        .iter_mut()
        .zip(groups)
    {
        *target = unpack_uniform_f32(*group, precision);
    }
    u.note_written(first..first + groups.len());
    Ok(())
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
        *out = uniforms.uniforms.float[index];
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
            u.uniforms.int[index as usize] = *ptr_ref(xyzw, "xyzw")?;
            Ok(())
        })
    }
}

/// Sets the four int uniforms i0-i3 at once, each as [`picajit_uniforms_set_int`] sets one.
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle that no other call uses meanwhile; `ints` is
/// null or valid for four groups of four bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_set_ints(
    uniforms: *mut UniformsHandle,
    ints: *const [[u8; 4]; 4],
) -> i32 {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_uniforms("picajit_uniforms_set_ints", uniforms, |u| {
            // SAFETY: null or valid for sixteen bytes (this function's contract).
            u.uniforms.int = *ptr_ref(ints, "ints")?;
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
            u.uniforms.bools = bools;
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
        *out = uniforms.uniforms.bools;
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
            u.uniforms.apply_constants(entry);
            u.note_written(0..96);
            Ok(())
        })
    }
}
