//! A PICA program's statements in the IR: the data operations by the model's visitor
//! ([`shader::exec::operate`]), each instruction's tests and loop counters by the model's flow
//! rules ([`shader::flow::rules`]), and relative addressing by the model's index rule
//! ([`shader::program::relative_uniform_slot`]). [`Emitter`] implements those three
//! abstractions with IR; the forms ([`crate::dispatch`]) decide where the statements go.

use shader::exec::operate::{LaneFrom, OperationBackend, Source, SourceRegister};
use shader::float24::Precision;
use shader::float24::arith::CompareOp;
use shader::float24::lanes;
use shader::flow::rules::FlowOps;
use shader::isa::{DestMask, DstReg, RegisterFile, RelIndex};
use shader::program::{IndexOps, relative_uniform_slot};

use crate::geometry::GeometryRegisters;
use crate::ir::build::FnBuilder;
use crate::ir::{ExprId, Global, LocalId, Place, Scalar, Type};
use crate::lanes::HostLanes;

/// The status word of the end state: how the invocation stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Status {
    /// END.
    Ended = 0,
    /// BREAK with an empty loop stack.
    BreakOutsideLoop = 1,
    /// The instruction budget ran out.
    Budget = 2,
    /// The translation's own invariant failed (an address it did not translate).
    Internal = 3,
    /// EMIT with vertex id 3.
    InvalidEmit = 4,
    /// The host driver left the dispatch loop, which never ends by itself: llvmpipe stops a
    /// loop after 65535 passes (docs/gpu-shaders.md, "Loops on llvmpipe").
    HostStopped = 5,
}

/// The invocation's registers as locals of the entry function.
#[derive(Clone, Copy, Debug)]
pub struct Registers {
    /// r0-r15 (`uvec4`).
    pub temporaries: [LocalId; 16],
    /// a0.x, a0.y (`int`).
    pub address: [LocalId; 2],
    /// aL (`int`).
    pub loop_counter: LocalId,
    /// cmp.x, cmp.y (`bool`).
    pub cmp: [LocalId; 2],
    /// A geometry shader's banks and emit state.
    pub geometry: Option<GeometryRegisters>,
}

impl Registers {
    /// Declares the registers, each at its start value (docs/execution-model.md §6; a geometry
    /// shader's are set from its state by [`crate::geometry::prologue`]).
    pub fn declare(b: &mut FnBuilder) -> Registers {
        let temporaries = std::array::from_fn(|n| b.local(&format!("r{n}"), Type::UVEC4, [0; 4]));
        let geometry = b
            .module
            .geometry
            .map(|layout| GeometryRegisters::declare(b, layout));
        Registers {
            geometry,
            temporaries,
            address: [
                b.local("a0_x", Type::INT, [0; 4]),
                b.local("a0_y", Type::INT, [0; 4]),
            ],
            loop_counter: b.local("aL", Type::INT, [0; 4]),
            cmp: [
                b.local("cmp_x", Type::BOOL, [0; 4]),
                b.local("cmp_y", Type::BOOL, [0; 4]),
            ],
        }
    }
}

/// The scalar functions whose rules are long (RCP, RSQ, EX2, LG2: integer division and square
/// root, soft doubles). Drivers inline every GLSL function at every call site, so a form may
/// evaluate them at one shared place instead ([`Deferral`]; docs/gpu-shaders.md, "Compile
/// cost").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Costly {
    /// RCP.
    Rcp = 1,
    /// RSQ.
    Rsq = 2,
    /// EX2.
    Ex2 = 3,
    /// LG2.
    Lg2 = 4,
}

impl Costly {
    /// Every costly function, in code order.
    pub const ALL: [Costly; 4] = [Costly::Rcp, Costly::Rsq, Costly::Ex2, Costly::Lg2];

    /// The costly function `operation` computes, if any.
    pub fn of(operation: &shader::isa::Operation) -> Option<Costly> {
        use shader::isa::UnaryOp;
        match operation {
            shader::isa::Operation::Unary { op, .. } => match op {
                UnaryOp::Rcp => Some(Costly::Rcp),
                UnaryOp::Rsq => Some(Costly::Rsq),
                UnaryOp::Ex2 => Some(Costly::Ex2),
                UnaryOp::Lg2 => Some(Costly::Lg2),
                _ => None,
            },
            _ => None,
        }
    }

    /// The function's value on `a`, by its rule's helper.
    pub fn evaluate(self, b: &mut FnBuilder, precision: Precision, a: ExprId) -> ExprId {
        let p = precision;
        match self {
            Costly::Rcp => rule(b, p, "pica_rcp", &[a], |l, x| lanes::rcp(l, x[0], p)),
            Costly::Rsq => rule(b, p, "pica_rsq", &[a], |l, x| lanes::rsq(l, x[0], p)),
            Costly::Ex2 => rule(b, p, "pica_ex2", &[a], |l, x| lanes::ex2(l, x[0], p)),
            Costly::Lg2 => rule(b, p, "pica_lg2", &[a], |l, x| lanes::lg2(l, x[0], p)),
        }
    }
}

/// The locals through which an instruction hands its costly function to the shared place:
/// which function (0: none pending), its argument and its result.
#[derive(Clone, Copy, Debug)]
pub struct Service {
    /// The [`Costly`] pending (`int`, 0: none).
    pub op: LocalId,
    /// Its argument (`uvec4`).
    pub argument: LocalId,
    /// Its result (`uvec4`).
    pub result: LocalId,
}

/// Where a costly function of the operation being emitted is evaluated.
#[derive(Clone, Copy, Debug)]
pub enum Deferral {
    /// Here, by its helper.
    Inline,
    /// The first of two visits to the instruction: the argument is handed to the service, and
    /// nothing is written.
    Capture(Service),
    /// The second visit, after the service ran: its result is the function's value, and the
    /// instruction's writes are made.
    Resume(Service),
}

/// Emits a program's operations and flow rules into one function.
pub struct Emitter<'a, 'm> {
    /// Where the code goes.
    pub b: &'a mut FnBuilder<'m>,
    /// The precision translated for.
    pub precision: Precision,
    /// The registers.
    pub registers: Registers,
    /// Where costly functions are evaluated.
    pub deferral: Deferral,
}

/// The float24 rules' functions of a module, each built once from the model's rule.
fn rule(
    b: &mut FnBuilder,
    precision: Precision,
    name: &str,
    args: &[ExprId],
    body: impl FnOnce(&mut HostLanes, &[ExprId]) -> ExprId,
) -> ExprId {
    let params: Vec<(&str, Type)> = ["a", "b", "c"][..args.len()]
        .iter()
        .map(|&n| (n, Type::UVEC4))
        .collect();
    let f = b
        .module
        .helper(name, &params, Some(Type::UVEC4), |b, params| {
            let r = body(&mut HostLanes { b, precision }, params);
            b.ret(Some(r));
        });
    b.call(f, args)
}

impl Emitter<'_, '_> {
    /// `function(a)`, evaluated where [`Deferral`] says.
    fn costly(&mut self, function: Costly, a: ExprId) -> ExprId {
        match self.deferral {
            Deferral::Inline => function.evaluate(self.b, self.precision, a),
            Deferral::Capture(service) => {
                self.b.set(service.argument, a);
                let op = self.b.int(function as i32);
                self.b.set(service.op, op);
                a
            }
            Deferral::Resume(service) => self.b.get(service.result),
        }
    }

    /// Whether writes are held back (the capturing visit writes nothing).
    fn capturing(&self) -> bool {
        matches!(self.deferral, Deferral::Capture(_))
    }

    fn int_of(&mut self, index: RelIndex) -> Option<ExprId> {
        let local = match index {
            RelIndex::None => return None,
            RelIndex::A0X => self.registers.address[0],
            RelIndex::A0Y => self.registers.address[1],
            RelIndex::AL => self.registers.loop_counter,
        };
        Some(self.b.get(local))
    }

    /// A float uniform slot (0-127, an `int`): c0-c95, or (1, 1, 1, 1) above.
    fn uniform_slot(&mut self, slot: ExprId) -> ExprId {
        let last = self.b.int(95);
        let over = self.b.gt(slot, last);
        let over = self.b.bind("past_c95", over);
        let safe = self.b.select(over, last, slot);
        let value = self
            .b
            .load(Place::GlobalElement(Global::FloatUniforms, safe));
        let ones = self.b.splat(Type::UVEC4, 1.0f32.to_bits());
        let over = self.b.broadcast(over, 4);
        self.b.select(over, ones, value)
    }

    /// A register's lanes and negation (docs/execution-model.md §3.1).
    fn operand(&mut self, source: &Source, register: ExprId) -> ExprId {
        let lanes: Vec<u8> = source.components().iter().map(|&c| c as u8).collect();
        let v = self.b.swizzle(register, &lanes);
        if source.negate {
            let sign = self.b.splat(Type::UVEC4, 0x8000_0000);
            self.b.xor(v, sign)
        } else {
            v
        }
    }

    /// The IEEE comparison `a test b` of f32 bits (false with a NaN, but `!=`), lane by lane,
    /// from the bits alone: hosts that flush subnormals compare them as zeros.
    fn compare_bits(&mut self, test: CompareOp, a: ExprId, c: ExprId) -> ExprId {
        let ty = self.b.ty(a);
        let name = format!(
            "pica_{}{}",
            test.name(),
            if ty.lanes == 1 {
                String::new()
            } else {
                ty.lanes.to_string()
            }
        );
        let bool_ty = ty.with_scalar(Scalar::Bool);
        let f = self
            .b
            .module
            .helper(&name, &[("a", ty), ("b", ty)], Some(bool_ty), |b, args| {
                let (a, c) = (args[0], args[1]);
                if let CompareOp::True(_) = test {
                    let t = b.splat(bool_ty, 1);
                    b.ret(Some(t));
                    return;
                }
                let key = |b: &mut FnBuilder, x: ExprId| {
                    // The order of the values as signed integers: -0 and +0 alike.
                    let magnitude = b.and_k(x, 0x7FFF_FFFF);
                    let magnitude = b.convert(magnitude, Scalar::Int);
                    let negative = b.ge_k(x, 0x8000_0000);
                    let zero = b.like(magnitude, 0);
                    let negated = b.sub(zero, magnitude);
                    b.select(negative, negated, magnitude)
                };
                let nan = |b: &mut FnBuilder, x: ExprId| {
                    let magnitude = b.and_k(x, 0x7FFF_FFFF);
                    b.gt_k(magnitude, crate::primitives::INFINITY)
                };
                let ka = key(b, a);
                let kc = key(b, c);
                let na = nan(b, a);
                let nc = nan(b, c);
                let unordered = b.or(na, nc);
                let ordered = b.not(unordered);
                let r = match test {
                    CompareOp::Eq => {
                        let eq = b.eq(ka, kc);
                        b.and(eq, ordered)
                    }
                    CompareOp::Ne => {
                        let ne = b.ne(ka, kc);
                        b.or(ne, unordered)
                    }
                    CompareOp::Lt => {
                        let r = b.lt(ka, kc);
                        b.and(r, ordered)
                    }
                    CompareOp::Le => {
                        let r = b.le(ka, kc);
                        b.and(r, ordered)
                    }
                    CompareOp::Gt => {
                        let r = b.gt(ka, kc);
                        b.and(r, ordered)
                    }
                    CompareOp::Ge => {
                        let r = b.ge(ka, kc);
                        b.and(r, ordered)
                    }
                    CompareOp::True(_) => unreachable!(),
                };
                b.ret(Some(r));
            });
        self.b.call(f, &[a, c])
    }

    /// MOVA's conversion of f32 bits `x` ([`shader::float24::arith::mova`]): truncation toward
    /// zero, saturating, NaN 0, from the bits alone.
    fn mova(&mut self, x: ExprId) -> ExprId {
        let f = self.b.module.helper(
            "pica_mova",
            &[("x", Type::UINT)],
            Some(Type::INT),
            |b, args| {
                let x = args[0];
                let magnitude = b.and_k(x, 0x7FFF_FFFF);
                let magnitude = b.bind("magnitude", magnitude);
                let negative = b.ge_k(x, 0x8000_0000);
                let negative = b.bind("negative", negative);
                let nan = b.gt_k(magnitude, crate::primitives::INFINITY);
                let small = b.lt_k(magnitude, 1.0f32.to_bits());
                let zero = b.or(nan, small);
                b.when(zero, |b| {
                    let r = b.int(0);
                    b.ret(Some(r));
                });
                // At least 2^31: saturate.
                let huge = b.ge_k(magnitude, 2_147_483_648.0f32.to_bits());
                b.when(huge, |b| {
                    let min = b.int(i32::MIN);
                    let max = b.int(i32::MAX);
                    let r = b.select(negative, min, max);
                    b.ret(Some(r));
                });
                let field = b.shr_k(magnitude, 23);
                let mantissa = b.and_k(magnitude, 0x7F_FFFF);
                let mantissa = b.or_k(mantissa, 0x80_0000);
                let mantissa = b.bind("mantissa", mantissa);
                let right = b.le_k(field, 150);
                let r = b.local("value", Type::UINT, [0; 4]);
                b.if_else(
                    right,
                    |b| {
                        let last = b.uint(150);
                        let amount = b.sub(last, field);
                        let v = b.shr(mantissa, amount);
                        b.set(r, v);
                    },
                    |b| {
                        let amount = b.sub_k(field, 150);
                        let v = b.shl(mantissa, amount);
                        b.set(r, v);
                    },
                );
                let v = b.get(r);
                let v = b.convert(v, Scalar::Int);
                let v = b.bind("magnitude_int", v);
                let zero_i = b.int(0);
                let negated = b.sub(zero_i, v);
                let result = b.select(negative, negated, v);
                b.ret(Some(result));
            },
        );
        self.b.call(f, &[x])
    }
}

impl OperationBackend for Emitter<'_, '_> {
    type Vector = ExprId;
    type Address = ExprId;
    type Flag = ExprId;

    fn read(&mut self, source: &Source) -> ExprId {
        let register = match source.register {
            SourceRegister::Input(n) => self.b.load(Place::Global(Global::Input(n))),
            SourceRegister::Temporary(n) => self.b.get(self.registers.temporaries[n as usize]),
            SourceRegister::Uniform { base, rel } => match self.int_of(rel) {
                None if (base as usize) < 96 => {
                    let index = self.b.opaque_index(base as u32);
                    self.b
                        .load(Place::GlobalElement(Global::FloatUniforms, index))
                }
                None => self.b.splat(Type::UVEC4, 1.0f32.to_bits()),
                Some(offset) => {
                    let slot =
                        relative_uniform_slot(&mut Indices { b: &mut *self.b }, base, offset);
                    let slot = self.b.bind("slot", slot);
                    self.uniform_slot(slot)
                }
            },
        };
        self.operand(source, register)
    }

    fn constant(&mut self, value: f32) -> ExprId {
        self.b.splat(Type::UVEC4, value.to_bits())
    }

    fn add(&mut self, a: ExprId, c: ExprId) -> ExprId {
        let p = self.precision;
        rule(self.b, p, "pica_add", &[a, c], |l, x| {
            lanes::add(l, x[0], x[1], p)
        })
    }
    fn mul(&mut self, a: ExprId, c: ExprId) -> ExprId {
        let p = self.precision;
        rule(self.b, p, "pica_mul", &[a, c], |l, x| {
            lanes::mul(l, x[0], x[1], p)
        })
    }
    fn mad(&mut self, a: ExprId, c: ExprId, d: ExprId) -> ExprId {
        let p = self.precision;
        rule(self.b, p, "pica_mad", &[a, c, d], |l, x| {
            lanes::mad(l, x[0], x[1], x[2], p)
        })
    }
    fn dot(&mut self, a: ExprId, c: ExprId, count: usize) -> ExprId {
        let p = self.precision;
        let name = if count == 3 { "pica_dp3" } else { "pica_dp4" };
        rule(self.b, p, name, &[a, c], |l, x| {
            lanes::dot(l, x[0], x[1], count, p)
        })
    }
    fn floor(&mut self, a: ExprId) -> ExprId {
        let p = self.precision;
        rule(self.b, p, "pica_flr", &[a], |l, x| lanes::flr(l, x[0], p))
    }
    fn reciprocal(&mut self, a: ExprId) -> ExprId {
        self.costly(Costly::Rcp, a)
    }
    fn reciprocal_sqrt(&mut self, a: ExprId) -> ExprId {
        self.costly(Costly::Rsq, a)
    }
    fn exp2(&mut self, a: ExprId) -> ExprId {
        self.costly(Costly::Ex2, a)
    }
    fn log2(&mut self, a: ExprId) -> ExprId {
        self.costly(Costly::Lg2, a)
    }

    fn select_if(
        &mut self,
        test: CompareOp,
        x: ExprId,
        y: ExprId,
        then: ExprId,
        otherwise: ExprId,
    ) -> ExprId {
        let mask = self.compare_bits(test, x, y);
        self.b.select(mask, then, otherwise)
    }

    fn lanes(&mut self, lanes: [LaneFrom<ExprId>; 4], used: u8) -> ExprId {
        let parts: Vec<ExprId> = lanes
            .iter()
            .enumerate()
            .map(|(i, from)| match *from {
                // An unused lane is +0 (any value would do).
                _ if used & (1 << i) == 0 => self.b.uint(0),
                LaneFrom::Vector(v) => self.b.lane(v, i as u8),
                LaneFrom::Constant(c) => self.b.uint(c.to_bits()),
            })
            .collect();
        self.b.construct(Type::UVEC4, &parts)
    }

    fn compare(&mut self, test: CompareOp, a: ExprId, c: ExprId, lane: usize) -> ExprId {
        let x = self.b.lane(a, lane as u8);
        let y = self.b.lane(c, lane as u8);
        let r = self.compare_bits(test, x, y);
        self.b.bind("flag", r)
    }

    fn set_cmp(&mut self, lane: usize, flag: ExprId) {
        if self.capturing() {
            return;
        }
        self.b.set(self.registers.cmp[lane], flag);
    }

    fn address(&mut self, a: ExprId, lane: usize) -> ExprId {
        let x = self.b.lane(a, lane as u8);
        let r = self.mova(x);
        // Bound: both lanes convert the source read with the old a0, before either is set.
        self.b.bind("address", r)
    }

    fn set_address(&mut self, lane: usize, value: ExprId) {
        if self.capturing() {
            return;
        }
        self.b.set(self.registers.address[lane], value);
    }

    fn write(&mut self, dst: DstReg, mask: DestMask, value: ExprId) {
        if self.capturing() {
            return;
        }
        let lanes: Vec<u8> = (0..4).filter(|&l| mask.lane(l)).map(|l| l as u8).collect();
        let value = self.b.swizzle(value, &lanes);
        let place = match dst.file_index() {
            (RegisterFile::Output, n) => match self.registers.geometry {
                // A geometry shader writes the bank written now (every written register has
                // a local there).
                Some(g) => Place::Local(g.current[n as usize].expect("a written output")),
                None => Place::Global(Global::Output(n)),
            },
            (_, n) => Place::Local(self.registers.temporaries[n as usize]),
        };
        self.b.store_lanes(place, &lanes, value);
    }
}

impl FlowOps for Emitter<'_, '_> {
    type Bit = ExprId;
    type Int = ExprId;

    fn constant(&mut self, value: bool) -> ExprId {
        self.b.boolean(value)
    }
    fn not(&mut self, a: ExprId) -> ExprId {
        self.b.not(a)
    }
    fn and(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b.and(a, c)
    }
    fn or(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b.or(a, c)
    }
    fn cmp_flag(&mut self, lane: usize) -> ExprId {
        self.b.get(self.registers.cmp[lane])
    }
    fn bool_uniform(&mut self, id: u8) -> ExprId {
        let bools = self.b.load(Place::Global(Global::BoolUniforms));
        let bit = self.b.shr_k(bools, id as u32);
        let bit = self.b.and_k(bit, 1);
        self.b.ne_k(bit, 0)
    }
    fn int_uniform(&mut self, id: u8, byte: usize) -> ExprId {
        let index = self.b.int(id as i32);
        let v = self
            .b
            .load(Place::GlobalElement(Global::IntUniforms, index));
        let v = self.b.lane(v, byte as u8);
        let v = self.b.and_k(v, 0xFF);
        self.b.convert(v, Scalar::Int)
    }
    fn add(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b.add(a, c)
    }
    fn select(&mut self, condition: ExprId, a: ExprId, c: ExprId) -> ExprId {
        self.b.select(condition, a, c)
    }
}

/// [`IndexOps`] on IR ints.
struct Indices<'a, 'm> {
    b: &'a mut FnBuilder<'m>,
}

impl IndexOps for Indices<'_, '_> {
    type Int = ExprId;
    type Bit = ExprId;

    fn int(&mut self, value: i32) -> ExprId {
        self.b.int(value)
    }
    fn add(&mut self, a: ExprId, c: ExprId) -> ExprId {
        self.b.add(a, c)
    }
    fn and(&mut self, a: ExprId, mask: i32) -> ExprId {
        self.b.and_k(a, mask as u32)
    }
    fn within(&mut self, a: ExprId, low: i32, high: i32) -> ExprId {
        let low = self.b.int(low);
        let high = self.b.int(high);
        let above = self.b.ge(a, low);
        let below = self.b.le(a, high);
        self.b.and(above, below)
    }
    fn select(&mut self, condition: ExprId, a: ExprId, c: ExprId) -> ExprId {
        self.b.select(condition, a, c)
    }
}
