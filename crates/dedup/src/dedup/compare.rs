//! What each tier would say about two documents, without a store.

use super::title_tier::TitlePolicy;
use super::{Deduper, Document};
use crate::store::Store;

/// What each tier would say about two documents, under a deduper's
/// settings: the explanation behind a verdict (`crawl distance`).
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// SimHash distance (`None` when a text has no features).
    pub distance: Option<u32>,
    /// Resemblance estimated from the sketches, as the tiers decide
    /// (`None` when a text has no letters or digits).
    pub similarity: Option<f64>,
    /// Exact resemblance of the two texts' character 5-grams.
    pub exact_similarity: f64,
    /// Same normalized title.
    pub same_title: bool,
    /// How the content tier would find the first as a candidate for the
    /// second: `exact`, `simhash`, `band` or `none`.
    pub found_by: &'static str,
    /// Whether the title tier would drop the second as a copy of the first.
    pub title_duplicate: bool,
    /// Whether the content tier would drop the second as a copy of the first.
    pub content_duplicate: bool,
}

impl<S: Store> Deduper<S> {
    /// Compares two documents as the tiers would, without touching the
    /// store.
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, DedupConfig, Document, MemoryStore};
    /// let d = Deduper::new(MemoryStore::new(), DedupConfig::default())?;
    /// let a = Document::new("http://a/1", "Index", "插入一行：在当前行的上方插入一个空行，并把光标移到新行。");
    /// let b = Document::new("http://a/2", "Index", "删除一行：删除光标所在的整行，下面的行依次上移。");
    /// let c = d.compare(&a, &b);
    /// assert!(c.same_title && !c.title_duplicate && !c.content_duplicate);
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn compare(&self, a: &Document<'_>, b: &Document<'_>) -> Comparison {
        let (sa, sb) = (self.sign(a), self.sign(b));
        let distance = match (sa.fingerprint, sb.fingerprint) {
            (Some(x), Some(y)) => Some(x.distance(y)),
            _ => None,
        };
        let similarity = match (&sa.sketch, &sb.sketch) {
            (Some(x), Some(y)) => Some(x.resemblance(y)),
            _ => None,
        };
        let same_title = sa.title_digest.is_some() && sa.title_digest == sb.title_digest;
        let found_by = match (&sa.sketch, &sb.sketch) {
            _ if distance.is_none() => "none",
            (Some(x), Some(y)) if x.same_text(y) => "exact",
            _ if distance.is_some_and(|d| d <= self.config.max_distance) => "simhash",
            (Some(x), Some(y))
                if x.band_keys(self.config.bands, self.config.band_rows)
                    .zip(y.band_keys(self.config.bands, self.config.band_rows))
                    .any(|(p, q)| p == q) =>
            {
                "band"
            }
            _ => "none",
        };
        let sim = similarity.unwrap_or(0.0);
        let title_duplicate = same_title
            && match self.config.title_policy {
                TitlePolicy::Strict => true,
                TitlePolicy::Confirm => similarity.is_some() && sim >= self.config.title_min_similarity,
                TitlePolicy::Off => false,
            };
        let content_duplicate =
            found_by == "exact" || (found_by != "none" && sim >= self.config.min_similarity);
        Comparison {
            distance,
            similarity,
            exact_similarity: crate::sketch::exact_resemblance(a.text, b.text),
            same_title,
            found_by,
            title_duplicate,
            content_duplicate,
        }
    }
}
