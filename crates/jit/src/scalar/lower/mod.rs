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
use crate::facts::ValueFacts;
use crate::{caller_floats, caller_outputs, compare_cc};
use shader::exec::EmitConfig;
use shader::exec::operate::{
    LaneFrom, OperationBackend, Source, SourceRegister, ZeroSign, operate,
};
use shader::float24::Precision;
use shader::float24::arith::CompareOp;
use shader::float24::lanes::{self, Elements, Lanes};
use shader::isa::{
    BinaryOperation, DestMask, DstReg, Instruction, OperandDescriptor, Operation, RegisterFile,
    RelIndex, SimpleOp,
};

pub(super) mod control;
mod operands;
mod operations;

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
    /// What the run knows about its values ([`ValueFacts`]): its constants (a run's data path
    /// is straight-line code, so a value made in it serves the rest of it), in the float24
    /// modes the values the input flush leaves unchanged (results of the flush or a rounding,
    /// canonical temporaries and their swizzles) and the flushed copy of each other value
    /// flushed so far ([`lanes::flush`] asks [`Elements::flushed_already`]), and the values a
    /// whole-invocation fast function's checks cover (checked, or within the bounds as
    /// constants).
    pub(crate) facts: ValueFacts,
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
        self.facts.clear();
        self.negative_zeros.clear();
        self.checked = None;
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
        self.facts.constants.clear();
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
    pub routing: control::Routing,
}

/// Flags of an access to the context: it is in bounds and aligned (the context is 16-aligned
/// and every offset a multiple of the access size).
pub fn trusted() -> MemFlagsData {
    MemFlagsData::trusted()
}

impl Lowering<'_, '_> {
    // ------------------------------------------------------------------ constants and memory

    fn i32x4_const(&mut self, lanes: [u32; 4]) -> Value {
        if let Some(&v) = self.cache.facts.constants.get(&lanes) {
            return v;
        }
        let bytes: Vec<u8> = lanes.iter().flat_map(|l| l.to_le_bytes()).collect();
        let constant = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
        let v = self.b.ins().vconst(I32X4, constant);
        self.cache.facts.constants.insert(lanes, v);
        let within_bounds = lanes.iter().all(|&bits| {
            let magnitude = bits & lanes::MAGNITUDE_BITS;
            magnitude <= lanes::OPERAND_GREATEST_BITS
        });
        if within_bounds && self.fast_invocation {
            self.cache.facts.bounded.insert(v);
        }
        v
    }

    fn f32x4_const(&mut self, lanes: [f32; 4]) -> Value {
        let bits = self.i32x4_const(lanes.map(f32::to_bits));
        let v = self.as_float(bits);
        if self.cache.facts.bounded.contains(&bits) {
            self.cache.facts.bounded.insert(v);
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
        self.cache.facts.unchanged_by_flush.contains(&v)
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
        if self.cache.facts.bounded.contains(&v) {
            self.cache.facts.bounded.insert(tamed);
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
        let r = crate::wide::shuffle(self.b, v, v, mask);
        self.cache.moved.insert(r, (v, lanes));
        r
    }
}
