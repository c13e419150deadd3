//! The example scenes of corpus/scenes: each shipped `.ctf` is exactly what its Rust source
//! builds (`PICAJIT_WRITE_SCENES=1` rewrites them), every scene renders the same image with
//! every engine and thread count, each image shows the facts its scene is built around, and
//! each matches its expected image in `corpus/scenes/expected/` (PNG, looked at when written:
//! `PICAJIT_WRITE_SCENES=1` rewrites them too, and a rewritten image is looked at again before
//! it is committed).

#[path = "../corpus/scenes/bump_surface.rs"]
mod bump_surface;
#[path = "../corpus/scenes/common.rs"]
mod common;
#[path = "../corpus/scenes/coverage.rs"]
mod coverage;
#[path = "../corpus/scenes/fog.rs"]
mod fog;
#[path = "../corpus/scenes/gas.rs"]
mod gas;
#[path = "../corpus/scenes/geometry_modes.rs"]
mod geometry_modes;
#[path = "../corpus/scenes/lit_cube.rs"]
mod lit_cube;
#[path = "../corpus/scenes/lit_sphere.rs"]
mod lit_sphere;
#[path = "../corpus/scenes/proctex.rs"]
mod proctex;
#[path = "../corpus/scenes/shadow.rs"]
mod shadow;
#[path = "../corpus/scenes/skybox.rs"]
mod skybox;
#[path = "../corpus/scenes/sprites.rs"]
mod sprites;
#[path = "common/mod.rs"]
mod test_common;
#[path = "../corpus/scenes/texture_formats.rs"]
mod texture_formats;
#[path = "../corpus/scenes/textured.rs"]
mod textured;
#[path = "../corpus/scenes/textured_cube.rs"]
mod textured_cube;
#[path = "../corpus/scenes/textured_sphere.rs"]
mod textured_sphere;

use std::path::PathBuf;

use picajit::engine::EngineKind;
use picajit::gpu::framebuffer::image::Image;
use picajit::gpu::front::trace::{self, Trace};

use test_common::{color_image as image, read_png, render_trace as render};

/// A scene: its file name and the function that builds it.
type Scene = (&'static str, fn() -> Trace);

const SCENES: &[Scene] = &[
    ("lit-cube.ctf", lit_cube::build),
    ("geometry-modes.ctf", geometry_modes::build),
    ("coverage.ctf", coverage::build),
    ("lit-sphere.ctf", lit_sphere::build),
    ("textured-cube.ctf", textured_cube::build),
    ("texture-formats.ctf", texture_formats::build),
    ("skybox.ctf", skybox::build),
    ("bump-surface.ctf", bump_surface::build),
    ("textured-sphere.ctf", textured_sphere::build),
    ("fog.ctf", fog::build),
    ("proctex.ctf", proctex::build),
    ("shadow.ctf", shadow::build),
    ("gas.ctf", gas::build),
    ("sprites.ctf", sprites::build),
];

fn scene_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus/scenes")
        .join(name)
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

fn expected_path(name: &str) -> PathBuf {
    let stem = name.strip_suffix(".ctf").unwrap_or(name);
    scene_path("expected").join(format!("{stem}.png"))
}

fn write_png(path: &std::path::Path, image: &Image) {
    let file = std::fs::File::create(path).unwrap();
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), image.width, image.height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap();
    let data: Vec<u8> = image.pixels.iter().flatten().copied().collect();
    writer.write_image_data(&data).unwrap();
}

/// The pixels of an 8-bit RGBA PNG.
#[test]
fn every_scene_matches_its_expected_image() {
    let write = std::env::var_os("PICAJIT_WRITE_SCENES").is_some();
    for (name, build) in SCENES {
        let image = image(&render(&build(), EngineKind::Interpreter, 1));
        let path = expected_path(name);
        if write {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            write_png(&path, &image);
            continue;
        }
        let (width, height, pixels) = read_png(&path);
        assert_eq!((width, height), (image.width, image.height), "{name}");
        let differing: Vec<usize> = (0..pixels.len())
            .filter(|&k| pixels[k] != image.pixels[k])
            .collect();
        assert!(
            differing.is_empty(),
            "{name}: {} pixels differ from {}, the first at ({}, {}) from the top: {:?} against {:?}",
            differing.len(),
            path.display(),
            differing[0] as u32 % width,
            differing[0] as u32 / width,
            image.pixels[differing[0]],
            pixels[differing[0]]
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

/// The specialised fragment paths (docs/gpu.md, "Fragment paths") give the general path's
/// pixels, colour and depth, on every scene; the scenes take each path somewhere, and a scene
/// that reads only the vertex colour never takes the general one.
#[test]
fn every_fragment_path_renders_what_the_general_path_renders() {
    use picajit::gpu::fragment::FragmentPath;
    use picajit::gpu::{Gpu, GpuConfig};
    let mut taken = [0u64; 4];
    for (name, build) in SCENES {
        let trace = build();
        let run = |specialise_fragments| {
            let config = GpuConfig {
                engine: EngineKind::Interpreter,
                threads: 2,
                specialise_fragments,
                ..GpuConfig::default()
            };
            trace::replay(&trace, Gpu::new(config), None, |_, _| {})
                .expect("the scene renders")
                .gpu
        };
        let (general, specialised) = (run(false), run(true));
        assert!(image(&general) == image(&specialised), "{name}: colour");
        assert!(
            general.depth_image().unwrap() == specialised.depth_image().unwrap(),
            "{name}: depth"
        );
        let fragments = general.raster_stats.fragments;
        assert_eq!(general.raster_stats.paths, [fragments, 0, 0, 0], "{name}");
        let paths = specialised.raster_stats.paths;
        assert_eq!(paths.iter().sum::<u64>(), fragments, "{name}");
        for (total, n) in taken.iter_mut().zip(paths) {
            *total += n;
        }
        if ["lit-cube.ctf", "lit-sphere.ctf", "geometry-modes.ctf"].contains(name) {
            // Vertex colours through a REPLACE combiner, nothing else on.
            let primary = FragmentPath::PrimaryColour as usize;
            assert_eq!(paths[primary], fragments, "{name}");
        }
    }
    assert!(taken.iter().all(|&n| n > 0), "paths taken: {taken:?}");
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

#[test]
fn the_lit_sphere_covers_its_disc_once_and_is_lit_from_its_light() {
    let gpu = render(&lit_sphere::build(), EngineKind::SoaJit, 2);
    let (rings, segments) = (lit_sphere::RINGS, lit_sphere::SEGMENTS);
    let quads = (rings - 1) * (segments - 1);
    assert_eq!(gpu.stats.triangles as usize, 2 * quads);
    assert_eq!(gpu.stats.vertices as usize, 6 * quads);
    // The sphere is convex and back faces are culled: every covered pixel is covered once,
    // and each writes a depth nearer than the cleared far plane.
    let depth = gpu.depth_image().unwrap().unwrap();
    let covered = depth.values.iter().filter(|&&d| d != 0xFF_FFFF).count() as u64;
    assert_eq!(gpu.raster_stats.fragments, covered);
    // A unit sphere 3.5 away seen through f = 1/tan(0.5): its outline is a circle of radius
    // f / sqrt(3.5² − 1) in normalized coordinates, 128 pixels per unit.
    let f = 1.0 / 0.5f64.tan();
    let radius = 128.0 * f / (3.5f64 * 3.5 - 1.0).sqrt();
    let disc = std::f64::consts::PI * radius * radius;
    let ratio = covered as f64 / disc;
    assert!(
        (0.98..=1.0).contains(&ratio),
        "{covered} pixels of a {disc:.0}-pixel disc"
    );
    // The light comes from the upper right and the front: the upper right of the sphere is
    // brighter than the lower left, which has only the ambient term.
    let image = image(&gpu);
    let brightness = |x: u32, y: u32| at(&image, x, y)[..3].iter().map(|&c| c as u32).sum::<u32>();
    assert!(brightness(128 + 35, 128 + 35) > brightness(128 - 35, 128 - 35) + 100);
    // The corners keep the clear colour.
    assert_eq!(at(&image, 0, 0), [0x1A, 0x20, 0x30, 0xFF]);
}

#[test]
fn the_format_scene_shows_opaque_texels_and_the_checker_through_one_bit_alpha() {
    use picajit::gpu::fragment::texture::{TextureFormat, decode, encode};
    let image = image(&render(
        &texture_formats::build(),
        EngineKind::Interpreter,
        1,
    ));
    // Cells are 64 pixels, four to a row, in format-code order; RGBA5551 is the third.
    let texels: Vec<[u8; 4]> = (0..32 * 32)
        .map(|k| texture_formats::picture(k % 32, k / 32))
        .collect();
    let stored = decode(
        TextureFormat::Rgba5551,
        32,
        32,
        &encode(TextureFormat::Rgba5551, 32, 32, &texels),
    );
    let checker = [[90, 90, 90, 255], [160, 160, 160, 255]];
    // Its centre is opaque (alpha ≥ 128 keeps the bit): exactly a stored texel, replacing the
    // checker; its corner is transparent: exactly the checker.
    let centre = at(&image, 2 * 64 + 32, 255 - 32);
    assert!(stored.contains(&centre), "{centre:?}");
    let corner = at(&image, 2 * 64 + 5, 255 - 5);
    assert!(checker.contains(&corner), "{corner:?}");
    // RGB565 (fourth) is opaque everywhere: its corner is a stored texel too.
    let stored = decode(
        TextureFormat::Rgb565,
        32,
        32,
        &encode(TextureFormat::Rgb565, 32, 32, &texels),
    );
    let corner = at(&image, 3 * 64 + 5, 255 - 5);
    assert!(stored.contains(&corner), "{corner:?}");
}

/// The fog scene (docs/gpu-fog-and-gas.md) draws one world twice: on the left with the usual
/// depth, on the right with the depth reversed and the fog table's Z flip on. The same table
/// must give the same fog: each pixel matches its twin in the other half but for rounding
/// (the two depths round differently: a step of the 8-bit colour at most, on few pixels).
/// And the fog is there: the far floor is within a few steps of the fog colour, the near
/// floor far from it.
#[test]
fn fog_on_a_reversed_depth_with_the_z_flip_matches_the_usual_depth() {
    let image = image(&render(&fog::build(), EngineKind::Interpreter, 1));
    let (width, height) = (image.width, image.height);
    let half = width / 2;
    let pixel = |x: u32, y: u32| image.pixels[(y * width + x) as usize];
    let mut differing = 0;
    for y in 0..height {
        for x in 0..half {
            let (left, right) = (pixel(x, y), pixel(x + half, y));
            let most = (0..4).map(|c| left[c].abs_diff(right[c])).max().unwrap();
            assert!(most <= 1, "({x}, {y}): {left:?} against {right:?}");
            differing += (most > 0) as u32;
        }
    }
    assert!(differing * 100 < half * height, "{differing} pixels differ");
    let fog = [176, 190, 204];
    let distance = |p: [u8; 4]| (0..3).map(|c| p[c].abs_diff(fog[c])).max().unwrap();
    // Up the left half's centre column (between the cubes) from the bottom: the floor, then the
    // sky (the fog colour). The floor's last row before it is the farthest, nearly all fog;
    // the bottom row, the nearest, keeps the dark tiles far from it.
    let centre = half / 2;
    let sky = (0..height)
        .rev()
        .find(|&y| distance(pixel(centre, y)) == 0)
        .unwrap();
    let far = distance(pixel(centre, sky + 1));
    let near = (0..half)
        .map(|x| distance(pixel(x, height - 1)))
        .max()
        .unwrap();
    assert!(far <= 6, "the far floor is {far} from the fog colour");
    assert!(
        near >= 100,
        "the near floor is only {near} from the fog colour"
    );
}

/// The shadow scene (docs/gpu-shadows.md): pass 1 renders a map in which the cube writes depth
/// (a hard shadow) and the floating square writes intensity 150 (a soft shadow, green 150 over
/// a constant term of 1); pass 2 multiplies each colour by the lookup. On the floor: black in
/// the cube's shadow; 150/255 of the tile colour under the square (185 · 150/255 = 108.8 and
/// 175 · 150/255 = 102.9, truncated by the combiner's modulate); the tile's colour in the
/// light.
#[test]
fn the_shadow_map_darkens_the_floor_where_the_cube_and_the_square_stand_in_the_light() {
    let image = image(&render(&shadow::build(), EngineKind::Interpreter, 1));
    let pixel = |x: u32, y: u32| image.pixels[(y * image.width + x) as usize];
    for (x, y) in [(130, 150), (125, 160)] {
        assert_eq!(pixel(x, y), [0, 0, 0, 255], "({x}, {y}) in the hard shadow");
    }
    assert_eq!(pixel(200, 160), [108, 108, 102, 255], "under the square");
    assert_eq!(pixel(60, 200), [185, 185, 175, 255], "in the light");
    assert_eq!(pixel(150, 200), [225, 225, 215, 255], "in the light");
}

/// The gas scene (docs/gpu-fog-and-gas.md, "Gas"): where no puff reached, the density is 0 and
/// the shaded gas is transparent, so the scene shows unchanged (the clear colour at the top
/// corners); inside the column it is changed; and the accumulation pass left its largest
/// density in GAS_ACCMAX_FEEDBACK's high half (float1.5.10, above 0 and at most 1).
#[test]
fn gas_changes_the_picture_only_where_density_accumulated() {
    use picajit::gpu::regs::id;
    let gpu = render(&gas::build(), EngineKind::Interpreter, 1);
    let image = image(&gpu);
    let pixel = |x: u32, y: u32| image.pixels[(y * image.width + x) as usize];
    let clear = [0x5A, 0x64, 0x78, 0xFF];
    assert_eq!(pixel(0, 0), clear);
    assert_eq!(pixel(250, 5), clear);
    assert_ne!(pixel(120, 60), clear, "inside the smoke");
    let peak = gpu.regs.get(id::GAS_ACCMAX_FEEDBACK) >> 16;
    assert!(peak > 0 && peak <= 0x3C00, "feedback {peak:#x}");
}

/// `render --timings` times the fragment stages on a sample (docs/gpu.md, "Speed"): each band
/// times its every `SAMPLE_EVERY`-th fragment, a stage counts only the sampled fragments that
/// ran it (so a scene shows the stages it uses and no others), and sampling changes no pixel.
#[test]
fn fragment_stage_sampling_counts_the_stages_each_scene_uses() {
    use picajit::gpu::fragment::{SAMPLE_EVERY, STAGE_NAMES};
    use picajit::gpu::{Gpu, GpuConfig};
    type Build = fn() -> Trace;
    // Textures 0-2, procedural texture, lighting, combiners, fog or gas, per-fragment ops.
    let scenes: [(&str, Build, [bool; 6]); 3] = [
        (
            "proctex",
            proctex::build,
            [false, true, false, true, false, true],
        ),
        ("fog", fog::build, [false, false, false, true, true, true]),
        (
            "textured-sphere",
            textured_sphere::build,
            [true, false, true, true, false, true],
        ),
    ];
    for (name, build, used) in scenes {
        let trace = build();
        let config = GpuConfig {
            engine: EngineKind::Interpreter,
            threads: 2,
            sample_fragment_stages: true,
            ..GpuConfig::default()
        };
        let gpu = trace::replay(&trace, Gpu::new(config), None, |_, _| {})
            .expect("the scene renders")
            .gpu;
        let samples = gpu.times.fragment_stages;
        for (k, stage) in STAGE_NAMES.iter().enumerate() {
            assert_eq!(samples.fragments[k] > 0, used[k], "{name}: {stage}");
        }
        let most = gpu.raster_stats.fragments / SAMPLE_EVERY as u64;
        assert!(
            samples.fragments[3] <= most,
            "{name}: more samples than fragments / {SAMPLE_EVERY}"
        );
        assert!(
            image(&gpu) == image(&render(&trace, EngineKind::Interpreter, 2)),
            "{name}: sampling changed the image"
        );
    }
}

/// The position register of a DVLE's output table (none when nothing carries the position).
fn position_register(dvle: &picajit::shbin::Dvle) -> Option<usize> {
    dvle.outputs
        .iter()
        .find(|e| e.semantic == picajit::shbin::OutputSemantic::Position && e.mask == 0xF)
        .map(|e| usize::from(e.register))
}

#[test]
fn extracted_programs_and_inputs_give_the_vertices_the_pipeline_drew() {
    use picajit::document::input::parse_input_for;
    use picajit::exec::{ExecConfig, GeometryResult, GeometryState};
    use picajit::extract::{ExtractLimits, extract};
    use picajit::float24::Precision;
    use picajit::gpu::{Gpu, GpuConfig};
    use picajit::program::{ShaderKind, ShaderProgram, Uniforms};
    use std::collections::HashSet;

    let mut geometry_checked = 0;
    for (name, build) in SCENES {
        let trace = build();
        let programs = extract(&trace, EngineKind::Interpreter, 1, ExtractLimits::default())
            .expect("the scene replays");
        assert!(!programs.is_empty(), "{name}: no program found");
        // What the pipeline drew, in the precision extraction replays in.
        let mut gpu = Gpu::new(GpuConfig {
            engine: EngineKind::Interpreter,
            precision: Precision::F32,
            threads: 1,
            ..GpuConfig::default()
        });
        gpu.capture_triangles();
        let mut gpu = trace::replay(&trace, gpu, None, |_, _| {}).unwrap().gpu;
        let drawn: HashSet<[u32; 4]> = gpu
            .take_triangles()
            .iter()
            .flat_map(|t| t.map(|v| v.position().map(f32::to_bits)))
            .collect();
        for program in &programs {
            // The files as a user gets them.
            let bytes = picajit::shbin::write(&program.shbin);
            let shbin = picajit::shbin::parse(&bytes).expect("the SHBIN reads back");
            assert_eq!(shbin, program.shbin, "{name}");
            let dvle = &shbin.dvles[0];
            let engine = picajit::engine::prepare(
                EngineKind::Interpreter,
                ShaderProgram::from_shbin(&shbin, 0).unwrap(),
                ExecConfig {
                    precision: Precision::F32,
                    ..ExecConfig::default()
                },
            )
            .unwrap();
            assert!(
                !program.states.is_empty(),
                "{name}: a program with no input"
            );
            let Some(position) = position_register(dvle) else {
                // A vertex shader feeding a geometry shader: its outputs are not drawn.
                assert!(program.stage == ShaderKind::Vertex, "{name}");
                continue;
            };
            for n in 0..program.states.len() {
                let json = program.input_json(n).unwrap();
                let input = parse_input_for(&json, Precision::F32, dvle).expect("the input reads");
                assert!(!input.invocations.is_empty(), "{name}: state {n} is empty");
                let mut uniforms = Uniforms::from_constants(dvle);
                input.apply_uniforms(&mut uniforms);
                let mut positions = Vec::new();
                let mut state = GeometryState::default();
                for invocation in &input.invocations {
                    match program.stage {
                        ShaderKind::Vertex => {
                            let run = engine.run_vertex(&uniforms, &invocation.registers);
                            positions.push(run.unwrap().outputs[position]);
                        }
                        ShaderKind::Geometry => {
                            for &(r, v) in &invocation.uniform_writes {
                                uniforms.float[r] = v;
                            }
                            let mut emitted = GeometryResult::default();
                            engine
                                .run_geometry(
                                    &mut state,
                                    &uniforms,
                                    &invocation.registers,
                                    &mut emitted,
                                )
                                .unwrap();
                            for primitive in &emitted.primitives {
                                positions.extend(primitive.vertices.iter().map(|v| v[position]));
                            }
                            geometry_checked += 1;
                        }
                    }
                }
                assert!(!positions.is_empty(), "{name}: state {n} drew nothing");
                for p in positions {
                    assert!(
                        drawn.contains(&p.map(f32::to_bits)),
                        "{name}: state {n} gives a position the pipeline never drew: {p:?}"
                    );
                }
            }
        }
    }
    // The geometry-modes scene's 17 invocations (docs/gpu.md) are all kept and checked.
    assert_eq!(geometry_checked, 12 + 3 + 2);
}
