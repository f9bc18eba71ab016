//! Block-list changes written behind (issue 37, target 1): a commit that
//! is not durable keeps its changes to the SimHash block lists in memory,
//! and the next durable commit writes all of them into `dedup_blocks` at
//! once, sorted by key.
//!
//! Why: the four block-list inserts of each kept page were a quarter of
//! the crawl writer's CPU (`crawl bench`, 2026-12-06: 1.02 s with them,
//! 0.77 s without), mostly in what each commit pays per page it dirtied
//! (copies, checksums, writes, frees) for lists spread over the whole
//! table. Written every durable commit instead of every commit, a leaf
//! that several groups touch is copied and written once.
//!
//! Nothing durable changes: a crash already rolls the file back to its
//! last durable commit, and the changes kept here are exactly those of
//! the commits after it. Every durable state of the file is complete.

use std::sync::Arc;

use parking_lot::RwLock;
use rustc_hash::FxHashMap;

use super::super::{POSTING, without_posting};

/// Changes kept in memory past this many are written at the next commit,
/// durable or not, so that a store whose durable commits are rare (a long
/// sync interval, `Duration::MAX`) holds a bounded backlog: ~65k changes
/// are ~16k pages and a few MB.
pub(super) const MAX_BEHIND: usize = 1 << 16;

/// One change to a block's posting list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BlockOp {
    Add([u8; POSTING]),
    Remove([u8; POSTING]),
}

/// `list` (postings) with `ops` applied in order, as the table's own
/// insert and removal would have left it.
pub(super) fn apply<'a>(list: &mut Vec<u8>, ops: impl IntoIterator<Item = &'a BlockOp>) {
    for op in ops {
        match op {
            BlockOp::Add(p) => list.extend_from_slice(p),
            BlockOp::Remove(p) => {
                if let Some(kept) = without_posting(list, p) {
                    *list = kept;
                }
            }
        }
    }
}

/// The changes of the commits since the last write into the table, by
/// block key, in commit order, each with the number of its commit.
#[derive(Debug, Default)]
pub(super) struct BlockOps {
    by_key: FxHashMap<u128, Vec<(u64, BlockOp)>>,
    len: usize,
}

impl BlockOps {
    /// Changes held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The changes to `key` made by commits up to `upto`.
    pub(super) fn of(&self, key: u128, upto: u64) -> impl Iterator<Item = &BlockOp> {
        self.by_key
            .get(&key)
            .into_iter()
            .flatten()
            .take_while(move |(commit, _)| *commit <= upto)
            .map(|(_, op)| op)
    }

    /// Whether any change to `key` is held.
    pub(super) fn touches(&self, key: u128) -> bool {
        self.by_key.contains_key(&key)
    }

    /// Every key with a change held.
    pub(super) fn keys(&self) -> impl Iterator<Item = u128> + '_ {
        self.by_key.keys().copied()
    }

    /// Adds the changes of commit `commit`.
    pub(super) fn extend(&mut self, commit: u64, ops: TxnBlockOps) {
        self.len += ops.len;
        for (key, list) in ops.by_key {
            self.by_key
                .entry(key)
                .or_default()
                .extend(list.into_iter().map(|op| (commit, op)));
        }
    }
}

/// The changes of the transaction being written, by block key, in order.
#[derive(Debug, Default)]
pub(super) struct TxnBlockOps {
    pub(super) by_key: FxHashMap<u128, Vec<BlockOp>>,
    pub(super) len: usize,
}

impl TxnBlockOps {
    pub(super) fn push(&mut self, key: u128, op: BlockOp) {
        self.by_key.entry(key).or_default().push(op);
        self.len += 1;
    }

    /// The changes to `key` of this transaction.
    pub(super) fn of(&self, key: u128) -> &[BlockOp] {
        self.by_key.get(&key).map_or(&[], Vec::as_slice)
    }
}

/// What a store holds behind its table: the commits so far, and the
/// changes of those since the last write into the table.
#[derive(Debug, Default)]
pub(super) struct Backlog {
    /// Commits made by this store (numbers the changes).
    pub(super) commits: u64,
    /// Replaced, not cleared, when written into the table: a reader that
    /// took it with a snapshot older than that write keeps the changes its
    /// snapshot lacks.
    pub(super) ops: Arc<RwLock<BlockOps>>,
}

/// The changes a reader adds to its snapshot: those of the commits up to
/// the one its snapshot ends with.
#[derive(Debug, Clone)]
pub(super) struct Behind {
    pub(super) ops: Arc<RwLock<BlockOps>>,
    pub(super) upto: u64,
}

impl Behind {
    /// What `backlog` holds for a snapshot begun with it as it is.
    pub(super) fn of(backlog: &Backlog) -> Behind {
        Behind {
            ops: backlog.ops.clone(),
            upto: backlog.commits,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: u8) -> [u8; POSTING] {
        [n; POSTING]
    }

    /// Adds and removals apply in their order, a removal of what is not
    /// there changes nothing, and a reader sees only the commits up to its
    /// own.
    #[test]
    fn changes_apply_in_order_up_to_a_readers_commit() {
        let mut list = p(1).to_vec();
        apply(
            &mut list,
            &[
                BlockOp::Add(p(2)),
                BlockOp::Remove(p(1)),
                BlockOp::Remove(p(9)),
                BlockOp::Add(p(1)),
            ],
        );
        assert_eq!(list, [p(2), p(1)].concat());

        let mut held = BlockOps::default();
        let mut first = TxnBlockOps::default();
        first.push(7, BlockOp::Add(p(3)));
        held.extend(1, first);
        let mut second = TxnBlockOps::default();
        second.push(7, BlockOp::Remove(p(3)));
        second.push(8, BlockOp::Add(p(4)));
        held.extend(2, second);
        assert_eq!(held.len(), 3);
        assert_eq!(held.of(7, 1).copied().collect::<Vec<_>>(), [BlockOp::Add(p(3))]);
        assert_eq!(held.of(7, 2).count(), 2);
        assert_eq!(held.of(8, 1).count(), 0);
        assert!(held.touches(8) && !held.touches(9));
        let mut keys: Vec<u128> = held.keys().collect();
        keys.sort_unstable();
        assert_eq!(keys, [7, 8]);
    }
}
