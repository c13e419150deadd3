//! The execution contract: what every engine promises, owned by none of them.
//!
//! An engine prepares a [`ShaderProgram`] once under an [`ExecConfig`] and then runs vertex
//! invocations ([`ShaderEngine::run_vertex`], [`ShaderEngine::run_batch`]) or geometry-shader
//! invocations on a persistent [`GeometryState`] ([`ShaderEngine::run_geometry`]). Every engine
//! must agree with every other bit for bit (docs/execution-model.md §8): the same output bits,
//! the same emitted vertices and primitives in the same order, the same final a0/aL/cmp and the
//! same error kinds.
//!
//! The rules that are not about arithmetic or control flow but about an invocation's state are
//! stated here once, and each engine calls them: which bool uniforms an invocation sees
//! ([`GeometryState::invocation_bools`], the b15 rule) and what EMIT does to the state
//! ([`GeometryState::emit`]). What a geometry shader emits is streamed to an [`EmitSink`] as it
//! is emitted, so memory is proportional to what the caller keeps; [`GeometryResult`] is the
//! sink that keeps everything.
//!
//! The reference interpreter (`crate::interp`) and the JIT (`crate::jit`) implement
//! [`ShaderEngine`]; neither imports the other, and this module imports neither.

mod batch;
mod host;
pub mod operate;

use std::fmt;

pub use batch::{
    ALL_FLOAT_UNIFORMS, BatchError, BatchIo, BatchLayout, GroupKernel, RecordIo, RegisterSet,
    STRIDE_ALIGN, SoaBuffer, SoaInputs, SoaOutputs, VERTEX_BLOCK, run_sorted, unusual_vertices,
};
pub use host::{CompileStatus, HostPaths, Hosted, VertexRunner};

use crate::float24::Precision;
use crate::program::{FlowRegisters, InputRegisters, ShaderProgram, Uniforms, Vec4};

/// The default instruction budget of one invocation (2^20 executed instructions).
pub const DEFAULT_INSTRUCTION_BUDGET: u64 = 1 << 20;

/// Settings fixed when a program is prepared for running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExecConfig {
    /// How arithmetic results become register values.
    pub precision: Precision,
    /// The most instructions one invocation may execute before it fails (at least 1).
    pub instruction_budget: u64,
}

impl Default for ExecConfig {
    fn default() -> ExecConfig {
        ExecConfig {
            precision: Precision::default(),
            instruction_budget: DEFAULT_INSTRUCTION_BUDGET,
        }
    }
}

/// Why an invocation stopped without reaching END. Every engine reports the same kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecError {
    /// BREAK or a taken BREAKC with an empty loop stack (the hardware hangs).
    BreakOutsideLoop {
        /// Address of the BREAK.
        pc: u16,
    },
    /// The invocation executed more instructions than the budget allows.
    InstructionBudget {
        /// The budget.
        budget: u64,
        /// Address of the instruction that exceeded it.
        pc: u16,
    },
    /// EMIT with vertex id 3 (SETEMIT's 2-bit field allows it; there are only 3 slots).
    InvalidEmitVertex {
        /// Address of the EMIT.
        pc: u16,
    },
    /// The engine broke its own invariants (compiled code reached an address its compiler
    /// proved unreachable, say): a bug in the engine, reported instead of a panic so that an
    /// embedding emulator keeps running. The reference interpreter never reports it.
    Internal {
        /// Where the engine was.
        pc: u16,
        /// The engine's own code for what went wrong.
        code: u32,
    },
}

impl ExecError {
    /// A stable machine-readable name of the error kind (used in JSON output and engine
    /// comparison).
    pub const fn kind(&self) -> &'static str {
        match self {
            ExecError::BreakOutsideLoop { .. } => "break-outside-loop",
            ExecError::InstructionBudget { .. } => "instruction-budget",
            ExecError::InvalidEmitVertex { .. } => "invalid-emit-vertex",
            ExecError::Internal { .. } => "internal",
        }
    }
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::BreakOutsideLoop { pc } => {
                write!(
                    f,
                    "BREAK at {pc:#05x} with an empty loop stack (the GPU would hang)"
                )
            }
            ExecError::InstructionBudget { budget, pc } => write!(
                f,
                "instruction budget of {budget} exceeded at {pc:#05x} (the program does not reach END)"
            ),
            ExecError::InvalidEmitVertex { pc } => {
                write!(
                    f,
                    "EMIT at {pc:#05x} with vertex id 3 (only slots 0-2 exist)"
                )
            }
            ExecError::Internal { pc, code } => write!(
                f,
                "internal engine error {code} at {pc:#05x} (a bug in the engine, please report it)"
            ),
        }
    }
}

impl std::error::Error for ExecError {}

/// The registers of one invocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Registers {
    /// r0-r15.
    pub temp: [Vec4; 16],
    /// o0-o15 (a geometry shader writes the current bank of [`GeometryState`] instead).
    pub output: [Vec4; 16],
    /// a0, aL and cmp.
    pub flow: FlowRegisters,
}

impl Default for Registers {
    fn default() -> Registers {
        Registers {
            temp: [[0.0; 4]; 16],
            output: [[0.0; 4]; 16],
            flow: FlowRegisters::default(),
        }
    }
}

/// What a vertex-shader invocation leaves behind.
#[derive(Clone, Debug, PartialEq)]
pub struct VertexResult {
    /// o0-o15 (all of them; [`ShaderProgram::output_mask`] says which are sent on).
    pub outputs: [Vec4; 16],
    /// a0, aL and cmp at END.
    pub flow: FlowRegisters,
}

/// The SETEMIT state: where and how the next EMIT sends its vertex.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmitConfig {
    /// The vertex slot (0-2; 3 makes EMIT fail).
    pub vertex: u8,
    /// Emit a triangle after the vertex.
    pub primitive: bool,
    /// Invert that triangle's winding.
    pub winding: bool,
}

impl EmitConfig {
    /// The SETEMIT state packed into one word (`vertex | primitive << 8 | winding << 16`), as
    /// compiled code passes it to the host.
    pub const fn packed(self) -> u32 {
        self.vertex as u32 | (self.primitive as u32) << 8 | (self.winding as u32) << 16
    }

    /// The inverse of [`EmitConfig::packed`].
    pub const fn unpacked(packed: u32) -> EmitConfig {
        EmitConfig {
            vertex: (packed & 0xFF) as u8,
            primitive: packed & 0x100 != 0,
            winding: packed & 0x1_0000 != 0,
        }
    }
}

/// Receives what a geometry-shader invocation emits, in order, while it runs.
///
/// `outputs` and `slots` hold all sixteen o-registers; only those in the program's output mask
/// are meaningful, and a consumer keeps only what it needs:
///
/// ```
/// use picajit_shader::exec::{EmitConfig, EmitSink, ExecConfig, GeometryState, ShaderEngine};
/// use picajit_shader::interp::Interpreter;
/// use picajit_shader::program::{ShaderKind, ShaderProgram, Uniforms, Vec4};
///
/// /// Keeps only o0.x of each vertex.
/// struct FirstLanes(Vec<f32>);
///
/// impl EmitSink for FirstLanes {
///     fn vertex(&mut self, _: EmitConfig, outputs: &[Vec4; 16]) {
///         self.0.push(outputs[0][0]);
///     }
///     fn primitive(&mut self, _: bool, _: &[[Vec4; 16]; 3]) {}
/// }
///
/// // mov o0, v0; emit; end
/// let code = [0x4C00_0000, 0xA800_0000, 0x8800_0000];
/// let program = ShaderProgram::new(&code, &[0x36F], 0, ShaderKind::Geometry, 1).unwrap();
/// let engine = Interpreter::new(program, ExecConfig::default());
/// let mut state = GeometryState::default();
/// let mut kept = FirstLanes(Vec::new());
/// let mut inputs = [[0.0f32; 4]; 16];
/// inputs[0] = [7.0, 0.0, 0.0, 1.0];
/// engine.run_geometry(&mut state, &Uniforms::default(), &inputs, &mut kept).unwrap();
/// assert_eq!(kept.0, [7.0]);
/// ```
pub trait EmitSink {
    /// A vertex sent by EMIT with the SETEMIT state it used and the emitting bank.
    fn vertex(&mut self, config: EmitConfig, outputs: &[Vec4; 16]);
    /// A triangle (an EMIT with the primitive flag, right after its vertex): the three vertex
    /// slots in slot order. When `winding` is set, the primitive assembler takes them as
    /// (slot 1, slot 0, slot 2).
    fn primitive(&mut self, winding: bool, slots: &[[Vec4; 16]; 3]);
}

/// One vertex sent by EMIT.
#[derive(Clone, Debug, PartialEq)]
pub struct EmittedVertex {
    /// The SETEMIT state at the EMIT.
    pub config: EmitConfig,
    /// The emitting bank's o-registers (only those in the output mask are meaningful).
    pub outputs: [Vec4; 16],
}

/// A triangle sent by an EMIT with the primitive flag: the three vertex slots, in slot order.
/// When `winding` is set, the primitive assembler takes them as (slot 1, slot 0, slot 2).
#[derive(Clone, Debug, PartialEq)]
pub struct Primitive {
    /// The winding flag of the emitting SETEMIT.
    pub winding: bool,
    /// Slots 0, 1, 2.
    pub vertices: [[Vec4; 16]; 3],
}

/// Everything one geometry-shader invocation sent: the sink that keeps it all (tests and the
/// differential tester compare it whole).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GeometryResult {
    /// Every EMIT, in order.
    pub vertices: Vec<EmittedVertex>,
    /// Every triangle, in order.
    pub primitives: Vec<Primitive>,
}

impl EmitSink for GeometryResult {
    fn vertex(&mut self, config: EmitConfig, outputs: &[Vec4; 16]) {
        self.vertices.push(EmittedVertex {
            config,
            outputs: *outputs,
        });
    }

    fn primitive(&mut self, winding: bool, slots: &[[Vec4; 16]; 3]) {
        self.primitives.push(Primitive {
            winding,
            vertices: *slots,
        });
    }
}

/// The state a geometry shader keeps across the invocations of one draw.
#[derive(Clone, Debug, PartialEq)]
pub struct GeometryState {
    /// r0-r15, a0, aL, cmp (the `output` field is unused: outputs live in `banks`).
    pub registers: Registers,
    /// The two output banks; writes go to `banks[bank]`.
    pub banks: [[Vec4; 16]; 2],
    /// The bank written now; EMIT switches it.
    pub bank: usize,
    /// The SETEMIT state (not reset by EMIT).
    pub emit: EmitConfig,
    /// The three vertex slots (never cleared, so strips re-emit into them).
    pub slots: [[Vec4; 16]; 3],
    /// Whether an invocation has run (b15 then reads true).
    pub invoked: bool,
}

impl Default for GeometryState {
    fn default() -> GeometryState {
        GeometryState {
            registers: Registers::default(),
            banks: [[[0.0; 4]; 16]; 2],
            bank: 0,
            emit: EmitConfig::default(),
            slots: [[[0.0; 4]; 16]; 3],
            invoked: false,
        }
    }
}

impl GeometryState {
    /// The bool uniforms the next invocation sees: b15 reads true once an invocation has run
    /// (docs/execution-model.md §6). An invocation, even a failed one, sets
    /// [`GeometryState::invoked`] when it ends.
    pub fn invocation_bools(&self, bools: u16) -> u16 {
        if self.invoked { bools | 1 << 15 } else { bools }
    }

    /// EMIT with `outputs` the current bank's o-registers: the vertex goes to the slot SETEMIT
    /// chose and to `sink`, a triangle follows when the primitive flag is set, then the bank
    /// switches (the caller swaps its own copies of the banks, if it keeps any). Vertex id 3
    /// fails with nothing sent.
    pub fn emit(
        &mut self,
        outputs: &[Vec4; 16],
        pc: u16,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        let config = self.emit;
        if config.vertex > 2 {
            return Err(ExecError::InvalidEmitVertex { pc });
        }
        self.slots[config.vertex as usize] = *outputs;
        sink.vertex(config, outputs);
        if config.primitive {
            sink.primitive(config.winding, &self.slots);
        }
        self.bank ^= 1;
        Ok(())
    }
}

/// A program prepared by one engine: what an emulator embeds, and what `picajit run`, the
/// differential tester and the benchmarks talk to.
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

    /// Runs a batch of vertex-shader invocations (each from zeroed registers, as
    /// [`ShaderEngine::run_vertex`]): the outputs go to `io`'s output planes (+0 for a failed
    /// vertex), the final flow registers to its flow entries when it has them, and each failure
    /// to `errors` as (vertex index, error), in vertex order. This is the interface engines that
    /// run several vertices at once speed up; the default runs one vertex at a time.
    fn run_batch(
        &self,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        io.run_per_vertex(errors, |inputs| self.run_vertex(uniforms, inputs));
    }

    /// What the engine offers a caller that embeds it beyond this contract (its fast paths),
    /// if anything: [`Hosted`] calls them, or what every engine can do instead.
    fn host_paths(&self) -> Option<&dyn HostPaths> {
        None
    }

    /// Runs one geometry-shader invocation on the persistent `state`, sending every emitted
    /// vertex and primitive to `sink` as it is emitted. A failed invocation keeps the state it
    /// reached (and what it sent before failing has been sent).
    fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError>;
}
