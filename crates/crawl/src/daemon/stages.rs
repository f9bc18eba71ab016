//! What every page task shares (`PageStages`), and the closures through
//! which a backend lets page tasks sign pages and read its store.

use std::sync::Arc;

use parking_lot::Mutex;
use simcrawl_dedup::Signature;

use crate::dust::Dust;
use crate::frontier::ScopeRules;
use crate::template::Templates;

/// Signs a document with the tiers' settings (`Deduper::sign`), whatever
/// store the tiers live in: page tasks only sign, verdicts are the writer's.
pub type Signer = Arc<dyn Fn((&str, &str), &crate::identity::Identity<'_>, &str) -> Signature + Send + Sync>;

/// What every page task shares: the fetcher, the cleaner, the signer and
/// the crawl's link rules.
pub struct PageStages {
    pub fetcher: simcrawl_fetch::Fetcher,
    pub cleaner: simcrawl_clean::Cleaner,
    pub sign: Signer,
    /// The URL tier's key function (the tiers' `Deduper::canonicalizer`),
    /// so links are canonicalized here, off the writer thread.
    pub canon: simcrawl_dedup::Canonicalizer,
    pub scope: ScopeRules,
    /// `crawl.sitemaps`, `crawl.feeds`, `crawl.sitemap_max_urls`.
    pub sitemaps: bool,
    pub feeds: bool,
    pub sitemap_max_urls: usize,
    pub follow_nofollow: bool,
    pub respect_noindex: bool,
    /// `crawl.write_normalized`: pages keep their normalized title and
    /// text for their kept line.
    pub write_normalized: bool,
    /// `crawl.write_text`: pages carry their text escaped for their kept
    /// line ([`PageResult::text_json`]).
    pub write_text: bool,
    /// `crawl.languages`: the languages kept (empty: all).
    pub languages: Vec<String>,
    /// Page languages, spared where a host's declaration proved true.
    pub lang: crate::lang::SiteLanguages,
    pub templates: Templates,
    /// Pages parsed at once: one per core. More would not go faster (the
    /// work is CPU-bound) but would hold more parsed documents in memory at
    /// once, each several times its page's size.
    pub parsing: tokio::sync::Semaphore,
    /// The permits of `parsing`: a page over [`LARGE_PARSE_BYTES`] takes
    /// them all.
    pub parse_slots: u32,
    /// URL rewrite rules (learnt by the writer): an entry queued before its
    /// host learnt a rule that maps it elsewhere is not fetched.
    pub dust: Arc<Mutex<Dust>>,
    /// The URLs waiting to be retried (recorded by the writer), for the
    /// progress line.
    pub retry_waits: crate::progress::RetryWaits,
    /// Declared canonicals: which pages wait behind theirs
    /// (`crate::canonical`); the writer tells it what became of them.
    pub canonicals: Arc<crate::canonical::Canonicals>,
    /// Reads when the URL tier first saw each link, on a snapshot of the
    /// store, so that the single writer does not look up the links it
    /// already knows (most of a page's links on a crawl under way). Set by
    /// the local backend, whose store can be read beside the writer.
    pub url_probe: std::sync::OnceLock<UrlProbe>,
    /// Looks a page's SimHash candidates up on a snapshot of the store
    /// (`Deduper::early_hits`), so that the writer only adds what was
    /// committed since. Set by the local backend, like `url_probe`.
    pub early_hits: std::sync::OnceLock<EarlyProbe>,
    /// Whether the writer is what the crawl waits for: `url_probe` and
    /// `early_hits` are used only then (they save the writer time but cost
    /// more in all).
    pub writer_load: Arc<crate::daemon::load::WriterLoad>,
}

/// See [`PageStages::early_hits`]: `None` where the store cannot (or on an
/// error: the writer reads the candidates itself).
pub type EarlyProbe = Arc<dyn Fn(&Signature) -> Option<simcrawl_dedup::EarlyHits> + Send + Sync>;

/// See [`PageStages::url_probe`]: the first-seen time of each canonical URL,
/// `None` where not seen (or on an error: the writer's check decides).
pub type UrlProbe = Arc<dyn Fn(&[simcrawl_dedup::CanonicalUrl]) -> Vec<Option<u64>> + Send + Sync>;
