//! The JIT's compile cost is linear in a program's reachable words, whatever its shape: on each
//! adversarial shape of `shapes` (loops × breaks, picasso `for`/`breakc` repetition, long
//! straight lines of MAD/DP4, no END, many scopes ending at one address, recursive calls past
//! the stack limits, jumps everywhere), the emitted Cranelift IR (instructions and blocks) and
//! machine code per reachable word stay under a bound derived from a small program of the same
//! shape, and that ratio does not grow with the size. No timing is asserted (timings are the
//! `compile_cost` bench's job). Every one of these programs also runs bit-exact against the
//! interpreter: the same outputs, the same errors at the same address, and the same
//! geometry-shader state after every invocation, failed ones included; the instruction budget
//! is swept over small values so that it runs out at every instruction of a run.

mod common;
mod shapes;

use common::Builder;
use picajit::difftest::compare::{geometry_difference, state_difference};
use picajit::exec::{ExecConfig, ExecError, GeometryResult, GeometryState, VertexResult};
use picajit::float24::Precision;
use picajit::interp::Interpreter;
use picajit::jit::{CompileStats, JitShader};
use picajit::program::{InputRegisters, ShaderKind, ShaderProgram, Uniforms};
use shapes::{Lcg, Shape};

/// The sizes (in code words) each shape is compiled at; the first gives the bound.
const SIZES: [usize; 3] = [256, 1024, 4096];

/// How much the IR and code per reachable word may exceed the smallest size's.
const SLACK: f64 = 1.25;

fn compile(program: ShaderProgram, config: ExecConfig) -> JitShader {
    JitShader::compile(program, config).expect("the JIT compiles every program")
}

/// Per reachable word: IR instructions, IR blocks, code bytes.
fn ratios(stats: &CompileStats) -> [f64; 3] {
    let words = stats.reachable_words.max(1) as f64;
    [
        stats.ir_instructions as f64 / words,
        stats.ir_blocks as f64 / words,
        stats.code_bytes as f64 / words,
    ]
}

/// Uniforms that drive every shape's flow both ways: loop counts 1-4 from the int uniforms, a
/// mix of bools, small and large floats.
fn uniforms(seed: u64) -> Uniforms {
    let mut rng = Lcg::new(seed);
    let mut u = Uniforms::default();
    for (n, value) in u.float.iter_mut().enumerate() {
        let x = (rng.below(2001) as f32 - 1000.0) / 64.0;
        *value = [x, -x * 0.5, (n as f32) * 0.25, 1.0];
    }
    for int in &mut u.int {
        *int = [
            rng.below(4) as u8,
            rng.below(8) as u8,
            1 + rng.below(3) as u8,
            0,
        ];
    }
    u.bools = rng.next() as u16;
    u
}

fn inputs(seed: u64) -> InputRegisters {
    let mut rng = Lcg::new(seed ^ 0x5EED);
    std::array::from_fn(|n| {
        let x = (rng.below(4001) as f32 - 2000.0) / 128.0;
        [x, x * 2.0, -x, n as f32]
    })
}

/// Runs `program` under `config` on both engines with a few uniform and input sets and asserts
/// they agree bit for bit, errors (kind and address) included; a geometry shader runs several
/// invocations on one persistent state, compared after each.
fn assert_engines_agree(program: &ShaderProgram, config: ExecConfig, label: &str) {
    let interp = Interpreter::new(program.clone(), config);
    let jit = compile(program.clone(), config);
    match program.stage {
        ShaderKind::Vertex => {
            for seed in 0..3 {
                let (u, v) = (uniforms(seed), inputs(seed));
                let a = interp.run_vertex(&u, &v);
                let b = jit.run_vertex(&u, &v);
                assert_same_vertex(&a, &b, &format!("{label}, seed {seed}"));
            }
        }
        ShaderKind::Geometry => {
            let names = ["interp", "jit"];
            let mut states = [GeometryState::default(), GeometryState::default()];
            for seed in 0..3 {
                let (u, v) = (uniforms(seed), inputs(seed));
                let [sa, sb] = &mut states;
                let mut emitted = [GeometryResult::default(), GeometryResult::default()];
                let [ea, eb] = &mut emitted;
                let a = interp.run_geometry(sa, &u, &v, ea);
                let b = jit.run_geometry(sb, &u, &v, eb);
                assert_eq!(a, b, "{label}, invocation {seed}: outcomes differ");
                if let Some(d) = geometry_difference((&a, &emitted[0]), (&b, &emitted[1]), names) {
                    panic!("{label}, invocation {seed}: {d}");
                }
                if let Some(d) = state_difference(&states[0], &states[1], names) {
                    panic!("{label}, invocation {seed}: {d}");
                }
            }
        }
    }
}

#[track_caller]
fn assert_same_vertex(
    a: &Result<VertexResult, ExecError>,
    b: &Result<VertexResult, ExecError>,
    label: &str,
) {
    match (a, b) {
        (Ok(x), Ok(y)) => {
            let bits = |r: &VertexResult| r.outputs.map(|v| v.map(f32::to_bits));
            assert_eq!(bits(x), bits(y), "{label}: outputs differ");
            assert_eq!(x.flow, y.flow, "{label}: a0/aL/cmp differ");
        }
        (Err(x), Err(y)) => assert_eq!(x, y, "{label}: errors differ"),
        _ => panic!("{label}: one engine failed: {a:?} vs {b:?}"),
    }
}

fn config(budget: u64) -> ExecConfig {
    ExecConfig {
        precision: Precision::F24Truncate,
        instruction_budget: budget,
    }
}

const WHAT: [&str; 3] = ["IR instructions", "IR blocks", "code bytes"];

/// The fixed part of a function (entry, exit, dispatch) and of the module, per measure.
const FIXED: [f64; 3] = [3000.0, 300.0, 20_000.0];

/// The bound per reachable word, derived from small programs: the most IR instructions, IR
/// blocks and code bytes per reachable word of any shape at the smallest size, as a geometry
/// shader (whose budget path stores registers) and as a vertex shader (whose instructions
/// with products have a checked fast form and an exact one up to
/// `CHECKED_PRODUCTS_WORDS`), times [`SLACK`].
fn bound() -> [f64; 3] {
    static BOUND: std::sync::OnceLock<[f64; 3]> = std::sync::OnceLock::new();
    *BOUND.get_or_init(|| {
        let mut bound = [0.0f64; 3];
        for shape in Shape::ALL {
            for stage in [ShaderKind::Vertex, ShaderKind::Geometry] {
                let program = shape.program_as(SIZES[0], stage);
                let r = ratios(&compile(program, config(50_000)).compile_stats());
                for k in 0..3 {
                    bound[k] = bound[k].max(r[k] * SLACK);
                }
            }
        }
        eprintln!("bound per reachable word: {bound:.1?}");
        // A sanity check of the bound itself, slack included: about 236 IR instructions (a
        // small vertex shader's MAD and DP4, each a checked fast form and an exact one, and
        // again in the whole invocation's fast form, a second function), 19.4 blocks and 900
        // code bytes per word today.
        let absolute = [280.0, 24.0, 1100.0];
        for k in 0..3 {
            assert!(
                bound[k] <= absolute[k],
                "{} per reachable word: {:.1}",
                WHAT[k],
                bound[k]
            );
        }
        bound
    })
}

/// Compiles `shape` at every size of [`SIZES`] as a vertex and a geometry shader; asserts the
/// IR and code stay under [`bound`] per reachable word (plus [`FIXED`]) and, for shapes that
/// repeat one content at every size, that the ratio does not grow with the size; runs the
/// largest against the interpreter.
fn check_shape(shape: Shape) {
    let name = shape.name();
    let bound = bound();
    for stage in [ShaderKind::Vertex, ShaderKind::Geometry] {
        let mut first: Option<[f64; 3]> = None;
        for words in SIZES {
            let program = shape.program_as(words, stage);
            let stats = compile(program, config(50_000)).compile_stats();
            assert!(
                stats.reachable_words > 0,
                "{name} {words}: nothing reachable"
            );
            let r = ratios(&stats);
            eprintln!("{name} {words} {stage:?}: {stats:?}, per word {r:.1?}");
            let words_reached = stats.reachable_words as f64;
            for k in 0..3 {
                let limit = bound[k] + FIXED[k] / words_reached;
                assert!(
                    r[k] <= limit,
                    "{name} {words} {stage:?}: {:.1} {} per reachable word, above {limit:.1}",
                    r[k],
                    WHAT[k],
                );
            }
            // The same content at every size: the cost per word must not grow.
            if shape.repeats() {
                match first {
                    None => first = Some(r),
                    Some(first) => {
                        for k in 0..3 {
                            let limit = first[k] * SLACK + FIXED[k] / words_reached;
                            assert!(
                                r[k] <= limit,
                                "{name} {words} {stage:?}: {} per reachable word grew from \
                                 {:.1} to {:.1}",
                                WHAT[k],
                                first[k],
                                r[k]
                            );
                        }
                    }
                }
            }
        }
    }
    let largest = shape.program(*SIZES.last().unwrap());
    assert_engines_agree(&largest, config(50_000), &format!("{name} 4096"));
}

#[test]
fn loops_and_breaks_compile_in_linear_size() {
    check_shape(Shape::LoopsBreaks);
}

#[test]
fn picasso_for_breakc_repetition_compiles_in_linear_size() {
    check_shape(Shape::PicassoForBreakc);
}

#[test]
fn the_reported_1300_for_breakc_loops_compile_in_linear_size() {
    let file = picajit::asm::SourceFile {
        name: "loops.g.pica".to_string(),
        text: shapes::for_breakc_source(1300),
    };
    let shbin = picajit::asm::assemble(&[file], picajit::asm::AsmOptions::default())
        .expect("assembles")
        .shbin;
    let program = ShaderProgram::from_shbin(&shbin, 0).expect("one DVLE");
    let stats = compile(program.clone(), config(50_000)).compile_stats();
    assert!(stats.reachable_words > 3900, "{stats:?}");
    let r = ratios(&stats);
    let bound = bound();
    for k in 0..3 {
        assert!(r[k] <= bound[k], "{}: {stats:?}", WHAT[k]);
    }
    assert_engines_agree(&program, config(50_000), "1300 for/breakc");
}

#[test]
fn a_straight_line_of_mad_and_dp4_compiles_in_linear_size() {
    check_shape(Shape::Straight);
}

/// EX2 and LG2 are inline code (about 45 IR instructions each) up to
/// `INLINE_TRANSCENDENTALS` reachable ones, calls past that: a program of thousands would
/// otherwise be the costliest shape to compile. One more EX2 than the limit makes the whole
/// program smaller, and it still runs the interpreter's bits.
#[test]
fn past_the_inline_limit_ex2_and_lg2_are_calls() {
    use picajit::jit::INLINE_TRANSCENDENTALS;
    let program = |count: usize| {
        let mut b = Builder::new();
        for k in 0..count {
            let op = if k % 2 == 0 { "ex2" } else { "lg2" };
            b.op(&format!("{op} r{}, r{}.x", k % 12, (k + 1) % 12));
        }
        b.ops("mov o0, r0; mov o1, r1; end");
        b.program(ShaderKind::Vertex)
    };
    let ir = |count: usize| {
        compile(program(count), config(50_000))
            .compile_stats()
            .ir_instructions
    };
    let (at, past) = (ir(INLINE_TRANSCENDENTALS), ir(INLINE_TRANSCENDENTALS + 1));
    assert!(
        past * 2 < at,
        "{INLINE_TRANSCENDENTALS} inline: {at} IR instructions; one more, called: {past}"
    );
    for count in [INLINE_TRANSCENDENTALS, INLINE_TRANSCENDENTALS + 1] {
        assert_engines_agree(&program(count), config(50_000), &format!("{count} EX2/LG2"));
    }
}

#[test]
fn a_program_without_end_compiles_in_linear_size() {
    check_shape(Shape::NoEnd);
}

#[test]
fn a_one_word_program_without_end_runs_through_memory_and_stops_in_the_budget() {
    let mut b = Builder::new();
    b.op("nop");
    let program = b.program(ShaderKind::Vertex);
    let stats = compile(program.clone(), config(50_000)).compile_stats();
    // The zero words past it (`add o0, v0, v0`) are all reachable.
    assert_eq!(stats.reachable_words, 4096);
    let r = ratios(&stats);
    let bound = bound();
    for k in 0..3 {
        assert!(r[k] <= bound[k], "{}: {stats:?}", WHAT[k]);
    }
    for budget in [1, 2, 3, 4, 5, 4095, 4096, 4097, 4100, 10_000] {
        assert_engines_agree(&program, config(budget), &format!("nop, budget {budget}"));
    }
    let jit = compile(program, config(10_000));
    let err = jit
        .run_vertex(&uniforms(0), &inputs(0))
        .expect_err("runs into the budget");
    assert_eq!(
        err,
        ExecError::InstructionBudget {
            budget: 10_000,
            pc: (10_000 % 4096) as u16,
        }
    );
}

#[test]
fn many_ifs_ending_at_one_address_compile_in_linear_size() {
    check_shape(Shape::SharedIfEnds);
}

#[test]
fn many_calls_ending_at_one_address_compile_in_linear_size() {
    check_shape(Shape::SharedCallEnds);
}

#[test]
fn many_loops_ending_at_one_address_compile_in_linear_size() {
    check_shape(Shape::SharedLoopEnds);
}

#[test]
fn recursive_calls_past_the_stack_limits_compile_in_linear_size() {
    check_shape(Shape::RecursiveCalls);
}

#[test]
fn jumps_everywhere_compile_in_linear_size() {
    check_shape(Shape::JumpsEverywhere);
}

#[test]
fn the_costliest_data_instructions_compile_in_linear_size() {
    check_shape(Shape::Heavy);
}

/// Small programs of every shape, vertex and geometry, with the budget running out at each
/// of their first instructions: the error names the exact instruction and a geometry shader
/// keeps exactly the state it reached (registers written earlier in the same run included).
#[test]
fn the_budget_runs_out_at_the_exact_instruction_with_the_exact_state() {
    for shape in Shape::ALL {
        for stage in [ShaderKind::Vertex, ShaderKind::Geometry] {
            let program = shape.program_as(48, stage);
            // Shapes that run on into the zero words past them reach all 4096 words: fewer
            // compiles of those.
            let whole_memory = matches!(
                shape,
                Shape::NoEnd | Shape::SharedIfEnds | Shape::JumpsEverywhere
            );
            let budgets: Vec<u64> = if whole_memory {
                (1..=9).chain([57]).collect()
            } else {
                (1..=40).chain([57, 100, 333]).collect()
            };
            for budget in budgets {
                assert_engines_agree(
                    &program,
                    config(budget),
                    &format!("{} as {stage:?}, budget {budget}", shape.name()),
                );
            }
        }
    }
}

/// A geometry shader whose runs write registers, EMIT and SETEMIT between them (each a run of
/// its own, checked before it acts), with every budget up to past its END.
#[test]
fn the_budget_before_emit_and_setemit_keeps_the_exact_geometry_state() {
    let mut b = Builder::new();
    b.ops(
        "mov r0, v0
         add r1, c0, r0
         mov o0, r1
         setemit 0
         emit
         mad r2, v1, c1, r1
         mov o0, r2
         mov o1.xy, r0
         setemit 1
         emit
         mul r3, c2, r2
         dp4 r4.x, c3, r3
         mov o0, r4
         setemit 2, prim
         emit
         setemit 3
         mov o0, r0
         emit
         end",
    );
    let program = b.program(ShaderKind::Geometry);
    for budget in 1..=22 {
        assert_engines_agree(&program, config(budget), &format!("budget {budget}"));
    }
}

/// Memory past the uploaded code is zero words, compiled as filler runs (one instruction for a
/// run of any length): jumps, calls and scope ends land inside them and cut them, and the
/// budget runs out at every kind of place in them, in both stages.
#[test]
fn filler_runs_past_the_code_are_exact_wherever_control_enters_or_stops() {
    let mut b = Builder::new();
    b.ops(
        "mov o0, c0
         mov r0, v1
         callu b1, 3000, 10
         ifu b2, 2500, 20
         jmpu b0, 2000
         mova a0.x, v2
         nop",
    );
    for stage in [ShaderKind::Vertex, ShaderKind::Geometry] {
        let program = b.program(stage);
        let stats = compile(program.clone(), config(1)).compile_stats();
        assert_eq!(stats.reachable_words, 4096, "{stats:?}");
        // A handful of filler runs, not thousands of instructions.
        assert!(stats.ir_instructions < 3000, "{stats:?}");
        let budgets = (1..=12)
            .chain(1995..=2005)
            .chain(2495..=2500)
            .chain(2995..=3012)
            .chain([4095, 4096, 4097, 4100, 7000, 9001]);
        for budget in budgets {
            assert_engines_agree(
                &program,
                config(budget),
                &format!("{stage:?}, budget {budget}"),
            );
        }
    }
}
