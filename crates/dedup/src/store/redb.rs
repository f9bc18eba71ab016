//! The persistent store on [redb](https://www.redb.org).
//!
//! Why redb: measured on our 2-core machine with 4M index keys and 1M prefix
//! scans, redb used 86-102 MB on disk, ran ~330k scans/s and stayed near
//! 150 MB RSS; sled 0.34 needed 550-590 MB on disk, 8k-84k scans/s and grew
//! to 12 GB RSS under batch inserts. redb is also a single file with ACID
//! transactions and no background threads.
//!
//! Durability: each `write` commits, but only every `sync_interval` (and on
//! [`Store::flush`]) is the commit made durable (an fsync); commits in
//! between are visible at once and become durable with the next durable
//! commit. After a crash the store is at its last durable commit, never in
//! between.
//!
//! The SimHash block lists are written behind (`behind`): a commit's
//! changes stay in memory, where every reader and the next writer see
//! them, and a durable commit hands them, as one batch, to a thread that
//! writes them into a file of their own beside the store's (`side`; the
//! store's own log keeps them until that file holds them, and an open
//! writes in what it lacks). An index written before side files keeps its
//! lists in its own file, where each durable commit writes the batch. So
//! each durable state holds every list it needs. The URL tier's records
//! and the title tier's lists go the same way into the side file of an
//! index made since (layout `side-file`): the writer reads them through
//! the changes held and no longer writes them; the URL records' time
//! index stays in the store's own file.

mod behind;
mod commit;
mod early;
#[cfg(test)]
mod early_tests;
mod read_only;
mod side;
mod snapshot;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod url_tests;
mod url_times;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use redb::{
    Database, Durability, MultimapTable, MultimapTableDefinition, ReadOnlyTable, ReadableDatabase,
    ReadableMultimapTable, ReadableTable, ReadableTableMetadata, Table, TableDefinition, WriteTransaction,
};
use rustc_hash::FxHashMap;

use self::behind::{Backlog, Behind, BlockOp, BlockOps, MAX_BEHIND, TitleOp, TxnBlockOps, UrlOp};
pub use self::read_only::RedbReadOnlyStore;
use self::side::{Home, SideBlocks, SideSnapshot};
use self::snapshot::RedbReadTables;
use super::{
    BandIndex, DocId, DocRecord, EarlyHits, ReadTables, Store, Tables, UrlRecord, block_key, decode_postings,
    posting, push_capped, store_number, within,
};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("dedup_meta");
const URLS: TableDefinition<u128, &[u8]> = TableDefinition::new("dedup_urls");
/// First-seen index of the URL tier: (first seen, digest), so a purge
/// reads only the expired URLs instead of every one.
const URL_TIMES: TableDefinition<(u64, u128), ()> = TableDefinition::new("dedup_url_times");
const TITLES: MultimapTableDefinition<u128, u64> = MultimapTableDefinition::new("dedup_titles");
/// Block index: (table, block key) -> posting list of 16-byte entries
/// (fingerprint, document id), little-endian. One point lookup and a tight
/// decode loop per table beat iterating a row per candidate: with 4 tables
/// and 10M documents a key holds ~150 entries. Measured at 10M, m = 4:
/// row-per-entry range scans 60 us per query, posting lists much less (see
/// docs/BENCHMARKS.md).
const BLOCKS: TableDefinition<u128, &[u8]> = TableDefinition::new("dedup_blocks");
const DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("dedup_docs");

/// The default persistent store: one redb file.
///
/// ```
/// use simcrawl_dedup::{Deduper, DedupConfig, Document, RedbStore, Verdict};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("index.redb");
/// {
///     let d = Deduper::new(RedbStore::open(&path).unwrap(), DedupConfig::default()).unwrap();
///     let v = d.check(&Document::new("http://a.example/1", "", "长江流域今年夏季降雨偏多，防汛形势严峻")).unwrap();
///     assert!(matches!(v, Verdict::Unique { .. }));
///     d.flush().unwrap();
/// }
/// // Reopened, the index remembers the document.
/// let d = Deduper::new(RedbStore::open(&path).unwrap(), DedupConfig::default()).unwrap();
/// let v = d.check(&Document::new("http://b.example/1", "", "长江流域今年夏季降雨偏多，防汛形势严峻")).unwrap();
/// assert!(v.is_duplicate());
/// ```
///
/// The LSH band index is not written to the file: it is derived from the
/// stored documents (each keeps its sketch), held in memory, rebuilt when a
/// [`crate::Deduper`] opens the store, and updated only when a transaction
/// commits. A check then costs no B-tree writes for its bands: measured,
/// ten band entries per document on disk made redb checks 3-4x slower.
/// The price is memory: 20-40 bytes per band entry (16-byte slots, a
/// power of two of them, at most 80% full), 256 MB per million documents
/// with the default 10 bands.
#[derive(Debug)]
pub struct RedbStore {
    bands: RwLock<BandIndex>,
    db: Database,
    path: PathBuf,
    sync_interval: Duration,
    last_sync: Mutex<Instant>,
    /// Held by a write transaction from its start until its band changes
    /// are applied to `bands`. redb lets the next writer begin as soon as
    /// a commit returns; without this it could check a document against
    /// the band index before the previous transaction's entries are in it,
    /// and keep a copy of a document committed a moment before.
    writer: Mutex<()>,
    /// Block-list changes committed but not yet in `dedup_blocks`
    /// (`behind`): written there by the next durable commit. Held for
    /// writing across each commit, and for reading while a reader begins
    /// its snapshot, so that a snapshot and the changes it lacks agree.
    backlog: RwLock<Backlog>,
    /// The block lists' own file and thread (`side`); `None` for an index
    /// whose lists are in this file (written before side files).
    side: Option<SideBlocks>,
    /// This store's number in the process ([`EarlyHits`] name the store
    /// that found them).
    number: u64,
    /// Whether writes keep the URL records' time index (`url_times`).
    url_times_kept: std::sync::atomic::AtomicBool,
}

/// How a write transaction of [`RedbStore::write_with`] is committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    /// Durable before `write_with` returns (an fsync).
    Durable,
    /// Visible at once; durable when the sync interval has elapsed since
    /// the last durable commit, else with a later one.
    Periodic,
}

/// How a [`RedbStore`] trades durability latency and memory for speed.
///
/// ```
/// let o = simcrawl_dedup::RedbOptions::default();
/// assert_eq!(o.cache_bytes, 64 << 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedbOptions {
    /// Longest time between two durable commits (an fsync); zero makes
    /// every commit durable, `Duration::MAX` leaves it to explicit flushes.
    pub sync_interval: Duration,
    /// redb's page cache. The default keeps a crawler's RSS small; a large
    /// index queried at high rates wants more (the OS page cache helps too).
    /// Half of it goes to the file of the block lists, URL records and
    /// title lists
    /// ([`RedbStore::block_lists_path`]), the rest to the store's own.
    pub cache_bytes: usize,
}

impl Default for RedbOptions {
    fn default() -> Self {
        RedbOptions {
            sync_interval: Duration::from_secs(1),
            cache_bytes: 64 << 20,
        }
    }
}

impl RedbStore {
    /// Opens or creates the store file at `path` (its directory is created).
    pub fn open(path: impl AsRef<Path>) -> Result<RedbStore> {
        Self::open_opts(path, RedbOptions::default())
    }

    /// Like [`RedbStore::open`], syncing to disk at most every `sync_interval`.
    pub fn open_with(path: impl AsRef<Path>, sync_interval: Duration) -> Result<RedbStore> {
        Self::open_opts(
            path,
            RedbOptions {
                sync_interval,
                ..RedbOptions::default()
            },
        )
    }

    /// Opens or creates the store file at `path` with explicit options.
    pub fn open_opts(path: impl AsRef<Path>, options: RedbOptions) -> Result<RedbStore> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| open_error(dir, Box::new(e)))?;
        }
        let db = Database::builder()
            .set_cache_size(options.cache_bytes - side::side_cache(options.cache_bytes))
            .create(&path)
            .map_err(|e| open_failed(&path, e))?;
        // Create the tables up front so read paths never meet a missing table.
        {
            let mut txn = db.begin_write().map_err(Error::storage)?;
            txn.set_durability(Durability::Immediate)
                .map_err(Error::storage)?;
            RedbTables::open(&txn, &RwLock::new(BandIndex::default()), HeldView::default())?;
            txn.commit().map_err(Error::storage)?;
        }
        let (side, commits) = match SideBlocks::open(&db, &path, side::side_cache(options.cache_bytes))? {
            Home::InFile => (None, 0),
            Home::Side(side, commits) => (Some(side), commits),
        };
        Ok(RedbStore {
            bands: RwLock::new(BandIndex::default()),
            db,
            path,
            sync_interval: options.sync_interval,
            last_sync: Mutex::new(Instant::now()),
            writer: Mutex::new(()),
            backlog: RwLock::new(Backlog {
                commits,
                ..Backlog::default()
            }),
            side,
            number: store_number(),
            url_times_kept: std::sync::atomic::AtomicBool::new(true),
        })
    }

    /// The file beside the store file `path` that keeps its SimHash block
    /// lists (and, in an index made since they moved there, its URL
    /// records and title lists), written by a thread of their own (`index.redb` ->
    /// `index.blocks.redb`). The two files are one index: copy, move or
    /// delete them together (a store file made afresh replaces a side file
    /// it finds there; a store whose side file is missing refuses to
    /// open). An index written before side files keeps its lists in the
    /// store file and has none.
    ///
    /// ```
    /// use simcrawl_dedup::RedbStore;
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("index.redb");
    /// drop(RedbStore::open(&path).unwrap());
    /// let side = RedbStore::block_lists_path(&path);
    /// assert_eq!(side, dir.path().join("index.blocks.redb"));
    /// assert!(side.exists());
    /// ```
    pub fn block_lists_path(path: impl AsRef<Path>) -> PathBuf {
        side::side_path(path.as_ref())
    }

    /// The underlying database, so that an embedding crawler can keep its
    /// own tables (a frontier, sink offsets) in the same file and commit them
    /// in the same transaction as the dedup state: see [`RedbStore::write_with`].
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Runs `f` on a write transaction of this store's database, with the
    /// dedup tables opened on it; `f` may open its own tables too. Commits
    /// durably under [`Commit::Durable`] (or when the sync interval elapsed).
    pub fn write_with<R>(
        &self,
        commit: Commit,
        f: impl FnOnce(&WriteTransaction, &mut RedbTables<'_>) -> Result<R>,
    ) -> Result<R> {
        let _writer = self.writer.lock();
        // With a side file, the changes of every commit after this one are
        // held (`HeldView::after`).
        let mut held_after = None;
        if let Some(side) = &self.side {
            side.check()?;
            // Batches the side file holds leave the backlog (before any
            // snapshot of it below is begun).
            let applied = side.applied();
            self.backlog.write().in_flight.retain(|(upto, _)| *upto > applied);
            held_after = Some(applied);
        }
        let (epochs, held) = {
            let b = self.backlog.read();
            (b.epochs(), b.len())
        };
        let mut txn = self.db.begin_write().map_err(Error::storage)?;
        let durable = commit == Commit::Durable
            || self.last_sync.lock().elapsed() >= self.sync_interval
            || (self.side.is_some() && held >= MAX_BEHIND);
        txn.set_durability(if durable {
            Durability::Immediate
        } else {
            Durability::None
        })
        .map_err(Error::storage)?;
        let side_snapshot = match &self.side {
            Some(s) => Some(side::snapshot(s.database(), s.records)?),
            None => None,
        };
        let (result, pending, blocks, written) = {
            let guards: Vec<_> = epochs.iter().map(|e| e.read()).collect();
            let view = HeldView {
                epochs: &guards,
                side: side_snapshot.as_ref(),
                after: held_after,
                store: self.number,
            };
            let mut tables = RedbTables::open(&txn, &self.bands, view)?;
            tables.url_times_kept = self.url_times_kept.load(std::sync::atomic::Ordering::Acquire);
            let r = f(&txn, &mut tables);
            // In this file, written now: at a durable commit, and when too
            // many are held; with a side file, logged.
            let write = self.side.is_none() && (durable || held + tables.blocks_txn.len >= MAX_BEHIND);
            let r = match r {
                Ok(value) if write => tables.write_behind().map(|()| value),
                Ok(value) if self.side.is_some() => {
                    self.log_blocks(&txn, &tables.blocks_txn, durable).map(|()| value)
                }
                r => r,
            };
            let blocks = std::mem::take(&mut tables.blocks_txn);
            (r, std::mem::take(&mut tables.pending), blocks, write)
        };
        match result {
            Ok(value) => {
                let batch = self.commit_held(txn, blocks, written, durable)?;
                if let (Some(side), Some((upto, epoch))) = (&self.side, batch) {
                    side.send(upto, epoch)?;
                }
                if durable {
                    *self.last_sync.lock() = Instant::now();
                }
                if !pending.is_empty() {
                    let mut bands = self.bands.write();
                    for (key, ops) in pending {
                        for op in ops {
                            match op {
                                BandOp::Add(id) => bands.add(key, id),
                                BandOp::Remove(id) => bands.remove(key, id),
                            }
                        }
                    }
                }
                Ok(value)
            }
            Err(e) => {
                let _ = txn.abort();
                Err(e)
            }
        }
    }
}

/// A store dropped with block-list changes held (no durable commit since
/// them) makes them durable first: redb's close keeps the commits that made
/// them, and their lists must not be missing. With a side file, its thread
/// writes every batch handed to it before the store's fields are dropped.
impl Drop for RedbStore {
    fn drop(&mut self) {
        if self.backlog.read().ops.read().len() == 0 {
            return;
        }
        if let Err(e) = self.flush() {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write the block lists held in memory");
        }
    }
}

impl Store for RedbStore {
    fn write<R>(&self, mut f: impl FnMut(&mut dyn Tables) -> Result<R>) -> Result<R> {
        self.write_with(Commit::Periodic, |_, t| f(t))
    }

    fn read<R>(&self, mut f: impl FnMut(&dyn ReadTables) -> Result<R>) -> Result<R> {
        // The side file's snapshot is begun with the main file's, under the
        // backlog's lock: no commit can land between them, so the side file
        // holds no commit past the reader's. Begun later, on first use, it
        // could already hold a commit made after the reader's snapshot, and
        // the reader saw that commit's block lists (a race
        // `tests::a_reader_keeps_its_view_across_a_write_behind` lost).
        let (txn, behind, snap) = {
            let backlog = self.backlog.read();
            let txn = self.db.begin_read().map_err(Error::storage)?;
            let behind = Behind::of(&backlog);
            let snap = match &self.side {
                Some(s) => Some(side::snapshot(s.database(), s.records)?),
                None => None,
            };
            (txn, behind, snap)
        };
        let side = self
            .side
            .as_ref()
            .map(|s| (s.database() as &dyn side::SnapshotSource, s.records));
        let mut tables = RedbReadTables::new(&self.bands, txn).behind(behind, side);
        if let Some(snap) = snap {
            tables = tables.with_side_snapshot(snap);
        }
        f(&tables)
    }

    fn flush(&self) -> Result<()> {
        self.write_with(Commit::Durable, |_, _| Ok(()))
    }

    fn location(&self) -> Option<&Path> {
        Some(&self.path)
    }

    /// `blocks-file` when the block lists live in a side file (a build
    /// from before side files would find none in this file), `side-file`
    /// when the URL records and title lists do too.
    fn layout(&self) -> Option<&'static str> {
        self.side.as_ref().map(|s| side::layout(s.records))
    }

    fn rebuild_bands(&self, keys: &dyn Fn(&DocRecord) -> Vec<u64>) -> Result<()> {
        rebuild_bands(&self.db, &self.bands, keys)
    }

    fn near_early(
        &self,
        keys: &[(usize, u64)],
        fp: Fingerprint,
        max: u32,
        title: Option<u128>,
    ) -> Result<Option<EarlyHits>> {
        self.near_on_snapshot(keys, fp, max, title)
    }

    fn keep_url_times(&self, keep: bool) -> Result<()> {
        self.keep_or_drop_url_times(keep)
    }
}

/// Rebuilds `bands` from every document in `db` (a read snapshot: the same
/// code for a read-write and a read-only store).
fn rebuild_bands(
    db: &impl ReadableDatabase,
    bands: &RwLock<BandIndex>,
    keys: &dyn Fn(&DocRecord) -> Vec<u64>,
) -> Result<()> {
    let txn = db.begin_read().map_err(Error::storage)?;
    let docs = txn.open_table(DOCS).map_err(Error::storage)?;
    let count = usize::try_from(docs.len().map_err(Error::storage)?).unwrap_or(usize::MAX);
    // Sized once from the first document's key count: no regrowth
    // while millions of keys go in.
    let mut fresh: Option<BandIndex> = None;
    for entry in docs.iter().map_err(Error::storage)? {
        let (id, v) = entry.map_err(Error::storage)?;
        let rec = DocRecord::decode(v.value())?;
        let keys = keys(&rec);
        let index = fresh.get_or_insert_with(|| BandIndex::with_capacity(count.saturating_mul(keys.len())));
        for key in keys {
            index.add(key, id.value());
        }
    }
    *bands.write() = fresh.unwrap_or_default();
    Ok(())
}

/// Why the file at `path` could not be opened, with that path.
fn open_error(path: &Path, source: Box<dyn std::error::Error + Send + Sync>) -> Error {
    Error::Storage(Box::new(crate::error::OpenError {
        path: path.to_path_buf(),
        source,
    }))
}

/// What redb's refusal to open the file at `path` (a store file or its
/// side file, read-write or read-only) means to the caller: held by
/// another process, in need of a repair only a read-write open makes, or
/// unreadable.
fn open_failed(path: &Path, e: redb::DatabaseError) -> Error {
    match e {
        redb::DatabaseError::DatabaseAlreadyOpen => Error::Locked {
            path: path.to_path_buf(),
        },
        redb::DatabaseError::RepairAborted => Error::NeedsRepair {
            path: path.to_path_buf(),
        },
        other => open_error(path, crate::error::redb_cause(other)),
    }
}

/// A band index change made in a write transaction, applied to the shared
/// in-memory index only if the transaction commits.
#[derive(Clone, Copy, Debug)]
enum BandOp {
    Add(DocId),
    Remove(DocId),
}

/// The dedup tables opened on one redb write transaction.
#[allow(missing_debug_implementations)]
pub struct RedbTables<'t> {
    shared_bands: &'t RwLock<BandIndex>,
    /// Band changes of this transaction, by key, in order.
    pending: FxHashMap<u64, Vec<BandOp>>,
    /// Block-list changes of earlier commits, not in `blocks` (or the side
    /// file) yet.
    held: HeldView<'t>,
    /// Block-list changes of this transaction (and URL record and title
    /// list changes, when those live in the side file).
    blocks_txn: TxnBlockOps,
    /// The last URL record read or written with the records in the side
    /// file: its digest and time. The URL tier reads a record and then
    /// writes it; the write needs the old time (the time index's key)
    /// and took a second read of the side file for it.
    last_url: std::cell::Cell<Option<(u128, Option<u64>)>>,
    /// Whether the URL records' time index is kept (`url_times`).
    url_times_kept: bool,
    meta: Table<'t, &'static str, &'static [u8]>,
    urls: Table<'t, u128, &'static [u8]>,
    url_times: Table<'t, (u64, u128), ()>,
    titles: MultimapTable<'t, u128, u64>,
    blocks: Table<'t, u128, &'static [u8]>,
    docs: Table<'t, u64, &'static [u8]>,
}

/// Calls `f` with a block's posting list: `stored` (the table's, if any)
/// as it is when no change `touched` it, else a copy with `changes`
/// applied (and nothing when that leaves it empty).
fn with_changes(
    stored: Option<&[u8]>,
    touched: bool,
    changes: impl FnOnce(&mut Vec<u8>),
    f: &mut dyn FnMut(&[u8]),
) {
    if !touched {
        if let Some(list) = stored {
            f(list);
        }
        return;
    }
    let mut list = stored.map(<[u8]>::to_vec).unwrap_or_default();
    changes(&mut list);
    if !list.is_empty() {
        f(&list);
    }
}

/// What a write transaction reads its block lists from besides its own
/// changes: the batches held, and the side file's snapshot (its lists and
/// the last commit it holds) when the lists live there.
#[derive(Default)]
struct HeldView<'t> {
    epochs: &'t [parking_lot::RwLockReadGuard<'t, BlockOps>],
    side: Option<&'t SideSnapshot>,
    /// With a side file: `epochs` hold the changes of every commit after
    /// this one (the side file holds those up to it), so hits found early
    /// on a snapshot of a commit since can be brought up to date.
    after: Option<u64>,
    /// The store's number ([`EarlyHits`]).
    store: u64,
}

impl HeldView<'_> {
    fn touches(&self, k: u128) -> bool {
        self.epochs.iter().any(|e| e.touches(k))
    }
}

impl RedbTables<'_> {
    /// Calls `f` with the posting list of block `k`, if any: the table's,
    /// with the changes held and this transaction's on top.
    fn with_block(&self, k: u128, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let (stored, after) = match self.held.side {
            Some(snap) => (snap.blocks.get(k).map_err(Error::storage)?, snap.applied),
            None => (self.blocks.get(k).map_err(Error::storage)?, 0),
        };
        let txn = self.blocks_txn.of(k);
        let touched = !txn.is_empty() || self.held.touches(k);
        let changes = |list: &mut Vec<u8>| {
            for e in self.held.epochs {
                behind::apply(list, e.of(k, after, u64::MAX));
            }
            behind::apply(list, txn);
        };
        with_changes(stored.as_ref().map(|v| v.value()), touched, changes, f);
        Ok(())
    }

    /// Writes the changes held and this transaction's into the table, in
    /// key order: each list read and written once.
    fn write_behind(&mut self) -> Result<()> {
        let epochs: Vec<&BlockOps> = self.held.epochs.iter().map(|g| &**g).collect();
        side::merge(&mut self.blocks, &epochs, Some(&self.blocks_txn))
    }

    /// The side file's URL records, when they live there.
    fn side_urls(&self) -> Option<&ReadOnlyTable<u128, &'static [u8]>> {
        self.held.side.and_then(|s| s.urls.as_ref())
    }

    /// The side file's title lists, when they live there.
    fn side_titles(&self) -> Option<&ReadOnlyTable<u128, &'static [u8]>> {
        self.held.side.and_then(|s| s.titles.as_ref())
    }

    /// The URL record of `digest`: this transaction's last change, else
    /// the last one held, else the side file's record when the URL records
    /// live there, else this file's.
    fn url_record(&self, digest: u128) -> Result<Option<UrlRecord>> {
        let Some(side) = self.side_urls() else {
            return stored_url(&self.urls, digest);
        };
        let held = self.blocks_txn.url_of(digest).or_else(|| {
            self.held
                .epochs
                .iter()
                .rev()
                .find_map(|e| e.url_of(digest, u64::MAX))
        });
        let rec = match held {
            Some(op) => op.record()?,
            None => stored_url(side, digest)?,
        };
        self.last_url
            .set(Some((digest, rec.as_ref().map(|r| r.first_seen))));
        Ok(rec)
    }

    /// The `limit` newest documents under the title `digest`: the side
    /// file's list with the changes held and this transaction's on top
    /// when the title lists live there, else this file's.
    fn title_list(&self, digest: u128, limit: usize, out: &mut Vec<DocId>) -> Result<()> {
        let Some(side) = self.side_titles() else {
            return stored_titles(&self.titles, digest, limit, out);
        };
        let stored = side.get(digest).map_err(Error::storage)?;
        let txn = self.blocks_txn.titles_of(digest);
        let touched = !txn.is_empty() || self.held.epochs.iter().any(|e| e.touches_title(digest));
        let changes = |ids: &mut Vec<u64>| {
            for e in self.held.epochs {
                behind::apply_titles(ids, e.titles_of(digest, u64::MAX));
            }
            behind::apply_titles(ids, txn);
        };
        side_titles(stored.as_ref().map(|v| v.value()), touched, changes, (limit, out));
        Ok(())
    }

    /// The time of `digest`'s record, read unless it was the last one
    /// read or written (records in the side file).
    fn url_time(&self, digest: u128) -> Result<Option<u64>> {
        match self.last_url.get() {
            Some((d, at)) if d == digest => Ok(at),
            _ => Ok(self.url_record(digest)?.map(|r| r.first_seen)),
        }
    }

    fn meta(&self) -> Result<&Table<'_, &'static str, &'static [u8]>> {
        Ok(&self.meta)
    }
    fn url_times(&self) -> Result<&Table<'_, (u64, u128), ()>> {
        Ok(&self.url_times)
    }
    fn docs(&self) -> Result<&Table<'_, u64, &'static [u8]>> {
        Ok(&self.docs)
    }
    /// For each of `keys`, the committed ids, then this transaction's
    /// changes.
    fn band_ids(&self, keys: &[u64], out: &mut Vec<DocId>) {
        self.shared_bands.read().each_of(keys, |key, committed| {
            let Some(ops) = self.pending.get(&key) else {
                out.extend_from_slice(committed);
                return;
            };
            let mut ids = committed.to_vec();
            for op in ops {
                match *op {
                    BandOp::Add(id) => push_capped(&mut ids, id),
                    BandOp::Remove(id) => ids.retain(|&x| x != id),
                }
            }
            out.extend(ids);
        });
    }
}

impl<'t> RedbTables<'t> {
    /// Opens (creating if needed) the dedup tables on `txn`.
    fn open(
        txn: &'t WriteTransaction,
        bands: &'t RwLock<BandIndex>,
        held: HeldView<'t>,
    ) -> Result<RedbTables<'t>> {
        Ok(RedbTables {
            shared_bands: bands,
            pending: FxHashMap::default(),
            held,
            blocks_txn: TxnBlockOps::default(),
            last_url: std::cell::Cell::new(None),
            url_times_kept: true,
            meta: txn.open_table(META).map_err(Error::storage)?,
            urls: txn.open_table(URLS).map_err(Error::storage)?,
            url_times: txn.open_table(URL_TIMES).map_err(Error::storage)?,
            titles: txn.open_multimap_table(TITLES).map_err(Error::storage)?,
            blocks: txn.open_table(BLOCKS).map_err(Error::storage)?,
            docs: txn.open_table(DOCS).map_err(Error::storage)?,
        })
    }
}

/// The read half is the same code over write-transaction and snapshot
/// tables (both implement redb's `Readable*` traits).
macro_rules! impl_read_tables {
    ($ty:ty) => {
        impl ReadTables for $ty {
            fn wants_prefetch(&self) -> bool {
                false
            }

            fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
                Ok(self
                    .meta()?
                    .get(key)
                    .map_err(Error::storage)?
                    .map(|v| v.value().to_vec()))
            }

            fn url(&self, digest: u128) -> Result<Option<UrlRecord>> {
                self.url_record(digest)
            }

            fn title_docs(&self, digest: u128, limit: usize, out: &mut Vec<DocId>) -> Result<()> {
                self.title_list(digest, limit, out)
            }

            fn candidates(&self, table: usize, key: u64, out: &mut Vec<(Fingerprint, DocId)>) -> Result<()> {
                self.with_block(block_key(table, key), &mut |list| {
                    out.extend(decode_postings(list))
                })
            }

            /// Scans each posting list in place, in the page it was read
            /// from: no copy of lists that at 10M documents and m = 4 hold
            /// ~150 entries (2.4 KB) each.
            fn near_all(
                &self,
                keys: &[(usize, u64)],
                fp: Fingerprint,
                max: u32,
                out: &mut Vec<(u32, DocId)>,
            ) -> Result<()> {
                for &(table, key) in keys {
                    self.with_block(block_key(table, key), &mut |list| {
                        out.extend(within(fp, max, decode_postings(list)))
                    })?;
                }
                Ok(())
            }

            fn near_since(
                &self,
                early: &EarlyHits,
                keys: &[(usize, u64)],
                fp: Fingerprint,
                max: u32,
                out: &mut Vec<(u32, DocId)>,
            ) -> Result<bool> {
                self.near_since_held(early, keys, fp, max, out)
            }

            fn title_docs_since(
                &self,
                early: &EarlyHits,
                digest: u128,
                limit: usize,
                out: &mut Vec<DocId>,
            ) -> Result<bool> {
                self.titles_since_held(early, digest, limit, out)
            }

            fn band_docs(&self, key: u64, out: &mut Vec<DocId>) -> Result<()> {
                self.band_ids(&[key], out);
                Ok(())
            }

            fn band_docs_all(&self, keys: &[u64], out: &mut Vec<DocId>) -> Result<()> {
                self.band_ids(keys, out);
                Ok(())
            }

            fn doc(&self, id: DocId) -> Result<Option<DocRecord>> {
                match self.docs()?.get(id).map_err(Error::storage)? {
                    Some(v) => Ok(Some(DocRecord::decode(v.value())?)),
                    None => Ok(None),
                }
            }

            fn urls_seen_before(&self, cutoff: u64, limit: usize, out: &mut Vec<u128>) -> Result<()> {
                for entry in self
                    .url_times()?
                    .range(..(cutoff, 0u128))
                    .map_err(Error::storage)?
                    .take(limit)
                {
                    out.push(entry.map_err(Error::storage)?.0.value().1);
                }
                Ok(())
            }

            fn oldest_docs(&self, limit: usize, out: &mut Vec<(DocId, DocRecord)>) -> Result<()> {
                for entry in self.docs()?.iter().map_err(Error::storage)?.take(limit) {
                    let (k, v) = entry.map_err(Error::storage)?;
                    out.push((k.value(), DocRecord::decode(v.value())?));
                }
                Ok(())
            }

            fn doc_count(&self) -> Result<u64> {
                self.docs()?.len().map_err(Error::storage)
            }
        }
    };
}

impl_read_tables!(RedbTables<'_>);
impl_read_tables!(RedbReadTables<'_>);

/// The `limit` newest documents (highest ids first) under `digest` in a
/// title multimap.
fn stored_titles(
    table: &impl ReadableMultimapTable<u128, u64>,
    digest: u128,
    limit: usize,
    out: &mut Vec<DocId>,
) -> Result<()> {
    for v in table.get(digest).map_err(Error::storage)?.rev().take(limit) {
        out.push(v.map_err(Error::storage)?.value());
    }
    Ok(())
}

/// The `limit` newest documents of a title list as the side file stores
/// it (`stored`) with `changes` applied; the stored bytes read in place
/// when nothing `touched` the list.
pub(super) fn side_titles(
    stored: Option<&[u8]>,
    touched: bool,
    changes: impl FnOnce(&mut Vec<u64>),
    (limit, out): (usize, &mut Vec<DocId>),
) {
    if !touched {
        if let Some(bytes) = stored {
            out.extend(bytes.rchunks_exact(8).take(limit).map(behind::title_id));
        }
        return;
    }
    let mut ids = stored.map(behind::decode_title_list).unwrap_or_default();
    changes(&mut ids);
    out.extend(ids.iter().rev().take(limit));
}

/// The record of `digest` in a URL table.
fn stored_url(table: &impl ReadableTable<u128, &'static [u8]>, digest: u128) -> Result<Option<UrlRecord>> {
    match table.get(digest).map_err(Error::storage)? {
        Some(v) => Ok(Some(UrlRecord::decode(v.value())?)),
        None => Ok(None),
    }
}

impl RedbTables<'_> {
    /// Moves `digest`'s entry in the time index from `old` to `new` (either
    /// absent), touching nothing when they are the same time.
    fn retime_url(&mut self, digest: u128, old: Option<u64>, new: Option<u64>) -> Result<()> {
        if old == new || !self.url_times_kept {
            return Ok(());
        }
        if let Some(old) = old {
            self.url_times.remove((old, digest)).map_err(Error::storage)?;
        }
        if let Some(new) = new {
            self.url_times.insert((new, digest), ()).map_err(Error::storage)?;
        }
        Ok(())
    }
}

impl Tables for RedbTables<'_> {
    fn set_meta(&mut self, key: &str, value: &[u8]) -> Result<()> {
        self.meta.insert(key, value).map_err(Error::storage)?;
        Ok(())
    }

    /// With the URL records in the side file, held until a durable commit
    /// hands them to its thread; their time index is this file's.
    fn put_url(&mut self, digest: u128, rec: &UrlRecord) -> Result<()> {
        if self.side_urls().is_some() {
            let old = if self.url_times_kept {
                self.url_time(digest)?
            } else {
                None
            };
            self.blocks_txn
                .push_url(digest, UrlOp::Put(rec.encode().into_boxed_slice()));
            self.last_url.set(Some((digest, Some(rec.first_seen))));
            return self.retime_url(digest, old, Some(rec.first_seen));
        }
        let old = self
            .urls
            .insert(digest, rec.encode().as_slice())
            .map_err(Error::storage)?
            .map(|v| UrlRecord::decode(v.value()))
            .transpose()?;
        match old {
            _ if !self.url_times_kept => return Ok(()),
            // The same time: its entry in the time index is there already.
            // A crawl rewrites a URL's record once per fetched page (its
            // pending mark cleared), and this saves the writer thread one
            // B-tree insert of each (issue 37).
            Some(old) if old.first_seen == rec.first_seen => return Ok(()),
            Some(old) => {
                self.url_times
                    .remove((old.first_seen, digest))
                    .map_err(Error::storage)?;
            }
            None => {}
        }
        self.url_times
            .insert((rec.first_seen, digest), ())
            .map_err(Error::storage)?;
        Ok(())
    }

    fn remove_url(&mut self, digest: u128) -> Result<bool> {
        if self.side_urls().is_some() {
            let Some(old) = self.url_time(digest)? else {
                return Ok(false);
            };
            self.blocks_txn.push_url(digest, UrlOp::Remove);
            self.last_url.set(Some((digest, None)));
            self.retime_url(digest, Some(old), None)?;
            return Ok(true);
        }
        let Some(old) = self.urls.remove(digest).map_err(Error::storage)? else {
            return Ok(false);
        };
        let first_seen = UrlRecord::decode(old.value())?.first_seen;
        drop(old);
        self.retime_url(digest, Some(first_seen), None)?;
        Ok(true)
    }

    /// With the title lists in the side file, held until a durable
    /// commit hands them to its thread.
    fn add_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        if self.side_titles().is_some() {
            self.blocks_txn.push_title(digest, TitleOp::Add(id));
            return Ok(());
        }
        self.titles.insert(digest, id).map_err(Error::storage)?;
        Ok(())
    }

    fn remove_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        if self.side_titles().is_some() {
            self.blocks_txn.push_title(digest, TitleOp::Remove(id));
            return Ok(());
        }
        self.titles.remove(digest, id).map_err(Error::storage)?;
        Ok(())
    }

    /// Held until the next durable commit writes it (`behind`).
    fn add_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        self.blocks_txn
            .push(block_key(table, key), BlockOp::Add(posting(fp, id)));
        Ok(())
    }

    /// Held until the next durable commit writes it (`behind`).
    fn remove_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        self.blocks_txn
            .push(block_key(table, key), BlockOp::Remove(posting(fp, id)));
        Ok(())
    }

    fn add_band(&mut self, key: u64, id: DocId) -> Result<()> {
        self.pending.entry(key).or_default().push(BandOp::Add(id));
        Ok(())
    }

    fn remove_band(&mut self, key: u64, id: DocId) -> Result<()> {
        self.pending.entry(key).or_default().push(BandOp::Remove(id));
        Ok(())
    }

    fn put_doc(&mut self, id: DocId, rec: DocRecord) -> Result<()> {
        self.docs
            .insert(id, rec.encode().as_slice())
            .map_err(Error::storage)?;
        Ok(())
    }

    fn remove_doc(&mut self, id: DocId) -> Result<()> {
        self.docs.remove(id).map_err(Error::storage)?;
        Ok(())
    }
}
