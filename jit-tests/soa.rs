//! The structure-of-arrays JIT tier (`jit::SoaJit`) against the reference interpreter, bit for
//! bit (docs/execution-model.md §8): the corpus in every precision, unusual values, generated
//! programs, budgets; declined vertices are completed by the interpreter, as the engine layer
//! does, and ordinary batches decline nothing.

use std::path::{Path, PathBuf};

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::difftest::runner::case_for;
use picajit::document::input::parse_input;
use picajit::exec::{BatchIo, BatchLayout, ExecConfig, GroupKernel, RecordIo, SoaBuffer};
use picajit::float24::Precision;
use picajit::interp::Interpreter;
use picajit::jit::{ConstantLanes, SoaArithmetic, SoaCompileError, SoaJit};
use picajit::program::{FlowRegisters, InputRegisters, ShaderKind, ShaderProgram, Uniforms, Vec4};

mod common;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/programs")
}

/// A corpus program: its vertex DVLEs with their fixture's uniforms and vertices.
struct CorpusCase {
    name: String,
    program: ShaderProgram,
    uniforms: Uniforms,
    vertices: Vec<InputRegisters>,
}

fn corpus_cases(precision: Precision) -> Vec<CorpusCase> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut cases = Vec::new();
    for dir in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let sources: Vec<SourceFile> = files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "pica"))
            .map(|p| SourceFile {
                name: p.file_name().unwrap().to_str().unwrap().to_string(),
                text: std::fs::read_to_string(p).unwrap(),
            })
            .collect();
        let assembly = assemble(&sources, AsmOptions::default()).unwrap();
        for (index, dvle) in assembly.shbin.dvles.iter().enumerate() {
            if dvle.kind != ShaderKind::Vertex {
                continue;
            }
            let input: &Path = &dir.join(format!("dvle{index}.input.json"));
            let Ok(text) = std::fs::read_to_string(input) else {
                continue;
            };
            let run_input = parse_input(&text, precision, dvle.kind).unwrap();
            let mut uniforms = Uniforms::from_constants(dvle);
            run_input.apply_uniforms(&mut uniforms);
            cases.push(CorpusCase {
                name: format!("{}/dvle{index}", dir.file_name().unwrap().to_str().unwrap()),
                program: ShaderProgram::from_shbin(&assembly.shbin, index).unwrap(),
                uniforms,
                vertices: run_input.invocations.iter().map(|i| i.registers).collect(),
            });
        }
    }
    cases
}

/// Runs `vertices` through the tier (declined ones through the interpreter) and checks every
/// vertex against the interpreter, with a kernel specialised on the bool and int uniforms and,
/// when the program multiplies by zeros or ones of the float uniforms, with one specialised on
/// those too (as the engine layer compiles it). Returns how many the first kernel declined, or
/// the compile error.
fn check_batch(
    what: &str,
    program: &ShaderProgram,
    config: ExecConfig,
    uniforms: &Uniforms,
    vertices: &[InputRegisters],
) -> Result<usize, SoaCompileError> {
    let kernel = SoaJit::compile(program, config, uniforms.bools, uniforms.int)?;
    check_records(what, &kernel, program, config, uniforms, vertices);
    let declined = check_kernel(what, &kernel, program, config, uniforms, vertices);
    let constants =
        ConstantLanes::of(uniforms, config.precision).within(&ConstantLanes::candidates(program));
    if !constants.is_empty() {
        let kernel =
            SoaJit::compile_specialised(program, config, uniforms.bools, uniforms.int, constants)?;
        let what = format!(
            "{what} (specialised on {} constant lanes)",
            constants.count()
        );
        check_records(&what, &kernel, program, config, uniforms, vertices);
        check_kernel(&what, &kernel, program, config, uniforms, vertices);
    }
    Ok(declined)
}

/// [`check_batch`] with one kernel; returns how many vertices it declined.
fn check_kernel(
    what: &str,
    kernel: &SoaJit,
    program: &ShaderProgram,
    config: ExecConfig,
    uniforms: &Uniforms,
    vertices: &[InputRegisters],
) -> usize {
    let interp = Interpreter::new(program.clone(), config);
    let layout = BatchLayout::of(program);
    let inputs = SoaBuffer::from_vertices(layout.inputs, vertices);
    let mut outputs = SoaBuffer::zeroed(layout.outputs, vertices.len());
    let mut flow = vec![FlowRegisters::default(); vertices.len()];
    let mut declined = Vec::new();
    {
        let mut io = BatchIo::new(inputs.inputs(), outputs.outputs(), Some(&mut flow)).unwrap();
        kernel.run(uniforms, &mut io, &mut declined);
        assert!(declined.windows(2).all(|w| w[0] < w[1]), "{what}: order");
        let mut errors = Vec::new();
        for &i in &declined {
            io.store(i, interp.run_vertex(uniforms, &vertices[i]), &mut errors);
        }
    }
    for (i, vertex) in vertices.iter().enumerate() {
        match interp.run_vertex(uniforms, vertex) {
            Ok(expected) => {
                let got = outputs.outputs().vertex(i);
                for n in layout.outputs.iter() {
                    let want = expected.outputs[n].map(f32::to_bits);
                    let have = got[n].map(f32::to_bits);
                    assert_eq!(
                        have, want,
                        "{what}: vertex {i} o{n} ({:?})",
                        config.precision
                    );
                }
                assert_eq!(flow[i], expected.flow, "{what}: vertex {i} flow registers");
            }
            Err(e) => assert!(
                declined.binary_search(&i).is_ok(),
                "{what}: vertex {i} fails ({e}) but was not declined"
            ),
        }
    }
    declined.len()
}

/// The kernel's vertex-record path (before its first batch on planes, which may leave it
/// sorting unusual vertices apart, a policy records leave to planes): the interpreter's
/// outputs in the layout's registers (the others keep what they held) and flow registers, the
/// failing vertices declined, in order.
fn check_records(
    what: &str,
    kernel: &SoaJit,
    program: &ShaderProgram,
    config: ExecConfig,
    uniforms: &Uniforms,
    vertices: &[InputRegisters],
) {
    let interp = Interpreter::new(program.clone(), config);
    let layout = BatchLayout::of(program);
    const KEPT: f32 = -7.0;
    let mut outputs = vec![[[KEPT; 4]; 16]; vertices.len()];
    let mut flow = vec![FlowRegisters::default(); vertices.len()];
    let mut declined = Vec::new();
    {
        let mut io =
            RecordIo::new(vertices, &mut outputs, layout.outputs, Some(&mut flow)).unwrap();
        if !kernel.run_records(uniforms, &mut io, &mut declined) {
            assert!(
                kernel.sorting_in_use(),
                "{what}: a kernel runs records unless it sorts unusual vertices apart"
            );
            return;
        }
        assert!(declined.windows(2).all(|w| w[0] < w[1]), "{what}: order");
        let mut errors = Vec::new();
        for &i in &declined {
            io.store(i, interp.run_vertex(uniforms, &vertices[i]), &mut errors);
        }
    }
    for (i, vertex) in vertices.iter().enumerate() {
        match interp.run_vertex(uniforms, vertex) {
            Ok(expected) => {
                for (n, got) in outputs[i].iter().enumerate() {
                    let want = if layout.outputs.contains(n) {
                        expected.outputs[n]
                    } else {
                        [KEPT; 4]
                    };
                    assert_eq!(
                        got.map(f32::to_bits),
                        want.map(f32::to_bits),
                        "{what}: records, vertex {i} o{n}"
                    );
                }
                assert_eq!(flow[i], expected.flow, "{what}: records, vertex {i} flow");
            }
            Err(e) => assert!(
                declined.binary_search(&i).is_ok(),
                "{what}: records, vertex {i} fails ({e}) but was not declined"
            ),
        }
    }
}

fn config(precision: Precision) -> ExecConfig {
    ExecConfig {
        precision,
        ..ExecConfig::default()
    }
}

/// `count` vertices made from the fixture's, each slightly varied so the lanes differ.
fn varied(vertices: &[InputRegisters], count: usize) -> Vec<InputRegisters> {
    (0..count)
        .map(|i| {
            let mut v = vertices[i % vertices.len()];
            let scale = 1.0 + (i / vertices.len()) as f32 * 0.0625;
            for reg in v.iter_mut() {
                for x in reg.iter_mut() {
                    *x *= scale;
                }
            }
            v
        })
        .collect()
}

/// Programs whose flow is uniform, or follows the vertex with no loop: a batch of ordinary
/// values ([`ordinary`]) declines nothing.
const ORDINARY: &[&str] = &[
    "simple-transform/dvle0",
    "skinning/dvle0",
    "terrain-noise-512/dvle0",
    "multi-light/dvle0",
    "texgen/dvle0",
    "float-edges/dvle0",
    "normal-quat/dvle0",
    "spot-light/dvle0",
    "ui-atlas/dvle0",
];

/// `count` vertices of ordinary values (multiples of 1/16 in -4..4, w = 1), from a seed.
fn ordinary(count: usize, seed: u64) -> Vec<InputRegisters> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            std::array::from_fn(|_| {
                let mut v: [f32; 4] =
                    std::array::from_fn(|_| ((next() % 129) as i64 - 64) as f32 / 16.0);
                v[3] = 1.0;
                v
            })
        })
        .collect()
}

#[test]
fn corpus_programs_are_exact_in_every_precision() {
    for precision in Precision::ALL {
        for case in corpus_cases(precision) {
            for count in [1, 6, 37] {
                let vertices = varied(&case.vertices, count);
                check_batch(
                    &case.name,
                    &case.program,
                    config(precision),
                    &case.uniforms,
                    &vertices,
                )
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            }
            let declined = check_batch(
                &case.name,
                &case.program,
                config(precision),
                &case.uniforms,
                &ordinary(41, 7),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            if ORDINARY.contains(&case.name.as_str()) {
                assert_eq!(declined, 0, "{} in {precision:?} declined", case.name);
            }
        }
    }
}

const SPECIALS: [u32; 12] = [
    0x7FC0_0000, // NaN
    0xFFC1_2380, // NaN with payload and sign
    0x7F80_0000, // +inf
    0xFF80_0000, // -inf
    0x0000_0000,
    0x8000_0000,          // -0
    0x0000_0001,          // f32 subnormal
    0x1F00_0000,          // float24 subnormal range
    (127 - 62) << 23,     // smallest normal float24
    0x5F7F_FF80,          // largest finite float24
    0xDF7F_FF80,          // its negative
    0x7F00_0000 | 0x1234, // huge
];

#[test]
fn unusual_values_in_inputs_and_uniforms_are_exact() {
    let mut state = 0x1234_5678_9ABC_DEF1u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for precision in Precision::ALL {
        for case in corpus_cases(precision) {
            let mut vertices = varied(&case.vertices, 23);
            for v in vertices.iter_mut() {
                for reg in v.iter_mut() {
                    for x in reg.iter_mut() {
                        let r = next();
                        if r % 11 == 0 {
                            *x = f32::from_bits(SPECIALS[(r >> 8) as usize % SPECIALS.len()]);
                        }
                    }
                }
            }
            let mut uniforms = case.uniforms.clone();
            for reg in uniforms.float.iter_mut() {
                for x in reg.iter_mut() {
                    let r = next();
                    if r % 29 == 0 {
                        *x = f32::from_bits(SPECIALS[(r >> 8) as usize % SPECIALS.len()]);
                    }
                }
            }
            check_batch(
                &case.name,
                &case.program,
                config(precision),
                &uniforms,
                &vertices,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        }
    }
}

#[test]
fn small_budgets_decline_exactly_the_vertices_that_run_out() {
    for case in corpus_cases(Precision::F24Truncate) {
        for budget in [1, 7, 40, 200] {
            let config = ExecConfig {
                precision: Precision::F24Truncate,
                instruction_budget: budget,
            };
            let vertices = varied(&case.vertices, 9);
            check_batch(
                &format!("{} budget {budget}", case.name),
                &case.program,
                config,
                &case.uniforms,
                &vertices,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        }
    }
}

/// Seeded generated programs (every flow form, relative addressing with per-vertex a0, loops
/// on the flags), with inputs spread over the lanes so that groups diverge sometimes.
#[test]
fn generated_programs_are_exact() {
    let mut compiled = 0;
    let mut too_large = 0;
    for index in 0..300u64 {
        let case = case_for(0x50A, index, 48);
        if case.program.stage != ShaderKind::Vertex {
            continue;
        }
        let Ok(program) = case.program.to_program() else {
            continue;
        };
        let precision = Precision::ALL[index as usize % 3];
        let uniforms = case.inputs.uniforms(precision);
        let count = case.inputs.invocations.len().max(1);
        let base: Vec<InputRegisters> = (0..count)
            .map(|i| case.inputs.registers(i, precision))
            .collect();
        // Each vertex alone in its group (uniform flow), then mixed.
        let mut vertices = Vec::new();
        for v in &base {
            vertices.extend([*v; 4]);
        }
        vertices.extend(base.iter().cycle().take(4 * count + 3));
        match check_batch(
            &format!("generated {index}"),
            &program,
            config(precision),
            &uniforms,
            &vertices,
        ) {
            Ok(_) => compiled += 1,
            Err(SoaCompileError::TooLarge { .. }) => too_large += 1,
            Err(e) => panic!("generated {index}: {e}"),
        }
    }
    assert!(compiled > 150, "{compiled} compiled, {too_large} too large");
}

/// The emitted IR grows at most linearly with the traced instructions.
#[test]
fn compile_size_is_bounded_by_the_traced_instructions() {
    for precision in Precision::ALL {
        for case in corpus_cases(precision) {
            let kernel = SoaJit::compile(
                &case.program,
                config(precision),
                case.uniforms.bools,
                case.uniforms.int,
            )
            .unwrap();
            let stats = kernel.compile_stats();
            assert!(stats.traced_instructions <= picajit::jit::soa::MAX_TRACED);
            assert!(
                stats.ir_instructions <= 200 * stats.traced_instructions + 1200,
                "{}: {stats:?}",
                case.name
            );
        }
    }
    // A long uniform loop of a long body is refused, not compiled for ever.
    let mut code = vec![0u32; 4000];
    // loop i0 over words 1..=3998, then end.
    code[0] = (0x29 << 26) | (3998 << 10);
    code[3999] = 0x88000000;
    let program = ShaderProgram::new(&code, &[0x0000_036F], 0, ShaderKind::Vertex, 1).unwrap();
    let ints = [[255, 0, 1, 0]; 4];
    match SoaJit::compile(&program, ExecConfig::default(), 0, ints) {
        Err(e @ SoaCompileError::TooLarge { .. }) => assert!(e.to_string().contains("longer")),
        other => panic!("{other:?}"),
    }
}

fn assembled(name: &str, source: &str) -> (ShaderProgram, Uniforms) {
    let sources = [SourceFile {
        name: name.to_string(),
        text: source.to_string(),
    }];
    let assembly = assemble(&sources, AsmOptions::default()).unwrap();
    let uniforms = Uniforms::from_constants(&assembly.shbin.dvles[0]);
    (
        ShaderProgram::from_shbin(&assembly.shbin, 0).unwrap(),
        uniforms,
    )
}

/// [`common::DIVERGENT_FLOW`] with its int uniform.
fn masked_program() -> (ShaderProgram, Uniforms) {
    let (program, mut uniforms) = assembled("masked.v.pica", common::DIVERGENT_FLOW);
    uniforms.int[0] = common::DIVERGENT_FLOW_I0;
    (program, uniforms)
}

/// Groups whose vertices take different paths run each path under a mask, round loops too:
/// nothing is declined, and every output and flow register equals the interpreter's.
#[test]
fn diverging_groups_run_masked_and_exact() {
    let (program, uniforms) = masked_program();
    let vertices = common::divergent_flow_vertices();
    let (looping, looping_uniforms) = looping_program();
    // Round the loop from 0 to 9 times.
    let counts: Vec<InputRegisters> = (0..40).map(|i| vertex((i * 7 % 10) as f32)).collect();
    for precision in Precision::ALL {
        let declined =
            check_batch("masked", &program, config(precision), &uniforms, &vertices).unwrap();
        assert_eq!(declined, 0, "{precision:?}");
        let declined = check_batch(
            "looping",
            &looping,
            config(precision),
            &looping_uniforms,
            &counts,
        )
        .unwrap();
        assert_eq!(declined, 0, "{precision:?}");
    }
}

/// A program whose flow follows the vertex round a loop: a backward `jmpc` while x > 0.
fn looping_program() -> (ShaderProgram, Uniforms) {
    let source = "\
.constf zero(0.0, 0.0, 0.0, 0.0)
.constf one(1.0, 1.0, 1.0, 1.0)
.in pos v0
.out opos position
.proc main
\tmov r0, pos
again:
\tadd r0.x, -one.x, r0.x
\tcmp zero.xx, lt, lt, r0.xx
\tjmpc cmp.x, again
\tmov opos, r0
\tend
.end
";
    assembled("looping.v.pica", source)
}

/// EX2 and LG2, emitted inline on f64x2 vectors, give the interpreter's bits (which come from
/// `float24::transcendental` on one f64) on a fine sweep of their whole range, at the range
/// edges and special values, and on pseudo-random bit patterns, in every precision.
#[test]
fn ex2_and_lg2_are_exact_on_every_kind_of_input() {
    let (program, uniforms) = assembled(
        "transcendental.v.pica",
        "\
.in pos v0
.out opos position
.out ocol color
.proc main
\tex2 opos, pos.x
\tlg2 ocol, pos.y
\tend
.end
",
    );
    let mut values: Vec<f32> = (0..12_000).map(|i| -165.0 + i as f32 * 0.02473).collect();
    values.extend([
        -152.0,
        -151.99,
        -150.0,
        -149.5,
        -149.0,
        -126.5,
        -126.0,
        -0.0,
        0.0,
        1e-45,
        1e-30,
        0.5,
        1.0,
        2.0,
        127.0,
        127.99998,
        128.0,
        1e30,
        f32::MAX,
        f32::MIN,
        -1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
    ]);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    values.extend((0..4000).map(|_| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        f32::from_bits(state as u32)
    }));
    // x for EX2 and y for LG2; LG2 also sees the values' magnitudes and powers of two.
    let vertices: Vec<InputRegisters> = values
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let mut v = InputRegisters::default();
            let y = if i % 2 == 0 { x.abs() } else { x.exp2() };
            v[0] = [x, y, 0.0, 1.0];
            v
        })
        .collect();
    for precision in Precision::ALL {
        let declined =
            check_batch("ex2/lg2", &program, config(precision), &uniforms, &vertices).unwrap();
        assert_eq!(declined, 0, "{precision:?}");
    }
}

fn vertex(x: f32) -> InputRegisters {
    let mut v = InputRegisters::default();
    v[0] = [x, 2.0, 3.0, 1.0];
    v
}

/// Declining for flow is not flagging: the batch stays on the fast arithmetic, and only the
/// groups with a vertex that runs out of its budget (1e30 - 1 = 1e30 in float24: it never leaves
/// the loop) are declined. Infinities in every group are flagged: the kernel moves to the next
/// form, and every result stays exact.
#[test]
fn flow_declines_do_not_switch_the_arithmetic_but_flags_do() {
    let (program, uniforms) = looping_program();
    let config = ExecConfig {
        instruction_budget: 1000,
        ..config(Precision::F24Truncate)
    };
    // Groups of four: [1e30, 1, 1e30, 1] is declined, [1, 1, 1, 1] is not; 16 groups.
    let vertices: Vec<InputRegisters> = (0..64)
        .map(|i| {
            vertex(if (i / 4) % 2 == 0 && i % 2 == 0 {
                1e30
            } else {
                1.0
            })
        })
        .collect();
    assert_eq!(
        check_batch("looping", &program, config, &uniforms, &vertices),
        Ok(32)
    );
    let kernel = SoaJit::compile(&program, config, uniforms.bools, uniforms.int).unwrap();
    let layout = kernel.layout();
    let inputs = SoaBuffer::from_vertices(layout.inputs, &vertices);
    let mut outputs = SoaBuffer::zeroed(layout.outputs, vertices.len());
    let mut declined = Vec::new();
    let mut io = BatchIo::new(inputs.inputs(), outputs.outputs(), None).unwrap();
    kernel.run(&uniforms, &mut io, &mut declined);
    let diverging: Vec<usize> = (0..64).filter(|i| (i / 4) % 2 == 0).collect();
    assert_eq!(declined, diverging);
    assert_eq!(kernel.arithmetic_in_use(), SoaArithmetic::FlagUnusual);

    // -inf leaves the loop at once, with an infinite result in every group.
    let infinite: Vec<InputRegisters> = (0..64).map(|_| vertex(f32::NEG_INFINITY)).collect();
    check_batch("infinities", &program, config, &uniforms, &infinite).unwrap();
    let kernel = SoaJit::compile(&program, config, uniforms.bools, uniforms.int).unwrap();
    let inputs = SoaBuffer::from_vertices(layout.inputs, &infinite);
    let mut io = BatchIo::new(inputs.inputs(), outputs.outputs(), None).unwrap();
    declined.clear();
    kernel.run(&uniforms, &mut io, &mut declined);
    assert!(declined.is_empty());
    // Too little code for sorting the unusual vertices apart to pay.
    assert!(!kernel.sorting_pays());
    assert_ne!(kernel.arithmetic_in_use(), SoaArithmetic::FlagUnusual);
}

/// Once a batch flags many groups, a kernel whose exact form is much larger runs the vertices
/// with an unusual input (NaN, infinite, 2^64 or more) apart on the exact form and the others
/// on itself, in groups of their own (elsewhere every batch runs on the more exact form); once
/// the vertices with ordinary inputs flag many groups too (squares beyond the float24 range),
/// every batch runs on the more exact form. Every step is exact, flow registers
/// and declines (a budget run out) included, with batches that are all unusual, all ordinary
/// and mixed, whole groups and a tail.
#[test]
fn unusual_vertices_run_apart_and_stay_exact() {
    let (program, uniforms) = assembled(
        "squares.v.pica",
        "\
.constf zero(0.0, 0.0, 0.0, 0.0)
.constf one(1.0, 1.0, 1.0, 1.0)
.in pos v0
.in count v1
.out opos position
.out ocol color
.proc main
\tmul r0, pos, pos
\tdp4 r2.x, r0, pos
\tdp4 r2.y, r0, r0
\tdp3 r2.z, r0, pos
\tmad r2.w, r0.x, pos.y, r0.z
\tmul r3, r0, r2
\tadd r3, r3, r0
\tmul r3, r3, r2
\tmad r3, r3, r0, pos
\tdp4 r4.x, r3, r2
\tdp4 r4.y, r3, r0
\tdp4 r4.z, r3, pos
\tmul r4.w, r3.x, r3.y
\tadd r0, r4, r3
\tcmp zero.xy, lt, le, pos.xy
\tmova a0.x, pos.y
\tmov r1, count
again:
\tadd r1.z, -one.z, r1.z
\tcmp zero.xx, lt, lt, r1.zz
\tjmpc cmp.x, again
\tmov opos, r0
\tmov ocol, r1
\tend
.end
",
    );
    let special = [f32::INFINITY, f32::NAN, f32::NEG_INFINITY, 3e19, -1e38];
    let at = |i: usize, x: f32| {
        let mut v = InputRegisters::default();
        v[0] = [x, 0.05 * i as f32 - 1.0, 0.5 * (i % 3) as f32, 1.0];
        // The loop counts z down: 1e30 never gets there (1e30 - 1 = 1e30) and runs out of the
        // budget.
        v[1] = [
            0.0,
            0.0,
            if i % 11 == 5 { 1e30 } else { (i % 3) as f32 },
            1.0,
        ];
        v
    };
    let mixed: Vec<InputRegisters> = (0..61)
        .map(|i| {
            let x = if i % 6 == 1 || i % 6 == 4 {
                special[i % special.len()]
            } else {
                i as f32 * 0.037 - 1.0
            };
            at(i, x)
        })
        .collect();
    let ordinary: Vec<InputRegisters> = (0..46).map(|i| at(i, 0.05 * i as f32 - 1.0)).collect();
    let unusual: Vec<InputRegisters> = (0..23).map(|i| at(i, special[i % 5])).collect();
    // 1e19 is below 2^64 (an ordinary input) but its square is beyond the float24 range.
    let overflowing: Vec<InputRegisters> = (0..64)
        .map(|i| at(i, if i % 2 == 0 { 1e19 } else { 2.0 }))
        .collect();
    for precision in Precision::ALL {
        let config = ExecConfig {
            instruction_budget: 200,
            ..config(precision)
        };
        let kernel = SoaJit::compile(&program, config, uniforms.bools, uniforms.int).unwrap();
        let check = |what: &str, vertices: &[InputRegisters]| {
            let what = format!("{what} {precision:?}");
            check_kernel(&what, &kernel, &program, config, &uniforms, vertices)
        };
        let budget_runs_out =
            |vertices: &[InputRegisters]| (0..vertices.len()).filter(|i| i % 11 == 5).count();
        assert!(check("ordinary", &ordinary) >= budget_runs_out(&ordinary));
        assert!(!kernel.sorts_unusual_vertices(), "{precision:?}");
        // The float24 rounding makes the exact kernel much larger than the fast one: sorting
        // pays for this many products.
        let sorting = kernel.sorting_pays();
        assert!(sorting || !precision.is_f24(), "{precision:?}");
        check("mixed", &mixed);
        // NaN inputs give NaN squares in every mode: flagged.
        assert_eq!(kernel.sorts_unusual_vertices(), sorting, "{precision:?}");
        assert_eq!(
            kernel.arithmetic_in_use() == SoaArithmetic::FlagUnusual,
            sorting,
            "{precision:?}"
        );
        for (what, vertices) in [
            ("mixed, again", &mixed),
            ("ordinary, again", &ordinary),
            ("unusual, again", &unusual),
        ] {
            assert!(check(what, vertices) >= budget_runs_out(vertices));
            // In f32 mode an infinite input is not unusual (the fast path keeps infinities), but
            // the products here make NaNs of it (inf - inf): the ordinary vertices flag groups
            // too, and the kernel stops sorting.
            let still_sorting = sorting && precision.is_f24();
            assert_eq!(
                kernel.sorts_unusual_vertices(),
                still_sorting,
                "{what} {precision:?}"
            );
        }
        check("overflowing", &overflowing);
        if precision.is_f24() {
            assert!(!kernel.sorts_unusual_vertices(), "{precision:?}");
            assert_ne!(kernel.arithmetic_in_use(), SoaArithmetic::FlagUnusual);
        }
        check("mixed, after", &mixed);
        check("overflowing, after", &overflowing);
    }
}

fn ns_per_vertex(mut f: impl FnMut(), vertices: usize) -> f64 {
    f();
    let mut best = f64::MAX;
    for _ in 0..7 {
        let start = std::time::Instant::now();
        f();
        best = best.min(start.elapsed().as_nanos() as f64 / vertices as f64);
    }
    best
}

/// Code-generator settings: compile time against run time.
/// `cargo test --release --test soa -- --ignored --nocapture measure_codegen`
#[test]
#[ignore]
fn measure_codegen() {
    use picajit::jit::{SoaArithmetic, SoaCodegen};
    const N: usize = 4096;
    let precision = Precision::F24Truncate;
    for case in corpus_cases(precision) {
        let name = case.name.trim_end_matches("/dvle0");
        if ![
            "simple-transform",
            "skinning",
            "terrain-noise-512",
            "multi-light",
        ]
        .contains(&name)
        {
            continue;
        }
        let fixture: Vec<InputRegisters> = case.vertices.iter().cycle().take(N).copied().collect();
        for (inputs_name, vertices) in [("ordinary", ordinary(N, 3)), ("fixture", fixture)] {
            for (opt_level, regalloc, arithmetic) in [
                ("speed", "backtracking", SoaArithmetic::FlagUnusual),
                ("none", "single_pass", SoaArithmetic::FlagUnusual),
                ("none", "backtracking", SoaArithmetic::FlagUnusual),
                ("none", "backtracking", SoaArithmetic::FlagNaNs),
                ("none", "backtracking", SoaArithmetic::Exact),
            ] {
                let codegen = SoaCodegen {
                    opt_level,
                    regalloc,
                    arithmetic,
                };
                let start = std::time::Instant::now();
                let kernel = SoaJit::compile_with(
                    &case.program,
                    config(precision),
                    case.uniforms.bools,
                    case.uniforms.int,
                    ConstantLanes::NONE,
                    codegen,
                )
                .unwrap();
                let compile = start.elapsed();
                let layout = kernel.layout();
                let inputs = SoaBuffer::from_vertices(layout.inputs, &vertices);
                let mut outputs = SoaBuffer::zeroed(layout.outputs, N);
                let mut declined = Vec::new();
                let soa = ns_per_vertex(
                    || {
                        declined.clear();
                        let mut io =
                            BatchIo::new(inputs.inputs(), outputs.outputs(), None).unwrap();
                        kernel.run(&case.uniforms, &mut io, &mut declined);
                    },
                    N,
                );
                println!(
                    "{name:18} {inputs_name:8} {opt_level:5} {regalloc:12} {arithmetic:11?}: {soa:7.2} ns/vertex, compile {compile:?}, {} code bytes",
                    kernel.compile_stats().code_bytes
                );
            }
        }
    }
}

/// Products by zeros and ones of the float uniforms, in every form the kernel skips work for:
/// DP4 and DP3 rows of a matrix with zeros and a one, DPH, MUL and MAD by a zero and a one, a
/// one copied into a temporary (`w = 1` of a point), negated operands, and a relative read of
/// the same uniforms (not specialised).
const CONSTANT_LANES: &str = "
.fvec m[4], k
.constf ones(1.0, 1.0, 1.0, 1.0)
.in pos v0
.in other v1
.out o0 position
.out o1 color
.out o2 texcoord0
.proc main
    mov r1.xyz, pos
    mov r1.w, ones.w
    dp4 r0.x, m[0], r1
    dp4 r0.y, m[1], r1
    dp4 r0.z, m[2], r1
    dp3 r0.w, m[3], other
    mov o0, r0
    dph r2.x, other, m[1]
    mul r2.y, k.x, other.y
    mul r2.z, -k.y, other.z
    mad r2.w, other.w, k.x, r1.x
    mov o1, r2
    mad r3, other, k.yyyy, r1
    mova a0.x, ones.x
    dp4 r3.x, m[a0.x], other
    mov o2, r3
    end
.end
";

/// Inputs with every kind of value a skipped product could hide: NaNs (which a product by zero
/// keeps), infinities (inf·0 = 0), signed zeros, float24 subnormals, the range's ends.
fn constant_lane_vertices(count: usize) -> Vec<InputRegisters> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..count)
        .map(|i| {
            let mut v = [[0.0f32; 4]; 16];
            for reg in v.iter_mut().take(2) {
                for x in reg.iter_mut() {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    *x = if i % 3 == 0 {
                        f32::from_bits(SPECIALS[(state >> 8) as usize % SPECIALS.len()])
                    } else {
                        ((state >> 40) as i32 - (1 << 23)) as f32 / 65536.0
                    };
                }
            }
            v
        })
        .collect()
}

/// A kernel specialised on the zeros and ones of the uniforms gives the interpreter's bits on
/// every input, does measurably less (fewer IR instructions than the kernel that knows no
/// uniform), and declines a batch whose uniforms have another pattern rather than give it
/// wrong results.
#[test]
fn constant_lanes_skip_work_and_stay_exact() {
    let (program, mut uniforms) = assembled("constants.v.pica", CONSTANT_LANES);
    // A perspective-like matrix: zeros, a one, ordinary values; k = (0, 1, 3, 0).
    uniforms.float[0] = [1.5, 0.0, 0.0, 0.0];
    uniforms.float[1] = [0.0, 2.0, -0.0, 1.0];
    uniforms.float[2] = [0.0, 0.0, -1.0002, f32::from_bits(0x0000_0100)];
    uniforms.float[3] = [0.0, 0.0, -1.0, 0.0];
    uniforms.float[4] = [0.0, 1.0, 3.0, 0.0];
    let vertices = constant_lane_vertices(61);
    for precision in Precision::ALL {
        let config = config(precision);
        let candidates = ConstantLanes::candidates(&program);
        let constants = ConstantLanes::of(&uniforms, precision).within(&candidates);
        // Read as factors: m[0].yzw zero; m[1].xz zero and .w one; m[2].xy zero and .w, a
        // float24 subnormal, zero in the float24 modes only; m[3].xy zero (DP3 reads xyz);
        // k.x zero, k.y one; ones.w one (moved into a temporary). ones.x feeds MOVA only.
        let expected = if precision.is_f24() { 14 } else { 13 };
        assert_eq!(constants.count(), expected, "{precision:?}");
        let general = SoaJit::compile(&program, config, uniforms.bools, uniforms.int).unwrap();
        let special =
            SoaJit::compile_specialised(&program, config, uniforms.bools, uniforms.int, constants)
                .unwrap();
        for (name, kernel) in [("general", &general), ("specialised", &special)] {
            let declined = check_kernel(name, kernel, &program, config, &uniforms, &vertices);
            assert_eq!(declined, 0, "{name} {precision:?}");
        }
        let (g, s) = (general.compile_stats(), special.compile_stats());
        // In f32 mode a summed product is not rounded at all (its NaN becomes the sum's) and
        // a product by zero is kept outside dot products (its sign matters), so a vanishing
        // product saves little more than its multiply there.
        let at_most_tenths = if precision.is_f24() { 8 } else { 10 };
        assert!(
            s.ir_instructions * 10 < g.ir_instructions * at_most_tenths,
            "{precision:?}: specialised {} IR instructions, general {}",
            s.ir_instructions,
            g.ir_instructions
        );
        // Another pattern (a zero became 0.5): the specialised kernel declines every vertex,
        // and the engine's exact fallback gives the right bits.
        let mut moved = uniforms.clone();
        moved.float[0][1] = 0.5;
        assert!(!constants.hold_for(&moved, precision));
        let declined = check_kernel("moved", &special, &program, config, &moved, &vertices);
        assert_eq!(declined, vertices.len(), "{precision:?}");
        // The same pattern with other values elsewhere runs on the specialised kernel.
        let mut other_values = uniforms.clone();
        other_values.float[0][0] = -7.25;
        other_values.float[4][2] = f32::NAN;
        assert!(constants.hold_for(&other_values, precision));
        let declined = check_kernel(
            "other values",
            &special,
            &program,
            config,
            &other_values,
            &vertices,
        );
        assert_eq!(declined, 0, "{precision:?}");
    }
}

/// A kernel keeps the uniform table of its last batch and reuses it only when the next batch's
/// float uniforms have the same bits: batches whose uniforms differ in one component, or only in
/// the sign of a zero (equal as floats, not as bits), each get their own table, and every output
/// equals the interpreter's.
#[test]
fn batches_with_new_uniforms_get_a_new_uniform_table() {
    let (program, mut uniforms) = assembled(
        "table.v.pica",
        ".fvec a\n.fvec b\n.in p v0\n.out o0 position\n.out o1 color\n.proc main\n    \
         mov o0, a\n    mul o1, b, p\n    end\n.end\n",
    );
    let vertices = ordinary(8, 3);
    let config = config(Precision::F32);
    let kernel = SoaJit::compile(&program, config, uniforms.bools, uniforms.int).unwrap();
    let values: [Vec4; 4] = [
        [0.0, 1.0, 2.0, 3.0],
        [0.0, 1.0, 2.0, 3.5],
        [-0.0, 1.0, 2.0, 3.5],
        [0.0, 1.0, 2.0, 3.5],
    ];
    for (round, value) in values.iter().enumerate() {
        uniforms.float[0] = *value;
        uniforms.float[1] = *value;
        let what = format!("batch {round}");
        assert_eq!(
            check_kernel(&what, &kernel, &program, config, &uniforms, &vertices),
            0
        );
    }
}
