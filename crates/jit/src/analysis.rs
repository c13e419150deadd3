//! What the compiler knows about a program's control flow before it emits any code.
//!
//! [`FlowFacts`] holds the addresses that get code and, for every address where a scope can
//! end, the scopes that could end there with the addresses control could go to. The lowering
//! emits a stack check only where some scope can end, and it jumps directly to the candidate
//! addresses when they are few (at most [`DIRECT_CANDIDATES`]); more go through the function's
//! one shared dispatch, a jump table over its addresses, so that the code of every scope end
//! stays constant in size. Registers live in the context at every run end, so no SSA value of
//! a register crosses these edges.
//!
//! The facts also cut program memory into [`FlowFacts::chunks`], each compiled to a function
//! of its own, so that no compiler pass works on more than [`CHUNK_WORDS`] reachable words:
//! the compile cost of a program is linear in its reachable size.

use std::collections::{BTreeMap, BTreeSet};

use shader::flow::{CALL_DEPTH, Scope, pushed_scope};
use shader::isa::{Instruction, PROGRAM_WORDS, SimpleOp, decode};

/// How many abstract control states the reachability analysis explores before it falls back
/// to the coarser stack-blind superset.
const EXPLORATION_LIMIT: usize = 20_000;

/// The most instructions in one straight-line run (see [`FlowFacts::leaders`]).
pub const RUN_LIMIT: usize = 4;

/// The most reachable words of one chunk (one compiled function). Register allocation costs
/// more than linear time in the size of a function (measured: one function of 4096 MAD/DP4
/// words takes 2.4 s and 250 MB, eight of 512 words 1 s and 50 MB); cut into functions of this
/// size, a program compiles in time linear in its reachable words. A program of at most 512
/// reachable words (every vertex shader picasso accepts) is one function: a jump between
/// chunks is a tail call and a dispatch, which costs a loop that crosses one (measured: 5% on
/// `terrain-noise-512` cut at 256).
pub const CHUNK_WORDS: usize = 512;

/// The most addresses a scope end is compared with directly (a binary search of direct
/// jumps); a larger or unknown set goes through the function's shared dispatch.
pub const DIRECT_CANDIDATES: usize = 8;

/// The most return addresses [`FlowFacts::call_returns_at`] follows per level of returns;
/// past it any address is possible (the shared dispatch, and a stack check per possible pop).
const RETURN_SET_LIMIT: usize = 64;

/// Addresses keyed by another address, each with the set of values it can take.
pub type AddressSets = BTreeMap<u16, BTreeSet<u16>>;

/// Static control-flow facts of one program from one entry point.
#[derive(Clone, Debug, Default)]
pub struct FlowFacts {
    /// Whether control can reach each address (only these get code).
    pub reachable: Vec<bool>,
    /// IF scopes of reachable IFC/IFU: else address → the ends (DST+NUM) pushed with it.
    pub if_ends: AddressSets,
    /// CALL scopes of reachable CALL/CALLC/CALLU: end (DST+NUM) → the return addresses.
    pub call_returns: AddressSets,
    /// LOOP scopes of reachable LOOPs: end (DST+1) → the first body addresses.
    pub loop_entries: AddressSets,
    /// Every loop end (where BREAK goes).
    pub loop_ends: BTreeSet<u16>,
    /// Addresses control can enter other than from the address before, by a plain step:
    /// the entry, 0 (after the wrap), jump targets, scope ends and where they lead, the address
    /// after a flow instruction or an unreachable one, and every [`RUN_LIMIT`]-th address of a
    /// longer straight line.
    pub leaders: Vec<bool>,
    /// The first address of each chunk, ascending, the first 0: chunk `k` holds the addresses
    /// from `chunks[k]` up to the next start (or 4096). Each start is a leader.
    pub chunks: Vec<u16>,
    /// Addresses that hold the zero word (`add o0, v0, v0` with descriptor 0: all of memory past
    /// the uploaded code). It reads only v0 and writes only o0, so running it several times in a
    /// row leaves the state of running it once: a run of them is one run of its own (a
    /// *filler run*), compiled as one instruction that spends the run's length of budget.
    pub filler: Vec<bool>,
}

/// Where the CALL stack can send control when the next PC is some address (see
/// [`FlowFacts::call_returns_at`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallReturns {
    /// The most pops that can happen in one step (at most `CALL_DEPTH`; 0 when no CALL scope
    /// ends there).
    pub pops: usize,
    /// The addresses the first three pops can return to, or `None` when they are too many to
    /// list (any address).
    pub targets: Option<BTreeSet<u16>>,
}

impl FlowFacts {
    /// Analyses the program from `entry`.
    pub fn analyse(decoded: &[Instruction], entry: u16) -> FlowFacts {
        let reachable = reachable(decoded, entry);
        let mut facts = FlowFacts::default();
        for (pc, inst) in decoded.iter().enumerate() {
            if !reachable[pc] {
                continue;
            }
            match pushed_scope(pc as u16, inst) {
                Some(Scope::If(scope)) => {
                    let ends = facts.if_ends.entry(scope.else_addr).or_default();
                    ends.insert(scope.end);
                }
                Some(Scope::Call(scope)) => {
                    let returns = facts.call_returns.entry(scope.end).or_default();
                    returns.insert(scope.ret);
                }
                Some(Scope::Loop(scope)) => {
                    let entries = facts.loop_entries.entry(scope.end).or_default();
                    entries.insert(scope.entry);
                    facts.loop_ends.insert(scope.end);
                }
                None => {}
            }
        }
        let zero = decode(0);
        facts.filler = decoded.iter().map(|inst| *inst == zero).collect();
        let mut leaders = leaders(decoded, entry, &reachable, &facts);
        facts.chunks = chunks(&reachable, &leaders, &facts.filler);
        for &start in &facts.chunks {
            leaders[start as usize] = true;
        }
        facts.leaders = leaders;
        facts.reachable = reachable;
        facts
    }

    /// Whether `pc` gets code of its own: a reachable address, except inside a filler run
    /// (whose first address stands for it all).
    pub fn has_code(&self, pc: u16) -> bool {
        let pc = pc as usize;
        self.reachable[pc] && (self.leaders[pc] || !self.filler[pc])
    }

    /// The length of the filler run that starts at `pc` (up to the next leader).
    pub fn filler_run(&self, pc: u16) -> usize {
        let start = pc as usize;
        1 + (start + 1..PROGRAM_WORDS)
            .take_while(|&a| !self.leaders[a])
            .count()
    }

    /// The CALL-stack entries that can pop when the next PC is `next`: pop `k + 1` can happen
    /// when some scope ends at the return address of pop `k`, so the pops are followed level by
    /// level (at most `CALL_DEPTH`; the last of four leaves the PC alone). A level of more than
    /// [`RETURN_SET_LIMIT`] addresses is not followed: every further level is then assumed
    /// possible and every address a target, which only costs a runtime check more.
    pub fn call_returns_at(&self, next: u16) -> CallReturns {
        let mut pops = 0;
        let mut targets = Some(BTreeSet::new());
        let mut from = BTreeSet::from([next]);
        while pops < CALL_DEPTH {
            let mut level = BTreeSet::new();
            for end in &from {
                if let Some(returns) = self.call_returns.get(end) {
                    level.extend(returns.iter().copied());
                    if level.len() > RETURN_SET_LIMIT {
                        break;
                    }
                }
            }
            if level.is_empty() {
                break;
            }
            if level.len() > RETURN_SET_LIMIT {
                // Too many to follow: any later pop is possible, to any address.
                return CallReturns {
                    pops: CALL_DEPTH,
                    targets: None,
                };
            }
            pops += 1;
            if pops < CALL_DEPTH
                && let Some(targets) = &mut targets
            {
                targets.extend(level.iter().copied());
            }
            from = level;
        }
        CallReturns { pops, targets }
    }

    /// The chunk that holds `pc`.
    pub fn chunk_of(&self, pc: u16) -> usize {
        self.chunks.partition_point(|&start| start <= pc) - 1
    }

    /// The addresses of chunk `k`: from its start up to (not including) the next chunk's.
    pub fn chunk_range(&self, k: usize) -> std::ops::Range<u32> {
        let end = self
            .chunks
            .get(k + 1)
            .map_or(PROGRAM_WORDS as u32, |&next| next as u32);
        self.chunks[k] as u32..end
    }
}

/// Cuts program memory into chunks of at most [`CHUNK_WORDS`] reachable words with code of
/// their own (a filler run counts as one): a chunk starts at 0 and at each such address that
/// would make the previous chunk too large.
fn chunks(reachable: &[bool], leaders: &[bool], filler: &[bool]) -> Vec<u16> {
    let mut starts = vec![0];
    let mut words = 0;
    for pc in 0..PROGRAM_WORDS {
        if !reachable[pc] || (filler[pc] && !leaders[pc]) {
            continue;
        }
        if words == CHUNK_WORDS {
            starts.push(pc as u16);
            words = 0;
        }
        words += 1;
    }
    starts
}

/// See [`FlowFacts::leaders`].
fn leaders(
    decoded: &[Instruction],
    entry: u16,
    reachable: &[bool],
    facts: &FlowFacts,
) -> Vec<bool> {
    let mut leaders = vec![false; PROGRAM_WORDS];
    leaders[entry as usize] = true;
    leaders[0] = true;
    for pc in 0..PROGRAM_WORDS {
        if !reachable[pc] {
            leaders[(pc + 1) % PROGRAM_WORDS] = true;
            continue;
        }
        let next = (pc + 1) % PROGRAM_WORDS;
        match decoded[pc] {
            Instruction::CondFlow { target, .. } | Instruction::BoolFlow { target, .. } => {
                leaders[next] = true;
                leaders[target as usize] = true;
            }
            Instruction::Loop { .. }
            | Instruction::Simple {
                op: SimpleOp::Break | SimpleOp::End,
                ..
            } => leaders[next] = true,
            // EMIT and SETEMIT (which have effects outside the registers in a geometry shader)
            // are runs of their own, so that a run's budget check comes before every effect.
            Instruction::Simple {
                op: SimpleOp::Emit, ..
            }
            | Instruction::SetEmit { .. } => {
                leaders[pc] = true;
                leaders[next] = true;
            }
            _ => {}
        }
    }
    let scope_addresses = [&facts.if_ends, &facts.call_returns, &facts.loop_entries]
        .into_iter()
        .flat_map(|sets| {
            sets.iter()
                .flat_map(|(&key, values)| [key].into_iter().chain(values.iter().copied()))
        })
        .chain(facts.loop_ends.iter().copied());
    for address in scope_addresses {
        leaders[address as usize] = true;
    }
    // A filler run is a run of its own, of any length (see `FlowFacts::filler`).
    let filler = &facts.filler;
    for pc in 1..PROGRAM_WORDS {
        if filler[pc] != filler[pc - 1] {
            leaders[pc] = true;
        }
    }
    // Cap the other runs: longer ones keep more values live at once than the host has
    // registers, and register allocation time grows faster than the run (measured: runs of 4
    // compile a 54-instruction straight line 15x faster than one run, and execute as fast).
    let mut run = 0;
    for (pc, leader) in leaders.iter_mut().enumerate() {
        if *leader || (run == RUN_LIMIT && !filler[pc]) || !reachable[pc] {
            *leader = true;
            run = 0;
        }
        run += 1;
    }
    leaders
}

/// Every address control can reach from the entry: the addresses of the exact control-flow
/// machine's abstract state graph (conditions and loop counts taken both ways, stacks exact),
/// or, when that graph is too large, a stack-blind superset.
fn reachable(decoded: &[Instruction], entry: u16) -> Vec<bool> {
    let graph = shader::flow::explore::explore(decoded, entry, EXPLORATION_LIMIT);
    if graph.complete {
        let mut seen = vec![false; PROGRAM_WORDS];
        for node in &graph.nodes {
            seen[node.state.pc as usize] = true;
        }
        return seen;
    }
    shader::flow::explore::reachable_addresses(decoded, entry)
}
