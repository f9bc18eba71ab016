//! The key layout (see *Key layout* in the module docs): key names, the
//! packed encoding of block lists and band buckets, the layout marker and
//! the limits the layout puts on ids.

use redis::{Connection, Value};

use super::RedisStore;
use crate::error::{Error, Result};
use crate::store::DocId;

/// Bits of a band key that pick its bucket (`{NS}:l:BUCKET3`).
const BAND_BUCKET_BITS: u32 = 18;

/// Document records are kept 2^6 = 64 to a hash (`{NS}:d:BUCKET`), by id:
/// one key per 64 documents instead of one each, and the buckets in id
/// order are the insertion order (purges read the oldest bucket first).
pub(super) const DOC_BUCKET_BITS: u32 = 6;
pub(super) const DOC_BUCKET_MASK: u64 = (1 << DOC_BUCKET_BITS) - 1;

/// The key layout this version writes, recorded in `{NS}:m:layout`.
/// Layout 1 (before it was recorded) kept a string per document record,
/// a sorted set of every id, 8-byte band keys in band members and ids as
/// block scores.
pub(super) const LAYOUT: &str = "2";

/// Which part of the layout a key is, from its name after `{NS}:`.
pub(super) fn part_of(rest: &[u8]) -> &'static str {
    match rest {
        [b'd', b':', ..] => "doc records",
        [b'o'] => "doc order",
        [b'b', b':', ..] => "blocks",
        [b'l', b':', ..] => "bands",
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
    pub(super) fn block(&self, table: usize, key: u64) -> Vec<u8> {
        let mut rest = [0u8; 9];
        rest[0] = table as u8;
        rest[1..].copy_from_slice(&key.to_be_bytes());
        self.key(b"b:", &rest)
    }
    pub(super) fn band_bucket(&self, bucket: u32) -> Vec<u8> {
        self.key(b"l:", &bucket.to_be_bytes()[1..])
    }
    /// The hash holding document `id`'s record, and its field there.
    pub(super) fn doc(&self, id: DocId) -> (Vec<u8>, Vec<u8>) {
        (
            self.key(b"d:", (id >> DOC_BUCKET_BITS).to_string().as_bytes()),
            num(id & DOC_BUCKET_MASK),
        )
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

/// The part of a band key its bucket entry keeps: bits 16 to 47 (the top
/// 18 already chose the bucket). The 48 bits together tell bands apart but
/// for a chance of ~2^-48 per pair; a band that matches by chance only
/// adds a candidate, which the sketch then rejects.
pub(super) fn band_tag(key: u64) -> [u8; BAND_TAG] {
    let b = key.to_be_bytes();
    [b[2], b[3], b[4], b[5]]
}

/// Bytes of [`band_tag`].
pub(super) const BAND_TAG: usize = 4;

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
    let be = |b: &[u8]| b.iter().fold(0u64, |n, &x| (n << 8) | u64::from(x));
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
