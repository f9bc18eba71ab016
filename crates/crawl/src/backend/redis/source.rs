//! The frontier side of the shared backend ([`RedisSource`]): entries
//! leased from the shared frontier, claimed in the URL tier, handed to the
//! dispatcher; the leases held (pending or in flight) renewed, and those not
//! started given back when the worker stops.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use simcrawl_dedup::{CanonicalUrl, Deduper, Prefetch, Store, Tables, UrlVerdict};
use tracing::{info, warn};

use super::frontier::{self, Ack, Claim, Leased, RedisFrontier, Release, encode_again, host_key, retry};
use super::{POLL, Shared, SharedTiers};
use crate::backend::Source;
use crate::config::Config;
use crate::frontier::Entry;

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
pub(super) struct RedisSource {
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
    /// The source of worker `shared.worker`, leasing `batch` entries per
    /// call.
    pub(super) fn new(shared: &Shared, cfg: &Config, batch: usize) -> RedisSource {
        RedisSource {
            frontier: shared.frontier.clone(),
            deduper: shared.deduper.clone(),
            worker: shared.worker.clone(),
            pending: VecDeque::new(),
            in_flight: HashMap::new(),
            last: None,
            poked: true,
            last_lease: Instant::now(),
            batch,
            cap: shared.cap,
            lease_ms: cfg.redis.lease_ms.max(1),
            delay_ms: cfg.fetch.per_host_delay_ms,
            last_renew: Instant::now(),
            budget: cfg.crawl.max_pages,
        }
    }

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use url::Url;

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
            (Entry::new(0, url, 0), token.to_string())
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
}
