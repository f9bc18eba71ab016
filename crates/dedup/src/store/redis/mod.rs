//! A store in [Redis](https://redis.io), behind the `redis` feature: many
//! crawler processes on many machines share one set of tiers.
//!
//! The tiers live in Redis, so processes hold nothing, and every check
//! costs the server its index reads and writes (a few thousand checks a
//! second per server). [`super::ReplicatedStore`] is the other way to
//! share them: a copy in each process, Redis ordering the writes, checks
//! at in-memory speed.
//!
//! # Key layout
//!
//! Every key starts with `{NS}:`, `NS` being [`RedisOptions::namespace`]
//! (default `simcrawl`). The braces make `NS` the key's *hash tag*: under
//! Redis Cluster every key of a namespace lives in one slot, hence on one
//! master, so one check's keys can be read and committed atomically (see
//! *Atomicity* and *Redis Cluster*). Binary parts are raw bytes,
//! big-endian; `ID5` is a document id in 5 bytes (ids below 2^40).
//!
//! | key | type | content |
//! | --- | --- | --- |
//! | `{NS}:m:NAME` | string | metadata (`params`; `layout`, this layout's number: 2) |
//! | `{NS}:n` | string | the next document id (`INCRBY`) |
//! | `{NS}:v` | hash | version stripe (0 to 65535) -> number of the commit that last wrote it, see *Atomicity* |
//! | `{NS}:vc` | string | commits so far (`INCR`), the source of those numbers |
//! | `{NS}:u:DIGEST16` | string | URL tier: first seen (u64 LE) + URL as first given |
//! | `{NS}:ut` | sorted set | member DIGEST16, score first seen: the URL purge's index |
//! | `{NS}:t:DIGEST16` | sorted set | title tier: member `ID` (decimal), score id |
//! | `{NS}:b:T KEY8` | string | block table `T` (one byte), block key: packed entries FP8 + ID5 |
//! | `{NS}:l:BUCKET3` | string | LSH bands whose key starts with these 18 bits: packed entries TAG4 (key bits 16-47) + ID5 |
//! | `{NS}:d:BUCKET` | hash | records of documents `64 x BUCKET` to `64 x BUCKET + 63`: field id mod 64 (decimal), value [`DocRecord::encode`] |
//! | `{NS}:o` | sorted set | member and score `BUCKET`: the record buckets in insertion order, for purging the oldest |
//! | `{NS}:c` | string | the number of stored documents |
//!
//! Why this layout (layout 2; layout 1 kept a sorted set per block key
//! and band bucket, a string per record and a sorted set of every id, at
//! 807 bytes per document; see docs/BENCHMARKS.md, "Redis store"):
//!
//! - Block lists and band buckets are *packed strings*, 13 and 9 bytes an
//!   entry, read for a whole batch with one `MGET` and written whole with
//!   `MSET` at the commit. Redis' cost is mostly per command: a sorted
//!   set entry cost a command to read and one to write (~14 of each per
//!   document); one `MGET` of 14,000 keys costs about what 14,000 hash
//!   lookups cost. A packed entry also takes less memory than a listpack
//!   entry with its score. Reading a whole list is what a check does
//!   anyway (every candidate of a block key is compared), and a band
//!   bucket holds ~40 entries at 1M documents (2^18 buckets; 360 bytes).
//!   Measured, the commands saved are paid back in bytes: a whole-value
//!   rewrite passes ~4 KB per new document through the commit script's
//!   arguments, so one process checks no faster than with layout 1; the
//!   gain is memory (see *Memory*).
//! - Records are 64 to a hash: one key (~70 bytes of Redis overhead) per
//!   64 documents instead of one each, and since ids are handed out in
//!   insertion order the buckets in `{NS}:o` are the insertion order
//!   (one entry per 64 documents instead of a sorted-set entry, ~100
//!   bytes, per document). With `hash-max-listpack-value` raised above
//!   the record size (about 300 + URL bytes; the default is 64) the hashes
//!   stay listpacks and save ~50 more bytes per document.
//! - Band keys are 64-bit hashes, nearly all distinct: a key per band would
//!   cost a Redis key per band per document, hence the 2^18 buckets.
//!
//! The window is applied by [`crate::Deduper::purge_expired`], which
//! removes each expired document's exact entries, as on every store. Keys
//! are given no expiry (`EXPIRE`): one key holds entries of many documents
//! of different ages.
//!
//! # Atomicity: optimistic transactions, validated by a script
//!
//! [`Store::write`] runs the check's closure against a connection of its
//! own. The closure's reads are pipelined (a whole batch's index keys in
//! one round trip, see [`ReadTables::prefetch`]); each key maps to one of
//! 65536 *version stripes* (FNV-1a of its name), and the stripes' counters
//! in `{NS}:v` are read first in the same pipeline. The closure's writes
//! are queued; at the end one `EVALSHA` of a commit script checks that
//! every stripe it read still has the version it read, and only then bumps
//! the stripes of the keys it writes and applies its writes. The script
//! runs atomically; when a version changed it writes nothing and the
//! closure runs again on fresh data (up to [`RedisOptions::max_attempts`]
//! times, with jittered backoff). Every committed transaction therefore
//! read exactly the state it committed on: transactions are serializable,
//! in the order of their commits.
//!
//! A packed key is written whole, as the value the transaction read plus
//! its own changes. That is safe for the same reason: the commit only
//! applies if the key's stripe is unchanged, so the value replaced is the
//! value read. A packed key written without being read first (a purge, a
//! bulk load) is read, with its stripe, just before the commit.
//!
//! Why this gives one kept copy: a kept document writes its URL key, its
//! title key, its `m` block keys and the buckets of its band keys, so bumps
//! their stripes. Another check that would find it (same URL or title, a
//! block key in common, or a band in common) has read that same key, so
//! that stripe: if the first commits in between, the second's commit is
//! refused and its rerun finds the first as a candidate. Document records
//! are not versioned: a record never changes once written, and a check
//! learns of a document only through an index key, which is.
//!
//! Why not `WATCH`/`MULTI`/`EXEC`, the textbook route (and this store's
//! first version): Redis 7.0 checks each newly watched key against all
//! the keys the connection already watches, so watching the ~15 keys of
//! each of 1000 documents in a batch is quadratic (measured: 1000 keys
//! 0.05 s, 4000 keys 0.36 s, 16000 keys 6.3 s), and batching is what makes
//! a networked store fast. Stripes also bound the versions kept (a fixed
//! 65536 counters) however many keys there are.
//!
//! Why not the whole check as a server-side script: the check verifies
//! candidates by sketch resemblance, which would have to be written a
//! second time in Lua, and a script blocks the whole server while it runs
//! (a page with hundreds of band candidates would stall every other
//! crawler). Here the script only compares counters and applies writes.
//!
//! Document ids come from `INCRBY {NS}:n` outside the transaction, reserved
//! for a batch in its read round trip, so inserts do not all conflict on
//! one counter; ids left unused (duplicates, aborted attempts) are gaps,
//! which are harmless.
//!
//! Conflicts: two checks conflict when they share a stripe one of them
//! writes; false conflicts (different keys, same stripe) only cost a
//! retry. Small batches from many processes rarely conflict; two batches
//! of 1000 documents committing at the same moment almost always do (the
//! later one is retried), so workers sharing a server should batch tens,
//! not thousands.
//!
//! # Redis Cluster
//!
//! Open the store on any node ([`RedisStore::open`]) or on a list of them
//! ([`RedisStore::open_cluster`], which tries each until one answers). It
//! asks `CLUSTER SLOTS` which master serves the namespace's slot and
//! talks to that master directly. Every key of a namespace carries the
//! `{NS}` hash tag, so all of them are in that one slot: each read
//! pipeline, each `MGET` and each commit script touches one master only,
//! and the script runs there atomically, as on a single server. The
//! guarantee is therefore the same as on one server, and so is the limit:
//! one namespace is one shard, served by one master's single thread.
//! Several namespaces (one per crawl, or per group of sites) spread over
//! the masters by their slots. When a slot moves (resharding, failover)
//! the master answers `MOVED` (or `CLUSTERDOWN` during a failover): the
//! command was refused, nothing was applied, the error is
//! [`Error::Disconnected`] (transient, `maybe_applied` false), and the
//! store's next connection asks the cluster again where the slot is.
//! After a failover, writes the old master acknowledged but had not yet
//! replicated to its replica are lost, as with any Redis data.
//!
//! # Failures
//!
//! A server that cannot be reached at [`RedisStore::open`] is
//! [`Error::Unreachable`], naming the URL (without its password). A
//! connection lost, refused or timed out during a transaction is
//! [`Error::Disconnected`]: before the commit was sent nothing was
//! applied; if the commit was sent and its reply lost, `maybe_applied` is
//! set (the script either ran whole or not at all). A restarted server
//! still loading its data (`LOADING`, `MASTERDOWN`) is
//! [`Error::Disconnected`] too, with nothing applied. The caller retries; a
//! check that was in fact applied then finds its own document, and reports
//! it as a duplicate of its own URL. A command the server refuses inside
//! the commit script would leave the writes before it applied (Redis does
//! not roll scripts back); only a foreign key of another type under the
//! namespace can cause that, so keep the namespace to this store. A
//! namespace written by another layout of this store is refused at
//! [`RedisStore::open`] ([`Error::Config`]).
//!
//! # Memory
//!
//! [`RedisStore::memory_by_part`] measures each part of a namespace.
//! Measured at m = 4, 10 bands, 1M documents with 7-byte URLs and no
//! title (docs/BENCHMARKS.md, "Redis store"; `MEMORY USAGE` of every key,
//! per document):
//!
//! | part | bytes per document |
//! | --- | --- |
//! | records (`d:`; 296-byte values, of which the sketch is 272) | 362 (321 with `hash-max-listpack-value 512`) |
//! | band buckets (`l:`; 10 entries of 9 bytes + key overhead) | 114 |
//! | block lists (`b:`; 4 entries of 13 bytes + key overhead) | 77 |
//! | version stripes (`v`, fixed ~3 MB) and insertion order (`o`) | 5 |
//! | total (`used_memory` grew by 579 per document; 527 over the second half) | 557 |
//!
//! The URL and title tiers add, per document having them: URL record 168,
//! URL first-seen index 120, a distinct title 115. The record, with the
//! 272-byte sketch every candidate is verified against, is most of it by
//! itself, so the 200 bytes per document of issue 9 are out of reach while
//! the sketch is kept in Redis. Layout 1 took 808 bytes per document on
//! the same bench.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use redis::{Connection, Pipeline, RedisError, Value};
use rustc_hash::{FxHashMap, FxHashSet};

use super::{BAND_POSTINGS, DocId, DocRecord, NEXT_ID_META, Prefetch, ReadTables, Store, Tables, UrlRecord};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;

/// Bits of a band key that pick its bucket (`{NS}:l:BUCKET3`).
const BAND_BUCKET_BITS: u32 = 18;

/// Document records are kept 2^6 = 64 to a hash (`{NS}:d:BUCKET`), by id:
/// one key per 64 documents instead of one each, and the buckets in id
/// order are the insertion order (purges read the oldest bucket first).
const DOC_BUCKET_BITS: u32 = 6;
const DOC_BUCKET_MASK: u64 = (1 << DOC_BUCKET_BITS) - 1;

/// The key layout this version writes, recorded in `{NS}:m:layout`.
/// Layout 1 (before it was recorded) kept a string per document record,
/// a sorted set of every id, 8-byte band keys in band members and ids as
/// block scores.
const LAYOUT: &str = "2";

/// The Redis memory one part of a namespace's key layout takes, from
/// [`RedisStore::memory_by_part`].
///
/// ```
/// let p = simcrawl_dedup::store::MemoryPart { part: "bands", keys: 2, bytes: 300 };
/// assert_eq!(p.bytes / p.keys, 150);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPart {
    /// The part: `doc records`, `doc order`, `blocks`, `bands`, `titles`,
    /// `url records`, `url times`, `versions`, or `other` (metadata,
    /// counters).
    pub part: &'static str,
    /// Its keys.
    pub keys: u64,
    /// Their `MEMORY USAGE` (value, key name and the key's entry in the
    /// keyspace), in bytes.
    pub bytes: u64,
}

/// Which part of the layout a key is, from its name after `{NS}:`.
fn part_of(rest: &[u8]) -> &'static str {
    match rest {
        [b'd', b':', ..] => "doc records",
        [b'o'] => "doc order",
        [b'b', b':', ..] => "blocks",
        [b'l', b':', ..] => "bands",
        [b't', b':', ..] => "titles",
        [b'u', b':', ..] => "url records",
        [b'u', b't'] => "url times",
        [b'v'] => "versions",
        _ => "other",
    }
}

/// How a [`RedisStore`] connects and retries.
///
/// ```
/// let o = simcrawl_dedup::RedisOptions::default();
/// assert_eq!(o.namespace, "simcrawl");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisOptions {
    /// Prefix and hash tag of every key: stores with different namespaces
    /// share a server without seeing each other. No `{`, `}`, `:` or
    /// spaces. Connections are named `simcrawl:NAMESPACE` (`CLIENT LIST`).
    pub namespace: String,
    /// Longest wait for a TCP connection.
    pub connect_timeout: Duration,
    /// Longest wait for a reply: a server that stops answering becomes
    /// [`Error::Disconnected`] after this long instead of a hang.
    pub io_timeout: Duration,
    /// Attempts of one transaction whose watched keys other writers keep
    /// changing, before [`Error::Contention`].
    pub max_attempts: u32,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            namespace: "simcrawl".to_string(),
            connect_timeout: Duration::from_secs(5),
            io_timeout: Duration::from_secs(30),
            max_attempts: 64,
        }
    }
}

/// The tiers in a Redis server (or the master of a cluster that holds the
/// namespace's slot), shared by every process that opens the same URL and
/// namespace. See the module documentation for the key layout and the
/// transaction protocol.
///
/// ```no_run
/// use simcrawl_dedup::{Deduper, DedupConfig, Document, RedisStore};
/// let store = RedisStore::open("redis://127.0.0.1:6379/0")?;
/// let d = Deduper::new(store, DedupConfig::default())?;
/// let text = "长江流域今年夏季降雨偏多，防汛形势严峻，水利部门启动应急响应";
/// // Any process on any machine checking the same text against the same
/// // Redis now gets a duplicate.
/// let first = d.check(&Document::new("http://a.example/1", "", text))?;
/// # Ok::<(), simcrawl_dedup::Error>(())
/// ```
pub struct RedisStore {
    client: redis::Client,
    /// The URL without password, for messages.
    url: String,
    location: PathBuf,
    keys: Keys,
    options: RedisOptions,
    pool: Mutex<Vec<Connection>>,
    conflicts: AtomicU64,
    round_trips: AtomicU64,
    commit: redis::Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.url)
            .field("options", &self.options)
            .field("pooled", &self.pool.lock().len())
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (`redis://[user:password@]host:port/db`) with the
    /// default options. An unreachable server is [`Error::Unreachable`].
    pub fn open(url: &str) -> Result<RedisStore> {
        Self::open_with(url, RedisOptions::default())
    }

    /// Connects to `url` with explicit options.
    pub fn open_with(url: &str, options: RedisOptions) -> Result<RedisStore> {
        let (client, shown) = open_client(url, &options)?;
        let ns = &options.namespace;
        let store = RedisStore {
            client,
            location: PathBuf::from(format!("{shown} (namespace {ns})")),
            url: shown,
            keys: Keys::new(ns),
            options,
            pool: Mutex::new(Vec::new()),
            conflicts: AtomicU64::new(0),
            round_trips: AtomicU64::new(0),
            commit: redis::Script::new(COMMIT),
        };
        let mut conn = store.connect().map_err(|e| match e {
            Error::Disconnected { url, source, .. } => Error::Unreachable { url, source },
            other => other,
        })?;
        redis::cmd("PING")
            .query::<Value>(&mut conn)
            .map_err(|e| Error::Unreachable {
                url: store.url.clone(),
                source: Box::new(e),
            })?;
        store.check_layout(&mut conn)?;
        store.pool.lock().push(conn);
        Ok(store)
    }

    /// Refuses a namespace written in another key layout (see [`LAYOUT`]),
    /// and records this one in a namespace that has none yet. Layout 1
    /// recorded nothing: it shows as an order index without a count.
    fn check_layout(&self, conn: &mut Connection) -> Result<()> {
        let k = &self.keys;
        let layout_key = k.meta("layout");
        let (stored, order, count): (Option<Vec<u8>>, bool, bool) = redis::pipe()
            .cmd("GET")
            .arg(&layout_key)
            .cmd("EXISTS")
            .arg(k.order())
            .cmd("EXISTS")
            .arg(k.count())
            .query(conn)
            .map_err(|e| self.fail(e, false))?;
        let stored = match stored {
            Some(s) => String::from_utf8_lossy(&s).into_owned(),
            None if order && !count => "1".to_string(),
            None => {
                redis::cmd("SET")
                    .arg(&layout_key)
                    .arg(LAYOUT)
                    .arg("NX")
                    .query::<Value>(conn)
                    .map_err(|e| self.fail(e, false))?;
                return Ok(());
            }
        };
        if stored == LAYOUT {
            return Ok(());
        }
        Err(Error::Config(format!(
            "Redis namespace {:?} at {} holds keys of store layout {stored}, this simcrawl reads layout {LAYOUT}: \
             use another namespace, or empty this one (RedisStore::clear) to rebuild it",
            self.options.namespace, self.url
        )))
    }

    /// Connects to a Redis Cluster through the first of `urls` (any of
    /// its nodes, `redis://host:port/0`) that answers: the store then talks
    /// to the master serving its namespace's slot, found with `CLUSTER
    /// SLOTS` (see *Redis Cluster* in the module docs). When none answers,
    /// the error of the last is returned ([`Error::Unreachable`]).
    ///
    /// ```no_run
    /// use simcrawl_dedup::{RedisOptions, RedisStore};
    /// let nodes = ["redis://10.0.0.1:7000/0", "redis://10.0.0.2:7000/0"];
    /// let store = RedisStore::open_cluster(&nodes, RedisOptions::default())?;
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn open_cluster(urls: &[&str], options: RedisOptions) -> Result<RedisStore> {
        let mut last = Error::Config("no Redis Cluster node given".into());
        for url in urls {
            match Self::open_with(url, options.clone()) {
                Ok(store) => return Ok(store),
                Err(e @ Error::Unreachable { .. }) => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// The server's URL, without password.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Transactions rerun because another writer changed what they read,
    /// since the store was opened.
    pub fn conflicts(&self) -> u64 {
        self.conflicts.load(Ordering::Relaxed)
    }

    /// Round trips to the server since the store was opened (reads,
    /// commits), for benchmarks and tests of the batching.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// The server's `used_memory` (`INFO memory`), in bytes: for sizing
    /// and benchmarks.
    pub fn used_memory(&self) -> Result<u64> {
        Ok(self.info_number("memory", "used_memory")? as u64)
    }

    /// A numeric field of the server's `INFO section` (`used_cpu_user` of
    /// `cpu`, `connected_clients` of `clients`, ...), for monitoring and
    /// benchmarks.
    pub fn info_number(&self, section: &str, field: &str) -> Result<f64> {
        let mut conn = self.conn()?;
        let info: String = redis::cmd("INFO")
            .arg(section)
            .query(&mut conn)
            .map_err(|e| self.fail(e, false))?;
        self.pool.lock().push(conn);
        info.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| {
                Error::Storage(format!("Redis at {}: no {field} in INFO {section}", self.url).into())
            })
    }

    /// Redis memory of this namespace by part of the key layout (`MEMORY
    /// USAGE` of every key, exact: `SAMPLES 0`), biggest first: what each
    /// tier and index costs, for sizing a server. Reads every key, so it
    /// takes a while on a big namespace (about a second per 500k keys).
    ///
    /// ```no_run
    /// let store = simcrawl_dedup::RedisStore::open("redis://127.0.0.1:6379/0")?;
    /// for p in store.memory_by_part()? {
    ///     println!("{}: {} keys, {} bytes", p.part, p.keys, p.bytes);
    /// }
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn memory_by_part(&self) -> Result<Vec<MemoryPart>> {
        let mut conn = self.conn()?;
        let mut parts: Vec<MemoryPart> = Vec::new();
        for_each_key(&mut conn, &self.options.namespace, |conn, keys| {
            let mut pipe = redis::pipe();
            for k in &keys {
                pipe.cmd("MEMORY").arg("USAGE").arg(k).arg("SAMPLES").arg(0);
            }
            let sizes: Vec<Option<u64>> = pipe.query(conn)?;
            for (k, size) in keys.iter().zip(sizes) {
                let part = part_of(k.get(self.keys.prefix.len()..).unwrap_or_default());
                match parts.iter_mut().find(|p| p.part == part) {
                    Some(p) => {
                        p.keys += 1;
                        p.bytes += size.unwrap_or(0);
                    }
                    None => parts.push(MemoryPart {
                        part,
                        keys: 1,
                        bytes: size.unwrap_or(0),
                    }),
                }
            }
            Ok(())
        })
        .map_err(|e| self.fail(e, false))?;
        self.pool.lock().push(conn);
        parts.sort_by_key(|p| std::cmp::Reverse(p.bytes));
        Ok(parts)
    }

    /// Deletes every key of this store's namespace (tests, benchmarks,
    /// starting over). Not atomic with respect to concurrent writers.
    pub fn clear(&self) -> Result<()> {
        let mut conn = self.conn()?;
        clear_namespace(&mut conn, &self.options.namespace).map_err(|e| self.fail(e, false))?;
        // Still this store's namespace: a store of another layout must not
        // take it over while this one is open.
        redis::cmd("SET")
            .arg(self.keys.meta("layout"))
            .arg(LAYOUT)
            .arg("NX")
            .query::<Value>(&mut conn)
            .map_err(|e| self.fail(e, false))?;
        self.pool.lock().push(conn);
        Ok(())
    }

    /// A pooled connection, or a new one.
    fn conn(&self) -> Result<Connection> {
        if let Some(c) = self.pool.lock().pop() {
            return Ok(c);
        }
        self.connect()
    }

    /// A new connection, to the master holding the namespace's slot when
    /// the server is a cluster node.
    fn connect(&self) -> Result<Connection> {
        connect_namespace(&self.client, &self.options, &self.url).map_err(|e| self.fail(e, false))
    }

    /// A Redis error as this crate's: connection trouble is
    /// [`Error::Disconnected`] (retry), anything else a store error naming
    /// the server.
    fn fail(&self, e: RedisError, maybe_applied: bool) -> Error {
        let (error, reroute) = classify(&self.url, e, maybe_applied);
        if reroute {
            // Pooled connections may point at the old owner of the slot;
            // new ones ask the cluster again.
            self.pool.lock().clear();
        }
        error
    }

    /// Runs `f` in optimistic transactions until one commits (see the
    /// module docs): `f` reads, recording the versions of what it read,
    /// and queues its writes; the commit script applies them only if
    /// those versions are unchanged, else `f` runs again.
    fn run<R>(&self, mut f: impl FnMut(&mut Tx<'_>) -> Result<R>) -> Result<R> {
        let attempts = self.options.max_attempts.max(1);
        for attempt in 0..attempts {
            let mut tx = Tx::new(self.conn()?, self);
            let outcome = f(&mut tx);
            let value = match outcome {
                Ok(v) => v,
                Err(e) => {
                    self.round_trips
                        .fetch_add(tx.round_trips.get(), Ordering::Relaxed);
                    // A connection that failed is dropped, not pooled.
                    if !matches!(e, Error::Disconnected { .. }) {
                        self.pool.lock().push(tx.into_conn());
                    }
                    return Err(e);
                }
            };
            let committed = tx.commit();
            self.round_trips
                .fetch_add(tx.round_trips.get(), Ordering::Relaxed);
            match committed {
                Ok(true) => {
                    self.pool.lock().push(tx.into_conn());
                    return Ok(value);
                }
                Ok(false) => {
                    self.conflicts.fetch_add(1, Ordering::Relaxed);
                    self.pool.lock().push(tx.into_conn());
                    backoff(attempt);
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::Contention {
            url: self.url.clone(),
            attempts,
        })
    }
}

/// `text` as a literal in a Redis glob pattern (`SCAN MATCH`, `KEYS`):
/// `*`, `?`, `[`, `]` and `\` escaped with a backslash. Unescaped, clearing
/// the namespace `a*` would clear `ab`'s keys too.
fn glob_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Calls `each` with the keys of `namespace` (every key under its `{NS}`
/// hash tag) on the server of `conn`, a `SCAN` page (up to ~1000 keys) at
/// a time.
pub(super) fn for_each_key(
    conn: &mut Connection,
    namespace: &str,
    mut each: impl FnMut(&mut Connection, Vec<Vec<u8>>) -> redis::RedisResult<()>,
) -> redis::RedisResult<()> {
    let pattern = format!("{{{}}}:*", glob_literal(namespace));
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query(conn)?;
        if !keys.is_empty() {
            each(conn, keys)?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

/// Deletes every key of `namespace` on the server of `conn` (a connection
/// from [`connect_namespace`], so under Redis Cluster the master holding
/// the namespace), whichever store or frontier wrote them. Not atomic with
/// respect to concurrent writers.
///
/// ```no_run
/// use simcrawl_dedup::{RedisOptions, store::{clear_namespace, connect_namespace}};
/// let client = redis::Client::open("redis://127.0.0.1:6379/0").unwrap();
/// let options = RedisOptions { namespace: "news".into(), ..Default::default() };
/// let mut conn = connect_namespace(&client, &options, "redis://127.0.0.1:6379/0")?;
/// clear_namespace(&mut conn, "news")?;
/// # Ok::<(), redis::RedisError>(())
/// ```
pub fn clear_namespace(conn: &mut Connection, namespace: &str) -> redis::RedisResult<()> {
    for_each_key(conn, namespace, |conn, keys| {
        redis::cmd("UNLINK").arg(&keys).query::<Value>(conn).map(drop)
    })
}

/// The client for `url` and the URL as shown in messages (no password),
/// once `options.namespace` is known to be usable as a hash tag.
pub(super) fn open_client(url: &str, options: &RedisOptions) -> Result<(redis::Client, String)> {
    let shown = redact(url);
    let ns = &options.namespace;
    if ns.is_empty() || ns.contains(['{', '}', ':']) || ns.contains(char::is_whitespace) {
        return Err(Error::Config(format!(
            "Redis namespace {ns:?} must be non-empty, without '{{', '}}', ':' or spaces"
        )));
    }
    let client = redis::Client::open(url).map_err(|e| Error::Unreachable {
        url: shown.clone(),
        source: Box::new(e),
    })?;
    Ok((client, shown))
}

/// A new connection to the server of `client` or, when it is a cluster
/// node, to the master serving `options.namespace`'s slot (every key
/// under the `{NS}` hash tag lives there): named `simcrawl:NS`, with the
/// options' timeouts. The stores connect this way; so can anything else
/// keeping keys under the namespace's tag (the crawler's frontier), so
/// that it works against a cluster given any node's URL. `url` is only
/// for messages.
///
/// ```no_run
/// use simcrawl_dedup::{RedisOptions, store::connect_namespace};
/// let client = redis::Client::open("redis://10.0.0.1:7000/0").unwrap();
/// let options = RedisOptions { namespace: "news".into(), ..Default::default() };
/// let mut conn = connect_namespace(&client, &options, "redis://10.0.0.1:7000/0")?;
/// let _: () = redis::cmd("SET").arg("{news}:f:hello").arg(1).query(&mut conn)?;
/// # Ok::<(), redis::RedisError>(())
/// ```
pub fn connect_namespace(
    client: &redis::Client,
    options: &RedisOptions,
    url: &str,
) -> std::result::Result<Connection, RedisError> {
    let mut conn = connect_to(client, options)?;
    let slots = redis::cmd("CLUSTER").arg("SLOTS").query::<Value>(&mut conn);
    if let Ok(slots) = slots
        && let Some((host, port)) = slot_owner(&slots, slot(options.namespace.as_bytes()))
    {
        let info = client.get_connection_info();
        let here = info.addr().to_string();
        if here != format!("{host}:{port}") {
            tracing::debug!(url, "namespace {} served by {host}:{port}", options.namespace);
            let target = info.clone().set_addr(redis::ConnectionAddr::Tcp(host, port));
            let client = redis::Client::open(target)?;
            conn = connect_to(&client, options)?;
        }
    }
    Ok(conn)
}

fn connect_to(client: &redis::Client, options: &RedisOptions) -> std::result::Result<Connection, RedisError> {
    let mut conn = client.get_connection_with_timeout(options.connect_timeout)?;
    conn.set_read_timeout(Some(options.io_timeout))?;
    conn.set_write_timeout(Some(options.io_timeout))?;
    // Named, so `CLIENT LIST` shows which namespace a connection serves.
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(format!("simcrawl:{}", options.namespace))
        .query::<Value>(&mut conn)?;
    Ok(conn)
}

/// A Redis error as this crate's, and whether connections must ask the
/// cluster again where the namespace lives: connection trouble is
/// [`Error::Disconnected`] (retry), anything else a store error naming
/// the server.
pub(super) fn classify(url: &str, e: RedisError, maybe_applied: bool) -> (Error, bool) {
    let not_ready = matches!(
        e.kind(),
        redis::ErrorKind::Server(redis::ServerErrorKind::BusyLoading | redis::ServerErrorKind::MasterDown)
    );
    if e.is_cluster_error() || not_ready {
        // The slot moved (resharding, failover), the cluster is down, a
        // restarted server is still loading its data, or a replica lost
        // its master: the command was refused, so nothing was applied.
        let error = Error::Disconnected {
            url: url.to_string(),
            maybe_applied: false,
            source: Box::new(e),
        };
        return (error, true);
    }
    (fail(url, e, maybe_applied), false)
}

fn fail(url: &str, e: RedisError, maybe_applied: bool) -> Error {
    if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() || e.is_connection_refusal() {
        Error::Disconnected {
            url: url.to_string(),
            maybe_applied,
            source: Box::new(e),
        }
    } else {
        Error::Storage(format!("Redis at {url}: {e}").into())
    }
}

/// Sleeps a little before attempt `attempt + 1`: 0.1 ms doubling up to
/// ~25 ms, jittered so that colliding writers do not collide again.
pub(super) fn backoff(attempt: u32) {
    let cap = 100u64 << attempt.min(8);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut x = u64::from(nanos) ^ (std::process::id() as u64).rotate_left(32);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    std::thread::sleep(Duration::from_micros(x % cap + 1));
}

/// `url` without its password, for messages.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            u.to_string()
        }
        Err(_) => url.to_string(),
    }
}

/// Redis Cluster's hash slot of a hash tag.
fn slot(tag: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in tag {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

/// The master serving `slot`, from a `CLUSTER SLOTS` reply.
fn slot_owner(slots: &Value, slot: u16) -> Option<(String, u16)> {
    let Value::Array(ranges) = slots else {
        return None;
    };
    for range in ranges {
        let Value::Array(parts) = range else { continue };
        let (Some(Value::Int(start)), Some(Value::Int(end)), Some(Value::Array(master))) =
            (parts.first(), parts.get(1), parts.get(2))
        else {
            continue;
        };
        if (*start..=*end).contains(&i64::from(slot)) {
            let host = match master.first()? {
                Value::BulkString(b) => String::from_utf8(b.clone()).ok()?,
                Value::SimpleString(s) => s.clone(),
                _ => return None,
            };
            let Value::Int(port) = master.get(1)? else {
                return None;
            };
            return Some((host, u16::try_from(*port).ok()?));
        }
    }
    None
}

impl Store for RedisStore {
    fn write<R>(&self, mut f: impl FnMut(&mut dyn Tables) -> Result<R>) -> Result<R> {
        self.run(|tx| f(tx))
    }

    fn read<R>(&self, mut f: impl FnMut(&dyn ReadTables) -> Result<R>) -> Result<R> {
        self.run(|tx| f(&*tx))
    }

    /// Nothing to do: Redis' own persistence settings (RDB, AOF) decide
    /// durability.
    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn location(&self) -> Option<&Path> {
        Some(&self.location)
    }
}

/// Key names of one namespace.
#[derive(Debug)]
struct Keys {
    /// `{NS}:`
    prefix: Vec<u8>,
}

impl Keys {
    fn new(ns: &str) -> Keys {
        Keys {
            prefix: format!("{{{ns}}}:").into_bytes(),
        }
    }

    fn key(&self, kind: &[u8], rest: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.prefix.len() + kind.len() + rest.len());
        k.extend_from_slice(&self.prefix);
        k.extend_from_slice(kind);
        k.extend_from_slice(rest);
        k
    }

    fn meta(&self, name: &str) -> Vec<u8> {
        self.key(b"m:", name.as_bytes())
    }
    fn counter(&self) -> Vec<u8> {
        self.key(b"n", b"")
    }
    fn url(&self, digest: u128) -> Vec<u8> {
        self.key(b"u:", &digest.to_be_bytes())
    }
    fn url_times(&self) -> Vec<u8> {
        self.key(b"ut", b"")
    }
    fn title(&self, digest: u128) -> Vec<u8> {
        self.key(b"t:", &digest.to_be_bytes())
    }
    fn block(&self, table: usize, key: u64) -> Vec<u8> {
        let mut rest = [0u8; 9];
        rest[0] = table as u8;
        rest[1..].copy_from_slice(&key.to_be_bytes());
        self.key(b"b:", &rest)
    }
    fn band_bucket(&self, bucket: u32) -> Vec<u8> {
        self.key(b"l:", &bucket.to_be_bytes()[1..])
    }
    /// The hash holding document `id`'s record, and its field there.
    fn doc(&self, id: DocId) -> (Vec<u8>, Vec<u8>) {
        (
            self.key(b"d:", (id >> DOC_BUCKET_BITS).to_string().as_bytes()),
            num(id & DOC_BUCKET_MASK),
        )
    }
    fn order(&self) -> Vec<u8> {
        self.key(b"o", b"")
    }
    fn count(&self) -> Vec<u8> {
        self.key(b"c", b"")
    }
    fn versions(&self) -> Vec<u8> {
        self.key(b"v", b"")
    }
    fn commits(&self) -> Vec<u8> {
        self.key(b"vc", b"")
    }
}

fn decimal_id(bytes: &[u8]) -> Result<DocId> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::Corrupt(format!("document id {:?}", String::from_utf8_lossy(bytes))))
}

/// The part of a band key its bucket entry keeps: bits 16 to 47 (the top
/// 18 already chose the bucket). The 48 bits together tell bands apart but
/// for a chance of ~2^-48 per pair; a band that matches by chance only
/// adds a candidate, which the sketch then rejects.
fn band_tag(key: u64) -> [u8; BAND_TAG] {
    let b = key.to_be_bytes();
    [b[2], b[3], b[4], b[5]]
}

/// Bytes of [`band_tag`].
const BAND_TAG: usize = 4;

/// Bytes of a document id in a packed entry: ids up to 2^40 (a trillion
/// documents, gaps included).
const ID_BYTES: usize = 5;

/// Ids a packed entry holds.
fn check_id(id: DocId) -> Result<()> {
    if id >> (8 * ID_BYTES) != 0 {
        return Err(Error::Storage(
            format!("document id {id} does not fit the Redis store's 40-bit ids").into(),
        ));
    }
    Ok(())
}

/// The band bucket of a band key: its top [`BAND_BUCKET_BITS`] bits.
fn bucket_of(key: u64) -> u32 {
    (key >> (64 - BAND_BUCKET_BITS)) as u32
}

/// A packed value: entries of a `head`-byte big-endian number (fingerprint,
/// band tag) and an [`ID_BYTES`]-byte big-endian id.
fn unpack(bytes: &[u8], head: usize, what: &str) -> Result<Vec<(u64, DocId)>> {
    let size = head + ID_BYTES;
    if !bytes.len().is_multiple_of(size) {
        return Err(Error::Corrupt(format!("{what} of {} bytes", bytes.len())));
    }
    let be = |b: &[u8]| b.iter().fold(0u64, |n, &x| (n << 8) | u64::from(x));
    Ok(bytes
        .chunks_exact(size)
        .map(|e| (be(&e[..head]), be(&e[head..])))
        .collect())
}

/// The packed bytes of a block list or band bucket (empty: delete the key).
fn encode_packed(val: &Val) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut push = |head: &[u8], id: DocId| -> Result<()> {
        check_id(id)?;
        out.extend_from_slice(head);
        out.extend_from_slice(&id.to_be_bytes()[8 - ID_BYTES..]);
        Ok(())
    };
    match val {
        Val::Block(entries) => {
            for &(fp, id) in entries {
                push(&fp.to_be_bytes(), id)?;
            }
        }
        Val::Bucket(entries) => {
            for &(tag, id) in entries {
                push(&tag.to_be_bytes(), id)?;
            }
        }
        _ => return Err(Error::Corrupt("not a packed value".into())),
    }
    Ok(out)
}

fn bulk(v: Value) -> Result<Option<Vec<u8>>> {
    match v {
        Value::Nil => Ok(None),
        Value::BulkString(b) => Ok(Some(b)),
        Value::SimpleString(s) => Ok(Some(s.into_bytes())),
        Value::Int(i) => Ok(Some(i.to_string().into_bytes())),
        other => Err(Error::Corrupt(format!("unexpected Redis reply {other:?}"))),
    }
}

fn members(v: Value) -> Result<Vec<Vec<u8>>> {
    match v {
        Value::Nil => Ok(Vec::new()),
        Value::Array(items) | Value::Set(items) => items
            .into_iter()
            .map(|i| bulk(i)?.ok_or_else(|| Error::Corrupt("nil sorted set member".into())))
            .collect(),
        other => Err(Error::Corrupt(format!("unexpected Redis reply {other:?}"))),
    }
}

/// What a transaction reads, by table.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Url(u128),
    Title(u128),
    Block(usize, u64),
    /// A band bucket (`{NS}:l:BUCKET3`), by number.
    Bucket(u32),
    Doc(DocId),
    Meta(String),
}

impl Key {
    /// Whether the key is a packed string (block list, band bucket),
    /// read with `MGET` and written whole with `MSET` at the commit.
    fn packed(&self) -> bool {
        matches!(self, Key::Block(..) | Key::Bucket(_))
    }
}

/// A key's value as this transaction sees it: as read, with its own
/// writes applied.
#[derive(Debug)]
enum Val {
    Url(Option<UrlRecord>),
    /// The newest `limit` ids, newest first; `more`: older ones exist.
    Title {
        newest: Vec<DocId>,
        limit: usize,
        more: bool,
    },
    /// (fingerprint, id), in stored order.
    Block(Vec<(u64, DocId)>),
    /// (band tag, id), in stored order; at most [`BAND_POSTINGS`] per tag.
    Bucket(Vec<(u32, DocId)>),
    Doc(Option<Box<DocRecord>>),
    Meta(Option<Vec<u8>>),
}

/// A write of this transaction, replayed on a key read after it.
#[derive(Clone, Debug)]
enum Op {
    PutUrl(UrlRecord),
    DelUrl,
    AddId(DocId),
    RemoveId(DocId),
    AddPosting(u64, DocId),
    RemovePosting(u64, DocId),
    AddTagged(u32, DocId),
    RemoveTagged(u32, DocId),
    PutDoc(Box<DocRecord>),
    DelDoc,
    SetMeta(Vec<u8>),
}

impl Val {
    /// Applies a write; false when the value can no longer be trusted
    /// (a title list that lost an entry from its window) and must be read
    /// again.
    fn apply(&mut self, op: &Op) -> bool {
        match (self, op) {
            (Val::Url(v), Op::PutUrl(r)) => *v = Some(r.clone()),
            (Val::Url(v), Op::DelUrl) => *v = None,
            (Val::Title { newest, .. }, Op::AddId(id)) => newest.insert(0, *id),
            (Val::Title { newest, more, .. }, Op::RemoveId(id)) => {
                let before = newest.len();
                newest.retain(|x| x != id);
                if newest.len() != before && *more {
                    return false;
                }
            }
            (Val::Block(v), Op::AddPosting(fp, id)) => v.push((*fp, *id)),
            (Val::Block(v), Op::RemovePosting(fp, id)) => v.retain(|e| *e != (*fp, *id)),
            (Val::Bucket(v), Op::AddTagged(tag, id)) => {
                v.push((*tag, *id));
                // The band's oldest entries beyond its cap go.
                let mut same: Vec<DocId> = v.iter().filter(|e| e.0 == *tag).map(|e| e.1).collect();
                if same.len() > BAND_POSTINGS {
                    same.sort_unstable();
                    let gone = &same[..same.len() - BAND_POSTINGS];
                    v.retain(|e| e.0 != *tag || !gone.contains(&e.1));
                }
            }
            (Val::Bucket(v), Op::RemoveTagged(tag, id)) => v.retain(|e| *e != (*tag, *id)),
            (Val::Doc(v), Op::PutDoc(r)) => *v = Some(r.clone()),
            (Val::Doc(v), Op::DelDoc) => *v = None,
            (Val::Meta(v), Op::SetMeta(b)) => *v = Some(b.clone()),
            _ => {}
        }
        true
    }
}

/// The commit: checks that every version the transaction read is
/// unchanged (else returns 0, having written nothing), sets the versions of
/// the stripes it writes to a new commit number (`INCR` of `{NS}:vc`,
/// unique, so every write changes its stripes' values), and runs its
/// writes. Atomic, as every Redis
/// script. Versions are read and written with one `HMGET`/`HSET` per
/// 2000 stripes (Lua passes at most 8000 values to a call): a script's
/// cost is mostly per `redis.call`.
///
/// KEYS[1]: the version hash, KEYS[2]: the commit counter. ARGV: n, then n (stripe, version) pairs, then
/// m, then m stripes to bump, then the writes, each as its argument count
/// followed by its arguments (merged by [`merge_writes`]). Two writes are
/// this script's own: `HSETC hash order count bucket field value...`
/// stores records in a bucket hash, adds to the count what `HSET` says it
/// added and lists the bucket in the order index; `HDELC hash order count
/// bucket field...` removes them, subtracts what `HDEL` removed and
/// unlists the bucket once empty.
const COMMIT: &str = r#"
local v = KEYS[1]
local CH = 2000
local n = tonumber(ARGV[1])
local i = 2
while n > 0 do
  local c = math.min(n, CH)
  local fields = {}
  for j = 1, c do fields[j] = ARGV[i + 2 * (j - 1)] end
  local got = redis.call('HMGET', v, unpack(fields))
  for j = 1, c do
    if (got[j] or '0') ~= ARGV[i + 2 * (j - 1) + 1] then return 0 end
  end
  i = i + 2 * c
  n = n - c
end
local m = tonumber(ARGV[i])
i = i + 1
local token = 0
if m > 0 then token = redis.call('INCR', KEYS[2]) end
while m > 0 do
  local c = math.min(m, CH)
  local kv = {}
  for j = 1, c do
    kv[2 * j - 1] = ARGV[i + j - 1]
    kv[2 * j] = token
  end
  redis.call('HSET', v, unpack(kv))
  i = i + c
  m = m - c
end
local nargs = #ARGV
while i <= nargs do
  local argc = tonumber(ARGV[i])
  local verb = ARGV[i + 1]
  if verb == 'HSETC' then
    local h, o, c, b = ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
    local added = redis.call('HSET', h, unpack(ARGV, i + 6, i + argc))
    if added > 0 then redis.call('INCRBY', c, added) end
    redis.call('ZADD', o, b, b)
  elseif verb == 'HDELC' then
    local h, o, c, b = ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
    local gone = redis.call('HDEL', h, unpack(ARGV, i + 6, i + argc))
    if gone > 0 then redis.call('DECRBY', c, gone) end
    if redis.call('EXISTS', h) == 0 then redis.call('ZREM', o, b) end
  else
    redis.call(unpack(ARGV, i + 1, i + argc))
  end
  i = i + 1 + argc
end
return 1
"#;

/// Most items (members, keys, pairs) one merged command carries: the
/// commit script passes a command's arguments through Lua's stack, which
/// holds 8000.
const MERGE_ITEMS: usize = 2000;

/// Fewer, larger commands with the same effect: every write command names
/// one key (its second argument); per key, consecutive `ZADD`s (or
/// `ZREM`s) become one, in order; keys written by exactly one `SET` are
/// set together by `MSET`, keys only deleted by one `DEL`; consecutive
/// `HSETC`s (`HDELC`s) of one bucket hash become one. Commands on
/// different keys are independent, so only each key's own order is kept.
/// A batch of 1000 new documents then costs a few `MSET`s for its ~14,000
/// block lists and band buckets, ~16 `HSETC`s for its records, and one
/// command per title, instead of ~15 commands per document.
fn merge_writes<'w>(writes: impl IntoIterator<Item = &'w Vec<Vec<u8>>>) -> Vec<Vec<Vec<u8>>> {
    let mut order: Vec<&[u8]> = Vec::new();
    let mut per_key: FxHashMap<&[u8], Vec<&Vec<Vec<u8>>>> = FxHashMap::default();
    for w in writes {
        let Some(key) = w.get(1) else { continue };
        per_key
            .entry(key.as_slice())
            .or_insert_with(|| {
                order.push(key.as_slice());
                Vec::new()
            })
            .push(w);
    }
    let mut out: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut mset: Vec<Vec<u8>> = Vec::new();
    let mut del: Vec<Vec<u8>> = Vec::new();
    for key in order {
        let cmds = &per_key[key];
        match cmds.as_slice() {
            [one] if one[0] == b"SET" && one.len() == 3 => {
                mset.push(one[1].clone());
                mset.push(one[2].clone());
                continue;
            }
            [one] if one[0] == b"DEL" && one.len() == 2 => {
                del.push(one[1].clone());
                continue;
            }
            _ => {}
        }
        let mut i = 0;
        while i < cmds.len() {
            let verb = &cmds[i][0];
            let mut merged = cmds[i].clone();
            let mut j = i + 1;
            // Arguments before the items, and arguments per item.
            let shape = match verb.as_slice() {
                b"ZADD" => Some((2, 2)),
                b"ZREM" => Some((2, 1)),
                b"HSETC" => Some((5, 2)),
                b"HDELC" => Some((5, 1)),
                _ => None,
            };
            if let Some((prefix, arity)) = shape {
                while j < cmds.len()
                    && cmds[j][0] == *verb
                    && cmds[j].len() > prefix
                    && (merged.len() - prefix) / arity < MERGE_ITEMS
                {
                    merged.extend_from_slice(&cmds[j][prefix..]);
                    j += 1;
                }
            }
            out.push(merged);
            i = j;
        }
    }
    for pairs in mset.chunks(2 * MERGE_ITEMS) {
        let mut c = vec![b"MSET".to_vec()];
        c.extend_from_slice(pairs);
        out.push(c);
    }
    for keys in del.chunks(MERGE_ITEMS) {
        let mut c = vec![b"DEL".to_vec()];
        c.extend_from_slice(keys);
        out.push(c);
    }
    out
}

/// Version stripes: every versioned key maps to one of these counters in
/// `{NS}:v`. More stripes, fewer false conflicts; 2^16 cost ~4 MB.
const STRIPES: u64 = 1 << 16;

/// A key's version stripe: FNV-1a of its name (the same in every process).
fn stripe(key: &[u8]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % STRIPES) as u32
}

fn num(n: impl std::fmt::Display) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// One attempt of a transaction on one connection.
struct Tx<'a> {
    conn: RefCell<Connection>,
    store: &'a RedisStore,
    cache: RefCell<FxHashMap<Key, Val>>,
    /// Every write so far, per key, to replay on a later read of the key.
    ops: FxHashMap<Key, Vec<Op>>,
    /// Version of each stripe as first read (`0` when never bumped).
    versions: RefCell<FxHashMap<u32, Vec<u8>>>,
    /// Stripes this transaction writes.
    written: FxHashSet<u32>,
    /// Queued write commands, run by the commit script.
    writes: RefCell<Vec<Vec<Vec<u8>>>>,
    /// Packed keys written: set whole at the commit.
    dirty: FxHashSet<Key>,
    /// Document ids reserved and not yet handed out: [next, end).
    ids: Cell<(DocId, DocId)>,
    /// Ids the next reservation takes (doubling, for transactions that
    /// did not announce how many documents they may insert).
    chunk: Cell<u64>,
    round_trips: Cell<u64>,
}

impl<'a> Tx<'a> {
    fn new(conn: Connection, store: &'a RedisStore) -> Tx<'a> {
        Tx {
            conn: RefCell::new(conn),
            store,
            cache: RefCell::new(FxHashMap::default()),
            ops: FxHashMap::default(),
            versions: RefCell::new(FxHashMap::default()),
            written: FxHashSet::default(),
            writes: RefCell::new(Vec::new()),
            dirty: FxHashSet::default(),
            ids: Cell::new((0, 0)),
            chunk: Cell::new(1),
            round_trips: Cell::new(0),
        }
    }

    fn into_conn(self) -> Connection {
        self.conn.into_inner()
    }

    fn keys(&self) -> &Keys {
        &self.store.keys
    }

    fn query(&self, pipe: &Pipeline) -> Result<Vec<Value>> {
        self.round_trips.set(self.round_trips.get() + 1);
        let mut conn = self.conn.borrow_mut();
        pipe.query::<Vec<Value>>(&mut *conn)
            .map_err(|e| self.store.fail(e, false))
    }

    /// Runs the commit script; false when a version changed (nothing was
    /// written). A transaction that read no versioned key and wrote nothing
    /// has nothing to check.
    fn commit(&self) -> Result<bool> {
        // Packed keys written without being read (purges, bulk loads) are
        // read now, with their versions, so that their new values are
        // built on what the script validates.
        let missing: Vec<Key> = {
            let cache = self.cache.borrow();
            self.dirty
                .iter()
                .filter(|k| !cache.contains_key(*k))
                .cloned()
                .collect()
        };
        self.fetch(&missing, crate::TITLE_CANDIDATES, 0)?;
        let mut packed = Vec::with_capacity(self.dirty.len());
        {
            let cache = self.cache.borrow();
            for k in &self.dirty {
                let val = cache
                    .get(k)
                    .ok_or_else(|| Error::Corrupt("a written key is missing".into()))?;
                let bytes = encode_packed(val)?;
                let rk = self.redis_key(k);
                packed.push(if bytes.is_empty() {
                    vec![b"DEL".to_vec(), rk]
                } else {
                    vec![b"SET".to_vec(), rk, bytes]
                });
            }
        }
        let versions = self.versions.borrow();
        let writes = self.writes.borrow();
        let nothing_written = writes.is_empty() && packed.is_empty();
        if nothing_written && versions.is_empty() {
            return Ok(true);
        }
        let script = &self.store.commit;
        let mut inv = script.key(self.keys().versions());
        inv.key(self.keys().commits());
        inv.arg(versions.len());
        for (s, v) in versions.iter() {
            inv.arg(*s).arg(v.as_slice());
        }
        inv.arg(self.written.len());
        for s in &self.written {
            inv.arg(*s);
        }
        for w in merge_writes(writes.iter().chain(&packed)) {
            inv.arg(w.len());
            for a in &w {
                inv.arg(a.as_slice());
            }
        }
        self.round_trips.set(self.round_trips.get() + 1);
        let mut conn = self.conn.borrow_mut();
        match inv.invoke::<i64>(&mut *conn) {
            Ok(r) => Ok(r == 1),
            Err(e) => {
                let sent = !e.is_connection_refusal();
                Err(self.store.fail(e, sent && !nothing_written))
            }
        }
    }

    /// The Redis key behind a logical key.
    fn redis_key(&self, key: &Key) -> Vec<u8> {
        let k = self.keys();
        match key {
            Key::Url(d) => k.url(*d),
            Key::Title(d) => k.title(*d),
            Key::Block(t, b) => k.block(*t, *b),
            Key::Bucket(b) => k.band_bucket(*b),
            Key::Doc(id) => k.doc(*id).0,
            Key::Meta(name) if name == NEXT_ID_META => k.counter(),
            Key::Meta(name) => k.meta(name),
        }
    }

    /// Reads every key of `wanted` not yet known, and the versions of
    /// their stripes not yet known (first, in the same pipeline, so any
    /// write after the version was read shows at the commit), in one round
    /// trip; applies this transaction's own writes to what was read.
    /// Documents are not versioned: a record never changes once written,
    /// and a check learns of a document only from an index key, which is.
    /// `reserve`: document ids to reserve in the same round trip.
    fn fetch(&self, wanted: &[Key], title_limit: usize, reserve: u64) -> Result<()> {
        let mut todo: Vec<&Key> = Vec::new();
        {
            let cache = self.cache.borrow();
            let mut seen = FxHashSet::default();
            for k in wanted {
                if !cache.contains_key(k) && seen.insert(k) {
                    todo.push(k);
                }
            }
        }
        if todo.is_empty() && reserve == 0 {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        let mut stripes: Vec<u32> = Vec::new();
        {
            let versions = self.versions.borrow();
            let mut seen = FxHashSet::default();
            for k in &todo {
                if !matches!(k, Key::Doc(_)) {
                    let s = stripe(&self.redis_key(k));
                    if !versions.contains_key(&s) && seen.insert(s) {
                        stripes.push(s);
                    }
                }
            }
        }
        if !stripes.is_empty() {
            pipe.cmd("HMGET").arg(self.keys().versions()).arg(&stripes);
        }
        // Packed keys: all in one `MGET` (one command, however many keys).
        let (packed, todo): (Vec<&Key>, Vec<&Key>) = todo.into_iter().partition(|k| k.packed());
        if !packed.is_empty() {
            let mut mget = redis::cmd("MGET");
            for k in &packed {
                mget.arg(self.redis_key(k));
            }
            pipe.add_command(mget);
        }
        for k in &todo {
            let rk = self.redis_key(k);
            match k {
                Key::Block(..) | Key::Bucket(_) => {}
                Key::Url(_) | Key::Meta(_) => {
                    pipe.cmd("GET").arg(rk);
                }
                Key::Doc(id) => {
                    pipe.cmd("HGET").arg(rk).arg(self.keys().doc(*id).1);
                }
                Key::Title(_) => {
                    // One more than wanted (and than this transaction
                    // removes), to learn whether older ids exist.
                    pipe.cmd("ZRANGE")
                        .arg(rk)
                        .arg(0)
                        .arg(title_limit + self.removes(k))
                        .arg("REV");
                }
            }
        }
        if reserve > 0 {
            pipe.cmd("INCRBY").arg(self.keys().counter()).arg(reserve);
        }
        let mut replies = self.query(&pipe)?.into_iter();
        let mut next = || {
            replies
                .next()
                .ok_or_else(|| Error::Corrupt("missing Redis reply".into()))
        };
        if !stripes.is_empty() {
            let got = match next()? {
                Value::Array(items) => items,
                other => return Err(Error::Corrupt(format!("HMGET replied {other:?}"))),
            };
            if got.len() != stripes.len() {
                return Err(Error::Corrupt("HMGET reply of another length".into()));
            }
            let mut versions = self.versions.borrow_mut();
            for (s, v) in stripes.iter().zip(got) {
                versions.insert(*s, bulk(v)?.unwrap_or_else(|| b"0".to_vec()));
            }
        }
        let mut fetched = Vec::with_capacity(todo.len() + packed.len());
        let mut values = Vec::new();
        if !packed.is_empty() {
            values = match next()? {
                Value::Array(items) if items.len() == packed.len() => items,
                other => return Err(Error::Corrupt(format!("MGET replied {other:?}"))),
            };
        }
        let mut pairs: Vec<(&Key, Value)> = packed.iter().copied().zip(values).collect();
        for k in &todo {
            pairs.push((*k, next()?));
        }
        for (k, reply) in pairs {
            let mut val = self.decode(k, reply, title_limit)?;
            for op in self.ops.get(k).into_iter().flatten() {
                val.apply(op);
            }
            if let Val::Title { newest, .. } = &mut val {
                newest.truncate(title_limit);
            }
            fetched.push((k.clone(), val));
        }
        if reserve > 0 {
            let end = match next()? {
                Value::Int(n) if n >= 0 => n as u64,
                other => return Err(Error::Corrupt(format!("INCRBY replied {other:?}"))),
            };
            self.ids.set((end.saturating_sub(reserve), end));
        }
        self.cache.borrow_mut().extend(fetched);
        Ok(())
    }

    /// Removals this transaction made from `key` (a title list fetches that
    /// many more ids, to still fill its window).
    fn removes(&self, key: &Key) -> usize {
        self.ops
            .get(key)
            .map_or(0, |o| o.iter().filter(|op| matches!(op, Op::RemoveId(_))).count())
    }

    fn decode(&self, key: &Key, reply: Value, title_limit: usize) -> Result<Val> {
        Ok(match key {
            Key::Url(_) => Val::Url(bulk(reply)?.map(|b| UrlRecord::decode(&b)).transpose()?),
            Key::Doc(_) => Val::Doc(
                bulk(reply)?
                    .map(|b| DocRecord::decode(&b).map(Box::new))
                    .transpose()?,
            ),
            Key::Meta(name) if name == NEXT_ID_META => Val::Meta(
                bulk(reply)?
                    .map(|b| decimal_id(&b).map(|id| id.to_le_bytes().to_vec()))
                    .transpose()?,
            ),
            Key::Meta(_) => Val::Meta(bulk(reply)?),
            Key::Title(_) => {
                let ids = members(reply)?
                    .iter()
                    .map(|m| decimal_id(m))
                    .collect::<Result<Vec<_>>>()?;
                Val::Title {
                    more: ids.len() > title_limit + self.removes(key),
                    newest: ids,
                    limit: title_limit,
                }
            }
            Key::Block(..) => {
                let bytes = bulk(reply)?.unwrap_or_default();
                Val::Block(unpack(&bytes, 8, "block list")?)
            }
            Key::Bucket(_) => {
                let bytes = bulk(reply)?.unwrap_or_default();
                let entries = unpack(&bytes, BAND_TAG, "band bucket")?;
                Val::Bucket(entries.into_iter().map(|(tag, id)| (tag as u32, id)).collect())
            }
        })
    }

    /// Runs `read` on the value of `key`, fetching it first if needed.
    fn with<T>(&self, key: Key, read: impl FnOnce(&Val) -> T) -> Result<T> {
        if !self.cache.borrow().contains_key(&key) {
            self.fetch(std::slice::from_ref(&key), crate::TITLE_CANDIDATES, 0)?;
        }
        let cache = self.cache.borrow();
        let val = cache
            .get(&key)
            .ok_or_else(|| Error::Corrupt("a fetched key is missing".into()))?;
        Ok(read(val))
    }

    /// Records a write of `key`: replayed on later reads, applied to the
    /// cached value if any, its stripe bumped at commit (documents are not
    /// versioned), and `cmd` queued.
    fn record(&mut self, key: Key, op: Op, cmd: Vec<Vec<u8>>) {
        if !matches!(key, Key::Doc(_)) {
            self.written.insert(stripe(&self.redis_key(&key)));
        }
        self.writes.get_mut().push(cmd);
        let cache = self.cache.get_mut();
        match cache.get_mut(&key) {
            Some(v) => {
                if !v.apply(&op) {
                    cache.remove(&key);
                }
            }
            // A whole new value needs no read to be known (a batch then
            // reads its own new documents without a round trip).
            None => {
                let whole = match &op {
                    Op::PutDoc(r) => Some(Val::Doc(Some(r.clone()))),
                    Op::DelDoc => Some(Val::Doc(None)),
                    _ => None,
                };
                if let Some(v) = whole {
                    cache.insert(key.clone(), v);
                }
            }
        }
        self.ops.entry(key).or_default().push(op);
    }

    /// Records a write of a packed key: replayed on later reads, applied to
    /// the cached value if any, its stripe bumped and its whole new value
    /// set at the commit.
    fn record_packed(&mut self, key: Key, op: Op) {
        self.written.insert(stripe(&self.redis_key(&key)));
        if let Some(v) = self.cache.get_mut().get_mut(&key) {
            v.apply(&op);
        }
        self.ops.entry(key.clone()).or_default().push(op);
        self.dirty.insert(key);
    }

    /// Queues a command that goes with a recorded write (index entries
    /// beside the main key).
    fn also(&mut self, cmd: Vec<Vec<u8>>) {
        self.writes.get_mut().push(cmd);
    }
}

impl ReadTables for Tx<'_> {
    fn prefetch(&self, keys: &Prefetch) -> Result<()> {
        let mut wanted =
            Vec::with_capacity(keys.urls.len() + keys.titles.len() + keys.blocks.len() + keys.bands.len());
        wanted.extend(keys.urls.iter().map(|&d| Key::Url(d)));
        wanted.extend(keys.titles.iter().map(|&d| Key::Title(d)));
        wanted.extend(keys.blocks.iter().map(|&(t, k)| Key::Block(t, k)));
        wanted.extend(keys.bands.iter().map(|&b| Key::Bucket(bucket_of(b))));
        let (next, end) = self.ids.get();
        let reserve = (keys.documents as u64).saturating_sub(end - next);
        self.fetch(&wanted, crate::TITLE_CANDIDATES, reserve)
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.with(Key::Meta(key.to_string()), |v| match v {
            Val::Meta(m) => m.clone(),
            _ => None,
        })
    }

    fn url(&self, digest: u128) -> Result<Option<UrlRecord>> {
        self.with(Key::Url(digest), |v| match v {
            Val::Url(u) => u.clone(),
            _ => None,
        })
    }

    fn title_docs(&self, digest: u128, limit: usize, out: &mut Vec<DocId>) -> Result<()> {
        let key = Key::Title(digest);
        let enough = match self.cache.borrow().get(&key) {
            Some(Val::Title { limit: l, more, .. }) => *l >= limit || !*more,
            _ => false,
        };
        if !enough {
            self.cache.borrow_mut().remove(&key);
            self.fetch(std::slice::from_ref(&key), limit, 0)?;
        }
        self.with(key, |v| {
            if let Val::Title { newest, .. } = v {
                out.extend(newest.iter().take(limit));
            }
        })
    }

    fn candidates(&self, table: usize, key: u64, out: &mut Vec<(Fingerprint, DocId)>) -> Result<()> {
        self.with(Key::Block(table, key), |v| {
            if let Val::Block(list) = v {
                out.extend(list.iter().map(|&(fp, id)| (Fingerprint(fp), id)));
            }
        })
    }

    /// The bucket's entries of this band, oldest first, the newest
    /// [`BAND_POSTINGS`] (a bucket written blind by a bulk load may hold
    /// more until its next write).
    fn band_docs(&self, key: u64, out: &mut Vec<DocId>) -> Result<()> {
        let tag = u32::from_be_bytes(band_tag(key));
        self.with(Key::Bucket(bucket_of(key)), |v| {
            if let Val::Bucket(entries) = v {
                let mut ids: Vec<DocId> = entries.iter().filter(|e| e.0 == tag).map(|e| e.1).collect();
                ids.sort_unstable();
                let excess = ids.len().saturating_sub(BAND_POSTINGS);
                out.extend_from_slice(&ids[excess..]);
            }
        })
    }

    fn doc(&self, id: DocId) -> Result<Option<DocRecord>> {
        self.with(Key::Doc(id), |v| match v {
            Val::Doc(d) => d.as_deref().cloned(),
            _ => None,
        })
    }

    /// The expired digests from `{NS}:ut` (not versioned: they only
    /// nominate; each URL key is then read with its version, so a URL
    /// recorded again meanwhile aborts the purge's transaction).
    fn urls_seen_before(&self, cutoff: u64, limit: usize, out: &mut Vec<u128>) -> Result<()> {
        let mut pipe = redis::pipe();
        pipe.cmd("ZRANGE")
            .arg(self.keys().url_times())
            .arg("-inf")
            .arg(format!("({cutoff}"))
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(limit);
        let reply = self.query(&pipe)?.pop().unwrap_or(Value::Nil);
        let mut keys = Vec::new();
        for m in members(reply)? {
            let d: [u8; 16] = m
                .as_slice()
                .try_into()
                .map_err(|_| Error::Corrupt(format!("URL digest of {} bytes", m.len())))?;
            let d = u128::from_be_bytes(d);
            out.push(d);
            keys.push(Key::Url(d));
        }
        self.fetch(&keys, crate::TITLE_CANDIDATES, 0)
    }

    /// The oldest buckets from `{NS}:o`, then every record of each
    /// (`HGETALL`), until `limit` documents are found. Records this
    /// transaction wrote or removed are seen as it left them. Two
    /// processes purging the same documents at once both remove them
    /// (harmlessly); the document count is kept by `HDEL`'s own count, so
    /// it stays exact.
    fn oldest_docs(&self, limit: usize, out: &mut Vec<(DocId, DocRecord)>) -> Result<()> {
        let per_bucket = DOC_BUCKET_MASK as usize + 1;
        let mut from = 0usize;
        let mut ids: Vec<DocId> = Vec::new();
        while ids.len() < limit {
            let want = (limit - ids.len()).div_ceil(per_bucket) + 1;
            let mut pipe = redis::pipe();
            pipe.cmd("ZRANGE")
                .arg(self.keys().order())
                .arg(from)
                .arg(from + want - 1);
            let reply = self.query(&pipe)?.pop().unwrap_or(Value::Nil);
            let buckets = members(reply)?
                .iter()
                .map(|m| decimal_id(m))
                .collect::<Result<Vec<_>>>()?;
            if buckets.is_empty() {
                break;
            }
            from += buckets.len();
            let mut pipe = redis::pipe();
            for &b in &buckets {
                pipe.cmd("HGETALL").arg(self.keys().doc(b << DOC_BUCKET_BITS).0);
            }
            let replies = self.query(&pipe)?;
            let mut cache = self.cache.borrow_mut();
            for (&b, reply) in buckets.iter().zip(replies) {
                let mut fields = members(reply)?.into_iter();
                while let (Some(f), Some(v)) = (fields.next(), fields.next()) {
                    let low = decimal_id(&f)?;
                    if low > DOC_BUCKET_MASK {
                        return Err(Error::Corrupt(format!("document field {low} in bucket {b}")));
                    }
                    let id = (b << DOC_BUCKET_BITS) | low;
                    ids.push(id);
                    // This transaction's own view of a record wins.
                    if let std::collections::hash_map::Entry::Vacant(e) = cache.entry(Key::Doc(id)) {
                        e.insert(Val::Doc(Some(Box::new(DocRecord::decode(&v)?))));
                    }
                }
            }
            if buckets.len() < want {
                break;
            }
        }
        ids.sort_unstable();
        ids.truncate(limit);
        for id in ids {
            if let Some(rec) = self.doc(id)? {
                out.push((id, rec));
            }
        }
        Ok(())
    }

    fn doc_count(&self) -> Result<u64> {
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(self.keys().count());
        match self.query(&pipe)?.pop() {
            None | Some(Value::Nil) => Ok(0),
            Some(v) => match bulk(v)? {
                Some(b) => Ok(decimal_id(&b).unwrap_or(0)),
                None => Ok(0),
            },
        }
    }
}

impl Tables for Tx<'_> {
    fn set_meta(&mut self, key: &str, value: &[u8]) -> Result<()> {
        let cmd = if key == NEXT_ID_META {
            let next = u64::from_le_bytes(
                value
                    .try_into()
                    .map_err(|_| Error::Corrupt(format!("next_id of {} bytes", value.len())))?,
            );
            vec![b"SET".to_vec(), self.keys().counter(), num(next)]
        } else {
            vec![b"SET".to_vec(), self.keys().meta(key), value.to_vec()]
        };
        self.record(Key::Meta(key.to_string()), Op::SetMeta(value.to_vec()), cmd);
        Ok(())
    }

    fn put_url(&mut self, digest: u128, rec: &UrlRecord) -> Result<()> {
        let cmd = vec![b"SET".to_vec(), self.keys().url(digest), rec.encode()];
        self.record(Key::Url(digest), Op::PutUrl(rec.clone()), cmd);
        let times = vec![
            b"ZADD".to_vec(),
            self.keys().url_times(),
            num(rec.first_seen),
            digest.to_be_bytes().to_vec(),
        ];
        self.also(times);
        Ok(())
    }

    fn remove_url(&mut self, digest: u128) -> Result<bool> {
        if self.url(digest)?.is_none() {
            return Ok(false);
        }
        let cmd = vec![b"DEL".to_vec(), self.keys().url(digest)];
        self.record(Key::Url(digest), Op::DelUrl, cmd);
        let times = vec![
            b"ZREM".to_vec(),
            self.keys().url_times(),
            digest.to_be_bytes().to_vec(),
        ];
        self.also(times);
        Ok(true)
    }

    fn add_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        let cmd = vec![b"ZADD".to_vec(), self.keys().title(digest), num(id), num(id)];
        self.record(Key::Title(digest), Op::AddId(id), cmd);
        Ok(())
    }

    fn remove_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        let cmd = vec![b"ZREM".to_vec(), self.keys().title(digest), num(id)];
        self.record(Key::Title(digest), Op::RemoveId(id), cmd);
        Ok(())
    }

    fn add_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        check_id(id)?;
        self.record_packed(Key::Block(table, key), Op::AddPosting(fp.0, id));
        Ok(())
    }

    fn remove_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        self.record_packed(Key::Block(table, key), Op::RemovePosting(fp.0, id));
        Ok(())
    }

    /// Adds the entry to the band's bucket, dropping the band's oldest
    /// entries beyond [`BAND_POSTINGS`] (the commit rewrites the bucket
    /// from its validated value, so the cap holds however it was written).
    fn add_band(&mut self, key: u64, id: DocId) -> Result<()> {
        check_id(id)?;
        let tag = u32::from_be_bytes(band_tag(key));
        self.record_packed(Key::Bucket(bucket_of(key)), Op::AddTagged(tag, id));
        Ok(())
    }

    fn remove_band(&mut self, key: u64, id: DocId) -> Result<()> {
        let tag = u32::from_be_bytes(band_tag(key));
        self.record_packed(Key::Bucket(bucket_of(key)), Op::RemoveTagged(tag, id));
        Ok(())
    }

    fn put_doc(&mut self, id: DocId, rec: DocRecord) -> Result<()> {
        let (hash, field) = self.keys().doc(id);
        let cmd = vec![
            b"HSETC".to_vec(),
            hash,
            self.keys().order(),
            self.keys().count(),
            num(id >> DOC_BUCKET_BITS),
            field,
            rec.encode(),
        ];
        self.record(Key::Doc(id), Op::PutDoc(Box::new(rec.clone())), cmd);
        Ok(())
    }

    fn remove_doc(&mut self, id: DocId) -> Result<()> {
        let (hash, field) = self.keys().doc(id);
        let cmd = vec![
            b"HDELC".to_vec(),
            hash,
            self.keys().order(),
            self.keys().count(),
            num(id >> DOC_BUCKET_BITS),
            field,
        ];
        self.record(Key::Doc(id), Op::DelDoc, cmd);
        Ok(())
    }

    /// Hands out an id reserved with `INCRBY {NS}:n` outside the
    /// transaction (by [`ReadTables::prefetch`] in the same round trip as
    /// the reads, or here, doubling the reservation each time): concurrent
    /// inserts do not conflict on the counter, and ids an aborted attempt
    /// or a duplicate leaves unused are only gaps.
    fn next_doc_id(&mut self) -> Result<DocId> {
        let (next, end) = self.ids.get();
        if next < end {
            self.ids.set((next + 1, end));
            return Ok(next);
        }
        let chunk = self.chunk.get();
        self.chunk.set((chunk * 2).min(1024));
        self.fetch(&[], crate::TITLE_CANDIDATES, chunk)?;
        let (next, end) = self.ids.get();
        if next >= end {
            return Err(Error::Corrupt("empty document id reservation".into()));
        }
        self.ids.set((next + 1, end));
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_values_round_trip_and_refuse_what_does_not_fit() -> Result<()> {
        let block = Val::Block(vec![
            (u64::MAX, 0),
            (1, (1 << 40) - 1),
            (0x0102_0304_0506_0708, 300),
        ]);
        let bytes = encode_packed(&block)?;
        assert_eq!(bytes.len(), 3 * (8 + ID_BYTES));
        let Val::Block(want) = &block else { unreachable!() };
        assert_eq!(&unpack(&bytes, 8, "block")?, want);
        let bucket = Val::Bucket(vec![(u32::MAX, 7), (0, 1 << 20)]);
        let bytes = encode_packed(&bucket)?;
        assert_eq!(bytes.len(), 2 * (BAND_TAG + ID_BYTES));
        assert_eq!(
            unpack(&bytes, BAND_TAG, "bucket")?,
            vec![(u64::from(u32::MAX), 7), (0, 1 << 20)]
        );
        assert!(unpack(&bytes[1..], BAND_TAG, "bucket").is_err());
        assert!(encode_packed(&Val::Block(vec![(1, 1 << 40)])).is_err());
        assert!(check_id(1 << 40).is_err() && check_id((1 << 40) - 1).is_ok());
        Ok(())
    }

    #[test]
    fn a_bucket_keeps_the_newest_entries_of_each_band() {
        let mut v = Val::Bucket(Vec::new());
        for id in 0..(BAND_POSTINGS as u64 + 3) {
            v.apply(&Op::AddTagged(1, id));
            v.apply(&Op::AddTagged(2, 1000 + id));
        }
        v.apply(&Op::RemoveTagged(2, 1000 + BAND_POSTINGS as u64 + 2));
        let Val::Bucket(entries) = v else { unreachable!() };
        let of = |tag: u32| {
            entries
                .iter()
                .filter(|e| e.0 == tag)
                .map(|e| e.1)
                .collect::<Vec<_>>()
        };
        assert_eq!(of(1), (3..BAND_POSTINGS as u64 + 3).collect::<Vec<_>>());
        assert_eq!(of(2), (1003..1000 + BAND_POSTINGS as u64 + 2).collect::<Vec<_>>());
    }

    #[test]
    fn cluster_slots_match_redis() {
        // The specification's CRC16 check value, and `CLUSTER KEYSLOT` of
        // a Redis 7.0 server.
        assert_eq!(slot(b"123456789"), 0x31c3);
        assert_eq!(slot(b"alpha"), 865);
        assert_eq!(slot(b"beta"), 15419);
    }

    #[test]
    fn merged_writes_keep_each_keys_order() {
        let c = |parts: &[&str]| parts.iter().map(|p| p.as_bytes().to_vec()).collect::<Vec<_>>();
        let writes = vec![
            c(&["ZADD", "a", "1", "x"]),
            c(&["SET", "d1", "r1"]),
            c(&["ZADD", "b", "1", "y"]),
            c(&["ZADD", "a", "2", "z"]),
            c(&["ZREM", "a", "x"]),
            c(&["ZADD", "a", "3", "x"]),
            c(&["SET", "d2", "r2"]),
            c(&["DEL", "d3"]),
            c(&["SET", "d1", "r1b"]),
        ];
        assert_eq!(
            merge_writes(&writes),
            vec![
                c(&["ZADD", "a", "1", "x", "2", "z"]),
                c(&["ZREM", "a", "x"]),
                c(&["ZADD", "a", "3", "x"]),
                c(&["SET", "d1", "r1"]),
                c(&["SET", "d1", "r1b"]),
                c(&["ZADD", "b", "1", "y"]),
                c(&["MSET", "d2", "r2"]),
                c(&["DEL", "d3"]),
            ]
        );
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(redact("redis://u:secret@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("redis://h:1/0"), "redis://h:1/0");
    }
}
