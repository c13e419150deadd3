//! PICA200 instructions → Cranelift IR, one lowering function per operation.
//!
//! Every register lives in [`JitContext`] memory as an `f32x4`; each instruction loads its
//! sources, computes with vector operations (the float24 rounding and flushing are integer
//! vector operations on the f32 bits, exactly the rules of [`crate::float24`]), and stores the
//! enabled lanes. Each reachable address gets a block. After an instruction, the code goes
//! straight to the next block unless the instruction is a flow instruction or the next address
//! is one where some scope can end; there it calls [`picajit_advance`] (the shared control-flow
//! machine) and dispatches on the returned address.

use std::collections::BTreeSet;
use std::mem::offset_of;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    AbiParam, Block, ConstantData, Endianness, FuncRef, InstBuilder, JumpTableData, MemFlagsData,
    Signature, Type, Value, types,
};
use cranelift_frontend::FunctionBuilder;

use super::context::{JitContext, status};
use crate::float24::{CANONICAL_NAN_BITS, MAX_FINITE, MIN_NORMAL, Precision, arith::LITP_Y_LIMIT};
use crate::isa::{
    BinaryOp, BoolFlowOp, CondFlowOp, DstReg, Instruction, OperandDescriptor, RegisterFile,
    RelIndex, SimpleOp, SrcReg, UnaryOp, split_rel,
};
use crate::program::ShaderProgram;

const F32X4: Type = types::F32X4;
const I32X4: Type = types::I32X4;

/// Host functions the code calls.
pub struct HostFunctions {
    /// `picajit_advance(ctx, pc) -> u32`.
    pub advance: FuncRef,
    /// `picajit_emit(ctx, pc) -> u32`.
    pub emit: FuncRef,
    /// `picajit_setemit(ctx, packed)`.
    pub setemit: FuncRef,
    /// `picajit_exp2(f32) -> f32`.
    pub exp2: FuncRef,
    /// `picajit_log2(f32) -> f32`.
    pub log2: FuncRef,
}

/// Signatures of the host functions, in [`HostFunctions`] order.
pub fn host_signatures(
    pointer: Type,
    call_conv: cranelift_codegen::isa::CallConv,
) -> [(&'static str, Signature); 5] {
    let sig = |params: &[Type], returns: &[Type]| {
        let mut s = Signature::new(call_conv);
        s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        s.returns.extend(returns.iter().map(|&t| AbiParam::new(t)));
        s
    };
    [
        (
            "picajit_advance",
            sig(&[pointer, types::I32], &[types::I32]),
        ),
        ("picajit_emit", sig(&[pointer, types::I32], &[types::I32])),
        ("picajit_setemit", sig(&[pointer, types::I32], &[])),
        ("picajit_exp2", sig(&[types::F32], &[types::F32])),
        ("picajit_log2", sig(&[types::F32], &[types::F32])),
    ]
}

/// Addresses where some scope can end: a CALL's or IF's end, an IF's else, a LOOP's end.
/// After an instruction whose next address is not one of these, no stack can pop.
pub fn scope_ends(decoded: &[Instruction]) -> BTreeSet<u16> {
    let wrap = crate::flow::wrap;
    let mut ends = BTreeSet::new();
    for inst in decoded {
        match *inst {
            Instruction::CondFlow {
                op: CondFlowOp::Call | CondFlowOp::Callc | CondFlowOp::Ifc,
                target,
                count,
                ..
            }
            | Instruction::BoolFlow {
                op: BoolFlowOp::Callu | BoolFlowOp::Ifu,
                target,
                count,
                ..
            } => {
                ends.insert(wrap(target as u32 + count as u32));
                ends.insert(target);
            }
            Instruction::Loop { target, .. } => {
                ends.insert(wrap(target as u32 + 1));
            }
            _ => {}
        }
    }
    ends
}

/// Whether the control part of `inst` needs the shared machine.
fn is_flow(inst: &Instruction) -> bool {
    matches!(
        inst,
        Instruction::CondFlow { .. }
            | Instruction::BoolFlow { .. }
            | Instruction::Loop { .. }
            | Instruction::Simple {
                op: SimpleOp::Break,
                ..
            }
    )
}

/// The per-function lowering state.
pub struct Lowering<'a, 'b> {
    /// The builder.
    pub b: &'a mut FunctionBuilder<'b>,
    /// The context pointer.
    pub ctx: Value,
    /// The program.
    pub program: &'a ShaderProgram,
    /// Decoded program memory.
    pub decoded: &'a [Instruction],
    /// Rounding mode.
    pub precision: Precision,
    /// Host functions.
    pub host: HostFunctions,
    /// One block per prepared address (`None`: unreachable).
    pub blocks: Vec<Option<Block>>,
    /// The dispatch block (takes the next address as a parameter).
    pub dispatch: Block,
    /// Addresses where a scope can end.
    pub ends: BTreeSet<u16>,
    /// Instructions the invocation may still execute (kept in a register, not in memory).
    pub budget: cranelift_frontend::Variable,
}

fn trusted() -> MemFlagsData {
    MemFlagsData::trusted()
}

impl Lowering<'_, '_> {
    // ------------------------------------------------------------------ constants and memory

    fn i32x4_const(&mut self, lanes: [u32; 4]) -> Value {
        let bytes: Vec<u8> = lanes.iter().flat_map(|l| l.to_le_bytes()).collect();
        let constant = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
        self.b.ins().vconst(I32X4, constant)
    }

    fn splat_bits(&mut self, bits: u32) -> Value {
        self.i32x4_const([bits; 4])
    }

    fn f32x4_const(&mut self, lanes: [f32; 4]) -> Value {
        let v = self.i32x4_const(lanes.map(f32::to_bits));
        self.as_float(v)
    }

    fn as_int(&mut self, v: Value) -> Value {
        self.b.ins().bitcast(I32X4, MemFlagsData::new(), v)
    }

    fn as_float(&mut self, v: Value) -> Value {
        self.b.ins().bitcast(F32X4, MemFlagsData::new(), v)
    }

    fn load_vec(&mut self, offset: usize) -> Value {
        self.b.ins().load(F32X4, trusted(), self.ctx, offset as i32)
    }

    fn store_vec(&mut self, value: Value, offset: usize) {
        self.b
            .ins()
            .store(trusted(), value, self.ctx, offset as i32);
    }

    fn load_i32(&mut self, offset: usize) -> Value {
        self.b
            .ins()
            .load(types::I32, trusted(), self.ctx, offset as i32)
    }

    fn store_i32(&mut self, value: Value, offset: usize) {
        self.b
            .ins()
            .store(trusted(), value, self.ctx, offset as i32);
    }

    // ------------------------------------------------------------------ float24 rules

    /// `bitselect` on float vectors with an integer mask.
    fn select_vec(&mut self, mask: Value, if_true: Value, if_false: Value) -> Value {
        let t = self.as_int(if_true);
        let f = self.as_int(if_false);
        let r = self.b.ins().bitselect(mask, t, f);
        self.as_float(r)
    }

    /// `float24::flush_input` on four lanes.
    fn flush(&mut self, v: Value) -> Value {
        if !self.precision.is_f24() {
            return v;
        }
        let bits = self.as_int(v);
        let abs_mask = self.splat_bits(0x7FFF_FFFF);
        let abs = self.b.ins().band(bits, abs_mask);
        let min = self.splat_bits(MIN_NORMAL.to_bits());
        let small = self.b.ins().icmp(IntCC::UnsignedLessThan, abs, min);
        let zero = self.splat_bits(0);
        let r = self.b.ins().bitselect(small, zero, bits);
        self.as_float(r)
    }

    /// `float24::round` on four lanes.
    fn round(&mut self, v: Value) -> Value {
        let is_nan = self.b.ins().fcmp(FloatCC::Unordered, v, v);
        let canonical = self.splat_bits(CANONICAL_NAN_BITS);
        let bits = self.as_int(v);
        let result = match self.precision {
            Precision::F32 => bits,
            mode => {
                let drop_mask = self.splat_bits(!0x7F);
                let rounded = if mode == Precision::F24Nearest {
                    let seven = self.b.ins().iconst(types::I32, 7);
                    let shifted = self.b.ins().ushr(bits, seven);
                    let one = self.splat_bits(1);
                    let lsb = self.b.ins().band(shifted, one);
                    let half = self.splat_bits(0x3F);
                    let sum = self.b.ins().iadd(bits, half);
                    let sum = self.b.ins().iadd(sum, lsb);
                    self.b.ins().band(sum, drop_mask)
                } else {
                    self.b.ins().band(bits, drop_mask)
                };
                let abs_mask = self.splat_bits(0x7FFF_FFFF);
                let abs = self.b.ins().band(rounded, abs_mask);
                let min = self.splat_bits(MIN_NORMAL.to_bits());
                let small = self.b.ins().icmp(IntCC::UnsignedLessThan, abs, min);
                let max = self.splat_bits(MAX_FINITE.to_bits());
                let big = self.b.ins().icmp(IntCC::UnsignedGreaterThan, abs, max);
                let sign_mask = self.splat_bits(0x8000_0000);
                let sign = self.b.ins().band(rounded, sign_mask);
                let inf = self.splat_bits(0x7F80_0000);
                let signed_inf = self.b.ins().bor(sign, inf);
                let zero = self.splat_bits(0);
                let r = self.b.ins().bitselect(big, signed_inf, rounded);
                self.b.ins().bitselect(small, zero, r)
            }
        };
        let r = self.b.ins().bitselect(is_nan, canonical, result);
        self.as_float(r)
    }

    /// `float24::sanitized_mul` on four lanes.
    fn sanitized_mul(&mut self, a: Value, c: Value) -> Value {
        let p = self.b.ins().fmul(a, c);
        let p_nan = self.b.ins().fcmp(FloatCC::Unordered, p, p);
        let a_ok = self.b.ins().fcmp(FloatCC::Ordered, a, a);
        let c_ok = self.b.ins().fcmp(FloatCC::Ordered, c, c);
        let both_ok = self.b.ins().band(a_ok, c_ok);
        let zero_it = self.b.ins().band(p_nan, both_ok);
        let zero = self.f32x4_const([0.0; 4]);
        self.select_vec(zero_it, zero, p)
    }

    /// `arith::mul`: round(sanitized(flush a, flush b)).
    fn mul(&mut self, a: Value, c: Value) -> Value {
        let a = self.flush(a);
        let c = self.flush(c);
        let p = self.sanitized_mul(a, c);
        self.round(p)
    }

    fn add(&mut self, a: Value, c: Value) -> Value {
        let a = self.flush(a);
        let c = self.flush(c);
        let s = self.b.ins().fadd(a, c);
        self.round(s)
    }

    /// A lane permutation of one vector (`lanes[i]` = source lane of result lane i).
    fn permute(&mut self, v: Value, lanes: [usize; 4]) -> Value {
        if lanes == [0, 1, 2, 3] {
            return v;
        }
        let mut mask = [0u8; 16];
        for (i, &lane) in lanes.iter().enumerate() {
            for byte in 0..4 {
                mask[i * 4 + byte] = (lane * 4 + byte) as u8;
            }
        }
        let little = MemFlagsData::new().with_endianness(Endianness::Little);
        let bytes = self.b.ins().bitcast(types::I8X16, little, v);
        let immediate = self
            .b
            .func
            .dfg
            .immediates
            .push(ConstantData::from(mask.to_vec()));
        let shuffled = self.b.ins().shuffle(bytes, bytes, immediate);
        self.b.ins().bitcast(F32X4, little, shuffled)
    }

    fn splat_lane(&mut self, v: Value, lane: usize) -> Value {
        self.permute(v, [lane; 4])
    }

    /// DP3/DP4/DPH over already rounded products `p` (`lanes` = 3 or 4), broadcast.
    fn dot(&mut self, p: Value, lanes: usize) -> Value {
        if self.precision.is_f24() {
            let swapped = self.permute(p, [1, 0, 3, 2]);
            let pairs = self.b.ins().fadd(p, swapped);
            let pairs = self.round(pairs); // lane 0: round(p0 + p1), lane 2: round(p2 + p3)
            let second = if lanes == 4 {
                self.splat_lane(pairs, 2)
            } else {
                self.splat_lane(p, 2)
            };
            let first = self.splat_lane(pairs, 0);
            let sum = self.b.ins().fadd(first, second);
            self.round(sum)
        } else {
            let mut acc = self.f32x4_const([0.0; 4]);
            for lane in 0..lanes {
                let term = self.splat_lane(p, lane);
                acc = self.b.ins().fadd(acc, term);
            }
            self.round(acc)
        }
    }

    /// The products of a dot product, each rounded.
    fn products(&mut self, a: Value, c: Value) -> Value {
        self.mul(a, c)
    }

    // ------------------------------------------------------------------ operands

    fn descriptor(&self, index: u8) -> OperandDescriptor {
        OperandDescriptor(self.program.opdescs[index as usize])
    }

    /// Reads a source: register (relative addressing for uniforms), swizzle, negate.
    fn read(&mut self, reg: SrcReg, rel: RelIndex, desc: OperandDescriptor, slot: usize) -> Value {
        let raw = match reg.file_index() {
            (RegisterFile::Input, n) => {
                self.load_vec(offset_of!(JitContext, input) + 16 * n as usize)
            }
            (RegisterFile::Temporary, n) => {
                self.load_vec(offset_of!(JitContext, temp) + 16 * n as usize)
            }
            (_, n) => self.read_uniform(n, rel),
        };
        let swizzle = desc.swizzle(slot);
        let value = self.permute(raw, std::array::from_fn(|lane| swizzle.component(lane)));
        if desc.negate(slot) {
            self.b.ins().fneg(value)
        } else {
            value
        }
    }

    /// c[n + offset]: an offset outside -128..127 counts as 0; the index wraps at 7 bits and
    /// entries 96-127 of the table hold ones.
    fn read_uniform(&mut self, n: u8, rel: RelIndex) -> Value {
        let base = offset_of!(JitContext, uniform);
        let field = match rel {
            RelIndex::None => return self.load_vec(base + 16 * n as usize),
            RelIndex::A0X => offset_of!(JitContext, a0),
            RelIndex::A0Y => offset_of!(JitContext, a0) + 4,
            RelIndex::AL => offset_of!(JitContext, al),
        };
        let offset = self.load_i32(field);
        let biased = self.b.ins().iadd_imm_s(offset, 128);
        let in_range = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, biased, 256);
        let zero = self.b.ins().iconst(types::I32, 0);
        let offset = self.b.ins().select(in_range, offset, zero);
        let index = self.b.ins().iadd_imm_s(offset, n as i64);
        let index = self.b.ins().band_imm_s(index, 0x7F);
        let index = self.b.ins().uextend(types::I64, index);
        let scaled = self.b.ins().ishl_imm_s(index, 4);
        let address = self.b.ins().iadd(self.ctx, scaled);
        self.b.ins().load(F32X4, trusted(), address, base as i32)
    }

    /// Writes the enabled lanes of `value`.
    fn write(&mut self, dst: DstReg, desc: OperandDescriptor, value: Value) {
        let offset = match dst.file_index() {
            (RegisterFile::Temporary, n) => offset_of!(JitContext, temp) + 16 * n as usize,
            (_, n) => offset_of!(JitContext, output) + 16 * n as usize,
        };
        let mask = desc.dest_mask();
        if mask.0 == 0xF {
            self.store_vec(value, offset);
            return;
        }
        if mask.0 == 0 {
            return;
        }
        let old = self.load_vec(offset);
        let lanes = std::array::from_fn(|lane| if mask.lane(lane) { u32::MAX } else { 0 });
        let select = self.i32x4_const(lanes);
        let merged = self.select_vec(select, value, old);
        self.store_vec(merged, offset);
    }

    // ------------------------------------------------------------------ operations

    fn binary(&mut self, op: BinaryOp, a: Value, c: Value) -> Value {
        match op.base() {
            BinaryOp::Add => self.add(a, c),
            BinaryOp::Mul => self.mul(a, c),
            BinaryOp::Max | BinaryOp::Min => {
                let cc = if op == BinaryOp::Max {
                    FloatCC::GreaterThan
                } else {
                    FloatCC::LessThan
                };
                let m = self.b.ins().fcmp(cc, a, c);
                self.select_vec(m, a, c)
            }
            BinaryOp::Sge | BinaryOp::Slt => {
                let cc = if op.base() == BinaryOp::Sge {
                    FloatCC::GreaterThanOrEqual
                } else {
                    FloatCC::LessThan
                };
                let m = self.b.ins().fcmp(cc, a, c);
                let one = self.f32x4_const([1.0; 4]);
                let zero = self.f32x4_const([0.0; 4]);
                self.select_vec(m, one, zero)
            }
            BinaryOp::Dp3 => {
                let p = self.products(a, c);
                self.dot(p, 3)
            }
            BinaryOp::Dp4 => {
                let p = self.products(a, c);
                self.dot(p, 4)
            }
            BinaryOp::Dph => {
                let one = self.b.ins().f32const(1.0);
                let a = self.b.ins().insertlane(a, one, 3);
                let p = self.products(a, c);
                self.dot(p, 4)
            }
            BinaryOp::Dst => {
                // (1, a.y * b.y, a.z, b.w): only the product is arithmetic.
                let product = self.mul(a, c);
                let y_lane = self.i32x4_const([0, u32::MAX, 0, 0]);
                let z_lane = self.i32x4_const([0, 0, u32::MAX, 0]);
                let copied = self.select_vec(z_lane, a, c);
                let r = self.select_vec(y_lane, product, copied);
                let one = self.b.ins().f32const(1.0);
                self.b.ins().insertlane(r, one, 0)
            }
            other => unreachable!("{other:?} folds onto a base operation"),
        }
    }

    fn call_scalar(&mut self, f: FuncRef, x: Value) -> Value {
        let lane = self.b.ins().extractlane(x, 0);
        let call = self.b.ins().call(f, &[lane]);
        let r = self.b.inst_results(call)[0];
        self.b.ins().splat(F32X4, r)
    }

    fn unary(&mut self, op: UnaryOp, a: Value) -> Value {
        match op {
            UnaryOp::Mov => a,
            UnaryOp::Flr => {
                let x = self.flush(a);
                let f = self.b.ins().floor(x);
                self.round(f)
            }
            UnaryOp::Rcp | UnaryOp::Rsq => {
                let x = self.splat_lane(a, 0);
                let x = self.flush(x);
                let x = if op == UnaryOp::Rsq {
                    self.b.ins().sqrt(x)
                } else {
                    x
                };
                let one = self.f32x4_const([1.0; 4]);
                let q = self.b.ins().fdiv(one, x);
                self.round(q)
            }
            UnaryOp::Ex2 | UnaryOp::Lg2 => {
                let x = self.flush(a);
                let f = if op == UnaryOp::Ex2 {
                    self.host.exp2
                } else {
                    self.host.log2
                };
                let r = self.call_scalar(f, x);
                self.round(r)
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
                    self.store_i32(bit, offset_of!(JitContext, cmp) + 4 * flag);
                }
                r
            }
        }
    }

    /// Lowers the data part of one instruction. Returns a status value when the instruction
    /// can fail (EMIT), to be checked by the caller.
    fn data(&mut self, pc: u16, inst: &Instruction) -> Option<Value> {
        match *inst {
            Instruction::Binary {
                op,
                dst,
                src1,
                src2,
                rel,
                desc,
            } => {
                let d = self.descriptor(desc);
                let (rel1, rel2) = split_rel(rel, op.is_inverted());
                let a = self.read(src1, rel1, d, 0);
                let c = self.read(src2, rel2, d, 1);
                let r = self.binary(op, a, c);
                self.write(dst, d, r);
            }
            Instruction::Unary {
                op,
                dst,
                src1,
                rel,
                desc,
                ..
            } => {
                let d = self.descriptor(desc);
                let a = self.read(src1, rel, d, 0);
                let r = self.unary(op, a);
                self.write(dst, d, r);
            }
            Instruction::Mova {
                src1, rel, desc, ..
            } => {
                let d = self.descriptor(desc);
                let a = self.read(src1, rel, d, 0);
                let ints = self.b.ins().fcvt_to_sint_sat(I32X4, a);
                for lane in 0..2 {
                    if d.dest_mask().lane(lane) {
                        let v = self.b.ins().extractlane(ints, lane as u8);
                        self.store_i32(v, offset_of!(JitContext, a0) + 4 * lane);
                    }
                }
            }
            Instruction::Cmp {
                src1,
                src2,
                rel,
                desc,
                cmp_x,
                cmp_y,
            } => {
                let d = self.descriptor(desc);
                let a = self.read(src1, rel, d, 0);
                let c = self.read(src2, RelIndex::None, d, 1);
                for (lane, op) in [(0u8, cmp_x), (1, cmp_y)] {
                    let flag = match op.bits() {
                        0..=5 => {
                            let cc = [
                                FloatCC::Equal,
                                FloatCC::NotEqual,
                                FloatCC::LessThan,
                                FloatCC::LessThanOrEqual,
                                FloatCC::GreaterThan,
                                FloatCC::GreaterThanOrEqual,
                            ][op.bits() as usize];
                            let x = self.b.ins().extractlane(a, lane);
                            let y = self.b.ins().extractlane(c, lane);
                            let f = self.b.ins().fcmp(cc, x, y);
                            self.b.ins().uextend(types::I32, f)
                        }
                        _ => self.b.ins().iconst(types::I32, 1),
                    };
                    self.store_i32(flag, offset_of!(JitContext, cmp) + 4 * lane as usize);
                }
            }
            Instruction::Mad {
                inverted,
                dst,
                src1,
                src2,
                src3,
                rel,
                desc,
            } => {
                let d = self.descriptor(desc);
                let (rel2, rel3) = split_rel(rel, inverted);
                let a = self.read(src1, RelIndex::None, d, 0);
                let c = self.read(src2, rel2, d, 1);
                let e = self.read(src3, rel3, d, 2);
                let product = self.mul(a, c);
                let e = self.flush(e);
                let sum = self.b.ins().fadd(product, e);
                let r = self.round(sum);
                self.write(dst, d, r);
            }
            Instruction::Simple {
                op: SimpleOp::Emit, ..
            } if self.program.stage == crate::program::ShaderKind::Geometry => {
                let pc = self.b.ins().iconst(types::I32, pc as i64);
                let call = self.b.ins().call(self.host.emit, &[self.ctx, pc]);
                return Some(self.b.inst_results(call)[0]);
            }
            Instruction::SetEmit {
                vertex,
                primitive,
                winding,
                ..
            } if self.program.stage == crate::program::ShaderKind::Geometry => {
                let packed = vertex as u32 | (primitive as u32) << 8 | (winding as u32) << 16;
                let packed = self.b.ins().iconst(types::I32, packed as i64);
                self.b.ins().call(self.host.setemit, &[self.ctx, packed]);
            }
            _ => {}
        }
        None
    }

    /// Returns `code` from the function, recording `pc` as the failing address.
    fn fail(&mut self, pc: u16, code: u32) {
        let pc = self.b.ins().iconst(types::I32, pc as i64);
        self.store_i32(pc, offset_of!(JitContext, error_pc));
        let code = self.b.ins().iconst(types::I32, code as i64);
        self.b.ins().return_(&[code]);
    }

    /// Lowers the instruction at `pc` into its block.
    pub fn instruction(&mut self, pc: u16) {
        let block = self.blocks[pc as usize].expect("a prepared address");
        self.b.switch_to_block(block);
        let inst = self.decoded[pc as usize];

        // The budget: fail before executing the instruction that would exceed it.
        let left = self.b.use_var(self.budget);
        let go_on = self.b.create_block();
        let exhausted = self.b.create_block();
        self.b.ins().brif(left, go_on, &[], exhausted, &[]);
        self.b.switch_to_block(exhausted);
        self.fail(pc, status::BUDGET);
        self.b.switch_to_block(go_on);
        let left = self.b.ins().iadd_imm_s(left, -1);
        self.b.def_var(self.budget, left);

        if let Instruction::Simple {
            op: SimpleOp::End, ..
        } = inst
        {
            let end = self.b.ins().iconst(types::I32, status::END as i64);
            self.b.ins().return_(&[end]);
            return;
        }
        if let Some(emit_status) = self.data(pc, &inst) {
            let ok = self.b.create_block();
            let failed = self.b.create_block();
            self.b.ins().brif(emit_status, failed, &[], ok, &[]);
            self.b.switch_to_block(failed);
            self.b.ins().return_(&[emit_status]);
            self.b.switch_to_block(ok);
        }
        let next = crate::flow::wrap(pc as u32 + 1);
        if is_flow(&inst) || self.ends.contains(&next) {
            let pc_value = self.b.ins().iconst(types::I32, pc as i64);
            let call = self.b.ins().call(self.host.advance, &[self.ctx, pc_value]);
            let target = self.b.inst_results(call)[0];
            self.b.ins().jump(self.dispatch, &[target.into()]);
        } else {
            match self.blocks[next as usize] {
                Some(block) => {
                    self.b.ins().jump(block, &[]);
                }
                None => {
                    let code = self.b.ins().iconst(types::I32, status::INTERNAL as i64);
                    self.b.ins().return_(&[code]);
                }
            }
        }
    }

    /// The dispatch block: an address below 4096 jumps to its block; status codes return.
    pub fn dispatch_block(&mut self) {
        self.b.switch_to_block(self.dispatch);
        let target = self.b.block_params(self.dispatch)[0];
        let internal = self.b.create_block();
        let finished = self.b.create_block();
        let table_block = self.b.create_block();
        let is_status = self.b.ins().icmp_imm_s(
            IntCC::UnsignedGreaterThanOrEqual,
            target,
            status::ADVANCE_BASE as i64,
        );
        self.b
            .ins()
            .brif(is_status, finished, &[], table_block, &[]);

        self.b.switch_to_block(finished);
        let code = self
            .b
            .ins()
            .iadd_imm_s(target, -(status::ADVANCE_BASE as i64));
        self.b.ins().return_(&[code]);

        self.b.switch_to_block(table_block);
        let default = self.b.func.dfg.block_call(internal, &[]);
        let entries: Vec<_> = self
            .blocks
            .clone()
            .iter()
            .map(|block| self.b.func.dfg.block_call(block.unwrap_or(internal), &[]))
            .collect();
        let table = self
            .b
            .create_jump_table(JumpTableData::new(default, &entries));
        self.b.ins().br_table(target, table);

        self.b.switch_to_block(internal);
        let code = self.b.ins().iconst(types::I32, status::INTERNAL as i64);
        self.b.ins().return_(&[code]);
    }
}
