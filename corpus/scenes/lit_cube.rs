//! `lit-cube.ctf`: a cube lit per vertex by one directional light (a vertex shader computing
//! ambient + diffuse · max(N·L, 0)), drawn indexed with back faces culled and the depth test
//! on, then a translucent quad blended over it (source alpha, depth test on, depth writes off).
//! Positions are floats, normals shorts, colours unsigned bytes.

use picajit::gpu::builder::{Attribute, Element, Indices, SceneBuilder, Stage};
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;

use super::common::*;

/// The vertex shader: transform, then light in view space.
pub const LIT_VERTEX: &str = include_str!("../programs/scene-lit/0-main.v.pica");

/// One vertex: position (3 floats), colour (4 unsigned bytes), normal (4 shorts): 24 bytes.
pub fn vertex(out: &mut Vec<u8>, position: [f32; 3], color: [u8; 4], normal: [f32; 3]) {
    out.extend(floats(&position));
    out.extend(color);
    for c in [normal[0], normal[1], normal[2], 0.0] {
        out.extend((c as i16).to_le_bytes());
    }
}

/// The cube's 24 vertices (four per face, counter-clockwise seen from outside) and 36 indices.
pub fn cube() -> (Vec<u8>, Vec<u16>) {
    let faces: [([f32; 3], [f32; 3], [u8; 4]); 6] = [
        ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [230, 70, 60, 255]),
        ([0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [60, 200, 90, 255]),
        ([1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [70, 110, 235, 255]),
        ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [240, 200, 60, 255]),
        ([0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [200, 90, 220, 255]),
        ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [80, 210, 210, 255]),
    ];
    let mut data = Vec::new();
    let mut indices = Vec::new();
    for (k, (n, u, color)) in faces.iter().enumerate() {
        let v = cross(*n, *u);
        for (su, sv) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
            let p = std::array::from_fn(|c| n[c] + su * u[c] + sv * v[c]);
            vertex(&mut data, p, *color, *n);
        }
        let base = 4 * k as u16;
        indices.extend([base, base + 1, base + 2, base, base + 2, base + 3]);
    }
    (data, indices)
}

pub const ATTRIBUTES: [Attribute; 3] = [
    Attribute::new(0, ComponentType::Float, 3),
    Attribute::new(1, ComponentType::UnsignedByte, 4),
    Attribute::new(2, ComponentType::Short, 4),
];
pub const ELEMENTS: [Element; 3] = [
    Element::Attribute(0),
    Element::Attribute(1),
    Element::Attribute(2),
];

/// A lit scene's start: the target cleared, the lit vertex shader bound with its projection
/// and light, vertex colours through the combiners, opaque depth-tested drawing, back faces
/// culled. The model-view matrix (c4-c7) is the caller's.
pub fn begin_lit(scene: &mut SceneBuilder) {
    let program = shaders(&[("lit.v.pica", LIT_VERTEX)]);
    begin(scene, 0x1A20_30FF);
    scene.program(&program, 0, None);
    vertex_color_combiners(scene);
    opaque(scene);
    scene.cull(2);
    let projection = perspective(1.0, 1.0, 1.0, 10.0);
    let light = normalize([0.4, 0.6, 0.7]);
    scene.uniforms(Stage::Vertex, 0, &projection);
    scene.uniform(Stage::Vertex, 8, [light[0], light[1], light[2], 0.0]);
    scene.uniform(Stage::Vertex, 9, [0.2, 0.2, 0.25, 0.0]);
    scene.uniform(Stage::Vertex, 10, [0.85, 0.85, 0.8, 0.0]);
}

/// The cube's model-view matrix: turned to show three faces, 4.2 in front of the eye.
pub fn model() -> Mat4 {
    multiply(
        &translation(0.0, 0.0, -4.2),
        &multiply(
            &rotation(normalize([1.0, 1.0, 0.0]), 0.7),
            &rotation([0.0, 1.0, 0.0], 0.5),
        ),
    )
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    begin_lit(&mut scene);
    scene.uniforms(Stage::Vertex, 4, &model());
    let (data, indices) = cube();
    scene.attributes(&ATTRIBUTES);
    scene.buffer(&data, 24, &ELEMENTS);
    scene.draw_elements(Topology::List, &Indices::U16(indices));
    // A translucent pane in front: blended by its alpha, tested against the cube's depth but
    // leaving it unchanged.
    let mut pane = Vec::new();
    for (x, y) in [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)] {
        vertex(
            &mut pane,
            [x, y, 0.0],
            [255, 255, 255, 110],
            [0.0, 0.0, 1.0],
        );
    }
    scene.uniforms(Stage::Vertex, 4, &translation(0.9, -0.7, -2.6));
    scene.blend((0, 0), [6, 7, 6, 7], [0; 4]);
    scene.depth_test(true, 4, 0x0F);
    scene.attributes(&ATTRIBUTES);
    scene.buffer(&pane, 24, &ELEMENTS);
    scene.draw_arrays(Topology::Strip, 0, 4);
    scene.end_frame();
    scene.finish()
}
