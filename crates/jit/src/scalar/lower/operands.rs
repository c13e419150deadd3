//! Operands: descriptors, reads of every register file (swizzle, negation, relative addressing,
//! the ones above uniform 95, a side of a partial write), and masked writes.

use super::*;

impl Lowering<'_, '_> {
    pub(super) fn descriptor(&self, index: u8) -> OperandDescriptor {
        OperandDescriptor(self.program.opdescs[index as usize])
    }

    /// Where the components `lanes` of `raw` (bit c: component c) come from when `raw` is a
    /// partial write's result and they all come from one side of it (the value written, or the
    /// value before): that side, so that the instruction does not wait for the merge. Its other
    /// lanes are what the written instruction computed there, which only lanes the reader
    /// discards see (a whole invocation's fast form checks them too: a value past its bounds
    /// there runs the invocation again, as any flag does). Repeating a needed lane in them
    /// instead cost a shuffle where the swizzle was none (billboard, palette-skinning and
    /// point-sprite-gs 3-5% slower).
    pub(super) fn unmerged(&self, raw: Value, lanes: u8) -> Option<Value> {
        if lanes == 0 {
            return None;
        }
        let mut source = raw;
        while let Some(&(old, written_value, written)) = self.cache.merged.get(&source) {
            source = if lanes & written == lanes {
                written_value
            } else if lanes & written == 0 {
                old
            } else {
                break;
            };
        }
        (source != raw).then_some(source)
    }

    /// Reads a source: register (relative addressing for uniforms), swizzle, negate, for an
    /// instruction that treats a zero's sign as `source.zero_sign` says. A register's −0 left pending
    /// by the fast path ([`Lowering::settled`]) is taken as it is where the sign is
    /// [`ZeroSign::Ignored`] (and in the float24 modes a negation of a flushed value then
    /// counts as flushed: its zero is −0 where the model's is +0, or the reverse) or
    /// [`ZeroSign::PassedOn`] without a negation (the swizzled value's lanes are recorded as
    /// possibly −0); otherwise it is settled first.
    ///
    /// `source.needed`: the lanes of the swizzled operand the instruction uses (bit `i`: lane `i`).
    /// When all of them come from one side of a partial write, the operand is read from that
    /// side ([`Lowering::unmerged`]), its other lanes then being whatever that side holds.
    pub(super) fn read(&mut self, source: &Source) -> Value {
        let Source {
            register,
            swizzle,
            negate,
            needed,
            zero_sign,
            ..
        } = *source;
        let raw = match register {
            SourceRegister::Input(n) => self.input(n),
            SourceRegister::Temporary(n) => self.get(Reg::Temp(n)),
            SourceRegister::Uniform { base: n, rel } => {
                let uniform = self.read_uniform(n, rel);
                // A whole invocation's fast form runs only with uniforms within the operand
                // bounds (`JitShader::execute`): within them, and so unchanged by the flush
                // up to the sign of a zero.
                if self.fast_invocation {
                    self.cache.facts.bounded.insert(uniform);
                    self.note_flushed(uniform);
                }
                uniform
            }
        };
        let components = source.components();
        let raw = self
            .unmerged(raw, swizzle.components_read(needed))
            .unwrap_or(raw);
        // Moving lanes and negating keep magnitudes: within the operand bounds if `raw` is.
        let bounded = self.cache.facts.bounded.contains(&raw);
        let raw_wild = self.wild_lanes(raw);
        let raw = match zero_sign {
            ZeroSign::Ignored => raw,
            ZeroSign::PassedOn if !negate => raw,
            _ => self.settled(raw),
        };
        let value = self.permute(raw, components);
        let wild = (0..8)
            .filter(|&bit| raw_wild & (1 << (bit & 4 | components[bit & 3])) != 0)
            .map(|bit| 1u8 << bit)
            .sum();
        self.note_wild(value, wild);
        if zero_sign == ZeroSign::PassedOn && !negate {
            let pending = self.negative_zero_lanes(raw);
            let swizzled = (0..4)
                .filter(|&lane| pending & (1 << components[lane]) != 0)
                .map(|lane| 1u8 << lane)
                .sum();
            self.note_negative_zeros(value, swizzled);
        }
        // A swizzle of canonical lanes is canonical.
        let canonical_lanes = match register {
            SourceRegister::Temporary(n) => self.facts.canonical_temps[n as usize],
            _ => 0,
        };
        let flushed =
            components.iter().all(|&c| canonical_lanes & (1 << c) != 0) || self.is_flushed(raw);
        if bounded {
            self.cache.facts.bounded.insert(value);
        }
        if negate {
            let negated = self.b.ins().fneg(value);
            // A negation makes −0 of +0: flushed only up to the sign of a zero.
            if zero_sign == ZeroSign::Ignored && flushed && self.precision.is_f24() {
                self.note_flushed(negated);
            }
            if bounded {
                self.cache.facts.bounded.insert(negated);
            }
            self.note_wild(negated, wild);
            return negated;
        }
        if flushed {
            self.note_flushed(value);
        }
        value
    }

    /// Input register `n`, loaded once per run: every read of it is then one value, so that
    /// what the lowering knows of it (checked, flushed) holds for all its reads, and a
    /// dot-product group whose members share it broadcasts its lanes instead of transposing
    /// copies of it.
    pub(super) fn input(&mut self, n: u8) -> Value {
        if let Some(&v) = self.cache.inputs.get(&n) {
            return v;
        }
        let inputs = self.inputs;
        let v = self
            .b
            .ins()
            .load(F32X4, caller_floats(), inputs, 16 * i32::from(n));
        self.cache.inputs.insert(n, v);
        v
    }

    /// c[n + offset]: the slot is [`relative_uniform_slot`], emitted as code; a slot past c95
    /// reads (1, 1, 1, 1), so the load reads the slot clamped to c95 and the ones are selected
    /// after it: no bounds check to get wrong.
    pub(super) fn read_uniform(&mut self, n: u8, rel: RelIndex) -> Value {
        let uniforms = self.uniforms;
        let offset = match rel {
            RelIndex::None => {
                if let Some(&v) = self.cache.uniforms.get(&n) {
                    return v;
                }
                let v = self
                    .b
                    .ins()
                    .load(F32X4, caller_floats(), uniforms, 16 * i32::from(n));
                self.cache.uniforms.insert(n, v);
                return v;
            }
            RelIndex::A0X => self.get(Reg::A0(0)),
            RelIndex::A0Y => self.get(Reg::A0(1)),
            RelIndex::AL => self.get(Reg::Al),
        };
        let slot = relative_uniform_slot(&mut IndexIr(self), n, offset);
        let last = self.b.ins().iconst(types::I32, FLOAT_UNIFORMS as i64 - 1);
        let clamped = self.b.ins().umin(slot, last);
        let clamped = self.b.ins().uextend(types::I64, clamped);
        let scaled = self.b.ins().ishl_imm_s(clamped, 4);
        let address = self.b.ins().iadd(uniforms, scaled);
        let value = self.b.ins().load(F32X4, caller_floats(), address, 0);
        let past_end = self.b.ins().icmp(IntCC::UnsignedGreaterThan, slot, last);
        let ones = self.f32x4_const([1.0; 4]);
        self.b.ins().select(past_end, ones, value)
    }

    /// Writes the lanes of `value` that `mask` enables.
    pub(super) fn write_lanes(&mut self, dst: DstReg, mask: DestMask, value: Value) {
        let reg = match dst.file_index() {
            (RegisterFile::Temporary, n) => Reg::Temp(n),
            (_, n) => Reg::Output(n),
        };
        if mask.0 == 0 {
            return;
        }
        let merged = if mask.0 == 0xF {
            value
        } else {
            let old = self.get(reg);
            let lanes = std::array::from_fn(|lane| if mask.lane(lane) { u32::MAX } else { 0 });
            let select = self.i32x4_const(lanes);
            let merged = self.select_vec(select, value, old);
            let written = mask.lanes();
            let negative_zeros = (self.negative_zero_lanes(value) & written)
                | (self.negative_zero_lanes(old) & !written);
            self.note_negative_zeros(merged, negative_zeros);
            self.cache.merged.insert(merged, (old, value, written));
            let written = written | written << 4;
            let wild = (self.wild_lanes(value) & written) | (self.wild_lanes(old) & !written);
            self.note_wild(merged, wild);
            merged
        };
        self.set(reg, merged);
    }
}

/// The relative-addressing rule emitted as code (`i32` values; a truth value is an `icmp`).
pub(super) struct IndexIr<'x, 'a, 'b>(&'x mut Lowering<'a, 'b>);

impl IndexOps for IndexIr<'_, '_, '_> {
    type Int = Value;
    type Bit = Value;

    fn int(&mut self, value: i32) -> Value {
        self.0.b.ins().iconst(types::I32, value as i64)
    }
    fn add(&mut self, a: Value, b: Value) -> Value {
        self.0.b.ins().iadd(a, b)
    }
    fn and(&mut self, a: Value, mask: i32) -> Value {
        self.0.b.ins().band_imm_s(a, mask as i64)
    }
    fn within(&mut self, a: Value, low: i32, high: i32) -> Value {
        // One unsigned comparison: a - low <= high - low.
        let shifted = self.0.b.ins().iadd_imm_s(a, -(low as i64));
        self.0.b.ins().icmp_imm_s(
            IntCC::UnsignedLessThanOrEqual,
            shifted,
            (high as i64) - (low as i64),
        )
    }
    fn select(&mut self, condition: Value, a: Value, b: Value) -> Value {
        self.0.b.ins().select(condition, a, b)
    }
}
