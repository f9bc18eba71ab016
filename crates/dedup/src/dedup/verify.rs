//! Verification: a candidate of any tier decides only when the sketches
//! show enough resemblance.

use super::{Duplicate, Signature, Tier};
use crate::article::{ARTICLE_MIN_SIMILARITY, Article, PageScripts, SiteRelation};
use crate::extent::{PAGE_MIN_SIMILARITY, SHOWN_MIN_ON_ONE_HOST};
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
        match against {
            // An article alone matches only another page's article.
            Against::Text => self.refusal(m).is_none(),
            Against::Article => match self.both_scripts(m) {
                Some((mine, theirs)) => self.same_story(m, mine, theirs),
                None => self.article_is_page(m),
            },
        }
    }

    /// This page's article is the whole of what another site's page shows
    /// (its record judged on all of it, without an article of its own):
    /// the story, kept first on a site whose extraction left part of it
    /// out (a box beside the text, a note), so that page was judged on all
    /// it shows. Across sites only, at the near-duplicate line; scripts
    /// are not compared, as above that line they never decide. News asked
    /// for it: a manual's section republished inside news templates
    /// (docs/EVAL.md, "Issue 35, fourteenth round").
    fn article_is_page(&self, m: &Match) -> bool {
        m.relation == SiteRelation::OtherSites
            && m.rec.article.is_none()
            && m.rec.extent.is_some()
            && m.similarity >= ARTICLE_MIN_SIMILARITY
    }

    /// One article on two sites, in the same scripts, near-duplicate; or
    /// on one site (one host, or one path on two hosts) when the two pages
    /// are also alike by everything they show: pages whose main text is
    /// too small a share of what they show to be their identity are judged
    /// on all of it ([`crate::identity`]), and compare by their articles
    /// only.
    ///
    /// On one host that is a page saying what its sibling says inside a
    /// navigation that names each page's own neighbours: the API
    /// reference of `std::map::clear` and `std::multimap::clear` (one
    /// text, 0.84 alike as shown; a held-out set of other generators asked
    /// for it, docs/eval-apiref.md) or one rustdoc item judged on its main
    /// text and its sibling on all it shows. Two pages that share only a
    /// block extraction picks are not alike as shown, so the outline
    /// decides; a record without one (written before its page's extent
    /// was kept beside its article) never matches this way.
    ///
    /// How alike as shown:
    /// - At one path on two hosts, a page and its twin judged on its main
    ///   text (the record holds that text): [`PAGE_MIN_SIMILARITY`], as
    ///   for any verdict between pages of one site. Twins both judged on
    ///   all they show are compared by that, not by their articles:
    ///   matching their articles dropped the handbook's zh-CN foreword for
    ///   its zh-TW twin (0.61 alike as shown).
    /// - On one host: [`ARTICLE_MIN_SIMILARITY`], the near-duplicate line
    ///   itself. What siblings say alike may be a block a generator
    ///   repeats in each of them (one iterator's description in the
    ///   reference of every container): 22 such siblings of a held-out
    ///   reference, 0.60-0.65 alike as shown, passed an outline asked for
    ///   0.65 (its standard error is 0.06 there).
    fn same_story(&self, m: &Match, mine: PageScripts, theirs: PageScripts) -> bool {
        if m.similarity < ARTICLE_MIN_SIMILARITY || mine.apart(theirs) {
            return false;
        }
        let min_shown = match m.relation {
            // Across sites a copy shows another site's frame.
            SiteRelation::OtherSites => return true,
            SiteRelation::SamePath if m.rec.article.is_some_and(|a| a.only) => return false,
            SiteRelation::SamePath => PAGE_MIN_SIMILARITY,
            SiteRelation::SameHost | SiteRelation::Mirrors => ARTICLE_MIN_SIMILARITY,
        };
        self.alike_as_shown(m).is_some_and(|r| r >= min_shown)
    }

    /// How alike this page and `m`'s are by everything they show, from
    /// their outlines, when both carry one (`crawl check` shows it beside
    /// each candidate).
    pub(super) fn alike_as_shown(&self, m: &Match) -> Option<f64> {
        self.extent
            .zip(m.rec.extent)
            .and_then(|(a, b)| a.outline_resemblance(&b))
    }

    /// Why `m`, compared by text, cannot decide for this signature
    /// whatever the tier's threshold (`None`: it can). One logic for the
    /// verdict and for its explanation ([`crate::Deduper::explain`]).
    pub(super) fn refusal(&self, m: &Match) -> Option<Refusal> {
        // An article alone matches only a page that is an article
        // (`same_story`): one judged on it, or one judged on all it shows
        // whose article is beside it, as when its extraction left a box of
        // the story out and the copy's did not.
        if let Some(theirs) = m.rec.article.filter(|a| a.only) {
            return match &self.article {
                Article::Text(mine) | Article::Separate { scripts: mine, .. }
                    if self.same_story(m, *mine, theirs.scripts) =>
                {
                    None
                }
                _ => Some(Refusal::ArticleOnly),
            };
        }
        if let Some(r) = self.shown_refusal(m) {
            return Some(r);
        }
        match self.min_similarity {
            None => None,
            Some(min) if min >= 1.0 => {
                let same = self.sketch.as_ref().is_some_and(|s| s.same_text(&m.rec.sketch));
                (!same).then_some(Refusal::Stricter { min: 1.0 })
            }
            Some(min) => (m.similarity < min).then_some(Refusal::Stricter { min }),
        }
    }
}

/// Why a candidate that resembles a page enough for its tier is not its
/// partner (`crawl check` shows it beside the candidate).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Refusal {
    /// The kept record is another page's article alone: only a page with
    /// that article on another site, or on its own site alike by all it
    /// shows, matches it ([`crate::article`]).
    ArticleOnly,
    /// The two pages, of one host, are too far apart in size to be
    /// [`crate::PAGE_MIN_SIMILARITY`] alike: at most `at_most`
    /// ([`crate::extent`]); or, both judged on all they show, too far apart
    /// for the tier's threshold, whatever the sketches estimate.
    SizesApart {
        /// The largest resemblance their sizes allow.
        at_most: f64,
    },
    /// The two pages, of one site, are alike by the text they are judged
    /// on but not by everything they show: `alike`, estimated from their
    /// outlines ([`crate::Outline`]).
    ShowsApart {
        /// The estimated resemblance of everything they show.
        alike: f64,
    },
    /// The two pages, of two sites, are judged on texts in different
    /// scripts: a page and its translation sharing a table or code, not
    /// copies ([`crate::PageScripts::apart`]).
    ScriptsApart,
    /// The checked page has an article of its own beside the text it is
    /// judged on, and the partner does not carry it: `alike`, how alike
    /// the partner's article is (`None`: it has none, or none near enough
    /// to be found). Two pages that differ by the story one of them tells
    /// are not copies, however alike their templates make them.
    ArticleMissing {
        /// The resemblance of the two articles, when the partner has one.
        alike: Option<f64>,
    },
    /// The checked page has too little text of its own and must reach
    /// `min` (1.0: the same text) ([`Signature::min_similarity`]).
    Stricter {
        /// The resemblance it must reach.
        min: f64,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::ArticleOnly => write!(
                f,
                "another page's article, matched only from another site or by a page alike as shown"
            ),
            Refusal::SizesApart { at_most } => write!(
                f,
                "pages of one host too far apart in size: at most {at_most:.3} alike"
            ),
            Refusal::ShowsApart { alike } => write!(
                f,
                "pages of one site alike by the text judged, not by all they show: {alike:.3} alike"
            ),
            Refusal::ScriptsApart => write!(
                f,
                "pages of two sites judged on texts in different scripts: a translation, not a copy"
            ),
            Refusal::ArticleMissing { alike: Some(a) } => {
                write!(
                    f,
                    "its article is not the partner's: the articles are {a:.3} alike"
                )
            }
            Refusal::ArticleMissing { alike: None } => {
                write!(
                    f,
                    "its article is not the partner's: the partner has no article like it"
                )
            }
            Refusal::Stricter { min } if *min >= 1.0 => {
                write!(f, "too little text of its own: a copy only of the same text")
            }
            Refusal::Stricter { min } => write!(f, "too little text of its own: needs {min:.2}"),
        }
    }
}

impl Signature {
    /// Why `m` cannot be this page's partner by what the two pages show
    /// ([`crate::extent`]), when both carry their extents (`None`: no such
    /// reason). The two pages' relation is read once for both rules.
    ///
    /// **Sizes**, pages of one host: two that differ too much in size are
    /// not copies, however alike the texts they are judged on. API
    /// references asked for it (doxygen's member and function lists, one
    /// inside the other). Across hosts a frame of another site's own makes
    /// one page larger by nature.
    ///
    /// **Outlines**, where they decide:
    /// - One host: the frame is the same, so what two pages show differs
    ///   by what they say; the estimate must clear the line by its error
    ///   ([`SHOWN_MIN_ON_ONE_HOST`]).
    /// - One path on two hosts (a mirror, a language version on its own
    ///   host, one manual rendered by two generators): one site's page in
    ///   two places, a copy only when alike by all it shows, as on one
    ///   host. A judged text alike is often a block the two pages share:
    ///   the untranslated table of a translation, or one manual page's text
    ///   inside groff's and man2html's chrome (a short page whose chrome is
    ///   most of what it shows: 0.59 alike as shown, 0.80 by the judged
    ///   text). Until 2026-11-29 a judged text at or above
    ///   [`ARTICLE_MIN_SIMILARITY`] in one script skipped this, for a story
    ///   on two news sites that happen to give it one path; man pages asked
    ///   for the rule without that exception, and it cost one news copy of
    ///   332 (docs/EVAL.md, "Issue 35, seventh round").
    /// - Other sites: a copy inside another site's frame shows that frame,
    ///   and its article is what counts ([`crate::article`]).
    ///
    /// **Scripts**, other sites: two pages whose judged texts are below
    /// the near-duplicate line ([`ARTICLE_MIN_SIMILARITY`]) and apart in
    /// script (one holds a tenth of its letters in a script the other has
    /// next to none of, [`PageScripts::apart`]) are a page and its
    /// translation around a shared block (a table, code), not copies. One
    /// path on two hosts leaves such pages to the outlines (above); other
    /// sites had no rule, and man pages asked for one: a Japanese ISO
    /// 8859-1 table dropped for the English CP1252 table at 0.757 (visible
    /// texts 0.52 alike). Above the line the scripts do not decide: a
    /// story copied into another site's frame, with some of that frame
    /// left in its extracted text in another script (English links around
    /// a Russian story), is still a copy; news asked for that.
    fn shown_refusal(&self, m: &Match) -> Option<Refusal> {
        // Mirrors are told apart for articles only (`same_story`): two
        // mailing lists archived by one program number their messages alike
        // (`msg00084.html` on both), and a message cross-posted to both,
        // judged on its text, is a copy whatever their frames.
        let relation = match m.relation {
            SiteRelation::Mirrors => SiteRelation::OtherSites,
            r => r,
        };
        if relation == SiteRelation::OtherSites
            && m.similarity < ARTICLE_MIN_SIMILARITY
            && self.both_scripts(m).is_some_and(|(a, b)| a.apart(b))
        {
            return Some(Refusal::ScriptsApart);
        }
        let (mine, theirs) = (self.extent?, m.rec.extent?);
        if relation == SiteRelation::SameHost {
            let at_most = mine.resemblance_at_most(theirs);
            if at_most < PAGE_MIN_SIMILARITY {
                return Some(Refusal::SizesApart { at_most });
            }
        }
        // One site, on one host or at one path on two.
        let decides = relation != SiteRelation::OtherSites;
        let alike = mine.outline_resemblance(&theirs).filter(|_| decides)?;
        let min = if relation == SiteRelation::SameHost {
            SHOWN_MIN_ON_ONE_HOST
        } else {
            PAGE_MIN_SIMILARITY
        };
        (alike < min).then_some(Refusal::ShowsApart { alike })
    }

    /// `m` with its estimated resemblance no higher than the two pages'
    /// sizes allow, when both, on one host, are judged on all they show
    /// (neither on its main text): two sets of 5-grams are at most the
    /// smaller over the larger alike ([`crate::Extent::resemblance_at_most`]),
    /// so an estimate above that is the sketch's error, not the texts'
    /// (the sketch's standard error is about 0.04 at 0.7). API references
    /// asked for it: two libstdc++ source listings judged on all they show,
    /// 0.62 alike, their sizes allowing 0.748, estimated 0.757 (over the
    /// content tier's 0.75). On one host both pages leave out the same
    /// learnt template, which only tightens the bound; a page judged on its
    /// main text is not bounded by what it shows.
    pub(super) fn bounded(&self, mut m: Match, against: Against) -> Match {
        let whole = !matches!(self.article, Article::Text(_)) && m.rec.article.is_none();
        if against == Against::Text
            && whole
            && let (Some(mine), Some(theirs)) = (self.extent, m.rec.extent)
            && m.relation == SiteRelation::SameHost
        {
            m.similarity = m.similarity.min(mine.resemblance_at_most(theirs));
        }
        m
    }

    /// The scripts of this page and of `m`'s, when both carry them (pages
    /// with an article, [`crate::Article`]).
    fn both_scripts(&self, m: &Match) -> Option<(PageScripts, PageScripts)> {
        Some((self.article.scripts()?, m.rec.article?.scripts))
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
    /// How the two pages' URLs are related: [`SiteRelation::of`] until the
    /// deduper, for a candidate that could decide, learns from its URL tier
    /// that two sites are one in two places ([`SiteRelation::Mirrors`]).
    pub(super) relation: SiteRelation,
}

impl Match {
    pub(super) fn new(
        (id, url): (DocId, &str),
        fp: Option<Fingerprint>,
        sketch: Option<&Sketch>,
        rec: DocRecord,
    ) -> Match {
        Match {
            id,
            relation: SiteRelation::of(url, &rec.url),
            similarity: sketch.map_or(0.0, |s| s.resemblance(&rec.sketch)),
            distance: fp.map_or(u32::MAX, |f| f.distance(rec.fingerprint)),
            rec,
        }
    }

    /// Whether this match, looked up `against` a text or an article,
    /// compares two pages' articles (`Signature::same_story` decides): the
    /// only verdicts that [`SiteRelation::Mirrors`] changes, so the only
    /// ones for which the deduper asks its URL tier (`Deduper::place`).
    pub(super) fn compares_articles(&self, against: Against) -> bool {
        against == Against::Article || self.rec.article.is_some_and(|a| a.only)
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
