//! [`Elements`] on fixed arrays of `N` f32 values: one register component of `N` vertices.
//!
//! Every operation is a plain loop over fixed-size arrays with no per-element branch, so LLVM
//! turns it into vector instructions of the host. Masks are all-ones or all-zeros words, so a
//! select is bitwise.

use shader::float24::lanes::Elements;
use shader::float24::transcendental;

/// One component of `N` vertices (the structure-of-arrays vector of the vectorised
/// interpreter).
#[derive(Clone, Copy, Debug, Default)]
pub struct Wide<const N: usize>;

/// All ones (true) or zero (false).
#[inline(always)]
fn mask_of(b: bool) -> u32 {
    (b as u32).wrapping_neg()
}

#[inline(always)]
pub(super) fn each<T: Copy, U: Copy + Default, const N: usize>(
    a: [T; N],
    f: impl Fn(T) -> U,
) -> [U; N] {
    let mut r = [U::default(); N];
    for (out, x) in r.iter_mut().zip(a) {
        *out = f(x);
    }
    r
}

#[inline(always)]
pub(super) fn pairwise<T: Copy, U: Copy + Default, const N: usize>(
    a: [T; N],
    b: [T; N],
    f: impl Fn(T, T) -> U,
) -> [U; N] {
    let mut r = [U::default(); N];
    for ((out, x), y) in r.iter_mut().zip(a).zip(b) {
        *out = f(x, y);
    }
    r
}

/// Element-wise predicate as a mask.
#[inline(always)]
pub(super) fn mask_pairwise<T: Copy, const N: usize>(
    a: [T; N],
    b: [T; N],
    f: impl Fn(T, T) -> bool,
) -> [u32; N] {
    pairwise(a, b, |x, y| mask_of(f(x, y)))
}

impl<const N: usize> Elements for Wide<N> {
    type Float = [f32; N];
    type Bits = [u32; N];
    type Mask = [u32; N];

    #[inline(always)]
    fn bits_of(&mut self, v: [f32; N]) -> [u32; N] {
        each(v, f32::to_bits)
    }
    #[inline(always)]
    fn float_of(&mut self, v: [u32; N]) -> [f32; N] {
        each(v, f32::from_bits)
    }
    #[inline(always)]
    fn splat_bits(&mut self, bits: u32) -> [u32; N] {
        [bits; N]
    }
    #[inline(always)]
    fn and(&mut self, a: [u32; N], b: [u32; N]) -> [u32; N] {
        pairwise(a, b, |x, y| x & y)
    }
    #[inline(always)]
    fn or(&mut self, a: [u32; N], b: [u32; N]) -> [u32; N] {
        pairwise(a, b, |x, y| x | y)
    }
    #[inline(always)]
    fn add_bits(&mut self, a: [u32; N], b: [u32; N]) -> [u32; N] {
        pairwise(a, b, u32::wrapping_add)
    }
    #[inline(always)]
    fn shift_right(&mut self, a: [u32; N], amount: u32) -> [u32; N] {
        each(a, |x| x >> amount)
    }
    #[inline(always)]
    fn below(&mut self, a: [u32; N], b: [u32; N]) -> [u32; N] {
        mask_pairwise(a, b, |x, y| x < y)
    }
    #[inline(always)]
    fn above(&mut self, a: [u32; N], b: [u32; N]) -> [u32; N] {
        mask_pairwise(a, b, |x, y| x > y)
    }
    #[inline(always)]
    fn magnitude_below(&mut self, a: [u32; N], b: [u32; N]) -> [u32; N] {
        mask_pairwise(a, b, |x, y| (x as i32) < (y as i32))
    }
    #[inline(always)]
    fn magnitude_above(&mut self, a: [u32; N], b: [u32; N]) -> [u32; N] {
        mask_pairwise(a, b, |x, y| (x as i32) > (y as i32))
    }
    #[inline(always)]
    fn is_nan(&mut self, a: [f32; N]) -> [u32; N] {
        each(a, |x| mask_of(x.is_nan()))
    }
    #[inline(always)]
    fn is_number(&mut self, a: [f32; N]) -> [u32; N] {
        each(a, |x| mask_of(!x.is_nan()))
    }
    #[inline(always)]
    fn both(&mut self, a: [u32; N], b: [u32; N]) -> [u32; N] {
        pairwise(a, b, |x, y| x & y)
    }
    #[inline(always)]
    fn either(&mut self, a: [u32; N], b: [u32; N]) -> [u32; N] {
        pairwise(a, b, |x, y| x | y)
    }
    #[inline(always)]
    fn select(&mut self, mask: [u32; N], a: [u32; N], b: [u32; N]) -> [u32; N] {
        let mut r = [0; N];
        for i in 0..N {
            r[i] = (a[i] & mask[i]) | (b[i] & !mask[i]);
        }
        r
    }
    #[inline(always)]
    fn clear_where(&mut self, mask: [u32; N], bits: [u32; N]) -> [u32; N] {
        pairwise(mask, bits, |m, x| x & !m)
    }
    #[inline(always)]
    fn fadd(&mut self, a: [f32; N], b: [f32; N]) -> [f32; N] {
        pairwise(a, b, |x, y| x + y)
    }
    #[inline(always)]
    fn fmul(&mut self, a: [f32; N], b: [f32; N]) -> [f32; N] {
        pairwise(a, b, |x, y| x * y)
    }
    #[inline(always)]
    fn fdiv(&mut self, a: [f32; N], b: [f32; N]) -> [f32; N] {
        pairwise(a, b, |x, y| x / y)
    }
    #[inline(always)]
    fn sqrt(&mut self, a: [f32; N]) -> [f32; N] {
        each(a, f32::sqrt)
    }
    #[inline(always)]
    fn floor(&mut self, a: [f32; N]) -> [f32; N] {
        each(a, f32::floor)
    }
    fn exp2_each(&mut self, a: [f32; N]) -> [f32; N] {
        each(a, transcendental::exp2)
    }
    fn log2_each(&mut self, a: [f32; N]) -> [f32; N] {
        each(a, transcendental::log2)
    }
}
