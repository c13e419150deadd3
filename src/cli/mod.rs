//! The `picajit` command line.
//!
//! * `picajit asm IN.pica [MORE.pica ...] -o OUT.shbin [--header OUT.h] [--no-nop]`: assemble.
//! * `picajit disasm FILE.shbin [--source [-o FOLDER]]`: each DVLE's declarations and a listing
//!   of the program, or picasso source that assembles back to the identical file.
//! * `picajit validate FILE.shbin [--dvle N]`: the validation findings of each DVLE (or one).
//! * `picajit run PROGRAM.shbin --input IN.json [--dvle N] [--engine interp|jit|...|vulkan]
//!   [--precision f24|f24-rne|f32] [--bits] [--state] [--output OUT.json] [--budget N]`.
//! * `picajit bench [FILES|DIRS ...] [--input IN.json] [--dvle N] [--precision MODE|all]
//!   [--engine E ...] [--vertices N] [--threads T] [--repeat N] [--json] [--shard K/N]`: compile time,
//!   cache-hit cost, throughput (one thread and T), peak memory and agreement of each engine on
//!   SHBIN files, program folders or the corpus; exit status 1 when the engines disagree.
//! * `picajit difftest [--programs N] [--seed S] [--precision MODE|all] [--max-len L]
//!   [--out DIR] [--threads T] [--budget N] [--no-shrink] [--json] [--shard K/N]`: the
//!   differential tester; exit status 1 on any mismatch.
//! * `picajit decompile PROGRAM.shbin [--dvle N] [--lang glsl|glsl-es|glsl450|glsl-es320|spirv]
//!   [--precision f24|f24-rne|f32] [--budget N] [--form best|dispatch] [-o FILE]`: the DVLE
//!   translated for host GPUs.
//! * `picajit render SCENE.ctf -o OUT.png [...]`: replay a CiTrace scene on the software GPU.
//! * `picajit extract TRACE.ctf -o DIR [--states N] [--vertices N]`: each distinct program of
//!   a trace as a SHBIN file with `run` inputs (its uniforms, a sample of its vertices).
//! * `picajit merge FILE.json ...`: the shards' `--json` lines of one `difftest` or `bench`
//!   run joined into the whole run's line (docs/architecture.md, "Runs past one machine").
//!
//! Bad files, bad JSON and bad options give one line on stderr naming what and where
//! ([`CliError`]), exit status 2 and nothing on stdout. A failed invocation is reported in the
//! output and the run goes on.

mod bench;
mod decompile;
mod error;
mod extract;
mod listing;
mod merge;
mod render;

use std::fmt;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand, ValueEnum};

pub use error::{CliError, IoAction};

use crate::asm;
use crate::asm::text::escape;
use crate::difftest::shard::Shard;
use crate::document::{input, output, write_run};
use crate::engine::{self, EngineKind};
use crate::exec::{DEFAULT_INSTRUCTION_BUDGET, ExecConfig};
use crate::float24::Precision;
use crate::program::ShaderProgram;
use crate::shbin::{self, Dvle, Shbin};
use crate::validate::{self, Severity};

/// Exact float24 interpreter and JIT for PICA200 shaders.
#[derive(Parser, Debug)]
#[command(name = "picajit", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print each DVLE's declarations and a listing of the program, or (with --source) picasso
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
    /// Print the validation findings of each DVLE (what the hardware cannot do or does
    /// unreliably). Exit status 0: none; 1: warnings only; 3: errors.
    Validate(ValidateArgs),
    /// Run a DVLE of a SHBIN file on the vertices of an input file.
    Run(RunArgs),
    /// Assemble picasso source files (one DVLE per file) into a SHBIN file.
    Asm(AsmArgs),
    /// Translate a DVLE for host GPUs: exact GLSL, with each statement's address and
    /// instruction in a comment (docs/gpu-shaders.md).
    Decompile(decompile::DecompileArgs),
    /// Measure each engine on SHBIN files, program folders, scenes or the corpus: compile
    /// time, cache-hit cost, ns/vertex on one thread and on several, peak memory, and whether
    /// the engines agree bit for bit (exit status 1 when not).
    Bench(BenchArgs),
    /// Run random programs on the interpreter and the JIT and compare them bit for bit; shrink
    /// and write each mismatch as a reproducer (exit status 1).
    Difftest(DifftestArgs),
    /// Write each distinct shader program a CiTrace trace runs as a SHBIN file, with `run`
    /// inputs beside it: its uniforms and a sample of its vertices (docs/cli.md, "extract").
    Extract(extract::ExtractArgs),
    /// Replay a CiTrace scene on the software GPU and write its colour buffer (and optionally
    /// its depth buffer) as PNG.
    Render(render::RenderArgs),
    /// Join the `--json` lines of the shards of one `difftest` or `bench` run (`--shard K/N`)
    /// into the line of the whole run (exit status 1 when it has a mismatch or a
    /// disagreement).
    Merge {
        /// Files of `--json` lines (`-`: standard input).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// A parser of the values in `all`, each named by `name` with `summary` as its help: precision
/// modes ([`precision`]) and engines ([`engine_kind`]) are named on the command line by their
/// own names, so a new mode or engine needs no change here.
fn named<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(T) -> &'static str,
    summary: fn(T) -> &'static str,
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(
        all.iter()
            .map(move |&value| PossibleValue::new(name(value)).help(summary(value))),
    )
    .map(move |chosen| {
        *all.iter()
            .find(|&&value| name(value) == chosen)
            .expect("the parser accepts only the possible values")
    })
}

/// Precision modes by [`Precision::name`].
pub(crate) fn precision() -> impl TypedValueParser<Value = Precision> {
    named(&Precision::ALL, Precision::name, Precision::summary)
}

/// Engines by [`EngineKind::name`].
pub(crate) fn engine_kind() -> impl TypedValueParser<Value = EngineKind> {
    named(&EngineKind::NAMED, EngineKind::name, EngineKind::summary)
}

/// The precision modes of a difftest run: one, or all of them in turn on the same programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PrecisionList {
    One(Precision),
    All,
}

impl ValueEnum for PrecisionList {
    fn value_variants<'a>() -> &'a [Self] {
        static LISTS: OnceLock<Vec<PrecisionList>> = OnceLock::new();
        LISTS.get_or_init(|| {
            Precision::ALL
                .into_iter()
                .map(PrecisionList::One)
                .chain([PrecisionList::All])
                .collect()
        })
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            PrecisionList::One(precision) => {
                Some(PossibleValue::new(precision.name()).help(precision.summary()))
            }
            PrecisionList::All => {
                Some(PossibleValue::new("all").help("every mode in turn, on the same programs"))
            }
        }
    }
}

impl fmt::Display for PrecisionList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrecisionList::One(precision) => write!(f, "{precision}"),
            PrecisionList::All => f.write_str("all"),
        }
    }
}

impl PrecisionList {
    fn precisions(self) -> Vec<Precision> {
        match self {
            PrecisionList::One(precision) => vec![precision],
            PrecisionList::All => Precision::ALL.to_vec(),
        }
    }
}

/// The value parser of every count that must be at least 1 (`--budget`, `--vertices`,
/// `--repeat`): a budget of 0 would fail every invocation before its first instruction, and a
/// run of 0 vertices measures nothing.
pub(super) fn at_least_one(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

#[derive(clap::Args, Debug)]
struct DifftestArgs {
    /// How many programs (per precision mode).
    #[arg(long, default_value_t = 1000)]
    programs: u64,
    /// The run seed: program i is generated from a seed derived from it and i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The precision mode(s).
    #[arg(long, value_enum, default_value_t = PrecisionList::One(Precision::F24Truncate))]
    precision: PrecisionList,
    /// The most code words of a program (4-4096; a vertex shader stops at 512, picasso's limit).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(4..=4096))]
    max_len: u16,
    /// Where reproducers are written (with --precision all, a folder per mode inside).
    #[arg(long, default_value = "difftest-out")]
    out: PathBuf,
    /// Worker threads (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// The most instructions one invocation may execute (at least 1).
    #[arg(long, default_value_t = crate::difftest::runner::DEFAULT_BUDGET, value_parser = at_least_one)]
    budget: u64,
    /// Write mismatches as found, without shrinking them.
    #[arg(long)]
    no_shrink: bool,
    /// The engines checked against the reference interpreter (repeatable; default: every other
    /// engine).
    #[arg(long, value_parser = engine_kind())]
    engine: Vec<EngineKind>,
    /// Check only shard K of N of the programs: program i when i mod N = K (the shards of a
    /// run are disjoint and together the whole run; `picajit merge` joins their `--json`).
    #[arg(long, value_name = "K/N", default_value_t = Shard::WHOLE)]
    shard: Shard,
    /// Print the run as one line of JSON instead of the report (settings, shards, per mode the
    /// totals and the mismatching programs, the findings).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
struct BenchArgs {
    /// SHBIN files (each with its input, FILE.json beside it or --input), scenes (*.ctf) and
    /// folders [default: the corpus]. A folder holding a fixture dvleN.input.json is a
    /// program folder: its *.pica sources are one program, assembled in name order (one DVLE
    /// each). Every folder is also searched, four levels deep, for SHBIN files with inputs,
    /// program folders and scenes.
    #[arg(value_name = "FILES|DIRS")]
    paths: Vec<PathBuf>,
    /// The input (uniforms and vertices or invocations, JSON as for `run`) of a single SHBIN file.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Only this DVLE [default: DVLE 0 of a SHBIN file, every DVLE with a fixture of a program
    /// folder].
    #[arg(long)]
    dvle: Option<usize>,
    /// How arithmetic results are rounded: one mode, or all of them in turn.
    #[arg(long, value_enum, default_value_t = PrecisionList::One(Precision::F24Truncate))]
    precision: PrecisionList,
    /// The engines to measure (repeat the option, or separate with commas) [default: all].
    #[arg(
        long = "engine",
        value_name = "ENGINE",
        value_parser = engine_kind(),
        value_delimiter = ','
    )]
    engines: Vec<EngineKind>,
    /// Vertices (geometry shader: invocations) per measured run, the input's repeated; vertex
    /// shaders run in batches of at most 2048 (one thread) or 16384 (threads) over one reused
    /// buffer, so any count runs in bounded memory.
    #[arg(long, visible_alias = "invocations", default_value_t = 100_000, value_parser = at_least_one)]
    vertices: u64,
    /// Threads of the threaded vertex runs [default: one per core].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// Measured runs per engine (the best is reported; engines take turns).
    #[arg(long, default_value_t = 5, value_parser = at_least_one)]
    repeat: u64,
    /// Print a JSON document (one line) instead of the table.
    #[arg(long)]
    json: bool,
    /// Measure only shard K of N of the jobs (each program, DVLE and precision, in run order):
    /// job i when i mod N = K (`picajit merge` joins the shards' `--json`).
    #[arg(long, value_name = "K/N", default_value_t = Shard::WHOLE)]
    shard: Shard,
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
struct ValidateArgs {
    /// The SHBIN file.
    file: PathBuf,
    /// Only this DVLE (default: every DVLE).
    #[arg(long)]
    dvle: Option<usize>,
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
    #[arg(long, value_parser = engine_kind(), default_value_t = EngineKind::Interpreter)]
    engine: EngineKind,
    /// How arithmetic results are rounded.
    #[arg(long, value_parser = precision(), default_value_t = Precision::F24Truncate)]
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
    /// The most instructions one invocation may execute (at least 1).
    #[arg(long, default_value_t = DEFAULT_INSTRUCTION_BUDGET, value_parser = at_least_one)]
    budget: u64,
}

pub(super) fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|error| CliError::Io {
        path: path.to_path_buf(),
        action: IoAction::Read,
        error,
    })
}

fn read_text(path: &Path) -> Result<String, CliError> {
    String::from_utf8(read(path)?).map_err(|_| CliError::NotText {
        path: path.to_path_buf(),
    })
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|error| CliError::Io {
        path: path.to_path_buf(),
        action: IoAction::Write,
        error,
    })
}

fn load_shbin(path: &Path) -> Result<Shbin, CliError> {
    shbin::parse(&read(path)?).map_err(|error| CliError::Shbin {
        path: path.to_path_buf(),
        error,
    })
}

/// DVLE `index` of the file at `path` and its program.
fn load_dvle<'a>(
    path: &Path,
    shbin: &'a Shbin,
    index: usize,
) -> Result<(&'a Dvle, ShaderProgram), CliError> {
    let dvle = shbin.dvles.get(index).ok_or(CliError::NoSuchDvle {
        path: path.to_path_buf(),
        index,
        count: shbin.dvles.len(),
    })?;
    let program = ShaderProgram::from_shbin(shbin, index).map_err(|error| CliError::Program {
        path: path.to_path_buf(),
        dvle: index,
        error,
    })?;
    Ok((dvle, program))
}

/// The input file for `dvle`, its warnings printed to stderr.
fn load_input(path: &Path, precision: Precision, dvle: &Dvle) -> Result<input::RunInput, CliError> {
    let text = read_text(path)?;
    let run_input =
        input::parse_input_for(&text, precision, dvle).map_err(|error| CliError::Input {
            path: path.to_path_buf(),
            error,
        })?;
    for warning in &run_input.warnings {
        warn(&format!("warning: {}: {warning}", path.display()));
    }
    Ok(run_input)
}

/// One line on stderr, with anything from a file escaped.
fn warn(line: &str) {
    eprintln!("{}", escape(line));
}

/// Writes `text` to stdout.
pub(super) fn print(text: &str) -> Result<(), CliError> {
    print_bytes(text.as_bytes())
}

pub(super) fn print_bytes(bytes: &[u8]) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(CliError::Stdout)
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
        Command::Validate(args) => validate_command(&args),
        Command::Run(args) => run_command(&args),
        Command::Asm(args) => asm_command(&args),
        Command::Decompile(args) => decompile::command(&args),
        Command::Bench(args) => bench_command(&args),
        Command::Difftest(args) => difftest_command(&args),
        Command::Extract(args) => extract::command(&args),
        Command::Render(args) => render::render_command(&args),
        Command::Merge { files } => merge::command(&files),
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            warn(&format!("picajit: {error}"));
            ExitCode::from(2)
        }
    }
}

/// `picajit difftest`: progress on stderr, each mismatch and the totals on stdout (the last line
/// `N programs, M invocations, K mismatches`); exit status 1 on any mismatch, 2 on an error.
fn difftest_command(args: &DifftestArgs) -> Result<ExitCode, CliError> {
    use crate::difftest::runner::{Progress, RunOptions, run};
    let options = RunOptions {
        programs: args.programs,
        seed: args.seed,
        precisions: args.precision.precisions(),
        max_len: usize::from(args.max_len),
        budget: args.budget,
        out_dir: args.out.clone(),
        threads: args
            .threads
            .map_or_else(|| RunOptions::default().threads, usize::from),
        shrink: !args.no_shrink,
        shard: args.shard,
        count_forms: args
            .engine
            .iter()
            .any(|e| matches!(e, EngineKind::Gpu | EngineKind::Vulkan)),
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
    let kinds: Vec<EngineKind> = if args.engine.is_empty() {
        EngineKind::ALL
            .into_iter()
            .filter(|&k| k != EngineKind::Interpreter)
            .collect()
    } else {
        args.engine.clone()
    };
    let factories: Vec<Box<crate::difftest::compare::EngineFactory>> = kinds
        .iter()
        .map(|&kind| {
            Box::new(move |program, config| crate::engine::prepare(kind, program, config))
                as Box<crate::difftest::compare::EngineFactory>
        })
        .collect();
    let candidates: Vec<&crate::difftest::compare::EngineFactory> =
        factories.iter().map(|f| f.as_ref()).collect();
    let summary = run(&options, &candidates, &progress)?;
    if args.json {
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        print(&summary.json(&options, &names))?;
    } else {
        print(&summary.report())?;
    }
    Ok(if summary.total().mismatches == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `picajit disasm --source`: picasso source, printed (one DVLE) or written to a folder.
fn source_command(path: &Path, source: bool, output: Option<&Path>) -> Result<ExitCode, CliError> {
    if !source {
        return Err(CliError::InvalidOption {
            option: "--output",
            value: output.map(|p| p.display().to_string()).unwrap_or_default(),
            why: "is for --source (the listing goes to stdout)".to_string(),
        });
    }
    let shbin = load_shbin(path)?;
    let files = asm::to_source(&shbin).map_err(|error| CliError::Unrepresentable {
        path: path.to_path_buf(),
        error,
    })?;
    match output {
        None if files.len() == 1 => print(&files[0])?,
        None => {
            return Err(CliError::InvalidOption {
                option: "--source",
                value: path.display().to_string(),
                why: format!(
                    "the file has {} DVLEs, which need one source file each: give -o FOLDER",
                    files.len()
                ),
            });
        }
        Some(folder) => {
            std::fs::create_dir_all(folder).map_err(|error| CliError::Io {
                path: folder.to_path_buf(),
                action: IoAction::CreateFolder,
                error,
            })?;
            for (index, text) in files.iter().enumerate() {
                write_file(&folder.join(format!("dvle{index}.pica")), text.as_bytes())?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `picajit disasm`: the DVLEs' declarations and the program listing.
fn disasm_command(path: &Path) -> Result<ExitCode, CliError> {
    let shbin = load_shbin(path)?;
    print(&listing::listing(&path.display().to_string(), &shbin))?;
    Ok(ExitCode::SUCCESS)
}

/// `picajit validate`: one line per finding (`FILE: DVLE 0: 0x012: error: ...`), then a
/// summary line. Exit status 0 without findings, 1 with warnings only, 3 with an error.
fn validate_command(args: &ValidateArgs) -> Result<ExitCode, CliError> {
    let shbin = load_shbin(&args.file)?;
    let indices: Vec<usize> = match args.dvle {
        Some(index) => vec![index],
        None => (0..shbin.dvles.len()).collect(),
    };
    let name = escape(&args.file.display().to_string()).into_owned();
    let (mut errors, mut warnings) = (0usize, 0usize);
    let mut report = String::new();
    for &index in &indices {
        let (dvle, program) = load_dvle(&args.file, &shbin, index)?;
        for finding in validate::validate_program(&program, &dvle.output_registers()) {
            let severity = match finding.kind.severity() {
                Severity::Error => {
                    errors += 1;
                    "error"
                }
                Severity::Warning => {
                    warnings += 1;
                    "warning"
                }
            };
            report += &format!(
                "{name}: DVLE {index}: {:#05x}: {severity}: {}\n",
                finding.address,
                escape(&finding.message)
            );
        }
    }
    report += &format!(
        "{name}: {} DVLE(s) checked, {errors} error(s), {warnings} warning(s)\n",
        indices.len()
    );
    print(&report)?;
    Ok(if errors > 0 {
        ExitCode::from(3)
    } else if warnings > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `picajit bench`: see [`bench`]. Exit status 1 when the engines disagree.
fn bench_command(args: &BenchArgs) -> Result<ExitCode, CliError> {
    let mut engines = Vec::new();
    for &kind in &args.engines {
        if !engines.contains(&kind) {
            engines.push(kind);
        }
    }
    if engines.is_empty() {
        engines = EngineKind::ALL.to_vec();
    }
    bench::command(&bench::Options {
        paths: args.paths.clone(),
        input: args.input.clone(),
        dvle: args.dvle,
        precisions: args.precision.precisions(),
        engines,
        count: args.vertices,
        threads: args
            .threads
            .map_or_else(engine::parallel::available_threads, usize::from),
        repeat: args.repeat,
        json: args.json,
        shard: args.shard,
    })
}

/// `picajit asm`: writes the SHBIN (and header); warnings go to stderr.
fn asm_command(args: &AsmArgs) -> Result<ExitCode, CliError> {
    let mut files = Vec::new();
    for path in &args.sources {
        files.push(asm::SourceFile {
            name: path.display().to_string(),
            text: read_text(path)?,
        });
    }
    let options = asm::AsmOptions {
        auto_nop: !args.no_nop,
    };
    let assembly = asm::assemble(&files, options)?;
    for warning in assembly
        .warnings
        .iter()
        .chain(&assembly.validation_warnings())
    {
        warn(&warning.to_string());
    }
    write_file(&args.output, &shbin::write(&assembly.shbin))?;
    if let Some(header) = &args.header {
        write_file(header, assembly.header.as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `picajit run`: streams the output document to stdout or `--output`.
fn run_command(args: &RunArgs) -> Result<ExitCode, CliError> {
    let shbin = load_shbin(&args.program)?;
    let (dvle, program) = load_dvle(&args.program, &shbin, args.dvle)?;
    let precision = args.precision;
    let run_input = load_input(&args.input, precision, dvle)?;

    for diagnostic in validate::validate_program(&program, &dvle.output_registers()) {
        warn(&format!(
            "warning: {}: DVLE {}: {diagnostic}",
            args.program.display(),
            args.dvle
        ));
    }

    let config = ExecConfig {
        precision,
        instruction_budget: args.budget,
    };
    let options = output::OutputOptions {
        bits: args.bits,
        state: args.state,
    };
    let engine = engine::prepare(args.engine, program, config)?;
    match &args.output {
        Some(path) => {
            let io_error = |action| {
                move |error| CliError::Io {
                    path: path.clone(),
                    action,
                    error,
                }
            };
            let file = std::fs::File::create(path).map_err(io_error(IoAction::Create))?;
            let mut out = BufWriter::with_capacity(1 << 16, file);
            write_run(&mut out, engine.as_ref(), dvle, &run_input, options)
                .and_then(|()| out.flush())
                .map_err(io_error(IoAction::Write))?;
        }
        None => {
            let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            write_run(&mut out, engine.as_ref(), dvle, &run_input, options)
                .and_then(|()| out.flush())
                .map_err(CliError::Stdout)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
