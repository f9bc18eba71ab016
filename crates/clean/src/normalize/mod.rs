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

pub mod case;
pub mod control;
pub mod digits;
pub mod nfkc;
pub mod strip;
pub mod symbols;
pub mod t2s;
pub mod whitespace;
pub mod width;

pub use case::Lowercase;
pub use control::StripControl;
pub use digits::DropDigits;
pub use nfkc::Nfkc;
pub use strip::StripMarkup;
pub use symbols::StripSymbols;
pub use t2s::ChineseConvert;
pub use whitespace::FoldWhitespace;
pub use width::FoldWidth;

/// One normalization step.
///
/// Works on whole strings rather than chars because some steps (OpenCC phrases,
/// entities, tags) look at several chars at once. `Send + Sync` so that one
/// pipeline, with its expensive OpenCC dictionaries, serves every crawler thread.
pub trait Normalizer: Send + Sync + fmt::Debug {
    /// A short name for logs and errors.
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
        chinese: Option<&Arc<ChineseConvert>>,
    ) -> Result<Self, CleanError> {
        let mut seen = Vec::with_capacity(config.order.len());
        let mut steps: Vec<Arc<dyn Normalizer>> = Vec::new();
        for &step in &config.order {
            if seen.contains(&step) {
                return Err(CleanError::InvalidConfig(format!(
                    "step {step:?} is listed twice in `order`"
                )));
            }
            seen.push(step);
            if !config.enabled(step) {
                continue;
            }
            let n: Arc<dyn Normalizer> = match step {
                Step::StripMarkup => Arc::new(StripMarkup),
                Step::StripControl => Arc::new(StripControl),
                Step::Width => Arc::new(FoldWidth),
                Step::Nfkc => Arc::new(Nfkc),
                Step::Chinese => match chinese {
                    Some(c) => c.clone(),
                    None => Arc::new(ChineseConvert::new(config.chinese_variant)?),
                },
                Step::StripSymbols => Arc::new(StripSymbols),
                Step::Lowercase => Arc::new(Lowercase),
                Step::DropDigits => Arc::new(DropDigits),
                Step::Whitespace => Arc::new(FoldWhitespace { single_line }),
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
}

/// Applies a per-char rule, copying only when some char changes.
pub(crate) fn map_chars<'a>(text: Cow<'a, str>, f: impl Fn(char) -> CharAction) -> Cow<'a, str> {
    let first = text
        .char_indices()
        .find(|&(_, c)| f(c) != CharAction::Keep)
        .map(|(i, _)| i);
    let Some(first) = first else {
        return text;
    };
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        match f(c) {
            CharAction::Keep => out.push(c),
            CharAction::Drop => {}
            CharAction::Replace(r) => out.push(r),
        }
    }
    Cow::Owned(out)
}

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
    fn default_order_has_all_enabled_steps_but_digits() {
        let p = test_support::default_text_pipeline();
        assert_eq!(
            p.step_names(),
            vec![
                "strip_markup",
                "strip_control",
                "width",
                "nfkc",
                "chinese",
                "strip_symbols",
                "lowercase",
                "whitespace"
            ]
        );
    }

    #[test]
    fn duplicate_step_is_rejected() {
        let config = CleanConfig {
            order: vec![Step::Width, Step::Width],
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
