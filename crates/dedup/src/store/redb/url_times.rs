//! The URL records' time index (`dedup_url_times`: first seen, digest),
//! kept only where a window's purge will read it (issue 37).
//!
//! Why: without a window (the crawl's default) nothing reads it, and each
//! new URL cost one B-tree insert into it on the crawl's writer thread
//! (8% of that thread's CPU in `crawl bench` with the writer saturated,
//! 2026-12-06), besides its pages on disk and in the cache. A store run
//! without it records so in its metadata (`url_times` = `partial`, durable
//! before the first URL goes unindexed), and a store asked to keep it
//! again builds it from the URL records first: an index that is in the
//! file is always complete.

use std::sync::atomic::Ordering;

use redb::{ReadableTable, ReadableTableMetadata};

use super::{Commit, RedbStore, RedbTables};
use crate::error::{Error, Result};
use crate::store::{Store, Tables, UrlRecord};

/// The metadata key saying the time index lacks URLs.
const PARTIAL: &str = "url_times";

impl RedbStore {
    /// [`crate::store::Store::keep_url_times`].
    pub(super) fn keep_or_drop_url_times(&self, keep: bool) -> Result<()> {
        let partial = self.read(|t| t.meta(PARTIAL))?.is_some();
        if keep {
            if partial {
                self.write_with(Commit::Durable, |_, t| t.rebuild_url_times())?;
            }
        } else if !partial {
            self.write_with(Commit::Durable, |_, t| t.set_meta(PARTIAL, b"partial"))?;
        }
        self.url_times_kept.store(keep, Ordering::Release);
        Ok(())
    }
}

impl RedbTables<'_> {
    /// The time index made anew from every URL record: those of the file
    /// that keeps them, with the changes held on top.
    fn rebuild_url_times(&mut self) -> Result<()> {
        let mut entries: Vec<(u64, u128)> = Vec::new();
        match self.side_urls() {
            Some(side) => {
                let mut digests =
                    Vec::with_capacity(usize::try_from(side.len().map_err(Error::storage)?).unwrap_or(0));
                for entry in side.iter().map_err(Error::storage)? {
                    digests.push(entry.map_err(Error::storage)?.0.value());
                }
                for epoch in self.held.epochs {
                    digests.extend(epoch.url_changes().map(|(d, _)| d));
                }
                digests.sort_unstable();
                digests.dedup();
                for digest in digests {
                    if let Some(rec) = self.url_record(digest)? {
                        entries.push((rec.first_seen, digest));
                    }
                }
            }
            None => {
                for entry in self.urls.iter().map_err(Error::storage)? {
                    let (digest, rec) = entry.map_err(Error::storage)?;
                    entries.push((UrlRecord::decode(rec.value())?.first_seen, digest.value()));
                }
            }
        }
        self.url_times.retain(|_, _| false).map_err(Error::storage)?;
        entries.sort_unstable();
        for key in entries {
            self.url_times.insert(key, ()).map_err(Error::storage)?;
        }
        self.meta.remove(PARTIAL).map_err(Error::storage)?;
        tracing::info!(
            urls = self.url_times.len().unwrap_or(0),
            "rebuilt the URLs' first-seen index"
        );
        Ok(())
    }
}
