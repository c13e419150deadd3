//! The control flow of one invocation, run concretely: the interpreter's driver of the shared
//! machine.
//!
//! [`FlowDriver`] runs [`super::step`] on real data (in place): it evaluates each flow instruction's test
//! from the condition flags and bool uniforms and keeps the loop counters beside the machine's
//! loop stack, applying the rules of [`super::rules`] (the same the JIT compiles).

use super::machine::{Stepped, step_in_place};
use super::rules::{self, FlowOps};
use super::{Choices, FlowState, LOOP_DEPTH, LoopPass, RingStack};
use crate::isa::Instruction;

/// The counters of one LOOP scope. They are data, like the condition flags, so the shared
/// machine's [`FlowState`] does not hold them: they live on a stack of the same depth and ring
/// behaviour as [`FlowState::loops`], pushed by every LOOP together with the machine's scope and
/// popped when [`step`] reports [`LoopPass::Exit`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct LoopCounter {
    /// Passes left after the current one (starts at i.x).
    remaining: i32,
    /// aL += increment after each pass (i.z, unsigned).
    increment: i32,
    /// aL before the LOOP started, restored when this loop ends inside another loop.
    previous_al: i32,
}

/// What a flow instruction's test reads.
#[derive(Clone, Copy, Debug)]
pub struct FlowInputs<'a> {
    /// cmp.x and cmp.y.
    pub cmp: [bool; 2],
    /// The bool uniforms as the invocation sees them.
    pub bools: u16,
    /// The int uniforms.
    pub ints: &'a [[u8; 4]; 4],
}

impl FlowOps for FlowInputs<'_> {
    type Bit = bool;
    type Int = i32;

    fn constant(&mut self, value: bool) -> bool {
        value
    }

    fn not(&mut self, a: bool) -> bool {
        !a
    }

    fn and(&mut self, a: bool, b: bool) -> bool {
        a && b
    }

    fn or(&mut self, a: bool, b: bool) -> bool {
        a || b
    }

    fn cmp_flag(&mut self, lane: usize) -> bool {
        self.cmp[lane]
    }

    fn bool_uniform(&mut self, id: u8) -> bool {
        self.bools & (1 << id) != 0
    }

    fn int_uniform(&mut self, id: u8, byte: usize) -> i32 {
        self.ints[id as usize][byte] as i32
    }

    fn add(&mut self, a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }

    fn select(&mut self, condition: bool, a: i32, b: i32) -> i32 {
        if condition { a } else { b }
    }
}

/// How an instruction's control flow ended, when it did not go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// END.
    End,
    /// BREAK or a taken BREAKC with an empty loop stack (the GPU would hang).
    BreakOutsideLoop,
}

/// The control-flow state of one invocation. Two drivers are equal when the rest of the
/// invocation's control flow depends on them alike (the same state and loop counters), so a
/// compiler that runs the driver at compile time can key what it emitted on one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FlowDriver {
    state: FlowState,
    counters: RingStack<LoopCounter, LOOP_DEPTH>,
}

impl FlowDriver {
    /// A fresh invocation starting at `entry`.
    pub fn new(entry: u16) -> FlowDriver {
        FlowDriver {
            state: FlowState::new(entry),
            counters: RingStack::new(),
        }
    }

    /// The address of the next instruction.
    pub fn pc(&self) -> u16 {
        self.state.pc
    }

    /// How many IF, CALL and LOOP scopes are open (each stack's depth, at most its size).
    pub fn depth(&self) -> usize {
        self.state.ifs.len() + self.state.calls.len() + self.state.loops.len()
    }

    /// Whether a loop is running (its counter is on the stack).
    pub fn in_loop(&self) -> bool {
        !self.counters.is_empty()
    }

    /// Moves past `count` instructions at consecutive addresses from [`pc`](Self::pc) whose
    /// control part does nothing: none is a flow instruction, END or BREAK, and no scope can end
    /// at the address after any of them (no address [`super::pushed_scope`] names as an IF's
    /// else, a CALL's end or a LOOP's end, for any instruction that can run). [`advance`]
    /// would move past each of them to the next address without touching the stacks
    /// (docs/execution-model.md §5.3); this does the same at once.
    ///
    /// [`advance`]: Self::advance
    pub fn advance_plain(&mut self, count: u16) {
        self.state.pc = super::wrap(self.state.pc as u32 + count as u32);
    }

    /// Applies the control part of `inst` (the instruction at [`pc`](Self::pc), whose data part
    /// has executed) and moves to the next address, or says why the invocation stops.
    pub fn advance(
        &mut self,
        inst: &Instruction,
        mut inputs: FlowInputs,
        al: &mut i32,
    ) -> Result<(), Stop> {
        let condition = rules::test(&mut inputs, inst).unwrap_or(false);
        if let Instruction::Loop { int_id, .. } = *inst {
            let start = rules::loop_start(&mut inputs, int_id);
            self.counters.push(LoopCounter {
                remaining: start.remaining,
                increment: start.increment,
                previous_al: *al,
            });
            *al = start.al;
        }
        // The loop whose body may end here is the innermost one, after this instruction's own
        // push (a LOOP whose DST is its own address ends at once).
        let loop_again = self.counters.top().is_some_and(|c| c.remaining != 0);
        let choices = Choices {
            condition,
            loop_again,
        };
        match step_in_place(&mut self.state, inst, choices) {
            Stepped::End => Err(Stop::End),
            Stepped::BreakOutsideLoop => Err(Stop::BreakOutsideLoop),
            Stepped::Continue { loop_pass, .. } => {
                if let Some(pass) = loop_pass {
                    self.end_pass(pass, &mut inputs, al);
                }
                debug_assert_eq!(self.counters.len(), self.state.loops.len());
                Ok(())
            }
        }
    }

    /// A loop pass ended: aL steps, then the innermost counter counts down, or the loop is left
    /// and aL follows [`rules::al_after_exit`].
    fn end_pass(&mut self, pass: LoopPass, ops: &mut FlowInputs, al: &mut i32) {
        let Some(counter) = self.counters.top_mut() else {
            unreachable!("a loop pass ended with no loop counter");
        };
        *al = rules::al_after_pass(ops, *al, counter.increment);
        match pass {
            LoopPass::Again => counter.remaining -= 1,
            LoopPass::Exit { outer_remains } => {
                let previous_al = counter.previous_al;
                self.counters.pop();
                *al = rules::al_after_exit(ops, outer_remains, previous_al, *al);
            }
        }
    }
}
