//! The control-flow stack machine of `semantics.md` section 5, literally.
//!
//! Three ring-buffer stacks (IF 8 deep, CALL 4, LOOP 4) overwrite their oldest entry on
//! overflow. After each instruction [`FlowStacks::after_instruction`] resolves the next PC: the
//! CALL stack pops while its top ends at the next PC (the fourth pop in one step does not update
//! the PC), then the IF stack pops at most once, then the LOOP stack at most once; the last stack
//! update wins, and a jump is taken only when no stack popped.

use crate::isa::PROGRAM_WORDS;

/// A fixed-capacity stack that drops its oldest entry when pushed while full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingStack<T: Copy + Default, const N: usize> {
    entries: [T; N],
    len: usize,
}

impl<T: Copy + Default, const N: usize> Default for RingStack<T, N> {
    fn default() -> Self {
        RingStack {
            entries: [T::default(); N],
            len: 0,
        }
    }
}

impl<T: Copy + Default, const N: usize> RingStack<T, N> {
    /// Pushes `entry`, discarding the oldest entry when the stack is full.
    pub fn push(&mut self, entry: T) {
        if self.len == N {
            self.entries.copy_within(1.., 0);
            self.len -= 1;
        }
        self.entries[self.len] = entry;
        self.len += 1;
    }

    /// The newest entry.
    pub fn top(&self) -> Option<&T> {
        self.len.checked_sub(1).map(|i| &self.entries[i])
    }

    /// The newest entry, mutably.
    pub fn top_mut(&mut self) -> Option<&mut T> {
        self.len.checked_sub(1).map(|i| &mut self.entries[i])
    }

    /// Removes the newest entry.
    pub fn pop(&mut self) -> Option<T> {
        let top = *self.top()?;
        self.len -= 1;
        Some(top)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the stack is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[T] {
        &self.entries[..self.len]
    }
}

/// A program address: 12 bits, so every address computation wraps at 4096.
pub fn wrap(address: u32) -> u16 {
    (address % PROGRAM_WORDS as u32) as u16
}

/// An IF scope: when the PC after an instruction would be `else_addr`, jump to `end`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IfScope {
    /// DST: the first instruction of the else block.
    pub else_addr: u16,
    /// DST + NUM: the first instruction after the else block.
    pub end: u16,
}

/// A CALL scope: when the PC after an instruction would be `end`, return to `ret`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallScope {
    /// DST + NUM.
    pub end: u16,
    /// The address after the CALL.
    pub ret: u16,
}

/// A LOOP scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoopScope {
    /// The first body instruction (the address after LOOP).
    pub entry: u16,
    /// DST + 1: the address after the last body instruction.
    pub end: u16,
    /// Passes left after the current one (starts at i.x).
    pub remaining: u8,
    /// aL += increment after each pass (i.z, unsigned).
    pub increment: u8,
    /// aL before the LOOP started, restored when this loop ends inside another loop.
    pub previous_al: i32,
}

/// The three stacks of one invocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowStacks {
    /// IF stack, 8 deep.
    pub ifs: RingStack<IfScope, 8>,
    /// CALL stack, 4 deep.
    pub calls: RingStack<CallScope, 4>,
    /// LOOP stack, 4 deep.
    pub loops: RingStack<LoopScope, 4>,
}

/// What an instruction asked of the control flow, besides its own stack pushes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepRequest {
    /// A taken jump (JMPC/JMPU, a false IF going to its else block, a taken CALL).
    pub jump: Option<u16>,
    /// A BREAK or taken BREAKC (the caller has checked the loop stack is not empty).
    pub is_break: bool,
}

impl FlowStacks {
    /// Resolves the PC after the instruction at `old_pc`, popping the stacks as the hardware
    /// does and updating `al` when a loop pass ends.
    pub fn after_instruction(&mut self, old_pc: u16, request: StepRequest, al: &mut i32) -> u16 {
        let next = wrap(old_pc as u32 + 1);
        // A stack that pops always sets the PC, so `update` is Some exactly when one popped.
        let mut update = None;

        let mut call_next = next;
        for pops in 0..4 {
            match self.calls.top() {
                Some(scope) if scope.end == call_next => {
                    if pops < 3 {
                        update = Some(scope.ret);
                        call_next = scope.ret;
                    }
                    self.calls.pop();
                }
                _ => break,
            }
        }

        if let Some(scope) = self.ifs.top()
            && scope.else_addr == next
        {
            update = Some(scope.end);
            self.ifs.pop();
        }

        let depth = self.loops.len();
        if let Some(scope) = self.loops.top_mut()
            && (scope.end == next || request.is_break)
        {
            *al = al.wrapping_add(scope.increment as i32);
            if !request.is_break && scope.remaining != 0 {
                scope.remaining -= 1;
                update = Some(scope.entry);
            } else {
                update = Some(scope.end);
                let previous_al = scope.previous_al;
                self.loops.pop();
                if depth > 1 {
                    *al = previous_al;
                }
            }
        }

        update.or(request.jump).unwrap_or(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_stack_drops_the_oldest_entry() {
        let mut stack = RingStack::<u16, 4>::default();
        for n in 1..=6 {
            stack.push(n);
        }
        assert_eq!(stack.entries(), &[3, 4, 5, 6]);
        assert_eq!(stack.pop(), Some(6));
        assert_eq!(stack.len(), 3);
    }

    #[test]
    fn jump_is_not_taken_when_a_scope_ends() {
        let mut stacks = FlowStacks::default();
        stacks.ifs.push(IfScope {
            else_addr: 11,
            end: 20,
        });
        let mut al = 0;
        let pc = stacks.after_instruction(
            10,
            StepRequest {
                jump: Some(100),
                is_break: false,
            },
            &mut al,
        );
        assert_eq!(pc, 20);
        assert!(stacks.ifs.is_empty());
    }

    #[test]
    fn fourth_call_pop_does_not_update_the_pc() {
        // Four nested calls that all end where the previous one returns.
        let mut stacks = FlowStacks::default();
        stacks.calls.push(CallScope { end: 40, ret: 50 });
        stacks.calls.push(CallScope { end: 30, ret: 40 });
        stacks.calls.push(CallScope { end: 20, ret: 30 });
        stacks.calls.push(CallScope { end: 11, ret: 20 });
        let mut al = 0;
        let pc = stacks.after_instruction(10, StepRequest::default(), &mut al);
        assert!(stacks.calls.is_empty());
        assert_eq!(pc, 40, "the third return address wins");
    }

    #[test]
    fn loop_priority_over_if_and_al_restore() {
        let mut stacks = FlowStacks::default();
        stacks.loops.push(LoopScope {
            entry: 1,
            end: 9,
            remaining: 0,
            increment: 1,
            previous_al: 0,
        });
        stacks.loops.push(LoopScope {
            entry: 5,
            end: 9,
            remaining: 0,
            increment: 2,
            previous_al: 7,
        });
        stacks.ifs.push(IfScope {
            else_addr: 9,
            end: 30,
        });
        let mut al = 3;
        let pc = stacks.after_instruction(8, StepRequest::default(), &mut al);
        assert_eq!(pc, 9, "the inner loop ends; LOOP beats IF");
        assert_eq!(al, 7, "aL is restored because an outer loop remains");
        assert_eq!(stacks.loops.len(), 1, "one LOOP pop per instruction");
        assert!(stacks.ifs.is_empty());
    }
}
