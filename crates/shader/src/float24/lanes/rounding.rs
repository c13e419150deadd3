//! A value becoming a register value: the input flush, rounding and the range rules, the
//! flagging forms a fast path uses, and the product that makes inf·0 = 0.

use super::*;

/// The input flush of arithmetic instructions: in the float24 modes a value below the smallest
/// normal float24 (2^-62) in magnitude, float24 subnormals included, reads as +0.
#[inline(always)]
pub fn flush<L: Elements>(l: &mut L, v: L::Float, precision: Precision) -> L::Float {
    if !precision.is_f24() {
        return v;
    }
    if let Some(flushed) = l.flushed_already(v) {
        return flushed;
    }
    let bits = l.bits_of(v);
    let small = below_min_normal(l, bits);
    let r = l.clear_where(small, bits);
    let r = l.float_of(r);
    l.note_flush(v, r);
    r
}

/// Whether each element's magnitude is below the smallest normal float24 (2^-62): a float24
/// subnormal or zero, which the model reads (flush) as +0.
#[inline(always)]
pub(super) fn below_min_normal<L: Elements>(l: &mut L, bits: L::Bits) -> L::Mask {
    let magnitude_mask = l.splat_bits(MAGNITUDE_BITS);
    let magnitude = l.and(bits, magnitude_mask);
    let min_normal = l.splat_bits(MIN_NORMAL_BITS);
    l.magnitude_below(magnitude, min_normal)
}

/// The mantissa rounding of the float24 modes on an f32's bits, before the range rules and
/// before the dropped bits are cleared: truncation keeps the bits as they are; nearest-even adds
/// half an ulp of the 16-bit mantissa, plus one when the kept lsb is odd (ties go to even), so
/// that a carry moves into the exponent as it should. Clearing [`DROPPED_MANTISSA_BITS`] of the
/// result gives the rounded value.
#[inline(always)]
pub(super) fn round_mantissa_uncleared<L: Elements>(
    l: &mut L,
    bits: L::Bits,
    precision: Precision,
) -> L::Bits {
    if precision == Precision::F24Nearest {
        let shifted = l.shift_right(bits, 7);
        let one = l.splat_bits(1);
        let lsb = l.and(shifted, one);
        let half = l.splat_bits(DROPPED_MANTISSA_BITS >> 1);
        let sum = l.add_bits(bits, half);
        l.add_bits(sum, lsb)
    } else {
        bits
    }
}

/// The least non-NaN magnitude (f32 bits) whose mantissa rounding in a float24 `precision` is at
/// least `bound`, a multiple of the dropped bits' span (0x80). Truncation reaches `bound` from
/// `bound` itself; nearest-even from half a span below, or from one more when the kept value
/// below `bound` is even (its tie rounds down). This lets the range rules test the unrounded
/// magnitude, beside the rounding rather than after it (docs/architecture.md, "Rounding off the
/// critical path").
// Inlined wherever a rule is instantiated: called at run time by every rounding of the
// interpreter and the vectorised interpreter, and out of line it cost the interpreter 7%.
#[inline(always)]
pub(super) const fn least_rounding_to(bound: u32, precision: Precision) -> u32 {
    let span = DROPPED_MANTISSA_BITS + 1;
    match precision {
        Precision::F24Nearest => {
            let kept_below_is_odd = (bound - span) & span != 0;
            bound - span / 2 + if kept_below_is_odd { 0 } else { 1 }
        }
        _ => bound,
    }
}

/// The range rules' bounds on the unrounded magnitude in a float24 `precision`: a magnitude below
/// the first rounds below 2^-62 (→ +0); one above the second rounds beyond the largest finite
/// float24 (→ ±inf).
#[inline(always)]
pub(super) const fn range_bounds(precision: Precision) -> (u32, u32) {
    (
        least_rounding_to(MIN_NORMAL_BITS, precision),
        least_rounding_to(MAX_FINITE_BITS + DROPPED_MANTISSA_BITS + 1, precision) - 1,
    )
}

/// The rounding of a float24 `precision` with the small-value rule (below 2^-62, −0 included →
/// +0) applied, on a non-NaN value's `bits` whose `magnitude` is given: the dropped bits and,
/// where the value rounds below 2^-62, all bits cleared. The small test reads the unrounded
/// magnitude, so it runs beside the rounding; nearest-even then clears both with one mask.
#[inline(always)]
pub(super) fn rounded_not_small<L: Elements>(
    l: &mut L,
    bits: L::Bits,
    magnitude: L::Bits,
    precision: Precision,
) -> L::Bits {
    let (least_normal, _) = range_bounds(precision);
    let least_normal = l.splat_bits(least_normal);
    let small = l.magnitude_below(magnitude, least_normal);
    let keep = l.splat_bits(!DROPPED_MANTISSA_BITS);
    let uncleared = round_mantissa_uncleared(l, bits, precision);
    if precision == Precision::F24Nearest {
        let keep_unless_small = l.clear_where(small, keep);
        l.and(uncleared, keep_unless_small)
    } else {
        // Truncation has nothing to wait for: clearing after the mask is as short a path.
        let rounded = l.and(uncleared, keep);
        l.clear_where(small, rounded)
    }
}

/// An arithmetic result becoming a register value: NaN becomes the canonical NaN; in the float24
/// modes the mantissa keeps 16 bits (truncated, or rounded to nearest even) and then the range
/// rules apply: below 2^-62 in magnitude → +0, beyond the largest finite float24 → ±inf.
#[inline(always)]
pub fn round<L: Elements>(l: &mut L, v: L::Float, precision: Precision) -> L::Float {
    let nan = l.is_nan(v);
    let canonical = l.splat_bits(CANONICAL_NAN_BITS);
    let bits = l.bits_of(v);
    let result = rounded_in_range(l, bits, precision);
    let r = l.select(nan, canonical, result);
    let r = l.float_of(r);
    if precision.is_f24() {
        l.note_flushed(r);
    }
    l.note_rounded(r);
    r
}

/// [`round`] for a fast path that leaves the rare cases to an exact one: the result is exact in
/// every element that is not flagged, and `unusual` gains (at least) the elements whose result
/// is a NaN or (float24 modes) an infinity, whose value here is meaningless. In the float24 modes the flag is
/// "the unrounded magnitude is beyond the largest finite float24" (NaN and infinity included),
/// which also flags a few values that round to a finite one; the small-value rule (below
/// 2^-62, −0 included → +0) is applied here, since zeros are common.
#[inline(always)]
pub fn round_flagging<L: Elements>(
    l: &mut L,
    v: L::Float,
    precision: Precision,
    unusual: &mut Option<L::Mask>,
) -> L::Float {
    let bits = l.bits_of(v);
    let (flag, result) = match precision {
        Precision::F32 => (l.is_nan(v), bits),
        Precision::F24Truncate | Precision::F24Nearest => {
            let magnitude_mask = l.splat_bits(MAGNITUDE_BITS);
            let magnitude = l.and(bits, magnitude_mask);
            let max_finite = l.splat_bits(MAX_FINITE_BITS);
            let big = l.magnitude_above(magnitude, max_finite);
            (big, rounded_not_small(l, bits, magnitude, precision))
        }
    };
    flag_elements(l, unusual, flag);
    let r = l.float_of(result);
    if precision.is_f24() {
        l.note_flushed(r);
    }
    l.note_rounded(r);
    r
}

/// Adds the elements of `flag` to a fast path's flagged elements.
#[inline(always)]
pub(super) fn flag_elements<L: Elements>(l: &mut L, unusual: &mut Option<L::Mask>, flag: L::Mask) {
    *unusual = Some(match *unusual {
        Some(earlier) => l.either(earlier, flag),
        None => flag,
    });
}

/// [`round`] for a fast path that keeps the sign of a zero ([`FlaggingSignedZeros`]): in the
/// float24 modes the dropped mantissa bits are cleared and nothing else; the range rules are
/// left to the flags `fin` accumulates (the unrounded magnitude beyond the largest finite
/// float24, or below 2^-62 without being zero: under nearest-even that includes a few that
/// round up to 2^-62), so the result is the rule's wherever they do not flag it, except that a
/// zero result keeps its sign (−0 where the rule gives +0).
/// In f32 mode it is [`round_flagging`].
#[inline(always)]
pub fn round_flagging_signed_zeros<L: Elements>(
    l: &mut L,
    v: L::Float,
    precision: Precision,
    fin: &mut FlaggingSignedZeros<L::Bits, L::Mask>,
) -> L::Float {
    if !precision.is_f24() {
        return round_flagging(l, v, precision, &mut fin.unusual);
    }
    let bits = l.bits_of(v);
    let magnitude = fin.note_least(l, bits);
    if fin.checks == Checks::Results {
        fin.note_largest(l, magnitude);
    }
    let uncleared = round_mantissa_uncleared(l, bits, precision);
    let keep = l.splat_bits(!DROPPED_MANTISSA_BITS);
    let rounded = l.and(uncleared, keep);
    let r = l.float_of(rounded);
    // Flushed up to the sign of a zero: see [`FlaggingSignedZeros`].
    l.note_flushed(r);
    r
}

/// [`round`] for a fast path that leaves only NaNs to an exact engine: the result is exact in
/// every element that is not flagged (infinities and the range rules included), and `unusual`
/// gains the elements whose result is a NaN.
#[inline(always)]
pub fn round_flagging_nan<L: Elements>(
    l: &mut L,
    v: L::Float,
    precision: Precision,
    unusual: &mut Option<L::Mask>,
) -> L::Float {
    let flag = l.is_nan(v);
    let bits = l.bits_of(v);
    let result = rounded_in_range(l, bits, precision);
    flag_elements(l, unusual, flag);
    let r = l.float_of(result);
    if precision.is_f24() {
        l.note_flushed(r);
    }
    l.note_rounded(r);
    r
}

/// A non-NaN result's bits as a register holds them: in the float24 modes rounded and then put
/// through the range rules, in f32 mode unchanged ([`round`] without its NaN rule). Both range
/// rules test the unrounded magnitude against [`range_bounds`], beside the rounding.
#[inline(always)]
pub(super) fn rounded_in_range<L: Elements>(
    l: &mut L,
    bits: L::Bits,
    precision: Precision,
) -> L::Bits {
    match precision {
        Precision::F32 => bits,
        Precision::F24Truncate | Precision::F24Nearest => {
            let magnitude_mask = l.splat_bits(MAGNITUDE_BITS);
            let magnitude = l.and(bits, magnitude_mask);
            let (_, greatest_finite) = range_bounds(precision);
            let greatest_finite = l.splat_bits(greatest_finite);
            let big = l.magnitude_above(magnitude, greatest_finite);
            let sign_mask = l.splat_bits(SIGN_BIT);
            let sign = l.and(bits, sign_mask);
            let infinity = l.splat_bits(INFINITY_BITS);
            let signed_infinity = l.or(sign, infinity);
            let rounded = rounded_not_small(l, bits, magnitude, precision);
            l.select(big, signed_infinity, rounded)
        }
    }
}

/// The multiply of the shader units: a NaN product of two non-NaN factors (inf·0) is +0.
#[inline(always)]
pub fn sanitized_mul<L: Elements>(l: &mut L, a: L::Float, b: L::Float) -> L::Float {
    let product = l.fmul(a, b);
    let product_nan = l.is_nan(product);
    let factors_numbers = l.both_numbers(a, b);
    let zero_it = l.both(product_nan, factors_numbers);
    let bits = l.bits_of(product);
    let r = l.clear_where(zero_it, bits);
    l.float_of(r)
}
