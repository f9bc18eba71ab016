//! `crawl dedup --input FILE.warc.gz` (or `.warc`, several files, a
//! directory): the HTML responses of WARC files judged with the crawl's own
//! pipeline (cleaner, page identity with the host templates learnt in
//! record order, the tiers), in record order.
//!
//! Read with `fastwarc` (ChatNoir's Resiliparse reader, made for Common
//! Crawl): gzip, zstd and lz4 members, WARC/1.0 and 1.1, HTTP heads parsed,
//! and payloads still transfer- or content-encoded (as wget and Common
//! Crawl store them) decoded, to `fetch.max_body_bytes` and no further, as
//! the crawl's fetcher does ([`read_payload`]); ours store the decoded body
//! and name the codings `X-Crawler-*`, so nothing is decoded twice. A `revisit` record
//! (identical payload) is a copy of the page its original was judged as,
//! without parsing anything: found by its payload digest, else by
//! `WARC-Refers-To` (the original's record id), else by
//! `WARC-Refers-To-Target-URI` and `-Date` (as warcio and pywb resolve
//! them). A run into a data directory resumes after a kill from the last
//! committed chunk: the records of the file it was in are read again and
//! the ones done skipped. What revisits resolve to ([`Originals`]) is stored
//! in the data directory with the progress it belongs to, so a resumed run
//! resolves the revisits of payloads from records and files done before the
//! kill exactly as an uninterrupted run does.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use fastwarc::stream_io::traits::IntoWarcReader;
use fastwarc::stream_io::{brotli, chunked, gzip, zstd};
use fastwarc::warc::iter::{ArchiveIterator, ArchiveIteratorOptions};
use fastwarc::warc::record::{AutoDecode, WarcRecord, WarcRecordType};
use rayon::prelude::*;
use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};
use simcrawl_dedup::{Duplicate, Tier, Verdict};
use tracing::info;

use super::{Backend, Cleaned, HtmlTexts, Run};
use crate::output::lines::{DuplicateLine, ErrorLine, FromRecord, KeptLine};
use crate::output::sinks::Outputs;
use crate::progress::Progress;

/// Records per chunk at most: cleaned in parallel, judged and committed
/// together (fewer when their payloads reach the memory budget).
const CHUNK: usize = 2048;

/// The WARC files of `inputs`, sorted within each directory, when they are
/// WARC input (a `.warc`/`.warc.gz` name, a file starting with a WARC
/// record, or a directory); `None` for a JSON-lines corpus.
pub(super) fn inputs(inputs: &[PathBuf]) -> Result<Option<Vec<PathBuf>>> {
    let mut files = Vec::new();
    let mut warc = false;
    for p in inputs {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("cannot read the directory {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && is_warc_name(f))
                .collect();
            found.sort();
            if found.is_empty() {
                bail!("{} holds no WARC file (*.warc, *.warc.gz)", p.display());
            }
            files.extend(found);
            warc = true;
        } else {
            warc |= is_warc_name(p) || starts_like_warc(p);
            files.push(p.clone());
        }
    }
    Ok(warc.then_some(files))
}

fn is_warc_name(p: &Path) -> bool {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    [".warc", ".warc.gz", ".warc.zst", ".warc.lz4"]
        .iter()
        .any(|s| n.ends_with(s))
}

/// A file whose first bytes (inflated when gzip) are a WARC version line.
fn starts_like_warc(p: &Path) -> bool {
    let Ok(mut f) = std::fs::File::open(p) else {
        return false;
    };
    let mut head = [0u8; 2];
    if f.read_exact(&mut head).is_err() {
        return false;
    }
    let Ok(f) = std::fs::File::open(p) else {
        return false;
    };
    let mut start = Vec::new();
    let read = if head == [0x1f, 0x8b] {
        flate2::read::MultiGzDecoder::new(f)
            .take(8)
            .read_to_end(&mut start)
    } else {
        f.take(8).read_to_end(&mut start)
    };
    read.is_ok() && start.starts_with(b"WARC/1.")
}

/// One record of the input, as the run needs it.
enum Item {
    /// An HTML response: judged.
    Page {
        url: String,
        id: String,
        file: usize,
        content_type: Option<String>,
        body: Vec<u8>,
        /// `body` is cut short ([`FromRecord::truncated`]).
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

/// Runs `crawl dedup` over WARC files.
pub(super) fn run(cfg: &crate::config::Config, args: &super::BatchArgs, files: &[PathBuf]) -> Result<String> {
    let started = Instant::now();
    let (backend, templates, cleaner) = super::open(cfg, args.data_dir.as_deref())?;
    let mut key = String::new();
    for f in files {
        let abs = std::fs::canonicalize(f).with_context(|| format!("cannot read input {}", f.display()))?;
        key.push_str(&abs.display().to_string());
        key.push('\n');
    }
    let p = super::resume(&backend, PathBuf::from(key), &args.out)?;
    let outputs = Outputs::open(&args.out, p.offsets)?;
    let mut run = Run {
        outputs,
        p,
        cleaner,
        templates,
        lang: crate::lang::Declared::default(),
        write_normalized: cfg.crawl.write_normalized,
    };
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let total: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let progress = Progress::bytes(total, "dedup");
    let resumed = run.p.lines;
    // What revisits copy: in memory, or in the data directory where an
    // earlier run's stay until it resumes (a new run starts empty).
    let mut originals: HashMap<String, String> = HashMap::new();
    if let Backend::Redb(d) = &backend
        && !resumed_run(&run.p)
    {
        d.store()
            .write_with(simcrawl_dedup::Commit::Durable, |txn, _| forget_originals(txn))?;
    }
    // A chunk also ends once its payloads hold the crawl's memory budget
    // for bodies (`fetch.max_bytes_in_flight`, at least one whole body):
    // 2048 payloads of up to `fetch.max_body_bytes` each are never held
    // at once.
    let chunk_bytes = cfg.fetch.max_bytes_in_flight.max(cfg.fetch.max_body_bytes);
    let first_file = usize::try_from(run.p.warc_file).unwrap_or(usize::MAX);
    let mut done_bytes: u64 = files
        .iter()
        .take(first_file)
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    for (fi, path) in files.iter().enumerate().skip(first_file) {
        let skip = if fi == first_file { run.p.warc_records } else { 0 };
        let mut records = open_archive(path)?;
        let mut n: u64 = 0;
        let mut chunk: Vec<Item> = Vec::with_capacity(CHUNK);
        // Payload bytes the chunk holds.
        let mut held = 0usize;
        let mut failure = None;
        loop {
            let next = records.next();
            let rec = match next {
                None => break,
                Some(Ok(r)) => r,
                Some(Err(e)) => {
                    failure = Some(format!(
                        "{} is unreadable after its record {n} (the records before it are judged): {e}",
                        path.display()
                    ));
                    break;
                }
            };
            n += 1;
            let mut rec = rec.borrow_mut();
            if n <= skip {
                // Done before the resume (what revisits of it copy is
                // stored with the progress that counted it).
                continue;
            }
            let item = match read_item(&mut rec, fi, cfg.fetch.max_body_bytes) {
                Ok(i) => i,
                Err(e) => {
                    // Not done: a resume reads it again.
                    n -= 1;
                    failure = Some(format!(
                        "{}: record {n} ({}) is unreadable (the records before it are judged): {e}",
                        path.display(),
                        header(&rec, "WARC-Record-ID").unwrap_or_default()
                    ));
                    break;
                }
            };
            drop(rec);
            if let Item::Page { body, .. } = &item {
                held += body.len();
            }
            chunk.push(item);
            if chunk.len() >= CHUNK || held >= chunk_bytes {
                held = 0;
                process(&backend, &mut run, &mut chunk, &names, &mut originals, (fi, n))?;
            }
        }
        process(&backend, &mut run, &mut chunk, &names, &mut originals, (fi, n))?;
        if let Some(f) = failure {
            bail!(f);
        }
        done_bytes += std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        progress.set(done_bytes);
        // The next file from its start (committed with its first chunk, or
        // at the end).
        run.p.warc_file = fi as u64 + 1;
        run.p.warc_records = 0;
    }
    super::finish(&backend, &mut run)?;
    progress.finish();
    let p = &run.p;
    Ok(super::summary(
        p,
        p.lines - resumed,
        started.elapsed().as_secs_f64(),
        "records not judged",
        (resumed > 0).then(|| format!("resumed after {resumed} documents")),
    ))
}

/// The records of `path`: a gzip stream (one member per record or not)
/// by its first bytes whatever its name, inflated by flate2 (which, unlike
/// fastwarc's own gzip reader, reports a file cut inside a member instead
/// of ending quietly); zstd and lz4 by their name; anything else as plain
/// WARC.
fn open_archive(path: &Path) -> Result<ArchiveIterator> {
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

fn header(rec: &WarcRecord, name: &str) -> Option<String> {
    rec.headers().get(name).map(|v| v.trim().to_string())
}

/// What a record is for the run; reads an HTML response's payload, decoded,
/// up to `max_body` bytes (`fetch.max_body_bytes`, the crawl's own limit).
fn read_item(rec: &mut WarcRecord, file: usize, max_body: usize) -> Result<Item> {
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

/// Cleans, signs and judges a chunk of records in order, writes their
/// lines, and commits them with the position `at` (file, records of it
/// done).
fn process(
    backend: &Backend,
    run: &mut Run,
    chunk: &mut Vec<Item>,
    names: &[String],
    originals: &mut HashMap<String, String>,
    at: (usize, u64),
) -> Result<()> {
    let items = std::mem::take(chunk);
    let cleaner = &run.cleaner;
    let cleaned: Vec<Option<Result<Cleaned, String>>> = items
        .par_iter()
        .map(|it| match it {
            Item::Page { problem: Some(p), .. } => Some(Err(p.clone())),
            Item::Page {
                url,
                content_type,
                body,
                ..
            } => Some(clean(cleaner, url, content_type.as_deref(), body)),
            _ => None,
        })
        .collect();
    let pages: Vec<Result<Cleaned, String>> = cleaned.into_iter().flatten().collect();
    let mut judged = Judging {
        items: &items,
        names,
        originals,
    };
    super::judge_chunk(backend, run, pages, |run, parsed, verdicts, txn| {
        judged.emit(run, parsed, verdicts, txn)?;
        run.p.warc_file = at.0 as u64;
        run.p.warc_records = at.1;
        Ok(())
    })
}

/// An HTML payload through the crawl's cleaner, as the crawl's page stage
/// does (charset from the content type or the bytes).
fn clean(
    cleaner: &simcrawl_clean::Cleaner,
    url: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Cleaned, String> {
    let base = url::Url::parse(url).map_err(|e| format!("invalid WARC-Target-URI {url:?}: {e}"))?;
    let page = cleaner
        .parse(body, content_type, &base)
        .map_err(|e| format!("cannot clean {url}: {e}"))?;
    Ok(Cleaned {
        url: url.to_string(),
        title: page.title,
        raw_title: page.raw_title,
        text: page.text,
        html: Some(HtmlTexts {
            host: crate::template::host_of(&base).to_owned(),
            own: page.own_text,
            lang_hint: page.lang_hint,
            visible_chars: page.visible_chars,
            own_link_chars: page.own_link_chars,
        }),
    })
}

/// How later revisit records may name a record: what it is stored under
/// in [`Originals`].
#[derive(Debug)]
struct Refs {
    /// `WARC-Payload-Digest`.
    digest: Option<String>,
    /// `WARC-Record-ID`.
    id: String,
    /// `WARC-Target-URI`.
    uri: String,
    /// `WARC-Date`.
    date: Option<String>,
}

/// How a revisit record names its original.
#[derive(Debug)]
struct RefersTo {
    /// `WARC-Payload-Digest`: the identical payload.
    digest: Option<String>,
    /// `WARC-Refers-To`: the original's record id.
    id: Option<String>,
    /// `WARC-Refers-To-Target-URI` and `WARC-Refers-To-Date`.
    uri: Option<String>,
    date: Option<String>,
}

/// What revisits copy, stored in the data directory: a key naming an
/// earlier record (`d DIGEST`, `r RECORD-ID`, `u URI DATE`, `u URI`) ->
/// the kept page that record was judged as. Written in the transaction of
/// the chunk that judged the record, so it always matches the progress
/// committed with it; dropped when the run ends.
const ORIGINALS: TableDefinition<&str, &str> = TableDefinition::new("batch_warc_originals");

/// Drops the stored originals (a run that ends, or a new run that does not
/// resume the one they belong to).
pub(super) fn forget_originals(txn: &WriteTransaction) -> Result<(), simcrawl_dedup::Error> {
    txn.delete_table(ORIGINALS)?;
    Ok(())
}

/// Whether `p` is the progress of an interrupted run (not a new one).
fn resumed_run(p: &super::BatchProgress) -> bool {
    p.lines > 0 || p.warc_file > 0 || p.warc_records > 0
}

/// Where revisits find their originals: the run's own map in memory, or
/// the table of the data directory in the chunk's transaction.
enum Originals<'a> {
    Memory(&'a mut HashMap<String, String>),
    Stored(Table<'a, &'static str, &'static str>),
}

impl Originals<'_> {
    fn get(&self, key: &str) -> Result<Option<String>> {
        Ok(match self {
            Originals::Memory(m) => m.get(key).cloned(),
            Originals::Stored(t) => t.get(key)?.map(|v| v.value().to_string()),
        })
    }

    /// Stores `key` -> `of`; an earlier value stays unless `replace`.
    fn put(&mut self, key: &str, of: &str, replace: bool) -> Result<()> {
        if !replace && self.get(key)?.is_some() {
            return Ok(());
        }
        match self {
            Originals::Memory(m) => {
                m.insert(key.to_string(), of.to_string());
            }
            Originals::Stored(t) => {
                t.insert(key, of)?;
            }
        }
        Ok(())
    }

    /// A record judged as (a copy of) `of`: the first response of a payload
    /// is what revisits of that payload copy, a revisit without a date
    /// refers to the latest record of its URI.
    fn record(&mut self, r: &Refs, of: &str) -> Result<()> {
        if let Some(d) = &r.digest {
            self.put(&format!("d {d}"), of, false)?;
        }
        self.put(&format!("r {}", r.id), of, false)?;
        if let Some(date) = &r.date {
            self.put(&format!("u {} {date}", r.uri), of, false)?;
        }
        self.put(&format!("u {}", r.uri), of, true)
    }

    /// The kept page a revisit copies: by payload digest, else by the
    /// original's record id, else by its URI and date (or URI alone).
    fn find(&self, to: &RefersTo) -> Result<Option<String>> {
        let mut keys = Vec::with_capacity(3);
        if let Some(d) = &to.digest {
            keys.push(format!("d {d}"));
        }
        if let Some(id) = &to.id {
            keys.push(format!("r {id}"));
        }
        if let Some(u) = &to.uri {
            keys.push(match &to.date {
                Some(date) => format!("u {u} {date}"),
                None => format!("u {u}"),
            });
        }
        for k in keys {
            if let Some(of) = self.get(&k)? {
                return Ok(Some(of));
            }
        }
        Ok(None)
    }
}

/// The lines of a chunk's records, in order.
struct Judging<'a> {
    items: &'a [Item],
    names: &'a [String],
    originals: &'a mut HashMap<String, String>,
}

impl Judging<'_> {
    fn emit(
        &mut self,
        run: &mut Run,
        parsed: &[super::Parsed],
        verdicts: Vec<Verdict>,
        txn: Option<&WriteTransaction>,
    ) -> Result<()> {
        let mut originals = match txn {
            Some(t) => Originals::Stored(t.open_table(ORIGINALS)?),
            None => Originals::Memory(self.originals),
        };
        let mut parsed = parsed.iter();
        let mut verdicts = verdicts.into_iter();
        for item in self.items {
            match item {
                Item::Other => {}
                Item::Page {
                    id,
                    file,
                    refs,
                    truncated,
                    ..
                } => {
                    let Some(p) = parsed.next() else {
                        bail!("internal error: fewer parsed pages than records");
                    };
                    run.p.lines += 1;
                    let from = FromRecord {
                        record: id,
                        warc: &self.names[*file],
                        truncated: *truncated,
                    };
                    match p {
                        Err(e) => {
                            run.p.errors += 1;
                            run.outputs.errors.write(&ErrorLine {
                                via: None,
                                url: None,
                                kind: Some("warc_record"),
                                line: None,
                                error: &format!("{} {id}: {e}", self.names[*file]),
                            })?;
                        }
                        Ok(doc) => {
                            let (url, title) = (&doc.url, &doc.title);
                            let judged = Some(doc.judged());
                            let Some(v) = verdicts.next() else {
                                bail!("internal error: fewer verdicts than documents");
                            };
                            run.p.verdicts.record(&v);
                            let kept_as = match &v {
                                Verdict::Unique { fingerprint, .. } => {
                                    run.outputs.kept.write(&KeptLine {
                                        record: Some(from),
                                        judged,
                                        title_normalized: run
                                            .write_normalized
                                            .then_some(doc.title_normalized.as_str()),
                                        ..KeptLine::new(url, title, *fingerprint)
                                    })?;
                                    url.as_str()
                                }
                                Verdict::Duplicate(d) => {
                                    run.outputs.duplicates.write(&DuplicateLine {
                                        record: Some(from),
                                        judged: judged.filter(|_| d.tier != simcrawl_dedup::Tier::Url),
                                        ..DuplicateLine::new(url, d)
                                    })?;
                                    d.of.as_str()
                                }
                                _ => url.as_str(), // non_exhaustive in simcrawl-dedup
                            };
                            originals.record(refs, kept_as)?;
                        }
                    }
                }
                Item::Revisit {
                    url,
                    id,
                    file,
                    refs,
                    to,
                } => {
                    run.p.lines += 1;
                    let from = FromRecord {
                        record: id,
                        warc: &self.names[*file],
                        truncated: false,
                    };
                    match originals.find(to)? {
                        Some(of) => {
                            // The same payload, so the same text: a copy of
                            // the page its original was judged as.
                            let d = Duplicate {
                                tier: Tier::Content,
                                of,
                                distance: Some(0),
                                similarity: Some(1.0),
                                fingerprint: None,
                                of_id: None,
                                url_skipped: false,
                            };
                            run.p.verdicts.record_duplicate(Tier::Content);
                            run.outputs.duplicates.write(&DuplicateLine {
                                record: Some(from),
                                ..DuplicateLine::new(url, &d)
                            })?;
                            originals.record(refs, &d.of)?;
                        }
                        None => {
                            run.p.errors += 1;
                            run.outputs.errors.write(&ErrorLine {
                                via: None,
                                url: Some(url),
                                kind: Some("warc_revisit"),
                                line: None,
                                error: &format!(
                                    "{} {id}: a revisit of a payload ({}) that no earlier response of the input has",
                                    self.names[*file],
                                    to.digest
                                        .as_deref()
                                        .or(to.id.as_deref())
                                        .or(to.uri.as_deref())
                                        .unwrap_or("no digest, no WARC-Refers-To")
                                ),
                            })?;
                        }
                    }
                }
            }
        }
        info!(documents = run.p.lines, "chunk judged");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::io::Write;

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
