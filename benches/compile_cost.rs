//! Prepare (compile) time of every engine ([`EngineKind::ALL`]) on adversarial program shapes
//! (`jit-tests/shapes`) and on the corpus: one line per program and engine, the best of
//! [`ROUNDS`] prepares (the engines take turns), and for the JIT the size of what it emitted
//! (`JitShader::compile_stats`). Not a criterion benchmark: it prints, so that
//! `/usr/bin/time -v` can take the peak memory of one shape and engine.
//!
//! ```sh
//! cargo bench --bench compile_cost                      # every shape at 512..4096 words, the corpus
//! cargo bench --bench compile_cost -- loops-breaks 4096 # one shape and size
//! cargo bench --bench compile_cost -- corpus            # a filter: every corpus program
//! PRECISION=f24-rne cargo bench --bench compile_cost     # another precision mode
//! ENGINE=jit cargo bench --bench compile_cost            # one engine
//! ROUNDS=1 cargo bench --bench compile_cost -- loops-breaks 4096   # one prepare (peak memory)
//! ```

#[path = "../jit-tests/common/mod.rs"]
mod common;
#[path = "../jit-tests/shapes/mod.rs"]
mod shapes;

use std::time::{Duration, Instant};

use picajit::engine::{EngineKind, prepare};
use picajit::exec::ExecConfig;
use picajit::float24::Precision;
use picajit::jit::JitShader;
use picajit::program::ShaderProgram;
use shapes::Shape;

const SIZES: [usize; 4] = [512, 1024, 2048, 4096];

/// Prepares per program and engine (`ROUNDS=N` to change); the best is printed.
const ROUNDS: usize = 3;

fn config() -> ExecConfig {
    let precision = std::env::var("PRECISION")
        .ok()
        .and_then(|name| Precision::from_name(&name))
        .unwrap_or_default();
    ExecConfig {
        precision,
        ..ExecConfig::default()
    }
}

/// The engines asked for (`ENGINE=name`), every one by default.
fn engines() -> Vec<EngineKind> {
    let wanted = std::env::var("ENGINE").ok();
    EngineKind::ALL
        .into_iter()
        .filter(|kind| wanted.as_deref().is_none_or(|name| name == kind.name()))
        .collect()
}

fn rounds() -> usize {
    std::env::var("ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(ROUNDS)
}

fn compile(label: &str, program: ShaderProgram) {
    let config = config();
    let kinds = engines();
    let mut best = vec![Duration::MAX; kinds.len()];
    for _ in 0..rounds() {
        for (best, &kind) in best.iter_mut().zip(&kinds) {
            let start = Instant::now();
            let engine = prepare(kind, program.clone(), config).expect("prepares");
            *best = (*best).min(start.elapsed());
            drop(engine);
        }
    }
    for (kind, time) in kinds.into_iter().zip(best) {
        let mut line = format!(
            "{label:<44} {:<8} {:>9.3} ms  words {:>4}",
            kind.name(),
            time.as_secs_f64() * 1e3,
            program.code_len
        );
        if kind == EngineKind::Jit {
            // The JIT's own statistics, from one more (untimed) compile.
            let stats = JitShader::compile(program.clone(), config)
                .expect("compiles")
                .compile_stats();
            line += &format!(
                "  reachable {:>4}  ir {:>7} insts {:>6} blocks  code {:>8} bytes",
                stats.reachable_words, stats.ir_instructions, stats.ir_blocks, stats.code_bytes
            );
        }
        println!("{line}");
    }
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
    for (name, program) in common::corpus_programs() {
        let label = format!("compile_cost/corpus/{name}");
        if wanted(&label) {
            compile(&label, program);
        }
    }
}
