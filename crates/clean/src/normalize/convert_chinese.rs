//! Traditional to simplified Chinese with the OpenCC dictionaries (the converter in
//! `normalize/opencc.rs`, byte-identical to `ferrous-opencc` and several times faster).
//!
//! A Taiwan or Hong Kong mirror of a mainland article is the same article; after this
//! step both produce the same tokens. The converter holds large dictionaries and is
//! expensive to build, so it is built once per [`crate::Cleaner`] and shared.

use std::borrow::Cow;
use std::fmt;

use super::Normalizer;
use super::opencc::FastOpencc;
use crate::config::{ChineseVariant, Step};
use crate::error::CleanError;

/// Converts Chinese text to simplified script with the chosen OpenCC profile.
///
/// Most text on Chinese sites is already simplified, so conversion runs only on
/// the clauses (text between punctuation or line breaks) that contain a char OpenCC
/// would change on its own; the others are copied. Dictionary phrases are words and
/// do not span punctuation, so t2s and hk2s give the same result as converting the
/// whole text. With tw2sp, a Taiwan term written entirely in chars shared by both
/// scripts (`程式`) is left as is when its clause has no traditional char.
pub struct ConvertChinese {
    variant: ChineseVariant,
    opencc: Option<FastOpencc>,
    /// Bit per BMP char: OpenCC changes it when it stands alone.
    changes: Vec<u64>,
}

impl fmt::Debug for ConvertChinese {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConvertChinese")
            .field("variant", &self.variant)
            .finish_non_exhaustive()
    }
}

impl ConvertChinese {
    /// Builds the converter (a few milliseconds: do it once).
    ///
    /// Never fails today (the dictionaries are embedded); the `Result` is kept so a
    /// profile that cannot be built can still be reported.
    pub fn new(variant: ChineseVariant) -> Result<Self, CleanError> {
        let Some(opencc) = FastOpencc::new(variant) else {
            return Ok(Self {
                variant,
                opencc: None,
                changes: Vec::new(),
            });
        };
        let mut changes = vec![0u64; 0x1_0000 / 64];
        let mut buf = [0u8; 4];
        let mut out = String::new();
        for c in han_chars() {
            if !opencc.may_start_key(c) {
                continue;
            }
            let s = c.encode_utf8(&mut buf);
            out.clear();
            opencc.convert_into(s, &mut out);
            if out != *s {
                let u = c as usize;
                if let Some(w) = changes.get_mut(u / 64) {
                    *w |= 1 << (u % 64);
                }
            }
        }
        Ok(Self {
            variant,
            opencc: Some(opencc),
            changes,
        })
    }

    /// Whether OpenCC may change `c`; chars outside the BMP always may.
    fn may_change(&self, c: char) -> bool {
        let u = c as usize;
        if u < 0x2E80 {
            return false;
        }
        match self.changes.get(u / 64) {
            Some(w) => w & (1 << (u % 64)) != 0,
            None => true,
        }
    }

    /// The chars of `text`, with their offsets, that OpenCC may change or
    /// (with `boundaries`) that end a clause, read on the bytes: a char
    /// whose lead byte is below 0xE2 (below U+2000: ASCII, Latin, Cyrillic)
    /// is neither changed nor a full-width boundary, and is passed without
    /// decoding it; ASCII eight bytes at a time unless its boundaries are
    /// asked for (each char decoded was 1.6% of `crawl dedup`'s instructions
    /// on the labelled set, issue 37).
    fn chars_that_matter<'t>(text: &'t str, boundaries: bool) -> impl Iterator<Item = (usize, char)> + 't {
        let bytes = text.as_bytes();
        let mut i = 0;
        std::iter::from_fn(move || {
            loop {
                let b = *bytes.get(i)?;
                let at = i;
                if b < 0x80 {
                    if !boundaries {
                        i = super::skip_ascii(bytes, i + 1);
                        continue;
                    }
                    i += 1;
                    if is_boundary(char::from(b)) {
                        return Some((at, char::from(b)));
                    }
                    continue;
                }
                i += super::utf8_width(b);
                if b >= 0xE2 {
                    return text.get(at..).and_then(|s| s.chars().next()).map(|c| (at, c));
                }
            }
        })
    }

    /// The profile this converter applies.
    #[must_use]
    pub fn variant(&self) -> ChineseVariant {
        self.variant
    }
}

/// The chars [`ConvertChinese::new`] converts one at a time to mark those
/// a conversion changes alone: the CJK blocks from U+2E80 and the
/// compatibility ideographs.
pub(super) fn han_chars() -> impl Iterator<Item = char> {
    ('\u{2E80}'..='\u{9FFF}').chain('\u{F900}'..='\u{FAFF}')
}

/// Whether `text` may contain Han characters: every CJK ideograph is encoded in UTF-8
/// with a lead byte of 0xE3 or more, so pure Latin/Cyrillic/... text skips OpenCC.
fn may_contain_han(text: &str) -> bool {
    text.bytes().any(|b| b >= 0xE3)
}

/// Clause boundaries: no dictionary phrase spans them.
fn is_boundary(c: char) -> bool {
    matches!(
        c,
        '\n' | ',' | '.' | '!' | '?' | ';' | ':' | '。' | '，' | '、' | '！' | '？' | '；' | '：'
    )
}

impl Normalizer for ConvertChinese {
    fn name(&self) -> &'static str {
        Step::ConvertChinese.name()
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        let Some(cc) = &self.opencc else {
            return text;
        };
        if !may_contain_han(&text) || !Self::chars_that_matter(&text, false).any(|(_, c)| self.may_change(c))
        {
            return text;
        }
        let mut out = String::with_capacity(text.len());
        let mut start = 0;
        let mut flagged = false;
        for (i, c) in Self::chars_that_matter(&text, true) {
            if is_boundary(c) {
                let clause = &text[start..i];
                if flagged {
                    cc.convert_into(clause, &mut out);
                } else {
                    out.push_str(clause);
                }
                out.push(c);
                start = i + c.len_utf8();
                flagged = false;
            } else if !flagged && self.may_change(c) {
                flagged = true;
            }
        }
        let clause = &text[start..];
        if flagged {
            cc.convert_into(clause, &mut out);
        } else {
            out.push_str(clause);
        }
        Cow::Owned(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::sync::OnceLock;

    use super::*;

    fn t2s() -> &'static ConvertChinese {
        static C: OnceLock<ConvertChinese> = OnceLock::new();
        C.get_or_init(|| ConvertChinese::new(ChineseVariant::T2s).unwrap())
    }

    /// The chars OpenCC changes alone, found by converting every one (as
    /// [`ConvertChinese::new`] did before it asked
    /// [`FastOpencc::may_start_key`] first), are those it marks.
    #[test]
    fn the_chars_marked_changing_are_those_a_conversion_changes() {
        for variant in crate::normalize::test_support::CONVERTING_VARIANTS {
            let conv = ConvertChinese::new(variant).unwrap();
            let cc = conv.opencc.as_ref().unwrap();
            let mut marked = 0;
            for c in han_chars() {
                let s = c.to_string();
                let changes = cc.convert(&s) != s;
                assert_eq!(conv.may_change(c), changes, "{variant:?} {c}");
                marked += usize::from(changes);
            }
            assert!(marked > 1000, "{variant:?}: {marked}");
        }
    }

    /// The char-by-char loop [`ConvertChinese::normalize`] had.
    fn by_chars(conv: &ConvertChinese, text: &str) -> String {
        let cc = conv.opencc.as_ref().unwrap();
        if !may_contain_han(text) || !text.chars().any(|c| conv.may_change(c)) {
            return text.to_owned();
        }
        let (mut out, mut start, mut flagged) = (String::new(), 0, false);
        for (i, c) in text.char_indices() {
            if is_boundary(c) {
                if flagged {
                    cc.convert_into(&text[start..i], &mut out);
                } else {
                    out.push_str(&text[start..i]);
                }
                out.push(c);
                start = i + c.len_utf8();
                flagged = false;
            } else if !flagged && conv.may_change(c) {
                flagged = true;
            }
        }
        if flagged {
            cc.convert_into(&text[start..], &mut out);
        } else {
            out.push_str(&text[start..]);
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        #[test]
        fn clauses_convert_as_the_char_loop_did(
            text in "[a-z ,.!?;:\n中文开放開放轉換发發髮乾隆後臺台，。、！？；：\u{2014}\u{201c}\u{201d}\u{2e80}\u{3001}é\u{ff01}\u{3000}\u{20000}]{0,30}"
        ) {
            let got = t2s().normalize(Cow::Borrowed(text.as_str()));
            let expected = by_chars(t2s(), &text);
            proptest::prop_assert_eq!(got.as_ref(), expected.as_str());
        }
    }

    normalizer_tests!(
        t2s(),
        [
            ("開放中文轉換", "开放中文转换", "开放中文转换"),
            ("臺灣的經濟發展", "台湾的经济发展", "台湾的经济发展"),
            ("简体保持不变", "简体保持不变", "简体保持不变"),
            ("English Only", "English Only", "english only"),
            (
                "简体句子，繁體句子。",
                "简体句子，繁体句子。",
                "简体句子,繁体句子。"
            ),
            ("乾隆皇帝，乾燥天氣", "乾隆皇帝，干燥天气", "乾隆皇帝,干燥天气"),
        ]
    );

    #[test]
    fn variants_build_and_convert() {
        for v in [ChineseVariant::Tw2sp, ChineseVariant::Hk2s] {
            let c = ConvertChinese::new(v).unwrap();
            assert_eq!(c.normalize(Cow::Borrowed("軟體與網絡")).chars().count(), 5);
            assert_ne!(c.normalize(Cow::Borrowed("國際")), "國際");
        }
        let off = ConvertChinese::new(ChineseVariant::Off).unwrap();
        assert_eq!(off.normalize(Cow::Borrowed("國際")), "國際");
    }

    #[test]
    fn t2s_tw_folds_taiwan_vocabulary_and_leaves_mainland_text() {
        let c = ConvertChinese::new(ChineseVariant::T2sTw).unwrap();
        assert_eq!(c.normalize(Cow::Borrowed("軟體與網路")), "软件与网络");
        // tw2sp's Taiwan variant chars rewrite mainland words; t2s_tw does not.
        let tw2sp = ConvertChinese::new(ChineseVariant::Tw2sp).unwrap();
        assert_eq!(tw2sp.normalize(Cow::Borrowed("为什么很显著")), "为什幺很显着");
        assert_eq!(c.normalize(Cow::Borrowed("为什么很显著")), "为什么很显著");
        assert_eq!(c.normalize(Cow::Borrowed("開放中文轉換")), "开放中文转换");
    }

    #[test]
    fn tw2sp_converts_taiwan_vocabulary() {
        let c = ConvertChinese::new(ChineseVariant::Tw2sp).unwrap();
        assert_eq!(c.normalize(Cow::Borrowed("軟體")), "软件");
    }
}
