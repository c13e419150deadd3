//! A batch tier and its exact fallback, composed: the engine an embedder gets for a fast tier.
//!
//! A [`GroupKernel`] (a vectorised interpreter, a structure-of-arrays JIT) runs whole groups of
//! vertices and declines the vertices it cannot finish exactly; [`KernelEngine`] runs those
//! again, one at a time, on an exact per-vertex engine, so the batch's results are that
//! engine's whatever the kernel declined (docs/execution-model.md §8). Per-vertex calls and
//! geometry shaders go straight to the exact engine. The two engines never know of each other.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use shader::exec::{
    BatchIo, CompileStatus, EmitSink, ExecConfig, ExecError, GeometryState, GroupKernel, HostPaths,
    Hosted, RecordIo, ShaderEngine, VertexResult, VertexRunner,
};
use shader::program::{FlowRegisters, InputRegisters, ShaderProgram, Uniforms, Vec4};

/// A [`GroupKernel`] with an exact engine for what it declines.
pub struct KernelEngine {
    kernel: AdaptiveKernel,
    exact: Arc<dyn ShaderEngine>,
}

impl KernelEngine {
    /// `kernel` for batches, `exact` (prepared for the same program and settings) for the
    /// vertices it declines, single vertices and geometry shaders.
    pub fn new(kernel: Box<dyn GroupKernel>, exact: Arc<dyn ShaderEngine>) -> KernelEngine {
        KernelEngine {
            kernel: AdaptiveKernel::new(kernel),
            exact,
        }
    }
}

/// A kernel, and whether it has proved not worth running: when most vertices of a batch are
/// declined (a program whose vertices run out of their budget, say),
/// running the kernel first only adds to what the exact engine does anyway, so later batches go
/// straight to the exact engine's own batch path (trying the kernel again now and then).
pub struct AdaptiveKernel {
    kernel: Box<dyn GroupKernel>,
    bypass: AtomicBool,
    /// Batches run since the kernel stepped aside: every [`RETRY_AFTER`]-th tries it again, in
    /// case the data changed.
    bypassed_batches: AtomicU32,
}

/// How many batches an [`AdaptiveKernel`] that stepped aside lets pass before trying again.
pub const RETRY_AFTER: u32 = 64;

/// A batch of at least this many vertices in which more than half are declined makes an
/// [`AdaptiveKernel`] step aside.
pub const BYPASS_MIN_BATCH: usize = 64;

impl AdaptiveKernel {
    /// `kernel`, run until it proves not worth it.
    pub fn new(kernel: Box<dyn GroupKernel>) -> AdaptiveKernel {
        AdaptiveKernel {
            kernel,
            bypass: AtomicBool::new(false),
            bypassed_batches: AtomicU32::new(0),
        }
    }

    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.kernel.name()
    }

    /// Whether batches now go straight to the exact engine.
    pub fn bypassed(&self) -> bool {
        self.bypass.load(Ordering::Relaxed)
    }

    /// Runs the kernel on `io`, then every declined vertex on `exact` (or, once bypassed, the
    /// whole batch on `exact`).
    pub fn run(
        &self,
        exact: &dyn ShaderEngine,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        if self.bypassed() {
            let passed = self.bypassed_batches.fetch_add(1, Ordering::Relaxed) + 1;
            if !passed.is_multiple_of(RETRY_AFTER) {
                exact.run_batch(uniforms, io, errors);
                return;
            }
        }
        let count = io.count();
        let declined = run_with_fallback(&*self.kernel, exact, uniforms, io, errors);
        self.note_declined(declined, count);
    }

    /// [`run`](Self::run) on vertex records: whether the kernel ran them (not once it stepped
    /// aside, nor when it reads only planes: the caller then runs the batch in planes, which
    /// counts the bypassed batches).
    pub fn run_records(
        &self,
        exact: &dyn ShaderEngine,
        uniforms: &Uniforms,
        io: &mut RecordIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) -> bool {
        if self.bypassed() {
            return false;
        }
        let mut declined = Vec::new();
        if !self.kernel.run_records(uniforms, io, &mut declined) {
            return false;
        }
        debug_assert!(declined.windows(2).all(|w| w[0] < w[1]));
        for &i in &declined {
            let outcome = exact.run_vertex(uniforms, &io.inputs[i]);
            io.store(i, outcome, errors);
        }
        self.note_declined(declined.len(), io.count());
        true
    }

    /// Steps aside after a large batch in which the kernel declined most vertices (and back
    /// after one in which it did not).
    fn note_declined(&self, declined: usize, count: usize) {
        if count >= BYPASS_MIN_BATCH {
            self.bypass.store(2 * declined > count, Ordering::Relaxed);
        }
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
        self.kernel.run(&*self.exact, uniforms, io, errors);
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

    fn host_paths(&self) -> Option<&dyn HostPaths> {
        Some(self)
    }
}

/// The exact engine's single vertices, the kernel's records, the exact engine's compiles.
impl HostPaths for KernelEngine {
    fn run_vertex_into(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        Hosted(&*self.exact).run_vertex_into(uniforms, inputs, outputs)
    }

    fn run_records(
        &self,
        uniforms: &Uniforms,
        io: &mut RecordIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) -> bool {
        self.kernel.run_records(&*self.exact, uniforms, io, errors)
    }

    fn warm_up(&self, uniforms: &Uniforms) {
        Hosted(&*self.exact).warm_up(uniforms)
    }

    fn compile_status(&self, uniforms: &Uniforms) -> CompileStatus {
        Hosted(&*self.exact).compile_status(uniforms)
    }

    fn vertex_runner(&self) -> VertexRunner {
        VertexRunner::through(&self.exact)
    }
}
