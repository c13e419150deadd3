//! The JIT's compile cost on adversarial program shapes (`jit-tests/shapes`) and on the corpus:
//! one compile per line, with its time and the size of what was emitted. Not a criterion
//! benchmark: it prints, so that `/usr/bin/time -v` can take the peak memory of one shape.
//!
//! ```sh
//! cargo bench --bench compile_cost                      # every shape at 512..4096 words
//! cargo bench --bench compile_cost -- loops-breaks 4096 # one shape and size
//! cargo bench --bench compile_cost -- corpus            # every corpus program
//! ```

#[path = "../jit-tests/common/mod.rs"]
mod common;
#[path = "../jit-tests/shapes/mod.rs"]
mod shapes;

use std::path::PathBuf;
use std::time::Instant;

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::exec::ExecConfig;
use picajit::jit::JitShader;
use picajit::program::ShaderProgram;
use shapes::Shape;

const SIZES: [usize; 4] = [512, 1024, 2048, 4096];

fn compile(label: &str, program: ShaderProgram) {
    let reachable = program.code_len;
    let start = Instant::now();
    let shader = JitShader::compile(program, ExecConfig::default()).expect("compiles");
    let elapsed = start.elapsed();
    let stats = shader.compile_stats();
    println!(
        "{label:<32} {:>9.1} ms  words {reachable:>4}  reachable {:>4}  ir {:>7} insts {:>6} blocks  code {:>8} bytes",
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
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    match args.as_slice() {
        [] => {
            for shape in Shape::ALL {
                for words in SIZES {
                    compile(&format!("{} {words}", shape.name()), shape.program(words));
                }
            }
        }
        [corpus_arg] if corpus_arg == "corpus" => {
            for (name, program) in corpus() {
                compile(&name, program);
            }
        }
        [name, words] => {
            let shape = Shape::named(name).unwrap_or_else(|| panic!("no shape {name}"));
            let words: usize = words.parse().expect("a word count");
            compile(&format!("{name} {words}"), shape.program(words));
        }
        _ => panic!("usage: compile_cost [corpus | SHAPE WORDS]"),
    }
}
