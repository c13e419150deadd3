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
    /// Whether each statement has its comment (its PICA address and instruction, the
    /// registers' names): for readers (`decompile`), not for a driver.
    pub comments: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            precision: Precision::default(),
            instruction_budget: DEFAULT_INSTRUCTION_BUDGET,
            end_state: false,
            structure: true,
            comments: true,
        }
    }
}

impl Options {
    /// The options of an engine prepared under `config`: no comments (no driver reads them).
    pub fn of(config: ExecConfig, end_state: bool) -> Options {
        Options {
            precision: config.precision,
            instruction_budget: config.instruction_budget,
            end_state,
            structure: true,
            comments: false,
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
    // Every helper's body depends on its name and the precision mode alone.
    let module = ModuleBuilder::keeping_helpers(options.precision as u32);
    translate_into(module, program, options, entry, names)
}

/// Translates `program` into `module`, an empty one.
fn translate_into(
    mut module: ModuleBuilder,
    program: &ShaderProgram,
    options: &Options,
    entry: &str,
    names: &Names,
) -> Result<Translation, TranslateError> {
    module.without_comments = !options.comments;
    // Decoded once for every phase: 4096 words, mostly a run of zeros past the code.
    let decoded = shader::isa::decode_words(&program.code[..]);
    if program.stage == ShaderKind::Geometry {
        let form = if options.end_state {
            GeometryForm::Records
        } else {
            GeometryForm::Triangles
        };
        module.geometry = Some(Geometry::of(&decoded, form));
    }
    let plan = if options.structure {
        structured::plan(program, &decoded, options).map_err(Some)
    } else {
        Err(None)
    };
    let (form, unstructured) = match plan {
        Ok(plan) => {
            structured::translate(&mut module, program, &decoded, &plan, options, entry, names)?;
            (Form::Structured, None)
        }
        Err(why) => {
            dispatch::translate(&mut module, program, &decoded, options, entry, names)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use shader::asm::{AsmOptions, SourceFile, assemble};

    /// A vertex program of `body` with uniforms ma and mb and two outputs.
    pub(crate) fn program(body: &str) -> ShaderProgram {
        let files = [SourceFile {
            name: "t.v.pica".into(),
            text: format!(
                ".fvec ma, mb\n.out outpos position\n.out outc color\n.proc main\n{body}\n.end\n"
            ),
        }];
        let shbin = assemble(&files, AsmOptions::default())
            .expect("the test program assembles")
            .shbin;
        ShaderProgram::from_shbin(&shbin, 0).unwrap()
    }

    #[test]
    fn kept_helpers_give_the_module_building_them_anew_gives() {
        // Programs sharing some helpers (mul, dp4, rcp's exact division) and not others, in
        // turn, so that each adopts helpers the others left, their callee lists mapped anew.
        let bodies = [
            "dp4 outpos.x, ma, v0\nmul outc, mb, v1\nend",
            "rcp outpos, v0.x\ndp4 outc.y, ma, v1\nend",
            "ex2 outpos, v0.y\nrcp outc, v1.z\nmov r0, v0\nmul outc.x, r0, v0\nend",
            "lg2 outpos, v0.y\nslt outc, v1, ma\nflr outc.y, v0\nmova a0.x, v1\nend",
        ];
        let mut adopted = 0;
        for precision in Precision::ALL {
            let options = Options {
                precision,
                ..Options::default()
            };
            for _ in 0..2 {
                for body in bodies {
                    let program = program(body);
                    let kept = translate(&program, &options, "main").unwrap();
                    let anew = translate_into(
                        ModuleBuilder::new(),
                        &program,
                        &options,
                        "main",
                        &Names::none(),
                    )
                    .unwrap();
                    assert_eq!(kept.module, anew.module, "{body} in {precision}");
                    let helpers = &kept.module.functions[..kept.module.functions.len() - 1];
                    adopted += helpers
                        .iter()
                        .filter(|m| ir::build::kept::holds(&m.function))
                        .count();
                }
            }
        }
        // Every helper is kept once built: the second pass adopts all of them.
        assert!(adopted > 60, "{adopted} helpers kept");
    }

    #[test]
    fn every_branch_condition_starts_with_the_fence() {
        use crate::ir::{BinaryOp, Expr, ExprId, Function, Global, Place, Stmt};

        // Whether `e` is a value bound at the top of `f` to `c[i].x != c[0].x`, `i` not a
        // constant: what no compiler can fold and Mesa's uniform search cannot pass.
        fn is_fence(f: &Function, e: ExprId) -> bool {
            let Expr::Bound(id) = *f.expr(e) else {
                return false;
            };
            let Some(value) = f.body.iter().find_map(|stmt| match *stmt {
                Stmt::Let(bound, value) if bound == id => Some(value),
                _ => None,
            }) else {
                return false;
            };
            let Expr::Binary(BinaryOp::Ne, moving, _) = *f.expr(value) else {
                return false;
            };
            let Expr::Swizzle(element, ref lanes) = *f.expr(moving) else {
                return false;
            };
            let Expr::Load(Place::GlobalElement(Global::FloatUniforms, index)) = *f.expr(element)
            else {
                return false;
            };
            **lanes == [0] && !matches!(f.expr(index), Expr::Constant(_))
        }

        fn check(f: &Function, block: &[Stmt], branches: &mut usize) {
            for stmt in block {
                match stmt {
                    Stmt::If(condition, then, otherwise) => {
                        let fenced = matches!(*f.expr(*condition),
                            Expr::Binary(BinaryOp::Or, fence, _) if is_fence(f, fence));
                        assert!(fenced, "{}: a branch without the fence first", f.name);
                        *branches += 1;
                        check(f, then, branches);
                        check(f, otherwise, branches);
                    }
                    Stmt::Loop(body) => check(f, body, branches),
                    Stmt::Switch(_, cases, default) => {
                        for (_, body) in cases {
                            check(f, body, branches);
                        }
                        check(f, default, branches);
                    }
                    _ => {}
                }
            }
        }

        // EX2 and RCP bring the helpers with early returns (the soft doubles in f32), IFC a
        // branch of the program, and the general form its dispatch loop's own branches.
        let program = program(
            "ex2 r0, ma.x\nrcp r1, r0.y\ncmp ma.xy, lt, gt, r1.xy\nifc cmp.x\n\
             mul outpos, r0, r1\n.else\nmov outpos, v0\n.end\nmov outc, r1\nend",
        );
        for precision in Precision::ALL {
            for structure in [true, false] {
                let options = Options {
                    precision,
                    structure,
                    ..Options::default()
                };
                let translation = translate(&program, &options, "main").unwrap();
                let mut branches = 0;
                for member in &translation.module.functions {
                    let f = &member.function;
                    check(f, &f.body, &mut branches);
                }
                assert!(branches >= 3, "{branches} branches in {precision}");
            }
        }
    }
}
