//! What an engine may offer a caller that embeds it beyond the contract ([`ShaderEngine`]): its
//! fast paths and the state of what it compiles later, as one optional extension,
//! [`HostPaths`], and [`Hosted`], which calls an engine's own paths where it has them and what
//! every engine can do where it has not. The C ABI is the caller these paths are for.

use std::mem::MaybeUninit;

use super::{ExecError, RecordIo, RegisterSet, ShaderEngine};
use crate::program::{FlowRegisters, InputRegisters, Uniforms, Vec4};

/// The paths an engine offers an embedding caller: an engine implements what it does better
/// than the defaults, which are what [`Hosted`] does for an engine without them, and returns
/// itself from [`ShaderEngine::host_paths`].
pub trait HostPaths: ShaderEngine {
    /// Runs one vertex-shader invocation from zeroed registers, writing o0-o15 to `outputs`
    /// (all +0 when it fails) and returning the final flow registers: [`ShaderEngine::run_vertex`]
    /// for a caller that keeps its own output registers (an emulator running one vertex at a
    /// time), with no result to copy on the way.
    fn run_vertex_into(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        run_vertex_copied(self, uniforms, inputs, outputs)
    }

    /// [`HostPaths::run_vertex_into`] on input registers the caller wrote itself, of which
    /// only those of `set` are initialized: a caller that converts the registers the program
    /// can read into a buffer of its own, which it neither clears nor hands over (the C ABI's
    /// `picajit_run_vertex`, converting f32 attributes on its stack). `comfortable` has bit n
    /// set where every lane of c`n` is
    /// [`within_operand_bounds`](crate::float24::lanes::within_operand_bounds) (a caller that
    /// tracks its uniform writes knows it without looking; the scalar JIT's fast form needs
    /// it). The default copies the registers into zeroed ones and ignores `comfortable`; the
    /// scalar JIT reads them where they are.
    ///
    /// # Safety
    ///
    /// The registers of `set` in `inputs` are initialized, and `set` holds every input register
    /// the program reads ([`super::BatchLayout::inputs`] does).
    unsafe fn run_partial_knowing_into(
        &self,
        uniforms: &Uniforms,
        comfortable: u128,
        set: RegisterSet,
        inputs: &[MaybeUninit<Vec4>; 16],
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        let _ = comfortable;
        // SAFETY: the registers of `set` are initialized (this function's contract).
        let registers = unsafe { registers_of(set, inputs) };
        self.run_vertex_into(uniforms, &registers, outputs)
    }

    /// Runs a batch of vertex records (see [`RecordIo`]) when the engine reads and writes them
    /// itself: whether it ran them (then each failed vertex is in `errors`, in vertex order, as
    /// [`ShaderEngine::run_batch`] reports them). An engine whose batches need planes returns
    /// `false` and touches nothing; the caller then lays the batch out in planes.
    fn run_records(
        &self,
        uniforms: &Uniforms,
        io: &mut RecordIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) -> bool {
        let _ = (uniforms, io, errors);
        false
    }

    /// Finishes whatever preparing the engine left for later for batches run with `uniforms`
    /// (a kernel specialised on them, a compile in the background) and waits for it, so that the
    /// next batch runs at full speed. Engines with nothing left to do return at once.
    fn warm_up(&self, uniforms: &Uniforms) {
        let _ = uniforms;
    }

    /// Which engine runs this one's single vertices from now on: itself by default; a wrapper
    /// that sends them to an inner engine says which ([`VertexRunner::through`]).
    fn vertex_runner(&self) -> VertexRunner {
        VertexRunner::Itself
    }

    /// Where the compiles the engine leaves for later stand for calls with `uniforms`: what
    /// [`HostPaths::warm_up`] settles. Engines that compile nothing later are ready.
    fn compile_status(&self, uniforms: &Uniforms) -> CompileStatus {
        let _ = uniforms;
        CompileStatus::Ready
    }
}

/// An engine as an embedding caller uses it: its own [`HostPaths`] where it has them
/// ([`ShaderEngine::host_paths`]), the defaults of the trait where it has not.
#[derive(Clone, Copy)]
pub struct Hosted<'a>(pub &'a dyn ShaderEngine);

impl Hosted<'_> {
    /// [`HostPaths::run_vertex_into`].
    pub fn run_vertex_into(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        match self.0.host_paths() {
            Some(paths) => paths.run_vertex_into(uniforms, inputs, outputs),
            None => run_vertex_copied(self.0, uniforms, inputs, outputs),
        }
    }

    /// [`HostPaths::run_partial_knowing_into`].
    ///
    /// # Safety
    ///
    /// As [`HostPaths::run_partial_knowing_into`]'s.
    pub unsafe fn run_partial_knowing_into(
        &self,
        uniforms: &Uniforms,
        comfortable: u128,
        set: RegisterSet,
        inputs: &[MaybeUninit<Vec4>; 16],
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        match self.0.host_paths() {
            // SAFETY: the caller keeps the contract, which is the same.
            Some(paths) => unsafe {
                paths.run_partial_knowing_into(uniforms, comfortable, set, inputs, outputs)
            },
            None => {
                // SAFETY: the registers of `set` are initialized (this function's contract).
                let registers = unsafe { registers_of(set, inputs) };
                run_vertex_copied(self.0, uniforms, &registers, outputs)
            }
        }
    }

    /// [`HostPaths::run_records`].
    pub fn run_records(
        &self,
        uniforms: &Uniforms,
        io: &mut RecordIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) -> bool {
        self.0
            .host_paths()
            .is_some_and(|paths| paths.run_records(uniforms, io, errors))
    }

    /// [`HostPaths::warm_up`].
    pub fn warm_up(&self, uniforms: &Uniforms) {
        if let Some(paths) = self.0.host_paths() {
            paths.warm_up(uniforms);
        }
    }

    /// [`HostPaths::vertex_runner`].
    pub fn vertex_runner(&self) -> VertexRunner {
        self.0
            .host_paths()
            .map_or(VertexRunner::Itself, |paths| paths.vertex_runner())
    }

    /// [`HostPaths::compile_status`].
    pub fn compile_status(&self, uniforms: &Uniforms) -> CompileStatus {
        self.0
            .host_paths()
            .map_or(CompileStatus::Ready, |paths| paths.compile_status(uniforms))
    }
}

/// [`HostPaths::run_vertex_into`] for an engine without it: [`ShaderEngine::run_vertex`], the
/// result copied.
fn run_vertex_copied<E: ShaderEngine + ?Sized>(
    engine: &E,
    uniforms: &Uniforms,
    inputs: &InputRegisters,
    outputs: &mut [Vec4; 16],
) -> Result<FlowRegisters, ExecError> {
    match engine.run_vertex(uniforms, inputs) {
        Ok(result) => {
            *outputs = result.outputs;
            Ok(result.flow)
        }
        Err(error) => {
            *outputs = [[0.0; 4]; 16];
            Err(error)
        }
    }
}

/// The registers of `set` in `inputs`, the others +0.
///
/// # Safety
///
/// The registers of `set` in `inputs` are initialized.
unsafe fn registers_of(set: RegisterSet, inputs: &[MaybeUninit<Vec4>; 16]) -> InputRegisters {
    let mut registers = [[0.0; 4]; 16];
    for n in set.iter() {
        // SAFETY: the registers of `set` are initialized (this function's contract).
        registers[n] = unsafe { inputs[n].assume_init() };
    }
    registers
}

/// Which engine runs an engine's single vertices ([`ShaderEngine::run_vertex`] and
/// [`HostPaths::run_vertex_into`]) from now on ([`HostPaths::vertex_runner`]), so that a
/// caller running one vertex at a time can call it directly instead of through every wrapper.
#[derive(Clone)]
pub enum VertexRunner {
    /// The engine itself, always.
    Itself,
    /// This engine, always (same program, settings and results).
    Inner(std::sync::Arc<dyn ShaderEngine>),
    /// Not settled yet (a compile in the background may take over): ask again later.
    Unsettled,
}

impl VertexRunner {
    /// The runner of a wrapper that sends its single vertices to `inner`.
    pub fn through(inner: &std::sync::Arc<dyn ShaderEngine>) -> VertexRunner {
        match Hosted(&**inner).vertex_runner() {
            VertexRunner::Itself => VertexRunner::Inner(inner.clone()),
            settled_or_not => settled_or_not,
        }
    }
}

/// Where the compiles an engine leaves for later stand, for batches run with given uniforms
/// ([`HostPaths::compile_status`]). Cold and compiling are unsettled: calls run meanwhile, on
/// an engine that needs no compile, with the same bits. Ready and failed are settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompileStatus {
    /// Everything is compiled, or the engine compiles nothing: calls run at full speed.
    Ready,
    /// A compile failed or was refused (the reason): the engine runs on its zero-compile engine
    /// for good, with the same bits.
    Failed(String),
    /// A compile waits for the program to be hot (or, for an engine that compiles when first
    /// used, for that use).
    Cold,
    /// A compile is running on a background thread.
    Compiling,
}

impl CompileStatus {
    /// The status of an engine made of two parts: the less settled one (compiling, then cold,
    /// then failed, then ready).
    pub fn and(self, other: CompileStatus) -> CompileStatus {
        let rank = |status: &CompileStatus| match status {
            CompileStatus::Ready => 0,
            CompileStatus::Failed(_) => 1,
            CompileStatus::Cold => 2,
            CompileStatus::Compiling => 3,
        };
        if rank(&other) > rank(&self) {
            other
        } else {
            self
        }
    }

    /// Whether no compile is still to come or running.
    pub fn is_settled(&self) -> bool {
        matches!(self, CompileStatus::Ready | CompileStatus::Failed(_))
    }
}
