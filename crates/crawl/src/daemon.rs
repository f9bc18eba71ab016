//! `crawl --seeds FILE`: the crawler.
//!
//! Sources -> transforms -> sinks: the frontier feeds fetch tasks (async,
//! polite); each fetched page is cleaned and signed on the blocking pool
//! (CPU work off the reactor); one writer thread applies the dedup tiers,
//! writes the sinks, and commits frontier, tiers and sink offsets in one
//! transaction per group of pages (group commit: it takes whatever results
//! are ready, so groups grow with load and no result waits for a timer).
//! Commits are visible at once and made durable at most every 250 ms, and
//! at the latest 250 ms after the last one when no further result comes.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use simcrawl_dedup::{
    CanonicalUrl, Commit, Deduper, Document, RedbStore, Signature, Tier, UrlTier, UrlVerdict, Verdict,
};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tracing::{info, warn};
use url::Url;

use crate::config::Config;
use crate::frontier::{self, Candidate, Entry, ScopeRules, Window};
use crate::progress::Progress;
use crate::sinks::{Offsets, Outputs};
use crate::state;
use crate::template::{Templates, host_of};

use crate::stats::Stats;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Checkpoint {
    next_seq: u64,
    offsets: Offsets,
    stats: Stats,
}

const CHECKPOINT_KEY: &str = "crawl:checkpoint";
/// Times a page waits for a host whose robots.txt is unavailable.
const ROBOTS_WAITS: u32 = 3;

/// What became of one frontier entry.
#[derive(Debug)]
enum Outcome {
    Page(Box<PageResult>),
    Failed {
        entry: Entry,
        kind: &'static str,
        error: String,
        /// The failure may pass: worth another attempt later.
        transient: bool,
    },
}

impl Outcome {
    fn seq(&self) -> u64 {
        match self {
            Outcome::Page(p) => p.entry.seq,
            Outcome::Failed { entry, .. } => entry.seq,
        }
    }
}

#[derive(Debug)]
struct PageResult {
    entry: Entry,
    final_url: Url,
    status: u16,
    title: String,
    text: String,
    links: Vec<Candidate>,
    sig: Signature,
    bytes: usize,
    truncated: bool,
    fetched_at: u64,
    /// The page asked not to be indexed (and noindex is respected).
    noindex: bool,
    /// It was signed without its host's template blocks.
    template_stripped: bool,
}

#[derive(Serialize)]
struct KeptLine<'a> {
    url: &'a str,
    final_url: &'a str,
    status: u16,
    title: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    simhash: Option<String>,
    depth: u32,
    fetched_at: u64,
}

#[derive(Serialize)]
struct DupLine<'a> {
    url: &'a str,
    tier: Tier,
    duplicate_of: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    distance: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    similarity: Option<f64>,
}

#[derive(Serialize)]
struct ErrorLine<'a> {
    url: &'a str,
    kind: &'a str,
    error: &'a str,
}

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

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Shared by fetch tasks.
struct Ctx {
    fetcher: simcrawl_fetch::Fetcher,
    cleaner: simcrawl_clean::Cleaner,
    deduper: Arc<Deduper<RedbStore>>,
    scope: ScopeRules,
    follow_nofollow: bool,
    respect_noindex: bool,
    templates: Templates,
}

async fn work(ctx: Arc<Ctx>, entry: Entry) -> Outcome {
    let scope_ctx = ctx.clone();
    let allow = move |u: &Url| scope_ctx.scope.allows(u);
    // A host whose robots.txt answered 5xx or could not be reached is
    // unavailable for a while (the fetcher says how long); the page waits
    // for it a few times before it counts as failed. The per-host limit of
    // the frontier window bounds how many tasks can wait on one host.
    let mut waits = 0;
    let fetched = loop {
        match ctx.fetcher.fetch(&entry.url, &allow).await {
            Ok(f) => break f,
            Err(simcrawl_fetch::FetchError::RobotsUnavailable { retry_in, .. }) if waits < ROBOTS_WAITS => {
                waits += 1;
                tokio::time::sleep(retry_in).await;
            }
            Err(e) => {
                return Outcome::Failed {
                    entry,
                    kind: e.kind(),
                    error: e.to_string(),
                    transient: e.is_transient(),
                };
            }
        }
    };
    let fetched_at = now_secs();
    let ctx2 = ctx.clone();
    let entry2 = entry.clone();
    // Parsing, conversion, segmentation and hashing are CPU work: off the
    // reactor threads, so fetching continues meanwhile.
    let job = tokio::task::spawn_blocking(move || {
        let ctx = ctx2;
        let entry = entry2;
        let page = match ctx
            .cleaner
            .parse(&fetched.body, fetched.content_type.as_deref(), &fetched.final_url)
        {
            Ok(p) => p,
            Err(e) => {
                return Outcome::Failed {
                    entry,
                    kind: "clean",
                    error: format!("cannot clean {}: {e}", fetched.final_url),
                    transient: false,
                };
            }
        };
        let follow = ctx.follow_nofollow || !page.meta_nofollow;
        // Canonical forms are computed here, on the worker pool, so the
        // single writer only does store lookups.
        let mut links: Vec<Candidate> = Vec::new();
        if follow {
            let mut seen = std::collections::HashSet::new();
            for l in &page.links {
                if (ctx.follow_nofollow || !l.nofollow)
                    && ctx.scope.allows(&l.url)
                    && let Some(c) = Candidate::new(l.url.clone())
                    && seen.insert(c.canonical().digest())
                {
                    links.push(c);
                }
            }
        }
        // Signed without the host's template, once learnt (crate::template).
        let stripped = ctx.templates.strip(host_of(&fetched.final_url), &page.text);
        let text = stripped.as_deref().unwrap_or(&page.text);
        let sig = ctx
            .deduper
            .sign(&Document::new(entry.url.as_str(), &page.title, text));
        Outcome::Page(Box::new(PageResult {
            final_url: fetched.final_url,
            status: fetched.status,
            title: page.title,
            text: page.text,
            links,
            sig,
            bytes: fetched.body.len(),
            truncated: fetched.truncated,
            fetched_at,
            noindex: ctx.respect_noindex && page.meta_noindex,
            template_stripped: stripped.is_some(),
            entry,
        }))
    });
    match job.await {
        Ok(o) => o,
        Err(e) => Outcome::Failed {
            entry,
            kind: "internal",
            error: format!("page processing failed: {e}"),
            transient: false,
        },
    }
}

/// Messages from the writer to the dispatcher.
#[derive(Debug)]
struct Committed {
    seqs: Vec<u64>,
    added: u64,
    /// Entries put back in the frontier for another attempt.
    requeued: u64,
}

struct Writer {
    deduper: Arc<Deduper<RedbStore>>,
    outputs: Outputs,
    cp: Checkpoint,
    max_depth: u32,
    write_text: bool,
    shared: Arc<Mutex<Stats>>,
    run_started: Instant,
    base_seconds: f64,
    /// Commits are made durable (outputs fsynced, then the store) at most
    /// this often; commits in between are visible at once but a crash rolls
    /// the store back to the last durable one, and the outputs are cut back
    /// to the offsets it recorded, so both always agree.
    durable_every: Duration,
    last_durable: Instant,
    /// A commit is visible (its lines are in the outputs) but not durable
    /// yet: the writer makes it durable within `durable_every` even if no
    /// new result arrives.
    not_durable: bool,
    /// `crawl.max_requeues` and `crawl.requeue_delay_ms`.
    max_requeues: u32,
    requeue_delay_ms: u64,
    /// For `hosts_evicted`: the fetcher's count this run, added to the
    /// count of earlier runs.
    fetcher: simcrawl_fetch::Fetcher,
    base_hosts_evicted: u64,
    templates: Templates,
}

impl Writer {
    /// Makes everything committed so far durable: outputs first, then the
    /// store, so a durable checkpoint never points past fsynced output.
    fn finish(&mut self) -> Result<()> {
        self.outputs.sync()?;
        self.deduper.flush().context("cannot flush the crawl state")?;
        self.last_durable = Instant::now();
        self.not_durable = false;
        Ok(())
    }

    /// How long the writer may wait for results before it must make the
    /// last commit durable; `None` when everything is durable.
    fn durable_due_in(&self) -> Option<Duration> {
        self.not_durable
            .then(|| self.durable_every.saturating_sub(self.last_durable.elapsed()))
    }

    fn commit(&mut self, batch: Vec<Outcome>) -> Result<Committed> {
        let mut seqs = Vec::with_capacity(batch.len());
        let mut added = 0u64;
        let mut requeued = 0u64;
        let deduper = self.deduper.clone();
        let before = self.cp.clone();
        let durable = self.last_durable.elapsed() >= self.durable_every;
        let commit = if durable {
            Commit::Durable
        } else {
            Commit::Periodic
        };
        let result = deduper.store().write_with(commit, |txn, tables| {
            let mut fr = frontier::open(txn)?;
            for o in &batch {
                seqs.push(o.seq());
                fr.remove(o.seq())?;
                match o {
                    Outcome::Failed {
                        entry,
                        transient: true,
                        ..
                    } if entry.attempts < self.max_requeues => {
                        // Back to the end of the frontier, after a delay
                        // that doubles with each attempt.
                        let delay = self
                            .requeue_delay_ms
                            .saturating_mul(1u64 << entry.attempts.min(20));
                        let due = frontier::now_ms().saturating_add(delay);
                        frontier::requeue(&mut fr, &mut self.cp.next_seq, entry, due)?;
                        self.cp.stats.requeued += 1;
                        requeued += 1;
                    }
                    Outcome::Failed {
                        entry, kind, error, ..
                    } => {
                        self.cp.stats.fetched += 1;
                        *self.cp.stats.errors.entry((*kind).to_string()).or_insert(0) += 1;
                        self.outputs
                            .errors
                            .write(&ErrorLine {
                                url: entry.url.as_str(),
                                kind,
                                error,
                            })
                            .map_err(state::caller_err)?;
                    }
                    Outcome::Page(p) => {
                        self.cp.stats.fetched += 1;
                        self.cp.stats.bytes += p.bytes as u64;
                        self.cp.stats.truncated += u64::from(p.truncated);
                        added += self.page(&deduper, tables, &mut fr, p)?;
                    }
                }
            }
            let offsets = if durable {
                self.outputs.sync()
            } else {
                self.outputs.flush()
            };
            self.cp.offsets = offsets.map_err(state::caller_err)?;
            self.cp.stats.seconds = self.base_seconds + self.run_started.elapsed().as_secs_f64();
            self.cp.stats.hosts_evicted = self.base_hosts_evicted + self.fetcher.hosts_evicted();
            let mut st = state::open(txn)?;
            self.templates.save_if_due(&mut st, false)?;
            state::put_json(&mut st, CHECKPOINT_KEY, &self.cp)
        });
        if let Err(e) = result {
            self.cp = before;
            return Err(e).context("cannot commit crawl results");
        }
        if durable {
            self.last_durable = Instant::now();
        }
        self.not_durable = !durable;
        *self.shared.lock() = self.cp.stats.clone();
        Ok(Committed {
            seqs,
            added,
            requeued,
        })
    }

    fn page(
        &mut self,
        deduper: &Deduper<RedbStore>,
        tables: &mut dyn simcrawl_dedup::Tables,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        p: &PageResult,
    ) -> simcrawl_dedup::Result<u64> {
        let io = state::caller_err;
        // A redirect to a URL the crawl already knows: that URL is (or will
        // be) fetched under its own name. Recorded as a URL-tier duplicate
        // of the target, so every fetched page leaves one line.
        if p.final_url != p.entry.url
            && let Ok(c) = CanonicalUrl::from_url(p.final_url.clone())
            && c != CanonicalUrl::from_url(p.entry.url.clone()).map_err(simcrawl_dedup::Error::Config)?
            && let UrlVerdict::Seen { .. } = deduper.check_url_in(tables, p.final_url.as_str(), c)?
        {
            self.cp.stats.verdicts.record_duplicate(Tier::Url);
            self.outputs
                .duplicates
                .write(&DupLine {
                    url: p.entry.url.as_str(),
                    tier: Tier::Url,
                    duplicate_of: p.final_url.as_str(),
                    distance: None,
                    similarity: None,
                })
                .map_err(io)?;
            return Ok(0);
        }
        // Observed once judged: a page never counts towards its own template.
        self.templates.observe(host_of(&p.final_url), &p.text);
        self.cp.stats.template_stripped += u64::from(p.template_stripped);
        let verdict = if p.noindex {
            // Not kept, not indexed: a line in errors.jsonl, kind "noindex"
            // (counted in `noindex`, not in `errors`).
            self.cp.stats.noindex += 1;
            self.outputs
                .errors
                .write(&ErrorLine {
                    url: p.entry.url.as_str(),
                    kind: "noindex",
                    error: "meta robots noindex: not kept",
                })
                .map_err(io)?;
            None
        } else {
            Some(deduper.check_in(tables, &p.sig, UrlTier::Skip)?)
        };
        if let Some(v) = &verdict {
            self.cp.stats.verdicts.record(v);
        }
        match verdict {
            None => {}
            Some(Verdict::Unique { fingerprint, .. }) => {
                self.outputs
                    .kept
                    .write(&KeptLine {
                        url: p.entry.url.as_str(),
                        final_url: p.final_url.as_str(),
                        status: p.status,
                        title: &p.title,
                        text: self.write_text.then_some(p.text.as_str()),
                        simhash: fingerprint.map(|f| f.to_string()),
                        depth: p.entry.depth,
                        fetched_at: p.fetched_at,
                    })
                    .map_err(io)?;
            }
            Some(Verdict::Duplicate(d)) => {
                self.outputs
                    .duplicates
                    .write(&DupLine {
                        url: p.entry.url.as_str(),
                        tier: d.tier,
                        duplicate_of: &d.of,
                        distance: d.distance,
                        similarity: d.similarity.map(crate::batch::round3),
                    })
                    .map_err(io)?;
            }
        }
        let mut added = 0;
        if p.entry.depth < self.max_depth {
            for link in &p.links {
                if frontier::enqueue(
                    deduper,
                    tables,
                    fr,
                    &mut self.cp.next_seq,
                    link,
                    p.entry.depth + 1,
                )? {
                    added += 1;
                } else {
                    self.cp.stats.verdicts.record_duplicate(Tier::Url);
                }
            }
        }
        Ok(added)
    }
}

fn writer_loop(
    mut w: Writer,
    rx: std_mpsc::Receiver<Outcome>,
    tx: mpsc::UnboundedSender<Result<Committed, anyhow::Error>>,
) {
    loop {
        // Lines already visible become durable within `durable_every`, even
        // when no further result comes (a kill -9 must not cut lines that
        // consumers may have read).
        let next = match w.durable_due_in() {
            None => rx.recv().map_err(|_| std_mpsc::RecvTimeoutError::Disconnected),
            Some(wait) => rx.recv_timeout(wait),
        };
        let first = match next {
            Ok(o) => o,
            Err(std_mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = w.finish() {
                    let _ = tx.send(Err(e));
                    return;
                }
                continue;
            }
            Err(std_mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let mut batch = vec![first];
        while batch.len() < 4096 {
            match rx.try_recv() {
                Ok(o) => batch.push(o),
                Err(_) => break,
            }
        }
        // The tiers are checked inside the writer's own transactions, so
        // expired entries (dedup.window) are purged here, between them.
        if let Err(e) = w.deduper.purge_if_due() {
            let _ = tx.send(Err(anyhow::Error::new(e).context("cannot purge expired entries")));
            return;
        }
        let r = w.commit(batch);
        let failed = r.is_err();
        if tx.send(r).is_err() || failed {
            return;
        }
    }
    // Debug builds only, for the end-to-end tests: a panic while the last
    // commits are made durable, when nothing else would notice it.
    #[cfg(debug_assertions)]
    if std::env::var_os("SIMCRAWL_TEST_WRITER_PANIC").is_some() {
        panic!("injected writer panic (SIMCRAWL_TEST_WRITER_PANIC)");
    }
    if let Err(e) = w.templates.save(w.deduper.store()).and_then(|()| w.finish()) {
        let _ = tx.send(Err(e));
    }
}

/// Waits for the writer thread. A panic there is a failure of the crawl
/// (exit non-zero), never a silent success: the store is left as of its
/// last durable commit, so running the same command again resumes.
fn join_writer(handle: std::thread::JoinHandle<()>) -> Result<()> {
    handle.join().map_err(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_string());
        anyhow::anyhow!(
            "the writer thread panicked ({msg}); outputs and state are kept as of the last \
             durable commit: run the same command again to resume"
        )
    })
}

/// How a crawl treats the state and outputs of an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Delete them and start over (`--fresh`).
    Fresh,
    /// Resume where the earlier crawl stopped (the default).
    Resume,
}

/// Runs a crawl to completion (or until stopped); returns its counters.
pub fn run(cfg: Config, seeds_path: &Path, start: Start) -> Result<Stats> {
    let seeds = read_seeds(seeds_path)?;
    let data_dir = cfg.store.data_dir.clone();
    let out_dir = cfg.crawl.out_dir.clone();
    let db_path = data_dir.join("index.redb");
    if start == Start::Fresh {
        remove_if_exists(&db_path)?;
        for name in Outputs::FILES.iter().chain(["stats.json"].iter()) {
            remove_if_exists(&out_dir.join(name))?;
        }
    }
    // The writer decides when commits become durable (see Writer::finish);
    // the store must never upgrade one on its own.
    let store = RedbStore::open_with(&db_path, Duration::MAX)
        .with_context(|| format!("cannot open the crawl state in {}", data_dir.display()))?;
    let deduper = Arc::new(state::open_deduper(store, &cfg)?);
    let templates = Templates::load(&cfg.template, Some(deduper.store().database()))?;
    let mut cp: Checkpoint =
        state::read_json(deduper.store().database(), CHECKPOINT_KEY)?.unwrap_or_default();
    if cp.stats.fetched > 0 {
        info!(
            fetched = cp.stats.fetched,
            kept = cp.stats.verdicts.kept,
            "resuming an interrupted crawl"
        );
    }
    let outputs = Outputs::open(&out_dir, cp.offsets)?;

    // Seeds enter the frontier through the URL tier like any link: on a
    // resume, those already seen are not fetched again.
    let mut added = 0;
    deduper.store().write_with(Commit::Durable, |txn, tables| {
        let mut fr = frontier::open(txn)?;
        for c in seeds.iter().filter_map(|s| Candidate::new(s.clone())) {
            if frontier::enqueue(&deduper, tables, &mut fr, &mut cp.next_seq, &c, 0)? {
                added += 1;
            }
        }
        let mut st = state::open(txn)?;
        state::put_json(&mut st, CHECKPOINT_KEY, &cp)
    })?;
    info!(seeds = seeds.len(), new = added, "seeds loaded");

    let fetcher = simcrawl_fetch::Fetcher::new(cfg.fetch.clone()).context("invalid [fetch] settings")?;
    let per_host = cfg.fetch.per_host_concurrency.max(1) * 2;
    let ctx = Arc::new(Ctx {
        fetcher: fetcher.clone(),
        cleaner: simcrawl_clean::Cleaner::new(cfg.clean.clone()).context("invalid [clean] settings")?,
        deduper: deduper.clone(),
        scope: ScopeRules::new(&cfg.crawl, &seeds)?,
        follow_nofollow: cfg.crawl.follow_nofollow,
        respect_noindex: cfg.crawl.respect_noindex,
        templates: templates.clone(),
    });
    let shared = Arc::new(Mutex::new(cp.stats.clone()));
    let base_fetched = cp.stats.fetched;
    let writer = Writer {
        deduper: deduper.clone(),
        outputs,
        base_seconds: cp.stats.seconds,
        base_hosts_evicted: cp.stats.hosts_evicted,
        cp,
        max_depth: cfg.crawl.max_depth,
        write_text: cfg.crawl.write_text,
        shared: shared.clone(),
        run_started: Instant::now(),
        durable_every: Duration::from_millis(250),
        last_durable: Instant::now(),
        not_durable: false,
        max_requeues: cfg.crawl.max_requeues,
        requeue_delay_ms: cfg.crawl.requeue_delay_ms,
        fetcher,
        templates,
    };
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
    let settings = Dispatch {
        metrics: cfg.crawl.metrics.clone(),
        concurrency: cfg.crawl.concurrency.max(1),
        per_host,
        max_pages: cfg.crawl.max_pages,
        base_fetched,
    };
    let dispatched = runtime.block_on(dispatch(
        ctx,
        deduper.clone(),
        settings,
        out_tx,
        done_rx,
        shared.clone(),
    ));
    // The writer ends when every sender is gone (the dispatcher dropped its own).
    let joined = join_writer(writer_thread);
    runtime.shutdown_timeout(Duration::from_secs(1));
    // A writer panic first: it explains whatever the dispatcher saw. Nothing
    // is flushed after it (outputs were not synced).
    joined?;
    dispatched?;
    deduper.flush()?;
    let stats = shared.lock().clone();
    let json = serde_json::to_string_pretty(&stats)?;
    std::fs::write(out_dir.join("stats.json"), json)
        .with_context(|| format!("cannot write {}", out_dir.display()))?;
    Ok(stats)
}

fn remove_if_exists(p: &Path) -> Result<()> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", p.display())),
    }
}

struct Dispatch {
    metrics: String,
    concurrency: usize,
    per_host: usize,
    max_pages: u64,
    base_fetched: u64,
}

async fn dispatch(
    ctx: Arc<Ctx>,
    deduper: Arc<Deduper<RedbStore>>,
    s: Dispatch,
    out_tx: std_mpsc::Sender<Outcome>,
    mut done_rx: mpsc::UnboundedReceiver<Result<Committed, anyhow::Error>>,
    shared: Arc<Mutex<Stats>>,
) -> Result<()> {
    let mut window = Window::default();
    let mut tasks: JoinSet<()> = JoinSet::new();
    let mut task_seq: std::collections::HashMap<tokio::task::Id, u64> = std::collections::HashMap::new();
    let mut dispatched = 0u64;
    let mut stopping = false;
    let progress = Progress::spinner("crawl");
    let mut last_log = Instant::now();
    let started = Instant::now();
    let (stop_tx, mut stop_rx) = mpsc::unbounded_channel::<&'static str>();
    spawn_signal_handlers(stop_tx, shared.clone());
    if !s.metrics.is_empty() {
        crate::metrics::serve(&s.metrics, shared.clone()).await?;
    }
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let mut stop_deadline: Option<tokio::time::Instant> = None;
    loop {
        if !stopping {
            if window.wants_refill() {
                let db = deduper.clone();
                window = tokio::task::spawn_blocking(move || {
                    let mut w = window;
                    w.refill(db.store().database()).map(|()| w)
                })
                .await
                .context("frontier reader failed")??;
            }
            // Backpressure: results waiting for the writer count too, so a
            // writer slower than the network bounds memory instead of
            // queueing without limit.
            while tasks.len() < s.concurrency
                && window.in_flight() < s.concurrency * 8
                && (s.max_pages == 0 || s.base_fetched + dispatched < s.max_pages)
                && let Some(entry) = window.next(s.per_host)
            {
                dispatched += 1;
                let (ctx, tx) = (ctx.clone(), out_tx.clone());
                let seq = entry.seq;
                let handle = tasks.spawn(async move {
                    let o = work(ctx, entry).await;
                    let _ = tx.send(o);
                });
                task_seq.insert(handle.id(), seq);
            }
        }
        let budget_spent = s.max_pages > 0 && s.base_fetched + dispatched >= s.max_pages;
        if window.in_flight() == 0 && (stopping || budget_spent || window.is_finished()) {
            break;
        }
        tokio::select! {
            Some(joined) = tasks.join_next_with_id(), if !tasks.is_empty() => {
                let (id, failed) = match joined {
                    Ok((id, ())) => (id, None),
                    Err(e) => (e.id(), Some(e)),
                };
                if let Some(seq) = task_seq.remove(&id) {
                    window.released(seq);
                    if let Some(e) = failed {
                        // No outcome will reach the writer: let the page go
                        // for this run (it stays in the stored frontier and
                        // is fetched again by the next one).
                        warn!(seq, "page task failed: {e}");
                        window.done(seq);
                    }
                }
            }
            msg = done_rx.recv() => match msg {
                Some(Ok(c)) => {
                    for seq in c.seqs { window.done(seq); }
                    // A requeued page comes back under a new seq; its first
                    // attempt does not count against the page budget.
                    dispatched = dispatched.saturating_sub(c.requeued);
                    if c.added > 0 || c.requeued > 0 { window.poke(); }
                }
                Some(Err(e)) => return Err(e),
                None => bail!("the writer stopped unexpectedly"),
            },
            Some(sig) = stop_rx.recv() => {
                if stopping {
                    warn!("second {sig}: stopping now; unfinished pages stay in the frontier");
                    break;
                }
                info!("{sig}: finishing {} pages in flight, then stopping (the rest stays in the frontier)", window.in_flight());
                stopping = true;
                stop_deadline = Some(tokio::time::Instant::now() + Duration::from_secs(30));
            }
            _ = tick.tick() => {
                if stop_deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                    warn!("in-flight pages did not finish in time; they stay in the frontier");
                    break;
                }
                let st = shared.lock().clone();
                let rate = (st.fetched - s.base_fetched) as f64 / started.elapsed().as_secs_f64().max(1e-9);
                let line = format!("{}  ({rate:.0} pages/s this run, {} queued in memory, {} in flight)", st, window.pending(), window.in_flight());
                if progress.is_bar() {
                    progress.message(line);
                } else if last_log.elapsed() >= Duration::from_secs(10) {
                    info!("{line}");
                    last_log = Instant::now();
                }
            }
        }
    }
    progress.finish();
    tasks.abort_all();
    drop(out_tx);
    // Drain the writer's last commits.
    while let Some(msg) = done_rx.recv().await {
        msg?;
    }
    Ok(())
}

fn spawn_signal_handlers(stop: mpsc::UnboundedSender<&'static str>, shared: Arc<Mutex<Stats>>) {
    use tokio::signal::unix::{SignalKind, signal};
    for (kind, name) in [
        (SignalKind::interrupt(), "SIGINT"),
        (SignalKind::terminate(), "SIGTERM"),
    ] {
        let stop = stop.clone();
        if let Ok(mut s) = signal(kind) {
            tokio::spawn(async move {
                while s.recv().await.is_some() {
                    if stop.send(name).is_err() {
                        break;
                    }
                }
            });
        }
    }
    if let Ok(mut s) = signal(SignalKind::user_defined1()) {
        tokio::spawn(async move {
            while s.recv().await.is_some() {
                info!("stats: {}", shared.lock());
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_panic_is_an_error_naming_it() {
        let h = std::thread::spawn(|| panic!("disk on fire"));
        let e = format!(
            "{:#}",
            join_writer(h)
                .err()
                .unwrap_or_else(|| anyhow::anyhow!("no error"))
        );
        assert!(e.contains("writer thread panicked (disk on fire)"), "{e}");
        assert!(join_writer(std::thread::spawn(|| ())).is_ok());
    }
}
