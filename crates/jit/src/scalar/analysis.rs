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
use shader::isa::{
    BinaryOperation, DstReg, Instruction, Operand, OperandDescriptor, Operation, PROGRAM_WORDS,
    RegisterFile, SimpleOp, UnaryOp, decode,
};

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

/// What the code from a cut on needs of the temporaries' values there
/// ([`FlowFacts::find_temps_ahead`]; bit n: rN). A temporary in neither set is dead at the cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TempsAhead {
    /// Read in the run that starts at the cut.
    pub next: u16,
    /// Read later (or possibly, past the straight line), not in that run.
    pub later: u16,
}

impl TempsAhead {
    /// Where the straight line is left with the temporaries of `decided` decided: every other
    /// one may be needed past it, and none is kept from the cut to be stored past it (a value
    /// stored at a later run's end, just before the code that loads it, cost more than one
    /// stored where it was made: palette-skinning 6% slower).
    fn leaving(self, decided: u16) -> TempsAhead {
        TempsAhead {
            next: 0,
            later: self.later | self.next | !decided,
        }
    }
}

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
    /// Leaders that control enters only from the address before, by a plain step: the cuts
    /// that cap a long straight line at [`RUN_LIMIT`], other than chunk starts. The run before
    /// such a cut hands its register values to the run after it.
    pub continues: Vec<bool>,
    /// The first address of each chunk, ascending, the first 0: chunk `k` holds the addresses
    /// from `chunks[k]` up to the next start (or 4096). Each start is a leader.
    pub chunks: Vec<u16>,
    /// Addresses that hold the zero word (`add o0, v0, v0` with descriptor 0: all of memory past
    /// the uploaded code). It reads only v0 and writes only o0, so running it several times in a
    /// row leaves the state of running it once: a run of them is one run of its own (a
    /// *filler run*), compiled as one instruction that spends the run's length of budget.
    pub filler: Vec<bool>,
    /// The dot-product groups found by [`FlowFacts::find_dot_groups`] (empty until then: no
    /// groups).
    pub dot_groups: Vec<DotGroup>,
    /// The lanes of each temporary (bit `i` of entry `n`: lane `i` of rN) that hold a value the
    /// float24 input flush leaves unchanged wherever they are read, found by
    /// [`FlowFacts::find_canonical_temps`] (none until then).
    pub canonical_temps: [u8; 16],
    /// The lanes of each temporary that may hold a result of RCP, RSQ, EX2 or LG2 (bit `i` of
    /// entry `n`: lane `i` of rN), found by [`FlowFacts::find_wild_temps`] (none until then).
    pub wild_temps: [u8; 16],
    /// For each cut of a straight line ([`FlowFacts::continues`]), what the code from there
    /// on needs of the temporaries' values at the cut, found by
    /// [`FlowFacts::find_temps_ahead`] (none until then; a missing cut needs them all).
    pub temps_ahead: BTreeMap<u16, TempsAhead>,
    /// The lanes among [`FlowFacts::wild_temps`] that may hold a result of LG2.
    pub logarithm_temps: [u8; 16],
    /// Whether control enters the entry point only when an invocation starts: no step of any
    /// path leads back to it (false when the exploration stopped short). A vertex shader's
    /// first run then knows its temporaries are +0 (`Lowering::zero_temps`).
    pub entered_only_at_start: bool,
}

/// How [`FlowFacts::temp_lanes_fixpoint`] joins the writes of a lane.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Meet {
    /// The lane has the property when every write gives it.
    All,
    /// The lane has the property when some write gives it.
    Any,
}

/// Where an address stands in a group of dot products computed together: consecutive DP3s,
/// DP4s or DPHs of one run that write disjoint lanes of one register none of them reads
/// (`dp4 r0.x, m0, v` … `dp4 r0.w, m3, v`). Each lane's dot product is the one its own
/// instruction computes, by the same rules, so the group computes the four lanes at once
/// (docs/architecture.md, "Dot-product groups").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DotGroup {
    /// Not in a group.
    #[default]
    Alone,
    /// The first of a group of this many instructions (2 to 4).
    First(u8),
    /// A later member: its lanes were computed with the first.
    Later,
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
        let (reachable, entered_only_at_start) = reachable(decoded, entry);
        let mut facts = FlowFacts {
            entered_only_at_start,
            ..FlowFacts::default()
        };
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
        let (mut leaders, mut continues) = leaders(decoded, entry, &reachable, &facts);
        facts.chunks = chunks(&reachable, &leaders, &facts.filler);
        for &start in &facts.chunks {
            leaders[start as usize] = true;
            continues[start as usize] = false;
        }
        facts.continues = continues;
        facts.leaders = leaders;
        facts.reachable = reachable;
        facts
    }

    /// Finds the lanes of the temporaries that always hold a *canonical* value in the float24
    /// modes: one the input flush leaves unchanged (not −0, not below 2^-62 in magnitude
    /// unless +0), so an arithmetic instruction reading them needs no flush. Only for a vertex
    /// shader, whose temporaries start as +0 in every invocation (a geometry shader's persist
    /// across invocations). Flow-insensitive: a lane is canonical when every reachable write
    /// to it is. Writes that are (docs/execution-model.md §2, §3):
    /// - an arithmetic instruction's result (it went through the rounding and its range rules)
    ///   and the x lane (1.0) of DST;
    /// - SGE and SLT (1.0 or +0);
    /// - MOV, MAX and MIN (and DST's copied lanes) of canonical temporary lanes, not negated
    ///   (a negated +0 is −0); inputs and uniforms are raw, so never.
    ///
    /// Everything else (LITP) counts as not canonical.
    pub fn find_canonical_temps(&mut self, decoded: &[Instruction], opdescs: &[u32]) {
        self.canonical_temps =
            self.temp_lanes_fixpoint(decoded, opdescs, Meet::All, |of, operation, lane| {
                match operation {
                    Operation::Binary { op, a, b, .. } => match op {
                        BinaryOperation::Max | BinaryOperation::Min => {
                            of(a, lane, false) && of(b, lane, false)
                        }
                        BinaryOperation::Dst if lane == 2 => of(a, lane, false),
                        BinaryOperation::Dst if lane == 3 => of(b, lane, false),
                        _ => true,
                    },
                    Operation::Unary { op, a, .. } => match op {
                        UnaryOp::Mov => of(a, lane, false),
                        UnaryOp::Litp => false,
                        _ => true,
                    },
                    Operation::Mad { .. } | Operation::Mova { .. } | Operation::Cmp { .. } => true,
                }
            });
    }

    /// Finds [`FlowFacts::temps_ahead`] for every cut of a straight line: from the cut, the
    /// code is followed address by address while it stays on the straight line (through
    /// further cuts) and until END. A temporary whose value at the cut some instruction reads
    /// (a source lane not written since the cut) is needed: in the run from the cut, or later.
    /// One whose lanes are all written first, or that nothing reads before END, is not (a
    /// partial write keeps the other lanes, but only a read of them would see them). Leaving
    /// the straight line (a flow instruction, an address entered otherwise) needs every
    /// temporary not decided by then. Vertex shaders only: a geometry shader's temporaries
    /// outlive the invocation.
    pub fn find_temps_ahead(&mut self, decoded: &[Instruction], opdescs: &[u32]) {
        let cuts: Vec<u16> = (0..PROGRAM_WORDS)
            .filter(|&pc| self.continues[pc])
            .map(|pc| pc as u16)
            .collect();
        for cut in cuts {
            let ahead = self.temps_ahead_of(cut, decoded, opdescs);
            self.temps_ahead.insert(cut, ahead);
        }
    }

    fn temps_ahead_of(&self, cut: u16, decoded: &[Instruction], opdescs: &[u32]) -> TempsAhead {
        let mut ahead = TempsAhead::default();
        let mut decided = 0u16;
        let mut written = [0u8; 16];
        let mut first_run = true;
        let mut pc = cut as usize;
        loop {
            if pc >= PROGRAM_WORDS
                || (pc != cut as usize && self.leaders[pc] && !self.continues[pc])
            {
                return ahead.leaving(decided);
            }
            if pc != cut as usize && self.leaders[pc] {
                first_run = false;
            }
            let inst = decoded[pc];
            match inst {
                Instruction::Simple {
                    op: SimpleOp::End, ..
                } => return ahead,
                Instruction::Simple {
                    op: SimpleOp::Nop, ..
                } => {
                    pc += 1;
                    continue;
                }
                _ => {}
            }
            let Some(desc) = inst.desc() else {
                return ahead.leaving(decided);
            };
            let desc = OperandDescriptor(opdescs.get(desc as usize).copied().unwrap_or(0));
            let mut needs = |n: usize| {
                if decided & (1 << n) == 0 {
                    decided |= 1 << n;
                    if first_run {
                        ahead.next |= 1 << n;
                    } else {
                        ahead.later |= 1 << n;
                    }
                }
            };
            for source in inst.sources(desc) {
                if let (RegisterFile::Temporary, n) = source.reg.file_index()
                    && source.components(desc) & !written[n as usize] != 0
                {
                    needs(n as usize);
                }
            }
            if let Some((RegisterFile::Temporary, n)) = inst.dst().map(|d| d.file_index()) {
                let n = n as usize;
                written[n] |= desc.dest_mask().lanes();
                if written[n] == 0xF {
                    decided |= 1 << n;
                }
            }
            pc += 1;
        }
    }

    /// Finds the lanes of the temporaries that may hold a *wild* value: a result of RCP, RSQ,
    /// EX2 or LG2, which are infinite for some ordinary operands (rsq(0) of a zero normal,
    /// lg2(0) of a specular term facing away), or a MOV, MAX or MIN (or DST's copied lanes) of
    /// such a lane; and among them the lanes that may hold a result of LG2, whose operand is
    /// often a clamp at 0 (`max r0, zero, r0` before the specular power). A vertex shader's
    /// fast forms treat an instruction with products that reads such lanes apart
    /// (docs/architecture.md, "Wild lanes"). Flow-insensitive, like
    /// [`FlowFacts::find_canonical_temps`]: a lane is wild when some reachable write to it is.
    pub fn find_wild_temps(&mut self, decoded: &[Instruction], opdescs: &[u32]) {
        let from = |sources: &[UnaryOp]| {
            self.temp_lanes_fixpoint(decoded, opdescs, Meet::Any, |of, operation, lane| {
                match operation {
                    Operation::Binary { op, a, b, .. } => match op {
                        BinaryOperation::Max | BinaryOperation::Min => {
                            of(a, lane, true) || of(b, lane, true)
                        }
                        BinaryOperation::Dst if lane == 2 => of(a, lane, true),
                        BinaryOperation::Dst if lane == 3 => of(b, lane, true),
                        _ => false,
                    },
                    Operation::Unary { op, a, .. } => {
                        sources.contains(&op) || (op == UnaryOp::Mov && of(a, lane, true))
                    }
                    Operation::Mad { .. } | Operation::Mova { .. } | Operation::Cmp { .. } => false,
                }
            })
        };
        let wild = from(&[UnaryOp::Rcp, UnaryOp::Rsq, UnaryOp::Ex2, UnaryOp::Lg2]);
        let logarithms = from(&[UnaryOp::Lg2]);
        self.wild_temps = wild;
        self.logarithm_temps = logarithms;
    }

    /// A flow-insensitive property of the temporaries' lanes at its fixed point: for every
    /// reachable write of lane `lane` of a temporary, `holds(of, operation, lane)` says whether
    /// the written value has it, where `of(operand, lane, negated_keeps)` says whether lane
    /// `lane` of an operand, as read (swizzled), has it (a temporary's lane as found so far;
    /// never an input's or uniform's; a negated one only if `negated_keeps`). With
    /// [`Meet::All`] a lane has the property when every write gives it (starting from all:
    /// the zeroed start has it); with [`Meet::Any`] when some write does (starting from none).
    fn temp_lanes_fixpoint(
        &self,
        decoded: &[Instruction],
        opdescs: &[u32],
        meet: Meet,
        holds: impl Fn(&dyn Fn(Operand, usize, bool) -> bool, Operation, usize) -> bool,
    ) -> [u8; 16] {
        let mut lanes = match meet {
            Meet::All => [0xFu8; 16],
            Meet::Any => [0u8; 16],
        };
        loop {
            let mut changed = false;
            for (inst, _) in decoded.iter().zip(&self.reachable).filter(|&(_, &r)| r) {
                let Some(operation) = inst.operation() else {
                    continue;
                };
                let Some((RegisterFile::Temporary, n)) = inst.dst().map(|d| d.file_index()) else {
                    continue;
                };
                let desc = OperandDescriptor(opdescs[operation.desc() as usize]);
                let now = lanes;
                let of = |operand: Operand, lane: usize, negated_keeps: bool| {
                    let (RegisterFile::Temporary, m) = operand.reg.file_index() else {
                        return false;
                    };
                    let component = desc.swizzle(operand.slot).component(lane);
                    (negated_keeps || !desc.negate(operand.slot))
                        && now[m as usize] & (1 << component) != 0
                };
                let written = desc.dest_mask().lanes();
                let mut next = lanes[n as usize];
                for lane in (0..4).filter(|&lane| written & (1 << lane) != 0) {
                    let has = holds(&of, operation, lane);
                    match meet {
                        Meet::All if !has => next &= !(1 << lane),
                        Meet::Any if has => next |= 1 << lane,
                        _ => {}
                    }
                }
                if next != lanes[n as usize] {
                    lanes[n as usize] = next;
                    changed = true;
                }
            }
            if !changed {
                return lanes;
            }
        }
    }

    /// Finds the dot-product groups ([`DotGroup`]) of the runs, with the operand descriptors
    /// `opdescs`. Only for a vertex shader: a geometry shader's failing budget check must
    /// leave the registers as they were before each instruction of a run.
    pub fn find_dot_groups(&mut self, decoded: &[Instruction], opdescs: &[u32]) {
        self.dot_groups = vec![DotGroup::Alone; PROGRAM_WORDS];
        let mut pc = 0;
        while pc < PROGRAM_WORDS {
            let len = self.dot_group_at(decoded, opdescs, pc);
            if len >= 2 {
                self.dot_groups[pc] = DotGroup::First(len as u8);
                for member in &mut self.dot_groups[pc + 1..pc + len] {
                    *member = DotGroup::Later;
                }
            }
            pc += len.max(1);
        }
    }

    /// How many instructions from `pc` form a dot-product group (0 or 1: none).
    fn dot_group_at(&self, decoded: &[Instruction], opdescs: &[u32], pc: usize) -> usize {
        let dot = |pc: usize| {
            let dot = DotProduct::of(&decoded[pc])?;
            let mask = OperandDescriptor(*opdescs.get(dot.desc as usize)?)
                .dest_mask()
                .0;
            Some((dot.op, dot.dst, mask, [dot.a.reg, dot.b.reg]))
        };
        if !self.reachable[pc] || self.filler[pc] {
            return 0;
        }
        let Some((op, dst, first_mask, _)) = dot(pc) else {
            return 0;
        };
        let reads_dst = |sources: [shader::isa::SrcReg; 2]| {
            sources.iter().any(|source| {
                matches!(
                    (source.file_index(), dst.file_index()),
                    ((RegisterFile::Temporary, s), (RegisterFile::Temporary, d)) if s == d
                )
            })
        };
        let mut lanes = first_mask;
        let mut len = 1;
        while len < 4 && pc + len < PROGRAM_WORDS {
            let next = pc + len;
            if self.leaders[next] || !self.reachable[next] || self.filler[next] {
                break;
            }
            match dot(next) {
                Some((next_op, next_dst, mask, sources))
                    if next_op == op
                        && next_dst == dst
                        && mask != 0
                        && mask & lanes == 0
                        && !reads_dst(sources) =>
                {
                    lanes |= mask;
                    len += 1;
                }
                _ => break,
            }
        }
        // Only the later members must not read the register: the first reads it before any
        // member writes it, as the group does.
        if len < 2 || first_mask == 0 {
            return 1;
        }
        len
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

/// Whether the instruction at `pc` is a DP3, DP4 or DPH with the operation and destination
/// of the one before it (a possible member of a dot-product group).
fn continues_dots(decoded: &[Instruction], pc: usize) -> bool {
    let key = |inst: &Instruction| DotProduct::of(inst).map(|dot| (dot.op, dot.dst));
    pc > 0 && key(&decoded[pc]).is_some() && key(&decoded[pc]) == key(&decoded[pc - 1])
}

/// A DP3, DP4 or DPH (an inverted DPHI as its DPH): what a dot-product group is made of.
#[derive(Clone, Copy, Debug)]
pub struct DotProduct {
    /// DP3, DP4 or DPH.
    pub op: BinaryOperation,
    /// The register written.
    pub dst: DstReg,
    /// The operand-descriptor index.
    pub desc: u8,
    /// SRC1.
    pub a: Operand,
    /// SRC2.
    pub b: Operand,
}

impl DotProduct {
    /// The dot product `inst` computes, if it computes one.
    pub fn of(inst: &Instruction) -> Option<DotProduct> {
        match inst.operation()? {
            Operation::Binary {
                op,
                dst,
                desc,
                a,
                b,
            } if matches!(
                op,
                BinaryOperation::Dp3 | BinaryOperation::Dp4 | BinaryOperation::Dph
            ) =>
            {
                Some(DotProduct {
                    op,
                    dst,
                    desc,
                    a,
                    b,
                })
            }
            _ => None,
        }
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

/// See [`FlowFacts::leaders`]; also returns [`FlowFacts::continues`] (before the chunks).
fn leaders(
    decoded: &[Instruction],
    entry: u16,
    reachable: &[bool],
    facts: &FlowFacts,
) -> (Vec<bool>, Vec<bool>) {
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
    // A run may go up to 3 addresses past the limit to keep a chain of dot products that may
    // form a group (`FlowFacts::find_dot_groups`) in one run.
    // Every other way into an address made it a leader above, so a cut that is not one is
    // entered only from the address before.
    let mut continues = vec![false; PROGRAM_WORDS];
    let mut run = 0;
    for (pc, leader) in leaders.iter_mut().enumerate() {
        let cut = run >= RUN_LIMIT
            && !filler[pc]
            && (run >= RUN_LIMIT + 3 || !continues_dots(decoded, pc));
        if !*leader && cut && reachable[pc] {
            continues[pc] = true;
        }
        if *leader || cut || !reachable[pc] {
            *leader = true;
            run = 0;
        }
        run += 1;
    }
    (leaders, continues)
}

/// Every address control can reach from the entry: the addresses of the exact control-flow
/// machine's abstract state graph (conditions and loop counts taken both ways, stacks exact),
/// or, when that graph is too large, a stack-blind superset. Also
/// [`FlowFacts::entered_only_at_start`], which only the graph can tell (false without it).
fn reachable(decoded: &[Instruction], entry: u16) -> (Vec<bool>, bool) {
    let graph = shader::flow::explore::explore(decoded, entry, EXPLORATION_LIMIT);
    if graph.complete {
        let mut seen = vec![false; PROGRAM_WORDS];
        for node in &graph.nodes {
            seen[node.state.pc as usize] = true;
        }
        let nodes = &graph.nodes;
        let reentered = nodes.iter().any(|node| {
            (node.successors.iter()).any(|&next| nodes[next as usize].state.pc == entry)
        });
        return (seen, !reentered);
    }
    (
        shader::flow::explore::reachable_addresses(decoded, entry),
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use shader::isa::{BinaryOp, DestMask, DstReg, RelIndex, SrcReg, Swizzle, UnaryOp};

    /// Program memory from `code` (the rest zero words), with descriptor `k` writing the lanes
    /// of mask `k`.
    fn memory(code: &[Instruction]) -> (Vec<Instruction>, Vec<u32>) {
        let mut decoded = vec![decode(0); PROGRAM_WORDS];
        decoded[..code.len()].copy_from_slice(code);
        let opdescs = (0..16)
            .map(|mask| OperandDescriptor::new(DestMask(mask), [(false, Swizzle::IDENTITY); 3]).0)
            .collect();
        (decoded, opdescs)
    }

    fn dot(op: BinaryOp, dst: DstReg, mask: u8, src2: SrcReg) -> Instruction {
        Instruction::Binary {
            op,
            dst,
            src1: SrcReg::uniform(4),
            src2,
            rel: RelIndex::None,
            desc: mask,
        }
    }

    fn end() -> Instruction {
        Instruction::Simple {
            op: SimpleOp::End,
            ignored: 0,
        }
    }

    fn groups(code: &[Instruction]) -> Vec<DotGroup> {
        let (decoded, opdescs) = memory(code);
        let mut facts = FlowFacts::analyse(&decoded, 0);
        facts.find_dot_groups(&decoded, &opdescs);
        facts.dot_groups[..code.len()].to_vec()
    }

    #[test]
    fn canonical_temporaries_are_those_every_write_keeps_canonical() {
        let mov = |dst: u8, src1: SrcReg, desc: u8| Instruction::Unary {
            op: UnaryOp::Mov,
            dst: DstReg::temp(dst),
            src1,
            rel: RelIndex::None,
            desc,
            ignored: 0,
        };
        const NEGATED: u8 = 16;
        let code = [
            dot(BinaryOp::Dp4, DstReg::temp(0), 0b1000, SrcReg::input(0)), // r0.x rounded
            mov(1, SrcReg::input(0), 0b0011),                              // r1.zw = v0: raw
            mov(2, SrcReg::temp(0), 0xF), // r2 = r0: canonical lanes copied
            mov(3, SrcReg::temp(0), NEGATED), // r3 = -r0: a negated +0 is -0
            mov(4, SrcReg::temp(5), 0xF), // r4 = r5, whose y the next word makes raw
            mov(5, SrcReg::input(1), 0b0100), // r5.y = v1.y: raw
            end(),
        ];
        let (decoded, mut opdescs) = memory(&code);
        let identity = (false, Swizzle::IDENTITY);
        let negated = [(true, Swizzle::IDENTITY), identity, identity];
        opdescs.push(OperandDescriptor::new(DestMask::ALL, negated).0);
        let mut facts = FlowFacts::analyse(&decoded, 0);
        facts.find_canonical_temps(&decoded, &opdescs);
        // Bit i is lane i (x = bit 0); lanes never written keep the zeroed start, +0.
        let expected = [0xF, 0b0011, 0xF, 0, 0b1101, 0b1101, 0xF];
        assert_eq!(facts.canonical_temps[..7], expected);
        assert!(facts.canonical_temps[7..].iter().all(|&lanes| lanes == 0xF));
    }

    #[test]
    fn wild_temporaries_are_those_some_write_gives_a_transcendental() {
        let unary = |op: UnaryOp, dst: u8, src1: SrcReg, desc: u8| Instruction::Unary {
            op,
            dst: DstReg::temp(dst),
            src1,
            rel: RelIndex::None,
            desc,
            ignored: 0,
        };
        let binary = |op: BinaryOp, dst: u8, src1: u8, src2: u8| Instruction::Binary {
            op,
            dst: DstReg::temp(dst),
            src1: SrcReg::temp(src1),
            src2: SrcReg::temp(src2),
            rel: RelIndex::None,
            desc: 0xF,
        };
        // Descriptor k writes the lanes of mask k (0b1000: x).
        let code = [
            unary(UnaryOp::Rsq, 0, SrcReg::input(0), 0b1000), // r0.x: wild
            unary(UnaryOp::Mov, 0, SrcReg::input(0), 0xF),    // r0 again: still wild somewhere
            unary(UnaryOp::Lg2, 1, SrcReg::input(0), 0b0100), // r1.y: a logarithm
            unary(UnaryOp::Mov, 2, SrcReg::temp(1), 0xF),     // r2 = r1: copied lanes
            binary(BinaryOp::Max, 3, 0, 1),                   // r3: either operand's
            binary(BinaryOp::Mul, 4, 0, 1),                   // r4: a product, not wild
            unary(UnaryOp::Ex2, 5, SrcReg::temp(4), 0b0010),  // r5.z: wild
            unary(UnaryOp::Flr, 6, SrcReg::temp(1), 0xF),     // r6: FLR is not
            end(),
        ];
        let (decoded, opdescs) = memory(&code);
        let mut facts = FlowFacts::analyse(&decoded, 0);
        facts.find_wild_temps(&decoded, &opdescs);
        // Bit i is lane i (x = bit 0).
        assert_eq!(
            facts.wild_temps[..7],
            [0b0001, 0b0010, 0b0010, 0b0011, 0, 0b0100, 0]
        );
        assert_eq!(
            facts.logarithm_temps[..7],
            [0, 0b0010, 0b0010, 0b0010, 0, 0, 0]
        );
        assert!(facts.wild_temps[7..].iter().all(|&lanes| lanes == 0));
    }

    /// A straight line is cut every `RUN_LIMIT` addresses; a cut continues the run before
    /// (keeps its register values) only where no other way leads in: not at a jump target, not
    /// after a flow instruction.
    #[test]
    fn only_cuts_entered_from_the_address_before_continue_the_run() {
        let mov = Instruction::Unary {
            op: UnaryOp::Mov,
            dst: DstReg::temp(0),
            src1: SrcReg::input(0),
            rel: RelIndex::None,
            desc: 0xF,
            ignored: 0,
        };
        let jump_back = Instruction::BoolFlow {
            op: shader::isa::BoolFlowOp::Jmpu,
            bool_id: 0,
            target: 8,
            count: 0,
            ignored: 0,
        };
        // 0-11 MOVs, 12 JMPU to 8, 13 END.
        let mut code = vec![mov; 12];
        code.extend([jump_back, end()]);
        let (decoded, _) = memory(&code);
        let facts = FlowFacts::analyse(&decoded, 0);
        let leaders: Vec<usize> = (0..14).filter(|&pc| facts.leaders[pc]).collect();
        let continues: Vec<usize> = (0..14).filter(|&pc| facts.continues[pc]).collect();
        assert_eq!(leaders, [0, 4, 8, 12, 13]);
        assert_eq!(continues, [4, 12], "8 is a jump target, 13 follows a jump");
        assert!(facts.entered_only_at_start, "no jump goes back to 0");
        // The same jump back to the entry, or the entry at 10, which the jump to 8 steps into
        // again (at 2, nothing comes back).
        code[12] = Instruction::BoolFlow {
            op: shader::isa::BoolFlowOp::Jmpu,
            bool_id: 0,
            target: 0,
            count: 0,
            ignored: 0,
        };
        let (decoded, _) = memory(&code);
        assert!(!FlowFacts::analyse(&decoded, 0).entered_only_at_start);
        code[12] = jump_back;
        let (decoded, _) = memory(&code);
        assert!(!FlowFacts::analyse(&decoded, 10).entered_only_at_start);
        assert!(FlowFacts::analyse(&decoded, 2).entered_only_at_start);
    }

    /// At each cut of a straight line, a temporary read in the next run is needed there, one
    /// read only after is needed later, and one written whole first (or read by nothing before
    /// END) is dead; where the line is left before END, every temporary not decided by then may
    /// be needed, and none is kept for the next run.
    #[test]
    fn the_temporaries_ahead_of_a_cut_are_read_soon_later_or_never() {
        let mov = |dst: DstReg, desc: u8, src1: SrcReg| Instruction::Unary {
            op: UnaryOp::Mov,
            dst,
            src1,
            rel: RelIndex::None,
            desc,
            ignored: 0,
        };
        let (full, x_only) = (0xF, 0x8);
        let mut code = vec![
            mov(DstReg::temp(0), full, SrcReg::input(0)),
            mov(DstReg::temp(1), full, SrcReg::input(0)),
            mov(DstReg::temp(2), full, SrcReg::input(0)),
            mov(DstReg::temp(3), x_only, SrcReg::input(0)),
            // cut at 4
            mov(DstReg::temp(4), full, SrcReg::temp(0)),
            mov(DstReg::temp(1), full, SrcReg::input(1)),
            mov(DstReg::temp(3), x_only, SrcReg::input(1)),
            mov(DstReg::temp(5), full, SrcReg::input(1)),
            // cut at 8
            mov(DstReg::output(0), full, SrcReg::temp(2)),
            mov(DstReg::output(1), full, SrcReg::temp(3)),
            end(),
        ];
        let (decoded, opdescs) = memory(&code);
        let mut facts = FlowFacts::analyse(&decoded, 0);
        facts.find_temps_ahead(&decoded, &opdescs);
        let cuts: Vec<u16> = facts.temps_ahead.keys().copied().collect();
        assert_eq!(cuts, [4, 8]);
        // r0 read at 4; r2 at 8; r3's y, z, w at 9 (its x written again at 6); r1 written
        // whole at 5 first; r4 and r5 first written.
        let at = |facts: &FlowFacts, cut| facts.temps_ahead[&cut];
        assert_eq!(
            at(&facts, 4),
            TempsAhead {
                next: 0b0001,
                later: 0b1100
            }
        );
        assert_eq!(
            at(&facts, 8),
            TempsAhead {
                next: 0b1100,
                later: 0
            }
        );
        // The line left at 10 (a jump) before END.
        code[10] = Instruction::BoolFlow {
            op: shader::isa::BoolFlowOp::Jmpu,
            bool_id: 0,
            target: 12,
            count: 0,
            ignored: 0,
        };
        code.extend([end(), end()]);
        let (decoded, opdescs) = memory(&code);
        let mut facts = FlowFacts::analyse(&decoded, 0);
        facts.find_temps_ahead(&decoded, &opdescs);
        assert_eq!(
            at(&facts, 4),
            TempsAhead {
                next: 0,
                later: !0b11_0010
            }
        );
        assert_eq!(
            at(&facts, 8),
            TempsAhead {
                next: 0,
                later: 0xFFFF
            }
        );
    }

    #[test]
    fn a_matrix_transform_is_one_group_even_across_the_run_limit() {
        use DotGroup::*;
        let r0 = DstReg::temp(0);
        let v0 = SrcReg::input(0);
        let mov = Instruction::Unary {
            op: UnaryOp::Mov,
            dst: DstReg::temp(1),
            src1: v0,
            rel: RelIndex::None,
            desc: 0xF,
            ignored: 0,
        };
        // Three instructions first, so a plain cut every RUN_LIMIT addresses would split it.
        let code = [
            mov,
            mov,
            mov,
            dot(BinaryOp::Dp4, r0, 0b0001, v0),
            dot(BinaryOp::Dp4, r0, 0b0010, v0),
            dot(BinaryOp::Dp4, r0, 0b0100, v0),
            dot(BinaryOp::Dp4, r0, 0b1000, v0),
            end(),
        ];
        assert_eq!(
            groups(&code),
            [Alone, Alone, Alone, First(4), Later, Later, Later, Alone]
        );
    }

    #[test]
    fn dot_products_that_depend_on_each_other_stay_apart() {
        use DotGroup::*;
        let r0 = DstReg::temp(0);
        let v0 = SrcReg::input(0);
        let dp4 = BinaryOp::Dp4;
        // Overlapping masks: the second overwrites a lane of the first.
        let overlap = [dot(dp4, r0, 0b0011, v0), dot(dp4, r0, 0b0010, v0), end()];
        assert_eq!(groups(&overlap), [Alone, Alone, Alone]);
        // A later one reads the register: it sees the first's lane.
        let reads = [
            dot(dp4, r0, 0b0001, v0),
            dot(dp4, r0, 0b0010, SrcReg::temp(0)),
            end(),
        ];
        assert_eq!(groups(&reads), [Alone, Alone, Alone]);
        // The first may read it (before any member writes); the group ends at another
        // operation and at another destination.
        let code = [
            dot(dp4, r0, 0b0001, SrcReg::temp(0)),
            dot(dp4, r0, 0b0110, v0),
            dot(BinaryOp::Dp3, r0, 0b1000, v0),
            dot(BinaryOp::Dp3, DstReg::output(0), 0b0001, v0),
            dot(BinaryOp::Dp3, DstReg::output(0), 0b0010, v0),
            end(),
        ];
        assert_eq!(
            groups(&code),
            [First(2), Later, Alone, First(2), Later, Alone]
        );
    }
}
