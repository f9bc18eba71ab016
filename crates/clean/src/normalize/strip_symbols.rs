//! Emoji and decorative symbols.
//!
//! Titles and posts get decorated (`【重磅】🔥`, `★★★`, `▶`, icon-font glyphs) differently
//! by each site that republishes them; the words are what identify the article.

use std::borrow::Cow;

use super::{LeadSet, Normalizer};
use crate::config::Step;

/// Removes emoji, pictographs, dingbats, arrows, box drawing, geometric shapes,
/// variation selectors, private-use glyphs (icon fonts) and bullets.
///
/// A removed symbol between two Latin letters or digits leaves a space (`hello🎉world`
/// stays two words); elsewhere it leaves nothing (`好消息🎉今天` becomes `好消息今天`).
#[derive(Debug, Clone, Copy, Default)]
pub struct StripSymbols;

/// Whether `c` is an emoji or a decorative symbol.
#[must_use]
pub fn is_decorative(c: char) -> bool {
    matches!(c as u32,
        0x2022 | 0x2023 | 0x203B | 0x2043 | 0x20E3 // bullets, reference mark, keycap
        | 0x2190..=0x21FF // arrows
        | 0x2300..=0x23FF // misc technical (⌚ ⏰ ⏩)
        | 0x2500..=0x25FF // box drawing, blocks, geometric shapes
        | 0x2600..=0x27BF // misc symbols, dingbats
        | 0x27F0..=0x27FF | 0x2900..=0x297F // supplemental arrows
        | 0x2B00..=0x2BFF // misc symbols and arrows (⭐ ⬆)
        | 0x3030 | 0x303D | 0x3297 | 0x3299 // emoji-style CJK marks
        | 0xE000..=0xF8FF // private use (icon fonts)
        | 0xFE00..=0xFE0F // variation selectors
        | 0x1F000..=0x1FAFF // mahjong .. symbols and pictographs extended-A
        | 0xE0000..=0xE007F // tags (flag sequences)
        | 0xE0100..=0xE01EF // variation selectors supplement
        | 0xF0000..=0x10FFFF // supplementary private use
    )
}

/// The first bytes of every decorative char: U+2000..U+3FFF, U+E000..U+FFFF and the
/// supplementary planes 1, 14, 15 and 16.
const LEADS: LeadSet = LeadSet::new(&[(0xE2, 0xE3), (0xEE, 0xEF), (0xF0, 0xF0), (0xF3, 0xF4)]);

/// The byte offset of the first decorative char of `text`.
fn first_decorative(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if !LEADS.contains(b) {
            i = LEADS.past(bytes, i);
            continue;
        }
        let c = text.get(i..)?.chars().next()?;
        if is_decorative(c) {
            return Some(i);
        }
        i += c.len_utf8();
    }
    None
}

impl Normalizer for StripSymbols {
    fn name(&self) -> &'static str {
        Step::StripSymbols.name()
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        let Some(first) = first_decorative(&text) else {
            return text;
        };
        Cow::Owned(stripped(&text, first))
    }
}

/// `text` without its decorative chars, the first at byte `first`: a space
/// where a run of them stood between two ASCII letters or digits
/// (`hello🎉world`), so that they stay two words. The kept spans between
/// runs are copied whole and found by the lead-byte scan: a page with one
/// bullet took the rest of its text char by char (issue 37).
fn stripped(text: &str, first: usize) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut from, mut at) = (0, Some(first));
    while let Some(run) = at {
        out.push_str(&text[from..run]);
        let mut i = run;
        let mut next = text[i..].chars().next();
        while let Some(c) = next.filter(|&c| is_decorative(c)) {
            i += c.len_utf8();
            next = text[i..].chars().next();
        }
        if next.is_some_and(|c| c.is_ascii_alphanumeric())
            && out.chars().next_back().is_some_and(|p| p.is_ascii_alphanumeric())
        {
            out.push(' ');
        }
        from = i;
        at = first_decorative(&text[i..]).map(|k| i + k);
    }
    out.push_str(&text[from..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lead_set_covers_every_decorative_char() {
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            if is_decorative(c) {
                assert!(LEADS.contains_char(c), "{c:?}");
            }
        }
    }

    /// The char-by-char loop [`stripped`] replaced.
    fn stripped_char_by_char(text: &str) -> String {
        let mut out = String::new();
        let mut gap = false;
        for c in text.chars() {
            if is_decorative(c) {
                gap = true;
                continue;
            }
            if gap
                && c.is_ascii_alphanumeric()
                && out.chars().next_back().is_some_and(|p| p.is_ascii_alphanumeric())
            {
                out.push(' ');
            }
            gap = false;
            out.push(c);
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        #[test]
        fn stripped_as_char_by_char(text in "[a-c0-9 中é\u{2022}\u{2190}\u{2500}\u{2605}\u{3030}\u{e600}\u{fe0f}\u{1f389}\u{1f3fd}\u{e0061}\u{f0000}\u{2014}\u{3001}]{0,24}") {
            let expected = stripped_char_by_char(&text);
            let got = StripSymbols.normalize(Cow::Borrowed(text.as_str()));
            proptest::prop_assert_eq!(got.as_ref(), expected.as_str());
        }
    }

    normalizer_tests!(
        StripSymbols,
        [
            ("好消息🎉今天", "好消息今天", "好消息今天"),
            ("hello🎉world", "hello world", "hello world"),
            ("【重磅】标题🔥🔥", "【重磅】标题", "【重磅】标题"),
            ("★★★ 五星 ★★★", " 五星 ", "五星"),
            ("👍🏽 ok", " ok", "ok"),
            ("▶ 播放 ➜ next", " 播放  next", "播放 next"),
            ("\u{E600}图标", "图标", "图标"),
            ("❤\u{FE0F} love", " love", "love"),
            ("普通文本 plain", "普通文本 plain", "普通文本 plain"),
        ]
    );
}
