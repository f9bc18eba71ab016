//! Whitespace folding.
//!
//! HTML source indentation, `&nbsp;`, ideographic spaces and the gaps left by other
//! steps must not make two copies differ. Lines are kept in text mode because the
//! extractor puts one block (paragraph, heading, list item) per line.

use std::borrow::Cow;

use super::Normalizer;
use crate::config::Step;

/// Folds every run of whitespace (any Unicode white space) into one space, trims
/// lines and drops empty ones; with `single_line`, newlines fold to spaces too.
#[derive(Debug, Clone, Copy, Default)]
pub struct FoldWhitespace {
    /// Fold newlines as well (titles).
    pub single_line: bool,
}

/// Whether `text` is folded already: no white space but single separators
/// (a space, or a newline where lines are kept) between non-white chars.
///
/// A few passes over the bytes that the compiler turns into vector code
/// (this runs on every text, and most are folded already): no other ASCII
/// white space, no two separators in a row, none at either end, and no
/// non-ASCII white space at all.
fn is_folded(text: &str, single_line: bool) -> bool {
    let bytes = text.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return true;
    };
    let sep = |b: u8| b == b' ' || (b == b'\n' && !single_line);
    if sep(first) || sep(last) {
        return false;
    }
    let other_ascii_space = |b: u8| matches!(b, b'\t'..=b'\r') && (single_line || b != b'\n');
    let pairs = bytes.iter().zip(&bytes[1..]);
    !any_in_blocks(bytes, |b| other_ascii_space(*b))
        && !pairs.fold(false, |found, (&a, &b)| found | (sep(a) & sep(b)))
        && !has_wide_space(bytes)
}

/// Whether `pred` holds for a byte, read in blocks without a branch per
/// byte (so the compiler can vectorize), stopping at the first block found.
#[inline]
fn any_in_blocks(bytes: &[u8], pred: impl Fn(&u8) -> bool) -> bool {
    let mut blocks = bytes.chunks_exact(64);
    for block in &mut blocks {
        if block.iter().fold(false, |found, b| found | pred(b)) {
            return true;
        }
    }
    blocks.remainder().iter().any(pred)
}

/// Whether UTF-8 `bytes` hold white space beyond ASCII: U+0085, U+00A0,
/// U+1680, U+2000 to U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 (every
/// char `char::is_whitespace` takes), told by their bytes without decoding.
pub(crate) fn has_wide_space(bytes: &[u8]) -> bool {
    wide_spaces(bytes) > 0
}

/// Whether the bytes `x y z` start the UTF-8 encoding of a white space
/// char beyond ASCII (`z` is 0 past the end). Only `&` and `|`, so that a
/// loop over every position compiles to vector code without a branch.
#[inline(always)]
fn starts_wide_space(x: u8, y: u8, z: u8) -> bool {
    // U+0085, U+00A0.
    (x == 0xC2) & ((y == 0x85) | (y == 0xA0))
        // U+1680.
        | (x == 0xE1) & (y == 0x9A) & (z == 0x80)
        // U+2000 to U+200A, U+2028, U+2029, U+202F; U+205F.
        | (x == 0xE2)
            & (((y == 0x80) & ((z.wrapping_sub(0x80) <= 0x0A) | (z == 0xA8) | (z == 0xA9) | (z == 0xAF)))
                | ((y == 0x81) & (z == 0x9F)))
        // U+3000.
        | (x == 0xE3) & (y == 0x80) & (z == 0x80)
}

/// How many chars of non-ASCII white space UTF-8 `bytes` hold, found by
/// SIMD byte search (the `memchr` crate): U+3000 as its three bytes, the
/// others at their lead bytes 0xC2, 0xE1 and 0xE2, each tested whole. A
/// test of every position in vector code was 1.8% of `crawl dedup`'s
/// instructions on the labelled set; these lead bytes are a few in a
/// hundred even in Chinese text, whose punctuation starts with 0xE3 (0xE2
/// for dashes and curly quotes) (issue 37).
fn wide_spaces(bytes: &[u8]) -> usize {
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let ideographic = memchr::memmem::find_iter(bytes, "\u{3000}".as_bytes()).count();
    let others = memchr::memchr3_iter(0xC2, 0xE1, 0xE2, bytes)
        .filter(|&i| starts_wide_space(at(i), at(i + 1), at(i + 2)))
        .count();
    ideographic + others
}

/// Characters of `text` that are not white space (`char::is_whitespace`),
/// counted on the bytes: a `text` line's `chars` in `crawl dedup`.
///
/// ```
/// assert_eq!(simcrawl_clean::visible_chars(" 中文\u{3000}text\u{a0}!\n"), 7);
/// ```
#[must_use]
pub fn visible_chars(text: &str) -> usize {
    let bytes = text.as_bytes();
    // Chars start at every byte but continuation bytes (0x80 to 0xBF);
    // counted a block at a time in a byte each, as `wide_spaces` does.
    let starts = |s: u8, &b: &u8| s + u8::from(((b as i8) >= -0x40) & !matches!(b, b'\t'..=b'\r' | b' '));
    let mut blocks = bytes.chunks_exact(128);
    let mut counted = 0;
    for block in &mut blocks {
        counted += usize::from(block.iter().fold(0u8, starts));
    }
    counted += usize::from(blocks.remainder().iter().fold(0u8, starts));
    counted - wide_spaces(bytes)
}

/// `text` folded: its words (runs of chars that are not white space) joined
/// by one space, or by one newline where a newline lies between them and
/// lines are kept. Most of a text that needs folding is folded already (a
/// blank line left where a step took a line's only text out, a run of
/// spaces): the stretches between the places that need work
/// ([`next_unfolded`], found 32 bytes at a time) are copied whole, and only
/// the runs of white space there are read. Copying it word by word (a
/// call to `memcpy` and a mispredicted branch a word) was 3.7% of `crawl
/// dedup`'s samples on the labelled texts, 30% of which need folding
/// (issue 37). Only the lead bytes of non-ASCII white space are decoded.
fn fold(text: &str, single_line: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    // Bytes of `text` before it are in `out` or were white space.
    let mut copied = 0;
    // A text that starts with white space starts with a run to read.
    let mut at = if bytes
        .first()
        .is_some_and(|&b| SPACE_CLASS[usize::from(b)] == ASCII_SPACE)
    {
        Some(0)
    } else {
        next_unfolded(bytes, 0, single_line)
    };
    while let Some(p) = at {
        let Some(run) = white_run_at(bytes, p, copied) else {
            // A lead byte of a char that is not white space.
            at = next_unfolded(bytes, p + 1, single_line);
            continue;
        };
        out.push_str(text.get(copied..run.start).unwrap_or_default());
        let newline = !single_line && bytes.get(run.clone()).is_some_and(|r| r.contains(&b'\n'));
        // Between two words only: none before the first or after the last.
        if !out.is_empty() && run.end < bytes.len() {
            out.push(if newline { '\n' } else { ' ' });
        }
        copied = run.end;
        at = next_unfolded(bytes, run.end, single_line);
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    out
}

/// The run of white space that the byte at `p` ([`next_unfolded`]'s) is
/// part of: from the separator before it when that one is not yet
/// `copied` past (a space before an ideographic space), to the first char
/// after it that is not white space; `None` when `p` starts a char that is
/// not white space.
fn white_run_at(bytes: &[u8], p: usize, copied: usize) -> Option<std::ops::Range<usize>> {
    let width = white_width(bytes, p)?;
    let start = if p > copied
        && bytes
            .get(p - 1)
            .is_some_and(|&b| SPACE_CLASS[usize::from(b)] == ASCII_SPACE)
    {
        p - 1
    } else {
        p
    };
    let mut end = p + width;
    while let Some(w) = white_width(bytes, end) {
        end += w;
    }
    Some(start..end)
}

/// The length in bytes of the white space char at byte `i` of UTF-8
/// `bytes` (a char boundary), or `None` when the char there is not white
/// space (or `i` is their end). Non-ASCII white space is told by its bytes
/// as [`has_wide_space`] tells it ([`starts_wide_space`]): U+0085 and
/// U+00A0 take two bytes, the others three.
#[inline]
fn white_width(bytes: &[u8], i: usize) -> Option<usize> {
    let b = *bytes.get(i)?;
    let at = |k: usize| bytes.get(i + k).copied().unwrap_or(0);
    match SPACE_CLASS[usize::from(b)] {
        ASCII_SPACE => Some(1),
        MAY_START_SPACE => starts_wide_space(b, at(1), at(2)).then_some(super::utf8_width(b)),
        _ => None,
    }
}

/// The first byte at or after `i` where [`fold`] has work, or may have: a
/// byte of ASCII white space that is not a lone separator (a space, or a
/// newline where lines are kept, followed by a byte that is not ASCII
/// white space), one at the end of the text, or a lead byte of non-ASCII
/// white space ([`MAY_START_SPACE`], decoded by the caller). Read 32 bytes
/// at a time (with the byte after each) in vector code; a lone separator
/// at the very start is the caller's to see.
fn next_unfolded(bytes: &[u8], mut i: usize, single_line: bool) -> Option<usize> {
    const BLOCK: usize = 32;
    let ascii_white = |b: u8| (b == b' ') | (b.wrapping_sub(b'\t') <= b'\r' - b'\t');
    let unfolded = |b: u8, next: u8| {
        let separator = (b == b' ') | ((b == b'\n') & !single_line);
        (ascii_white(b) & !(separator & !ascii_white(next))) | (b == 0xC2) | (b.wrapping_sub(0xE1) <= 2)
    };
    while let Some(block) = bytes.get(i..i + BLOCK + 1) {
        if block
            .windows(2)
            .fold(false, |found, w| found | unfolded(w[0], w[1]))
        {
            break;
        }
        i += BLOCK;
    }
    while let Some(&b) = bytes.get(i) {
        // Past the end counts as white space: a separator there ends the text.
        if unfolded(b, bytes.get(i + 1).copied().unwrap_or(b' ')) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// What [`fold`] makes of a byte: [`NOT_SPACE`] (never starts white
/// space), [`ASCII_SPACE`], or [`MAY_START_SPACE`] (a lead byte of the
/// non-ASCII white space, U+0085 to U+3000, decoded to tell).
const SPACE_CLASS: [u8; 256] = {
    let mut t = [NOT_SPACE; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if matches!(c, b'\t'..=b'\r' | b' ') {
            t[b] = ASCII_SPACE;
        } else if matches!(c, 0xC2 | 0xE1..=0xE3) {
            t[b] = MAY_START_SPACE;
        }
        b += 1;
    }
    t
};
const NOT_SPACE: u8 = 0;
const ASCII_SPACE: u8 = 1;
const MAY_START_SPACE: u8 = 2;

impl Normalizer for FoldWhitespace {
    fn name(&self) -> &'static str {
        Step::FoldWhitespace.name()
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        if is_folded(&text, self.single_line) {
            return text;
        }
        Cow::Owned(fold(&text, self.single_line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    normalizer_tests!(
        FoldWhitespace::default(),
        [
            ("  a   b \t c  ", "a b c", "a b c"),
            (
                "line one\n\n\n  line two  \n",
                "line one\nline two",
                "line one\nline two"
            ),
            ("中\u{3000}文\u{a0}字", "中 文 字", "中 文 字"),
            ("already folded\nok", "already folded\nok", "already folded\nok"),
            ("", "", ""),
        ]
    );

    #[test]
    fn non_ascii_white_space_starts_with_a_decoded_lead() {
        for c in (0x80..=0x10_FFFF).filter_map(char::from_u32) {
            if c.is_whitespace() {
                let mut buf = [0u8; 4];
                let b = c.encode_utf8(&mut buf).as_bytes()[0];
                assert!(matches!(b, 0xC2 | 0xE1..=0xE3), "{c:?}");
            }
        }
        assert!(!is_folded("中文\u{3000}字", false));
        assert!(!is_folded("é\u{a0}x", true));
        assert!(is_folded("é 中 x\nok", false));
    }

    /// The folding as it was first written (split on lines, then on white
    /// space): [`fold`] must give the same text.
    fn reference(text: &str, single_line: bool) -> String {
        let mut out = String::new();
        if single_line {
            for w in text.split_whitespace() {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(w);
            }
        } else {
            for line in text.split('\n') {
                let mut words = line.split_whitespace();
                if let Some(first) = words.next() {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(first);
                    for w in words {
                        out.push(' ');
                        out.push_str(w);
                    }
                }
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        #[test]
        fn fold_is_the_reference_folding(
            text in "[ab中é \t\n\r\u{0b}\u{0c}\u{85}\u{a0}\u{1680}\u{2000}\u{200a}\u{200b}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{3001}\u{e1}\u{1e00}\u{2010}]{0,30}"
        ) {
            for single_line in [false, true] {
                proptest::prop_assert_eq!(fold(&text, single_line), reference(&text, single_line));
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// Long texts, mostly folded already: stretches of many 32-byte
        /// blocks between the places [`next_unfolded`] stops at, and
        /// places in a block's last byte and the byte after it.
        #[test]
        fn long_texts_fold_as_the_reference(
            words in proptest::collection::vec("[a-z中é。]{1,40}", 0..30),
            gaps in proptest::collection::vec("[ \n]|[ \t\n\r\u{a0}\u{3000}\u{2028}]{1,3}", 0..30),
            edges in "[ \n\u{3000}]{0,2}",
        ) {
            let mut text = edges.clone();
            for (i, w) in words.iter().enumerate() {
                text.push_str(w);
                text.push_str(gaps.get(i).map_or(" ", String::as_str));
            }
            text.push_str(&edges);
            for single_line in [false, true] {
                proptest::prop_assert_eq!(fold(&text, single_line), reference(&text, single_line));
            }
        }
    }

    #[test]
    fn fold_keeps_lines_and_words_as_the_reference() {
        for t in [
            "\n\n a \r\n b\u{3000}c \n\n",
            "中\u{2028}文",
            "x",
            "  ",
            "a\u{85}b\nc",
        ] {
            for single_line in [false, true] {
                assert_eq!(fold(t, single_line), reference(t, single_line), "{t:?}");
            }
        }
        assert_eq!(fold(" a \r\n\n b  c\n", false), "a\nb c");
    }

    #[test]
    fn wide_spaces_are_every_non_ascii_white_space() {
        for c in (0x80..=0x10_FFFF).filter_map(char::from_u32) {
            let s = format!("x{c}y");
            assert_eq!(has_wide_space(s.as_bytes()), c.is_whitespace(), "{c:?}");
            assert_eq!(visible_chars(&s), if c.is_whitespace() { 2 } else { 3 }, "{c:?}");
        }
        for c in (0..0x80).filter_map(char::from_u32) {
            let s = format!("x{c}y");
            assert_eq!(visible_chars(&s), if c.is_whitespace() { 2 } else { 3 }, "{c:?}");
        }
        // Runs of them across the counting blocks, each block full of
        // matches, and one at the very end.
        let every: String = (0x80..=0x10_FFFF)
            .filter_map(char::from_u32)
            .filter(|c| c.is_whitespace())
            .collect();
        for text in [
            "\u{3000}".repeat(300),
            format!("{}x\u{a0}", every.repeat(40)),
            format!("中{}文\u{85}", "\u{2029}。".repeat(99)),
        ] {
            let wide = text
                .chars()
                .filter(|c| !c.is_ascii() && c.is_whitespace())
                .count();
            assert_eq!(wide_spaces(text.as_bytes()), wide, "{text:?}");
            assert_eq!(
                visible_chars(&text),
                text.chars().filter(|c| !c.is_whitespace()).count()
            );
        }
    }

    /// [`is_folded`] as it was first written (a walk over the chars).
    fn folded_reference(text: &str, single_line: bool) -> bool {
        let mut prev_ws = true;
        for c in text.chars() {
            if c == '\n' && !single_line {
                if prev_ws {
                    return false;
                }
                prev_ws = true;
            } else if c.is_whitespace() {
                if prev_ws || c != ' ' {
                    return false;
                }
                prev_ws = true;
            } else {
                prev_ws = false;
            }
        }
        !prev_ws || text.is_empty()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        #[test]
        fn is_folded_is_the_reference_check(
            text in "[ab中é \n\t\r\u{85}\u{a0}\u{2000}\u{3000}\u{3001}]{0,12}",
            long in 0usize..3,
        ) {
            // Long texts cross the 64-byte blocks.
            let text = format!("{}{text}{}", "word ".repeat(long * 20).trim_start(), "x".repeat(long * 30));
            for single_line in [false, true] {
                proptest::prop_assert_eq!(is_folded(&text, single_line), folded_reference(&text, single_line), "{:?}", text);
            }
            proptest::prop_assert_eq!(visible_chars(&text), text.chars().filter(|c| !c.is_whitespace()).count());
        }
    }

    #[test]
    fn single_line_folds_newlines() {
        let n = FoldWhitespace { single_line: true };
        assert_eq!(n.normalize(Cow::Borrowed(" a\n\nb  c ")), "a b c");
        assert!(matches!(n.normalize(Cow::Borrowed("a b")), Cow::Borrowed(_)));
    }
}
