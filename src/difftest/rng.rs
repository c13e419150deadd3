//! Where the generator's choices come from: a seeded pseudo-random stream, or the bytes of a
//! fuzzer's input.
//!
//! The generator asks [`Entropy`] for small numbers only ([`Entropy::below`]). A seeded stream
//! answers from SplitMix64; a byte stream answers from as few bytes as the range needs and,
//! once the bytes run out, with 0. Every generator decision is written so that 0 is the
//! simple, terminating choice, so a fuzzer's input maps to a program structurally (a mutated
//! byte changes one decision) and short inputs give small programs.

/// The SplitMix64 output function: a bijective 64-bit mixer.
pub const fn mix64(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of program `index` of a run seeded with `run_seed`: independent of the thread that
/// generates it, so a run's programs (and its report) depend only on the seed.
pub const fn program_seed(run_seed: u64, index: u64) -> u64 {
    mix64(mix64(run_seed) ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03))
}

/// A source of generator decisions.
#[derive(Clone, Debug)]
pub struct Entropy<'a> {
    source: Source<'a>,
}

#[derive(Clone, Debug)]
enum Source<'a> {
    /// SplitMix64 state.
    Seeded(u64),
    /// A fuzzer's bytes and how many were used.
    Bytes(&'a [u8], usize),
}

impl Entropy<'static> {
    /// A pseudo-random stream determined by `seed`.
    pub const fn from_seed(seed: u64) -> Entropy<'static> {
        Entropy {
            source: Source::Seeded(seed),
        }
    }
}

impl<'a> Entropy<'a> {
    /// Decisions read from `bytes`, then zeros.
    pub const fn from_bytes(bytes: &'a [u8]) -> Entropy<'a> {
        Entropy {
            source: Source::Bytes(bytes, 0),
        }
    }

    /// Whether a byte stream has run out (a seeded stream never does).
    pub fn exhausted(&self) -> bool {
        matches!(self.source, Source::Bytes(bytes, used) if used >= bytes.len())
    }

    /// A value with `bytes` (1..=8) bytes of randomness.
    fn raw(&mut self, bytes: usize) -> u64 {
        match &mut self.source {
            Source::Seeded(state) => {
                *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                mix64(*state)
            }
            Source::Bytes(data, used) => {
                let mut value = 0u64;
                for _ in 0..bytes {
                    let byte = data.get(*used).copied().unwrap_or(0);
                    *used = (*used + 1).min(data.len());
                    value = value << 8 | u64::from(byte);
                }
                value
            }
        }
    }

    /// A 64-bit value.
    pub fn next_u64(&mut self) -> u64 {
        self.raw(8)
    }

    /// A value in `0..n` (0 when `n` is 0). The modulo bias does not matter here.
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let bytes = (64 - (n - 1).leading_zeros() as usize).div_ceil(8);
        self.raw(bytes) % n
    }

    /// [`Entropy::below`] for indices.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `percent`/100 (a byte stream's 0 answers false).
    pub fn chance(&mut self, percent: u64) -> bool {
        100 - self.below(100) <= percent
    }

    /// One of `items` (the first for a zero answer); `None` only when `items` is empty.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        items.get(self.index(items.len())).copied()
    }

    /// An index into `weights` with probability proportional to its weight (0 picks the first
    /// item with a non-zero weight).
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut ticket = self.below(total);
        for (index, &weight) in weights.iter().enumerate() {
            if ticket < u64::from(weight) {
                return index;
            }
            ticket -= u64::from(weight);
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_streams_repeat_and_differ() {
        let take = |seed| {
            let mut e = Entropy::from_seed(seed);
            (0..8).map(|_| e.below(1000)).collect::<Vec<_>>()
        };
        assert_eq!(take(7), take(7));
        assert_ne!(take(7), take(8));
        assert_ne!(program_seed(1, 0), program_seed(1, 1));
        assert_ne!(program_seed(1, 0), program_seed(2, 0));
    }

    #[test]
    fn byte_streams_answer_zero_when_exhausted() {
        let mut e = Entropy::from_bytes(&[5, 0x01, 0x02]);
        assert_eq!(e.below(10), 5);
        assert_eq!(e.below(1000), 258);
        assert!(e.exhausted());
        assert_eq!(e.below(77), 0);
        assert!(!e.chance(99));
        assert_eq!(e.weighted(&[0, 3, 1]), 1);
    }
}
