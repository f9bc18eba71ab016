//! Control, zero-width and bidi characters.
//!
//! They are invisible, so a reader sees two copies as the same text, but they change
//! bytes, tokens and hashes. Sites insert zero-width spaces and soft hyphens as
//! anti-scraping watermarks or line-breaking hints.

use std::borrow::Cow;

use super::{CharAction, LeadSet, Normalizer, map_chars_by_lead};
use crate::config::Step;

/// Drops control chars (keeping `\n` and `\t`), zero-width and bidi format chars and
/// soft hyphens; turns `\r`, NEL and the Unicode line/paragraph separators into `\n`.
#[derive(Debug, Clone, Copy, Default)]
pub struct StripControl;

/// The first bytes of every char `classify` may change: ASCII controls but the tab and
/// the newline (kept, and a newline ends every line of a text), U+0080..U+00BF (C1
/// controls, NEL, soft hyphen), U+061C, U+180E, U+2000..U+2FFF and U+F000..U+FFFF.
const LEADS: LeadSet = LeadSet::new(&[
    (0x00, 0x08),
    (0x0B, 0x1F),
    (0x7F, 0x7F),
    (0xC2, 0xC2),
    (0xD8, 0xD8),
    (0xE1, 0xE2),
    (0xEF, 0xEF),
]);

fn classify(c: char) -> CharAction {
    match c {
        '\n' | '\t' => CharAction::Keep,
        '\r' | '\u{85}' | '\u{2028}' | '\u{2029}' => CharAction::Replace('\n'),
        '\u{0B}' | '\u{0C}' => CharAction::Replace(' '),
        c if c.is_control() => CharAction::Drop,
        '\u{AD}'
        | '\u{61C}'
        | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}' => CharAction::Drop,
        _ => CharAction::Keep,
    }
}

impl Normalizer for StripControl {
    fn name(&self) -> &'static str {
        Step::StripControl.name()
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        map_chars_by_lead(text, &LEADS, classify)
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
            let by_leads = map_chars_by_lead(Cow::Borrowed(text.as_str()), &LEADS, classify);
            let every = crate::normalize::map_chars(Cow::Borrowed(text.as_str()), classify);
            proptest::prop_assert_eq!(by_leads, every);
        }
    }

    #[test]
    fn lead_set_covers_every_changed_char() {
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            if classify(c) != CharAction::Keep {
                assert!(LEADS.contains_char(c), "{c:?}");
            }
        }
    }

    normalizer_tests!(
        StripControl,
        [
            ("zero\u{200B}width", "zerowidth", "zerowidth"),
            ("soft\u{AD}hyphen", "softhyphen", "softhyphen"),
            ("\u{FEFF}bom", "bom", "bom"),
            ("a\u{0}b\u{7}c\u{1B}d", "abcd", "abcd"),
            ("line\r\nnext", "line\n\nnext", "line\nnext"),
            ("中\u{200D}文\u{202E}", "中文", "中文"),
            ("tab\there", "tab\there", "tab here"),
        ]
    );
}
