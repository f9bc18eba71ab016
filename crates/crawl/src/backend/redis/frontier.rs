//! The shared frontier of `crawl --redis`: many worker processes, on one
//! machine or many, take URLs from one frontier in Redis, next to the dedup
//! tiers of a [`simcrawl_dedup::RedisStore`] under the same namespace.
//!
//! # Key layout
//!
//! Every key starts with `{NS}:f:` (`NS` is `redis.namespace`; the braces
//! make it the Redis Cluster hash tag, the store's keys use the same one,
//! so all of a crawl's keys live in one slot). `HOST` is
//! `scheme://host:port`.
//!
//! | key | type | content |
//! | --- | --- | --- |
//! | `{NS}:f:q:HOST` | list | the host's queue: entries `FLAG ATTEMPTS DEPTH URL` |
//! | `{NS}:f:ready` | sorted set | hosts with queued entries and a free slot, score = next allowed start (ms) |
//! | `{NS}:f:next` | hash | host -> earliest start of its next fetch (ms, server clock) |
//! | `{NS}:f:busy` | hash | host -> leases in flight (its concurrency across all workers) |
//! | `{NS}:f:delay` | hash | host -> robots.txt Crawl-delay (ms) a worker learnt |
//! | `{NS}:f:seq` | string | the last lease id (`INCR`) |
//! | `{NS}:f:lease` | hash | lease id -> `HOST \t ENTRY` |
//! | `{NS}:f:leases` | sorted set | lease id, score = expiry (ms, server clock) |
//! | `{NS}:f:later` | sorted set | `HOST \t ENTRY` put back after a transient failure, score = due time |
//! | `{NS}:f:stats` | hash | merged counters (`fetched`, `kept`, `dup_title`, `error:KIND`, ... `leased`, `reclaimed`, `started_ms`, `last_ms`) |
//! | `{NS}:f:w:WORKER` | hash | a worker's last applied batch number (`ack`) and its outputs' offsets and counters (`state`) |
//! | `{NS}:f:once:TOKEN` | string | an unnumbered ack that was applied (kept a day), so that its retry is not applied again |
//! | `{NS}:f:workers` | hash | worker -> time of its last batch (ms) |
//! | `{NS}:f:asking` | hash | worker -> time of its last lease call (ms); those of the last second share each host's slots |
//! | `{NS}:f:dust` | hash | DUST rule `HOST RULE` -> `learnt N` (N examples) or `blocked` (blocked wins: never set back to learnt) |
//! | `{NS}:f:ex:HOST RULE` | set | digests of the URLs that were examples of a candidate rule, pooled from all workers until it is learnt (`crawl.dust.min_examples` of them) or blocked |
//! | `{NS}:f:imgs` | list | `HOST RULE IMAGE`: the digest of a kept URL's image under a rule in force, appended by the worker that kept it, read by the others from where they stopped (they fold that URL as known) |
//! | `{NS}:f:dustv` | string | how many acks changed `dust` or `imgs` so far: every ack answers with it, so a worker takes up a rule another one learnt at its next batch |
//! | `{NS}:f:rw:HOST RULE` | hash | the URLs a learnt rule rewrote: URL -> `HOST \t ENTRY`, the entry that gives it back if the rule is withdrawn |
//! | `{NS}:f:tpl` | hash | site templates: host -> JSON of its learnt blocks |
//! | `{NS}:f:learn` | hash | the learners' named blobs (none written yet; read for what older versions saved whole) |
//! | `{NS}:f:hints` | hash | URL -> what the last sitemap listing it said of it: `crate::listing::Hints::stored` JSON (`url`, `lastmod`, `changefreq`, `priority`) |
//! | `{NS}:f:listings` | hash | sitemap or feed URL read -> its kind (`crate::listing::Kind::as_str`: `rss`, `atom`, `urlset`, `sitemapindex`, `text`) |
//! | `{NS}:f:lhosts` | hash | host key -> sitemaps and feeds queued for it (`crawl.max_listings_per_host`) |
//!
//! The learners' keys are written only by the `ack` script, with the batch
//! that learnt them ([`super::learn`]).
//!
//! An entry is `n ATTEMPTS DEPTH URL TOKEN` for a URL that still has to be
//! claimed in the URL tier, or `c ATTEMPTS DEPTH URL` for one already
//! claimed (requeued after a transient failure, or given back); see
//! [`Claim`]. A page entry put back once behind the canonical URL its page
//! declared has the flag `ck` (`Entry::waited`). Either may end with ` <VIA`: the page, sitemap or feed that
//! led to the URL, which its page line names (`via`). A sitemap or feed (`crate::listing`) is the same entry with
//! the flag `nl` / `cl` ([`encode_kind`]): one worker leases, fetches and
//! acknowledges it, like a page, and its URL's claim in the URL tier is
//! what keeps it from being read twice in a crawl (every worker offers
//! its hosts' sitemaps, the claim keeps one).
//!
//! # Leases
//!
//! Three Lua scripts, each atomic on the server, all times from the
//! server's clock (`TIME`), so the workers' clocks do not matter:
//!
//! - `lease`: first takes back expired leases (their entries go back to
//!   the front of their host's queue, as they were) and moves due
//!   requeues to their queues; then, for each ready host whose next start
//!   has come, pops entries while the host has fewer than
//!   `fetch.per_host_concurrency` leases in flight (one entry per host and
//!   call when the host has a delay), records each lease with its expiry,
//!   and sets the host's next start to now + its delay (`max(per_host_delay,
//!   Crawl-delay)`). So politeness holds across all workers together. The
//!   workers that asked within the last second share a host's slots: one
//!   takes at most `ceil(cap / workers asking)` leases of a host, so a
//!   worker that acknowledges and asks again at once cannot keep all of
//!   them.
//! - `renew`: a live worker pushes the expiry of the leases it holds.
//! - `ack`: after the worker's output lines for a group of pages are
//!   written and fsynced, releases their leases, queues the new links and
//!   the requeues, adds the counters and records the outputs' offsets, in
//!   one step. An ack carries the worker's batch number and is applied at
//!   most once, so it can be retried after a lost reply. An ack naming a
//!   lease that expired and was taken back (its worker starved past
//!   `lease_ms`) is refused whole: the worker cuts its outputs back to the
//!   last acknowledged offsets, writes the batch again without those pages
//!   (the worker that took them back writes them) and acks again, so no
//!   page has a line in two workers' outputs.
//!
//! A URL is fetched once: the URL tier is claimed (`check_url_in`, in one
//! store transaction per leased group) when an entry is leased, recording
//! the entry's token with the URL, and an entry whose URL another entry
//! claimed is dropped. A link is queued only if the URL tier has not seen
//! it yet (a read): two workers may queue the same link, and the claim
//! keeps one. An entry taken back from a dead or stalled worker goes back
//! as it was: if that worker had claimed it, the token says the claim is
//! the entry's own and it is fetched again (the one case of a second
//! fetch), never lost; if not, its next worker claims it, so a copy of the
//! link queued meanwhile cannot be fetched as well.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use parking_lot::Mutex;
use redis::Value;

/// The `helpers` script: `src/backend/redis/lua/helpers.lua` (what it does, its
/// ARGV and replies are in the file).
const HELPERS: &str = include_str!("lua/helpers.lua");

/// How recently a worker must have asked for work to count as one of
/// those sharing a host's slots (workers that want work ask every 100 ms).
const ASKING_MS: u64 = 1_000;

/// The `lease` script: `src/backend/redis/lua/lease.lua` (what it does, its
/// ARGV and replies are in the file).
const LEASE: &str = include_str!("lua/lease.lua");

/// The `renew` script: `src/backend/redis/lua/renew.lua` (what it does, its
/// ARGV and replies are in the file).
const RENEW: &str = include_str!("lua/renew.lua");

/// The `ack` script: `src/backend/redis/lua/ack.lua` (what it does, its
/// ARGV and replies are in the file).
const ACK: &str = include_str!("lua/ack.lua");

pub use super::entry::{
    Claim, Tokens, claimed_as, claimed_by, decode_entry, encode_again, encode_entry, encode_kind, host_key,
};
use super::retry::is_connection_error;
pub use super::retry::{RedisGone, retry};

/// What one `lease` call found.
#[derive(Debug, Default, Clone)]
pub struct Leased {
    /// Lease id and entry text of each new lease.
    pub entries: Vec<(u64, String)>,
    /// Leases in flight, all workers together (these included).
    pub leases: u64,
    /// Hosts with queued entries and a free slot.
    pub ready: u64,
    /// Entries waiting to be retried later.
    pub later: u64,
    /// `crawl.max_pages` leases were handed out.
    pub budget_spent: bool,
    /// Expired leases taken back by this call.
    pub reclaimed: u64,
}

impl Leased {
    /// Nothing queued, leased or waiting anywhere: the crawl is over (for
    /// a worker that holds nothing itself).
    pub fn crawl_done(&self) -> bool {
        self.leases == 0 && self.ready == 0 && self.later == 0
    }
}

/// What one `lease` call asks for.
#[derive(Debug, Clone, Default)]
pub struct LeaseRequest<'a> {
    /// The asking worker: workers that asked within the last second share
    /// each host's slots (`cap`) evenly.
    pub worker: &'a str,
    /// Entries wanted.
    pub n: usize,
    /// Leases per host at once, all workers together.
    pub cap: usize,
    /// Leases expire after this long unless renewed.
    pub lease_ms: u64,
    /// Between two lease starts of one host (or its Crawl-delay, if longer).
    pub delay_ms: u64,
    /// At most this many leases in all (0: no limit).
    pub budget: u64,
    /// Leases the worker holds now, per host (`host_key`).
    pub held: BTreeMap<String, usize>,
}

/// The server's answer to an [`Ack`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AckReply {
    /// Applied now.
    Applied,
    /// Applied before (a retry after a lost reply): nothing done.
    AlreadyApplied,
    /// Some of its releases name leases no longer held: they expired and
    /// were taken back, so another worker does their pages. Nothing was
    /// applied; the caller drops what it did for those leases and acks
    /// again without them.
    Refused(Vec<u64>),
}

/// One release in an [`Ack`].
#[derive(Debug, Clone)]
pub struct Release {
    pub lease: u64,
    /// Put back for another attempt: the entry and its delay (ms).
    pub again: Option<(String, u64)>,
    /// The lease does not count against `crawl.max_pages` (the page was
    /// not fetched, or will be fetched again).
    pub uncount: bool,
}

/// One write of a learner for the `ack` script: kind and three arguments
/// (see `ack.lua` and `super::learn::RedisLearn`).
pub type LearnOp = [Vec<u8>; 4];

/// One batch of results acknowledged at once (see the `ack` script).
#[derive(Debug, Clone, Default)]
pub struct Ack {
    /// The worker's batch number (0: not numbered, not retried).
    pub batch: u64,
    pub releases: Vec<Release>,
    /// New entries: host and entry text.
    pub links: Vec<(String, String)>,
    /// Listing entries among `links` queued per host at most, all workers
    /// and runs together (`crate::listing::Bounds::per_host`; 0: none):
    /// counted by the script, which holds the count for all workers.
    pub max_listings_per_host: u64,
    /// Counter increments.
    pub counters: Vec<(String, i64)>,
    /// Crawl-delays learnt: host and milliseconds.
    pub delays: Vec<(String, u64)>,
    /// The worker's state after this batch (offsets and counters, JSON).
    pub state: String,
    /// For an unnumbered ack (batch 0): a token unique to it, so that a
    /// retry after a lost reply is not applied twice ('' for none).
    pub once: String,
    /// What the learners wrote ([`super::learn::RedisLearn`]), applied with it.
    pub learn: Vec<LearnOp>,
    /// URLs recorded per DUST rule at most (`crawl.dust.max_recorded`).
    pub max_recorded: u64,
}

impl Ack {
    /// An ack that carries no output lines, with a token of its own (see
    /// [`RedisFrontier::ack_held`]): make it once, outside the retry loop,
    /// so that every retry carries the same token.
    pub fn held(releases: Vec<Release>, links: Vec<(String, String)>, counters: Vec<(String, i64)>) -> Ack {
        Ack {
            releases,
            links,
            counters,
            once: once_token(),
            ..Ack::default()
        }
    }
}

/// A token no other ack carries: a random number per process (as
/// [`Tokens`]) and a counter.
pub fn once_token() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let prefix = PREFIX.get_or_init(|| Tokens::new().next());
    format!("{prefix}.{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// How long the server remembers an applied unnumbered ack's token: far
/// longer than any retry of it (retries give up after minutes).
const ONCE_MS: u64 = 86_400_000;

/// A connection to the shared frontier (see the module documentation).
pub struct RedisFrontier {
    client: redis::Client,
    /// The URL without password, for messages.
    url: String,
    /// `{NS}:f:`
    pub(super) prefix: String,
    /// `NS`, whose slot's master serves the frontier under Redis Cluster.
    namespace: String,
    conn: Mutex<Option<redis::Connection>>,
    lease: redis::Script,
    renew: redis::Script,
    ack: redis::Script,
    /// `{NS}:f:dustv` as the last applied ack answered it: when it moves,
    /// another worker changed the shared DUST rules.
    rules_version: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for RedisFrontier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisFrontier")
            .field("url", &self.url)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// Longest wait for a connection or a reply: a server that stops
/// answering is an error to retry, not a hang.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Redis URLs without their password, for messages: the dedup store's.
pub use simcrawl_dedup::store::redact;

/// How the frontier connects for `namespace`: the frontier's timeouts.
fn connection_options(namespace: &str) -> simcrawl_dedup::RedisOptions {
    simcrawl_dedup::RedisOptions {
        namespace: namespace.to_string(),
        connect_timeout: IO_TIMEOUT,
        io_timeout: IO_TIMEOUT,
        ..Default::default()
    }
}

/// Deletes every key of `namespace` at `url` (frontier and tiers, of
/// whichever store kind), for `--fresh` benches.
pub fn clear_namespace(url: &str, namespace: &str) -> Result<()> {
    let client = redis::Client::open(url).with_context(|| format!("invalid Redis URL {}", redact(url)))?;
    let mut conn = simcrawl_dedup::store::connect_namespace(&client, &connection_options(namespace), url)?;
    simcrawl_dedup::store::clear_namespace(&mut conn, namespace)?;
    Ok(())
}

impl RedisFrontier {
    /// Connects to the server at `url`; an unreachable server is an error
    /// naming it.
    pub fn open(url: &str, namespace: &str) -> Result<RedisFrontier> {
        let shown = redact(url);
        let client = redis::Client::open(url).with_context(|| format!("invalid Redis URL {shown}"))?;
        let f = RedisFrontier {
            client,
            prefix: format!("{{{namespace}}}:f:"),
            namespace: namespace.to_string(),
            url: shown,
            conn: Mutex::new(None),
            lease: redis::Script::new(&format!(
                "{HELPERS}{}",
                LEASE.replace("ASKING_MS", &ASKING_MS.to_string())
            )),
            renew: redis::Script::new(&format!("{HELPERS}{RENEW}")),
            ack: redis::Script::new(&format!(
                "{HELPERS}{}",
                ACK.replace("ONCE_MS", &ONCE_MS.to_string())
            )),
            rules_version: std::sync::atomic::AtomicU64::new(0),
        };
        f.with_conn(|c| redis::cmd("PING").query::<Value>(c).map(drop))
            .with_context(|| format!("Redis at {} is unreachable", f.url))?;
        Ok(f)
    }

    /// The server's URL, without password.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs `f` on the connection (opened if needed); a connection that
    /// failed is dropped, so the next call opens a new one.
    pub(super) fn with_conn<T>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T> {
        let mut guard = self.conn.lock();
        if guard.is_none() {
            // To the master of the namespace's slot when the server is a
            // cluster node: the scripts' keys all live there.
            *guard = Some(simcrawl_dedup::store::connect_namespace(
                &self.client,
                &connection_options(&self.namespace),
                &self.url,
            )?);
        }
        let Some(conn) = guard.as_mut() else {
            return Err(anyhow!("no connection to Redis at {}", self.url));
        };
        match f(conn) {
            Ok(v) => Ok(v),
            Err(e) => {
                // A moved slot (resharding, failover): the next
                // connection asks the cluster where it is now.
                if is_connection_error(&e) || e.is_cluster_error() {
                    *guard = None;
                }
                Err(e.into())
            }
        }
    }

    /// Leases up to `r.n` entries (see the `lease` script and
    /// [`LeaseRequest`]).
    pub fn lease(&self, r: &LeaseRequest) -> Result<Leased> {
        let reply: Vec<Value> = self.with_conn(|c| {
            let mut inv = self.lease.key(format!("{}seq", self.prefix));
            inv.arg(&self.prefix)
                .arg(r.cap.max(1))
                .arg(r.n)
                .arg(r.lease_ms)
                .arg(r.delay_ms)
                .arg(r.budget)
                .arg(r.worker)
                .arg(r.held.len());
            for (host, n) in &r.held {
                inv.arg(host).arg(*n);
            }
            inv.invoke(c)
        })?;
        let int = |i: usize| -> Result<u64> {
            match reply.get(i) {
                Some(Value::Int(v)) => Ok(u64::try_from(*v).unwrap_or(0)),
                other => Err(anyhow!("unexpected reply from the lease script: {other:?}")),
            }
        };
        let mut out = Leased {
            leases: int(0)?,
            ready: int(1)?,
            later: int(2)?,
            budget_spent: int(3)? == 1,
            reclaimed: int(4)?,
            entries: Vec::new(),
        };
        for pair in reply.get(5..).unwrap_or(&[]).chunks(2) {
            match pair {
                [Value::Int(id), Value::BulkString(entry)] => {
                    out.entries.push((
                        u64::try_from(*id).unwrap_or(0),
                        String::from_utf8_lossy(entry).into_owned(),
                    ));
                }
                other => return Err(anyhow!("unexpected lease in the lease script's reply: {other:?}")),
            }
        }
        Ok(out)
    }

    /// Pushes back the expiry of leases this worker holds; returns those
    /// not held any more (taken back after expiring).
    pub fn renew(&self, ids: &[u64], lease_ms: u64) -> Result<Vec<u64>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.with_conn(|c| {
            let mut inv = self.renew.key(format!("{}seq", self.prefix));
            inv.arg(&self.prefix).arg(0).arg(lease_ms);
            for id in ids {
                inv.arg(*id);
            }
            inv.invoke(c)
        })
    }

    /// Applies one batch of results (see the `ack` script and
    /// [`AckReply`]); `cap` as in [`LeaseRequest`].
    pub fn ack(&self, worker: &str, cap: usize, a: &Ack) -> Result<AckReply> {
        let r: Value = self.with_conn(|c| {
            let mut inv = self.ack.key(format!("{}seq", self.prefix));
            inv.arg(&self.prefix)
                .arg(cap.max(1))
                .arg(worker)
                .arg(a.batch)
                .arg(&a.state)
                .arg(&a.once)
                .arg(a.releases.len());
            for r in &a.releases {
                let (again, wait) = match &r.again {
                    Some((e, ms)) => (e.as_str(), *ms),
                    None => ("", 0),
                };
                inv.arg(r.lease).arg(again).arg(wait).arg(u32::from(r.uncount));
            }
            inv.arg(a.max_listings_per_host).arg(a.links.len());
            for (h, e) in &a.links {
                inv.arg(h).arg(e);
            }
            inv.arg(a.counters.len());
            for (k, v) in &a.counters {
                inv.arg(k).arg(*v);
            }
            inv.arg(a.delays.len());
            for (h, ms) in &a.delays {
                inv.arg(h).arg(*ms);
            }
            inv.arg(a.max_recorded).arg(a.learn.len());
            for o in &a.learn {
                for part in o {
                    inv.arg(part.as_slice());
                }
            }
            inv.invoke(c)
        })?;
        match r {
            Value::Array(ref v) if matches!(v.first(), Some(Value::BulkString(tag)) if tag == b"applied") => {
                if let Some(Value::Int(n)) = v.get(1) {
                    self.rules_version.store(
                        u64::try_from(*n).unwrap_or(0),
                        std::sync::atomic::Ordering::Relaxed,
                    );
                }
                Ok(AckReply::Applied)
            }
            Value::Int(-1) => Ok(AckReply::AlreadyApplied),
            Value::Array(ids) => ids
                .iter()
                .map(|v| match v {
                    Value::Int(id) => u64::try_from(*id).map_err(|_| anyhow!("negative lease id {id}")),
                    other => Err(anyhow!(
                        "unexpected lease id in the ack script's reply: {other:?}"
                    )),
                })
                .collect::<Result<Vec<u64>>>()
                .map(AckReply::Refused),
            other => Err(anyhow!("unexpected reply from the ack script: {other:?}")),
        }
    }

    /// How many times the shared DUST rules had changed when the last
    /// applied ack was answered (see `{NS}:f:dustv`).
    pub fn rules_version(&self) -> u64 {
        self.rules_version.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Reads how many times the shared DUST rules changed (`{NS}:f:dustv`),
    /// for a worker that has no ack to learn it from.
    pub fn read_rules_version(&self) -> Result<u64> {
        let key = format!("{}dustv", self.prefix);
        let v: Option<u64> = self.with_conn(|c| redis::cmd("GET").arg(&key).query(c))?;
        let v = v.unwrap_or(0);
        self.rules_version.store(v, std::sync::atomic::Ordering::Relaxed);
        Ok(v)
    }

    /// An ack that carries no output lines (leases given back, URLs already
    /// claimed): releases of leases taken back meanwhile are left out and
    /// the rest applied.
    ///
    /// Made with [`Ack::held`], it is applied at most once however often it
    /// is retried after a lost reply: its token, which the server remembers
    /// for a day, says it was.
    pub fn ack_held(&self, worker: &str, cap: usize, a: &Ack) -> Result<()> {
        let mut a = a.clone();
        loop {
            match self.ack(worker, cap, &a)? {
                AckReply::Applied | AckReply::AlreadyApplied => return Ok(()),
                AckReply::Refused(lost) => {
                    let before = a.releases.len();
                    a.releases.retain(|r| !lost.contains(&r.lease));
                    if a.releases.len() == before {
                        return Err(anyhow!(
                            "the ack script refused leases this ack does not name: {lost:?}"
                        ));
                    }
                }
            }
        }
    }

    /// The merged counters of all workers.
    pub fn counters(&self) -> Result<BTreeMap<String, i64>> {
        let key = format!("{}stats", self.prefix);
        let pairs: Vec<(String, i64)> = self.with_conn(|c| redis::cmd("HGETALL").arg(&key).query(c))?;
        Ok(pairs.into_iter().collect())
    }

    /// The frontier's state: leases out, hosts ready to lease from,
    /// entries waiting to be retried.
    pub fn sizes(&self) -> Result<(u64, u64, u64)> {
        let p = &self.prefix;
        self.with_conn(|c| {
            redis::pipe()
                .cmd("ZCARD")
                .arg(format!("{p}leases"))
                .cmd("ZCARD")
                .arg(format!("{p}ready"))
                .cmd("ZCARD")
                .arg(format!("{p}later"))
                .query(c)
        })
    }

    /// Workers and the time (unix ms, server clock) of their last batch.
    pub fn workers(&self) -> Result<BTreeMap<String, u64>> {
        let key = format!("{}workers", self.prefix);
        let pairs: Vec<(String, u64)> = self.with_conn(|c| redis::cmd("HGETALL").arg(&key).query(c))?;
        Ok(pairs.into_iter().collect())
    }

    /// A worker's last applied batch number and state (empty when none).
    pub fn worker_state(&self, worker: &str) -> Result<(u64, String)> {
        let key = format!("{}w:{worker}", self.prefix);
        let (batch, state): (Option<u64>, Option<String>) =
            self.with_conn(|c| redis::cmd("HMGET").arg(&key).arg("ack").arg("state").query(c))?;
        Ok((batch.unwrap_or(0), state.unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use url::Url;

    use super::*;
    use crate::frontier::Entry;

    /// A lease request of worker `w` holding nothing.
    fn ask(w: &str, n: usize, cap: usize, lease_ms: u64, delay_ms: u64, budget: u64) -> LeaseRequest<'_> {
        LeaseRequest {
            worker: w,
            n,
            cap,
            lease_ms,
            delay_ms,
            budget,
            held: BTreeMap::new(),
        }
    }

    /// Under Redis Cluster the frontier may be given any node: it talks to
    /// the master of its namespace's slot (skipped without
    /// `SIMCRAWL_REDIS_CLUSTER_URLS`, which `scripts/test.sh` sets).
    #[test]
    fn the_frontier_finds_its_slot_on_a_cluster_from_any_node() {
        let Ok(urls) = std::env::var("SIMCRAWL_REDIS_CLUSTER_URLS") else {
            eprintln!("SKIPPED the_frontier_finds_its_slot_on_a_cluster_from_any_node: no cluster");
            return;
        };
        for (i, node) in urls.split(',').enumerate() {
            // Three namespaces, so that most are served by another node
            // than the one given.
            let ns = format!("unit-cluster-{}-{i}", std::process::id());
            let f = RedisFrontier::open(node, &ns).unwrap();
            let url = Url::parse("http://c.example/1").unwrap();
            let ack = Ack {
                batch: 1,
                links: vec![(
                    host_key(&url),
                    encode_entry(&Claim::Pending("t".into()), 0, 1, &url),
                )],
                counters: vec![("fetched".into(), 1)],
                state: "{}".into(),
                ..Ack::default()
            };
            f.ack("w", 2, &ack).unwrap();
            let leased = f.lease(&ask("w", 10, 2, 60_000, 0, 0)).unwrap();
            assert_eq!(leased.entries.len(), 1, "{ns} via {node}: {leased:?}");
            assert_eq!(f.counters().unwrap().get("fetched"), Some(&1));
        }
    }

    /// An unnumbered ack (seeds, give-backs, releases of URLs already
    /// claimed) retried after a lost reply is applied once: its links are
    /// queued once and its counters added once. A refused attempt (a lease
    /// taken back) does not use its token up.
    #[test]
    fn unnumbered_acks_are_applied_once_however_often_retried() {
        let Ok(url) = std::env::var("SIMCRAWL_REDIS_URL") else {
            eprintln!("SKIPPED unnumbered_acks_are_applied_once: SIMCRAWL_REDIS_URL is not set");
            return;
        };
        let ns = format!("unit-once-{}", std::process::id());
        let f = RedisFrontier::open(&url, &ns).unwrap();
        let u = Url::parse("http://once.example/1").unwrap();
        let seed = Ack::held(
            Vec::new(),
            vec![(host_key(&u), encode_entry(&Claim::Pending("t".into()), 0, 0, &u))],
            vec![("dup_url".into(), 1)],
        );
        // The reply of the first attempt is lost: the caller sends it again.
        f.ack_held("w", 2, &seed).unwrap();
        f.ack_held("w", 2, &seed).unwrap();
        assert_eq!(f.counters().unwrap().get("dup_url"), Some(&1));
        let leased = f.lease(&ask("w", 10, 2, 60_000, 0, 0)).unwrap();
        assert_eq!(leased.entries.len(), 1, "the link was queued once: {leased:?}");
        // Two acks made apart are two acks.
        f.ack_held(
            "w",
            2,
            &Ack::held(Vec::new(), Vec::new(), vec![("dup_url".into(), 1)]),
        )
        .unwrap();
        assert_eq!(f.counters().unwrap().get("dup_url"), Some(&2));
        // An ack naming a lease no longer held is refused, then applied
        // without it, under the same token.
        let id = leased.entries[0].0;
        let give_back = Ack::held(
            vec![
                Release {
                    lease: id,
                    again: None,
                    uncount: true,
                },
                Release {
                    lease: id + 1000,
                    again: None,
                    uncount: true,
                },
            ],
            Vec::new(),
            vec![("dup_url".into(), 1)],
        );
        assert_eq!(
            f.ack("w", 2, &give_back).unwrap(),
            AckReply::Refused(vec![id + 1000])
        );
        f.ack_held("w", 2, &give_back).unwrap();
        f.ack_held("w", 2, &give_back).unwrap();
        assert_eq!(f.counters().unwrap().get("dup_url"), Some(&3));
        assert_eq!(f.sizes().unwrap().0, 0, "the lease was released");
    }

    /// The DUST learners of a shared crawl pool through the `ack` script:
    /// a rule is learnt once the workers together gave `min_examples`
    /// distinct examples (the same URL twice counts once), every ack then
    /// answers a moved rules' version; images of kept URLs are read from
    /// where a worker stopped; a worker blocking a rule another one learnt
    /// queues again what that rule rewrote (before, those URLs were never
    /// fetched).
    #[test]
    fn workers_pool_rule_examples_and_a_rule_blocked_elsewhere_gives_back_its_rewrites() {
        use crate::learn::{LearnStore, Map, Restored};
        let Ok(url) = std::env::var("SIMCRAWL_REDIS_URL") else {
            eprintln!("SKIPPED workers_pool_rule_examples: SIMCRAWL_REDIS_URL is not set");
            return;
        };
        let ns = format!("unit-pool-{}", std::process::id());
        let f = std::sync::Arc::new(RedisFrontier::open(&url, &ns).unwrap());
        let mut learn = super::super::learn::RedisLearn::new(f.clone());
        let send = |learn: &mut super::super::learn::RedisLearn, w: &str| {
            let (ops, max_recorded) = learn.take_ops();
            let ack = Ack {
                learn: ops,
                max_recorded,
                ..Ack::held(Vec::new(), Vec::new(), Vec::new())
            };
            f.ack_held(w, 2, &ack).unwrap();
        };
        let rule = "pool.example collapse_slashes";
        let state = |learn: &mut super::super::learn::RedisLearn| {
            learn
                .entries(Map::DustRules)
                .unwrap()
                .into_iter()
                .find(|(k, _)| k == rule)
                .map(|(_, v)| String::from_utf8(v).unwrap())
        };
        learn.example(rule, 1, 3);
        send(&mut learn, "w1");
        learn.example(rule, 1, 3);
        send(&mut learn, "w2");
        learn.example(rule, 2, 3);
        send(&mut learn, "w2");
        let before = f.rules_version();
        assert_eq!(state(&mut learn), None, "two distinct examples learn nothing");
        learn.example(rule, 3, 3);
        send(&mut learn, "w3");
        assert_eq!(state(&mut learn).as_deref(), Some("learnt 3"));
        assert!(
            f.rules_version() > before,
            "the ack that learnt it answers a new version"
        );
        assert_eq!(f.read_rules_version().unwrap(), f.rules_version());

        // Images: each worker reads the log from where it stopped.
        learn.image(rule, 0xabc);
        send(&mut learn, "w1");
        let (images, end) = learn.images_since(0).unwrap();
        assert_eq!(images, vec![(rule.to_string(), 0xabc)]);
        assert_eq!(learn.images_since(end).unwrap().0, Vec::new());

        // w1 rewrote a link under the rule; w2, which never applied it,
        // blocks it: the link is queued again.
        let u = Url::parse("http://pool.example//a").unwrap();
        let restored = Restored {
            url: u.clone(),
            depth: 1,
            was_queued: false,
        };
        learn.record(rule, &restored, 100).unwrap();
        send(&mut learn, "w1");
        assert_eq!(f.sizes().unwrap().0, 0, "nothing queued while the rule holds");
        learn.put_entry(Map::DustRules, rule, b"blocked").unwrap();
        send(&mut learn, "w2");
        assert_eq!(state(&mut learn).as_deref(), Some("blocked"));
        let leased = f.lease(&ask("w1", 10, 2, 60_000, 0, 0)).unwrap();
        assert_eq!(leased.entries.len(), 1, "the rewritten link is back: {leased:?}");
        assert!(leased.entries[0].1.contains("//a"), "{leased:?}");
        // A blocked rule is never learnt again from pooled examples.
        learn.example(rule, 9, 1);
        send(&mut learn, "w3");
        assert_eq!(state(&mut learn).as_deref(), Some("blocked"));
    }

    /// The scripts against the server of `SIMCRAWL_REDIS_URL` (skipped
    /// without it): host cap, delay, reclaim of expired leases, idempotent
    /// acks, requeues, the budget.
    #[test]
    fn lease_protocol_against_a_real_server() {
        let Ok(url) = std::env::var("SIMCRAWL_REDIS_URL") else {
            eprintln!("SKIPPED lease_protocol_against_a_real_server: SIMCRAWL_REDIS_URL is not set");
            return;
        };
        let ns = format!("unit-lease-{}", std::process::id());
        let f = RedisFrontier::open(&url, &ns).unwrap();
        let u = |i: u32| Url::parse(&format!("http://a.example/{i}")).unwrap();
        let host = host_key(&u(0));
        let push = |f: &RedisFrontier, n: u32| {
            let links = (0..n)
                .map(|i| {
                    (
                        host.clone(),
                        encode_entry(&Claim::Pending(format!("t{i}")), 0, 1, &u(i)),
                    )
                })
                .collect();
            f.ack(
                "w",
                2,
                &Ack {
                    links,
                    ..Ack::default()
                },
            )
            .unwrap();
        };
        push(&f, 3);
        // Cap 2 per host: two leases, then none until one is released.
        let a = f.lease(&ask("w", 10, 2, 60_000, 0, 0)).unwrap();
        assert_eq!(a.entries.len(), 2, "{a:?}");
        assert_eq!((a.leases, a.ready), (2, 0));
        assert!(!a.crawl_done());
        assert!(
            f.lease(&ask("w", 10, 2, 60_000, 0, 0))
                .unwrap()
                .entries
                .is_empty()
        );
        let (id0, e0) = a.entries[0].clone();
        assert_eq!(decode_entry(id0, &e0).unwrap().1.url, u(0));
        let ack = Ack {
            batch: 1,
            releases: vec![Release {
                lease: id0,
                again: None,
                uncount: false,
            }],
            counters: vec![("fetched".into(), 1)],
            state: "{}".into(),
            ..Ack::default()
        };
        assert_eq!(f.ack("w", 2, &ack).unwrap(), AckReply::Applied);
        // The same batch again (a retry after a lost reply) is not applied twice.
        assert_eq!(f.ack("w", 2, &ack).unwrap(), AckReply::AlreadyApplied);
        assert_eq!(f.counters().unwrap().get("fetched"), Some(&1));
        assert_eq!(f.worker_state("w").unwrap(), (1, "{}".to_string()));
        // A host delay: one lease per call, the next not before it passed.
        let b = f.lease(&ask("w", 10, 2, 1, 300, 0)).unwrap();
        assert_eq!(b.entries.len(), 1);
        let early = f.lease(&ask("w", 10, 3, 60_000, 300, 0)).unwrap();
        assert!(early.entries.is_empty(), "delay not honoured");
        // Leases of 1 ms expire: taken back (by this call, or already by the
        // one above when the server's clock moved on 1 ms in between),
        // exactly once, as they were (with their claim token), leased again.
        std::thread::sleep(Duration::from_millis(350));
        let c = f.lease(&ask("w", 10, 3, 60_000, 0, 0)).unwrap();
        assert_eq!(early.reclaimed + c.reclaimed, 1, "{early:?} {c:?}");
        let again: Vec<(Claim, Entry)> = c
            .entries
            .iter()
            .map(|(i, e)| decode_entry(*i, e).unwrap())
            .collect();
        assert_eq!(again.len(), 1);
        assert_eq!(
            again[0].0,
            Claim::Pending("t2".into()),
            "a taken-back entry keeps its token"
        );
        assert_eq!(again[0].1.url, u(2));
        // A requeue waits in `later`, then comes back.
        let (id, _) = c.entries[0].clone();
        let requeue = Ack {
            releases: vec![Release {
                lease: id,
                again: Some((encode_entry(&Claim::Held, 1, 1, &u(2)), 0)),
                uncount: true,
            }],
            ..Ack::default()
        };
        f.ack("w", 3, &requeue).unwrap();
        let d = f.lease(&ask("w", 10, 3, 60_000, 0, 0)).unwrap();
        assert_eq!(d.entries.len(), 1);
        assert_eq!(decode_entry(0, &d.entries[0].1).unwrap().1.attempts, 1);
        // The budget counts leases not given back: 5 leases, 1 taken back,
        // 1 requeued, so 3 count; a budget of 2 is spent.
        push(&f, 1);
        let e = f.lease(&ask("w", 10, 9, 60_000, 0, 2)).unwrap();
        assert!(e.entries.is_empty() && e.budget_spent, "{e:?}");
        // Clean up the namespace.
        clear_namespace(&url, &ns).unwrap();
    }

    /// Workers asking together share a host's slots, and an ack naming a
    /// lease that was taken back is refused whole (skipped without
    /// `SIMCRAWL_REDIS_URL`).
    #[test]
    fn workers_share_a_host_and_acks_of_lost_leases_are_refused() {
        let Ok(url) = std::env::var("SIMCRAWL_REDIS_URL") else {
            eprintln!(
                "SKIPPED workers_share_a_host_and_acks_of_lost_leases_are_refused: no SIMCRAWL_REDIS_URL"
            );
            return;
        };
        let ns = format!("unit-share-{}", std::process::id());
        clear_namespace(&url, &ns).unwrap();
        let f = RedisFrontier::open(&url, &ns).unwrap();
        let u = |i: u32| Url::parse(&format!("http://s.example/{i}")).unwrap();
        let host = host_key(&u(0));
        let links = (0..8)
            .map(|i| {
                (
                    host.clone(),
                    encode_entry(&Claim::Pending(format!("t{i}")), 0, 1, &u(i)),
                )
            })
            .collect();
        f.ack_held(
            "seed",
            4,
            &Ack {
                links,
                ..Ack::default()
            },
        )
        .unwrap();
        // Alone, a worker may take all four slots of the host; with a second
        // worker asking, two each.
        let solo = f.lease(&ask("a", 0, 4, 60_000, 0, 0)).unwrap();
        assert!(solo.entries.is_empty());
        let b1 = f.lease(&ask("b", 10, 4, 60_000, 0, 0)).unwrap();
        assert_eq!(b1.entries.len(), 2, "{b1:?}");
        let mut held = ask("b", 10, 4, 60_000, 0, 0);
        held.held.insert(host.clone(), 2);
        let b2 = f.lease(&held).unwrap();
        assert!(b2.entries.is_empty(), "b took more than its share: {b2:?}");
        let a1 = f.lease(&ask("a", 10, 4, 60_000, 0, 0)).unwrap();
        assert_eq!(a1.entries.len(), 2, "{a1:?}");
        assert_eq!(a1.leases, 4);
        // One of b's leases expires (renewed to 1 ms) and a takes it back;
        // b's ack naming it is refused, nothing of it applied.
        let (lost, kept) = (b1.entries[0].0, b1.entries[1].0);
        assert!(f.renew(&[lost], 1).unwrap().is_empty());
        std::thread::sleep(Duration::from_millis(20));
        let again = f.lease(&ask("a", 10, 4, 60_000, 0, 0)).unwrap();
        assert_eq!(again.reclaimed, 1, "{again:?}");
        let release = |lease| Release {
            lease,
            again: None,
            uncount: false,
        };
        let mut ack = Ack {
            batch: 1,
            releases: vec![release(lost), release(kept)],
            counters: vec![("fetched".into(), 2)],
            state: "{\"b\":1}".into(),
            ..Ack::default()
        };
        assert_eq!(f.ack("b", 4, &ack).unwrap(), AckReply::Refused(vec![lost]));
        assert_eq!(f.counters().unwrap().get("fetched"), None);
        assert_eq!(
            f.worker_state("b").unwrap().0,
            0,
            "a refused batch is not recorded"
        );
        // Without the lost lease it is applied, once.
        ack.releases.retain(|r| r.lease != lost);
        ack.counters = vec![("fetched".into(), 1)];
        assert_eq!(f.ack("b", 4, &ack).unwrap(), AckReply::Applied);
        assert_eq!(f.ack("b", 4, &ack).unwrap(), AckReply::AlreadyApplied);
        assert_eq!(f.counters().unwrap().get("fetched"), Some(&1));
        assert_eq!(f.counters().unwrap().get("stale_acks"), Some(&1));
        // `ack_held` leaves the lost lease out by itself.
        let mine = again.entries[0].0;
        f.renew(&[mine], 1).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let c = f.lease(&ask("c", 10, 4, 60_000, 0, 0)).unwrap();
        assert_eq!(c.reclaimed, 1, "{c:?}");
        let give_back = Ack {
            releases: vec![release(mine), release(a1.entries[0].0)],
            ..Ack::default()
        };
        f.ack_held("a", 4, &give_back).unwrap();
        let (leases, _, _) = f.sizes().unwrap();
        // Out: a's second lease from `a1` and c's new ones.
        assert_eq!(leases, 1 + c.entries.len() as u64, "{c:?}");
        clear_namespace(&url, &ns).unwrap();
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(redact("redis://:hunter2@h:6379/0"), "redis://:***@h:6379/0");
        assert_eq!(redact("redis://h:6379/0"), "redis://h:6379/0");
    }
}
