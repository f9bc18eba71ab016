//! Equality of the words the features compare by the million.
//!
//! `==` on two `str`s calls libc's `memcmp`; on the project's machines
//! (AMD EPYC under KVM) glibc picks its EVEX variant, whose masked load
//! costs tens of ns a call on words of a few bytes (issue 37,
//! docs/BENCHMARKS.md "Names compared in place"; the cleaner has the same
//! helper for its tag and class names).

use std::hash::{Hash, Hasher};

/// Whether `a` and `b` hold the same bytes.
///
/// Compared a word of 8 (or 4) bytes at a time, the last word overlapping
/// the one before it, so a Chinese word of two chars (6 bytes) is two loads
/// a side and no loop: byte by byte, the compare was a fifth of the word
/// counter's map lookups (issue 37).
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        let mut diff = 0u64;
        let mut at = 0;
        while at + 8 < n {
            diff |= u64_at(a, at) ^ u64_at(b, at);
            at += 8;
        }
        return diff | (u64_at(a, n - 8) ^ u64_at(b, n - 8)) == 0;
    }
    if n >= 4 {
        return (u32_at(a, 0) ^ u32_at(b, 0)) | (u32_at(a, n - 4) ^ u32_at(b, n - 4)) == 0;
    }
    // 0 to 3 bytes: the first, middle and last cover them all.
    n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1])
}

/// The 8 bytes of `s` from `at` (0 past its end, which callers never ask).
#[inline(always)]
fn u64_at(s: &[u8], at: usize) -> u64 {
    s.get(at..at + 8)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map_or(0, u64::from_ne_bytes)
}

/// The 4 bytes of `s` from `at` (0 past its end, which callers never ask).
#[inline(always)]
fn u32_at(s: &[u8], at: usize) -> u32 {
    s.get(at..at + 4)
        .and_then(|w| <[u8; 4]>::try_from(w).ok())
        .map_or(0, u32::from_ne_bytes)
}

/// A word as a map keys it: hashed exactly as its `&str` (so a map's
/// layout and order, and the fingerprints made in that order, are those of
/// a `&str` key), compared by [`same`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Word<'t>(pub &'t str);

impl Hash for Word<'_> {
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.hash(h);
    }
}

impl PartialEq for Word<'_> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        same(self.0.as_bytes(), other.0.as_bytes())
    }
}

impl Eq for Word<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn same_is_byte_equality_at_every_length_and_place() {
        // Every length a word is read at (by 4s, by 8s, the overlapping
        // last word), and a difference at every place of it.
        for n in 0..=40usize {
            let a: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
            assert!(same(&a, &a.clone()), "{n}");
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x80;
                assert!(!same(&a, &b), "{n} {at}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!same(&a, &longer), "{n}");
        }
    }

    #[test]
    fn words_are_equal_and_hashed_as_their_text() {
        let texts = ["", "的", "中国", "中国人", "rust", "Rust", "rust "];
        let s = rustc_hash::FxBuildHasher;
        for a in texts {
            assert_eq!(s.hash_one(Word(a)), s.hash_one(a), "{a}");
            for b in texts {
                assert_eq!(Word(a) == Word(b), a == b, "{a} {b}");
            }
        }
    }
}
