//! The control-flow stack machine of `semantics.md` section 5, and an exploration of every path
//! through it.
//!
//! [`step`] is the exact machine: given a [`FlowState`] (PC and the IF, CALL and LOOP stacks),
//! the instruction at the PC and the two data-dependent facts ([`Choices`]: whether the
//! instruction's test passes, whether the innermost loop runs its body again), it computes the
//! next state. It knows nothing about registers, so an engine that tracks the condition flags,
//! the uniforms and the loop counters can drive it directly.
//!
//! [`explore`] runs the machine abstractly: the choices are unknown, so every combination is
//! followed. Loop stack entries carry no iteration counter, so the set of abstract states is
//! finite (bounded by the stack depths) and a worklist with a visited set terminates; a state
//! limit keeps pathological programs cheap. The result is a [`FlowGraph`] whose nodes are the
//! abstract states and whose edges are the possible executions of one instruction.
//!
//! Every address is 12 bits, as in the interpreter ([`crate::interp::flow::wrap`]): scope ends
//! (`DST+NUM`, `DST+1`), return addresses and the next PC all wrap at 4096 before they are
//! compared. This is a choice: nothing is known about the hardware's comparator width.

use std::collections::{HashMap, VecDeque};

use crate::interp::flow::wrap;
use crate::isa::{BoolFlowOp, CondFlowOp, Instruction, PROGRAM_WORDS, SimpleOp};

/// Depth of the IF stack.
pub const IF_DEPTH: usize = 8;
/// Depth of the CALL stack.
pub const CALL_DEPTH: usize = 4;
/// Depth of the LOOP stack.
pub const LOOP_DEPTH: usize = 4;

/// A fixed-capacity stack that, when full, drops its oldest (bottom) entry on a push.
///
/// Slots above the length always hold `T::default()`, so two stacks with the same entries are
/// equal and hash alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RingStack<T, const N: usize> {
    items: [T; N],
    len: u8,
}

impl<T: Copy + Default, const N: usize> Default for RingStack<T, N> {
    fn default() -> Self {
        RingStack {
            items: [T::default(); N],
            len: 0,
        }
    }
}

impl<T: Copy + Default, const N: usize> RingStack<T, N> {
    /// An empty stack.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the stack holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[T] {
        &self.items[..self.len()]
    }

    /// The newest entry.
    pub fn top(&self) -> Option<T> {
        self.entries().last().copied()
    }

    /// Pushes an entry; when the stack is full the oldest entry is overwritten (lost).
    pub fn push(&mut self, item: T) {
        if self.len() == N {
            self.items.copy_within(1.., 0);
            self.items[N - 1] = item;
        } else {
            self.items[self.len()] = item;
            self.len += 1;
        }
    }

    /// Removes and returns the newest entry.
    pub fn pop(&mut self) -> Option<T> {
        let top = self.top()?;
        self.len -= 1;
        self.items[self.len()] = T::default();
        Some(top)
    }
}

/// An IF stack entry, pushed by IFC/IFU whose test passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IfEntry {
    /// `DST`: when the instruction before it has executed, the PC goes to `end`.
    pub else_addr: u16,
    /// `DST + NUM` (unwrapped).
    pub end: u16,
}

/// A CALL stack entry, pushed by a CALL, CALLC or CALLU that is taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CallEntry {
    /// `DST + NUM` (unwrapped): the address after the procedure's last instruction.
    pub end: u16,
    /// The address after the CALL.
    pub ret: u16,
}

/// A LOOP stack entry, without its iteration counter (the abstract machine does not track it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LoopEntry {
    /// The first body instruction (the address after the LOOP).
    pub entry: u16,
    /// `DST + 1`: the address after the last body instruction.
    pub end: u16,
}

/// The control state of one invocation: everything the flow of control depends on besides the
/// condition flags, the uniforms and the loop counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowState {
    /// The address of the next instruction (0..4096).
    pub pc: u16,
    /// The IF stack.
    pub ifs: RingStack<IfEntry, IF_DEPTH>,
    /// The CALL stack.
    pub calls: RingStack<CallEntry, CALL_DEPTH>,
    /// The LOOP stack.
    pub loops: RingStack<LoopEntry, LOOP_DEPTH>,
}

impl FlowState {
    /// The state at the start of an invocation: PC at `entry`, every stack empty.
    pub fn new(entry: u16) -> FlowState {
        FlowState {
            pc: entry % PROGRAM_WORDS as u16,
            ..FlowState::default()
        }
    }
}

/// The data-dependent facts one instruction's control flow depends on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Choices {
    /// Whether the instruction's test passes: the IF enters its then-block, the CALLC/CALLU or
    /// JMPC/JMPU is taken, the BREAKC breaks. (JMPU's NUM-bit-0 inversion is already applied.)
    /// Ignored by instructions without a test.
    pub condition: bool,
    /// Whether the innermost loop runs its body again when this instruction ends the body (its
    /// counter was not yet exhausted). Ignored when no loop ends here.
    pub loop_again: bool,
}

/// The result of executing one instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// Execution goes on.
    Continue {
        /// The new state (its PC wrapped to 0..4096).
        state: FlowState,
        /// The new PC before wrapping (up to 4350), to tell a wrap-around from a jump.
        target: u32,
    },
    /// END: the invocation stops.
    End,
    /// BREAK or a taken BREAKC with an empty LOOP stack: the invocation fails (the GPU hangs).
    BreakOutsideLoop,
}

/// Whether an instruction has a data-dependent test ([`Choices::condition`] matters).
pub fn is_conditional(inst: &Instruction) -> bool {
    match inst {
        Instruction::CondFlow { op, .. } => *op != CondFlowOp::Call,
        Instruction::BoolFlow { .. } => true,
        _ => false,
    }
}

/// Executes the control flow of `inst` (the instruction at `state.pc`) exactly as the model
/// says: the instruction's own effect (pushes, jump request), then the CALL stack pops while its
/// top ends at the next PC (the fourth pop in one step leaves the PC alone), the IF stack pops at
/// most once, the LOOP stack at most once (loop again or exit; BREAK exits), and a jump is taken
/// only when no stack entry matched. Priority LOOP > IF > CALL > jump > PC+1.
pub fn step(state: &FlowState, inst: &Instruction, choices: Choices) -> Step {
    let old_pc = state.pc as u32;
    // Unwrapped, to tell running off the end of memory from a jump; compared wrapped.
    let next_pc = old_pc + 1;
    let next_wrapped = wrap(next_pc) as u32;
    let mut s = *state;
    let mut jump = None;
    let mut brk = false;
    let call = |s: &mut FlowState, target: u16, count: u8| {
        s.calls.push(CallEntry {
            end: wrap(target as u32 + count as u32),
            ret: wrap(next_pc),
        });
        Some(target as u32)
    };
    let branch_if = |s: &mut FlowState, target: u16, count: u8| {
        if choices.condition {
            s.ifs.push(IfEntry {
                else_addr: target,
                end: wrap(target as u32 + count as u32),
            });
            None
        } else {
            Some(target as u32)
        }
    };
    match *inst {
        Instruction::Simple { op, .. } => match op {
            SimpleOp::End => return Step::End,
            SimpleOp::Break => brk = true,
            SimpleOp::Nop | SimpleOp::Emit => {}
        },
        Instruction::CondFlow {
            op, target, count, ..
        } => match op {
            CondFlowOp::Breakc => brk = choices.condition,
            CondFlowOp::Call => jump = call(&mut s, target, count),
            CondFlowOp::Callc if choices.condition => jump = call(&mut s, target, count),
            CondFlowOp::Callc => {}
            CondFlowOp::Ifc => jump = branch_if(&mut s, target, count),
            CondFlowOp::Jmpc if choices.condition => jump = Some(target as u32),
            CondFlowOp::Jmpc => {}
        },
        Instruction::BoolFlow {
            op, target, count, ..
        } => match op {
            BoolFlowOp::Callu if choices.condition => jump = call(&mut s, target, count),
            BoolFlowOp::Callu => {}
            BoolFlowOp::Ifu => jump = branch_if(&mut s, target, count),
            BoolFlowOp::Jmpu if choices.condition => jump = Some(target as u32),
            BoolFlowOp::Jmpu => {}
        },
        Instruction::Loop { target, .. } => s.loops.push(LoopEntry {
            entry: wrap(next_pc),
            end: wrap(target as u32 + 1),
        }),
        _ => {}
    }
    if brk && s.loops.is_empty() {
        return Step::BreakOutsideLoop;
    }

    let mut pc = next_pc;
    let mut matched = false;
    // CALL: pop while the top ends at the next PC; the fourth pop does not update the PC.
    let mut next = next_wrapped;
    for k in 0..CALL_DEPTH {
        match s.calls.top() {
            Some(top) if top.end as u32 == next => {
                if k < CALL_DEPTH - 1 {
                    pc = top.ret as u32;
                    next = pc;
                }
                s.calls.pop();
                matched = true;
            }
            _ => break,
        }
    }
    // IF: at most one pop, compared with old_pc + 1.
    if let Some(top) = s.ifs.top()
        && top.else_addr as u32 == next_wrapped
    {
        pc = top.end as u32;
        s.ifs.pop();
        matched = true;
    }
    // LOOP: at most one step, compared with old_pc + 1, or forced by BREAK.
    if let Some(top) = s.loops.top()
        && (top.end as u32 == next_wrapped || brk)
    {
        if !brk && choices.loop_again {
            pc = top.entry as u32;
        } else {
            pc = top.end as u32;
            s.loops.pop();
        }
        matched = true;
    }
    if !matched && let Some(target) = jump {
        pc = target;
    }
    s.pc = (pc % PROGRAM_WORDS as u32) as u16;
    Step::Continue {
        state: s,
        target: pc,
    }
}

/// Every distinct result of [`step`] over all [`Choices`].
pub fn successors(state: &FlowState, inst: &Instruction) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::with_capacity(4);
    for condition in [false, true] {
        for loop_again in [false, true] {
            let next = step(
                state,
                inst,
                Choices {
                    condition,
                    loop_again,
                },
            );
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

/// One abstract state and what executing its instruction can lead to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowNode {
    /// The state; its instruction is the one at `state.pc`.
    pub state: FlowState,
    /// Indices of the nodes one execution can reach.
    pub successors: Vec<u32>,
    /// The ways one execution can leave the program.
    pub exits: Vec<Exit>,
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
    let mut index: HashMap<FlowState, u32> = HashMap::new();
    let mut queue = VecDeque::new();
    let start = FlowState::new(entry);
    index.insert(start, 0);
    graph.nodes.push(FlowNode {
        state: start,
        successors: Vec::new(),
        exits: Vec::new(),
    });
    queue.push_back(0u32);
    'explore: while let Some(id) = queue.pop_front() {
        let state = graph.nodes[id as usize].state;
        let inst = &program[state.pc as usize];
        let mut succs = Vec::new();
        let mut exits = Vec::new();
        for next in successors(&state, inst) {
            match next {
                Step::End => exits.push(Exit::End),
                Step::BreakOutsideLoop => exits.push(Exit::BreakOutsideLoop),
                Step::Continue { state, target } => {
                    if len < PROGRAM_WORDS && target as usize >= len {
                        exits.push(Exit::OutsideProgram { target });
                        continue;
                    }
                    let next_id = match index.get(&state) {
                        Some(&known) => known,
                        None => {
                            if graph.nodes.len() >= limit {
                                graph.complete = false;
                                break 'explore;
                            }
                            let fresh = graph.nodes.len() as u32;
                            index.insert(state, fresh);
                            graph.nodes.push(FlowNode {
                                state,
                                successors: Vec::new(),
                                exits: Vec::new(),
                            });
                            queue.push_back(fresh);
                            fresh
                        }
                    };
                    if !succs.contains(&next_id) {
                        succs.push(next_id);
                    }
                }
            }
        }
        let node = &mut graph.nodes[id as usize];
        node.successors = succs;
        node.exits = exits;
    }
    graph
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

/// An over-approximation of the addresses the machine can execute from `entry`, without stacks:
/// every instruction but END may go on to the next address, and every flow instruction also to
/// each address it can send the PC to (jump or block target, IF end, loop exit). Cheap and
/// always finite; used when [`explore`] hits its limit.
pub fn reachable_addresses(program: &[Instruction], entry: u16) -> Vec<bool> {
    let len = program.len().min(PROGRAM_WORDS);
    let mut seen = vec![false; PROGRAM_WORDS];
    let mut stack = vec![entry as usize % PROGRAM_WORDS];
    let wrap = |a: u32| (a % PROGRAM_WORDS as u32) as usize;
    while let Some(addr) = stack.pop() {
        if addr >= len || seen[addr] {
            continue;
        }
        seen[addr] = true;
        let next = addr as u32 + 1;
        match program[addr] {
            Instruction::Simple {
                op: SimpleOp::End, ..
            } => {}
            Instruction::CondFlow { target, count, .. }
            | Instruction::BoolFlow { target, count, .. } => {
                let target = target as u32;
                stack.extend([wrap(next), wrap(target), wrap(target + count as u32)]);
            }
            Instruction::Loop { target, .. } => {
                stack.extend([wrap(next), wrap(target as u32 + 1)]);
            }
            _ => stack.push(wrap(next)),
        }
    }
    seen
}
