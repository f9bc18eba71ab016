//! The revisit records in a file of their own, written by a thread of
//! their own (issue 37, target 1).
//!
//! Why: every judged page writes its record, due time and copy relation
//! under random keys, and each dirties leaves that every commit copies,
//! checksums and writes: a throwaway build that wrote none took the
//! crawl's writer thread down 22% on `crawl bench` (docs/BENCHMARKS.md,
//! "Revisit records in a file of their own"). The block lists' side file
//! (`simcrawl_dedup`'s `store::redb::side`) showed the way, and this is
//! the same design.
//!
//! One durable point stays the main file's. The writer's changes to the
//! records are operations ([`Op`]): each transaction logs its own in the
//! main file (`revisit_log`, under a number of its own) as it commits.
//! After a durable commit of the main file, the operations of the commits
//! up to it go to the thread, which does them in `index.revisit.redb` in
//! one transaction together with the last number it holds (`applied`) and
//! makes it durable; the main file drops its log up to that mark in a
//! later transaction. A crash leaves the side file at or behind the main
//! file's durable state, never ahead, and the next open does the logged
//! operations past its mark. The two files carry one id, so that a main
//! file made afresh never meets the records of another.
//!
//! The writer reads what it wrote, as in one file. A page's record comes
//! from the newest operation on it that the side file may not hold yet,
//! else from the side file. A changed page's copies are the side file's
//! (once the thread holds every batch handed to it), followed through the
//! operations it does not hold yet. The pages due (`--forever` ticks, a
//! revisit's start) wait for the thread too, then do those operations in a
//! write transaction of the side file that is then aborted. A first crawl
//! reads only the records of pages that declare another canonical URL.
//! `tests::the_side_file_reads_as_the_main_file_would` holds all three
//! to what the main file's tables give for the same operations.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};

use super::records::{Op, Records};
use super::{COPIES, PAGES, PageRecord, record};

type Result<T> = std::result::Result<T, simcrawl_dedup::Error>;

/// In the main file: log number -> the operations of the transaction that
/// logged them (postcard), kept until the side file holds them.
const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("revisit_log");
/// In the main file: `id`, the id of its revisit records' file.
const MAIN_META: TableDefinition<&str, u64> = TableDefinition::new("revisit_side");
/// In the side file: `id` (the pair's) and `applied` (the last log number
/// it holds).
const SIDE_META: TableDefinition<&str, u64> = TableDefinition::new("revisit_side_meta");

/// Batches waiting for the thread at most: past this the writer waits
/// for it at its durable commits.
const QUEUED: usize = 4;

/// The share of a crawl state's page cache (`store.cache_mb`) its revisit
/// records' file takes: the records' pages were in the main file's cache
/// before, and the caches together hold what it did (the crawl's memory
/// bounds: a fixed 16 MiB on top was 25 MB more peak RSS on `crawl bench`).
pub fn cache_share(total: usize) -> usize {
    total / 8
}

/// Where the revisit records of the main file `main` live: beside it,
/// `index.redb` -> `index.revisit.redb`.
pub fn side_path(main: &Path) -> PathBuf {
    main.with_extension("revisit.redb")
}

fn corrupt(what: String) -> simcrawl_dedup::Error {
    simcrawl_dedup::Error::Corrupt(what)
}

/// The operations of a commit, logged in the main file.
fn encode(ops: &[Op]) -> Result<Vec<u8>> {
    postcard::to_allocvec(ops).map_err(|e| corrupt(format!("cannot encode revisit operations: {e}")))
}

fn decode(bytes: &[u8], number: u64) -> Result<Vec<Op>> {
    postcard::from_bytes(bytes)
        .map_err(|e| corrupt(format!("revisit log entry {number} cannot be read: {e}")))
}

/// What the writer holds between transactions.
#[derive(Default)]
struct Held {
    /// The next log number.
    next: u64,
    /// The operations of the last transaction, with their number: kept
    /// once its commit shows in the main file, dropped if it never does.
    tentative: Option<(u64, Vec<Op>)>,
    /// The operations of the commits since the last durable one.
    backlog: Vec<(u64, Vec<Op>)>,
    /// The batches handed to the thread, by the last number of each,
    /// until the side file holds them.
    in_flight: Vec<(u64, Arc<Vec<Op>>)>,
    /// The last number handed to the thread.
    sent: u64,
}

/// The thread's progress, shared with the writer.
#[derive(Default)]
struct Progress {
    /// The last log number the side file holds, durably.
    applied: u64,
    /// Why the thread stopped, if it failed.
    failed: Option<String>,
}

/// The revisit records' file of a crawl state and its thread.
pub struct RevisitFile {
    db: Arc<Database>,
    path: PathBuf,
    held: Mutex<Held>,
    progress: Arc<(Mutex<Progress>, Condvar)>,
    batches: Option<SyncSender<(u64, Arc<Vec<Op>>)>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for RevisitFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RevisitFile").field("path", &self.path).finish()
    }
}

impl RevisitFile {
    /// The revisit records' file of the main file `main` at `path`,
    /// opened (the logged operations it lacks done first) or, for a state
    /// that has no records yet, created; `None` for a state made before
    /// this file, whose records stay in the main file.
    pub fn open(main: &Database, path: &Path, cache_bytes: usize) -> Result<Option<RevisitFile>> {
        let side = side_path(path);
        let (id, in_file) = {
            let txn = main.begin_read()?;
            let id = match txn.open_table(MAIN_META) {
                Ok(t) => t.get("id")?.map(|v| v.value()),
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(e) => return Err(e.into()),
            };
            let in_file = match txn.open_table(PAGES) {
                Ok(t) => t.first()?.is_some(),
                Err(redb::TableError::TableDoesNotExist(_)) => false,
                Err(e) => return Err(e.into()),
            };
            (id, in_file)
        };
        let db = match id {
            None if in_file => return Ok(None),
            None => create(main, &side, cache_bytes)?,
            Some(id) => open_existing(path, &side, id, cache_bytes)?,
        };
        let applied = replay(main, &db)?;
        let last_logged = {
            let txn = main.begin_read()?;
            match txn.open_table(LOG) {
                Ok(t) => t.last()?.map_or(0, |(k, _)| k.value()),
                Err(redb::TableError::TableDoesNotExist(_)) => 0,
                Err(e) => return Err(e.into()),
            }
        };
        let db = Arc::new(db);
        let progress = Arc::new((
            Mutex::new(Progress {
                applied,
                failed: None,
            }),
            Condvar::new(),
        ));
        let (tx, rx) = sync_channel(QUEUED);
        let thread = {
            let (db, progress) = (db.clone(), progress.clone());
            std::thread::Builder::new()
                .name("crawl-revisit".into())
                .spawn(move || write_batches(&db, &rx, &progress))
                .map_err(|e| corrupt(format!("cannot start the revisit records' thread: {e}")))?
        };
        Ok(Some(RevisitFile {
            db,
            path: side,
            held: Mutex::new(Held {
                next: applied.max(last_logged) + 1,
                sent: applied,
                ..Held::default()
            }),
            progress,
            batches: Some(tx),
            thread: Some(thread),
        }))
    }

    /// The schedule's records on the main file's `txn`: the operations of
    /// the last transaction kept if it committed.
    pub(crate) fn pending<'t>(&'t self, txn: &'t WriteTransaction) -> Result<Pending<'t>> {
        self.check()?;
        self.settle(&txn.open_table(LOG)?)?;
        Ok(Pending {
            file: self,
            txn,
            ops: Vec::new(),
            finished: false,
        })
    }

    /// The last transaction's operations kept when its entry is in the
    /// main file's `log` (it committed), else dropped.
    fn settle(&self, log: &impl ReadableTable<u64, &'static [u8]>) -> Result<()> {
        let mut held = self.held.lock();
        if let Some((n, ops)) = held.tentative.take()
            && log.get(n)?.is_some()
        {
            held.backlog.push((n, ops));
        }
        Ok(())
    }

    /// After a durable commit of `main`: the operations of the commits up
    /// to it handed to the thread.
    pub fn durable(&self, main: &Database) -> Result<()> {
        self.check()?;
        if self.held.lock().tentative.is_some() {
            match main.begin_read()?.open_table(LOG) {
                Ok(log) => self.settle(&log)?,
                // No log at all: the transaction that logged them aborted.
                Err(redb::TableError::TableDoesNotExist(_)) => drop(self.held.lock().tentative.take()),
                Err(e) => return Err(e.into()),
            }
        }
        let applied = self.applied();
        let (upto, ops) = {
            let mut held = self.held.lock();
            // The batches the side file holds leave memory here too: a
            // first crawl may never read a record.
            held.in_flight.retain(|(upto, _)| *upto > applied);
            let Some(&(upto, _)) = held.backlog.last() else {
                return Ok(());
            };
            let ops: Arc<Vec<Op>> = Arc::new(
                std::mem::take(&mut held.backlog)
                    .into_iter()
                    .flat_map(|(_, ops)| ops)
                    .collect(),
            );
            held.sent = upto;
            held.in_flight.push((upto, ops.clone()));
            (upto, ops)
        };
        let sent = self
            .batches
            .as_ref()
            .is_some_and(|tx| tx.send((upto, ops)).is_ok());
        if sent {
            Ok(())
        } else {
            self.check()
                .and(Err(corrupt("the revisit records' thread stopped".into())))
        }
    }

    /// An error if the thread stopped on one.
    fn check(&self) -> Result<()> {
        match &self.progress.0.lock().failed {
            Some(why) => Err(corrupt(format!(
                "cannot write the revisit records into {}: {why}",
                self.path.display()
            ))),
            None => Ok(()),
        }
    }

    /// The last log number the side file holds.
    fn applied(&self) -> u64 {
        self.progress.0.lock().applied
    }

    /// Waits until the side file holds every batch handed to the thread.
    fn drain(&self) -> Result<()> {
        let sent = self.held.lock().sent;
        let (lock, done) = &*self.progress;
        let mut p = lock.lock();
        while p.applied < sent && p.failed.is_none() {
            done.wait(&mut p);
        }
        drop(p);
        self.check()
    }
}

impl Drop for RevisitFile {
    /// The batches handed over are written before the file closes.
    fn drop(&mut self) {
        self.batches.take();
        if let Some(t) = self.thread.take()
            && t.join().is_err()
        {
            tracing::warn!(path = %self.path.display(), "the revisit records' thread panicked");
        }
    }
}

/// The records' changes made on one transaction of the main file.
pub(crate) struct Pending<'t> {
    file: &'t RevisitFile,
    txn: &'t WriteTransaction,
    ops: Vec<Op>,
    finished: bool,
}

impl Pending<'_> {
    pub(crate) fn push(&mut self, op: Op) {
        self.ops.push(op);
    }

    /// The record of `key` as the writer left it: from the newest
    /// operation on it that the side file may not hold yet (this
    /// transaction's, then the commits' since the last durable one, then
    /// the batches the thread is writing), else from the side file. No
    /// wait: the crawl reads a record for every page that declares
    /// another canonical URL, and for every revisited page.
    pub(crate) fn get(&self, key: u128) -> Result<Option<PageRecord>> {
        if let Some(found) = latest(&self.ops, key) {
            return Ok(found);
        }
        // The mark first: the batches past it are read here, and the
        // snapshot begun after it holds every batch up to it.
        let applied = self.file.applied();
        {
            let mut held = self.file.held.lock();
            held.in_flight.retain(|(upto, _)| *upto > applied);
            let newest_first = held
                .tentative
                .iter()
                .map(|(_, ops)| ops.as_slice())
                .chain(held.backlog.iter().rev().map(|(_, ops)| ops.as_slice()))
                .chain(held.in_flight.iter().rev().map(|(_, ops)| ops.as_slice()));
            for ops in newest_first {
                if let Some(found) = latest(ops, key) {
                    return Ok(found);
                }
            }
        }
        let txn = self.file.db.begin_read()?;
        let pages = match txn.open_table(PAGES) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        Ok(pages.get(key)?.and_then(|v| record::decode(v.value())))
    }

    /// The copies of the page `key` with their records, as the writer left
    /// them, without a transaction: the side file's copies of it (once the
    /// thread holds every batch handed to it) and the pages an operation
    /// not held yet put as its copies, each followed through the
    /// operations on it in order as the tables would be (a put or a removal
    /// takes the page out of the copies of its record's original, a put
    /// makes it a copy of its own; a held put changes the record only).
    /// Called for every changed page a revisit finds; a transaction doing
    /// the operations since the last durable commit took milliseconds.
    pub(crate) fn copies_of(&self, key: u128) -> Result<Vec<(u128, PageRecord)>> {
        self.file.drain()?;
        let txn = self.file.db.begin_read()?;
        let (pages, copies) = match (txn.open_table(PAGES), txn.open_table(COPIES)) {
            (Ok(p), Ok(c)) => (Some(p), Some(c)),
            (Err(redb::TableError::TableDoesNotExist(_)), _)
            | (_, Err(redb::TableError::TableDoesNotExist(_))) => (None, None),
            (Err(e), _) | (_, Err(e)) => return Err(e.into()),
        };
        let mut members = std::collections::BTreeMap::new();
        if let Some(copies) = &copies {
            for item in copies.range((key, 0)..=(key, u128::MAX))? {
                members.insert(item?.0.value().1, true);
            }
        }
        let held = self.file.held.lock();
        let ops: Vec<&Op> = held
            .backlog
            .iter()
            .chain(&held.tentative)
            .flat_map(|(_, ops)| ops)
            .chain(&self.ops)
            .collect();
        for op in &ops {
            if let Op::Put(c, rec) = op
                && rec.dup_key == Some(key)
            {
                members.entry(*c).or_insert(false);
            }
        }
        let stored = |c: u128| -> Result<Option<PageRecord>> {
            match &pages {
                Some(p) => Ok(p.get(c)?.and_then(|v| record::decode(v.value()))),
                None => Ok(None),
            }
        };
        let mut out = Vec::new();
        for (c, mut member) in members {
            let mut rec = stored(c)?;
            for op in &ops {
                match op {
                    Op::Put(k, new) if *k == c => {
                        if rec.as_ref().is_some_and(|r| r.dup_key == Some(key)) {
                            member = false;
                        }
                        member |= new.dup_key == Some(key);
                        rec = Some(new.clone());
                    }
                    Op::PutHeld(k, new) if *k == c => rec = Some(new.clone()),
                    Op::Remove(k) if *k == c => {
                        if rec.as_ref().is_some_and(|r| r.dup_key == Some(key)) {
                            member = false;
                        }
                        rec = None;
                    }
                    _ => {}
                }
            }
            if member && let Some(rec) = rec {
                out.push((c, rec));
            }
        }
        Ok(out)
    }

    /// `f` on the records as the writer left them: the side file once the
    /// thread holds every batch handed to it, with the operations it does
    /// not hold yet done in a transaction that is then aborted.
    pub(crate) fn view<T>(&self, f: impl FnOnce(&mut Records<'_>) -> Result<T>) -> Result<T> {
        self.file.drain()?;
        let txn = self.file.db.begin_write()?;
        let out = {
            let mut records = Records::open(&txn)?;
            let held = self.file.held.lock();
            let older = held
                .backlog
                .iter()
                .chain(&held.tentative)
                .flat_map(|(_, ops)| ops);
            for op in older.chain(&self.ops) {
                records.apply(op)?;
            }
            drop(held);
            f(&mut records)?
        };
        txn.abort()?;
        Ok(out)
    }

    /// Logs the operations in the main file's transaction, under the next
    /// number, and drops the log entries the side file holds; they are the
    /// writer's until the commit shows whether they were kept.
    pub(crate) fn finish(mut self) -> Result<()> {
        self.finished = true;
        let applied = self.file.applied();
        let mut log = self.txn.open_table(LOG)?;
        let done: Vec<u64> = log
            .range(..=applied)?
            .map(|item| item.map(|(k, _)| k.value()))
            .collect::<std::result::Result<_, _>>()?;
        for n in done {
            log.remove(n)?;
        }
        if self.ops.is_empty() {
            return Ok(());
        }
        let mut held = self.file.held.lock();
        let n = held.next;
        held.next += 1;
        log.insert(n, encode(&self.ops)?.as_slice())?;
        held.tentative = Some((n, std::mem::take(&mut self.ops)));
        Ok(())
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        debug_assert!(
            self.finished || self.ops.is_empty() || std::thread::panicking(),
            "revisit operations dropped without Schedule::finish"
        );
    }
}

/// [`super::due_summary`] of the crawl state whose main file `main` is at
/// `path`: read from its revisit records' file when it has one (as of that
/// file's last durable commit, which a crawl that ends writes last).
pub fn due_summary(main: &impl ReadableDatabase, path: &Path, now_ms: u64) -> Result<(u64, Option<u64>)> {
    let has_side = match main.begin_read()?.open_table(MAIN_META) {
        Ok(t) => t.get("id")?.is_some(),
        Err(redb::TableError::TableDoesNotExist(_)) => false,
        Err(e) => return Err(e.into()),
    };
    if !has_side {
        return super::due_summary(main, now_ms);
    }
    let side = side_path(path);
    let db = redb::Builder::new().open_read_only(&side).map_err(|e| {
        corrupt(format!(
            "cannot read the revisit records in {}: {e}",
            side.display()
        ))
    })?;
    super::due_summary(&db, now_ms)
}

/// The record the operations `ops` leave for `key`, from the newest on
/// it: `Some(None)` when they remove it, `None` when none changes it.
fn latest(ops: &[Op], key: u128) -> Option<Option<PageRecord>> {
    ops.iter().rev().find_map(|op| match op {
        Op::Put(k, rec) | Op::PutHeld(k, rec) if *k == key => Some(Some(rec.clone())),
        Op::Remove(k) if *k == key => Some(None),
        _ => None,
    })
}

/// The thread: each batch done and made durable, in order, with the last
/// log number it holds.
fn write_batches(db: &Database, rx: &Receiver<(u64, Arc<Vec<Op>>)>, progress: &(Mutex<Progress>, Condvar)) {
    let (lock, done) = progress;
    for (upto, ops) in rx {
        let result = write_batch(db, &ops, upto);
        let mut p = lock.lock();
        match result {
            Ok(()) => p.applied = upto,
            Err(e) => p.failed = Some(e.to_string()),
        }
        let failed = p.failed.is_some();
        drop(p);
        done.notify_all();
        if failed {
            return;
        }
    }
}

/// `ops` done in the side file `db` as holding the log up to `upto`,
/// durably.
fn write_batch(db: &Database, ops: &[Op], upto: u64) -> Result<()> {
    let mut txn = db.begin_write()?;
    durably(&mut txn)?;
    {
        let mut records = Records::open(&txn)?;
        for op in ops {
            records.apply(op)?;
        }
        let mut meta = txn.open_table(SIDE_META)?;
        meta.insert("applied", upto)?;
    }
    Ok(txn.commit()?)
}

fn durably(txn: &mut WriteTransaction) -> Result<()> {
    txn.set_durability(Durability::Immediate)
        .map_err(|e| corrupt(format!("cannot make a revisit commit durable: {e}")))
}

/// A new side file for `main`, which has no revisit records: any file at
/// `side` belonged to a state that is gone. The side file is made first,
/// then the main file names it.
fn create(main: &Database, side: &Path, cache_bytes: usize) -> Result<Database> {
    match std::fs::remove_file(side) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(corrupt(format!("cannot replace {}: {e}", side.display()))),
    }
    let id = rand_id();
    let db = side_builder(cache_bytes).create(side)?;
    let mut txn = db.begin_write()?;
    durably(&mut txn)?;
    txn.open_table(SIDE_META)?.insert("id", id)?;
    txn.commit()?;
    let mut txn = main.begin_write()?;
    durably(&mut txn)?;
    txn.open_table(MAIN_META)?.insert("id", id)?;
    txn.commit()?;
    Ok(db)
}

/// The side file `side` of the main file at `path`, which names it by `id`.
fn open_existing(path: &Path, side: &Path, id: u64, cache_bytes: usize) -> Result<Database> {
    if !side.exists() {
        return Err(corrupt(format!(
            "{} is missing: the crawl state {} keeps its revisit records there; restore it, or start \
             over with --fresh",
            side.display(),
            path.display()
        )));
    }
    let db = side_builder(cache_bytes).create(side)?;
    let theirs = db
        .begin_read()?
        .open_table(SIDE_META)
        .ok()
        .and_then(|t| t.get("id").ok().flatten().map(|v| v.value()));
    if theirs != Some(id) {
        return Err(corrupt(format!(
            "{} holds the revisit records of another crawl state than {}: restore the pair, or start \
             over with --fresh",
            side.display(),
            path.display()
        )));
    }
    Ok(db)
}

fn side_builder(cache_bytes: usize) -> redb::Builder {
    let mut b = redb::Builder::new();
    b.set_cache_size(cache_bytes);
    b
}

/// A random file id (never 0).
fn rand_id() -> u64 {
    uuid::Uuid::new_v4().as_u64_pair().0.max(1)
}

/// Does in `side` the main file's logged operations past the mark it
/// holds, durably; returns the mark.
fn replay(main: &Database, side: &Database) -> Result<u64> {
    let applied = match side.begin_read()?.open_table(SIDE_META) {
        Ok(t) => t.get("applied")?.map_or(0, |v| v.value()),
        Err(redb::TableError::TableDoesNotExist(_)) => 0,
        Err(e) => return Err(e.into()),
    };
    let txn = main.begin_read()?;
    let log = match txn.open_table(LOG) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(applied),
        Err(e) => return Err(e.into()),
    };
    let mut ops = Vec::new();
    let mut upto = applied;
    for item in log.range(applied.saturating_add(1)..)? {
        let (k, v) = item?;
        upto = k.value();
        ops.extend(decode(v.value(), upto)?);
    }
    if upto > applied {
        write_batch(side, &ops, upto)?;
    }
    Ok(upto)
}

#[cfg(test)]
mod tests;
