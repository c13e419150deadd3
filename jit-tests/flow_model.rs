//! The validator's abstract control flow over-approximates real executions.
//!
//! Random small programs (flow-control and arithmetic instructions, targets inside the program,
//! END last) run through the reference interpreter with random int, bool and float uniforms,
//! recording the address of every executed instruction. Each recorded sequence must be a walk in
//! the abstract flow graph of `validate::flow::explore`: starting from the entry state, the set
//! of abstract states whose PC equals the concrete PC, followed along the graph's edges, never
//! becomes empty; an invocation that ends at END, fails at BREAK or runs past the program ends
//! at a state with that exit. Programs whose exploration hits the state limit are skipped.
//!
//! The walk checks the stack structure only: the abstract graph follows both outcomes of every
//! test and loop end, so it cannot tell whether the interpreter chose them right (the
//! hand-derived tests of `control_flow.rs` and the one below do).

mod common;

use std::collections::HashMap;

use common::Builder;

use picajit::difftest::rng::Entropy;
use picajit::exec::{ExecConfig, ExecError};
use picajit::float24::Precision;
use picajit::flow::explore::{Exit, FlowGraph, Outcome, explore, reachable_addresses, successors};
use picajit::flow::{Choices, Step, step};
use picajit::interp::Interpreter;
use picajit::isa::{
    BinaryOp, BoolFlowOp, CompareOp, CondCombine, CondFlowOp, Condition, DestMask, DstReg,
    Instruction, OperandDescriptor, PROGRAM_WORDS, RelIndex, SimpleOp, SrcReg, Swizzle, UnaryOp,
    decode, encode,
};
use picajit::program::{ShaderKind, ShaderProgram, Uniforms};

/// The differential tester's deterministic randomness, in this test's units.
struct Rng(Entropy<'static>);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (n > 0; the modulo bias does not matter here).
    fn below(&mut self, n: u32) -> u32 {
        self.0.below(u64::from(n)) as u32
    }

    fn bool(&mut self) -> bool {
        self.0.chance(50)
    }
}

const PROGRAMS: usize = 4000;
const RUNS_PER_PROGRAM: usize = 3;
const STATE_LIMIT: usize = 5_000;
const BUDGET: u64 = 2_000;

fn condition(rng: &mut Rng) -> Condition {
    let combine = [
        CondCombine::Or,
        CondCombine::And,
        CondCombine::X,
        CondCombine::Y,
    ][rng.below(4) as usize];
    Condition {
        ref_x: rng.bool(),
        ref_y: rng.bool(),
        combine,
    }
}

/// A random instruction for address `pc` of a program of `len` words.
fn instruction(rng: &mut Rng, pc: u32, len: u32) -> Instruction {
    // Mostly forward targets: nested scopes are likely, and backward edges (which let the IF and
    // CALL stacks fill with every combination of scopes) rare enough to keep the abstract state
    // space small.
    let forward = |rng: &mut Rng| {
        if rng.below(8) == 0 {
            rng.below(len) as u16
        } else {
            (pc + rng.below(len - pc)) as u16
        }
    };
    let count = |rng: &mut Rng, target: u16| rng.below((len - target as u32).min(4) + 1) as u8;
    let temp = |rng: &mut Rng| rng.below(4) as u8;
    match rng.below(20) {
        0..=2 => Instruction::Binary {
            op: BinaryOp::Add,
            dst: DstReg::temp(temp(rng)),
            src1: SrcReg::uniform(rng.below(4) as u8),
            src2: SrcReg::temp(temp(rng)),
            rel: RelIndex::None,
            desc: 0,
        },
        3 => Instruction::Unary {
            op: UnaryOp::Mov,
            dst: DstReg::temp(temp(rng)),
            src1: SrcReg::uniform(rng.below(4) as u8),
            rel: RelIndex::None,
            desc: 0,
            ignored: 0,
        },
        4..=6 => Instruction::Cmp {
            src1: SrcReg::uniform(rng.below(4) as u8),
            src2: SrcReg::temp(temp(rng)),
            rel: RelIndex::None,
            desc: 0,
            cmp_x: CompareOp::from_bits(rng.below(8)),
            cmp_y: CompareOp::from_bits(rng.below(8)),
        },
        7 => Instruction::Simple {
            op: [SimpleOp::Nop, SimpleOp::Break, SimpleOp::End][rng.below(3) as usize],
            ignored: 0,
        },
        8..=12 => {
            let op = [
                CondFlowOp::Breakc,
                CondFlowOp::Call,
                CondFlowOp::Callc,
                CondFlowOp::Ifc,
                CondFlowOp::Jmpc,
            ][rng.below(5) as usize];
            let target = forward(rng);
            Instruction::CondFlow {
                op,
                cond: condition(rng),
                target,
                count: count(rng, target),
                ignored: 0,
            }
        }
        13..=16 => {
            let op = [BoolFlowOp::Callu, BoolFlowOp::Ifu, BoolFlowOp::Jmpu][rng.below(3) as usize];
            let target = forward(rng);
            Instruction::BoolFlow {
                op,
                bool_id: rng.below(4) as u8,
                target,
                count: count(rng, target),
                ignored: 0,
            }
        }
        _ => Instruction::Loop {
            int_id: rng.below(4) as u8,
            target: forward(rng),
            count: 0,
            ignored: 0,
        },
    }
}

fn program_words(rng: &mut Rng) -> Vec<u32> {
    let len = 4 + rng.below(37); // 4..=40
    let mut words: Vec<u32> = (0..len - 1)
        .map(|pc| encode(&instruction(rng, pc, len)).expect("encodable"))
        .collect();
    words.push(
        encode(&Instruction::Simple {
            op: SimpleOp::End,
            ignored: 0,
        })
        .unwrap(),
    );
    words
}

fn uniforms(rng: &mut Rng) -> Uniforms {
    let mut u = Uniforms::default();
    for i in 0..4 {
        u.int[i] = [
            rng.below(4) as u8,
            rng.below(256) as u8,
            rng.below(256) as u8,
            0,
        ];
        let value = [-1.0, 0.0, 1.0, 2.0][rng.below(4) as usize];
        u.float[i] = [value, -value, value, 0.0];
    }
    u.bools = rng.next() as u16;
    u
}

#[test]
fn a_loop_ending_at_itself_decides_with_its_own_counter() {
    // 0: loop i0, 2   outer, i0 = (0, 5, 0): aL = 5, body [1, 2]
    // 1: loop i1, 1   inner, i1 = (k, 20, 3): aL = 20; its body [2, 1] is empty, so its end
    //                 (2) is reached at once and its own counter decides:
    //   k = 0: the inner loop exits, aL = 23, then back to 5 (the outer loop remains); PC 2;
    //          at 2 the outer loop's last pass ends, aL = 5 + 0.
    //   k = 1: the inner loop repeats, aL = 23, PC = its entry 2; its scope stays on top, and
    //          as 3 is not its end the outer loop is not reached: PC 3.
    let mut b = Builder::new();
    b.ops("loop i0, 0x002; loop i1, 0x001; mov o0, c0[aL]; end");
    let shader = ShaderProgram::new(&b.code, &b.opdescs, 0, ShaderKind::Vertex, 1).unwrap();
    let interp = Interpreter::new(shader, ExecConfig::default());
    for (k, al, marker) in [(0, 5, 1.0), (1, 23, 2.0)] {
        let mut u = Uniforms::default();
        u.int[0] = [0, 5, 0, 0];
        u.int[1] = [k, 20, 3, 0];
        u.float[5] = [1.0; 4];
        u.float[23] = [2.0; 4];
        let mut trace = Vec::new();
        let result = interp
            .run_vertex_traced(&u, &[[0.0; 4]; 16], &mut trace)
            .unwrap();
        assert_eq!(trace, [0, 1, 2, 3], "k = {k}");
        assert_eq!(result.flow.al, al, "k = {k}");
        assert_eq!(result.outputs[0][0], marker, "k = {k}");
    }
}

/// What became of the invocations.
#[derive(Debug, Default)]
struct Tally {
    programs: usize,
    skipped: usize,
    ended: usize,
    broke: usize,
    over_budget: usize,
    ran_past: usize,
    steps: usize,
}

/// Checks that `trace` is a walk in `graph`, and that the way it stopped is an exit there.
fn check_walk(
    graph: &FlowGraph,
    program: &[Instruction],
    trace: &[u16],
    outcome: &Result<(), ExecError>,
    tally: &mut Tally,
    what: &str,
) {
    let len = program.len();
    assert_eq!(graph.nodes[0].state.pc, trace[0], "{what}: entry");
    let mut current: Vec<u32> = vec![0];
    for (i, &pc) in trace.iter().enumerate().skip(1) {
        tally.steps += 1;
        if pc as usize >= len {
            // The abstract exploration stops where a path leaves the program.
            let left = current.iter().any(|&id| {
                graph.nodes[id as usize].exits.iter().any(|exit| {
                    matches!(*exit, Exit::OutsideProgram { target }
                        if target as usize % PROGRAM_WORDS == pc as usize)
                })
            });
            assert!(
                left,
                "{what}: step {i} runs past the program to {pc:#x}, no abstract state does"
            );
            tally.ran_past += 1;
            return;
        }
        let mut next: Vec<u32> = Vec::new();
        for &id in &current {
            for &succ in &graph.nodes[id as usize].successors {
                if graph.nodes[succ as usize].state.pc == pc && !next.contains(&succ) {
                    next.push(succ);
                }
            }
        }
        assert!(
            !next.is_empty(),
            "{what}: step {i} from {:#x} to {pc:#x} is not an edge of the abstract graph \
             (trace {trace:?})",
            trace[i - 1]
        );
        current = next;
    }
    let last = *trace.last().unwrap();
    let has_exit = |wanted: Exit| {
        current
            .iter()
            .any(|&id| graph.nodes[id as usize].exits.contains(&wanted))
    };
    match outcome {
        Ok(()) => {
            assert!(
                matches!(
                    program[last as usize],
                    Instruction::Simple {
                        op: SimpleOp::End,
                        ..
                    }
                ),
                "{what}: ended at {last:#x}, which is not END"
            );
            assert!(has_exit(Exit::End), "{what}: no abstract END at {last:#x}");
            tally.ended += 1;
        }
        Err(ExecError::BreakOutsideLoop { pc }) => {
            assert_eq!(
                *pc, last,
                "{what}: the failing BREAK is the last instruction"
            );
            assert!(
                has_exit(Exit::BreakOutsideLoop),
                "{what}: no abstract BREAK failure at {last:#x}"
            );
            tally.broke += 1;
        }
        Err(ExecError::InstructionBudget { .. }) => tally.over_budget += 1,
        Err(other) => panic!("{what}: unexpected error {other:?}"),
    }
}

#[test]
fn interpreter_paths_are_walks_in_the_abstract_flow_graph() {
    let mut rng = Rng(Entropy::from_seed(0x9E37_79B9_7F4A_7C15));
    let desc = OperandDescriptor::new(DestMask::ALL, [(false, Swizzle::IDENTITY); 3]).0;
    let config = ExecConfig {
        precision: Precision::F24Truncate,
        instruction_budget: BUDGET,
    };
    let mut tally = Tally::default();
    for n in 0..PROGRAMS {
        let words = program_words(&mut rng);
        let program: Vec<Instruction> = words.iter().map(|&w| decode(w)).collect();
        let graph = explore(&program, 0, STATE_LIMIT);
        let runs: Vec<Uniforms> = (0..RUNS_PER_PROGRAM).map(|_| uniforms(&mut rng)).collect();
        tally.programs += 1;
        if !graph.complete {
            tally.skipped += 1;
            continue;
        }
        // The stack-blind superset (the JIT's and validation's fallback) holds every address of
        // the exact graph.
        let superset = reachable_addresses(&program, 0);
        for node in &graph.nodes {
            let pc = node.state.pc as usize;
            assert!(
                pc >= program.len() || superset[pc],
                "program {n}: {pc:#05x} is in the exact graph but not in the superset"
            );
        }
        let shader = ShaderProgram::new(&words, &[desc], 0, ShaderKind::Vertex, 1).unwrap();
        let interp = Interpreter::new(shader, config);
        for (r, u) in runs.iter().enumerate() {
            let mut trace = Vec::new();
            let outcome = interp
                .run_vertex_traced(u, &[[0.0; 4]; 16], &mut trace)
                .map(|_| ());
            let what = format!("program {n} run {r}");
            check_walk(&graph, &program, &trace, &outcome, &mut tally, &what);
        }
    }
    eprintln!("{tally:?}");
    // The generator reaches every kind of outcome, and the limit skips few programs.
    assert!(tally.skipped * 5 < tally.programs, "{tally:?}");
    assert!(tally.ended > 1000, "{tally:?}");
    assert!(tally.broke > 100, "{tally:?}");
    assert!(tally.over_budget > 50, "{tally:?}");
    assert!(tally.ran_past > 50, "{tally:?}");
}

#[test]
fn successors_are_every_distinct_step_over_every_choice() {
    // `successors` and the exploration's recorded outcomes try only the choices a step reads;
    // every choice, in order, deduplicated, must give the same list, and each choice's step
    // must be the outcome recorded for it.
    let mut rng = Rng(Entropy::from_seed(0x5EED_F10E));
    let mut states = 0usize;
    let mut branching = 0usize;
    for _ in 0..PROGRAMS {
        let words = program_words(&mut rng);
        let program: Vec<Instruction> = words.iter().map(|&w| decode(w)).collect();
        let graph = explore(&program, 0, STATE_LIMIT);
        if !graph.complete {
            continue;
        }
        let node_of: HashMap<_, u32> = (graph.nodes.iter().enumerate())
            .map(|(id, node)| (node.state, id as u32))
            .collect();
        for node in &graph.nodes {
            let inst = &program[node.state.pc as usize];
            let outcomes = node.outcomes.expect("a complete graph explored every node");
            let mut every = Vec::new();
            for condition in [false, true] {
                for loop_again in [false, true] {
                    let choices = Choices {
                        condition,
                        loop_again,
                    };
                    let next = step(&node.state, inst, choices);
                    let expected = match next {
                        Step::End => Outcome::Exit(Exit::End),
                        Step::BreakOutsideLoop => Outcome::Exit(Exit::BreakOutsideLoop),
                        Step::Continue { target, .. } if target as usize >= program.len() => {
                            Outcome::Exit(Exit::OutsideProgram { target })
                        }
                        Step::Continue {
                            state, loop_pass, ..
                        } => Outcome::Next {
                            to: node_of[&state],
                            loop_pass,
                        },
                    };
                    assert_eq!(
                        outcomes[Outcome::slot(choices)],
                        expected,
                        "{:?} at {inst:?} under {choices:?}",
                        node.state
                    );
                    if !every.contains(&next) {
                        every.push(next);
                    }
                }
            }
            assert_eq!(
                successors(&node.state, inst),
                every,
                "{:?} at {inst:?}",
                node.state
            );
            states += 1;
            branching += usize::from(every.len() > 1);
        }
    }
    // Tests and loop ends are common in the generated programs.
    assert!(
        branching * 10 > states,
        "{branching} of {states} states branch"
    );
}
