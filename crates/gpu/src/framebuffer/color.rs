//! Pixel formats of colour and depth buffers, and the 8×8 Morton tiling every GPU surface uses
//! (docs/gpu.md, "Framebuffer"). Each channel conversion is stated once: narrowing keeps the
//! top bits, widening replicates them.

/// An 8-bit-per-channel colour: r, g, b, a.
pub type Rgba8 = [u8; 4];

/// A colour buffer (and display-transfer) pixel format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorFormat {
    /// 32 bits: bytes a, b, g, r in memory.
    Rgba8,
    /// 24 bits: bytes b, g, r.
    Rgb8,
    /// 16 bits: r5 g5 b5 a1 (most significant first).
    Rgb5a1,
    /// 16 bits: r5 g6 b5.
    Rgb565,
    /// 16 bits: r4 g4 b4 a4.
    Rgba4,
}

impl ColorFormat {
    /// The format of a colour buffer's format field (COLORBUFFER_FORMAT bits 16-18); `None`
    /// for the codes without one.
    pub const fn from_framebuffer_code(code: u32) -> Option<ColorFormat> {
        match code {
            0 => Some(ColorFormat::Rgba8),
            1 => Some(ColorFormat::Rgb8),
            2 => Some(ColorFormat::Rgb5a1),
            3 => Some(ColorFormat::Rgb565),
            4 => Some(ColorFormat::Rgba4),
            _ => None,
        }
    }

    /// The framebuffer code.
    pub const fn framebuffer_code(self) -> u32 {
        match self {
            ColorFormat::Rgba8 => 0,
            ColorFormat::Rgb8 => 1,
            ColorFormat::Rgb5a1 => 2,
            ColorFormat::Rgb565 => 3,
            ColorFormat::Rgba4 => 4,
        }
    }

    /// The format of a display-transfer format field (the external registers order RGB565
    /// before RGB5A1).
    pub const fn from_transfer_code(code: u32) -> Option<ColorFormat> {
        match code {
            0 => Some(ColorFormat::Rgba8),
            1 => Some(ColorFormat::Rgb8),
            2 => Some(ColorFormat::Rgb565),
            3 => Some(ColorFormat::Rgb5a1),
            4 => Some(ColorFormat::Rgba4),
            _ => None,
        }
    }

    /// The display-transfer code.
    pub const fn transfer_code(self) -> u32 {
        match self {
            ColorFormat::Rgba8 => 0,
            ColorFormat::Rgb8 => 1,
            ColorFormat::Rgb565 => 2,
            ColorFormat::Rgb5a1 => 3,
            ColorFormat::Rgba4 => 4,
        }
    }

    /// Bytes per pixel.
    pub const fn bytes(self) -> usize {
        match self {
            ColorFormat::Rgba8 => 4,
            ColorFormat::Rgb8 => 3,
            _ => 2,
        }
    }

    /// The colour of the pixel at the start of `bytes`.
    #[inline]
    pub fn decode(self, bytes: &[u8]) -> Rgba8 {
        match self {
            ColorFormat::Rgba8 => [bytes[3], bytes[2], bytes[1], bytes[0]],
            ColorFormat::Rgb8 => [bytes[2], bytes[1], bytes[0], 255],
            _ => {
                let v = u16::from_le_bytes([bytes[0], bytes[1]]) as u32;
                match self {
                    ColorFormat::Rgb5a1 => [
                        widen(v >> 11, 5),
                        widen(v >> 6, 5),
                        widen(v >> 1, 5),
                        widen(v, 1),
                    ],
                    ColorFormat::Rgb565 => [widen(v >> 11, 5), widen(v >> 5, 6), widen(v, 5), 255],
                    _ => [
                        widen(v >> 12, 4),
                        widen(v >> 8, 4),
                        widen(v >> 4, 4),
                        widen(v, 4),
                    ],
                }
            }
        }
    }

    /// Stores `color` at the start of `bytes`.
    #[inline]
    pub fn encode(self, color: Rgba8, bytes: &mut [u8]) {
        let [r, g, b, a] = color.map(u32::from);
        match self {
            ColorFormat::Rgba8 => bytes[..4].copy_from_slice(&[a as u8, b as u8, g as u8, r as u8]),
            ColorFormat::Rgb8 => bytes[..3].copy_from_slice(&[b as u8, g as u8, r as u8]),
            _ => {
                let v = match self {
                    ColorFormat::Rgb5a1 => {
                        narrow(r, 5) << 11 | narrow(g, 5) << 6 | narrow(b, 5) << 1 | narrow(a, 1)
                    }
                    ColorFormat::Rgb565 => narrow(r, 5) << 11 | narrow(g, 6) << 5 | narrow(b, 5),
                    _ => narrow(r, 4) << 12 | narrow(g, 4) << 8 | narrow(b, 4) << 4 | narrow(a, 4),
                };
                bytes[..2].copy_from_slice(&(v as u16).to_le_bytes());
            }
        }
    }
}

/// The low `bits` bits of `value` widened to 8 bits by replicating them.
pub const fn widen(value: u32, bits: u32) -> u8 {
    let v = value & ((1 << bits) - 1);
    let mut out = 0u32;
    let mut filled = 0;
    while filled < 8 {
        let shift = 8 - filled as i32 - bits as i32;
        out |= if shift >= 0 { v << shift } else { v >> -shift };
        filled += bits;
    }
    out as u8
}

/// A value in [0, 1] as 8 bits: c · 255 rounded half away from zero (values outside clamp):
/// interpolated colours and the fragment-lighting colours.
pub fn unorm8(value: f32) -> u8 {
    let scaled = value.clamp(0.0, 1.0) * 255.0;
    // Truncation is exact and cheap (through i32, one instruction where u32 takes several; the
    // same value for [0, 255], and NaN gives 0 either way); the fraction decides the rounding.
    let whole = scaled as i32;
    (whole + (scaled - whole as f32 >= 0.5) as i32) as u8
}

/// An 8-bit channel narrowed to its top `bits` bits.
pub const fn narrow(value: u32, bits: u32) -> u32 {
    (value & 0xFF) >> (8 - bits)
}

/// A depth buffer format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepthFormat {
    /// 16-bit depth.
    D16,
    /// 24-bit depth.
    D24,
    /// 24-bit depth and 8-bit stencil.
    D24S8,
}

impl DepthFormat {
    /// The format of DEPTHBUFFER_FORMAT bits 0-1 (`None` for code 1).
    pub const fn from_code(code: u32) -> Option<DepthFormat> {
        match code & 3 {
            0 => Some(DepthFormat::D16),
            2 => Some(DepthFormat::D24),
            3 => Some(DepthFormat::D24S8),
            _ => None,
        }
    }

    /// Its code.
    pub const fn code(self) -> u32 {
        match self {
            DepthFormat::D16 => 0,
            DepthFormat::D24 => 2,
            DepthFormat::D24S8 => 3,
        }
    }

    /// Bytes per pixel.
    pub const fn bytes(self) -> usize {
        match self {
            DepthFormat::D16 => 2,
            DepthFormat::D24 => 3,
            DepthFormat::D24S8 => 4,
        }
    }

    /// Bits of depth.
    pub const fn depth_bits(self) -> u32 {
        match self {
            DepthFormat::D16 => 16,
            _ => 24,
        }
    }

    /// The depth and stencil of the pixel at the start of `bytes` (stencil 0 without one).
    pub fn decode(self, bytes: &[u8]) -> (u32, u8) {
        match self {
            DepthFormat::D16 => (u16::from_le_bytes([bytes[0], bytes[1]]) as u32, 0),
            DepthFormat::D24 => (u32::from_le_bytes([bytes[0], bytes[1], bytes[2], 0]), 0),
            DepthFormat::D24S8 => (
                u32::from_le_bytes([bytes[0], bytes[1], bytes[2], 0]),
                bytes[3],
            ),
        }
    }

    /// Stores depth (and stencil, where the format has it) at the start of `bytes`.
    pub fn encode(self, depth: u32, stencil: u8, bytes: &mut [u8]) {
        let d = depth.to_le_bytes();
        match self {
            DepthFormat::D16 => bytes[..2].copy_from_slice(&d[..2]),
            DepthFormat::D24 => bytes[..3].copy_from_slice(&d[..3]),
            DepthFormat::D24S8 => bytes[..4].copy_from_slice(&[d[0], d[1], d[2], stencil]),
        }
    }
}

/// The index of pixel (x, y) (each 0-7) inside an 8×8 tile: the bits of x and y interleaved,
/// x's lowest first.
pub const fn morton(x: u32, y: u32) -> u32 {
    (x & 1) | (y & 1) << 1 | (x & 2) << 1 | (y & 2) << 2 | (x & 4) << 2 | (y & 4) << 3
}

/// The byte offset of pixel (x, y_mem) in a tiled surface `width` pixels wide (`y_mem` counts
/// rows in memory order) with `bytes` per pixel.
pub const fn tiled_offset(x: u32, y_mem: u32, width: u32, bytes: u32) -> usize {
    (((y_mem & !7) * width + (x & !7) * 8 + morton(x & 7, y_mem & 7)) * bytes) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `unorm8` is c · 255 (in f32) rounded half away from zero, clamped: the same as
    /// `f32::round` on the product, on a spread of values, on the 64 floats either side of
    /// every rounding boundary (k + ½) / 255, outside [0, 1], and on NaN (0, as the clamp of
    /// an undefined value) and the infinities.
    #[test]
    fn unorm8_rounds_half_away_from_zero() {
        let expected = |v: f32| {
            if v.is_nan() {
                0
            } else {
                (v.clamp(0.0, 1.0) * 255.0).round() as u8
            }
        };
        let mut values: Vec<f32> = (0..=100_000).map(|k| k as f32 / 100_000.0).collect();
        for k in 0..255 {
            let boundary = (k as f32 + 0.5) / 255.0;
            for step in -64..=64i32 {
                values.push(f32::from_bits(boundary.to_bits().wrapping_add_signed(step)));
            }
        }
        values.extend([
            -1.0,
            -0.0,
            1.5,
            1e30,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ]);
        for v in values {
            assert_eq!(unorm8(v), expected(v), "{v:e} ({:#x})", v.to_bits());
        }
    }

    #[test]
    fn morton_matches_the_documented_tile() {
        let first_row: Vec<u32> = (0..8).map(|x| morton(x, 0)).collect();
        assert_eq!(first_row, [0, 1, 4, 5, 16, 17, 20, 21]);
        let first_column: Vec<u32> = (0..8).map(|y| morton(0, y)).collect();
        assert_eq!(first_column, [0, 2, 8, 10, 32, 34, 40, 42]);
        assert_eq!(morton(7, 7), 63);
        let mut seen = [false; 64];
        for y in 0..8 {
            for x in 0..8 {
                seen[morton(x, y) as usize] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        // Tiles follow in x, then bands of 8 rows.
        assert_eq!(tiled_offset(8, 0, 16, 4), 64 * 4);
        assert_eq!(tiled_offset(0, 8, 16, 4), 128 * 4);
    }

    #[test]
    fn formats_store_the_documented_bytes() {
        let mut bytes = [0u8; 4];
        ColorFormat::Rgba8.encode([1, 2, 3, 4], &mut bytes);
        assert_eq!(bytes, [4, 3, 2, 1]);
        ColorFormat::Rgb565.encode([0xFF, 0x00, 0xFF, 0], &mut bytes);
        assert_eq!(u16::from_le_bytes([bytes[0], bytes[1]]), 0xF81F);
        assert_eq!(ColorFormat::Rgb565.decode(&bytes), [255, 0, 255, 255]);
        ColorFormat::Rgb5a1.encode([0x80, 0x40, 0x20, 0x80], &mut bytes);
        assert_eq!(
            u16::from_le_bytes([bytes[0], bytes[1]]),
            0x10 << 11 | 0x08 << 6 | 0x04 << 1 | 1
        );
        ColorFormat::Rgba4.encode([0x12, 0x34, 0x56, 0x78], &mut bytes);
        assert_eq!(u16::from_le_bytes([bytes[0], bytes[1]]), 0x1357);
        assert_eq!(ColorFormat::Rgba4.decode(&bytes), [0x11, 0x33, 0x55, 0x77]);
        // Widening replicates: 5 bits 0b10000 -> 0b10000100.
        assert_eq!(widen(0x10, 5), 0x84);
        assert_eq!(widen(0x3F, 6), 0xFF);
        assert_eq!(widen(1, 1), 0xFF);
        assert_eq!(widen(0xA, 4), 0xAA);
        let mut depth = [0u8; 4];
        DepthFormat::D24S8.encode(0x123456, 0x78, &mut depth);
        assert_eq!(depth, [0x56, 0x34, 0x12, 0x78]);
        assert_eq!(DepthFormat::D24S8.decode(&depth), (0x123456, 0x78));
    }

    #[test]
    fn every_format_round_trips_its_own_values() {
        for format in [
            ColorFormat::Rgba8,
            ColorFormat::Rgb8,
            ColorFormat::Rgb5a1,
            ColorFormat::Rgb565,
            ColorFormat::Rgba4,
        ] {
            assert_eq!(
                ColorFormat::from_framebuffer_code(format.framebuffer_code()),
                Some(format)
            );
            assert_eq!(
                ColorFormat::from_transfer_code(format.transfer_code()),
                Some(format)
            );
            for seed in 0..=255u32 {
                let color = [
                    seed as u8,
                    (seed * 7) as u8,
                    (seed * 13) as u8,
                    (seed * 29) as u8,
                ];
                let mut bytes = [0u8; 4];
                format.encode(color, &mut bytes);
                let decoded = format.decode(&bytes);
                let mut again = [0u8; 4];
                format.encode(decoded, &mut again);
                assert_eq!(bytes, again, "{format:?}");
            }
        }
    }
}
