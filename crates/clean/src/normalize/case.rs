//! Lower-casing.
//!
//! `Breaking NEWS` and `breaking news` are the same headline. Chinese has no case, so
//! this only touches Latin (and other bicameral scripts).

use std::borrow::Cow;

use super::Normalizer;

/// Lower-cases the text when it has any upper-case letter.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lowercase;

impl Normalizer for Lowercase {
    fn name(&self) -> &'static str {
        "lowercase"
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        let Some(first) = text.char_indices().find(|&(_, c)| is_upper(c)).map(|(i, _)| i) else {
            return text;
        };
        let mut out = String::with_capacity(text.len());
        out.push_str(&text[..first]);
        for c in text[first..].chars() {
            if is_upper(c) {
                out.extend(c.to_lowercase());
            } else {
                out.push(c);
            }
        }
        Cow::Owned(out)
    }
}

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
