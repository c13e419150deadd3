//! `textured-sphere.ctf`: the render-throughput scene for texturing and fragment lighting
//! (docs/gpu.md, "Speed"). The lit sphere's 10,000 triangles (corpus/scenes/lit_sphere.rs), now
//! with normals, tangents and texture coordinates for the normal-quaternion shader, a 128 × 128
//! ETC1 texture with five mipmap levels sampled trilinearly, and the textured cube's two
//! fragment lights.

use picajit::gpu::builder::{Indices, SceneBuilder, Stage};
use picajit::gpu::fragment::texture::TextureFormat;
use picajit::gpu::framebuffer::color::Rgba8;
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;

use super::lit_sphere::{RINGS, SEGMENTS, indices, model, points};
use super::textured::*;

/// Squares of two greens and a blue in a 16-texel grid, with grain: a small planet.
fn planet(x: u32, y: u32) -> Rgba8 {
    let cell = hash(x / 16, y / 16) % 3;
    let grain = (hash(x, y) % 20) as i32 - 10;
    let base = [[40, 110, 200], [60, 150, 70], [140, 170, 80]][cell as usize];
    let [r, g, b] = base.map(|c: i32| (c + grain).clamp(0, 255) as u8);
    [r, g, b, 255]
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    begin_fragment_lit(&mut scene, 0x1A20_30FF);
    scene.uniforms(Stage::Vertex, 4, &model());
    let texture = [mipmapped(TextureFormat::Etc1, 128, 5, planet)];
    scene.texture(0, &texture_2d(TextureFormat::Etc1, 128, 5, &texture));
    scene.texture_units(1, false);
    texture_times_light(&mut scene);
    two_lights(&mut scene, 30.0, [1.4, -0.8, -1.8]);
    let mut data = Vec::new();
    for (r, s, theta, n) in points() {
        // The direction of increasing s: the derivative along theta.
        let tangent = [-theta.sin(), 0.0, theta.cos()];
        let uv = [
            2.0 * s as f32 / (SEGMENTS - 1) as f32,
            1.0 - r as f32 / (RINGS - 1) as f32,
        ];
        vertex(&mut data, n, n, tangent, uv);
    }
    scene.attributes(&ATTRIBUTES);
    scene.buffer(&data, STRIDE, &ELEMENTS);
    scene.draw_elements(Topology::List, &Indices::U16(indices()));
    scene.end_frame();
    scene.finish()
}
