//! The float24 value model: the single source of truth for every number rule.
//!
//! A PICA200 register component is a float24 (1 sign bit, 7 exponent bits with bias 63, 16 mantissa
//! bits). This crate stores it as the `f32` whose value is exactly that float24: every float24,
//! subnormals included, is an f32 normal or zero, so a register is four f32 lanes.
//!
//! The rules of docs/execution-model.md §1, §2 and §7 live here, each stated once:
//!
//! * [`F24`]: the raw 24-bit pattern and its exact conversion to and from `f32` bits;
//! * the bit-level constants ([`MIN_NORMAL_BITS`], [`MAX_FINITE_BITS`], [`CANONICAL_NAN_BITS`],
//!   [`DROPPED_MANTISSA_BITS`]);
//! * [`lanes`]: every arithmetic rule (flush, inf·0 = 0, rounding and the range rules, the dot
//!   product's summation order, MAD, RCP, RSQ, EX2, LG2, FLR) written once against a small lane
//!   abstraction that the interpreter runs on arrays and the JIT compiles to vector code;
//! * [`Precision`]: how an arithmetic result becomes a register value ([`round`]);
//! * [`flush_input`], [`sanitized_mul`]: the one-value forms of two rules;
//! * [`convert_f32`]: an f32 entering a register (uniform upload, attributes, JSON input);
//! * [`pack_uniform`] / [`unpack_uniform`]: the 3-word float24 uniform upload format;
//! * [`arith`]: the per-instruction arithmetic built from those rules;
//! * [`transcendental`]: the deterministic pure-Rust EX2 and LG2.
//!
//! The JIT emits these same rules as machine code, and the differential tester checks it
//! against the interpreter bit for bit.

pub mod arith;
pub mod lanes;
pub mod transcendental;

use std::fmt;

/// The canonical NaN as f32 bits: every NaN produced by an arithmetic operation has this pattern.
pub const CANONICAL_NAN_BITS: u32 = 0x7FC0_0000;

/// The canonical NaN as a raw float24 (`0x7F8000`), the f24 image of [`CANONICAL_NAN_BITS`].
pub const CANONICAL_NAN_F24: u32 = 0x7F_8000;

/// The canonical NaN as an `f32` value.
pub const CANONICAL_NAN: f32 = f32::from_bits(CANONICAL_NAN_BITS);

/// The smallest positive normal float24, 2^-62. Smaller magnitudes are flushed by the range rules.
pub const MIN_NORMAL: f32 = f32::from_bits(MIN_NORMAL_BITS);

/// The bits of [`MIN_NORMAL`].
pub const MIN_NORMAL_BITS: u32 = (127 - 62) << 23;

/// The largest finite float24, (2 - 2^-16) · 2^63.
pub const MAX_FINITE: f32 = f32::from_bits(MAX_FINITE_BITS);

/// The bits of [`MAX_FINITE`].
pub const MAX_FINITE_BITS: u32 = ((63 + 127) << 23) | (0xFFFF << 7);

/// Mask of the f32 mantissa bits that a float24 cannot hold.
pub const DROPPED_MANTISSA_BITS: u32 = 0x7F;

/// A raw float24 bit pattern (the low 24 bits of the wrapped `u32`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct F24(u32);

impl F24 {
    /// Positive zero.
    pub const ZERO: F24 = F24(0);
    /// One (`0x3F0000`).
    pub const ONE: F24 = F24(0x3F_0000);

    /// Wraps a raw pattern; `None` when bits above bit 23 are set.
    #[inline]
    pub const fn from_bits(bits: u32) -> Option<F24> {
        if bits > 0xFF_FFFF {
            None
        } else {
            Some(F24(bits))
        }
    }

    /// Wraps the low 24 bits of `bits`, ignoring the rest (as the upload hardware does).
    #[inline]
    pub const fn from_bits_truncated(bits: u32) -> F24 {
        F24(bits & 0xFF_FFFF)
    }

    /// The raw 24-bit pattern.
    #[inline]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The sign bit.
    #[inline]
    pub const fn sign(self) -> u32 {
        self.0 >> 23
    }

    /// The biased 7-bit exponent.
    #[inline]
    pub const fn exponent(self) -> u32 {
        (self.0 >> 16) & 0x7F
    }

    /// The 16 explicit mantissa bits.
    #[inline]
    pub const fn mantissa(self) -> u32 {
        self.0 & 0xFFFF
    }

    /// The f32 bit pattern whose value is exactly this float24.
    ///
    /// Exponent 1..126 maps to f32 exponent +64 and the mantissa shifts left by 7; exponent 0 with a
    /// non-zero mantissa is the subnormal m·2^-78, kept exactly; exponent 127 is ±inf or NaN.
    #[inline]
    pub const fn to_f32_bits(self) -> u32 {
        let sign = self.sign() << 31;
        let exp = self.exponent();
        let man = self.mantissa();
        match exp {
            0 if man == 0 => sign,
            0 => {
                // m·2^-78 with m < 2^16: normalise so the leading one becomes the hidden bit.
                let lead = 31 - man.leading_zeros(); // position of the top set bit, 0..15
                let f32_exp = lead + 127 - 78;
                let frac = (man << (23 - lead)) & 0x7F_FFFF;
                sign | (f32_exp << 23) | frac
            }
            127 => sign | (0xFF << 23) | (man << 7),
            _ => sign | ((exp + 64) << 23) | (man << 7),
        }
    }

    /// The `f32` whose value is exactly this float24.
    #[inline]
    pub const fn to_f32(self) -> f32 {
        f32::from_bits(self.to_f32_bits())
    }

    /// The float24 whose value is exactly `value`, or `None` when `value` is not a float24
    /// (too many mantissa bits, outside the exponent range, or a NaN whose payload lives only in
    /// the 7 low mantissa bits).
    pub fn from_f32_exact(value: f32) -> Option<F24> {
        let bits = value.to_bits();
        let sign = (bits >> 31) << 23;
        let exp = (bits >> 23) & 0xFF;
        let frac = bits & 0x7F_FFFF;
        if exp == 0 {
            return (frac == 0).then_some(F24(sign));
        }
        if exp == 0xFF {
            // A NaN whose payload sits only in the dropped bits has no float24 image.
            if frac & DROPPED_MANTISSA_BITS != 0 {
                return None;
            }
            return Some(F24(sign | (0x7F << 16) | (frac >> 7)));
        }
        let unbiased = exp as i32 - 127;
        if (-62..=63).contains(&unbiased) {
            if frac & DROPPED_MANTISSA_BITS != 0 {
                return None;
            }
            return Some(F24(sign | (((unbiased + 63) as u32) << 16) | (frac >> 7)));
        }
        // The subnormal range: m·2^-78 with 1 <= m < 2^16.
        if (-78..-62).contains(&unbiased) {
            let shift = (-62 - unbiased) as u32; // 1..=16
            let full = frac | 0x80_0000; // 24-bit significand, value full·2^(unbiased-23)
            let drop = 7 + shift;
            if full & ((1 << drop) - 1) != 0 {
                return None;
            }
            return Some(F24(sign | (full >> drop)));
        }
        None
    }
}

impl F24 {
    /// picasso's f32 → float24 conversion of `.constf` values (docs/shbin-and-picasso.md): the
    /// mantissa truncated to 16 bits, values below 2^-63 to signed zero, exponent 0 keeping its
    /// mantissa (a float24 subnormal pattern), values of 2^64 and above to signed infinity, and
    /// NaN to the canonical NaN.
    pub fn from_f32_picasso(value: f32) -> F24 {
        if value.is_nan() {
            return F24(CANONICAL_NAN_F24);
        }
        let bits = value.to_bits();
        let sign = (bits >> 31) << 23;
        let exponent = ((bits >> 23) & 0xFF) as i32 - 127 + 63;
        let mantissa = (bits & 0x7F_FFFF) >> 7;
        let pattern = if exponent < 0 {
            sign
        } else if exponent >= 0x7F {
            sign | 0x7F << 16
        } else {
            sign | (exponent as u32) << 16 | mantissa
        };
        F24(pattern)
    }
}

impl fmt::Debug for F24 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "F24({:#08x} = {:?})", self.0, self.to_f32())
    }
}

/// How arithmetic results (and f32 inputs) become register values. Chosen when a program is
/// compiled; both engines implement all three bit for bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// `f24`: truncate the mantissa toward zero to 16 bits, then the range rules (the default and
    /// best current guess at the hardware).
    #[default]
    F24Truncate,
    /// `f24-rne`: round the mantissa to nearest-even at 16 bits, then the range rules.
    F24Nearest,
    /// `f32`: keep the f32 result (only the inf·0 rule and NaN canonicalisation apply).
    F32,
}

impl Precision {
    /// Every mode, in command-line order.
    pub const ALL: [Precision; 3] = [
        Precision::F24Truncate,
        Precision::F24Nearest,
        Precision::F32,
    ];

    /// The name used on the command line and in reports.
    #[inline]
    pub const fn name(self) -> &'static str {
        match self {
            Precision::F24Truncate => "f24",
            Precision::F24Nearest => "f24-rne",
            Precision::F32 => "f32",
        }
    }

    /// Parses a command-line name (`f24`, `f24-rne`, `f32`).
    pub fn from_name(name: &str) -> Option<Precision> {
        Precision::ALL.into_iter().find(|p| p.name() == name)
    }

    /// What the mode does to an arithmetic result, in a line (command-line help).
    #[inline]
    pub const fn summary(self) -> &'static str {
        match self {
            Precision::F24Truncate => {
                "truncate the mantissa to 16 bits, then the float24 range rules (the default)"
            }
            Precision::F24Nearest => {
                "round the mantissa to nearest even at 16 bits, then the float24 range rules"
            }
            Precision::F32 => "keep the f32 result (only inf*0 = 0 and NaN canonicalisation)",
        }
    }

    /// Whether this mode applies the float24 rounding, range rules and input flushing.
    #[inline]
    pub const fn is_f24(self) -> bool {
        match self {
            Precision::F24Truncate | Precision::F24Nearest => true,
            Precision::F32 => false,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An arithmetic result becoming a register value under `precision`
/// ([`lanes::round`] on one value).
#[inline]
pub fn round(value: f32, precision: Precision) -> f32 {
    lanes::round(&mut lanes::Exact, [value; 4], precision)[0]
}

/// Converts an f32 entering a register from outside (a float32-mode uniform, an f32 vertex
/// attribute, a JSON input value): the mode's rounding and range rules; F32 mode keeps the value
/// unchanged, NaN payloads included.
#[inline]
pub fn convert_f32(value: f32, precision: Precision) -> f32 {
    match precision {
        Precision::F32 => value,
        _ => round(value, precision),
    }
}

/// The input flush of arithmetic instructions ([`lanes::flush`] on one value).
#[inline]
pub fn flush_input(value: f32, precision: Precision) -> f32 {
    lanes::flush(&mut lanes::Exact, [value; 4], precision)[0]
}

/// The multiply with inf·0 = 0 ([`lanes::sanitized_mul`] on one value).
#[inline]
pub fn sanitized_mul(a: f32, b: f32) -> f32 {
    lanes::sanitized_mul(&mut lanes::Exact, [a; 4], [b; 4])[0]
}

/// Packs four float24 values into the 3-word upload format of the float-uniform FIFO (and fixed
/// attributes): `word0 = w<<8 | z>>16`, `word1 = (z&0xFFFF)<<16 | y>>8`, `word2 = (y&0xFF)<<24 | x`.
#[inline]
pub const fn pack_uniform(v: [F24; 4]) -> [u32; 3] {
    let [x, y, z, w] = [v[0].0, v[1].0, v[2].0, v[3].0];
    [
        (w << 8) | (z >> 16),
        ((z & 0xFFFF) << 16) | (y >> 8),
        ((y & 0xFF) << 24) | x,
    ]
}

/// Unpacks the 3-word upload format into x, y, z, w (the inverse of [`pack_uniform`]).
#[inline]
pub const fn unpack_uniform(words: [u32; 3]) -> [F24; 4] {
    let [w0, w1, w2] = words;
    [
        F24(w2 & 0xFF_FFFF),
        F24(((w1 & 0xFFFF) << 8) | (w2 >> 24)),
        F24(((w0 & 0xFF) << 16) | (w1 >> 16)),
        F24(w0 >> 8),
    ]
}

/// Converts a vector uploaded in float32 mode (words in the order the FIFO receives them: w, z,
/// y, x) to register values under `precision`.
#[inline]
pub fn unpack_uniform_f32(words: [u32; 4], precision: Precision) -> [f32; 4] {
    let lane = |i: usize| convert_f32(f32::from_bits(words[3 - i]), precision);
    [lane(0), lane(1), lane(2), lane(3)]
}

#[cfg(test)]
mod tests;
