//! The WARC archive of a crawl (`--warc DIR`, docs/WARC.md): every HTTP
//! exchange as `request` and `response` records, byte-identical payloads as
//! `revisit` records, the verdict of each dropped copy as a `metadata`
//! record.
//!
//! Crash safety is the JSON-lines outputs' ([`crate::output::sinks`]): the archive's
//! position (file serial, byte offset after the last whole record) is
//! stored with each checkpoint; on resume the file is cut back to it and
//! files begun after it are deleted, so a record written after the last
//! checkpoint (possibly torn) disappears with the state it belonged to, and
//! is written again when its page is fetched again. Every record is its own
//! gzip member, so a cut at a record boundary leaves a valid file.
//!
//! Revisits are found in an index of the set's originals kept next to its
//! files (`PREFIX-originals.redb`, [`index::Index`]): opening the writer reads no
//! archive, and its memory does not grow with the payloads archived.
//!
//! Each finished file gets its CDXJ index beside it (`X.cdxj`,
//! [`crate::output::cdxj`]): made by reading the file back once it is rotated
//! (on a thread of its own) or when the crawl ends. A file being written
//! has no index: opening the set at a checkpoint removes the index of the
//! file it writes on (and of files it deletes) before cutting it, and
//! indexes any finished file found without one (a kill between a rotation
//! and its index, a set from before indexes), so after kill -9 and resume
//! every index describes exactly the records of its file.
//!
//! The writer is ours (about what `warcio`'s writer does): the `warc` crate
//! (0.4) gzips a whole file as one stream, where WARC tools index records by
//! the offset of their own gzip member.

mod index;
mod record;
mod set;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use simcrawl_fetch::{Exchange, ResponseHead};

use crate::output::appender::Sink;
use crate::output::cdxj;
use crate::output::cdxj::RecordLine;
use index::{Index, Original};
pub use record::Prepared;
use record::{Record, encode, one_line, record_id, sha1_label, warc_date};
pub use set::{cut_gone, set_exists};
use set::{index_or_warn, new_path, remove_indexes_from, set_files, sync_dir};

/// What is archived of a page the title or content tier drops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NearDuplicates {
    /// Its request, response and the metadata record of its verdict.
    #[default]
    Response,
    /// Only the metadata record of its verdict (for archives of unique
    /// content only).
    Metadata,
}

/// `[output]` settings of the archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WarcSettings {
    /// Directory of the WARC files; empty: no archive.
    pub warc_dir: PathBuf,
    /// A file is closed, and the next begun, before a record would start
    /// past this many bytes.
    pub warc_max_bytes: u64,
    /// What is archived of near-duplicates: "response" or "metadata".
    pub warc_near_duplicates: NearDuplicates,
    /// File names begin with it: `PREFIX-TIMESTAMP-SERIAL.warc.gz`.
    pub warc_prefix: String,
}

impl Default for WarcSettings {
    fn default() -> Self {
        WarcSettings {
            warc_dir: PathBuf::new(),
            warc_max_bytes: 1_000_000_000,
            warc_near_duplicates: NearDuplicates::Response,
            warc_prefix: "simcrawl".into(),
        }
    }
}

impl WarcSettings {
    /// Whether a crawl archives at all.
    pub fn enabled(&self) -> bool {
        !self.warc_dir.as_os_str().is_empty()
    }
}

/// Where the archive stands: the file's serial and the bytes of it that
/// hold whole records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarcAt {
    pub serial: u64,
    pub offset: u64,
}

/// The index lines a sink keeps of its current file at most (about 70,000
/// records; a file of small pages reaches 1 GB with some 500,000): a file
/// with more is read back when it is finished, as one a resume went on
/// writing is. The last file of most crawls is indexed from its lines at
/// the end, on the writer thread, where reading it back cost 14% of that
/// thread's CPU in a `--warc` crawl; a rotated file is indexed on a thread
/// of its own either way.
const MAX_KEPT_LINES_BYTES: usize = 16 << 20;

/// The revisit profile of a payload identical to an earlier one.
pub const IDENTICAL_PAYLOAD: &str = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";

/// The verdict of a page that is a copy, as its metadata record says it.
#[derive(Debug, Clone, Copy)]
pub struct CopyNote<'a> {
    /// "url", "title" or "content".
    pub tier: &'a str,
    /// The kept page it copies.
    pub of: &'a str,
    pub similarity: Option<f64>,
    /// What the page was judged on (`crate::identity::Basis`), when judged.
    pub basis: Option<&'a str>,
}

/// One WARC set being written (see the module documentation).
#[derive(Debug)]
pub struct WarcSink {
    settings: WarcSettings,
    /// The `warcinfo` fields after the standard ones: the crawl's settings.
    info: String,
    path: PathBuf,
    /// The current file, appended to by a thread of its own as the
    /// JSON-lines outputs are (`crate::output::appender::Sink`): the records'
    /// `write` calls were 5% of the writer thread's perf samples in a
    /// `--warc` `crawl bench`, 20% while the disk was busy with a build
    /// (issue 37, target 1). Positions stay exact (this side counts the
    /// bytes it hands over); only [`WarcSink::sync`]'s are on the disk.
    out: Sink,
    at: WarcAt,
    synced: u64,
    /// Where it was opened: what [`WarcSink::cut_to`] goes back to when
    /// no checkpoint recorded a position.
    began: WarcAt,
    /// Where the current file's warcinfo record ends.
    first_record_end: u64,
    /// Payload digest -> its first response, for revisit records: those
    /// synced to the archive, persisted.
    index: Index,
    /// Those written since the last sync, with where their record ends:
    /// committed to `index` after the next sync.
    pending: HashMap<[u8; 20], (WarcAt, Original)>,
    /// Those synced and being committed to `index` by the appender
    /// thread, oldest first: looked up here until their commit is done.
    committing: std::collections::VecDeque<std::sync::Arc<Committing>>,
    /// Tests: what each commit of `committing` waits at before it begins.
    #[cfg(test)]
    commit_gate: Option<std::sync::Arc<std::sync::Barrier>>,
    /// The CDXJ indexing of rotated files, off the writer thread.
    indexing: Vec<std::thread::JoinHandle<()>>,
    /// The current file is indexed ([`WarcSink::close`]): a record written
    /// after that removes its index first.
    closed: bool,
    /// The CDXJ lines of the current file's records, when this sink began
    /// the file and so wrote every record in it: its index is written from
    /// them, without reading the file back. `None` for a file it went on
    /// writing (a resume, a cut) or whose lines outgrew
    /// [`MAX_KEPT_LINES_BYTES`]: that one is read back.
    lines: Option<Vec<String>>,
    /// Bytes of `lines`, and at most how many ([`MAX_KEPT_LINES_BYTES`]).
    lines_bytes: usize,
    max_lines_bytes: usize,
    /// The current file's name, as its warcinfo record and its index
    /// lines give it (set with `path` by [`WarcSink::name_file`]).
    filename: String,
}

impl WarcSink {
    /// Opens the archive at `at` (a checkpoint's position, cutting what
    /// came after it), or begins a new file after the files already there
    /// (`None`). `info` are the `warcinfo` fields describing the crawl.
    pub fn open(settings: &WarcSettings, info: String, at: Option<WarcAt>) -> Result<WarcSink> {
        Self::open_with(settings, info, at, None)
    }

    /// [`WarcSink::open`] with the set's index already open (`cut_to`:
    /// redb opens a file once per process).
    fn open_with(
        settings: &WarcSettings,
        info: String,
        at: Option<WarcAt>,
        index: Option<Index>,
    ) -> Result<WarcSink> {
        let dir = &settings.warc_dir;
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let index = match index {
            Some(i) => i,
            None => Index::open(settings)?,
        };
        let files = set_files(dir, &settings.warc_prefix)?;
        let (path, at) = match at {
            Some(at) => {
                let Some((_, path)) = files.iter().find(|(s, _)| *s == at.serial) else {
                    bail!(
                        "the WARC file of serial {} ({}-*-{:05}.warc.gz) is missing from {}, where the \
                         crawl's last checkpoint left {} bytes of it: it was moved or deleted outside \
                         the crawl; put it back, or use --fresh to start over",
                        at.serial,
                        settings.warc_prefix,
                        at.serial,
                        dir.display(),
                        at.offset
                    );
                };
                // The file written on again, and those deleted, lose their
                // CDXJ index first (an index names only finished files).
                remove_indexes_from(dir, &settings.warc_prefix, at.serial)?;
                // Files begun after the checkpoint hold only records that
                // are written again.
                for (s, p) in &files {
                    if *s > at.serial {
                        std::fs::remove_file(p).with_context(|| format!("cannot delete {}", p.display()))?;
                    }
                }
                (path.clone(), at)
            }
            None => {
                let serial = files.last().map_or(0, |(s, _)| s + 1);
                (new_path(settings, serial), WarcAt { serial, offset: 0 })
            }
        };
        // Finished files without their CDXJ index (a kill before it was
        // written, a set from before indexes) are indexed now.
        for (s, p) in &files {
            if *s < at.serial && !cdxj::index_path(p).exists() {
                index_or_warn(p, None);
            }
        }
        // Before anything is written past `at` again.
        index.cut(at)?;
        let mut sink = WarcSink {
            settings: settings.clone(),
            info,
            out: appender(&path, at.offset)?,
            path,
            at,
            synced: at.offset,
            began: at,
            first_record_end: 0,
            index,
            pending: HashMap::new(),
            committing: std::collections::VecDeque::new(),
            #[cfg(test)]
            commit_gate: None,
            indexing: Vec::new(),
            closed: false,
            lines: None,
            lines_bytes: 0,
            max_lines_bytes: MAX_KEPT_LINES_BYTES,
            filename: String::new(),
        };
        sink.name_file();
        if at.offset == 0 {
            sink.lines = Some(Vec::new());
            sink.write_warcinfo()?;
        }
        Ok(sink)
    }

    /// The position of the records written so far (not necessarily synced).
    #[cfg(test)]
    fn position(&self) -> WarcAt {
        self.at
    }

    /// Flushes and fsyncs; returns the position now safe to record.
    ///
    /// The originals of the records synced are committed to the index by
    /// the appender thread once they are on the disk (an entry never names
    /// a record the archive may lose), while the writer goes on: that
    /// commit, a durable redb transaction at each checkpoint, was 11-14% of
    /// the writer thread's CPU in a `--warc` `crawl bench` (issue 37,
    /// target 1). Until it is done they are looked up in `committing`.
    pub fn sync(&mut self) -> Result<WarcAt> {
        if self.at.offset != self.synced {
            if self.pending.is_empty() {
                self.out.sync()?;
            } else {
                let batch = std::sync::Arc::new(Committing {
                    originals: std::mem::take(&mut self.pending),
                    done: std::sync::atomic::AtomicBool::new(false),
                });
                let (index, committed) = (self.index.clone(), batch.clone());
                #[cfg(test)]
                let gate = self.commit_gate.clone();
                self.out.sync_then(Box::new(move || {
                    #[cfg(test)]
                    if let Some(g) = gate {
                        g.wait();
                    }
                    index
                        .add(&committed.originals)
                        .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
                    committed.done.store(true, std::sync::atomic::Ordering::Release);
                    Ok(())
                }))?;
                self.committing.push_back(batch);
            }
            self.synced = self.at.offset;
        }
        Ok(self.at)
    }

    /// Flushes to the OS (waiting for the appender, and so for the
    /// index's commits handed to it); returns the position written so far.
    pub fn flush(&mut self) -> Result<WarcAt> {
        self.out.flush()?;
        self.forget_committed();
        Ok(self.at)
    }

    /// Lets go of the batches the index holds now, oldest first, and of
    /// the index's read snapshot, which was taken before them (a later
    /// look-up reads them there).
    fn forget_committed(&mut self) {
        let mut any = false;
        while self
            .committing
            .front()
            .is_some_and(|b| b.done.load(std::sync::atomic::Ordering::Acquire))
        {
            self.committing.pop_front();
            any = true;
        }
        if any {
            self.index.forget_snapshot();
        }
    }

    /// The first response archived with this payload, if any: written
    /// since the last sync, being committed, or in the index.
    fn original(&mut self, digest: &[u8; 20]) -> Result<Option<Original>> {
        if let Some((_, o)) = self.pending.get(digest) {
            return Ok(Some(o.clone()));
        }
        self.forget_committed();
        for batch in &self.committing {
            if let Some((_, o)) = batch.originals.get(digest) {
                return Ok(Some(o.clone()));
            }
        }
        self.index.get(digest)
    }

    /// Hands the records written to the appender without waiting for it;
    /// returns the position after them (what a commit that is not durable
    /// records, as the JSON-lines outputs' `hand_over`).
    pub fn hand_over(&mut self) -> Result<WarcAt> {
        self.out.hand_over()?;
        Ok(self.at)
    }

    /// Takes back everything after `at` (a checkpoint at or before the
    /// last sync), across rotations; `None`: everything this sink wrote
    /// (no checkpoint recorded a position yet).
    pub fn cut_to(&mut self, at: Option<WarcAt>) -> Result<()> {
        let at = at.unwrap_or(self.began);
        if at.serial > self.at.serial || (at.serial == self.at.serial && at.offset > self.synced) {
            bail!(
                "cannot cut the WARC archive to file {} at {} bytes: it is at file {}, {} bytes synced",
                at.serial,
                at.offset,
                self.at.serial,
                self.synced
            );
        }
        self.flush()?;
        // A rotated file's index is written before the file may be cut.
        self.join_indexing();
        let began = self.began;
        let mut reopened = WarcSink::open_with(
            &self.settings,
            std::mem::take(&mut self.info),
            Some(at),
            Some(self.index.clone()),
        )?;
        reopened.began = began;
        *self = reopened;
        self.out.sync_file()
    }

    /// Syncs, and indexes the current file (CDXJ) now that nothing more is
    /// written to it; waits for the indexing of rotated files. An index
    /// that cannot be written is a warning: the archive is whole without it,
    /// and a resume writes it.
    pub fn close(&mut self) -> Result<WarcAt> {
        self.sync()?;
        // The index holds every original before the set is left (or
        // opened again by a later run in this process).
        let at = self.flush()?;
        self.join_indexing();
        if !self.closed {
            index_or_warn(&self.path, self.lines.as_mut());
            self.closed = true;
        }
        Ok(at)
    }

    /// Sets `filename` from `path`, each time `path` changes.
    fn name_file(&mut self) {
        self.filename = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
    }

    /// Writes the record `z` with its index line `line` (but for its
    /// place, which is known now); a line that could not be made (as a
    /// reading back could not read it) leaves the file to be read back.
    fn write_indexed(&mut self, z: &[u8], line: &std::io::Result<Option<RecordLine>>) -> Result<()> {
        let offset = self.at.offset;
        self.write_member(z)?;
        let line = match line {
            Ok(line) => line.as_ref(),
            Err(_) => {
                self.lines = None;
                None
            }
        };
        if let (Some(lines), Some(line)) = (&mut self.lines, line) {
            let line = line.clone().finish(z.len() as u64, offset, &self.filename);
            self.lines_bytes += line.len();
            lines.push(line);
            if self.lines_bytes > self.max_lines_bytes {
                self.lines = None;
            }
        }
        Ok(())
    }

    fn join_indexing(&mut self) {
        for h in self.indexing.drain(..) {
            if h.join().is_err() {
                tracing::warn!("the CDXJ indexing of a rotated WARC file panicked");
            }
        }
    }

    /// The exchanges of a fetch besides its page (robots.txt, redirect
    /// hops, error responses): a request and a response (or revisit)
    /// record each.
    pub fn exchanges(&mut self, list: &[Exchange]) -> Result<()> {
        for e in list {
            self.response(&e.head, &e.body, e.truncated)?;
        }
        Ok(())
    }

    /// A page's own response (prepared off the writer thread), and the
    /// metadata record of its verdict when it is a copy (`note`). With
    /// `warc_near_duplicates = "metadata"`, a copy found by the title or
    /// content tier gets its metadata record only.
    pub fn page(&mut self, prepared: &Prepared, note: Option<CopyNote<'_>>) -> Result<()> {
        let metadata_only = self.settings.warc_near_duplicates == NearDuplicates::Metadata
            && note.is_some_and(|n| n.tier != "url");
        let concurrent = if metadata_only {
            None
        } else {
            self.put(prepared)?;
            Some(prepared.id.as_str())
        };
        if let Some(n) = note {
            self.metadata(&prepared.uri, &prepared.date, concurrent, &n)?;
        }
        Ok(())
    }

    /// A request record and a response record (a revisit record when an
    /// earlier response had the same payload).
    fn response(&mut self, head: &ResponseHead, body: &[u8], truncated: bool) -> Result<()> {
        let p = Prepared::new(head, body, truncated)?;
        self.put(&p)
    }

    fn put(&mut self, p: &Prepared) -> Result<()> {
        self.rotate_if_full()?;
        self.write_member(&p.request)?;
        let original = if p.empty {
            None
        } else {
            self.original(&p.payload_digest)?
        };
        match original {
            Some(orig) => {
                let mut rec = Record::new("revisit", &p.id, &p.date);
                rec.field("WARC-Target-URI", &p.uri);
                rec.field("WARC-Profile", IDENTICAL_PAYLOAD);
                rec.field("WARC-Refers-To-Target-URI", &orig.uri);
                rec.field("WARC-Refers-To-Date", &orig.date);
                rec.field("WARC-Refers-To", &orig.id);
                if let Some(ip) = &p.ip {
                    rec.field("WARC-IP-Address", ip);
                }
                let digest = sha1_label(&p.payload_digest);
                rec.field("WARC-Payload-Digest", &digest);
                rec.field("Content-Type", "application/http; msgtype=response");
                let z = encode(rec, &[&p.http])?;
                let line = match self.lines {
                    Some(_) => RecordLine::of("revisit", &p.uri, &p.date, &digest, &p.http),
                    None => Ok(None),
                };
                self.write_indexed(&z, &line)?;
            }
            None => {
                self.write_indexed(&p.response, &p.line)?;
                if !p.empty {
                    self.pending.insert(
                        p.payload_digest,
                        (
                            self.at,
                            Original {
                                uri: p.uri.clone(),
                                date: p.date.clone(),
                                id: p.id.clone(),
                            },
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    fn metadata(&mut self, uri: &str, date: &str, concurrent: Option<&str>, n: &CopyNote<'_>) -> Result<()> {
        let mut fields = format!(
            "simcrawl-verdict: duplicate\r\nsimcrawl-tier: {}\r\nsimcrawl-duplicate-of: {}\r\n",
            n.tier,
            one_line(n.of)
        );
        if let Some(s) = n.similarity {
            fields.push_str(&format!("simcrawl-similarity: {s:.3}\r\n"));
        }
        if let Some(b) = n.basis {
            fields.push_str(&format!("simcrawl-basis: {b}\r\n"));
        }
        let id = record_id();
        let mut rec = Record::new("metadata", &id, date);
        rec.field("WARC-Target-URI", uri);
        if let Some(c) = concurrent {
            rec.field("WARC-Concurrent-To", c);
        }
        rec.field("Content-Type", "application/warc-fields");
        let z = encode(rec, &[fields.as_bytes()])?;
        self.write_member(&z)
    }

    fn write_warcinfo(&mut self) -> Result<()> {
        let fields = format!(
            "software: simcrawl/{}\r\nformat: WARC File Format 1.1\r\nconformsTo: \
             http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n{}",
            env!("CARGO_PKG_VERSION"),
            self.info
        );
        let mut rec = Record::new("warcinfo", &record_id(), &warc_date(SystemTime::now()));
        rec.field("WARC-Filename", &self.filename);
        rec.field("Content-Type", "application/warc-fields");
        let z = encode(rec, &[fields.as_bytes()])?;
        self.write_member(&z)?;
        self.first_record_end = self.at.offset;
        Ok(())
    }

    /// Begins the next file when this one holds more than its share and
    /// more than its warcinfo record.
    fn rotate_if_full(&mut self) -> Result<()> {
        if self.at.offset < self.settings.warc_max_bytes || self.warcinfo_only() {
            return Ok(());
        }
        self.sync()?;
        // The finished file is indexed by reading it back, off the writer
        // thread (one inflation of the file: roughly a second per 100 MB).
        self.indexing.retain(|h| !h.is_finished());
        let finished = self.path.clone();
        let mut lines = self.lines.take();
        let spawned = std::thread::Builder::new()
            .name("warc-cdxj".into())
            .spawn(move || index_or_warn(&finished, lines.as_mut()));
        match spawned {
            Ok(h) => self.indexing.push(h),
            Err(e) => {
                tracing::warn!("cannot start the CDXJ indexing thread ({e}); indexing inline");
                index_or_warn(&self.path, None);
            }
        }
        let serial = self.at.serial + 1;
        let path = new_path(&self.settings, serial);
        self.out = appender(&path, 0)?;
        sync_dir(&self.settings.warc_dir)?;
        self.path = path;
        self.name_file();
        self.lines = Some(Vec::new());
        self.lines_bytes = 0;
        self.at = WarcAt { serial, offset: 0 };
        self.synced = 0;
        self.write_warcinfo()
    }

    fn warcinfo_only(&self) -> bool {
        self.at.offset == self.first_record_end
    }

    /// Appends one record's gzip member.
    fn write_member(&mut self, z: &[u8]) -> Result<()> {
        if self.closed {
            cdxj::remove_index(&self.path)
                .with_context(|| format!("cannot delete the index of {}", self.path.display()))?;
            self.closed = false;
        }
        self.out.write_bytes(z)?;
        self.at.offset += z.len() as u64;
        Ok(())
    }
}

/// Bytes of records a WARC file's sink gathers before it hands them to its
/// appender between commits: records are larger than JSON lines, and a
/// hand-over may wake the appender.
const WARC_HANDOVER_BYTES: usize = 256 << 10;

/// The appender of the WARC file at `path`, cut to `offset` bytes.
fn appender(path: &std::path::Path, offset: u64) -> Result<Sink> {
    Sink::on_file(
        path,
        crate::output::appender::open_cut_to(path, offset, "WARC file")?,
        offset,
        ("crawl-warc", WARC_HANDOVER_BYTES),
    )
}

/// Originals synced to the archive, being committed to its index by the
/// appender thread ([`WarcSink::sync`]).
#[derive(Debug)]
struct Committing {
    originals: HashMap<[u8; 20], (WarcAt, Original)>,
    /// Set once the index holds them.
    done: std::sync::atomic::AtomicBool,
}

/// No indexing thread outlives its sink: a sink opened again in the same
/// process may cut the file that thread reads, and its index must not land
/// after that.
impl Drop for WarcSink {
    fn drop(&mut self) {
        self.join_indexing();
    }
}
