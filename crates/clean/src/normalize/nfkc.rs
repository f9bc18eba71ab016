//! Unicode NFKC compatibility folding.
//!
//! Catches what the width step does not: ligatures (`ﬁ`), circled and parenthesized
//! numbers, CJK compatibility ideographs, half-width katakana, superscripts. All are
//! presentation variants that should not make two copies of a text differ.

use std::borrow::Cow;

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

use super::Normalizer;
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

/// `text.chars().all(is_stable)`, without decoding ASCII and U+5000..U+9FFF.
fn all_stable(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            0x00..=0x7F => i += 1,
            0xE5..=0xE9 => i += 3,
            _ => match text.get(i..).and_then(|s| s.chars().next()) {
                Some(c) if is_stable(c) => i += c.len_utf8(),
                _ => return false,
            },
        }
    }
    true
}

/// Applies NFKC, skipping the work when a quick check says the text is already NFKC.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nfkc;

impl Normalizer for Nfkc {
    fn name(&self) -> &'static str {
        Step::Nfkc.name()
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        if all_stable(&text) || is_nfkc_quick(text.chars()) == IsNormalized::Yes {
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
            let (stable, len) = match b {
                0x00..=0x7F => (true, 1),
                0xE5..=0xE9 => (true, 3), // U+5000..U+9FFF: CJK ideographs
                _ => match text.get(i..).and_then(|s| s.chars().next()) {
                    Some(c) => (is_stable(c), c.len_utf8()),
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
            prev_start = Some(i);
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
