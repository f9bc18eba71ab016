//! What the writer keeps of the pages it judged, for their revisits
//! (`crate::revisit`): a page's record set from its verdict, a revisited
//! page found the same, changed, not modified or gone (and the copies of a
//! changed or gone page judged again), and the pages a sitemap or feed
//! gave, queued or due for a revisit by what it says of them.

use simcrawl_dedup::{Tier, UrlTier, Verdict};

use super::Writer;
use crate::backend::local::{frontier, state};
use crate::daemon::Tiers;
use crate::daemon::worker::PageResult;
use crate::dust::Rewrites;
use crate::frontier::Candidate;
use crate::revisit::{Change, PageRecord, Schedule, classify, url_key};

impl Writer {
    /// Fills `rec` from a page just judged: its validators, its text's
    /// measures, its verdict, its next visit after `interval_s`.
    pub(super) fn set_judged(
        &self,
        deduper: &Tiers,
        rec: &mut PageRecord,
        p: &PageResult,
        verdict: Option<&Verdict>,
        interval_s: u64,
    ) {
        rec.since = p.validators.clone();
        rec.fetched_at = p.fetched_at;
        rec.set_signature(&p.sig);
        rec.rejudge = false;
        rec.doc = None;
        rec.dup_of = None;
        rec.dup_key = None;
        match verdict {
            Some(Verdict::Unique { id: Some(id), .. }) => {
                // Measured against its document in the index.
                rec.doc = Some(*id);
                rec.fingerprint = None;
                rec.sketch = None;
            }
            Some(Verdict::Duplicate(d)) if d.of != p.entry.url.as_str() && d.tier != Tier::Url => {
                rec.dup_key = url::Url::parse(&d.of)
                    .ok()
                    .and_then(|u| url_key(deduper.canonicalizer(), &u));
                rec.dup_of = Some(d.of.clone());
            }
            _ => {}
        }
        rec.interval_s = interval_s;
        rec.next_ms = crate::frontier::now_ms().saturating_add(interval_s.saturating_mul(1000));
    }

    /// A revisited page that answered with a body: same, similar or
    /// changed; judged again when changed (or when the page it copied
    /// changed); returns the links added.
    pub(super) fn revisit_page(
        &mut self,
        deduper: &Tiers,
        tables: &mut dyn simcrawl_dedup::Tables,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        sched: &mut Schedule<'_>,
        rewrites: &mut Rewrites<'_>,
        p: &PageResult,
    ) -> simcrawl_dedup::Result<u64> {
        let io = state::caller_err;
        let Some(key) = p.url_key else {
            return Ok(0);
        };
        let Some(old) = sched.get(key)? else {
            // Not remembered (an older crawl state): judged as a new page.
            return self.judge_page(deduper, tables, fr, sched, rewrites, p);
        };
        let cfg = deduper.config();
        let (old_fp, old_sketch) = match old.doc.map(|id| tables.doc(id)).transpose()?.flatten() {
            Some(doc) => (Some(doc.fingerprint.low()), Some(doc.sketch)),
            None => (old.fingerprint, old.sketch()),
        };
        let (change, distance) = classify(old_fp, old_sketch, &p.sig, cfg.min_similarity);
        let rejudge =
            change == Change::Changed || old.rejudge || p.entry.revisit.as_ref().is_some_and(|r| r.rejudge);
        let interval = self.revisit.next_interval(old.interval_s, change.changed());
        let mut rec = old.clone();
        let mut added = 0;
        let mut line_verdict = None;
        if rejudge {
            // Its old text leaves the index first: never kept twice.
            if let Some(id) = old.doc {
                deduper.forget_in(tables, id)?;
                added += self.rejudge_copies(fr, sched, key)?;
            }
            let verdict = if p.noindex || p.filtered_lang {
                None
            } else {
                Some(deduper.check_in(tables, &p.sig, UrlTier::Skip)?)
            };
            self.recorder().judged(p, verdict.as_ref()).map_err(io)?;
            self.set_judged(deduper, &mut rec, p, verdict.as_ref(), interval);
            line_verdict = verdict;
        } else {
            // Similar or the same: the text judged before stays what the
            // page is measured against.
            rec.since = p.validators.clone();
            rec.fetched_at = p.fetched_at;
            rec.interval_s = interval;
            rec.next_ms = crate::frontier::now_ms().saturating_add(interval.saturating_mul(1000));
        }
        sched.put(key, &rec)?;
        let (verdict, of) = match &line_verdict {
            Some(Verdict::Duplicate(d)) if d.of != p.entry.url.as_str() => {
                (Some("duplicate"), Some(d.of.as_str()))
            }
            Some(_) => (Some("kept"), None),
            None if rejudge => (Some("noindex"), None),
            None => (None, None),
        };
        self.recorder()
            .change(&crate::output::lines::ChangeLine {
                url: p.entry.url.as_str(),
                status: change,
                distance,
                verdict,
                of,
            })
            .map_err(io)?;
        added += self.enqueue_links(deduper, tables, fr, rewrites, p)?;
        Ok(added)
    }

    /// What a sitemap or feed gave: its pages into the frontier through
    /// the URL tier (a known page whose `lastmod` is after its last fetch
    /// is due for a revisit now), its sitemaps as listings; returns how
    /// many entries were added.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn listed(
        &mut self,
        deduper: &Tiers,
        tables: &mut dyn simcrawl_dedup::Tables,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        sched: &mut Schedule<'_>,
        (entry, kind): (&crate::frontier::Entry, crate::listing::Kind),
        pages: &[(Candidate, crate::listing::Hints)],
        listings: &[Candidate],
    ) -> simcrawl_dedup::Result<u64> {
        self.cp.stats.listings += 1;
        let mut added = 0;
        if entry.depth < self.max_depth {
            for (c, hints) in pages {
                let key = url_key(deduper.canonicalizer(), c.url());
                if let Some(key) = key {
                    sched.put_sitemap_hints(key, c.url().as_str(), hints)?;
                }
                let via = Some(entry.url.as_str());
                if frontier::enqueue(
                    deduper,
                    tables,
                    fr,
                    &mut self.cp.next_seq,
                    c,
                    (entry.depth + 1, via),
                )? {
                    added += 1;
                    if let Some(s) = hints.every_secs()
                        && let Some(key) = key
                    {
                        sched.hint(key, s)?;
                    }
                    continue;
                }
                if let Some(lm) = hints.lastmod
                    && let Some(key) = key
                    && let Some(mut rec) = sched.get(key)?
                    && lm > rec.fetched_at
                {
                    let now = crate::frontier::now_ms();
                    if rec.next_ms > now {
                        rec.next_ms = now;
                        sched.put(key, &rec)?;
                    }
                }
            }
        }
        self.offered.extend(listings.iter().map(|c| {
            (
                c.clone(),
                entry.depth,
                entry.nest.saturating_add(1),
                entry.url.to_string(),
            )
        }));
        self.cp.stats.listed += added;
        // Read again on its own interval (`crawl revisit`, `--forever`):
        // shorter while it gives new URLs, longer while it does not.
        if let Some(key) = url_key(deduper.canonicalizer(), &entry.url) {
            let old = sched.get(key)?;
            let interval = match &old {
                Some(o) => self.revisit.next_interval(o.interval_s, added > 0),
                None => self.revisit.default_interval_s,
            };
            let rec = PageRecord {
                url: entry.url.to_string(),
                depth: entry.depth,
                fetched_at: crate::frontier::now_ms() / 1000,
                interval_s: interval,
                next_ms: crate::frontier::now_ms().saturating_add(interval.saturating_mul(1000)),
                listing: true,
                listing_kind: Some(kind.as_str().to_string()),
                nest: entry.nest,
                ..PageRecord::default()
            };
            sched.put(key, &rec)?;
        }
        Ok(added)
    }

    /// A revisit answered 304: the page is as it was; its interval grows.
    pub(super) fn not_modified(
        &mut self,
        deduper: &Tiers,
        sched: &mut Schedule<'_>,
        entry: &crate::frontier::Entry,
        validators: &simcrawl_fetch::Validators,
    ) -> simcrawl_dedup::Result<()> {
        let Some(key) = url_key(deduper.canonicalizer(), &entry.url) else {
            return Ok(());
        };
        if let Some(mut rec) = sched.get(key)? {
            // A 304 may carry fresh validators; else the old ones stand.
            if !validators.is_empty() {
                rec.since = validators.clone();
            }
            rec.interval_s = self.revisit.next_interval(rec.interval_s, false);
            rec.next_ms = crate::frontier::now_ms().saturating_add(rec.interval_s.saturating_mul(1000));
            sched.put(key, &rec)?;
        }
        self.recorder()
            .change(&crate::output::lines::ChangeLine {
                url: entry.url.as_str(),
                status: Change::NotModified,
                distance: None,
                verdict: None,
                of: None,
            })
            .map_err(state::caller_err)
    }

    /// A revisit answered 404 or 410: the page leaves the index and the
    /// schedule, and the pages that copied it are judged again.
    pub(super) fn gone(
        &mut self,
        deduper: &Tiers,
        tables: &mut dyn simcrawl_dedup::Tables,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        sched: &mut Schedule<'_>,
        entry: &crate::frontier::Entry,
    ) -> simcrawl_dedup::Result<u64> {
        let mut added = 0;
        if let Some(key) = url_key(deduper.canonicalizer(), &entry.url) {
            if let Some(old) = sched.get(key)?
                && let Some(id) = old.doc
            {
                deduper.forget_in(tables, id)?;
                added += self.rejudge_copies(fr, sched, key)?;
            }
            sched.remove(key)?;
        }
        self.recorder()
            .change(&crate::output::lines::ChangeLine {
                url: entry.url.as_str(),
                status: Change::Gone,
                distance: None,
                verdict: None,
                of: None,
            })
            .map_err(state::caller_err)?;
        Ok(added)
    }

    /// The copies of the page `key` (which changed or is gone) go back to
    /// the frontier to be judged again: one of them may now be the page to
    /// keep. Returns how many.
    fn rejudge_copies(
        &mut self,
        fr: &mut redb::Table<'_, u64, &'static [u8]>,
        sched: &mut Schedule<'_>,
        key: u128,
    ) -> simcrawl_dedup::Result<u64> {
        let copies = sched.copies_of(key)?;
        for (ckey, rec) in &copies {
            // Out of the schedule until its revisit puts it back, and
            // owed a judgement until one is made (whatever that visit
            // answers).
            sched.hold(*ckey)?;
            let mut owed = rec.clone();
            owed.rejudge = true;
            sched.put_held(*ckey, &owed)?;
            let Ok(url) = url::Url::parse(&rec.url) else {
                continue;
            };
            let again = crate::frontier::Revisit {
                rejudge: true,
                since: simcrawl_fetch::Validators::default(),
            };
            frontier::enqueue_revisit(fr, &mut self.cp.next_seq, &url, rec.depth, again)?;
            self.cp.stats.rejudged += 1;
        }
        Ok(copies.len() as u64)
    }
}
