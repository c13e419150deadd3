//! Geometry shaders: EMIT and SETEMIT, the double-banked outputs, the never-cleared vertex slots,
//! b15 after the first invocation, and state that persists across invocations.

mod common;

use common::*;
use picajit::exec::{EmitConfig, ExecError, GeometryResult, GeometryState};
use picajit::program::Uniforms;

#[test]
fn emit_switches_output_banks() {
    // Invocation 1: bank 0 gets o0 = c1 and is emitted; bank 1 gets only o0.x = c2, so its y, z,
    // w still hold bank 1's initial zeros; a third EMIT without writes sends bank 0 again, which
    // still holds c1 from two EMITs earlier.
    let mut b = Builder::new();
    b.ops("mov o0, c1; emit; mov o0.x, c2; emit; emit; end");
    let u = uniforms(&[(1, [1.0, 2.0, 3.0, 4.0]), (2, [9.0; 4])]);
    let (state, results) = run_gs(&b, &u, &[inputs(&[])]);
    let vertices = &results[0].as_ref().unwrap().vertices;
    assert_eq!(vertices.len(), 3);
    assert_bits(vertices[0].outputs[0], [1.0, 2.0, 3.0, 4.0]);
    assert_bits(vertices[1].outputs[0], [9.0, 0.0, 0.0, 0.0]);
    assert_bits(vertices[2].outputs[0], [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(state.bank, 1, "three switches from bank 0");
}

#[test]
fn banks_and_registers_persist_across_invocations() {
    // Each invocation adds c0 to r0 and emits it; the count grows across invocations.
    let mut b = Builder::new();
    b.ops("add r0, c0, r0; mov o1, r0; emit; end");
    let u = uniforms(&[(0, [1.0; 4])]);
    let (state, results) = run_gs(&b, &u, &[inputs(&[]), inputs(&[]), inputs(&[])]);
    let counts: Vec<f32> = results
        .iter()
        .map(|r| r.as_ref().unwrap().vertices[0].outputs[1][0])
        .collect();
    assert_eq!(counts, [1.0, 2.0, 3.0]);
    assert_eq!(state.registers.temp[0][0], 3.0);
    assert_eq!(state.bank, 1);
}

#[test]
fn b15_reads_true_after_the_first_invocation() {
    let mut b = Builder::new();
    b.ops("ifu b15, 0x003, 1; mov o0, c1; nop; mov o0, c2; emit; end");
    // then [1, 3) when b15; else [3, 4)
    let u = uniforms(&[(1, [1.0; 4]), (2, [2.0; 4])]);
    let (_, results) = run_gs(&b, &u, &[inputs(&[]), inputs(&[]), inputs(&[])]);
    let seen: Vec<f32> = results
        .iter()
        .map(|r| r.as_ref().unwrap().vertices[0].outputs[0][0])
        .collect();
    assert_eq!(
        seen,
        [2.0, 1.0, 1.0],
        "b15 is false only in the first invocation"
    );
}

#[test]
fn setemit_flags_triangles_and_strips() {
    // A strip: slots are never cleared, so after the first triangle each new vertex replaces one
    // slot and emits another triangle with the other two slots' old vertices.
    let mut b = Builder::new();
    b.ops(
        "setemit 0; mov o0, v0; emit
         setemit 1; mov o0, v1; emit
         setemit 2, prim; mov o0, v2; emit
         setemit 0, prim inv; mov o0, v3; emit
         end",
    );
    let v = inputs(&[(0, [0.0; 4]), (1, [1.0; 4]), (2, [2.0; 4]), (3, [3.0; 4])]);
    let (state, results) = run_gs(&b, &Uniforms::default(), &[v]);
    let result = results[0].as_ref().unwrap();
    let configs: Vec<EmitConfig> = result.vertices.iter().map(|v| v.config).collect();
    assert_eq!(
        configs,
        [
            EmitConfig {
                vertex: 0,
                primitive: false,
                winding: false
            },
            EmitConfig {
                vertex: 1,
                primitive: false,
                winding: false
            },
            EmitConfig {
                vertex: 2,
                primitive: true,
                winding: false
            },
            EmitConfig {
                vertex: 0,
                primitive: true,
                winding: true
            },
        ]
    );
    assert_eq!(result.primitives.len(), 2);
    let first: Vec<f32> = result.primitives[0]
        .vertices
        .iter()
        .map(|v| v[0][0])
        .collect();
    let second: Vec<f32> = result.primitives[1]
        .vertices
        .iter()
        .map(|v| v[0][0])
        .collect();
    assert_eq!(first, [0.0, 1.0, 2.0]);
    assert_eq!(
        second,
        [3.0, 1.0, 2.0],
        "slot 0 replaced, slots 1 and 2 kept"
    );
    assert!(!result.primitives[0].winding && result.primitives[1].winding);
    assert_eq!(
        state.emit, configs[3],
        "the SETEMIT state is not reset by EMIT"
    );
}

#[test]
fn emit_with_vertex_3_is_an_error() {
    let mut b = Builder::new();
    b.ops("setemit 3; emit; end");
    let (state, results) = run_gs(&b, &Uniforms::default(), &[inputs(&[]), inputs(&[])]);
    assert_eq!(results[0], Err(ExecError::InvalidEmitVertex { pc: 1 }));
    assert_eq!(
        results[0].as_ref().unwrap_err().kind(),
        "invalid-emit-vertex"
    );
    assert!(state.invoked, "a failed invocation still counts for b15");
}

#[test]
fn emit_and_setemit_do_nothing_in_a_vertex_shader() {
    let mut b = Builder::new();
    b.ops("mov o0, c1; setemit 3; emit; mov o1, c1; end");
    let result = run_vs(
        &b,
        Default::default(),
        &uniforms(&[(1, [5.0; 4])]),
        &inputs(&[]),
    )
    .unwrap();
    assert_eq!(result.outputs[0][0], 5.0);
    assert_eq!(
        result.outputs[1][0], 5.0,
        "o1 is written after the EMIT, in the same registers"
    );
}

#[test]
fn writes_after_the_last_emit_stay_in_the_bank() {
    // Written after the EMIT in invocation 1 (bank 1), emitted by invocation 2.
    let mut b = Builder::new();
    b.ops("ifu b15, 0x003, 0; mov o2.x, c1; emit; mov o2.y, c2; end");
    // First invocation: b15 is false, so the IFU jumps to 3: only o2.y = 7 is written (bank 0).
    let u = uniforms(&[(1, [1.0; 4]), (2, [7.0; 4])]);
    let (_, results) = run_gs(&b, &u, &[inputs(&[]), inputs(&[])]);
    assert!(
        results[0].as_ref().unwrap().vertices.is_empty(),
        "first invocation skips the EMIT"
    );
    // Invocation 2 writes o2.x = 1 into the same bank and emits it with the old y.
    let second = &results[1].as_ref().unwrap().vertices[0];
    assert_bits(second.outputs[2], [1.0, 7.0, 0.0, 0.0]);
}

#[test]
fn a_vertex_stage_program_emits_nothing_even_as_a_geometry_invocation() {
    // EMIT and SETEMIT do nothing in a vertex shader, however it is run: both engines decide by
    // the program's stage.
    let mut b = Builder::new();
    b.ops("setemit 1, prim; mov o0, c1; emit; mov o0, c2; end");
    let u = uniforms(&[(1, [1.0; 4]), (2, [2.0; 4])]);
    let program = b.program(picajit::program::ShaderKind::Vertex);
    let config = picajit::exec::ExecConfig::default();
    let names = ["interp", "jit"];
    let mut states = [GeometryState::default(), GeometryState::default()];
    let mut sent = [GeometryResult::default(), GeometryResult::default()];
    let engines = picajit::engine::EngineKind::ALL
        .map(|kind| picajit::engine::prepare(kind, program.clone(), config).unwrap());
    let mut outcomes = Vec::new();
    for ((engine, state), sink) in engines.iter().zip(&mut states).zip(&mut sent) {
        outcomes.push(engine.run_geometry(state, &u, &inputs(&[]), sink));
    }
    assert!(outcomes.iter().all(|o| o.is_ok()));
    assert!(
        sent.iter()
            .all(|s| s.vertices.is_empty() && s.primitives.is_empty())
    );
    assert_eq!(states[0].emit, EmitConfig::default(), "SETEMIT did nothing");
    assert_eq!(states[0].bank, 0, "no bank switch");
    let difference = picajit::difftest::compare::state_difference(&states[0], &states[1], names);
    assert_eq!(difference, None);
    assert_bits(states[0].banks[0][0], [2.0; 4]);
}

/// Counts what it is sent and keeps a running checksum of the bits, nothing else.
#[derive(Default, PartialEq, Debug)]
struct CountingSink {
    vertices: u64,
    primitives: u64,
    checksum: u64,
}

impl picajit::exec::EmitSink for CountingSink {
    fn vertex(&mut self, config: EmitConfig, outputs: &[picajit::program::Vec4; 16]) {
        self.vertices += 1;
        self.checksum = self
            .checksum
            .rotate_left(5)
            .wrapping_add(outputs[0][0].to_bits() as u64 ^ config.vertex as u64);
    }

    fn primitive(&mut self, winding: bool, slots: &[[picajit::program::Vec4; 16]; 3]) {
        self.primitives += 1;
        self.checksum = self
            .checksum
            .rotate_left(7)
            .wrapping_add(slots[2][0][1].to_bits() as u64 + winding as u64);
    }
}

#[test]
fn emission_streams_to_the_sink() {
    // Two nested loops of 256 passes around EMIT: 65,536 vertices and as many triangles from
    // one invocation, handed to the sink one by one (the engines keep none of them).
    let mut b = Builder::new();
    b.ops("setemit 0, prim"); //        0
    b.ops("loop i0, 0x006"); //                 1: body [2, 6]
    b.ops("loop i1, 0x005"); //                 2: body [3, 5]
    b.ops("add r0, c0, r0; mov o0, r0; emit"); // 3-5
    b.ops("nop; end"); //                       6, 7
    let mut u = uniforms(&[(0, [1.0; 4])]);
    u.int[0] = [255, 0, 0, 0];
    u.int[1] = [255, 0, 0, 0];
    let program = b.program(picajit::program::ShaderKind::Geometry);
    let config = picajit::exec::ExecConfig::default();
    let mut sinks = Vec::new();
    for kind in picajit::engine::EngineKind::ALL {
        let engine = picajit::engine::prepare(kind, program.clone(), config).unwrap();
        let mut state = GeometryState::default();
        let mut sink = CountingSink::default();
        engine
            .run_geometry(&mut state, &u, &inputs(&[]), &mut sink)
            .expect("the invocation ends");
        sinks.push(sink);
    }
    assert_eq!(sinks[0].vertices, 256 * 256);
    assert_eq!(sinks[0].primitives, 256 * 256);
    assert_eq!(sinks[0], sinks[1], "both engines send the same stream");
}
