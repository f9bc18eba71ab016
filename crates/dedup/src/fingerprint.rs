//! 64-bit SimHash fingerprints (Charikar).

use std::fmt;
use std::str::FromStr;

use crate::hash::token_hash;

/// A 64-bit SimHash of a document's weighted features.
///
/// Similar documents get fingerprints that differ in few bits, so the
/// Hamming distance between two fingerprints estimates how different the
/// documents are. It prints as 16 lower-case hex digits, the form used in
/// every output file.
///
/// ```
/// use simcrawl_dedup::Fingerprint;
/// let a: Fingerprint = "00000000000000ff".parse().unwrap();
/// let b = Fingerprint(0x0f);
/// assert_eq!(a.distance(b), 4);
/// assert_eq!(b.to_string(), "000000000000000f");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Fingerprint(pub u64);

impl Fingerprint {
    /// Hamming distance: the number of bits in which the two differ.
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// assert_eq!(Fingerprint(0).distance(Fingerprint(u64::MAX)), 64);
    /// ```
    pub fn distance(self, other: Fingerprint) -> u32 {
        (self.0 ^ other.0).count_ones()
    }

    /// SimHash of weighted features: each feature's hash votes `+weight` on
    /// the bits it sets and `-weight` on the others; a bit of the result is 1
    /// where the vote is positive.
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// let one = Fingerprint::from_weighted([("新闻", 1.0)]);
    /// assert_eq!(one.0, simcrawl_dedup::hash::token_hash("新闻"));
    /// ```
    pub fn from_weighted<'a, I>(features: I) -> Fingerprint
    where
        I: IntoIterator<Item = (&'a str, f64)>,
    {
        Self::from_hashed(features.into_iter().map(|(t, w)| (token_hash(t), w)))
    }

    /// SimHash of features that are already hashed (see [`crate::hash::token_hash`]).
    ///
    /// ```
    /// use simcrawl_dedup::Fingerprint;
    /// // bit 1: +2 +1; bit 2: -2 +1; bit 3: +2 -1; every other bit: -3
    /// assert_eq!(Fingerprint::from_hashed([(0b1010u64, 2.0), (0b0110, 1.0)]).0, 0b1010);
    /// ```
    pub fn from_hashed<I>(features: I) -> Fingerprint
    where
        I: IntoIterator<Item = (u64, f64)>,
    {
        let mut votes = [0f64; 64];
        for (h, w) in features {
            for (bit, vote) in votes.iter_mut().enumerate() {
                if (h >> bit) & 1 == 1 {
                    *vote += w;
                } else {
                    *vote -= w;
                }
            }
        }
        let mut fp = 0u64;
        for (bit, vote) in votes.iter().enumerate() {
            if *vote > 0.0 {
                fp |= 1 << bit;
            }
        }
        Fingerprint(fp)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({:016x})", self.0)
    }
}

/// Why a string is not a fingerprint.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid fingerprint {input:?}: expected 16 hexadecimal digits")]
pub struct ParseFingerprintError {
    input: String,
}

impl FromStr for Fingerprint {
    type Err = ParseFingerprintError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseFingerprintError { input: s.to_string() };
        if s.len() != 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(err());
        }
        u64::from_str_radix(s, 16).map(Fingerprint).map_err(|_| err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let f = Fingerprint(0x0123_4567_89ab_cdef);
        assert_eq!(f.to_string(), "0123456789abcdef");
        assert_eq!("0123456789abcdef".parse::<Fingerprint>(), Ok(f));
        assert!("0123".parse::<Fingerprint>().is_err());
        assert!("0123456789abcdeg".parse::<Fingerprint>().is_err());
        assert!("+123456789abcdef".parse::<Fingerprint>().is_err());
    }

    #[test]
    fn votes_decide_bits() {
        // The heavier feature wins bit 1; bit 2 is set by both.
        let fp = Fingerprint::from_hashed([(0b110, 3.0), (0b100, 1.0), (0b001, 1.0)]);
        assert_eq!(fp.0 & 0b111, 0b110);
    }

    #[test]
    fn empty_features_give_zero() {
        assert_eq!(Fingerprint::from_hashed(std::iter::empty()), Fingerprint(0));
    }
}
