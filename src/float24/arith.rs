//! The arithmetic of every shader instruction, built from the rules of the parent module.
//!
//! Each function takes already-selected, swizzled and negated source values (raw register
//! values) and returns register values. "Arithmetic" instructions (ADD, MUL, MAD, DP3, DP4, DPH,
//! the DST product, RCP, RSQ, EX2, LG2, FLR) flush their inputs and round their results;
//! the others (MAX, MIN, SGE, SLT, CMP, LITP, MOVA) work on the raw values.

use super::{Precision, flush_input, round, sanitized_mul, transcendental};

/// Four register lanes.
pub type Vec4 = [f32; 4];

/// `round(a + b)` on flushed inputs (ADD, one lane).
pub fn add(a: f32, b: f32, p: Precision) -> f32 {
    round(flush_input(a, p) + flush_input(b, p), p)
}

/// `round(a * b)` on flushed inputs with inf·0 = 0 (MUL, one lane; also the DST product).
pub fn mul(a: f32, b: f32, p: Precision) -> f32 {
    round(sanitized_mul(flush_input(a, p), flush_input(b, p)), p)
}

/// `round(round(a * b) + c)`: two roundings, never fused (MAD, one lane).
pub fn mad(a: f32, b: f32, c: f32, p: Precision) -> f32 {
    round(mul(a, b, p) + flush_input(c, p), p)
}

/// The rounded products of the first `N` lanes.
fn products<const N: usize>(a: &Vec4, b: &Vec4, p: Precision) -> [f32; N] {
    std::array::from_fn(|i| mul(a[i], b[i], p))
}

/// DP3: F24 modes `round(round(p0 + p1) + p2)`; F32 mode `((0 + p0) + p1) + p2`.
pub fn dp3(a: &Vec4, b: &Vec4, p: Precision) -> f32 {
    let [p0, p1, p2] = products::<3>(a, b, p);
    if p.is_f24() {
        round(round(p0 + p1, p) + p2, p)
    } else {
        round(((0.0 + p0) + p1) + p2, p)
    }
}

/// DP4: F24 modes pairwise `round(round(p0 + p1) + round(p2 + p3))`; F32 mode sequential from +0.
pub fn dp4(a: &Vec4, b: &Vec4, p: Precision) -> f32 {
    let [p0, p1, p2, p3] = products::<4>(a, b, p);
    if p.is_f24() {
        round(round(p0 + p1, p) + round(p2 + p3, p), p)
    } else {
        round((((0.0 + p0) + p1) + p2) + p3, p)
    }
}

/// DPH: DP4 with `a.w` replaced by 1.0 (after swizzle and negate).
pub fn dph(a: &Vec4, b: &Vec4, p: Precision) -> f32 {
    dp4(&[a[0], a[1], a[2], 1.0], b, p)
}

/// DST: `(1, a.y * b.y, a.z, b.w)`; only the product is arithmetic, the copied lanes are raw.
pub fn dst(a: &Vec4, b: &Vec4, p: Precision) -> Vec4 {
    [1.0, mul(a[1], b[1], p), a[2], b[3]]
}

/// RCP: `round(1 / x)` with IEEE division on the flushed input (so rcp(±0) = +inf in F24 modes).
pub fn rcp(x: f32, p: Precision) -> f32 {
    round(1.0 / flush_input(x, p), p)
}

/// RSQ: `round(1 / sqrt(x))` with IEEE square root and division on the flushed input.
pub fn rsq(x: f32, p: Precision) -> f32 {
    round(1.0 / flush_input(x, p).sqrt(), p)
}

/// EX2: the deterministic [`transcendental::exp2`] of the flushed input, rounded.
pub fn ex2(x: f32, p: Precision) -> f32 {
    round(transcendental::exp2(flush_input(x, p)), p)
}

/// LG2: the deterministic [`transcendental::log2`] of the flushed input, rounded.
pub fn lg2(x: f32, p: Precision) -> f32 {
    round(transcendental::log2(flush_input(x, p)), p)
}

/// FLR: floor of the flushed input, rounded (one lane).
pub fn flr(x: f32, p: Precision) -> f32 {
    round(flush_input(x, p).floor(), p)
}

/// MAX: `(a > b) ? a : b` on raw values (x86 `maxps` semantics): max(NaN, 0) = 0,
/// max(0, NaN) = NaN, max(0, −inf) = 0.
pub fn max(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// MIN: `(a < b) ? a : b` on raw values (x86 `minps` semantics).
pub fn min(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

/// SGE: 1.0 when `a >= b` (raw IEEE comparison; any NaN gives 0.0).
pub fn sge(a: f32, b: f32) -> f32 {
    if a >= b { 1.0 } else { 0.0 }
}

/// SLT: 1.0 when `a < b` (raw IEEE comparison; any NaN gives 0.0).
pub fn slt(a: f32, b: f32) -> f32 {
    if a < b { 1.0 } else { 0.0 }
}

/// The comparison operators of CMP (3-bit field values 0..7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// 0: `==`
    Eq,
    /// 1: `!=`
    Ne,
    /// 2: `<`
    Lt,
    /// 3: `<=`
    Le,
    /// 4: `>`
    Gt,
    /// 5: `>=`
    Ge,
    /// 6 and 7: undocumented operators that give true; the field value is kept for encoding.
    True(u8),
}

impl CompareOp {
    /// The operator for a 3-bit field value (only the low 3 bits are used).
    pub const fn from_bits(bits: u32) -> CompareOp {
        match bits & 7 {
            0 => CompareOp::Eq,
            1 => CompareOp::Ne,
            2 => CompareOp::Lt,
            3 => CompareOp::Le,
            4 => CompareOp::Gt,
            5 => CompareOp::Ge,
            other => CompareOp::True(other as u8),
        }
    }

    /// The 3-bit field value.
    pub const fn bits(self) -> u32 {
        match self {
            CompareOp::Eq => 0,
            CompareOp::Ne => 1,
            CompareOp::Lt => 2,
            CompareOp::Le => 3,
            CompareOp::Gt => 4,
            CompareOp::Ge => 5,
            CompareOp::True(b) => b as u32,
        }
    }

    /// The picasso spelling (`eq` .. `ge`); operators 6 and 7 have none, so they print as `op6`/`op7`.
    pub const fn name(self) -> &'static str {
        match self {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
            CompareOp::True(6) => "op6",
            CompareOp::True(_) => "op7",
        }
    }

    /// Evaluates the operator on raw values.
    pub fn compare(self, a: f32, b: f32) -> bool {
        match self {
            CompareOp::Eq => a == b,
            CompareOp::Ne => a != b,
            CompareOp::Lt => a < b,
            CompareOp::Le => a <= b,
            CompareOp::Gt => a > b,
            CompareOp::Ge => a >= b,
            CompareOp::True(_) => true,
        }
    }
}

/// The clamp bound of LITP's y lane, 128 − 2^-8 (exactly representable).
pub const LITP_Y_LIMIT: f32 = 127.996_09;

/// LITP on raw values: `(max(x, 0), clamp(y, ±127.99609375), 0, max(w, 0))` and
/// `cmp = (x >= 0, w >= 0)`.
///
/// `max` is the MAX instruction's `(a > b) ? a : b`, so a NaN x or w gives +0. The clamp keeps a
/// NaN y unchanged (`y < lo ? lo : y > hi ? hi : y`): a project choice, nothing is known.
pub fn litp(v: &Vec4) -> (Vec4, [bool; 2]) {
    let [x, y, _, w] = *v;
    // f32::clamp is `y < lo ? lo : y > hi ? hi : y`: NaN passes through unchanged.
    let y = y.clamp(-LITP_Y_LIMIT, LITP_Y_LIMIT);
    ([max(x, 0.0), y, 0.0, max(w, 0.0)], [x >= 0.0, w >= 0.0])
}

/// MOVA's conversion: truncation toward zero, saturating at the i32 range; NaN gives 0.
pub fn mova(x: f32) -> i32 {
    x as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn litp_limit_is_128_minus_2_pow_minus_8() {
        assert_eq!(LITP_Y_LIMIT, 128.0 - 1.0 / 256.0);
    }

    #[test]
    fn compare_op_bits_round_trip() {
        for bits in 0..8 {
            assert_eq!(CompareOp::from_bits(bits).bits(), bits);
        }
    }
}
