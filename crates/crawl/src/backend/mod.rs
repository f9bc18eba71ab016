//! The contract between the crawl pipeline and where its state lives: one
//! daemon, two backends. The pipeline (dispatch, fetch, clean, sign, the
//! writer thread's loop, sinks) is written against these two traits only:
//!
//! - [`Source`]: the frontier as the dispatcher sees it (entries to fetch,
//!   within the host limits, and when the crawl is over);
//! - [`Commits`]: the writer's side: judge a group of results, write their
//!   lines and commit them with the frontier changes they imply.
//!
//! Implementations: the single-machine redb file
//! ([`crate::backend::local::writer::Writer`] and [`local::LocalSource`]: frontier, tiers and
//! output offsets in one transaction) and the shared Redis server
//! ([`crate::backend::redis`]: leases, the store's optimistic transactions, and an
//! acknowledgement after the outputs are fsynced).

pub mod local;
pub mod redis;

use std::time::Duration;

use anyhow::Result;

use crate::daemon::worker::Outcome;
use crate::frontier::Entry;

/// The frontier as the dispatcher sees it. `refill` may block (store or
/// network reads): the dispatcher runs it on the blocking pool.
pub trait Source: Send + 'static {
    /// Whether [`Source::refill`] has anything to do now.
    fn wants_refill(&self) -> bool;
    /// Loads (or leases) more entries.
    fn refill(&mut self) -> Result<()>;
    /// The next entry to fetch whose host has room (it is then in flight).
    /// The next entry to fetch within the source's per-host limit and page
    /// budget (it is then in flight).
    fn next(&mut self) -> Option<Entry>;
    /// `n` entries of a commit went back to the frontier without a fetch
    /// (requeued, or rewritten): they do not count against a budget.
    fn requeued(&mut self, _n: u64) {}
    /// The entry's fetch is over (its result may not be committed yet).
    fn released(&mut self, seq: u64);
    /// The entry's result is committed.
    fn done(&mut self, seq: u64);
    /// Entries handed out and not done.
    fn in_flight(&self) -> usize;
    /// Entries loaded and not handed out.
    fn pending(&self) -> usize;
    /// Nothing more to fetch, now or later.
    fn is_finished(&self) -> bool;
    /// The page budget (`crawl.max_pages`) is spent: how the crawl ended,
    /// when it is.
    fn budget_spent(&self) -> bool {
        false
    }
    /// New entries were committed: look again.
    fn poke(&mut self);
    /// The crawl stops (done, budget, signal) and the writer has committed
    /// everything: give back what was taken and not fetched. May block.
    fn close(&mut self) -> Result<()> {
        Ok(())
    }
}

/// The writer's side of a backend; the writer thread's loop
/// ([`crate::daemon::commit::writer_loop`]) drives it.
pub trait Commits: Send + 'static {
    /// Judges and records one group of results.
    fn commit(&mut self, batch: Vec<Outcome>) -> Result<Committed>;
    /// How long the loop may wait for results before [`Commits::make_durable`]
    /// is due; `None` when everything is durable.
    fn durable_due_in(&self) -> Option<Duration>;
    /// Makes every commit so far durable.
    fn make_durable(&mut self) -> Result<()>;
    /// Housekeeping between two commits (the dedup window's purge).
    fn between_commits(&mut self) -> Result<()>;
    /// The last words: learnt templates, a final durable commit.
    fn finish(&mut self) -> Result<()>;
    /// How long until [`Commits::tick`] is due; `None`: never (only a
    /// crawl that runs `--forever` ticks).
    fn tick_in(&self) -> Option<Duration> {
        None
    }
    /// Periodic work outside commits (`--forever`: the pages due for a
    /// revisit into the frontier); returns the entries added.
    fn tick(&mut self) -> Result<u64> {
        Ok(0)
    }
}

/// Messages from the writer to the dispatcher.
#[derive(Debug)]
pub struct Committed {
    pub seqs: Vec<u64>,
    pub added: u64,
    /// Entries that left without a fetch and were put back in the frontier:
    /// for another attempt, or under a URL rewritten by a rule
    /// (`crate::dust`). Not counted against the page budget.
    pub requeued: u64,
}

// Requeues of transient failures: one policy for both backends.

/// When a failed page goes back to the frontier, and after how long:
/// `crawl.max_requeues`, `crawl.requeue_delay_ms`, `crawl.retry_budget_ms`.
#[derive(Debug, Clone, Copy)]
pub struct Requeues {
    pub max: u32,
    pub delay_ms: u64,
    pub budget_ms: u64,
}

impl Requeues {
    /// The crawl's settings.
    pub fn of(cfg: &crate::config::CrawlConfig) -> Requeues {
        Requeues {
            max: cfg.max_requeues,
            delay_ms: cfg.requeue_delay_ms,
            budget_ms: cfg.retry_budget_ms,
        }
    }

    /// The wait before `o` is fetched again: `None` unless it is a
    /// transient failure within the requeue count and the retry budget.
    pub fn delay(&self, o: &Outcome) -> Option<u64> {
        match o {
            Outcome::Failed {
                entry,
                transient: true,
                took_ms,
                ..
            } if entry.attempts < self.max => {
                requeue_delay_within(self.delay_ms, self.budget_ms, entry.attempts, *took_ms)
            }
            _ => None,
        }
    }
}

/// The requeue delay doubles with each attempt up to this many times (the
/// shift stays far from overflowing; `crawl.max_requeues` is smaller in
/// practice).
const MAX_DELAY_DOUBLINGS: u32 = 20;

/// How long an entry put back after its `attempts`-th transient failure
/// waits: `base_ms` doubled with each attempt. Both backends requeue so.
pub fn requeue_delay_ms(base_ms: u64, attempts: u32) -> u64 {
    base_ms.saturating_mul(1u64 << attempts.min(MAX_DELAY_DOUBLINGS))
}

/// The wait before the requeue that follows an entry's `attempts`-th
/// transient failure, an attempt that took `took_ms`, within `budget_ms`
/// (0: no budget) of the URL's time in the crawl from its first attempt to
/// its last: [`requeue_delay_ms`], cut so that the wait and one more attempt
/// as long as this one fit in what the budget has left; `None` once they do
/// not. The time spent so far is the requeue waits (from the attempt count)
/// plus every attempt counted as long as this one (a URL fails the same way
/// each time: a slow server times out each time), so a resumed crawl, or
/// another worker, keeps to it without a clock stored with the entry. A
/// page that times out through all its fetch retries (4 x 30 s by default)
/// has spent the default 2 minutes in one attempt and is not requeued.
pub fn requeue_delay_within(base_ms: u64, budget_ms: u64, attempts: u32, took_ms: u64) -> Option<u64> {
    let delay = requeue_delay_ms(base_ms, attempts);
    if budget_ms == 0 {
        return Some(delay);
    }
    let waited: u64 = (0..attempts)
        .map(|a| requeue_delay_ms(base_ms, a))
        .fold(0u64, u64::saturating_add);
    let attempts_took = took_ms.saturating_mul(u64::from(attempts) + 1);
    let left = budget_ms.saturating_sub(waited.saturating_add(attempts_took));
    let for_wait = left.checked_sub(took_ms).filter(|&l| l > 0)?;
    Some(delay.min(for_wait))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requeue_waits_stay_within_the_budget() {
        let within = |budget, attempts| requeue_delay_within(60_000, budget, attempts, 0);
        // No budget: the doubling schedule.
        assert_eq!(
            (0..3).map(|a| within(0, a)).collect::<Vec<_>>(),
            [Some(60_000), Some(120_000), Some(240_000)]
        );
        // Two minutes: 60 s, then the 60 s left, then none.
        assert_eq!(
            (0..3).map(|a| within(120_000, a)).collect::<Vec<_>>(),
            [Some(60_000), Some(60_000), None]
        );
        // A budget past three doublings cuts the fourth.
        assert_eq!(within(1_000_000, 3), Some(480_000));
        assert_eq!(within(1_000_000, 4), Some(100_000));
        assert_eq!(within(1_000_000, 5), None);
        assert_eq!(within(1, 40), None, "no overflow");
        // Attempts count: one of 40 s leaves 80 s, of which the next
        // attempt takes 40, so the wait is cut to 40 (40 + 40 + 40 = 120);
        // after it, nothing is left.
        let took = |attempts, ms| requeue_delay_within(60_000, 120_000, attempts, ms);
        assert_eq!(took(0, 40_000), Some(40_000));
        assert_eq!(took(1, 40_000), None);
        // A page that timed out through its fetch retries (2 minutes)
        // spent the budget in one attempt; a fast failure barely counts.
        assert_eq!(took(0, 120_000), None);
        assert_eq!(took(0, 200), Some(60_000));
        assert_eq!(took(1, 200), Some(59_400));
        assert_eq!(
            requeue_delay_within(60_000, 0, 2, 500_000),
            Some(240_000),
            "no budget"
        );
    }
}

/// The WARC archive of a crawl, when it keeps one (`output.warc_dir`), in
/// `sub` of that directory (a worker's own set in the shared mode): opened
/// at the checkpoint's position `at` (cutting what came after it), or begun
/// anew. A new set refuses a directory that already holds files of its
/// name that the crawl has no record of (another crawl's), and `fresh`
/// deletes them first.
pub fn open_warc(
    cfg: &crate::config::Config,
    sub: Option<&str>,
    at: Option<crate::output::warc::WarcAt>,
    fresh: bool,
) -> Result<Option<crate::output::warc::WarcSink>> {
    use anyhow::{Context, bail};

    use crate::output::warc::{WarcSink, set_exists};
    if !cfg.output.enabled() {
        return Ok(None);
    }
    let mut settings = cfg.output.clone();
    if let Some(sub) = sub {
        settings.warc_dir = settings.warc_dir.join(sub);
    }
    let prefix = &settings.warc_prefix;
    let found = set_exists(&settings.warc_dir, prefix)?;
    if fresh {
        for p in &found {
            crate::output::cdxj::remove_index(p)
                .with_context(|| format!("cannot delete the index of {}", p.display()))?;
            std::fs::remove_file(p).with_context(|| format!("cannot delete {}", p.display()))?;
        }
    } else if at.is_none() && !found.is_empty() {
        bail!(
            "{} holds {} WARC file(s) named {prefix}-* that this crawl has no record of (another \
             crawl's, e.g. {}): choose another --warc directory or output.warc_prefix, move them \
             away, or run with --fresh to delete them",
            settings.warc_dir.display(),
            found.len(),
            found[0].display()
        );
    }
    let info = warcinfo_fields(cfg);
    WarcSink::open(&settings, info, if fresh { None } else { at })
        .map(Some)
        .with_context(|| format!("cannot open the WARC archive in {}", settings.warc_dir.display()))
}

/// The `warcinfo` fields that describe the crawl: how it fetches, and its
/// whole effective configuration (one JSON line).
/// Passwords in the Redis and proxy URLs are masked: archives are handed
/// around.
fn warcinfo_fields(cfg: &crate::config::Config) -> String {
    use simcrawl_dedup::store::redact;
    let mut shown = cfg.clone();
    shown.redis.url = redact(&shown.redis.url);
    shown.fetch.proxy = shown.fetch.proxy.as_deref().map(redact);
    let config = serde_json::to_string(&shown).unwrap_or_default();
    format!(
        "robots: {}\r\nhttp-header-user-agent: {}\r\nsimcrawl-config: {config}\r\n",
        if cfg.fetch.respect_robots {
            "obey"
        } else {
            "ignore"
        },
        cfg.fetch.user_agent.replace(['\r', '\n'], " "),
    )
}

#[cfg(test)]
mod warcinfo_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_warcinfo_masks_passwords_and_names_the_settings() {
        let mut cfg = crate::config::Config::default();
        cfg.redis.url = "redis://u:hunter2@h:6379/0".into();
        cfg.fetch.proxy = Some("http://p:s3cret@proxy:3128".into());
        let f = warcinfo_fields(&cfg);
        assert!(!f.contains("hunter2") && !f.contains("s3cret"), "{f}");
        assert!(
            f.contains("redis://u:***@h:6379/0") && f.contains("robots: obey\r\n"),
            "{f}"
        );
        assert!(f.contains("\"warc_max_bytes\":1000000000"), "{f}");
    }
}
