//! Choosing and preparing an engine: the layer above every engine.
//!
//! The contract every engine implements is [`crate::exec::ShaderEngine`]; this module knows the
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

use crate::exec::{ExecConfig, ShaderEngine};
use crate::interp::Interpreter;
use crate::jit::{JitError, JitShader};
use crate::program::ShaderProgram;
use cache::ProgramCache;

/// The engines there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// The reference interpreter.
    Interpreter,
    /// The Cranelift JIT.
    Jit,
}

impl EngineKind {
    /// Every engine, the reference first.
    pub const ALL: [EngineKind; 2] = [EngineKind::Interpreter, EngineKind::Jit];

    /// The command-line name.
    pub const fn name(self) -> &'static str {
        match self {
            EngineKind::Interpreter => "interp",
            EngineKind::Jit => "jit",
        }
    }

    /// What the engine is, in a line (command-line help).
    pub const fn summary(self) -> &'static str {
        match self {
            EngineKind::Interpreter => "the reference interpreter",
            EngineKind::Jit => "the Cranelift JIT",
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
    /// The engine panicked while preparing it (a bug; the cache reports it to every request
    /// that waited for that preparation).
    Panicked {
        /// The engine.
        engine: EngineKind,
    },
}

impl EngineError {
    /// The engine that failed.
    pub fn engine(&self) -> EngineKind {
        match self {
            EngineError::Jit(_) => EngineKind::Jit,
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
            EngineError::Panicked { .. } => f.write_str("it panicked while preparing it"),
        }
    }
}

impl std::error::Error for EngineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineError::Jit(error) => Some(error),
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
