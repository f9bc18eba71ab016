//! The block layout of Manku, Jain and Das Sarma (WWW 2007).
//!
//! Split the 64 bits into `m` blocks. Two fingerprints within Hamming
//! distance `k` differ in at most `k` blocks, so they agree exactly on at
//! least `m - k` of them (pigeonhole). One table per choice of `m - k`
//! blocks, keyed by those blocks' bits, therefore finds every fingerprint
//! within distance `k` with exact-match lookups only: C(m, k) tables.
//! `m = k + 1 = 4` gives 4 tables keyed by 16 bits (few tables, many
//! candidates per key: fine up to a few million documents); `m = 6, k = 3`
//! gives 20 tables keyed by about 32 bits, for tens of millions.

/// Why a layout is impossible.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LayoutError {
    /// k must be smaller than m, or no block is left to key by.
    #[error("invalid block layout: need 1 <= max_distance (k={k}) < blocks (m={m}) <= 16")]
    Range {
        /// Blocks.
        m: u32,
        /// Maximum distance.
        k: u32,
    },
    /// Too many tables would make every insert very slow.
    #[error("block layout m={m}, k={k} needs {tables} tables; at most 1000 are supported")]
    TooManyTables {
        /// Blocks.
        m: u32,
        /// Maximum distance.
        k: u32,
        /// C(m, k).
        tables: u64,
    },
}

/// A block layout: which bits each of the C(m, k) tables is keyed by.
///
/// ```
/// use simcrawl_dedup::BlockLayout;
/// let seeds = BlockLayout::new(4, 3).unwrap();
/// assert_eq!(seeds.tables(), 4);
/// let manku = BlockLayout::new(6, 3).unwrap();
/// assert_eq!(manku.tables(), 20);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockLayout {
    m: u32,
    k: u32,
    /// For each table, the (shift, width) of each block it is keyed by.
    tables: Vec<Vec<(u32, u32)>>,
}

impl BlockLayout {
    /// Builds the layout for `m` blocks and maximum distance `k`.
    pub fn new(m: u32, k: u32) -> Result<BlockLayout, LayoutError> {
        if k == 0 || k >= m || m > 16 {
            return Err(LayoutError::Range { m, k });
        }
        let n_tables = binomial(u64::from(m), u64::from(k));
        if n_tables > 1000 {
            return Err(LayoutError::TooManyTables {
                m,
                k,
                tables: n_tables,
            });
        }
        // Blocks as equal as possible: the first 64 % m blocks get one more bit.
        let mut blocks = Vec::with_capacity(m as usize);
        let mut shift = 0;
        for i in 0..m {
            let width = 64 / m + u32::from(i < 64 % m);
            blocks.push((shift, width));
            shift += width;
        }
        let mut tables = Vec::with_capacity(n_tables as usize);
        combinations(m as usize, (m - k) as usize, &mut |chosen| {
            tables.push(chosen.iter().map(|&b| blocks[b]).collect());
        });
        Ok(BlockLayout { m, k, tables })
    }

    /// Number of blocks.
    pub fn blocks(&self) -> u32 {
        self.m
    }

    /// Maximum Hamming distance that counts as a duplicate.
    pub fn max_distance(&self) -> u32 {
        self.k
    }

    /// Number of tables, C(m, k).
    pub fn tables(&self) -> usize {
        self.tables.len()
    }

    /// The key of `fp` in table `t`: the chosen blocks' bits packed together.
    pub fn key(&self, t: usize, fp: u64) -> u64 {
        let mut key = 0u64;
        for &(shift, width) in &self.tables[t] {
            let mask = if width >= 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            key = (key << width) | ((fp >> shift) & mask);
        }
        key
    }

    /// All (table, key) pairs of `fp`.
    pub fn keys(&self, fp: u64) -> impl Iterator<Item = (usize, u64)> + '_ {
        (0..self.tables.len()).map(move |t| (t, self.key(t, fp)))
    }
}

fn binomial(n: u64, k: u64) -> u64 {
    let k = k.min(n - k);
    (0..k).fold(1u64, |acc, i| acc * (n - i) / (i + 1))
}

fn combinations(n: usize, r: usize, f: &mut dyn FnMut(&[usize])) {
    fn rec(start: usize, n: usize, r: usize, cur: &mut Vec<usize>, f: &mut dyn FnMut(&[usize])) {
        if cur.len() == r {
            f(cur);
            return;
        }
        for i in start..n {
            cur.push(i);
            rec(i + 1, n, r, cur, f);
            cur.pop();
        }
    }
    rec(0, n, r, &mut Vec::with_capacity(r), f);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn table_counts() {
        assert_eq!(BlockLayout::new(4, 3).unwrap().tables(), 4);
        assert_eq!(BlockLayout::new(6, 3).unwrap().tables(), 20);
        assert_eq!(BlockLayout::new(5, 2).unwrap().tables(), 10);
        assert!(BlockLayout::new(3, 3).is_err());
        assert!(BlockLayout::new(4, 0).is_err());
    }

    #[test]
    fn blocks_cover_all_bits() {
        let l = BlockLayout::new(6, 3).unwrap();
        // keys of u64::MAX have exactly as many ones as bits keyed
        let widths: Vec<u32> = (0..l.tables()).map(|t| l.key(t, u64::MAX).count_ones()).collect();
        assert!(widths.iter().all(|&w| (30..=33).contains(&w)), "{widths:?}");
        let l4 = BlockLayout::new(4, 3).unwrap();
        let all: u64 = (0..4).map(|t| l4.key(t, u64::MAX)).sum();
        assert_eq!(all, 4 * 0xffff);
    }

    #[test]
    fn near_fingerprints_share_a_key() {
        let l = BlockLayout::new(6, 3).unwrap();
        let a = 0x0123_4567_89ab_cdefu64;
        let b = a ^ (1 << 0) ^ (1 << 20) ^ (1 << 63);
        assert!(l.keys(a).zip(l.keys(b)).any(|(x, y)| x == y));
    }
}
