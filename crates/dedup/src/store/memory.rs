//! The in-memory store: for tests, and for batch runs that need no state
//! after they end.

use std::collections::{BTreeSet, HashMap};

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

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

/// Block entries under one key: almost always one document, so the common
/// case needs no allocation.
#[derive(Debug)]
enum Entries {
    One(u64, DocId),
    Many(Vec<(u64, DocId)>),
}

#[derive(Debug, Default)]
pub(crate) struct MemState {
    meta: HashMap<String, Vec<u8>>,
    urls: FxHashMap<u128, UrlRecord>,
    /// (first seen, digest) of every URL: purges read only expired ones.
    url_times: BTreeSet<(u64, u128)>,
    titles: FxHashMap<u128, Vec<DocId>>,
    blocks: Vec<FxHashMap<u64, Entries>>,
    bands: BandIndex,
    /// Looked up on every verified candidate: a hash map, not a tree.
    docs: FxHashMap<DocId, DocRecord>,
    /// Insertion order, for purging the oldest; touched only on insert and
    /// removal.
    order: BTreeSet<DocId>,
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
            for (&key, e) in t {
                match e {
                    Entries::One(fp, id) => w.block(true, table, key, Fingerprint(*fp), *id),
                    Entries::Many(v) => {
                        for &(fp, id) in v {
                            w.block(true, table, key, Fingerprint(fp), id);
                        }
                    }
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
        for id in &self.order {
            if let Some(rec) = self.docs.get(id) {
                w.put_doc(*id, rec);
                spill(&mut w, out)?;
            }
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
        match self.blocks.get(table).and_then(|t| t.get(&key)) {
            Some(Entries::One(fp, id)) => out.push((Fingerprint(*fp), *id)),
            Some(Entries::Many(v)) => out.extend(v.iter().map(|&(fp, id)| (Fingerprint(fp), id))),
            None => {}
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
        Ok(self.docs.get(&id).cloned())
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
        out.extend(
            self.order
                .iter()
                .take(limit)
                .filter_map(|id| self.docs.get(id).map(|d| (*id, d.clone()))),
        );
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
            self.blocks.resize_with(table + 1, FxHashMap::default);
        }
        let t = &mut self.blocks[table];
        match t.get_mut(&key) {
            None => {
                t.insert(key, Entries::One(fp.0, id));
            }
            Some(e) => {
                let new = match e {
                    Entries::One(f0, i0) => Entries::Many(vec![(*f0, *i0), (fp.0, id)]),
                    Entries::Many(v) => {
                        v.push((fp.0, id));
                        return Ok(());
                    }
                };
                *e = new;
            }
        }
        Ok(())
    }

    fn remove_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        let Some(t) = self.blocks.get_mut(table) else {
            return Ok(());
        };
        let remove_key = match t.get_mut(&key) {
            Some(Entries::One(f0, i0)) => *f0 == fp.0 && *i0 == id,
            Some(Entries::Many(v)) => {
                v.retain(|&(f, i)| !(f == fp.0 && i == id));
                v.is_empty()
            }
            None => false,
        };
        if remove_key {
            t.remove(&key);
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

    fn put_doc(&mut self, id: DocId, rec: &DocRecord) -> Result<()> {
        self.docs.insert(id, rec.clone());
        self.order.insert(id);
        Ok(())
    }

    fn remove_doc(&mut self, id: DocId) -> Result<()> {
        self.docs.remove(&id);
        self.order.remove(&id);
        Ok(())
    }
}
