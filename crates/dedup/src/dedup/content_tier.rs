//! The content tier: SimHash block-index candidates and LSH band-index
//! candidates over the sketch, verified by resemblance.

use super::verify::{Against, Match, Refusal};
use super::{Deduper, Duplicate, Signature, TitlePolicy};
use crate::article::{ARTICLE_APART, Article, PageScripts};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::sketch::{SKETCH_BINS, Sketch};
use crate::store::{ArticleMark, DocId, DocRecord, EarlyHits, Prefetch, ReadTables, Store, Tables};

/// Candidates from the band index verified per check, newest first: bounds
/// the work a page sharing many bands with a large site costs.
pub const BAND_CANDIDATES: usize = 256;

impl<S: Store> Deduper<S> {
    /// The SimHash candidates of `sig` (and the documents under its title)
    /// as a snapshot of the store holds them, for [`Deduper::check_in_with`]: looked up by the caller's own
    /// thread, in parallel with other documents, so that the one writer
    /// only adds what was committed since. `None` where the store cannot
    /// (see [`Store::near_early`]) or the document has no fingerprint.
    /// Example: [`EarlyHits`].
    pub fn early_hits(&self, sig: &Signature) -> Result<Option<EarlyHits>> {
        let Some(fp) = sig.fingerprint else {
            return Ok(None);
        };
        let keys: Vec<(usize, u64)> = self.layout.keys(fp.low()).collect();
        let title = sig
            .title_digest
            .filter(|_| self.config.title_policy != TitlePolicy::Off);
        self.store
            .near_early(&keys, fp, self.layout.max_distance(), title)
    }

    /// The LSH band keys of a sketch under this deduper's settings. An
    /// exact copy has the same sketch, so it shares every band (and its
    /// SimHash is at distance 0): it needs no index of its own.
    pub(super) fn band_keys<'s>(&self, sketch: &'s Sketch) -> impl Iterator<Item = u64> + 's {
        sketch.band_keys(self.config.bands, self.config.band_rows)
    }

    /// [`Deduper::band_keys`] in an array, and how many there are (at
    /// most [`SKETCH_BINS`] bands, checked in `new`): no allocation.
    pub(super) fn band_key_array(&self, sketch: &Sketch) -> ([u64; SKETCH_BINS], usize) {
        let mut keys = [0u64; SKETCH_BINS];
        let mut n = 0;
        for (slot, key) in keys.iter_mut().zip(self.band_keys(sketch)) {
            *slot = key;
            n += 1;
        }
        (keys, n)
    }

    /// The content tier: the most similar verified SimHash candidate
    /// (distance <= k; an exact copy is at 0 and verifies at 1); else the
    /// most similar verified band candidate. `early`: the SimHash hits a
    /// snapshot found for `fp` ([`Deduper::early_hits`]), where the store
    /// can bring them up to date.
    pub(super) fn content_match(
        &self,
        t: &dyn ReadTables,
        (fp, sketch, early): (Fingerprint, &Sketch, Option<&EarlyHits>),
        sig: &Signature,
        band_keys: &[u64],
        cutoff: u64,
        against: Against,
    ) -> Result<Option<Match>> {
        let min = self.config.min_similarity;
        // The candidate `id`, when live and verified, as `best` if better.
        let consider = |id: DocId, best: &mut Option<Match>| -> Result<()> {
            let Some(rec) = t.doc(id)?.filter(|rec| rec.inserted_at >= cutoff) else {
                return Ok(());
            };
            let mut m = sig.bounded(Match::new((id, &sig.url), Some(fp), Some(sketch), rec), against);
            if m.similarity < min {
                return Ok(());
            }
            self.place(t, &sig.url, &mut m, against)?;
            if sig.admits(&m, against)
                && best.as_ref().is_none_or(|b| m.better_than(b))
                && (against == Against::Article || self.article_refusal(t, sig, &m, cutoff)?.is_none())
            {
                *best = Some(m);
            }
            Ok(())
        };
        let mut ids = Vec::new();
        let mut best: Option<Match> = None;
        let mut checked = rustc_hash::FxHashSet::default();
        for (_, id) in self.hits_from(t, fp, early)? {
            checked.insert(id);
            consider(id, &mut best)?;
        }
        // An exact copy is at SimHash distance 0: the bands add nothing.
        let exact = against == Against::Text && sig.min_similarity.is_some_and(|m| m >= 1.0);
        if best.is_some() || self.config.bands == 0 || exact {
            return Ok(best);
        }
        // All keys looked up in one call: the store can overlap their
        // cache misses.
        t.band_docs_all(band_keys, &mut ids)?;
        // Newest first: a copy is most often of a recent page.
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids.dedup();
        for id in ids
            .into_iter()
            .filter(|id| !checked.contains(id))
            .take(BAND_CANDIDATES)
        {
            consider(id, &mut best)?;
        }
        Ok(best)
    }

    /// Why `m` cannot be the partner of a page with an article of its own
    /// beside the text it is judged on ([`Article::Separate`]), when the
    /// partner does not carry that article (`None`: it does, or the page
    /// has no such article). Read from the partner's record when it was
    /// judged on its main text, else from its article's record
    /// (`article_of`).
    ///
    /// A page judged on all it shows matches a page that shows about the
    /// same; when the two differ by the story one of them tells (what it
    /// shows and the partner lacks is at least half its article,
    /// [`crate::Extent::own_beyond`]), they are not copies. News asked for
    /// it: a host's stories, in its first pages
    /// before its template is learnt, were dropped for its front page and
    /// its teaser pages (0.9 alike as shown: the template is most of what
    /// either shows), and a copy wearing another site's template for that
    /// site's front page. Had the story existed nowhere else it would have
    /// been lost (issue 35). Two articles are apart below the labels'
    /// distinct line ([`ARTICLE_APART`]), a looser line than a copy's: an
    /// extraction that took a little more or less on one page does not
    /// set two pages of one story apart.
    pub(super) fn article_refusal(
        &self,
        t: &dyn ReadTables,
        sig: &Signature,
        m: &Match,
        cutoff: u64,
    ) -> Result<Option<Refusal>> {
        let Article::Separate {
            fingerprint: afp,
            sketch: article,
            shingles,
            ..
        } = &sig.article
        else {
            return Ok(None);
        };
        // What the page shows that the partner does not must be about its
        // story's size: a smaller difference is the two pages' extraction
        // picking different blocks of one text (a manual page rendered by
        // two generators, 0.95 alike, one of them with no article).
        let Some((mine, theirs)) = sig.extent.zip(m.rec.extent) else {
            return Ok(None);
        };
        let alike_as_shown = mine.outline_resemblance(&theirs).unwrap_or(0.0).max(m.similarity);
        if mine.own_beyond(theirs, alike_as_shown) * 2.0 < f64::from(*shingles) {
            return Ok(None);
        }
        let alike = match m.rec.article {
            // Its record holds its main text: its article.
            Some(mark) if !mark.only => Some(article.resemblance(&m.rec.sketch)),
            // An article record is compared by articles already.
            Some(_) => return Ok(None),
            None => self.article_of(t, (*afp, article), (m.id, &m.rec.url), cutoff)?,
        };
        Ok(match alike {
            Some(a) if a >= ARTICLE_APART => None,
            alike => Some(Refusal::ArticleMissing { alike }),
        })
    }

    /// How alike this article is with the article record of the page kept
    /// as `id` at `url` (`None`: that page had no article, or one too far
    /// from this to be found). A kept page's article record is written
    /// right after its own, so it is most often `id + 1` (a store shared
    /// by several processes hands out ids in blocks, and a block may end
    /// between the two); else it is looked for among this article's
    /// candidates, which find it when the two are alike enough to share a
    /// band or a SimHash block.
    fn article_of(
        &self,
        t: &dyn ReadTables,
        (fp, sketch): (Fingerprint, &Sketch),
        (id, url): (DocId, &str),
        cutoff: u64,
    ) -> Result<Option<f64>> {
        let its_article = |rec: &DocRecord| {
            rec.inserted_at >= cutoff && rec.article.is_some_and(|a| a.only) && rec.url == url
        };
        if let Some(next) = id.checked_add(1)
            && let Some(rec) = t.doc(next)?
            && its_article(&rec)
        {
            return Ok(Some(sketch.resemblance(&rec.sketch)));
        }
        let mut ids: Vec<DocId> = self.hits(t, fp)?.into_iter().map(|(_, id)| id).collect();
        let (keys, n) = self.band_key_array(sketch);
        let mut banded = Vec::new();
        t.band_docs_all(&keys[..n], &mut banded)?;
        banded.sort_unstable_by(|a, b| b.cmp(a));
        ids.extend(banded.into_iter().take(BAND_CANDIDATES));
        ids.sort_unstable();
        ids.dedup();
        let mut best: Option<f64> = None;
        for id in ids {
            if let Some(rec) = t.doc(id)?
                && its_article(&rec)
            {
                let r = sketch.resemblance(&rec.sketch);
                best = Some(best.map_or(r, |b| b.max(r)));
            }
        }
        Ok(best)
    }

    /// The content tier on the text a document is judged on, then on its
    /// article across sites ([`Signature::article`]).
    pub(super) fn content_or_article(
        &self,
        t: &dyn ReadTables,
        (fp, sketch, early): (Fingerprint, &Sketch, Option<&EarlyHits>),
        sig: &Signature,
        band_keys: &[u64],
        cutoff: u64,
    ) -> Result<Option<Duplicate>> {
        if let Some(m) = self.content_match(t, (fp, sketch, early), sig, band_keys, cutoff, Against::Text)? {
            return Ok(Some(m.into_content_duplicate(fp)));
        }
        let Article::Separate {
            fingerprint: afp,
            sketch: article,
            ..
        } = &sig.article
        else {
            return Ok(None);
        };
        let (keys, n) = self.band_key_array(article);
        Ok(self
            .content_match(
                t,
                (*afp, article.as_ref(), None),
                sig,
                &keys[..n],
                cutoff,
                Against::Article,
            )?
            .map(|m| Duplicate {
                article: true,
                ..m.into_content_duplicate(fp)
            }))
    }

    /// Indexes the article of a kept page judged on another text, as a
    /// record of its own that only another page's article matches: on
    /// another site, or on its own where the pages are alike as shown.
    pub(super) fn insert_article(
        &self,
        t: &mut dyn Tables,
        sig: &Signature,
        (fp, sketch, scripts): (Fingerprint, &Sketch, PageScripts),
        now: u64,
    ) -> Result<()> {
        let id = t.next_doc_id()?;
        let rec = DocRecord {
            fingerprint: fp,
            inserted_at: now,
            title: None,
            sketch: sketch.clone(),
            url: sig.url.clone(),
            article: Some(ArticleMark { only: true, scripts }),
            // What its page showed: one site's article matches only where
            // the pages are also alike as shown (`Signature::same_story`).
            extent: sig.extent,
        };
        self.index_record(t, id, rec, self.band_keys(sketch))
    }

    /// Stores a kept record under `id` and indexes it by its SimHash blocks
    /// and `bands` (its sketch's band keys): a page's record and its
    /// article's alike.
    pub(super) fn index_record(
        &self,
        t: &mut dyn Tables,
        id: DocId,
        rec: DocRecord,
        bands: impl Iterator<Item = u64>,
    ) -> Result<()> {
        let fp = rec.fingerprint;
        t.put_doc(id, rec)?;
        for (table, key) in self.layout.keys(fp.low()) {
            t.add_block(table, key, fp, id)?;
        }
        for key in bands {
            t.add_band(key, id)?;
        }
        Ok(())
    }

    /// Every stored fingerprint within the maximum distance of `fp`, nearest
    /// first, as (distance, URL). A read-only query: it never waits for
    /// writers on redb.
    ///
    /// A 64-bit fingerprint asked of a 128-bit deduper counts as a 128-bit
    /// one whose upper half is 0 (as [`Fingerprint::distance`] does); a
    /// 128-bit one asked of a 64-bit deduper is an [`Error::Config`].
    pub fn near(&self, fp: Fingerprint) -> Result<Vec<(u32, String)>> {
        let fp = match (self.config.bits, fp.high()) {
            (128, None) => Fingerprint::wide(fp.to_u128()),
            (64, Some(_)) => {
                return Err(Error::Config(format!(
                    "fingerprint {fp} has 128 bits; this deduper's store holds 64-bit fingerprints"
                )));
            }
            _ => fp,
        };
        let cutoff = self.cutoff();
        let keys = Prefetch {
            blocks: self.layout.keys(fp.low()).collect(),
            ..Prefetch::default()
        };
        self.store.read(|t| {
            t.prefetch(&keys)?;
            let mut out = Vec::new();
            for (d, id) in self.hits(t, fp)? {
                // An article alone is not a document of its own.
                if let Some(rec) = t.doc(id)?
                    && rec.inserted_at >= cutoff
                    && !rec.article.is_some_and(|a| a.only)
                {
                    out.push((d, rec.url));
                }
            }
            Ok(out)
        })
    }

    /// (distance, id) of every stored fingerprint within the maximum
    /// distance, nearest first, verified by exact distance.
    ///
    /// The index holds low halves only. At 64 bits that is the whole
    /// fingerprint; at 128 its hits are the documents within the distance
    /// over the low half, a superset, so the full distance is taken from
    /// each hit's record (a handful per check: a random document is
    /// within 3 bits of another's low half about never).
    pub(super) fn hits(&self, t: &dyn ReadTables, fp: Fingerprint) -> Result<Vec<(u32, DocId)>> {
        self.hits_from(t, fp, None)
    }

    /// [`Deduper::hits`], from `early` where the store brings those up to
    /// date ([`ReadTables::near_since`]), else from the block lists.
    pub(super) fn hits_from(
        &self,
        t: &dyn ReadTables,
        fp: Fingerprint,
        early: Option<&EarlyHits>,
    ) -> Result<Vec<(u32, DocId)>> {
        let keys: Vec<(usize, u64)> = self.layout.keys(fp.low()).collect();
        let mut hits = Vec::new();
        let max = self.layout.max_distance();
        let caught_up = match early {
            Some(early) => t.near_since(early, &keys, fp, max, &mut hits)?,
            None => false,
        };
        if !caught_up {
            t.near_all(&keys, fp, max, &mut hits)?;
        }
        if fp.high().is_some() {
            let mut full = Vec::with_capacity(hits.len());
            for (_, id) in hits {
                if let Some(rec) = t.doc(id)? {
                    let d = fp.distance(rec.fingerprint);
                    if d <= max {
                        full.push((d, id));
                    }
                }
            }
            hits = full;
        }
        hits.sort_unstable();
        hits.dedup();
        Ok(hits)
    }
}
