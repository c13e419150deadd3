//! The per-fragment operations (docs/gpu.md, "Per-fragment operations"): alpha test, stencil test,
//! depth test, blending or a logic op, and the write masks, on 8-bit channels
//! (docs/gpu-rasterizer-and-framebuffer.md §5). [`write()`] applies them to one pixel of a band.

use shader::numbers::FLOAT16;

use crate::framebuffer::color::{ColorFormat, DepthFormat, Rgba8, tiled_offset};
use crate::framebuffer::target::{BandPixels, TargetConfig};
use crate::regs::{RegisterFile, bits, id};

use super::combiner::rgba_of;

/// COLOR_OPERATION's fragment-operation mode that renders a shadow map.
pub const SHADOW_MODE: u32 = 3;

/// A compare function (codes 0-7: never, always, ==, !=, <, <=, >, >=).
pub fn compare(function: u32, a: u32, b: u32) -> bool {
    match function & 7 {
        0 => false,
        1 => true,
        2 => a == b,
        3 => a != b,
        4 => a < b,
        5 => a <= b,
        6 => a > b,
        _ => a >= b,
    }
}

/// The per-fragment operations' configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FragmentOps {
    /// COLOR_OPERATION bits 0-1: 0 default, 3 shadow ([`SHADOW_MODE`]; 1, gas accumulation, is
    /// `fragment::gas`'s).
    pub mode: u32,
    /// FRAGOP_SHADOW: the soft shadow's constant (bits 0-15) and linear (16-31) terms,
    /// float1.5.10.
    pub shadow: [f32; 2],
    /// Blending (else the logic op).
    pub blend: bool,
    /// BLEND_FUNC.
    pub blend_func: u32,
    /// LOGIC_OP.
    pub logic_op: u32,
    /// BLEND_COLOR.
    pub blend_color: Rgba8,
    /// FRAGOP_ALPHA_TEST.
    pub alpha_test: u32,
    /// STENCIL_TEST.
    pub stencil_test: u32,
    /// STENCIL_OP.
    pub stencil_op: u32,
    /// DEPTH_COLOR_MASK.
    pub depth_color: u32,
    /// Whether the colour buffer is written (COLORBUFFER_WRITE).
    pub color_write: bool,
    /// Whether depth and stencil are written (DEPTHBUFFER_WRITE).
    pub depth_write: bool,
    /// What the colour output comes to in the state most draws use, worked out once
    /// ([`FragmentOps::common`]); `None` for every other state.
    pub common: Option<CommonOutput>,
}

/// The colour output of the state most draws use: no stencil test, all four channels
/// written, and the colour either replacing the stored one or alpha-blended over it
/// ([`FragmentOps::common`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommonOutput {
    /// The source replaces the stored colour ([`FragmentOps::replaces`]).
    Replace,
    /// The usual alpha blending: add, SRC_ALPHA and ONE_MINUS_SRC_ALPHA in RGB and alpha.
    AlphaBlend,
}

/// BLEND_FUNC's fields for the usual alpha blending (equations 0, add; source factor 6,
/// SRC_ALPHA; destination factor 7, ONE_MINUS_SRC_ALPHA; in RGB and in alpha), under the mask
/// `0xFFFF_0707`.
const ALPHA_BLENDING: u32 = 6 << 16 | 7 << 20 | 6 << 24 | 7 << 28;

impl FragmentOps {
    /// The configuration the registers describe.
    pub fn configure(regs: &RegisterFile) -> FragmentOps {
        let operation = regs.get(id::COLOR_OPERATION);
        FragmentOps {
            mode: bits(operation, 0, 2),
            shadow: {
                let word = regs.get(id::FRAGOP_SHADOW);
                [
                    FLOAT16.to_f32(bits(word, 0, 16)),
                    FLOAT16.to_f32(bits(word, 16, 16)),
                ]
            },
            blend: operation & 0x100 != 0,
            blend_func: regs.get(id::BLEND_FUNC),
            logic_op: bits(regs.get(id::LOGIC_OP), 0, 4),
            blend_color: rgba_of(regs.get(id::BLEND_COLOR)),
            alpha_test: regs.get(id::FRAGOP_ALPHA_TEST),
            stencil_test: regs.get(id::STENCIL_TEST),
            stencil_op: regs.get(id::STENCIL_OP),
            depth_color: regs.get(id::DEPTH_COLOR_MASK),
            color_write: bits(regs.get(id::COLORBUFFER_WRITE), 0, 4) != 0,
            depth_write: bits(regs.get(id::DEPTHBUFFER_WRITE), 0, 2) != 0,
            common: None,
        }
        .with_common()
    }

    /// `self` with [`FragmentOps::common`] worked out.
    pub fn with_common(self) -> FragmentOps {
        FragmentOps {
            common: self.common(),
            ..self
        }
    }

    /// The state most draws use, which [`write()`] takes a short way through: the default
    /// mode, no stencil test, and the colour replacing the stored one or alpha-blended over it
    /// with all four channels written (any alpha and depth test). `None` otherwise.
    pub fn common(&self) -> Option<CommonOutput> {
        if self.mode != 0 || self.stencil_test & 1 != 0 || self.depth_color & 0xF00 != 0xF00 {
            return None;
        }
        if self.replaces() {
            Some(CommonOutput::Replace)
        } else if self.blend && self.blend_func & 0xFFFF_0707 == ALPHA_BLENDING {
            Some(CommonOutput::AlphaBlend)
        } else {
            None
        }
    }

    /// Whether the alpha test passes `alpha`.
    pub fn alpha_passes(&self, alpha: u8) -> bool {
        self.alpha_test & 1 == 0
            || compare(
                bits(self.alpha_test, 4, 3),
                alpha as u32,
                bits(self.alpha_test, 8, 8),
            )
    }

    /// The stencil value after operation `op` (3 bits) on `old`, with the write mask
    /// applied.
    pub fn stencil_after(&self, op: u32, old: u8) -> u8 {
        let reference = bits(self.stencil_test, 16, 8) as u8;
        let new = match op & 7 {
            0 => old,
            1 => 0,
            2 => reference,
            3 => old.saturating_add(1),
            4 => old.saturating_sub(1),
            5 => !old,
            6 => old.wrapping_add(1),
            _ => old.wrapping_sub(1),
        };
        let mask = bits(self.stencil_test, 8, 8) as u8;
        (new & mask) | (old & !mask)
    }

    /// Whether the stencil test passes against the stored `stencil`.
    pub fn stencil_passes(&self, stencil: u8) -> bool {
        let mask = bits(self.stencil_test, 24, 8);
        compare(
            bits(self.stencil_test, 4, 3),
            bits(self.stencil_test, 16, 8) & mask,
            stencil as u32 & mask,
        )
    }

    /// Whether the depth test passes `depth` against the stored `stored`.
    pub fn depth_passes(&self, depth: u32, stored: u32) -> bool {
        self.depth_color & 1 == 0 || compare(bits(self.depth_color, 4, 3), depth, stored)
    }

    /// Whether [`FragmentOps::output`] is the source whatever the destination: all four
    /// channels written, and the logic op COPY or blending that adds source · ONE to
    /// destination · ZERO in RGB and alpha. The stored colour is then not read.
    pub fn replaces(&self) -> bool {
        // Equation 0 (add), source factor 1 (ONE), destination factor 0 (ZERO), both halves.
        const SOURCE_ONLY: u32 = 1 << 16 | 1 << 24;
        let combined = if self.blend {
            self.blend_func & 0xFFFF_0707 == SOURCE_ONLY
        } else {
            self.logic_op == 3
        };
        combined && self.depth_color & 0xF00 == 0xF00
    }

    /// Blends or logic-combines `source` with the stored `dest`, then applies the channel
    /// write mask.
    pub fn output(&self, source: Rgba8, dest: Rgba8) -> Rgba8 {
        let mut out = if self.blend {
            self.blended(source, dest)
        } else {
            let mut out = [0; 4];
            for k in 0..4 {
                out[k] = logic_op(self.logic_op, source[k], dest[k]);
            }
            out
        };
        for k in 0..4 {
            if self.depth_color & (0x100 << k) == 0 {
                out[k] = dest[k];
            }
        }
        out
    }

    fn blended(&self, src: Rgba8, dst: Rgba8) -> Rgba8 {
        let func = self.blend_func;
        if func & 0xFFFF_0707 == ALPHA_BLENDING {
            return alpha_blend(src, dst);
        }
        let rgb = Blend {
            equation: bits(func, 0, 3),
            source: self.factors(bits(func, 16, 4), src, dst),
            destination: self.factors(bits(func, 20, 4), src, dst),
        };
        let alpha = Blend {
            equation: bits(func, 8, 3),
            source: self.factors(bits(func, 24, 4), src, dst),
            destination: self.factors(bits(func, 28, 4), src, dst),
        };
        [
            rgb.channel(0, src, dst),
            rgb.channel(1, src, dst),
            rgb.channel(2, src, dst),
            alpha.channel(3, src, dst),
        ]
    }

    /// Blend factor `code` for each channel (0-255; undefined codes: the source colour,
    /// docs/gpu.md "Model choices"). Code 14, SRC_ALPHA_SATURATE, is 255 in alpha.
    #[inline]
    fn factors(&self, code: u32, src: Rgba8, dst: Rgba8) -> [u32; 4] {
        let each = |c: Rgba8| c.map(u32::from);
        let all = |v: u8| [v as u32; 4];
        let minus = |v: [u32; 4]| v.map(|x| 255 - x);
        let constant = self.blend_color;
        match code {
            0 => [0; 4],
            1 => [255; 4],
            2 => each(src),
            3 => minus(each(src)),
            4 => each(dst),
            5 => minus(each(dst)),
            6 => all(src[3]),
            7 => minus(all(src[3])),
            8 => all(dst[3]),
            9 => minus(all(dst[3])),
            10 => each(constant),
            11 => minus(each(constant)),
            12 => all(constant[3]),
            13 => minus(all(constant[3])),
            14 => {
                let f = (src[3] as u32).min(255 - dst[3] as u32);
                [f, f, f, 255]
            }
            _ => each(src),
        }
    }
}

/// The usual alpha blending ([`ALPHA_BLENDING`]): the general rule ([`Blend::channel`])
/// worked out for it.
#[inline(always)]
fn alpha_blend(src: Rgba8, dst: Rgba8) -> Rgba8 {
    let a = src[3] as u32;
    let channel = |k: usize| ((src[k] as u32 * a + dst[k] as u32 * (255 - a)) / 255) as u8;
    // Spelled out: `array::map` was left as a call, a third of the write's instructions.
    [channel(0), channel(1), channel(2), channel(3)]
}

/// One half of a blend (RGB or alpha): its equation and the factors of each channel.
struct Blend {
    equation: u32,
    source: [u32; 4],
    destination: [u32; 4],
}

impl Blend {
    /// Channel `k` of `src` blended with `dst` (equations 5-7 add; MIN and MAX apply the
    /// factors; divisions by 255 truncate).
    #[inline]
    fn channel(&self, k: usize, src: Rgba8, dst: Rgba8) -> u8 {
        let s = (src[k] as u32 * self.source[k]) as i64;
        let d = (dst[k] as u32 * self.destination[k]) as i64;
        let value = match self.equation {
            1 => (s - d) / 255,
            2 => (d - s) / 255,
            3 => s.min(d) / 255,
            4 => s.max(d) / 255,
            _ => (s + d) / 255,
        };
        value.clamp(0, 255) as u8
    }
}

/// A logic op on 8-bit channels.
pub fn logic_op(op: u32, s: u8, d: u8) -> u8 {
    match op & 15 {
        0 => 0,
        1 => s & d,
        2 => s & !d,
        3 => s,
        4 => 0xFF,
        5 => !s,
        6 => d,
        7 => !d,
        8 => !(s & d),
        9 => s | d,
        10 => !(s | d),
        11 => s ^ d,
        12 => !(s ^ d),
        13 => !s & d,
        14 => s | !d,
        _ => !s | d,
    }
}

/// A value truncated to float1.5.10, as the soft shadow computes (docs/gpu-shadows.md).
fn f16(x: f32) -> f32 {
    FLOAT16.to_f32(FLOAT16.from_f32(x))
}

/// Shadow-map rendering (fragment-operation mode 3, docs/gpu-shadows.md) at pixel (x, row) of
/// `band`: the colour buffer's four bytes hold a 24-bit depth (bytes 0-2, most significant
/// first) and an 8-bit intensity (byte 3). A fragment nearer than the stored depth (the test
/// is fixed: less than) with green 0 writes its depth (a hard shadow); with green above 0 it
/// writes the intensity green / (constant + linear · depth / stored depth) when that is less
/// than the stored one, leaving the depth (a soft shadow). No alpha, stencil or depth test,
/// no blending, no depth buffer. Returns whether anything was written.
pub fn write_shadow(
    band: &mut BandPixels<'_>,
    (x, row): (u32, u32),
    green: u8,
    depth_fraction: f32,
    ops: &FragmentOps,
    target: &TargetConfig,
) -> bool {
    let (Some(color_bytes), Some(ColorFormat::Rgba8)) =
        (band.color.as_deref_mut(), target.color_format)
    else {
        // Shadow maps are four-byte pixels; another format takes nothing (docs/gpu-shadows.md).
        return false;
    };
    let at = tiled_offset(x, row - band.first_row, target.width, 4);
    let pixel = &mut color_bytes[at..at + 4];
    let depth = (depth_fraction * 0xFF_FFFF as f32) as u32;
    let stored = u32::from_be_bytes([0, pixel[0], pixel[1], pixel[2]]);
    if depth >= stored {
        return false;
    }
    if green == 0 {
        pixel[..3].copy_from_slice(&depth.to_be_bytes()[1..]);
        return true;
    }
    let [constant, linear] = ops.shadow;
    let ratio = f16(depth as f32 / stored as f32);
    let divisor = f16(f16(constant) + f16(linear * ratio));
    let intensity = f16(green as f32 / divisor);
    // NaN (0/0) reads as 0: the darkest, as the clamp of an undefined value.
    let intensity = if intensity.is_nan() {
        0
    } else {
        intensity.clamp(0.0, 255.0) as u8
    };
    if intensity < pixel[3] {
        pixel[3] = intensity;
        return true;
    }
    false
}

/// The per-fragment operations on pixel (x, row) of `band`: alpha, stencil and depth tests, then
/// blending or the logic op into the colour buffer. Returns whether the fragment passed the
/// tests.
#[inline(never)]
pub fn write(
    band: &mut BandPixels<'_>,
    (x, row): (u32, u32),
    source: Rgba8,
    depth: u32,
    ops: &FragmentOps,
    target: &TargetConfig,
) -> bool {
    if !ops.alpha_passes(source[3]) {
        return false;
    }
    let local_row = row - band.first_row;
    if let (
        Some(common),
        Some(ColorFormat::Rgba8),
        Some(DepthFormat::D24S8),
        Some(color_bytes),
        Some(depth_bytes),
    ) = (
        ops.common,
        target.color_format,
        target.depth_format,
        band.color.as_deref_mut(),
        band.depth.as_deref_mut(),
    ) {
        let at = tiled_offset(x, local_row, target.width, 4);
        return write_common(
            common,
            (&mut color_bytes[at..at + 4], &mut depth_bytes[at..at + 4]),
            source,
            depth,
            ops,
        );
    }
    if let (Some(depth_bytes), Some(format)) = (band.depth.as_deref_mut(), target.depth_format) {
        let at = tiled_offset(x, local_row, target.width, format.bytes() as u32);
        let pixel = &mut depth_bytes[at..at + format.bytes()];
        let (stored, stencil) = format.decode(pixel);
        let stencil_on = ops.stencil_test & 1 != 0 && format == DepthFormat::D24S8;
        let mut new_stencil = stencil;
        let mut new_depth = stored;
        let passed = if stencil_on && !ops.stencil_passes(stencil) {
            new_stencil = ops.stencil_after(ops.stencil_op, stencil);
            false
        } else if !ops.depth_passes(depth, stored) {
            if stencil_on {
                new_stencil = ops.stencil_after(ops.stencil_op >> 4, stencil);
            }
            false
        } else {
            if ops.depth_color & 0x1000 != 0 {
                new_depth = depth;
            }
            if stencil_on {
                new_stencil = ops.stencil_after(ops.stencil_op >> 8, stencil);
            }
            true
        };
        if ops.depth_write && (new_depth != stored || new_stencil != stencil) {
            format.encode(new_depth, new_stencil, pixel);
        }
        if !passed {
            return false;
        }
    }
    if let (Some(color_bytes), Some(format), true) = (
        band.color.as_deref_mut(),
        target.color_format,
        ops.color_write,
    ) {
        let at = tiled_offset(x, local_row, target.width, format.bytes() as u32);
        let pixel = &mut color_bytes[at..at + format.bytes()];
        let color = if ops.replaces() {
            source
        } else {
            ops.output(source, format.decode(pixel))
        };
        format.encode(color, pixel);
    }
    true
}

/// [`write()`] for the common state ([`FragmentOps::common`]) into a four-byte colour pixel
/// (RGBA8) and a D24S8 depth pixel, after the alpha test: what the general way does with no
/// stencil test and all channels written, without working out what does not change.
#[inline(always)]
fn write_common(
    common: CommonOutput,
    (color, depth_stencil): (&mut [u8], &mut [u8]),
    source: Rgba8,
    depth: u32,
    ops: &FragmentOps,
) -> bool {
    // With the depth test off and no depth written (2D drawing), the depth buffer is not
    // touched: the test passes and the bytes stay.
    let writes_depth = ops.depth_write && ops.depth_color & 0x1000 != 0;
    if ops.depth_color & 1 != 0 || writes_depth {
        let stored = u32::from_le_bytes([depth_stencil[0], depth_stencil[1], depth_stencil[2], 0]);
        if !ops.depth_passes(depth, stored) {
            return false;
        }
        // The stencil byte stays: no stencil test, so no stencil operation.
        if writes_depth && depth != stored {
            depth_stencil[..3].copy_from_slice(&depth.to_le_bytes()[..3]);
        }
    }
    if ops.color_write {
        let out = match common {
            CommonOutput::Replace => source,
            CommonOutput::AlphaBlend => alpha_blend(source, ColorFormat::Rgba8.decode(color)),
        };
        ColorFormat::Rgba8.encode(out, color);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No test on, the logic op COPY, every channel and the depth written.
    fn plain() -> FragmentOps {
        FragmentOps {
            mode: 0,
            shadow: [0.0; 2],
            blend: false,
            blend_func: 0,
            logic_op: 3,
            blend_color: [0; 4],
            alpha_test: 0,
            stencil_test: 0,
            stencil_op: 0,
            depth_color: 0xF00,
            color_write: true,
            depth_write: true,
            common: None,
        }
    }

    /// The short way through the common state ([`FragmentOps::common`]) leaves the colour and
    /// depth-stencil bytes as the general way does, and passes the same fragments: for
    /// replacing and alpha-blending, every depth function and the depth test off, depth and
    /// colour writes on and off, the depth write bit, alpha tests, and fragments in front of, at and behind the
    /// stored depth; and states that are not common (a stencil test, a partial colour mask,
    /// other blending) are not taken for it.
    #[test]
    fn the_common_state_writes_what_the_general_way_writes() {
        let target = TargetConfig {
            color_address: 0x1800_0000,
            color_format: Some(ColorFormat::Rgba8),
            depth_address: 0x1810_0000,
            depth_format: Some(DepthFormat::D24S8),
            width: 8,
            height: 8,
        };
        let blend = FragmentOps {
            blend: true,
            blend_func: ALPHA_BLENDING,
            ..plain()
        };
        for (base, expected) in [
            (plain(), CommonOutput::Replace),
            (blend, CommonOutput::AlphaBlend),
        ] {
            // Functions 0-7 with the test on, and the test off (bit 0 clear).
            for function in 0..9 {
                for (color_write, depth_write, depth_bit) in [
                    (true, true, true),
                    (true, false, true),
                    (false, true, true),
                    (true, true, false),
                ] {
                    for alpha_test in [0, 1 | 6 << 4 | 100 << 8] {
                        let general = FragmentOps {
                            depth_color: u32::from(function < 8)
                                | (function & 7) << 4
                                | 0xF00
                                | u32::from(depth_bit) << 12,
                            color_write,
                            depth_write,
                            alpha_test,
                            ..base
                        };
                        let common = general.with_common();
                        assert_eq!(common.common, Some(expected));
                        for (source, depth) in [
                            ([200, 100, 50, 255], 0x40_0000),
                            ([10, 20, 30, 128], 0x50_0000),
                            ([1, 2, 3, 50], 0x60_0000),
                            ([255, 0, 255, 0], 0x50_0001),
                        ] {
                            let run = |ops: &FragmentOps| {
                                let mut color: Vec<u8> = (0..256).map(|k| (k * 37) as u8).collect();
                                let mut depth_bytes: Vec<u8> =
                                    (0..64).flat_map(|_| [0x00, 0x00, 0x50, 0xA5]).collect();
                                let mut band = BandPixels {
                                    first_row: 0,
                                    color: Some(&mut color[..]),
                                    depth: Some(&mut depth_bytes[..]),
                                };
                                let passed = write(&mut band, (3, 5), source, depth, ops, &target);
                                (passed, color, depth_bytes)
                            };
                            assert_eq!(run(&common), run(&general), "{general:?} {source:?}");
                        }
                    }
                }
            }
        }
        let stencil = FragmentOps {
            stencil_test: 1,
            ..plain()
        };
        let masked = FragmentOps {
            depth_color: 0x700,
            ..plain()
        };
        let additive = FragmentOps {
            blend: true,
            blend_func: 1 << 16 | 1 << 20 | 1 << 24 | 1 << 28,
            ..plain()
        };
        for other in [stencil, masked, additive] {
            assert_eq!(other.common(), None, "{other:?}");
        }
    }

    #[test]
    fn blend_equations_and_factors() {
        let mut ops = FragmentOps {
            blend: true,
            // Equations 0 (add); src alpha / one minus src alpha for colour and alpha.
            blend_func: 6 << 16 | 7 << 20 | 6 << 24 | 7 << 28,
            ..plain()
        };
        // 50% alpha (128): 255·128/255 + 0·127/255 per channel.
        assert_eq!(
            ops.output([255, 0, 0, 128], [0, 0, 255, 255]),
            [128, 0, 127, 191]
        );
        // MIN applies the factors (ONE, ONE here).
        ops.blend_func = 3 | 3 << 8 | 1 << 16 | 1 << 20 | 1 << 24 | 1 << 28;
        assert_eq!(
            ops.output([10, 200, 30, 40], [20, 100, 30, 50]),
            [10, 100, 30, 40]
        );
        // Reverse subtract clamps at zero; equations 5-7 add.
        ops.blend_func = 2 | 5 << 8 | 1 << 16 | 1 << 20 | 1 << 24 | 1 << 28;
        assert_eq!(
            ops.output([10, 200, 30, 40], [20, 100, 30, 50]),
            [10, 0, 0, 90]
        );
        // The colour write mask keeps the destination's green.
        ops.depth_color = 0xD00;
        assert_eq!(ops.output([10, 200, 30, 40], [20, 100, 30, 50])[1], 100);
        // Logic ops.
        ops.blend = false;
        ops.depth_color = 0xF00;
        ops.logic_op = 11;
        assert_eq!(ops.output([0xF0; 4], [0x3C; 4]), [0xCC; 4]);
    }

    /// The usual alpha blending, which takes a shortcut, gives what the general rule gives:
    /// the same blend worked out with ADD written as equation 5 (which adds too, and so takes
    /// the general rule), for every source alpha and a spread of colours.
    #[test]
    fn alpha_blending_takes_the_general_rule() {
        let usual = FragmentOps {
            blend: true,
            blend_func: 6 << 16 | 7 << 20 | 6 << 24 | 7 << 28,
            ..plain()
        };
        let general = FragmentOps {
            blend_func: usual.blend_func | 5 | 5 << 8,
            ..usual
        };
        for alpha in 0..=255u8 {
            for (s, d) in [(0u8, 255u8), (255, 0), (17, 200), (128, 127), (254, 1)] {
                let (src, dst) = ([s, d, alpha, alpha], [d, s, 99, 255 - alpha]);
                assert_eq!(
                    usual.output(src, dst),
                    general.output(src, dst),
                    "{src:?} {dst:?}"
                );
            }
        }
        // Half alpha: 200·128/255 + 100·127/255 = 150.2.
        assert_eq!(usual.output([200, 0, 0, 128], [100, 0, 0, 0])[0], 150);
    }

    /// `replaces` holds for the logic op COPY and for blending source · ONE + destination ·
    /// ZERO with every channel written, and then the output is the source for any
    /// destination; for every other logic op, for the other factors and equations tried and
    /// for a partial write mask it does not hold. It may miss a case (subtract and max of
    /// 1·s and 0·d keep the source too), never claim a wrong one.
    #[test]
    fn replaces_means_the_output_ignores_the_destination() {
        let base = FragmentOps {
            blend_color: [1, 2, 3, 4],
            ..plain()
        };
        let pairs = [
            ([10, 200, 30, 40], [20, 100, 30, 50]),
            ([0, 0, 0, 0], [255, 255, 255, 255]),
            ([255, 255, 255, 255], [0, 7, 0, 9]),
            ([128, 64, 32, 16], [16, 32, 64, 128]),
        ];
        let keeps_source = |ops: &FragmentOps| pairs.iter().all(|&(s, d)| ops.output(s, d) == s);
        let one_zero = 1 << 16 | 1 << 24;
        let mut configs = vec![];
        for op in 0..16 {
            configs.push((
                FragmentOps {
                    logic_op: op,
                    ..base
                },
                op == 3,
                op == 3,
            ));
        }
        // (BLEND_FUNC, replaces, keeps the source).
        for (func, replaces, keeps) in [
            (one_zero, true, true),
            // Equations subtract, reverse subtract, min, max on 1·s and 0·d: s, 0, 0, s.
            (one_zero | 1, false, true),
            (one_zero | 2 << 8, false, false),
            (one_zero | 3, false, false),
            (one_zero | 4 << 8, false, true),
            // Other factors: ONE, ONE; src alpha, zero; zero, one in alpha.
            (1 << 16 | 1 << 20 | 1 << 24 | 1 << 28, false, false),
            (6 << 16 | 1 << 24, false, false),
            (1 << 16 | 1 << 28, false, false),
        ] {
            let blending = FragmentOps {
                blend: true,
                blend_func: func,
                ..base
            };
            configs.push((blending, replaces, keeps));
        }
        let masked = FragmentOps {
            depth_color: 0xB00,
            ..base
        };
        configs.push((masked, false, false));
        for (k, (ops, replaces, keeps)) in configs.iter().enumerate() {
            assert_eq!(ops.replaces(), *replaces, "configuration {k}");
            assert_eq!(keeps_source(ops), *keeps, "configuration {k}");
        }
    }

    #[test]
    fn stencil_operations_respect_the_write_mask() {
        let ops = FragmentOps {
            // enabled, EQUAL, write mask 0x0F, reference 0x5A, compare mask 0xF0.
            stencil_test: 1 | 2 << 4 | 0x0F << 8 | 0x5A << 16 | 0xF0 << 24,
            ..plain()
        };
        assert!(ops.stencil_passes(0x53));
        assert!(!ops.stencil_passes(0x45));
        assert_eq!(ops.stencil_after(2, 0xF0), 0xFA);
        assert_eq!(ops.stencil_after(3, 0xFF), 0xFF);
        assert_eq!(ops.stencil_after(6, 0xFF), 0xF0);
        assert_eq!(ops.stencil_after(7, 0x00), 0x0F);
        assert_eq!(ops.stencil_after(5, 0x3C), 0x33);
    }
    #[test]
    fn shadow_maps_keep_the_nearest_depth_and_the_darkest_soft_shadow() {
        let mut ops = FragmentOps::configure(&RegisterFile::default());
        ops.mode = SHADOW_MODE;
        // Soft shadow terms: constant 1.0, linear 1.0.
        ops.shadow = [1.0, 1.0];
        let target = TargetConfig {
            color_address: 0x1800_0000,
            color_format: Some(ColorFormat::Rgba8),
            depth_address: 0,
            depth_format: None,
            width: 8,
            height: 8,
        };
        // Cleared to the farthest depth and full light.
        let mut bytes = vec![0xFF; 8 * 8 * 4];
        let write = |green: u8, depth: f32, bytes: &mut Vec<u8>| {
            let mut band = BandPixels {
                first_row: 0,
                color: Some(&mut bytes[..]),
                depth: None,
            };
            write_shadow(&mut band, (0, 0), green, depth, &ops, &target)
        };
        // A hard shadow at depth 0.5: ⌊0.5 · 0xFFFFFF⌋ = 0x7FFFFF in bytes 0-2, most
        // significant first; the intensity stays.
        assert!(write(0, 0.5, &mut bytes));
        assert_eq!(&bytes[..4], &[0x7F, 0xFF, 0xFF, 0xFF]);
        // Farther (or as far): nothing.
        assert!(!write(0, 0.75, &mut bytes));
        assert!(!write(0, 0.5, &mut bytes));
        assert_eq!(&bytes[..4], &[0x7F, 0xFF, 0xFF, 0xFF]);
        // A soft shadow at depth 0.25 (0x3FFFFF) with green 128: the ratio 0x3FFFFF/0x7FFFFF
        // = 0.49999994 truncates to 0.49975586 in float1.5.10, 1 + that to 1.4990234;
        // 128 / 1.4990234 = 85.389 truncates to 85.375: the byte 85. The depth stays.
        assert!(write(128, 0.25, &mut bytes));
        assert_eq!(&bytes[..4], &[0x7F, 0xFF, 0xFF, 85]);
        // A lighter soft shadow (200 / 1.5 = 133) does not replace a darker one.
        assert!(!write(200, 0.25, &mut bytes));
        assert_eq!(bytes[3], 85);
        // Another colour format takes nothing.
        let other = TargetConfig {
            color_format: Some(ColorFormat::Rgb565),
            ..target
        };
        let mut band = BandPixels {
            first_row: 0,
            color: Some(&mut bytes[..]),
            depth: None,
        };
        assert!(!write_shadow(&mut band, (1, 0), 0, 0.1, &ops, &other));
    }
}
