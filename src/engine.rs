//! One interface for every engine: compile a program once, run vertices or geometry-shader
//! invocations on it.
//!
//! The reference interpreter ([`crate::interp::Interpreter`]) and the JIT both implement
//! [`ShaderEngine`]; `picajit run --engine`, the differential tester, the benchmarks and the
//! pipeline only talk to this trait. Both engines must agree bit for bit (`semantics.md`
//! section 8): the same output bits, emitted vertices, final a0/aL/cmp and error kinds.

use std::fmt;
use std::sync::Arc;

use crate::interp::{
    ExecConfig, ExecError, GeometryResult, GeometryState, Interpreter, VertexResult,
};
use crate::jit::cache::ProgramCache;
use crate::program::{InputRegisters, ShaderProgram, Uniforms};

/// A program prepared by one engine.
pub trait ShaderEngine: Send + Sync {
    /// The engine's name (`"interp"`, `"jit"`).
    fn name(&self) -> &'static str;

    /// The program it runs.
    fn program(&self) -> &ShaderProgram;

    /// The settings it was prepared with.
    fn config(&self) -> ExecConfig;

    /// Runs one vertex-shader invocation from zeroed registers.
    fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError>;

    /// Runs one geometry-shader invocation on the persistent `state`.
    fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<GeometryResult, ExecError>;

    /// Runs a batch of vertices, appending one result per input to `results`.
    fn run_vertices(
        &self,
        uniforms: &Uniforms,
        inputs: &[InputRegisters],
        results: &mut Vec<Result<VertexResult, ExecError>>,
    ) {
        results.extend(inputs.iter().map(|v| self.run_vertex(uniforms, v)));
    }
}

impl ShaderEngine for Interpreter {
    fn name(&self) -> &'static str {
        "interp"
    }

    fn program(&self) -> &ShaderProgram {
        Interpreter::program(self)
    }

    fn config(&self) -> ExecConfig {
        Interpreter::config(self)
    }

    fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        Interpreter::run_vertex(self, uniforms, inputs)
    }

    fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<GeometryResult, ExecError> {
        Interpreter::run_geometry(self, state, uniforms, inputs)
    }
}

/// The engines there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// The reference interpreter.
    Interpreter,
    /// The Cranelift JIT.
    Jit,
}

impl EngineKind {
    /// The command-line name.
    pub const fn name(self) -> &'static str {
        match self {
            EngineKind::Interpreter => "interp",
            EngineKind::Jit => "jit",
        }
    }
}

/// Why an engine could not prepare a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineError {
    /// The engine.
    pub engine: EngineKind,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} engine cannot prepare the program: {}",
            self.engine.name(),
            self.message
        )
    }
}

impl std::error::Error for EngineError {}

fn jit_error(error: crate::jit::JitError) -> EngineError {
    EngineError {
        engine: EngineKind::Jit,
        message: error.to_string(),
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
        EngineKind::Jit => Ok(Box::new(
            crate::jit::JitShader::compile(program, config).map_err(jit_error)?,
        )),
    }
}

/// Prepares `program` with the engine `kind` through `cache`: the JIT hands out the program
/// compiled for an identical earlier request (the same code, descriptors, entry point, stage,
/// output mask and settings) instead of compiling again; see [`crate::jit::cache`]. The
/// interpreter has nothing to compile and is never cached.
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
    match kind {
        EngineKind::Interpreter => Ok(Arc::new(Interpreter::new(program.clone(), config))),
        EngineKind::Jit => Ok(cache.get_or_compile(program, config).map_err(jit_error)?),
    }
}
