//! The `picajit` command line.
//!
//! * `picajit asm IN.pica [MORE.pica ...] -o OUT.shbin [--header OUT.h] [--no-nop]`: assemble.
//! * `picajit disasm FILE.shbin`: the DVLEs and a listing of the program.
//! * `picajit run PROGRAM.shbin --input IN.json [--dvle N] [--engine interp|jit]
//!   [--precision f24|f24-rne|f32] [--bits] [--state] [--output OUT.json] [--budget N]`.
//! * `picajit bench PROGRAM.shbin --input IN.json [--dvle N] [--precision MODE] [--vertices N]
//!   [--repeat N]`: compile time and vertex throughput of each engine, whether they agree, and
//!   the JIT prepared twice through a program cache (a compile, then a hit).
//! * `picajit difftest [--programs N] [--seed S] [--precision MODE|all] [--max-len L]
//!   [--out DIR] [--threads T] [--budget N] [--no-shrink]`: the differential tester; exit
//!   status 1 on any mismatch.
//!
//! Bad files and bad JSON give one line on stderr naming what and where, exit status 2 and
//! nothing on stdout. A failed invocation is reported in the output and the run goes on.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::asm;
use crate::document::{input, output, run_document};
use crate::engine::cache::ProgramCache;
use crate::engine::{self, EngineKind};
use crate::exec::{DEFAULT_INSTRUCTION_BUDGET, ExecConfig};
use crate::float24::Precision;
use crate::isa::disasm;
use crate::program::{ShaderKind, ShaderProgram, Uniforms};
use crate::shbin::{self, Shbin};
use crate::validate;

/// Exact float24 interpreter (and, later, JIT) for PICA200 shaders.
#[derive(Parser, Debug)]
#[command(name = "picajit", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the DVLEs of a SHBIN file and a listing of its program, or (with --source) picasso
    /// source that assembles back to the identical file.
    Disasm {
        /// The SHBIN file.
        file: PathBuf,
        /// Print picasso source instead of a listing (one file per DVLE).
        #[arg(long)]
        source: bool,
        /// With --source: write `dvleN.pica` files into this folder instead of printing.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Run a DVLE of a SHBIN file on the vertices of an input file.
    Run(RunArgs),
    /// Assemble picasso source files (one DVLE per file) into a SHBIN file.
    Asm(AsmArgs),
    /// Measure how fast each engine runs a DVLE on the vertices of an input file.
    Bench(BenchArgs),
    /// Run random programs on the interpreter and the JIT and compare them bit for bit; shrink
    /// and write each mismatch as a reproducer (exit status 1).
    Difftest(DifftestArgs),
}

#[derive(clap::Args, Debug)]
struct DifftestArgs {
    /// How many programs (per precision mode).
    #[arg(long, default_value_t = 1000)]
    programs: u64,
    /// The run seed: program i is generated from a seed derived from it and i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// f24, f24-rne, f32, or all (the three in turn, on the same programs).
    #[arg(long, default_value = "f24", value_parser = parse_precisions)]
    precision: PrecisionList,
    /// The most code words of a program (4-512).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(4..=512))]
    max_len: u16,
    /// Where reproducers are written (with --precision all, a folder per mode inside).
    #[arg(long, default_value = "difftest-out")]
    out: PathBuf,
    /// Worker threads (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// The most instructions one invocation may execute.
    #[arg(long, default_value_t = crate::difftest::runner::DEFAULT_BUDGET, value_parser = clap::value_parser!(u64).range(1..))]
    budget: u64,
    /// Write mismatches as found, without shrinking them.
    #[arg(long)]
    no_shrink: bool,
}

/// The precision modes of a difftest run.
#[derive(Clone, Debug)]
struct PrecisionList(Vec<Precision>);

fn parse_precisions(text: &str) -> Result<PrecisionList, String> {
    if text == "all" {
        return Ok(PrecisionList(Precision::ALL.to_vec()));
    }
    Precision::from_name(text)
        .map(|p| PrecisionList(vec![p]))
        .ok_or_else(|| format!("unknown precision {text:?} (f24, f24-rne, f32, all)"))
}

#[derive(clap::Args, Debug)]
struct BenchArgs {
    /// The SHBIN file.
    program: PathBuf,
    /// Uniforms and vertices, JSON (as for `run`); the vertices are repeated to fill a batch.
    #[arg(long)]
    input: PathBuf,
    /// Which DVLE (entry point) to run (vertex shaders only).
    #[arg(long, default_value_t = 0)]
    dvle: usize,
    /// How arithmetic results are rounded.
    #[arg(long, default_value = "f24", value_parser = parse_precision)]
    precision: Precision,
    /// Vertices per measured batch.
    #[arg(long, default_value_t = 100_000)]
    vertices: usize,
    /// Measured batches per engine (the best is reported).
    #[arg(long, default_value_t = 5)]
    repeat: usize,
}

#[derive(clap::Args, Debug)]
struct AsmArgs {
    /// The source files, in DVLE order.
    #[arg(required = true)]
    sources: Vec<PathBuf>,
    /// The SHBIN file to write.
    #[arg(short, long)]
    output: PathBuf,
    /// Also write picasso's C header of uniform locations.
    #[arg(long)]
    header: Option<PathBuf>,
    /// Do not insert padding NOPs (each place that needs one is a warning instead).
    #[arg(long)]
    no_nop: bool,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// The SHBIN file.
    program: PathBuf,
    /// Uniforms and vertices (or geometry-shader invocations), JSON.
    #[arg(long)]
    input: PathBuf,
    /// Which DVLE (entry point) to run.
    #[arg(long, default_value_t = 0)]
    dvle: usize,
    /// The engine.
    #[arg(long, value_enum, default_value_t = EngineChoice::Interp)]
    engine: EngineChoice,
    /// How arithmetic results are rounded: f24 (truncate), f24-rne (nearest even) or f32.
    #[arg(long, default_value = "f24", value_parser = parse_precision)]
    precision: Precision,
    /// Print each value as its f32 bit pattern.
    #[arg(long)]
    bits: bool,
    /// Include a0, aL and cmp in the output.
    #[arg(long)]
    state: bool,
    /// Write the output here instead of stdout.
    #[arg(long)]
    output: Option<PathBuf>,
    /// The most instructions one invocation may execute.
    #[arg(long, default_value_t = DEFAULT_INSTRUCTION_BUDGET)]
    budget: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum EngineChoice {
    /// The reference interpreter.
    Interp,
    /// The Cranelift JIT.
    Jit,
}

fn parse_precision(text: &str) -> Result<Precision, String> {
    Precision::from_name(text)
        .ok_or_else(|| format!("unknown precision {text:?} (f24, f24-rne, f32)"))
}

/// A failure of the command: one line for stderr.
#[derive(Debug)]
pub struct CliError(pub String);

fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| CliError(format!("{}: cannot read: {e}", path.display())))
}

fn load_shbin(path: &Path) -> Result<Shbin, CliError> {
    shbin::parse(&read(path)?).map_err(|e| CliError(format!("{}: {e}", path.display())))
}

/// Runs the command line; returns the process exit status.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Disasm {
            file,
            source: false,
            output: None,
        } => disasm_command(&file),
        Command::Disasm {
            file,
            source,
            output,
        } => source_command(&file, source, output.as_deref()),
        Command::Run(args) => run_command(&args),
        Command::Asm(args) => asm_command(&args),
        Command::Bench(args) => bench_command(&args),
        Command::Difftest(args) => return difftest_command(&args),
    };
    match outcome {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(CliError(message)) => {
            eprintln!("picajit: {message}");
            ExitCode::from(2)
        }
    }
}

/// `picajit difftest`: progress on stderr, each mismatch and the totals on stdout (the last line
/// `N programs, M invocations, K mismatches`); exit status 1 on any mismatch, 2 on an error.
fn difftest_command(args: &DifftestArgs) -> ExitCode {
    use crate::difftest::runner::{Progress, RunOptions, run};
    let options = RunOptions {
        programs: args.programs,
        seed: args.seed,
        precisions: args.precision.0.clone(),
        max_len: usize::from(args.max_len),
        budget: args.budget,
        out_dir: args.out.clone(),
        threads: args
            .threads
            .map_or_else(|| RunOptions::default().threads, usize::from),
        shrink: !args.no_shrink,
    };
    let started = std::time::Instant::now();
    let progress = |p: Progress| {
        eprintln!(
            "difftest {}: {}/{} programs, {} mismatches, {:.1} s",
            p.precision,
            p.done,
            p.total,
            p.mismatches,
            started.elapsed().as_secs_f64()
        );
    };
    match run(&options, &crate::difftest::compare::jit, &progress) {
        Ok(summary) => {
            print!("{}", summary.report());
            if summary.total().mismatches == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("picajit: {e}");
            ExitCode::from(2)
        }
    }
}

/// `picajit disasm --source`: picasso source, printed (one DVLE) or written to a folder.
fn source_command(path: &Path, source: bool, output: Option<&Path>) -> Result<String, CliError> {
    if !source {
        return Err(CliError(
            "-o/--output is for --source: the listing goes to stdout".to_string(),
        ));
    }
    let shbin = load_shbin(path)?;
    let files = asm::to_source(&shbin).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
    match output {
        None if files.len() == 1 => Ok(files.into_iter().next().unwrap_or_default()),
        None => Err(CliError(format!(
            "{}: {} DVLEs need one source file each: give -o FOLDER",
            path.display(),
            files.len()
        ))),
        Some(folder) => {
            std::fs::create_dir_all(folder)
                .map_err(|e| CliError(format!("{}: cannot create: {e}", folder.display())))?;
            for (index, text) in files.iter().enumerate() {
                let file = folder.join(format!("dvle{index}.pica"));
                std::fs::write(&file, text)
                    .map_err(|e| CliError(format!("{}: cannot write: {e}", file.display())))?;
            }
            Ok(String::new())
        }
    }
}

/// `picajit disasm`: returns the text to print.
fn disasm_command(path: &Path) -> Result<String, CliError> {
    let shbin = load_shbin(path)?;
    let mut out = format!(
        "; {}: {} code words, {} operand descriptors, {} DVLE(s)\n",
        path.display(),
        shbin.code.len(),
        shbin.opdescs.len(),
        shbin.dvles.len()
    );
    for (i, dvle) in shbin.dvles.iter().enumerate() {
        out += &format!(
            "; DVLE {i}: {} shader, entry {:#05x}, end {:#05x}",
            dvle.kind.name(),
            dvle.entry,
            dvle.end
        );
        if dvle.kind == ShaderKind::Geometry {
            out += &format!(", mode {:?}", dvle.gs.mode);
        }
        out.push('\n');
        for o in &dvle.outputs {
            out += &format!(
                ";   .out o{} {} mask {:#x}\n",
                o.register, o.semantic, o.mask
            );
        }
        for u in &dvle.uniforms {
            out += &format!(";   uniform {} {}\n", u.name, u.describe());
        }
        for c in &dvle.constants {
            out += &format!(";   constant {c:?}\n");
        }
    }
    for (address, &word) in shbin.code.iter().enumerate() {
        for (i, dvle) in shbin.dvles.iter().enumerate() {
            if dvle.entry as usize == address {
                out += &format!("; entry of DVLE {i}\n");
            }
        }
        let text = disasm::format_instruction(&crate::isa::decode(word), &shbin.opdescs);
        out += &format!("{address:03x}: {word:08x}    {text}\n");
    }
    Ok(out)
}

/// `picajit bench`: compile time and vertex throughput of each engine, and whether they agree.
fn bench_command(args: &BenchArgs) -> Result<String, CliError> {
    let shbin = load_shbin(&args.program)?;
    let dvle = shbin.dvles.get(args.dvle).ok_or_else(|| {
        CliError(format!(
            "{}: there is no DVLE {}",
            args.program.display(),
            args.dvle
        ))
    })?;
    if dvle.kind != ShaderKind::Vertex {
        return Err(CliError(format!(
            "{}: DVLE {} is not a vertex shader",
            args.program.display(),
            args.dvle
        )));
    }
    let program = ShaderProgram::from_shbin(&shbin, args.dvle)
        .map_err(|e| CliError(format!("{}: {e}", args.program.display())))?;
    let text = String::from_utf8(read(&args.input)?)
        .map_err(|_| CliError(format!("{}: not UTF-8 text", args.input.display())))?;
    let run_input = input::parse_input(&text, args.precision, dvle.kind)
        .map_err(|e| CliError(format!("{}: {e}", args.input.display())))?;
    if run_input.invocations.is_empty() {
        return Err(CliError(format!(
            "{}: no vertices to run",
            args.input.display()
        )));
    }
    let mut uniforms = Uniforms::from_constants(dvle);
    run_input.apply_uniforms(&mut uniforms);
    let batch: Vec<_> = run_input
        .invocations
        .iter()
        .map(|i| i.registers)
        .cycle()
        .take(args.vertices.max(1))
        .collect();
    let config = ExecConfig {
        precision: args.precision,
        ..ExecConfig::default()
    };
    let mut report = format!(
        "{}: DVLE {}, {} code words, {} vertices per batch, precision {}\n",
        args.program.display(),
        args.dvle,
        program.code_len,
        batch.len(),
        args.precision
    );
    let mut outputs = Vec::new();
    for kind in [EngineKind::Interpreter, EngineKind::Jit] {
        let started = std::time::Instant::now();
        let engine =
            engine::prepare(kind, program.clone(), config).map_err(|e| CliError(e.to_string()))?;
        let prepare_time = started.elapsed();
        let mut best = std::time::Duration::MAX;
        let mut results = Vec::with_capacity(batch.len());
        for _ in 0..args.repeat.max(1) {
            results.clear();
            let started = std::time::Instant::now();
            engine.run_vertices(&uniforms, &batch, &mut results);
            best = best.min(started.elapsed());
        }
        let per_second = batch.len() as f64 / best.as_secs_f64();
        report += &format!(
            "{:>6}: prepare {:>9.3} ms, {:>12.0} vertices/s ({:.1} ns/vertex)\n",
            kind.name(),
            prepare_time.as_secs_f64() * 1e3,
            per_second,
            best.as_secs_f64() * 1e9 / batch.len() as f64
        );
        outputs.push(output::vertex_document(
            &results,
            &[0, 1, 2, 3, 4, 5, 6, 7],
            output::OutputOptions {
                bits: true,
                state: true,
            },
        ));
    }
    report += if outputs[0] == outputs[1] {
        "engines agree bit for bit on every vertex\n"
    } else {
        "ENGINES DISAGREE: run `picajit run --bits --state` with each --engine to compare\n"
    };
    report += &cache_report(&program, config)?;
    Ok(report)
}

/// Prepares the JIT twice through a program cache, as an emulator re-uploading the same code
/// would: the first request compiles (a miss), the second gets the same code back (a hit).
fn cache_report(program: &ShaderProgram, config: ExecConfig) -> Result<String, CliError> {
    let cache = ProgramCache::default();
    let upload = program.clone();
    let reupload = program.clone();
    let started = std::time::Instant::now();
    let first = engine::prepare_cached(&cache, EngineKind::Jit, &upload, config)
        .map_err(|e| CliError(e.to_string()))?;
    let miss_time = started.elapsed();
    let started = std::time::Instant::now();
    let second = engine::prepare_cached(&cache, EngineKind::Jit, &reupload, config)
        .map_err(|e| CliError(e.to_string()))?;
    let hit_time = started.elapsed();
    let stats = cache.stats();
    Ok(format!(
        " cache: miss (compile) {:>9.3} ms, hit {:>9.3} us; 2 identical uploads, {} compile(s), {} hit(s), {}\n",
        miss_time.as_secs_f64() * 1e3,
        hit_time.as_secs_f64() * 1e6,
        stats.compiles,
        stats.hits,
        if std::sync::Arc::ptr_eq(&first, &second) {
            "same code"
        } else {
            "DIFFERENT CODE"
        }
    ))
}

/// `picajit asm`: writes the SHBIN (and header); warnings go to stderr.
fn asm_command(args: &AsmArgs) -> Result<String, CliError> {
    let mut files = Vec::new();
    for path in &args.sources {
        let text = String::from_utf8(read(path)?)
            .map_err(|_| CliError(format!("{}: not UTF-8 text", path.display())))?;
        files.push(asm::SourceFile {
            name: path.display().to_string(),
            text,
        });
    }
    let options = asm::AsmOptions {
        auto_nop: !args.no_nop,
    };
    let assembly = asm::assemble(&files, options).map_err(|e| CliError(e.to_string()))?;
    for warning in assembly
        .warnings
        .iter()
        .chain(&assembly.validation_warnings())
    {
        eprintln!("{warning}");
    }
    let write = |path: &Path, bytes: &[u8]| {
        std::fs::write(path, bytes)
            .map_err(|e| CliError(format!("{}: cannot write: {e}", path.display())))
    };
    write(&args.output, &shbin::write(&assembly.shbin))?;
    if let Some(header) = &args.header {
        write(header, assembly.header.as_bytes())?;
    }
    Ok(String::new())
}

/// `picajit run`: returns the output document (or writes it and returns nothing).
fn run_command(args: &RunArgs) -> Result<String, CliError> {
    let shbin = load_shbin(&args.program)?;
    let dvle = shbin.dvles.get(args.dvle).ok_or_else(|| {
        CliError(format!(
            "{}: there is no DVLE {} (the file has {})",
            args.program.display(),
            args.dvle,
            shbin.dvles.len()
        ))
    })?;
    let program = ShaderProgram::from_shbin(&shbin, args.dvle)
        .map_err(|e| CliError(format!("{}: {e}", args.program.display())))?;
    let text = String::from_utf8(read(&args.input)?)
        .map_err(|_| CliError(format!("{}: not UTF-8 text", args.input.display())))?;
    let run_input = input::parse_input(&text, args.precision, dvle.kind)
        .map_err(|e| CliError(format!("{}: {e}", args.input.display())))?;

    for diagnostic in validate::validate_program(&program, &dvle.output_registers()) {
        eprintln!(
            "warning: {}: DVLE {}: {diagnostic}",
            args.program.display(),
            args.dvle
        );
    }

    let config = ExecConfig {
        precision: args.precision,
        instruction_budget: args.budget,
    };
    let options = output::OutputOptions {
        bits: args.bits,
        state: args.state,
    };
    let kind = match args.engine {
        EngineChoice::Interp => EngineKind::Interpreter,
        EngineChoice::Jit => EngineKind::Jit,
    };
    let engine = engine::prepare(kind, program, config).map_err(|e| CliError(e.to_string()))?;
    let document = run_document(engine.as_ref(), dvle, &run_input, options);
    match &args.output {
        Some(path) => {
            std::fs::write(path, document)
                .map_err(|e| CliError(format!("{}: cannot write: {e}", path.display())))?;
            Ok(String::new())
        }
        None => Ok(document),
    }
}
