//! The tier machinery of `engine`: kernels specialised per bool/int uniforms (bounded, compiled
//! blocking or in the background) and engines compiled in the background, checked with test
//! doubles whose behaviour is known: whatever path runs a batch, the results are the reference's.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use picajit::engine::background::Background;
use picajit::engine::specialized::{
    CompileMode, MAX_VARIANTS, Specializing, VariantKey, VariantState,
};
use picajit::engine::{EngineKind, prepare};
use picajit::exec::{
    BatchIo, BatchLayout, ExecConfig, ExecError, GroupKernel, HostPaths, Hosted, ShaderEngine,
    SoaBuffer, VertexRunner,
};
use picajit::program::{FlowRegisters, InputRegisters, ShaderKind, ShaderProgram, Uniforms};

/// mov o0, v0; end
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

/// A kernel that runs `mov o0, v0` itself on even vertices and declines the odd ones.
struct HalfKernel;

impl GroupKernel for HalfKernel {
    fn name(&self) -> &'static str {
        "half"
    }
    fn run(&self, _: &Uniforms, io: &mut BatchIo<'_>, declined: &mut Vec<usize>) {
        for i in 0..io.count() {
            if i % 2 == 1 {
                declined.push(i);
                continue;
            }
            for c in 0..4 {
                let value = io.inputs.plane(c)[i];
                io.outputs.plane_mut(c)[i] = value;
            }
            if let Some(flow) = io.flow.as_deref_mut() {
                flow[i] = FlowRegisters::default();
            }
        }
    }
}

fn vertices(n: usize) -> Vec<InputRegisters> {
    (0..n)
        .map(|i| {
            let mut v = [[0.0, 0.0, 0.0, 1.0]; 16];
            v[0] = [i as f32, -(i as f32), 0.5, 2.0];
            v
        })
        .collect()
}

fn run(engine: &dyn ShaderEngine, uniforms: &Uniforms, inputs: &[InputRegisters]) -> Vec<u32> {
    let layout = BatchLayout::of(engine.program());
    let input = SoaBuffer::from_vertices(layout.inputs, inputs);
    let mut output = SoaBuffer::zeroed(layout.outputs, inputs.len());
    let mut errors: Vec<(usize, ExecError)> = Vec::new();
    let mut io = BatchIo::new(input.inputs(), output.outputs(), None).unwrap();
    engine.run_batch(uniforms, &mut io, &mut errors);
    assert!(errors.is_empty());
    (0..4)
        .flat_map(|k| output.plane(k).to_vec())
        .map(f32::to_bits)
        .collect()
}

fn expected(inputs: &[InputRegisters]) -> Vec<u32> {
    (0..4)
        .flat_map(|c| inputs.iter().map(move |v| v[0][c].to_bits()))
        .collect()
}

fn specializing(mode: CompileMode, compiles: Arc<AtomicUsize>, refuse_bool: u16) -> Specializing {
    let config = ExecConfig::default();
    let exact: Arc<dyn ShaderEngine> =
        Arc::from(prepare(EngineKind::Interpreter, program(), config).unwrap());
    Specializing::new(
        "test",
        program(),
        config,
        Box::new(move |_, _, key: VariantKey| {
            compiles.fetch_add(1, Ordering::SeqCst);
            if key.bools == refuse_bool {
                Err("refused on purpose".to_string())
            } else {
                Ok(Box::new(HalfKernel) as Box<dyn GroupKernel>)
            }
        }),
        mode,
        exact.clone(),
        exact,
    )
}

#[test]
fn a_kernel_runs_what_it_can_and_the_exact_engine_the_rest() {
    let compiles = Arc::new(AtomicUsize::new(0));
    let engine = specializing(CompileMode::Blocking, compiles.clone(), 0xFFFF);
    let inputs = vertices(37);
    let uniforms = Uniforms::default();
    assert_eq!(engine.variant_state(&uniforms), VariantState::Missing);
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert_eq!(engine.variant_state(&uniforms), VariantState::Ready);
    // The same uniforms again: no second compile.
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert_eq!(compiles.load(Ordering::SeqCst), 1);
}

#[test]
fn variants_are_bounded_and_refusals_fall_back() {
    let compiles = Arc::new(AtomicUsize::new(0));
    let engine = specializing(CompileMode::Blocking, compiles.clone(), 3);
    let inputs = vertices(9);
    for bools in 0..(3 * MAX_VARIANTS as u16) {
        let uniforms = Uniforms {
            bools,
            ..Uniforms::default()
        };
        assert_eq!(
            run(&engine, &uniforms, &inputs),
            expected(&inputs),
            "b = {bools:#x}"
        );
        assert!(engine.variant_count() <= MAX_VARIANTS);
    }
    assert_eq!(compiles.load(Ordering::SeqCst), 3 * MAX_VARIANTS);
    let refused = Uniforms {
        bools: 3,
        ..Uniforms::default()
    };
    assert_eq!(run(&engine, &refused, &inputs), expected(&inputs));
    assert!(
        matches!(engine.variant_state(&refused), VariantState::Refused(r) if r.contains("on purpose"))
    );
}

#[test]
fn a_background_compile_never_changes_results() {
    let compiles = Arc::new(AtomicUsize::new(0));
    let engine = specializing(
        CompileMode::Background { hot_after: 0 },
        compiles.clone(),
        0xFFFF,
    );
    let inputs = vertices(64);
    let uniforms = Uniforms::default();
    // The first batch starts the compile and runs on the meanwhile engine.
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert_eq!(engine.ensure_compiled(&uniforms), VariantState::Ready);
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert_eq!(compiles.load(Ordering::SeqCst), 1);
}

/// In the background mode with `hot_after`, a variant runs on the meanwhile engine and is not
/// compiled until it has run that many vertices; the batch that makes it hot starts the compile,
/// once; results never change.
#[test]
fn a_variant_is_compiled_only_once_it_is_hot() {
    let compiles = Arc::new(AtomicUsize::new(0));
    let engine = specializing(
        CompileMode::Background { hot_after: 100 },
        compiles.clone(),
        0xFFFF,
    );
    let inputs = vertices(40);
    let uniforms = Uniforms::default();
    for _ in 0..2 {
        // 40, then 80 vertices: not hot.
        assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
        assert_eq!(engine.variant_state(&uniforms), VariantState::Missing);
    }
    // Other uniforms warm up on their own.
    let other = Uniforms {
        bools: 1,
        ..Uniforms::default()
    };
    assert_eq!(run(&engine, &other, &inputs), expected(&inputs));
    assert_eq!(compiles.load(Ordering::SeqCst), 0);
    // 120 vertices: hot; the compile starts in the background.
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert_ne!(engine.variant_state(&uniforms), VariantState::Missing);
    assert_eq!(engine.ensure_compiled(&uniforms), VariantState::Ready);
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert_eq!(compiles.load(Ordering::SeqCst), 1);
    // Asking for a variant not yet hot compiles it at once.
    assert_eq!(engine.variant_state(&other), VariantState::Missing);
    assert_eq!(engine.ensure_compiled(&other), VariantState::Ready);
    assert_eq!(compiles.load(Ordering::SeqCst), 2);
}

/// A background engine started `when_hot` does not compile until that many invocations have
/// run on the meanwhile engine (a batch counts its vertices); `wait` starts it at once.
#[test]
fn a_background_engine_compiles_once_hot() {
    let config = ExecConfig::default();
    let meanwhile: Arc<dyn ShaderEngine> =
        Arc::from(prepare(EngineKind::Interpreter, program(), config).unwrap());
    let compiles = Arc::new(AtomicUsize::new(0));
    let counted = compiles.clone();
    let engine = Background::when_hot("bg", meanwhile.clone(), 30, move || {
        counted.fetch_add(1, Ordering::SeqCst);
        prepare(EngineKind::Jit, program(), config)
    });
    let inputs = vertices(20);
    let uniforms = Uniforms::default();
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert!(!engine.is_started(), "20 of 30");
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert!(engine.is_started(), "40 of 30");
    engine.wait();
    assert!(engine.is_ready());
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert_eq!(compiles.load(Ordering::SeqCst), 1);
    // Never hot: wait starts the compile itself.
    let cold = Background::when_hot("bg", meanwhile, u64::MAX, move || {
        prepare(EngineKind::Jit, program(), config)
    });
    assert_eq!(run(&cold, &uniforms, &inputs), expected(&inputs));
    assert!(!cold.is_started());
    cold.wait();
    assert!(cold.is_ready());
}

#[test]
fn a_background_engine_switches_when_ready() {
    let config = ExecConfig::default();
    let meanwhile: Arc<dyn ShaderEngine> =
        Arc::from(prepare(EngineKind::Interpreter, program(), config).unwrap());
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let engine = Background::start("bg", meanwhile, move || {
        // Hold the compile until the test has run on the meanwhile engine.
        wait.recv().ok();
        prepare(EngineKind::Jit, program(), config)
    });
    let inputs = vertices(20);
    let uniforms = Uniforms::default();
    assert!(!engine.is_ready());
    assert!(matches!(engine.vertex_runner(), VertexRunner::Unsettled));
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    release.send(()).unwrap();
    engine.wait();
    assert!(engine.is_ready());
    assert_eq!(engine.failure(), None);
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert_eq!(
        runner_name(&engine),
        Some("jit"),
        "the compiled engine, for good"
    );
}

/// The name of the engine `engine`'s single vertices go to for good (`None`: unsettled).
fn runner_name(engine: &dyn ShaderEngine) -> Option<&'static str> {
    match Hosted(engine).vertex_runner() {
        VertexRunner::Itself => Some(engine.name()),
        VertexRunner::Inner(inner) => {
            assert_eq!(inner.program(), engine.program());
            assert_eq!(inner.config(), engine.config());
            Some(inner.name())
        }
        VertexRunner::Unsettled => None,
    }
}

#[test]
fn every_engine_says_which_engine_runs_its_single_vertices() {
    let config = ExecConfig::default();
    for (kind, runner) in [
        (EngineKind::Interpreter, "interp"),
        (EngineKind::Jit, "jit"),
        (EngineKind::SoaJit, "jit"),
        (EngineKind::VectorInterpreter, "interp"),
        (EngineKind::Auto, "jit"),
    ] {
        let engine = prepare(kind, program(), config).unwrap();
        Hosted(&*engine).warm_up(&Uniforms::default());
        assert_eq!(runner_name(&*engine), Some(runner), "{}", kind.name());
    }
}

#[test]
fn a_failed_background_compile_keeps_the_meanwhile_engine() {
    let config = ExecConfig::default();
    let meanwhile: Arc<dyn ShaderEngine> =
        Arc::from(prepare(EngineKind::Interpreter, program(), config).unwrap());
    let engine = Background::start("bg", meanwhile, || {
        Err(picajit::engine::EngineError::Panicked {
            engine: EngineKind::Jit,
        })
    });
    engine.wait();
    assert!(!engine.is_ready());
    assert!(engine.failure().unwrap().contains("jit"));
    let inputs = vertices(5);
    assert_eq!(
        run(&engine, &Uniforms::default(), &inputs),
        expected(&inputs)
    );
}

/// A kernel that declines everything and counts its runs.
struct DeclineAll(Arc<AtomicUsize>);

impl GroupKernel for DeclineAll {
    fn name(&self) -> &'static str {
        "decline-all"
    }
    fn run(&self, _: &Uniforms, io: &mut BatchIo<'_>, declined: &mut Vec<usize>) {
        self.0.fetch_add(1, Ordering::SeqCst);
        declined.extend(0..io.count());
    }
}

#[test]
fn a_kernel_that_declines_most_vertices_steps_aside_and_is_retried() {
    use picajit::engine::tiered::{BYPASS_MIN_BATCH, KernelEngine, RETRY_AFTER};
    let runs = Arc::new(AtomicUsize::new(0));
    let exact: Arc<dyn ShaderEngine> =
        Arc::from(prepare(EngineKind::Interpreter, program(), ExecConfig::default()).unwrap());
    let engine = KernelEngine::new(Box::new(DeclineAll(runs.clone())), exact);
    let uniforms = Uniforms::default();
    // A small batch never decides anything.
    let small = vertices(BYPASS_MIN_BATCH - 1);
    assert_eq!(run(&engine, &uniforms, &small), expected(&small));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let inputs = vertices(BYPASS_MIN_BATCH);
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // Stepped aside: the next RETRY_AFTER - 1 batches skip the kernel, the one after tries it.
    for _ in 1..RETRY_AFTER {
        assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

/// Kernels are specialised on where the float uniforms a program multiplies by are zero or
/// one, but at most `MAX_CONSTANT_PATTERNS` such patterns per program: uniforms whose zeros
/// keep moving get kernels that know none, instead of a compile per draw.
#[test]
fn constant_lane_patterns_are_bounded() {
    use picajit::asm::{AsmOptions, SourceFile, assemble};
    use picajit::engine::specialized::MAX_CONSTANT_PATTERNS;
    use picajit::jit::ConstantLanes;
    let source = SourceFile {
        name: "dp4.v.pica".to_string(),
        text: ".fvec m\n.in p v0\n.out o position\n.proc main\n dp4 o.x, m, p\n mov o.yzw, p\n end\n.end\n"
            .to_string(),
    };
    let assembly = assemble(&[source], AsmOptions::default()).unwrap();
    let multiplying = ShaderProgram::from_shbin(&assembly.shbin, 0).unwrap();
    let candidates = ConstantLanes::candidates(&multiplying);
    assert_eq!(candidates.count(), 4, "c0.xyzw");
    let compiles = Arc::new(AtomicUsize::new(0));
    let engine = specializing(CompileMode::Blocking, compiles.clone(), 0xFFFF)
        .with_constant_lanes(candidates);
    let inputs = vertices(6);
    let mut specialised = Vec::new();
    for pattern in 1..16u32 {
        let mut uniforms = Uniforms::default();
        uniforms.float[0] =
            std::array::from_fn(|c| if pattern & (1 << c) != 0 { 0.0 } else { 0.5 });
        let key = engine.variant_key(&uniforms);
        if !key.constants.is_empty() {
            assert_eq!(key.constants.count(), pattern.count_ones() as usize);
            specialised.push(pattern);
        }
        assert_eq!(run(&engine, &uniforms, &inputs), expected(&inputs));
    }
    assert_eq!(
        specialised,
        (1..=MAX_CONSTANT_PATTERNS as u32).collect::<Vec<_>>()
    );
    // The admitted patterns, then one kernel that knows no constant for all the others.
    assert_eq!(compiles.load(Ordering::SeqCst), MAX_CONSTANT_PATTERNS + 1);
    // Values other than zero and one, and other uniforms, do not make a new pattern.
    let mut uniforms = Uniforms::default();
    uniforms.float[0] = [0.0, 7.0, 0.5, -3.0];
    uniforms.float[9] = [0.0, 1.0, 0.0, 1.0];
    assert_eq!(engine.variant_key(&uniforms).constants.count(), 1);
}

#[test]
fn each_batch_runs_on_the_kernel_of_its_own_uniforms() {
    use picajit::asm::{AsmOptions, SourceFile, assemble};
    use picajit::jit::ConstantLanes;
    // A kernel that writes what it was compiled for (its key's bools and known constants) into
    // o0.x and o0.y: which kernel ran each batch shows in its outputs.
    struct Tagged([f32; 2]);
    impl GroupKernel for Tagged {
        fn name(&self) -> &'static str {
            "tagged"
        }
        fn run(&self, _: &Uniforms, io: &mut BatchIo<'_>, _: &mut Vec<usize>) {
            for i in 0..io.count() {
                for c in 0..4 {
                    io.outputs.plane_mut(c)[i] = self.0.get(c).copied().unwrap_or(0.0);
                }
            }
        }
    }
    let source = SourceFile {
        name: "dp4.v.pica".to_string(),
        text: ".fvec m\n.in p v0\n.out o position\n.proc main\n dp4 o.x, m, p\n mov o.yzw, p\n end\n.end\n"
            .to_string(),
    };
    let assembly = assemble(&[source], AsmOptions::default()).unwrap();
    let candidates =
        ConstantLanes::candidates(&ShaderProgram::from_shbin(&assembly.shbin, 0).unwrap());
    let exact: Arc<dyn ShaderEngine> =
        Arc::from(prepare(EngineKind::Interpreter, program(), ExecConfig::default()).unwrap());
    let engine = Specializing::new(
        "test",
        program(),
        ExecConfig::default(),
        Box::new(|_, _, key: VariantKey| {
            let tag = [f32::from(key.bools), key.constants.count() as f32];
            Ok(Box::new(Tagged(tag)) as Box<dyn GroupKernel>)
        }),
        CompileMode::Blocking,
        exact.clone(),
        exact,
    )
    .with_constant_lanes(candidates);
    let with = |bools: u16, c0: [f32; 4]| {
        let mut uniforms = Uniforms {
            bools,
            ..Uniforms::default()
        };
        uniforms.float[0] = c0;
        uniforms
    };
    let plain = [0.5; 4];
    let one_zero = [0.0, 0.5, 0.5, 0.5];
    let inputs = vertices(8);
    // Each batch's uniforms differ from the last one's in one way at most: bools, a float that
    // makes a known zero, a float that does not, only the sign of a zero.
    for (uniforms, tag) in [
        (with(1, plain), [1.0, 0.0]),
        (with(2, plain), [2.0, 0.0]),
        (with(1, plain), [1.0, 0.0]),
        (with(1, one_zero), [1.0, 1.0]),
        (with(1, [-0.0, 0.5, 0.5, 0.5]), [1.0, 1.0]),
        (with(1, [0.0, 0.25, 0.5, 0.5]), [1.0, 1.0]),
        (with(1, plain), [1.0, 0.0]),
        (with(2, one_zero), [2.0, 1.0]),
    ] {
        let outputs = run(&engine, &uniforms, &inputs);
        let n = inputs.len();
        assert_eq!(
            [outputs[0], outputs[n]],
            tag.map(f32::to_bits),
            "b = {:#x}, c0 = {:?}",
            uniforms.bools,
            uniforms.float[0]
        );
    }
}
