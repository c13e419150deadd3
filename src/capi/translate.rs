//! Translations for host GPUs (docs/gpu-shaders.md, docs/c-abi.md "Translations"): a program
//! translated to exact GLSL, held by a `picajit_translation` with its interface (the input
//! and output registers, the uniform block's layout and size), and the uniform block's bytes
//! for a `picajit_uniforms`.

use std::ffi::{CStr, c_char};

use super::program::{Program, shader_program};
use super::uniforms::UniformsHandle;
use super::{
    CapiError, OK, free_handle, guard, guard_infallible, precision, ptr_mut, ptr_ref, slice_mut,
    store_handle,
};
use crate::exec::DEFAULT_INSTRUCTION_BUDGET;
use crate::program::ShaderProgram;
use crate::translate::glsl::Dialect;
use crate::translate::host::{BLOCK_BYTES, block_bytes};
use crate::translate::interface::{Interface, OutputStyle};
use crate::translate::names::Names;
use crate::translate::spv::SpirvOptions;
use crate::translate::{Form, Options, geometry, glsl, spirv, translate_named};

/// `PICAJIT_LANGUAGE_GLSL330`: GLSL 3.30 core (desktop OpenGL 3.3).
pub const LANGUAGE_GLSL330: u32 = 0;
/// `PICAJIT_LANGUAGE_GLSL_ES300`: GLSL ES 3.00 (OpenGL ES 3.0).
pub const LANGUAGE_GLSL_ES300: u32 = 1;
/// `PICAJIT_LANGUAGE_GLSL450`: GLSL 4.50 core, `precise` on every arithmetic result.
pub const LANGUAGE_GLSL450: u32 = 2;
/// `PICAJIT_LANGUAGE_GLSL_ES320`: GLSL ES 3.20, `precise` on every arithmetic result.
pub const LANGUAGE_GLSL_ES320: u32 = 3;
/// `PICAJIT_LANGUAGE_SPIRV`: a SPIR-V 1.0 module for Vulkan, `NoContraction` on every
/// arithmetic result: the source is its words, not text.
pub const LANGUAGE_SPIRV: u32 = 4;

/// `PICAJIT_OUTPUTS_VARYINGS`: `out vec4 oN;` and a `main` of the translation's own.
pub const OUTPUTS_VARYINGS: u32 = 0;
/// `PICAJIT_OUTPUTS_GLOBALS`: plain globals `vec4 oN;` and an entry function the caller's own
/// `main` calls before it maps the outputs.
pub const OUTPUTS_GLOBALS: u32 = 1;

/// `PICAJIT_FORM_DISPATCH`: the dispatch loop over runs (docs/gpu-shaders.md, "The general
/// form").
pub const FORM_DISPATCH: u32 = 0;
/// `PICAJIT_FORM_STRUCTURED`: if/else and loops (docs/gpu-shaders.md, "The structured form").
pub const FORM_STRUCTURED: u32 = 1;

/// The longest name `entry` and `block_name` may have.
const NAME_LIMIT: usize = 64;

/// `picajit_translate_options`: what to translate for; all zero (or NULL) is the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TranslateOptions {
    /// `PICAJIT_PRECISION_*` (0: `f24`).
    pub precision: u32,
    /// `PICAJIT_LANGUAGE_*` (0: GLSL 3.30 core).
    pub language: u32,
    /// `PICAJIT_OUTPUTS_*` (0: varyings).
    pub outputs: u32,
    /// Non-zero: a comment before each statement with its address and instruction.
    pub comments: u32,
    /// The most instructions one invocation may execute (0: 2^20).
    pub instruction_budget: u64,
    /// The entry point's name (NULL: `main`; with `PICAJIT_OUTPUTS_GLOBALS` it must not be
    /// `main`).
    pub entry: *const c_char,
    /// The uniform block's name (NULL: `pica_uniforms`).
    pub block_name: *const c_char,
}

/// `picajit_translation_info`: what a translation presents to the code around it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TranslationInfo {
    /// The source's length in bytes (GLSL: without its NUL).
    pub source_bytes: u64,
    /// `PICAJIT_FORM_*`: the form the control flow took.
    pub form: u32,
    /// The uniform block's size (std140).
    pub block_bytes: u32,
    /// Where c0-c95 start in the block (16 bytes each: x, y, z, w as f32 bits).
    pub float_offset: u32,
    /// Where i0-i3 start (16 bytes each: x, y, z, w one byte a 32-bit word).
    pub int_offset: u32,
    /// Where the bool word is (bit n: bN).
    pub bool_offset: u32,
    /// Where the word that must be 0 is.
    pub zero_offset: u32,
    /// The input registers the translation declares (bit n: `layout(location = n) in vec4 vN`).
    pub input_mask: u32,
    /// The output registers it writes (bit n: oN).
    pub output_mask: u32,
    /// `PICAJIT_STAGE_*`: a vertex or a geometry shader.
    pub stage: u32,
    /// A geometry shader's state block, `pica_geometry_state` (std140, `uvec4 s[98]`, laid
    /// out as docs/gpu-shaders.md "Geometry shaders" says): its size; 0 for a vertex shader.
    pub state_block_bytes: u32,
    /// A geometry shader's `max_vertices` (it outputs whole triangles up to it); 0 for a
    /// vertex shader.
    pub max_vertices: u32,
}

/// `picajit_translation`: a program's translation.
#[derive(Debug)]
pub struct TranslationHandle {
    /// The GLSL text and a NUL, or the SPIR-V words: in words, so that a module's start is
    /// aligned as `vkCreateShaderModule` wants.
    source: Vec<u32>,
    info: TranslationInfo,
}

/// The GLSL dialect of `language`, `None` for SPIR-V.
fn dialect(language: u32) -> Result<Option<Dialect>, CapiError> {
    Ok(match language {
        LANGUAGE_GLSL330 => Some(Dialect::Glsl330),
        LANGUAGE_GLSL_ES300 => Some(Dialect::Es300),
        LANGUAGE_GLSL450 => Some(Dialect::Glsl450),
        LANGUAGE_GLSL_ES320 => Some(Dialect::Es320),
        LANGUAGE_SPIRV => None,
        other => {
            return Err(CapiError::argument(
                "options->language",
                format!("{other} is not a PICAJIT_LANGUAGE_* value"),
            ));
        }
    })
}

/// A GLSL identifier given through `ptr` (`default` for NULL).
///
/// # Safety
///
/// `ptr` is null or a NUL-terminated string.
unsafe fn identifier(
    ptr: *const c_char,
    default: &str,
    argument: &'static str,
) -> Result<String, CapiError> {
    if ptr.is_null() {
        return Ok(default.to_string());
    }
    // SAFETY: NUL-terminated (this function's contract).
    let bytes = unsafe { CStr::from_ptr(ptr) }.to_bytes();
    let valid = !bytes.is_empty()
        && bytes.len() <= NAME_LIMIT
        && !bytes[0].is_ascii_digit()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_')
        && !bytes.starts_with(b"gl_")
        && !bytes.starts_with(b"pica_")
        && !bytes.windows(2).any(|w| w == b"__");
    if !valid {
        return Err(CapiError::argument(
            argument,
            format!(
                "{:?} is not a GLSL name of at most {NAME_LIMIT} letters, digits and single \
                 underscores, not starting with a digit, gl_ or pica_",
                String::from_utf8_lossy(bytes)
            ),
        ));
    }
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// Translates `program` as `options` (null: defaults) ask, naming registers as `names` does.
///
/// # Safety
///
/// `options` is null or valid, its strings null or NUL-terminated; `out` is null or valid for
/// a write.
unsafe fn translate_into(
    program: ShaderProgram,
    names: &Names,
    options: *const TranslateOptions,
    out: *mut *mut TranslationHandle,
) -> Result<i32, CapiError> {
    let given = if options.is_null() {
        None
    } else {
        // SAFETY: not null, valid (this function's contract).
        Some(*unsafe { ptr_ref(options, "options") }?)
    };
    let precision_value = given.map_or(0, |o| o.precision);
    let precision = precision(precision_value).ok_or_else(|| {
        CapiError::argument(
            "options->precision",
            format!("{precision_value} is not a PICAJIT_PRECISION_* value"),
        )
    })?;
    let dialect = dialect(given.map_or(LANGUAGE_GLSL330, |o| o.language))?;
    let outputs = match given.map_or(OUTPUTS_VARYINGS, |o| o.outputs) {
        OUTPUTS_VARYINGS => OutputStyle::Varyings,
        OUTPUTS_GLOBALS => OutputStyle::Globals,
        other => {
            return Err(CapiError::argument(
                "options->outputs",
                format!("{other} is not a PICAJIT_OUTPUTS_* value"),
            ));
        }
    };
    let budget = match given.map_or(0, |o| o.instruction_budget) {
        0 => DEFAULT_INSTRUCTION_BUDGET,
        n if n > crate::translate::dispatch::GREATEST_BUDGET => {
            return Err(CapiError::argument(
                "options->instruction_budget",
                format!(
                    "{n} is more than the translation's greatest budget, {}",
                    crate::translate::dispatch::GREATEST_BUDGET
                ),
            ));
        }
        n => n,
    };
    // SAFETY: null or NUL-terminated (this function's contract).
    let entry = unsafe {
        identifier(
            given.map_or(std::ptr::null(), |o| o.entry),
            "main",
            "options->entry",
        )
    }?;
    if outputs == OutputStyle::Globals && dialect.is_none() {
        return Err(CapiError::argument(
            "options->outputs",
            "a SPIR-V module is complete (its outputs are Output variables at locations 0-15): \
             PICAJIT_OUTPUTS_GLOBALS is for GLSL",
        ));
    }
    if outputs == OutputStyle::Globals && entry == "main" {
        return Err(CapiError::argument(
            "options->entry",
            "with PICAJIT_OUTPUTS_GLOBALS the entry is a function the caller's main calls: \
             name it otherwise than main",
        ));
    }
    // SAFETY: null or NUL-terminated (this function's contract).
    let block_name = unsafe {
        identifier(
            given.map_or(std::ptr::null(), |o| o.block_name),
            "pica_uniforms",
            "options->block_name",
        )
    }?;
    let comments = given.is_some_and(|o| o.comments != 0);
    let translate_options = Options {
        precision,
        instruction_budget: budget,
        end_state: false,
        structure: true,
        comments,
    };
    // The names only annotate the comments, which are off unless asked for.
    let translation = translate_named(&program, &translate_options, &entry, names)
        .map_err(CapiError::Translate)?;
    let interface = Interface {
        block_name,
        outputs,
        banner: format!(
            "// translated by picajit {} (docs/gpu-shaders.md): precision {}, {} form\n",
            env!("CARGO_PKG_VERSION"),
            precision.name(),
            translation.form.name()
        ),
        entry,
    };
    let (source, source_bytes) = match dialect {
        Some(dialect) => {
            let mut text = glsl(&translation, dialect, &interface).map_err(CapiError::Translate)?;
            if !comments {
                text = without_comment_lines(&text);
            }
            if text.contains('\0') {
                return Err(CapiError::argument(
                    "program",
                    "the translation holds a NUL byte (a bug)",
                ));
            }
            let len = text.len();
            let mut bytes = text.into_bytes();
            // At least one NUL after the text, then whole words.
            bytes.resize((len + 1).next_multiple_of(4), 0);
            let words = bytes
                .chunks(4)
                .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            (words, len)
        }
        None => {
            let options = SpirvOptions {
                capture: Vec::new(),
                listing: comments,
            };
            let words = spirv(&translation, &interface, &options).map_err(CapiError::Translate)?;
            let len = 4 * words.len();
            (words, len)
        }
    };
    let info = TranslationInfo {
        source_bytes: source_bytes as u64,
        form: match translation.form {
            Form::Dispatch => FORM_DISPATCH,
            Form::Structured => FORM_STRUCTURED,
        },
        block_bytes: BLOCK_BYTES as u32,
        float_offset: 0,
        int_offset: 96 * 16,
        bool_offset: 96 * 16 + 4 * 16,
        zero_offset: 96 * 16 + 4 * 16 + 4,
        input_mask: u32::from(translation.module.inputs),
        output_mask: u32::from(translation.module.outputs),
        stage: u32::from(program.stage.code()),
        state_block_bytes: translation
            .module
            .geometry
            .map_or(0, |_| 16 * geometry::state::VECTORS as u32),
        max_vertices: translation.module.geometry.map_or(0, |g| g.max_vertices()),
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { store_handle(out, "out", TranslationHandle { source, info }) }
}

/// `source` without the lines that hold only a comment: the statement comments, which an
/// emulator compiling at run time does not need.
fn without_comment_lines(source: &str) -> String {
    source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .flat_map(|line| [line, "\n"])
        .collect()
}

/// Translates a program for host GPUs (docs/gpu-shaders.md): exact GLSL and its interface.
///
/// # Safety
///
/// `program` is null or valid (its code and descriptors valid for their lengths); `options`
/// is null or valid, its strings null or NUL-terminated; `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_translate(
    program: *const Program,
    options: *const TranslateOptions,
    out: *mut *mut TranslationHandle,
) -> i32 {
    guard("picajit_translate", || {
        // SAFETY: null or valid (this function's contract).
        let program = unsafe { shader_program(program) }?;
        // SAFETY: forwarded from this function's contract.
        unsafe { translate_into(program, &Names::none(), options, out) }
    })
}

/// Translates DVLE `dvle` of a parsed SHBIN blob like [`picajit_translate`]; with comments on,
/// they name the registers the DVLE names.
///
/// # Safety
///
/// `shbin` is null or a live SHBIN handle; `options` and `out` as for [`picajit_translate`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_translate_shbin(
    shbin: *const super::ShbinHandle,
    dvle: u32,
    options: *const TranslateOptions,
    out: *mut *mut TranslationHandle,
) -> i32 {
    guard("picajit_translate_shbin", || {
        // SAFETY: null or a live handle (this function's contract).
        let shbin = unsafe { ptr_ref(shbin, "shbin") }?;
        let program = ShaderProgram::from_shbin(&shbin.0, dvle as usize)?;
        let names = Names::of_dvle(&shbin.0.dvles[dvle as usize]);
        // SAFETY: forwarded from this function's contract.
        unsafe { translate_into(program, &names, options, out) }
    })
}

/// Frees a translation; NULL is ignored.
///
/// # Safety
///
/// `translation` is null or a live translation handle, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_translation_free(translation: *mut TranslationHandle) {
    guard_infallible("picajit_translation_free", (), || {
        // SAFETY: null or live (this function's contract).
        unsafe { free_handle(translation) }
    })
}

/// The translation's source, alive until the translation is freed; `""` for NULL: GLSL text
/// with a NUL after it, or a SPIR-V module's `source_bytes` bytes (4-byte aligned).
///
/// # Safety
///
/// `translation` is null or a live translation handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_translation_source(
    translation: *const TranslationHandle,
) -> *const c_char {
    guard_infallible("picajit_translation_source", c"".as_ptr(), || {
        // SAFETY: null or live (this function's contract).
        match unsafe { ptr_ref(translation, "translation") } {
            Ok(translation) => translation.source.as_ptr().cast::<c_char>(),
            Err(_) => c"".as_ptr(),
        }
    })
}

/// The translation's interface into `*out`.
///
/// # Safety
///
/// `translation` is null or a live translation handle; `out` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_translation_get_info(
    translation: *const TranslationHandle,
    out: *mut TranslationInfo,
) -> i32 {
    guard("picajit_translation_get_info", || {
        // SAFETY: null or live (this function's contract).
        let translation = unsafe { ptr_ref(translation, "translation") }?;
        // SAFETY: null or valid (this function's contract).
        *unsafe { ptr_mut(out, "out") }? = translation.info;
        Ok(OK)
    })
}

/// Writes the uniform block of a translation for `uniforms` (its bytes as the GPU reads them,
/// `PICAJIT_UNIFORM_BLOCK_BYTES` of them) to `out`, which holds `capacity` bytes.
///
/// # Safety
///
/// `uniforms` is null or a live uniforms handle; `out` is null or valid for `capacity` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn picajit_uniforms_block(
    uniforms: *const UniformsHandle,
    out: *mut u8,
    capacity: usize,
) -> i32 {
    guard("picajit_uniforms_block", || {
        // SAFETY: null or live (this function's contract).
        let uniforms = unsafe { ptr_ref(uniforms, "uniforms") }?;
        if capacity < BLOCK_BYTES {
            return Err(CapiError::argument(
                "capacity",
                format!("{capacity} bytes is less than the block's {BLOCK_BYTES}"),
            ));
        }
        // SAFETY: valid for `capacity` bytes when not null (this function's contract).
        let out = unsafe { slice_mut(out, BLOCK_BYTES, "out") }?;
        out.copy_from_slice(&block_bytes(&uniforms.uniforms));
        Ok(BLOCK_BYTES as i32)
    })
}
