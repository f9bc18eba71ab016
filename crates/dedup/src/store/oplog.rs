//! A transaction's writes as a compact log entry, and a view of a store
//! with a transaction's writes pending on top of it.
//!
//! The replicated Redis store ([`super::ReplicatedStore`]) keeps every
//! process's tiers in memory and orders the processes' transactions
//! through one shared log of these entries: a transaction runs against an
//! [`Overlay`] (the replica, plus what the transaction itself wrote so
//! far), its writes become one entry, and the entry is applied to the
//! replica only once the log has accepted it, by every process in the
//! same order. A snapshot of a replica is a sequence of entries too
//! ([`LogWriter`] fed by [`super::MemoryStore`]'s dump).

use std::collections::HashMap;

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use super::{BAND_POSTINGS, DocId, DocRecord, NEXT_ID_META, ReadTables, Tables, UrlRecord};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;

/// First byte of every entry: the encoding below. A log written by a
/// later encoding is refused rather than misread.
const FORMAT: u8 = 1;

const PUT_URL: u8 = 1;
const REMOVE_URL: u8 = 2;
const ADD_TITLE: u8 = 3;
const REMOVE_TITLE: u8 = 4;
const ADD_BLOCK: u8 = 5;
const REMOVE_BLOCK: u8 = 6;
const ADD_BAND: u8 = 7;
const REMOVE_BAND: u8 = 8;
const PUT_DOC: u8 = 9;
const REMOVE_DOC: u8 = 10;
const SET_META: u8 = 11;

/// Builds one log entry: each write as a tag byte and its fields,
/// integers little-endian, byte strings with a LEB128 length.
#[derive(Debug)]
pub(crate) struct LogWriter {
    buf: Vec<u8>,
    ops: usize,
}

impl Default for LogWriter {
    fn default() -> Self {
        LogWriter {
            buf: vec![FORMAT],
            ops: 0,
        }
    }
}

impl LogWriter {
    /// Writes in the entry so far.
    pub(crate) fn ops(&self) -> usize {
        self.ops
    }

    /// Encoded size so far.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    fn tag(&mut self, tag: u8) {
        self.ops += 1;
        self.buf.push(tag);
    }

    fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn u128(&mut self, v: u128) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn bytes(&mut self, b: &[u8]) {
        let mut n = b.len() as u64;
        loop {
            let low = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                self.buf.push(low);
                break;
            }
            self.buf.push(low | 0x80);
        }
        self.buf.extend_from_slice(b);
    }

    pub(crate) fn put_url(&mut self, digest: u128, rec: &UrlRecord) {
        self.tag(PUT_URL);
        self.u128(digest);
        self.u64(rec.first_seen);
        self.bytes(rec.url.as_bytes());
    }

    pub(crate) fn remove_url(&mut self, digest: u128) {
        self.tag(REMOVE_URL);
        self.u128(digest);
    }

    pub(crate) fn title(&mut self, add: bool, digest: u128, id: DocId) {
        self.tag(if add { ADD_TITLE } else { REMOVE_TITLE });
        self.u128(digest);
        self.u64(id);
    }

    pub(crate) fn block(&mut self, add: bool, table: usize, key: u64, fp: Fingerprint, id: DocId) {
        self.tag(if add { ADD_BLOCK } else { REMOVE_BLOCK });
        self.buf.push(table as u8);
        self.u64(key);
        self.u64(fp.low());
        self.u64(id);
    }

    pub(crate) fn band(&mut self, add: bool, key: u64, id: DocId) {
        self.tag(if add { ADD_BAND } else { REMOVE_BAND });
        self.u64(key);
        self.u64(id);
    }

    pub(crate) fn put_doc(&mut self, id: DocId, rec: &DocRecord) {
        self.put_doc_bytes(id, &rec.encode());
    }

    /// [`Self::put_doc`] of a record already encoded ([`DocRecord::encode`]).
    pub(crate) fn put_doc_bytes(&mut self, id: DocId, rec: &[u8]) {
        self.tag(PUT_DOC);
        self.u64(id);
        self.bytes(rec);
    }

    pub(crate) fn remove_doc(&mut self, id: DocId) {
        self.tag(REMOVE_DOC);
        self.u64(id);
    }

    pub(crate) fn set_meta(&mut self, key: &str, value: &[u8]) {
        self.tag(SET_META);
        self.bytes(key.as_bytes());
        self.bytes(value);
    }
}

/// Reads an entry back.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn corrupt(&self, what: &str) -> Error {
        Error::Corrupt(format!("log entry: {what} ({} bytes left)", self.rest.len()))
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if self.rest.len() < n {
            return Err(self.corrupt(what));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn u128(&mut self, what: &str) -> Result<u128> {
        let b = self.take(16, what)?;
        let mut a = [0u8; 16];
        a.copy_from_slice(b);
        Ok(u128::from_le_bytes(a))
    }

    fn bytes(&mut self, what: &str) -> Result<&'a [u8]> {
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.u8(what)?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                let n = usize::try_from(n).map_err(|_| self.corrupt(what))?;
                return self.take(n, what);
            }
        }
        Err(self.corrupt(what))
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let b = self.bytes(what)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.corrupt(what))
    }
}

/// Applies every write of `entry` to `t`, in order. An entry that does not
/// decode is [`Error::Corrupt`]; the writes before the bad one are
/// applied (the caller discards the replica).
pub(crate) fn apply(entry: &[u8], t: &mut dyn Tables) -> Result<()> {
    let mut r = Reader { rest: entry };
    match r.u8("format")? {
        FORMAT => {}
        other => {
            return Err(Error::Corrupt(format!(
                "log entry in format {other}, this simcrawl writes format {FORMAT}: \
                 a newer simcrawl shares this namespace"
            )));
        }
    }
    while !r.rest.is_empty() {
        match r.u8("tag")? {
            PUT_URL => {
                let digest = r.u128("url digest")?;
                let first_seen = r.u64("first seen")?;
                let url = r.string("url")?;
                t.put_url(digest, &UrlRecord { first_seen, url })?;
            }
            REMOVE_URL => {
                t.remove_url(r.u128("url digest")?)?;
            }
            tag @ (ADD_TITLE | REMOVE_TITLE) => {
                let digest = r.u128("title digest")?;
                let id = r.u64("title id")?;
                if tag == ADD_TITLE {
                    t.add_title(digest, id)?;
                } else {
                    t.remove_title(digest, id)?;
                }
            }
            tag @ (ADD_BLOCK | REMOVE_BLOCK) => {
                let table = usize::from(r.u8("block table")?);
                let key = r.u64("block key")?;
                let fp = Fingerprint::new(r.u64("block fingerprint")?);
                let id = r.u64("block id")?;
                if tag == ADD_BLOCK {
                    t.add_block(table, key, fp, id)?;
                } else {
                    t.remove_block(table, key, fp, id)?;
                }
            }
            tag @ (ADD_BAND | REMOVE_BAND) => {
                let key = r.u64("band key")?;
                let id = r.u64("band id")?;
                if tag == ADD_BAND {
                    t.add_band(key, id)?;
                } else {
                    t.remove_band(key, id)?;
                }
            }
            PUT_DOC => {
                let id = r.u64("doc id")?;
                let rec = DocRecord::decode(r.bytes("doc record")?)?;
                t.put_doc(id, rec)?;
            }
            REMOVE_DOC => {
                t.remove_doc(r.u64("doc id")?)?;
            }
            SET_META => {
                let key = r.string("meta key")?;
                let value = r.bytes("meta value")?;
                t.set_meta(&key, value)?;
            }
            other => return Err(r.corrupt(&format!("unknown write {other}"))),
        }
    }
    Ok(())
}

/// Block entries a transaction added under one block key.
type Postings = SmallVec<[(Fingerprint, DocId); 1]>;

/// A transaction's writes not yet in the log: the entry being built, and
/// the same writes indexed so that the transaction reads its own writes.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    log: LogWriter,
    /// Metadata is written at the end of the entry, last value only: the
    /// id counter changes once per new document.
    meta: HashMap<String, Vec<u8>>,
    /// The document id counter ([`NEXT_ID_META`]), kept apart from `meta`:
    /// a check takes an id per new document.
    next_id: Option<u64>,
    urls: FxHashMap<u128, Option<UrlRecord>>,
    // Lists added to are nearly always new keys with one entry: inline,
    // not an allocation each (a new document adds ~15).
    titles_added: FxHashMap<u128, SmallVec<[DocId; 1]>>,
    titles_removed: FxHashSet<(u128, DocId)>,
    blocks_added: FxHashMap<(usize, u64), Postings>,
    blocks_removed: FxHashSet<(usize, u64, u64, DocId)>,
    bands_added: FxHashMap<u64, SmallVec<[DocId; 1]>>,
    bands_removed: FxHashSet<(u64, DocId)>,
    docs: FxHashMap<DocId, Option<DocRecord>>,
    doc_delta: i64,
}

impl Pending {
    /// Nothing was written.
    pub(crate) fn is_empty(&self) -> bool {
        self.log.ops() == 0 && self.meta.is_empty() && self.next_id.is_none()
    }

    /// The log entry of these writes.
    pub(crate) fn into_entry(self) -> Vec<u8> {
        let mut log = self.log;
        let mut meta: Vec<_> = self.meta.into_iter().collect();
        if let Some(next) = self.next_id {
            meta.retain(|(k, _)| k != NEXT_ID_META);
            meta.push((NEXT_ID_META.to_string(), next.to_le_bytes().to_vec()));
        }
        meta.sort();
        for (k, v) in &meta {
            log.set_meta(k, v);
        }
        log.into_bytes()
    }
}

/// `base` as a transaction sees it: with the transaction's own writes
/// (`pending`) applied on top, without changing `base`. Reads answer as
/// `base` would after the writes, up to the order of band entries when a
/// band list overflows (a candidate list, verified anyway).
pub(crate) struct Overlay<'a> {
    pub(crate) base: &'a dyn ReadTables,
    pub(crate) pending: &'a mut Pending,
}

impl ReadTables for Overlay<'_> {
    fn wants_prefetch(&self) -> bool {
        false
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        if key == NEXT_ID_META
            && let Some(next) = self.pending.next_id
        {
            return Ok(Some(next.to_le_bytes().to_vec()));
        }
        match self.pending.meta.get(key) {
            Some(v) => Ok(Some(v.clone())),
            None => self.base.meta(key),
        }
    }

    fn url(&self, digest: u128) -> Result<Option<UrlRecord>> {
        match self.pending.urls.get(&digest) {
            Some(v) => Ok(v.clone()),
            None => self.base.url(digest),
        }
    }

    fn title_docs(&self, digest: u128, limit: usize, out: &mut Vec<DocId>) -> Result<()> {
        let p = &*self.pending;
        let added = p.titles_added.get(&digest).map_or(&[][..], |v| v.as_slice());
        if added.is_empty() && p.titles_removed.is_empty() {
            return self.base.title_docs(digest, limit, out);
        }
        let start = out.len();
        out.extend(added.iter().rev().take(limit));
        let mut older = Vec::new();
        self.base
            .title_docs(digest, limit + p.titles_removed.len(), &mut older)?;
        for id in older {
            if out.len() - start >= limit {
                break;
            }
            if !p.titles_removed.contains(&(digest, id)) && !added.contains(&id) {
                out.push(id);
            }
        }
        Ok(())
    }

    fn candidates(&self, table: usize, key: u64, out: &mut Vec<(Fingerprint, DocId)>) -> Result<()> {
        let p = &*self.pending;
        if p.blocks_removed.is_empty() {
            self.base.candidates(table, key, out)?;
        } else {
            let mut all = Vec::new();
            self.base.candidates(table, key, &mut all)?;
            out.extend(
                all.into_iter()
                    .filter(|&(fp, id)| !p.blocks_removed.contains(&(table, key, fp.low(), id))),
            );
        }
        if let Some(added) = p.blocks_added.get(&(table, key)) {
            out.extend_from_slice(added);
        }
        Ok(())
    }

    fn band_docs(&self, key: u64, out: &mut Vec<DocId>) -> Result<()> {
        let p = &*self.pending;
        let added = p.bands_added.get(&key);
        if added.is_none() && p.bands_removed.is_empty() {
            return self.base.band_docs(key, out);
        }
        let mut all = Vec::new();
        self.base.band_docs(key, &mut all)?;
        all.retain(|&id| !p.bands_removed.contains(&(key, id)));
        all.extend(added.into_iter().flatten());
        let skip = all.len().saturating_sub(BAND_POSTINGS);
        out.extend_from_slice(&all[skip..]);
        Ok(())
    }

    /// The check's band lookup: the base's batched lookup (its misses
    /// overlap), then this transaction's own entries. The order of the
    /// ids is not kept (callers sort them), nor the cap of a list that
    /// overflows within the transaction: a few more candidates, verified.
    fn band_docs_all(&self, keys: &[u64], out: &mut Vec<DocId>) -> Result<()> {
        let p = &*self.pending;
        if !p.bands_removed.is_empty() {
            for &key in keys {
                self.band_docs(key, out)?;
            }
            return Ok(());
        }
        self.base.band_docs_all(keys, out)?;
        if !p.bands_added.is_empty() {
            for key in keys {
                if let Some(added) = p.bands_added.get(key) {
                    out.extend_from_slice(added);
                }
            }
        }
        Ok(())
    }

    fn doc(&self, id: DocId) -> Result<Option<DocRecord>> {
        match self.pending.docs.get(&id) {
            Some(v) => Ok(v.clone()),
            None => self.base.doc(id),
        }
    }

    fn urls_seen_before(&self, cutoff: u64, limit: usize, out: &mut Vec<u128>) -> Result<()> {
        let p = &*self.pending;
        if p.urls.is_empty() {
            return self.base.urls_seen_before(cutoff, limit, out);
        }
        let mut older = Vec::new();
        self.base
            .urls_seen_before(cutoff, limit + p.urls.len(), &mut older)?;
        let mut seen: Vec<(u64, u128)> = Vec::new();
        for digest in older {
            if p.urls.contains_key(&digest) {
                continue;
            }
            if let Some(rec) = self.base.url(digest)? {
                seen.push((rec.first_seen, digest));
            }
        }
        for (&digest, rec) in &p.urls {
            if let Some(rec) = rec
                && rec.first_seen < cutoff
            {
                seen.push((rec.first_seen, digest));
            }
        }
        seen.sort_unstable();
        out.extend(seen.into_iter().take(limit).map(|(_, d)| d));
        Ok(())
    }

    fn oldest_docs(&self, limit: usize, out: &mut Vec<(DocId, DocRecord)>) -> Result<()> {
        let p = &*self.pending;
        if p.docs.is_empty() {
            return self.base.oldest_docs(limit, out);
        }
        let mut older = Vec::new();
        self.base.oldest_docs(limit + p.docs.len(), &mut older)?;
        older.retain(|(id, _)| !p.docs.contains_key(id));
        older.extend(
            p.docs
                .iter()
                .filter_map(|(&id, rec)| rec.as_ref().map(|r| (id, r.clone()))),
        );
        older.sort_unstable_by_key(|(id, _)| *id);
        out.extend(older.into_iter().take(limit));
        Ok(())
    }

    fn doc_count(&self) -> Result<u64> {
        let base = self.base.doc_count()?;
        Ok(base.saturating_add_signed(self.pending.doc_delta))
    }
}

impl Tables for Overlay<'_> {
    fn set_meta(&mut self, key: &str, value: &[u8]) -> Result<()> {
        if key == NEXT_ID_META {
            self.pending.next_id = None;
        }
        self.pending.meta.insert(key.to_string(), value.to_vec());
        Ok(())
    }

    fn next_doc_id(&mut self) -> Result<DocId> {
        if let Some(id) = self.pending.next_id {
            self.pending.next_id = Some(id + 1);
            return Ok(id);
        }
        let id = match self.meta(NEXT_ID_META)? {
            Some(b) => u64::from_le_bytes(
                b.as_slice()
                    .try_into()
                    .map_err(|_| Error::Corrupt(format!("next_id of {} bytes", b.len())))?,
            ),
            None => 0,
        };
        self.pending.next_id = Some(id + 1);
        Ok(id)
    }

    fn put_url(&mut self, digest: u128, rec: &UrlRecord) -> Result<()> {
        self.pending.urls.insert(digest, Some(rec.clone()));
        self.pending.log.put_url(digest, rec);
        Ok(())
    }

    fn remove_url(&mut self, digest: u128) -> Result<bool> {
        let existed = self.url(digest)?.is_some();
        self.pending.urls.insert(digest, None);
        self.pending.log.remove_url(digest);
        Ok(existed)
    }

    fn add_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        self.pending.titles_added.entry(digest).or_default().push(id);
        self.pending.log.title(true, digest, id);
        Ok(())
    }

    fn remove_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        if let Some(ids) = self.pending.titles_added.get_mut(&digest) {
            ids.retain(|x| *x != id);
        }
        self.pending.titles_removed.insert((digest, id));
        self.pending.log.title(false, digest, id);
        Ok(())
    }

    fn add_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        if table > usize::from(u8::MAX) {
            return Err(Error::Config(format!("block table {table} (at most 255 tables)")));
        }
        self.pending
            .blocks_added
            .entry((table, key))
            .or_default()
            .push((fp, id));
        self.pending.log.block(true, table, key, fp, id);
        Ok(())
    }

    fn remove_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        if let Some(v) = self.pending.blocks_added.get_mut(&(table, key)) {
            v.retain(|(f, i)| !(*f == fp && *i == id));
        }
        self.pending.blocks_removed.insert((table, key, fp.low(), id));
        self.pending.log.block(false, table, key, fp, id);
        Ok(())
    }

    fn add_band(&mut self, key: u64, id: DocId) -> Result<()> {
        self.pending.bands_added.entry(key).or_default().push(id);
        self.pending.log.band(true, key, id);
        Ok(())
    }

    fn remove_band(&mut self, key: u64, id: DocId) -> Result<()> {
        if let Some(v) = self.pending.bands_added.get_mut(&key) {
            v.retain(|x| *x != id);
        }
        self.pending.bands_removed.insert((key, id));
        self.pending.log.band(false, key, id);
        Ok(())
    }

    fn put_doc(&mut self, id: DocId, rec: DocRecord) -> Result<()> {
        if self.doc(id)?.is_none() {
            self.pending.doc_delta += 1;
        }
        self.pending.log.put_doc(id, &rec);
        self.pending.docs.insert(id, Some(rec));
        Ok(())
    }

    fn remove_doc(&mut self, id: DocId) -> Result<()> {
        if self.doc(id)?.is_some() {
            self.pending.doc_delta -= 1;
        }
        self.pending.docs.insert(id, None);
        self.pending.log.remove_doc(id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::sketch::{SKETCH_BINS, Sketch};
    use crate::store::memory::MemState;
    use proptest::prelude::*;

    /// One write, over small domains so that writes collide.
    #[derive(Clone, Debug)]
    enum W {
        PutUrl(u128, u64),
        RemoveUrl(u128),
        AddTitle(u128),
        RemoveTitle(u128, DocId),
        AddBlock(usize, u64, u64, DocId),
        RemoveBlock(usize, u64, u64, DocId),
        AddBand(u64, DocId),
        RemoveBand(u64, DocId),
        PutDoc(DocId),
        RemoveDoc(DocId),
        NewId,
        Meta(u8),
    }

    fn w() -> impl Strategy<Value = W> {
        let d = 0u128..4;
        let id = 0u64..8;
        prop_oneof![
            (d.clone(), 0u64..5).prop_map(|(d, t)| W::PutUrl(d, t)),
            d.clone().prop_map(W::RemoveUrl),
            d.clone().prop_map(W::AddTitle),
            (d.clone(), 100u64..120).prop_map(|(d, i)| W::RemoveTitle(d, i)),
            (0usize..2, 0u64..3, 0u64..3, id.clone()).prop_map(|(t, k, f, i)| W::AddBlock(t, k, f, i)),
            (0usize..2, 0u64..3, 0u64..3, id.clone()).prop_map(|(t, k, f, i)| W::RemoveBlock(t, k, f, i)),
            (0u64..3, id.clone()).prop_map(|(k, i)| W::AddBand(k, i)),
            (0u64..3, id.clone()).prop_map(|(k, i)| W::RemoveBand(k, i)),
            id.clone().prop_map(W::PutDoc),
            id.prop_map(W::RemoveDoc),
            Just(W::NewId),
            (0u8..3).prop_map(W::Meta),
        ]
    }

    fn record(id: DocId) -> DocRecord {
        DocRecord {
            fingerprint: Fingerprint::new(id * 3),
            inserted_at: id,
            title: None,
            sketch: Sketch::from_bins([id as u16; SKETCH_BINS], u128::from(id)),
            url: format!("u{id}"),
            article: None,
            extent: None,
        }
    }

    /// Applies `ws` to `t`; title ids come from `next_title` (unique, as
    /// the tiers use them).
    fn run(ws: &[W], t: &mut dyn Tables, next_title: &mut DocId) -> Result<()> {
        for w in ws {
            match w {
                W::PutUrl(d, at) => t.put_url(
                    *d,
                    &UrlRecord {
                        first_seen: *at,
                        url: format!("http://{d}/"),
                    },
                )?,
                W::RemoveUrl(d) => {
                    t.remove_url(*d)?;
                }
                W::AddTitle(d) => {
                    *next_title += 1;
                    t.add_title(*d, *next_title)?;
                }
                W::RemoveTitle(d, id) => t.remove_title(*d, *id)?,
                W::AddBlock(tb, k, f, i) => t.add_block(*tb, *k, Fingerprint::new(*f), *i)?,
                W::RemoveBlock(tb, k, f, i) => t.remove_block(*tb, *k, Fingerprint::new(*f), *i)?,
                W::AddBand(k, i) => t.add_band(*k, *i)?,
                W::RemoveBand(k, i) => t.remove_band(*k, *i)?,
                W::PutDoc(i) => t.put_doc(*i, record(*i))?,
                W::RemoveDoc(i) => t.remove_doc(*i)?,
                W::NewId => {
                    t.next_doc_id()?;
                }
                W::Meta(v) => t.set_meta("m", &[*v])?,
            }
        }
        Ok(())
    }

    /// Everything a transaction can read, over the domains of [`w`].
    fn reads(t: &dyn ReadTables) -> Result<Vec<String>> {
        let mut out = vec![
            format!("{:?} {:?}", t.meta("m")?, t.meta(NEXT_ID_META)?),
            format!("count {}", t.doc_count()?),
        ];
        for d in 0..4u128 {
            let (mut few, mut all) = (Vec::new(), Vec::new());
            t.title_docs(d, 2, &mut few)?;
            t.title_docs(d, 100, &mut all)?;
            out.push(format!("url {d} {:?} titles {few:?} {all:?}", t.url(d)?));
        }
        for table in 0..2 {
            for k in 0..3 {
                let mut c = Vec::new();
                t.candidates(table, k, &mut c)?;
                out.push(format!("block {table} {k} {c:?}"));
            }
        }
        for k in 0..3 {
            let mut ids = Vec::new();
            t.band_docs(k, &mut ids)?;
            out.push(format!("band {k} {ids:?}"));
        }
        // In any order (the check sorts them).
        let mut all = Vec::new();
        t.band_docs_all(&[0, 1, 2], &mut all)?;
        all.sort_unstable();
        out.push(format!("bands {all:?}"));
        for id in 0..8 {
            out.push(format!("doc {id} {:?}", t.doc(id)?.map(|r| r.url)));
        }
        let (mut urls, mut docs) = (Vec::new(), Vec::new());
        t.urls_seen_before(3, 2, &mut urls)?;
        t.oldest_docs(3, &mut docs)?;
        out.push(format!(
            "old urls {urls:?} docs {:?}",
            docs.iter().map(|d| d.0).collect::<Vec<_>>()
        ));
        Ok(out)
    }

    proptest! {
        /// A transaction reads through the overlay what it would read from
        /// a store it had written to, and its log entry, applied to the
        /// store, makes exactly that store.
        #[test]
        fn overlay_reads_and_entry_match_writing_in_place(
            before in prop::collection::vec(w(), 0..40),
            tx in prop::collection::vec(w(), 0..40),
        ) {
            let (mut titles_a, mut titles_b) = (0, 0);
            let mut replica = MemState::default();
            run(&before, &mut replica, &mut titles_a).unwrap();
            let mut direct = MemState::default();
            run(&before, &mut direct, &mut titles_b).unwrap();
            run(&tx, &mut direct, &mut titles_b).unwrap();

            let mut pending = Pending::default();
            let mut view = Overlay { base: &replica, pending: &mut pending };
            run(&tx, &mut view, &mut titles_a).unwrap();
            prop_assert_eq!(reads(&view).unwrap(), reads(&direct).unwrap());

            let entry = pending.into_entry();
            apply(&entry, &mut replica).unwrap();
            prop_assert_eq!(reads(&replica).unwrap(), reads(&direct).unwrap());
        }

        /// A snapshot (the dump's entries) rebuilds the same state.
        #[test]
        fn a_dump_rebuilds_the_state(ws in prop::collection::vec(w(), 0..60), chunk in 1usize..400) {
            let mut state = MemState::default();
            run(&ws, &mut state, &mut 0).unwrap();
            let mut entries = Vec::new();
            state.dump(chunk, &mut |e| { entries.push(e); Ok(()) }).unwrap();
            let mut copy = MemState::default();
            for e in &entries {
                apply(e, &mut copy).unwrap();
            }
            prop_assert_eq!(reads(&copy).unwrap(), reads(&state).unwrap());
        }
    }

    #[test]
    fn bad_entries_are_refused_with_what_was_wrong() {
        let mut s = MemState::default();
        let e = apply(&[9], &mut s).unwrap_err().to_string();
        assert!(e.contains("format 9"), "{e}");
        let mut w = LogWriter::default();
        w.put_url(
            1,
            &UrlRecord {
                first_seen: 2,
                url: "http://x/".into(),
            },
        );
        let mut bytes = w.into_bytes();
        bytes.truncate(bytes.len() - 3);
        let e = apply(&bytes, &mut s).unwrap_err().to_string();
        assert!(e.contains("url"), "{e}");
        let e = apply(&[FORMAT, 99], &mut s).unwrap_err().to_string();
        assert!(e.contains("unknown write 99"), "{e}");
    }
}
