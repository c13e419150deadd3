//! The C functions that run vertices, batches and geometry invocations, called as C calls them.

use super::*;
use crate::capi::program::Program;

/// The SHBIN of one vertex-shader source file.
fn assembled(source: &str) -> crate::shbin::Shbin {
    let files = [crate::asm::SourceFile {
        name: "test.v.pica".into(),
        text: source.into(),
    }];
    crate::asm::assemble(&files, crate::asm::AsmOptions::default())
        .unwrap()
        .shbin
}

/// The C description of `shbin`'s first DVLE as a program of `stage`.
fn program_of(shbin: &crate::shbin::Shbin, stage: u32) -> Program {
    Program {
        code: shbin.code.as_ptr(),
        code_len: shbin.code.len(),
        opdescs: shbin.opdescs.as_ptr(),
        opdesc_len: shbin.opdescs.len(),
        entry: shbin.dvles[0].entry,
        stage,
        output_mask: shbin.dvles[0].output_mask,
    }
}

/// Vertices whose every register lane has its own value (some rounding in float24), lane
/// w an edge value ([`edge_values`]).
fn vertices(count: usize) -> Vec<InputRegisters> {
    let edges = edge_values();
    (0..count)
        .map(|i| {
            std::array::from_fn(|n| {
                std::array::from_fn(|lane| match lane {
                    3 => edges[(3 * i + n) % edges.len()],
                    _ => 0.1 + (1000 * i + 10 * n + lane) as f32,
                })
            })
        })
        .collect()
}

/// Values on every edge of the float24 range and rounding (and NaN payloads, zeros,
/// infinities).
fn edge_values() -> Vec<f32> {
    [
        0.0f32,
        -0.0,
        0.1,
        -0.1,
        1.0,
        f32::from_bits(1),
        f32::MIN_POSITIVE,
        f32::from_bits(0x2080_0000), // 2^-62, the smallest normal float24
        f32::from_bits(0x207F_FFFF), // just below it
        f32::from_bits(0x5F7F_FF80), // the largest finite float24
        f32::from_bits(0x5F7F_FFC0), // rounds up past it to nearest-even
        1e30,
        -1e30,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(0xFFC0_1234),
        1.000_000_1,
        f32::from_bits(0x3F80_007F),
        f32::from_bits(0x3F80_0040),
        f32::from_bits(0x3F80_00C0),
    ]
    .into()
}

/// One vertex's conversion (four lanes at once) gives `convert_f32`'s bits, the documented
/// one-value rule, on every edge of the float24 range and rounding, and leaves the registers
/// outside the set alone. The registers of a vertex hold different edges, so that vertices
/// with an unusual value (NaN, infinite, too large: the whole rule) in one register and
/// ordinary ones (the flagging form) in the others come up.
#[test]
fn a_vertex_converts_as_convert_f32_does() {
    let edges = edge_values();
    let registers: Vec<Vec4> = edges
        .chunks(4)
        .chain(edges[1..].chunks(4))
        .chain(edges[2..].chunks(4))
        .map(|chunk| {
            let mut register = [7.0; 4];
            register[..chunk.len()].copy_from_slice(chunk);
            register
        })
        .collect();
    let set = RegisterSet(0b0100_0000_0000_0011);
    for precision in Precision::ALL.into_iter().filter(|p| p.is_f24()) {
        for first in 0..registers.len() {
            let inputs: InputRegisters =
                std::array::from_fn(|n| registers[(first + n) % registers.len()]);
            let mut converted = [MaybeUninit::new([-3.0; 4]); 16];
            convert_registers(set, precision, &inputs, &mut converted);
            // SAFETY: every register started initialized and is written only with values.
            let converted = converted.map(|register| unsafe { register.assume_init() });
            for (n, got) in converted.iter().enumerate() {
                for lane in 0..4 {
                    let want = if set.contains(n) {
                        convert_f32(inputs[n][lane], precision)
                    } else {
                        -3.0
                    };
                    assert_eq!(
                        got[lane].to_bits(),
                        want.to_bits(),
                        "{precision:?} v{n} lane {lane} of {:?}",
                        inputs[n]
                    );
                }
            }
        }
    }
}

/// `picajit_run_vertices` with the program's output mask runs the batch kernel on the
/// vertex records (no planes): each vertex's outputs and flow registers are those
/// `picajit_run_vertex` gives it, bit for bit, in every precision, for whole groups and
/// partial ones, with attributes the float24 modes round, flush and range-check (and NaNs
/// and infinities, which send groups to the more exact kernels); the registers the program
/// does not write keep what they held.
#[test]
fn vertex_records_run_as_single_vertices_do() {
    use super::super::compile::picajit_engine_wait_compiled;
    use super::super::program::{
        Config, Layout, picajit_engine_create, picajit_engine_free, picajit_engine_layout,
    };
    use super::super::uniforms::{
        picajit_uniforms_create, picajit_uniforms_free, picajit_uniforms_set_float,
    };
    use super::super::{ENGINE_AUTO, ENGINE_SOA_JIT};
    let source = "\
.fvec scale
.in a v0
.in b v1
.out opos position
.out ocol color
.out otex texcoord0
.proc main
\tmov opos, a
\tmul r0, scale, a
\tadd ocol, r0, b
\trcp otex.x, b.x
\tdp4 otex.y, a, r0
\tmov otex.zw, b.zw
\tend
.end
";
    let shbin = assembled(source);
    let program = program_of(&shbin, 0);
    for precision in 0..3 {
        for kind in [ENGINE_SOA_JIT, ENGINE_AUTO] {
            let config = Config {
                engine: kind,
                precision,
                instruction_budget: 0,
            };
            let (mut engine, mut uniforms) = (std::ptr::null_mut(), std::ptr::null_mut());
            let mut layout = Layout::default();
            // SAFETY: valid pointers to live values; the handles are used only below.
            unsafe {
                assert_eq!(
                    picajit_engine_create(&program, &config, std::ptr::null(), &mut engine),
                    OK
                );
                assert_eq!(picajit_uniforms_create(&mut uniforms), OK);
                let scale = [0.5, -3.0, 1e-30, 7.1];
                assert_eq!(
                    picajit_uniforms_set_float(uniforms, 0, &scale, precision),
                    OK
                );
                assert_eq!(picajit_engine_wait_compiled(engine, uniforms), OK);
                assert_eq!(picajit_engine_layout(engine, &mut layout), OK);
            }
            for count in [0, 1, 3, 4, 5, 8, 9, 16, 17, 33] {
                let inputs = vertices(count);
                let mut outputs = vec![[[-7.0f32; 4]; 16]; count];
                let mut flow = vec![Flow::default(); count];
                let batch = Vertices {
                    count,
                    inputs: inputs.as_ptr(),
                    input_mask: layout.input_mask,
                    outputs: outputs.as_mut_ptr(),
                    output_mask: layout.output_mask,
                    flow: flow.as_mut_ptr(),
                    errors: std::ptr::null_mut(),
                    error_capacity: 0,
                };
                // SAFETY: live handles; the buffers hold `count` vertices and entries.
                assert_eq!(unsafe { picajit_run_vertices(engine, uniforms, &batch) }, 0);
                // SAFETY: a live engine handle.
                let ran = unsafe { &*engine }.records_declined() == 0;
                assert!(ran, "precision {precision}, engine {kind}: ran as records");
                for (i, vertex) in inputs.iter().enumerate() {
                    let mut want = [[0.0f32; 4]; 16];
                    let mut want_flow = Flow::default();
                    // SAFETY: live handles and valid registers.
                    let status = unsafe {
                        picajit_run_vertex(engine, uniforms, vertex, &mut want, &mut want_flow)
                    };
                    assert_eq!(status, OK);
                    for n in 0..16 {
                        let want = if layout.output_mask & 1 << n != 0 {
                            want[n]
                        } else {
                            [-7.0; 4]
                        };
                        assert_eq!(
                            outputs[i][n].map(f32::to_bits),
                            want.map(f32::to_bits),
                            "precision {precision}, engine {kind}, {count} vertices: \
                             vertex {i} o{n} of {vertex:?}"
                        );
                    }
                    assert_eq!(flow[i], want_flow, "vertex {i}");
                }
            }
            // SAFETY: the live handles, freed once.
            unsafe {
                picajit_engine_free(engine);
                picajit_uniforms_free(uniforms);
            }
        }
    }
}

/// `picajit_run_vertex` refuses each wrong argument with its status and a message naming
/// it, in the documented order of the checks, and writes nothing then; a failing invocation
/// returns its status with the outputs +0 and the flow registers zero; a good call after
/// them runs.
#[test]
fn run_vertex_names_each_wrong_argument_and_zeroes_a_failed_invocation() {
    use super::super::program::{picajit_engine_create, picajit_engine_free};
    use super::super::uniforms::{
        picajit_uniforms_create, picajit_uniforms_free, picajit_uniforms_set_float,
    };
    use super::super::{ERROR_BAD_ARGUMENT, ERROR_BREAK_OUTSIDE_LOOP, ERROR_NULL_POINTER};
    let message = || {
        // SAFETY: a NUL-terminated string that lives until the next failing call.
        unsafe { std::ffi::CStr::from_ptr(super::super::picajit_last_error_message()) }
            .to_string_lossy()
            .into_owned()
    };
    let moves = assembled(
        ".in a v0\n.in b v1\n.out opos position\n.proc main\n\tmova a0.x, b.x\n\
         \tcmp b.x, eq, eq, b.x\n\tmov opos, a\n\tend\n.end\n",
    );
    let breaks = assembled(".in a v0\n.out opos position\n.proc main\n\tbreak\n\tend\n.end\n");
    let create = |shbin: &crate::shbin::Shbin, stage: u32| {
        let program = program_of(shbin, stage);
        let mut engine = std::ptr::null_mut();
        // SAFETY: valid pointers to live values.
        let status = unsafe {
            picajit_engine_create(&program, std::ptr::null(), std::ptr::null(), &mut engine)
        };
        assert_eq!(status, OK, "{}", message());
        engine
    };
    let (engine, geometry, failing) = (create(&moves, 0), create(&moves, 1), create(&breaks, 0));
    let (mut uniforms, mut f32_uniforms) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: valid pointers; the handles are used only below.
    unsafe {
        assert_eq!(picajit_uniforms_create(&mut uniforms), OK);
        assert_eq!(picajit_uniforms_create(&mut f32_uniforms), OK);
        assert_eq!(
            picajit_uniforms_set_float(f32_uniforms, 0, &[1.0; 4], 2),
            OK
        );
    }
    let mut inputs: InputRegisters = [[0.0; 4]; 16];
    inputs[0] = [1.0, 2.0, 3.0, 4.0];
    inputs[1] = [2.0, 0.0, 0.0, 0.0];
    let untouched = [[-7.0f32; 4]; 16];
    let mut outputs = untouched;
    let mut flow = Flow {
        a0: [9, 9],
        al: 9,
        cmp: [9, 9],
        reserved: [0; 2],
    };
    let mut storage = [0u64; 3];
    let misaligned_flow = (storage.as_mut_ptr() as *mut u8).wrapping_add(1) as *mut Flow;
    let out: *mut [Vec4; 16] = &mut outputs;
    let null_engine = std::ptr::null();
    let null_uniforms = std::ptr::null();
    let null_inputs = std::ptr::null();
    let null_outputs = std::ptr::null_mut();
    /// What is wrong, the status, the word the message names, and the arguments.
    type Case<'a> = (
        &'a str,
        i32,
        &'a str,
        *const EngineHandle,
        *const UniformsHandle,
        *const InputRegisters,
        *mut [Vec4; 16],
        *mut Flow,
    );
    let cases: [Case; 7] = [
        (
            "null engine",
            ERROR_NULL_POINTER,
            "engine",
            null_engine,
            uniforms,
            &inputs,
            out,
            &mut flow,
        ),
        (
            "null uniforms",
            ERROR_NULL_POINTER,
            "uniforms",
            engine,
            null_uniforms,
            &inputs,
            out,
            &mut flow,
        ),
        (
            "null inputs",
            ERROR_NULL_POINTER,
            "inputs",
            engine,
            uniforms,
            null_inputs,
            out,
            &mut flow,
        ),
        (
            "null outputs",
            ERROR_NULL_POINTER,
            "outputs",
            engine,
            uniforms,
            &inputs,
            null_outputs,
            &mut flow,
        ),
        (
            "misaligned flow",
            ERROR_BAD_ARGUMENT,
            "flow",
            engine,
            uniforms,
            &inputs,
            out,
            misaligned_flow,
        ),
        (
            "a geometry shader",
            ERROR_BAD_ARGUMENT,
            "engine",
            geometry,
            uniforms,
            &inputs,
            out,
            &mut flow,
        ),
        (
            "uniforms converted under f32",
            ERROR_BAD_ARGUMENT,
            "precision",
            engine,
            f32_uniforms,
            &inputs,
            out,
            &mut flow,
        ),
    ];
    for (what, status, named, engine, uniforms, inputs, outputs, flow) in cases {
        // SAFETY: each pointer is null, misaligned (refused before use) or valid.
        let got = unsafe { picajit_run_vertex(engine, uniforms, inputs, outputs, flow) };
        let text = message();
        assert_eq!(got, status, "{what}: {text}");
        assert!(
            text.starts_with("picajit_run_vertex: ") && text.contains(named),
            "{what}: {text}"
        );
    }
    assert_eq!(
        outputs.map(|r| r.map(f32::to_bits)),
        untouched.map(|r| r.map(f32::to_bits))
    );
    assert_eq!(
        (flow.a0, flow.al, flow.cmp),
        ([9, 9], 9, [9, 9]),
        "nothing written"
    );

    // SAFETY: live handles and valid buffers.
    let got = unsafe { picajit_run_vertex(failing, uniforms, &inputs, &mut outputs, &mut flow) };
    assert_eq!(got, ERROR_BREAK_OUTSIDE_LOOP, "{}", message());
    assert!(message().starts_with("picajit_run_vertex: break-outside-loop"));
    assert!(
        outputs.iter().flatten().all(|x| x.to_bits() == 0),
        "+0 outputs"
    );
    assert_eq!(flow, Flow::default(), "zero flow registers");

    // SAFETY: live handles and valid buffers.
    let got = unsafe { picajit_run_vertex(engine, uniforms, &inputs, &mut outputs, &mut flow) };
    assert_eq!(got, OK, "{}", message());
    assert_eq!(outputs[0], [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(
        (flow.a0, flow.cmp),
        ([2, 0], [1, 1]),
        "mova a0.x = 2, cmp equal"
    );
    // SAFETY: the live handles, freed once.
    unsafe {
        for engine in [engine, geometry, failing] {
            picajit_engine_free(engine);
        }
        picajit_uniforms_free(uniforms);
        picajit_uniforms_free(f32_uniforms);
    }
}

/// A batch's conversion gives `convert_f32`'s bits in the registers of the set and leaves
/// the others alone, for batches of ordinary attributes only (the flagging form's results)
/// and with one unusual attribute among them (every vertex through the whole rule).
#[test]
fn a_batch_converts_as_convert_f32_does() {
    let set = RegisterSet(0b1000_0000_0010_0101);
    let ordinary: Vec<InputRegisters> = vertices(9)
        .into_iter()
        .map(|vertex| vertex.map(|register| [register[0], register[1], register[2], -0.0]))
        .collect();
    let mut unusual = ordinary.clone();
    unusual[6][5][1] = f32::NAN;
    let mut also_unusual = ordinary.clone();
    also_unusual[2][0][2] = 1e30;
    for precision in Precision::ALL.into_iter().filter(|p| p.is_f24()) {
        for (what, inputs) in [
            ("ordinary", &ordinary),
            ("a NaN in the set", &unusual),
            ("1e30 in the set", &also_unusual),
            ("edges", &vertices(13)),
        ] {
            let mut converted = vec![[[-3.0; 4]; 16]; inputs.len()];
            convert_records(set, precision, inputs, &mut converted);
            for (i, (vertex, got)) in inputs.iter().zip(&converted).enumerate() {
                for n in 0..16 {
                    let want = if set.contains(n) {
                        vertex[n].map(|x| convert_f32(x, precision))
                    } else {
                        [-3.0; 4]
                    };
                    assert_eq!(
                        got[n].map(f32::to_bits),
                        want.map(f32::to_bits),
                        "{precision:?}, {what}: vertex {i} v{n}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_vertex_layout_goes_to_planes_and_back_for_any_count() {
    let set = RegisterSet(0b1000_0000_0010_0101);
    for precision in Precision::ALL {
        // Longer leftovers of an earlier call first: the planes are not cleared.
        let mut planes = vec![f32::NAN; 1000];
        for count in (0..=9).rev() {
            let vertices = vertices(count);
            let got = vertices_to_planes(&vertices, set, precision, &mut planes).to_vec();
            assert_eq!(got.len(), set.planes() * count);
            for (slot, n) in set.iter().enumerate() {
                for lane in 0..4 {
                    for (i, vertex) in vertices.iter().enumerate() {
                        let want = convert_f32(vertex[n][lane], precision);
                        let at = (4 * slot + lane) * count + i;
                        assert_eq!(got[at].to_bits(), want.to_bits(), "{precision:?} {count}");
                    }
                }
            }
            let mut back = vec![[[-7.0; 4]; 16]; count];
            planes_to_vertices(&got, set, &mut back);
            for (vertex, original) in back.iter().zip(&vertices) {
                for n in 0..16 {
                    let want = if set.contains(n) {
                        original[n].map(|x| convert_f32(x, precision))
                    } else {
                        [-7.0; 4]
                    };
                    let bits = |v: Vec4| v.map(f32::to_bits);
                    assert_eq!(bits(vertex[n]), bits(want), "{precision:?} {count} r{n}");
                }
            }
        }
    }
}
