//! The structure-of-arrays tier's code: the group loop, the control flow traced at compile time,
//! and the data path on f32x4 values that each hold one register component of four vertices.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    Block, BlockArg, ConstantData, Function, InstBuilder, MemFlagsData, Type, Value, types,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};

use crate::facts::ValueFacts;
use crate::{caller_floats, caller_outputs};

use super::{
    ConstantLanes, FLUSHED, NEGATED_FLUSHED, RAW, RECORD_BYTES, SoaArgs, SoaArithmetic,
    SoaCompileError,
};
use shader::exec::operate::{LaneFrom, OperationBackend, Source, SourceRegister, operate};
use shader::exec::{BatchLayout, ExecConfig};
use shader::float24::arith::CompareOp;
use shader::float24::lanes::{self, Elements, Exactly, Finish, Flagging, FlaggingNan, KnownFactor};
use shader::float24::{MIN_NORMAL_BITS, Precision};
use shader::flow::rules::{self, FlowOps};
use shader::flow::{FlowDriver, FlowInputs, Stop};
use shader::isa::{
    CondFlowOp, Condition, DestMask, DstReg, Instruction, OperandDescriptor, RegisterFile,
    RelIndex, UnaryOp,
};
use shader::program::{DEFAULT_INPUT, ExactIndex, IndexOps, ShaderProgram, relative_uniform_slot};

mod operands;
mod operations;
mod regions;
mod tracing;

const F32X4: Type = types::F32X4;
const I32X4: Type = types::I32X4;

/// What the lowering needs.
pub struct Setup<'a> {
    pub program: &'a ShaderProgram,
    pub decoded: &'a [Instruction],
    pub config: ExecConfig,
    pub bools: u16,
    pub ints: [[u8; 4]; 4],
    /// The float uniform components known to be zero or +1.0 (docs/batches.md).
    pub constant_lanes: &'a ConstantLanes,
    pub layout: BatchLayout,
    pub limit: usize,
    pub pointer: Type,
    pub frontend: cranelift_codegen::isa::TargetFrontendConfig,
    pub arithmetic: SoaArithmetic,
}

/// Masked regions may hold at most this fraction of the traced-instruction limit, all together.
/// A divergent BREAKC in an unrolled loop starts a region per pass, each holding the passes
/// after it; without this share their code grows with the square of the loop's length, and
/// Cranelift's register allocator with it (measured: 200 generated programs compiled in 12.8 s
/// with the whole limit, 3.7 s with a quarter, 1.7 s with no regions). Real shaders' regions
/// are far smaller (the corpus's largest: 76 instructions).
const REGION_SHARE: usize = 4;

/// Planning masked regions may expand at most this many flow states per instruction of the
/// trace limit, all regions together; past that a divergence declines the group. Each plan
/// explores the flow-state graph from its test to the end, so without a bound a program with a
/// test in every pass of long unrolled loops took minutes to compile (a generated program of
/// the differential tester, seed 2027).
const REGION_EXPLORATION: usize = 4;

/// A masked region whose states form a loop may hold at most this many instructions: every
/// register is live round its sweep, and Cranelift's register allocator took about a minute on
/// a generated program's 500-instruction one. The corpus's largest is 62.
const LOOPED_REGION_MAX: usize = 128;

/// A masked region larger than this many instructions is run by every group that reaches its
/// test, agreeing or not, instead of beside code for each way (see [`Emitter::plan_region`]).
/// Small regions (an IF/ELSE of a few instructions) keep the unmasked code for agreeing groups.
const REGION_ALONE: usize = 48;

/// What [`Emitter::plan_region`] found: the flow-state graph, the nodes of the two ways, where
/// they meet, the nodes between in order, whether they loop, and their instructions.
struct RegionPlan {
    graph: FlowGraph,
    starts: [usize; 2],
    join: usize,
    region: Vec<usize>,
    looped: bool,
    size: usize,
}

/// The control state the rest of an invocation depends on, besides register values: the flow
/// driver (PC, stacks, loop counters), aL and what is known at compile time of the flags.
///
/// aL is known at compile time until a loop is left; from there until the next LOOP it is
/// `None`, held per vertex in the aL variable, so the states after a loop meet whatever pass
/// each vertex left it on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct FlowKey {
    driver: FlowDriver,
    al: Option<i32>,
    cmp_known: [Option<bool>; 2],
}

/// Where a segment of traced code goes on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Next {
    /// The code for a flow state (a memoised block).
    State(FlowKey),
    /// END: store the results.
    End,
    /// Decline the group.
    Decline,
}

/// The instructions of a flow state up to where it goes on, found at compile time.
struct Segment {
    steps: Vec<Step>,
    end: SegmentEnd,
}

/// One traced instruction.
#[derive(Clone, Copy)]
struct Step {
    inst: Instruction,
    /// aL while it runs, where known at compile time.
    al: Option<i32>,
    /// The value its control part leaves in aL, where it sets one.
    sets_al: Option<i32>,
}

enum SegmentEnd {
    /// On to END, a decline or another flow state.
    Go(Next),
    /// A test of the flags, decided per vertex (with what each way leaves in aL, where it
    /// sets it).
    Branch {
        cond: Condition,
        on_true: Next,
        on_false: Next,
        sets_al: [Option<i32>; 2],
    },
}

/// What is known at compile time of the flags after `inst`: CMP sets them (its two
/// always-true codes to true), LITP sets them from data.
fn cmp_known_after(inst: &Instruction, mut known: [Option<bool>; 2]) -> [Option<bool>; 2] {
    match *inst {
        Instruction::Cmp { cmp_x, cmp_y, .. } => {
            for (lane, op) in [cmp_x, cmp_y].into_iter().enumerate() {
                known[lane] = if op.bits() <= 5 { None } else { Some(true) };
            }
        }
        Instruction::Unary {
            op: UnaryOp::Litp, ..
        } => known = [None, None],
        _ => {}
    }
    known
}

/// The graph of flow states that masked regions are cut from. Node [`FlowGraph::EXIT`] comes
/// after every END and decline.
struct FlowGraph {
    nodes: Vec<Option<Next>>,
    index: HashMap<Next, usize>,
    succs: Vec<Vec<usize>>,
}

impl FlowGraph {
    const EXIT: usize = 0;

    fn new() -> Self {
        FlowGraph {
            nodes: vec![None],
            index: HashMap::new(),
            succs: vec![Vec::new()],
        }
    }

    fn node(&mut self, next: &Next) -> usize {
        if let Some(&n) = self.index.get(next) {
            return n;
        }
        let n = self.nodes.len();
        self.nodes.push(Some(next.clone()));
        self.succs.push(Vec::new());
        self.index.insert(next.clone(), n);
        n
    }

    /// The nearest node on every path from `a` and from `b` to the exit (their common
    /// post-dominator, by Cooper, Harvey and Kennedy's iterative dominance algorithm on the
    /// reversed graph); `None` where either cannot reach the exit.
    fn meeting_point(&self, a: usize, b: usize) -> Option<usize> {
        const UNKNOWN: usize = usize::MAX;
        let n = self.nodes.len();
        let mut preds = vec![Vec::new(); n];
        for (m, succs) in self.succs.iter().enumerate() {
            for &s in succs {
                preds[s].push(m);
            }
        }
        // Postorder numbers on the reversed graph, from the exit (which gets the highest).
        let mut order = vec![UNKNOWN; n];
        let mut postorder = Vec::with_capacity(n);
        let mut visited = vec![false; n];
        visited[Self::EXIT] = true;
        let mut stack = vec![(Self::EXIT, 0usize)];
        while let Some(top) = stack.last_mut() {
            let m = top.0;
            if let Some(&p) = preds[m].get(top.1) {
                top.1 += 1;
                if !visited[p] {
                    visited[p] = true;
                    stack.push((p, 0));
                }
            } else {
                order[m] = postorder.len();
                postorder.push(m);
                stack.pop();
            }
        }
        let intersect = |ipdom: &[usize], mut x: usize, mut y: usize| {
            while x != y {
                while order[x] < order[y] {
                    x = ipdom[x];
                }
                while order[y] < order[x] {
                    y = ipdom[y];
                }
            }
            x
        };
        let mut ipdom = vec![UNKNOWN; n];
        ipdom[Self::EXIT] = Self::EXIT;
        let mut changed = true;
        while changed {
            changed = false;
            for &m in postorder.iter().rev().skip(1) {
                let mut new = UNKNOWN;
                for &s in &self.succs[m] {
                    if ipdom[s] != UNKNOWN {
                        new = if new == UNKNOWN {
                            s
                        } else {
                            intersect(&ipdom, new, s)
                        };
                    }
                }
                if ipdom[m] != new {
                    ipdom[m] = new;
                    changed = true;
                }
            }
        }
        if ipdom[a] == UNKNOWN || ipdom[b] == UNKNOWN {
            return None;
        }
        Some(intersect(&ipdom, a, b))
    }

    /// The nodes reachable from `starts` without passing `join`, in reverse postorder (a
    /// topological order where they form no loop), and whether they form one.
    fn between(&self, starts: [usize; 2], join: usize) -> (Vec<usize>, bool) {
        const ON_STACK: u8 = 1;
        const DONE: u8 = 2;
        let mut colour = vec![0u8; self.nodes.len()];
        let mut postorder = Vec::new();
        let mut looped = false;
        for s in starts {
            if s == join || colour[s] != 0 {
                continue;
            }
            colour[s] = ON_STACK;
            let mut stack = vec![(s, 0usize)];
            while let Some(top) = stack.last_mut() {
                let m = top.0;
                if let Some(&next) = self.succs[m].get(top.1) {
                    top.1 += 1;
                    if next == join {
                        continue;
                    }
                    match colour[next] {
                        0 => {
                            colour[next] = ON_STACK;
                            stack.push((next, 0));
                        }
                        ON_STACK => looped = true,
                        _ => {}
                    }
                } else {
                    colour[m] = DONE;
                    postorder.push(m);
                    stack.pop();
                }
            }
        }
        postorder.reverse();
        (postorder, looped)
    }
}

/// Where a uniform component value came from, so that the input flush can read a flushed copy.
#[derive(Clone, Copy)]
enum UniformAddress {
    /// A slot known at compile time.
    Slot(u8),
    /// Per-vertex slots (an i32x4), a0-relative.
    Lanes(Value),
}

fn trusted() -> MemFlagsData {
    MemFlagsData::trusted()
}

fn read_only() -> MemFlagsData {
    MemFlagsData::trusted().with_readonly()
}

struct Emitter<'a, 'b> {
    b: FunctionBuilder<'b>,
    s: &'a Setup<'a>,
    precision: Precision,
    /// Base pointers and strides (defined in the entry block).
    uniforms: Value,
    in_stride: Value,
    /// Non-zero when the batch is vertex records, not planes (`SoaArgs::records`).
    records: Value,
    /// The current group's input, output and flow pointers and its index.
    in_group: Value,
    out_group: Value,
    out_stride: Value,
    flow_group: Value,
    flow_stride: Value,
    temp: [[Variable; 4]; 16],
    output: [[Variable; 4]; 16],
    a0: [Variable; 2],
    cmp: [Variable; 2],
    flags: Variable,
    steps: Variable,
    al: Variable,
    /// The input components of the group (loaded at its start).
    inputs: [[Option<Value>; 4]; 16],
    /// What the function knows about its values ([`ValueFacts`]): those the input flush or the
    /// rounding leaves unchanged, those known to be zero or +1.0 in every element (specialised
    /// uniform components and constants, [`lanes::KnownFactor`]); per block, the flushed
    /// copies and the constants.
    facts: ValueFacts,
    /// Per block: uniform loads.
    uniform_loads: HashMap<(usize, u8, usize), Value>,
    /// Per block: the per-vertex slots of an a0-relative read (by a0 value and base) and each
    /// slot vector's four entry addresses, shared by every component and table read through them.
    lane_slots: HashMap<(Value, u8), Value>,
    lane_addresses: HashMap<Value, [Value; 4]>,
    /// The four components of the uniform each vertex reads at per-vertex slots, by table and
    /// slots: one 16-byte load per vertex, transposed.
    lane_registers: HashMap<(usize, Value), [Value; 4]>,
    uniform_origin: HashMap<Value, (UniformAddress, usize, bool)>,
    /// Flags gathered in the current segment.
    unusual: Option<Value>,
    /// Exact rules everywhere (nothing is flagged), instead of the fast path's.
    arithmetic: SoaArithmetic,
    /// While a masked region's node is emitted: the vertices that run it (an i32x4 mask);
    /// register writes keep the other lanes' values.
    lane_mask: Option<Value>,
    /// The end and latch blocks; the shared decline block, created on first use and filled
    /// last.
    end_block: Block,
    latch: Block,
    decline: Option<Block>,
    /// Instructions traced into unmasked code and into masked regions (each bounded by the
    /// limit).
    traced: usize,
    region_traced: usize,
    /// Flow states expanded while planning masked regions, over all of them.
    region_explored: usize,
    /// The segments found so far, by flow state (what masked regions are cut from).
    segments: HashMap<FlowKey, Rc<Segment>>,
    /// The blocks of flow states, and those still to trace.
    memo: HashMap<FlowKey, Block>,
    work: Vec<(FlowKey, Block)>,
    /// aL while tracing, where known at compile time.
    current_al: Option<i32>,
}

/// Lowers the whole compiled function into `func`; returns the traced instruction count.
pub fn lower(
    func: &mut Function,
    builder_context: &mut FunctionBuilderContext,
    setup: Setup<'_>,
) -> Result<usize, SoaCompileError> {
    let mut b = FunctionBuilder::new(func, builder_context);
    let pointer = setup.pointer;
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    let head = b.create_block();
    b.append_block_param(head, types::I64);
    let body = b.create_block();
    let latch = b.create_block();
    b.append_block_param(latch, types::I32);
    let end_block = b.create_block();
    let exit = b.create_block();

    b.switch_to_block(entry);
    let args = b.block_params(entry)[0];
    let field = |b: &mut FunctionBuilder, ty: Type, offset: usize| {
        b.ins().load(ty, read_only(), args, offset as i32)
    };
    use std::mem::offset_of;
    let inputs = field(&mut b, pointer, offset_of!(SoaArgs, inputs));
    let in_stride = field(&mut b, types::I64, offset_of!(SoaArgs, in_stride));
    let outputs = field(&mut b, pointer, offset_of!(SoaArgs, outputs));
    let out_stride = field(&mut b, types::I64, offset_of!(SoaArgs, out_stride));
    let groups = field(&mut b, types::I64, offset_of!(SoaArgs, groups));
    let declined = field(&mut b, pointer, offset_of!(SoaArgs, declined));
    let uniforms = field(&mut b, pointer, offset_of!(SoaArgs, uniforms));
    let flow = field(&mut b, pointer, offset_of!(SoaArgs, flow));
    let flow_stride = field(&mut b, types::I64, offset_of!(SoaArgs, flow_stride));
    let flow_step = field(&mut b, types::I64, offset_of!(SoaArgs, flow_step));
    let group_step = field(&mut b, types::I64, offset_of!(SoaArgs, group_step));
    let records = field(&mut b, types::I64, offset_of!(SoaArgs, records));
    let zero = b.ins().iconst(types::I64, 0);
    b.ins().jump(head, &[zero.into()]);

    b.switch_to_block(head);
    let i = b.block_params(head)[0];
    let more = b.ins().icmp(IntCC::SignedLessThan, i, groups);
    b.ins().brif(more, body, &[], exit, &[]);

    b.switch_to_block(exit);
    let status = b.ins().iconst(types::I32, 0);
    b.ins().return_(&[status]);

    b.switch_to_block(latch);
    let bits = b.block_params(latch)[0];
    let byte = b.ins().ireduce(types::I8, bits);
    let at = b.ins().iadd(declined, i);
    b.ins().store(trusted(), byte, at, 0);
    let next = b.ins().iadd_imm_s(i, 1);
    b.ins().jump(head, &[next.into()]);

    b.switch_to_block(body);
    let offset = b.ins().imul(i, group_step);
    let in_group = b.ins().iadd(inputs, offset);
    let out_group = b.ins().iadd(outputs, offset);
    let flow_offset = b.ins().imul(i, flow_step);
    let flow_group = b.ins().iadd(flow, flow_offset);

    let temp: [[Variable; 4]; 16] =
        std::array::from_fn(|_| std::array::from_fn(|_| b.declare_var(F32X4)));
    let output: [[Variable; 4]; 16] =
        std::array::from_fn(|_| std::array::from_fn(|_| b.declare_var(F32X4)));
    let a0 = [b.declare_var(I32X4), b.declare_var(I32X4)];
    let cmp = [b.declare_var(I32X4), b.declare_var(I32X4)];
    let flags = b.declare_var(I32X4);
    let steps = b.declare_var(types::I64);
    let al = b.declare_var(I32X4);

    let mut e = Emitter {
        b,
        s: &setup,
        precision: setup.config.precision,
        uniforms,
        in_stride,
        records,
        in_group,
        out_group,
        out_stride,
        flow_group,
        flow_stride,
        temp,
        output,
        a0,
        cmp,
        flags,
        steps,
        al,
        inputs: [[None; 4]; 16],
        facts: ValueFacts::default(),
        uniform_loads: HashMap::new(),
        lane_slots: HashMap::new(),
        lane_addresses: HashMap::new(),
        lane_registers: HashMap::new(),
        uniform_origin: HashMap::new(),
        unusual: None,
        arithmetic: setup.arithmetic,
        lane_mask: None,
        end_block,
        latch,
        decline: None,
        traced: 0,
        region_traced: 0,
        region_explored: 0,
        segments: HashMap::new(),
        memo: HashMap::new(),
        work: Vec::new(),
        current_al: Some(0),
    };
    e.group_start();
    let result = e.trace_all();
    e.emit_end();
    e.fill_exits();
    e.b.seal_all_blocks();
    e.b.finalize(setup.frontend);
    result.map(|()| e.traced + e.region_traced)
}

impl Emitter<'_, '_> {
    // ------------------------------------------------------------------ blocks and values

    fn switch_to(&mut self, block: Block) {
        self.b.switch_to_block(block);
        self.facts.forget_made();
        self.uniform_loads.clear();
        self.lane_slots.clear();
        self.lane_addresses.clear();
        self.lane_registers.clear();
    }

    /// Bytes of `a` and `b` (f32x4) picked by `mask` (`b`'s from 16).
    fn shuffle(&mut self, a: Value, b: Value, mask: [u8; 16]) -> Value {
        crate::wide::shuffle(&mut self.b, a, b, mask)
    }

    fn bits_const(&mut self, bits: u32) -> Value {
        if let Some(&v) = self.facts.constants.get(&[bits; 4]) {
            return v;
        }
        let bytes: Vec<u8> = [bits; 4].iter().flat_map(|l| l.to_le_bytes()).collect();
        let constant = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
        let v = self.b.ins().vconst(I32X4, constant);
        self.facts.constants.insert([bits; 4], v);
        v
    }

    fn float_const(&mut self, value: f32) -> Value {
        let bits = self.bits_const(value.to_bits());
        let v = self.as_float(bits);
        if value.to_bits() == 0 || value.abs() >= f32::from_bits(MIN_NORMAL_BITS) {
            self.facts.unchanged_by_flush.insert(v);
        }
        let known = if value.to_bits() == 0 {
            Some(KnownFactor::Zero)
        } else if value == 1.0 {
            Some(KnownFactor::One)
        } else {
            None
        };
        if let Some(known) = known {
            // +0 and +1 are float24 values in every mode: the rounding keeps them.
            self.facts.known.insert(v, known);
            self.facts.rounded.insert(v);
        }
        v
    }

    fn as_int(&mut self, v: Value) -> Value {
        if self.b.func.dfg.value_type(v) == I32X4 {
            return v;
        }
        self.b.ins().bitcast(I32X4, MemFlagsData::new(), v)
    }

    fn as_float(&mut self, v: Value) -> Value {
        if self.b.func.dfg.value_type(v) == F32X4 {
            return v;
        }
        self.b.ins().bitcast(F32X4, MemFlagsData::new(), v)
    }

    fn select_float(&mut self, mask: Value, a: Value, b: Value) -> Value {
        let a = self.as_int(a);
        let b = self.as_int(b);
        let r = self.b.ins().bitselect(mask, a, b);
        self.as_float(r)
    }

    /// Zeroed registers and the group's inputs.
    fn group_start(&mut self) {
        let zero = self.float_const(0.0);
        let zero_bits = self.bits_const(0);
        for n in 0..16 {
            for c in 0..4 {
                self.b.def_var(self.temp[n][c], zero);
                self.b.def_var(self.output[n][c], zero);
            }
        }
        for v in self
            .a0
            .into_iter()
            .chain(self.cmp)
            .chain([self.flags, self.al])
        {
            self.b.def_var(v, zero_bits);
        }
        let no_steps = self.b.ins().iconst(types::I64, 0);
        self.b.def_var(self.steps, no_steps);
        // The inputs the program reads, from planes or from vertex records; the traced code
        // starts in `start` with them as its parameters.
        let layout = self.s.layout;
        let start = self.b.create_block();
        let from_planes = self.b.create_block();
        let from_records = self.b.create_block();
        for _ in 0..layout.inputs.planes() {
            self.b.append_block_param(start, F32X4);
        }
        self.b
            .ins()
            .brif(self.records, from_records, &[], from_planes, &[]);

        self.switch_to(from_planes);
        let mut values = Vec::with_capacity(layout.inputs.planes());
        for plane in 0..layout.inputs.planes() {
            let offset = self.b.ins().imul_imm_s(self.in_stride, plane as i64);
            let address = self.b.ins().iadd(self.in_group, offset);
            values.push(self.b.ins().load(F32X4, caller_floats(), address, 0).into());
        }
        self.b.ins().jump(start, &values);

        self.switch_to(from_records);
        values.clear();
        for n in layout.inputs.iter() {
            let rows = std::array::from_fn(|vertex| {
                let offset = (vertex * RECORD_BYTES + n * 16) as i32;
                self.b
                    .ins()
                    .load(F32X4, caller_floats(), self.in_group, offset)
            });
            values.extend(self.transposed(rows).map(BlockArg::from));
        }
        self.b.ins().jump(start, &values);

        self.switch_to(start);
        let params = self.b.block_params(start).to_vec();
        for n in 0..16 {
            for (c, default) in DEFAULT_INPUT.into_iter().enumerate() {
                let value = match layout.inputs.slot_of(n) {
                    Some(slot) => params[4 * slot + c],
                    None => self.float_const(default),
                };
                self.inputs[n][c] = Some(value);
            }
        }
    }

    /// The columns of the 4x4 matrix `rows` (f32x4 each): element `k` of result `j` is element
    /// `j` of row `k`. Turns four vertices' registers into a group's components and back.
    fn transposed(&mut self, rows: [Value; 4]) -> [Value; 4] {
        /// The shuffle mask taking lanes `lanes` (0-3 of the first operand, 4-7 of the second).
        fn lanes_mask(lanes: [u8; 4]) -> [u8; 16] {
            std::array::from_fn(|byte| 4 * lanes[byte / 4] + (byte % 4) as u8)
        }
        let [a, b, c, d] = rows;
        let ab_low = self.shuffle(a, b, lanes_mask([0, 4, 1, 5]));
        let cd_low = self.shuffle(c, d, lanes_mask([0, 4, 1, 5]));
        let ab_high = self.shuffle(a, b, lanes_mask([2, 6, 3, 7]));
        let cd_high = self.shuffle(c, d, lanes_mask([2, 6, 3, 7]));
        [
            self.shuffle(ab_low, cd_low, lanes_mask([0, 1, 4, 5])),
            self.shuffle(ab_low, cd_low, lanes_mask([2, 3, 6, 7])),
            self.shuffle(ab_high, cd_high, lanes_mask([0, 1, 4, 5])),
            self.shuffle(ab_high, cd_high, lanes_mask([2, 3, 6, 7])),
        ]
    }
}
