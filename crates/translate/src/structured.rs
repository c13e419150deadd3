//! The structured form (docs/gpu-shaders.md, "The structured form"): if/else, loops, `break`
//! and `continue`, built from the model's own exploration of the control flow
//! ([`shader::flow::explore`]). Each abstract state (a PC and the three stacks' addresses) is
//! a node; what one instruction can do next is [`shader::flow::step`] under every choice, so the
//! stack quirks (the fourth CALL pop, a jump at a scope end, BREAK leaving IF and CALL scopes
//! pushed) are the model's, not restated. A state reached twice with the same stacks is one
//! node; a subroutine called from two places is two sets of nodes, so calls are inlined.
//!
//! The nodes and their edges, less the edges that run a loop body again, must form a DAG;
//! each loop body (the states whose LOOP stack holds that loop) must be entered at its first
//! state only and left to one state; no LOOP may overflow its stack; and the longest run must
//! stay within the instruction budget (so that no count is needed). A program that does not
//! qualify, or whose structure would repeat more than [`PIECE_LIMIT`] instructions, takes the
//! general form ([`crate::dispatch`]) instead.

use rustc_hash::FxHashMap;

use shader::flow::explore::{Exit, FlowNode, Outcome, explore};
use shader::flow::rules;
use shader::flow::{Choices, FlowState, LOOP_DEPTH, LoopPass, Scope, pushed_scope};
use shader::isa::{Instruction, disasm};
use shader::program::ShaderProgram;

use crate::dispatch::{finish, prologue, visit};
use crate::ir::build::{FnBuilder, ModuleBuilder};
use crate::ir::{ExprId, LocalId, Stmt, Type};
use crate::names::Names;
use crate::program::{Costly, Deferral, Emitter, Registers, Status};
use crate::{Options, TranslateError};

/// The most abstract states explored.
const STATE_LIMIT: usize = 4096;

/// The most instruction copies the structure may hold (a state reached on several paths that
/// do not merge is copied on each).
pub const PIECE_LIMIT: usize = 4096;

/// The most copies of one costly function (RCP, RSQ, EX2, LG2) the structure may hold: each
/// is inlined where it stands, while the general form evaluates a function used more than
/// once at one place, which compiles faster past a few copies (docs/gpu-shaders.md,
/// "Compile cost").
pub const MOST_COSTLY_COPIES: usize = 3;

/// The deepest nesting of branches the structure may have: the planner, the printer and the
/// drivers all recurse on it (a branch that ends the invocation nests the rest of the program
/// in its other side).
pub const MOST_NESTING: usize = 64;

/// The most passes a LOOP runs (i.x + 1, x a byte).
const MOST_PASSES: u64 = 256;

/// Why a program takes the general form instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unstructured {
    /// Its flow has more abstract states than are explored.
    TooManyStates,
    /// A LOOP onto a full LOOP stack (the dropped entry's counters live on in the general form).
    LoopOverflow,
    /// A cycle other than a loop's: a backward JMP, a recursion.
    Cycle,
    /// A loop body entered other than at its start, left to several states, or run again
    /// from outside.
    TangledLoop,
    /// The structure would hold more than [`PIECE_LIMIT`] instruction copies, or nest branches
    /// deeper than [`MOST_NESTING`].
    TooLarge,
    /// The longest execution could exceed the instruction budget (the general form counts).
    Budget,
    /// More than [`MOST_COSTLY_COPIES`] copies of one costly function.
    CostlyCopies,
}

impl Unstructured {
    /// What the report says.
    pub const fn describe(self) -> &'static str {
        match self {
            Unstructured::TooManyStates => "more flow states than explored",
            Unstructured::LoopOverflow => "a LOOP overflows the loop stack",
            Unstructured::Cycle => "a cycle other than a LOOP: a backward JMP or a recursion",
            Unstructured::TangledLoop => "a loop body entered or left at more than one place",
            Unstructured::TooLarge => "the structure would repeat too much code",
            Unstructured::Budget => "the longest run could exceed the instruction budget",
            Unstructured::CostlyCopies => "more than three copies of a costly function",
        }
    }
}

/// What one execution of a node's instruction leads to, for one set of choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Leaf {
    End,
    BreakOutsideLoop,
    Go { to: u32, pass: Option<LoopPass> },
}

/// How a node's next state is chosen: by its test, by its innermost loop's counter, or not.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Tree {
    Leaf(Leaf),
    /// Its test passes / fails.
    Test(Box<Tree>, Box<Tree>),
    /// The innermost loop runs again / is done.
    Again(Box<Tree>, Box<Tree>),
}

struct Node {
    state: FlowState,
    tree: Tree,
    /// The innermost loop's level after the instruction's own push (a loop pass ends there).
    level: Option<usize>,
    /// The level the LOOP at this node fills, if it is one.
    loop_start: Option<usize>,
}

/// One piece of the structure.
#[derive(Debug)]
enum Piece {
    /// The node's instruction: its operation, and a LOOP's start.
    Node(u32),
    /// On the node's test (`counter: false`) or its innermost loop's counter.
    Branch {
        node: u32,
        counter: bool,
        yes: Vec<Piece>,
        no: Vec<Piece>,
    },
    /// A loop pass ending at the node.
    Pass(u32, LoopPass),
    Finish(Status, u16),
    Continue,
    /// Leave the loop to its exit number `k` (noted when the loop has several).
    Break(Option<usize>),
    Loop(Vec<Piece>),
    /// After a loop with several exits: each exit's pieces.
    Exits(Vec<Vec<Piece>>),
}

/// The control flow of a program, structured.
pub struct Plan {
    nodes: Vec<Node>,
    pieces: Vec<Piece>,
}

struct Planner {
    nodes: Vec<Node>,
    /// Loop headers: the body's first state, its level, and the states the loop leaves to.
    headers: FxHashMap<u32, (usize, Vec<u32>)>,
    /// Each loop's body, by header: the states reached from it that still hold the loop.
    bodies: FxHashMap<u32, Vec<bool>>,
    /// The immediate post-dominator of each node in the DAG (`None`: the exit).
    ipdom: Vec<Option<u32>>,
    pieces: usize,
    /// Branches open where the planner is.
    nesting: usize,
    /// Why structuring stopped, when it did.
    failure: Unstructured,
}

/// The leaf of one recorded outcome (`None`: one that leaves the program by running off it,
/// which the structured form does not take).
fn leaf_of(outcome: Outcome) -> Option<Leaf> {
    Some(match outcome {
        Outcome::Exit(Exit::End) => Leaf::End,
        Outcome::Exit(Exit::BreakOutsideLoop) => Leaf::BreakOutsideLoop,
        Outcome::Exit(Exit::OutsideProgram { .. }) => return None,
        Outcome::Next { to, loop_pass } => Leaf::Go {
            to,
            pass: loop_pass,
        },
    })
}

/// The node's choices as a tree, from the outcomes the exploration recorded (`None`: the node
/// was left unexplored, or runs off the program).
fn tree_of(node: &FlowNode) -> Option<Tree> {
    let outcomes = node.outcomes?;
    let leaf = |condition, loop_again| {
        leaf_of(
            outcomes[Outcome::slot(Choices {
                condition,
                loop_again,
            })],
        )
    };
    let by_counter = |condition| -> Option<Tree> {
        let (done, again) = (leaf(condition, false)?, leaf(condition, true)?);
        Some(if done == again {
            Tree::Leaf(done)
        } else {
            Tree::Again(Box::new(Tree::Leaf(again)), Box::new(Tree::Leaf(done)))
        })
    };
    let (fails, passes) = (by_counter(false)?, by_counter(true)?);
    Some(if fails == passes {
        fails
    } else {
        Tree::Test(Box::new(passes), Box::new(fails))
    })
}

fn leaves<'t>(tree: &'t Tree, out: &mut Vec<&'t Leaf>) {
    match tree {
        Tree::Leaf(leaf) => out.push(leaf),
        Tree::Test(a, b) | Tree::Again(a, b) => {
            leaves(a, out);
            leaves(b, out);
        }
    }
}

/// Whether `state` is inside the loop whose body starts at `header` (its LOOP stack holds the
/// header's, up to the header's level).
fn within(state: &FlowState, header: &FlowState, level: usize) -> bool {
    state.loops.len() > level && state.loops.entries()[..=level] == header.loops.entries()[..=level]
}

/// How a structured path goes on after a leaf.
enum After {
    Follow(u32),
    Done,
}

impl Planner {
    fn in_body(&self, header: u32, node: u32) -> bool {
        self.bodies[&header][node as usize]
    }

    /// The pieces from `node` until `stop` (or the path's end), inside the loop `inside`.
    fn region(
        &mut self,
        mut node: u32,
        stop: Option<u32>,
        inside: Option<u32>,
        out: &mut Vec<Piece>,
    ) -> Option<()> {
        loop {
            if Some(node) == stop {
                return Some(());
            }
            if inside != Some(node)
                && let Some((_, exits)) = self.headers.get(&node)
            {
                let exits = exits.clone();
                let mut body = Vec::new();
                self.region(node, None, Some(node), &mut body)?;
                out.push(Piece::Loop(body));
                match exits[..] {
                    [] => return Some(()),
                    [exit] => {
                        node = exit;
                        continue;
                    }
                    _ => {
                        let mut arms = Vec::with_capacity(exits.len());
                        for exit in exits {
                            let mut arm = Vec::new();
                            self.region(exit, stop, inside, &mut arm)?;
                            arms.push(arm);
                        }
                        out.push(Piece::Exits(arms));
                        return Some(());
                    }
                }
            }
            self.pieces += 1;
            if self.pieces > PIECE_LIMIT {
                self.failure = Unstructured::TooLarge;
                return None;
            }
            out.push(Piece::Node(node));
            let tree = self.nodes[node as usize].tree.clone();
            if let Tree::Leaf(leaf) = tree {
                match self.leaf(node, leaf, inside, out)? {
                    After::Follow(next) => {
                        node = next;
                        continue;
                    }
                    After::Done => return Some(()),
                }
            }
            // Branches meet again at the post-dominator, when it is in this region.
            let merge = self.ipdom[node as usize]
                .filter(|&m| inside.is_none_or(|h| m != h && self.in_body(h, m)));
            let branch_stop = merge.or(stop);
            self.tree(node, &tree, branch_stop, inside, out)?;
            match merge {
                Some(m) => node = m,
                None => return Some(()),
            }
        }
    }

    fn tree(
        &mut self,
        node: u32,
        tree: &Tree,
        stop: Option<u32>,
        inside: Option<u32>,
        out: &mut Vec<Piece>,
    ) -> Option<()> {
        match tree {
            Tree::Leaf(leaf) => match self.leaf(node, *leaf, inside, out)? {
                After::Follow(next) => self.region(next, stop, inside, out),
                After::Done => Some(()),
            },
            Tree::Test(yes, no) | Tree::Again(yes, no) => {
                self.nesting += 1;
                if self.nesting > MOST_NESTING {
                    self.failure = Unstructured::TooLarge;
                    return None;
                }
                let mut yes_pieces = Vec::new();
                self.tree(node, yes, stop, inside, &mut yes_pieces)?;
                let mut no_pieces = Vec::new();
                self.tree(node, no, stop, inside, &mut no_pieces)?;
                self.nesting -= 1;
                out.push(Piece::Branch {
                    node,
                    counter: matches!(tree, Tree::Again(..)),
                    yes: yes_pieces,
                    no: no_pieces,
                });
                Some(())
            }
        }
    }

    fn leaf(
        &mut self,
        node: u32,
        leaf: Leaf,
        inside: Option<u32>,
        out: &mut Vec<Piece>,
    ) -> Option<After> {
        let pc = self.nodes[node as usize].state.pc;
        match leaf {
            Leaf::End => {
                out.push(Piece::Finish(Status::Ended, pc));
                Some(After::Done)
            }
            Leaf::BreakOutsideLoop => {
                out.push(Piece::Finish(Status::BreakOutsideLoop, pc));
                Some(After::Done)
            }
            Leaf::Go { to, pass } => {
                let Some(pass) = pass else {
                    return Some(After::Follow(to));
                };
                out.push(Piece::Pass(node, pass));
                // The pass ends the innermost loop open here: the one being structured.
                self.failure = Unstructured::TangledLoop;
                let header = inside?;
                let (level, exits) = &self.headers[&header];
                if self.nodes[node as usize].level != Some(*level) {
                    return None;
                }
                let exit = exits.iter().position(|&e| e == to);
                match pass {
                    LoopPass::Again if to == header => out.push(Piece::Continue),
                    LoopPass::Exit { .. } if exit.is_some() => {
                        out.push(Piece::Break(exit.filter(|_| exits.len() > 1)))
                    }
                    _ => return None,
                }
                Some(After::Done)
            }
        }
    }
}

/// The structure of `program`'s control flow (`decoded`: its program memory decoded), or why
/// it takes the general form.
pub fn plan(
    program: &ShaderProgram,
    decoded: &[Instruction],
    options: &Options,
) -> Result<Plan, Unstructured> {
    let graph = explore(decoded, program.entry, STATE_LIMIT);
    if !graph.complete || graph.nodes.is_empty() {
        return Err(Unstructured::TooManyStates);
    }
    let mut nodes = Vec::with_capacity(graph.nodes.len());
    for node in &graph.nodes {
        let inst = &decoded[node.state.pc as usize];
        let before = node.state.loops.len();
        let loop_start = match pushed_scope(node.state.pc, inst) {
            // A LOOP onto a full stack drops a loop's counters: the general form keeps those.
            Some(Scope::Loop(_)) if before == LOOP_DEPTH => {
                return Err(Unstructured::LoopOverflow);
            }
            Some(Scope::Loop(_)) => Some(before),
            _ => None,
        };
        let after = before + usize::from(loop_start.is_some());
        nodes.push(Node {
            state: node.state,
            tree: tree_of(node).ok_or(Unstructured::TooManyStates)?,
            level: after.checked_sub(1),
            loop_start,
        });
    }
    let count = nodes.len();
    // The DAG: every edge but a loop's run-again; the exit is node `count`.
    let mut successors: Vec<Vec<u32>> = vec![Vec::new(); count];
    let mut headers: FxHashMap<u32, (usize, Vec<u32>)> = FxHashMap::default();
    for (n, node) in nodes.iter().enumerate() {
        let mut found = Vec::new();
        leaves(&node.tree, &mut found);
        for leaf in found {
            let to = match *leaf {
                Leaf::Go {
                    to,
                    pass: Some(LoopPass::Again),
                } => {
                    let level = node.level.ok_or(Unstructured::TangledLoop)?;
                    headers.insert(to, (level, Vec::new()));
                    count as u32
                }
                Leaf::Go { to, pass: None } => {
                    // A LOOP's first body state heads a loop even when no pass runs again.
                    if let Some(level) = node.loop_start {
                        headers.insert(to, (level, Vec::new()));
                    }
                    to
                }
                Leaf::Go { to, .. } => to,
                _ => count as u32,
            };
            if !successors[n].contains(&to) {
                successors[n].push(to);
            }
        }
    }
    // A topological order (none: a cycle other than a loop's, as a backward JMP makes).
    let mut incoming = vec![0usize; count + 1];
    for succs in &successors {
        for &s in succs {
            incoming[s as usize] += 1;
        }
    }
    let mut order = Vec::with_capacity(count);
    let mut ready: Vec<u32> = (0..count as u32)
        .filter(|&n| incoming[n as usize] == 0)
        .collect();
    while let Some(n) = ready.pop() {
        order.push(n);
        for &s in &successors[n as usize] {
            incoming[s as usize] -= 1;
            if incoming[s as usize] == 0 && (s as usize) < count {
                ready.push(s);
            }
        }
    }
    if order.len() != count {
        return Err(Unstructured::Cycle);
    }
    // Each loop: its body (what the header reaches while the loop is on the stack) is entered
    // at its header only.
    let mut header_list: Vec<u32> = headers.keys().copied().collect();
    header_list.sort_unstable();
    let mut bodies: FxHashMap<u32, Vec<bool>> = FxHashMap::default();
    for header in header_list {
        let (level, _) = headers[&header];
        let header_state = nodes[header as usize].state;
        if header_state.loops.len() != level + 1 {
            return Err(Unstructured::TangledLoop);
        }
        let mut body = vec![false; count];
        body[header as usize] = true;
        let mut work = vec![header];
        let mut exits = Vec::new();
        while let Some(n) = work.pop() {
            for &s in &successors[n as usize] {
                if s as usize == count || body[s as usize] {
                    continue;
                }
                if within(&nodes[s as usize].state, &header_state, level) {
                    body[s as usize] = true;
                    work.push(s);
                } else if !exits.contains(&s) {
                    exits.push(s);
                }
            }
        }
        for (n, succs) in successors.iter().enumerate() {
            if !body[n]
                && succs
                    .iter()
                    .any(|&s| s != header && body.get(s as usize) == Some(&true))
            {
                return Err(Unstructured::TangledLoop);
            }
        }
        exits.sort_unstable();
        headers.insert(header, (level, exits));
        bodies.insert(header, body);
    }
    // Immediate post-dominators, sinks first (the exit's depth is 0).
    let mut ipdom: Vec<Option<u32>> = vec![None; count];
    let mut depth = vec![0usize; count + 1];
    let exit = count as u32;
    for &n in order.iter().rev() {
        let mut meet: Option<u32> = None;
        for &s in &successors[n as usize] {
            meet = Some(match meet {
                None => s,
                Some(m) => {
                    let (mut a, mut b) = (m, s);
                    while a != b {
                        if depth[a as usize] >= depth[b as usize] && a != exit {
                            a = ipdom[a as usize].unwrap_or(exit);
                        } else {
                            b = ipdom[b as usize].unwrap_or(exit);
                        }
                    }
                    a
                }
            });
        }
        let m = meet.unwrap_or(exit);
        ipdom[n as usize] = (m != exit).then_some(m);
        depth[n as usize] = depth[m as usize] + 1;
    }
    let mut planner = Planner {
        nodes,
        headers,
        bodies,
        ipdom,
        pieces: 0,
        nesting: 0,
        failure: Unstructured::TangledLoop,
    };
    let mut pieces = Vec::new();
    if planner.region(0, None, None, &mut pieces).is_none() {
        return Err(planner.failure);
    }
    if most_instructions(&pieces) > options.instruction_budget {
        return Err(Unstructured::Budget);
    }
    let mut copies = [0usize; 5];
    count_costly(&pieces, &planner.nodes, decoded, &mut copies);
    if copies.iter().any(|&n| n > MOST_COSTLY_COPIES) {
        return Err(Unstructured::CostlyCopies);
    }
    Ok(Plan {
        nodes: planner.nodes,
        pieces,
    })
}

/// The most instructions a run of `pieces` can execute (a loop's body at most 256 times).
fn most_instructions(pieces: &[Piece]) -> u64 {
    pieces.iter().fold(0u64, |sum, piece| {
        let this = match piece {
            Piece::Node(_) => 1,
            Piece::Branch { yes, no, .. } => most_instructions(yes).max(most_instructions(no)),
            Piece::Loop(body) if runs_again(body) => {
                most_instructions(body).saturating_mul(MOST_PASSES)
            }
            Piece::Loop(body) => most_instructions(body),
            Piece::Exits(arms) => arms.iter().map(|a| most_instructions(a)).max().unwrap_or(0),
            _ => 0,
        };
        sum.saturating_add(this)
    })
}

/// Whether a loop body of `pieces` can run again (a `continue` of its own, not of a loop
/// nested in it).
fn runs_again(pieces: &[Piece]) -> bool {
    pieces.iter().any(|piece| match piece {
        Piece::Continue => true,
        Piece::Branch { yes, no, .. } => runs_again(yes) || runs_again(no),
        Piece::Exits(arms) => arms.iter().any(|arm| runs_again(arm)),
        _ => false,
    })
}

/// Counts the copies of each costly function in `pieces`.
fn count_costly(
    pieces: &[Piece],
    nodes: &[Node],
    decoded: &[Instruction],
    copies: &mut [usize; 5],
) {
    for piece in pieces {
        match piece {
            Piece::Node(n) => {
                let inst = &decoded[nodes[*n as usize].state.pc as usize];
                if let Some(c) = inst.operation().as_ref().and_then(Costly::of) {
                    copies[c as usize] += 1;
                }
            }
            Piece::Branch { yes, no, .. } => {
                count_costly(yes, nodes, decoded, copies);
                count_costly(no, nodes, decoded, copies);
            }
            Piece::Loop(body) => count_costly(body, nodes, decoded, copies),
            Piece::Exits(arms) => {
                for arm in arms {
                    count_costly(arm, nodes, decoded, copies);
                }
            }
            _ => {}
        }
    }
}

/// The counters of each loop level.
#[derive(Clone, Copy)]
struct Counters {
    left: [LocalId; LOOP_DEPTH],
    step: [LocalId; LOOP_DEPTH],
    al_before: [LocalId; LOOP_DEPTH],
}

struct Lowering<'p> {
    program: &'p ShaderProgram,
    decoded: &'p [Instruction],
    plan: &'p Plan,
    counters: Counters,
    /// Which exit the loop last left by (loops with several).
    exit: LocalId,
    end_state: bool,
    names: &'p Names,
}

impl Lowering<'_> {
    /// `if (taken == first) { arms[0] } else if (taken == first + 1) { arms[1] } ... else
    /// { the last }`.
    fn arms(&self, e: &mut Emitter, taken: ExprId, arms: &[Vec<Piece>], first: u32) {
        match arms {
            [] => {}
            [only] => self.pieces(e, only),
            [head, rest @ ..] => {
                let this = e.b.eq_k(taken, first);
                e.b.open();
                self.pieces(e, head);
                let then = e.b.close();
                e.b.open();
                self.arms(e, taken, rest, first + 1);
                let otherwise = e.b.close();
                e.b.push_stmt(Stmt::If(this, then, otherwise));
            }
        }
    }

    fn pieces(&self, e: &mut Emitter, pieces: &[Piece]) {
        for piece in pieces {
            self.piece(e, piece);
        }
    }

    fn piece(&self, e: &mut Emitter, piece: &Piece) {
        match piece {
            Piece::Node(n) => {
                let node = &self.plan.nodes[*n as usize];
                let pc = node.state.pc;
                let inst = self.decoded[pc as usize];
                e.b.comment(|| {
                    format!(
                        "{pc:03x}: {}",
                        self.names
                            .annotate(&disasm::format_instruction(&inst, &self.program.opdescs))
                    )
                });
                if let Some(operation) = inst.operation() {
                    visit(e, self.program, &operation);
                }
                crate::geometry::effect(e, &inst, pc, self.end_state);
                if let (Some(level), Instruction::Loop { int_id, .. }) = (node.loop_start, inst) {
                    let start = rules::loop_start(&mut *e, int_id);
                    let al = e.registers.loop_counter;
                    let before = e.b.get(al);
                    let before = e.b.bind("al_before", before);
                    let c = self.counters;
                    e.b.set(c.left[level], start.remaining);
                    e.b.set(c.step[level], start.increment);
                    e.b.set(c.al_before[level], before);
                    e.b.set(al, start.al);
                }
            }
            Piece::Branch {
                node,
                counter,
                yes,
                no,
            } => {
                let node = &self.plan.nodes[*node as usize];
                let bit = if *counter {
                    let level = node.level.expect("a loop ends here");
                    let left = e.b.get(self.counters.left[level]);
                    e.b.ne_k(left, 0)
                } else {
                    let inst = self.decoded[node.state.pc as usize];
                    rules::test(&mut *e, &inst).expect("a tested instruction")
                };
                let bit = e.b.bind(if *counter { "again" } else { "test" }, bit);
                e.b.open();
                self.pieces(e, yes);
                let then = e.b.close();
                e.b.open();
                self.pieces(e, no);
                let otherwise = e.b.close();
                e.b.push_stmt(Stmt::If(bit, then, otherwise));
            }
            Piece::Pass(node, pass) => {
                let level = self.plan.nodes[*node as usize]
                    .level
                    .expect("a loop ends here");
                let c = self.counters;
                let al = e.registers.loop_counter;
                let now = e.b.get(al);
                let increment = e.b.get(c.step[level]);
                let next = rules::al_after_pass(&mut *e, now, increment);
                e.b.set(al, next);
                match *pass {
                    LoopPass::Again => {
                        let left = e.b.get(c.left[level]);
                        let fewer = e.b.sub_k(left, 1);
                        e.b.set(c.left[level], fewer);
                    }
                    LoopPass::Exit { outer_remains } => {
                        let outer = e.b.boolean(outer_remains);
                        let before = e.b.get(c.al_before[level]);
                        let now = e.b.get(al);
                        let next = rules::al_after_exit(&mut *e, outer, before, now);
                        e.b.set(al, next);
                    }
                }
            }
            Piece::Finish(status, pc) => {
                let at = e.b.int(*pc as i32);
                finish(e, self.end_state, *status, at);
            }
            Piece::Continue => e.b.cont(),
            Piece::Break(exit) => {
                if let Some(k) = exit {
                    let k = e.b.int(*k as i32);
                    e.b.set(self.exit, k);
                }
                e.b.brk();
            }
            Piece::Exits(arms) => {
                // Which exit the loop just took.
                let taken = e.b.get(self.exit);
                let taken = e.b.bind("exit", taken);
                self.arms(e, taken, arms, 0);
            }
            Piece::Loop(body) => {
                e.b.open();
                self.pieces(e, body);
                let body = e.b.close();
                e.b.push_stmt(Stmt::Loop(body));
            }
        }
    }
}

/// The structured form of `program`'s entry function, `name`, into `module`, by `plan`.
pub fn translate(
    module: &mut ModuleBuilder,
    program: &ShaderProgram,
    decoded: &[Instruction],
    plan: &Plan,
    options: &Options,
    name: &str,
    names: &Names,
) -> Result<(), TranslateError> {
    let mut b = FnBuilder::new(module, name, &[], None);
    let registers = Registers::declare(&mut b);
    let counter = |b: &mut FnBuilder, what: &str| -> [LocalId; LOOP_DEPTH] {
        std::array::from_fn(|level| b.local(&format!("loop{level}_{what}"), Type::INT, [0; 4]))
    };
    let counters = Counters {
        left: counter(&mut b, "left"),
        step: counter(&mut b, "step"),
        al_before: counter(&mut b, "al_before"),
    };
    let lowering = Lowering {
        program,
        decoded,
        plan,
        counters,
        exit: b.local("loop_exit", Type::INT, [0; 4]),
        end_state: options.end_state,
        names,
    };
    let mut emitter = Emitter {
        b: &mut b,
        precision: options.precision,
        registers,
        deferral: Deferral::Inline,
    };
    lowering.pieces(&mut emitter, &plan.pieces);
    prologue(&mut b, options, &registers);
    let function = b.finish();
    module.add(function);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use shader::asm::{AsmOptions, SourceFile, assemble};

    /// Plans the picasso procedure body `main` (with `extra` procedures after it).
    fn planned(main: &str, extra: &str) -> Result<Plan, Unstructured> {
        let text = format!(
            ".out outpos position\n.bool flag\n.ivec count\n.proc main\n{main}\n.end\n{extra}"
        );
        let files = [SourceFile {
            name: "t.v.pica".into(),
            text,
        }];
        let shbin = assemble(&files, AsmOptions::default())
            .expect("the test program assembles")
            .shbin;
        let program = ShaderProgram::from_shbin(&shbin, 0).unwrap();
        let decoded = shader::isa::decode_words(&program.code[..]);
        plan(&program, &decoded, &Options::default())
    }

    fn pieces_of(plan: &Plan, kind: fn(&Piece) -> bool) -> usize {
        fn walk(pieces: &[Piece], kind: fn(&Piece) -> bool) -> usize {
            pieces
                .iter()
                .map(|p| {
                    usize::from(kind(p))
                        + match p {
                            Piece::Branch { yes, no, .. } => walk(yes, kind) + walk(no, kind),
                            Piece::Loop(body) => walk(body, kind),
                            Piece::Exits(arms) => arms.iter().map(|a| walk(a, kind)).sum(),
                            _ => 0,
                        }
                })
                .sum()
        }
        walk(&plan.pieces, kind)
    }

    #[test]
    fn if_else_a_loop_with_breakc_and_a_call_are_structured() {
        let plan = planned(
            "mov r0, v0\n\
             ifu flag\n add r0, r0, r0\n.else\n mul r0, r0, r0\n.end\n\
             for count\n add r0, r0, v0\n cmp r0, gt, gt, v0\n breakc cmp.x\n.end\n\
             call twice\n\
             mov outpos, r0\n\
             end",
            ".proc twice\nadd r0, r0, r0\n.end\n",
        )
        .expect("structured");
        // One loop; the IF's test, the BREAKC's test and the loop's counter decide; the CALL
        // is inlined, so the subroutine's one instruction is a piece of its own.
        assert_eq!(pieces_of(&plan, |p| matches!(p, Piece::Loop(_))), 1);
        assert_eq!(
            pieces_of(&plan, |p| matches!(p, Piece::Branch { counter: false, .. })),
            2
        );
        assert_eq!(
            pieces_of(&plan, |p| matches!(p, Piece::Branch { counter: true, .. })),
            1
        );
        assert!(pieces_of(&plan, |p| matches!(p, Piece::Continue)) >= 1);
        assert!(pieces_of(&plan, |p| matches!(p, Piece::Break(_))) >= 1);
        assert_eq!(
            pieces_of(&plan, |p| matches!(p, Piece::Finish(Status::Ended, _))),
            1,
            "the two sides of the IF meet again: one END"
        );
    }

    #[test]
    fn what_the_structured_form_does_not_take() {
        let backward = planned(
            "again:\nadd r0, r0, v0\njmpu flag, again\nmov outpos, r0\nend",
            "",
        );
        assert_eq!(backward.err(), Some(Unstructured::Cycle));
        let nested = "for count\n".repeat(5) + "add r0, r0, v0\n" + &".end\n".repeat(5);
        let overflow = planned(&format!("{nested}mov outpos, r0\nend"), "");
        assert_eq!(overflow.err(), Some(Unstructured::LoopOverflow));
        let four = "rsq r0, v0\nrsq r1, r0\nrsq r2, r1\nrsq r3, r2\nmov outpos, r3\nend";
        assert_eq!(planned(four, "").err(), Some(Unstructured::CostlyCopies));
        let three = "rsq r0, v0\nrsq r1, r0\nrsq r2, r1\nmov outpos, r2\nend";
        assert!(planned(three, "").is_ok(), "three copies are inlined");
        // Each IF whose then-block ends the invocation nests the rest in its else side.
        let exits =
            |n: usize| "ifu flag\nend\n.end\nadd r0, r0, v0\n".repeat(n) + "mov outpos, r0\nend";
        assert!(planned(&exits(MOST_NESTING), "").is_ok());
        assert_eq!(
            planned(&exits(MOST_NESTING + 1), "").err(),
            Some(Unstructured::TooLarge)
        );
    }
}
