//! The software GPU's back half on small scenes built with the builder API, checked against
//! analytic facts: covered pixel counts and the fill rule on shared edges, exact colours of
//! flat fills, interpolation, depth ordering, culling, scissor, clipping, blending, combiners,
//! stencil, every colour and depth format, the tiled layout, and identical images on any
//! number of threads.

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::engine::EngineKind;
use picajit::gpu::builder::{Attribute, Element, SceneBuilder};
use picajit::gpu::fragment::combiner::{CombinerStage, source};
use picajit::gpu::framebuffer::color::{ColorFormat, DepthFormat, Rgba8};
use picajit::gpu::framebuffer::image::Image;
use picajit::gpu::front::trace::{self, Trace};
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;
use picajit::gpu::regs::id;
use picajit::gpu::{Gpu, GpuConfig};

mod common;

use common::{color_image as image, render_trace};

const PASS_THROUGH: &str = "
.out outPos position
.out outColor color
.proc main
    mov outPos, v0
    mov outColor, v1
    end
.end
";

const SIZE: u32 = 64;
const COLOR: u32 = 0x1800_0000;
const DEPTH: u32 = 0x1804_0000;

/// A vertex: screen position in pixels (x, y up from the bottom), NDC depth, colour.
type V = ([f32; 3], [f32; 4]);

fn v(x: f32, y: f32, z: f32, color: [f32; 4]) -> V {
    ([x, y, z], color)
}

/// The strip of the rectangle from (x0, y0) to (x1, y1) at depth z.
fn rect(x0: f32, y0: f32, x1: f32, y1: f32, z: f32, color: [f32; 4]) -> [V; 4] {
    [
        v(x0, y0, z, color),
        v(x1, y0, z, color),
        v(x0, y1, z, color),
        v(x1, y1, z, color),
    ]
}

struct Scene {
    builder: SceneBuilder,
    color_format: ColorFormat,
    depth_format: DepthFormat,
}

impl Scene {
    fn new() -> Scene {
        Scene::with_formats(ColorFormat::Rgba8, DepthFormat::D24S8)
    }

    fn with_formats(color_format: ColorFormat, depth_format: DepthFormat) -> Scene {
        let files = [SourceFile {
            name: "vs.pica".into(),
            text: PASS_THROUGH.into(),
        }];
        let program = assemble(&files, AsmOptions::default()).unwrap().shbin;
        let mut builder = SceneBuilder::new();
        builder.program(&program, 0, None);
        builder.render_target(
            Some((COLOR, color_format)),
            Some((DEPTH, depth_format)),
            (SIZE, SIZE),
        );
        builder.viewport(0, 0, SIZE, SIZE);
        // depth = -z: NDC z in [-1, 0] maps to [1, 0].
        builder.depth_map(true, -1.0, 0.0);
        builder.cull(0);
        builder.combiner(0, &CombinerStage::new(0, [source::PRIMARY; 3]));
        for k in 1..6 {
            builder.combiner(k, &CombinerStage::PASS_THROUGH);
        }
        builder.blend((0, 0), [1, 0, 1, 0], [0; 4]);
        builder.depth_test(false, 1, 0x1F);
        let mut scene = Scene {
            builder,
            color_format,
            depth_format,
        };
        scene.clear(0x0000_00FF, 0x00FF_FFFF);
        scene
    }

    fn clear(&mut self, color: u32, depth: u32) {
        let pixels = SIZE * SIZE;
        let color_width = match self.color_format.bytes() {
            2 => 16,
            3 => 24,
            _ => 32,
        };
        let depth_width = match self.depth_format.bytes() {
            2 => 16,
            3 => 24,
            _ => 32,
        };
        self.builder.memory_fill(
            COLOR,
            pixels * self.color_format.bytes() as u32,
            color,
            color_width,
        );
        self.builder.memory_fill(
            DEPTH,
            pixels * self.depth_format.bytes() as u32,
            depth,
            depth_width,
        );
    }

    /// Draws `vertices` (screen pixels) as `topology`.
    fn draw(&mut self, topology: Topology, vertices: &[V]) {
        let half = SIZE as f32 / 2.0;
        let mut data = Vec::new();
        for (p, c) in vertices {
            let clip = [p[0] / half - 1.0, p[1] / half - 1.0, p[2], 1.0];
            data.extend(clip.iter().chain(c).flat_map(|f| f.to_le_bytes()));
        }
        self.builder.attributes(&[
            Attribute::new(0, ComponentType::Float, 4),
            Attribute::new(1, ComponentType::Float, 4),
        ]);
        self.builder
            .buffer(&data, 32, &[Element::Attribute(0), Element::Attribute(1)]);
        self.builder.draw_arrays(topology, 0, vertices.len() as u32);
    }

    fn render_on(self, threads: usize) -> Gpu {
        let trace = self.builder.finish();
        render(&trace, threads)
    }

    fn render(self) -> Gpu {
        self.render_on(1)
    }
}

fn render(trace: &Trace, threads: usize) -> Gpu {
    render_trace(trace, EngineKind::Interpreter, threads)
}

/// The colour at rasterizer pixel (x, y) (y up).
fn at(image: &Image, x: u32, y: u32) -> Rgba8 {
    image.pixels[((image.height - 1 - y) * image.width + x) as usize]
}

fn count(image: &Image, color: Rgba8) -> usize {
    image.pixels.iter().filter(|&&p| p == color).count()
}

const RED: [f32; 4] = [1.0, 0.0, 0.0, 1.0];
const GREEN: [f32; 4] = [0.0, 1.0, 0.0, 1.0];
const BLUE: [f32; 4] = [0.0, 0.0, 1.0, 1.0];
const BACKGROUND: Rgba8 = [0, 0, 0, 255];

#[test]
fn a_right_triangle_covers_the_pixels_whose_centres_it_contains() {
    let mut scene = Scene::new();
    scene.draw(
        Topology::List,
        &[
            v(0.0, 0.0, -0.5, RED),
            v(16.0, 0.0, -0.5, RED),
            v(0.0, 16.0, -0.5, RED),
        ],
    );
    let image = image(&scene.render());
    // Centres (x + 0.5, y + 0.5) with x + y < 15 are inside; those with x + y = 15 lie on the
    // hypotenuse, a right edge, which the fill rule leaves out.
    assert_eq!(count(&image, [255, 0, 0, 255]), 120);
    assert_eq!(at(&image, 14, 0), [255, 0, 0, 255]);
    assert_eq!(at(&image, 15, 0), BACKGROUND);
    assert_eq!(at(&image, 0, 14), [255, 0, 0, 255]);
}

#[test]
fn shared_edges_are_covered_exactly_once() {
    // Additive blending: a pixel covered twice would read 2 in green.
    let mut scene = Scene::new();
    scene.builder.blend((0, 0), [1, 1, 1, 1], [0; 4]);
    scene.clear(0x0000_0000, 0x00FF_FFFF);
    let g = [0.0, 1.0 / 255.0, 0.0, 0.0];
    // A 20x20 square as two triangles, a fan around a centre (four triangles) at an odd
    // position, and a strip: every interior edge is shared.
    scene.draw(Topology::Strip, &rect(2.0, 2.0, 22.0, 22.0, -0.5, g));
    scene.draw(
        Topology::Fan,
        &[
            v(40.3, 40.7, -0.5, g),
            v(30.0, 30.0, -0.5, g),
            v(50.0, 30.0, -0.5, g),
            v(50.0, 50.0, -0.5, g),
            v(30.0, 50.0, -0.5, g),
            v(30.0, 30.0, -0.5, g),
        ],
    );
    let image = image(&scene.render());
    assert_eq!(count(&image, [0, 1, 0, 0]), 400 + 400);
    assert_eq!(count(&image, [0, 2, 0, 0]), 0);
}

/// A small expected image, derived by hand from the coverage rule of docs/gpu.md (a pixel is
/// covered when its centre is inside; a centre exactly on an edge counts only for left and
/// bottom edges): a rectangle with integer corners, two right triangles sharing a diagonal
/// through pixel centres (the left-edge triangle takes them), and a triangle whose bottom
/// edge and left edge pass through centres while its right edge passes through one.
#[test]
fn a_small_scene_matches_its_hand_derived_image() {
    const EXPECTED: [&str; 15] = [
        "................",
        "................",
        "...MM...........",
        "..MMM...........",
        "..MMMM..........",
        ".MMMMMM.........",
        "................",
        "................",
        "........BBBBBB..",
        "........GBBBBB..",
        ".RRRRRR.GGBBBB..",
        ".RRRRRR.GGGBBB..",
        ".RRRRRR.GGGGBB..",
        ".RRRRRR.GGGGGB..",
        "................",
    ];
    const MAGENTA: [f32; 4] = [1.0, 0.0, 1.0, 1.0];
    let mut scene = Scene::new();
    scene.draw(Topology::Strip, &rect(1.0, 1.0, 7.0, 5.0, -0.5, RED));
    scene.draw(
        Topology::List,
        &[
            v(8.0, 1.0, -0.5, GREEN),
            v(14.0, 1.0, -0.5, GREEN),
            v(8.0, 7.0, -0.5, GREEN),
            v(14.0, 1.0, -0.5, BLUE),
            v(14.0, 7.0, -0.5, BLUE),
            v(8.0, 7.0, -0.5, BLUE),
            v(1.0, 9.5, -0.5, MAGENTA),
            v(7.0, 9.5, -0.5, MAGENTA),
            v(4.0, 13.5, -0.5, MAGENTA),
        ],
    );
    let image = image(&scene.render());
    for y in 0..SIZE {
        for x in 0..SIZE {
            let code = EXPECTED
                .get(EXPECTED.len().wrapping_sub(1 + y as usize))
                .and_then(|row| row.as_bytes().get(x as usize))
                .copied()
                .unwrap_or(b'.');
            let expected = match code {
                b'R' => [255, 0, 0, 255],
                b'G' => [0, 255, 0, 255],
                b'B' => [0, 0, 255, 255],
                b'M' => [255, 0, 255, 255],
                _ => BACKGROUND,
            };
            assert_eq!(at(&image, x, y), expected, "pixel ({x}, {y})");
        }
    }
}

#[test]
fn flat_colours_are_exact_and_colours_interpolate_linearly_at_w_one() {
    let mut scene = Scene::new();
    let gray = [0.5, 0.25, 1.0, 0.75];
    scene.draw(Topology::Strip, &rect(0.0, 0.0, 8.0, 8.0, -0.5, gray));
    // A horizontal ramp from 0 to 1 over 32 pixels: the centre of pixel x samples (x + 0.5)/32.
    scene.draw(
        Topology::Strip,
        &[
            v(16.0, 16.0, -0.5, [0.0, 0.0, 0.0, 1.0]),
            v(48.0, 16.0, -0.5, [1.0, 0.0, 0.0, 1.0]),
            v(16.0, 24.0, -0.5, [0.0, 0.0, 0.0, 1.0]),
            v(48.0, 24.0, -0.5, [1.0, 0.0, 0.0, 1.0]),
        ],
    );
    let image = image(&scene.render());
    // round(0.5 * 255) = 128, round(0.25 * 255) = 64, round(0.75 * 255) = 191.
    assert_eq!(count(&image, [128, 64, 255, 191]), 64);
    for x in [16u32, 20, 31, 47] {
        let expected = (((x - 16) as f32 + 0.5) / 32.0 * 255.0).round() as u8;
        let red = at(&image, x, 20)[0];
        assert!(
            red.abs_diff(expected) <= 1,
            "pixel {x}: {red} against {expected}"
        );
    }
}

/// The fog table whose entry i is 16·i with difference 16: factor(depth) = 2048·depth/2047
/// (docs/gpu-fog-and-gas.md).
fn linear_fog_table() -> [u32; 128] {
    std::array::from_fn(|i| (16 * i as u32) << 13 | 16)
}

/// Fog on flat rectangles at known depths, against the rule worked by hand: the factor is the
/// table at 128·depth (128·(1 − depth) flipped), and each of R, G, B becomes
/// factor·colour + (1 − factor)·fog colour, truncated; alpha stays; fog mode 0 leaves the
/// colour alone.
#[test]
fn fog_mixes_by_the_table_at_the_depth() {
    let mut scene = Scene::new();
    scene.builder.fog_lut(&linear_fog_table());
    scene.builder.fog_color([0, 0, 255]);
    let red = [1.0, 0.0, 0.0, 0.6];
    // Depth 0.25: factor 512/2047. R = 255·512/2047 = 63.78, B = 255·1535/2047 = 191.22.
    scene.builder.fog_mode(5, false, false);
    scene.draw(Topology::Strip, &rect(0.0, 0.0, 16.0, 16.0, -0.25, red));
    // Flipped: index 96, factor 1536/2047. R = 191.34, B = 63.66.
    scene.builder.fog_mode(5, false, true);
    scene.draw(Topology::Strip, &rect(16.0, 0.0, 32.0, 16.0, -0.25, red));
    // Depth 0.5: factor 1024/2047. R = 127.56, B = 127.44.
    scene.draw(Topology::Strip, &rect(32.0, 0.0, 48.0, 16.0, -0.5, red));
    // Fog off.
    scene.builder.fog_mode(0, false, true);
    scene.draw(Topology::Strip, &rect(48.0, 0.0, 64.0, 16.0, -0.25, red));
    // A depth ramp: z/w from 0 to −1 across 64 pixels.
    scene.builder.fog_mode(5, false, false);
    scene.draw(
        Topology::Strip,
        &[
            v(0.0, 32.0, 0.0, red),
            v(64.0, 32.0, -1.0, red),
            v(0.0, 40.0, 0.0, red),
            v(64.0, 40.0, -1.0, red),
        ],
    );
    let image = image(&scene.render());
    // round(0.6·255) = 153.
    assert_eq!(count(&image, [63, 0, 191, 153]), 256);
    assert_eq!(count(&image, [191, 0, 63, 153]), 256);
    assert_eq!(count(&image, [127, 0, 127, 153]), 256);
    assert_eq!(count(&image, [255, 0, 0, 153]), 256);
    for x in [0u32, 9, 31, 40, 63] {
        let depth = (x as f32 + 0.5) / 64.0;
        let factor = 2048.0 * depth / 2047.0;
        let expected = [255.0 * factor, 255.0 * (1.0 - factor)].map(|c| c as u8);
        let [r, _, b, _] = at(&image, x, 36);
        assert!(
            r.abs_diff(expected[0]) <= 1 && b.abs_diff(expected[1]) <= 1,
            "pixel {x}: ({r}, {b}) against {expected:?}"
        );
    }
}

/// Shadow-map rendering through the pipeline (docs/gpu-shadows.md): in fragment-operation
/// mode 3 the colour buffer takes the 24-bit depth in bytes 0-2 and the intensity in byte 3
/// (read back as RGBA8: R the intensity, then B, G and A the depth from its least
/// significant byte), the depth buffer is left alone.
#[test]
fn shadow_mode_writes_depth_and_soft_shadow_into_the_colour_buffer() {
    let mut scene = Scene::new();
    scene.clear(0xFFFF_FFFF, 0x00FF_FFFF);
    scene.builder.write_masked(id::COLOR_OPERATION, 3, 0x1);
    // Soft shadows: constant 2.0 (float1.5.10 0x4000), linear 0.
    scene.builder.write(id::FRAGOP_SHADOW, 0x4000);
    // A hard shadow (green 0) at depth 0.5 over the left half: ⌊0.5 · 0xFFFFFF⌋ = 0x7FFFFF.
    let black = [0.0, 0.0, 0.0, 1.0];
    scene.draw(Topology::Strip, &rect(0.0, 0.0, 32.0, 64.0, -0.5, black));
    // A soft shadow (green 255) at depth 0.25 over the middle: 255 / 2 = 127.5, truncated to
    // 127 where it is nearer than the stored depth (everywhere here), the depth kept.
    scene.draw(Topology::Strip, &rect(16.0, 0.0, 48.0, 64.0, -0.25, GREEN));
    let gpu = scene.render();
    let image = image(&gpu);
    assert_eq!(at(&image, 8, 8), [0xFF, 0xFF, 0xFF, 0x7F]);
    assert_eq!(at(&image, 24, 8), [127, 0xFF, 0xFF, 0x7F]);
    assert_eq!(at(&image, 40, 8), [127, 0xFF, 0xFF, 0xFF]);
    assert_eq!(at(&image, 56, 8), [0xFF; 4]);
    let depth = gpu.depth_image().unwrap().unwrap();
    assert!(depth.values.iter().all(|&d| d == 0xFF_FFFF));
}

#[test]
fn the_depth_test_keeps_the_nearest_whatever_the_order() {
    for near_first in [false, true] {
        let mut scene = Scene::new();
        scene.builder.depth_test(true, 6, 0x1F); // GREATER: depth = -z, nearer is larger
        scene.clear(0x0000_00FF, 0);
        let quad = |z: f32, color| {
            [
                v(8.0, 8.0, z, color),
                v(40.0, 8.0, z, color),
                v(8.0, 40.0, z, color),
                v(40.0, 40.0, z, color),
            ]
        };
        // Binary fractions, so that interpolating a constant depth is exact.
        let (near, far) = (quad(-0.75, RED), quad(-0.25, BLUE));
        if near_first {
            scene.draw(Topology::Strip, &near);
            scene.draw(Topology::Strip, &far);
        } else {
            scene.draw(Topology::Strip, &far);
            scene.draw(Topology::Strip, &near);
        }
        let gpu = scene.render();
        let image = image(&gpu);
        assert_eq!(
            count(&image, [255, 0, 0, 255]),
            32 * 32,
            "near first: {near_first}"
        );
        let depth = gpu.depth_image().unwrap().unwrap();
        let stored = depth.values[((SIZE - 1 - 20) * SIZE + 20) as usize];
        assert_eq!(stored, (0.75f32 * 0xFF_FFFF as f32) as u32);
    }
}

#[test]
fn culling_keeps_one_winding() {
    let ccw = [
        v(0.0, 0.0, -0.5, RED),
        v(16.0, 0.0, -0.5, RED),
        v(0.0, 16.0, -0.5, RED),
    ];
    let cw = [
        v(32.0, 32.0, -0.5, GREEN),
        v(32.0, 48.0, -0.5, GREEN),
        v(48.0, 32.0, -0.5, GREEN),
    ];
    for (mode, red, green) in [(0, 120, 120), (1, 0, 120), (2, 120, 0)] {
        let mut scene = Scene::new();
        scene.builder.cull(mode);
        scene.draw(Topology::List, &ccw);
        scene.draw(Topology::List, &cw);
        let image = image(&scene.render());
        assert_eq!(count(&image, [255, 0, 0, 255]), red, "mode {mode}");
        assert_eq!(count(&image, [0, 255, 0, 255]), green, "mode {mode}");
    }
}

#[test]
fn the_scissor_keeps_or_drops_its_box() {
    let full = [
        v(0.0, 0.0, -0.5, RED),
        v(64.0, 0.0, -0.5, RED),
        v(0.0, 64.0, -0.5, RED),
        v(64.0, 64.0, -0.5, RED),
    ];
    for (mode, expected) in [(3, 10 * 5), (1, 64 * 64 - 10 * 5), (0, 64 * 64)] {
        let mut scene = Scene::new();
        scene.builder.scissor(mode, (4, 6), (13, 10));
        scene.draw(Topology::Strip, &full);
        let image = image(&scene.render());
        assert_eq!(count(&image, [255, 0, 0, 255]), expected, "mode {mode}");
    }
}

#[test]
fn clipping_at_the_depth_range_and_the_user_plane() {
    // Half of the quad lies behind z = 0 (the near side of the PICA's [-1, 0] range): the
    // clipped part is the left half.
    let mut scene = Scene::new();
    scene.draw(
        Topology::Strip,
        &[
            v(0.0, 0.0, -0.5, RED),
            v(32.0, 0.0, 0.5, RED),
            v(0.0, 32.0, -0.5, RED),
            v(32.0, 32.0, 0.5, RED),
        ],
    );
    // The user plane x >= 0 (clip space: x + 0·y + 0·z + 0·w) keeps the right half of a quad.
    let mut plane = Scene::new();
    plane.builder.clip_plane(Some([1.0, 0.0, 0.0, 0.0]));
    plane.draw(Topology::Strip, &rect(16.0, 0.0, 48.0, 8.0, -0.5, GREEN));
    let image_depth = image(&scene.render());
    assert_eq!(count(&image_depth, [255, 0, 0, 255]), 16 * 32);
    let image_plane = image(&plane.render());
    assert_eq!(count(&image_plane, [0, 255, 0, 255]), 16 * 8);
    assert_eq!(at(&image_plane, 31, 4), BACKGROUND);
    assert_eq!(at(&image_plane, 32, 4), [0, 255, 0, 255]);
}

#[test]
fn blending_and_logic_ops_on_known_inputs() {
    // Source (1, 0.5, 0, 0.5) over destination (0, 0, 1, 1) (the clear colour), per equation.
    let src = [1.0, 128.0 / 255.0, 0.0, 128.0 / 255.0];
    let cases: [((u32, u32), [u32; 4], Rgba8); 4] = [
        // add, src alpha / one minus src alpha
        ((0, 0), [6, 7, 6, 7], [128, 64, 127, 191]),
        // subtract, one / one
        ((1, 1), [1, 1, 1, 1], [255, 128, 0, 0]),
        // reverse subtract
        ((2, 2), [1, 1, 1, 1], [0, 0, 255, 127]),
        // max with constant factors (constant colour 0x40 everywhere)
        ((4, 4), [10, 1, 10, 1], [64, 32, 255, 255]),
    ];
    for (equations, factors, expected) in cases {
        let mut scene = Scene::new();
        // Destination (0, 0, 255, 255): RGBA8 words hold R << 24 | G << 16 | B << 8 | A.
        scene.clear(0x0000_FFFF, 0);
        scene.builder.blend(equations, factors, [0x40; 4]);
        scene.draw(Topology::Strip, &rect(0.0, 0.0, 8.0, 8.0, -0.5, src));
        let image = image(&scene.render());
        assert_eq!(at(&image, 3, 3), expected, "{equations:?} {factors:?}");
    }
    let mut scene = Scene::new();
    scene.builder.logic_op(11); // XOR
    scene.draw(Topology::Strip, &rect(0.0, 0.0, 8.0, 8.0, -0.5, src));
    let image = image(&scene.render());
    // Destination (0, 0, 0, 255) from the default clear.
    assert_eq!(at(&image, 3, 3), [255, 128, 0, 128 ^ 255]);
}

#[test]
fn combiners_modulate_with_a_constant_and_read_the_buffer() {
    let mut scene = Scene::new();
    // Stage 0: primary * constant (0.5 grey); stage 1: previous buffer (the initial colour);
    // stage 2: previous + buffer (stage 0's output, written to the buffer).
    let mut stage0 = CombinerStage::new(1, [source::PRIMARY, source::CONSTANT, 0]);
    stage0.constant = [128, 128, 128, 128];
    scene.builder.combiner(0, &stage0);
    scene
        .builder
        .combiner(1, &CombinerStage::new(0, [source::PREVIOUS_BUFFER; 3]));
    scene.builder.combiner(
        2,
        &CombinerStage::new(2, [source::PREVIOUS, source::PREVIOUS_BUFFER, 0]),
    );
    scene.builder.combiner_buffer(1, 1, [10, 20, 30, 40]);
    scene.draw(
        Topology::Strip,
        &rect(0.0, 0.0, 8.0, 8.0, -0.5, [1.0, 0.5, 0.0, 1.0]),
    );
    let image = image(&scene.render());
    // Stage 0: (255, 128, 0, 255) * 128 / 255 = (128, 64, 0, 128); stage 1 reads the initial
    // buffer colour (10, 20, 30, 40); stage 2 adds stage 0's output from the buffer.
    assert_eq!(at(&image, 2, 2), [138, 84, 30, 168]);
}

#[test]
fn stencil_marks_then_masks() {
    let mut scene = Scene::new();
    // Pass 1: write stencil 1 where a small quad lands (colour writes off).
    scene.builder.stencil(true, 1, 1, (0xFF, 0xFF), [0, 0, 2]);
    scene.builder.depth_test(false, 1, 0x10);
    scene.draw(Topology::Strip, &rect(0.0, 0.0, 10.0, 10.0, -0.5, RED));
    // Pass 2: a big quad drawn only where stencil == 1.
    scene.builder.stencil(true, 2, 1, (0xFF, 0x00), [0, 0, 0]);
    scene.builder.depth_test(false, 1, 0x1F);
    scene.draw(Topology::Strip, &rect(0.0, 0.0, 64.0, 64.0, -0.5, GREEN));
    let gpu = scene.render();
    let image = image(&gpu);
    assert_eq!(count(&image, [0, 255, 0, 255]), 100);
    assert_eq!(count(&image, [255, 0, 0, 255]), 0);
    let depth = gpu.depth_image().unwrap().unwrap();
    assert_eq!(depth.stencil.iter().filter(|&&s| s == 1).count(), 100);
}

#[test]
fn every_colour_and_depth_format_stores_what_it_can() {
    let color = [0.8, 0.4, 0.2, 0.6];
    let formats = [
        (ColorFormat::Rgba8, [204, 102, 51, 153]),
        (ColorFormat::Rgb8, [204, 102, 51, 255]),
        // 5 bits: 204 >> 3 = 25 -> 206; 102 >> 3 = 12 -> 99; 51 >> 3 = 6 -> 49; 1-bit alpha.
        (ColorFormat::Rgb5a1, [206, 99, 49, 255]),
        (ColorFormat::Rgb565, [206, 101, 49, 255]),
        (ColorFormat::Rgba4, [204, 102, 51, 153]),
    ];
    for (format, expected) in formats {
        for depth in [DepthFormat::D16, DepthFormat::D24, DepthFormat::D24S8] {
            let mut scene = Scene::with_formats(format, depth);
            scene.draw(Topology::Strip, &rect(0.0, 0.0, 8.0, 8.0, -0.25, color));
            let gpu = scene.render();
            let image = image(&gpu);
            assert_eq!(at(&image, 4, 4), expected, "{format:?}");
            let stored = gpu.depth_image().unwrap().unwrap();
            let max = (1u64 << depth.depth_bits()) - 1;
            assert_eq!(
                stored.values[((SIZE - 1 - 4) * SIZE + 4) as usize],
                (0.25 * max as f32) as u32,
                "{depth:?}"
            );
        }
    }
}

#[test]
fn the_buffer_is_tiled_in_memory() {
    // One pixel at rasterizer (9, 62) (the triangle's other sample centres lie on its
    // excluded hypotenuse): memory row 1, tile column 1, Morton index of (1, 1).
    let mut scene = Scene::new();
    let color = [1.0, 0.0, 0.0, 0.5];
    scene.draw(
        Topology::List,
        &[
            v(9.0, 62.0, -0.5, color),
            v(11.0, 62.0, -0.5, color),
            v(9.0, 64.0, -0.5, color),
        ],
    );
    let gpu = scene.render();
    let offset = (8 * 8 + 3) * 4;
    let bytes = gpu.memory.read_vec(COLOR + offset, 4).unwrap();
    assert_eq!(bytes, [128, 0, 0, 255], "RGBA8 is stored A, B, G, R");
    assert_eq!(count(&image(&gpu), [255, 0, 0, 128]), 1);
}

#[test]
fn every_thread_count_writes_the_same_memory() {
    let build = || {
        let mut scene = Scene::new();
        scene.builder.blend((0, 0), [6, 7, 6, 7], [0; 4]);
        scene.builder.depth_test(true, 6, 0x1F);
        scene.clear(0x1020_30FF, 0);
        let mut vertices = Vec::new();
        for k in 0..300 {
            let f = k as f32;
            let c = [
                (f * 0.37).fract(),
                (f * 0.61).fract(),
                (f * 0.13).fract(),
                0.6,
            ];
            vertices.push(v(
                (f * 7.3) % 70.0 - 3.0,
                (f * 3.1) % 70.0 - 3.0,
                -(f * 0.003) % 1.0,
                c,
            ));
        }
        scene.draw(Topology::Strip, &vertices);
        scene.builder.finish()
    };
    let trace = build();
    let reference = render(&trace, 1);
    let bytes = |gpu: &Gpu| {
        let mut all = gpu
            .memory
            .read_vec(COLOR, (SIZE * SIZE * 4) as usize)
            .unwrap();
        all.extend(
            gpu.memory
                .read_vec(DEPTH, (SIZE * SIZE * 4) as usize)
                .unwrap(),
        );
        all
    };
    assert!(reference.raster_stats.fragments > 10_000);
    for threads in [2, 3, 4] {
        assert_eq!(
            bytes(&render(&trace, threads)),
            bytes(&reference),
            "{threads} threads"
        );
    }
}

impl Scene {
    /// Draws a strip of clip-space vertices as given (w included).
    fn draw_clip(&mut self, vertices: &[([f32; 4], [f32; 4])]) {
        let mut data = Vec::new();
        for (p, c) in vertices {
            data.extend(p.iter().chain(c).flat_map(|f| f.to_le_bytes()));
        }
        self.builder.attributes(&[
            Attribute::new(0, ComponentType::Float, 4),
            Attribute::new(1, ComponentType::Float, 4),
        ]);
        self.builder
            .buffer(&data, 32, &[Element::Attribute(0), Element::Attribute(1)]);
        self.builder
            .draw_arrays(Topology::Strip, 0, vertices.len() as u32);
    }
}

#[test]
fn attributes_interpolate_perspective_correctly() {
    // A quad over the whole target whose right edge has w = 3: at the screen's middle the
    // perspective-correct red is (0 + 1/3 · ½) / (½ + 1/3 · ½) = 1/4 of the way, not ½.
    let mut scene = Scene::new();
    let black = [0.0, 0.0, 0.0, 1.0];
    let scaled = |x: f32, y: f32, w: f32, c| ([x * w, y * w, -0.5 * w, w], c);
    scene.draw_clip(&[
        scaled(-1.0, -1.0, 1.0, black),
        scaled(1.0, -1.0, 3.0, RED),
        scaled(-1.0, 1.0, 1.0, black),
        scaled(1.0, 1.0, 3.0, RED),
    ]);
    let image = image(&scene.render());
    // Pixel 31's centre is at screen x = 31.5 of 64: t = 31.5 / 64.
    let t = 31.5f32 / 64.0;
    let expected = ((t / 3.0) / ((1.0 - t) + t / 3.0) * 255.0).round() as u8;
    let red = at(&image, 31, 20)[0];
    assert!(red.abs_diff(expected) <= 1, "{red} against {expected}");
    assert!(red < 70, "linear interpolation would give about 126: {red}");
}

/// Writes each semantic group from the inputs: quaternion = v1, colour = v2, texcoord0 =
/// v2.wz with texcoord0.w = v2.y (one register), texcoord1 = v1.yx, texcoord2 = v2.xy, view =
/// v1.wzy.
const EVERY_SEMANTIC: &str = "
.out outPos position
.out outQuat normalquat
.out outColor color
.out outTc0 texcoord0 o3.xy
.out outTc0w texcoord0w o3.z
.out outTc1 texcoord1
.out outTc2 texcoord2
.out outView view
.proc main
    mov o0, v0
    mov o1, v1
    mov o2, v2
    mov o3, v2.wzyx
    mov o4, v1.yxwz
    mov o5, v2
    mov o6, v1.wzyx
    end
.end
";

#[test]
fn a_probed_pixel_gets_every_semantic_interpolated_perspective_correctly() {
    let files = [SourceFile {
        name: "every.pica".into(),
        text: EVERY_SEMANTIC.into(),
    }];
    let program = assemble(&files, AsmOptions::default()).unwrap().shbin;
    let mut scene = Scene::new();
    scene.builder.program(&program, 0, None);
    // One triangle, its vertices at different w: (screen x, screen y in NDC, w), v1, v2.
    let corners: [([f32; 3], [f32; 4], [f32; 4]); 3] = [
        (
            [-0.9, -0.9, 1.0],
            [0.5, 0.1, 0.2, 0.3],
            [0.1, 0.2, 0.3, 0.4],
        ),
        ([0.9, -0.8, 2.5], [0.4, 0.3, 0.6, 0.1], [0.9, 0.5, 0.1, 0.8]),
        ([-0.7, 0.9, 4.0], [0.6, 0.2, 0.1, 0.9], [0.3, 0.7, 0.9, 0.2]),
    ];
    let mut data = Vec::new();
    for ([x, y, w], a, b) in corners {
        let position = [x * w, y * w, -0.5 * w, w];
        data.extend(
            position
                .iter()
                .chain(&a)
                .chain(&b)
                .flat_map(|f| f.to_le_bytes()),
        );
    }
    scene.builder.attributes(&[
        Attribute::new(0, ComponentType::Float, 4),
        Attribute::new(1, ComponentType::Float, 4),
        Attribute::new(2, ComponentType::Float, 4),
    ]);
    let elements = [0, 1, 2].map(Element::Attribute);
    scene.builder.buffer(&data, 48, &elements);
    scene.builder.draw_arrays(Topology::List, 0, 3);
    let trace = scene.builder.finish();
    let mut gpu = Gpu::new(GpuConfig {
        engine: EngineKind::Interpreter,
        ..GpuConfig::default()
    });
    let (x, y) = (20u32, 25u32);
    gpu.probe_pixel(Some((x, y)));
    let mut gpu = trace::replay(&trace, gpu, None, |_, _| {}).unwrap().gpu;
    let probed = gpu.take_probed();
    assert_eq!(probed.len(), 1, "one triangle covers the pixel once");
    let fragment = probed[0];
    // Independently: the vertices snapped to 1/16 pixel (docs/gpu.md), screen-space
    // barycentrics of the pixel centre, then each attribute/w and 1/w interpolated linearly and
    // divided. The shader's float24 arithmetic (16-bit mantissas) bounds the agreement.
    let half = SIZE as f64 / 2.0;
    let snap = |v: f64| (v * 16.0).round() / 16.0;
    let screen = corners
        .map(|([x, y, _], _, _)| (snap((x as f64 + 1.0) * half), snap((y as f64 + 1.0) * half)));
    let (px, py) = (x as f64 + 0.5, y as f64 + 0.5);
    let area = |a: (f64, f64), b: (f64, f64), p: (f64, f64)| {
        (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0)
    };
    let total = area(screen[0], screen[1], screen[2]);
    let b: [f64; 3] =
        std::array::from_fn(|i| area(screen[(i + 1) % 3], screen[(i + 2) % 3], (px, py)) / total);
    let inv_w: f64 = (0..3).map(|i| b[i] / corners[i].0[2] as f64).sum();
    let expected = |value: &dyn Fn(usize) -> f32| -> f64 {
        (0..3)
            .map(|i| b[i] * value(i) as f64 / corners[i].0[2] as f64)
            .sum::<f64>()
            / inv_w
    };
    let a = |i: usize, c: usize| corners[i].1[c];
    let bb = |i: usize, c: usize| corners[i].2[c];
    let checks: Vec<(usize, f64)> = vec![
        (4, expected(&|i| a(i, 0))),
        (5, expected(&|i| a(i, 1))),
        (6, expected(&|i| a(i, 2))),
        (7, expected(&|i| a(i, 3))),
        (8, expected(&|i| bb(i, 0))),
        (11, expected(&|i| bb(i, 3))),
        (12, expected(&|i| bb(i, 3))),
        (13, expected(&|i| bb(i, 2))),
        (14, expected(&|i| a(i, 1))),
        (15, expected(&|i| a(i, 0))),
        (16, expected(&|i| bb(i, 1))),
        (18, expected(&|i| a(i, 3))),
        (19, expected(&|i| a(i, 2))),
        (20, expected(&|i| a(i, 1))),
        (22, expected(&|i| bb(i, 0))),
        (23, expected(&|i| bb(i, 1))),
        // Semantics nothing writes read 1.0 at every vertex.
        (17, 1.0),
        (21, 1.0),
        // The position: the centre, and w.
        (0, px),
        (1, py),
        (3, 1.0 / inv_w),
    ];
    for (semantic, value) in checks {
        let got = fragment.attributes[semantic] as f64;
        assert!(
            (got - value).abs() <= 1e-4 * value.abs().max(1.0),
            "semantic {semantic}: {got} against {value}"
        );
    }
    // Linear interpolation would differ by far more than the tolerance.
    let linear: f64 = (0..3).map(|i| b[i] * a(i, 3) as f64).sum();
    assert!((linear - expected(&|i| a(i, 3))).abs() > 0.01);
    // The primary colour the combiners saw is the interpolated colour in 8 bits.
    let red = (fragment.attributes[8].clamp(0.0, 1.0) * 255.0).round() as u8;
    assert_eq!(fragment.combined[0], red);
    assert!(fragment.passed);
    assert_eq!(at(&image(&gpu), x, y), fragment.combined);
}

#[test]
fn the_w_buffer_scales_depth_by_w() {
    let mut scene = Scene::new();
    scene.builder.depth_map(false, -1.0, 0.0);
    let w = 2.0;
    scene.draw_clip(&[
        ([-w, -w, -0.25 * w, w], RED),
        ([w, -w, -0.25 * w, w], RED),
        ([-w, w, -0.25 * w, w], RED),
        ([w, w, -0.25 * w, w], RED),
    ]);
    let gpu = scene.render();
    let depth = gpu.depth_image().unwrap().unwrap();
    // (z/w · scale + offset) · w = 0.25 · 2 = 0.5.
    assert_eq!(depth.values[100], (0.5f32 * 0xFF_FFFF as f32) as u32);
}

#[test]
fn the_viewport_places_and_sizes_the_image() {
    let mut scene = Scene::new();
    scene.builder.viewport(16, 8, 32, 24);
    scene.draw_clip(&[
        ([-1.0, -1.0, -0.5, 1.0], GREEN),
        ([1.0, -1.0, -0.5, 1.0], GREEN),
        ([-1.0, 1.0, -0.5, 1.0], GREEN),
        ([1.0, 1.0, -0.5, 1.0], GREEN),
    ]);
    let image = image(&scene.render());
    assert_eq!(count(&image, [0, 255, 0, 255]), 32 * 24);
    assert_eq!(at(&image, 16, 8), [0, 255, 0, 255]);
    assert_eq!(at(&image, 15, 8), BACKGROUND);
    assert_eq!(at(&image, 47, 31), [0, 255, 0, 255]);
    assert_eq!(at(&image, 47, 32), BACKGROUND);
}

#[test]
fn display_transfer_untiles_converts_flips_and_downscales() {
    const LINEAR: u32 = 0x2080_0000;
    let mut scene = Scene::new();
    // A red 4x4 square at the bottom-left corner, a blue one at the top-right.
    let square = |x: f32, y: f32, c| {
        [
            v(x, y, -0.5, c),
            v(x + 4.0, y, -0.5, c),
            v(x, y + 4.0, -0.5, c),
            v(x + 4.0, y + 4.0, -0.5, c),
        ]
    };
    scene.draw(Topology::Strip, &square(0.0, 0.0, RED));
    scene.draw(Topology::Strip, &square(60.0, 60.0, BLUE));
    let formats = (ColorFormat::Rgba8, ColorFormat::Rgb8);
    scene
        .builder
        .display_transfer(COLOR, LINEAR, (SIZE, SIZE), formats.0, formats.1, false);
    scene.builder.display_transfer(
        COLOR,
        LINEAR + 0x4000,
        (SIZE, SIZE),
        formats.0,
        formats.1,
        true,
    );
    let gpu = scene.render();
    let pixel = |base: u32, x: u32, row: u32| {
        let bytes = gpu.memory.read_vec(base + (row * SIZE + x) * 3, 3).unwrap();
        [bytes[2], bytes[1], bytes[0]]
    };
    // Unflipped: linear row 0 is memory row 0, the top of the picture.
    assert_eq!(pixel(LINEAR, 62, 1), [0, 0, 255]);
    assert_eq!(pixel(LINEAR, 1, 62), [255, 0, 0]);
    assert_eq!(pixel(LINEAR, 30, 30), [0, 0, 0]);
    // Flipped: row 0 is the bottom.
    assert_eq!(pixel(LINEAR + 0x4000, 1, 1), [255, 0, 0]);
    assert_eq!(pixel(LINEAR + 0x4000, 62, 62), [0, 0, 255]);
}
