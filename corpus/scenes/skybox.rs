//! `skybox.ctf`: a cube map around the camera. The six faces of a cube of side 2 centred on the
//! eye, seen from inside (no culling), each vertex's texture coordinate its own position, so
//! that unit 0 (type cube map, 64 × 64 RGB565 faces, linear filtering) looks up the view
//! direction. Each face has its own colour, a grid, and an arrow pointing to its top (on the
//! walls, up); the camera looks down and to the right, at the corner where the floor (−Y,
//! brown) meets the −Z (purple) and +X (red) walls.

use picajit::gpu::builder::{Attribute, Element, Indices, SceneBuilder, Stage, TextureSetup};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::fragment::texture::{CUBE_FACES, TextureFormat, TextureKind, Wrap, encode};
use picajit::gpu::framebuffer::color::Rgba8;
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;

use super::common::*;

/// Rotation only (the eye at the centre); the direction is the model-space position.
const SKYBOX: &str = "
.fvec projection[4], view[4]
.constf one(1.0, 1.0, 1.0, 1.0)
.in inPos v0
.out outPos position
.out outTex texcoord0
.out outTexW texcoord0w
.out outColor color
.proc main
    dp4 r0.x, view[0], inPos
    dp4 r0.y, view[1], inPos
    dp4 r0.z, view[2], inPos
    mov r0.w, one.w
    dp4 outPos.x, projection[0], r0
    dp4 outPos.y, projection[1], r0
    dp4 outPos.z, projection[2], r0
    dp4 outPos.w, projection[3], r0
    mov outTex, inPos
    mov outTexW, inPos.zzzz
    mov outColor, one
    end
.end
";

/// Face side in texels.
const FACE: u32 = 64;

/// Face `face`'s picture at column `x` and row `y` counted from the top: its colour darkening
/// downwards, grid lines every 8 texels, and a white arrow in the upper half pointing to the
/// top row.
pub fn face_picture(face: usize, x: u32, y: u32) -> Rgba8 {
    const COLORS: [[f32; 3]; CUBE_FACES] = [
        [0.9, 0.3, 0.25],
        [0.25, 0.75, 0.9],
        [0.95, 0.85, 0.3],
        [0.35, 0.3, 0.25],
        [0.3, 0.8, 0.35],
        [0.7, 0.35, 0.85],
    ];
    let shade = 1.0 - 0.5 * y as f32 / FACE as f32;
    let grid = x.is_multiple_of(8) || y.is_multiple_of(8);
    // The arrow: a triangle with its tip at (32, 6) widening to row 26, then a shaft.
    let dx = (x as i32 - 32).unsigned_abs();
    let arrow = (6..26).contains(&y) && dx <= (y - 6) / 2 || (26..40).contains(&y) && dx <= 3;
    if arrow {
        return [255, 255, 255, 255];
    }
    let [r, g, b] = COLORS[face].map(|c| {
        let v = c * shade * if grid { 0.6 } else { 1.0 };
        (v * 255.0) as u8
    });
    [r, g, b, 255]
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    begin(&mut scene, 0x0000_00FF);
    scene.program(&shaders(&[("skybox.v.pica", SKYBOX)]), 0, None);
    scene.cull(0);
    scene.depth_test(false, 1, 0x0F);
    scene.blend((0, 0), [1, 0, 1, 0], [0; 4]);
    scene.uniforms(Stage::Vertex, 0, &perspective(1.6, 1.0, 0.1, 10.0));
    let view = multiply(
        &rotation([1.0, 0.0, 0.0], 0.45),
        &rotation([0.0, 1.0, 0.0], 0.6),
    );
    scene.uniforms(Stage::Vertex, 4, &view);
    let faces: Vec<Vec<u8>> = (0..CUBE_FACES)
        .map(|face| {
            // Stored upside down, the last memory row holding the picture's top row, as the
            // PICA's cube faces are (docs/gpu-texturing.md, "Cube maps").
            let texels: Vec<Rgba8> = (0..FACE * FACE)
                .map(|k| face_picture(face, k % FACE, FACE - 1 - k / FACE))
                .collect();
            encode(TextureFormat::Rgb565, FACE, FACE, &texels)
        })
        .collect();
    scene.texture(
        0,
        &TextureSetup {
            kind: TextureKind::CubeMap,
            format: TextureFormat::Rgb565,
            size: (FACE, FACE),
            faces: &faces,
            max_level: 0,
            wrap: (Wrap::ClampToEdge, Wrap::ClampToEdge),
            linear: (true, true, false),
            lod: (0.0, 0),
            border: [0; 4],
        },
    );
    scene.texture_units(1, false);
    scene.combiner(0, &CombinerStage::new(0, [source::TEXTURE0; 3]));
    for k in 1..6 {
        scene.combiner(k, &CombinerStage::PASS_THROUGH);
    }
    // The cube's eight corners and its six faces as triangle pairs.
    let corners: Vec<u8> = (0..8)
        .flat_map(|k| {
            let c = |bit: u32| if k & bit != 0 { 1.0 } else { -1.0 };
            floats(&[c(1), c(2), c(4)])
        })
        .collect();
    let quads: [[u16; 4]; 6] = [
        [1, 3, 7, 5],
        [0, 4, 6, 2],
        [2, 6, 7, 3],
        [0, 1, 5, 4],
        [4, 5, 7, 6],
        [0, 2, 3, 1],
    ];
    let indices: Vec<u16> = quads
        .iter()
        .flat_map(|[a, b, c, d]| [*a, *b, *c, *a, *c, *d])
        .collect();
    scene.attributes(&[Attribute::new(0, ComponentType::Float, 3)]);
    scene.buffer(&corners, 12, &[Element::Attribute(0)]);
    scene.draw_elements(Topology::List, &Indices::U16(indices));
    scene.end_frame();
    scene.finish()
}
