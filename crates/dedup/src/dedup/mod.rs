//! The three tiers behind one API: [`Deduper`], its settings and verdicts,
//! and the check that runs the tiers in order. Each tier's own logic is in
//! its module (`url_tier`, `title_tier`, `content_tier`), candidates are
//! verified in `verify`, the window is purged in `purge`, the recorded
//! parameters are checked in `params`, and `compare` explains a verdict.

mod compare;
mod content_tier;
mod embed;
mod explain;
mod params;
mod purge;
#[cfg(feature = "serde")]
mod serde_impls;
mod title_tier;
mod url_tier;
mod verify;

pub use self::compare::Comparison;
pub use self::content_tier::BAND_CANDIDATES;
pub use self::embed::STORE_FILE;
pub use self::explain::{Candidate, Explanation, Nominated};
pub use self::purge::{PURGE_SLICE, Purged};
pub use self::title_tier::{TITLE_CANDIDATES, TitlePolicy, normalize_title, title_digest};
pub use self::url_tier::{UrlTier, UrlVerdict};
pub use self::verify::Refusal;

use std::sync::Arc;

use crate::article::{Article, PageScripts};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::canonical::{Canonicalizer, UrlConfig};
use crate::error::{Error, Result};
use crate::extent::Extent;
use crate::features::{FeatureConfig, Features};
use crate::fingerprint::Fingerprint;
use crate::index::BlockLayout;
use crate::sketch::{SKETCH_BINS, Sketch};
use crate::store::{ArticleMark, DocId, DocRecord, EarlyHits, Prefetch, ReadTables, Store, Tables};

/// Version of the on-disk layout; bumped when records change shape.
/// Format 2 added the resemblance sketch to every document and the band
/// index; a format-1 store cannot be verified against and is refused.
pub const FORMAT_VERSION: u32 = 2;

/// Which tier found a duplicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Tier {
    /// Same canonical URL.
    Url,
    /// Same normalized title (see [`TitlePolicy`]).
    Title,
    /// Content resemblance: an exact copy of the text, or a SimHash or band
    /// index candidate verified by its sketch.
    Content,
}

impl Tier {
    /// The tier's name in output files: `url`, `title` or `content`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Url => "url",
            Tier::Title => "title",
            Tier::Content => "content",
        }
    }
}

/// Settings of a [`Deduper`].
///
/// ```
/// let c: simcrawl_dedup::DedupConfig = Default::default();
/// assert_eq!((c.blocks, c.max_distance), (4, 3));
/// assert_eq!(c.title_policy, simcrawl_dedup::TitlePolicy::Confirm);
/// assert_eq!((c.bands, c.band_rows), (10, 4));
/// assert!(c.min_similarity > 0.5 && c.title_min_similarity > 0.5);
/// ```
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DedupConfig {
    /// SimHash width: 64 (the default) or 128, as the seeds' Python
    /// version allows. At 128 bits `max_distance` counts over all 128, so
    /// the same k is a stricter bound; the block index keys by the low 64
    /// bits either way (see [`Fingerprint`]). A store records it and
    /// refuses to open at the other width.
    pub bits: u32,
    /// Blocks the fingerprint is split into (m). 4 is the seeds' layout;
    /// 6 is Manku's 20-table layout for tens of millions of documents.
    pub blocks: u32,
    /// Maximum Hamming distance that makes a near-duplicate (k).
    pub max_distance: u32,
    /// What a title match means.
    pub title_policy: TitlePolicy,
    /// Resemblance (estimated Jaccard index of character 5-grams, 0 to 1)
    /// a content-tier candidate must reach to be a duplicate. 0 trusts the
    /// SimHash distance alone (the seeds' behaviour; loses unique pages).
    pub min_similarity: f64,
    /// Resemblance a same-title candidate must reach under `confirm`.
    pub title_min_similarity: f64,
    /// LSH bands over the sketch (0: no band index, SimHash candidates
    /// only). With `band_rows` rows each, a copy of resemblance J is found
    /// with probability 1 - (1 - J^rows)^bands: 10 x 4 finds J = 0.8 with
    /// probability 0.995, J = 0.3 with 0.08.
    pub bands: usize,
    /// Sketch bins per band.
    pub band_rows: usize,
    /// Bits the store keeps of each sketch bin: 8 or 16. `None` (the
    /// default) takes what the store recorded, and 8 for a new store: 128
    /// bytes less per document with the same verdicts on the labelled set
    /// (docs/EVAL.md "Sketch width"). A store records it and refuses to
    /// open at the other width, as for `bits`.
    pub sketch_bits: Option<u32>,
    /// Entries older than this stop counting and are purged (`None`: keep
    /// forever). In config files a duration such as `"7d"`.
    #[serde(with = "window_serde")]
    pub window: Option<Duration>,
    /// Index each kept page's article ([`Signature::article`]), so that
    /// another site's page with the same article is its copy. `false`:
    /// [`Deduper::article`] gives [`Article::None`] and no article record
    /// is written (records written before still count); one record less
    /// for each kept page judged on something other than its article.
    pub articles: bool,
    /// How text becomes features.
    pub features: FeatureConfig,
    /// The URL tier: which query parameters are tracking
    /// (`[dedup.url]`).
    pub url: UrlConfig,
}

impl DedupConfig {
    /// Checks the values that have a range (`bits`, `max_distance`, the
    /// similarities, the bands, `sketch_bits`, the block layout) without
    /// opening anything, so that a program can refuse bad settings when it
    /// reads them, before it builds a [`Deduper`]. A range's message starts
    /// with the setting's name (`min_similarity 3 is not between 0 and
    /// 1`): a program that keeps these settings under a table of its own
    /// can prefix it.
    pub fn check(&self) -> Result<()> {
        let config = self;
        if config.bits != 64 && config.bits != 128 {
            return Err(Error::Config(format!("bits {} is not 64 or 128", config.bits)));
        }
        if config.max_distance > 32 {
            return Err(Error::Config(format!(
                "max_distance {} is above 32",
                config.max_distance
            )));
        }
        for (name, v) in [
            ("min_similarity", config.min_similarity),
            ("title_min_similarity", config.title_min_similarity),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::Config(format!("{name} {v} is not between 0 and 1")));
            }
        }
        if config.bands > 0 && (config.band_rows == 0 || config.bands * config.band_rows > SKETCH_BINS) {
            return Err(Error::Config(format!(
                "bands {} x band_rows {} must use between 1 and {SKETCH_BINS} sketch bins",
                config.bands, config.band_rows
            )));
        }
        if let Some(b) = config.sketch_bits
            && !crate::sketch::SKETCH_WIDTHS.contains(&b)
        {
            return Err(Error::Config(format!("sketch_bits {b} is not 8 or 16")));
        }
        BlockLayout::new(config.blocks, config.max_distance)?;
        Ok(())
    }
}

impl Default for DedupConfig {
    fn default() -> Self {
        DedupConfig {
            bits: 64,
            blocks: 4,
            max_distance: 3,
            title_policy: TitlePolicy::Confirm,
            min_similarity: DEFAULT_MIN_SIMILARITY,
            title_min_similarity: DEFAULT_TITLE_MIN_SIMILARITY,
            bands: 10,
            band_rows: 4,
            sketch_bits: None,
            window: None,
            articles: true,
            features: FeatureConfig::default(),
            url: UrlConfig::default(),
        }
    }
}

/// Default `min_similarity`, chosen on the labelled set (docs/EVAL.md).
pub const DEFAULT_MIN_SIMILARITY: f64 = 0.75;
/// Default `title_min_similarity`, chosen on the labelled set (docs/EVAL.md).
pub const DEFAULT_TITLE_MIN_SIMILARITY: f64 = 0.7;

mod window_serde {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(w: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match w {
            Some(d) => s.serialize_str(&humantime::format_duration(*d).to_string()),
            None => s.serialize_str("off"),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text = String::deserialize(d)?;
        let text = text.trim();
        if text.is_empty() || text == "off" || text == "0" {
            return Ok(None);
        }
        humantime::parse_duration(text).map(Some).map_err(|e| {
            serde::de::Error::custom(format!(
                "invalid window {text:?} ({e}); use e.g. \"7d\", \"12h\" or \"off\""
            ))
        })
    }
}

/// A document to check: its URL, title (may be empty) and main text.
#[derive(Clone, Copy, Debug)]
pub struct Document<'a> {
    /// Where it came from; reported as `duplicate_of` for later copies.
    pub url: &'a str,
    /// Its title, normalized by the title tier (whitespace, case).
    pub title: &'a str,
    /// Its main text.
    pub text: &'a str,
}

impl<'a> Document<'a> {
    /// A document from its parts.
    pub fn new(url: &'a str, title: &'a str, text: &'a str) -> Self {
        Document { url, title, text }
    }
}

/// Everything the tiers need from a document, computed without touching the
/// store. Computing it is the CPU-heavy part (segmentation, hashing), so
/// callers can compute many in parallel and then check them in one
/// transaction with [`Deduper::check_batch`].
///
/// With the `serde` feature it serializes (the sketch as hexadecimal text),
/// so signing and checking can run in different processes.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Signature {
    /// The URL as given.
    pub url: String,
    /// MD5 of the canonical URL, if the URL is valid.
    pub url_digest: Option<u128>,
    /// MD5 of the normalized title, if there is a title.
    pub title_digest: Option<u128>,
    /// SimHash of the text, if it has any features.
    pub fingerprint: Option<Fingerprint>,
    /// Resemblance sketch of the text, if it has letters or digits.
    #[cfg_attr(feature = "serde", serde(with = "serde_impls::sketch"))]
    pub sketch: Option<Sketch>,
    /// How many features the SimHash was made of (0 without one): a
    /// verdict on a handful of features deserves a person's look.
    pub features: usize,
    /// A stricter resemblance than the tiers' this document must reach to
    /// be dropped (`None`: the tiers' own), for a document whose text says
    /// little about it: a crawler sets it for a page with too little text of
    /// its own, judged on everything it shows, its site's template included.
    /// `Some(1.0)`: a copy only of a document with exactly the same text
    /// (letters and digits, case folded). Kept, it is indexed as usual.
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, DedupConfig, Document, MemoryStore};
    /// let d = Deduper::new(MemoryStore::new(), DedupConfig::default())?;
    /// let shared = "欢迎使用帮助系统。本页面介绍软件的各个模块和常见问题，内容由社区维护，欢迎提出修改建议与意见，谢谢支持。";
    /// d.check_content(&Document::new("http://h.example/a", "", &format!("{shared}第一章")))?;
    /// let mut sig = d.sign(&Document::new("http://h.example/b", "", &format!("{shared}第二章")));
    /// assert!(d.lookup(&sig)?.is_some(), "resembles a");
    /// sig.min_similarity = Some(1.0);
    /// assert!(d.lookup(&sig)?.is_none(), "not the same text as a");
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub min_similarity: Option<f64>,
    /// The page's article, when it has one ([`crate::article`]): another
    /// site's page with the same article is a copy, whatever else either
    /// page shows. Not serialized: a signature sent to another process is
    /// judged on its text alone.
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, Document, PageScripts};
    /// let d = Deduper::in_memory()?;
    /// let story = "The council met on Tuesday and approved the budget for the new bridge after a \
    ///     debate that lasted well into the night; the vote was close, seven to six, and the \
    ///     mayor said work would start in the spring once the contracts are signed.";
    /// // Three templates, each judged with the story (it is under half of
    /// // what the page shows): what sets pages apart is their template.
    /// let frame = |w: &str| (0..80).map(|i| format!("{w}{i} ")).collect::<String>();
    /// let sign = |url: &str, template: &str| {
    ///     let page = format!("{} {story} {}", frame(template), frame(&template.replace(' ', "x")));
    ///     let mut sig = d.sign(&Document::new(url, "", &page));
    ///     sig.article = d.article(story, PageScripts::of(&page));
    ///     sig
    /// };
    /// assert!(d.check_signed(&sign("http://a.example/1", "harbour violin"))?.is_unique());
    /// // A copy inside another site's template: dropped by its article.
    /// let copy = d.check_signed(&sign("http://b.example/7", "granite pepper"))?;
    /// assert_eq!(copy.partner(), Some("http://a.example/1"));
    /// assert!(copy.duplicate().is_some_and(|dup| dup.article));
    /// // On the same site, one article in two pages is two sibling pages.
    /// assert!(d.check_signed(&sign("http://a.example/2", "lantern meadow"))?.is_unique());
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    #[cfg_attr(feature = "serde", serde(skip))]
    pub article: Article,
    /// The page's [`Extent`], how much it shows (`None`: not a page, or not
    /// known): a crawler sets it. Set, the record keeps it, and a page of
    /// the same host is not a copy of it when their extents are too far
    /// apart for the two to be [`crate::PAGE_MIN_SIMILARITY`] alike
    /// ([`crate::extent`]).
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, Document, Extent, Signature};
    /// let d = Deduper::in_memory()?;
    /// let list: String = (0..40).map(|i| format!("member{i}() : std::chrono\n")).collect();
    /// let page = |url: &str, shows: &str| -> Signature {
    ///     let mut sig = d.sign(&Document::new(url, "", &list));
    ///     sig.extent = Some(Extent::of(&format!("{shows}\n{list}")));
    ///     sig
    /// };
    /// // The "all members" page also shows a long introduction.
    /// let intro = "Here is a list of all documented members, with links to the documentation \
    ///     of the namespace each belongs to, sorted by name; operators are listed under o, \
    ///     literals under their suffix, and deprecated members are marked as such.";
    /// assert!(d.check_signed(&page("http://h.example/all_o", intro))?.is_unique());
    /// let functions = page("http://h.example/func_o", "");
    /// assert!(d.check_signed(&functions)?.is_unique(), "the same list, a different page");
    /// let mirror = page("http://h.example/all_o?print", intro);
    /// assert!(!d.check_signed(&mirror)?.is_unique(), "the same page again");
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    #[cfg_attr(feature = "serde", serde(default))]
    pub extent: Option<Extent>,
}

/// The decision about one document.
///
/// With the `serde` feature it serializes as one flat object tagged by
/// `verdict`:
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use simcrawl_dedup::{Deduper, Document, Verdict};
/// let d = Deduper::in_memory()?;
/// let text = "气象台发布寒潮蓝色预警，北方大部地区气温将下降八到十度，局地降温超过十二度并伴有大风。";
/// let kept = d.check(&Document::new("http://a.example/1", "寒潮", text))?;
/// let copy = d.check(&Document::new("http://b.example/9", "", text))?;
/// let json = serde_json::to_value(&copy).unwrap();
/// assert_eq!(json["verdict"], "duplicate");
/// assert_eq!(json["tier"], "content");
/// assert_eq!(json["of"], "http://a.example/1");
/// assert_eq!(json["of_id"], serde_json::json!(kept.id()));
/// assert_eq!(json["similarity"], 1.0);
/// assert_eq!(serde_json::from_value::<Verdict>(json).unwrap(), copy);
/// # }
/// # Ok::<(), simcrawl_dedup::Error>(())
/// ```
///
/// New variants may be added in minor versions: match with a `_` arm, or
/// use the helpers ([`Verdict::is_duplicate`], [`Verdict::partner`],
/// [`Verdict::similarity`]).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(tag = "verdict", rename_all = "lowercase")
)]
#[non_exhaustive]
pub enum Verdict {
    /// Kept and indexed, so later copies match it.
    Unique {
        /// Its number in the store (`None` when the text had no features
        /// and so was not indexed by the content tier).
        id: Option<DocId>,
        /// Its SimHash (`None`: no features).
        fingerprint: Option<Fingerprint>,
        /// The URL tier was asked for ([`Deduper::check`],
        /// [`UrlTier::Check`]) but the URL cannot take part: it is
        /// relative (`/a.html`), not http(s), or has no host. It was
        /// neither looked up nor recorded, so a later check of the same
        /// URL is not a URL duplicate of this one.
        #[cfg_attr(feature = "serde", serde(default))]
        url_skipped: bool,
    },
    /// A copy of a document seen before.
    Duplicate(Duplicate),
}

impl Verdict {
    /// Whether the document should be dropped.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Verdict::Duplicate(_))
    }

    /// Whether the document was kept.
    pub fn is_unique(&self) -> bool {
        matches!(self, Verdict::Unique { .. })
    }

    /// Why it is a copy (`None`: kept).
    pub fn duplicate(&self) -> Option<&Duplicate> {
        match self {
            Verdict::Duplicate(d) => Some(d),
            Verdict::Unique { .. } => None,
        }
    }

    /// URL of the kept document it copies (`None`: kept).
    pub fn partner(&self) -> Option<&str> {
        self.duplicate().map(|d| d.of.as_str())
    }

    /// Store id of the kept document it copies, when the tier knows it
    /// (title and content tiers).
    pub fn partner_id(&self) -> Option<DocId> {
        self.duplicate().and_then(|d| d.of_id)
    }

    /// The tier that matched (`None`: kept).
    pub fn tier(&self) -> Option<Tier> {
        self.duplicate().map(|d| d.tier)
    }

    /// The estimated resemblance to the partner that decided (`None`: kept,
    /// or a URL duplicate).
    pub fn similarity(&self) -> Option<f64> {
        self.duplicate().and_then(|d| d.similarity)
    }

    /// The store id the kept document got (`None`: a duplicate, or a text
    /// without features, which the content tier does not index).
    pub fn id(&self) -> Option<DocId> {
        match self {
            Verdict::Unique { id, .. } => *id,
            Verdict::Duplicate(_) => None,
        }
    }

    /// The document's SimHash, if its text had features.
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        match self {
            Verdict::Unique { fingerprint, .. } => *fingerprint,
            Verdict::Duplicate(d) => d.fingerprint,
        }
    }

    /// Whether the URL tier was asked for but the URL could not take part
    /// (relative, not http(s), no host); see [`Verdict::Unique`].
    pub fn url_skipped(&self) -> bool {
        match self {
            Verdict::Unique { url_skipped, .. } => *url_skipped,
            Verdict::Duplicate(d) => d.url_skipped,
        }
    }
}

/// Why a document was judged a copy.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Duplicate {
    /// The tier that matched.
    pub tier: Tier,
    /// URL of the kept document it copies.
    pub of: String,
    /// Store id of the kept document it copies: known to the title and
    /// content tiers, `None` for a URL duplicate (the URL tier keeps URLs,
    /// not documents).
    #[cfg_attr(feature = "serde", serde(default))]
    pub of_id: Option<DocId>,
    /// Hamming distance to it (title and content tiers, when both texts had
    /// features).
    pub distance: Option<u32>,
    /// The estimated resemblance to it that decided (title and content
    /// tiers; 1 for an exact copy of the text).
    pub similarity: Option<f64>,
    /// The document's own SimHash, if any.
    pub fingerprint: Option<Fingerprint>,
    /// The URL tier was asked for but the URL could not take part (see
    /// [`Verdict::Unique`]).
    #[cfg_attr(feature = "serde", serde(default))]
    pub url_skipped: bool,
    /// Matched on its article, against another site's page with the same
    /// article ([`Signature::article`]). Serialized only when true, so the
    /// verdicts of documents without articles read as before.
    #[cfg_attr(feature = "serde", serde(default, skip_serializing_if = "std::ops::Not::not"))]
    pub article: bool,
}

impl Duplicate {
    /// The estimated resemblance that decided (`None` for a URL duplicate).
    pub fn similarity(&self) -> Option<f64> {
        self.similarity
    }

    /// URL of the kept document it copies.
    pub fn partner(&self) -> &str {
        &self.of
    }
}

/// Counts about a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreStats {
    /// Documents indexed by the content tier.
    pub documents: u64,
}

type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// Three-tier deduplication over a [`Store`].
///
/// Embedding it in a crawler: check each URL before fetching it, and each
/// fetched page before keeping it.
///
/// ```
/// use simcrawl_dedup::{Deduper, DedupConfig, Document, MemoryStore, Tier, UrlVerdict, Verdict};
///
/// let dedup = Deduper::new(MemoryStore::new(), DedupConfig::default())?;
///
/// // Tier 1, at the frontier: every spelling of a URL is fetched once.
/// assert!(matches!(dedup.check_url("http://news.example/a?id=1")?, UrlVerdict::New(_)));
/// assert!(matches!(dedup.check_url("HTTP://news.example:80/a?id=1&utm_source=x#top")?, UrlVerdict::Seen { .. }));
///
/// // Tiers 2 and 3, after fetching and cleaning.
/// let text = "国家统计局今天发布数据显示，十月份全国规模以上工业增加值同比增长百分之五点三，\
///             环比增长零点四一，制造业采购经理指数回升至扩张区间。";
/// let first = dedup.check_content(&Document::new("http://news.example/a?id=1", "工业增加值", text))?;
/// assert!(matches!(first, Verdict::Unique { .. }));
/// let copy = dedup.check_content(&Document::new("http://mirror.example/x", "转载：工业增加值", text))?;
/// match copy {
///     Verdict::Duplicate(d) => {
///         assert_eq!(d.tier, Tier::Content);
///         assert_eq!(d.of, "http://news.example/a?id=1");
///         assert_eq!(d.distance, Some(0));
///     }
///     other => panic!("expected a duplicate, got {other:?}"),
/// }
/// # Ok::<(), simcrawl_dedup::Error>(())
/// ```
pub struct Deduper<S: Store> {
    store: S,
    config: DedupConfig,
    features: Features,
    layout: BlockLayout,
    /// The URL tier's key function, under `config.url`.
    canon: Canonicalizer,
    clock: Clock,
    last_purge: AtomicU64,
    /// Parameters of the embedding program recorded next to the crate's own
    /// (see [`Deduper::with_params`]).
    extra: Vec<(String, String)>,
    /// Bits kept of each sketch bin: `config.sketch_bits`, or the store's.
    sketch_bits: u32,
}

impl<S: Store> std::fmt::Debug for Deduper<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deduper")
            .field("store", &self.store)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl<S: Store> Deduper<S> {
    /// Opens deduplication over `store`. A store that already holds an index
    /// built with other parameters (blocks, distance, hash, features, IDF
    /// table, segmenter, tracking parameters, format) is refused with
    /// [`Error::ParamsMismatch`], naming what differs; one whose URL keys
    /// were computed by another version of the canonical forms, with
    /// [`Error::OldUrlKeys`]; one in another store format, with
    /// [`Error::OldFormat`]. An invalid [`DedupConfig::url`] list is a
    /// [`UrlError::TrackingParam`](crate::UrlError::TrackingParam).
    pub fn new(store: S, config: DedupConfig) -> Result<Deduper<S>> {
        Deduper::with_params(store, config, &[])
    }

    /// [`Deduper::new`], also recording parameters of the embedding program
    /// (`name`, `value`) that change what reaches the tiers: a crawler's
    /// HTML cleaning settings, say. This crate cannot see them, yet
    /// reusing an index after changing them mixes incompatible
    /// fingerprints, so the store refuses to open with other values just as
    /// for its own parameters. Names must be new (not one of
    /// [`Deduper::params`]'s own), without `=` or line breaks.
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, DedupConfig, MemoryStore};
    /// let d = Deduper::with_params(MemoryStore::new(), DedupConfig::default(), &[("clean", "3f2a")])?;
    /// assert!(d.params().ends_with("clean=3f2a\n"));
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn with_params(store: S, config: DedupConfig, extra: &[(&str, &str)]) -> Result<Deduper<S>> {
        config.check()?;
        let layout = BlockLayout::new(config.blocks, config.max_distance)?;
        // What the store recorded decides the settings left unset: read once.
        let recorded = if config.features.scripts.is_none() || config.sketch_bits.is_none() {
            params::stored_params(&store)?
        } else {
            None
        };
        let recorded = recorded.as_deref().unwrap_or("");
        let mut config = config;
        if config.features.scripts.is_none() {
            config.features.scripts = Some(params::recorded_scripts(recorded).unwrap_or_default());
        }
        let features = Features::new(config.features.clone())?;
        let canon = Canonicalizer::new(&config.url)?;
        let sketch_bits = match config.sketch_bits {
            Some(b) => b,
            None => params::recorded_sketch_bits(recorded).unwrap_or(8),
        };
        let deduper = Deduper {
            store,
            config,
            features,
            layout,
            canon,
            clock: Arc::new(now_secs),
            last_purge: AtomicU64::new(0),
            extra: Vec::new(),
            sketch_bits,
        };
        let own: Vec<String> = deduper
            .params()
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_string()))
            .collect();
        let mut deduper = deduper;
        for (name, value) in extra {
            let bad = |c: char| c == '=' || c == '\n' || c == '\r';
            if name.is_empty()
                || name.contains(bad)
                || value.contains(['\n', '\r'])
                || own.iter().any(|o| o == name)
                || deduper.extra.iter().any(|(n, _)| n == name)
            {
                return Err(Error::Config(format!(
                    "recorded parameter {name:?}={value:?}: names must be new, non-empty, without '=' \
                     or line breaks, and values on one line"
                )));
            }
            deduper.extra.push(((*name).to_string(), (*value).to_string()));
        }
        deduper.check_params()?;
        // Only a window's purge reads the URLs by first-seen time.
        deduper.store.keep_url_times(deduper.config.window.is_some())?;
        deduper
            .store
            .rebuild_bands(&|rec: &DocRecord| deduper.band_keys(&rec.sketch).collect())?;
        Ok(deduper)
    }

    /// Replaces the clock (seconds since the epoch); for tests of the window
    /// and for replaying corpora with their own timestamps.
    pub fn with_clock(mut self, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The store underneath.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Gives the store back, to reopen it under other settings (tests of
    /// the recorded parameters, tools that inspect an index).
    pub fn into_store(self) -> S {
        self.store
    }

    /// The settings in force.
    pub fn config(&self) -> &DedupConfig {
        &self.config
    }

    /// Bits kept of each sketch bin (16 or 8): `sketch_bits` if set, else
    /// the store's, else 8.
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, DedupConfig, MemoryStore};
    /// let d = Deduper::new(MemoryStore::new(), DedupConfig::default())?;
    /// assert_eq!(d.sketch_bits(), 8); // a new store
    /// let store = d.into_store();
    /// // Reopened: the store's width, whatever the default.
    /// assert_eq!(Deduper::new(store, DedupConfig::default())?.sketch_bits(), 8);
    /// let wide = DedupConfig { sketch_bits: Some(16), ..Default::default() };
    /// assert_eq!(Deduper::new(MemoryStore::new(), wide)?.sketch_bits(), 16);
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn sketch_bits(&self) -> u32 {
        self.sketch_bits
    }

    /// The URL tier's key function, under [`DedupConfig::url`]: crawlers
    /// that canonicalize links off the writer thread (for
    /// [`Deduper::check_url_in`]) use it, or a clone of it.
    ///
    /// ```
    /// use simcrawl_dedup::{DedupConfig, Deduper, MemoryStore, UrlConfig};
    /// let config = DedupConfig { url: UrlConfig { tracking_params: vec!["sid".into()] }, ..Default::default() };
    /// let d = Deduper::new(MemoryStore::new(), config)?;
    /// let c = d.canonicalizer().parse("http://a.example/p?utm_source=x&sid=1")?;
    /// assert_eq!(c.as_str(), "http://a.example/p?utm_source=x");
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn canonicalizer(&self) -> &Canonicalizer {
        &self.canon
    }

    /// The feature extractor (for showing what weighs most in a text).
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// The SimHash of a text under this deduper's feature settings.
    pub fn fingerprint(&self, text: &str) -> Option<Fingerprint> {
        self.features.fingerprint_counted_bits(text, self.config.bits).0
    }

    /// Computes a document's signature; pure CPU work, no store access.
    pub fn sign(&self, doc: &Document<'_>) -> Signature {
        let (fingerprint, features) = self.features.fingerprint_counted_bits(doc.text, self.config.bits);
        Signature {
            url: doc.url.to_string(),
            url_digest: self
                .canon
                .parse(doc.url)
                .ok()
                .map(|c| u128::from_be_bytes(c.digest())),
            title_digest: title_digest(doc.title),
            fingerprint,
            sketch: Sketch::of(doc.text).map(|s| s.narrow(self.sketch_bits)),
            features,
            min_similarity: None,
            article: Article::None,
            extent: None,
        }
    }

    /// The [`Article`] of a page with article text `text`, signed
    /// separately from what the page is judged on, and the scripts of the
    /// whole page (`Article::None` when the text has no features).
    pub fn article(&self, text: &str, scripts: PageScripts) -> Article {
        if !self.config.articles {
            return Article::None;
        }
        let (fingerprint, _) = self.features.fingerprint_counted_bits(text, self.config.bits);
        match (fingerprint, Sketch::of(text)) {
            (Some(fingerprint), Some(sketch)) => Article::Separate {
                fingerprint,
                sketch: Box::new(sketch.narrow(self.sketch_bits)),
                scripts,
                shingles: crate::sketch::shingle_count(text),
            },
            _ => Article::None,
        }
    }

    /// Title and content tiers of a signature made by [`Deduper::sign`]
    /// (and perhaps given an [`Article`]), in its own transaction.
    pub fn check_signed(&self, sig: &Signature) -> Result<Verdict> {
        self.write(|t| self.check_in(t, sig, UrlTier::Skip))
    }

    /// All three tiers: URL, then title, then content. An invalid URL skips
    /// the URL tier (the batch tool reports it) but not the others.
    pub fn check(&self, doc: &Document<'_>) -> Result<Verdict> {
        let sig = self.sign(doc);
        self.write(|t| self.check_in(t, &sig, UrlTier::Check))
    }

    /// Title and content tiers only: for crawlers whose frontier already
    /// applied the URL tier with [`Deduper::check_url`].
    pub fn check_content(&self, doc: &Document<'_>) -> Result<Verdict> {
        let sig = self.sign(doc);
        self.write(|t| self.check_in(t, &sig, UrlTier::Skip))
    }

    /// Checks many signed documents in one transaction, in order: a later
    /// document can be a duplicate of an earlier one in the same batch.
    pub fn check_batch(&self, sigs: &[Signature], url_tier: UrlTier) -> Result<Vec<Verdict>> {
        self.write(|t| {
            self.prefetch(t, sigs, url_tier)?;
            sigs.iter().map(|s| self.check_in(t, s, url_tier)).collect()
        })
    }

    /// Announces to a networked store what checking `sigs` will read.
    fn prefetch(&self, t: &dyn ReadTables, sigs: &[Signature], url_tier: UrlTier) -> Result<()> {
        if t.wants_prefetch() {
            t.prefetch(&self.prefetch_keys(sigs, url_tier))?;
        }
        Ok(())
    }

    /// Every index key checking `sigs` reads (except the documents its
    /// candidates name), for [`ReadTables::prefetch`].
    fn prefetch_keys(&self, sigs: &[Signature], url_tier: UrlTier) -> Prefetch {
        let mut p = Prefetch::default();
        for sig in sigs {
            if url_tier == UrlTier::Check
                && let Some(d) = sig.url_digest
            {
                p.urls.push(d);
            }
            if self.config.title_policy != TitlePolicy::Off
                && let Some(td) = sig.title_digest
            {
                p.titles.push(td);
            }
            if let (Some(fp), Some(sketch)) = (sig.fingerprint, sig.sketch.as_ref()) {
                p.blocks.extend(self.layout.keys(fp.low()));
                p.bands.extend(self.band_keys(sketch));
                p.documents += 1;
                // Kept, its article is a record of its own.
                if let Article::Separate {
                    fingerprint, sketch, ..
                } = &sig.article
                {
                    p.blocks.extend(self.layout.keys(fingerprint.low()));
                    p.bands.extend(self.band_keys(sketch));
                    p.documents += 1;
                }
            }
        }
        p
    }

    /// What the title and content tiers would say about a signed document,
    /// without recording it: a read-only query on a snapshot (it never waits
    /// for writers on redb). `None`: it would be kept.
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, DedupConfig, Document, MemoryStore};
    /// let d = Deduper::new(MemoryStore::new(), DedupConfig::default())?;
    /// let text = "气象台发布寒潮蓝色预警，北方大部地区气温将下降八到十度，局地降温超过十二度并伴有大风。";
    /// d.check_content(&Document::new("http://a.example/1", "寒潮", text))?;
    /// let copy = d.sign(&Document::new("http://b.example/9", "", text));
    /// let found = d.lookup(&copy)?.expect("an exact copy");
    /// assert_eq!((found.of.as_str(), found.similarity), ("http://a.example/1", Some(1.0)));
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn lookup(&self, sig: &Signature) -> Result<Option<Duplicate>> {
        let cutoff = self.cutoff();
        let mut keys = self.prefetch_keys(std::slice::from_ref(sig), UrlTier::Skip);
        // A lookup records nothing: no document id to reserve (a networked
        // store would take them from its shared counter for nothing).
        keys.documents = 0;
        self.store.read(|t| {
            t.prefetch(&keys)?;
            if let Some(dup) = self.title_match(t, sig, cutoff, None)? {
                return Ok(Some(dup));
            }
            let (Some(fp), Some(sketch)) = (sig.fingerprint, sig.sketch.as_ref()) else {
                return Ok(None);
            };
            let (band_keys, bands) = self.band_key_array(sketch);
            self.content_or_article(t, (fp, sketch, None), sig, &band_keys[..bands], cutoff)
        })
    }

    /// The tiers inside a caller's transaction; check-and-insert is atomic
    /// because the transaction is.
    ///
    /// A title match or a SimHash distance only nominates candidates; a
    /// document is a duplicate when its sketch shows a resemblance to a
    /// live kept document of at least the tier's threshold (or its text is
    /// exactly the same). So a page whose content exists nowhere else is
    /// kept, whatever its title and template.
    pub fn check_in(&self, t: &mut dyn Tables, sig: &Signature, url_tier: UrlTier) -> Result<Verdict> {
        self.check_in_with(t, sig, url_tier, None)
    }

    /// [`Deduper::check_in`] with the document's SimHash candidates found
    /// early ([`Deduper::early_hits`]): the same verdict, which reads the
    /// block lists only where the store cannot bring `early` up to date.
    /// Example: [`EarlyHits`].
    pub fn check_in_with(
        &self,
        t: &mut dyn Tables,
        sig: &Signature,
        url_tier: UrlTier,
        early: Option<&EarlyHits>,
    ) -> Result<Verdict> {
        let now = (self.clock)();
        let cutoff = self.cutoff();
        // One round trip for a networked store; keys a batch already
        // fetched are not fetched again.
        self.prefetch(t, std::slice::from_ref(sig), url_tier)?;
        // A URL the tier cannot key (relative, not http(s)) is said so in
        // the verdict, not skipped silently.
        let url_skipped = url_tier == UrlTier::Check && sig.url_digest.is_none();
        if url_tier == UrlTier::Check
            && let Some(dup) = self.url_match(t, sig, now, cutoff)?
        {
            return Ok(Verdict::Duplicate(dup));
        }
        if let Some(dup) = self.title_match(&*t, sig, cutoff, early)? {
            return Ok(Verdict::Duplicate(Duplicate { url_skipped, ..dup }));
        }
        let (Some(fp), Some(sketch)) = (sig.fingerprint, sig.sketch.as_ref()) else {
            return Ok(Verdict::Unique {
                id: None,
                fingerprint: sig.fingerprint,
                url_skipped,
            });
        };
        // Computed once: looked up now, indexed under if the page is kept.
        let (band_keys, bands) = self.band_key_array(sketch);
        let band_keys = &band_keys[..bands];
        if let Some(dup) = self.content_or_article(&*t, (fp, sketch, early), sig, band_keys, cutoff)? {
            return Ok(Verdict::Duplicate(Duplicate { url_skipped, ..dup }));
        }
        let id = t.next_doc_id()?;
        let rec = DocRecord {
            fingerprint: fp,
            inserted_at: now,
            title: sig.title_digest.map(u128::to_be_bytes),
            sketch: sketch.clone(),
            url: sig.url.clone(),
            article: match sig.article {
                Article::Text(scripts) if self.config.articles => Some(ArticleMark { only: false, scripts }),
                _ => None,
            },
            extent: sig.extent,
        };
        self.index_record(t, id, rec, band_keys.iter().copied())?;
        if let Some(td) = sig.title_digest {
            t.add_title(td, id)?;
        }
        if let Article::Separate {
            fingerprint,
            sketch,
            scripts,
            ..
        } = &sig.article
        {
            self.insert_article(t, sig, (*fingerprint, sketch.as_ref(), *scripts), now)?;
        }
        Ok(Verdict::Unique {
            id: Some(id),
            fingerprint: Some(fp),
            url_skipped,
        })
    }

    fn cutoff(&self) -> u64 {
        match self.config.window {
            Some(w) => (self.clock)().saturating_sub(w.as_secs()),
            None => 0,
        }
    }

    /// Runs `f` in a store transaction, purging expired entries first when
    /// due (see [`Deduper::purge_if_due`]). `f` may run more than once (see
    /// [`Store::write`]).
    fn write<R>(&self, f: impl FnMut(&mut dyn Tables) -> Result<R>) -> Result<R> {
        self.purge_if_due()?;
        self.store.write(f)
    }

    /// Counts about the store.
    pub fn stats(&self) -> Result<StoreStats> {
        self.store.read(|t| {
            Ok(StoreStats {
                documents: t.doc_count()?,
            })
        })
    }

    /// Makes every verdict given so far durable.
    pub fn flush(&self) -> Result<()> {
        self.store.flush()
    }
}
