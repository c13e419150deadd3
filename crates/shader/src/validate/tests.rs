use super::flow::{self, explore, reachable_addresses, successors};
use super::*;
use crate::isa::testing::*;
use crate::isa::{BinaryOp, DestMask, RelIndex, SrcReg, Swizzle, UnaryOp, encode};
use DiagnosticKind::*;

// ---------------------------------------------------------------------------------------------
// Program building

/// Descriptor indices of [`descs`].
const XYZW: u8 = 0;
const X: u8 = 1;
const XY: u8 = 2;
const ZW: u8 = 3;
/// Mask xyzw, SRC1 swizzle `.xxxx`.
const XYZW_SRC1_XXXX: u8 = 4;

fn descs() -> Vec<u32> {
    let id = (false, Swizzle::IDENTITY);
    let xxxx = (false, Swizzle::from_components([0; 4]));
    [
        OperandDescriptor::new(DestMask::ALL, [id; 3]),
        OperandDescriptor::new(DestMask(0b1000), [id; 3]),
        OperandDescriptor::new(DestMask(0b1100), [id; 3]),
        OperandDescriptor::new(DestMask(0b0011), [id; 3]),
        OperandDescriptor::new(DestMask::ALL, [xxxx, id, id]),
    ]
    .map(|d| d.0)
    .to_vec()
}

fn o(n: u8) -> DstReg {
    DstReg::output(n)
}
fn o0() -> DstReg {
    o(0)
}

fn r(n: u8) -> DstReg {
    DstReg::temp(n)
}
fn rs(n: u8) -> SrcReg {
    SrcReg::temp(n)
}
fn v(n: u8) -> SrcReg {
    SrcReg::input(n)
}
fn c(n: u8) -> SrcReg {
    SrcReg::uniform(n)
}

fn mov_d(dst: DstReg, src: SrcReg, desc: u8) -> Instruction {
    Instruction::Unary {
        op: UnaryOp::Mov,
        dst,
        src1: src,
        rel: RelIndex::None,
        desc,
        ignored: 0,
    }
}
fn mov(dst: DstReg, src: SrcReg) -> Instruction {
    mov_d(dst, src, XYZW)
}
fn add(dst: DstReg, a: SrcReg, b: SrcReg) -> Instruction {
    Instruction::Binary {
        op: BinaryOp::Add,
        dst,
        src1: a,
        src2: b,
        rel: RelIndex::None,
        desc: XYZW,
    }
}
fn mad(dst: DstReg, a: SrcReg, b: SrcReg, cc: SrcReg, desc: u8) -> Instruction {
    Instruction::Mad {
        inverted: false,
        dst,
        src1: a,
        src2: b,
        src3: cc,
        rel: RelIndex::None,
        desc,
    }
}
fn mova(src: SrcReg) -> Instruction {
    Instruction::Mova {
        src1: src,
        rel: RelIndex::None,
        desc: XY,
        ignored: 0,
    }
}
fn words(program: &[Instruction]) -> Vec<u32> {
    program.iter().map(|i| encode(i).unwrap()).collect()
}

const O0: &[(u8, u8)] = &[(0, 0xF)];

/// Encodes the program, validates the words, returns (address, kind) pairs.
fn check(
    program: &[Instruction],
    stage: ShaderKind,
    outputs: &[(u8, u8)],
) -> Vec<(u16, DiagnosticKind)> {
    let code = words(program);
    let opdescs = descs();
    let diags = validate(&ValidationInput {
        code: &code,
        opdescs: &opdescs,
        entry: 0,
        stage,
        outputs,
    });
    assert!(
        diags.windows(2).all(|w| w[0] < w[1]),
        "sorted, deduplicated: {diags:?}"
    );
    for d in &diags {
        assert!(!d.message.is_empty());
    }
    diags.iter().map(|d| (d.address, d.kind)).collect()
}

fn vs(program: &[Instruction]) -> Vec<(u16, DiagnosticKind)> {
    check(program, ShaderKind::Vertex, O0)
}

fn gs(program: &[Instruction]) -> Vec<(u16, DiagnosticKind)> {
    check(program, ShaderKind::Geometry, &[])
}

fn messages(program: &[Instruction], outputs: &[(u8, u8)]) -> Vec<String> {
    let code = words(program);
    let opdescs = descs();
    validate(&ValidationInput {
        code: &code,
        opdescs: &opdescs,
        entry: 0,
        stage: ShaderKind::Vertex,
        outputs,
    })
    .iter()
    .map(|d| d.to_string())
    .collect()
}

// ---------------------------------------------------------------------------------------------
// Baseline

#[test]
fn clean_program_has_no_diagnostics() {
    assert_eq!(vs(&[mov(o0(), v(0)), end()]), vec![]);
}

#[test]
fn display_shows_hex_address_and_message() {
    let text = messages(&[mova(c(0)), mova(c(1)), mov(o0(), v(0)), end()], O0);
    assert_eq!(text.len(), 1);
    assert!(
        text[0].starts_with("0x000: two consecutive MOVA instructions freeze the GPU"),
        "{}",
        text[0]
    );
}

// ---------------------------------------------------------------------------------------------
// 1. Consecutive MOVA

#[test]
fn consecutive_mova_is_reported() {
    let p = [mova(c(0)), mova(c(1)), mov(o0(), v(0)), end()];
    assert_eq!(vs(&p), vec![(0, ConsecutiveMova)]);
}

#[test]
fn mova_separated_by_nop_is_fine() {
    let p = [mova(c(0)), nop(), mova(c(1)), mov(o0(), v(0)), end()];
    assert_eq!(vs(&p), vec![]);
}

#[test]
fn consecutive_mova_across_a_call_return() {
    // The procedure's last instruction is a MOVA; the CALL returns to a MOVA.
    let p = [call(4, 1), mova(c(1)), mov(o0(), v(0)), end(), mova(c(0))];
    assert_eq!(vs(&p), vec![(4, ConsecutiveMova)]);
    let text = messages(&p, O0);
    assert!(text[0].contains("0x001"), "{}", text[0]);
    // Returning to a NOP is fine.
    let p = [
        call(5, 1),
        nop(),
        mova(c(1)),
        mov(o0(), v(0)),
        end(),
        mova(c(0)),
    ];
    assert_eq!(vs(&p), vec![]);
}

#[test]
fn unreachable_consecutive_mova_is_not_reported() {
    let p = [mov(o0(), v(0)), end(), mova(c(0)), mova(c(1))];
    assert_eq!(vs(&p), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 2. Different input registers

#[test]
fn different_input_registers_are_reported() {
    assert_eq!(
        vs(&[add(o0(), v(0), v(1)), end()]),
        vec![(0, DifferentInputRegisters)]
    );
    let p = [mad(o0(), v(2), c(0), v(3), XYZW), end()];
    assert_eq!(vs(&p), vec![(0, DifferentInputRegisters)]);
}

#[test]
fn same_input_register_twice_is_fine() {
    assert_eq!(vs(&[add(o0(), v(1), v(1)), end()]), vec![]);
    assert_eq!(vs(&[add(o0(), c(3), v(1)), end()]), vec![]);
    let p = [mad(o0(), v(2), c(0), v(2), XYZW), end()];
    assert_eq!(vs(&p), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 3. Unknown opcodes

#[test]
fn reachable_unknown_opcode_is_reported() {
    let mut code = words(&[mov(o0(), v(0)), nop(), end()]);
    code[1] = 0x10 << 26;
    let opdescs = descs();
    let input = ValidationInput {
        code: &code,
        opdescs: &opdescs,
        entry: 0,
        stage: ShaderKind::Vertex,
        outputs: O0,
    };
    let diags = validate(&input);
    assert_eq!(diags.len(), 1);
    assert_eq!((diags[0].address, diags[0].kind), (1, UnknownOpcode));
    assert_eq!(diags[0].kind.severity(), Severity::Warning);
}

#[test]
fn unreachable_unknown_opcode_is_not_reported() {
    let mut code = words(&[mov(o0(), v(0)), end(), nop()]);
    code[2] = 0x1D << 26;
    let opdescs = descs();
    let input = ValidationInput {
        code: &code,
        opdescs: &opdescs,
        entry: 0,
        stage: ShaderKind::Vertex,
        outputs: O0,
    };
    assert_eq!(validate(&input), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 4. Outputs written twice / not written

#[test]
fn output_written_before_and_inside_if_is_twice() {
    // 0: mov o0; 1: ifu b0 (then = [2], no else); 2: mov o0; 3: end
    let p = [mov(o0(), v(0)), ifu(3, 0), mov(o0(), v(0)), end()];
    assert_eq!(vs(&p), vec![(2, OutputWrittenTwice)]);
}

#[test]
fn output_written_in_both_branches_is_fine() {
    // 0: ifu b0 (then = [1], else = [2]); 3: end
    let p = [ifu(2, 1), mov(o0(), v(0)), mov(o0(), v(1)), end()];
    assert_eq!(vs(&p), vec![]);
}

#[test]
fn output_written_in_a_loop_body_is_twice() {
    let p = [loop_(1), mov(o0(), v(0)), end()];
    assert_eq!(vs(&p), vec![(1, OutputWrittenTwice)]);
    // The same write after the loop is fine.
    let p = [loop_(1), nop(), mov(o0(), v(0)), end()];
    assert_eq!(vs(&p), vec![]);
}

#[test]
fn output_written_only_in_then_branch_is_not_written() {
    let p = [ifu(2, 0), mov(o0(), v(0)), end()];
    assert_eq!(vs(&p), vec![(2, OutputNotWritten)]);
    let text = messages(&p, O0);
    assert!(text[0].contains("o0.xyzw"), "{}", text[0]);
    // Without a configuration the check is skipped.
    assert_eq!(check(&p, ShaderKind::Vertex, &[]), vec![]);
}

#[test]
fn output_lanes_are_tracked_separately() {
    // o0.xy configured; writing x alone misses y; z and w need not be written.
    let outputs = &[(0, 0b0011)];
    let p = [mov_d(o0(), v(0), X), end()];
    assert_eq!(
        check(&p, ShaderKind::Vertex, outputs),
        vec![(1, OutputNotWritten)]
    );
    assert!(messages(&p, outputs)[0].contains("without writing o0.y:"));
    let p = [mov_d(o0(), v(0), XY), end()];
    assert_eq!(check(&p, ShaderKind::Vertex, outputs), vec![]);
    // xy then zw: no component twice.
    let p = [mov_d(o0(), v(0), XY), mov_d(o0(), v(0), ZW), end()];
    assert_eq!(vs(&p), vec![]);
    let p = [
        mov_d(o0(), v(0), XY),
        mov_d(o0(), v(0), X),
        mov_d(o0(), v(0), ZW),
        end(),
    ];
    assert_eq!(vs(&p), vec![(1, OutputWrittenTwice)]);
}

#[test]
fn output_written_by_a_called_procedure_counts() {
    // 0: call [3]; 1: mov o1; 2: end; 3: mov o0
    let outputs = &[(0, 0xF), (1, 0xF)];
    let p = [call(3, 1), mov(o(1), v(0)), end(), mov(o0(), v(0))];
    assert_eq!(check(&p, ShaderKind::Vertex, outputs), vec![]);
    // A conditional call may skip it.
    let p = [callu(3, 1), mov(o(1), v(0)), end(), mov(o0(), v(0))];
    assert_eq!(
        check(&p, ShaderKind::Vertex, outputs),
        vec![(2, OutputNotWritten)]
    );
}

#[test]
fn output_checks_are_skipped_for_geometry_shaders() {
    let p = [mov(o0(), v(0)), ifu(3, 0), mov(o0(), v(0)), end()];
    assert_eq!(gs(&p), vec![]);
    let p = [ifu(2, 0), mov(o0(), v(0)), end()];
    assert_eq!(check(&p, ShaderKind::Geometry, O0), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 5. Read before write

#[test]
fn temporary_read_before_write_is_reported() {
    assert_eq!(vs(&[mov(o0(), rs(0)), end()]), vec![(0, ReadBeforeWrite)]);
    assert_eq!(vs(&[mov(r(0), v(0)), mov(o0(), rs(0)), end()]), vec![]);
    // An instruction reads its sources before writing its destination.
    let p = [add(r(1), c(0), rs(1)), mov(o0(), rs(1)), end()];
    assert_eq!(vs(&p), vec![(0, ReadBeforeWrite)]);
}

#[test]
fn register_written_on_one_branch_only_is_reported() {
    let p = [ifu(2, 0), mov(r(0), v(0)), mov(o0(), rs(0)), end()];
    assert_eq!(vs(&p), vec![(2, ReadBeforeWrite)]);
    // Written in both branches.
    let p = [
        ifu(2, 1),
        mov(r(0), v(0)),
        mov(r(0), v(1)),
        mov(o0(), rs(0)),
        end(),
    ];
    assert_eq!(vs(&p), vec![]);
}

#[test]
fn read_components_follow_the_swizzle() {
    // Only r0.x is written; `.xxxx` reads only x.
    let p = [
        mov_d(r(0), v(0), X),
        mov_d(o0(), rs(0), XYZW_SRC1_XXXX),
        end(),
    ];
    assert_eq!(vs(&p), vec![]);
    let p = [mov_d(r(0), v(0), X), mov(o0(), rs(0)), end()];
    assert_eq!(vs(&p), vec![(1, ReadBeforeWrite)]);
    let text = messages(&p, O0);
    assert!(text[0].contains("r0.yzw "), "{}", text[0]);
}

#[test]
fn read_before_write_is_skipped_for_geometry_shaders() {
    assert_eq!(gs(&[mov(o0(), rs(0)), end()]), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 6. MAD descriptor range (typed instructions)

#[test]
fn mad_descriptor_out_of_range_on_typed_instructions() {
    let mut opdescs = descs();
    opdescs.resize(64, descs()[0]);
    let run = |desc| {
        let p = [mad(o0(), v(0), c(0), v(0), desc), end()];
        validate_instructions(&p, &opdescs, 0, ShaderKind::Vertex, O0)
            .iter()
            .map(|d| (d.address, d.kind))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(40), vec![(0, MadOpdescOutOfRange)]);
    assert_eq!(run(32), vec![(0, MadOpdescOutOfRange)]);
    assert_eq!(run(31), vec![]);
}

#[test]
fn descriptor_not_uploaded_is_reported() {
    assert_eq!(
        vs(&[mov_d(o0(), v(0), 9), end()]).first(),
        Some(&(0, OpdescNotUploaded))
    );
    assert_eq!(vs(&[mov_d(o0(), v(0), 4), end()]), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 7. Relative index on a non-uniform

#[test]
fn relative_index_on_non_uniform_is_a_warning() {
    let rel = |src1, rel| Instruction::Unary {
        op: UnaryOp::Mov,
        dst: o0(),
        src1,
        rel,
        desc: XYZW,
        ignored: 0,
    };
    let p = [rel(v(0), RelIndex::A0X), end()];
    assert_eq!(vs(&p), vec![(0, RelativeIndexOnNonUniform)]);
    assert_eq!(RelativeIndexOnNonUniform.severity(), Severity::Warning);
    let p = [rel(c(4), RelIndex::AL), end()];
    assert_eq!(vs(&p), vec![]);
}

// ---------------------------------------------------------------------------------------------
// 8. Stage-specific registers and instructions

#[test]
fn geometry_shader_outputs_stop_at_o6() {
    assert_eq!(gs(&[mov(o(7), v(0)), end()]), vec![(0, OutputNotInStage)]);
    assert_eq!(gs(&[mov(o(15), v(0)), end()]), vec![(0, OutputNotInStage)]);
    assert_eq!(gs(&[mov(o(6), v(0)), end()]), vec![]);
    // A vertex shader has o0-o15.
    assert_eq!(
        check(&[mov(o(7), v(0)), end()], ShaderKind::Vertex, &[]),
        vec![]
    );
}

#[test]
fn emit_in_vertex_shader_is_reported() {
    let p = [mov(o0(), v(0)), setemit(0), emit(), end()];
    assert_eq!(
        vs(&p),
        vec![(1, EmitInVertexShader), (2, EmitInVertexShader)]
    );
    assert_eq!(gs(&p), vec![]);
    let p = [mov(o0(), v(0)), setemit(3), emit(), end()];
    assert_eq!(gs(&p), vec![(1, SetEmitVertexOutOfRange)]);
}

// ---------------------------------------------------------------------------------------------
// 9. Running past the program, endless loops, BREAK outside loops

#[test]
fn running_past_the_end_is_reported() {
    assert_eq!(vs(&[mov(o0(), v(0))]), vec![(0, RunsPastProgram)]);
    // An IF false branch jumping out of the program.
    let p = [ifu(5, 0), mov(o0(), v(0)), end()];
    assert_eq!(vs(&p), vec![(0, RunsPastProgram)]);
    let text = messages(&p, O0);
    assert!(text[0].contains("0x005"), "{}", text[0]);
}

#[test]
fn entry_outside_the_program_is_reported() {
    let code = words(&[mov(o0(), v(0)), end()]);
    let opdescs = descs();
    let input = ValidationInput {
        code: &code,
        opdescs: &opdescs,
        entry: 7,
        stage: ShaderKind::Vertex,
        outputs: O0,
    };
    let diags = validate(&input);
    assert_eq!(diags.len(), 1);
    assert_eq!((diags[0].address, diags[0].kind), (7, RunsPastProgram));
}

#[test]
fn endless_recursion_is_reported() {
    // 0: jmpu b0 -> 2; 1: end; 2: call [2, 4) recursively, forever.
    let p = [jmpu(2), end(), call(2, 2), mov(o0(), v(0)), end()];
    let diags = check(&p, ShaderKind::Vertex, &[]);
    assert_eq!(diags, vec![(2, NeverEnds)]);
    // The same procedure called from elsewhere returns.
    let p = [jmpu(2), end(), call(4, 1), end(), mov(o0(), v(0))];
    assert_eq!(check(&p, ShaderKind::Vertex, &[]), vec![]);
}

#[test]
fn program_without_end_filling_memory_never_ends() {
    // 4096 words: the PC wraps around instead of leaving the program.
    let mut p = vec![nop(); PROGRAM_WORDS];
    assert_eq!(check(&p, ShaderKind::Vertex, &[]), vec![(0, NeverEnds)]);
    p[PROGRAM_WORDS - 1] = end();
    assert_eq!(check(&p, ShaderKind::Vertex, &[]), vec![]);
}

#[test]
fn break_outside_a_loop_is_reported() {
    assert_eq!(
        vs(&[mov(o0(), v(0)), brk(), end()]),
        vec![(1, BreakOutsideLoop)]
    );
    // Inside a loop, BREAKC leaves it (and the write after the loop happens once).
    let p = [loop_(2), breakc(), nop(), mov(o0(), v(0)), end()];
    assert_eq!(vs(&p), vec![]);
}

// ---------------------------------------------------------------------------------------------
// Combined control flow

/// A loop whose body CALLs a procedure with nested IFs; r0 is set on every path but one.
fn loop_call_nested_ifs(patch: Instruction) -> Vec<Instruction> {
    at(&[
        (0, loop_(2)),   // body [1, 2]
        (1, call(5, 6)), // procedure [5, 11)
        (2, nop()),
        (3, mov(o0(), v(0))),
        (4, end()),
        (5, ifu(9, 1)), // then [6, 8], else [9], end 10
        (6, ifc(8, 0)), //   then [7], end 8
        (7, mov(r(0), v(0))),
        (8, patch),
        (9, mov(r(0), c(0))), // else
        (10, mov(r(1), rs(0))),
    ])
}

#[test]
fn loop_with_call_and_nested_ifs() {
    // Outer then-branch with the inner IF false leaves r0 unwritten at 10.
    assert_eq!(
        vs(&loop_call_nested_ifs(nop())),
        vec![(10, ReadBeforeWrite)]
    );
    // Writing r0 at 8, which both inner outcomes reach, fixes it.
    assert_eq!(vs(&loop_call_nested_ifs(mov(r(0), c(1)))), vec![]);
    let graph = explore(&loop_call_nested_ifs(nop()), 0, 1000);
    assert!(graph.complete);
    // The else block never runs after the then block.
    for node in &graph.nodes {
        if node.state.pc == 8 {
            for &s in &node.successors {
                assert_eq!(graph.nodes[s as usize].state.pc, 10);
            }
        }
    }
}

/// `depth` nested procedures, each calling the next; the innermost does not call.
fn nested_calls(depth: u16) -> Vec<Instruction> {
    let mut parts = vec![
        (0, call(10, 2)),
        (1, mov(o0(), v(0))),
        (2, end()),
        (12, end()),
    ];
    for level in 1..depth {
        parts.push((10 * level, call(10 * (level + 1), 2)));
    }
    parts.push((10 * depth + 1, nop()));
    at(&parts)
}

#[test]
fn four_nested_calls_return() {
    assert_eq!(vs(&nested_calls(4)), vec![]);
}

#[test]
fn five_nested_calls_lose_the_oldest_return() {
    // The CALL stack drops the outermost return: P1 runs off its end into 12 (END), and the
    // output written at 1 is never reached.
    assert_eq!(vs(&nested_calls(5)), vec![(12, OutputNotWritten)]);
    let graph = explore(&nested_calls(5), 0, 1000);
    assert!(graph.complete);
    assert!(graph.nodes.len() < 100);
}

#[test]
fn analysis_limit_gives_incomplete_and_keeps_local_checks() {
    let p = [
        loop_(3),
        mova(c(0)),
        mova(c(1)),
        add(o0(), v(0), v(1)),
        end(),
    ];
    let opdescs = descs();
    let ctx = Context {
        program: &p,
        opdescs: &opdescs,
        entry: 0,
        stage: ShaderKind::Vertex,
        outputs: O0,
    };
    let kinds: Vec<_> = run(&ctx, 2).iter().map(|d| (d.address, d.kind)).collect();
    assert_eq!(
        kinds,
        vec![
            (0, AnalysisIncomplete),
            (1, ConsecutiveMova),
            (3, DifferentInputRegisters)
        ]
    );
    let kinds: Vec<_> = run(&ctx, STATE_LIMIT)
        .iter()
        .map(|d| (d.address, d.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (1, ConsecutiveMova),
            (3, DifferentInputRegisters),
            (3, OutputWrittenTwice)
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// The exploration of the control-flow machine (the machine's own tests are in `crate::flow`)

mod machine {
    use super::*;
    use crate::flow::{FlowState, Step};

    fn cont(step: Step) -> FlowState {
        match step {
            Step::Continue { state, .. } => state,
            other => panic!("expected Continue, got {other:?}"),
        }
    }

    #[test]
    fn successors_follow_every_choice() {
        let s = FlowState::new(0);
        let pushed = successors(&s, &loop_(2));
        assert_eq!(pushed.len(), 1);
        let s = cont(pushed[0]);
        let mut at1 = s;
        at1.pc = 1;
        let mut at2 = s;
        at2.pc = 2;
        assert_eq!(successors(&at2, &nop()).len(), 2);
        assert_eq!(successors(&at1, &breakc()).len(), 2);
        assert_eq!(successors(&at1, &nop()).len(), 1);
        assert_eq!(successors(&at1, &ifu(5, 1)).len(), 2);
        assert_eq!(successors(&at1, &end()), vec![Step::End]);
        assert_eq!(
            successors(&FlowState::new(1), &breakc()).len(),
            2,
            "fall through, or fail"
        );
    }

    #[test]
    fn explore_terminates_on_nested_calls_and_respects_the_limit() {
        let program = nested_calls(5);
        let graph = explore(&program, 0, 1000);
        assert!(graph.complete);
        let ends: Vec<u16> = graph
            .nodes
            .iter()
            .filter(|n| n.exits.contains(&flow::Exit::End))
            .map(|n| n.state.pc)
            .collect();
        assert_eq!(ends, vec![12]);
        let small = explore(&program, 0, 3);
        assert!(!small.complete);
        assert_eq!(small.nodes.len(), 3);
    }

    #[test]
    fn explore_records_leaving_the_program() {
        let graph = explore(&[nop(), nop()], 0, 100);
        assert_eq!(graph.nodes.len(), 2);
        assert_eq!(
            graph.nodes[1].exits,
            vec![flow::Exit::OutsideProgram { target: 2 }]
        );
        assert_eq!(graph.can_finish(), vec![true, true]);
    }

    #[test]
    fn reachable_addresses_overapproximate() {
        let p = [ifu(3, 1), nop(), end(), nop(), end(), nop()];
        let seen = reachable_addresses(&p, 0);
        assert_eq!(&seen[..6], &[true, true, true, true, true, false]);
    }
}

#[test]
fn state_explosion_is_capped() {
    // Eight IFs whose then-blocks never close, in a loop made by a backward jump; each IF's
    // else target jumps back to the next IF. The IF stack takes every sequence of entries.
    let mut p: Vec<Instruction> = (0..8).map(|i| ifu(200 + i, 0)).collect();
    p.push(jmpu(0));
    p.push(mov(o0(), v(0)));
    p.push(end());
    p.resize(200, nop());
    p.extend((0..8).map(|i| jmpu(i + 1)));
    p.push(end());
    let kinds = vs(&p);
    assert!(kinds.contains(&(0, AnalysisIncomplete)), "{kinds:?}");
}
