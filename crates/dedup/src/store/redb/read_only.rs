//! A redb store opened read-only (`RedbReadOnlyStore`).

use std::path::{Path, PathBuf};

use parking_lot::RwLock;
use redb::{ReadOnlyDatabase, ReadableDatabase};

use super::behind::Behind;
use super::side::ReadOnlySide;
use super::{RedbOptions, RedbReadTables, rebuild_bands};
use crate::error::{Error, Result};
use crate::store::{BandIndex, DocRecord, ReadTables, Store, Tables};

/// A [`RedbStore`](super::RedbStore)'s file opened read-only, for tools that only look (a
/// `crawl check`, an inspection): opening it, reading it and dropping it
/// leave every byte of the file as it was, where a [`RedbStore`](super::RedbStore) commits
/// on open (its tables, the recorded parameters) and marks the file in use
/// while it is open. Works on a file the process may not write (a
/// read-only copy, a snapshot).
///
/// Writes are refused with [`Error::ReadOnly`]; a [`crate::Deduper`] opens
/// over it when the file records its parameters already (any store a
/// [`RedbStore`](super::RedbStore) wrote does), and answers `explain`, `url_seen` and the
/// like. A file another process has open read-write is refused with
/// [`Error::Locked`] (redb's writer locks the whole file, and a reader
/// beside it could read pages the writer is reusing); one not closed
/// cleanly, with [`Error::NeedsRepair`] (only a read-write open repairs).
/// The band index is rebuilt in memory on open, as for a [`RedbStore`](super::RedbStore).
///
/// ```
/// use simcrawl_dedup::{Deduper, DedupConfig, Document, RedbReadOnlyStore, RedbStore};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("index.redb");
/// let text = "长江流域今年夏季降雨偏多，防汛形势严峻";
/// {
///     let d = Deduper::new(RedbStore::open(&path).unwrap(), DedupConfig::default()).unwrap();
///     d.check(&Document::new("http://a.example/1", "", text)).unwrap();
///     d.flush().unwrap();
/// }
/// let before = std::fs::read(&path).unwrap();
/// let d = Deduper::new(RedbReadOnlyStore::open(&path).unwrap(), DedupConfig::default()).unwrap();
/// let e = d.explain(&d.sign(&Document::new("http://b.example/1", "", text))).unwrap();
/// assert!(e.verdict.is_some(), "the copy is found");
/// assert!(d.check(&Document::new("http://c.example/1", "", "新的文本")).is_err(), "no writes");
/// drop(d);
/// assert!(std::fs::read(&path).unwrap() == before, "not a byte changed");
/// ```
pub struct RedbReadOnlyStore {
    bands: RwLock<BandIndex>,
    db: ReadOnlyDatabase,
    path: PathBuf,
    /// The side file of its block lists, if it has one.
    side: Option<ReadOnlySide>,
}

impl std::fmt::Debug for RedbReadOnlyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbReadOnlyStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl RedbReadOnlyStore {
    /// Opens the existing store file at `path` read-only, with redb's
    /// default page cache.
    pub fn open(path: impl AsRef<Path>) -> Result<RedbReadOnlyStore> {
        Self::open_opts(path, RedbOptions::default())
    }

    /// [`RedbReadOnlyStore::open`] with a page cache of
    /// `options.cache_bytes` (the sync interval means nothing here).
    pub fn open_opts(path: impl AsRef<Path>, options: RedbOptions) -> Result<RedbReadOnlyStore> {
        let path = path.as_ref().to_path_buf();
        let db = redb::Builder::new()
            .set_cache_size(options.cache_bytes - super::side::side_cache(options.cache_bytes))
            .open_read_only(&path)
            .map_err(|e| super::open_failed(&path, e))?;
        let side = ReadOnlySide::open(&db, &path, super::side::side_cache(options.cache_bytes))?;
        Ok(RedbReadOnlyStore {
            bands: RwLock::new(BandIndex::default()),
            db,
            path,
            side,
        })
    }

    /// The underlying database, read-only, so that an embedding program
    /// can read its own tables in the same file (a crawler's learnt state).
    pub fn database(&self) -> &ReadOnlyDatabase {
        &self.db
    }
}

impl Store for RedbReadOnlyStore {
    /// Refused: [`Error::ReadOnly`].
    fn write<R>(&self, _f: impl FnMut(&mut dyn Tables) -> Result<R>) -> Result<R> {
        Err(Error::ReadOnly {
            path: self.path.clone(),
        })
    }

    fn read<R>(&self, mut f: impl FnMut(&dyn ReadTables) -> Result<R>) -> Result<R> {
        let mut tables = RedbReadTables::new(&self.bands, self.db.begin_read().map_err(Error::storage)?);
        if let Some(side) = &self.side {
            let behind = Behind {
                epochs: vec![side.logged.clone()],
                upto: side.upto,
            };
            tables = tables.behind(behind, Some((&side.db, side.records)));
        }
        f(&tables)
    }

    /// Nothing was written: nothing to make durable.
    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn location(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn layout(&self) -> Option<&'static str> {
        self.side.as_ref().map(|s| super::side::layout(s.records))
    }

    fn rebuild_bands(&self, keys: &dyn Fn(&DocRecord) -> Vec<u64>) -> Result<()> {
        rebuild_bands(&self.db, &self.bands, keys)
    }
}
