//! What the textured and fragment-lit scenes share: the vertex layout of the normal-quaternion
//! shader (corpus/programs/normal-quat: position, normal, tangent, texcoord in; position,
//! quaternion, view vector, texcoord 0 out), textures drawn by a function and mipmapped, the
//! lookup tables and a two-light environment, and the combiners that modulate a texture by the
//! lighting.

use picajit::gpu::builder::{
    Attribute, Element, LightEnvironment, LightSetup, SceneBuilder, Stage, TextureSetup,
};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::fragment::lighting::{lut_from_fn, table};
use picajit::gpu::fragment::texture::{TextureFormat, TextureKind, Wrap, encode};
use picajit::gpu::framebuffer::color::Rgba8;
use picajit::gpu::geometry::loader::ComponentType;

use super::common::*;

/// The fragment-lighting vertex shader: the tangent frame to a quaternion, and the view vector.
pub const NORMAL_QUAT: &str = include_str!("../programs/normal-quat/0-main.v.pica");

/// One vertex: position, normal, tangent (3 floats each), texcoord (2): 44 bytes.
pub fn vertex(
    out: &mut Vec<u8>,
    position: [f32; 3],
    normal: [f32; 3],
    tangent: [f32; 3],
    uv: [f32; 2],
) {
    out.extend(floats(&position));
    out.extend(floats(&normal));
    out.extend(floats(&tangent));
    out.extend(floats(&uv));
}

/// Bytes per vertex.
pub const STRIDE: u8 = 44;

pub const ATTRIBUTES: [Attribute; 4] = [
    Attribute::new(0, ComponentType::Float, 3),
    Attribute::new(1, ComponentType::Float, 3),
    Attribute::new(2, ComponentType::Float, 3),
    Attribute::new(3, ComponentType::Float, 2),
];
pub const ELEMENTS: [Element; 4] = [
    Element::Attribute(0),
    Element::Attribute(1),
    Element::Attribute(2),
    Element::Attribute(3),
];

/// A fragment-lit scene's start: the target cleared to `clear`, the normal-quaternion shader
/// with a perspective projection, opaque depth-tested drawing, back faces culled. The
/// model-view matrix (c4-c7) is the caller's.
pub fn begin_fragment_lit(scene: &mut SceneBuilder, clear: u32) {
    let program = shaders(&[("normal-quat.v.pica", NORMAL_QUAT)]);
    begin(scene, clear);
    scene.program(&program, 0, None);
    opaque(scene);
    scene.cull(2);
    scene.uniforms(Stage::Vertex, 0, &perspective(1.0, 1.0, 1.0, 10.0));
}

/// A picture of `size` × `size` texels and its mipmaps (each level the 2×2 box average of the
/// one before, down to 8 × 8), encoded in `format`, levels one after another. `texel(x, y)` is
/// the colour at column x of row y, row 0 on top.
pub fn mipmapped(
    format: TextureFormat,
    size: u32,
    levels: u32,
    texel: impl Fn(u32, u32) -> Rgba8,
) -> Vec<u8> {
    let mut picture: Vec<Rgba8> = (0..size * size)
        .map(|k| texel(k % size, k / size))
        .collect();
    let mut bytes = encode(format, size, size, &picture);
    let mut side = size;
    for _ in 1..levels {
        let half = side / 2;
        picture = (0..half * half)
            .map(|k| {
                let (x, y) = (2 * (k % half), 2 * (k / half));
                let taps = [(x, y), (x + 1, y), (x, y + 1), (x + 1, y + 1)]
                    .map(|(x, y)| picture[(y * side + x) as usize]);
                std::array::from_fn(|c| {
                    ((taps.iter().map(|t| t[c] as u32).sum::<u32>() + 2) / 4) as u8
                })
            })
            .collect();
        side = half;
        bytes.extend(encode(format, side, side, &picture));
    }
    bytes
}

/// A 2D texture set-up: repeating, trilinear when mipmapped.
pub fn texture_2d(
    format: TextureFormat,
    size: u32,
    levels: u32,
    faces: &[Vec<u8>],
) -> TextureSetup<'_> {
    TextureSetup {
        kind: TextureKind::Texture2d,
        format,
        size: (size, size),
        faces,
        max_level: levels - 1,
        wrap: (Wrap::Repeat, Wrap::Repeat),
        linear: (true, true, levels > 1),
        lod: (0.0, 0),
        border: [0, 0, 0, 255],
    }
}

/// A small hash of two integers, for procedural pictures.
pub fn hash(x: u32, y: u32) -> u32 {
    let mut h = x.wrapping_mul(0x9E37_79B9) ^ y.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2C1B_3C6D);
    h ^ (h >> 12)
}

/// Stage 0: texture 0 × the lighting's primary colour; stage 1: + its secondary colour; the
/// rest pass on.
pub fn texture_times_light(scene: &mut SceneBuilder) {
    scene.combiner(
        0,
        &CombinerStage::new(
            1,
            [source::TEXTURE0, source::FRAGMENT_PRIMARY, source::PRIMARY],
        ),
    );
    scene.combiner(
        1,
        &CombinerStage::new(
            2,
            [
                source::PREVIOUS,
                source::FRAGMENT_SECONDARY,
                source::PRIMARY,
            ],
        ),
    );
    for k in 2..6 {
        scene.combiner(k, &CombinerStage::PASS_THROUGH);
    }
}

/// Two lights (view space): light 0 directional, white, with a Blinn-Phong highlight of
/// exponent `shininess` from D0 on N·H; light 1 positional at `warm_light`, orange, with a
/// quadratic distance attenuation table over 0-5 units. Environment configuration 0 (D0, RR,
/// SP, DA) with only D0 and light 1's DA on.
pub fn two_lights(scene: &mut SceneBuilder, shininess: f32, warm_light: [f32; 3]) {
    scene.lighting_lut(table::D0, &lut_from_fn(|x| x.powf(shininess), false));
    scene.lighting_lut(
        table::DA + 1,
        &lut_from_fn(|x| 1.0 / (1.0 + 0.35 * (5.0 * x).powi(2)), false),
    );
    let toward = normalize([-0.45, 0.6, 0.65]);
    let white = [
        [0.6, 0.6, 0.6],
        [0.0; 3],
        [0.75, 0.75, 0.72],
        [0.12, 0.12, 0.15],
    ];
    scene.light(0, &light(white, toward, true, (0.0, 0.0)));
    let orange = [[0.35, 0.25, 0.1], [0.0; 3], [0.9, 0.55, 0.2], [0.0; 3]];
    scene.light(1, &light(orange, warm_light, false, (0.0, 0.2)));
    scene.lighting(Some(&LightEnvironment {
        ambient: [0.08, 0.08, 0.1],
        lights: &[0, 1],
        config0: 0 << 4,
        // Spotlights off, D1, FR, RB, RG and RR off, distance attenuation only for light 1.
        config1: 0xFF << 8 | 0x7E << 16 | 0xFD << 24,
        lut_inputs: [0, 0, 0],
    }));
}

/// A one-sided light without geometric factors or a spotlight: colours (specular 0, specular 1,
/// diffuse, ambient), position or direction, and the attenuation input's bias and scale.
pub fn light(
    colors: [[f32; 3]; 4],
    position: [f32; 3],
    directional: bool,
    attenuation: (f32, f32),
) -> LightSetup {
    LightSetup {
        colors,
        position,
        directional,
        two_sided: false,
        geometric: [false; 2],
        spot_direction: [0.0, 0.0, -1.0],
        attenuation,
    }
}
