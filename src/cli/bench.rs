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
    BatchIo, BatchLayout, EmitConfig, EmitSink, ExecConfig, ExecError, GeometryState, ShaderEngine,
    SoaBuffer,
};
use crate::float24::Precision;
use crate::flow::explore::{explore, reachable_addresses};
use crate::isa::decode_words;
use crate::program::{FlowRegisters, ShaderKind, ShaderProgram, Uniforms, Vec4};
use crate::shbin::Shbin;

use super::bench_scenes;
use super::{CliError, load_dvle, load_shbin, print, read_text, warn};

/// The most vertices of one input buffer, and of one `run_batch_threads` call.
pub const BATCH: usize = 16_384;

/// The most vertices of one single-thread `run_batch` call: the peer's measuring protocol
/// (2048-vertex batches), whose buffers stay in the core's cache.
pub const ONE_THREAD_BATCH: usize = 2_048;

/// Prepares per engine; the best is reported.
pub const PREPARE_ROUNDS: usize = 3;

/// Program-cache hits timed per engine; the best is reported.
pub const HIT_ROUNDS: usize = 5;

/// How deep directories are searched for programs.
const MAX_DEPTH: usize = 4;

/// What `picajit bench` was asked for.
pub struct Options {
    /// SHBIN files, program folders or directories of them (empty: the corpus).
    pub paths: Vec<PathBuf>,
    /// The input of a single SHBIN file.
    pub input: Option<PathBuf>,
    /// Only this DVLE.
    pub dvle: Option<usize>,
    /// The precision modes, each measured in turn.
    pub precisions: Vec<Precision>,
    /// The engines, in report order.
    pub engines: Vec<EngineKind>,
    /// Vertices (geometry shaders: invocations) per measured run.
    pub count: u64,
    /// Threads of the threaded runs.
    pub threads: usize,
    /// Measured runs per engine (the best is reported).
    pub repeat: u64,
    /// A JSON document instead of the table.
    pub json: bool,
    /// The part of the jobs (program, DVLE and precision, in run order) measured here.
    pub shard: Shard,
}

/// One DVLE to measure, with its input file.
struct Target {
    /// The program's name: its folder's or file's.
    name: String,
    /// The SHBIN file or program folder.
    path: PathBuf,
    shbin: Arc<Shbin>,
    dvle: usize,
    input: PathBuf,
}

/// One DVLE in one precision mode, ready to run.
struct Job<'a> {
    /// Its place in the whole run (before sharding).
    index: u64,
    target: &'a Target,
    precision: Precision,
    program: ShaderProgram,
    input: RunInput,
}

/// How one engine did on one job.
struct EngineResult {
    kind: EngineKind,
    ready: Duration,
    compile: Duration,
    cache_hit: Duration,
    /// Whether the cache hit returned the program it prepared.
    cache_same: bool,
    single: Duration,
    threaded: Option<Duration>,
    peak: Option<u64>,
    exact: bool,
}

/// How one job went.
struct JobResult {
    /// The job's place in the whole run.
    job: u64,
    name: String,
    path: String,
    dvle: usize,
    stage: ShaderKind,
    precision: Precision,
    code_words: usize,
    reachable_words: usize,
    fixture_len: usize,
    /// Geometry shaders: vertices emitted per run.
    emitted: Option<u64>,
    engines: Vec<EngineResult>,
    /// Index into `engines` of the fastest exact one.
    fastest: Option<usize>,
}

impl JobResult {
    fn agree(&self) -> bool {
        self.engines.iter().all(|e| e.exact)
    }

    fn unit(&self) -> &'static str {
        match self.stage {
            ShaderKind::Vertex => "vertex",
            ShaderKind::Geometry => "invocation",
        }
    }
}

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
            scenes.push(bench_scenes::measure(path, job, options)?);
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
            print(&bench_scenes::table(&scenes, options))?;
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

/// The corpus: `corpus/` here, else the one this binary was built from.
fn default_corpus() -> Option<PathBuf> {
    let here = PathBuf::from("corpus");
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    [here, built].into_iter().find(|p| p.is_dir())
}

fn nothing(path: &Path, why: &str) -> CliError {
    CliError::Bench {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

/// The programs to measure; the scenes found on the way go to `scenes`.
fn targets(options: &Options, scenes: &mut Vec<PathBuf>) -> Result<Vec<Target>, CliError> {
    let paths = if options.paths.is_empty() {
        vec![default_corpus().ok_or_else(|| {
            nothing(
                Path::new("corpus"),
                "no such folder: give SHBIN files, program folders or directories",
            )
        })?]
    } else {
        options.paths.clone()
    };
    if let Some(input) = &options.input {
        let single_file = paths.len() == 1 && !paths[0].is_dir();
        if !single_file {
            return Err(CliError::InvalidOption {
                option: "--input",
                value: input.display().to_string(),
                why: "is for a single SHBIN file (program folders and directories use their \
                      own fixtures)"
                    .to_string(),
            });
        }
    }
    let mut targets = Vec::new();
    for path in &paths {
        let metadata = std::fs::metadata(path).map_err(|error| CliError::Io {
            path: path.clone(),
            action: super::IoAction::Read,
            error,
        })?;
        let before = (targets.len(), scenes.len());
        bench_scenes::find(path, 0, scenes)?;
        if metadata.is_dir() {
            add_directory(path, options, 0, &mut targets)?;
        } else if scenes.len() == before.1 {
            let input = match &options.input {
                Some(input) => input.clone(),
                None => path.with_extension("json"),
            };
            if !input.is_file() {
                return Err(nothing(
                    path,
                    &format!(
                        "no input file: give --input IN.json or put {} beside it",
                        input.file_name().map_or_else(
                            || "FILE.json".to_string(),
                            |n| n.to_string_lossy().into_owned()
                        )
                    ),
                ));
            }
            add_shbin(path, input, options, &mut targets)?;
        }
        if (targets.len(), scenes.len()) == before {
            return Err(nothing(
                path,
                "holds no SHBIN file with its FILE.json, no program folder (*.pica sources \
                 with dvleN.input.json fixtures) and no scene (*.ctf) to bench",
            ));
        }
    }
    Ok(targets)
}

/// The display name of a path: its last component.
fn short_name(path: &Path) -> String {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    escape(&name).into_owned()
}

fn add_shbin(
    path: &Path,
    input: PathBuf,
    options: &Options,
    targets: &mut Vec<Target>,
) -> Result<(), CliError> {
    let shbin = Arc::new(load_shbin(path)?);
    let dvle = options.dvle.unwrap_or(0);
    load_dvle(path, &shbin, dvle)?;
    targets.push(Target {
        name: short_name(path),
        path: path.to_path_buf(),
        shbin,
        dvle,
        input,
    });
    Ok(())
}

/// The sorted entries of a folder.
fn entries(dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let io_error = |error| CliError::Io {
        path: dir.to_path_buf(),
        action: super::IoAction::Read,
        error,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error)? {
        paths.push(entry.map_err(io_error)?.path());
    }
    paths.sort();
    Ok(paths)
}

fn has_extension(path: &Path, extension: &str) -> bool {
    path.extension().is_some_and(|e| e == extension)
}

/// What a folder given to `bench`, or met in a search, is (docs/cli.md, "What `bench` runs"):
/// it is a **program folder** when it holds a fixture `dvleN.input.json`, and its `*.pica`
/// files are then one program, assembled in name order (one DVLE each). Whatever it is, its
/// SHBIN files with inputs and its subfolders are searched too, and its scenes are found by
/// [`bench_scenes::find`]. `*.pica` sources in a folder without a fixture are no program
/// (nothing says what to run them on): a warning names them.
fn add_directory(
    dir: &Path,
    options: &Options,
    depth: usize,
    targets: &mut Vec<Target>,
) -> Result<(), CliError> {
    let paths = entries(dir)?;
    let sources = paths
        .iter()
        .filter(|p| p.is_file() && has_extension(p, "pica"))
        .count();
    if paths
        .iter()
        .any(|p| p.is_file() && fixture_index(p).is_some())
    {
        add_program_folder(dir, &paths, options, targets)?;
    } else if sources > 0 {
        warn(&format!(
            "warning: {}: skipped {sources} *.pica source(s): a program folder holds a \
             fixture dvleN.input.json for each DVLE to bench",
            dir.display()
        ));
    }
    for path in paths {
        if path.is_dir() {
            if depth < MAX_DEPTH {
                add_directory(&path, options, depth + 1, targets)?;
            }
        } else if has_extension(&path, "shbin") {
            let input = path.with_extension("json");
            if input.is_file() {
                add_shbin(&path, input, options, targets)?;
            } else {
                warn(&format!(
                    "warning: {}: skipped: no {} beside it",
                    path.display(),
                    short_name(&input)
                ));
            }
        }
    }
    Ok(())
}

/// The DVLE index of a fixture file name `dvleN.input.json`.
fn fixture_index(path: &Path) -> Option<usize> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix("dvle")?
        .strip_suffix(".input.json")?
        .parse()
        .ok()
}

fn add_program_folder(
    dir: &Path,
    paths: &[PathBuf],
    options: &Options,
    targets: &mut Vec<Target>,
) -> Result<(), CliError> {
    let name = short_name(dir);
    let mut sources = Vec::new();
    for path in paths.iter().filter(|p| has_extension(p, "pica")) {
        sources.push(SourceFile {
            name: format!("{}/{}", dir.display(), short_name(path)),
            text: read_text(path)?,
        });
    }
    if sources.is_empty() {
        return Err(nothing(
            dir,
            "holds fixtures (dvleN.input.json) but no *.pica sources to assemble",
        ));
    }
    let shbin = Arc::new(asm::assemble(&sources, AsmOptions::default())?.shbin);
    let mut fixtures: Vec<(usize, PathBuf)> = paths
        .iter()
        .filter_map(|p| Some((fixture_index(p)?, p.clone())))
        .filter(|(index, _)| options.dvle.is_none_or(|d| d == *index))
        .collect();
    fixtures.sort();
    if let Some(dvle) = options.dvle
        && fixtures.is_empty()
    {
        return Err(nothing(dir, &format!("no fixture dvle{dvle}.input.json")));
    }
    for (dvle, input) in fixtures {
        load_dvle(dir, &shbin, dvle)?;
        targets.push(Target {
            name: name.clone(),
            path: dir.to_path_buf(),
            shbin: shbin.clone(),
            dvle,
            input,
        });
    }
    Ok(())
}

/// Every target in every precision mode, its input parsed (so a bad input fails before
/// anything is measured): the jobs of this shard, and how many the whole run has.
fn jobs<'a>(targets: &'a [Target], options: &Options) -> Result<(Vec<Job<'a>>, u64), CliError> {
    let mut jobs = Vec::new();
    let mut total = 0;
    for target in targets {
        let text = read_text(&target.input)?;
        let (dvle, program) = load_dvle(&target.path, &target.shbin, target.dvle)?;
        for (i, &precision) in options.precisions.iter().enumerate() {
            let input =
                parse_input_for(&text, precision, dvle).map_err(|error| CliError::Input {
                    path: target.input.clone(),
                    error,
                })?;
            if i == 0 {
                for warning in &input.warnings {
                    warn(&format!("warning: {}: {warning}", target.input.display()));
                }
            }
            if input.invocations.is_empty() {
                return Err(CliError::NothingToRun {
                    path: target.input.clone(),
                    kind: dvle.kind,
                });
            }
            let index = total;
            total += 1;
            if options.shard.contains(index) {
                jobs.push(Job {
                    index,
                    target,
                    precision,
                    program: program.clone(),
                    input,
                });
            }
        }
    }
    Ok((jobs, total))
}

// ---------------------------------------------------------------------------------------------
// Measuring.

/// States the exact control-flow graph may have before [`reachable_words`] falls back to the
/// stack-blind superset.
const EXPLORATION_LIMIT: usize = 20_000;

/// Program addresses control can reach (the zero words past the code included): those of the
/// exact control-flow graph, or where it is too large, the stack-blind superset
/// (docs/execution-model.md §5).
fn reachable_words(program: &ShaderProgram) -> usize {
    let decoded = decode_words(&program.code[..]);
    let graph = explore(&decoded, program.entry, EXPLORATION_LIMIT);
    let reachable = if graph.complete {
        graph.addresses()
    } else {
        reachable_addresses(&decoded, program.entry)
    };
    reachable.iter().filter(|&&r| r).count()
}

/// The peak resident set, from `/proc/self/status` (`VmHWM`).
#[derive(Default)]
struct PeakMemory {
    /// The highest reading so far.
    highest: Option<u64>,
}

impl PeakMemory {
    /// The peak since the last reset, in bytes, where the system says.
    fn read(&mut self) -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line
            .trim_start_matches("VmHWM:")
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        let bytes = kib * 1024;
        self.highest = Some(self.highest.map_or(bytes, |h| h.max(bytes)));
        Some(bytes)
    }

    /// Starts a new peak where the system allows it (else readings stay the process's peak).
    fn reset(&mut self) {
        self.read();
        // Writing 5 to clear_refs resets the peak resident set to the current one (Linux).
        let _ = std::fs::write("/proc/self/clear_refs", "5");
    }

    /// The highest peak read over the whole run.
    fn overall(&mut self) -> Option<u64> {
        self.read();
        self.highest
    }
}

/// An engine prepared for a job, with what preparing it cost.
struct Prepared {
    kind: EngineKind,
    engine: Arc<dyn ShaderEngine>,
    /// Until the engine can run (prepare).
    ready: Duration,
    /// Until it runs at full speed (prepare and warm-up: specialised kernels, background
    /// compiles).
    compile: Duration,
    cache_hit: Duration,
    cache_same: bool,
}

fn prepare_all(
    kinds: &[EngineKind],
    program: &ShaderProgram,
    config: ExecConfig,
    uniforms: &Uniforms,
) -> Result<Vec<Prepared>, CliError> {
    let mut ready = vec![Duration::MAX; kinds.len()];
    let mut compile = vec![Duration::MAX; kinds.len()];
    for _ in 0..PREPARE_ROUNDS {
        for ((ready, compile), &kind) in ready.iter_mut().zip(compile.iter_mut()).zip(kinds) {
            let started = Instant::now();
            let engine = engine::prepare(kind, program.clone(), config)?;
            *ready = (*ready).min(started.elapsed());
            engine.warm_up(uniforms);
            *compile = (*compile).min(started.elapsed());
            drop(engine);
        }
    }
    let mut prepared = Vec::with_capacity(kinds.len());
    for ((&kind, compile), ready) in kinds.iter().zip(compile).zip(ready) {
        // An emulator uploading the same code again: the first request prepares (a miss), the
        // next ones get the same program back.
        let cache = ProgramCache::default();
        let engine = engine::prepare_cached(&cache, kind, program, config)?;
        engine.warm_up(uniforms);
        let mut cache_hit = Duration::MAX;
        let mut cache_same = true;
        for _ in 0..HIT_ROUNDS {
            let started = Instant::now();
            let again = engine::prepare_cached(&cache, kind, program, config)?;
            cache_hit = cache_hit.min(started.elapsed());
            cache_same &= Arc::ptr_eq(&engine, &again);
        }
        prepared.push(Prepared {
            kind,
            engine,
            ready,
            compile,
            cache_hit,
            cache_same,
        });
    }
    Ok(prepared)
}

/// How one engine's runs went (the timed ones and the hashed one).
struct Runs {
    single: Duration,
    threaded: Option<Duration>,
    digests: Vec<u128>,
    peak: Option<u64>,
}

fn measure(job: &Job, options: &Options, peak: &mut PeakMemory) -> Result<JobResult, CliError> {
    let dvle = &job.target.shbin.dvles[job.target.dvle];
    let config = ExecConfig {
        precision: job.precision,
        ..ExecConfig::default()
    };
    let mut kinds = options.engines.clone();
    let reference_timed = kinds.contains(&reference());
    if !reference_timed {
        kinds.push(reference());
    }
    let mut uniforms = Uniforms::from_constants(dvle);
    job.input.apply_uniforms(&mut uniforms);
    let prepared = prepare_all(&kinds, &job.program, config, &uniforms)?;
    let timed = if reference_timed {
        prepared.len()
    } else {
        prepared.len() - 1
    };
    let geometry = dvle.kind == ShaderKind::Geometry;
    let mut emitted = None;
    let runs: Vec<Runs> = if geometry {
        let draw = GeometryDraw {
            uniforms,
            input: &job.input,
            count: options.count,
        };
        let mut best = vec![Duration::MAX; timed];
        for _ in 0..options.repeat {
            for (best, p) in best.iter_mut().zip(&prepared) {
                let mut count = Count::default();
                *best = (*best).min(draw.pass(p.engine.as_ref(), &mut count, |_, _, _| {}));
                emitted = Some(count.0);
            }
        }
        prepared
            .iter()
            .enumerate()
            .map(|(i, p)| {
                peak.reset();
                let digest = draw.digest(p.engine.as_ref());
                Runs {
                    single: best.get(i).copied().unwrap_or_default(),
                    threaded: None,
                    digests: vec![digest],
                    peak: peak.read(),
                }
            })
            .collect()
    } else {
        let mut run = VertexRun::new(&job.program, &job.input, uniforms, options.count);
        let threads = options.threads;
        let mut single = vec![Duration::MAX; timed];
        let mut threaded = vec![Duration::MAX; timed];
        for _ in 0..options.repeat {
            for (best, p) in single.iter_mut().zip(&prepared) {
                *best = (*best).min(run.pass(p.engine.as_ref(), 1, None));
            }
            if threads > 1 {
                for (best, p) in threaded.iter_mut().zip(&prepared) {
                    *best = (*best).min(run.pass(p.engine.as_ref(), threads, None));
                }
            }
        }
        prepared
            .iter()
            .enumerate()
            .map(|(i, p)| {
                peak.reset();
                let mut digests = Vec::new();
                for t in if threads > 1 {
                    vec![1, threads]
                } else {
                    vec![1]
                } {
                    let mut hasher = Xxh3Default::new();
                    run.pass(p.engine.as_ref(), t, Some(&mut hasher));
                    digests.push(hasher.digest128());
                }
                Runs {
                    single: single.get(i).copied().unwrap_or_default(),
                    threaded: (threads > 1).then(|| threaded.get(i).copied().unwrap_or_default()),
                    digests,
                    peak: peak.read(),
                }
            })
            .collect()
    };
    let reference_digest = runs[kinds
        .iter()
        .position(|&k| k == reference())
        .expect("the reference is always prepared")]
    .digests[0];
    let engines: Vec<EngineResult> = prepared
        .iter()
        .zip(&runs)
        .take(timed)
        .map(|(p, r)| EngineResult {
            kind: p.kind,
            ready: p.ready,
            compile: p.compile,
            cache_hit: p.cache_hit,
            cache_same: p.cache_same,
            single: r.single,
            threaded: r.threaded,
            peak: r.peak,
            exact: r.digests.iter().all(|&d| d == reference_digest),
        })
        .collect();
    let fastest = engines
        .iter()
        .enumerate()
        .filter(|(_, e)| e.exact)
        .min_by_key(|(_, e)| e.single)
        .map(|(i, _)| i);
    Ok(JobResult {
        job: job.index,
        name: job.target.name.clone(),
        path: job.target.path.display().to_string(),
        dvle: job.target.dvle,
        stage: dvle.kind,
        precision: job.precision,
        code_words: job.program.code_len,
        reachable_words: reachable_words(&job.program),
        fixture_len: job.input.invocations.len(),
        emitted,
        engines,
        fastest,
    })
}

/// A vertex-shader run of `count` vertices: the fixture's vertices repeated in one input buffer
/// of at most [`BATCH`] vertices, run batch after batch into one output buffer.
struct VertexRun {
    uniforms: Uniforms,
    inputs: SoaBuffer,
    outputs: SoaBuffer,
    flow: Vec<FlowRegisters>,
    errors: Vec<(usize, ExecError)>,
    count: u64,
    /// Scratch bytes for hashing.
    bytes: Vec<u8>,
}

impl VertexRun {
    fn new(program: &ShaderProgram, input: &RunInput, uniforms: Uniforms, count: u64) -> Self {
        let layout = BatchLayout::of(program);
        let len = usize::try_from(count).unwrap_or(BATCH).min(BATCH);
        let mut inputs = SoaBuffer::zeroed(layout.inputs, len);
        {
            let mut planes = inputs.outputs();
            for (i, invocation) in input.invocations.iter().cycle().take(len).enumerate() {
                planes.set_vertex(i, &invocation.registers);
            }
        }
        VertexRun {
            uniforms,
            inputs,
            outputs: SoaBuffer::zeroed(layout.outputs, len),
            flow: vec![FlowRegisters::default(); len],
            errors: Vec::new(),
            count,
            bytes: Vec::new(),
        }
    }

    /// Runs all `count` vertices on `threads` threads (1: [`ShaderEngine::run_batch`] on this
    /// one) and returns the time spent in the engine; with `hasher`, hashes every result.
    fn pass(
        &mut self,
        engine: &dyn ShaderEngine,
        threads: usize,
        mut hasher: Option<&mut Xxh3Default>,
    ) -> Duration {
        let mut elapsed = Duration::ZERO;
        let mut done = 0u64;
        let batch = self.inputs.count() as u64;
        while done < self.count {
            let len = (self.count - done).min(batch) as usize;
            self.errors.clear();
            let flow = if hasher.is_some() {
                Some(&mut self.flow[..len])
            } else {
                None
            };
            let io = BatchIo::new(
                self.inputs.inputs().range(0, len),
                self.outputs.outputs().split_at(len).0,
                flow,
            )
            .expect("the buffers are made for the batch");
            let started = Instant::now();
            if threads <= 1 {
                let mut rest = io;
                let mut offset = 0;
                while rest.count() > 0 {
                    let len = rest.count().min(ONE_THREAD_BATCH);
                    let (mut head, tail) = rest.split_at(len);
                    let before = self.errors.len();
                    engine.run_batch(&self.uniforms, &mut head, &mut self.errors);
                    for (i, _) in &mut self.errors[before..] {
                        *i += offset;
                    }
                    offset += head.count();
                    rest = tail;
                }
            } else {
                run_batch_threads(engine, threads, &self.uniforms, io, &mut self.errors);
            }
            elapsed += started.elapsed();
            if let Some(hasher) = hasher.as_deref_mut() {
                self.hash_batch(hasher, len);
            }
            done += len as u64;
        }
        elapsed
    }

    /// Hashes the first `len` vertices' outputs, flow registers and errors.
    fn hash_batch(&mut self, hasher: &mut Xxh3Default, len: usize) {
        for k in 0..self.outputs.registers().planes() {
            self.bytes.clear();
            for x in &self.outputs.plane(k)[..len] {
                self.bytes.extend_from_slice(&x.to_bits().to_le_bytes());
            }
            hasher.update(&self.bytes);
        }
        self.bytes.clear();
        for flow in &self.flow[..len] {
            for value in [flow.a0[0], flow.a0[1], flow.al] {
                self.bytes.extend_from_slice(&value.to_le_bytes());
            }
            self.bytes
                .extend([u8::from(flow.cmp[0]), u8::from(flow.cmp[1])]);
        }
        hasher.update(&self.bytes);
        for (i, error) in &self.errors {
            hasher.update(&(*i as u64).to_le_bytes());
            hasher.update(error.to_string().as_bytes());
        }
    }
}

fn hash_vec(hasher: &mut Xxh3Default, v: &Vec4) {
    for x in v {
        hasher.update(&x.to_bits().to_le_bytes());
    }
}

/// Counts what is emitted (the timed runs).
#[derive(Default)]
struct Count(u64);

impl EmitSink for Count {
    fn vertex(&mut self, _: EmitConfig, _: &[Vec4; 16]) {
        self.0 += 1;
    }
    fn primitive(&mut self, _: bool, _: &[[Vec4; 16]; 3]) {}
}

/// Hashes what is emitted, for the output registers (the agreement pass).
struct Hashing<'a> {
    hasher: Xxh3Default,
    outputs: &'a [usize],
}

impl EmitSink for Hashing<'_> {
    fn vertex(&mut self, config: EmitConfig, outputs: &[Vec4; 16]) {
        self.hasher.update(&config.packed().to_le_bytes());
        for &n in self.outputs {
            hash_vec(&mut self.hasher, &outputs[n]);
        }
    }
    fn primitive(&mut self, winding: bool, slots: &[[Vec4; 16]; 3]) {
        self.hasher.update(&[2, winding.into()]);
        for slot in slots {
            for &n in self.outputs {
                hash_vec(&mut self.hasher, &slot[n]);
            }
        }
    }
}

/// A geometry-shader run of `count` invocations: the fixture's invocation list as consecutive
/// draws, each on a fresh state and uniforms.
struct GeometryDraw<'a> {
    uniforms: Uniforms,
    input: &'a RunInput,
    count: u64,
}

impl GeometryDraw<'_> {
    /// Runs every invocation; `sink` gets what they emit and `after` each invocation's outcome.
    /// Returns the time spent.
    fn pass<S: EmitSink>(
        &self,
        engine: &dyn ShaderEngine,
        sink: &mut S,
        mut after: impl FnMut(&mut S, &Result<(), ExecError>, &GeometryState),
    ) -> Duration {
        let started = Instant::now();
        let draw = &self.input.invocations;
        let mut done = 0u64;
        while done < self.count {
            let mut state = GeometryState::default();
            let mut uniforms = self.uniforms.clone();
            let len = (self.count - done).min(draw.len() as u64) as usize;
            for invocation in &draw[..len] {
                for &(n, v) in &invocation.uniform_writes {
                    uniforms.float[n] = v;
                }
                let result =
                    engine.run_geometry(&mut state, &uniforms, &invocation.registers, sink);
                after(sink, &result, &state);
            }
            done += len as u64;
        }
        started.elapsed()
    }

    /// The hash of every invocation's outcome, final flow registers and emitted vertex and
    /// triangle.
    fn digest(&self, engine: &dyn ShaderEngine) -> u128 {
        let outputs: Vec<usize> = engine.program().output_registers().collect();
        let mut sink = Hashing {
            hasher: Xxh3Default::new(),
            outputs: &outputs,
        };
        self.pass(engine, &mut sink, |sink, result, state| {
            match result {
                Ok(()) => sink.hasher.update(b"ok"),
                Err(e) => sink.hasher.update(e.to_string().as_bytes()),
            }
            let flow = &state.registers.flow;
            sink.hasher
                .update(format!("{:?}", (flow.a0, flow.al, flow.cmp)).as_bytes());
        });
        sink.hasher.digest128()
    }
}

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

fn per_second(count: u64, time: Duration) -> f64 {
    count as f64 / time.as_secs_f64().max(1e-12)
}

fn nanos_each(count: u64, time: Duration) -> f64 {
    time.as_secs_f64() * 1e9 / count as f64
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(
        || "n/a".to_string(),
        |b| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    )
}

/// `12.3 M/s` and the like.
pub(super) fn rate(per_second: f64) -> String {
    if per_second >= 1e9 {
        format!("{:.2} G/s", per_second / 1e9)
    } else if per_second >= 1e6 {
        format!("{:.2} M/s", per_second / 1e6)
    } else {
        format!("{:.1} k/s", per_second / 1e3)
    }
}

fn settings_line(options: &Options, programs: usize) -> String {
    let precisions: Vec<&str> = options.precisions.iter().map(|p| p.name()).collect();
    let engines: Vec<&str> = options.engines.iter().map(|e| e.name()).collect();
    format!(
        "picajit bench: {programs} DVLE run(s); precision {}; engines {}; {} vertices (geometry \
         shaders: invocations) per run, vertex batches of at most {ONE_THREAD_BATCH} (one thread) and {BATCH} (threads); {} thread(s); best of \
         {}, engines interleaved\n",
        precisions.join(", "),
        engines.join(", "),
        options.count,
        options.threads,
        options.repeat
    )
}

/// Lays out rows of cells in columns: text left, numbers right.
pub(super) fn layout(rows: &[Vec<String>], right: &[bool]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            let pad = widths[c] - cell.chars().count();
            if right.get(c).copied().unwrap_or(false) {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

fn table_report(
    results: &[JobResult],
    options: &Options,
    overall: Option<u64>,
    disagreements: &[String],
) -> String {
    let threads = options.threads;
    let mut rows = vec![vec![
        "program".to_string(),
        "dvle".to_string(),
        "stage".to_string(),
        "words".to_string(),
        "precision".to_string(),
        "engine".to_string(),
        "ready ms".to_string(),
        "compile ms".to_string(),
        "cache hit us".to_string(),
        "1 thread".to_string(),
        "rate".to_string(),
        if threads > 1 {
            format!("{threads} threads")
        } else {
            "threads".to_string()
        },
        "speed-up".to_string(),
        "peak memory".to_string(),
        "exact".to_string(),
    ]];
    let right = [
        false, true, false, true, false, false, true, true, true, true, true, true, true, false,
    ];
    for result in results {
        let unit = result.unit();
        for (i, engine) in result.engines.iter().enumerate() {
            let mark = if result.fastest == Some(i) { "*" } else { " " };
            let (threaded, speedup) = match engine.threaded {
                Some(t) => (
                    format!("{:.1} ns/{unit}", nanos_each(options.count, t)),
                    format!(
                        "{:.2}x",
                        engine.single.as_secs_f64() / t.as_secs_f64().max(1e-12)
                    ),
                ),
                None => ("-".to_string(), "-".to_string()),
            };
            rows.push(vec![
                result.name.clone(),
                result.dvle.to_string(),
                result.stage.name().to_string(),
                format!("{}/{}", result.code_words, result.reachable_words),
                result.precision.name().to_string(),
                format!("{mark} {}", engine.kind.name()),
                format!("{:.3}", engine.ready.as_secs_f64() * 1e3),
                format!("{:.3}", engine.compile.as_secs_f64() * 1e3),
                format!("{:.2}", engine.cache_hit.as_secs_f64() * 1e6),
                format!("{:.1} ns/{unit}", nanos_each(options.count, engine.single)),
                rate(per_second(options.count, engine.single)),
                threaded,
                speedup,
                mib(engine.peak),
                if engine.exact { "yes" } else { "NO" }.to_string(),
            ]);
        }
    }
    let mut text = settings_line(options, results.len());
    text.push('\n');
    text += &layout(&rows, &right);
    text.push('\n');
    text += &format!(
        "* the fastest exact engine (one thread) of each program and precision; exact: agrees bit \
         for bit with {} (the reference). words: code/reachable. rate: vertices (or \
         invocations) per second on one thread.\n",
        reference().name()
    );
    for result in results.iter().filter(|r| r.stage == ShaderKind::Geometry) {
        text += &format!(
            "{} DVLE {} (geometry shader, {}): {} invocations per run (draws of {}), {} vertices \
             emitted per run\n",
            result.name,
            result.dvle,
            result.precision,
            options.count,
            result.fixture_len,
            result.emitted.unwrap_or(0)
        );
    }
    let same = results
        .iter()
        .all(|r| r.engines.iter().all(|e| e.cache_same));
    text += &format!(
        "cache: each engine prepared once through a program cache, then {HIT_ROUNDS} identical \
         uploads: {}\n",
        if same {
            "every hit returned the same program"
        } else {
            "A HIT RETURNED A DIFFERENT PROGRAM"
        }
    );
    text += &format!("peak memory: {} (VmHWM over the whole run)\n", mib(overall));
    if disagreements.is_empty() {
        text += &format!(
            "agreement: every engine agrees bit for bit with {} on every vertex and invocation\n",
            reference().name()
        );
    } else {
        for line in disagreements {
            text += &format!("ENGINES DISAGREE: {line}\n");
        }
    }
    text
}

fn json_report(
    results: &[JobResult],
    scenes: &[bench_scenes::SceneResult],
    options: &Options,
    overall: Option<u64>,
) -> String {
    let programs: Vec<Value> = results
        .iter()
        .map(|result| {
            let speed_key = match result.stage {
                ShaderKind::Vertex => "ns_per_vertex",
                ShaderKind::Geometry => "ns_per_invocation",
            };
            let rate_key = match result.stage {
                ShaderKind::Vertex => "vertices_per_s",
                ShaderKind::Geometry => "invocations_per_s",
            };
            let engines: Vec<Value> = result
                .engines
                .iter()
                .enumerate()
                .map(|(i, engine)| {
                    let mut entry = serde_json::Map::new();
                    entry.insert("engine".into(), json!(engine.kind.name()));
                    entry.insert(
                        "compile_ms".into(),
                        json!(engine.compile.as_secs_f64() * 1e3),
                    );
                    entry.insert("ready_ms".into(), json!(engine.ready.as_secs_f64() * 1e3));
                    entry.insert(
                        "cache_hit_us".into(),
                        json!(engine.cache_hit.as_secs_f64() * 1e6),
                    );
                    entry.insert(
                        speed_key.into(),
                        json!(nanos_each(options.count, engine.single)),
                    );
                    entry.insert(
                        rate_key.into(),
                        json!(per_second(options.count, engine.single)),
                    );
                    entry.insert(
                        "threaded".into(),
                        match engine.threaded {
                            Some(t) => json!({
                                "threads": options.threads,
                                speed_key: nanos_each(options.count, t),
                                rate_key: per_second(options.count, t),
                                "speedup": engine.single.as_secs_f64() / t.as_secs_f64().max(1e-12),
                            }),
                            None => Value::Null,
                        },
                    );
                    entry.insert("peak_memory_bytes".into(), json!(engine.peak));
                    entry.insert("exact".into(), json!(engine.exact));
                    entry.insert("cache_hit_same".into(), json!(engine.cache_same));
                    entry.insert("fastest".into(), json!(result.fastest == Some(i)));
                    Value::Object(entry)
                })
                .collect();
            json!({
                "job": result.job,
                "program": result.name,
                "path": result.path,
                "dvle": result.dvle,
                "stage": result.stage.name(),
                "precision": result.precision.name(),
                "code_words": result.code_words,
                "reachable_words": result.reachable_words,
                "fixture_len": result.fixture_len,
                "emitted_per_run": result.emitted,
                "agree": result.agree(),
                "engines": engines,
            })
        })
        .collect();
    let document = json!({
        "kind": "bench",
        "shards": {"count": options.shard.count, "indices": [options.shard.index]},
        "settings": {
            "count": options.count,
            "vertex_batch": ONE_THREAD_BATCH,
            "threads_vertex_batch": BATCH,
            "threads": options.threads,
            "repeat": options.repeat,
            "precisions": options.precisions.iter().map(|p| p.name()).collect::<Vec<_>>(),
            "engines": options.engines.iter().map(|e| e.name()).collect::<Vec<_>>(),
            "reference": reference().name(),
        },
        "results": programs,
        "scenes": bench_scenes::json(scenes),
        "agree": results.iter().all(JobResult::agree) && scenes.iter().all(|s| s.agree()),
        "peak_memory_bytes": overall,
    });
    // One line: the shards of a run concatenate into JSON lines (`picajit merge` joins them).
    let mut text = document.to_string();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::document::input::parse_input;
    use crate::exec::VertexResult;
    use crate::interp::Interpreter;
    use crate::program::InputRegisters;

    /// The interpreter, noting the length and buffers of every batch it is given.
    struct Recording {
        inner: Interpreter,
        batches: Mutex<Vec<(usize, usize, usize)>>,
    }

    impl ShaderEngine for Recording {
        fn name(&self) -> &'static str {
            "recording"
        }
        fn program(&self) -> &ShaderProgram {
            self.inner.program()
        }
        fn config(&self) -> ExecConfig {
            self.inner.config()
        }
        fn run_vertex(
            &self,
            uniforms: &Uniforms,
            inputs: &InputRegisters,
        ) -> Result<VertexResult, ExecError> {
            self.inner.run_vertex(uniforms, inputs)
        }
        fn run_batch(
            &self,
            uniforms: &Uniforms,
            io: &mut BatchIo<'_>,
            errors: &mut Vec<(usize, ExecError)>,
        ) {
            self.batches.lock().unwrap().push((
                io.count(),
                io.inputs.data().as_ptr() as usize,
                io.outputs.base_ptr() as usize,
            ));
            self.inner.run_batch(uniforms, io, errors);
        }
        fn run_geometry(
            &self,
            state: &mut GeometryState,
            uniforms: &Uniforms,
            inputs: &InputRegisters,
            sink: &mut dyn EmitSink,
        ) -> Result<(), ExecError> {
            self.inner.run_geometry(state, uniforms, inputs, sink)
        }
    }

    fn program() -> ShaderProgram {
        let shbin = crate::asm::assemble(
            &[crate::asm::SourceFile {
                name: "t.pica".into(),
                text: ".out o position\n.proc main\nmov o, v0\nend\n.end\n".into(),
            }],
            crate::asm::AsmOptions::default(),
        )
        .unwrap()
        .shbin;
        ShaderProgram::from_shbin(&shbin, 0).unwrap()
    }

    fn vertices(text: &str) -> RunInput {
        parse_input(text, Precision::F24Truncate, ShaderKind::Vertex).unwrap()
    }

    #[test]
    fn vertex_runs_reuse_one_buffer_in_batches_of_at_most_2048() {
        let program = program();
        let input = vertices(r#"{"vertices": [{"v0": [1]}, {"v0": [2]}, {"v0": [3]}]}"#);
        let count = 3 * BATCH as u64 + 5;
        let mut run = VertexRun::new(&program, &input, Uniforms::default(), count);
        let engine = Recording {
            inner: Interpreter::new(program.clone(), ExecConfig::default()),
            batches: Mutex::new(Vec::new()),
        };
        run.pass(&engine, 1, None);
        let mut hasher = Xxh3Default::new();
        run.pass(&engine, 1, Some(&mut hasher));
        let batches = engine.batches.into_inner().unwrap();
        let lengths: Vec<usize> = batches.iter().map(|b| b.0).collect();
        let one_thread = BATCH / ONE_THREAD_BATCH;
        let expected: Vec<usize> = std::iter::repeat_n(ONE_THREAD_BATCH, 3 * one_thread)
            .chain([5])
            .collect();
        assert_eq!(lengths, expected.repeat(2));
        // Every batch reads the one input buffer and writes the one output buffer (the first
        // batch starts them), a whole number of batches from their start.
        let in_buffer = |b: &(usize, usize, usize)| {
            [(b.1, batches[0].1), (b.2, batches[0].2)]
                .iter()
                .all(|&(at, start)| {
                    let vertices = at.wrapping_sub(start) / size_of::<f32>();
                    at >= start && vertices < BATCH && vertices.is_multiple_of(ONE_THREAD_BATCH)
                })
        };
        assert!(batches.iter().all(in_buffer));

        // The digest covers the inputs in order: a different order differs.
        let digest = hasher.digest128();
        let reordered = vertices(r#"{"vertices": [{"v0": [2]}, {"v0": [1]}, {"v0": [3]}]}"#);
        let mut other = VertexRun::new(&program, &reordered, Uniforms::default(), count);
        let mut hasher = Xxh3Default::new();
        other.pass(&engine.inner, 1, Some(&mut hasher));
        assert_ne!(digest, hasher.digest128());
        // And threads give the same bits.
        let mut hasher = Xxh3Default::new();
        run.pass(&engine.inner, 3, Some(&mut hasher));
        assert_eq!(digest, hasher.digest128());
    }

    /// A folder is a program folder by its fixtures, never by how many sources it holds: two
    /// sources that each define `main` without a fixture are skipped (they assembled as one
    /// program before), the same two with fixtures in folders of their own are two programs,
    /// and a program folder's subfolders and SHBIN files are searched as any folder's.
    #[test]
    fn a_program_folder_is_one_with_fixtures() {
        let root = std::env::temp_dir().join(format!("picajit-bench-rule-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let source = ".out o position\n.proc main\n    mov o, v0\n    end\n.end\n";
        let fixture = r#"{"vertices": [{"v0": [1, 2, 3, 1]}]}"#;
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("loose/a.v.pica", source);
        write("loose/b.v.pica", source);
        write("one/0-main.v.pica", source);
        write("one/dvle0.input.json", fixture);
        write("one/nested/0-main.v.pica", source);
        write("one/nested/dvle0.input.json", fixture);
        let shbin = asm::assemble(
            &[SourceFile {
                name: "s.v.pica".into(),
                text: source.into(),
            }],
            AsmOptions::default(),
        )
        .unwrap()
        .shbin;
        std::fs::write(root.join("one/extra.shbin"), crate::shbin::write(&shbin)).unwrap();
        write("one/extra.json", fixture);

        let found = |path: &str| {
            let mut options = options();
            options.paths = vec![root.join(path)];
            let mut scenes = Vec::new();
            targets(&options, &mut scenes).map(|targets| {
                targets
                    .iter()
                    .map(|t| format!("{}:{}", t.name, t.dvle))
                    .collect::<Vec<_>>()
            })
        };
        let loose = found("loose").expect_err("sources without fixtures are no program");
        assert!(loose.to_string().contains("holds no SHBIN file"), "{loose}");
        assert_eq!(
            found("one").unwrap(),
            ["one:0", "extra.shbin:0", "nested:0"]
        );
        assert_eq!(found("").unwrap(), ["one:0", "extra.shbin:0", "nested:0"]);
        std::fs::remove_dir_all(&root).unwrap();
    }

    fn options() -> Options {
        Options {
            paths: Vec::new(),
            input: None,
            dvle: None,
            precisions: vec![Precision::F24Truncate],
            engines: EngineKind::ALL.to_vec(),
            count: 1000,
            threads: 2,
            repeat: 1,
            json: false,
            shard: Shard::WHOLE,
        }
    }

    /// A result whose last engine disagrees with the reference.
    fn disagreeing() -> JobResult {
        let engine = |kind, exact, micros| EngineResult {
            kind,
            ready: Duration::from_micros(5),
            compile: Duration::from_micros(5),
            cache_hit: Duration::from_nanos(1500),
            cache_same: true,
            single: Duration::from_micros(micros),
            threaded: Some(Duration::from_micros(micros / 2)),
            peak: None,
            exact,
        };
        let last = EngineKind::ALL.len() - 1;
        JobResult {
            job: 0,
            name: "p".into(),
            path: "dir/p".into(),
            dvle: 0,
            stage: ShaderKind::Vertex,
            precision: Precision::F24Truncate,
            code_words: 3,
            reachable_words: 3,
            fixture_len: 1,
            emitted: None,
            // The disagreeing engine is the quickest, but only exact ones can be the fastest.
            engines: EngineKind::ALL
                .iter()
                .enumerate()
                .map(|(i, &kind)| engine(kind, i != last, 100 - i as u64))
                .collect(),
            fastest: Some(0),
        }
    }

    #[test]
    fn a_disagreement_is_loud() {
        let result = disagreeing();
        assert!(!result.agree());
        let line = "p DVLE 0 in f24: x differ from interp".to_string();
        let text = table_report(std::slice::from_ref(&result), &options(), None, &[line]);
        assert!(text.contains("ENGINES DISAGREE: p DVLE 0"), "{text}");
        assert!(text.contains("  NO\n"), "{text}");
        assert!(!text.contains("agreement: every engine agrees"), "{text}");
        assert!(text.contains("peak memory: n/a"), "{text}");
        let json: Value =
            serde_json::from_str(&json_report(&[result], &[], &options(), None)).unwrap();
        assert_eq!(json["agree"], false);
        assert_eq!(json["results"][0]["engines"][0]["fastest"], true);
        assert_eq!(json["peak_memory_bytes"], Value::Null);
        assert_eq!(
            json["results"][0]["engines"][0]["threaded"]["ns_per_vertex"],
            50.0
        );
    }

    #[test]
    fn the_table_lays_out_columns() {
        let rows = vec![
            vec!["a".to_string(), "1".to_string()],
            vec!["bbb".to_string(), "100".to_string()],
        ];
        assert_eq!(layout(&rows, &[false, true]), "a      1\nbbb  100\n");
    }
}
