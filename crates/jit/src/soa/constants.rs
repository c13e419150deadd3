//! Specialisation on float uniforms that make work vanish (docs/batches.md, "Constant lanes").
//!
//! Matrices are full of zeros and ones (a projection has seven zeros, an affine transform's last
//! row is 0, 0, 0, 1), and every product with one of them is work whose result is known: a
//! product with +1.0 is the other factor, a product with zero is +0 (or a NaN, when the other
//! factor is one). A kernel compiled for the components of c0-c95 that are zero or +1.0 skips
//! that work; the values themselves still come from the uniforms at run time, so the kernel
//! serves every batch whose uniforms have zeros and ones in the same places, however the other
//! components change from draw to draw. The rules that skip the work are the float24 rules'
//! ([`shader::float24::lanes::KnownFactor`]); this module says which components a kernel may be
//! specialised on and what a set of uniforms gives.

use shader::float24::lanes::{KnownFactor, MAGNITUDE_BITS};
use shader::float24::{MIN_NORMAL_BITS, Precision};
use shader::isa::{
    BinaryOperation, Instruction, OperandDescriptor, RegisterFile, RelIndex, UnaryOp,
};
use shader::program::{ShaderProgram, Uniforms};

/// Words of a component set: one bit per component of c0-c95.
const WORDS: usize = 96 * 4 / 64;

/// The components of c0-c95 known to be zero and those known to be +1.0 (as the multiply reads
/// them: after the input flush in the float24 modes), bit `4 * register + component`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ConstantLanes {
    zero: [u64; WORDS],
    one: [u64; WORDS],
}

/// A set of components of c0-c95, bit `4 * register + component`: those a kernel may be
/// specialised on ([`ConstantLanes::candidates`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct UniformComponents([u64; WORDS]);

impl UniformComponents {
    /// No component.
    pub const NONE: UniformComponents = UniformComponents([0; WORDS]);

    /// How many components.
    pub fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether it has no component.
    pub fn is_empty(&self) -> bool {
        *self == UniformComponents::NONE
    }

    /// The registers it has a component of (bit n: cn).
    pub fn registers(&self) -> u128 {
        set_bits(self.0).fold(0, |registers, bit| registers | 1 << (bit / 4))
    }
}

/// The bits set in `words`, lowest first.
fn set_bits(words: [u64; WORDS]) -> impl Iterator<Item = usize> {
    (0..WORDS).flat_map(move |w| {
        let mut word = words[w];
        std::iter::from_fn(move || {
            (word != 0).then(|| {
                let bit = word.trailing_zeros() as usize;
                word &= word - 1;
                64 * w + bit
            })
        })
    })
}

/// What component `bit` of `uniforms` is as a factor in `precision`, if zero or +1.0.
fn classify(uniforms: &Uniforms, bit: usize, precision: Precision) -> Option<KnownFactor> {
    let value = uniforms.float[bit / 4][bit % 4];
    if reads_as_zero(value, precision) {
        Some(KnownFactor::Zero)
    } else if value.to_bits() == 1.0f32.to_bits() {
        Some(KnownFactor::One)
    } else {
        None
    }
}

/// Whether `value` reads as zero for the multiply in `precision`: below the smallest normal
/// float24 in magnitude (the input flush makes it +0) in the float24 modes, ±0 in f32 mode.
fn reads_as_zero(value: f32, precision: Precision) -> bool {
    let magnitude = value.to_bits() & MAGNITUDE_BITS;
    if precision.is_f24() {
        magnitude < MIN_NORMAL_BITS
    } else {
        magnitude == 0
    }
}

impl ConstantLanes {
    /// No component known: the kernel every batch can run.
    pub const NONE: ConstantLanes = ConstantLanes {
        zero: [0; WORDS],
        one: [0; WORDS],
    };

    /// Every component of `uniforms` that reads as zero or as +1.0 in `precision`.
    pub fn of(uniforms: &Uniforms, precision: Precision) -> ConstantLanes {
        Self::of_within(uniforms, precision, &UniformComponents([u64::MAX; WORDS]))
    }

    /// [`of`](Self::of), looking only at the components of `components` (the cost is per
    /// component looked at: a batch's key reads only its program's candidates).
    pub fn of_within(
        uniforms: &Uniforms,
        precision: Precision,
        components: &UniformComponents,
    ) -> ConstantLanes {
        let mut lanes = ConstantLanes::NONE;
        for bit in set_bits(components.0) {
            match classify(uniforms, bit, precision) {
                Some(KnownFactor::Zero) => lanes.zero[bit / 64] |= 1 << (bit % 64),
                Some(KnownFactor::One) => lanes.one[bit / 64] |= 1 << (bit % 64),
                None => {}
            }
        }
        lanes
    }

    /// The components a kernel for `program` may be specialised on: those a reachable MUL, MAD
    /// (its factors), DP3, DP4 or DPH reads as a factor, or a MOV copies into a temporary (from
    /// which it may become a factor), by a fixed index. Restricting a batch's [`of`](Self::of)
    /// to these keeps uniforms whose zeros do not matter (a colour, an offset) from making
    /// kernels that differ in nothing.
    pub fn candidates(program: &ShaderProgram) -> UniformComponents {
        let code: Vec<Instruction> = shader::isa::decode_words(&program.code[..]);
        let reachable = shader::flow::explore::reachable_addresses(&code, program.entry);
        let mut set = [0u64; WORDS];
        for (instruction, _) in code.iter().zip(reachable).filter(|(_, r)| *r) {
            let factors: &[usize] = match *instruction {
                Instruction::Binary { op, .. }
                    if matches!(
                        op.computes(),
                        BinaryOperation::Mul
                            | BinaryOperation::Dp3
                            | BinaryOperation::Dp4
                            | BinaryOperation::Dph
                    ) =>
                {
                    &[0, 1]
                }
                Instruction::Mad { .. } => &[0, 1],
                Instruction::Unary {
                    op: UnaryOp::Mov,
                    dst,
                    ..
                } if dst.file_index().0 == RegisterFile::Temporary => &[0],
                _ => &[],
            };
            let Some(desc) = instruction.desc() else {
                continue;
            };
            let desc = OperandDescriptor(
                program
                    .opdescs
                    .get(usize::from(desc))
                    .copied()
                    .unwrap_or_default(),
            );
            for source in instruction.sources(desc) {
                let (file, register) = source.reg.file_index();
                if !factors.contains(&source.slot)
                    || file != RegisterFile::FloatUniform
                    || source.rel != RelIndex::None
                    || register >= 96
                {
                    continue;
                }
                let components = source.components(desc);
                for component in 0..4 {
                    if components & (1 << component) != 0 {
                        let bit = 4 * usize::from(register) + component;
                        set[bit / 64] |= 1 << (bit % 64);
                    }
                }
            }
        }
        UniformComponents(set)
    }

    /// These lanes, kept only where `candidates` has them.
    pub fn within(self, candidates: &UniformComponents) -> ConstantLanes {
        ConstantLanes {
            zero: std::array::from_fn(|w| self.zero[w] & candidates.0[w]),
            one: std::array::from_fn(|w| self.one[w] & candidates.0[w]),
        }
    }

    /// Whether `uniforms` (in `precision`) have every component these lanes know, as they know
    /// it: a kernel specialised on them runs such a batch.
    pub fn hold_for(&self, uniforms: &Uniforms, precision: Precision) -> bool {
        // Only the known components are looked at: this runs once per batch.
        set_bits(self.zero).all(|bit| classify(uniforms, bit, precision) == Some(KnownFactor::Zero))
            && set_bits(self.one)
                .all(|bit| classify(uniforms, bit, precision) == Some(KnownFactor::One))
    }

    /// What component `component` of c`register` is known to be.
    pub fn at(&self, register: u8, component: usize) -> Option<KnownFactor> {
        let bit = 4 * usize::from(register) + component;
        if register >= 96 || component >= 4 {
            return None;
        }
        let has = |words: &[u64; WORDS]| words[bit / 64] & (1 << (bit % 64)) != 0;
        if has(&self.zero) {
            Some(KnownFactor::Zero)
        } else if has(&self.one) {
            Some(KnownFactor::One)
        } else {
            None
        }
    }

    /// How many components are known.
    pub fn count(&self) -> usize {
        self.zero
            .iter()
            .chain(&self.one)
            .map(|w| w.count_ones() as usize)
            .sum()
    }

    /// Whether no component is known.
    pub fn is_empty(&self) -> bool {
        *self == ConstantLanes::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_are_what_the_multiply_reads_as_zero() {
        let mut uniforms = Uniforms {
            float: [[0.5; 4]; 96],
            ..Uniforms::default()
        };
        uniforms.float[3] = [0.0, -0.0, f32::from_bits(0x2000_0000), 1.0];
        uniforms.float[4] = [f32::NAN, -1.0, 1.0 + f32::EPSILON, f32::from_bits(1)];
        let f24 = ConstantLanes::of(&uniforms, Precision::F24Truncate);
        assert_eq!(f24.at(3, 0), Some(KnownFactor::Zero));
        assert_eq!(f24.at(3, 1), Some(KnownFactor::Zero));
        // 2^-63 is flushed to +0 in the float24 modes, but is a number in f32 mode.
        assert_eq!(f24.at(3, 2), Some(KnownFactor::Zero));
        assert_eq!(f24.at(3, 3), Some(KnownFactor::One));
        assert_eq!(f24.at(4, 0), None);
        assert_eq!(f24.at(4, 1), None);
        assert_eq!(f24.at(4, 2), None);
        assert_eq!(f24.at(4, 3), Some(KnownFactor::Zero));
        assert_eq!(f24.count(), 5);
        let f32_mode = ConstantLanes::of(&uniforms, Precision::F32);
        assert_eq!(f32_mode.at(3, 2), None);
        assert_eq!(f32_mode.at(4, 3), None);
        assert_eq!(f32_mode.count(), 3);
        assert!(f24.hold_for(&uniforms, Precision::F24Truncate));
        assert!(!f24.hold_for(&uniforms, Precision::F32));
        uniforms.float[3][3] = 2.0;
        assert!(!f24.hold_for(&uniforms, Precision::F24Truncate));
        assert!(f24.within(&UniformComponents::NONE).is_empty());
        let some = UniformComponents([0b1010_0000_0000_0000, 0, 0, 0, 0, 1 << 63]);
        assert_eq!(some.count(), 3);
        assert_eq!(set_bits(some.0).collect::<Vec<_>>(), [13, 15, 383]);
        let within = ConstantLanes::of_within(&uniforms, Precision::F24Truncate, &some);
        assert_eq!(
            within,
            ConstantLanes::of(&uniforms, Precision::F24Truncate).within(&some)
        );
        assert_eq!(
            within.count(),
            1,
            "c3.y (bit 13) is zero, c3.w (bit 15) is 2.0, c95.w 0.5"
        );
    }
}
