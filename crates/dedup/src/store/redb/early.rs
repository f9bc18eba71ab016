//! SimHash hits found early on a snapshot (`crate::store::EarlyHits`),
//! and brought up to date by the writer.

use super::behind::{self, Behind};
use super::{RedbStore, RedbTables, side, with_changes};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::store::{DocId, EarlyHits, block_key, decode_postings, within};

impl RedbStore {
    /// [`crate::store::Store::near_early`]: the block lists (and a title's
    /// list) on a snapshot of the side file, with the changes
    /// held up to the backlog's last commit: no snapshot of the store's
    /// own file (the lists are not in it). The backlog is only tried: a
    /// page task does not wait while the writer commits (it holds the
    /// backlog across its commit), it leaves the lookup to the writer.
    /// The side file's snapshot is begun after the backlog is read, so it
    /// holds at least what the changes left out (`Behind::of`); where it
    /// holds more, the writer applies those changes again, which leaves
    /// the lists as they are (a change is an add or a removal of one
    /// posting, and a document's id is never used again).
    pub(super) fn near_on_snapshot(
        &self,
        keys: &[(usize, u64)],
        fp: Fingerprint,
        max: u32,
        title: Option<u128>,
    ) -> Result<Option<EarlyHits>> {
        let Some(side) = &self.side else {
            return Ok(None);
        };
        let Some(behind) = self.backlog.try_read().map(|b| Behind::of(&b)) else {
            return Ok(None);
        };
        // Title lists only where they live in the side file.
        let title = title.filter(|_| side.records);
        let snap = side::snapshot(side.database(), title.is_some())?;
        let guards: Vec<_> = behind.epochs.iter().map(|e| e.read()).collect();
        let mut hits = Vec::new();
        for (index, &(table, key)) in keys.iter().enumerate() {
            let k = block_key(table, key);
            let stored = snap.blocks.get(k).map_err(Error::storage)?;
            let touched = guards.iter().any(|g| g.touches(k));
            let changes = |list: &mut Vec<u8>| {
                for g in &guards {
                    behind::apply(list, g.of(k, snap.applied, behind.upto));
                }
            };
            with_changes(
                stored.as_ref().map(|v| v.value()),
                touched,
                changes,
                &mut |list| {
                    hits.extend(within(fp, max, decode_postings(list)).map(|(d, id)| (index, d, id)));
                },
            );
        }
        // A title's whole list (its changes are idempotent: any held
        // change applied again leaves it as it is).
        let title = match (title, &snap.titles) {
            (Some(digest), Some(lists)) => {
                let stored = lists.get(digest).map_err(Error::storage)?;
                let mut ids = stored
                    .as_ref()
                    .map(|v| behind::decode_title_list(v.value()))
                    .unwrap_or_default();
                for g in &guards {
                    behind::apply_titles(&mut ids, g.titles_of(digest, behind.upto));
                }
                Some((digest, ids))
            }
            _ => None,
        };
        Ok(Some(EarlyHits {
            store: self.number,
            commit: behind.upto,
            keys: keys.to_vec(),
            fp,
            max,
            hits,
            title,
        }))
    }
}

impl RedbTables<'_> {
    /// [`crate::store::ReadTables::near_since`]: `early`'s hits under each key with the
    /// changes held after its commit and this transaction's applied, in
    /// order, as the lists' own would be.
    pub(super) fn near_since_held(
        &self,
        early: &EarlyHits,
        keys: &[(usize, u64)],
        fp: Fingerprint,
        max: u32,
        out: &mut Vec<(u32, DocId)>,
    ) -> Result<bool> {
        let covered = self.held.side.is_some() && self.held.after.is_some_and(|after| early.commit >= after);
        if !covered || !early.answers(self.held.store, keys, fp, max) {
            return Ok(false);
        }
        for (index, &(table, key)) in keys.iter().enumerate() {
            let k = block_key(table, key);
            let mut hits = early.under(index);
            for e in self.held.epochs {
                behind::apply_to_hits(&mut hits, e.of(k, early.commit, u64::MAX), fp, max);
            }
            behind::apply_to_hits(&mut hits, self.blocks_txn.of(k), fp, max);
            out.extend(hits);
        }
        Ok(true)
    }

    /// [`crate::store::ReadTables::title_docs_since`]: `early`'s list of `digest` with the
    /// changes held after its commit and this transaction's applied, its
    /// `limit` newest documents, newest first (as `title_list`).
    pub(super) fn titles_since_held(
        &self,
        early: &EarlyHits,
        digest: u128,
        limit: usize,
        out: &mut Vec<DocId>,
    ) -> Result<bool> {
        let covered = self.held.side.is_some() && self.held.after.is_some_and(|after| early.commit >= after);
        let Some(ids) = early.title_ids(self.held.store, digest).filter(|_| covered) else {
            return Ok(false);
        };
        let mut ids = ids.to_vec();
        for e in self.held.epochs {
            behind::apply_titles(&mut ids, e.titles_after(digest, early.commit));
        }
        behind::apply_titles(&mut ids, self.blocks_txn.titles_of(digest));
        out.extend(ids.iter().rev().take(limit));
        Ok(true)
    }
}
