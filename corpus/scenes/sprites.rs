//! `sprites.ctf`: textured, alpha-blended sprites, the way a 2D library (citro2d) draws them.
//! 600 sprites cut from one 64 × 64 RGBA8 sheet of four pictures (a ball, a star, a ring and a
//! leaf, each with soft alpha edges), each scaled, rotated and tinted by its vertex colour,
//! drawn in one draw of separate triangles over a cleared background; linear filtering with no
//! mipmaps, the combiners multiply the texel by the tint, and blending is the usual source
//! alpha over the destination. About 13 sprites deep on average (878,889 fragments on 65,536
//! pixels): a fragment-heavy frame of textured, blended sprites, on the textured fragment path
//! (docs/gpu.md, "Fragment paths").

use picajit::gpu::builder::{Attribute, Element, SceneBuilder, TextureSetup};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::fragment::texture::{TextureFormat, TextureKind, Wrap, encode};
use picajit::gpu::framebuffer::color::Rgba8;
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;

use super::common::*;
use super::textured::hash;

/// The sprite shader: position, texture coordinates and tint passed on.
pub const SPRITE: &str = include_str!("shaders/sprite/0-main.v.pica");

/// The sheet's side; each picture takes a quarter (32 × 32).
const SHEET: u32 = 64;

/// Sprites drawn.
const SPRITES: u32 = 600;

/// Texel (x, y) of the sheet (y from the top): picture `(x / 32) + 2 (y / 32)`, coloured, its
/// alpha falling off over its edge.
pub fn sheet(x: u32, y: u32) -> Rgba8 {
    let picture = x / 32 + 2 * (y / 32);
    // Centred coordinates in [-1, 1] within the picture.
    let u = ((x % 32) as f32 + 0.5) / 16.0 - 1.0;
    let v = ((y % 32) as f32 + 0.5) / 16.0 - 1.0;
    let r = (u * u + v * v).sqrt();
    let angle = v.atan2(u);
    // A signed distance to the shape's edge (positive inside), in picture units.
    let inside = match picture {
        0 => 0.9 - r,
        1 => 0.55 + 0.35 * (5.0 * angle).cos() - r,
        2 => 0.15 - (r - 0.7).abs(),
        _ => 0.85 - (u.abs() * 1.6 + (v + 0.3 * u * u).abs() * 0.9).max(r * 0.75),
    };
    let alpha = (inside * 12.0).clamp(0.0, 1.0);
    let shade = 1.0 - 0.5 * r.min(1.0);
    let [cr, cg, cb] = match picture {
        0 => [255.0, 120.0, 60.0],
        1 => [255.0, 230.0, 90.0],
        2 => [120.0, 200.0, 255.0],
        _ => [90.0, 220.0, 110.0],
    };
    let grain = (hash(x, y) % 16) as f32 - 8.0;
    let channel = |c: f32| (c * shade + grain).clamp(0.0, 255.0) as u8;
    [channel(cr), channel(cg), channel(cb), (alpha * 255.0) as u8]
}

/// A number in [0, 1) from sprite `k`'s hash with salt `salt`.
fn random(k: u32, salt: u32) -> f32 {
    (hash(k, salt) % 10_000) as f32 / 10_000.0
}

/// The six vertices (two triangles) of sprite `k`: position (x, y, z, w), texture coordinates
/// (s, t, 0, 0) and tint (r, g, b, a), twelve floats each.
fn sprite(k: u32, data: &mut Vec<u8>) {
    let (cx, cy) = (random(k, 1) * 2.2 - 1.1, random(k, 2) * 2.2 - 1.1);
    // Half a side, 8 to 32 pixels of the 256 × 256 target, in clip units.
    let half = (8.0 + 24.0 * random(k, 3)) / 128.0;
    let angle = random(k, 4) * std::f32::consts::TAU;
    let (sin, cos) = angle.sin_cos();
    let picture = hash(k, 5) % 4;
    let (s0, t0) = ((picture % 2) as f32 * 0.5, (1 - picture / 2) as f32 * 0.5);
    let tint = [
        0.6 + 0.4 * random(k, 6),
        0.6 + 0.4 * random(k, 7),
        0.6 + 0.4 * random(k, 8),
        0.5 + 0.5 * random(k, 9),
    ];
    let corner = |(a, b): (f32, f32)| -> Vec<f32> {
        let (dx, dy) = (a * half, b * half);
        let (x, y) = (cx + dx * cos - dy * sin, cy + dx * sin + dy * cos);
        let (s, t) = (s0 + (a + 1.0) * 0.25, t0 + (b + 1.0) * 0.25);
        let mut v = vec![x, y, -0.5, 1.0, s, t, 0.0, 0.0];
        v.extend(tint);
        v
    };
    for c in [
        (-1.0, -1.0),
        (1.0, -1.0),
        (1.0, 1.0),
        (-1.0, -1.0),
        (1.0, 1.0),
        (-1.0, 1.0),
    ] {
        data.extend(floats(&corner(c)));
    }
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    begin(&mut scene, 0x2030_40FF);
    scene.program(&shaders(&[("sprite.v.pica", SPRITE)]), 0, None);
    scene.cull(0);
    scene.depth_test(false, 1, 0x0F);
    scene.texture_units(1, false);
    // Stage 0: texture 0 × the tint (RGB and alpha); the rest pass on.
    scene.combiner(
        0,
        &CombinerStage::new(1, [source::TEXTURE0, source::PRIMARY, source::PRIMARY]),
    );
    for k in 1..6 {
        scene.combiner(k, &CombinerStage::PASS_THROUGH);
    }
    scene.blend((0, 0), [6, 7, 6, 7], [0; 4]);
    let texels: Vec<Rgba8> = (0..SHEET * SHEET)
        .map(|k| sheet(k % SHEET, k / SHEET))
        .collect();
    let bytes = [encode(TextureFormat::Rgba8, SHEET, SHEET, &texels)];
    scene.texture(
        0,
        &TextureSetup {
            kind: TextureKind::Texture2d,
            format: TextureFormat::Rgba8,
            size: (SHEET, SHEET),
            faces: &bytes,
            max_level: 0,
            wrap: (Wrap::ClampToEdge, Wrap::ClampToEdge),
            linear: (true, true, false),
            lod: (0.0, 0),
            border: [0; 4],
        },
    );
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 4),
        Attribute::new(1, ComponentType::Float, 4),
        Attribute::new(2, ComponentType::Float, 4),
    ]);
    let mut data = Vec::new();
    for k in 0..SPRITES {
        sprite(k, &mut data);
    }
    scene.buffer(
        &data,
        48,
        &[
            Element::Attribute(0),
            Element::Attribute(1),
            Element::Attribute(2),
        ],
    );
    scene.draw_arrays(Topology::List, 0, 6 * SPRITES);
    scene.end_frame();
    scene.finish()
}
