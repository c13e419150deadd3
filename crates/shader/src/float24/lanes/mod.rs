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

mod exact;
mod finish;
mod rounding;
mod rules;
mod traits;

pub use exact::*;
pub use finish::*;
pub use rounding::*;
pub use rules::*;
pub use traits::*;

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
