//! Replays the local crawl writer's store traffic per page (see the
//! workload below, read off `crate::backend::local::writer` and the dedup
//! crate's redb tables) on redb and on fjall, and prints the CPU per page
//! of the thread that writes (the crawl's serial stage) and of the whole
//! process (an LSM tree's flushes and compactions run on threads of their
//! own), per window of pages as the store grows.
//!
//!   store-compare redb|redb-split|redb-threads|redb-oplog|redb-behind|redb-behind-side|fjall DIR PAGES [WINDOW]
//!
//! On redb, `PARTS` picks the table groups the store holds (`u` URL tier
//! and frontier, `b` block lists, with digits for some tables only, `b01`;
//! `t` titles and documents; `s` revisit records; default `ubts`), so that
//! one run per group sizes a store split over files and threads, and
//! `CACHE_MB` sets redb's cache (default 64, the crawl's).
//!
//! Per page (one kept page with one new link, as `crawl bench` has):
//! - its URL record read and rewritten (the pending mark cleared);
//! - one new link: its URL record read (a miss), written, and its time
//!   index entry; a frontier entry appended and the page's own removed;
//! - the content tier: the four SimHash block lists read, then appended to
//!   (redb: one value per list, read-modify-write as `RedbTables::add_block`
//!   does; fjall: one key per posting, read with a prefix scan);
//! - its title read and added; its document record; its revisit record and
//!   due-time entry.
//!
//! Groups of 32 pages per transaction (redb) or write batch (fjall), and a
//! durable commit (fsync) every 900 pages: 250 ms at 3,600 pages/s, as the
//! crawl's `DURABLE_EVERY`.

use std::time::Instant;

const GROUP: u64 = 32;
const DURABLE_EVERY: u64 = 900;

/// splitmix64: reproducible keys and fingerprints without a dependency.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn key128(tag: u64, n: u64) -> u128 {
    (u128::from(mix(tag ^ n)) << 64) | u128::from(mix(n.wrapping_mul(31) ^ tag))
}

/// The page `p`'s fingerprint, its four 16-bit blocks as block-list keys.
fn blocks(p: u64) -> [u64; 4] {
    let fp = mix(p ^ 0xb10c);
    [0, 1, 2, 3].map(|t| (t << 16) | ((fp >> (16 * t)) & 0xffff))
}

fn cpu_ns(who: i32) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(who, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

trait Writer {
    fn page(&mut self, p: u64);
    fn commit(&mut self, durable: bool);
}

mod on_redb {
    use redb::{
        Database, Durability, MultimapTableDefinition, ReadableMultimapTable, ReadableTable, TableDefinition,
        WriteTransaction,
    };

    const URLS: TableDefinition<u128, &[u8]> = TableDefinition::new("urls");
    const URL_TIMES: TableDefinition<(u64, u128), ()> = TableDefinition::new("url_times");
    const TITLES: MultimapTableDefinition<u128, u64> = MultimapTableDefinition::new("titles");
    const BLOCKS: TableDefinition<u128, &[u8]> = TableDefinition::new("blocks");
    const DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("docs");
    const FRONTIER: TableDefinition<u64, &[u8]> = TableDefinition::new("frontier");
    const PAGES: TableDefinition<u128, &[u8]> = TableDefinition::new("pages");
    const DUE: TableDefinition<(u64, u128), ()> = TableDefinition::new("due");

    pub struct Redb {
        db: Database,
        txn: Option<WriteTransaction>,
        /// Wall time spent in commits.
        commit_ns: u128,
        /// Which of the writer's table groups this store holds: `u` URL
        /// tier and frontier, `b` block lists, `t` titles and documents,
        /// `s` revisit schedule (all by default; one each to size a store
        /// split across threads).
        parts: String,
    }

    /// The redb file at `path`, with `CACHE_MB` of cache (default 64, the
    /// crawl's).
    fn open_db(path: &std::path::Path) -> Database {
        let mb: usize = std::env::var("CACHE_MB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(64);
        Database::builder().set_cache_size(mb << 20).create(path).unwrap()
    }

    /// The transaction in `txn`, begun on `db` (not durable) if there is
    /// none (a function of the two fields, so that a caller may borrow the
    /// store's other fields beside it).
    fn begin<'t>(db: &Database, txn: &'t mut Option<WriteTransaction>) -> &'t WriteTransaction {
        txn.get_or_insert_with(|| {
            let mut t = db.begin_write().unwrap();
            t.set_durability(Durability::None).unwrap();
            t
        })
    }

    const OPS: TableDefinition<u64, &[u8]> = TableDefinition::new("ops");

    /// The open transaction of `w` (begun if there is none).
    pub fn txn(w: &mut Redb) -> &WriteTransaction {
        begin(&w.db, &mut w.txn)
    }

    /// Reads the block lists `keys` of `table` (a write transaction's or
    /// a snapshot's).
    pub fn read_in(table: &impl ReadableTable<u128, &'static [u8]>, keys: &[u64]) {
        for &k in keys {
            let _ = table.get(u128::from(k)).unwrap().map(|v| v.value().len());
        }
    }

    /// Reads the block lists `keys` in a write transaction.
    pub fn read_blocks(txn: &WriteTransaction, keys: &[u64]) {
        read_in(&txn.open_table(BLOCKS).unwrap(), keys);
    }

    /// Reads the block lists `keys` in a snapshot (of a file that may not
    /// have the table yet).
    pub fn read_blocks_snapshot(txn: &redb::ReadTransaction, keys: &[u64]) {
        if let Ok(table) = txn.open_table(BLOCKS) {
            read_in(&table, keys);
        }
    }

    /// Appends the postings `held` to their lists, in key order.
    pub fn apply_blocks(txn: &WriteTransaction, held: &std::collections::HashMap<u64, Vec<u8>>) {
        let mut bl = txn.open_table(BLOCKS).unwrap();
        let mut keys: Vec<u64> = held.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            let mut list = match bl.get(u128::from(k)).unwrap() {
                Some(v) => v.value().to_vec(),
                None => Vec::new(),
            };
            list.extend_from_slice(&held[&k]);
            bl.insert(u128::from(k), list.as_slice()).unwrap();
        }
    }

    /// Appends a group's block changes (`bytes`) to the log under `seq`.
    pub fn log_blocks(txn: &WriteTransaction, seq: u64, bytes: &[u8]) {
        let mut ops = txn.open_table(OPS).unwrap();
        ops.insert(seq, bytes).unwrap();
    }

    impl Redb {
        pub fn open(path: &std::path::Path, parts: &str) -> Redb {
            Redb {
                db: open_db(path),
                txn: None,
                commit_ns: 0,
                parts: parts.to_string(),
            }
        }

        /// Page `p`'s revisit record (and its due time and key) appended to
        /// the op log, in the open transaction.
        pub fn log_op(&mut self, p: u64) {
            if let Some(txn) = &self.txn {
                let mut ops = txn.open_table(OPS).unwrap();
                ops.insert(p, [4u8; 250 + 16 + 8].as_slice()).unwrap();
            }
        }

        /// Drops the log's ops in `from..to` (applied durably elsewhere).
        pub fn trim_ops(&mut self, from: u64, to: u64) {
            if from >= to {
                return;
            }
            if let Some(txn) = &self.txn {
                let mut ops = txn.open_table(OPS).unwrap();
                ops.retain_in(from..to, |_, _| false).unwrap();
            }
        }
    }

    impl super::Writer for Redb {
        fn page(&mut self, p: u64) {
            page_in(begin(&self.db, &mut self.txn), p, &self.parts);
        }

        fn commit(&mut self, durable: bool) {
            if let Some(mut t) = self.txn.take() {
                if durable {
                    t.set_durability(Durability::Immediate).unwrap();
                }
                let c = std::time::Instant::now();
                t.commit().unwrap();
                self.commit_ns += c.elapsed().as_nanos();
            }
        }
    }

    impl Drop for Redb {
        fn drop(&mut self) {
            eprintln!(
                "commits ({}): {:.2} s of wall",
                self.parts,
                self.commit_ns as f64 / 1e9
            );
        }
    }

    /// The page `p`'s reads and writes of the table groups in `parts`, in
    /// the transaction `txn` (which several threads may share: redb's
    /// `WriteTransaction` is `Sync` and its tables `Send`).
    pub fn page_in(txn: &WriteTransaction, p: u64, parts: &str) {
        let rec = [7u8; 60];
        let has = |c: char| parts.contains(c);
        if has('u') {
            let mut urls = txn.open_table(URLS).unwrap();
            let mut times = txn.open_table(URL_TIMES).unwrap();
            let own = super::key128(1, p);
            let _ = urls.get(own).unwrap().map(|v| v.value().len());
            urls.insert(own, rec.as_slice()).unwrap();
            let link = super::key128(1, p + 1);
            let _ = urls.get(link).unwrap().map(|v| v.value().len());
            urls.insert(link, rec.as_slice()).unwrap();
            times.insert((p, link), ()).unwrap();
        }
        if has('u') {
            let mut fr = txn.open_table(FRONTIER).unwrap();
            fr.insert(p + 1, [1u8; 100].as_slice()).unwrap();
            fr.remove(p).unwrap();
        }
        if has('b') {
            let mut bl = txn.open_table(BLOCKS).unwrap();
            // Digits in PARTS pick block tables (`b01`: tables 0 and 1).
            let digits: Vec<u64> = parts
                .chars()
                .filter_map(|c| c.to_digit(10))
                .map(u64::from)
                .collect();
            let keys: Vec<u64> = super::blocks(p)
                .into_iter()
                .filter(|k| digits.is_empty() || digits.contains(&(k >> 16)))
                .collect();
            read_in(&bl, &keys);
            for &k in &keys {
                let mut list = match bl.get(u128::from(k)).unwrap() {
                    Some(v) => v.value().to_vec(),
                    None => Vec::new(),
                };
                list.extend_from_slice(&[9u8; 16]);
                bl.insert(u128::from(k), list.as_slice()).unwrap();
            }
        }
        if has('t') {
            let mut titles = txn.open_multimap_table(TITLES).unwrap();
            let t = super::key128(2, p);
            let _ = titles.get(t).unwrap().count();
            titles.insert(t, p).unwrap();
            let mut docs = txn.open_table(DOCS).unwrap();
            docs.insert(p, [3u8; 200].as_slice()).unwrap();
        }
        if has('s') {
            let mut pages = txn.open_table(PAGES).unwrap();
            let mut due = txn.open_table(DUE).unwrap();
            let k = super::key128(3, p);
            pages.insert(k, [4u8; 250].as_slice()).unwrap();
            due.insert((p + 86_400_000, k), ()).unwrap();
        }
    }

    /// One file and one transaction per group, as today's writer, but the
    /// group's work split by table group over threads that share the
    /// transaction (`THREADS`, default `ub,ts`: each comma-separated item
    /// is one thread's table groups); the commit stays serial. Prints the
    /// share of wall time spent committing at the end.
    pub struct Threaded {
        /// The file, its transaction and its commits (timed there).
        store: Redb,
        groups: Vec<String>,
        pending: Vec<u64>,
    }

    impl Threaded {
        pub fn open(path: &std::path::Path, groups: &str) -> Threaded {
            Threaded {
                store: Redb::open(path, groups),
                groups: groups.split(',').map(str::to_string).collect(),
                pending: Vec::new(),
            }
        }
    }

    impl super::Writer for Threaded {
        fn page(&mut self, p: u64) {
            self.pending.push(p);
        }

        fn commit(&mut self, durable: bool) {
            if self.pending.is_empty() {
                return;
            }
            let (txn, pages) = (begin(&self.store.db, &mut self.store.txn), &self.pending);
            std::thread::scope(|s| {
                let (first, rest) = self.groups.split_first().unwrap();
                let others: Vec<_> = rest
                    .iter()
                    .map(|g| {
                        s.spawn(move || {
                            for &p in pages {
                                page_in(txn, p, g);
                            }
                        })
                    })
                    .collect();
                for &p in pages {
                    page_in(txn, p, first);
                }
                for h in others {
                    h.join().unwrap();
                }
            });
            self.store.commit(durable);
            self.pending.clear();
        }
    }
}

mod on_fjall {
    use fjall::{Database, Keyspace, KeyspaceCreateOptions, OwnedWriteBatch, PersistMode};

    pub struct Fjall {
        db: Database,
        urls: Keyspace,
        url_times: Keyspace,
        titles: Keyspace,
        blocks: Keyspace,
        docs: Keyspace,
        frontier: Keyspace,
        pages: Keyspace,
        due: Keyspace,
        batch: Option<OwnedWriteBatch>,
    }

    impl Fjall {
        pub fn open(path: &std::path::Path) -> Fjall {
            let db = Database::builder(path).open().unwrap();
            let ks = |n: &str| db.keyspace(n, KeyspaceCreateOptions::default).unwrap();
            Fjall {
                urls: ks("urls"),
                url_times: ks("url_times"),
                titles: ks("titles"),
                blocks: ks("blocks"),
                docs: ks("docs"),
                frontier: ks("frontier"),
                pages: ks("pages"),
                due: ks("due"),
                db,
                batch: None,
            }
        }
    }

    fn cat(a: &[u8], b: &[u8]) -> Vec<u8> {
        let mut v = a.to_vec();
        v.extend_from_slice(b);
        v
    }

    impl super::Writer for Fjall {
        fn page(&mut self, p: u64) {
            // Reads see the batches committed before (a group's own writes
            // are not read back in this workload).
            let mut b = self.batch.take().unwrap_or_else(|| self.db.batch());
            let rec = [7u8; 60];
            let own = super::key128(1, p).to_be_bytes();
            let _ = self.urls.get(own).unwrap().map(|v| v.len());
            b.insert(&self.urls, own, rec);
            let link = super::key128(1, p + 1).to_be_bytes();
            let _ = self.urls.get(link).unwrap().map(|v| v.len());
            b.insert(&self.urls, link, rec);
            b.insert(&self.url_times, cat(&p.to_be_bytes(), &link), []);
            b.insert(&self.frontier, (p + 1).to_be_bytes(), [1u8; 100]);
            b.remove(&self.frontier, p.to_be_bytes());
            let keys = super::blocks(p);
            for k in keys {
                let _ = self
                    .blocks
                    .prefix(k.to_be_bytes())
                    .map(|g| g.into_inner().unwrap().1.len())
                    .sum::<usize>();
            }
            for k in keys {
                b.insert(&self.blocks, cat(&k.to_be_bytes(), &p.to_be_bytes()), [9u8; 8]);
            }
            let t = super::key128(2, p).to_be_bytes();
            let _ = self.titles.prefix(t).count();
            b.insert(&self.titles, cat(&t, &p.to_be_bytes()), []);
            b.insert(&self.docs, p.to_be_bytes(), [3u8; 200]);
            let k = super::key128(3, p).to_be_bytes();
            b.insert(&self.pages, k, [4u8; 250]);
            b.insert(&self.due, cat(&(p + 86_400_000).to_be_bytes(), &k), []);
            self.batch = Some(b);
        }

        fn commit(&mut self, durable: bool) {
            if let Some(b) = self.batch.take() {
                b.commit().unwrap();
            }
            if durable {
                self.db.persist(PersistMode::SyncData).unwrap();
            }
        }
    }
}

/// The revisit records (`s`) off the writer through an op log: the main
/// file (`ubt`) appends each page's record to a log table under a
/// sequential key (an append to the last leaf, where the record's own
/// table takes a random leaf), a side thread applies the ops of each
/// committed group to a file of its own (`s`, with the last op applied)
/// and reports how far it is durable, and the main file drops the log up
/// to that mark at its own durable commits. One durable point stays the
/// main file's: an open would replay the log past the side file's mark.
struct OpLog {
    main: on_redb::Redb,
    ops: Option<std::sync::mpsc::Sender<(u64, u64, bool)>>,
    applied: std::sync::Arc<std::sync::atomic::AtomicU64>,
    side: Option<std::thread::JoinHandle<()>>,
    /// The pages of the group being written: `group_start..end`.
    group_start: u64,
    end: u64,
    trimmed: u64,
}

impl OpLog {
    fn open(dir: &std::path::Path) -> OpLog {
        let applied = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (tx, rx) = std::sync::mpsc::channel::<(u64, u64, bool)>();
        let mut side = on_redb::Redb::open(&dir.join("s.redb"), "s");
        let mark = applied.clone();
        let handle = std::thread::spawn(move || {
            for (from, to, durable) in rx {
                for p in from..to {
                    side.page(p);
                }
                side.commit(durable);
                if durable {
                    mark.store(to, std::sync::atomic::Ordering::Release);
                }
            }
            side.commit(true);
        });
        OpLog {
            main: on_redb::Redb::open(&dir.join("main.redb"), "ubt"),
            ops: Some(tx),
            applied,
            side: Some(handle),
            group_start: 0,
            end: 0,
            trimmed: 0,
        }
    }
}

impl Writer for OpLog {
    fn page(&mut self, p: u64) {
        self.main.page(p);
        self.main.log_op(p);
        self.end = p + 1;
    }

    fn commit(&mut self, durable: bool) {
        if durable {
            let mark = self.applied.load(std::sync::atomic::Ordering::Acquire);
            self.main.trim_ops(self.trimmed, mark);
            self.trimmed = self.trimmed.max(mark);
        }
        self.main.commit(durable);
        if let Some(tx) = &self.ops {
            let _ = tx.send((self.group_start, self.end, durable));
        }
        self.group_start = self.end;
    }
}

impl Drop for OpLog {
    fn drop(&mut self) {
        self.ops.take();
        if let Some(h) = self.side.take() {
            let _ = h.join();
        }
    }
}

/// The block lists written behind (issue 37): each page's four postings
/// are held in memory (its lists read from the table, and from what is
/// held) and written at the durable commits, in key order, either into the
/// same file (`side: false`, as the dedup crate's redb store now does) or
/// by a thread of its own into a file of its own (`side: true`: the main
/// file logs each group's postings under a sequential key, the side thread
/// writes each durable commit's batch and makes it durable, and the main
/// file drops the log up to what the side file holds; the writer reads the
/// lists from a snapshot of the side file).
struct Behind {
    main: on_redb::Redb,
    held: std::collections::HashMap<u64, Vec<u8>>,
    /// This group's postings, for the log (side file only).
    group: Vec<u8>,
    seq: u64,
    side: Option<SideBlocks>,
}

/// A durable commit's block-list batch: the last group in it, and the
/// postings to append, by list.
type Batch = (u64, std::collections::HashMap<u64, Vec<u8>>);

struct SideBlocks {
    db: std::sync::Arc<redb::Database>,
    snapshot: Option<redb::ReadTransaction>,
    batches: Option<std::sync::mpsc::Sender<Batch>>,
    applied: std::sync::Arc<std::sync::atomic::AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
    trimmed: u64,
}

impl Behind {
    fn open(dir: &std::path::Path, side: bool) -> Behind {
        let side = side.then(|| {
            let db = std::sync::Arc::new(redb::Database::create(dir.join("b.redb")).unwrap());
            let applied = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let (tx, rx) = std::sync::mpsc::channel::<Batch>();
            let (db2, mark) = (db.clone(), applied.clone());
            let thread = std::thread::spawn(move || {
                for (upto, batch) in rx {
                    let txn = db2.begin_write().unwrap();
                    on_redb::apply_blocks(&txn, &batch);
                    txn.commit().unwrap();
                    mark.store(upto, std::sync::atomic::Ordering::Release);
                }
            });
            SideBlocks {
                db,
                snapshot: None,
                batches: Some(tx),
                applied,
                thread: Some(thread),
                trimmed: 0,
            }
        });
        Behind {
            main: on_redb::Redb::open(&dir.join("main.redb"), "uts"),
            held: std::collections::HashMap::new(),
            group: Vec::new(),
            seq: 0,
            side,
        }
    }
}

impl Writer for Behind {
    fn page(&mut self, p: u64) {
        self.main.page(p);
        let keys = blocks(p);
        match &mut self.side {
            None => on_redb::read_blocks(on_redb::txn(&mut self.main), &keys),
            Some(side) => {
                let db = side.db.clone();
                let snap = side
                    .snapshot
                    .get_or_insert_with(|| redb::ReadableDatabase::begin_read(&*db).unwrap());
                on_redb::read_blocks_snapshot(snap, &keys);
            }
        }
        for k in keys {
            let _ = self.held.get(&k).map(Vec::len);
            self.held.entry(k).or_default().extend_from_slice(&[9u8; 16]);
            if self.side.is_some() {
                self.group.extend_from_slice(&k.to_le_bytes());
                self.group.extend_from_slice(&[9u8; 16]);
            }
        }
    }

    fn commit(&mut self, durable: bool) {
        self.seq += 1;
        if let Some(side) = &mut self.side {
            let txn = on_redb::txn(&mut self.main);
            on_redb::log_blocks(txn, self.seq, &self.group);
            self.group.clear();
            if durable {
                let mark = side.applied.load(std::sync::atomic::Ordering::Acquire);
                self.main.trim_ops(side.trimmed, mark + 1);
                side.trimmed = side.trimmed.max(mark + 1);
            }
            // A new snapshot of the side file for the next group.
            side.snapshot = None;
        } else if durable {
            on_redb::apply_blocks(on_redb::txn(&mut self.main), &self.held);
        }
        self.main.commit(durable);
        if durable {
            let batch = std::mem::take(&mut self.held);
            if let Some(tx) = self.side.as_ref().and_then(|s| s.batches.as_ref()) {
                let _ = tx.send((self.seq, batch));
            }
        }
    }
}

impl Drop for SideBlocks {
    fn drop(&mut self) {
        self.batches.take();
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}

/// Several stores written one after the other by the same thread.
struct Split(Vec<on_redb::Redb>);

impl Writer for Split {
    fn page(&mut self, p: u64) {
        for w in &mut self.0 {
            w.page(p);
        }
    }

    fn commit(&mut self, durable: bool) {
        for w in &mut self.0 {
            w.commit(durable);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!(
            "usage: store-compare redb|redb-split|redb-threads|redb-oplog|redb-behind|redb-behind-side|fjall DIR PAGES [WINDOW]"
        );
        std::process::exit(2);
    }
    let dir = std::path::PathBuf::from(&args[2]);
    let pages: u64 = args[3].parse().expect("PAGES: a number");
    let window: u64 = args
        .get(4)
        .map_or(20_000, |w| w.parse().expect("WINDOW: a number"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut w: Box<dyn Writer> = match args[1].as_str() {
        "redb" => Box::new(on_redb::Redb::open(
            &dir.join("store.redb"),
            &std::env::var("PARTS").unwrap_or_else(|_| "ubts".into()),
        )),
        "fjall" => Box::new(on_fjall::Fjall::open(&dir.join("fjall"))),
        // One thread writing five redb files, a table group each (`u`,
        // `b01`, `b23`, `t`, `s`), each with CACHE_MB of cache.
        "redb-split" => Box::new(Split(
            ["u", "b01", "b23", "t", "s"]
                .iter()
                .map(|parts| on_redb::Redb::open(&dir.join(format!("{parts}.redb")), parts))
                .collect(),
        )),
        // The revisit records through an op log to a side file and thread.
        "redb-oplog" => Box::new(OpLog::open(&dir)),
        // The block lists written behind, at the durable commits: into the
        // same file, or by a thread of its own into a file of its own.
        "redb-behind" => Box::new(Behind::open(&dir, false)),
        "redb-behind-side" => Box::new(Behind::open(&dir, true)),
        // One file, the group's work split over threads by table group.
        "redb-threads" => Box::new(on_redb::Threaded::open(
            &dir.join("store.redb"),
            &std::env::var("THREADS").unwrap_or_else(|_| "ub,ts".into()),
        )),
        other => panic!("unknown store {other}"),
    };
    println!("store,pages_done,writer_us_per_page,process_us_per_page,wall_us_per_page");
    let (mut t0, mut p0, mut w0) = (
        cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID),
        cpu_ns(libc::CLOCK_PROCESS_CPUTIME_ID),
        Instant::now(),
    );
    for p in 0..pages {
        w.page(p);
        if (p + 1) % GROUP == 0 {
            w.commit((p + 1) % DURABLE_EVERY < GROUP);
        }
        if (p + 1) % window == 0 {
            let (t1, p1) = (
                cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID),
                cpu_ns(libc::CLOCK_PROCESS_CPUTIME_ID),
            );
            let per = |a: u64, b: u64| (b - a) as f64 / window as f64 / 1000.0;
            println!(
                "{},{},{:.1},{:.1},{:.1}",
                args[1],
                p + 1,
                per(t0, t1),
                per(p0, p1),
                w0.elapsed().as_nanos() as f64 / window as f64 / 1000.0
            );
            (t0, p0, w0) = (t1, p1, Instant::now());
        }
    }
    w.commit(true);
}
