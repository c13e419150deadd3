//! The Cranelift JIT: bit-exact with the interpreter, for every program.
//!
//! [`JitShader::compile`] lowers the reachable part of program memory to native code: one
//! function for a program of at most 512 reachable words, else one per chunk of memory
//! (entered through a jump table, left by tail calls), so that the compile cost is linear in
//! the reachable words ([`CompileStats`] reports the size of what was emitted).
//! The (private) `analysis` finds the reachable addresses and, for each address where a scope
//! can end, the scopes that could end there. `lower` emits the data path (swizzles, and every
//! arithmetic rule of [`shader::float24::lanes`], which it implements on vector IR values) as
//! inline vector code on registers held in SSA values; `control` emits the control-flow stack
//! machine inline, compiling the rules of [`shader::flow::rules`]: IF/CALL/LOOP stacks in the
//! context, checks only where a scope can end, and direct jumps to the addresses the analysis
//! allows (through a shared jump table when they are many), so no control flow goes through
//! the host. Hangs are errors exactly as in the interpreter: every instruction spends one unit
//! of the budget (checked once per straight-line run, with an exact cold path), and BREAK on an
//! empty loop stack fails. The code touches only its context (a relatively addressed
//! uniform read is one masked load into a 128-entry table; stack slots are masked indices), so
//! it is memory-safe for every program.
//!
//! ```
//! use picajit_jit::JitShader;
//! use shader::exec::{ExecConfig, ShaderEngine};
//! use shader::program::{ShaderKind, ShaderProgram, Uniforms};
//!
//! // mov o0, v0; end (descriptor 0: all lanes, identity swizzles)
//! let code = [0x4C00_0000, 0x8800_0000];
//! let program = ShaderProgram::new(&code, &[0x0000_036F], 0, ShaderKind::Vertex, 1).unwrap();
//! let engine = JitShader::compile(program, ExecConfig::default()).unwrap();
//! let mut inputs = [[0.0f32; 4]; 16];
//! inputs[0] = [1.0, 2.0, 3.0, 4.0];
//! let result = engine.run_vertex(&Uniforms::default(), &inputs).unwrap();
//! assert_eq!(result.outputs[0], [1.0, 2.0, 3.0, 4.0]);
//! ```

/// The element-wise operations of [`shader::float24::lanes::Elements`] that are one Cranelift
/// instruction on `i32x4`/`f32x4` values, for the JIT's two lowerings (`lower` and `soa`), which
/// differ only in constants, host calls and what they remember of flushed values. Expands inside
/// an `impl Elements` whose `self.b` is the `FunctionBuilder`.
macro_rules! vector_ir_elements {
    () => {
        fn and(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().band(a, b)
        }
        fn or(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().bor(a, b)
        }
        fn add_bits(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().iadd(a, b)
        }
        fn shift_right(&mut self, a: Value, amount: u32) -> Value {
            let amount = self.b.ins().iconst(types::I32, amount as i64);
            self.b.ins().ushr(a, amount)
        }
        fn below(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().icmp(IntCC::UnsignedLessThan, a, b)
        }
        fn above(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().icmp(IntCC::UnsignedGreaterThan, a, b)
        }
        // Signed vector compares are one instruction on x86-64; unsigned ones are not.
        fn magnitude_below(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().icmp(IntCC::SignedLessThan, a, b)
        }
        fn magnitude_above(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().icmp(IntCC::SignedGreaterThan, a, b)
        }
        fn signed_below(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().icmp(IntCC::SignedLessThan, a, b)
        }
        fn signed_max(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().smax(a, b)
        }
        fn signed_min(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().smin(a, b)
        }
        fn clear_where(&mut self, mask: Value, bits: Value) -> Value {
            self.b.ins().band_not(bits, mask)
        }
        fn is_nan(&mut self, a: Value) -> Value {
            self.b.ins().fcmp(FloatCC::Unordered, a, a)
        }
        fn is_number(&mut self, a: Value) -> Value {
            self.b.ins().fcmp(FloatCC::Ordered, a, a)
        }
        fn both_numbers(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().fcmp(FloatCC::Ordered, a, b)
        }
        fn both(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().band(a, b)
        }
        fn either(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().bor(a, b)
        }
        fn select(&mut self, mask: Value, a: Value, b: Value) -> Value {
            self.b.ins().bitselect(mask, a, b)
        }
        fn fadd(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().fadd(a, b)
        }
        fn fmul(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().fmul(a, b)
        }
        fn fdiv(&mut self, a: Value, b: Value) -> Value {
            self.b.ins().fdiv(a, b)
        }
        fn sqrt(&mut self, a: Value) -> Value {
            self.b.ins().sqrt(a)
        }
        fn floor(&mut self, a: Value) -> Value {
            self.b.ins().floor(a)
        }
    };
}

/// The IR condition of a CMP operator, for the JIT's two lowerings; `None` for the operators
/// 6 and 7, which always set their flag (docs/execution-model.md §3.3, CMP).
fn compare_cc(op: shader::isa::CompareOp) -> Option<cranelift_codegen::ir::condcodes::FloatCC> {
    use cranelift_codegen::ir::condcodes::FloatCC;
    const CC: [FloatCC; 6] = [
        FloatCC::Equal,
        FloatCC::NotEqual,
        FloatCC::LessThan,
        FloatCC::LessThanOrEqual,
        FloatCC::GreaterThan,
        FloatCC::GreaterThanOrEqual,
    ];
    CC.get(op.bits() as usize).copied()
}

/// Flags of a load of the caller's floats, for the JIT's two lowerings (input registers,
/// uniforms, vertex records, input planes): never written by the compiled code, valid (the
/// caller's contract), and aligned only as f32s are (an emulator's arrays; a plane starts at
/// the caller's pointer plus a multiple of its stride in floats), so never folded into an
/// instruction that needs 16-byte alignment.
fn caller_floats() -> cranelift_codegen::ir::MemFlagsData {
    cranelift_codegen::ir::MemFlagsData::new()
        .with_notrap()
        .with_readonly()
}

/// Flags of an access to the caller's output floats (output registers, vertex records, output
/// planes), for the JIT's two lowerings: valid (the caller's contract) and aligned only as f32s
/// are.
fn caller_outputs() -> cranelift_codegen::ir::MemFlagsData {
    cranelift_codegen::ir::MemFlagsData::new().with_notrap()
}

mod facts;
mod scalar;
pub mod soa;
mod wide;

pub use scalar::{
    CHECKED_PRODUCTS_WORDS, CompileStats, FastDebt, FastPolicy, INLINE_TRANSCENDENTALS, JitShader,
};
pub use soa::{
    ConstantLanes, SoaArithmetic, SoaCodegen, SoaCompileError, SoaCompileStats, SoaJit,
    UniformComponents,
};

use std::fmt;
use std::sync::OnceLock;

use cranelift_codegen::isa::{CallConv, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};

/// Why the JIT could not compile a program: an environment problem (an unsupported host, no
/// executable memory) or a code-generator limit, never a property of the program, since every
/// program is compilable. Each variant is a phase of compiling; `detail` is what Cranelift said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JitError {
    /// The host's instruction set could not be detected or is not supported.
    HostDetection {
        /// Cranelift's message.
        detail: String,
    },
    /// A code-generator setting or the target ISA was refused.
    CodeGenerator {
        /// The setting or part.
        what: &'static str,
        /// Cranelift's message.
        detail: String,
    },
    /// Declaring the shader or a host function to the module failed.
    Declaration {
        /// The function.
        function: &'static str,
        /// Cranelift's message.
        detail: String,
    },
    /// Generating machine code for the shader failed.
    CodeGeneration {
        /// Cranelift's message.
        detail: String,
    },
    /// Making the code executable failed.
    Finalization {
        /// Cranelift's message.
        detail: String,
    },
}

impl fmt::Display for JitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JitError::HostDetection { detail } => write!(f, "detecting the host: {detail}"),
            JitError::CodeGenerator { what, detail } => {
                write!(f, "setting up the code generator ({what}): {detail}")
            }
            JitError::Declaration { function, detail } => {
                write!(f, "declaring {function}: {detail}")
            }
            JitError::CodeGeneration { detail } => write!(f, "generating code: {detail}"),
            JitError::Finalization { detail } => write!(f, "finalizing the code: {detail}"),
        }
    }
}

impl std::error::Error for JitError {}

/// The calling convention of `extern "C"` functions on the host: Cranelift's default for the
/// host triple is the platform's C ABI (System V on Linux x86-64, the Apple or AAPCS variants on
/// aarch64, fastcall on Windows).
fn c_call_conv() -> CallConv {
    CallConv::triple_default(&target_lexicon::Triple::host())
}

fn code_generator(what: &'static str, e: impl fmt::Display) -> JitError {
    JitError::CodeGenerator {
        what,
        detail: e.to_string(),
    }
}

/// Set (to anything) to print each compiled function's IR and machine code on stderr.
pub const DUMP_VARIABLE: &str = "PICAJIT_DUMP_JIT";

/// The environment variable that turns Cranelift's IR verifier on in a release build (CI's test
/// run sets it; any value but `0`).
pub const VERIFY_IR_VARIABLE: &str = "PICAJIT_VERIFY_IR";

/// Whether compiled functions go through Cranelift's IR verifier, which catches lowering bugs:
/// always in debug builds, in release builds when [`VERIFY_IR_VARIABLE`] is set (it costs about
/// a tenth of the compile time).
fn verify_ir() -> bool {
    cfg!(debug_assertions) || std::env::var_os(VERIFY_IR_VARIABLE).is_some_and(|v| v != "0")
}

/// The host's code generator (cranelift-native, so SSE4.1/AVX are used), built once per
/// process: every program is compiled with the same settings.
fn host_isa() -> Result<OwnedTargetIsa, JitError> {
    static ISA: OnceLock<Result<OwnedTargetIsa, JitError>> = OnceLock::new();
    ISA.get_or_init(|| {
        let mut flags = settings::builder();
        flags
            .set("opt_level", "speed")
            .map_err(|e| code_generator("opt_level", e))?;
        flags
            .set(
                "enable_verifier",
                if verify_ir() { "true" } else { "false" },
            )
            .map_err(|e| code_generator("enable_verifier", e))?;
        // Cranelift's tail calls (between chunks) rely on frame pointers.
        flags
            .set("preserve_frame_pointers", "true")
            .map_err(|e| code_generator("preserve_frame_pointers", e))?;
        let isa_builder = cranelift_native::builder().map_err(|e| JitError::HostDetection {
            detail: e.to_string(),
        })?;
        isa_builder
            .finish(settings::Flags::new(flags))
            .map_err(|e| code_generator("the target ISA", e))
    })
    .clone()
}
