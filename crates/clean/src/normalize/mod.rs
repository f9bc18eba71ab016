//! Text normalizers: small composable steps, one per file, chained by a [`Pipeline`].
//!
//! Each step exists to make two copies of one text byte-identical when they differ
//! only in something a reader would not notice (width, script variant, invisible
//! characters, emoji, case, spacing). Every step returns `Cow::Borrowed` when it has
//! nothing to do, so a clean text passes through the pipeline without copies.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::config::{CleanConfig, Step};
use crate::error::CleanError;

/// The shared test macro: checks a normalizer alone, idempotent, and inside the
/// default pipeline. Defined before the submodules so they can use it.
#[cfg(test)]
macro_rules! normalizer_tests {
    ($normalizer:expr, [$(($input:expr, $alone:expr, $pipeline:expr)),* $(,)?]) => {
        #[test]
        fn alone() {
            use $crate::normalize::Normalizer as _;
            let n = $normalizer;
            $(
                assert_eq!(n.normalize(std::borrow::Cow::Borrowed($input)), $alone, "alone, input {:?}", $input);
            )*
        }

        #[test]
        fn idempotent() {
            use $crate::normalize::Normalizer as _;
            let n = $normalizer;
            $(
                let once = n.normalize(std::borrow::Cow::Borrowed($input)).into_owned();
                let twice = n.normalize(std::borrow::Cow::Borrowed(once.as_str())).into_owned();
                assert_eq!(once, twice, "idempotent, input {:?}", $input);
            )*
        }

        #[test]
        fn in_pipeline() {
            let p = $crate::normalize::test_support::default_text_pipeline();
            $(
                assert_eq!(p.run($input), $pipeline, "pipeline, input {:?}", $input);
            )*
        }
    };
}

// One module per step, named after it ([`Step::name`]), holding the type of the
// same name: `fold_width.rs` is `FoldWidth`, `order = ["fold_width"]`,
// `fold_width = true`.
pub mod convert_chinese;
pub mod drop_digits;
pub mod fold_whitespace;
pub mod fold_width;
pub mod lowercase;
pub mod nfkc;
mod opencc;
pub mod strip_control;
pub mod strip_markup;
pub mod strip_symbols;

pub use convert_chinese::ConvertChinese;
pub use drop_digits::DropDigits;
pub use fold_whitespace::FoldWhitespace;
pub use fold_width::FoldWidth;
pub use lowercase::Lowercase;
pub use nfkc::Nfkc;
pub use strip_control::StripControl;
pub use strip_markup::StripMarkup;
pub use strip_symbols::StripSymbols;

/// One normalization step.
///
/// Works on whole strings rather than chars because some steps (OpenCC phrases,
/// entities, tags) look at several chars at once. `Send + Sync` so that one
/// pipeline, with its expensive OpenCC dictionaries, serves every crawler thread.
pub trait Normalizer: Send + Sync + fmt::Debug {
    /// A short name for logs and errors: for the built-in steps, [`Step::name`].
    fn name(&self) -> &'static str;

    /// Normalizes `text`, borrowing it back unchanged when there is nothing to do.
    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str>;
}

/// An ordered chain of normalizers, cheap to clone (steps are shared).
#[derive(Debug, Clone, Default)]
pub struct Pipeline {
    steps: Vec<Arc<dyn Normalizer>>,
}

impl Pipeline {
    /// A pipeline of exactly these steps, for callers composing their own chain.
    #[must_use]
    pub fn new(steps: Vec<Arc<dyn Normalizer>>) -> Self {
        Self { steps }
    }

    /// Builds the chain described by `config`. `single_line` folds all whitespace,
    /// newlines included, into single spaces (titles); otherwise lines are kept.
    ///
    /// `chinese` lets a text and a title pipeline share one converter.
    pub(crate) fn from_config(
        config: &CleanConfig,
        single_line: bool,
        chinese: Option<&Arc<ConvertChinese>>,
    ) -> Result<Self, CleanError> {
        let mut seen = Vec::with_capacity(config.order.len());
        let mut steps: Vec<Arc<dyn Normalizer>> = Vec::new();
        for &step in &config.order {
            if seen.contains(&step) {
                return Err(CleanError::InvalidConfig(format!(
                    "step `{step}` is listed twice in `order`"
                )));
            }
            seen.push(step);
            if !config.enabled(step) {
                continue;
            }
            let n: Arc<dyn Normalizer> = match step {
                Step::StripMarkup => Arc::new(StripMarkup),
                Step::StripControl => Arc::new(StripControl),
                Step::FoldWidth => Arc::new(FoldWidth),
                Step::Nfkc => Arc::new(Nfkc),
                Step::ConvertChinese => match chinese {
                    Some(c) => c.clone(),
                    None => Arc::new(ConvertChinese::new(config.convert_chinese)?),
                },
                Step::StripSymbols => Arc::new(StripSymbols),
                Step::Lowercase => Arc::new(Lowercase),
                Step::DropDigits => Arc::new(DropDigits),
                Step::FoldWhitespace => Arc::new(FoldWhitespace { single_line }),
            };
            steps.push(n);
        }
        Ok(Self { steps })
    }

    /// Runs every step in order.
    #[must_use]
    pub fn run<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut cur = Cow::Borrowed(text);
        for step in &self.steps {
            cur = step.normalize(cur);
        }
        cur
    }

    /// The names of the steps, in order (for logs and tests).
    #[must_use]
    pub fn step_names(&self) -> Vec<&'static str> {
        self.steps.iter().map(|s| s.name()).collect()
    }
}

/// What a per-char step does with one char.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CharAction {
    Keep,
    Drop,
    Replace(char),
    /// The char's full lower-case mapping (which may be several chars).
    Lowercase,
}

/// Applies a per-char rule, copying only when some char changes.
pub(crate) fn map_chars<'a>(text: Cow<'a, str>, f: impl Fn(char) -> CharAction) -> Cow<'a, str> {
    map_chars_by_lead(text, &ALL_LEADS, f)
}

/// The UTF-8 lead bytes (and ASCII bytes) of the chars a per-char rule may change:
/// chars starting with any other byte are kept without decoding them, so a scan over
/// Chinese text (lead bytes 0xE4..=0xE9) is a tight byte loop.
#[derive(Debug)]
pub(crate) struct LeadSet {
    pub(crate) bytes: [bool; 256],
    /// No ASCII byte is in the set: a scan passes ASCII eight bytes at a
    /// time ([`skip_ascii`]).
    no_ascii: bool,
}

impl LeadSet {
    /// The set of `ranges` of bytes (inclusive).
    pub(crate) const fn new(ranges: &[(u8, u8)]) -> Self {
        let mut t = [false; 256];
        let mut no_ascii = true;
        let mut r = 0;
        while r < ranges.len() {
            let (lo, hi) = ranges[r];
            let mut b = lo as usize;
            while b <= hi as usize {
                t[b] = true;
                no_ascii &= b >= 0x80;
                b += 1;
            }
            r += 1;
        }
        Self { bytes: t, no_ascii }
    }

    /// The offset of the next byte at or after `i` that may start a char of
    /// the set: `i` itself, or past the run of ASCII there when no ASCII
    /// byte is in the set.
    #[inline]
    pub(crate) fn next_candidate(&self, bytes: &[u8], i: usize) -> usize {
        if self.no_ascii { skip_ascii(bytes, i) } else { i }
    }

    #[inline]
    pub(crate) fn contains(&self, b: u8) -> bool {
        self.bytes[b as usize]
    }

    /// Whether the UTF-8 encoding of `c` starts with a byte of the set.
    #[cfg(test)]
    pub(crate) fn contains_char(&self, c: char) -> bool {
        let mut buf = [0u8; 4];
        self.contains(c.encode_utf8(&mut buf).as_bytes()[0])
    }
}

/// The offset of the first byte at or after `i` that is not ASCII (`bytes.len()`
/// if none), eight bytes at a time: most of an English text and the commands of
/// a Chinese manual page are ASCII, and a step that changes no ASCII char has
/// nothing to do there (issue 37).
#[inline]
pub(crate) fn skip_ascii(bytes: &[u8], mut i: usize) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(Ok(word)) = bytes.get(i..i + 8).map(<[u8; 8]>::try_from) {
        let high = u64::from_le_bytes(word) & HIGH;
        if high != 0 {
            return i + high.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while bytes.get(i).is_some_and(u8::is_ascii) {
        i += 1;
    }
    i
}

/// Every ASCII byte and lead byte (continuation bytes never start a char).
const ALL_LEADS: LeadSet = LeadSet::new(&[(0x00, 0x7F), (0xC0, 0xFF)]);

/// Applies a per-char rule that keeps every char whose first UTF-8 byte is not in
/// `leads`, copying only when some char changes.
pub(crate) fn map_chars_by_lead<'a>(
    text: Cow<'a, str>,
    leads: &LeadSet,
    f: impl Fn(char) -> CharAction,
) -> Cow<'a, str> {
    let mut out: Option<String> = None;
    let mut copied = 0; // bytes of `text` already in `out`
    let mut i = 0;
    let bytes = text.as_bytes();
    while let Some(&b) = bytes.get(i) {
        if !leads.contains(b) {
            i = leads.next_candidate(bytes, i + 1);
            continue;
        }
        let Some(c) = text.get(i..).and_then(|s| s.chars().next()) else {
            break;
        };
        let len = c.len_utf8();
        let action = f(c);
        if action != CharAction::Keep {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(text.get(copied..i).unwrap_or_default());
            match action {
                CharAction::Replace(r) => o.push(r),
                CharAction::Lowercase => o.extend(c.to_lowercase()),
                CharAction::Keep | CharAction::Drop => {}
            }
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

#[cfg(test)]
mod proptests;

#[cfg(test)]
pub(crate) mod test_support {
    use std::sync::OnceLock;

    use super::Pipeline;
    use crate::config::CleanConfig;

    /// The default text pipeline, built once for all tests (OpenCC is slow to build).
    pub(crate) fn default_text_pipeline() -> &'static Pipeline {
        static P: OnceLock<Pipeline> = OnceLock::new();
        P.get_or_init(
            || match Pipeline::from_config(&CleanConfig::default(), false, None) {
                Ok(p) => p,
                Err(e) => panic!("default pipeline: {e}"),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_ascii_stops_at_the_first_byte_beyond_ascii() {
        let texts = [
            "",
            "a",
            "abcdefgh",
            "abcdefghi",
            "abcdefg中",
            "abcdefgh中",
            "中",
            "a中b",
            "0123456789abcdef\u{e9}xyz",
        ];
        for t in texts {
            let b = t.as_bytes();
            for i in 0..=b.len() {
                let expected = (i..b.len()).find(|&k| !b[k].is_ascii()).unwrap_or(b.len());
                assert_eq!(skip_ascii(b, i), expected, "{t:?} from {i}");
            }
        }
        const { assert!(!ALL_LEADS.no_ascii) };
        let wide = LeadSet::new(&[(0xE3, 0xE3)]);
        assert!(wide.no_ascii);
        // Past the ASCII run to the next lead byte.
        assert_eq!(wide.next_candidate("abcdefghij\u{3000}".as_bytes(), 1), 10);
    }

    #[test]
    fn default_order_has_all_enabled_steps_but_digits() {
        let p = test_support::default_text_pipeline();
        assert_eq!(
            p.step_names(),
            vec![
                "strip_markup",
                "strip_control",
                "fold_width",
                "nfkc",
                "convert_chinese",
                "strip_symbols",
                "lowercase",
                "fold_whitespace"
            ]
        );
    }

    #[test]
    fn duplicate_step_is_rejected() {
        let config = CleanConfig {
            order: vec![Step::FoldWidth, Step::FoldWidth],
            ..CleanConfig::default()
        };
        assert!(matches!(
            Pipeline::from_config(&config, false, None),
            Err(CleanError::InvalidConfig(_))
        ));
    }

    #[test]
    fn pipeline_is_send_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Pipeline>();
    }
}
