//! Full-width to half-width folding.
//!
//! Chinese and Japanese sites often type Latin letters, digits and punctuation in
//! their full-width forms (`ＡＢＣ１２３`); a copy retyped elsewhere uses ASCII. NFKC
//! does this too, but this step is cheap, explicit and can run when NFKC is off.

use std::borrow::Cow;

use super::{CharAction, LeadSet, Normalizer, map_chars_by_lead};
use crate::config::Step;

/// Folds U+FF01..U+FF5E to ASCII, the ideographic space U+3000 to a space, and the
/// full-width currency and sign forms U+FFE0..U+FFE6 to their usual characters.
#[derive(Debug, Clone, Copy, Default)]
pub struct FoldWidth;

/// The first bytes of U+3000 and U+F000..U+FFFF.
const LEADS: LeadSet = LeadSet::new(&[(0xE3, 0xE3), (0xEF, 0xEF)]);

fn fold(c: char) -> CharAction {
    let u = c as u32;
    match u {
        0xFF01..=0xFF5E => match char::from_u32(u - 0xFEE0) {
            Some(h) => CharAction::Replace(h),
            None => CharAction::Keep,
        },
        0x3000 => CharAction::Replace(' '),
        0xFFE0 => CharAction::Replace('¢'),
        0xFFE1 => CharAction::Replace('£'),
        0xFFE2 => CharAction::Replace('¬'),
        0xFFE3 => CharAction::Replace('¯'),
        0xFFE4 => CharAction::Replace('¦'),
        0xFFE5 => CharAction::Replace('¥'),
        0xFFE6 => CharAction::Replace('₩'),
        _ => CharAction::Keep,
    }
}

impl Normalizer for FoldWidth {
    fn name(&self) -> &'static str {
        Step::FoldWidth.name()
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        map_chars_by_lead(text, &LEADS, fold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// The lead-set scan (eight bytes at a time where it can) changes
        /// what a scan of every char changes.
        #[test]
        fn the_lead_scan_changes_what_every_char_scan_does(text in crate::normalize::test_support::PER_CHAR_TEXT) {
            let by_leads = map_chars_by_lead(Cow::Borrowed(text.as_str()), &LEADS, fold);
            let every = crate::normalize::map_chars(Cow::Borrowed(text.as_str()), fold);
            proptest::prop_assert_eq!(by_leads, every);
        }
    }

    #[test]
    fn lead_set_covers_every_changed_char() {
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            if fold(c) != CharAction::Keep {
                assert!(LEADS.contains_char(c), "{c:?}");
            }
        }
    }

    normalizer_tests!(
        FoldWidth,
        [
            ("ＡＢＣ１２３", "ABC123", "abc123"),
            ("ｈｅｌｌｏ　ｗｏｒｌｄ！", "hello world!", "hello world!"),
            ("价格：￥１００", "价格:¥100", "价格:¥100"),
            ("plain ascii", "plain ascii", "plain ascii"),
            ("中文，句号。", "中文,句号。", "中文,句号。"),
        ]
    );

    #[test]
    fn borrows_when_unchanged() {
        let out = FoldWidth.normalize(Cow::Borrowed("abc 中文"));
        assert!(matches!(out, Cow::Borrowed(_)));
    }
}
