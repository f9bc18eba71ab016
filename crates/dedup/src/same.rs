//! Equality of the words the features compare by the million.
//!
//! `==` on two `str`s calls libc's `memcmp`; on the project's machines
//! (AMD EPYC under KVM) glibc picks its EVEX variant, whose masked load
//! costs tens of ns a call on words of a few bytes (issue 37,
//! docs/BENCHMARKS.md "Names compared in place"; the cleaner has the same
//! helper for its tag and class names).

use std::hash::{Hash, Hasher};

/// Whether `a` and `b` hold the same bytes.
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
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
