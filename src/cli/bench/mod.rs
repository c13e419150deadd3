//! `picajit bench`: compile time, cache-hit cost, throughput and peak memory of each engine on
//! SHBIN files, program folders and directories of them (by default the corpus), and whether
//! the engines agree bit for bit.
//!
//! * **What runs**: a SHBIN file with its input (`--input`, or `FILE.json` beside it); a program
//!   folder (a folder holding fixtures `dvleN.input.json`: its `*.pica` sources assembled in
//!   name order, one DVLE each, as `jit-tests/corpus.rs` loads them); any folder is searched
//!   for all of these and for scenes (`add_directory` states the rule).
//! * **Vertex shaders** run the fixture's vertices, repeated to `--vertices`, through
//!   [`ShaderEngine::run_batch`] (one thread, batches of at most [`ONE_THREAD_BATCH`]) and
//!   [`run_batch_threads`] (`--threads`, batches of at most [`BATCH`]) over one input and one
//!   output buffer of at most [`BATCH`] vertices, reused: memory does not depend on the count,
//!   and every vertex sees the same input whatever the batching. **Geometry shaders** run the fixture's invocation list as consecutive
//!   draws (each on a fresh state) through [`ShaderEngine::run_geometry`], cycled to the count.
//! * **Timing**: each measured run is repeated `--repeat` times and the best is kept; the engines
//!   are interleaved round by round, so machine noise hits all of them alike. Preparing is
//!   timed the same way ([`PREPARE_ROUNDS`] rounds), and a program-cache hit after it
//!   ([`HIT_ROUNDS`] hits).
//! * **Agreement**: one more, untimed, pass per engine (and per thread count) hashes every result
//!   (output planes, flow registers, errors; every emitted vertex and triangle) bit for bit. An
//!   engine is *exact* when its hashes equal the reference interpreter's (the first of
//!   [`EngineKind::ALL`], run untimed when not asked for; docs/execution-model.md §8); the
//!   fastest exact engine of each program and precision is marked. A disagreement is reported
//!   on stderr and gives exit status 1.
//! * **Memory**: the peak resident set (`VmHWM`) of those passes, reset before each engine where
//!   the system allows it; "n/a" where there is no `/proc/self/status`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use xxhash_rust::xxh3::Xxh3Default;

use crate::asm::text::escape;
use crate::asm::{self, AsmOptions, SourceFile};
use crate::difftest::shard::Shard;
use crate::document::input::{RunInput, parse_input_for};
use crate::engine::cache::ProgramCache;
use crate::engine::parallel::run_batch_threads;
use crate::engine::{self, EngineKind};
use crate::exec::{
    BatchIo, BatchLayout, EmitConfig, EmitSink, ExecConfig, ExecError, GeometryState, Hosted,
    ShaderEngine, SoaBuffer,
};
use crate::float24::Precision;
use crate::flow::explore::{explore, reachable_addresses};
use crate::isa::decode_words;
use crate::program::{FlowRegisters, ShaderKind, ShaderProgram, Uniforms, Vec4};
use crate::shbin::Shbin;

use super::{CliError, load_dvle, load_shbin, print, read_text, warn};

mod jobs;
mod measure;
mod report;
mod scenes;
mod table;
mod targets;

use jobs::*;
use measure::*;
use report::*;
use table::*;
use targets::*;

pub use jobs::Options;

/// Runs `picajit bench`.
pub fn command(options: &Options) -> Result<ExitCode, CliError> {
    let mut scene_paths = Vec::new();
    let targets = targets(options, &mut scene_paths)?;
    let (jobs, total) = jobs(&targets, options)?;
    let progress = Progress::new(&jobs, options);
    let mut peak = PeakMemory::default();
    let mut results = Vec::with_capacity(jobs.len());
    for job in &jobs {
        progress.start(job);
        results.push(measure(job, options, &mut peak)?);
        progress.done();
    }
    progress.finish();
    // The scenes are the run's jobs after the programs'.
    let mut scenes = Vec::new();
    for (k, path) in scene_paths.iter().enumerate() {
        let job = total + k as u64;
        if options.shard.contains(job) {
            scenes.push(scenes::measure(path, job, options)?);
        }
    }
    let overall = peak.overall();
    let mut disagreements: Vec<String> = results
        .iter()
        .filter(|r| !r.agree())
        .map(|r| {
            let differing: Vec<&str> = r
                .engines
                .iter()
                .filter(|e| !e.exact)
                .map(|e| e.kind.name())
                .collect();
            format!(
                "{} DVLE {} in {}: {} differ from {}",
                r.name,
                r.dvle,
                r.precision,
                differing.join(", "),
                reference().name()
            )
        })
        .collect();
    disagreements.extend(scenes.iter().filter(|s| !s.agree()).map(|s| {
        format!(
            "scene {}: {} drew another picture than {}",
            s.name(),
            s.differing().join(", "),
            reference().name()
        )
    }));
    if options.json {
        print(&json_report(&results, &scenes, options, overall))?;
    } else {
        if !results.is_empty() {
            print(&table_report(&results, options, overall, &disagreements))?;
        }
        if !scenes.is_empty() {
            print(&scenes::table(&scenes, options))?;
        }
    }
    if disagreements.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for line in &disagreements {
            warn(&format!(
                "picajit: ENGINES DISAGREE: {line}: run `picajit run --bits --state` with each \
                 --engine to compare"
            ));
        }
        Ok(ExitCode::from(1))
    }
}

/// The engine every other is compared with.
fn reference() -> EngineKind {
    EngineKind::ALL[0]
}

// ---------------------------------------------------------------------------------------------
// What to run.

// ---------------------------------------------------------------------------------------------
// Measuring.

// ---------------------------------------------------------------------------------------------
// Progress.

/// A progress bar on stderr, only when stderr is a terminal and the run is long.
struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    fn new(jobs: &[Job], options: &Options) -> Progress {
        let work = jobs.len() as u64 * options.engines.len() as u64 * options.count;
        let long = jobs.len() > 2 || work * options.repeat >= 5_000_000;
        if !long || !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(jobs.len() as u64),
            indicatif::ProgressDrawTarget::stderr(),
        );
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "bench [{elapsed_precise}] {bar:20} {pos}/{len} {msg}",
        ) {
            bar.set_style(style);
        }
        Progress(Some(bar))
    }

    fn start(&self, job: &Job) {
        if let Some(bar) = &self.0 {
            bar.set_message(format!(
                "{} DVLE {} {}",
                job.target.name, job.target.dvle, job.precision
            ));
        }
    }

    fn done(&self) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reports.

#[cfg(test)]
mod tests;
