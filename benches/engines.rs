//! Criterion benchmarks of every engine ([`EngineKind::ALL`]) on corpus programs, through the
//! batch interface: `run_batch` on one batch of [`BATCH`] vertices per engine and precision mode
//! (`batch/PROGRAM/PRECISION/ENGINE`), `run_batch_threads` on [`THREADS`] threads over
//! [`THREADED_VERTICES`] vertices (`threads/PROGRAM/ENGINE`), geometry-shader invocations of one
//! draw per engine (`geometry/…`), and a program-cache hit against a miss that prepares
//! (`cache/…`). Preparing itself is `benches/compile_cost.rs`'s.
//!
//! ```sh
//! cargo bench --bench engines                                   # everything
//! cargo bench --bench engines -- batch/skinning                 # one group or program
//! cargo bench --bench engines -- --warm-up-time 1 --measurement-time 2   # a quicker pass
//! ```

use std::hint::black_box;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::document::input::{RunInput, parse_input};
use picajit::engine::cache::ProgramCache;
use picajit::engine::parallel::run_batch_threads;
use picajit::engine::{EngineKind, prepare};
use picajit::exec::{
    BatchIo, BatchLayout, ExecConfig, ExecError, GeometryResult, GeometryState, ShaderEngine,
    SoaBuffer,
};
use picajit::float24::Precision;
use picajit::program::{InputRegisters, ShaderProgram, Uniforms};

/// Vertex-shader programs of the corpus: small, medium with relative addressing, many lights
/// (long straight-line code), large.
const VERTEX_PROGRAMS: [&str; 4] = [
    "simple-transform",
    "skinning",
    "multi-light",
    "terrain-noise-512",
];

/// A geometry shader (DVLE 1 of its folder): a face normal, a branch, procedure calls and up to
/// a dozen EMITs per invocation.
const GEOMETRY_PROGRAM: &str = "shadow-volume-gs";

/// Vertices of one measured `run_batch` call.
const BATCH: usize = 4096;

/// Threads of the threaded runs.
const THREADS: usize = 2;

/// Vertices of one measured `run_batch_threads` call.
const THREADED_VERTICES: usize = 100_000;

/// One DVLE of a corpus program with its fixture.
struct Fixture {
    program: ShaderProgram,
    uniforms: Uniforms,
    input: RunInput,
}
fn corpus_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus/programs")
        .join(name)
}

fn sources(dir: &Path) -> Vec<SourceFile> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the corpus folder exists")
        .map(|entry| entry.expect("readable folder").path())
        .filter(|path| path.extension().is_some_and(|e| e == "pica"))
        .collect();
    paths.sort(); // one DVLE per file, in name order
    paths
        .into_iter()
        .map(|path| SourceFile {
            name: path.display().to_string(),
            text: std::fs::read_to_string(&path).expect("readable source"),
        })
        .collect()
}

/// Assembles corpus program `name` and loads DVLE `dvle` with its fixture, values converted
/// under `precision`.
fn fixture(name: &str, dvle: usize, precision: Precision) -> Fixture {
    let dir = corpus_dir(name);
    let shbin = assemble(&sources(&dir), AsmOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .shbin;
    let program = ShaderProgram::from_shbin(&shbin, dvle).expect("the DVLE exists");
    let text = std::fs::read_to_string(dir.join(format!("dvle{dvle}.input.json")))
        .expect("the fixture exists");
    let descriptor = &shbin.dvles[dvle];
    let input = parse_input(&text, precision, descriptor.kind).expect("a valid fixture");
    let mut uniforms = Uniforms::from_constants(descriptor);
    input.apply_uniforms(&mut uniforms);
    Fixture {
        program,
        uniforms,
        input,
    }
}

fn config(precision: Precision) -> ExecConfig {
    ExecConfig {
        precision,
        ..ExecConfig::default()
    }
}

/// The fixture's vertices repeated to `count`, as input planes, and output planes to match.
fn buffers(fixture: &Fixture, count: usize) -> (SoaBuffer, SoaBuffer) {
    let layout = BatchLayout::of(&fixture.program);
    let vertices: Vec<InputRegisters> = fixture
        .input
        .invocations
        .iter()
        .map(|invocation| invocation.registers)
        .cycle()
        .take(count)
        .collect();
    (
        SoaBuffer::from_vertices(layout.inputs, &vertices),
        SoaBuffer::zeroed(layout.outputs, count),
    )
}

fn batch_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("batch");
    group.throughput(Throughput::Elements(BATCH as u64));
    for name in VERTEX_PROGRAMS {
        for precision in [Precision::F24Truncate, Precision::F32] {
            let fixture = fixture(name, 0, precision);
            let (inputs, mut outputs) = buffers(&fixture, BATCH);
            let mut errors: Vec<(usize, ExecError)> = Vec::new();
            for kind in EngineKind::ALL {
                let engine =
                    prepare(kind, fixture.program.clone(), config(precision)).expect("prepares");
                let id = BenchmarkId::new(format!("{name}/{}", precision.name()), kind.name());
                group.bench_function(id, |b| {
                    b.iter(|| {
                        errors.clear();
                        let mut io =
                            BatchIo::new(black_box(inputs.inputs()), outputs.outputs(), None)
                                .expect("the buffers match");
                        engine.run_batch(&fixture.uniforms, &mut io, &mut errors);
                        black_box(&errors);
                    })
                });
            }
        }
    }
    group.finish();
}

fn threaded_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("threads");
    group.throughput(Throughput::Elements(THREADED_VERTICES as u64));
    group.sample_size(20);
    for name in VERTEX_PROGRAMS {
        let fixture = fixture(name, 0, Precision::F24Truncate);
        let (inputs, mut outputs) = buffers(&fixture, THREADED_VERTICES);
        let mut errors: Vec<(usize, ExecError)> = Vec::new();
        for kind in EngineKind::ALL {
            let engine =
                prepare(kind, fixture.program.clone(), ExecConfig::default()).expect("prepares");
            let id = BenchmarkId::new(format!("{name}/{THREADS}"), kind.name());
            group.bench_function(id, |b| {
                b.iter(|| {
                    errors.clear();
                    let io = BatchIo::new(black_box(inputs.inputs()), outputs.outputs(), None)
                        .expect("the buffers match");
                    run_batch_threads(engine.as_ref(), THREADS, &fixture.uniforms, io, &mut errors);
                    black_box(&errors);
                })
            });
        }
    }
    group.finish();
}

/// Runs every invocation of the fixture in order on a fresh persistent state (one draw).
fn run_draw(engine: &dyn ShaderEngine, fixture: &Fixture) -> GeometryState {
    let mut uniforms = fixture.uniforms.clone();
    let mut state = GeometryState::default();
    for invocation in &fixture.input.invocations {
        for &(n, value) in &invocation.uniform_writes {
            uniforms.float[n] = value;
        }
        let mut emitted = GeometryResult::default();
        let result = engine.run_geometry(
            &mut state,
            &uniforms,
            black_box(&invocation.registers),
            &mut emitted,
        );
        black_box((result.ok(), emitted));
    }
    state
}

fn geometry_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("geometry");
    let fixture = fixture(GEOMETRY_PROGRAM, 1, Precision::F24Truncate);
    group.throughput(Throughput::Elements(fixture.input.invocations.len() as u64));
    for kind in EngineKind::ALL {
        let engine =
            prepare(kind, fixture.program.clone(), ExecConfig::default()).expect("prepares");
        group.bench_function(BenchmarkId::new(GEOMETRY_PROGRAM, kind.name()), |b| {
            b.iter(|| run_draw(engine.as_ref(), &fixture))
        });
    }
    group.finish();
}

fn cache_hit_against_compile(c: &mut Criterion) {
    let mut group = c.benchmark_group("cache");
    let program = fixture("skinning", 0, Precision::F24Truncate).program;
    let config = ExecConfig::default();
    for kind in EngineKind::ALL {
        let cache = ProgramCache::default();
        cache
            .get_or_prepare(kind, &program, config)
            .expect("prepares");
        // A hit: hashing the 16 KiB of program memory, one map lookup, the equality check.
        group.sample_size(100);
        group.bench_function(BenchmarkId::new("hit", kind.name()), |b| {
            b.iter(|| {
                cache
                    .get_or_prepare(kind, black_box(&program), config)
                    .expect("cached")
            })
        });
        // A miss: the same request to an empty cache, which prepares (compiles).
        group.sample_size(10);
        group.bench_function(BenchmarkId::new("miss", kind.name()), |b| {
            b.iter_batched(
                || ProgramCache::new(NonZeroUsize::MIN),
                |empty| {
                    empty
                        .get_or_prepare(kind, black_box(&program), config)
                        .expect("prepares");
                    empty
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1));
    targets = batch_throughput, threaded_throughput, geometry_throughput, cache_hit_against_compile
}
criterion_main!(benches);
