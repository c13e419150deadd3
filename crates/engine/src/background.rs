//! An engine compiled on a background thread, with a zero-compile engine running meanwhile.
//!
//! [`Background::start`] returns at once; calls go to the `meanwhile` engine until the compiled
//! one is ready, then to it. [`Background::when_hot`] starts the compile only once the program
//! has run a number of invocations on the `meanwhile` engine, so a program that runs little never
//! takes a core from the rest of the work to compile (docs/batches.md, "Tiers"). Every engine
//! gives the same bits (docs/execution-model.md §8), and a geometry shader's state is
//! engine-neutral, so a switch between two calls, even in the middle of a draw, changes nothing
//! but the speed. A compile that fails leaves the `meanwhile` engine in place for good (and
//! says why in [`Background::failure`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use super::EngineError;
use shader::exec::{
    BatchIo, CompileStatus, EmitSink, ExecConfig, ExecError, GeometryState, HostPaths, Hosted,
    ShaderEngine, VertexResult, VertexRunner,
};
use shader::program::{FlowRegisters, InputRegisters, ShaderProgram, Uniforms, Vec4};

/// A compile to run.
type Compile = Box<dyn FnOnce() -> Result<Box<dyn ShaderEngine>, EngineError> + Send>;

enum Slot {
    /// Not started: waiting for the program to be hot.
    Cold(Compile),
    Compiling,
    Ready(Arc<dyn ShaderEngine>),
    Failed(String),
}

struct Shared {
    slot: Mutex<Slot>,
    done: Condvar,
    /// The compiled engine, once ready: read on every call without a lock.
    ready: OnceLock<Arc<dyn ShaderEngine>>,
    /// Invocations run on the `meanwhile` engine so far.
    ran: AtomicU64,
    /// How many make the program hot.
    hot_after: u64,
    /// Whether the compile has started.
    started: AtomicBool,
}

impl Shared {
    /// Publishes the compile's outcome.
    fn publish(&self, slot: Slot) {
        if let Slot::Ready(engine) = &slot {
            let _ = self.ready.set(Arc::clone(engine));
        }
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = slot;
        self.done.notify_all();
    }

    /// Starts the compile on a background thread unless it has started.
    fn start(self: &Arc<Self>) {
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        let Slot::Cold(compile) = std::mem::replace(&mut *slot, Slot::Compiling) else {
            unreachable!("only the first start finds the compile not started")
        };
        drop(slot);
        let shared = Arc::clone(self);
        let job = move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(compile));
            shared.publish(match outcome {
                Ok(Ok(engine)) => Slot::Ready(Arc::from(engine)),
                Ok(Err(e)) => Slot::Failed(e.to_string()),
                Err(_) => Slot::Failed("the compiler panicked (a bug)".to_string()),
            });
        };
        let spawned = std::thread::Builder::new()
            .name("picajit-compile".to_string())
            .spawn(job);
        if let Err(e) = spawned {
            self.publish(Slot::Failed(format!("no thread to compile on: {e}")));
        }
    }
}

/// An engine being compiled in the background (see the module documentation).
pub struct Background {
    name: &'static str,
    meanwhile: Arc<dyn ShaderEngine>,
    shared: Arc<Shared>,
}

impl Background {
    /// Starts `compile` on a background thread; `meanwhile` (prepared for the same program and
    /// settings) runs every call until it is done.
    pub fn start(
        name: &'static str,
        meanwhile: Arc<dyn ShaderEngine>,
        compile: impl FnOnce() -> Result<Box<dyn ShaderEngine>, EngineError> + Send + 'static,
    ) -> Background {
        Background::when_hot(name, meanwhile, 0, compile)
    }

    /// As [`Background::start`], but the compile starts only once `hot_after` invocations (a
    /// batch counts its vertices) have run on `meanwhile`, or when [`Background::wait`] or
    /// `warm_up` asks for the compiled engine.
    pub fn when_hot(
        name: &'static str,
        meanwhile: Arc<dyn ShaderEngine>,
        hot_after: u64,
        compile: impl FnOnce() -> Result<Box<dyn ShaderEngine>, EngineError> + Send + 'static,
    ) -> Background {
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot::Cold(Box::new(compile))),
            done: Condvar::new(),
            ready: OnceLock::new(),
            ran: AtomicU64::new(0),
            hot_after,
            started: AtomicBool::new(false),
        });
        if hot_after == 0 {
            shared.start();
        }
        Background {
            name,
            meanwhile,
            shared,
        }
    }

    /// The engine calls go to now.
    fn current(&self) -> &dyn ShaderEngine {
        match self.shared.ready.get() {
            Some(engine) => engine.as_ref(),
            None => self.meanwhile.as_ref(),
        }
    }

    /// The engine a call of `work` invocations goes to, counting them toward the program's
    /// heat while it runs on `meanwhile`.
    fn for_work(&self, work: u64) -> &dyn ShaderEngine {
        if let Some(engine) = self.shared.ready.get() {
            return engine.as_ref();
        }
        if !self.shared.started.load(Ordering::Relaxed) {
            let ran = self.shared.ran.fetch_add(work, Ordering::Relaxed) + work;
            if ran >= self.shared.hot_after {
                self.shared.start();
            }
        }
        self.meanwhile.as_ref()
    }

    /// Whether the compile has started (it starts when the program is hot).
    pub fn is_started(&self) -> bool {
        self.shared.started.load(Ordering::Acquire)
    }

    /// Whether the compiled engine has taken over.
    pub fn is_ready(&self) -> bool {
        self.shared.ready.get().is_some()
    }

    /// Why the compile failed, if it did.
    pub fn failure(&self) -> Option<String> {
        match &*self.shared.slot.lock().unwrap_or_else(|e| e.into_inner()) {
            Slot::Failed(why) => Some(why.clone()),
            _ => None,
        }
    }

    /// Starts the compile if it has not started, and waits until it has finished
    /// (successfully or not).
    pub fn wait(&self) {
        self.shared.start();
        let mut slot = self.shared.slot.lock().unwrap_or_else(|e| e.into_inner());
        while matches!(*slot, Slot::Compiling | Slot::Cold(_)) {
            slot = self
                .shared
                .done
                .wait(slot)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl ShaderEngine for Background {
    fn name(&self) -> &'static str {
        self.name
    }

    fn program(&self) -> &ShaderProgram {
        self.meanwhile.program()
    }

    fn config(&self) -> ExecConfig {
        self.meanwhile.config()
    }

    fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        self.for_work(1).run_vertex(uniforms, inputs)
    }

    fn run_batch(
        &self,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        self.for_work(io.count() as u64)
            .run_batch(uniforms, io, errors)
    }

    fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        self.for_work(1).run_geometry(state, uniforms, inputs, sink)
    }

    fn host_paths(&self) -> Option<&dyn HostPaths> {
        Some(self)
    }
}

/// The engine in use's paths, and the background compile's state.
impl HostPaths for Background {
    fn run_vertex_into(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        Hosted(self.for_work(1)).run_vertex_into(uniforms, inputs, outputs)
    }

    fn warm_up(&self, uniforms: &Uniforms) {
        self.wait();
        Hosted(self.current()).warm_up(uniforms);
    }

    fn vertex_runner(&self) -> VertexRunner {
        match self.shared.ready.get() {
            Some(compiled) => VertexRunner::through(compiled),
            None => VertexRunner::Unsettled,
        }
    }

    fn compile_status(&self, uniforms: &Uniforms) -> CompileStatus {
        let own = match &*self.shared.slot.lock().unwrap_or_else(|e| e.into_inner()) {
            Slot::Cold(_) => CompileStatus::Cold,
            Slot::Compiling => CompileStatus::Compiling,
            Slot::Ready(_) => CompileStatus::Ready,
            Slot::Failed(why) => CompileStatus::Failed(why.clone()),
        };
        own.and(Hosted(self.current()).compile_status(uniforms))
    }
}
