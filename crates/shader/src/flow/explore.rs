//! An exploration of every path through the control-flow machine of [`crate::flow`].
//!
//! [`explore`] runs the machine abstractly: the [`Choices`] (whether a test passes, whether a
//! loop runs its body again) are unknown, so every combination is followed. Loop scopes carry no
//! iteration counter, so the set of abstract states is finite (bounded by the stack depths) and
//! a worklist with a visited set terminates; a state limit keeps pathological programs cheap.
//! The result is a [`FlowGraph`] whose nodes are the abstract states and whose edges are the
//! possible executions of one instruction. Every concrete execution of the interpreter, which
//! drives the same machine with concrete choices, is a walk in this graph.
//!
//! Every address is 12 bits, as in the machine ([`crate::flow::wrap`]).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use crate::flow::{
    Choices, FlowState, LoopPass, Scope, Step, is_conditional, pushed_scope, step, step_asking,
    wrap,
};
use crate::isa::{Instruction, PROGRAM_WORDS, SimpleOp};

/// Every distinct result of [`step`] over all [`Choices`], in the order of (condition,
/// loop again): (false, false), (false, true), (true, false), (true, true). A choice the step
/// does not read gives nothing new, so it is not tried.
pub fn successors(state: &FlowState, inst: &Instruction) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::with_capacity(4);
    let conditions: &[bool] = if is_conditional(inst) {
        &[false, true]
    } else {
        &[false]
    };
    for &condition in conditions {
        let (first, asked) = step_asking(
            state,
            inst,
            Choices {
                condition,
                loop_again: false,
            },
        );
        let again = asked.then(|| {
            step(
                state,
                inst,
                Choices {
                    condition,
                    loop_again: true,
                },
            )
        });
        for next in std::iter::once(first).chain(again) {
            if !out.contains(&next) {
                out.push(next);
            }
        }
    }
    out
}

/// A way an abstract path leaves the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Exit {
    /// The instruction is END.
    End,
    /// BREAK with an empty LOOP stack.
    BreakOutsideLoop,
    /// The next PC is outside the program (at or past its length, which is below 4096).
    OutsideProgram {
        /// The unwrapped PC reached.
        target: u32,
    },
}

/// Where one execution of a node's instruction leads, for one set of [`Choices`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Execution goes on at the node `to`.
    Next {
        /// The node reached.
        to: u32,
        /// The loop pass that ended here, if one did.
        loop_pass: Option<LoopPass>,
    },
    /// The execution leaves the program.
    Exit(Exit),
}

impl Outcome {
    /// The place of `choices`' outcome in [`FlowNode::outcomes`].
    pub const fn slot(choices: Choices) -> usize {
        (choices.condition as usize) << 1 | choices.loop_again as usize
    }
}

/// One abstract state and what executing its instruction can lead to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowNode {
    /// The state; its instruction is the one at `state.pc`.
    pub state: FlowState,
    /// Indices of the nodes one execution can reach.
    pub successors: Vec<u32>,
    /// The ways one execution can leave the program.
    pub exits: Vec<Exit>,
    /// The outcome of each set of choices, by [`Outcome::slot`]; `None` for the nodes the
    /// state limit left unexplored. So a user of the graph never steps the machine again.
    pub outcomes: Option<[Outcome; 4]>,
}

/// Every abstract state reachable from the entry, and the possible steps between them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowGraph {
    /// The states; node 0 is the entry (absent when the entry is outside the program). Nodes
    /// are numbered in breadth-first order.
    pub nodes: Vec<FlowNode>,
    /// False when the state limit stopped the exploration: nodes still queued then have no
    /// successors and no exits recorded.
    pub complete: bool,
}

/// A fast hasher for the visited set (the default SipHash dominated the exploration's time;
/// the states are not attacker-chosen keys of a long-lived table, and the limit bounds the
/// table anyway): multiply-rotate over each word written.
#[derive(Default)]
struct StateHasher(u64);

impl Hasher for StateHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(n.into());
    }

    fn write_u16(&mut self, n: u16) {
        self.write_u64(n.into());
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(n.into());
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7C_C1_B7_27_22_0A_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A state as a key of the visited set: hashed as a few packed words (the derived hash writes
/// every field of every stack slot).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key(FlowState);

impl Hash for Key {
    fn hash<H: Hasher>(&self, hasher: &mut H) {
        let s = &self.0;
        hasher.write_u64(
            u64::from(s.pc)
                | (s.ifs.len() as u64) << 16
                | (s.calls.len() as u64) << 24
                | (s.loops.len() as u64) << 32,
        );
        let pair = |a: u16, b: u16| u64::from(a) | u64::from(b) << 16;
        for e in s.ifs.entries() {
            hasher.write_u64(pair(e.else_addr, e.end));
        }
        for e in s.calls.entries() {
            hasher.write_u64(pair(e.end, e.ret));
        }
        for e in s.loops.entries() {
            hasher.write_u64(pair(e.entry, e.end));
        }
    }
}

/// Explores every path of the control-flow machine over `program` (at most 4096 words; PC wraps
/// at 4096) from `entry`, stopping after `limit` states.
pub fn explore(program: &[Instruction], entry: u16, limit: usize) -> FlowGraph {
    let len = program.len().min(PROGRAM_WORDS);
    let mut graph = FlowGraph {
        nodes: Vec::new(),
        complete: true,
    };
    if entry as usize >= len {
        return graph;
    }
    let mut index: HashMap<Key, u32, BuildHasherDefault<StateHasher>> = HashMap::default();
    let start = FlowState::new(entry);
    index.insert(Key(start), 0);
    graph.nodes.push(unexplored(start));
    // Nodes are numbered in the order they are found, so the node list is its own queue.
    let mut id = 0;
    'explore: while id < graph.nodes.len() {
        let state = graph.nodes[id].state;
        let inst = &program[state.pc as usize];
        let mut succs = Vec::new();
        let mut exits = Vec::new();
        let mut outcomes = [Outcome::Exit(Exit::End); 4];
        // The choices in the order of `successors`. A choice the step does not read has the
        // outcome of the choice that differs from it in that alone.
        let conditions: &[bool] = if is_conditional(inst) {
            &[false, true]
        } else {
            &[false]
        };
        for &condition in conditions {
            let choices = |loop_again| Choices {
                condition,
                loop_again,
            };
            let (first, asked) = step_asking(&state, inst, choices(false));
            let again = asked.then(|| step(&state, inst, choices(true)));
            for (loop_again, next) in [(false, Some(first)), (true, again)] {
                let Some(next) = next else {
                    outcomes[Outcome::slot(choices(true))] =
                        outcomes[Outcome::slot(choices(false))];
                    continue;
                };
                let outcome = match next {
                    Step::End => Outcome::Exit(Exit::End),
                    Step::BreakOutsideLoop => Outcome::Exit(Exit::BreakOutsideLoop),
                    Step::Continue { target, .. }
                        if len < PROGRAM_WORDS && target as usize >= len =>
                    {
                        Outcome::Exit(Exit::OutsideProgram { target })
                    }
                    Step::Continue {
                        state, loop_pass, ..
                    } => {
                        let to = match index.get(&Key(state)) {
                            Some(&known) => known,
                            None => {
                                if graph.nodes.len() >= limit {
                                    graph.complete = false;
                                    break 'explore;
                                }
                                let fresh = graph.nodes.len() as u32;
                                index.insert(Key(state), fresh);
                                graph.nodes.push(unexplored(state));
                                fresh
                            }
                        };
                        Outcome::Next { to, loop_pass }
                    }
                };
                outcomes[Outcome::slot(choices(loop_again))] = outcome;
                match outcome {
                    Outcome::Next { to, .. } if !succs.contains(&to) => succs.push(to),
                    Outcome::Exit(exit) if !exits.contains(&exit) => exits.push(exit),
                    _ => {}
                }
            }
        }
        if conditions.len() == 1 {
            outcomes.copy_within(0..2, 2);
        }
        let node = &mut graph.nodes[id];
        node.successors = succs;
        node.exits = exits;
        node.outcomes = Some(outcomes);
        id += 1;
    }
    graph
}

/// A node found and not yet explored.
fn unexplored(state: FlowState) -> FlowNode {
    FlowNode {
        state,
        successors: Vec::new(),
        exits: Vec::new(),
        outcomes: None,
    }
}

impl FlowGraph {
    /// For each node, the nodes with an edge to it.
    pub fn predecessors(&self) -> Vec<Vec<u32>> {
        let mut preds = vec![Vec::new(); self.nodes.len()];
        for (id, node) in self.nodes.iter().enumerate() {
            for &succ in &node.successors {
                preds[succ as usize].push(id as u32);
            }
        }
        preds
    }

    /// For each node, whether some path from it leaves the program (END, a failing BREAK, or
    /// running off the end). A node where this is false can only loop forever.
    pub fn can_finish(&self) -> Vec<bool> {
        let preds = self.predecessors();
        let mut finish = vec![false; self.nodes.len()];
        let mut stack: Vec<u32> = Vec::new();
        for (id, node) in self.nodes.iter().enumerate() {
            if !node.exits.is_empty() {
                finish[id] = true;
                stack.push(id as u32);
            }
        }
        while let Some(id) = stack.pop() {
            for &pred in &preds[id as usize] {
                if !finish[pred as usize] {
                    finish[pred as usize] = true;
                    stack.push(pred);
                }
            }
        }
        finish
    }

    /// The set of addresses (index = address) some node executes.
    pub fn addresses(&self) -> Vec<bool> {
        let mut seen = vec![false; PROGRAM_WORDS];
        for node in &self.nodes {
            seen[node.state.pc as usize] = true;
        }
        seen
    }
}

/// Every address control can reach when any scope could end anywhere (the stacks ignored): a
/// superset of the exact graph's addresses, for programs whose graph is too large to explore.
/// Each instruction leads to the next address (wrapped), a flow instruction also to its target,
/// and a scope it pushes to every address the scope names ([`pushed_scope`]: where an IF or a
/// LOOP ends, where a CALL returns, where a LOOP's body starts). END leads nowhere. Addresses
/// at or past `program.len()` are not followed.
pub fn reachable_addresses(program: &[Instruction], entry: u16) -> Vec<bool> {
    let mut seen = vec![false; PROGRAM_WORDS];
    let mut work = vec![wrap(entry as u32)];
    while let Some(pc) = work.pop() {
        let at = pc as usize;
        if at >= program.len() || std::mem::replace(&mut seen[at], true) {
            continue;
        }
        let inst = &program[at];
        if let Instruction::Simple {
            op: SimpleOp::End, ..
        } = inst
        {
            continue;
        }
        work.push(wrap(pc as u32 + 1));
        if let Instruction::CondFlow { target, .. } | Instruction::BoolFlow { target, .. } = *inst {
            work.push(wrap(target as u32));
        }
        match pushed_scope(pc, inst) {
            Some(Scope::If(scope)) => work.push(scope.end),
            Some(Scope::Call(scope)) => work.extend([scope.end, scope.ret]),
            Some(Scope::Loop(scope)) => work.extend([scope.entry, scope.end]),
            None => {}
        }
    }
    seen
}
