//! The stored form of a [`PageRecord`]: postcard, a compact serde format,
//! behind a version byte (issue 37, target 1).
//!
//! Why: every judged page writes its record into `revisit_pages` under its
//! URL's digest, a random key, so each one dirties a leaf of its own in the
//! writer's transaction. As JSON a record of the bench's pages took 197
//! bytes, most of them field names; `crawl bench` measured the writer
//! thread at 7% less CPU a page with records of 48 bytes
//! (docs/BENCHMARKS.md, "Compact revisit records"). A duplicate's sketch,
//! kept as hex in the record, is stored as its bytes: half the size.
//!
//! Records written by earlier versions are JSON objects, whose first byte
//! is `{`: they are still read, and replaced in this form when the page is
//! judged again.

use serde::{Deserialize, Serialize};
use simcrawl_fetch::Validators;

use super::PageRecord;

/// The first byte of a record in this form (a JSON record starts with `{`).
const COMPACT_V1: u8 = 1;

/// The fields of a [`PageRecord`] in a fixed order, every one written
/// (postcard is not self-describing: a field left out would shift the
/// others). `S` is `&str` to write and `String` to read.
#[derive(Serialize, Deserialize)]
struct Compact<S> {
    url: S,
    depth: u32,
    etag: Option<S>,
    last_modified: Option<S>,
    fetched_at: u64,
    interval_s: u64,
    next_ms: u64,
    fingerprint: Option<u64>,
    sketch: Option<StoredSketch<S>>,
    doc: Option<u64>,
    dup_of: Option<S>,
    dup_key: Option<u128>,
    listing: bool,
    listing_kind: Option<S>,
    rejudge: bool,
    nest: u32,
}

/// A record's sketch: its bytes when its text is their lower-case hex (as
/// [`PageRecord::set_signature`] writes it), else the text as it was.
#[derive(Serialize, Deserialize)]
enum StoredSketch<S> {
    Bytes(Vec<u8>),
    Text(S),
}

impl StoredSketch<String> {
    fn into_text(self) -> String {
        match self {
            StoredSketch::Bytes(b) => data_encoding::HEXLOWER.encode(&b),
            StoredSketch::Text(t) => t,
        }
    }
}

/// `rec` as stored.
pub(super) fn encode(rec: &PageRecord) -> Vec<u8> {
    let compact = Compact {
        url: rec.url.as_str(),
        depth: rec.depth,
        etag: rec.since.etag.as_deref(),
        last_modified: rec.since.last_modified.as_deref(),
        fetched_at: rec.fetched_at,
        interval_s: rec.interval_s,
        next_ms: rec.next_ms,
        fingerprint: rec.fingerprint,
        // Strict lower-case hex decodes only from the text its bytes
        // encode back to, so the record reads back as it was.
        sketch: rec
            .sketch
            .as_deref()
            .map(|hex| match data_encoding::HEXLOWER.decode(hex.as_bytes()) {
                Ok(bytes) => StoredSketch::Bytes(bytes),
                Err(_) => StoredSketch::Text(hex),
            }),
        doc: rec.doc,
        dup_of: rec.dup_of.as_deref(),
        dup_key: rec.dup_key,
        listing: rec.listing,
        listing_kind: rec.listing_kind.as_deref(),
        rejudge: rec.rejudge,
        nest: rec.nest,
    };
    match postcard::to_extend(&compact, vec![COMPACT_V1]) {
        Ok(bytes) => bytes,
        // Not reached (every field has a postcard form); JSON still reads.
        Err(_) => serde_json::to_vec(rec).unwrap_or_default(),
    }
}

/// The record stored as `bytes`, in this form or as JSON; `None` when they
/// are neither (a damaged record reads as no record, as a damaged JSON
/// record did).
pub(super) fn decode(bytes: &[u8]) -> Option<PageRecord> {
    match bytes.split_first() {
        Some((&COMPACT_V1, rest)) => {
            let (c, left) = postcard::take_from_bytes::<Compact<String>>(rest).ok()?;
            left.is_empty().then(|| PageRecord {
                url: c.url,
                depth: c.depth,
                since: Validators {
                    etag: c.etag,
                    last_modified: c.last_modified,
                },
                fetched_at: c.fetched_at,
                interval_s: c.interval_s,
                next_ms: c.next_ms,
                fingerprint: c.fingerprint,
                sketch: c.sketch.map(StoredSketch::into_text),
                doc: c.doc,
                dup_of: c.dup_of,
                dup_key: c.dup_key,
                listing: c.listing,
                listing_kind: c.listing_kind,
                rejudge: c.rejudge,
                nest: c.nest,
            })
        }
        Some((b'{', _)) => serde_json::from_slice(bytes).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use simcrawl_dedup::{DedupConfig, Deduper, Document, MemoryStore};

    /// A duplicate's record with every field set, its sketch a real one.
    fn full() -> PageRecord {
        let d = Deduper::new(MemoryStore::new(), DedupConfig::default()).unwrap();
        let sig = d.sign(&Document::new(
            "http://e.org/a",
            "t",
            "长江流域今年夏季降雨偏多，防汛形势严峻，各地加强了巡查。",
        ));
        let mut rec = PageRecord {
            url: "http://e.org/a?x=1".into(),
            depth: 7,
            since: Validators {
                etag: Some("\"abc\"".into()),
                last_modified: Some("Wed, 21 Oct 2015 07:28:00 GMT".into()),
            },
            fetched_at: 1_796_534_368,
            interval_s: 86_400,
            next_ms: 1_796_620_768_030,
            doc: Some(u64::MAX),
            dup_of: Some("http://e.org/b".into()),
            dup_key: Some(u128::MAX - 5),
            listing: true,
            listing_kind: Some("rss".into()),
            rejudge: true,
            nest: 3,
            ..PageRecord::default()
        };
        rec.set_signature(&sig);
        assert!(rec.sketch.is_some() && rec.fingerprint.is_some());
        rec
    }

    #[test]
    fn every_field_reads_back_as_written() {
        for rec in [full(), PageRecord::default()] {
            let bytes = encode(&rec);
            assert_eq!(bytes.first(), Some(&COMPACT_V1));
            assert_eq!(decode(&bytes), Some(rec));
        }
    }

    #[test]
    fn a_sketch_that_is_not_lower_case_hex_reads_back_as_it_was() {
        for text in ["ABCDEF01", "abc", "not hex", ""] {
            let rec = PageRecord {
                sketch: Some(text.to_owned()),
                ..full()
            };
            assert_eq!(
                decode(&encode(&rec)).and_then(|r| r.sketch).as_deref(),
                Some(text)
            );
        }
    }

    #[test]
    fn records_of_earlier_versions_still_read() {
        let rec = full();
        let json = serde_json::to_vec(&rec).unwrap();
        assert_eq!(decode(&json), Some(rec));
        let old = br#"{"url":"http://127.0.0.1:39821/p/0","depth":0,"since":{},"fetched_at":1796534368,"interval_s":86400,"next_ms":1796620768030,"doc":0}"#;
        let read = decode(old).unwrap();
        assert_eq!(
            (read.url.as_str(), read.doc, read.next_ms),
            ("http://127.0.0.1:39821/p/0", Some(0), 1_796_620_768_030)
        );
    }

    /// The point of the form: a bench page's record and a duplicate's are
    /// well under half their JSON.
    #[test]
    fn a_record_takes_less_than_half_its_json() {
        let bench = PageRecord {
            url: "http://127.0.0.1:39821/p/2?utm_source=bench".into(),
            depth: 1,
            fetched_at: 1_796_534_368,
            interval_s: 86_400,
            next_ms: 1_796_620_768_035,
            doc: Some(2),
            ..PageRecord::default()
        };
        for rec in [bench, full()] {
            let (compact, json) = (encode(&rec).len(), serde_json::to_vec(&rec).unwrap().len());
            assert!(compact * 2 < json, "{compact} bytes against {json} as JSON");
        }
    }

    #[test]
    fn damaged_records_read_as_none() {
        let bytes = encode(&full());
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[2, 0, 0]), None);
        assert_eq!(decode(b"{\"url\": 3}"), None);
    }
}
