//! What translating for host GPUs costs (docs/gpu-shaders.md): per corpus vertex program and
//! for random difftest programs, the best of [`ROUNDS`] times of each phase (the translation
//! to IR with its structuring, the GLSL printer, the SPIR-V printer) and the output's size.
//! The GLSL printer reuses the helpers it printed before (in this process): its first print of
//! each program is shown too, which for the first programs prints most helpers anew.
//! Not a criterion benchmark: one line per program, so that the phases compare at a glance.
//!
//! ```sh
//! cargo bench --bench translate_cost                  # the corpus, then 200 random programs
//! cargo bench --bench translate_cost -- skinning      # a filter on the label
//! PRECISION=f32 cargo bench --bench translate_cost    # another precision mode
//! ROUNDS=2000 cargo bench --bench translate_cost -- fog  # longer, for a profiler
//! PROGRAMS=DIR cargo bench --bench translate_cost     # also every vertex DVLE of DIR/**/*.shbin
//! ```
//!
//! `PROGRAMS` takes what `picajit extract TRACE.ctf -o DIR` writes: the real programs a user
//! has a trace of.

#[path = "../jit-tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use picajit::difftest::runner::case_for;
use picajit::exec::ExecConfig;
use picajit::float24::Precision;
use picajit::program::{ShaderKind, ShaderProgram};
use picajit::translate::glsl::Dialect;
use picajit::translate::interface::Interface;
use picajit::translate::spv::{self, SpirvOptions};
use picajit::translate::{Options, glsl, spirv, translate};

/// Translations per program; the best of each phase is printed. `ROUNDS=N` runs more, for a
/// profiler.
const ROUNDS: usize = 20;

fn rounds() -> usize {
    std::env::var("ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(ROUNDS)
}

/// Random programs after the corpus (difftest seed 1, up to 64 words, vertex shaders only).
const RANDOM: u64 = 200;

fn options() -> Options {
    let precision = std::env::var("PRECISION")
        .ok()
        .and_then(|name| Precision::from_name(&name))
        .unwrap_or_default();
    Options::of(
        ExecConfig {
            precision,
            ..ExecConfig::default()
        },
        false,
    )
}

/// The phases' best times and the outputs' sizes of one program.
struct Cost {
    ir: Duration,
    /// The first GLSL print of the program (its helpers perhaps not printed before).
    first_glsl: Duration,
    glsl: Duration,
    spirv: Duration,
    glsl_bytes: usize,
    spirv_bytes: usize,
    form: &'static str,
}

fn measure(program: &ShaderProgram) -> Cost {
    let options = options();
    let interface = Interface::default();
    let listing = SpirvOptions {
        listing: true,
        ..SpirvOptions::default()
    };
    let mut cost = Cost {
        ir: Duration::MAX,
        first_glsl: Duration::ZERO,
        glsl: Duration::MAX,
        spirv: Duration::MAX,
        glsl_bytes: 0,
        spirv_bytes: 0,
        form: "",
    };
    for round in 0..rounds() {
        let start = Instant::now();
        let translation = translate(program, &options, "main").expect("a vertex program");
        cost.ir = cost.ir.min(start.elapsed());
        let start = Instant::now();
        let text = glsl(&translation, Dialect::Glsl330, &interface).expect("a vertex program");
        if round == 0 {
            cost.first_glsl = start.elapsed();
        }
        cost.glsl = cost.glsl.min(start.elapsed());
        let start = Instant::now();
        let words = spirv(&translation, &interface, &listing).expect("a vertex program");
        cost.spirv = cost.spirv.min(start.elapsed());
        cost.glsl_bytes = text.len();
        cost.spirv_bytes = spv::to_bytes(&words).len();
        cost.form = translation.form.name();
    }
    cost
}

fn report(label: &str, program: &ShaderProgram) -> Cost {
    let cost = measure(program);
    println!(
        "{label:<34} words {:>3}  {:<10}  ir {:>7.1} µs  glsl {:>6.1} µs (first {:>6.1})  \
         spirv {:>6.1} µs  glsl {:>6} B  spirv {:>7} B",
        program.code_len,
        cost.form,
        cost.ir.as_secs_f64() * 1e6,
        cost.glsl.as_secs_f64() * 1e6,
        cost.first_glsl.as_secs_f64() * 1e6,
        cost.spirv.as_secs_f64() * 1e6,
        cost.glsl_bytes,
        cost.spirv_bytes,
    );
    cost
}

/// Every vertex DVLE of the SHBIN files under `dir`, labelled by path and DVLE, in path order.
fn shbin_programs(dir: &std::path::Path) -> Vec<(String, ShaderProgram)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            eprintln!("PROGRAMS: cannot read {}", dir.display());
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "shbin") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    let mut programs = Vec::new();
    for file in files {
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        let shown = file
            .strip_prefix(dir)
            .unwrap_or(&file)
            .display()
            .to_string();
        let shbin = match picajit::shbin::parse(&bytes) {
            Ok(shbin) => shbin,
            Err(error) => {
                eprintln!("PROGRAMS: {shown}: {error}");
                continue;
            }
        };
        for dvle in 0..shbin.dvles.len() {
            match ShaderProgram::from_shbin(&shbin, dvle) {
                Ok(program) if program.stage == ShaderKind::Vertex => {
                    programs.push((format!("{shown}/{dvle}"), program));
                }
                Ok(_) => {}
                Err(error) => eprintln!("PROGRAMS: {shown}, DVLE {dvle}: {error}"),
            }
        }
    }
    programs
}

fn main() {
    // `cargo bench` passes `--bench`; the rest are filters.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wanted = |label: &str| args.is_empty() || args.iter().any(|f| label.contains(f.as_str()));
    for (name, program) in common::corpus_programs() {
        let label = format!("corpus/{name}");
        if program.stage == ShaderKind::Vertex && wanted(&label) {
            report(&label, &program);
        }
    }
    if let Ok(dir) = std::env::var("PROGRAMS") {
        for (label, program) in shbin_programs(std::path::Path::new(&dir)) {
            if wanted(&label) {
                report(&label, &program);
            }
        }
    }
    if !wanted("random") {
        return;
    }
    let mut totals = (Duration::ZERO, Duration::ZERO, Duration::ZERO, 0usize, 0u64);
    for index in 0..RANDOM * 2 {
        let program = case_for(1, index, 64)
            .program
            .to_program()
            .expect("encodes");
        if program.stage != ShaderKind::Vertex || totals.4 == RANDOM {
            continue;
        }
        let cost = measure(&program);
        totals.0 += cost.ir;
        totals.1 += cost.glsl;
        totals.2 += cost.spirv;
        totals.3 += program.code_len;
        totals.4 += 1;
    }
    let n = totals.4.max(1) as f64;
    println!(
        "random (seed 1, {} programs, {:.0} words on average): ir {:.1} µs  glsl {:.1} µs  \
         spirv {:.1} µs a program",
        totals.4,
        totals.3 as f64 / n,
        totals.0.as_secs_f64() * 1e6 / n,
        totals.1.as_secs_f64() * 1e6 / n,
        totals.2.as_secs_f64() * 1e6 / n,
    );
}
