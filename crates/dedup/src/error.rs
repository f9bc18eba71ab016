//! The crate's error type.

use std::path::PathBuf;

/// Everything that can go wrong in deduplication.
///
/// Causes stay typed: [`Error::Storage`] holds the failing error itself
/// (the `std::io::Error` when the operating system refused, found by
/// walking [`std::error::Error::source`]), never a copy of its text.
/// New variants may be added in minor versions.
///
/// ```
/// # #[cfg(feature = "redb")] {
/// use std::error::Error as _;
/// let dir = tempfile::tempdir().unwrap();
/// // A directory where the store file should be: the OS says no.
/// let e = simcrawl_dedup::RedbStore::open(dir.path()).unwrap_err();
/// let mut cause = e.source();
/// let mut io = None;
/// while let Some(c) = cause {
///     io = io.or(c.downcast_ref::<std::io::Error>());
///     cause = c.source();
/// }
/// assert!(io.is_some(), "{e}");
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The underlying store failed (I/O, corruption, lock). The source is
    /// the store's own error; for a file that could not be opened, an
    /// [`OpenError`] naming the path, whose source is the
    /// `std::io::Error` when the operating system refused.
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
    /// The URL tier of the store at `path` was keyed by another version of
    /// the canonical forms ([`crate::CANONICAL_VERSION`]; a store that
    /// records none is version 1): the same URL would get another key, so
    /// seen URLs would be fetched again. The title and content tiers would
    /// still match, but mixing keys silently is never right, so the store
    /// is refused.
    #[error(
        "the URL tier of the index at {path} was keyed by URL canonicalization version {stored}, but this \
         simcrawl computes version {current} (a stray '%' is now '%25', escapes of ^ | {{ }} ` are decoded, a \
         curated tracking-parameter list): its URL keys would not match new ones; re-run into a new data \
         directory, or delete {path} to rebuild the index"
    )]
    OldUrlKeys {
        /// Where the store lives.
        path: PathBuf,
        /// The version it records.
        stored: String,
        /// The version this simcrawl computes.
        current: u32,
    },
    /// The store at `path` is already open: in another process, or in this
    /// one (a file can be opened once per process; share the store, or the
    /// [`crate::Deduper`] over it, between threads instead: both are `Sync`).
    #[error(
        "the index at {} is in use: already open, in another process or in this one (open it once and share \
         it between threads, e.g. in an Arc)",
        path.display()
    )]
    Locked {
        /// Where the store lives.
        path: PathBuf,
    },
    /// The store at `path` was opened read-only
    /// ([`crate::RedbReadOnlyStore`]) and something tried to write to it:
    /// a tool that only reads (an explanation, a lookup) must leave the
    /// file's bytes as they were, so the write is refused, not made.
    #[error("the index at {} is open read-only: it cannot be written", path.display())]
    ReadOnly {
        /// Where the store lives.
        path: PathBuf,
    },
    /// The store file at `path` was not closed cleanly (its writer was
    /// killed or crashed) and needs a repair, which only a read-write open
    /// makes: a read-only open refuses it rather than read a state whose
    /// allocator it cannot trust, or change the file.
    #[error(
        "the index at {} was not closed cleanly and needs a repair, which a read-only open does not make: \
         open it read-write once (resume the crawl), or work on a copy",
        path.display()
    )]
    NeedsRepair {
        /// Where the store lives.
        path: PathBuf,
    },
    /// The store's server could not be reached when opening it (wrong
    /// address, server down, refused). Nothing was read or written.
    #[error("cannot reach the store at {url}: {source}")]
    Unreachable {
        /// The server's URL, without password.
        url: String,
        /// What the connection attempt said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The connection to the store's server was lost, refused or timed
    /// out during a transaction. Retry the operation (with a pause): when
    /// `maybe_applied` is false nothing of it was applied; when true the
    /// commit was sent and its reply lost, so it may have been applied (a
    /// repeated check then finds the document it recorded itself).
    #[error(
        "lost the connection to the store at {url} ({source}); {}",
        if *maybe_applied { "the last commit may or may not have been applied" } else { "nothing was written" }
    )]
    Disconnected {
        /// The server's URL, without password.
        url: String,
        /// Whether the commit had been sent.
        maybe_applied: bool,
        /// What the connection said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An optimistic transaction found what it read changed by other
    /// writers at every one of its attempts; nothing was written. Retry
    /// later, or use smaller batches.
    #[error(
        "a transaction on the store at {url} was aborted by concurrent writers {attempts} times in a row"
    )]
    Contention {
        /// The server's URL, without password.
        url: String,
        /// Attempts made.
        attempts: u32,
    },
    /// A replica of a `ReplicatedStore` found that the shared log no
    /// longer holds the history it applied: the server lost entries this
    /// process had applied (a failover to a Redis replica that lagged, a
    /// restart without persistence or from an older backup), so the log
    /// ends before its position or holds other entries up to it. Returned
    /// by a store opened with `resync_diverged(false)`, by that call and
    /// every later one (the replica answers nothing from a state no other
    /// process shares); by default the replica loads the log's state
    /// instead, with a warning. Not transient: open the store again.
    /// Boxed: the details are five strings, and every `Result` of the
    /// crate carries this type.
    #[error(transparent)]
    Diverged(Box<DivergedReplica>),
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

/// Which replica diverged from which log, and how: the details of
/// [`Error::Diverged`].
///
/// ```
/// use simcrawl_dedup::{DivergedReplica, Error};
/// let e = Error::Diverged(Box::new(DivergedReplica {
///     url: "redis://10.0.0.5:6379/0".into(),
///     namespace: "news".into(),
///     replica: "worker-3:4711:9f2c".into(),
///     position: 1_204,
///     expected: "1f0e".repeat(8),
///     found: "ends at position 1190, before it (the server lost entries)".into(),
/// }));
/// assert!(!e.is_transient());
/// let shown = e.to_string();
/// assert!(shown.contains("worker-3:4711:9f2c") && shown.contains("position 1204"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "replica {replica} of Redis namespace {namespace:?} at {url} has diverged from the shared log: at \
     position {position} its history has chain value {expected}, while the log {found}. What the log lost is \
     lost for every process; this store refuses to go on from a state no other process shares. Open the \
     store again (it loads the log's state), or let it resync by itself (resync_diverged(true), the default)"
)]
pub struct DivergedReplica {
    /// The server's URL, without password.
    pub url: String,
    /// The store's namespace.
    pub namespace: String,
    /// Which replica: `HOST:PID:RANDOM`, as in its log lines.
    pub replica: String,
    /// The log position the replica was at.
    pub position: u64,
    /// The replica's chain value at `position` (32 hex digits).
    pub expected: String,
    /// What the log has instead ("ends at position N, ...", "has chain
    /// value X there ...").
    pub found: String,
}

/// The cause of an [`Error::Storage`] met while opening a store's file:
/// which file, and what failed (its source: the `std::io::Error` when the
/// operating system refused, else the store's own error).
#[derive(Debug, thiserror::Error)]
#[error("cannot open {}: {source}", path.display())]
pub struct OpenError {
    /// The file (or its directory) that could not be opened.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// redb's errors are store errors: `?` converts them, for embedders that
/// keep their own tables in a [`crate::RedbStore`]'s transactions. redb's
/// errors do not chain their causes, so an I/O failure is kept as the
/// `std::io::Error` itself.
#[cfg(feature = "redb")]
macro_rules! from_redb {
    ($($t:ident),*) => {$(
        impl From<redb::$t> for Error {
            fn from(e: redb::$t) -> Error {
                match e {
                    redb::$t::Storage(redb::StorageError::Io(io)) => Error::Storage(Box::new(io)),
                    other => Error::Storage(Box::new(other)),
                }
            }
        }
    )*};
}

#[cfg(feature = "redb")]
from_redb!(TableError, TransactionError, CommitError, DatabaseError);

#[cfg(feature = "redb")]
impl From<redb::StorageError> for Error {
    fn from(e: redb::StorageError) -> Error {
        match e {
            redb::StorageError::Io(io) => Error::Storage(Box::new(io)),
            other => Error::Storage(Box::new(other)),
        }
    }
}

/// The cause inside a redb error: its `std::io::Error` when it has one.
#[cfg(feature = "redb")]
pub(crate) fn redb_cause(e: redb::DatabaseError) -> Box<dyn std::error::Error + Send + Sync> {
    match e {
        redb::DatabaseError::Storage(redb::StorageError::Io(io)) => Box::new(io),
        other => Box::new(other),
    }
}

impl Error {
    /// Whether retrying the same operation later may succeed: the store's
    /// server was unreachable, the connection dropped, or concurrent
    /// writers kept conflicting. Crawlers pause and retry on these.
    ///
    /// ```
    /// use simcrawl_dedup::Error;
    /// assert!(Error::Contention { url: "redis://h:1/".into(), attempts: 3 }.is_transient());
    /// assert!(!Error::Corrupt("x".into()).is_transient());
    /// ```
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Error::Unreachable { .. } | Error::Disconnected { .. } | Error::Contention { .. }
        )
    }

    #[cfg_attr(
        not(any(feature = "redb", feature = "sled", feature = "redis")),
        allow(dead_code)
    )] // disk and shared stores only
    pub(crate) fn storage(e: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::Storage(Box::new(e))
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
