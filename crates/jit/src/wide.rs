//! EX2 and LG2 as code: the f64 part of [`shader::float24::transcendental`] on one `f32` (the
//! scalar JIT's broadcasting EX2 and LG2) or on two `f64x2` halves of an `f32x4` (the SoA JIT),
//! with the same operations in the same order, so the results equal the Rust functions bit for
//! bit (docs/execution-model.md §3, EX2 and LG2).

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{
    ConstantData, Endianness, InstBuilder, MemFlagsData, Type, Value, types,
};
use cranelift_frontend::FunctionBuilder;

use shader::float24::transcendental::{
    EXP2_OVERFLOW, EXP2_UNDERFLOW, WideOps, exp2_core, log2_core,
};

const F32X4: Type = types::F32X4;
const F64X2: Type = types::F64X2;
const I64X2: Type = types::I64X2;
const I32X4: Type = types::I32X4;

/// [`WideOps`] on IR values: `f64x2` vectors, or one `f64` when `scalar`.
struct Wide<'a, 'b> {
    b: &'a mut FunctionBuilder<'b>,
    scalar: bool,
}

impl Wide<'_, '_> {
    fn vector(&mut self, ty: Type, bytes: Vec<u8>) -> Value {
        let constant = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
        self.b.ins().vconst(ty, constant)
    }
    fn bits_const(&mut self, k: u64) -> Value {
        if self.scalar {
            return self.b.ins().iconst(types::I64, k as i64);
        }
        self.vector(I64X2, [k, k].iter().flat_map(|l| l.to_le_bytes()).collect())
    }
    fn bits_type(&self) -> Type {
        if self.scalar { types::I64 } else { I64X2 }
    }
}

impl WideOps for Wide<'_, '_> {
    type Float = Value;
    type Bits = Value;
    type Mask = Value;
    fn splat(&mut self, value: f64) -> Value {
        if self.scalar {
            return self.b.ins().f64const(value);
        }
        let bits = value.to_bits();
        self.vector(
            F64X2,
            [bits, bits].iter().flat_map(|l| l.to_le_bytes()).collect(),
        )
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fadd(a, b)
    }
    fn sub(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fsub(a, b)
    }
    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fmul(a, b)
    }
    fn div(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fdiv(a, b)
    }
    fn greater(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fcmp(FloatCC::GreaterThan, a, b)
    }
    fn select(&mut self, mask: Value, a: Value, b: Value) -> Value {
        if self.scalar {
            return self.b.ins().select(mask, a, b);
        }
        let a = self.float_to_bits(a);
        let b = self.float_to_bits(b);
        let r = self.b.ins().bitselect(mask, a, b);
        self.bits_to_float(r)
    }
    fn float_to_bits(&mut self, a: Value) -> Value {
        let ty = self.bits_type();
        self.b.ins().bitcast(ty, MemFlagsData::new(), a)
    }
    fn bits_to_float(&mut self, a: Value) -> Value {
        let ty = if self.scalar { types::F64 } else { F64X2 };
        self.b.ins().bitcast(ty, MemFlagsData::new(), a)
    }
    fn bits_add(&mut self, a: Value, k: u64) -> Value {
        let k = self.bits_const(k);
        self.b.ins().iadd(a, k)
    }
    fn bits_and(&mut self, a: Value, k: u64) -> Value {
        let k = self.bits_const(k);
        self.b.ins().band(a, k)
    }
    fn bits_or(&mut self, a: Value, k: u64) -> Value {
        let k = self.bits_const(k);
        self.b.ins().bor(a, k)
    }
    fn bits_shl(&mut self, a: Value, amount: u32) -> Value {
        self.b.ins().ishl_imm_s(a, i64::from(amount))
    }
    fn bits_shr(&mut self, a: Value, amount: u32) -> Value {
        self.b.ins().ushr_imm_s(a, i64::from(amount))
    }
}

fn splat_f32(b: &mut FunctionBuilder, value: f32) -> Value {
    let bits = value.to_bits();
    let bytes: Vec<u8> = [bits; 4].iter().flat_map(|l| l.to_le_bytes()).collect();
    let constant = b.func.dfg.constants.insert(ConstantData::from(bytes));
    b.ins().vconst(F32X4, constant)
}

/// `mask ? a : b` on f32x4 values with an i32x4 mask.
fn select_f32(b: &mut FunctionBuilder, mask: Value, a: Value, other: Value) -> Value {
    let a = b.ins().bitcast(I32X4, MemFlagsData::new(), a);
    let other = b.ins().bitcast(I32X4, MemFlagsData::new(), other);
    let r = b.ins().bitselect(mask, a, other);
    b.ins().bitcast(F32X4, MemFlagsData::new(), r)
}

/// The bytes of two f32x4 values `a` and `other` that `mask` picks (`other`'s from 16), as an
/// f32x4: the one lane shuffle of both JIT lowerings.
pub(crate) fn shuffle(b: &mut FunctionBuilder, a: Value, other: Value, mask: [u8; 16]) -> Value {
    // Bitcasts that change the lane count need a byte order.
    let little = MemFlagsData::new().with_endianness(Endianness::Little);
    let a = b.ins().bitcast(types::I8X16, little, a);
    let other = b.ins().bitcast(types::I8X16, little, other);
    let mask = b
        .func
        .dfg
        .immediates
        .push(ConstantData::from(mask.to_vec()));
    let r = b.ins().shuffle(a, other, mask);
    b.ins().bitcast(F32X4, little, r)
}

/// `core` on each lane of `x` (f32x4, every lane in the core's domain), rounded to f32.
fn each_lane(
    b: &mut FunctionBuilder,
    x: Value,
    core: fn(&mut Wide<'_, '_>, Value) -> Value,
) -> Value {
    let high = shuffle(
        b,
        x,
        x,
        [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15],
    );
    let low = b.ins().fvpromote_low(x);
    let high = b.ins().fvpromote_low(high);
    let mut wide = Wide { b, scalar: false };
    let low = core(&mut wide, low);
    let high = core(&mut wide, high);
    let low = b.ins().fvdemote(low);
    let high = b.ins().fvdemote(high);
    shuffle(
        b,
        low,
        high,
        [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23],
    )
}

/// The two forms the JITs emit EX2 and LG2 in: one `f32` (the scalar JIT's lane 0) or an
/// `f32x4` (the SoA JIT's four vertices), with constants, selects and the f64 core to match.
#[derive(Clone, Copy)]
enum Form {
    One,
    Four,
}

impl Form {
    fn constant(self, b: &mut FunctionBuilder, value: f32) -> Value {
        match self {
            Form::One => b.ins().f32const(value),
            Form::Four => splat_f32(b, value),
        }
    }
    fn select(self, b: &mut FunctionBuilder, mask: Value, a: Value, other: Value) -> Value {
        match self {
            Form::One => b.ins().select(mask, a, other),
            Form::Four => select_f32(b, mask, a, other),
        }
    }
    fn core(
        self,
        b: &mut FunctionBuilder,
        x: Value,
        core: fn(&mut Wide<'_, '_>, Value) -> Value,
    ) -> Value {
        match self {
            Form::One => one_value(b, x, core),
            Form::Four => each_lane(b, x, core),
        }
    }
}

/// `core` on one f32 in the core's domain, rounded to f32.
fn one_value(
    b: &mut FunctionBuilder,
    x: Value,
    core: fn(&mut Wide<'_, '_>, Value) -> Value,
) -> Value {
    let wide = b.ins().fpromote(types::F64, x);
    let r = core(&mut Wide { b, scalar: true }, wide);
    b.ins().fdemote(types::F32, r)
}

/// [`shader::float24::transcendental::exp2`] in `form`: the inputs outside the core's domain
/// (NaN, overflow, underflow) replaced by 0 for the core and their results chosen after.
fn exp2_in(b: &mut FunctionBuilder, x: Value, form: Form) -> Value {
    let nan = b.ins().fcmp(FloatCC::Unordered, x, x);
    let overflow = form.constant(b, EXP2_OVERFLOW);
    let overflows = b.ins().fcmp(FloatCC::GreaterThanOrEqual, x, overflow);
    let underflow = form.constant(b, EXP2_UNDERFLOW);
    let underflows = b.ins().fcmp(FloatCC::LessThan, x, underflow);
    let outside = b.ins().bor(nan, overflows);
    let outside = b.ins().bor(outside, underflows);
    let zero = form.constant(b, 0.0);
    let inside = form.select(b, outside, zero, x);
    let r = form.core(b, inside, |o, v| exp2_core(o, v));
    let r = form.select(b, underflows, zero, r);
    let infinity = form.constant(b, f32::INFINITY);
    let r = form.select(b, overflows, infinity, r);
    form.select(b, nan, x, r)
}

/// [`shader::float24::transcendental::log2`] in `form`: the inputs outside the core's domain
/// (NaN, zeros, negatives, +inf) replaced by 1 for the core and their results chosen after.
fn log2_in(b: &mut FunctionBuilder, x: Value, form: Form) -> Value {
    let nan = b.ins().fcmp(FloatCC::Unordered, x, x);
    let zero = form.constant(b, 0.0);
    let is_zero = b.ins().fcmp(FloatCC::Equal, x, zero);
    let negative = b.ins().fcmp(FloatCC::LessThan, x, zero);
    let infinity = form.constant(b, f32::INFINITY);
    let infinite = b.ins().fcmp(FloatCC::Equal, x, infinity);
    let outside = b.ins().bor(nan, is_zero);
    let outside = b.ins().bor(outside, negative);
    let outside = b.ins().bor(outside, infinite);
    let one = form.constant(b, 1.0);
    let inside = form.select(b, outside, one, x);
    let r = form.core(b, inside, |o, v| log2_core(o, v));
    let r = form.select(b, infinite, infinity, r);
    let not_a_number = form.constant(b, f32::NAN);
    let r = form.select(b, negative, not_a_number, r);
    let minus_infinity = form.constant(b, f32::NEG_INFINITY);
    let r = form.select(b, is_zero, minus_infinity, r);
    form.select(b, nan, x, r)
}

/// [`shader::float24::transcendental::exp2`] of every lane of an f32x4.
pub fn exp2_f32x4(b: &mut FunctionBuilder, x: Value) -> Value {
    exp2_in(b, x, Form::Four)
}

/// [`shader::float24::transcendental::log2`] of every lane of an f32x4.
pub fn log2_f32x4(b: &mut FunctionBuilder, x: Value) -> Value {
    log2_in(b, x, Form::Four)
}

/// [`shader::float24::transcendental::exp2`] of one f32, inline.
pub fn exp2_f32(b: &mut FunctionBuilder, x: Value) -> Value {
    exp2_in(b, x, Form::One)
}

/// [`shader::float24::transcendental::log2`] of one f32, inline.
pub fn log2_f32(b: &mut FunctionBuilder, x: Value) -> Value {
    log2_in(b, x, Form::One)
}
