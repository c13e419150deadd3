//! The fragment stages (docs/gpu.md, "Fragment stages"): the six texture-combiner stages with
//! their buffer, then the per-fragment operations: alpha test, stencil test, depth test,
//! blending or a logic op, and the write masks. All arithmetic is on 8-bit channels, as
//! docs/gpu-combiners-and-texturing.md §1 and docs/gpu-rasterizer-and-framebuffer.md §5 give it.
//!
//! The colour sources are gathered in [`Sources`]: the interpolated vertex colour, texture
//! units 0-2 (`super::texture`), the fragment-lighting colours (`super::lighting`) and the
//! procedural texture's slot (unit 3, read as (0, 0, 0, 0) until it exists); the rasterizer
//! fills them per fragment.

use super::color::Rgba8;
use super::regs::{RegisterFile, bits, id};

/// One combiner stage's configuration (five registers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CombinerStage {
    /// RGB sources of slots 0-2.
    pub rgb_sources: [u8; 3],
    /// Alpha sources.
    pub alpha_sources: [u8; 3],
    /// RGB operands.
    pub rgb_operands: [u8; 3],
    /// Alpha operands.
    pub alpha_operands: [u8; 3],
    /// RGB operation.
    pub rgb_op: u8,
    /// Alpha operation.
    pub alpha_op: u8,
    /// The constant colour.
    pub constant: Rgba8,
    /// RGB scale (1, 2 or 4).
    pub rgb_scale: u32,
    /// Alpha scale.
    pub alpha_scale: u32,
}

/// Source codes.
#[allow(missing_docs)]
pub mod source {
    pub const PRIMARY: u8 = 0x0;
    pub const FRAGMENT_PRIMARY: u8 = 0x1;
    pub const FRAGMENT_SECONDARY: u8 = 0x2;
    pub const TEXTURE0: u8 = 0x3;
    pub const TEXTURE3: u8 = 0x6;
    pub const PREVIOUS_BUFFER: u8 = 0xD;
    pub const CONSTANT: u8 = 0xE;
    pub const PREVIOUS: u8 = 0xF;
}

/// An RGBA colour from a 32-bit register word (R in bits 0-7).
pub const fn rgba_of(word: u32) -> Rgba8 {
    word.to_le_bytes()
}

impl CombinerStage {
    /// Stage `k`'s configuration from the registers.
    pub fn configure(regs: &RegisterFile, k: usize) -> CombinerStage {
        let base = id::TEXENV[k];
        let sources = regs.get(base);
        let operands = regs.get(base + 1);
        let ops = regs.get(base + 2);
        let scale = regs.get(base + 4);
        let nibble = |word: u32, at: u32| bits(word, at, 4) as u8;
        let scale_of = |code: u32| match code {
            1 => 2,
            2 => 4,
            _ => 1,
        };
        CombinerStage {
            rgb_sources: [nibble(sources, 0), nibble(sources, 4), nibble(sources, 8)],
            alpha_sources: [
                nibble(sources, 16),
                nibble(sources, 20),
                nibble(sources, 24),
            ],
            rgb_operands: [
                nibble(operands, 0),
                nibble(operands, 4),
                nibble(operands, 8),
            ],
            alpha_operands: [
                bits(operands, 12, 3) as u8,
                bits(operands, 16, 3) as u8,
                bits(operands, 20, 3) as u8,
            ],
            rgb_op: nibble(ops, 0),
            alpha_op: nibble(ops, 16),
            constant: rgba_of(regs.get(base + 3)),
            rgb_scale: scale_of(bits(scale, 0, 2)),
            alpha_scale: scale_of(bits(scale, 16, 2)),
        }
    }
}

impl CombinerStage {
    /// A stage that passes its previous stage's output on (stage 0: the vertex colour).
    pub const PASS_THROUGH: CombinerStage = CombinerStage {
        rgb_sources: [source::PREVIOUS, source::PRIMARY, source::PRIMARY],
        alpha_sources: [source::PREVIOUS, source::PRIMARY, source::PRIMARY],
        rgb_operands: [0; 3],
        alpha_operands: [0; 3],
        rgb_op: 0,
        alpha_op: 0,
        constant: [0; 4],
        rgb_scale: 1,
        alpha_scale: 1,
    };

    /// A stage computing `op` on the sources `sources` (both RGB and alpha, operands 0: the
    /// colour and the alpha as they are).
    pub const fn new(op: u8, sources: [u8; 3]) -> CombinerStage {
        CombinerStage {
            rgb_sources: sources,
            alpha_sources: sources,
            rgb_op: op,
            alpha_op: op,
            ..CombinerStage::PASS_THROUGH
        }
    }

    /// The stage with constant colour `constant`.
    pub const fn with_constant(mut self, constant: Rgba8) -> CombinerStage {
        self.constant = constant;
        self
    }

    /// The five register words (the inverse of [`CombinerStage::configure`]).
    pub fn words(&self) -> [u32; 5] {
        let pack = |v: [u8; 3], at: u32| {
            (v[0] as u32 & 0xF) << at
                | (v[1] as u32 & 0xF) << (at + 4)
                | (v[2] as u32 & 0xF) << (at + 8)
        };
        let scale = |s: u32| match s {
            2 => 1,
            4 => 2,
            _ => 0,
        };
        [
            pack(self.rgb_sources, 0) | pack(self.alpha_sources, 16),
            pack(self.rgb_operands, 0) | pack(self.alpha_operands.map(|o| o & 7), 12),
            (self.rgb_op as u32 & 0xF) | (self.alpha_op as u32 & 0xF) << 16,
            u32::from_le_bytes(self.constant),
            scale(self.rgb_scale) | scale(self.alpha_scale) << 16,
        ]
    }
}

/// The colours a fragment's combiners can read besides their own results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    /// The interpolated vertex colour.
    pub primary: Rgba8,
    /// Fragment lighting's primary (diffuse) colour.
    pub fragment_primary: Rgba8,
    /// Fragment lighting's secondary (specular) colour.
    pub fragment_secondary: Rgba8,
    /// Texture units 0-2 and the procedural texture (unit 3).
    pub textures: [Rgba8; 4],
}

/// The combiners: six stages, the buffer's update mask and initial colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Combiners {
    /// The stages.
    pub stages: [CombinerStage; 6],
    /// Bit k: the buffer's RGB takes stage k's output (k < 4).
    pub buffer_rgb: u8,
    /// Bit k: the buffer's alpha takes stage k's output.
    pub buffer_alpha: u8,
    /// The buffer's initial colour.
    pub buffer_color: Rgba8,
}

impl Combiners {
    /// The combiners the registers describe.
    pub fn configure(regs: &RegisterFile) -> Combiners {
        let update = regs.get(id::TEXENV_UPDATE_BUFFER);
        Combiners {
            stages: std::array::from_fn(|k| CombinerStage::configure(regs, k)),
            buffer_rgb: bits(update, 8, 4) as u8,
            buffer_alpha: bits(update, 12, 4) as u8,
            buffer_color: rgba_of(regs.get(id::TEXENV_BUFFER_COLOR)),
        }
    }

    /// The combiner output for a fragment with `sources`.
    pub fn run(&self, sources: &Sources) -> Rgba8 {
        self.run_stages(sources, self.stages.len())
    }

    /// How many stages change the colour: the trailing stages that pass the previous colour
    /// on unchanged (REPLACE of PREVIOUS, unscaled, in RGB and alpha) can be skipped, since
    /// nothing after them reads the buffer. At least one stage runs.
    pub fn active_stages(&self) -> usize {
        let passes_on = |stage: &CombinerStage| {
            stage.rgb_op == 0
                && stage.alpha_op == 0
                && stage.rgb_sources[0] == source::PREVIOUS
                && stage.alpha_sources[0] == source::PREVIOUS
                && stage.rgb_operands[0] == 0
                && stage.alpha_operands[0] == 0
                && stage.rgb_scale == 1
                && stage.alpha_scale == 1
        };
        let trailing = self.stages[1..]
            .iter()
            .rev()
            .take_while(|stage| passes_on(stage))
            .count();
        self.stages.len() - trailing
    }

    /// The output of the first `stages` stages (see [`Combiners::active_stages`]).
    pub fn run_stages(&self, sources: &Sources, stages: usize) -> Rgba8 {
        let mut previous = [0u8; 4];
        let mut visible = [0u8; 4];
        let mut pending = self.buffer_color;
        for (n, stage) in self.stages[..stages].iter().enumerate() {
            let fetch = |code: u8, alpha: bool| -> Rgba8 {
                let code = if n == 0 && code == source::PREVIOUS && !alpha {
                    // Stage 0 has no previous: RGB slots read slot 2's source instead.
                    stage.rgb_sources[2]
                } else {
                    code
                };
                match code {
                    source::PRIMARY => sources.primary,
                    source::FRAGMENT_PRIMARY => sources.fragment_primary,
                    source::FRAGMENT_SECONDARY => sources.fragment_secondary,
                    source::TEXTURE0..=source::TEXTURE3 => {
                        sources.textures[(code - source::TEXTURE0) as usize]
                    }
                    source::PREVIOUS_BUFFER => visible,
                    source::CONSTANT => stage.constant,
                    source::PREVIOUS if n > 0 => previous,
                    _ => [0; 4],
                }
            };
            let rgb_inputs: [[u8; 3]; 3] = std::array::from_fn(|slot| {
                rgb_operand(
                    stage.rgb_operands[slot],
                    fetch(stage.rgb_sources[slot], false),
                )
            });
            let alpha_inputs: [u8; 3] = std::array::from_fn(|slot| {
                alpha_operand(
                    stage.alpha_operands[slot],
                    fetch(stage.alpha_sources[slot], true),
                )
            });
            let (rgb, dot) = combine_rgb(stage.rgb_op, rgb_inputs);
            let alpha = match (stage.rgb_op, dot) {
                // Dot3 RGBA makes the alpha result too.
                (7, Some(d)) => d,
                _ => combine_alpha(stage.alpha_op, alpha_inputs),
            };
            let scaled = |v: u8, scale: u32| (v as u32 * scale).min(255) as u8;
            let out = [
                scaled(rgb[0], stage.rgb_scale),
                scaled(rgb[1], stage.rgb_scale),
                scaled(rgb[2], stage.rgb_scale),
                scaled(alpha, stage.alpha_scale),
            ];
            visible = pending;
            if n < 4 {
                if self.buffer_rgb & (1 << n) != 0 {
                    pending[..3].copy_from_slice(&out[..3]);
                }
                if self.buffer_alpha & (1 << n) != 0 {
                    pending[3] = out[3];
                }
            }
            previous = out;
        }
        previous
    }
}

/// An RGB operand of `color` (docs/gpu-combiners-and-texturing.md §1.4); undocumented codes
/// follow the pattern of the documented ones (bits 2-3 the channel, bit 0 the inversion).
fn rgb_operand(code: u8, c: Rgba8) -> [u8; 3] {
    let value = match code >> 1 {
        0 => return invert3([c[0], c[1], c[2]], code & 1 != 0),
        1 => c[3],
        2 | 3 => c[0],
        4 | 5 => c[1],
        _ => c[2],
    };
    let v = if code & 1 != 0 { 255 - value } else { value };
    [v; 3]
}

fn invert3(v: [u8; 3], invert: bool) -> [u8; 3] {
    if invert { v.map(|x| 255 - x) } else { v }
}

/// An alpha operand of `color`.
fn alpha_operand(code: u8, c: Rgba8) -> u8 {
    let value = match code >> 1 {
        0 => c[3],
        1 => c[0],
        2 => c[1],
        _ => c[2],
    };
    if code & 1 != 0 { 255 - value } else { value }
}

/// One channel of an operation on inputs a, b, c (0-255 each).
fn operate(op: u8, a: u32, b: u32, c: u32) -> u8 {
    (match op {
        0 => a,
        1 => a * b / 255,
        2 => (a + b).min(255),
        3 => (a + b).saturating_sub(128).min(255),
        4 => (a * c + b * (255 - c)) / 255,
        5 => a.saturating_sub(b),
        8 => (a * b / 255 + c).min(255),
        9 => (a + b).min(255) * c / 255,
        _ => 0,
    }) as u8
}

/// The RGB operation; for Dot3 also the scalar (which Dot3 RGBA uses as alpha).
fn combine_rgb(op: u8, [a, b, c]: [[u8; 3]; 3]) -> ([u8; 3], Option<u8>) {
    if op == 6 || op == 7 {
        let term = |k: usize| {
            let p = (2 * a[k] as i32 - 255) * (2 * b[k] as i32 - 255);
            (p + 128) / 256
        };
        let dot = (term(0) + term(1) + term(2)).clamp(0, 255) as u8;
        return ([dot; 3], Some(dot));
    }
    let channel = |k: usize| operate(op, a[k] as u32, b[k] as u32, c[k] as u32);
    ([channel(0), channel(1), channel(2)], None)
}

/// The alpha operation (Dot3 as an alpha operation reads 0).
fn combine_alpha(op: u8, [a, b, c]: [u8; 3]) -> u8 {
    operate(op, a as u32, b as u32, c as u32)
}

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FragmentOps {
    /// COLOR_OPERATION bits 0-1 (0 default; 1 gas and 3 shadow are later stages).
    pub mode: u32,
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
}

impl FragmentOps {
    /// The configuration the registers describe.
    pub fn configure(regs: &RegisterFile) -> FragmentOps {
        let operation = regs.get(id::COLOR_OPERATION);
        FragmentOps {
            mode: bits(operation, 0, 2),
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

    /// Blends or logic-combines `source` with the stored `dest`, then applies the channel
    /// write mask.
    pub fn output(&self, source: Rgba8, dest: Rgba8) -> Rgba8 {
        let combined = if self.blend {
            self.blended(source, dest)
        } else {
            std::array::from_fn(|k| logic_op(self.logic_op, source[k], dest[k]))
        };
        std::array::from_fn(|k| {
            if self.depth_color & (0x100 << k) != 0 {
                combined[k]
            } else {
                dest[k]
            }
        })
    }

    fn blended(&self, src: Rgba8, dst: Rgba8) -> Rgba8 {
        let func = self.blend_func;
        let constant = self.blend_color;
        let factor = |code: u32, k: usize| -> u32 {
            let v = |x: u8| x as u32;
            match code {
                0 => 0,
                1 => 255,
                2 => v(src[k]),
                3 => 255 - v(src[k]),
                4 => v(dst[k]),
                5 => 255 - v(dst[k]),
                6 => v(src[3]),
                7 => 255 - v(src[3]),
                8 => v(dst[3]),
                9 => 255 - v(dst[3]),
                10 => v(constant[k]),
                11 => 255 - v(constant[k]),
                12 => v(constant[3]),
                13 => 255 - v(constant[3]),
                14 if k < 3 => v(src[3]).min(255 - v(dst[3])),
                14 => 255,
                // Undefined: the source colour (docs/gpu.md, "Model choices").
                _ => v(src[k]),
            }
        };
        std::array::from_fn(|k| {
            let (equation, sf, df) = if k < 3 {
                (bits(func, 0, 3), bits(func, 16, 4), bits(func, 20, 4))
            } else {
                (bits(func, 8, 3), bits(func, 24, 4), bits(func, 28, 4))
            };
            let s = (src[k] as u32 * factor(sf, k)) as i64;
            let d = (dst[k] as u32 * factor(df, k)) as i64;
            let value = match equation {
                1 => (s - d) / 255,
                2 => (d - s) / 255,
                3 => s.min(d) / 255,
                4 => s.max(d) / 255,
                _ => (s + d) / 255,
            };
            value.clamp(0, 255) as u8
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(rgb_op: u8, sources: [u8; 3], operands: [u8; 3]) -> CombinerStage {
        CombinerStage {
            rgb_sources: sources,
            alpha_sources: sources,
            rgb_operands: operands,
            alpha_operands: [0; 3],
            rgb_op,
            alpha_op: rgb_op,
            constant: [0; 4],
            rgb_scale: 1,
            alpha_scale: 1,
        }
    }

    fn pass_through() -> CombinerStage {
        stage(0, [source::PREVIOUS; 3], [0; 3])
    }

    #[test]
    fn each_operation_on_known_inputs() {
        let a = 200u32;
        let b = 100u32;
        let c = 51u32;
        assert_eq!(operate(0, a, b, c), 200);
        assert_eq!(operate(1, a, b, c), 78); // 20000 / 255 = 78.4
        assert_eq!(operate(2, a, b, c), 255);
        assert_eq!(operate(3, a, b, c), 172);
        assert_eq!(operate(3, 10, 20, c), 0);
        assert_eq!(operate(4, a, b, c), 120); // (10200 + 20400) / 255 = 120
        assert_eq!(operate(5, b, a, c), 0);
        assert_eq!(operate(5, a, b, c), 100);
        assert_eq!(operate(8, a, b, c), 129);
        assert_eq!(operate(9, a, b, c), 51);
        // Dot3: (255, 128, 128) · (255, 128, 128) -> 255·255/256 + 2·1/256 ≈ 254.
        let (rgb, dot) = combine_rgb(6, [[255, 128, 128], [255, 128, 128], [0; 3]]);
        assert_eq!(rgb, [254; 3]);
        assert_eq!(dot, Some(254));
    }

    #[test]
    fn the_buffer_is_one_stage_late() {
        let mut stages = [pass_through(); 6];
        // Stage 0: the constant red; stage 1: the buffer; stage 2: the buffer.
        stages[0] = CombinerStage {
            constant: [255, 0, 0, 255],
            ..stage(0, [source::CONSTANT; 3], [0; 3])
        };
        stages[1] = stage(0, [source::PREVIOUS_BUFFER; 3], [0; 3]);
        stages[2] = stage(2, [source::PREVIOUS_BUFFER, source::PREVIOUS, 0], [0; 3]);
        let combiners = Combiners {
            stages,
            buffer_rgb: 1,
            buffer_alpha: 1,
            buffer_color: [0, 0, 10, 20],
        };
        // Stage 1 reads the initial colour; stage 2 reads stage 0's output plus stage 1's.
        assert_eq!(
            combiners.run(&Sources::default()),
            [255, 0, 10, 255],
            "buffer(red) + previous(initial colour), clamped"
        );
    }

    #[test]
    fn stage_zero_previous_reads_slot_two_and_operands_invert() {
        let mut stages = [pass_through(); 6];
        stages[0] = stage(
            1,
            [source::PREVIOUS, source::PREVIOUS, source::PRIMARY],
            [1, 0, 0],
        );
        let combiners = Combiners {
            stages,
            buffer_rgb: 0,
            buffer_alpha: 0,
            buffer_color: [0; 4],
        };
        let sources = Sources {
            primary: [255, 0, 100, 255],
            ..Sources::default()
        };
        // (255 - primary) * primary / 255 per channel.
        let out = combiners.run(&sources);
        assert_eq!(out[..3], [0, 0, 60]);
    }

    #[test]
    fn blend_equations_and_factors() {
        let mut ops = FragmentOps {
            mode: 0,
            blend: true,
            // Equations 0 (add); src alpha / one minus src alpha for colour and alpha.
            blend_func: 6 << 16 | 7 << 20 | 6 << 24 | 7 << 28,
            logic_op: 3,
            blend_color: [0; 4],
            alpha_test: 0,
            stencil_test: 0,
            stencil_op: 0,
            depth_color: 0xF00,
            color_write: true,
            depth_write: true,
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

    #[test]
    fn stencil_operations_respect_the_write_mask() {
        let ops = FragmentOps {
            mode: 0,
            blend: true,
            blend_func: 0,
            logic_op: 0,
            blend_color: [0; 4],
            alpha_test: 0,
            // enabled, EQUAL, write mask 0x0F, reference 0x5A, compare mask 0xF0.
            stencil_test: 1 | 2 << 4 | 0x0F << 8 | 0x5A << 16 | 0xF0 << 24,
            stencil_op: 0,
            depth_color: 0,
            color_write: true,
            depth_write: true,
        };
        assert!(ops.stencil_passes(0x53));
        assert!(!ops.stencil_passes(0x45));
        assert_eq!(ops.stencil_after(2, 0xF0), 0xFA);
        assert_eq!(ops.stencil_after(3, 0xFF), 0xFF);
        assert_eq!(ops.stencil_after(6, 0xFF), 0xF0);
        assert_eq!(ops.stencil_after(7, 0x00), 0x0F);
        assert_eq!(ops.stencil_after(5, 0x3C), 0x33);
    }
}
