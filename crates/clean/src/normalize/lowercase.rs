//! Lower-casing.
//!
//! `Breaking NEWS` and `breaking news` are the same headline. Chinese has no case, so
//! this only touches Latin (and other bicameral scripts).

use std::borrow::Cow;

use super::{CharAction, LeadSet, Normalizer, map_chars_by_lead};
use crate::config::Step;

/// Lower-cases the text when it has any upper-case letter.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lowercase;

impl Normalizer for Lowercase {
    fn name(&self) -> &'static str {
        Step::Lowercase.name()
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        map_chars_by_lead(text, &LEADS, |c| {
            if is_upper(c) {
                CharAction::Lowercase
            } else {
                CharAction::Keep
            }
        })
    }
}

/// The first bytes of every upper-case char: `A..=Z`, U+0080..U+2FFF, U+A000..U+FFFF
/// and the supplementary planes (CJK and most Hangul, U+3000..U+9FFF, have no case).
const LEADS: LeadSet = LeadSet::new(&[(b'A', b'Z'), (0xC2, 0xE2), (0xEA, 0xF4)]);

/// `char::is_uppercase`, without the table lookup for scripts that have no case.
fn is_upper(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_uppercase()
    } else if matches!(c as u32, 0x2E80..=0x9FFF | 0xAC00..=0xD7A3) {
        false
    } else {
        c.is_uppercase()
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
            let by_leads = map_chars_by_lead(Cow::Borrowed(text.as_str()), &LEADS, |c| if is_upper(c) { CharAction::Lowercase } else { CharAction::Keep });
            let every = crate::normalize::map_chars(Cow::Borrowed(text.as_str()), |c| if is_upper(c) { CharAction::Lowercase } else { CharAction::Keep });
            proptest::prop_assert_eq!(by_leads, every);
        }
    }

    #[test]
    fn lead_set_covers_every_upper_case_char() {
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            if is_upper(c) {
                assert!(LEADS.contains_char(c), "{c:?}");
            }
        }
    }

    normalizer_tests!(
        Lowercase,
        [
            ("Breaking NEWS", "breaking news", "breaking news"),
            ("ÉCOLE Straße", "école straße", "école straße"),
            ("中文 GDP 增长", "中文 gdp 增长", "中文 gdp 增长"),
            ("already lower", "already lower", "already lower"),
        ]
    );
}
