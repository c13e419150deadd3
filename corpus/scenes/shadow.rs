//! `shadow.ctf`: a shadow map rendered in one pass and sampled in the next (docs/gpu-shadows.md).
//! Pass 1 renders, from an orthographic light above, a cube (a hard shadow: green 0 writes
//! depth) and a floating square (a soft shadow: green 150 writes the intensity 150) into a
//! 128 × 128 RGBA8 map in fragment-operation mode 3. Pass 2 draws the floor, the cube and the
//! square from the camera, each colour multiplied by unit 0's shadow lookup (a 2D shadow map,
//! orthographic, with a small bias, linear magnification for soft edges).

use picajit::gpu::builder::{SceneBuilder, Stage};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::fragment::texture::{TextureKind, Wrap};
use picajit::gpu::framebuffer::color::ColorFormat;
use picajit::gpu::front::trace::Trace;
use picajit::gpu::regs::id;

use super::common::*;

/// The vertex shader: the position through `camera`, texture coordinates (u, v) and the depth
/// w through `light` (light space, each in [0, 1]).
const SHADOWED: &str = "
.fvec camera[4], light[4]
.constf one(1.0, 0.00392156863, 0.0, 0.0)
.in inPos v0
.in inColor v1
.out outPos position
.out outTex texcoord0
.out outTexW texcoord0w
.out outColor color
.proc main
    mov r0.xyz, inPos
    mov r0.w, one.x
    dp4 outPos.x, camera[0], r0
    dp4 outPos.y, camera[1], r0
    dp4 outPos.z, camera[2], r0
    dp4 outPos.w, camera[3], r0
    dp4 r1.x, light[0], r0
    dp4 r1.y, light[1], r0
    dp4 r1.z, light[2], r0
    mov r1.w, one.x
    mov outTex, r1
    mov outTexW, r1.zzzz
    mul outColor, one.yyyy, inColor
    end
.end
";

/// The shadow map: 128 × 128 RGBA8 in VRAM after the colour and depth buffers.
const MAP: u32 = 0x1808_0000;
const MAP_SIZE: u32 = 128;

/// Light clip space: looking down from above and slanting (x + 0.7·(y + 1) across, so that
/// shadows fall towards +x), z up the map, the depth from y = 4 (0) to y = −1.5 (1) in clip z
/// 0 to −1.
fn light_clip() -> Mat4 {
    let half = 3.2;
    [
        [1.0 / half, 0.7 / half, 0.0, 0.7 / half],
        [0.0, 0.0, -1.0 / half, 0.0],
        [0.0, 1.0 / 5.5, 0.0, -4.0 / 5.5],
        [0.0, 0.0, 0.0, 1.0],
    ]
}

/// Light clip space to the map's texture space: u = (x + 1)/2, v = (y + 1)/2, depth = −z.
fn light_texture() -> Mat4 {
    let to_texture = [
        [0.5, 0.0, 0.0, 0.5],
        [0.0, 0.5, 0.0, 0.5],
        [0.0, 0.0, -1.0, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ];
    multiply(&to_texture, &light_clip())
}

/// The floor (y = −1, 6 × 6 in a checker of two greys), the cube (side 1.2, its base on the
/// floor) and the square (1.6 wide at y = 1.4, behind the cube and to its right).
fn world() -> [(Vec<u8>, Vec<u16>); 3] {
    let mut floor = (Vec::new(), Vec::new());
    for row in 0..6 {
        for column in 0..6 {
            let (x, z) = (-3.0 + column as f32, -3.0 + row as f32);
            let grey = if (row + column) % 2 == 0 { 225 } else { 185 };
            let base = (floor.0.len() / 16) as u16;
            for (dx, dz) in [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)] {
                colored_vertex(
                    &mut floor.0,
                    [x + dx, -1.0, z + dz],
                    [grey, grey, grey - 10, 255],
                );
            }
            floor
                .1
                .extend([base, base + 1, base + 2, base, base + 2, base + 3]);
        }
    }
    let mut cube = (Vec::new(), Vec::new());
    let faces: [([f32; 3], [f32; 3], [u8; 4]); 6] = [
        ([0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [220, 80, 70, 255]),
        ([0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [220, 80, 70, 255]),
        ([1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [190, 60, 60, 255]),
        ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [190, 60, 60, 255]),
        ([0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [240, 110, 90, 255]),
        ([0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [150, 50, 50, 255]),
    ];
    for (k, (n, u, color)) in faces.iter().enumerate() {
        let v = cross(*n, *u);
        for (su, sv) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
            let p: [f32; 3] = std::array::from_fn(|c| 0.6 * (n[c] + su * u[c] + sv * v[c]));
            colored_vertex(&mut cube.0, [p[0] - 0.9, p[1] - 0.4, p[2] - 0.3], *color);
        }
        let base = 4 * k as u16;
        cube.1
            .extend([base, base + 1, base + 2, base, base + 2, base + 3]);
    }
    let mut square = (Vec::new(), Vec::new());
    for (x, z) in [(-0.2, -1.6), (1.4, -1.6), (1.4, 0.0), (-0.2, 0.0)] {
        colored_vertex(&mut square.0, [x, 1.4, z], [90, 140, 220, 255]);
    }
    square.1.extend([0, 1, 2, 0, 2, 3]);
    [floor, cube, square]
}

fn draw(scene: &mut SceneBuilder, (data, indices): &(Vec<u8>, Vec<u16>)) {
    draw_colored(scene, data, indices);
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    let program = shaders(&[("shadowed.v.pica", SHADOWED)]);
    scene.program(&program, 0, None);
    scene.cull(0);
    let [floor, cube, square] = world();
    // Pass 1: the map, cleared to the farthest depth and full light.
    scene.render_target(Some((MAP, ColorFormat::Rgba8)), None, (MAP_SIZE, MAP_SIZE));
    scene.viewport(0, 0, MAP_SIZE, MAP_SIZE);
    scene.depth_map(true, -1.0, 0.0);
    scene.memory_fill(MAP, MAP_SIZE * MAP_SIZE * 4, 0xFFFF_FFFF, 32);
    scene.uniforms(Stage::Vertex, 0, &light_clip());
    scene.write_masked(id::COLOR_OPERATION, 3, 0x1);
    // Soft shadows: intensity = green / (1 + 0 · ratio).
    scene.write(id::FRAGOP_SHADOW, 0x3C00);
    let constant = |green: u8| {
        let mut stage = CombinerStage::new(0, [source::CONSTANT; 3]);
        stage.constant = [0, green, 0, 255];
        stage
    };
    for k in 1..6 {
        scene.combiner(k, &CombinerStage::PASS_THROUGH);
    }
    scene.combiner(0, &constant(0));
    draw(&mut scene, &cube);
    scene.combiner(0, &constant(150));
    draw(&mut scene, &square);
    // Pass 2: the camera's view, each colour times the shadow lookup.
    scene.write_masked(id::COLOR_OPERATION, 0, 0x1);
    begin(&mut scene, 0x2030_40FF);
    scene.blend((0, 0), [1, 0, 1, 0], [0; 4]);
    scene.depth_test(true, 4, 0x1F);
    let view = multiply(
        &translation(0.0, -0.2, -7.5),
        &multiply(
            &rotation([1.0, 0.0, 0.0], 0.6),
            &rotation([0.0, 1.0, 0.0], -0.5),
        ),
    );
    scene.uniforms(
        Stage::Vertex,
        0,
        &multiply(&perspective(0.9, 1.0, 1.0, 20.0), &view),
    );
    scene.uniforms(Stage::Vertex, 4, &light_texture());
    // Outside the map: the farthest depth, full light.
    rendered_texture(
        &mut scene,
        TextureKind::Shadow2d,
        MAP_SIZE,
        MAP,
        true,
        (Wrap::ClampToBorder, [0xFF; 4]),
    );
    // Orthographic, bias 0x400 (a 24-bit depth) against self-shadowing.
    scene.shadow_lookup(true, 0x400);
    scene.texture_units(1, false);
    // RGB: the vertex colour times the lookup; alpha: the vertex colour's.
    let mut shadowed = CombinerStage::new(1, [source::PRIMARY, source::TEXTURE0, source::PRIMARY]);
    shadowed.alpha_op = 0;
    shadowed.alpha_sources = [source::PRIMARY; 3];
    scene.combiner(0, &shadowed);
    for part in [&floor, &cube, &square] {
        draw(&mut scene, part);
    }
    scene.end_frame();
    scene.finish()
}
