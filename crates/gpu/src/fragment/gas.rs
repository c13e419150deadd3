//! Gas (docs/gpu-fog-and-gas.md, "Gas"): density accumulation (fragment-operation mode 1) and
//! gas shading (fog mode 7). No public description of the hardware's algorithm exists and no
//! emulator implements it: the register fields are facts, the arithmetic is a reconstruction.
//! **Every guessed part is a function or constant of [`guess`]**, and docs/gpu-fog-and-gas.md
//! lists each with its alternative and the hardware test that would settle it.
//!
//! Pass 1 draws particles in mode 1: each fragment's density is added, where the gas depth
//! function passes against the scene's depth, to a plain sum (red) and a depth-attenuated sum
//! (green) in the colour buffer; the largest plain sum goes to GAS_ACCMAX_FEEDBACK (0x125).
//! Pass 2 draws the accumulation buffer as a texture with fog mode 7: the density (plain or
//! depth, 0x0E0 bit 3) normalised by GAS_ACCMAX and scaled by GAS_ATTENUATION gives the
//! opacity, and the gas colour table, read by the density or by a light factor (planar and view
//! shading, 0x120-0x122), the colour.

use shader::numbers::FLOAT16;

use crate::framebuffer::color::{ColorFormat, Rgba8, tiled_offset};
use crate::framebuffer::target::{BandPixels, TargetConfig};
use crate::regs::{RegisterFile, bits, id};

use super::table_position;

/// TEXENV_UPDATE_BUFFER's fog mode that shades gas.
pub const GAS_MODE: u32 = 7;
/// COLOR_OPERATION's fragment-operation mode that accumulates gas density.
pub const ACCUMULATION_MODE: u32 = 1;
/// Entries of the gas colour table: eight differences, then eight colours.
pub const GAS_LUT_ENTRIES: usize = 16;

/// The parts of the model no public source decides, each in one place
/// (docs/gpu-fog-and-gas.md, "Gas: the guesses").
pub mod guess {
    /// G1: the combiner output channel that carries a particle fragment's density: alpha.
    pub fn density_of(color: [u8; 4]) -> u8 {
        color[3]
    }

    /// G2: where the two sums live in the RGBA8 colour buffer: plain density in red, depth
    /// density in green, 8 bits each, saturating (channel indices of an RGBA colour).
    pub const PLAIN_CHANNEL: usize = 0;
    /// G2: the depth density's channel (green).
    pub const DEPTH_CHANNEL: usize = 1;

    /// G3: the gas depth function (0x126 bits 24-25) on the fragment's and the scene's depths
    /// (in [0, 1]): 0 never, 1 always, 2 the fragment behind (greater), 3 in front (less).
    pub fn depth_passes(function: u32, fragment: f32, scene: f32) -> bool {
        match function & 3 {
            0 => false,
            1 => true,
            2 => fragment > scene,
            _ => fragment < scene,
        }
    }

    /// G4: the depth density's weight: deltaZ times the distance in depth between the scene
    /// and the particle, at most 1 (a particle fades out as it nears a surface).
    pub fn depth_weight(delta_z: f32, fragment: f32, scene: f32) -> f32 {
        (delta_z * (scene - fragment).abs()).min(1.0)
    }

    /// G5: a shading intensity from a (min, max, attenuation) triple of bytes and the
    /// normalised density: from max towards min as density · attenuation/255 grows.
    pub fn shading(min: u8, max: u8, attenuation: u8, density: f32) -> f32 {
        let (min, max) = (min as f32 / 255.0, max as f32 / 255.0);
        let t = (density * attenuation as f32 / 255.0).clamp(0.0, 1.0);
        max + (min - max) * t
    }

    /// G6: the light factor from planar and view shading, the view part weighted by the
    /// line-of-sight term (0x122 bits 0-7 over 255), clamped to [0, 1].
    pub fn light_factor(planar: f32, view: f32, line_of_sight: u8) -> f32 {
        (planar + view * line_of_sight as f32 / 255.0).clamp(0.0, 1.0)
    }

    /// G7: the opacity of shaded gas: the attenuated, normalised density, clamped to [0, 1].
    pub fn opacity(density: f32) -> f32 {
        density.clamp(0.0, 1.0)
    }

    /// G8: a gas colour difference byte: bit 7 the sign, bits 0-6 the magnitude in 127ths of
    /// full scale (citro3d's encoding read back).
    pub fn difference(byte: u8) -> f32 {
        let magnitude = (byte & 0x7F) as f32 / 127.0 * 255.0;
        if byte & 0x80 != 0 {
            -magnitude
        } else {
            magnitude
        }
    }

    /// G9: a write to GAS_ACCMAX_FEEDBACK clears the tracked maximum (citro3d's
    /// C3D_GasBeginAcc writes it before each accumulation pass).
    pub const FEEDBACK_WRITE_CLEARS: bool = true;
}

/// The gas colour table as written through GAS_LUT_DATA at GAS_LUT_INDEX: entries 0-7 the
/// differences, 8-15 the colours (RGB8, red in bits 0-7).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GasLut {
    /// The sixteen words.
    pub entries: [u32; GAS_LUT_ENTRIES],
}

impl GasLut {
    /// A write to GAS_LUT_DATA: the entry at the index (modulo 16), which then advances.
    pub fn push(&mut self, regs: &mut RegisterFile, value: u32) {
        let index = regs.take_index(id::GAS_LUT_INDEX, 4) as usize;
        self.entries[index] = value & 0xFF_FFFF;
    }
}

/// The table's words for nine colours (the eighth entry's difference reaches the ninth), as
/// citro3d's GasLut_FromArray builds them.
pub fn gas_lut_from_colors(colors: &[[u8; 3]; 9]) -> [u32; GAS_LUT_ENTRIES] {
    std::array::from_fn(|k| {
        if k < 8 {
            let channel = |c: usize| {
                let delta = colors[k + 1][c] as f32 - colors[k][c] as f32;
                let magnitude = (delta.abs() / 255.0 * 127.0).round() as u32;
                (if delta < 0.0 { 0x80 } else { 0 }) | magnitude
            };
            channel(0) | channel(1) << 8 | channel(2) << 16
        } else {
            let [r, g, b] = colors[k - 8];
            u32::from_le_bytes([r, g, b, 0])
        }
    })
}

/// Density accumulation as the registers describe it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GasAccumulation {
    /// The gas depth function (0x126 bits 24-25).
    pub depth_function: u32,
    /// deltaZ (0x126 bits 0-23, fixed point with 8 fraction bits).
    pub delta_z: f32,
}

impl GasAccumulation {
    /// The accumulation of COLOR_OPERATION mode 1, else `None`.
    pub fn configure(regs: &RegisterFile) -> Option<GasAccumulation> {
        if bits(regs.get(id::COLOR_OPERATION), 0, 2) != ACCUMULATION_MODE {
            return None;
        }
        let word = regs.get(id::GAS_DELTAZ_DEPTH);
        Some(GasAccumulation {
            depth_function: bits(word, 24, 2),
            delta_z: bits(word, 0, 24) as f32 / 256.0,
        })
    }
}

/// Accumulates a particle fragment of combiner colour `color` at depth `depth` (in [0, 1]) into
/// pixel (x, row) of `band`: where the gas depth function passes against the depth buffer's
/// value (the far plane without one), its density is added to the plain sum and, weighted, to
/// the depth sum ([`guess`]). No other test, no depth write, no blending. Returns whether it
/// accumulated.
pub fn accumulate(
    band: &mut BandPixels<'_>,
    (x, row): (u32, u32),
    color: Rgba8,
    depth: f32,
    gas: &GasAccumulation,
    target: &TargetConfig,
) -> bool {
    let local_row = row - band.first_row;
    let scene = match (band.depth.as_deref(), target.depth_format) {
        (Some(depth_bytes), Some(format)) => {
            let at = tiled_offset(x, local_row, target.width, format.bytes() as u32);
            let (stored, _) = format.decode(&depth_bytes[at..at + format.bytes()]);
            stored as f32 / ((1u64 << format.depth_bits()) - 1) as f32
        }
        _ => 1.0,
    };
    if !guess::depth_passes(gas.depth_function, depth, scene) {
        return false;
    }
    let (Some(color_bytes), Some(ColorFormat::Rgba8)) =
        (band.color.as_deref_mut(), target.color_format)
    else {
        return false;
    };
    let at = tiled_offset(x, local_row, target.width, 4);
    let pixel = &mut color_bytes[at..at + 4];
    let density = guess::density_of(color);
    let weighted = (density as f32 * guess::depth_weight(gas.delta_z, depth, scene)).round();
    let (plain, depth_sum) = (byte_of(guess::PLAIN_CHANNEL), byte_of(guess::DEPTH_CHANNEL));
    pixel[plain] = pixel[plain].saturating_add(density);
    pixel[depth_sum] = pixel[depth_sum].saturating_add(weighted as u8);
    true
}

/// The largest plain density in an RGBA8 colour buffer's bytes, as GAS_ACCMAX_FEEDBACK's
/// bits 16-31 hold it (float1.5.10 of the density in [0, 1]).
pub fn feedback_of(color_bytes: &[u8]) -> u32 {
    let peak = color_bytes
        .chunks_exact(4)
        .map(|pixel| pixel[byte_of(guess::PLAIN_CHANNEL)])
        .max()
        .unwrap_or(0);
    FLOAT16.from_f32(peak as f32 / 255.0)
}

/// The byte of an RGBA8 pixel in memory holding colour channel `channel` (bytes a, b, g, r).
const fn byte_of(channel: usize) -> usize {
    3 - channel
}

/// Gas shading (fog mode 7) as the registers and the table describe it.
#[derive(Clone, Debug, PartialEq)]
pub struct GasShading {
    /// Shade by the depth density (0x0E0 bit 3), else the plain density.
    depth_density: bool,
    /// GAS_ACCMAX: the reciprocal of the maximum density (citro3d writes 1/max).
    accmax_reciprocal: f32,
    /// GAS_ATTENUATION.
    attenuation: f32,
    /// Planar shading (0x120): min, max, attenuation.
    planar: [u8; 3],
    /// View shading (0x121): min, max, attenuation.
    view: [u8; 3],
    /// The line-of-sight term (0x122 bits 0-7).
    line_of_sight: u8,
    /// Read the colour table by the light factor (0x122 bit 8), else by the density.
    by_light: bool,
    /// The table's colours and differences per channel (0-255 scale).
    colors: [[f32; 3]; 8],
    differences: [[f32; 3]; 8],
}

impl GasShading {
    /// Gas shading when fog mode 7 is on.
    pub fn configure(regs: &RegisterFile, lut: &GasLut) -> Option<GasShading> {
        let update = regs.get(id::TEXENV_UPDATE_BUFFER);
        if bits(update, 0, 3) != GAS_MODE {
            return None;
        }
        let triple = |word: u32| [word as u8, (word >> 8) as u8, (word >> 16) as u8];
        let light_z_color = regs.get(id::GAS_LIGHT_Z_COLOR);
        Some(GasShading {
            depth_density: update & (1 << 3) != 0,
            accmax_reciprocal: FLOAT16.to_f32(bits(regs.get(id::GAS_ACCMAX), 0, 16)),
            attenuation: FLOAT16.to_f32(bits(regs.get(id::GAS_ATTENUATION), 0, 16)),
            planar: triple(regs.get(id::GAS_LIGHT_XY)),
            view: triple(regs.get(id::GAS_LIGHT_Z)),
            line_of_sight: light_z_color as u8,
            by_light: light_z_color & (1 << 8) != 0,
            colors: std::array::from_fn(|k| {
                let [r, g, b] = triple(lut.entries[8 + k]);
                [r as f32, g as f32, b as f32]
            }),
            differences: std::array::from_fn(|k| triple(lut.entries[k]).map(guess::difference)),
        })
    }

    /// The gas colour of an accumulation texel `color` (its red the plain density, its green
    /// the depth density, [`guess`]): RGB from the colour table, alpha the opacity.
    pub fn shade(&self, color: Rgba8) -> Rgba8 {
        let channel = if self.depth_density {
            color[guess::DEPTH_CHANNEL]
        } else {
            color[guess::PLAIN_CHANNEL]
        };
        // Normalised by the maximum (a multiply: the register holds its reciprocal).
        let density = (channel as f32 / 255.0 * self.accmax_reciprocal).clamp(0.0, 1.0);
        let attenuated = density * self.attenuation;
        let input = if self.by_light {
            let [pmin, pmax, pat] = self.planar;
            let [vmin, vmax, vat] = self.view;
            guess::light_factor(
                guess::shading(pmin, pmax, pat, density),
                guess::shading(vmin, vmax, vat, density),
                self.line_of_sight,
            )
        } else {
            density
        };
        let rgb = self.lookup(input);
        let alpha = (guess::opacity(attenuated) * 255.0).round() as u8;
        [rgb[0], rgb[1], rgb[2], alpha]
    }

    /// The colour table at `x` in [0, 1]: entry ⌊8x⌋ (at most 7) plus its difference times the
    /// rest, so that 1 reads the last colour plus its whole difference.
    fn lookup(&self, x: f32) -> [u8; 3] {
        let (k, rest) = table_position(8.0 * x.clamp(0.0, 1.0), 8);
        std::array::from_fn(|c| {
            (self.colors[k][c] + self.differences[k][c] * rest).clamp(0.0, 255.0) as u8
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framebuffer::color::DepthFormat;

    fn target(depth: bool) -> TargetConfig {
        TargetConfig {
            color_address: 0x1800_0000,
            color_format: Some(ColorFormat::Rgba8),
            depth_address: if depth { 0x1804_0000 } else { 0 },
            depth_format: depth.then_some(DepthFormat::D24),
            width: 8,
            height: 8,
        }
    }

    /// Accumulates `densities` at one pixel over a scene at depth 0.5 (D24), returning the
    /// pixel's (plain, depth) sums.
    fn accumulated(gas: &GasAccumulation, densities: &[(u8, f32)]) -> (u8, u8) {
        let mut color = vec![0u8; 8 * 8 * 4];
        let mut depth = [0u8; 8 * 8 * 3];
        let half = 0x7F_FFFF_u32.to_le_bytes();
        for texel in depth.chunks_exact_mut(3) {
            texel.copy_from_slice(&half[..3]);
        }
        for &(density, z) in densities {
            let mut band = BandPixels {
                first_row: 0,
                color: Some(&mut color[..]),
                depth: Some(&mut depth[..]),
            };
            accumulate(&mut band, (0, 0), [0, 0, 0, density], z, gas, &target(true));
        }
        (
            color[byte_of(guess::PLAIN_CHANNEL)],
            color[byte_of(guess::DEPTH_CHANNEL)],
        )
    }

    #[test]
    fn density_grows_monotonically_with_overlapping_particles_and_saturates() {
        let gas = GasAccumulation {
            depth_function: 1,
            delta_z: 0.0,
        };
        let mut last = 0;
        for n in 1..=10 {
            let (plain, _) = accumulated(&gas, &vec![(40, 0.2); n]);
            assert!(plain >= last, "{n} particles: {plain} after {last}");
            last = plain;
        }
        assert_eq!(accumulated(&gas, &[(40, 0.2); 3]).0, 120);
        assert_eq!(last, 255);
        // No particle, no density.
        assert_eq!(accumulated(&gas, &[]), (0, 0));
    }

    #[test]
    fn each_gas_depth_function_and_the_depth_weight() {
        // The scene is at depth 0.5 (0x7FFFFF / 0xFFFFFF).
        let with = |depth_function: u32, delta_z: f32| GasAccumulation {
            depth_function,
            delta_z,
        };
        let particle = [(100, 0.25)];
        assert_eq!(accumulated(&with(0, 1.0), &particle).0, 0);
        assert_eq!(accumulated(&with(1, 1.0), &particle).0, 100);
        // 2 passes behind the scene, 3 in front.
        assert_eq!(accumulated(&with(2, 1.0), &particle).0, 0);
        assert_eq!(accumulated(&with(2, 1.0), &[(100, 0.75)]).0, 100);
        assert_eq!(accumulated(&with(3, 1.0), &particle).0, 100);
        // The depth sum: 100 · min(1, deltaZ · |0.5 − 0.25|): deltaZ 2 → 50; 8 → 100 (capped).
        assert_eq!(accumulated(&with(3, 2.0), &particle).1, 50);
        assert_eq!(accumulated(&with(3, 8.0), &particle).1, 100);
    }

    fn shading(update: u32, accmax: f32, colors: &[[u8; 3]; 9]) -> GasShading {
        let mut regs = RegisterFile::default();
        regs.set(id::TEXENV_UPDATE_BUFFER, GAS_MODE | update);
        regs.set(id::GAS_ACCMAX, FLOAT16.from_f32(accmax));
        regs.set(id::GAS_ATTENUATION, FLOAT16.from_f32(1.0));
        let lut = GasLut {
            entries: gas_lut_from_colors(colors),
        };
        GasShading::configure(&regs, &lut).expect("fog mode 7")
    }

    /// Nine greys from black to white in steps of 32 (the last 255).
    fn ramp() -> [[u8; 3]; 9] {
        std::array::from_fn(|k| [(32 * k).min(255) as u8; 3])
    }

    #[test]
    fn zero_density_is_transparent_and_the_table_ends_are_its_first_and_last_colours() {
        let gas = shading(0, 1.0, &ramp());
        // No density: the first colour, fully transparent (blending leaves the scene).
        assert_eq!(gas.shade([0, 0, 0, 0]), [0, 0, 0, 0]);
        // Full density: the eighth colour (224) plus its whole difference (31, stored as
        // round(31/255 · 127) = 15 127ths of full scale: 30.1): 254; opaque.
        assert_eq!(gas.shade([255, 0, 0, 0]), [254, 254, 254, 255]);
        // Density 4/8 (index 4, no fraction): entry 4, 128; alpha 128.
        let half = gas.shade([128, 0, 0, 0]);
        assert_eq!(half[3], 128);
        assert!((127..=129).contains(&half[0]), "{half:?}");
    }

    #[test]
    fn accmax_normalises_and_the_depth_density_is_selectable() {
        // ACCMAX holds 1/max: with max 0.5 (register 2.0) a density of 0.5 shades as 1.
        let gas = shading(0, 2.0, &ramp());
        assert_eq!(gas.shade([128, 0, 0, 0])[3], 255);
        // Bit 3: the depth density (green) instead of the plain one (red).
        let depth = shading(1 << 3, 1.0, &ramp());
        assert_eq!(depth.shade([255, 0, 0, 0])[3], 0);
        assert_eq!(depth.shade([0, 255, 0, 0])[3], 255);
    }

    #[test]
    fn uploads_wrap_at_sixteen_and_differences_keep_their_sign() {
        let mut regs = RegisterFile::default();
        let mut lut = GasLut::default();
        regs.set(id::GAS_LUT_INDEX, 15);
        lut.push(&mut regs, 0x12_3456);
        lut.push(&mut regs, 0x65_4321);
        assert_eq!((lut.entries[15], lut.entries[0]), (0x12_3456, 0x65_4321));
        assert_eq!(regs.get(id::GAS_LUT_INDEX), 1);
        // White to black: a negative difference of full magnitude.
        let words = gas_lut_from_colors(&[
            [255; 3], [0; 3], [0; 3], [0; 3], [0; 3], [0; 3], [0; 3], [0; 3], [0; 3],
        ]);
        assert_eq!(words[0] & 0xFF, 0x80 | 127);
        assert_eq!(guess::difference(0x80 | 127), -255.0);
    }

    #[test]
    fn the_feedback_is_the_largest_plain_density() {
        let mut bytes = vec![0u8; 16];
        bytes[byte_of(guess::PLAIN_CHANNEL) + 4] = 255;
        assert_eq!(feedback_of(&bytes), FLOAT16.from_f32(1.0));
        assert_eq!(feedback_of(&[0; 8]), 0);
    }
}
