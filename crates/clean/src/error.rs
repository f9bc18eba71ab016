//! Typed errors of the clean crate.

/// Everything that can go wrong while building a [`crate::Cleaner`] or cleaning a page.
///
/// Parsing itself is total (html5ever recovers from any input, undecodable bytes become
/// U+FFFD), so in practice only configuration problems surface here; `parse` still
/// returns `Result` so that future limits can be reported without an API break.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CleanError {
    /// The OpenCC converter for the chosen Chinese variant could not be built.
    #[error("cannot build the OpenCC converter {variant}: {message}")]
    Opencc {
        /// The configured variant, e.g. `t2s`.
        variant: &'static str,
        /// OpenCC's own error text.
        message: String,
    },
    /// The `[clean]` configuration is inconsistent.
    #[error("invalid clean configuration: {0}")]
    InvalidConfig(String),
}
