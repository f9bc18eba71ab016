//! Whether a char is a letter or a digit, answered from a table for the
//! Basic Multilingual Plane.
//!
//! Every text the crawl judges is read a char at a time several times
//! (its words, its sketch, its scripts, how much of it a page says), and
//! `char::is_alphabetic` answers a non-ASCII char by a search through
//! Unicode's ranges: 4.5% of the crawl's CPU on the Debian handbook, a
//! site in a dozen scripts (docs/BENCHMARKS.md, "Spaced text and letters").
//! Here a bit per BMP char (8 KB per property, compiled from the standard
//! library's own answers by build.rs, so nothing is computed at start-up:
//! building them on first use was 43% of the instructions of a
//! one-document `crawl dedup`, issue 37) answers in one load; chars beyond
//! the BMP, rare in text, still ask the standard library. The answers are
//! the standard library's, char for char (`tests::same_answers_as_std`),
//! so nothing a store recorded changes.

/// The letters of the BMP, a bit each (build.rs).
static ALPHABETIC: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/letters_alphabetic.bin"));
/// The letters and digits of the BMP, a bit each (build.rs).
static ALPHANUMERIC: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/letters_alphanumeric.bin"));

/// `property(c)`, from `bits` for the BMP, ASCII by `ascii` and the other
/// planes by `property` itself.
#[inline]
fn answer(c: char, bits: &'static [u8], ascii: fn(&char) -> bool, property: fn(char) -> bool) -> bool {
    let u = c as u32;
    if u < 0x80 {
        return ascii(&c);
    }
    if u > 0xFFFF {
        return property(c);
    }
    bits.get((u >> 3) as usize)
        .is_some_and(|b| (b >> (u & 7)) & 1 == 1)
}

/// `char::is_alphabetic`, from a table for the BMP.
///
/// ```
/// use simcrawl_dedup::letters::is_alphabetic;
/// assert!(is_alphabetic('ж') && is_alphabetic('中') && is_alphabetic('a'));
/// assert!(!is_alphabetic('7') && !is_alphabetic('—'));
/// ```
#[inline]
#[must_use]
pub fn is_alphabetic(c: char) -> bool {
    answer(c, ALPHABETIC, char::is_ascii_alphabetic, char::is_alphabetic)
}

/// `char::is_alphanumeric`, from a table for the BMP.
///
/// ```
/// use simcrawl_dedup::letters::is_alphanumeric;
/// assert!(is_alphanumeric('٣') && is_alphanumeric('é') && is_alphanumeric('7'));
/// assert!(!is_alphanumeric(' ') && !is_alphanumeric('’'));
/// ```
#[inline]
#[must_use]
pub fn is_alphanumeric(c: char) -> bool {
    answer(
        c,
        ALPHANUMERIC,
        char::is_ascii_alphanumeric,
        char::is_alphanumeric,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_answers_as_std() {
        let mut letters = 0;
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            assert_eq!(is_alphabetic(c), c.is_alphabetic(), "{c:?}");
            assert_eq!(is_alphanumeric(c), c.is_alphanumeric(), "{c:?}");
            letters += usize::from(is_alphabetic(c));
        }
        // The tables hold real answers: Unicode has over 100,000 letters.
        assert!(letters > 100_000, "{letters}");
        assert_eq!((ALPHABETIC.len(), ALPHANUMERIC.len()), (8192, 8192));
    }
}
