//! The example scenes of corpus/scenes: each shipped `.ctf` is exactly what its Rust source
//! builds (`PICAJIT_WRITE_SCENES=1` rewrites them), every scene renders the same image with
//! every engine and thread count, and each image shows the facts its scene is built around.

#[path = "../corpus/scenes/common.rs"]
mod common;
#[path = "../corpus/scenes/coverage.rs"]
mod coverage;
#[path = "../corpus/scenes/geometry_modes.rs"]
mod geometry_modes;
#[path = "../corpus/scenes/lit_cube.rs"]
mod lit_cube;

use std::path::PathBuf;

use picajit::engine::EngineKind;
use picajit::gpu::image::Image;
use picajit::gpu::trace::{self, Trace};
use picajit::gpu::{Gpu, GpuConfig};

/// A scene: its file name and the function that builds it.
type Scene = (&'static str, fn() -> Trace);

const SCENES: &[Scene] = &[
    ("lit-cube.ctf", lit_cube::build),
    ("geometry-modes.ctf", geometry_modes::build),
    ("coverage.ctf", coverage::build),
];

fn scene_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus/scenes")
        .join(name)
}

fn render(trace: &Trace, engine: EngineKind, threads: usize) -> Gpu {
    let config = GpuConfig {
        engine,
        threads,
        ..GpuConfig::default()
    };
    trace::replay(trace, Gpu::new(config), None, |_, _| {})
        .expect("the scene renders")
        .gpu
}

fn image(gpu: &Gpu) -> Image {
    gpu.color_image().unwrap().expect("a colour buffer")
}

#[test]
fn shipped_scenes_are_what_their_sources_build() {
    let write = std::env::var_os("PICAJIT_WRITE_SCENES").is_some();
    for (name, build) in SCENES {
        let bytes = trace::write(&build());
        let path = scene_path(name);
        if write {
            std::fs::write(&path, &bytes).unwrap();
            continue;
        }
        let shipped = std::fs::read(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (PICAJIT_WRITE_SCENES=1 writes it)", path.display())
        });
        assert!(
            shipped == bytes,
            "{name} differs from what its source builds"
        );
    }
}

#[test]
fn every_engine_and_thread_count_renders_the_same_image() {
    for (name, build) in SCENES {
        let trace = build();
        let reference = image(&render(&trace, EngineKind::Interpreter, 1));
        for engine in EngineKind::ALL {
            for threads in [1, 2, 3] {
                let other = image(&render(&trace, engine, threads));
                assert!(other == reference, "{name}: {engine} on {threads} threads");
            }
        }
    }
}

/// The colour at rasterizer pixel (x, y), y up from the bottom.
fn at(image: &Image, x: u32, y: u32) -> [u8; 4] {
    image.pixels[((image.height - 1 - y) * image.width + x) as usize]
}

#[test]
fn the_lit_cube_is_culled_depth_tested_and_blended() {
    let gpu = render(&lit_cube::build(), EngineKind::Interpreter, 1);
    let image = image(&gpu);
    // Corners keep the clear colour.
    assert_eq!(at(&image, 0, 0), [0x1A, 0x20, 0x30, 0xFF]);
    assert_eq!(at(&image, 255, 255), [0x1A, 0x20, 0x30, 0xFF]);
    // Back faces are culled: of the cube's 12 triangles the 6 facing away are rejected; the
    // pane's 2 are not (the frustum clips its corner into more triangles).
    assert_eq!(gpu.stats.triangles, 12 + 2);
    assert_eq!(gpu.raster_stats.rejected, 6);
    // The pane writes no depth: where it covers only the background, depth stays cleared, and
    // the colour lies strictly between the background and white.
    let depth = gpu.depth_image().unwrap().unwrap();
    let (x, y) = (240, 8);
    assert_eq!(depth.values[((255 - y) * 256 + x) as usize], 0xFF_FFFF);
    let pane = at(&image, x, y);
    for c in 0..3 {
        assert!(pane[c] > [0x1A, 0x20, 0x30][c] && pane[c] < 255, "{pane:?}");
    }
    // The centre shows the cube, nearer than the far plane.
    assert!(depth.values[(128 * 256 + 128) as usize] < 0xFF_FFFF);
}

#[test]
fn every_geometry_mode_emits_its_primitives() {
    let gpu = render(&geometry_modes::build(), EngineKind::Interpreter, 1);
    // 12 sprites, 3 ribbons of 4 points, 2 fans.
    assert_eq!(gpu.stats.geometry_invocations, 12 + 3 + 2);
    assert_eq!(gpu.stats.geometry_errors, 0);
    // Two triangles per sprite, three segments of two per ribbon, a closed hexagon and
    // pentagon.
    assert_eq!(gpu.stats.triangles, 24 + 18 + 6 + 5);
}

#[test]
fn coverage_tiles_show_their_facts() {
    let gpu = render(&coverage::build(), EngineKind::Interpreter, 1);
    let image = image(&gpu);
    assert_eq!(gpu.stats.vertex_errors, 0);
    let background = [0x20, 0x20, 0x28, 0xFF];
    // Tile centres, rasterizer coordinates: column c, row r from the top.
    let centre = |c: u32, r: u32| (8 + 48 * c + 24, 256 - 8 - 48 * r - 24);
    // The fixed colour attribute (0.95, 0.55, 0.15, 1) fills its tile.
    let (x, y) = centre(3, 1);
    assert_eq!(at(&image, x, y), [242, 140, 38, 255]);
    // One-component positions make degenerate triangles: nothing drawn.
    let (x, y) = centre(4, 1);
    assert_eq!(at(&image, x, y), background);
    // Every topology tile, format tile and combiner tile draws something at its centre (the
    // list's centre lies between its two triangles, so a point inside the first is used).
    for (c, r) in [(1, 0), (2, 0), (3, 0), (4, 0), (0, 1), (1, 1), (2, 1)] {
        let (x, y) = centre(c, r);
        assert_ne!(at(&image, x, y), background, "tile ({c}, {r})");
    }
    let (x, y) = centre(0, 0);
    assert_ne!(at(&image, x - 10, y - 10), background);
    for k in 0..14u32 {
        let (x, y) = centre(k % 5, 2 + k / 5);
        assert_ne!(at(&image, x, y), background, "combiner tile {k}");
    }
}

/// A 10,000-triangle vertex-lit scene: a 50×100 grid of quads on a lit, rotated sphere, in
/// the lit cube's set-up and vertex layout.
fn lit_sphere() -> Trace {
    use common::*;
    use picajit::gpu::assembly::Topology;
    use picajit::gpu::builder::{Indices, SceneBuilder, Stage};
    let mut scene = SceneBuilder::new();
    lit_cube::begin_lit(&mut scene);
    let model = multiply(
        &translation(0.0, 0.0, -3.5),
        &rotation([0.0, 1.0, 0.0], 0.4),
    );
    scene.uniforms(Stage::Vertex, 4, &model);
    let (rings, segments) = (51usize, 101usize);
    let mut data = Vec::new();
    for r in 0..rings {
        let phi = std::f32::consts::PI * r as f32 / (rings - 1) as f32;
        for s in 0..segments {
            let theta = std::f32::consts::TAU * s as f32 / (segments - 1) as f32;
            let n = [phi.sin() * theta.cos(), phi.cos(), phi.sin() * theta.sin()];
            // Normals as shorts hold whole numbers: scaled by 100 (lit sides saturate).
            lit_cube::vertex(
                &mut data,
                n,
                [(r * 5) as u8, 120, (s * 2) as u8, 255],
                n.map(|c| c * 100.0),
            );
        }
    }
    let mut indices = Vec::new();
    for r in 0..rings - 1 {
        for s in 0..segments - 1 {
            let a = (r * segments + s) as u16;
            let b = a + segments as u16;
            indices.extend([a, a + 1, b, b, a + 1, b + 1]);
        }
    }
    scene.attributes(&lit_cube::ATTRIBUTES);
    scene.buffer(&data, 24, &lit_cube::ELEMENTS);
    scene.draw_elements(Topology::List, &Indices::U16(indices));
    scene.end_frame();
    scene.finish()
}

#[test]
#[ignore = "a measurement: cargo test --release --test scenes -- --ignored --nocapture"]
fn render_throughput() {
    let trace = lit_sphere();
    for threads in [1, 2] {
        let mut best = f64::MAX;
        let mut gpu = None;
        for _ in 0..5 {
            let started = std::time::Instant::now();
            let rendered = render(&trace, EngineKind::SoaJit, threads);
            best = best.min(started.elapsed().as_secs_f64());
            gpu = Some(rendered);
        }
        let gpu = gpu.unwrap();
        eprintln!(
            "{threads} threads: {} triangles in, {} drawn, {} fragments: {:.2} ms, {:.0} triangles/s, {:.0} fragments/s",
            gpu.stats.triangles,
            gpu.raster_stats.triangles,
            gpu.raster_stats.fragments,
            best * 1e3,
            gpu.stats.triangles as f64 / best,
            gpu.raster_stats.fragments as f64 / best
        );
    }
}
