//! WARC records as bytes: a page's request and response records prepared
//! off the writer thread ([`Prepared`]), each record its own gzip member,
//! and the fields they carry.

use std::cell::RefCell;
use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use flate2::{Compress, Compression, FlushCompress, Status};
use sha1::{Digest, Sha1};
use simcrawl_fetch::ResponseHead;

use crate::output::cdxj::RecordLine;

/// A page's response made ready for the archive where the page is parsed
/// (digest and compression are the costly part, and the writer thread is
/// one): its request and response records, each a gzip member, and what a
/// revisit record needs if the writer finds its payload already archived.
#[derive(Debug)]
pub struct Prepared {
    pub(super) uri: String,
    pub(super) date: String,
    /// The response's record id (a revisit takes it over).
    pub(super) id: String,
    pub(super) ip: Option<String>,
    pub(super) payload_digest: [u8; 20],
    pub(super) empty: bool,
    /// The HTTP head, for a revisit record.
    pub(super) http: Vec<u8>,
    pub(super) request: Vec<u8>,
    pub(super) response: Vec<u8>,
    /// The CDXJ index line of the response record, but for its place in
    /// the file: made here, off the writer thread (a revisit record, which
    /// only a repeated payload gets, has its line made where it is written).
    pub(super) line: std::io::Result<Option<RecordLine>>,
}

impl Prepared {
    /// The records of `head` and its decoded `body`.
    pub fn new(head: &ResponseHead, body: &[u8], truncated: bool) -> Result<Prepared> {
        let date = warc_date(head.date);
        let uri = head.url.as_str();
        let id = record_id();
        let http = http_head(head, body.len());
        let payload_digest: [u8; 20] = Sha1::digest(body).into();
        let ip = head.remote_addr.map(|a| a.ip().to_string());
        let mut req = Record::new("request", &record_id(), &date);
        req.field("WARC-Target-URI", uri);
        req.field("WARC-Concurrent-To", &id);
        req.field("Content-Type", "application/http; msgtype=request");
        let request = encode(req, &[&head.request])?;
        let mut rec = Record::new("response", &id, &date);
        rec.field("WARC-Target-URI", uri);
        if let Some(ip) = &ip {
            rec.field("WARC-IP-Address", ip);
        }
        rec.field("WARC-Payload-Digest", &sha1_label(&payload_digest));
        if truncated {
            rec.field("WARC-Truncated", "length");
        }
        rec.field("Content-Type", "application/http; msgtype=response");
        let response = encode(rec, &[&http, body])?;
        let line = RecordLine::of("response", uri, &date, &sha1_label(&payload_digest), &http);
        Ok(Prepared {
            uri: uri.to_string(),
            date,
            id,
            ip,
            payload_digest,
            empty: body.is_empty(),
            http,
            request,
            response,
            line,
        })
    }
}

/// One record (its block the concatenation of `block`) as its own gzip
/// member ([`LEVEL`]), with its block digest and length.
pub(super) fn encode(mut rec: Record, block: &[&[u8]]) -> Result<Vec<u8>> {
    let len: usize = block.iter().map(|b| b.len()).sum();
    let mut digest = Sha1::new();
    for b in block {
        digest.update(b);
    }
    let digest: [u8; 20] = digest.finalize().into();
    rec.field("WARC-Block-Digest", &sha1_label(&digest));
    rec.field("Content-Length", &len.to_string());
    rec.head.extend_from_slice(b"\r\n");
    let parts = std::iter::once(rec.head.as_slice())
        .chain(block.iter().copied())
        .chain([b"\r\n\r\n".as_slice()]);
    gzip_member(parts, len + rec.head.len() + 4).context("cannot compress a WARC record")
}

/// zlib-rs's level 2, its fastest with dynamic Huffman codes (greedy
/// matching, no lazy search): the size miniz_oxide's level 1 gave (within
/// 0.5% on `crawl bench`'s pages, 11% smaller on a documentation site),
/// and with the stream reused archiving costs 0.28x the CPU it did.
/// Level 1 is zlib-rs's "quick" mode, static codes only: cheaper again,
/// but 6-15% larger archives.
const LEVEL: Compression = Compression::new(2);

thread_local! {
    /// This thread's gzip stream, reset for each member. A compressor's
    /// state is a few hundred kilobytes (window, hash chains, buffers):
    /// allocating and clearing one for each record cost more than
    /// compressing a page (docs/BENCHMARKS.md, "WARC records on a reused
    /// compressor"), and records are encoded on the threads that parse
    /// pages, a handful per process.
    static GZIP: RefCell<Option<Compress>> = const { RefCell::new(None) };
}

/// `parts`, concatenated, as one gzip member (header, deflate stream, CRC
/// and length), on this thread's reused stream. `len` is their total
/// length, to size the output once for text that compresses.
pub(super) fn gzip_member<'a>(parts: impl Iterator<Item = &'a [u8]>, len: usize) -> Result<Vec<u8>> {
    GZIP.with(|cell| {
        let mut slot = cell.borrow_mut();
        let gz = match slot.as_mut() {
            Some(gz) => {
                // Reset before use, not after: a member that failed half way
                // leaves nothing of itself in the next one.
                gz.reset();
                gz
            }
            None => slot.insert(Compress::new_gzip(LEVEL, 15)),
        };
        let mut out = Vec::with_capacity(len / 3 + 512);
        for part in parts {
            deflate(gz, part, &mut out, FlushCompress::None)?;
        }
        deflate(gz, &[], &mut out, FlushCompress::Finish)?;
        Ok(out)
    })
}

/// Feeds `input` to `gz`, growing `out` as the stream needs; with
/// [`FlushCompress::Finish`], until the member's trailer is written.
fn deflate(gz: &mut Compress, mut input: &[u8], out: &mut Vec<u8>, flush: FlushCompress) -> Result<()> {
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve(out.capacity().max(4096));
        }
        let (in_before, out_before) = (gz.total_in(), out.len());
        let status = gz.compress_vec(input, out, flush)?;
        let took = usize::try_from(gz.total_in() - in_before)?;
        input = &input[took..];
        let room_left = out.len() < out.capacity();
        match (flush, status) {
            (FlushCompress::Finish, Status::StreamEnd) => return Ok(()),
            (FlushCompress::Finish, _) => {}
            (_, _) if input.is_empty() && room_left => return Ok(()),
            _ => {}
        }
        if took == 0 && out.len() == out_before && room_left {
            bail!("the gzip stream made no progress");
        }
    }
}

/// A WARC record's header block being built.
pub(super) struct Record {
    head: Vec<u8>,
}

impl Record {
    pub(super) fn new(kind: &'static str, id: &str, date: &str) -> Record {
        let mut r = Record {
            head: b"WARC/1.1\r\n".to_vec(),
        };
        r.field("WARC-Type", kind);
        r.field("WARC-Record-ID", id);
        r.field("WARC-Date", date);
        r
    }

    pub(super) fn field(&mut self, name: &str, value: &str) {
        self.head.extend_from_slice(name.as_bytes());
        self.head.extend_from_slice(b": ");
        self.head.extend_from_slice(one_line(value).as_bytes());
        self.head.extend_from_slice(b"\r\n");
    }
}

/// A value on one line (a header value cannot hold CR or LF).
pub(super) fn one_line(v: &str) -> std::borrow::Cow<'_, str> {
    if v.contains(['\r', '\n']) {
        v.replace(['\r', '\n'], " ").into()
    } else {
        v.into()
    }
}

/// The response's HTTP head as stored with its decoded payload: the
/// codings the client removed are renamed `X-Crawler-*`, and the
/// Content-Length is the stored payload's (as Common Crawl does).
pub(super) fn http_head(head: &ResponseHead, payload_len: usize) -> Vec<u8> {
    let mut out = format!("{} {} {}\r\n", head.version, head.status, head.reason()).into_bytes();
    for (k, v) in &head.headers {
        let renamed = matches!(
            k.to_ascii_lowercase().as_str(),
            "content-encoding" | "transfer-encoding" | "content-length"
        );
        if renamed {
            out.extend_from_slice(b"X-Crawler-");
        }
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend(v.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("Content-Length: {payload_len}\r\n\r\n").as_bytes());
    out
}

pub(super) fn record_id() -> String {
    format!("<urn:uuid:{}>", uuid::Uuid::new_v4())
}

/// `sha1:` and the base32 digest, as Heritrix and wget write it.
pub(super) fn sha1_label(d: &[u8; 20]) -> String {
    format!("sha1:{}", data_encoding::BASE32.encode(d))
}

/// A WARC-Date: UTC, to the second (what every replay tool reads).
pub(super) fn warc_date(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}
