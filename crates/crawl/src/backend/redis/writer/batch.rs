//! The lines, releases and links of a batch ([`RedisWriter::write_batch`],
//! steps 2 and 3 of a commit): each outcome's lines and counters and what
//! becomes of its lease, then the links found that the URL tier has not
//! seen, as new entries of the shared frontier.

use std::collections::{BTreeMap, HashSet};

use anyhow::Result;

use super::{Judged, RedisWriter, Written, io};
use crate::backend::redis::frontier::{Claim, LearnOp, Release, encode_again, encode_kind, host_key, retry};
use crate::backend::redis::url_tier::unseen;
use crate::daemon::worker::{Outcome, PageResult};
use crate::dust::{Fold, Rewrites};
use crate::frontier::{Candidate, Entry};

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
fn learn_op(kind: &str, a: &str, b: &str) -> LearnOp {
    [
        kind.as_bytes().to_vec(),
        a.as_bytes().to_vec(),
        b.as_bytes().to_vec(),
        Vec::new(),
    ]
}

/// What the outcomes of a batch give the ack, gathered as
/// [`RedisWriter::write_batch`] goes through them.
struct Gathered {
    releases: Vec<Release>,
    requeued: u64,
    /// Each with what led to it (`Entry::via`: `None` for none known).
    links: Vec<(Candidate, u32, Option<String>)>,
    /// Sitemaps and feeds to read (a page's, or an index's: only the
    /// latter count as `listed`, as in the local mode), and the pages
    /// listings gave (counted as `listed` when new).
    listing_links: Vec<(Candidate, u32, Found, Option<String>)>,
    listed_links: Vec<(Candidate, u32, Option<String>)>,
    notes: Vec<LearnOp>,
    delays: BTreeMap<String, u64>,
}

impl RedisWriter {
    /// Steps 2 and 3 of a commit for every outcome whose lease is not in
    /// `lost`: output lines (not yet synced), counters in `self.state`,
    /// releases, requeues and new links.
    pub(super) fn write_batch(
        &mut self,
        batch: &[Outcome],
        judged: &Judged,
        lost: &HashSet<u64>,
    ) -> Result<Written> {
        let mut g = Gathered {
            releases: Vec::with_capacity(batch.len()),
            requeued: 0,
            links: Vec::new(),
            listing_links: Vec::new(),
            listed_links: Vec::new(),
            notes: Vec::new(),
            delays: BTreeMap::new(),
        };
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
            self.write_outcome(o, page_no, judged, &mut g)?;
        }
        let queued = self.queue_links(g.links, g.listed_links, g.listing_links)?;
        Ok(Written {
            releases: g.releases,
            links: queued,
            notes: g.notes,
            delays: g.delays.into_iter().collect(),
            requeued: g.requeued,
        })
    }

    /// One outcome (the `page_no`-th page of the batch, if a page): its
    /// lines and counters, and what becomes of its lease, into `g`.
    fn write_outcome(
        &mut self,
        o: &Outcome,
        page_no: usize,
        judged: &Judged,
        g: &mut Gathered,
    ) -> Result<()> {
        match o {
            Outcome::Failed { entry, kind, .. } if let Some(delay) = self.requeues.delay(o) => {
                self.requeue(entry, kind, delay, g);
            }
            // A sitemap or feed that is not there (most hosts have no
            // /sitemap.xml): nothing to say, and not a page.
            Outcome::Failed {
                entry,
                status: Some(404 | 410),
                ..
            } if entry.listing => g.releases.push(Release {
                lease: entry.seq,
                again: None,
                uncount: true,
            }),
            // Any other failure of one: a line, not a failed page.
            Outcome::Failed { entry, error, .. } if entry.listing => {
                self.recorder()
                    .listing_problem(entry.url.as_str(), entry.via.as_deref(), error)
                    .map_err(io)?;
                g.releases.push(Release {
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
                g.releases.push(Release {
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
            Outcome::NotModified { entry, .. } => g.releases.push(Release {
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
                self.write_listing(entry, kind, pages, listings, problems, g)?;
            }
            Outcome::Rewritten { entry, .. } => self.rewritten(entry, g)?,
            Outcome::Page(p) if judged.waiting[page_no - 1] => self.wait_for_canonical(p, g),
            Outcome::Page(p) => self.write_fetched(p, page_no - 1, judged, g)?,
        }
        Ok(())
    }

    /// A failure worth another attempt: `entry` goes back after `delay`.
    fn requeue(&mut self, entry: &Entry, kind: &'static str, delay: u64, g: &mut Gathered) {
        self.retry_waits
            .waiting(&entry.url, crate::frontier::now_ms().saturating_add(delay), kind);
        let again = encode_again(entry, entry.attempts + 1);
        g.releases.push(Release {
            lease: entry.seq,
            again: Some((again, delay)),
            uncount: true,
        });
        self.state.stats.requeued += 1;
        g.requeued += 1;
    }

    /// A sitemap or feed read (`entry`, of `kind`): its pages and the
    /// listings it names become links, what it says of its pages a note.
    fn write_listing(
        &mut self,
        entry: &Entry,
        kind: &crate::listing::Kind,
        pages: &[(Candidate, crate::listing::Hints)],
        listings: &[Candidate],
        problems: &[String],
        g: &mut Gathered,
    ) -> Result<()> {
        self.state.stats.listings += 1;
        g.notes
            .push(learn_op("listing", entry.url.as_str(), kind.as_str()));
        if entry.depth < self.max_depth {
            for (c, hints) in pages {
                if !hints.is_empty() {
                    g.notes.push(learn_op(
                        "hint",
                        c.url().as_str(),
                        &hints.stored(c.url().as_str()),
                    ));
                }
                g.listed_links
                    .push((c.clone(), entry.depth + 1, Some(entry.url.to_string())));
            }
        }
        // Deeper than the bound: not read, and said in the
        // summary (the per-host bound is the ack script's).
        let nest = entry.nest.saturating_add(1);
        if self.listing_bounds.too_deep(nest) {
            self.state.stats.listings_skipped += listings.len() as u64;
        } else {
            g.listing_links.extend(listings.iter().map(|c| {
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
        g.releases.push(Release {
            lease: entry.seq,
            again: None,
            uncount: true,
        });
        Ok(())
    }

    /// An entry not fetched because a URL rewrite rule maps it elsewhere
    /// (see [`RedisWriter::write_outcome`]), folded again.
    fn rewritten(&mut self, entry: &Entry, g: &mut Gathered) -> Result<()> {
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
                    g.links.push((c, entry.depth, entry.via.clone()));
                }
                None
            }
        };
        g.releases.push(Release {
            lease: entry.seq,
            again,
            uncount: true,
        });
        Ok(())
    }

    /// A page put back behind the canonical URL it declared, which is
    /// queued unless the URL tier knows it: no line yet.
    fn wait_for_canonical(&mut self, p: &PageResult, g: &mut Gathered) {
        let again = Entry {
            waited: true,
            ..p.entry.clone()
        };
        g.releases.push(Release {
            lease: p.entry.seq,
            again: Some((encode_again(&again, again.attempts), crate::canonical::WAIT_MS)),
            uncount: true,
        });
        if let Some(c) = &p.wait_for {
            g.links
                .push((c.clone(), p.entry.depth, Some(p.entry.url.to_string())));
        }
        self.state.stats.canonical_waits += 1;
        g.requeued += 1;
    }

    /// A fetched page (the batch's `i`-th): its line and records, its
    /// host's Crawl-delay, and its links, sitemaps and feeds.
    fn write_fetched(&mut self, p: &PageResult, i: usize, judged: &Judged, g: &mut Gathered) -> Result<()> {
        g.releases.push(Release {
            lease: p.entry.seq,
            again: None,
            uncount: false,
        });
        if let Some(cd) = self.fetcher.crawl_delay(&p.entry.url) {
            g.delays.insert(
                host_key(&p.entry.url),
                u64::try_from(cd.as_millis()).unwrap_or(u64::MAX),
            );
        }
        self.write_page(p, judged.redirected[i], judged.verdicts[i].as_ref())?;
        if !judged.redirected[i] && p.entry.depth < self.max_depth {
            self.fold_links(p, &mut g.links)?;
            // Its host's sitemaps (the first page of the host
            // this worker fetched) and the feeds it announces,
            // at its own depth: their pages come one deeper.
            g.listing_links.extend(p.listings.iter().map(|c| {
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
        Ok(())
    }

    /// Step 2 of a commit: links the URL tier has not seen become entries: pages (from
    /// links, then from listings), then sitemaps and feeds. A URL seen
    /// as a listing is not a duplicate page: not counted as one.
    fn queue_links(
        &mut self,
        links: Vec<(Candidate, u32, Option<String>)>,
        listed_links: Vec<(Candidate, u32, Option<String>)>,
        listing_links: Vec<(Candidate, u32, Found, Option<String>)>,
    ) -> Result<Vec<(String, String)>> {
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
        Ok(queued)
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
}
