//! EX2 and LG2 on the host GPU, bit for bit the model's: [`shader::float24::transcendental`]
//! evaluates in f64 over [`WideOps`], and here those operations are f64 arithmetic in integer
//! words (an f64 is a `uvec2`: low word, high word), since GLSL ES and most GPUs have no f64.
//! The evaluation itself is the model's, run at translation time ([`exp2_core`],
//! [`log2_core`]); what is here is IEEE f64 add, multiply and divide (round to nearest even)
//! for the values those cores meet, zeros and normal numbers, and the exact conversions
//! between f32 and f64.

use shader::float24::transcendental::{
    EXP2_OVERFLOW, EXP2_UNDERFLOW, WideOps, exp2_core, log2_core,
};

use crate::ir::build::FnBuilder;
use crate::ir::{ExprId, FunctionId, Scalar, Type};
use crate::primitives::{INFINITY, QUIET_NAN};

const U2: Type = Type::UVEC2;

/// A `uvec2` constant holding the 64 bits `k`.
fn wide(b: &mut FnBuilder, k: u64) -> ExprId {
    b.constant(U2, [k as u32, (k >> 32) as u32, 0, 0])
}

fn words(b: &mut FnBuilder, x: ExprId) -> (ExprId, ExprId) {
    (b.lane(x, 0), b.lane(x, 1))
}

fn join(b: &mut FnBuilder, lo: ExprId, hi: ExprId) -> ExprId {
    b.construct(U2, &[lo, hi])
}

/// 64-bit wrapping addition.
fn add64(b: &mut FnBuilder, x: ExprId, y: ExprId) -> ExprId {
    let (xl, xh) = words(b, x);
    let (yl, yh) = words(b, y);
    let lo = b.add(xl, yl);
    let lo = b.bind("lo", lo);
    let carry = b.lt(lo, xl);
    let carry = b.convert(carry, Scalar::Uint);
    let hi = b.add(xh, yh);
    let hi = b.add(hi, carry);
    join(b, lo, hi)
}

/// 64-bit wrapping subtraction.
fn sub64(b: &mut FnBuilder, x: ExprId, y: ExprId) -> ExprId {
    let (xl, xh) = words(b, x);
    let (yl, yh) = words(b, y);
    let lo = b.sub(xl, yl);
    let borrow = b.lt(xl, yl);
    let borrow = b.convert(borrow, Scalar::Uint);
    let hi = b.sub(xh, yh);
    let hi = b.sub(hi, borrow);
    join(b, lo, hi)
}

/// Unsigned 64-bit `x < y`.
fn lt64(b: &mut FnBuilder, x: ExprId, y: ExprId) -> ExprId {
    let (xl, xh) = words(b, x);
    let (yl, yh) = words(b, y);
    let high_less = b.lt(xh, yh);
    let high_equal = b.eq(xh, yh);
    let low_less = b.lt(xl, yl);
    let tie = b.and(high_equal, low_less);
    b.or(high_less, tie)
}

/// `x << n` on two words, `n` an `int` in 0-63.
fn shl64(b: &mut FnBuilder, x: ExprId, n: ExprId) -> ExprId {
    let (lo, hi) = words(b, x);
    let n = b.convert(n, Scalar::Uint);
    let n = b.bind("n", n);
    // Every shift amount is kept within 0-31 (GLSL leaves 32 and more undefined); the
    // selects pick the case that applies.
    let wide_shift = b.ge_k(n, 32);
    let wide_shift = b.bind("wide_shift", wide_shift);
    let small = b.and_k(n, 31);
    let small = b.bind("small", small);
    let none = b.eq_k(small, 0);
    let thirty_two = b.uint(32);
    let back = b.sub(thirty_two, small);
    let back = b.and_k(back, 31);
    let carried = b.shr(lo, back);
    let zero = b.uint(0);
    let carried = b.select(none, zero, carried);
    let hi_small = b.shl(hi, small);
    let hi_small = b.or(hi_small, carried);
    let lo_small = b.shl(lo, small);
    let hi_wide = b.shl(lo, small);
    let new_hi = b.select(wide_shift, hi_wide, hi_small);
    let new_lo = b.select(wide_shift, zero, lo_small);
    join(b, new_lo, new_hi)
}

/// `x << k` for a constant `k` below 64.
fn shl64_k(b: &mut FnBuilder, x: ExprId, k: u32) -> ExprId {
    let (lo, hi) = words(b, x);
    match k {
        0 => x,
        1..=31 => {
            let h = b.shl_k(hi, k);
            let carried = b.shr_k(lo, 32 - k);
            let h = b.or(h, carried);
            let l = b.shl_k(lo, k);
            join(b, l, h)
        }
        _ => {
            let h = b.shl_k(lo, k - 32);
            let zero = b.uint(0);
            join(b, zero, h)
        }
    }
}

/// `x >> k` (logical) for a constant `k` below 64.
fn shr64_k(b: &mut FnBuilder, x: ExprId, k: u32) -> ExprId {
    let (lo, hi) = words(b, x);
    match k {
        0 => x,
        1..=31 => {
            let l = b.shr_k(lo, k);
            let carried = b.shl_k(hi, 32 - k);
            let l = b.or(l, carried);
            let h = b.shr_k(hi, k);
            join(b, l, h)
        }
        _ => {
            let l = b.shr_k(hi, k - 32);
            let zero = b.uint(0);
            join(b, l, zero)
        }
    }
}

/// `x` with each word and-ed (or or-ed) with the constant `k`'s.
fn bitwise64_k(b: &mut FnBuilder, x: ExprId, k: u64, or: bool) -> ExprId {
    let k = wide(b, k);
    if or { b.or(x, k) } else { b.and(x, k) }
}

/// `x >> d` with the bits shifted out kept as a sticky lowest bit, `d` a uint:
/// `uvec2 pica_u64_shr_sticky(uvec2 x, uint d)`.
fn shr_sticky(b: &mut FnBuilder) -> FunctionId {
    b.module.helper(
        "pica_u64_shr_sticky",
        &[("x", U2), ("d", Type::UINT)],
        Some(U2),
        |b, args| {
            let (x, d) = (args[0], args[1]);
            let (lo, hi) = words(b, x);
            let none = b.eq_k(d, 0);
            b.when(none, |b| b.ret(Some(x)));
            let all = b.ge_k(d, 64);
            b.when(all, |b| {
                let any = b.or(lo, hi);
                let sticky = b.ne_k(any, 0);
                let sticky = b.convert(sticky, Scalar::Uint);
                let zero = b.uint(0);
                let r = join(b, sticky, zero);
                b.ret(Some(r));
            });
            let one = b.uint(1);
            let zero = b.uint(0);
            let low_half = b.lt_k(d, 32);
            b.when(low_half, |b| {
                // 1 <= d <= 31.
                let thirty_two = b.uint(32);
                let up = b.sub(thirty_two, d);
                let l = b.shr(lo, d);
                let carried = b.shl(hi, up);
                let l = b.or(l, carried);
                let h = b.shr(hi, d);
                let span = b.shl(one, d);
                let under = b.sub_k(span, 1);
                let lost = b.and(lo, under);
                let lost = b.ne_k(lost, 0);
                let lost = b.convert(lost, Scalar::Uint);
                let l = b.or(l, lost);
                let r = join(b, l, h);
                b.ret(Some(r));
            });
            // 32 <= d <= 63.
            let e = b.sub_k(d, 32);
            let e = b.bind("e", e);
            let l = b.shr(hi, e);
            let span = b.shl(one, e);
            let under = b.sub_k(span, 1);
            let lost_high = b.and(hi, under);
            let lost = b.or(lost_high, lo);
            let lost = b.ne_k(lost, 0);
            let lost = b.convert(lost, Scalar::Uint);
            let l = b.or(l, lost);
            let r = join(b, l, zero);
            b.ret(Some(r));
        },
    )
}

/// The sign bit of f64 `x` (in the high word's position).
fn sign_of(b: &mut FnBuilder, x: ExprId) -> ExprId {
    let hi = b.lane(x, 1);
    b.and_k(hi, 0x8000_0000)
}

/// Whether f64 `x` is ±0.
fn is_zero(b: &mut FnBuilder, x: ExprId) -> ExprId {
    let (lo, hi) = words(b, x);
    let magnitude = b.and_k(hi, 0x7FFF_FFFF);
    let any = b.or(magnitude, lo);
    b.eq_k(any, 0)
}

/// The biased exponent of f64 `x` (an int) and its 53-bit mantissa with the implicit bit.
fn unpack(b: &mut FnBuilder, x: ExprId) -> (ExprId, ExprId) {
    let (lo, hi) = words(b, x);
    let field = b.shr_k(hi, 20);
    let field = b.and_k(field, 0x7FF);
    let e = b.convert(field, Scalar::Int);
    let top = b.and_k(hi, 0xF_FFFF);
    let top = b.or_k(top, 0x10_0000);
    (e, join(b, lo, top))
}

/// sign | the f64 with biased exponent `e` (an int; below 1, a zero) and the 56-bit mantissa `m`
/// (leading bit at 55; the three low bits guard, round and sticky), rounded to nearest even.
fn round_and_pack(b: &mut FnBuilder, sign: ExprId, e: ExprId, m: ExprId) -> ExprId {
    let (lo, _) = words(b, m);
    let rest = b.and_k(lo, 7);
    let kept = shr64_k(b, m, 3);
    let kept = b.bind("kept", kept);
    let kept_lo = b.lane(kept, 0);
    let odd = b.and_k(kept_lo, 1);
    let odd = b.ne_k(odd, 0);
    let above = b.gt_k(rest, 4);
    let tie = b.eq_k(rest, 4);
    let tie_up = b.and(tie, odd);
    let up = b.or(above, tie_up);
    let up = b.convert(up, Scalar::Uint);
    let zero = b.uint(0);
    let up = join(b, up, zero);
    let rounded = add64(b, kept, up);
    // (e - 1) << 52 plus the mantissa with its implicit bit: a carry raises the exponent.
    let e1 = b.sub_k(e, 1);
    let e1 = b.convert(e1, Scalar::Uint);
    let field = b.shl_k(e1, 20);
    let field = join(b, zero, field);
    let bits = add64(b, field, rounded);
    let (lo, hi) = words(b, bits);
    let hi = b.or(hi, sign);
    let packed = join(b, lo, hi);
    // Below 2^-1022 the result is a signed zero, not an f64 subnormal. Only EX2's high powers
    // of a tiny fraction get there (f32 mode, a subnormal or tiny x), and each is then added to
    // a sum near 1, which neither it nor a zero can change: the result is the same.
    let least = b.int(1);
    let under = b.lt(e, least);
    let nothing = b.uint(0);
    let signed_zero = join(b, nothing, sign);
    let under = b.broadcast(under, 2);
    b.select(under, signed_zero, packed)
}

/// IEEE f64 `a + b` for zeros and normal numbers: `uvec2 pica_dadd(uvec2 a, uvec2 b)`.
fn dadd(b: &mut FnBuilder) -> FunctionId {
    let shift = shr_sticky(b);
    b.module
        .helper("pica_dadd", &[("a", U2), ("b", U2)], Some(U2), |b, args| {
            let (a0, c0) = (args[0], args[1]);
            let za = is_zero(b, a0);
            let zc = is_zero(b, c0);
            b.when(zc, |b| {
                // x + ±0 = x, but +0 + -0 = +0.
                let both = b.and(a0, c0);
                let sign = b.lane(both, 1);
                let sign = b.and_k(sign, 0x8000_0000);
                let zero = b.uint(0);
                let signed_zero = join(b, zero, sign);
                let r = b.select(za, signed_zero, a0);
                b.ret(Some(r));
            });
            b.when(za, |b| b.ret(Some(c0)));
            // `a` the larger in magnitude.
            let magnitude_mask = wide(b, 0x7FFF_FFFF_FFFF_FFFF);
            let ma = b.and(a0, magnitude_mask);
            let mc = b.and(c0, magnitude_mask);
            let swap = lt64(b, ma, mc);
            let a = b.select(swap, c0, a0);
            let c = b.select(swap, a0, c0);
            let a = b.bind("big", a);
            let c = b.bind("small", c);
            let sign = sign_of(b, a);
            let sign = b.bind("sign", sign);
            let (ea, xa) = unpack(b, a);
            let (ec, xc) = unpack(b, c);
            let ea = b.bind("ea", ea);
            let xa = shl64_k(b, xa, 3);
            let xc = shl64_k(b, xc, 3);
            let d = b.sub(ea, ec);
            let d = b.convert(d, Scalar::Uint);
            let xc = b.call(shift, &[xc, d]);
            let xa = b.bind("xa", xa);
            let xc = b.bind("xc", xc);
            let signs = b.xor(a, c);
            let signs = b.lane(signs, 1);
            let same = b.lt_k(signs, 0x8000_0000);
            let plus = add64(b, xa, xc);
            let minus = sub64(b, xa, xc);
            let sum = b.select(same, plus, minus);
            let m = b.local("m", U2, [0; 4]);
            b.set(m, sum);
            let e = b.local("e", Type::INT, [0; 4]);
            b.set(e, ea);
            let now = b.get(m);
            let zero = is_zero_words(b, now);
            b.when(zero, |b| {
                let r = wide(b, 0);
                b.ret(Some(r));
            });
            let now = b.get(m);
            let hi = b.lane(now, 1);
            let carry = b.ge_k(hi, 1 << 24);
            b.if_else(
                carry,
                |b| {
                    let now = b.get(m);
                    let one = b.uint(1);
                    let halved = b.call(shift, &[now, one]);
                    b.set(m, halved);
                    let e_now = b.get(e);
                    let e1 = b.add_k(e_now, 1);
                    b.set(e, e1);
                },
                |b| {
                    // Normalise the leading bit to 55 in one shift, no loop (llvmpipe counts a
                    // loop's passes across the invocation: docs/gpu-shaders.md).
                    let now = b.get(m);
                    let now = b.bind("sum", now);
                    let (lo, hi) = words(b, now);
                    let high_part = b.ne_k(hi, 0);
                    let high_part = b.bind("high_part", high_part);
                    let word = b.select(high_part, hi, lo);
                    let top = crate::primitives::highest_bit(b, word);
                    let thirty_two = b.int(32);
                    let none = b.int(0);
                    let above = b.select(high_part, thirty_two, none);
                    let top = b.add(top, above);
                    let k55 = b.int(55);
                    let shift = b.sub(k55, top);
                    let shift = b.bind("shift", shift);
                    let shifted = shl64(b, now, shift);
                    b.set(m, shifted);
                    let e_now = b.get(e);
                    let e1 = b.sub(e_now, shift);
                    b.set(e, e1);
                },
            );
            let now = b.get(m);
            let e_now = b.get(e);
            let r = round_and_pack(b, sign, e_now, now);
            b.ret(Some(r));
        })
}

/// Whether both words of `x` are zero.
fn is_zero_words(b: &mut FnBuilder, x: ExprId) -> ExprId {
    let (lo, hi) = words(b, x);
    let any = b.or(lo, hi);
    b.eq_k(any, 0)
}

/// IEEE f64 `a * b` for zeros and normal numbers with a normal or zero product:
/// `uvec2 pica_dmul(uvec2 a, uvec2 b)`.
fn dmul(b: &mut FnBuilder) -> FunctionId {
    b.module
        .helper("pica_dmul", &[("a", U2), ("b", U2)], Some(U2), |b, args| {
            let (a, c) = (args[0], args[1]);
            let xs = b.xor(a, c);
            let sign = sign_of(b, xs);
            let sign = b.bind("sign", sign);
            let za = is_zero(b, a);
            let zc = is_zero(b, c);
            let zero = b.or(za, zc);
            b.when(zero, |b| {
                let none = b.uint(0);
                let r = join(b, none, sign);
                b.ret(Some(r));
            });
            let (ea, xa) = unpack(b, a);
            let (ec, xc) = unpack(b, c);
            let xa = b.bind("ma", xa);
            let xc = b.bind("mb", xc);
            // 16-bit limbs, the product's columns, then the carries.
            let limbs = |b: &mut FnBuilder, x: ExprId| -> Vec<ExprId> {
                let (lo, hi) = words(b, x);
                let l0 = b.and_k(lo, 0xFFFF);
                let l1 = b.shr_k(lo, 16);
                let l2 = b.and_k(hi, 0xFFFF);
                let l3 = b.shr_k(hi, 16);
                vec![l0, l1, l2, l3]
            };
            let la = limbs(b, xa);
            let lc = limbs(b, xc);
            let mut columns: Vec<Option<ExprId>> = vec![None; 9];
            let mut add_to = |b: &mut FnBuilder, k: usize, v: ExprId| {
                columns[k] = Some(match columns[k] {
                    Some(sum) => b.add(sum, v),
                    None => v,
                });
            };
            for (i, &x) in la.iter().enumerate() {
                for (j, &y) in lc.iter().enumerate() {
                    let p = b.mul(x, y);
                    let p = b.bind("p", p);
                    let low = b.and_k(p, 0xFFFF);
                    let high = b.shr_k(p, 16);
                    add_to(b, i + j, low);
                    add_to(b, i + j + 1, high);
                }
            }
            let mut limbs_out = Vec::with_capacity(8);
            let mut carry: Option<ExprId> = None;
            for column in columns.iter().take(8) {
                let mut v = column.expect("every column has a product");
                if let Some(c) = carry {
                    v = b.add(v, c);
                }
                let v = b.bind("col", v);
                limbs_out.push(b.and_k(v, 0xFFFF));
                carry = Some(b.shr_k(v, 16));
            }
            let word = |b: &mut FnBuilder, k: usize| {
                let high = b.shl_k(limbs_out[2 * k + 1], 16);
                let w = b.or(limbs_out[2 * k], high);
                b.bind("w", w)
            };
            let w0 = word(b, 0);
            let w1 = word(b, 1);
            let w2 = word(b, 2);
            let w3 = word(b, 3);
            // The product is below 2^106: its top bit is 105 (bit 9 of w3) or 104.
            let top = b.ge_k(w3, 1 << 9);
            let pick = |b: &mut FnBuilder, shift: u32| {
                // kept = product >> (53 - 1 + shift): shift 1 when the top bit is 105.
                let k = 20 + shift;
                let hi_a = b.shl_k(w3, 32 - k);
                let hi_b = b.shr_k(w2, k);
                let hi = b.or(hi_a, hi_b);
                let lo_a = b.shl_k(w2, 32 - k);
                let lo_b = b.shr_k(w1, k);
                let lo = b.or(lo_a, lo_b);
                let guard = b.shr_k(w1, k - 1);
                let guard = b.and_k(guard, 1);
                let rest = b.and_k(w1, (1 << (k - 1)) - 1);
                let rest = b.or(rest, w0);
                let sticky = b.ne_k(rest, 0);
                let sticky = b.convert(sticky, Scalar::Uint);
                // 53 kept bits, guard, round (0) and sticky as three extra bits.
                let kept = join(b, lo, hi);
                let kept = shl64_k(b, kept, 3);
                let guard = b.shl_k(guard, 2);
                let low = b.or(guard, sticky);
                let zero = b.uint(0);
                let low = join(b, low, zero);
                b.or(kept, low)
            };
            let high = pick(b, 1);
            let low = pick(b, 0);
            let m = b.select(top, high, low);
            let e = b.add(ea, ec);
            let e_high = b.sub_k(e, 1022);
            let e_low = b.sub_k(e, 1023);
            let e = b.select(top, e_high, e_low);
            let r = round_and_pack(b, sign, e, m);
            b.ret(Some(r));
        })
}

/// IEEE f64 `a / b` for a zero or normal `a`, a normal `b` and a normal or zero quotient:
/// `uvec2 pica_ddiv(uvec2 a, uvec2 b)`.
fn ddiv(b: &mut FnBuilder) -> FunctionId {
    b.module
        .helper("pica_ddiv", &[("a", U2), ("b", U2)], Some(U2), |b, args| {
            let (a, c) = (args[0], args[1]);
            let xs = b.xor(a, c);
            let sign = sign_of(b, xs);
            let sign = b.bind("sign", sign);
            let za = is_zero(b, a);
            b.when(za, |b| {
                let none = b.uint(0);
                let r = join(b, none, sign);
                b.ret(Some(r));
            });
            let (ea, xa) = unpack(b, a);
            let (ec, xc) = unpack(b, c);
            let xc = b.bind("den", xc);
            let e = b.local("e", Type::INT, [0; 4]);
            let e0 = b.sub(ea, ec);
            let e0 = b.add_k(e0, 1023);
            b.set(e, e0);
            let rem = b.local("rem", U2, [0; 4]);
            b.set(rem, xa);
            let now = b.get(rem);
            let smaller = lt64(b, now, xc);
            b.when(smaller, |b| {
                let now = b.get(rem);
                let doubled = shl64_k(b, now, 1);
                b.set(rem, doubled);
                let e_now = b.get(e);
                let e1 = b.sub_k(e_now, 1);
                b.set(e, e1);
            });
            // 55 quotient bits (leading at 54), then the remainder as the sticky bit.
            let q = b.local("q", U2, [0; 4]);
            // Unrolled: llvmpipe counts a loop's passes across the invocation and stops it
            // after 65535 (docs/gpu-shaders.md, "Loops on llvmpipe").
            b.unrolled(55, |b| {
                let r_now = b.get(rem);
                let r_now = b.bind("rem", r_now);
                let below = lt64(b, r_now, xc);
                let fits = b.not(below);
                let fits = b.bind("fits", fits);
                let q_now = b.get(q);
                let q2 = shl64_k(b, q_now, 1);
                let bit = b.convert(fits, Scalar::Uint);
                let zero = b.uint(0);
                let bit = join(b, bit, zero);
                let q3 = b.or(q2, bit);
                b.set(q, q3);
                let less = sub64(b, r_now, xc);
                let r_next = b.select(fits, less, r_now);
                let r_next = shl64_k(b, r_next, 1);
                b.set(rem, r_next);
            });
            let q_now = b.get(q);
            let r_now = b.get(rem);
            let inexact = is_zero_words(b, r_now);
            let inexact = b.not(inexact);
            let sticky = b.convert(inexact, Scalar::Uint);
            let q2 = shl64_k(b, q_now, 1);
            let zero = b.uint(0);
            let sticky = join(b, sticky, zero);
            let m = b.or(q2, sticky);
            let e_now = b.get(e);
            let r = round_and_pack(b, sign, e_now, m);
            b.ret(Some(r));
        })
}

/// f64 `a > b` for zeros and normal numbers: `bool pica_dgt(uvec2 a, uvec2 b)`.
fn dgt(b: &mut FnBuilder) -> FunctionId {
    b.module.helper(
        "pica_dgt",
        &[("a", U2), ("b", U2)],
        Some(Type::BOOL),
        |b, args| {
            let (a, c) = (args[0], args[1]);
            let za = is_zero(b, a);
            let zc = is_zero(b, c);
            let both_zero = b.and(za, zc);
            let sa = sign_of(b, a);
            let sc = sign_of(b, c);
            let na = b.ne_k(sa, 0);
            let nc = b.ne_k(sc, 0);
            let magnitude_mask = wide(b, 0x7FFF_FFFF_FFFF_FFFF);
            let ma = b.and(a, magnitude_mask);
            let mc = b.and(c, magnitude_mask);
            let a_greater = lt64(b, mc, ma);
            let a_less = lt64(b, ma, mc);
            // Different signs: the positive one is greater (unless both are zeros).
            let not_na = b.not(na);
            let signs_differ = b.and(not_na, nc);
            let positive_greater = signs_differ;
            let same = b.eq(na, nc);
            let when_positive = b.and(not_na, a_greater);
            let when_negative = b.and(na, a_less);
            let same_result = b.or(when_positive, when_negative);
            let same_result = b.and(same, same_result);
            let r = b.or(positive_greater, same_result);
            let not_zeros = b.not(both_zero);
            let r = b.and(r, not_zeros);
            b.ret(Some(r));
        },
    )
}

/// [`WideOps`] on soft f64 values.
struct SoftDouble<'a, 'm> {
    b: &'a mut FnBuilder<'m>,
}

impl WideOps for SoftDouble<'_, '_> {
    type Float = ExprId;
    type Bits = ExprId;
    type Mask = ExprId;

    fn splat(&mut self, value: f64) -> ExprId {
        wide(self.b, value.to_bits())
    }
    fn add(&mut self, a: ExprId, c: ExprId) -> ExprId {
        let f = dadd(self.b);
        self.b.call(f, &[a, c])
    }
    fn sub(&mut self, a: ExprId, c: ExprId) -> ExprId {
        let f = dadd(self.b);
        let flip = wide(self.b, 1 << 63);
        let negated = self.b.xor(c, flip);
        self.b.call(f, &[a, negated])
    }
    fn mul(&mut self, a: ExprId, c: ExprId) -> ExprId {
        let f = dmul(self.b);
        self.b.call(f, &[a, c])
    }
    fn div(&mut self, a: ExprId, c: ExprId) -> ExprId {
        let f = ddiv(self.b);
        self.b.call(f, &[a, c])
    }
    fn greater(&mut self, a: ExprId, c: ExprId) -> ExprId {
        let f = dgt(self.b);
        self.b.call(f, &[a, c])
    }
    fn select(&mut self, mask: ExprId, a: ExprId, c: ExprId) -> ExprId {
        self.b.select(mask, a, c)
    }
    fn float_to_bits(&mut self, a: ExprId) -> ExprId {
        a
    }
    fn bits_to_float(&mut self, a: ExprId) -> ExprId {
        a
    }
    fn bits_add(&mut self, a: ExprId, k: u64) -> ExprId {
        let k = wide(self.b, k);
        add64(self.b, a, k)
    }
    fn bits_and(&mut self, a: ExprId, k: u64) -> ExprId {
        bitwise64_k(self.b, a, k, false)
    }
    fn bits_or(&mut self, a: ExprId, k: u64) -> ExprId {
        bitwise64_k(self.b, a, k, true)
    }
    fn bits_shl(&mut self, a: ExprId, amount: u32) -> ExprId {
        shl64_k(self.b, a, amount)
    }
    fn bits_shr(&mut self, a: ExprId, amount: u32) -> ExprId {
        shr64_k(self.b, a, amount)
    }
}

/// f32 bits `x` (finite) as an f64, exactly; f32 subnormals become normal f64s:
/// `uvec2 pica_widen(uint x)`.
fn widen(b: &mut FnBuilder, x: ExprId) -> ExprId {
    let f = b
        .module
        .helper("pica_widen", &[("x", Type::UINT)], Some(U2), |b, args| {
            let x = args[0];
            let sign = b.and_k(x, 0x8000_0000);
            let sign = b.bind("sign", sign);
            let magnitude = b.and_k(x, 0x7FFF_FFFF);
            let zero = b.eq_k(magnitude, 0);
            b.when(zero, |b| {
                let none = b.uint(0);
                let r = join(b, none, sign);
                b.ret(Some(r));
            });
            // Subnormals normalised: the leading bit at 23, the exponent lowered to match.
            let (e, m) = crate::primitives::normalised(b, x, "x");
            let m_now = b.get(m);
            let m_now = b.and_k(m_now, 0x7F_FFFF);
            let m_now = b.bind("mantissa", m_now);
            let e_now = b.get(e);
            let e64 = b.add_k(e_now, 1023 - 127);
            let e64 = b.convert(e64, Scalar::Uint);
            // Mantissa: 23 bits into the top of 52: 20 in the high word, 3 at the top of the low.
            let top = b.shr_k(m_now, 3);
            let field64 = b.shl_k(e64, 20);
            let hi = b.or(field64, top);
            let hi = b.or(hi, sign);
            let lo = b.shl_k(m_now, 29);
            let r = join(b, lo, hi);
            b.ret(Some(r));
        });
    b.call(f, &[x])
}

/// f64 `x` (zero or normal) rounded to the nearest f32, ties to even, subnormal results and
/// overflow to infinity included.
fn narrow(b: &mut FnBuilder, x: ExprId) -> ExprId {
    let (lo, hi) = words(b, x);
    let sign = b.and_k(hi, 0x8000_0000);
    let sign = b.bind("sign", sign);
    let zero = is_zero(b, x);
    b.when(zero, |b| b.ret(Some(sign)));
    let (e, m) = unpack(b, x);
    // 27 bits of the mantissa (leading at 26) and the other 26 as a sticky bit.
    let m27 = shr64_k(b, m, 26);
    let m27 = b.lane(m27, 0);
    let rest = b.and_k(lo, (1 << 26) - 1);
    let inexact = b.ne_k(rest, 0);
    let sticky = b.convert(inexact, Scalar::Uint);
    let m27 = b.or(m27, sticky);
    let f = b.sub_k(e, 1023 - 127);
    let _ = hi;
    crate::primitives::round_and_pack_any(b, sign, f, m27)
}

/// EX2 of f32 bits, as [`shader::float24::transcendental::exp2`]: `uint pica_exp2(uint x)`.
pub fn exp2(b: &mut FnBuilder) -> FunctionId {
    let u = Type::UINT;
    b.module
        .helper("pica_exp2", &[("x", u)], Some(u), |b, args| {
            let x = args[0];
            let magnitude = b.and_k(x, 0x7FFF_FFFF);
            let nan = b.gt_k(magnitude, INFINITY);
            b.when(nan, |b| b.ret(Some(x)));
            let negative = b.ge_k(x, 0x8000_0000);
            let positive = b.not(negative);
            let big = b.ge_k(x, EXP2_OVERFLOW.to_bits());
            let big = b.and(positive, big);
            b.when(big, |b| {
                let r = b.uint(INFINITY);
                b.ret(Some(r));
            });
            let small = b.gt_k(magnitude, (-EXP2_UNDERFLOW).to_bits());
            let small = b.and(negative, small);
            b.when(small, |b| {
                let r = b.uint(0);
                b.ret(Some(r));
            });
            let wide_x = widen(b, x);
            let wide_x = b.bind("x64", wide_x);
            let r = exp2_core(&mut SoftDouble { b }, wide_x);
            let r = b.bind("r64", r);
            narrow_return(b, r);
        })
}

/// LG2 of f32 bits, as [`shader::float24::transcendental::log2`]: `uint pica_log2(uint x)`.
pub fn log2(b: &mut FnBuilder) -> FunctionId {
    let u = Type::UINT;
    b.module
        .helper("pica_log2", &[("x", u)], Some(u), |b, args| {
            let x = args[0];
            let magnitude = b.and_k(x, 0x7FFF_FFFF);
            let nan = b.gt_k(magnitude, INFINITY);
            b.when(nan, |b| b.ret(Some(x)));
            let zero = b.eq_k(magnitude, 0);
            b.when(zero, |b| {
                let r = b.uint(0xFF80_0000);
                b.ret(Some(r));
            });
            let negative = b.ge_k(x, 0x8000_0000);
            b.when(negative, |b| {
                let r = b.uint(QUIET_NAN);
                b.ret(Some(r));
            });
            let inf = b.eq_k(x, INFINITY);
            b.when(inf, |b| b.ret(Some(x)));
            let wide_x = widen(b, x);
            let wide_x = b.bind("x64", wide_x);
            let r = log2_core(&mut SoftDouble { b }, wide_x);
            let r = b.bind("r64", r);
            narrow_return(b, r);
        })
}

/// Returns f64 `r` narrowed to f32 bits.
fn narrow_return(b: &mut FnBuilder, r: ExprId) {
    let f = b
        .module
        .helper("pica_narrow", &[("x", U2)], Some(Type::UINT), |b, args| {
            let x = args[0];
            let r = narrow(b, x);
            b.ret(Some(r));
        });
    let v = b.call(f, &[r]);
    b.ret(Some(v));
}
