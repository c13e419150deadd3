//! [`Exact`]: the rules on plain arrays, as the reference interpreter computes.

use super::*;

/// [`Lanes`] on plain arrays: the reference implementation the interpreter computes with.
#[derive(Clone, Copy, Debug, Default)]
pub struct Exact;

pub(super) fn each<T: Copy, U>(a: [T; 4], f: impl Fn(T) -> U) -> [U; 4] {
    a.map(f)
}

pub(super) fn pairwise<T: Copy, U>(a: [T; 4], b: [T; 4], f: impl Fn(T, T) -> U) -> [U; 4] {
    std::array::from_fn(|i| f(a[i], b[i]))
}

impl Elements for Exact {
    type Float = [f32; 4];
    type Bits = [u32; 4];
    type Mask = [bool; 4];

    #[inline]
    fn bits_of(&mut self, v: [f32; 4]) -> [u32; 4] {
        each(v, f32::to_bits)
    }
    #[inline]
    fn float_of(&mut self, v: [u32; 4]) -> [f32; 4] {
        each(v, f32::from_bits)
    }
    #[inline]
    fn splat_bits(&mut self, bits: u32) -> [u32; 4] {
        [bits; 4]
    }
    #[inline]
    fn and(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        pairwise(a, b, |x, y| x & y)
    }
    #[inline]
    fn or(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        pairwise(a, b, |x, y| x | y)
    }
    #[inline]
    fn add_bits(&mut self, a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        pairwise(a, b, u32::wrapping_add)
    }
    #[inline]
    fn shift_right(&mut self, a: [u32; 4], amount: u32) -> [u32; 4] {
        each(a, |x| x >> amount)
    }
    #[inline]
    fn below(&mut self, a: [u32; 4], b: [u32; 4]) -> [bool; 4] {
        pairwise(a, b, |x, y| x < y)
    }
    #[inline]
    fn above(&mut self, a: [u32; 4], b: [u32; 4]) -> [bool; 4] {
        pairwise(a, b, |x, y| x > y)
    }
    #[inline]
    fn is_nan(&mut self, a: [f32; 4]) -> [bool; 4] {
        each(a, f32::is_nan)
    }
    #[inline]
    fn is_number(&mut self, a: [f32; 4]) -> [bool; 4] {
        each(a, |x| !x.is_nan())
    }
    #[inline]
    fn both(&mut self, a: [bool; 4], b: [bool; 4]) -> [bool; 4] {
        pairwise(a, b, |x, y| x && y)
    }
    #[inline]
    fn select(&mut self, mask: [bool; 4], a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
        std::array::from_fn(|i| if mask[i] { a[i] } else { b[i] })
    }
    #[inline]
    fn fadd(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        pairwise(a, b, |x, y| x + y)
    }
    #[inline]
    fn fmul(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        pairwise(a, b, |x, y| x * y)
    }
    #[inline]
    fn fdiv(&mut self, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
        pairwise(a, b, |x, y| x / y)
    }
    #[inline]
    fn sqrt(&mut self, a: [f32; 4]) -> [f32; 4] {
        each(a, f32::sqrt)
    }
    #[inline]
    fn floor(&mut self, a: [f32; 4]) -> [f32; 4] {
        each(a, f32::floor)
    }
    #[inline]
    fn either(&mut self, a: [bool; 4], b: [bool; 4]) -> [bool; 4] {
        pairwise(a, b, |x, y| x || y)
    }
    #[inline]
    fn exp2_each(&mut self, a: [f32; 4]) -> [f32; 4] {
        each(a, transcendental::exp2)
    }
    #[inline]
    fn log2_each(&mut self, a: [f32; 4]) -> [f32; 4] {
        each(a, transcendental::log2)
    }
}

impl Lanes for Exact {
    #[inline]
    fn exp2_first(&mut self, a: [f32; 4]) -> [f32; 4] {
        [transcendental::exp2(a[0]); 4]
    }
    #[inline]
    fn log2_first(&mut self, a: [f32; 4]) -> [f32; 4] {
        [transcendental::log2(a[0]); 4]
    }
    #[inline]
    fn broadcast(&mut self, a: [f32; 4], lane: usize) -> [f32; 4] {
        [a[lane]; 4]
    }
    #[inline]
    fn with_lane(&mut self, mut a: [f32; 4], lane: usize, value: f32) -> [f32; 4] {
        a[lane] = value;
        a
    }
}
