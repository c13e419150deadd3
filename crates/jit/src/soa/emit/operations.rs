//! Operations on four vertices: each instruction's data part, the float24 rules of
//! [`lanes`] on f32x4 values, and how the kernel finishes its arithmetic.

use super::*;

impl Emitter<'_, '_> {
    /// An arithmetic rule finished as this kernel finishes them ([`SoaArithmetic`]): a fast
    /// path's flags go into the segment's flags.
    pub(super) fn arith(&mut self, rule: impl FnOnce(&mut Self, &mut SoaFinish) -> Value) -> Value {
        let unusual = self.unusual.take();
        let mut finish = match self.arithmetic {
            SoaArithmetic::Exact => SoaFinish::Exact(Exactly),
            SoaArithmetic::FlagNaNs => SoaFinish::FlagNaNs(FlaggingNan { unusual }),
            SoaArithmetic::FlagUnusual => SoaFinish::FlagUnusual(Flagging { unusual }),
        };
        let r = rule(self, &mut finish);
        self.unusual = match finish {
            SoaFinish::Exact(_) => None,
            SoaFinish::FlagNaNs(fast) => fast.unusual,
            SoaFinish::FlagUnusual(fast) => fast.unusual,
        };
        r
    }

    pub(super) fn mul(&mut self, a: Value, b: Value) -> Value {
        let (a, b) = (self.flushed(a), self.flushed(b));
        let p = self.precision;
        self.arith(|e, fin| lanes::mul_by(e, fin, a, b, p))
    }

    pub(super) fn data(&mut self, inst: &Instruction) {
        // No data part in a vertex shader: flow control is traced, NOP and unknown opcodes do
        // nothing, EMIT and SETEMIT do nothing (docs/execution-model.md §3, §6.1).
        let Some(operation) = inst.operation() else {
            return;
        };
        let p = self.precision;
        let d = OperandDescriptor(self.s.program.opdescs[operation.desc() as usize]);
        match operation {
            Operation::Binary { op, dst, a, b, .. } => {
                let mask = d.dest_mask();
                if mask.0 == 0 {
                    return;
                }
                let (first, second) = (a, b);
                let a = |e: &mut Self, lane| e.source(first, d, lane);
                let b = |e: &mut Self, lane| e.source(second, d, lane);
                let mut out = [None; 4];
                match op {
                    BinaryOperation::Dp3 | BinaryOperation::Dp4 | BinaryOperation::Dph => {
                        let n = if op == BinaryOperation::Dp3 { 3 } else { 4 };
                        let mut pairs = Vec::with_capacity(4);
                        for k in 0..n {
                            let x = if op == BinaryOperation::Dph && k == 3 {
                                self.float_const(1.0)
                            } else {
                                a(self, k)
                            };
                            let y = b(self, k);
                            pairs.push((self.flushed(x), self.flushed(y)));
                        }
                        let sum = self.arith(|e, fin| lanes::dot_by(e, fin, &pairs, p));
                        for (lane, slot) in out.iter_mut().enumerate() {
                            if mask.lane(lane) {
                                *slot = Some(sum);
                            }
                        }
                    }
                    base => {
                        for (lane, slot) in out.iter_mut().enumerate() {
                            if !mask.lane(lane) {
                                continue;
                            }
                            *slot = Some(match base {
                                BinaryOperation::Add => {
                                    let x = a(self, lane);
                                    let y = b(self, lane);
                                    let (x, y) = (self.flushed(x), self.flushed(y));
                                    self.arith(|e, fin| lanes::add_by(e, fin, x, y, p))
                                }
                                BinaryOperation::Mul => {
                                    let x = a(self, lane);
                                    let y = b(self, lane);
                                    self.mul(x, y)
                                }
                                BinaryOperation::Max | BinaryOperation::Min => {
                                    let x = a(self, lane);
                                    let y = b(self, lane);
                                    let cc = if base == BinaryOperation::Max {
                                        FloatCC::GreaterThan
                                    } else {
                                        FloatCC::LessThan
                                    };
                                    let m = self.b.ins().fcmp(cc, x, y);
                                    self.select_float(m, x, y)
                                }
                                BinaryOperation::Sge | BinaryOperation::Slt => {
                                    let x = a(self, lane);
                                    let y = b(self, lane);
                                    let cc = if base == BinaryOperation::Sge {
                                        FloatCC::GreaterThanOrEqual
                                    } else {
                                        FloatCC::LessThan
                                    };
                                    let m = self.b.ins().fcmp(cc, x, y);
                                    let one = self.float_const(1.0);
                                    let zero = self.float_const(0.0);
                                    self.select_float(m, one, zero)
                                }
                                // DST: (1, a.y * b.y, a.z, b.w).
                                _ => match lane {
                                    0 => self.float_const(1.0),
                                    1 => {
                                        let x = a(self, 1);
                                        let y = b(self, 1);
                                        self.mul(x, y)
                                    }
                                    2 => a(self, 2),
                                    _ => b(self, 3),
                                },
                            });
                        }
                    }
                }
                self.write(dst, out);
            }
            Operation::Unary { op, dst, a, .. } => {
                let mask = d.dest_mask();
                if mask.0 == 0 && op != UnaryOp::Litp {
                    return;
                }
                let mut out = [None; 4];
                match op {
                    UnaryOp::Mov | UnaryOp::Flr => {
                        for (lane, slot) in out.iter_mut().enumerate() {
                            if mask.lane(lane) {
                                let x = self.source(a, d, lane);
                                *slot = Some(if op == UnaryOp::Mov {
                                    x
                                } else {
                                    let x = self.flushed(x);
                                    self.arith(|e, fin| lanes::flr_by(e, fin, x, p))
                                });
                            }
                        }
                    }
                    UnaryOp::Rcp | UnaryOp::Rsq | UnaryOp::Ex2 | UnaryOp::Lg2 => {
                        let x = self.source(a, d, 0);
                        let x = self.flushed(x);
                        let r = self.arith(|e, fin| match op {
                            UnaryOp::Rcp => lanes::rcp_each_by(e, fin, x, p),
                            UnaryOp::Rsq => lanes::rsq_each_by(e, fin, x, p),
                            UnaryOp::Ex2 => lanes::ex2_each_by(e, fin, x, p),
                            _ => lanes::lg2_each_by(e, fin, x, p),
                        });
                        for (lane, slot) in out.iter_mut().enumerate() {
                            if mask.lane(lane) {
                                *slot = Some(r);
                            }
                        }
                    }
                    UnaryOp::Litp => {
                        let x = self.source(a, d, 0);
                        let y = self.source(a, d, 1);
                        let w = self.source(a, d, 3);
                        let zero = self.float_const(0.0);
                        let positive = |e: &mut Self, v: Value| {
                            let m = e.b.ins().fcmp(FloatCC::GreaterThan, v, zero);
                            e.select_float(m, v, zero)
                        };
                        let rx = positive(self, x);
                        let rw = positive(self, w);
                        let lo = self.float_const(-LITP_Y_LIMIT);
                        let hi = self.float_const(LITP_Y_LIMIT);
                        let below = self.b.ins().fcmp(FloatCC::LessThan, y, lo);
                        let clamped = self.select_float(below, lo, y);
                        let above = self.b.ins().fcmp(FloatCC::GreaterThan, clamped, hi);
                        let ry = self.select_float(above, hi, clamped);
                        let values = [rx, ry, zero, rw];
                        for (lane, slot) in out.iter_mut().enumerate() {
                            if mask.lane(lane) {
                                *slot = Some(values[lane]);
                            }
                        }
                        let fx = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, x, zero);
                        let fw = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, w, zero);
                        self.assign(self.cmp[0], fx);
                        self.assign(self.cmp[1], fw);
                    }
                }
                self.write(dst, out);
            }
            Operation::Mova { a, .. } => {
                // Both lanes read the source (relative to the old a0) before either is set.
                let mut values = [None; 2];
                for (lane, value) in values.iter_mut().enumerate() {
                    if d.dest_mask().lane(lane) {
                        let x = self.source(a, d, lane);
                        *value = Some(self.b.ins().fcvt_to_sint_sat(I32X4, x));
                    }
                }
                for (var, value) in self.a0.into_iter().zip(values) {
                    if let Some(value) = value {
                        self.assign(var, value);
                    }
                }
            }
            Operation::Cmp {
                a, b, cmp_x, cmp_y, ..
            } => {
                for (lane, op) in [(0usize, cmp_x), (1, cmp_y)] {
                    let flag = match crate::compare_cc(op) {
                        Some(cc) => {
                            let x = self.source(a, d, lane);
                            let y = self.source(b, d, lane);
                            self.b.ins().fcmp(cc, x, y)
                        }
                        None => self.bits_const(u32::MAX),
                    };
                    self.assign(self.cmp[lane], flag);
                }
            }
            Operation::Mad { dst, a, b, c, .. } => {
                let mask = d.dest_mask();
                let mut out = [None; 4];
                for (lane, slot) in out.iter_mut().enumerate() {
                    if !mask.lane(lane) {
                        continue;
                    }
                    let x = self.source(a, d, lane);
                    let y = self.source(b, d, lane);
                    let z = self.source(c, d, lane);
                    let (x, y, z) = (self.flushed(x), self.flushed(y), self.flushed(z));
                    *slot = Some(self.arith(|e, fin| lanes::mad_by(e, fin, x, y, z, p)));
                }
                self.write(dst, out);
            }
        }
    }
}

/// The float24 rules on f32x4 values holding one component of four vertices.
impl Elements for Emitter<'_, '_> {
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
        self.bits_const(bits)
    }
    fn exp2_each(&mut self, a: Value) -> Value {
        crate::wide::exp2_f32x4(&mut self.b, a)
    }
    fn log2_each(&mut self, a: Value) -> Value {
        crate::wide::log2_f32x4(&mut self.b, a)
    }
    fn flushed_already(&mut self, v: Value) -> Option<Value> {
        if self.flushed.contains(&v) {
            return Some(v);
        }
        if self.known.get(&v) == Some(&KnownFactor::Zero) {
            // A uniform the multiply reads as zero: -0 and values below 2^-62 flush to +0.
            return Some(self.float_const(0.0));
        }
        if let Some(&r) = self.flush_memo.get(&v) {
            return Some(r);
        }
        let &(address, comp, negated) = self.uniform_origin.get(&v)?;
        if matches!(address, UniformAddress::Lanes(_)) {
            // A second gather costs more than flushing the gathered values.
            return None;
        }
        let table = if negated { NEGATED_FLUSHED } else { FLUSHED };
        let r = self.load_uniform(table, address, comp);
        self.flushed.insert(r);
        self.flush_memo.insert(v, r);
        Some(r)
    }
    fn note_flushed(&mut self, v: Value) {
        self.flushed.insert(v);
    }
    fn known_factor(&mut self, v: Value) -> Option<KnownFactor> {
        self.known.get(&v).copied()
    }
    fn is_rounded(&mut self, v: Value) -> bool {
        self.rounded.contains(&v)
    }
    fn note_rounded(&mut self, v: Value) {
        self.rounded.insert(v);
    }
}
/// How the structure-of-arrays kernel finishes its arithmetic (see `Emitter::arith`).
pub(super) enum SoaFinish {
    Exact(Exactly),
    FlagNaNs(FlaggingNan<Value>),
    FlagUnusual(Flagging<Value>),
}

impl<'a, 'b> Finish<Emitter<'a, 'b>> for SoaFinish {
    fn round(&mut self, l: &mut Emitter<'a, 'b>, v: Value, p: Precision) -> Value {
        match self {
            SoaFinish::Exact(exact) => exact.round(l, v, p),
            SoaFinish::FlagNaNs(fast) => fast.round(l, v, p),
            SoaFinish::FlagUnusual(fast) => fast.round(l, v, p),
        }
    }
    fn product(&mut self, l: &mut Emitter<'a, 'b>, a: Value, b: Value) -> Value {
        match self {
            SoaFinish::Exact(exact) => exact.product(l, a, b),
            SoaFinish::FlagNaNs(fast) => fast.product(l, a, b),
            SoaFinish::FlagUnusual(fast) => fast.product(l, a, b),
        }
    }
    fn flags_nan_results(&self) -> bool {
        match self {
            SoaFinish::Exact(exact) => Finish::<Emitter<'a, 'b>>::flags_nan_results(exact),
            SoaFinish::FlagNaNs(fast) => Finish::<Emitter<'a, 'b>>::flags_nan_results(fast),
            SoaFinish::FlagUnusual(fast) => Finish::<Emitter<'a, 'b>>::flags_nan_results(fast),
        }
    }
    fn poison(&mut self, l: &mut Emitter<'a, 'b>, nan: Value, v: Value) -> Value {
        match self {
            SoaFinish::Exact(exact) => exact.poison(l, nan, v),
            SoaFinish::FlagNaNs(fast) => fast.poison(l, nan, v),
            SoaFinish::FlagUnusual(fast) => fast.poison(l, nan, v),
        }
    }
}
