//! The control part of executing an instruction: the interpreter's driver of the shared machine.
//!
//! [`FlowDriver`] runs the shared machine [`crate::flow::step`] concretely: it evaluates each
//! flow instruction's test from the condition flags and bool uniforms, keeps the loop counters
//! beside the machine's loop stack, and applies every aL update (LOOP start, each pass, the
//! restore when an inner loop exits).

use crate::flow::{self, Choices, FlowState, LOOP_DEPTH, LoopPass, RingStack, Step};
use crate::isa::{BoolFlowOp, CondFlowOp, Instruction};

use super::ExecError;

/// The counters of one LOOP scope. They are data, like the condition flags, so the shared
/// machine's [`FlowState`] does not hold them: they live on a stack of the same depth and ring
/// behaviour as [`FlowState::loops`], pushed by every LOOP together with the machine's scope and
/// popped when [`flow::step`] reports [`LoopPass::Exit`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LoopCounter {
    /// Passes left after the current one (starts at i.x).
    remaining: u8,
    /// aL += increment after each pass (i.z, unsigned).
    increment: u8,
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

/// The control-flow state of one invocation.
#[derive(Clone, Debug)]
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

    /// Applies the control part of `inst` (the instruction at [`pc`](Self::pc), whose data part
    /// has executed) and moves to the next address. `Ok(false)` means END.
    pub fn advance(
        &mut self,
        inst: &Instruction,
        inputs: FlowInputs,
        al: &mut i32,
    ) -> Result<bool, ExecError> {
        let pc = self.state.pc;
        let condition = match *inst {
            Instruction::CondFlow { op, cond, .. } => {
                op == CondFlowOp::Call || cond.eval(inputs.cmp)
            }
            Instruction::BoolFlow {
                op, bool_id, count, ..
            } => {
                let value = inputs.bools & (1 << bool_id) != 0;
                // JMPU jumps when the bool is false if bit 0 of NUM is set.
                let inverted = op == BoolFlowOp::Jmpu && count & 1 != 0;
                value != inverted
            }
            Instruction::Loop { int_id, .. } => {
                let [count, start, increment, _] = inputs.ints[int_id as usize];
                self.counters.push(LoopCounter {
                    remaining: count,
                    increment,
                    previous_al: *al,
                });
                *al = start as i32;
                false
            }
            _ => false,
        };
        // The loop whose body may end here is the innermost one, after this instruction's own
        // push (a LOOP whose DST is its own address ends at once).
        let loop_again = self.counters.top().is_some_and(|c| c.remaining != 0);
        match flow::step(
            &self.state,
            inst,
            Choices {
                condition,
                loop_again,
            },
        ) {
            Step::End => Ok(false),
            Step::BreakOutsideLoop => Err(ExecError::BreakOutsideLoop { pc }),
            Step::Continue {
                state, loop_pass, ..
            } => {
                self.state = state;
                if let Some(pass) = loop_pass {
                    self.end_pass(pass, al);
                }
                debug_assert_eq!(self.counters.len(), self.state.loops.len());
                Ok(true)
            }
        }
    }

    /// A loop pass ended: aL steps, then the innermost counter counts down, or the loop is left
    /// and, when another loop remains, aL returns to its value before the exited LOOP.
    fn end_pass(&mut self, pass: LoopPass, al: &mut i32) {
        let Some(counter) = self.counters.top_mut() else {
            unreachable!("a loop pass ended with no loop counter");
        };
        *al = al.wrapping_add(counter.increment as i32);
        match pass {
            LoopPass::Again => counter.remaining -= 1,
            LoopPass::Exit { outer_remains } => {
                let previous_al = counter.previous_al;
                self.counters.pop();
                if outer_remains {
                    *al = previous_al;
                }
            }
        }
    }
}
