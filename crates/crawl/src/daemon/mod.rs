//! `crawl --seeds FILE`: the crawler.
//!
//! Sources -> transforms -> sinks, one module per stage:
//!
//! - [`dispatch`]: the frontier feeds page tasks (async, polite), within the
//!   concurrency limits, until the frontier is done, the budget spent or a
//!   signal ([`signals`]) stops the crawl;
//! - [`worker`]: each task fetches its page, then cleans and signs it on the
//!   blocking pool (CPU work off the reactor);
//! - [`writer`]: one thread applies the dedup tiers, writes the outputs, and
//!   commits frontier, tiers and output offsets in one transaction per group
//!   of pages (group commit: it takes whatever results are ready, so groups
//!   grow with load and no result waits for a timer). Commits are visible at
//!   once and made durable at most every [`writer::DURABLE_EVERY`], and at
//!   the latest that long after the last one when no further result comes.
//!
//! The stored state is reached through one contract with two backends
//! ([`backend`]: a [`backend::Source`] for the dispatcher, a
//! [`backend::Commits`] for the writer): the redb file of one machine
//! (frontier, tiers and checkpoints committed in one transaction by
//! [`writer::Writer`]), or a Redis server shared by many workers
//! ([`redis_backend`], `--redis`). Everything else is the same code for both.

mod backend;
mod dispatch;
pub(crate) mod redis_backend;
pub(crate) mod signals;
pub(crate) mod worker;
mod writer;

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use parking_lot::Mutex;
use simcrawl_dedup::{Commit, Deduper, RedbStore};
use tokio::sync::mpsc;
use tracing::{info, warn};
use url::Url;

pub use self::redis_backend::print_stats;

use self::backend::{Commits, LocalSource, Source};
use self::dispatch::{Dispatch, TASKS_PER_HOST_CONNECTION, TICK, dispatch};
use self::worker::{Outcome, PageStages, Signer};
use self::writer::{Checkpoint, Writer, join_writer, writer_loop};
use crate::config::Config;
use crate::dust::Dust;
use crate::frontier::{self, Candidate, ScopeRules, Window};
use crate::output::sinks::Outputs;
use crate::state;
use crate::stats::Stats;
use crate::template::Templates;

/// The verdict store of a crawl: the dedup tiers over the redb file that
/// also holds the frontier and the checkpoints (one transaction commits
/// all of them).
pub type Tiers = Deduper<RedbStore>;

/// How long the async runtime may take to wind down its remaining tasks
/// (hung fetches, the metrics server) once the crawl is over: they hold
/// nothing that needs saving.
const RUNTIME_SHUTDOWN: Duration = Duration::from_secs(1);

/// Reads a seeds file: one URL per line, `#` comments, blank lines. Invalid
/// lines are reported with their line number and skipped.
pub fn read_seeds(path: &Path) -> Result<Vec<Url>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read seeds file {}", path.display()))?;
    let mut seeds = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match Url::parse(line) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => seeds.push(u),
            Ok(u) => warn!(
                "{}:{}: {line:?} is not an http(s) URL (scheme {}); skipped",
                path.display(),
                i + 1,
                u.scheme()
            ),
            Err(e) => warn!(
                "{}:{}: invalid seed URL {line:?}: {e}; skipped",
                path.display(),
                i + 1
            ),
        }
    }
    if seeds.is_empty() {
        bail!("no valid seed URL in {}", path.display());
    }
    Ok(seeds)
}

/// How a crawl treats the state and outputs of an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Delete them and start over (`--fresh`).
    Fresh,
    /// Resume where the earlier crawl stopped (the default).
    Resume,
}

/// Runs a crawl to completion (or until stopped); returns its counters
/// (this worker's, in the shared mode).
pub fn run(cfg: Config, seeds_path: &Path, start: Start) -> Result<Stats> {
    let seeds = read_seeds(seeds_path)?;
    info!("{}", crate::config::politeness(&cfg));
    if let Some(hint) = crate::config::one_host_hint(&cfg, &seeds) {
        warn!("{hint}");
    }
    if cfg.redis.url.is_empty() {
        run_local(cfg, &seeds, start)
    } else {
        redis_backend::run(cfg, &seeds, start)
    }
}

/// The single-machine crawl: frontier, tiers and checkpoints in one redb file.
fn run_local(cfg: Config, seeds: &[Url], start: Start) -> Result<Stats> {
    let data_dir = cfg.store.data_dir.clone();
    let out_dir = cfg.crawl.out_dir.clone();
    let db_path = data_dir.join("index.redb");
    if start == Start::Fresh {
        remove_if_exists(&db_path)?;
        for name in Outputs::FILES.iter().chain(["stats.json"].iter()) {
            remove_if_exists(&out_dir.join(name))?;
        }
    }
    // The writer decides when commits become durable (see `Writer::make_durable`);
    // the store must never upgrade one on its own.
    let store = RedbStore::open_with(&db_path, Duration::MAX)
        .with_context(|| format!("cannot open the crawl state in {}", data_dir.display()))?;
    let deduper = Arc::new(state::open_deduper(store, &cfg)?);
    // The learners load (and convert what earlier versions saved) in one
    // transaction.
    let (templates, dust) = crate::learn::redb_store::with_store(deduper.store().database(), |store| {
        let templates = Templates::load(&cfg.template, Some(&mut *store))?;
        let dust = Dust::load(&cfg.crawl.dust, Some(store), deduper.canonicalizer().clone())
            .context("invalid [crawl.dust] settings")?;
        Ok((templates, dust))
    })?;
    let dust = Arc::new(Mutex::new(dust));
    let mut cp = Checkpoint::load(deduper.store().database())?;
    if cp.stats.fetched > 0 {
        info!(
            fetched = cp.stats.fetched,
            kept = cp.stats.verdicts.kept,
            "resuming an interrupted crawl"
        );
    }
    let outputs = Outputs::open(&out_dir, cp.offsets)?;

    let added = enqueue_seeds(&deduper, seeds, &mut cp)?;
    info!(seeds = seeds.len(), new = added, "seeds loaded");

    let signer: Signer = {
        let d = deduper.clone();
        Arc::new(move |doc| d.sign(doc))
    };
    let canon = deduper.canonicalizer().clone();
    let stages = page_stages(&cfg, seeds, signer, canon, templates.clone(), dust.clone())?;
    let shared = Arc::new(Mutex::new(cp.stats.clone()));
    let base_fetched = cp.stats.fetched;
    let writer = Writer::new(
        deduper.clone(),
        outputs,
        cp,
        &cfg.crawl,
        shared.clone(),
        stages.fetcher.clone(),
        templates,
    )
    .with_dust(dust)
    .with_retry_waits(stages.retry_waits.clone());
    let source = LocalSource {
        window: Window::default(),
        deduper: deduper.clone(),
    };
    let settings = Dispatch {
        metrics: cfg.crawl.metrics.clone(),
        concurrency: cfg.crawl.concurrency.max(1),
        per_host: cfg.fetch.per_host_concurrency.max(1) * TASKS_PER_HOST_CONNECTION,
        max_pages: cfg.crawl.max_pages,
        base_fetched,
        tick: TICK,
    };
    drive(stages, source, writer, settings, shared.clone())?;
    deduper.flush()?;
    let stats = shared.lock().clone();
    write_stats(&out_dir, &stats)?;
    Ok(stats)
}

/// The page stages of a crawl from `seeds`: the fetcher (seeds on private
/// addresses open their own hosts), the cleaner, `sign`, the scope.
fn page_stages(
    cfg: &Config,
    seeds: &[Url],
    sign: Signer,
    canon: simcrawl_dedup::Canonicalizer,
    templates: Templates,
    dust: Arc<Mutex<Dust>>,
) -> Result<Arc<PageStages>> {
    let mut fetch_cfg = cfg.fetch.clone();
    let private = crate::config::private_seed_hosts(cfg, seeds);
    if !private.is_empty() {
        info!(hosts = ?private, "seeds on private addresses: their hosts may be fetched");
    }
    fetch_cfg.allow_private_hosts.extend(private);
    let fetcher = simcrawl_fetch::Fetcher::new(fetch_cfg).context("invalid [fetch] settings")?;
    let parse_slots = std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1));
    Ok(Arc::new(PageStages {
        fetcher,
        cleaner: simcrawl_clean::Cleaner::new(cfg.clean.clone()).context("invalid [clean] settings")?,
        sign,
        canon,
        scope: ScopeRules::new(&cfg.crawl, seeds)?,
        follow_nofollow: cfg.crawl.follow_nofollow,
        respect_noindex: cfg.crawl.respect_noindex,
        templates,
        parsing: tokio::sync::Semaphore::new(parse_slots as usize),
        parse_slots,
        dust,
        retry_waits: crate::progress::RetryWaits::default(),
    }))
}

/// Runs the pipeline over one backend: the writer thread on `writer`, the
/// dispatcher (and its page tasks) on `source`, until the crawl is over or
/// stopped and the writer has committed everything.
fn drive<S: Source, W: Commits>(
    stages: Arc<PageStages>,
    source: S,
    writer: W,
    settings: Dispatch,
    shared: Arc<Mutex<Stats>>,
) -> Result<()> {
    let (out_tx, out_rx) = std_mpsc::channel::<Outcome>();
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let writer_thread = std::thread::Builder::new()
        .name("crawl-writer".into())
        .spawn(move || writer_loop(writer, out_rx, done_tx))
        .context("cannot start the writer thread")?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let dispatched = runtime.block_on(dispatch(stages, source, settings, out_tx, done_rx, shared));
    // The writer ends when every sender is gone (the dispatcher dropped its own).
    let joined = join_writer(writer_thread);
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
    // A writer panic first: it explains whatever the dispatcher saw. Nothing
    // is flushed after it (outputs were not synced).
    joined?;
    dispatched
}

/// `stats.json` in `out_dir`.
fn write_stats(out_dir: &Path, stats: &Stats) -> Result<()> {
    let json = serde_json::to_string_pretty(stats)?;
    std::fs::write(out_dir.join("stats.json"), json)
        .with_context(|| format!("cannot write {}", out_dir.display()))
}

/// Puts the seeds in the frontier and commits `cp` with them (durably);
/// returns how many were new. Seeds enter through the URL tier like any
/// link: on a resume, those already seen are not fetched again.
fn enqueue_seeds(deduper: &Tiers, seeds: &[Url], cp: &mut Checkpoint) -> Result<u64> {
    let mut added = 0;
    deduper.store().write_with(Commit::Durable, |txn, tables| {
        let mut fr = frontier::open(txn)?;
        for c in seeds
            .iter()
            .filter_map(|s| Candidate::new(deduper.canonicalizer(), s.clone()))
        {
            if frontier::enqueue(deduper, tables, &mut fr, &mut cp.next_seq, &c, 0)? {
                added += 1;
            }
        }
        let mut st = state::open(txn)?;
        cp.put(&mut st)
    })?;
    Ok(added)
}

fn remove_if_exists(p: &Path) -> Result<()> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", p.display())),
    }
}
