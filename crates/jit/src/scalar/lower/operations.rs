//! Operations: the dot-product groups, the fast forms and their checks, the binary and unary
//! operations, each instruction's data part, and the float24 rules of [`lanes`] implemented on
//! vector IR values.

use super::*;

impl Lowering<'_, '_> {
    /// The `len` dot products of the group at `pc` ([`DotGroup`]) at once: lane `j` of the
    /// result is the dot product of the member that writes lane `j`, by the rules of
    /// [`lanes::dot_by`] with element `j` of each factor vector that member's operand lane.
    /// So the factors are the members' operands transposed (broadcasts when they share one),
    /// and one lane-wise multiply and sum replaces a multiply, broadcasts and a sum per member.
    pub(super) fn dot_group(&mut self, pc: u16, len: u8) {
        let dots: Vec<DotProduct> = (pc..pc + u16::from(len))
            .map(|member| {
                DotProduct::of(&self.decoded[member as usize])
                    .expect("a dot-product group holds dot products")
            })
            .collect();
        let (op, dst) = (dots[0].op, dots[0].dst);
        let mut operands = Vec::with_capacity(2 * dots.len());
        let mut masks = Vec::with_capacity(dots.len());
        for (dot, member) in dots.into_iter().zip(pc..) {
            let d = self.descriptor(dot.desc);
            let needed = self.decoded[member as usize]
                .operation()
                .expect("a dot product is an operation")
                .source_lanes(d);
            let read_lanes = self
                .lanes_read(op, needed)
                .expect("a dot product has a fast form");
            for (operand, lanes) in [(dot.a, read_lanes[0]), (dot.b, read_lanes[1])] {
                let source = Source::of(operand, d, lanes, ZeroSign::Ignored);
                operands.push((self.read(&source), lanes));
            }
            masks.push(d.dest_mask());
        }
        let form = self.tame(&mut operands);
        let mut first = [None; 4];
        let mut second = [None; 4];
        let mut written = 0u8;
        for (mask, pair) in masks.into_iter().zip(operands.chunks(2)) {
            for lane in (0..4).filter(|&lane| mask.lane(lane)) {
                first[lane] = Some(pair[0].0);
                second[lane] = Some(pair[1].0);
            }
            written |= mask.0;
        }
        let count = if op == BinaryOperation::Dp3 { 3 } else { 4 };
        let p = self.precision;
        // Each form transposes the rows itself: only the rows are live across the fast form
        // into the exact one, not the columns.
        let pairs =
            |l: &mut Self, mut fast: Option<&mut lanes::FlaggingSignedZeros<Value, Value>>| {
                let first = l.transposed(first, fast.as_deref_mut());
                let second = l.transposed(second, fast);
                let mut pairs: Vec<(Value, Value)> =
                    (0..count).map(|i| (first[i], second[i])).collect();
                if op == BinaryOperation::Dph {
                    pairs[3].0 = l.f32x4_const([1.0; 4]);
                }
                pairs
            };
        let r = self.checked(
            form,
            |l, fin| {
                let pairs = pairs(l, Some(&mut *fin));
                lanes::dot_by(l, fin, &pairs, p)
            },
            |l| {
                let pairs = pairs(l, None);
                lanes::dot_by(l, &mut lanes::Exactly, &pairs, p)
            },
        );
        self.write_lanes(dst, DestMask(written), r);
    }

    /// The columns of the 4x4 matrix whose rows are `rows` (column `i` holds lane `i` of each
    /// row; a missing row is any other, its lanes unused): the broadcasts of lanes 0-3 when
    /// every row is the same vector. For a fast form (`fast`, float24 modes) each row is read
    /// once as that finish reads an operand (its flush up to what the finish flags; reading
    /// commutes with moving lanes), so the columns count as read already; otherwise the rule
    /// flushes each column.
    pub(super) fn transposed(
        &mut self,
        rows: [Option<Value>; 4],
        fast: Option<&mut lanes::FlaggingSignedZeros<Value, Value>>,
    ) -> [Value; 4] {
        let any = rows.iter().flatten().copied().next().expect("a row");
        let rows = rows.map(|row| row.unwrap_or(any));
        let p = self.precision;
        let bounded = fast
            .as_ref()
            .is_some_and(|fin| fin.checks() == lanes::Checks::Operands);
        let (rows, flushed) = match fast {
            Some(fin) if p.is_f24() => {
                let mut read = rows;
                for (i, row) in rows.iter().enumerate() {
                    // A row met before is read already.
                    read[i] = match rows[..i].iter().position(|earlier| earlier == row) {
                        Some(j) => read[j],
                        None => lanes::Finish::operand(fin, self, *row, p),
                    };
                }
                (read, true)
            }
            _ => (rows, false),
        };
        if rows.iter().all(|&row| row == rows[0]) {
            let columns = std::array::from_fn(|lane| self.broadcast(rows[0], lane));
            self.note_columns(columns, flushed, bounded);
            return columns;
        }
        // Lanes 0-3 of `x` and 4-7 (that is, 0-3 of `y`) picked into a vector.
        let mut pick = |x: Value, y: Value, lanes: [u8; 4]| {
            let mut mask = [0u8; 16];
            for (i, &lane) in lanes.iter().enumerate() {
                for byte in 0..4 {
                    mask[4 * i + byte] = 4 * lane + byte as u8;
                }
            }
            crate::wide::shuffle(self.b, x, y, mask)
        };
        let low01 = pick(rows[0], rows[1], [0, 4, 1, 5]);
        let low23 = pick(rows[2], rows[3], [0, 4, 1, 5]);
        let high01 = pick(rows[0], rows[1], [2, 6, 3, 7]);
        let high23 = pick(rows[2], rows[3], [2, 6, 3, 7]);
        let columns = [
            pick(low01, low23, [0, 1, 4, 5]),
            pick(low01, low23, [2, 3, 6, 7]),
            pick(high01, high23, [0, 1, 4, 5]),
            pick(high01, high23, [2, 3, 6, 7]),
        ];
        self.note_columns(columns, flushed, bounded);
        columns
    }

    /// Notes the columns of rows read as operands: flushed, and checked when the finish checks
    /// operands (moving lanes keeps both).
    pub(super) fn note_columns(&mut self, columns: [Value; 4], flushed: bool, bounded: bool) {
        for column in columns {
            if flushed {
                self.note_flushed(column);
            }
            if bounded {
                self.cache.facts.bounded.insert(column);
            }
        }
    }

    /// An instruction with products: `fast` (its rule finished by
    /// [`lanes::FlaggingSignedZeros`]: plain products, and a rounding that flags the lanes
    /// whose result it cannot vouch for: NaNs, and in the float24 modes magnitudes past the
    /// largest finite float24 or rounding below 2^-62 without being zero), then, only when a
    /// lane was flagged, `exact` (the rule itself) in a cold block. Every lane the fast form
    /// does not flag is already exact up to the sign of a zero (`float24::tests`), and the
    /// result's lanes are recorded as possibly holding such a −0 ([`Lowering::settled`]); the
    /// common case skips the inf·0 products' fix-up and the rounding's NaN, overflow and
    /// small-value selects. Values read before stay valid in both blocks (they dominate them).
    /// A whole invocation's fast form ([`Lowering::fast_invocation`]) has the fast form alone,
    /// checking operands; `form` ([`Lowering::tame`]) may ask for either of the others.
    pub(super) fn checked(
        &mut self,
        form: Form,
        fast: impl FnOnce(&mut Self, &mut lanes::FlaggingSignedZeros<Value, Value>) -> Value,
        exact: impl FnOnce(&mut Self) -> Value,
    ) -> Value {
        if form == Form::Exact {
            return exact(self);
        }
        if self.fast_invocation && form == Form::Fast {
            let mut checks =
                self.cache.checked.take().unwrap_or_else(|| {
                    lanes::FlaggingSignedZeros::checking(FAST_INVOCATION_CHECKS)
                });
            let quick = fast(self, &mut checks);
            self.cache.checked = Some(checks);
            self.note_negative_zeros(quick, 0xF);
            return quick;
        }
        if !self.checked_products {
            return exact(self);
        }
        let mut flagging = lanes::FlaggingSignedZeros::default();
        let quick = fast(self, &mut flagging);
        let negative_zeros = if self.precision.is_f24() { 0xF } else { 0 };
        self.note_negative_zeros(quick, negative_zeros);
        let Some(unusual) = flagging.flagged(self) else {
            return quick;
        };
        let any = self.b.ins().vany_true(unusual);
        let cold = self.b.create_block();
        self.b.set_cold_block(cold);
        let merge = self.b.create_block();
        let result = self.b.append_block_param(merge, F32X4);
        self.b.ins().brif(any, cold, &[], merge, &[quick.into()]);
        self.b.seal_block(cold);
        self.b.switch_to_block(cold);
        // Constants made in the cold block do not dominate what follows: not kept.
        // Nor the flushed copies: the exact form flushes its operands again rather than keep
        // the fast form's copies live across it.
        let facts = &mut self.cache.facts;
        let constants = std::mem::take(&mut facts.constants);
        let unchanged = std::mem::take(&mut facts.unchanged_by_flush);
        let copies = std::mem::take(&mut facts.flushed_copies);
        let exactly = exact(self);
        self.cache.facts.constants = constants;
        let exact_flushed = self.is_flushed(exactly);
        self.cache.facts.unchanged_by_flush = unchanged;
        self.cache.facts.flushed_copies = copies;
        self.b.ins().jump(merge, &[exactly.into()]);
        self.b.seal_block(merge);
        self.b.switch_to_block(merge);
        if exact_flushed && self.is_flushed(quick) {
            self.note_flushed(result);
        }
        self.note_negative_zeros(result, negative_zeros);
        result
    }

    /// `f(x)` for a host function of one f32.
    pub(super) fn call(&mut self, f: FuncRef, x: Value) -> Value {
        let call = self.b.ins().call(f, &[x]);
        self.b.inst_results(call)[0]
    }

    /// EX2 or LG2 of lane 0 in every lane: `inline` code, or a call of `host` in a program
    /// with more than [`INLINE_TRANSCENDENTALS`] of them.
    pub(super) fn transcendental_first(
        &mut self,
        a: Value,
        inline: fn(&mut FunctionBuilder, Value) -> Value,
        host: FuncRef,
    ) -> Value {
        let lane = self.b.ins().extractlane(a, 0);
        let r = if self.inline_transcendentals {
            inline(self.b, lane)
        } else {
            self.call(host, lane)
        };
        self.b.ins().splat(F32X4, r)
    }

    /// `f` of every lane, one call each: the scalar JIT's EX2 and LG2 broadcast lane 0
    /// ([`Lanes::exp2_first`]), so this form is never emitted by its instructions.
    pub(super) fn call_each(&mut self, f: FuncRef, x: Value) -> Value {
        let mut r = x;
        for lane in 0..4u8 {
            let element = self.b.ins().extractlane(x, lane);
            let y = self.call(f, element);
            r = self.b.ins().insertlane(r, y, lane);
        }
        r
    }

    /// Lowers the data part of the instruction at `pc`. Returns a status value to check when
    /// the instruction can fail (EMIT).
    pub fn data(&mut self, pc: u16, inst: &Instruction) -> Option<Value> {
        match self.facts.dot_groups.get(pc as usize) {
            Some(DotGroup::First(len)) => {
                self.dot_group(pc, *len);
                return None;
            }
            Some(DotGroup::Later) => return None,
            _ => {}
        }
        if let Some(operation) = inst.operation() {
            let desc = self.descriptor(operation.desc());
            let mut operating = Operating {
                l: self,
                form: Form::Fast,
                addresses: None,
            };
            operate(&mut operating, &operation, desc);
            return None;
        }
        match *inst {
            // EMIT and SETEMIT do nothing in a vertex shader (docs/model-choices.md).
            Instruction::Simple {
                op: SimpleOp::Emit, ..
            } => {
                if self.program.stage == ShaderKind::Geometry {
                    self.spill_outputs();
                    let pc = self.b.ins().iconst(types::I32, pc as i64);
                    let call = self.b.ins().call(self.host.emit, &[self.ctx, pc]);
                    return Some(self.b.inst_results(call)[0]);
                }
            }
            Instruction::SetEmit {
                vertex,
                primitive,
                winding,
                ..
            } => {
                if self.program.stage == ShaderKind::Geometry {
                    let config = EmitConfig {
                        vertex,
                        primitive,
                        winding,
                    };
                    let packed = self.b.ins().iconst(types::I32, config.packed() as i64);
                    self.b.ins().call(self.host.setemit, &[self.ctx, packed]);
                }
            }
            // No data part: END, BREAK and the flow instructions are all control
            // (super::control), NOP does nothing.
            Instruction::Simple {
                op: SimpleOp::Nop | SimpleOp::End | SimpleOp::Break,
                ..
            }
            | Instruction::CondFlow { .. }
            | Instruction::BoolFlow { .. }
            | Instruction::Loop { .. } => {}
            // An unknown opcode does nothing (docs/execution-model.md §3).
            Instruction::Unknown { .. } => {}
            // Data operations: `operate`.
            Instruction::Binary { .. }
            | Instruction::Unary { .. }
            | Instruction::Mova { .. }
            | Instruction::Cmp { .. }
            | Instruction::Mad { .. } => {}
        }
        None
    }
}

/// The lowering of one data operation ([`operate`] states what each does), with the form its
/// instruction with products takes ([`Lowering::tame`]).
pub(super) struct Operating<'l, 'a, 'b> {
    l: &'l mut Lowering<'a, 'b>,
    form: Form,
    /// MOVA's operand and its lanes converted, once for both lanes.
    addresses: Option<(Value, Value)>,
}

impl<'a, 'b> Operating<'_, 'a, 'b> {
    /// A rule with a fast form: [`Lowering::checked`] in the form picked for the instruction.
    fn checked(
        &mut self,
        fast: impl FnOnce(&mut Lowering<'a, 'b>, &mut lanes::FlaggingSignedZeros<Value, Value>) -> Value,
        exact: impl FnOnce(&mut Lowering<'a, 'b>) -> Value,
    ) -> Value {
        self.l.checked(self.form, fast, exact)
    }

    /// One of RCP, RSQ, EX2, LG2: its result's lanes are wild (LG2's may be logarithms).
    fn transcendental(
        &mut self,
        a: Value,
        rule: fn(&mut Lowering<'a, 'b>, Value, Precision) -> Value,
        wild: u8,
    ) -> Value {
        let p = self.l.precision;
        let r = rule(self.l, a, p);
        self.l.note_wild(r, wild);
        r
    }
}

impl OperationBackend for Operating<'_, '_, '_> {
    type Vector = Value;
    type Address = Value;
    type Flag = Value;

    fn read(&mut self, source: &Source) -> Value {
        self.l.read(source)
    }

    /// Picks the form of an instruction with a fast form and readies its operands
    /// ([`Lowering::tame`]).
    fn operands_read(&mut self, operation: &Operation, sources: &[Source], operands: &mut [Value]) {
        let needed = [0, 1, 2].map(|i| sources.get(i).map_or(0, |s| s.needed));
        let read = match *operation {
            Operation::Binary { op, .. } => self.l.lanes_read(op, needed).map(|l| l.to_vec()),
            Operation::Mad { .. } => Some(needed.to_vec()),
            _ => None,
        };
        let Some(read) = read else {
            return;
        };
        let mut pairs: Vec<(Value, u8)> = operands.iter().copied().zip(read).collect();
        self.form = self.l.tame(&mut pairs);
        for (operand, (value, _)) in operands.iter_mut().zip(pairs) {
            *operand = value;
        }
    }

    fn constant(&mut self, value: f32) -> Value {
        self.l.f32x4_const([value; 4])
    }

    fn add(&mut self, a: Value, b: Value) -> Value {
        let p = self.l.precision;
        if self.l.fast_invocation {
            self.checked(
                |l, fin| lanes::add_by(l, fin, a, b, p),
                |l| lanes::add(l, a, b, p),
            )
        } else {
            lanes::add(self.l, a, b, p)
        }
    }
    fn mul(&mut self, a: Value, b: Value) -> Value {
        let p = self.l.precision;
        self.checked(
            |l, fin| lanes::mul_by(l, fin, a, b, p),
            |l| lanes::mul(l, a, b, p),
        )
    }
    fn mad(&mut self, a: Value, b: Value, c: Value) -> Value {
        let p = self.l.precision;
        self.checked(
            |l, fin| lanes::mad_by(l, fin, a, b, c, p),
            |l| lanes::mad(l, a, b, c, p),
        )
    }
    fn dot(&mut self, a: Value, b: Value, count: usize) -> Value {
        let p = self.l.precision;
        self.checked(
            |l, fin| lanes::dot_lanes_by(l, fin, a, b, count, p),
            |l| lanes::dot(l, a, b, count, p),
        )
    }
    fn floor(&mut self, a: Value) -> Value {
        let p = self.l.precision;
        lanes::flr(self.l, a, p)
    }
    fn reciprocal(&mut self, a: Value) -> Value {
        self.transcendental(a, lanes::rcp, 0x0F)
    }
    fn reciprocal_sqrt(&mut self, a: Value) -> Value {
        self.transcendental(a, lanes::rsq, 0x0F)
    }
    fn exp2(&mut self, a: Value) -> Value {
        self.transcendental(a, lanes::ex2, 0x0F)
    }
    fn log2(&mut self, a: Value) -> Value {
        self.transcendental(a, lanes::lg2, 0xFF)
    }

    fn select_if(
        &mut self,
        test: CompareOp,
        x: Value,
        y: Value,
        then: Value,
        otherwise: Value,
    ) -> Value {
        let cc = compare_cc(test).expect("select_if tests <, > or >=");
        let l = &mut *self.l;
        let m = l.b.ins().fcmp(cc, x, y);
        let r = l.select_vec(m, then, otherwise);
        let wild = l.wild_lanes(then) | l.wild_lanes(otherwise);
        l.note_wild(r, wild);
        let negative_zeros = l.negative_zero_lanes(then) | l.negative_zero_lanes(otherwise);
        l.note_negative_zeros(r, negative_zeros);
        r
    }

    /// The vector of the highest lane used, the others' vectors selected into it, then the
    /// constants inserted.
    fn lanes(&mut self, lanes: [LaneFrom<Value>; 4], used: u8) -> Value {
        let l = &mut *self.l;
        let used_lanes = || (0..4).rev().filter(move |&lane| used & (1 << lane) != 0);
        let vector_at = |lane: usize| match lanes[lane] {
            LaneFrom::Vector(v) => Some(v),
            LaneFrom::Constant(_) => None,
        };
        let mut result = match used_lanes().find_map(vector_at) {
            Some(base) => base,
            None => l.f32x4_const([0.0; 4]),
        };
        let base = result;
        let mut negative_zeros = 0;
        let mut wild = 0;
        let mut done = Vec::with_capacity(4);
        for lane in used_lanes() {
            let Some(v) = vector_at(lane) else { continue };
            let of_v: u8 = used_lanes()
                .filter(|&other| vector_at(other) == Some(v))
                .map(|other| 1u8 << other)
                .sum();
            if !done.contains(&v) {
                done.push(v);
                negative_zeros |= l.negative_zero_lanes(v) & of_v;
                wild |= l.wild_lanes(v) & (of_v | of_v << 4);
                if v != base {
                    let mask =
                        std::array::from_fn(|i| if of_v & (1 << i) != 0 { u32::MAX } else { 0 });
                    let mask = l.i32x4_const(mask);
                    result = l.select_vec(mask, v, result);
                }
            }
        }
        for lane in (0..4).filter(|&lane| used & (1 << lane) != 0) {
            if let LaneFrom::Constant(c) = lanes[lane] {
                let c = l.b.ins().f32const(c);
                result = l.b.ins().insertlane(result, c, lane as u8);
            }
        }
        if result != base {
            l.note_negative_zeros(result, negative_zeros);
            l.note_wild(result, wild);
        }
        result
    }

    fn compare(&mut self, test: CompareOp, a: Value, b: Value, lane: usize) -> Value {
        let l = &mut *self.l;
        match compare_cc(test) {
            Some(cc) => {
                let x = l.b.ins().extractlane(a, lane as u8);
                let y = l.b.ins().extractlane(b, lane as u8);
                let f = l.b.ins().fcmp(cc, x, y);
                l.b.ins().uextend(types::I32, f)
            }
            None => l.b.ins().iconst(types::I32, 1),
        }
    }
    fn set_cmp(&mut self, lane: usize, flag: Value) {
        self.l.set(Reg::Cmp(lane as u8), flag);
    }
    fn address(&mut self, a: Value, lane: usize) -> Value {
        let ints = match self.addresses {
            Some((of, ints)) if of == a => ints,
            _ => {
                let ints = self.l.b.ins().fcvt_to_sint_sat(I32X4, a);
                self.addresses = Some((a, ints));
                ints
            }
        };
        self.l.b.ins().extractlane(ints, lane as u8)
    }
    fn set_address(&mut self, lane: usize, value: Value) {
        self.l.set(Reg::A0(lane as u8), value);
    }

    fn write(&mut self, dst: DstReg, mask: DestMask, value: Value) {
        self.l.write_lanes(dst, mask, value);
    }
}

/// The float24 rules of [`lanes`] emitted as vector code: each operation is one IR instruction
/// on four lanes (a mask is an `i32x4` of all-ones or zero lanes).
impl Elements for Lowering<'_, '_> {
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
        self.i32x4_const([bits; 4])
    }
    fn flushed_already(&mut self, v: Value) -> Option<Value> {
        self.cache.facts.flushed(v)
    }
    fn note_flushed(&mut self, v: Value) {
        self.cache.facts.unchanged_by_flush.insert(v);
    }
    fn note_flush(&mut self, v: Value, flushed: Value) {
        self.cache.facts.note_flush(v, flushed);
    }
    fn known_bounded(&mut self, v: Value) -> bool {
        self.cache.facts.bounded.contains(&v)
    }
    fn note_bounded(&mut self, v: Value) {
        self.cache.facts.bounded.insert(v);
    }
    fn exp2_each(&mut self, a: Value) -> Value {
        let f = self.host.exp2;
        self.call_each(f, a)
    }
    fn log2_each(&mut self, a: Value) -> Value {
        let f = self.host.log2;
        self.call_each(f, a)
    }
}

impl Lanes for Lowering<'_, '_> {
    fn exp2_first(&mut self, a: Value) -> Value {
        let f = self.host.exp2;
        self.transcendental_first(a, crate::wide::exp2_f32, f)
    }
    fn log2_first(&mut self, a: Value) -> Value {
        let f = self.host.log2;
        self.transcendental_first(a, crate::wide::log2_f32, f)
    }
    fn broadcast(&mut self, a: Value, lane: usize) -> Value {
        let r = self.permute(a, [lane; 4]);
        if self.is_flushed(a) {
            self.note_flushed(r);
        }
        r
    }
    fn with_lane(&mut self, a: Value, lane: usize, value: f32) -> Value {
        let value = self.b.ins().f32const(value);
        self.b.ins().insertlane(a, value, lane as u8)
    }
}
