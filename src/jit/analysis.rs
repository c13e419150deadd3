//! What the compiler knows about a program's control flow before it emits any code.
//!
//! [`FlowFacts`] holds the addresses that get code and, for every address where a scope can
//! end, the scopes that could end there with the addresses control could go to. The lowering
//! emits a stack check only where some scope can end, and it jumps directly to the candidate
//! addresses (one comparison per candidate, a binary search among many) instead of through a
//! computed jump table, so every register can stay an SSA value across control flow.

use std::collections::{BTreeMap, BTreeSet};

use crate::flow::{CALL_DEPTH, Scope, pushed_scope, wrap};
use crate::isa::{Instruction, PROGRAM_WORDS, SimpleOp};

/// How many abstract control states the reachability analysis explores before it falls back
/// to the coarser stack-blind superset.
const EXPLORATION_LIMIT: usize = 20_000;

/// The most instructions in one straight-line run (see [`FlowFacts::leaders`]).
const RUN_LIMIT: usize = 4;

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
        facts.leaders = leaders(decoded, entry, &reachable, &facts);
        facts.reachable = reachable;
        facts
    }

    /// The return addresses of the CALL-stack entries that can pop when the next PC is `next`:
    /// level `k` (0-based) holds those of the `k + 1`-th pop in one step, so the number of
    /// levels is the most pops that can happen (at most `CALL_DEPTH`; the last of four leaves
    /// the PC alone).
    pub fn call_return_levels(&self, next: u16) -> Vec<BTreeSet<u16>> {
        let mut levels = Vec::new();
        let mut from = BTreeSet::from([next]);
        for _ in 0..CALL_DEPTH {
            let level: BTreeSet<u16> = from
                .iter()
                .filter_map(|end| self.call_returns.get(end))
                .flatten()
                .copied()
                .collect();
            if level.is_empty() {
                break;
            }
            levels.push(level.clone());
            from = level;
        }
        levels
    }
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
    // Cap the runs: longer ones keep more values live at once than the host has registers,
    // and register allocation time grows faster than the run (measured: runs of 4 compile a
    // 54-instruction straight line 15x faster than one run, and execute as fast).
    let mut run = 0;
    for (pc, leader) in leaders.iter_mut().enumerate() {
        if *leader || run == RUN_LIMIT || !reachable[pc] {
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
    let graph = crate::flow::explore::explore(decoded, entry, EXPLORATION_LIMIT);
    if graph.complete {
        let mut seen = vec![false; PROGRAM_WORDS];
        for node in &graph.nodes {
            seen[node.state.pc as usize] = true;
        }
        return seen;
    }
    reachable_ignoring_stacks(decoded, entry)
}

/// Every address control can reach if any scope could end anywhere (stacks ignored): each
/// instruction's successor, jump target, and the ends and return addresses of the scopes it
/// pushes.
fn reachable_ignoring_stacks(decoded: &[Instruction], entry: u16) -> Vec<bool> {
    let mut seen = vec![false; PROGRAM_WORDS];
    let mut work = vec![entry];
    while let Some(pc) = work.pop() {
        if std::mem::replace(&mut seen[pc as usize], true) {
            continue;
        }
        let next = wrap(pc as u32 + 1);
        match decoded[pc as usize] {
            Instruction::Simple {
                op: SimpleOp::End, ..
            } => {}
            Instruction::CondFlow { target, count, .. }
            | Instruction::BoolFlow { target, count, .. } => {
                work.extend([next, target, wrap(target as u32 + count as u32)]);
            }
            Instruction::Loop { target, .. } => work.extend([next, wrap(target as u32 + 1)]),
            _ => work.push(next),
        }
    }
    seen
}
