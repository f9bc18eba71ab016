//! SimHash candidates found early (issue 37, target 1): a page's own task
//! reads the block lists on a snapshot before the page reaches the single
//! writer ([`Store::near_early`]), and the writer brings those hits up to
//! date with the commits made since ([`ReadTables::near_since`]) instead
//! of reading the lists again.
//!
//! Why: the block-list reads were the largest part of a verdict on the
//! crawl's writer thread (16% of its CPU in `crawl bench` with the writer
//! saturated, 2026-12-06), and a page task can do them in parallel with
//! every other page task. The verdict is the one a single writer gives:
//! the hits the writer uses are exactly the lists as they are at its
//! commit (the snapshot's, with every change committed after it applied).
//! A store that cannot tell what changed since a snapshot says so, and
//! the writer reads the lists as before.
//!
//! [`Store::near_early`]: super::Store::near_early
//! [`ReadTables::near_since`]: super::ReadTables::near_since

use super::DocId;
use crate::fingerprint::Fingerprint;

/// The block-index hits of one fingerprint as a store's snapshot saw them,
/// to be brought up to date by the writer of the same store
/// ([`crate::Deduper::early_hits`], [`crate::Deduper::check_in_with`]).
///
/// ```
/// use simcrawl_dedup::{Deduper, DedupConfig, Document, RedbStore, Store, UrlTier};
/// let dir = tempfile::tempdir()?;
/// let d = Deduper::new(RedbStore::open(dir.path().join("index.redb"))?, DedupConfig::default())?;
/// let text = "气象台发布寒潮蓝色预警，北方大部地区气温将下降八到十度，局地降温超过十二度并伴有大风。";
/// d.check(&Document::new("http://a.example/1", "寒潮", text))?;
/// // Found by a page's task, on a snapshot...
/// let sig = d.sign(&Document::new("http://b.example/9", "寒潮", text));
/// let early = d.early_hits(&sig)?;
/// assert!(early.as_ref().is_some_and(|e| e.len() > 0), "the copy's candidate");
/// assert_eq!(early.as_ref().and_then(|e| e.title_len()), Some(1), "and its title's");
/// // ...and used by the writer, with what was committed since.
/// let v = d.store().write(|t| d.check_in_with(t, &sig, UrlTier::Check, early.as_ref()))?;
/// assert_eq!(v.partner(), Some("http://a.example/1"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EarlyHits {
    /// The store that found them (a number unique in this process): hits
    /// of another store do not apply.
    pub(crate) store: u64,
    /// The last commit whose changes they include (they may include some
    /// of later commits too: the writer applies every change after this
    /// one again, which leaves the lists as they are).
    pub(crate) commit: u64,
    /// What they were looked up for: the writer uses them only for the
    /// same keys, fingerprint and distance.
    pub(crate) keys: Vec<(usize, u64)>,
    pub(crate) fp: Fingerprint,
    pub(crate) max: u32,
    /// (index into `keys`, distance, document) of each posting within
    /// `max` of `fp`.
    pub(crate) hits: Vec<(usize, u32, DocId)>,
    /// The title digest looked up too, and every document under it
    /// (ascending ids), for the title tier ([`ReadTables::title_docs_since`]).
    ///
    /// [`ReadTables::title_docs_since`]: super::ReadTables::title_docs_since
    pub(crate) title: Option<(u128, Vec<DocId>)>,
}

impl EarlyHits {
    /// Hits found, a document under several keys once per key.
    pub fn len(&self) -> usize {
        self.hits.len()
    }

    /// Whether the snapshot held no candidate.
    pub fn is_empty(&self) -> bool {
        self.hits.is_empty()
    }

    /// Documents the snapshot listed under the title looked up (`None`:
    /// no title was).
    pub fn title_len(&self) -> Option<usize> {
        self.title.as_ref().map(|(_, ids)| ids.len())
    }

    /// The documents under `digest`, when it is the title looked up.
    #[cfg_attr(not(feature = "redb"), allow(dead_code))]
    pub(crate) fn title_ids(&self, store: u64, digest: u128) -> Option<&[DocId]> {
        match &self.title {
            Some((d, ids)) if self.store == store && *d == digest => Some(ids),
            _ => None,
        }
    }

    /// Whether these hits answer a lookup of `keys`, `fp` and `max` on the
    /// store numbered `store`.
    #[cfg_attr(not(feature = "redb"), allow(dead_code))] // only redb finds hits early
    pub(crate) fn answers(&self, store: u64, keys: &[(usize, u64)], fp: Fingerprint, max: u32) -> bool {
        self.store == store && self.keys == keys && self.fp == fp && self.max == max
    }

    /// The hits under key `index` (into `keys`), as (distance, document).
    #[cfg_attr(not(feature = "redb"), allow(dead_code))]
    pub(crate) fn under(&self, index: usize) -> Vec<(u32, DocId)> {
        self.hits
            .iter()
            .filter(|h| h.0 == index)
            .map(|&(_, d, id)| (d, id))
            .collect()
    }
}

/// A number for a store, unique in this process, for [`EarlyHits::store`].
#[cfg_attr(not(feature = "redb"), allow(dead_code))] // only redb finds hits early
pub(crate) fn store_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
