//! The float24 arithmetic rules, written once for every engine.
//!
//! Each rule (the input flush, the inf·0 = 0 multiply, rounding and the range rules, the order
//! in which a dot product sums) is a function generic over [`Lanes`], a small abstraction of four
//! f32 lanes and their bit patterns. [`Exact`] implements it on plain arrays, and the reference
//! interpreter computes with it; the JIT implements it with Cranelift vector IR values, so the
//! code it emits is these same functions run at compile time. A structure-of-arrays engine, whose
//! vectors hold one component of several vertices, implements [`Elements`] (the element-wise
//! operations) and uses the `_each` rules and [`dot_sum`]; an engine holding one register per
//! vector implements [`Lanes`] too. Neither restates a rule. Each rule also has a `_by` form
//! finished by a [`Finish`]: [`Exactly`] is the rule itself, [`Flagging`] a fast path's variant
//! that is exact wherever it does not flag an element (the vectorised interpreter's).
//!
//! The rules are docs/execution-model.md §1, §2 and §7; the bit-level constants they use are the
//! parent module's.

use super::{
    CANONICAL_NAN_BITS, DROPPED_MANTISSA_BITS, MAX_FINITE_BITS, MIN_NORMAL_BITS, Precision,
    transcendental,
};

/// The sign bit of an f32.
pub const SIGN_BIT: u32 = 0x8000_0000;
/// Every bit of an f32 but the sign.
pub const MAGNITUDE_BITS: u32 = 0x7FFF_FFFF;
/// The bits of +infinity.
pub const INFINITY_BITS: u32 = 0x7F80_0000;
/// The bits of 2^64, the least magnitude beyond the float24 range (the input flush makes it an
/// infinity).
pub const BEYOND_FLOAT24_BITS: u32 = 0x5F80_0000;

/// The greatest magnitude an operand of [`Checks::Operands`] may have: 2^30. A product of two
/// is at most 2^60, a dot product's sum at most 2^62, short of the largest finite float24.
pub const OPERAND_GREATEST_BITS: u32 = 0x4E80_0000;
/// The least non-zero magnitude a product or sum of [`Checks::Operands`] (and an operand not
/// known flushed) may have: 2^-46. The float24 rounding of such a product is a multiple of
/// 2^-62, and so is every sum of them: a dot product's sums are never non-zero below 2^-62.
pub const CHECKED_LEAST_BITS: u32 = 0x2880_0000;

/// Whether every lane of `v` is +0 or has a magnitude within [2^-46, 2^30]
/// ([`CHECKED_LEAST_BITS`], [`OPERAND_GREATEST_BITS`]): an operand [`Checks::Operands`] would
/// not flag, and that the input flush leaves as it is (so not −0). The scalar JIT's
/// whole-invocation fast form reads uniforms known so without checking them.
#[inline]
pub fn within_operand_bounds(v: [f32; 4]) -> bool {
    v.iter().all(|lane| {
        let bits = lane.to_bits();
        bits == 0 || (CHECKED_LEAST_BITS..=OPERAND_GREATEST_BITS).contains(&(bits & MAGNITUDE_BITS))
    })
}

/// The registers among `registers` (bit n: c`n`) whose every lane is
/// [`within_operand_bounds`].
pub fn uniforms_within_operand_bounds(floats: &[[f32; 4]], registers: u128) -> u128 {
    let mut within = 0;
    let mut left = registers;
    while left != 0 {
        let n = left.trailing_zeros() as usize;
        left &= left - 1;
        if floats.get(n).is_some_and(|&v| within_operand_bounds(v)) {
            within |= 1 << n;
        }
    }
    within
}

/// Whether an input value is unusual for the fast finishes ([`Flagging`], [`FlaggingNan`]) in
/// `precision`: a NaN, and in the float24 modes also an infinity or a magnitude beyond the
/// float24 range (in f32 mode infinities are exact on the fast path). Results computed from one
/// are the ones they flag; a batch engine runs vertices with such inputs apart on the exact
/// rules (docs/batches.md, "Unusual vertices").
pub fn is_unusual_input(value: f32, precision: Precision) -> bool {
    let magnitude = value.to_bits() & MAGNITUDE_BITS;
    if precision.is_f24() {
        magnitude >= BEYOND_FLOAT24_BITS
    } else {
        magnitude > INFINITY_BITS
    }
}

/// Independent f32 elements (four lanes of one register, or one component of several vertices)
/// and the operations the element-wise rules need. Integer operations act on the elements' bit
/// patterns; a mask holds one predicate per element.
pub trait Elements {
    /// The f32 elements.
    type Float: Copy;
    /// Their 32-bit bit patterns.
    type Bits: Copy;
    /// One predicate per element.
    type Mask: Copy;

    /// The elements' bit patterns.
    fn bits_of(&mut self, v: Self::Float) -> Self::Bits;
    /// Elements from bit patterns.
    fn float_of(&mut self, v: Self::Bits) -> Self::Float;
    /// `bits` in every element.
    fn splat_bits(&mut self, bits: u32) -> Self::Bits;
    /// Bitwise and.
    fn and(&mut self, a: Self::Bits, b: Self::Bits) -> Self::Bits;
    /// Bitwise or.
    fn or(&mut self, a: Self::Bits, b: Self::Bits) -> Self::Bits;
    /// Wrapping integer addition.
    fn add_bits(&mut self, a: Self::Bits, b: Self::Bits) -> Self::Bits;
    /// Logical shift right.
    fn shift_right(&mut self, a: Self::Bits, amount: u32) -> Self::Bits;
    /// Unsigned `a < b`.
    fn below(&mut self, a: Self::Bits, b: Self::Bits) -> Self::Mask;
    /// Unsigned `a > b`.
    fn above(&mut self, a: Self::Bits, b: Self::Bits) -> Self::Mask;
    /// Whether an element is a NaN.
    fn is_nan(&mut self, a: Self::Float) -> Self::Mask;
    /// Whether an element is not a NaN.
    fn is_number(&mut self, a: Self::Float) -> Self::Mask;
    /// Predicate and.
    fn both(&mut self, a: Self::Mask, b: Self::Mask) -> Self::Mask;
    /// Whether neither element is a NaN (one comparison on most hosts).
    #[inline(always)]
    fn both_numbers(&mut self, a: Self::Float, b: Self::Float) -> Self::Mask {
        let a = self.is_number(a);
        let b = self.is_number(b);
        self.both(a, b)
    }
    /// Predicate or.
    fn either(&mut self, a: Self::Mask, b: Self::Mask) -> Self::Mask;
    /// `mask ? a : b`, element by element.
    fn select(&mut self, mask: Self::Mask, a: Self::Bits, b: Self::Bits) -> Self::Bits;
    /// IEEE addition (round to nearest even), element by element.
    fn fadd(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    /// IEEE multiplication.
    fn fmul(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    /// IEEE division.
    fn fdiv(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    /// IEEE square root.
    fn sqrt(&mut self, a: Self::Float) -> Self::Float;
    /// Round toward negative infinity.
    fn floor(&mut self, a: Self::Float) -> Self::Float;
    /// [`transcendental::exp2`] of every element.
    fn exp2_each(&mut self, a: Self::Float) -> Self::Float;
    /// [`transcendental::log2`] of every element.
    fn log2_each(&mut self, a: Self::Float) -> Self::Float;

    /// `value` in every element.
    fn splat(&mut self, value: f32) -> Self::Float {
        let bits = self.splat_bits(value.to_bits());
        self.float_of(bits)
    }
    /// [`Elements::below`] on two values known to be below 2^31 (magnitudes): an
    /// implementation may use a signed comparison, which is cheaper on some hosts.
    fn magnitude_below(&mut self, a: Self::Bits, b: Self::Bits) -> Self::Mask {
        self.below(a, b)
    }
    /// [`Elements::above`] on two values known to be below 2^31.
    fn magnitude_above(&mut self, a: Self::Bits, b: Self::Bits) -> Self::Mask {
        self.above(a, b)
    }
    /// Signed `a < b` of the elements read as i32s.
    fn signed_below(&mut self, a: Self::Bits, b: Self::Bits) -> Self::Mask {
        // Offsetting both by 2^31 turns the signed order into the unsigned one.
        let offset = self.splat_bits(SIGN_BIT);
        let a = self.add_bits(a, offset);
        let b = self.add_bits(b, offset);
        self.below(a, b)
    }
    /// The greater of `a` and `b` read as i32s, element by element.
    fn signed_max(&mut self, a: Self::Bits, b: Self::Bits) -> Self::Bits {
        let b_greater = self.signed_below(a, b);
        self.select(b_greater, b, a)
    }
    /// The lesser of `a` and `b` read as i32s, element by element.
    fn signed_min(&mut self, a: Self::Bits, b: Self::Bits) -> Self::Bits {
        let a_less = self.signed_below(a, b);
        self.select(a_less, a, b)
    }
    /// `mask ? 0 : bits`, element by element (an and-not on hosts that have one).
    fn clear_where(&mut self, mask: Self::Mask, bits: Self::Bits) -> Self::Bits {
        let zero = self.splat_bits(0);
        self.select(mask, zero, bits)
    }
    /// [`flush`] of `v` (float24 modes), when the implementation already has it: `v` itself
    /// when it is a result of [`flush`] or a rounding (which the flush leaves unchanged), or a
    /// flushed copy it keeps. `None` (the default) makes [`flush`] compute it.
    fn flushed_already(&mut self, v: Self::Float) -> Option<Self::Float> {
        let _ = v;
        None
    }
    /// Called by [`flush`], [`round`] and [`round_flagging`] (float24 modes) with each result,
    /// a value the input flush leaves unchanged, so that an implementation can answer
    /// [`Elements::flushed_already`] for it. The default ignores it.
    fn note_flushed(&mut self, v: Self::Float) {
        let _ = v;
    }
    /// Called by [`flush`] with the value it flushed and the result, so that an implementation
    /// can answer [`Elements::flushed_already`] for both. The default notes the result only.
    fn note_flush(&mut self, v: Self::Float, flushed: Self::Float) {
        let _ = v;
        self.note_flushed(flushed);
    }
    /// Whether `v` is known to lie within the bounds [`Checks::Operands`] checks (checked
    /// already, or a constant within them), so a finish that checks operands skips it. The
    /// default: no.
    fn known_bounded(&mut self, v: Self::Float) -> bool {
        let _ = v;
        false
    }
    /// Called by [`Checks::Operands`] with each operand it checked, so that an implementation
    /// can answer [`Elements::known_bounded`]. The default ignores it.
    fn note_bounded(&mut self, v: Self::Float) {
        let _ = v;
    }
    /// What `v` is known to be in every element when the code is generated (a uniform the
    /// kernel is specialised on, a constant), for the rules that skip work such a factor makes
    /// vanish ([`mul_by`], [`mad_by`], [`dot_by`]). The default knows nothing.
    fn known_factor(&mut self, v: Self::Float) -> Option<KnownFactor> {
        let _ = v;
        None
    }
    /// Whether `v` is a result of [`round`] (or a fast path's rounding) in this precision, or a
    /// constant the rounding leaves unchanged: rounding it again gives `v`. The default: no.
    fn is_rounded(&mut self, v: Self::Float) -> bool {
        let _ = v;
        false
    }
    /// Called by [`round`], [`round_flagging`] and [`round_flagging_nan`] with each result, so
    /// that an implementation can answer [`Elements::is_rounded`]. The default ignores it.
    fn note_rounded(&mut self, v: Self::Float) {
        let _ = v;
    }
}

/// A factor known in every element when the code is generated (docs/batches.md, "Constant
/// lanes").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KnownFactor {
    /// Zero as the multiply reads it: +0 in the float24 modes (after the input flush), ±0 in
    /// f32 mode.
    Zero,
    /// +1.0.
    One,
}

/// Four f32 lanes of one register: [`Elements`] plus the moves between lanes that the
/// broadcasting instructions (DP3, DP4, DPH, RCP, RSQ, EX2, LG2) need.
pub trait Lanes: Elements {
    /// [`transcendental::exp2`] of lane 0, in every lane (what [`Elements::exp2_each`] of
    /// `broadcast(a, 0)` gives, computed once).
    fn exp2_first(&mut self, a: Self::Float) -> Self::Float;
    /// [`transcendental::log2`] of lane 0, in every lane.
    fn log2_first(&mut self, a: Self::Float) -> Self::Float;
    /// Lane `lane` of `a` in every lane.
    fn broadcast(&mut self, a: Self::Float, lane: usize) -> Self::Float;
    /// `a` with lane `lane` replaced by the constant `value`.
    fn with_lane(&mut self, a: Self::Float, lane: usize, value: f32) -> Self::Float;
}

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
fn below_min_normal<L: Elements>(l: &mut L, bits: L::Bits) -> L::Mask {
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
fn round_mantissa_uncleared<L: Elements>(
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
const fn least_rounding_to(bound: u32, precision: Precision) -> u32 {
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
const fn range_bounds(precision: Precision) -> (u32, u32) {
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
fn rounded_not_small<L: Elements>(
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
fn flag_elements<L: Elements>(l: &mut L, unusual: &mut Option<L::Mask>, flag: L::Mask) {
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
fn rounded_in_range<L: Elements>(l: &mut L, bits: L::Bits, precision: Precision) -> L::Bits {
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

/// How a rule finishes its arithmetic: the exact rules ([`Exactly`]: every product is the
/// [`sanitized_mul`], every result goes through [`round`]), or a fast path's ([`Flagging`]: a
/// plain product and [`round_flagging`], exact wherever nothing is flagged). Every rule below is
/// written once against this trait; the plain functions (`add`, `mul`, ...) are its exact form.
pub trait Finish<L: Elements> {
    /// An arithmetic result becoming a register value.
    fn round(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float;
    /// A dot product's sum (float24 modes) becoming a register value: [`Finish::round`] unless
    /// the finish knows better.
    fn round_dot_sum(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        self.round(l, v, p)
    }
    /// The product of two flushed factors, before rounding.
    fn product(&mut self, l: &mut L, a: L::Float, b: L::Float) -> L::Float;
    /// Whether a NaN result of [`Finish::round`] is flagged, so that a value this finish
    /// rounded needs no NaN test later.
    fn flags_nan_results(&self) -> bool;
    /// `v` made a NaN result in the elements of `nan` (a product skipped as zero whose other
    /// factor was a NaN): the canonical NaN there, or, for a fast path, those elements flagged.
    fn poison(&mut self, l: &mut L, nan: L::Mask, v: L::Float) -> L::Float;
    /// An operand of an arithmetic instruction as the rule reads it: [`flush`] (the default),
    /// or, for a fast path, a value equal to it wherever the finish does not flag.
    #[inline(always)]
    fn operand(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        flush(l, v, p)
    }
}

/// The exact finish: [`sanitized_mul`] and [`round`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Exactly;

impl<L: Elements> Finish<L> for Exactly {
    #[inline(always)]
    fn round(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        round(l, v, p)
    }
    #[inline(always)]
    fn product(&mut self, l: &mut L, a: L::Float, b: L::Float) -> L::Float {
        sanitized_mul(l, a, b)
    }
    #[inline(always)]
    fn flags_nan_results(&self) -> bool {
        false
    }
    #[inline(always)]
    fn poison(&mut self, l: &mut L, nan: L::Mask, v: L::Float) -> L::Float {
        let canonical = l.splat_bits(CANONICAL_NAN_BITS);
        let bits = l.bits_of(v);
        let r = l.select(nan, canonical, bits);
        l.float_of(r)
    }
}

/// The parts of [`Finish`] every fast path shares: the plain IEEE product (a product
/// [`sanitized_mul`] would change is a NaN, which the rounding that always follows flags) and
/// NaN results flagged in the finish's `unusual` elements.
macro_rules! fast_path_products {
    () => {
        #[inline(always)]
        fn product(&mut self, l: &mut L, a: L::Float, b: L::Float) -> L::Float {
            l.fmul(a, b)
        }
        #[inline(always)]
        fn flags_nan_results(&self) -> bool {
            true
        }
        #[inline(always)]
        fn poison(&mut self, l: &mut L, nan: L::Mask, v: L::Float) -> L::Float {
            flag_elements(l, &mut self.unusual, nan);
            v
        }
    };
}

/// The finish of a fast path that leaves rare values to an exact engine: [`round_flagging`],
/// accumulating its flags in `unusual`, and the plain IEEE product. A product that
/// [`sanitized_mul`] would change (inf·0, a NaN) is a NaN, which the rounding that always
/// follows a product flags, so every unflagged element is exact.
#[derive(Clone, Copy, Debug, Default)]
pub struct Flagging<M> {
    /// The elements flagged so far (`None`: nothing rounded yet).
    pub unusual: Option<M>,
}

impl<L: Elements> Finish<L> for Flagging<L::Mask> {
    #[inline(always)]
    fn round(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        round_flagging(l, v, p, &mut self.unusual)
    }
    fast_path_products!();
}

/// The finish of a fast path that leaves only NaNs to an exact one (the structure-of-arrays
/// JIT's second form, for groups its `Flagging` form flagged): [`round_flagging_nan`] (infinities and the range rules exact), accumulating its flags
/// in `unusual`, and the plain IEEE product (a product [`sanitized_mul`] would change is a NaN,
/// which is flagged).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlaggingNan<M> {
    /// The elements flagged so far (`None`: nothing rounded yet).
    pub unusual: Option<M>,
}

impl<L: Elements> Finish<L> for FlaggingNan<L::Mask> {
    #[inline(always)]
    fn round(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        round_flagging_nan(l, v, p, &mut self.unusual)
    }
    fast_path_products!();
}

/// The finish of a fast path that also leaves the sign of a zero result to its caller (the
/// scalar JIT's, docs/architecture.md, "Negative zeros left pending"): the plain IEEE product and
/// [`round_flagging_signed_zeros`], whose flags are the elements [`FlaggingSignedZeros::flagged`]
/// gives at the end. Where nothing is flagged, a result is the rule's, except that in the float24
/// modes a zero may be −0 where the rule gives +0; and the results are flushed up to that sign
/// (a value the input flush leaves unchanged, or −0), which this finish notes
/// ([`Elements::note_flushed`]) for an implementation that reads a −0 as +0's flush.
///
/// That is sound for the rules that flush their inputs and only add and multiply them (ADD,
/// MUL, MAD, the dot products), whose results do not depend on the sign of a zero input except
/// in the sign of a zero result, and for the comparisons; before any other use (a raw copy, a
/// negation it would make −0 of +0, RCP, RSQ, EX2, LG2, a register's home), the caller turns
/// such a −0 into +0.
///
/// It checks one of two things ([`Checks`]): the results it rounds (and the operands it reads,
/// for the input flush), or, in the float24 modes, only the operands, against bounds tight
/// enough that the rules that only add and multiply them never meet a range rule.
#[derive(Clone, Copy, Debug)]
pub struct FlaggingSignedZeros<B, M> {
    /// Elements flagged outright: a product skipped as zero whose other factor was a NaN, and
    /// in f32 mode the NaN results (`None`: none).
    pub unusual: Option<M>,
    /// Float24 modes: the largest unrounded magnitude rounded so far.
    largest: Option<B>,
    /// Float24 modes: the least magnitude rounded (unrounded) or read as an operand so far, as
    /// [`FlaggingSignedZeros::note_least`] offsets it (a zero greatest).
    least: Option<B>,
    /// What is checked.
    checks: Checks,
}

/// What a [`FlaggingSignedZeros`] checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checks {
    /// Every result it rounds, against the range rules, and every operand it reads, against
    /// the input flush (a non-zero magnitude below 2^-62).
    Results,
    /// Float24 modes, for the rules that only add and multiply (ADD, MUL, MAD, the dot
    /// products, DST's product): the largest magnitude on the operands, the least on the
    /// results. An operand not known within 2^30 ([`OPERAND_GREATEST_BITS`]; NaNs and
    /// infinities beyond it) is flagged, so no product or sum is a NaN or beyond the float24
    /// range; a product or sum, and an operand not known flushed, non-zero below 2^-46
    /// ([`CHECKED_LEAST_BITS`]) is flagged, so no operand is one the input flush changes, no
    /// result one the range rules change, and a dot product's sums need no check at all
    /// (docs/architecture.md, "Whole invocations on the fast path"). Conservative: a few
    /// exact results (magnitudes in [2^-62, 2^-46), operands beyond 2^30) are flagged too.
    /// For an implementation that knows no factors ([`Elements::known_factor`]): a product
    /// with a known +1.0 may skip its rounding, and so its check.
    Operands,
}

impl Checks {
    /// The greatest magnitude not flagged, and the least non-zero one.
    const fn bounds(self) -> (u32, u32) {
        match self {
            // 2^-62 in every mode: the input flush's bound, and (at or above the bound below
            // which nearest-even rounds to a subnormal) a conservative one for results.
            Checks::Results => (MAX_FINITE_BITS, MIN_NORMAL_BITS),
            Checks::Operands => (OPERAND_GREATEST_BITS, CHECKED_LEAST_BITS),
        }
    }
}

impl<B, M> Default for FlaggingSignedZeros<B, M> {
    fn default() -> Self {
        FlaggingSignedZeros {
            unusual: None,
            largest: None,
            least: None,
            checks: Checks::Results,
        }
    }
}

impl<B, M> FlaggingSignedZeros<B, M> {
    /// A finish that checks operands ([`Checks::Operands`]; float24 modes).
    pub fn checking_operands() -> Self {
        Self::checking(Checks::Operands)
    }

    /// A finish that checks what `checks` says.
    pub fn checking(checks: Checks) -> Self {
        FlaggingSignedZeros {
            checks,
            ..Self::default()
        }
    }

    /// What it checks.
    pub fn checks(&self) -> Checks {
        self.checks
    }
}

impl<B: Copy, M: Copy> FlaggingSignedZeros<B, M> {
    /// Counts the magnitude of `bits` among the least ones, and returns it.
    #[inline(always)]
    fn note_least<L: Elements<Bits = B, Mask = M>>(&mut self, l: &mut L, bits: B) -> B {
        let magnitude_mask = l.splat_bits(MAGNITUDE_BITS);
        let magnitude = l.and(bits, magnitude_mask);
        self.note_least_magnitude(l, magnitude);
        magnitude
    }

    /// Counts `magnitude` among the least ones.
    #[inline(always)]
    fn note_least_magnitude<L: Elements<Bits = B, Mask = M>>(&mut self, l: &mut L, magnitude: B) {
        let magnitude_mask = l.splat_bits(MAGNITUDE_BITS);
        // magnitude − 1 + 2^31: a zero becomes the greatest i32, a magnitude m > 0 the least
        // ones in the order of m, so one minimum finds the least non-zero magnitude.
        let shifted = l.add_bits(magnitude, magnitude_mask);
        self.least = Some(match self.least {
            Some(least) => l.signed_min(least, shifted),
            None => shifted,
        });
    }

    /// Counts `magnitude` among the largest ones.
    #[inline(always)]
    fn note_largest<L: Elements<Bits = B, Mask = M>>(&mut self, l: &mut L, magnitude: B) {
        self.largest = Some(match self.largest {
            Some(largest) => l.signed_max(largest, magnitude),
            None => magnitude,
        });
    }

    /// The two accumulated magnitudes, for a caller that keeps them across several finishes
    /// (the scalar JIT's whole invocations): the largest (the elements flagged outright
    /// counted as the greatest magnitude) and the least, offset as the least ones are kept (magnitude − 1 + 2^31 as a signed word, so that a zero
    /// is the greatest). `None`: nothing was read or flagged.
    pub fn accumulated<L: Elements<Bits = B, Mask = M>>(&self, l: &mut L) -> Option<(B, B)> {
        let mut largest = self.largest;
        if let Some(unusual) = self.unusual {
            let all = l.splat_bits(u32::MAX);
            let none = l.splat_bits(0);
            let flagged = l.select(unusual, all, none);
            let flagged = l.shift_right(flagged, 1);
            largest = Some(match largest {
                Some(largest) => l.signed_max(largest, flagged),
                None => flagged,
            });
        }
        let zero = l.splat_bits(0);
        let nothing_least = l.splat_bits(MAGNITUDE_BITS);
        match (largest, self.least) {
            (None, None) => None,
            (largest, least) => Some((largest.unwrap_or(zero), least.unwrap_or(nothing_least))),
        }
    }

    /// Whether [`FlaggingSignedZeros::flagged`] of what [`FlaggingSignedZeros::accumulated`]
    /// gave (several of them merged lane by lane by a signed maximum and a signed minimum, as
    /// plain words) flags any element, checked as `checks` says.
    #[inline]
    pub fn any_flagged_accumulated(checks: Checks, largest: [u32; 4], least: [u32; 4]) -> bool {
        let (greatest, least_bound) = checks.bounds();
        let least_bound = (least_bound - 1).wrapping_add(SIGN_BIT) as i32;
        let mut flagged = false;
        for (largest, least) in largest.into_iter().zip(least) {
            flagged |= largest as i32 > greatest as i32;
            flagged |= (least as i32) < least_bound;
        }
        flagged
    }

    /// The elements flagged by everything this finish rounded or read: those it flagged
    /// outright, and in the float24 modes those where a rounded magnitude was beyond the
    /// largest finite float24 (NaN and infinity included), or a rounded or read one was below
    /// 2^-62 without being zero (`None`: nothing was rounded, read or flagged).
    pub fn flagged<L: Elements<Bits = B, Mask = M>>(&self, l: &mut L) -> Option<M> {
        let mut unusual = self.unusual;
        let (greatest, least_bound) = self.checks.bounds();
        if let Some(largest) = self.largest {
            let greatest = l.splat_bits(greatest);
            let big = l.magnitude_above(largest, greatest);
            flag_elements(l, &mut unusual, big);
        }
        if let Some(least) = self.least {
            let bound = l.splat_bits((least_bound - 1).wrapping_add(SIGN_BIT));
            let small = l.signed_below(least, bound);
            flag_elements(l, &mut unusual, small);
        }
        unusual
    }
}

impl<L: Elements> Finish<L> for FlaggingSignedZeros<L::Bits, L::Mask> {
    #[inline(always)]
    fn round(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        round_flagging_signed_zeros(l, v, p, self)
    }
    /// Checking operands, a dot product's sum is only rounded: its terms are multiples of
    /// 2^-62 of at most 2^60 wherever nothing is flagged ([`Checks::Operands`]), so the range
    /// rules never change it.
    #[inline(always)]
    fn round_dot_sum(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        if self.checks != Checks::Operands || !p.is_f24() {
            return self.round(l, v, p);
        }
        let bits = l.bits_of(v);
        let uncleared = round_mantissa_uncleared(l, bits, p);
        let keep = l.splat_bits(!DROPPED_MANTISSA_BITS);
        let rounded = l.and(uncleared, keep);
        let r = l.float_of(rounded);
        l.note_flushed(r);
        r
    }
    /// The operand as it is, its magnitude counted among the least ones (float24 modes): an
    /// operand the input flush would change (a non-zero magnitude below 2^-62) is flagged, so
    /// wherever nothing is flagged it is its flush up to the sign of a zero. The flush's three
    /// operations leave the critical path. An operand known flushed is taken as it is.
    #[inline(always)]
    ///
    /// Checking operands ([`Checks::Operands`]), an operand not known within the bounds
    /// ([`Elements::known_bounded`]) has its magnitude counted among the largest ones too, and
    /// is noted within them ([`Elements::note_bounded`]: wherever nothing is flagged, it is).
    fn operand(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        if !p.is_f24() {
            return v;
        }
        if self.checks == Checks::Operands {
            let (v, flushed) = match l.flushed_already(v) {
                Some(flushed) => (flushed, true),
                None => (v, false),
            };
            let bounded = l.known_bounded(v);
            if bounded && flushed {
                return v;
            }
            let bits = l.bits_of(v);
            let magnitude_mask = l.splat_bits(MAGNITUDE_BITS);
            let magnitude = l.and(bits, magnitude_mask);
            if !bounded {
                self.note_largest(l, magnitude);
                l.note_bounded(v);
            }
            if !flushed {
                self.note_least_magnitude(l, magnitude);
                l.note_flushed(v);
            }
            return v;
        }
        if let Some(flushed) = l.flushed_already(v) {
            return flushed;
        }
        let bits = l.bits_of(v);
        self.note_least(l, bits);
        v
    }
    fast_path_products!();
}

/// ADD: round(flush a + flush b).
#[inline(always)]
pub fn add<L: Elements>(l: &mut L, a: L::Float, b: L::Float, p: Precision) -> L::Float {
    add_by(l, &mut Exactly, a, b, p)
}

/// [`add`] finished by `fin`.
#[inline(always)]
pub fn add_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    p: Precision,
) -> L::Float {
    let a = fin.operand(l, a, p);
    let b = fin.operand(l, b, p);
    let sum = l.fadd(a, b);
    fin.round(l, sum, p)
}

/// MUL: round(sanitized(flush a · flush b)).
#[inline(always)]
pub fn mul<L: Elements>(l: &mut L, a: L::Float, b: L::Float, p: Precision) -> L::Float {
    mul_by(l, &mut Exactly, a, b, p)
}

/// [`mul`] finished by `fin`.
#[inline(always)]
pub fn mul_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    p: Precision,
) -> L::Float {
    let a = fin.operand(l, a, p);
    let b = fin.operand(l, b, p);
    match product_term(l, fin, a, b, p, p.is_f24(), false) {
        Term::Rounded(v) => v,
        Term::Vanished(nan) => {
            let zero = l.splat(0.0);
            poisoned(l, fin, nan, zero)
        }
    }
}

/// A rounded product as the rules see it once known factors are taken into account.
enum Term<F, M> {
    /// The rounded product.
    Rounded(F),
    /// +0, except a NaN in the elements of the mask (`None`: nowhere): a factor is known to be
    /// zero, and the other one was a NaN there.
    Vanished(Option<M>),
}

/// `round(product(a, b))` of two flushed factors, skipping what a [`KnownFactor`] makes vanish
/// (docs/batches.md, "Constant lanes"):
/// - a factor of +1.0: the product is the other factor exactly (a NaN stays a NaN, which the
///   rounding makes canonical), so only the rounding remains, and none when the other factor is
///   rounded already (rounding is idempotent);
/// - a factor of zero, where `zero_vanishes` (the caller adds the product to something, or the
///   mode turns every zero product into +0): the product is +0 (the multiply's inf·0 = 0
///   included), or a NaN where the other factor is one; that factor needs no NaN test when the
///   finish flags NaN results and rounded it.
///
/// In f32 mode a product that is `summed` (a MAD's or a dot product's) is not rounded: there
/// rounding is only NaN canonicalisation, and a NaN term makes the sum a NaN, which the sum's
/// own rounding makes canonical, so the result is the same bits.
#[inline(always)]
fn product_term<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    p: Precision,
    zero_vanishes: bool,
    summed: bool,
) -> Term<L::Float, L::Mask> {
    let round = |l: &mut L, fin: &mut F, v: L::Float| {
        if summed && p == Precision::F32 {
            v
        } else {
            fin.round(l, v, p)
        }
    };
    let known = [l.known_factor(a), l.known_factor(b)];
    if known == [None, None] {
        let product = fin.product(l, a, b);
        return Term::Rounded(round(l, fin, product));
    }
    if zero_vanishes {
        for (factor, other, other_known) in [(known[0], b, known[1]), (known[1], a, known[0])] {
            if factor == Some(KnownFactor::Zero) {
                let nan = if other_known.is_some() || fin.flags_nan_results() && l.is_rounded(other)
                {
                    None
                } else {
                    Some(l.is_nan(other))
                };
                return Term::Vanished(nan);
            }
        }
    }
    for (factor, other) in [(known[1], a), (known[0], b)] {
        if factor == Some(KnownFactor::One) {
            if l.is_rounded(other) {
                return Term::Rounded(other);
            }
            return Term::Rounded(round(l, fin, other));
        }
    }
    let product = fin.product(l, a, b);
    Term::Rounded(round(l, fin, product))
}

/// `v`, a NaN wherever `nan` says.
#[inline(always)]
fn poisoned<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    nan: Option<L::Mask>,
    v: L::Float,
) -> L::Float {
    match nan {
        Some(nan) => fin.poison(l, nan, v),
        None => v,
    }
}

/// Two NaN masks as one.
#[inline(always)]
fn either_nan<L: Elements>(l: &mut L, a: Option<L::Mask>, b: Option<L::Mask>) -> Option<L::Mask> {
    match (a, b) {
        (Some(a), Some(b)) => Some(l.either(a, b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// MAD: round(MUL(a, b) + flush c): the product is rounded before the addition.
#[inline(always)]
pub fn mad<L: Elements>(
    l: &mut L,
    a: L::Float,
    b: L::Float,
    c: L::Float,
    p: Precision,
) -> L::Float {
    mad_by(l, &mut Exactly, a, b, c, p)
}

/// [`mad`] finished by `fin`.
#[inline(always)]
pub fn mad_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    c: L::Float,
    p: Precision,
) -> L::Float {
    let a = fin.operand(l, a, p);
    let b = fin.operand(l, b, p);
    let c = fin.operand(l, c, p);
    // A product of +0 adds nothing in the float24 modes (c is flushed, so never -0); in f32
    // mode a -0 product would turn a -0 addend into +0, so the product is kept there.
    match product_term(l, fin, a, b, p, p.is_f24(), true) {
        Term::Rounded(product) => {
            let sum = l.fadd(product, c);
            fin.round(l, sum, p)
        }
        Term::Vanished(nan) => {
            let sum = if l.is_rounded(c) {
                c
            } else {
                fin.round(l, c, p)
            };
            poisoned(l, fin, nan, sum)
        }
    }
}

/// The sum of a dot product's products (`products[i]` = MUL of lane i of both sources; three
/// for DP3, four for DP4 and DPH): in the float24 modes pairwise, rounded at each step
/// (`round(round(p0 + p1) + p2)`, `round(round(p0 + p1) + round(p2 + p3))`); in f32 mode left to
/// right from +0 (`((0 + p0) + p1) + p2 ...`), rounded once.
#[inline(always)]
pub fn dot_sum<L: Elements>(l: &mut L, products: &[L::Float], p: Precision) -> L::Float {
    dot_sum_by(l, &mut Exactly, products, p)
}

/// [`dot_sum`] finished by `fin`.
#[inline(always)]
pub fn dot_sum_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    products: &[L::Float],
    p: Precision,
) -> L::Float {
    let mut terms = [None; 4];
    for (term, &product) in terms.iter_mut().zip(products) {
        *term = Some(product);
    }
    sum_terms(l, fin, &terms[..products.len()], p)
}

/// The dot product's sum ([`dot_sum`]) of the products that did not vanish (`None`: a +0
/// product). Adding +0 changes nothing it is skipped for: in the float24 modes a rounded term
/// is never -0; in f32 mode the running sum starts at +0 and so is never -0 either.
#[inline(always)]
fn sum_terms<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    terms: &[Option<L::Float>],
    p: Precision,
) -> L::Float {
    debug_assert!(terms.len() == 3 || terms.len() == 4);
    if p.is_f24() {
        let first = pair_sum(l, fin, terms[0], terms[1], p);
        let second = if let [_, _, t2, t3] = *terms {
            pair_sum(l, fin, t2, t3, p)
        } else {
            terms[2]
        };
        match pair_sum(l, fin, first, second, p) {
            Some(sum) => sum,
            None => l.splat(0.0),
        }
    } else {
        let mut sum = l.splat(0.0);
        for &term in terms.iter().flatten() {
            sum = l.fadd(sum, term);
        }
        fin.round(l, sum, p)
    }
}

/// One rounded step of the float24 modes' pairwise sum; a vanished (+0) term adds nothing.
#[inline(always)]
fn pair_sum<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: Option<L::Float>,
    b: Option<L::Float>,
    p: Precision,
) -> Option<L::Float> {
    match (a, b) {
        (Some(a), Some(b)) => {
            let sum = l.fadd(a, b);
            Some(fin.round_dot_sum(l, sum, p))
        }
        (one, None) | (None, one) => one,
    }
}

/// DP3 (`pairs.len()` = 3), DP4 and DPH (4) on one component of many vertices: `pairs[i]` are
/// the two factors of product i (DPH's fourth first factor is the constant 1.0). The products
/// are MULs, summed by [`dot_sum`], with what [`KnownFactor`]s make vanish skipped: a zero
/// product drops out of the sum in every mode (adding +0 never changes the running sum).
#[inline(always)]
pub fn dot_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    pairs: &[(L::Float, L::Float)],
    p: Precision,
) -> L::Float {
    let mut nan = None;
    let mut terms = [None; 4];
    for (term, &(a, b)) in terms.iter_mut().zip(pairs) {
        let a = fin.operand(l, a, p);
        let b = fin.operand(l, b, p);
        *term = match product_term(l, fin, a, b, p, true, true) {
            Term::Rounded(v) => Some(v),
            Term::Vanished(poison) => {
                nan = either_nan(l, nan, poison);
                None
            }
        };
    }
    let sum = sum_terms(l, fin, &terms[..pairs.len()], p);
    poisoned(l, fin, nan, sum)
}

/// DP3 (`lanes` = 3) and DP4 (4) of `a` and `b`, in every lane: the products are a lane-wise
/// MUL, summed by [`dot_sum`].
pub fn dot<L: Lanes>(l: &mut L, a: L::Float, b: L::Float, lanes: usize, p: Precision) -> L::Float {
    dot_lanes_by(l, &mut Exactly, a, b, lanes, p)
}

/// [`dot`] finished by `fin`.
#[inline(always)]
pub fn dot_lanes_by<L: Lanes, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    lanes: usize,
    p: Precision,
) -> L::Float {
    debug_assert!(lanes == 3 || lanes == 4);
    // Summed: in f32 mode not rounded (see `product_term`), and f32 mode flushes nothing.
    let products = if p == Precision::F32 {
        fin.product(l, a, b)
    } else {
        mul_by(l, fin, a, b, p)
    };
    let mut terms = [products; 4];
    for (lane, term) in terms.iter_mut().enumerate().take(lanes) {
        *term = l.broadcast(products, lane);
    }
    dot_sum_by(l, fin, &terms[..lanes], p)
}

/// DPH: DP4 with a.w = 1.
pub fn dph<L: Lanes>(l: &mut L, a: L::Float, b: L::Float, p: Precision) -> L::Float {
    dph_by(l, &mut Exactly, a, b, p)
}

/// [`dph`] finished by `fin`.
#[inline(always)]
pub fn dph_by<L: Lanes, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    p: Precision,
) -> L::Float {
    let a = l.with_lane(a, 3, 1.0);
    dot_lanes_by(l, fin, a, b, 4, p)
}

/// RCP of every element: round(1 / flush x).
#[inline(always)]
pub fn rcp_each<L: Elements>(l: &mut L, x: L::Float, p: Precision) -> L::Float {
    rcp_each_by(l, &mut Exactly, x, p)
}

/// [`rcp_each`] finished by `fin`.
#[inline(always)]
pub fn rcp_each_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    x: L::Float,
    p: Precision,
) -> L::Float {
    let x = fin.operand(l, x, p);
    let one = l.splat(1.0);
    let q = l.fdiv(one, x);
    fin.round(l, q, p)
}

/// RSQ of every element: round(1 / sqrt(flush x)).
#[inline(always)]
pub fn rsq_each<L: Elements>(l: &mut L, x: L::Float, p: Precision) -> L::Float {
    rsq_each_by(l, &mut Exactly, x, p)
}

/// [`rsq_each`] finished by `fin`.
#[inline(always)]
pub fn rsq_each_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    x: L::Float,
    p: Precision,
) -> L::Float {
    let x = fin.operand(l, x, p);
    let root = l.sqrt(x);
    let one = l.splat(1.0);
    let q = l.fdiv(one, root);
    fin.round(l, q, p)
}

/// EX2 and LG2: `round(f(flush x))`, with `f` the deterministic [`transcendental::exp2`] or
/// [`transcendental::log2`] as the caller applies it.
#[inline(always)]
fn transcendental_rule<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    x: L::Float,
    p: Precision,
    f: impl FnOnce(&mut L, L::Float) -> L::Float,
) -> L::Float {
    let x = fin.operand(l, x, p);
    let r = f(l, x);
    fin.round(l, r, p)
}

/// EX2 of every element: round(exp2(flush x)) with [`transcendental::exp2`].
#[inline(always)]
pub fn ex2_each<L: Elements>(l: &mut L, x: L::Float, p: Precision) -> L::Float {
    ex2_each_by(l, &mut Exactly, x, p)
}

/// [`ex2_each`] finished by `fin`.
#[inline(always)]
pub fn ex2_each_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    x: L::Float,
    p: Precision,
) -> L::Float {
    transcendental_rule(l, fin, x, p, L::exp2_each)
}

/// LG2 of every element: round(log2(flush x)) with [`transcendental::log2`].
#[inline(always)]
pub fn lg2_each<L: Elements>(l: &mut L, x: L::Float, p: Precision) -> L::Float {
    lg2_each_by(l, &mut Exactly, x, p)
}

/// [`lg2_each`] finished by `fin`.
#[inline(always)]
pub fn lg2_each_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    x: L::Float,
    p: Precision,
) -> L::Float {
    transcendental_rule(l, fin, x, p, L::log2_each)
}

/// RCP of lane 0, in every lane ([`rcp_each`]).
pub fn rcp<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    let x = l.broadcast(a, 0);
    rcp_each(l, x, p)
}

/// RSQ of lane 0, in every lane ([`rsq_each`]).
pub fn rsq<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    let x = l.broadcast(a, 0);
    rsq_each(l, x, p)
}

/// EX2 of lane 0, in every lane ([`ex2_each`], computed once).
pub fn ex2<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    transcendental_rule(l, &mut Exactly, a, p, L::exp2_first)
}

/// LG2 of lane 0, in every lane ([`lg2_each`], computed once).
pub fn lg2<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    transcendental_rule(l, &mut Exactly, a, p, L::log2_first)
}

/// FLR: round(floor(flush x)), element by element.
#[inline(always)]
pub fn flr<L: Elements>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    flr_by(l, &mut Exactly, a, p)
}

/// [`flr`] finished by `fin`.
#[inline(always)]
pub fn flr_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    p: Precision,
) -> L::Float {
    let x = fin.operand(l, a, p);
    let f = l.floor(x);
    fin.round(l, f, p)
}

/// [`Lanes`] on plain arrays: the reference implementation the interpreter computes with.
#[derive(Clone, Copy, Debug, Default)]
pub struct Exact;

fn each<T: Copy, U>(a: [T; 4], f: impl Fn(T) -> U) -> [U; 4] {
    a.map(f)
}

fn pairwise<T: Copy, U>(a: [T; 4], b: [T; 4], f: impl Fn(T, T) -> U) -> [U; 4] {
    std::array::from_fn(|i| f(a[i], b[i]))
}

impl Elements for Exact {
    type Float = [f32; 4];
    type Bits = [u32; 4];
    type Mask = [bool; 4];

    #[inline]
    fn bits_of(&mut self, v: [f32; 4]) -> [u32; 4] {
        each(v, f32::to_bits)
    }
    #[inline]
    fn float_of(&mut self, v: [u32; 4]) -> [f32; 4] {
        each(v, f32::from_bits)
    }
    #[inline]
    fn splat_bits(&mut self, bits: u32) -> [u32; 4] {
        [bits; 4]
    }
    #[inline]
    fn and(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        pairwise(a, b, |x, y| x & y)
    }
    #[inline]
    fn or(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        pairwise(a, b, |x, y| x | y)
    }
    #[inline]
    fn add_bits(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        pairwise(a, b, u32::wrapping_add)
    }
    #[inline]
    fn shift_right(&mut self, a: [u32; 4], amount: u32) -> [u32; 4] {
        each(a, |x| x >> amount)
    }
    #[inline]
    fn below(&mut self, a: [u32; 4], b: [u32; 4]) -> [bool; 4] {
        pairwise(a, b, |x, y| x < y)
    }
    #[inline]
    fn above(&mut self, a: [u32; 4], b: [u32; 4]) -> [bool; 4] {
        pairwise(a, b, |x, y| x > y)
    }
    #[inline]
    fn is_nan(&mut self, a: [f32; 4]) -> [bool; 4] {
        each(a, f32::is_nan)
    }
    #[inline]
    fn is_number(&mut self, a: [f32; 4]) -> [bool; 4] {
        each(a, |x| !x.is_nan())
    }
    #[inline]
    fn both(&mut self, a: [bool; 4], b: [bool; 4]) -> [bool; 4] {
        pairwise(a, b, |x, y| x && y)
    }
    #[inline]
    fn select(&mut self, mask: [bool; 4], a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        std::array::from_fn(|i| if mask[i] { a[i] } else { b[i] })
    }
    #[inline]
    fn fadd(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        pairwise(a, b, |x, y| x + y)
    }
    #[inline]
    fn fmul(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        pairwise(a, b, |x, y| x * y)
    }
    #[inline]
    fn fdiv(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        pairwise(a, b, |x, y| x / y)
    }
    #[inline]
    fn sqrt(&mut self, a: [f32; 4]) -> [f32; 4] {
        each(a, f32::sqrt)
    }
    #[inline]
    fn floor(&mut self, a: [f32; 4]) -> [f32; 4] {
        each(a, f32::floor)
    }
    #[inline]
    fn either(&mut self, a: [bool; 4], b: [bool; 4]) -> [bool; 4] {
        pairwise(a, b, |x, y| x || y)
    }
    #[inline]
    fn exp2_each(&mut self, a: [f32; 4]) -> [f32; 4] {
        each(a, transcendental::exp2)
    }
    #[inline]
    fn log2_each(&mut self, a: [f32; 4]) -> [f32; 4] {
        each(a, transcendental::log2)
    }
}

impl Lanes for Exact {
    #[inline]
    fn exp2_first(&mut self, a: [f32; 4]) -> [f32; 4] {
        [transcendental::exp2(a[0]); 4]
    }
    #[inline]
    fn log2_first(&mut self, a: [f32; 4]) -> [f32; 4] {
        [transcendental::log2(a[0]); 4]
    }
    #[inline]
    fn broadcast(&mut self, a: [f32; 4], lane: usize) -> [f32; 4] {
        [a[lane]; 4]
    }
    #[inline]
    fn with_lane(&mut self, mut a: [f32; 4], lane: usize, value: f32) -> [f32; 4] {
        a[lane] = value;
        a
    }
}
