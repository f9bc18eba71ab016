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
            i += 1;
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
        let mut out = String::with_capacity(text.len());
        out.push_str(&text[..first]);
        let mut gap = false; // a symbol was dropped since the last kept char
        for c in text[first..].chars() {
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
        Cow::Owned(out)
    }
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
