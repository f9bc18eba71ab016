//! Revisits: keeping a crawl fresh without fetching everything again.
//!
//! Every page the crawl judges leaves a [`PageRecord`] in the crawl state:
//! its validators (ETag, Last-Modified), its fingerprint and resemblance
//! sketch, its verdict (the document it is in the index as, or the page it
//! copies), and when to visit it again. A revisit sends the validators back
//! (a 304 costs no parse), then tells a real change from a new date or ad
//! slot with the tiers' own measures ([`classify`]): `same` (the same
//! text), `similar` (SimHash distance within the content tier's `k` and a
//! resemblance the sketch confirms), `changed`, or `gone` (404, 410).
//!
//! A `changed` page is judged again: its old document leaves the index
//! first, so it is never kept twice; the pages that were copies of it are
//! judged again too (their original changed), so none is lost. A `gone`
//! page leaves the index, and its copies are judged again. Each revisit is
//! one line in changes.jsonl; a page judged again also gets its new line in
//! kept.jsonl or duplicates.jsonl (the last line of a URL there is its
//! verdict).
//!
//! The interval adapts as Nutch's AdaptiveFetchSchedule, with "changed"
//! decided by similarity instead of bytes: it shrinks by `dec_rate` when
//! the page changed and grows by `inc_rate` when it did not (not modified,
//! same or similar), within `[min_interval_s, max_interval_s]`. So a page
//! whose only change is a timestamp stops being fetched often.

use anyhow::Result;
use redb::TableDefinition;
use serde::{Deserialize, Serialize};
use simcrawl_dedup::{Signature, Sketch};
use simcrawl_fetch::Validators;

mod record;
mod records;
mod schedule;
pub mod side;

pub use schedule::Schedule;
pub use side::RevisitFile;

/// `[revisit]` settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RevisitSettings {
    /// A page's first interval, from its first fetch to its first revisit.
    pub default_interval_s: u64,
    /// Bounds of the adaptive interval.
    pub min_interval_s: u64,
    pub max_interval_s: u64,
    /// The interval grows by this share after a visit that found no change.
    pub inc_rate: f64,
    /// The interval shrinks by this share after a visit that found one.
    pub dec_rate: f64,
}

impl Default for RevisitSettings {
    fn default() -> Self {
        RevisitSettings {
            default_interval_s: 86_400,
            min_interval_s: 3_600,
            max_interval_s: 30 * 86_400,
            inc_rate: 0.4,
            dec_rate: 0.2,
        }
    }
}

impl RevisitSettings {
    /// The interval after a visit with an interval of `interval_s`.
    pub fn next_interval(&self, interval_s: u64, changed: bool) -> u64 {
        let f = if changed {
            1.0 - self.dec_rate
        } else {
            1.0 + self.inc_rate
        };
        let next = (interval_s.max(1) as f64 * f).round() as u64;
        next.clamp(
            self.min_interval_s.max(1),
            self.max_interval_s.max(self.min_interval_s.max(1)),
        )
    }
}

/// What the crawl remembers of a judged page, to visit it again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PageRecord {
    pub url: String,
    pub depth: u32,
    #[serde(default)]
    pub since: Validators,
    /// Unix seconds of the last fetch.
    pub fetched_at: u64,
    pub interval_s: u64,
    /// When it is due (unix milliseconds).
    pub next_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<u64>,
    /// Its sketch (`Sketch::encode_into`), hex. A kept page's fingerprint
    /// and sketch are its document's in the index (`doc`), not repeated
    /// here: about 1 KB less to write per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sketch: Option<String>,
    /// Its document in the index when it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<u64>,
    /// The kept page it copies, when it was dropped by the title or
    /// content tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dup_of: Option<String>,
    /// That page's key in the schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dup_key: Option<u128>,
    /// A sitemap or feed, read again on its own interval (shorter while it
    /// gives new URLs), not a page.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub listing: bool,
    /// What that listing is (`crate::listing::Kind::as_str`: `rss` and
    /// `atom` are feeds, for a poller that reads feeds more often).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listing_kind: Option<String>,
    /// It must be judged again at its next visit whatever its text: the
    /// page it copies changed or is gone. Kept here, not only in the
    /// queued revisit's flag, so that a visit that fails (a 403, a
    /// timeout) or never happens leaves the obligation in place; cleared
    /// only by a judgement.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rejudge: bool,
    /// That listing's `Entry::nest`, so that reading it again does not
    /// reset the bound on listings found through it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nest: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl PageRecord {
    /// The sketch it was judged with.
    pub fn sketch(&self) -> Option<Sketch> {
        let hex = self.sketch.as_deref()?;
        let bytes = data_encoding::HEXLOWER.decode(hex.as_bytes()).ok()?;
        Sketch::decode(&bytes)
    }

    /// Sets the text measures from `sig`.
    pub fn set_signature(&mut self, sig: &Signature) {
        self.fingerprint = sig.fingerprint.map(|f| f.low());
        self.sketch = sig.sketch.as_ref().map(|s| {
            let mut b = Vec::new();
            s.encode_into(&mut b);
            data_encoding::HEXLOWER.encode(&b)
        });
    }
}

/// What a revisit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    NotModified,
    Same,
    Similar,
    Changed,
    Gone,
}

impl Change {
    /// Whether it counts as a change for the interval.
    pub fn changed(self) -> bool {
        matches!(self, Change::Changed)
    }
}

/// A page's text now (`sig`) against what it was (`old`), as the content
/// tier would judge the new text against the old: `similar` when it would
/// drop it as a copy, that is when their resemblance reaches
/// `min_similarity` (the tier nominates candidates by SimHash distance
/// within its `k` or by the MinHash bands of the same sketch, and drops
/// only on this resemblance). Distance alone is not the test: a word added
/// to a 200-word page moves its SimHash by 4 bits, and the tier still calls
/// it a copy. Returns the change and the SimHash distance (reported).
pub fn classify(
    old_fingerprint: Option<u64>,
    old_sketch: Option<Sketch>,
    sig: &Signature,
    min_similarity: f64,
) -> (Change, Option<u32>) {
    let distance = match (old_fingerprint, sig.fingerprint) {
        // The low 64 bits: all of a 64-bit fingerprint, and what a page
        // state remembers of a 128-bit one.
        (Some(a), Some(b)) => Some((a ^ b.low()).count_ones()),
        _ => None,
    };
    let change = match (old_sketch, sig.sketch.as_ref()) {
        (Some(a), Some(b)) if a.same_text(b) => Change::Same,
        (None, None) => Change::Same,
        (Some(a), Some(b)) if a.resemblance(b) >= min_similarity => Change::Similar,
        _ => Change::Changed,
    };
    (change, distance)
}

/// canonical URL digest -> [`PageRecord`] (`record`: postcard; JSON from
/// earlier versions).
const PAGES: TableDefinition<u128, &[u8]> = TableDefinition::new("revisit_pages");
/// (due unix ms, canonical URL digest): the schedule, in due order.
const DUE: TableDefinition<(u64, u128), ()> = TableDefinition::new("revisit_due");
/// canonical URL digest -> a first revisit interval (seconds) a sitemap's
/// `changefreq` gave a page not crawled yet; taken when it is judged.
const HINTS: TableDefinition<u128, u64> = TableDefinition::new("revisit_hints");
/// canonical URL digest -> what the last sitemap listing the page said of
/// it ([`crate::listing::Hints::stored`]: JSON with `url`, `lastmod`,
/// `changefreq`, `priority`), for every listed page with at least one
/// hint, crawled or not; replaced when a sitemap says it again, never
/// taken. The revisit schedule's own use is narrower (`revisit_hints`,
/// and `lastmod` moving a known page's visit earlier); this table keeps
/// all three for a scheduler that wants more (the shared mode keeps the
/// same JSON in the `{NS}:f:hints` hash).
const SITEMAP_HINTS: TableDefinition<u128, &str> = TableDefinition::new("sitemap_hints");
/// (kept page's digest, copy's digest): the copies to judge again when the
/// page they copy changes or is gone.
const COPIES: TableDefinition<(u128, u128), ()> = TableDefinition::new("revisit_copies");

/// How many pages are due for a revisit at `now_ms`, and when the first
/// one not yet due is (unix ms), read from a snapshot (`crawl status`).
pub fn due_summary(
    db: &impl redb::ReadableDatabase,
    now_ms: u64,
) -> Result<(u64, Option<u64>), simcrawl_dedup::Error> {
    let txn = db.begin_read()?;
    let due = match txn.open_table(DUE) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok((0, None)),
        Err(e) => return Err(e.into()),
    };
    let mut n = 0u64;
    for item in due.range((0, 0)..=(now_ms, u128::MAX))? {
        item?;
        n += 1;
    }
    let next = match due.range((now_ms.saturating_add(1), 0)..)?.next() {
        Some(item) => Some(item?.0.value().0),
        None => None,
    };
    Ok((n, next))
}

/// The schedule's key of a URL: its canonical form's digest (the URL
/// tier's key).
pub fn url_key(canon: &simcrawl_dedup::Canonicalizer, url: &url::Url) -> Option<u128> {
    canon
        .from_url(url.clone())
        .ok()
        .map(|c| u128::from_be_bytes(c.digest()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use redb::ReadableTable;
    use simcrawl_dedup::{DedupConfig, Deduper, Document, MemoryStore};

    fn sign(text: &str) -> Signature {
        let d = Deduper::new(MemoryStore::new(), DedupConfig::default()).unwrap();
        d.sign(&Document::new("http://e.org/a", "t", text))
    }

    fn record(sig: &Signature) -> PageRecord {
        let mut r = PageRecord::default();
        r.set_signature(sig);
        r
    }

    #[test]
    fn a_new_date_is_similar_and_a_rewrite_is_changed() {
        let body = crate::bench::page(7, 100);
        let old = record(&sign(&body));
        assert_eq!(
            old.sketch().map(|s| s.text_digest()),
            sign(&body).sketch.map(|s| s.text_digest())
        );
        let was = || (old.fingerprint, old.sketch());
        let (fp, sk) = was();
        assert_eq!(classify(fp, sk, &sign(&body), 0.75).0, Change::Same);
        let dated = format!("{body} 2026-11-25 12:00");
        let (fp, sk) = was();
        assert_eq!(classify(fp, sk, &sign(&dated), 0.75).0, Change::Similar);
        let other = crate::bench::page(8, 100);
        let (fp, sk) = was();
        let (c, d) = classify(fp, sk, &sign(&other), 0.75);
        assert_eq!(c, Change::Changed);
        assert!(d.unwrap() > 3);
    }

    #[test]
    fn the_interval_adapts_within_its_bounds() {
        let s = RevisitSettings {
            min_interval_s: 100,
            max_interval_s: 1000,
            ..RevisitSettings::default()
        };
        assert_eq!(s.next_interval(500, false), 700);
        assert_eq!(s.next_interval(500, true), 400);
        assert_eq!(s.next_interval(900, false), 1000);
        assert_eq!(s.next_interval(110, true), 100);
    }

    #[test]
    fn due_pages_come_in_order_and_copies_follow_their_original() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("s.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut s = Schedule::open(&txn, None).unwrap();
            let canon = simcrawl_dedup::Canonicalizer::default();
            let key = |u: &str| url_key(&canon, &url::Url::parse(u).unwrap()).unwrap();
            let (a, b) = (key("http://e.org/a"), key("http://e.org/b"));
            assert_eq!(key("HTTP://E.org/a#x"), a);
            let rec = |url: &str, next_ms, dup_key: Option<u128>| PageRecord {
                url: url.into(),
                next_ms,
                dup_key,
                ..PageRecord::default()
            };
            s.put(a, &rec("http://e.org/a", 50, None)).unwrap();
            s.put(b, &rec("http://e.org/b", 10, Some(a))).unwrap();
            assert_eq!(s.next_due().unwrap(), Some(10));
            assert_eq!(s.copies_of(a).unwrap().len(), 1);
            let due: Vec<String> = s
                .take_due(20, false, 10)
                .unwrap()
                .into_iter()
                .map(|r| r.url)
                .collect();
            assert_eq!(due, ["http://e.org/b"]);
            let all: Vec<String> = s
                .take_due(20, true, 10)
                .unwrap()
                .into_iter()
                .map(|r| r.url)
                .collect();
            assert_eq!(all, ["http://e.org/a"]);
            // Put back, b is no longer a copy of a.
            s.put(b, &rec("http://e.org/b", 99, None)).unwrap();
            assert!(s.copies_of(a).unwrap().is_empty());
            s.remove(b).unwrap();
            assert_eq!(s.get(b).unwrap(), None);
        }
        txn.commit().unwrap();
    }

    /// A crawl state written by an earlier version keeps its records as
    /// JSON: they are read, their due time and copy relation are taken
    /// out when the page is put again, and the page's record is then the
    /// compact one.
    #[test]
    fn records_an_earlier_version_stored_as_json_are_read_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("s.redb")).unwrap();
        let old = PageRecord {
            url: "http://e.org/b".into(),
            next_ms: 10,
            dup_key: Some(1),
            ..PageRecord::default()
        };
        let txn = db.begin_write().unwrap();
        {
            let mut pages = txn.open_table(PAGES).unwrap();
            pages
                .insert(2, serde_json::to_vec(&old).unwrap().as_slice())
                .unwrap();
            txn.open_table(DUE).unwrap().insert((10, 2), ()).unwrap();
            txn.open_table(COPIES).unwrap().insert((1, 2), ()).unwrap();
        }
        {
            let mut s = Schedule::open(&txn, None).unwrap();
            assert_eq!(s.get(2).unwrap(), Some(old.clone()));
            assert_eq!(s.copies_of(1).unwrap(), [(2, old.clone())]);
            let new = PageRecord {
                next_ms: 99,
                dup_key: None,
                ..old
            };
            s.put(2, &new).unwrap();
            assert_eq!(s.get(2).unwrap(), Some(new));
            assert!(s.copies_of(1).unwrap().is_empty());
            assert_eq!(s.next_due().unwrap(), Some(99));
        }
        let pages = txn.open_table(PAGES).unwrap();
        let stored = pages.get(2).unwrap().unwrap().value().to_vec();
        assert_ne!(stored.first(), Some(&b'{'));
        drop(pages);
        txn.commit().unwrap();
    }

    /// A sitemap's hints are kept per page, replaced by the next sitemap's
    /// word, read back as stored; a page with no hints has no row.
    #[test]
    fn sitemap_hints_are_kept_per_page() {
        use crate::listing::Hints;
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("s.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut s = Schedule::open(&txn, None).unwrap();
            let h = Hints {
                lastmod: Some(1_795_478_400),
                changefreq: Some("daily".into()),
                priority: Some(0.8),
            };
            s.put_sitemap_hints(1, "https://e.org/a", &h).unwrap();
            assert_eq!(
                s.sitemap_hints(1).unwrap(),
                Some(("https://e.org/a".to_string(), h))
            );
            let later = Hints {
                priority: Some(0.1),
                ..Hints::default()
            };
            s.put_sitemap_hints(1, "https://e.org/a", &later).unwrap();
            assert_eq!(s.sitemap_hints(1).unwrap().unwrap().1, later);
            s.put_sitemap_hints(2, "https://e.org/b", &Hints::default())
                .unwrap();
            assert_eq!(s.sitemap_hints(2).unwrap(), None);
        }
        txn.commit().unwrap();
    }
}
