//! `texture-formats.ctf`: every texel format side by side. The same 32 × 32 picture (a hue
//! wheel across, brightness down, alpha falling off from the centre; grey for the intensity
//! formats) in each of the fourteen formats, in code order from the top left, four to a row,
//! drawn with nearest filtering and blended by alpha over a checkerboard (itself an I8
//! texture repeated across the target).

use picajit::gpu::builder::{Attribute, Element, SceneBuilder, TextureSetup};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::fragment::texture::{TextureFormat, TextureKind, Wrap, encode};
use picajit::gpu::framebuffer::color::Rgba8;
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;

use super::common::*;

/// Clip-space positions and texture coordinates in, as they are out.
pub const PASS_TEXCOORD: &str = include_str!("shaders/pass-texcoord/0-main.v.pica");

/// The picture's size.
const SIDE: u32 = 32;

/// A hue wheel across (x), darker down (y), alpha 255 at the centre falling to 64 at the
/// corners.
pub fn picture(x: u32, y: u32) -> Rgba8 {
    let hue = x as f32 / SIDE as f32 * 6.0;
    let sector = hue as u32 % 6;
    let f = hue.fract();
    let (up, down) = (f, 1.0 - f);
    let [r, g, b] = match sector {
        0 => [1.0, up, 0.0],
        1 => [down, 1.0, 0.0],
        2 => [0.0, 1.0, up],
        3 => [0.0, down, 1.0],
        4 => [up, 0.0, 1.0],
        _ => [1.0, 0.0, down],
    };
    let value = 1.0 - 0.7 * y as f32 / (SIDE - 1) as f32;
    let (dx, dy) = (x as f32 - 15.5, y as f32 - 15.5);
    let distance = (dx * dx + dy * dy).sqrt() / 22.0;
    let alpha = (255.0 - 191.0 * distance.min(1.0)) as u8;
    let channel = |c: f32| (c * value * 255.0) as u8;
    [channel(r), channel(g), channel(b), alpha]
}

/// The picture as `format` shows it: intensity formats get its luma (the encoder takes
/// intensity from red).
fn texels(format: TextureFormat) -> Vec<Rgba8> {
    (0..SIDE * SIDE)
        .map(|k| {
            let [r, g, b, a] = picture(k % SIDE, k / SIDE);
            let luma = ((r as u32 * 77 + g as u32 * 150 + b as u32 * 29) >> 8) as u8;
            match format {
                TextureFormat::Ia8 | TextureFormat::I8 | TextureFormat::Ia4 | TextureFormat::I4 => {
                    [luma, luma, luma, a]
                }
                _ => [r, g, b, a],
            }
        })
        .collect()
}

/// A quad from (x0, y0) to (x1, y1) in clip space with texture coordinates 0 to `reach`.
fn quad(scene: &mut SceneBuilder, (x0, y0): (f32, f32), (x1, y1): (f32, f32), reach: f32) {
    let mut data = Vec::new();
    for (x, y, s, t) in [
        (x0, y0, 0.0, 0.0),
        (x1, y0, reach, 0.0),
        (x0, y1, 0.0, reach),
        (x1, y1, reach, reach),
    ] {
        data.extend(floats(&[x, y, -0.5, 1.0, s, t, 0.0, 0.0]));
    }
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 4),
        Attribute::new(1, ComponentType::Float, 4),
    ]);
    scene.buffer(&data, 32, &[Element::Attribute(0), Element::Attribute(1)]);
    scene.draw_arrays(Topology::Strip, 0, 4);
}

/// A nearest-filtered 2D texture.
fn nearest(format: TextureFormat, size: u32, faces: &[Vec<u8>]) -> TextureSetup<'_> {
    TextureSetup {
        kind: TextureKind::Texture2d,
        format,
        size: (size, size),
        faces,
        max_level: 0,
        wrap: (Wrap::Repeat, Wrap::Repeat),
        linear: (false, false, false),
        lod: (0.0, 0),
        border: [0; 4],
    }
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    begin(&mut scene, 0x0000_00FF);
    scene.program(
        &shaders(&[("pass-texcoord.v.pica", PASS_TEXCOORD)]),
        0,
        None,
    );
    scene.cull(0);
    scene.depth_test(false, 1, 0x0F);
    scene.texture_units(1, false);
    // Stage 0 passes texture 0 on (RGB and alpha).
    scene.combiner(0, &CombinerStage::new(0, [source::TEXTURE0; 3]));
    for k in 1..6 {
        scene.combiner(k, &CombinerStage::PASS_THROUGH);
    }
    // The checkerboard: 8 × 8 texels of two greys, 4 × 4 each, repeated 16 times.
    let checker: Vec<Rgba8> = (0..64)
        .map(|k| {
            let dark = ((k % 8) / 4 + (k / 8) / 4) % 2 == 0;
            let v = if dark { 90 } else { 160 };
            [v, v, v, 255]
        })
        .collect();
    let checker = [encode(TextureFormat::I8, 8, 8, &checker)];
    scene.blend((0, 0), [1, 0, 1, 0], [0; 4]);
    scene.texture(0, &nearest(TextureFormat::I8, 8, &checker));
    quad(&mut scene, (-1.0, -1.0), (1.0, 1.0), 16.0);
    // The fourteen formats over it, blended by source alpha.
    scene.blend((0, 0), [6, 7, 6, 7], [0; 4]);
    let cell = 2.0 / 4.0;
    let inset = 4.0 / SIZE as f32 * 2.0;
    for (k, format) in TextureFormat::ALL.into_iter().enumerate() {
        let bytes = [encode(format, SIDE, SIDE, &texels(format))];
        scene.texture(0, &nearest(format, SIDE, &bytes));
        let (column, row) = ((k % 4) as f32, (k / 4) as f32);
        let x0 = -1.0 + column * cell + inset;
        let y1 = 1.0 - row * cell - inset;
        quad(
            &mut scene,
            (x0, y1 - cell + 2.0 * inset),
            (x0 + cell - 2.0 * inset, y1),
            1.0,
        );
    }
    scene.end_frame();
    scene.finish()
}
