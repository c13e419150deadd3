//! `gas.ctf`: gas (docs/gpu-fog-and-gas.md, "Gas"; a reconstruction, not hardware-verified) in
//! its two passes. Pass 0 draws a floor and a box with depth. Pass 1 accumulates a column of
//! smoke puffs (each a fan whose alpha, the density, falls from 1 at the centre to 0 at the
//! rim) into an RGBA8 accumulation buffer in fragment-operation mode 1, against the scene's
//! depth (gas depth function 3: puffs in front of the scene; deltaZ fades them where they
//! meet it). Pass 2 draws the accumulation buffer over the scene as a texture in fog mode 7:
//! the depth density, normalised by ACCMAX, gives the opacity; the light factor of planar
//! shading (denser is darker) reads the gas colour table.

use picajit::gpu::builder::{Attribute, Element, SceneBuilder, Stage};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::fragment::gas::gas_lut_from_colors;
use picajit::gpu::fragment::texture::{TextureKind, Wrap};
use picajit::gpu::framebuffer::color::{ColorFormat, DepthFormat};
use picajit::gpu::front::trace::Trace;
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;
use picajit::gpu::regs::id;
use picajit::numbers::FLOAT16;

use super::common::*;

/// View-space positions through the projection (c0-c3); colours from unsigned bytes.
const PROJECTED: &str = "
.fvec projection[4]
.constf k(1.0, 0.00392156863, 0.0, 0.0)
.in inPos v0
.in inColor v1
.out outPos position
.out outColor color
.proc main
    mov r0.xyz, inPos
    mov r0.w, k.xxxx
    dp4 outPos.x, projection[0], r0
    dp4 outPos.y, projection[1], r0
    dp4 outPos.z, projection[2], r0
    dp4 outPos.w, projection[3], r0
    mul outColor, k.yyyy, inColor
    end
.end
";

/// Clip-space positions and texture coordinates in, as they are out.
const PASS_TEXCOORD: &str = include_str!("shaders/pass-texcoord/0-main.v.pica");

/// The accumulation buffer (RGBA8, after the colour and depth buffers).
const ACCUMULATION: u32 = 0x1808_0000;

fn draw(scene: &mut SceneBuilder, data: &[u8], indices: Vec<u16>) {
    draw_colored(scene, data, &indices);
}

/// A quad from its four corners (counter-clockwise).
fn quad(data: &mut Vec<u8>, indices: &mut Vec<u16>, corners: [[f32; 3]; 4], color: [u8; 4]) {
    let base = (data.len() / 16) as u16;
    for corner in corners {
        colored_vertex(data, corner, color);
    }
    indices.extend([base, base + 1, base + 2, base, base + 2, base + 3]);
}

/// The floor (y = −1.2) and a box standing in the smoke's way, in view space.
fn world() -> (Vec<u8>, Vec<u16>) {
    let (mut data, mut indices) = (Vec::new(), Vec::new());
    for row in 0..9 {
        for column in 0..8 {
            let (x, z) = (-4.0 + column as f32, -3.0 - row as f32);
            let shade = if (row + column) % 2 == 0 { 150 } else { 110 };
            let corners = [
                [x, -1.2, z],
                [x + 1.0, -1.2, z],
                [x + 1.0, -1.2, z - 1.0],
                [x, -1.2, z - 1.0],
            ];
            quad(
                &mut data,
                &mut indices,
                corners,
                [shade, shade - 20, shade - 40, 255],
            );
        }
    }
    // The box: its front and top faces.
    let (x0, x1, y0, y1, z0, z1) = (0.3, 1.5, -1.2, 0.2, -5.2, -6.4);
    quad(
        &mut data,
        &mut indices,
        [[x0, y0, z0], [x1, y0, z0], [x1, y1, z0], [x0, y1, z0]],
        [60, 90, 160, 255],
    );
    quad(
        &mut data,
        &mut indices,
        [[x0, y1, z0], [x1, y1, z0], [x1, y1, z1], [x0, y1, z1]],
        [90, 130, 200, 255],
    );
    (data, indices)
}

/// A deterministic value in [0, 1) from `k`.
fn noise(k: u32) -> f32 {
    let h = k
        .wrapping_mul(0x9E37_79B9)
        .rotate_left(13)
        .wrapping_mul(0x85EB_CA6B);
    (h >> 8) as f32 / (1 << 24) as f32
}

/// The smoke: puffs facing the camera, rising and widening from the floor behind the box,
/// each a fan of eight triangles, density (alpha) 1 at the centre and 0 at the rim.
fn puffs() -> (Vec<u8>, Vec<u16>) {
    let (mut data, mut indices) = (Vec::new(), Vec::new());
    for k in 0..36 {
        let rise = k as f32 / 36.0;
        let centre = [
            -0.6 + 1.6 * rise + 0.7 * (noise(3 * k) - 0.5),
            -1.1 + 3.2 * rise,
            -6.0 + 1.4 * (noise(3 * k + 1) - 0.5),
        ];
        let radius = 0.45 + 0.6 * rise + 0.2 * noise(3 * k + 2);
        let density = (110.0 - 50.0 * rise) as u8;
        let base = (data.len() / 16) as u16;
        colored_vertex(&mut data, centre, [255, 255, 255, density]);
        for r in 0..8 {
            let angle = r as f32 * std::f32::consts::TAU / 8.0;
            let rim = [
                centre[0] + radius * angle.cos(),
                centre[1] + radius * angle.sin(),
                centre[2],
            ];
            colored_vertex(&mut data, rim, [255, 255, 255, 0]);
            indices.extend([base, base + 1 + r, base + 1 + (r + 1) % 8]);
        }
    }
    (data, indices)
}

/// Builds the scene.
pub fn build() -> Trace {
    let mut scene = SceneBuilder::new();
    // Pass 0: the scene.
    begin(&mut scene, 0x5A64_78FF);
    scene.program(&shaders(&[("projected.v.pica", PROJECTED)]), 0, None);
    scene.cull(0);
    vertex_color_combiners(&mut scene);
    opaque(&mut scene);
    scene.uniforms(Stage::Vertex, 0, &perspective(1.0, 1.0, 1.0, 20.0));
    let (data, indices) = world();
    draw(&mut scene, &data, indices);
    // Pass 1: density into the accumulation buffer, tested against the scene's depth.
    scene.render_target(
        Some((ACCUMULATION, ColorFormat::Rgba8)),
        Some((DEPTH, DepthFormat::D24S8)),
        (SIZE, SIZE),
    );
    scene.memory_fill(ACCUMULATION, SIZE * SIZE * 4, 0, 32);
    // C3D_GasBeginAcc: the feedback register cleared.
    scene.write_masked(id::GAS_ACCMAX_FEEDBACK, 0, 0x3);
    scene.write_masked(id::COLOR_OPERATION, 1, 0x1);
    // Gas depth function 3 (in front of the scene), deltaZ 60.
    scene.write(id::GAS_DELTAZ_DEPTH, 3 << 24 | 60 << 8);
    let (data, indices) = puffs();
    draw(&mut scene, &data, indices);
    // Pass 2: the accumulation buffer over the scene, shaded as gas.
    scene.render_target(
        Some((COLOR, ColorFormat::Rgba8)),
        Some((DEPTH, DepthFormat::D24S8)),
        (SIZE, SIZE),
    );
    scene.program(
        &shaders(&[("pass-texcoord.v.pica", PASS_TEXCOORD)]),
        0,
        None,
    );
    scene.blend((0, 0), [6, 7, 0, 1], [0; 4]);
    scene.depth_test(false, 1, 0x0F);
    rendered_texture(
        &mut scene,
        TextureKind::Texture2d,
        SIZE,
        ACCUMULATION,
        false,
        (Wrap::ClampToEdge, [0; 4]),
    );
    scene.texture_units(1, false);
    scene.combiner(0, &CombinerStage::new(0, [source::TEXTURE0; 3]));
    // Fog mode 7 with the depth density (bit 3); the table by the light factor (0x122 bit 8);
    // planar shading from 255 (thin) down to 70 (dense), attenuation 230; no view shading.
    scene.fog_mode(7, true, false);
    scene.write(id::GAS_LIGHT_XY, 70 | 255 << 8 | 230 << 16);
    scene.write(id::GAS_LIGHT_Z, 0);
    scene.write(id::GAS_LIGHT_Z_COLOR, 1 << 8);
    // ACCMAX: 1 / 0.8 (what a program sets from the feedback of a pass like this one).
    scene.write(id::GAS_ACCMAX, FLOAT16.from_f32(1.25));
    scene.write(id::GAS_ATTENUATION, FLOAT16.from_f32(0.9));
    let smoke: [[u8; 3]; 9] = std::array::from_fn(|k| {
        let v = 40 + 26 * k as u32;
        [v as u8, (v + 4).min(255) as u8, (v + 12).min(255) as u8]
    });
    scene.write(id::GAS_LUT_INDEX, 0);
    for word in gas_lut_from_colors(&smoke) {
        scene.write(id::GAS_LUT_DATA, word);
    }
    let mut data = Vec::new();
    for (x, y) in [(-1.0f32, -1.0f32), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)] {
        let tex = [(x + 1.0) / 2.0, (y + 1.0) / 2.0, 0.0, 0.0];
        data.extend(floats(&[x, y, -0.5, 1.0]));
        data.extend(floats(&tex));
    }
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 4),
        Attribute::new(1, ComponentType::Float, 4),
    ]);
    scene.buffer(&data, 32, &[Element::Attribute(0), Element::Attribute(1)]);
    scene.draw_arrays(Topology::Strip, 0, 4);
    scene.end_frame();
    scene.finish()
}
