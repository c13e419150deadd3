//! The IEEE operations the float24 rules are built from, as shader functions exact on any host
//! whose float add and multiply are IEEE (docs/gpu-shaders.md, "Exact primitives"):
//!
//! - add and multiply run on the host, each operand and the result passed through the
//!   uniform block's opaque zero, so that no compiler folds a constant into them or fuses a
//!   product into an addition; in f32 mode, where subnormals are values, a lane with a
//!   subnormal operand or a result the host may have flushed is redone in integer arithmetic
//!   ([`add_exact`], [`mul_exact`]), since vertex stages flush subnormals on many hosts;
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

/// The lanes of `fast` where `redo` is false, and `exact(lane)` where it is true: the exact
/// function runs only when some lane needs it.
fn redo_lanes(
    b: &mut FnBuilder,
    fast: ExprId,
    redo: ExprId,
    a: ExprId,
    c: ExprId,
    exact: crate::ir::FunctionId,
) -> ExprId {
    let lanes = b.ty(fast).lanes;
    let result = b.local("result", b.ty(fast), [0; 4]);
    b.set(result, fast);
    let any = b.any(redo);
    b.when(any, |b| {
        for lane in 0..lanes {
            let needed = b.lane(redo, lane);
            b.when(needed, |b| {
                let x = b.lane(a, lane);
                let y = b.lane(c, lane);
                let r = b.call(exact, &[x, y]);
                b.store_lanes(Place::Local(result), &[lane], r);
            });
        }
    });
    b.get(result)
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
            let sa = subnormal(b, a);
            let sc = subnormal(b, c);
            let either = b.or(sa, sc);
            // A flushed result is a zero from operands of different magnitudes.
            let exponent = b.and_k(sum, INFINITY);
            let tiny = b.eq_k(exponent, 0);
            let ma = b.and_k(a, 0x7FFF_FFFF);
            let mc = b.and_k(c, 0x7FFF_FFFF);
            let differ = b.ne(ma, mc);
            let flushed = b.and(tiny, differ);
            let redo = b.or(either, flushed);
            let exact = add_exact(b);
            let r = redo_lanes(b, sum, redo, a, c, exact);
            b.ret(Some(r));
        });
    b.call(f, &[a, c])
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
            let exact = mul_exact(b);
            let r = redo_lanes(b, product, redo, a, c, exact);
            b.ret(Some(r));
        });
    b.call(f, &[a, c])
}

fn suffix(ty: Type, precision: Precision) -> String {
    let mode = if precision.is_f24() { "" } else { "_f32" };
    if ty.lanes == 1 {
        mode.to_string()
    } else {
        format!("{}{mode}", ty.lanes)
    }
}

/// Splits f32 bits into (sign bit, effective biased exponent as int, mantissa with the
/// implicit bit for normals), a subnormal's exponent being 1.
fn unpack(b: &mut FnBuilder, x: ExprId) -> (ExprId, ExprId, ExprId) {
    let sign = b.and_k(x, 0x8000_0000);
    let field = b.shr_k(x, 23);
    let field = b.and_k(field, 0xFF);
    let mantissa = b.and_k(x, MANTISSA);
    let normal = b.ne_k(field, 0);
    let with_implicit = b.or_k(mantissa, IMPLICIT);
    let m = b.select(normal, with_implicit, mantissa);
    let one = b.uint(1);
    let e = b.select(normal, field, one);
    let e = b.convert(e, Scalar::Int);
    (sign, e, m)
}

/// Exact IEEE `a + b` of two f32s in integer arithmetic (round to nearest even, subnormals
/// kept): `uint pica_fadd_exact(uint a, uint b)`.
pub fn add_exact(b: &mut FnBuilder) -> crate::ir::FunctionId {
    let u = Type::UINT;
    b.module.helper(
        "pica_fadd_exact",
        &[("a", u), ("b", u)],
        Some(u),
        |b, args| {
            let (a0, c0) = (args[0], args[1]);
            let fa = b.and_k(a0, INFINITY);
            let fc = b.and_k(c0, INFINITY);
            let ia = b.eq_k(fa, INFINITY);
            let ic = b.eq_k(fc, INFINITY);
            let special = b.or(ia, ic);
            b.when(special, |b| {
                // An infinity or a NaN: a subnormal beside it changes nothing.
                let r = host(b, a0, c0, crate::ir::BinaryOp::Add);
                b.ret(Some(r));
            });
            // Order by magnitude: `a` the larger.
            let ma = b.and_k(a0, 0x7FFF_FFFF);
            let mc = b.and_k(c0, 0x7FFF_FFFF);
            let swap = b.lt(ma, mc);
            let a = b.select(swap, c0, a0);
            let c = b.select(swap, a0, c0);
            let a = b.bind("big", a);
            let c = b.bind("small", c);
            let (sign, ea, xa) = unpack(b, a);
            let (_, ec, xc) = unpack(b, c);
            let sign = b.bind("sign", sign);
            // Three extra bits: guard, round and sticky.
            let xa = b.shl_k(xa, 3);
            let xc = b.shl_k(xc, 3);
            let d = b.sub(ea, ec);
            let d = b.bind("d", d);
            let small = b.local("m_small", u, [0; 4]);
            b.set(small, xc);
            let far = b.ge_k(d, 27);
            b.if_else(
                far,
                |b| {
                    let nonzero = b.ne_k(xc, 0);
                    let sticky = b.convert(nonzero, Scalar::Uint);
                    b.set(small, sticky);
                },
                |b| {
                    let du = b.convert(d, Scalar::Uint);
                    let one = b.uint(1);
                    let bit = b.shl(one, du);
                    let below = b.sub_k(bit, 1);
                    let lost = b.and(xc, below);
                    let lost = b.ne_k(lost, 0);
                    let sticky = b.convert(lost, Scalar::Uint);
                    let shifted = b.shr(xc, du);
                    let v = b.or(shifted, sticky);
                    b.set(small, v);
                },
            );
            let signs = b.xor(a, c);
            let signs = b.shr_k(signs, 31);
            let same = b.eq_k(signs, 0);
            let small_v = b.get(small);
            let plus = b.add(xa, small_v);
            let minus = b.sub(xa, small_v);
            let m0 = b.select(same, plus, minus);
            let m = b.local("m", u, [0; 4]);
            b.set(m, m0);
            let e = b.local("e", Type::INT, [0; 4]);
            b.set(e, ea);
            let m_now = b.get(m);
            let zero = b.eq_k(m_now, 0);
            b.when(zero, |b| {
                // An exact zero: +0, but -0 + -0 = -0.
                let both_negative = b.and(a, c);
                let r = b.and_k(both_negative, 0x8000_0000);
                b.ret(Some(r));
            });
            let m_now = b.get(m);
            let carry = b.ge_k(m_now, 1 << 27);
            b.if_else(
                carry,
                |b| {
                    let m_now = b.get(m);
                    let low = b.and_k(m_now, 1);
                    let half = b.shr_k(m_now, 1);
                    let v = b.or(half, low);
                    b.set(m, v);
                    let e_now = b.get(e);
                    let e1 = b.add_k(e_now, 1);
                    b.set(e, e1);
                },
                |b| {
                    b.forever(|b| {
                        let m_now = b.get(m);
                        let normal = b.ge_k(m_now, 1 << 26);
                        let e_now = b.get(e);
                        let lowest = b.le_k(e_now, 1);
                        let done = b.or(normal, lowest);
                        b.when(done, |b| b.brk());
                        let m_now = b.get(m);
                        let doubled = b.shl_k(m_now, 1);
                        b.set(m, doubled);
                        let e_now = b.get(e);
                        let e1 = b.sub_k(e_now, 1);
                        b.set(e, e1);
                    });
                },
            );
            let m_now = b.get(m);
            let e_now = b.get(e);
            let r = round_and_pack(b, sign, e_now, m_now, 3);
            b.ret(Some(r));
        },
    )
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

/// Exact IEEE `a * b` of two f32s in integer arithmetic: `uint pica_fmul_exact(uint a,
/// uint b)`.
pub fn mul_exact(b: &mut FnBuilder) -> crate::ir::FunctionId {
    let u = Type::UINT;
    b.module.helper(
        "pica_fmul_exact",
        &[("a", u), ("b", u)],
        Some(u),
        |b, args| {
            let (a, c) = (args[0], args[1]);
            let fa = b.and_k(a, INFINITY);
            let fc = b.and_k(c, INFINITY);
            let ia = b.eq_k(fa, INFINITY);
            let ic = b.eq_k(fc, INFINITY);
            let special = b.or(ia, ic);
            let ma = b.and_k(a, 0x7FFF_FFFF);
            let mc = b.and_k(c, 0x7FFF_FFFF);
            let za = b.eq_k(ma, 0);
            let zc = b.eq_k(mc, 0);
            let xs = b.xor(a, c);
            let sign = b.and_k(xs, 0x8000_0000);
            let sign = b.bind("sign", sign);
            b.when(special, |b| {
                // inf·0 is a NaN (the rule makes it +0), a NaN stays one.
                let na = b.gt_k(ma, INFINITY);
                let nc = b.gt_k(mc, INFINITY);
                let nan = b.or(na, nc);
                let zero = b.or(za, zc);
                let nan = b.or(nan, zero);
                let nan_bits = b.uint(QUIET_NAN);
                let inf = b.or_k(sign, INFINITY);
                let r = b.select(nan, nan_bits, inf);
                b.ret(Some(r));
            });
            let zero = b.or(za, zc);
            b.when(zero, |b| b.ret(Some(sign)));
            // Subnormal factors normalised: the leading bit at 23.
            let (ea, fa_m) = normalised(b, a, "a");
            let (ec, fc_m) = normalised(b, c, "b");
            let ea = b.get(ea);
            let ec = b.get(ec);
            let e = b.local("e", Type::INT, [0; 4]);
            let e0 = b.add(ea, ec);
            let e0 = b.sub_k(e0, 127);
            b.set(e, e0);
            let ma = b.get(fa_m);
            let mb = b.get(fc_m);
            let ma = b.bind("ma", ma);
            let mb = b.bind("mb", mb);
            // The 48-bit product from 12-bit pieces: hi (16 bits) : lo (32 bits).
            let a1 = b.shr_k(ma, 12);
            let a0 = b.and_k(ma, 0xFFF);
            let b1 = b.shr_k(mb, 12);
            let b0 = b.and_k(mb, 0xFFF);
            let p11 = b.mul(a1, b1);
            let p10 = b.mul(a1, b0);
            let p01 = b.mul(a0, b1);
            let p00 = b.mul(a0, b0);
            let p11 = b.bind("p11", p11);
            let p00 = b.bind("p00", p00);
            let mid = b.add(p10, p01);
            let mid = b.bind("mid", mid);
            let mid_low = b.and_k(mid, 0xF_FFFF);
            let mid_low = b.shl_k(mid_low, 12);
            let mid_high = b.shr_k(mid, 20);
            let lo1 = b.add(p00, mid_low);
            let lo1 = b.bind("lo", lo1);
            let c1 = b.lt(lo1, p00);
            let c1 = b.convert(c1, Scalar::Uint);
            let p11_low = b.and_k(p11, 0xFF);
            let p11_low = b.shl_k(p11_low, 24);
            let p11_high = b.shr_k(p11, 8);
            let lo2 = b.add(lo1, p11_low);
            let lo2 = b.bind("lo", lo2);
            let c2 = b.lt(lo2, lo1);
            let c2 = b.convert(c2, Scalar::Uint);
            let hi = b.add(p11_high, mid_high);
            let hi = b.add(hi, c1);
            let hi = b.add(hi, c2);
            let hi = b.bind("hi", hi);
            // The leading bit at 47: when it is at 46, shift left once; else the exponent
            // is one more.
            let top = b.ge_k(hi, 0x8000);
            let hi_shifted = b.shl_k(hi, 1);
            let lo_top = b.shr_k(lo2, 31);
            let hi_shifted = b.or(hi_shifted, lo_top);
            let lo_shifted = b.shl_k(lo2, 1);
            let hi = b.select(top, hi, hi_shifted);
            let lo = b.select(top, lo2, lo_shifted);
            let hi = b.bind("hi", hi);
            let lo = b.bind("lo", lo);
            let e_now = b.get(e);
            let e_next = b.add_k(e_now, 1);
            let e1 = b.select(top, e_next, e_now);
            let e1 = b.bind("e", e1);
            // 24 kept bits and 24 below them.
            let hi8 = b.shl_k(hi, 8);
            let lo_top = b.shr_k(lo, 24);
            let kept = b.or(hi8, lo_top);
            let kept = b.bind("kept", kept);
            let below = b.and_k(lo, 0xFF_FFFF);
            let below = b.bind("below", below);
            let one = b.int(1);
            let subnormal = b.lt(e1, one);
            b.when(subnormal, |b| {
                // Shift right by 1 - e more, into the subnormals.
                let s = b.sub(one, e1);
                let s = b.bind("s", s);
                let gone = b.gt_k(s, 24);
                b.when(gone, |b| b.ret(Some(sign)));
                let su = b.convert(s, Scalar::Uint);
                let su = b.bind("s", su);
                let s1 = b.sub_k(su, 1);
                let guard = b.shr(kept, s1);
                let guard = b.and_k(guard, 1);
                let one_u = b.uint(1);
                let span = b.shl(one_u, s1);
                let under = b.sub_k(span, 1);
                let lost = b.and(kept, under);
                let lost = b.or(lost, below);
                let sticky = b.ne_k(lost, 0);
                let m = b.shr(kept, su);
                let m = b.bind("m", m);
                let odd = b.and_k(m, 1);
                let odd = b.ne_k(odd, 0);
                let guard = b.ne_k(guard, 0);
                let tail = b.or(sticky, odd);
                let up = b.and(guard, tail);
                let up = b.convert(up, Scalar::Uint);
                let m = b.add(m, up);
                // A subnormal (or, after a carry, 2^-126) is its mantissa's bits.
                let r = b.or(sign, m);
                b.ret(Some(r));
            });
            let guard = b.shr_k(below, 23);
            let guard = b.ne_k(guard, 0);
            let rest = b.and_k(below, 0x7F_FFFF);
            let sticky = b.ne_k(rest, 0);
            let odd = b.and_k(kept, 1);
            let odd = b.ne_k(odd, 0);
            let tail = b.or(sticky, odd);
            let up = b.and(guard, tail);
            let up = b.convert(up, Scalar::Uint);
            let m = b.add(kept, up);
            let r = pack(b, sign, e1, m);
            b.ret(Some(r));
        },
    )
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

/// A finite non-zero f32's mantissa normalised to [2^23, 2^24) and its effective exponent
/// lowered to match, in two new locals.
pub(crate) fn normalised(
    b: &mut FnBuilder,
    x: ExprId,
    name: &str,
) -> (crate::ir::LocalId, crate::ir::LocalId) {
    let (_, e0, m0) = unpack(b, x);
    let e = b.local(&format!("e_{name}"), Type::INT, [0; 4]);
    let m = b.local(&format!("m_{name}"), Type::UINT, [0; 4]);
    b.set(e, e0);
    b.set(m, m0);
    b.forever(|b| {
        let now = b.get(m);
        let normal = b.ge_k(now, IMPLICIT);
        b.when(normal, |b| b.brk());
        let now = b.get(m);
        let doubled = b.shl_k(now, 1);
        b.set(m, doubled);
        let e_now = b.get(e);
        let lower = b.sub_k(e_now, 1);
        b.set(e, lower);
    });
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
            let ma = b.and_k(a, 0x7FFF_FFFF);
            let mc = b.and_k(c, 0x7FFF_FFFF);
            let ma = b.bind("abs_a", ma);
            let mc = b.bind("abs_b", mc);
            let xs = b.xor(a, c);
            let sign = b.and_k(xs, 0x8000_0000);
            let sign = b.bind("sign", sign);
            let na = b.gt_k(ma, INFINITY);
            let nc = b.gt_k(mc, INFINITY);
            let ia = b.eq_k(ma, INFINITY);
            let ic = b.eq_k(mc, INFINITY);
            let za = b.eq_k(ma, 0);
            let zc = b.eq_k(mc, 0);
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
            let step = b.local("step", Type::INT, [0; 4]);
            b.forever(|b| {
                let n = b.get(step);
                let done = b.ge_k(n, 26);
                b.when(done, |b| b.brk());
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
                let n = b.get(step);
                let n1 = b.add_k(n, 1);
                b.set(step, n1);
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
            let step = b.local("step", Type::INT, [0; 4]);
            b.forever(|b| {
                let n = b.get(step);
                let done = b.ge_k(n, 27);
                b.when(done, |b| b.brk());
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
                let n = b.get(step);
                let n1 = b.add_k(n, 1);
                b.set(step, n1);
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
