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

/// Whether the char at `bytes[i]`, a lead byte, is a CJK ideograph of
/// U+4000..U+4DBF or U+4E00..U+9FFF (the bulk of a Chinese text), told
/// from its first two bytes: a lead of 0xE5 to 0xE9 is one, and 0xE4 is
/// one unless 0xB7 follows (U+4DC0..U+4DFF, the Yijing hexagrams). The
/// scans that read Han on its bytes took only 0xE5 to 0xE9 and decoded
/// U+4E00..U+4FFF (`一`, `不`, `中`, `了`, `人`, `们`...) char by char
/// (issue 37).
///
/// ```
/// use simcrawl_dedup::letters::starts_han;
/// let text = "中一䷀x".as_bytes(); // U+4E2D, U+4E00, U+4DC0 (a hexagram)
/// assert!(starts_han(text, 0) && starts_han(text, 3));
/// assert!(!starts_han(text, 6) && !starts_han(text, 9) && !starts_han(text, 10));
/// ```
#[inline(always)]
#[must_use]
pub fn starts_han(bytes: &[u8], i: usize) -> bool {
    match bytes.get(i) {
        Some(0xE5..=0xE9) => true,
        Some(0xE4) => bytes.get(i + 1) != Some(&0xB7),
        _ => false,
    }
}

/// The offset of the first byte at or after `i` that is not ASCII
/// (`bytes.len()` if none), eight bytes at a time: scans for the chars
/// beyond ASCII pass an English text or a manual's commands at a fraction
/// of a compare a byte (issue 37; the cleaner has its own copy, as neither
/// crate depends on the other).
#[inline]
pub(crate) fn skip_ascii(bytes: &[u8], mut i: usize) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(Ok(word)) = bytes.get(i..i + 8).map(<[u8; 8]>::try_from) {
        let high = u64::from_le_bytes(word) & HIGH;
        if high != 0 {
            return i + high.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while bytes.get(i).is_some_and(u8::is_ascii) {
        i += 1;
    }
    i
}

/// Reads `text` as its runs of ASCII bytes, each handed whole to
/// `ascii_run`, and its other chars, each handed to `other`, in order.
///
/// The counts a page is judged on (how many letters it says, in which
/// scripts) walked every char of its text; a documentation page's English
/// is ASCII, where a run can be counted a byte at a time, found and counted
/// by loops the compiler vectorizes (issue 37: the two counts were 2.5% of
/// the crawl's CPU on the zh/en docs mix).
pub(crate) fn for_each_run(text: &str, mut ascii_run: impl FnMut(&[u8]), mut other: impl FnMut(char)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let end = skip_ascii(bytes, at);
        if end > at {
            ascii_run(bytes.get(at..end).unwrap_or_default());
            at = end;
        }
        // A byte beyond ASCII after ASCII (or at the start) opens a char.
        let Some(c) = text.get(at..).and_then(|s| s.chars().next()) else {
            return;
        };
        other(c);
        at += c.len_utf8();
    }
}

/// How many bytes of an ASCII run are letters (or digits, with
/// `digits`), in a branch-free form the compiler vectorizes (`filter` and
/// `count` it compiled to a branch a byte).
#[inline]
pub(crate) fn count_ascii(run: &[u8], digits: bool) -> usize {
    run.chunks(255)
        .map(|chunk| {
            let n: u8 = chunk
                .iter()
                .map(|&b| {
                    let letter = (b | 0x20).wrapping_sub(b'a') < 26;
                    let digit = b.wrapping_sub(b'0') < 10;
                    u8::from(letter) | (u8::from(digit) & u8::from(digits))
                })
                .fold(0u8, u8::wrapping_add);
            usize::from(n)
        })
        .sum()
}

/// The offset of the first byte of `bytes` at or after `i` that is not
/// ASCII (`bytes.len()` if none), and how many ASCII letters come before
/// it from `i`: a count of the letters of a text's ASCII runs at a
/// fraction of a compare a byte (the crawl's language guess counts the
/// letters of each page's sample by script; a byte at a time, that was
/// 1.5% of `crawl dedup`'s CPU on the labelled set, issue 37).
///
/// ```
/// use simcrawl_dedup::letters::ascii_letters_from;
/// let text = "Hello, 42 worlds! 中文 ok".as_bytes();
/// assert_eq!(ascii_letters_from(text, 0), (18, 11));
/// assert_eq!(ascii_letters_from(text, 18), (18, 0)); // at 中
/// assert_eq!(ascii_letters_from(text, 24), (27, 2));
/// ```
#[inline]
#[must_use]
pub fn ascii_letters_from(bytes: &[u8], i: usize) -> (usize, usize) {
    let end = skip_ascii(bytes, i);
    (end, count_ascii(bytes.get(i..end).unwrap_or_default(), false))
}

/// How many chars of `text` are letters or digits ([`is_alphanumeric`]).
///
/// ```
/// use simcrawl_dedup::letters::count_alphanumeric;
/// assert_eq!(count_alphanumeric("Hello, 世界 ٣!"), 8);
/// ```
#[must_use]
pub fn count_alphanumeric(text: &str) -> usize {
    let (mut ascii, mut other) = (0, 0);
    for_each_run(
        text,
        |run| ascii += count_ascii(run, true),
        |c| other += usize::from(is_alphanumeric(c)),
    );
    ascii + other
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs and chars come in order and make the whole text; the count is
    /// the char-by-char one, on ASCII, other scripts and mixes.
    #[test]
    fn runs_read_the_whole_text_in_order() {
        for text in [
            "",
            "abc",
            "中文",
            "a中b",
            "中a文",
            "Ünïcödé 1, 2 ٣",
            "x\u{10348}y😀 z",
            "   ",
            "é",
        ] {
            let back = std::cell::RefCell::new(String::new());
            for_each_run(
                text,
                |run| {
                    back.borrow_mut()
                        .push_str(std::str::from_utf8(run).unwrap_or("?"))
                },
                |c| {
                    assert!(!c.is_ascii(), "{c:?} in {text:?}");
                    back.borrow_mut().push(c);
                },
            );
            assert_eq!(back.into_inner(), text);
            assert_eq!(
                count_alphanumeric(text),
                text.chars().filter(|c| c.is_alphanumeric()).count(),
                "{text:?}"
            );
        }
    }

    /// Every ASCII byte, alone and in runs longer than a chunk.
    #[test]
    fn ascii_runs_are_counted_byte_by_byte() {
        let all: Vec<u8> = (0u8..128).collect();
        let long: Vec<u8> = all.iter().cycle().take(128 * 9 + 7).copied().collect();
        for run in [&all[..], &long[..], b"", b"a", b"Z9 _-"] {
            assert_eq!(
                count_ascii(run, true),
                run.iter().filter(|b| b.is_ascii_alphanumeric()).count()
            );
            assert_eq!(
                count_ascii(run, false),
                run.iter().filter(|b| b.is_ascii_alphabetic()).count()
            );
        }
    }

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
