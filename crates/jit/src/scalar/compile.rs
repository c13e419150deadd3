//! Compiling a program: the analyses, then one Cranelift function for a program of at most
//! 512 reachable words, else one per chunk of 512 entered through a jump table and left by tail
//! calls (docs/library.md, "Compile cost"), finalized into one module per program.

use cranelift_codegen::ir::{AbiParam, InstBuilder, Signature, types};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};

use super::analysis::FlowFacts;
use super::context::JitContext;
use super::*;
use crate::{DUMP_VARIABLE, JitError, c_call_conv, host_isa};
use shader::isa::{
    BinaryOp, CondFlowOp, Instruction, OperandDescriptor, PROGRAM_WORDS, RegisterFile, RelIndex,
    SimpleOp, UnaryOp, decode_words,
};

/// The Rust type of the compiled function. It is `extern "C"`, and [`shader_signature`] and
/// [`lower::host_signatures`] declare every function with [`c_call_conv`], the host's C calling
/// convention, so the declaration and the call agree by construction.
pub(super) type CompiledFn = unsafe extern "C" fn(*mut JitContext) -> u32;

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
}
