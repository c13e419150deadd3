//! The vectorised interpreter (`picajit::vinterp`) against the reference interpreter, bit for
//! bit (docs/execution-model.md §8): every corpus vertex program in every precision, adversarial
//! values, divergent and uniform control flow, relative addressing with per-vertex indices, the
//! instruction budget, and a seeded sweep of generated programs. Vertices the kernel declines
//! are completed with the interpreter, as `crate::engine` does; every other vertex must match.
//!
//! `cargo test --release --test vinterp -- --ignored --nocapture` prints the throughput table.

use std::path::{Path, PathBuf};
use std::time::Instant;

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::difftest::runner::{DEFAULT_BUDGET, case_for};
use picajit::document::input::parse_input;
use picajit::exec::{BatchIo, BatchLayout, ExecConfig, GroupKernel, SoaInputs, SoaOutputs};
use picajit::float24::Precision;
use picajit::interp::Interpreter;
use picajit::jit::JitShader;
use picajit::program::{
    DEFAULT_INPUT, FlowRegisters, InputRegisters, ShaderKind, ShaderProgram, Uniforms,
};
use picajit::vinterp::VectorInterpreter;

mod common;

use common::XorShift;

fn config(precision: Precision) -> ExecConfig {
    ExecConfig {
        precision,
        ..ExecConfig::default()
    }
}

/// The poison the output buffer starts with, so that a vertex left unwritten shows.
const POISON: u32 = 0x7FBA_DBAD;

/// What a kernel run left: the output planes, the flow registers, the declined vertices.
struct KernelRun {
    outputs: Vec<f32>,
    flow: Vec<FlowRegisters>,
    declined: Vec<usize>,
    stride: usize,
}

/// Runs `vertices` through the kernel with a plane stride larger than the count, in two calls
/// (the batch split at `split`) when `split` is inside it.
fn run_kernel(
    kernel: &VectorInterpreter,
    layout: BatchLayout,
    uniforms: &Uniforms,
    vertices: &[InputRegisters],
    split: usize,
) -> KernelRun {
    let count = vertices.len();
    let stride = count + 5;
    let mut inputs = vec![0.0f32; layout.inputs.planes() * stride];
    for (slot, n) in layout.inputs.iter().enumerate() {
        for c in 0..4 {
            for (i, vertex) in vertices.iter().enumerate() {
                inputs[(4 * slot + c) * stride + i] = vertex[n][c];
            }
        }
    }
    let mut outputs = vec![f32::from_bits(POISON); layout.outputs.planes() * stride];
    let mut flow = vec![
        FlowRegisters {
            a0: [12345, -1],
            al: 777,
            cmp: [true, false],
        };
        count
    ];
    let mut declined = Vec::new();
    {
        let soa_in = SoaInputs::new(&inputs, layout.inputs, count, stride).unwrap();
        let soa_out = SoaOutputs::new(&mut outputs, layout.outputs, count, stride).unwrap();
        let io = BatchIo::new(soa_in, soa_out, Some(&mut flow)).unwrap();
        if split > 0 && split < count {
            let (mut first, mut second) = io.split_at(split);
            kernel.run(uniforms, &mut first, &mut declined);
            let mut later = Vec::new();
            kernel.run(uniforms, &mut second, &mut later);
            declined.extend(later.into_iter().map(|i| i + split));
        } else {
            let mut io = io;
            kernel.run(uniforms, &mut io, &mut declined);
        }
    }
    KernelRun {
        outputs,
        flow,
        declined,
        stride,
    }
}

/// Runs `vertices` on the kernel, completes the declined ones with the interpreter and checks
/// every vertex against the interpreter. Returns how many were declined.
fn check(
    what: &str,
    program: &ShaderProgram,
    config: ExecConfig,
    uniforms: &Uniforms,
    vertices: &[InputRegisters],
) -> usize {
    let layout = BatchLayout::of(program);
    let kernel = VectorInterpreter::new(program, config);
    let interp = Interpreter::new(program.clone(), config);
    let split = vertices.len() / 3;
    let run = run_kernel(&kernel, layout, uniforms, vertices, split);
    assert!(
        run.declined.windows(2).all(|w| w[0] < w[1]),
        "{what}: declined indices not increasing: {:?}",
        run.declined
    );
    for (i, vertex) in vertices.iter().enumerate() {
        let expected = interp.run_vertex(uniforms, vertex);
        if run.declined.binary_search(&i).is_ok() {
            continue; // the interpreter's result completes the batch
        }
        let expected = expected.unwrap_or_else(|e| {
            panic!("{what}: vertex {i} was not declined, but the interpreter fails: {e}")
        });
        for (slot, n) in layout.outputs.iter().enumerate() {
            for c in 0..4 {
                let got = run.outputs[(4 * slot + c) * run.stride + i].to_bits();
                let want = expected.outputs[n][c].to_bits();
                assert_eq!(
                    got,
                    want,
                    "{what} ({}): vertex {i} o{n}[{c}]: {got:#010x}, the interpreter {want:#010x}\ninputs {vertex:?}",
                    config.precision.name()
                );
            }
        }
        assert_eq!(
            run.flow[i],
            expected.flow,
            "{what} ({}): vertex {i} flow registers",
            config.precision.name()
        );
    }
    run.declined.len()
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/programs")
}

fn sources(dir: &Path) -> Vec<SourceFile> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pica"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| SourceFile {
            name: path.display().to_string(),
            text: std::fs::read_to_string(&path).unwrap(),
        })
        .collect()
}

/// A corpus vertex program with its fixture, values converted under `precision`.
struct Fixture {
    name: String,
    program: ShaderProgram,
    uniforms: Uniforms,
    vertices: Vec<InputRegisters>,
}

/// Every vertex DVLE of the corpus that has a fixture.
fn corpus(precision: Precision) -> Vec<Fixture> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut fixtures = Vec::new();
    for dir in dirs {
        let shbin = assemble(&sources(&dir), AsmOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .shbin;
        for (index, dvle) in shbin.dvles.iter().enumerate() {
            let path = dir.join(format!("dvle{index}.input.json"));
            if dvle.kind != ShaderKind::Vertex || !path.exists() {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let input = parse_input(&text, precision, dvle.kind).unwrap();
            let mut uniforms = Uniforms::from_constants(dvle);
            input.apply_uniforms(&mut uniforms);
            fixtures.push(Fixture {
                name: format!("{}/dvle{index}", dir.file_name().unwrap().to_str().unwrap()),
                program: ShaderProgram::from_shbin(&shbin, index).unwrap(),
                uniforms,
                vertices: input.invocations.iter().map(|i| i.registers).collect(),
            });
        }
    }
    fixtures
}

/// The fixture's vertices repeated to `count`.
fn cycled(vertices: &[InputRegisters], count: usize) -> Vec<InputRegisters> {
    vertices.iter().copied().cycle().take(count).collect()
}

/// Values that take the rare paths: NaNs (with payloads and signs), infinities, signed zeros,
/// float24 and f32 subnormals, the float24 range's ends, values beyond it.
const ADVERSARIAL: [u32; 14] = [
    0x7FC0_0000,
    0xFFC0_1234,
    0x7F80_0000,
    0xFF80_0000,
    0x0000_0000,
    0x8000_0000,
    0x2000_0000, // 2^-63: a float24 subnormal
    0x0000_0001, // an f32 subnormal
    0x1F80_0000, // 2^-64
    0x2080_0000, // 2^-62, the smallest normal float24
    0x5F7F_FF80, // the largest finite float24
    0xDF7F_FF80,
    0x7149_F2CA, // 1e30
    0x5F80_0000, // 2^64
];

/// `vertices` with adversarial values mixed into some components of some vertices.
fn with_adversarial(vertices: &[InputRegisters], seed: u64) -> Vec<InputRegisters> {
    let mut rng = XorShift(seed | 1);
    vertices
        .iter()
        .map(|&vertex| {
            let mut v = vertex;
            if rng.below(4) == 0 {
                for _ in 0..1 + rng.below(3) {
                    let (n, c) = (rng.below(16), rng.below(4));
                    v[n][c] = f32::from_bits(ADVERSARIAL[rng.below(ADVERSARIAL.len())]);
                }
            }
            v
        })
        .collect()
}

#[test]
fn every_corpus_vertex_program_in_every_precision() {
    let mut programs = 0;
    for precision in Precision::ALL {
        for fixture in corpus(precision) {
            let vertices = cycled(&fixture.vertices, 37);
            let declined = check(
                &fixture.name,
                &fixture.program,
                config(precision),
                &fixture.uniforms,
                &vertices,
            );
            // No fixture runs out of its budget: nothing is declined, divergent flow included.
            assert_eq!(
                declined,
                0,
                "{} ({}) declined vertices",
                fixture.name,
                precision.name()
            );
            programs += 1;
        }
    }
    assert!(programs >= 60, "{programs} corpus runs");
}

/// Programs whose control flow does not depend on the vertex.
const UNIFORM_FLOW: [&str; 5] = [
    "simple-transform/dvle0",
    "skinning/dvle0",
    "multi-light/dvle0",
    "terrain-noise-512/dvle0",
    "texgen/dvle0",
];

#[test]
fn corpus_programs_with_adversarial_inputs_and_uniforms() {
    for precision in Precision::ALL {
        for (k, fixture) in corpus(precision).into_iter().enumerate() {
            let vertices = with_adversarial(&cycled(&fixture.vertices, 45), 77 + k as u64);
            let declined = check(
                &format!("{} with adversarial inputs", fixture.name),
                &fixture.program,
                config(precision),
                &fixture.uniforms,
                &vertices,
            );
            // Unusual values are run again with the exact rules, not declined (where they cannot
            // make a loop run out of its budget).
            if UNIFORM_FLOW.contains(&fixture.name.as_str()) {
                assert_eq!(declined, 0, "{} declined unusual values", fixture.name);
            }
            let mut uniforms = fixture.uniforms.clone();
            let mut rng = XorShift(991 + k as u64);
            for _ in 0..6 {
                let (n, c) = (rng.below(96), rng.below(4));
                uniforms.float[n][c] = f32::from_bits(ADVERSARIAL[rng.below(ADVERSARIAL.len())]);
            }
            check(
                &format!("{} with adversarial uniforms", fixture.name),
                &fixture.program,
                config(precision),
                &uniforms,
                &cycled(&fixture.vertices, 19),
            );
        }
    }
}

/// Assembles one vertex program.
fn program_of(source: &str) -> (ShaderProgram, Uniforms) {
    let shbin = assemble(
        &[SourceFile {
            name: "test.v.pica".into(),
            text: source.into(),
        }],
        AsmOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
    .shbin;
    let uniforms = Uniforms::from_constants(&shbin.dvles[0]);
    (ShaderProgram::from_shbin(&shbin, 0).unwrap(), uniforms)
}

/// Vertices whose v0 is `(x(i), y(i), 0.5, 1)`.
fn vertices_with(
    count: usize,
    x: impl Fn(usize) -> f32,
    y: impl Fn(usize) -> f32,
) -> Vec<InputRegisters> {
    (0..count)
        .map(|i| {
            let mut v = [DEFAULT_INPUT; 16];
            v[0] = [x(i), y(i), 0.5, 1.0];
            v[1] = [i as f32 * 0.25, -(i as f32), 3.0, 0.125];
            v
        })
        .collect()
}

const HEADER: &str = "
.constf k(0.0, 1.0, 2.0, 0.5)
.constf k2(3.0, -1.5, 0.25, 8.0)
.fvec table[8]
.in p v0
.in q v1
.out o0 position
.out o1 color
";

/// Runs `body` (a `main` procedure) on vertices with uniform and with divergent v0.x, in every
/// precision, and checks them against the interpreter; neither batch is declined anywhere
/// (divergent groups run their paths under lane masks).
fn uniform_and_divergent(name: &str, body: &str, ints: [u8; 4]) {
    let source = format!("{HEADER}\n.proc main\n{body}\n\tend\n.end\n");
    let (program, mut uniforms) = program_of(&source);
    uniforms.int[0] = ints;
    for (n, value) in uniforms.float.iter_mut().enumerate().take(8) {
        *value = [n as f32, n as f32 * 0.5, -(n as f32), 1.0 + n as f32];
    }
    for precision in Precision::ALL {
        let uniform = vertices_with(29, |_| 0.75, |i| i as f32 * 0.1);
        let declined = check(
            &format!("{name}, uniform flow"),
            &program,
            config(precision),
            &uniforms,
            &uniform,
        );
        assert_eq!(declined, 0, "{name}: uniform control flow declined");
        let divergent = vertices_with(
            29,
            |i| if i % 3 == 0 { 0.75 } else { 2.5 + i as f32 },
            |i| i as f32,
        );
        let declined = check(
            &format!("{name}, divergent flow"),
            &program,
            config(precision),
            &uniforms,
            &divergent,
        );
        assert_eq!(declined, 0, "{name}: divergent control flow declined");
    }
}

#[test]
fn ifc_uniform_and_divergent() {
    uniform_and_divergent(
        "ifc",
        "
	cmp k.yy, gt, le, p.xy
	ifc cmp.x
		mul r0, k.z, p
	.else
		add r0, k.y, p
	.end
	mov o0, r0
	mov o1, q",
        [0; 4],
    );
}

#[test]
fn ifc_on_a_flag_the_vertices_agree_on() {
    // cmp.y differs between vertices, but the IF reads only cmp.x.
    uniform_and_divergent(
        "ifc x only",
        "
	cmp k.xz, le, gt, q.xx
	ifc cmp.x
		mul r0, k.z, p
	.end
	mov o0, r0
	mov o1, q",
        [0; 4],
    );
}

/// Paths that split and meet again (IF/ELSE, CALLC), leave a loop on different passes (aL per
/// path, read relative after the loop), and END early: nothing declined, every vertex exact.
#[test]
fn divergent_paths_split_meet_and_end_apart() {
    let (program, mut uniforms) = program_of(common::DIVERGENT_FLOW);
    uniforms.int[0] = common::DIVERGENT_FLOW_I0;
    let vertices = common::divergent_flow_vertices();
    for precision in Precision::ALL {
        let declined = check(
            "divergent flow",
            &program,
            config(precision),
            &uniforms,
            &vertices,
        );
        assert_eq!(declined, 0, "{precision:?}");
    }
}

#[test]
fn jmpc_loop_uniform_and_divergent() {
    uniform_and_divergent(
        "jmpc",
        "
	mov r0, k.xxxx
again:
	add r0.x, k.y, r0.x
	cmp r0.xx, lt, lt, p.xx
	jmpc cmp.x, again
	mov o0, r0
	mov o1, q",
        [0; 4],
    );
}

#[test]
fn breakc_in_a_loop_uniform_and_divergent() {
    uniform_and_divergent(
        "breakc",
        "
	mov r0, k.xxxx
	for i0
		add r0.x, k.w, r0.x
		mad r0.y, r0.x, table[aL].x, r0.y
		cmp r0.xx, ge, ge, p.xx
		breakc cmp.x
	.end
	mov o0, r0
	mov o1, q",
        [5, 0, 1, 0],
    );
}

#[test]
fn nested_loops_calls_and_bool_branches() {
    uniform_and_divergent(
        "nested",
        "
	mov r0, k.xxxx
	mov r1, k.yyyy
	for i0
		for i0
			add r0, table[aL], r0
		.end
		callc cmp.y, twice
		mul r1, k.w, r1
	.end
	ifu b0
		add r0, k2, r0
	.end
	mov o0, r0
	mov o1, r1
	end
.end
.proc twice
	add r0, r0, r0
	cmp r0.xy, lt, lt, p.xy",
        [2, 1, 2, 0],
    );
}

#[test]
fn relative_addressing_with_per_vertex_indices() {
    let source = format!(
        "{HEADER}
.proc main
	mova a0.xy, p.xy
	mov r0, table[a0.x]
	add r0, table[a0.y+2], r0
	mad r1, q, table[a0.x+1], r0
	mov r2, table[a0.y]
	mov o0, r0
	add o1, r1, r2
	end
.end
"
    );
    let (program, mut uniforms) = program_of(&source);
    for (n, value) in uniforms.float.iter_mut().enumerate() {
        *value = [n as f32, n as f32 * 0.5, -(n as f32), 1.0 + n as f32];
    }
    let offsets = [
        0.0, 1.0, 5.0, -3.0, 90.0, 127.0, 128.0, -128.0, -129.0, 60.5, -0.9, 1e10,
    ];
    let vertices = vertices_with(
        41,
        |i| offsets[i % offsets.len()],
        |i| offsets[(i * 7 + 3) % offsets.len()],
    );
    for precision in Precision::ALL {
        let declined = check(
            "relative addressing",
            &program,
            config(precision),
            &uniforms,
            &vertices,
        );
        assert_eq!(
            declined, 0,
            "relative addressing declined ordinary vertices"
        );
    }
}

#[test]
fn budget_exhaustion_and_break_outside_a_loop_are_declined() {
    // An endless loop: every vertex fails on the budget.
    let (program, uniforms) = program_of(&format!(
        "{HEADER}\n.proc main\nagain:\n\tadd r0, k.y, r0\n\tjmpu b0, again\n\tmov o0, r0\n\tend\n.end\n"
    ));
    let mut uniforms = uniforms;
    uniforms.bools = 1;
    let small = ExecConfig {
        precision: Precision::F24Truncate,
        instruction_budget: 1000,
    };
    let vertices = vertices_with(13, |i| i as f32, |_| 0.0);
    assert_eq!(check("endless", &program, small, &uniforms, &vertices), 13);
    // A straight line of 3 instructions (mov, mov, end) under budgets 2 and 3.
    let (program, uniforms) = program_of(&format!(
        "{HEADER}\n.proc main\n\tmov o0, p\n\tmov o1, q\n\tend\n.end\n"
    ));
    for (budget, declined) in [(1, 13), (2, 13), (3, 0), (4, 0)] {
        let config = ExecConfig {
            precision: Precision::F32,
            instruction_budget: budget,
        };
        assert_eq!(
            check("straight line", &program, config, &uniforms, &vertices),
            declined,
            "budget {budget}"
        );
    }
    // BREAK with an empty loop stack.
    let (program, uniforms) = program_of(&format!(
        "{HEADER}\n.proc main\n\tmov o0, p\n\tbreak\n\tmov o1, q\n\tend\n.end\n"
    ));
    assert_eq!(
        check(
            "break",
            &program,
            config(Precision::F32),
            &uniforms,
            &vertices
        ),
        13
    );
}

#[test]
fn generated_programs() {
    let mut checked = 0;
    for index in 0..300u64 {
        let case = case_for(0x5EED_0001, index, 64);
        let Ok(program) = case.program.to_program() else {
            continue;
        };
        if program.stage != ShaderKind::Vertex {
            continue;
        }
        let invocations = case.inputs.invocations.len().max(1);
        for precision in Precision::ALL {
            let config = ExecConfig {
                precision,
                instruction_budget: DEFAULT_BUDGET,
            };
            let uniforms = case.inputs.uniforms(precision);
            let vertices: Vec<InputRegisters> = (0..23)
                .map(|i| case.inputs.registers(i % invocations, precision))
                .collect();
            check(
                &format!("generated program {index}"),
                &program,
                config,
                &uniforms,
                &vertices,
            );
        }
        checked += 1;
    }
    assert!(checked >= 150, "{checked} vertex programs");
}

/// Nanoseconds per vertex of `f` over `count` vertices (the best of several runs).
fn ns_per_vertex(count: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut best = f64::INFINITY;
    let repeat = std::env::var("VINTERP_REPEAT")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    for _ in 0..repeat {
        let start = Instant::now();
        f();
        best = best.min(start.elapsed().as_secs_f64());
    }
    best * 1e9 / count as f64
}

#[test]
#[ignore = "a measurement: cargo test --release --test vinterp -- --ignored --nocapture"]
fn throughput() {
    const BATCH: usize = 4096;
    println!(
        "ns/vertex, {BATCH}-vertex batches   vinterp  (declined)   interp   jit   prepare(us)"
    );
    for name in [
        "simple-transform/dvle0",
        "skinning/dvle0",
        "terrain-noise-512/dvle0",
        "multi-light/dvle0",
    ] {
        for precision in [Precision::F24Truncate, Precision::F32] {
            let fixture = corpus(precision)
                .into_iter()
                .find(|f| f.name == name)
                .unwrap();
            if std::env::var("VINTERP_BENCH").is_ok_and(|only| !name.contains(&only)) {
                continue;
            }
            let config = config(precision);
            let layout = BatchLayout::of(&fixture.program);
            let mut kernel = VectorInterpreter::new(&fixture.program, config);
            // The fixture's ordinary vertices: those the kernel runs without declining (the
            // fixtures also hold NaNs, infinities and zero vectors on purpose).
            let ordinary: Vec<InputRegisters> = fixture
                .vertices
                .iter()
                .copied()
                .filter(|&v| {
                    let data: Vec<f32> = layout.inputs.iter().flat_map(|n| v[n]).collect();
                    let mut out = vec![0.0; layout.outputs.planes()];
                    let soa_in = SoaInputs::new(&data, layout.inputs, 1, 1).unwrap();
                    let soa_out = SoaOutputs::new(&mut out, layout.outputs, 1, 1).unwrap();
                    let mut io = BatchIo::new(soa_in, soa_out, None).unwrap();
                    let stats = kernel.run_with_stats(&fixture.uniforms, &mut io, &mut Vec::new());
                    stats.exact_groups == 0 && stats.declined == 0
                })
                .collect();
            let vertices = if std::env::var("VINTERP_ALL").is_ok() {
                cycled(&fixture.vertices, BATCH)
            } else {
                cycled(&ordinary, BATCH)
            };
            let start = Instant::now();
            for _ in 0..99 {
                kernel = VectorInterpreter::new(&fixture.program, config);
            }
            let prepare_us = start.elapsed().as_secs_f64() * 1e6 / 100.0;
            let stride = BATCH;
            let mut inputs = vec![0.0f32; layout.inputs.planes() * stride];
            for (slot, n) in layout.inputs.iter().enumerate() {
                for c in 0..4 {
                    for (i, vertex) in vertices.iter().enumerate() {
                        inputs[(4 * slot + c) * stride + i] = vertex[n][c];
                    }
                }
            }
            let mut outputs = vec![0.0f32; layout.outputs.planes() * stride];
            let mut declined = Vec::new();
            let vinterp = ns_per_vertex(BATCH, || {
                let soa_in = SoaInputs::new(&inputs, layout.inputs, BATCH, stride).unwrap();
                let soa_out = SoaOutputs::new(&mut outputs, layout.outputs, BATCH, stride).unwrap();
                let mut io = BatchIo::new(soa_in, soa_out, None).unwrap();
                declined.clear();
                kernel.run(&fixture.uniforms, &mut io, &mut declined);
            });
            let declined = declined.len();
            let interp = Interpreter::new(fixture.program.clone(), config);
            let jit = JitShader::compile(fixture.program.clone(), config).unwrap();
            let mut results = Vec::with_capacity(BATCH);
            let interp_ns = ns_per_vertex(BATCH, || {
                results.clear();
                results.extend(
                    vertices
                        .iter()
                        .map(|v| interp.run_vertex(&fixture.uniforms, v)),
                );
            });
            let jit_ns = ns_per_vertex(BATCH, || {
                results.clear();
                results.extend(
                    vertices
                        .iter()
                        .map(|v| jit.run_vertex(&fixture.uniforms, v)),
                );
            });
            println!(
                "{name:24} {:8} {vinterp:8.1} ({declined:4}) {interp_ns:8.1} {jit_ns:6.1} {prepare_us:8.1}   {} of {} fixture vertices",
                precision.name(),
                ordinary.len(),
                fixture.vertices.len()
            );
        }
    }
}

/// Preparing decodes one op per reachable word and no more.
#[test]
fn preparing_decodes_only_reachable_words() {
    let program = |code: &[u32]| {
        ShaderProgram::new(code, &[0x0000_036F], 0, ShaderKind::Vertex, 0xFFFF).unwrap()
    };
    // A single END: one reachable word.
    let end = 0x8800_0000;
    let prepared = VectorInterpreter::new(&program(&[end]), ExecConfig::default());
    assert_eq!(prepared.stats().reachable_words, 1);
    assert_eq!(prepared.stats().decoded_ops, 1);
    // No END: the zero words fill program memory, all reachable.
    let prepared = VectorInterpreter::new(&program(&[]), ExecConfig::default());
    assert_eq!(prepared.stats().decoded_ops, picajit::isa::PROGRAM_WORDS);
    assert!(prepared.stats().decoded_ops <= prepared.stats().reachable_words);
}
