//! The shared backend (`crawl --redis URL`): many workers, one crawl. The
//! frontier is [`crate::backend::redis::frontier::RedisFrontier`] (per-host queues, leases,
//! politeness across workers), the tiers a [`Deduper`] over a
//! [`RedisStore`] under the same namespace, and each worker writes its own
//! outputs in `OUT_DIR/<worker id>/`.
//!
//! Order of a group commit ([`RedisWriter::commit`]), chosen so that a
//! worker killed at any point loses nothing acknowledged:
//!
//! 1. the title and content tiers judge the group's pages (one store
//!    transaction; a page found to copy *itself*, because an earlier
//!    attempt of this page was recorded before a crash or a lost reply, is
//!    kept);
//! 2. links not yet in the URL tier become new entries (a read);
//! 3. output lines are written and fsynced;
//! 4. one `ack` releases the leases, queues the links and requeues, adds
//!    the counters and records the outputs' offsets. If it names a lease
//!    that expired and was taken back (this worker stalled past
//!    `lease_ms`), it is refused whole: the outputs are cut back to the
//!    last acknowledged offsets and steps 2-4 run again without those
//!    pages, which the worker that took them back writes;
//! 5. the redirect targets of the pages written count as seen in the URL
//!    tier. Only now: a target recorded before the ack, by a worker killed
//!    before it, would make the page's next fetch a URL-tier "copy" of a
//!    target whose content is kept nowhere.
//!
//! The learners learn in every worker: each loads the DUST rules and site
//! templates learnt so far ([`crate::backend::redis::learn`]), observes its own
//! verdicts, and its ack carries what it learnt (rules, withdrawals,
//! template hosts, the rewrites its rules made), applied with the batch.
//! Every ack answers how many times the shared rules changed; when that
//! moved, the worker takes up the rules the others published right after
//! it (and every [`LEARN_SYNC`] in any case). A rule
//! withdrawn by one worker is given back by the ack script, exactly once.
//!
//! A worker killed before 4 holds leases that expire: its pages are
//! fetched again by another worker (and re-discover their links), and its
//! lines past the recorded offsets are cut if it restarts under the same id.
//! Redis unreachable at any step: the worker pauses and retries with
//! backoff ([`frontier::retry`]), and goes on when Redis is back.

pub mod frontier;
pub mod learn;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use simcrawl_dedup::{
    CanonicalUrl, Deduper, Prefetch, ReadTables, RedisOptions, RedisStore, ReplicatedStore, Signature, Store,
    Tables, UrlTier, UrlVerdict, Verdict,
};
use tracing::{info, warn};
use url::Url;

use self::frontier::{
    Ack, AckReply, Claim, Leased, RedisFrontier, Release, encode_again, encode_entry, encode_kind, host_key,
    retry,
};
use self::learn::RedisLearn;
use crate::backend::local::state;
use crate::backend::{Commits, Source};
use crate::backend::{Committed, Requeues};
use crate::config::{Config, SharedTiersKind};
use crate::daemon::dispatch::Dispatch;
use crate::daemon::worker::{Outcome, PageResult, Signer};
use crate::daemon::{Start, drive, page_stages, remove_if_exists, write_stats};
use crate::dust::{Dust, Fold, Rewrites};
use crate::frontier::{Candidate, Entry};
use crate::learn::{LearnStore, Map};
use crate::output::record::Recorder;
use crate::output::sinks::{Offsets, Outputs};
use crate::stats::{Ended, Run, Stats};
use crate::template::{Save, Templates, host_of};

/// The tiers of a shared crawl.
pub type SharedTiers = Deduper<SharedStore>;

/// Where a shared crawl keeps its tiers (`[redis] tiers`): in Redis, or
/// replicated in each worker with Redis ordering the writes. The pipeline
/// is the same for both; only the store differs.
#[derive(Debug)]
// One value per process: the size difference between the variants costs
// nothing, boxing would cost an indirection per call.
#[allow(clippy::large_enum_variant)]
pub enum SharedStore {
    /// [`RedisStore`]: the tiers in Redis.
    Redis(RedisStore),
    /// [`ReplicatedStore`]: a replica in this process, a log in Redis.
    Replicated(ReplicatedStore),
}

impl SharedStore {
    /// Opens namespace `namespace` at `url` as `kind`. A namespace written
    /// by the other kind is refused, naming both.
    pub fn open(url: &str, namespace: &str, kind: SharedTiersKind) -> simcrawl_dedup::Result<SharedStore> {
        let options = RedisOptions {
            namespace: namespace.to_string(),
            ..RedisOptions::default()
        };
        Ok(match kind {
            SharedTiersKind::Redis => SharedStore::Redis(RedisStore::open_with(url, options)?),
            SharedTiersKind::Replicated => SharedStore::Replicated(ReplicatedStore::open_with(url, options)?),
        })
    }

    /// The server's `used_memory`.
    pub fn used_memory(&self) -> simcrawl_dedup::Result<u64> {
        match self {
            SharedStore::Redis(s) => s.used_memory(),
            SharedStore::Replicated(s) => s.used_memory(),
        }
    }

    /// Deletes every key of the namespace.
    pub fn clear(&self) -> simcrawl_dedup::Result<()> {
        match self {
            SharedStore::Redis(s) => s.clear(),
            SharedStore::Replicated(s) => s.clear(),
        }
    }
}

impl Store for SharedStore {
    fn write<R>(
        &self,
        f: impl FnMut(&mut dyn Tables) -> simcrawl_dedup::Result<R>,
    ) -> simcrawl_dedup::Result<R> {
        match self {
            SharedStore::Redis(s) => s.write(f),
            SharedStore::Replicated(s) => s.write(f),
        }
    }

    fn read<R>(
        &self,
        f: impl FnMut(&dyn ReadTables) -> simcrawl_dedup::Result<R>,
    ) -> simcrawl_dedup::Result<R> {
        match self {
            SharedStore::Redis(s) => s.read(f),
            SharedStore::Replicated(s) => s.read(f),
        }
    }

    fn flush(&self) -> simcrawl_dedup::Result<()> {
        match self {
            SharedStore::Redis(s) => s.flush(),
            SharedStore::Replicated(s) => s.flush(),
        }
    }

    fn location(&self) -> Option<&std::path::Path> {
        match self {
            SharedStore::Redis(s) => s.location(),
            SharedStore::Replicated(s) => s.location(),
        }
    }
}

/// How often a worker with nothing to fetch asks the shared frontier
/// again (others may be adding links, or holding leases that may expire).
const POLL: Duration = Duration::from_millis(100);

/// What a worker records with each acknowledged batch, so that a restart
/// under the same id resumes its outputs and counters.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct WorkerState {
    offsets: Offsets,
    stats: Stats,
}

/// `HOSTNAME-PID` when no id is given; an id is kept to the characters
/// that are safe in a directory name and a Redis key.
pub fn worker_id(configured: &str) -> Result<String> {
    if !configured.is_empty() {
        if configured
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !configured.starts_with('.')
        {
            return Ok(configured.to_string());
        }
        bail!("worker id {configured:?}: use letters, digits, '-', '_' and '.' (not first)");
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let host = if host.is_empty() || host.starts_with('.') {
        "worker".to_string()
    } else {
        host
    };
    Ok(format!("{host}-{}", std::process::id()))
}

/// Runs this process as one worker of the crawl shared through Redis.
pub fn run(cfg: Config, seeds: &[Url], start: Start) -> Result<Run> {
    let r = &cfg.redis;
    let worker = worker_id(&r.worker_id)?;
    let shown = frontier::redact(&r.url);
    // The store's own error names the server ("cannot reach the store at
    // URL: Connection refused"): said once, not again in the context.
    let store = SharedStore::open(&r.url, &r.namespace, r.tiers).map_err(|e| {
        let what = if matches!(e, simcrawl_dedup::Error::Unreachable { .. }) {
            "Redis is unreachable: cannot open the shared crawl state".to_string()
        } else {
            format!("cannot open the shared crawl state in Redis at {shown}")
        };
        anyhow::Error::new(e).context(what)
    })?;
    let frontier = Arc::new(
        RedisFrontier::open(&r.url, &r.namespace)
            .with_context(|| format!("Redis at {shown} is unreachable: cannot open the shared frontier"))?,
    );
    if start == Start::Fresh {
        warn!(
            "--fresh: deleting every key of namespace {} in Redis at {shown} (the whole shared crawl)",
            r.namespace
        );
        store.clear().context("cannot clear the shared crawl state")?;
    }
    let deduper = Arc::new(state::open_deduper(store, &cfg)?);
    let out_dir = cfg.crawl.out_dir.join(&worker);
    // Before anything in it is touched: one live process per directory.
    let _lock = DirLock::take(&out_dir, &worker)?;
    if start == Start::Fresh {
        for name in Outputs::FILES.iter().chain(["stats.json"].iter()) {
            remove_if_exists(&out_dir.join(name))?;
        }
    }
    let lease_ms = r.lease_ms.max(1);
    let worker_name = worker.clone();
    let (batch_no, state_json) = retry("read this worker's state", frontier.url(), || {
        frontier.worker_state(&worker)
    })?;
    let ws: WorkerState = if state_json.is_empty() {
        // Nothing of this worker was ever acknowledged: outputs already
        // there are not its (another crawl's, or its Redis state was
        // cleared), and are not truncated.
        let bytes = crate::output::sinks::output_bytes(&out_dir);
        if bytes > 0 {
            bail!(
                "{} holds {bytes} bytes of outputs that the crawl shared in namespace {:?} has no record of \
                 (another crawl's, or its Redis state was cleared): move them away, choose another \
                 --out or --worker-id, or run with --fresh to delete them",
                out_dir.display(),
                r.namespace
            );
        }
        WorkerState::default()
    } else {
        serde_json::from_str(&state_json).context("unreadable worker state in Redis")?
    };
    let warc = crate::backend::open_warc(&cfg, Some(&worker), ws.offsets.warc, start == Start::Fresh)?;
    let outputs = Outputs::open(&out_dir, ws.offsets)?.with_warc(warc);
    cut_gone_workers(&frontier, &cfg.crawl.out_dir, &cfg.output, &worker)?;
    info!(
        worker = %worker,
        out = %out_dir.display(),
        namespace = %r.namespace,
        "worker of the crawl shared in Redis at {shown}"
    );
    let cap = cfg.fetch.per_host_concurrency.max(1);
    let added = enqueue_seeds(&deduper, &frontier, seeds, &worker, cap)?;
    info!(
        seeds = seeds.len(),
        new = added,
        "seeds offered to the shared frontier"
    );

    // What the workers learnt so far (site templates, DUST rules), from
    // Redis; what this one learns goes with its acks.
    let mut learn = RedisLearn::new(frontier.clone());
    let templates = retry("load the site templates", frontier.url(), || {
        Templates::load(&cfg.template, Some(&mut learn))
    })?;
    let signer: Signer = {
        let d = deduper.clone();
        Arc::new(move |doc| d.sign(doc))
    };
    let mut dust = retry("load the URL rewrite rules", frontier.url(), || {
        Dust::load(&cfg.crawl.dust, Some(&mut learn), deduper.canonicalizer().clone())
            .context("invalid [crawl.dust] settings")
    })?;
    dust.share_examples();
    // Loading writes nothing in Redis (no older blobs to convert there).
    learn.discard_ops();
    let dust = Arc::new(Mutex::new(dust));
    let canon = deduper.canonicalizer().clone();
    let stages = page_stages(&cfg, seeds, signer, canon, templates.clone(), dust.clone())?;
    let shared_stats = Arc::new(Mutex::new(ws.stats.clone()));
    let concurrency = cfg.crawl.concurrency.max(1);
    let writer = RedisWriter {
        deduper: deduper.clone(),
        frontier: frontier.clone(),
        worker: worker.clone(),
        outputs,
        base_seconds: ws.stats.seconds,
        base_hosts_evicted: ws.stats.hosts_evicted,
        base_throttled: ws.stats.throttled,
        state: ws,
        batch_no,
        max_depth: cfg.crawl.max_depth,
        listing_bounds: crate::listing::Bounds::of(&cfg.crawl),
        write_text: cfg.crawl.write_text,
        requeues: Requeues::of(&cfg.crawl),
        retry_waits: stages.retry_waits.clone(),
        canonicals: stages.canonicals.clone(),
        cap,
        shared: shared_stats.clone(),
        fetcher: stages.fetcher.clone(),
        templates,
        dust,
        learn,
        max_recorded: cfg.crawl.dust.max_recorded,
        last_sync: Instant::now(),
        rules_seen: 0,
        last_heard: Instant::now(),
        images_seen: 0,
        tokens: frontier::Tokens::new(),
        run_started: Instant::now(),
        out_root: cfg.crawl.out_dir.clone(),
        warc: cfg.output.clone(),
        last_cut: Instant::now(),
    };
    let source = RedisSource {
        frontier: frontier.clone(),
        deduper,
        worker,
        pending: VecDeque::new(),
        in_flight: HashMap::new(),
        last: None,
        poked: true,
        last_lease: Instant::now(),
        batch: concurrency,
        cap,
        lease_ms,
        delay_ms: cfg.fetch.per_host_delay_ms,
        last_renew: Instant::now(),
        budget: cfg.crawl.max_pages,
    };
    let settings = Dispatch {
        metrics: cfg.crawl.metrics.clone(),
        concurrency,
        base_fetched: 0,
        tick: POLL,
    };
    let before = shared_stats.lock().clone();
    let ended = match drive(stages, source, writer, settings, shared_stats.clone()) {
        Ok(ended) => ended,
        // Stopped while Redis was away: said once here, then the
        // counters this worker has are written; nothing more can reach
        // Redis.
        Err(e) if e.downcast_ref::<frontier::RedisGone>().is_some() => {
            warn!("{e:#}");
            let stats = shared_stats.lock().clone();
            write_stats(&out_dir, &stats, Ended::RedisGone)?;
            return Ok(Run {
                stats,
                before,
                ended: Ended::RedisGone,
            });
        }
        Err(e) => return Err(e),
    };
    let stats = shared_stats.lock().clone();
    let ended = ended.judge(&before, &stats);
    write_stats(&out_dir, &stats, ended)?;
    // The crawl is over: whatever a gone worker wrote past its last
    // acknowledgement was taken back and written by another.
    cut_gone_workers(&frontier, &cfg.crawl.out_dir, &cfg.output, &worker_name)?;
    Ok(Run { stats, before, ended })
}

/// The lock file in a worker's output directory: held (`flock`, exclusive)
/// by the live process writing there, released by the kernel when it exits
/// however it exits, so that another worker tells a gone worker's outputs
/// from a live one's without asking it.
const LOCK_FILE: &str = ".worker.lock";

/// This process's hold on its output directory ([`LOCK_FILE`]).
#[derive(Debug)]
struct DirLock {
    _file: std::fs::File,
}

impl DirLock {
    /// Takes the lock of `dir`, or says which live process holds it.
    fn take(dir: &std::path::Path, worker: &str) -> Result<DirLock> {
        use std::io::{Read, Seek, Write};
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(LOCK_FILE);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                bail!(
                    "worker id {worker:?} is in use: process {} writes {} (it holds {}); give each \
                     worker its own --worker-id",
                    holder.trim(),
                    dir.display(),
                    path.display()
                );
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(anyhow::Error::new(e).context(format!("cannot lock {}", path.display())));
            }
        }
        let pid = std::process::id().to_string();
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(pid.as_bytes()))
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(DirLock { _file: file })
    }
}

/// Whether the worker writing `dir` is gone: its lock is free. Returns the
/// lock, held, so that the worker cannot restart while its outputs are cut.
fn lock_if_gone(dir: &std::path::Path) -> Option<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join(LOCK_FILE))
        .ok()?;
    file.try_lock().ok()?;
    Some(file)
}

/// Cuts the outputs of gone workers under the outputs' root `root` back to
/// their last acknowledged offsets. A worker killed after writing a batch's
/// lines and before their acknowledgement leaves them behind, and another
/// worker takes the pages back and writes them too; with the default id
/// (`HOSTNAME-PID`) nobody restarts under its id to cut them. A worker is
/// gone when the lock of its directory is free (see [`LOCK_FILE`]): a dead
/// process writes and acknowledges nothing more, so its acknowledged
/// offsets in Redis are final; a paused one still holds its lock and is
/// left alone.
fn cut_gone_workers(
    frontier: &RedisFrontier,
    root: &std::path::Path,
    warc: &crate::output::warc::WarcSettings,
    me: &str,
) -> Result<()> {
    let Ok(dir) = std::fs::read_dir(root) else {
        return Ok(());
    };
    for e in dir.flatten() {
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        if name == me || !e.file_type().is_ok_and(|t| t.is_dir()) || worker_id(&name).is_err() {
            continue;
        }
        let Some(_held) = lock_if_gone(&e.path()) else {
            continue;
        };
        let (_, state) = retry("read a gone worker's state", frontier.url(), || {
            frontier.worker_state(&name)
        })?;
        if state.is_empty() {
            continue;
        }
        let ws: WorkerState = serde_json::from_str(&state)
            .with_context(|| format!("unreadable state of worker {name:?} in Redis"))?;
        let (mut cut, short) = crate::output::sinks::cut_gone_outputs(&e.path(), ws.offsets)?;
        if warc.enabled() {
            cut += crate::output::warc::cut_gone(
                &warc.warc_dir.join(&name),
                &warc.warc_prefix,
                ws.offsets.warc,
            )?;
        }
        if cut > 0 {
            warn!(
                worker = %name,
                bytes = cut,
                "a gone worker's outputs cut to its last acknowledged batch (another worker took \
                 those pages back and wrote them)"
            );
        }
        for p in short {
            warn!(
                file = %p.display(),
                "a gone worker's output is shorter than its last acknowledged offset: changed outside the crawl"
            );
        }
    }
    Ok(())
}

/// Offers the seeds to the shared frontier: each one the URL tier has not
/// seen is queued (every worker offers them; the claim at lease time keeps
/// one copy). Returns how many were queued.
fn enqueue_seeds(d: &SharedTiers, f: &RedisFrontier, seeds: &[Url], worker: &str, cap: usize) -> Result<u64> {
    let candidates: Vec<Candidate> = seeds
        .iter()
        .filter_map(|s| Candidate::new(d.canonicalizer(), s.clone()))
        .collect();
    let mut tokens = frontier::Tokens::new();
    let fresh = retry("check the seeds", f.url(), || unseen(d, &candidates))?;
    let links: Vec<(String, String)> = candidates
        .iter()
        .zip(fresh)
        .filter(|(_, new)| *new)
        .map(|(c, _)| {
            (
                host_key(c.url()),
                encode_entry(&Claim::Pending(tokens.next()), 0, 0, c.url()),
            )
        })
        .collect();
    let n = links.len() as u64;
    let ack = Ack::held(Vec::new(), links, Vec::new());
    retry("queue the seeds", f.url(), || f.ack_held(worker, cap, &ack))?;
    Ok(n)
}

/// Seconds since the epoch before which the URL tier forgets (the dedup
/// window), 0 without one.
fn url_cutoff(d: &SharedTiers) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.as_secs());
    d.config().window.map_or(0, |w| now.saturating_sub(w.as_secs()))
}

/// Which of `links` the URL tier has not seen (a read, one round trip).
fn unseen(d: &SharedTiers, links: &[Candidate]) -> Result<Vec<bool>> {
    let digests: Vec<u128> = links
        .iter()
        .map(|c| u128::from_be_bytes(c.canonical().digest()))
        .collect();
    unseen_digests(d, &digests)
}

/// Which of the canonical URL `digests` the URL tier has not seen (a read,
/// one round trip).
fn unseen_digests(d: &SharedTiers, digests: &[u128]) -> Result<Vec<bool>> {
    if digests.is_empty() {
        return Ok(Vec::new());
    }
    let cutoff = url_cutoff(d);
    Ok(d.store().read(|t| {
        t.prefetch(&Prefetch {
            urls: digests.to_vec(),
            ..Prefetch::default()
        })?;
        digests
            .iter()
            .map(|&dg| Ok(t.url(dg)?.is_none_or(|r| r.first_seen < cutoff)))
            .collect()
    })?)
}

/// The claims of [`RedisSource::claim`] in transaction `t`: `true` for each
/// entry to fetch (`canon`: the entries' canonical URLs).
fn claim_in<S: Store>(
    d: &Deduper<S>,
    t: &mut dyn Tables,
    entries: &[(Entry, String)],
    canon: &[Option<CanonicalUrl>],
) -> simcrawl_dedup::Result<Vec<bool>> {
    // URLs this call decided to fetch: a second entry of one is dropped
    // (whichever of them comes first: the entry whose own claim is found
    // may come after another one's).
    let mut fetching = HashSet::new();
    let mut out = Vec::with_capacity(entries.len());
    for ((e, token), c) in entries.iter().zip(canon) {
        out.push(match c {
            // Not canonicalizable: the URL tier cannot hold it; fetch it.
            None => true,
            Some(c) if fetching.contains(&c.digest()) => false,
            Some(c) => {
                let fetch = match d.check_url_in(t, &frontier::claimed_as(&e.url, token), c.clone())? {
                    UrlVerdict::New(_) => true,
                    UrlVerdict::Seen { first, .. } => frontier::claimed_by(&first, token),
                    _ => true, // non_exhaustive in simcrawl-dedup
                };
                if fetch {
                    fetching.insert(c.digest());
                }
                fetch
            }
        });
    }
    Ok(out)
}

/// The frontier side of the shared backend: entries leased from Redis,
/// claimed in the URL tier, handed to the dispatcher; leases renewed while
/// held.
struct RedisSource {
    frontier: Arc<RedisFrontier>,
    deduper: Arc<SharedTiers>,
    worker: String,
    pending: VecDeque<Entry>,
    /// Lease id -> host (`host_key`) of the entries being fetched.
    in_flight: HashMap<u64, String>,
    /// What the last lease call found.
    last: Option<Leased>,
    /// Something changed (links committed, a full batch leased): lease
    /// again without waiting for [`POLL`].
    poked: bool,
    last_lease: Instant,
    /// Entries leased per call.
    batch: usize,
    cap: usize,
    lease_ms: u64,
    delay_ms: u64,
    budget: u64,
    last_renew: Instant,
}

impl RedisSource {
    fn renew_due(&self) -> bool {
        self.last_renew.elapsed() >= Duration::from_millis(self.lease_ms / 3)
            && !(self.pending.is_empty() && self.in_flight.is_empty())
    }

    fn renew(&mut self) -> Result<()> {
        let held: Vec<u64> = self
            .pending
            .iter()
            .map(|e| e.seq)
            .chain(self.in_flight.keys().copied())
            .collect();
        let lost = retry("renew leases", self.frontier.url(), || {
            self.frontier.renew(&held, self.lease_ms)
        })?;
        if !lost.is_empty() {
            warn!(
                lost = lost.len(),
                "leases expired before they were renewed: another worker does their pages"
            );
            // Not started: dropped. Being fetched: their results are
            // refused at the ack (see `RedisWriter::commit`).
            self.pending.retain(|e| !lost.contains(&e.seq));
        }
        self.last_renew = Instant::now();
        Ok(())
    }

    /// Claims the URLs of newly leased entries in the URL tier, in one
    /// transaction: `true` for each entry this worker may fetch. An entry
    /// whose URL another entry claimed first is not fetched; one whose own
    /// claim is found (its token: made by a worker whose lease expired, or
    /// by this call's first attempt when a reply was lost) is.
    fn claim(&self, entries: &[(Entry, String)]) -> Result<Vec<bool>> {
        let canonicalizer = self.deduper.canonicalizer();
        let canon: Vec<Option<CanonicalUrl>> = entries
            .iter()
            .map(|(e, _)| canonicalizer.from_url(e.url.clone()).ok())
            .collect();
        let digests: Vec<u128> = canon
            .iter()
            .flatten()
            .map(|c| u128::from_be_bytes(c.digest()))
            .collect();
        let d = &self.deduper;
        retry("claim leased URLs", self.frontier.url(), || {
            Ok(d.store().write(|t| {
                t.prefetch(&Prefetch {
                    urls: digests.clone(),
                    ..Prefetch::default()
                })?;
                claim_in(d, t, entries, &canon)
            })?)
        })
    }

    fn lease(&mut self) -> Result<()> {
        let f = self.frontier.clone();
        let mut held: BTreeMap<String, usize> = BTreeMap::new();
        for host in self
            .pending
            .iter()
            .map(|e| host_key(&e.url))
            .chain(self.in_flight.values().cloned())
        {
            *held.entry(host).or_default() += 1;
        }
        let request = frontier::LeaseRequest {
            worker: &self.worker,
            n: self.batch,
            cap: self.cap,
            lease_ms: self.lease_ms,
            delay_ms: self.delay_ms,
            budget: self.budget,
            held,
        };
        let leased = retry("lease URLs", f.url(), || f.lease(&request))?;
        self.last_lease = Instant::now();
        self.poked = leased.entries.len() >= self.batch;
        if leased.reclaimed > 0 {
            info!(
                reclaimed = leased.reclaimed,
                "took back expired leases of a worker that stopped renewing them"
            );
        }
        let mut releases = Vec::new();
        let mut to_claim = Vec::new();
        for (id, text) in &leased.entries {
            match frontier::decode_entry(*id, text) {
                Some((Claim::Held, e)) => self.pending.push_back(e),
                Some((Claim::Pending(token), e)) => to_claim.push((e, token)),
                None => {
                    warn!(entry = %text, "unreadable shared frontier entry dropped");
                    releases.push(Release {
                        lease: *id,
                        again: None,
                        uncount: true,
                    });
                }
            }
        }
        let claimed = self.claim(&to_claim)?;
        let mut seen = 0i64;
        for ((e, _), ok) in to_claim.into_iter().zip(claimed) {
            if ok {
                self.pending.push_back(e);
            } else {
                seen += 1;
                releases.push(Release {
                    lease: e.seq,
                    again: None,
                    uncount: true,
                });
            }
        }
        if !releases.is_empty() {
            let counters = if seen > 0 {
                vec![("dup_url".to_string(), seen)]
            } else {
                Vec::new()
            };
            let ack = Ack::held(releases, Vec::new(), counters);
            retry("release URLs already claimed", f.url(), || {
                f.ack_held(&self.worker, self.cap, &ack)
            })?;
            self.poked = true;
        }
        self.last = Some(leased);
        Ok(())
    }
}

impl Source for RedisSource {
    fn wants_refill(&self) -> bool {
        self.renew_due()
            || (self.pending.len() <= self.batch / 2 && (self.poked || self.last_lease.elapsed() >= POLL))
    }

    fn refill(&mut self) -> Result<()> {
        if self.renew_due() {
            self.renew()?;
        }
        if self.pending.len() <= self.batch / 2 && (self.poked || self.last_lease.elapsed() >= POLL) {
            self.lease()?;
        }
        Ok(())
    }

    fn next(&mut self) -> Option<Entry> {
        let e = self.pending.pop_front()?;
        self.in_flight.insert(e.seq, host_key(&e.url));
        Some(e)
    }

    fn released(&mut self, _seq: u64) {}

    /// Its lease was released (acknowledged), so its host has a free slot:
    /// lease again without waiting for [`POLL`].
    fn done(&mut self, seq: u64) {
        self.in_flight.remove(&seq);
        self.poked = true;
    }

    fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    fn pending(&self) -> usize {
        self.pending.len()
    }

    fn is_finished(&self) -> bool {
        self.pending.is_empty()
            && self.in_flight.is_empty()
            && self
                .last
                .as_ref()
                .is_some_and(|l| l.budget_spent || l.crawl_done())
    }

    fn budget_spent(&self) -> bool {
        self.last.as_ref().is_some_and(|l| l.budget_spent)
    }

    fn poke(&mut self) {
        self.poked = true;
    }

    /// Entries leased and not started go back to the shared frontier at
    /// once (still claimed), rather than after their leases expire.
    fn close(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let releases: Vec<Release> = self
            .pending
            .drain(..)
            .map(|e| Release {
                lease: e.seq,
                again: Some((encode_again(&e, e.attempts), 0)),
                uncount: true,
            })
            .collect();
        info!(entries = releases.len(), "giving back leased entries not started");
        let ack = Ack::held(releases, Vec::new(), Vec::new());
        retry("give back leases", self.frontier.url(), || {
            self.frontier.ack_held(&self.worker, self.cap, &ack)
        })?;
        Ok(())
    }
}

/// The writer side of the shared backend (see the module documentation for
/// the order of a commit).
struct RedisWriter {
    deduper: Arc<SharedTiers>,
    frontier: Arc<RedisFrontier>,
    worker: String,
    outputs: Outputs,
    state: WorkerState,
    /// The last batch number acknowledged.
    batch_no: u64,
    max_depth: u32,
    /// `crawl.max_listing_depth`, `crawl.max_listings_per_host`.
    listing_bounds: crate::listing::Bounds,
    write_text: bool,
    requeues: Requeues,
    /// The URLs waiting to be retried, for the progress line.
    retry_waits: crate::progress::RetryWaits,
    /// Declared canonicals (`crate::canonical`), told what became of the
    /// pages that waited behind theirs.
    canonicals: Arc<crate::canonical::Canonicals>,
    cap: usize,
    shared: Arc<Mutex<Stats>>,
    fetcher: simcrawl_fetch::Fetcher,
    templates: Templates,
    /// The DUST learner, shared with the page tasks (which fold leased
    /// entries with it).
    dust: Arc<Mutex<Dust>>,
    /// The learners' store: reads from Redis, writes carried by the ack.
    learn: RedisLearn,
    /// `crawl.dust.max_recorded`.
    max_recorded: usize,
    /// When this worker last took up the rules the others published.
    last_sync: Instant,
    /// The shared rules' version ([`RedisFrontier::rules_version`]) at the
    /// last take-up: an ack answering another one means a worker changed
    /// them, and they are taken up right after that ack.
    rules_seen: u64,
    /// When the rules' version was last heard (an ack, or an idle
    /// writer's own read: [`IDLE_SYNC`]).
    last_heard: Instant,
    /// How much of the shared log of kept URLs' images was taken up.
    images_seen: u64,
    /// Claim tokens of the links this worker queues.
    tokens: frontier::Tokens,
    run_started: Instant,
    base_seconds: f64,
    /// This worker's `hosts_evicted` before this run (the fetcher counts
    /// from 0 in each process).
    base_hosts_evicted: u64,
    /// Its `throttled` before this run.
    base_throttled: u64,
    /// The outputs' root, where gone workers' outputs are cut
    /// ([`cut_gone_workers`]) every [`CUT_GONE_EVERY`].
    out_root: std::path::PathBuf,
    /// Where the workers' WARC sets are (each in its own directory).
    warc: crate::output::warc::WarcSettings,
    last_cut: Instant,
}

/// The longest a worker goes without taking up the DUST rules (and
/// withdrawals) the other workers published, though no ack said they
/// changed: a rule learnt elsewhere spares this worker's fetches from then
/// on; until then it learns by itself, as one process would.
const LEARN_SYNC: Duration = Duration::from_secs(2);

/// How long an idle writer (no results to ack) goes without reading the
/// shared rules' version: page tasks held back by probes whose verdicts
/// another worker gave learn the rule within this.
const IDLE_SYNC: Duration = Duration::from_millis(100);

/// How often a worker looks for gone workers' outputs to cut during a
/// crawl (it also does at start and at the end): a long or endless crawl
/// does not keep their extra lines until it ends.
const CUT_GONE_EVERY: Duration = Duration::from_secs(60);

/// The merged [`Stats`] of all workers, from the shared counters (and the
/// crawl's time from its first lease to its last batch).
fn stats_from_counters(c: &BTreeMap<String, i64>) -> Stats {
    let mut s = Stats::from_counters(c);
    let get = |k: &str| u64::try_from(c.get(k).copied().unwrap_or(0)).unwrap_or(0);
    let (first, last) = (get("started_ms"), get("last_ms"));
    s.seconds = last.saturating_sub(first) as f64 / 1000.0;
    s
}

/// `crawl stats --redis URL`: prints the merged counters of every worker of
/// the crawl in `namespace` as JSON on stdout (the fields of `stats.json`,
/// plus the shared frontier's `leased`, `reclaimed` and `stale_acks`, each
/// worker's last batch time, and `frontier`: leases out, ready hosts,
/// entries waiting for a retry), and a summary line on stderr.
pub fn print_stats(url: &str, namespace: &str) -> Result<()> {
    let f = RedisFrontier::open(url, namespace)?;
    let counters = f.counters()?;
    let workers = f.workers()?;
    let stats = stats_from_counters(&counters);
    let mut v = serde_json::to_value(&stats)?;
    if let Some(obj) = v.as_object_mut() {
        for k in ["leased", "reclaimed", "stale_acks"] {
            obj.insert(k.to_string(), counters.get(k).copied().unwrap_or(0).into());
        }
        obj.insert("workers".to_string(), serde_json::to_value(&workers)?);
        let (leases, ready, later) = f.sizes()?;
        obj.insert(
            "frontier".to_string(),
            serde_json::json!({"leases_out": leases, "ready_hosts": ready, "waiting_retries": later}),
        );
    }
    println!("{}", serde_json::to_string_pretty(&v)?);
    eprintln!("{stats}  ({} workers)", workers.len());
    Ok(())
}

impl RedisWriter {
    /// Redirect checks of the pages whose final URL differs from their own:
    /// `true` where that URL was already known (the page is then a URL-tier
    /// duplicate of it). A read: a target is recorded only once the commit
    /// that keeps its page is acknowledged ([`RedisWriter::record_targets`]),
    /// as local mode records it in the transaction that keeps the page. Were
    /// it recorded here, a worker killed (or refused) before its ack would
    /// leave the target "seen" with its content kept nowhere: the page's
    /// next fetch would find it and write the page off as a URL-tier copy.
    fn redirects_seen(&self, targets: &[Option<(String, CanonicalUrl)>]) -> Result<Vec<bool>> {
        let digests: Vec<u128> = targets
            .iter()
            .flatten()
            .map(|(_, c)| u128::from_be_bytes(c.digest()))
            .collect();
        if digests.is_empty() {
            return Ok(vec![false; targets.len()]);
        }
        let d = self.deduper.clone();
        let mut unseen = retry("check redirect targets", self.frontier.url(), || {
            unseen_digests(&d, &digests)
        })?
        .into_iter();
        Ok(targets
            .iter()
            .map(|t| t.is_some() && !unseen.next().unwrap_or(true))
            .collect())
    }

    /// Records in the URL tier the redirect targets of the pages an
    /// acknowledged commit kept or judged, so that links to them are not
    /// fetched again. Killed before this, the next link to a target fetches
    /// it once more and the content tier finds it a copy: a second fetch,
    /// never a loss.
    fn record_targets(&self, targets: &[(String, CanonicalUrl)]) -> Result<()> {
        if targets.is_empty() {
            return Ok(());
        }
        let d = &self.deduper;
        retry("record redirect targets", self.frontier.url(), || {
            Ok(d.store().write(|t| {
                for (u, c) in targets {
                    d.check_url_in(t, u, c.clone())?;
                }
                Ok(())
            })?)
        })
    }
}

/// A batch's pages and what the tiers said of them, decided once per
/// commit (a commit may write its lines twice, see [`RedisWriter::write_batch`]).
struct Judged<'a> {
    /// The page's final URL was already known (a URL-tier duplicate).
    redirected: &'a [bool],
    /// `None`: not judged (redirected, noindex, or waiting).
    verdicts: &'a [Option<Verdict>],
    /// Put back behind the canonical URL it declared
    /// (`crate::canonical`), not judged at this fetch.
    waiting: &'a [bool],
}

/// What [`RedisWriter::write_batch`] hands to the ack.
struct Written {
    releases: Vec<Release>,
    links: Vec<(String, String)>,
    /// Sitemap hints and listing kinds, for the ack's learner writes
    /// (`hint`, `listing` in ack.lua).
    notes: Vec<frontier::LearnOp>,
    delays: Vec<(String, u64)>,
    requeued: u64,
}

/// Where a new entry was found (see [`RedisWriter::write_batch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// A page's link.
    Link,
    /// A page a sitemap or feed lists.
    Listed,
    /// A sitemap or feed a page leads to (its host's, or one it announces).
    Listing,
    /// A sitemap a sitemap index lists, at its nest (`Entry::nest`).
    ListedListing(u32),
}

impl Found {
    /// A sitemap or feed, not a page: queued as a listing entry, and not
    /// a duplicate page when its URL is known already.
    fn is_listing(self) -> bool {
        self.nest().is_some()
    }

    /// Its nest when it is a listing (`encode_kind`).
    fn nest(self) -> Option<u32> {
        match self {
            Found::Listing => Some(0),
            Found::ListedListing(n) => Some(n),
            Found::Link | Found::Listed => None,
        }
    }
}

/// An ack's learner write of `kind` (see ack.lua) with two arguments.
fn learn_op(kind: &str, a: &str, b: &str) -> frontier::LearnOp {
    [
        kind.as_bytes().to_vec(),
        a.as_bytes().to_vec(),
        b.as_bytes().to_vec(),
        Vec::new(),
    ]
}

fn io(e: anyhow::Error) -> anyhow::Error {
    e.context("cannot write the outputs")
}

impl RedisWriter {
    /// Steps 2 and 3 of a commit for every outcome whose lease is not in
    /// `lost`: output lines (not yet synced), counters in `self.state`,
    /// releases, requeues and new links.
    fn write_batch(&mut self, batch: &[Outcome], judged: &Judged, lost: &HashSet<u64>) -> Result<Written> {
        let mut releases = Vec::with_capacity(batch.len());
        let mut requeued = 0u64;
        // Each with what led to it (`Entry::via`: `None` for none known).
        let mut links: Vec<(Candidate, u32, Option<String>)> = Vec::new();
        // Sitemaps and feeds to read (a page's, or an index's: only the
        // latter count as `listed`, as in the local mode), and the pages
        // listings gave (counted as `listed` when new).
        let mut listing_links: Vec<(Candidate, u32, Found, Option<String>)> = Vec::new();
        let mut listed_links: Vec<(Candidate, u32, Option<String>)> = Vec::new();
        let mut notes: Vec<frontier::LearnOp> = Vec::new();
        let mut delays: BTreeMap<String, u64> = BTreeMap::new();
        let mut page_no = 0;
        for o in batch {
            if let Outcome::Page(_) = o {
                page_no += 1;
            }
            if lost.contains(&o.seq()) {
                continue;
            }
            self.retry_waits.done(o.url());
            if let Outcome::Failed { exchanges, .. } = o {
                // What it received is archived, retried or not.
                self.recorder().exchanges(exchanges).map_err(io)?;
            }
            match o {
                Outcome::Failed { entry, kind, .. } if let Some(delay) = self.requeues.delay(o) => {
                    self.retry_waits.waiting(
                        &entry.url,
                        crate::frontier::now_ms().saturating_add(delay),
                        kind,
                    );
                    let again = encode_again(entry, entry.attempts + 1);
                    releases.push(Release {
                        lease: entry.seq,
                        again: Some((again, delay)),
                        uncount: true,
                    });
                    self.state.stats.requeued += 1;
                    requeued += 1;
                }
                // A sitemap or feed that is not there (most hosts have no
                // /sitemap.xml): nothing to say, and not a page.
                Outcome::Failed {
                    entry,
                    status: Some(404 | 410),
                    ..
                } if entry.listing => releases.push(Release {
                    lease: entry.seq,
                    again: None,
                    uncount: true,
                }),
                // Any other failure of one: a line, not a failed page.
                Outcome::Failed { entry, error, .. } if entry.listing => {
                    self.recorder()
                        .listing_problem(entry.url.as_str(), entry.via.as_deref(), error)
                        .map_err(io)?;
                    releases.push(Release {
                        lease: entry.seq,
                        again: None,
                        uncount: true,
                    });
                }
                Outcome::Failed {
                    entry, kind, error, ..
                } => {
                    self.recorder()
                        .failure(entry.url.as_str(), entry.via.as_deref(), kind, error)
                        .map_err(io)?;
                    releases.push(Release {
                        lease: entry.seq,
                        again: None,
                        uncount: false,
                    });
                }
                // Not fetched: a URL rewrite rule maps it elsewhere. Folded
                // again here (a rule withdrawn since the page task folded
                // it no longer applies: the entry goes back, claimed, under
                // its own URL); the lease ends and its page is not counted.
                // Revisits are the single-machine mode's (`crate::revisit`):
                // the shared frontier never holds one.
                Outcome::NotModified { entry, .. } => releases.push(Release {
                    lease: entry.seq,
                    again: None,
                    uncount: false,
                }),
                // A sitemap or feed read: its pages and sitemaps become
                // entries as links do, what it says of them is kept, and
                // its lease does not count against the page budget.
                Outcome::Listing {
                    entry,
                    kind,
                    pages,
                    listings,
                    problems,
                    exchanges,
                } => {
                    self.recorder().exchanges(exchanges).map_err(io)?;
                    self.state.stats.listings += 1;
                    notes.push(learn_op("listing", entry.url.as_str(), kind.as_str()));
                    if entry.depth < self.max_depth {
                        for (c, hints) in pages {
                            if !hints.is_empty() {
                                notes.push(learn_op(
                                    "hint",
                                    c.url().as_str(),
                                    &hints.stored(c.url().as_str()),
                                ));
                            }
                            listed_links.push((c.clone(), entry.depth + 1, Some(entry.url.to_string())));
                        }
                    }
                    // Deeper than the bound: not read, and said in the
                    // summary (the per-host bound is the ack script's).
                    let nest = entry.nest.saturating_add(1);
                    if self.listing_bounds.too_deep(nest) {
                        self.state.stats.listings_skipped += listings.len() as u64;
                    } else {
                        listing_links.extend(listings.iter().map(|c| {
                            (
                                c.clone(),
                                entry.depth,
                                Found::ListedListing(nest),
                                Some(entry.url.to_string()),
                            )
                        }));
                    }
                    for p in problems {
                        self.recorder()
                            .listing_problem(entry.url.as_str(), entry.via.as_deref(), p)
                            .map_err(io)?;
                    }
                    releases.push(Release {
                        lease: entry.seq,
                        again: None,
                        uncount: true,
                    });
                }
                Outcome::Rewritten { entry, .. } => {
                    let folded = self.dust.lock().fold_by(&entry.url);
                    let again = match folded {
                        None => {
                            self.state.stats.dust_restored += 1;
                            Some((encode_again(entry, entry.attempts), 0))
                        }
                        Some((fold, by)) => {
                            self.state.stats.dust_rewritten += 1;
                            Rewrites::new(&mut self.learn, self.max_recorded).record(
                                &by,
                                &entry.url,
                                entry.depth,
                                true,
                            )?;
                            if let Fold::Rewritten(to) = fold
                                && let Some(c) = Candidate::new(self.deduper.canonicalizer(), to)
                            {
                                links.push((c, entry.depth, entry.via.clone()));
                            }
                            None
                        }
                    };
                    releases.push(Release {
                        lease: entry.seq,
                        again,
                        uncount: true,
                    });
                }
                Outcome::Page(p) if judged.waiting[page_no - 1] => {
                    // Back behind the canonical it declared, which is
                    // queued unless the URL tier knows it: no line yet.
                    let again = Entry {
                        waited: true,
                        ..p.entry.clone()
                    };
                    releases.push(Release {
                        lease: p.entry.seq,
                        again: Some((encode_again(&again, again.attempts), crate::canonical::WAIT_MS)),
                        uncount: true,
                    });
                    if let Some(c) = &p.wait_for {
                        links.push((c.clone(), p.entry.depth, Some(p.entry.url.to_string())));
                    }
                    self.state.stats.canonical_waits += 1;
                    requeued += 1;
                }
                Outcome::Page(p) => {
                    let i = page_no - 1;
                    releases.push(Release {
                        lease: p.entry.seq,
                        again: None,
                        uncount: false,
                    });
                    if let Some(cd) = self.fetcher.crawl_delay(&p.entry.url) {
                        delays.insert(
                            host_key(&p.entry.url),
                            u64::try_from(cd.as_millis()).unwrap_or(u64::MAX),
                        );
                    }
                    self.write_page(p, judged.redirected[i], judged.verdicts[i].as_ref())?;
                    if !judged.redirected[i] && p.entry.depth < self.max_depth {
                        self.fold_links(p, &mut links)?;
                        // Its host's sitemaps (the first page of the host
                        // this worker fetched) and the feeds it announces,
                        // at its own depth: their pages come one deeper.
                        listing_links.extend(p.listings.iter().map(|c| {
                            (
                                c.clone(),
                                p.entry.depth,
                                Found::Listing,
                                Some(p.entry.url.to_string()),
                            )
                        }));
                    }
                    for (at, problem) in &p.listing_problems {
                        self.recorder()
                            .listing_problem(at, Some(p.entry.url.as_str()), problem)
                            .map_err(io)?;
                    }
                }
            }
        }
        // 2. Links the URL tier has not seen become entries: pages (from
        // links, then from listings), then sitemaps and feeds. A URL seen
        // as a listing is not a duplicate page: not counted as one.
        let mut here = HashSet::new();
        let mut fresh_links = Vec::new();
        let tagged = links
            .into_iter()
            .map(|(c, d, via)| (c, d, Found::Link, via))
            .chain(
                listed_links
                    .into_iter()
                    .map(|(c, d, via)| (c, d, Found::Listed, via)),
            )
            .chain(listing_links);
        for (c, depth, found, via) in tagged {
            if here.insert(c.canonical().digest()) {
                fresh_links.push((c, depth, found, via));
            } else if !found.is_listing() {
                self.state.stats.verdicts.dup_url += 1;
            }
        }
        let candidates: Vec<Candidate> = fresh_links.iter().map(|(c, _, _, _)| c.clone()).collect();
        let d = self.deduper.clone();
        let new = retry("check links against the URL tier", self.frontier.url(), || {
            unseen(&d, &candidates)
        })?;
        let mut queued = Vec::new();
        for ((c, depth, found, via), is_new) in fresh_links.into_iter().zip(new) {
            if is_new {
                queued.push((
                    host_key(c.url()),
                    encode_kind(
                        &Claim::Pending(self.tokens.next()),
                        0,
                        depth,
                        c.url(),
                        found.nest(),
                        via.as_deref(),
                    ),
                ));
                if matches!(found, Found::Listed | Found::ListedListing(_)) {
                    self.state.stats.listed += 1;
                }
            } else if !found.is_listing() {
                self.state.stats.verdicts.dup_url += 1;
            }
        }
        Ok(Written {
            releases,
            links: queued,
            notes,
            delays: delays.into_iter().collect(),
            requeued,
        })
    }

    /// The links of `p` into `links`, folded by the DUST rules first (a
    /// link into a duplicate URL space under the URL it is rewritten to,
    /// recorded with the rules that made it; one whose page is known is
    /// dropped as a URL-tier copy).
    fn fold_links(
        &mut self,
        p: &PageResult,
        links: &mut Vec<(Candidate, u32, Option<String>)>,
    ) -> Result<()> {
        let depth = p.entry.depth + 1;
        let via = || Some(p.entry.url.to_string());
        let dust = self.dust.clone();
        let dust = dust.lock();
        for link in &p.links {
            let Some((fold, by)) = dust.fold_by(link.url()) else {
                links.push((link.clone(), depth, via()));
                continue;
            };
            self.state.stats.dust_links_rewritten += 1;
            Rewrites::new(&mut self.learn, self.max_recorded).record(&by, link.url(), depth, false)?;
            match fold {
                Fold::Known => self
                    .state
                    .stats
                    .verdicts
                    .record_duplicate(simcrawl_dedup::Tier::Url),
                Fold::Rewritten(u) => {
                    if let Some(c) = Candidate::new(self.deduper.canonicalizer(), u) {
                        links.push((c, depth, via()));
                    }
                }
            }
        }
        Ok(())
    }

    /// What this worker learnt since its last ack, as writes for the next
    /// one: the records of the rules it withdrew given back (by the ack
    /// script), rules learnt and blocked, template hosts (when due). At
    /// least every [`LEARN_SYNC`], the rules the other workers published
    /// are taken up first (and after any ack that says they changed).
    fn learnt(&mut self) -> Result<Vec<frontier::LearnOp>> {
        if self.last_sync.elapsed() >= LEARN_SYNC {
            self.take_up_rules()?;
        }
        let mut dust = self.dust.lock();
        let withdrawn = dust.take_withdrawn();
        if !withdrawn.is_empty() {
            Rewrites::new(&mut self.learn, self.max_recorded)
                .take(&withdrawn, |host| dust.learnt_of(host))?;
        }
        dust.save_if_changed(&mut self.learn)?;
        let min = dust.min_examples();
        for (rule, digest) in dust.take_examples() {
            self.learn.example(&rule, digest, min);
        }
        for (rule, image) in dust.take_images() {
            self.learn.image(&rule, image);
        }
        drop(dust);
        self.templates.save_if_due(&mut self.learn, Save::IfDue)?;
        Ok(self.learn.take_ops().0)
    }

    /// Takes up the DUST rules (and withdrawals) all workers published.
    fn take_up_rules(&mut self) -> Result<()> {
        // The version first: a change made while the rules are read is
        // taken up again at the next ack.
        let version = self.frontier.rules_version();
        let learn = &mut self.learn;
        let entries = retry("read the URL rewrite rules", self.frontier.url(), || {
            Ok(learn.entries(Map::DustRules)?)
        })?;
        let from = self.images_seen;
        let (images, end) = retry("read the kept URLs' images", self.frontier.url(), || {
            Ok(learn.images_since(from)?)
        })?;
        let mut dust = self.dust.lock();
        dust.merge(&entries);
        dust.merge_images(&images);
        drop(dust);
        self.images_seen = end;
        self.last_sync = Instant::now();
        self.rules_seen = version;
        Ok(())
    }

    /// The recorder of this worker's outputs and counters.
    fn recorder(&mut self) -> Recorder<'_> {
        Recorder {
            outputs: &mut self.outputs,
            stats: &mut self.state.stats,
            write_text: self.write_text,
        }
    }

    /// One fetched page's line, records and counters.
    fn write_page(&mut self, p: &PageResult, redirected: bool, verdict: Option<&Verdict>) -> Result<()> {
        let mut rec = self.recorder();
        rec.fetched(p).map_err(io)?;
        if redirected {
            return rec.url_copy(p).map_err(io);
        }
        rec.judged(p, verdict).map_err(io)
    }
}

impl Commits for RedisWriter {
    fn commit(&mut self, batch: Vec<Outcome>) -> Result<Committed> {
        let seqs: Vec<u64> = batch.iter().map(Outcome::seq).collect();
        let pages: Vec<&PageResult> = batch
            .iter()
            .filter_map(|o| match o {
                Outcome::Page(p) => Some(&**p),
                _ => None,
            })
            .collect();
        // 1. Verdicts: redirect targets, then the title and content tiers of
        // every page that is judged, in one transaction.
        let targets: Vec<Option<(String, CanonicalUrl)>> = pages
            .iter()
            .map(|p| p.redirect_target(self.deduper.canonicalizer()))
            .collect();
        let redirected = self.redirects_seen(&targets)?;
        // The shared mode keeps no page records to tell a canonical judged
        // already: a page declaring another URL waits behind it once.
        let waiting: Vec<bool> = (0..pages.len())
            .map(|i| !redirected[i] && pages[i].wait_for.is_some())
            .collect();
        let judged: Vec<usize> = (0..pages.len())
            .filter(|&i| !redirected[i] && !waiting[i] && !pages[i].noindex && !pages[i].filtered_lang)
            .collect();
        let sigs: Vec<Signature> = judged.iter().map(|&i| pages[i].sig.clone()).collect();
        let d = self.deduper.clone();
        let verdicts = retry("check pages against the tiers", self.frontier.url(), || {
            Ok(d.check_batch(&sigs, UrlTier::Skip)?)
        })?;
        let mut verdict_of: Vec<Option<Verdict>> = vec![None; pages.len()];
        for (i, v) in judged.into_iter().zip(verdicts) {
            verdict_of[i] = Some(v);
        }
        for (i, p) in pages.iter().enumerate() {
            // The pages waiting behind this URL learn whether they copy it.
            if !redirected[i]
                && let Ok(c) = self.deduper.canonicalizer().from_url(p.entry.url.clone())
            {
                self.canonicals.fetched(c.digest(), &p.sig);
            }
            if redirected[i] || waiting[i] {
                self.dust.lock().probe_done(&p.entry.url, false);
                if let Some(c) = p.wait_for.as_ref().filter(|_| waiting[i]) {
                    self.canonicals.waits(&p.entry, &p.sig, c);
                }
                continue;
            }
            self.templates.observe(host_of(&p.final_url), &p.own_text);
            // DUST: a copy is evidence for the rewrite between its URL and
            // its kept page's; a kept page may be a counter-example.
            let mut dust = self.dust.lock();
            match &verdict_of[i] {
                Some(Verdict::Unique { .. }) => dust.observe_kept(&p.entry.url),
                Some(Verdict::Duplicate(d)) => dust.observe_duplicate(&p.entry.url, &d.of),
                _ => {} // non_exhaustive in simcrawl-dedup
            }
            let kept = matches!(verdict_of[i], Some(Verdict::Unique { .. }));
            dust.probe_done(&p.entry.url, kept);
            drop(dust);
        }
        for o in &batch {
            if let Outcome::Failed { entry, .. } = o {
                self.dust.lock().probe_done(&entry.url, false);
            }
        }
        let judged = Judged {
            redirected: &redirected,
            verdicts: &verdict_of,
            waiting: &waiting,
        };
        // 2-4, again without the pages of leases found taken back.
        let before = self.state.stats.clone();
        let at = self.state.offsets;
        self.batch_no += 1;
        let mut lost: HashSet<u64> = HashSet::new();
        // What the learners learnt from this batch's verdicts: the same in
        // every attempt of the ack.
        let mut learnt: Option<Vec<frontier::LearnOp>> = None;
        loop {
            self.state.stats = before.clone();
            self.learn.discard_ops();
            let written = self.write_batch(&batch, &judged, &lost)?;
            // The rewrites this attempt recorded, then what was learnt
            // (a withdrawal gives back the records made before it).
            let (mut ops, max_recorded) = self.learn.take_ops();
            ops.extend(written.notes.iter().cloned());
            let tail = match learnt.take() {
                Some(t) => t,
                None => self.learnt()?,
            };
            ops.extend(tail.iter().cloned());
            learnt = Some(tail);
            self.state.stats.dust_rules = self
                .dust
                .lock()
                .learnt()
                .iter()
                .map(ToString::to_string)
                .collect();
            // 3. The lines are on disk before the leases are released.
            self.state.offsets = self.outputs.sync().map_err(io)?;
            self.state.stats.seconds = self.base_seconds + self.run_started.elapsed().as_secs_f64();
            self.state.stats.hosts_evicted = self.base_hosts_evicted + self.fetcher.hosts_evicted();
            self.state.stats.throttled = self.base_throttled + self.fetcher.throttled();
            // 4. One acknowledgement, applied at most once.
            let ack = Ack {
                batch: self.batch_no,
                releases: written.releases,
                links: written.links,
                counters: before.counter_delta(&self.state.stats),
                delays: written.delays,
                state: serde_json::to_string(&self.state)?,
                once: String::new(),
                learn: ops,
                max_recorded,
                max_listings_per_host: self.listing_bounds.per_host,
            };
            // Debug builds only, for the end-to-end tests: the worker dies
            // (as by kill -9) with a batch's lines written and not
            // acknowledged: `redirect`, the first batch with a redirected
            // page (its target must not count as seen yet); a number N, the
            // N-th batch that wrote lines (a batch of listings alone, such
            // as a missing /sitemap.xml, writes none, and its place in the
            // order depends on timing).
            #[cfg(debug_assertions)]
            if let Ok(when) = std::env::var("SIMCRAWL_TEST_ABORT_BEFORE_ACK") {
                static LINED_BATCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let wrote = self.state.offsets != at;
                let lined = LINED_BATCHES.fetch_add(u64::from(wrote), std::sync::atomic::Ordering::Relaxed)
                    + u64::from(wrote);
                if (when == "redirect" && targets.iter().any(Option::is_some))
                    || (wrote && when.parse::<u64>().is_ok_and(|n| n == lined))
                {
                    std::process::abort();
                }
            }
            let reply = retry("acknowledge results", self.frontier.url(), || {
                self.frontier.ack(&self.worker, self.cap, &ack)
            })?;
            if let AckReply::Refused(ids) = reply {
                if ids.iter().all(|id| lost.contains(id)) {
                    bail!(
                        "the shared frontier refused an acknowledgement again for leases it left out: {ids:?}"
                    );
                }
                warn!(
                    leases = ids.len(),
                    "leases expired before their results were acknowledged: another worker took \
                     their pages back; writing the batch again without them"
                );
                lost.extend(ids);
                self.outputs.cut_to(at).map_err(io)?;
                continue;
            }
            // 5. Redirect targets of the pages this commit wrote count as
            // seen from now on.
            let kept_targets: Vec<(String, CanonicalUrl)> = pages
                .iter()
                .zip(&targets)
                .zip(redirected.iter().zip(&waiting).map(|(r, w)| *r || *w))
                .filter(|((p, _), skip)| !*skip && !lost.contains(&p.entry.seq))
                .filter_map(|((_, t), _)| t.clone())
                .collect();
            self.record_targets(&kept_targets)?;
            // 6. A rule another worker learnt (or withdrew) since: taken up
            // now, before this worker leases and fetches more of the
            // duplicate space it closes.
            self.last_heard = Instant::now();
            if self.frontier.rules_version() != self.rules_seen {
                self.take_up_rules()?;
            }
            *self.shared.lock() = self.state.stats.clone();
            return Ok(Committed {
                seqs,
                added: ack.links.len() as u64,
                requeued: written.requeued,
            });
        }
    }

    /// Every commit is durable when it returns (outputs fsynced, then acknowledged).
    fn durable_due_in(&self) -> Option<Duration> {
        None
    }

    fn make_durable(&mut self) -> Result<()> {
        Ok(())
    }

    fn between_commits(&mut self) -> Result<()> {
        if self.last_cut.elapsed() >= CUT_GONE_EVERY {
            cut_gone_workers(&self.frontier, &self.out_root, &self.warc, &self.worker)?;
            self.last_cut = Instant::now();
        }
        let d = self.deduper.clone();
        retry("purge expired entries", self.frontier.url(), || {
            Ok(d.purge_if_due().map(drop)?)
        })
    }

    /// A worker with nothing to commit acks nothing, so no ack tells it
    /// that the shared rules changed; its page tasks may be waiting for
    /// the verdicts of probes that another worker's verdicts already
    /// settled. So an idle writer asks for the rules' version itself.
    fn tick_in(&self) -> Option<Duration> {
        Some(IDLE_SYNC.saturating_sub(self.last_heard.elapsed()))
    }

    fn tick(&mut self) -> Result<u64> {
        self.last_heard = Instant::now();
        let version = retry("read the URL rewrite rules' version", self.frontier.url(), || {
            self.frontier.read_rules_version()
        })?;
        if version != self.rules_seen {
            self.take_up_rules()?;
        }
        Ok(0)
    }

    /// What was learnt since the last ack (template hosts not due yet,
    /// rules) is published in an ack of its own, so nothing learnt is lost.
    fn finish(&mut self) -> Result<()> {
        // Every commit was synced and acknowledged: the last WARC file is
        // final (until this worker resumes) and gets its CDXJ index.
        self.outputs.close()?;
        self.learn.discard_ops();
        let mut ops = self.learnt()?;
        self.templates.save_if_due(&mut self.learn, Save::Now)?;
        ops.extend(self.learn.take_ops().0);
        if ops.is_empty() {
            return Ok(());
        }
        let ack = Ack {
            learn: ops,
            ..Ack::held(Vec::new(), Vec::new(), Vec::new())
        };
        retry("publish what was learnt", self.frontier.url(), || {
            self.frontier.ack_held(&self.worker, self.cap, &ack)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A claim is fetched when it is new or the entry's own (its token),
    /// dropped when another entry made it, and one URL is fetched once per
    /// call whichever of its entries comes first.
    #[test]
    fn claims_tell_an_entry_s_own_claim_from_another_s() {
        let d = Deduper::new(
            simcrawl_dedup::MemoryStore::new(),
            simcrawl_dedup::DedupConfig::default(),
        )
        .unwrap();
        let entry = |u: &str, token: &str| {
            let url = Url::parse(u).unwrap();
            let e = Entry {
                seq: 0,
                url,
                depth: 0,
                attempts: 0,
                not_before_ms: 0,
                revisit: None,
                listing: false,
                nest: 0,
                via: None,
                waited: false,
            };
            (e, token.to_string())
        };
        let claim = |entries: &[(Entry, String)]| {
            let canon: Vec<Option<CanonicalUrl>> = entries
                .iter()
                .map(|(e, _)| d.canonicalizer().from_url(e.url.clone()).ok())
                .collect();
            d.store().write(|t| claim_in(&d, t, entries, &canon)).unwrap()
        };
        // First claims: new; a second entry of /a in the same call is dropped.
        assert_eq!(
            claim(&[
                entry("http://h/a", "t1"),
                entry("http://h/a", "t2"),
                entry("http://h/b", "t3")
            ]),
            [true, false, true]
        );
        // /a again: its own entry (t1, taken back from a stalled worker) is
        // fetched, even after another entry of it in the same call; t2 is not.
        assert_eq!(
            claim(&[entry("http://h/a", "t2"), entry("http://h/a", "t1")]),
            [false, true]
        );
        // An entry of an older crawl (no token) never counts as its own.
        assert_eq!(claim(&[entry("http://h/b", "")]), [false]);
        assert_eq!(
            claim(&[entry("http://h/c", ""), entry("http://h/c", "")]),
            [true, false]
        );
    }

    #[test]
    fn worker_ids_are_safe_names() {
        assert_eq!(worker_id("w-1.a_b").unwrap(), "w-1.a_b");
        assert!(worker_id("../x").is_err());
        assert!(worker_id("a b").is_err());
        let auto = worker_id("").unwrap();
        assert!(auto.ends_with(&format!("-{}", std::process::id())), "{auto}");
        assert!(!auto.contains('/'));
    }
}
