//! `bump-surface.ctf`: bump mapping. A square tilted away from the eye, its texture unit 0 a
//! normal map (RGB8, 64 × 64, repeated twice) of hemispherical studs on a grid, which the
//! fragment-lighting unit reads as the surface normal (z rebuilt from x and y). A warm light
//! grazes the surface from the left and a dim blue one fills from the right; the studs' sides
//! facing the warm light catch it and their tops carry a highlight. The combiners multiply a
//! stone colour by the diffuse light and add the specular.

use picajit::gpu::builder::{Indices, LightEnvironment, SceneBuilder, Stage, TextureSetup};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::fragment::lighting::{lut_from_fn, table};
use picajit::gpu::fragment::texture::{TextureFormat, TextureKind, Wrap, encode};
use picajit::gpu::framebuffer::color::Rgba8;
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;

use super::common::*;
use super::textured::*;

/// The normal map's side.
const SIDE: u32 = 64;

/// The surface normal at texel (x, y) (row 0 on top, so +y in surface space is up the
/// picture): studs of radius 6 centred in 16 × 16 cells, flat elsewhere; each channel stores
/// (n + 1) / 2.
pub fn stud_normal(x: u32, y: u32) -> Rgba8 {
    let (dx, dy) = ((x % 16) as f32 - 7.5, (y % 16) as f32 - 7.5);
    let radius = 6.0;
    let (nx, ny) = if dx * dx + dy * dy < radius * radius {
        (dx / radius, -dy / radius)
    } else {
        (0.0, 0.0)
    };
    let nz = (1.0 - nx * nx - ny * ny).max(0.0).sqrt();
    let store = |c: f32| ((c + 1.0) * 127.5).round().clamp(0.0, 255.0) as u8;
    [store(nx), store(ny), store(nz), 255]
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    begin_fragment_lit(&mut scene, 0x1018_20FF);
    let model = multiply(
        &translation(0.0, -0.1, -3.0),
        &rotation([1.0, 0.0, 0.0], -0.85),
    );
    scene.uniforms(Stage::Vertex, 4, &model);
    let texels: Vec<Rgba8> = (0..SIDE * SIDE)
        .map(|k| stud_normal(k % SIDE, k / SIDE))
        .collect();
    let normals = [encode(TextureFormat::Rgb8, SIDE, SIDE, &texels)];
    scene.texture(
        0,
        &TextureSetup {
            kind: TextureKind::Texture2d,
            format: TextureFormat::Rgb8,
            size: (SIDE, SIDE),
            faces: &normals,
            max_level: 0,
            wrap: (Wrap::Repeat, Wrap::Repeat),
            linear: (true, true, false),
            lod: (0.0, 0),
            border: [128, 128, 255, 255],
        },
    );
    scene.texture_units(1, false);
    let stone = [170, 160, 150, 255];
    scene.combiner(
        0,
        &CombinerStage::new(
            1,
            [source::CONSTANT, source::FRAGMENT_PRIMARY, source::PRIMARY],
        )
        .with_constant(stone),
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
    scene.lighting_lut(table::D0, &lut_from_fn(|x| x.powf(40.0), false));
    let warm = [[0.5, 0.45, 0.35], [0.0; 3], [1.0, 0.85, 0.6], [0.05; 3]];
    scene.light(
        0,
        &light(warm, normalize([-1.0, 0.35, 0.25]), true, (0.0, 0.0)),
    );
    let blue = [[0.0; 3], [0.0; 3], [0.15, 0.2, 0.4], [0.0; 3]];
    scene.light(
        1,
        &light(blue, normalize([1.0, 0.2, 0.3]), true, (0.0, 0.0)),
    );
    scene.lighting(Some(&LightEnvironment {
        ambient: [0.04, 0.04, 0.05],
        lights: &[0, 1],
        // Configuration 0; normal map from unit 0 (bits 28-29 = 1), z rebuilt.
        config0: 1 << 28,
        config1: 0xFF << 8 | 0x7E << 16 | 0xFF << 24,
        lut_inputs: [0, 0, 0],
    }));
    let mut data = Vec::new();
    for (x, y) in [(-1.0f32, -1.0f32), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
        vertex(
            &mut data,
            [1.5 * x, 1.5 * y, 0.0],
            [0.0, 0.0, 1.0],
            [1.0, 0.0, 0.0],
            [x + 1.0, y + 1.0],
        );
    }
    scene.attributes(&ATTRIBUTES);
    scene.buffer(&data, STRIDE, &ELEMENTS);
    scene.draw_elements(Topology::List, &Indices::U16(vec![0, 1, 2, 0, 2, 3]));
    scene.end_frame();
    scene.finish()
}
