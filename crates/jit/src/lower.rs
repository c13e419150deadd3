//! PICA200 instructions → Cranelift IR: the data path, one lowering function per operation.
//!
//! Registers live in [`JitContext`] at the boundaries of straight-line runs and in SSA values
//! inside them: a run is a sequence of addresses entered only at its first (a *leader*: a jump
//! target, a scope end, the address after a flow instruction). The first read of a register in
//! a run loads it; later reads and writes use the [`RegisterCache`]'s values; dirty registers are
//! stored when the run ends (before a jump to a leader, before control flow, at an exit and
//! around EMIT). So values never flow between blocks through phis, liveness stays local, and
//! compile time stays linear. Inputs and uniforms are read-only loads. Each operation computes
//! with vector instructions; the float24 rounding and flushing are integer vector operations on the f32
//! bits, exactly the rules of [`shader::float24`] (the host's denormal modes are never touched).
//! The control part of each instruction is in [`super::control`].

use std::mem::offset_of;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    AbiParam, ConstantData, FuncRef, InstBuilder, MemFlagsData, Signature, Type, Value, types,
};
use cranelift_frontend::{FunctionBuilder, Variable};

use super::analysis::{DotGroup, DotProduct, FlowFacts};
use super::context::JitContext;
use super::{caller_floats, caller_outputs, compare_cc};
use shader::exec::EmitConfig;
use shader::float24::lanes::{self, Elements, Lanes};
use shader::float24::{Precision, arith::LITP_Y_LIMIT};
use shader::isa::{
    BinaryOperation, DestMask, DstReg, Instruction, Operand, OperandDescriptor, Operation,
    RegisterFile, RelIndex, SimpleOp, UnaryOp,
};
use shader::program::{FLOAT_UNIFORMS, IndexOps, ShaderKind, ShaderProgram, relative_uniform_slot};

const F32X4: Type = types::F32X4;
const I32X4: Type = types::I32X4;

/// Host functions the code calls.
pub struct HostFunctions {
    /// `picajit_emit(ctx, pc) -> u32`.
    pub emit: FuncRef,
    /// `picajit_setemit(ctx, packed)`.
    pub setemit: FuncRef,
    /// `picajit_exp2(f32) -> f32`: EX2 when the program has too many to inline.
    pub exp2: FuncRef,
    /// `picajit_log2(f32) -> f32`.
    pub log2: FuncRef,
}

/// The most reachable EX2 and LG2 words a program may have for the JIT to emit them inline
/// (about 45 IR instructions each, where a call is 4). Real shaders have a handful, and inline
/// code is what makes them fast one vertex at a time (no call, no vector registers saved
/// around it); a program of thousands would compile about three times slower than the worst
/// other shape, so past this the JIT calls the same functions instead
/// (`jit-tests/compile_bounds.rs`, docs/library.md "Compile cost").
pub const INLINE_TRANSCENDENTALS: usize = 64;

/// The most reachable words a vertex shader may have for its instructions with products to
/// be checked fast paths (`Lowering::checked`): each such instruction is emitted twice, so
/// this keeps the larger programs' compile cost where it was. Every real vertex shader fits:
/// the hardware's vertex-shader code memory holds 512 words.
pub const CHECKED_PRODUCTS_WORDS: usize = 512;

/// What a whole invocation's fast form checks.
pub const FAST_INVOCATION_CHECKS: lanes::Checks = lanes::Checks::Operands;

/// The fewest reachable instructions with checks (ADD, MUL, MAD, the dot products, DST) a
/// vertex shader needs for a whole invocation's fast form, unless it has a LOOP: below it the
/// fast form saves less than its own setting up and checking costs (a pass-through shader with
/// one transform).
pub const FAST_FORM_INSTRUCTIONS: usize = 6;

/// Names and signatures of the host functions, in [`HostFunctions`] order.
pub fn host_signatures(
    pointer: Type,
    call_conv: cranelift_codegen::isa::CallConv,
) -> [(&'static str, Signature); 4] {
    let sig = |params: &[Type], returns: &[Type]| {
        let mut s = Signature::new(call_conv);
        s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        s.returns.extend(returns.iter().map(|&t| AbiParam::new(t)));
        s
    };
    [
        ("picajit_emit", sig(&[pointer, types::I32], &[types::I32])),
        ("picajit_setemit", sig(&[pointer, types::I32], &[])),
        ("picajit_exp2", sig(&[types::F32], &[types::F32])),
        ("picajit_log2", sig(&[types::F32], &[types::F32])),
    ]
}

/// A register the code can write, as a key of the [`RegisterCache`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reg {
    /// r0-r15.
    Temp(u8),
    /// o0-o15.
    Output(u8),
    /// a0.x (0) and a0.y (1).
    A0(u8),
    /// aL.
    Al,
    /// cmp.x (0) and cmp.y (1), as 0 or 1.
    Cmp(u8),
}

impl Reg {
    /// Where the register lives in the context, and its type there. The output registers
    /// live where the context's output pointer points ([`Lowering::load_reg`] and
    /// [`Lowering::store_reg`] know it): their offset is from there.
    pub fn home(self) -> (usize, Type) {
        match self {
            Reg::Temp(n) => (offset_of!(JitContext, temp) + 16 * n as usize, F32X4),
            Reg::Output(n) => (16 * n as usize, F32X4),
            Reg::A0(n) => (offset_of!(JitContext, a0) + 4 * n as usize, types::I32),
            Reg::Al => (offset_of!(JitContext, al), types::I32),
            Reg::Cmp(n) => (offset_of!(JitContext, cmp) + 4 * n as usize, types::I32),
        }
    }
}

/// The registers of the current run held in SSA values, and whether each differs from its
/// home in the context (dirty).
#[derive(Default)]
pub struct RegisterCache {
    values: std::collections::BTreeMap<Reg, (Value, bool)>,
    /// Registers carried over from the run before (at a cut only the address before leads to,
    /// see [`FlowFacts::continues`]) that this run has not used yet: dropped if it ends so.
    carried: std::collections::BTreeSet<Reg>,
    /// The vector constants of the run (a run's data path is straight-line code, so a value
    /// made in it serves the rest of it).
    constants: std::collections::HashMap<[u32; 4], Value>,
    /// Float24 modes: the values of the run the input flush leaves unchanged (results of the
    /// flush or a rounding, canonical temporaries and their swizzles), and the flushed copy
    /// of each other value flushed so far ([`lanes::flush`] asks [`Elements::flushed_already`]).
    flushed: std::collections::HashMap<Value, Value>,
    /// Float24 modes: the lanes of each value that may hold −0 where the model holds +0
    /// (results of the fast path, [`lanes::FlaggingSignedZeros`], their moves, and what merges
    /// them), which [`Lowering::settled`] makes +0 before a use that sees a zero's sign. The
    /// model's value in such a lane is never −0 (it is a rounding's result), so settling it is
    /// exact; a lane that may hold the model's own −0 is never recorded.
    negative_zeros: std::collections::HashMap<Value, u8>,
    /// A whole-invocation fast function's operand checks in this run
    /// ([`lanes::Checks::Operands`]), merged into the context's when the run ends
    /// ([`Lowering::end_run`]).
    checked: Option<lanes::FlaggingSignedZeros<Value, Value>>,
    /// The values of the run those checks cover (checked, or within the bounds as constants).
    bounded: std::collections::HashSet<Value>,
    /// Float24 modes: the lanes of each value that may hold a *wild* value, a result of RCP,
    /// RSQ, EX2 or LG2 (bits 0-3), and those of them that may hold one of LG2 (bits 4-7)
    /// ([`FlowFacts::find_wild_temps`]; a register loaded from its home has the lanes found
    /// for it), which the fast forms do not read ([`Lowering::tame`]).
    wild: std::collections::HashMap<Value, u8>,
    /// The copies of values with their wild lanes made +0 ([`Lowering::tame`]), by value and
    /// the lanes kept.
    tamed: std::collections::HashMap<(Value, u8), Value>,
    /// The input registers loaded in this run ([`Lowering::input`]).
    inputs: std::collections::HashMap<u8, Value>,
    /// The lane moves made so far ([`Lowering::permute`]): each result's source and lanes, so
    /// that a move of a moved value is one move of its source (an RSQ of `r2.w` broadcasts lane
    /// 0 of a broadcast of lane 3: one shuffle, not two, on the chain it waits for).
    moved: std::collections::HashMap<Value, (Value, [usize; 4])>,
    /// The register values partial writes made ([`Lowering::write_lanes`]): each one's value
    /// before the write, the value written and the lanes written, so that a read of only
    /// written lanes, or only kept ones, takes them from where they came from
    /// ([`Lowering::read`]) rather than wait for the merge.
    merged: std::collections::HashMap<Value, (Value, Value, u8)>,
    /// The float uniforms loaded in this run by their number (not relative to an address
    /// register), loaded once for the same reason.
    uniforms: std::collections::HashMap<u8, Value>,
}

impl RegisterCache {
    /// Forgets the values of the run.
    fn clear(&mut self) {
        self.values.clear();
        self.carried.clear();
        self.constants.clear();
        self.flushed.clear();
        self.negative_zeros.clear();
        self.checked = None;
        self.bounded.clear();
        self.wild.clear();
        self.tamed.clear();
        self.inputs.clear();
        self.uniforms.clear();
        self.moved.clear();
        self.merged.clear();
    }

    /// Keeps the registers this run used for the next run, which only this one leads to: their
    /// homes are stored, so all are clean, but for the temporaries of `kept_dirty` (bit n:
    /// rN). A register carried into this run and not used in it is dropped, so that a value
    /// stays live across at most one run it does not serve; the dirty ones among those are
    /// returned, to be stored.
    fn carry_over(&mut self, kept_dirty: u16) -> Vec<(Reg, Value)> {
        let mut dropped = Vec::new();
        for reg in std::mem::take(&mut self.carried) {
            if let Some((value, true)) = self.values.remove(&reg) {
                dropped.push((reg, value));
            }
        }
        for (&reg, (_, dirty)) in self.values.iter_mut() {
            *dirty = matches!(reg, Reg::Temp(n) if kept_dirty & (1 << n) != 0);
            self.carried.insert(reg);
        }
        self.constants.clear();
        self.tamed.clear();
        self.inputs.clear();
        self.uniforms.clear();
        dropped
    }
}

/// How an instruction with products is lowered ([`Lowering::tame`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// Its fast form: in a whole invocation's fast form alone, checking operands; otherwise
    /// checking results, with the exact form in a cold block.
    Fast,
    /// Checking results, with the exact form in a cold block, wherever it is.
    Local,
    /// The exact form alone.
    Exact,
}

/// How an instruction treats the sign of a zero operand, for the −0s the fast path leaves
/// pending (docs/architecture.md, "Negative zeros left pending").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ZeroSign {
    /// Alike either way: the rule flushes the operand and only adds and multiplies it (a −0
    /// changes only the sign of a zero result), or compares it (−0 = +0).
    Ignored,
    /// Passed on to the result (MOV): a −0 left pending stays pending there (the model's value
    /// is never −0 in such a lane), unless the operand is negated (the model's +0 must become
    /// −0).
    PassedOn,
    /// Seen: the operand is settled first.
    Seen,
}

/// The per-function lowering state.
pub struct Lowering<'a, 'b> {
    /// The builder.
    pub b: &'a mut FunctionBuilder<'b>,
    /// The context pointer.
    pub ctx: Value,
    /// The context's input pointer, loaded at the function's entry.
    pub inputs: Value,
    /// The context's uniform pointer, loaded at the function's entry.
    pub uniforms: Value,
    /// The context's output pointer (o0-o15), loaded at the function's entry.
    pub outputs: Value,
    /// The program.
    pub program: &'a ShaderProgram,
    /// Decoded program memory.
    pub decoded: &'a [Instruction],
    /// Rounding mode.
    pub precision: Precision,
    /// Host functions.
    pub host: HostFunctions,
    /// EX2 and LG2 as inline code (at most [`INLINE_TRANSCENDENTALS`] reachable), or calls.
    pub inline_transcendentals: bool,
    /// Instructions with products run a fast form first and their exact form only when it
    /// flagged a lane ([`Lowering::checked`]; vertex shaders of at most
    /// [`CHECKED_PRODUCTS_WORDS`] reachable words).
    pub checked_products: bool,
    /// The function is a whole invocation's fast form (docs/architecture.md, "Whole
    /// invocations on the fast path"): the instructions with products, and ADD, check their
    /// operands ([`lanes::Checks::Operands`]) instead of their results, have no exact form,
    /// and leave what they checked in the context for the caller, who runs the invocation
    /// again on the exact function where it flags an element.
    pub fast_invocation: bool,
    /// The registers of the current run.
    pub cache: RegisterCache,
    /// The temporaries the code zeroes itself (bit n: rN): a vertex shader entered only at its
    /// start ([`FlowFacts::entered_only_at_start`]) and compiled as one function begins its
    /// first run with them known +0, dirty ([`Lowering::start_invocation`]), so the caller
    /// need not zero their homes and the run reads no home it has not written.
    pub zero_temps: u16,
    /// Instructions the invocation may still execute.
    pub budget: Variable,
    /// Static control-flow facts.
    pub facts: &'a FlowFacts,
    /// One block per reachable address.
    pub blocks: Vec<Option<cranelift_codegen::ir::Block>>,
    /// The shared exit: parameters status and failing address; stores the registers back.
    pub exit: cranelift_codegen::ir::Block,
    /// The function's control state (chunk, dispatch, the run's unchecked instructions).
    pub routing: super::control::Routing,
}

/// Flags of an access to the context: it is in bounds and aligned (the context is 16-aligned
/// and every offset a multiple of the access size).
pub fn trusted() -> MemFlagsData {
    MemFlagsData::trusted()
}

impl Lowering<'_, '_> {
    // ------------------------------------------------------------------ constants and memory

    fn i32x4_const(&mut self, lanes: [u32; 4]) -> Value {
        if let Some(&v) = self.cache.constants.get(&lanes) {
            return v;
        }
        let bytes: Vec<u8> = lanes.iter().flat_map(|l| l.to_le_bytes()).collect();
        let constant = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
        let v = self.b.ins().vconst(I32X4, constant);
        self.cache.constants.insert(lanes, v);
        let within_bounds = lanes.iter().all(|&bits| {
            let magnitude = bits & lanes::MAGNITUDE_BITS;
            magnitude <= lanes::OPERAND_GREATEST_BITS
        });
        if within_bounds && self.fast_invocation {
            self.cache.bounded.insert(v);
        }
        v
    }

    fn f32x4_const(&mut self, lanes: [f32; 4]) -> Value {
        let bits = self.i32x4_const(lanes.map(f32::to_bits));
        let v = self.as_float(bits);
        if self.cache.bounded.contains(&bits) {
            self.cache.bounded.insert(v);
        }
        v
    }

    fn as_int(&mut self, v: Value) -> Value {
        self.b.ins().bitcast(I32X4, MemFlagsData::new(), v)
    }

    fn as_float(&mut self, v: Value) -> Value {
        self.b.ins().bitcast(F32X4, MemFlagsData::new(), v)
    }

    /// Loads a value of type `ty` at `offset` in the context.
    pub fn load(&mut self, ty: Type, offset: usize) -> Value {
        self.b.ins().load(ty, trusted(), self.ctx, offset as i32)
    }

    /// Stores `value` at `offset` in the context.
    pub fn store(&mut self, value: Value, offset: usize) {
        self.b
            .ins()
            .store(trusted(), value, self.ctx, offset as i32);
    }

    /// Loads `reg` from its home.
    pub fn load_reg(&mut self, reg: Reg) -> Value {
        let (offset, ty) = reg.home();
        match reg {
            Reg::Output(_) => {
                let outputs = self.outputs;
                self.b
                    .ins()
                    .load(ty, caller_outputs(), outputs, offset as i32)
            }
            _ => self.load(ty, offset),
        }
    }

    /// Stores `value` to the home of `reg`, settled: a home holds the model's bits.
    pub fn store_reg(&mut self, reg: Reg, value: Value) {
        let value = self.settled(value);
        let offset = reg.home().0;
        match reg {
            Reg::Output(_) => {
                let outputs = self.outputs;
                self.b
                    .ins()
                    .store(caller_outputs(), value, outputs, offset as i32);
            }
            _ => self.store(value, offset),
        }
    }

    // ------------------------------------------------------------------ register cache

    /// The value of `reg` in this run (loaded on first use).
    pub fn get(&mut self, reg: Reg) -> Value {
        if let Some(&(value, _)) = self.cache.values.get(&reg) {
            self.cache.carried.remove(&reg);
            return value;
        }
        let value = self.load_reg(reg);
        self.cache.values.insert(reg, (value, false));
        if let Reg::Temp(n) = reg {
            let n = n as usize;
            let wild = self.facts.wild_temps[n] | self.facts.logarithm_temps[n] << 4;
            self.note_wild(value, wild);
        }
        value
    }

    /// Gives `reg` a new value (stored when the run ends).
    pub fn set(&mut self, reg: Reg, value: Value) {
        self.cache.carried.remove(&reg);
        self.cache.values.insert(reg, (value, true));
    }

    /// Starts an invocation's first run with the temporaries of [`Lowering::zero_temps`] +0,
    /// dirty: the run's end stores those it leaves, as any register it writes (but at a vertex
    /// shader's END, [`Lowering::forget_temporaries`]), so later runs find them in their homes.
    pub fn start_invocation(&mut self) {
        for n in shader::exec::RegisterSet(self.zero_temps).iter() {
            let zero = self.f32x4_const([0.0; 4]);
            self.note_flushed(zero);
            self.set(Reg::Temp(n as u8), zero);
        }
    }

    /// Forgets the temporaries of the run without storing them: at END, in a vertex shader,
    /// whose temporaries nothing reads after the invocation.
    pub fn forget_temporaries(&mut self) {
        self.cache
            .values
            .retain(|reg, _| !matches!(reg, Reg::Temp(_)));
    }

    /// The registers whose values differ from their homes, with those values.
    pub fn dirty_registers(&self) -> Vec<(Reg, Value)> {
        self.cache
            .values
            .iter()
            .filter(|(_, (_, dirty))| *dirty)
            .map(|(&reg, &(value, _))| (reg, value))
            .collect()
    }

    /// Stores the dirty registers to their homes, leaving the cache as it is (for a side exit:
    /// the run goes on in the other branch).
    pub fn store_dirty(&mut self) {
        let dirty: Vec<_> = self
            .cache
            .values
            .iter()
            .filter(|(_, (_, dirty))| *dirty)
            .map(|(&reg, &(value, _))| (reg, value))
            .collect();
        for (reg, value) in dirty {
            self.store_reg(reg, value);
        }
    }

    /// Whether no register is cached (between runs not carried over).
    pub fn cache_is_empty(&self) -> bool {
        self.cache.values.is_empty()
    }

    /// Whether `v` is a value of the run the input flush leaves unchanged (float24 modes; see
    /// [`RegisterCache`]'s `flushed`), up to the sign of a zero in the lanes
    /// [`Lowering::negative_zero_lanes`] gives.
    fn is_flushed(&self, v: Value) -> bool {
        self.cache.flushed.get(&v) == Some(&v)
    }

    /// The lanes of `v` that may hold −0 where the model holds +0 (bit `i`: lane `i`).
    fn negative_zero_lanes(&self, v: Value) -> u8 {
        self.cache.negative_zeros.get(&v).copied().unwrap_or(0)
    }

    /// Records that the lanes `lanes` of `v` may hold −0 where the model holds +0.
    fn note_negative_zeros(&mut self, v: Value, lanes: u8) {
        if lanes != 0 {
            self.cache.negative_zeros.insert(v, lanes);
        }
    }

    /// The lanes of `v` that may hold a wild value (bit `i`: lane `i`), and those that may
    /// hold a logarithm (bit `4 + i`) ([`RegisterCache`]'s `wild`).
    fn wild_lanes(&self, v: Value) -> u8 {
        self.cache.wild.get(&v).copied().unwrap_or(0)
    }

    /// Records that the lanes `lanes` of `v` may hold a wild value (only where
    /// [`Lowering::tame`] looks at them).
    fn note_wild(&mut self, v: Value, lanes: u8) {
        if lanes != 0 && self.tames() {
            self.cache.wild.insert(v, lanes);
        }
    }

    /// Whether instructions with products are lowered by the forms [`Lowering::tame`] picks:
    /// a float24 mode's function with fast forms (the others lower them one way).
    fn tames(&self) -> bool {
        self.precision.is_f24() && (self.fast_invocation || self.checked_products)
    }

    /// Readies the operands of an instruction with a fast form (`operands`: each value with
    /// the lanes of it the rule reads; docs/architecture.md, "Wild lanes") and picks its form.
    /// Where the rule reads a lane that may hold a logarithm (often −inf), the exact rule
    /// alone; where it reads another wild lane (rarely infinite), a fast form that checks its
    /// results and an exact one in a cold block, as in the exact function: in neither case
    /// does an infinity there flag the whole invocation, as the operand checks would.
    /// Otherwise the lanes an operand may hold a wild value in but the rule does not read are
    /// made +0, so that the checks, which cover all four lanes, do not see them.
    fn tame(&mut self, operands: &mut [(Value, u8)]) -> Form {
        if !self.tames() {
            return Form::Fast;
        }
        let mut read_wild = 0;
        for &(v, read) in operands.iter() {
            read_wild |= self.wild_lanes(v) & (read | read << 4);
        }
        if read_wild & 0xF0 != 0 {
            return Form::Exact;
        }
        if read_wild != 0 {
            return Form::Local;
        }
        for (v, _) in operands.iter_mut() {
            let wild = self.wild_lanes(*v) & 0xF;
            if wild != 0 {
                *v = self.without_lanes(*v, wild);
            }
        }
        Form::Fast
    }

    /// The lanes of its first and second operand a binary instruction with a fast form reads
    /// (its rule's, for [`Lowering::tame`]): those it uses (`needed`,
    /// [`Operation::source_lanes`]), but all four for DST, whose product's fast form checks the
    /// lanes DST copies too; `None` for one without a fast form (ADD has one only in a whole
    /// invocation's fast form).
    fn lanes_read(&self, op: BinaryOperation, needed: [u8; 3]) -> Option<[u8; 2]> {
        match op {
            BinaryOperation::Add if self.fast_invocation => Some([needed[0], needed[1]]),
            BinaryOperation::Mul
            | BinaryOperation::Dp3
            | BinaryOperation::Dph
            | BinaryOperation::Dp4 => Some([needed[0], needed[1]]),
            BinaryOperation::Dst => Some([0xF, 0xF]),
            _ => None,
        }
    }

    /// `v` with the lanes `lanes` made +0: flushed, bounded and with −0s pending where `v` is.
    fn without_lanes(&mut self, v: Value, lanes: u8) -> Value {
        let kept = !lanes & 0xF;
        if let Some(&tamed) = self.cache.tamed.get(&(v, kept)) {
            return tamed;
        }
        let mask = std::array::from_fn(|lane| if kept & (1 << lane) != 0 { u32::MAX } else { 0 });
        let mask = self.i32x4_const(mask);
        let bits = self.as_int(v);
        let tamed = self.b.ins().band(bits, mask);
        let tamed = self.as_float(tamed);
        if self.is_flushed(v) {
            self.note_flushed(tamed);
        }
        if self.cache.bounded.contains(&v) {
            self.cache.bounded.insert(tamed);
        }
        let negative_zeros = self.negative_zero_lanes(v) & kept;
        self.note_negative_zeros(tamed, negative_zeros);
        self.cache.tamed.insert((v, kept), tamed);
        tamed
    }

    /// `v` with the model's bits: a −0 left by the fast path ([`lanes::FlaggingSignedZeros`])
    /// made +0, in the lanes that may hold one (one compare and one and-not; in the other
    /// lanes the compare is with +0, whose clearing changes nothing).
    fn settled(&mut self, v: Value) -> Value {
        let lanes = self.negative_zero_lanes(v);
        if lanes == 0 {
            return v;
        }
        let pattern = std::array::from_fn(|lane| {
            if lanes & (1 << lane) != 0 {
                lanes::SIGN_BIT
            } else {
                0
            }
        });
        let pattern = self.i32x4_const(pattern);
        let bits = self.as_int(v);
        let negative_zero = self.b.ins().icmp(IntCC::Equal, bits, pattern);
        let settled = self.b.ins().band_not(bits, negative_zero);
        let settled = self.as_float(settled);
        if self.is_flushed(v) {
            self.note_flushed(settled);
        }
        settled
    }

    /// Ends the run: stores the dirty registers and forgets every value, or, with `carry_into`
    /// (the next run is entered only from this one), keeps the values the run used
    /// ([`RegisterCache::carry_over`]), so that the next run reads them without a reload.
    ///
    /// `carry_into`: the cut the next run starts at, when it keeps this run's values. There a
    /// vertex shader's temporaries go by what the code ahead needs of them
    /// ([`FlowFacts::temps_ahead`]): one read in the next run stays dirty (stored when a
    /// later run ends without it, or never), one read only later is stored now, as every
    /// register used to be at every cut, and a dead one is forgotten unstored.
    pub fn end_run(&mut self, carry_into: Option<u16>) {
        let ahead = carry_into
            .filter(|_| self.program.stage == ShaderKind::Vertex)
            .and_then(|cut| self.facts.temps_ahead.get(&cut).copied());
        let mut kept_dirty = 0u16;
        for (reg, value) in self.dirty_registers() {
            if let (Reg::Temp(n), Some(ahead)) = (reg, ahead) {
                let bit = 1u16 << n;
                if ahead.next & bit != 0 {
                    kept_dirty |= bit;
                    continue;
                }
                if ahead.later & bit == 0 {
                    self.cache.values.remove(&reg);
                    continue;
                }
            }
            self.store_reg(reg, value);
        }
        // Merged at every run's end, carried or not: the code computes a check where it is
        // used, so a check kept for a later run would keep its value live (or spilled) until
        // then.
        self.merge_checked();
        if carry_into.is_some() {
            for (reg, value) in self.cache.carry_over(kept_dirty) {
                self.store_reg(reg, value);
            }
        } else {
            self.cache.clear();
        }
    }

    /// Merges the run's operand checks (a whole invocation's fast form) into the context's:
    /// the largest magnitude by a signed maximum, the least (offset) by a signed minimum.
    fn merge_checked(&mut self) {
        let Some(checked) = self.cache.checked.take() else {
            return;
        };
        let Some((largest, least)) = checked.accumulated(self) else {
            return;
        };
        for (value, offset, max) in [
            (largest, offset_of!(JitContext, checked_largest), true),
            (least, offset_of!(JitContext, checked_least), false),
        ] {
            let old = self.load(I32X4, offset);
            let merged = if max {
                self.b.ins().smax(old, value)
            } else {
                self.b.ins().smin(old, value)
            };
            self.store(merged, offset);
        }
    }

    /// Forgets the cached output registers after storing the dirty ones (EMIT switches the
    /// bank under them).
    fn spill_outputs(&mut self) {
        let outputs: Vec<_> = self
            .cache
            .values
            .keys()
            .copied()
            .filter(|reg| matches!(reg, Reg::Output(_)))
            .collect();
        for reg in outputs {
            let (value, dirty) = self.cache.values.remove(&reg).expect("listed above");
            if dirty {
                self.store_reg(reg, value);
            }
        }
    }

    /// `bitselect` on float vectors with an integer mask.
    fn select_vec(&mut self, mask: Value, if_true: Value, if_false: Value) -> Value {
        let t = self.as_int(if_true);
        let f = self.as_int(if_false);
        let r = self.b.ins().bitselect(mask, t, f);
        self.as_float(r)
    }

    /// A lane permutation of one vector (`lanes[i]` = source lane of result lane i).
    fn permute(&mut self, v: Value, lanes: [usize; 4]) -> Value {
        let (v, lanes) = match self.cache.moved.get(&v) {
            Some(&(source, moved)) => (source, lanes.map(|lane| moved[lane])),
            None => (v, lanes),
        };
        if lanes == [0, 1, 2, 3] {
            return v;
        }
        let mut mask = [0u8; 16];
        for (i, &lane) in lanes.iter().enumerate() {
            for byte in 0..4 {
                mask[i * 4 + byte] = (lane * 4 + byte) as u8;
            }
        }
        let r = super::wide::shuffle(self.b, v, v, mask);
        self.cache.moved.insert(r, (v, lanes));
        r
    }

    // ------------------------------------------------------------------ operands

    fn descriptor(&self, index: u8) -> OperandDescriptor {
        OperandDescriptor(self.program.opdescs[index as usize])
    }

    /// Where the components `lanes` of `raw` (bit c: component c) come from when `raw` is a
    /// partial write's result and they all come from one side of it (the value written, or the
    /// value before): that side, so that the instruction does not wait for the merge. Its other
    /// lanes are what the written instruction computed there, which only lanes the reader
    /// discards see (a whole invocation's fast form checks them too: a value past its bounds
    /// there runs the invocation again, as any flag does). Repeating a needed lane in them
    /// instead cost a shuffle where the swizzle was none (billboard, palette-skinning and
    /// point-sprite-gs 3-5% slower).
    fn unmerged(&self, raw: Value, lanes: u8) -> Option<Value> {
        if lanes == 0 {
            return None;
        }
        let mut source = raw;
        while let Some(&(old, written_value, written)) = self.cache.merged.get(&source) {
            source = if lanes & written == lanes {
                written_value
            } else if lanes & written == 0 {
                old
            } else {
                break;
            };
        }
        (source != raw).then_some(source)
    }

    /// Reads a source: register (relative addressing for uniforms), swizzle, negate, for an
    /// instruction that treats a zero's sign as `zero_sign` says. A register's −0 left pending
    /// by the fast path ([`Lowering::settled`]) is taken as it is where the sign is
    /// [`ZeroSign::Ignored`] (and in the float24 modes a negation of a flushed value then
    /// counts as flushed: its zero is −0 where the model's is +0, or the reverse) or
    /// [`ZeroSign::PassedOn`] without a negation (the swizzled value's lanes are recorded as
    /// possibly −0); otherwise it is settled first.
    ///
    /// `needed`: the lanes of the swizzled operand the instruction uses (bit `i`: lane `i`).
    /// When all of them come from one side of a partial write, the operand is read from that
    /// side ([`Lowering::unmerged`]), its other lanes then being whatever that side holds.
    fn read(
        &mut self,
        operand: Operand,
        desc: OperandDescriptor,
        zero_sign: ZeroSign,
        needed: u8,
    ) -> Value {
        let Operand { reg, rel, slot } = operand;
        let raw = match reg.file_index() {
            (RegisterFile::Input, n) => self.input(n),
            (RegisterFile::Temporary, n) => self.get(Reg::Temp(n)),
            (_, n) => {
                let uniform = self.read_uniform(n, rel);
                // A whole invocation's fast form runs only with uniforms within the operand
                // bounds (`JitShader::execute`): within them, and so unchanged by the flush
                // up to the sign of a zero.
                if self.fast_invocation {
                    self.cache.bounded.insert(uniform);
                    self.note_flushed(uniform);
                }
                uniform
            }
        };
        let swizzle = desc.swizzle(slot);
        let components: [usize; 4] = std::array::from_fn(|lane| swizzle.component(lane));
        let raw = self
            .unmerged(raw, swizzle.components_read(needed))
            .unwrap_or(raw);
        // Moving lanes and negating keep magnitudes: within the operand bounds if `raw` is.
        let bounded = self.cache.bounded.contains(&raw);
        let raw_wild = self.wild_lanes(raw);
        let negate = desc.negate(slot);
        let raw = match zero_sign {
            ZeroSign::Ignored => raw,
            ZeroSign::PassedOn if !negate => raw,
            _ => self.settled(raw),
        };
        let value = self.permute(raw, components);
        let wild = (0..8)
            .filter(|&bit| raw_wild & (1 << (bit & 4 | components[bit & 3])) != 0)
            .map(|bit| 1u8 << bit)
            .sum();
        self.note_wild(value, wild);
        if zero_sign == ZeroSign::PassedOn && !negate {
            let pending = self.negative_zero_lanes(raw);
            let swizzled = (0..4)
                .filter(|&lane| pending & (1 << components[lane]) != 0)
                .map(|lane| 1u8 << lane)
                .sum();
            self.note_negative_zeros(value, swizzled);
        }
        // A swizzle of canonical lanes is canonical.
        let canonical_lanes = match reg.file_index() {
            (RegisterFile::Temporary, n) => self.facts.canonical_temps[n as usize],
            _ => 0,
        };
        let flushed =
            components.iter().all(|&c| canonical_lanes & (1 << c) != 0) || self.is_flushed(raw);
        if bounded {
            self.cache.bounded.insert(value);
        }
        if negate {
            let negated = self.b.ins().fneg(value);
            // A negation makes −0 of +0: flushed only up to the sign of a zero.
            if zero_sign == ZeroSign::Ignored && flushed && self.precision.is_f24() {
                self.note_flushed(negated);
            }
            if bounded {
                self.cache.bounded.insert(negated);
            }
            self.note_wild(negated, wild);
            return negated;
        }
        if flushed {
            self.note_flushed(value);
        }
        value
    }

    /// Input register `n`, loaded once per run: every read of it is then one value, so that
    /// what the lowering knows of it (checked, flushed) holds for all its reads, and a
    /// dot-product group whose members share it broadcasts its lanes instead of transposing
    /// copies of it.
    fn input(&mut self, n: u8) -> Value {
        if let Some(&v) = self.cache.inputs.get(&n) {
            return v;
        }
        let inputs = self.inputs;
        let v = self
            .b
            .ins()
            .load(F32X4, caller_floats(), inputs, 16 * i32::from(n));
        self.cache.inputs.insert(n, v);
        v
    }

    /// c[n + offset]: the slot is [`relative_uniform_slot`], emitted as code; a slot past c95
    /// reads (1, 1, 1, 1), so the load reads the slot clamped to c95 and the ones are selected
    /// after it: no bounds check to get wrong.
    fn read_uniform(&mut self, n: u8, rel: RelIndex) -> Value {
        let uniforms = self.uniforms;
        let offset = match rel {
            RelIndex::None => {
                if let Some(&v) = self.cache.uniforms.get(&n) {
                    return v;
                }
                let v = self
                    .b
                    .ins()
                    .load(F32X4, caller_floats(), uniforms, 16 * i32::from(n));
                self.cache.uniforms.insert(n, v);
                return v;
            }
            RelIndex::A0X => self.get(Reg::A0(0)),
            RelIndex::A0Y => self.get(Reg::A0(1)),
            RelIndex::AL => self.get(Reg::Al),
        };
        let slot = relative_uniform_slot(&mut IndexIr(self), n, offset);
        let last = self.b.ins().iconst(types::I32, FLOAT_UNIFORMS as i64 - 1);
        let clamped = self.b.ins().umin(slot, last);
        let clamped = self.b.ins().uextend(types::I64, clamped);
        let scaled = self.b.ins().ishl_imm_s(clamped, 4);
        let address = self.b.ins().iadd(uniforms, scaled);
        let value = self.b.ins().load(F32X4, caller_floats(), address, 0);
        let past_end = self.b.ins().icmp(IntCC::UnsignedGreaterThan, slot, last);
        let ones = self.f32x4_const([1.0; 4]);
        self.b.ins().select(past_end, ones, value)
    }

    /// Writes the lanes of `value` the descriptor enables.
    fn write(&mut self, dst: DstReg, desc: OperandDescriptor, value: Value) {
        self.write_lanes(dst, desc.dest_mask(), value);
    }

    /// Writes the lanes of `value` that `mask` enables.
    fn write_lanes(&mut self, dst: DstReg, mask: DestMask, value: Value) {
        let reg = match dst.file_index() {
            (RegisterFile::Temporary, n) => Reg::Temp(n),
            (_, n) => Reg::Output(n),
        };
        if mask.0 == 0 {
            return;
        }
        let merged = if mask.0 == 0xF {
            value
        } else {
            let old = self.get(reg);
            let lanes = std::array::from_fn(|lane| if mask.lane(lane) { u32::MAX } else { 0 });
            let select = self.i32x4_const(lanes);
            let merged = self.select_vec(select, value, old);
            let written = mask.lanes();
            let negative_zeros = (self.negative_zero_lanes(value) & written)
                | (self.negative_zero_lanes(old) & !written);
            self.note_negative_zeros(merged, negative_zeros);
            self.cache.merged.insert(merged, (old, value, written));
            let written = written | written << 4;
            let wild = (self.wild_lanes(value) & written) | (self.wild_lanes(old) & !written);
            self.note_wild(merged, wild);
            merged
        };
        self.set(reg, merged);
    }

    // ------------------------------------------------------------------ operations

    /// The `len` dot products of the group at `pc` ([`DotGroup`]) at once: lane `j` of the
    /// result is the dot product of the member that writes lane `j`, by the rules of
    /// [`lanes::dot_by`] with element `j` of each factor vector that member's operand lane.
    /// So the factors are the members' operands transposed (broadcasts when they share one),
    /// and one lane-wise multiply and sum replaces a multiply, broadcasts and a sum per member.
    fn dot_group(&mut self, pc: u16, len: u8) {
        let dots: Vec<DotProduct> = (pc..pc + u16::from(len))
            .map(|member| {
                DotProduct::of(&self.decoded[member as usize])
                    .expect("a dot-product group holds dot products")
            })
            .collect();
        let (op, dst) = (dots[0].op, dots[0].dst);
        let mut operands = Vec::with_capacity(2 * dots.len());
        let mut masks = Vec::with_capacity(dots.len());
        for (dot, member) in dots.into_iter().zip(pc..) {
            let d = self.descriptor(dot.desc);
            let needed = self.decoded[member as usize]
                .operation()
                .expect("a dot product is an operation")
                .source_lanes(d);
            let read_lanes = self
                .lanes_read(op, needed)
                .expect("a dot product has a fast form");
            operands.push((
                self.read(dot.a, d, ZeroSign::Ignored, read_lanes[0]),
                read_lanes[0],
            ));
            operands.push((
                self.read(dot.b, d, ZeroSign::Ignored, read_lanes[1]),
                read_lanes[1],
            ));
            masks.push(d.dest_mask());
        }
        let form = self.tame(&mut operands);
        let mut first = [None; 4];
        let mut second = [None; 4];
        let mut written = 0u8;
        for (mask, pair) in masks.into_iter().zip(operands.chunks(2)) {
            for lane in (0..4).filter(|&lane| mask.lane(lane)) {
                first[lane] = Some(pair[0].0);
                second[lane] = Some(pair[1].0);
            }
            written |= mask.0;
        }
        let count = if op == BinaryOperation::Dp3 { 3 } else { 4 };
        let p = self.precision;
        // Each form transposes the rows itself: only the rows are live across the fast form
        // into the exact one, not the columns.
        let pairs =
            |l: &mut Self, mut fast: Option<&mut lanes::FlaggingSignedZeros<Value, Value>>| {
                let first = l.transposed(first, fast.as_deref_mut());
                let second = l.transposed(second, fast);
                let mut pairs: Vec<(Value, Value)> =
                    (0..count).map(|i| (first[i], second[i])).collect();
                if op == BinaryOperation::Dph {
                    pairs[3].0 = l.f32x4_const([1.0; 4]);
                }
                pairs
            };
        let r = self.checked(
            form,
            |l, fin| {
                let pairs = pairs(l, Some(&mut *fin));
                lanes::dot_by(l, fin, &pairs, p)
            },
            |l| {
                let pairs = pairs(l, None);
                lanes::dot_by(l, &mut lanes::Exactly, &pairs, p)
            },
        );
        self.write_lanes(dst, DestMask(written), r);
    }

    /// The columns of the 4x4 matrix whose rows are `rows` (column `i` holds lane `i` of each
    /// row; a missing row is any other, its lanes unused): the broadcasts of lanes 0-3 when
    /// every row is the same vector. For a fast form (`fast`, float24 modes) each row is read
    /// once as that finish reads an operand (its flush up to what the finish flags; reading
    /// commutes with moving lanes), so the columns count as read already; otherwise the rule
    /// flushes each column.
    fn transposed(
        &mut self,
        rows: [Option<Value>; 4],
        fast: Option<&mut lanes::FlaggingSignedZeros<Value, Value>>,
    ) -> [Value; 4] {
        let any = rows.iter().flatten().copied().next().expect("a row");
        let rows = rows.map(|row| row.unwrap_or(any));
        let p = self.precision;
        let bounded = fast
            .as_ref()
            .is_some_and(|fin| fin.checks() == lanes::Checks::Operands);
        let (rows, flushed) = match fast {
            Some(fin) if p.is_f24() => {
                let mut read = rows;
                for (i, row) in rows.iter().enumerate() {
                    // A row met before is read already.
                    read[i] = match rows[..i].iter().position(|earlier| earlier == row) {
                        Some(j) => read[j],
                        None => lanes::Finish::operand(fin, self, *row, p),
                    };
                }
                (read, true)
            }
            _ => (rows, false),
        };
        if rows.iter().all(|&row| row == rows[0]) {
            let columns = std::array::from_fn(|lane| self.broadcast(rows[0], lane));
            self.note_columns(columns, flushed, bounded);
            return columns;
        }
        // Lanes 0-3 of `x` and 4-7 (that is, 0-3 of `y`) picked into a vector.
        let mut pick = |x: Value, y: Value, lanes: [u8; 4]| {
            let mut mask = [0u8; 16];
            for (i, &lane) in lanes.iter().enumerate() {
                for byte in 0..4 {
                    mask[4 * i + byte] = 4 * lane + byte as u8;
                }
            }
            super::wide::shuffle(self.b, x, y, mask)
        };
        let low01 = pick(rows[0], rows[1], [0, 4, 1, 5]);
        let low23 = pick(rows[2], rows[3], [0, 4, 1, 5]);
        let high01 = pick(rows[0], rows[1], [2, 6, 3, 7]);
        let high23 = pick(rows[2], rows[3], [2, 6, 3, 7]);
        let columns = [
            pick(low01, low23, [0, 1, 4, 5]),
            pick(low01, low23, [2, 3, 6, 7]),
            pick(high01, high23, [0, 1, 4, 5]),
            pick(high01, high23, [2, 3, 6, 7]),
        ];
        self.note_columns(columns, flushed, bounded);
        columns
    }

    /// Notes the columns of rows read as operands: flushed, and checked when the finish checks
    /// operands (moving lanes keeps both).
    fn note_columns(&mut self, columns: [Value; 4], flushed: bool, bounded: bool) {
        for column in columns {
            if flushed {
                self.note_flushed(column);
            }
            if bounded {
                self.cache.bounded.insert(column);
            }
        }
    }

    /// An instruction with products: `fast` (its rule finished by
    /// [`lanes::FlaggingSignedZeros`]: plain products, and a rounding that flags the lanes
    /// whose result it cannot vouch for: NaNs, and in the float24 modes magnitudes past the
    /// largest finite float24 or rounding below 2^-62 without being zero), then, only when a
    /// lane was flagged, `exact` (the rule itself) in a cold block. Every lane the fast form
    /// does not flag is already exact up to the sign of a zero (`float24::tests`), and the
    /// result's lanes are recorded as possibly holding such a −0 ([`Lowering::settled`]); the
    /// common case skips the inf·0 products' fix-up and the rounding's NaN, overflow and
    /// small-value selects. Values read before stay valid in both blocks (they dominate them).
    /// A whole invocation's fast form ([`Lowering::fast_invocation`]) has the fast form alone,
    /// checking operands; `form` ([`Lowering::tame`]) may ask for either of the others.
    fn checked(
        &mut self,
        form: Form,
        fast: impl FnOnce(&mut Self, &mut lanes::FlaggingSignedZeros<Value, Value>) -> Value,
        exact: impl FnOnce(&mut Self) -> Value,
    ) -> Value {
        if form == Form::Exact {
            return exact(self);
        }
        if self.fast_invocation && form == Form::Fast {
            let mut checks =
                self.cache.checked.take().unwrap_or_else(|| {
                    lanes::FlaggingSignedZeros::checking(FAST_INVOCATION_CHECKS)
                });
            let quick = fast(self, &mut checks);
            self.cache.checked = Some(checks);
            self.note_negative_zeros(quick, 0xF);
            return quick;
        }
        if !self.checked_products {
            return exact(self);
        }
        let mut flagging = lanes::FlaggingSignedZeros::default();
        let quick = fast(self, &mut flagging);
        let negative_zeros = if self.precision.is_f24() { 0xF } else { 0 };
        self.note_negative_zeros(quick, negative_zeros);
        let Some(unusual) = flagging.flagged(self) else {
            return quick;
        };
        let any = self.b.ins().vany_true(unusual);
        let cold = self.b.create_block();
        self.b.set_cold_block(cold);
        let merge = self.b.create_block();
        let result = self.b.append_block_param(merge, F32X4);
        self.b.ins().brif(any, cold, &[], merge, &[quick.into()]);
        self.b.seal_block(cold);
        self.b.switch_to_block(cold);
        // Constants made in the cold block do not dominate what follows: not kept.
        // Nor the flushed copies: the exact form flushes its operands again rather than keep
        // the fast form's copies live across it.
        let constants = std::mem::take(&mut self.cache.constants);
        let flushed = std::mem::take(&mut self.cache.flushed);
        let exactly = exact(self);
        self.cache.constants = constants;
        let exact_flushed = self.is_flushed(exactly);
        self.cache.flushed = flushed;
        self.b.ins().jump(merge, &[exactly.into()]);
        self.b.seal_block(merge);
        self.b.switch_to_block(merge);
        if exact_flushed && self.is_flushed(quick) {
            self.note_flushed(result);
        }
        self.note_negative_zeros(result, negative_zeros);
        result
    }

    /// `op` of `a` and `c`, in the `form` [`Lowering::tame`] picked.
    fn binary(&mut self, op: BinaryOperation, a: Value, c: Value, form: Form) -> Value {
        let p = self.precision;
        match op {
            BinaryOperation::Add if self.fast_invocation => self.checked(
                form,
                |l, fin| lanes::add_by(l, fin, a, c, p),
                |l| lanes::add(l, a, c, p),
            ),
            BinaryOperation::Add => lanes::add(self, a, c, p),
            BinaryOperation::Mul => self.checked(
                form,
                |l, fin| lanes::mul_by(l, fin, a, c, p),
                |l| lanes::mul(l, a, c, p),
            ),
            BinaryOperation::Max | BinaryOperation::Min => {
                let cc = if op == BinaryOperation::Max {
                    FloatCC::GreaterThan
                } else {
                    FloatCC::LessThan
                };
                let m = self.b.ins().fcmp(cc, a, c);
                let r = self.select_vec(m, a, c);
                let wild = self.wild_lanes(a) | self.wild_lanes(c);
                self.note_wild(r, wild);
                r
            }
            BinaryOperation::Sge | BinaryOperation::Slt => {
                let cc = if op == BinaryOperation::Sge {
                    FloatCC::GreaterThanOrEqual
                } else {
                    FloatCC::LessThan
                };
                let m = self.b.ins().fcmp(cc, a, c);
                let one = self.f32x4_const([1.0; 4]);
                let zero = self.f32x4_const([0.0; 4]);
                self.select_vec(m, one, zero)
            }
            BinaryOperation::Dp3 | BinaryOperation::Dp4 => {
                let count = if op == BinaryOperation::Dp3 { 3 } else { 4 };
                self.checked(
                    form,
                    |l, fin| lanes::dot_lanes_by(l, fin, a, c, count, p),
                    |l| lanes::dot(l, a, c, count, p),
                )
            }
            BinaryOperation::Dph => self.checked(
                form,
                |l, fin| lanes::dph_by(l, fin, a, c, p),
                |l| lanes::dph(l, a, c, p),
            ),
            BinaryOperation::Dst => {
                // (1, a.y * b.y, a.z, b.w): only the product is arithmetic.
                let product = self.checked(
                    form,
                    |l, fin| lanes::mul_by(l, fin, a, c, p),
                    |l| lanes::mul(l, a, c, p),
                );
                let y_lane = self.i32x4_const([0, u32::MAX, 0, 0]);
                let z_lane = self.i32x4_const([0, 0, u32::MAX, 0]);
                let copied = self.select_vec(z_lane, a, c);
                let r = self.select_vec(y_lane, product, copied);
                let one = self.b.ins().f32const(1.0);
                let r = self.b.ins().insertlane(r, one, 0);
                let negative_zeros = self.negative_zero_lanes(product) & 0b0010;
                self.note_negative_zeros(r, negative_zeros);
                let wild = (self.wild_lanes(a) & 0x44) | (self.wild_lanes(c) & 0x88);
                self.note_wild(r, wild);
                r
            }
        }
    }

    /// `f(x)` for a host function of one f32.
    fn call(&mut self, f: FuncRef, x: Value) -> Value {
        let call = self.b.ins().call(f, &[x]);
        self.b.inst_results(call)[0]
    }

    /// EX2 or LG2 of lane 0 in every lane: `inline` code, or a call of `host` in a program
    /// with more than [`INLINE_TRANSCENDENTALS`] of them.
    fn transcendental_first(
        &mut self,
        a: Value,
        inline: fn(&mut FunctionBuilder, Value) -> Value,
        host: FuncRef,
    ) -> Value {
        let lane = self.b.ins().extractlane(a, 0);
        let r = if self.inline_transcendentals {
            inline(self.b, lane)
        } else {
            self.call(host, lane)
        };
        self.b.ins().splat(F32X4, r)
    }

    /// `f` of every lane, one call each: the scalar JIT's EX2 and LG2 broadcast lane 0
    /// ([`Lanes::exp2_first`]), so this form is never emitted by its instructions.
    fn call_each(&mut self, f: FuncRef, x: Value) -> Value {
        let mut r = x;
        for lane in 0..4u8 {
            let element = self.b.ins().extractlane(x, lane);
            let y = self.call(f, element);
            r = self.b.ins().insertlane(r, y, lane);
        }
        r
    }

    fn unary(&mut self, op: UnaryOp, a: Value) -> Value {
        let p = self.precision;
        match op {
            UnaryOp::Mov => a,
            UnaryOp::Flr => lanes::flr(self, a, p),
            UnaryOp::Rcp | UnaryOp::Rsq | UnaryOp::Ex2 | UnaryOp::Lg2 => {
                let r = match op {
                    UnaryOp::Rcp => lanes::rcp(self, a, p),
                    UnaryOp::Rsq => lanes::rsq(self, a, p),
                    UnaryOp::Ex2 => lanes::ex2(self, a, p),
                    _ => lanes::lg2(self, a, p),
                };
                self.note_wild(r, if op == UnaryOp::Lg2 { 0xFF } else { 0x0F });
                r
            }
            UnaryOp::Litp => {
                let zero = self.f32x4_const([0.0; 4]);
                let positive = self.b.ins().fcmp(FloatCC::GreaterThan, a, zero);
                let maxed = self.select_vec(positive, a, zero);
                let lo = self.f32x4_const([-LITP_Y_LIMIT; 4]);
                let hi = self.f32x4_const([LITP_Y_LIMIT; 4]);
                let below = self.b.ins().fcmp(FloatCC::LessThan, a, lo);
                let clamped = self.select_vec(below, lo, a);
                let above = self.b.ins().fcmp(FloatCC::GreaterThan, clamped, hi);
                let clamped = self.select_vec(above, hi, clamped);
                let y_lane = self.i32x4_const([0, u32::MAX, 0, 0]);
                let r = self.select_vec(y_lane, clamped, maxed);
                let zero_scalar = self.b.ins().f32const(0.0);
                let r = self.b.ins().insertlane(r, zero_scalar, 2);
                let non_negative = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, a, zero);
                for (flag, lane) in [(0usize, 0u8), (1, 3)] {
                    let bit = self.b.ins().extractlane(non_negative, lane);
                    let bit = self.b.ins().band_imm_s(bit, 1);
                    self.set(Reg::Cmp(flag as u8), bit);
                }
                r
            }
        }
    }
    /// Lowers the data part of the instruction at `pc`. Returns a status value to check when
    /// the instruction can fail (EMIT).
    pub fn data(&mut self, pc: u16, inst: &Instruction) -> Option<Value> {
        match self.facts.dot_groups.get(pc as usize) {
            Some(DotGroup::First(len)) => {
                self.dot_group(pc, *len);
                return None;
            }
            Some(DotGroup::Later) => return None,
            _ => {}
        }
        if let Some(operation) = inst.operation() {
            self.operate(operation);
            return None;
        }
        match *inst {
            // EMIT and SETEMIT do nothing in a vertex shader (docs/model-choices.md).
            Instruction::Simple {
                op: SimpleOp::Emit, ..
            } => {
                if self.program.stage == ShaderKind::Geometry {
                    self.spill_outputs();
                    let pc = self.b.ins().iconst(types::I32, pc as i64);
                    let call = self.b.ins().call(self.host.emit, &[self.ctx, pc]);
                    return Some(self.b.inst_results(call)[0]);
                }
            }
            Instruction::SetEmit {
                vertex,
                primitive,
                winding,
                ..
            } => {
                if self.program.stage == ShaderKind::Geometry {
                    let config = EmitConfig {
                        vertex,
                        primitive,
                        winding,
                    };
                    let packed = self.b.ins().iconst(types::I32, config.packed() as i64);
                    self.b.ins().call(self.host.setemit, &[self.ctx, packed]);
                }
            }
            // No data part: END, BREAK and the flow instructions are all control
            // (super::control), NOP does nothing.
            Instruction::Simple {
                op: SimpleOp::Nop | SimpleOp::End | SimpleOp::Break,
                ..
            }
            | Instruction::CondFlow { .. }
            | Instruction::BoolFlow { .. }
            | Instruction::Loop { .. } => {}
            // An unknown opcode does nothing (docs/execution-model.md §3).
            Instruction::Unknown { .. } => {}
            // Data operations: `operate`.
            Instruction::Binary { .. }
            | Instruction::Unary { .. }
            | Instruction::Mova { .. }
            | Instruction::Cmp { .. }
            | Instruction::Mad { .. } => {}
        }
        None
    }

    /// Lowers a data operation.
    fn operate(&mut self, operation: Operation) {
        let d = self.descriptor(operation.desc());
        let needed = operation.source_lanes(d);
        match operation {
            Operation::Binary { op, dst, a, b, .. } => {
                // MAX and MIN pass on one of two operands, whose other may be the model's own
                // −0; DST copies two lanes beside its product.
                let zero_sign = match op {
                    BinaryOperation::Max | BinaryOperation::Min | BinaryOperation::Dst => {
                        ZeroSign::Seen
                    }
                    _ => ZeroSign::Ignored,
                };
                let mut operands = [
                    (self.read(a, d, zero_sign, needed[0]), 0),
                    (self.read(b, d, zero_sign, needed[1]), 0),
                ];
                let form = match self.lanes_read(op, needed) {
                    Some([first, second]) => {
                        operands[0].1 = first;
                        operands[1].1 = second;
                        self.tame(&mut operands)
                    }
                    None => Form::Fast,
                };
                let [(a, _), (c, _)] = operands;
                let r = self.binary(op, a, c, form);
                self.write(dst, d, r);
            }
            Operation::Unary { op, dst, a, .. } => {
                // FLR rounds a floor of the flushed operand, which only the sign of a zero
                // result sees; MOV passes it on; LITP, RCP, RSQ, EX2 and LG2 see it.
                let zero_sign = match op {
                    UnaryOp::Flr => ZeroSign::Ignored,
                    UnaryOp::Mov => ZeroSign::PassedOn,
                    _ => ZeroSign::Seen,
                };
                let a = self.read(a, d, zero_sign, needed[0]);
                let r = self.unary(op, a);
                self.write(dst, d, r);
            }
            Operation::Mova { a, .. } => {
                let a = self.read(a, d, ZeroSign::Ignored, needed[0]);
                let ints = self.b.ins().fcvt_to_sint_sat(I32X4, a);
                for lane in 0..2 {
                    if d.dest_mask().lane(lane) {
                        let v = self.b.ins().extractlane(ints, lane as u8);
                        self.set(Reg::A0(lane as u8), v);
                    }
                }
            }
            Operation::Cmp {
                a, b, cmp_x, cmp_y, ..
            } => {
                let a = self.read(a, d, ZeroSign::Ignored, needed[0]);
                let c = self.read(b, d, ZeroSign::Ignored, needed[1]);
                for (lane, op) in [(0u8, cmp_x), (1, cmp_y)] {
                    let flag = match compare_cc(op) {
                        Some(cc) => {
                            let x = self.b.ins().extractlane(a, lane);
                            let y = self.b.ins().extractlane(c, lane);
                            let f = self.b.ins().fcmp(cc, x, y);
                            self.b.ins().uextend(types::I32, f)
                        }
                        None => self.b.ins().iconst(types::I32, 1),
                    };
                    self.set(Reg::Cmp(lane), flag);
                }
            }
            Operation::Mad { dst, a, b, c, .. } => {
                let mut operands = [
                    (self.read(a, d, ZeroSign::Ignored, needed[0]), needed[0]),
                    (self.read(b, d, ZeroSign::Ignored, needed[1]), needed[1]),
                    (self.read(c, d, ZeroSign::Ignored, needed[2]), needed[2]),
                ];
                let form = self.tame(&mut operands);
                let [(a, _), (c2, _), (e, _)] = operands;
                let p = self.precision;
                let r = self.checked(
                    form,
                    |l, fin| lanes::mad_by(l, fin, a, c2, e, p),
                    |l| lanes::mad(l, a, c2, e, p),
                );
                self.write(dst, d, r);
            }
        }
    }
}

/// The float24 rules of [`lanes`] emitted as vector code: each operation is one IR instruction
/// on four lanes (a mask is an `i32x4` of all-ones or zero lanes).
impl Elements for Lowering<'_, '_> {
    type Float = Value;
    type Bits = Value;
    type Mask = Value;

    vector_ir_elements!();

    fn bits_of(&mut self, v: Value) -> Value {
        self.as_int(v)
    }
    fn float_of(&mut self, v: Value) -> Value {
        self.as_float(v)
    }
    fn splat_bits(&mut self, bits: u32) -> Value {
        self.i32x4_const([bits; 4])
    }
    fn flushed_already(&mut self, v: Value) -> Option<Value> {
        self.cache.flushed.get(&v).copied()
    }
    fn note_flushed(&mut self, v: Value) {
        self.cache.flushed.insert(v, v);
    }
    fn note_flush(&mut self, v: Value, flushed: Value) {
        self.cache.flushed.insert(v, flushed);
        self.cache.flushed.insert(flushed, flushed);
    }
    fn known_bounded(&mut self, v: Value) -> bool {
        self.cache.bounded.contains(&v)
    }
    fn note_bounded(&mut self, v: Value) {
        self.cache.bounded.insert(v);
    }
    fn exp2_each(&mut self, a: Value) -> Value {
        let f = self.host.exp2;
        self.call_each(f, a)
    }
    fn log2_each(&mut self, a: Value) -> Value {
        let f = self.host.log2;
        self.call_each(f, a)
    }
}

impl Lanes for Lowering<'_, '_> {
    fn exp2_first(&mut self, a: Value) -> Value {
        let f = self.host.exp2;
        self.transcendental_first(a, super::wide::exp2_f32, f)
    }
    fn log2_first(&mut self, a: Value) -> Value {
        let f = self.host.log2;
        self.transcendental_first(a, super::wide::log2_f32, f)
    }
    fn broadcast(&mut self, a: Value, lane: usize) -> Value {
        let r = self.permute(a, [lane; 4]);
        if self.is_flushed(a) {
            self.note_flushed(r);
        }
        r
    }
    fn with_lane(&mut self, a: Value, lane: usize, value: f32) -> Value {
        let value = self.b.ins().f32const(value);
        self.b.ins().insertlane(a, value, lane as u8)
    }
}

/// The relative-addressing rule emitted as code (`i32` values; a truth value is an `icmp`).
struct IndexIr<'x, 'a, 'b>(&'x mut Lowering<'a, 'b>);

impl IndexOps for IndexIr<'_, '_, '_> {
    type Int = Value;
    type Bit = Value;

    fn int(&mut self, value: i32) -> Value {
        self.0.b.ins().iconst(types::I32, value as i64)
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.0.b.ins().iadd(a, b)
    }
    fn and(&mut self, a: Value, mask: i32) -> Value {
        self.0.b.ins().band_imm_s(a, mask as i64)
    }
    fn within(&mut self, a: Value, low: i32, high: i32) -> Value {
        // One unsigned comparison: a - low <= high - low.
        let shifted = self.0.b.ins().iadd_imm_s(a, -(low as i64));
        self.0.b.ins().icmp_imm_s(
            IntCC::UnsignedLessThanOrEqual,
            shifted,
            (high as i64) - (low as i64),
        )
    }
    fn select(&mut self, condition: Value, a: Value, b: Value) -> Value {
        self.0.b.ins().select(condition, a, b)
    }
}
