//! Operands on four vertices: component planes, uniforms (known lanes, relative addressing),
//! negation and flushes, and masked writes.

use super::*;

impl Emitter<'_, '_> {
    /// A uniform component: `c[base]` offset by `rel`, component `comp`, maybe negated.
    pub(super) fn uniform(&mut self, base: u8, rel: RelIndex, comp: usize, negate: bool) -> Value {
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
                    self.facts.known.insert(value, KnownFactor::Zero);
                }
                Some(KnownFactor::One) if !negate => {
                    // Exactly +1.0: the flush and the rounding keep it.
                    self.facts.known.insert(value, KnownFactor::One);
                    self.facts.unchanged_by_flush.insert(value);
                    self.facts.rounded.insert(value);
                }
                _ => {}
            }
        }
        value
    }

    pub(super) fn load_uniform(
        &mut self,
        table: usize,
        address: UniformAddress,
        comp: usize,
    ) -> Value {
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

    /// Lane `lane` of `source` (after swizzle and negate).
    pub(super) fn source(&mut self, source: &Source, lane: usize) -> Value {
        let comp = source.component(lane);
        let negate = source.negate;
        let raw = match source.register {
            SourceRegister::Input(n) => {
                self.inputs[n as usize % 16][comp].expect("inputs are loaded at the group's start")
            }
            SourceRegister::Temporary(n) => self.b.use_var(self.temp[n as usize % 16][comp]),
            SourceRegister::Uniform { base, rel } => return self.uniform(base, rel, comp, negate),
        };
        if negate { self.b.ins().fneg(raw) } else { raw }
    }

    /// The input flush of `v`, computed once per block.
    pub(super) fn flushed(&mut self, v: Value) -> Value {
        if !self.precision.is_f24() {
            return v;
        }
        let r = lanes::flush(self, v, self.precision);
        self.facts.flushed_copies.insert(v, r);
        r
    }

    pub(super) fn write(&mut self, dst: DstReg, values: [Option<Value>; 4]) {
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
    pub(super) fn assign(&mut self, var: Variable, value: Value) {
        let Some(mask) = self.lane_mask else {
            self.b.def_var(var, value);
            return;
        };
        let old = self.b.use_var(var);
        let merged = if self.b.func.dfg.value_type(value) == F32X4 {
            let merged = self.select_float(mask, value, old);
            if self.facts.unchanged_by_flush.contains(&value)
                && self.facts.unchanged_by_flush.contains(&old)
            {
                self.facts.unchanged_by_flush.insert(merged);
            }
            merged
        } else {
            self.b.ins().bitselect(mask, value, old)
        };
        self.b.def_var(var, merged);
    }
}

/// The relative-addressing rule on four vertices' offsets (i32x4; a truth value is a mask).
pub(super) struct VectorIndex<'x, 'a, 'b>(pub(super) &'x mut Emitter<'a, 'b>);

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
