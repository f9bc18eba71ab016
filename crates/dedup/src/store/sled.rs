//! A [sled](https://docs.rs/sled/0.34) store, behind the `sled` feature, so
//! users can compare it with redb (the default; see `store/redb.rs` for
//! the measurements behind that choice).
//!
//! Everything lives in one sled tree under one-byte prefixes. A write
//! closure runs against an in-memory overlay on top of the tree, under a
//! lock; when it succeeds the overlay is applied as one atomic sled batch,
//! so check-and-insert is atomic and a failed closure leaves no trace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{
    DocId, DocRecord, POSTING, ReadTables, Store, Tables, UrlRecord, block_key, decode_ids, decode_postings,
    posting, push_id_capped, without_id, without_posting,
};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;

const META: u8 = b'm';
const URL: u8 = b'u';
const TITLE: u8 = b't';
const BLOCK: u8 = b'b';
const DOC: u8 = b'd';
const BAND: u8 = b'l';
/// First-seen index of the URL tier: first seen (u64 BE) + digest (u128
/// BE) -> nothing, so a purge reads only expired URLs.
const URL_TIME: u8 = b'w';

fn url_time_key(first_seen: u64, digest: u128) -> Vec<u8> {
    let mut rest = [0u8; 24];
    rest[..8].copy_from_slice(&first_seen.to_be_bytes());
    rest[8..].copy_from_slice(&digest.to_be_bytes());
    key(URL_TIME, &rest)
}

fn key(prefix: u8, rest: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + rest.len());
    k.push(prefix);
    k.extend_from_slice(rest);
    k
}

/// The sled store.
///
/// ```
/// use simcrawl_dedup::{Deduper, DedupConfig, Document, SledStore};
/// let dir = tempfile::tempdir().unwrap();
/// let d = Deduper::new(SledStore::open(dir.path().join("index.sled")).unwrap(), DedupConfig::default()).unwrap();
/// let text = "长江流域今年夏季降雨偏多，防汛形势严峻，水利部门启动应急响应";
/// assert!(!d.check(&Document::new("http://a.example/1", "", text)).unwrap().is_duplicate());
/// assert!(d.check(&Document::new("http://b.example/1", "", text)).unwrap().is_duplicate());
/// ```
#[derive(Debug)]
pub struct SledStore {
    tree: sled::Db,
    path: PathBuf,
    writer: Mutex<Instant>,
    sync_interval: Duration,
}

/// How long [`SledStore::open`] waits for a lock still held by a store of
/// the same directory that is being dropped.
const LOCK_WAIT: Duration = Duration::from_secs(2);

impl SledStore {
    /// Opens or creates the store directory at `path`; syncs at most once a
    /// second (and on [`Store::flush`]).
    ///
    /// A store dropped a moment ago may still be locked: sled releases its
    /// file lock from its flusher thread, after the drop returns. So a
    /// lock held elsewhere is waited for up to [`LOCK_WAIT`] (reopening in
    /// the same process, as a test or a tool that reopens under other
    /// settings does), and then reported.
    pub fn open(path: impl AsRef<Path>) -> Result<SledStore> {
        let path = path.as_ref().to_path_buf();
        let until = Instant::now() + LOCK_WAIT;
        let mut opened = sled::Config::new().path(&path).open();
        while let Err(sled::Error::Io(io)) = &opened
            && io.to_string().contains("could not acquire lock")
            && Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(10));
            opened = sled::Config::new().path(&path).open();
        }
        let tree = opened.map_err(|e| {
            let source: Box<dyn std::error::Error + Send + Sync> = match e {
                sled::Error::Io(io) => Box::new(io),
                other => Box::new(other),
            };
            Error::Storage(Box::new(crate::error::OpenError {
                path: path.clone(),
                source,
            }))
        })?;
        Ok(SledStore {
            tree,
            path,
            writer: Mutex::new(Instant::now()),
            sync_interval: Duration::from_secs(1),
        })
    }
}

impl Store for SledStore {
    fn write<R>(&self, mut f: impl FnMut(&mut dyn Tables) -> Result<R>) -> Result<R> {
        let mut last_sync = self.writer.lock();
        let mut tables = SledTables {
            tree: &self.tree,
            overlay: BTreeMap::new(),
        };
        let value = f(&mut tables)?;
        let mut batch = sled::Batch::default();
        for (k, v) in tables.overlay {
            match v {
                Some(v) => batch.insert(k, v),
                None => batch.remove(k),
            }
        }
        self.tree.apply_batch(batch).map_err(Error::storage)?;
        if last_sync.elapsed() >= self.sync_interval {
            self.tree.flush().map_err(Error::storage)?;
            *last_sync = Instant::now();
        }
        Ok(value)
    }

    fn read<R>(&self, mut f: impl FnMut(&dyn ReadTables) -> Result<R>) -> Result<R> {
        f(&SledTables {
            tree: &self.tree,
            overlay: BTreeMap::new(),
        })
    }

    fn flush(&self) -> Result<()> {
        let mut last_sync = self.writer.lock();
        self.tree.flush().map_err(Error::storage)?;
        *last_sync = Instant::now();
        Ok(())
    }

    fn location(&self) -> Option<&Path> {
        Some(&self.path)
    }
}

/// The tree seen through a write closure's pending changes (`None`: removed).
struct SledTables<'a> {
    tree: &'a sled::Db,
    overlay: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl SledTables<'_> {
    fn get(&self, k: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.overlay.get(k) {
            Some(v) => Ok(v.clone()),
            None => Ok(self.tree.get(k).map_err(Error::storage)?.map(|v| v.to_vec())),
        }
    }

    fn set(&mut self, k: Vec<u8>, v: Option<Vec<u8>>) {
        self.overlay.insert(k, v);
    }

    /// Every live entry under `prefix`, in key order, at most `limit`.
    fn scan(&self, prefix: u8, limit: usize) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
        let pending: Vec<(&Vec<u8>, &Option<Vec<u8>>)> =
            self.overlay.range(vec![prefix]..vec![prefix + 1]).collect();
        // Enough stored entries that, after the pending removals, the first
        // `limit` live ones are all among them.
        let mut out = BTreeMap::new();
        for item in self
            .tree
            .scan_prefix([prefix])
            .take(limit.saturating_add(pending.len()))
        {
            let (k, v) = item.map_err(Error::storage)?;
            out.insert(k.to_vec(), v.to_vec());
        }
        for (k, v) in pending {
            match v {
                Some(v) => out.insert(k.clone(), v.clone()),
                None => out.remove(k),
            };
        }
        Ok(out.into_iter().take(limit).collect())
    }
}

impl ReadTables for SledTables<'_> {
    fn wants_prefetch(&self) -> bool {
        false
    }

    fn meta(&self, k: &str) -> Result<Option<Vec<u8>>> {
        self.get(&key(META, k.as_bytes()))
    }

    fn url(&self, digest: u128) -> Result<Option<UrlRecord>> {
        self.get(&key(URL, &digest.to_be_bytes()))?
            .map(|v| UrlRecord::decode(&v))
            .transpose()
    }

    fn title_docs(&self, digest: u128, limit: usize, out: &mut Vec<DocId>) -> Result<()> {
        if let Some(list) = self.get(&key(TITLE, &digest.to_be_bytes()))? {
            out.extend(list.chunks_exact(8).rev().take(limit).map(|c| {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                u64::from_le_bytes(b)
            }));
        }
        Ok(())
    }

    fn candidates(&self, table: usize, k: u64, out: &mut Vec<(Fingerprint, DocId)>) -> Result<()> {
        if let Some(list) = self.get(&key(BLOCK, &block_key(table, k).to_be_bytes()))? {
            out.extend(decode_postings(&list));
        }
        Ok(())
    }

    fn band_docs(&self, k: u64, out: &mut Vec<DocId>) -> Result<()> {
        if let Some(list) = self.get(&key(BAND, &k.to_be_bytes()))? {
            out.extend(decode_ids(&list));
        }
        Ok(())
    }

    fn doc(&self, id: DocId) -> Result<Option<DocRecord>> {
        self.get(&key(DOC, &id.to_be_bytes()))?
            .map(|v| DocRecord::decode(&v))
            .transpose()
    }

    fn urls_seen_before(&self, cutoff: u64, limit: usize, out: &mut Vec<u128>) -> Result<()> {
        for k in self.scan(URL_TIME, limit)?.into_keys() {
            let bad = || Error::Corrupt(format!("URL time key of {} bytes", k.len()));
            let seen = u64::from_be_bytes(k.get(1..9).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
            if seen >= cutoff {
                break;
            }
            out.push(u128::from_be_bytes(
                k.get(9..25).ok_or_else(bad)?.try_into().map_err(|_| bad())?,
            ));
        }
        Ok(())
    }

    fn oldest_docs(&self, limit: usize, out: &mut Vec<(DocId, DocRecord)>) -> Result<()> {
        for (k, v) in self.scan(DOC, limit)? {
            let mut b = [0u8; 8];
            b.copy_from_slice(k.get(1..9).ok_or_else(|| Error::Corrupt("document key".into()))?);
            out.push((u64::from_be_bytes(b), DocRecord::decode(&v)?));
        }
        Ok(())
    }

    /// Counts by scanning: sled keeps no counts, and this is only called
    /// for statistics.
    fn doc_count(&self) -> Result<u64> {
        Ok(self.scan(DOC, usize::MAX)?.len() as u64)
    }
}

impl Tables for SledTables<'_> {
    fn set_meta(&mut self, k: &str, value: &[u8]) -> Result<()> {
        self.set(key(META, k.as_bytes()), Some(value.to_vec()));
        Ok(())
    }

    fn put_url(&mut self, digest: u128, rec: &UrlRecord) -> Result<()> {
        if let Some(old) = self.url(digest)? {
            self.set(url_time_key(old.first_seen, digest), None);
        }
        self.set(key(URL, &digest.to_be_bytes()), Some(rec.encode()));
        self.set(url_time_key(rec.first_seen, digest), Some(Vec::new()));
        Ok(())
    }

    fn remove_url(&mut self, digest: u128) -> Result<bool> {
        let Some(old) = self.url(digest)? else {
            return Ok(false);
        };
        self.set(url_time_key(old.first_seen, digest), None);
        self.set(key(URL, &digest.to_be_bytes()), None);
        Ok(true)
    }

    fn add_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        let k = key(TITLE, &digest.to_be_bytes());
        let mut list = self.get(&k)?.unwrap_or_default();
        list.extend_from_slice(&id.to_le_bytes());
        self.set(k, Some(list));
        Ok(())
    }

    fn remove_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        let k = key(TITLE, &digest.to_be_bytes());
        if let Some(list) = self.get(&k)? {
            let kept: Vec<u8> = list
                .chunks_exact(8)
                .filter(|c| *c != id.to_le_bytes().as_slice())
                .flatten()
                .copied()
                .collect();
            self.set(k, (!kept.is_empty()).then_some(kept));
        }
        Ok(())
    }

    fn add_block(&mut self, table: usize, k: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        let k = key(BLOCK, &block_key(table, k).to_be_bytes());
        let mut list = self.get(&k)?.unwrap_or_else(|| Vec::with_capacity(POSTING));
        list.extend_from_slice(&posting(fp, id));
        self.set(k, Some(list));
        Ok(())
    }

    fn remove_block(&mut self, table: usize, k: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        let k = key(BLOCK, &block_key(table, k).to_be_bytes());
        if let Some(list) = self.get(&k)?
            && let Some(kept) = without_posting(&list, &posting(fp, id))
        {
            self.set(k, (!kept.is_empty()).then_some(kept));
        }
        Ok(())
    }

    fn add_band(&mut self, k: u64, id: DocId) -> Result<()> {
        let k = key(BAND, &k.to_be_bytes());
        let mut list = self.get(&k)?.unwrap_or_default();
        push_id_capped(&mut list, id);
        self.set(k, Some(list));
        Ok(())
    }

    fn remove_band(&mut self, k: u64, id: DocId) -> Result<()> {
        let k = key(BAND, &k.to_be_bytes());
        if let Some(list) = self.get(&k)?
            && let Some(kept) = without_id(&list, id)
        {
            self.set(k, (!kept.is_empty()).then_some(kept));
        }
        Ok(())
    }

    fn put_doc(&mut self, id: DocId, rec: DocRecord) -> Result<()> {
        self.set(key(DOC, &id.to_be_bytes()), Some(rec.encode()));
        Ok(())
    }

    fn remove_doc(&mut self, id: DocId) -> Result<()> {
        self.set(key(DOC, &id.to_be_bytes()), None);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A store dropped and reopened at once opens (sled's flusher thread
    /// may still hold the lock when the drop returns: CI once failed on
    /// it), and what it wrote is there.
    #[test]
    fn a_store_reopens_right_after_its_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sled");
        for round in 0..20u8 {
            let store = SledStore::open(&path).unwrap();
            store.write(|t| t.set_meta("round", &[round])).unwrap();
            store.flush().unwrap();
            drop(store);
            let again = SledStore::open(&path).unwrap();
            assert_eq!(again.read(|t| t.meta("round")).unwrap(), Some(vec![round]));
        }
    }
}
