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

/// Whether `a` and `b` hold the same bytes, compared 8 (or 4) bytes at a
/// time, the last load overlapping the one before it: byte by byte, the
/// compare was 0.7% of `crawl dedup`'s instructions on HTML lines (issue
/// 37). The dedup crate has its own copy for its words, as neither crate
/// depends on the other.
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| {
        s.get(at..at + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map_or(0, u64::from_ne_bytes)
    };
    let half = |s: &[u8], at: usize| {
        s.get(at..at + 4)
            .and_then(|w| <[u8; 4]>::try_from(w).ok())
            .map_or(0, u32::from_ne_bytes)
    };
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => (half(a, 0) ^ half(b, 0)) | (half(a, n - 4) ^ half(b, n - 4)) == 0,
        _ => {
            let mut diff = 0u64;
            let mut at = 0;
            while at + 8 < n {
                diff |= word(a, at) ^ word(b, at);
                at += 8;
            }
            diff | (word(a, n - 8) ^ word(b, n - 8)) == 0
        }
    }
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

    /// Every length the compare reads at (by 4s, by 8s, the overlapping
    /// last load), a byte changed at every place, and a prefix.
    #[test]
    fn same_answers_as_slice_equality_for_every_length() {
        let base: Vec<u8> = (0..48u8).map(|i| i.wrapping_mul(7) ^ 0x55).collect();
        for n in 0..base.len() {
            let name = &base[..n];
            assert!(same(name, &base[..n]), "{n}");
            for at in 0..n {
                let mut other = name.to_vec();
                other[at] = other[at].wrapping_add(1);
                assert_eq!(same(name, &other), name == other.as_slice(), "{n} {at}");
            }
            if let Some(shorter) = n.checked_sub(1) {
                assert!(!same(name, &base[..shorter]), "{n}");
            }
        }
    }

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
