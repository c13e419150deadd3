//! Register values rich in the cases where float24 rules bite: signed zeros, infinities, NaNs
//! (canonical and with payloads), float24 subnormals (m·2^-78), the flush threshold 2^-62 and
//! its neighbours, the largest finite float24 and just above it, results next to rounding ties,
//! and ordinary numbers.
//!
//! Values are given as raw float24 where that is exact (so every precision mode sees the same
//! register value) and as f32 bits where the point is the f32 → register conversion or, in F32
//! mode, a value no float24 holds.

use super::case::{Lane, LaneVec};
use super::rng::Entropy;

/// Raw float24 patterns of special values.
pub const SPECIAL_F24: &[u32] = &[
    0x00_0000, // +0
    0x80_0000, // -0
    0x7F_0000, // +inf
    0xFF_0000, // -inf
    0x7F_8000, // canonical NaN
    0x7F_0001, // NaN with a payload
    0xFF_FFFF, // negative NaN
    0x00_0001, // smallest subnormal, 2^-78
    0x80_0001, 0x00_8000, // subnormal 2^-63
    0x00_FFFF, // largest subnormal
    0x80_FFFF, 0x01_0000, // 2^-62, the smallest normal
    0x81_0000, 0x01_0001, // just above 2^-62
    0x02_0000, // 2^-61
    0x7E_FFFF, // largest finite
    0xFE_FFFF, 0x7E_FFFE, 0x7E_0000, // 2^63
    0x3F_0000, // 1
    0xBF_0000, // -1
    0x40_0000, // 2
    0x3E_0000, // 0.5
    0x3F_0001, // 1 + 2^-16 (one ulp above 1)
    0x3E_FFFF, // just below 1
    0x3F_8000, // 1.5
    0x2F_0000, // 2^-16: half an ulp of 2 is a tie partner
    0x2E_0000, // 2^-17: a tie partner of 1
    0x2E_8000, // 1.5 · 2^-17
    0x2D_FFFF, // just below 2^-17
    0x45_0000, // 64
    0x46_7F00, // 255
    0x1F_0000, // 2^-32 (its square is below 2^-62)
    0x20_0000, // 2^-31 (its square is 2^-62)
    0x5F_0000, // 2^32
    0x5F_FFFF, // its square overflows
];

/// f32 bit patterns: conversions (rounding toward a tie, the flush and overflow edges), f32-only
/// values for F32 mode, NaN payloads.
pub const SPECIAL_F32: &[u32] = &[
    0x0000_0000,
    0x8000_0000, // -0
    0x7F80_0000, // inf
    0xFF80_0000,
    0x7FC0_0000, // quiet NaN
    0x7FC0_1234, // NaN with a payload (kept in F32 mode)
    0xFF80_0001, // signalling NaN, negative
    0x0000_0001, // f32 subnormal
    0x807F_FFFF,
    0x2080_0000, // 2^-62
    0x207F_FFFF, // just below 2^-62
    0x207F_FF80, // just below, with a float24 mantissa
    0x2080_0001,
    0x2000_0000, // 2^-63
    0x5F7F_FF80, // the largest finite float24
    0x5F7F_FFBF, // rounds down in both modes
    0x5F7F_FFC0, // a tie: nearest-even goes to infinity
    0x5F7F_FFC1,
    0x5F80_0000, // 2^64
    0x7F7F_FFFF, // the largest f32
    0x3F80_003F, // 1 + just below half a float24 ulp
    0x3F80_0040, // a tie, even below
    0x3F80_0041,
    0x3F80_00BF,
    0x3F80_00C0, // a tie, odd below: nearest-even rounds up
    0x3F80_00C1,
    0x3F80_007F,
    0x3F80_00FF,
    0xBF80_00C0,
    0x3FFF_FFFF, // rounds up to 2 in nearest-even
    0x3F7F_FFFF,
    0x4049_0FDB, // pi
    0x3DCC_CCCD, // 0.1
];

/// Values MOVA turns into interesting addresses: in range, past c95, outside -128..127,
/// fractions (truncated toward zero), and those saturating or giving 0 (NaN).
pub const ADDRESS_VALUES: &[f32] = &[
    0.0,
    1.0,
    2.0,
    -1.0,
    -2.5,
    0.75,
    -0.75,
    3.9,
    7.0,
    31.0,
    64.0,
    90.0,
    95.0,
    96.0,
    100.0,
    126.0,
    127.0,
    127.5,
    128.0,
    -127.0,
    -128.0,
    -128.5,
    -129.0,
    200.0,
    -200.0,
    255.0,
    1.0e10,
    -1.0e10,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
];

/// Loop counts (i.x: passes − 1), mostly small.
pub const LOOP_COUNTS: &[u8] = &[0, 0, 1, 1, 2, 3, 4, 7, 255];
/// Initial aL values (i.y): in range, at the uniform table's end, beyond it.
pub const LOOP_STARTS: &[u8] = &[
    0, 0, 1, 2, 5, 30, 90, 94, 95, 96, 100, 126, 127, 128, 200, 255,
];
/// aL increments (i.z; added unsigned).
pub const LOOP_STEPS: &[u8] = &[0, 1, 1, 2, 3, 16, 64, 127, 128, 255];

/// A per-test-case palette: a few values that lanes pick from often, so that equal and related
/// values meet (x − x, x · 1/x, comparisons of equals).
#[derive(Clone, Debug)]
pub struct Palette {
    values: Vec<Lane>,
}

impl Palette {
    /// A fresh palette of 4-11 values.
    pub fn new(entropy: &mut Entropy) -> Palette {
        let count = 4 + entropy.index(8);
        let values = (0..count).map(|_| fresh_lane(entropy)).collect();
        Palette { values }
    }

    /// One lane: from the palette, a special value, or something new.
    pub fn lane(&self, entropy: &mut Entropy) -> Lane {
        match entropy.index(10) {
            0..=3 => entropy.pick(&self.values).unwrap_or(Lane::ZERO),
            _ => fresh_lane(entropy),
        }
    }

    /// A four-lane value; sometimes one value in every lane.
    pub fn vector(&self, entropy: &mut Entropy) -> LaneVec {
        if entropy.chance(15) {
            let lane = self.lane(entropy);
            return [lane; 4];
        }
        std::array::from_fn(|_| self.lane(entropy))
    }
}

/// A lane value that is not from a palette.
pub fn fresh_lane(entropy: &mut Entropy) -> Lane {
    match entropy.weighted(&[8, 30, 14, 24, 12, 12]) {
        0 => Lane::ZERO,
        1 => Lane::F24(entropy.pick(SPECIAL_F24).unwrap_or(0)),
        2 => Lane::F32(entropy.pick(SPECIAL_F32).unwrap_or(0)),
        3 => Lane::F24(ordinary_f24(entropy)),
        4 => Lane::F24(entropy.below(1 << 24) as u32),
        _ => Lane::F32(ordinary_f32(entropy)),
    }
}

/// A float24 of moderate magnitude: small integers, simple fractions, random mantissas with
/// exponents near 0 (whose sums and products land next to rounding ties).
fn ordinary_f24(entropy: &mut Entropy) -> u32 {
    let sign = (entropy.below(2) as u32) << 23;
    match entropy.index(3) {
        0 => {
            let integer = (1 + entropy.below(16)) as f32;
            f24_bits(integer) | sign
        }
        1 => {
            let exponent = 63 - 8 + entropy.below(17) as u32;
            sign | exponent << 16 | entropy.below(1 << 16) as u32
        }
        _ => {
            // 1 + a few low mantissa bits: products and sums of these need rounding.
            let low = entropy.below(1 << 4) as u32 | (entropy.below(4) as u32) << 8;
            sign | 0x3F << 16 | low
        }
    }
}

/// An f32 with arbitrary low mantissa bits (converted by the precision mode, kept in F32 mode).
fn ordinary_f32(entropy: &mut Entropy) -> u32 {
    let sign = (entropy.below(2) as u32) << 31;
    let exponent = 127 - 10 + entropy.below(21) as u32;
    let mantissa = entropy.below(1 << 23) as u32;
    sign | exponent << 23 | mantissa
}

/// An address value as a raw float24 (every entry of [`ADDRESS_VALUES`] is exact, NaN and
/// huge values aside, which take the canonical NaN and infinity).
pub fn address_lane(entropy: &mut Entropy) -> Lane {
    let value = entropy.pick(ADDRESS_VALUES).unwrap_or(0.0);
    Lane::F24(f24_bits(value))
}

/// The float24 pattern of `value`, truncated as picasso converts constants (NaN becomes the
/// canonical NaN, values beyond the range infinity).
pub fn f24_bits(value: f32) -> u32 {
    crate::float24::F24::from_f32_picasso(value).bits()
}
