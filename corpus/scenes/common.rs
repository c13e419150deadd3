//! What the example scenes share: the 256×256 render target, clearing, matrices (rows, as the
//! shaders' dp4 rows take them), a pass-through combiner set-up, and assembling shaders.
//! A scene module builds its trace with `picajit::gpu::builder` the way a citro3d application
//! programs the GPU.

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::gpu::builder::{Attribute, Element, Indices, SceneBuilder, TextureSetup};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::fragment::texture::{TextureFormat, TextureKind, UNIT_BASE, Wrap};
use picajit::gpu::framebuffer::color::{ColorFormat, DepthFormat};
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;
use picajit::shbin::Shbin;

/// Render target size.
pub const SIZE: u32 = 256;
/// Colour buffer (VRAM, RGBA8).
pub const COLOR: u32 = 0x1800_0000;
/// Depth buffer (VRAM, D24S8).
pub const DEPTH: u32 = 0x1804_0000;

/// A 4×4 matrix, rows first.
pub type Mat4 = [[f32; 4]; 4];

/// Assembles picasso sources (one DVLE each, in order).
pub fn shaders(sources: &[(&str, &str)]) -> Shbin {
    let files: Vec<SourceFile> = sources
        .iter()
        .map(|(name, text)| SourceFile {
            name: name.to_string(),
            text: text.to_string(),
        })
        .collect();
    assemble(&files, AsmOptions::default())
        .expect("the scene's shaders assemble")
        .shbin
}

/// Binds the 256×256 target and the full viewport, depth = −z/w (near 0, far 1), clears
/// colour to `clear` (RGBA8 word: R << 24 | G << 16 | B << 8 | A) and depth to the far plane.
pub fn begin(scene: &mut SceneBuilder, clear: u32) {
    scene.render_target(
        Some((COLOR, ColorFormat::Rgba8)),
        Some((DEPTH, DepthFormat::D24S8)),
        (SIZE, SIZE),
    );
    scene.viewport(0, 0, SIZE, SIZE);
    scene.depth_map(true, -1.0, 0.0);
    scene.memory_fill(COLOR, SIZE * SIZE * 4, clear, 32);
    scene.memory_fill(DEPTH, SIZE * SIZE * 4, 0x00FF_FFFF, 32);
}

/// Stage 0 takes the vertex colour; the others pass it on.
pub fn vertex_color_combiners(scene: &mut SceneBuilder) {
    scene.combiner(0, &CombinerStage::new(0, [source::PRIMARY; 3]));
    for k in 1..6 {
        scene.combiner(k, &CombinerStage::PASS_THROUGH);
    }
}

/// Replaces the destination (blend ONE, ZERO), the depth test LESS with every write enabled.
pub fn opaque(scene: &mut SceneBuilder) {
    scene.blend((0, 0), [1, 0, 1, 0], [0; 4]);
    scene.depth_test(true, 4, 0x1F);
}

/// Perspective projection onto the PICA's clip space: view-space z = −near maps to z/w = 0,
/// z = −far to z/w = −1; `fovy` in radians, `aspect` width / height.
pub fn perspective(fovy: f32, aspect: f32, near: f32, far: f32) -> Mat4 {
    let f = 1.0 / (fovy / 2.0).tan();
    let a = far / (far - near);
    [
        [f / aspect, 0.0, 0.0, 0.0],
        [0.0, f, 0.0, 0.0],
        [0.0, 0.0, a, a * near],
        [0.0, 0.0, -1.0, 0.0],
    ]
}

/// `a · b`.
pub fn multiply(a: &Mat4, b: &Mat4) -> Mat4 {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..4).map(|k| a[i][k] * b[k][j]).sum()))
}

/// A translation.
pub fn translation(x: f32, y: f32, z: f32) -> Mat4 {
    [
        [1.0, 0.0, 0.0, x],
        [0.0, 1.0, 0.0, y],
        [0.0, 0.0, 1.0, z],
        [0.0, 0.0, 0.0, 1.0],
    ]
}

/// A rotation by `angle` radians about the unit `axis`.
pub fn rotation(axis: [f32; 3], angle: f32) -> Mat4 {
    let (s, c) = angle.sin_cos();
    let [x, y, z] = axis;
    let t = 1.0 - c;
    [
        [t * x * x + c, t * x * y - s * z, t * x * z + s * y, 0.0],
        [t * x * y + s * z, t * y * y + c, t * y * z - s * x, 0.0],
        [t * x * z - s * y, t * y * z + s * x, t * z * z + c, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ]
}

/// `v` scaled to length 1.
pub fn normalize(v: [f32; 3]) -> [f32; 3] {
    let length = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    v.map(|c| c / length)
}

/// a × b.
pub fn cross(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Little-endian bytes of floats.
pub fn floats(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// One vertex of a position (3 floats) and a colour (4 unsigned bytes): 16 bytes.
pub fn colored_vertex(out: &mut Vec<u8>, position: [f32; 3], color: [u8; 4]) {
    out.extend(floats(&position));
    out.extend(color);
}

/// Draws indexed triangles of [`colored_vertex`]es.
pub fn draw_colored(scene: &mut SceneBuilder, data: &[u8], indices: &[u16]) {
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 3),
        Attribute::new(1, ComponentType::UnsignedByte, 4),
    ]);
    scene.buffer(data, 16, &[Element::Attribute(0), Element::Attribute(1)]);
    scene.draw_elements(Topology::List, &Indices::U16(indices.to_vec()));
}

/// Binds texture unit 0 to an RGBA8 picture a pass rendered at `address` (`size` texels,
/// level 0 only), of `kind`, nearest or `linear`, with `wrap` and `border` on both axes.
pub fn rendered_texture(
    scene: &mut SceneBuilder,
    kind: TextureKind,
    size: u32,
    address: u32,
    linear: bool,
    (wrap, border): (Wrap, [u8; 4]),
) {
    scene.texture(
        0,
        &TextureSetup {
            kind,
            format: TextureFormat::Rgba8,
            size: (size, size),
            faces: &[],
            max_level: 0,
            wrap: (wrap, wrap),
            linear: (linear, linear, false),
            lod: (0.0, 0),
            border,
        },
    );
    // No bytes were placed: the unit's address (TEXUNIT0_ADDR1) is the rendered picture's.
    scene.write(UNIT_BASE[0] + 4, address >> 3);
}
