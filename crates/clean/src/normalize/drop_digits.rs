//! Dropping digits (off by default).
//!
//! Useful when pages differ only by counters, dates or prices that should not make
//! them distinct. Dangerous otherwise: it makes "page 1" and "page 2", or two daily
//! reports that differ only in their figures, identical; hence off by default.

use std::borrow::Cow;

use super::{CharAction, Normalizer, map_chars};
use crate::config::Step;

/// Removes every numeric char (ASCII and other decimal digits, numeric letters such
/// as `Ⅻ` and `〇`); CJK numerals such as `一二三` are words and stay.
#[derive(Debug, Clone, Copy, Default)]
pub struct DropDigits;

impl Normalizer for DropDigits {
    fn name(&self) -> &'static str {
        Step::DropDigits.name()
    }

    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str> {
        map_chars(text, |c| {
            if c.is_numeric() {
                CharAction::Drop
            } else {
                CharAction::Keep
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The default pipeline keeps digits: the third column shows it.
    normalizer_tests!(
        DropDigits,
        [
            ("page 1", "page ", "page 1"),
            ("2024年5月1日", "年月日", "2024年5月1日"),
            ("第一章", "第一章", "第一章"),
            ("no digits", "no digits", "no digits"),
        ]
    );

    #[test]
    fn makes_pages_equal() {
        let a = DropDigits.normalize(Cow::Borrowed("page 1"));
        let b = DropDigits.normalize(Cow::Borrowed("page 2"));
        assert_eq!(a, b);
    }
}
