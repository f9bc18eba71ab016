//! Lower-casing.
//!
//! `Breaking NEWS` and `breaking news` are the same headline. Chinese has no case, so
//! this only touches Latin (and other bicameral scripts).

use std::borrow::Cow;

#[cfg(test)]
use super::{CharAction, map_chars_by_lead};
use super::{LeadSet, Normalizer, finish_copy, skip_ascii};
use crate::config::Step;

/// Lower-cases the text when it has any upper-case letter.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lowercase;

impl Normalizer for Lowercase {
    fn name(&self) -> &'static str {
        Step::Lowercase.name()
    }

    /// `map_chars_by_lead`'s scan, but a capital of ASCII lower-cases
    /// the whole run of ASCII it starts at once, in vector code: one char
    /// at a time, each capital of an English text was a copy of the bytes
    /// before it and a push, 3% of `crawl dedup`'s CPU on the labelled set
    /// (issue 37). The same text as a char at a time
    /// (`tests::the_lead_scan_changes_what_every_char_scan_does`).
    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        let bytes = text.as_bytes();
        let mut out: Option<String> = None;
        let mut copied = 0; // bytes of `text` already in `out`
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if !LEADS.contains(b) {
                i = LEADS.skip(bytes, i);
                continue;
            }
            if b < 0x80 {
                // A capital (the only ASCII of the set): it and the
                // ASCII after it, lower-cased as one slice.
                let end = skip_ascii(bytes, i);
                let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                o.push_str(text.get(copied..i).unwrap_or_default());
                let start = o.len();
                o.push_str(text.get(i..end).unwrap_or_default());
                if let Some(run) = o.get_mut(start..) {
                    run.make_ascii_lowercase();
                }
                copied = end;
                i = end;
                continue;
            }
            let Some(c) = text.get(i..).and_then(|s| s.chars().next()) else {
                break;
            };
            let len = c.len_utf8();
            if is_upper(c) {
                let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                o.push_str(text.get(copied..i).unwrap_or_default());
                o.extend(c.to_lowercase());
                copied = i + len;
            }
            i += len;
        }
        finish_copy(text, out, copied)
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
            // The step itself, which lower-cases runs of ASCII whole.
            let by_runs = Lowercase.normalize(Cow::Borrowed(text.as_str()));
            proptest::prop_assert_eq!(&by_leads, &every);
            proptest::prop_assert_eq!(&by_runs, &every);
            // Borrowed exactly when nothing changes.
            proptest::prop_assert_eq!(matches!(by_runs, Cow::Borrowed(_)), by_runs == text.as_str());
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
