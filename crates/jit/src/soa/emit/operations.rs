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
        let d = OperandDescriptor(self.s.program.opdescs[operation.desc() as usize]);
        operate(self, &operation, d);
    }

    /// `rule` of the flushed lanes present in `a` and `b`.
    fn lanewise2(
        &mut self,
        a: Lanes4,
        b: Lanes4,
        mut rule: impl FnMut(&mut Self, Value, Value) -> Value,
    ) -> Lanes4 {
        std::array::from_fn(|lane| match (a[lane], b[lane]) {
            (Some(x), Some(y)) => Some(rule(self, x, y)),
            _ => None,
        })
    }
}

/// One component of four vertices per lane of a register, those an operation reads or
/// computes (the others `None`: never read, so never loaded).
type Lanes4 = [Option<Value>; 4];

/// The data operations on four vertices ([`operate`] states what each does): a vector is the
/// four component planes of a register.
impl OperationBackend for Emitter<'_, '_> {
    type Vector = Lanes4;
    type Address = Value;
    type Flag = Value;

    fn read(&mut self, source: &Source) -> Lanes4 {
        std::array::from_fn(|lane| {
            (source.needed & (1 << lane) != 0).then(|| self.source(source, lane))
        })
    }

    fn constant(&mut self, value: f32) -> Lanes4 {
        [Some(self.float_const(value)); 4]
    }
    fn add(&mut self, a: Lanes4, b: Lanes4) -> Lanes4 {
        let p = self.precision;
        self.lanewise2(a, b, |e, x, y| {
            let (x, y) = (e.flushed(x), e.flushed(y));
            e.arith(|e, fin| lanes::add_by(e, fin, x, y, p))
        })
    }
    fn mul(&mut self, a: Lanes4, b: Lanes4) -> Lanes4 {
        self.lanewise2(a, b, Self::mul)
    }
    fn mad(&mut self, a: Lanes4, b: Lanes4, c: Lanes4) -> Lanes4 {
        let p = self.precision;
        std::array::from_fn(|lane| {
            let (x, y, z) = (a[lane]?, b[lane]?, c[lane]?);
            let (x, y, z) = (self.flushed(x), self.flushed(y), self.flushed(z));
            Some(self.arith(|e, fin| lanes::mad_by(e, fin, x, y, z, p)))
        })
    }
    fn dot(&mut self, a: Lanes4, b: Lanes4, count: usize) -> Lanes4 {
        let p = self.precision;
        let pairs: Vec<(Value, Value)> = (0..count)
            .map(|k| {
                let x = a[k].expect("a dot product reads its lanes");
                let y = b[k].expect("a dot product reads its lanes");
                (self.flushed(x), self.flushed(y))
            })
            .collect();
        let sum = self.arith(|e, fin| lanes::dot_by(e, fin, &pairs, p));
        [Some(sum); 4]
    }
    fn floor(&mut self, a: Lanes4) -> Lanes4 {
        let p = self.precision;
        a.map(|x| {
            let x = self.flushed(x?);
            Some(self.arith(|e, fin| lanes::flr_by(e, fin, x, p)))
        })
    }
    fn reciprocal(&mut self, a: Lanes4) -> Lanes4 {
        self.of_x(a, lanes::rcp_each_by)
    }
    fn reciprocal_sqrt(&mut self, a: Lanes4) -> Lanes4 {
        self.of_x(a, lanes::rsq_each_by)
    }
    fn exp2(&mut self, a: Lanes4) -> Lanes4 {
        self.of_x(a, lanes::ex2_each_by)
    }
    fn log2(&mut self, a: Lanes4) -> Lanes4 {
        self.of_x(a, lanes::lg2_each_by)
    }

    fn select_if(
        &mut self,
        test: CompareOp,
        x: Lanes4,
        y: Lanes4,
        then: Lanes4,
        otherwise: Lanes4,
    ) -> Lanes4 {
        let cc = crate::compare_cc(test).expect("select_if tests <, > or >=");
        std::array::from_fn(|lane| {
            let (x, y) = (x[lane]?, y[lane]?);
            let (then, otherwise) = (then[lane]?, otherwise[lane]?);
            let m = self.b.ins().fcmp(cc, x, y);
            Some(self.select_float(m, then, otherwise))
        })
    }
    fn lanes(&mut self, lanes: [LaneFrom<Lanes4>; 4], used: u8) -> Lanes4 {
        std::array::from_fn(|lane| {
            if used & (1 << lane) == 0 {
                return None;
            }
            match lanes[lane] {
                LaneFrom::Vector(v) => v[lane],
                LaneFrom::Constant(c) => Some(self.float_const(c)),
            }
        })
    }

    fn compare(&mut self, test: CompareOp, a: Lanes4, b: Lanes4, lane: usize) -> Value {
        match crate::compare_cc(test) {
            Some(cc) => {
                let x = a[lane].expect("a comparison reads its lane");
                let y = b[lane].expect("a comparison reads its lane");
                self.b.ins().fcmp(cc, x, y)
            }
            None => self.bits_const(u32::MAX),
        }
    }
    fn set_cmp(&mut self, lane: usize, flag: Value) {
        self.assign(self.cmp[lane], flag);
    }
    fn address(&mut self, a: Lanes4, lane: usize) -> Value {
        let x = a[lane].expect("MOVA reads the lanes it sets");
        self.b.ins().fcvt_to_sint_sat(I32X4, x)
    }
    fn set_address(&mut self, lane: usize, value: Value) {
        self.assign(self.a0[lane], value);
    }

    fn write(&mut self, dst: DstReg, mask: DestMask, value: Lanes4) {
        let values = std::array::from_fn(|lane| if mask.lane(lane) { value[lane] } else { None });
        Emitter::write(self, dst, values);
    }
}

impl Emitter<'_, '_> {
    /// A rule of lane x (RCP, RSQ, EX2, LG2), in every lane.
    fn of_x(
        &mut self,
        a: Lanes4,
        rule: fn(&mut Self, &mut SoaFinish, Value, Precision) -> Value,
    ) -> Lanes4 {
        let x = a[0].expect("the rule reads lane x");
        let x = self.flushed(x);
        let p = self.precision;
        let r = self.arith(|e, fin| rule(e, fin, x, p));
        [Some(r); 4]
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
        if let Some(r) = self.facts.flushed(v) {
            return Some(r);
        }
        if self.facts.known.get(&v) == Some(&KnownFactor::Zero) {
            // A uniform the multiply reads as zero: -0 and values below 2^-62 flush to +0.
            return Some(self.float_const(0.0));
        }
        let &(address, comp, negated) = self.uniform_origin.get(&v)?;
        if matches!(address, UniformAddress::Lanes(_)) {
            // A second gather costs more than flushing the gathered values.
            return None;
        }
        let table = if negated { NEGATED_FLUSHED } else { FLUSHED };
        let r = self.load_uniform(table, address, comp);
        self.facts.note_flush(v, r);
        Some(r)
    }
    fn note_flushed(&mut self, v: Value) {
        self.facts.unchanged_by_flush.insert(v);
    }
    fn known_factor(&mut self, v: Value) -> Option<KnownFactor> {
        self.facts.known.get(&v).copied()
    }
    fn is_rounded(&mut self, v: Value) -> bool {
        self.facts.rounded.contains(&v)
    }
    fn note_rounded(&mut self, v: Value) {
        self.facts.rounded.insert(v);
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
