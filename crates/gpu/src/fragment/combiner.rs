//! The texture combiners (docs/gpu.md, "Fragment stages"): six stages with their buffer, all
//! arithmetic on 8-bit channels (docs/gpu-combiners-and-texturing.md §1).
//!
//! The colour sources are gathered in [`Sources`]: the interpolated vertex colour, texture
//! units 0-2 (`super::texture`), the fragment-lighting colours (`super::lighting`) and the
//! procedural texture (unit 3, `super::proctex`); the fragment paths (`super::shade`,
//! `super::shade_plain`) fill them per fragment.

use crate::framebuffer::color::Rgba8;
use crate::regs::{RegisterFile, bits, id};

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

    /// Whether every operand is 0 (each slot's colour and alpha as they are) and both scales
    /// are 1: the stage's result is then its operations on its sources alone.
    pub fn is_plain(&self) -> bool {
        self.rgb_operands == [0; 3]
            && self.alpha_operands == [0; 3]
            && self.rgb_scale == 1
            && self.alpha_scale == 1
    }

    /// Whether the stage outputs source `code` as it is: REPLACE of it (operand 0, scale 1) in
    /// RGB and alpha.
    pub fn replaces_with(&self, code: u8) -> bool {
        self.rgb_op == 0
            && self.alpha_op == 0
            && self.rgb_sources[0] == code
            && self.alpha_sources[0] == code
            && self.rgb_operands[0] == 0
            && self.alpha_operands[0] == 0
            && self.rgb_scale == 1
            && self.alpha_scale == 1
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
        let trailing = self.stages[1..]
            .iter()
            .rev()
            .take_while(|stage| stage.replaces_with(source::PREVIOUS))
            .count();
        self.stages.len() - trailing
    }

    /// Whether the first `stages` stages output the vertex colour unchanged for any fragment:
    /// one stage, REPLACE of the primary colour as it is.
    pub fn passes_primary(&self, stages: usize) -> bool {
        stages == 1 && self.stages[0].replaces_with(source::PRIMARY)
    }

    /// The output of the first `stages` stages (see [`Combiners::active_stages`]).
    pub fn run_stages(&self, sources: &Sources, stages: usize) -> Rgba8 {
        // Every source by its code: the fixed ones once, the previous output, the buffer and
        // the constant per stage; unusable codes (7-12) read 0.
        let mut table = [[0u8; 4]; 16];
        table[source::PRIMARY as usize] = sources.primary;
        table[source::FRAGMENT_PRIMARY as usize] = sources.fragment_primary;
        table[source::FRAGMENT_SECONDARY as usize] = sources.fragment_secondary;
        let textures = source::TEXTURE0 as usize;
        table[textures..textures + 4].copy_from_slice(&sources.textures);
        let mut previous = [0u8; 4];
        let mut pending = self.buffer_color;
        for (n, stage) in self.stages[..stages].iter().enumerate() {
            // Stage 0 has no previous (its entry is still 0).
            table[source::PREVIOUS as usize] = previous;
            table[source::CONSTANT as usize] = stage.constant;
            let run = STAGE_RUNS[usize::from(stage.is_plain())][op_index(stage.rgb_op)]
                [op_index(stage.alpha_op)];
            let out = run(stage, n, &table);
            // The buffer a stage reads is the one the stage before it left.
            table[source::PREVIOUS_BUFFER as usize] = pending;
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

/// One stage's output from its sources by code (`table`), stage `n` of the sequence.
type StageRun = fn(&CombinerStage, usize, &[Rgba8; 16]) -> Rgba8;

/// The operations' place in [`STAGE_RUNS`]: 0-9 their own, every undefined code 10 (all of them
/// make 0).
fn op_index(op: u8) -> usize {
    (op as usize).min(10)
}

/// A stage compiled for its RGB and alpha operations (`RGB`, `ALPHA`: 0-9, or 10 for an
/// undefined one): the operations' dispatch and the slot counts fold away. `PLAIN`: every
/// operand is 0 (the colour and the alpha as they are) and both scales 1
/// ([`CombinerStage::is_plain`]), so the operands and the scaling, identities then, fold away
/// too.
fn stage_run<const PLAIN: bool, const RGB: u8, const ALPHA: u8>(
    stage: &CombinerStage,
    n: usize,
    table: &[Rgba8; 16],
) -> Rgba8 {
    let read = |code: u8| table[code as usize & 15];
    // Only the slots the operation reads are fetched (the others stay 0).
    let mut rgb_inputs = [[0u8; 3]; 3];
    for (slot, input) in rgb_inputs.iter_mut().enumerate().take(slots(RGB)) {
        let code = match stage.rgb_sources[slot] {
            // Stage 0's RGB slots read slot 2's source for "previous".
            source::PREVIOUS if n == 0 => stage.rgb_sources[2],
            code => code,
        };
        let c = read(code);
        *input = if PLAIN {
            [c[0], c[1], c[2]]
        } else {
            rgb_operand(stage.rgb_operands[slot], c)
        };
    }
    let mut alpha_inputs = [0u8; 3];
    for (slot, input) in alpha_inputs.iter_mut().enumerate().take(slots(ALPHA)) {
        let c = read(stage.alpha_sources[slot]);
        *input = if PLAIN {
            c[3]
        } else {
            alpha_operand(stage.alpha_operands[slot], c)
        };
    }
    let (rgb, dot) = combine_rgb(RGB, rgb_inputs);
    let alpha = match (RGB, dot) {
        // Dot3 RGBA makes the alpha result too.
        (7, Some(d)) => d,
        _ => combine_alpha(ALPHA, alpha_inputs),
    };
    if PLAIN {
        return [rgb[0], rgb[1], rgb[2], alpha];
    }
    let scaled = |v: u8, scale: u32| (v as u32 * scale).min(255) as u8;
    [
        scaled(rgb[0], stage.rgb_scale),
        scaled(rgb[1], stage.rgb_scale),
        scaled(rgb[2], stage.rgb_scale),
        scaled(alpha, stage.alpha_scale),
    ]
}

/// [`stage_run`] for plain stages or not (first index), each RGB operation (row) and alpha
/// operation (column), by [`op_index`].
static STAGE_RUNS: [[[StageRun; 11]; 11]; 2] = {
    macro_rules! row {
        ($plain:literal, $rgb:literal) => {
            [
                stage_run::<$plain, $rgb, 0>,
                stage_run::<$plain, $rgb, 1>,
                stage_run::<$plain, $rgb, 2>,
                stage_run::<$plain, $rgb, 3>,
                stage_run::<$plain, $rgb, 4>,
                stage_run::<$plain, $rgb, 5>,
                stage_run::<$plain, $rgb, 6>,
                stage_run::<$plain, $rgb, 7>,
                stage_run::<$plain, $rgb, 8>,
                stage_run::<$plain, $rgb, 9>,
                stage_run::<$plain, $rgb, 10>,
            ]
        };
    }
    macro_rules! table {
        ($plain:literal) => {
            [
                row!($plain, 0),
                row!($plain, 1),
                row!($plain, 2),
                row!($plain, 3),
                row!($plain, 4),
                row!($plain, 5),
                row!($plain, 6),
                row!($plain, 7),
                row!($plain, 8),
                row!($plain, 9),
                row!($plain, 10),
            ]
        };
    }
    [table!(false), table!(true)]
};

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

/// How many of the slots a, b, c operation `op` reads (as an RGB operation; as an alpha
/// operation Dot3 reads none, see [`combine_alpha`], and reading two changes nothing).
fn slots(op: u8) -> usize {
    match op {
        0 => 1,
        1 | 2 | 3 | 5 | 6 | 7 => 2,
        4 | 8 | 9 => 3,
        _ => 0,
    }
}

/// One channel of an operation on inputs a, b, c (0-255 each).
#[inline(always)]
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

    /// `passes_primary` holds exactly where the combiners' output is the vertex colour for any
    /// colour: checked on every single-stage change from citro3d's default REPLACE of the
    /// primary colour (one field at a time), with trailing pass-through stages.
    #[test]
    fn passes_primary_means_the_output_is_the_vertex_colour() {
        let replace = stage(0, [source::PRIMARY; 3], [0; 3]);
        let combiners = |first: CombinerStage| {
            let mut stages = [pass_through(); 6];
            stages[0] = first;
            Combiners {
                stages,
                buffer_rgb: 0,
                buffer_alpha: 0,
                buffer_color: [0; 4],
            }
        };
        let colours = [
            [0, 0, 0, 0],
            [200, 100, 50, 25],
            [255, 255, 255, 255],
            [1, 254, 128, 3],
        ];
        let is_primary = |c: &Combiners| {
            let stages = c.active_stages();
            colours.iter().all(|&primary| {
                let sources = Sources {
                    primary,
                    textures: [[9, 8, 7, 6]; 4],
                    ..Sources::default()
                };
                c.run_stages(&sources, stages) == primary
            })
        };
        let default = combiners(replace);
        assert!(default.passes_primary(default.active_stages()));
        assert!(is_primary(&default));
        let changes: [fn(&mut CombinerStage); 8] = [
            |s| s.rgb_op = 1,
            |s| s.alpha_op = 2,
            |s| s.rgb_sources[0] = source::TEXTURE0,
            |s| s.alpha_sources[0] = source::CONSTANT,
            |s| s.rgb_operands[0] = 1,
            |s| s.alpha_operands[0] = 1,
            |s| s.rgb_scale = 2,
            |s| s.alpha_scale = 4,
        ];
        for (k, change) in changes.iter().enumerate() {
            let mut first = replace;
            change(&mut first);
            let c = combiners(first);
            assert!(!c.passes_primary(c.active_stages()), "change {k}");
            assert!(
                !is_primary(&c),
                "change {k} still outputs the primary colour"
            );
        }
        // A second stage that changes the colour.
        let mut two = default;
        two.stages[1] = stage(1, [source::PREVIOUS, source::CONSTANT, 0], [0; 3]);
        assert!(!two.passes_primary(two.active_stages()));
    }

    /// The combiners fetch only the slots an operation reads (`slots`): for every operation
    /// code, an input in a slot past them never changes the RGB or the alpha result.
    #[test]
    fn operations_read_no_slot_past_their_count() {
        let values = [0u8, 1, 77, 128, 200, 255];
        for op in 0..16u8 {
            let used = slots(op);
            for slot in used..3 {
                for a in values {
                    for b in values {
                        let mut inputs = [[a; 3], [b; 3], [a ^ b; 3]];
                        let (rgb, dot) = combine_rgb(op, inputs);
                        let alpha = combine_alpha(op, [a, b, a ^ b]);
                        for other in values {
                            inputs[slot] = [other; 3];
                            assert_eq!(combine_rgb(op, inputs), (rgb, dot), "op {op} slot {slot}");
                            let mut alpha_inputs = [a, b, a ^ b];
                            alpha_inputs[slot] = other;
                            assert_eq!(combine_alpha(op, alpha_inputs), alpha, "op {op}");
                        }
                    }
                }
            }
        }
    }

    /// A plain stage's compiled run (operands and scaling left out) gives what the general
    /// run gives with operands 0 and scales 1, for every pair of operation codes, as stage 0
    /// (where PREVIOUS reads slot 2's source) and later, on a spread of sources; a stage with
    /// any operand or scale changed is not plain.
    #[test]
    fn plain_stages_run_as_the_general_rule() {
        let mut table = [[0u8; 4]; 16];
        for (k, entry) in table.iter_mut().enumerate() {
            *entry = [
                (k * 37) as u8,
                (255 - k * 11) as u8,
                (k * k * 7) as u8,
                (40 + k * 13) as u8,
            ];
        }
        let sources_tried = [
            [source::TEXTURE0, source::PRIMARY, source::CONSTANT],
            [
                source::PREVIOUS,
                source::TEXTURE0 + 1,
                source::FRAGMENT_PRIMARY,
            ],
            [source::PREVIOUS_BUFFER, source::PREVIOUS, source::TEXTURE3],
        ];
        for rgb in 0..11u8 {
            for alpha in 0..11u8 {
                for sources in sources_tried {
                    let stage = CombinerStage {
                        alpha_sources: [sources[2], sources[0], sources[1]],
                        alpha_op: alpha,
                        ..stage(rgb, sources, [0; 3])
                    };
                    assert!(stage.is_plain());
                    for n in [0, 3] {
                        let general = STAGE_RUNS[0][rgb as usize][alpha as usize];
                        let plain = STAGE_RUNS[1][rgb as usize][alpha as usize];
                        assert_eq!(
                            plain(&stage, n, &table),
                            general(&stage, n, &table),
                            "ops {rgb} {alpha}, sources {sources:?}, stage {n}"
                        );
                    }
                }
            }
        }
        let plain = stage(
            1,
            [source::TEXTURE0, source::PRIMARY, source::PRIMARY],
            [0; 3],
        );
        let changed = [
            CombinerStage {
                rgb_operands: [0, 1, 0],
                ..plain
            },
            CombinerStage {
                alpha_operands: [0, 0, 2],
                ..plain
            },
            CombinerStage {
                rgb_scale: 2,
                ..plain
            },
            CombinerStage {
                alpha_scale: 4,
                ..plain
            },
        ];
        for stage in changed {
            assert!(!stage.is_plain(), "{stage:?}");
        }
    }

    /// Every pair of RGB and alpha operation codes, undefined ones included, runs the stage
    /// compiled for it: a one-stage combiner gives `operate` channel by channel on its three
    /// sources (Dot3 as `combine_rgb` makes it).
    #[test]
    fn each_operation_pair_runs_its_compiled_stage() {
        let (primary, texel, constant) =
            ([200, 100, 50, 25], [30, 180, 250, 77], [90, 60, 30, 201]);
        let sources = Sources {
            primary,
            textures: [texel; 4],
            ..Sources::default()
        };
        for rgb_op in 0..16u8 {
            for alpha_op in 0..16u8 {
                let mut stages = [pass_through(); 6];
                stages[0] = CombinerStage {
                    rgb_op,
                    alpha_op,
                    constant,
                    ..stage(
                        0,
                        [source::PRIMARY, source::TEXTURE0, source::CONSTANT],
                        [0; 3],
                    )
                };
                let combiners = Combiners {
                    stages,
                    buffer_rgb: 0,
                    buffer_alpha: 0,
                    buffer_color: [0; 4],
                };
                let rgb_inputs = [primary, texel, constant].map(|c| [c[0], c[1], c[2]]);
                let (rgb, dot) = combine_rgb(rgb_op, rgb_inputs);
                let alpha = match (rgb_op, dot) {
                    (7, Some(d)) => d,
                    _ => operate(
                        alpha_op,
                        primary[3] as u32,
                        texel[3] as u32,
                        constant[3] as u32,
                    ),
                };
                assert_eq!(
                    combiners.run_stages(&sources, 1),
                    [rgb[0], rgb[1], rgb[2], alpha],
                    "RGB {rgb_op}, alpha {alpha_op}"
                );
            }
        }
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
}
