//! The arithmetic rules, each once: ADD, MUL, MAD, the dot products and their summation order,
//! RCP, RSQ, EX2, LG2 and FLR, in a plain (exact) form and a `_by` form over a [`Finish`].

use super::*;

/// ADD: round(flush a + flush b).
#[inline(always)]
pub fn add<L: Elements>(l: &mut L, a: L::Float, b: L::Float, p: Precision) -> L::Float {
    add_by(l, &mut Exactly, a, b, p)
}

/// [`add`] finished by `fin`.
#[inline(always)]
pub fn add_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    p: Precision,
) -> L::Float {
    let a = fin.operand(l, a, p);
    let b = fin.operand(l, b, p);
    let sum = l.fadd(a, b);
    fin.round(l, sum, p)
}

/// MUL: round(sanitized(flush a · flush b)).
#[inline(always)]
pub fn mul<L: Elements>(l: &mut L, a: L::Float, b: L::Float, p: Precision) -> L::Float {
    mul_by(l, &mut Exactly, a, b, p)
}

/// [`mul`] finished by `fin`.
#[inline(always)]
pub fn mul_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    p: Precision,
) -> L::Float {
    let a = fin.operand(l, a, p);
    let b = fin.operand(l, b, p);
    match product_term(l, fin, a, b, p, p.is_f24(), false) {
        Term::Rounded(v) => v,
        Term::Vanished(nan) => {
            let zero = l.splat(0.0);
            poisoned(l, fin, nan, zero)
        }
    }
}

/// A rounded product as the rules see it once known factors are taken into account.
pub(super) enum Term<F, M> {
    /// The rounded product.
    Rounded(F),
    /// +0, except a NaN in the elements of the mask (`None`: nowhere): a factor is known to be
    /// zero, and the other one was a NaN there.
    Vanished(Option<M>),
}

/// `round(product(a, b))` of two flushed factors, skipping what a [`KnownFactor`] makes vanish
/// (docs/batches.md, "Constant lanes"):
/// - a factor of +1.0: the product is the other factor exactly (a NaN stays a NaN, which the
///   rounding makes canonical), so only the rounding remains, and none when the other factor is
///   rounded already (rounding is idempotent);
/// - a factor of zero, where `zero_vanishes` (the caller adds the product to something, or the
///   mode turns every zero product into +0): the product is +0 (the multiply's inf·0 = 0
///   included), or a NaN where the other factor is one; that factor needs no NaN test when the
///   finish flags NaN results and rounded it.
///
/// In f32 mode a product that is `summed` (a MAD's or a dot product's) is not rounded: there
/// rounding is only NaN canonicalisation, and a NaN term makes the sum a NaN, which the sum's
/// own rounding makes canonical, so the result is the same bits.
#[inline(always)]
pub(super) fn product_term<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    p: Precision,
    zero_vanishes: bool,
    summed: bool,
) -> Term<L::Float, L::Mask> {
    let round = |l: &mut L, fin: &mut F, v: L::Float| {
        if summed && p == Precision::F32 {
            v
        } else {
            fin.round(l, v, p)
        }
    };
    let known = [l.known_factor(a), l.known_factor(b)];
    if known == [None, None] {
        let product = fin.product(l, a, b);
        return Term::Rounded(round(l, fin, product));
    }
    if zero_vanishes {
        for (factor, other, other_known) in [(known[0], b, known[1]), (known[1], a, known[0])] {
            if factor == Some(KnownFactor::Zero) {
                let nan = if other_known.is_some() || fin.flags_nan_results() && l.is_rounded(other)
                {
                    None
                } else {
                    Some(l.is_nan(other))
                };
                return Term::Vanished(nan);
            }
        }
    }
    for (factor, other) in [(known[1], a), (known[0], b)] {
        if factor == Some(KnownFactor::One) {
            if l.is_rounded(other) {
                return Term::Rounded(other);
            }
            return Term::Rounded(round(l, fin, other));
        }
    }
    let product = fin.product(l, a, b);
    Term::Rounded(round(l, fin, product))
}

/// `v`, a NaN wherever `nan` says.
#[inline(always)]
pub(super) fn poisoned<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    nan: Option<L::Mask>,
    v: L::Float,
) -> L::Float {
    match nan {
        Some(nan) => fin.poison(l, nan, v),
        None => v,
    }
}

/// Two NaN masks as one.
#[inline(always)]
pub(super) fn either_nan<L: Elements>(
    l: &mut L,
    a: Option<L::Mask>,
    b: Option<L::Mask>,
) -> Option<L::Mask> {
    match (a, b) {
        (Some(a), Some(b)) => Some(l.either(a, b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// MAD: round(MUL(a, b) + flush c): the product is rounded before the addition.
#[inline(always)]
pub fn mad<L: Elements>(
    l: &mut L,
    a: L::Float,
    b: L::Float,
    c: L::Float,
    p: Precision,
) -> L::Float {
    mad_by(l, &mut Exactly, a, b, c, p)
}

/// [`mad`] finished by `fin`.
#[inline(always)]
pub fn mad_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    c: L::Float,
    p: Precision,
) -> L::Float {
    let a = fin.operand(l, a, p);
    let b = fin.operand(l, b, p);
    let c = fin.operand(l, c, p);
    // A product of +0 adds nothing in the float24 modes (c is flushed, so never -0); in f32
    // mode a -0 product would turn a -0 addend into +0, so the product is kept there.
    match product_term(l, fin, a, b, p, p.is_f24(), true) {
        Term::Rounded(product) => {
            let sum = l.fadd(product, c);
            fin.round(l, sum, p)
        }
        Term::Vanished(nan) => {
            let sum = if l.is_rounded(c) {
                c
            } else {
                fin.round(l, c, p)
            };
            poisoned(l, fin, nan, sum)
        }
    }
}

/// The sum of a dot product's products (`products[i]` = MUL of lane i of both sources; three
/// for DP3, four for DP4 and DPH): in the float24 modes pairwise, rounded at each step
/// (`round(round(p0 + p1) + p2)`, `round(round(p0 + p1) + round(p2 + p3))`); in f32 mode left to
/// right from +0 (`((0 + p0) + p1) + p2 ...`), rounded once.
#[inline(always)]
pub fn dot_sum<L: Elements>(l: &mut L, products: &[L::Float], p: Precision) -> L::Float {
    dot_sum_by(l, &mut Exactly, products, p)
}

/// [`dot_sum`] finished by `fin`.
#[inline(always)]
pub fn dot_sum_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    products: &[L::Float],
    p: Precision,
) -> L::Float {
    let mut terms = [None; 4];
    for (term, &product) in terms.iter_mut().zip(products) {
        *term = Some(product);
    }
    sum_terms(l, fin, &terms[..products.len()], p)
}

/// The dot product's sum ([`dot_sum`]) of the products that did not vanish (`None`: a +0
/// product). Adding +0 changes nothing it is skipped for: in the float24 modes a rounded term
/// is never -0; in f32 mode the running sum starts at +0 and so is never -0 either.
#[inline(always)]
pub(super) fn sum_terms<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    terms: &[Option<L::Float>],
    p: Precision,
) -> L::Float {
    debug_assert!(terms.len() == 3 || terms.len() == 4);
    if p.is_f24() {
        let first = pair_sum(l, fin, terms[0], terms[1], p);
        let second = if let [_, _, t2, t3] = *terms {
            pair_sum(l, fin, t2, t3, p)
        } else {
            terms[2]
        };
        match pair_sum(l, fin, first, second, p) {
            Some(sum) => sum,
            None => l.splat(0.0),
        }
    } else {
        let mut sum = l.splat(0.0);
        for &term in terms.iter().flatten() {
            sum = l.fadd(sum, term);
        }
        fin.round(l, sum, p)
    }
}

/// One rounded step of the float24 modes' pairwise sum; a vanished (+0) term adds nothing.
#[inline(always)]
pub(super) fn pair_sum<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: Option<L::Float>,
    b: Option<L::Float>,
    p: Precision,
) -> Option<L::Float> {
    match (a, b) {
        (Some(a), Some(b)) => {
            let sum = l.fadd(a, b);
            Some(fin.round_dot_sum(l, sum, p))
        }
        (one, None) | (None, one) => one,
    }
}

/// DP3 (`pairs.len()` = 3), DP4 and DPH (4) on one component of many vertices: `pairs[i]` are
/// the two factors of product i (DPH's fourth first factor is the constant 1.0). The products
/// are MULs, summed by [`dot_sum`], with what [`KnownFactor`]s make vanish skipped: a zero
/// product drops out of the sum in every mode (adding +0 never changes the running sum).
#[inline(always)]
pub fn dot_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    pairs: &[(L::Float, L::Float)],
    p: Precision,
) -> L::Float {
    let mut nan = None;
    let mut terms = [None; 4];
    for (term, &(a, b)) in terms.iter_mut().zip(pairs) {
        let a = fin.operand(l, a, p);
        let b = fin.operand(l, b, p);
        *term = match product_term(l, fin, a, b, p, true, true) {
            Term::Rounded(v) => Some(v),
            Term::Vanished(poison) => {
                nan = either_nan(l, nan, poison);
                None
            }
        };
    }
    let sum = sum_terms(l, fin, &terms[..pairs.len()], p);
    poisoned(l, fin, nan, sum)
}

/// DP3 (`lanes` = 3) and DP4 (4) of `a` and `b`, in every lane: the products are a lane-wise
/// MUL, summed by [`dot_sum`].
#[inline(always)]
pub fn dot<L: Lanes>(l: &mut L, a: L::Float, b: L::Float, lanes: usize, p: Precision) -> L::Float {
    dot_lanes_by(l, &mut Exactly, a, b, lanes, p)
}

/// [`dot`] finished by `fin`.
#[inline(always)]
pub fn dot_lanes_by<L: Lanes, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    lanes: usize,
    p: Precision,
) -> L::Float {
    debug_assert!(lanes == 3 || lanes == 4);
    // Summed: in f32 mode not rounded (see `product_term`), and f32 mode flushes nothing.
    let products = if p == Precision::F32 {
        fin.product(l, a, b)
    } else {
        mul_by(l, fin, a, b, p)
    };
    let mut terms = [products; 4];
    for (lane, term) in terms.iter_mut().enumerate().take(lanes) {
        *term = l.broadcast(products, lane);
    }
    dot_sum_by(l, fin, &terms[..lanes], p)
}

/// DPH: DP4 with a.w = 1.
#[inline(always)]
pub fn dph<L: Lanes>(l: &mut L, a: L::Float, b: L::Float, p: Precision) -> L::Float {
    dph_by(l, &mut Exactly, a, b, p)
}

/// [`dph`] finished by `fin`.
#[inline(always)]
pub fn dph_by<L: Lanes, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    b: L::Float,
    p: Precision,
) -> L::Float {
    let a = l.with_lane(a, 3, 1.0);
    dot_lanes_by(l, fin, a, b, 4, p)
}

/// RCP of every element: round(1 / flush x).
#[inline(always)]
pub fn rcp_each<L: Elements>(l: &mut L, x: L::Float, p: Precision) -> L::Float {
    rcp_each_by(l, &mut Exactly, x, p)
}

/// [`rcp_each`] finished by `fin`.
#[inline(always)]
pub fn rcp_each_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    x: L::Float,
    p: Precision,
) -> L::Float {
    let x = fin.operand(l, x, p);
    let one = l.splat(1.0);
    let q = l.fdiv(one, x);
    fin.round(l, q, p)
}

/// RSQ of every element: round(1 / sqrt(flush x)).
#[inline(always)]
pub fn rsq_each<L: Elements>(l: &mut L, x: L::Float, p: Precision) -> L::Float {
    rsq_each_by(l, &mut Exactly, x, p)
}

/// [`rsq_each`] finished by `fin`.
#[inline(always)]
pub fn rsq_each_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    x: L::Float,
    p: Precision,
) -> L::Float {
    let x = fin.operand(l, x, p);
    let root = l.sqrt(x);
    let one = l.splat(1.0);
    let q = l.fdiv(one, root);
    fin.round(l, q, p)
}

/// EX2 and LG2: `round(f(flush x))`, with `f` the deterministic [`transcendental::exp2`] or
/// [`transcendental::log2`] as the caller applies it.
#[inline(always)]
pub(super) fn transcendental_rule<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    x: L::Float,
    p: Precision,
    f: impl FnOnce(&mut L, L::Float) -> L::Float,
) -> L::Float {
    let x = fin.operand(l, x, p);
    let r = f(l, x);
    fin.round(l, r, p)
}

/// EX2 of every element: round(exp2(flush x)) with [`transcendental::exp2`].
#[inline(always)]
pub fn ex2_each<L: Elements>(l: &mut L, x: L::Float, p: Precision) -> L::Float {
    ex2_each_by(l, &mut Exactly, x, p)
}

/// [`ex2_each`] finished by `fin`.
#[inline(always)]
pub fn ex2_each_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    x: L::Float,
    p: Precision,
) -> L::Float {
    transcendental_rule(l, fin, x, p, L::exp2_each)
}

/// LG2 of every element: round(log2(flush x)) with [`transcendental::log2`].
#[inline(always)]
pub fn lg2_each<L: Elements>(l: &mut L, x: L::Float, p: Precision) -> L::Float {
    lg2_each_by(l, &mut Exactly, x, p)
}

/// [`lg2_each`] finished by `fin`.
#[inline(always)]
pub fn lg2_each_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    x: L::Float,
    p: Precision,
) -> L::Float {
    transcendental_rule(l, fin, x, p, L::log2_each)
}

/// RCP of lane 0, in every lane ([`rcp_each`]).
#[inline(always)]
pub fn rcp<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    let x = l.broadcast(a, 0);
    rcp_each(l, x, p)
}

/// RSQ of lane 0, in every lane ([`rsq_each`]).
#[inline(always)]
pub fn rsq<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    let x = l.broadcast(a, 0);
    rsq_each(l, x, p)
}

/// EX2 of lane 0, in every lane ([`ex2_each`], computed once).
#[inline(always)]
pub fn ex2<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    transcendental_rule(l, &mut Exactly, a, p, L::exp2_first)
}

/// LG2 of lane 0, in every lane ([`lg2_each`], computed once).
#[inline(always)]
pub fn lg2<L: Lanes>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    transcendental_rule(l, &mut Exactly, a, p, L::log2_first)
}

/// FLR: round(floor(flush x)), element by element.
#[inline(always)]
pub fn flr<L: Elements>(l: &mut L, a: L::Float, p: Precision) -> L::Float {
    flr_by(l, &mut Exactly, a, p)
}

/// [`flr`] finished by `fin`.
#[inline(always)]
pub fn flr_by<L: Elements, F: Finish<L>>(
    l: &mut L,
    fin: &mut F,
    a: L::Float,
    p: Precision,
) -> L::Float {
    let x = fin.operand(l, a, p);
    let f = l.floor(x);
    fin.round(l, f, p)
}
