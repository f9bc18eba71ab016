//! The title tier: same-title documents are candidates (see
//! [`TitlePolicy`]), keyed by the MD5 of the normalized title.

use super::verify::Match;
use super::{Deduper, Duplicate, Signature, Tier};
use crate::digest::md5_of;
use crate::error::Result;
use crate::store::{EarlyHits, ReadTables, Store};

/// Same-title documents the title tier compares with, newest first. Sites
/// have thousands of pages titled "Index" or "插入": comparing with all of
/// them would make every such check slower than the last, and a copy is
/// almost always of a recent page.
pub const TITLE_CANDIDATES: usize = 64;

/// A title that this many kept pages of the checked page's host already
/// carry is its host's template (a generator's "Namespace Members", "Source
/// code", "Index"), not the page's identity: it no longer lowers the
/// resemblance a copy must show to the title tier's `title_min_similarity`;
/// the content tier's `min_similarity` holds. Sibling reference pages
/// sharing one generated title were dropped as copies of each other at
/// 0.70-0.75 (issue 35, docs/eval-apiref.md); a title two pages of a host
/// share (a page and its edited copy) still lowers it. A front page's
/// title (`/`, `/index.html`) is its site's name or slogan ("Latest
/// stories", "Home"), carried by every such site's front page, and does
/// not lower it either: two news sites' front pages with that title and
/// the same teaser links were dropped one for the other at 0.71 while 0.3
/// alike as shown (issue 35).
pub const TEMPLATE_TITLE_PAGES: usize = 2;

/// The host part of a URL as written (`scheme://host:port`), compared
/// without parsing: what tells a host's own titles from another site's.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

/// What a title match means.
///
/// Many distinct pages share a title ("Index", "Options", "插入"), so a title
/// alone is weak evidence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TitlePolicy {
    /// A same-title page is a candidate, and a duplicate only when the
    /// resemblance of the two texts is at least `title_min_similarity`:
    /// catches copies edited more than the content tier finds, without ever
    /// dropping a different page that shares a title.
    #[default]
    Confirm,
    /// The seeds' behaviour: the same normalized title is enough. Risky: on
    /// real sites it discards distinct pages that share a title.
    Strict,
    /// No title tier.
    Off,
}

impl<S: Store> Deduper<S> {
    pub(super) fn title_match(
        &self,
        t: &dyn ReadTables,
        sig: &Signature,
        cutoff: u64,
        early: Option<&EarlyHits>,
    ) -> Result<Option<Duplicate>> {
        let Some(td) = sig.title_digest else {
            return Ok(None);
        };
        if self.config.title_policy == TitlePolicy::Off {
            return Ok(None);
        }
        let mut ids = Vec::new();
        let caught_up = match early {
            Some(early) => t.title_docs_since(early, td, TITLE_CANDIDATES, &mut ids)?,
            None => false,
        };
        if !caught_up {
            t.title_docs(td, TITLE_CANDIDATES, &mut ids)?;
        }
        let mut best: Option<Match> = None;
        let host = host_of(&sig.url);
        let mut same_host = 0;
        for id in ids {
            let Some(rec) = t.doc(id)? else { continue };
            if rec.inserted_at < cutoff {
                continue;
            }
            same_host += usize::from(host_of(&rec.url).eq_ignore_ascii_case(host));
            let mut m = sig.bounded(
                Match::new((id, &sig.url), sig.fingerprint, sig.sketch.as_ref(), rec),
                super::verify::Against::Text,
            );
            self.place(t, &sig.url, &mut m, super::verify::Against::Text)?;
            if !sig.admits(&m, super::verify::Against::Text) {
                continue;
            }
            if best.as_ref().is_none_or(|b| m.better_than(b))
                && self.article_refusal(t, sig, &m, cutoff)?.is_none()
            {
                best = Some(m);
            }
        }
        let Some(best) = best else {
            return Ok(None);
        };
        let is_dup = match self.config.title_policy {
            TitlePolicy::Strict => true,
            TitlePolicy::Confirm => {
                let generic =
                    same_host >= TEMPLATE_TITLE_PAGES || crate::article::is_front_page_url(&sig.url);
                let min = if generic {
                    self.config.title_min_similarity.max(self.config.min_similarity)
                } else {
                    self.config.title_min_similarity
                };
                sig.sketch.is_some() && best.similarity >= min
            }
            TitlePolicy::Off => false,
        };
        Ok(is_dup.then(|| Duplicate {
            tier: Tier::Title,
            distance: sig.fingerprint.map(|_| best.distance),
            similarity: sig.sketch.as_ref().map(|_| best.similarity),
            of: best.rec.url,
            of_id: Some(best.id),
            fingerprint: sig.fingerprint,
            url_skipped: false,
            article: false,
        }))
    }
}

/// Separators between a page title and the site name that sites append.
const TITLE_SEPARATORS: &[&str] = &[" - ", " | ", " _ ", "_", " – ", " — ", "｜", " :: "];

/// The title tier's normal form: whitespace folded, lower-cased, trimmed,
/// and a trailing site name (`标题_新浪新闻`, `Title - Site`) removed, so a
/// copy re-published under another site's name still matches. Removal only
/// happens when at least six characters remain, so short titles such as
/// `Index | Options` stay whole. Under the default `confirm` policy the
/// content must agree too, so the shorter key never drops a different page.
///
/// ```
/// use simcrawl_dedup::normalize_title;
/// assert_eq!(normalize_title("  Hello \n  World "), "hello world");
/// assert_eq!(normalize_title("长江流域遭遇罕见高温干旱 - 财经门户网"), "长江流域遭遇罕见高温干旱");
/// assert_eq!(normalize_title("国产客机完成验证飞行_新浪新闻"), "国产客机完成验证飞行");
/// assert_eq!(normalize_title("Index | Options"), "index | options");
/// ```
pub fn normalize_title(title: &str) -> String {
    let folded = title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let cut = TITLE_SEPARATORS
        .iter()
        .filter_map(|sep| folded.rfind(sep))
        .max()
        .filter(|&at| folded[..at].trim().chars().count() >= 6);
    match cut {
        Some(at) => folded[..at].trim().to_string(),
        None => folded,
    }
}

/// MD5 of the normalized title; `None` for an empty title.
pub fn title_digest(title: &str) -> Option<u128> {
    let n = normalize_title(title);
    (!n.is_empty()).then(|| u128::from_be_bytes(md5_of(&n)))
}
