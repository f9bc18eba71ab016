//! A write transaction's commit: its block-list changes logged, then
//! held in the backlog (`behind`) or handed to the side file.

use std::sync::Arc;

use redb::WriteTransaction;

use super::RedbStore;
use super::behind::{self, TxnBlockOps};
use super::side::{self, SideBlocks};
use crate::error::{Error, Result};

impl RedbStore {
    /// This transaction's block-list changes into the main file's log,
    /// under the number its commit will have; at a durable commit, the log
    /// dropped up to what the side file holds.
    pub(super) fn log_blocks(&self, txn: &WriteTransaction, ops: &TxnBlockOps, durable: bool) -> Result<()> {
        let commit = self.backlog.read().commits + 1;
        // Each kind of change has a log of its own (the URL records' and
        // title lists' only where they live in the side file): this
        // commit's entry in each, and the entries the side file holds
        // dropped at a durable commit.
        let mut logs = vec![(side::BLOCK_LOG, (!ops.by_key.is_empty()).then(|| ops.encode()))];
        if self.side.as_ref().is_some_and(|s| s.records) {
            logs.push((side::URL_LOG, (!ops.urls.is_empty()).then(|| ops.encode_urls())));
            logs.push((
                side::TITLE_LOG,
                (!ops.titles.is_empty()).then(|| ops.encode_titles()),
            ));
        }
        let applied = self.side.as_ref().filter(|_| durable).map(SideBlocks::applied);
        for (def, entry) in logs {
            let mut log = txn.open_table(def).map_err(Error::storage)?;
            if let Some(entry) = entry {
                log.insert(commit, entry.as_slice()).map_err(Error::storage)?;
            }
            if let Some(applied) = applied {
                log.retain_in(..=applied, |_, _| false).map_err(Error::storage)?;
            }
        }
        Ok(())
    }

    /// Commits `txn` and holds its block-list changes (`blocks`): dropped
    /// when `written` into this file; with a side file, at a durable
    /// commit, the batch to hand to its thread (the last commit it holds,
    /// and its changes).
    pub(super) fn commit_held(
        &self,
        txn: WriteTransaction,
        blocks: TxnBlockOps,
        written: bool,
        durable: bool,
    ) -> Result<Option<(u64, behind::Epoch)>> {
        let mut backlog = self.backlog.write();
        txn.commit().map_err(Error::storage)?;
        backlog.commits += 1;
        let commit = backlog.commits;
        if written {
            backlog.ops = Arc::default();
            return Ok(None);
        }
        if blocks.len > 0 {
            backlog.ops.write().extend(commit, blocks);
        }
        if durable && self.side.is_some() && backlog.ops.read().len() > 0 {
            let batch = std::mem::take(&mut backlog.ops);
            backlog.in_flight.push((commit, batch.clone()));
            return Ok(Some((commit, batch)));
        }
        Ok(None)
    }
}
