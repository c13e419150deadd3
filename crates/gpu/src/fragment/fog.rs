//! Fog (docs/gpu-fog-and-gas.md): in fog mode (TEXENV_UPDATE_BUFFER bits 0-2 = 5) the combiners'
//! RGB is mixed with the fog colour by a factor read from a 128-entry table at the fragment's
//! depth. Alpha is untouched, so fog may run before the alpha test with the same result as
//! after it, where the hardware puts it; it runs before the depth test, and not at all when
//! the per-fragment operations are in shadow mode.
//!
//! In: the combiners' colour and the fragment's depth in [0, 1] (after the depth scale and
//! offset and the W-buffer, clamped). Out: the colour the per-fragment operations receive.

use shader::numbers::sign_extend;

use crate::framebuffer::color::Rgba8;
use crate::regs::{RegisterFile, bits, id};

use super::ops::SHADOW_MODE;
use super::table_position;

/// Entries of the fog table.
pub const FOG_ENTRIES: usize = 128;

/// TEXENV_UPDATE_BUFFER's fog mode that turns fog on (7 is gas; every other value is off).
pub const FOG_MODE: u32 = 5;

/// The full scale of an entry's 11-bit value and 13-bit difference: 0x7FF is 1.0, what
/// citro3d writes for "no fog" (docs/gpu-fog-and-gas.md, "Entries").
const FULL_SCALE: f32 = 2047.0;

/// The fog table as written through FOG_LUT_DATA0-7 (24-bit entries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FogLut {
    /// Entry i: bits 13-23 the value, bits 0-12 the signed difference to entry i + 1.
    pub entries: [u32; FOG_ENTRIES],
}

impl Default for FogLut {
    fn default() -> FogLut {
        FogLut {
            entries: [0; FOG_ENTRIES],
        }
    }
}

impl FogLut {
    /// A write to FOG_LUT_DATA0-7: the entry at FOG_LUT_INDEX (its low seven bits), whose
    /// index then advances, wrapping within the table.
    pub fn push(&mut self, regs: &mut RegisterFile, value: u32) {
        let index = regs.take_index(id::FOG_LUT_INDEX, 7) as usize;
        self.entries[index] = value & 0xFF_FFFF;
    }
}

/// An entry as citro3d's table builder makes it: `value` in [0, 1] and `difference` (to the
/// next entry's value) in [-2, 2), both in 2048ths, clamped to their fields.
pub fn fog_entry(value: f32, difference: f32) -> u32 {
    let value = (value.max(0.0) * 2048.0).min(2047.0) as u32;
    let difference = (difference * 2048.0).clamp(-4096.0, 4095.0) as i32 as u32 & 0x1FFF;
    value << 13 | difference
}

/// The table of `factor` (depth in [0, 1] → fog factor, 1 = no fog) sampled at depths i/128,
/// each entry's difference reaching the next sample (the last reaches `factor(1)`).
pub fn fog_lut_from_fn(factor: impl Fn(f32) -> f32) -> [u32; FOG_ENTRIES] {
    std::array::from_fn(|i| {
        let here = factor(i as f32 / 128.0);
        let next = factor((i + 1) as f32 / 128.0);
        fog_entry(here, next - here)
    })
}

/// Fog as the registers describe it for a batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Fog {
    /// Z flip (TEXENV_UPDATE_BUFFER bit 16): the table is indexed by 1 − depth.
    pub flip: bool,
    /// FOG_COLOR's red, green and blue.
    pub color: [u8; 3],
    /// Each entry's value and difference, as fractions.
    table: [(f32, f32); FOG_ENTRIES],
}

impl Fog {
    /// Fog when the registers turn it on: fog mode 5, and the per-fragment operations not in
    /// shadow mode (which skips fog).
    pub fn configure(regs: &RegisterFile, lut: &FogLut) -> Option<Fog> {
        let update = regs.get(id::TEXENV_UPDATE_BUFFER);
        let shadow_mode = bits(regs.get(id::COLOR_OPERATION), 0, 2) == SHADOW_MODE;
        if bits(update, 0, 3) != FOG_MODE || shadow_mode {
            return None;
        }
        let color = regs.get(id::FOG_COLOR);
        Some(Fog {
            flip: update & (1 << 16) != 0,
            color: [
                bits(color, 0, 8) as u8,
                bits(color, 8, 8) as u8,
                bits(color, 16, 8) as u8,
            ],
            table: lut.entries.map(|entry| {
                let value = bits(entry, 13, 11) as f32 / FULL_SCALE;
                // The difference is a 13-bit two's-complement number.
                let difference = sign_extend(bits(entry, 0, 13), 13) as f32 / FULL_SCALE;
                (value, difference)
            }),
        })
    }

    /// The fog factor at `depth` (in [0, 1]; 1 keeps the fragment's colour, 0 is all fog):
    /// the entry at ⌊128·depth⌋ (or 128·(1 − depth) flipped, the index clamped to 0-127)
    /// plus its difference times the fraction, clamped to [0, 1]. At depth 1 the last entry's
    /// difference is taken whole.
    pub fn factor(&self, depth: f32) -> f32 {
        let index = 128.0 * if self.flip { 1.0 - depth } else { depth };
        let (entry, rest) = table_position(index, FOG_ENTRIES);
        let (value, difference) = self.table[entry];
        (value + difference * rest).clamp(0.0, 1.0)
    }

    /// `color` fogged at `depth`: each of R, G, B becomes factor·colour + (1 − factor)·fog,
    /// truncated; alpha is kept.
    pub fn apply(&self, color: Rgba8, depth: f32) -> Rgba8 {
        let factor = self.factor(depth);
        let mix = |c: u8, fog: u8| (factor * c as f32 + (1.0 - factor) * fog as f32) as u8;
        [
            mix(color[0], self.color[0]),
            mix(color[1], self.color[1]),
            mix(color[2], self.color[2]),
            color[3],
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fog(flip: bool, entries: [u32; FOG_ENTRIES], color: u32) -> Fog {
        let mut regs = RegisterFile::default();
        regs.set(id::TEXENV_UPDATE_BUFFER, FOG_MODE | (flip as u32) << 16);
        regs.set(id::FOG_COLOR, color);
        Fog::configure(&regs, &FogLut { entries }).expect("fog mode is on")
    }

    #[test]
    fn entries_decode_in_2047ths_with_a_signed_difference() {
        // Entry 10: value 0x400, difference −0x200 (13-bit two's complement 0x1E00).
        let mut entries = [0x7FF << 13; FOG_ENTRIES];
        entries[10] = 0x400 << 13 | 0x1E00;
        let fog = fog(false, entries, 0);
        // Depth 10.5/128: 1024/2047 − 0.5·512/2047 = 768/2047.
        let depth = 10.5 / 128.0;
        assert_eq!(fog.factor(depth), 1024.0 / 2047.0 - 0.5 * 512.0 / 2047.0);
        // Every other entry is 0x7FF with no difference: exactly 1, the colour kept.
        assert_eq!(fog.factor(0.75), 1.0);
        assert_eq!(fog.apply([200, 100, 7, 9], 0.75), [200, 100, 7, 9]);
    }

    #[test]
    fn the_flip_reads_the_table_from_the_other_end() {
        let mut entries = [0; FOG_ENTRIES];
        entries[3] = 0x7FF << 13;
        // Depth 1 − 3.25/128 flipped is index 3.25: entry 3, no difference.
        let flipped = fog(true, entries, 0);
        assert_eq!(flipped.factor(1.0 - 3.25 / 128.0), 1.0);
        let straight = fog(false, entries, 0);
        assert_eq!(straight.factor(3.25 / 128.0), 1.0);
        assert_eq!(straight.factor(1.0 - 3.25 / 128.0), 0.0);
    }

    #[test]
    fn the_index_clamps_and_the_last_difference_reaches_depth_one() {
        let mut entries = [0; FOG_ENTRIES];
        // Entry 127: value 0.25 (512/2047 ≈ 0.2501), difference +0.5 (1024/2047).
        entries[127] = 512 << 13 | 1024;
        let fog = fog(false, entries, 0x00FF_FFFF);
        assert_eq!(fog.factor(1.0), 512.0 / 2047.0 + 1024.0 / 2047.0);
        // Beyond 1 (never after the clamp, but the table's end holds): clamped to [0, 1].
        assert_eq!(fog.factor(3.0), 1.0);
        // Entry 0 is 0: all fog colour (white); alpha stays.
        assert_eq!(fog.apply([10, 20, 30, 40], 0.0), [255, 255, 255, 40]);
    }

    #[test]
    fn the_colour_mixes_with_truncation() {
        // Value 0x400 everywhere: factor 1024/2047. Fog colour (0, 0, 255).
        let entries = [0x400 << 13; FOG_ENTRIES];
        let fog = fog(false, entries, 0x00FF_0000);
        // R: 200·1024/2047 = 100.05 → 100; G: 100·1024/2047 = 50.02 → 50;
        // B: 255·1023/2047 = 127.44 → 127.
        assert_eq!(fog.apply([200, 100, 0, 255], 0.5), [100, 50, 127, 255]);
    }

    #[test]
    fn fog_is_off_outside_mode_5_and_in_shadow_mode() {
        let mut regs = RegisterFile::default();
        let lut = FogLut::default();
        for mode in [0, 1, 4, 6, 7] {
            regs.set(id::TEXENV_UPDATE_BUFFER, mode);
            assert!(Fog::configure(&regs, &lut).is_none(), "mode {mode}");
        }
        regs.set(id::TEXENV_UPDATE_BUFFER, FOG_MODE);
        assert!(Fog::configure(&regs, &lut).is_some());
        regs.set(id::COLOR_OPERATION, 3);
        assert!(Fog::configure(&regs, &lut).is_none());
    }

    #[test]
    fn uploads_advance_the_index_and_wrap() {
        let mut regs = RegisterFile::default();
        let mut lut = FogLut::default();
        regs.set(id::FOG_LUT_INDEX, 126);
        for value in [1, 2, 3] {
            lut.push(&mut regs, value | 0xFF00_0000);
        }
        assert_eq!(
            (lut.entries[126], lut.entries[127], lut.entries[0]),
            (1, 2, 3)
        );
        assert_eq!(regs.get(id::FOG_LUT_INDEX), 1);
    }

    #[test]
    fn citro3d_entries_round_trip() {
        // 1.0 is capped at 0x7FF; −1/2048 is the 13-bit pattern 0x1FFF.
        assert_eq!(fog_entry(1.0, -1.0 / 2048.0), 0x7FF << 13 | 0x1FFF);
        assert_eq!(fog_entry(0.5, 0.25), 0x400 << 13 | 0x200);
        let table = fog_lut_from_fn(|d| 1.0 - d);
        assert_eq!(table[0] >> 13, 0x7FF);
        assert_eq!(table[64] >> 13, 0x400);
    }
}
