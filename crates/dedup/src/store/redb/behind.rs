//! Block-list changes written behind (issue 37, target 1): a commit keeps
//! its changes to the SimHash block lists in memory, and the next durable
//! commit writes all of them at once, sorted by key: handed to the side
//! file's thread (`side`), or, for an index from before side files, into
//! `dedup_blocks` of the store's own file.
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
//! the commits after it (with a side file, those the side file does not
//! hold yet, which the store's log keeps). Every durable state is
//! complete.

use std::sync::Arc;

use parking_lot::RwLock;
use rustc_hash::FxHashMap;

use super::super::{POSTING, decode_postings, within, without_posting};

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

/// `hits` ((distance, document) of the postings within `max` of `fp` in
/// one block's list) with `ops` on that list applied in order: an added
/// posting within `max` joins them, a removed one leaves (a document's id
/// is never used again, so its postings are removed only once added).
pub(super) fn apply_to_hits<'a>(
    hits: &mut Vec<(u32, u64)>,
    ops: impl IntoIterator<Item = &'a BlockOp>,
    fp: crate::fingerprint::Fingerprint,
    max: u32,
) {
    for op in ops {
        match op {
            BlockOp::Add(p) => hits.extend(within(fp, max, decode_postings(p))),
            BlockOp::Remove(p) => {
                for (_, gone) in decode_postings(p) {
                    hits.retain(|&(_, id)| id != gone);
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
    /// URL records (a store whose URL records live in the side file,
    /// `side`), by digest, each with its commit, oldest first.
    urls: FxHashMap<u128, Vec<(u64, UrlOp)>>,
    /// Title lists (with the URL records in the side file), by title
    /// digest, each change with its commit, in order.
    titles: FxHashMap<u128, Vec<(u64, TitleOp)>>,
    len: usize,
}

/// A change to a title's list of documents (ascending ids; the store's
/// multimap of title digest to document, `dedup_titles`, as a list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TitleOp {
    Add(u64),
    Remove(u64),
}

/// `ids` (ascending, each once) with `ops` applied in order, as the
/// multimap's insert and removal would have left its values: an add of an
/// id there, or a removal of one that is not, changes nothing, so changes
/// already in `ids` may be applied again.
pub(super) fn apply_titles<'a>(ids: &mut Vec<u64>, ops: impl IntoIterator<Item = &'a TitleOp>) {
    for op in ops {
        match *op {
            TitleOp::Add(id) => {
                if let Err(at) = ids.binary_search(&id) {
                    ids.insert(at, id);
                }
            }
            TitleOp::Remove(id) => {
                if let Ok(at) = ids.binary_search(&id) {
                    ids.remove(at);
                }
            }
        }
    }
}

/// A title list as stored in the side file: ids, ascending, 8 bytes each
/// (little-endian).
pub(super) fn decode_title_list(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks_exact(8).map(title_id).collect()
}

/// One id of a stored title list (an 8-byte chunk of it).
pub(super) fn title_id(chunk: &[u8]) -> u64 {
    u64::from_le_bytes(<[u8; 8]>::try_from(chunk).unwrap_or_default())
}

/// The stored form of a title list ([`decode_title_list`]).
pub(super) fn encode_title_list(ids: &[u64]) -> Vec<u8> {
    ids.iter().flat_map(|id| id.to_le_bytes()).collect()
}

/// A change to a URL record: its new encoding ([`crate::store::UrlRecord::encode`]),
/// or its removal. The last one a reader may see is the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum UrlOp {
    Put(Box<[u8]>),
    Remove,
}

impl UrlOp {
    /// The record this change leaves.
    pub(super) fn record(&self) -> crate::error::Result<Option<crate::store::UrlRecord>> {
        match self {
            UrlOp::Put(bytes) => crate::store::UrlRecord::decode(bytes).map(Some),
            UrlOp::Remove => Ok(None),
        }
    }
}

impl BlockOps {
    /// Changes held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The changes to `key` made by the commits after `after` up to
    /// `upto`.
    pub(super) fn of(&self, key: u128, after: u64, upto: u64) -> impl Iterator<Item = &BlockOp> {
        self.by_key
            .get(&key)
            .into_iter()
            .flatten()
            .skip_while(move |(commit, _)| *commit <= after)
            .take_while(move |(commit, _)| *commit <= upto)
            .map(|(_, op)| op)
    }

    /// The last change to the URL record `digest` made by a commit up to
    /// `upto`.
    pub(super) fn url_of(&self, digest: u128, upto: u64) -> Option<&UrlOp> {
        self.urls
            .get(&digest)?
            .iter()
            .rev()
            .find(|(commit, _)| *commit <= upto)
            .map(|(_, op)| op)
    }

    /// The changes to the title list `digest` made by the commits up to
    /// `upto`, in order.
    pub(super) fn titles_of(&self, digest: u128, upto: u64) -> impl Iterator<Item = &TitleOp> {
        self.titles
            .get(&digest)
            .into_iter()
            .flatten()
            .take_while(move |(commit, _)| *commit <= upto)
            .map(|(_, op)| op)
    }

    /// The changes to the title list `digest` of the commits after `after`.
    pub(super) fn titles_after(&self, digest: u128, after: u64) -> impl Iterator<Item = &TitleOp> {
        self.titles
            .get(&digest)
            .into_iter()
            .flatten()
            .filter(move |(commit, _)| *commit > after)
            .map(|(_, op)| op)
    }

    /// Whether a change to the title list `digest` is held.
    pub(super) fn touches_title(&self, digest: u128) -> bool {
        self.titles.contains_key(&digest)
    }

    /// Every title digest with a change held.
    pub(super) fn title_keys(&self) -> impl Iterator<Item = u128> + '_ {
        self.titles.keys().copied()
    }

    /// Every URL digest with a change held, and its last change.
    pub(super) fn url_changes(&self) -> impl Iterator<Item = (u128, &UrlOp)> + '_ {
        self.urls
            .iter()
            .filter_map(|(d, ops)| ops.last().map(|(_, op)| (*d, op)))
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
        for (digest, op) in ops.urls {
            self.urls.entry(digest).or_default().push((commit, op));
        }
        for (digest, list) in ops.titles {
            self.titles
                .entry(digest)
                .or_default()
                .extend(list.into_iter().map(|op| (commit, op)));
        }
    }
}

/// The changes of the transaction being written, by block key, in order.
#[derive(Debug, Default)]
pub(super) struct TxnBlockOps {
    pub(super) by_key: FxHashMap<u128, Vec<BlockOp>>,
    /// The URL records this transaction changed (side-file URL records
    /// only): the last change of each.
    pub(super) urls: FxHashMap<u128, UrlOp>,
    /// The title list changes this transaction made (with the URL records
    /// in the side file), in order.
    pub(super) titles: FxHashMap<u128, Vec<TitleOp>>,
    pub(super) len: usize,
}

impl TxnBlockOps {
    pub(super) fn push(&mut self, key: u128, op: BlockOp) {
        self.by_key.entry(key).or_default().push(op);
        self.len += 1;
    }

    /// Records `op` as the URL record `digest`'s last change.
    pub(super) fn push_url(&mut self, digest: u128, op: UrlOp) {
        if self.urls.insert(digest, op).is_none() {
            self.len += 1;
        }
    }

    /// Records a change to the title list `digest`.
    pub(super) fn push_title(&mut self, digest: u128, op: TitleOp) {
        self.titles.entry(digest).or_default().push(op);
        self.len += 1;
    }

    /// This transaction's changes to the title list `digest`, in order.
    pub(super) fn titles_of(&self, digest: u128) -> &[TitleOp] {
        self.titles.get(&digest).map_or(&[], Vec::as_slice)
    }

    /// These title changes as an entry of the main file's title log: per
    /// change its digest (16 bytes, little-endian), `1` for an add or `2`
    /// for a removal, and the document id (8 bytes, little-endian).
    pub(super) fn encode_titles(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (digest, ops) in &self.titles {
            for op in ops {
                let (add, id) = match *op {
                    TitleOp::Add(id) => (true, id),
                    TitleOp::Remove(id) => (false, id),
                };
                push_entry(&mut out, *digest, add, &id.to_le_bytes());
            }
        }
        out
    }

    /// Adds the title changes of a title log entry (see
    /// [`TxnBlockOps::encode_titles`]).
    pub(super) fn decode_titles_into(&mut self, bytes: &[u8]) -> Result<(), String> {
        each_entry(bytes, "title", |digest, add, id: [u8; 8]| {
            let id = u64::from_le_bytes(id);
            self.push_title(
                digest,
                if add {
                    TitleOp::Add(id)
                } else {
                    TitleOp::Remove(id)
                },
            );
        })
    }

    /// This transaction's last change to the URL record `digest`.
    pub(super) fn url_of(&self, digest: u128) -> Option<&UrlOp> {
        self.urls.get(&digest)
    }

    /// These URL changes as an entry of the main file's URL log: per
    /// change its digest (16 bytes, little-endian), `1` and the record's
    /// length (4 bytes, little-endian) and bytes for a put, `2` for a
    /// removal.
    pub(super) fn encode_urls(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (digest, op) in &self.urls {
            out.extend_from_slice(&digest.to_le_bytes());
            match op {
                UrlOp::Put(bytes) => {
                    out.push(1);
                    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    out.extend_from_slice(bytes);
                }
                UrlOp::Remove => out.push(2),
            }
        }
        out
    }

    /// Adds the URL changes of a URL log entry (see
    /// [`TxnBlockOps::encode_urls`]).
    pub(super) fn decode_urls_into(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        let truncated = |n: usize| format!("a URL log entry cut short ({n} bytes left)");
        while !bytes.is_empty() {
            let (Some(key), Some(&tag)) = (bytes.get(..16), bytes.get(16)) else {
                return Err(truncated(bytes.len()));
            };
            let mut k = [0u8; 16];
            k.copy_from_slice(key);
            let digest = u128::from_le_bytes(k);
            bytes = &bytes[17..];
            match tag {
                1 => {
                    let Some(len) = bytes.get(..4) else {
                        return Err(truncated(bytes.len()));
                    };
                    let mut l = [0u8; 4];
                    l.copy_from_slice(len);
                    let len = u32::from_le_bytes(l) as usize;
                    let Some(rec) = bytes.get(4..4 + len) else {
                        return Err(truncated(bytes.len()));
                    };
                    self.push_url(digest, UrlOp::Put(rec.into()));
                    bytes = &bytes[4 + len..];
                }
                2 => self.push_url(digest, UrlOp::Remove),
                t => return Err(format!("a URL log entry with change {t}")),
            }
        }
        Ok(())
    }

    /// These changes as an entry of the main file's log (a side file's
    /// store): per change its key (16 bytes, little-endian), `1` for an
    /// add or `2` for a removal, and the posting.
    pub(super) fn encode(&self) -> Vec<u8> {
        let changes: usize = self.by_key.values().map(Vec::len).sum();
        let mut out = Vec::with_capacity(changes * LOGGED);
        for (key, ops) in &self.by_key {
            for op in ops {
                let (add, p) = match op {
                    BlockOp::Add(p) => (true, p),
                    BlockOp::Remove(p) => (false, p),
                };
                push_entry(&mut out, *key, add, p);
            }
        }
        out
    }

    /// The changes of a log entry (see [`TxnBlockOps::encode`]).
    #[cfg(test)]
    fn decode(bytes: &[u8]) -> Result<TxnBlockOps, String> {
        let mut ops = TxnBlockOps::default();
        ops.decode_blocks_into(bytes)?;
        Ok(ops)
    }

    /// Adds the block-list changes of a block log entry (see
    /// [`TxnBlockOps::encode`]).
    pub(super) fn decode_blocks_into(&mut self, bytes: &[u8]) -> Result<(), String> {
        each_entry(bytes, "block-list", |key, add, p: [u8; POSTING]| {
            self.push(key, if add { BlockOp::Add(p) } else { BlockOp::Remove(p) });
        })
    }

    /// The changes to `key` of this transaction.
    pub(super) fn of(&self, key: u128) -> &[BlockOp] {
        self.by_key.get(&key).map_or(&[], Vec::as_slice)
    }
}

/// Bytes of one change in a block-list log entry: key, tag, posting.
const LOGGED: usize = 16 + 1 + POSTING;

/// Appends one change to a block-list or title log entry: its key (16
/// bytes, little-endian), `1` for an add or `2` for a removal, and what is
/// added or removed.
fn push_entry(out: &mut Vec<u8>, key: u128, add: bool, what: &[u8]) {
    out.extend_from_slice(&key.to_le_bytes());
    out.push(if add { 1 } else { 2 });
    out.extend_from_slice(what);
}

/// Calls `each` with every change of a log entry whose changes are
/// [`push_entry`]'s with `N` bytes each (key, whether an add, the bytes);
/// `log` names the log in errors.
fn each_entry<const N: usize>(
    bytes: &[u8],
    log: &str,
    mut each: impl FnMut(u128, bool, [u8; N]),
) -> Result<(), String> {
    let size = 17 + N;
    if !bytes.len().is_multiple_of(size) {
        return Err(format!("a {log} log entry of {} bytes", bytes.len()));
    }
    for e in bytes.chunks_exact(size) {
        let mut key = [0u8; 16];
        key.copy_from_slice(&e[..16]);
        let mut what = [0u8; N];
        what.copy_from_slice(&e[17..]);
        let add = match e[16] {
            1 => true,
            2 => false,
            t => return Err(format!("a {log} log entry with change {t}")),
        };
        each(u128::from_le_bytes(key), add, what);
    }
    Ok(())
}

/// A batch of changes handed to the side file's thread (`side`): written
/// there up to commit `upto`.
pub(super) type Epoch = Arc<RwLock<BlockOps>>;

/// What a store holds behind its table: the commits so far, and the
/// changes of those since the last write into the table.
#[derive(Debug, Default)]
pub(super) struct Backlog {
    /// Commits made by this store (numbers the changes; with a side file,
    /// carried over from the log across runs).
    pub(super) commits: u64,
    /// Replaced, not cleared, when written into the table: a reader that
    /// took it with a snapshot older than that write keeps the changes its
    /// snapshot lacks.
    pub(super) ops: Epoch,
    /// With a side file: the batches handed to its thread and not known to
    /// be written there yet, each with the last commit it holds, oldest
    /// first. Dropped once the side file holds them.
    pub(super) in_flight: Vec<(u64, Epoch)>,
}

impl Backlog {
    /// Every batch held, oldest first: those in flight, then the current.
    pub(super) fn epochs(&self) -> Vec<Epoch> {
        self.in_flight
            .iter()
            .map(|(_, e)| e.clone())
            .chain([self.ops.clone()])
            .collect()
    }

    /// Changes held, in flight or not.
    pub(super) fn len(&self) -> usize {
        self.in_flight.iter().map(|(_, e)| e.read().len()).sum::<usize>() + self.ops.read().len()
    }
}

/// The changes a reader adds to its snapshot: those of the commits up to
/// the one its snapshot ends with (and, with a side file, after the last
/// the side file's snapshot holds).
#[derive(Debug, Clone)]
pub(super) struct Behind {
    pub(super) epochs: Vec<Epoch>,
    pub(super) upto: u64,
}

impl Behind {
    /// What `backlog` holds for a snapshot begun with it as it is. A side
    /// file's snapshot must be begun after this is taken: a batch leaves
    /// the backlog only once the side file holds it.
    pub(super) fn of(backlog: &Backlog) -> Behind {
        Behind {
            epochs: backlog.epochs(),
            upto: backlog.commits,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
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
        assert_eq!(
            held.of(7, 0, 1).copied().collect::<Vec<_>>(),
            [BlockOp::Add(p(3))]
        );
        assert_eq!(held.of(7, 0, 2).count(), 2);
        assert_eq!(
            held.of(7, 1, 2).copied().collect::<Vec<_>>(),
            [BlockOp::Remove(p(3))]
        );
        assert_eq!(held.of(8, 0, 1).count(), 0);
        assert!(held.touches(8) && !held.touches(9));
        let mut keys: Vec<u128> = held.keys().collect();
        keys.sort_unstable();
        assert_eq!(keys, [7, 8]);
    }

    /// A transaction's title and URL record changes survive their logs'
    /// encodings (titles in order per title, a record's last change); a
    /// truncated entry or an unknown change is refused.
    #[test]
    fn title_and_url_log_entries_decode_as_written() {
        let mut ops = TxnBlockOps::default();
        ops.push_title(9, TitleOp::Add(4));
        ops.push_title(9, TitleOp::Remove(4));
        ops.push_title(u128::MAX, TitleOp::Add(u64::MAX));
        ops.push_url(3, UrlOp::Put(b"\x01\0\0\0\0\0\0\0http://a/".as_slice().into()));
        ops.push_url(3, UrlOp::Remove);
        ops.push_url(7, UrlOp::Put(b"\x02\0\0\0\0\0\0\0http://b/".as_slice().into()));
        let (titles, urls) = (ops.encode_titles(), ops.encode_urls());
        let mut back = TxnBlockOps::default();
        back.decode_titles_into(&titles).unwrap();
        back.decode_urls_into(&urls).unwrap();
        assert_eq!(back.titles_of(9), [TitleOp::Add(4), TitleOp::Remove(4)]);
        assert_eq!(back.titles_of(u128::MAX), [TitleOp::Add(u64::MAX)]);
        assert_eq!(back.url_of(3), Some(&UrlOp::Remove));
        assert_eq!(back.url_of(7), ops.url_of(7));
        assert_eq!(back.len, ops.len);
        let mut none = TxnBlockOps::default();
        assert!(none.decode_titles_into(&titles[1..]).is_err());
        assert!(none.decode_urls_into(&urls[..urls.len() - 1]).is_err());
        let mut bad = titles.clone();
        bad[16] = 9;
        let e = none.decode_titles_into(&bad).unwrap_err();
        assert!(e.contains("title log entry with change 9"), "{e}");
    }

    /// A transaction's changes survive the log's encoding, in order per
    /// key; a truncated entry or an unknown change is refused.
    #[test]
    fn log_entries_decode_as_written() {
        let mut ops = TxnBlockOps::default();
        ops.push(u128::MAX - 1, BlockOp::Add(p(1)));
        ops.push(u128::MAX - 1, BlockOp::Remove(p(2)));
        ops.push(5, BlockOp::Add(p(3)));
        let bytes = ops.encode();
        assert_eq!(bytes.len(), 3 * LOGGED);
        let back = TxnBlockOps::decode(&bytes).unwrap();
        assert_eq!(back.len, 3);
        assert_eq!(
            back.of(u128::MAX - 1),
            [BlockOp::Add(p(1)), BlockOp::Remove(p(2))]
        );
        assert_eq!(back.of(5), [BlockOp::Add(p(3))]);
        assert!(TxnBlockOps::decode(&bytes[1..]).is_err());
        let mut bad = bytes.clone();
        bad[16] = 9;
        assert!(TxnBlockOps::decode(&bad).is_err());
    }
}
