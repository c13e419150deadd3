//! Deterministic EX2 and LG2: pure Rust, no platform libm, so both engines and every host give
//! the same bits.
//!
//! Each function evaluates in f64 using only `+ - * /` (IEEE-exact operations, never contracted
//! into FMA by rustc) and a polynomial whose truncation error is far below f64 precision, then
//! rounds once to f32. The result is the correctly rounded f32 except, possibly, when the exact
//! value lies within about 2^-50 (relative) of an f32 rounding boundary; it is exact at
//! integers (ex2) and powers of two (lg2). The JIT calls these same functions.

/// ln 2 as f64.
const LN_2: f64 = std::f64::consts::LN_2;
/// 1 / ln 2 as f64.
const LOG2_E: f64 = std::f64::consts::LOG2_E;

/// 2^x as f32. ex2(−inf) = 0, ex2(+inf) = +inf, ex2(NaN) = NaN; overflow gives +inf and
/// underflow rounds into the f32 subnormals or to +0 (the range rules then flush).
pub fn exp2(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x >= 128.0 {
        return f32::INFINITY;
    }
    if x < -152.0 {
        return 0.0;
    }
    let x = f64::from(x);
    let n = x.round_ties_even();
    let t = (x - n) * LN_2; // |t| <= ln2 / 2
    // e^t by its Taylor series, Horner form; the t^18 term is below 2^-80 for |t| <= 0.35.
    let mut poly = 1.0;
    for k in (1..=17).rev() {
        poly = 1.0 + poly * t / f64::from(k);
    }
    (poly * pow2(n as i32)) as f32
}

/// log2(x) as f32. lg2(±0) = −inf, lg2(x < 0) = NaN, lg2(+inf) = +inf, lg2(NaN) = NaN.
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
    // f32 subnormals are normal f64 values, so the exponent split below is always exact.
    let bits = f64::from(x).to_bits();
    let mut exponent = ((bits >> 52) & 0x7FF) as i32 - 1023;
    let mut m = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | (1023 << 52)); // [1, 2)
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        exponent += 1;
    }
    // ln m = 2·atanh(s) with s = (m − 1)/(m + 1), |s| <= 0.172: the series in s² converges fast;
    // the s^31 term is below 2^-80.
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut series = 0.0;
    for k in (0..=15).rev() {
        series = 1.0 / f64::from(2 * k + 1) + s2 * series;
    }
    let ln_m = 2.0 * s * series;
    (f64::from(exponent) + ln_m * LOG2_E) as f32
}

/// 2^n as f64 for -1074 <= n <= 1023 by building the bits (n here is always within -152..128).
fn pow2(n: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&n));
    f64::from_bits(((n + 1023) as u64) << 52)
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
