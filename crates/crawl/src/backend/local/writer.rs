//! The writer: one thread that judges page results against the dedup tiers,
//! writes the outputs, and commits the frontier, the tiers, the outputs'
//! offsets and the counters in one store transaction per group of results
//! (group commit: it takes whatever results are ready, so groups grow with
//! load and no result waits for a timer).

mod revisit;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use simcrawl_dedup::{Commit, Tier, UrlTier, UrlVerdict, Verdict};

use super::frontier;
use super::learn::{RedbLearn, save_templates};
use super::state;
use crate::backend::{Commits, Committed, Requeues};
use crate::config::CrawlConfig;
use crate::daemon::Tiers;
use crate::daemon::worker::{Outcome, PageResult};
use crate::dust::{Dust, Fold, Rewrites};
use crate::frontier::Candidate;
use crate::output::record::Recorder;
use crate::output::sinks::{Offsets, Outputs};
use crate::progress::RetryWaits;
use crate::revisit::{PageRecord, RevisitFile, RevisitSettings, Schedule, url_key};
use crate::stats::Stats;
use crate::template::{Save, Templates, host_of};

/// Commits are made durable at most this often (and at the latest this long
/// after the last one when no further result comes). Each durable commit
/// costs an fsync of the outputs and of the store; a quarter second spreads
/// that over hundreds of pages at full speed, while a crash still loses
/// (and fetches again) at most a quarter second of results.
pub const DURABLE_EVERY: Duration = Duration::from_millis(250);

/// Where the crawl stands, stored with every commit: the next frontier
/// sequence number, the outputs' committed offsets and the counters.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Checkpoint {
    pub next_seq: u64,
    pub offsets: Offsets,
    pub stats: Stats,
}

/// Key of the [`Checkpoint`] in the `crawl_state` table.
const CHECKPOINT_KEY: &str = "crawl:checkpoint";

impl Checkpoint {
    /// The checkpoint of an earlier crawl in `db`, or a fresh one.
    pub fn load(db: &impl redb::ReadableDatabase) -> Result<Checkpoint> {
        Ok(state::read_json(db, CHECKPOINT_KEY)?.unwrap_or_default())
    }

    /// Writes it into `table` (the `crawl_state` table of a write transaction).
    pub fn put(
        &self,
        table: &mut redb::Table<'_, &'static str, &'static [u8]>,
    ) -> Result<(), simcrawl_dedup::Error> {
        state::put_json(table, CHECKPOINT_KEY, self)
    }
}

/// The writer thread's state (see the module documentation).
pub struct Writer {
    deduper: Arc<Tiers>,
    outputs: Outputs,
    cp: Checkpoint,
    max_depth: u32,
    /// `crawl.max_listing_depth`, `crawl.max_listings_per_host`.
    listing_bounds: crate::listing::Bounds,
    /// Sitemaps and feeds found by the outcomes of the commit being made
    /// (listing, depth, nest, the URL that named it), queued at its end through the listing budget.
    offered: Vec<(Candidate, u32, u32, String)>,
    /// The revisit records' own file, when the state has one.
    revisit_file: Option<Arc<RevisitFile>>,
    write_text: bool,
    shared: Arc<Mutex<Stats>>,
    run_started: Instant,
    base_seconds: f64,
    /// When the last commit was made durable (outputs fsynced, then the
    /// store): commits in between are visible at once, but a crash rolls
    /// the store back to the last durable one, and the outputs are cut back
    /// to the offsets it recorded, so both always agree.
    last_durable: Instant,
    /// A commit is visible (its lines are in the outputs) but not durable
    /// yet: the writer makes it durable within [`DURABLE_EVERY`] even if no
    /// new result arrives.
    not_durable: bool,
    /// `crawl.max_requeues`, `crawl.requeue_delay_ms`, `crawl.retry_budget_ms`.
    requeues: Requeues,
    /// The URLs waiting to be retried, for the progress line.
    retry_waits: RetryWaits,
    /// Declared canonicals (`crate::canonical`), told what became of the
    /// pages that waited behind theirs.
    canonicals: Arc<crate::canonical::Canonicals>,
    /// For `hosts_evicted`: the fetcher's count this run, added to the
    /// count of earlier runs.
    fetcher: simcrawl_fetch::Fetcher,
    base_hosts_evicted: u64,
    base_throttled: u64,
    templates: Templates,
    /// URL rewrite rules: learnt from the verdicts, applied to the links.
    dust: Arc<Mutex<Dust>>,
    /// When judged pages are visited again (`crate::revisit`).
    revisit: RevisitSettings,
    /// `--forever`: the writer moves the pages due into the frontier
    /// every [`TICK_EVERY`].
    forever: bool,
    last_tick: Instant,
    /// Links this run skipped as known to the URL tier when their page
    /// task read it (`PageStages::url_probe`), logged at the end.
    known_links: u64,
    /// Pages judged with the SimHash candidates their page task found
    /// (`PageStages::early_hits`), logged at the end.
    early_pages: u64,
}

/// How often a crawl that runs `--forever` looks for pages due.
pub const TICK_EVERY: Duration = Duration::from_secs(1);

/// Revisits moved into the frontier per tick at most.
const DUE_PER_TICK: usize = 10_000;

impl Writer {
    /// The writer of a crawl that starts from checkpoint `cp`; `shared` is
    /// where it publishes the counters after each commit.
    pub fn new(
        deduper: Arc<Tiers>,
        outputs: Outputs,
        cp: Checkpoint,
        cfg: &CrawlConfig,
        shared: Arc<Mutex<Stats>>,
        fetcher: simcrawl_fetch::Fetcher,
        templates: Templates,
    ) -> Writer {
        Writer {
            deduper,
            outputs,
            base_seconds: cp.stats.seconds,
            base_hosts_evicted: cp.stats.hosts_evicted,
            base_throttled: cp.stats.throttled,
            cp,
            max_depth: cfg.max_depth,
            listing_bounds: crate::listing::Bounds::of(cfg),
            offered: Vec::new(),
            revisit_file: None,
            write_text: cfg.write_text,
            shared,
            run_started: Instant::now(),
            last_durable: Instant::now(),
            not_durable: false,
            requeues: Requeues::of(cfg),
            retry_waits: RetryWaits::default(),
            canonicals: Arc::default(),
            fetcher,
            templates,
            dust: Arc::default(),
            revisit: RevisitSettings::default(),
            forever: false,
            last_tick: Instant::now(),
            known_links: 0,
            early_pages: 0,
        }
    }

    /// The writer schedules revisits with `settings`, and with `forever`
    /// puts the pages due into the frontier as time passes.
    pub fn with_revisits(mut self, settings: RevisitSettings, forever: bool) -> Writer {
        self.revisit = settings;
        self.forever = forever;
        self
    }

    /// The pages due for a revisit into the frontier (`--forever`).
    fn move_due(&mut self) -> Result<u64> {
        self.last_tick = Instant::now();
        let deduper = self.deduper.clone();
        let before = self.cp.clone();
        let mut added = 0u64;
        let revisit_file = self.revisit_file.clone();
        let result = deduper.store().write_with(Commit::Periodic, |txn, _| {
            let mut sched = Schedule::open(txn, revisit_file.as_deref())?;
            if sched.next_due()?.is_none_or(|at| at > crate::frontier::now_ms()) {
                return sched.finish();
            }
            let due = sched.take_due(crate::frontier::now_ms(), false, DUE_PER_TICK)?;
            sched.finish()?;
            let mut fr = frontier::open(txn)?;
            added = frontier::enqueue_due(&mut fr, &mut self.cp.next_seq, due)?.len() as u64;
            drop(fr);
            let mut st = state::open(txn)?;
            self.cp.put(&mut st)
        });
        if let Err(e) = result {
            self.cp = before;
            return Err(e).context("cannot schedule revisits");
        }
        if added > 0 {
            self.not_durable = true;
        }
        Ok(added)
    }

    /// The writer keeps the revisit records in `file` (`None`: in the main
    /// file, a state made before they had one).
    pub fn with_revisit_file(mut self, file: Option<Arc<RevisitFile>>) -> Writer {
        self.revisit_file = file;
        self
    }

    /// The writer records the URLs it puts back to be retried in `waits`
    /// (read by the progress line).
    pub fn with_retry_waits(mut self, waits: RetryWaits) -> Writer {
        self.retry_waits = waits;
        self
    }

    /// The page tasks' declared canonicals, told which pages put back
    /// behind theirs were kept.
    pub fn with_canonicals(mut self, canonicals: Arc<crate::canonical::Canonicals>) -> Writer {
        self.canonicals = canonicals;
        self
    }

    /// The writer learns URL rewrite rules into `dust` (shared with the page
    /// tasks, which apply them before fetching) and applies them to links.
    pub fn with_dust(mut self, dust: Arc<Mutex<Dust>>) -> Writer {
        self.dust = dust;
        self
    }

    /// Makes everything committed so far durable: outputs first, then the
    /// store, so a durable checkpoint never points past fsynced output.
    fn make_durable(&mut self) -> Result<()> {
        self.outputs.sync()?;
        self.deduper.flush().context("cannot flush the crawl state")?;
        self.revisits_durable()?;
        self.last_durable = Instant::now();
        self.not_durable = false;
        Ok(())
    }

    /// After a durable commit: the revisit records' own file is handed
    /// the operations of the commits up to it.
    fn revisits_durable(&self) -> Result<()> {
        if let Some(f) = &self.revisit_file {
            f.durable(self.deduper.store().database())
                .context("cannot hand the revisit records to their thread")?;
        }
        Ok(())
    }

    /// How long the writer may wait for results before it must make the
    /// last commit durable; `None` when everything is durable.
    fn durable_due_in(&self) -> Option<Duration> {
        self.not_durable
            .then(|| DURABLE_EVERY.saturating_sub(self.last_durable.elapsed()))
    }

    fn commit(&mut self, batch: Vec<Outcome>) -> Result<Committed> {
        let mut seqs = Vec::with_capacity(batch.len());
        let mut added = 0u64;
        let mut requeued = 0u64;
        let deduper = self.deduper.clone();
        let before = self.cp.clone();
        let durable = self.last_durable.elapsed() >= DURABLE_EVERY;
        let commit = if durable {
            Commit::Durable
        } else {
            Commit::Periodic
        };
        let max_recorded = self.dust.lock().max_recorded();
        self.offered.clear();
        let revisit_file = self.revisit_file.clone();
        let result = deduper.store().write_with(commit, |txn, tables| {
            let mut fr = frontier::open(txn)?;
            // The learners' store on this transaction: what they learn and
            // record commits with the outputs' offsets below.
            let mut learn = RedbLearn::new(txn);
            let mut rewrites = Rewrites::new(&mut learn, max_recorded);
            let mut sched = Schedule::open(txn, revisit_file.as_deref())?;
            for o in &batch {
                seqs.push(o.seq());
                fr.remove(o.seq())?;
                self.retry_waits.done(o.url());
                if let Outcome::Failed { entry, exchanges, .. } = o {
                    self.dust.lock().probe_done(&entry.url, false);
                    // What it received is archived, retried or not.
                    self.recorder().exchanges(exchanges).map_err(state::caller_err)?;
                }
                let (a, r) = self.commit_outcome(&deduper, tables, &mut fr, &mut sched, &mut rewrites, o)?;
                added += a;
                requeued += r;
            }
            // Rules withdrawn by this group's verdicts give back what they
            // rewrote, in the transaction that stores their withdrawal.
            added += self.restore_withdrawn(&deduper, tables, &mut fr, &mut rewrites)?;
            added += self.queue_offered(&deduper, tables, txn, &mut fr)?;
            self.checkpoint_outputs(durable)?;
            self.templates.save_if_due(&mut learn, Save::IfDue)?;
            let mut dust = self.dust.lock();
            if dust.changed() {
                self.cp.stats.dust_rules = dust.learnt().iter().map(ToString::to_string).collect();
            }
            dust.save_if_changed(&mut learn)?;
            drop(dust);
            // Its tables are closed before `crawl_state` is opened here.
            drop(learn);
            sched.finish()?;
            let mut st = state::open(txn)?;
            self.cp.put(&mut st)
        });
        if let Err(e) = result {
            self.cp = before;
            return Err(e).context("cannot commit crawl results");
        }
        if durable {
            self.revisits_durable()?;
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

    /// One outcome of a commit, in its transaction: its lines, records and
    /// counters, and what becomes of its entry. Returns how many entries it
    /// added to the frontier and how many it put back.
    fn commit_outcome(
        &mut self,
        deduper: &Tiers,
        tables: &mut dyn simcrawl_dedup::Tables,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        sched: &mut Schedule<'_>,
        rewrites: &mut Rewrites<'_>,
        o: &Outcome,
    ) -> simcrawl_dedup::Result<(u64, u64)> {
        let mut added = 0u64;
        let mut requeued = 0u64;
        match o {
            // A revisit told the page is gone: out of the index.
            Outcome::Failed {
                entry,
                status: Some(404 | 410),
                ..
            } if entry.revisit.is_some() => {
                added += self.gone(deduper, tables, fr, sched, entry)?;
            }
            // A sitemap or feed that is not there (most hosts have no
            // /sitemap.xml): nothing to say.
            Outcome::Failed {
                entry,
                status: Some(404 | 410),
                ..
            } if entry.listing => {}
            // Any other failure of one: a line, not a failed page.
            Outcome::Failed { entry, error, .. } if entry.listing && self.requeues.delay(o).is_none() => {
                self.recorder()
                    .listing_problem(entry.url.as_str(), entry.via.as_deref(), error)
                    .map_err(state::caller_err)?;
            }
            Outcome::Listing {
                entry,
                kind,
                pages,
                listings,
                problems,
                exchanges,
            } => {
                self.recorder().exchanges(exchanges).map_err(state::caller_err)?;
                added += self.listed(deduper, tables, fr, sched, (entry, *kind), pages, listings)?;
                for p in problems {
                    self.recorder()
                        .listing_problem(entry.url.as_str(), entry.via.as_deref(), p)
                        .map_err(state::caller_err)?;
                }
            }
            Outcome::NotModified {
                entry,
                validators,
                exchanges,
            } => {
                self.recorder().exchanges(exchanges).map_err(state::caller_err)?;
                self.not_modified(deduper, sched, entry, validators)?;
            }
            Outcome::Failed { entry, kind, .. } if let Some(delay) = self.requeues.delay(o) => {
                self.requeue(fr, entry, kind, delay)?;
                requeued += 1;
            }
            Outcome::Failed {
                entry, kind, error, ..
            } => self.failed(deduper, sched, entry, kind, error)?,
            Outcome::Rewritten { entry } => {
                added += self.rewritten(deduper, tables, fr, rewrites, entry)?;
                requeued += 1;
            }
            Outcome::Page(p)
                if let Some(c) = &p.wait_for
                    && !judged_before(deduper, sched, c)? =>
            {
                added += self.wait_behind(deduper, tables, fr, p, c)?;
                requeued += 1;
            }
            Outcome::Page(p) => {
                self.recorder().fetched(p).map_err(state::caller_err)?;
                added += if p.entry.revisit.is_some() {
                    self.revisit_page(deduper, tables, fr, sched, rewrites, p)?
                } else {
                    self.judge_page(deduper, tables, fr, sched, rewrites, p)?
                };
            }
        }

        Ok((added, requeued))
    }

    /// A failure worth another attempt: back to the end of the frontier,
    /// after a delay that doubles with each attempt, within the budget.
    fn requeue(
        &mut self,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        entry: &crate::frontier::Entry,
        kind: &'static str,
        delay: u64,
    ) -> simcrawl_dedup::Result<()> {
        let due = crate::frontier::now_ms().saturating_add(delay);
        frontier::requeue(fr, &mut self.cp.next_seq, entry, due)?;
        self.retry_waits.waiting(&entry.url, due, kind);
        self.cp.stats.requeued += 1;
        Ok(())
    }

    /// A failure not tried again: its line; a revisit that failed is tried
    /// again at its next turn.
    fn failed(
        &mut self,
        deduper: &Tiers,
        sched: &mut Schedule<'_>,
        entry: &crate::frontier::Entry,
        kind: &str,
        error: &str,
    ) -> simcrawl_dedup::Result<()> {
        self.recorder()
            .failure(entry.url.as_str(), entry.via.as_deref(), kind, error)
            .map_err(state::caller_err)?;
        // A revisit that failed: tried again at its next turn.
        if entry.revisit.is_some()
            && let Some(key) = url_key(deduper.canonicalizer(), &entry.url)
            && let Some(mut rec) = sched.get(key)?
        {
            rec.next_ms = crate::frontier::now_ms().saturating_add(rec.interval_s.saturating_mul(1000));
            sched.put(key, &rec)?;
        }
        Ok(())
    }

    /// An entry not fetched because a URL rewrite rule maps it elsewhere,
    /// folded again here: a rule withdrawn since the page task folded it
    /// (earlier in this group, say) no longer applies, and the entry goes
    /// back under its own URL. Returns how many entries were added.
    fn rewritten(
        &mut self,
        deduper: &Tiers,
        tables: &mut dyn simcrawl_dedup::Tables,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        rewrites: &mut Rewrites<'_>,
        entry: &crate::frontier::Entry,
    ) -> simcrawl_dedup::Result<u64> {
        let folded = self.dust.lock().fold_by(&entry.url);
        let Some((fold, by)) = folded else {
            let via = entry.via.as_deref();
            frontier::reinsert(fr, &mut self.cp.next_seq, &entry.url, (entry.depth, via))?;
            self.cp.stats.dust_restored += 1;
            return Ok(0);
        };
        // Under the rewritten URL, at the same depth (the URL
        // tier drops it if that page is known already).
        self.cp.stats.dust_rewritten += 1;
        if !rewrites.record(&by, &entry.url, entry.depth, true)? {
            self.cp.stats.dust_unrecorded += 1;
        }
        if let Fold::Rewritten(to) = fold
            && let Some(c) = Candidate::new(deduper.canonicalizer(), to)
            && frontier::enqueue(
                deduper,
                tables,
                fr,
                &mut self.cp.next_seq,
                &c,
                (entry.depth, entry.via.as_deref()),
            )?
        {
            return Ok(1);
        }
        Ok(0)
    }

    /// The outputs' offsets (synced first, when `durable`; else those of
    /// the lines handed to their appenders, which a crash rolls back with
    /// the commit) and the counters into the checkpoint.
    fn checkpoint_outputs(&mut self, durable: bool) -> simcrawl_dedup::Result<()> {
        let offsets = if durable {
            self.outputs.sync()
        } else {
            self.outputs.handed_over()
        };
        self.cp.offsets = offsets.map_err(state::caller_err)?;
        self.cp.stats.seconds = self.base_seconds + self.run_started.elapsed().as_secs_f64();
        self.cp.stats.hosts_evicted = self.base_hosts_evicted + self.fetcher.hosts_evicted();
        self.cp.stats.throttled = self.base_throttled + self.fetcher.throttled();
        Ok(())
    }

    /// The pages waiting behind `p`'s URL learn whether they copy it.
    /// (Its URL's canonical digest comes with the page: the page task
    /// computed it, off the writer thread.)
    fn tell_canonicals(&self, p: &PageResult) {
        if let Some(key) = p.url_key {
            self.canonicals.fetched(key.to_be_bytes(), &p.sig);
        }
    }

    /// The page `p` waits behind the canonical `c` it declared
    /// (`crate::canonical`): `c` is queued unless the URL tier knows it, and
    /// `p`'s entry goes back to the end of the frontier, judged at its next
    /// fetch. No line: the page is not judged yet. Returns the entries added.
    fn wait_behind(
        &mut self,
        deduper: &Tiers,
        tables: &mut dyn simcrawl_dedup::Tables,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        p: &PageResult,
        c: &Candidate,
    ) -> simcrawl_dedup::Result<u64> {
        self.dust.lock().probe_done(&p.entry.url, false);
        self.tell_canonicals(p);
        self.canonicals.waits(&p.entry, &p.sig, c);
        let queued = frontier::enqueue(
            deduper,
            tables,
            fr,
            &mut self.cp.next_seq,
            c,
            (p.entry.depth, Some(p.entry.url.as_str())),
        )?;
        frontier::wait_behind_canonical(fr, &mut self.cp.next_seq, &p.entry)?;
        self.cp.stats.canonical_waits += 1;
        Ok(1 + u64::from(queued))
    }

    /// Puts back in the frontier, under their own URL, the URLs recorded
    /// under the rules withdrawn since the last call (`crate::dust`): a
    /// link through the URL tier (dropped if its page was queued or fetched
    /// meanwhile), an entry rewritten before its fetch directly (the URL
    /// tier knows it, but its page was never fetched). Returns how many
    /// were added.
    fn restore_withdrawn(
        &mut self,
        deduper: &Tiers,
        tables: &mut dyn simcrawl_dedup::Tables,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        rewrites: &mut Rewrites<'_>,
    ) -> simcrawl_dedup::Result<u64> {
        let withdrawn = self.dust.lock().take_withdrawn();
        if withdrawn.is_empty() {
            return Ok(0);
        }
        let dust = self.dust.clone();
        let restored = rewrites.take(&withdrawn, |host| dust.lock().learnt_of(host))?;
        let mut added = 0;
        for r in restored {
            if r.was_queued {
                frontier::reinsert(fr, &mut self.cp.next_seq, &r.url, (r.depth, None))?;
            } else {
                let Some(c) = Candidate::new(deduper.canonicalizer(), r.url) else {
                    continue;
                };
                if !frontier::enqueue(deduper, tables, fr, &mut self.cp.next_seq, &c, (r.depth, None))? {
                    continue;
                }
            }
            self.cp.stats.dust_restored += 1;
            added += 1;
        }
        Ok(added)
    }

    /// The sitemaps and feeds this commit's outcomes found into the
    /// frontier, within the listing bounds (those beyond them counted in
    /// `listings_skipped`); returns how many were added.
    fn queue_offered(
        &mut self,
        deduper: &Tiers,
        tables: &mut dyn simcrawl_dedup::Tables,
        txn: &redb::WriteTransaction,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
    ) -> simcrawl_dedup::Result<u64> {
        if self.offered.is_empty() {
            return Ok(0);
        }
        let mut budget = frontier::ListingBudget::open(txn, self.listing_bounds)?;
        let mut added = 0;
        for (c, depth, nest, via) in std::mem::take(&mut self.offered) {
            let offered = frontier::enqueue_listing(
                deduper,
                tables,
                (fr, &mut budget),
                &mut self.cp.next_seq,
                &c,
                (depth, nest, Some(via.as_str())),
            )?;
            match offered {
                frontier::Offered::Queued => {
                    added += 1;
                    // Found in a listing: a URL it gave.
                    self.cp.stats.listed += u64::from(nest > 0);
                }
                frontier::Offered::Seen => {}
                frontier::Offered::OverBound => self.cp.stats.listings_skipped += 1,
            }
        }
        Ok(added)
    }

    /// The recorder of this writer's outputs and counters.
    fn recorder(&mut self) -> Recorder<'_> {
        Recorder {
            outputs: &mut self.outputs,
            stats: &mut self.cp.stats,
            write_text: self.write_text,
        }
    }

    /// Judges one fetched page: its output line, its counters, its links
    /// into the frontier; returns how many links were added.
    fn judge_page(
        &mut self,
        deduper: &Tiers,
        tables: &mut dyn simcrawl_dedup::Tables,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        sched: &mut Schedule<'_>,
        rewrites: &mut Rewrites<'_>,
        p: &PageResult,
    ) -> simcrawl_dedup::Result<u64> {
        let io = state::caller_err;
        // A redirect to a URL the crawl already knows: that URL is (or will
        // be) fetched under its own name. Recorded as a URL-tier duplicate
        // of the target, so every fetched page leaves one line.
        if let Some((target, c)) = p.redirect_target(deduper.canonicalizer())
            && let UrlVerdict::Seen { .. } = deduper.check_url_in(tables, &target, c)?
        {
            self.recorder().url_copy(p).map_err(io)?;
            self.dust.lock().probe_done(&p.entry.url, false);
            return Ok(0);
        }
        // Observed once judged: a page never counts towards its own template.
        self.templates
            .observe_blocks(host_of(&p.final_url), &p.own_blocks);
        // Not kept, not indexed: no verdict (a "noindex" line).
        let verdict = if p.noindex || p.filtered_lang {
            None
        } else {
            self.early_pages += u64::from(p.early.is_some());
            Some(deduper.check_in_with(tables, &p.sig, UrlTier::Skip, p.early.as_ref())?)
        };
        self.recorder().judged(p, verdict.as_ref()).map_err(io)?;
        // Remembered to be visited again.
        if let Some(key) = p.url_key {
            // A sitemap's changefreq, else the default, within the bounds.
            let interval = sched
                .take_hint(key)?
                .map(|h| {
                    h.clamp(
                        self.revisit.min_interval_s,
                        self.revisit.max_interval_s.max(self.revisit.min_interval_s),
                    )
                })
                .unwrap_or(self.revisit.default_interval_s);
            let mut rec = PageRecord {
                url: p.entry.url.to_string(),
                depth: p.entry.depth,
                interval_s: interval,
                ..PageRecord::default()
            };
            self.set_judged(deduper, &mut rec, p, verdict.as_ref(), interval);
            sched.put(key, &rec)?;
        }
        if let Some(v) = &verdict {
            // DUST: a copy is evidence for the rewrite between its URL and
            // its kept page's; a kept page may be a counter-example.
            let mut dust = self.dust.lock();
            match v {
                Verdict::Unique { .. } => dust.observe_kept_as(&p.entry.url, p.url_images.as_ref()),
                Verdict::Duplicate(d) => dust.observe_duplicate(&p.entry.url, &d.of),
                _ => {} // non_exhaustive in simcrawl-dedup
            }
        }
        let kept = matches!(verdict, Some(Verdict::Unique { .. }));
        self.dust.lock().probe_done(&p.entry.url, kept);
        self.tell_canonicals(p);
        for (at, problem) in &p.listing_problems {
            self.recorder()
                .listing_problem(at, Some(p.entry.url.as_str()), problem)
                .map_err(io)?;
        }
        self.offered.extend(
            p.listings
                .iter()
                .map(|c| (c.clone(), p.entry.depth, 0, p.entry.url.to_string())),
        );
        self.enqueue_links(deduper, tables, fr, rewrites, p)
    }

    /// The links of `p` into the frontier (rewritten by the learnt URL
    /// rules first); returns how many were added.
    fn enqueue_links(
        &mut self,
        deduper: &Tiers,
        tables: &mut dyn simcrawl_dedup::Tables,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        rewrites: &mut Rewrites<'_>,
        p: &PageResult,
    ) -> simcrawl_dedup::Result<u64> {
        let mut added = 0;
        if p.entry.depth < self.max_depth {
            let dust = self.dust.clone();
            let dust = dust.lock();
            for link in &p.links {
                // Links into a duplicate URL space are rewritten first: the
                // URL tier then knows them.
                let folded = dust.fold_by(link.url());
                self.cp.stats.dust_links_rewritten += u64::from(folded.is_some());
                let rewritten = match folded {
                    Some((fold, by)) => {
                        // Recorded with the rules that made it, to be
                        // fetched after all if one is withdrawn.
                        if !rewrites.record(&by, link.url(), p.entry.depth + 1, false)? {
                            self.cp.stats.dust_unrecorded += 1;
                        }
                        match fold {
                            Fold::Known => {
                                self.cp.stats.verdicts.record_duplicate(Tier::Url);
                                continue;
                            }
                            Fold::Rewritten(u) => Candidate::new(deduper.canonicalizer(), u),
                        }
                    }
                    None => None,
                };
                // Known to the URL tier when the page task read it: a URL
                // leaves the tier only by leaving the window, so it is
                // still known if its time is still within it.
                if rewritten.is_none() && link.known_since.is_some_and(|at| deduper.still_in_window(at)) {
                    self.cp.stats.verdicts.record_duplicate(Tier::Url);
                    self.known_links += 1;
                    continue;
                }
                let link = rewritten.as_ref().unwrap_or(link);
                if frontier::enqueue(
                    deduper,
                    tables,
                    fr,
                    &mut self.cp.next_seq,
                    link,
                    (p.entry.depth + 1, Some(p.entry.url.as_str())),
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

impl Commits for Writer {
    fn commit(&mut self, batch: Vec<Outcome>) -> Result<Committed> {
        Writer::commit(self, batch)
    }
    fn durable_due_in(&self) -> Option<Duration> {
        Writer::durable_due_in(self)
    }
    fn make_durable(&mut self) -> Result<()> {
        Writer::make_durable(self)
    }
    fn between_commits(&mut self) -> Result<()> {
        // The tiers are checked inside the writer's own transactions, so
        // expired entries (dedup.window) are purged here, between them.
        self.deduper
            .purge_if_due()
            .map(drop)
            .context("cannot purge expired entries")
    }
    fn finish(&mut self) -> Result<()> {
        if self.known_links > 0 {
            tracing::debug!(
                links = self.known_links,
                "links known to their page tasks, not looked up by the writer"
            );
        }
        if self.early_pages > 0 {
            tracing::debug!(
                pages = self.early_pages,
                "pages judged with the candidates their page tasks found"
            );
        }
        save_templates(&self.templates, self.deduper.store())?;
        self.make_durable()?;
        // The last WARC file's CDXJ index (the run writes nothing more).
        self.outputs.close().map(drop)
    }
    fn tick_in(&self) -> Option<Duration> {
        self.forever
            .then(|| TICK_EVERY.saturating_sub(self.last_tick.elapsed()))
    }
    fn tick(&mut self) -> Result<u64> {
        self.move_due()
    }
}

/// Whether the page at `c` was judged already in this crawl (its record
/// is in the revisit schedule): a page declaring it canonical is then
/// judged at once, against it, instead of waiting behind it.
fn judged_before(deduper: &Tiers, sched: &Schedule<'_>, c: &Candidate) -> simcrawl_dedup::Result<bool> {
    match url_key(deduper.canonicalizer(), c.url()) {
        Some(key) => Ok(sched.get(key)?.is_some()),
        None => Ok(false),
    }
}
