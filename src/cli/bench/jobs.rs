//! What a run measures: the options, the programs and their DVLEs, the jobs (a DVLE in one
//! precision mode) and what each engine did on each, and the sizes of the runs.

use super::*;

/// The most vertices of one input buffer, and of one `run_batch_threads` call.
pub const BATCH: usize = 16_384;

/// The most vertices of one single-thread `run_batch` call: the peer's measuring protocol
/// (2048-vertex batches), whose buffers stay in the core's cache.
pub const ONE_THREAD_BATCH: usize = 2_048;

/// Prepares per engine; the best is reported.
pub const PREPARE_ROUNDS: usize = 3;

/// Program-cache hits timed per engine; the best is reported.
pub const HIT_ROUNDS: usize = 5;

/// How deep folders are searched for programs and scenes.
pub(super) const MAX_DEPTH: usize = 4;

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
pub(super) struct Target {
    /// The program's name: its folder's or file's.
    pub(super) name: String,
    /// The SHBIN file or program folder.
    pub(super) path: PathBuf,
    pub(super) shbin: Arc<Shbin>,
    pub(super) dvle: usize,
    pub(super) input: PathBuf,
}

/// One DVLE in one precision mode, ready to run.
pub(super) struct Job<'a> {
    /// Its place in the whole run (before sharding).
    pub(super) index: u64,
    pub(super) target: &'a Target,
    pub(super) precision: Precision,
    pub(super) program: ShaderProgram,
    pub(super) input: RunInput,
}

/// How one engine did on one job.
pub(super) struct EngineResult {
    pub(super) kind: EngineKind,
    pub(super) ready: Duration,
    pub(super) compile: Duration,
    pub(super) cache_hit: Duration,
    /// Whether the cache hit returned the program it prepared.
    pub(super) cache_same: bool,
    pub(super) single: Duration,
    pub(super) threaded: Option<Duration>,
    pub(super) peak: Option<u64>,
    pub(super) exact: bool,
}

/// How one job went.
pub(super) struct JobResult {
    /// The job's place in the whole run.
    pub(super) job: u64,
    pub(super) name: String,
    pub(super) path: String,
    pub(super) dvle: usize,
    pub(super) stage: ShaderKind,
    pub(super) precision: Precision,
    pub(super) code_words: usize,
    pub(super) reachable_words: usize,
    pub(super) fixture_len: usize,
    /// Geometry shaders: vertices emitted per run.
    pub(super) emitted: Option<u64>,
    pub(super) engines: Vec<EngineResult>,
    /// Index into `engines` of the fastest exact one.
    pub(super) fastest: Option<usize>,
}

impl JobResult {
    pub(super) fn agree(&self) -> bool {
        self.engines.iter().all(|e| e.exact)
    }

    pub(super) fn unit(&self) -> &'static str {
        match self.stage {
            ShaderKind::Vertex => "vertex",
            ShaderKind::Geometry => "invocation",
        }
    }
}
