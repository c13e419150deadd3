//! Kernels specialised on the uniforms that decide control flow, compiled on demand, optionally
//! in the background.
//!
//! A compiled batch kernel (the structure-of-arrays JIT) is specialised on the bool and int
//! uniforms: with them fixed, the control flow that does not depend on per-vertex values is
//! known when compiling. [`Specializing`] keeps one kernel per [`VariantKey`] (at most
//! [`MAX_VARIANTS`] per program, least recently used evicted), compiles a missing one when a
//! batch needs it, and, in the background mode, runs batches on a zero-compile engine until the
//! compiled kernel is ready on a background thread, then switches: the first draw never waits for
//! the compiler. A variant that cannot be compiled (a program too large to specialise) runs on
//! the fallback engine for good. Every path gives the same bits (docs/execution-model.md §8).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use super::tiered::AdaptiveKernel;
use crate::exec::{
    BatchIo, EmitSink, ExecConfig, ExecError, GeometryState, GroupKernel, ShaderEngine,
    VertexResult,
};
use crate::program::{InputRegisters, ShaderProgram, Uniforms};

/// What a kernel is specialised on: the bool uniforms and the int uniforms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VariantKey {
    /// b0-b15.
    pub bools: u16,
    /// i0-i3.
    pub ints: [[u8; 4]; 4],
}

impl VariantKey {
    /// The key for a batch run with `uniforms`.
    pub fn of(uniforms: &Uniforms) -> VariantKey {
        VariantKey {
            bools: uniforms.bools,
            ints: uniforms.int,
        }
    }
}

/// The most specialised kernels kept per program.
pub const MAX_VARIANTS: usize = 8;

/// Compiles the kernel for one variant; `Err` says why it cannot be (the batch then runs on the
/// fallback engine).
pub type KernelCompiler = dyn Fn(&ShaderProgram, ExecConfig, VariantKey) -> Result<Box<dyn GroupKernel>, String>
    + Send
    + Sync;

enum Variant {
    /// Being compiled on a background thread.
    Compiling,
    Ready(Arc<AdaptiveKernel>),
    /// Not compilable; the reason.
    Refused(String),
}

/// How a missing variant is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompileMode {
    /// On the calling thread, before the batch runs.
    Blocking,
    /// On a background thread; batches run on the zero-compile engine meanwhile.
    Background,
}

struct Shared {
    program: ShaderProgram,
    config: ExecConfig,
    compiler: Box<KernelCompiler>,
    /// Most recently used last.
    variants: Mutex<VecDeque<(VariantKey, Variant)>>,
}

impl Shared {
    fn variants(&self) -> MutexGuard<'_, VecDeque<(VariantKey, Variant)>> {
        self.variants.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, key: VariantKey, variant: Variant) {
        let mut variants = self.variants();
        variants.retain(|(k, _)| *k != key);
        variants.push_back((key, variant));
        while variants.len() > MAX_VARIANTS {
            // Evict the least recently used finished variant (a compile in flight stays).
            match variants
                .iter()
                .position(|(_, v)| !matches!(v, Variant::Compiling))
            {
                Some(oldest) => {
                    variants.remove(oldest);
                }
                None => break,
            }
        }
    }

    fn compile(&self, key: VariantKey) -> Variant {
        let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            (self.compiler)(&self.program, self.config, key)
        }));
        match compiled {
            Ok(Ok(kernel)) => Variant::Ready(Arc::new(AdaptiveKernel::new(kernel))),
            Ok(Err(reason)) => Variant::Refused(reason),
            Err(_) => Variant::Refused("the compiler panicked (a bug)".to_string()),
        }
    }
}

/// A program's specialised kernels, with the engines that cover what they do not.
pub struct Specializing {
    name: &'static str,
    shared: Arc<Shared>,
    mode: CompileMode,
    /// Runs declined vertices, single vertices and geometry shaders.
    exact: Arc<dyn ShaderEngine>,
    /// Runs batches while a background compile is in flight, and those of refused variants.
    meanwhile: Arc<dyn ShaderEngine>,
}

/// Which engine ran (or will run) a batch of a [`Specializing`] engine, for reports and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VariantState {
    /// No kernel for these uniforms yet.
    Missing,
    /// Compiling in the background.
    Compiling,
    /// The compiled kernel.
    Ready,
    /// Not compilable: the reason.
    Refused(String),
}

impl Specializing {
    /// An engine named `name` that compiles kernels with `compiler` in `mode`; `exact` covers
    /// declined vertices, single vertices and geometry shaders, `meanwhile` runs batches while a
    /// background compile is in flight and those of variants that cannot be compiled. Both are
    /// prepared for `program` and `config`.
    pub fn new(
        name: &'static str,
        program: ShaderProgram,
        config: ExecConfig,
        compiler: Box<KernelCompiler>,
        mode: CompileMode,
        exact: Arc<dyn ShaderEngine>,
        meanwhile: Arc<dyn ShaderEngine>,
    ) -> Specializing {
        Specializing {
            name,
            shared: Arc::new(Shared {
                program,
                config,
                compiler,
                variants: Mutex::new(VecDeque::new()),
            }),
            mode,
            exact,
            meanwhile,
        }
    }

    /// The state of the variant for `uniforms`.
    pub fn variant_state(&self, uniforms: &Uniforms) -> VariantState {
        let key = VariantKey::of(uniforms);
        let variants = self.shared.variants();
        match variants.iter().find(|(k, _)| *k == key).map(|(_, v)| v) {
            None => VariantState::Missing,
            Some(Variant::Compiling) => VariantState::Compiling,
            Some(Variant::Ready(_)) => VariantState::Ready,
            Some(Variant::Refused(reason)) => VariantState::Refused(reason.clone()),
        }
    }

    /// How many variants are kept (compiling ones included).
    pub fn variant_count(&self) -> usize {
        self.shared.variants().len()
    }

    /// Compiles the variant for `uniforms` now if it is missing, and waits for a background
    /// compile of it to finish.
    pub fn ensure_compiled(&self, uniforms: &Uniforms) -> VariantState {
        let key = VariantKey::of(uniforms);
        loop {
            match self.variant_state(uniforms) {
                VariantState::Missing => {
                    let variant = self.shared.compile(key);
                    self.shared.publish(key, variant);
                }
                VariantState::Compiling => {
                    std::thread::sleep(std::time::Duration::from_micros(200))
                }
                state => return state,
            }
        }
    }

    /// The kernel to run `uniforms` with, if one is ready; starts (or runs) its compile when
    /// it is missing.
    fn kernel_for(&self, uniforms: &Uniforms) -> Option<Arc<AdaptiveKernel>> {
        let key = VariantKey::of(uniforms);
        {
            let mut variants = self.shared.variants();
            if let Some(at) = variants.iter().position(|(k, _)| *k == key) {
                // Most recently used goes last.
                let entry = variants.remove(at).expect("the position is in range");
                let kernel = match &entry.1 {
                    Variant::Ready(kernel) => Some(kernel.clone()),
                    Variant::Compiling | Variant::Refused(_) => None,
                };
                variants.push_back(entry);
                return kernel;
            }
            if self.mode == CompileMode::Background {
                variants.push_back((key, Variant::Compiling));
            }
        }
        match self.mode {
            CompileMode::Blocking => {
                let variant = self.shared.compile(key);
                let kernel = match &variant {
                    Variant::Ready(kernel) => Some(kernel.clone()),
                    _ => None,
                };
                self.shared.publish(key, variant);
                kernel
            }
            CompileMode::Background => {
                let shared = Arc::clone(&self.shared);
                let spawned = std::thread::Builder::new()
                    .name("picajit-compile".to_string())
                    .spawn(move || {
                        let variant = shared.compile(key);
                        shared.publish(key, variant);
                    });
                if spawned.is_err() {
                    // No thread: compile here rather than never.
                    let variant = self.shared.compile(key);
                    self.shared.publish(key, variant);
                }
                None
            }
        }
    }
}

impl ShaderEngine for Specializing {
    fn name(&self) -> &'static str {
        self.name
    }

    fn program(&self) -> &ShaderProgram {
        &self.shared.program
    }

    fn config(&self) -> ExecConfig {
        self.shared.config
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
        match self.kernel_for(uniforms) {
            Some(kernel) => {
                kernel.run(&*self.exact, uniforms, io, errors);
            }
            None => self.meanwhile.run_batch(uniforms, io, errors),
        }
    }

    fn warm_up(&self, uniforms: &Uniforms) {
        self.ensure_compiled(uniforms);
        self.exact.warm_up(uniforms);
        self.meanwhile.warm_up(uniforms);
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
