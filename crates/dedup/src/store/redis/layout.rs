//! The key layout (see *Key layout* in the module docs): key names, the
//! packed encoding of block lists and band buckets, the layout marker and
//! the limits the layout puts on ids.

use redis::{Connection, Value};

use super::RedisStore;
use crate::error::{Error, Result};
use crate::store::DocId;

/// Bits of a band key that pick its bucket (`{NS}:j:BUCKET3`): 2^16
/// buckets, ~150 entries (1 KB) each at 1M documents. Layout 2 had 2^18
/// and 4-byte tags: a key costs Redis ~90 bytes whatever its value, 24 per
/// document at 2^18 buckets and 1M documents. A bigger bucket costs a
/// check more bytes read, not written: new entries are appended on the
/// server (`APPENDX` in `lua/commit.lua`).
pub(super) const BAND_BUCKET_BITS: u32 = 16;

/// Bits of a block key that pick its list in its table (`{NS}:k:T
/// BUCKET2`): the low 14, so a table has at most 16,384 lists (layout 2
/// had one per block key, 65,536 a table at m = 4). A list then holds the
/// postings of up to four block keys (~60 entries, 800 bytes, at 1M
/// documents and m = 4); the entries keep whole fingerprints and every
/// candidate is filtered by its Hamming distance, so postings of another
/// key are rejected there, at the price of more entries read.
pub(super) const BLOCK_BUCKET_BITS: u32 = 14;

/// Document records are kept 2^6 = 64 to a string (`{NS}:r:BUCKET`), by
/// id: one key per 64 documents instead of one each, and the buckets in id
/// order are the insertion order (purges read the oldest bucket first).
pub(super) const DOC_BUCKET_BITS: u32 = 6;
pub(super) const DOC_BUCKET_MASK: u64 = (1 << DOC_BUCKET_BITS) - 1;

/// Slots of a record bucket ([`DOC_BUCKET_BITS`]).
pub(super) const DOC_SLOTS: usize = 1 << DOC_BUCKET_BITS;

/// Bytes of a record bucket's header: the end of each slot's record, a
/// 4-byte big-endian offset into what follows the header.
pub(super) const DOC_HEADER: usize = 4 * DOC_SLOTS;

/// The key layout this version writes, recorded in `{NS}:m:layout`.
/// Layout 1 (before it was recorded) kept a string per document record,
/// a sorted set of every id, 8-byte band keys in band members and ids as
/// block scores. Layout 2 kept records in hashes (`d:`), a list per block
/// key (`b:`) and 2^18 band buckets of 4-byte tags (`l:`); a namespace in
/// layout 2 is converted when opened (`migrate.rs`).
pub(super) const LAYOUT: &str = "3";

/// Which part of the layout a key is, from its name after `{NS}:`.
pub(super) fn part_of(rest: &[u8]) -> &'static str {
    match rest {
        [b'r', b':', ..] | [b'd', b':', ..] => "doc records",
        [b'o'] => "doc order",
        [b'k', b':', ..] | [b'b', b':', ..] => "blocks",
        [b'j', b':', ..] | [b'l', b':', ..] => "bands",
        [b't', b':', ..] => "titles",
        [b'u', b':', ..] => "url records",
        [b'u', b't'] => "url times",
        [b'v'] => "versions",
        _ => "other",
    }
}

impl RedisStore {
    /// Refuses a namespace written in another key layout (see [`LAYOUT`]),
    /// and records this one in a namespace that has none yet. Layout 1
    /// recorded nothing: it shows as an order index without a count.
    pub(super) fn check_layout(&self, conn: &mut Connection) -> Result<()> {
        let k = &self.keys;
        let layout_key = k.meta("layout");
        let (stored, order, count): (Option<Vec<u8>>, bool, bool) = redis::pipe()
            .cmd("GET")
            .arg(&layout_key)
            .cmd("EXISTS")
            .arg(k.order())
            .cmd("EXISTS")
            .arg(k.count())
            .query(conn)
            .map_err(|e| self.fail(e, false))?;
        let stored = match stored {
            Some(s) => String::from_utf8_lossy(&s).into_owned(),
            None if order && !count => "1".to_string(),
            None => {
                redis::cmd("SET")
                    .arg(&layout_key)
                    .arg(LAYOUT)
                    .arg("NX")
                    .query::<Value>(conn)
                    .map_err(|e| self.fail(e, false))?;
                return Ok(());
            }
        };
        if stored == LAYOUT {
            return Ok(());
        }
        if stored == "2" {
            return self.migrate_from_2(conn);
        }
        Err(Error::Config(format!(
            "Redis namespace {:?} at {} holds keys of store layout {stored}, this simcrawl reads layout {LAYOUT}: \
             use another namespace, or empty this one (RedisStore::clear) to rebuild it",
            self.options.namespace, self.url
        )))
    }
}

/// Key names of one namespace.
#[derive(Debug)]
pub(super) struct Keys {
    /// `{NS}:`
    pub(super) prefix: Vec<u8>,
}

impl Keys {
    pub(super) fn new(ns: &str) -> Keys {
        Keys {
            prefix: format!("{{{ns}}}:").into_bytes(),
        }
    }

    pub(super) fn key(&self, kind: &[u8], rest: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.prefix.len() + kind.len() + rest.len());
        k.extend_from_slice(&self.prefix);
        k.extend_from_slice(kind);
        k.extend_from_slice(rest);
        k
    }

    pub(super) fn meta(&self, name: &str) -> Vec<u8> {
        self.key(b"m:", name.as_bytes())
    }
    pub(super) fn counter(&self) -> Vec<u8> {
        self.key(b"n", b"")
    }
    pub(super) fn url(&self, digest: u128) -> Vec<u8> {
        self.key(b"u:", &digest.to_be_bytes())
    }
    pub(super) fn url_times(&self) -> Vec<u8> {
        self.key(b"ut", b"")
    }
    pub(super) fn title(&self, digest: u128) -> Vec<u8> {
        self.key(b"t:", &digest.to_be_bytes())
    }
    /// The list of block table `table` holding block bucket `bucket`
    /// ([`block_bucket`]).
    pub(super) fn block(&self, table: usize, bucket: u16) -> Vec<u8> {
        let mut rest = [0u8; 3];
        rest[0] = table as u8;
        rest[1..].copy_from_slice(&bucket.to_be_bytes());
        self.key(b"k:", &rest)
    }
    pub(super) fn band_bucket(&self, bucket: u32) -> Vec<u8> {
        self.key(b"j:", &bucket.to_be_bytes()[1..])
    }
    /// The string holding document `id`'s record, and its slot there.
    pub(super) fn doc(&self, id: DocId) -> (Vec<u8>, usize) {
        (
            self.doc_bucket(id >> DOC_BUCKET_BITS),
            (id & DOC_BUCKET_MASK) as usize,
        )
    }
    /// Record bucket `bucket` (ids `64 x bucket` to `64 x bucket + 63`).
    pub(super) fn doc_bucket(&self, bucket: u64) -> Vec<u8> {
        self.key(b"r:", bucket.to_string().as_bytes())
    }
    pub(super) fn order(&self) -> Vec<u8> {
        self.key(b"o", b"")
    }
    pub(super) fn count(&self) -> Vec<u8> {
        self.key(b"c", b"")
    }
    pub(super) fn versions(&self) -> Vec<u8> {
        self.key(b"v", b"")
    }
    pub(super) fn commits(&self) -> Vec<u8> {
        self.key(b"vc", b"")
    }
}

pub(super) fn decimal_id(bytes: &[u8]) -> Result<DocId> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::Corrupt(format!("document id {:?}", String::from_utf8_lossy(bytes))))
}

/// The part of a band key its bucket entry keeps: the 20 bits after the
/// top 16 (which chose the bucket). The 36 bits together tell bands apart
/// but for a chance of ~2^-36 per pair (a lookup in a bucket of 150
/// entries, 1M documents, meets a foreign tag once in ~7,000, one check in
/// ~700); a band that matches by chance only adds a candidate, which the
/// sketch then rejects.
pub(super) fn band_tag(key: u64) -> u32 {
    ((key << BAND_BUCKET_BITS) >> (64 - BAND_TAG_BITS)) as u32
}

/// Bits of [`band_tag`] in a band entry.
pub(super) const BAND_TAG_BITS: u32 = 20;

/// Bits of a document id in a band entry: ids below 2^36 (68 billion,
/// gaps included); 7 bytes an entry with the tag.
pub(super) const BAND_ID_BITS: u32 = 36;

/// Bytes of a band entry: tag and id, big-endian.
pub(super) const BAND_ENTRY: usize = 7;

/// Ids a band entry holds.
pub(super) fn check_band_id(id: DocId) -> Result<()> {
    if id >> BAND_ID_BITS != 0 {
        return Err(Error::Storage(
            format!("document id {id} does not fit the Redis store's 36-bit band entries").into(),
        ));
    }
    Ok(())
}

/// The packed bytes of band entries (tag, id), read back by
/// [`unpack_bands`].
pub(super) fn pack_bands(entries: impl IntoIterator<Item = (u32, DocId)>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for (tag, id) in entries {
        check_band_id(id)?;
        let word = (u64::from(tag) & ((1 << BAND_TAG_BITS) - 1)) << BAND_ID_BITS | id;
        out.extend_from_slice(&word.to_be_bytes()[8 - BAND_ENTRY..]);
    }
    Ok(out)
}

/// Band entries (tag, id) of a band bucket's value.
pub(super) fn unpack_bands(bytes: &[u8]) -> Result<Vec<(u32, DocId)>> {
    if !bytes.len().is_multiple_of(BAND_ENTRY) {
        return Err(Error::Corrupt(format!("band bucket of {} bytes", bytes.len())));
    }
    Ok(bytes
        .chunks_exact(BAND_ENTRY)
        .map(|e| {
            let mut w = [0u8; 8];
            w[8 - BAND_ENTRY..].copy_from_slice(e);
            let word = u64::from_be_bytes(w);
            ((word >> BAND_ID_BITS) as u32, word & ((1 << BAND_ID_BITS) - 1))
        })
        .collect())
}

/// The list (in each block table) of a block key: its low
/// [`BLOCK_BUCKET_BITS`] bits.
pub(super) fn block_bucket(key: u64) -> u16 {
    (key & ((1 << BLOCK_BUCKET_BITS) - 1)) as u16
}

/// A record bucket's record in `slot`, if any: the header gives each
/// slot's end, the previous slot's end its start (records are kept in slot
/// order, empty slots taking no bytes). `None` for an empty slot; a header
/// that points outside the value is [`Error::Corrupt`].
pub(super) fn bucket_record(bucket: &[u8], slot: usize) -> Result<Option<&[u8]>> {
    let end_of = |s: usize| -> Result<usize> {
        let b: [u8; 4] = bucket
            .get(4 * s..4 * s + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| Error::Corrupt(format!("record bucket of {} bytes", bucket.len())))?;
        Ok(u32::from_be_bytes(b) as usize)
    };
    let start = if slot == 0 { 0 } else { end_of(slot - 1)? };
    let end = end_of(slot)?;
    if end == start {
        return Ok(None);
    }
    bucket
        .get(DOC_HEADER + start..DOC_HEADER + end)
        .filter(|_| start < end)
        .map(Some)
        .ok_or_else(|| {
            Error::Corrupt(format!(
                "record bucket of {} bytes, slot {slot} at {start}..{end}",
                bucket.len()
            ))
        })
}

/// The records of a bucket by slot, as [`bucket_record`] reads them: the
/// format the commit script (`lua/commit.lua`, `RSETC`) writes.
pub(super) fn build_bucket(records: &[Option<Vec<u8>>; DOC_SLOTS]) -> Vec<u8> {
    let mut header = Vec::with_capacity(DOC_HEADER);
    let mut body = Vec::new();
    for r in records {
        if let Some(r) = r {
            body.extend_from_slice(r);
        }
        header.extend_from_slice(&(body.len() as u32).to_be_bytes());
    }
    header.extend_from_slice(&body);
    header
}

/// Bytes of a document id in a packed entry: ids up to 2^40 (a trillion
/// documents, gaps included).
pub(super) const ID_BYTES: usize = 5;

/// Ids a packed entry holds.
pub(super) fn check_id(id: DocId) -> Result<()> {
    if id >> (8 * ID_BYTES) != 0 {
        return Err(Error::Storage(
            format!("document id {id} does not fit the Redis store's 40-bit ids").into(),
        ));
    }
    Ok(())
}

/// The band bucket of a band key: its top [`BAND_BUCKET_BITS`] bits.
pub(super) fn bucket_of(key: u64) -> u32 {
    (key >> (64 - BAND_BUCKET_BITS)) as u32
}

/// A packed value: entries of a `head`-byte big-endian number (fingerprint,
/// band tag) and an [`ID_BYTES`]-byte big-endian id.
pub(super) fn unpack(bytes: &[u8], head: usize, what: &str) -> Result<Vec<(u64, DocId)>> {
    let size = head + ID_BYTES;
    if !bytes.len().is_multiple_of(size) {
        return Err(Error::Corrupt(format!("{what} of {} bytes", bytes.len())));
    }
    // Into the low bytes of a u64: a check unpacks some 2,000 entries.
    let be = |b: &[u8]| {
        let mut w = [0u8; 8];
        w[8 - b.len()..].copy_from_slice(b);
        u64::from_be_bytes(w)
    };
    Ok(bytes
        .chunks_exact(size)
        .map(|e| (be(&e[..head]), be(&e[head..])))
        .collect())
}

/// The packed bytes of `(head, id)` entries, read back by [`unpack`]
/// (none: empty, which deletes the key).
pub(super) fn pack<const N: usize>(entries: impl IntoIterator<Item = ([u8; N], DocId)>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for (head, id) in entries {
        check_id(id)?;
        out.extend_from_slice(&head);
        out.extend_from_slice(&id.to_be_bytes()[8 - ID_BYTES..]);
    }
    Ok(out)
}

pub(super) fn num(n: impl std::fmt::Display) -> Vec<u8> {
    n.to_string().into_bytes()
}
