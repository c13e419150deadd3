//! Shards: one run split into N disjoint parts, so any batch system can spread a differential
//! test or a benchmark over machines (docs/architecture.md, "Runs past one machine"). Shard
//! K of N takes the items whose index is K modulo N, so the N shards of a run are disjoint and
//! together hold every item once, each shard in the order of the whole run.

use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count` (`K/N` on the command line, 0 ≤ K < N).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    /// K, from 0.
    pub index: u64,
    /// N, at least 1.
    pub count: u64,
}

impl Shard {
    /// The whole run: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Whether item `item` (its index in the whole run) belongs to this shard.
    pub fn contains(&self, item: u64) -> bool {
        item % self.count == self.index
    }

    /// How many of the items `0..items` belong to this shard.
    pub fn len(&self, items: u64) -> u64 {
        items / self.count + u64::from(items % self.count > self.index)
    }

    /// Whether this shard of `items` items is empty.
    pub fn is_empty(&self, items: u64) -> bool {
        self.len(items) == 0
    }

    /// The `position`-th item of this shard (counting from 0) as an index of the whole run.
    pub fn item(&self, position: u64) -> u64 {
        position * self.count + self.index
    }
}

impl Default for Shard {
    fn default() -> Shard {
        Shard::WHOLE
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `K/N` with 0 ≤ K < N.
    fn from_str(text: &str) -> Result<Shard, String> {
        let (k, n) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}` is not K/N (for example 0/4)"))?;
        let number = |s: &str, what: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| format!("`{s}` in `{text}` is not a whole number ({what})"))
        };
        let (index, count) = (number(k, "K")?, number(n, "N")?);
        if count == 0 {
            return Err(format!("`{text}`: N must be at least 1"));
        }
        if index >= count {
            return Err(format!(
                "`{text}`: K must be below N (shards 0 to {})",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_of_a_run_are_disjoint_and_cover_it() {
        for count in 1..=7u64 {
            for items in [0u64, 1, 5, 6, 7, 20, 101] {
                let mut seen = vec![0u32; items as usize];
                for index in 0..count {
                    let shard = Shard { index, count };
                    let mut len = 0;
                    for position in 0..shard.len(items) {
                        let item = shard.item(position);
                        assert!(shard.contains(item));
                        seen[item as usize] += 1;
                        len += 1;
                    }
                    assert_eq!(
                        len,
                        (0..items).filter(|&i| shard.contains(i)).count() as u64
                    );
                }
                assert!(seen.iter().all(|&n| n == 1), "{count} shards of {items}");
            }
        }
    }

    #[test]
    fn parsing_names_what_is_wrong() {
        assert_eq!("2/5".parse(), Ok(Shard { index: 2, count: 5 }));
        assert_eq!("0/1".parse(), Ok(Shard::WHOLE));
        assert_eq!(Shard { index: 3, count: 8 }.to_string(), "3/8");
        for (text, why) in [
            ("3", "is not K/N"),
            ("5/5", "K must be below N"),
            ("0/0", "N must be at least 1"),
            ("a/2", "`a` in `a/2` is not a whole number (K)"),
            ("1/-2", "is not a whole number (N)"),
        ] {
            let error = text.parse::<Shard>().unwrap_err();
            assert!(error.contains(why), "{text}: {error}");
        }
    }
}
