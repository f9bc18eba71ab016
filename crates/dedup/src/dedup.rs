//! The three tiers behind one API.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::canonical::{CANONICAL_VERSION, CanonicalUrl, Canonicalizer, UrlConfig, UrlError};
use crate::digest::md5_of;
use crate::error::{Error, Result};
use crate::features::{FeatureConfig, Features};
use crate::fingerprint::Fingerprint;
use crate::hash::TOKEN_HASH_NAME;
use crate::index::BlockLayout;
use crate::sketch::{SKETCH_BINS, Sketch};
use crate::store::{DocId, DocRecord, Prefetch, ReadTables, Store, Tables, UrlRecord};

/// Same-title documents the title tier compares with, newest first. Sites
/// have thousands of pages titled "Index" or "插入": comparing with all of
/// them would make every such check slower than the last, and a copy is
/// almost always of a recent page.
pub const TITLE_CANDIDATES: usize = 64;

/// Version of the on-disk layout; bumped when records change shape.
/// Format 2 added the resemblance sketch to every document and the band
/// index; a format-1 store cannot be verified against and is refused.
pub const FORMAT_VERSION: u32 = 2;

/// Entries a purge removes per transaction: bounds how long a purge holds
/// the writer (a crawl's commits wait for it).
pub const PURGE_SLICE: usize = 1024;

/// Candidates from the band index verified per check, newest first: bounds
/// the work a page sharing many bands with a large site costs.
pub const BAND_CANDIDATES: usize = 256;

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

/// Which tier found a duplicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
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
    /// Entries older than this stop counting and are purged (`None`: keep
    /// forever). In config files a duration such as `"7d"`.
    #[serde(with = "window_serde")]
    pub window: Option<Duration>,
    /// How text becomes features.
    pub features: FeatureConfig,
    /// The URL tier: which query parameters are tracking
    /// (`[dedup.url]`).
    pub url: UrlConfig,
}

impl Default for DedupConfig {
    fn default() -> Self {
        DedupConfig {
            blocks: 4,
            max_distance: 3,
            title_policy: TitlePolicy::Confirm,
            min_similarity: DEFAULT_MIN_SIMILARITY,
            title_min_similarity: DEFAULT_TITLE_MIN_SIMILARITY,
            bands: 10,
            band_rows: 4,
            window: None,
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
#[derive(Clone, Debug, PartialEq)]
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
}

impl Signature {
    /// Whether `m` is similar enough to decide for this signature, beyond
    /// the tier's own threshold (checked by the caller).
    fn admits(&self, m: &Match) -> bool {
        match self.min_similarity {
            None => true,
            Some(min) if min >= 1.0 => self.sketch.as_ref().is_some_and(|s| s.same_text(&m.rec.sketch)),
            Some(min) => m.similarity >= min,
        }
    }
}

/// The decision about one document.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Kept and indexed, so later copies match it.
    Unique {
        /// Its number in the store (`None` when the text had no features
        /// and so was not indexed by the content tier).
        id: Option<DocId>,
        /// Its SimHash (`None`: no features).
        fingerprint: Option<Fingerprint>,
    },
    /// A copy of a document seen before.
    Duplicate(Duplicate),
}

impl Verdict {
    /// Whether the document should be dropped.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Verdict::Duplicate(_))
    }
}

/// Why a document was judged a copy.
#[derive(Clone, Debug, PartialEq)]
pub struct Duplicate {
    /// The tier that matched.
    pub tier: Tier,
    /// URL of the kept document it copies.
    pub of: String,
    /// Hamming distance to it (title and content tiers, when both texts had
    /// features).
    pub distance: Option<u32>,
    /// The estimated resemblance to it that decided (title and content
    /// tiers; 1 for an exact copy of the text).
    pub similarity: Option<f64>,
    /// The document's own SimHash, if any.
    pub fingerprint: Option<Fingerprint>,
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

/// Counts about a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreStats {
    /// Documents indexed by the content tier.
    pub documents: u64,
}

/// What a purge removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    /// Documents removed from the title and content tiers.
    pub documents: u64,
    /// URLs removed from the URL tier.
    pub urls: u64,
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
}

impl<S: Store> std::fmt::Debug for Deduper<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deduper")
            .field("store", &self.store)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

const META_PARAMS: &str = "params";

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
    /// [`UrlError::TrackingParam`].
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
        let layout = BlockLayout::new(config.blocks, config.max_distance)?;
        let features = Features::new(config.features.clone())?;
        let canon = Canonicalizer::new(&config.url)?;
        let deduper = Deduper {
            store,
            config,
            features,
            layout,
            canon,
            clock: Arc::new(now_secs),
            last_purge: AtomicU64::new(0),
            extra: Vec::new(),
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

    /// The parameters a store records, one `name=value` per line: every
    /// input that changes a digest, a fingerprint or a sketch, then those
    /// the embedding program added ([`Deduper::with_params`]).
    pub fn params(&self) -> String {
        let (idf, segmenter) = match self.features.config().extractor {
            crate::Extractor::Words => (crate::features::idf_digest(), crate::features::segmenter_id()),
            crate::Extractor::Shingles => ("none", "none"),
        };
        let mut p = format!(
            "format={FORMAT_VERSION}\nbits=64\nblocks={}\nmax_distance={}\nhash={TOKEN_HASH_NAME}\nfeatures={}\nidf={idf}\nsegmenter={segmenter}\nurl_canon={CANONICAL_VERSION}\ntracking={}\nsketch={}\nbands={}x{}\n",
            self.config.blocks,
            self.config.max_distance,
            self.features.describe(),
            self.canon.tracking_digest(),
            crate::sketch::SKETCH_NAME,
            self.config.bands,
            self.config.band_rows,
        );
        for (name, value) in &self.extra {
            p.push_str(name);
            p.push('=');
            p.push_str(value);
            p.push('\n');
        }
        p
    }

    fn check_params(&self) -> Result<()> {
        let wanted = self.params();
        let stored = self.store.write(|t| {
            let stored = t.meta(META_PARAMS)?;
            if stored.is_none() {
                t.set_meta(META_PARAMS, wanted.as_bytes())?;
            }
            Ok(stored)
        })?;
        let Some(stored) = stored else {
            return self.store.flush();
        };
        let stored = String::from_utf8_lossy(&stored).into_owned();
        if stored == wanted {
            return Ok(());
        }
        let parse = |s: &str| -> Vec<(String, String)> {
            s.lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let (old, new) = (parse(&stored), parse(&wanted));
        let path = || {
            self.store
                .location()
                .map(|p| p.to_path_buf())
                .unwrap_or_else(|| "memory".into())
        };
        let stored_format = old
            .iter()
            .find(|(k, _)| k == "format")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        if stored_format != FORMAT_VERSION.to_string() {
            return Err(Error::OldFormat {
                path: path(),
                stored: stored_format,
                current: FORMAT_VERSION,
            });
        }
        // Stores from before the canonical forms had a version record none:
        // version 1. Their URL keys would not match, whatever else agrees.
        let stored_canon = old
            .iter()
            .find(|(k, _)| k == "url_canon")
            .map_or_else(|| "1".to_string(), |(_, v)| v.clone());
        if stored_canon != CANONICAL_VERSION.to_string() {
            return Err(Error::OldUrlKeys {
                path: path(),
                stored: stored_canon,
                current: CANONICAL_VERSION,
            });
        }
        let mut diffs = Vec::new();
        for (k, v) in &new {
            match old.iter().find(|(ok, _)| ok == k) {
                Some((_, ov)) if ov == v => {}
                Some((_, ov)) => diffs.push(format!("{k}: stored {ov}, requested {v}")),
                None => diffs.push(format!("{k}: not stored, requested {v}")),
            }
        }
        for (k, ov) in &old {
            if !new.iter().any(|(nk, _)| nk == k) {
                diffs.push(format!("{k}: stored {ov}, not requested"));
            }
        }
        Err(Error::ParamsMismatch {
            path: path(),
            differences: diffs.join("; "),
        })
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
        self.features.fingerprint(text)
    }

    /// Computes a document's signature; pure CPU work, no store access.
    pub fn sign(&self, doc: &Document<'_>) -> Signature {
        let (fingerprint, features) = self.features.fingerprint_counted(doc.text);
        Signature {
            url: doc.url.to_string(),
            url_digest: self
                .canon
                .parse(doc.url)
                .ok()
                .map(|c| u128::from_be_bytes(c.digest())),
            title_digest: title_digest(doc.title),
            fingerprint,
            sketch: Sketch::of(doc.text),
            features,
            min_similarity: None,
        }
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
                p.blocks.extend(self.layout.keys(fp.0));
                p.bands.extend(self.band_keys(sketch));
                p.documents += 1;
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
        let keys = self.prefetch_keys(std::slice::from_ref(sig), UrlTier::Skip);
        self.store.read(|t| {
            t.prefetch(&keys)?;
            if let Some(dup) = self.title_match(t, sig, cutoff)? {
                return Ok(Some(dup));
            }
            let (Some(fp), Some(sketch)) = (sig.fingerprint, sig.sketch.as_ref()) else {
                return Ok(None);
            };
            let (band_keys, bands) = self.band_key_array(sketch);
            Ok(self
                .content_match(t, fp, sketch, sig, &band_keys[..bands], cutoff)?
                .map(|m| Duplicate {
                    tier: Tier::Content,
                    of: m.rec.url,
                    distance: Some(m.distance),
                    similarity: Some(m.similarity),
                    fingerprint: Some(fp),
                }))
        })
    }

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

    /// The tiers inside a caller's transaction; check-and-insert is atomic
    /// because the transaction is.
    ///
    /// A title match or a SimHash distance only nominates candidates; a
    /// document is a duplicate when its sketch shows a resemblance to a
    /// live kept document of at least the tier's threshold (or its text is
    /// exactly the same). So a page whose content exists nowhere else is
    /// kept, whatever its title and template.
    pub fn check_in(&self, t: &mut dyn Tables, sig: &Signature, url_tier: UrlTier) -> Result<Verdict> {
        let now = (self.clock)();
        let cutoff = self.cutoff();
        // One round trip for a networked store; keys a batch already
        // fetched are not fetched again.
        self.prefetch(t, std::slice::from_ref(sig), url_tier)?;
        if url_tier == UrlTier::Check
            && let Some(d) = sig.url_digest
        {
            match t.url(d)? {
                Some(rec) if rec.first_seen >= cutoff => {
                    return Ok(Verdict::Duplicate(Duplicate {
                        tier: Tier::Url,
                        of: rec.url,
                        distance: None,
                        similarity: None,
                        fingerprint: sig.fingerprint,
                    }));
                }
                _ => t.put_url(
                    d,
                    &UrlRecord {
                        first_seen: now,
                        url: sig.url.clone(),
                    },
                )?,
            }
        }
        if let Some(dup) = self.title_match(&*t, sig, cutoff)? {
            return Ok(Verdict::Duplicate(dup));
        }
        let (Some(fp), Some(sketch)) = (sig.fingerprint, sig.sketch.as_ref()) else {
            return Ok(Verdict::Unique {
                id: None,
                fingerprint: sig.fingerprint,
            });
        };
        // Computed once: looked up now, indexed under if the page is kept.
        let (band_keys, bands) = self.band_key_array(sketch);
        let band_keys = &band_keys[..bands];
        if let Some(m) = self.content_match(&*t, fp, sketch, sig, band_keys, cutoff)? {
            return Ok(Verdict::Duplicate(Duplicate {
                tier: Tier::Content,
                of: m.rec.url,
                distance: Some(m.distance),
                similarity: Some(m.similarity),
                fingerprint: Some(fp),
            }));
        }
        let id = t.next_doc_id()?;
        let rec = DocRecord {
            fingerprint: fp,
            inserted_at: now,
            title: sig.title_digest.map(u128::to_be_bytes),
            sketch: sketch.clone(),
            url: sig.url.clone(),
        };
        t.put_doc(id, rec)?;
        for (table, key) in self.layout.keys(fp.0) {
            t.add_block(table, key, fp, id)?;
        }
        for &key in band_keys {
            t.add_band(key, id)?;
        }
        if let Some(td) = sig.title_digest {
            t.add_title(td, id)?;
        }
        Ok(Verdict::Unique {
            id: Some(id),
            fingerprint: Some(fp),
        })
    }

    /// The LSH band keys of a sketch under this deduper's settings. An
    /// exact copy has the same sketch, so it shares every band (and its
    /// SimHash is at distance 0): it needs no index of its own.
    fn band_keys<'s>(&self, sketch: &'s Sketch) -> impl Iterator<Item = u64> + 's {
        sketch.band_keys(self.config.bands, self.config.band_rows)
    }

    /// [`Deduper::band_keys`] in an array, and how many there are (at
    /// most [`SKETCH_BINS`] bands, checked in `new`): no allocation.
    fn band_key_array(&self, sketch: &Sketch) -> ([u64; SKETCH_BINS], usize) {
        let mut keys = [0u64; SKETCH_BINS];
        let mut n = 0;
        for (slot, key) in keys.iter_mut().zip(self.band_keys(sketch)) {
            *slot = key;
            n += 1;
        }
        (keys, n)
    }

    fn title_match(&self, t: &dyn ReadTables, sig: &Signature, cutoff: u64) -> Result<Option<Duplicate>> {
        let Some(td) = sig.title_digest else {
            return Ok(None);
        };
        if self.config.title_policy == TitlePolicy::Off {
            return Ok(None);
        }
        let mut ids = Vec::new();
        t.title_docs(td, TITLE_CANDIDATES, &mut ids)?;
        let mut best: Option<Match> = None;
        for id in ids {
            let Some(rec) = t.doc(id)? else { continue };
            if rec.inserted_at < cutoff {
                continue;
            }
            let m = Match::new(sig.fingerprint, sig.sketch.as_ref(), rec);
            if !sig.admits(&m) {
                continue;
            }
            if best.as_ref().is_none_or(|b| m.better_than(b)) {
                best = Some(m);
            }
        }
        let Some(best) = best else {
            return Ok(None);
        };
        let is_dup = match self.config.title_policy {
            TitlePolicy::Strict => true,
            TitlePolicy::Confirm => {
                sig.sketch.is_some() && best.similarity >= self.config.title_min_similarity
            }
            TitlePolicy::Off => false,
        };
        Ok(is_dup.then(|| Duplicate {
            tier: Tier::Title,
            distance: sig.fingerprint.map(|_| best.distance),
            similarity: sig.sketch.as_ref().map(|_| best.similarity),
            of: best.rec.url,
            fingerprint: sig.fingerprint,
        }))
    }

    /// The content tier: the most similar verified SimHash candidate
    /// (distance <= k; an exact copy is at 0 and verifies at 1); else the
    /// most similar verified band candidate.
    fn content_match(
        &self,
        t: &dyn ReadTables,
        fp: Fingerprint,
        sketch: &Sketch,
        sig: &Signature,
        band_keys: &[u64],
        cutoff: u64,
    ) -> Result<Option<Match>> {
        let live = |id: DocId| -> Result<Option<DocRecord>> {
            Ok(t.doc(id)?.filter(|rec| rec.inserted_at >= cutoff))
        };
        let mut ids = Vec::new();
        let min = self.config.min_similarity;
        let mut best: Option<Match> = None;
        let mut checked = rustc_hash::FxHashSet::default();
        for (_, id) in self.hits(t, fp)? {
            checked.insert(id);
            if let Some(rec) = live(id)? {
                let m = Match::new(Some(fp), Some(sketch), rec);
                if m.similarity >= min && sig.admits(&m) && best.as_ref().is_none_or(|b| m.better_than(b)) {
                    best = Some(m);
                }
            }
        }
        // An exact copy is at SimHash distance 0: the bands add nothing.
        let exact = sig.min_similarity.is_some_and(|m| m >= 1.0);
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
            if let Some(rec) = live(id)? {
                let m = Match::new(Some(fp), Some(sketch), rec);
                if m.similarity >= min && sig.admits(&m) && best.as_ref().is_none_or(|b| m.better_than(b)) {
                    best = Some(m);
                }
            }
        }
        Ok(best)
    }

    /// Every stored fingerprint within the maximum distance of `fp`, nearest
    /// first, as (distance, URL). A read-only query: it never waits for
    /// writers on redb.
    pub fn near(&self, fp: Fingerprint) -> Result<Vec<(u32, String)>> {
        let cutoff = self.cutoff();
        let keys = Prefetch {
            blocks: self.layout.keys(fp.0).collect(),
            ..Prefetch::default()
        };
        self.store.read(|t| {
            t.prefetch(&keys)?;
            let mut out = Vec::new();
            for (d, id) in self.hits(t, fp)? {
                if let Some(rec) = t.doc(id)?
                    && rec.inserted_at >= cutoff
                {
                    out.push((d, rec.url));
                }
            }
            Ok(out)
        })
    }

    /// (distance, id) of every stored fingerprint within the maximum
    /// distance, nearest first, verified by exact distance.
    fn hits(&self, t: &dyn ReadTables, fp: Fingerprint) -> Result<Vec<(u32, DocId)>> {
        let keys: Vec<(usize, u64)> = self.layout.keys(fp.0).collect();
        let mut hits = Vec::new();
        t.near_all(&keys, fp, self.layout.max_distance(), &mut hits)?;
        hits.sort_unstable();
        hits.dedup();
        Ok(hits)
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

    /// Purges expired entries when a window is set and the last purge is
    /// over a minute old; otherwise does nothing. The checking methods call
    /// it themselves; callers that check inside their own transactions
    /// ([`Deduper::check_in`]) call it between transactions.
    pub fn purge_if_due(&self) -> Result<Purged> {
        if self.config.window.is_none() {
            return Ok(Purged::default());
        }
        let now = (self.clock)();
        let last = self.last_purge.load(Ordering::Relaxed);
        if now >= last + 60
            && self
                .last_purge
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return self.purge_expired();
        }
        Ok(Purged::default())
    }

    /// Removes entries older than the window from all tiers (nothing when no
    /// window is set). Runs by itself at most once a minute; call it to
    /// purge at a moment of your choosing.
    pub fn purge_expired(&self) -> Result<Purged> {
        let Some(_) = self.config.window else {
            return Ok(Purged::default());
        };
        let cutoff = self.cutoff();
        let mut purged = Purged::default();
        loop {
            let removed = self.store.write(|t| {
                let mut oldest = Vec::new();
                t.oldest_docs(PURGE_SLICE, &mut oldest)?;
                let mut removed = 0u64;
                for (id, rec) in oldest {
                    if rec.inserted_at >= cutoff {
                        break;
                    }
                    for (table, key) in self.layout.keys(rec.fingerprint.0) {
                        t.remove_block(table, key, rec.fingerprint, id)?;
                    }
                    if let Some(title) = rec.title {
                        t.remove_title(u128::from_be_bytes(title), id)?;
                    }
                    for key in self.band_keys(&rec.sketch) {
                        t.remove_band(key, id)?;
                    }
                    t.remove_doc(id)?;
                    removed += 1;
                }
                Ok(removed)
            })?;
            purged.documents += removed;
            if removed < PURGE_SLICE as u64 {
                break;
            }
        }
        // URLs in slices, each its own transaction, read from the first-seen
        // index: a purge touches only expired URLs and never holds the
        // writer for long, however many URLs are live.
        loop {
            let (seen, removed) = self.store.write(|t| {
                let mut expired = Vec::new();
                t.urls_seen_before(cutoff, PURGE_SLICE, &mut expired)?;
                let mut removed = 0u64;
                for digest in &expired {
                    if t.remove_url(*digest)? {
                        removed += 1;
                    }
                }
                Ok((expired.len(), removed))
            })?;
            purged.urls += removed;
            if seen < PURGE_SLICE {
                break;
            }
        }
        Ok(purged)
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

/// A stored document compared with the one being checked.
struct Match {
    rec: DocRecord,
    /// Estimated resemblance (0 when the checked document has no sketch).
    similarity: f64,
    /// SimHash distance (`u32::MAX` when it has no fingerprint).
    distance: u32,
}

impl Match {
    fn new(fp: Option<Fingerprint>, sketch: Option<&Sketch>, rec: DocRecord) -> Match {
        Match {
            similarity: sketch.map_or(0.0, |s| s.resemblance(&rec.sketch)),
            distance: fp.map_or(u32::MAX, |f| f.distance(rec.fingerprint)),
            rec,
        }
    }

    /// More similar first, then nearer by SimHash.
    fn better_than(&self, other: &Match) -> bool {
        (self.similarity, std::cmp::Reverse(self.distance))
            > (other.similarity, std::cmp::Reverse(other.distance))
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
