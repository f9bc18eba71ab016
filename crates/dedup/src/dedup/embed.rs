//! Shortcuts for crawlers that embed the crate: a deduper over a store on
//! disk, or in memory, with the default settings.

use super::{DedupConfig, Deduper};
use crate::error::Result;
use crate::store::MemoryStore;

/// The store file [`Deduper::open`] keeps in its directory: the name the
/// `crawl` binary and the Python module use.
pub const STORE_FILE: &str = "index.redb";

#[cfg(feature = "redb")]
impl Deduper<crate::store::RedbStore> {
    /// A deduper with the default settings over a [`crate::RedbStore`] in
    /// `dir` (the file [`STORE_FILE`]; the directory is created):
    /// persistent, crash-safe, shareable between threads (`Deduper` is
    /// `Send + Sync`; put it in an `Arc`). Verdicts are durable within a
    /// second, or at once after [`Deduper::flush`]. For other settings:
    /// `Deduper::new(RedbStore::open(path)?, config)`.
    ///
    /// A directory already open (in this process or another) is an
    /// [`Error::Locked`](crate::Error::Locked).
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, Document};
    /// let dir = tempfile::tempdir().unwrap();
    /// let text = "长江流域今年夏季降雨偏多，防汛形势严峻，水利部门启动应急响应。";
    /// {
    ///     let d = Deduper::open(dir.path())?;
    ///     assert!(!d.check(&Document::new("http://a.example/1", "", text))?.is_duplicate());
    ///     d.flush()?;
    /// }
    /// let d = Deduper::open(dir.path())?; // reopened: it remembers
    /// assert!(d.check(&Document::new("http://b.example/1", "", text))?.is_duplicate());
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn open(dir: impl AsRef<std::path::Path>) -> Result<Self> {
        let store = crate::store::RedbStore::open(dir.as_ref().join(STORE_FILE))?;
        Deduper::new(store, DedupConfig::default())
    }
}

impl Deduper<MemoryStore> {
    /// A deduper with the default settings over a new [`MemoryStore`]: for
    /// tests and one-shot runs (nothing survives the process).
    ///
    /// ```
    /// let d = simcrawl_dedup::Deduper::in_memory()?;
    /// assert_eq!(d.stats()?.documents, 0);
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn in_memory() -> Result<Self> {
        Deduper::new(MemoryStore::new(), DedupConfig::default())
    }
}
