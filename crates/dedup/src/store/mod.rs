//! Where the three tiers keep their state.
//!
//! A [`Store`] runs a closure inside one write transaction over the
//! [`Tables`]: everything the closure reads and writes is one atomic step, so
//! check-and-insert never lets two identical documents both through, even
//! from many threads. [`MemoryStore`] is for tests and one-shot batch runs;
//! [`RedbStore`] persists to one file and is the default; `RedisStore`
//! (feature `redis`) shares the state between processes and machines.
//!
//! A store may run a write closure more than once: the Redis store is
//! optimistic (it watches what the closure read and retries the closure
//! when another process changed any of it before the commit), so closures
//! passed to [`Store::write`] must only act through the tables.

mod any;
mod bands;
mod doc_table;
mod early;
mod memory;
#[cfg(feature = "redis")]
mod oplog;
#[cfg(feature = "redb")]
mod redb;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod replicated;
#[cfg(feature = "sled")]
mod sled;

#[cfg(feature = "redb")]
pub use self::redb::{Commit, RedbOptions, RedbReadOnlyStore, RedbStore, RedbTables};
#[cfg(feature = "redis")]
pub use self::redis::{MemoryPart, RedisOptions, RedisStore, clear_namespace, connect_namespace, redact};
#[cfg(feature = "redis")]
pub use self::replicated::ReplicatedStore;
#[cfg(feature = "sled")]
pub use self::sled::SledStore;
pub use any::AnyStore;
pub use early::EarlyHits;
#[cfg_attr(not(feature = "redb"), allow(unused_imports))]
pub(crate) use early::store_number;
pub use memory::MemoryStore;

pub(crate) use bands::BandIndex;

use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::sketch::Sketch;

/// The key of one block table entry: table number and block key.
#[cfg_attr(not(any(feature = "redb", feature = "sled")), allow(dead_code))] // the disk stores only
pub(crate) fn block_key(table: usize, key: u64) -> u128 {
    ((table as u128) << 64) | u128::from(key)
}

/// Bytes of one posting-list entry: fingerprint and document id, both
/// little-endian. Disk stores keep each (table, key)'s entries as one value.
#[cfg_attr(not(any(feature = "redb", feature = "sled")), allow(dead_code))] // the disk stores only
pub(crate) const POSTING: usize = 16;

#[cfg_attr(not(any(feature = "redb", feature = "sled")), allow(dead_code))] // the disk stores only
pub(crate) fn posting(fp: Fingerprint, id: DocId) -> [u8; POSTING] {
    let mut e = [0u8; POSTING];
    e[..8].copy_from_slice(&fp.low().to_le_bytes());
    e[8..].copy_from_slice(&id.to_le_bytes());
    e
}

#[cfg_attr(not(any(feature = "redb", feature = "sled")), allow(dead_code))] // the disk stores only
pub(crate) fn decode_postings(list: &[u8]) -> impl Iterator<Item = (Fingerprint, DocId)> + '_ {
    list.chunks_exact(POSTING).map(|e| {
        let mut fp = [0u8; 8];
        let mut id = [0u8; 8];
        fp.copy_from_slice(&e[..8]);
        id.copy_from_slice(&e[8..]);
        (Fingerprint::new(u64::from_le_bytes(fp)), u64::from_le_bytes(id))
    })
}

/// (distance, document) of the `entries` within `max` of `fp`, over the
/// low halves: postings hold only those (see [`Fingerprint`]).
pub(crate) fn within(
    fp: Fingerprint,
    max: u32,
    entries: impl IntoIterator<Item = (Fingerprint, DocId)>,
) -> impl Iterator<Item = (u32, DocId)> {
    entries
        .into_iter()
        .map(move |(f, id)| ((f.low() ^ fp.low()).count_ones(), id))
        .filter(move |&(d, _)| d <= max)
}

/// `list` without the entry `gone` (`None` when nothing was removed).
#[cfg_attr(not(any(feature = "redb", feature = "sled")), allow(dead_code))] // the disk stores only
pub(crate) fn without_posting(list: &[u8], gone: &[u8; POSTING]) -> Option<Vec<u8>> {
    let kept: Vec<u8> = list
        .chunks_exact(POSTING)
        .filter(|e| *e != gone.as_slice())
        .flatten()
        .copied()
        .collect();
    (kept.len() != list.len()).then_some(kept)
}

/// Most documents one band key lists, newest kept: a
/// band shared by thousands of pages (an empty-ish text, a template that is
/// all a page has) would otherwise make every insert rewrite a huge list
/// and every query verify thousands of candidates. A copy is almost always
/// of a recent page, as for [`crate::TITLE_CANDIDATES`].
pub const BAND_POSTINGS: usize = 64;

/// Appends `id` to an id list (8 bytes each, little-endian), dropping the
/// oldest entries beyond [`BAND_POSTINGS`]. The sled store keeps its bands
/// as such lists.
#[cfg(feature = "sled")]
pub(crate) fn push_id_capped(list: &mut Vec<u8>, id: DocId) {
    list.extend_from_slice(&id.to_le_bytes());
    let excess = list.len().saturating_sub(BAND_POSTINGS * 8);
    if excess > 0 {
        list.drain(..excess);
    }
}

#[cfg(feature = "sled")]
pub(crate) fn decode_ids(list: &[u8]) -> impl Iterator<Item = DocId> + '_ {
    list.chunks_exact(8).map(|c| {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        u64::from_le_bytes(b)
    })
}

/// `list` without `id` (`None` when it was not there).
#[cfg(feature = "sled")]
pub(crate) fn without_id(list: &[u8], id: DocId) -> Option<Vec<u8>> {
    let gone = id.to_le_bytes();
    let kept: Vec<u8> = list
        .chunks_exact(8)
        .filter(|e| *e != gone.as_slice())
        .flatten()
        .copied()
        .collect();
    (kept.len() != list.len()).then_some(kept)
}

/// Appends `id` to a band's ids, dropping the oldest beyond
/// [`BAND_POSTINGS`].
pub(crate) fn push_capped(ids: &mut Vec<DocId>, id: DocId) {
    ids.push(id);
    if ids.len() > BAND_POSTINGS {
        ids.remove(0);
    }
}

/// A stored document's number; assigned in insertion order.
pub type DocId = u64;

/// What the content and title tiers keep about a kept document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocRecord {
    /// Its SimHash.
    pub fingerprint: Fingerprint,
    /// When it was inserted (seconds since the Unix epoch).
    pub inserted_at: u64,
    /// MD5 of its normalized title, if it had one.
    pub title: Option<[u8; 16]>,
    /// Its resemblance sketch, against which candidates are verified.
    pub sketch: Sketch,
    /// Its URL, reported as `duplicate_of` for later copies.
    pub url: String,
    /// The record is of its page's article (see [`crate::Article`]):
    /// another site's page with the same article is a copy of it.
    pub article: Option<ArticleMark>,
    /// How much its page showed beyond the text recorded
    /// ([`crate::extent`]); `None` for a text and for records written
    /// before extents existed.
    pub extent: Option<crate::extent::Extent>,
}

/// What a record of a page's article keeps beside its sketch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArticleMark {
    /// The record holds the article alone: its page was judged on another
    /// text, so only another page's article may match it (on another site,
    /// or on its own alike as shown).
    pub only: bool,
    /// The scripts of the whole page: a page in a script its partner does
    /// not have is a translation around an untranslated block.
    pub scripts: crate::article::PageScripts,
}

impl DocRecord {
    /// Byte encoding: fingerprint (low half), time, flags, title digest
    /// (flag 1), the fingerprint's upper half (flag 2, 128 bits only),
    /// the page's scripts (flag 8: a record of its page's article; flag 16:
    /// of the article alone), the page's extent (flag 32, two bytes) and
    /// its outline (flag 64, [`crate::OUTLINE_BYTES`]; flag 128: in bins of
    /// one bit, the layout since 2026-12-03), sketch (one byte a bin under flag 4, two otherwise), URL. A record with a 64-bit fingerprint and a 16-bit
    /// sketch and no article has the bytes it had before any option existed.
    pub fn encode(&self) -> Vec<u8> {
        let outline = self.extent.and_then(|e| e.outline);
        // Exactly its length: the memory store keeps this buffer as is.
        let len = 17
            + 16 * usize::from(self.title.is_some())
            + 8 * usize::from(self.fingerprint.high().is_some())
            + 2 * usize::from(self.article.is_some())
            + 2 * usize::from(self.extent.is_some())
            + crate::OUTLINE_BYTES * usize::from(outline.is_some())
            + self.sketch.encoded_len()
            + self.url.len();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&self.fingerprint.low().to_le_bytes());
        out.extend_from_slice(&self.inserted_at.to_le_bytes());
        let high = self.fingerprint.high();
        out.push(
            u8::from(self.title.is_some())
                | u8::from(high.is_some()) << 1
                | u8::from(self.sketch.bits() == 8) << 2
                | u8::from(self.article.is_some()) << 3
                | u8::from(self.article.is_some_and(|a| a.only)) << 4
                | u8::from(self.extent.is_some()) << 5
                | u8::from(outline.is_some()) << 6
                | u8::from(outline.is_some_and(|o| !o.is_before_bits())) << 7,
        );
        if let Some(t) = self.title {
            out.extend_from_slice(&t);
        }
        if let Some(h) = high {
            out.extend_from_slice(&h.to_le_bytes());
        }
        if let Some(a) = self.article {
            out.extend_from_slice(&a.scripts.to_bytes());
        }
        if let Some(e) = self.extent {
            out.extend_from_slice(&e.to_bytes());
        }
        if let Some(o) = outline {
            out.extend_from_slice(&o.to_bytes());
        }
        self.sketch.encode_into(&mut out);
        out.extend_from_slice(self.url.as_bytes());
        out
    }

    /// Inverse of [`DocRecord::encode`].
    pub fn decode(bytes: &[u8]) -> Result<DocRecord> {
        let bad = || Error::Corrupt(format!("document record of {} bytes", bytes.len()));
        let u64_at = |at: usize| -> Result<u64> {
            let b: [u8; 8] = bytes
                .get(at..at + 8)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?;
            Ok(u64::from_le_bytes(b))
        };
        let low = u64_at(0)?;
        let at = u64_at(8)?;
        let flags = *bytes.get(16).ok_or_else(bad)?;
        // Flag 16 (article alone) only with flag 8 (article), flag 64
        // (outline) only with flag 32 (extent), flag 128 (its bins of one
        // bit) only with flag 64.
        if flags & 24 == 16 || flags & 96 == 64 || flags & 192 == 128 {
            return Err(bad());
        }
        let mut rest = 17;
        let title = if flags & 1 == 1 {
            let t: [u8; 16] = bytes.get(17..33).ok_or_else(bad)?.try_into().map_err(|_| bad())?;
            rest = 33;
            Some(t)
        } else {
            None
        };
        let fingerprint = if flags & 2 == 2 {
            let high = u64_at(rest)?;
            rest += 8;
            Fingerprint::wide(u128::from(high) << 64 | u128::from(low))
        } else {
            Fingerprint::new(low)
        };
        // The two bytes at `rest` when `flag` is set, `rest` moved past them.
        let mut two_bytes = |flag: u8| -> Result<Option<[u8; 2]>> {
            if flags & flag == 0 {
                return Ok(None);
            }
            let b: [u8; 2] = bytes
                .get(rest..rest + 2)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?;
            rest += 2;
            Ok(Some(b))
        };
        let article = two_bytes(8)?.map(|b| ArticleMark {
            only: flags & 16 == 16,
            scripts: crate::article::PageScripts::from_bytes(b),
        });
        let mut extent = two_bytes(32)?.map(crate::extent::Extent::from_bytes);
        if flags & 64 == 64 {
            let b: [u8; crate::OUTLINE_BYTES] = bytes
                .get(rest..rest + crate::OUTLINE_BYTES)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?;
            rest += crate::OUTLINE_BYTES;
            if let Some(e) = &mut extent {
                e.outline = Some(if flags & 128 == 128 {
                    crate::Outline::from_bytes(b)
                } else {
                    crate::Outline::from_bytes_before_bits(b)
                });
            }
        }
        let sketch_end = rest
            + if flags & 4 == 4 {
                Sketch::ENCODED_LEN_NARROW
            } else {
                Sketch::ENCODED_LEN
            };
        let sketch = Sketch::decode(bytes.get(rest..sketch_end).ok_or_else(bad)?).ok_or_else(bad)?;
        let url = std::str::from_utf8(&bytes[sketch_end..])
            .map_err(|_| bad())?
            .to_string();
        Ok(DocRecord {
            fingerprint,
            inserted_at: at,
            title,
            sketch,
            url,
            article,
            extent,
        })
    }
}

/// What the URL tier keeps about a URL: when it was first seen, and the URL
/// as it was first given (reported as `duplicate_of`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlRecord {
    /// Seconds since the Unix epoch.
    pub first_seen: u64,
    /// The URL as first given.
    pub url: String,
}

impl UrlRecord {
    /// Byte encoding: time, URL.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.url.len());
        out.extend_from_slice(&self.first_seen.to_le_bytes());
        out.extend_from_slice(self.url.as_bytes());
        out
    }

    /// Inverse of [`UrlRecord::encode`].
    pub fn decode(bytes: &[u8]) -> Result<UrlRecord> {
        let bad = || Error::Corrupt(format!("URL record of {} bytes", bytes.len()));
        let at = u64::from_le_bytes(bytes.get(0..8).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
        let url = std::str::from_utf8(&bytes[8..]).map_err(|_| bad())?.to_string();
        Ok(UrlRecord { first_seen: at, url })
    }
}

/// Name of the metadata value holding the next document id (a u64,
/// little-endian), read and advanced by [`Tables::next_doc_id`]'s default.
pub const NEXT_ID_META: &str = "next_id";

/// The keys a check is about to read, announced up front with
/// [`ReadTables::prefetch`] so that a networked store fetches them in one
/// round trip instead of one per key (local stores ignore it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prefetch {
    /// URL digests ([`ReadTables::url`]).
    pub urls: Vec<u128>,
    /// Title digests ([`ReadTables::title_docs`]).
    pub titles: Vec<u128>,
    /// (table, block key) pairs ([`ReadTables::candidates`]).
    pub blocks: Vec<(usize, u64)>,
    /// LSH band keys ([`ReadTables::band_docs`]).
    pub bands: Vec<u64>,
    /// Documents the transaction may insert: a store that hands out ids
    /// from a shared counter reserves that many in the same round trip.
    pub documents: usize,
}

impl Prefetch {
    /// Whether nothing is announced.
    pub fn is_empty(&self) -> bool {
        self.urls.is_empty() && self.titles.is_empty() && self.blocks.is_empty() && self.bands.is_empty()
    }
}

/// Read access to the tiers' tables, in one consistent snapshot.
pub trait ReadTables {
    /// Announces keys about to be read, so a store that pays a network
    /// round trip per read can fetch them all at once. A hint: reads of
    /// keys not announced still work, and local stores do nothing.
    fn prefetch(&self, keys: &Prefetch) -> Result<()> {
        let _ = keys;
        Ok(())
    }

    /// Whether [`ReadTables::prefetch`] does anything here. Local stores
    /// say no, so a check does not compute and collect its keys for
    /// nothing (two allocations and the band keys once more per document).
    fn wants_prefetch(&self) -> bool {
        true
    }

    /// A metadata value (parameters, counters).
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>>;
    /// The URL tier's record for an MD5 digest.
    fn url(&self, digest: u128) -> Result<Option<UrlRecord>>;
    /// Appends the `limit` most recently stored documents whose normalized
    /// title has this digest, newest first.
    fn title_docs(&self, digest: u128, limit: usize, out: &mut Vec<DocId>) -> Result<()>;
    /// Appends every (fingerprint, document) stored under `key` in table `table`.
    fn candidates(&self, table: usize, key: u64, out: &mut Vec<(Fingerprint, DocId)>) -> Result<()>;
    /// Appends (distance, document) of every fingerprint within `max` of
    /// `fp` stored under any of `keys` ((table, block key) pairs), in no
    /// particular order; a document under several keys is listed under
    /// each. Stores in memory look up all the keys before scanning any,
    /// so the tables' cache misses overlap.
    fn near_all(
        &self,
        keys: &[(usize, u64)],
        fp: Fingerprint,
        max: u32,
        out: &mut Vec<(u32, DocId)>,
    ) -> Result<()> {
        let mut cands = Vec::new();
        for &(table, key) in keys {
            self.candidates(table, key, &mut cands)?;
        }
        out.extend(within(fp, max, cands));
        Ok(())
    }
    /// [`ReadTables::near_all`] from `early`, hits a snapshot of this store
    /// found ([`Store::near_early`]), with every change committed since it
    /// (and made in this transaction) applied: the same hits, without
    /// reading the block lists. `Ok(false)`, nothing appended, where
    /// `early` does not answer this lookup or this store no longer holds
    /// the changes since it (and in stores that do not find hits early):
    /// then the caller reads the lists.
    fn near_since(
        &self,
        early: &EarlyHits,
        keys: &[(usize, u64)],
        fp: Fingerprint,
        max: u32,
        out: &mut Vec<(u32, DocId)>,
    ) -> Result<bool> {
        let _ = (early, keys, fp, max, out);
        Ok(false)
    }
    /// [`ReadTables::title_docs`] from the title list a snapshot found
    /// (`early`, [`Store::near_early`]) with every change since applied;
    /// `Ok(false)`, nothing appended, as for [`ReadTables::near_since`].
    fn title_docs_since(
        &self,
        early: &EarlyHits,
        digest: u128,
        limit: usize,
        out: &mut Vec<DocId>,
    ) -> Result<bool> {
        let _ = (early, digest, limit, out);
        Ok(false)
    }
    /// Appends the documents (at most [`BAND_POSTINGS`], oldest first)
    /// indexed under an LSH band key.
    fn band_docs(&self, key: u64, out: &mut Vec<DocId>) -> Result<()>;
    /// [`ReadTables::band_docs`] of each of `keys` in turn: all of a
    /// document's band keys, which a check looks up together. Stores that
    /// keep the band index in memory issue the lookups together, so their
    /// cache misses overlap.
    fn band_docs_all(&self, keys: &[u64], out: &mut Vec<DocId>) -> Result<()> {
        for &key in keys {
            self.band_docs(key, out)?;
        }
        Ok(())
    }
    /// A stored document.
    fn doc(&self, id: DocId) -> Result<Option<DocRecord>>;
    /// Appends the digests of at most `limit` URLs first seen before
    /// `cutoff`, oldest first. Stores answer from an index by first-seen
    /// time, so a purge reads only the expired entries, however many URLs
    /// are live.
    fn urls_seen_before(&self, cutoff: u64, limit: usize, out: &mut Vec<u128>) -> Result<()>;
    /// Appends up to `limit` documents in insertion order (oldest first).
    fn oldest_docs(&self, limit: usize, out: &mut Vec<(DocId, DocRecord)>) -> Result<()>;
    /// Number of stored documents.
    fn doc_count(&self) -> Result<u64>;
}

/// The tables of one write transaction. Implemented by each store; the
/// [`crate::Deduper`] is written against this trait only.
pub trait Tables: ReadTables {
    /// Sets a metadata value.
    fn set_meta(&mut self, key: &str, value: &[u8]) -> Result<()>;
    /// Records a URL digest (replacing any earlier record of it), and
    /// indexes it by first-seen time.
    fn put_url(&mut self, digest: u128, rec: &UrlRecord) -> Result<()>;
    /// Forgets a URL and its first-seen index entry; returns whether it was
    /// recorded.
    fn remove_url(&mut self, digest: u128) -> Result<bool>;
    /// Indexes a document under a title digest.
    fn add_title(&mut self, digest: u128, id: DocId) -> Result<()>;
    /// Removes a document from a title digest.
    fn remove_title(&mut self, digest: u128, id: DocId) -> Result<()>;
    /// Stores a fingerprint under `key` in table `table`.
    fn add_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()>;
    /// Removes a fingerprint from table `table`.
    fn remove_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()>;
    /// Indexes a document under a band key, forgetting the oldest beyond
    /// [`BAND_POSTINGS`].
    fn add_band(&mut self, key: u64, id: DocId) -> Result<()>;
    /// Removes a document from a band key.
    fn remove_band(&mut self, key: u64, id: DocId) -> Result<()>;
    /// Stores a document. Takes it whole: the memory stores keep the
    /// record itself, and a check builds it only to store it.
    fn put_doc(&mut self, id: DocId, rec: DocRecord) -> Result<()>;
    /// Removes a document record.
    fn remove_doc(&mut self, id: DocId) -> Result<()>;
    /// Assigns the next document id. The default reads and advances the
    /// metadata value [`NEXT_ID_META`] in this transaction. A store shared
    /// by processes may hand out ids from a counter outside the
    /// transaction instead (ids must be unique and ascending in time; gaps
    /// are harmless), so that concurrent inserts do not all conflict on one
    /// counter.
    fn next_doc_id(&mut self) -> Result<DocId> {
        let id = match self.meta(NEXT_ID_META)? {
            Some(b) => u64::from_le_bytes(
                b.as_slice()
                    .try_into()
                    .map_err(|_| Error::Corrupt(format!("next_id of {} bytes", b.len())))?,
            ),
            None => 0,
        };
        self.set_meta(NEXT_ID_META, &(id + 1).to_le_bytes())?;
        Ok(id)
    }
}

/// A place the tiers' state lives.
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Runs `f` in one write transaction: all or nothing, and serializable
    /// with every other `write` on this store (and, for a shared store,
    /// every other process's). `f` may be run again when an optimistic
    /// store's commit finds that another writer changed what `f` read; so
    /// `f` must have no effect outside the tables it is given.
    fn write<R>(&self, f: impl FnMut(&mut dyn Tables) -> Result<R>) -> Result<R>;

    /// Runs `f` on a consistent read-only snapshot. Readers never wait for
    /// each other, nor (on redb) for the writer. Like `write`, `f` may be
    /// run again when the snapshot could not be validated.
    fn read<R>(&self, f: impl FnMut(&dyn ReadTables) -> Result<R>) -> Result<R>;

    /// Makes everything written so far durable. Stores group writes and
    /// sync them periodically; what was written before `flush` returns
    /// survives a crash.
    fn flush(&self) -> Result<()>;

    /// Where the store lives, for error messages (`None` in memory).
    fn location(&self) -> Option<&std::path::Path>;

    /// How the store lays out what it keeps, when a build that laid it out
    /// otherwise would misread it: recorded with the parameters
    /// ([`crate::Deduper::params`], `layout=`), so that such a build
    /// refuses the store (a parameter it does not know) rather than, say,
    /// look for block lists where there are none. `None` for the layout
    /// every build reads.
    fn layout(&self) -> Option<&'static str> {
        None
    }

    /// [`ReadTables::near_all`] on a snapshot, as [`EarlyHits`] that this
    /// store's writer brings up to date ([`ReadTables::near_since`]): for
    /// a caller that looks a page's candidates up in parallel with other
    /// pages and leaves only the verdict to its one writer. `None` where
    /// the store cannot tell its writer what changed since (the default),
    /// or cannot take a snapshot now without waiting for its writer.
    /// `title`: a title digest whose documents to look up with them.
    fn near_early(
        &self,
        keys: &[(usize, u64)],
        fp: Fingerprint,
        max: u32,
        title: Option<u128>,
    ) -> Result<Option<EarlyHits>> {
        let _ = (keys, fp, max, title);
        Ok(None)
    }

    /// Whether the store keeps its index of URLs by first-seen time
    /// ([`ReadTables::urls_seen_before`]), which only a window's purge
    /// reads: [`crate::Deduper::new`] says so from its window. A store
    /// that can leave it out (redb: one B-tree insert per new URL on the
    /// writer thread, and its pages on disk and in the cache) records that
    /// it did, and builds it again from the URL records when asked to keep
    /// it. Others keep it always (the default).
    fn keep_url_times(&self, keep: bool) -> Result<()> {
        let _ = keep;
        Ok(())
    }

    /// Stores that keep the band index in memory, derived from the stored
    /// documents (redb), rebuild it here from every document's band keys
    /// (`keys`); [`crate::Deduper::new`] calls it once. Stores that persist
    /// their bands do nothing.
    fn rebuild_bands(&self, keys: &dyn Fn(&DocRecord) -> Vec<u64>) -> Result<()> {
        let _ = keys;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn record(fingerprint: Fingerprint, title: Option<[u8; 16]>) -> DocRecord {
        DocRecord {
            fingerprint,
            inserted_at: 1_700_000_000,
            title,
            sketch: Sketch::from_bins([7; crate::sketch::SKETCH_BINS], 42),
            url: "http://a.example/页".to_string(),
            article: None,
            extent: None,
        }
    }

    #[test]
    fn records_round_trip_at_both_widths() {
        for fp in [
            Fingerprint::new(0xdead_beef),
            Fingerprint::wide(0x1234 << 64 | 0xdead_beef),
        ] {
            for (title, bits) in [None, Some([9; 16])].into_iter().flat_map(|t| [(t, 16), (t, 8)]) {
                let mut rec = record(fp, title);
                rec.sketch = rec.sketch.narrow(bits);
                let bytes = rec.encode();
                assert_eq!(DocRecord::decode(&bytes).unwrap(), rec);
                // Sized exactly: the memory store keeps the buffer as is.
                assert_eq!(bytes.capacity(), bytes.len());
                // Cut anywhere before the URL: refused, never misread.
                let url_at = bytes.len() - rec.url.len();
                for cut in [0, 8, 16, 17, 30, 40, url_at - 1] {
                    assert!(
                        DocRecord::decode(&bytes[..cut]).is_err(),
                        "cut {cut} of {fp:?} {title:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn article_records_round_trip_and_cost_two_bytes() {
        let plain = record(Fingerprint::new(5), Some([3; 16]));
        for only in [false, true] {
            let scripts = crate::PageScripts::of("the story 故事");
            let rec = DocRecord {
                article: Some(ArticleMark { only, scripts }),
                extent: None,
                ..plain.clone()
            };
            let bytes = rec.encode();
            assert_eq!(bytes.len(), plain.encode().len() + 2);
            assert_eq!(bytes[16] & 24, if only { 24 } else { 8 });
            assert_eq!(DocRecord::decode(&bytes).unwrap(), rec);
            assert_eq!(bytes.capacity(), bytes.len());
        }
    }

    #[test]
    fn a_page_extent_round_trips_in_two_bytes_with_an_article_or_without() {
        let plain = record(Fingerprint::new(5), Some([3; 16]));
        let extent = crate::Extent {
            shingles: 812,
            outline: None,
        };
        for article in [
            None,
            Some(ArticleMark {
                only: false,
                scripts: crate::PageScripts::of("text 文字"),
            }),
        ] {
            let base = DocRecord {
                article,
                ..plain.clone()
            };
            let rec = DocRecord {
                extent: Some(extent),
                ..base.clone()
            };
            let bytes = rec.encode();
            assert_eq!(bytes.len(), base.encode().len() + 2);
            assert_eq!(bytes[16] & 32, 32);
            assert_eq!(DocRecord::decode(&bytes).unwrap(), rec);
            // Cut inside the extent: refused.
            let at = 33 + 2 * usize::from(article.is_some());
            assert!(DocRecord::decode(&bytes[..at + 1]).is_err());
        }
    }

    #[test]
    fn an_outline_follows_the_extent_and_records_without_one_still_read() {
        let plain = record(Fingerprint::new(5), Some([3; 16]));
        let shown =
            crate::Extent::of("A page that shows a table of character codes and a paragraph about them.");
        assert!(shown.outline.is_some());
        let rec = DocRecord {
            extent: Some(shown),
            ..plain.clone()
        };
        let bytes = rec.encode();
        let sized = DocRecord {
            extent: Some(crate::Extent {
                outline: None,
                ..shown
            }),
            ..plain
        };
        assert_eq!(bytes.len(), sized.encode().len() + crate::OUTLINE_BYTES);
        assert_eq!(bytes[16] & 224, 224);
        assert_eq!(bytes.capacity(), bytes.len());
        assert_eq!(DocRecord::decode(&bytes).unwrap(), rec);
        // A record written before one-bit bins keeps its outline's layout,
        // which then compares only with its own.
        let mut before = bytes.clone();
        before[16] &= 127;
        let old = DocRecord::decode(&before).unwrap();
        let old_outline = old.extent.and_then(|e| e.outline).unwrap();
        assert!(old_outline.is_before_bits());
        assert_eq!(old_outline.to_bytes(), shown.outline.unwrap().to_bytes());
        assert_eq!(old.extent.unwrap().outline_resemblance(&shown), None);
        assert_eq!(old.encode(), before);
        // A record written before outlines reads as a page without one.
        assert_eq!(DocRecord::decode(&sized.encode()).unwrap(), sized);
        // Cut inside the outline: refused.
        assert!(DocRecord::decode(&bytes[..35 + 10]).is_err());
    }

    #[test]
    fn a_64_bit_record_keeps_the_format_of_stores_written_before_128_bits() {
        // The layout every existing store holds: fingerprint, time, title
        // flag 0 or 1 (+ digest), sketch, URL.
        let rec = record(Fingerprint::new(5), Some([3; 16]));
        let bytes = rec.encode();
        assert_eq!(&bytes[..8], &5u64.to_le_bytes());
        assert_eq!(bytes[16], 1);
        assert_eq!(bytes.len(), 33 + Sketch::ENCODED_LEN + rec.url.len());
        let wide = record(Fingerprint::wide(6 << 64 | 5), None).encode();
        assert_eq!((wide[16], &wide[17..25]), (2, &6u64.to_le_bytes()[..]));
        // One-bit bins without an outline, "article alone" without
        // "article" and an outline without an extent: refused.
        for flags in [64, 65, 128, 129, 16, 17, 160] {
            let mut bad = bytes.clone();
            bad[16] = flags;
            assert!(DocRecord::decode(&bad).is_err(), "flags {flags}");
        }
        // An 8-bit sketch: flag 4, 128 bytes fewer.
        let mut narrow = rec.clone();
        narrow.sketch = narrow.sketch.narrow(8);
        let nb = narrow.encode();
        assert_eq!((nb[16], nb.len() + 128), (5, bytes.len()));
    }
}
