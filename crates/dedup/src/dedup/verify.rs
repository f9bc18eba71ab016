//! Verification: a candidate of any tier decides only when the sketches
//! show enough resemblance.

use super::{Duplicate, Signature, Tier};
use crate::article::{ARTICLE_MIN_SIMILARITY, Article, PageScripts, other_site, site};
use crate::extent::PAGE_MIN_SIMILARITY;
use crate::fingerprint::Fingerprint;
use crate::sketch::Sketch;
use crate::store::{DocId, DocRecord};

/// What a content lookup compares: the text a document is judged on, or
/// its article across sites ([`Signature::article`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Against {
    Text,
    Article,
}

impl Signature {
    /// Whether `m` is similar enough to decide for this signature, beyond
    /// the tier's own threshold (checked by the caller).
    pub(super) fn admits(&self, m: &Match, against: Against) -> bool {
        let article = m.rec.article;
        match against {
            // Only another site's article matches an article alone.
            Against::Text if article.is_some_and(|a| a.only) => match (&self.article, article) {
                (Article::Text(mine), Some(theirs)) => self.same_story(m, *mine, theirs.scripts),
                _ => false,
            },
            Against::Text => self.admits_text(m),
            Against::Article => match (self.article.scripts(), article) {
                (Some(mine), Some(theirs)) => self.same_story(m, mine, theirs.scripts),
                _ => false,
            },
        }
    }

    /// One article on two sites, in the same scripts, near-duplicate.
    fn same_story(&self, m: &Match, mine: PageScripts, theirs: PageScripts) -> bool {
        m.similarity >= ARTICLE_MIN_SIMILARITY && other_site(&self.url, &m.rec.url) && !mine.apart(theirs)
    }

    fn admits_text(&self, m: &Match) -> bool {
        if self.shows_more_than(m) {
            return false;
        }
        match self.min_similarity {
            None => true,
            Some(min) if min >= 1.0 => self.sketch.as_ref().is_some_and(|s| s.same_text(&m.rec.sketch)),
            Some(min) => m.similarity >= min,
        }
    }
}

impl Signature {
    /// Whether this page and `m`'s, pages of one host, differ too much in
    /// size for either to be the other's copy, however alike the texts they
    /// are judged on ([`crate::extent`]). API references asked for it
    /// (doxygen's member and function lists, one inside the other).
    fn shows_more_than(&self, m: &Match) -> bool {
        let (Some(mine), Some(theirs)) = (self.extent, m.rec.extent) else {
            return false;
        };
        mine.resemblance_at_most(theirs) < PAGE_MIN_SIMILARITY
            && site(&self.url).eq_ignore_ascii_case(site(&m.rec.url))
    }
}

/// A stored document compared with the one being checked.
pub(super) struct Match {
    /// The id the record was read under: the partner's id in a verdict.
    pub(super) id: DocId,
    pub(super) rec: DocRecord,
    /// Estimated resemblance (0 when the checked document has no sketch).
    pub(super) similarity: f64,
    /// SimHash distance (`u32::MAX` when it has no fingerprint).
    pub(super) distance: u32,
}

impl Match {
    pub(super) fn new(id: DocId, fp: Option<Fingerprint>, sketch: Option<&Sketch>, rec: DocRecord) -> Match {
        Match {
            id,
            similarity: sketch.map_or(0.0, |s| s.resemblance(&rec.sketch)),
            distance: fp.map_or(u32::MAX, |f| f.distance(rec.fingerprint)),
            rec,
        }
    }

    /// More similar first, then nearer by SimHash.
    pub(super) fn better_than(&self, other: &Match) -> bool {
        (self.similarity, std::cmp::Reverse(self.distance))
            > (other.similarity, std::cmp::Reverse(other.distance))
    }

    /// The verdict of a content-tier match for a page of fingerprint `fp`.
    pub(super) fn into_content_duplicate(self, fp: Fingerprint) -> Duplicate {
        Duplicate {
            tier: Tier::Content,
            of_id: Some(self.id),
            of: self.rec.url,
            distance: Some(self.distance),
            similarity: Some(self.similarity),
            fingerprint: Some(fp),
            url_skipped: false,
            article: self.rec.article.is_some_and(|a| a.only),
        }
    }
}
