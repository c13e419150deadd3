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

mod analysis;
mod context;
mod control;
mod lower;
pub mod soa;
mod wide;

pub use lower::{CHECKED_PRODUCTS_WORDS, INLINE_TRANSCENDENTALS};
pub use soa::{
    ConstantLanes, SoaArithmetic, SoaCodegen, SoaCompileError, SoaCompileStats, SoaJit,
    UniformComponents,
};

use std::fmt;
use std::sync::OnceLock;

use cranelift_codegen::ir::{AbiParam, InstBuilder, Signature, types};
use cranelift_codegen::isa::{CallConv, OwnedTargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};

use analysis::FlowFacts;
use context::{GeometryRun, JitContext, status};
use shader::exec::{
    BatchIo, EmitSink, ExecConfig, ExecError, GeometryState, ShaderEngine, VertexResult,
};
use shader::float24::lanes;
use shader::isa::{
    BinaryOp, CondFlowOp, Instruction, OperandDescriptor, PROGRAM_WORDS, RegisterFile, RelIndex,
    SimpleOp, UnaryOp, decode_words,
};
use shader::program::{
    FLOAT_UNIFORMS, FlowRegisters, InputRegisters, ShaderKind, ShaderProgram, Uniforms, Vec4,
};

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

/// The Rust type of the compiled function. It is `extern "C"`, and [`shader_signature`] and
/// [`lower::host_signatures`] declare every function with [`c_call_conv`], the host's C calling
/// convention, so the declaration and the call agree by construction.
type CompiledFn = unsafe extern "C" fn(*mut JitContext) -> u32;

/// The calling convention of `extern "C"` functions on the host: Cranelift's default for the
/// host triple is the platform's C ABI (System V on Linux x86-64, the Apple or AAPCS variants on
/// aarch64, fastcall on Windows).
fn c_call_conv() -> CallConv {
    CallConv::triple_default(&target_lexicon::Triple::host())
}

/// The signature of [`CompiledFn`]: the context pointer in, the status out.
fn shader_signature(pointer: types::Type) -> Signature {
    let mut signature = Signature::new(c_call_conv());
    signature.params.push(AbiParam::new(pointer));
    signature.returns.push(AbiParam::new(types::I32));
    signature
}

/// The size of what [`JitShader::compile`] emitted for one program, recorded while compiling:
/// it grows linearly with `reachable_words` whatever the program (`jit-tests/compile_bounds.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompileStats {
    /// Cranelift IR instructions of the program's functions, as lowered (before optimisation).
    pub ir_instructions: usize,
    /// Cranelift IR blocks of the program's functions, as lowered.
    pub ir_blocks: usize,
    /// Program addresses control can reach (the zero words past the code included).
    pub reachable_words: usize,
    /// Bytes of machine code of the program's functions.
    pub code_bytes: usize,
}

/// The signature of a chunk's function (see [`analysis::FlowFacts::chunks`]): the context
/// pointer, the budget left and the address to go on at in, the status out. Chunks call each
/// other only by tail calls.
fn chunk_signature(pointer: types::Type) -> Signature {
    let mut signature = Signature::new(CallConv::Tail);
    signature.params.push(AbiParam::new(pointer));
    signature.params.push(AbiParam::new(types::I64));
    signature.params.push(AbiParam::new(types::I32));
    signature.returns.push(AbiParam::new(types::I32));
    signature
}

/// Compiles the function in `ctx` as `id`, adds its size to `stats` and clears `ctx`.
fn define(
    module: &mut JITModule,
    id: cranelift_module::FuncId,
    ctx: &mut cranelift_codegen::Context,
    stats: &mut CompileStats,
) -> Result<(), JitError> {
    stats.ir_blocks += ctx.func.layout.blocks().count();
    stats.ir_instructions += ctx
        .func
        .layout
        .blocks()
        .map(|block| ctx.func.layout.block_insts(block).count())
        .sum::<usize>();
    let dump = std::env::var_os(DUMP_VARIABLE).is_some();
    if dump {
        ctx.set_disasm(true);
        eprintln!("{}", ctx.func.display());
    }
    module
        .define_function(id, ctx)
        .map_err(|e| JitError::CodeGeneration {
            detail: format!("{e:?}"),
        })?;
    if dump && let Some(text) = ctx.compiled_code().and_then(|c| c.vcode.clone()) {
        eprintln!("{text}");
    }
    stats.code_bytes += ctx
        .compiled_code()
        .map_or(0, |code| code.code_info().total_size as usize);
    module.clear_context(ctx);
    Ok(())
}

/// The shader of a program of several chunks: loads the budget and calls the entry's chunk.
fn entry_function(
    module: &mut JITModule,
    ctx: &mut cranelift_codegen::Context,
    builder_context: &mut FunctionBuilderContext,
    facts: &FlowFacts,
    program: &ShaderProgram,
    chunk_ids: &[cranelift_module::FuncId],
    pointer: types::Type,
) {
    ctx.func.signature = shader_signature(pointer);
    let mut b = FunctionBuilder::new(&mut ctx.func, builder_context);
    let chunk = facts.chunk_of(program.entry);
    let callee = module.declare_func_in_func(chunk_ids[chunk], b.func);
    let block = b.create_block();
    b.append_block_params_for_function_params(block);
    b.switch_to_block(block);
    b.seal_block(block);
    let ctx_value = b.block_params(block)[0];
    let budget = b.ins().load(
        types::I64,
        lower::trusted(),
        ctx_value,
        std::mem::offset_of!(JitContext, budget) as i32,
    );
    let entry = b.ins().iconst(types::I32, program.entry as i64);
    let call = b.ins().call(callee, &[ctx_value, budget, entry]);
    let status = b.inst_results(call)[0];
    b.ins().return_(&[status]);
    b.finalize(module.target_config());
}

/// What one function of the program is compiled from: a chunk of program memory.
struct ChunkFunction<'a> {
    program: &'a ShaderProgram,
    config: ExecConfig,
    decoded: &'a [Instruction],
    facts: &'a FlowFacts,
    /// EX2 and LG2 inline ([`lower::INLINE_TRANSCENDENTALS`]).
    inline_transcendentals: bool,
    /// Checked fast paths for products ([`lower::CHECKED_PRODUCTS_WORDS`]).
    checked_products: bool,
    /// A whole invocation's fast form ([`lower::Lowering::fast_invocation`]).
    fast_invocation: bool,
    /// [`lower::Lowering::zero_temps`].
    zero_temps: u16,
    /// Its chunk.
    chunk: usize,
    /// The host functions.
    host_ids: &'a [cranelift_module::FuncId],
    /// Every chunk's function (just the shader when the program is one chunk).
    chunk_ids: &'a [cranelift_module::FuncId],
}

impl ChunkFunction<'_> {
    /// Lowers the chunk's reachable instructions into `ctx`: the shader's signature when the
    /// program is one chunk (entered at the entry point), a chunk's otherwise (entered through
    /// its dispatch).
    fn lower(
        &self,
        module: &mut JITModule,
        ctx: &mut cranelift_codegen::Context,
        builder_context: &mut FunctionBuilderContext,
        pointer: types::Type,
    ) {
        let single = self.chunk_ids.len() == 1;
        ctx.func.signature = if single {
            shader_signature(pointer)
        } else {
            chunk_signature(pointer)
        };
        let mut b = FunctionBuilder::new(&mut ctx.func, builder_context);
        let host_refs: Vec<_> = self
            .host_ids
            .iter()
            .map(|&id| module.declare_func_in_func(id, b.func))
            .collect();
        let chunk_refs: Vec<_> = if single {
            Vec::new()
        } else {
            self.chunk_ids
                .iter()
                .map(|&id| module.declare_func_in_func(id, b.func))
                .collect()
        };
        let entry_block = b.create_block();
        b.append_block_params_for_function_params(entry_block);
        let range = self.facts.chunk_range(self.chunk);
        let blocks: Vec<_> = (0..PROGRAM_WORDS as u32)
            .map(|pc| {
                (range.contains(&pc) && self.facts.has_code(pc as u16)).then(|| b.create_block())
            })
            .collect();
        let exit = b.create_block();
        b.append_block_param(exit, types::I32);
        b.append_block_param(exit, types::I32);
        b.set_cold_block(exit);

        b.switch_to_block(entry_block);
        let params = b.block_params(entry_block).to_vec();
        let ctx_value = params[0];
        let budget = b.declare_var(types::I64);
        let dispatch_pc = b.declare_var(types::I32);
        let route = control::RouteVars {
            matched: b.declare_var(types::I32),
            pc: b.declare_var(types::I32),
        };
        // The input and uniform pointers do not change during a run: loaded once here, in the
        // block that dominates every other.
        let pointer_at = |b: &mut FunctionBuilder, offset: usize| {
            b.ins().load(
                pointer,
                lower::trusted().with_readonly(),
                ctx_value,
                offset as i32,
            )
        };
        let inputs = pointer_at(&mut b, std::mem::offset_of!(JitContext, input));
        let uniforms = pointer_at(&mut b, std::mem::offset_of!(JitContext, uniform));
        let outputs = pointer_at(&mut b, std::mem::offset_of!(JitContext, output));
        let mut lowering = lower::Lowering {
            b: &mut b,
            ctx: ctx_value,
            inputs,
            uniforms,
            outputs,
            program: self.program,
            decoded: self.decoded,
            precision: self.config.precision,
            host: lower::HostFunctions {
                emit: host_refs[0],
                setemit: host_refs[1],
                exp2: host_refs[2],
                log2: host_refs[3],
            },
            inline_transcendentals: self.inline_transcendentals,
            checked_products: self.checked_products,
            fast_invocation: self.fast_invocation,
            cache: lower::RegisterCache::default(),
            zero_temps: self.zero_temps,
            budget,
            facts: self.facts,
            blocks,
            exit,
            routing: control::Routing::new(self.chunk, chunk_refs, dispatch_pc),
        };
        if single {
            let initial = lowering.load(types::I64, std::mem::offset_of!(JitContext, budget));
            lowering.b.def_var(budget, initial);
            let first =
                lowering.blocks[self.program.entry as usize].expect("the entry is reachable");
            lowering.b.ins().jump(first, &[]);
        } else {
            lowering.b.def_var(budget, params[1]);
            lowering.goto_dispatch(params[2]);
        }
        for pc in range {
            if self.facts.has_code(pc as u16) {
                lowering.instruction(pc as u16, route);
            }
        }
        lowering.exit_block();
        lowering.dispatch_block();
        b.seal_all_blocks();
        b.finalize(module.target_config());
    }
}

/// When a [`JitShader`] runs a whole invocation's fast form first (docs/architecture.md,
/// "Whole invocations on the fast path"). The bits are the same under every policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastPolicy {
    /// By the recent rate of flagged invocations ([`FastDebt`]): on every invocation while
    /// fewer than one in five flag, on about one in 33 where every one does.
    Adaptive,
    /// On every invocation.
    Always,
    /// Never.
    Never,
}

/// The record behind [`FastPolicy::Adaptive`]: a debt that a flagged invocation raises by
/// [`FLAG_DEBT`](Self::FLAG_DEBT), an invocation the fast form finished lowers by
/// [`PASS_RELIEF`](Self::PASS_RELIEF) (not below 0), and one run on the exact function directly
/// lowers by 1; the fast form runs first while the debt is below
/// [`LIMIT`](Self::LIMIT).
///
/// A flagged invocation costs the fast run and the exact one; one the fast form finishes saves
/// the exact function's extra cost, 5-40% of it on the corpus. So the fast form pays while the
/// share of invocations that flag is below that saving's share, which differs by program;
/// the debt stands still at one in five (`PASS_RELIEF / (FLAG_DEBT + PASS_RELIEF)`), the
/// middle of that range. Below it the debt stays under the limit (a lone flag does not reach
/// it) and every invocation runs the fast form; above it the debt climbs, and a program whose
/// every invocation flags runs the fast form once in `FLAG_DEBT + 1`. (The rule it replaced,
/// 16 invocations on the exact function after each flag, ran the fast form on few invocations
/// of a program with one edge-value vertex in six.) Plain loads and stores: threads that race
/// lose an update, not a result.
#[derive(Debug, Default)]
pub struct FastDebt(std::sync::atomic::AtomicI32);

impl FastDebt {
    /// What a flagged invocation adds.
    pub const FLAG_DEBT: i32 = 32;
    /// What an invocation the fast form finished takes off.
    pub const PASS_RELIEF: i32 = 8;
    /// The debt from which invocations run on the exact function directly.
    pub const LIMIT: i32 = 2 * Self::FLAG_DEBT;

    /// Whether the next invocation runs the fast form first (one that does not lowers the
    /// debt).
    #[inline]
    pub fn fast_first(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let debt = self.0.load(Relaxed);
        if debt >= Self::LIMIT {
            self.0.store(debt - 1, Relaxed);
            return false;
        }
        true
    }

    /// Notes an invocation the fast form finished.
    #[inline]
    pub fn note_passed(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        let debt = self.0.load(Relaxed);
        // No store while there is no debt: the common case leaves the line unwritten.
        if debt > 0 {
            self.0.store((debt - Self::PASS_RELIEF).max(0), Relaxed);
        }
    }

    /// Notes an invocation the fast form flagged (or did not end), which runs again.
    pub fn note_flagged(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        let debt = self.0.load(Relaxed);
        self.0.store(debt.saturating_add(Self::FLAG_DEBT), Relaxed);
    }
}

/// A program compiled to native code.
pub struct JitShader {
    program: ShaderProgram,
    config: ExecConfig,
    stats: CompileStats,
    function: CompiledFn,
    /// A whole invocation's fast form, run first when [`JitShader::fast_first`] says so
    /// (docs/architecture.md, "Whole invocations on the fast path"): vertex shaders in the
    /// float24 modes that have checked products.
    fast_function: Option<CompiledFn>,
    /// Whether to run the fast form first under [`FastPolicy::Adaptive`].
    fast_debt: FastDebt,
    /// When the fast form runs first.
    fast_policy: FastPolicy,
    /// Invocations the fast form ran and the exact function ran again.
    fast_reruns: std::sync::atomic::AtomicU64,
    /// The float uniforms reachable code reads (bit n: c`n`; all of them if it reads one
    /// relative to an address register): the fast form runs only when each is
    /// `lanes::within_operand_bounds`, and reads them unchecked.
    fast_uniforms: u128,
    /// The temporaries reachable code reads or writes (bit n: rN), but those the code zeroes
    /// itself (`Lowering::zero_temps`): the only ones the caller of a vertex invocation zeroes.
    temps: u16,
    /// Whether reachable code reads a control-flow stack ([`uses_stacks`]): only then are they
    /// emptied before an invocation.
    uses_stacks: bool,
    /// Owns the code; freed on drop.
    module: Option<JITModule>,
}

/// Whether reachable code reads a control-flow stack: a push (IF, CALL, LOOP; their scope
/// ends are checked only where a push can end) or a BREAK/BREAKC (which reads the LOOP stack's
/// length, so it must find it empty outside any loop).
fn uses_stacks(decoded: &[Instruction], facts: &FlowFacts) -> bool {
    let pushes = !(facts.if_ends.is_empty()
        && facts.call_returns.is_empty()
        && facts.loop_entries.is_empty());
    pushes
        || decoded.iter().zip(&facts.reachable).any(|(inst, &r)| {
            r && matches!(
                inst,
                Instruction::Simple {
                    op: SimpleOp::Break,
                    ..
                } | Instruction::CondFlow {
                    op: CondFlowOp::Breakc,
                    ..
                }
            )
        })
}

/// How many reachable words of `decoded` are instructions a whole invocation's fast form
/// checks (ADD, MUL, MAD, DP3, DP4, DPH, DST).
fn checked_instructions(decoded: &[Instruction], reachable: &[bool]) -> usize {
    decoded
        .iter()
        .zip(reachable)
        .filter(|&(inst, &r)| {
            r && match inst {
                Instruction::Binary { op, .. } => matches!(
                    op,
                    BinaryOp::Add
                        | BinaryOp::Mul
                        | BinaryOp::Dp3
                        | BinaryOp::Dp4
                        | BinaryOp::Dph
                        | BinaryOp::Dphi
                        | BinaryOp::Dst
                        | BinaryOp::Dsti
                ),
                Instruction::Mad { .. } => true,
                _ => false,
            }
        })
        .count()
}

/// How many reachable words of `decoded` are EX2 or LG2.
fn transcendentals(decoded: &[Instruction], reachable: &[bool]) -> usize {
    decoded
        .iter()
        .zip(reachable)
        .filter(|&(inst, &r)| {
            r && matches!(
                inst,
                Instruction::Unary {
                    op: UnaryOp::Ex2 | UnaryOp::Lg2,
                    ..
                }
            )
        })
        .count()
}

/// The float uniforms the reachable instructions of `decoded` read (bit n: c`n`), all 96 when
/// one is read relative to an address register.
fn uniforms_read(program: &ShaderProgram, decoded: &[Instruction], reachable: &[bool]) -> u128 {
    let all = (1u128 << FLOAT_UNIFORMS) - 1;
    let mut read = 0u128;
    for (inst, _) in decoded.iter().zip(reachable).filter(|&(_, &r)| r) {
        let Some(desc) = inst.desc() else { continue };
        let desc = OperandDescriptor(program.opdescs[desc as usize]);
        for source in inst.sources(desc) {
            if let (RegisterFile::FloatUniform, n) = source.reg.file_index() {
                read |= if source.rel == RelIndex::None {
                    1 << n
                } else {
                    all
                };
            }
        }
    }
    read & all
}

/// The temporaries the reachable instructions of `decoded` name, as sources or destination.
fn temps_named(program: &ShaderProgram, decoded: &[Instruction], reachable: &[bool]) -> u16 {
    let mut temps = 0u16;
    for (inst, _) in decoded.iter().zip(reachable).filter(|&(_, &r)| r) {
        if let Some((RegisterFile::Temporary, n)) = inst.dst().map(|d| d.file_index()) {
            temps |= 1 << n;
        }
        let Some(desc) = inst.desc() else { continue };
        let desc = OperandDescriptor(program.opdescs[desc as usize]);
        for source in inst.sources(desc) {
            if let (RegisterFile::Temporary, n) = source.reg.file_index() {
                temps |= 1 << n;
            }
        }
    }
    temps
}

// SAFETY: after `finalize_definitions` the module is never used again except to free its memory
// in `Drop` (which needs `&mut self`); the compiled function is immutable code that only touches
// the context passed to it, so it can run on any thread, from several threads at once.
unsafe impl Send for JitShader {}
// SAFETY: see above.
unsafe impl Sync for JitShader {}

impl Drop for JitShader {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: no pointer to the compiled code outlives `self`: `function` is only called
            // through `&self`.
            unsafe { module.free_memory() };
        }
    }
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

impl JitShader {
    /// Compiles `program` with `config`.
    pub fn compile(program: ShaderProgram, config: ExecConfig) -> Result<JitShader, JitError> {
        let decoded: Box<[Instruction]> = decode_words(&program.code[..]).into();
        let mut facts = FlowFacts::analyse(&decoded, program.entry);
        if program.stage == ShaderKind::Vertex {
            facts.find_dot_groups(&decoded, &program.opdescs[..]);
            if config.precision.is_f24() {
                facts.find_canonical_temps(&decoded, &program.opdescs[..]);
                facts.find_wild_temps(&decoded, &program.opdescs[..]);
            }
            facts.find_temps_ahead(&decoded, &program.opdescs[..]);
        }
        let inline_transcendentals =
            transcendentals(&decoded, &facts.reachable) <= lower::INLINE_TRANSCENDENTALS;
        let reachable_words = facts.reachable.iter().filter(|&&r| r).count();
        let checked_products =
            program.stage == ShaderKind::Vertex && reachable_words <= lower::CHECKED_PRODUCTS_WORDS;

        let isa = host_isa()?;
        let pointer = isa.pointer_type();
        let mut jit_builder = JITBuilder::with_isa(isa, default_libcall_names());
        jit_builder.symbol("picajit_emit", context::picajit_emit as *const u8);
        jit_builder.symbol("picajit_setemit", context::picajit_setemit as *const u8);
        jit_builder.symbol("picajit_exp2", context::picajit_exp2 as *const u8);
        jit_builder.symbol("picajit_log2", context::picajit_log2 as *const u8);
        let mut module = JITModule::new(jit_builder);

        let declaration = |function: &'static str| {
            move |e: cranelift_module::ModuleError| JitError::Declaration {
                function,
                detail: e.to_string(),
            }
        };
        let mut host_ids = Vec::new();
        for (name, signature) in lower::host_signatures(pointer, c_call_conv()) {
            let id = module
                .declare_function(name, Linkage::Import, &signature)
                .map_err(declaration(name))?;
            host_ids.push(id);
        }
        let fast_invocation = checked_products
            && config.precision.is_f24()
            && program.stage == ShaderKind::Vertex
            && (checked_instructions(&decoded, &facts.reachable) >= lower::FAST_FORM_INSTRUCTIONS
                || !facts.loop_entries.is_empty());
        let temps = temps_named(&program, &decoded, &facts.reachable);
        // A vertex shader compiled as one function and entered only at its start zeroes its
        // temporaries itself (`Lowering::start_invocation`); the caller zeroes the others.
        let zero_temps = if program.stage == ShaderKind::Vertex
            && facts.chunks.len() == 1
            && facts.entered_only_at_start
        {
            temps
        } else {
            0
        };
        let mut stats = CompileStats {
            reachable_words,
            ..CompileStats::default()
        };
        let mut ctx = module.make_context();
        let mut builder_context = FunctionBuilderContext::new();
        let mut entries = Vec::new();
        for fast in [false, true] {
            if fast && !fast_invocation {
                continue;
            }
            let prefix = if fast { "fast_" } else { "" };
            let shader_id = module
                .declare_function(
                    &format!("{prefix}shader"),
                    Linkage::Local,
                    &shader_signature(pointer),
                )
                .map_err(declaration("shader"))?;
            // One chunk: the shader itself. Several: a function per chunk, entered by the
            // shader.
            let chunk_ids = if facts.chunks.len() == 1 {
                vec![shader_id]
            } else {
                (0..facts.chunks.len())
                    .map(|k| {
                        module
                            .declare_function(
                                &format!("{prefix}chunk{k}"),
                                Linkage::Local,
                                &chunk_signature(pointer),
                            )
                            .map_err(declaration("a chunk"))
                    })
                    .collect::<Result<Vec<_>, _>>()?
            };
            for (chunk, &id) in chunk_ids.iter().enumerate() {
                let function = ChunkFunction {
                    program: &program,
                    config,
                    decoded: &decoded,
                    facts: &facts,
                    inline_transcendentals,
                    checked_products,
                    fast_invocation: fast,
                    zero_temps,
                    chunk,
                    host_ids: &host_ids,
                    chunk_ids: &chunk_ids,
                };
                function.lower(&mut module, &mut ctx, &mut builder_context, pointer);
                define(&mut module, id, &mut ctx, &mut stats)?;
            }
            if chunk_ids.len() > 1 {
                entry_function(
                    &mut module,
                    &mut ctx,
                    &mut builder_context,
                    &facts,
                    &program,
                    &chunk_ids,
                    pointer,
                );
                define(&mut module, shader_id, &mut ctx, &mut stats)?;
            }
            entries.push(shader_id);
        }
        module
            .finalize_definitions()
            .map_err(|e| JitError::Finalization {
                detail: e.to_string(),
            })?;
        // SAFETY: the functions were defined with `shader_signature`, which is `CompiledFn`'s
        // parameters, result and calling convention.
        let functions: Vec<CompiledFn> = entries
            .iter()
            .map(|&id| unsafe {
                std::mem::transmute::<*const u8, CompiledFn>(module.get_finalized_function(id))
            })
            .collect();
        let fast_uniforms = uniforms_read(&program, &decoded, &facts.reachable);
        let uses_stacks = uses_stacks(&decoded, &facts);
        Ok(JitShader {
            program,
            config,
            stats,
            function: functions[0],
            fast_function: functions.get(1).copied(),
            fast_debt: FastDebt::default(),
            fast_policy: FastPolicy::Adaptive,
            fast_reruns: std::sync::atomic::AtomicU64::new(0),
            fast_uniforms,
            temps: temps & !zero_temps,
            uses_stacks,
            module: Some(module),
        })
    }

    /// The program.
    pub fn program(&self) -> &ShaderProgram {
        &self.program
    }

    /// The settings it was compiled with.
    pub fn config(&self) -> ExecConfig {
        self.config
    }

    /// The size of the emitted IR and machine code.
    pub fn compile_stats(&self) -> CompileStats {
        self.stats
    }

    /// Whether the program has a whole invocation's fast form (docs/architecture.md, "Whole
    /// invocations on the fast path").
    pub fn has_fast_form(&self) -> bool {
        self.fast_function.is_some()
    }

    /// Sets when the fast form runs first (the default: [`FastPolicy::Adaptive`]). Every
    /// policy gives the same bits; [`FastPolicy::Always`] is for a tester that wants the fast
    /// form run on every invocation.
    pub fn set_fast_policy(&mut self, policy: FastPolicy) {
        self.fast_policy = policy;
    }

    /// How many invocations ran the fast form and then, flagged or not ended, the exact
    /// function (a measure of how often the fast form's bounds are left, never of results).
    pub fn fast_form_reruns(&self) -> u64 {
        self.fast_reruns.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the uniforms `ctx` reads let the fast form run: every one the program reads is
    /// within the operand bounds (known from `comfortable`, or looked at).
    fn uniforms_allow_fast_form(&self, ctx: &JitContext, comfortable: Option<u128>) -> bool {
        let needed = self.fast_uniforms;
        if needed == 0 {
            return true;
        }
        let known = comfortable.unwrap_or_else(|| {
            // SAFETY: every caller points `ctx.uniform` at the invocation's live uniforms
            // before executing.
            let floats = unsafe { &*ctx.uniform };
            lanes::uniforms_within_operand_bounds(floats, needed)
        });
        known & needed == needed
    }

    /// Whether this invocation runs the fast form first.
    fn fast_first(&self) -> bool {
        match self.fast_policy {
            FastPolicy::Always => true,
            FastPolicy::Never => false,
            FastPolicy::Adaptive => self.fast_debt.fast_first(),
        }
    }

    /// Counts an invocation the fast form flagged (or did not end) and puts `ctx` back as the
    /// invocation started, for the exact function.
    #[cold]
    #[inline(never)]
    fn prepare_rerun(&self, ctx: &mut JitContext) {
        if self.fast_policy == FastPolicy::Adaptive {
            self.fast_debt.note_flagged();
        }
        self.fast_reruns
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ctx.reset_registers(self.temps);
        // SAFETY: a vertex invocation's output registers are valid for writes (every caller
        // sets `ctx.output` before executing).
        unsafe { *ctx.output = [[0.0; 4]; 16] };
    }

    /// Runs the compiled code on a prepared context; the error for a failed status. A vertex
    /// shader with a fast form runs it first, and the exact function after it only when its
    /// operand checks flagged an element or it did not end (from the registers and outputs
    /// the invocation started with).
    ///
    /// `comfortable` holds the float uniforms the caller knows to be
    /// `lanes::within_operand_bounds` (bit n: c`n`); `None`: the fast form checks the ones it
    /// reads here.
    fn execute(&self, ctx: &mut JitContext, comfortable: Option<u128>) -> Result<(), ExecError> {
        if let Some(fast) = self.fast_function
            && self.fast_form_finished(fast, ctx, comfortable)
        {
            return Ok(());
        }
        self.prepare_run(ctx);
        // SAFETY: the code only touches `ctx` and, through the EMIT/SETEMIT host functions,
        // the geometry run `ctx.geometry` points to, which the caller keeps alive.
        let code = unsafe { (self.function)(ctx) };
        if code == status::END {
            return Ok(());
        }
        Err(self.status_error(code, ctx.error_pc as u16))
    }

    /// Gives `ctx` the invocation's budget and, where the program uses them, empty stacks:
    /// what either function needs before it runs.
    #[inline(always)]
    fn prepare_run(&self, ctx: &mut JitContext) {
        ctx.budget = self.config.instruction_budget;
        if self.uses_stacks {
            ctx.reset_flow();
        }
    }

    /// The fast form's part of [`execute`](Self::execute), out of line so that a program
    /// without one (every f32-mode program) keeps a small `execute` its callers inline: runs
    /// the fast form if the uniforms and the policy let it, and says whether it finished the
    /// invocation (if not, `ctx` is back as the invocation started).
    #[inline(never)]
    fn fast_form_finished(
        &self,
        fast: CompiledFn,
        ctx: &mut JitContext,
        comfortable: Option<u128>,
    ) -> bool {
        if !self.uniforms_allow_fast_form(ctx, comfortable) || !self.fast_first() {
            return false;
        }
        self.prepare_run(ctx);
        ctx.checked_largest = [0; 4];
        ctx.checked_least = [lanes::MAGNITUDE_BITS; 4];
        // SAFETY: as in `execute`; a vertex shader's code touches nothing but `ctx` and what
        // it points to.
        let code = unsafe { fast(ctx) };
        let flagged = lanes::FlaggingSignedZeros::<(), ()>::any_flagged_accumulated(
            lower::FAST_INVOCATION_CHECKS,
            ctx.checked_largest,
            ctx.checked_least,
        );
        if code == status::END && !flagged {
            if self.fast_policy == FastPolicy::Adaptive {
                self.fast_debt.note_passed();
            }
            return true;
        }
        self.prepare_rerun(ctx);
        false
    }

    /// The error of a failed status.
    #[cold]
    #[inline(never)]
    fn status_error(&self, code: u32, pc: u16) -> ExecError {
        match code {
            status::BREAK_OUTSIDE_LOOP => ExecError::BreakOutsideLoop { pc },
            status::BUDGET => ExecError::InstructionBudget {
                budget: self.config.instruction_budget,
                pc,
            },
            status::INVALID_EMIT => ExecError::InvalidEmitVertex { pc },
            code => ExecError::Internal { pc, code },
        }
    }

    /// Points `ctx` at the invocation's read-only values (not copied: the compiled code reads
    /// them where `uniforms` keeps them).
    fn set_uniforms(ctx: &mut JitContext, uniforms: &Uniforms, bools: u16) {
        ctx.uniform = &uniforms.float;
        ctx.ints = uniforms.int;
        ctx.bools = bools as u32;
    }

    fn flow_registers(ctx: &JitContext) -> FlowRegisters {
        FlowRegisters {
            a0: ctx.a0,
            al: ctx.al,
            cmp: [ctx.cmp[0] != 0, ctx.cmp[1] != 0],
        }
    }

    /// Runs one vertex-shader invocation from zeroed registers.
    pub fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        with_context(|ctx| {
            Self::set_uniforms(ctx, uniforms, uniforms.bools);
            self.run_vertex_in(ctx, inputs)
        })
    }

    /// Runs one vertex-shader invocation from zeroed registers, writing o0-o15 to `outputs`
    /// (all +0 when it fails) and returning the final flow registers:
    /// [`run_vertex`](Self::run_vertex) for a caller that keeps its own output registers.
    pub fn run_vertex_into(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        with_context(|ctx| self.run_in_context(ctx, uniforms, inputs, outputs, None))
    }

    /// [`ShaderEngine::run_filled_into`]: `fill` writes the inputs into the thread's context,
    /// which the code reads them from.
    pub fn run_filled_into(
        &self,
        uniforms: &Uniforms,
        fill: &mut dyn FnMut(&mut InputRegisters),
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        with_context(|ctx| {
            fill(&mut ctx.filled);
            let inputs: *const InputRegisters = &ctx.filled;
            self.run_in_context(ctx, uniforms, inputs, outputs, None)
        })
    }

    /// The body of [`run_vertex_into`](Self::run_vertex_into) in the thread's context, on the
    /// inputs at `inputs` (the caller's, or the context's own filled ones). Always inlined:
    /// called out of line, its result (flow registers or an error) went back through memory,
    /// written in pieces and read whole, and the read waited on the stores (measured: 4-9 ns a
    /// call, a quarter of a small program's `picajit_run_vertex`).
    #[inline(always)]
    fn run_in_context(
        &self,
        ctx: &mut JitContext,
        uniforms: &Uniforms,
        inputs: *const InputRegisters,
        outputs: &mut [Vec4; 16],
        comfortable: Option<u128>,
    ) -> Result<FlowRegisters, ExecError> {
        Self::set_uniforms(ctx, uniforms, uniforms.bools);
        ctx.input = inputs;
        ctx.reset_registers(self.temps);
        // The code writes the caller's registers: no copy, and no wide reads of what it
        // has just stored in 16-byte pieces.
        *outputs = [[0.0; 4]; 16];
        ctx.output = outputs;
        let outcome = self.execute(ctx, comfortable);
        if outcome.is_err() {
            *outputs = [[0.0; 4]; 16];
        }
        outcome.map(|()| Self::flow_registers(ctx))
    }

    /// [`run_vertex`](Self::run_vertex) in a context whose uniforms are set, reused across a
    /// batch: only the inputs and the zeroed registers change between vertices.
    fn run_vertex_in(
        &self,
        ctx: &mut JitContext,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        ctx.input = inputs;
        ctx.reset_registers(self.temps);
        ctx.bank = [[0.0; 4]; 16];
        ctx.output = &mut ctx.bank;
        self.execute(ctx, None)?;
        Ok(VertexResult {
            outputs: ctx.bank,
            flow: Self::flow_registers(ctx),
        })
    }

    /// Runs one geometry-shader invocation on the persistent `state`, sending what it emits to
    /// `sink`.
    pub fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        with_context(|ctx| {
            let bools = state.invocation_bools(uniforms.bools);
            Self::set_uniforms(ctx, uniforms, bools);
            ctx.input = inputs;
            ctx.temp = state.registers.temp;
            ctx.a0 = state.registers.flow.a0;
            ctx.al = state.registers.flow.al;
            ctx.cmp = state.registers.flow.cmp.map(u32::from);
            ctx.bank = state.banks[state.bank];
            ctx.output = &mut ctx.bank;
            let other_bank = state.banks[state.bank ^ 1];
            let mut run = GeometryRun {
                state,
                other_bank,
                sink,
            };
            ctx.geometry = (&mut run as *mut GeometryRun).cast();
            let outcome = self.execute(ctx, None);
            ctx.geometry = std::ptr::null_mut();
            let state = run.state;
            state.banks[state.bank] = ctx.bank;
            state.banks[state.bank ^ 1] = run.other_bank;
            state.registers.temp = ctx.temp;
            state.registers.flow = Self::flow_registers(ctx);
            state.invoked = true;
            outcome
        })
    }
}

thread_local! {
    /// The context the compiled code runs in on this thread, reused: a fresh one costs more
    /// than a short invocation.
    static CONTEXT: std::cell::Cell<Option<Box<JitContext>>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` on this thread's context (a new one when a call on this thread, from an emission
/// sink, holds it), then keeps the context for the next call. Its input, uniform and output
/// pointers are cleared on the way out: they point into the caller's values, which live only
/// through the call.
fn with_context<R>(f: impl FnOnce(&mut JitContext) -> R) -> R {
    let mut ctx = CONTEXT
        .with(|cell| cell.take())
        .unwrap_or_else(JitContext::new);
    let result = f(&mut ctx);
    ctx.input = std::ptr::null();
    ctx.uniform = std::ptr::null();
    ctx.output = std::ptr::null_mut();
    CONTEXT.with(|cell| cell.set(Some(ctx)));
    result
}

impl ShaderEngine for JitShader {
    fn name(&self) -> &'static str {
        "jit"
    }

    fn program(&self) -> &ShaderProgram {
        &self.program
    }

    fn config(&self) -> ExecConfig {
        self.config
    }

    fn run_vertex(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
    ) -> Result<VertexResult, ExecError> {
        JitShader::run_vertex(self, uniforms, inputs)
    }

    fn run_vertex_into(
        &self,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        JitShader::run_vertex_into(self, uniforms, inputs, outputs)
    }

    fn run_filled_into(
        &self,
        uniforms: &Uniforms,
        fill: &mut dyn FnMut(&mut InputRegisters),
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        JitShader::run_filled_into(self, uniforms, fill, outputs)
    }

    unsafe fn run_partial_knowing_into(
        &self,
        uniforms: &Uniforms,
        comfortable: u128,
        set: shader::exec::RegisterSet,
        inputs: &[std::mem::MaybeUninit<Vec4>; 16],
        outputs: &mut [Vec4; 16],
    ) -> Result<FlowRegisters, ExecError> {
        // The code reads, through the pointer, only input registers the program reads, all of
        // them in `set` and so initialized (this function's contract).
        let _ = set;
        let inputs: *const InputRegisters = inputs.as_ptr().cast();
        with_context(|ctx| self.run_in_context(ctx, uniforms, inputs, outputs, Some(comfortable)))
    }

    fn run_geometry(
        &self,
        state: &mut GeometryState,
        uniforms: &Uniforms,
        inputs: &InputRegisters,
        sink: &mut dyn EmitSink,
    ) -> Result<(), ExecError> {
        JitShader::run_geometry(self, state, uniforms, inputs, sink)
    }

    fn run_vertices(
        &self,
        uniforms: &Uniforms,
        inputs: &[InputRegisters],
        results: &mut Vec<Result<VertexResult, ExecError>>,
    ) {
        with_context(|ctx| {
            Self::set_uniforms(ctx, uniforms, uniforms.bools);
            results.extend(inputs.iter().map(|v| self.run_vertex_in(ctx, v)));
        })
    }

    /// One context for the whole batch: the uniforms are set once, and each vertex only points
    /// at its inputs and zeroes its registers.
    fn run_batch(
        &self,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        errors: &mut Vec<(usize, ExecError)>,
    ) {
        with_context(|ctx| {
            Self::set_uniforms(ctx, uniforms, uniforms.bools);
            io.run_per_vertex(errors, |inputs| self.run_vertex_in(ctx, inputs));
        })
    }
}

impl fmt::Debug for JitShader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JitShader")
            .field("entry", &self.program.entry)
            .field("config", &self.config)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::FastDebt;

    /// Runs `invocations` through `debt`, flagging those `flags` says (by the count of fast
    /// runs so far), and returns how many ran the fast form.
    fn fast_runs(debt: &FastDebt, invocations: usize, flags: impl Fn(usize) -> bool) -> usize {
        let mut fast = 0;
        for _ in 0..invocations {
            if debt.fast_first() {
                fast += 1;
                if flags(fast) {
                    debt.note_flagged();
                } else {
                    debt.note_passed();
                }
            }
        }
        fast
    }

    #[test]
    fn the_fast_form_runs_always_where_flags_are_rare_and_seldom_where_they_are_not() {
        // One flag in six (a fixture with one edge-value vertex in six), and two close
        // together in sixteen: below the rate the debt stands still at, every invocation runs
        // the fast form.
        let rare = FastDebt::default();
        assert_eq!(fast_runs(&rare, 6000, |n| n % 6 == 0), 6000);
        let pair = FastDebt::default();
        assert_eq!(fast_runs(&pair, 1600, |n| n % 16 == 3 || n % 16 == 5), 1600);

        // Every invocation flags: once in FLAG_DEBT + 1 after the first two.
        let always = FastDebt::default();
        let period = (FastDebt::FLAG_DEBT + 1) as usize;
        let runs = fast_runs(&always, 2 + 100 * period, |_| true);
        assert_eq!(runs, 2 + 100);

        // One in four flags (above that rate): fewer than half run the fast form.
        let often = FastDebt::default();
        let runs = fast_runs(&often, 4000, |n| n % 4 == 0);
        assert!(runs < 4000 / 2, "{runs} of 4000 ran the fast form");

        // When the flags stop, the fast form is back within FLAG_DEBT + 1 invocations and
        // stays.
        let back = fast_runs(&always, period, |_| false);
        assert!(back >= 1);
        assert_eq!(fast_runs(&always, 1000, |_| false), 1000);
    }
}
