//! `coverage.ctf`: a 5×5 grid of 48-pixel tiles. Row 1 (top): every topology (a triangle
//! list, a strip, a fan, an indexed list drawn as geometry primitives, immediate-mode
//! vertices). Row 2: every attribute component type (float, short, byte, unsigned byte, in
//! one to four components, with padding and a fixed colour). Rows 3 and 4: every combiner
//! operation (replace, modulate, add, add signed, interpolate, subtract, dot3 RGB, dot3 RGBA,
//! multiply-add, add-multiply) on a vertex-colour gradient and a constant. Row 5: a 4× scale,
//! the combiner buffer, a source-alpha blend over a stripe and a logic op (XOR) over one.

use picajit::gpu::builder::{Attribute, Element, Indices, SceneBuilder, Stage};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;

use super::common::*;

/// position = scale · inPos + offset; colour = colourScale · inColor.
pub const TILE_VERTEX: &str = "
; uniforms: scale c0, offset c1, colorScale c2
.fvec scale, offset, colorScale
.in inPos v0
.in inColor v1
.out outPos position
.out outColor color
.proc main
    mul r0, scale, inPos
    add outPos, offset, r0
    mul outColor, colorScale, inColor
    end
.end
";

const TILE: f32 = 48.0;
const MARGIN: f32 = 8.0;

/// Maps the unit square to tile (column, row from the top), shrunk by `unit` (the largest
/// coordinate the tile's data uses).
fn place(scene: &mut SceneBuilder, column: u32, row: u32, unit: f32, color_scale: f32) {
    let half = SIZE as f32 / 2.0;
    let inner = TILE - 8.0;
    let x0 = MARGIN + column as f32 * TILE + 4.0;
    let y0 = SIZE as f32 - MARGIN - (row + 1) as f32 * TILE + 4.0;
    let s = inner / half / unit;
    scene.uniform(Stage::Vertex, 0, [s, s, 0.0, 0.0]);
    scene.uniform(
        Stage::Vertex,
        1,
        [x0 / half - 1.0, y0 / half - 1.0, -0.5, 1.0],
    );
    // Alpha stays 1 (the image's alpha channel is the buffer's).
    scene.uniform(
        Stage::Vertex,
        2,
        [color_scale, color_scale, color_scale, 1.0],
    );
}

fn float_buffer(scene: &mut SceneBuilder, vertices: &[([f32; 2], [f32; 4])]) {
    let mut data = Vec::new();
    for (p, c) in vertices {
        data.extend(floats(p));
        data.extend(floats(c));
    }
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 2),
        Attribute::new(1, ComponentType::Float, 4),
    ]);
    scene.buffer(&data, 24, &[Element::Attribute(0), Element::Attribute(1)]);
}

fn hue(k: usize) -> [f32; 4] {
    let t = k as f32 * 0.9;
    [
        0.5 + 0.5 * t.cos(),
        0.5 + 0.5 * (t + 2.1).cos(),
        0.5 + 0.5 * (t + 4.2).cos(),
        1.0,
    ]
}

fn topologies(scene: &mut SceneBuilder) {
    let list = [
        [0.0, 0.0],
        [1.0, 0.0],
        [0.0, 1.0],
        [1.0, 0.25],
        [1.0, 1.0],
        [0.25, 1.0],
    ];
    let strip = [
        [0.0, 0.0],
        [0.0, 1.0],
        [0.33, 0.2],
        [0.5, 1.0],
        [0.75, 0.0],
        [1.0, 0.8],
    ];
    let mut fan = vec![[0.5, 0.5]];
    for k in 0..8 {
        let angle = k as f32 / 7.0 * 4.7;
        fan.push([0.5 + 0.5 * angle.cos(), 0.5 + 0.5 * angle.sin()]);
    }
    let shapes: [(&[[f32; 2]], Topology); 3] = [
        (&list, Topology::List),
        (&strip, Topology::Strip),
        (&fan, Topology::Fan),
    ];
    for (column, (points, topology)) in shapes.into_iter().enumerate() {
        place(scene, column as u32, 0, 1.0, 1.0);
        let vertices: Vec<_> = points
            .iter()
            .enumerate()
            .map(|(k, &p)| (p, hue(k)))
            .collect();
        float_buffer(scene, &vertices);
        scene.draw_arrays(topology, 0, vertices.len() as u32);
    }
    // An indexed list (drawn with the geometry topology, as citro3d does): a quad with a
    // notch, five vertices.
    place(scene, 3, 0, 1.0, 1.0);
    let quad = [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.6]];
    let vertices: Vec<_> = quad
        .iter()
        .enumerate()
        .map(|(k, &p)| (p, hue(k + 3)))
        .collect();
    float_buffer(scene, &vertices);
    scene.draw_elements(
        Topology::List,
        &Indices::U8(vec![0, 1, 4, 1, 3, 4, 3, 2, 4]),
    );
    // Immediate mode: a strip sent attribute by attribute.
    place(scene, 4, 0, 1.0, 1.0);
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 4),
        Attribute::new(1, ComponentType::Float, 4),
    ]);
    let vertices: Vec<Vec<[f32; 4]>> = [[0.0, 0.2], [0.2, 1.0], [0.8, 0.0], [1.0, 0.8]]
        .iter()
        .enumerate()
        .map(|(k, p)| vec![[p[0], p[1], 0.0, 1.0], hue(k + 5)])
        .collect();
    scene.draw_immediate(Topology::Strip, &vertices);
}

fn formats(scene: &mut SceneBuilder) {
    let corners = [[0u8, 0], [1, 0], [0, 1], [1, 1]];
    // Float positions (3 components) and unsigned-byte colours (4), stride 16.
    place(scene, 0, 1, 1.0, 1.0 / 255.0);
    let mut data = Vec::new();
    for (k, c) in corners.iter().enumerate() {
        data.extend(floats(&[c[0] as f32, c[1] as f32, 0.0]));
        data.extend(hue(k).map(|v| (v * 255.0) as u8));
    }
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 3),
        Attribute::new(1, ComponentType::UnsignedByte, 4),
    ]);
    scene.buffer(&data, 16, &[Element::Attribute(0), Element::Attribute(1)]);
    scene.draw_arrays(Topology::Strip, 0, 4);
    // Short positions (2) and byte colours (3; alpha defaults to 1 and scales away), with 4
    // bytes of padding: the colours are aligned after it.
    place(scene, 1, 1, 1000.0, 1.0 / 127.0);
    let mut data = Vec::new();
    for (k, c) in corners.iter().enumerate() {
        data.extend((c[0] as i16 * 1000).to_le_bytes());
        data.extend((c[1] as i16 * 1000).to_le_bytes());
        data.extend([0xEE; 4]);
        data.extend(hue(k + 1)[..3].iter().map(|v| (v * 127.0) as i8 as u8));
        data.push(0xEE);
    }
    scene.attributes(&[
        Attribute::new(0, ComponentType::Short, 2),
        Attribute::new(1, ComponentType::Byte, 3),
    ]);
    scene.buffer(
        &data,
        12,
        &[
            Element::Attribute(0),
            Element::Padding(4),
            Element::Attribute(1),
        ],
    );
    scene.draw_arrays(Topology::Strip, 0, 4);
    // Byte positions (2) and short colours (4), in two arrays.
    place(scene, 2, 1, 100.0, 1.0 / 32767.0);
    let positions: Vec<u8> = corners
        .iter()
        .flat_map(|c| [c[0] * 100, c[1] * 100])
        .collect();
    let colors: Vec<u8> = (0..4)
        .flat_map(|k| hue(k + 2).map(|v| (v * 32767.0) as i16))
        .flat_map(|v| v.to_le_bytes())
        .collect();
    scene.attributes(&[
        Attribute::new(0, ComponentType::Byte, 2),
        Attribute::new(1, ComponentType::Short, 4),
    ]);
    scene.buffer(&positions, 2, &[Element::Attribute(0)]);
    scene.buffer(&colors, 8, &[Element::Attribute(1)]);
    scene.draw_arrays(Topology::Strip, 0, 4);
    // Unsigned-byte positions (1 component: y defaults to 0) cannot draw a quad; two
    // components, plus a fixed colour attribute no array loads.
    place(scene, 3, 1, 255.0, 1.0);
    let positions: Vec<u8> = corners
        .iter()
        .flat_map(|c| [c[0] * 255, c[1] * 255])
        .collect();
    scene.attributes(&[
        Attribute::new(0, ComponentType::UnsignedByte, 2),
        Attribute::new(1, ComponentType::Float, 4),
    ]);
    scene.fixed_attribute(1, [0.95, 0.55, 0.15, 1.0]);
    scene.buffer(&positions, 2, &[Element::Attribute(0)]);
    scene.draw_arrays(Topology::Strip, 0, 4);
    // One float component of position: x only, y = 0, so a triangle list of degenerate
    // triangles draws nothing; the tile stays empty on purpose (1-component attributes load).
    place(scene, 4, 1, 1.0, 1.0);
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 1),
        Attribute::new(1, ComponentType::Float, 4),
    ]);
    scene.buffer(&floats(&[0.0, 1.0, 0.5]), 4, &[Element::Attribute(0)]);
    scene.draw_arrays(Topology::List, 0, 3);
}

fn combiners(scene: &mut SceneBuilder) {
    let gradient = [
        ([0.0, 0.0], [1.0, 0.1, 0.1, 0.0]),
        ([1.0, 0.0], [0.1, 1.0, 0.2, 0.5]),
        ([0.0, 1.0], [0.2, 0.3, 1.0, 0.5]),
        ([1.0, 1.0], [1.0, 1.0, 1.0, 1.0]),
    ];
    // The RGB operation under test; alpha replaced by the constant's (opaque).
    let constant = [150, 80, 210, 255];
    let stage = |op: u8| CombinerStage {
        rgb_operands: [0, 0, 2],
        alpha_sources: [source::CONSTANT; 3],
        alpha_op: 0,
        constant,
        ..CombinerStage::new(op, [source::PRIMARY, source::CONSTANT, source::PRIMARY])
    };
    let mut tiles: Vec<CombinerStage> = (0..10).map(stage).collect();
    let mut scaled = stage(1);
    scaled.rgb_scale = 4;
    tiles.push(scaled);
    for (k, combiner) in tiles.iter().enumerate() {
        let (column, row) = (k as u32 % 5, 2 + k as u32 / 5);
        place(scene, column, row, 1.0, 1.0);
        scene.combiner(0, combiner);
        float_buffer(scene, &gradient);
        scene.draw_arrays(Topology::Strip, 0, 4);
    }
    // The combiner buffer: stage 0 (the constant) goes to the buffer; stage 1 takes the vertex
    // colour; stage 2 interpolates between them by the vertex alpha.
    place(scene, 1, 4, 1.0, 1.0);
    scene.combiner(
        0,
        &CombinerStage::new(0, [source::CONSTANT; 3]).with_constant(constant),
    );
    scene.combiner(1, &CombinerStage::new(0, [source::PRIMARY; 3]));
    let mut lerp = CombinerStage::new(
        4,
        [source::PREVIOUS, source::PREVIOUS_BUFFER, source::PRIMARY],
    );
    lerp.rgb_operands = [0, 0, 2];
    scene.combiner(2, &lerp);
    scene.combiner_buffer(1, 1, [0; 4]);
    float_buffer(scene, &gradient);
    scene.draw_arrays(Topology::Strip, 0, 4);
    scene.combiner(0, &CombinerStage::new(0, [source::PRIMARY; 3]));
    scene.combiner(1, &CombinerStage::PASS_THROUGH);
    scene.combiner(2, &CombinerStage::PASS_THROUGH);
    scene.combiner_buffer(0, 0, [0; 4]);
    // Blending by source alpha, then a logic op, each over an opaque stripe.
    for (column, blend) in [(2u32, true), (3, false)] {
        place(scene, column, 4, 1.0, 1.0);
        float_buffer(
            scene,
            &[
                ([0.3, 0.0], [1.0, 1.0, 0.2, 1.0]),
                ([0.7, 0.0], [1.0, 1.0, 0.2, 1.0]),
                ([0.3, 1.0], [1.0, 1.0, 0.2, 1.0]),
                ([0.7, 1.0], [1.0, 1.0, 0.2, 1.0]),
            ],
        );
        scene.draw_arrays(Topology::Strip, 0, 4);
        if blend {
            scene.blend((0, 0), [6, 7, 6, 7], [0; 4]);
        } else {
            scene.logic_op(11);
        }
        scene.depth_test(false, 1, 0x0F);
        float_buffer(scene, &gradient);
        scene.draw_arrays(Topology::Strip, 0, 4);
        opaque(scene);
    }
}

/// Builds the scene.
pub fn build() -> Trace {
    let program = shaders(&[("tile.v.pica", TILE_VERTEX)]);
    let mut scene = SceneBuilder::new();
    begin(&mut scene, 0x2020_28FF);
    scene.program(&program, 0, None);
    vertex_color_combiners(&mut scene);
    opaque(&mut scene);
    scene.cull(0);
    topologies(&mut scene);
    formats(&mut scene);
    combiners(&mut scene);
    scene.end_frame();
    scene.finish()
}
