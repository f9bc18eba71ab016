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

fn is_folded(text: &str, single_line: bool) -> bool {
    let bytes = text.as_bytes();
    let mut prev_ws = true; // start of text: leading whitespace is not folded
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        // Non-ASCII white space starts with 0xC2 (NEL, NBSP), 0xE1 (U+1680), 0xE2
        // (U+2000..) or 0xE3 (U+3000): other chars need no decoding.
        let c = if b < 0x80 {
            char::from(b)
        } else if matches!(b, 0xC2 | 0xE1..=0xE3) {
            match text.get(i..).and_then(|s| s.chars().next()) {
                Some(c) => c,
                None => return false,
            }
        } else {
            prev_ws = false;
            i += if b < 0xE0 {
                2
            } else if b < 0xF0 {
                3
            } else {
                4
            };
            continue;
        };
        i += c.len_utf8();
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

impl Normalizer for FoldWhitespace {
    fn name(&self) -> &'static str {
        Step::FoldWhitespace.name()
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        if is_folded(&text, self.single_line) {
            return text;
        }
        let mut out = String::with_capacity(text.len());
        if self.single_line {
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
        Cow::Owned(out)
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

    #[test]
    fn single_line_folds_newlines() {
        let n = FoldWhitespace { single_line: true };
        assert_eq!(n.normalize(Cow::Borrowed(" a\n\nb  c ")), "a b c");
        assert!(matches!(n.normalize(Cow::Borrowed("a b")), Cow::Borrowed(_)));
    }
}
