//! Python bindings of simcrawl: the `simcrawl._simcrawl` extension module
//! behind the `simcrawl` wheel (`python/simcrawl/__init__.py` re-exports it,
//! `python/simcrawl/scrapy.py` builds the Scrapy integration on it).
//!
//! Every method that does real work (cleaning HTML, segmenting and hashing
//! text, a store transaction) releases the GIL, so Python threads sharing
//! one [`PyDeduper`] run their checks in parallel; check-and-insert stays
//! atomic because each check is one store transaction.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde::Deserialize;
use simcrawl_clean::template::{TemplateConfig, TemplateLearner, TextBlocks};
use simcrawl_clean::{ChineseVariant, CleanConfig, Cleaner};
use simcrawl_dedup::identity::{identity_of, sign_page};
use simcrawl_dedup::{
    CanonicalUrl, Canonicalizer, DedupConfig, Deduper, Document, Fingerprint, MemoryStore, RedbStore,
    Store as _, Tier, UrlTier, UrlVerdict, Verdict,
};

create_exception!(
    simcrawl,
    SimcrawlError,
    PyException,
    "An error of simcrawl's Rust core (invalid settings or URL, a store that is locked, \
     built with other settings or corrupt); the message is the Rust error's."
);

/// The store file inside a `path` directory: the name the `crawl` binary
/// uses. The two do not share a directory yet: the binary records the
/// versions of its own records, which a Deduper does not, so each refuses
/// the other's index with a message naming those parameters (never a
/// silent mix). Both record the digest of their `[clean]` settings
/// ([`CleanConfig::digest`], parameter `clean`).
const STORE_FILE: &str = "index.redb";

/// The `[clean] convert_chinese` default of the wheels that recorded no
/// `[clean]` digest (before the Taiwan vocabulary default, issue 35).
const FORMER_CHINESE_DEFAULT: ChineseVariant = ChineseVariant::T2s;

/// Opens (or creates) the index in `dir` for `clean`, recording the
/// digest of the `[clean]` settings in a new index and refusing one built
/// under another. An index of an earlier wheel recorded none: it is opened
/// as before, and when `chinese_given` is false it keeps the Chinese
/// profile those wheels defaulted to (the second value says so, for a
/// warning), since the default changed and a silent change would sign its
/// Taiwan pages apart from their earlier copies.
fn open_index(
    dir: &Path,
    dedup: DedupConfig,
    clean: &mut CleanConfig,
    chinese_given: bool,
) -> Result<(Deduper<RedbStore>, bool), String> {
    let db = RedbStore::open(dir.join(STORE_FILE)).map_err(|e| e.to_string())?;
    let recorded = |name| Deduper::recorded_param(&db, name).map_err(|e| e.to_string());
    if recorded("format")?.is_some() && recorded("clean")?.is_none() {
        let adopted = !chinese_given && clean.convert_chinese != FORMER_CHINESE_DEFAULT;
        if adopted {
            clean.convert_chinese = FORMER_CHINESE_DEFAULT;
        }
        return Ok((Deduper::new(db, dedup).map_err(|e| e.to_string())?, adopted));
    }
    let digest = clean
        .digest()
        .map_err(|e| format!("cannot serialize the [clean] settings: {e}"))?;
    let d = Deduper::with_params(db, dedup, &[("clean", &digest)]).map_err(|e| e.to_string())?;
    Ok((d, false))
}

/// A Rust error as a Python `SimcrawlError`, with the full message.
fn py_err(e: impl std::fmt::Display) -> PyErr {
    SimcrawlError::new_err(e.to_string())
}

/// The settings a `Deduper` takes: the `[dedup]` and `[clean]` tables of
/// `config/crawl.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Settings {
    dedup: DedupConfig,
    clean: CleanConfig,
    /// Whether `clean.convert_chinese` (or its former name) was given,
    /// rather than left to the default ([`open_index`]).
    #[serde(skip)]
    chinese_given: bool,
    // The crawl binary's own tables: accepted (and ignored) so that one
    // crawl.toml configures both, while a misspelt table is still an error.
    store: Option<serde::de::IgnoredAny>,
    fetch: Option<serde::de::IgnoredAny>,
    crawl: Option<serde::de::IgnoredAny>,
    template: Option<serde::de::IgnoredAny>,
    redis: Option<serde::de::IgnoredAny>,
    output: Option<serde::de::IgnoredAny>,
    revisit: Option<serde::de::IgnoredAny>,
}

/// Whether a `[clean]` table holding the keys `has` says names the Chinese
/// profile, under its name or its former one (`chinese_variant`).
fn names_chinese_profile(has: impl Fn(&str) -> bool) -> bool {
    has("convert_chinese") || has("chinese_variant")
}

impl Settings {
    /// Reads a TOML file; relative paths in it (stop words) are resolved
    /// from the file's directory when they do not exist from the current
    /// one, as the crawl binary does.
    fn from_file(path: &Path) -> Result<Settings, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
        let mut settings: Settings =
            toml::from_str(&text).map_err(|e| format!("invalid config file {}: {e}", path.display()))?;
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| format!("invalid config file {}: {e}", path.display()))?;
        settings.chinese_given = table
            .get("clean")
            .and_then(|c| c.as_table())
            .is_some_and(|c| names_chinese_profile(|k| c.contains_key(k)));
        let base = path.parent().unwrap_or(Path::new("."));
        if let Some(sw) = &settings.dedup.features.stop_words
            && sw.is_relative()
            && !sw.exists()
        {
            settings.dedup.features.stop_words = Some(base.join(sw));
        }
        Ok(settings)
    }

    /// Reads the `config` argument: `None`, a path to a TOML file, or a
    /// dict shaped like the file (`{"dedup": {...}, "clean": {...}}`).
    fn from_py(config: Option<&Bound<'_, PyAny>>) -> PyResult<Settings> {
        let Some(config) = config.filter(|c| !c.is_none()) else {
            return Ok(Settings::default());
        };
        if config.is_instance_of::<PyDict>() {
            // A dict goes through JSON: one serde path for both forms, and
            // the same unknown-key and type errors as the file gives.
            let json: String = config
                .py()
                .import("json")?
                .call_method1("dumps", (config,))?
                .extract()?;
            let mut settings: Settings =
                serde_json::from_str(&json).map_err(|e| py_err(format!("invalid config: {e}")))?;
            let value: serde_json::Value =
                serde_json::from_str(&json).map_err(|e| py_err(format!("invalid config: {e}")))?;
            settings.chinese_given = value
                .get("clean")
                .and_then(|c| c.as_object())
                .is_some_and(|c| names_chinese_profile(|k| c.contains_key(k)));
            return Ok(settings);
        }
        let path: PathBuf = config.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(
                "config must be None, a dict or the path of a TOML file (str or os.PathLike)",
            )
        })?;
        Settings::from_file(&path).map_err(py_err)
    }
}

/// The deduper over either store; the methods are generic over the store,
/// so each call dispatches once here.
enum Store {
    Memory(Deduper<MemoryStore>),
    Redb(Deduper<RedbStore>),
}

macro_rules! on_store {
    ($store:expr, $d:ident => $body:expr) => {
        match $store {
            Store::Memory($d) => $body,
            Store::Redb($d) => $body,
        }
    };
}

mod spark;

/// Counts of this object's verdicts since it was opened (the store's own
/// counts survive reopening; these are per process).
#[derive(Default)]
struct Counters {
    checked: AtomicU64,
    kept: AtomicU64,
    duplicate_url: AtomicU64,
    duplicate_title: AtomicU64,
    duplicate_content: AtomicU64,
    urls_new: AtomicU64,
}

impl Counters {
    fn duplicate(&self, tier: Tier) {
        let c = match tier {
            Tier::Url => &self.duplicate_url,
            Tier::Title => &self.duplicate_title,
            // Tier is non_exhaustive: a tier added later counts as content.
            _ => &self.duplicate_content,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// A fingerprint given from Python: the hex form of the output files and
/// `Deduper.fingerprint` (16 digits, or 32 at 128 bits), or an int (one
/// beyond 64 bits is a 128-bit fingerprint).
#[derive(FromPyObject)]
enum FingerprintArg {
    Int(u64),
    Wide(u128),
    Hex(String),
}

impl FingerprintArg {
    fn get(&self) -> PyResult<Fingerprint> {
        match self {
            FingerprintArg::Int(v) => Ok(Fingerprint::new(*v)),
            FingerprintArg::Wide(v) => Ok(Fingerprint::wide(*v)),
            FingerprintArg::Hex(s) => s
                .parse()
                .map_err(|e| py_err(format!("invalid fingerprint {s:?}: {e}"))),
        }
    }
}

/// The decision about a page or a URL.
#[pyclass(frozen, get_all, name = "Verdict", module = "simcrawl")]
#[derive(Clone, Debug)]
struct PyVerdict {
    /// The URL that was checked.
    url: String,
    /// Kept (new): indexed, so later copies match it.
    kept: bool,
    /// The tier that found the duplicate: "url", "title" or "content"
    /// (None when kept).
    tier: Option<String>,
    /// The URL of the kept page (or first URL) it duplicates.
    duplicate_of: Option<String>,
    /// SimHash distance to the kept page (title and content tiers).
    distance: Option<u32>,
    /// Estimated resemblance to the kept page, 0 to 1 (title and content
    /// tiers; 1.0 for an exact copy of the text).
    similarity: Option<f64>,
    /// The page's own SimHash as 16 hex digits, 32 at 128 bits (None: no text features).
    fingerprint: Option<String>,
    /// The canonical form of the URL (check_url only).
    canonical: Option<String>,
}

#[pymethods]
impl PyVerdict {
    /// Whether the page or URL should be dropped (not kept).
    #[getter]
    fn duplicate(&self) -> bool {
        !self.kept
    }

    fn __repr__(&self) -> String {
        if self.kept {
            return format!("Verdict(kept, url={:?})", self.url);
        }
        let mut s = format!(
            "Verdict(duplicate, tier={}, url={:?}, duplicate_of={:?}",
            self.tier.as_deref().unwrap_or("?"),
            self.url,
            self.duplicate_of.as_deref().unwrap_or("")
        );
        if let Some(sim) = self.similarity {
            s.push_str(&format!(", similarity={sim:.3}"));
        }
        if let Some(d) = self.distance {
            s.push_str(&format!(", distance={d}"));
        }
        s.push(')');
        s
    }
}

impl PyVerdict {
    fn from_verdict(url: &str, v: Verdict) -> PyVerdict {
        match v {
            Verdict::Duplicate(d) => PyVerdict {
                url: url.to_string(),
                kept: false,
                tier: Some(d.tier.as_str().to_string()),
                duplicate_of: Some(d.of),
                distance: d.distance,
                similarity: d.similarity,
                fingerprint: d.fingerprint.map(|f| f.to_string()),
                canonical: None,
            },
            // Verdict is non_exhaustive: anything but a duplicate is kept.
            kept => PyVerdict {
                url: url.to_string(),
                kept: true,
                tier: None,
                duplicate_of: None,
                distance: None,
                similarity: None,
                fingerprint: kept.fingerprint().map(|f| f.to_string()),
                canonical: None,
            },
        }
    }

    fn from_url_verdict(url: &str, v: UrlVerdict) -> PyVerdict {
        let (canonical, first) = match v {
            UrlVerdict::Seen { canonical, first } => (canonical, Some(first)),
            // UrlVerdict is non_exhaustive: anything but Seen is new.
            other => (other.canonical().clone(), None),
        };
        PyVerdict {
            url: url.to_string(),
            kept: first.is_none(),
            tier: first.as_ref().map(|_| "url".to_string()),
            duplicate_of: first,
            distance: None,
            similarity: None,
            fingerprint: None,
            canonical: Some(canonical.as_str().to_string()),
        }
    }
}

/// A cleaned page: its title and main text as the page wrote them (what a
/// spider stores, indexes or trains on), and as the title and content tiers
/// compared them (normalized: for comparing only).
#[pyclass(frozen, get_all, name = "Page", module = "simcrawl")]
#[derive(Clone, Debug)]
struct PyPage {
    /// The title as the page shows it, whitespace collapsed.
    title: String,
    /// The same as `title`: the name it had when `title` was the normalized
    /// one, kept so that code written then still reads the page's own title.
    raw_title: String,
    /// The title as the title tier compares it (width, case, traditional to
    /// simplified Chinese).
    title_normalized: String,
    /// The main text as the page wrote it (site template left out), one
    /// block per line, whitespace collapsed.
    text: String,
    /// The main text as the content tier signs it (normalized like the title).
    text_normalized: String,
    /// `<link rel=canonical>`, resolved, if any.
    canonical: Option<String>,
    /// Every http(s) link of the page, resolved.
    links: Vec<String>,
    /// The encoding the bytes were decoded with (e.g. "UTF-8", "GBK").
    encoding: String,
    /// `<meta name=robots>` says noindex.
    noindex: bool,
    /// `<meta name=robots>` says nofollow.
    nofollow: bool,
}

#[pymethods]
impl PyPage {
    fn __repr__(&self) -> String {
        format!(
            "Page(title={:?}, text={} chars, links={}, encoding={})",
            self.title,
            self.text.chars().count(),
            self.links.len(),
            self.encoding
        )
    }
}

/// Three-tier deduplication: URL (canonical URL), title, and near-duplicate
/// content (SimHash and MinHash candidates verified by resemblance).
///
/// `Deduper(path=None, config=None)`: `path` is a directory holding the
/// persistent store (`index.redb`; created if missing), or None to keep
/// everything in memory. `config` is None (defaults), a dict shaped like
/// crawl.toml (`{"dedup": {...}, "clean": {...}}`) or the path of such a TOML
/// file. One Deduper can be shared by threads: checks release the GIL and
/// each is one atomic store transaction.
#[pyclass(frozen, name = "Deduper", module = "simcrawl")]
struct PyDeduper {
    /// `None` once closed. Checks hold the read lock (they run
    /// concurrently; the store serializes its own writes); `close` takes
    /// the write lock, so it waits for checks in flight.
    inner: RwLock<Option<Store>>,
    cleaner: Cleaner,
    /// Each host's template as learnt from the pages `check_html` was given,
    /// in memory (a reopened store starts learning again): its lines are
    /// left out of the texts a page is judged on, as the crawler does.
    templates: RwLock<TemplateLearner>,
    path: Option<PathBuf>,
    counters: Counters,
}

impl PyDeduper {
    /// Runs `f` on the open store without the GIL.
    fn run<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Store) -> Result<R, String> + Send,
    ) -> PyResult<R> {
        py.detach(|| {
            let guard = self.inner.read();
            match guard.as_ref() {
                Some(store) => f(store),
                None => Err("this Deduper is closed".to_string()),
            }
        })
        .map_err(SimcrawlError::new_err)
    }

    fn count(&self, v: &PyVerdict) {
        self.counters.checked.fetch_add(1, Ordering::Relaxed);
        match v.tier.as_deref() {
            None => self.counters.kept.fetch_add(1, Ordering::Relaxed),
            Some("url") => self.counters.duplicate_url.fetch_add(1, Ordering::Relaxed),
            Some("title") => self.counters.duplicate_title.fetch_add(1, Ordering::Relaxed),
            Some(_) => self.counters.duplicate_content.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// A cleaned page checked on its identity, as the crawler and `crawl
    /// dedup` judge an `html` line ([`simcrawl_dedup::identity`]): on its
    /// main text when that is what it says, else on everything it shows
    /// (at a stricter resemblance when that is little), with its article
    /// for copies inside other sites' templates and its extent for pages
    /// of one site that share a block. Its host's template, as learnt from
    /// the pages before it, is left out; the page is then learnt from.
    fn check_page(
        store: &Store,
        templates: &RwLock<TemplateLearner>,
        (url, parsed): (&str, &url::Url),
        page: &simcrawl_clean::Page,
        url_tier: bool,
    ) -> Result<Verdict, String> {
        let host = parsed.host_str().unwrap_or("");
        // Its own text, or its message when framed (`Page::judged_own`).
        let judged_own = page.judged_own();
        // The blocks are digested outside the lock (checks on other
        // threads read the learner meanwhile), the own text's once for
        // stripping and learning.
        let own = TextBlocks::of(&page.own_text);
        let id = identity_of(url, &page.text, judged_own, |t| {
            let blocks = TextBlocks::of_known(t, Some(&own));
            let template = templates.read().template_of(host, &blocks)?;
            Some(blocks.without(&template))
        });
        templates.write().observe_blocks(host, &own.page_blocks());
        let tier = if url_tier { UrlTier::Check } else { UrlTier::Skip };
        let verdicts = on_store!(store, d => {
            let sig = sign_page(d, (url, &page.title), &id, judged_own.0);
            d.check_batch(std::slice::from_ref(&sig), tier)
        });
        verdicts
            .map_err(|e| e.to_string())?
            .pop()
            .ok_or_else(|| "internal error: no verdict".to_string())
    }

    fn check_doc(store: &Store, doc: &Document<'_>, url_tier: bool) -> Result<Verdict, String> {
        let r = on_store!(store, d => if url_tier { d.check(doc) } else { d.check_content(doc) });
        r.map_err(|e| e.to_string())
    }
}

/// Where [`PyDeduper::check_key`] records a key: a URL under `.invalid`
/// (RFC 2606: never a real host), so the URL tier digests it as it digests
/// canonical URLs, and no canonical URL shares its digest.
const KEY_URL_PREFIX: &str = "http://key.simcrawl.invalid/";

/// The longest key `check_key` takes (Scrapy's fingerprints are 20 bytes).
const MAX_KEY_BYTES: usize = 1024;

/// `canon` is the deduper's: the form must be made under its settings.
fn key_url(canon: &Canonicalizer, key: &[u8]) -> Result<CanonicalUrl, String> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Err(format!(
            "a key must have 1 to {MAX_KEY_BYTES} bytes, not {}",
            key.len()
        ));
    }
    let mut url = String::with_capacity(KEY_URL_PREFIX.len() + 2 * key.len());
    url.push_str(KEY_URL_PREFIX);
    for b in key {
        url.push_str(&format!("{b:02x}"));
    }
    canon.parse(&url).map_err(|e| e.to_string())
}

fn parse_url(url: &str) -> PyResult<url::Url> {
    url::Url::parse(url).map_err(|e| py_err(format!("invalid URL {url:?}: {e}")))
}

#[pymethods]
impl PyDeduper {
    #[new]
    #[pyo3(signature = (path=None, config=None))]
    fn new(py: Python<'_>, path: Option<PathBuf>, config: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let settings = Settings::from_py(config)?;
        let Settings {
            dedup,
            mut clean,
            chinese_given,
            ..
        } = settings;
        let (store, cleaner, adopted) = py
            .detach(|| -> Result<_, String> {
                // Building the cleaner loads OpenCC, the deduper jieba:
                // both take a while, and neither needs the GIL.
                let (store, adopted) = match &path {
                    None => (
                        Store::Memory(Deduper::new(MemoryStore::new(), dedup).map_err(|e| e.to_string())?),
                        false,
                    ),
                    Some(dir) => {
                        let (d, adopted) = open_index(dir, dedup, &mut clean, chinese_given)?;
                        (Store::Redb(d), adopted)
                    }
                };
                let cleaner = Cleaner::new(clean).map_err(|e| e.to_string())?;
                Ok((store, cleaner, adopted))
            })
            .map_err(SimcrawlError::new_err)?;
        if adopted {
            let msg = format!(
                "simcrawl: the index in {} was built by an earlier version, which recorded no [clean] \
                 settings and converted Chinese with t2s: keeping t2s for it (the default is now \
                 t2s_tw, which also folds Taiwan vocabulary; give clean.convert_chinese to choose, \
                 or start a new index to use it)",
                path.as_deref().unwrap_or(Path::new("")).display()
            );
            py.import("warnings")?.call_method1("warn", (msg,))?;
        }
        Ok(PyDeduper {
            inner: RwLock::new(Some(store)),
            cleaner,
            templates: RwLock::new(
                TemplateLearner::new(TemplateConfig::default())
                    .map_err(|e| SimcrawlError::new_err(e.to_string()))?,
            ),
            path,
            counters: Counters::default(),
        })
    }

    /// The store directory, or None for an in-memory Deduper.
    #[getter]
    fn path(&self) -> Option<String> {
        self.path.as_ref().map(|p| p.to_string_lossy().into_owned())
    }

    /// Whether close() was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.read().is_none()
    }

    /// The URL tier: records the canonical URL (lower-case scheme and host,
    /// no default port, no fragment, tracking parameters such as utm_* and
    /// spm removed, query sorted) and says whether it was seen before.
    /// Raises SimcrawlError for a URL that is not absolute http(s).
    fn check_url(&self, py: Python<'_>, url: String) -> PyResult<PyVerdict> {
        let v = self.run(py, |s| {
            let v = on_store!(s, d => d.check_url(&url)).map_err(|e| e.to_string())?;
            Ok(PyVerdict::from_url_verdict(&url, v))
        })?;
        if v.kept {
            self.counters.urls_new.fetch_add(1, Ordering::Relaxed);
        } else {
            self.counters.duplicate(Tier::Url);
        }
        Ok(v)
    }

    /// The canonical form of a URL as this Deduper's URL tier keys it (its
    /// `[dedup.url]` tracking parameters removed). Raises SimcrawlError for
    /// a URL that is not absolute http(s).
    fn canonical_url(&self, py: Python<'_>, url: String) -> PyResult<String> {
        self.run(py, |s| {
            on_store!(s, d => d.canonicalizer().parse(&url))
                .map(|c| c.as_str().to_string())
                .map_err(|e| e.to_string())
        })
    }

    /// The URL tier for requests a URL does not identify (a form post, a
    /// request with a body, a scheme other than http(s)): records an opaque
    /// key, such as Scrapy's request fingerprint, with the URL it came from,
    /// and says whether it was seen (tier "url", duplicate_of that first
    /// URL). Keys live in the URL tier's table, persistent and windowed as
    /// URLs are, under digests no URL can have.
    fn check_key(&self, py: Python<'_>, key: &[u8], url: String) -> PyResult<PyVerdict> {
        let v = self.run(py, |s| {
            let canonical = on_store!(s, d => key_url(d.canonicalizer(), key))?;
            let v = on_store!(s, d => d
                .purge_if_due()
                .and_then(|_| d.store().write(|t| d.check_url_in(t, &url, canonical.clone()))))
            .map_err(|e| e.to_string())?;
            let mut v = PyVerdict::from_url_verdict(&url, v);
            v.canonical = None;
            Ok(v)
        })?;
        if v.kept {
            self.counters.urls_new.fetch_add(1, Ordering::Relaxed);
        } else {
            self.counters.duplicate(Tier::Url);
        }
        Ok(v)
    }

    /// Checks a page from its parts: URL tier (unless url_tier=False: for
    /// crawlers whose frontier already applied check_url), then title, then
    /// content. A kept page is indexed, so later copies match it.
    ///
    /// The title and text are normalized first (width, case, traditional to
    /// simplified Chinese, tags and control characters; the text capped at
    /// `clean.max_text_bytes`), exactly as `crawl dedup` normalizes the
    /// `title` and `text` of its input lines, so both keep the same pages.
    /// normalize=False takes them as given (e.g. a Page from clean()).
    #[pyo3(signature = (url, title, text, *, url_tier=true, normalize=true))]
    fn check(
        &self,
        py: Python<'_>,
        url: String,
        title: String,
        text: String,
        url_tier: bool,
        normalize: bool,
    ) -> PyResult<PyVerdict> {
        let cleaner = &self.cleaner;
        let v = self.run(py, |s| {
            let v = if normalize {
                let (title, text) = (cleaner.normalize_title(&title), cleaner.normalize_text(&text));
                Self::check_doc(s, &Document::new(&url, &title, &text), url_tier)?
            } else {
                Self::check_doc(s, &Document::new(&url, &title, &text), url_tier)?
            };
            Ok(PyVerdict::from_verdict(&url, v))
        })?;
        self.count(&v);
        Ok(v)
    }

    /// Cleans an HTML page (decodes it by its content type, meta tags or
    /// content; keeps the main content; folds width, case and traditional
    /// to simplified Chinese) and checks it as `crawl dedup` checks an
    /// `html` line: on its main text when that is what the page says, else
    /// on everything it shows outside declared template, with the rules
    /// that keep a page of a site that only shares a block with another
    /// (its extent) and find a story inside another site's template (its
    /// article). Each host's template is learnt from the pages given, in
    /// this object's memory, and left out of the texts compared.
    #[pyo3(signature = (url, html, content_type=None, *, url_tier=true))]
    fn check_html(
        &self,
        py: Python<'_>,
        url: String,
        html: &[u8],
        content_type: Option<String>,
        url_tier: bool,
    ) -> PyResult<PyVerdict> {
        let parsed = parse_url(&url)?;
        let cleaner = &self.cleaner;
        let v = self.run(py, |s| {
            let page = cleaner
                .parse(html, content_type.as_deref(), &parsed)
                .map_err(|e| e.to_string())?;
            let v = Self::check_page(s, &self.templates, (&url, &parsed), &page, url_tier)?;
            Ok(PyVerdict::from_verdict(&url, v))
        })?;
        self.count(&v);
        Ok(v)
    }

    /// Cleans an HTML page without checking it: its title and text as
    /// written, and as the tiers would see them (`title_normalized`,
    /// `text_normalized`).
    #[pyo3(signature = (url, html, content_type=None))]
    fn clean(
        &self,
        py: Python<'_>,
        url: String,
        html: &[u8],
        content_type: Option<String>,
    ) -> PyResult<PyPage> {
        let parsed = parse_url(&url)?;
        let cleaner = &self.cleaner;
        let page = py
            .detach(|| cleaner.parse(html, content_type.as_deref(), &parsed))
            .map_err(py_err)?;
        Ok(PyPage {
            title: page.raw_title.clone(),
            raw_title: page.raw_title,
            title_normalized: page.title,
            text: page.raw_text,
            text_normalized: page.text,
            canonical: page.canonical.map(String::from),
            links: page.links.into_iter().map(|l| String::from(l.url)).collect(),
            encoding: page.encoding.to_string(),
            noindex: page.meta_noindex,
            nofollow: page.meta_nofollow,
        })
    }

    /// The 64-bit SimHash of a text under this Deduper's feature settings,
    /// as 16 hex digits (32 at 128 bits); None when the text has no features (no words).
    fn fingerprint(&self, py: Python<'_>, text: String) -> PyResult<Option<String>> {
        self.run(py, |s| {
            Ok(on_store!(s, d => d.fingerprint(&text)).map(|f| f.to_string()))
        })
    }

    /// Hamming distance between two fingerprints (hex strings or ints).
    #[staticmethod]
    fn distance(a: FingerprintArg, b: FingerprintArg) -> PyResult<u32> {
        Ok(a.get()?.distance(b.get()?))
    }

    /// Every stored page whose fingerprint is within max_distance of this
    /// one, nearest first, as (distance, url) pairs. Read-only.
    fn near(&self, py: Python<'_>, fingerprint: FingerprintArg) -> PyResult<Vec<(u32, String)>> {
        let fp = fingerprint.get()?;
        self.run(py, |s| on_store!(s, d => d.near(fp)).map_err(|e| e.to_string()))
    }

    /// Counts: `documents` in the store (all runs), and this object's
    /// verdicts since it was opened: `checked`, `kept`, `duplicate_title`,
    /// `duplicate_content`, `duplicate_url` (check and check_url) and
    /// `urls_new` (check_url).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let documents = self.run(py, |s| {
            on_store!(s, d => d.stats())
                .map(|st| st.documents)
                .map_err(|e| e.to_string())
        })?;
        let c = &self.counters;
        let out = PyDict::new(py);
        out.set_item("documents", documents)?;
        for (name, v) in [
            ("checked", &c.checked),
            ("kept", &c.kept),
            ("duplicate_url", &c.duplicate_url),
            ("duplicate_title", &c.duplicate_title),
            ("duplicate_content", &c.duplicate_content),
            ("urls_new", &c.urls_new),
        ] {
            out.set_item(name, v.load(Ordering::Relaxed))?;
        }
        Ok(out)
    }

    /// Makes every verdict so far durable (a persistent store also syncs by
    /// itself about once a second, and on close).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |s| on_store!(s, d => d.flush()).map_err(|e| e.to_string()))
    }

    /// Flushes and releases the store (its file can then be opened again,
    /// by this process or another). Later calls raise SimcrawlError;
    /// closing twice is allowed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            // Waits for checks in flight (they hold the read lock).
            let store = self.inner.write().take();
            match store {
                Some(s) => on_store!(&s, d => d.flush()).map_err(|e| e.to_string()),
                None => Ok(()),
            }
        })
        .map_err(SimcrawlError::new_err)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { ", closed" } else { "" };
        match &self.path {
            Some(p) => format!("Deduper(path={:?}{state})", p.display().to_string()),
            None => format!("Deduper(in memory{state})"),
        }
    }
}

impl Drop for PyDeduper {
    /// A Deduper dropped without close() still makes its verdicts durable:
    /// the store commits most transactions without an fsync.
    fn drop(&mut self) {
        if let Some(s) = self.inner.get_mut().take()
            && let Err(e) = on_store!(&s, d => d.flush())
        {
            eprintln!("simcrawl: cannot flush the store on drop: {e}");
        }
    }
}

/// Hamming distance between two fingerprints (hex strings or ints).
#[pyfunction]
fn distance(a: FingerprintArg, b: FingerprintArg) -> PyResult<u32> {
    Ok(a.get()?.distance(b.get()?))
}

/// The canonical form of a URL, as the URL tier keys it under the default
/// settings (`Deduper.canonical_url` applies a Deduper's own). Raises
/// SimcrawlError for a URL that is not absolute http(s).
#[pyfunction]
fn canonical_url(url: &Bound<'_, PyString>) -> PyResult<String> {
    let url = url.to_cow()?;
    simcrawl_dedup::CanonicalUrl::parse(&url)
        .map(|c| c.as_str().to_string())
        .map_err(py_err)
}

/// The module: `simcrawl/__init__.py` re-exports its names.
#[pymodule]
fn _simcrawl(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDeduper>()?;
    m.add_class::<PyVerdict>()?;
    m.add_class::<PyPage>()?;
    m.add_class::<spark::PySigner>()?;
    m.add_class::<spark::PyJudge>()?;
    m.add_function(wrap_pyfunction!(distance, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_url, m)?)?;
    m.add("SimcrawlError", m.py().get_type::<SimcrawlError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn settings_read_the_bundled_crawl_toml() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/crawl.toml");
        let s = Settings::from_file(&path).unwrap();
        // The file documents the defaults (the stop words are the bundled
        // list unless a file is named).
        assert_eq!(s.dedup, DedupConfig::default());
        assert_eq!(s.clean, CleanConfig::default());
    }

    /// An index of an earlier wheel (no `clean` recorded) keeps the former
    /// Chinese default unless the settings name one; a new index records
    /// its `[clean]` digest and refuses other settings, naming `clean`.
    #[test]
    fn indexes_record_their_clean_settings_and_old_ones_keep_t2s() {
        let dir = tempfile::tempdir().unwrap();
        // As the earlier wheels opened it.
        let db = RedbStore::open(dir.path().join(STORE_FILE)).unwrap();
        drop(Deduper::new(db, DedupConfig::default()).unwrap());
        let mut clean = CleanConfig::default();
        assert_eq!(clean.convert_chinese, ChineseVariant::T2sTw);
        let (d, adopted) = open_index(dir.path(), DedupConfig::default(), &mut clean, false).unwrap();
        assert!(adopted);
        assert_eq!(clean.convert_chinese, ChineseVariant::T2s);
        assert!(!d.params().contains("clean="));
        drop(d);
        // Named in the settings: taken as given, nothing adopted.
        let mut given = CleanConfig::default();
        let (d, adopted) = open_index(dir.path(), DedupConfig::default(), &mut given, true).unwrap();
        assert!(!adopted);
        assert_eq!(given.convert_chinese, ChineseVariant::T2sTw);
        drop(d);

        let new = tempfile::tempdir().unwrap();
        let mut clean = CleanConfig::default();
        let (d, adopted) = open_index(new.path(), DedupConfig::default(), &mut clean, false).unwrap();
        assert!(!adopted);
        assert!(
            d.params()
                .contains(&format!("clean={}\n", clean.digest().unwrap()))
        );
        drop(d);
        let mut t2s = CleanConfig {
            convert_chinese: ChineseVariant::T2s,
            ..CleanConfig::default()
        };
        let e = open_index(new.path(), DedupConfig::default(), &mut t2s, true)
            .err()
            .unwrap();
        assert!(e.contains("clean"), "{e}");
        // The same settings reopen it.
        let mut again = CleanConfig::default();
        assert!(open_index(new.path(), DedupConfig::default(), &mut again, false).is_ok());
    }

    #[test]
    fn settings_say_whether_the_chinese_profile_was_given() {
        let s: Settings = serde_json::from_str(r#"{"clean": {"nfkc": false}}"#).unwrap();
        assert!(!s.chinese_given);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "[clean]\nchinese_variant = \"t2s\"\n").unwrap();
        let s = Settings::from_file(&file).unwrap();
        assert!(s.chinese_given);
        assert_eq!(s.clean.convert_chinese, ChineseVariant::T2s);
        std::fs::write(&file, "[clean]\nnfkc = true\n").unwrap();
        assert!(!Settings::from_file(&file).unwrap().chinese_given);
    }

    #[test]
    fn settings_reject_unknown_tables_and_keys() {
        let e = serde_json::from_str::<Settings>(r#"{"dedupe": {}}"#).unwrap_err();
        assert!(e.to_string().contains("dedupe"), "{e}");
        let e = serde_json::from_str::<Settings>(r#"{"dedup": {"blokcs": 6}}"#).unwrap_err();
        assert!(e.to_string().contains("blokcs"), "{e}");
        let s: Settings =
            serde_json::from_str(r#"{"dedup": {"title_policy": "strict"}, "fetch": {"x": 1}}"#).unwrap();
        assert_eq!(s.dedup.title_policy, simcrawl_dedup::TitlePolicy::Strict);
    }

    #[test]
    fn key_urls_are_canonical_and_apart_from_real_urls() {
        let c = Canonicalizer::default();
        let k = key_url(&c, &[0x00, 0xab, 0xff]).unwrap();
        assert_eq!(k.as_str(), "http://key.simcrawl.invalid/00abff");
        assert_ne!(
            key_url(&c, b"a").unwrap().digest(),
            key_url(&c, b"b").unwrap().digest()
        );
        assert!(key_url(&c, b"").is_err());
        assert!(key_url(&c, &[7; MAX_KEY_BYTES + 1]).is_err());
        assert!(key_url(&c, &[7; MAX_KEY_BYTES]).is_ok());
    }

    /// `[dedup.url]` reaches the deduper from a dict or a file, like the
    /// rest of `[dedup]`.
    #[test]
    fn settings_carry_the_tracking_list() {
        let s: Settings =
            serde_json::from_str(r#"{"dedup": {"url": {"tracking_params": ["sid"]}}}"#).unwrap();
        assert_eq!(s.dedup.url.tracking_params, vec!["sid".to_string()]);
        let d = Deduper::new(MemoryStore::new(), s.dedup).unwrap();
        let c = d
            .canonicalizer()
            .parse("http://a.example/p?sid=1&utm_source=x")
            .unwrap();
        assert_eq!(c.as_str(), "http://a.example/p?utm_source=x");
        let e = serde_json::from_str::<Settings>(r#"{"dedup": {"url": {"tracking": []}}}"#).unwrap_err();
        assert!(e.to_string().contains("tracking"), "{e}");
    }

    #[test]
    fn deduper_is_shareable() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<PyDeduper>();
    }
}
