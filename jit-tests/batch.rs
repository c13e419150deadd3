//! The batch interface: every engine's `run_batch` gives exactly what its per-vertex
//! `run_vertex` gives (outputs, final flow registers, errors in vertex order), on every corpus
//! vertex program with adversarial values mixed into its inputs; a batch on any number of threads
//! is bit-identical to one thread; malformed buffers are errors, not panics.

use std::path::PathBuf;

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::document::input::parse_input_for;
use picajit::engine::parallel::{run_batch_chunked, run_batch_threads};
use picajit::engine::{EngineKind, prepare};
use picajit::exec::{
    ALL_FLOAT_UNIFORMS, BatchError, BatchIo, BatchLayout, ExecConfig, ExecError, RegisterSet,
    ShaderEngine, SoaBuffer, SoaInputs, SoaOutputs,
};
use picajit::float24::Precision;
use picajit::program::{FlowRegisters, InputRegisters, ShaderKind, ShaderProgram, Uniforms};

/// A corpus vertex program with its uniforms and fixture inputs.
struct Case {
    name: String,
    program: ShaderProgram,
    uniforms: Uniforms,
    inputs: Vec<InputRegisters>,
}

fn corpus_vertex_programs(precision: Precision) -> Vec<Case> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus/programs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let mut cases = Vec::new();
    for dir in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "pica"))
            .collect();
        files.sort();
        let sources: Vec<SourceFile> = files
            .iter()
            .map(|p| SourceFile {
                name: p.display().to_string(),
                text: std::fs::read_to_string(p).unwrap(),
            })
            .collect();
        let assembly = assemble(&sources, AsmOptions::default()).unwrap();
        let shbin = &assembly.shbin;
        let dvle = &shbin.dvles[0];
        if dvle.kind != ShaderKind::Vertex {
            continue;
        }
        let program = ShaderProgram::from_shbin(shbin, 0).unwrap();
        let text = std::fs::read_to_string(dir.join("dvle0.input.json")).unwrap();
        let input = parse_input_for(&text, precision, dvle).unwrap();
        let mut uniforms = Uniforms::from_constants(dvle);
        input.apply_uniforms(&mut uniforms);
        let inputs = input.invocations.iter().map(|i| i.registers).collect();
        cases.push(Case {
            name: dir.file_name().unwrap().to_string_lossy().into_owned(),
            program,
            uniforms,
            inputs,
        });
    }
    cases
}

/// Values that take the rare paths: NaNs, infinities, signed zeros, float24 subnormals and
/// range ends, numbers that overflow when multiplied.
const ODD: [u32; 10] = [
    0x7FC0_0000,
    0xFF80_0001,
    0x7F80_0000,
    0xFF80_0000,
    0x8000_0000,
    0x2000_0001,
    0x5F7F_FF80,
    0x5F00_0000,
    0x3F80_0000,
    0xBF00_0000,
];

/// The fixture's vertices repeated to `count`, every 7th vertex with one odd value.
fn batch_inputs(fixture: &[InputRegisters], count: usize) -> Vec<InputRegisters> {
    (0..count)
        .map(|i| {
            let mut v = fixture[i % fixture.len()];
            if i % 7 == 3 {
                let odd = f32::from_bits(ODD[(i / 7) % ODD.len()]);
                v[(i / 3) % 16][i % 4] = odd;
            }
            v
        })
        .collect()
}

type Outcome = (Vec<f32>, Vec<FlowRegisters>, Vec<(usize, ExecError)>);

/// Runs `vertices` on `threads` threads: split as `run_batch_threads` decides from the work, or
/// in chunks of `chunk` vertices, so that the split is certain whatever the machine's speed.
fn run(
    engine: &dyn ShaderEngine,
    uniforms: &Uniforms,
    vertices: &[InputRegisters],
    threads: usize,
    chunk: Option<usize>,
) -> Outcome {
    let layout = BatchLayout::of(engine.program());
    let inputs = SoaBuffer::from_vertices(layout.inputs, vertices);
    let mut outputs = SoaBuffer::zeroed(layout.outputs, vertices.len());
    let mut flow = vec![FlowRegisters::default(); vertices.len()];
    let mut errors = Vec::new();
    let io = BatchIo::new(inputs.inputs(), outputs.outputs(), Some(&mut flow)).unwrap();
    match chunk {
        Some(chunk) => run_batch_chunked(engine, threads, chunk, uniforms, io, &mut errors),
        None => run_batch_threads(engine, threads, uniforms, io, &mut errors),
    }
    let planes = (0..layout.outputs.planes())
        .flat_map(|k| outputs.plane(k).to_vec())
        .collect();
    (planes, flow, errors)
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn every_engine_batch_equals_its_single_vertex_runs() {
    for precision in Precision::ALL {
        let config = ExecConfig {
            precision,
            ..ExecConfig::default()
        };
        for case in corpus_vertex_programs(precision) {
            let vertices = batch_inputs(&case.inputs, 301);
            let reference = prepare(EngineKind::Interpreter, case.program.clone(), config).unwrap();
            let layout = BatchLayout::of(&case.program);
            // The per-vertex results of the reference, laid out as planes.
            let mut expected_planes = vec![Vec::new(); layout.outputs.planes()];
            let mut expected_flow = Vec::new();
            let mut expected_errors = Vec::new();
            for (i, v) in vertices.iter().enumerate() {
                let (outputs, flow) = match reference.run_vertex(&case.uniforms, v) {
                    Ok(r) => (r.outputs, r.flow),
                    Err(e) => {
                        expected_errors.push((i, e));
                        ([[0.0; 4]; 16], FlowRegisters::default())
                    }
                };
                for (slot, n) in layout.outputs.iter().enumerate() {
                    for c in 0..4 {
                        expected_planes[4 * slot + c].push(outputs[n][c]);
                    }
                }
                expected_flow.push(flow);
            }
            let expected_planes: Vec<f32> = expected_planes.concat();
            for kind in EngineKind::ALL {
                let engine = prepare(kind, case.program.clone(), config).unwrap();
                let (planes, flow, errors) = run(&*engine, &case.uniforms, &vertices, 1, None);
                let what = format!("{} {kind} {precision}", case.name);
                assert_eq!(bits(&planes), bits(&expected_planes), "{what}: outputs");
                assert_eq!(flow, expected_flow, "{what}: flow registers");
                assert_eq!(errors, expected_errors, "{what}: errors");
            }
        }
    }
}

#[test]
fn threads_change_nothing() {
    let config = ExecConfig::default();
    for case in corpus_vertex_programs(config.precision).iter().take(6) {
        // Big enough to be cut into chunks, not a multiple of the chunk alignment.
        let vertices = batch_inputs(&case.inputs, 5 * 1024 + 37);
        for kind in EngineKind::ALL {
            let engine = prepare(kind, case.program.clone(), config).unwrap();
            let one = run(&*engine, &case.uniforms, &vertices, 1, None);
            for (threads, chunk) in [
                (2, None),
                (3, None),
                (8, None),
                (2, Some(1008)),
                (3, Some(48)),
            ] {
                let many = run(&*engine, &case.uniforms, &vertices, threads, chunk);
                assert_eq!(
                    bits(&many.0),
                    bits(&one.0),
                    "{} {kind} {threads} threads, chunks {chunk:?}",
                    case.name
                );
                assert_eq!(many.1, one.1, "{} {kind} {threads} threads", case.name);
                assert_eq!(many.2, one.2, "{} {kind} {threads} threads", case.name);
            }
        }
    }
}

/// A program whose vertices fail depending on their input (BREAK outside a loop when v0.x < 0):
/// the errors arrive in vertex order with the right indices from every engine and thread count,
/// and a failed vertex's outputs read +0.
#[test]
fn failures_are_reported_sparsely_in_vertex_order() {
    // cmp.x = 0 > v0.x; breakc cmp.x; mov o0, v0; end
    let source = ".constf zero(0.0, 0.0, 0.0, 0.0)\n.out outpos position\n.proc main\n    cmp zero, gt, gt, v0\n    breakc cmp.x\n    mov outpos, v0\n    end\n.end\n";
    let assembly = assemble(
        &[SourceFile {
            name: "fail.v.pica".into(),
            text: source.into(),
        }],
        AsmOptions::default(),
    )
    .unwrap();
    let program = ShaderProgram::from_shbin(&assembly.shbin, 0).unwrap();
    let uniforms = Uniforms::from_constants(&assembly.shbin.dvles[0]);
    let vertices: Vec<InputRegisters> = (0..4000)
        .map(|i| {
            let mut v = [[1.0, 2.0, 3.0, 4.0]; 16];
            v[0][0] = if i % 97 == 5 { -1.0 } else { i as f32 };
            v
        })
        .collect();
    let failing: Vec<usize> = (0..4000).filter(|i| i % 97 == 5).collect();
    for kind in EngineKind::ALL {
        let engine = prepare(kind, program.clone(), ExecConfig::default()).unwrap();
        for (threads, chunk) in [
            (1, None),
            (2, None),
            (4, None),
            (2, Some(304)),
            (4, Some(80)),
        ] {
            let (planes, _, errors) = run(&*engine, &uniforms, &vertices, threads, chunk);
            let indices: Vec<usize> = errors.iter().map(|(i, _)| *i).collect();
            assert_eq!(
                indices, failing,
                "{kind} {threads} threads, chunks {chunk:?}"
            );
            assert!(errors.iter().all(|(_, e)| e.kind() == "break-outside-loop"));
            // Plane 0 is o0.x: +0 for failed vertices, v0.x for the others.
            for (i, x) in planes[..4000].iter().enumerate() {
                let expected = if i % 97 == 5 { 0.0 } else { i as f32 };
                assert_eq!(x.to_bits(), f32::to_bits(expected), "{kind} vertex {i}");
            }
        }
    }
}

#[test]
fn malformed_buffers_are_errors() {
    let set = RegisterSet(0b101);
    let data = vec![0.0f32; 8 * 10];
    assert_eq!(
        SoaInputs::new(&data, set, 11, 10).unwrap_err(),
        BatchError::StrideTooSmall {
            buffer: "inputs",
            stride: 10,
            count: 11
        }
    );
    assert_eq!(
        SoaInputs::new(&data[..79], set, 10, 10).unwrap_err(),
        BatchError::BufferTooShort {
            buffer: "inputs",
            needed: 80,
            len: 79
        }
    );
    assert!(SoaInputs::new(&data, set, 10, 10).is_ok());
    // The last plane only needs `count` values.
    assert!(SoaInputs::new(&data[..77], set, 7, 10).is_ok());
    let mut out = vec![0.0f32; 4 * 9];
    let outputs = SoaOutputs::new(&mut out, RegisterSet(1), 9, 9).unwrap();
    let inputs = SoaInputs::new(&data, set, 10, 10).unwrap();
    let error = BatchIo::new(inputs, outputs, None).unwrap_err();
    assert_eq!(
        error,
        BatchError::CountMismatch {
            buffer: "outputs",
            count: 9,
            expected: 10
        }
    );
    assert_eq!(
        error.to_string(),
        "outputs: 9 vertices, but the inputs have 10"
    );
    // An absurd stride cannot overflow the size check.
    assert!(SoaInputs::new(&data, set, 1, usize::MAX / 2).is_err());
}

/// The program of one `.proc main` body (with an output `outpos`).
fn program_of(body: &str) -> ShaderProgram {
    let source = format!(".out outpos position\n.proc main\n{body}.end\n");
    let assembly = assemble(
        &[SourceFile {
            name: "layout.v.pica".into(),
            text: source,
        }],
        AsmOptions::default(),
    )
    .unwrap();
    ShaderProgram::from_shbin(&assembly.shbin, 0).unwrap()
}

#[test]
fn layout_names_the_inputs_reachable_code_reads() {
    // mov o0, v3; end; then unreachable reads of v5.
    let program = program_of("    mov outpos, v3\n    end\n    mov outpos, v5\n");
    let layout = BatchLayout::of(&program);
    assert_eq!(layout.inputs, RegisterSet(1 << 3));
    assert_eq!(layout.outputs, RegisterSet(program.output_mask));
    assert_eq!(layout.uniforms, 0);
}

#[test]
fn layout_names_the_float_uniforms_reachable_code_reads() {
    // c3 and c7 read, c9 only by unreachable code.
    let fixed =
        program_of("    mul r0, c3, v0\n    add outpos, c7, r0\n    end\n    mov outpos, c9\n");
    assert_eq!(BatchLayout::of(&fixed).uniforms, 1 << 3 | 1 << 7);
    // A relatively addressed read can reach any of them.
    let relative = program_of("    mova a0.x, v0\n    mov outpos, c3[a0.x]\n    end\n");
    assert_eq!(BatchLayout::of(&relative).uniforms, ALL_FLOAT_UNIFORMS);
    // What a cache keyed on those registers compares: c3 and c7, not c9.
    let mut a = Uniforms::default();
    let mut b = a.clone();
    b.float[9] = [1.0; 4];
    assert!(b.floats_are(&a.float, 1 << 3 | 1 << 7));
    assert!(!b.floats_are(&a.float, ALL_FLOAT_UNIFORMS));
    b.float[7][2] = -0.0;
    assert!(
        !b.floats_are(&a.float, 1 << 3 | 1 << 7),
        "the sign of a zero counts"
    );
    a.float[7][2] = -0.0;
    a.float[9] = [1.0; 4];
    assert!(b.floats_are(&a.float, ALL_FLOAT_UNIFORMS));
    // Registers past c63 (the set's upper half) count too, and only those in the set.
    b.float[70][3] = 2.0;
    assert!(!b.floats_are(&a.float, 1 << 3 | 1 << 70));
    assert!(b.floats_are(&a.float, 1 << 3 | 1 << 69 | 1 << 71));
}
