//! SimHash fingerprints (Charikar), 64 or 128 bits wide.

use std::fmt;
use std::str::FromStr;

use crate::hash::{token_hash, token_hash_wide};

/// A SimHash of a document's weighted features: 64 bits, or 128 with
/// `dedup.bits = 128`.
///
/// Similar documents get fingerprints that differ in few bits, so the
/// Hamming distance between two fingerprints estimates how different the
/// documents are. A 64-bit one prints as 16 lower-case hex digits, a
/// 128-bit one as 32 (the upper half first), the form used in every output
/// file.
///
/// The low 64 bits of a 128-bit fingerprint are the 64-bit fingerprint of
/// the same features: the upper half only adds votes on a second hash. So
/// the block index keys both widths by the low half: two fingerprints
/// within distance k over 128 bits are within k over their low halves,
/// and the index finds them all; the full distance is then checked on the
/// stored record.
///
/// ```
/// use simcrawl_dedup::Fingerprint;
/// let a: Fingerprint = "00000000000000ff".parse().unwrap();
/// let b = Fingerprint::new(0x0f);
/// assert_eq!(a.distance(b), 4);
/// assert_eq!(b.to_string(), "000000000000000f");
/// let wide = Fingerprint::wide(1 << 64 | 0x0f);
/// assert_eq!(wide.to_string(), "0000000000000001000000000000000f");
/// assert_eq!((wide.bits(), wide.low()), (128, 0x0f));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Fingerprint {
    low: u64,
    /// The upper half of a 128-bit fingerprint; `None` for 64 bits.
    high: Option<u64>,
}

impl From<u64> for Fingerprint {
    fn from(bits: u64) -> Fingerprint {
        Fingerprint::new(bits)
    }
}

impl Fingerprint {
    /// A 64-bit fingerprint.
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// assert_eq!(Fingerprint::new(7).bits(), 64);
    /// ```
    pub const fn new(bits: u64) -> Fingerprint {
        Fingerprint {
            low: bits,
            high: None,
        }
    }

    /// A 128-bit fingerprint.
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// assert_eq!(Fingerprint::wide(u128::MAX).to_u128(), u128::MAX);
    /// ```
    pub const fn wide(bits: u128) -> Fingerprint {
        Fingerprint {
            low: bits as u64,
            high: Some((bits >> 64) as u64),
        }
    }

    /// The low 64 bits: all of a 64-bit fingerprint, and what the block
    /// index keys by at either width.
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// assert_eq!(Fingerprint::wide(3 << 64 | 5).low(), 5);
    /// ```
    pub const fn low(self) -> u64 {
        self.low
    }

    /// The upper 64 bits of a 128-bit fingerprint.
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// assert_eq!(Fingerprint::wide(3 << 64 | 5).high(), Some(3));
    /// assert_eq!(Fingerprint::new(5).high(), None);
    /// ```
    pub const fn high(self) -> Option<u64> {
        self.high
    }

    /// 64 or 128.
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// assert_eq!(Fingerprint::wide(0).bits(), 128);
    /// ```
    pub const fn bits(self) -> u32 {
        if self.high.is_some() { 128 } else { 64 }
    }

    /// All its bits as one number (the upper half is 0 at 64 bits).
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// assert_eq!(Fingerprint::new(9).to_u128(), 9);
    /// ```
    pub const fn to_u128(self) -> u128 {
        let high = match self.high {
            Some(h) => h,
            None => 0,
        };
        (high as u128) << 64 | self.low as u128
    }

    /// Hamming distance: the number of bits in which the two differ. A
    /// 64-bit fingerprint counts as a 128-bit one whose upper half is 0;
    /// a store never holds both widths (`bits` is one of its parameters).
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// assert_eq!(Fingerprint::new(0).distance(Fingerprint::new(u64::MAX)), 64);
    /// assert_eq!(Fingerprint::wide(0).distance(Fingerprint::wide(u128::MAX)), 128);
    /// ```
    pub fn distance(self, other: Fingerprint) -> u32 {
        (self.to_u128() ^ other.to_u128()).count_ones()
    }

    /// SimHash of weighted features: each feature's hash votes `+weight` on
    /// the bits it sets and `-weight` on the others; a bit of the result is 1
    /// where the vote is positive.
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// let one = Fingerprint::from_weighted([("新闻", 1.0)]);
    /// assert_eq!(one.low(), simcrawl_dedup::hash::token_hash("新闻"));
    /// ```
    pub fn from_weighted<'a, I>(features: I) -> Fingerprint
    where
        I: IntoIterator<Item = (&'a str, f64)>,
    {
        Self::from_hashed(features.into_iter().map(|(t, w)| (token_hash(t), w)))
    }

    /// The 128-bit [`Fingerprint::from_weighted`]: the low half votes on
    /// [`crate::hash::token_hash`] (so it equals the 64-bit fingerprint),
    /// the upper half on [`crate::hash::token_hash_high`] (both from
    /// [`crate::hash::token_hash_wide`], one FNV pass).
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// let f = [("新闻", 2.0), ("发布", 1.0)];
    /// let wide = Fingerprint::from_weighted_wide(f);
    /// assert_eq!(wide.low(), Fingerprint::from_weighted(f).low());
    /// assert_eq!(wide.bits(), 128);
    /// ```
    pub fn from_weighted_wide<'a, I>(features: I) -> Fingerprint
    where
        I: IntoIterator<Item = (&'a str, f64)>,
    {
        Self::from_hashed_wide(features.into_iter().map(|(t, w)| (token_hash_wide(t), w)))
    }

    /// SimHash of features that are already hashed (see [`crate::hash::token_hash`]).
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// // bit 1: +2 +1; bit 2: -2 +1; bit 3: +2 -1; every other bit: -3
    /// assert_eq!(Fingerprint::from_hashed([(0b1010u64, 2.0), (0b0110, 1.0)]).low(), 0b1010);
    /// ```
    pub fn from_hashed<I>(features: I) -> Fingerprint
    where
        I: IntoIterator<Item = (u64, f64)>,
    {
        let features: Vec<(u64, f64)> = features.into_iter().collect();
        Fingerprint::new(elect(&votes(&features, |h| h)))
    }

    /// The 128-bit [`Fingerprint::from_hashed`], over 128-bit hashes.
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// let fp = Fingerprint::from_hashed_wide([(1u128 << 100 | 1, 2.0), (1, 1.0)]);
    /// assert_eq!(fp.to_u128(), 1 << 100 | 1);
    /// ```
    pub fn from_hashed_wide<I>(features: I) -> Fingerprint
    where
        I: IntoIterator<Item = (u128, f64)>,
    {
        let features: Vec<(u128, f64)> = features.into_iter().collect();
        Fingerprint {
            low: elect(&votes(&features, |h| h as u64)),
            high: Some(elect(&votes(&features, |h| (h >> 64) as u64))),
        }
    }
}

/// Each bit's vote over `features`: `+w` for each feature whose hash
/// (`bits` of it) sets the bit, `-w` for the others.
///
/// With AVX-512, all 64 at once ([`votes_at_once`]); else
/// ([`votes_by_four`]) four bits at a time, their signs from [`SIGNS`],
/// in a form the compiler turns into vector adds: a bit by a branch was
/// 4% of `crawl dedup`'s instructions (issue 37). Four bits' sums are
/// taken over every feature before the next four, so that they stay in
/// registers (the 64 sums in memory, loaded and stored for each feature,
/// were 3% more). Each bit's vote still adds the features' `±w` one
/// after the other, in the same order, from 0, and `x - w` is `x + (-w)`
/// in IEEE arithmetic, so every sum, and every fingerprint, is the same
/// (`tests::votes_are_those_bit_by_bit`).
fn votes<H: Copy>(features: &[(H, f64)], bits: impl Fn(H) -> u64) -> [f64; 64] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512dq") {
        return votes_at_once(features, bits);
    }
    votes_by_four(features, bits)
}

/// [`votes`] four bits at a time.
fn votes_by_four<H: Copy>(features: &[(H, f64)], bits: impl Fn(H) -> u64) -> [f64; 64] {
    let mut votes = [0f64; 64];
    for (nibble, four) in votes.chunks_exact_mut(4).enumerate() {
        let mut sums = [0f64; 4];
        for &(h, w) in features {
            let signs = SIGNS[((bits(h) >> (4 * nibble)) & 0xF) as usize];
            let w = w.to_bits();
            for (sum, sign) in sums.iter_mut().zip(signs) {
                *sum += f64::from_bits(w ^ sign);
            }
        }
        four.copy_from_slice(&sums);
    }
    votes
}

/// For each value of four hash bits, the sign bit each of their votes
/// takes: set (`-w`) where the hash bit is clear.
const SIGNS: [[u64; 4]; 16] = {
    let mut t = [[0u64; 4]; 16];
    let mut v = 0;
    while v < 16 {
        let mut b = 0;
        while b < 4 {
            if (v >> b) & 1 == 0 {
                t[v][b] = 1 << 63;
            }
            b += 1;
        }
        v += 1;
    }
    t
};

/// [`votes`] on a CPU with AVX-512: all 64 sums in eight vector
/// registers, each feature read once, its sign bits spread by a shift per
/// lane. The same sums in the same order as four bits at a time (each
/// bit's `±w` added feature after feature from 0), in half the time on
/// 3,000 generated documents of 50-650 features (7.6 ms against 14.5):
/// without AVX-512 the 64 sums do not fit in the vector registers, and
/// four bits at a time is the faster form.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[multiversion::multiversion(targets("x86_64+avx512f+avx512dq+avx512vl"))]
fn votes_at_once<H: Copy>(features: &[(H, f64)], bits: impl Fn(H) -> u64) -> [f64; 64] {
    let mut votes = [0f64; 64];
    for &(h, w) in features {
        let (h, w) = (bits(h), w.to_bits());
        for (bit, vote) in votes.iter_mut().enumerate() {
            let sign = (!(h >> bit) & 1) << 63;
            *vote += f64::from_bits(w ^ sign);
        }
    }
    votes
}

/// The bits whose vote is positive.
fn elect(votes: &[f64; 64]) -> u64 {
    let mut fp = 0u64;
    for (bit, vote) in votes.iter().enumerate() {
        if *vote > 0.0 {
            fp |= 1 << bit;
        }
    }
    fp
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.high {
            Some(h) => write!(f, "{h:016x}{:016x}", self.low),
            None => write!(f, "{:016x}", self.low),
        }
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// Why a string is not a fingerprint.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid fingerprint {input:?}: expected 16 hexadecimal digits (64 bits) or 32 (128 bits)")]
pub struct ParseFingerprintError {
    input: String,
}

impl FromStr for Fingerprint {
    type Err = ParseFingerprintError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseFingerprintError { input: s.to_string() };
        if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(err());
        }
        match s.len() {
            16 => u64::from_str_radix(s, 16)
                .map(Fingerprint::new)
                .map_err(|_| err()),
            32 => u128::from_str_radix(s, 16)
                .map(Fingerprint::wide)
                .map_err(|_| err()),
            _ => Err(err()),
        }
    }
}

/// As its hexadecimal text (16 digits, or 32 for 128 bits), as in output
/// files.
#[cfg(feature = "serde")]
impl serde::Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// From its hexadecimal text.
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let f = Fingerprint::new(0x0123_4567_89ab_cdef);
        assert_eq!(f.to_string(), "0123456789abcdef");
        assert_eq!("0123456789abcdef".parse::<Fingerprint>(), Ok(f));
        assert!("0123".parse::<Fingerprint>().is_err());
        assert!("0123456789abcdeg".parse::<Fingerprint>().is_err());
        assert!("+123456789abcdef".parse::<Fingerprint>().is_err());
        let w = Fingerprint::wide(0xfedc_ba98_7654_3210_0123_4567_89ab_cdef);
        assert_eq!(w.to_string(), "fedcba98765432100123456789abcdef");
        assert_eq!(w.to_string().parse::<Fingerprint>(), Ok(w));
        assert!("0123456789abcdef0".parse::<Fingerprint>().is_err());
        assert!("+edcba98765432100123456789abcdef".parse::<Fingerprint>().is_err());
        // A wide one with a zero upper half still prints all 32 digits.
        assert_eq!(Fingerprint::wide(1).to_string().len(), 32);
    }

    /// The votes as they were added before [`votes`] took four bits at a
    /// time: bit by bit, `+w` or `-w` by a branch, feature after feature.
    fn vote_bit_by_bit(votes: &mut [f64; 64], h: u64, w: f64) {
        for (bit, vote) in votes.iter_mut().enumerate() {
            if (h >> bit) & 1 == 1 {
                *vote += w;
            } else {
                *vote -= w;
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn votes_are_those_bit_by_bit(
            features in proptest::collection::vec((proptest::num::u64::ANY, 0.0f64..50.0), 0..64),
            tiny in proptest::collection::vec((proptest::num::u64::ANY, 1e-300f64..1e-290), 0..8),
        ) {
            let all: Vec<(u64, f64)> = features.iter().chain(&tiny).copied().collect();
            let mut theirs = [0f64; 64];
            for &(h, w) in &all {
                vote_bit_by_bit(&mut theirs, h, w);
            }
            // Both forms, whichever this CPU's `votes` takes.
            for ours in [votes(&all, |h| h), votes_by_four(&all, |h| h), votes_at_once(&all, |h| h)] {
                for (a, b) in ours.iter().zip(&theirs) {
                    proptest::prop_assert_eq!(a.to_bits(), b.to_bits());
                }
                proptest::prop_assert_eq!(elect(&ours), elect(&theirs));
            }
        }
    }

    #[test]
    fn votes_decide_bits() {
        // The heavier feature wins bit 1; bit 2 is set by both.
        let fp = Fingerprint::from_hashed([(0b110, 3.0), (0b100, 1.0), (0b001, 1.0)]);
        assert_eq!(fp.low() & 0b111, 0b110);
        let wide = Fingerprint::from_hashed_wide([(0b110 << 64 | 0b110, 3.0), (0b001 << 64 | 0b100, 1.0)]);
        assert_eq!(wide.to_u128() & (0b111 << 64 | 0b111), 0b110 << 64 | 0b110);
    }

    #[test]
    fn wide_low_half_is_the_narrow_fingerprint() {
        let features = [
            ("国务院", 3.5),
            ("常务会议", 2.0),
            ("营商环境", 1.25),
            ("the", 0.5),
        ];
        let narrow = Fingerprint::from_weighted(features);
        let wide = Fingerprint::from_weighted_wide(features);
        assert_eq!(wide.low(), narrow.low());
        assert_eq!(wide.high().map(|h| h != 0), Some(true));
    }

    #[test]
    fn distance_counts_both_halves() {
        let a = Fingerprint::wide(0b1011 << 64 | 0b1);
        let b = Fingerprint::wide(0b0001 << 64);
        assert_eq!(a.distance(b), 3);
        assert_eq!(b.distance(a), 3);
        assert_eq!(Fingerprint::new(0b1).distance(Fingerprint::new(0b0)), 1);
    }

    #[test]
    fn empty_features_give_zero() {
        assert_eq!(Fingerprint::from_hashed(std::iter::empty()), Fingerprint::new(0));
        assert_eq!(
            Fingerprint::from_hashed_wide(std::iter::empty()),
            Fingerprint::wide(0)
        );
    }
}
