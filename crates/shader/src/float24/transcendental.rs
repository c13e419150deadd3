//! Deterministic EX2 and LG2: pure Rust, no platform libm, so every engine and every host give
//! the same bits.
//!
//! Each function evaluates in f64 using only `+ - * /` (IEEE-exact operations, never contracted
//! into FMA) and a polynomial whose truncation error is far below f64 precision, then rounds
//! once to f32. The result is the correctly rounded f32 except, possibly, when the exact value
//! lies within about 2^-50 (relative) of an f32 rounding boundary; it is exact at integers
//! (ex2) and powers of two (lg2).
//!
//! The f64 part is written once, over [`WideOps`]: [`exp2`] and [`log2`] run it on one `f64`,
//! and the JITs emit the same operations in the same order as code (on one `f64`, or on `f64x2`
//! vectors), so they agree bit for bit.

/// ln 2 as f64.
const LN_2: f64 = std::f64::consts::LN_2;
/// 1 / ln 2 as f64.
const LOG2_E: f64 = std::f64::consts::LOG2_E;
/// 2^52: an integer below it added to it lands in the mantissa bits.
const TWO_52: f64 = 4_503_599_627_370_496.0;
/// 1.5 · 2^52: a small signed integer added to it lands in the low mantissa bits.
const SIGNED_MAGIC: f64 = 6_755_399_441_055_744.0;
/// Below this EX2 is +0 (2^-152 rounds to 0 in f32).
pub const EXP2_UNDERFLOW: f32 = -152.0;
/// At and above this EX2 is +inf.
pub const EXP2_OVERFLOW: f32 = 128.0;

/// 2^f = e^(f·ln2) by its Taylor series, as a polynomial in f: (ln2)^k / k!, k = 0..=14. For
/// |f| <= 1/2 the first term left out ((f·ln2)^15 / 15!) is below 2^-63.
pub const EXP2_TERMS: [f64; 15] = {
    let mut terms = [1.0; 15];
    let mut k = 1;
    while k < terms.len() {
        terms[k] = terms[k - 1] * LN_2 / k as f64;
        k += 1;
    }
    terms
};

/// log2(m) = 2·atanh(s) / ln2 with s = (m − 1)/(m + 1), as s times a series in s²:
/// 2·log2(e) / (2k + 1), k = 0..=11. For |s| <= 0.172 the first term left out (s^24 / 25
/// and the factor) is below 2^-64.
pub const LOG2_TERMS: [f64; 12] = {
    let mut terms = [1.0; 12];
    let mut k = 0;
    while k < terms.len() {
        terms[k] = 2.0 * LOG2_E / (2 * k + 1) as f64;
        k += 1;
    }
    terms
};

/// The f64 operations EX2 and LG2 are made of, on one value ([`exp2`], [`log2`]) or on a vector
/// of them (the JIT). `Bits` is the value's bit pattern as an integer, `Mask` a comparison's
/// result.
pub trait WideOps {
    /// An f64 value (or a vector of them).
    type Float: Copy;
    /// A value's bit pattern as a u64 (or a vector of them).
    type Bits: Copy;
    /// A comparison's result.
    type Mask: Copy;
    /// The constant `value`.
    fn splat(&mut self, value: f64) -> Self::Float;
    /// IEEE `a + b`.
    fn add(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    /// IEEE `a - b`.
    fn sub(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    /// IEEE `a * b`, never fused with an addition.
    fn mul(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    /// IEEE `a / b`.
    fn div(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    /// `a > b`.
    fn greater(&mut self, a: Self::Float, b: Self::Float) -> Self::Mask;
    /// `mask ? a : b`.
    fn select(&mut self, mask: Self::Mask, a: Self::Float, b: Self::Float) -> Self::Float;
    /// The bit pattern of `a`.
    fn float_to_bits(&mut self, a: Self::Float) -> Self::Bits;
    /// The value with bit pattern `a`.
    fn bits_to_float(&mut self, a: Self::Bits) -> Self::Float;
    /// Wrapping addition of a constant.
    fn bits_add(&mut self, a: Self::Bits, k: u64) -> Self::Bits;
    /// `a & k`.
    fn bits_and(&mut self, a: Self::Bits, k: u64) -> Self::Bits;
    /// `a | k`.
    fn bits_or(&mut self, a: Self::Bits, k: u64) -> Self::Bits;
    /// `a << amount`.
    fn bits_shl(&mut self, a: Self::Bits, amount: u32) -> Self::Bits;
    /// `a >> amount`, logical.
    fn bits_shr(&mut self, a: Self::Bits, amount: u32) -> Self::Bits;
}

/// The polynomial with coefficients `terms` (lowest power first, at most 16) at `x`, by Estrin's
/// scheme: neighbouring terms paired as `c0 + c1·x`, then pairs of those joined with x², x⁴, …
/// A chain of about log2(N) multiply-adds instead of Horner's N: the scalar engines wait on
/// this chain, so its depth is their time (docs/execution-model.md, EX2 and LG2).
fn estrin<O: WideOps, const N: usize>(o: &mut O, terms: &[f64; N], x: O::Float) -> O::Float {
    const { assert!(N >= 1 && N <= 16) };
    let pair = |o: &mut O, k: usize| {
        let low = o.splat(terms[2 * k]);
        if 2 * k + 1 == N {
            return low;
        }
        let high = o.splat(terms[2 * k + 1]);
        let product = o.mul(high, x);
        o.add(product, low)
    };
    let first = pair(o, 0);
    let mut level = [first; 8];
    let mut len = N.div_ceil(2);
    for (k, slot) in level.iter_mut().enumerate().take(len).skip(1) {
        *slot = pair(o, k);
    }
    let mut power = x;
    while len > 1 {
        power = o.mul(power, power);
        for k in 0..len.div_ceil(2) {
            level[k] = if 2 * k + 1 == len {
                level[2 * k]
            } else {
                let product = o.mul(level[2 * k + 1], power);
                o.add(product, level[2 * k])
            };
        }
        len = len.div_ceil(2);
    }
    level[0]
}

/// 2^x in f64 for x in [-152, 128]: n = nearest(x), 2^(x − n) by its Taylor series in x − n
/// ([`EXP2_TERMS`], by Estrin's scheme), times 2^n built from bits. x + 1.5·2^52 rounds x to the
/// nearest integer, ties to even, and holds it in its low mantissa bits: one addition gives
/// both n and the bits of 2^n.
pub fn exp2_core<O: WideOps>(o: &mut O, x: O::Float) -> O::Float {
    let magic = o.splat(SIGNED_MAGIC);
    let shifted = o.add(x, magic);
    let n = o.sub(shifted, magic);
    let fraction = o.sub(x, n);
    let poly = estrin(o, &EXP2_TERMS, fraction);
    let bits = o.float_to_bits(shifted);
    let biased = o.bits_add(bits, 1023u64.wrapping_sub(SIGNED_MAGIC.to_bits()));
    let power_bits = o.bits_shl(biased, 52);
    let power = o.bits_to_float(power_bits);
    o.mul(poly, power)
}

/// log2(x) in f64 for positive, finite, nonzero x (a normal f64: every f32 is one): x = m·2^e
/// with m in (√2/2, √2], log2(m) = s times the polynomial [`LOG2_TERMS`] in s², with
/// s = (m − 1)/(m + 1).
pub fn log2_core<O: WideOps>(o: &mut O, x: O::Float) -> O::Float {
    let bits = o.float_to_bits(x);
    let biased = o.bits_shr(bits, 52);
    let biased = o.bits_and(biased, 0x7FF);
    // The biased exponent as an f64, exactly: 2^52 + e − 2^52.
    let plus = o.bits_or(biased, TWO_52.to_bits());
    let plus = o.bits_to_float(plus);
    let two_52 = o.splat(TWO_52);
    let biased = o.sub(plus, two_52);
    let bias = o.splat(1023.0);
    let exponent = o.sub(biased, bias);
    let mantissa = o.bits_and(bits, 0x000F_FFFF_FFFF_FFFF);
    let mantissa = o.bits_or(mantissa, 1023 << 52);
    let m = o.bits_to_float(mantissa); // [1, 2)
    let sqrt2 = o.splat(std::f64::consts::SQRT_2);
    let above = o.greater(m, sqrt2);
    let half = o.splat(0.5);
    let halved = o.mul(m, half);
    let m = o.select(above, halved, m);
    let one = o.splat(1.0);
    let next = o.add(exponent, one);
    let exponent = o.select(above, next, exponent);
    let numerator = o.sub(m, one);
    let denominator = o.add(m, one);
    let s = o.div(numerator, denominator);
    let s2 = o.mul(s, s);
    let series = estrin(o, &LOG2_TERMS, s2);
    let log2_m = o.mul(s, series);
    o.add(exponent, log2_m)
}

/// [`WideOps`] on one f64.
struct Scalar;

impl WideOps for Scalar {
    type Float = f64;
    type Bits = u64;
    type Mask = bool;
    fn splat(&mut self, value: f64) -> f64 {
        value
    }
    fn add(&mut self, a: f64, b: f64) -> f64 {
        a + b
    }
    fn sub(&mut self, a: f64, b: f64) -> f64 {
        a - b
    }
    fn mul(&mut self, a: f64, b: f64) -> f64 {
        a * b
    }
    fn div(&mut self, a: f64, b: f64) -> f64 {
        a / b
    }
    fn greater(&mut self, a: f64, b: f64) -> bool {
        a > b
    }
    fn select(&mut self, mask: bool, a: f64, b: f64) -> f64 {
        if mask { a } else { b }
    }
    fn float_to_bits(&mut self, a: f64) -> u64 {
        a.to_bits()
    }
    fn bits_to_float(&mut self, a: u64) -> f64 {
        f64::from_bits(a)
    }
    fn bits_add(&mut self, a: u64, k: u64) -> u64 {
        a.wrapping_add(k)
    }
    fn bits_and(&mut self, a: u64, k: u64) -> u64 {
        a & k
    }
    fn bits_or(&mut self, a: u64, k: u64) -> u64 {
        a | k
    }
    fn bits_shl(&mut self, a: u64, amount: u32) -> u64 {
        a << amount
    }
    fn bits_shr(&mut self, a: u64, amount: u32) -> u64 {
        a >> amount
    }
}

/// 2^x as f32. ex2(−inf) = 0, ex2(+inf) = +inf, ex2(NaN) = NaN; overflow gives +inf and
/// underflow rounds into the f32 subnormals or to +0 (the range rules then flush).
#[inline]
pub fn exp2(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x >= EXP2_OVERFLOW {
        return f32::INFINITY;
    }
    if x < EXP2_UNDERFLOW {
        return 0.0;
    }
    exp2_core(&mut Scalar, f64::from(x)) as f32
}

/// log2(x) as f32. lg2(±0) = −inf, lg2(x < 0) = NaN, lg2(+inf) = +inf, lg2(NaN) = NaN.
#[inline]
pub fn log2(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x == 0.0 {
        return f32::NEG_INFINITY;
    }
    if x < 0.0 {
        return f32::NAN;
    }
    if x == f32::INFINITY {
        return f32::INFINITY;
    }
    log2_core(&mut Scalar, f64::from(x)) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2^n for every n with an f32 (subnormals included), built from bits.
    fn exact_pow2(n: i32) -> f32 {
        if n >= -126 {
            f32::from_bits(((n + 127) as u32) << 23)
        } else {
            f32::from_bits(1 << (n + 149))
        }
    }

    #[test]
    fn exp2_is_exact_at_integers() {
        for n in -149..128 {
            assert_eq!(exp2(n as f32), exact_pow2(n), "2^{n}");
        }
        assert_eq!(exp2(128.0), f32::INFINITY);
        assert_eq!(exp2(-150.0), 0.0);
    }

    #[test]
    fn exp2_special_values() {
        assert_eq!(exp2(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp2(f32::INFINITY), f32::INFINITY);
        assert!(exp2(f32::NAN).is_nan());
        assert_eq!(exp2(-0.0), 1.0);
    }

    #[test]
    fn log2_is_exact_at_powers_of_two() {
        for n in -149..128 {
            assert_eq!(log2(exact_pow2(n)), n as f32, "log2(2^{n})");
        }
    }

    #[test]
    fn log2_special_values() {
        assert_eq!(log2(0.0), f32::NEG_INFINITY);
        assert_eq!(log2(-0.0), f32::NEG_INFINITY);
        assert!(log2(-1.0).is_nan());
        assert!(log2(f32::NEG_INFINITY).is_nan());
        assert_eq!(log2(f32::INFINITY), f32::INFINITY);
    }

    /// An independent check against the correctly rounded value computed from f64 `exp2`/`log2`
    /// (within one f32 ulp: the platform libm is itself only faithful, so exact equality with it is
    /// not a valid oracle).
    #[test]
    fn agree_with_f64_libm_within_one_ulp() {
        let mut x = -140.0f32;
        while x < 127.0 {
            let ours = exp2(x);
            let reference = (x as f64).exp2() as f32;
            assert!(
                ours.to_bits().abs_diff(reference.to_bits()) <= 1,
                "exp2({x})"
            );
            x += 0.0137;
        }
        let mut y = 1.0e-30f32;
        while y < 1.0e30 {
            let ours = log2(y);
            let reference = (y as f64).log2() as f32;
            assert!(
                ours.to_bits().abs_diff(reference.to_bits()) <= 1,
                "log2({y})"
            );
            y *= 1.0173;
        }
    }
}
