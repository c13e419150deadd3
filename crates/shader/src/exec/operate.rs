//! Each data operation's meaning, stated once: which operands it reads and how, what it computes
//! on their lanes, and what it writes (docs/execution-model.md §3), as one visitor,
//! [`operate`], over a small backend trait, [`OperationBackend`].
//!
//! An engine implements the trait with its own values (the interpreter's `[f32; 4]`, the JITs'
//! IR values, a host-GPU translation's expressions) and never matches on an opcode: the
//! arithmetic methods are the float24 rules of [`crate::float24::lanes`] by name, finished as
//! the engine finishes them; everything else an instruction does is built here from a few
//! lane moves, selects and comparisons. Control flow is not here: it is [`crate::flow::step`].

use crate::float24::arith::{CompareOp, LITP_Y_LIMIT};
use crate::isa::{
    BinaryOperation, DestMask, DstReg, Operand, OperandDescriptor, Operation, RegisterFile,
    RelIndex, Swizzle, UnaryOp,
};

/// Where a source operand's register is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceRegister {
    /// vN.
    Input(u8),
    /// rN.
    Temporary(u8),
    /// Float uniform c`base`, offset by `rel`: the slot is
    /// [`crate::program::relative_uniform_slot`], and a slot past c95 reads (1, 1, 1, 1).
    Uniform {
        /// The slot named.
        base: u8,
        /// The address register offsetting it.
        rel: RelIndex,
    },
}

/// How an operation treats the sign of a zero in an operand: what an engine that may hold a
/// −0 where the model holds +0 (a fast path's result) must settle before the read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZeroSign {
    /// Alike either way: the rule flushes the operand and only adds and multiplies it (a −0
    /// changes only the sign of a zero result), or compares it (−0 = +0).
    Ignored,
    /// Passed on to the result (MOV): a −0 stays a −0 there, unless the operand is negated.
    PassedOn,
    /// Seen: the operand's zero sign changes the result (MAX, MIN and DST pass on one of two
    /// operands; LITP, RCP, RSQ, EX2 and LG2 compute from it).
    Seen,
}

/// One source operand as its operation reads it: the register, then the swizzle, then the
/// negation (docs/execution-model.md §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    /// The register read.
    pub register: SourceRegister,
    /// The swizzle: lane `i` of the operand is component `swizzle.component(i)` of the register.
    pub swizzle: Swizzle,
    /// Whether the swizzled value is negated (the sign bit flipped, NaNs and zeros included).
    pub negate: bool,
    /// The lanes of the swizzled operand the operation uses (bit `i`: lane `i`); the others may
    /// hold anything.
    pub needed: u8,
    /// How the operation treats a zero's sign in it.
    pub zero_sign: ZeroSign,
}

impl Source {
    /// `operand` of an operation with descriptor `desc`, of which it uses the lanes `needed`.
    pub fn of(
        operand: Operand,
        desc: OperandDescriptor,
        needed: u8,
        zero_sign: ZeroSign,
    ) -> Source {
        let Operand { reg, rel, slot } = operand;
        let register = match reg.file_index() {
            (RegisterFile::Input, n) => SourceRegister::Input(n),
            (RegisterFile::Temporary, n) => SourceRegister::Temporary(n),
            (_, n) => SourceRegister::Uniform { base: n, rel },
        };
        Source {
            register,
            swizzle: desc.swizzle(slot),
            negate: desc.negate(slot),
            needed,
            zero_sign,
        }
    }

    /// The component of the register that lane `lane` reads.
    #[inline]
    pub fn component(&self, lane: usize) -> usize {
        self.swizzle.component(lane)
    }

    /// The components of the register each lane reads.
    #[inline]
    pub fn components(&self) -> [usize; 4] {
        std::array::from_fn(|lane| self.swizzle.component(lane))
    }
}

/// Where one lane of a vector put together lane by lane ([`OperationBackend::lanes`]) comes
/// from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LaneFrom<V> {
    /// The same lane of this vector.
    Vector(V),
    /// This constant.
    Constant(f32),
}

/// What an engine provides for [`operate`]: reading and writing registers, the float24 rules,
/// and a few lane moves. A vector holds a register's four components (x, y, z, w), as the
/// engine holds them.
pub trait OperationBackend {
    /// A register's four components.
    type Vector: Copy;
    /// An address register value (a0.x, a0.y).
    type Address;
    /// A comparison's outcome (cmp.x, cmp.y).
    type Flag;

    /// Reads `source` ([`Source`]: register, swizzle, negation).
    fn read(&mut self, source: &Source) -> Self::Vector;

    /// Sees the operands of `operation` once they are all read, before it computes with them:
    /// an engine may replace them by values alike in the lanes each uses (`sources[i].needed`).
    fn operands_read(
        &mut self,
        operation: &Operation,
        sources: &[Source],
        operands: &mut [Self::Vector],
    ) {
        let _ = (operation, sources, operands);
    }

    /// `value` in every lane.
    fn constant(&mut self, value: f32) -> Self::Vector;

    /// ADD ([`crate::float24::lanes::add`]), lane by lane.
    fn add(&mut self, a: Self::Vector, b: Self::Vector) -> Self::Vector;
    /// MUL ([`crate::float24::lanes::mul`]), lane by lane.
    fn mul(&mut self, a: Self::Vector, b: Self::Vector) -> Self::Vector;
    /// MAD ([`crate::float24::lanes::mad`]): `a * b + c`, lane by lane.
    fn mad(&mut self, a: Self::Vector, b: Self::Vector, c: Self::Vector) -> Self::Vector;
    /// The dot product of the first `count` (3 or 4) lanes ([`crate::float24::lanes::dot`]),
    /// in every lane.
    fn dot(&mut self, a: Self::Vector, b: Self::Vector, count: usize) -> Self::Vector;
    /// FLR ([`crate::float24::lanes::flr`]), lane by lane.
    fn floor(&mut self, a: Self::Vector) -> Self::Vector;
    /// RCP of lane x ([`crate::float24::lanes::rcp`]), in every lane.
    fn reciprocal(&mut self, a: Self::Vector) -> Self::Vector;
    /// RSQ of lane x ([`crate::float24::lanes::rsq`]), in every lane.
    fn reciprocal_sqrt(&mut self, a: Self::Vector) -> Self::Vector;
    /// EX2 of lane x ([`crate::float24::lanes::ex2`]), in every lane.
    fn exp2(&mut self, a: Self::Vector) -> Self::Vector;
    /// LG2 of lane x ([`crate::float24::lanes::lg2`]), in every lane.
    fn log2(&mut self, a: Self::Vector) -> Self::Vector;

    /// Lane by lane: `if x test y { then } else { otherwise }`, `test` being `<`, `>` or `>=`
    /// (false when either is NaN).
    fn select_if(
        &mut self,
        test: CompareOp,
        x: Self::Vector,
        y: Self::Vector,
        then: Self::Vector,
        otherwise: Self::Vector,
    ) -> Self::Vector;
    /// A vector put together lane by lane; only the lanes `used` (bit `i`: lane `i`) matter.
    fn lanes(&mut self, lanes: [LaneFrom<Self::Vector>; 4], used: u8) -> Self::Vector;

    /// `a test b` on lane `lane` ([`CompareOp::compare`]).
    fn compare(
        &mut self,
        test: CompareOp,
        a: Self::Vector,
        b: Self::Vector,
        lane: usize,
    ) -> Self::Flag;
    /// Sets cmp.x (`lane` 0) or cmp.y (1).
    fn set_cmp(&mut self, lane: usize, flag: Self::Flag);
    /// MOVA's conversion of lane `lane` ([`crate::float24::arith::mova`]).
    fn address(&mut self, a: Self::Vector, lane: usize) -> Self::Address;
    /// Sets a0.x (`lane` 0) or a0.y (1).
    fn set_address(&mut self, lane: usize, value: Self::Address);

    /// Writes the lanes of `value` that `mask` enables to `dst` (never an empty mask).
    fn write(&mut self, dst: DstReg, mask: DestMask, value: Self::Vector);
}

/// How an operation treats a zero's sign in its operands ([`ZeroSign`]).
pub fn zero_sign(operation: &Operation) -> ZeroSign {
    match *operation {
        Operation::Binary {
            op: BinaryOperation::Max | BinaryOperation::Min | BinaryOperation::Dst,
            ..
        } => ZeroSign::Seen,
        Operation::Unary { op, .. } => match op {
            UnaryOp::Flr => ZeroSign::Ignored,
            UnaryOp::Mov => ZeroSign::PassedOn,
            _ => ZeroSign::Seen,
        },
        _ => ZeroSign::Ignored,
    }
}

/// An operation with its operands resolved once ([`Source`]), to be performed many times
/// ([`Prepared::perform`]): what an engine that decodes once and runs often keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The operation.
    pub operation: Operation,
    /// Its operand descriptor.
    pub desc: OperandDescriptor,
    sources: [Source; 3],
    count: u8,
}

impl Prepared {
    /// `operation`, whose operand descriptor is `desc`.
    pub fn new(operation: Operation, desc: OperandDescriptor) -> Prepared {
        let needed = operation.source_lanes(desc);
        let zero_sign = zero_sign(&operation);
        let mut sources = [Source {
            register: SourceRegister::Temporary(0),
            swizzle: Swizzle::IDENTITY,
            negate: false,
            needed: 0,
            zero_sign,
        }; 3];
        let mut count = 0;
        for (source, operand) in sources.iter_mut().zip(operation.operands()) {
            *source = Source::of(operand, desc, needed[count], zero_sign);
            count += 1;
        }
        Prepared {
            operation,
            desc,
            sources,
            count: count as u8,
        }
    }

    /// The operands as the operation reads them, in slot order.
    #[inline]
    pub fn sources(&self) -> &[Source] {
        &self.sources[..self.count as usize]
    }

    /// Performs the operation on `backend`.
    #[inline(always)]
    pub fn perform<B: OperationBackend>(&self, backend: &mut B) {
        perform(backend, &self.operation, self.desc, self.sources())
    }
}

/// Performs `operation`, whose operand descriptor is `desc`, on `backend`.
#[inline(always)]
pub fn operate<B: OperationBackend>(
    backend: &mut B,
    operation: &Operation,
    desc: OperandDescriptor,
) {
    Prepared::new(*operation, desc).perform(backend)
}

/// Performs `operation` (descriptor `desc`), whose operands are `sources`.
#[inline(always)]
fn perform<B: OperationBackend>(
    backend: &mut B,
    operation: &Operation,
    desc: OperandDescriptor,
    sources: &[Source],
) {
    let mask = desc.dest_mask();
    // A write of no lane computes nothing anyone sees; LITP, MOVA and CMP set flags or
    // addresses whatever the mask.
    let writes = matches!(
        operation,
        Operation::Binary { .. }
            | Operation::Mad { .. }
            | Operation::Unary {
                op: UnaryOp::Mov
                    | UnaryOp::Flr
                    | UnaryOp::Rcp
                    | UnaryOp::Rsq
                    | UnaryOp::Ex2
                    | UnaryOp::Lg2,
                ..
            }
    );
    if writes && mask.0 == 0 {
        return;
    }
    let count = sources.len();
    let mut operands: [B::Vector; 3] = {
        let first = backend.read(&sources[0]);
        let second = match sources.get(1) {
            Some(source) => backend.read(source),
            None => first,
        };
        let third = match sources.get(2) {
            Some(source) => backend.read(source),
            None => first,
        };
        [first, second, third]
    };
    backend.operands_read(operation, sources, &mut operands[..count]);
    let [a, b, c] = operands;
    let result = match *operation {
        Operation::Binary { op, .. } => match op {
            BinaryOperation::Add => backend.add(a, b),
            BinaryOperation::Mul => backend.mul(a, b),
            // `(a > b) ? a : b` on raw values (x86 `maxps`): max(NaN, 0) = 0, max(0, NaN) = NaN,
            // and MIN alike with `<`.
            BinaryOperation::Max => backend.select_if(CompareOp::Gt, a, b, a, b),
            BinaryOperation::Min => backend.select_if(CompareOp::Lt, a, b, a, b),
            // 1.0 when `a >= b` (SGE) or `a < b` (SLT), raw IEEE comparisons: a NaN gives 0.0.
            BinaryOperation::Sge | BinaryOperation::Slt => {
                let test = if op == BinaryOperation::Sge {
                    CompareOp::Ge
                } else {
                    CompareOp::Lt
                };
                let one = backend.constant(1.0);
                let zero = backend.constant(0.0);
                backend.select_if(test, a, b, one, zero)
            }
            BinaryOperation::Dp3 => backend.dot(a, b, 3),
            BinaryOperation::Dp4 => backend.dot(a, b, 4),
            // DP4 with a.w = 1.
            BinaryOperation::Dph => {
                let a = backend.lanes(
                    [
                        LaneFrom::Vector(a),
                        LaneFrom::Vector(a),
                        LaneFrom::Vector(a),
                        LaneFrom::Constant(1.0),
                    ],
                    0b1111,
                );
                backend.dot(a, b, 4)
            }
            // (1, a.y * b.y, a.z, b.w).
            BinaryOperation::Dst => {
                let product = backend.mul(a, b);
                backend.lanes(
                    [
                        LaneFrom::Constant(1.0),
                        LaneFrom::Vector(product),
                        LaneFrom::Vector(a),
                        LaneFrom::Vector(b),
                    ],
                    mask.lanes(),
                )
            }
        },
        Operation::Unary { op, .. } => match op {
            UnaryOp::Mov => a,
            UnaryOp::Flr => backend.floor(a),
            UnaryOp::Rcp => backend.reciprocal(a),
            UnaryOp::Rsq => backend.reciprocal_sqrt(a),
            UnaryOp::Ex2 => backend.exp2(a),
            UnaryOp::Lg2 => backend.log2(a),
            // (max(x, 0), y clamped to ±LITP_Y_LIMIT with NaN passed on, 0, max(w, 0)), max
            // being MAX's (so a NaN x or w gives +0); cmp is (x >= 0, w >= 0).
            UnaryOp::Litp => {
                let zero = backend.constant(0.0);
                let positive = backend.select_if(CompareOp::Gt, a, zero, a, zero);
                let low = backend.constant(-LITP_Y_LIMIT);
                let high = backend.constant(LITP_Y_LIMIT);
                let raised = backend.select_if(CompareOp::Lt, a, low, low, a);
                let clamped = backend.select_if(CompareOp::Gt, raised, high, high, raised);
                let result = backend.lanes(
                    [
                        LaneFrom::Vector(positive),
                        LaneFrom::Vector(clamped),
                        LaneFrom::Constant(0.0),
                        LaneFrom::Vector(positive),
                    ],
                    mask.lanes(),
                );
                for (flag, lane) in [(0, 0), (1, 3)] {
                    let non_negative = backend.compare(CompareOp::Ge, a, zero, lane);
                    backend.set_cmp(flag, non_negative);
                }
                if mask.0 == 0 {
                    return;
                }
                result
            }
        },
        // Both lanes convert the source (read relative to the old a0) before either is set.
        Operation::Mova { .. } => {
            let x = mask.lane(0).then(|| backend.address(a, 0));
            let y = mask.lane(1).then(|| backend.address(a, 1));
            for (lane, value) in [x, y].into_iter().enumerate() {
                if let Some(value) = value {
                    backend.set_address(lane, value);
                }
            }
            return;
        }
        Operation::Cmp { cmp_x, cmp_y, .. } => {
            let x = backend.compare(cmp_x, a, b, 0);
            let y = backend.compare(cmp_y, a, b, 1);
            backend.set_cmp(0, x);
            backend.set_cmp(1, y);
            return;
        }
        Operation::Mad { .. } => backend.mad(a, b, c),
    };
    let dst = operation
        .destination()
        .expect("an operation that writes has a destination");
    backend.write(dst, mask, result);
}
