//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong in deduplication.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The underlying store failed (I/O, corruption, lock).
    #[error("store error: {0}")]
    Storage(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The store at `path` was built with other parameters.
    #[error(
        "the index at {path} was built with other parameters ({differences}); \
         use the settings it was built with, or a new data directory"
    )]
    ParamsMismatch {
        /// Where the store lives.
        path: PathBuf,
        /// Each differing parameter as `name: stored X, requested Y`.
        differences: String,
    },
    /// The store at `path` was written in another on-disk format.
    #[error(
        "the index at {path} is in store format {stored:?}, but this simcrawl reads format {current} \
         (format 2 keeps a resemblance sketch per document, which older stores lack); \
         re-run into a new data directory, or delete {path} to rebuild the index"
    )]
    OldFormat {
        /// Where the store lives.
        path: PathBuf,
        /// The format it records.
        stored: String,
        /// The format this version reads.
        current: u32,
    },
    /// The store at `path` is already open in another process.
    #[error("the index at {} is in use by another process", path.display())]
    Locked {
        /// Where the store lives.
        path: PathBuf,
    },
    /// A stored record could not be decoded.
    #[error("corrupt record in the index: {0}")]
    Corrupt(String),
    /// Invalid settings.
    #[error(transparent)]
    Layout(#[from] crate::index::LayoutError),
    /// Invalid feature settings or unreadable stop words.
    #[error(transparent)]
    Features(#[from] crate::features::FeatureError),
    /// A URL that cannot be canonicalized.
    #[error(transparent)]
    Url(#[from] crate::canonical::UrlError),
    /// Invalid configuration value.
    #[error("invalid setting: {0}")]
    Config(String),
    /// A failure of the embedding program inside one of this crate's
    /// transactions (its own tables, its output files): aborts the
    /// transaction, and keeps the cause chain intact for the caller.
    #[error(transparent)]
    Caller(Box<dyn std::error::Error + Send + Sync>),
}

/// redb's errors are store errors: `?` converts them, for embedders that
/// keep their own tables in a [`crate::RedbStore`]'s transactions.
#[cfg(feature = "redb")]
macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::Storage(Box::new(e))
            }
        }
    )*};
}

#[cfg(feature = "redb")]
from_redb!(
    redb::StorageError,
    redb::TableError,
    redb::TransactionError,
    redb::CommitError
);

impl Error {
    pub(crate) fn storage(e: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::Storage(Box::new(e))
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
