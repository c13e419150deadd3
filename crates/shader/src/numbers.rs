//! The number formats of the GPU's registers other than the shader units' float24 (which
//! `crate::float24` owns): the small floats the rasterizer and the fragment stages are
//! configured with, and the fixed-point formats of the rasterizer. Each conversion is stated
//! once here (docs/gpu.md, "Number formats"); the software GPU (`crate::gpu`) and the scene
//! builder use these, never their own copies.
//!
//! The small floats are all sign, biased exponent, explicit mantissa with a hidden one, an
//! all-ones exponent meaning infinity or NaN, and exponent 0 with a non-zero mantissa a
//! subnormal: a value is decoded exactly into the `f32` of the same value (every format here
//! fits). Encoding (for the builder) truncates the mantissa toward zero, as picasso does for
//! float24.

use crate::float24::F24;

/// A small binary floating-point format of the GPU's registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmallFloat {
    /// Explicit mantissa bits.
    pub mantissa_bits: u32,
    /// Exponent bits.
    pub exponent_bits: u32,
}

/// float1.7.16: the shader units' float24, used also by viewport sizes, depth mapping, clip
/// planes and fixed attributes.
pub const FLOAT24: SmallFloat = SmallFloat {
    mantissa_bits: 16,
    exponent_bits: 7,
};

/// float1.7.23 ("f31"): the viewport's inverse sizes (in bits 1-31 of their registers).
pub const FLOAT31: SmallFloat = SmallFloat {
    mantissa_bits: 23,
    exponent_bits: 7,
};

/// float1.5.10 (a half float's layout): fog and lighting registers.
pub const FLOAT16: SmallFloat = SmallFloat {
    mantissa_bits: 10,
    exponent_bits: 5,
};

/// float1.7.12: the lights' distance-attenuation bias and scale.
pub const FLOAT20: SmallFloat = SmallFloat {
    mantissa_bits: 12,
    exponent_bits: 7,
};

impl SmallFloat {
    /// The bits a value takes.
    pub const fn width(self) -> u32 {
        1 + self.exponent_bits + self.mantissa_bits
    }

    const fn bias(self) -> i32 {
        (1 << (self.exponent_bits - 1)) - 1
    }

    /// The `f32` whose value is exactly the value of `bits` (only the low [`Self::width`] bits
    /// count).
    #[inline]
    pub fn to_f32(self, bits: u32) -> f32 {
        let bits = bits & ((1u64 << self.width()) - 1) as u32;
        let mantissa = bits & ((1 << self.mantissa_bits) - 1);
        let exponent = (bits >> self.mantissa_bits) & ((1 << self.exponent_bits) - 1);
        let sign = bits >> (self.width() - 1);
        let top = (1 << self.exponent_bits) - 1;
        let magnitude = if exponent == top {
            if mantissa == 0 {
                f32::INFINITY
            } else {
                // The payload's top bits, so a quiet NaN stays quiet.
                f32::from_bits(0x7F80_0000 | (mantissa << (23 - self.mantissa_bits)))
            }
        } else {
            let significand = if exponent == 0 {
                mantissa
            } else {
                mantissa | 1 << self.mantissa_bits
            };
            let scale = exponent.max(1) as i32 - self.bias() - self.mantissa_bits as i32;
            // Exact: the significand fits f32's 24 bits and the scale stays in f32's range.
            significand as f32 * 2f32.powi(scale)
        };
        if sign == 1 { -magnitude } else { magnitude }
    }

    /// The bits of `value` in this format, the mantissa truncated toward zero; values too
    /// small for a normal number become zero of the same sign, values too large infinity, a
    /// NaN the quiet NaN.
    #[inline]
    pub fn from_f32(self, value: f32) -> u32 {
        let sign = u32::from(value.is_sign_negative()) << (self.width() - 1);
        let top = (1 << self.exponent_bits) - 1;
        if value.is_nan() {
            return (top << self.mantissa_bits) | 1 << (self.mantissa_bits - 1);
        }
        let bits = value.abs().to_bits();
        let exponent = ((bits >> 23) & 0xFF) as i32 - 127 + self.bias();
        if bits == 0 || exponent <= 0 {
            return sign;
        }
        if exponent >= top as i32 {
            return sign | top << self.mantissa_bits;
        }
        let mantissa = (bits & 0x7F_FFFF) >> (23 - self.mantissa_bits);
        sign | (exponent as u32) << self.mantissa_bits | mantissa
    }
}

/// A float24 register value (the low 24 bits of `word`) as the `f32` of the same value.
#[inline]
pub fn float24_register(word: u32) -> f32 {
    F24::from_bits_truncated(word).to_f32()
}

/// A signed fixed-point value of `int_bits` integer bits (sign included) and `frac_bits`
/// fraction bits, in the low bits of `word`, as the `f32` of the same value (exact while the
/// total is at most 24 bits).
#[inline]
pub fn signed_fixed(word: u32, int_bits: u32, frac_bits: u32) -> f32 {
    let width = int_bits + frac_bits;
    let raw = (word << (32 - width)) as i32 >> (32 - width);
    raw as f32 / (1u32 << frac_bits) as f32
}

/// An unsigned fixed-point value of `int_bits` integer bits and `frac_bits` fraction bits, in
/// the low bits of `word`, as the `f32` of the same value (exact while the total is at most 24
/// bits).
#[inline]
pub fn unsigned_fixed(word: u32, int_bits: u32, frac_bits: u32) -> f32 {
    let width = int_bits + frac_bits;
    let raw = word & ((1u64 << width) - 1) as u32;
    raw as f32 / (1u32 << frac_bits) as f32
}

/// A sign-extended integer of `bits` bits from the low bits of `word` (the viewport corner, the
/// scissor box).
pub const fn sign_extend(word: u32, bits: u32) -> i32 {
    ((word << (32 - bits)) as i32) >> (32 - bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float24_agrees_with_the_shader_units_decoding_on_every_pattern_class() {
        for bits in [
            0u32, 0x80_0000, 0x3F_0000, 0xBF_0000, 0x7F_0000, 0xFF_0000, 0x7F_8000, 0x00_0001,
            0x01_0000, 0x40_8000, 0x7E_FFFF,
        ] {
            assert_eq!(
                FLOAT24.to_f32(bits).to_bits(),
                F24::from_bits_truncated(bits).to_f32().to_bits(),
                "{bits:#x}"
            );
        }
    }

    #[test]
    fn known_values_of_each_format() {
        // float1.5.10 is a half float: 1.0 = 0x3C00, -2.0 = 0xC000, 65504 = 0x7BFF.
        assert_eq!(FLOAT16.to_f32(0x3C00), 1.0);
        assert_eq!(FLOAT16.to_f32(0xC000), -2.0);
        assert_eq!(FLOAT16.to_f32(0x7BFF), 65504.0);
        assert_eq!(FLOAT16.to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(FLOAT16.to_f32(0x7C00), f32::INFINITY);
        // float1.7.23 has float24's exponent (bias 63) and f32's mantissa.
        assert_eq!(FLOAT31.to_f32(63 << 23), 1.0);
        assert_eq!(FLOAT31.to_f32((63 - 8) << 23 | 0x40_0000), 1.5 / 256.0);
    }

    #[test]
    fn encoding_round_trips_values_of_the_format_and_truncates_others() {
        for format in [FLOAT16, FLOAT24, FLOAT31] {
            for value in [1.0f32, -0.75, 3.5, 1024.0, 0.0078125] {
                assert_eq!(format.to_f32(format.from_f32(value)), value, "{format:?}");
            }
            assert_eq!(format.to_f32(format.from_f32(f32::INFINITY)), f32::INFINITY);
            assert!(format.to_f32(format.from_f32(f32::NAN)).is_nan());
        }
        // 1 + 2^-11 has no float1.5.10 image: truncated to 1.
        assert_eq!(FLOAT16.from_f32(1.0 + 2f32.powi(-11)), 0x3C00);
        assert_eq!(FLOAT24.from_f32(1.0), F24::ONE.bits());
    }

    #[test]
    fn fixed_point_and_sign_extension() {
        assert_eq!(signed_fixed(0xFFF, 8, 4), -1.0 / 16.0);
        assert_eq!(signed_fixed(0x7F8, 8, 4), 127.5);
        assert_eq!(unsigned_fixed(0xFFF, 8, 4), 255.9375);
        assert_eq!(sign_extend(0x3FF, 10), -1);
        assert_eq!(sign_extend(0x1FF, 10), 511);
    }
}
