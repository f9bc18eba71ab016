//! The URL tier: a canonical URL seen within the window is a duplicate.
//!
//! A URL is recorded two ways. [`Deduper::check_url`] (the frontier, before
//! fetching) records it with no document: the record's URL ends in
//! [`PENDING`]. A check with the URL tier ([`Deduper::check`],
//! [`UrlTier::Check`]) that meets such a record takes the page as that
//! URL's own first document (not a copy of itself) and clears the mark; a
//! record without the mark (a document was checked under the URL) makes
//! the page a URL duplicate. The mark lives in the URL text, so every
//! store keeps it without a change of format; it never leaves this module
//! ([`UrlVerdict::Seen::first`] is the URL as given).

use super::verify::{Against, Match};
use super::{Deduper, Duplicate, Signature, Tier};
use crate::article::SiteRelation;
use crate::canonical::{CanonicalUrl, UrlError};
use crate::error::Result;
use crate::store::{ReadTables, Store, Tables, UrlRecord};

/// Whether a check applies the URL tier too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlTier {
    /// Look the canonical URL up (and record it): the batch tool, or any
    /// caller that checks whole documents.
    Check,
    /// Title and content tiers only: for crawlers whose frontier already
    /// applied the URL tier with [`Deduper::check_url`].
    Skip,
}

/// What the URL tier says about a URL.
///
/// With the `serde` feature it serializes as `{"verdict": "new",
/// "canonical": ...}` or `{"verdict": "seen", "canonical": ..., "first":
/// ...}`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlVerdict {
    /// Never seen: now recorded.
    New(CanonicalUrl),
    /// Seen before, first as `first`.
    Seen {
        /// The canonical form.
        canonical: CanonicalUrl,
        /// The URL as first recorded.
        first: String,
    },
}

impl UrlVerdict {
    /// Whether the URL was seen before (do not fetch it).
    pub fn is_seen(&self) -> bool {
        matches!(self, UrlVerdict::Seen { .. })
    }

    /// The canonical form.
    pub fn canonical(&self) -> &CanonicalUrl {
        match self {
            UrlVerdict::New(c) | UrlVerdict::Seen { canonical: c, .. } => c,
        }
    }
}

/// Ends the URL of a record that [`Deduper::check_url`] wrote: no document
/// was checked under it yet. A URL as given never ends in it (trailing
/// control characters are not part of a URL and are dropped).
const PENDING: char = '\0';

/// The URL a record holds, without the [`PENDING`] mark, and whether it had
/// it.
fn unmark(url: String) -> (String, bool) {
    match url.strip_suffix(PENDING) {
        Some(u) => (u.to_string(), true),
        None => (url, false),
    }
}

/// A URL as given, without trailing NULs (which would read as the mark).
fn as_given(url: &str) -> &str {
    url.trim_end_matches(PENDING)
}

impl<S: Store> Deduper<S> {
    /// Whether the URL tier has seen `url` (in any spelling with the same
    /// canonical form) within the window: recorded by
    /// [`Deduper::check_url`] or by a check with the URL tier. Read-only:
    /// nothing is recorded, so a link filter can ask about every link of a
    /// page and a later [`Deduper::check`] of the URL is still its first. A
    /// read on a snapshot: it never waits for writers on redb.
    ///
    /// A URL that cannot be keyed (relative, not http(s), no host) is an
    /// [`Error::Url`](crate::Error::Url): resolve links against their page
    /// first.
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, Document};
    /// let d = Deduper::in_memory()?;
    /// assert!(!d.url_seen("http://a.example/x?b=2&a=1")?);
    /// d.check_url("http://a.example/x?b=2&a=1")?;
    /// assert!(d.url_seen("HTTP://A.example:80/x?a=1&b=2#top")?);
    /// assert!(d.url_seen("/x").is_err(), "relative: resolve it first");
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn url_seen(&self, url: &str) -> Result<bool> {
        let seen = self.urls_first_seen(&[self.canon.parse(url)?])?;
        Ok(seen.first().is_some_and(Option::is_some))
    }

    /// When the URL tier first saw each of `canonicals`, read on one
    /// snapshot without recording anything: `None` for a URL it has not
    /// seen within the window. For a crawler whose page tasks run beside a
    /// single writer: they ask about a page's links in parallel, and the
    /// writer skips the links already known instead of looking each up
    /// again in its transaction. A URL is only ever removed from the tier
    /// when it leaves the window (a purge), so an answer stays true for as
    /// long as [`Deduper::still_in_window`] says so of its time. A link
    /// recorded after the snapshot reads as `None`: the writer's own check
    /// then finds it.
    ///
    /// `canonicals` must come from [`Deduper::canonicalizer`] (or an equal
    /// one); a form made under another tracking list is refused with
    /// [`UrlError::OtherSettings`].
    ///
    /// ```
    /// use simcrawl_dedup::{CanonicalUrl, Deduper};
    /// let d = Deduper::in_memory()?;
    /// d.check_url("http://a.example/seen")?;
    /// let links = [
    ///     d.canonicalizer().parse("http://a.example/seen#top")?,
    ///     d.canonicalizer().parse("http://a.example/new")?,
    /// ];
    /// let seen = d.urls_first_seen(&links)?;
    /// assert!(seen[0].is_some_and(|t| d.still_in_window(t)));
    /// assert_eq!(seen[1], None);
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn urls_first_seen(&self, canonicals: &[CanonicalUrl]) -> Result<Vec<Option<u64>>> {
        if let Some(c) = canonicals.iter().find(|c| !c.made_by(&self.canon)) {
            return Err(UrlError::OtherSettings {
                url: c.as_str().to_string(),
            }
            .into());
        }
        let digests: Vec<u128> = canonicals
            .iter()
            .map(|c| u128::from_be_bytes(c.digest()))
            .collect();
        let cutoff = self.cutoff();
        self.store.read(|t| {
            t.prefetch(&crate::store::Prefetch {
                urls: digests.clone(),
                ..Default::default()
            })?;
            digests
                .iter()
                .map(|&d| Ok(t.url(d)?.map(|rec| rec.first_seen).filter(|&at| at >= cutoff)))
                .collect()
        })
    }

    /// Whether a URL first seen at `first_seen` (a time from
    /// [`Deduper::urls_first_seen`]) is still within the window now, so
    /// still in the URL tier: always with no window (`dedup.window`).
    ///
    /// ```
    /// use simcrawl_dedup::Deduper;
    /// let d = Deduper::in_memory()?;
    /// assert!(d.still_in_window(0), "no window: a URL is known for good");
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn still_in_window(&self, first_seen: u64) -> bool {
        first_seen >= self.cutoff()
    }

    /// The URL tier: records the canonical URL and says whether it was seen.
    ///
    /// Recorded without a document, so the fetch-then-check flow works: a
    /// later [`Deduper::check`] of the same URL (the fetched page) is not a
    /// URL duplicate of itself; the check after that is. Use
    /// [`Deduper::url_seen`] to ask without recording.
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, Document, Tier, UrlVerdict};
    /// let d = Deduper::in_memory()?;
    /// let url = "http://news.example/a?id=1";
    /// assert!(matches!(d.check_url(url)?, UrlVerdict::New(_))); // fetch it
    /// let text = "国家统计局今天发布数据显示，十月份全国规模以上工业增加值同比增长百分之五点三。";
    /// assert!(!d.check(&Document::new(url, "工业", text))?.is_duplicate());
    /// // The same URL checked again is a URL duplicate.
    /// assert_eq!(d.check(&Document::new(url, "", "另一段文字"))?.tier(), Some(Tier::Url));
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn check_url(&self, url: &str) -> Result<UrlVerdict> {
        let canonical = self.canon.parse(url)?;
        self.write(|t| self.check_url_in(t, url, canonical.clone()))
    }

    /// [`Deduper::check_url`] inside a caller's transaction (see
    /// [`crate::RedbStore::write_with`]), for crawlers that commit their
    /// frontier together with the URL tier. `canonical` must come from
    /// [`Deduper::canonicalizer`] (or an equal one): a form made under
    /// another tracking list is refused with [`UrlError::OtherSettings`],
    /// as its key is not the one this store uses for the URL.
    pub fn check_url_in(&self, t: &mut dyn Tables, url: &str, canonical: CanonicalUrl) -> Result<UrlVerdict> {
        if !canonical.made_by(&self.canon) {
            return Err(UrlError::OtherSettings {
                url: canonical.as_str().to_string(),
            }
            .into());
        }
        let digest = u128::from_be_bytes(canonical.digest());
        let cutoff = self.cutoff();
        match t.url(digest)? {
            Some(rec) if rec.first_seen >= cutoff => Ok(UrlVerdict::Seen {
                canonical,
                first: unmark(rec.url).0,
            }),
            _ => {
                t.put_url(
                    digest,
                    &UrlRecord {
                        first_seen: (self.clock)(),
                        url: format!("{}{PENDING}", as_given(url)),
                    },
                )?;
                Ok(UrlVerdict::New(canonical))
            }
        }
    }

    /// `m`'s relation, for a match that compares articles
    /// ([`Match::compares_articles`]: the only verdicts it changes), with
    /// what the URL tier knows: two hosts are one site in two places
    /// ([`SiteRelation::Mirrors`]) when either serves the other's page's
    /// path (a URL this store saw within the window, fetched or only
    /// linked); `url` is the checked page's. Man pages in four languages on
    /// four hosts asked for it: a Polish ISO 8859-15 table page, its prose
    /// translated, was dropped for the English ISO 8859-1 page by the table
    /// they share (0.84 alike; 0.49 as shown), while the English 8859-15
    /// page had been seen at its own path (docs/EVAL.md, "Issue 35, twelfth
    /// round").
    pub(super) fn place(&self, t: &dyn ReadTables, url: &str, m: &mut Match, against: Against) -> Result<()> {
        if m.relation != SiteRelation::OtherSites || !m.compares_articles(against) {
            return Ok(());
        }
        let cutoff = self.cutoff();
        for crossed in crate::article::crossed_urls(url, &m.rec.url)
            .into_iter()
            .flatten()
        {
            let Ok(canonical) = self.canon.parse(&crossed) else {
                continue;
            };
            if t.url(u128::from_be_bytes(canonical.digest()))?
                .is_some_and(|rec| rec.first_seen >= cutoff)
            {
                m.relation = SiteRelation::Mirrors;
                break;
            }
        }
        Ok(())
    }

    /// The URL tier inside [`Deduper::check_in`]: the kept document when a
    /// document was checked under the signed URL within the window; else
    /// records it (a record [`Deduper::check_url`] made is this page's own:
    /// its mark is cleared).
    pub(super) fn url_match(
        &self,
        t: &mut dyn Tables,
        sig: &Signature,
        now: u64,
        cutoff: u64,
    ) -> Result<Option<Duplicate>> {
        let Some(d) = sig.url_digest else {
            return Ok(None);
        };
        match t.url(d)? {
            Some(rec) if rec.first_seen >= cutoff => match unmark(rec.url) {
                (first, true) => {
                    t.put_url(
                        d,
                        &UrlRecord {
                            first_seen: rec.first_seen,
                            url: first,
                        },
                    )?;
                    Ok(None)
                }
                (first, false) => Ok(Some(Duplicate {
                    tier: Tier::Url,
                    of: first,
                    of_id: None,
                    distance: None,
                    similarity: None,
                    fingerprint: sig.fingerprint,
                    url_skipped: false,
                    article: false,
                })),
            },
            _ => {
                t.put_url(
                    d,
                    &UrlRecord {
                        first_seen: now,
                        url: as_given(&sig.url).to_string(),
                    },
                )?;
                Ok(None)
            }
        }
    }
}
