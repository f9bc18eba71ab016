//! The WARC archive of a crawl (`--warc DIR`, docs/WARC.md): every HTTP
//! exchange as `request` and `response` records, byte-identical payloads as
//! `revisit` records, the verdict of each dropped copy as a `metadata`
//! record.
//!
//! Crash safety is the JSON-lines outputs' ([`super::sinks`]): the archive's
//! position (file serial, byte offset after the last whole record) is
//! stored with each checkpoint; on resume the file is cut back to it and
//! files begun after it are deleted, so a record written after the last
//! checkpoint (possibly torn) disappears with the state it belonged to, and
//! is written again when its page is fetched again. Every record is its own
//! gzip member, so a cut at a record boundary leaves a valid file.
//!
//! Revisits are found in an index of the set's originals kept next to its
//! files (`PREFIX-originals.redb`, [`Index`]): opening the writer reads no
//! archive, and its memory does not grow with the payloads archived.
//!
//! Each finished file gets its CDXJ index beside it (`X.cdxj`,
//! [`super::cdxj`]): made by reading the file back once it is rotated
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

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use flate2::Compression;
use flate2::write::GzEncoder;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};
use simcrawl_fetch::{Exchange, ResponseHead};

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

/// The earlier response of a payload.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Original {
    uri: String,
    date: String,
    id: String,
}

/// Payload digest -> its first response (`Original`) and where that
/// response's record ends (serial, offset).
const ORIGINALS: TableDefinition<&[u8], (u64, u64, &str, &str, &str)> = TableDefinition::new("originals");
/// Where a record of [`ORIGINALS`] ends -> its payload digest: what a cut
/// back to a checkpoint removes.
const ENDS: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("ends");

/// The originals of a set, persisted next to its files
/// (`PREFIX-originals.redb`): revisits need no scan of the archives when
/// the writer opens (a resume, or a refused acknowledgement in the shared
/// mode), and memory holds only the originals written since the last sync.
///
/// Crash-consistent: an entry is committed only after its record is synced
/// to its file, and opening at a checkpoint first removes (durably) every
/// entry past it, before anything is written there again; so an entry never
/// names a record that is not in the archive. The reverse (a record without
/// an entry, e.g. a set from before the index, or a crash between the sync
/// and the commit) only means a later copy of it is archived in full.
#[derive(Debug, Clone)]
struct Index {
    db: std::sync::Arc<Database>,
    path: PathBuf,
}

impl Index {
    fn open(settings: &WarcSettings) -> Result<Index> {
        let path = settings
            .warc_dir
            .join(format!("{}-originals.redb", settings.warc_prefix));
        let db = match Database::create(&path) {
            Ok(db) => db,
            // In use: another writer of the same set.
            Err(e @ redb::DatabaseError::DatabaseAlreadyOpen) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("cannot open the revisit index {}", path.display())));
            }
            // Unreadable: an empty index is a correct one (copies of the
            // payloads it held are archived in full).
            Err(e) => {
                tracing::warn!(
                    "the revisit index {} is unreadable ({e}); starting it anew",
                    path.display()
                );
                std::fs::remove_file(&path).with_context(|| format!("cannot delete {}", path.display()))?;
                Database::create(&path)
                    .with_context(|| format!("cannot create the revisit index {}", path.display()))?
            }
        };
        Ok(Index {
            db: std::sync::Arc::new(db),
            path,
        })
    }

    fn context(&self) -> String {
        format!("the revisit index {}", self.path.display())
    }

    /// Removes every entry whose record ends past `at` (`at.serial` and
    /// later files when `at.offset` is 0: a file begun anew).
    fn cut(&self, at: WarcAt) -> Result<()> {
        let txn = self.db.begin_write().with_context(|| self.context())?;
        {
            let mut ends = txn.open_table(ENDS).with_context(|| self.context())?;
            let mut originals = txn.open_table(ORIGINALS).with_context(|| self.context())?;
            let start = (at.serial, at.offset.saturating_add(1));
            let mut gone = Vec::new();
            for e in ends.range(start..).with_context(|| self.context())? {
                let (k, v) = e.with_context(|| self.context())?;
                gone.push((k.value(), v.value().to_vec()));
            }
            for (end, digest) in &gone {
                ends.remove(end).with_context(|| self.context())?;
                originals
                    .remove(digest.as_slice())
                    .with_context(|| self.context())?;
            }
        }
        txn.commit().with_context(|| self.context())
    }

    fn get(&self, digest: &[u8; 20]) -> Result<Option<Original>> {
        let txn = self.db.begin_read().with_context(|| self.context())?;
        let table = match txn.open_table(ORIGINALS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(anyhow::Error::new(e).context(self.context())),
        };
        Ok(table
            .get(digest.as_slice())
            .with_context(|| self.context())?
            .map(|v| {
                let (_, _, uri, date, id) = v.value();
                Original {
                    uri: uri.to_string(),
                    date: date.to_string(),
                    id: id.to_string(),
                }
            }))
    }

    /// Commits `pending` (records synced to their files).
    fn add(&self, pending: &HashMap<[u8; 20], (WarcAt, Original)>) -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        let txn = self.db.begin_write().with_context(|| self.context())?;
        {
            let mut ends = txn.open_table(ENDS).with_context(|| self.context())?;
            let mut originals = txn.open_table(ORIGINALS).with_context(|| self.context())?;
            for (digest, (end, o)) in pending {
                if originals
                    .get(digest.as_slice())
                    .with_context(|| self.context())?
                    .is_some()
                {
                    continue;
                }
                originals
                    .insert(
                        digest.as_slice(),
                        (
                            end.serial,
                            end.offset,
                            o.uri.as_str(),
                            o.date.as_str(),
                            o.id.as_str(),
                        ),
                    )
                    .with_context(|| self.context())?;
                ends.insert((end.serial, end.offset), digest.as_slice())
                    .with_context(|| self.context())?;
            }
        }
        txn.commit().with_context(|| self.context())
    }
}

/// One WARC set being written (see the module documentation).
#[derive(Debug)]
pub struct WarcSink {
    settings: WarcSettings,
    /// The `warcinfo` fields after the standard ones: the crawl's settings.
    info: String,
    path: PathBuf,
    out: BufWriter<File>,
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
    /// committed to `index` by the next sync.
    pending: HashMap<[u8; 20], (WarcAt, Original)>,
    /// The CDXJ indexing of rotated files, off the writer thread.
    indexing: Vec<std::thread::JoinHandle<()>>,
    /// The current file is indexed ([`WarcSink::close`]): a record written
    /// after that removes its index first.
    closed: bool,
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
            if *s < at.serial && !super::cdxj::index_path(p).exists() {
                index_or_warn(p);
            }
        }
        // Before anything is written past `at` again.
        index.cut(at)?;
        let mut sink = WarcSink {
            settings: settings.clone(),
            info,
            out: BufWriter::new(open_at(&path, at.offset)?),
            path,
            at,
            synced: at.offset,
            began: at,
            first_record_end: 0,
            index,
            pending: HashMap::new(),
            indexing: Vec::new(),
            closed: false,
        };
        if at.offset == 0 {
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
    pub fn sync(&mut self) -> Result<WarcAt> {
        if self.at.offset != self.synced {
            self.flush()?;
            self.out
                .get_ref()
                .sync_data()
                .with_context(|| format!("cannot sync {}", self.path.display()))?;
            self.synced = self.at.offset;
            // Their records are in the archive for good now.
            self.index.add(&self.pending)?;
            self.pending.clear();
        }
        Ok(self.at)
    }

    /// Flushes to the OS; returns the position written so far.
    pub fn flush(&mut self) -> Result<WarcAt> {
        self.out
            .flush()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
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
        self.out
            .get_ref()
            .sync_data()
            .with_context(|| format!("cannot sync {}", self.path.display()))?;
        Ok(())
    }

    /// Syncs, and indexes the current file (CDXJ) now that nothing more is
    /// written to it; waits for the indexing of rotated files. An index
    /// that cannot be written is a warning: the archive is whole without it,
    /// and a resume writes it.
    pub fn close(&mut self) -> Result<WarcAt> {
        let at = self.sync()?;
        self.join_indexing();
        if !self.closed {
            index_or_warn(&self.path);
            self.closed = true;
        }
        Ok(at)
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
        let original = match self.pending.get(&p.payload_digest) {
            _ if p.empty => None,
            Some((_, o)) => Some(o.clone()),
            None => self.index.get(&p.payload_digest)?,
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
                rec.field("WARC-Payload-Digest", &sha1_label(&p.payload_digest));
                rec.field("Content-Type", "application/http; msgtype=response");
                let z = encode(rec, &[&p.http])?;
                self.write_member(&z)?;
            }
            None => {
                self.write_member(&p.response)?;
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
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let fields = format!(
            "software: simcrawl/{}\r\nformat: WARC File Format 1.1\r\nconformsTo: \
             http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n{}",
            env!("CARGO_PKG_VERSION"),
            self.info
        );
        let mut rec = Record::new("warcinfo", &record_id(), &warc_date(SystemTime::now()));
        rec.field("WARC-Filename", &name);
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
        let spawned = std::thread::Builder::new()
            .name("warc-cdxj".into())
            .spawn(move || index_or_warn(&finished));
        match spawned {
            Ok(h) => self.indexing.push(h),
            Err(e) => {
                tracing::warn!("cannot start the CDXJ indexing thread ({e}); indexing inline");
                index_or_warn(&self.path);
            }
        }
        let serial = self.at.serial + 1;
        let path = new_path(&self.settings, serial);
        self.out = BufWriter::new(open_at(&path, 0)?);
        sync_dir(&self.settings.warc_dir)?;
        self.path = path;
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
            super::cdxj::remove_index(&self.path)
                .with_context(|| format!("cannot delete the index of {}", self.path.display()))?;
            self.closed = false;
        }
        self.out
            .write_all(z)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        self.at.offset += z.len() as u64;
        Ok(())
    }
}

/// No indexing thread outlives its sink: a sink opened again in the same
/// process may cut the file that thread reads, and its index must not land
/// after that.
impl Drop for WarcSink {
    fn drop(&mut self) {
        self.join_indexing();
    }
}

/// A page's response made ready for the archive where the page is parsed
/// (digest and compression are the costly part, and the writer thread is
/// one): its request and response records, each a gzip member, and what a
/// revisit record needs if the writer finds its payload already archived.
#[derive(Debug)]
pub struct Prepared {
    uri: String,
    date: String,
    /// The response's record id (a revisit takes it over).
    id: String,
    ip: Option<String>,
    payload_digest: [u8; 20],
    empty: bool,
    /// The HTTP head, for a revisit record.
    http: Vec<u8>,
    request: Vec<u8>,
    response: Vec<u8>,
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
        })
    }
}

/// One record (its block the concatenation of `block`) as its own gzip
/// member, with its block digest and length. Level 1: the fastest, about a
/// third of the text's size for HTML, where the default level saves a few
/// per cent more for three times the CPU.
fn encode(mut rec: Record, block: &[&[u8]]) -> Result<Vec<u8>> {
    let len: usize = block.iter().map(|b| b.len()).sum();
    let mut digest = Sha1::new();
    for b in block {
        digest.update(b);
    }
    let digest: [u8; 20] = digest.finalize().into();
    rec.field("WARC-Block-Digest", &sha1_label(&digest));
    rec.field("Content-Length", &len.to_string());
    rec.head.extend_from_slice(b"\r\n");
    let mut gz = GzEncoder::new(Vec::with_capacity(len / 3 + 512), Compression::fast());
    gz.write_all(&rec.head)
        .and_then(|()| block.iter().try_for_each(|b| gz.write_all(b)))
        .and_then(|()| gz.write_all(b"\r\n\r\n"))
        .and_then(|()| gz.finish())
        .context("cannot compress a WARC record")
}

/// A WARC record's header block being built.
struct Record {
    head: Vec<u8>,
}

impl Record {
    fn new(kind: &'static str, id: &str, date: &str) -> Record {
        let mut r = Record {
            head: b"WARC/1.1\r\n".to_vec(),
        };
        r.field("WARC-Type", kind);
        r.field("WARC-Record-ID", id);
        r.field("WARC-Date", date);
        r
    }

    fn field(&mut self, name: &str, value: &str) {
        self.head.extend_from_slice(name.as_bytes());
        self.head.extend_from_slice(b": ");
        self.head.extend_from_slice(one_line(value).as_bytes());
        self.head.extend_from_slice(b"\r\n");
    }
}

/// A value on one line (a header value cannot hold CR or LF).
fn one_line(v: &str) -> std::borrow::Cow<'_, str> {
    if v.contains(['\r', '\n']) {
        v.replace(['\r', '\n'], " ").into()
    } else {
        v.into()
    }
}

/// The response's HTTP head as stored with its decoded payload: the
/// codings the client removed are renamed `X-Crawler-*`, and the
/// Content-Length is the stored payload's (as Common Crawl does).
fn http_head(head: &ResponseHead, payload_len: usize) -> Vec<u8> {
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

fn record_id() -> String {
    format!("<urn:uuid:{}>", uuid::Uuid::new_v4())
}

/// `sha1:` and the base32 digest, as Heritrix and wget write it.
fn sha1_label(d: &[u8; 20]) -> String {
    format!("sha1:{}", data_encoding::BASE32.encode(d))
}

/// A WARC-Date: UTC, to the second (what every replay tool reads).
fn warc_date(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// `PREFIX-YYYYmmddHHMMSS-SERIAL.warc.gz` in the archive's directory.
fn new_path(settings: &WarcSettings, serial: u64) -> PathBuf {
    let stamp: String = warc_date(SystemTime::now())
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    settings
        .warc_dir
        .join(format!("{}-{stamp}-{serial:05}.warc.gz", settings.warc_prefix))
}

/// The files of the set named `prefix` in `dir`, by serial.
fn set_files(dir: &Path, prefix: &str) -> Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot list {}", dir.display()))),
    };
    for e in entries {
        let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(serial) = serial_of(name, prefix) {
            out.push((serial, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// The serial of a file name of the set `prefix`, if it is one.
fn serial_of(name: &str, prefix: &str) -> Option<u64> {
    serial_with(name, prefix, ".warc.gz")
}

/// The serial of a file name of the set `prefix` ending with `suffix`.
fn serial_with(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    let rest = name
        .strip_prefix(prefix)?
        .strip_prefix('-')?
        .strip_suffix(suffix)?;
    let (stamp, serial) = rest.split_once('-')?;
    if stamp.len() != 14 || !stamp.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if serial.is_empty() || !serial.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    serial.parse().ok()
}

/// Indexes the finished WARC file `path` (CDXJ, beside it); a failure is a
/// warning (the archive is whole without its index).
fn index_or_warn(path: &Path) {
    match super::cdxj::write_index(path) {
        Ok(p) => tracing::debug!(index = %p.display(), "CDXJ index written"),
        Err(e) => tracing::warn!("no CDXJ index for {}: {e}", path.display()),
    }
}

/// Removes the CDXJ indexes (and leftover temporary ones) of the set
/// `prefix` in `dir` from serial `from` on: of files about to be cut,
/// written on or deleted, or already gone.
fn remove_indexes_from(dir: &Path, prefix: &str, from: u64) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot list {}", dir.display()))),
    };
    let mut removed = false;
    for e in entries {
        let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let serial = serial_with(name, prefix, ".cdxj").or_else(|| serial_with(name, prefix, ".cdxj.tmp"));
        if serial.is_some_and(|s| s >= from) {
            std::fs::remove_file(e.path())
                .with_context(|| format!("cannot delete {}", e.path().display()))?;
            removed = true;
        }
    }
    if removed {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Whether `dir` holds files of the set `prefix` (what a new crawl must
/// not mix its records with).
pub fn set_exists(dir: &Path, prefix: &str) -> Result<Vec<PathBuf>> {
    Ok(set_files(dir, prefix)?.into_iter().map(|(_, p)| p).collect())
}

/// Cuts the set `prefix` in `dir` of a worker that is gone back to `at`
/// (its last acknowledged position; `None`: it acknowledged no record, and
/// its files are deleted); returns the bytes cut. Its files are final then
/// (until it restarts under its id): those without a CDXJ index get one.
pub fn cut_gone(dir: &Path, prefix: &str, at: Option<WarcAt>) -> Result<u64> {
    let mut cut = 0;
    let files = set_files(dir, prefix)?;
    // The indexes of the files cut or deleted go first.
    let cut_from = match at {
        Some(at) => {
            let cut_back = files
                .iter()
                .any(|(s, p)| *s == at.serial && std::fs::metadata(p).map_or(true, |m| m.len() > at.offset));
            if cut_back { at.serial } else { at.serial + 1 }
        }
        None => 0,
    };
    remove_indexes_from(dir, prefix, cut_from)?;
    for (serial, path) in files {
        let len = std::fs::metadata(&path)
            .with_context(|| format!("cannot read the size of {}", path.display()))?
            .len();
        match at {
            Some(at) if serial < at.serial => {}
            Some(at) if serial == at.serial => {
                if len > at.offset {
                    let f = OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .with_context(|| format!("cannot open {}", path.display()))?;
                    f.set_len(at.offset)
                        .and_then(|()| f.sync_data())
                        .with_context(|| format!("cannot truncate {}", path.display()))?;
                    cut += len - at.offset;
                }
            }
            _ => {
                std::fs::remove_file(&path).with_context(|| format!("cannot delete {}", path.display()))?;
                cut += len;
            }
        }
    }
    for (_, path) in set_files(dir, prefix)? {
        if !super::cdxj::index_path(&path).exists() {
            index_or_warn(&path);
        }
    }
    Ok(cut)
}

fn open_at(path: &Path, offset: u64) -> Result<File> {
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open WARC file {}", path.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len < offset {
        bail!(
            "WARC file {} is shorter ({len} bytes) than its last checkpoint ({offset} bytes): it was \
             changed outside the crawl; use --fresh to start over",
            path.display()
        );
    }
    file.set_len(offset)
        .with_context(|| format!("cannot truncate {}", path.display()))?;
    file.seek(SeekFrom::Start(offset))?;
    Ok(file)
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync directory {}", dir.display()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::io::{BufRead, Read};

    use super::*;

    /// What the tests read of a record's header block.
    #[derive(Debug, Default)]
    struct RecordHead {
        kind: String,
        uri: Option<String>,
        date: Option<String>,
        id: Option<String>,
        payload_digest: Option<[u8; 20]>,
    }

    /// Reads the next record's header block and skips its block; `None` at
    /// the end of the stream.
    fn read_record_head(r: &mut impl BufRead) -> Result<Option<RecordHead>> {
        let mut line = String::new();
        // Blank lines between records.
        loop {
            line.clear();
            if r.read_line(&mut line)? == 0 {
                return Ok(None);
            }
            if !line.trim().is_empty() {
                break;
            }
        }
        if !line.starts_with("WARC/") {
            bail!(
                "a record does not begin with a WARC version line: {:?}",
                line.trim_end()
            );
        }
        let mut h = RecordHead::default();
        let mut len: Option<u64> = None;
        loop {
            line.clear();
            if r.read_line(&mut line)? == 0 {
                bail!("the stream ends inside a record's header block");
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let Some((k, v)) = l.split_once(':') else { continue };
            let v = v.trim();
            match k.to_ascii_lowercase().as_str() {
                "warc-type" => h.kind = v.to_string(),
                "warc-target-uri" => h.uri = Some(v.to_string()),
                "warc-date" => h.date = Some(v.to_string()),
                "warc-record-id" => h.id = Some(v.to_string()),
                "content-length" => len = v.parse().ok(),
                "warc-payload-digest" => {
                    h.payload_digest = v
                        .strip_prefix("sha1:")
                        .and_then(|b| data_encoding::BASE32.decode(b.as_bytes()).ok())
                        .and_then(|b| b.try_into().ok());
                }
                _ => {}
            }
        }
        let Some(len) = len else {
            bail!("a record has no Content-Length");
        };
        let skipped = std::io::copy(&mut r.by_ref().take(len), &mut std::io::sink())?;
        if skipped < len {
            bail!("the stream ends inside a record's block");
        }
        Ok(Some(h))
    }

    fn settings(dir: &Path) -> WarcSettings {
        WarcSettings {
            warc_dir: dir.to_path_buf(),
            ..WarcSettings::default()
        }
    }

    fn head(url: &str, status: u16) -> ResponseHead {
        ResponseHead {
            url: url::Url::parse(url).unwrap(),
            date: SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000),
            remote_addr: Some("127.0.0.1:80".parse().unwrap()),
            request: b"GET / HTTP/1.1\r\nhost: e.org\r\n\r\n".to_vec(),
            version: "HTTP/1.1",
            status,
            headers: vec![
                ("content-type".into(), b"text/html".to_vec()),
                ("transfer-encoding".into(), b"chunked".to_vec()),
            ],
        }
    }

    fn prep(url: &str, body: &[u8]) -> Prepared {
        Prepared::new(&head(url, 200), body, false).unwrap()
    }

    /// Every record of the set, in order: (type, target URI, the header
    /// block as text).
    fn records(dir: &Path) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        for (_, p) in set_files(dir, "simcrawl").unwrap() {
            let mut all = Vec::new();
            flate2::read::MultiGzDecoder::new(File::open(&p).unwrap())
                .read_to_end(&mut all)
                .unwrap();
            let mut r = &all[..];
            while let Some(h) = read_record_head(&mut r).unwrap() {
                out.push((h.kind, h.uri.unwrap_or_default(), h.date.unwrap_or_default()));
            }
        }
        out
    }

    #[test]
    fn the_http_head_names_the_decoded_payload() {
        let h = String::from_utf8(http_head(&head("http://e.org/", 200), 42)).unwrap();
        assert_eq!(
            h,
            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nX-Crawler-transfer-encoding: chunked\r\n\
             Content-Length: 42\r\n\r\n"
        );
    }

    #[test]
    fn file_names_carry_the_serial_and_nothing_else_matches() {
        assert_eq!(
            serial_of("simcrawl-20261125014000-00007.warc.gz", "simcrawl"),
            Some(7)
        );
        assert_eq!(serial_of("simcrawl-2026-00007.warc.gz", "simcrawl"), None);
        assert_eq!(serial_of("other-20261125014000-00007.warc.gz", "simcrawl"), None);
        assert_eq!(serial_of("simcrawl-20261125014000-00007.warc", "simcrawl"), None);
    }

    #[test]
    fn a_repeated_payload_is_a_revisit_of_its_first_response_across_a_resume() {
        let dir = tempfile::tempdir().unwrap();
        let s = settings(dir.path());
        let mut w = WarcSink::open(&s, String::new(), None).unwrap();
        w.page(&prep("http://e.org/a", b"<p>same</p>"), None).unwrap();
        let at = w.sync().unwrap();
        drop(w);
        let mut w = WarcSink::open(&s, String::new(), Some(at)).unwrap();
        w.page(
            &prep("http://e.org/b", b"<p>same</p>"),
            Some(CopyNote {
                tier: "content",
                of: "http://e.org/a",
                similarity: Some(1.0),
                basis: Some("main"),
            }),
        )
        .unwrap();
        w.sync().unwrap();
        let kinds: Vec<(String, String)> = records(dir.path()).into_iter().map(|(k, u, _)| (k, u)).collect();
        let want = [
            ("warcinfo", ""),
            ("request", "http://e.org/a"),
            ("response", "http://e.org/a"),
            ("request", "http://e.org/b"),
            ("revisit", "http://e.org/b"),
            ("metadata", "http://e.org/b"),
        ];
        assert_eq!(
            kinds,
            want.iter()
                .map(|(k, u)| (k.to_string(), u.to_string()))
                .collect::<Vec<_>>()
        );
    }

    /// The records of the files from `serial` on are `want`: (type,
    /// target URI, WARC-Refers-To-Target-URI).
    fn assert_revisits(dir: &Path, serial: u64, want: &[(&str, &str, &str)]) {
        let want: Vec<(String, String, String)> = want
            .iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect();
        assert_eq!(revisits_from(dir, serial), want);
    }

    /// The revisit fields of the records of the files from `serial` on:
    /// (type, target URI, WARC-Refers-To-Target-URI).
    fn revisits_from(dir: &Path, serial: u64) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        for (_, p) in set_files(dir, "simcrawl")
            .unwrap()
            .into_iter()
            .filter(|(s, _)| *s >= serial)
        {
            let mut all = Vec::new();
            flate2::read::MultiGzDecoder::new(File::open(&p).unwrap())
                .read_to_end(&mut all)
                .unwrap();
            let text = String::from_utf8_lossy(&all).into_owned();
            for rec in text.split("WARC/1.1\r\n").skip(1) {
                let field = |k: &str| {
                    rec.lines()
                        .find_map(|l| l.strip_prefix(&format!("{k}: ")))
                        .unwrap_or_default()
                        .to_string()
                };
                if ["response", "revisit"].contains(&field("WARC-Type").as_str()) {
                    out.push((
                        field("WARC-Type"),
                        field("WARC-Target-URI"),
                        field("WARC-Refers-To-Target-URI"),
                    ));
                }
            }
        }
        out
    }

    /// Opening the writer reads no archive file: with its first file
    /// unreadable (overwritten outside the crawl), a resumed writer opens
    /// and still writes a copy of a payload first archived there as a
    /// revisit of it.
    #[test]
    fn opening_reads_no_archive_and_revisits_still_find_their_originals() {
        let dir = tempfile::tempdir().unwrap();
        let s = WarcSettings {
            warc_max_bytes: 1,
            ..settings(dir.path())
        };
        let mut w = WarcSink::open(&s, String::new(), None).unwrap();
        w.page(&prep("http://e.org/a", b"<p>first</p>"), None).unwrap();
        // The limit is 1 byte: the next page begins file 1.
        w.page(&prep("http://e.org/b", b"<p>second</p>"), None).unwrap();
        let at = w.sync().unwrap();
        assert_eq!(at.serial, 1);
        drop(w);
        let first = set_files(dir.path(), "simcrawl").unwrap()[0].1.clone();
        let len = std::fs::metadata(&first).unwrap().len();
        std::fs::write(&first, vec![b'x'; usize::try_from(len).unwrap()]).unwrap();

        let mut w = WarcSink::open(&s, String::new(), Some(at)).unwrap();
        w.page(&prep("http://e.org/c", b"<p>first</p>"), None).unwrap();
        w.page(&prep("http://e.org/d", b"<p>second</p>"), None).unwrap();
        w.sync().unwrap();
        assert_revisits(
            dir.path(),
            1,
            &[
                ("response", "http://e.org/b", ""),
                ("revisit", "http://e.org/c", "http://e.org/a"),
                ("revisit", "http://e.org/d", "http://e.org/b"),
            ],
        );
    }

    /// An unreadable index is started anew (empty: correct, only fewer
    /// revisits), not a reason to stop the crawl.
    #[test]
    fn an_unreadable_index_is_started_anew() {
        let dir = tempfile::tempdir().unwrap();
        let s = settings(dir.path());
        let mut w = WarcSink::open(&s, String::new(), None).unwrap();
        w.page(&prep("http://e.org/a", b"<p>a</p>"), None).unwrap();
        let at = w.sync().unwrap();
        drop(w);
        std::fs::write(dir.path().join("simcrawl-originals.redb"), b"not a database").unwrap();
        let mut w = WarcSink::open(&s, String::new(), Some(at)).unwrap();
        w.page(&prep("http://e.org/b", b"<p>a</p>"), None).unwrap();
        w.page(&prep("http://e.org/c", b"<p>a</p>"), None).unwrap();
        w.sync().unwrap();
        let kinds: Vec<String> = revisits_from(dir.path(), 0).into_iter().map(|r| r.0).collect();
        assert_eq!(kinds, ["response", "response", "revisit"]);
    }

    /// The index never names a record the archive does not hold for good:
    /// a record written after the checkpoint a resume (or a refused
    /// acknowledgement, `cut_to`) goes back to is no original, whether it
    /// was synced or not; its payload is archived in full again.
    #[test]
    fn records_cut_by_a_resume_are_no_originals() {
        let dir = tempfile::tempdir().unwrap();
        let s = settings(dir.path());
        let mut w = WarcSink::open(&s, String::new(), None).unwrap();
        w.page(&prep("http://e.org/a", b"<p>a</p>"), None).unwrap();
        let at = w.sync().unwrap();
        w.page(&prep("http://e.org/b", b"<p>b</p>"), None).unwrap();
        w.sync().unwrap();
        w.page(&prep("http://e.org/c", b"<p>c</p>"), None).unwrap();
        w.flush().unwrap();
        // In the same process (shared mode, a refused acknowledgement).
        w.cut_to(Some(at)).unwrap();
        w.page(&prep("http://e.org/b2", b"<p>b</p>"), None).unwrap();
        let at2 = w.sync().unwrap();
        w.page(&prep("http://e.org/c2", b"<p>c</p>"), None).unwrap();
        w.sync().unwrap();
        drop(w);
        // After a kill: back to the checkpoint before c2.
        let mut w = WarcSink::open(&s, String::new(), Some(at2)).unwrap();
        w.page(&prep("http://e.org/a3", b"<p>a</p>"), None).unwrap();
        w.page(&prep("http://e.org/b3", b"<p>b</p>"), None).unwrap();
        w.page(&prep("http://e.org/c3", b"<p>c</p>"), None).unwrap();
        w.sync().unwrap();
        assert_revisits(
            dir.path(),
            0,
            &[
                ("response", "http://e.org/a", ""),
                ("response", "http://e.org/b2", ""),
                ("revisit", "http://e.org/a3", "http://e.org/a"),
                ("revisit", "http://e.org/b3", "http://e.org/b2"),
                ("response", "http://e.org/c3", ""),
            ],
        );
    }

    #[test]
    fn a_resume_cuts_torn_records_and_files_begun_after_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let s = WarcSettings {
            warc_max_bytes: 1,
            ..settings(dir.path())
        };
        let mut w = WarcSink::open(&s, String::new(), None).unwrap();
        w.page(&prep("http://e.org/a", b"a"), None).unwrap();
        let at = w.sync().unwrap();
        // Two more pages: each begins a new file (the limit is 1 byte).
        w.page(&prep("http://e.org/b", b"b"), None).unwrap();
        w.page(&prep("http://e.org/c", b"c"), None).unwrap();
        w.flush().unwrap();
        assert_eq!(set_files(dir.path(), "simcrawl").unwrap().len(), 3);
        drop(w);
        // A torn write at the end of the checkpoint's file.
        let first = set_files(dir.path(), "simcrawl").unwrap()[0].1.clone();
        OpenOptions::new()
            .append(true)
            .open(&first)
            .unwrap()
            .write_all(&[0x1f, 0x8b, 8])
            .unwrap();
        let mut w = WarcSink::open(&s, String::new(), Some(at)).unwrap();
        assert_eq!(w.position(), at);
        w.page(&prep("http://e.org/d", b"d"), None).unwrap();
        w.sync().unwrap();
        let uris: Vec<String> = records(dir.path())
            .into_iter()
            .filter(|(k, _, _)| k == "response")
            .map(|(_, u, _)| u)
            .collect();
        assert_eq!(uris, ["http://e.org/a", "http://e.org/d"]);
        // A checkpoint past what is there is refused, naming the file.
        drop(w);
        let e = WarcSink::open(
            &s,
            String::new(),
            Some(WarcAt {
                serial: 0,
                offset: 1 << 40,
            }),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("shorter") && e.contains(".warc.gz"), "{e}");
        let e = WarcSink::open(&s, String::new(), Some(WarcAt { serial: 9, offset: 0 }))
            .unwrap_err()
            .to_string();
        assert!(e.contains("serial 9") && e.contains("missing"), "{e}");
    }

    /// The URLs a file's CDXJ index names, in its order; `None` when the
    /// file has no index. Every index equals a fresh reading of its file.
    fn indexed(dir: &Path, serial: u64) -> Option<Vec<String>> {
        let files = set_files(dir, "simcrawl").unwrap();
        let path = files.iter().find(|(s, _)| *s == serial).map(|(_, p)| p.clone());
        let index = match &path {
            Some(p) => super::super::cdxj::index_path(p),
            None => return None,
        };
        let text = std::fs::read_to_string(&index).ok()?;
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        assert_eq!(
            lines,
            super::super::cdxj::index_lines(path.as_deref().unwrap()).unwrap()
        );
        Some(
            lines
                .iter()
                .map(|l| {
                    let v: serde_json::Value =
                        serde_json::from_str(l.splitn(3, ' ').nth(2).unwrap()).unwrap();
                    v["url"].as_str().unwrap().to_string()
                })
                .collect(),
        )
    }

    /// A finished file (rotated, or the last one at the end of the run)
    /// has its CDXJ index; a resume removes the index of the file it
    /// writes on and of files it deletes, and indexes a finished file
    /// found without one; a record written after the end removes the
    /// index of its file.
    #[test]
    fn finished_files_have_their_index_and_a_resume_keeps_it_exact() {
        let dir = tempfile::tempdir().unwrap();
        let s = WarcSettings {
            warc_max_bytes: 1,
            ..settings(dir.path())
        };
        let mut w = WarcSink::open(&s, String::new(), None).unwrap();
        w.page(&prep("http://e.org/a", b"a"), None).unwrap();
        w.page(&prep("http://e.org/b", b"b"), None).unwrap();
        let at = w.sync().unwrap();
        assert_eq!(at.serial, 1);
        w.page(&prep("http://e.org/c", b"c"), None).unwrap();
        w.close().unwrap();
        let one = |u: &str| Some(vec![u.to_string()]);
        assert_eq!(indexed(dir.path(), 0), one("http://e.org/a"));
        assert_eq!(indexed(dir.path(), 1), one("http://e.org/b"));
        assert_eq!(indexed(dir.path(), 2), one("http://e.org/c"));
        drop(w);

        // A kill before file 0 was indexed; the resume goes back into file 1.
        let file0 = set_files(dir.path(), "simcrawl").unwrap()[0].1.clone();
        std::fs::remove_file(super::super::cdxj::index_path(&file0)).unwrap();
        let mut w = WarcSink::open(&s, String::new(), Some(at)).unwrap();
        assert_eq!(indexed(dir.path(), 0), one("http://e.org/a"), "rebuilt");
        assert_eq!(indexed(dir.path(), 1), None, "written on again");
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("-00002."))
            .collect();
        assert!(names.is_empty(), "file 2 and its index are gone: {names:?}");
        // The limit is 1 byte: d begins file 2 again, e is written after the end.
        w.page(&prep("http://e.org/d", b"d"), None).unwrap();
        w.close().unwrap();
        assert_eq!(indexed(dir.path(), 1), one("http://e.org/b"));
        assert_eq!(indexed(dir.path(), 2), one("http://e.org/d"));
        let s2 = WarcSettings {
            warc_max_bytes: 1 << 30,
            ..s.clone()
        };
        w.settings = s2;
        w.page(&prep("http://e.org/e", b"e"), None).unwrap();
        assert_eq!(indexed(dir.path(), 2), None, "written on after the end");
        w.close().unwrap();
        assert_eq!(
            indexed(dir.path(), 2),
            Some(vec!["http://e.org/d".to_string(), "http://e.org/e".to_string()])
        );
    }

    /// A gone worker's set cut back: the cut file's index describes what
    /// is left of it, a deleted file's index goes with it.
    #[test]
    fn cutting_a_gone_workers_set_reindexes_what_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let s = WarcSettings {
            warc_max_bytes: 1,
            ..settings(dir.path())
        };
        let mut w = WarcSink::open(&s, String::new(), None).unwrap();
        w.page(&prep("http://e.org/a", b"a"), None).unwrap();
        let at = w.sync().unwrap();
        w.settings.warc_max_bytes = 1 << 30;
        w.page(&prep("http://e.org/b", b"b"), None).unwrap();
        w.settings.warc_max_bytes = 1;
        w.page(&prep("http://e.org/c", b"c"), None).unwrap();
        w.close().unwrap();
        drop(w);
        assert_eq!(
            indexed(dir.path(), 0),
            Some(vec!["http://e.org/a".to_string(), "http://e.org/b".to_string()])
        );
        assert!(cut_gone(dir.path(), "simcrawl", Some(at)).unwrap() > 0);
        assert_eq!(indexed(dir.path(), 0), Some(vec!["http://e.org/a".to_string()]));
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("-00001."))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn metadata_only_keeps_no_response_of_a_near_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let s = WarcSettings {
            warc_near_duplicates: NearDuplicates::Metadata,
            ..settings(dir.path())
        };
        let mut w = WarcSink::open(&s, String::new(), None).unwrap();
        let note = |tier| CopyNote {
            tier,
            of: "http://e.org/a",
            similarity: Some(0.9),
            basis: None,
        };
        w.page(&prep("http://e.org/b", b"near"), Some(note("content")))
            .unwrap();
        // A URL-tier copy (a redirect to a known page) keeps its response.
        w.page(&prep("http://e.org/c", b"url copy"), Some(note("url")))
            .unwrap();
        w.sync().unwrap();
        let kinds: Vec<String> = records(dir.path()).into_iter().map(|r| r.0).collect();
        assert_eq!(kinds, ["warcinfo", "metadata", "request", "response", "metadata"]);
    }
}
