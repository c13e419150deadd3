//! The software GPU's front half on scenes built with the builder API: command buffers, the
//! vertex loader (every component type, alignment, padding, fixed and default attributes),
//! indexed draws and the post-transform cache, topologies, immediate mode, the geometry
//! shader's three input modes, threads, and malformed input. Expected values come from the
//! bytes the tests write and the hardware rules in docs/gpu.md, not from the code under test.

use picajit::asm::{AsmOptions, SourceFile, assemble};
use picajit::engine::EngineKind;
use picajit::float24::Precision;
use picajit::gpu::builder::{Attribute, Element, GeometryProgram, Indices, SceneBuilder, Stage};
use picajit::gpu::front::command::CommandWriter;
use picajit::gpu::front::trace::{self, Trace, TraceError, TraceOp};
use picajit::gpu::geometry::assembly::Topology;
use picajit::gpu::geometry::loader::ComponentType;
use picajit::gpu::regs::id;
use picajit::gpu::regs::semantic;
use picajit::gpu::{Gpu, GpuConfig, GpuError, Triangle};
use picajit::shbin::Shbin;

mod common;

use common::XorShift;

fn shbin(sources: &[&str]) -> Shbin {
    let files: Vec<SourceFile> = sources
        .iter()
        .enumerate()
        .map(|(k, text)| SourceFile {
            name: format!("{k}.pica"),
            text: text.to_string(),
        })
        .collect();
    assemble(&files, AsmOptions::default())
        .expect("test shader assembles")
        .shbin
}

/// o0 = v0 (position), o1 = v1 (colour).
const PASS_THROUGH: &str = "
.out outPos position
.out outColor color
.alias inPos v0
.alias inColor v1
.proc main
    mov outPos, inPos
    mov outColor, inColor
    end
.end
";

/// Four inputs to position, quaternion, colour and view (x, y, z).
const FOUR_OUTPUTS: &str = "
.out o0pos position
.out o1quat normalquat
.out o2col color
.out o3view view
.proc main
    mov o0pos, v0
    mov o1quat, v1
    mov o2col, v2
    mov o3view.xyz, v3.xyz
    end
.end
";

fn config(engine: EngineKind, threads: usize) -> GpuConfig {
    GpuConfig {
        engine,
        threads,
        ..GpuConfig::default()
    }
}

/// Replays `trace` and returns the GPU with every triangle it produced.
fn replay_with(trace: &Trace, config: GpuConfig) -> Result<(Gpu, Vec<Triangle>), GpuError> {
    let mut gpu = Gpu::new(config);
    gpu.capture_triangles();
    let mut gpu = trace::replay(trace, gpu, None, |_, _| {})?.gpu;
    let triangles = gpu.take_triangles();
    Ok((gpu, triangles))
}

fn replay(trace: &Trace) -> (Gpu, Vec<Triangle>) {
    replay_with(trace, config(EngineKind::Interpreter, 1)).expect("the scene replays")
}

fn floats(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn positions(triangles: &[Triangle]) -> Vec<[[f32; 4]; 3]> {
    triangles.iter().map(|t| t.map(|v| v.position())).collect()
}

/// A builder with the pass-through program bound and (position: 4 floats, colour: 4 ubytes)
/// vertices in one array.
fn pass_through_scene(vertices: &[([f32; 4], [u8; 4])]) -> SceneBuilder {
    let program = shbin(&[PASS_THROUGH]);
    let mut scene = SceneBuilder::new();
    scene.program(&program, 0, None);
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 4),
        Attribute::new(1, ComponentType::UnsignedByte, 4),
    ]);
    let mut data = Vec::new();
    for (position, color) in vertices {
        data.extend(floats(position));
        data.extend(color);
    }
    scene.buffer(&data, 20, &[Element::Attribute(0), Element::Attribute(1)]);
    scene
}

fn numbered_vertices(count: usize) -> Vec<([f32; 4], [u8; 4])> {
    (0..count)
        .map(|i| ([i as f32, -(i as f32), 0.5, 1.0], [i as u8, 255, 0, 128]))
        .collect()
}

#[test]
fn a_triangle_list_passes_positions_and_unnormalised_colours() {
    let mut scene = pass_through_scene(&numbered_vertices(7));
    scene.draw_arrays(Topology::List, 0, 7);
    let (gpu, triangles) = replay(&scene.finish());
    // 7 vertices make two triangles; the seventh waits for two more.
    assert_eq!(triangles.len(), 2);
    assert_eq!(triangles[1][2].position(), [5.0, -5.0, 0.5, 1.0]);
    // An unsigned byte 255 is 255.0: the loader does not normalise.
    assert_eq!(triangles[0][1].color(), [1.0, 255.0, 0.0, 128.0]);
    assert_eq!(gpu.stats.draws, 1);
    assert_eq!(gpu.stats.vertices, 7);
    assert_eq!(gpu.stats.unfinalized_lists, 0);
    // Semantics the output map leaves out read 1.0.
    assert_eq!(triangles[0][0].attributes[semantic::TEXCOORD0], 1.0);
}

/// A float attribute enters the shader as an f32 attribute does (the spec's section 7, in
/// docs/execution-model.md): by the precision mode's rounding and range rules. Passed through
/// by `mov`, 0.1f (0x3DCCCCCD) comes out truncated to 16 mantissa bits in f24 (0x3DCCCC80),
/// rounded to nearest even in f24-rne (0x3DCCCD00), unchanged in f32; 1e30 beyond float24's
/// range is +inf and 1e-30 below its smallest normal +0 in the f24 modes. Every engine.
#[test]
fn float_attributes_enter_by_the_precision_mode() {
    let position = [0.1, 1e30, 1e-30, 1.0];
    let mut scene = pass_through_scene(&[(position, [0; 4]); 3]);
    scene.draw_arrays(Topology::List, 0, 3);
    let trace = scene.finish();
    let f24 = [0x3DCC_CC80, 0x7F80_0000, 0, 0x3F80_0000];
    let rne = [0x3DCC_CD00, 0x7F80_0000, 0, 0x3F80_0000];
    let f32_bits = position.map(f32::to_bits);
    for (precision, expected) in [
        (Precision::F24Truncate, f24),
        (Precision::F24Nearest, rne),
        (Precision::F32, f32_bits),
    ] {
        for engine in EngineKind::ALL {
            let config = GpuConfig {
                precision,
                ..config(engine, 1)
            };
            let (_, triangles) = replay_with(&trace, config).expect("the scene replays");
            let position = triangles[0][0].position().map(f32::to_bits);
            assert_eq!(position, expected, "{precision:?} on {engine:?}");
        }
    }
}

#[test]
fn draw_arrays_starts_at_the_vertex_offset() {
    let mut scene = pass_through_scene(&numbered_vertices(9));
    scene.draw_arrays(Topology::List, 4, 3);
    let (_, triangles) = replay(&scene.finish());
    let firsts: Vec<f32> = triangles[0].iter().map(|v| v.position()[0]).collect();
    assert_eq!(firsts, [4.0, 5.0, 6.0]);
}

#[test]
fn every_component_type_with_alignment_and_padding() {
    let program = shbin(&[FOUR_OUTPUTS]);
    let mut scene = SceneBuilder::new();
    scene.program(&program, 0, None);
    scene.attributes(&[
        Attribute::new(0, ComponentType::UnsignedByte, 1),
        Attribute::new(1, ComponentType::Short, 3),
        Attribute::new(2, ComponentType::Float, 2),
        Attribute::new(3, ComponentType::Byte, 4),
    ]);
    // Layout by the alignment rules: ubyte at 0; short x3 aligned to 2 -> 2..8; padding of 4
    // aligned to 4 -> 8..12; float x2 at 12..20; byte x4 at 20..24.
    let mut vertex = [0xEEu8; 24];
    vertex[0] = 200;
    vertex[2..8].copy_from_slice(&[0x01, 0x80, 0xFF, 0xFF, 0x10, 0x00]);
    vertex[12..20].copy_from_slice(&floats(&[1.5, -2.25]));
    vertex[20..24].copy_from_slice(&[0x7F, 0x80, 0xFF, 0x05]);
    let data: Vec<u8> = vertex.iter().copied().cycle().take(3 * 24).collect();
    scene.buffer(
        &data,
        24,
        &[
            Element::Attribute(0),
            Element::Attribute(1),
            Element::Padding(4),
            Element::Attribute(2),
            Element::Attribute(3),
        ],
    );
    scene.draw_arrays(Topology::List, 0, 3);
    let (_, triangles) = replay(&scene.finish());
    let v = triangles[0][2];
    // Missing components read (0, 0, 0, 1).
    assert_eq!(v.position(), [200.0, 0.0, 0.0, 1.0]);
    assert_eq!(v.quaternion(), [-32767.0, -1.0, 16.0, 1.0]);
    assert_eq!(v.color(), [1.5, -2.25, 0.0, 1.0]);
    let view = &v.attributes[semantic::VIEW..semantic::VIEW + 3];
    assert_eq!(view, [127.0, -128.0, -1.0]);
}

#[test]
fn fixed_attributes_hold_where_no_array_loads() {
    let program = shbin(&[PASS_THROUGH]);
    let mut scene = SceneBuilder::new();
    scene.program(&program, 0, None);
    scene.attributes(&[
        Attribute::new(0, ComponentType::Float, 2),
        Attribute::new(1, ComponentType::Float, 4),
    ]);
    scene.fixed_attribute(1, [0.25, 0.5, 0.75, 1.0]);
    scene.buffer(
        &floats(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        8,
        &[Element::Attribute(0)],
    );
    scene.draw_arrays(Topology::List, 0, 3);
    let (_, triangles) = replay(&scene.finish());
    assert_eq!(triangles[0][1].position(), [3.0, 4.0, 0.0, 1.0]);
    assert_eq!(triangles[0][2].color(), [0.25, 0.5, 0.75, 1.0]);
}

#[test]
fn indexed_draws_shade_each_distinct_vertex_once() {
    for indices in [
        Indices::U8(vec![0, 1, 2, 2, 1, 3, 3, 1, 0]),
        Indices::U16(vec![0, 1, 2, 2, 1, 3, 3, 1, 0]),
    ] {
        let mut scene = pass_through_scene(&numbered_vertices(4));
        scene.draw_elements(Topology::List, &indices);
        let (gpu, triangles) = replay(&scene.finish());
        let firsts: Vec<[f32; 3]> = triangles
            .iter()
            .map(|t| t.map(|v| v.position()[0]))
            .collect();
        assert_eq!(firsts, [[0., 1., 2.], [2., 1., 3.], [3., 1., 0.]]);
        assert_eq!(gpu.stats.vertices, 9);
        assert_eq!(gpu.stats.vertex_invocations, 4, "the post-transform cache");
    }
}

#[test]
fn strips_fans_and_restart_between_draws() {
    let mut scene = pass_through_scene(&numbered_vertices(6));
    scene.draw_arrays(Topology::Strip, 0, 5);
    scene.draw_arrays(Topology::Fan, 0, 5);
    scene.draw_elements(Topology::Strip, &Indices::U16(vec![5, 4, 3, 2]));
    let (_, triangles) = replay(&scene.finish());
    let firsts: Vec<[f32; 3]> = triangles
        .iter()
        .map(|t| t.map(|v| v.position()[0]))
        .collect();
    assert_eq!(
        firsts,
        [
            [0., 1., 2.],
            [2., 1., 3.],
            [2., 3., 4.],
            [0., 1., 2.],
            [0., 2., 3.],
            [0., 3., 4.],
            [5., 4., 3.],
            [3., 4., 2.],
        ]
    );
}

#[test]
fn immediate_mode_vertices_go_through_the_permutation() {
    let program = shbin(&[PASS_THROUGH]);
    let mut scene = SceneBuilder::new();
    scene.program(&program, 0, None);
    // Attribute 0 feeds v1 (colour), attribute 1 feeds v0 (position).
    scene.attributes(&[
        Attribute::new(1, ComponentType::Float, 4),
        Attribute::new(0, ComponentType::Float, 4),
    ]);
    let vertices: Vec<Vec<[f32; 4]>> = (0..4)
        .map(|i| vec![[0.5, 0.25, 0.0, 1.0], [i as f32, 1.0, 2.0, 1.0]])
        .collect();
    scene.draw_immediate(Topology::Strip, &vertices);
    let (gpu, triangles) = replay(&scene.finish());
    assert_eq!(triangles.len(), 2);
    assert_eq!(triangles[1][2].position(), [3.0, 1.0, 2.0, 1.0]);
    assert_eq!(triangles[0][0].color(), [0.5, 0.25, 0.0, 1.0]);
    assert_eq!(gpu.stats.vertices, 4);
}

/// Point mode: three vertices of two outputs each fill v0-v5; the GS emits them as a triangle
/// with the winding flag, so assembly swaps the first two.
const POINT_GS: &str = "
.gsh point c0
.out gPos position
.out gCol color
.proc gmain
    setemit 0
    mov gPos, v0
    mov gCol, v1
    emit
    setemit 1
    mov gPos, v2
    mov gCol, v3
    emit
    setemit 2, prim inv
    mov gPos, v4
    mov gCol, v5
    emit
    end
.end
.entry gmain
";

#[test]
fn geometry_shader_point_mode_gathers_consecutive_vertices() {
    let program = shbin(&[PASS_THROUGH, POINT_GS]);
    let mut scene = pass_through_scene(&numbered_vertices(6));
    with_geometry(&mut scene, &program, 6);
    scene.draw_arrays(Topology::List, 0, 6);
    let (gpu, triangles) = replay(&scene.finish());
    assert_eq!(gpu.stats.geometry_invocations, 2);
    let firsts: Vec<[f32; 3]> = triangles
        .iter()
        .map(|t| t.map(|v| v.position()[0]))
        .collect();
    assert_eq!(firsts, [[1., 0., 2.], [4., 3., 5.]]);
    assert_eq!(triangles[1][0].color(), [4.0, 255.0, 0.0, 128.0]);
}

/// Fixed mode: three vertices of one output each arrive in c4-c6.
const FIXED_GS: &str = "
.gsh fixed c10 c4 3
.out gPos position
.out gCol color
.constf white(1.0, 1.0, 1.0, 1.0)
.proc gmain
    mov gCol, white
    setemit 0
    mov gPos, c4
    emit
    setemit 1
    mov gPos, c5
    emit
    setemit 2, prim
    mov gPos, c6
    emit
    end
.end
.entry gmain
";

/// o0 = v0 only.
const POSITION_ONLY: &str = "
.out outPos position
.proc main
    mov outPos, v0
    end
.end
";

#[test]
fn geometry_shader_fixed_mode_writes_vertices_into_uniforms() {
    let program = shbin(&[POSITION_ONLY, FIXED_GS]);
    let mut scene = pass_through_scene(&numbered_vertices(6));
    with_geometry(&mut scene, &program, 1);
    scene.draw_elements(Topology::List, &Indices::U8(vec![5, 4, 3, 0, 1, 2]));
    let (gpu, triangles) = replay(&scene.finish());
    assert_eq!(gpu.stats.geometry_invocations, 2);
    assert_eq!(positions(&triangles)[0][0], [5.0, -5.0, 0.5, 1.0]);
    assert_eq!(positions(&triangles)[1][2], [2.0, -2.0, 0.5, 1.0]);
    // The colour is written once, before the first EMIT: EMIT switches output banks, so the
    // second vertex comes from the other bank (never written: +0) and the third from the first.
    let colors: Vec<[f32; 4]> = triangles[0].iter().map(|v| v.color()).collect();
    assert_eq!(colors, [[1.0; 4], [0.0; 4], [1.0; 4]]);
}

/// Variable mode: c0 = (n, n, n, n); the first vertex keeps both outputs (c1, c2), the others
/// their position only (c3, c4, ...). Emits the fan's first triangle: centre, c3, c4.
const VARIABLE_GS: &str = "
.gsh variable c10 1
.out gPos position
.out gCol color
.proc gmain
    mov gCol, c2
    setemit 0
    mov gPos, c1
    emit
    setemit 1
    mov gPos, c3
    emit
    setemit 2, prim
    mov gPos, c4
    emit
    end
.end
.entry gmain
";

#[test]
fn geometry_shader_variable_mode_reads_counts_from_the_index_buffer() {
    let program = shbin(&[PASS_THROUGH, VARIABLE_GS]);
    let mut scene = pass_through_scene(&numbered_vertices(8));
    with_geometry(&mut scene, &program, 2);
    // Two primitives: 3 vertices (7, 1, 2), then 4 vertices (3, 4, 5, 6). The counts are not
    // vertices: vertex 7's colour must not come from index 3.
    scene.draw_elements(
        Topology::List,
        &Indices::U16(vec![3, 7, 1, 2, 4, 3, 4, 5, 6]),
    );
    let (gpu, triangles) = replay(&scene.finish());
    assert_eq!(gpu.stats.geometry_invocations, 2);
    assert_eq!(gpu.stats.vertices, 7);
    let firsts: Vec<[f32; 3]> = triangles
        .iter()
        .map(|t| t.map(|v| v.position()[0]))
        .collect();
    assert_eq!(firsts, [[7., 1., 2.], [3., 4., 5.]]);
    assert_eq!(triangles[0][0].color(), [7.0, 255.0, 0.0, 128.0]);
    // c0 holds the count: the second invocation saw 4.
}

/// Binds DVLE 0 of `program` as the vertex shader and DVLE 1 as the geometry shader.
fn with_geometry(scene: &mut SceneBuilder, program: &Shbin, stride: u8) {
    let geometry = GeometryProgram {
        shbin: program,
        dvle: 1,
        stride,
    };
    scene.program(program, 0, Some(geometry));
}

fn big_scene(engine_vertices: usize) -> Trace {
    let vertices: Vec<([f32; 4], [u8; 4])> = (0..engine_vertices)
        .map(|i| {
            let f = i as f32;
            (
                [f * 0.5, f.sin(), f.cos(), 1.0],
                [i as u8, (i >> 8) as u8, 7, 9],
            )
        })
        .collect();
    let mut scene = pass_through_scene(&vertices);
    scene.draw_arrays(Topology::Strip, 0, engine_vertices as u32);
    let indices: Vec<u16> = (0..engine_vertices as u16).rev().step_by(3).collect();
    scene.draw_elements(Topology::Fan, &Indices::U16(indices));
    scene.finish()
}

#[test]
fn every_engine_and_thread_count_gives_the_same_triangles() {
    let trace = big_scene(10_000);
    let (_, reference) =
        replay_with(&trace, config(EngineKind::Interpreter, 1)).expect("the scene replays");
    assert_eq!(reference.len(), 9_998 + 3_332);
    for engine in EngineKind::ALL {
        for threads in [1, 2, 3] {
            let (_, triangles) = replay_with(&trace, config(engine, threads)).unwrap();
            let bits = |t: &[Triangle]| -> Vec<u32> {
                t.iter()
                    .flat_map(|t| t.iter().flat_map(|v| v.attributes.map(f32::to_bits)))
                    .collect()
            };
            assert_eq!(
                bits(&triangles),
                bits(&reference),
                "{engine} on {threads} threads"
            );
        }
    }
}

#[test]
fn command_lists_chain_through_jumps_and_loops_end_at_the_budget() {
    let mut gpu = Gpu::new(config(EngineKind::Interpreter, 1));
    // List B at 0x20001000 writes a register and finalizes.
    let mut b = CommandWriter::new();
    b.write(id::BLEND_COLOR, 0x1234);
    let b_words = b.finish();
    let b_address = 0x2000_1000;
    let bytes = |w: &[u32]| -> Vec<u8> { w.iter().flat_map(|x| x.to_le_bytes()).collect() };
    gpu.memory.write(b_address, &bytes(&b_words)).unwrap();
    // List A jumps to B.
    let mut a = CommandWriter::new();
    a.write(id::CMDBUF_ADDR0, b_address >> 3)
        .write(id::CMDBUF_SIZE0, (b_words.len() as u32 * 4) >> 3)
        .write(id::CMDBUF_JUMP0, 1)
        .write(id::BLEND_COLOR, 0xBAD);
    let a_words = a.finish();
    gpu.memory.write(0x2000_0000, &bytes(&a_words)).unwrap();
    let end = gpu
        .run_command_list(0x2000_0000, a_words.len() as u32 * 4)
        .unwrap();
    assert_eq!(end, picajit::gpu::ListEnd::Finalized);
    assert_eq!(gpu.regs.get(id::BLEND_COLOR), 0x1234);
    assert_eq!(gpu.stats.command_lists, 2);
    // A list that jumps to itself ends at the budget, not never.
    let mut lp = CommandWriter::new();
    lp.write(id::CMDBUF_ADDR0, 0x2000_2000 >> 3)
        .write(id::CMDBUF_SIZE0, 32 >> 3)
        .write(id::CMDBUF_JUMP0, 1);
    let lp_words = lp.finish();
    gpu.memory.write(0x2000_2000, &bytes(&lp_words)).unwrap();
    gpu.config.max_command_words = 10_000;
    let error = gpu.run_command_list(0x2000_2000, 32).unwrap_err();
    assert!(matches!(error, GpuError::CommandBudget { .. }), "{error}");
}

#[test]
fn malformed_input_gives_errors_that_name_the_place() {
    let mut gpu = Gpu::new(config(EngineKind::Interpreter, 1));
    // A command whose extra parameters run past the buffer.
    let error = gpu.run_commands(&[0, 0x00F0_0100, 1]).unwrap_err();
    assert!(error.to_string().contains("word 0"), "{error}");
    // A list in unmapped memory.
    let error = gpu.run_command_list(0x0800_0000, 64).unwrap_err();
    assert!(matches!(error, GpuError::Memory(_)), "{error}");
    // A draw beyond the vertex limit.
    let mut writer = CommandWriter::new();
    writer
        .write(id::NUMVERTICES, u32::MAX)
        .write(id::DRAWARRAYS, 1);
    let error = gpu.run_commands(&writer.finish()).unwrap_err();
    assert!(matches!(error, GpuError::DrawTooLarge { .. }), "{error}");
    // Attribute arrays outside memory.
    let mut scene = pass_through_scene(&numbered_vertices(3));
    scene.write(id::ATTRIBBUFFERS_LOC, 0x0100_0000 >> 3);
    scene.draw_arrays(Topology::List, 0, 3);
    let error = replay_with(&scene.finish(), config(EngineKind::Interpreter, 1)).unwrap_err();
    assert!(matches!(error, GpuError::Load(_)), "{error}");
    // Unknown registers are recorded, not fatal.
    let mut writer = CommandWriter::new();
    writer.write(0x3F0, 5).write(0x0E2, 6);
    gpu.run_commands(&writer.finish()).unwrap();
    assert_eq!(gpu.regs.unmodelled().get(&0x3F0), Some(&1));
}

#[test]
fn trace_files_round_trip_and_malformed_files_are_errors() {
    let trace = big_scene(100);
    let file = trace::write(&trace);
    let read = trace::read(&file).expect("a written trace reads");
    assert_eq!(read, trace);
    assert_eq!(trace::write(&read), file);
    // Truncations anywhere are errors, never panics.
    for cut in [0, 3, 50, 0x63, 0x64, file.len() / 2, file.len() - 1] {
        assert!(trace::read(&file[..cut]).is_err(), "cut at {cut}");
    }
    let mut bad = file.clone();
    bad[0] = b'X';
    assert_eq!(trace::read(&bad), Err(TraceError::BadMagic));
    // A memory load pointing outside the file, and an unknown element type.
    let stream = u32::from_le_bytes(file[0x5C..0x60].try_into().unwrap()) as usize;
    let mut bad = file.clone();
    bad[stream + 4..stream + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        trace::read(&bad),
        Err(TraceError::Payload { element: 0, .. })
    ));
    let mut bad = file.clone();
    bad[stream..stream + 4].copy_from_slice(&0x77u32.to_le_bytes());
    assert_eq!(
        trace::read(&bad),
        Err(TraceError::ElementType {
            element: 0,
            code: 0x77
        })
    );
    // Huge sizes in the header.
    let mut bad = file.clone();
    bad[0x10..0x14].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        trace::read(&bad),
        Err(TraceError::OutOfFile { .. })
    ));
    // Every prefix of a valid file, and every single-byte corruption of its header and first
    // elements, reads or fails without panicking; what reads replays without panicking.
    for k in 0..0x64 + 3 * 20 {
        let mut bad = file.clone();
        let at = if k < 0x64 { k } else { stream + k - 0x64 };
        bad[at] ^= 0xA5;
        if let Ok(trace) = trace::read(&bad) {
            let _ = replay_with(&trace, config(EngineKind::Interpreter, 1));
        }
    }
    let _ = TraceOp::FrameMarker;
}

#[test]
fn memory_fill_and_uniform_uploads_through_a_trace() {
    let program = shbin(&[PASS_THROUGH]);
    let mut scene = SceneBuilder::new();
    scene.program(&program, 0, None);
    scene.uniform(Stage::Vertex, 7, [1.0, 2.0, 3.0, 4.0]);
    scene.bools(Stage::Vertex, 0x8001);
    scene.memory_fill(0x1820_0000, 64, 0x1122_3344, 32);
    scene.memory_fill(0x1820_0100, 30, 0xAABB, 16);
    let (gpu, _) = replay(&scene.finish());
    assert_eq!(gpu.vs.uniforms.float[7], [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(gpu.vs.uniforms.bools, 0x8001);
    assert_eq!(gpu.memory.read_u32(0x1820_0000 + 60).unwrap(), 0x1122_3344);
    assert_eq!(gpu.memory.read_u32(0x1820_0000 + 64).unwrap(), 0);
    assert_eq!(gpu.memory.read_u32(0x1820_0100).unwrap(), 0xAABB_AABB);
}

/// Mutates `bytes`: flipped bits, bytes set to extremes, words set to huge values, cuts.
fn mutate(bytes: &[u8], rng: &mut XorShift) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len());
        match rng.below(5) {
            0 => out[at] ^= 1 << rng.below(8),
            1 => out[at] = [0, 0xFF, 0x7F, 0x80][rng.below(4)],
            2 if at + 4 <= out.len() => {
                let word = [u32::MAX, 0x8000_0000, 0x1000_0000, 0x00FF_FFFF][rng.below(4)];
                out[at..at + 4].copy_from_slice(&word.to_le_bytes());
            }
            3 => out.truncate(at),
            _ => out[at] = rng.next() as u8,
        }
        if out.is_empty() {
            break;
        }
    }
    out
}

#[test]
fn mutated_traces_and_command_buffers_never_panic() {
    use picajit::gpu::fuzz::{Outcome, check_commands, check_trace};
    let file = trace::write(&big_scene(40));
    assert!(matches!(check_trace(&file), Outcome::Rendered(_)));
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut outcomes = [0usize; 3];
    // Mutations aimed at the stream (where the register writes and loads are) and anywhere.
    let stream = u32::from_le_bytes(file[0x5C..0x60].try_into().unwrap()) as usize;
    for k in 0..400 {
        let mutated = if k % 2 == 0 {
            let (head, tail) = file.split_at(stream);
            let mut bytes = head.to_vec();
            bytes.extend(mutate(tail, &mut rng));
            bytes
        } else {
            mutate(&file, &mut rng)
        };
        let slot = match check_trace(&mutated) {
            Outcome::Rejected(_) => 0,
            Outcome::Failed(_) => 1,
            Outcome::Rendered(_) => 2,
        };
        outcomes[slot] += 1;
    }
    assert!(outcomes.iter().all(|&n| n > 0), "{outcomes:?}");
    // The command buffer of a scene, mutated.
    let commands = big_scene(40)
        .ops
        .iter()
        .filter_map(|op| match op {
            TraceOp::MemoryLoad { bytes, .. } if bytes.len() % 8 == 0 => Some(bytes.clone()),
            _ => None,
        })
        .next_back()
        .expect("the scene's last load is a command buffer");
    for _ in 0..400 {
        let _ = check_commands(&mutate(&commands, &mut rng));
    }
}

// --- Screens -----------------------------------------------------------------------------

mod screens {
    use picajit::gpu::builder::SceneBuilder;
    use picajit::gpu::framebuffer::color::ColorFormat;
    use picajit::gpu::framebuffer::display::{Screen, ScreenError};
    use picajit::gpu::framebuffer::memory::FCRAM;
    use picajit::gpu::front::trace::{self, Replayer, TraceOp};
    use picajit::gpu::{Gpu, GpuConfig};

    /// A top-screen framebuffer: 400 memory rows of 240 RGB8 pixels (bytes b, g, r), black but
    /// for the pixels given as (memory row, pixel in the row, colour).
    fn framebuffer(marks: &[(u32, u32, [u8; 3])]) -> Vec<u8> {
        let mut bytes = vec![0u8; 400 * 240 * 3];
        for &(row, pixel, [r, g, b]) in marks {
            let at = ((row * 240 + pixel) * 3) as usize;
            bytes[at..at + 3].copy_from_slice(&[b, g, r]);
        }
        bytes
    }

    fn replayed(scene: SceneBuilder) -> Replayer {
        trace::replay(
            &scene.finish(),
            Gpu::new(GpuConfig::default()),
            None,
            |_, _| {},
        )
        .unwrap()
    }

    /// A framebuffer's memory rows are the screen's columns from the left, and a row's first
    /// pixel is the bottom of the screen (3dbrew, "GPU/External Registers": the framebuffers
    /// are drawn from left to right; homebrew writes pixel (x, y) at x·240 + 239 − y).
    #[test]
    fn the_top_screen_shows_memory_rows_as_columns_bottom_first() {
        let address = FCRAM.start + 0x10_0000;
        let mut scene = SceneBuilder::new();
        scene.op(TraceOp::MemoryLoad {
            address,
            bytes: framebuffer(&[
                (0, 0, [255, 0, 0]),     // the bottom-left corner
                (399, 239, [0, 255, 0]), // the top-right corner
                (10, 200, [0, 0, 255]),  // x = 10, y = 39
            ]),
        });
        scene.present(Screen::Top, address, ColorFormat::Rgb8, (240, 400), false);
        scene.end_frame();
        let image = replayed(scene).screen_image(Screen::Top).unwrap();
        assert_eq!((image.width, image.height), (400, 240));
        let at = |x: u32, y: u32| image.pixels[(y * 400 + x) as usize];
        assert_eq!(at(0, 239), [255, 0, 0, 255]);
        assert_eq!(at(399, 0), [0, 255, 0, 255]);
        assert_eq!(at(10, 39), [0, 0, 255, 255]);
        let lit = image.pixels.iter().filter(|p| p[..3] != [0, 0, 0]).count();
        assert_eq!(lit, 3);
    }

    /// The select register picks the second framebuffer; the bottom screen is 320 wide; a
    /// 16-bit format is read at its own size.
    #[test]
    fn the_select_bit_format_and_bottom_screen_are_read() {
        let (first, second) = (FCRAM.start + 0x20_0000, FCRAM.start + 0x30_0000);
        let mut bytes = vec![0u8; 320 * 240 * 2];
        // RGB565 pure red (0xF800) at memory row 319, pixel 0: the bottom-right corner.
        let at = (319 * 240) * 2;
        bytes[at..at + 2].copy_from_slice(&0xF800u16.to_le_bytes());
        let mut scene = SceneBuilder::new();
        scene.op(TraceOp::MemoryLoad {
            address: first,
            bytes: vec![0xFF; 320 * 240 * 2],
        });
        scene.op(TraceOp::MemoryLoad {
            address: second,
            bytes,
        });
        scene.present(
            Screen::Bottom,
            first,
            ColorFormat::Rgb565,
            (240, 320),
            false,
        );
        scene.present(
            Screen::Bottom,
            second,
            ColorFormat::Rgb565,
            (240, 320),
            true,
        );
        scene.end_frame();
        let image = replayed(scene).screen_image(Screen::Bottom).unwrap();
        assert_eq!((image.width, image.height), (320, 240));
        assert_eq!(image.pixels[(239 * 320 + 319) as usize], [255, 0, 0, 255]);
        assert_eq!(image.pixels[0], [0, 0, 0, 255]);
    }

    /// A screen without a framebuffer, or whose framebuffer nothing wrote, shows nothing: an
    /// error that names the screen.
    #[test]
    fn a_screen_never_set_up_or_never_written_is_an_error() {
        let mut scene = SceneBuilder::new();
        scene.present(
            Screen::Top,
            FCRAM.start + 0x40_0000,
            ColorFormat::Rgb8,
            (240, 400),
            false,
        );
        scene.end_frame();
        let replayer = replayed(scene);
        assert_eq!(
            replayer.screen_image(Screen::Bottom),
            Err(ScreenError::NoFramebuffer(Screen::Bottom))
        );
        let error = replayer.screen_image(Screen::Top).unwrap_err();
        assert_eq!(
            error,
            ScreenError::NeverWritten(Screen::Top, FCRAM.start + 0x40_0000)
        );
        assert!(error.to_string().contains("top screen"));
    }
}

// --- The external registers as replay reads them (docs/citrace.md §4) -----------------------

mod external_registers {
    use picajit::gpu::framebuffer::memory::FCRAM;
    use picajit::gpu::front::command::CommandWriter;
    use picajit::gpu::front::external;
    use picajit::gpu::front::trace::{GPU_REGISTERS, InitialState, Replayer, TraceOpRef};
    use picajit::gpu::regs::id;
    use picajit::gpu::{Gpu, GpuConfig};

    const LIST: u32 = FCRAM.start + 0x1000;

    fn replayer() -> Replayer {
        Replayer::new(Gpu::new(GpuConfig::default()), &InitialState::default())
    }

    fn mmio(replayer: &mut Replayer, offset: u32, value: u32) {
        let op = TraceOpRef::RegisterWrite {
            address: GPU_REGISTERS + offset,
            value,
        };
        replayer.step(op).unwrap();
    }

    /// Points command-list channel 0 at the list, `size` 8-byte units long, through the
    /// external registers.
    fn point_list(replayer: &mut Replayer, size: u32) {
        mmio(replayer, external::COMMAND_LIST_ADDRESS[0], LIST >> 3);
        mmio(replayer, external::COMMAND_LIST_SIZE[0], size);
    }

    /// A list of 8 + 8 bytes: the first sets the ambient colour to 1, the second to 2.
    fn load_two_writes(replayer: &mut Replayer) {
        let mut words = CommandWriter::new();
        words
            .write(id::LIGHTING_AMBIENT, 1)
            .write(id::LIGHTING_AMBIENT, 2);
        let bytes: Vec<u8> = words.words().iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(bytes.len(), 16);
        let op = TraceOpRef::MemoryLoad {
            address: LIST,
            bytes: &bytes,
        };
        replayer.step(op).unwrap();
    }

    /// The size register counts 8-byte units (3dbrew: "Buffer Size>>3"), whatever memory load
    /// came before: a size of 1 runs the first 8 bytes only, a size of 2 both writes.
    #[test]
    fn the_command_list_size_counts_eight_byte_units() {
        let mut r = replayer();
        load_two_writes(&mut r);
        point_list(&mut r, 1);
        mmio(&mut r, external::COMMAND_LIST_TRIGGER[0], 1);
        assert_eq!(r.gpu.regs.get(id::LIGHTING_AMBIENT), 1);
        // 16 written as a byte count would be 128 bytes: the list's 16 bytes, then zeros.
        mmio(&mut r, external::COMMAND_LIST_SIZE[0], 2);
        mmio(&mut r, external::COMMAND_LIST_TRIGGER[0], 1);
        assert_eq!(r.gpu.regs.get(id::LIGHTING_AMBIENT), 2);
    }

    /// 0x104018E0-F4 are internal registers 0x238-0x23D through the window at 0x10401000: a
    /// size and address a command buffer wrote are the ones a kick reads, and an MMIO write is
    /// visible in the register file.
    #[test]
    fn the_command_list_registers_are_the_internal_ones() {
        let mut r = replayer();
        load_two_writes(&mut r);
        let mut setup = CommandWriter::new();
        setup
            .write(id::CMDBUF_ADDR0, LIST >> 3)
            .write(id::CMDBUF_SIZE0, 2);
        r.gpu.run_commands(&setup.finish()).unwrap();
        mmio(&mut r, external::COMMAND_LIST_TRIGGER[0], 1);
        assert_eq!(r.gpu.regs.get(id::LIGHTING_AMBIENT), 2);
        mmio(&mut r, external::COMMAND_LIST_SIZE[1], 5);
        assert_eq!(r.gpu.regs.get(id::CMDBUF_SIZE1), 5);
        assert_eq!(
            external::COMMAND_LIST_SIZE[1],
            external::INTERNAL_WINDOW + 4 * u32::from(id::CMDBUF_SIZE1)
        );
    }

    /// Only a write with bit 0 set starts a list.
    #[test]
    fn a_kick_without_bit_0_runs_nothing() {
        let mut r = replayer();
        load_two_writes(&mut r);
        point_list(&mut r, 2);
        mmio(&mut r, external::COMMAND_LIST_TRIGGER[0], 2);
        assert_eq!(r.gpu.regs.get(id::LIGHTING_AMBIENT), 0);
        assert_eq!(r.gpu.stats.command_lists, 0);
    }

    /// A 24-bit fill writes [start, end) and no byte past `end`, its pattern's phase kept from
    /// `start`; the control register then reads finished (bit 1) and not busy (bit 0), as 3dbrew
    /// describes the fill unit.
    #[test]
    fn a_24_bit_fill_stops_at_its_end() {
        let mut r = replayer();
        let start = FCRAM.start + 0x2000;
        let op = TraceOpRef::MemoryLoad {
            address: start,
            bytes: &[0xEE; 32],
        };
        r.step(op).unwrap();
        let fill = external::MEMORY_FILL[0];
        mmio(&mut r, fill, start >> 3);
        mmio(&mut r, fill + 4, (start + 16) >> 3);
        mmio(&mut r, fill + 8, 0x00CC_BBAA);
        mmio(&mut r, fill + 0xC, 1 << 8 | 1);
        let mut bytes = [0; 24];
        r.gpu.memory.read(start, &mut bytes).unwrap();
        let pattern = [0xAA, 0xBB, 0xCC];
        for (k, &byte) in bytes.iter().enumerate() {
            let expected = if k < 16 { pattern[k % 3] } else { 0xEE };
            assert_eq!(byte, expected, "byte {k}");
        }
        assert_eq!(r.external[(fill + 0xC) as usize / 4] & 3, 2);
    }

    /// After a display transfer the trigger register reads finished (bit 8) and not busy.
    #[test]
    fn a_transfer_reads_finished_afterwards() {
        let mut r = replayer();
        let (input, output) = (FCRAM.start + 0x4000, FCRAM.start + 0x8000);
        mmio(&mut r, external::TRANSFER_INPUT, input >> 3);
        mmio(&mut r, external::TRANSFER_OUTPUT, output >> 3);
        mmio(&mut r, external::TRANSFER_INPUT_SIZE, 8 << 16 | 8);
        mmio(&mut r, external::TRANSFER_OUTPUT_SIZE, 8 << 16 | 8);
        mmio(&mut r, external::TRANSFER_FLAGS, 0);
        mmio(&mut r, external::TRANSFER_TRIGGER, 1);
        assert_eq!(r.stats.transfers, 1);
        let trigger = r.external[external::TRANSFER_TRIGGER as usize / 4];
        assert_eq!(trigger & 0x101, 0x100);
    }
}
