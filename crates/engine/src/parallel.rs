//! Running one batch on several threads.
//!
//! [`run_batch_threads`] cuts a batch into chunks of consecutive vertices and runs them on a
//! thread pool; each chunk writes its own vertices' planes and collects its own errors, which
//! are joined in vertex order. Every vertex's result depends only on its inputs and the
//! uniforms (docs/execution-model.md §6.1), so the outputs, flow entries and errors are the same
//! bits for every thread count and chunking. Geometry shaders are sequential by definition and
//! never go through here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use shader::exec::{BatchIo, ExecError, STRIDE_ALIGN, ShaderEngine};
use shader::program::Uniforms;

/// The smallest chunk worth sending to another thread (vertices): below it the hand-off costs
/// more than it saves.
pub const MIN_CHUNK: usize = 1024;

/// The pools, one per thread count asked for (building one starts threads; reusing it does not).
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
            .thread_name(|i| format!("picajit-batch-{i}"))
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

/// [`ShaderEngine::run_batch`] on `threads` threads (1 runs on the caller's thread). Chunk
/// boundaries fall on multiples of [`STRIDE_ALIGN`] vertices, so vector kernels keep whole
/// groups.
pub fn run_batch_threads(
    engine: &dyn ShaderEngine,
    threads: usize,
    uniforms: &Uniforms,
    io: BatchIo<'_>,
    errors: &mut Vec<(usize, ExecError)>,
) {
    let count = io.count();
    let chunks = chunk_count(count, threads);
    // A few chunks per thread, so a thread that finishes early (fewer declined vertices, say)
    // takes more.
    let chunk = count.div_ceil(chunks).div_ceil(STRIDE_ALIGN) * STRIDE_ALIGN;
    run_batch_chunked(engine, threads, chunk, uniforms, io, errors);
}

/// [`ShaderEngine::run_batch`] in chunks of `chunk` vertices (the last one shorter) on
/// `threads` threads. Any chunk length gives the same results; the differential tester uses
/// odd small ones to check that engines handle batches that start anywhere in a buffer.
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
        pool(threads)
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
        parts.push((start, head, Vec::new()));
        start += chunk;
        rest = tail;
    }
    parts.push((start, rest, Vec::new()));
    pool.install(|| {
        use rayon::prelude::*;
        parts.par_iter_mut().for_each(|(_, io, errors)| {
            engine.run_batch(uniforms, io, errors);
        });
    });
    for (start, _, chunk_errors) in parts {
        errors.extend(chunk_errors.into_iter().map(|(i, e)| (start + i, e)));
    }
}

/// How many chunks a batch of `count` vertices is cut into for `threads` threads.
fn chunk_count(count: usize, threads: usize) -> usize {
    if threads <= 1 {
        return 1;
    }
    (count / MIN_CHUNK).clamp(1, 4 * threads)
}
