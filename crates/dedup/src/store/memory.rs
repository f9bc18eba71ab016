//! The in-memory store: for tests, and for batch runs that need no state
//! after they end.

use std::collections::{BTreeSet, HashMap};

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

use super::doc_table::DocTable;
use super::{BandIndex, DocId, DocRecord, NEXT_ID_META, ReadTables, Store, Tables, UrlRecord};
use crate::error::Result;
use crate::fingerprint::Fingerprint;

/// Keeps everything in process memory behind one lock.
///
/// A transaction holds the lock, so check-and-insert is atomic. Writes are
/// applied as they are made: a closure that fails halfway leaves its earlier
/// writes in place (there is nothing on disk to protect).
///
/// ```
/// use simcrawl_dedup::{Deduper, DedupConfig, MemoryStore};
/// let d = Deduper::new(MemoryStore::new(), DedupConfig::default()).unwrap();
/// assert_eq!(d.stats().unwrap().documents, 0);
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<MemState>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }
}

/// Block entries under one key: almost always one document with
/// `m = 6` (32-bit keys), so that case needs no allocation; a list
/// otherwise, fingerprints apart from ids so that the distance check reads
/// only them (an id is read only for a fingerprint within the distance,
/// about never for a new document).
#[derive(Debug)]
enum Postings {
    One(u64, DocId),
    Many { fps: Vec<u64>, ids: Ids },
}

/// A list's document ids: 32 bits each while every id fits, which a
/// store's ids (counted up from 0) do until four billion documents; 64
/// bits once one does not. At m = 4 a document is in four lists, so this
/// saves 16 bytes a document (160 MB at 10M).
#[derive(Debug)]
enum Ids {
    Narrow(Vec<u32>),
    Wide(Vec<DocId>),
}

/// [`Ids`] or a lone id, borrowed for a scan.
#[derive(Clone, Copy)]
enum IdsRef<'a> {
    One(DocId),
    Narrow(&'a [u32]),
    Wide(&'a [DocId]),
}

impl IdsRef<'_> {
    fn get(self, at: usize) -> Option<DocId> {
        match self {
            IdsRef::One(id) => (at == 0).then_some(id),
            IdsRef::Narrow(ids) => ids.get(at).map(|&i| DocId::from(i)),
            IdsRef::Wide(ids) => ids.get(at).copied(),
        }
    }
}

impl Ids {
    fn of(ids: &[DocId]) -> Ids {
        match ids
            .iter()
            .map(|&i| u32::try_from(i))
            .collect::<Result<Vec<u32>, _>>()
        {
            Ok(narrow) => Ids::Narrow(narrow),
            Err(_) => Ids::Wide(ids.to_vec()),
        }
    }

    fn get(&self, at: usize) -> Option<DocId> {
        self.as_ref().get(at)
    }

    fn as_ref(&self) -> IdsRef<'_> {
        match self {
            Ids::Narrow(v) => IdsRef::Narrow(v),
            Ids::Wide(v) => IdsRef::Wide(v),
        }
    }

    fn reserve_exact(&mut self, more: usize) {
        match self {
            Ids::Narrow(v) => v.reserve_exact(more),
            Ids::Wide(v) => v.reserve_exact(more),
        }
    }

    fn push(&mut self, id: DocId) {
        match self {
            Ids::Narrow(v) => match u32::try_from(id) {
                Ok(i) => v.push(i),
                Err(_) => {
                    let mut wide: Vec<DocId> = Vec::with_capacity(v.capacity().max(v.len() + 1));
                    wide.extend(v.iter().map(|&i| DocId::from(i)));
                    wide.push(id);
                    *self = Ids::Wide(wide);
                }
            },
            Ids::Wide(v) => v.push(id),
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        match self {
            Ids::Narrow(v) => v.swap(a, b),
            Ids::Wide(v) => v.swap(a, b),
        }
    }

    fn truncate(&mut self, len: usize) {
        match self {
            Ids::Narrow(v) => v.truncate(len),
            Ids::Wide(v) => v.truncate(len),
        }
    }
}

impl Default for Postings {
    fn default() -> Self {
        Postings::Many {
            fps: Vec::new(),
            ids: Ids::Narrow(Vec::new()),
        }
    }
}

impl Postings {
    fn is_empty(&self) -> bool {
        matches!(self, Postings::Many { fps, .. } if fps.is_empty())
    }

    fn push(&mut self, fp: u64, id: DocId) {
        match self {
            Postings::One(f0, i0) => {
                *self = Postings::Many {
                    fps: vec![*f0, fp],
                    ids: Ids::of(&[*i0, id]),
                }
            }
            Postings::Many { fps, .. } if fps.is_empty() => *self = Postings::One(fp, id),
            Postings::Many { fps, ids } => {
                // Grow by a quarter, not double: at m = 4 every key of a
                // table holds about documents / 65,536 entries, so doubling
                // left nearly every list with the same slack, up to half
                // of it (10M documents: ~150 entries in room for 256).
                if fps.len() == fps.capacity() {
                    let more = (fps.len() / 4).max(4);
                    fps.reserve_exact(more);
                    ids.reserve_exact(more);
                }
                fps.push(fp);
                ids.push(id);
            }
        }
    }

    fn remove(&mut self, fp: u64, id: DocId) {
        match self {
            Postings::One(f0, i0) => {
                if *f0 == fp && *i0 == id {
                    *self = Postings::default();
                }
            }
            // Every copy of the entry, as the other stores do.
            Postings::Many { fps, ids } => {
                let mut keep = 0;
                for at in 0..fps.len() {
                    if fps[at] != fp || ids.get(at) != Some(id) {
                        fps.swap(keep, at);
                        ids.swap(keep, at);
                        keep += 1;
                    }
                }
                fps.truncate(keep);
                ids.truncate(keep);
            }
        }
    }

    /// Fingerprints and ids, side by side.
    fn as_slices(&self) -> (&[u64], IdsRef<'_>) {
        match self {
            Postings::One(fp, id) => (std::slice::from_ref(fp), IdsRef::One(*id)),
            Postings::Many { fps, ids } => (fps, ids.as_ref()),
        }
    }

    /// Every (fingerprint, id), in the order added.
    fn entries(&self) -> impl Iterator<Item = (Fingerprint, DocId)> + '_ {
        let (fps, ids) = self.as_slices();
        fps.iter()
            .enumerate()
            .filter_map(move |(at, &fp)| Some((Fingerprint::new(fp), ids.get(at)?)))
    }
}

/// Keys below this are kept in an array indexed by the key once a table
/// holds [`DENSE_AFTER`] keys all below it: `m = 4` keys each table by one
/// 16-bit block, so at a million documents every key is there with ~15
/// entries, and a lookup reads the key's slot and its fingerprints
/// instead of a hash map's control bytes, then its bucket, then the list.
const DENSE_KEYS: u64 = 1 << 16;

/// Keys a table holds (all below [`DENSE_KEYS`]) before it switches to
/// the array: 3 MB of slots pay off only when most are used.
const DENSE_AFTER: usize = 1 << 12;

/// One block table: postings by block key.
#[derive(Debug, Default)]
struct BlockTable {
    /// Postings of keys below [`DENSE_KEYS`], by key, once the table is
    /// dense (else empty, so every key is looked up in `sparse`).
    dense: Vec<Postings>,
    /// Every other key's postings.
    sparse: FxHashMap<u64, Postings>,
    /// Whether a key of [`DENSE_KEYS`] or more was ever added: such a
    /// table never switches to the array.
    large_keys: bool,
}

/// `key`'s index in [`BlockTable::dense`] (out of range there when the
/// key is too large or the table is not dense).
fn dense_index(key: u64) -> usize {
    usize::try_from(key).unwrap_or(usize::MAX)
}

impl BlockTable {
    fn get(&self, key: u64) -> Option<&Postings> {
        self.dense.get(dense_index(key)).or_else(|| self.sparse.get(&key))
    }

    fn add(&mut self, key: u64, fp: u64, id: DocId) {
        self.large_keys |= key >= DENSE_KEYS;
        if let Some(p) = self.dense.get_mut(dense_index(key)) {
            p.push(fp, id);
            return;
        }
        self.sparse.entry(key).or_default().push(fp, id);
        if !self.large_keys && self.dense.is_empty() && self.sparse.len() >= DENSE_AFTER {
            self.dense.resize_with(DENSE_KEYS as usize, Postings::default);
            for (k, p) in std::mem::take(&mut self.sparse) {
                // Every key is below DENSE_KEYS (no `large_keys`).
                if let Some(slot) = self.dense.get_mut(dense_index(k)) {
                    *slot = p;
                }
            }
        }
    }

    fn remove(&mut self, key: u64, fp: u64, id: DocId) {
        if let Some(p) = self.dense.get_mut(dense_index(key)) {
            p.remove(fp, id);
            return;
        }
        if let Some(p) = self.sparse.get_mut(&key) {
            p.remove(fp, id);
            if p.is_empty() {
                self.sparse.remove(&key);
            }
        }
    }

    /// Every (key, postings), in no particular order.
    #[cfg(feature = "redis")]
    fn iter(&self) -> impl Iterator<Item = (u64, &Postings)> {
        let dense = self.dense.iter().enumerate().map(|(k, p)| (k as u64, p));
        dense
            .chain(self.sparse.iter().map(|(&k, p)| (k, p)))
            .filter(|(_, p)| !p.is_empty())
    }
}

#[derive(Debug, Default)]
pub(crate) struct MemState {
    meta: HashMap<String, Vec<u8>>,
    urls: FxHashMap<u128, UrlRecord>,
    /// (first seen, digest) of every URL: purges read only expired ones.
    url_times: BTreeSet<(u64, u128)>,
    titles: FxHashMap<u128, Vec<DocId>>,
    blocks: Vec<BlockTable>,
    bands: BandIndex,
    /// Looked up on every verified candidate, and in id order (insertion
    /// order) by purges and snapshots.
    docs: DocTable,
}

impl MemState {
    /// The whole state as log entries of at most about `chunk` bytes each
    /// (a snapshot): applying them in order to an empty state rebuilds
    /// this one, lists in the same order.
    #[cfg(feature = "redis")]
    pub(crate) fn dump(&self, chunk: usize, out: &mut dyn FnMut(Vec<u8>) -> Result<()>) -> Result<()> {
        use super::oplog::LogWriter;
        let mut w = LogWriter::default();
        let spill = |w: &mut LogWriter, out: &mut dyn FnMut(Vec<u8>) -> Result<()>| -> Result<()> {
            if w.len() >= chunk {
                out(std::mem::take(w).into_bytes())?;
            }
            Ok(())
        };
        let mut meta: Vec<_> = self.meta.iter().collect();
        meta.sort();
        for (k, v) in meta {
            w.set_meta(k, v);
        }
        for (&digest, rec) in &self.urls {
            w.put_url(digest, rec);
            spill(&mut w, out)?;
        }
        for (&digest, ids) in &self.titles {
            for &id in ids {
                w.title(true, digest, id);
            }
            spill(&mut w, out)?;
        }
        for (table, t) in self.blocks.iter().enumerate() {
            for (key, p) in t.iter() {
                for (fp, id) in p.entries() {
                    w.block(true, table, key, fp, id);
                }
                spill(&mut w, out)?;
            }
        }
        let mut failed = Ok(());
        self.bands.for_each(|key, ids| {
            for &id in ids {
                w.band(true, key, id);
            }
            if failed.is_ok() {
                failed = spill(&mut w, out);
            }
        });
        failed?;
        for (id, bytes) in self.docs.iter() {
            w.put_doc_bytes(id, bytes);
            spill(&mut w, out)?;
        }
        if w.ops() > 0 {
            out(w.into_bytes())?;
        }
        Ok(())
    }
}

impl Store for MemoryStore {
    fn write<R>(&self, mut f: impl FnMut(&mut dyn Tables) -> Result<R>) -> Result<R> {
        let mut state = self.state.lock();
        f(&mut *state)
    }

    fn read<R>(&self, mut f: impl FnMut(&dyn ReadTables) -> Result<R>) -> Result<R> {
        let state = self.state.lock();
        f(&*state)
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn location(&self) -> Option<&std::path::Path> {
        None
    }
}

impl ReadTables for MemState {
    fn wants_prefetch(&self) -> bool {
        false
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.meta.get(key).cloned())
    }

    fn url(&self, digest: u128) -> Result<Option<UrlRecord>> {
        Ok(self.urls.get(&digest).cloned())
    }

    fn title_docs(&self, digest: u128, limit: usize, out: &mut Vec<DocId>) -> Result<()> {
        if let Some(ids) = self.titles.get(&digest) {
            out.extend(ids.iter().rev().take(limit));
        }
        Ok(())
    }

    fn candidates(&self, table: usize, key: u64, out: &mut Vec<(Fingerprint, DocId)>) -> Result<()> {
        if let Some(p) = self.blocks.get(table).and_then(|t| t.get(key)) {
            out.extend(p.entries());
        }
        Ok(())
    }

    /// Reads the postings of every key, and the first fingerprint of
    /// each, before scanning any: the loads of different tables do not
    /// depend on each other, so their cache misses overlap instead of
    /// coming one after the other. Only fingerprints are scanned.
    fn near_all(
        &self,
        keys: &[(usize, u64)],
        fp: Fingerprint,
        max: u32,
        out: &mut Vec<(u32, DocId)>,
    ) -> Result<()> {
        const CHUNK: usize = 32;
        // An id is read only for a fingerprint within the distance.
        let mut push = |f: u64, ids: IdsRef<'_>, at: usize| {
            let d = (f ^ fp.low()).count_ones();
            if d <= max
                && let Some(id) = ids.get(at)
            {
                out.push((d, id));
            }
        };
        for chunk in keys.chunks(CHUNK) {
            let mut found: [(&[u64], IdsRef<'_>); CHUNK] = [(&[], IdsRef::Wide(&[])); CHUNK];
            let mut first = [0u64; CHUNK];
            for ((slot, first), &(table, key)) in found.iter_mut().zip(&mut first).zip(chunk) {
                if let Some(p) = self.blocks.get(table).and_then(|t| t.get(key)) {
                    *slot = p.as_slices();
                    *first = slot.0.first().copied().unwrap_or(0);
                }
            }
            // `first` is each list's first fingerprint, loaded above.
            for (&(fps, ids), &first) in found.iter().zip(&first).take(chunk.len()) {
                if !fps.is_empty() {
                    push(first, ids, 0);
                }
                for (at, &f) in fps.iter().enumerate().skip(1) {
                    push(f, ids, at);
                }
            }
        }
        Ok(())
    }

    fn band_docs(&self, key: u64, out: &mut Vec<DocId>) -> Result<()> {
        self.bands.get(key, out);
        Ok(())
    }

    fn band_docs_all(&self, keys: &[u64], out: &mut Vec<DocId>) -> Result<()> {
        self.bands.each_of(keys, |_, ids| out.extend_from_slice(ids));
        Ok(())
    }

    fn doc(&self, id: DocId) -> Result<Option<DocRecord>> {
        self.docs.get(id).map(DocRecord::decode).transpose()
    }

    fn urls_seen_before(&self, cutoff: u64, limit: usize, out: &mut Vec<u128>) -> Result<()> {
        out.extend(
            self.url_times
                .range(..(cutoff, 0))
                .take(limit)
                .map(|&(_, digest)| digest),
        );
        Ok(())
    }

    fn oldest_docs(&self, limit: usize, out: &mut Vec<(DocId, DocRecord)>) -> Result<()> {
        for (id, bytes) in self.docs.iter().take(limit) {
            out.push((id, DocRecord::decode(bytes)?));
        }
        Ok(())
    }

    fn doc_count(&self) -> Result<u64> {
        Ok(self.docs.len() as u64)
    }
}

impl Tables for MemState {
    fn set_meta(&mut self, key: &str, value: &[u8]) -> Result<()> {
        self.meta.insert(key.to_string(), value.to_vec());
        Ok(())
    }

    /// The counter in [`NEXT_ID_META`] like every store, updated in place:
    /// the default reads and writes it through owned copies, two
    /// allocations per new document.
    fn next_doc_id(&mut self) -> Result<DocId> {
        let Some(b) = self.meta.get_mut(NEXT_ID_META) else {
            self.meta
                .insert(NEXT_ID_META.to_string(), 1u64.to_le_bytes().to_vec());
            return Ok(0);
        };
        let bytes: [u8; 8] = b
            .as_slice()
            .try_into()
            .map_err(|_| crate::error::Error::Corrupt(format!("next_id of {} bytes", b.len())))?;
        let id = u64::from_le_bytes(bytes);
        b.copy_from_slice(&(id + 1).to_le_bytes());
        Ok(id)
    }

    fn put_url(&mut self, digest: u128, rec: &UrlRecord) -> Result<()> {
        if let Some(old) = self.urls.insert(digest, rec.clone()) {
            self.url_times.remove(&(old.first_seen, digest));
        }
        self.url_times.insert((rec.first_seen, digest));
        Ok(())
    }

    fn remove_url(&mut self, digest: u128) -> Result<bool> {
        match self.urls.remove(&digest) {
            Some(old) => {
                self.url_times.remove(&(old.first_seen, digest));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn add_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        self.titles.entry(digest).or_default().push(id);
        Ok(())
    }

    fn remove_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        if let Some(ids) = self.titles.get_mut(&digest) {
            ids.retain(|&x| x != id);
            if ids.is_empty() {
                self.titles.remove(&digest);
            }
        }
        Ok(())
    }

    fn add_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        if self.blocks.len() <= table {
            self.blocks.resize_with(table + 1, BlockTable::default);
        }
        self.blocks[table].add(key, fp.low(), id);
        Ok(())
    }

    fn remove_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        if let Some(t) = self.blocks.get_mut(table) {
            t.remove(key, fp.low(), id);
        }
        Ok(())
    }

    fn add_band(&mut self, key: u64, id: DocId) -> Result<()> {
        self.bands.add(key, id);
        Ok(())
    }

    fn remove_band(&mut self, key: u64, id: DocId) -> Result<()> {
        self.bands.remove(key, id);
        Ok(())
    }

    fn put_doc(&mut self, id: DocId, rec: DocRecord) -> Result<()> {
        self.docs.insert(id, &rec);
        Ok(())
    }

    fn remove_doc(&mut self, id: DocId) -> Result<()> {
        self.docs.remove(id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    /// The reference: a map of (fingerprint, id) lists in insertion order.
    #[derive(Default)]
    struct Model(HashMap<u64, Vec<(u64, DocId)>>);

    #[derive(Clone, Debug)]
    enum Op {
        Add(u64, u64, DocId),
        Remove(u64, u64, DocId),
    }

    /// Keys mostly below `DENSE_KEYS` from a range wide enough that a
    /// table crosses `DENSE_AFTER` distinct keys (so it turns dense), a few
    /// above it; fingerprints from a small set so lists repeat entries;
    /// ids mostly of 32 bits, a few above (a list of 32-bit ids widens).
    fn op() -> impl Strategy<Value = Op> {
        let key = prop_oneof![20 => 0..DENSE_KEYS, 1 => DENSE_KEYS..DENSE_KEYS + 8];
        let id = prop_oneof![30 => 0..64u64, 1 => (1u64 << 32) - 2..(1u64 << 32) + 2];
        (0..4u8, key, 0..4u64, id).prop_map(|(kind, k, f, i)| {
            if kind > 0 {
                Op::Add(k, f, i)
            } else {
                Op::Remove(k, f, i)
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Adds and removals across the switch to the array, and keys
        /// above it after the switch, read back as the model's lists, by
        /// `candidates` and by `near_all` (only entries within the
        /// distance, every key's).
        #[test]
        fn block_tables_match_a_map_of_lists(
            ops in prop::collection::vec(op(), 7000..9000),
            fp in 0..4u64,
        ) {
            let mut t = BlockTable::default();
            let mut model = Model::default();
            // Adds of small keys first (most ops), so the table turns
            // dense, then the rest: removals, and adds of keys above the
            // array.
            let (adds, mut rest): (Vec<Op>, Vec<Op>) =
                ops.into_iter().partition(|o| matches!(o, Op::Add(k, ..) if *k < DENSE_KEYS));
            // Random removals seldom name an entry that is there; these do.
            rest.extend(adds.iter().step_by(3).filter_map(|o| match *o {
                Op::Add(k, f, i) => Some(Op::Remove(k, f, i)),
                Op::Remove(..) => None,
            }));
            for op in adds.iter().chain(&rest).chain(adds.iter().take(50)) {
                match *op {
                    Op::Add(k, f, i) => {
                        t.add(k, f, i);
                        model.0.entry(k).or_default().push((f, i));
                    }
                    Op::Remove(k, f, i) => {
                        t.remove(k, f, i);
                        if let Some(v) = model.0.get_mut(&k) {
                            v.retain(|&e| e != (f, i));
                            if v.is_empty() {
                                model.0.remove(&k);
                            }
                        }
                    }
                }
            }
            prop_assert!(!t.dense.is_empty(), "never turned dense");
            let mut state = MemState::default();
            state.blocks.push(t);
            let mut keys: Vec<u64> = model.0.keys().copied().collect();
            keys.extend([DENSE_KEYS + 100, 7]);
            for &k in &keys {
                let mut got = Vec::new();
                state.candidates(0, k, &mut got).unwrap();
                let want: Vec<(Fingerprint, DocId)> = model.0.get(&k).into_iter().flatten().map(|&(f, i)| (Fingerprint::new(f), i)).collect();
                prop_assert_eq!(got, want, "key {}", k);
            }
            let pairs: Vec<(usize, u64)> = keys.iter().map(|&k| (0, k)).collect();
            let mut got = Vec::new();
            state.near_all(&pairs, Fingerprint::new(fp), 1, &mut got).unwrap();
            let mut want = Vec::new();
            for k in &keys {
                for &(f, i) in model.0.get(k).into_iter().flatten() {
                    let d = (f ^ fp).count_ones();
                    if d <= 1 {
                        want.push((d, i));
                    }
                }
            }
            got.sort_unstable();
            want.sort_unstable();
            prop_assert_eq!(got, want);
        }
    }
}
