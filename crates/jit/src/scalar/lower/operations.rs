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
            operands.push((
                self.read(dot.a, d, ZeroSign::Ignored, read_lanes[0]),
                read_lanes[0],
            ));
            operands.push((
                self.read(dot.b, d, ZeroSign::Ignored, read_lanes[1]),
                read_lanes[1],
            ));
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
                self.cache.bounded.insert(column);
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
        let constants = std::mem::take(&mut self.cache.constants);
        let flushed = std::mem::take(&mut self.cache.flushed);
        let exactly = exact(self);
        self.cache.constants = constants;
        let exact_flushed = self.is_flushed(exactly);
        self.cache.flushed = flushed;
        self.b.ins().jump(merge, &[exactly.into()]);
        self.b.seal_block(merge);
        self.b.switch_to_block(merge);
        if exact_flushed && self.is_flushed(quick) {
            self.note_flushed(result);
        }
        self.note_negative_zeros(result, negative_zeros);
        result
    }

    /// `op` of `a` and `c`, in the `form` [`Lowering::tame`] picked.
    pub(super) fn binary(&mut self, op: BinaryOperation, a: Value, c: Value, form: Form) -> Value {
        let p = self.precision;
        match op {
            BinaryOperation::Add if self.fast_invocation => self.checked(
                form,
                |l, fin| lanes::add_by(l, fin, a, c, p),
                |l| lanes::add(l, a, c, p),
            ),
            BinaryOperation::Add => lanes::add(self, a, c, p),
            BinaryOperation::Mul => self.checked(
                form,
                |l, fin| lanes::mul_by(l, fin, a, c, p),
                |l| lanes::mul(l, a, c, p),
            ),
            BinaryOperation::Max | BinaryOperation::Min => {
                let cc = if op == BinaryOperation::Max {
                    FloatCC::GreaterThan
                } else {
                    FloatCC::LessThan
                };
                let m = self.b.ins().fcmp(cc, a, c);
                let r = self.select_vec(m, a, c);
                let wild = self.wild_lanes(a) | self.wild_lanes(c);
                self.note_wild(r, wild);
                r
            }
            BinaryOperation::Sge | BinaryOperation::Slt => {
                let cc = if op == BinaryOperation::Sge {
                    FloatCC::GreaterThanOrEqual
                } else {
                    FloatCC::LessThan
                };
                let m = self.b.ins().fcmp(cc, a, c);
                let one = self.f32x4_const([1.0; 4]);
                let zero = self.f32x4_const([0.0; 4]);
                self.select_vec(m, one, zero)
            }
            BinaryOperation::Dp3 | BinaryOperation::Dp4 => {
                let count = if op == BinaryOperation::Dp3 { 3 } else { 4 };
                self.checked(
                    form,
                    |l, fin| lanes::dot_lanes_by(l, fin, a, c, count, p),
                    |l| lanes::dot(l, a, c, count, p),
                )
            }
            BinaryOperation::Dph => self.checked(
                form,
                |l, fin| lanes::dph_by(l, fin, a, c, p),
                |l| lanes::dph(l, a, c, p),
            ),
            BinaryOperation::Dst => {
                // (1, a.y * b.y, a.z, b.w): only the product is arithmetic.
                let product = self.checked(
                    form,
                    |l, fin| lanes::mul_by(l, fin, a, c, p),
                    |l| lanes::mul(l, a, c, p),
                );
                let y_lane = self.i32x4_const([0, u32::MAX, 0, 0]);
                let z_lane = self.i32x4_const([0, 0, u32::MAX, 0]);
                let copied = self.select_vec(z_lane, a, c);
                let r = self.select_vec(y_lane, product, copied);
                let one = self.b.ins().f32const(1.0);
                let r = self.b.ins().insertlane(r, one, 0);
                let negative_zeros = self.negative_zero_lanes(product) & 0b0010;
                self.note_negative_zeros(r, negative_zeros);
                let wild = (self.wild_lanes(a) & 0x44) | (self.wild_lanes(c) & 0x88);
                self.note_wild(r, wild);
                r
            }
        }
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

    pub(super) fn unary(&mut self, op: UnaryOp, a: Value) -> Value {
        let p = self.precision;
        match op {
            UnaryOp::Mov => a,
            UnaryOp::Flr => lanes::flr(self, a, p),
            UnaryOp::Rcp | UnaryOp::Rsq | UnaryOp::Ex2 | UnaryOp::Lg2 => {
                let r = match op {
                    UnaryOp::Rcp => lanes::rcp(self, a, p),
                    UnaryOp::Rsq => lanes::rsq(self, a, p),
                    UnaryOp::Ex2 => lanes::ex2(self, a, p),
                    _ => lanes::lg2(self, a, p),
                };
                self.note_wild(r, if op == UnaryOp::Lg2 { 0xFF } else { 0x0F });
                r
            }
            UnaryOp::Litp => {
                let zero = self.f32x4_const([0.0; 4]);
                let positive = self.b.ins().fcmp(FloatCC::GreaterThan, a, zero);
                let maxed = self.select_vec(positive, a, zero);
                let lo = self.f32x4_const([-LITP_Y_LIMIT; 4]);
                let hi = self.f32x4_const([LITP_Y_LIMIT; 4]);
                let below = self.b.ins().fcmp(FloatCC::LessThan, a, lo);
                let clamped = self.select_vec(below, lo, a);
                let above = self.b.ins().fcmp(FloatCC::GreaterThan, clamped, hi);
                let clamped = self.select_vec(above, hi, clamped);
                let y_lane = self.i32x4_const([0, u32::MAX, 0, 0]);
                let r = self.select_vec(y_lane, clamped, maxed);
                let zero_scalar = self.b.ins().f32const(0.0);
                let r = self.b.ins().insertlane(r, zero_scalar, 2);
                let non_negative = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, a, zero);
                for (flag, lane) in [(0usize, 0u8), (1, 3)] {
                    let bit = self.b.ins().extractlane(non_negative, lane);
                    let bit = self.b.ins().band_imm_s(bit, 1);
                    self.set(Reg::Cmp(flag as u8), bit);
                }
                r
            }
        }
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
            self.operate(operation);
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

    /// Lowers a data operation.
    pub(super) fn operate(&mut self, operation: Operation) {
        let d = self.descriptor(operation.desc());
        let needed = operation.source_lanes(d);
        match operation {
            Operation::Binary { op, dst, a, b, .. } => {
                // MAX and MIN pass on one of two operands, whose other may be the model's own
                // −0; DST copies two lanes beside its product.
                let zero_sign = match op {
                    BinaryOperation::Max | BinaryOperation::Min | BinaryOperation::Dst => {
                        ZeroSign::Seen
                    }
                    _ => ZeroSign::Ignored,
                };
                let mut operands = [
                    (self.read(a, d, zero_sign, needed[0]), 0),
                    (self.read(b, d, zero_sign, needed[1]), 0),
                ];
                let form = match self.lanes_read(op, needed) {
                    Some([first, second]) => {
                        operands[0].1 = first;
                        operands[1].1 = second;
                        self.tame(&mut operands)
                    }
                    None => Form::Fast,
                };
                let [(a, _), (c, _)] = operands;
                let r = self.binary(op, a, c, form);
                self.write(dst, d, r);
            }
            Operation::Unary { op, dst, a, .. } => {
                // FLR rounds a floor of the flushed operand, which only the sign of a zero
                // result sees; MOV passes it on; LITP, RCP, RSQ, EX2 and LG2 see it.
                let zero_sign = match op {
                    UnaryOp::Flr => ZeroSign::Ignored,
                    UnaryOp::Mov => ZeroSign::PassedOn,
                    _ => ZeroSign::Seen,
                };
                let a = self.read(a, d, zero_sign, needed[0]);
                let r = self.unary(op, a);
                self.write(dst, d, r);
            }
            Operation::Mova { a, .. } => {
                let a = self.read(a, d, ZeroSign::Ignored, needed[0]);
                let ints = self.b.ins().fcvt_to_sint_sat(I32X4, a);
                for lane in 0..2 {
                    if d.dest_mask().lane(lane) {
                        let v = self.b.ins().extractlane(ints, lane as u8);
                        self.set(Reg::A0(lane as u8), v);
                    }
                }
            }
            Operation::Cmp {
                a, b, cmp_x, cmp_y, ..
            } => {
                let a = self.read(a, d, ZeroSign::Ignored, needed[0]);
                let c = self.read(b, d, ZeroSign::Ignored, needed[1]);
                for (lane, op) in [(0u8, cmp_x), (1, cmp_y)] {
                    let flag = match compare_cc(op) {
                        Some(cc) => {
                            let x = self.b.ins().extractlane(a, lane);
                            let y = self.b.ins().extractlane(c, lane);
                            let f = self.b.ins().fcmp(cc, x, y);
                            self.b.ins().uextend(types::I32, f)
                        }
                        None => self.b.ins().iconst(types::I32, 1),
                    };
                    self.set(Reg::Cmp(lane), flag);
                }
            }
            Operation::Mad { dst, a, b, c, .. } => {
                let mut operands = [
                    (self.read(a, d, ZeroSign::Ignored, needed[0]), needed[0]),
                    (self.read(b, d, ZeroSign::Ignored, needed[1]), needed[1]),
                    (self.read(c, d, ZeroSign::Ignored, needed[2]), needed[2]),
                ];
                let form = self.tame(&mut operands);
                let [(a, _), (c2, _), (e, _)] = operands;
                let p = self.precision;
                let r = self.checked(
                    form,
                    |l, fin| lanes::mad_by(l, fin, a, c2, e, p),
                    |l| lanes::mad(l, a, c2, e, p),
                );
                self.write(dst, d, r);
            }
        }
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
        self.cache.flushed.get(&v).copied()
    }
    fn note_flushed(&mut self, v: Value) {
        self.cache.flushed.insert(v, v);
    }
    fn note_flush(&mut self, v: Value, flushed: Value) {
        self.cache.flushed.insert(v, flushed);
        self.cache.flushed.insert(flushed, flushed);
    }
    fn known_bounded(&mut self, v: Value) -> bool {
        self.cache.bounded.contains(&v)
    }
    fn note_bounded(&mut self, v: Value) {
        self.cache.bounded.insert(v);
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
