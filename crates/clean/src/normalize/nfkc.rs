//! Unicode NFKC compatibility folding.
//!
//! Catches what the width step does not: ligatures (`ﬁ`), circled and parenthesized
//! numbers, CJK compatibility ideographs, half-width katakana, superscripts. All are
//! presentation variants that should not make two copies of a text differ.

use std::borrow::Cow;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

use super::{Normalizer, skip_ascii, starts_han};
use crate::config::Step;

/// Chars that NFKC never changes and that never combine with a neighbour: a cheap
/// test that covers nearly all of a Chinese or English text.
fn is_stable(c: char) -> bool {
    matches!(c as u32,
        0x00..=0x7F
        | 0x3400..=0x4DBF | 0x4E00..=0x9FFF // CJK unified ideographs (not compatibility)
        | 0x3001 | 0x3002 | 0x3008..=0x3011 // 、。〈〉《》「」『』【】
        | 0x2014 | 0x2018 | 0x2019 | 0x201C | 0x201D | 0x00B7 // — ‘ ’ “ ” ·
    )
}

/// `is_nfkc_quick(text.chars())`, with the stable chars passed on their bytes:
/// ASCII and U+4000..U+4DBF, U+4E00..U+9FFF without decoding, the other
/// stable chars without the two table look-ups (combining class and
/// quick-check property) the crate's check makes for every char beyond
/// ASCII. A stable char is a starter whose property is
/// Yes (`tests::stable_chars_are_starters_nfkc_allows`), which is how the crate's
/// check treats ASCII: its state (the last combining class) goes back to 0, so the
/// answer is the crate's (`tests::quick_check_answers_as_the_crate_does`).
/// The crate's check over every char of a Chinese page with one curly quote or
/// ellipsis beyond the stable set was most of this step's cost (issue 37).
fn quick_check(text: &str) -> IsNormalized {
    let bytes = text.as_bytes();
    let mut last_cc = 0u8;
    let mut result = IsNormalized::Yes;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            0x00..=0x7F => {
                i = skip_ascii(bytes, i + 1);
                last_cc = 0;
                continue;
            }
            // U+4000..U+4DBF and U+4E00..U+9FFF (U+4DC0..U+4DFF are not
            // `is_stable`'s).
            0xE4..=0xE9 if starts_han(bytes, i) => {
                i += 3;
                last_cc = 0;
                continue;
            }
            _ => {}
        }
        let Some(c) = text.get(i..).and_then(|s| s.chars().next()) else {
            break;
        };
        i += c.len_utf8();
        if is_stable(c) {
            last_cc = 0;
            continue;
        }
        let cc = canonical_combining_class(c);
        if last_cc > cc && cc != 0 {
            return IsNormalized::No;
        }
        match is_nfkc_quick(std::iter::once(c)) {
            IsNormalized::Yes => {}
            IsNormalized::No => return IsNormalized::No,
            IsNormalized::Maybe => result = IsNormalized::Maybe,
        }
        last_cc = cc;
    }
    result
}

/// Applies NFKC, skipping the work when a quick check says the text is already NFKC.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nfkc;

impl Normalizer for Nfkc {
    fn name(&self) -> &'static str {
        Step::Nfkc.name()
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        if quick_check(&text) == IsNormalized::Yes {
            return text;
        }
        // Normalize only the runs of other chars, each with the char before it (which
        // may compose with it). Stable chars never compose with their predecessor, so
        // the result equals NFKC of the whole text.
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut prev_start = None;
        let mut run_start = None;
        let bytes = text.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            // Stable or not, the bytes it takes, and where the last char of
            // them starts: a run of ASCII is taken whole.
            let (stable, len, last) = match b {
                0x00..=0x7F => {
                    let end = skip_ascii(bytes, i + 1);
                    (true, end - i, end - 1 - i)
                }
                // U+4000..U+4DBF and U+4E00..U+9FFF: CJK ideographs.
                0xE4..=0xE9 if starts_han(bytes, i) => (true, 3, 0),
                _ => match text.get(i..).and_then(|s| s.chars().next()) {
                    Some(c) => (is_stable(c), c.len_utf8(), 0),
                    None => break,
                },
            };
            if stable {
                if let Some(s) = run_start.take() {
                    out.push_str(&text[copied..s]);
                    out.extend(text[s..i].nfkc());
                    copied = i;
                }
            } else if run_start.is_none() {
                run_start = Some(prev_start.filter(|&p| p >= copied).unwrap_or(i));
            }
            prev_start = Some(i + last);
            i += len;
        }
        if let Some(s) = run_start {
            out.push_str(&text[copied..s]);
            out.extend(text[s..].nfkc());
        } else {
            out.push_str(&text[copied..]);
        }
        Cow::Owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_chars_are_starters_nfkc_allows() {
        let stable: Vec<char> = (0..=0x10_FFFF)
            .filter_map(char::from_u32)
            .filter(|&c| is_stable(c))
            .collect();
        assert!(stable.len() > 27_000, "{}", stable.len());
        for c in stable {
            assert_eq!(canonical_combining_class(c), 0, "{c:?}");
            assert_eq!(is_nfkc_quick(std::iter::once(c)), IsNormalized::Yes, "{c:?}");
        }
    }

    #[test]
    fn quick_check_answers_as_the_crate_does_on_examples() {
        for t in [
            "",
            "plain ascii",
            "中文，句号。“引号”……",
            "cafe\u{301} ok",
            "a\u{301}\u{316}b",
            "a\u{316}\u{301}b",
            "中\u{301}\u{316}",
            "ﬁnance ①",
            "ｶﾀｶﾅ\u{3099}",
            "한국어 텍스트 e\u{301}",
            "\u{b7}\u{301}\u{300}",
            "a long run of ascii, then k\u{301} and \u{2026} ...",
            "abcdefghijk\u{301}\u{316}abcdefgh\u{fb01}",
        ] {
            assert_eq!(quick_check(t), is_nfkc_quick(t.chars()), "{t:?}");
            // A mark after a long ASCII run composes with the run's last char.
            let expected: String = t.nfkc().collect();
            assert_eq!(Nfkc.normalize(Cow::Borrowed(t)), expected, "{t:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        /// Stable chars, starters of other kinds, marks of several classes
        /// (in and out of order), compatibility chars and Maybe chars.
        #[test]
        fn quick_check_answers_as_the_crate_does(
            text in "[a-c 中文\u{4e00}\u{4000}\u{4dc0}\u{4dff}\u{4fff}\u{4dbf}\u{3400}\u{3001}\u{300c}\u{2014}\u{2019}\u{b7}\u{e9}\u{300}\u{301}\u{316}\u{327}\u{5b0}\u{3099}\u{309a}\u{ff76}\u{fb01}\u{2460}\u{2026}\u{1100}\u{1161}\u{11a8}\u{ac00}\u{f900}\u{a0}]{0,24}"
        ) {
            proptest::prop_assert_eq!(quick_check(&text), is_nfkc_quick(text.chars()));
        }
    }

    normalizer_tests!(
        Nfkc,
        [
            ("ﬁnance", "finance", "finance"),
            ("①②③", "123", "123"),
            ("ｶﾀｶﾅ", "カタカナ", "カタカナ"),
            ("Ｈｉ", "Hi", "hi"),
            ("普通中文", "普通中文", "普通中文"),
            ("cafe\u{301} ok", "café ok", "café ok"),
            ("中文\u{a0}ﬁ中文①x", "中文 fi中文1x", "中文 fi中文1x"),
        ]
    );
}
