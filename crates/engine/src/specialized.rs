//! Kernels specialised on the uniforms that decide control flow, compiled on demand, optionally
//! in the background.
//!
//! A compiled batch kernel (the structure-of-arrays JIT) is specialised on the bool and int
//! uniforms: with them fixed, the control flow that does not depend on per-vertex values is
//! known when compiling. It may also be specialised on the float uniform components that are
//! zero or +1.0 where the program multiplies by them ([`ConstantLanes`]; at most
//! [`MAX_CONSTANT_PATTERNS`] such patterns per program). [`Specializing`] keeps one kernel per
//! [`VariantKey`] (at most [`MAX_VARIANTS`] per program, least recently used evicted), compiles
//! a missing one when a
//! batch needs it, and, in the background mode, runs batches on a zero-compile engine until the
//! compiled kernel is ready on a background thread, then switches: the first draw never waits for
//! the compiler. A variant that cannot be compiled (a program too large to specialise) runs on
//! the fallback engine for good. Every path gives the same bits (docs/execution-model.md §8).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::tiered::AdaptiveKernel;
use jit::{ConstantLanes, UniformComponents};
use shader::exec::{
    BatchIo, BatchLayout, CompileStatus, EmitSink, ExecConfig, ExecError, GeometryState,
    GroupKernel, HostPaths, Hosted, RecordIo, ShaderEngine, VertexResult, VertexRunner,
};
use shader::program::{
    FLOAT_UNIFORMS, FlowRegisters, InputRegisters, ShaderProgram, Uniforms, Vec4,
};

/// What a kernel is specialised on: the bool uniforms, the int uniforms and the float uniform
/// components known to be zero or +1.0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VariantKey {
    /// b0-b15.
    pub bools: u16,
    /// i0-i3.
    pub ints: [[u8; 4]; 4],
    /// The float uniform components the kernel takes as zero or +1.0 ([`ConstantLanes::NONE`]
    /// for a kernel that runs with any float uniforms).
    pub constants: ConstantLanes,
}

impl VariantKey {
    /// The key for a batch run with `uniforms`, with no float uniform component known.
    pub fn of(uniforms: &Uniforms) -> VariantKey {
        VariantKey {
            bools: uniforms.bools,
            ints: uniforms.int,
            constants: ConstantLanes::NONE,
        }
    }
}

/// The most specialised kernels kept per program.
pub const MAX_VARIANTS: usize = 8;

/// The most distinct patterns of known float uniform components a program's kernels are
/// specialised on; batches with a pattern beyond them run on kernels that know none (so uniforms
/// whose zeros keep moving cannot make a program compile without end).
pub const MAX_CONSTANT_PATTERNS: usize = 4;

/// Compiles the kernel for one variant; `Err` says why it cannot be (the batch then runs on the
/// fallback engine).
pub type KernelCompiler = dyn Fn(&ShaderProgram, ExecConfig, VariantKey) -> Result<Box<dyn GroupKernel>, String>
    + Send
    + Sync;

enum Variant {
    /// Run on the zero-compile engine, not yet hot: the vertices run so far.
    Warming(u64),
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
    /// On a background thread once the variant has run `hot_after` vertices on the
    /// zero-compile engine (0: at its first batch); batches run on the zero-compile engine
    /// meanwhile.
    Background {
        /// Vertices that make a variant hot.
        hot_after: u64,
    },
}

struct Shared {
    program: ShaderProgram,
    config: ExecConfig,
    compiler: Box<KernelCompiler>,
    /// Most recently used last.
    variants: Mutex<VecDeque<(VariantKey, Variant)>>,
    /// Signalled whenever a variant is published, for callers waiting on a compile in flight.
    published: Condvar,
    /// The float uniform components kernels may be specialised on (none: the compiler does not
    /// specialise on float uniforms).
    candidates: UniformComponents,
    /// The patterns of known components admitted so far (at most [`MAX_CONSTANT_PATTERNS`]).
    patterns: Mutex<Vec<ConstantLanes>>,
    /// The float uniforms the program reads ([`BatchLayout::uniforms`]) and those of the
    /// candidates: a kernel and its key depend on no other.
    reads: u128,
}

impl Shared {
    fn variants(&self) -> MutexGuard<'_, VecDeque<(VariantKey, Variant)>> {
        self.variants.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key for a batch run with `uniforms`: its bool and int uniforms, and its zeros and
    /// ones among the candidate components when the pattern is admitted.
    fn key(&self, uniforms: &Uniforms) -> VariantKey {
        let mut key = VariantKey::of(uniforms);
        if self.candidates.is_empty() {
            return key;
        }
        let pattern = ConstantLanes::of_within(uniforms, self.config.precision, &self.candidates);
        if pattern.is_empty() {
            return key;
        }
        let mut patterns = self.patterns.lock().unwrap_or_else(|e| e.into_inner());
        if patterns.contains(&pattern) {
            key.constants = pattern;
        } else if patterns.len() < MAX_CONSTANT_PATTERNS {
            patterns.push(pattern);
            key.constants = pattern;
        }
        key
    }

    fn publish(&self, key: VariantKey, variant: Variant) {
        let mut variants = self.variants();
        variants.retain(|(k, _)| *k != key);
        variants.push_back((key, variant));
        while variants.len() > MAX_VARIANTS {
            // Evict the least recently used variant not in flight (a compile in flight stays).
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
        drop(variants);
        self.published.notify_all();
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
    /// The last batch's uniforms that found their kernel ready, and the kernel.
    last: Mutex<Option<Bound>>,
}

/// Uniforms and the ready kernel their batches run on.
struct Bound {
    floats: Box<[Vec4; FLOAT_UNIFORMS]>,
    bools: u16,
    ints: [[u8; 4]; 4],
    kernel: Arc<AdaptiveKernel>,
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
                reads: BatchLayout::of(&program).uniforms,
                program,
                config,
                compiler,
                variants: Mutex::new(VecDeque::new()),
                published: Condvar::new(),
                candidates: UniformComponents::NONE,
                patterns: Mutex::new(Vec::new()),
            }),
            mode,
            exact,
            meanwhile,
            last: Mutex::new(None),
        }
    }

    /// Lets the compiler specialise kernels on the float uniform components of `candidates`
    /// that are zero or +1.0 in a batch's uniforms (its keys then carry them; see
    /// [`ConstantLanes::candidates`]).
    pub fn with_constant_lanes(mut self, candidates: UniformComponents) -> Specializing {
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => {
                shared.reads |= candidates.registers();
                shared.candidates = candidates;
            }
            None => unreachable!("the engine is not shared before it is returned"),
        }
        self
    }

    /// The key of the kernel a batch run with `uniforms` gets.
    pub fn variant_key(&self, uniforms: &Uniforms) -> VariantKey {
        self.shared.key(uniforms)
    }

    /// The state of the variant for `uniforms`.
    pub fn variant_state(&self, uniforms: &Uniforms) -> VariantState {
        state_of(&self.shared.variants(), self.shared.key(uniforms))
    }

    /// How many variants are kept (compiling ones included).
    pub fn variant_count(&self) -> usize {
        self.shared.variants().len()
    }

    /// Compiles the variant for `uniforms` now if it is missing or not yet hot, and waits for a
    /// compile of it in flight (on another thread) to finish.
    pub fn ensure_compiled(&self, uniforms: &Uniforms) -> VariantState {
        let key = self.shared.key(uniforms);
        if let Claim::Mine = self.claim(key, 0, 0) {
            self.shared.publish(key, self.shared.compile(key));
        }
        self.wait_for(key)
    }

    /// The variant's state once no compile of it is in flight.
    fn wait_for(&self, key: VariantKey) -> VariantState {
        let mut variants = self.shared.variants();
        loop {
            let state = state_of(&variants, key);
            if state != VariantState::Compiling {
                return state;
            }
            variants = self
                .shared
                .published
                .wait(variants)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Looks the variant up (making it the most recently used) for a batch of `work` vertices.
    /// When it is missing, or warming and hot with this batch (`hot_after` vertices run), marks
    /// it as compiling for the caller to compile: so a variant is compiled once however many
    /// threads ask for it at the same time. A variant not yet hot is warming.
    fn claim(&self, key: VariantKey, work: u64, hot_after: u64) -> Claim {
        let mut variants = self.shared.variants();
        let entry = variants
            .iter()
            .position(|(k, _)| *k == key)
            .and_then(|at| variants.remove(at));
        let ran = match entry {
            None => 0,
            Some((_, Variant::Warming(ran))) => ran,
            Some(entry) => {
                let claim = match &entry.1 {
                    Variant::Ready(kernel) => Claim::Ready(kernel.clone()),
                    Variant::Refused(_) => Claim::Refused,
                    Variant::Compiling | Variant::Warming(_) => Claim::InFlight,
                };
                variants.push_back(entry);
                return claim;
            }
        };
        let ran = ran.saturating_add(work);
        let (variant, claim) = if ran >= hot_after {
            (Variant::Compiling, Claim::Mine)
        } else {
            (Variant::Warming(ran), Claim::InFlight)
        };
        variants.push_back((key, variant));
        claim
    }

    /// The kernel to run a batch of `work` vertices with `uniforms` on, if one is ready; starts
    /// (or, blocking, runs or waits for) its compile when it is not (in the background: when
    /// the variant is hot).
    fn kernel_for(&self, uniforms: &Uniforms, work: u64) -> Option<Arc<AdaptiveKernel>> {
        // The uniforms of the last batch that found its kernel ready: an emulator sends many
        // small batches between uniform changes, and the key costs more than one comparison.
        let last = || self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(bound) = &*last()
            && bound.bools == uniforms.bools
            && bound.ints == uniforms.int
            && uniforms.floats_are(&bound.floats, self.shared.reads)
        {
            return Some(bound.kernel.clone());
        }
        // Not locked meanwhile: this may compile.
        let kernel = self.find_kernel(uniforms, work);
        if let Some(kernel) = &kernel {
            *last() = Some(Bound {
                floats: Box::new(uniforms.float),
                bools: uniforms.bools,
                ints: uniforms.int,
                kernel: kernel.clone(),
            });
        }
        kernel
    }

    /// [`kernel_for`](Self::kernel_for) without its memo.
    fn find_kernel(&self, uniforms: &Uniforms, work: u64) -> Option<Arc<AdaptiveKernel>> {
        let key = self.shared.key(uniforms);
        let hot_after = match self.mode {
            CompileMode::Blocking => 0,
            CompileMode::Background { hot_after } => hot_after,
        };
        match (self.claim(key, work, hot_after), self.mode) {
            (Claim::Ready(kernel), _) => Some(kernel),
            (Claim::Refused, _) | (Claim::InFlight, CompileMode::Background { .. }) => None,
            (Claim::InFlight, CompileMode::Blocking) => {
                self.wait_for(key);
                match self.claim(key, 0, 0) {
                    Claim::Ready(kernel) => Some(kernel),
                    _ => None,
                }
            }
            (Claim::Mine, CompileMode::Blocking) => {
                let variant = self.shared.compile(key);
                let kernel = match &variant {
                    Variant::Ready(kernel) => Some(kernel.clone()),
                    _ => None,
                };
                self.shared.publish(key, variant);
                kernel
            }
            (Claim::Mine, CompileMode::Background { .. }) => {
                let shared = Arc::clone(&self.shared);
                let spawned = std::thread::Builder::new()
                    .name("picajit-compile".to_string())
                    .spawn(move || {
                        let variant = shared.compile(key);
                        shared.publish(key, variant);
                    });
                if spawned.is_err() {
                    // No thread: compile here rather than never.
                    self.shared.publish(key, self.shared.compile(key));
                }
                None
            }
        }
    }
}

fn state_of(variants: &VecDeque<(VariantKey, Variant)>, key: VariantKey) -> VariantState {
    match variants.iter().find(|(k, _)| *k == key).map(|(_, v)| v) {
        None => VariantState::Missing,
        Some(Variant::Warming(_)) => VariantState::Missing,
        Some(Variant::Compiling) => VariantState::Compiling,
        Some(Variant::Ready(_)) => VariantState::Ready,
        Some(Variant::Refused(reason)) => VariantState::Refused(reason.clone()),
    }
}

/// What [`Specializing::claim`] found.
enum Claim {
    Ready(Arc<AdaptiveKernel>),
    Refused,
    /// Another caller is compiling it.
    InFlight,
    /// It was missing; the caller compiles it.
    Mine,
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
        match self.kernel_for(uniforms, io.count() as u64) {
            Some(kernel) => {
                kernel.run(&*self.exact, uniforms, io, errors);
            }
            None => self.meanwhile.run_batch(uniforms, io, errors),
        }
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

/// The exact engine's single vertices, a specialised kernel's records and compiles.
impl HostPaths for Specializing {
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
        // No work counted: a batch the kernel does not run goes on to `run_batch`, which
        // counts it.
        match self.kernel_for(uniforms, 0) {
            Some(kernel) => kernel.run_records(&*self.exact, uniforms, io, errors),
            None => false,
        }
    }

    fn warm_up(&self, uniforms: &Uniforms) {
        self.ensure_compiled(uniforms);
        Hosted(&*self.exact).warm_up(uniforms);
        Hosted(&*self.meanwhile).warm_up(uniforms);
    }

    fn vertex_runner(&self) -> VertexRunner {
        VertexRunner::through(&self.exact)
    }

    fn compile_status(&self, uniforms: &Uniforms) -> CompileStatus {
        let kernel = match self.variant_state(uniforms) {
            VariantState::Missing => CompileStatus::Cold,
            VariantState::Compiling => CompileStatus::Compiling,
            VariantState::Ready => CompileStatus::Ready,
            VariantState::Refused(reason) => CompileStatus::Failed(reason),
        };
        kernel
            .and(Hosted(&*self.exact).compile_status(uniforms))
            .and(Hosted(&*self.meanwhile).compile_status(uniforms))
    }
}
