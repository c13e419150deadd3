//! The translation for host GPUs (docs/gpu-shaders.md), run by real OpenGL and Vulkan
//! implementations (Mesa's llvmpipe and lavapipe in CI): every program of the corpus, vertex
//! and geometry, gives its golden outputs, bit for bit, in every precision mode, through the
//! `gpu` and `vulkan` engines, and geometry programs in both of their forms; the GLSL of every
//! dialect passes the reference compiler and the SPIR-V the reference validator. Without a GPU
//! API (or, for geometry shaders, a device with a geometry stage) the tests skip, except where
//! `PICAJIT_REQUIRE_GPU` is set (`.ci/run` sets it).

mod common;

use std::path::{Path, PathBuf};

use common::{Builder, XorShift};

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::document::{input::parse_input, output::OutputOptions, run_document};
use picajit::exec::{BatchIo, BatchLayout, ExecConfig, ShaderEngine, SoaBuffer};
use picajit::float24::Precision;
use picajit::program::{InputRegisters, ShaderKind, ShaderProgram, Uniforms};
use picajit::translate::host::engine::{Backend, GpuError, HostShader, OpenGl, Vulkan, renderer};

/// Whether the GPU API `B` is here; panics where one is required.
fn available<B: Backend>() -> bool {
    match renderer::<B>() {
        Ok(_) => true,
        Err(e) if std::env::var_os("PICAJIT_REQUIRE_GPU").is_some() => {
            panic!("PICAJIT_REQUIRE_GPU is set and there is no GPU API: {e}")
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

/// `compiled`, or `None` (the fixture skipped) where the device has no geometry stage and none
/// is required.
fn unless_no_geometry_stage<T>(compiled: Result<T, GpuError>, what: &str) -> Option<T> {
    match compiled {
        Ok(t) => Some(t),
        Err(GpuError::NoGeometryStage(device))
            if std::env::var_os("PICAJIT_REQUIRE_GPU").is_none() =>
        {
            eprintln!("skipped {what}: {device} has no geometry shaders");
            None
        }
        Err(e) => panic!("{what}: {e}"),
    }
}

fn files_with(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().ends_with(suffix))
        .collect();
    files.sort();
    files
}

fn programs() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/programs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The program of a corpus folder: its `*.pica` sources, in name order.
fn assemble_folder(dir: &Path) -> picajit::asm::Assembly {
    let sources: Vec<SourceFile> = files_with(dir, ".pica")
        .into_iter()
        .map(|path| SourceFile {
            name: path.display().to_string(),
            text: std::fs::read_to_string(&path).unwrap(),
        })
        .collect();
    assemble(&sources, AsmOptions::default()).unwrap()
}

#[test]
fn every_corpus_program_gives_its_goldens_on_opengl_geometry_shaders_too() {
    corpus_goldens::<OpenGl>();
}

#[test]
fn every_corpus_program_gives_its_goldens_on_vulkan_geometry_shaders_too() {
    corpus_goldens::<Vulkan>();
}

fn corpus_goldens<B: Backend>() {
    if !available::<B>() {
        return;
    }
    let (mut checked, mut geometry) = (0, 0);
    for dir in programs() {
        let assembly = assemble_folder(&dir);
        for input_path in files_with(&dir, ".input.json") {
            let file = input_path.file_name().unwrap().to_str().unwrap();
            let index: usize = file
                .trim_start_matches("dvle")
                .trim_end_matches(".input.json")
                .parse()
                .unwrap();
            let dvle = &assembly.shbin.dvles[index];
            let text = std::fs::read_to_string(&input_path).unwrap();
            for precision in Precision::ALL {
                let run_input = parse_input(&text, precision, dvle.kind).unwrap();
                let program = ShaderProgram::from_shbin(&assembly.shbin, index).unwrap();
                let config = ExecConfig {
                    precision,
                    ..ExecConfig::default()
                };
                let what = format!("{} {}/{file}", B::ENGINE, dir.display());
                let Some(gpu) =
                    unless_no_geometry_stage(HostShader::<B>::compile(program, config), &what)
                else {
                    continue;
                };
                geometry += usize::from(dvle.kind == ShaderKind::Geometry);
                let options = OutputOptions {
                    bits: true,
                    state: true,
                };
                let document = run_document(&gpu, dvle, &run_input, options);
                let golden = dir.join(format!("dvle{index}.{}.golden.json", precision.name()));
                let expected = std::fs::read_to_string(&golden).unwrap();
                assert_eq!(
                    document,
                    expected,
                    "{} in {precision}: {} differs from the golden outputs",
                    dir.display(),
                    B::ENGINE
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 60, "{checked} fixtures");
    // The corpus's five geometry programs, each in the three modes, where the device has a
    // geometry stage (always, where one is required).
    if geometry > 0 || std::env::var_os("PICAJIT_REQUIRE_GPU").is_some() {
        assert!(geometry >= 5 * 3, "{geometry} geometry fixtures");
    }
}

/// Whether the reference tool `tool` runs here; panics where the GPU tools are required.
fn tool_available(tool: &str) -> bool {
    let found = std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found && std::env::var_os("PICAJIT_REQUIRE_GPU").is_some() {
        panic!("PICAJIT_REQUIRE_GPU is set and {tool} does not run");
    }
    if !found {
        eprintln!("skipped: no {tool}");
    }
    found
}

/// Whether `glslangValidator` (Debian `glslang-tools`) runs here.
fn glslang_available() -> bool {
    tool_available("glslangValidator")
}

/// Whether `spirv-val` (Debian `spirv-tools`) runs here.
fn spirv_val_available() -> bool {
    tool_available("spirv-val")
}

/// Checks that `tool` with `args` accepts `file` (its report is on stdout or stderr).
fn assert_tool_accepts(tool: &str, args: &[&str], file: &Path) {
    let checked_by = std::process::Command::new(tool)
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        checked_by.status.success(),
        "{}: {tool} refused it: {}{}",
        file.display(),
        String::from_utf8_lossy(&checked_by.stdout),
        String::from_utf8_lossy(&checked_by.stderr)
    );
}

/// Checks that the reference compiler accepts the vertex shader in `file`.
fn assert_glslang_accepts(file: &Path) {
    assert_tool_accepts("glslangValidator", &["-S", "vert"], file);
}

/// Checks that the reference compiler accepts the geometry shader in `file`.
fn assert_glslang_accepts_geometry(file: &Path) {
    assert_tool_accepts("glslangValidator", &["-S", "geom"], file);
}

/// Checks that the reference validator accepts the module in `file` for Vulkan 1.3.
fn assert_spirv_val_accepts(file: &Path) {
    assert_tool_accepts("spirv-val", &["--target-env", "vulkan1.3"], file);
}

/// The index of the assembly's geometry DVLE, if it has one.
fn geometry_dvle(assembly: &picajit::asm::Assembly) -> Option<usize> {
    (assembly.shbin.dvles.iter()).position(|dvle| dvle.kind == ShaderKind::Geometry)
}

/// Writes each corpus program as a SHBIN file into `out` and calls `each` with its name, the
/// index of each of its vertex DVLEs, the file and the SHBIN model.
fn each_vertex_dvle(out: &Path, each: impl FnMut(&str, usize, &Path, &picajit::shbin::Shbin)) {
    each_dvle_of(ShaderKind::Vertex, out, each);
}

/// [`each_vertex_dvle`] for the DVLEs of `kind`.
fn each_dvle_of(
    kind: ShaderKind,
    out: &Path,
    mut each: impl FnMut(&str, usize, &Path, &picajit::shbin::Shbin),
) {
    for dir in programs() {
        let assembly = assemble_folder(&dir);
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let shbin = out.join(format!("{name}.shbin"));
        std::fs::write(&shbin, picajit::shbin::write(&assembly.shbin)).unwrap();
        for (index, dvle) in assembly.shbin.dvles.iter().enumerate() {
            if dvle.kind == kind {
                each(&name, index, &shbin, &assembly.shbin);
            }
        }
    }
}

#[test]
fn decompile_writes_glsl_the_reference_compiler_accepts_in_every_language() {
    if !glslang_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("picajit-decompile-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut checked = 0;
    each_vertex_dvle(&out, |name, index, shbin, _| {
        for (lang, precision) in [
            ("glsl", "f24"),
            ("glsl-es", "f32"),
            ("glsl450", "f24-rne"),
            ("glsl-es320", "f24"),
        ] {
            let file = out.join(format!("{name}.{index}.{lang}.vert"));
            let status = std::process::Command::new(env!("CARGO_BIN_EXE_picajit"))
                .arg("decompile")
                .arg(shbin)
                .args(["--dvle", &index.to_string(), "--lang", lang])
                .args(["--precision", precision, "-o"])
                .arg(&file)
                .status()
                .unwrap();
            assert!(
                status.success(),
                "decompile {name} DVLE {index} --lang {lang}"
            );
            let text = std::fs::read_to_string(&file).unwrap();
            // Each instruction's address and listing, with the DVLE's output names.
            assert!(text.contains(&format!("DVLE {index}")), "{name}: no banner");
            assert!(text.contains("// names: "), "{name}: no register names");
            assert!(text.contains(" position"), "{name}: no output names");
            assert_glslang_accepts(&file);
            checked += 1;
        }
    });
    std::fs::remove_dir_all(&out).unwrap();
    assert!(checked >= 4 * 20, "{checked} translations");
}

#[test]
fn decompile_writes_geometry_shaders_the_reference_compiler_accepts_and_refuses_es() {
    if !glslang_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("picajit-decompile-gs-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut checked = 0;
    each_dvle_of(ShaderKind::Geometry, &out, |name, index, shbin, _| {
        let decompile = |lang: &str, precision: &str, form: &str, file: &Path| {
            std::process::Command::new(env!("CARGO_BIN_EXE_picajit"))
                .arg("decompile")
                .arg(shbin)
                .args(["--dvle", &index.to_string(), "--lang", lang])
                .args(["--precision", precision, "--form", form, "-o"])
                .arg(file)
                .output()
                .unwrap()
        };
        for (lang, precision, form) in [
            ("glsl", "f24", "best"),
            ("glsl450", "f32", "best"),
            ("glsl-es320", "f24", "best"),
            ("glsl", "f24-rne", "dispatch"),
        ] {
            let file = out.join(format!("{name}.{index}.{lang}.{form}.geom"));
            let output = decompile(lang, precision, form, &file);
            assert!(
                output.status.success(),
                "decompile {name} DVLE {index} --lang {lang}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(
                text.contains("layout(points) in;"),
                "{name}: not a geometry shader"
            );
            assert!(text.contains("EmitVertex();"), "{name}: no EmitVertex");
            assert_glslang_accepts_geometry(&file);
            checked += 1;
        }
        // GLSL ES 3.00 has no geometry shaders: a clear refusal, no file.
        let file = out.join(format!("{name}.{index}.es.geom"));
        let output = decompile("glsl-es", "f24", "best", &file);
        assert!(
            !output.status.success(),
            "{name}: glsl-es took a geometry shader"
        );
        let message = String::from_utf8_lossy(&output.stderr);
        assert!(message.contains("geometry"), "{name}: {message}");
        assert!(!file.exists(), "{name}: a file was written");
    });
    std::fs::remove_dir_all(&out).unwrap();
    assert!(checked >= 4 * 5, "{checked} translations");
}

#[test]
fn decompile_writes_spirv_the_reference_validator_accepts_in_both_forms() {
    use picajit::translate::spv::{SpirvOptions, captured, print, to_bytes};
    use picajit::translate::{Options, interface::Interface, translate};
    if !spirv_val_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("picajit-spirv-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut checked = 0;
    each_vertex_dvle(&out, |name, index, shbin, model| {
        for (form, precision) in [("best", "f24"), ("dispatch", "f32"), ("best", "f24-rne")] {
            let file = out.join(format!("{name}.{index}.{form}.{precision}.spv"));
            let status = std::process::Command::new(env!("CARGO_BIN_EXE_picajit"))
                .arg("decompile")
                .arg(shbin)
                .args(["--dvle", &index.to_string(), "--lang", "spirv"])
                .args(["--precision", precision, "--form", form, "-o"])
                .arg(&file)
                .status()
                .unwrap();
            assert!(
                status.success(),
                "decompile {name} DVLE {index} --form {form}"
            );
            let bytes = std::fs::read(&file).unwrap();
            assert_eq!(&bytes[..4], &0x0723_0203u32.to_le_bytes(), "{name}: magic");
            // The listing is the module's source text, with the DVLE's names.
            let text = String::from_utf8_lossy(&bytes);
            assert!(text.contains("// names: "), "{name}: no register names");
            assert!(text.contains(": end"), "{name}: no listing");
            assert_spirv_val_accepts(&file);
            checked += 1;
        }
        // The checking engine's build: the end state and transform feedback decorations.
        let program = ShaderProgram::from_shbin(model, index).unwrap();
        let options = Options {
            end_state: true,
            ..Options::default()
        };
        let translation = translate(&program, &options, "main").unwrap();
        let capture = SpirvOptions {
            capture: captured(&translation.module),
            listing: true,
        };
        let words = print(&translation.module, &Interface::default(), &capture);
        let file = out.join(format!("{name}.{index}.capture.spv"));
        std::fs::write(&file, to_bytes(&words)).unwrap();
        assert_spirv_val_accepts(&file);
        checked += 1;
    });
    std::fs::remove_dir_all(&out).unwrap();
    assert!(checked >= 4 * 20, "{checked} modules");
}

/// The execution model of a SPIR-V module's first `OpEntryPoint` (0 vertex, 3 geometry).
fn execution_model(bytes: &[u8]) -> Option<u32> {
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut at = 5;
    while at < words.len() {
        let (length, op) = ((words[at] >> 16) as usize, words[at] & 0xFFFF);
        if op == 15 {
            return words.get(at + 1).copied();
        }
        if length == 0 {
            return None;
        }
        at += length;
    }
    None
}

#[test]
fn decompile_writes_spirv_geometry_shaders_the_reference_validator_accepts() {
    use picajit::translate::geometry::vertex_stage;
    use picajit::translate::spv::{SpirvOptions, print, to_bytes};
    use picajit::translate::{Options, interface::Interface, translate};
    if !spirv_val_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("picajit-spirv-gs-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut checked = 0;
    each_dvle_of(ShaderKind::Geometry, &out, |name, index, shbin, model| {
        for (form, precision) in [("best", "f24"), ("dispatch", "f32"), ("best", "f24-rne")] {
            let file = out.join(format!("{name}.{index}.{form}.{precision}.spv"));
            let output = std::process::Command::new(env!("CARGO_BIN_EXE_picajit"))
                .arg("decompile")
                .arg(shbin)
                .args(["--dvle", &index.to_string(), "--lang", "spirv"])
                .args(["--precision", precision, "--form", form, "-o"])
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "decompile {name} DVLE {index} --lang spirv --form {form}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let bytes = std::fs::read(&file).unwrap();
            assert_eq!(
                execution_model(&bytes),
                Some(3),
                "{name}: not a geometry module"
            );
            assert!(
                String::from_utf8_lossy(&bytes).contains("emit"),
                "{name}: no listing"
            );
            assert_spirv_val_accepts(&file);
            checked += 1;
        }
        // The record form the checking engine runs (packets captured as points), and the
        // vertex stage in front of it.
        let program = ShaderProgram::from_shbin(model, index).unwrap();
        let options = Options {
            end_state: true,
            ..Options::default()
        };
        let translation = translate(&program, &options, "main").unwrap();
        let records = print(
            &translation.module,
            &Interface::default(),
            &SpirvOptions::default(),
        );
        let file = out.join(format!("{name}.{index}.records.spv"));
        std::fs::write(&file, to_bytes(&records)).unwrap();
        assert_spirv_val_accepts(&file);
        let stage = vertex_stage(translation.module.inputs);
        let vertex = print(&stage, &Interface::default(), &SpirvOptions::default());
        let file = out.join(format!("{name}.{index}.vertex-stage.spv"));
        std::fs::write(&file, to_bytes(&vertex)).unwrap();
        assert_eq!(execution_model(&to_bytes(&vertex)), Some(0));
        assert_spirv_val_accepts(&file);
        checked += 1;
    });
    std::fs::remove_dir_all(&out).unwrap();
    assert!(checked >= 4 * 5, "{checked} modules");
}

/// f32 bit patterns where exact arithmetic is hard: zeros, subnormals of every size, the
/// least normals, values near 2^-100 and 2^-63 (where the translation changes method),
/// ones, the largest finite values, infinities and NaNs, each with both signs.
fn edge_bits() -> Vec<u32> {
    let mut magnitudes = vec![
        0,
        1,
        2,
        3,
        0x7F,
        0x100,
        0x3_FFFF,
        0x40_0000,
        0x40_0001,
        0x7F_FFFF,
        0x80_0000,
        0x80_0001,
        0x8F_FFFF,
        0x100_0000,
        0x0D7F_FFFF,
        0x0D80_0000,
        0x0D80_0001,
        0x207F_FFFF,
        0x2080_0000,
        0x1F80_0000,
        0x3F00_0000,
        0x3F80_0000,
        0x3F80_0001,
        0x3FFF_FFFF,
        0x4000_0000,
        0x5F80_0000,
        0x7F7F_FFFF,
        0x7F80_0000,
        0x7FC0_0000,
        0x7F80_0001,
    ];
    for k in 0..23 {
        magnitudes.push(1 << k);
        magnitudes.push((1 << (k + 1)) - 1);
    }
    let mut bits: Vec<u32> = magnitudes
        .iter()
        .flat_map(|&m| [m, m | 0x8000_0000])
        .collect();
    bits.sort_unstable();
    bits.dedup();
    bits
}

#[test]
fn f32_and_float24_add_and_multiply_are_exact_on_edge_values_on_the_gpu() {
    let mut builder = Builder::new();
    builder.ops(
        "add o0, v0, v1; mul o1, v0, v1; mad o2, v0, v1, v2; dp4 o3, v0, v1; \
         add o4, v0, -v1; mul o5, v1, v2; end",
    );
    let program = builder.program(ShaderKind::Vertex);
    let edges = edge_bits();
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let pick = |rng: &mut XorShift| -> f32 {
        match rng.below(4) {
            // Any bits, most of them small exponents, where subnormal results are.
            0 => f32::from_bits(rng.next() as u32),
            1 => f32::from_bits((rng.next() as u32) & 0x87FF_FFFF),
            _ => f32::from_bits(edges[rng.below(edges.len())]),
        }
    };
    let mut vertices: Vec<InputRegisters> = Vec::new();
    // Every pair of edge values in lane x, random lanes elsewhere.
    for &x in &edges {
        for &y in &edges {
            let mut v = [[0.0f32; 4]; 16];
            for lane in 0..4 {
                for register in &mut v[..3] {
                    register[lane] = pick(&mut rng);
                }
            }
            v[0][0] = f32::from_bits(x);
            v[1][0] = f32::from_bits(y);
            vertices.push(v);
        }
    }
    assert_gpu_agrees(&program, &vertices);
}

#[test]
fn floor_of_lanes_a_partial_write_left_is_exact_on_the_gpu() {
    // Difftest seed 1, programs 853 and 1810 (f32): with OpSelect in FLR's bit selects,
    // lavapipe gave -0 for the +0 lanes a partial write had left (docs/gpu-shaders.md, "SPIR-V").
    let mut builder = Builder::new();
    builder.ops(
        "mov r0.yzw, v0; flr o0, r0; mov r1.xzw, v0; flr o1, r1; \
         mov r2.w, v1; flr o2.x, r2; end",
    );
    let program = builder.program(ShaderKind::Vertex);
    let vertices: Vec<InputRegisters> = edge_bits()
        .into_iter()
        .map(|x| {
            let mut v = [[0.0f32; 4]; 16];
            v[0] = [f32::from_bits(x); 4];
            v[1] = [f32::from_bits(x ^ 0x8000_0000); 4];
            v
        })
        .collect();
    assert_gpu_agrees(&program, &vertices);
}

#[test]
fn the_costly_functions_and_floor_are_exact_on_edge_values_on_the_gpu() {
    // Two of each costly function, so that the shared evaluation runs too (docs/gpu-shaders.md,
    // "Compile cost").
    let mut builder = Builder::new();
    builder.ops(
        "ex2 o0, v0; lg2 o1, v0; rcp o2, v0; rsq o3, v0; flr o4, v0; \
         ex2 o5, -v0; lg2 o6, -v0; rcp o7, -v0; rsq o8, -v0; end",
    );
    let program = builder.program(ShaderKind::Vertex);
    let mut rng = XorShift(0xD1B5_4A32_D192_ED03);
    let mut vertices: Vec<InputRegisters> = edge_bits()
        .into_iter()
        .map(|x| {
            let mut v = [[0.0f32; 4]; 16];
            v[0] = [f32::from_bits(x); 4];
            v
        })
        .collect();
    for _ in 0..2000 {
        let mut v = [[0.0f32; 4]; 16];
        let bits = match rng.below(3) {
            0 => rng.next() as u32,
            // Near 1, where LG2 is hardest, and in EX2's range.
            1 => 0x3F80_0000 ^ ((rng.next() as u32) & 0x8000_FFFF),
            _ => ((rng.next() as u32) & 0x83FF_FFFF) | 0x4000_0000,
        };
        v[0] = [f32::from_bits(bits); 4];
        vertices.push(v);
    }
    assert_gpu_agrees(&program, &vertices);
}

/// `program` gives the interpreter's bits on each GPU API here for every output lane of
/// `vertices`, in every precision mode (zero uniforms).
fn assert_gpu_agrees(program: &ShaderProgram, vertices: &[InputRegisters]) {
    if available::<OpenGl>() {
        assert_agrees_on::<OpenGl>(program, vertices);
    }
    if available::<Vulkan>() {
        assert_agrees_on::<Vulkan>(program, vertices);
    }
}

fn assert_agrees_on<B: Backend>(program: &ShaderProgram, vertices: &[InputRegisters]) {
    let uniforms = Uniforms::default();
    for precision in Precision::ALL {
        let config = ExecConfig {
            precision,
            ..ExecConfig::default()
        };
        let reference = picajit::engine::prepare(
            picajit::engine::EngineKind::Interpreter,
            program.clone(),
            config,
        )
        .unwrap();
        let gpu = HostShader::<B>::compile(program.clone(), config).unwrap();
        let expected = outputs(&*reference, &uniforms, vertices);
        let got = outputs(&gpu, &uniforms, vertices);
        let mut wrong = 0;
        for (k, (e, g)) in expected.iter().zip(&got).enumerate() {
            if e != g {
                if wrong < 8 {
                    // Planes hold one component of one output for every vertex.
                    let vertex = k % vertices.len();
                    let plane = k / vertices.len();
                    let lane = plane % 4;
                    let v = &vertices[vertex];
                    eprintln!(
                        "{precision}: plane {plane} of vertex {vertex}: interp {e:#010x}, {} {g:#010x} (v0-v2 lane {lane}: {:#010x} {:#010x} {:#010x})",
                        B::ENGINE,
                        v[0][lane].to_bits(),
                        v[1][lane].to_bits(),
                        v[2][lane].to_bits()
                    );
                }
                wrong += 1;
            }
        }
        assert_eq!(
            wrong,
            0,
            "{} in {precision}: {wrong} lanes differ",
            B::ENGINE
        );
    }
}

/// Every output lane of `vertices` on `engine`, as bits, plane by plane.
fn outputs(
    engine: &dyn ShaderEngine,
    uniforms: &Uniforms,
    vertices: &[InputRegisters],
) -> Vec<u32> {
    let layout = BatchLayout::of(engine.program());
    let inputs = SoaBuffer::from_vertices(layout.inputs, vertices);
    let mut outputs = SoaBuffer::zeroed(layout.outputs, vertices.len());
    let mut errors = Vec::new();
    let mut io = BatchIo::new(inputs.inputs(), outputs.outputs(), None).unwrap();
    engine.run_batch(uniforms, &mut io, &mut errors);
    assert!(errors.is_empty(), "{errors:?}");
    (0..layout.outputs.planes())
        .flat_map(|k| {
            outputs
                .plane(k)
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_vertex_program_extracted_from_the_corpus_scenes_runs_exactly_on_the_gpu() {
    if available::<OpenGl>() {
        extracted_programs::<OpenGl>();
    }
    if available::<Vulkan>() {
        extracted_programs::<Vulkan>();
    }
}

fn extracted_programs<B: Backend>() {
    use picajit::engine::EngineKind;
    use picajit::extract::{ExtractLimits, extract};
    let scenes = files_with(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/scenes"),
        ".ctf",
    );
    let mut seen = std::collections::HashSet::new();
    let mut checked = 0;
    for path in &scenes {
        let trace = picajit::gpu::front::trace::read(&std::fs::read(path).unwrap()).unwrap();
        let programs = extract(&trace, EngineKind::Interpreter, 1, ExtractLimits::default())
            .expect("the scene replays");
        for program in programs {
            if program.stage != ShaderKind::Vertex || !seen.insert(program.shbin.code.clone()) {
                continue;
            }
            let dvle = &program.shbin.dvles[0];
            // The first state: one compile per program and mode keeps the test short.
            let json = program.input_json(0).unwrap();
            for precision in Precision::ALL {
                let run_input = parse_input(&json, precision, dvle.kind).unwrap();
                let shader = ShaderProgram::from_shbin(&program.shbin, 0).unwrap();
                let config = ExecConfig {
                    precision,
                    ..ExecConfig::default()
                };
                let reference =
                    picajit::engine::prepare(EngineKind::Interpreter, shader.clone(), config)
                        .unwrap();
                let gpu = HostShader::<B>::compile(shader, config)
                    .unwrap_or_else(|e| panic!("{} {}: {e}", B::ENGINE, path.display()));
                let options = OutputOptions {
                    bits: true,
                    state: true,
                };
                assert_eq!(
                    run_document(&gpu, dvle, &run_input, options),
                    run_document(&*reference, dvle, &run_input, options),
                    "{} in {precision}: {} differs from the interpreter",
                    path.display(),
                    B::ENGINE
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 3 * 10, "{checked} programs and modes");
}

/// The engine of API `B` as the differential tester prepares it.
fn host_engine<B: Backend>(
    program: ShaderProgram,
    config: ExecConfig,
) -> Result<Box<dyn ShaderEngine>, picajit::engine::EngineError> {
    let shader =
        HostShader::<B>::compile(program, config).map_err(picajit::engine::EngineError::Gpu)?;
    Ok(Box::new(shader))
}

/// Whether `B`'s device runs geometry shaders (always, where a GPU is required).
fn geometry_available<B: Backend>() -> bool {
    if !available::<B>() {
        return false;
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/programs/point-sprite-gs");
    let assembly = assemble_folder(&dir);
    let program = ShaderProgram::from_shbin(&assembly.shbin, 1).unwrap();
    let compiled = HostShader::<B>::compile(program, ExecConfig::default());
    unless_no_geometry_stage(compiled, B::ENGINE).is_some()
}

#[test]
fn random_geometry_programs_give_the_interpreters_emissions_and_state_on_opengl() {
    random_geometry_programs::<OpenGl>();
}

#[test]
fn random_geometry_programs_give_the_interpreters_emissions_and_state_on_vulkan() {
    random_geometry_programs::<Vulkan>();
}

fn random_geometry_programs<B: Backend>() {
    use picajit::difftest::{compare::Differ, compare::interpreter, runner::case_for};
    if !geometry_available::<B>() {
        return;
    }
    // The difftest generator's geometry programs (seed 7): EMIT and SETEMIT with every flag,
    // both banks, state kept between invocations, the flow of the vertex programs.
    let cases: Vec<_> = (0..)
        .map(|index| case_for(7, index, 20))
        .filter(|case| case.program.stage == ShaderKind::Geometry)
        .take(6)
        .collect();
    let default_budget = ExecConfig::default().instruction_budget;
    for precision in Precision::ALL {
        // The default budget, and in f24 one that stops loops part way (the general form
        // counts each instruction in a geometry program: its state persists after the error).
        let budgets = match precision {
            Precision::F24Truncate => vec![default_budget, 30],
            _ => vec![default_budget],
        };
        for instruction_budget in budgets {
            let config = ExecConfig {
                precision,
                instruction_budget,
            };
            let mut differ = Differ::new(&interpreter, &host_engine::<B>, config);
            for (n, case) in cases.iter().enumerate() {
                let comparison = differ.compare(case).unwrap();
                assert_eq!(
                    comparison.mismatch,
                    None,
                    "{}: geometry program {n} in {precision}, budget {instruction_budget}",
                    B::ENGINE
                );
                assert!(comparison.invocations > 0);
            }
        }
    }
}

/// A device the triangle form is drawn on: compiled with its outputs `written` captured, run on
/// one point with the uniform block and the state block, whole triangles captured.
trait TriangleDevice {
    type Program;
    const NAME: &'static str;
    fn compile(
        &self,
        translation: &picajit::translate::Translation,
        written: &[usize],
    ) -> Self::Program;
    fn draw(
        &self,
        program: &Self::Program,
        inputs: u16,
        blocks: [&[u8]; 2],
        point: &[u8],
        triangles: usize,
    ) -> Vec<u8>;
    fn delete(&self, program: Self::Program);
}

impl TriangleDevice for picajit::translate::host::gl::GlDevice {
    type Program = picajit::translate::host::gl::GlProgram;
    const NAME: &'static str = "OpenGL";
    fn compile(
        &self,
        translation: &picajit::translate::Translation,
        written: &[usize],
    ) -> Self::Program {
        use picajit::translate::{glsl, glsl::Dialect, interface::Interface};
        let source = glsl(translation, Dialect::Glsl330, &Interface::default()).unwrap();
        let names: Vec<String> = written.iter().map(|n| format!("o{n}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        self.compile_geometry(&source, translation.module.inputs, &names)
            .unwrap()
    }
    fn draw(
        &self,
        program: &Self::Program,
        inputs: u16,
        [block, state]: [&[u8]; 2],
        point: &[u8],
        triangles: usize,
    ) -> Vec<u8> {
        use picajit::translate::glsl::GEOMETRY_BLOCK;
        use picajit::translate::host::Capture;
        self.run_geometry(
            Capture::Triangles,
            program,
            &[("pica_uniforms", block), (GEOMETRY_BLOCK, state)],
            point,
            inputs,
            triangles,
        )
        .unwrap()
    }
    fn delete(&self, program: Self::Program) {
        self.delete(program);
    }
}

impl TriangleDevice for picajit::translate::host::vulkan::VkDevice {
    type Program = picajit::translate::host::vulkan::VkProgram;
    const NAME: &'static str = "Vulkan";
    fn compile(
        &self,
        translation: &picajit::translate::Translation,
        written: &[usize],
    ) -> Self::Program {
        use picajit::translate::{interface::Interface, spirv, spv::SpirvOptions};
        let options = SpirvOptions {
            capture: written.iter().map(|&n| Some(n as u8)).collect(),
            listing: false,
        };
        let words = spirv(translation, &Interface::default(), &options).unwrap();
        let stride = 16 * written.len() as u32;
        self.compile_geometry(&words, translation.module.inputs, stride)
            .unwrap()
    }
    fn draw(
        &self,
        program: &Self::Program,
        _inputs: u16,
        [block, state]: [&[u8]; 2],
        point: &[u8],
        triangles: usize,
    ) -> Vec<u8> {
        use picajit::translate::host::Capture;
        self.run_geometry(Capture::Triangles, program, block, state, point, triangles)
            .unwrap()
    }
    fn delete(&self, program: Self::Program) {
        self.delete(program);
    }
}

#[test]
fn the_triangle_form_an_emulator_draws_gives_the_interpreters_triangles_on_opengl() {
    use picajit::translate::host::gl::{Api, GlDevice};
    if !available::<OpenGl>() {
        return;
    }
    triangle_form(&GlDevice::open(Api::Gl).unwrap());
}

#[test]
fn the_triangle_form_an_emulator_draws_gives_the_interpreters_triangles_on_vulkan() {
    use picajit::translate::host::vulkan::VkDevice;
    if !geometry_available::<Vulkan>() {
        return;
    }
    triangle_form(&VkDevice::open().unwrap());
}

/// The form `decompile` prints and the C ABI returns: each PICA triangle a strip of three
/// vertices, drawn with transform feedback capturing whole triangles. Each invocation starts
/// from the interpreter's state before it (the caller's block).
fn triangle_form<D: TriangleDevice>(device: &D) {
    use picajit::exec::{GeometryResult, GeometryState};
    use picajit::translate::host::engine::state_bytes;
    use picajit::translate::host::{block_bytes, push_input_bytes};
    use picajit::translate::{Options, translate};
    let (mut triangles, mut checked) = (0, 0);
    for dir in programs() {
        let assembly = assemble_folder(&dir);
        let Some(index) = geometry_dvle(&assembly) else {
            continue;
        };
        let dvle = &assembly.shbin.dvles[index];
        let text = std::fs::read_to_string(dir.join(format!("dvle{index}.input.json"))).unwrap();
        for precision in Precision::ALL {
            let run_input = parse_input(&text, precision, dvle.kind).unwrap();
            let program = ShaderProgram::from_shbin(&assembly.shbin, index).unwrap();
            let config = ExecConfig {
                precision,
                ..ExecConfig::default()
            };
            let translation = translate(&program, &Options::of(config, false), "main").unwrap();
            let module = &translation.module;
            let layout = module.geometry.expect("a geometry shader");
            let written: Vec<usize> = (0..16).filter(|n| module.outputs & (1 << n) != 0).collect();
            let compiled = device.compile(&translation, &written);
            let reference = picajit::engine::prepare(
                picajit::engine::EngineKind::Interpreter,
                program.clone(),
                config,
            )
            .unwrap();
            let mut uniforms = Uniforms::from_constants(dvle);
            run_input.apply_uniforms(&mut uniforms);
            let mut state = GeometryState::default();
            for (n, invocation) in run_input.invocations.iter().enumerate() {
                for &(c, v) in &invocation.uniform_writes {
                    uniforms.float[c] = v;
                }
                // b15 as this invocation sees it, and the state it starts from.
                let mut seen = uniforms.clone();
                seen.bools = state.invocation_bools(uniforms.bools);
                let block = block_bytes(&seen);
                let start = state_bytes(&state, 0);
                let mut point = Vec::with_capacity(256);
                push_input_bytes(&mut point, &invocation.registers);
                let mut emitted = GeometryResult::default();
                let _ = reference.run_geometry(
                    &mut state,
                    &uniforms,
                    &invocation.registers,
                    &mut emitted,
                );
                let mut expected = Vec::new();
                for primitive in &emitted.primitives {
                    let order = if primitive.winding {
                        [1, 0, 2]
                    } else {
                        [0, 1, 2]
                    };
                    for slot in order {
                        for &o in &written {
                            for lane in primitive.vertices[slot][o] {
                                expected.extend_from_slice(&lane.to_bits().to_le_bytes());
                            }
                        }
                    }
                }
                assert!(3 * emitted.primitives.len() <= layout.max_vertices() as usize);
                let got = device.draw(
                    &compiled,
                    module.inputs,
                    [&block, &start],
                    &point,
                    layout.max_vertices() as usize / 3,
                );
                assert!(
                    got == expected,
                    "{}: {} in {precision}, invocation {n}: {} triangles drawn, {} emitted, or their bits differ",
                    D::NAME,
                    dir.display(),
                    got.len() / (48 * written.len()),
                    emitted.primitives.len()
                );
                triangles += emitted.primitives.len();
            }
            device.delete(compiled);
            checked += 1;
        }
    }
    assert!(checked >= 5 * 3, "{checked} programs and modes");
    assert!(triangles > 50, "{triangles} triangles");
}

#[test]
fn a_geometry_shader_stopped_by_the_budget_keeps_what_it_emitted_and_its_state_on_opengl() {
    budget_stops_geometry::<OpenGl>();
}

#[test]
fn a_geometry_shader_stopped_by_the_budget_keeps_what_it_emitted_and_its_state_on_vulkan() {
    budget_stops_geometry::<Vulkan>();
}

fn budget_stops_geometry<B: Backend>() {
    use picajit::difftest::compare::{geometry_difference, state_difference};
    use picajit::exec::{GeometryResult, GeometryState};
    if !geometry_available::<B>() {
        return;
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/programs/point-sprite-gs");
    let assembly = assemble_folder(&dir);
    let program = ShaderProgram::from_shbin(&assembly.shbin, 1).unwrap();
    assert_eq!(program.stage, ShaderKind::Geometry);
    let mut rng = XorShift(45);
    let invocations: Vec<InputRegisters> = (0..6)
        .map(|_| {
            let mut v = InputRegisters::default();
            for register in v.iter_mut().take(3) {
                for lane in register.iter_mut() {
                    *lane = (rng.next() % 2000) as f32 / 100.0 - 10.0;
                }
            }
            v
        })
        .collect();
    let uniforms = Uniforms::default();
    let mut stopped_after_emitting = 0;
    for precision in [Precision::F24Truncate, Precision::F32] {
        // Budgets that stop the program before, between and after its EMITs.
        for instruction_budget in [3, 17, 29, 41, 1000] {
            let config = ExecConfig {
                precision,
                instruction_budget,
            };
            let reference = picajit::engine::prepare(
                picajit::engine::EngineKind::Interpreter,
                program.clone(),
                config,
            )
            .unwrap();
            let gpu = HostShader::<B>::compile(program.clone(), config).unwrap();
            let mut states = [GeometryState::default(), GeometryState::default()];
            for (n, inputs) in invocations.iter().enumerate() {
                let mut emitted = [GeometryResult::default(), GeometryResult::default()];
                let [state_a, state_b] = &mut states;
                let [emitted_a, emitted_b] = &mut emitted;
                let a = reference.run_geometry(state_a, &uniforms, inputs, emitted_a);
                let b = gpu.run_geometry(state_b, &uniforms, inputs, emitted_b);
                let names = ["interp", B::ENGINE];
                let context = format!(
                    "{}: {precision}, budget {instruction_budget}, invocation {n}",
                    B::ENGINE
                );
                assert_eq!(
                    geometry_difference((&a, &emitted[0]), (&b, &emitted[1]), names),
                    None,
                    "{context}"
                );
                assert_eq!(
                    state_difference(&states[0], &states[1], names),
                    None,
                    "{context}"
                );
                if a.is_err() && !emitted[0].vertices.is_empty() {
                    stopped_after_emitting += 1;
                }
            }
        }
    }
    assert!(
        stopped_after_emitting > 0,
        "no budget stopped the program after an EMIT"
    );
}

/// `program` translated through the C ABI in the globals style, as an emulator asks for it:
/// the source and its interface.
fn translate_through_c_abi(
    program: &ShaderProgram,
    precision: u32,
    language: u32,
    entry: &std::ffi::CStr,
) -> (String, picajit::capi::TranslationInfo) {
    use picajit::capi;
    let upload = capi::Program {
        code: program.code.as_ptr(),
        code_len: program.code_len,
        opdescs: program.opdescs.as_ptr(),
        opdesc_len: program.opdesc_len,
        entry: u32::from(program.entry),
        stage: u32::from(program.stage == ShaderKind::Geometry),
        output_mask: program.output_mask,
    };
    let options = capi::TranslateOptions {
        precision,
        language,
        outputs: capi::OUTPUTS_GLOBALS,
        comments: 0,
        instruction_budget: 0,
        entry: entry.as_ptr(),
        block_name: c"emulator_uniforms".as_ptr(),
    };
    let mut translation = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call.
    let status = unsafe { capi::picajit_translate(&upload, &options, &mut translation) };
    assert_eq!(status, capi::OK);
    let mut info = capi::TranslationInfo::default();
    // SAFETY: a live translation, a valid out pointer.
    let source = unsafe {
        assert_eq!(
            capi::picajit_translation_get_info(translation, &mut info),
            capi::OK
        );
        std::ffi::CStr::from_ptr(capi::picajit_translation_source(translation))
            .to_str()
            .unwrap()
            .to_string()
    };
    // SAFETY: live, not used again.
    unsafe { capi::picajit_translation_free(translation) };
    (source, info)
}

#[test]
fn the_c_abi_translation_embeds_in_an_emulators_own_main() {
    use picajit::capi;
    if !glslang_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("picajit-embed-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut checked = 0;
    for dir in programs() {
        let assembly = assemble_folder(&dir);
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let program = ShaderProgram::from_shbin(&assembly.shbin, 0).unwrap();
        if program.stage != ShaderKind::Vertex {
            continue;
        }
        for (language, header) in [
            (capi::LANGUAGE_GLSL330, "#version 330 core"),
            (capi::LANGUAGE_GLSL_ES300, "#version 300 es"),
        ] {
            let (source, info) = translate_through_c_abi(&program, 0, language, c"run_pica_shader");
            assert!(source.starts_with(header), "{name}");
            assert_eq!(info.source_bytes as usize, source.len());
            assert_eq!(
                info.output_mask,
                u32::from(program.output_mask) & info.output_mask
            );
            // The emulator's main: run the translation, then map its outputs (here: the first
            // output is the position).
            let first = info.output_mask.trailing_zeros();
            let shader = format!(
                "{source}\nvoid main() {{\n    run_pica_shader();\n    gl_Position = vec4(o{first});\n}}\n"
            );
            let file = out.join(format!("{name}.{language}.vert"));
            std::fs::write(&file, &shader).unwrap();
            assert_glslang_accepts(&file);
            checked += 1;
        }
    }
    std::fs::remove_dir_all(&out).unwrap();
    assert!(checked >= 2 * 20, "{checked} translations");
}

#[test]
fn the_c_abi_geometry_translation_calls_the_emulators_emit_function() {
    use picajit::capi;
    use picajit::translate::host::engine::state_bytes;
    if !glslang_available() {
        return;
    }
    let out = std::env::temp_dir().join(format!("picajit-embed-gs-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let mut checked = 0;
    for dir in programs() {
        let assembly = assemble_folder(&dir);
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let Some(index) = geometry_dvle(&assembly) else {
            continue;
        };
        let program = ShaderProgram::from_shbin(&assembly.shbin, index).unwrap();
        for language in [capi::LANGUAGE_GLSL330, capi::LANGUAGE_GLSL_ES320] {
            let (source, info) = translate_through_c_abi(&program, 2, language, c"run_pica_gs");
            assert_eq!(info.stage, 1, "{name}");
            assert!(source.contains(&format!("max_vertices = {}", info.max_vertices)));
            assert!(
                !source.contains("EmitVertex();"),
                "{name}: EMIT bypasses the caller"
            );
            assert!(source.contains("run_pica_gs_emit_vertex();"), "{name}");
            // A draw starts from the default state: the block is all zeros.
            let start = state_bytes(&picajit::exec::GeometryState::default(), 0);
            assert_eq!(start.len(), info.state_block_bytes as usize);
            assert!(start.iter().all(|&b| b == 0));
            // The emulator's emit function maps the outputs (here the first is the position).
            let first = info.output_mask.trailing_zeros();
            let shader = format!(
                "{source}\nout vec4 color;\nvoid run_pica_gs_emit_vertex() {{\n    gl_Position = o{first};\n    color = o{first};\n    EmitVertex();\n}}\nvoid main() {{\n    run_pica_gs();\n}}\n"
            );
            let file = out.join(format!("{name}.{language}.geom"));
            std::fs::write(&file, &shader).unwrap();
            assert_glslang_accepts_geometry(&file);
            checked += 1;
        }
    }
    std::fs::remove_dir_all(&out).unwrap();
    assert!(checked >= 2 * 5, "{checked} translations");
}
