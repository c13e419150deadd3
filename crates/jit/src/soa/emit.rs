//! The structure-of-arrays tier's code: the group loop, the control flow traced at compile time,
//! and the data path on f32x4 values that each hold one register component of four vertices.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    Block, BlockArg, ConstantData, Function, InstBuilder, MemFlagsData, Type, Value, types,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};

use crate::{caller_floats, caller_outputs};

use super::{
    ConstantLanes, FLUSHED, NEGATED_FLUSHED, RAW, RECORD_BYTES, SoaArgs, SoaArithmetic,
    SoaCompileError,
};
use shader::exec::{BatchLayout, ExecConfig};
use shader::float24::arith::LITP_Y_LIMIT;
use shader::float24::lanes::{self, Elements, Exactly, Finish, Flagging, FlaggingNan, KnownFactor};
use shader::float24::{MIN_NORMAL_BITS, Precision};
use shader::flow::rules::{self, FlowOps};
use shader::flow::{FlowDriver, FlowInputs, Stop};
use shader::isa::{
    BinaryOperation, CondFlowOp, Condition, DstReg, Instruction, Operand, OperandDescriptor,
    Operation, RegisterFile, RelIndex, UnaryOp,
};
use shader::program::{DEFAULT_INPUT, ExactIndex, IndexOps, ShaderProgram, relative_uniform_slot};

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
    /// Values the input flush leaves unchanged.
    flushed: HashSet<Value>,
    /// Values the rounding leaves unchanged (results of a rounding, constants 0 and 1).
    rounded: HashSet<Value>,
    /// Values known to be zero or +1.0 in every element: specialised uniform components and
    /// constants ([`lanes::KnownFactor`]).
    known: HashMap<Value, KnownFactor>,
    /// Per block: flushed copies of values.
    flush_memo: HashMap<Value, Value>,
    /// Per block: constants and uniform loads.
    constants: HashMap<u32, Value>,
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
        flushed: HashSet::new(),
        rounded: HashSet::new(),
        known: HashMap::new(),
        flush_memo: HashMap::new(),
        constants: HashMap::new(),
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
        self.flush_memo.clear();
        self.constants.clear();
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
        if let Some(&v) = self.constants.get(&bits) {
            return v;
        }
        let bytes: Vec<u8> = [bits; 4].iter().flat_map(|l| l.to_le_bytes()).collect();
        let constant = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
        let v = self.b.ins().vconst(I32X4, constant);
        self.constants.insert(bits, v);
        v
    }

    fn float_const(&mut self, value: f32) -> Value {
        let bits = self.bits_const(value.to_bits());
        let v = self.as_float(bits);
        if value.to_bits() == 0 || value.abs() >= f32::from_bits(MIN_NORMAL_BITS) {
            self.flushed.insert(v);
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
            self.known.insert(v, known);
            self.rounded.insert(v);
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

    // ------------------------------------------------------------------ tracing

    fn trace_all(&mut self) -> Result<(), SoaCompileError> {
        let initial = FlowKey {
            driver: FlowDriver::new(self.s.program.entry),
            al: Some(0),
            cmp_known: [Some(false), Some(false)],
        };
        self.trace_segment(initial, Some(0))?;
        while let Some((key, block)) = self.work.pop() {
            self.switch_to(block);
            self.trace_segment(key, None)?;
        }
        Ok(())
    }

    /// The block of the code for flow state `key` (created and queued on first request).
    fn state_block(&mut self, key: FlowKey) -> Block {
        if let Some(&block) = self.memo.get(&key) {
            return block;
        }
        let block = self.b.create_block();
        self.memo.insert(key.clone(), block);
        self.work.push((key, block));
        block
    }

    /// A block that goes to `next`.
    fn target(&mut self, next: Next) -> Block {
        match next {
            Next::State(key) => self.state_block(key),
            Next::End => self.end_block,
            Next::Decline => self.decline_block(),
        }
    }

    fn decline_block(&mut self) -> Block {
        if let Some(block) = self.decline {
            return block;
        }
        let block = self.b.create_block();
        self.b.set_cold_block(block);
        self.decline = Some(block);
        block
    }

    /// Fills the decline block, where [`Self::target`] handed one out.
    fn fill_exits(&mut self) {
        if let Some(block) = self.decline {
            self.switch_to(block);
            let all = self
                .b
                .ins()
                .iconst(types::I32, i64::from(super::DECLINED_GROUP));
            self.b.ins().jump(self.latch, &[all.into()]);
        }
    }

    /// Ends a segment of `pending` instructions: the flags go to their variable, and the step
    /// count is either known (`static_steps`) or counted at run time and checked against the
    /// budget. In a masked region the count is that of every state some vertex ran, at least
    /// each vertex's own: a group it puts over the budget is declined, and the per-vertex path
    /// decides exactly.
    fn close_segment(&mut self, static_steps: Option<u64>, pending: u64) {
        if let Some(unusual) = self.unusual.take() {
            // Lanes outside a masked node compute what they like and flag nothing.
            let unusual = match self.lane_mask {
                Some(mask) => self.b.ins().band(unusual, mask),
                None => unusual,
            };
            let flags = self.b.use_var(self.flags);
            let merged = self.b.ins().bor(flags, unusual);
            self.b.def_var(self.flags, merged);
        }
        match static_steps {
            Some(n) => {
                let total = self.b.ins().iconst(types::I64, (n + pending) as i64);
                self.b.def_var(self.steps, total);
            }
            None => {
                let steps = self.b.use_var(self.steps);
                let total = self.b.ins().iadd_imm_s(steps, pending as i64);
                self.b.def_var(self.steps, total);
                let budget = self.s.config.instruction_budget;
                if budget < i64::MAX as u64 {
                    let over =
                        self.b
                            .ins()
                            .icmp_imm_s(IntCC::SignedGreaterThan, total, budget as i64);
                    let decline = self.decline_block();
                    let go_on = self.b.create_block();
                    self.b.ins().brif(over, decline, &[], go_on, &[]);
                    self.switch_to(go_on);
                }
            }
        }
    }

    /// Runs the flow driver over `inst` with flags `cmp` and aL as known at compile time.
    /// Returns the outcome, aL as known after (forgotten when a loop is left: see [`FlowKey`])
    /// and the value the instruction leaves in aL, where it sets one.
    fn advance(
        &self,
        driver: &mut FlowDriver,
        inst: &Instruction,
        cmp: [bool; 2],
        al: Option<i32>,
    ) -> (Result<(), Stop>, Option<i32>, Option<i32>) {
        let inputs = FlowInputs {
            cmp,
            bools: self.s.bools,
            ints: &self.s.ints,
        };
        let was_in_loop = driver.in_loop();
        // Only LOOP sets aL from nothing; the value an unknown aL stands in for reaches nothing
        // else (a LOOP saves it, to restore only inside an outer loop, where aL is known).
        let mut value = al.unwrap_or(0);
        let outcome = driver.advance(inst, inputs, &mut value);
        let known = al.is_some() || matches!(inst, Instruction::Loop { .. });
        let sets_al = (known && al != Some(value)).then_some(value);
        let after = if driver.in_loop() {
            Some(value)
        } else if was_in_loop {
            None
        } else {
            al
        };
        (outcome, after, sets_al)
    }

    /// The flag values consistent with what is known, with the instruction's test under each.
    fn outcomes(&self, inst: &Instruction, known: [Option<bool>; 2]) -> Vec<([bool; 2], bool)> {
        let mut out = Vec::new();
        for x in [false, true] {
            for y in [false, true] {
                if known[0].is_some_and(|k| k != x) || known[1].is_some_and(|k| k != y) {
                    continue;
                }
                let mut inputs = FlowInputs {
                    cmp: [x, y],
                    bools: self.s.bools,
                    ints: &self.s.ints,
                };
                let test = rules::test(&mut inputs, inst).unwrap_or(false);
                out.push(([x, y], test));
            }
        }
        out
    }

    /// Follows the flow from state `key` without emitting code, up to END, a decline or a test
    /// of the flags that the vertices decide. `static_steps` is the step count before the
    /// segment where it is known at compile time; a segment longer than `cap` instructions is
    /// an error.
    fn explore(
        &self,
        key: FlowKey,
        static_steps: Option<u64>,
        cap: usize,
    ) -> Result<Segment, SoaCompileError> {
        let FlowKey {
            mut driver,
            mut al,
            mut cmp_known,
        } = key;
        let budget = self.s.config.instruction_budget;
        let mut steps = Vec::new();
        let mut seen: HashSet<FlowKey> = HashSet::new();
        let end = loop {
            let here = FlowKey {
                driver: driver.clone(),
                al,
                cmp_known,
            };
            if !seen.insert(here) {
                // The same state again with no test of the flags in between: the invocation
                // never ends, so it runs out of its budget (docs/execution-model.md §5.6).
                break SegmentEnd::Go(Next::Decline);
            }
            if steps.len() >= cap {
                return Err(SoaCompileError::TooLarge {
                    limit: self.s.limit,
                });
            }
            if static_steps.is_some_and(|n| n + steps.len() as u64 + 1 > budget) {
                break SegmentEnd::Go(Next::Decline);
            }
            let inst = self.s.decoded[driver.pc() as usize];
            let mut step = Step {
                inst,
                al,
                sets_al: None,
            };
            cmp_known = cmp_known_after(&inst, cmp_known);
            let tests_flags =
                matches!(inst, Instruction::CondFlow { op, .. } if op != CondFlowOp::Call);
            let outcomes = if tests_flags {
                self.outcomes(&inst, cmp_known)
            } else {
                vec![([false, false], false)]
            };
            if outcomes.iter().all(|o| o.1 == outcomes[0].1) {
                let (outcome, after, sets_al) = self.advance(&mut driver, &inst, outcomes[0].0, al);
                step.sets_al = sets_al;
                steps.push(step);
                al = after;
                match outcome {
                    Ok(()) => continue,
                    Err(Stop::End) => break SegmentEnd::Go(Next::End),
                    Err(Stop::BreakOutsideLoop) => break SegmentEnd::Go(Next::Decline),
                }
            }
            steps.push(step);
            // The flags decide, per vertex.
            let Instruction::CondFlow { cond, .. } = inst else {
                unreachable!("only flag tests are undecided");
            };
            let [(on_true, sets_true), (on_false, sets_false)] = [true, false].map(|wanted| {
                let &(cmp, _) = outcomes
                    .iter()
                    .find(|o| o.1 == wanted)
                    .expect("both outcomes are possible");
                let mut d = driver.clone();
                let (outcome, after, sets_al) = self.advance(&mut d, &inst, cmp, al);
                let next = match outcome {
                    Ok(()) => Next::State(FlowKey {
                        driver: d,
                        al: after,
                        cmp_known,
                    }),
                    Err(Stop::End) => Next::End,
                    Err(Stop::BreakOutsideLoop) => Next::Decline,
                };
                (next, sets_al)
            });
            break SegmentEnd::Branch {
                cond,
                on_true,
                on_false,
                sets_al: [sets_true, sets_false],
            };
        };
        Ok(Segment { steps, end })
    }

    /// The segment of flow state `key` with an unknown step count (explored once).
    fn segment(&mut self, key: &FlowKey, cap: usize) -> Result<Rc<Segment>, SoaCompileError> {
        if let Some(segment) = self.segments.get(key) {
            return if segment.steps.len() <= cap {
                Ok(segment.clone())
            } else {
                Err(SoaCompileError::TooLarge {
                    limit: self.s.limit,
                })
            };
        }
        let segment = Rc::new(self.explore(key.clone(), None, cap)?);
        self.segments.insert(key.clone(), segment.clone());
        Ok(segment)
    }

    fn emit_steps(&mut self, segment: &Segment) {
        for step in &segment.steps {
            self.current_al = step.al;
            self.data(&step.inst);
            if let Some(value) = step.sets_al {
                let value = self.bits_const(value as u32);
                self.assign(self.al, value);
            }
        }
    }

    /// The test of the flags that ends a segment: the lanes that take the true way (an i32x4
    /// mask), with aL set as each way sets it.
    fn branch_mask(&mut self, cond: Condition, sets_al: [Option<i32>; 2]) -> Value {
        let taken = rules::condition(&mut MaskOps(self), cond);
        if sets_al != [None, None] {
            let mut al = self.b.use_var(self.al);
            if let Some(value) = sets_al[0] {
                let value = self.bits_const(value as u32);
                al = self.b.ins().bitselect(taken, value, al);
            }
            if let Some(value) = sets_al[1] {
                let value = self.bits_const(value as u32);
                al = self.b.ins().bitselect(taken, al, value);
            }
            self.assign(self.al, al);
        }
        taken
    }

    /// Emits the code of flow state `key` in the current block: its segment, then where it
    /// goes. At a test of the flags, a group whose vertices agree goes on as one; one whose
    /// vertices diverge runs a masked region, or is declined where none can be built.
    fn trace_segment(
        &mut self,
        key: FlowKey,
        static_steps: Option<u64>,
    ) -> Result<(), SoaCompileError> {
        let cap = self.s.limit.saturating_sub(self.traced);
        let segment = match static_steps {
            None => self.segment(&key, cap)?,
            Some(_) => Rc::new(self.explore(key, static_steps, cap)?),
        };
        self.traced += segment.steps.len();
        self.emit_steps(&segment);
        let pending = segment.steps.len() as u64;
        match &segment.end {
            SegmentEnd::Go(Next::Decline) => {
                self.unusual = None;
                let decline = self.decline_block();
                self.b.ins().jump(decline, &[]);
            }
            SegmentEnd::Go(next) => {
                self.close_segment(static_steps, pending);
                let block = self.target(next.clone());
                self.b.ins().jump(block, &[]);
            }
            SegmentEnd::Branch {
                cond,
                on_true,
                on_false,
                sets_al,
            } => {
                self.close_segment(static_steps, pending);
                let mask = self.branch_mask(*cond, *sets_al);
                let plan = self.plan_region([on_true, on_false]);
                if let Some(plan) = plan.as_ref().filter(|p| p.size > REGION_ALONE) {
                    // Every group runs the region, agreeing or not: tracing each way apart too
                    // would copy the region's states again at every divergence inside it.
                    let entry = self.b.create_block();
                    self.b.ins().jump(entry, &[]);
                    self.emit_region(plan, entry, mask);
                    return Ok(());
                }
                let true_block = self.target(on_true.clone());
                let false_block = self.target(on_false.clone());
                let not_all = self.b.create_block();
                let all = self.b.ins().vall_true(mask);
                self.b.ins().brif(all, true_block, &[], not_all, &[]);
                let diverged = match plan {
                    Some(plan) => {
                        let entry = self.b.create_block();
                        self.emit_region(&plan, entry, mask);
                        entry
                    }
                    None => self.decline_block(),
                };
                self.switch_to(not_all);
                let any = self.b.ins().vany_true(mask);
                self.b.ins().brif(any, diverged, &[], false_block, &[]);
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------ masked regions

    /// The flow-state graph from `starts` to the end, explored within the limit.
    fn flow_graph(&mut self, starts: [&Next; 2]) -> Option<FlowGraph> {
        let mut graph = FlowGraph::new();
        let mut left = self.s.limit;
        let mut expanded = vec![true];
        let mut queue: Vec<usize> = starts.iter().map(|&s| graph.node(s)).collect();
        while let Some(n) = queue.pop() {
            if expanded.len() <= n {
                expanded.resize(graph.nodes.len(), false);
            }
            if expanded[n] {
                continue;
            }
            expanded[n] = true;
            // Every region's graph is explored from its test to the end, so the work of all
            // of them together is bounded apart from their code.
            self.region_explored += 1;
            if self.region_explored > REGION_EXPLORATION * self.s.limit {
                return None;
            }
            let succs = match graph.nodes[n].clone() {
                Some(Next::State(key)) => {
                    let segment = self.segment(&key, left).ok()?;
                    left -= segment.steps.len();
                    match &segment.end {
                        SegmentEnd::Go(next) => vec![graph.node(next)],
                        SegmentEnd::Branch {
                            on_true, on_false, ..
                        } => vec![graph.node(on_true), graph.node(on_false)],
                    }
                }
                _ => vec![FlowGraph::EXIT],
            };
            queue.extend(succs.iter().copied());
            graph.succs[n] = succs;
        }
        Some(graph)
    }

    /// The masked region for a group whose vertices diverge at a test of the flags, the ways
    /// being `starts`: the flow states up to where every vertex meets again (the nearest common
    /// post-dominator of the starts in the flow-state graph, or the end). `None` where they
    /// pass the region share of the limit (or loop with no budget): the group is declined.
    fn plan_region(&mut self, starts: [&Next; 2]) -> Option<RegionPlan> {
        let graph = self.flow_graph(starts)?;
        let [t, f] = starts.map(|s| graph.index[s]);
        let join = graph.meeting_point(t, f)?;
        let (region, looped) = graph.between([t, f], join);
        if looped && self.s.config.instruction_budget >= i64::MAX as u64 {
            // Only the budget ends a sweep that a vertex never leaves.
            return None;
        }
        let size: usize = region
            .iter()
            .filter_map(|&n| match &graph.nodes[n] {
                Some(Next::State(key)) => Some(self.segments[key].steps.len()),
                _ => None,
            })
            .sum();
        if self.region_traced + size > self.s.limit / REGION_SHARE
            || (looped && size > LOOPED_REGION_MAX)
        {
            return None;
        }
        self.region_traced += size;
        Some(RegionPlan {
            graph,
            starts: [t, f],
            join,
            region,
            looped,
            size,
        })
    }

    /// Emits `plan` from block `entry`, `mask` being the lanes that take its first start: the
    /// region's states run in order, each under the mask of the vertices that are there, which
    /// then move on to the states that follow; where the states form a loop, the sweep repeats
    /// while any vertex has not arrived. Then the group goes on as one.
    fn emit_region(&mut self, plan: &RegionPlan, entry: Block, mask: Value) {
        let RegionPlan {
            graph,
            starts: [t, f],
            join,
            region,
            looped,
            ..
        } = plan;
        let (t, f, join, looped) = (*t, *f, *join, *looped);
        self.switch_to(entry);
        let zero = self.bits_const(0);
        let masks: HashMap<usize, Variable> = region
            .iter()
            .map(|&n| {
                let var = self.b.declare_var(I32X4);
                self.b.def_var(var, zero);
                (n, var)
            })
            .collect();
        let reach = |e: &mut Self, n: usize, lanes: Value| {
            if let Some(&var) = masks.get(&n) {
                let before = e.b.use_var(var);
                let after = e.b.ins().bor(before, lanes);
                e.b.def_var(var, after);
            }
        };
        let others = self.b.ins().bnot(mask);
        reach(self, t, mask);
        reach(self, f, others);
        let sweep = self.b.create_block();
        self.b.ins().jump(sweep, &[]);
        self.switch_to(sweep);
        let states: Vec<usize> = region
            .iter()
            .copied()
            .filter(|&n| matches!(graph.nodes[n], Some(Next::State(_))))
            .collect();
        for &n in &states {
            let Some(Next::State(key)) = &graph.nodes[n] else {
                unreachable!("states only");
            };
            let lanes = self.b.use_var(masks[&n]);
            let any = self.b.ins().vany_true(lanes);
            let body = self.b.create_block();
            let after = self.b.create_block();
            self.b.ins().brif(any, body, &[], after, &[]);
            self.switch_to(body);
            // The vertices here leave (round a loop, some come back).
            let none = self.bits_const(0);
            self.b.def_var(masks[&n], none);
            let segment = self.segments[key].clone();
            self.lane_mask = Some(lanes);
            self.emit_steps(&segment);
            self.close_segment(None, segment.steps.len() as u64);
            match &segment.end {
                SegmentEnd::Go(next) => reach(self, graph.index[next], lanes),
                SegmentEnd::Branch {
                    cond,
                    on_true,
                    on_false,
                    sets_al,
                } => {
                    let taken = self.branch_mask(*cond, *sets_al);
                    let to_true = self.b.ins().band(lanes, taken);
                    let to_false = self.b.ins().band_not(lanes, taken);
                    reach(self, graph.index[on_true], to_true);
                    reach(self, graph.index[on_false], to_false);
                }
            }
            self.lane_mask = None;
            self.b.ins().jump(after, &[]);
            self.switch_to(after);
        }
        if looped {
            let mut waiting = self.bits_const(0);
            for &n in &states {
                let lanes = self.b.use_var(masks[&n]);
                waiting = self.b.ins().bor(waiting, lanes);
            }
            let any = self.b.ins().vany_true(waiting);
            let done = self.b.create_block();
            self.b.ins().brif(any, sweep, &[], done, &[]);
            self.switch_to(done);
        }
        if let Some(&var) = graph.index.get(&Next::Decline).and_then(|d| masks.get(d)) {
            let declined = self.b.use_var(var);
            let any = self.b.ins().vany_true(declined);
            let decline = self.decline_block();
            let go_on = self.b.create_block();
            self.b.ins().brif(any, decline, &[], go_on, &[]);
            self.switch_to(go_on);
        }
        match &graph.nodes[join] {
            Some(next) => {
                let block = self.target(next.clone());
                self.b.ins().jump(block, &[]);
            }
            None => {
                // Every vertex reached an END.
                self.b.ins().jump(self.end_block, &[]);
            }
        }
    }

    /// The shared end: stores the outputs and flow registers, and reports the flagged vertices.
    fn emit_end(&mut self) {
        self.switch_to(self.end_block);
        let layout = self.s.layout;
        let outputs: Vec<[Value; 4]> = layout
            .outputs
            .iter()
            .map(|n| self.output[n].map(|v| self.b.use_var(v)))
            .collect();
        let to_planes = self.b.create_block();
        let to_records = self.b.create_block();
        let stored = self.b.create_block();
        self.b
            .ins()
            .brif(self.records, to_records, &[], to_planes, &[]);

        self.switch_to(to_planes);
        for (slot, components) in outputs.iter().enumerate() {
            for (c, &value) in components.iter().enumerate() {
                let offset = self
                    .b
                    .ins()
                    .imul_imm_s(self.out_stride, (4 * slot + c) as i64);
                let address = self.b.ins().iadd(self.out_group, offset);
                self.b.ins().store(caller_outputs(), value, address, 0);
            }
        }
        self.b.ins().jump(stored, &[]);

        self.switch_to(to_records);
        for (n, &components) in layout.outputs.iter().zip(&outputs) {
            for (vertex, row) in self.transposed(components).into_iter().enumerate() {
                let offset = (vertex * RECORD_BYTES + n * 16) as i32;
                self.b
                    .ins()
                    .store(caller_outputs(), row, self.out_group, offset);
            }
        }
        self.b.ins().jump(stored, &[]);

        self.switch_to(stored);
        let al = self.b.use_var(self.al);
        let one = self.bits_const(1);
        let cmp_x = self.b.use_var(self.cmp[0]);
        let cmp_x = self.b.ins().band(cmp_x, one);
        let cmp_y = self.b.use_var(self.cmp[1]);
        let cmp_y = self.b.ins().band(cmp_y, one);
        let a0x = self.b.use_var(self.a0[0]);
        let a0y = self.b.use_var(self.a0[1]);
        for (plane, value) in [a0x, a0y, al, cmp_x, cmp_y].into_iter().enumerate() {
            let offset = self.b.ins().imul_imm_s(self.flow_stride, plane as i64);
            let address = self.b.ins().iadd(self.flow_group, offset);
            self.b.ins().store(trusted(), value, address, 0);
        }
        let flags = self.b.use_var(self.flags);
        let bits = self.b.ins().vhigh_bits(types::I32, flags);
        self.b.ins().jump(self.latch, &[bits.into()]);
    }

    // ------------------------------------------------------------------ operands

    /// A uniform component: `c[base]` offset by `rel`, component `comp`, maybe negated.
    fn uniform(&mut self, base: u8, rel: RelIndex, comp: usize, negate: bool) -> Value {
        let address = match rel {
            RelIndex::None => UniformAddress::Slot(base),
            RelIndex::AL if self.current_al.is_some() => {
                let al = self.current_al.unwrap_or_default();
                let slot = relative_uniform_slot(&mut ExactIndex, base, al);
                UniformAddress::Slot(slot as u8)
            }
            RelIndex::A0X | RelIndex::A0Y | RelIndex::AL => {
                // Per vertex: a0, or aL after a loop was left.
                let offset = match rel {
                    RelIndex::A0X => self.b.use_var(self.a0[0]),
                    RelIndex::A0Y => self.b.use_var(self.a0[1]),
                    _ => self.b.use_var(self.al),
                };
                let slots = match self.lane_slots.get(&(offset, base)) {
                    Some(&slots) => slots,
                    None => {
                        let slots = relative_uniform_slot(&mut VectorIndex(self), base, offset);
                        self.lane_slots.insert((offset, base), slots);
                        slots
                    }
                };
                UniformAddress::Lanes(slots)
            }
        };
        let raw = self.load_uniform(RAW, address, comp);
        let value = if negate { self.b.ins().fneg(raw) } else { raw };
        self.uniform_origin.insert(value, (address, comp, negate));
        if let UniformAddress::Slot(slot) = address {
            match self.s.constant_lanes.at(slot, comp) {
                // Negated, a zero is still one the multiply reads as zero.
                Some(KnownFactor::Zero) => {
                    self.known.insert(value, KnownFactor::Zero);
                }
                Some(KnownFactor::One) if !negate => {
                    // Exactly +1.0: the flush and the rounding keep it.
                    self.known.insert(value, KnownFactor::One);
                    self.flushed.insert(value);
                    self.rounded.insert(value);
                }
                _ => {}
            }
        }
        value
    }

    fn load_uniform(&mut self, table: usize, address: UniformAddress, comp: usize) -> Value {
        let table_offset = table * 2048 + comp * 4;
        match address {
            UniformAddress::Slot(slot) => {
                let key = (table, slot, comp);
                if let Some(&v) = self.uniform_loads.get(&key) {
                    return v;
                }
                let offset = table_offset + 16 * slot as usize;
                let scalar =
                    self.b
                        .ins()
                        .load(types::F32, read_only(), self.uniforms, offset as i32);
                let v = self.b.ins().splat(F32X4, scalar);
                self.uniform_loads.insert(key, v);
                v
            }
            UniformAddress::Lanes(slots) => {
                if let Some(components) = self.lane_registers.get(&(table, slots)) {
                    return components[comp];
                }
                let addresses = match self.lane_addresses.get(&slots) {
                    Some(&addresses) => addresses,
                    None => {
                        let addresses = std::array::from_fn(|lane| {
                            let slot = self.b.ins().extractlane(slots, lane as u8);
                            let slot = self.b.ins().uextend(types::I64, slot);
                            let scaled = self.b.ins().ishl_imm_s(slot, 4);
                            self.b.ins().iadd(self.uniforms, scaled)
                        });
                        self.lane_addresses.insert(slots, addresses);
                        addresses
                    }
                };
                // Each vertex's whole register (x, y, z, w), then a 4x4 transpose into one
                // vector per component: 4 loads and 8 shuffles for every component, where
                // gathering each component costs 4 loads and 3 inserts.
                let rows = addresses.map(|address| {
                    self.b
                        .ins()
                        .load(F32X4, read_only(), address, (table * 2048) as i32)
                });
                const LOW_32: [u8; 16] = [0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23];
                const HIGH_32: [u8; 16] =
                    [8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31];
                const LOW_64: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
                const HIGH_64: [u8; 16] =
                    [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31];
                let xy01 = self.shuffle(rows[0], rows[1], LOW_32);
                let xy23 = self.shuffle(rows[2], rows[3], LOW_32);
                let zw01 = self.shuffle(rows[0], rows[1], HIGH_32);
                let zw23 = self.shuffle(rows[2], rows[3], HIGH_32);
                let components = [
                    self.shuffle(xy01, xy23, LOW_64),
                    self.shuffle(xy01, xy23, HIGH_64),
                    self.shuffle(zw01, zw23, LOW_64),
                    self.shuffle(zw01, zw23, HIGH_64),
                ];
                self.lane_registers.insert((table, slots), components);
                components[comp]
            }
        }
    }

    /// Component `lane` of source `slot` (after swizzle and negate).
    fn source(&mut self, operand: Operand, d: OperandDescriptor, lane: usize) -> Value {
        let Operand { reg, rel, slot } = operand;
        let comp = d.swizzle(slot).component(lane);
        let negate = d.negate(slot);
        let raw = match reg.file_index() {
            (RegisterFile::Input, n) => {
                self.inputs[n as usize % 16][comp].expect("inputs are loaded at the group's start")
            }
            (RegisterFile::Temporary, n) => self.b.use_var(self.temp[n as usize % 16][comp]),
            (_, n) => return self.uniform(n, rel, comp, negate),
        };
        if negate { self.b.ins().fneg(raw) } else { raw }
    }

    /// The input flush of `v`, computed once per block.
    fn flushed(&mut self, v: Value) -> Value {
        if !self.precision.is_f24() {
            return v;
        }
        let r = lanes::flush(self, v, self.precision);
        self.flush_memo.insert(v, r);
        r
    }

    fn write(&mut self, dst: DstReg, values: [Option<Value>; 4]) {
        let vars = match dst.file_index() {
            (RegisterFile::Temporary, n) => self.temp[n as usize % 16],
            (_, n) => self.output[n as usize % 16],
        };
        for (var, value) in vars.into_iter().zip(values) {
            if let Some(value) = value {
                self.assign(var, value);
            }
        }
    }

    /// Sets a register variable; in a masked region's node, only in the lanes that run it.
    fn assign(&mut self, var: Variable, value: Value) {
        let Some(mask) = self.lane_mask else {
            self.b.def_var(var, value);
            return;
        };
        let old = self.b.use_var(var);
        let merged = if self.b.func.dfg.value_type(value) == F32X4 {
            let merged = self.select_float(mask, value, old);
            if self.flushed.contains(&value) && self.flushed.contains(&old) {
                self.flushed.insert(merged);
            }
            merged
        } else {
            self.b.ins().bitselect(mask, value, old)
        };
        self.b.def_var(var, merged);
    }

    // ------------------------------------------------------------------ operations

    /// An arithmetic rule finished as this kernel finishes them ([`SoaArithmetic`]): a fast
    /// path's flags go into the segment's flags.
    fn arith(&mut self, rule: impl FnOnce(&mut Self, &mut SoaFinish) -> Value) -> Value {
        let unusual = self.unusual.take();
        let mut finish = match self.arithmetic {
            SoaArithmetic::Exact => SoaFinish::Exact(Exactly),
            SoaArithmetic::FlagNaNs => SoaFinish::FlagNaNs(FlaggingNan { unusual }),
            SoaArithmetic::FlagUnusual => SoaFinish::FlagUnusual(Flagging { unusual }),
        };
        let r = rule(self, &mut finish);
        self.unusual = match finish {
            SoaFinish::Exact(_) => None,
            SoaFinish::FlagNaNs(fast) => fast.unusual,
            SoaFinish::FlagUnusual(fast) => fast.unusual,
        };
        r
    }

    fn mul(&mut self, a: Value, b: Value) -> Value {
        let (a, b) = (self.flushed(a), self.flushed(b));
        let p = self.precision;
        self.arith(|e, fin| lanes::mul_by(e, fin, a, b, p))
    }

    fn data(&mut self, inst: &Instruction) {
        // No data part in a vertex shader: flow control is traced, NOP and unknown opcodes do
        // nothing, EMIT and SETEMIT do nothing (docs/execution-model.md §3, §6.1).
        let Some(operation) = inst.operation() else {
            return;
        };
        let p = self.precision;
        let d = OperandDescriptor(self.s.program.opdescs[operation.desc() as usize]);
        match operation {
            Operation::Binary { op, dst, a, b, .. } => {
                let mask = d.dest_mask();
                if mask.0 == 0 {
                    return;
                }
                let (first, second) = (a, b);
                let a = |e: &mut Self, lane| e.source(first, d, lane);
                let b = |e: &mut Self, lane| e.source(second, d, lane);
                let mut out = [None; 4];
                match op {
                    BinaryOperation::Dp3 | BinaryOperation::Dp4 | BinaryOperation::Dph => {
                        let n = if op == BinaryOperation::Dp3 { 3 } else { 4 };
                        let mut pairs = Vec::with_capacity(4);
                        for k in 0..n {
                            let x = if op == BinaryOperation::Dph && k == 3 {
                                self.float_const(1.0)
                            } else {
                                a(self, k)
                            };
                            let y = b(self, k);
                            pairs.push((self.flushed(x), self.flushed(y)));
                        }
                        let sum = self.arith(|e, fin| lanes::dot_by(e, fin, &pairs, p));
                        for (lane, slot) in out.iter_mut().enumerate() {
                            if mask.lane(lane) {
                                *slot = Some(sum);
                            }
                        }
                    }
                    base => {
                        for (lane, slot) in out.iter_mut().enumerate() {
                            if !mask.lane(lane) {
                                continue;
                            }
                            *slot = Some(match base {
                                BinaryOperation::Add => {
                                    let x = a(self, lane);
                                    let y = b(self, lane);
                                    let (x, y) = (self.flushed(x), self.flushed(y));
                                    self.arith(|e, fin| lanes::add_by(e, fin, x, y, p))
                                }
                                BinaryOperation::Mul => {
                                    let x = a(self, lane);
                                    let y = b(self, lane);
                                    self.mul(x, y)
                                }
                                BinaryOperation::Max | BinaryOperation::Min => {
                                    let x = a(self, lane);
                                    let y = b(self, lane);
                                    let cc = if base == BinaryOperation::Max {
                                        FloatCC::GreaterThan
                                    } else {
                                        FloatCC::LessThan
                                    };
                                    let m = self.b.ins().fcmp(cc, x, y);
                                    self.select_float(m, x, y)
                                }
                                BinaryOperation::Sge | BinaryOperation::Slt => {
                                    let x = a(self, lane);
                                    let y = b(self, lane);
                                    let cc = if base == BinaryOperation::Sge {
                                        FloatCC::GreaterThanOrEqual
                                    } else {
                                        FloatCC::LessThan
                                    };
                                    let m = self.b.ins().fcmp(cc, x, y);
                                    let one = self.float_const(1.0);
                                    let zero = self.float_const(0.0);
                                    self.select_float(m, one, zero)
                                }
                                // DST: (1, a.y * b.y, a.z, b.w).
                                _ => match lane {
                                    0 => self.float_const(1.0),
                                    1 => {
                                        let x = a(self, 1);
                                        let y = b(self, 1);
                                        self.mul(x, y)
                                    }
                                    2 => a(self, 2),
                                    _ => b(self, 3),
                                },
                            });
                        }
                    }
                }
                self.write(dst, out);
            }
            Operation::Unary { op, dst, a, .. } => {
                let mask = d.dest_mask();
                if mask.0 == 0 && op != UnaryOp::Litp {
                    return;
                }
                let mut out = [None; 4];
                match op {
                    UnaryOp::Mov | UnaryOp::Flr => {
                        for (lane, slot) in out.iter_mut().enumerate() {
                            if mask.lane(lane) {
                                let x = self.source(a, d, lane);
                                *slot = Some(if op == UnaryOp::Mov {
                                    x
                                } else {
                                    let x = self.flushed(x);
                                    self.arith(|e, fin| lanes::flr_by(e, fin, x, p))
                                });
                            }
                        }
                    }
                    UnaryOp::Rcp | UnaryOp::Rsq | UnaryOp::Ex2 | UnaryOp::Lg2 => {
                        let x = self.source(a, d, 0);
                        let x = self.flushed(x);
                        let r = self.arith(|e, fin| match op {
                            UnaryOp::Rcp => lanes::rcp_each_by(e, fin, x, p),
                            UnaryOp::Rsq => lanes::rsq_each_by(e, fin, x, p),
                            UnaryOp::Ex2 => lanes::ex2_each_by(e, fin, x, p),
                            _ => lanes::lg2_each_by(e, fin, x, p),
                        });
                        for (lane, slot) in out.iter_mut().enumerate() {
                            if mask.lane(lane) {
                                *slot = Some(r);
                            }
                        }
                    }
                    UnaryOp::Litp => {
                        let x = self.source(a, d, 0);
                        let y = self.source(a, d, 1);
                        let w = self.source(a, d, 3);
                        let zero = self.float_const(0.0);
                        let positive = |e: &mut Self, v: Value| {
                            let m = e.b.ins().fcmp(FloatCC::GreaterThan, v, zero);
                            e.select_float(m, v, zero)
                        };
                        let rx = positive(self, x);
                        let rw = positive(self, w);
                        let lo = self.float_const(-LITP_Y_LIMIT);
                        let hi = self.float_const(LITP_Y_LIMIT);
                        let below = self.b.ins().fcmp(FloatCC::LessThan, y, lo);
                        let clamped = self.select_float(below, lo, y);
                        let above = self.b.ins().fcmp(FloatCC::GreaterThan, clamped, hi);
                        let ry = self.select_float(above, hi, clamped);
                        let values = [rx, ry, zero, rw];
                        for (lane, slot) in out.iter_mut().enumerate() {
                            if mask.lane(lane) {
                                *slot = Some(values[lane]);
                            }
                        }
                        let fx = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, x, zero);
                        let fw = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, w, zero);
                        self.assign(self.cmp[0], fx);
                        self.assign(self.cmp[1], fw);
                    }
                }
                self.write(dst, out);
            }
            Operation::Mova { a, .. } => {
                // Both lanes read the source (relative to the old a0) before either is set.
                let mut values = [None; 2];
                for (lane, value) in values.iter_mut().enumerate() {
                    if d.dest_mask().lane(lane) {
                        let x = self.source(a, d, lane);
                        *value = Some(self.b.ins().fcvt_to_sint_sat(I32X4, x));
                    }
                }
                for (var, value) in self.a0.into_iter().zip(values) {
                    if let Some(value) = value {
                        self.assign(var, value);
                    }
                }
            }
            Operation::Cmp {
                a, b, cmp_x, cmp_y, ..
            } => {
                for (lane, op) in [(0usize, cmp_x), (1, cmp_y)] {
                    let flag = match crate::compare_cc(op) {
                        Some(cc) => {
                            let x = self.source(a, d, lane);
                            let y = self.source(b, d, lane);
                            self.b.ins().fcmp(cc, x, y)
                        }
                        None => self.bits_const(u32::MAX),
                    };
                    self.assign(self.cmp[lane], flag);
                }
            }
            Operation::Mad { dst, a, b, c, .. } => {
                let mask = d.dest_mask();
                let mut out = [None; 4];
                for (lane, slot) in out.iter_mut().enumerate() {
                    if !mask.lane(lane) {
                        continue;
                    }
                    let x = self.source(a, d, lane);
                    let y = self.source(b, d, lane);
                    let z = self.source(c, d, lane);
                    let (x, y, z) = (self.flushed(x), self.flushed(y), self.flushed(z));
                    *slot = Some(self.arith(|e, fin| lanes::mad_by(e, fin, x, y, z, p)));
                }
                self.write(dst, out);
            }
        }
    }
}

/// The float24 rules on f32x4 values holding one component of four vertices.
impl Elements for Emitter<'_, '_> {
    type Float = Value;
    type Bits = Value;
    type Mask = Value;

    vector_ir_elements!();

    fn bits_of(&mut self, v: Value) -> Value {
        self.as_int(v)
    }
    fn float_of(&mut self, v: Value) -> Value {
        self.as_float(v)
    }
    fn splat_bits(&mut self, bits: u32) -> Value {
        self.bits_const(bits)
    }
    fn exp2_each(&mut self, a: Value) -> Value {
        crate::wide::exp2_f32x4(&mut self.b, a)
    }
    fn log2_each(&mut self, a: Value) -> Value {
        crate::wide::log2_f32x4(&mut self.b, a)
    }
    fn flushed_already(&mut self, v: Value) -> Option<Value> {
        if self.flushed.contains(&v) {
            return Some(v);
        }
        if self.known.get(&v) == Some(&KnownFactor::Zero) {
            // A uniform the multiply reads as zero: -0 and values below 2^-62 flush to +0.
            return Some(self.float_const(0.0));
        }
        if let Some(&r) = self.flush_memo.get(&v) {
            return Some(r);
        }
        let &(address, comp, negated) = self.uniform_origin.get(&v)?;
        if matches!(address, UniformAddress::Lanes(_)) {
            // A second gather costs more than flushing the gathered values.
            return None;
        }
        let table = if negated { NEGATED_FLUSHED } else { FLUSHED };
        let r = self.load_uniform(table, address, comp);
        self.flushed.insert(r);
        self.flush_memo.insert(v, r);
        Some(r)
    }
    fn note_flushed(&mut self, v: Value) {
        self.flushed.insert(v);
    }
    fn known_factor(&mut self, v: Value) -> Option<KnownFactor> {
        self.known.get(&v).copied()
    }
    fn is_rounded(&mut self, v: Value) -> bool {
        self.rounded.contains(&v)
    }
    fn note_rounded(&mut self, v: Value) {
        self.rounded.insert(v);
    }
}

/// The flow tests on the flags of four vertices: a truth value is an i32x4 mask.
struct MaskOps<'x, 'a, 'b>(&'x mut Emitter<'a, 'b>);

impl FlowOps for MaskOps<'_, '_, '_> {
    type Bit = Value;
    type Int = Value;

    fn constant(&mut self, value: bool) -> Value {
        self.0.bits_const(if value { u32::MAX } else { 0 })
    }
    fn not(&mut self, a: Value) -> Value {
        self.0.b.ins().bnot(a)
    }
    fn and(&mut self, a: Value, b: Value) -> Value {
        self.0.b.ins().band(a, b)
    }
    fn or(&mut self, a: Value, b: Value) -> Value {
        self.0.b.ins().bor(a, b)
    }
    fn cmp_flag(&mut self, lane: usize) -> Value {
        self.0.b.use_var(self.0.cmp[lane % 2])
    }
    fn bool_uniform(&mut self, id: u8) -> Value {
        let set = self.0.s.bools & (1 << (id % 16)) != 0;
        self.constant(set)
    }
    fn int_uniform(&mut self, id: u8, byte: usize) -> Value {
        let value = self.0.s.ints[id as usize % 4][byte % 4];
        self.0.bits_const(value as u32)
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.0.b.ins().iadd(a, b)
    }
    fn select(&mut self, condition: Value, a: Value, b: Value) -> Value {
        self.0.b.ins().bitselect(condition, a, b)
    }
}

/// The relative-addressing rule on four vertices' offsets (i32x4; a truth value is a mask).
struct VectorIndex<'x, 'a, 'b>(&'x mut Emitter<'a, 'b>);

impl IndexOps for VectorIndex<'_, '_, '_> {
    type Int = Value;
    type Bit = Value;

    fn int(&mut self, value: i32) -> Value {
        self.0.bits_const(value as u32)
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.0.b.ins().iadd(a, b)
    }
    fn and(&mut self, a: Value, mask: i32) -> Value {
        let mask = self.0.bits_const(mask as u32);
        self.0.b.ins().band(a, mask)
    }
    fn within(&mut self, a: Value, low: i32, high: i32) -> Value {
        let low_v = self.0.bits_const(low as u32);
        let high_v = self.0.bits_const(high as u32);
        let not_below = self
            .0
            .b
            .ins()
            .icmp(IntCC::SignedGreaterThanOrEqual, a, low_v);
        let not_above = self.0.b.ins().icmp(IntCC::SignedLessThanOrEqual, a, high_v);
        self.0.b.ins().band(not_below, not_above)
    }
    fn select(&mut self, condition: Value, a: Value, b: Value) -> Value {
        self.0.b.ins().bitselect(condition, a, b)
    }
}

/// How the structure-of-arrays kernel finishes its arithmetic (see `Emitter::arith`).
enum SoaFinish {
    Exact(Exactly),
    FlagNaNs(FlaggingNan<Value>),
    FlagUnusual(Flagging<Value>),
}

impl<'a, 'b> Finish<Emitter<'a, 'b>> for SoaFinish {
    fn round(&mut self, l: &mut Emitter<'a, 'b>, v: Value, p: Precision) -> Value {
        match self {
            SoaFinish::Exact(exact) => exact.round(l, v, p),
            SoaFinish::FlagNaNs(fast) => fast.round(l, v, p),
            SoaFinish::FlagUnusual(fast) => fast.round(l, v, p),
        }
    }
    fn product(&mut self, l: &mut Emitter<'a, 'b>, a: Value, b: Value) -> Value {
        match self {
            SoaFinish::Exact(exact) => exact.product(l, a, b),
            SoaFinish::FlagNaNs(fast) => fast.product(l, a, b),
            SoaFinish::FlagUnusual(fast) => fast.product(l, a, b),
        }
    }
    fn flags_nan_results(&self) -> bool {
        match self {
            SoaFinish::Exact(exact) => Finish::<Emitter<'a, 'b>>::flags_nan_results(exact),
            SoaFinish::FlagNaNs(fast) => Finish::<Emitter<'a, 'b>>::flags_nan_results(fast),
            SoaFinish::FlagUnusual(fast) => Finish::<Emitter<'a, 'b>>::flags_nan_results(fast),
        }
    }
    fn poison(&mut self, l: &mut Emitter<'a, 'b>, nan: Value, v: Value) -> Value {
        match self {
            SoaFinish::Exact(exact) => exact.poison(l, nan, v),
            SoaFinish::FlagNaNs(fast) => fast.poison(l, nan, v),
            SoaFinish::FlagUnusual(fast) => fast.poison(l, nan, v),
        }
    }
}
