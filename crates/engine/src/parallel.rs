//! Running one batch on several threads.
//!
//! [`run_batch_threads`] cuts a batch into chunks of consecutive vertices and runs them on a
//! thread pool; each chunk writes its own vertices' planes and collects its own errors, which
//! are joined in vertex order. Every vertex's result depends only on its inputs and the
//! uniforms (docs/execution-model.md §6.1), so the outputs, flow entries and errors are the same
//! bits for every thread count and chunking. Geometry shaders are sequential by definition and
//! never go through here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use shader::exec::{BatchIo, ExecError, STRIDE_ALIGN, ShaderEngine};
use shader::program::Uniforms;

/// The pools, one per worker count asked for (building one starts threads; reusing it does not).
/// The rasterizer's bands run on a pool of as many workers as threads, while the caller waits;
/// a vertex batch's chunks on the caller's thread and a pool of one fewer (a pool thread with
/// nothing to do still spins for a while, and on a machine with as many cores as threads it
/// would take time from the caller).
fn pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let pools = POOLS.get_or_init(Default::default);
    let mut pools = pools.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(pool) = pools.get(&threads) {
        return Some(pool.clone());
    }
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("picajit-{threads}-{i}"))
            .build()
            .ok()?,
    );
    pools.insert(threads, pool.clone());
    Some(pool)
}

/// Runs `work` inside the pool of `threads` threads, so that the rayon parallel iterators it
/// uses run there (the software GPU's rasterizer shares the vertex batches' pools). With one
/// thread, or when no pool can be built, `work` runs on the caller's thread.
pub fn in_pool<R: Send>(threads: usize, work: impl FnOnce() -> R + Send) -> R {
    match (threads > 1).then(|| pool(threads)).flatten() {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

/// How many threads the machine offers.
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Vertices the caller's thread runs and times before it decides whether to split a batch.
pub const PROBE: usize = 256;

/// The least single-thread time the rest of a batch must take to be split: below it, waking
/// the other threads and waiting for them costs about as much as it saves.
pub const SPLIT_WORTH: Duration = Duration::from_micros(60);

/// About how much work one chunk holds: small enough that the threads finish close together,
/// large enough that taking a chunk costs nothing next to running it.
pub const CHUNK_WORK: Duration = Duration::from_micros(15);

/// [`ShaderEngine::run_batch`] on up to `threads` threads (1 runs on the caller's thread).
///
/// The split comes from the work, not from the vertex count: the caller's thread runs a first
/// slice of [`PROBE`] vertices and times it, and only when the rest would take longer than
/// [`SPLIT_WORTH`] on one thread is it cut into chunks ([`SplitPlan`]). The caller then works
/// on the chunks alongside the pool's threads (see [`run_batch_chunked`]). Chunk boundaries
/// fall on multiples of [`STRIDE_ALIGN`] vertices, so vector kernels keep whole groups.
pub fn run_batch_threads(
    engine: &dyn ShaderEngine,
    threads: usize,
    uniforms: &Uniforms,
    io: BatchIo<'_>,
    errors: &mut Vec<(usize, ExecError)>,
) {
    let mut io = io;
    if threads <= 1 || io.count() < 2 * PROBE {
        engine.run_batch(uniforms, &mut io, errors);
        return;
    }
    let (mut probe, rest) = io.split_at(PROBE);
    let started = Instant::now();
    engine.run_batch(uniforms, &mut probe, errors);
    let plan = SplitPlan::from_probe(started.elapsed(), PROBE, rest.count(), threads);
    let before = errors.len();
    run_batch_chunked(engine, plan.threads, plan.chunk, uniforms, rest, errors);
    for (i, _) in &mut errors[before..] {
        *i += PROBE;
    }
}

/// How the rest of a batch is run, worked out from the time a first slice took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitPlan {
    /// Threads to run on (1: the caller's alone).
    pub threads: usize,
    /// Vertices per chunk, a multiple of [`STRIDE_ALIGN`] unless it is the whole rest.
    pub chunk: usize,
}

impl SplitPlan {
    /// The plan for `rest` vertices on up to `threads` threads, when `probed` vertices took
    /// `probe_time`: one thread when the rest is worth less than [`SPLIT_WORTH`]; otherwise
    /// chunks of about [`CHUNK_WORK`], at least one and at most eight per thread.
    pub fn from_probe(probe_time: Duration, probed: usize, rest: usize, threads: usize) -> Self {
        let rest_ns = probe_time.as_nanos() * rest as u128 / probed.max(1) as u128;
        if threads <= 1 || rest_ns < SPLIT_WORTH.as_nanos() {
            return SplitPlan {
                threads: 1,
                chunk: rest.max(1),
            };
        }
        let chunks = (rest_ns / CHUNK_WORK.as_nanos()).clamp(threads as u128, 8 * threads as u128);
        let chunk = rest.div_ceil(chunks as usize).div_ceil(STRIDE_ALIGN) * STRIDE_ALIGN;
        SplitPlan { threads, chunk }
    }
}

/// One chunk of a split batch: where it starts, its vertices, and the errors it met.
struct Part<'a> {
    start: usize,
    io: BatchIo<'a>,
    errors: Vec<(usize, ExecError)>,
}

/// [`ShaderEngine::run_batch`] in chunks of `chunk` vertices (the last one shorter) on
/// `threads` threads. Any chunk length gives the same results; the differential tester uses
/// odd small ones to check that engines handle batches that start anywhere in a buffer.
///
/// The caller's thread takes chunks too, in order, with a pool of `threads - 1` threads: a pool
/// thread that wakes late takes fewer chunks instead of holding the batch up.
pub fn run_batch_chunked(
    engine: &dyn ShaderEngine,
    threads: usize,
    chunk: usize,
    uniforms: &Uniforms,
    io: BatchIo<'_>,
    errors: &mut Vec<(usize, ExecError)>,
) {
    let chunk = chunk.max(1);
    let pool = if threads > 1 && io.count() > chunk {
        pool(threads - 1)
    } else {
        None
    };
    let Some(pool) = pool else {
        let mut io = io;
        engine.run_batch(uniforms, &mut io, errors);
        return;
    };
    let mut parts = Vec::with_capacity(io.count().div_ceil(chunk));
    let mut rest = io;
    let mut start = 0;
    while rest.count() > chunk {
        let (head, tail) = rest.split_at(chunk);
        parts.push(Mutex::new(Part {
            start,
            io: head,
            errors: Vec::new(),
        }));
        start += chunk;
        rest = tail;
    }
    parts.push(Mutex::new(Part {
        start,
        io: rest,
        errors: Vec::new(),
    }));
    let next = AtomicUsize::new(0);
    let take_chunks = || {
        while let Some(part) = parts.get(next.fetch_add(1, Ordering::Relaxed)) {
            // Each chunk is taken once, so its lock is never contended.
            let mut part = part.lock().unwrap_or_else(|e| e.into_inner());
            let Part { io, errors, .. } = &mut *part;
            engine.run_batch(uniforms, io, errors);
        }
    };
    pool.in_place_scope(|scope| {
        for _ in 1..threads.min(parts.len()) {
            scope.spawn(|_| take_chunks());
        }
        take_chunks();
    });
    for part in parts {
        let part = part.into_inner().unwrap_or_else(|e| e.into_inner());
        let start = part.start;
        errors.extend(part.errors.into_iter().map(|(i, e)| (start + i, e)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(ns_per_vertex: u64, count: usize, threads: usize) -> SplitPlan {
        let probe = Duration::from_nanos(ns_per_vertex * PROBE as u64);
        SplitPlan::from_probe(probe, PROBE, count - PROBE, threads)
    }

    #[test]
    fn a_small_batch_of_a_short_program_stays_on_one_thread() {
        // 2,626 vertices at 12 ns: the other 2,370 take 28 µs, under the 60 µs worth splitting.
        assert_eq!(
            plan(12, 2626, 2),
            SplitPlan {
                threads: 1,
                chunk: 2370
            }
        );
        // Whatever the work, one thread asked for is one thread.
        assert_eq!(plan(1000, 100_000, 1).threads, 1);
    }

    #[test]
    fn a_small_batch_of_a_long_program_is_split() {
        // 2,370 vertices at 172 ns: 408 µs, 27 chunks of 15 µs, capped at 8 per thread: 16.
        let p = plan(172, 2626, 2);
        assert_eq!(p.threads, 2);
        assert_eq!(
            p.chunk,
            2370usize.div_ceil(16).div_ceil(STRIDE_ALIGN) * STRIDE_ALIGN
        );
    }

    #[test]
    fn chunks_hold_whole_groups_and_cover_the_rest() {
        for ns in [1, 5, 12, 40, 170, 2000] {
            for count in [2 * PROBE, 2626, 10_000, 100_000] {
                for threads in [2, 3, 4, 8] {
                    let p = plan(ns, count, threads);
                    let rest = count - PROBE;
                    if p.threads == 1 {
                        // Split only what is worth it: under 60 µs at this rate.
                        assert!(ns as usize * rest < 60_000, "{ns} {count}");
                        continue;
                    }
                    assert_eq!(p.chunk % STRIDE_ALIGN, 0);
                    let chunks = rest.div_ceil(p.chunk);
                    assert!(
                        (2..=8 * threads).contains(&chunks),
                        "{ns} {count} {threads}"
                    );
                }
            }
        }
    }
}
