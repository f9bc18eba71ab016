//! The SimHash block lists in a file of their own, written by a thread of
//! their own (issue 37, target 1).
//!
//! Why: written behind (`behind`), a durable commit's block-list changes
//! are one sorted batch; in the main file the writer thread still wrote
//! it. `store-compare` measured a side thread writing each batch into a
//! file of its own at a third less of the writer's CPU a page at 300,000
//! pages (docs/BENCHMARKS.md, "Block lists written behind").
//!
//! One durable point stays the main file's. Each commit's changes go into
//! the main file's log (`dedup_block_log`, under the commit's number) in
//! the same transaction as the documents they index. After a durable
//! commit of the main file, its batch goes to the side thread, which
//! writes it into `dedup_blocks` of the side file together with the last
//! commit it holds (`applied`) and makes it durable; the main file drops
//! the log up to that mark at its next durable commit. A crash leaves the
//! side file at or behind the main file's durable state, never ahead, and
//! the next open writes the log entries past its mark. The two files
//! carry one id, so that a main file made afresh never meets the lists of
//! another.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use parking_lot::Mutex;
use redb::{
    Database, Durability, ReadOnlyDatabase, ReadOnlyTable, ReadableDatabase, ReadableTable, Table,
    TableDefinition,
};

use super::behind::{
    BlockOps, Epoch, TxnBlockOps, UrlOp, apply, apply_titles, decode_title_list, encode_title_list,
};
use super::{BLOCKS, META, URLS, open_error, open_failed};
use crate::error::{Error, Result};

/// In the main file: commit number -> that commit's block-list changes
/// (`TxnBlockOps::encode`), kept until the side file holds them.
pub(super) const BLOCK_LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("dedup_block_log");
/// In the main file: commit number -> that commit's URL record changes
/// (`TxnBlockOps::encode_urls`), kept until the side file holds them
/// (an index whose URL records live in the side file).
pub(super) const URL_LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("dedup_url_log");
/// In the main file: commit number -> that commit's title list changes
/// (`TxnBlockOps::encode_titles`), kept until the side file holds them.
pub(super) const TITLE_LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("dedup_title_log");
/// In the side file: title digest -> the documents of that title, ids
/// ascending (`behind::decode_title_list`), what the main file's
/// `dedup_titles` multimap holds in an index from before.
pub(super) const TITLE_LISTS: TableDefinition<u128, &[u8]> = TableDefinition::new("dedup_title_lists");
/// In the side file: `id` (the pair's) and `applied` (the last commit it
/// holds).
const SIDE_META: TableDefinition<&str, u64> = TableDefinition::new("dedup_side_meta");
/// The store's layout ([`crate::store::Store::layout`]) with a side file
/// that holds the block lists only (made before 2026-12-06's fourth
/// session: its URL records and titles stay in the main file).
const LAYOUT: &str = "blocks-file";
/// The layout with a side file that holds the block lists, the URL
/// records and the title lists: a build that keeps those in the main file
/// would find none there, and refuses the index by its recorded
/// parameters.
const LAYOUT_RECORDS: &str = "side-file";

/// The layout of an index with a side file (`records`: whether its URL
/// records and title lists live there too).
pub(super) fn layout(records: bool) -> &'static str {
    if records { LAYOUT_RECORDS } else { LAYOUT }
}

/// In the main file's meta table: the id of its side file (8 bytes).
const SIDE_ID: &str = "blocks:side";
/// In the main file's meta table, present when its URL records (not their
/// time index, `dedup_url_times`, which stays in the main file) and its
/// title lists live in the side file.
pub(super) const RECORDS_SIDE: &str = "records:side";

/// Batches waiting for the side thread at most: past this the writer
/// waits for it at its durable commits.
const QUEUED: usize = 4;

/// The share of a store's page cache its side file takes: the block
/// lists' pages (and now the URL records') were in the one file's cache
/// before, and the two caches together hold what the one did (the
/// 10M-page crawl's RSS bound). Half: the block lists and the URL records
/// are the two random-key groups each crawled page reads; with a quarter,
/// after the URL records moved here, the crawl's writer spent a tenth
/// more CPU a page reading them (issue 37, 100,000 pages, 4 rounds
/// alternating: 3.77 s against 3.51 s at the medians).
pub(super) fn side_cache(total: usize) -> usize {
    total / 2
}

/// Where the side file of the main file `main` lives: beside it,
/// `index.redb` -> `index.blocks.redb`.
pub(super) fn side_path(main: &Path) -> PathBuf {
    main.with_extension("blocks.redb")
}

/// The URL record changes of `epochs` (oldest first) written into the
/// side file's `table`: each record's last change only.
fn merge_urls(table: &mut Table<'_, u128, &'static [u8]>, epochs: &[&BlockOps]) -> Result<()> {
    let mut last: rustc_hash::FxHashMap<u128, &UrlOp> = rustc_hash::FxHashMap::default();
    for e in epochs {
        last.extend(e.url_changes());
    }
    let mut changes: Vec<(u128, &UrlOp)> = last.into_iter().collect();
    changes.sort_unstable_by_key(|(d, _)| *d);
    for (digest, op) in changes {
        match op {
            UrlOp::Put(bytes) => {
                table.insert(digest, &**bytes).map_err(Error::storage)?;
            }
            UrlOp::Remove => {
                table.remove(digest).map_err(Error::storage)?;
            }
        }
    }
    Ok(())
}

/// The title list changes of `epochs` (oldest first) written into the
/// side file's `table`: each list read and written once.
fn merge_titles(table: &mut Table<'_, u128, &'static [u8]>, epochs: &[&BlockOps]) -> Result<()> {
    let mut keys: Vec<u128> = epochs.iter().flat_map(|e| e.title_keys()).collect();
    keys.sort_unstable();
    keys.dedup();
    for k in keys {
        let stored = table.get(k).map_err(Error::storage)?;
        let existed = stored.is_some();
        let mut ids = stored.map(|v| decode_title_list(v.value())).unwrap_or_default();
        for e in epochs {
            apply_titles(&mut ids, e.titles_of(k, u64::MAX));
        }
        if !ids.is_empty() {
            table
                .insert(k, encode_title_list(&ids).as_slice())
                .map_err(Error::storage)?;
        } else if existed {
            table.remove(k).map_err(Error::storage)?;
        }
    }
    Ok(())
}

/// The changes of `epochs`, then of `txn`, written into the block lists
/// of `table`, in key order: each list read and written once.
pub(super) fn merge(
    table: &mut Table<'_, u128, &'static [u8]>,
    epochs: &[&BlockOps],
    txn: Option<&TxnBlockOps>,
) -> Result<()> {
    let mut keys: Vec<u128> = epochs
        .iter()
        .flat_map(|e| e.keys())
        .chain(txn.into_iter().flat_map(|t| t.by_key.keys().copied()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    for k in keys {
        let stored = table.get(k).map_err(Error::storage)?;
        let existed = stored.is_some();
        let mut list = stored.map(|v| v.value().to_vec()).unwrap_or_default();
        for e in epochs {
            apply(&mut list, e.of(k, 0, u64::MAX));
        }
        if let Some(t) = txn {
            apply(&mut list, t.of(k));
        }
        if !list.is_empty() {
            table.insert(k, list.as_slice()).map_err(Error::storage)?;
        } else if existed {
            table.remove(k).map_err(Error::storage)?;
        }
    }
    Ok(())
}

/// The side file of a store and its thread.
#[derive(Debug)]
pub(super) struct SideBlocks {
    db: Arc<Database>,
    path: PathBuf,
    batches: Option<SyncSender<(u64, Epoch)>>,
    /// The last commit the side file holds, durably.
    applied: Arc<AtomicU64>,
    /// Whether the URL records and title lists live here too
    /// ([`RECORDS_SIDE`]).
    pub(super) records: bool,
    /// Why the thread stopped, if it failed.
    failed: Arc<Mutex<Option<String>>>,
    thread: Option<JoinHandle<()>>,
    /// Tests: the thread drops the batches instead of writing them, as a
    /// crash before it wrote them would.
    #[cfg(test)]
    pub(super) drop_batches: Arc<std::sync::atomic::AtomicBool>,
}

/// How the main file `main` at `path` keeps its block lists.
pub(super) enum Home {
    /// In `dedup_blocks` of the main file: an index written before side
    /// files (issue 37), whose lists stay where they are.
    InFile,
    /// In a side file; the commits so far (the log's numbering).
    Side(SideBlocks, u64),
}

impl SideBlocks {
    /// Opens (or, for a main file that has no block lists yet, creates)
    /// the side file of `main`, writing into it the log entries it lacks.
    pub(super) fn open(main: &Database, path: &Path, cache: usize) -> Result<Home> {
        let side = side_path(path);
        let (id, in_file, records) = {
            let txn = main.begin_read().map_err(Error::storage)?;
            let id = side_id(&txn, path)?;
            let records = records_on_side(&txn)?;
            let in_file = match txn.open_table(BLOCKS) {
                Ok(t) => t.first().map_err(Error::storage)?.is_some(),
                Err(redb::TableError::TableDoesNotExist(_)) => false,
                Err(e) => return Err(Error::storage(e)),
            };
            (id, in_file, records)
        };
        let (db, commits, records) = match id {
            None if in_file => return Ok(Home::InFile),
            None => (create(main, path, &side, cache)?, 0, true),
            Some(id) => {
                let db = open_existing(path, &side, id, cache)?;
                let commits = replay(main, &db)?;
                (db, commits, records)
            }
        };
        let db = Arc::new(db);
        let applied = Arc::new(AtomicU64::new(applied_of(
            &db.begin_read().map_err(Error::storage)?,
        )?));
        let failed = Arc::new(Mutex::new(None));
        let (tx, rx) = sync_channel(QUEUED);
        #[cfg(test)]
        let drop_batches = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let (db, applied, failed) = (db.clone(), applied.clone(), failed.clone());
            #[cfg(test)]
            let skip = drop_batches.clone();
            #[cfg(not(test))]
            let skip = ();
            std::thread::Builder::new()
                .name("dedup-blocks".into())
                .spawn(move || write_batches(&db, &rx, &applied, &failed, &skip))
                .map_err(Error::storage)?
        };
        Ok(Home::Side(
            SideBlocks {
                db,
                path: side,
                batches: Some(tx),
                applied,
                records,
                failed,
                thread: Some(thread),
                #[cfg(test)]
                drop_batches,
            },
            commits,
        ))
    }

    /// The side file.
    pub(super) fn database(&self) -> &Database {
        &self.db
    }

    /// The last commit the side file holds.
    pub(super) fn applied(&self) -> u64 {
        self.applied.load(Ordering::Acquire)
    }

    /// An error if the side thread stopped on one.
    pub(super) fn check(&self) -> Result<()> {
        match &*self.failed.lock() {
            Some(why) => Err(Error::Corrupt(format!(
                "cannot write the block lists into {}: {why}",
                self.path.display()
            ))),
            None => Ok(()),
        }
    }

    /// Hands the batch of commits up to `upto` to the side thread (waiting
    /// while it is [`QUEUED`] batches behind).
    pub(super) fn send(&self, upto: u64, epoch: Epoch) -> Result<()> {
        let sent = self
            .batches
            .as_ref()
            .is_some_and(|tx| tx.send((upto, epoch)).is_ok());
        if sent {
            Ok(())
        } else {
            self.check()
                .and(Err(Error::Corrupt("the block lists' thread stopped".into())))
        }
    }

    /// Tests: waits until the side file holds every commit up to `upto`.
    #[cfg(test)]
    pub(super) fn wait_for(&self, upto: u64) {
        while self.applied() < upto && self.failed.lock().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

impl Drop for SideBlocks {
    /// The batches handed over are written before the file closes.
    fn drop(&mut self) {
        self.batches.take();
        if let Some(t) = self.thread.take()
            && t.join().is_err()
        {
            tracing::warn!(path = %self.path.display(), "the block lists' thread panicked");
        }
    }
}

/// The side thread: each batch written and made durable, in order, with
/// the last commit it holds.
fn write_batches(
    db: &Database,
    rx: &Receiver<(u64, Epoch)>,
    applied: &AtomicU64,
    failed: &Mutex<Option<String>>,
    #[cfg(test)] skip: &std::sync::atomic::AtomicBool,
    #[cfg(not(test))] _skip: &(),
) {
    for (upto, epoch) in rx {
        #[cfg(test)]
        if skip.load(Ordering::Acquire) {
            continue;
        }
        let ops = epoch.read();
        if let Err(e) = write_batch(db, &[&ops], upto) {
            *failed.lock() = Some(e.to_string());
            return;
        }
        applied.store(upto, Ordering::Release);
    }
}

/// `epochs` written into the side file `db` as holding commits up to
/// `upto`, durably.
fn write_batch(db: &Database, epochs: &[&BlockOps], upto: u64) -> Result<()> {
    let mut txn = db.begin_write().map_err(Error::storage)?;
    txn.set_durability(Durability::Immediate)
        .map_err(Error::storage)?;
    {
        let mut blocks = txn.open_table(BLOCKS).map_err(Error::storage)?;
        merge(&mut blocks, epochs, None)?;
        if epochs.iter().any(|e| e.url_changes().next().is_some()) {
            let mut urls = txn.open_table(URLS).map_err(Error::storage)?;
            merge_urls(&mut urls, epochs)?;
        }
        if epochs.iter().any(|e| e.title_keys().next().is_some()) {
            let mut titles = txn.open_table(TITLE_LISTS).map_err(Error::storage)?;
            merge_titles(&mut titles, epochs)?;
        }
        let mut meta = txn.open_table(SIDE_META).map_err(Error::storage)?;
        meta.insert("applied", upto).map_err(Error::storage)?;
    }
    txn.commit().map_err(Error::storage)
}

fn read_id(bytes: &[u8], path: &Path) -> Result<u64> {
    let b: [u8; 8] = bytes.try_into().map_err(|_| {
        Error::Corrupt(format!(
            "{}: a side file id of {} bytes",
            path.display(),
            bytes.len()
        ))
    })?;
    Ok(u64::from_le_bytes(b))
}

fn applied_of(txn: &redb::ReadTransaction) -> Result<u64> {
    let meta = txn.open_table(SIDE_META).map_err(Error::storage)?;
    Ok(meta
        .get("applied")
        .map_err(Error::storage)?
        .map_or(0, |v| v.value()))
}

/// A new side file for `main`, which has no block lists: any file at
/// `side` belonged to an index that is gone. The side file is made first,
/// so that a crash before the main file names it leaves a main file that
/// makes it again.
fn create(main: &Database, path: &Path, side: &Path, cache: usize) -> Result<Database> {
    use std::hash::BuildHasher;
    let id = std::hash::RandomState::new().hash_one((std::time::SystemTime::now(), std::process::id(), path));
    match std::fs::remove_file(side) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(open_error(side, Box::new(e))),
    }
    let db = Database::builder()
        .set_cache_size(cache)
        .create(side)
        .map_err(|e| open_failed(side, e))?;
    let mut txn = db.begin_write().map_err(Error::storage)?;
    txn.set_durability(Durability::Immediate)
        .map_err(Error::storage)?;
    {
        let mut meta = txn.open_table(SIDE_META).map_err(Error::storage)?;
        meta.insert("id", id).map_err(Error::storage)?;
        meta.insert("applied", 0).map_err(Error::storage)?;
        txn.open_table(BLOCKS).map_err(Error::storage)?;
        txn.open_table(URLS).map_err(Error::storage)?;
        txn.open_table(TITLE_LISTS).map_err(Error::storage)?;
    }
    txn.commit().map_err(Error::storage)?;
    let mut txn = main.begin_write().map_err(Error::storage)?;
    txn.set_durability(Durability::Immediate)
        .map_err(Error::storage)?;
    {
        let mut meta = txn.open_table(META).map_err(Error::storage)?;
        meta.insert(SIDE_ID, id.to_le_bytes().as_slice())
            .map_err(Error::storage)?;
        meta.insert(RECORDS_SIDE, [1u8].as_slice())
            .map_err(Error::storage)?;
        txn.open_table(BLOCK_LOG).map_err(Error::storage)?;
        txn.open_table(URL_LOG).map_err(Error::storage)?;
        txn.open_table(TITLE_LOG).map_err(Error::storage)?;
    }
    txn.commit().map_err(Error::storage)?;
    Ok(db)
}

/// The id of its side file a main file records, if any.
fn side_id(main: &redb::ReadTransaction, path: &Path) -> Result<Option<u64>> {
    let meta = match main.open_table(META) {
        Ok(meta) => meta,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(Error::storage(e)),
    };
    match meta.get(SIDE_ID).map_err(Error::storage)? {
        Some(v) => read_id(v.value(), path).map(Some),
        None => Ok(None),
    }
}

/// Whether a main file keeps its URL records and title lists in its side
/// file.
fn records_on_side(main: &redb::ReadTransaction) -> Result<bool> {
    match main.open_table(META) {
        Ok(meta) => Ok(meta.get(RECORDS_SIDE).map_err(Error::storage)?.is_some()),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(false),
        Err(e) => Err(Error::storage(e)),
    }
}

/// An error unless the side file `side` of the main file at `path` is
/// there.
fn require(path: &Path, side: &Path) -> Result<()> {
    if side.exists() {
        return Ok(());
    }
    Err(Error::Corrupt(format!(
        "{} is missing: the SimHash block lists of {} are kept there (move or copy the two files together)",
        side.display(),
        path.display()
    )))
}

/// The side file at `side` of the main file at `path`, which names it by
/// `id`.
fn open_existing(path: &Path, side: &Path, id: u64, cache: usize) -> Result<Database> {
    require(path, side)?;
    let db = Database::builder()
        .set_cache_size(cache)
        .create(side)
        .map_err(|e| open_failed(side, e))?;
    check_id(&db.begin_read().map_err(Error::storage)?, path, side, id)?;
    Ok(db)
}

fn check_id(txn: &redb::ReadTransaction, path: &Path, side: &Path, id: u64) -> Result<()> {
    let meta = txn.open_table(SIDE_META).map_err(Error::storage)?;
    let theirs = meta.get("id").map_err(Error::storage)?.map(|v| v.value());
    if theirs != Some(id) {
        return Err(Error::Corrupt(format!(
            "{} holds the block lists of another index than {}",
            side.display(),
            path.display()
        )));
    }
    Ok(())
}

/// The main file's log entries past what `side` holds, written into it;
/// returns the commits so far (the log's numbering goes on from there).
fn replay(main: &Database, side: &Database) -> Result<u64> {
    let applied = applied_of(&side.begin_read().map_err(Error::storage)?)?;
    let (ops, last) = logged_after(&main.begin_read().map_err(Error::storage)?, applied)?;
    if last > applied {
        write_batch(side, &[&ops], last)?;
    }
    Ok(last.max(applied))
}

/// The changes the main file's log holds past commit `after`, and the
/// last commit it holds (`after` when none).
fn logged_after(main: &redb::ReadTransaction, after: u64) -> Result<(BlockOps, u64)> {
    let mut ops = BlockOps::default();
    let mut last = after;
    // One commit's block-list, URL record and title list changes are one
    // transaction's: read from their logs and held under the commit's
    // number together.
    type Decode = fn(&mut TxnBlockOps, &[u8]) -> std::result::Result<(), String>;
    let logs: [(TableDefinition<u64, &[u8]>, Decode); 3] = [
        (BLOCK_LOG, TxnBlockOps::decode_blocks_into),
        (URL_LOG, TxnBlockOps::decode_urls_into),
        (TITLE_LOG, TxnBlockOps::decode_titles_into),
    ];
    let mut by_commit: std::collections::BTreeMap<u64, TxnBlockOps> = std::collections::BTreeMap::new();
    for (def, decode) in logs {
        let log = match main.open_table(def) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => continue,
            Err(e) => return Err(Error::storage(e)),
        };
        for entry in log.range(after.saturating_add(1)..).map_err(Error::storage)? {
            let (k, v) = entry.map_err(Error::storage)?;
            let commit = k.value();
            decode(by_commit.entry(commit).or_default(), v.value()).map_err(Error::Corrupt)?;
            last = last.max(commit);
        }
    }
    for (commit, txn) in by_commit {
        ops.extend(commit, txn);
    }
    Ok((ops, last))
}

/// A read-only store's side file: its lists, and the changes of the main
/// file's log that it lacks (a crash before the side thread wrote them).
pub(super) struct ReadOnlySide {
    pub(super) db: ReadOnlyDatabase,
    /// Whether the URL records and title lists live here too.
    pub(super) records: bool,
    pub(super) logged: Epoch,
    pub(super) upto: u64,
}

impl std::fmt::Debug for ReadOnlySide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOnlySide")
            .field("upto", &self.upto)
            .finish_non_exhaustive()
    }
}

impl ReadOnlySide {
    /// The side file of the read-only main file at `path`, if it has one.
    pub(super) fn open(main: &ReadOnlyDatabase, path: &Path, cache: usize) -> Result<Option<ReadOnlySide>> {
        let txn = main.begin_read().map_err(Error::storage)?;
        let Some(id) = side_id(&txn, path)? else {
            return Ok(None);
        };
        let side = side_path(path);
        require(path, &side)?;
        let db = redb::Builder::new()
            .set_cache_size(cache)
            .open_read_only(&side)
            .map_err(|e| open_failed(&side, e))?;
        let snap = db.begin_read().map_err(Error::storage)?;
        check_id(&snap, path, &side, id)?;
        let (ops, upto) = logged_after(&txn, applied_of(&snap)?)?;
        Ok(Some(ReadOnlySide {
            db,
            records: records_on_side(&txn)?,
            logged: Arc::new(parking_lot::RwLock::new(ops)),
            upto,
        }))
    }
}

/// A snapshot of a side file: its lists, its URL records and title lists
/// when they live there, and the last commit it holds.
pub(super) struct SideSnapshot {
    pub(super) blocks: ReadOnlyTable<u128, &'static [u8]>,
    pub(super) urls: Option<ReadOnlyTable<u128, &'static [u8]>>,
    pub(super) titles: Option<ReadOnlyTable<u128, &'static [u8]>>,
    pub(super) applied: u64,
}

/// A snapshot of the side file `db` (`records`: whether it holds the URL
/// records and title lists).
pub(super) fn snapshot(db: &dyn SnapshotSource, records: bool) -> Result<SideSnapshot> {
    let txn = db.begin().map_err(Error::storage)?;
    let applied = applied_of(&txn)?;
    Ok(SideSnapshot {
        blocks: txn.open_table(BLOCKS).map_err(Error::storage)?,
        urls: records
            .then(|| txn.open_table(URLS))
            .transpose()
            .map_err(Error::storage)?,
        titles: records
            .then(|| txn.open_table(TITLE_LISTS))
            .transpose()
            .map_err(Error::storage)?,
        applied,
    })
}

/// A side file open for writing or only for reading.
pub(super) trait SnapshotSource {
    fn begin(&self) -> std::result::Result<redb::ReadTransaction, redb::TransactionError>;
}

impl SnapshotSource for Database {
    fn begin(&self) -> std::result::Result<redb::ReadTransaction, redb::TransactionError> {
        self.begin_read()
    }
}

impl SnapshotSource for ReadOnlyDatabase {
    fn begin(&self) -> std::result::Result<redb::ReadTransaction, redb::TransactionError> {
        self.begin_read()
    }
}
