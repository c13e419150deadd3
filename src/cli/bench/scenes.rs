//! `picajit bench` on scenes: CiTrace files (`*.ctf`, given or found in the folders given, as in
//! `picajit bench corpus/scenes`) replayed whole on the software GPU (docs/gpu.md, "Speed"),
//! per engine on one thread and on `--threads`, each the best of `--repeat` replays sharing one
//! program cache (as `picajit render --repeat`); the engines and thread counts take turns round
//! by round. Every replay's picture (the colour buffer bound at the end) must be the reference
//! interpreter's on one thread, bit for bit.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use xxhash_rust::xxh3::xxh3_64;

use crate::engine::EngineKind;
use crate::engine::cache::ProgramCache;
use crate::gpu::front::trace::{self, TraceFile};
use crate::gpu::{Gpu, GpuConfig};

use super::super::render::MappedTrace;
use super::super::{CliError, IoAction};
use super::jobs::{MAX_DEPTH, Options};
use super::table::{layout, rate};

/// One scene measured.
pub(super) struct SceneResult {
    /// Its place in the whole run (after the programs' jobs).
    pub(super) job: u64,
    name: String,
    path: PathBuf,
    frames: u64,
    draws: u64,
    vertices: u64,
    triangles: u64,
    fragments: u64,
    engines: Vec<SceneEngine>,
}

struct SceneEngine {
    kind: EngineKind,
    single: Duration,
    threaded: Option<Duration>,
    /// Whether every replay drew the reference picture.
    same: bool,
}

impl SceneResult {
    /// Whether every engine and thread count drew the reference picture.
    pub(super) fn agree(&self) -> bool {
        self.engines.iter().all(|e| e.same)
    }

    /// The engines that did not.
    pub(super) fn differing(&self) -> Vec<&'static str> {
        self.engines
            .iter()
            .filter(|e| !e.same)
            .map(|e| e.kind.name())
            .collect()
    }

    /// Its name (the file's).
    pub(super) fn name(&self) -> &str {
        &self.name
    }
}

/// The scenes `path` names: the file itself when it is a `.ctf`, or those in the folder and
/// its subfolders, in name order.
pub(super) fn find(path: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), CliError> {
    if !path.is_dir() {
        if path.extension().is_some_and(|e| e == "ctf") {
            out.push(path.to_path_buf());
        }
        return Ok(());
    }
    let io_error = |error| CliError::Io {
        path: path.to_path_buf(),
        action: IoAction::Read,
        error,
    };
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(path).map_err(io_error)? {
        entries.push(entry.map_err(io_error)?.path());
    }
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            if depth < MAX_DEPTH {
                find(&entry, depth + 1, out)?;
            }
        } else {
            find(&entry, depth, out)?;
        }
    }
    Ok(())
}

/// One replay: its time, the counts of what it drew and a hash of its picture.
struct Replay {
    time: Duration,
    counts: [u64; 5],
    picture: u64,
}

fn replay(
    path: &Path,
    scene: &TraceFile<'_>,
    config: GpuConfig,
    cache: &Arc<ProgramCache>,
) -> Result<Replay, CliError> {
    let gpu_error = |error| CliError::Gpu {
        path: path.to_path_buf(),
        error,
    };
    let started = Instant::now();
    let replayer = trace::replay(
        scene,
        Gpu::with_cache(config, cache.clone()),
        None,
        |_, _| {},
    )
    .map_err(gpu_error)?;
    let time = started.elapsed();
    let gpu = &replayer.gpu;
    let picture = gpu
        .color_image()
        .map_err(gpu_error)?
        .map_or(0, |image| xxh3_64(image.pixels.as_flattened()));
    Ok(Replay {
        time,
        counts: [
            replayer.stats.frames,
            gpu.stats.draws,
            gpu.stats.vertices,
            gpu.raster_stats.triangles,
            gpu.raster_stats.fragments,
        ],
        picture,
    })
}

/// Measures the scene at `path` (job `job` of the run) with each engine of `options`.
pub(super) fn measure(path: &Path, job: u64, options: &Options) -> Result<SceneResult, CliError> {
    let mapped = MappedTrace::open(path)?;
    let scene = TraceFile::parse(mapped.bytes()).map_err(|error| CliError::Trace {
        path: path.to_path_buf(),
        error,
    })?;
    let config = |engine, threads| GpuConfig {
        engine,
        threads,
        precision: options.precisions[0],
        ..GpuConfig::default()
    };
    let reference = EngineKind::ALL[0];
    let reference_cache = Arc::new(ProgramCache::new(std::num::NonZeroUsize::MIN));
    let truth = replay(path, &scene, config(reference, 1), &reference_cache)?;
    let threads = (options.threads > 1).then_some(options.threads);
    let caches: Vec<Arc<ProgramCache>> = options
        .engines
        .iter()
        .map(|_| Arc::new(ProgramCache::new(std::num::NonZeroUsize::new(64).unwrap())))
        .collect();
    let mut engines: Vec<SceneEngine> = options
        .engines
        .iter()
        .map(|&kind| SceneEngine {
            kind,
            single: Duration::MAX,
            threaded: threads.map(|_| Duration::MAX),
            same: true,
        })
        .collect();
    for _ in 0..options.repeat {
        for (engine, cache) in engines.iter_mut().zip(&caches) {
            for count in std::iter::once(1).chain(threads) {
                let run = replay(path, &scene, config(engine.kind, count), cache)?;
                engine.same &= run.picture == truth.picture && run.counts == truth.counts;
                let best = if count == 1 {
                    &mut engine.single
                } else {
                    engine.threaded.as_mut().expect("threaded runs")
                };
                *best = (*best).min(run.time);
            }
        }
    }
    let [frames, draws, vertices, triangles, fragments] = truth.counts;
    Ok(SceneResult {
        job,
        name: path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        ),
        path: path.to_path_buf(),
        frames,
        draws,
        vertices,
        triangles,
        fragments,
        engines,
    })
}

fn per_second(count: u64, time: Duration) -> f64 {
    count as f64 / time.as_secs_f64().max(1e-12)
}

fn ms(time: Duration) -> f64 {
    time.as_secs_f64() * 1e3
}

/// The scenes' table: one row per scene and engine.
pub(super) fn table(results: &[SceneResult], options: &Options) -> String {
    let threads = options.threads;
    let mut rows = vec![
        [
            "scene",
            "frames",
            "triangles",
            "fragments",
            "engine",
            "1 thread",
            "fragments/s",
        ]
        .map(str::to_string)
        .to_vec(),
    ];
    rows[0].extend([
        if threads > 1 {
            format!("{threads} threads")
        } else {
            "threads".to_string()
        },
        "speed-up".to_string(),
        "same picture".to_string(),
    ]);
    let right = [
        false, true, true, true, false, true, true, true, true, false,
    ];
    for result in results {
        for engine in &result.engines {
            let (threaded, speedup) = match engine.threaded {
                Some(t) => (
                    format!("{:.2} ms", ms(t)),
                    format!("{:.2}x", engine.single.as_secs_f64() / t.as_secs_f64()),
                ),
                None => ("-".to_string(), "-".to_string()),
            };
            rows.push(vec![
                result.name.clone(),
                result.frames.to_string(),
                result.triangles.to_string(),
                result.fragments.to_string(),
                engine.kind.name().to_string(),
                format!("{:.2} ms", ms(engine.single)),
                rate(per_second(result.fragments, engine.single)),
                threaded,
                speedup,
                if engine.same { "yes" } else { "NO" }.to_string(),
            ]);
        }
    }
    let mut text = layout(&rows, &right);
    text.push('\n');
    text += &format!(
        "scenes: each replayed whole, the best of {} per engine and thread count; same picture: \
         the colour buffer bound at the end is {}'s on one thread, bit for bit\n",
        options.repeat,
        EngineKind::ALL[0].name()
    );
    text
}

/// The scenes for the JSON document.
pub(super) fn json(results: &[SceneResult]) -> Value {
    let scenes: Vec<Value> = results
        .iter()
        .map(|result| {
            let engines: Vec<Value> = result
                .engines
                .iter()
                .map(|engine| {
                    json!({
                        "engine": engine.kind.name(),
                        "ms": ms(engine.single),
                        "fragments_per_s": per_second(result.fragments, engine.single),
                        "triangles_per_s": per_second(result.triangles, engine.single),
                        "threaded": engine.threaded.map(|t| json!({
                            "ms": ms(t),
                            "fragments_per_s": per_second(result.fragments, t),
                            "speedup": engine.single.as_secs_f64() / t.as_secs_f64(),
                        })),
                        "same_picture": engine.same,
                    })
                })
                .collect();
            json!({
                "job": result.job,
                "scene": result.name,
                "path": result.path.display().to_string(),
                "frames": result.frames,
                "draws": result.draws,
                "vertices": result.vertices,
                "triangles": result.triangles,
                "fragments": result.fragments,
                "agree": result.agree(),
                "engines": engines,
            })
        })
        .collect();
    Value::Array(scenes)
}
