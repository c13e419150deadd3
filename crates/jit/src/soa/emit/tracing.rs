//! Tracing the control flow at compile time: the flow graph of the draw's bool and int
//! uniforms, its straight segments, and the regions where vertices may diverge.

use super::regions::MaskOps;
use super::*;

impl Emitter<'_, '_> {
    pub(super) fn trace_all(&mut self) -> Result<(), SoaCompileError> {
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
    pub(super) fn state_block(&mut self, key: FlowKey) -> Block {
        if let Some(&block) = self.memo.get(&key) {
            return block;
        }
        let block = self.b.create_block();
        self.memo.insert(key.clone(), block);
        self.work.push((key, block));
        block
    }

    /// A block that goes to `next`.
    pub(super) fn target(&mut self, next: Next) -> Block {
        match next {
            Next::State(key) => self.state_block(key),
            Next::End => self.end_block,
            Next::Decline => self.decline_block(),
        }
    }

    pub(super) fn decline_block(&mut self) -> Block {
        if let Some(block) = self.decline {
            return block;
        }
        let block = self.b.create_block();
        self.b.set_cold_block(block);
        self.decline = Some(block);
        block
    }

    /// Fills the decline block, where [`Self::target`] handed one out.
    pub(super) fn fill_exits(&mut self) {
        if let Some(block) = self.decline {
            self.switch_to(block);
            let all = self
                .b
                .ins()
                .iconst(types::I32, i64::from(crate::soa::DECLINED_GROUP));
            self.b.ins().jump(self.latch, &[all.into()]);
        }
    }

    /// Ends a segment of `pending` instructions: the flags go to their variable, and the step
    /// count is either known (`static_steps`) or counted at run time and checked against the
    /// budget. In a masked region the count is that of every state some vertex ran, at least
    /// each vertex's own: a group it puts over the budget is declined, and the per-vertex path
    /// decides exactly.
    pub(super) fn close_segment(&mut self, static_steps: Option<u64>, pending: u64) {
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
    pub(super) fn advance(
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
    pub(super) fn outcomes(
        &self,
        inst: &Instruction,
        known: [Option<bool>; 2],
    ) -> Vec<([bool; 2], bool)> {
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
    pub(super) fn explore(
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
    pub(super) fn segment(
        &mut self,
        key: &FlowKey,
        cap: usize,
    ) -> Result<Rc<Segment>, SoaCompileError> {
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

    pub(super) fn emit_steps(&mut self, segment: &Segment) {
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
    pub(super) fn branch_mask(&mut self, cond: Condition, sets_al: [Option<i32>; 2]) -> Value {
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
    pub(super) fn trace_segment(
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
}
