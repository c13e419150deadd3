//! `picajit extract TRACE.ctf -o DIR`: each distinct shader program a trace runs, as
//! `DIR/vsN.shbin` (or `gsN.shbin`) with `run` inputs beside it: `vsN.input.json` for the
//! first uniform state it ran under, `vsN.stateK.input.json` for the others
//! ([`crate::extract`]). `run`, `bench`, `difftest`'s reproducer hints and `decompile` then
//! work on the real programs of any trace.

use std::path::PathBuf;
use std::process::ExitCode;

use super::error::{CliError, IoAction};
use super::render::MappedTrace;
use super::{at_least_one, print, write_file};
use crate::engine::EngineKind;
use crate::engine::parallel::available_threads;
use crate::extract::{ExtractLimits, ExtractedProgram, extract};
use crate::gpu::front::trace::TraceFile;
use crate::program::ShaderKind;
use crate::shbin;

/// `picajit extract`'s arguments.
#[derive(clap::Args, Debug)]
pub struct ExtractArgs {
    /// The trace: a CiTrace file (`*.ctf`).
    trace: PathBuf,
    /// The folder to write the programs and their inputs into (made if missing).
    #[arg(short, long)]
    output: PathBuf,
    /// Uniform states kept per program (an input file each).
    #[arg(long, default_value_t = ExtractLimits::default().states as u64, value_parser = at_least_one)]
    states: u64,
    /// Distinct vertices (or geometry invocations) kept per state.
    #[arg(long, default_value_t = ExtractLimits::default().invocations as u64, value_parser = at_least_one)]
    vertices: u64,
    /// The engine the replay runs shaders on (what is extracted does not depend on it).
    #[arg(long, value_parser = super::engine_kind(), default_value_t = EngineKind::Auto)]
    engine: EngineKind,
    /// Threads for the replay (default: every core).
    #[arg(long, value_parser = at_least_one)]
    threads: Option<u64>,
}

/// The file stem of the `n`th program of its stage.
fn stem(program: &ExtractedProgram, n: usize) -> String {
    match program.stage {
        ShaderKind::Vertex => format!("vs{n}"),
        ShaderKind::Geometry => format!("gs{n}"),
    }
}

/// The input file of state `k` of the program named `stem`.
pub(crate) fn input_name(stem: &str, k: usize) -> String {
    if k == 0 {
        format!("{stem}.input.json")
    } else {
        format!("{stem}.state{k}.input.json")
    }
}

/// Replays the trace, writes the files and prints a line per program; exit status 0.
pub fn command(args: &ExtractArgs) -> Result<ExitCode, CliError> {
    let mapped = MappedTrace::open(&args.trace)?;
    let trace = TraceFile::parse(mapped.bytes()).map_err(|error| CliError::Trace {
        path: args.trace.clone(),
        error,
    })?;
    let limits = ExtractLimits {
        states: usize::try_from(args.states).unwrap_or(usize::MAX),
        invocations: usize::try_from(args.vertices).unwrap_or(usize::MAX),
        ..ExtractLimits::default()
    };
    let threads = args
        .threads
        .map_or_else(available_threads, |t| usize::try_from(t).unwrap_or(1));
    let programs =
        extract(&trace, args.engine, threads, limits).map_err(|error| CliError::Gpu {
            path: args.trace.clone(),
            error,
        })?;
    std::fs::create_dir_all(&args.output).map_err(|error| CliError::Io {
        path: args.output.clone(),
        action: IoAction::CreateFolder,
        error,
    })?;
    let mut report = String::new();
    let mut counts = [0usize; 2];
    for program in &programs {
        let slot = usize::from(program.stage == ShaderKind::Geometry);
        let stem = stem(program, counts[slot]);
        counts[slot] += 1;
        write_file(
            &args.output.join(format!("{stem}.shbin")),
            &shbin::write(&program.shbin),
        )?;
        for (k, inputs) in program.states.iter().enumerate() {
            write_file(
                &args.output.join(input_name(&stem, k)),
                inputs.to_json(program.stage).as_bytes(),
            )?;
        }
        let kept: usize = program.states.iter().map(|s| s.invocations.len()).sum();
        let noun = match program.stage {
            ShaderKind::Vertex => "vertices",
            ShaderKind::Geometry => "invocations",
        };
        report.push_str(&format!(
            "{stem}: {} shader, {} words, {} {noun} in {} runs; {} states, {kept} {noun} kept",
            program.stage.name(),
            program.shbin.code.len(),
            program.invocations,
            program.batches,
            program.states.len(),
        ));
        if program.unsampled_states > 0 {
            report.push_str(&format!(
                " ({} {noun} under further states not kept)",
                program.unsampled_states
            ));
        }
        report.push('\n');
    }
    report.push_str(&format!(
        "{} programs ({} vertex, {} geometry) written to {}\n",
        programs.len(),
        counts[0],
        counts[1],
        args.output.display()
    ));
    print(&report)?;
    Ok(ExitCode::SUCCESS)
}
