//! Reading WARC input: the archive opened whatever its compression, each
//! record turned into what the run needs ([`Item`]), and payloads still
//! transfer- or content-encoded decoded to the body limit and no further.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use fastwarc::stream_io::traits::IntoWarcReader;
use fastwarc::stream_io::{brotli, chunked, gzip, zstd};
use fastwarc::warc::iter::{ArchiveIterator, ArchiveIteratorOptions};
use fastwarc::warc::record::{AutoDecode, WarcRecord, WarcRecordType};

/// One record of the input, as the run needs it.
pub(super) enum Item {
    /// An HTML response: judged.
    Page {
        url: String,
        id: String,
        file: usize,
        content_type: Option<String>,
        body: Vec<u8>,
        /// `body` is cut short ([`FromRecord::truncated`](crate::output::lines::FromRecord::truncated)).
        truncated: bool,
        /// Why its payload cannot be judged (a coding that does not decode).
        problem: Option<String>,
        /// How later revisits may refer to it.
        refs: Refs,
    },
    /// A revisit of an identical payload.
    Revisit {
        url: String,
        id: String,
        file: usize,
        /// How later revisits may refer to it (a chain of revisits).
        refs: Refs,
        /// Its own `WARC-Payload-Digest` and `WARC-Refers-To*` fields.
        to: RefersTo,
    },
    /// A record that is not a document (request, metadata, a 404, an
    /// image...): counted, not written.
    Other,
}

/// The records of `path`: a gzip stream (one member per record or not)
/// by its first bytes whatever its name, inflated by flate2 (which, unlike
/// fastwarc's own gzip reader, reports a file cut inside a member instead
/// of ending quietly); zstd and lz4 by their name; anything else as plain
/// WARC.
pub(super) fn open_archive(path: &Path) -> Result<ArchiveIterator> {
    let options = ArchiveIteratorOptions {
        parse_http: true,
        // Decoded by `read_payload`, up to the body limit.
        decode_http_payload: AutoDecode::None,
        ..ArchiveIteratorOptions::default()
    };
    let cannot = || format!("cannot read {}", path.display());
    let mut head = [0u8; 2];
    let gz = std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == [0x1f, 0x8b];
    if gz {
        let file = std::fs::File::open(path).with_context(cannot)?;
        let inflated = Inflated {
            inner: std::io::BufReader::with_capacity(
                256 << 10,
                flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(256 << 10, file)),
            ),
            pos: 0,
        };
        let o = ArchiveIteratorOptions {
            stream_detect: false,
            ..options
        };
        return Ok(ArchiveIterator::with_options(
            fastwarc::stream_io::bufread::RawReaderAdapter::new(inflated),
            o,
        ));
    }
    ArchiveIterator::from_path_with_options(path, options).with_context(cannot)
}

/// An inflated gzip stream as fastwarc reads it: buffered, read forward,
/// its position known (fastwarc asks for it; it never seeks back).
struct Inflated {
    inner: std::io::BufReader<flate2::read::MultiGzDecoder<std::io::BufReader<std::fs::File>>>,
    pos: u64,
}

impl Read for Inflated {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl std::io::BufRead for Inflated {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.inner.consume(n);
        self.pos += n as u64;
    }
}

impl std::io::Seek for Inflated {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            std::io::SeekFrom::Start(n) => Some(n),
            std::io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            std::io::SeekFrom::End(_) => None,
        };
        match target {
            Some(n) if n == self.pos => Ok(n),
            Some(n) if n > self.pos => {
                let skip = n - self.pos;
                let copied = std::io::copy(&mut self.by_ref().take(skip), &mut std::io::sink())?;
                if copied < skip {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "past the end",
                    ));
                }
                Ok(n)
            }
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "an inflated stream is read forward only",
            )),
        }
    }
}

pub(super) fn header(rec: &WarcRecord, name: &str) -> Option<String> {
    rec.headers().get(name).map(|v| v.trim().to_string())
}

/// What a record is for the run; reads an HTML response's payload, decoded,
/// up to `max_body` bytes (`fetch.max_body_bytes`, the crawl's own limit).
pub(super) fn read_item(rec: &mut WarcRecord, file: usize, max_body: usize) -> Result<Item> {
    let kind = rec.record_type();
    if !matches!(kind, WarcRecordType::Response | WarcRecordType::Revisit) {
        return Ok(Item::Other);
    }
    let (Some(url), Some(id)) = (header(rec, "WARC-Target-URI"), header(rec, "WARC-Record-ID")) else {
        return Ok(Item::Other);
    };
    let url = uri(&url);
    let refs = Refs {
        digest: header(rec, "WARC-Payload-Digest"),
        id: id.clone(),
        uri: url.clone(),
        date: header(rec, "WARC-Date"),
    };
    let Some(http) = rec.http_headers() else {
        return Ok(Item::Other);
    };
    let status = http.status_code().unwrap_or(0);
    if kind == WarcRecordType::Revisit {
        return Ok(if (200..300).contains(&status) || status == 0 {
            let to = RefersTo {
                digest: refs.digest.clone(),
                id: header(rec, "WARC-Refers-To"),
                uri: header(rec, "WARC-Refers-To-Target-URI").map(|u| uri(&u)),
                date: header(rec, "WARC-Refers-To-Date"),
            };
            Item::Revisit {
                url,
                id,
                file,
                refs,
                to,
            }
        } else {
            Item::Other
        });
    }
    let content_type = rec.http_content_type();
    let html = content_type.as_deref().is_none_or(|ct| {
        let ct = ct.to_ascii_lowercase();
        ct.contains("text/html") || ct.contains("application/xhtml")
    });
    if !(200..300).contains(&status) || !html {
        return Ok(Item::Other);
    }
    let payload = read_payload(rec, &url, max_body)?;
    Ok(Item::Page {
        url,
        id,
        file,
        content_type,
        body: payload.body,
        truncated: payload.truncated || header(rec, "WARC-Truncated").is_some(),
        problem: payload.problem,
        refs,
    })
}

/// A payload read for the cleaner.
#[derive(Debug)]
struct Payload {
    /// Decoded, at most the body limit.
    body: Vec<u8>,
    /// Cut at the body limit.
    truncated: bool,
    /// Its codings do not decode.
    problem: Option<String>,
}

/// Stored bytes of an encoded payload read at most: enough for the body
/// limit's worth of decoded bytes (compression never grows data by more
/// than a few bytes per block; chunk heads add a few per chunk).
fn raw_limit(max_body: usize) -> usize {
    max_body.saturating_mul(2).saturating_add(64 << 10)
}

/// The payload of an HTML response (its HTTP head parsed, its payload as
/// stored), decoded from its `Transfer-Encoding` and `Content-Encoding`
/// (chunked, gzip, deflate, br, zstd: fastwarc's decoders), at most
/// `max_body` decoded bytes. The stored bytes are read first, at most
/// [`raw_limit`], and decoded in memory, so a compression bomb inflates
/// only to the limit and the archive reader skips the rest of the record
/// without decoding it (fastwarc's own decoding, which skips by decoding
/// to the end, is off: [`open_archive`]).
fn read_payload(rec: &mut WarcRecord, url: &str, max_body: usize) -> Result<Payload> {
    let coding = |name: &str| {
        rec.http_headers()
            .and_then(|h| h.get(name))
            .map(|v| v.to_ascii_lowercase())
            .unwrap_or_default()
    };
    // Applied last, undone first: the transfer codings, then the content
    // codings, each list from its end.
    let mut codings: Vec<(String, bool)> = Vec::new();
    for (list, transfer) in [
        (coding("Transfer-Encoding"), true),
        (coding("Content-Encoding"), false),
    ] {
        for c in list.split(',').rev() {
            let c = c.trim();
            if !c.is_empty() && c != "identity" {
                codings.push((c.to_string(), transfer));
            }
        }
    }
    let limit = if codings.is_empty() {
        max_body
    } else {
        raw_limit(max_body)
    };
    let mut raw = Vec::new();
    let read = match rec.reader_mut() {
        Some(r) => r.take(limit.saturating_add(1) as u64).read_to_end(&mut raw),
        None => Ok(0),
    };
    // The stream ended or broke inside the record: the file is cut or
    // corrupt here (not this record alone), so the run stops before it.
    if let Err(e) = read {
        bail!("cannot read the payload of {url}: {e}");
    }
    let raw_cut = raw.len() > limit;
    raw.truncate(limit);
    if codings.is_empty() {
        return Ok(Payload {
            body: raw,
            truncated: raw_cut,
            problem: None,
        });
    }
    let mut reader = std::io::Cursor::new(raw).into_warc_reader();
    for (c, transfer) in &codings {
        reader = match c.as_str() {
            "gzip" | "x-gzip" => gzip::GzipReader::new(reader).into_warc_reader(),
            "deflate" => gzip::GzipReader::with_options(
                reader,
                gzip::GzipReaderOptions {
                    window_bits: gzip::MAX_WBITS,
                    ..gzip::GzipReaderOptions::default()
                },
            )
            .into_warc_reader(),
            "br" => brotli::BrotliReader::new(reader).into_warc_reader(),
            "zstd" => zstd::ZstdReader::new(reader).into_warc_reader(),
            "chunked" if *transfer => chunked::ChunkedReader::new(reader).into_warc_reader(),
            other => {
                return Ok(Payload {
                    body: Vec::new(),
                    truncated: false,
                    problem: Some(format!(
                        "unsupported {}-Encoding {other:?}",
                        if *transfer { "Transfer" } else { "Content" }
                    )),
                });
            }
        };
    }
    let mut body = Vec::new();
    let decoded = reader
        .take(max_body.saturating_add(1) as u64)
        .read_to_end(&mut body);
    let truncated = raw_cut || body.len() > max_body;
    body.truncate(max_body);
    // A stream cut by the raw limit may end inside a block: what came
    // before it is the payload, truncated.
    let problem = match decoded {
        Err(e) if !truncated => Some(format!(
            "cannot decode its payload ({}): {e}",
            codings_of(&codings)
        )),
        _ => None,
    };
    Ok(Payload {
        body,
        truncated,
        problem,
    })
}

/// The codings of a payload as its headers name them.
fn codings_of(codings: &[(String, bool)]) -> String {
    codings
        .iter()
        .rev()
        .map(|(c, _)| c.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A URI as a WARC header gives it, without the angle brackets WARC/1.0
/// writers put around it.
fn uri(v: &str) -> String {
    v.trim_matches(['<', '>']).to_string()
}

/// How later revisit records may name a record: what it is stored under
/// in [`Originals`](super::Originals).
#[derive(Debug)]
pub(super) struct Refs {
    /// `WARC-Payload-Digest`.
    pub(super) digest: Option<String>,
    /// `WARC-Record-ID`.
    pub(super) id: String,
    /// `WARC-Target-URI`.
    pub(super) uri: String,
    /// `WARC-Date`.
    pub(super) date: Option<String>,
}

/// How a revisit record names its original.
#[derive(Debug)]
pub(super) struct RefersTo {
    /// `WARC-Payload-Digest`: the identical payload.
    pub(super) digest: Option<String>,
    /// `WARC-Refers-To`: the original's record id.
    pub(super) id: Option<String>,
    /// `WARC-Refers-To-Target-URI` and `WARC-Refers-To-Date`.
    pub(super) uri: Option<String>,
    pub(super) date: Option<String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::io::Write;
    use std::path::PathBuf;

    use super::*;

    /// A WARC file of one 200 response per `(codings, payload as stored)`.
    fn archive(dir: &Path, payloads: &[(&str, &str, Vec<u8>)]) -> PathBuf {
        let mut out = Vec::new();
        for (i, (te, ce, stored)) in payloads.iter().enumerate() {
            let mut http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n".to_vec();
            if !te.is_empty() {
                http.extend_from_slice(format!("Transfer-Encoding: {te}\r\n").as_bytes());
            }
            if !ce.is_empty() {
                http.extend_from_slice(format!("Content-Encoding: {ce}\r\n").as_bytes());
            }
            http.extend_from_slice(b"\r\n");
            http.extend_from_slice(stored);
            out.extend_from_slice(
                format!(
                    "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{i}>\r\n\
                     WARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Target-URI: http://e.test/{i}\r\n\
                     Content-Type: application/http; msgtype=response\r\nContent-Length: {}\r\n\r\n",
                    http.len()
                )
                .as_bytes(),
            );
            out.extend_from_slice(&http);
            out.extend_from_slice(b"\r\n\r\n");
        }
        let path = dir.join("t.warc");
        std::fs::write(&path, out).unwrap();
        path
    }

    fn gzip(parts: &[&[u8]], repeat: usize) -> Vec<u8> {
        let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        for _ in 0..repeat {
            for p in parts {
                w.write_all(p).unwrap();
            }
        }
        w.finish().unwrap()
    }

    fn chunked(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for c in b.chunks(1000) {
            out.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
            out.extend_from_slice(c);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    }

    /// Every record's (body length, truncated, problem) at `max_body`, and
    /// the records are all read (a payload cut short never leaves the
    /// reader inside its record).
    fn read_all(path: &Path, max_body: usize) -> Vec<(usize, bool, Option<String>)> {
        let mut out = Vec::new();
        for rec in open_archive(path).unwrap() {
            let rec = rec.unwrap();
            let mut rec = rec.borrow_mut();
            match read_item(&mut rec, 0, max_body).unwrap() {
                Item::Page {
                    body,
                    truncated,
                    problem,
                    ..
                } => {
                    assert!(body.len() <= max_body);
                    out.push((body.len(), truncated, problem));
                }
                _ => panic!("not a page"),
            }
        }
        out
    }

    /// Bombs of 64 MiB decoded (gzip, brotli, gzip inside chunked) are read
    /// to the limit and no further, and the records after them are read
    /// whole; a payload under the limit is whole and not marked; one whose
    /// coding does not decode is named, not judged, and does not stop the
    /// reading.
    #[test]
    fn encoded_payloads_decode_to_the_body_limit_and_no_further() {
        const MIB: usize = 1 << 20;
        let zeros = vec![0u8; MIB];
        let gz = gzip(&[&zeros], 64);
        let mut br = ::brotli::CompressorWriter::new(Vec::new(), 1 << 16, 1, 22);
        for _ in 0..64 {
            br.write_all(&zeros).unwrap();
        }
        br.flush().unwrap();
        let br = br.into_inner();
        let small = b"<p>small page</p>".repeat(100);
        let dir = tempfile::tempdir().unwrap();
        let path = archive(
            dir.path(),
            &[
                ("", "gzip", gz.clone()),
                ("", "br", br),
                ("chunked", "gzip", chunked(&gz)),
                ("", "gzip", gzip(&[&small], 1)),
                ("", "", small.clone()),
                ("", "gzip", b"not gzip at all".to_vec()),
                ("", "compress", small.clone()),
                ("chunked", "", chunked(&small)),
            ],
        );
        let got = read_all(&path, MIB);
        let n = small.len();
        assert_eq!(
            got[..5],
            [
                (MIB, true, None),
                (MIB, true, None),
                (MIB, true, None),
                (n, false, None),
                (n, false, None)
            ]
        );
        assert!(
            got[5].2.as_deref().is_some_and(|p| p.contains("gzip")),
            "{:?}",
            got[5]
        );
        assert!(
            got[6].2.as_deref().is_some_and(|p| p.contains("compress")),
            "{:?}",
            got[6]
        );
        assert_eq!(got[7], (n, false, None));
        // A plain payload over the limit is cut there too.
        assert_eq!(read_all(&path, 10)[4], (10, true, None));
    }
}
