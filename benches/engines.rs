//! Criterion benchmarks of both engines on corpus programs: JIT compile time, vertex throughput
//! per engine and precision mode, geometry-shader invocation throughput, and a program-cache
//! hit against a fresh compile.
//!
//! ```sh
//! cargo bench                                     # everything
//! cargo bench -- vertices/skinning                # one group or program (a filter)
//! cargo bench -- --warm-up-time 1 --measurement-time 2   # a quicker pass
//! ```

use std::hint::black_box;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::document::input::{RunInput, parse_input};
use picajit::engine::cache::ProgramCache;
use picajit::engine::{EngineKind, prepare};
use picajit::exec::{ExecConfig, GeometryResult, GeometryState, ShaderEngine};
use picajit::float24::Precision;
use picajit::jit::JitShader;
use picajit::program::{InputRegisters, ShaderProgram, Uniforms};

/// Vertex-shader programs of the corpus: small, medium with relative addressing, branchy, large.
const VERTEX_PROGRAMS: [&str; 4] = [
    "simple-transform",
    "skinning",
    "control-flow",
    "terrain-noise-512",
];

/// A geometry shader (DVLE 1 of its folder): a face normal, a branch, procedure calls and up to
/// a dozen EMITs per invocation.
const GEOMETRY_PROGRAM: &str = "shadow-volume-gs";

/// Vertices per measured batch.
const BATCH: usize = 1024;

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

fn compile_time(c: &mut Criterion) {
    let mut group = c.benchmark_group("compile");
    group.sample_size(10);
    for name in VERTEX_PROGRAMS.into_iter().chain([GEOMETRY_PROGRAM]) {
        let dvle = usize::from(name == GEOMETRY_PROGRAM);
        let program = fixture(name, dvle, Precision::F24Truncate).program;
        group.bench_function(name, |b| {
            b.iter_batched(
                || program.clone(),
                |program| JitShader::compile(program, ExecConfig::default()).expect("compiles"),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

fn vertex_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("vertices");
    group.throughput(Throughput::Elements(BATCH as u64));
    for name in VERTEX_PROGRAMS {
        for precision in [Precision::F24Truncate, Precision::F32] {
            let fixture = fixture(name, 0, precision);
            let batch: Vec<InputRegisters> = fixture
                .input
                .invocations
                .iter()
                .map(|invocation| invocation.registers)
                .cycle()
                .take(BATCH)
                .collect();
            for kind in [EngineKind::Interpreter, EngineKind::Jit] {
                let engine =
                    prepare(kind, fixture.program.clone(), config(precision)).expect("prepares");
                let id = BenchmarkId::new(format!("{name}/{}", precision.name()), kind.name());
                let mut results = Vec::with_capacity(BATCH);
                group.bench_function(id, |b| {
                    b.iter(|| {
                        results.clear();
                        engine.run_vertices(&fixture.uniforms, black_box(&batch), &mut results);
                        black_box(&results);
                    })
                });
            }
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
    for kind in [EngineKind::Interpreter, EngineKind::Jit] {
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
    let cache = ProgramCache::default();
    cache
        .get_or_prepare(EngineKind::Jit, &program, config)
        .expect("compiles");
    // A hit: hashing the 16 KiB of program memory, one map lookup, the equality check.
    group.bench_function("hit", |b| {
        b.iter(|| {
            cache
                .get_or_prepare(EngineKind::Jit, black_box(&program), config)
                .expect("cached")
        })
    });
    // A miss: the same request to an empty cache, which compiles.
    group.sample_size(10);
    group.bench_function("miss", |b| {
        b.iter_batched(
            || ProgramCache::new(NonZeroUsize::MIN),
            |empty| {
                empty
                    .get_or_prepare(EngineKind::Jit, black_box(&program), config)
                    .expect("compiles");
                empty
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1));
    targets = compile_time, vertex_throughput, geometry_throughput, cache_hit_against_compile
}
criterion_main!(benches);
