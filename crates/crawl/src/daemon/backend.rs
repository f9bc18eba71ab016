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
//! ([`super::writer::Writer`] and [`LocalSource`]: frontier, tiers and
//! output offsets in one transaction) and the shared Redis server
//! ([`super::redis_backend`]: leases, the store's optimistic transactions, and an
//! acknowledgement after the outputs are fsynced).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use super::Tiers;
use super::worker::Outcome;
use super::writer::Committed;
use crate::frontier::{Entry, Window};

/// The frontier as the dispatcher sees it. `refill` may block (store or
/// network reads): the dispatcher runs it on the blocking pool.
pub trait Source: Send + 'static {
    /// Whether [`Source::refill`] has anything to do now.
    fn wants_refill(&self) -> bool;
    /// Loads (or leases) more entries.
    fn refill(&mut self) -> Result<()>;
    /// The next entry to fetch whose host has room (it is then in flight).
    fn next(&mut self, per_host_limit: usize) -> Option<Entry>;
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
    /// New entries were committed: look again.
    fn poke(&mut self);
    /// The crawl stops (done, budget, signal) and the writer has committed
    /// everything: give back what was taken and not fetched. May block.
    fn close(&mut self) -> Result<()> {
        Ok(())
    }
}

/// The writer's side of a backend; the writer thread's loop
/// ([`super::writer::writer_loop`]) drives it.
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
}

/// The redb frontier: the in-memory [`Window`] over the stored frontier.
#[derive(Debug)]
pub struct LocalSource {
    pub window: Window,
    pub deduper: Arc<Tiers>,
}

impl Source for LocalSource {
    fn wants_refill(&self) -> bool {
        self.window.wants_refill()
    }
    fn refill(&mut self) -> Result<()> {
        self.window.refill(self.deduper.store().database())
    }
    fn next(&mut self, per_host_limit: usize) -> Option<Entry> {
        self.window.next(per_host_limit)
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
        self.window.is_finished()
    }
    fn poke(&mut self) {
        self.window.poke();
    }
}
