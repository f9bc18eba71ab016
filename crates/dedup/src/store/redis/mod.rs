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
//! | `{NS}:m:NAME` | string | metadata (`params`; `layout`, this layout's number: 3; `migrating`, held while a namespace of layout 2 is converted) |
//! | `{NS}:n` | string | the next document id (`INCRBY`) |
//! | `{NS}:v` | hash | version stripe (0 to 65535) -> number of the commit that last wrote it, see *Atomicity* |
//! | `{NS}:vc` | string | commits so far (`INCR`), the source of those numbers |
//! | `{NS}:u:DIGEST16` | string | URL tier: first seen (u64 LE) + URL as first given |
//! | `{NS}:ut` | sorted set | member DIGEST16, score first seen: the URL purge's index |
//! | `{NS}:t:DIGEST16` | sorted set | title tier: member `ID` (decimal), score id |
//! | `{NS}:k:T BUCKET2` | string | block table `T` (one byte), the low 14 bits of the block key: packed entries FP8 + ID5 |
//! | `{NS}:j:BUCKET3` | string | LSH bands whose key starts with these 16 bits: packed 7-byte entries, TAG20 (key bits 16-35) + ID36 |
//! | `{NS}:r:BUCKET` | string | records of documents `64 x BUCKET` to `64 x BUCKET + 63`: 64 4-byte big-endian ends, then the records ([`DocRecord::encode`](super::DocRecord::encode)) in slot order |
//! | `{NS}:o` | sorted set | member and score `BUCKET`: the record buckets in insertion order, for purging the oldest |
//! | `{NS}:c` | string | the number of stored documents |
//!
//! Why this layout (layout 3; layout 1 kept a sorted set per block key
//! and band bucket, a string per record and a sorted set of every id, at
//! 807 bytes per document; layout 2 a hash per 64 records, a list per
//! block key and 2^18 band buckets of 9-byte entries, at 451; see
//! docs/BENCHMARKS.md, "Redis store"):
//!
//! - Redis spends ~90 bytes on a key whatever its value (its entry in the
//!   keyspace, the key's name, the value's object) and rounds every value
//!   up to an allocator size class. So the layout has few keys, each
//!   holding many entries packed in a string: 65,536 block lists (four
//!   tables of 2^14), 65,536 band buckets and one record string per 64
//!   documents, about 2 keys per 10 documents at 1M. Layout 2 had 2^18
//!   block keys and 2^18 band buckets, 52 bytes per document in keys
//!   alone at 1M.
//! - Block lists and band buckets are read for a whole batch with one
//!   `MGET`. Redis' cost is mostly per command: one `MGET` of 14,000 keys
//!   costs about what 14,000 hash lookups cost. Reading a whole list is
//!   what a check does anyway (every candidate is compared); a list now
//!   also holds other block keys' postings (filtered out by their Hamming
//!   distance) and a bucket other bands (filtered by their tag): ~60
//!   postings and ~150 band entries at 1M documents, 1 KB each.
//! - New entries are appended on the server (`APPENDX` in the commit
//!   script: the value `GET`, extended and `SET` whole, since Redis' own
//!   `APPEND` leaves a string up to twice the room it needs); a list that
//!   lost entries (a purge, a band's cap) is written whole, as the value
//!   the transaction read minus its removals.
//! - Records are 64 to a string, by id: one key per 64 documents, and
//!   since ids are handed out in insertion order the buckets in `{NS}:o`
//!   are the insertion order (one entry per 64 documents). A check reads
//!   the one record it needs with a script (`lua/read_record.lua`: two
//!   `GETRANGE`s), not the bucket. Layout 2's hash of records cost ~60
//!   bytes of hash-table overhead per record unless the server's
//!   `hash-max-listpack-value` was raised above the record's size.
//! - A band entry is 7 bytes: 20 bits of tag (36 with the bucket's 16, a
//!   false match in ~7,000 lookups at 1M documents, one more candidate to
//!   verify) and a 36-bit id (68 billion ids per namespace, gaps
//!   included; beyond, inserts fail with [`Error::Storage`]).
//!
//! What it costs: a check reads and appends more bytes than in layout 2.
//! Measured at 1M documents, alternating with layout 2 in one session:
//! 0.71-0.88x the checks per second (the larger the batch, the closer),
//! the same speed for bulk loads; the memory is 0.76x. Crawls that want
//! the speed run [`super::ReplicatedStore`], whose checks are in memory.
//!
//! A namespace of layout 2 is converted when opened (`migrate.rs`): each
//! old key's entries appended to its new key and the old key deleted in
//! one script call, so a conversion killed midway resumes at the next
//! open. Stop every process of the older version first.
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
//! | part | bytes per document (layout 3) | layout 2 |
//! | --- | --- | --- |
//! | records (`r:`; 168-byte records with the 8-bit sketch's 144 bytes) | 193 | 234 |
//! | band buckets (`j:`; 10 entries of 7 bytes + keys) | 83 | 114 |
//! | block lists (`k:`; 4 entries of 13 bytes + keys) | 61 | 77 |
//! | version stripes (`v`, fixed ~3 MB) and insertion order (`o`) | 4 | 5 |
//! | `used_memory` growth per document (whole 1M; second half) | 344; 331 | 451; 399 |
//!
//! The URL and title tiers add, per document having them: URL record 168,
//! URL first-seen index 120, a distinct title 115. A crawled page's
//! record also holds its extent and outline (66 bytes, [`crate::Extent`])
//! and a longer URL; the bench's texts have none. The record, with the
//! sketch every candidate is verified against, is the largest part, so
//! the 200 bytes per document of issue 9 are out of reach while the
//! sketch is kept in Redis.

mod conn;
mod layout;
mod migrate;
mod tables;
mod tx;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use redis::{Connection, Value};

pub(super) use self::conn::{backoff, classify, for_each_key, open_client};
pub use self::conn::{clear_namespace, connect_namespace, redact};
use self::layout::{Keys, LAYOUT, part_of};
use self::tx::{COMMIT, READ_RECORD};
use super::{ReadTables, Store, Tables};
use crate::error::{Error, Result};

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
    /// `lua/read_record.lua`: its hash, for `EVALSHA` in read pipelines.
    read_record: redis::Script,
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
            read_record: redis::Script::new(READ_RECORD),
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
