//! Why a document would be kept or dropped: the candidates each tier
//! nominates for it, with their distance and resemblance, read without
//! writing anything (`crawl check URL` prints them).

use super::Deduper;
use super::title_tier::TITLE_CANDIDATES;
use super::verify::Match;
use crate::error::Result;
use crate::store::{DocId, Prefetch, Store};
use crate::{Duplicate, Signature};

/// Which index nominated a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nominated {
    /// The same normalized title.
    Title,
    /// A SimHash within the content tier's distance.
    Fingerprint,
    /// A shared band of the resemblance sketch.
    Band,
}

/// One kept document a tier nominated.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The kept document's URL.
    pub url: String,
    /// The index that nominated it (the first, when several did).
    pub nominated: Nominated,
    /// Hamming distance of the SimHashes.
    pub distance: Option<u32>,
    /// Estimated resemblance of the texts (the measure that decides).
    pub similarity: Option<f64>,
    /// How alike the two pages are by everything they show, estimated
    /// from their outlines ([`crate::Outline`]), when both carry one: the
    /// measure the rules for pages of one site read beside `similarity`
    /// (a page judged on its main text may match a sibling by that text
    /// and not as a reader sees the two).
    pub shown: Option<f64>,
    /// Why it cannot be the partner although it resembles the document
    /// enough for a tier (`None`: nothing stops it).
    pub refused: Option<super::Refusal>,
}

/// The candidates of a document, best first, and the verdict the tiers
/// would give it now.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    /// Every live candidate, the most resembling first.
    pub candidates: Vec<Candidate>,
    /// `Some`: a copy of a kept document; `None`: it would be kept.
    pub verdict: Option<Duplicate>,
}

impl<S: Store> Deduper<S> {
    /// The candidates the title and content tiers nominate for `sig` and
    /// the verdict they would give, read only: the index is not changed
    /// (a crawler explaining a verdict after the fact).
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, DedupConfig, Document, MemoryStore};
    /// let d = Deduper::new(MemoryStore::new(), DedupConfig::default())?;
    /// let text = "气象台发布寒潮蓝色预警，北方大部地区气温将下降八到十度，局地降温超过十二度并伴有大风。";
    /// d.check_content(&Document::new("http://a.example/1", "寒潮", text))?;
    /// let e = d.explain(&d.sign(&Document::new("http://b.example/2", "寒潮", text)))?;
    /// assert_eq!(e.candidates[0].url, "http://a.example/1");
    /// assert_eq!(e.verdict.map(|v| v.of).as_deref(), Some("http://a.example/1"));
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn explain(&self, sig: &Signature) -> Result<Explanation> {
        let verdict = self.lookup(sig)?;
        let cutoff = self.cutoff();
        // A candidate below both tiers' thresholds decides nothing anyway.
        let lowest = self.config.min_similarity.min(self.config.title_min_similarity);
        let keys = Prefetch {
            blocks: sig
                .fingerprint
                .map(|fp| self.layout.keys(fp.low()).collect())
                .unwrap_or_default(),
            ..Prefetch::default()
        };
        let candidates = self.store.read(|t| {
            t.prefetch(&keys)?;
            let mut ids: Vec<(DocId, Nominated)> = Vec::new();
            if let Some(td) = sig.title_digest {
                let mut out = Vec::new();
                t.title_docs(td, TITLE_CANDIDATES, &mut out)?;
                ids.extend(out.into_iter().map(|id| (id, Nominated::Title)));
            }
            if let Some(fp) = sig.fingerprint {
                ids.extend(
                    self.hits(t, fp)?
                        .into_iter()
                        .map(|(_, id)| (id, Nominated::Fingerprint)),
                );
            }
            if let Some(sketch) = &sig.sketch {
                let (band_keys, bands) = self.band_key_array(sketch);
                let mut out = Vec::new();
                t.band_docs_all(&band_keys[..bands], &mut out)?;
                ids.extend(out.into_iter().map(|id| (id, Nominated::Band)));
            }
            let mut seen = std::collections::HashSet::new();
            let mut out = Vec::new();
            for (id, nominated) in ids {
                if !seen.insert(id) {
                    continue;
                }
                let Some(rec) = t.doc(id)? else { continue };
                if rec.inserted_at < cutoff {
                    continue;
                }
                let m = Match::new((id, &sig.url), sig.fingerprint, sig.sketch.as_ref(), rec);
                let estimated = m.similarity;
                // an estimate the two sizes cannot reach counts as their bound
                let mut m = sig.bounded(m, super::verify::Against::Text);
                let bound = (m.similarity < estimated && m.similarity < self.config.min_similarity)
                    .then_some(super::Refusal::SizesApart {
                        at_most: m.similarity,
                    });
                // Only a candidate that could decide is told why it does
                // not (the article check may read the partner's article).
                let refused = if sig.sketch.is_some() && estimated >= lowest {
                    self.place(t, &sig.url, &mut m, super::verify::Against::Text)?;
                    match sig.refusal(&m).or(bound) {
                        Some(r) => Some(r),
                        None => self.article_refusal(t, sig, &m, cutoff)?,
                    }
                } else {
                    None
                };
                out.push(Candidate {
                    distance: sig.fingerprint.map(|f| f.distance(m.rec.fingerprint)),
                    similarity: sig.sketch.as_ref().map(|_| estimated),
                    shown: sig.alike_as_shown(&m),
                    url: m.rec.url,
                    nominated,
                    refused,
                });
            }
            Ok(out)
        })?;
        let mut candidates = candidates;
        candidates.sort_by(|a, b| {
            b.similarity
                .unwrap_or(0.0)
                .total_cmp(&a.similarity.unwrap_or(0.0))
                .then_with(|| a.distance.cmp(&b.distance))
        });
        Ok(Explanation { candidates, verdict })
    }
}
