//! An engine compiled on a background thread, with a zero-compile engine running meanwhile.
//!
//! [`Background::start`] returns at once; calls go to the `meanwhile` engine until the compiled
//! one is ready, then to it. Every engine gives the same bits (docs/execution-model.md §8), and a
//! geometry shader's state is engine-neutral, so a switch between two calls, even in the middle
//! of a draw, changes nothing but the speed. A compile that fails leaves the `meanwhile` engine
//! in place for good (and says why in [`Background::failure`]).

use std::sync::{Arc, Condvar, Mutex, OnceLock};

use super::EngineError;
use shader::exec::{
    BatchIo, EmitSink, ExecConfig, ExecError, GeometryState, ShaderEngine, VertexResult,
};
use shader::program::{InputRegisters, ShaderProgram, Uniforms};

enum Slot {
    Compiling,
    Ready(Arc<dyn ShaderEngine>),
    Failed(String),
}

struct Shared {
    slot: Mutex<Slot>,
    done: Condvar,
    /// The compiled engine, once ready: read on every call without a lock.
    ready: OnceLock<Arc<dyn ShaderEngine>>,
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
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot::Compiling),
            done: Condvar::new(),
            ready: OnceLock::new(),
        });
        let publish = {
            let shared = Arc::clone(&shared);
            move |slot: Slot| {
                if let Slot::Ready(engine) = &slot {
                    let _ = shared.ready.set(Arc::clone(engine));
                }
                *shared.slot.lock().unwrap_or_else(|e| e.into_inner()) = slot;
                shared.done.notify_all();
            }
        };
        let job = move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(compile));
            publish(match outcome {
                Ok(Ok(engine)) => Slot::Ready(Arc::from(engine)),
                Ok(Err(e)) => Slot::Failed(e.to_string()),
                Err(_) => Slot::Failed("the compiler panicked (a bug)".to_string()),
            });
        };
        let spawned = std::thread::Builder::new()
            .name("picajit-compile".to_string())
            .spawn(job);
        if let Err(e) = spawned {
            *shared.slot.lock().unwrap_or_else(|e| e.into_inner()) =
                Slot::Failed(format!("no thread to compile on: {e}"));
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

    /// Waits until the compile has finished (successfully or not).
    pub fn wait(&self) {
        let mut slot = self.shared.slot.lock().unwrap_or_else(|e| e.into_inner());
        while matches!(*slot, Slot::Compiling) {
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
        self.current().run_vertex(uniforms, inputs)
    }

    fn run_batch(
        &self,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        self.current().run_batch(uniforms, io, errors)
    }

    fn warm_up(&self, uniforms: &Uniforms) {
        self.wait();
        self.current().warm_up(uniforms);
    }

    fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        self.current().run_geometry(state, uniforms, inputs, sink)
    }
}
