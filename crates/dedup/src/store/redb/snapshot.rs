//! The dedup tables of a read snapshot: a read-write store's
//! (`Store::read`) or a read-only one's, with the changes held behind its
//! tables (`behind`) and the side file's snapshot on top.

use std::cell::OnceCell;

use parking_lot::RwLock;
use redb::{ReadOnlyMultimapTable, ReadOnlyTable, ReadTransaction};

use super::behind::{self, Behind};
use super::side::{self, SideSnapshot};
use super::{
    BLOCKS, DOCS, META, TITLES, URL_TIMES, URLS, side_titles, stored_titles, stored_url, with_changes,
};
use crate::error::{Error, Result};
use crate::store::{BandIndex, DocId, UrlRecord};

/// The dedup tables of one redb read transaction (a snapshot), each opened
/// on first use: opening a table is a lookup of its own, and a query needs
/// only two of the five.
pub(super) struct RedbReadTables<'s> {
    bands: &'s RwLock<BandIndex>,
    txn: ReadTransaction,
    /// Block-list changes committed before the snapshot and not in its
    /// table.
    behind: Option<Behind>,
    /// The side file holding the block lists, if they live in one (and
    /// whether it holds the URL records too), and its snapshot, begun on
    /// first use (after `behind` was taken).
    side: Option<(&'s dyn side::SnapshotSource, bool)>,
    side_snapshot: OnceCell<SideSnapshot>,
    meta: OnceCell<ReadOnlyTable<&'static str, &'static [u8]>>,
    urls: OnceCell<ReadOnlyTable<u128, &'static [u8]>>,
    url_times: OnceCell<ReadOnlyTable<(u64, u128), ()>>,
    titles: OnceCell<ReadOnlyMultimapTable<u128, u64>>,
    blocks: OnceCell<ReadOnlyTable<u128, &'static [u8]>>,
    docs: OnceCell<ReadOnlyTable<u64, &'static [u8]>>,
}

impl<'s> RedbReadTables<'s> {
    /// The tables of the snapshot `txn`, none opened yet.
    pub(super) fn new(bands: &'s RwLock<BandIndex>, txn: ReadTransaction) -> Self {
        RedbReadTables {
            bands,
            txn,
            behind: None,
            side: None,
            side_snapshot: OnceCell::new(),
            meta: OnceCell::new(),
            urls: OnceCell::new(),
            url_times: OnceCell::new(),
            titles: OnceCell::new(),
            blocks: OnceCell::new(),
            docs: OnceCell::new(),
        }
    }
}

/// Returns the table in `cell`, opening it on `txn` the first time.
fn lazy<T>(cell: &OnceCell<T>, open: impl FnOnce() -> Result<T, redb::TableError>) -> Result<&T> {
    if let Some(t) = cell.get() {
        return Ok(t);
    }
    let t = open().map_err(Error::storage)?;
    Ok(cell.get_or_init(|| t))
}

impl<'s> RedbReadTables<'s> {
    /// These tables with `behind` added to the snapshot's block lists,
    /// which are read from `side` when they live in a side file.
    pub(super) fn behind(
        mut self,
        behind: Behind,
        side: Option<(&'s dyn side::SnapshotSource, bool)>,
    ) -> Self {
        self.behind = Some(behind);
        self.side = side;
        self
    }

    /// The side file's snapshot, begun on first use.
    /// These tables reading the side file from `snap`, begun together
    /// with their own snapshot.
    pub(super) fn with_side_snapshot(self, snap: SideSnapshot) -> Self {
        let _ = self.side_snapshot.set(snap);
        self
    }

    fn side_snapshot(&self, src: &dyn side::SnapshotSource, records: bool) -> Result<&SideSnapshot> {
        if let Some(s) = self.side_snapshot.get() {
            return Ok(s);
        }
        let s = side::snapshot(src, records)?;
        Ok(self.side_snapshot.get_or_init(|| s))
    }

    /// The URL record of `digest`: the last change held up to the
    /// snapshot's commit, else the side file's record when the URL records
    /// live there, else the snapshot's.
    pub(super) fn url_record(&self, digest: u128) -> Result<Option<UrlRecord>> {
        let Some((src, true)) = self.side else {
            return stored_url(self.urls()?, digest);
        };
        if let Some(b) = &self.behind {
            for e in b.epochs.iter().rev() {
                if let Some(op) = e.read().url_of(digest, b.upto) {
                    return op.record();
                }
            }
        }
        match &self.side_snapshot(src, true)?.urls {
            Some(urls) => stored_url(urls, digest),
            None => Ok(None),
        }
    }

    /// The `limit` newest documents under the title `digest`: the side
    /// file's list with the changes held up to the snapshot's commit on
    /// top when the title lists live there, else the snapshot's.
    pub(super) fn title_list(&self, digest: u128, limit: usize, out: &mut Vec<DocId>) -> Result<()> {
        let Some((src, true)) = self.side else {
            return stored_titles(self.titles()?, digest, limit, out);
        };
        let snap = self.side_snapshot(src, true)?;
        let stored = match &snap.titles {
            Some(t) => t.get(digest).map_err(Error::storage)?,
            None => None,
        };
        let touched = self
            .behind
            .as_ref()
            .is_some_and(|b| b.epochs.iter().any(|e| e.read().touches_title(digest)));
        let changes = |ids: &mut Vec<u64>| {
            if let Some(b) = &self.behind {
                for e in &b.epochs {
                    behind::apply_titles(ids, e.read().titles_of(digest, b.upto));
                }
            }
        };
        side_titles(stored.as_ref().map(|v| v.value()), touched, changes, (limit, out));
        Ok(())
    }

    /// Calls `f` with the posting list of block `k`, if any.
    pub(super) fn with_block(&self, k: u128, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let (stored, after) = match self.side {
            Some((src, records)) => {
                let snap = self.side_snapshot(src, records)?;
                (snap.blocks.get(k).map_err(Error::storage)?, snap.applied)
            }
            None => (self.blocks()?.get(k).map_err(Error::storage)?, 0),
        };
        let touched = self
            .behind
            .as_ref()
            .is_some_and(|b| b.epochs.iter().any(|e| e.read().touches(k)));
        let changes = |list: &mut Vec<u8>| {
            if let Some(b) = &self.behind {
                for e in &b.epochs {
                    behind::apply(list, e.read().of(k, after, b.upto));
                }
            }
        };
        with_changes(stored.as_ref().map(|v| v.value()), touched, changes, f);
        Ok(())
    }

    /// A snapshot's tables do not bring early hits up to date: only the
    /// writer's do ([`crate::store::ReadTables::near_since`]).
    pub(super) fn near_since_held(
        &self,
        _early: &crate::store::EarlyHits,
        _keys: &[(usize, u64)],
        _fp: crate::fingerprint::Fingerprint,
        _max: u32,
        _out: &mut Vec<(u32, DocId)>,
    ) -> Result<bool> {
        Ok(false)
    }

    /// Nor early title lists.
    pub(super) fn titles_since_held(
        &self,
        _early: &crate::store::EarlyHits,
        _digest: u128,
        _limit: usize,
        _out: &mut Vec<DocId>,
    ) -> Result<bool> {
        Ok(false)
    }

    pub(super) fn meta(&self) -> Result<&ReadOnlyTable<&'static str, &'static [u8]>> {
        lazy(&self.meta, || self.txn.open_table(META))
    }
    pub(super) fn urls(&self) -> Result<&ReadOnlyTable<u128, &'static [u8]>> {
        lazy(&self.urls, || self.txn.open_table(URLS))
    }
    pub(super) fn url_times(&self) -> Result<&ReadOnlyTable<(u64, u128), ()>> {
        lazy(&self.url_times, || self.txn.open_table(URL_TIMES))
    }
    pub(super) fn titles(&self) -> Result<&ReadOnlyMultimapTable<u128, u64>> {
        lazy(&self.titles, || self.txn.open_multimap_table(TITLES))
    }
    pub(super) fn blocks(&self) -> Result<&ReadOnlyTable<u128, &'static [u8]>> {
        lazy(&self.blocks, || self.txn.open_table(BLOCKS))
    }
    pub(super) fn docs(&self) -> Result<&ReadOnlyTable<u64, &'static [u8]>> {
        lazy(&self.docs, || self.txn.open_table(DOCS))
    }
    pub(super) fn band_ids(&self, keys: &[u64], out: &mut Vec<DocId>) {
        self.bands
            .read()
            .each_of(keys, |_, ids| out.extend_from_slice(ids));
    }
}
