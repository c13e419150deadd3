//! The control-flow stack machine (docs/execution-model.md §5) through whole programs: nested
//! IF/CALL/LOOP, overflow of each stack, the 4-pop CALL quirk, a JMP at a scope end, BREAK and
//! BREAKC with the aL increment, END inside CALL, the inclusive LOOP body and the aL restore.
//! Every expected value is derived by hand from the model in the comments.

mod common;

use common::*;
use picajit::exec::{ExecConfig, ExecError, VertexResult};
use picajit::float24::Precision;
use picajit::program::{ShaderKind, Uniforms};

/// c0 = 1, c1 = 2, c2 = 4, c3 = 8, ...: distinct powers of two mark which code ran.
fn marker_uniforms() -> Uniforms {
    let mut u = Uniforms::default();
    for k in 0..20 {
        u.float[k] = [2f32.powi(k as i32); 4];
    }
    u
}

fn run(b: &Builder, u: &Uniforms) -> VertexResult {
    run_vs(b, Precision::F24Truncate, u, &inputs(&[])).expect("invocation succeeds")
}

fn run_err(b: &Builder, u: &Uniforms) -> ExecError {
    run_vs(b, Precision::F24Truncate, u, &inputs(&[])).expect_err("invocation fails")
}

/// Pads with NOPs up to `address`.
fn pad_to(b: &mut Builder, address: u16) {
    assert!(b.here() <= address, "code overlaps at {address:#x}");
    while b.here() < address {
        b.op("nop");
    }
}

/// Sets cmp = (true, true): c0 = 1 differs from r0 = 0.
const CMP_TRUE: &str = "cmp c0, ne, ne, r0";
/// Sets cmp = (false, false).
const CMP_FALSE: &str = "cmp c0, eq, eq, r0";

#[test]
fn if_else_takes_one_branch() {
    for (set_flags, expected) in [(CMP_TRUE, 2.0f32), (CMP_FALSE, 4.0)] {
        let mut b = Builder::new();
        b.ops(set_flags);
        b.ops("ifc cmp.x, 0x004, 2"); // then [2, 4), else [4, 6)
        b.ops("mov o0, c1; nop; mov o0, c2; nop; end");
        assert_eq!(
            run(&b, &marker_uniforms()).outputs[0][0],
            expected,
            "{set_flags}"
        );
    }
}

#[test]
fn nested_if_and_ifu() {
    let mut b = Builder::new();
    b.ops(CMP_TRUE);
    b.ops("ifc cmp.x && cmp.y, 0x005, 0"); // 1: then [2, 5)
    b.ops("ifu b3, 0x004, 1"); //              2: then [3, 4), else [4, 5)
    b.ops("mov o0, c1"); //                    3
    b.ops("mov o0, c2"); //                    4: else of the IFU
    b.ops("mov o1, c3; end"); //               5
    let mut u = marker_uniforms();
    assert_eq!(run(&b, &u).outputs[0][0], 4.0, "b3 false: else runs");
    u.set_bool(3, true);
    let result = run(&b, &u);
    assert_eq!(
        result.outputs[0][0], 2.0,
        "b3 true: then runs, else is skipped"
    );
    assert_eq!(result.outputs[1][0], 8.0);
}

#[test]
fn call_returns_after_its_count_and_nests() {
    let mut b = Builder::new();
    b.ops("call 0x010, 2; mov o1, c1; mov o3, r0; end");
    pad_to(&mut b, 0x10);
    b.ops("call 0x020, 1; add r0, c2, r0"); // P1 = [0x10, 0x12)
    pad_to(&mut b, 0x20);
    b.ops("add r0, c3, r0"); // P2 = [0x20, 0x21)
    b.ops("mov o2, c4; end"); // only reached if the return failed
    let result = run(&b, &marker_uniforms());
    assert_eq!(
        result.outputs[1][0], 2.0,
        "returned to the instruction after the CALL"
    );
    assert_eq!(result.outputs[2][0], 0.0);
    assert_eq!(result.outputs[3][0], 12.0, "both procedures ran once");
}

#[test]
fn callc_and_callu_not_taken_run_on() {
    let mut b = Builder::new();
    b.ops("callc cmp.x, 0x010, 1; callu b0, 0x010, 1; mov o0, c1; end");
    pad_to(&mut b, 0x10);
    b.ops("mov o1, c2");
    let result = run(&b, &marker_uniforms());
    assert_eq!(result.outputs[0][0], 2.0);
    assert_eq!(result.outputs[1][0], 0.0, "neither call was taken");
}

#[test]
fn call_stack_overflow_drops_the_oldest_return() {
    // main -> P1 -> P2 -> P3 -> P4 -> P5: the fifth push drops main's scope, so P1's end is not
    // recognised and execution falls through past P1.
    let build = |depth: usize| {
        let mut b = Builder::new();
        b.ops("call 0x010, 3; mov o1, c1; end");
        for level in 1..=depth {
            pad_to(&mut b, 0x10 * level as u16);
            if level < depth {
                b.op(&format!("call {:#x}, 3", 0x10 * (level + 1)));
                b.ops("add r0, c0, r0; nop");
            } else {
                b.ops("add r0, c0, r0; nop; nop");
            }
            if level == 1 {
                b.ops("mov o2, c2; mov o0, r0; end"); // 0x13..: the fall-through path
            }
        }
        b
    };
    let five = run(&build(5), &marker_uniforms());
    assert_eq!(five.outputs[1][0], 0.0, "never returned to main");
    assert_eq!(five.outputs[2][0], 4.0, "fell through past P1");
    assert_eq!(five.outputs[0][0], 5.0, "every level's add ran once");
    let four = run(&build(4), &marker_uniforms());
    assert_eq!(
        four.outputs[1][0], 2.0,
        "four levels fit the stack and return to main"
    );
    assert_eq!(four.outputs[2][0], 0.0);
}

#[test]
fn the_fourth_call_pop_in_one_step_keeps_the_third_return_address() {
    // Each procedure is one instruction that calls the next, so all four scopes end together
    // after the innermost one: pops return to 0x31, 0x21, 0x11, and the fourth pop (to 1) is lost.
    let build = |levels: u16| {
        let mut b = Builder::new();
        b.ops("call 0x010, 1; mov o1, c1; end");
        for level in 1..levels {
            pad_to(&mut b, 0x10 * level);
            b.op(&format!("call {:#x}, 1", 0x10 * (level + 1)));
            if level == 1 {
                b.ops("mov o2, c2; end"); // 0x11
            }
        }
        pad_to(&mut b, 0x10 * levels);
        b.op("mov o0, c3");
        b
    };
    let quirk = run(&build(4), &marker_uniforms());
    assert_eq!(quirk.outputs[0][0], 8.0);
    assert_eq!(
        quirk.outputs[2][0], 4.0,
        "continued at the third return address, 0x11"
    );
    assert_eq!(quirk.outputs[1][0], 0.0, "the return to main was lost");
    let three = run(&build(3), &marker_uniforms());
    assert_eq!(
        three.outputs[1][0], 2.0,
        "three pops in one step all update the PC"
    );
    assert_eq!(three.outputs[2][0], 0.0);
}

#[test]
fn jmp_at_the_end_of_a_scope_is_not_taken() {
    let mut b = Builder::new();
    b.ops(CMP_TRUE); //                  0
    b.ops("ifc cmp.x, 0x003, 1"); //     1: then [2, 3), else [3, 4)
    b.ops("jmpc cmp.x, 0x006"); //       2: ends the then block: the IF pops to 4 instead
    b.ops("mov o1, c1"); //              3: else block, skipped
    b.ops("mov o0, c2; end"); //         4
    pad_to(&mut b, 6);
    b.ops("mov o2, c3; end"); //         6
    let result = run(&b, &marker_uniforms());
    assert_eq!(result.outputs[0][0], 4.0);
    assert_eq!(result.outputs[2][0], 0.0, "the jump was dropped");
    assert_eq!(result.outputs[1][0], 0.0);

    // The same jump one instruction earlier is taken.
    let mut b = Builder::new();
    b.ops(CMP_TRUE);
    b.ops("ifc cmp.x, 0x004, 1; jmpc cmp.x, 0x007; nop; mov o1, c1; mov o0, c2; end");
    pad_to(&mut b, 7);
    b.ops("mov o2, c3; end");
    assert_eq!(run(&b, &marker_uniforms()).outputs[2][0], 8.0);
}

#[test]
fn jmpu_and_its_inverted_form() {
    for (b0, line, taken) in [
        (true, "jmpu b0, 0x003", true),
        (false, "jmpu b0, 0x003", false),
        (false, "jmpu !b0, 0x003", true),
    ] {
        let mut b = Builder::new();
        b.ops(line);
        b.ops("mov o0, c1; end; mov o0, c2; end");
        let mut u = marker_uniforms();
        u.set_bool(0, b0);
        let expected = if taken { 4.0 } else { 2.0 };
        assert_eq!(run(&b, &u).outputs[0][0], expected, "{line} with b0 = {b0}");
    }
}

#[test]
fn loop_body_is_inclusive_and_al_steps_after_each_pass() {
    // i0 = (2, 5, 3): three passes with aL = 5, 8, 11; afterwards aL = 5 + 3 * 3 = 14.
    let mut b = Builder::new();
    b.ops("loop i0, 0x001; add r0, c0[aL], r0; mov o0, r0; end");
    let mut u = Uniforms::default();
    u.int[0] = [2, 5, 3, 0];
    u.float[5] = [1.0; 4];
    u.float[8] = [10.0; 4];
    u.float[11] = [100.0; 4];
    let result = run(&b, &u);
    assert_eq!(result.outputs[0][0], 111.0);
    assert_eq!(result.flow.al, 14);
}

#[test]
fn an_invocation_ending_inside_scopes_leaves_nothing_for_the_next() {
    // Each engine starts every invocation with empty stacks; the JIT reuses its context on a
    // thread and empties the stacks of a program that reads them (pushes, BREAK). The first invocation
    // (v0.x = 1) ends inside the loop and the IF; the second (v0.x = 0) runs both passes.
    // Were the first's entries left, its loop would exit inside another one and restore aL
    // (docs/execution-model.md §5): run_vs compares aL with the interpreter's, 5 + 2·3 = 11.
    let mut b = Builder::new();
    b.ops("loop i0, 0x004"); //        0: body [1, 4]
    b.ops("cmp v0, ne, ne, r0"); //    1: cmp.x = v0.x != 0
    b.ops("ifc cmp.x, 0x004, 0"); //   2: then [3, 4)
    b.ops("end"); //                   3
    b.ops("add r1, c0, r1"); //        4
    b.ops("mov o0, r1; end");
    let mut u = Uniforms::default();
    u.int[0] = [1, 5, 3, 0];
    u.float[0] = [1.0; 4];
    // A BREAK outside any loop (in a program without one) must find the LOOP stack empty too.
    let mut lone_break = Builder::new();
    lone_break.ops("add r0, c0, r0; break; end");
    for (x, passes, al) in [(1.0, 0.0, 5), (0.0, 2.0, 11), (1.0, 0.0, 5), (0.0, 2.0, 11)] {
        let v = inputs(&[(0, [x, 0.0, 0.0, 0.0])]);
        let r = run_vs(&b, Precision::F24Truncate, &u, &v).expect("invocation succeeds");
        assert_eq!((r.outputs[0][0], r.flow.al), (passes, al), "v0.x = {x}");
        let failed = run_vs(&lone_break, Precision::F24Truncate, &u, &v);
        assert!(
            matches!(failed, Err(ExecError::BreakOutsideLoop { pc: 1 })),
            "{failed:?}"
        );
    }
}

#[test]
fn nested_loops_restore_the_outer_al() {
    // outer i0 = (1, 0, 1), inner i1 = (1, 10, 1):
    // pass 0: inner adds c10 + c11, aL returns to 0, r1 += c0; pass 1: again, r1 += c1.
    let mut b = Builder::new();
    b.ops("loop i0, 0x004"); //          0: body [1, 4]
    b.ops("loop i1, 0x002"); //          1: body [2, 2]
    b.ops("add r0, c0[aL], r0"); //      2
    b.ops("add r1, c0[aL], r1"); //      3
    b.ops("nop"); //                     4
    b.ops("mov o0, r0; mov o1, r1; end");
    let mut u = Uniforms::default();
    u.int[0] = [1, 0, 1, 0];
    u.int[1] = [1, 10, 1, 0];
    u.float[0] = [1.0; 4];
    u.float[1] = [2.0; 4];
    u.float[10] = [100.0; 4];
    u.float[11] = [1000.0; 4];
    let result = run(&b, &u);
    assert_eq!(result.outputs[0][0], 2200.0);
    assert_eq!(
        result.outputs[1][0], 3.0,
        "the outer aL was 0 then 1 after each inner loop"
    );
    assert_eq!(
        result.flow.al, 2,
        "the last loop ends with nothing outside it: no restore"
    );
}

#[test]
fn nested_loops_ending_on_one_instruction_pop_one_per_step() {
    // Both loops end after address 3. Only the inner scope is checked after it, so when the inner
    // loop finishes the PC goes to 4 and the outer loop never repeats.
    let mut b = Builder::new();
    b.ops("loop i0, 0x003; add r1, c0, r1; loop i1, 0x003; add r0, c0, r0");
    b.ops("mov o0, r0; mov o1, r1; end");
    let mut u = marker_uniforms();
    u.int[0] = [1, 0, 0, 0];
    u.int[1] = [2, 0, 0, 0];
    let result = run(&b, &u);
    assert_eq!(
        result.outputs[0][0], 3.0,
        "inner body ran i1.x + 1 = 3 times"
    );
    assert_eq!(result.outputs[1][0], 1.0, "outer body ran once");
}

#[test]
fn break_and_breakc_leave_the_loop_and_still_step_al() {
    // r0 counts passes; BREAKC leaves once r0 >= 3. aL: 0 -> 1 -> 2 -> 3 (the break pass steps too).
    let mut b = Builder::new();
    b.ops("loop i0, 0x003; add r0, c0, r0; cmp c2, le, le, r0; breakc cmp.x");
    b.ops("mov o0, r0; end");
    let mut u = Uniforms::default();
    u.int[0] = [9, 0, 1, 0];
    u.float[0] = [1.0; 4];
    u.float[2] = [3.0; 4];
    let result = run(&b, &u);
    assert_eq!(result.outputs[0][0], 3.0);
    assert_eq!(result.flow.al, 3);

    // An unconditional BREAK in the middle of the body.
    let mut b = Builder::new();
    b.ops("loop i0, 0x003; add r0, c0, r0; break; add r0, c0, r0; mov o0, r0; end");
    let result = run(&b, &u);
    assert_eq!(result.outputs[0][0], 1.0);
    assert_eq!(result.flow.al, 1);
}

#[test]
fn break_on_an_empty_loop_stack_is_an_error() {
    let mut b = Builder::new();
    b.ops("break; end");
    let err = run_err(&b, &Uniforms::default());
    assert_eq!(err, ExecError::BreakOutsideLoop { pc: 0 });
    assert_eq!(err.kind(), "break-outside-loop");
    // A BREAKC whose condition is false is harmless; a true one fails.
    let mut b = Builder::new();
    b.ops("breakc cmp.x; mov o0, c0; end");
    assert!(run_vs(&b, Precision::F24Truncate, &marker_uniforms(), &inputs(&[])).is_ok());
    let mut b = Builder::new();
    b.ops("breakc !cmp.x; end");
    assert_eq!(
        run_err(&b, &marker_uniforms()),
        ExecError::BreakOutsideLoop { pc: 0 }
    );
}

#[test]
fn end_inside_call_stops_at_once() {
    let mut b = Builder::new();
    b.ops("call 0x010, 3; mov o1, c1; end");
    pad_to(&mut b, 0x10);
    b.ops("mov o0, c2; end; mov o2, c3");
    let result = run(&b, &marker_uniforms());
    assert_eq!(result.outputs[0][0], 4.0);
    assert_eq!(result.outputs[1][0], 0.0);
    assert_eq!(result.outputs[2][0], 0.0);
}

#[test]
fn if_stack_overflow_drops_the_outermost_scope() {
    // IF0 at 1 has then [2, 21) and else [21, 23); IF1..IFk nest inside with empty else blocks.
    // With 9 IFs the outermost scope is dropped, so its else block runs as straight-line code.
    let build = |inner: u16| {
        let mut b = Builder::new();
        b.ops(CMP_TRUE);
        b.ops("ifc cmp.x, 0x015, 2");
        for k in 1..=inner {
            b.op(&format!("ifc cmp.x, {:#x}, 0", 21 - k));
        }
        pad_to(&mut b, 21);
        b.ops("mov o1, c1; nop; mov o0, c2; end");
        b
    };
    let overflow = run(&build(8), &marker_uniforms());
    assert_eq!(
        overflow.outputs[1][0], 2.0,
        "else block of the dropped IF ran"
    );
    assert_eq!(overflow.outputs[0][0], 4.0);
    let fits = run(&build(7), &marker_uniforms());
    assert_eq!(
        fits.outputs[1][0], 0.0,
        "eight IFs fit: the else block is skipped"
    );
    assert_eq!(fits.outputs[0][0], 4.0);
}

#[test]
fn loop_stack_overflow_drops_the_outermost_loop() {
    // Five nested single-pass loops each ending one instruction later than the next inner one.
    // The outermost scope is dropped by the fifth push, so its body never repeats even though i0
    // asks for two passes; with four loops it repeats.
    let build = |levels: u16| {
        let mut b = Builder::new();
        for level in 0..levels {
            let last = 2 * levels - 1 - level; // the body of loop `level` ends here
            let int = if level == 0 { 0 } else { 1 };
            b.op(&format!("loop i{int}, {last:#x}"));
        }
        b.op("add r0, c0, r0");
        while b.here() < 2 * levels {
            b.op("nop");
        }
        b.ops("mov o0, r0; end");
        b
    };
    let mut u = marker_uniforms();
    u.int[0] = [1, 0, 0, 0]; // outermost: two passes
    u.int[1] = [0, 0, 0, 0]; // the others: one pass
    assert_eq!(
        run(&build(5), &u).outputs[0][0],
        1.0,
        "outermost loop lost: one pass"
    );
    assert_eq!(
        run(&build(4), &u).outputs[0][0],
        2.0,
        "four loops fit: the outer one repeats"
    );
}

#[test]
fn al_beyond_the_byte_range_offsets_by_zero() {
    // i0 = (0, 200, 0): aL = 200 is outside -128..127, so c1[aL] reads c1.
    let mut b = Builder::new();
    b.ops("loop i0, 0x001; mov o0, c1[aL]; end");
    let mut u = marker_uniforms();
    u.int[0] = [0, 200, 0, 0];
    assert_eq!(run(&b, &u).outputs[0][0], 2.0);
}

#[test]
fn the_instruction_budget_stops_endless_programs() {
    let mut b = Builder::new();
    b.ops("nop; jmpc cmp.x || !cmp.y, 0x000");
    let config = ExecConfig {
        instruction_budget: 1000,
        ..ExecConfig::default()
    };
    let err = run_vs_with(
        b.program(ShaderKind::Vertex),
        config,
        &Uniforms::default(),
        &inputs(&[]),
    )
    .unwrap_err();
    assert_eq!(
        err,
        ExecError::InstructionBudget {
            budget: 1000,
            pc: 0
        }
    );
    assert_eq!(err.kind(), "instruction-budget");
    // A program without END runs off its code into zeroed memory, wraps at 4096 and never ends.
    let mut b = Builder::new();
    b.ops("mov o0, c0");
    assert_eq!(run_err(&b, &marker_uniforms()).kind(), "instruction-budget");
    // Exactly the budget is allowed: 999 NOPs and END are 1000 instructions.
    let mut b = Builder::new();
    for _ in 0..999 {
        b.op("nop");
    }
    b.op("end");
    assert!(
        run_vs_with(
            b.program(ShaderKind::Vertex),
            config,
            &Uniforms::default(),
            &inputs(&[])
        )
        .is_ok()
    );
}

#[test]
fn the_pc_wraps_at_4096() {
    // A JMP to 0xFFF whose instruction there falls through to address 0 again.
    let mut b = Builder::new();
    b.ops("ifu b0, 0x003, 0; mov o0, c1; end; jmpu !b0, 0xfff");
    pad_to(&mut b, 0xFFF);
    b.op("nop"); // 0xFFF -> 0x000, where b0 is now... still false: loops until the budget
    let mut u = marker_uniforms();
    u.set_bool(0, true);
    // b0 true: IFU runs its then-block [1, 3): mov o0, c1; end.
    assert_eq!(run(&b, &u).outputs[0][0], 2.0);
    // b0 false: 0 -> 3 (jmpu !b0 taken) -> 0xFFF -> 0 -> ... forever.
    assert_eq!(run_err(&b, &marker_uniforms()).kind(), "instruction-budget");
    // A counter loop through 0xFFF: the NOP there falls through to address 0.
    let mut b = Builder::new();
    b.ops("add r0, c0, r0; cmp c1, le, le, r0; jmpc !cmp.x, 0xfff; mov o0, r0; end");
    pad_to(&mut b, 0xFFF);
    b.op("nop");
    assert_eq!(
        run(&b, &marker_uniforms()).outputs[0][0],
        2.0,
        "went round once through 0xFFF"
    );
}
