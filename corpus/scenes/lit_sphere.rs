//! `lit-sphere.ctf`: the render-throughput scene (docs/gpu.md, "Speed"). A sphere of 10,000
//! triangles (a 50 × 100 grid of quads between 51 rings of 101 vertices), drawn indexed in one
//! list, in the lit cube's set-up: the lit vertex shader (corpus/programs/scene-lit), vertex
//! colours, the depth test and back-face culling. Half the triangles face away; the poles'
//! triangles are degenerate.

use picajit::gpu::builder::{Indices, SceneBuilder, Stage};
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;

use super::common::*;
use super::lit_cube;

/// Rings (from pole to pole) and vertices per ring (the seam's vertex repeated).
pub const RINGS: usize = 51;
pub const SEGMENTS: usize = 101;

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    lit_cube::begin_lit(&mut scene);
    scene.uniforms(Stage::Vertex, 4, &model());
    // Normals as shorts hold whole numbers: they are scaled by 100, and the diffuse colour
    // by 1/100 to match.
    scene.uniform(Stage::Vertex, 10, [0.0085, 0.0085, 0.008, 0.0]);
    let mut data = Vec::new();
    for (r, s, _, n) in points() {
        lit_cube::vertex(
            &mut data,
            n,
            [235, 190 - r as u8, 120 + (s % 50) as u8, 255],
            n.map(|c| c * 100.0),
        );
    }
    scene.attributes(&lit_cube::ATTRIBUTES);
    scene.buffer(&data, 24, &lit_cube::ELEMENTS);
    scene.draw_elements(Topology::List, &Indices::U16(indices()));
    scene.end_frame();
    scene.finish()
}

/// The sphere's model-view matrix: turned a little, 3.5 in front of the eye.
pub fn model() -> Mat4 {
    multiply(
        &translation(0.0, 0.0, -3.5),
        &rotation([0.0, 1.0, 0.0], 0.4),
    )
}

/// The grid's vertices, ring by ring from the top pole: (ring, segment, the angle theta
/// around the axis, the unit position, which is also the normal).
pub fn points() -> impl Iterator<Item = (usize, usize, f32, [f32; 3])> {
    (0..RINGS).flat_map(|r| {
        let phi = std::f32::consts::PI * r as f32 / (RINGS - 1) as f32;
        (0..SEGMENTS).map(move |s| {
            let theta = std::f32::consts::TAU * s as f32 / (SEGMENTS - 1) as f32;
            let n = [phi.sin() * theta.cos(), phi.cos(), phi.sin() * theta.sin()];
            (r, s, theta, n)
        })
    })
}

/// The grid's triangles: two per quad between neighbouring rings and segments.
pub fn indices() -> Vec<u16> {
    let mut indices = Vec::new();
    for r in 0..RINGS - 1 {
        for s in 0..SEGMENTS - 1 {
            let a = (r * SEGMENTS + s) as u16;
            let b = a + SEGMENTS as u16;
            indices.extend([a, a + 1, b, b, a + 1, b + 1]);
        }
    }
    indices
}
