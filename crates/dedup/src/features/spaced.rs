//! The words of a text without Han but with some non-ASCII character, cut
//! by the Unicode word segmenter only where the text needs it
//! ([`every_script_words`]).

use super::{ascii_words, latin_words};
use crate::scripts;

/// The ASCII bytes around which the Unicode word rules (UAX #29) always
/// break: space (WB3d joins spaces only to spaces), tab (Other), LF, CR
/// and the Newline class (WB3a, WB3b). The one exception is a following
/// Extend, Format or ZWJ char, which joins the white space before it
/// (WB4): such a char is never ASCII, so it stays inside a span that
/// [`every_script_words`] hands to the segmenter whole, with that white
/// space.
#[inline]
fn breaks_around(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

/// The words of `text` (no Han in it, some non-ASCII char), in order, as
/// [`scripts::unicode_words_with`] cuts the whole text with
/// [`latin_words`] for its ASCII segments; found without running the
/// segmenter over the fields of ASCII only.
///
/// An English page with one accented name, a dash or a curly quote took
/// the segmenter over all of it: 12.6% of the crawl's CPU on the Debian
/// handbook (docs/BENCHMARKS.md, "Spaced text and letters"). Why it is the
/// same cut:
/// - A field of ASCII only between [`breaks_around`] bytes is bounded by
///   word breaks on both sides whatever surrounds it, so the segmenter cuts
///   it as it would cut it alone.
/// - There, every letter or digit is in a word-like segment, never broken
///   from a neighbouring letter or digit (WB5, WB8 to WB10), and every
///   other char that could join a word (`.` `'` `:` `,` `_`) is not
///   alphanumeric; `+` and `#` always stand alone, so [`latin_words`] never
///   sees them in a segment and never asks jieba. Its words are therefore
///   the field's [`ascii_words`].
/// - Every other field goes to the segmenter, in one span with its
///   neighbouring fields and the white space around them: the segmenter's
///   rules look one char beyond a break to tell whether a segment is a word
///   (`0\u{300}` alone is one, followed by a tab it is not; a space and a
///   ZWJ after a letter are one, at the start of a text they are not), so
///   a span starts and ends with an ASCII-only field and white space
///   beyond it, cut in their context as in the whole text.
///
/// - The fields between two spans are cut by one [`ascii_words`] call, found
///   by passing ASCII eight bytes at a time: the fields of a page with a few
///   curly quotes are never listed one by one (listing them was 4% of
///   `crawl dedup`'s instructions on the labelled set, issue 37).
///
/// `tests::every_script_words_cut_as_the_segmenter_does` compares both on
/// random text of many scripts, marks and spaces.
pub(super) fn every_script_words<'a>(text: &'a str, emit: &mut dyn FnMut(&'a str)) {
    let bytes = text.as_bytes();
    // Text before `done` has been cut.
    let mut done = 0;
    loop {
        let beyond = scripts::skip_ascii(bytes, done);
        if beyond == bytes.len() {
            ascii_words(&text[done..], emit);
            return;
        }
        // The field holding the byte beyond ASCII (F), and the one before it
        // (P, if any): both go to the segmenter, in a span from the white
        // space before the first of them. Every field between `done` and P is
        // ASCII with ASCII neighbours: its words are its `ascii_words`, and
        // white space holds no word, so they are cut in one call.
        let f_start = field_start(bytes, beyond);
        let f_space = space_start(bytes, f_start);
        let span = if f_space > done {
            space_start(bytes, field_start(bytes, f_space))
        } else {
            f_space
        };
        ascii_words(&text[done..span], emit);
        // The span runs on while a field is beyond ASCII or next to one.
        let mut prev_ascii = false;
        let mut next = next_field(bytes, field_end(bytes, beyond));
        loop {
            let Some((start, end, ascii)) = next else {
                segment(&text[span..], emit);
                return;
            };
            let after = next_field(bytes, end);
            if prev_ascii && ascii && after.is_none_or(|f| f.2) {
                segment(&text[span..start], emit);
                done = start;
                break;
            }
            (prev_ascii, next) = (ascii, after);
        }
    }
}

/// Where the field holding byte `i` (not a [`breaks_around`] byte) starts.
fn field_start(bytes: &[u8], i: usize) -> usize {
    bytes[..i]
        .iter()
        .rposition(|&b| breaks_around(b))
        .map_or(0, |k| k + 1)
}

/// Where the white space before a field starting at `start` starts (0 for
/// the first field: the white space that opens a text is its).
fn space_start(bytes: &[u8], start: usize) -> usize {
    bytes[..start]
        .iter()
        .rposition(|&b| !breaks_around(b))
        .map_or(0, |k| k + 1)
}

/// Where the field holding byte `i` ends.
fn field_end(bytes: &[u8], i: usize) -> usize {
    bytes[i..]
        .iter()
        .position(|&b| breaks_around(b))
        .map_or(bytes.len(), |k| i + k)
}

/// The first field at or after `i`: its start, end, and whether it is ASCII
/// only.
fn next_field(bytes: &[u8], i: usize) -> Option<(usize, usize, bool)> {
    let start = i + bytes.get(i..)?.iter().position(|&b| !breaks_around(b))?;
    let end = field_end(bytes, start);
    Some((start, end, bytes[start..end].is_ascii()))
}

/// The segmenter's cut, its ASCII segments cut by [`latin_words`].
fn segment<'a>(span: &'a str, emit: &mut dyn FnMut(&'a str)) {
    scripts::unicode_words_with(span, emit, &mut |word, emit| latin_words(word, emit));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fast(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        every_script_words(text, &mut |w| out.push(w));
        out
    }

    fn whole(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        segment(text, &mut |w| out.push(w));
        out
    }

    #[test]
    fn every_script_words_cut_as_the_segmenter_does_on_examples() {
        let texts = [
            "élan vital, naïve café — über straße, 1990s-era e-mail user_name@example.com",
            "The “quick” brown fox’s c++ and c# code: don't stop; a.b 3.14 1,000 x+y",
            "переход на новую версию python3.11 и rust 1.95",
            "ทุกสองสัปดาห์ภาษาไทย and English words",
            " \u{301}abc \t\u{ad}def\r\nghi \u{200d}jk l\u{301}m",
            "🇫🇷🇩🇪 flags and 👨\u{200d}👩\u{200d}👧 family",
            "ends with non-ASCII é",
            "é",
            "   ",
            "",
        ];
        for t in texts {
            assert_eq!(fast(t), whole(t), "{t:?}");
        }
        // The fast path did find words, so the comparison meant something.
        assert_eq!(fast("naïve café and c++ code"), ["naïve", "café", "and", "code"]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(std::env::var("SPACED_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(4000)))]
        #[test]
        fn every_script_words_cut_as_the_segmenter_does(
            text in "[a-c0-9 \t\r\n\u{b}\u{c}.,:;\u{5d1}\u{663}\u{1f3fb}\u{30fc}\u{ff21}\u{e49}\u{1100}\u{1161}'\"_+#&%\\-/@éüж\u{3b1}\u{5d0}\u{627}\u{e01}-\u{e04}\u{e40}\u{ac00}\u{3042}\u{30a2}\u{300}\u{301}\u{ad}\u{200b}-\u{200d}\u{2019}\u{2014}\u{a0}\u{3000}\u{85}\u{2028}\u{1f1e6}-\u{1f1e8}\u{1f600}\u{fe0f}]{0,60}"
        ) {
            proptest::prop_assert_eq!(fast(&text), whole(&text));
        }

        /// Fields as pages have them (words, numbers, code, marks and
        /// joiners at their edges) between runs of white space.
        #[test]
        fn every_script_words_cut_fields_as_the_segmenter_does(
            fields in proptest::collection::vec(
                (
                    "[ \t\r\n\u{b}\u{c}]{1,3}",
                    proptest::sample::select(FIELDS),
                    "[a-z0-9.,:'_+#\\-é\u{300}\u{200d}\u{ad}\u{2019}]{0,3}",
                ),
                0..30,
            )
        ) {
            let text: String = fields.iter().map(|(s, f, t)| format!("{s}{f}{t}")).collect();
            proptest::prop_assert_eq!(fast(&text), whole(&text));
        }
    }

    const FIELDS: &[&str] = &[
        "the",
        "c++",
        "c#",
        "x+y",
        "3.14",
        "1,000",
        "don't",
        "user_name",
        "a.b.c",
        "e-mail",
        "50%",
        "café",
        "naïve",
        "straße",
        "переход",
        "версию",
        "αλεπού",
        "البيانات",
        "ההפעלה",
        "ภาษาไทย",
        "한국어",
        "カタカナ",
        "こんにちは",
        "0\u{300}",
        "a\u{301}",
        "\u{301}a",
        "\u{200d}jk",
        "\u{ad}def",
        "“quoted”",
        "fox’s",
        "—",
        "…",
        "🇫🇷",
        "👨\u{200d}👩",
        "👍\u{1f3fb}",
        "٣٫٤",
        "ｆｕｌｌ",
        "\u{a0}",
        "\u{3000}",
        "\u{2028}",
        "\u{85}",
        "\u{200b}",
        "",
    ];
}
