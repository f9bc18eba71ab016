//! Three-tier deduplication for crawlers: exact URL, exact title and
//! near-duplicate content.
//!
//! - **URL tier**: MD5 of the [`CanonicalUrl`], so `HTTP://Host:80/a#x` and
//!   `http://host/a?utm_source=y` are one URL.
//! - **Title tier**: MD5 of the normalized title, under a [`TitlePolicy`]
//!   that by default only nominates candidates, because distinct pages
//!   often share a title.
//! - **Content tier**: an exact text digest; a 64-bit SimHash
//!   [`Fingerprint`] of TF-IDF weighted jieba words (or character shingles),
//!   looked up in a block index ([`BlockLayout`], Manku et al. 2007) that
//!   finds every stored fingerprint within Hamming distance k; and an LSH
//!   band index over a [`Sketch`] for the copies SimHash scatters (other
//!   template, traditional script).
//!
//! A candidate from any tier is only a candidate: a page is a duplicate when
//! the [`Sketch`] estimates its resemblance to a kept page at
//! [`DedupConfig::min_similarity`] or more, so pages sharing a title and a
//! template but not their content are all kept. A crawler can say more
//! about a page than its text: its [`Article`] (a story inside another
//! site's template is matched by it across sites) and its [`Extent`] (a
//! page of the same host far larger or smaller than it is not its copy,
//! however alike the texts they are judged on).
//!
//! State lives in a [`Store`]: [`RedbStore`] on disk (the default),
//! [`MemoryStore`], or `RedisStore` (feature `redis`), which many crawler
//! processes on many machines share. The crate has no async runtime and no network code, so
//! any crawler can embed it; see [`Deduper`] for an example, and the
//! README (below, and on the repository) for a crawler's whole use:
//! [`Deduper::open`] on disk, threads, [`Deduper::url_seen`] as a link
//! filter, [`Deduper::sign`] then [`Deduper::check_batch`], [`AnyStore`]
//! to pick the backend at run time, verdicts as JSON (feature `serde`).

#![warn(missing_docs)]

// The README's examples are compiled and run with the doc tests (they use
// the on-disk store and serde_json).
#[cfg(all(doctest, feature = "redb", feature = "serde"))]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

pub mod article;
pub mod canonical;
mod dedup;
mod digest;
pub mod error;
pub mod extent;
pub mod features;
pub mod fingerprint;
pub mod hash;
pub mod identity;
pub mod index;
pub mod letters;
mod same;
pub mod scripts;
pub mod sketch;
pub mod store;

pub use article::{ARTICLE_APART, ARTICLE_MIN_SIMILARITY, Article, PageScripts, SiteRelation};
pub use canonical::{CANONICAL_VERSION, CanonicalUrl, Canonicalizer, UrlConfig, UrlError};
pub use dedup::{
    BAND_CANDIDATES, Candidate, Comparison, DEFAULT_MIN_SIMILARITY, DEFAULT_TITLE_MIN_SIMILARITY,
    DedupConfig, Deduper, Document, Duplicate, Explanation, FORMAT_VERSION, Nominated, PURGE_SLICE, Purged,
    Refusal, STORE_FILE, Signature, StoreStats, TITLE_CANDIDATES, Tier, TitlePolicy, UrlTier, UrlVerdict,
    Verdict, normalize_title, title_digest,
};
pub use error::{DivergedReplica, Error, OpenError, Result};
pub use extent::{Extent, OUTLINE_BYTES, Outline, PAGE_MIN_SIMILARITY, SHOWN_MIN_ON_ONE_HOST};
pub use features::{Extractor, Feature, FeatureConfig, Features, Scripts};
pub use fingerprint::Fingerprint;
pub use index::BlockLayout;
pub use sketch::Sketch;
#[cfg(feature = "sled")]
pub use store::SledStore;
pub use store::{
    AnyStore, BAND_POSTINGS, DocId, EarlyHits, MemoryStore, Prefetch, ReadTables, Store, Tables,
};
#[cfg(feature = "redb")]
pub use store::{Commit, RedbOptions, RedbReadOnlyStore, RedbStore, RedbTables};
#[cfg(feature = "redis")]
pub use store::{RedisOptions, RedisStore, ReplicatedStore};
