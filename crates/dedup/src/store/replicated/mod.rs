//! Tiers replicated in every process, ordered by one log in Redis: the
//! fast way to share them (behind the `redis` feature).
//!
//! [`super::RedisStore`] keeps the tiers *in* Redis, so every check costs
//! the server reads and a commit script that moves each new document's
//! index entries (~15 keys) into the keyspace; one server then checks a
//! few thousand documents a second. [`ReplicatedStore`] keeps them in each
//! process instead, as a [`super::MemoryStore`] state (the *replica*), and
//! uses Redis only to put every process's writes in one order:
//!
//! - A transaction runs against the replica, its writes kept aside
//!   (`oplog::Overlay`), and becomes one log entry: its writes, encoded
//!   (~700 bytes per new document with its URL and title).
//! - The commit script appends the entry to the namespace's log only if
//!   the log ends where the replica is: the transaction then read exactly
//!   the state that every earlier entry made, so the log is a serial
//!   order of transactions and check-and-insert keeps one copy however
//!   many processes race. Otherwise it appends nothing and replies with
//!   the entries the replica lacks: the process applies them and runs the
//!   transaction again (the same optimistic protocol as `RedisStore`'s, at
//!   the granularity of the whole namespace).
//! - Every process applies the log's entries in log order, its own
//!   included once accepted, so the replicas are equal at equal positions
//!   of the same history (a hash chain tells histories apart: see
//!   *Divergence* below).
//!
//! The server's work per batch is one `RPUSH` of one string; the checks
//! run at in-memory speed in the processes (docs/BENCHMARKS.md, "Redis
//! store"). The costs: each process holds the whole state in memory (as a
//! [`super::MemoryStore`] would), each applies every other process's
//! writes, and a process that starts (or fell behind a compaction) loads
//! the snapshot and the log after it.
//!
//! # Key layout
//!
//! | key | type | content |
//! | --- | --- | --- |
//! | `{NS}:m:layout` | string | `replicated-2` (a `RedisStore` namespace says `2` and is refused, and the other way round; `replicated-1`, the layout before the chain, is upgraded when opened) |
//! | `{NS}:log` | list | log entries since the snapshot, oldest first |
//! | `{NS}:lc` | list | the chain value after each entry of `{NS}:log` (32 hex digits), aligned with it (~35 bytes of Redis memory per entry) |
//! | `{NS}:lh` | hash | `base` (absolute position of the list's first entry), `bc` (the chain value at `base`; absent: 32 zeros, a log that has had no snapshot), `cb` (bytes of all entries ever appended), `gen` (snapshot generations so far), and the snapshot's `snap_gen`, `snap_pos`, `snap_cb`, `snap_n` (chunks), `snap_bytes`, `snap_chain` |
//! | `{NS}:s:GEN:I` | string | chunk `I` of snapshot `GEN`: log entries that rebuild the state at `snap_pos` from nothing |
//! | `{NS}:turn` | string | a process that lost the race repeatedly takes the next turn (expires after 2 s) |
//! | `{NS}:compacting` | string | the process writing a snapshot (expires after 10 min) |
//!
//! # Compaction
//!
//! The log grows with every write, removals included. After a commit, a
//! process that sees the log since the snapshot grow past half the
//! snapshot's size (and past [`ReplicatedStore::compact_after`]) takes the
//! `compacting` lease, copies its replica into a new snapshot (chunks of
//! ~4 MB; checks wait meanwhile), uploads it from a thread of its own
//! (the chunks expire until installed), and installs it with a script that
//! trims the log entries it covers and deletes the old snapshot, unless a
//! newer snapshot was installed meanwhile. Redis therefore holds between
//! one and about one and a half times the state, plus one batch. A
//! process whose position was trimmed away reloads the snapshot.
//!
//! # Failures
//!
//! As for `RedisStore`: unreachable at open is [`Error::Unreachable`]; a
//! connection lost during a transaction is [`Error::Disconnected`], with
//! `maybe_applied` set when the commit was sent (the entry was appended
//! whole or not at all). Nothing is applied to the replica until the log
//! accepted it, so a retry starts from the log: a check that was in fact
//! appended then finds its own document. A server that lost its data
//! (restarted without persistence) has a log shorter than the replica:
//! the process drops its replica and loads what the server has, like a
//! new process, and logs a warning. A server that lost only some entries
//! is found by the chain, below.
//!
//! # Divergence: the hash chain
//!
//! A position alone does not name a history. A server that loses the end
//! of the log (a failover to a Redis replica that had not received it yet,
//! Redis replicating asynchronously; a restart from an append-only file
//! synced every second; a restore from an older backup; a restart without
//! persistence) leaves processes holding entries the log no longer has.
//! Once others write on from the shorter log past their position, a
//! replica that compared positions only would apply the new entries on
//! top of the lost ones, and answer unlike every other process, silently
//! and for the rest of the crawl. So every entry has a *chain value*:
//! the MD5 of the chain value before it and the entry's stamp (the
//! writing store's token and a counter, unique to one commit attempt), so
//! the chain value at a position names the whole history before it. A
//! replica keeps the chain value of its position; the commit and
//! catch-up scripts compare it with the log's at that position before
//! anything else. A mismatch, like a log shorter than the position, means
//! the log lost entries this replica applied.
//!
//! The replica then *resyncs* by default: it drops its state, loads the
//! snapshot and the log like a new process, logs a warning naming itself,
//! the position and both chain values, counts it
//! ([`ReplicatedStore::resyncs`]), and the transaction in progress runs
//! again on the log's state. The log is the one state all processes can
//! agree on; the lost entries are gone for every process (a page recorded
//! only in them may be kept again). A store opened with
//! [`ReplicatedStore::resync_diverged`]`(false)` refuses instead: that
//! call and every later one return [`Error::Diverged`] until the store is
//! opened again, for deployments that would rather stop and look. A
//! snapshot is installed only where the log's chain value is the
//! snapshot's, so a replica that diverged never hands its state to the
//! others.
//!
//! Stamps rather than the entries' bytes: hashing the entries would cost
//! the writer ~1 us per document (70 KB per batch of 100), and an entry's
//! bytes never change once appended: what a loss changes is which entry
//! sits at a position, and the stamps tell that apart. A process that is
//! restarted (dropped and opened again) loads the snapshot with the chain
//! value recorded with it and the log after it: that is a load, not a
//! resync.
//!
//! Namespaces of layout `replicated-1` (before the chain) are upgraded by
//! the first process of this version that opens them, in one script
//! (chain values derived from the positions of the entries already
//! there). Stop the processes of the older version first: an entry one of
//! them appends afterwards has no chain value, and the next process that
//! meets it refuses to follow the log with [`Error::Config`] saying so;
//! an older process opening an upgraded namespace is refused by its own
//! layout check.
//!
//! Under Redis Cluster every key of the namespace carries the `{NS}` hash
//! tag, so the log lives on one master, as with `RedisStore`.

mod log;
mod snapshot;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use redis::{Connection, Value};

use super::memory::MemState;
use super::oplog::{self, Overlay, Pending};
use super::redis::{backoff, classify, clear_namespace, connect_namespace, for_each_key, open_client};
use super::{ReadTables, RedisOptions, Store, Tables};
use crate::error::{Error, Result};
use log::{Divergence, Gap, Reply, other_history, shorter};
use snapshot::{SnapshotDone, log_snapshot};

/// The layout marker of a replicated namespace.
const LAYOUT: &str = "replicated-2";

/// The layout before the hash chain: upgraded when opened (see the module
/// docs, *Divergence*).
const LAYOUT_V1: &str = "replicated-1";

/// The chain value at position 0 of every log: an empty state is the same
/// whichever log it came from.
const CHAIN0: &str = "00000000000000000000000000000000";

/// Most entries one reply carries, and about the most bytes (a reply is
/// held whole in the server's memory; a transaction of 10,000 documents
/// is ~7 MB, of one document ~1 KB): the scripts read the log 8 entries
/// at a time and stop past either bound.
const MAX_ENTRIES: usize = 512;
const MAX_REPLY_BYTES: usize = 16 << 20;

/// Lua helpers of the log scripts, put before them by [`script_source`]: see `replicated/lua/log_fns.lua`.
const LOG_FNS: &str = include_str!("lua/log_fns.lua");

/// Snapshot chunk size.
const CHUNK: usize = 4 << 20;

/// How long a turn taken after repeated conflicts lasts at most.
const TURN_MS: u64 = 2_000;

/// How long a snapshot may take to write before another process may try.
const COMPACT_MS: u64 = 600_000;

/// The commit script, after [`LOG_FNS`]: see `replicated/lua/commit.lua` (KEYS, ARGV, replies).
const COMMIT: &str = include_str!("lua/commit.lua");

/// The catch-up script, after [`LOG_FNS`]: see `replicated/lua/since.lua` (KEYS, ARGV, replies).
const SINCE: &str = include_str!("lua/since.lua");

/// The snapshot install script, after [`LOG_FNS`]: see `replicated/lua/install.lua` (KEYS, ARGV, replies).
const INSTALL: &str = include_str!("lua/install.lua");

/// The upgrade from [`LAYOUT_V1`]: see `replicated/lua/upgrade.lua` (KEYS, ARGV, replies).
const UPGRADE: &str = include_str!("lua/upgrade.lua");

/// A log script's source: [`LOG_FNS`] (with [`CHAIN0`]) and `body`.
fn script_source(body: &str) -> String {
    format!("local CHAIN0 = '{CHAIN0}'\n{LOG_FNS}{body}")
}

/// The chain value after an entry stamped `token` and `seq`, appended at a
/// position whose chain value is `prev`: 32 hex digits of
/// `MD5(prev:token:seq)`. See the module docs (*Divergence*) for why the
/// stamp and not the entry's bytes.
fn next_chain(prev: &str, token: &str, seq: u64) -> String {
    use md5::{Digest, Md5};
    let mut h = Md5::new();
    h.update(prev.as_bytes());
    h.update(b":");
    h.update(token.as_bytes());
    h.update(b":");
    h.update(seq.to_le_bytes());
    let d: [u8; 16] = h.finalize().into();
    crate::digest::hex(&d)
}

/// Deletes a lease or turn of ours: see `replicated/lua/release.lua` (KEYS, ARGV, replies).
const RELEASE: &str = include_str!("lua/release.lua");

/// Key names of one namespace.
#[derive(Debug)]
struct Keys {
    layout: String,
    log: String,
    /// The chain list, `{NS}:lc`.
    chain: String,
    head: String,
    turn: String,
    compacting: String,
    /// `{NS}:s:`, followed by `GEN:I`.
    chunk_prefix: String,
    prefix: String,
}

impl Keys {
    fn new(ns: &str) -> Keys {
        let p = format!("{{{ns}}}:");
        Keys {
            layout: format!("{p}m:layout"),
            log: format!("{p}log"),
            chain: format!("{p}lc"),
            head: format!("{p}lh"),
            turn: format!("{p}turn"),
            compacting: format!("{p}compacting"),
            chunk_prefix: format!("{p}s:"),
            prefix: p,
        }
    }
}

/// This process's copy of the state, and where in the log it is.
struct Replica {
    mem: MemState,
    /// Log entries applied (an absolute position: entries trimmed by
    /// compactions count).
    pos: u64,
    /// Bytes of the log's entries up to `pos`, the measure compaction
    /// compares with the snapshot's size.
    cb: u64,
    /// The chain value at `pos`: which history `mem` is the state of.
    chain: String,
    /// Commit attempts so far: with the token, the stamp of the next entry.
    seq: u64,
    /// Set when this replica found it had diverged and the store refuses
    /// ([`ReplicatedStore::resync_diverged`]`(false)`): every call fails
    /// with it until the store is opened again.
    refused: Option<Divergence>,
    /// False until loaded, and after anything left `mem` unlike the log
    /// at `pos` (an entry that failed to apply, a server that lost data).
    valid: bool,
    conn: Option<Connection>,
    /// When a snapshot last could not be written (another process was
    /// writing one, or it failed): not tried again for 10 s.
    last_compaction: Option<Instant>,
}

/// The tiers replicated in this process and ordered through a log in
/// Redis: every process opening the same URL and namespace sees the same
/// state, and a check runs at in-memory speed. See the module docs for
/// the protocol, the key layout and the costs (each process holds the
/// whole state in memory).
///
/// ```no_run
/// use simcrawl_dedup::{Deduper, DedupConfig, Document, RedisOptions, ReplicatedStore};
/// let store = ReplicatedStore::open_with("redis://127.0.0.1:6379/0", RedisOptions::default())?;
/// let d = Deduper::new(store, DedupConfig::default())?;
/// let text = "长江流域今年夏季降雨偏多，防汛形势严峻，水利部门启动应急响应";
/// // Another process checking the same text against the same Redis and
/// // namespace gets a duplicate.
/// let first = d.check(&Document::new("http://a.example/1", "", text))?;
/// # Ok::<(), simcrawl_dedup::Error>(())
/// ```
pub struct ReplicatedStore {
    client: redis::Client,
    url: String,
    location: PathBuf,
    keys: Keys,
    options: RedisOptions,
    /// Identifies this store's turns and leases.
    token: String,
    compact_after: AtomicU64,
    /// Whether a diverged replica reloads (true, the default) or the store
    /// refuses with [`Error::Diverged`].
    resync: bool,
    replica: Mutex<Replica>,
    conflicts: AtomicU64,
    resyncs: AtomicU64,
    round_trips: AtomicU64,
    commit: redis::Script,
    since: redis::Script,
    release: redis::Script,
    /// The thread writing this process's snapshot, if one was started.
    snapshot: Mutex<Option<std::thread::JoinHandle<Result<SnapshotDone>>>>,
}

impl std::fmt::Debug for ReplicatedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicatedStore")
            .field("url", &self.url)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl ReplicatedStore {
    /// Connects to `url` (`redis://[user:password@]host:port/db`, or any
    /// node of a cluster), checks the namespace's layout and loads the
    /// replica: the snapshot and the log after it. An unreachable server
    /// is [`Error::Unreachable`]; a namespace of a `RedisStore` is
    /// [`Error::Config`].
    pub fn open_with(url: &str, options: RedisOptions) -> Result<ReplicatedStore> {
        let (client, shown) = open_client(url, &options)?;
        let ns = &options.namespace;
        let store = ReplicatedStore {
            client,
            location: PathBuf::from(format!("{shown} (namespace {ns}, replicated)")),
            keys: Keys::new(ns),
            token: format!("{}:{}:{:x}", hostname(), std::process::id(), random_u64()),
            compact_after: AtomicU64::new(64 << 20),
            resync: true,
            options,
            url: shown,
            replica: Mutex::new(Replica {
                mem: MemState::default(),
                pos: 0,
                cb: 0,
                chain: CHAIN0.to_string(),
                seq: 0,
                refused: None,
                valid: false,
                conn: None,
                last_compaction: None,
            }),
            conflicts: AtomicU64::new(0),
            resyncs: AtomicU64::new(0),
            round_trips: AtomicU64::new(0),
            commit: redis::Script::new(&script_source(COMMIT)),
            since: redis::Script::new(&script_source(SINCE)),
            snapshot: Mutex::new(None),
            release: redis::Script::new(RELEASE),
        };
        let mut conn =
            connect_namespace(&store.client, &store.options, &store.url).map_err(|e| Error::Unreachable {
                url: store.url.clone(),
                source: Box::new(e),
            })?;
        store.check_layout(&mut conn)?;
        {
            let mut r = store.replica.lock();
            r.conn = Some(conn);
            store.load(&mut r)?;
        }
        Ok(store)
    }

    /// Writes a snapshot once the log since the last one exceeds `bytes`
    /// (and half the snapshot): lower keeps Redis smaller and restarts
    /// faster, at the cost of more snapshots written. Default 64 MiB.
    ///
    /// ```no_run
    /// # use simcrawl_dedup::{RedisOptions, ReplicatedStore};
    /// let store = ReplicatedStore::open_with("redis://127.0.0.1:6379/0", RedisOptions::default())?
    ///     .compact_after(256 << 20);
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn compact_after(self, bytes: u64) -> ReplicatedStore {
        self.set_compact_after(bytes);
        self
    }

    /// [`ReplicatedStore::compact_after`] on a store in use (`u64::MAX`:
    /// this process writes no snapshots; others still may).
    pub fn set_compact_after(&self, bytes: u64) {
        self.compact_after.store(bytes, Ordering::Relaxed);
    }

    /// What this store does when its replica finds that the log lost
    /// entries it had applied (see *Divergence* in the module docs): with
    /// `true` (the default) it drops its state and loads the log's, with a
    /// warning, and goes on; with `false` it refuses: the call that found
    /// it and every later one fail with [`Error::Diverged`], until the
    /// store is opened again. Refusing suits deployments that would rather
    /// stop a worker and look than go on without the lost writes.
    ///
    /// ```no_run
    /// # use simcrawl_dedup::{Error, RedisOptions, ReplicatedStore};
    /// let store = ReplicatedStore::open_with("redis://127.0.0.1:6379/0", RedisOptions::default())?
    ///     .resync_diverged(false);
    /// match store.sync() {
    ///     Err(Error::Diverged(d)) => eprintln!("stopping at log position {}: {d}", d.position),
    ///     other => other?,
    /// }
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn resync_diverged(mut self, resync: bool) -> ReplicatedStore {
        self.resync = resync;
        self
    }

    /// The server's URL, without password.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Transactions run again because another process appended first.
    pub fn conflicts(&self) -> u64 {
        self.conflicts.load(Ordering::Relaxed)
    }

    /// Times this replica found that the log had lost entries it had
    /// applied, and reloaded the log's state (see *Divergence* in the
    /// module docs). Not counted: the load at open, and reloads of a
    /// replica that was only behind a snapshot.
    ///
    /// ```no_run
    /// # use simcrawl_dedup::{RedisOptions, ReplicatedStore};
    /// let store = ReplicatedStore::open_with("redis://127.0.0.1:6379/0", RedisOptions::default())?;
    /// store.sync()?;
    /// if store.resyncs() > 0 {
    ///     eprintln!("the Redis server lost writes this process had seen");
    /// }
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn resyncs(&self) -> u64 {
        self.resyncs.load(Ordering::Relaxed)
    }

    /// The chain value at this replica's position (32 hex digits): two
    /// replicas at the same position with the same chain value hold the
    /// same state.
    ///
    /// ```no_run
    /// # use simcrawl_dedup::{RedisOptions, ReplicatedStore};
    /// let a = ReplicatedStore::open_with("redis://127.0.0.1:6379/0", RedisOptions::default())?;
    /// let b = ReplicatedStore::open_with("redis://127.0.0.1:6379/0", RedisOptions::default())?;
    /// a.sync()?;
    /// b.sync()?;
    /// // No writer in between: the same history.
    /// assert_eq!((a.position(), a.chain()), (b.position(), b.chain()));
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn chain(&self) -> String {
        self.replica.lock().chain.clone()
    }

    /// Requests sent to the server so far.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// The log position this process's replica is at (entries applied).
    pub fn position(&self) -> u64 {
        self.replica.lock().pos
    }

    /// Brings the replica up to the end of the log now (a write does it
    /// anyway when it conflicts; a read does it first).
    pub fn sync(&self) -> Result<()> {
        let mut r = self.replica.lock();
        self.catch_up(&mut r)
    }

    /// The server's `used_memory` (`INFO memory`).
    pub fn used_memory(&self) -> Result<u64> {
        let mut r = self.replica.lock();
        let info: String = self.query(&mut r, redis::cmd("INFO").arg("memory"), false)?;
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| Error::Corrupt("INFO memory without used_memory".into()))
    }

    /// Bytes the namespace's keys take in Redis (`MEMORY USAGE` of the
    /// log, its head and the snapshot chunks).
    pub fn memory(&self) -> Result<u64> {
        let mut r = self.replica.lock();
        let mut total = 0u64;
        let scanned = for_each_key(self.conn(&mut r)?, &self.options.namespace, |conn, keys| {
            let mut pipe = redis::pipe();
            for k in &keys {
                pipe.cmd("MEMORY").arg("USAGE").arg(k).arg("SAMPLES").arg(0);
            }
            let sizes: Vec<Option<u64>> = pipe.query(conn)?;
            total += sizes.into_iter().flatten().sum::<u64>();
            Ok(())
        });
        scanned.map_err(|e| self.lose(&mut r, e, false))?;
        Ok(total)
    }

    /// Deletes every key of the namespace and empties this replica (other
    /// processes sharing the namespace must be stopped first: they would
    /// keep their replicas).
    pub fn clear(&self) -> Result<()> {
        let mut r = self.replica.lock();
        let cleared = clear_namespace(self.conn(&mut r)?, &self.options.namespace);
        cleared.map_err(|e| self.lose(&mut r, e, false))?;
        r.mem = MemState::default();
        r.pos = 0;
        r.cb = 0;
        r.chain = CHAIN0.to_string();
        r.refused = None;
        r.valid = true;
        let _: Value = self.query(
            &mut r,
            redis::cmd("SET").arg(&self.keys.layout).arg(LAYOUT).arg("NX"),
            false,
        )?;
        Ok(())
    }

    fn check_layout(&self, conn: &mut Connection) -> Result<()> {
        let stored: Option<String> = redis::cmd("GET")
            .arg(&self.keys.layout)
            .query(conn)
            .map_err(|e| classify(&self.url, e, false).0)?;
        match stored {
            Some(s) if s == LAYOUT => Ok(()),
            Some(s) if s == LAYOUT_V1 => self.upgrade(conn),
            Some(other) => Err(Error::Config(format!(
                "Redis namespace {:?} at {} holds a store of layout {other}, not a replicated one ({LAYOUT}): \
                 open it with RedisStore, or use another namespace",
                self.options.namespace, self.url
            ))),
            None => {
                // A namespace with keys but no marker is someone else's.
                let used: bool = redis::cmd("EXISTS")
                    .arg(format!("{}n", self.keys.prefix))
                    .query(conn)
                    .map_err(|e| classify(&self.url, e, false).0)?;
                if used {
                    return Err(Error::Config(format!(
                        "Redis namespace {:?} at {} holds a RedisStore of layout 1: use another namespace",
                        self.options.namespace, self.url
                    )));
                }
                redis::cmd("SET")
                    .arg(&self.keys.layout)
                    .arg(LAYOUT)
                    .arg("NX")
                    .query::<Value>(conn)
                    .map_err(|e| classify(&self.url, e, false).0)?;
                Ok(())
            }
        }
    }

    /// Upgrades a namespace of the layout before the chain (see the module
    /// docs, *Divergence*).
    fn upgrade(&self, conn: &mut Connection) -> Result<()> {
        let k = &self.keys;
        let upgraded: i64 = redis::Script::new(UPGRADE)
            .key(&k.layout)
            .key(&k.log)
            .key(&k.head)
            .key(&k.chain)
            .arg(LAYOUT_V1)
            .arg(LAYOUT)
            .invoke(conn)
            .map_err(|e| classify(&self.url, e, false).0)?;
        match upgraded {
            1 => {
                tracing::info!(
                    url = %self.url,
                    "upgraded Redis namespace {} from layout {LAYOUT_V1} to {LAYOUT} (a hash chain over the log)",
                    self.options.namespace
                );
                Ok(())
            }
            0 => {
                // Another process upgraded it meanwhile.
                let now: Option<String> = redis::cmd("GET")
                    .arg(&k.layout)
                    .query(conn)
                    .map_err(|e| classify(&self.url, e, false).0)?;
                if now.as_deref() == Some(LAYOUT) {
                    return Ok(());
                }
                Err(Error::Config(format!(
                    "Redis namespace {:?} at {}: its layout changed from {LAYOUT_V1} to {now:?} while this \
                     process upgraded it to {LAYOUT}",
                    self.options.namespace, self.url
                )))
            }
            _ => Err(Error::Config(format!(
                "Redis namespace {:?} at {} (layout {LAYOUT_V1}) has a snapshot that is not at the start of its log, \
                 so it cannot be upgraded to layout {LAYOUT}; clear the namespace (crawl --fresh) to start over",
                self.options.namespace, self.url
            ))),
        }
    }

    /// Waits for the snapshot this process is writing, if any: its error,
    /// if it failed. (Dropping the store waits too.)
    pub fn finish_snapshot(&self) -> Result<()> {
        let handle = self.snapshot.lock().take();
        match handle.map(std::thread::JoinHandle::join) {
            None => Ok(()),
            Some(Ok(outcome)) => outcome.map(drop),
            Some(Err(_)) => Err(Error::Corrupt("the snapshot thread panicked".into())),
        }
    }

    /// One transaction: run `f` on the replica with its writes aside,
    /// append them to the log, apply them. See the module docs.
    fn transact<R>(&self, r: &mut Replica, f: &mut impl FnMut(&mut dyn Tables) -> Result<R>) -> Result<R> {
        if let Some(d) = &r.refused {
            return Err(self.diverged(d));
        }
        if !r.valid {
            self.load(r)?;
        }
        let attempts = self.options.max_attempts.max(1);
        let mut has_turn = false;
        let mut lost = 0u32;
        for attempt in 0..attempts {
            let mut pending = Pending::default();
            let value = {
                let mut view = Overlay {
                    base: &r.mem,
                    pending: &mut pending,
                };
                f(&mut view)?
            };
            if pending.is_empty() {
                return Ok(value);
            }
            let entry = pending.into_entry();
            let pos = r.pos.to_string();
            let (max, bytes) = (MAX_ENTRIES.to_string(), MAX_REPLY_BYTES.to_string());
            // Every attempt is stamped anew: an entry whose reply was lost
            // and a retry of it are told apart.
            r.seq += 1;
            let chain = r.chain.clone();
            let next = next_chain(&chain, &self.token, r.seq);
            let reply = self.script(
                r,
                &self.commit,
                &[
                    pos.as_bytes(),
                    self.token.as_bytes(),
                    &entry,
                    max.as_bytes(),
                    bytes.as_bytes(),
                    chain.as_bytes(),
                    next.as_bytes(),
                ],
                true,
            )?;
            match reply {
                Reply::Appended {
                    end,
                    cb,
                    snap_cb,
                    snap_bytes,
                } => {
                    if let Err(e) = oplog::apply(&entry, &mut r.mem) {
                        r.valid = false;
                        return Err(e);
                    }
                    r.pos = end;
                    r.cb = cb;
                    r.chain = next;
                    let tail = cb.saturating_sub(snap_cb);
                    let due = tail >= self.compact_after.load(Ordering::Relaxed).max(snap_bytes / 2);
                    let recently = r
                        .last_compaction
                        .is_some_and(|t| t.elapsed() < Duration::from_secs(10));
                    if due && !recently {
                        // The commit stands whatever happens to the snapshot.
                        if let Err(e) = self.compact(r) {
                            r.last_compaction = Some(Instant::now());
                            tracing::warn!(url = %self.url, "writing a snapshot failed: {e}");
                        }
                    }
                    return Ok(value);
                }
                Reply::Entries { entries, chain } => {
                    self.conflicts.fetch_add(1, Ordering::Relaxed);
                    self.apply(r, entries, chain)?;
                    // The reply may have stopped at its bounds.
                    self.catch_up(r)?;
                    lost += 1;
                    if lost >= 2 && !has_turn {
                        // Losing again and again to faster writers: take
                        // the next turn, so this transaction gets in.
                        has_turn = self.lease(r, &self.keys.turn, TURN_MS)?;
                    }
                }
                Reply::NotYourTurn => backoff(attempt),
                Reply::Trimmed => self.load(r)?,
                Reply::Shorter { end } => {
                    let gap = Gap::Lost(shorter(r, end));
                    self.recover(r, gap)?;
                }
                Reply::OtherHistory { found } => {
                    let gap = Gap::Lost(other_history(r, found));
                    self.recover(r, gap)?;
                }
                Reply::Unchained { entries, chains } => return Err(self.unchained(entries, chains)),
                Reply::UpToDate => {
                    return Err(Error::Corrupt("commit script replied without appending".into()));
                }
            }
        }
        if has_turn {
            let _ = self.release_lease(r, &self.keys.turn.clone());
        }
        Err(Error::Contention {
            url: self.url.clone(),
            attempts,
        })
    }
}

impl Drop for ReplicatedStore {
    /// A snapshot being written is finished, so a clean shutdown leaves
    /// it installed.
    fn drop(&mut self) {
        if let Some(h) = self.snapshot.lock().take() {
            log_snapshot(&self.url, h);
        }
    }
}

impl Store for ReplicatedStore {
    fn write<R>(&self, mut f: impl FnMut(&mut dyn Tables) -> Result<R>) -> Result<R> {
        let mut r = self.replica.lock();
        self.transact(&mut r, &mut f)
    }

    /// Catches up with the log first, so a read sees every write
    /// committed before it started.
    fn read<R>(&self, mut f: impl FnMut(&dyn ReadTables) -> Result<R>) -> Result<R> {
        let mut r = self.replica.lock();
        self.catch_up(&mut r)?;
        f(&r.mem)
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn location(&self) -> Option<&Path> {
        Some(&self.location)
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "host".into())
}

/// A seed for this process's token: only needs to differ between
/// processes started in the same microsecond.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The chain value is 32 hex digits, and changes with the chain before
    /// it and with either part of the stamp.
    #[test]
    fn chain_values_name_the_history_and_the_stamp() {
        let c = next_chain(CHAIN0, "host:1:ab", 1);
        assert_eq!(c.len(), CHAIN0.len());
        assert!(c.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(c, next_chain(CHAIN0, "host:1:ab", 1));
        let others = [
            next_chain(CHAIN0, "host:1:ab", 2),
            next_chain(CHAIN0, "host:2:ab", 1),
            next_chain(&c, "host:1:ab", 1),
        ];
        for o in &others {
            assert_ne!(&c, o);
        }
    }
}
