//! The float24 rules of the parent module on four plain lanes, as the interpreter computes
//! them, and the constants and conversions of the instructions that work on raw values.
//!
//! Each function takes already-selected, swizzled and negated source values (raw register
//! values) and returns register values: the "arithmetic" rules (ADD, MUL, MAD, the dot
//! products, RCP, RSQ, EX2, LG2, FLR) flush their inputs and round their results. What each
//! instruction does with them (DST's and LITP's lanes, DPH's a.w, MAX, MIN, SGE, SLT, CMP) is
//! stated once, for every engine, in `crate::exec::operate`.

use super::Precision;
use super::lanes::{self, Exact};

/// Four register lanes.
pub type Vec4 = [f32; 4];

/// ADD on four lanes ([`lanes::add`]).
pub fn add(a: &Vec4, b: &Vec4, p: Precision) -> Vec4 {
    lanes::add(&mut Exact, *a, *b, p)
}

/// MUL on four lanes ([`lanes::mul`]).
pub fn mul(a: &Vec4, b: &Vec4, p: Precision) -> Vec4 {
    lanes::mul(&mut Exact, *a, *b, p)
}

/// MAD on four lanes ([`lanes::mad`]).
pub fn mad(a: &Vec4, b: &Vec4, c: &Vec4, p: Precision) -> Vec4 {
    lanes::mad(&mut Exact, *a, *b, *c, p)
}

/// The dot product of the first `count` (3 or 4) lanes, broadcast ([`lanes::dot`]).
pub fn dot(a: &Vec4, b: &Vec4, count: usize, p: Precision) -> Vec4 {
    // Each count its own instance: the rule unrolls over a constant count.
    if count == 3 {
        lanes::dot(&mut Exact, *a, *b, 3, p)
    } else {
        lanes::dot(&mut Exact, *a, *b, 4, p)
    }
}

/// RCP of a.x, broadcast ([`lanes::rcp`]).
pub fn rcp(a: &Vec4, p: Precision) -> Vec4 {
    lanes::rcp(&mut Exact, *a, p)
}

/// RSQ of a.x, broadcast ([`lanes::rsq`]).
pub fn rsq(a: &Vec4, p: Precision) -> Vec4 {
    lanes::rsq(&mut Exact, *a, p)
}

/// EX2 of a.x, broadcast ([`lanes::ex2`]).
pub fn ex2(a: &Vec4, p: Precision) -> Vec4 {
    lanes::ex2(&mut Exact, *a, p)
}

/// LG2 of a.x, broadcast ([`lanes::lg2`]).
pub fn lg2(a: &Vec4, p: Precision) -> Vec4 {
    lanes::lg2(&mut Exact, *a, p)
}

/// FLR on four lanes ([`lanes::flr`]).
pub fn flr(a: &Vec4, p: Precision) -> Vec4 {
    lanes::flr(&mut Exact, *a, p)
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
    #[inline]
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

/// The clamp bound of LITP's y lane, 128 − 2^-8 (exactly representable). The clamp keeps a
/// NaN y unchanged (`y < lo ? lo : y > hi ? hi : y`): a project choice, nothing is known.
pub const LITP_Y_LIMIT: f32 = 127.996_09;

/// MOVA's conversion: truncation toward zero, saturating at the i32 range; NaN gives 0.
#[inline]
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
