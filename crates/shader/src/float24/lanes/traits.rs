//! What an engine implements for the rules to run on it: [`Elements`] (element-wise operations
//! on f32 values and their bits) and [`Lanes`] (the moves between the four lanes of a register).

use super::*;

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
