//! The procedural texture, texture unit 3 (docs/gpu-proctex.md): a colour computed from the
//! texture coordinates instead of read from memory. The coordinates' absolute values, the
//! shifts (taken before the noise), the noise, the clamp of each axis, a mapping of the two
//! axes to one value, the mapping table, and the colour table (a 1-D texture with its own
//! levels of detail); optionally the alpha from a second mapping.
//!
//! In: texture coordinates u, v (the set TEXUNIT_CONFIG bits 8-9 choose) and, for the level of
//! detail, their change to the neighbouring pixels. Out: the colour of combiner source 3.

use shader::numbers::{FLOAT16, sign_extend};

use crate::framebuffer::color::Rgba8;
use crate::regs::{RegisterFile, bits, id};

use super::table_position;

/// Entries of the noise, RGB-map and alpha-map tables.
pub const MAP_ENTRIES: usize = 128;
/// Entries of the colour and colour-difference tables.
pub const COLOR_ENTRIES: usize = 256;

/// PROCTEX_LUT bits 8-11: the table the data registers write.
pub mod table {
    pub const NOISE: u32 = 0;
    pub const RGB_MAP: u32 = 2;
    pub const ALPHA_MAP: u32 = 3;
    pub const COLOR: u32 = 4;
    pub const COLOR_DIFF: u32 = 5;
}

/// The clamp modes (TEXUNIT3_PROCTEX0 bits 0-2 for u, 3-5 for v).
pub mod clamp {
    pub const TO_ZERO: u32 = 0;
    pub const TO_EDGE: u32 = 1;
    pub const SYMMETRICAL_REPEAT: u32 = 2;
    pub const MIRRORED_REPEAT: u32 = 3;
    pub const PULSE: u32 = 4;
}

/// The mapping functions (TEXUNIT3_PROCTEX0 bits 6-9 for RGB, 10-13 for alpha).
pub mod mapping {
    pub const U: u32 = 0;
    pub const U2: u32 = 1;
    pub const V: u32 = 2;
    pub const V2: u32 = 3;
    pub const ADD: u32 = 4;
    pub const ADD2: u32 = 5;
    pub const SQRT2: u32 = 6;
    pub const MIN: u32 = 7;
    pub const MAX: u32 = 8;
    pub const RMAX: u32 = 9;
}

/// The colour table's filters (TEXUNIT3_PROCTEX4 bits 0-2).
pub mod filter {
    pub const NEAREST: u32 = 0;
    pub const LINEAR: u32 = 1;
    pub const NEAREST_MIPMAP_NEAREST: u32 = 2;
    pub const LINEAR_MIPMAP_NEAREST: u32 = 3;
    pub const NEAREST_MIPMAP_LINEAR: u32 = 4;
    pub const LINEAR_MIPMAP_LINEAR: u32 = 5;
}

/// The procedural texture's tables as written through PROCTEX_LUT_DATA0-7.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcTexLuts {
    /// The noise table: bits 0-11 the value, 12-23 the signed difference to the next entry.
    pub noise: [u32; MAP_ENTRIES],
    /// The RGB mapping table (as the noise table).
    pub rgb_map: [u32; MAP_ENTRIES],
    /// The alpha mapping table (as the noise table).
    pub alpha_map: [u32; MAP_ENTRIES],
    /// The colour table: RGBA8, red in bits 0-7.
    pub color: [u32; COLOR_ENTRIES],
    /// Half the difference to the next colour, per channel, as signed bytes.
    pub color_diff: [u32; COLOR_ENTRIES],
}

impl Default for ProcTexLuts {
    fn default() -> ProcTexLuts {
        ProcTexLuts {
            noise: [0; MAP_ENTRIES],
            rgb_map: [0; MAP_ENTRIES],
            alpha_map: [0; MAP_ENTRIES],
            color: [0; COLOR_ENTRIES],
            color_diff: [0; COLOR_ENTRIES],
        }
    }
}

impl ProcTexLuts {
    /// A write to PROCTEX_LUT_DATA0-7: the entry at PROCTEX_LUT's index in its table (the
    /// index modulo the table's size), after which the index (bits 0-7) advances, wrapping at
    /// 256. A write while the register names no table (1, 6-15) is dropped but advances the
    /// index.
    pub fn push(&mut self, regs: &mut RegisterFile, value: u32) {
        let table = bits(regs.get(id::PROCTEX_LUT), 8, 4);
        let index = regs.take_index(id::PROCTEX_LUT, 8) as usize;
        match table {
            table::NOISE => self.noise[index % MAP_ENTRIES] = value & 0xFF_FFFF,
            table::RGB_MAP => self.rgb_map[index % MAP_ENTRIES] = value & 0xFF_FFFF,
            table::ALPHA_MAP => self.alpha_map[index % MAP_ENTRIES] = value & 0xFF_FFFF,
            table::COLOR => self.color[index] = value,
            table::COLOR_DIFF => self.color_diff[index] = value,
            _ => {}
        }
    }
}

/// An entry of the noise and mapping tables as citro3d builds it from the value at this entry
/// and at the next, both in [0, 1]: the value in 4095ths, the difference to the next.
pub fn map_entry(value: f32, next: f32) -> u32 {
    let scaled = |x: f32| (x.clamp(0.0, 1.0) * 4095.0) as i32;
    let current = scaled(value);
    let difference = (scaled(next) - current) as u32 & 0xFFF;
    difference << 12 | current as u32
}

/// The table of `f` on [0, 1], sampled at i/128 with each difference reaching the next sample
/// (the last reaches f(1)).
pub fn map_table_from_fn(f: impl Fn(f32) -> f32) -> [u32; MAP_ENTRIES] {
    std::array::from_fn(|i| map_entry(f(i as f32 / 128.0), f((i + 1) as f32 / 128.0)))
}

/// The colour-difference entries for a colour table: half the difference to the next colour
/// per channel as a signed byte (the last entry's difference is 0).
pub fn color_diffs(colors: &[Rgba8; COLOR_ENTRIES]) -> [u32; COLOR_ENTRIES] {
    std::array::from_fn(|i| {
        let next = colors[(i + 1).min(COLOR_ENTRIES - 1)];
        let half = |c: usize| ((next[c] as i32 - colors[i][c] as i32) >> 1) as u8;
        u32::from_le_bytes([half(0), half(1), half(2), half(3)])
    })
}

/// A noise or mapping table, decoded: each entry's value and difference as fractions of 4095.
#[derive(Clone, Debug, PartialEq)]
struct MapTable([(f32, f32); MAP_ENTRIES]);

impl MapTable {
    fn decode(entries: &[u32; MAP_ENTRIES]) -> MapTable {
        MapTable(entries.map(|entry| {
            let value = bits(entry, 0, 12) as f32 / 4095.0;
            let difference = sign_extend(bits(entry, 12, 12), 12) as f32 / 4095.0;
            (value, difference)
        }))
    }

    /// The table at `x` in [0, 1]: the entry at ⌊128·x⌋ (at most 127) plus its difference
    /// times the rest, so that 1 reads the last entry plus its whole difference.
    fn lookup(&self, x: f32) -> f32 {
        let (entry, rest) = table_position(128.0 * x, MAP_ENTRIES);
        let (value, difference) = self.0[entry];
        value + difference * rest
    }
}

/// The noise settings of one axis.
#[derive(Clone, Copy, Debug, PartialEq)]
struct NoiseAxis {
    /// The amplitude (TEXUNIT3_PROCTEX1/2 bits 0-15, signed, in 4095ths).
    amplitude: f32,
    /// The phase (bits 16-31, float1.5.10).
    phase: f32,
    /// The frequency (TEXUNIT3_PROCTEX3, float1.5.10).
    frequency: f32,
}

/// The procedural texture as the registers and tables describe it for a batch.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcTex {
    /// The texture coordinate set it reads (TEXUNIT_CONFIG bits 8-9; 3 reads set 2).
    pub texcoord: usize,
    /// The clamp modes of u and v.
    clamps: [u32; 2],
    /// The shift modes of u and v (0 none, 1 odd, 2 even).
    shifts: [u32; 2],
    /// The mapping functions of RGB and alpha.
    mappings: [u32; 2],
    /// Alpha from its own mapping and table, not the colour table.
    separate_alpha: bool,
    /// The noise of u and v, when on.
    noise: Option<[NoiseAxis; 2]>,
    /// The colour table's filter.
    filter: u32,
    /// The levels of detail allowed (TEXUNIT3_PROCTEX4 bits 3-6 and 7-10).
    lod_range: (u32, u32),
    /// The number of colour-table entries level 0 spans.
    width: u32,
    /// Each level's first colour-table entry.
    offsets: [u32; 8],
    /// The level-of-detail bias (float1.5.10 split over TEXUNIT3_PROCTEX0 and 4).
    bias: f32,
    noise_table: MapTable,
    rgb_map: MapTable,
    alpha_map: MapTable,
    colors: Box<[Rgba8; COLOR_ENTRIES]>,
    /// The colour differences, doubled (the table holds halves).
    diffs: Box<[[i32; 4]; COLOR_ENTRIES]>,
}

/// The first colour-table entries of levels 4-7, fixed in the hardware.
const FIXED_OFFSETS: [u32; 4] = [0xF0, 0xF8, 0xFC, 0xFE];

impl ProcTex {
    /// The procedural texture when TEXUNIT_CONFIG bit 10 turns unit 3 on.
    pub fn configure(regs: &RegisterFile, luts: &ProcTexLuts) -> Option<ProcTex> {
        let units = regs.get(id::TEXUNIT_CONFIG);
        if units & 1 << 10 == 0 {
            return None;
        }
        let [r0, r1, r2, r3, r4, r5] = id::TEXUNIT3_PROCTEX.map(|register| regs.get(register));
        let axis = |word: u32, frequency: u32| NoiseAxis {
            amplitude: sign_extend(bits(word, 0, 16), 16) as f32 / 4095.0,
            phase: FLOAT16.to_f32(bits(word, 16, 16)),
            frequency: FLOAT16.to_f32(frequency),
        };
        let bias = FLOAT16.to_f32(bits(r0, 20, 8) | bits(r4, 19, 8) << 8);
        Some(ProcTex {
            texcoord: (bits(units, 8, 2) as usize).min(2),
            clamps: [bits(r0, 0, 3), bits(r0, 3, 3)],
            shifts: [bits(r0, 16, 2), bits(r0, 18, 2)],
            mappings: [bits(r0, 6, 4), bits(r0, 10, 4)],
            separate_alpha: r0 & 1 << 14 != 0,
            noise: (r0 & 1 << 15 != 0)
                .then(|| [axis(r1, bits(r3, 0, 16)), axis(r2, bits(r3, 16, 16))]),
            filter: bits(r4, 0, 3),
            lod_range: (bits(r4, 3, 4), bits(r4, 7, 4)),
            width: bits(r4, 11, 8),
            offsets: [
                bits(r5, 0, 8),
                bits(r5, 8, 8),
                bits(r5, 16, 8),
                bits(r5, 24, 8),
                FIXED_OFFSETS[0],
                FIXED_OFFSETS[1],
                FIXED_OFFSETS[2],
                FIXED_OFFSETS[3],
            ],
            bias,
            noise_table: MapTable::decode(&luts.noise),
            rgb_map: MapTable::decode(&luts.rgb_map),
            alpha_map: MapTable::decode(&luts.alpha_map),
            colors: Box::new(luts.color.map(u32::to_le_bytes)),
            diffs: Box::new(
                luts.color_diff
                    .map(|word| word.to_le_bytes().map(|half| 2 * half as i8 as i32)),
            ),
        })
    }

    /// Whether the colour table's filter uses mipmaps, so that [`ProcTex::sample`] needs the
    /// coordinates' footprint.
    pub fn needs_lod(&self) -> bool {
        (filter::NEAREST_MIPMAP_NEAREST..=filter::LINEAR_MIPMAP_LINEAR).contains(&self.filter)
    }

    /// The colour at texture coordinates (u, v). `footprint` is du + dv, each the larger
    /// change of the coordinate to the pixel's right and upper neighbours (read only when
    /// [`ProcTex::needs_lod`]).
    pub fn sample(&self, [u, v]: [f32; 2], footprint: f32) -> Rgba8 {
        let (mut u, mut v) = (u.abs(), v.abs());
        // The shifts read the other coordinate as it is before the noise.
        let shift_u = shift(v, self.shifts[0], self.clamps[0]);
        let shift_v = shift(u, self.shifts[1], self.clamps[1]);
        if let Some(axes) = &self.noise {
            let n = noise(&self.noise_table, axes, [u, v]);
            u = (u + n * axes[0].amplitude).abs();
            v = (v + n * axes[1].amplitude).abs();
        }
        let u = clamp_axis(u + shift_u, self.clamps[0]);
        let v = clamp_axis(v + shift_v, self.clamps[1]);
        let rgb_coord = self.rgb_map.lookup(combine(self.mappings[0], u, v));
        let lod = if self.needs_lod() {
            self.lod(footprint)
        } else {
            0.0
        };
        let mut color = self.color(rgb_coord.clamp(0.0, 1.0), lod);
        if self.separate_alpha {
            let alpha = self.alpha_map.lookup(combine(self.mappings[1], u, v));
            color[3] = (alpha.clamp(0.0, 1.0) * 255.0) as u8;
        }
        color
    }

    /// The level of detail: log2(|width · bias| · footprint) (the bias inside the logarithm,
    /// unlike the other units), 0 when the bias is 0, limited to the register's range and to
    /// levels 0-7.
    fn lod(&self, footprint: f32) -> f32 {
        let lod = if self.bias == 0.0 {
            0.0
        } else {
            ((self.width as f32 * self.bias).abs() * footprint).log2()
        };
        let low = self.lod_range.0.min(7) as f32;
        let high = (self.lod_range.1.min(7) as f32).max(low);
        if lod.is_nan() {
            low
        } else {
            lod.max(low).min(high)
        }
    }

    /// The colour table at `coord` in [0, 1] and level of detail `lod`, by the filter.
    fn color(&self, coord: f32, lod: f32) -> Rgba8 {
        let linear = matches!(
            self.filter,
            filter::LINEAR | filter::LINEAR_MIPMAP_NEAREST | filter::LINEAR_MIPMAP_LINEAR
        );
        let channels = match self.filter {
            filter::NEAREST_MIPMAP_NEAREST | filter::LINEAR_MIPMAP_NEAREST => {
                self.level_color(coord, lod.round() as usize, linear)
            }
            filter::NEAREST_MIPMAP_LINEAR | filter::LINEAR_MIPMAP_LINEAR => {
                let level = lod.floor() as usize;
                let fraction = lod - level as f32;
                let low = self.level_color(coord, level, linear);
                let high = self.level_color(coord, (level + 1).min(7), linear);
                std::array::from_fn(|c| low[c] + (high[c] - low[c]) * fraction)
            }
            _ => self.level_color(coord, 0, linear),
        };
        channels.map(|c| c.clamp(0.0, 255.0) as u8)
    }

    /// Level `level` of the colour table at `coord`: the entry offset + coord·(width_level − 1),
    /// nearest (rounded) or linear (the entry plus its difference times the fraction).
    /// Indices wrap within the 256 entries.
    fn level_color(&self, coord: f32, level: usize, linear: bool) -> [f32; 4] {
        let span = ((self.width >> level) as f32 - 1.0).max(0.0);
        let index = self.offsets[level] as f32 + coord * span;
        if linear {
            let entry = index.floor();
            let fraction = index - entry;
            let at = entry as usize % COLOR_ENTRIES;
            let (color, diff) = (self.colors[at], self.diffs[at]);
            std::array::from_fn(|c| color[c] as f32 + diff[c] as f32 * fraction)
        } else {
            self.colors[index.round() as usize % COLOR_ENTRIES].map(|c| c as f32)
        }
    }
}

/// The offset added to one coordinate by its shift mode, from the other coordinate `other`
/// (before the noise): 1 with mirrored repeat, else 0.5, on the odd (or even) pairs of units.
fn shift(other: f32, mode: u32, clamp_mode: u32) -> f32 {
    let offset = if clamp_mode == clamp::MIRRORED_REPEAT {
        1.0
    } else {
        0.5
    };
    let whole = other as i64;
    match mode {
        1 => offset * ((whole / 2) % 2) as f32,
        2 => offset * ((whole.saturating_add(1) / 2) % 2) as f32,
        _ => 0.0,
    }
}

/// One axis clamped into [0, 1] (`c` is never negative here). An unknown mode clamps to the
/// edge.
fn clamp_axis(c: f32, mode: u32) -> f32 {
    match mode {
        clamp::TO_ZERO => {
            if c > 1.0 {
                0.0
            } else {
                c
            }
        }
        clamp::SYMMETRICAL_REPEAT => c - c.floor(),
        clamp::MIRRORED_REPEAT => {
            let whole = c.floor();
            let fraction = c - whole;
            if whole as i64 % 2 == 0 {
                fraction
            } else {
                1.0 - fraction
            }
        }
        clamp::PULSE => {
            if c <= 0.5 {
                0.0
            } else {
                1.0
            }
        }
        _ => c.min(1.0),
    }
}

/// The two axes mapped to one value. The square roots are exact here (the hardware's are
/// known to be inaccurate for small values: docs/gpu-proctex.md); an unknown function reads u.
fn combine(function: u32, u: f32, v: f32) -> f32 {
    match function {
        mapping::U2 => u * u,
        mapping::V => v,
        mapping::V2 => v * v,
        mapping::ADD => (u + v) * 0.5,
        mapping::ADD2 => (u * u + v * v) * 0.5,
        mapping::SQRT2 => (u * u + v * v).sqrt().min(1.0),
        mapping::MIN => u.min(v),
        mapping::MAX => u.max(v),
        mapping::RMAX => (((u + v) * 0.5 + (u * u + v * v).sqrt()) * 0.5).min(1.0),
        _ => u,
    }
}

/// The pseudo-random value of one grid line (period 144 = 16 · 9).
fn random_1d(v: i64) -> i64 {
    const TABLE: [i64; 16] = [0, 4, 10, 8, 4, 9, 7, 12, 5, 15, 13, 14, 11, 15, 2, 11];
    (((v % 9 + 2) * 3) & 0xF) ^ TABLE[((v / 9) & 0xF) as usize]
}

/// The pseudo-random value in [−1, 1] at grid point (x, y): a 4-bit number v2 spread as
/// −1 + 2·v2/15.
fn random_2d(x: i64, y: i64) -> f32 {
    const TABLE: [i64; 16] = [10, 2, 15, 8, 0, 7, 4, 5, 5, 13, 2, 6, 13, 9, 3, 14];
    let u2 = random_1d(x);
    let mut v2 = random_1d(y);
    if u2 & 3 == 1 {
        v2 += 4;
    }
    v2 ^= (u2 & 1) * 6;
    v2 += 10 + u2;
    v2 &= 0xF;
    v2 ^= TABLE[u2 as usize];
    -1.0 + v2 as f32 * 2.0 / 15.0
}

/// The noise at (u, v): the grid 9·frequency·|c + phase| on each axis, the random values at
/// the four grid points around, weighted by the distance along the diagonal and blended by the
/// noise table at the fractions (2-D Perlin-like noise).
fn noise(table: &MapTable, axes: &[NoiseAxis; 2], [u, v]: [f32; 2]) -> f32 {
    let grid = |c: f32, axis: &NoiseAxis| 9.0 * axis.frequency * (c + axis.phase).abs();
    let (x, y) = (grid(u, &axes[0]), grid(v, &axes[1]));
    let (xi, yi) = (x.floor(), y.floor());
    let (xf, yf) = (x - xi, y - yi);
    // Saturating conversions: a huge or NaN grid reads some grid point, never fails.
    let (xi, yi) = (xi as i64, yi as i64);
    let g0 = random_2d(xi, yi) * (xf + yf);
    let g1 = random_2d(xi.saturating_add(1), yi) * (xf + yf - 1.0);
    let g2 = random_2d(xi, yi.saturating_add(1)) * (xf + yf - 1.0);
    let g3 = random_2d(xi.saturating_add(1), yi.saturating_add(1)) * (xf + yf - 2.0);
    let (sx, sy) = (table.lookup(xf), table.lookup(yf));
    let x0 = g0 + (g1 - g0) * sx;
    let x1 = g2 + (g3 - g2) * sx;
    x0 + (x1 - x0) * sy
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registers for unit 3 on with texture coordinate set 0 and `proctex` written to
    /// TEXUNIT3_PROCTEX0-5.
    fn configured(proctex: [u32; 6], luts: &ProcTexLuts) -> ProcTex {
        let mut regs = RegisterFile::default();
        regs.set(id::TEXUNIT_CONFIG, 1 << 10);
        for (register, value) in id::TEXUNIT3_PROCTEX.into_iter().zip(proctex) {
            regs.set(register, value);
        }
        ProcTex::configure(&regs, luts).expect("unit 3 is on")
    }

    /// Identity mapping tables and a colour table of grays: entry i is (i, i, i, 255 − i).
    fn identity_luts() -> ProcTexLuts {
        let colors: [Rgba8; COLOR_ENTRIES] =
            std::array::from_fn(|i| [i as u8, i as u8, i as u8, 255 - i as u8]);
        ProcTexLuts {
            noise: map_table_from_fn(|x| x),
            rgb_map: map_table_from_fn(|x| x),
            alpha_map: map_table_from_fn(|x| x),
            color: colors.map(u32::from_le_bytes),
            color_diff: color_diffs(&colors),
        }
    }

    #[test]
    fn the_pseudo_random_grid_repeats_every_144_and_spans_minus_one_to_one() {
        let mut seen = std::collections::BTreeSet::new();
        for x in 0..144 {
            for y in 0..144 {
                let r = random_2d(x, y);
                assert_eq!(r, random_2d(x + 144, y + 288));
                assert!((-1.0..=1.0).contains(&r));
                seen.insert((r * 15.0).round() as i32);
            }
        }
        // All sixteen values −1 + 2k/15 occur.
        assert_eq!(seen.len(), 16);
        // Worked by hand: random_1d(0) = (2·3 & 15) ^ 0 = 6; random_1d(10) = (3·3) ^ 4 = 13.
        assert_eq!((random_1d(0), random_1d(10)), (6, 13));
        // random_2d(0, 0): u2 = v2 = 6; 6 & 3 ≠ 1; v2 ^= 0 → 6; + 16 = 22; & 15 = 6;
        // ^ TABLE[6] = 6 ^ 4 = 2 → −1 + 4/15.
        assert_eq!(random_2d(0, 0), -1.0 + 2.0 * 2.0 / 15.0);
    }

    #[test]
    fn clamp_modes_on_hand_values() {
        use clamp::*;
        assert_eq!(clamp_axis(1.25, TO_ZERO), 0.0);
        assert_eq!(clamp_axis(0.75, TO_ZERO), 0.75);
        assert_eq!(clamp_axis(1.25, TO_EDGE), 1.0);
        assert_eq!(clamp_axis(2.25, SYMMETRICAL_REPEAT), 0.25);
        assert_eq!(clamp_axis(2.25, MIRRORED_REPEAT), 0.25);
        assert_eq!(clamp_axis(3.25, MIRRORED_REPEAT), 0.75);
        assert_eq!(clamp_axis(0.5, PULSE), 0.0);
        assert_eq!(clamp_axis(0.51, PULSE), 1.0);
        // Unknown modes (5-7) clamp to the edge.
        assert_eq!(clamp_axis(1.5, 6), 1.0);
    }

    #[test]
    fn shifts_read_the_other_axis_by_pairs_of_units() {
        // Odd: 0.5 where ⌊other⌋ / 2 is odd (other in [2, 4)), even: where (⌊other⌋ + 1) / 2 is.
        assert_eq!(shift(0.5, 1, clamp::TO_EDGE), 0.0);
        assert_eq!(shift(2.5, 1, clamp::TO_EDGE), 0.5);
        assert_eq!(shift(1.5, 2, clamp::TO_EDGE), 0.5);
        assert_eq!(shift(3.5, 2, clamp::TO_EDGE), 0.0);
        // Mirrored repeat shifts by a whole unit.
        assert_eq!(shift(2.5, 1, clamp::MIRRORED_REPEAT), 1.0);
        assert_eq!(shift(2.5, 0, clamp::TO_EDGE), 0.0);
    }

    #[test]
    fn mapping_functions_on_hand_values() {
        use mapping::*;
        let (u, v) = (0.6, 0.8);
        assert_eq!(combine(U, u, v), 0.6);
        assert_eq!(combine(U2, u, v), 0.6 * 0.6);
        assert_eq!(combine(V, u, v), 0.8);
        assert_eq!(combine(V2, u, v), 0.8 * 0.8);
        assert_eq!(combine(ADD, u, v), (0.6 + 0.8) * 0.5);
        assert_eq!(combine(ADD2, u, v), (0.6 * 0.6 + 0.8 * 0.8) * 0.5);
        // sqrt(0.36 + 0.64) = 1, and capped at 1 beyond.
        assert!((combine(SQRT2, u, v) - 1.0).abs() < 1e-6);
        assert_eq!(combine(SQRT2, 1.0, 1.0), 1.0);
        assert_eq!(combine(MIN, u, v), 0.6);
        assert_eq!(combine(MAX, u, v), 0.8);
        // At (0.3, 0.4): ((0.3 + 0.4)/2 + √(0.09 + 0.16))/2 = (0.35 + 0.5)/2 = 0.425.
        assert!((combine(RMAX, 0.3, 0.4) - 0.425).abs() < 1e-6);
    }

    #[test]
    fn the_colour_table_with_nearest_and_linear_filters() {
        let mut luts = identity_luts();
        // A flat RGB map: every entry 2048 with no difference, so the mapped value is
        // 2048/4095 = 0.500122 wherever u is.
        luts.rgb_map = [2048; MAP_ENTRIES];
        let mut colors = luts.color.map(u32::to_le_bytes);
        colors[127] = [100, 100, 100, 100];
        colors[128] = [140, 60, 100, 100];
        luts.color = colors.map(u32::from_le_bytes);
        luts.color_diff = color_diffs(&colors);
        // Width 128 from offset 64: index 64 + 0.500122·127 = 127.5155.
        for (filter, expected) in [
            // Nearest rounds to entry 128.
            (filter::NEAREST, [140, 60, 100, 100]),
            // Linear: entry 127 plus 0.5155 of the doubled half differences (+40, −40):
            // 100 + 20.62 = 120.62 → 120, 100 − 20.62 = 79.38 → 79.
            (filter::LINEAR, [120, 79, 100, 100]),
        ] {
            let tex = configured([1 | 1 << 3, 0, 0, 0, filter | 128 << 11, 64], &luts);
            assert_eq!(tex.sample([0.3, 0.0], 0.0), expected, "filter {filter}");
        }
        // Negative coordinates read as their absolute values.
        let luts = identity_luts();
        let tex = configured([1 | 1 << 3, 0, 0, 0, 128 << 11, 64], &luts);
        assert_eq!(tex.sample([-0.7, 0.0], 0.0), tex.sample([0.7, 0.0], 0.0));
        assert_ne!(tex.sample([0.7, 0.0], 0.0), tex.sample([0.2, 0.0], 0.0));
    }

    #[test]
    fn separate_alpha_reads_its_own_mapping() {
        let luts = identity_luts();
        // RGB from u, alpha from v (function 2), separate alpha on.
        let tex = configured([1 | 1 << 3 | 2 << 10 | 1 << 14, 0, 0, 0, 1 << 11, 0], &luts);
        // Width field 1: one entry; RGB is entry 0 whatever u.
        let color = tex.sample([0.7, 0.25], 0.0);
        assert_eq!(&color[..3], &[0, 0, 0]);
        // Alpha: the identity map at 0.25 is entry 32, ⌊32·4095/128⌋ = 1023 4095ths, no
        // fraction; · 255 = 63.70, truncated: 63.
        assert_eq!(color[3], 63);
    }

    #[test]
    fn mipmap_levels_start_at_their_offsets() {
        let luts = identity_luts();
        // Nearest-mipmap-nearest, levels 0-7, width 64 from offset 0, level 1 at 100, bias 1.0
        // (float1.5.10 0x3C00: low byte 0x00 in PROCTEX0, high byte 0x3C in PROCTEX4).
        let proctex4 = filter::NEAREST_MIPMAP_NEAREST | 7 << 7 | 64 << 11 | 0x3C << 19;
        let tex = configured([1 | 1 << 3, 0, 0, 0, proctex4, 100 << 8], &luts);
        assert!(tex.needs_lod());
        // Footprint 1/64: log2(64 · 1 · 1/64) = 0: level 0, index 0 + 1·63.
        assert_eq!(tex.sample([1.0, 0.0], 1.0 / 64.0)[0], 63);
        // Footprint 2/64: level 1, 32 entries from 100: index 100 + 31.
        assert_eq!(tex.sample([1.0, 0.0], 2.0 / 64.0)[0], 131);
        // Footprint 2^5/64: level 5 sits at the fixed offset 0xF8, 2 entries: 0xF8 + 1.
        assert_eq!(tex.sample([1.0, 0.0], 32.0 / 64.0)[0], 0xF9);
    }

    #[test]
    fn uploads_fill_each_table_and_wrap() {
        let mut regs = RegisterFile::default();
        let mut luts = ProcTexLuts::default();
        regs.set(id::PROCTEX_LUT, table::RGB_MAP << 8 | 127);
        luts.push(&mut regs, 0xAB_CDEF);
        luts.push(&mut regs, 0x12_3456);
        assert_eq!((luts.rgb_map[127], luts.rgb_map[0]), (0xAB_CDEF, 0x12_3456));
        regs.set(id::PROCTEX_LUT, table::COLOR << 8 | 255);
        luts.push(&mut regs, 0x1122_3344);
        luts.push(&mut regs, 0x5566_7788);
        assert_eq!((luts.color[255], luts.color[0]), (0x1122_3344, 0x5566_7788));
        assert_eq!(bits(regs.get(id::PROCTEX_LUT), 0, 8), 1);
        // No table: dropped, the index advances.
        regs.set(id::PROCTEX_LUT, 1 << 8);
        let before = luts.clone();
        luts.push(&mut regs, 7);
        assert_eq!(luts, before);
        assert_eq!(bits(regs.get(id::PROCTEX_LUT), 0, 8), 1);
    }

    #[test]
    fn noise_moves_the_coordinates_and_zero_amplitude_does_not() {
        let luts = identity_luts();
        // u mapping, clamp to edge, noise on; frequency 1.0 (0x3C00) on both axes.
        let base = 1 | 1 << 3 | 1 << 15;
        let with_amplitude = |amplitude: u32| {
            configured(
                [
                    base,
                    amplitude,
                    amplitude,
                    0x3C00 | 0x3C00 << 16,
                    255 << 11,
                    0,
                ],
                &luts,
            )
        };
        let quiet = with_amplitude(0);
        let plain = configured([1 | 1 << 3, 0, 0, 0, 255 << 11, 0], &luts);
        let loud = with_amplitude(0x1000);
        let mut moved = 0;
        for k in 0..64 {
            let uv = [k as f32 / 64.0, 0.3];
            assert_eq!(quiet.sample(uv, 0.0), plain.sample(uv, 0.0));
            moved += (loud.sample(uv, 0.0) != plain.sample(uv, 0.0)) as u32;
        }
        assert!(moved > 32, "noise moved {moved} of 64 samples");
    }
}
