//! The writer side of the shared backend ([`RedisWriter`]): a group
//! commit in the order the module documentation of [`super`] gives (the
//! verdicts, the lines written and synced, one ack, then the redirect
//! targets), what the learners learnt carried by the acks, and the rules
//! the other workers published taken up. The lines, releases and links of
//! a batch are [`batch`]'s.

mod batch;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use parking_lot::Mutex;
use simcrawl_dedup::{CanonicalUrl, Signature, Store, UrlTier, Verdict};
use tracing::warn;

use super::frontier::{self, Ack, AckReply, LearnOp, RedisFrontier, Release, Tokens, retry};
use super::learn::RedisLearn;
use super::url_tier::unseen_digests;
use super::workers::{WorkerState, cut_gone_workers};
use super::{Learners, Shared, SharedTiers};
use crate::backend::{Commits, Committed, Requeues};
use crate::config::Config;
use crate::daemon::worker::{Outcome, PageResult, PageStages};
use crate::dust::{Dust, Rewrites};
use crate::learn::{LearnStore, Map};
use crate::output::record::Recorder;
use crate::output::sinks::{Offsets, Outputs};
use crate::stats::Stats;
use crate::template::{Save, Templates, host_of};

/// The writer side of the shared backend (see the module documentation for
/// the order of a commit).
pub(super) struct RedisWriter {
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

impl RedisWriter {
    /// The writer of worker `shared.worker`, going on from its last
    /// acknowledged batch `batch_no` (`state`, with its `outputs` opened at
    /// the offsets it records).
    pub(super) fn new(
        cfg: &Config,
        shared: &Shared,
        (batch_no, state, outputs): (u64, WorkerState, Outputs),
        stages: &PageStages,
        stats: Arc<Mutex<Stats>>,
        learners: Learners,
    ) -> RedisWriter {
        RedisWriter {
            deduper: shared.deduper.clone(),
            frontier: shared.frontier.clone(),
            worker: shared.worker.clone(),
            outputs,
            base_seconds: state.stats.seconds,
            base_hosts_evicted: state.stats.hosts_evicted,
            base_throttled: state.stats.throttled,
            state,
            batch_no,
            max_depth: cfg.crawl.max_depth,
            listing_bounds: crate::listing::Bounds::of(&cfg.crawl),
            write_text: cfg.crawl.write_text,
            requeues: Requeues::of(&cfg.crawl),
            retry_waits: stages.retry_waits.clone(),
            canonicals: stages.canonicals.clone(),
            cap: shared.cap,
            shared: stats,
            fetcher: stages.fetcher.clone(),
            templates: learners.templates,
            dust: learners.dust,
            learn: learners.learn,
            max_recorded: cfg.crawl.dust.max_recorded,
            last_sync: Instant::now(),
            rules_seen: 0,
            last_heard: Instant::now(),
            images_seen: 0,
            tokens: Tokens::new(),
            run_started: Instant::now(),
            out_root: cfg.crawl.out_dir.clone(),
            warc: cfg.output.clone(),
            last_cut: Instant::now(),
        }
    }
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

fn io(e: anyhow::Error) -> anyhow::Error {
    e.context("cannot write the outputs")
}

/// What step 1 of a commit found of a batch's pages
/// ([`RedisWriter::judge`]), kept for every attempt of its ack.
struct Verdicts {
    /// Each page's redirect target (its final URL, when that differs from
    /// its own).
    targets: Vec<Option<(String, CanonicalUrl)>>,
    /// The page's final URL was already known (a URL-tier duplicate).
    redirected: Vec<bool>,
    /// Put back behind the canonical URL it declared.
    waiting: Vec<bool>,
    /// `None`: not judged (redirected, noindex, or waiting).
    verdicts: Vec<Option<Verdict>>,
}

impl Verdicts {
    fn judged(&self) -> Judged<'_> {
        Judged {
            redirected: &self.redirected,
            verdicts: &self.verdicts,
            waiting: &self.waiting,
        }
    }
}

/// Debug builds only, for the end-to-end tests: the worker dies (as by
/// kill -9) with a batch's lines written and not acknowledged (`wrote`:
/// this attempt wrote lines): `redirect`, the first batch with a
/// redirected page (its target must not count as seen yet); a number N,
/// the N-th batch that wrote lines (a batch of listings alone, such as a
/// missing /sitemap.xml, writes none, and its place in the order depends
/// on timing).
#[cfg(debug_assertions)]
fn abort_before_ack_for_tests(wrote: bool, targets: &[Option<(String, CanonicalUrl)>]) {
    if let Ok(when) = std::env::var("SIMCRAWL_TEST_ABORT_BEFORE_ACK") {
        static LINED_BATCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let lined = LINED_BATCHES.fetch_add(u64::from(wrote), std::sync::atomic::Ordering::Relaxed)
            + u64::from(wrote);
        if (when == "redirect" && targets.iter().any(Option::is_some))
            || (wrote && when.parse::<u64>().is_ok_and(|n| n == lined))
        {
            std::process::abort();
        }
    }
}

impl RedisWriter {
    /// Step 1 of a commit, the verdicts: redirect targets, then the title and content tiers of
    /// every page that is judged, in one transaction.
    fn judge(&self, pages: &[&PageResult]) -> Result<Verdicts> {
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
        Ok(Verdicts {
            targets,
            redirected,
            waiting,
            verdicts: verdict_of,
        })
    }

    /// What the verdicts `v` of `pages` tell the pages waiting behind a
    /// canonical URL, the site templates and the DUST learner (whose
    /// probes the batch's failures settle too).
    fn observe(&mut self, batch: &[Outcome], pages: &[&PageResult], v: &Verdicts) {
        let (redirected, waiting) = (&v.redirected, &v.waiting);
        for (i, p) in pages.iter().enumerate() {
            // The pages waiting behind this URL learn whether they copy it
            // (its canonical digest computed by the page task).
            if !redirected[i]
                && let Some(key) = p.url_key
            {
                self.canonicals.fetched(key.to_be_bytes(), &p.sig);
            }
            if redirected[i] || waiting[i] {
                self.dust.lock().probe_done(&p.entry.url, false);
                if let Some(c) = p.wait_for.as_ref().filter(|_| waiting[i]) {
                    self.canonicals.waits(&p.entry, &p.sig, c);
                }
                continue;
            }
            self.templates
                .observe_blocks(host_of(&p.final_url), &p.own_blocks);
            // DUST: a copy is evidence for the rewrite between its URL and
            // its kept page's; a kept page may be a counter-example.
            let mut dust = self.dust.lock();
            match &v.verdicts[i] {
                Some(Verdict::Unique { .. }) => dust.observe_kept_as(&p.entry.url, p.url_images.as_ref()),
                Some(Verdict::Duplicate(d)) => dust.observe_duplicate(&p.entry.url, &d.of),
                _ => {} // non_exhaustive in simcrawl-dedup
            }
            let kept = matches!(v.verdicts[i], Some(Verdict::Unique { .. }));
            dust.probe_done(&p.entry.url, kept);
            drop(dust);
        }
        for o in batch {
            if let Outcome::Failed { entry, .. } = o {
                self.dust.lock().probe_done(&entry.url, false);
            }
        }
    }

    /// Steps 2 and 3 of one attempt of a commit (the lines of `batch`
    /// without the pages of `lost`, written and synced), and the ack of
    /// step 4 that carries them: the releases and links, the counters
    /// since `before`, the rewrites this attempt recorded and what was
    /// learnt (`learnt`: the same in every attempt, taken at the first).
    /// Also returns how many entries it put back.
    fn prepare_ack(
        &mut self,
        batch: &[Outcome],
        judged: &Judged,
        lost: &HashSet<u64>,
        before: &Stats,
        learnt: &mut Option<Vec<LearnOp>>,
    ) -> Result<(Ack, u64)> {
        self.state.stats = before.clone();
        self.learn.discard_ops();
        let written = self.write_batch(batch, judged, lost)?;
        // The rewrites this attempt recorded, then what was learnt
        // (a withdrawal gives back the records made before it).
        let (mut ops, max_recorded) = self.learn.take_ops();
        ops.extend(written.notes.iter().cloned());
        let tail = match learnt.take() {
            Some(t) => t,
            None => self.learnt()?,
        };
        ops.extend(tail.iter().cloned());
        *learnt = Some(tail);
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
        Ok((ack, written.requeued))
    }

    /// An ack refused for leases `ids` that expired and were taken back:
    /// their pages are left out of the next attempt (`lost`), which starts
    /// from the outputs cut back to `at`.
    fn refused(&mut self, ids: Vec<u64>, lost: &mut HashSet<u64>, at: Offsets) -> Result<()> {
        if ids.iter().all(|id| lost.contains(id)) {
            bail!("the shared frontier refused an acknowledgement again for leases it left out: {ids:?}");
        }
        warn!(
            leases = ids.len(),
            "leases expired before their results were acknowledged: another worker took \
             their pages back; writing the batch again without them"
        );
        lost.extend(ids);
        self.outputs.cut_to(at).map_err(io)?;
        Ok(())
    }

    /// Steps 5 and 6, once the ack of `pages` (less those of `lost`) was
    /// applied.
    fn acknowledged(&mut self, pages: &[&PageResult], v: &Verdicts, lost: &HashSet<u64>) -> Result<()> {
        // 5. Redirect targets of the pages this commit wrote count as
        // seen from now on.
        let kept_targets: Vec<(String, CanonicalUrl)> = pages
            .iter()
            .zip(&v.targets)
            .zip(v.redirected.iter().zip(&v.waiting).map(|(r, w)| *r || *w))
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
        let v = self.judge(&pages)?;
        self.observe(&batch, &pages, &v);
        // 2-4, again without the pages of leases found taken back.
        let before = self.state.stats.clone();
        let at = self.state.offsets;
        self.batch_no += 1;
        let mut lost: HashSet<u64> = HashSet::new();
        // What the learners learnt from this batch's verdicts: the same in
        // every attempt of the ack.
        let mut learnt: Option<Vec<LearnOp>> = None;
        loop {
            let (ack, requeued) = self.prepare_ack(&batch, &v.judged(), &lost, &before, &mut learnt)?;
            #[cfg(debug_assertions)]
            abort_before_ack_for_tests(self.state.offsets != at, &v.targets);
            let reply = retry("acknowledge results", self.frontier.url(), || {
                self.frontier.ack(&self.worker, self.cap, &ack)
            })?;
            if let AckReply::Refused(ids) = reply {
                self.refused(ids, &mut lost, at)?;
                continue;
            }
            self.acknowledged(&pages, &v, &lost)?;
            return Ok(Committed {
                seqs,
                added: ack.links.len() as u64,
                requeued,
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
