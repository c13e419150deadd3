//! The run loop: a batch in groups of `N` vertices, every register component a vector of `N`
//! values, control flow once per group with the scalar [`FlowDriver`].

use super::decode::{
    Decoded, Entry, From, INPUT_BASE, Kind, Lane, OUTPUT_BASE, Op, Out, PLANES, SCRATCH_SLOTS, Step,
};
use super::wide::{Wide, each, mask_pairwise};
use shader::exec::BatchIo;
use shader::float24::lanes::{self, Exactly, Finish, Flagging};
use shader::float24::{Precision, arith};
use shader::flow::{FlowDriver, FlowInputs, Stop, rules};
use shader::isa::{CompareOp, Instruction};
use shader::program::{
    DEFAULT_INPUT, ExactIndex, FlowRegisters, UNIFORM_INDEX_SLOTS, Uniforms, Vec4,
    relative_uniform_slot,
};

/// The precision a const parameter names (0 `f24`, 1 `f24-rne`, 2 `f32`), so that each mode
/// gets its own copy of the loop with the mode's branches folded away.
pub(super) const fn precision_of(p: u8) -> Precision {
    match p {
        0 => Precision::F24Truncate,
        1 => Precision::F24Nearest,
        _ => Precision::F32,
    }
}

/// The const parameter of a precision (see [`precision_of`]).
pub(super) const fn precision_index(p: Precision) -> u8 {
    match p {
        Precision::F24Truncate => 0,
        Precision::F24Nearest => 1,
        Precision::F32 => 2,
    }
}

/// The float uniforms as relative addressing reads them: 128 slots, 96-127 ones
/// (docs/execution-model.md §4).
struct UniformTable([Vec4; UNIFORM_INDEX_SLOTS]);

impl UniformTable {
    fn new(uniforms: &Uniforms) -> UniformTable {
        let mut table = [[1.0; 4]; UNIFORM_INDEX_SLOTS];
        table[..uniforms.float.len()].copy_from_slice(&uniforms.float);
        UniformTable(table)
    }

    #[inline(always)]
    fn get(&self, slot: usize, comp: usize) -> u32 {
        self.0[slot % UNIFORM_INDEX_SLOTS][comp % 4].to_bits()
    }
}

/// The registers of one group.
pub(super) struct State<const N: usize> {
    /// v0-v15, r0-r15, o0-o15: four planes each (see the `*_BASE` constants).
    planes: [[f32; N]; PLANES],
    a0: [[i32; N]; 2],
    /// cmp.x and cmp.y as masks (all ones: true).
    cmp: [[u32; N]; 2],
    /// aL of the way being run (one per group, or per path where the vertices diverged).
    al: i32,
    /// aL of each vertex at its END.
    final_al: [i32; N],
    /// The results of an instruction's earlier steps ([`Out::Scratch`]).
    scratch: [[[f32; N]; 4]; SCRATCH_SLOTS],
}

/// What one batch run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Groups run.
    pub groups: usize,
    /// Groups run with the exact rules (after an unusual value, or as the run after one).
    pub exact_groups: usize,
    /// Vertices declined.
    pub declined: usize,
}

/// Why a group did not finish.
pub(super) enum Stopped {
    /// Left to the exact engine (the budget, BREAK outside a loop).
    Decline,
    /// The flagging rules met an unusual value: run the group again with the exact rules.
    Unusual,
}
use Stopped::Decline;

/// How a group run finishes its arithmetic ([`Exactly`], or [`Flagging`] with a check).
pub(super) trait GroupFinish<const N: usize>: Finish<Wide<N>> {
    /// Whether some result so far is not exact.
    fn flagged(&self) -> bool;
}

impl<const N: usize> GroupFinish<N> for Exactly {
    #[inline(always)]
    fn flagged(&self) -> bool {
        false
    }
}

impl<const N: usize> GroupFinish<N> for Flagging<[u32; N]> {
    #[inline(always)]
    fn flagged(&self) -> bool {
        self.unusual.is_some_and(|m| m.iter().any(|&x| x != 0))
    }
}

/// After a group meets an unusual value, this many groups run with the exact rules at once
/// (unusual values come in runs: a lighting shader's lg2(0) = -inf on back faces).
const EXACT_AFTER_UNUSUAL: u32 = 8;

/// What one run reads besides the registers.
pub(super) struct Context<'a> {
    program: &'a Decoded,
    table: UniformTable,
    uniforms: &'a Uniforms,
    budget: u64,
}

/// The instruction set a copy of the group loop and of the instruction bodies is compiled for.
///
/// The instruction bodies ([`State::exec`]) are the largest code the library has, and LLVM's
/// time grows faster than a function's size: with the group loop of both finishes inlined into
/// one run loop per precision and instruction set, each with the bodies inlined at every call
/// site, the library took 16 minutes to build. Here each (precision, finish, instruction set)
/// has its own out-of-line group loop ([`Isa::run_group`]) with one copy of the bodies inlined
/// into its straight-line runs ([`Isa::exec_inline`], where the time goes: a call per
/// instruction there costs up to a fifth of a short program's time), and one out-of-line copy
/// ([`Isa::exec`]) for flow instructions and diverged paths. On x86-64 the baseline copy only
/// runs on hosts without AVX2 (processors from before 2013): its straight-line runs call the
/// out-of-line copy too, which halves what the build spends on it.
pub(super) trait Isa: Sized {
    /// [`run_group`], compiled for this instruction set.
    fn run_group<const N: usize, const P: u8, F: GroupFinish<N>>(
        context: &Context<'_>,
        state: &mut State<N>,
        fin: &mut F,
    ) -> Result<(), Stopped>;

    /// Executes `step` ([`State::exec`]), out of line.
    fn exec<const N: usize, const P: u8, F: Finish<Wide<N>>>(
        state: &mut State<N>,
        context: &Context<'_>,
        fin: &mut F,
        step: &Step,
    );

    /// Executes `step` of a straight-line run: [`State::exec`] inlined into the group loop,
    /// or (the baseline copy on x86-64) [`Isa::exec`].
    fn exec_inline<const N: usize, const P: u8, F: Finish<Wide<N>>>(
        state: &mut State<N>,
        context: &Context<'_>,
        fin: &mut F,
        step: &Step,
    );
}

/// The target's baseline.
pub(super) struct Baseline;

impl Isa for Baseline {
    #[inline(never)]
    fn run_group<const N: usize, const P: u8, F: GroupFinish<N>>(
        context: &Context<'_>,
        state: &mut State<N>,
        fin: &mut F,
    ) -> Result<(), Stopped> {
        run_group::<N, P, F, Self>(context, state, fin)
    }

    #[inline(never)]
    fn exec<const N: usize, const P: u8, F: Finish<Wide<N>>>(
        state: &mut State<N>,
        context: &Context<'_>,
        fin: &mut F,
        step: &Step,
    ) {
        state.exec::<P>(context, fin, step);
    }

    #[inline(always)]
    fn exec_inline<const N: usize, const P: u8, F: Finish<Wide<N>>>(
        state: &mut State<N>,
        context: &Context<'_>,
        fin: &mut F,
        step: &Step,
    ) {
        if cfg!(target_arch = "x86_64") {
            Self::exec::<N, P, F>(state, context, fin, step);
        } else {
            state.exec::<P>(context, fin, step);
        }
    }
}

/// x86-64 with AVX2: only used once the host is known to have it (`Host::Avx2`).
#[cfg(target_arch = "x86_64")]
pub(super) struct Avx2;

#[cfg(target_arch = "x86_64")]
impl Isa for Avx2 {
    #[inline(always)]
    fn run_group<const N: usize, const P: u8, F: GroupFinish<N>>(
        context: &Context<'_>,
        state: &mut State<N>,
        fin: &mut F,
    ) -> Result<(), Stopped> {
        // SAFETY: `Avx2` runs only on hosts that have AVX2 (`Host::detect`).
        unsafe { run_group_avx2::<N, P, F>(context, state, fin) }
    }

    #[inline(always)]
    fn exec<const N: usize, const P: u8, F: Finish<Wide<N>>>(
        state: &mut State<N>,
        context: &Context<'_>,
        fin: &mut F,
        step: &Step,
    ) {
        // SAFETY: as above.
        unsafe { exec_avx2::<N, P, F>(state, context, fin, step) }
    }

    /// Called only from [`run_group_avx2`], whose AVX2 the inlined bodies share.
    #[inline(always)]
    fn exec_inline<const N: usize, const P: u8, F: Finish<Wide<N>>>(
        state: &mut State<N>,
        context: &Context<'_>,
        fin: &mut F,
        step: &Step,
    ) {
        state.exec::<P>(context, fin, step);
    }
}

/// [`run_group`] compiled with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline(never)]
fn run_group_avx2<const N: usize, const P: u8, F: GroupFinish<N>>(
    context: &Context<'_>,
    state: &mut State<N>,
    fin: &mut F,
) -> Result<(), Stopped> {
    run_group::<N, P, F, Avx2>(context, state, fin)
}

/// [`State::exec`] compiled with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline(never)]
fn exec_avx2<const N: usize, const P: u8, F: Finish<Wide<N>>>(
    state: &mut State<N>,
    context: &Context<'_>,
    fin: &mut F,
    step: &Step,
) {
    state.exec::<P>(context, fin, step);
}

/// Runs every vertex of `io` in groups of `N`; precision `P` (see [`precision_of`]),
/// instructions executed by `I`.
#[inline(always)]
pub(super) fn run_batch<const N: usize, const P: u8, I: Isa>(
    program: &Decoded,
    budget: u64,
    uniforms: &Uniforms,
    io: &mut BatchIo<'_>,
    declined: &mut Vec<usize>,
) -> RunStats {
    let mut stats = RunStats::default();
    let context = Context {
        program,
        table: UniformTable::new(uniforms),
        uniforms,
        budget,
    };
    let mut state: Box<State<N>> = Box::new(State {
        planes: [[0.0; N]; PLANES],
        a0: [[0; N]; 2],
        cmp: [[0; N]; 2],
        al: 0,
        final_al: [0; N],
        scratch: [[[0.0; N]; 4]; SCRATCH_SLOTS],
    });
    // Input registers the batch does not carry read (0, 0, 0, 1).
    for n in 0..16 {
        for (c, &value) in DEFAULT_INPUT.iter().enumerate() {
            state.planes[INPUT_BASE as usize + 4 * n + c] = [value; N];
        }
    }
    let inputs = io.inputs;
    let count = inputs.count();
    let carried: Vec<(usize, usize)> = inputs
        .registers()
        .iter()
        .enumerate()
        .filter(|&(_, n)| program.inputs & (1 << n) != 0)
        .collect();
    let outputs: Vec<(usize, usize)> = io.outputs.registers().iter().enumerate().collect();
    let declined_before = declined.len();
    let mut exact_for = 0u32;
    let mut start = 0;
    while start < count {
        let valid = N.min(count - start);
        // Load the group's inputs; a partial group repeats its last vertex.
        for &(slot, n) in &carried {
            for c in 0..4 {
                let source = &inputs.plane(4 * slot + c)[start..start + valid];
                let plane = &mut state.planes[INPUT_BASE as usize + 4 * n + c];
                plane[..valid].copy_from_slice(source);
                let last = source[valid - 1];
                for value in &mut plane[valid..] {
                    *value = last;
                }
            }
        }
        let mut outcome = Err(Stopped::Unusual);
        if exact_for == 0 {
            state.reset(program);
            let mut fin = Flagging::<[u32; N]> { unusual: None };
            outcome = I::run_group::<N, P, _>(&context, &mut state, &mut fin);
            if outcome.is_ok() && fin.flagged() {
                outcome = Err(Stopped::Unusual);
            }
            if matches!(outcome, Err(Stopped::Unusual)) {
                exact_for = EXACT_AFTER_UNUSUAL;
            }
        }
        if matches!(outcome, Err(Stopped::Unusual)) {
            stats.exact_groups += 1;
            exact_for = exact_for.saturating_sub(1);
            state.reset(program);
            outcome = I::run_group::<N, P, _>(&context, &mut state, &mut Exactly);
        }
        if outcome.is_err() {
            declined.extend(start..start + valid);
        } else {
            for &(slot, n) in &outputs {
                for c in 0..4 {
                    let plane = &state.planes[OUTPUT_BASE as usize + 4 * n + c];
                    io.outputs.plane_mut(4 * slot + c)[start..start + valid]
                        .copy_from_slice(&plane[..valid]);
                }
            }
            if let Some(flow) = io.flow.as_deref_mut() {
                for (i, entry) in flow[start..start + valid].iter_mut().enumerate() {
                    *entry = FlowRegisters {
                        a0: [state.a0[0][i], state.a0[1][i]],
                        al: state.final_al[i],
                        cmp: [state.cmp[0][i] != 0, state.cmp[1][i] != 0],
                    };
                }
            }
        }
        stats.groups += 1;
        start += valid;
    }
    stats.declined = declined.len() - declined_before;
    stats
}

/// Runs one group from its zeroed registers to END, or says why it is declined.
#[inline(always)]
fn run_group<const N: usize, const P: u8, F: GroupFinish<N>, I: Isa>(
    context: &Context<'_>,
    state: &mut State<N>,
    fin: &mut F,
) -> Result<(), Stopped> {
    let program = context.program;
    let mut driver = FlowDriver::new(program.entry);
    let mut executed: u64 = 0;
    loop {
        let pc = driver.pc();
        let entry = program.at.get(pc as usize).ok_or(Decline)?;
        let first = entry.op as usize;
        if entry.op == Entry::UNREACHABLE {
            return Err(Decline);
        }
        if entry.run > 0 {
            let run = entry.run as usize;
            executed += run as u64;
            if executed > context.budget {
                return Err(Decline);
            }
            let (from, to) = entry.steps;
            let steps = program
                .steps
                .get(from as usize..to as usize)
                .ok_or(Decline)?;
            for step in steps {
                I::exec_inline::<N, P, F>(state, context, fin, step);
            }
            driver.advance_plain(entry.run);
        } else {
            executed += 1;
            if executed > context.budget {
                return Err(Decline);
            }
            let Some(inst) = program.insts.get(first) else {
                return Err(Decline);
            };
            let (from, to) = entry.steps;
            for step in program
                .steps
                .get(from as usize..to as usize)
                .ok_or(Decline)?
            {
                I::exec::<N, P, F>(state, context, fin, step);
            }
            let taken = state.taken(context, fin, inst, all_lanes::<N>())?;
            if taken != 0 && taken != all_lanes::<N>() {
                return run_paths::<N, P, F, I>(context, state, fin, driver, executed, inst, taken);
            }
            let inputs = FlowInputs {
                cmp: state.flags(0),
                bools: context.uniforms.bools,
                ints: &context.uniforms.int,
            };
            match driver.advance(inst, inputs, &mut state.al) {
                Ok(()) => {}
                Err(Stop::End) => {
                    state.final_al = [state.al; N];
                    return Ok(());
                }
                Err(Stop::BreakOutsideLoop) => return Err(Decline),
            }
        }
    }
}

/// Every vertex of a group of `N`, as a lane mask.
#[inline(always)]
const fn all_lanes<const N: usize>() -> u32 {
    if N >= 32 { u32::MAX } else { (1 << N) - 1 }
}

/// One way through a group whose vertices diverged: its control state and its vertices.
struct Path {
    driver: FlowDriver,
    al: i32,
    lanes: u32,
}

/// Runs a group whose vertices disagree at flow instruction `inst` (the lanes in `taken` pass
/// its test) to the end, under lane masks: each way is a [`Path`] whose instructions write only
/// its vertices' lanes. The deepest path (most IF, CALL and LOOP scopes open), then the one at
/// the lowest address, steps first, so that paths that meet again (the same driver state and
/// aL: where an IF/ELSE closes, a CALLC returns, a loop's last vertex leaves) merge and run as
/// one. Each vertex counts its own steps against the budget. Out of line: diverging groups
/// are the rare case, and their loop need not be copied into every fast loop.
#[inline(never)]
fn run_paths<const N: usize, const P: u8, F: GroupFinish<N>, I: Isa>(
    context: &Context<'_>,
    state: &mut State<N>,
    fin: &mut F,
    driver: FlowDriver,
    executed: u64,
    inst: &Instruction,
    taken: u32,
) -> Result<(), Stopped> {
    let program = context.program;
    let mut executed = [executed; N];
    let mut paths: Vec<Path> = Vec::with_capacity(N);
    for lanes in [taken, all_lanes::<N>() & !taken] {
        let mut path = Path {
            driver: driver.clone(),
            al: state.al,
            lanes,
        };
        if state.advance_path(context, &mut path, inst)? {
            join(&mut paths, path);
        }
    }
    while !paths.is_empty() {
        let index = (0..paths.len())
            .min_by_key(|&i| {
                let d = &paths[i].driver;
                (std::cmp::Reverse(d.depth()), d.pc())
            })
            .unwrap_or(0);
        let mut path = paths.swap_remove(index);
        state.al = path.al;
        let pc = path.driver.pc();
        let entry = program.at.get(pc as usize).ok_or(Decline)?;
        if entry.op == Entry::UNREACHABLE {
            return Err(Decline);
        }
        let first = entry.op as usize;
        let steps = u64::from(entry.run.max(1));
        for (e, count) in executed.iter_mut().enumerate() {
            if path.lanes & (1 << e) != 0 {
                *count += steps;
                if *count > context.budget {
                    return Err(Decline);
                }
            }
        }
        let going = if entry.run > 0 {
            let ops = program
                .ops
                .get(first..first + entry.run as usize)
                .ok_or(Decline)?;
            for op in ops {
                state.exec_masked::<P, F, I>(context, fin, op, path.lanes)?;
            }
            path.driver.advance_plain(entry.run);
            true
        } else {
            let (Some(op), Some(inst)) = (program.ops.get(first), program.insts.get(first)) else {
                return Err(Decline);
            };
            state.exec_masked::<P, F, I>(context, fin, op, path.lanes)?;
            let taken = state.taken(context, fin, inst, path.lanes)?;
            if taken != 0 && taken != path.lanes {
                let mut other = Path {
                    driver: path.driver.clone(),
                    al: path.al,
                    lanes: path.lanes & !taken,
                };
                path.lanes = taken;
                if state.advance_path(context, &mut other, inst)? {
                    join(&mut paths, other);
                }
            }
            state.advance_path(context, &mut path, inst)?
        };
        if going {
            join(&mut paths, path);
        }
    }
    Ok(())
}

/// Adds `path` to `paths`, merged into one in the same control state (its vertices then run
/// as one way).
fn join(paths: &mut Vec<Path>, path: Path) {
    match paths
        .iter_mut()
        .find(|p| p.al == path.al && p.driver == path.driver)
    {
        Some(same) => same.lanes |= path.lanes,
        None => paths.push(path),
    }
}

impl<const N: usize> State<N> {
    /// The registers a group starts from (docs/execution-model.md §6.1): the written r- and
    /// o-planes +0, a0 = 0, cmp = false, aL = 0; the inputs are loaded separately.
    #[inline(always)]
    fn reset(&mut self, program: &Decoded) {
        for &k in &program.written[..] {
            self.planes[k as usize % PLANES] = [0.0; N];
        }
        self.a0 = [[0; N]; 2];
        self.cmp = [[0; N]; 2];
        self.al = 0;
    }

    /// Vertex `e`'s condition flags.
    #[inline(always)]
    fn flags(&self, e: usize) -> [bool; 2] {
        [self.cmp[0][e] != 0, self.cmp[1][e] != 0]
    }

    /// The vertices of `lanes` whose test of `inst` passes: all of `lanes` when `inst` tests no
    /// flags (its way is the same for every vertex). A group that already holds an unusual
    /// value (whose flags are meaningless) runs again exactly.
    #[inline(always)]
    fn taken(
        &self,
        context: &Context<'_>,
        fin: &impl GroupFinish<N>,
        inst: &Instruction,
        lanes: u32,
    ) -> Result<u32, Stopped> {
        if !matches!(inst, Instruction::CondFlow { .. }) {
            return Ok(lanes);
        }
        if fin.flagged() {
            return Err(Stopped::Unusual);
        }
        let mut taken = 0;
        for e in 0..N {
            let mut inputs = FlowInputs {
                cmp: self.flags(e),
                bools: context.uniforms.bools,
                ints: &context.uniforms.int,
            };
            if rules::test(&mut inputs, inst) == Some(true) {
                taken |= 1 << e;
            }
        }
        Ok(taken & lanes)
    }

    /// Moves `path` past flow instruction `inst` (its vertices agree on the test). Returns
    /// whether it goes on; at END its vertices' aL is recorded.
    fn advance_path(
        &mut self,
        context: &Context<'_>,
        path: &mut Path,
        inst: &Instruction,
    ) -> Result<bool, Stopped> {
        let first = path.lanes.trailing_zeros() as usize;
        let inputs = FlowInputs {
            cmp: self.flags(first % N),
            bools: context.uniforms.bools,
            ints: &context.uniforms.int,
        };
        match path.driver.advance(inst, inputs, &mut path.al) {
            Ok(()) => Ok(true),
            Err(Stop::End) => {
                for (e, al) in self.final_al.iter_mut().enumerate() {
                    if path.lanes & (1 << e) != 0 {
                        *al = path.al;
                    }
                }
                Ok(false)
            }
            Err(Stop::BreakOutsideLoop) => Err(Decline),
        }
    }

    /// The steps of `op` for the vertices of `lanes` only: the other vertices keep their
    /// destination, a0 and cmp.
    fn exec_masked<const P: u8, F: Finish<Wide<N>>, I: Isa>(
        &mut self,
        context: &Context<'_>,
        fin: &mut F,
        op: &Op,
        lanes: u32,
    ) -> Result<(), Stopped> {
        let first = op.first as usize;
        let steps = context
            .program
            .steps
            .get(first..first + op.count as usize)
            .ok_or(Decline)?;
        if lanes == all_lanes::<N>() || steps.is_empty() {
            for step in steps {
                I::exec::<N, P, F>(self, context, fin, step);
            }
            return Ok(());
        }
        let plane = |lane: usize| (op.dst as usize + lane) % PLANES;
        let active: [bool; N] = std::array::from_fn(|e| lanes & (1 << e) != 0);
        fn blend<T: Copy, const N: usize>(new: &mut [T; N], old: &[T; N], active: &[bool; N]) {
            for e in 0..N {
                new[e] = if active[e] { new[e] } else { old[e] };
            }
        }
        // Only what the instruction writes is kept and put back.
        let written = op.mask & 0xF;
        let kept: [[f32; N]; 4] = std::array::from_fn(|lane| {
            if written & (1 << lane) != 0 {
                self.planes[plane(lane)]
            } else {
                [0.0; N]
            }
        });
        let (a0, cmp) = (self.a0, self.cmp);
        for step in steps {
            I::exec::<N, P, F>(self, context, fin, step);
        }
        for (lane, kept) in kept.iter().enumerate() {
            if written & (1 << lane) != 0 {
                blend(&mut self.planes[plane(lane)], kept, &active);
            }
        }
        if op.sets_address {
            for (new, old) in self.a0.iter_mut().zip(&a0) {
                blend(new, old, &active);
            }
        }
        if op.sets_cmp {
            for (new, old) in self.cmp.iter_mut().zip(&cmp) {
                blend(new, old, &active);
            }
        }
        Ok(())
    }

    /// Lane `from` as every vertex reads it: a plane, a uniform broadcast, a relatively
    /// addressed uniform gathered per vertex, a constant or a scratch lane, negated.
    #[inline(always)]
    fn read(&self, context: &Context<'_>, from: Lane) -> [f32; N] {
        let sign = |negate: bool| if negate { 0x8000_0000 } else { 0 };
        match from {
            Lane::Plane { plane, negate } => each(self.planes[plane as usize % PLANES], |x| {
                f32::from_bits(x.to_bits() ^ sign(negate))
            }),
            Lane::Uniform {
                from: From::Uniform,
                base,
                comp,
                negate,
            } => {
                [f32::from_bits(context.table.get(base as usize, comp as usize) ^ sign(negate)); N]
            }
            Lane::Uniform {
                from,
                base,
                comp,
                negate,
            } => self.read_relative(context, from, base, comp as usize, sign(negate)),
            Lane::Constant(bits) => [f32::from_bits(bits); N],
            Lane::Scratch { slot, lane } => {
                self.scratch[slot as usize % SCRATCH_SLOTS][lane as usize % 4]
            }
        }
    }

    /// [`State::read`] of a relatively addressed uniform (out of line: a gather, whose
    /// element-by-element code should not shape the common reads).
    #[inline(never)]
    fn read_relative(
        &self,
        context: &Context<'_>,
        from: From,
        base: u8,
        comp: usize,
        sign: u32,
    ) -> [f32; N] {
        let table = &context.table;
        let slot = |offset: i32| relative_uniform_slot(&mut ExactIndex, base, offset) as usize;
        let bits: [u32; N] = match from {
            From::RelA0X => each(self.a0[0], |offset| table.get(slot(offset), comp)),
            From::RelA0Y => each(self.a0[1], |offset| table.get(slot(offset), comp)),
            _ => [table.get(slot(self.al), comp); N],
        };
        each(bits, |b| f32::from_bits(b ^ sign))
    }

    /// Executes one step.
    #[inline(always)]
    fn exec<const P: u8>(
        &mut self,
        context: &Context<'_>,
        fin: &mut impl Finish<Wide<N>>,
        step: &Step,
    ) {
        let p = precision_of(P);
        let l = &mut Wide::<N>;
        let [a, b, c, d] = &step.operands;
        let mut values = [[0.0f32; N]; 4];
        // A lane-wise step: the body for each lane computed, every lane computed before any is
        // stored (a source may be the destination). A macro, not a closure, so that the body
        // is compiled with the target features of the loop it is part of.
        macro_rules! per_lane {
            (|$lane:ident| $body:expr) => {{
                for $lane in 0..4 {
                    if step.lanes & (1 << $lane) != 0 {
                        values[$lane] = $body;
                    }
                }
            }};
        }
        // A step with one result for every lane stores it at once.
        macro_rules! broadcast {
            ($value:expr) => {{
                let value = $value;
                self.store(step, |_| value);
                return;
            }};
        }
        match step.kind {
            Kind::Add => per_lane!(|lane| {
                let (x, y) = (self.read(context, a[lane]), self.read(context, b[lane]));
                lanes::add_by(l, fin, x, y, p)
            }),
            Kind::Mul => per_lane!(|lane| {
                let (x, y) = (self.read(context, a[lane]), self.read(context, b[lane]));
                lanes::mul_by(l, fin, x, y, p)
            }),
            Kind::Mad => per_lane!(|lane| {
                let (x, y) = (self.read(context, a[lane]), self.read(context, b[lane]));
                let z = self.read(context, c[lane]);
                lanes::mad_by(l, fin, x, y, z, p)
            }),
            Kind::Dot3 | Kind::Dot4 => {
                let terms = if step.kind == Kind::Dot3 { 3 } else { 4 };
                let mut products = [[0.0; N]; 4];
                for (lane, product) in products.iter_mut().enumerate().take(terms) {
                    let (x, y) = (self.read(context, a[lane]), self.read(context, b[lane]));
                    *product = lanes::mul_by(l, fin, x, y, p);
                }
                broadcast!(lanes::dot_sum_by(l, fin, &products[..terms], p))
            }
            Kind::Floor => per_lane!(|lane| {
                let x = self.read(context, a[lane]);
                lanes::flr_by(l, fin, x, p)
            }),
            Kind::Reciprocal => broadcast!(lanes::rcp_each_by(l, fin, self.read(context, a[0]), p)),
            Kind::ReciprocalSqrt => {
                broadcast!(lanes::rsq_each_by(l, fin, self.read(context, a[0]), p))
            }
            Kind::Exp2 => broadcast!(lanes::ex2_each_by(l, fin, self.read(context, a[0]), p)),
            Kind::Log2 => broadcast!(lanes::lg2_each_by(l, fin, self.read(context, a[0]), p)),
            Kind::Select(test) => per_lane!(|lane| {
                let (x, y) = (self.read(context, a[lane]), self.read(context, b[lane]));
                let (then, otherwise) = (self.read(context, c[lane]), self.read(context, d[lane]));
                let pass = compare_each(test, x, y);
                std::array::from_fn(|e| if pass[e] != 0 { then[e] } else { otherwise[e] })
            }),
            Kind::Move => per_lane!(|lane| self.read(context, a[lane])),
            Kind::SetCmp => {
                for flag in 0..2 {
                    if step.lanes & (1 << flag) != 0 {
                        let (x, y) = (self.read(context, a[flag]), self.read(context, b[flag]));
                        self.cmp[flag] = compare_each(step.tests[flag], x, y);
                    }
                }
                return;
            }
            Kind::SetAddress => {
                let x = self.read(context, a[0]);
                let y = self.read(context, a[1]);
                if step.lanes & 1 != 0 {
                    self.a0[0] = each(x, arith::mova);
                }
                if step.lanes & 2 != 0 {
                    self.a0[1] = each(y, arith::mova);
                }
                return;
            }
        }
        self.store(step, |lane| values[lane]);
    }

    /// Stores `value(lane)` in each lane `step` computes.
    #[inline(always)]
    fn store(&mut self, step: &Step, value: impl Fn(usize) -> [f32; N]) {
        match step.out {
            Out::Planes(dst) => {
                for lane in 0..4 {
                    if step.lanes & (1 << lane) != 0 {
                        self.planes[(dst as usize + lane) % PLANES] = value(lane);
                    }
                }
            }
            Out::Scratch(slot) => {
                let scratch = &mut self.scratch[slot as usize % SCRATCH_SLOTS];
                for (lane, slot) in scratch.iter_mut().enumerate() {
                    if step.lanes & (1 << lane) != 0 {
                        *slot = value(lane);
                    }
                }
            }
            Out::Flow => {}
        }
    }
}

/// CMP's operator on every element, as masks ([`CompareOp::compare`] with the operator fixed
/// outside the loop).
#[inline(always)]
fn compare_each<const N: usize>(op: CompareOp, a: [f32; N], b: [f32; N]) -> [u32; N] {
    macro_rules! with {
        ($op:expr) => {
            mask_pairwise(a, b, |x, y| $op.compare(x, y))
        };
    }
    match op {
        CompareOp::Eq => with!(CompareOp::Eq),
        CompareOp::Ne => with!(CompareOp::Ne),
        CompareOp::Lt => with!(CompareOp::Lt),
        CompareOp::Le => with!(CompareOp::Le),
        CompareOp::Gt => with!(CompareOp::Gt),
        CompareOp::Ge => with!(CompareOp::Ge),
        CompareOp::True(bits) => with!(CompareOp::True(bits)),
    }
}
