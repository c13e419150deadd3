//! A bounded, thread-safe cache of prepared programs: uploading identical code never
//! recompiles.
//!
//! An emulator sends program memory again before many draws, mostly unchanged.
//! [`ProgramCache::get_or_prepare`] hashes everything the prepared program depends on into a
//! [`ProgramKey`] and hands out the engine prepared for an identical earlier request, or
//! prepares (compiles) the program once and keeps it. It holds any engine kind's programs.
//!
//! * **Key**: xxh3-128 over the engine kind, the 4096 code words and the 128 operand
//!   descriptors (each up to its last non-zero word, with that count: the zeros after a
//!   program's code are not hashed one by one), the uploaded lengths of both, the entry point, the stage, the output mask, the precision,
//!   the instruction budget and [`KEY_FORMAT_VERSION`] (see [`ProgramKey::of`]). The compiler specialises on no uniform
//!   value today; the key has a section reserved for such values.
//! * **Collisions**: a found entry only counts as a hit when its program and settings equal the
//!   requested ones (a 16 KiB comparison, negligible next to a compile); otherwise the request is
//!   a miss, compiled without being cached, and counted in [`CacheStats::collisions`].
//! * **Bounds**: at most [`ProgramCache::capacity`] compiled programs; one more evicts the least
//!   recently used. Eviction drops the cache's [`Arc`], so a compiled program's code is freed
//!   as soon as no caller still holds it. A caller that holds an evicted program keeps running
//!   it safely.
//! * **Threads**: the cache is `Send + Sync` (share it as `Arc<ProgramCache>`). The map lock is
//!   never held while compiling: requests for other programs are served meanwhile, and concurrent
//!   requests for the same missing program wait for the one compile already running.
//! * **Errors**: a failed compile is returned to the request that ran it and to every request
//!   waiting for it, and is not cached: the next request compiles again.
//!
//! ```
//! use std::sync::Arc;
//! use picajit_engine::EngineKind;
//! use picajit_engine::cache::ProgramCache;
//! use shader::exec::ExecConfig;
//! use shader::program::{ShaderKind, ShaderProgram};
//!
//! // mov o0, v0; end
//! let program =
//!     ShaderProgram::new(&[0x4C00_0000, 0x8800_0000], &[0x36F], 0, ShaderKind::Vertex, 1).unwrap();
//! let cache = ProgramCache::default();
//! let first = cache.get_or_prepare(EngineKind::Jit, &program, ExecConfig::default()).unwrap();
//! let again = cache.get_or_prepare(EngineKind::Jit, &program.clone(), ExecConfig::default()).unwrap();
//! assert!(Arc::ptr_eq(&first, &again));
//! let stats = cache.stats();
//! assert_eq!((stats.hits, stats.misses, stats.compiles), (1, 1, 1));
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::num::NonZeroUsize;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use xxhash_rust::xxh3::Xxh3;

use super::{EngineError, EngineKind, prepare};
use shader::exec::{ExecConfig, ShaderEngine};
use shader::float24::Precision;
use shader::program::{ShaderKind, ShaderProgram};

/// The layout version of [`ProgramKey`]: raised whenever the key starts covering something new
/// (a uniform value the compiler specialises on, a new setting), so that keys computed under
/// different layouts never compare equal.
pub const KEY_FORMAT_VERSION: u32 = 3;

/// How many compiled programs [`ProgramCache::default`] keeps.
pub const DEFAULT_CAPACITY: NonZeroUsize = NonZeroUsize::new(128).expect("128 is not zero");

/// A 128-bit hash (xxh3-128) of everything the code compiled for a program depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProgramKey(pub u128);

impl fmt::Display for ProgramKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// Words hashed per update: one call per KiB keeps the streaming hasher fast without allocating.
const WORDS_PER_UPDATE: usize = 256;

/// Hashes `words` as their little-endian bytes.
fn hash_words(hasher: &mut Xxh3, words: &[u32]) {
    let mut bytes = [0u8; WORDS_PER_UPDATE * 4];
    for chunk in words.chunks(WORDS_PER_UPDATE) {
        for (out, word) in bytes.chunks_exact_mut(4).zip(chunk) {
            out.copy_from_slice(&word.to_le_bytes());
        }
        hasher.update(&bytes[..chunk.len() * 4]);
    }
}

/// `words` up to its last non-zero word: the rest is zeros, which the length of what is kept
/// (hashed beside it) stands for. Programs are mostly the zeros after their code, so a key
/// hashes the code, not 16 KiB.
fn significant(words: &[u32]) -> &[u32] {
    const BLOCK: usize = 16;
    // Whole blocks first, each OR-ed at once (no early exit inside, so it vectorises).
    let blocks = words.len() / BLOCK;
    let tail_nonzero = words[blocks * BLOCK..].iter().any(|&w| w != 0);
    let last_block = if tail_nonzero {
        blocks
    } else {
        match words[..blocks * BLOCK]
            .chunks_exact(BLOCK)
            .rposition(|block| block.iter().fold(0, |any, &w| any | w) != 0)
        {
            Some(k) => k,
            None => return &[],
        }
    };
    let block_start = last_block * BLOCK;
    let end = words[block_start..words.len().min(block_start + BLOCK)]
        .iter()
        .rposition(|&w| w != 0)
        .map_or(block_start, |k| block_start + k + 1);
    &words[..end]
}

/// Hashes the significant words of `words` ([`significant`]) and how many they are.
fn hash_memory(hasher: &mut Xxh3, words: &[u32]) {
    let kept = significant(words);
    hasher.update(&(kept.len() as u64).to_le_bytes());
    hash_words(hasher, kept);
}

/// A fixed tag per stage (not the enum's discriminant, which may be reordered).
const fn stage_tag(stage: ShaderKind) -> u8 {
    match stage {
        ShaderKind::Vertex => 0,
        ShaderKind::Geometry => 1,
    }
}

/// A fixed tag per engine kind.
const fn engine_tag(kind: EngineKind) -> u8 {
    match kind {
        EngineKind::Interpreter => 0,
        EngineKind::Jit => 1,
        EngineKind::SoaJit => 2,
        EngineKind::VectorInterpreter => 3,
        EngineKind::Auto => 4,
        EngineKind::Gpu => 5,
        EngineKind::Vulkan => 6,
    }
}

/// A fixed tag per precision mode.
const fn precision_tag(precision: Precision) -> u8 {
    match precision {
        Precision::F24Truncate => 0,
        Precision::F24Nearest => 1,
        Precision::F32 => 2,
    }
}

impl ProgramKey {
    /// The key of preparing `program` with `config` for the engine `kind`.
    ///
    /// Every field of both is hashed. The uploaded lengths do not change the generated code (the
    /// rest of memory is zero either way), but a cached shader reports its program, so a hit must
    /// be the very program asked for. The destructuring below is exhaustive on purpose: a field
    /// added to [`ShaderProgram`] or [`ExecConfig`] does not compile until the key covers it.
    pub fn of(kind: EngineKind, program: &ShaderProgram, config: &ExecConfig) -> ProgramKey {
        let ShaderProgram {
            code,
            code_len,
            opdescs,
            opdesc_len,
            entry,
            stage,
            output_mask,
        } = program;
        let ExecConfig {
            precision,
            instruction_budget,
        } = config;
        let mut hasher = Xxh3::new();
        hasher.update(&KEY_FORMAT_VERSION.to_le_bytes());
        hasher.update(&[engine_tag(kind)]);
        hash_memory(&mut hasher, &code[..]);
        hash_memory(&mut hasher, &opdescs[..]);
        hasher.update(&(*code_len as u64).to_le_bytes());
        hasher.update(&(*opdesc_len as u64).to_le_bytes());
        hasher.update(&entry.to_le_bytes());
        hasher.update(&[stage_tag(*stage), precision_tag(*precision)]);
        hasher.update(&output_mask.to_le_bytes());
        hasher.update(&instruction_budget.to_le_bytes());
        // Uniform values the compiler specialises on: a count, then the values. The compiler
        // takes no uniforms today, so the section is empty; when it starts specialising (on bool
        // uniforms, say), the values it reads are hashed here and KEY_FORMAT_VERSION goes up.
        hasher.update(&0u32.to_le_bytes());
        ProgramKey(hasher.digest128())
    }
}

/// A snapshot of what a [`ProgramCache`] has done.
///
/// Every request is a hit or a miss. A miss compiles, or waits for the compile of the same
/// program that another request is already running, so `misses - compiles` requests waited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Requests served by a program already compiled and cached.
    pub hits: u64,
    /// Requests that found no compiled program.
    pub misses: u64,
    /// Compilations run (successful or not).
    pub compiles: u64,
    /// Compilations that failed (their error was returned, not cached).
    pub compile_errors: u64,
    /// Programs removed to make room for another.
    pub evictions: u64,
    /// Requests whose key matched a different program or settings (then compiled uncached).
    pub collisions: u64,
    /// Compiled programs held now.
    pub programs: usize,
    /// The most compiled programs held at once.
    pub capacity: usize,
}

/// What a request gets: the prepared program, shared with the cache, or why it failed.
pub type Prepared = Result<Arc<dyn ShaderEngine>, EngineError>;

/// A compile in progress; requests for the same program wait on it.
struct PendingCompile {
    kind: EngineKind,
    program: ShaderProgram,
    config: ExecConfig,
    outcome: Mutex<Option<Prepared>>,
    finished: Condvar,
}

impl PendingCompile {
    fn publish(&self, outcome: Prepared) {
        *lock(&self.outcome) = Some(outcome);
        self.finished.notify_all();
    }

    fn wait(&self) -> Prepared {
        let mut outcome = lock(&self.outcome);
        loop {
            if let Some(outcome) = outcome.as_ref() {
                return outcome.clone();
            }
            outcome = self
                .finished
                .wait(outcome)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

enum Slot {
    Ready {
        shader: Arc<dyn ShaderEngine>,
        kind: EngineKind,
        /// The tick of its last use: its place in [`CacheState::recency`].
        last_use: u64,
    },
    Compiling(Arc<PendingCompile>),
}

struct CacheState {
    slots: HashMap<ProgramKey, Slot>,
    /// The compiled programs by last use, least recent first.
    recency: BTreeMap<u64, ProgramKey>,
    /// Counts uses; each use gets a fresh tick.
    clock: u64,
    stats: CacheStats,
}

impl CacheState {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }
}

/// Locks `mutex`, ignoring poisoning: no code panics while holding these locks in a way that
/// leaves the guarded state inconsistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A bounded cache of compiled programs, shared between threads. See the [module](self) docs.
pub struct ProgramCache {
    capacity: NonZeroUsize,
    state: Mutex<CacheState>,
}

impl Default for ProgramCache {
    /// A cache of [`DEFAULT_CAPACITY`] programs.
    fn default() -> ProgramCache {
        ProgramCache::new(DEFAULT_CAPACITY)
    }
}

impl fmt::Debug for ProgramCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgramCache")
            .field("stats", &self.stats())
            .finish()
    }
}

/// What a lookup under the lock decided.
enum Lookup {
    Hit(Arc<dyn ShaderEngine>),
    /// Another request is compiling the same program.
    Wait(Arc<PendingCompile>),
    /// This request compiles and caches the program.
    Compile(Arc<PendingCompile>),
    /// The key belongs to a different program: compile without caching.
    Collision,
}

impl ProgramCache {
    /// An empty cache that holds at most `capacity` compiled programs.
    pub fn new(capacity: NonZeroUsize) -> ProgramCache {
        ProgramCache {
            capacity,
            state: Mutex::new(CacheState {
                slots: HashMap::new(),
                recency: BTreeMap::new(),
                clock: 0,
                stats: CacheStats {
                    capacity: capacity.get(),
                    ..CacheStats::default()
                },
            }),
        }
    }

    /// The most compiled programs held at once.
    pub fn capacity(&self) -> NonZeroUsize {
        self.capacity
    }

    /// How many compiled programs are held now.
    pub fn len(&self) -> usize {
        lock(&self.state).recency.len()
    }

    /// Whether no compiled program is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The counters so far and the number of programs held.
    pub fn stats(&self) -> CacheStats {
        let state = lock(&self.state);
        CacheStats {
            programs: state.recency.len(),
            ..state.stats
        }
    }

    /// Whether the program compiled for `program` and `config` is held (counts nothing and
    /// does not make it recently used).
    pub fn contains(&self, kind: EngineKind, program: &ShaderProgram, config: ExecConfig) -> bool {
        let key = ProgramKey::of(kind, program, &config);
        matches!(
            lock(&self.state).slots.get(&key),
            Some(Slot::Ready { shader, kind: held, .. })
                if *held == kind && shader.program() == program && shader.config() == config
        )
    }

    /// Drops every compiled program (their code is freed once no caller holds them). Compiles
    /// in progress finish and are cached as usual. Not counted as evictions.
    pub fn clear(&self) {
        let dropped: Vec<Slot> = {
            let mut state = lock(&self.state);
            let keys: Vec<ProgramKey> = state.recency.values().copied().collect();
            state.recency.clear();
            keys.iter()
                .filter_map(|key| state.slots.remove(key))
                .collect()
        };
        // Freeing code is a few system calls: done outside the lock.
        drop(dropped);
    }

    /// `program` prepared with `config` by the engine `kind`: the cached one when an identical
    /// request came before, else prepared now (once, however many threads ask at the same time)
    /// and cached, evicting the least recently used program when the cache is full.
    pub fn get_or_prepare(
        &self,
        kind: EngineKind,
        program: &ShaderProgram,
        config: ExecConfig,
    ) -> Prepared {
        let key = ProgramKey::of(kind, program, &config);
        let lookup = {
            let mut state = lock(&self.state);
            let lookup = match state.slots.get(&key) {
                Some(Slot::Ready {
                    shader,
                    kind: held,
                    last_use,
                }) => {
                    if *held == kind && shader.program() == program && shader.config() == config {
                        let (shader, last_use) = (Arc::clone(shader), *last_use);
                        let now = state.tick();
                        state.recency.remove(&last_use);
                        state.recency.insert(now, key);
                        if let Some(Slot::Ready { last_use, .. }) = state.slots.get_mut(&key) {
                            *last_use = now;
                        }
                        Lookup::Hit(shader)
                    } else {
                        Lookup::Collision
                    }
                }
                Some(Slot::Compiling(pending)) => {
                    if pending.kind == kind
                        && pending.program == *program
                        && pending.config == config
                    {
                        Lookup::Wait(Arc::clone(pending))
                    } else {
                        Lookup::Collision
                    }
                }
                None => {
                    let pending = Arc::new(PendingCompile {
                        kind,
                        program: program.clone(),
                        config,
                        outcome: Mutex::new(None),
                        finished: Condvar::new(),
                    });
                    state
                        .slots
                        .insert(key, Slot::Compiling(Arc::clone(&pending)));
                    Lookup::Compile(pending)
                }
            };
            match lookup {
                Lookup::Hit(_) => state.stats.hits += 1,
                Lookup::Collision => {
                    state.stats.misses += 1;
                    state.stats.collisions += 1;
                }
                Lookup::Wait(_) | Lookup::Compile(_) => state.stats.misses += 1,
            }
            lookup
        };
        match lookup {
            Lookup::Hit(shader) => Ok(shader),
            Lookup::Wait(pending) => pending.wait(),
            Lookup::Collision => {
                let outcome = prepare(kind, program.clone(), config).map(Arc::from);
                self.count_compile(outcome.is_ok());
                outcome
            }
            Lookup::Compile(pending) => {
                let mut publisher = Publisher {
                    cache: self,
                    key,
                    pending: &pending,
                    published: false,
                };
                let outcome = prepare(kind, program.clone(), config).map(Arc::from);
                publisher.publish(outcome.clone());
                outcome
            }
        }
    }

    fn count_compile(&self, succeeded: bool) {
        let mut state = lock(&self.state);
        state.stats.compiles += 1;
        if !succeeded {
            state.stats.compile_errors += 1;
        }
    }

    /// Replaces the pending slot of `key` with the outcome (cached when it is a program,
    /// removed when it is an error) and evicts down to the capacity.
    fn finish_compile(&self, key: ProgramKey, kind: EngineKind, outcome: &Prepared) {
        let evicted: Vec<Slot> = {
            let mut state = lock(&self.state);
            state.stats.compiles += 1;
            let mut evicted = Vec::new();
            match outcome {
                Ok(shader) => {
                    let now = state.tick();
                    state.slots.insert(
                        key,
                        Slot::Ready {
                            shader: Arc::clone(shader),
                            kind,
                            last_use: now,
                        },
                    );
                    state.recency.insert(now, key);
                    while state.recency.len() > self.capacity.get() {
                        let (_, oldest) = state.recency.pop_first().expect("over capacity");
                        evicted.extend(state.slots.remove(&oldest));
                        state.stats.evictions += 1;
                    }
                }
                Err(_) => {
                    state.stats.compile_errors += 1;
                    evicted.extend(state.slots.remove(&key));
                }
            }
            evicted
        };
        // Dropping the cache's last reference frees the code: done outside the lock.
        drop(evicted);
    }
}

/// Finishes a compile this request started: caches or forgets the outcome, then wakes the
/// requests waiting for it. If the compiler panics, `Drop` publishes an error instead, so no
/// waiter waits forever and the program can be compiled again later.
struct Publisher<'a> {
    cache: &'a ProgramCache,
    key: ProgramKey,
    pending: &'a PendingCompile,
    published: bool,
}

impl Publisher<'_> {
    fn publish(&mut self, outcome: Prepared) {
        self.published = true;
        self.cache
            .finish_compile(self.key, self.pending.kind, &outcome);
        self.pending.publish(outcome);
    }
}

impl Drop for Publisher<'_> {
    fn drop(&mut self) {
        if !self.published {
            let engine = self.pending.kind;
            self.publish(Err(EngineError::Panicked { engine }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mov o0, v0; end`.
    fn program() -> ShaderProgram {
        ShaderProgram::new(
            &[0x4C00_0000, 0x8800_0000],
            &[0x36F],
            0,
            ShaderKind::Vertex,
            1,
        )
        .unwrap()
    }

    /// `significant` keeps exactly the words up to the last non-zero one, as a plain scan from
    /// the end says: on empty and all-zero memory, a non-zero word at each place of a block and
    /// of a short tail, and at both ends.
    #[test]
    fn significant_words_end_at_the_last_non_zero_one() {
        let naive = |words: &[u32]| words.iter().rposition(|&w| w != 0).map_or(0, |k| k + 1);
        for len in [0, 1, 15, 16, 17, 37, 128, 4096] {
            let zeros = vec![0u32; len];
            assert!(significant(&zeros).is_empty(), "{len} zeros");
            for place in (0..len).filter(|&k| k < 40 || k + 40 > len) {
                for second in [None, Some(place / 2)] {
                    let mut words = zeros.clone();
                    words[place] = 0x8000_0000 >> (place % 32);
                    if let Some(second) = second {
                        words[second] = 7;
                    }
                    assert_eq!(
                        significant(&words).len(),
                        naive(&words),
                        "length {len}, word {place}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_cache_is_send_and_sync() {
        fn shareable<T: Send + Sync>() {}
        shareable::<ProgramCache>();
        shareable::<Arc<ProgramCache>>();
    }

    #[test]
    fn the_key_covers_every_field() {
        let base = program();
        let config = ExecConfig::default();
        let key = ProgramKey::of(EngineKind::Jit, &base, &config);
        assert_eq!(key, ProgramKey::of(EngineKind::Jit, &base.clone(), &config));
        let mut variants = Vec::new();
        let mut p = base.clone();
        p.code[4095] = 1;
        variants.push((p, config));
        let mut p = base.clone();
        p.opdescs[127] = 1;
        variants.push((p, config));
        let mut p = base.clone();
        p.code_len = 3;
        variants.push((p, config));
        let mut p = base.clone();
        p.opdesc_len = 2;
        variants.push((p, config));
        let mut p = base.clone();
        p.entry = 1;
        variants.push((p, config));
        let mut p = base.clone();
        p.stage = ShaderKind::Geometry;
        variants.push((p, config));
        let mut p = base.clone();
        p.output_mask = 3;
        variants.push((p, config));
        for precision in [Precision::F24Nearest, Precision::F32] {
            variants.push((
                base.clone(),
                ExecConfig {
                    precision,
                    ..config
                },
            ));
        }
        variants.push((
            base.clone(),
            ExecConfig {
                instruction_budget: 7,
                ..config
            },
        ));
        let mut keys: Vec<ProgramKey> = variants
            .iter()
            .map(|(p, c)| ProgramKey::of(EngineKind::Jit, p, c))
            .collect();
        keys.push(ProgramKey::of(EngineKind::Interpreter, &base, &config));
        keys.push(key);
        let count = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), count, "two variants share a key");
    }

    #[test]
    fn a_compile_that_panics_releases_its_waiters_and_its_slot() {
        let cache = ProgramCache::new(NonZeroUsize::new(2).unwrap());
        let program = program();
        let config = ExecConfig::default();
        let key = ProgramKey::of(EngineKind::Jit, &program, &config);
        // Simulate a request that started compiling and then panicked.
        let pending = Arc::new(PendingCompile {
            kind: EngineKind::Jit,
            program: program.clone(),
            config,
            outcome: Mutex::new(None),
            finished: Condvar::new(),
        });
        lock(&cache.state)
            .slots
            .insert(key, Slot::Compiling(Arc::clone(&pending)));
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| cache.get_or_prepare(EngineKind::Jit, &program, config));
            // The waiter holds a third reference once it has found the compile in progress.
            while Arc::strong_count(&pending) < 3 {
                std::thread::yield_now();
            }
            drop(Publisher {
                cache: &cache,
                key,
                pending: &pending,
                published: false,
            });
            let outcome = waiter.join().expect("the waiter returns");
            let error = outcome.err().expect("the panic is an error");
            assert_eq!(
                error,
                EngineError::Panicked {
                    engine: EngineKind::Jit
                }
            );
        });
        assert!(lock(&cache.state).slots.is_empty());
        assert_eq!(cache.stats().compile_errors, 1);
        // The next request compiles for real.
        assert!(
            cache
                .get_or_prepare(EngineKind::Jit, &program, config)
                .is_ok()
        );
        assert_eq!(cache.len(), 1);
    }
}
