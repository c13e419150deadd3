//! PICA200 shaders translated for host GPUs, exact (docs/gpu-shaders.md).
//!
//! A program becomes a module of the shader IR ([`ir`]): its operations are the model's visitor
//! run on IR ([`program`]), its arithmetic the model's float24 rules run on IR ([`lanes`]) over
//! IEEE operations that are exact on the host ([`primitives`], [`double`]), its control flow
//! the model's step ([`dispatch`]). Printers turn the module into GLSL ([`mod@glsl`]) and
//! SPIR-V ([`spv`]); [`host`] runs a translation on a real GPU API to check it against the
//! interpreter.
#![warn(missing_docs)]

pub mod dispatch;
pub mod double;
pub mod geometry;
pub mod glsl;
pub mod host;
pub mod interface;
pub mod ir;
pub mod lanes;
pub mod names;
pub mod primitives;
pub mod program;
pub mod spv;
pub mod structured;

use std::fmt;

use shader::exec::{DEFAULT_INSTRUCTION_BUDGET, ExecConfig};
use shader::float24::Precision;
use shader::program::{ShaderKind, ShaderProgram};

use crate::geometry::{Geometry, GeometryForm};
use crate::interface::Interface;
use crate::ir::Module;
use crate::ir::build::ModuleBuilder;
use crate::names::Names;

/// What a translation is made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// The precision mode (docs/execution-model.md §2).
    pub precision: Precision,
    /// The instruction budget of one invocation (at most [`dispatch::GREATEST_BUDGET`]).
    pub instruction_budget: u64,
    /// Whether the shader also writes its end state (a0, aL, cmp, how it stopped) to
    /// `pica_end_state`: what the checking engine reads back.
    pub end_state: bool,
    /// Whether the structured form is taken where the program allows ([`structured`]); off,
    /// every program takes the general form.
    pub structure: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            precision: Precision::default(),
            instruction_budget: DEFAULT_INSTRUCTION_BUDGET,
            end_state: false,
            structure: true,
        }
    }
}

impl Options {
    /// The options of an engine prepared under `config`.
    pub fn of(config: ExecConfig, end_state: bool) -> Options {
        Options {
            precision: config.precision,
            instruction_budget: config.instruction_budget,
            end_state,
            structure: true,
        }
    }
}

/// Why a program was not translated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TranslateError {
    /// A geometry shader for a target without a geometry stage: GLSL ES 3.00.
    GeometryShader,
}

impl fmt::Display for TranslateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TranslateError::GeometryShader => f.write_str(
                "this target has no geometry shaders (GLSL 3.30, 4.50, ES 3.20 and SPIR-V do)",
            ),
        }
    }
}

impl std::error::Error for TranslateError {}

/// The form a program's control flow took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// If/else and loops from the model's exploration of the flow ([`structured`]).
    Structured,
    /// The dispatch loop over runs, with the stacks in arrays ([`dispatch`]).
    Dispatch,
}

impl Form {
    /// The name reports use.
    pub const fn name(self) -> &'static str {
        match self {
            Form::Structured => "structured",
            Form::Dispatch => "dispatch",
        }
    }
}

/// A translated program.
#[derive(Clone, Debug)]
pub struct Translation {
    /// The IR module.
    pub module: Module,
    /// The form its control flow took.
    pub form: Form,
    /// Why it is not structured (`None` when it is, or when the structured form was not
    /// asked for).
    pub unstructured: Option<structured::Unstructured>,
    /// What it was made for.
    pub options: Options,
}

/// Translates `program` (its entry is the entry point `entry`).
pub fn translate(
    program: &ShaderProgram,
    options: &Options,
    entry: &str,
) -> Result<Translation, TranslateError> {
    translate_named(program, options, entry, &Names::none())
}

/// Translates `program`, each statement's comment naming the registers `names` names.
pub fn translate_named(
    program: &ShaderProgram,
    options: &Options,
    entry: &str,
    names: &Names,
) -> Result<Translation, TranslateError> {
    let mut module = ModuleBuilder::new();
    if program.stage == ShaderKind::Geometry {
        let form = if options.end_state {
            GeometryForm::Records
        } else {
            GeometryForm::Triangles
        };
        module.geometry = Some(Geometry::of(program, form));
    }
    let plan = if options.structure {
        structured::plan(program, options).map_err(Some)
    } else {
        Err(None)
    };
    let (form, unstructured) = match plan {
        Ok(plan) => {
            structured::translate(&mut module, program, &plan, options, entry, names)?;
            (Form::Structured, None)
        }
        Err(why) => {
            dispatch::translate(&mut module, program, options, entry, names)?;
            (Form::Dispatch, why)
        }
    };
    Ok(Translation {
        module: module.finish(),
        form,
        unstructured,
        options: *options,
    })
}

/// `translation` as GLSL of `dialect`; a geometry shader needs a dialect with a geometry stage
/// (not GLSL ES 3.00).
pub fn glsl(
    translation: &Translation,
    dialect: glsl::Dialect,
    interface: &Interface,
) -> Result<String, TranslateError> {
    if translation.module.geometry.is_some() && dialect == glsl::Dialect::Es300 {
        return Err(TranslateError::GeometryShader);
    }
    Ok(glsl::print(&translation.module, interface, dialect))
}

/// `translation` as SPIR-V words: a Vulkan vertex or geometry shader module.
pub fn spirv(
    translation: &Translation,
    interface: &Interface,
    options: &spv::SpirvOptions,
) -> Result<Vec<u32>, TranslateError> {
    Ok(spv::print(&translation.module, interface, options))
}
