//! The id of a duplicate's partner, for [`super::Duplicate::of_id`].
//!
//! The content tier reads candidates by id and keeps the best record; this
//! wrapper notes which id each record it read came from, so the partner's
//! id is known without a second lookup (and without the content tier
//! carrying ids itself).

use std::cell::RefCell;

use crate::error::Result;
use crate::fingerprint::Fingerprint;
use crate::store::{DocId, DocRecord, Prefetch, ReadTables, UrlRecord};

/// [`ReadTables`] that remembers (id, insertion time, fingerprint) of each
/// document read through it.
pub(super) struct Ids<'t> {
    inner: &'t dyn ReadTables,
    read: RefCell<Vec<(DocId, u64, Fingerprint)>>,
}

impl<'t> Ids<'t> {
    pub(super) fn new(inner: &'t dyn ReadTables) -> Ids<'t> {
        Ids {
            inner,
            read: RefCell::new(Vec::new()),
        }
    }

    /// The id `rec` was read under. Records are told apart by insertion
    /// time and fingerprint, and by URL in the rare case that two read
    /// share both.
    pub(super) fn id_of(&self, rec: &DocRecord) -> Result<Option<DocId>> {
        let read = self.read.borrow();
        let mut same = read
            .iter()
            .filter(|(_, at, fp)| *at == rec.inserted_at && *fp == rec.fingerprint)
            .map(|(id, ..)| *id);
        let (Some(first), second) = (same.next(), same.next()) else {
            return Ok(None);
        };
        let Some(second) = second else {
            return Ok(Some(first));
        };
        for id in [first, second].into_iter().chain(same) {
            if self.inner.doc(id)?.is_some_and(|r| r.url == rec.url) {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }
}

impl ReadTables for Ids<'_> {
    fn prefetch(&self, keys: &Prefetch) -> Result<()> {
        self.inner.prefetch(keys)
    }
    fn wants_prefetch(&self) -> bool {
        self.inner.wants_prefetch()
    }
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.meta(key)
    }
    fn url(&self, digest: u128) -> Result<Option<UrlRecord>> {
        self.inner.url(digest)
    }
    fn title_docs(&self, digest: u128, limit: usize, out: &mut Vec<DocId>) -> Result<()> {
        self.inner.title_docs(digest, limit, out)
    }
    fn candidates(&self, table: usize, key: u64, out: &mut Vec<(Fingerprint, DocId)>) -> Result<()> {
        self.inner.candidates(table, key, out)
    }
    fn near_all(
        &self,
        keys: &[(usize, u64)],
        fp: Fingerprint,
        max: u32,
        out: &mut Vec<(u32, DocId)>,
    ) -> Result<()> {
        self.inner.near_all(keys, fp, max, out)
    }
    fn band_docs(&self, key: u64, out: &mut Vec<DocId>) -> Result<()> {
        self.inner.band_docs(key, out)
    }
    fn band_docs_all(&self, keys: &[u64], out: &mut Vec<DocId>) -> Result<()> {
        self.inner.band_docs_all(keys, out)
    }
    fn doc(&self, id: DocId) -> Result<Option<DocRecord>> {
        let rec = self.inner.doc(id)?;
        if let Some(r) = &rec {
            self.read.borrow_mut().push((id, r.inserted_at, r.fingerprint));
        }
        Ok(rec)
    }
    fn urls_seen_before(&self, cutoff: u64, limit: usize, out: &mut Vec<u128>) -> Result<()> {
        self.inner.urls_seen_before(cutoff, limit, out)
    }
    fn oldest_docs(&self, limit: usize, out: &mut Vec<(DocId, DocRecord)>) -> Result<()> {
        self.inner.oldest_docs(limit, out)
    }
    fn doc_count(&self) -> Result<u64> {
        self.inner.doc_count()
    }
}
