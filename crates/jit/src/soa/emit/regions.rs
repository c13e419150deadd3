//! Masked regions: code that vertices of a group may take apart, run under lane masks that
//! merge where the paths meet, with the flow tests on four vertices' flags.

use super::*;

impl Emitter<'_, '_> {
    /// The flow-state graph from `starts` to the end, explored within the limit.
    pub(super) fn flow_graph(&mut self, starts: [&Next; 2]) -> Option<FlowGraph> {
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
    pub(super) fn plan_region(&mut self, starts: [&Next; 2]) -> Option<RegionPlan> {
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
    pub(super) fn emit_region(&mut self, plan: &RegionPlan, entry: Block, mask: Value) {
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
    pub(super) fn emit_end(&mut self) {
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
}

/// The flow tests on the flags of four vertices: a truth value is an i32x4 mask.
pub(super) struct MaskOps<'x, 'a, 'b>(pub(super) &'x mut Emitter<'a, 'b>);

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
