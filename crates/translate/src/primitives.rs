//! The IEEE operations the float24 rules are built from, as shader functions exact on any host
//! whose float add and multiply are IEEE (docs/gpu-shaders.md, "Exact primitives"):
//!
//! - add and multiply run on the host, each operand and the result passed through the
//!   uniform block's opaque zero, so that no compiler folds a constant into them or fuses a
//!   product into an addition; in f32 mode, where subnormals are values, a lane with a
//!   subnormal operand or a result the host may have flushed is computed another way, since
//!   vertex stages flush subnormals on many hosts: a sum of two operands below 2^-100 scaled
//!   by 2^64, a product from its mantissas multiplied in [1, 2) and its exponents added in
//!   integers, in vector arithmetic with no branch or loop (drivers inline every call);
//! - division, square root and floor are integer arithmetic throughout (GLSL allows division
//!   2.5 ulp and leaves square root's precision to the implementation);
//! - EX2 and LG2 run the model's own f64 evaluation ([`shader::float24::transcendental`]) on
//!   f64 values held as two words ([`crate::double`]).
//!
//! These are not rules of the model: they are how the host computes what the rules ask of IEEE
//! arithmetic, and so they have no counterpart in the other engines.

use crate::ir::build::FnBuilder;
use crate::ir::{ExprId, Global, Place, Scalar, Type};
use shader::float24::Precision;

/// The f32 bits of +infinity.
pub const INFINITY: u32 = 0x7F80_0000;
/// A quiet NaN (the rules make every NaN result canonical).
pub const QUIET_NAN: u32 = 0x7FC0_0000;
/// The f32 mantissa field.
const MANTISSA: u32 = 0x007F_FFFF;
/// The implicit leading bit of a normal f32's mantissa.
const IMPLICIT: u32 = 0x0080_0000;

/// The opaque zero in every lane of a value shaped like `like`.
fn opaque_zero(b: &mut FnBuilder, like: ExprId) -> ExprId {
    let zero = b.load(Place::Global(Global::OpaqueZero));
    let lanes = b.ty(like).lanes;
    if lanes == 1 {
        zero
    } else {
        b.broadcast(zero, lanes)
    }
}

/// `a op b` on the host's floats, with the opaque zero around it.
fn host(b: &mut FnBuilder, a: ExprId, c: ExprId, op: crate::ir::BinaryOp) -> ExprId {
    let zero = opaque_zero(b, a);
    let a = b.xor(a, zero);
    let c = b.xor(c, zero);
    let fa = b.bitcast(a, Scalar::Float);
    let fc = b.bitcast(c, Scalar::Float);
    let r = b.binary(op, fa, fc);
    let r = b.bitcast(r, Scalar::Uint);
    b.xor(r, zero)
}

/// Whether each lane of f32 bits `x` is a subnormal.
fn subnormal(b: &mut FnBuilder, x: ExprId) -> ExprId {
    let exponent = b.and_k(x, INFINITY);
    let no_exponent = b.eq_k(exponent, 0);
    let mantissa = b.and_k(x, MANTISSA);
    let some_mantissa = b.ne_k(mantissa, 0);
    b.and(no_exponent, some_mantissa)
}

/// IEEE `a + b` of f32 bits, lane by lane (`a`, `b`: `uvec4` or `uint`).
pub fn add(b: &mut FnBuilder, precision: Precision, a: ExprId, c: ExprId) -> ExprId {
    let ty = b.ty(a);
    let name = format!("pica_fadd{}", suffix(ty, precision));
    let f = b
        .module
        .helper(&name, &[("a", ty), ("b", ty)], Some(ty), |b, args| {
            let (a, c) = (args[0], args[1]);
            let sum = host(b, a, c, crate::ir::BinaryOp::Add);
            if precision.is_f24() {
                // Operands are flushed float24 values: no subnormal reaches the host.
                b.ret(Some(sum));
                return;
            }
            let sum = b.bind("sum", sum);
            // Both operands below 2^-100: the sum is taken scaled by 2^64, where nothing is
            // subnormal. Otherwise the host's sum is exact even where it flushes a subnormal
            // operand: the other is then at least 2^-100, whose ulp/2 exceeds any subnormal.
            let ma = b.and_k(a, 0x7FFF_FFFF);
            let mc = b.and_k(c, 0x7FFF_FFFF);
            let small_a = b.lt_k(ma, SMALL);
            let small_c = b.lt_k(mc, SMALL);
            let small = b.and(small_a, small_c);
            let small = b.bind("small", small);
            let up_a = scale_up(b, a);
            let up_c = scale_up(b, c);
            let scaled = host(b, up_a, up_c, crate::ir::BinaryOp::Add);
            let scaled = b.bind("scaled", scaled);
            let r = scale_down(b, scaled);
            let r = b.select(small, r, sum);
            b.ret(Some(r));
        });
    b.call(f, &[a, c])
}

/// 2^-100: below it, two operands are added scaled by 2^64.
const SMALL: u32 = 0x0D80_0000;
/// 2^64, 2^-64, 2^85 and 2^-85.
const TWO_64: u32 = 0x5F80_0000;
const TWO_MINUS_64: u32 = 0x1F80_0000;
const TWO_85: u32 = 0x6A00_0000;
const TWO_MINUS_85: u32 = 0x1500_0000;
/// 2^-126 scaled by 2^64: the least normal once scaled back.
const SCALED_NORMAL: u32 = 0x2080_0000;

/// The constant f32 bits `k` shaped like `like`.
fn constant_like(b: &mut FnBuilder, like: ExprId, k: u32) -> ExprId {
    let ty = b.ty(like);
    if ty.lanes == 1 {
        b.uint(k)
    } else {
        b.splat(ty, k)
    }
}

/// `x` (below 2^-100) times 2^64, exactly and normal: a subnormal's mantissa is converted to
/// float (exact: 23 bits) and scaled by 2^-85 (2^-149 · 2^64), a normal multiplied by 2^64.
fn scale_up(b: &mut FnBuilder, x: ExprId) -> ExprId {
    let sign = b.and_k(x, 0x8000_0000);
    let exponent = b.and_k(x, INFINITY);
    let no_exponent = b.eq_k(exponent, 0);
    let mantissa = b.and_k(x, MANTISSA);
    let count = b.convert(mantissa, Scalar::Float);
    let count = b.bitcast(count, Scalar::Uint);
    let k = constant_like(b, x, TWO_MINUS_85);
    let tiny = host(b, count, k, crate::ir::BinaryOp::Mul);
    let tiny = b.or(tiny, sign);
    let k = constant_like(b, x, TWO_64);
    let normal = host(b, x, k, crate::ir::BinaryOp::Mul);
    b.select(no_exponent, tiny, normal)
}

/// A sum of two values scaled by [`scale_up`], scaled back: a normal result by the host's
/// product with 2^-64 (exact), a subnormal one from its count of 2^-149 units (exact: a sum
/// that small is representable, Hauser's theorem).
fn scale_down(b: &mut FnBuilder, s: ExprId) -> ExprId {
    let sign = b.and_k(s, 0x8000_0000);
    let magnitude = b.and_k(s, 0x7FFF_FFFF);
    let normal = b.ge_k(magnitude, SCALED_NORMAL);
    let k = constant_like(b, s, TWO_MINUS_64);
    let back = host(b, s, k, crate::ir::BinaryOp::Mul);
    let k = constant_like(b, s, TWO_85);
    let units = host(b, magnitude, k, crate::ir::BinaryOp::Mul);
    let units = b.bitcast(units, Scalar::Float);
    let units = b.convert(units, Scalar::Uint);
    let tiny = b.or(units, sign);
    b.select(normal, back, tiny)
}

/// IEEE `a * b` of f32 bits, lane by lane.
pub fn mul(b: &mut FnBuilder, precision: Precision, a: ExprId, c: ExprId) -> ExprId {
    let ty = b.ty(a);
    let name = format!("pica_fmul{}", suffix(ty, precision));
    let f = b
        .module
        .helper(&name, &[("a", ty), ("b", ty)], Some(ty), |b, args| {
            let (a, c) = (args[0], args[1]);
            let product = host(b, a, c, crate::ir::BinaryOp::Mul);
            if precision.is_f24() {
                // Flushed float24 factors: the product's magnitude is 0 or at least 2^-124.
                b.ret(Some(product));
                return;
            }
            let product = b.bind("product", product);
            let sa = subnormal(b, a);
            let sc = subnormal(b, c);
            let either = b.or(sa, sc);
            let exponent = b.and_k(product, INFINITY);
            let tiny = b.eq_k(exponent, 0);
            let ma = b.and_k(a, 0x7FFF_FFFF);
            let mc = b.and_k(c, 0x7FFF_FFFF);
            let za = b.ne_k(ma, 0);
            let zc = b.ne_k(mc, 0);
            let nonzero = b.and(za, zc);
            let flushed = b.and(tiny, nonzero);
            let redo = b.or(either, flushed);
            let redo = b.bind("redo", redo);
            // Computed on every lane and selected, not behind a branch: straight-line code
            // costs the driver's compile much less than a branch a call.
            let exact = mul_exact_lanes(b, a, c);
            let r = b.select(redo, exact, product);
            b.ret(Some(r));
        });
    b.call(f, &[a, c])
}

/// Two operands of a product or a quotient, classified from their bits.
struct Operands {
    /// The result's sign bit.
    sign: ExprId,
    abs_a: ExprId,
    abs_b: ExprId,
    nan_a: ExprId,
    nan_b: ExprId,
    inf_a: ExprId,
    inf_b: ExprId,
    zero_a: ExprId,
    zero_b: ExprId,
}

impl Operands {
    fn of(b: &mut FnBuilder, a: ExprId, c: ExprId) -> Operands {
        let xs = b.xor(a, c);
        let sign = b.and_k(xs, 0x8000_0000);
        let sign = b.bind("sign", sign);
        let abs_a = b.and_k(a, 0x7FFF_FFFF);
        let abs_a = b.bind("abs_a", abs_a);
        let abs_b = b.and_k(c, 0x7FFF_FFFF);
        let abs_b = b.bind("abs_b", abs_b);
        let mut class = |name: &str, x: ExprId, test: fn(&mut FnBuilder, ExprId) -> ExprId| {
            let t = test(b, x);
            b.bind(name, t)
        };
        Operands {
            sign,
            abs_a,
            abs_b,
            nan_a: class("nan_a", abs_a, |b, x| b.gt_k(x, INFINITY)),
            nan_b: class("nan_b", abs_b, |b, x| b.gt_k(x, INFINITY)),
            inf_a: class("inf_a", abs_a, |b, x| b.eq_k(x, INFINITY)),
            inf_b: class("inf_b", abs_b, |b, x| b.eq_k(x, INFINITY)),
            zero_a: class("zero_a", abs_a, |b, x| b.eq_k(x, 0)),
            zero_b: class("zero_b", abs_b, |b, x| b.eq_k(x, 0)),
        }
    }
}

/// A finite non-zero f32 (bits, any lanes) as a mantissa in [2^23, 2^24) and a biased
/// exponent (an `int`, below 1 for a subnormal), without a loop.
fn normalised_lanes(b: &mut FnBuilder, x: ExprId) -> (ExprId, ExprId) {
    let field = b.shr_k(x, 23);
    let field = b.and_k(field, 0xFF);
    let field = b.bind("field", field);
    let mantissa = b.and_k(x, MANTISSA);
    let mantissa = b.bind("mantissa", mantissa);
    let normal = b.ne_k(field, 0);
    let normal = b.bind("normal", normal);
    let with_implicit = b.or_k(mantissa, IMPLICIT);
    // A subnormal's leading bit is moved to bit 23 (`| 1` keeps the zero mantissa of a
    // normal from reaching the conversion; its lanes take the other side).
    let some = b.or_k(mantissa, 1);
    let top = highest_bit(b, some);
    let k23 = b.like(top, 23);
    let shift = b.sub(k23, top);
    let shift = b.bind("shift", shift);
    let amount = b.convert(shift, Scalar::Uint);
    let moved = b.shl(mantissa, amount);
    let m = b.select(normal, with_implicit, moved);
    let biased = b.convert(field, Scalar::Int);
    let one = b.like(shift, 1);
    let lowered = b.sub(one, shift);
    let e = b.select(normal, biased, lowered);
    (b.bind("m", m), b.bind("e", e))
}

/// Exact IEEE `a * b` of f32 bits on every lane, subnormals kept, in vector arithmetic with
/// no branch or loop (drivers inline every call): the mantissas, normalised, multiply on the
/// host as values in [1, 2), where nothing is subnormal and the product is correctly
/// rounded to 24 bits; the exponents add in integers; a subnormal result is rounded again
/// from that product, its ties broken by the sign of the first rounding's error, which the
/// low 32 bits of the integer mantissa product give exactly.
fn mul_exact_lanes(b: &mut FnBuilder, a: ExprId, c: ExprId) -> ExprId {
    let Operands {
        sign,
        abs_a: ma,
        abs_b: mc,
        nan_a,
        nan_b: nan_c,
        inf_a,
        inf_b: inf_c,
        zero_a,
        zero_b: zero_c,
    } = Operands::of(b, a, c);
    // Infinities, NaNs and zeros.
    let nan = b.or(nan_a, nan_c);
    let inf_zero = b.and(inf_a, zero_c);
    let zero_inf = b.and(zero_a, inf_c);
    let nan = b.or(nan, inf_zero);
    let nan = b.or(nan, zero_inf);
    let nan = b.bind("nan", nan);
    let inf = b.or(inf_a, inf_c);
    let inf = b.bind("inf", inf);
    let zero = b.or(zero_a, zero_c);
    let special = b.or(nan, inf);
    let special = b.or(special, zero);
    let special = b.bind("special", special);
    let quiet = b.like(sign, QUIET_NAN);
    let infinite = b.or_k(sign, INFINITY);
    let special_value = b.select(inf, infinite, sign);
    let special_value = b.select(nan, quiet, special_value);
    let special_value = b.bind("special_value", special_value);
    // Finite, non-zero: mantissas in [2^23, 2^24).
    let (na, ea) = normalised_lanes(b, ma);
    let (nc, ec) = normalised_lanes(b, mc);
    let one_a = b.and_k(na, MANTISSA);
    let one_a = b.or_k(one_a, 127 << 23);
    let one_c = b.and_k(nc, MANTISSA);
    let one_c = b.or_k(one_c, 127 << 23);
    let p = host(b, one_a, one_c, crate::ir::BinaryOp::Mul);
    let p = b.bind("p", p);
    let pe = b.shr_k(p, 23);
    let pe = b.bind("p_exponent", pe);
    let mp = b.and_k(p, MANTISSA);
    let mp = b.or_k(mp, IMPLICIT);
    let mp = b.bind("p_mantissa", mp);
    // The first rounding's error: na·nb − mp·2^s, s = 23 or 24, exact in 32 bits.
    let exact_low = b.mul(na, nc);
    let s = b.sub_k(pe, 104);
    let approx_low = b.shl(mp, s);
    let error = b.sub(exact_low, approx_low);
    let error = b.convert(error, Scalar::Int);
    let error = b.bind("error", error);
    // The result's biased exponent.
    let pe_int = b.convert(pe, Scalar::Int);
    let e = b.add(ea, ec);
    let e = b.add(e, pe_int);
    let e = b.sub_k(e, 254);
    let e = b.bind("e_product", e);
    let normal = b.ge_k(e, 1);
    let normal = b.bind("normal_product", normal);
    let over = b.ge_k(e, 255);
    let e_field = b.convert(e, Scalar::Uint);
    let e_field = b.shl_k(e_field, 23);
    let fraction = b.and_k(mp, MANTISSA);
    let normal_bits = b.or(e_field, fraction);
    let inf_bits = b.like(normal_bits, INFINITY);
    let normal_bits = b.select(over, inf_bits, normal_bits);
    // A subnormal result: mp shifted right by 1 − e (at most 25), rounded to nearest even
    // with the error breaking ties.
    let one = b.like(e, 1);
    let sh = b.sub(one, e);
    let most = b.like(sh, 25);
    let beyond = b.gt(sh, most);
    let sh = b.select(beyond, most, sh);
    // (At least 1; a normal result's lanes, where it is not, take the other side.)
    let least = b.like(sh, 1);
    let short = b.lt(sh, least);
    let sh = b.select(short, least, sh);
    let sh = b.convert(sh, Scalar::Uint);
    let sh = b.bind("sh", sh);
    let units = b.shr(mp, sh);
    let units = b.bind("units", units);
    let one_u = b.like(sh, 1);
    let unit = b.shl(one_u, sh);
    let low_mask = b.sub_k(unit, 1);
    let rem = b.and(mp, low_mask);
    let rem = b.bind("rem", rem);
    let below = b.sub_k(sh, 1);
    let half = b.shl(one_u, below);
    let half = b.bind("half", half);
    let above = b.gt(rem, half);
    let tie = b.eq(rem, half);
    let zero_i = b.like(error, 0);
    let err_up = b.gt(error, zero_i);
    let err_none = b.eq(error, zero_i);
    let odd = b.and_k(units, 1);
    let odd = b.ne_k(odd, 0);
    let even_up = b.and(err_none, odd);
    let tie_up = b.or(err_up, even_up);
    let tie_up = b.and(tie, tie_up);
    let up = b.or(above, tie_up);
    let up = b.convert(up, Scalar::Uint);
    let sub_bits = b.add(units, up);
    let bits = b.select(normal, normal_bits, sub_bits);
    let bits = b.or(bits, sign);
    b.select(special, special_value, bits)
}

fn suffix(ty: Type, precision: Precision) -> String {
    let mode = if precision.is_f24() { "" } else { "_f32" };
    if ty.lanes == 1 {
        mode.to_string()
    } else {
        format!("{}{mode}", ty.lanes)
    }
}

/// Packs sign, effective biased exponent `e` (int) and a mantissa `m` whose leading bit is at
/// 23 + `extra` (or lower, for a subnormal with `e` = 1), `extra` low bits being guard, round
/// and sticky, rounding to nearest even; an exponent of 255 or more is an infinity.
fn round_and_pack(b: &mut FnBuilder, sign: ExprId, e: ExprId, m: ExprId, extra: u32) -> ExprId {
    let low_mask = (1u32 << extra) - 1;
    let half = 1u32 << (extra - 1);
    let rest = b.and_k(m, low_mask);
    let kept = b.shr_k(m, extra);
    let odd = b.and_k(kept, 1);
    let above = b.gt_k(rest, half);
    let tie = b.eq_k(rest, half);
    let odd = b.ne_k(odd, 0);
    let tie_up = b.and(tie, odd);
    let up = b.or(above, tie_up);
    let up = b.convert(up, Scalar::Uint);
    let rounded = b.add(kept, up);
    pack(b, sign, e, rounded)
}

/// sign | the f32 with effective exponent `e` and rounded 24-bit mantissa `m` (at most 2^24;
/// below 2^23 a subnormal, which needs `e` = 1): adding the exponent field to the mantissa
/// with its implicit bit lets a carry raise the exponent, and an exponent of 255 or more
/// gives an infinity.
fn pack(b: &mut FnBuilder, sign: ExprId, e: ExprId, m: ExprId) -> ExprId {
    let normal = b.ge_k(m, IMPLICIT);
    let e_field = b.sub_k(e, 1);
    let eu = b.convert(e_field, Scalar::Uint);
    let shifted = b.shl_k(eu, 23);
    let zero = b.uint(0);
    let field = b.select(normal, shifted, zero);
    let magnitude = b.add(field, m);
    // An exponent field of 255 or more after the carry is an overflow.
    let limit = b.int(254);
    let e_big = b.gt(e, limit);
    let overflow_m = b.ge_k(magnitude, INFINITY);
    let overflow = b.or(e_big, overflow_m);
    let infinity = b.uint(INFINITY);
    let magnitude = b.select(overflow, infinity, magnitude);
    b.or(sign, magnitude)
}

/// `m` (leading bit at 26, the three low bits guard, round and sticky) with effective exponent
/// `e` (int, possibly below 1), rounded and packed: an exponent below 1 first shifts the
/// mantissa into the subnormals, keeping what it shifts out as the sticky bit.
pub(crate) fn round_and_pack_any(b: &mut FnBuilder, sign: ExprId, e: ExprId, m: ExprId) -> ExprId {
    let one = b.int(1);
    let low = b.lt(e, one);
    let s = b.sub(one, e);
    let s = b.bind("s", s);
    let huge = b.gt_k(s, 27);
    let nonzero = b.ne_k(m, 0);
    let only_sticky = b.convert(nonzero, Scalar::Uint);
    let su = b.convert(s, Scalar::Uint);
    let none = b.uint(0);
    let limited = b.select(huge, none, su);
    let limited = b.bind("shift", limited);
    let one_u = b.uint(1);
    let span = b.shl(one_u, limited);
    let under = b.sub_k(span, 1);
    let lost = b.and(m, under);
    let lost = b.ne_k(lost, 0);
    let lost = b.convert(lost, Scalar::Uint);
    let shifted = b.shr(m, limited);
    let shifted = b.or(shifted, lost);
    let shifted = b.select(huge, only_sticky, shifted);
    let m = b.select(low, shifted, m);
    let e = b.select(low, one, e);
    round_and_pack(b, sign, e, m, 3)
}

/// The position (an `int`, 0-31) of the highest set bit of `m` (a non-zero `uint`), without a
/// loop: the conversion to float of at most 24 significant bits is exact, and its exponent is
/// the position (the conversion's result is at least 1, so no host flushes it).
pub(crate) fn highest_bit(b: &mut FnBuilder, m: ExprId) -> ExprId {
    let wide = b.ge_k(m, 1 << 24);
    let wide = b.bind("wide", wide);
    let narrowed = b.shr_k(m, 8);
    let fits = b.select(wide, narrowed, m);
    let f = b.convert(fits, Scalar::Float);
    let bits = b.bitcast(f, Scalar::Uint);
    let exponent = b.shr_k(bits, 23);
    let extra = b.convert(wide, Scalar::Uint);
    let extra = b.shl_k(extra, 3);
    let position = b.add(exponent, extra);
    let position = b.convert(position, Scalar::Int);
    b.sub_k(position, 127)
}

/// A finite non-zero f32's mantissa normalised to [2^23, 2^24) and its effective exponent
/// lowered to match ([`normalised_lanes`]), in two new locals.
pub(crate) fn normalised(
    b: &mut FnBuilder,
    x: ExprId,
    name: &str,
) -> (crate::ir::LocalId, crate::ir::LocalId) {
    let (m0, e0) = normalised_lanes(b, x);
    let e = b.local(&format!("e_{name}"), Type::INT, [0; 4]);
    let m = b.local(&format!("m_{name}"), Type::UINT, [0; 4]);
    b.set(e, e0);
    b.set(m, m0);
    (e, m)
}

/// Exact IEEE `a / b` of two f32s by long division: `uint pica_fdiv_exact(uint a, uint b)`.
pub fn div_exact(b: &mut FnBuilder) -> crate::ir::FunctionId {
    let u = Type::UINT;
    b.module.helper(
        "pica_fdiv_exact",
        &[("a", u), ("b", u)],
        Some(u),
        |b, args| {
            let (a, c) = (args[0], args[1]);
            let Operands {
                sign,
                nan_a: na,
                nan_b: nc,
                inf_a: ia,
                inf_b: ic,
                zero_a: za,
                zero_b: zc,
                ..
            } = Operands::of(b, a, c);
            // NaN, inf/inf and 0/0 are NaNs.
            let nan = b.or(na, nc);
            let both_inf = b.and(ia, ic);
            let both_zero = b.and(za, zc);
            let nan = b.or(nan, both_inf);
            let nan = b.or(nan, both_zero);
            b.when(nan, |b| {
                let r = b.uint(QUIET_NAN);
                b.ret(Some(r));
            });
            // inf/x and x/0: an infinity; x/inf and 0/x: a zero.
            let infinite = b.or(ia, zc);
            b.when(infinite, |b| {
                let r = b.or_k(sign, INFINITY);
                b.ret(Some(r));
            });
            let zero = b.or(ic, za);
            b.when(zero, |b| b.ret(Some(sign)));
            let (ea, xa) = normalised(b, a, "a");
            let (ec, xc) = normalised(b, c, "b");
            let ea = b.get(ea);
            let ec = b.get(ec);
            let e = b.sub(ea, ec);
            let bias = b.int(127);
            let e = b.add(e, bias);
            let e_local = b.local("e", Type::INT, [0; 4]);
            b.set(e_local, e);
            let num = b.get(xa);
            let den = b.get(xc);
            let den = b.bind("den", den);
            // A quotient below 1: double the dividend.
            let smaller = b.lt(num, den);
            b.when(smaller, |b| {
                let num = b.get(xa);
                let doubled = b.shl_k(num, 1);
                b.set(xa, doubled);
                let e_now = b.get(e_local);
                let lower = b.sub_k(e_now, 1);
                b.set(e_local, lower);
            });
            // 26 quotient bits (leading at 25), then the remainder as the sticky bit.
            let q = b.local("q", u, [0; 4]);
            let rem = b.local("rem", u, [0; 4]);
            let num = b.get(xa);
            b.set(rem, num);
            // Unrolled: llvmpipe counts a loop's passes across the invocation and stops it
            // after 65535 (docs/gpu-shaders.md, "Loops on llvmpipe").
            b.unrolled(26, |b| {
                let q_now = b.get(q);
                let q2 = b.shl_k(q_now, 1);
                let r_now = b.get(rem);
                let fits = b.ge(r_now, den);
                let bit = b.convert(fits, Scalar::Uint);
                let q3 = b.or(q2, bit);
                b.set(q, q3);
                let r_now = b.get(rem);
                let less = b.sub(r_now, den);
                let r_next = b.select(fits, less, r_now);
                let r_next = b.shl_k(r_next, 1);
                b.set(rem, r_next);
            });
            let q_now = b.get(q);
            let r_now = b.get(rem);
            let inexact = b.ne_k(r_now, 0);
            let sticky = b.convert(inexact, Scalar::Uint);
            let q2 = b.shl_k(q_now, 1);
            let m = b.or(q2, sticky);
            let e_now = b.get(e_local);
            let r = round_and_pack_any(b, sign, e_now, m);
            b.ret(Some(r));
        },
    )
}

/// Exact IEEE square root of an f32, digit by digit: `uint pica_fsqrt_exact(uint x)`.
pub fn sqrt_exact(b: &mut FnBuilder) -> crate::ir::FunctionId {
    let u = Type::UINT;
    b.module
        .helper("pica_fsqrt_exact", &[("x", u)], Some(u), |b, args| {
            let x = args[0];
            let magnitude = b.and_k(x, 0x7FFF_FFFF);
            let magnitude = b.bind("magnitude", magnitude);
            let nan = b.gt_k(magnitude, INFINITY);
            let zero = b.eq_k(magnitude, 0);
            let negative = b.ge_k(x, 0x8000_0000);
            // sqrt(±0) = ±0, sqrt(+inf) = +inf.
            let inf = b.eq_k(x, INFINITY);
            let itself = b.or(zero, inf);
            b.when(itself, |b| b.ret(Some(x)));
            let invalid = b.or(nan, negative);
            b.when(invalid, |b| {
                let r = b.uint(QUIET_NAN);
                b.ret(Some(r));
            });
            let (e, m) = normalised(b, x, "x");
            // Unbiased exponent made even by doubling the mantissa.
            let e_now = b.get(e);
            let unbiased = b.sub_k(e_now, 127);
            let odd = b.and_k(unbiased, 1);
            let odd = b.ne_k(odd, 0);
            b.when(odd, |b| {
                let m_now = b.get(m);
                let doubled = b.shl_k(m_now, 1);
                b.set(m, doubled);
                let e_now = b.get(e);
                let lower = b.sub_k(e_now, 1);
                b.set(e, lower);
            });
            // The root of m·2^29 (27 bits, leading at 26), two input bits a step: the
            // source holds m << 7 and is shifted out from the top, zeros after it.
            let source = b.local("source", u, [0; 4]);
            let m_now = b.get(m);
            let shifted = b.shl_k(m_now, 7);
            b.set(source, shifted);
            let root = b.local("root", u, [0; 4]);
            let rem = b.local("rem", u, [0; 4]);
            // Unrolled: llvmpipe counts a loop's passes across the invocation and stops it
            // after 65535 (docs/gpu-shaders.md, "Loops on llvmpipe").
            b.unrolled(27, |b| {
                let s = b.get(source);
                let pair = b.shr_k(s, 30);
                // Bound: the store below changes what `s` reads.
                let pair = b.bind("pair", pair);
                let s2 = b.shl_k(s, 2);
                b.set(source, s2);
                let r_now = b.get(rem);
                let r4 = b.shl_k(r_now, 2);
                let r4 = b.or(r4, pair);
                let r4 = b.bind("rem", r4);
                let root_now = b.get(root);
                let trial = b.shl_k(root_now, 2);
                let trial = b.or_k(trial, 1);
                let trial = b.bind("trial", trial);
                let fits = b.ge(r4, trial);
                let fits = b.bind("fits", fits);
                let less = b.sub(r4, trial);
                let r_next = b.select(fits, less, r4);
                b.set(rem, r_next);
                let root_now = b.get(root);
                let root2 = b.shl_k(root_now, 1);
                let bit = b.convert(fits, Scalar::Uint);
                let root3 = b.or(root2, bit);
                b.set(root, root3);
            });
            let root_now = b.get(root);
            let r_now = b.get(rem);
            let inexact = b.ne_k(r_now, 0);
            let sticky = b.convert(inexact, Scalar::Uint);
            let mantissa = b.or(root_now, sticky);
            let e_now = b.get(e);
            let unbiased = b.sub_k(e_now, 127);
            let half = b.shr_k(unbiased, 1);
            let bias = b.int(127);
            let biased = b.add(half, bias);
            let zero_sign = b.uint(0);
            let r = round_and_pack(b, zero_sign, biased, mantissa, 3);
            b.ret(Some(r));
        })
}

/// Floor of f32 bits, lane by lane, from the bits alone (subnormals kept: -subnormal floors
/// to -1): `uvec4 pica_floor(uvec4 x)`.
pub fn floor(b: &mut FnBuilder, x: ExprId) -> ExprId {
    let ty = b.ty(x);
    let f = b
        .module
        .helper("pica_floor", &[("x", ty)], Some(ty), |b, args| {
            let x = args[0];
            let magnitude = b.and_k(x, 0x7FFF_FFFF);
            let magnitude = b.bind("magnitude", magnitude);
            let field = b.shr_k(magnitude, 23);
            let field = b.bind("field", field);
            let negative = b.ge_k(x, 0x8000_0000);
            let negative = b.bind("negative", negative);
            // Below 1 in magnitude: ±0 stays, a positive becomes +0, a negative -1.
            let below_one = b.lt_k(field, 127);
            let nonzero = b.ne_k(magnitude, 0);
            let negative_fraction = b.and(negative, nonzero);
            let minus_one = b.like(x, 0xBF80_0000);
            let sign = b.and_k(x, 0x8000_0000);
            let small = b.select(negative_fraction, minus_one, sign);
            // 1 up to 2^23: clear the fraction bits; a negative with a fraction goes one lower,
            // which adding one unit of the integer part's last bit to the magnitude does.
            // Shift amounts kept within 0..23 where the lane takes another result.
            let one_exponent = b.like(x, 127);
            let clamped = b.select(below_one, one_exponent, field);
            let big = b.ge_k(field, 150);
            let last = b.like(x, 150);
            let clamped = b.select(big, last, clamped);
            let fraction_bits = b.sub(last, clamped);
            let fraction_bits = b.bind("fraction_bits", fraction_bits);
            let one = b.like(x, 1);
            let unit = b.shl(one, fraction_bits);
            let unit = b.bind("unit", unit);
            let fraction_mask = b.sub_k(unit, 1);
            let fraction = b.and(x, fraction_mask);
            let has_fraction = b.ne_k(fraction, 0);
            let kept_mask = b.bit_not(fraction_mask);
            let truncated = b.and(x, kept_mask);
            let lower = b.and(negative, has_fraction);
            let stepped = b.add(truncated, unit);
            let integral = b.select(lower, stepped, truncated);
            let result = b.select(below_one, small, integral);
            let result = b.select(big, x, result);
            b.ret(Some(result));
        });
    b.call(f, &[x])
}
