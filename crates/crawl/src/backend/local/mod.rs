//! The local backend: one machine, one redb file holding the frontier
//! ([`frontier`]), the dedup tiers, the learners' state ([`learn`]) and the
//! checkpoint of the outputs ([`state`]), all committed together by the
//! writer ([`writer`]) in one transaction per group of results.

pub mod frontier;
pub mod job;
pub mod learn;
pub mod state;
pub mod writer;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use parking_lot::Mutex;
use simcrawl_dedup::{Commit, RedbStore};
use tracing::info;
use url::Url;

use self::frontier::Window;
use self::writer::{Checkpoint, Writer};
use super::Source;
use crate::config::Config;
use crate::daemon::dispatch::{Dispatch, TASKS_PER_HOST_CONNECTION, TICK};
use crate::daemon::worker::Signer;
use crate::daemon::{Start, Tiers, Visits, drive, page_stages, remove_if_exists, write_stats};
use crate::dust::Dust;
use crate::frontier::{Candidate, Entry};
use crate::output::sinks::Outputs;
use crate::stats::{Run, Stats};
use crate::template::Templates;

/// The redb frontier: the in-memory [`Window`] over the stored frontier,
/// with this crawl's per-host limit and page budget (the shared frontier
/// keeps both in Redis, for all workers together).
#[derive(Debug)]
pub struct LocalSource {
    pub window: Window,
    pub deduper: Arc<Tiers>,
    /// Page tasks of one host at once.
    pub per_host: usize,
    /// `crawl.max_pages` (0: no budget), counted across resumes...
    pub max_pages: u64,
    /// ... from the pages fetched by earlier runs, plus those handed out
    /// by this one (less those requeued: not fetched).
    pub handed_out: u64,
    /// `--forever`: an empty frontier is not the end (revisits come).
    pub forever: bool,
}

impl Source for LocalSource {
    fn wants_refill(&self) -> bool {
        self.window.wants_refill()
    }
    fn refill(&mut self) -> Result<()> {
        self.window.refill(self.deduper.store().database())
    }
    fn next(&mut self) -> Option<Entry> {
        if self.budget_spent() {
            return None;
        }
        let e = self.window.next(self.per_host)?;
        // Sitemaps and feeds are not pages: the page budget is pages'.
        self.handed_out += u64::from(!e.listing);
        Some(e)
    }
    /// A requeued page comes back under a new seq; its first attempt does
    /// not count against the page budget.
    fn requeued(&mut self, n: u64) {
        self.handed_out = self.handed_out.saturating_sub(n);
    }
    fn released(&mut self, seq: u64) {
        self.window.released(seq);
    }
    fn done(&mut self, seq: u64) {
        self.window.done(seq);
    }
    fn in_flight(&self) -> usize {
        self.window.in_flight()
    }
    fn pending(&self) -> usize {
        self.window.pending()
    }
    fn is_finished(&self) -> bool {
        self.budget_spent() || (!self.forever && self.window.is_finished())
    }
    fn budget_spent(&self) -> bool {
        self.max_pages > 0 && self.handed_out >= self.max_pages
    }
    fn poke(&mut self) {
        self.window.poke();
    }
}

/// `--fresh`: the state (the store, its block lists' and its revisit
/// records' files) and the
/// outputs of an earlier crawl deleted.
fn forget(db_path: &Path, out_dir: &Path) -> Result<()> {
    remove_if_exists(db_path)?;
    remove_if_exists(&RedbStore::block_lists_path(db_path))?;
    remove_if_exists(&crate::revisit::side::side_path(db_path))?;
    for name in Outputs::FILES.iter().chain(["stats.json"].iter()) {
        remove_if_exists(&out_dir.join(name))?;
    }
    Ok(())
}

/// The crawl state's main file at `db_path`, and the page cache left for
/// its revisit records' file (a share of `store.cache_mb`: the two hold
/// what the one did).
fn open_store(cfg: &Config, db_path: &Path) -> Result<(RedbStore, usize)> {
    // The writer decides when commits become durable (see `Writer::make_durable`);
    // the store must never upgrade one on its own.
    let mut options = cfg.store.redb_options(Duration::MAX)?;
    let revisit_cache = crate::revisit::side::cache_share(options.cache_bytes);
    options.cache_bytes -= revisit_cache;
    let store = RedbStore::open_opts(db_path, options).with_context(|| {
        let dir = db_path.parent().unwrap_or(db_path);
        format!("cannot open the crawl state in {}", dir.display())
    })?;
    Ok((store, revisit_cache))
}

/// The single-machine crawl: frontier, tiers and checkpoints in a redb
/// file (and its block lists' file beside it).
pub fn run(mut cfg: Config, seeds: &[Url], start: Start, visits: Visits) -> Result<Run> {
    let data_dir = cfg.store.data_dir.clone();
    let out_dir = cfg.crawl.out_dir.clone();
    let db_path = data_dir.join("index.redb");
    if start == Start::Fresh {
        forget(&db_path, &out_dir)?;
    }
    let (store, revisit_cache) = open_store(&cfg, &db_path)?;
    let stored_job = job::Job::load(store.database())?;
    let deduper = Arc::new(
        state::open_deduper(store, &mut cfg)
            .map_err(|e| job::explain_refusal(e, stored_job.as_ref(), &cfg))?,
    );
    let mut cp = Checkpoint::load(deduper.store().database())?;
    let begun = begin_job(
        &cfg,
        seeds,
        start,
        visits,
        stored_job,
        &cp,
        deduper.store().database(),
    )?;
    let (job, job_seeds, scope_seeds) = match begun {
        Begin::Nothing(message) => {
            eprintln!("{message}");
            return Ok(Run {
                before: cp.stats.clone(),
                stats: cp.stats,
                ended: crate::stats::Ended::Finished,
            });
        }
        Begin::Run {
            job,
            seeds,
            scope_seeds,
        } => (job, seeds, scope_seeds),
    };
    let (templates, dust) = load_learners(&cfg, &deduper)?;
    // The archive's position is in the checkpoint from its first record
    // on (committed with the seeds below), so that a crash before the first
    // commit leaves no file the resumed crawl does not know.
    let warc = crate::backend::open_warc(&cfg, None, cp.offsets.warc, start == Start::Fresh)?;
    let mut outputs = Outputs::open(&out_dir, cp.offsets)?.with_warc(warc);
    cp.offsets = outputs.sync()?;

    let revisit_file = crate::revisit::RevisitFile::open(deduper.store().database(), &db_path, revisit_cache)
        .with_context(|| format!("cannot open the revisit records in {}", data_dir.display()))?
        .map(Arc::new);
    let revisits = enqueue_seeds(
        &deduper,
        seeds,
        &mut cp,
        (visits, revisit_file.as_deref()),
        job.as_ref(),
        job_seeds.as_ref(),
    )?;
    // A revisit without seeds crawls within the hosts of its pages.
    let scope_seeds: Vec<Url> = if seeds.is_empty() { revisits } else { scope_seeds };
    let seeds = scope_seeds.as_slice();

    let signer: Signer = {
        let d = deduper.clone();
        Arc::new(move |page, id, own| crate::identity::sign_page(&d, page, id, own))
    };
    let canon = deduper.canonicalizer().clone();
    let stages = page_stages(&cfg, seeds, signer, canon, templates.clone(), dust.clone())?;
    set_probes(&stages, &deduper);
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
    .with_retry_waits(stages.retry_waits.clone())
    .with_canonicals(stages.canonicals.clone())
    .with_revisits(cfg.revisit.clone(), visits == Visits::Forever)
    .with_revisit_file(revisit_file);
    let source = LocalSource {
        window: Window::default(),
        deduper: deduper.clone(),
        per_host: cfg.fetch.per_host_concurrency.max(1) * TASKS_PER_HOST_CONNECTION,
        max_pages: cfg.crawl.max_pages,
        handed_out: base_fetched,
        forever: visits == Visits::Forever,
    };
    let settings = Dispatch {
        metrics: cfg.crawl.metrics.clone(),
        concurrency: cfg.crawl.concurrency.max(1),
        base_fetched,
        tick: TICK,
    };
    let before = shared.lock().clone();
    let ended = drive(stages, source, writer, settings, shared.clone())?;
    deduper.flush()?;
    let stats = shared.lock().clone();
    let ended = ended.judge(&before, &stats);
    if let Some(job) = job {
        record_end(&deduper, &cfg, job, &stats)?;
    }
    write_stats(&out_dir, &stats, ended)?;
    Ok(Run { stats, before, ended })
}

/// The learners (site templates, DUST rules), loaded (and what earlier
/// versions saved converted) in one transaction.
fn load_learners(cfg: &Config, deduper: &Tiers) -> Result<(Templates, Arc<Mutex<Dust>>)> {
    let (templates, dust) = crate::backend::local::learn::with_store(deduper.store().database(), |store| {
        let templates = Templates::load(&cfg.template, Some(&mut *store))?;
        let dust = Dust::load(&cfg.crawl.dust, Some(store), deduper.canonicalizer().clone())
            .context("invalid [crawl.dust] settings")?;
        Ok((templates, dust))
    })?;
    Ok((templates, Arc::new(Mutex::new(dust))))
}

/// Records how the crawl of `job` ended (`stats`: its counters at the end).
fn record_end(deduper: &Tiers, cfg: &Config, mut job: job::Job, stats: &Stats) -> Result<()> {
    job.ended = how_it_ended(deduper, cfg, stats)?;
    job.ended_at_ms = crate::frontier::now_ms();
    deduper
        .store()
        .write_with(Commit::Durable, |txn, _| job.put(&mut state::open(txn)?))
        .context("cannot record how the crawl ended")?;
    Ok(())
}

/// What `crawl revisit` says when no page is due: when the next one is
/// (`next_due_ms`, Unix ms; none when nothing was crawled), and that
/// `--all` visits every page now.
fn nothing_due(next_due_ms: Option<u64>, now_ms: u64) -> String {
    match next_due_ms {
        Some(at) => {
            let when = std::time::UNIX_EPOCH + Duration::from_millis(at);
            let wait = Duration::from_secs(at.saturating_sub(now_ms) / 1000);
            format!(
                "no page is due for a revisit: the next is due at {} UTC (in {}); \
                 `crawl revisit --all` visits every page now",
                humantime::format_rfc3339_seconds(when)
                    .to_string()
                    .trim_end_matches('Z')
                    .replace('T', " "),
                humantime::format_duration(wait)
            )
        }
        None => "no page is due for a revisit: this crawl has no page scheduled (crawl some first); \
                 `crawl revisit --all` visits every page now"
            .to_string(),
    }
}

/// Puts the seeds in the frontier, and with `crawl revisit` the pages due
/// (every page with `--all`), and commits `cp` with them (durably); logs
/// how many seeds were new, how many pages are visited again and, when
/// none is due, when the next one is; returns the URLs to visit again. Seeds
/// enter through the URL tier like any link: on a resume, those already
/// seen are not fetched again.
fn enqueue_seeds(
    deduper: &Tiers,
    seeds: &[Url],
    cp: &mut Checkpoint,
    (visits, revisit_file): (Visits, Option<&crate::revisit::RevisitFile>),
    job: Option<&job::Job>,
    job_seeds: Option<&BTreeSet<String>>,
) -> Result<Vec<Url>> {
    let mut added = 0;
    let mut revisits = Vec::new();
    let mut next_due = None;
    deduper.store().write_with(Commit::Durable, |txn, tables| {
        let mut fr = frontier::open(txn)?;
        for c in seeds
            .iter()
            .filter_map(|s| Candidate::new(deduper.canonicalizer(), s.clone()))
        {
            if frontier::enqueue(deduper, tables, &mut fr, &mut cp.next_seq, &c, (0, None))? {
                added += 1;
            }
        }
        if matches!(visits, Visits::Due | Visits::All) {
            let mut sched = crate::revisit::Schedule::open(txn, revisit_file)?;
            let due = sched.take_due(crate::frontier::now_ms(), visits == Visits::All, usize::MAX)?;
            next_due = sched.next_due()?;
            sched.finish()?;
            revisits = frontier::enqueue_due(&mut fr, &mut cp.next_seq, due)?;
        }
        drop(fr);
        let mut st = state::open(txn)?;
        if let Some(job) = job {
            job.put(&mut st)?;
        }
        if let Some(list) = job_seeds {
            job::put_seeds(&mut st, list)?;
        }
        cp.put(&mut st)
    })?;
    if let Some(f) = revisit_file {
        f.durable(deduper.store().database())?;
    }
    info!(seeds = seeds.len(), new = added, "seeds loaded");
    if matches!(visits, Visits::Due | Visits::All) {
        info!(pages = revisits.len(), "pages to visit again");
    }
    if visits == Visits::Due && revisits.is_empty() {
        info!("{}", nothing_due(next_due, crate::frontier::now_ms()));
    }
    Ok(revisits)
}

/// What a run does with the crawl in its data directory.
enum Begin {
    /// Nothing: the crawl is over (finished, or its budget spent); the
    /// message says so, and how to go on.
    Nothing(String),
    /// Run it: `job` is recorded (running) with the seeds, and its seed
    /// list `seeds` when it changed; `scope_seeds` bound the crawl.
    Run {
        job: Option<job::Job>,
        seeds: Option<BTreeSet<String>>,
        scope_seeds: Vec<Url>,
    },
}

/// Decides whether a crawl of `seeds` under `cfg` resumes the crawl
/// recorded in the data directory (`stored`, `cp`), starts one, or has
/// nothing to do; refuses (a [`job::JobError`]) to mix into another crawl.
/// `crawl revisit` (no seeds) visits whatever crawl is there.
fn begin_job(
    cfg: &Config,
    seeds: &[Url],
    start: Start,
    visits: Visits,
    stored: Option<job::Job>,
    cp: &Checkpoint,
    db: &redb::Database,
) -> Result<Begin> {
    let data_dir = &cfg.store.data_dir;
    if matches!(visits, Visits::Due | Visits::All) {
        let job = stored.map(|mut j| {
            j.ended = job::Ended::Running;
            j
        });
        return Ok(Begin::Run {
            job,
            seeds: None,
            scope_seeds: seeds.to_vec(),
        });
    }
    let given = job::seed_list(seeds);
    let Some(stored) = stored else {
        return begin_unrecorded(cfg, seeds, given, cp);
    };
    let stored_seeds = job::load_seeds(db)?;
    let adding = start == Start::AddSeeds;
    job::compare(&stored, &stored_seeds, cfg, seeds, adding)?;
    let new_seeds = given.difference(&stored_seeds).count();
    let all: BTreeSet<String> = stored_seeds.union(&given).cloned().collect();
    let over = |what: &str| {
        format!(
            "the crawl in {} {what}: fetched {}, kept {}, dropped {} (title {}, content {}); its outputs are \
             in {}",
            data_dir.display(),
            cp.stats.fetched,
            cp.stats.verdicts.kept,
            cp.stats.verdicts.dup_title + cp.stats.verdicts.dup_content,
            cp.stats.verdicts.dup_title,
            cp.stats.verdicts.dup_content,
            stored.out_dir.display()
        )
    };
    let forever = visits == Visits::Forever;
    // A finished crawl goes on only with more to do: new seeds, or revisits.
    let goes_on = forever || (adding && new_seeds > 0);
    let budget_spent = cfg.crawl.max_pages > 0 && cp.stats.fetched >= cfg.crawl.max_pages;
    match stored.ended {
        job::Ended::Finished if !goes_on => {
            return Ok(Begin::Nothing(format!(
                "{}. Nothing to do. To visit its pages again: `crawl revisit` (those due) or `crawl revisit \
                 --all`; to crawl more: --add-seeds with new seeds, or --forever; to start over: --fresh",
                over("is finished")
            )));
        }
        job::Ended::MaxPages if budget_spent && !forever => {
            return Ok(Begin::Nothing(format!(
                "{}. Its page budget (crawl.max_pages = {}) is spent: raise --max-pages to go on with it, \
                 or start over with --fresh",
                over("stopped at its page budget"),
                cfg.crawl.max_pages
            )));
        }
        _ => {}
    }
    if !job::same_dir(&stored.out_dir, &cfg.crawl.out_dir) && !outputs_cover(&cfg.crawl.out_dir, &cp.offsets)
    {
        return Err(job::JobError::OutputsElsewhere {
            data_dir: data_dir.clone(),
            stored: stored.out_dir.clone(),
            requested: cfg.crawl.out_dir.clone(),
        }
        .into());
    }
    match stored.ended {
        job::Ended::MaxPages => info!(
            fetched = cp.stats.fetched,
            max_pages = cfg.crawl.max_pages,
            "continuing a crawl that stopped at its page budget"
        ),
        job::Ended::Finished => info!(
            fetched = cp.stats.fetched,
            new_seeds, "continuing a finished crawl"
        ),
        job::Ended::Running | job::Ended::Signal | job::Ended::Incomplete => info!(
            fetched = cp.stats.fetched,
            kept = cp.stats.verdicts.kept,
            how = stored.ended.word(),
            "resuming an interrupted crawl"
        ),
    }
    if adding && new_seeds > 0 {
        info!(new_seeds, "seeds added to the crawl");
    }
    // Where the outputs are now (the same folder, or the folder moved).
    let mut job = job::Job::new(cfg, &all)?;
    job.ended = job::Ended::Running;
    let scope_seeds = all.iter().filter_map(|s| Url::parse(s).ok()).collect();
    Ok(Begin::Run {
        job: Some(job),
        seeds: (all != stored_seeds).then_some(all),
        scope_seeds,
    })
}

/// [`begin_job`] in a data directory with no crawl recorded (`given`: the
/// seed list of `seeds`): a new crawl, or one from before job records.
fn begin_unrecorded(cfg: &Config, seeds: &[Url], given: BTreeSet<String>, cp: &Checkpoint) -> Result<Begin> {
    if cp.stats.fetched > 0 {
        // A crawl from before job records: it is taken to be this one
        // (as every crawl was), and recorded as such from now on.
        if !outputs_cover(&cfg.crawl.out_dir, &cp.offsets) && !any_output(&cfg.crawl.out_dir) {
            return Err(job::JobError::OutputsUnknown {
                data_dir: cfg.store.data_dir.clone(),
                requested: cfg.crawl.out_dir.clone(),
            }
            .into());
        }
        info!(
            fetched = cp.stats.fetched,
            kept = cp.stats.verdicts.kept,
            "resuming an interrupted crawl (recorded from now on as the crawl of these seeds and settings)"
        );
    }
    Ok(Begin::Run {
        job: Some(job::Job::new(cfg, &given)?),
        seeds: Some(given),
        scope_seeds: seeds.to_vec(),
    })
}

/// Whether `dir` holds the outputs a checkpoint at `at` describes (each
/// file at least as long as its offset): the crawl's own, or a copy.
fn outputs_cover(dir: &std::path::Path, at: &crate::output::sinks::Offsets) -> bool {
    let len = |name: &str| std::fs::metadata(dir.join(name)).map_or(0, |m| m.len());
    let [kept, duplicates, errors, changes] = Outputs::FILES;
    len(kept) >= at.kept
        && len(duplicates) >= at.duplicates
        && len(errors) >= at.errors
        && len(changes) >= at.changes
}

/// Whether `dir` holds any output file.
fn any_output(dir: &std::path::Path) -> bool {
    Outputs::FILES.iter().any(|n| dir.join(n).exists())
}

/// How a run ended (the dispatcher is done and the writer has committed
/// everything): the frontier empty is finished; pages left are left by a
/// signal, the page budget, or a failed page task.
fn how_it_ended(deduper: &Tiers, cfg: &Config, stats: &crate::stats::Stats) -> Result<job::Ended> {
    use redb::{ReadableDatabase, ReadableTableMetadata};
    let txn = deduper.store().database().begin_read()?;
    let left = match txn.open_table(frontier::FRONTIER) {
        Ok(t) => t.len()?,
        Err(redb::TableError::TableDoesNotExist(_)) => 0,
        Err(e) => return Err(e.into()),
    };
    Ok(if left == 0 {
        job::Ended::Finished
    } else if crate::daemon::signals::stop_requested() {
        job::Ended::Signal
    } else if cfg.crawl.max_pages > 0 && stats.fetched >= cfg.crawl.max_pages {
        job::Ended::MaxPages
    } else {
        job::Ended::Incomplete
    })
}

/// What page tasks read on a snapshot of the store for the writer
/// (`PageStages::url_probe`, `PageStages::early_hits`): the local store
/// can be read beside its writer.
fn set_probes(stages: &crate::daemon::worker::PageStages, deduper: &Arc<Tiers>) {
    let probe: crate::daemon::worker::UrlProbe = {
        let d = deduper.clone();
        Arc::new(move |links| {
            d.urls_first_seen(links)
                .unwrap_or_else(|_| vec![None; links.len()])
        })
    };
    // Unset only here, just made: `set` cannot fail.
    let _ = stages.url_probe.set(probe);
    let early: crate::daemon::worker::EarlyProbe = {
        let d = deduper.clone();
        Arc::new(move |sig| d.early_hits(sig).ok().flatten())
    };
    let _ = stages.early_hits.set(early);
}
