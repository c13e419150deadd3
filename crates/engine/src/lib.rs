//! Choosing and preparing an engine: the layer above every engine.
//!
//! The contract every engine implements is [`shader::exec::ShaderEngine`]; this module knows the
//! engines there are ([`EngineKind`]), prepares a program with one of them ([`prepare`]), and
//! keeps prepared programs in a bounded, shared [`cache::ProgramCache`] ([`prepare_cached`]).
//! `picajit run --engine`, the differential tester and the benchmarks go through it; the engines
//! themselves never import each other or this module.

pub mod background;
pub mod cache;
pub mod parallel;
pub mod specialized;
pub mod tiered;

use std::fmt;
use std::sync::Arc;

use background::Background;
use cache::ProgramCache;
use jit::{ConstantLanes, JitError, JitShader, SoaJit};
use shader::exec::{ExecConfig, GroupKernel, HostPaths, Hosted, ShaderEngine};
use shader::interp::Interpreter;
use shader::program::{ShaderKind, ShaderProgram};
use specialized::{CompileMode, Specializing, VariantKey};
use tiered::KernelEngine;
use translate::host::engine::{GpuError, GpuShader, VulkanShader};
use vinterp::VectorInterpreter;

/// The engines there are (docs/batches.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// The reference interpreter.
    Interpreter,
    /// The Cranelift JIT, one vertex at a time.
    Jit,
    /// The structure-of-arrays JIT for batches, specialised on the bool and int uniforms and on
    /// the zeros and ones of the float uniforms it multiplies by, with the JIT for what it
    /// declines.
    SoaJit,
    /// The vectorised interpreter for batches (nothing to compile), with the interpreter for
    /// what it declines.
    VectorInterpreter,
    /// What an embedder wants: the vectorised interpreter at once, the structure-of-arrays
    /// JIT's kernels compiled in the background once the program is hot ([`HOT_INVOCATIONS`];
    /// geometry shaders: the interpreter until the JIT, compiled the same way, is ready).
    Auto,
    /// The program translated to GLSL and run by the host's OpenGL driver (docs/gpu-shaders.md).
    Gpu,
    /// The program translated to SPIR-V and run by the host's Vulkan driver
    /// (docs/gpu-shaders.md); geometry shaders where the device has them.
    Vulkan,
}

impl EngineKind {
    /// Every engine that runs on the CPU, the reference first: what the tests and the
    /// differential tester run unless told otherwise.
    pub const ALL: [EngineKind; 5] = [
        EngineKind::Interpreter,
        EngineKind::Jit,
        EngineKind::SoaJit,
        EngineKind::VectorInterpreter,
        EngineKind::Auto,
    ];

    /// Every engine, by the names the command line takes: the CPU's, then the host GPU's.
    pub const NAMED: [EngineKind; 7] = [
        EngineKind::Interpreter,
        EngineKind::Jit,
        EngineKind::SoaJit,
        EngineKind::VectorInterpreter,
        EngineKind::Auto,
        EngineKind::Gpu,
        EngineKind::Vulkan,
    ];

    /// The command-line name.
    pub const fn name(self) -> &'static str {
        match self {
            EngineKind::Interpreter => "interp",
            EngineKind::Jit => "jit",
            EngineKind::SoaJit => "soa-jit",
            EngineKind::VectorInterpreter => "vinterp",
            EngineKind::Auto => "auto",
            EngineKind::Gpu => "gpu",
            EngineKind::Vulkan => "vulkan",
        }
    }

    /// What the engine is, in a line (command-line help).
    pub const fn summary(self) -> &'static str {
        match self {
            EngineKind::Interpreter => "the reference interpreter",
            EngineKind::Jit => "the Cranelift JIT, one vertex at a time",
            EngineKind::SoaJit => {
                "the structure-of-arrays JIT for batches (4 vertices per vector), specialised on the bool and int uniforms and on the zeros and ones of the float uniforms it multiplies by"
            }
            EngineKind::VectorInterpreter => {
                "the vectorised interpreter for batches: nothing to compile"
            }
            EngineKind::Auto => {
                "vinterp at once, soa-jit compiled in the background once the program is hot (embedders' choice)"
            }
            EngineKind::Gpu => "the program translated to GLSL and run by the host's OpenGL driver",
            EngineKind::Vulkan => {
                "the program translated to SPIR-V and run by the host's Vulkan driver"
            }
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an engine could not prepare a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineError {
    /// The JIT could not compile it (an environment problem, never the program's).
    Jit(JitError),
    /// The host GPU could not translate or run it through OpenGL.
    Gpu(GpuError),
    /// The host GPU could not translate or run it through Vulkan.
    Vulkan(GpuError),
    /// The engine panicked while preparing it (a bug; the cache reports it to every request
    /// that waited for that preparation).
    Panicked {
        /// The engine.
        engine: EngineKind,
    },
}

impl EngineError {
    /// Whether the engine does not run this kind of program at all (the host GPU engines and
    /// geometry shaders), as opposed to failing on it: the differential tester counts such a
    /// program as not run by that engine, not as a mismatch.
    pub fn is_unsupported(&self) -> bool {
        matches!(
            self,
            EngineError::Gpu(GpuError::NoGeometryStage(_))
                | EngineError::Vulkan(GpuError::NoGeometryStage(_))
        )
    }

    /// The engine that failed.
    pub fn engine(&self) -> EngineKind {
        match self {
            EngineError::Jit(_) => EngineKind::Jit,
            EngineError::Gpu(_) => EngineKind::Gpu,
            EngineError::Vulkan(_) => EngineKind::Vulkan,
            EngineError::Panicked { engine } => *engine,
        }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} engine cannot prepare the program: ",
            self.engine()
        )?;
        match self {
            EngineError::Jit(error) => write!(f, "{error}"),
            EngineError::Gpu(error) | EngineError::Vulkan(error) => write!(f, "{error}"),
            EngineError::Panicked { .. } => f.write_str("it panicked while preparing it"),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineError::Jit(error) => Some(error),
            EngineError::Gpu(error) | EngineError::Vulkan(error) => Some(error),
            EngineError::Panicked { .. } => None,
        }
    }
}

impl From<JitError> for EngineError {
    fn from(error: JitError) -> EngineError {
        EngineError::Jit(error)
    }
}

/// Prepares `program` with the engine `kind`.
pub fn prepare(
    kind: EngineKind,
    program: ShaderProgram,
    config: ExecConfig,
) -> Result<Box<dyn ShaderEngine>, EngineError> {
    match kind {
        EngineKind::Interpreter => Ok(Box::new(Interpreter::new(program, config))),
        EngineKind::Jit => Ok(Box::new(JitShader::compile(program, config)?)),
        EngineKind::SoaJit => {
            let jit: Arc<dyn ShaderEngine> = Arc::new(JitShader::compile(program.clone(), config)?);
            if program.stage != ShaderKind::Vertex {
                // Geometry shaders run one invocation at a time: there is no batch to vectorise.
                return Ok(Box::new(Renamed {
                    name: kind.name(),
                    inner: jit,
                }));
            }
            Ok(Box::new(soa_kernels(
                kind,
                program,
                config,
                CompileMode::Blocking,
                jit.clone(),
                jit,
            )))
        }
        EngineKind::VectorInterpreter => Ok(Box::new(vector_interpreter(program, config))),
        EngineKind::Gpu => Ok(Box::new(
            GpuShader::compile(program, config).map_err(EngineError::Gpu)?,
        )),
        EngineKind::Vulkan => Ok(Box::new(
            VulkanShader::compile(program, config).map_err(EngineError::Vulkan)?,
        )),
        EngineKind::Auto => {
            let interp: Arc<dyn ShaderEngine> = Arc::new(Interpreter::new(program.clone(), config));
            if program.stage != ShaderKind::Vertex {
                let compile = move || -> Result<Box<dyn ShaderEngine>, EngineError> {
                    Ok(Box::new(JitShader::compile(program, config)?))
                };
                return Ok(Box::new(Background::when_hot(
                    kind.name(),
                    interp,
                    HOT_INVOCATIONS,
                    compile,
                )));
            }
            let vinterp: Arc<dyn ShaderEngine> =
                Arc::new(vector_interpreter(program.clone(), config));
            // What the kernels decline (groups that run out of their budget) and single vertices
            // run on the interpreter until the JIT has compiled in the background too.
            let jit_program = program.clone();
            let compile_jit = move || -> Result<Box<dyn ShaderEngine>, EngineError> {
                Ok(Box::new(JitShader::compile(jit_program, config)?))
            };
            let exact: Arc<dyn ShaderEngine> = Arc::new(Background::when_hot(
                kind.name(),
                interp,
                HOT_INVOCATIONS,
                compile_jit,
            ));
            Ok(Box::new(soa_kernels(
                kind,
                program,
                config,
                CompileMode::Background {
                    hot_after: HOT_INVOCATIONS,
                },
                exact,
                vinterp,
            )))
        }
    }
}

/// How many invocations (vertices of batches, single vertices, geometry-shader invocations)
/// make a program hot for [`EngineKind::Auto`]: until then it runs on the engines that need no
/// compile, and only then do its compiles start in the background (docs/batches.md,
/// "Tiers"). A compile takes a core for milliseconds; a program that runs less than this saves
/// less than that by being compiled, and on a small machine the compile would slow the rest of
/// the work (rasterization) that runs beside it.
pub const HOT_INVOCATIONS: u64 = 8192;

/// The vectorised interpreter with the reference interpreter for what it declines.
fn vector_interpreter(program: ShaderProgram, config: ExecConfig) -> KernelEngine {
    let kernel = VectorInterpreter::new(&program, config);
    KernelEngine::new(
        Box::new(kernel),
        Arc::new(Interpreter::new(program, config)),
    )
}

/// Structure-of-arrays kernels for `program`, specialised per batch on its bool and int uniforms
/// and the zeros and ones of the float uniforms it multiplies by, compiled in `mode`.
fn soa_kernels(
    kind: EngineKind,
    program: ShaderProgram,
    config: ExecConfig,
    mode: CompileMode,
    exact: Arc<dyn ShaderEngine>,
    meanwhile: Arc<dyn ShaderEngine>,
) -> Specializing {
    let candidates = ConstantLanes::candidates(&program);
    Specializing::new(
        kind.name(),
        program,
        config,
        Box::new(compile_soa),
        mode,
        exact,
        meanwhile,
    )
    .with_constant_lanes(candidates)
}

/// Compiles the structure-of-arrays kernel of one specialisation.
fn compile_soa(
    program: &ShaderProgram,
    config: ExecConfig,
    key: VariantKey,
) -> Result<Box<dyn GroupKernel>, String> {
    match SoaJit::compile_specialised(program, config, key.bools, key.ints, key.constants) {
        Ok(kernel) => Ok(Box::new(kernel)),
        Err(e) => Err(e.to_string()),
    }
}

/// An engine under another name (the engine kind the caller asked for).
struct Renamed {
    name: &'static str,
    inner: Arc<dyn ShaderEngine>,
}

impl ShaderEngine for Renamed {
    fn name(&self) -> &'static str {
        self.name
    }
    fn program(&self) -> &ShaderProgram {
        self.inner.program()
    }
    fn config(&self) -> ExecConfig {
        self.inner.config()
    }
    fn run_vertex(
        &self,
        uniforms: &shader::program::Uniforms,
        inputs: &shader::program::InputRegisters,
    ) -> Result<shader::exec::VertexResult, shader::exec::ExecError> {
        self.inner.run_vertex(uniforms, inputs)
    }
    fn run_batch(
        &self,
        uniforms: &shader::program::Uniforms,
        io: &mut shader::exec::BatchIo<'_>,
        errors: &mut Vec<(usize, shader::exec::ExecError)>,
    ) {
        self.inner.run_batch(uniforms, io, errors)
    }
    fn run_geometry(
        &self,
        state: &mut shader::exec::GeometryState,
        uniforms: &shader::program::Uniforms,
        inputs: &shader::program::InputRegisters,
        sink: &mut dyn shader::exec::EmitSink,
    ) -> Result<(), shader::exec::ExecError> {
        self.inner.run_geometry(state, uniforms, inputs, sink)
    }

    fn host_paths(&self) -> Option<&dyn HostPaths> {
        Some(self)
    }
}

/// The inner engine's paths.
impl HostPaths for Renamed {
    fn run_vertex_into(
        &self,
        uniforms: &shader::program::Uniforms,
        inputs: &shader::program::InputRegisters,
        outputs: &mut [shader::program::Vec4; 16],
    ) -> Result<shader::program::FlowRegisters, shader::exec::ExecError> {
        Hosted(&*self.inner).run_vertex_into(uniforms, inputs, outputs)
    }

    fn warm_up(&self, uniforms: &shader::program::Uniforms) {
        Hosted(&*self.inner).warm_up(uniforms)
    }
    fn compile_status(&self, uniforms: &shader::program::Uniforms) -> shader::exec::CompileStatus {
        Hosted(&*self.inner).compile_status(uniforms)
    }
    fn vertex_runner(&self) -> shader::exec::VertexRunner {
        shader::exec::VertexRunner::through(&self.inner)
    }
}

/// Prepares `program` with the engine `kind` through `cache`: an identical earlier request (the
/// same engine, code, descriptors, entry point, stage, output mask and settings) gets the
/// program prepared then instead of compiling again; see [`cache`].
///
/// The program is borrowed because a hit (the common case: an emulator re-uploading the same
/// code before each draw) needs no copy of it. The engine is shared with the cache, hence the
/// [`Arc`].
pub fn prepare_cached(
    cache: &ProgramCache,
    kind: EngineKind,
    program: &ShaderProgram,
    config: ExecConfig,
) -> Result<Arc<dyn ShaderEngine>, EngineError> {
    cache.get_or_prepare(kind, program, config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_which_engine_and_what_failed() {
        let error = EngineError::from(JitError::Finalization {
            detail: "no executable memory".to_string(),
        });
        assert_eq!(error.engine(), EngineKind::Jit);
        assert_eq!(
            error.to_string(),
            "the jit engine cannot prepare the program: finalizing the code: no executable memory"
        );
        let panicked = EngineError::Panicked {
            engine: EngineKind::Interpreter,
        };
        assert!(panicked.to_string().starts_with("the interp engine"));
    }
}
