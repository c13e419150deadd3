//! `geometry-modes.ctf`: the geometry shader's three input modes, with the corpus programs
//! that exercise them (corpus/programs): point sprites (point mode: each particle becomes a
//! camera-facing quad) top left, a ribbon trail (fixed-size primitives: four points per
//! invocation arrive in float uniforms) top right, and polygon fans (variable-size primitives:
//! the index buffer gives each polygon's vertex count) below.

use picajit::gpu::builder::{Attribute, Element, GeometryProgram, Indices, SceneBuilder, Stage};
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;

use super::common::*;

const SPRITE_VS: &str = include_str!("../programs/point-sprite-gs/0-main.v.pica");
const SPRITE_GS: &str = include_str!("../programs/point-sprite-gs/1-sprite.g.pica");
const RIBBON_VS: &str = include_str!("../programs/ribbon-fixed-gs/0-main.v.pica");
const RIBBON_GS: &str = include_str!("../programs/ribbon-fixed-gs/1-ribbon.g.pica");
const FAN_VS: &str = include_str!("../programs/fan-variable-gs/0-main.v.pica");
const FAN_GS: &str = include_str!("../programs/fan-variable-gs/1-fan.g.pica");

fn bind(scene: &mut SceneBuilder, vs: &str, gs: &str, stride: u8) {
    let program = shaders(&[("vs.pica", vs), ("gs.pica", gs)]);
    let geometry = GeometryProgram {
        shbin: &program,
        dvle: 1,
        stride,
    };
    scene.program(&program, 0, Some(geometry));
}

fn identity() -> Mat4 {
    translation(0.0, 0.0, 0.0)
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    begin(&mut scene, 0x1018_20FF);
    vertex_color_combiners(&mut scene);
    opaque(&mut scene);
    scene.cull(0);
    let projection = perspective(0.9, 1.0, 0.5, 20.0);
    let half = SIZE / 2;

    // Point mode: position (3 floats), colour (4 floats), size (1 float) per particle; the
    // vertex shader's three outputs are the geometry shader's three inputs.
    scene.viewport(0, half as i32, half, half);
    bind(&mut scene, SPRITE_VS, SPRITE_GS, 3);
    scene.uniforms(Stage::Vertex, 0, &identity());
    scene.uniform(Stage::Vertex, 4, [0.9, 0.05, 3.0, 0.0]);
    scene.uniforms(Stage::Geometry, 0, &projection);
    let mut particles = Vec::new();
    for k in 0..12 {
        let angle = k as f32 / 12.0 * std::f32::consts::TAU;
        let z = -5.0 + 1.5 * angle.sin();
        particles.extend(floats(&[2.0 * angle.cos(), 1.2 * angle.sin(), z]));
        particles.extend(floats(&[
            0.5 + 0.5 * angle.cos(),
            0.5 + 0.5 * (angle * 2.0).sin(),
            0.9,
            1.0,
        ]));
        particles.extend(floats(&[1.3]));
    }
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 3),
        Attribute::new(1, ComponentType::Float, 4),
        Attribute::new(2, ComponentType::Float, 1),
    ]);
    scene.buffer(
        &particles,
        32,
        &[
            Element::Attribute(0),
            Element::Attribute(1),
            Element::Attribute(2),
        ],
    );
    scene.draw_arrays(Topology::Geometry, 0, 12);

    // Fixed-size primitives: four trail points of two outputs each per invocation.
    scene.viewport(half as i32, half as i32, half, half);
    bind(&mut scene, RIBBON_VS, RIBBON_GS, 2);
    scene.uniforms(Stage::Vertex, 0, &identity());
    scene.uniform(Stage::Vertex, 4, [0.22, 0.0, 0.0, 0.0]);
    scene.uniforms(Stage::Geometry, 8, &projection);
    scene.uniform(Stage::Geometry, 12, [0.18, 1.0 / 3.0, 0.0, 0.0]);
    let mut points = Vec::new();
    for trail in 0..3 {
        for k in 0..4 {
            let x = -2.0 + 1.3 * k as f32;
            let y = 1.3 - 1.2 * trail as f32 + 0.5 * (x * 1.7 + trail as f32).sin();
            points.extend(floats(&[x, y, -5.5]));
            let hue = [[1.0, 0.45, 0.2], [0.3, 0.9, 0.4], [0.4, 0.6, 1.0]][trail];
            points.extend(floats(&[hue[0], hue[1], hue[2], 1.0]));
            points.extend(floats(&[k as f32]));
        }
    }
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 3),
        Attribute::new(1, ComponentType::Float, 4),
        Attribute::new(2, ComponentType::Float, 1),
    ]);
    scene.buffer(
        &points,
        32,
        &[
            Element::Attribute(0),
            Element::Attribute(1),
            Element::Attribute(2),
        ],
    );
    scene.draw_elements(Topology::List, &Indices::U8((0..12).collect()));

    // Variable-size primitives: a hexagon and a pentagon, each prefixed by its vertex count
    // (centre plus ring); the centre keeps its colour, ring vertices only their position.
    scene.viewport((half / 2) as i32, 0, half, half);
    bind(&mut scene, FAN_VS, FAN_GS, 2);
    scene.uniforms(Stage::Vertex, 0, &identity());
    scene.uniforms(Stage::Geometry, 16, &projection);
    scene.uniform(Stage::Geometry, 20, [0.45, 0.45, 0.7, 1.0]);
    scene.int(Stage::Geometry, 0, [15, 0, 1, 0]);
    scene.bools(Stage::Geometry, 1);
    let mut fans = Vec::new();
    let mut indices = Vec::new();
    let polygons = [
        (-1.3f32, 0.2f32, 6usize, [1.0, 0.85, 0.3, 1.0]),
        (1.3, -0.1, 5, [0.9, 0.3, 0.8, 1.0]),
    ];
    for (cx, cy, sides, color) in polygons {
        let first = (fans.len() / 28) as u16;
        indices.push(sides as u16 + 1);
        indices.push(first);
        fans.extend(floats(&[cx, cy, -5.0]));
        fans.extend(floats(&color));
        for k in 0..sides {
            let angle = k as f32 / sides as f32 * std::f32::consts::TAU + 0.3;
            indices.push(first + 1 + k as u16);
            fans.extend(floats(&[
                cx + 1.1 * angle.cos(),
                cy + 1.1 * angle.sin(),
                -5.0,
            ]));
            fans.extend(floats(&[0.0, 0.0, 0.0, 1.0]));
        }
    }
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 3),
        Attribute::new(1, ComponentType::Float, 4),
    ]);
    scene.buffer(&fans, 28, &[Element::Attribute(0), Element::Attribute(1)]);
    scene.draw_elements(Topology::List, &Indices::U16(indices));
    scene.end_frame();
    scene.finish()
}
