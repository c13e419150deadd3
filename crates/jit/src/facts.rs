//! What the two JITs know about an IR value while they generate code, stated once for both:
//! the scalar JIT keeps one [`ValueFacts`] per run (`scalar::lower::RegisterCache`), the SoA
//! JIT one per function (`soa::emit::Emitter`). They answer the float24 rules' questions
//! ([`shader::float24::lanes::Elements`]: `flushed_already`, `is_rounded`, `known_bounded`,
//! `known_factor`) and keep the constants made.
//!
//! Two kinds of entry: facts of a value, true wherever the value is used (the flush or the
//! rounding leaves it unchanged, it lies within the checked bounds, it is 0 or 1 in every
//! element); and values made in one block (a flushed copy, a constant), which only code that
//! block dominates may use, so they are forgotten where such code ends
//! ([`ValueFacts::forget_made`]).

use std::collections::{HashMap, HashSet};

use cranelift_codegen::ir::Value;
use shader::float24::lanes::KnownFactor;

/// What the JITs know about their IR values (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct ValueFacts {
    /// Values the input flush leaves unchanged (results of a flush or a rounding, constants
    /// that are float24 values, and what only moves or merges them).
    pub unchanged_by_flush: HashSet<Value>,
    /// The flushed copy of each other value flushed so far (made in this block).
    pub flushed_copies: HashMap<Value, Value>,
    /// Values the rounding leaves unchanged (results of a rounding; +0 and +1).
    pub rounded: HashSet<Value>,
    /// Values within the bounds an operand check checks (checked already, or constants
    /// within them).
    pub bounded: HashSet<Value>,
    /// Values known to be 0 or +1 in every element (constants, specialised uniforms).
    pub known: HashMap<Value, KnownFactor>,
    /// The vector constants made so far, by their lanes' bits (made in this block).
    pub constants: HashMap<[u32; 4], Value>,
}

impl ValueFacts {
    /// The input flush of `v` when it is known: `v` itself when the flush leaves it
    /// unchanged, or its flushed copy.
    pub fn flushed(&self, v: Value) -> Option<Value> {
        if self.unchanged_by_flush.contains(&v) {
            return Some(v);
        }
        self.flushed_copies.get(&v).copied()
    }

    /// `flushed` is the input flush of `v` (and so is unchanged by it).
    pub fn note_flush(&mut self, v: Value, flushed: Value) {
        self.flushed_copies.insert(v, flushed);
        self.unchanged_by_flush.insert(flushed);
    }

    /// Forgets the values made in a block (flushed copies, constants) where the code that
    /// follows is not dominated by it.
    pub fn forget_made(&mut self) {
        self.flushed_copies.clear();
        self.constants.clear();
    }

    /// Forgets everything (keeping the tables' room).
    pub fn clear(&mut self) {
        self.unchanged_by_flush.clear();
        self.flushed_copies.clear();
        self.rounded.clear();
        self.bounded.clear();
        self.known.clear();
        self.constants.clear();
    }
}
