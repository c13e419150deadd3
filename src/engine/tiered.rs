//! A batch tier and its exact fallback, composed: the engine an embedder gets for a fast tier.
//!
//! A [`GroupKernel`] (a vectorised interpreter, a structure-of-arrays JIT) runs whole groups of
//! vertices and declines the vertices it cannot finish exactly; [`KernelEngine`] runs those
//! again, one at a time, on an exact per-vertex engine, so the batch's results are that
//! engine's whatever the kernel declined (docs/execution-model.md §8). Per-vertex calls and
//! geometry shaders go straight to the exact engine. The two engines never know of each other.

use std::sync::Arc;

use crate::exec::{
    BatchIo, EmitSink, ExecConfig, ExecError, GeometryState, GroupKernel, ShaderEngine,
    VertexResult,
};
use crate::program::{InputRegisters, ShaderProgram, Uniforms};

/// A [`GroupKernel`] with an exact engine for what it declines.
pub struct KernelEngine {
    kernel: Box<dyn GroupKernel>,
    exact: Arc<dyn ShaderEngine>,
}

impl KernelEngine {
    /// `kernel` for batches, `exact` (prepared for the same program and settings) for the
    /// vertices it declines, single vertices and geometry shaders.
    pub fn new(kernel: Box<dyn GroupKernel>, exact: Arc<dyn ShaderEngine>) -> KernelEngine {
        KernelEngine { kernel, exact }
    }

    /// The exact engine.
    pub fn exact(&self) -> &Arc<dyn ShaderEngine> {
        &self.exact
    }
}

/// Runs `kernel` on `io`, then every declined vertex on `exact`; returns how many it declined.
pub fn run_with_fallback(
    kernel: &dyn GroupKernel,
    exact: &dyn ShaderEngine,
    uniforms: &Uniforms,
    io: &mut BatchIo<'_>,
    errors: &mut Vec<(usize, ExecError)>,
) -> usize {
    let mut declined = Vec::new();
    kernel.run(uniforms, io, &mut declined);
    // Errors must come out in vertex order; the kernel itself reports none.
    debug_assert!(declined.windows(2).all(|w| w[0] < w[1]));
    for &i in &declined {
        let inputs = io.inputs.vertex(i);
        let outcome = exact.run_vertex(uniforms, &inputs);
        io.store(i, outcome, errors);
    }
    declined.len()
}

impl ShaderEngine for KernelEngine {
    fn name(&self) -> &'static str {
        self.kernel.name()
    }

    fn program(&self) -> &ShaderProgram {
        self.exact.program()
    }

    fn config(&self) -> ExecConfig {
        self.exact.config()
    }

    fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        self.exact.run_vertex(uniforms, inputs)
    }

    fn run_batch(
        &self,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        run_with_fallback(&*self.kernel, &*self.exact, uniforms, io, errors);
    }

    fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        self.exact.run_geometry(state, uniforms, inputs, sink)
    }
}
