//! The URL tier: a canonical URL seen within the window is a duplicate.

use super::{Deduper, Duplicate, Signature, Tier};
use crate::canonical::{CanonicalUrl, UrlError};
use crate::error::Result;
use crate::store::{Store, Tables, UrlRecord};

/// Whether a check applies the URL tier too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlTier {
    /// Look the canonical URL up (and record it): the batch tool, or any
    /// caller that checks whole documents.
    Check,
    /// Title and content tiers only: for crawlers whose frontier already
    /// applied the URL tier with [`Deduper::check_url`].
    Skip,
}

/// What the URL tier says about a URL.
#[derive(Clone, Debug, PartialEq, Eq)]
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

impl<S: Store> Deduper<S> {
    /// The URL tier: records the canonical URL and says whether it was seen.
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
                first: rec.url,
            }),
            _ => {
                t.put_url(
                    digest,
                    &UrlRecord {
                        first_seen: (self.clock)(),
                        url: url.to_string(),
                    },
                )?;
                Ok(UrlVerdict::New(canonical))
            }
        }
    }

    /// The URL tier inside [`Deduper::check_in`]: the kept document when
    /// the signed URL was seen within the window; else records it.
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
            Some(rec) if rec.first_seen >= cutoff => Ok(Some(Duplicate {
                tier: Tier::Url,
                of: rec.url,
                distance: None,
                similarity: None,
                fingerprint: sig.fingerprint,
            })),
            _ => {
                t.put_url(
                    d,
                    &UrlRecord {
                        first_seen: now,
                        url: sig.url.clone(),
                    },
                )?;
                Ok(None)
            }
        }
    }
}
