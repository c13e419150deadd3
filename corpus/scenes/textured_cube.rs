//! `textured-cube.ctf`: the README's example. A cube with a mipmapped ETC1 brick texture
//! (trilinear filtering), lit per fragment by a white directional light with a Blinn-Phong
//! highlight and an orange positional light with distance attenuation; the combiners modulate
//! the texture by the diffuse colour and add the specular one. The vertex shader is
//! corpus/programs/normal-quat (the tangent frame as a quaternion, and the view vector).

use picajit::gpu::builder::{Indices, SceneBuilder, Stage};
use picajit::gpu::fragment::texture::TextureFormat;
use picajit::gpu::framebuffer::color::Rgba8;
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;

use super::common::*;
use super::textured::*;

/// Bricks 16 × 8 texels in rows offset by half a brick, with mortar between them; each brick
/// its own shade, each texel a little grain.
pub fn brick(x: u32, y: u32) -> Rgba8 {
    let row = y / 8;
    let shifted = x + if row % 2 == 1 { 8 } else { 0 };
    let column = shifted / 16;
    let grain = (hash(x, y) % 24) as i32 - 12;
    let mortar = y % 8 == 7 || shifted % 16 == 15;
    let base: [i32; 3] = if mortar {
        [190, 185, 170]
    } else {
        let shade = (hash(column, row) % 60) as i32 - 30;
        [160 + shade, 70 + shade / 2, 50 + shade / 3]
    };
    let [r, g, b] = base.map(|c| (c + grain).clamp(0, 255) as u8);
    [r, g, b, 255]
}

/// The cube's 24 vertices (four per face, counter-clockwise seen from outside) and 36 indices;
/// each face's tangent is its s direction, and its texture repeats twice across it.
pub fn cube() -> (Vec<u8>, Vec<u16>) {
    let faces: [([f32; 3], [f32; 3]); 6] = [
        ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0]),
        ([0.0, 0.0, -1.0], [-1.0, 0.0, 0.0]),
        ([1.0, 0.0, 0.0], [0.0, 0.0, -1.0]),
        ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        ([0.0, 1.0, 0.0], [1.0, 0.0, 0.0]),
        ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0]),
    ];
    let mut data = Vec::new();
    let mut indices = Vec::new();
    for (k, (n, u)) in faces.iter().enumerate() {
        let v = cross(*n, *u);
        for (su, sv) in [(-1.0f32, -1.0f32), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
            let p = std::array::from_fn(|c| n[c] + su * u[c] + sv * v[c]);
            vertex(&mut data, p, *n, *u, [su + 1.0, sv + 1.0]);
        }
        let base = 4 * k as u16;
        indices.extend([base, base + 1, base + 2, base, base + 2, base + 3]);
    }
    (data, indices)
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    begin_fragment_lit(&mut scene, 0x1A20_30FF);
    scene.uniforms(Stage::Vertex, 4, &super::lit_cube::model());
    let bricks = [mipmapped(TextureFormat::Etc1, 64, 4, brick)];
    scene.texture(0, &texture_2d(TextureFormat::Etc1, 64, 4, &bricks));
    scene.texture_units(1, false);
    texture_times_light(&mut scene);
    two_lights(&mut scene, 24.0, [1.6, -0.9, -2.3]);
    let (data, indices) = cube();
    scene.attributes(&ATTRIBUTES);
    scene.buffer(&data, STRIDE, &ELEMENTS);
    scene.draw_elements(Topology::List, &Indices::U16(indices));
    scene.end_frame();
    scene.finish()
}
