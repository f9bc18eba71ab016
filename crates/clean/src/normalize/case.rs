//! Lower-casing.
//!
//! `Breaking NEWS` and `breaking news` are the same headline. Chinese has no case, so
//! this only touches Latin (and other bicameral scripts).

use std::borrow::Cow;

use super::{LeadSet, Normalizer};

/// Lower-cases the text when it has any upper-case letter.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lowercase;

impl Normalizer for Lowercase {
    fn name(&self) -> &'static str {
        "lowercase"
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        let mut out: Option<String> = None;
        let mut copied = 0; // bytes of `text` already in `out`
        let mut i = 0;
        let bytes = text.as_bytes();
        while let Some(&b) = bytes.get(i) {
            if !LEADS.contains(b) {
                i += 1;
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
        match out {
            None => text,
            Some(mut o) => {
                o.push_str(text.get(copied..).unwrap_or_default());
                Cow::Owned(o)
            }
        }
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
