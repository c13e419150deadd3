//! The structure-of-arrays JIT tier: the fastest exact way to run a vertex shader over many
//! vertices (docs/architecture.md, "The structure-of-arrays tier").
//!
//! [`SoaJit::compile`] specialises a program on its bool and int uniforms
//! ([`SoaJit::compile_specialised`] also on the float uniform components that are zero or +1.0,
//! [`ConstantLanes`]: the products they make vanish are not emitted). With those fixed,
//! every control-flow decision except the ones that read the condition flags is known, so the
//! compiler runs the flow model ([`shader::flow::FlowDriver`]) at compile time and emits
//! straight-line code for the executed instruction sequence: uniform loops are unrolled and aL
//! is a constant. At a flow instruction that tests cmp (IFC, CALLC, JMPC, BREAKC) the code checks
//! whether the four vertices of a group agree; if they do it branches to the code of that
//! outcome (compiled once per complete flow state, so a cmp-dependent loop becomes a real loop),
//! and if they do not the group runs a masked region: every flow state up to where the vertices
//! meet again, each under the mask of the vertices that are in it.
//!
//! Each register component of a group of four vertices is one f32x4 value; the arithmetic is
//! the rules of [`shader::float24::lanes`] with a fast finish that flags the groups it cannot
//! vouch for ([`SoaArithmetic`]); a flagged group runs again in place on the kernel compiled
//! with the next, more exact, finish. What runs out of its budget, or diverges past the code
//! share of masked regions, is declined and rerun by the caller on an exact engine
//! ([`GroupKernel`]). One compiled function loops over the groups of a batch.

mod constants;
mod emit;

use std::fmt;

use cranelift_codegen::ir::{AbiParam, Signature, types};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};

use super::{JitError, c_call_conv, code_generator, verify_ir};
pub use constants::{ConstantLanes, UniformComponents};
use shader::exec::{BatchIo, BatchLayout, ExecConfig, GroupKernel, RecordIo};
use shader::float24::{Precision, lanes};
use shader::isa::{Instruction, decode_words};
use shader::program::{
    FLOAT_UNIFORMS, FlowRegisters, InputRegisters, ShaderProgram, UNIFORM_INDEX_SLOTS, Uniforms,
    Vec4,
};

/// Vertices per group: one f32x4 holds a register component of four vertices.
pub const GROUP: usize = 4;

/// The most instructions the compiler traces for one program.
pub const MAX_TRACED: usize = 32768;

/// Why the tier cannot compile a program. The caller then runs it on another engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SoaCompileError {
    /// The code generator failed (an environment problem, as for the scalar JIT).
    Jit(JitError),
    /// Tracing the program's executed instruction sequences (loops unrolled, both outcomes of
    /// every cmp-dependent branch) passes the limit.
    TooLarge {
        /// The limit on traced instructions for this program.
        limit: usize,
    },
}

impl fmt::Display for SoaCompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SoaCompileError::Jit(e) => write!(f, "{e}"),
            SoaCompileError::TooLarge { limit } => write!(
                f,
                "the program's unrolled control flow is longer than {limit} instructions"
            ),
        }
    }
}

impl std::error::Error for SoaCompileError {}

impl From<JitError> for SoaCompileError {
    fn from(e: JitError) -> Self {
        SoaCompileError::Jit(e)
    }
}

/// The size of what [`SoaJit::compile`] emitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SoaCompileStats {
    /// Instructions traced (executed at compile time, over all outcomes).
    pub traced_instructions: usize,
    /// Cranelift IR instructions, as lowered (before optimisation).
    pub ir_instructions: usize,
    /// Cranelift IR blocks, as lowered.
    pub ir_blocks: usize,
    /// Bytes of machine code.
    pub code_bytes: usize,
    /// Program addresses control can reach.
    pub reachable_words: usize,
}

/// Code-generator settings of the tier (the defaults are the measured best; see
/// docs/architecture.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoaCodegen {
    /// Cranelift `opt_level`: `"speed"` or `"none"`.
    pub opt_level: &'static str,
    /// Cranelift `regalloc_algorithm`: `"backtracking"` or `"single_pass"`.
    pub regalloc: &'static str,
    /// How arithmetic results are finished.
    pub arithmetic: SoaArithmetic,
}

/// How a kernel finishes its arithmetic (docs/batches.md). The fast forms flag the groups whose
/// results they cannot vouch for; those groups run again, in place, on the next form
/// ([`SoaArithmetic::more_exact`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoaArithmetic {
    /// The exact rules everywhere ([`shader::float24::lanes::Exactly`]): a kernel that declines
    /// only what its control flow declines, for rerunning the groups a fast kernel flagged.
    Exact,
    /// Exact infinities and range rules; only NaN results flagged
    /// ([`shader::float24::lanes::FlaggingNan`]).
    FlagNaNs,
    /// NaN, infinite and out-of-range results flagged, the cheapest rounding
    /// ([`shader::float24::lanes::Flagging`]).
    FlagUnusual,
}

impl SoaArithmetic {
    /// The form that reruns what this one flags: FlagUnusual → FlagNaNs → Exact.
    pub fn more_exact(self) -> Option<SoaArithmetic> {
        match self {
            SoaArithmetic::FlagUnusual => Some(SoaArithmetic::FlagNaNs),
            SoaArithmetic::FlagNaNs => Some(SoaArithmetic::Exact),
            SoaArithmetic::Exact => None,
        }
    }
}

impl Default for SoaCodegen {
    fn default() -> Self {
        // Measured on the corpus (docs/batches.md): Cranelift's optimiser costs 2-3.5x the
        // compile time and the code it gives runs no faster here (terrain-noise-512: 303 ms
        // and 891 ns/vertex with it, 86 ms and 583 ns without); the single-pass register
        // allocator halves the compile again but runs 1.4-1.8x slower.
        SoaCodegen {
            opt_level: "none",
            regalloc: "backtracking",
            arithmetic: SoaArithmetic::FlagUnusual,
        }
    }
}

/// What the compiled function reads: the batch's planes and the uniform table.
#[repr(C)]
struct SoaArgs {
    /// Input plane 0 (plane `k` at `k * in_stride` bytes).
    inputs: *const f32,
    in_stride: i64,
    /// Output plane 0.
    outputs: *mut f32,
    out_stride: i64,
    /// Groups of four vertices.
    groups: i64,
    /// One byte per group: bit `l` set when vertex `l` of the group is declined.
    declined: *mut u8,
    /// [`UniformTable`].
    uniforms: *const f32,
    /// Flow planes a0.x, a0.y, aL, cmp.x, cmp.y (i32, `flow_stride` bytes apart).
    flow: *mut i32,
    flow_stride: i64,
    /// Bytes between the flow entries of consecutive groups (16, or 0 to overwrite one).
    flow_step: i64,
    /// Bytes between the inputs (and outputs) of consecutive groups: 16 in planes, four
    /// records in vertex records.
    group_step: i64,
    /// 0: `inputs` and `outputs` are planes; 1: they are vertex records
    /// ([`shader::exec::RecordIo`]: [`RECORD_BYTES`] a vertex, register `n` at `16 * n`).
    records: i64,
}

/// The bytes of one vertex record: sixteen registers of four f32.
pub(crate) const RECORD_BYTES: usize = size_of::<InputRegisters>();

/// The uniforms as the compiled code reads them: c0-c95 and 32 entries of ones (docs/
/// execution-model.md §4) in three copies: raw, with the input flush applied, and negated then
/// flushed.
struct UniformTable([[[f32; 4]; UNIFORM_INDEX_SLOTS]; 3]);

/// The table copies.
const RAW: usize = 0;
const FLUSHED: usize = 1;
const NEGATED_FLUSHED: usize = 2;

impl UniformTable {
    fn new(uniforms: &Uniforms, precision: Precision) -> Box<UniformTable> {
        let mut raw = [[1.0f32; 4]; UNIFORM_INDEX_SLOTS];
        raw[..96].copy_from_slice(&uniforms.float);
        let flushed = raw.map(|v| lanes::flush(&mut lanes::Exact, v, precision));
        let negated = raw.map(|v| {
            let negative = v.map(|x| f32::from_bits(x.to_bits() ^ lanes::SIGN_BIT));
            lanes::flush(&mut lanes::Exact, negative, precision)
        });
        let mut table = Box::new(UniformTable([[[0.0; 4]; UNIFORM_INDEX_SLOTS]; 3]));
        table.0[RAW] = raw;
        table.0[FLUSHED] = flushed;
        table.0[NEGATED_FLUSHED] = negated;
        table
    }
}

type SoaFn = unsafe extern "C" fn(*const SoaArgs) -> u32;

/// A vertex shader compiled for groups of four vertices, specialised on its bool and int
/// uniforms.
pub struct SoaJit {
    program: ShaderProgram,
    config: ExecConfig,
    bools: u16,
    ints: [[u8; 4]; 4],
    constants: ConstantLanes,
    layout: BatchLayout,
    stats: SoaCompileStats,
    codegen: SoaCodegen,
    function: SoaFn,
    module: Option<JITModule>,
    /// The kernel of the next, more exact, arithmetic ([`SoaArithmetic::more_exact`]) that
    /// reruns the groups this one flags, compiled the first time a batch has one (`None`
    /// inside: it could not be compiled).
    fallback: std::sync::OnceLock<Option<Box<SoaJit>>>,
    /// How batches run ([`RUN_HERE`], [`SORT_UNUSUAL`], [`RUN_FALLBACK`]): a batch that flags
    /// many groups moves it on, for good.
    policy: std::sync::atomic::AtomicU8,
    /// The uniform table of the last batch, with the float uniforms it was made from: the
    /// batches of a draw share their uniforms, and making the table costs more than a small
    /// batch's vertices (docs/batches.md, "Small batches").
    last_table: std::sync::Mutex<Option<KeptTable>>,
}

/// A uniform table and the float uniforms it was made from.
type KeptTable = (Box<[Vec4; FLOAT_UNIFORMS]>, std::sync::Arc<UniformTable>);

/// Batch policy: every group runs here first; the groups it flags run again on the more exact
/// kernels.
const RUN_HERE: u8 = 0;
/// Batch policy, after a batch flagged many groups, where [`SoaJit::sorting_pays`]: vertices
/// with an unusual input ([`lanes::is_unusual_input`]) run apart on the exact kernel, the others here
/// in groups of their own, so that one infinity no longer sends its three neighbours through
/// the exact rounding.
const SORT_UNUSUAL: u8 = 1;
/// What a copied plane (one float of a vertex gathered, or put back) costs, in IR instructions
/// of a vertex's share of a kernel: [`SoaJit::sorting_pays`].
const IR_PER_COPIED_PLANE: usize = 4;
/// Batch policy, after a batch flagged many groups where sorting does not pay, or the vertices
/// with ordinary inputs flagged many groups too (lighting code whose LG2 of 0 meets a zero):
/// every batch runs on the more exact kernel directly, since running this one first would only
/// add work.
const RUN_FALLBACK: u8 = 2;

// SAFETY: as `JitShader`: the module is only used again to free it, and the compiled function
// touches only the memory its arguments point to.
unsafe impl Send for SoaJit {}
// SAFETY: see above.
unsafe impl Sync for SoaJit {}

impl Drop for SoaJit {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: `function` is only called through `&self`.
            unsafe { module.free_memory() };
        }
    }
}

impl fmt::Debug for SoaJit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SoaJit")
            .field("entry", &self.program.entry)
            .field("config", &self.config)
            .field("bools", &self.bools)
            .field("ints", &self.ints)
            .field("constants", &self.constants.count())
            .field("stats", &self.stats)
            .finish()
    }
}

fn soa_isa(codegen: SoaCodegen) -> Result<OwnedTargetIsa, JitError> {
    let mut flags = settings::builder();
    flags
        .set("opt_level", codegen.opt_level)
        .map_err(|e| code_generator("opt_level", e))?;
    flags
        .set("regalloc_algorithm", codegen.regalloc)
        .map_err(|e| code_generator("regalloc_algorithm", e))?;
    flags
        .set(
            "enable_verifier",
            if verify_ir() { "true" } else { "false" },
        )
        .map_err(|e| code_generator("enable_verifier", e))?;
    let isa_builder = cranelift_native::builder().map_err(|e| JitError::HostDetection {
        detail: e.to_string(),
    })?;
    isa_builder
        .finish(settings::Flags::new(flags))
        .map_err(|e| code_generator("the target ISA", e))
}

impl SoaJit {
    /// Compiles `program` for batches run with bool uniforms `bools` and int uniforms `ints`
    /// (and any float uniforms).
    pub fn compile(
        program: &ShaderProgram,
        config: ExecConfig,
        bools: u16,
        ints: [[u8; 4]; 4],
    ) -> Result<SoaJit, SoaCompileError> {
        Self::compile_specialised(program, config, bools, ints, ConstantLanes::NONE)
    }

    /// [`compile`](Self::compile), specialised also on the float uniform components `constants`
    /// says are zero or +1.0 (docs/batches.md, "Constant lanes"): the kernel then runs only
    /// batches whose uniforms have those values there ([`ConstantLanes::hold_for`]).
    pub fn compile_specialised(
        program: &ShaderProgram,
        config: ExecConfig,
        bools: u16,
        ints: [[u8; 4]; 4],
        constants: ConstantLanes,
    ) -> Result<SoaJit, SoaCompileError> {
        Self::compile_with(
            program,
            config,
            bools,
            ints,
            constants,
            SoaCodegen::default(),
        )
    }

    /// [`compile_specialised`](Self::compile_specialised) with explicit code-generator
    /// settings.
    pub fn compile_with(
        program: &ShaderProgram,
        config: ExecConfig,
        bools: u16,
        ints: [[u8; 4]; 4],
        constants: ConstantLanes,
        codegen: SoaCodegen,
    ) -> Result<SoaJit, SoaCompileError> {
        let decoded: Vec<Instruction> = decode_words(&program.code[..]);
        let layout = BatchLayout::of(program);
        let reachable = shader::flow::explore::reachable_addresses(&decoded, program.entry)
            .iter()
            .filter(|&&r| r)
            .count();
        let limit = (16 * reachable).clamp(2048, MAX_TRACED);

        let isa = soa_isa(codegen)?;
        let pointer = isa.pointer_type();
        let jit_builder = JITBuilder::with_isa(isa, default_libcall_names());
        let mut module = JITModule::new(jit_builder);
        let declaration = |function: &'static str| {
            move |e: cranelift_module::ModuleError| JitError::Declaration {
                function,
                detail: e.to_string(),
            }
        };
        let mut signature = Signature::new(c_call_conv());
        signature.params.push(AbiParam::new(pointer));
        signature.returns.push(AbiParam::new(types::I32));
        let id = module
            .declare_function("soa_shader", Linkage::Local, &signature)
            .map_err(declaration("soa_shader"))?;

        let mut ctx = module.make_context();
        ctx.func.signature = signature;
        let mut builder_context = FunctionBuilderContext::new();
        let traced = emit::lower(
            &mut ctx.func,
            &mut builder_context,
            emit::Setup {
                program,
                decoded: &decoded,
                config,
                bools,
                ints,
                constant_lanes: &constants,
                layout,
                limit,
                pointer,
                frontend: module.target_config(),
                arithmetic: codegen.arithmetic,
            },
        )?;
        let mut stats = SoaCompileStats {
            traced_instructions: traced,
            reachable_words: reachable,
            ir_blocks: ctx.func.layout.blocks().count(),
            ..SoaCompileStats::default()
        };
        stats.ir_instructions = ctx
            .func
            .layout
            .blocks()
            .map(|block| ctx.func.layout.block_insts(block).count())
            .sum();
        // A developer's view of what a kernel became: its IR and machine code on stderr.
        let dump = std::env::var_os(DUMP_VARIABLE).is_some();
        if dump {
            ctx.set_disasm(true);
            eprintln!("{}", ctx.func.display());
        }
        module
            .define_function(id, &mut ctx)
            .map_err(|e| JitError::CodeGeneration {
                detail: format!("{e:?}"),
            })?;
        if dump && let Some(text) = ctx.compiled_code().and_then(|c| c.vcode.clone()) {
            eprintln!("{text}");
        }
        stats.code_bytes = ctx
            .compiled_code()
            .map_or(0, |code| code.code_info().total_size as usize);
        module.clear_context(&mut ctx);
        module
            .finalize_definitions()
            .map_err(|e| JitError::Finalization {
                detail: e.to_string(),
            })?;
        let code = module.get_finalized_function(id);
        // SAFETY: the function was defined with `signature`: one pointer in, an i32 out, the
        // host's C calling convention, which is `SoaFn`.
        let function = unsafe { std::mem::transmute::<*const u8, SoaFn>(code) };
        Ok(SoaJit {
            program: program.clone(),
            config,
            bools,
            ints,
            constants,
            layout,
            stats,
            codegen,
            function,
            module: Some(module),
            fallback: std::sync::OnceLock::new(),
            policy: std::sync::atomic::AtomicU8::new(RUN_HERE),
            last_table: std::sync::Mutex::new(None),
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

    /// The bool and int uniforms it is specialised on.
    pub fn specialisation(&self) -> (u16, [[u8; 4]; 4]) {
        (self.bools, self.ints)
    }

    /// The float uniform components it is specialised on.
    pub fn constant_lanes(&self) -> ConstantLanes {
        self.constants
    }

    /// The registers its batches carry.
    pub fn layout(&self) -> BatchLayout {
        self.layout
    }

    /// The size of what was emitted.
    pub fn compile_stats(&self) -> SoaCompileStats {
        self.stats
    }

    /// The arithmetic batches run with now: this kernel's, or a more exact form's once batches
    /// flagged too many groups here (see [`SoaArithmetic`]).
    pub fn arithmetic_in_use(&self) -> SoaArithmetic {
        if self.policy.load(std::sync::atomic::Ordering::Relaxed) == RUN_FALLBACK
            && let Some(fallback) = self.fallback.get().and_then(|f| f.as_deref())
        {
            return fallback.arithmetic_in_use();
        }
        self.codegen.arithmetic
    }

    /// Whether batches run their vertices with unusual inputs (NaN, infinite, beyond the float24
    /// range) apart on the more exact kernel, as they do once a batch flagged many groups.
    pub fn sorts_unusual_vertices(&self) -> bool {
        self.policy.load(std::sync::atomic::Ordering::Relaxed) == SORT_UNUSUAL
    }

    /// Whether batches now sort their vertices with unusual inputs apart, here or on the more
    /// exact form they run on ([`sorts_unusual_vertices`](Self::sorts_unusual_vertices) of
    /// the kernel in use): such batches run on planes, never as vertex records.
    pub fn sorting_in_use(&self) -> bool {
        match self.policy.load(std::sync::atomic::Ordering::Relaxed) {
            SORT_UNUSUAL => true,
            RUN_FALLBACK => self
                .fallback
                .get()
                .and_then(|f| f.as_deref())
                .is_some_and(SoaJit::sorting_in_use),
            _ => false,
        }
    }

    /// Moves the batch policy from `from` to `to`, unless another thread moved it first.
    fn move_policy(&self, from: u8, to: u8) {
        let _ = self.policy.compare_exchange(
            from,
            to,
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Moves the batch policy from [`SORT_UNUSUAL`] to [`RUN_FALLBACK`].
    fn stop_sorting(&self) {
        self.move_policy(SORT_UNUSUAL, RUN_FALLBACK);
    }

    /// The last kernel of the fallback chain (the exact one, unless a form could not be
    /// compiled).
    fn exact_kernel(&self) -> &SoaJit {
        let mut kernel = self;
        while let Some(next) = kernel.fallback_kernel() {
            kernel = next;
        }
        kernel
    }

    /// Whether running the vertices with unusual inputs (NaN, infinite, beyond the float24
    /// range) apart on the exact kernel, once a batch flagged many groups, is expected to beat
    /// running every vertex on the more exact forms, by the sizes of the code: an ordinary
    /// vertex saves the exact kernel's extra instructions and costs the copies of its input and
    /// output planes (gathered and put back). Measured on the corpus fixtures (docs/batches.md,
    /// "Unusual vertices"): a copied plane costs about as much as 4 IR instructions of a
    /// vertex's share of a kernel. Compiles the more exact forms if they are not yet.
    pub fn sorting_pays(&self) -> bool {
        let exact = self.exact_kernel();
        if std::ptr::eq(exact, self) {
            return false;
        }
        let saved = exact
            .stats
            .ir_instructions
            .saturating_sub(self.stats.ir_instructions)
            / GROUP;
        let planes = self.layout.inputs.planes() + self.layout.outputs.planes();
        saved >= IR_PER_COPIED_PLANE * planes
    }

    /// Runs the compiled function over `groups` groups from group `first`. `declined` gets
    /// one byte per group.
    fn call(
        &self,
        planes: Planes<'_>,
        first: usize,
        groups: usize,
        declined: &mut [u8],
        flow: &mut FlowPlanes,
    ) {
        debug_assert!(declined.len() >= groups);
        let start = first * GROUP;
        let flow_start = if flow.stride == 0 { 0 } else { start };
        // Floats before group `first`'s first input and output, and bytes between groups.
        let (skip, group_step) = if planes.records {
            (start * RECORD_BYTES / 4, GROUP * RECORD_BYTES)
        } else {
            (start, 4 * GROUP)
        };
        let args = SoaArgs {
            // Group `first` lies inside the planes or records, as the caller's
            // group count says.
            inputs: planes.inputs.wrapping_add(skip),
            in_stride: (4 * planes.in_stride) as i64,
            outputs: planes.outputs.wrapping_add(skip),
            out_stride: (4 * planes.out_stride) as i64,
            group_step: group_step as i64,
            records: i64::from(planes.records),
            groups: groups as i64,
            declined: declined.as_mut_ptr(),
            uniforms: planes.table.0.as_ptr().cast(),
            flow: flow.base().wrapping_add(flow_start),
            flow_stride: (4 * flow.stride) as i64,
            flow_step: if flow.stride == 0 { 0 } else { 16 },
        };
        // SAFETY: the compiled code reads input planes 0..4*|inputs| of `groups * 4` vertices
        // and writes as many output and flow entries and `groups` declined bytes, all inside
        // the buffers the caller passes (checked by `run`); the uniform table has every slot a
        // masked index names.
        unsafe { (self.function)(&args) };
    }

    /// Runs groups `0..groups`, then each flagged one again, in place, on the more exact
    /// kernels in turn until one does not flag it (the exact one flags nothing). Returns how
    /// many groups this kernel flagged; declined groups stay declined.
    fn run_groups(
        &self,
        planes: Planes<'_>,
        groups: usize,
        bytes: &mut [u8],
        flow: &mut FlowPlanes,
    ) -> usize {
        self.call(planes, 0, groups, bytes, flow);
        let mut flagged = 0;
        let is_flagged = |byte: u8| byte != 0 && byte != DECLINED_GROUP;
        for g in 0..groups {
            let mut kernel = self;
            flagged += usize::from(is_flagged(bytes[g]));
            while is_flagged(bytes[g])
                && let Some(next) = kernel.fallback_kernel()
            {
                next.call(planes, g, 1, &mut bytes[g..g + 1], flow);
                kernel = next;
            }
        }
        flagged
    }
}

/// Where a call's groups live: the input and output planes (strides in elements) or vertex
/// records, and the uniform table.
#[derive(Clone, Copy)]
struct Planes<'t> {
    inputs: *const f32,
    in_stride: usize,
    outputs: *mut f32,
    out_stride: usize,
    /// `inputs` and `outputs` are vertex records (the strides are unused).
    records: bool,
    table: &'t UniformTable,
}

/// The final a0/aL/cmp of each vertex, as five i32 planes.
struct FlowPlanes {
    /// The planes of every vertex, when they are kept.
    data: Vec<i32>,
    /// One group's entries, overwritten by every group, when they are not (no allocation for
    /// a batch that does not want them).
    group: [i32; 5 * GROUP],
    /// Elements between planes (0: `group`).
    stride: usize,
}

impl FlowPlanes {
    fn new(vertices: Option<usize>) -> FlowPlanes {
        match vertices {
            Some(n) => FlowPlanes {
                data: vec![0; 5 * n],
                group: [0; 5 * GROUP],
                stride: n,
            },
            None => FlowPlanes {
                data: Vec::new(),
                group: [0; 5 * GROUP],
                stride: 0,
            },
        }
    }

    /// Where the compiled code writes.
    fn base(&mut self) -> *mut i32 {
        if self.stride == 0 {
            self.group.as_mut_ptr()
        } else {
            self.data.as_mut_ptr()
        }
    }

    fn get(&self, i: usize) -> FlowRegisters {
        let at = |plane: usize| self.data[plane * self.stride + i];
        FlowRegisters {
            a0: [at(0), at(1)],
            al: at(2),
            cmp: [at(3) != 0, at(4) != 0],
        }
    }
}

/// Copies `count` vertices from `start` of planes `src` (stride `src_stride`) to planes of
/// stride `dst_stride` at `dst`, repeating the last vertex up to `padded`.
#[allow(clippy::too_many_arguments)]
fn copy_planes(
    src: &[f32],
    src_stride: usize,
    start: usize,
    count: usize,
    planes: usize,
    dst: &mut [f32],
    dst_stride: usize,
    padded: usize,
) {
    for k in 0..planes {
        for i in 0..padded {
            let from = start + i.min(count - 1);
            dst[k * dst_stride + i] = src[k * src_stride + from];
        }
    }
}

/// A group's byte when its control flow declined it (the budget, a BREAK outside a loop, lanes
/// diverging past the masked regions' share of the code): every lane,
/// and a bit that says so. A byte with only lane bits has lanes flagged by the arithmetic,
/// which a more exact kernel may finish; a declined group would decline there too.
const DECLINED_GROUP: u8 = 0x1F;

/// Set (to anything) to print each compiled kernel's IR and machine code on stderr.
pub const DUMP_VARIABLE: &str = "PICAJIT_DUMP_SOA";

/// A batch in which more than one group in this many is flagged switches a kernel to its
/// fallback (more exact) form for good.
const PREFER_FALLBACK_RATIO: usize = 16;

impl SoaJit {
    /// The kernel that reruns what this one flags (compiled on first use); `None` for an exact
    /// kernel or when it cannot be compiled.
    fn fallback_kernel(&self) -> Option<&SoaJit> {
        let arithmetic = self.codegen.arithmetic.more_exact()?;
        self.fallback
            .get_or_init(|| {
                let codegen = SoaCodegen {
                    arithmetic,
                    ..self.codegen
                };
                SoaJit::compile_with(
                    &self.program,
                    self.config,
                    self.bools,
                    self.ints,
                    self.constants,
                    codegen,
                )
                .ok()
                .map(Box::new)
            })
            .as_deref()
    }
}

impl GroupKernel for SoaJit {
    fn name(&self) -> &'static str {
        "soa-jit"
    }

    fn run(&self, uniforms: &Uniforms, io: &mut BatchIo<'_>, declined: &mut Vec<usize>) {
        let policy = self.policy.load(std::sync::atomic::Ordering::Relaxed);
        if policy != RUN_HERE
            && let Some(fallback) = self.fallback_kernel()
        {
            if policy == RUN_FALLBACK {
                return fallback.run(uniforms, io, declined);
            }
            return self.run_sorted(self.exact_kernel(), uniforms, io, declined);
        }
        if self.run_here(uniforms, io, declined) {
            self.flagged_many();
        }
    }

    fn run_records(
        &self,
        uniforms: &Uniforms,
        io: &mut RecordIo<'_>,
        declined: &mut Vec<usize>,
    ) -> bool {
        if io.written != self.layout.outputs {
            return false;
        }
        let policy = self.policy.load(std::sync::atomic::Ordering::Relaxed);
        if policy != RUN_HERE
            && let Some(fallback) = self.fallback_kernel()
        {
            // Sorting the unusual vertices apart is done on planes.
            return policy == RUN_FALLBACK && fallback.run_records(uniforms, io, declined);
        }
        if self.run_records_here(uniforms, io, declined) {
            self.flagged_many();
        }
        true
    }
}

impl SoaJit {
    /// After a batch that flagged many groups: later batches sort the vertices with unusual
    /// inputs apart or run on the more exact kernel.
    fn flagged_many(&self) {
        let next = if self.sorting_pays() {
            SORT_UNUSUAL
        } else {
            RUN_FALLBACK
        };
        self.move_policy(RUN_HERE, next);
    }

    /// Whether batches with `uniforms` can run on this kernel (it is specialised on their bool
    /// and int uniforms).
    fn runs_with(&self, uniforms: &Uniforms) -> bool {
        debug_assert!(
            uniforms.bools == self.bools && uniforms.int == self.ints,
            "a SoaJit runs only with the bool and int uniforms it was compiled for"
        );
        uniforms.bools == self.bools && uniforms.int == self.ints
    }

    /// Runs the vertices of `io` with an unusual input on `exact` (the exact kernel: such a
    /// vertex would be flagged by every fast form) and the others here, each set in planes of
    /// its own ([`shader::exec::run_sorted`]).
    fn run_sorted(
        &self,
        exact: &SoaJit,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        declined: &mut Vec<usize>,
    ) {
        let unusual =
            shader::exec::unusual_vertices(&io.inputs, self.layout.inputs, self.config.precision);
        if unusual.is_empty() || io.outputs.registers() != self.layout.outputs {
            if self.run_here(uniforms, io, declined) {
                self.stop_sorting();
            }
            return;
        }
        if unusual.len() == io.count() {
            return exact.run(uniforms, io, declined);
        }
        let (inputs, outputs) = (self.layout.inputs, self.layout.outputs);
        shader::exec::run_sorted(
            io,
            inputs,
            outputs,
            &unusual,
            declined,
            |set_is_unusual, set, set_declined| {
                if set_is_unusual {
                    exact.run(uniforms, set, set_declined);
                } else if self.run_here(uniforms, set, set_declined) {
                    self.stop_sorting();
                }
            },
        );
    }

    /// The uniform table of `uniforms`: the last batch's when the float uniforms the program
    /// reads have the same bits (the others are never looked at), made anew otherwise; `None` when they lack a component this kernel takes as a
    /// known zero or one ([`ConstantLanes::hold_for`], which a table kept for the same bits
    /// has passed already).
    fn table_for(&self, uniforms: &Uniforms) -> Option<std::sync::Arc<UniformTable>> {
        let mut last = self.last_table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((floats, table)) = &*last
            && uniforms.floats_are(floats, self.layout.uniforms)
        {
            return Some(table.clone());
        }
        if !self.constants.hold_for(uniforms, self.config.precision) {
            return None;
        }
        let table = std::sync::Arc::new(*UniformTable::new(uniforms, self.config.precision));
        *last = Some((Box::new(uniforms.float), table.clone()));
        Some(table)
    }

    /// The uniform table for a batch of `count` vertices with `uniforms`, or `None` when there is
    /// nothing to run or the kernel cannot run it (then every vertex is in `declined`).
    fn batch_table(
        &self,
        uniforms: &Uniforms,
        count: usize,
        outputs: shader::exec::RegisterSet,
        declined: &mut Vec<usize>,
    ) -> Option<std::sync::Arc<UniformTable>> {
        if count == 0 {
            return None;
        }
        let table = if outputs == self.layout.outputs && self.runs_with(uniforms) {
            self.table_for(uniforms)
        } else {
            None
        };
        if table.is_none() {
            declined.extend(0..count);
        }
        table
    }

    /// Runs the whole groups of a batch of `count` vertices, in `whole` (the caller's planes or
    /// records), and a partial last group through `tail`, which lays it out in a scratch group
    /// of its own (the last vertex repeated, so that its flow agrees), runs it with its
    /// argument and copies the tail's outputs back; then every vertex's flow registers to
    /// `entries` and the declined vertices to `declined`. Returns whether it flagged many
    /// groups ([`PREFER_FALLBACK_RATIO`]).
    fn run_whole_and_tail(
        &self,
        whole: Planes<'_>,
        count: usize,
        entries: Option<&mut [FlowRegisters]>,
        declined: &mut Vec<usize>,
        tail: impl FnOnce(&mut dyn FnMut(Planes<'_>)),
    ) -> bool {
        let groups = count / GROUP;
        let wants_flow = entries.is_some();
        let mut flow = FlowPlanes::new(wants_flow.then_some(groups * GROUP + GROUP));
        // A group's declined byte each (on the stack for the small batches an emulator sends).
        let mut small = [0u8; 64];
        let mut large = Vec::new();
        let bytes: &mut [u8] = if groups < small.len() {
            &mut small[..groups + 1]
        } else {
            large.resize(groups + 1, 0u8);
            &mut large
        };
        let mut flagged_many = false;
        if groups > 0 {
            let flagged = self.run_groups(whole, groups, bytes, &mut flow);
            flagged_many = flagged * PREFER_FALLBACK_RATIO > groups;
        }
        let start = groups * GROUP;
        let mut tail_flow = FlowPlanes::new(wants_flow.then_some(GROUP));
        if start < count {
            let tail_byte = &mut bytes[groups..=groups];
            // The partial group does not count towards flagging many.
            tail(&mut |planes| {
                self.run_groups(planes, 1, tail_byte, &mut tail_flow);
            });
        }
        if let Some(entries) = entries {
            let (whole_entries, tail_entries) = entries.split_at_mut(start);
            for (i, entry) in whole_entries.iter_mut().enumerate() {
                *entry = flow.get(i);
            }
            for (i, entry) in tail_entries.iter_mut().enumerate() {
                *entry = tail_flow.get(i);
            }
        }
        for (g, &bits) in bytes.iter().enumerate() {
            if bits != 0 {
                for lane in 0..GROUP {
                    let i = g * GROUP + lane;
                    if bits & (1 << lane) != 0 && i < count {
                        declined.push(i);
                    }
                }
            }
        }
        flagged_many
    }

    /// Runs every group of `io` on this kernel (flagged ones again on the more exact kernels).
    /// Returns whether it flagged many of them ([`PREFER_FALLBACK_RATIO`]).
    fn run_here(
        &self,
        uniforms: &Uniforms,
        io: &mut BatchIo<'_>,
        declined: &mut Vec<usize>,
    ) -> bool {
        let count = io.count();
        let Some(table) = self.batch_table(uniforms, count, io.outputs.registers(), declined)
        else {
            return false;
        };
        // Inputs in the layout the code was compiled for.
        let repacked;
        let (in_data, in_stride): (&[f32], usize) = if io.inputs.registers() == self.layout.inputs {
            (io.inputs.data(), io.inputs.stride())
        } else {
            let vertices: Vec<_> = (0..count).map(|i| io.inputs.vertex(i)).collect();
            repacked = shader::exec::SoaBuffer::from_vertices(self.layout.inputs, &vertices);
            let stride = repacked.inputs().stride();
            (repacked.inputs().data(), stride)
        };
        let in_planes = self.layout.inputs.planes();
        let out_planes = self.layout.outputs.planes();
        let whole = Planes {
            inputs: in_data.as_ptr(),
            in_stride,
            outputs: io.outputs.base_ptr(),
            out_stride: io.outputs.stride(),
            records: false,
            table: &table,
        };
        let start = count / GROUP * GROUP;
        let tail = count - start;
        let (outputs, flow) = (&mut io.outputs, io.flow.as_deref_mut());
        self.run_whole_and_tail(whole, count, flow, declined, |run| {
            // A partial group in padded planes of its own, the last vertex repeated.
            let mut scratch_in = vec![0f32; in_planes.max(1) * GROUP];
            if in_planes > 0 {
                copy_planes(
                    in_data,
                    in_stride,
                    start,
                    tail,
                    in_planes,
                    &mut scratch_in,
                    GROUP,
                    GROUP,
                );
            }
            let mut scratch_out = vec![0f32; out_planes.max(1) * GROUP];
            run(Planes {
                inputs: scratch_in.as_ptr(),
                in_stride: GROUP,
                outputs: scratch_out.as_mut_ptr(),
                out_stride: GROUP,
                records: false,
                table: &table,
            });
            for k in 0..out_planes {
                let plane = outputs.plane_mut(k);
                plane[start..count].copy_from_slice(&scratch_out[k * GROUP..k * GROUP + tail]);
            }
        })
    }

    /// [`run_here`](Self::run_here) on vertex records (their outputs the layout's).
    fn run_records_here(
        &self,
        uniforms: &Uniforms,
        io: &mut RecordIo<'_>,
        declined: &mut Vec<usize>,
    ) -> bool {
        let count = io.count();
        let Some(table) = self.batch_table(uniforms, count, io.written, declined) else {
            return false;
        };
        let whole = Planes {
            inputs: io.inputs.as_ptr().cast(),
            in_stride: 0,
            outputs: io.outputs.as_mut_ptr().cast(),
            out_stride: 0,
            records: true,
            table: &table,
        };
        let start = count / GROUP * GROUP;
        let (inputs, outputs) = (io.inputs, &mut *io.outputs);
        let written = self.layout.outputs;
        self.run_whole_and_tail(whole, count, io.flow.as_deref_mut(), declined, |run| {
            // A partial group in records of its own, the last vertex repeated.
            let last = inputs[count - 1];
            let scratch_in: [InputRegisters; GROUP] =
                std::array::from_fn(|k| inputs.get(start + k).copied().unwrap_or(last));
            let mut scratch_out = [[[0f32; 4]; 16]; GROUP];
            run(Planes {
                inputs: scratch_in.as_ptr().cast(),
                in_stride: 0,
                outputs: scratch_out.as_mut_ptr().cast(),
                out_stride: 0,
                records: true,
                table: &table,
            });
            for (vertex, scratch) in outputs[start..].iter_mut().zip(&scratch_out) {
                for n in written.iter() {
                    vertex[n] = scratch[n];
                }
            }
        })
    }
}
