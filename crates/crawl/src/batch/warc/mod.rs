//! `crawl dedup --input FILE.warc.gz` (or `.warc`, several files, a
//! directory): the HTML responses of WARC files judged with the crawl's own
//! pipeline (cleaner, page identity with the host templates learnt in
//! record order, the tiers), in record order.
//!
//! Read with `fastwarc` (ChatNoir's Resiliparse reader, made for Common
//! Crawl): gzip, zstd and lz4 members, WARC/1.0 and 1.1, HTTP heads parsed,
//! and payloads still transfer- or content-encoded (as wget and Common
//! Crawl store them) decoded, to `fetch.max_body_bytes` and no further, as
//! the crawl's fetcher does (`read_payload` in [`read`]); ours store the decoded body
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

mod read;

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};
use simcrawl_dedup::{Duplicate, Tier, Verdict};
use tracing::info;

use super::{Backend, Cleaned, HtmlTexts, Run};
use crate::output::lines::{DuplicateLine, ErrorLine, FromRecord, KeptLine};
use crate::output::sinks::Outputs;
use crate::progress::Progress;
use read::{Item, RefersTo, Refs, header, open_archive, read_item};

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

/// Runs `crawl dedup` over WARC files.
pub(super) fn run(cfg: &crate::config::Config, args: &super::BatchArgs, files: &[PathBuf]) -> Result<String> {
    let started = Instant::now();
    let (backend, templates, cleaner) = super::open(cfg, args.data_dir.as_deref())?;
    let p = super::resume(&backend, input_key(files)?, &args.out)?;
    let outputs = Outputs::open(&args.out, p.offsets)?;
    let mut run = Run {
        outputs,
        p,
        cleaner,
        templates,
        lang: crate::lang::SiteLanguages::default(),
        write_normalized: cfg.crawl.write_normalized,
    };
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let progress = Progress::bytes(size_of(files), "dedup");
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
    let mut done_bytes = size_of(&files[..first_file.min(files.len())]);
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

/// What names the input of a run (its progress is resumed only for the
/// same input): the canonical paths of its files, one a line.
fn input_key(files: &[PathBuf]) -> Result<PathBuf> {
    let mut key = String::new();
    for f in files {
        let abs = std::fs::canonicalize(f).with_context(|| format!("cannot read input {}", f.display()))?;
        key.push_str(&abs.display().to_string());
        key.push('\n');
    }
    Ok(PathBuf::from(key))
}

/// The bytes of `files` (those that can be read).
fn size_of(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
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
            path: base.path().to_owned(),
            own: page.own_text,
            lang_hint: page.lang_hint,
            visible_chars: page.visible_chars,
            own_link_chars: page.own_link_chars,
            framed: page.framed,
        }),
    })
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
                Item::Revisit { .. } => revisit(run, &mut originals, self.names, item)?,
            }
        }
        info!(documents = run.p.lines, "chunk judged");
        Ok(())
    }
}

/// The line of a revisit record: a copy of the page its original was
/// judged as, or an error when no earlier record of the input has it.
fn revisit(run: &mut Run, originals: &mut Originals<'_>, names: &[String], item: &Item) -> Result<()> {
    let Item::Revisit {
        url,
        id,
        file,
        refs,
        to,
    } = item
    else {
        return Ok(());
    };
    run.p.lines += 1;
    let from = FromRecord {
        record: id,
        warc: &names[*file],
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
                article: false,
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
                    names[*file],
                    to.digest
                        .as_deref()
                        .or(to.id.as_deref())
                        .or(to.uri.as_deref())
                        .unwrap_or("no digest, no WARC-Refers-To")
                ),
            })?;
        }
    }
    Ok(())
}
