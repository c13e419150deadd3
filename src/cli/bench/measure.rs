//! Measuring one job: preparing each engine (timed, then a cache hit), the timed runs on one
//! thread and on several, the hashed pass that decides agreement, and the peak memory.

use super::*;

/// States the exact control-flow graph may have before [`reachable_words`] falls back to the
/// stack-blind superset.
pub(super) const EXPLORATION_LIMIT: usize = 20_000;

/// Program addresses control can reach (the zero words past the code included): those of the
/// exact control-flow graph, or where it is too large, the stack-blind superset
/// (docs/execution-model.md §5).
pub(super) fn reachable_words(program: &ShaderProgram) -> usize {
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
pub(super) struct PeakMemory {
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
    pub(super) fn overall(&mut self) -> Option<u64> {
        self.read();
        self.highest
    }
}

/// An engine prepared for a job, with what preparing it cost.
pub(super) struct Prepared {
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

pub(super) fn prepare_all(
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
            Hosted(&*engine).warm_up(uniforms);
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
        Hosted(&*engine).warm_up(uniforms);
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
pub(super) struct Runs {
    single: Duration,
    threaded: Option<Duration>,
    digests: Vec<u128>,
    peak: Option<u64>,
}

pub(super) fn measure(
    job: &Job,
    options: &Options,
    peak: &mut PeakMemory,
) -> Result<JobResult, CliError> {
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
pub(super) struct VertexRun {
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
    pub(super) fn new(
        program: &ShaderProgram,
        input: &RunInput,
        uniforms: Uniforms,
        count: u64,
    ) -> Self {
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
    pub(super) fn pass(
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

pub(super) fn hash_vec(hasher: &mut Xxh3Default, v: &Vec4) {
    for x in v {
        hasher.update(&x.to_bits().to_le_bytes());
    }
}

/// Counts what is emitted (the timed runs).
#[derive(Default)]
pub(super) struct Count(u64);

impl EmitSink for Count {
    fn vertex(&mut self, _: EmitConfig, _: &[Vec4; 16]) {
        self.0 += 1;
    }
    fn primitive(&mut self, _: bool, _: &[[Vec4; 16]; 3]) {}
}

/// Hashes what is emitted, for the output registers (the agreement pass).
pub(super) struct Hashing<'a> {
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
pub(super) struct GeometryDraw<'a> {
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
