//! Texture units 0-2 and fragment lighting, checked against hand-made data and analytic
//! geometry: every texel format decoded from texels written by hand from the documented bit
//! layouts (ETC1 blocks included), the Morton order, each wrap mode and filter on known
//! texels, mipmap selection, cube faces, each lighting table input on known vectors, and small
//! rendered images derived by hand.

use std::sync::Arc;

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::engine::EngineKind;
use picajit::gpu::builder::{Attribute, Element, SceneBuilder, TextureSetup};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::fragment::lighting::{Lighting, LightingLuts, lut_entry, lut_from_fn, table};
use picajit::gpu::fragment::texture::{
    BoundUnit, DecodedTexture, Level, ShadowLookup, TextureFormat, TextureKind, UnitConfig, Wrap,
    decode, encode, etc1_block, flat_sampler,
};
use picajit::gpu::framebuffer::color::{ColorFormat, DepthFormat, Rgba8};
use picajit::gpu::framebuffer::image::Image;
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;
use picajit::gpu::regs::{RegisterFile, id};

mod common;

use common::{color_image, render_trace};

/// Decodes one 8×8 tile of `format` whose bytes start with `head` (the rest zero).
fn tile(format: TextureFormat, head: &[u8]) -> Vec<Rgba8> {
    let mut bytes = vec![0u8; format.image_bytes(8, 8)];
    bytes[..head.len()].copy_from_slice(head);
    decode(format, 8, 8, &bytes)
}

#[test]
fn every_format_decodes_hand_made_texels() {
    use TextureFormat::*;
    // Texel 0 of each format is (0, 0); texel 1 is (1, 0) (Morton order).
    let first = |format, head: &[u8]| tile(format, head)[0];
    let second = |format, head: &[u8]| tile(format, head)[1];
    assert_eq!(
        first(Rgba8, &[0x44, 0x33, 0x22, 0x11]),
        [0x11, 0x22, 0x33, 0x44]
    );
    assert_eq!(
        second(Rgba8, &[0, 0, 0, 0, 0xDD, 0xCC, 0xBB, 0xAA]),
        [0xAA, 0xBB, 0xCC, 0xDD]
    );
    assert_eq!(first(Rgb8, &[0x33, 0x22, 0x11]), [0x11, 0x22, 0x33, 255]);
    assert_eq!(second(Rgb8, &[0, 0, 0, 3, 2, 1]), [1, 2, 3, 255]);
    // r5 = 16, g5 = 8, b5 = 4, a = 1: 5-bit values widen by repeating their top bits.
    let v: u16 = 16 << 11 | 8 << 6 | 4 << 1 | 1;
    assert_eq!(first(Rgba5551, &v.to_le_bytes()), [0x84, 0x42, 0x21, 255]);
    let v: u16 = 31 << 11 | 32 << 5;
    assert_eq!(first(Rgb565, &v.to_le_bytes()), [255, 0x82, 0, 255]);
    assert_eq!(
        first(Rgba4, &0x1234u16.to_le_bytes()),
        [0x11, 0x22, 0x33, 0x44]
    );
    assert_eq!(first(Ia8, &[0x40, 0x80]), [0x80, 0x80, 0x80, 0x40]);
    assert_eq!(first(Hilo8, &[0x20, 0x10]), [0x10, 0x20, 0, 255]);
    assert_eq!(first(I8, &[0x7F]), [0x7F, 0x7F, 0x7F, 255]);
    assert_eq!(second(I8, &[0, 0x3C]), [0x3C, 0x3C, 0x3C, 255]);
    assert_eq!(first(A8, &[0x7F]), [0, 0, 0, 0x7F]);
    assert_eq!(first(Ia4, &[0xA5]), [0xAA, 0xAA, 0xAA, 0x55]);
    // Two texels a byte, the even one in the low nibble.
    assert_eq!(first(I4, &[0x5A]), [0xAA, 0xAA, 0xAA, 255]);
    assert_eq!(second(I4, &[0x5A]), [0x55, 0x55, 0x55, 255]);
    assert_eq!(first(A4, &[0x5A]), [0, 0, 0, 0xAA]);
    assert_eq!(second(A4, &[0x5A]), [0, 0, 0, 0x55]);
}

/// An ETC1 word in individual mode: base colours (4 bits each) of sub-blocks 1 and 2.
fn individual(first: [u64; 3], second: [u64; 3]) -> u64 {
    first[0] << 60
        | second[0] << 56
        | first[1] << 52
        | second[1] << 48
        | first[2] << 44
        | second[2] << 40
}

#[test]
fn etc1_blocks_decode_by_the_standard_rules() {
    // Individual mode, side-by-side halves, tables 0: every modifier ±2 or ±8.
    let mut word = individual([0xF, 0, 0], [0, 0, 0xF]);
    word |= 1 << (16 + 4); // texel (1, 0): bit 4·1 + 0, negative small modifier
    word |= 1 << 1; // texel (0, 1): large modifier (+8)
    let block = etc1_block(word, None);
    assert_eq!(block[0], [255, 2, 2, 255]); // (0, 0): 0xFF + 2 clamps
    assert_eq!(block[1], [253, 0, 0, 255]); // (1, 0): −2
    assert_eq!(block[4], [255, 8, 8, 255]); // (0, 1): +8
    assert_eq!(block[3], [2, 2, 255, 255]); // (3, 0): second half
    // Table codeword 7 on the first half: ±47 / ±183.
    let block = etc1_block(individual([8, 0, 0], [0, 0, 0]) | 7 << 37, None);
    assert_eq!(block[0][0], 0x88 + 47);
    // Differential mode, stacked halves: red 10 (5 bits) and 10 − 1 below.
    let word = 1 << 33 | 1 << 32 | 10 << 59 | 0b111 << 56;
    let block = etc1_block(word, None);
    assert_eq!(block[0], [0x52 + 2, 2, 2, 255]); // 01010 → 01010010
    assert_eq!(block[4], [0x52 + 2, 2, 2, 255]); // row 1: still the first half
    assert_eq!(block[8], [0x4A + 2, 2, 2, 255]); // row 2: 01001 → 01001010
    // ETC1A4: the alpha nibble of texel (x, y) at bits 4·(4x + y).
    let alpha = 0x9u64 << 16 | 0x3 << 4;
    let block = etc1_block(individual([0, 0, 0], [0, 0, 0]), Some(alpha));
    assert_eq!(block[1][3], 0x99); // (1, 0)
    assert_eq!(block[4][3], 0x33); // (0, 1)
    assert_eq!(block[0][3], 0);
}

#[test]
fn etc_tiles_hold_four_blocks_with_little_endian_words() {
    // Block 1 of a tile covers x 4-7, y 0-3; block 2 x 0-3, y 4-7.
    let mut bytes = vec![0u8; 32];
    bytes[8..16].copy_from_slice(&individual([0xF, 0, 0], [0xF, 0, 0]).to_le_bytes());
    bytes[16..24].copy_from_slice(&individual([0, 0xF, 0], [0, 0xF, 0]).to_le_bytes());
    let texels = decode(TextureFormat::Etc1, 8, 8, &bytes);
    assert_eq!(texels[0], [2, 2, 2, 255]);
    assert_eq!(texels[5], [255, 2, 2, 255]); // (5, 0)
    assert_eq!(texels[4 * 8 + 1], [2, 255, 2, 255]); // (1, 4)
    // ETC1A4: 16 bytes a block, alpha first.
    let mut bytes = vec![0u8; 64];
    bytes[16..24].copy_from_slice(&0xFu64.to_le_bytes());
    bytes[24..32].copy_from_slice(&individual([0, 0, 0xF], [0, 0, 0xF]).to_le_bytes());
    let texels = decode(TextureFormat::Etc1a4, 8, 8, &bytes);
    assert_eq!(texels[4], [2, 2, 255, 255]); // (4, 0): alpha nibble 0xF
    assert_eq!(texels[5], [2, 2, 255, 0]);
}

#[test]
fn texels_follow_the_morton_order_within_tiles_and_tiles_by_rows() {
    // Texel k in memory holds (k, k>>8, 0, 255); two tiles across, two down.
    let (width, height) = (16u32, 16u32);
    let bytes: Vec<u8> = (0..width * height)
        .flat_map(|k| [255, 0, (k >> 8) as u8, k as u8])
        .collect();
    let texels = decode(TextureFormat::Rgba8, width, height, &bytes);
    let index = |x: usize, y: usize| {
        let [lo, hi, _, _] = texels[y * width as usize + x];
        lo as u32 | (hi as u32) << 8
    };
    let row0: Vec<u32> = (0..8).map(|x| index(x, 0)).collect();
    assert_eq!(row0, [0, 1, 4, 5, 16, 17, 20, 21]);
    let column0: Vec<u32> = (0..8).map(|y| index(0, y)).collect();
    assert_eq!(column0, [0, 2, 8, 10, 32, 34, 40, 42]);
    assert_eq!(index(7, 7), 63);
    assert_eq!(index(8, 0), 64); // the second tile of the first tile row
    assert_eq!(index(0, 8), 128); // the first tile of the second row
    assert_eq!(index(15, 15), 255);
}

#[test]
fn encoding_then_decoding_keeps_what_each_format_can_hold() {
    let texels: Vec<Rgba8> = (0..64u32)
        .map(|k| {
            [
                (k * 4) as u8,
                (255 - k * 4) as u8,
                (k * 7) as u8,
                (k * 3) as u8,
            ]
        })
        .collect();
    for format in TextureFormat::ALL {
        let bytes = encode(format, 8, 8, &texels);
        assert_eq!(bytes.len(), format.image_bytes(8, 8), "{}", format.name());
        let decoded = decode(format, 8, 8, &bytes);
        if matches!(format, TextureFormat::Etc1 | TextureFormat::Etc1a4) {
            // Lossy: a smooth image comes back within a few steps of each channel, and the
            // alpha nibble exactly.
            let smooth: Vec<Rgba8> = (0..64u32)
                .map(|k| {
                    [
                        (4 * (k % 8)) as u8,
                        100 + (4 * (k / 8)) as u8,
                        128,
                        (k * 4) as u8,
                    ]
                })
                .collect();
            let decoded = decode(format, 8, 8, &encode(format, 8, 8, &smooth));
            for (a, b) in decoded.iter().zip(&smooth) {
                for c in 0..3 {
                    assert!(a[c].abs_diff(b[c]) <= 12, "{}: {a:?} {b:?}", format.name());
                }
                let alpha = if format == TextureFormat::Etc1a4 {
                    b[3] >> 4
                } else {
                    15
                };
                assert_eq!(a[3], alpha * 17);
            }
            continue;
        }
        // Encoding what was decoded gives the same bytes: the decoder expands exactly what
        // the layout stores.
        assert_eq!(encode(format, 8, 8, &decoded), bytes, "{}", format.name());
    }
}

/// A unit sampling `levels` (each `(width, height, texels by memory row)`).
fn unit(levels: Vec<(u32, u32, Vec<Rgba8>)>, wrap: Wrap, linear: bool) -> BoundUnit {
    let (width, height) = (levels[0].0, levels[0].1);
    let max_level = levels.len() as u32 - 1;
    let faces = vec![
        levels
            .into_iter()
            .map(|(width, height, texels)| Level {
                width,
                height,
                texels,
            })
            .collect(),
    ];
    BoundUnit {
        config: UnitConfig {
            kind: TextureKind::Texture2d,
            width,
            height,
            format: TextureFormat::Rgba8,
            addresses: [0; 6],
            wrap_s: wrap,
            wrap_t: wrap,
            mag_linear: linear,
            min_linear: linear,
            mip_linear: false,
            lod_bias: 0.0,
            min_level: 0,
            max_level,
            border: [1, 2, 3, 4],
            shadow: ShadowLookup::default(),
        },
        texture: Arc::new(DecodedTexture { faces }),
    }
}

/// The textured path's samplers, compiled per filter and wrap pair (`flat_sampler`), give
/// what the general sampler gives at level 0 (`BoundUnit::sample(0, s, t, 0.0)`, the rule
/// docs/gpu-texturing.md states): for every filter and pair of wrap modes, on a texture whose
/// texels all differ, at coordinates inside, on texel centres and edges, outside on every side,
/// far outside, and not finite; and a unit with mipmaps, or a cube map, gets none.
#[test]
fn the_textured_paths_samplers_sample_as_the_general_sampler() {
    let texels: Vec<Rgba8> = (0..12 * 4)
        .map(|k: u32| {
            [
                (k * 5) as u8,
                (255 - k * 3) as u8,
                (k * k) as u8,
                (100 + k) as u8,
            ]
        })
        .collect();
    let wraps = [
        Wrap::ClampToEdge,
        Wrap::ClampToBorder,
        Wrap::Repeat,
        Wrap::MirroredRepeat,
    ];
    let mut coordinates = vec![
        0.0,
        1.0,
        0.5,
        -0.0,
        1.0 / 24.0,
        1.0 / 8.0,
        0.999_999,
        1.000_001,
        -1e-7,
        -0.3,
        1.7,
        -2.26,
        3.01,
        1e9,
        -1e9,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    coordinates.extend((0..97).map(|k| k as f32 / 41.0 - 0.8));
    for linear in [false, true] {
        for wrap_s in wraps {
            for wrap_t in wraps {
                let mut bound = unit(vec![(12, 4, texels.clone())], wrap_s, linear);
                bound.config.wrap_t = wrap_t;
                let sample = flat_sampler(&bound).expect("a 2D unit with level 0 alone");
                for &s in &coordinates {
                    for &t in &coordinates {
                        assert_eq!(
                            sample(&bound, s, t),
                            bound.sample(0, s, t, 0.0),
                            "linear {linear}, wraps {wrap_s:?} {wrap_t:?}, at ({s}, {t})"
                        );
                    }
                }
            }
        }
    }
    let mipmapped = unit(vec![ramp(), (4, 4, vec![[9; 4]; 16])], Wrap::Repeat, true);
    assert!(flat_sampler(&mipmapped).is_none());
    let mut cube = unit(vec![ramp()], Wrap::Repeat, true);
    cube.config.kind = TextureKind::CubeMap;
    assert!(flat_sampler(&cube).is_none());
}

/// An 8×8 level whose texel (x, row) is (32x, 32·row, 0, 255).
fn ramp() -> (u32, u32, Vec<Rgba8>) {
    let texels = (0..64)
        .map(|k| [(32 * (k % 8)) as u8, (32 * (k / 8)) as u8, 0, 255])
        .collect();
    (8, 8, texels)
}

#[test]
fn each_wrap_mode_maps_coordinates_outside_the_texture() {
    // s in texels: 8.5 is one past the right edge, −0.5 one before the left.
    let sample = |wrap: Wrap, s: f32| unit(vec![ramp()], wrap, false).sample(0, s / 8.0, 0.99, 0.0);
    let column = |c: u8| [32 * c, 0, 0, 255];
    assert_eq!(sample(Wrap::Repeat, 8.5), column(0));
    assert_eq!(sample(Wrap::Repeat, -0.5), column(7));
    assert_eq!(sample(Wrap::MirroredRepeat, 8.5), column(7));
    assert_eq!(sample(Wrap::MirroredRepeat, 9.5), column(6));
    assert_eq!(sample(Wrap::MirroredRepeat, -0.5), column(0));
    assert_eq!(sample(Wrap::ClampToEdge, 12.5), column(7));
    assert_eq!(sample(Wrap::ClampToEdge, -3.5), column(0));
    assert_eq!(sample(Wrap::ClampToBorder, 8.5), [1, 2, 3, 4]);
    assert_eq!(sample(Wrap::ClampToBorder, -0.5), [1, 2, 3, 4]);
    assert_eq!(sample(Wrap::ClampToBorder, 7.5), column(7));
}

#[test]
fn t_counts_up_from_the_last_memory_row() {
    let bound = unit(vec![ramp()], Wrap::Repeat, false);
    // t just below 1 is memory row 0; t just above 0 is row 7.
    assert_eq!(bound.sample(0, 0.01, 0.99, 0.0), [0, 0, 0, 255]);
    assert_eq!(bound.sample(0, 0.01, 0.01, 0.0), [0, 224, 0, 255]);
    assert_eq!(bound.sample(0, 0.01, 0.3, 0.0), [0, 32 * 5, 0, 255]); // row 7 − ⌊2.4⌋
}

#[test]
fn linear_filtering_weights_the_four_nearest_texels() {
    let bound = unit(vec![ramp()], Wrap::ClampToEdge, true);
    let at = |x: f32, row: f32| bound.sample(0, x / 8.0, 1.0 - row / 8.0, 0.0);
    // At a texel centre, the texel.
    assert_eq!(at(2.5, 3.5), [64, 96, 0, 255]);
    // Halfway between columns 2 and 3: (64 + 96) / 2.
    assert_eq!(at(3.0, 3.5), [80, 96, 0, 255]);
    // A quarter of the way from column 2 to 3, and from row 3 to 4.
    assert_eq!(at(2.75, 3.75), [72, 104, 0, 255]);
    // Clamped at the edge: the two taps left of the first centre are column 0.
    assert_eq!(at(0.25, 0.5), [0, 0, 0, 255]);
    // Nearest takes the texel containing the point.
    let nearest = unit(vec![ramp()], Wrap::ClampToEdge, false);
    assert_eq!(
        nearest.sample(0, 2.99 / 8.0, 1.0 - 3.5 / 8.0, 0.0),
        [64, 96, 0, 255]
    );
}

fn solid(size: u32, color: Rgba8) -> (u32, u32, Vec<Rgba8>) {
    (size, size, vec![color; (size * size) as usize])
}

#[test]
fn the_level_of_detail_picks_mipmaps_with_bias_and_clamps() {
    const RED: Rgba8 = [255, 0, 0, 255];
    const GREEN: Rgba8 = [0, 255, 0, 255];
    const BLUE: Rgba8 = [0, 0, 255, 255];
    let levels = || vec![solid(32, RED), solid(16, GREEN), solid(8, BLUE)];
    let mut bound = unit(levels(), Wrap::Repeat, false);
    let at = |bound: &BoundUnit, lod: f32| bound.sample(0, 0.3, 0.3, lod);
    assert_eq!(at(&bound, -1.0), RED); // magnified
    assert_eq!(at(&bound, 0.4), RED); // nearest level: round half down
    assert_eq!(at(&bound, 0.6), GREEN);
    assert_eq!(at(&bound, 1.5), GREEN);
    assert_eq!(at(&bound, 1.6), BLUE);
    assert_eq!(at(&bound, 7.0), BLUE); // clamped to the last level
    bound.config.lod_bias = 1.0;
    assert_eq!(at(&bound, 0.0), GREEN);
    bound.config.lod_bias = 0.0;
    bound.config.min_level = 2;
    assert_eq!(at(&bound, -3.0), BLUE);
    bound.config.min_level = 0;
    bound.config.max_level = 1;
    assert_eq!(at(&bound, 5.0), GREEN);
    // Linear between levels: halfway gives the mean.
    let mut bound = unit(levels(), Wrap::Repeat, false);
    bound.config.mip_linear = true;
    assert_eq!(at(&bound, 0.5), [128, 128, 0, 255]);
    assert_eq!(at(&bound, 1.25), [0, 191, 64, 255]);
    // The level of detail: log2 of the longer step in level-0 texels (32 wide).
    let lod = bound.lod((0.5, 0.5), (0.5 + 4.0 / 32.0, 0.5), (0.5, 0.5 + 1.0 / 32.0));
    assert_eq!(lod, 2.0);
}

#[test]
fn cube_maps_sample_the_face_of_the_major_axis() {
    let colors: [Rgba8; 6] = std::array::from_fn(|k| [40 * k as u8, 0, 0, 255]);
    let faces = colors
        .iter()
        .map(|&c| {
            let (width, height, texels) = solid(8, c);
            vec![Level {
                width,
                height,
                texels,
            }]
        })
        .collect();
    let mut bound = unit(vec![solid(8, [0; 4])], Wrap::ClampToEdge, false);
    bound.config.kind = TextureKind::CubeMap;
    bound.texture = Arc::new(DecodedTexture { faces });
    let directions = [
        [1.0, 0.2, -0.3],
        [-1.0, 0.2, -0.3],
        [0.2, 1.0, -0.3],
        [0.2, -1.0, -0.3],
        [0.2, -0.3, 1.0],
        [0.2, -0.3, -1.0],
    ];
    for (k, direction) in directions.into_iter().enumerate() {
        let (face, s, t) = bound.config.project(direction, None);
        assert_eq!(face, k);
        assert!((0.0..=1.0).contains(&s) && (0.0..=1.0).contains(&t));
        assert_eq!(bound.sample(face, s, t, 0.0), colors[k]);
    }
    // On +Z the face's s follows x and t follows −y: (x, y) = (0.5, −0.5) at z = 1 is
    // (0.75, 0.75).
    let (_, s, t) = bound.config.project([0.5, -0.5, 1.0], None);
    assert_eq!((s, t), (0.75, 0.75));
}

/// A cube face stored as the PICA's texture converters store it (devkitPro's tex3ds flips
/// every face vertically: the picture's top row is the face's last memory row) shows its top
/// upwards on every wall, and the +Y face's top towards −Z, as OpenGL's faces do. The skybox
/// of a real program came out mirrored top to bottom before this held.
#[test]
fn cube_faces_are_stored_upside_down() {
    const TOP: Rgba8 = [255, 0, 0, 255];
    const BOTTOM: Rgba8 = [0, 0, 255, 255];
    // 8 × 8 texels by memory row: rows 0-3 are the picture's bottom half, rows 4-7 its top.
    let face = || Level {
        width: 8,
        height: 8,
        texels: (0..64)
            .map(|k| if k / 8 < 4 { BOTTOM } else { TOP })
            .collect(),
    };
    let mut bound = unit(vec![solid(8, [0; 4])], Wrap::ClampToEdge, false);
    bound.config.kind = TextureKind::CubeMap;
    bound.texture = Arc::new(DecodedTexture {
        faces: (0..6).map(|_| vec![face()]).collect(),
    });
    let at = |direction: [f32; 3]| {
        let (face, s, t) = bound.config.project(direction, None);
        bound.sample(face, s, t, 0.0)
    };
    // The four walls: up is the top of the picture.
    for wall in [
        [1.0, 0.0, 0.0],
        [-1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, -1.0],
    ] {
        let [x, _, z] = wall;
        assert_eq!(at([x, 0.6, z]), TOP, "wall {wall:?}, looking up");
        assert_eq!(at([x, -0.6, z]), BOTTOM, "wall {wall:?}, looking down");
    }
    // The ceiling's top is towards −Z, the floor's towards +Z (OpenGL's faces).
    assert_eq!(at([0.0, 1.0, -0.6]), TOP);
    assert_eq!(at([0.0, 1.0, 0.6]), BOTTOM);
    assert_eq!(at([0.0, -1.0, 0.6]), TOP);
    assert_eq!(at([0.0, -1.0, -0.6]), BOTTOM);
}

// --- Fragment lighting -------------------------------------------------------------------

/// Registers of lighting with one light (index 0) and the given words.
struct LightRegs(RegisterFile);

impl LightRegs {
    fn new() -> LightRegs {
        let mut regs = RegisterFile::default();
        regs.set(id::LIGHTING_ENABLE, 1);
        regs.set(id::LIGHTING_NUM_LIGHTS, 0);
        // Configuration 8 (every table); every table but D0 disabled.
        regs.set(id::LIGHTING_CONFIG0, 8 << 4);
        regs.set(id::LIGHTING_CONFIG1, 0xFF << 8 | 0x7E << 16 | 0xFF << 24);
        LightRegs(regs)
    }

    /// Light 0: colours as 8-bit values (B bits 0-7, G 10-17, R 20-27).
    fn colors(&mut self, specular0: u32, diffuse: u32, ambient: u32) {
        let word = |v: u32| v << 20 | v << 10 | v;
        self.0.set(0x140, word(specular0));
        self.0.set(0x142, word(diffuse));
        self.0.set(0x143, word(ambient));
    }

    /// Light 0's position or direction as float16s (1.5.10).
    fn position(&mut self, [x, y, z]: [u16; 3], directional: bool) {
        self.0.set(0x144, (y as u32) << 16 | x as u32);
        self.0.set(0x145, z as u32);
        self.0.set(0x149, u32::from(directional));
    }

    fn lighting(&self, luts: &LightingLuts) -> Lighting {
        Lighting::configure(&self.0, luts).expect("lighting is on")
    }
}

/// float16 bits of small exact values.
const F16_ONE: u16 = 0x3C00;
const F16_ZERO: u16 = 0;

#[test]
fn a_light_straight_above_a_plane_reads_the_tables_entry_for_one() {
    // D0 on N·H; entries hand-made: entry 255 = value 0x600 (0.375), difference +0x100
    // (0.125): the entry for 1.0 is their sum, 0.5; specular 0 = 255 gives 0.5 · 255.
    let mut luts = LightingLuts::default();
    luts.tables[table::D0][255] = 0x600 | 0x100 << 12;
    luts.tables[table::D0][254] = 0xFFF;
    let mut regs = LightRegs::new();
    regs.colors(255, 0, 0);
    regs.position([F16_ZERO, F16_ZERO, F16_ONE], true);
    let lighting = regs.lighting(&luts);
    // The identity quaternion: the normal is +z; the eye straight above too.
    let (primary, secondary) =
        lighting.shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 5.0], [0; 4], [255; 4]);
    assert_eq!(secondary, [128, 128, 128, 255]); // 0.5 · 255 = 127.5, rounded
    assert_eq!(primary, [0, 0, 0, 255]);
    // Signed indexing (abs disabled for D0: bit 1): 1.0 clamps to index 127 + its fraction.
    let mut regs = LightRegs::new();
    regs.colors(255, 0, 0);
    regs.position([F16_ZERO, F16_ZERO, F16_ONE], true);
    regs.0.set(id::LIGHTING_LUTINPUT_ABS, 1 << 1);
    luts.tables[table::D0][127] = 0x400; // 0.25, no difference
    let (_, secondary) =
        regs.lighting(&luts)
            .shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 5.0], [0; 4], [255; 4]);
    assert_eq!(secondary[0], 64); // 0.25 · 255 = 63.75
}

/// Shadow attenuation (docs/gpu-shadows.md, "Attenuation"): the shadow texel, per channel
/// over 255 (or one minus it), multiplies each light's diffuse term (primary), its specular
/// terms (secondary) and the Fresnel alpha, each by its own bit; a light whose shadow-disable
/// bit is set is not attenuated; the light's ambient never is.
#[test]
fn shadows_attenuate_diffuse_specular_and_alpha_by_their_bits() {
    // D0 = 1 everywhere (value 0xFFF, no difference): the specular is specular 0's colour.
    let mut luts = LightingLuts::default();
    luts.tables[table::D0] = [0xFFF; 256];
    let setup = |config0_bits: u32, disable_light_0: bool| {
        let mut regs = LightRegs::new();
        // Diffuse 200 and ambient 20 on the light, specular 0 = 100; straight above.
        regs.colors(100, 200, 20);
        regs.position([F16_ZERO, F16_ZERO, F16_ONE], true);
        let config0 = regs.0.get(id::LIGHTING_CONFIG0);
        regs.0.set(id::LIGHTING_CONFIG0, config0 | config0_bits);
        let config1 = regs.0.get(id::LIGHTING_CONFIG1);
        regs.0
            .set(id::LIGHTING_CONFIG1, config1 | u32::from(disable_light_0));
        regs.lighting(&luts)
    };
    let shade = |lighting: &Lighting, shadow: Rgba8| {
        lighting.shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 5.0], [0; 4], shadow)
    };
    // The shadow texel: R 51 (0.2), G 102 (0.4), B 255, A 128.
    let texel = [51, 102, 255, 128];
    // Off (bit 0 clear): primary 200 + 20, secondary 100, whatever the texel.
    let off = setup(1 << 16 | 1 << 17, false);
    assert_eq!(
        shade(&off, texel),
        ([220, 220, 220, 255], [100, 100, 100, 255])
    );
    // Primary only: diffuse · 0.2 + ambient = 40 + 20; · 0.4 = 80 + 20; · 1 = 200 + 20.
    let primary = setup(1 | 1 << 16, false);
    assert_eq!(shade(&primary, texel).0, [60, 100, 220, 255]);
    assert_eq!(shade(&primary, texel).1, [100, 100, 100, 255]);
    // Secondary only: 100 · 0.2 = 20, · 0.4 = 40, · 1 = 100.
    let secondary = setup(1 | 1 << 17, false);
    assert_eq!(shade(&secondary, texel).1, [20, 40, 100, 255]);
    // Inverted: 1 − 0.2 = 0.8 → 160 + 20, 1 − 0.4 → 120 + 20, 1 − 1 → 0 + 20.
    let inverted = setup(1 | 1 << 16 | 1 << 18, false);
    assert_eq!(shade(&inverted, texel).0, [180, 140, 20, 255]);
    // The light's shadow-disable bit: no attenuation.
    let disabled = setup(1 | 1 << 16 | 1 << 17, true);
    assert_eq!(
        shade(&disabled, texel),
        ([220, 220, 220, 255], [100, 100, 100, 255])
    );
    // Alpha: the Fresnel alpha (off here: 1) times the texel's alpha, 128/255, into the
    // primary alpha (Fresnel selector bit 2).
    let alpha = setup(1 | 1 << 19 | 1 << 2, false);
    assert_eq!(shade(&alpha, texel).0[3], 128);
    // The shadow unit is LIGHTING_CONFIG0 bits 24-25.
    assert_eq!(setup(1 | 2 << 24, false).shadow.unwrap().unit, 2);
}

/// Unit vectors of the analytic scene: the plane's normal +z, the eye 30° towards −x, the
/// light 53.13° towards +x (cos = 0.6), the spotlight pointing so that −L·P = 0.48.
fn analytic_inputs() -> [(u32, f64); 6] {
    let n = [0.0, 0.0, 1.0f64];
    let v = [-0.5, 0.0, 3f64.sqrt() / 2.0];
    let l = [0.8, 0.0, 0.6f64];
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let sum = [l[0] + v[0], l[1] + v[1], l[2] + v[2]];
    let length = dot(sum, sum).sqrt();
    let h = sum.map(|c| c / length);
    let minus_p = [0.0, 0.6, 0.8];
    // cos φ: H's projection on the plane is along +x, the tangent.
    [
        (0, dot(n, h)),
        (1, dot(v, h)),
        (2, dot(n, v)),
        (3, dot(l, n)),
        (4, dot(l, minus_p)),
        (5, 1.0),
    ]
}

#[test]
fn each_table_input_reads_its_dot_product() {
    // D0 is the identity table, so the specular colour is the input itself.
    let luts = {
        let mut luts = LightingLuts::default();
        luts.tables[table::D0] = lut_from_fn(|x| x, false);
        luts
    };
    for (select, expected) in analytic_inputs() {
        let mut regs = LightRegs::new();
        regs.colors(255, 0, 0);
        // Directional light (0.8, 0, 0.6): float16 0.8 = 0x3A66, 0.6 = 0x38CD (nearest).
        regs.position([0x3A66, F16_ZERO, 0x38CD], true);
        // Spot direction stored negated: (0, 0.6, 0.8) in fixed 1.1.11.
        regs.0.set(0x146, ((0.6f64 * 2048.0).round() as u32) << 16);
        regs.0.set(0x147, (0.8f64 * 2048.0).round() as u32);
        regs.0.set(id::LIGHTING_LUTINPUT_SELECT, select);
        let lighting = regs.lighting(&luts);
        let view = [-0.5 * 4.0, 0.0, 3f32.sqrt() / 2.0 * 4.0];
        let (_, secondary) = lighting.shade([0.0, 0.0, 0.0, 1.0], view, [0; 4], [255; 4]);
        // The registers hold float16 and 1.1.11 approximations; the result is the rounded
        // 8-bit value of the exact dot product.
        let expected8 = (expected * 255.0).round() as u8;
        assert!(
            secondary[0].abs_diff(expected8) <= 1,
            "input {select}: {} for {expected}",
            secondary[0]
        );
        assert_eq!(secondary[0], secondary[2]);
    }
}

#[test]
fn table_scales_and_the_absolute_value_apply() {
    let mut luts = LightingLuts::default();
    luts.tables[table::D0] = lut_from_fn(|x| x / 4.0, false);
    let mut regs = LightRegs::new();
    regs.colors(255, 0, 0);
    regs.position([F16_ZERO, F16_ZERO, F16_ONE], true);
    regs.0.set(id::LIGHTING_LUTINPUT_SCALE, 2); // 4×
    let (_, secondary) =
        regs.lighting(&luts)
            .shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0; 4], [255; 4]);
    assert_eq!(secondary[0], 255); // (1/4) · 4
    // The light below the plane, N·H = −1: abs mode reads |−1|; signed mode indexes −128.
    luts.tables[table::D0] = lut_from_fn(|x| (x + 1.0) / 4.0, true);
    let entry = lut_entry(0.25, 0.0);
    luts.tables[table::D0][128] = entry;
    let mut regs = LightRegs::new();
    regs.colors(255, 0, 0);
    regs.position([F16_ZERO, F16_ZERO, 0xBC00], true); // (0, 0, −1)
    regs.0.set(id::LIGHTING_LUTINPUT_SELECT, 3); // L·N = −1
    regs.0.set(id::LIGHTING_LUTINPUT_ABS, 1 << 1);
    let (_, secondary) =
        regs.lighting(&luts)
            .shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0; 4], [255; 4]);
    assert_eq!(secondary[0], 64); // entry 128 (index −128): 0.25
}

#[test]
fn diffuse_ambient_two_sided_and_clamped_highlights() {
    let luts = LightingLuts::default();
    let mut regs = LightRegs::new();
    regs.colors(0, 200, 20);
    regs.0.set(id::LIGHTING_AMBIENT, 10 << 20 | 10 << 10 | 10);
    regs.position([F16_ZERO, F16_ZERO, F16_ONE], true);
    let (primary, _) =
        regs.lighting(&luts)
            .shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0; 4], [255; 4]);
    assert_eq!(primary, [230, 230, 230, 255]); // 10 + 20 + 200 · 1
    // From below: one-sided diffuse is 0, two-sided |L·N|.
    regs.position([F16_ZERO, F16_ZERO, 0xBC00], true);
    let (primary, _) =
        regs.lighting(&luts)
            .shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0; 4], [255; 4]);
    assert_eq!(primary, [30, 30, 30, 255]);
    regs.0.set(0x149, 1 | 2);
    let (primary, _) =
        regs.lighting(&luts)
            .shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0; 4], [255; 4]);
    assert_eq!(primary, [230, 230, 230, 255]);
    // Specular from below: D0 disabled reads 1; clamping highlights removes it.
    let mut regs = LightRegs::new();
    regs.colors(100, 0, 0);
    regs.0
        .set(id::LIGHTING_CONFIG1, 0x7F << 16 | 0xFF << 8 | 0xFF << 24);
    regs.position([F16_ZERO, F16_ZERO, 0xBC00], true);
    let shade = |regs: &LightRegs| {
        regs.lighting(&luts)
            .shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0; 4], [255; 4])
            .1
    };
    assert_eq!(shade(&regs), [100, 100, 100, 255]);
    regs.0.set(id::LIGHTING_CONFIG0, 8 << 4 | 1 << 27);
    assert_eq!(shade(&regs), [0, 0, 0, 255]);
}

#[test]
fn distance_attenuation_spotlights_and_fresnel() {
    // A positional light 2 above the fragment (view vector (0, 0, 1) from the fragment to an
    // eye 1 above): distance 2 − 1 = 1 ... the light at (0, 0, 1) in view space, the
    // fragment at (0, 0, −1): light + view = (0, 0, 2), distance 2.
    let mut luts = LightingLuts::default();
    luts.tables[table::DA] = lut_from_fn(|x| 1.0 - x, false);
    let mut regs = LightRegs::new();
    regs.colors(0, 255, 0);
    regs.position([F16_ZERO, F16_ZERO, F16_ONE], false);
    // Attenuation enabled for light 0; bias 0, scale 0.25 (float20 1.7.12: 0x3D000).
    regs.0
        .set(id::LIGHTING_CONFIG1, 0xFF << 8 | 0x7F << 16 | 0xFE << 24);
    regs.0.set(0x14B, 0x3D000);
    let (primary, _) =
        regs.lighting(&luts)
            .shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0; 4], [255; 4]);
    // Input 0.25 · 2 = 0.5: attenuation 1 − 0.5; diffuse 255 · 1 · 0.5.
    assert_eq!(primary[0], 128);
    // The spotlight table (light 0: slot 8) on −L·P, the spot pointing straight down at the
    // fragment: −L·P = 1; its table halves.
    luts.tables[table::SP] = lut_from_fn(|x| x / 2.0, false);
    let mut regs = LightRegs::new();
    regs.colors(0, 255, 0);
    regs.position([F16_ZERO, F16_ZERO, F16_ONE], true);
    regs.0
        .set(id::LIGHTING_CONFIG1, 0xFE << 8 | 0x7F << 16 | 0xFF << 24);
    regs.0.set(0x147, 2048); // stored −P = (0, 0, 1)
    regs.0.set(id::LIGHTING_LUTINPUT_SELECT, 4 << 8);
    let (primary, _) =
        regs.lighting(&luts)
            .shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0; 4], [255; 4]);
    assert_eq!(primary[0], 128);
    // Fresnel on N·V into both alphas.
    luts.tables[table::FR] = lut_from_fn(|x| x * 0.2, false);
    let mut regs = LightRegs::new();
    regs.position([F16_ZERO, F16_ZERO, F16_ONE], true);
    regs.0.set(id::LIGHTING_CONFIG0, 8 << 4 | 3 << 2);
    regs.0
        .set(id::LIGHTING_CONFIG1, 0xFF << 8 | 0x77 << 16 | 0xFF << 24);
    regs.0.set(id::LIGHTING_LUTINPUT_SELECT, 2 << 12);
    let (primary, secondary) =
        regs.lighting(&luts)
            .shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0; 4], [255; 4]);
    assert_eq!((primary[3], secondary[3]), (51, 51));
}

#[test]
fn bump_maps_perturb_the_normal() {
    let luts = LightingLuts::default();
    let mut regs = LightRegs::new();
    regs.colors(0, 255, 0);
    regs.position([F16_ZERO, F16_ZERO, F16_ONE], true);
    // Normal map from unit 0, z reconstructed.
    regs.0.set(id::LIGHTING_CONFIG0, 8 << 4 | 1 << 28);
    let lighting = regs.lighting(&luts);
    let diffuse = |texel: Rgba8| {
        lighting
            .shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0], texel, [255; 4])
            .0[0]
    };
    // (x, y) = (0, 0) up to 1/255: the normal stays +z.
    assert_eq!(diffuse([128, 128, 0, 255]), 255);
    // x = 0.6 (texel 204 = 0.6 · 127.5 + 127.5): z = 0.8, so L·N = 0.8.
    assert_eq!(diffuse([204, 128, 0, 255]), 204);
    // Without reconstruction the texel's own z counts.
    regs.0.set(id::LIGHTING_CONFIG0, 8 << 4 | 1 << 28 | 1 << 30);
    let lighting = regs.lighting(&luts);
    let d = lighting.shade(
        [0.0, 0.0, 0.0, 1.0],
        [0.0, 0.0, 1.0],
        [128, 128, 191, 255],
        [255; 4],
    );
    assert_eq!(d.0[0], 127); // z = 191/127.5 − 1 = 0.498
}

#[test]
fn the_quaternion_rotates_the_normal() {
    // 90° about +x turns +z into −y; a light along −y then lights fully.
    let luts = LightingLuts::default();
    let mut regs = LightRegs::new();
    regs.colors(0, 255, 0);
    regs.position([F16_ZERO, 0xBC00, F16_ZERO], true);
    let lighting = regs.lighting(&luts);
    let half = std::f32::consts::FRAC_1_SQRT_2;
    // Not normalised on input: the unit normalises it.
    let (primary, _) = lighting.shade(
        [3.0 * half, 0.0, 0.0, 3.0 * half],
        [0.0, 0.0, 1.0],
        [0; 4],
        [255; 4],
    );
    assert_eq!(primary[0], 255);
    let (primary, _) = lighting.shade([0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [0; 4], [255; 4]);
    assert_eq!(primary[0], 0);
}

#[test]
fn lookup_tables_arrive_through_the_data_fifo() {
    // Index register: table 1 (D1), entry 254; two writes land at 254 and 255, the third
    // wraps to 0.
    let mut gpu = picajit::gpu::Gpu::new(Default::default());
    gpu.write(id::LIGHTING_LUT_INDEX, 1 << 8 | 254, 0xF)
        .unwrap();
    gpu.write(id::LIGHTING_LUT_DATA0, 0x11, 0xF).unwrap();
    gpu.write(id::LIGHTING_LUT_DATA0 + 5, 0x22, 0xF).unwrap();
    gpu.write(id::LIGHTING_LUT_DATA0 + 7, 0x1FF_FFFF, 0xF)
        .unwrap();
    let d1 = &gpu.tables.lighting.tables[table::D1];
    assert_eq!((d1[254], d1[255], d1[0]), (0x11, 0x22, 0xFF_FFFF));
    assert_eq!(gpu.regs.get(id::LIGHTING_LUT_INDEX), 1 << 8 | 1);
}

// --- Rendered images ----------------------------------------------------------------------

/// Clip-space positions and texture coordinates in, as they are out (the format scene's
/// shader).
const TEXTURED: &str = include_str!("../corpus/scenes/shaders/pass-texcoord/0-main.v.pica");

const SIZE: u32 = 16;
const COLOR: u32 = 0x1800_0000;
const DEPTH: u32 = 0x1804_0000;

/// A scene drawing with the vertex shader `source` on the whole SIZE × SIZE target, cleared
/// to black, culling nothing.
fn target_scene(source: &str) -> SceneBuilder {
    let files = [SourceFile {
        name: "vs.pica".into(),
        text: source.into(),
    }];
    let program = assemble(&files, AsmOptions::default()).unwrap().shbin;
    let mut scene = SceneBuilder::new();
    scene.program(&program, 0, None);
    scene.render_target(
        Some((COLOR, ColorFormat::Rgba8)),
        Some((DEPTH, DepthFormat::D24S8)),
        (SIZE, SIZE),
    );
    scene.viewport(0, 0, SIZE, SIZE);
    scene.depth_map(true, -1.0, 0.0);
    scene.cull(0);
    scene.memory_fill(COLOR, SIZE * SIZE * 4, 0xFF, 32);
    scene
}

/// A full-target quad with texcoords (0, 0) at the bottom left to (`reach`, `reach`), unit 0
/// bound to `texture` and then `adjust`ed, the combiners passing texture 0 on.
fn quad_scene(
    texture: &TextureSetup<'_>,
    reach: f32,
    adjust: impl FnOnce(&mut SceneBuilder),
) -> picajit::gpu::front::trace::Trace {
    let mut scene = target_scene(TEXTURED);
    scene.texture(0, texture);
    adjust(&mut scene);
    scene.texture_units(1, false);
    scene.combiner(0, &CombinerStage::new(0, [source::TEXTURE0; 3]));
    for k in 1..6 {
        scene.combiner(k, &CombinerStage::PASS_THROUGH);
    }
    scene.blend((0, 0), [1, 0, 1, 0], [0; 4]);
    scene.depth_test(false, 1, 0x1F);
    let mut data = Vec::new();
    for (x, y) in [(-1.0f32, -1.0f32), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)] {
        let tex = [(x + 1.0) / 2.0 * reach, (y + 1.0) / 2.0 * reach, 0.0, 0.0];
        data.extend(
            [x, y, -0.5, 1.0]
                .iter()
                .chain(&tex)
                .flat_map(|f| f.to_le_bytes()),
        );
    }
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 4),
        Attribute::new(1, ComponentType::Float, 4),
    ]);
    scene.buffer(&data, 32, &[Element::Attribute(0), Element::Attribute(1)]);
    scene.draw_arrays(Topology::Strip, 0, 4);
    scene.finish()
}

/// [`quad_scene`] rendered on one and on two threads (the same image).
fn textured_quad(texture: &TextureSetup<'_>, reach: f32) -> Image {
    let trace = quad_scene(texture, reach, |_| {});
    let one = color_image(&render_trace(&trace, EngineKind::Interpreter, 1));
    let two = color_image(&render_trace(&trace, EngineKind::Interpreter, 2));
    assert_eq!(one.pixels, two.pixels, "threads change the image");
    one
}

/// The colour at rasterizer pixel (x, y) (y up).
fn at(image: &Image, x: u32, y: u32) -> Rgba8 {
    image.pixels[((image.height - 1 - y) * image.width + x) as usize]
}

fn setup(format: TextureFormat, bytes: &[Vec<u8>], linear: bool, wrap: Wrap) -> TextureSetup<'_> {
    TextureSetup {
        kind: TextureKind::Texture2d,
        format,
        size: (8, 8),
        faces: bytes,
        max_level: 0,
        wrap: (wrap, wrap),
        linear: (linear, linear, false),
        lod: (0.0, 0),
        border: [9, 9, 9, 255],
    }
}

#[test]
fn a_nearest_sampled_texture_covers_two_by_two_pixels_a_texel() {
    // Memory texel (column, row) = (32·column, 32·row, 0): 8×8 texels over 16×16 pixels.
    // Pixel (x, y) (y up) samples s = (x + 0.5)/16, t = (y + 0.5)/16: column ⌊x/2⌋, and
    // memory row 7 − ⌊y/2⌋.
    let (_, _, texels) = ramp();
    let bytes = vec![encode(TextureFormat::Rgba8, 8, 8, &texels)];
    let image = textured_quad(
        &setup(TextureFormat::Rgba8, &bytes, false, Wrap::Repeat),
        1.0,
    );
    for y in 0..SIZE {
        for x in 0..SIZE {
            let expected = [32 * (x / 2) as u8, 32 * (7 - y / 2) as u8, 0, 255];
            assert_eq!(at(&image, x, y), expected, "pixel ({x}, {y})");
        }
    }
}

#[test]
fn a_linear_sampled_texture_blends_neighbouring_texels() {
    // Along x: s·8 − 0.5 = x/2 − 0.25 at pixel x; even x = 2k weighs column k − 1 by 1/4 and
    // k by 3/4 (32k − 8), odd x = 2k + 1 weighs k by 3/4 and k + 1 by 1/4 (32k + 8); at the
    // edges clamping repeats the edge column.
    let (_, _, texels) = ramp();
    let bytes = vec![encode(TextureFormat::Rgba8, 8, 8, &texels)];
    let image = textured_quad(
        &setup(TextureFormat::Rgba8, &bytes, true, Wrap::ClampToEdge),
        1.0,
    );
    let along = |x: u32| -> u8 {
        let k = (x / 2) as i32;
        let value = if x.is_multiple_of(2) {
            32 * k - 8
        } else {
            32 * k + 8
        };
        value.clamp(0, 224) as u8
    };
    for x in 0..SIZE {
        assert_eq!(at(&image, x, 8)[0], along(x), "column {x}");
    }
    // Rows: memory row 7 − (y/2 − 0.25) likewise, counted down.
    assert_eq!(at(&image, 0, 0)[1], 224); // clamped at the last row
    assert_eq!(at(&image, 0, 2)[1], 224 - 24); // 3/4 of row 6, 1/4 of row 7: 192·3/4 + 224/4
}

#[test]
fn clamp_to_border_shows_the_border_colour_past_the_texture() {
    // Texcoords reach 2: the right and top halves are border.
    let (_, _, texels) = ramp();
    let bytes = vec![encode(TextureFormat::Rgba8, 8, 8, &texels)];
    let image = textured_quad(
        &setup(TextureFormat::Rgba8, &bytes, false, Wrap::ClampToBorder),
        2.0,
    );
    assert_eq!(at(&image, 3, 3), [32 * 3, 32 * 4, 0, 255]); // s = 3.5/8 → column 3, t row 4
    assert_eq!(at(&image, 12, 3), [9, 9, 9, 255]);
    assert_eq!(at(&image, 3, 12), [9, 9, 9, 255]);
}

#[test]
fn textures_outside_memory_or_too_large_are_errors_naming_the_unit() {
    use picajit::gpu::front::trace;
    use picajit::gpu::{Gpu, GpuConfig};
    let (_, _, texels) = ramp();
    let bytes = vec![encode(TextureFormat::Rgba8, 8, 8, &texels)];
    let texture = setup(TextureFormat::Rgba8, &bytes, false, Wrap::Repeat);
    // The same quad with unit 0's address moved below the memory regions, then with a
    // 2047-texel-wide texture.
    for (register, value, expected) in [
        (0x085u16, 0x100u32, "texture unit 0: "),
        (
            0x082,
            2047 << 16 | 8,
            "texture unit 0: a 2047x8 texture is beyond the limit of 1024",
        ),
    ] {
        let scene = quad_scene(&texture, 1.0, |scene| {
            scene.write(register, value);
        });
        let error = trace::replay(&scene, Gpu::new(GpuConfig::default()), None, |_, _| {})
            .err()
            .expect("the draw fails")
            .to_string();
        assert!(error.contains(expected), "{error}");
    }
}

/// Each unit reads its format from its own TYPE register: 0x08E, 0x096 and 0x09E (3dbrew,
/// *GPU/Internal Registers*), which are not at one offset from the units' first registers.
/// Unit 1 once read unit 2's, and a real program's RGB8 normal map on unit 1 decoded as RGBA8
/// (the bump-mapped cube of devkitPro's `normal_mapping` rendered as noise).
#[test]
fn each_unit_reads_its_own_type_register() {
    let mut regs = RegisterFile::default();
    regs.set(id::TEXUNIT_CONFIG, 0b111);
    for (dim, address) in [(0x082u16, 0x085u16), (0x092, 0x095), (0x09A, 0x09D)] {
        regs.set(dim, 8 << 16 | 8);
        regs.set(address, 0x1800_0000 >> 3);
    }
    // Unit 0 RGBA4 (4), unit 1 RGB8 (1), unit 2 I8 (7).
    regs.set(0x08E, 4);
    regs.set(0x096, 1);
    regs.set(0x09E, 7);
    let format = |unit| UnitConfig::configure(&regs, unit).unwrap().format;
    assert_eq!(format(0), TextureFormat::Rgba4);
    assert_eq!(format(1), TextureFormat::Rgb8);
    assert_eq!(format(2), TextureFormat::I8);
}

// --- The procedural texture (unit 3) -------------------------------------------------------

/// Texture coordinate set 0 runs 0 → 1 across x, set 1 runs 1 → 0.
const TWO_SETS: &str = "
.out outPos position
.out outTex0 texcoord0
.out outTex1 texcoord1
.out outColor color
.proc main
    mov outPos, v0
    mov outTex0, v1
    mov outTex1, v2
    mov outColor, v1
    end
.end
";

/// The procedural texture through the whole pipeline (docs/gpu-proctex.md): unit 3 on,
/// reading texture coordinate set `set`, u mapped by an identity table onto 16 colour entries
/// (nearest), the colour reaching the target as combiner source 3.
fn proctex_row(set: u32) -> Vec<Rgba8> {
    use picajit::gpu::fragment::proctex::{color_diffs, map_table_from_fn, table};
    let mut scene = target_scene(TWO_SETS);
    scene.texture_units_and_proctex(0, false, Some(set));
    scene.combiner(0, &CombinerStage::new(0, [source::TEXTURE3; 3]));
    for k in 1..6 {
        scene.combiner(k, &CombinerStage::PASS_THROUGH);
    }
    scene.blend((0, 0), [1, 0, 1, 0], [0; 4]);
    scene.depth_test(false, 1, 0x1F);
    let colors: [Rgba8; 256] =
        std::array::from_fn(|i| [(i * 16) as u8, 255 - (i * 16) as u8, 7, 255]);
    scene.proctex_lut(table::RGB_MAP, &map_table_from_fn(|x| x));
    scene.proctex_lut(table::COLOR, &colors.map(u32::from_le_bytes));
    scene.proctex_lut(table::COLOR_DIFF, &color_diffs(&colors));
    // u and v clamp to the edge, mapping u, nearest, width 16 from entry 0.
    scene.proctex(&[1 | 1 << 3, 0, 0, 0, 16 << 11, 0]);
    let mut data = Vec::new();
    for (x, y) in [(-1.0f32, -1.0f32), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)] {
        let u = (x + 1.0) / 2.0;
        data.extend(
            [x, y, -0.5, 1.0, u, 0.5, 0.0, 0.0, 1.0 - u, 0.5, 0.0, 0.0]
                .iter()
                .flat_map(|f| f.to_le_bytes()),
        );
    }
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 4),
        Attribute::new(1, ComponentType::Float, 4),
        Attribute::new(2, ComponentType::Float, 4),
    ]);
    scene.buffer(
        &data,
        48,
        &[
            Element::Attribute(0),
            Element::Attribute(1),
            Element::Attribute(2),
        ],
    );
    scene.draw_arrays(Topology::Strip, 0, 4);
    let image = color_image(&render_trace(&scene.finish(), EngineKind::Interpreter, 1));
    image.pixels[..SIZE as usize].to_vec()
}

/// Pixel x's centre has u = (x + 0.5)/16; the colour entry is round(u·15) (the identity table's
/// 4095ths move it by less than 0.004, and no (x + 0.5)·15/16 is within 0.03 of a half).
#[test]
fn the_procedural_texture_reads_its_coordinate_set_into_source_3() {
    let entry = |x: u32| ((x as f32 + 0.5) * 15.0 / 16.0).round() as u8;
    let color = |i: u8| [i * 16, 255 - i * 16, 7, 255];
    let set0 = proctex_row(0);
    let set1 = proctex_row(1);
    for x in 0..SIZE {
        assert_eq!(set0[x as usize], color(entry(x)), "set 0, pixel {x}");
        assert_eq!(
            set1[x as usize],
            color(entry(SIZE - 1 - x)),
            "set 1, pixel {x}"
        );
    }
}

// --- Shadow-map lookups ---------------------------------------------------------------------

/// An 8×8 shadow map (docs/gpu-shadows.md): the left half stores depth 0x3FFFFF with intensity
/// 200, the right half depth 0xC00000 with intensity 100. A texel holds the depth in A, B, G
/// (most significant first) and the intensity in R.
fn shadow_map(linear: bool) -> BoundUnit {
    let texels = (0..64)
        .map(|k| {
            if k % 8 < 4 {
                [200, 0xFF, 0xFF, 0x3F]
            } else {
                [100, 0x00, 0x00, 0xC0]
            }
        })
        .collect();
    let mut bound = unit(vec![(8, 8, texels)], Wrap::ClampToEdge, linear);
    bound.config.kind = TextureKind::Shadow2d;
    bound
}

#[test]
fn shadow_lookups_compare_the_stored_depth_and_return_the_intensity() {
    let map = shadow_map(false);
    // Depth 0.5 (0x7FFFFF): behind the left half's 0x3FFFFF (in shadow: 0), in front of the
    // right half's 0xC00000 (lit: 100).
    assert_eq!(map.sample_shadow(0, 0.25, 0.5, 0.5), [0; 4]);
    assert_eq!(map.sample_shadow(0, 0.75, 0.5, 0.5), [100; 4]);
    // Depth 0.25 is ⌊0.25 · 0xFFFFFF⌋ = 0x3FFFFF, equal to the stored depth: lit. The next
    // float above it makes 0x400000: in shadow.
    assert_eq!(map.sample_shadow(0, 0.25, 0.5, 0.25), [200; 4]);
    assert_eq!(
        map.sample_shadow(0, 0.25, 0.5, f32::from_bits(0.25f32.to_bits() + 1)),
        [0; 4]
    );
    // Depths beyond 1 compare as 1.
    assert_eq!(map.sample_shadow(0, 0.75, 0.5, 7.0), [0; 4]);
    // The bias comes off the fragment's depth: 0x7FFFFF − 0x400000 = 0x3FFFFF, lit.
    let mut biased = shadow_map(false);
    biased.config.shadow.bias = 0x40_0000;
    assert_eq!(biased.sample_shadow(0, 0.25, 0.5, 0.5), [200; 4]);
    // Linear: at the halves' boundary (texel-space (4, 4)) the four texels around weigh a
    // quarter each: two in shadow (0), two lit (100): (2 · 100 · 16384 + 32768) / 65536 = 50.
    let smooth = shadow_map(true);
    assert_eq!(smooth.sample_shadow(0, 0.5, 0.5, 0.5), [50; 4]);
}

#[test]
fn shadow_maps_project_with_or_without_the_perspective_divide() {
    let mut map = shadow_map(false);
    assert_eq!(map.config.project([0.5, 0.25, 2.0], None), (0, 0.25, 0.125));
    map.config.shadow.orthographic = true;
    assert_eq!(map.config.project([0.5, 0.25, 2.0], None), (0, 0.5, 0.25));
    // A cube shadow map picks the face of the major axis, as a cube map does.
    map.config.kind = TextureKind::ShadowCube;
    assert_eq!(map.config.project([0.2, -0.3, 0.8], None).0, 4);
    assert_eq!(map.config.faces(), 6);
    assert!(!map.config.needs_lod());
}
