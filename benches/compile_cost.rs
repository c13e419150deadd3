//! The JIT's compile cost on adversarial program shapes (`jit-tests/shapes`) and on the corpus:
//! one compile per line, with its time and the size of what was emitted. Not a criterion
//! benchmark: it prints, so that `/usr/bin/time -v` can take the peak memory of one shape.
//!
//! ```sh
//! cargo bench --bench compile_cost                      # every shape at 512..4096 words, the corpus
//! cargo bench --bench compile_cost -- loops-breaks 4096 # one shape and size
//! cargo bench --bench compile_cost -- corpus            # a filter: every corpus program
//! PRECISION=f24-rne cargo bench --bench compile_cost     # another precision mode
//! ```

#[path = "../jit-tests/common/mod.rs"]
mod common;
#[path = "../jit-tests/shapes/mod.rs"]
mod shapes;

use std::path::PathBuf;
use std::time::Instant;

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::exec::ExecConfig;
use picajit::float24::Precision;
use picajit::jit::JitShader;
use picajit::program::ShaderProgram;
use shapes::Shape;

const SIZES: [usize; 4] = [512, 1024, 2048, 4096];

fn compile(label: &str, program: ShaderProgram) {
    let reachable = program.code_len;
    let start = Instant::now();
    let precision = std::env::var("PRECISION")
        .ok()
        .and_then(|name| Precision::from_name(&name))
        .unwrap_or_default();
    let config = ExecConfig {
        precision,
        ..ExecConfig::default()
    };
    let shader = JitShader::compile(program, config).expect("compiles");
    let elapsed = start.elapsed();
    let stats = shader.compile_stats();
    println!(
        "{label:<44} {:>9.1} ms  words {reachable:>4}  reachable {:>4}  ir {:>7} insts {:>6} blocks  code {:>8} bytes",
        elapsed.as_secs_f64() * 1e3,
        stats.reachable_words,
        stats.ir_instructions,
        stats.ir_blocks,
        stats.code_bytes
    );
}

fn corpus() -> Vec<(String, ShaderProgram)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/programs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("the corpus exists")
        .map(|e| e.expect("readable").path())
        .collect();
    dirs.sort();
    let mut programs = Vec::new();
    for dir in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("readable")
            .map(|e| e.expect("readable").path())
            .filter(|p| p.extension().is_some_and(|e| e == "pica"))
            .collect();
        files.sort();
        let sources: Vec<SourceFile> = files
            .iter()
            .map(|path| SourceFile {
                name: path.display().to_string(),
                text: std::fs::read_to_string(path).expect("readable"),
            })
            .collect();
        let shbin = assemble(&sources, AsmOptions::default())
            .expect("corpus programs assemble")
            .shbin;
        for dvle in 0..shbin.dvles.len() {
            let name = dir.file_name().unwrap().to_string_lossy();
            let program = ShaderProgram::from_shbin(&shbin, dvle).expect("loads");
            programs.push((format!("{name}/{dvle}"), program));
        }
    }
    programs
}

fn main() {
    // `cargo bench` passes `--bench` (and criterion's options); the rest are filters.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let [name, words] = args.as_slice()
        && let (Some(shape), Ok(words)) = (Shape::named(name), words.parse::<usize>())
    {
        compile(&format!("{name} {words}"), shape.program(words));
        return;
    }
    let wanted = |label: &str| args.is_empty() || args.iter().any(|f| label.contains(f.as_str()));
    for shape in Shape::ALL {
        for words in SIZES {
            let label = format!("compile_cost/{}/{words}", shape.name());
            if wanted(&label) {
                compile(&label, shape.program(words));
            }
        }
    }
    for (name, program) in corpus() {
        let label = format!("compile_cost/corpus/{name}");
        if wanted(&label) {
            compile(&label, program);
        }
    }
}
