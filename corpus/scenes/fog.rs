//! `fog.ctf`: a tiled floor running into the distance with cubes along it, lit per vertex, in
//! exponential-squared fog (docs/gpu-fog-and-gas.md), drawn twice side by side. The left half has the
//! usual depth (0 at the near plane, the depth test LESS); the right half a reversed depth
//! (1 at the near plane, the depth test GREATER, the depth buffer cleared to 0) with the fog
//! table's Z flip on, so that the same table gives the same fog: the halves agree.

use picajit::gpu::builder::{Indices, SceneBuilder, Stage};
use picajit::gpu::fragment::fog::fog_lut_from_fn;
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;

use super::common::*;
use super::lit_cube::{ATTRIBUTES, ELEMENTS, begin_lit, cube, vertex};

/// The near and far planes.
const NEAR: f32 = 1.0;
const FAR: f32 = 40.0;
/// The fog's density: the factor is exp(−(density · distance)²).
const DENSITY: f32 = 0.055;
/// The fog colour, also the clear colour (RGBA8 word for the clear).
const FOG: [u8; 3] = [176, 190, 204];

/// The view distance at depth `d` of [`perspective`]'s mapping (0 at the near plane).
fn distance(d: f32) -> f32 {
    NEAR * FAR / (FAR - d * (FAR - NEAR))
}

/// The floor: 2×2 tiles from x = −6 to 6, z = −2 to −38, at y = −1, alternating two colours.
fn floor() -> (Vec<u8>, Vec<u16>) {
    let mut data = Vec::new();
    let mut indices = Vec::new();
    for row in 0..18 {
        for column in 0..6 {
            let (x, z) = (-6.0 + 2.0 * column as f32, -2.0 - 2.0 * row as f32);
            let color = if (row + column) % 2 == 0 {
                [225, 225, 215, 255]
            } else {
                [70, 120, 80, 255]
            };
            let base = (data.len() / 24) as u16;
            for (dx, dz) in [(0.0, 0.0), (2.0, 0.0), (2.0, -2.0), (0.0, -2.0)] {
                vertex(&mut data, [x + dx, -1.0, z + dz], color, [0.0, 1.0, 0.0]);
            }
            indices.extend([base, base + 1, base + 2, base, base + 2, base + 3]);
        }
    }
    (data, indices)
}

/// The floor and eight cubes (2 wide, standing on it), with the view matrix of a camera above the floor.
fn draw_world(scene: &mut SceneBuilder) {
    let view = multiply(
        &rotation([1.0, 0.0, 0.0], 0.12),
        &translation(0.0, -0.6, 0.0),
    );
    let (floor, floor_indices) = floor();
    scene.uniforms(Stage::Vertex, 4, &view);
    scene.attributes(&ATTRIBUTES);
    scene.buffer(&floor, 24, &ELEMENTS);
    scene.draw_elements(Topology::List, &Indices::U16(floor_indices));
    let (cube, cube_indices) = cube();
    for k in 0..8 {
        let side = if k % 2 == 0 { -1.8 } else { 1.8 };
        let z = -6.0 - 4.0 * k as f32;
        let model = multiply(
            &view,
            &multiply(
                &translation(side, 0.0, z),
                &rotation([0.0, 1.0, 0.0], 0.5 + 0.35 * k as f32),
            ),
        );
        scene.uniforms(Stage::Vertex, 4, &model);
        scene.attributes(&ATTRIBUTES);
        scene.buffer(&cube, 24, &ELEMENTS);
        scene.draw_elements(Topology::List, &Indices::U16(cube_indices.clone()));
    }
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    begin_lit(&mut scene);
    let [r, g, b] = FOG;
    let clear = u32::from_be_bytes([r, g, b, 255]);
    scene.memory_fill(COLOR, SIZE * SIZE * 4, clear, 32);
    let half = SIZE / 2;
    scene.uniforms(
        Stage::Vertex,
        0,
        &perspective(1.0, half as f32 / SIZE as f32, NEAR, FAR),
    );
    scene.fog_lut(&fog_lut_from_fn(|d| {
        (-(DENSITY * distance(d)).powi(2)).exp()
    }));
    scene.fog_color(FOG);
    // Left: depth = −z/w, LESS, the table indexed by depth.
    scene.viewport(0, 0, half, SIZE);
    scene.fog_mode(5, false, false);
    draw_world(&mut scene);
    // Right: depth = z/w + 1, GREATER from a buffer of zeros, the table indexed by 1 − depth.
    scene.memory_fill(DEPTH, SIZE * SIZE * 4, 0, 32);
    scene.viewport(half as i32, 0, half, SIZE);
    scene.depth_map(true, 1.0, 1.0);
    scene.depth_test(true, 6, 0x1F);
    scene.fog_mode(5, false, true);
    draw_world(&mut scene);
    scene.end_frame();
    scene.finish()
}
