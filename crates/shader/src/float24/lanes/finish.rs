//! How a rule finishes its arithmetic: [`Finish`], with the exact finish ([`Exactly`]) and the
//! fast paths' flagging finishes ([`Flagging`], [`FlaggingNan`], [`FlaggingSignedZeros`]).

use super::*;

/// How a rule finishes its arithmetic: the exact rules ([`Exactly`]: every product is the
/// [`sanitized_mul`], every result goes through [`round`]), or a fast path's ([`Flagging`]: a
/// plain product and [`round_flagging`], exact wherever nothing is flagged). Every rule below is
/// written once against this trait; the plain functions (`add`, `mul`, ...) are its exact form.
pub trait Finish<L: Elements> {
    /// An arithmetic result becoming a register value.
    fn round(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float;
    /// A dot product's sum (float24 modes) becoming a register value: [`Finish::round`] unless
    /// the finish knows better.
    #[inline(always)]
    fn round_dot_sum(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        self.round(l, v, p)
    }
    /// The product of two flushed factors, before rounding.
    fn product(&mut self, l: &mut L, a: L::Float, b: L::Float) -> L::Float;
    /// Whether a NaN result of [`Finish::round`] is flagged, so that a value this finish
    /// rounded needs no NaN test later.
    fn flags_nan_results(&self) -> bool;
    /// `v` made a NaN result in the elements of `nan` (a product skipped as zero whose other
    /// factor was a NaN): the canonical NaN there, or, for a fast path, those elements flagged.
    fn poison(&mut self, l: &mut L, nan: L::Mask, v: L::Float) -> L::Float;
    /// An operand of an arithmetic instruction as the rule reads it: [`flush`] (the default),
    /// or, for a fast path, a value equal to it wherever the finish does not flag.
    #[inline(always)]
    fn operand(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        flush(l, v, p)
    }
}

/// The exact finish: [`sanitized_mul`] and [`round`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Exactly;

impl<L: Elements> Finish<L> for Exactly {
    #[inline(always)]
    fn round(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        round(l, v, p)
    }
    #[inline(always)]
    fn product(&mut self, l: &mut L, a: L::Float, b: L::Float) -> L::Float {
        sanitized_mul(l, a, b)
    }
    #[inline(always)]
    fn flags_nan_results(&self) -> bool {
        false
    }
    #[inline(always)]
    fn poison(&mut self, l: &mut L, nan: L::Mask, v: L::Float) -> L::Float {
        let canonical = l.splat_bits(CANONICAL_NAN_BITS);
        let bits = l.bits_of(v);
        let r = l.select(nan, canonical, bits);
        l.float_of(r)
    }
}

/// The parts of [`Finish`] every fast path shares: the plain IEEE product (a product
/// [`sanitized_mul`] would change is a NaN, which the rounding that always follows flags) and
/// NaN results flagged in the finish's `unusual` elements.
macro_rules! fast_path_products {
    () => {
        #[inline(always)]
        fn product(&mut self, l: &mut L, a: L::Float, b: L::Float) -> L::Float {
            l.fmul(a, b)
        }
        #[inline(always)]
        fn flags_nan_results(&self) -> bool {
            true
        }
        #[inline(always)]
        fn poison(&mut self, l: &mut L, nan: L::Mask, v: L::Float) -> L::Float {
            flag_elements(l, &mut self.unusual, nan);
            v
        }
    };
}

/// The finish of a fast path that leaves rare values to an exact engine: [`round_flagging`],
/// accumulating its flags in `unusual`, and the plain IEEE product. A product that
/// [`sanitized_mul`] would change (inf·0, a NaN) is a NaN, which the rounding that always
/// follows a product flags, so every unflagged element is exact.
#[derive(Clone, Copy, Debug, Default)]
pub struct Flagging<M> {
    /// The elements flagged so far (`None`: nothing rounded yet).
    pub unusual: Option<M>,
}

impl<L: Elements> Finish<L> for Flagging<L::Mask> {
    #[inline(always)]
    fn round(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        round_flagging(l, v, p, &mut self.unusual)
    }
    fast_path_products!();
}

/// The finish of a fast path that leaves only NaNs to an exact one (the structure-of-arrays
/// JIT's second form, for groups its `Flagging` form flagged): [`round_flagging_nan`] (infinities and the range rules exact), accumulating its flags
/// in `unusual`, and the plain IEEE product (a product [`sanitized_mul`] would change is a NaN,
/// which is flagged).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlaggingNan<M> {
    /// The elements flagged so far (`None`: nothing rounded yet).
    pub unusual: Option<M>,
}

impl<L: Elements> Finish<L> for FlaggingNan<L::Mask> {
    #[inline(always)]
    fn round(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        round_flagging_nan(l, v, p, &mut self.unusual)
    }
    fast_path_products!();
}

/// The finish of a fast path that also leaves the sign of a zero result to its caller (the
/// scalar JIT's, docs/architecture.md, "Negative zeros left pending"): the plain IEEE product and
/// [`round_flagging_signed_zeros`], whose flags are the elements [`FlaggingSignedZeros::flagged`]
/// gives at the end. Where nothing is flagged, a result is the rule's, except that in the float24
/// modes a zero may be −0 where the rule gives +0; and the results are flushed up to that sign
/// (a value the input flush leaves unchanged, or −0), which this finish notes
/// ([`Elements::note_flushed`]) for an implementation that reads a −0 as +0's flush.
///
/// That is sound for the rules that flush their inputs and only add and multiply them (ADD,
/// MUL, MAD, the dot products), whose results do not depend on the sign of a zero input except
/// in the sign of a zero result, and for the comparisons; before any other use (a raw copy, a
/// negation it would make −0 of +0, RCP, RSQ, EX2, LG2, a register's home), the caller turns
/// such a −0 into +0.
///
/// It checks one of two things ([`Checks`]): the results it rounds (and the operands it reads,
/// for the input flush), or, in the float24 modes, only the operands, against bounds tight
/// enough that the rules that only add and multiply them never meet a range rule.
#[derive(Clone, Copy, Debug)]
pub struct FlaggingSignedZeros<B, M> {
    /// Elements flagged outright: a product skipped as zero whose other factor was a NaN, and
    /// in f32 mode the NaN results (`None`: none).
    pub unusual: Option<M>,
    /// Float24 modes: the largest unrounded magnitude rounded so far.
    largest: Option<B>,
    /// Float24 modes: the least magnitude rounded (unrounded) or read as an operand so far, as
    /// [`FlaggingSignedZeros::note_least`] offsets it (a zero greatest).
    least: Option<B>,
    /// What is checked.
    pub(super) checks: Checks,
}

/// What a [`FlaggingSignedZeros`] checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checks {
    /// Every result it rounds, against the range rules, and every operand it reads, against
    /// the input flush (a non-zero magnitude below 2^-62).
    Results,
    /// Float24 modes, for the rules that only add and multiply (ADD, MUL, MAD, the dot
    /// products, DST's product): the largest magnitude on the operands, the least on the
    /// results. An operand not known within 2^30 ([`OPERAND_GREATEST_BITS`]; NaNs and
    /// infinities beyond it) is flagged, so no product or sum is a NaN or beyond the float24
    /// range; a product or sum, and an operand not known flushed, non-zero below 2^-46
    /// ([`CHECKED_LEAST_BITS`]) is flagged, so no operand is one the input flush changes, no
    /// result one the range rules change, and a dot product's sums need no check at all
    /// (docs/architecture.md, "Whole invocations on the fast path"). Conservative: a few
    /// exact results (magnitudes in [2^-62, 2^-46), operands beyond 2^30) are flagged too.
    /// For an implementation that knows no factors ([`Elements::known_factor`]): a product
    /// with a known +1.0 may skip its rounding, and so its check.
    Operands,
}

impl Checks {
    /// The greatest magnitude not flagged, and the least non-zero one.
    #[inline(always)]
    const fn bounds(self) -> (u32, u32) {
        match self {
            // 2^-62 in every mode: the input flush's bound, and (at or above the bound below
            // which nearest-even rounds to a subnormal) a conservative one for results.
            Checks::Results => (MAX_FINITE_BITS, MIN_NORMAL_BITS),
            Checks::Operands => (OPERAND_GREATEST_BITS, CHECKED_LEAST_BITS),
        }
    }
}

impl<B, M> Default for FlaggingSignedZeros<B, M> {
    fn default() -> Self {
        FlaggingSignedZeros {
            unusual: None,
            largest: None,
            least: None,
            checks: Checks::Results,
        }
    }
}

impl<B, M> FlaggingSignedZeros<B, M> {
    /// A finish that checks operands ([`Checks::Operands`]; float24 modes).
    pub fn checking_operands() -> Self {
        Self::checking(Checks::Operands)
    }

    /// A finish that checks what `checks` says.
    pub fn checking(checks: Checks) -> Self {
        FlaggingSignedZeros {
            checks,
            ..Self::default()
        }
    }

    /// What it checks.
    pub fn checks(&self) -> Checks {
        self.checks
    }
}

impl<B: Copy, M: Copy> FlaggingSignedZeros<B, M> {
    /// Counts the magnitude of `bits` among the least ones, and returns it.
    #[inline(always)]
    pub(super) fn note_least<L: Elements<Bits = B, Mask = M>>(&mut self, l: &mut L, bits: B) -> B {
        let magnitude_mask = l.splat_bits(MAGNITUDE_BITS);
        let magnitude = l.and(bits, magnitude_mask);
        self.note_least_magnitude(l, magnitude);
        magnitude
    }

    /// Counts `magnitude` among the least ones.
    #[inline(always)]
    pub(super) fn note_least_magnitude<L: Elements<Bits = B, Mask = M>>(
        &mut self,
        l: &mut L,
        magnitude: B,
    ) {
        let magnitude_mask = l.splat_bits(MAGNITUDE_BITS);
        // magnitude − 1 + 2^31: a zero becomes the greatest i32, a magnitude m > 0 the least
        // ones in the order of m, so one minimum finds the least non-zero magnitude.
        let shifted = l.add_bits(magnitude, magnitude_mask);
        self.least = Some(match self.least {
            Some(least) => l.signed_min(least, shifted),
            None => shifted,
        });
    }

    /// Counts `magnitude` among the largest ones.
    #[inline(always)]
    pub(super) fn note_largest<L: Elements<Bits = B, Mask = M>>(
        &mut self,
        l: &mut L,
        magnitude: B,
    ) {
        self.largest = Some(match self.largest {
            Some(largest) => l.signed_max(largest, magnitude),
            None => magnitude,
        });
    }

    /// The two accumulated magnitudes, for a caller that keeps them across several finishes
    /// (the scalar JIT's whole invocations): the largest (the elements flagged outright
    /// counted as the greatest magnitude) and the least, offset as the least ones are kept (magnitude − 1 + 2^31 as a signed word, so that a zero
    /// is the greatest). `None`: nothing was read or flagged.
    pub fn accumulated<L: Elements<Bits = B, Mask = M>>(&self, l: &mut L) -> Option<(B, B)> {
        let mut largest = self.largest;
        if let Some(unusual) = self.unusual {
            let all = l.splat_bits(u32::MAX);
            let none = l.splat_bits(0);
            let flagged = l.select(unusual, all, none);
            let flagged = l.shift_right(flagged, 1);
            largest = Some(match largest {
                Some(largest) => l.signed_max(largest, flagged),
                None => flagged,
            });
        }
        let zero = l.splat_bits(0);
        let nothing_least = l.splat_bits(MAGNITUDE_BITS);
        match (largest, self.least) {
            (None, None) => None,
            (largest, least) => Some((largest.unwrap_or(zero), least.unwrap_or(nothing_least))),
        }
    }

    /// Whether [`FlaggingSignedZeros::flagged`] of what [`FlaggingSignedZeros::accumulated`]
    /// gave (several of them merged lane by lane by a signed maximum and a signed minimum, as
    /// plain words) flags any element, checked as `checks` says.
    #[inline]
    pub fn any_flagged_accumulated(checks: Checks, largest: [u32; 4], least: [u32; 4]) -> bool {
        let (greatest, least_bound) = checks.bounds();
        let least_bound = (least_bound - 1).wrapping_add(SIGN_BIT) as i32;
        let mut flagged = false;
        for (largest, least) in largest.into_iter().zip(least) {
            flagged |= largest as i32 > greatest as i32;
            flagged |= (least as i32) < least_bound;
        }
        flagged
    }

    /// The elements flagged by everything this finish rounded or read: those it flagged
    /// outright, and in the float24 modes those where a rounded magnitude was beyond the
    /// largest finite float24 (NaN and infinity included), or a rounded or read one was below
    /// 2^-62 without being zero (`None`: nothing was rounded, read or flagged).
    pub fn flagged<L: Elements<Bits = B, Mask = M>>(&self, l: &mut L) -> Option<M> {
        let mut unusual = self.unusual;
        let (greatest, least_bound) = self.checks.bounds();
        if let Some(largest) = self.largest {
            let greatest = l.splat_bits(greatest);
            let big = l.magnitude_above(largest, greatest);
            flag_elements(l, &mut unusual, big);
        }
        if let Some(least) = self.least {
            let bound = l.splat_bits((least_bound - 1).wrapping_add(SIGN_BIT));
            let small = l.signed_below(least, bound);
            flag_elements(l, &mut unusual, small);
        }
        unusual
    }
}

impl<L: Elements> Finish<L> for FlaggingSignedZeros<L::Bits, L::Mask> {
    #[inline(always)]
    fn round(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        round_flagging_signed_zeros(l, v, p, self)
    }
    /// Checking operands, a dot product's sum is only rounded: its terms are multiples of
    /// 2^-62 of at most 2^60 wherever nothing is flagged ([`Checks::Operands`]), so the range
    /// rules never change it.
    #[inline(always)]
    fn round_dot_sum(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        if self.checks != Checks::Operands || !p.is_f24() {
            return self.round(l, v, p);
        }
        let bits = l.bits_of(v);
        let uncleared = round_mantissa_uncleared(l, bits, p);
        let keep = l.splat_bits(!DROPPED_MANTISSA_BITS);
        let rounded = l.and(uncleared, keep);
        let r = l.float_of(rounded);
        l.note_flushed(r);
        r
    }
    /// The operand as it is, its magnitude counted among the least ones (float24 modes): an
    /// operand the input flush would change (a non-zero magnitude below 2^-62) is flagged, so
    /// wherever nothing is flagged it is its flush up to the sign of a zero. The flush's three
    /// operations leave the critical path. An operand known flushed is taken as it is.
    #[inline(always)]
    ///
    /// Checking operands ([`Checks::Operands`]), an operand not known within the bounds
    /// ([`Elements::known_bounded`]) has its magnitude counted among the largest ones too, and
    /// is noted within them ([`Elements::note_bounded`]: wherever nothing is flagged, it is).
    fn operand(&mut self, l: &mut L, v: L::Float, p: Precision) -> L::Float {
        if !p.is_f24() {
            return v;
        }
        if self.checks == Checks::Operands {
            let (v, flushed) = match l.flushed_already(v) {
                Some(flushed) => (flushed, true),
                None => (v, false),
            };
            let bounded = l.known_bounded(v);
            if bounded && flushed {
                return v;
            }
            let bits = l.bits_of(v);
            let magnitude_mask = l.splat_bits(MAGNITUDE_BITS);
            let magnitude = l.and(bits, magnitude_mask);
            if !bounded {
                self.note_largest(l, magnitude);
                l.note_bounded(v);
            }
            if !flushed {
                self.note_least_magnitude(l, magnitude);
                l.note_flushed(v);
            }
            return v;
        }
        if let Some(flushed) = l.flushed_already(v) {
            return flushed;
        }
        let bits = l.bits_of(v);
        self.note_least(l, bits);
        v
    }
    fast_path_products!();
}
