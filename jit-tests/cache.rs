//! The program cache (`picajit::jit::cache`): identical uploads hit and never recompile, every
//! input of code generation changes the key, eviction is least-recently-used and frees code that
//! no caller holds, an evicted program a caller still holds keeps running, and concurrent
//! requests compile each distinct program once and agree with the interpreter bit for bit.

mod common;

use std::num::NonZeroUsize;
use std::sync::{Arc, Barrier};

use common::*;
use picajit::engine::cache::{CacheStats, ProgramCache};
use picajit::engine::{EngineKind, prepare_cached};
use picajit::exec::ExecConfig;
use picajit::float24::Precision;
use picajit::interp::Interpreter;
use picajit::program::{ShaderKind, ShaderProgram};

fn cache_of(capacity: usize) -> ProgramCache {
    ProgramCache::new(NonZeroUsize::new(capacity).unwrap())
}

/// A small vertex shader; `variant` changes one constant register it reads, so programs with
/// different variants compute different outputs.
fn program(variant: u8) -> ShaderProgram {
    let mut b = Builder::new();
    b.ops(&format!(
        "mul r0, c{variant}, v0
         add o0, r0, v1
         dp4 o1.x, c{variant}, v1
         mov o1.yzw, v0
         end"
    ));
    b.program(ShaderKind::Vertex)
}

fn test_uniforms() -> picajit::program::Uniforms {
    uniforms(&[
        (0, [1.5, -2.0, 0.25, 1.0]),
        (1, [3.0, 0.5, -1.0, 2.0]),
        (2, [f24(0x000001), 1e30, -0.0, 7.0]),
        (3, [0.1, 0.2, 0.3, 0.4]),
    ])
}

fn test_inputs(n: usize) -> picajit::program::InputRegisters {
    let x = n as f32;
    inputs(&[(0, [x, 1.0 - x, 0.5 * x, 1.0]), (1, [2.0, x, -x, 0.125])])
}

#[test]
fn an_identical_upload_hits_and_shares_the_compiled_code() {
    let cache = cache_of(4);
    let config = ExecConfig::default();
    let first = cache
        .get_or_prepare(EngineKind::Jit, &program(0), config)
        .unwrap();
    // A fresh upload of the same words: equal, not the same allocation.
    let second = cache
        .get_or_prepare(EngineKind::Jit, &program(0), config)
        .unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    assert_eq!(
        cache.stats(),
        CacheStats {
            hits: 1,
            misses: 1,
            compiles: 1,
            programs: 1,
            capacity: 4,
            ..CacheStats::default()
        }
    );
}

#[test]
fn every_input_of_code_generation_is_part_of_the_key() {
    let cache = cache_of(16);
    let base = program(0);
    let config = ExecConfig::default();
    let mut one_code_word = base.clone();
    one_code_word.code[1] ^= 1 << 12; // another source register
    let mut one_descriptor = base.clone();
    one_descriptor.opdescs[0] ^= 1 << 4; // another swizzle
    let mut entry = base.clone();
    entry.entry = 1;
    let mut stage = base.clone();
    stage.stage = ShaderKind::Geometry;
    let variants = [
        (one_code_word, config),
        (one_descriptor, config),
        (entry, config),
        (stage, config),
        (
            base.clone(),
            ExecConfig {
                precision: Precision::F32,
                ..config
            },
        ),
        (
            base.clone(),
            ExecConfig {
                instruction_budget: 1000,
                ..config
            },
        ),
    ];
    let original = cache
        .get_or_prepare(EngineKind::Jit, &base, config)
        .unwrap();
    for (n, (program, config)) in variants.iter().enumerate() {
        let shader = cache
            .get_or_prepare(EngineKind::Jit, program, *config)
            .unwrap();
        assert!(!Arc::ptr_eq(&original, &shader), "variant {n} hit");
        assert_eq!(shader.program(), program);
        assert_eq!(shader.config(), *config);
        let stats = cache.stats();
        assert_eq!((stats.misses, stats.compiles), (n as u64 + 2, n as u64 + 2));
        assert_eq!(stats.hits, 0);
    }
    // Each variant is now cached under its own key.
    for (program, config) in &variants {
        cache
            .get_or_prepare(EngineKind::Jit, program, *config)
            .unwrap();
    }
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.compiles, stats.programs), (6, 7, 7));
    assert_eq!(stats.collisions, 0);
}

#[test]
fn eviction_at_capacity_is_least_recently_used() {
    let cache = cache_of(2);
    let config = ExecConfig::default();
    let [a, b, c, d] = [0, 1, 2, 3].map(program);
    cache.get_or_prepare(EngineKind::Jit, &a, config).unwrap();
    cache.get_or_prepare(EngineKind::Jit, &b, config).unwrap();
    cache.get_or_prepare(EngineKind::Jit, &a, config).unwrap(); // a is now more recent than b
    cache.get_or_prepare(EngineKind::Jit, &c, config).unwrap(); // evicts b
    assert!(cache.contains(EngineKind::Jit, &a, config));
    assert!(!cache.contains(EngineKind::Jit, &b, config));
    assert!(cache.contains(EngineKind::Jit, &c, config));
    cache.get_or_prepare(EngineKind::Jit, &d, config).unwrap(); // evicts a
    assert!(!cache.contains(EngineKind::Jit, &a, config));
    assert!(cache.contains(EngineKind::Jit, &c, config));
    assert!(cache.contains(EngineKind::Jit, &d, config));
    cache.get_or_prepare(EngineKind::Jit, &b, config).unwrap(); // a miss again; evicts c
    assert!(!cache.contains(EngineKind::Jit, &c, config));
    let stats = cache.stats();
    assert_eq!(
        stats,
        CacheStats {
            hits: 1,
            misses: 5,
            compiles: 5,
            evictions: 3,
            programs: 2,
            capacity: 2,
            ..CacheStats::default()
        }
    );
    assert_eq!(cache.len(), 2);
}

#[test]
fn an_evicted_program_still_held_keeps_running_and_is_freed_on_release() {
    let cache = cache_of(1);
    let config = ExecConfig::default();
    let held = cache
        .get_or_prepare(EngineKind::Jit, &program(0), config)
        .unwrap();
    let watch = Arc::downgrade(&held);
    cache
        .get_or_prepare(EngineKind::Jit, &program(1), config)
        .unwrap(); // evicts program 0
    assert_eq!(cache.stats().evictions, 1);
    assert!(!cache.contains(EngineKind::Jit, &program(0), config));

    let interp = Interpreter::new(program(0), config);
    let u = test_uniforms();
    for n in 0..8 {
        let v = test_inputs(n);
        assert_same_vertex(&interp.run_vertex(&u, &v), &held.run_vertex(&u, &v));
    }
    assert!(watch.upgrade().is_some(), "the caller still holds it");
    drop(held);
    // The last reference is gone: JitShader's Drop ran, which frees its JITModule's code.
    assert!(watch.upgrade().is_none());
}

#[test]
fn eviction_frees_a_program_nobody_holds() {
    let cache = cache_of(1);
    let config = ExecConfig::default();
    let watch = Arc::downgrade(
        &cache
            .get_or_prepare(EngineKind::Jit, &program(0), config)
            .unwrap(),
    );
    assert!(watch.upgrade().is_some(), "the cache holds it");
    cache
        .get_or_prepare(EngineKind::Jit, &program(1), config)
        .unwrap();
    assert!(watch.upgrade().is_none(), "evicted and freed");
    // clear() releases the rest.
    let watch = Arc::downgrade(
        &cache
            .get_or_prepare(EngineKind::Jit, &program(1), config)
            .unwrap(),
    );
    cache.clear();
    assert!(cache.is_empty());
    assert!(watch.upgrade().is_none());
}

#[test]
fn prepare_cached_keeps_each_engine_kind_apart() {
    let cache = cache_of(4);
    let config = ExecConfig::default();
    let interp = prepare_cached(&cache, EngineKind::Interpreter, &program(0), config).unwrap();
    assert_eq!(interp.name(), "interp");
    let again = prepare_cached(&cache, EngineKind::Interpreter, &program(0), config).unwrap();
    assert!(
        Arc::ptr_eq(&interp, &again),
        "the interpreter is cached too"
    );
    // The same program for another engine is another entry, never the interpreter's.
    let first = prepare_cached(&cache, EngineKind::Jit, &program(0), config).unwrap();
    let second = prepare_cached(&cache, EngineKind::Jit, &program(0), config).unwrap();
    assert_eq!(first.name(), "jit");
    assert!(Arc::ptr_eq(&first, &second));
    assert!(cache.contains(EngineKind::Interpreter, &program(0), config));
    assert!(cache.contains(EngineKind::Jit, &program(0), config));
    let (u, v) = (test_uniforms(), test_inputs(3));
    assert_same_vertex(&interp.run_vertex(&u, &v), &second.run_vertex(&u, &v));
    let stats = cache.stats();
    assert_eq!(
        (stats.hits, stats.misses, stats.compiles, stats.programs),
        (2, 2, 2, 2)
    );
}

#[test]
fn concurrent_requests_compile_each_program_once_and_agree_with_the_interpreter() {
    const THREADS: usize = 6;
    const ROUNDS: usize = 4;
    let cache = Arc::new(cache_of(16));
    // Four distinct programs, the last two the same code in two precision modes.
    let requests: Vec<(ShaderProgram, ExecConfig)> = vec![
        (program(0), ExecConfig::default()),
        (program(1), ExecConfig::default()),
        (program(2), ExecConfig::default()),
        (
            program(2),
            ExecConfig {
                precision: Precision::F24Nearest,
                ..ExecConfig::default()
            },
        ),
    ];
    let u = test_uniforms();
    let start = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (cache, requests, u, start) = (&cache, &requests, &u, &start);
            scope.spawn(move || {
                start.wait();
                for round in 0..ROUNDS {
                    // Every thread asks for every program, starting at a different one.
                    for i in 0..requests.len() {
                        let (program, config) = &requests[(thread + round + i) % requests.len()];
                        let shader = cache
                            .get_or_prepare(EngineKind::Jit, program, *config)
                            .unwrap();
                        let interp = Interpreter::new(program.clone(), *config);
                        let v = test_inputs(thread * 31 + round * 7 + i);
                        assert_same_vertex(&interp.run_vertex(u, &v), &shader.run_vertex(u, &v));
                    }
                }
            });
        }
    });
    let stats = cache.stats();
    let total = (THREADS * ROUNDS * requests.len()) as u64;
    assert_eq!(stats.compiles, requests.len() as u64, "{stats:?}");
    assert_eq!(stats.hits + stats.misses, total, "{stats:?}");
    assert_eq!(stats.programs, requests.len());
    assert_eq!(
        (stats.evictions, stats.compile_errors, stats.collisions),
        (0, 0, 0)
    );
}

#[test]
fn a_small_cache_under_concurrent_load_stays_bounded_and_correct() {
    const THREADS: usize = 4;
    let cache = cache_of(2);
    let programs: Vec<ShaderProgram> = (0..5).map(program).collect();
    let u = test_uniforms();
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (cache, programs, u) = (&cache, &programs, &u);
            scope.spawn(move || {
                for i in 0..10 {
                    let program = &programs[(thread * 3 + i) % programs.len()];
                    let shader = cache
                        .get_or_prepare(EngineKind::Jit, program, ExecConfig::default())
                        .unwrap();
                    let interp = Interpreter::new(program.clone(), ExecConfig::default());
                    let v = test_inputs(i);
                    assert_same_vertex(&interp.run_vertex(u, &v), &shader.run_vertex(u, &v));
                    assert!(cache.len() <= 2);
                }
            });
        }
    });
    let stats = cache.stats();
    assert_eq!(stats.hits + stats.misses, (THREADS * 10) as u64);
    assert_eq!(stats.programs, 2);
    // Every compile beyond the first two made room for itself.
    assert_eq!(stats.evictions, stats.compiles - 2, "{stats:?}");
}
