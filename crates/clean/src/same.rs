//! Equality of the short texts the parser and the walk compare by the
//! million (tag and attribute names, class and id values).
//!
//! `==` on two `str`s calls libc's `memcmp`; on the project's machines
//! (AMD EPYC under KVM) glibc picks its EVEX variant, whose masked load
//! cost about 55 ns a call on names of a few bytes: 10% of the cleaner's
//! time on a documentation site, for 1% of its instructions (issue 37,
//! docs/BENCHMARKS.md "Names compared in place"). Compared here, in the
//! caller, they cost a few instructions a byte.

use std::hash::{Hash, Hasher};

/// Whether `a` and `b` hold the same bytes.
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// A text as a map keys it: hashed exactly as its `&str`, compared by
/// [`same`] (the dedup crate's `same::Word` for its words).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Text<'a>(pub &'a str);

impl Hash for Text<'_> {
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.hash(h);
    }
}

impl PartialEq for Text<'_> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        same(self.0.as_bytes(), other.0.as_bytes())
    }
}

impl Eq for Text<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn same_is_byte_equality() {
        let texts: [&[u8]; 9] = [
            b"",
            b"n",
            b"o",
            b"nn",
            b"class",
            b"clasS",
            b"classx",
            "中文".as_bytes(),
            "中文".as_bytes(),
        ];
        for a in texts {
            for b in texts {
                assert_eq!(same(a, b), a == b, "{a:?} {b:?}");
            }
        }
        let hasher = rustc_hash::FxBuildHasher;
        for a in ["", "n", "class", "中文"] {
            assert_eq!(hasher.hash_one(Text(a)), hasher.hash_one(a), "{a}");
            for b in ["", "n", "class", "中文"] {
                assert_eq!(Text(a) == Text(b), a == b, "{a} {b}");
            }
        }
        let long: Vec<u8> = (0..200u8).collect();
        let mut other = long.clone();
        assert!(same(&long, &other));
        other[199] ^= 1;
        assert!(!same(&long, &other));
    }
}
