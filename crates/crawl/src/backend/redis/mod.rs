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
//! backoff ([`retry::retry`]), and goes on when Redis is back.

mod entry;
pub mod frontier;
pub mod learn;
mod retry;
mod source;
mod store;
mod url_tier;
mod workers;
mod writer;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use parking_lot::Mutex;
use tracing::{info, warn};
use url::Url;

use self::frontier::{RedisFrontier, retry};
use self::learn::RedisLearn;
use self::source::RedisSource;
pub use self::store::{SharedStore, SharedTiers};
use self::url_tier::enqueue_seeds;
pub use self::workers::worker_id;
use self::workers::{DirLock, WorkerState, cut_gone_workers};
use self::writer::RedisWriter;
use crate::backend::local::state;
use crate::config::Config;
use crate::daemon::dispatch::Dispatch;
use crate::daemon::worker::Signer;
use crate::daemon::{Start, drive, page_stages, remove_if_exists, write_stats};
use crate::dust::Dust;
use crate::output::sinks::Outputs;
use crate::stats::{Ended, Run, Stats};
use crate::template::Templates;

/// How often a worker with nothing to fetch asks the shared frontier
/// again (others may be adding links, or holding leases that may expire).
const POLL: Duration = Duration::from_millis(100);

/// What the source and the writer of this worker share.
struct Shared {
    deduper: Arc<SharedTiers>,
    frontier: Arc<RedisFrontier>,
    worker: String,
    /// `fetch.per_host_concurrency`: a host's leases in flight, all
    /// workers together.
    cap: usize,
}

/// What the workers learnt so far (site templates, DUST rules), loaded
/// from Redis by [`load_learners`]; what this one learns goes with its
/// acks.
struct Learners {
    /// The learners' store: reads from Redis, writes carried by the ack.
    learn: RedisLearn,
    templates: Templates,
    dust: Arc<Mutex<Dust>>,
}

/// Runs this process as one worker of the crawl shared through Redis.
pub fn run(mut cfg: Config, seeds: &[Url], start: Start) -> Result<Run> {
    let r = cfg.redis.clone();
    let worker = worker_id(&r.worker_id)?;
    let shown = frontier::redact(&r.url);
    let (store, frontier) = open_shared(&cfg, &shown)?;
    if start == Start::Fresh {
        warn!(
            "--fresh: deleting every key of namespace {} in Redis at {shown} (the whole shared crawl)",
            r.namespace
        );
        store.clear().context("cannot clear the shared crawl state")?;
    }
    let deduper = Arc::new(state::open_deduper(store, &mut cfg)?);
    let out_dir = cfg.crawl.out_dir.join(&worker);
    // Before anything in it is touched: one live process per directory.
    let _lock = DirLock::take(&out_dir, &worker)?;
    if start == Start::Fresh {
        for name in Outputs::FILES.iter().chain(["stats.json"].iter()) {
            remove_if_exists(&out_dir.join(name))?;
        }
    }
    let resumed = resume(&cfg, &frontier, &worker, &out_dir, start)?;
    cut_gone_workers(&frontier, &cfg.crawl.out_dir, &cfg.output, &worker)?;
    info!(
        worker = %worker,
        out = %out_dir.display(),
        namespace = %r.namespace,
        "worker of the crawl shared in Redis at {shown}"
    );
    let shared = Shared {
        deduper,
        frontier,
        worker,
        cap: cfg.fetch.per_host_concurrency.max(1),
    };
    let added = enqueue_seeds(
        &shared.deduper,
        &shared.frontier,
        seeds,
        &shared.worker,
        shared.cap,
    )?;
    info!(
        seeds = seeds.len(),
        new = added,
        "seeds offered to the shared frontier"
    );
    let learners = load_learners(&cfg, &shared)?;
    let signer: Signer = {
        let d = shared.deduper.clone();
        Arc::new(move |page, id, own| crate::identity::sign_page(&d, page, id, own))
    };
    let canon = shared.deduper.canonicalizer().clone();
    let stages = page_stages(
        &cfg,
        seeds,
        signer,
        canon,
        learners.templates.clone(),
        learners.dust.clone(),
    )?;
    let shared_stats = Arc::new(Mutex::new(resumed.1.stats.clone()));
    let concurrency = cfg.crawl.concurrency.max(1);
    let writer = RedisWriter::new(&cfg, &shared, resumed, &stages, shared_stats.clone(), learners);
    let source = RedisSource::new(&shared, &cfg, concurrency);
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
    let ended = judge_shared(ended, &before, &stats, &shared.frontier);
    write_stats(&out_dir, &stats, ended)?;
    // The crawl is over: whatever a gone worker wrote past its last
    // acknowledgement was taken back and written by another.
    cut_gone_workers(&shared.frontier, &cfg.crawl.out_dir, &cfg.output, &shared.worker)?;
    Ok(Run { stats, before, ended })
}

/// How a worker's run ended ([`Ended::judge`]), with "nothing fetched"
/// judged on the whole shared crawl: a worker whose only pages failed
/// while the others fetched the site has not failed (its exit status 4
/// would fail a script that runs the workers), so the merged counters
/// decide. When they cannot be read, the worker's own judgement stands.
fn judge_shared(ended: Ended, before: &Stats, mine: &Stats, frontier: &RedisFrontier) -> Ended {
    let judged = ended.judge(before, mine);
    if judged != Ended::NothingFetched {
        return judged;
    }
    match frontier.counters() {
        Ok(c) if !stats_from_counters(&c).every_fetch_failed() => ended,
        Ok(_) => judged,
        Err(e) => {
            warn!("cannot read the shared crawl's counters to judge how it ended: {e:#}");
            judged
        }
    }
}

/// Opens the shared crawl state (the tiers' store) and the shared frontier
/// in Redis (`shown`: its URL as logged).
fn open_shared(cfg: &Config, shown: &str) -> Result<(SharedStore, Arc<RedisFrontier>)> {
    let r = &cfg.redis;
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
    Ok((store, frontier))
}

/// Where `worker` stands in Redis: its last acknowledged batch number, the
/// state recorded with it, and its outputs in `out_dir` opened at the
/// offsets that state records.
fn resume(
    cfg: &Config,
    frontier: &RedisFrontier,
    worker: &str,
    out_dir: &std::path::Path,
    start: Start,
) -> Result<(u64, WorkerState, Outputs)> {
    let (batch_no, state_json) = retry("read this worker's state", frontier.url(), || {
        frontier.worker_state(worker)
    })?;
    let ws: WorkerState = if state_json.is_empty() {
        // Nothing of this worker was ever acknowledged: outputs already
        // there are not its (another crawl's, or its Redis state was
        // cleared), and are not truncated.
        let bytes = crate::output::sinks::output_bytes(out_dir);
        if bytes > 0 {
            bail!(
                "{} holds {bytes} bytes of outputs that the crawl shared in namespace {:?} has no record of \
                 (another crawl's, or its Redis state was cleared): move them away, choose another \
                 --out or --worker-id, or run with --fresh to delete them",
                out_dir.display(),
                cfg.redis.namespace
            );
        }
        WorkerState::default()
    } else {
        serde_json::from_str(&state_json).context("unreadable worker state in Redis")?
    };
    let warc = crate::backend::open_warc(cfg, Some(worker), ws.offsets.warc, start == Start::Fresh)?;
    let outputs = Outputs::open(out_dir, ws.offsets)?.with_warc(warc);
    Ok((batch_no, ws, outputs))
}

/// Loads what the workers learnt so far (site templates, DUST rules) from
/// Redis; what this one learns goes with its acks.
fn load_learners(cfg: &Config, shared: &Shared) -> Result<Learners> {
    let frontier = &shared.frontier;
    let mut learn = RedisLearn::new(frontier.clone());
    let templates = retry("load the site templates", frontier.url(), || {
        Templates::load(&cfg.template, Some(&mut learn))
    })?;
    let mut dust = retry("load the URL rewrite rules", frontier.url(), || {
        Dust::load(
            &cfg.crawl.dust,
            Some(&mut learn),
            shared.deduper.canonicalizer().clone(),
        )
        .context("invalid [crawl.dust] settings")
    })?;
    dust.share_examples();
    // Loading writes nothing in Redis (no older blobs to convert there).
    learn.discard_ops();
    Ok(Learners {
        learn,
        templates,
        dust: Arc::new(Mutex::new(dust)),
    })
}

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
