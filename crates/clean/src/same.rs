//! Equality of the short texts the parser and the walk compare by the
//! million (tag and attribute names, class and id values).
//!
//! `==` on two `str`s calls libc's `memcmp`; on the project's machines
//! (AMD EPYC under KVM) glibc picks its EVEX variant, whose masked load
//! cost about 55 ns a call on names of a few bytes: 10% of the cleaner's
//! time on a documentation site, for 1% of its instructions (issue 37,
//! docs/BENCHMARKS.md "Names compared in place"). Compared here, in the
//! caller, they cost a few instructions a byte.

/// Whether `a` and `b` hold the same bytes.
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::same;

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
        let long: Vec<u8> = (0..200u8).collect();
        let mut other = long.clone();
        assert!(same(&long, &other));
        other[199] ^= 1;
        assert!(!same(&long, &other));
    }
}
