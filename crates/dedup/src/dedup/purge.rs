//! The window: entries older than [`DedupConfig::window`](super::DedupConfig::window)
//! are purged from every tier, in slices.

use std::sync::atomic::Ordering;

use super::Deduper;
use crate::error::Result;
use crate::store::Store;

/// Entries a purge removes per transaction: bounds how long a purge holds
/// the writer (a crawl's commits wait for it).
pub const PURGE_SLICE: usize = 1024;

/// What a purge removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    /// Documents removed from the title and content tiers.
    pub documents: u64,
    /// URLs removed from the URL tier.
    pub urls: u64,
}

impl<S: Store> Deduper<S> {
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
                    self.remove_record(t, id, &rec)?;
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
}

impl<S: Store> Deduper<S> {
    /// Removes one kept document from the title and content tiers, inside
    /// the caller's transaction `t`; returns whether it was there. For a
    /// crawler that revisits pages: a page that changed is judged again
    /// (and a page that is gone leaves the index), so its old text must
    /// stop matching copies. Its URL stays in the URL tier.
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, DedupConfig, Document, MemoryStore, Store, Verdict};
    /// let d = Deduper::new(MemoryStore::new(), DedupConfig::default())?;
    /// let text = "长江流域今年夏季降雨偏多，防汛形势严峻，各地加强了巡查和值守，确保安全度汛。";
    /// let Verdict::Unique { id: Some(id), .. } = d.check_content(&Document::new("http://a.example/1", "", text))? else {
    ///     panic!("kept")
    /// };
    /// assert!(d.store().write(|t| d.forget_in(t, id))?);
    /// // Its text no longer matches: a copy is kept now.
    /// assert!(!d.check_content(&Document::new("http://b.example/1", "", text))?.is_duplicate());
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn forget_in(&self, t: &mut dyn crate::store::Tables, id: crate::store::DocId) -> Result<bool> {
        let Some(rec) = t.doc(id)? else {
            return Ok(false);
        };
        self.remove_record(t, id, &rec)?;
        Ok(true)
    }

    /// Removes document `id` (whose record is `rec`) from every table.
    fn remove_record(
        &self,
        t: &mut dyn crate::store::Tables,
        id: crate::store::DocId,
        rec: &crate::store::DocRecord,
    ) -> Result<()> {
        for (table, key) in self.layout.keys(rec.fingerprint.low()) {
            t.remove_block(table, key, rec.fingerprint, id)?;
        }
        if let Some(title) = rec.title {
            t.remove_title(u128::from_be_bytes(title), id)?;
        }
        for key in self.band_keys(&rec.sketch) {
            t.remove_band(key, id)?;
        }
        t.remove_doc(id)
    }
}
