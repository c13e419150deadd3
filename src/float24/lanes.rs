//! The float24 arithmetic rules, written once for every engine.
//!
//! Each rule (the input flush, the inf·0 = 0 multiply, rounding and the range rules, the order
//! in which a dot product sums) is a function generic over [`Lanes`], a small abstraction of four
//! f32 lanes and their bit patterns. [`Exact`] implements it on plain arrays, and the reference
//! interpreter computes with it; the JIT implements it with Cranelift vector IR values, so the
//! code it emits is these same functions run at compile time. A new engine (a structure-of-arrays
//! tier, say) implements [`Lanes`] once and gets every rule; it never restates one.
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

/// Four f32 lanes and the operations the rules need. Integer operations act on the lanes' bit
/// patterns; a mask holds one predicate per lane.
pub trait Lanes {
    /// Four f32 lanes.
    type Float: Copy;
    /// Four 32-bit bit patterns.
    type Bits: Copy;
    /// Four lane predicates.
    type Mask: Copy;

    /// The lanes' bit patterns.
    fn bits_of(&mut self, v: Self::Float) -> Self::Bits;
    /// Lanes from bit patterns.
    fn float_of(&mut self, v: Self::Bits) -> Self::Float;
    /// `bits` in every lane.
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
    /// Whether a lane is a NaN.
    fn is_nan(&mut self, a: Self::Float) -> Self::Mask;
    /// Whether a lane is not a NaN.
    fn is_number(&mut self, a: Self::Float) -> Self::Mask;
    /// Predicate and.
    fn both(&mut self, a: Self::Mask, b: Self::Mask) -> Self::Mask;
    /// `mask ? a : b`, lane by lane.
    fn select(&mut self, mask: Self::Mask, a: Self::Bits, b: Self::Bits) -> Self::Bits;
    /// IEEE addition (round to nearest even), lane by lane.
    fn fadd(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    /// IEEE multiplication.
    fn fmul(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    /// IEEE division.
    fn fdiv(&mut self, a: Self::Float, b: Self::Float) -> Self::Float;
    /// IEEE square root.
    fn sqrt(&mut self, a: Self::Float) -> Self::Float;
    /// Round toward negative infinity.
    fn floor(&mut self, a: Self::Float) -> Self::Float;
    /// [`transcendental::exp2`] of lane 0, in every lane.
    fn exp2_first(&mut self, a: Self::Float) -> Self::Float;
    /// [`transcendental::log2`] of lane 0, in every lane.
    fn log2_first(&mut self, a: Self::Float) -> Self::Float;
    /// Lanes `[a[1], a[0], a[3], a[2]]`.
    fn swap_pairs(&mut self, a: Self::Float) -> Self::Float;
    /// Lane `lane` of `a` in every lane.
    fn broadcast(&mut self, a: Self::Float, lane: usize) -> Self::Float;
    /// `a` with lane `lane` replaced by the constant `value`.
    fn with_lane(&mut self, a: Self::Float, lane: usize, value: f32) -> Self::Float;

    /// `value` in every lane.
    fn splat(&mut self, value: f32) -> Self::Float {
        let bits = self.splat_bits(value.to_bits());
        self.float_of(bits)
    }
}

/// The input flush of arithmetic instructions: in the float24 modes a value below the smallest
/// normal float24 (2^-62) in magnitude, float24 subnormals included, reads as +0.
pub fn flush<L: Lanes>(l: &mut L, v: L::Float, precision: Precision) -> L::Float {
    if !precision.is_f24() {
        return v;
    }
    let bits = l.bits_of(v);
    let (small, _) = below_min_normal(l, bits);
    let zero = l.splat_bits(0);
    let r = l.select(small, zero, bits);
    l.float_of(r)
}

/// Whether each lane's magnitude is below the smallest normal float24 (2^-62): a float24
/// subnormal or zero, which the model reads (flush) and writes (range rules) as +0. Also returns
/// the magnitudes.
fn below_min_normal<L: Lanes>(l: &mut L, bits: L::Bits) -> (L::Mask, L::Bits) {
    let magnitude_mask = l.splat_bits(MAGNITUDE_BITS);
    let magnitude = l.and(bits, magnitude_mask);
    let min_normal = l.splat_bits(MIN_NORMAL_BITS);
    (l.below(magnitude, min_normal), magnitude)
}

/// An arithmetic result becoming a register value: NaN becomes the canonical NaN; in the float24
/// modes the mantissa keeps 16 bits (truncated, or rounded to nearest even) and then the range
/// rules apply: below 2^-62 in magnitude → +0, beyond the largest finite float24 → ±inf.
pub fn round<L: Lanes>(l: &mut L, v: L::Float, precision: Precision) -> L::Float {
    let nan = l.is_nan(v);
    let canonical = l.splat_bits(CANONICAL_NAN_BITS);
    let bits = l.bits_of(v);
    let result = match precision {
        Precision::F32 => bits,
        Precision::F24Truncate | Precision::F24Nearest => {
            let keep = l.splat_bits(!DROPPED_MANTISSA_BITS);
            let rounded = if precision == Precision::F24Nearest {
                // Add half an ulp of the 16-bit mantissa, plus one when the kept lsb is odd
                // (ties go to even); a carry moves into the exponent as it should.
                let shifted = l.shift_right(bits, 7);
                let one = l.splat_bits(1);
                let lsb = l.and(shifted, one);
                let half = l.splat_bits(DROPPED_MANTISSA_BITS >> 1);
                let sum = l.add_bits(bits, half);
                let sum = l.add_bits(sum, lsb);
                l.and(sum, keep)
            } else {
                l.and(bits, keep)
            };
            range_rules(l, rounded)
        }
    };
    let r = l.select(nan, canonical, result);
    l.float_of(r)
}

/// The range rules on a rounded non-NaN value's bits.
fn range_rules<L: Lanes>(l: &mut L, bits: L::Bits) -> L::Bits {
    let (small, magnitude) = below_min_normal(l, bits);
    let max_finite = l.splat_bits(MAX_FINITE_BITS);
    let big = l.above(magnitude, max_finite);
    let sign_mask = l.splat_bits(SIGN_BIT);
    let sign = l.and(bits, sign_mask);
    let infinity = l.splat_bits(INFINITY_BITS);
    let signed_infinity = l.or(sign, infinity);
    let zero = l.splat_bits(0);
    let r = l.select(big, signed_infinity, bits);
    l.select(small, zero, r)
}

/// The multiply of the shader units: a NaN product of two non-NaN factors (inf·0) is +0.
pub fn sanitized_mul<L: Lanes>(l: &mut L, a: L::Float, b: L::Float) -> L::Float {
    let product = l.fmul(a, b);
    let product_nan = l.is_nan(product);
    let a_number = l.is_number(a);
    let b_number = l.is_number(b);
    let factors_numbers = l.both(a_number, b_number);
    let zero_it = l.both(product_nan, factors_numbers);
    let zero = l.splat_bits(0);
    let bits = l.bits_of(product);
    let r = l.select(zero_it, zero, bits);
    l.float_of(r)
}

/// ADD: round(flush a + flush b).
pub fn add<L: Lanes>(l: &mut L, a: L::Float, b: L::Float, p: Precision) -> L::Float {
    let a = flush(l, a, p);
    let b = flush(l, b, p);
    let sum = l.fadd(a, b);
    round(l, sum, p)
}

/// MUL: round(sanitized(flush a · flush b)).
pub fn mul<L: Lanes>(l: &mut L, a: L::Float, b: L::Float, p: Precision) -> L::Float {
    let a = flush(l, a, p);
    let b = flush(l, b, p);
    let product = sanitized_mul(l, a, b);
    round(l, product, p)
}

/// MAD: round(MUL(a, b) + flush c): the product is rounded before the addition.
pub fn mad<L: Lanes>(l: &mut L, a: L::Float, b: L::Float, c: L::Float, p: Precision) -> L::Float {
    let product = mul(l, a, b, p);
    let c = flush(l, c, p);
    let sum = l.fadd(product, c);
    round(l, sum, p)
}

/// DP3 (`lanes` = 3) and DP4 (4) of `a` and `b`, in every lane: each product is a MUL; in the
/// float24 modes the sum is pairwise, rounded at each step (`round(round(p0 + p1) + p2)`,
/// `round(round(p0 + p1) + round(p2 + p3))`); in f32 mode it runs left to right from +0
/// (`((0 + p0) + p1) + p2 ...`) and is rounded once.
pub fn dot<L: Lanes>(l: &mut L, a: L::Float, b: L::Float, lanes: usize, p: Precision) -> L::Float {
    debug_assert!(lanes == 3 || lanes == 4);
    let products = mul(l, a, b, p);
    if p.is_f24() {
        let swapped = l.swap_pairs(products);
        let pairs = l.fadd(products, swapped);
        // Lane 0: round(p0 + p1); lane 2: round(p2 + p3).
        let pairs = round(l, pairs, p);
        let second = if lanes == 4 {
            l.broadcast(pairs, 2)
        } else {
            l.broadcast(products, 2)
        };
        let first = l.broadcast(pairs, 0);
        let sum = l.fadd(first, second);
        round(l, sum, p)
    } else {
        let mut sum = l.splat(0.0);
        for lane in 0..lanes {
            let term = l.broadcast(products, lane);
            sum = l.fadd(sum, term);
        }
        round(l, sum, p)
    }
}

/// DPH: DP4 with a.w = 1.
pub fn dph<L: Lanes>(l: &mut L, a: L::Float, b: L::Float, p: Precision) -> L::Float {
    let a = l.with_lane(a, 3, 1.0);
    dot(l, a, b, 4, p)
}

/// RCP of lane 0, in every lane: round(1 / flush x).
pub fn rcp<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    let x = l.broadcast(a, 0);
    let x = flush(l, x, p);
    let one = l.splat(1.0);
    let q = l.fdiv(one, x);
    round(l, q, p)
}

/// RSQ of lane 0, in every lane: round(1 / sqrt(flush x)).
pub fn rsq<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    let x = l.broadcast(a, 0);
    let x = flush(l, x, p);
    let root = l.sqrt(x);
    let one = l.splat(1.0);
    let q = l.fdiv(one, root);
    round(l, q, p)
}

/// EX2 of lane 0, in every lane: round(exp2(flush x)) with the deterministic
/// [`transcendental::exp2`].
pub fn ex2<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    let x = flush(l, a, p);
    let r = l.exp2_first(x);
    round(l, r, p)
}

/// LG2 of lane 0, in every lane: round(log2(flush x)) with the deterministic
/// [`transcendental::log2`].
pub fn lg2<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    let x = flush(l, a, p);
    let r = l.log2_first(x);
    round(l, r, p)
}

/// FLR: round(floor(flush x)), lane by lane.
pub fn flr<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    let x = flush(l, a, p);
    let f = l.floor(x);
    round(l, f, p)
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

impl Lanes for Exact {
    type Float = [f32; 4];
    type Bits = [u32; 4];
    type Mask = [bool; 4];

    fn bits_of(&mut self, v: [f32; 4]) -> [u32; 4] {
        each(v, f32::to_bits)
    }
    fn float_of(&mut self, v: [u32; 4]) -> [f32; 4] {
        each(v, f32::from_bits)
    }
    fn splat_bits(&mut self, bits: u32) -> [u32; 4] {
        [bits; 4]
    }
    fn and(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        pairwise(a, b, |x, y| x & y)
    }
    fn or(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        pairwise(a, b, |x, y| x | y)
    }
    fn add_bits(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        pairwise(a, b, u32::wrapping_add)
    }
    fn shift_right(&mut self, a: [u32; 4], amount: u32) -> [u32; 4] {
        each(a, |x| x >> amount)
    }
    fn below(&mut self, a: [u32; 4], b: [u32; 4]) -> [bool; 4] {
        pairwise(a, b, |x, y| x < y)
    }
    fn above(&mut self, a: [u32; 4], b: [u32; 4]) -> [bool; 4] {
        pairwise(a, b, |x, y| x > y)
    }
    fn is_nan(&mut self, a: [f32; 4]) -> [bool; 4] {
        each(a, f32::is_nan)
    }
    fn is_number(&mut self, a: [f32; 4]) -> [bool; 4] {
        each(a, |x| !x.is_nan())
    }
    fn both(&mut self, a: [bool; 4], b: [bool; 4]) -> [bool; 4] {
        pairwise(a, b, |x, y| x && y)
    }
    fn select(&mut self, mask: [bool; 4], a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        std::array::from_fn(|i| if mask[i] { a[i] } else { b[i] })
    }
    fn fadd(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        pairwise(a, b, |x, y| x + y)
    }
    fn fmul(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        pairwise(a, b, |x, y| x * y)
    }
    fn fdiv(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        pairwise(a, b, |x, y| x / y)
    }
    fn sqrt(&mut self, a: [f32; 4]) -> [f32; 4] {
        each(a, f32::sqrt)
    }
    fn floor(&mut self, a: [f32; 4]) -> [f32; 4] {
        each(a, f32::floor)
    }
    fn exp2_first(&mut self, a: [f32; 4]) -> [f32; 4] {
        [transcendental::exp2(a[0]); 4]
    }
    fn log2_first(&mut self, a: [f32; 4]) -> [f32; 4] {
        [transcendental::log2(a[0]); 4]
    }
    fn swap_pairs(&mut self, a: [f32; 4]) -> [f32; 4] {
        [a[1], a[0], a[3], a[2]]
    }
    fn broadcast(&mut self, a: [f32; 4], lane: usize) -> [f32; 4] {
        [a[lane]; 4]
    }
    fn with_lane(&mut self, mut a: [f32; 4], lane: usize, value: f32) -> [f32; 4] {
        a[lane] = value;
        a
    }
}
