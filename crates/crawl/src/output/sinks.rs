//! JSON-lines outputs that survive a crash without a torn line.
//!
//! A sink only ever reports as committed the byte offset of its last
//! fsynced, complete line. The caller stores that offset in the same store
//! transaction as the state the lines describe; on resume the file is cut
//! back to the stored offset, so lines written after the last checkpoint
//! (possibly half a line) disappear together with the state they belonged
//! to, and are produced again.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use simcrawl_dedup::{Tier, Verdict};

use super::warc::{WarcAt, WarcSink};

/// Write buffer per output file: lines that come faster than the appender
/// writes them go out in few write calls.
const WRITE_BUFFER: usize = 256 << 10;

/// Pieces of lines waiting for a file's appender at most (a group's, or
/// [`HANDOVER_BYTES`]): past this a writer waits for it, so a disk slower
/// than the crawl slows the crawl instead of filling the memory (at most
/// ~4 MB a file waits).
const QUEUED_PIECES: usize = 64;

/// Bytes of lines a sink gathers before it hands them over on its own
/// (a commit hands over whatever it gathered, [`Sink::hand_over`]).
const HANDOVER_BYTES: usize = 64 << 10;

/// What a sink asks of its appender thread.
enum Job {
    /// Lines (newlines included) to append.
    Lines(Vec<u8>),
    /// Everything before this to the OS (`true`: and to the disk), then
    /// the answer.
    Flush(bool, std::sync::mpsc::SyncSender<std::io::Result<()>>),
    /// The file cut to this many bytes (everything before it written
    /// first), synced, then the answer.
    Cut(u64, std::sync::mpsc::SyncSender<std::io::Result<()>>),
}

/// One JSON-lines output file, appended to by a thread of its own.
///
/// Why a thread: the crawl's single writer thread wrote each group's
/// lines to the OS itself before it committed the group, and those
/// `write` calls were a tenth of its perf samples (a fifth with the writer
/// saturated; issue 37, target 1). Now it
/// gathers a group's lines and hands them over in one piece
/// ([`Sink::hand_over`]: one wake of the appender a group, where one a
/// line cost the writer a tenth of its CPU in futex calls); the appender
/// writes whatever it has as soon as no more is waiting, so a line is
/// visible to a reader of the file a moment after its group was handed
/// over, as it was after the group's flush. The offsets a sink reports
/// are those of the lines written to it ([`Sink::hand_over`]); only
/// [`Sink::sync`]'s, which waits for the disk, are safe to record for a
/// crash.
#[derive(Debug)]
pub struct Sink {
    path: PathBuf,
    /// Lines written and not handed over yet.
    gathered: Vec<u8>,
    jobs: Option<std::sync::mpsc::SyncSender<Job>>,
    appender: Option<std::thread::JoinHandle<()>>,
    /// Why the appender stopped, if it failed.
    failed: std::sync::Arc<std::sync::Mutex<Option<String>>>,
    offset: u64,
    /// Offset at the last fsync.
    synced: u64,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Lines(l) => write!(f, "Lines({} bytes)", l.len()),
            Job::Flush(sync, _) => write!(f, "Flush(sync: {sync})"),
            Job::Cut(at, _) => write!(f, "Cut({at})"),
        }
    }
}

/// The appender: writes the lines of `jobs` into `out` in order, and
/// whenever none is waiting hands what it has to the OS. Stops at the
/// first error, kept in `failed` for the sink to report.
fn append(
    out: BufWriter<File>,
    jobs: &std::sync::mpsc::Receiver<Job>,
    failed: &std::sync::Mutex<Option<String>>,
) {
    if let Err(e) = append_all(out, jobs) {
        *failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e.to_string());
    }
}

fn append_all(mut out: BufWriter<File>, jobs: &std::sync::mpsc::Receiver<Job>) -> std::io::Result<()> {
    use std::sync::mpsc::TryRecvError;
    loop {
        let job = match jobs.try_recv() {
            Ok(job) => job,
            Err(TryRecvError::Empty) => {
                out.flush()?;
                match jobs.recv() {
                    Ok(job) => job,
                    Err(_) => return Ok(()),
                }
            }
            Err(TryRecvError::Disconnected) => return out.flush(),
        };
        match job {
            Job::Lines(lines) => out.write_all(&lines)?,
            Job::Flush(sync, answer) => {
                let r = out
                    .flush()
                    .and_then(|()| if sync { out.get_ref().sync_data() } else { Ok(()) });
                answer_with(answer, r)?;
            }
            Job::Cut(at, answer) => {
                let r = out.flush().and_then(|()| {
                    let file = out.get_mut();
                    file.set_len(at)?;
                    file.seek(SeekFrom::Start(at))?;
                    file.sync_data()
                });
                answer_with(answer, r)?;
            }
        }
    }
}

/// Sends `r` to the sink that waits for it, and returns it (the error
/// also stops the appender).
fn answer_with(
    answer: std::sync::mpsc::SyncSender<std::io::Result<()>>,
    r: std::io::Result<()>,
) -> std::io::Result<()> {
    let stop = r
        .as_ref()
        .err()
        .map(|e| std::io::Error::new(e.kind(), e.to_string()));
    let _ = answer.send(r);
    match stop {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

impl Sink {
    /// Opens `path`, cut to `resume_at` bytes (0 starts it afresh).
    pub fn open(path: &Path, resume_at: u64) -> Result<Sink> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open output {}", path.display()))?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < resume_at {
            anyhow::bail!(
                "output {} is shorter ({len} bytes) than its last checkpoint ({resume_at} bytes): \
                 it was changed outside the crawl; use --fresh to start over",
                path.display()
            );
        }
        file.set_len(resume_at)
            .with_context(|| format!("cannot truncate {}", path.display()))?;
        file.seek(SeekFrom::Start(resume_at))?;
        let (jobs, rx) = std::sync::mpsc::sync_channel(QUEUED_PIECES);
        let out = BufWriter::with_capacity(WRITE_BUFFER, file);
        let failed = std::sync::Arc::new(std::sync::Mutex::new(None));
        let failed_there = failed.clone();
        let appender = std::thread::Builder::new()
            .name("crawl-output".into())
            .spawn(move || append(out, &rx, &failed_there))
            .with_context(|| format!("cannot start the thread that writes {}", path.display()))?;
        Ok(Sink {
            path: path.to_path_buf(),
            gathered: Vec::new(),
            jobs: Some(jobs),
            appender: Some(appender),
            failed,
            offset: resume_at,
            synced: resume_at,
        })
    }

    /// Hands `job` to the appender.
    fn send(&self, job: Job) -> Result<()> {
        let sent = self.jobs.as_ref().is_some_and(|j| j.send(job).is_ok());
        if sent {
            Ok(())
        } else {
            anyhow::bail!("cannot write {}: {}", self.path.display(), self.why_stopped())
        }
    }

    /// Why the appender stopped.
    fn why_stopped(&self) -> String {
        self.failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| "its writer thread stopped".into())
    }

    /// Hands the lines gathered to the appender, which writes them to the
    /// file without being waited for; returns the offset after them.
    pub fn hand_over(&mut self) -> Result<u64> {
        if !self.gathered.is_empty() {
            // The next piece starts the size of this one (a quarter more,
            // at most twice the handover size): grown from nothing, it was
            // reallocated and copied a dozen times on the writer thread
            // (5% of its CPU in `crawl bench` with the writer saturated).
            let room = (self.gathered.len() + self.gathered.len() / 4).min(2 * HANDOVER_BYTES);
            let lines = std::mem::replace(&mut self.gathered, Vec::with_capacity(room));
            self.send(Job::Lines(lines))?;
        }
        Ok(self.offset)
    }

    /// Hands the lines gathered, then `job` (made with the answer's
    /// sender), to the appender and waits for its answer.
    fn ask(
        &mut self,
        job: impl FnOnce(std::sync::mpsc::SyncSender<std::io::Result<()>>) -> Job,
    ) -> Result<()> {
        self.hand_over()?;
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        self.send(job(answer))?;
        match answered.recv() {
            Ok(r) => Ok(r?),
            Err(_) => anyhow::bail!("{}", self.why_stopped()),
        }
    }

    /// Appends one JSON line.
    pub fn write<T: Serialize>(&mut self, value: &T) -> Result<()> {
        let before = self.gathered.len();
        if let Err(e) = serde_json::to_writer(&mut self.gathered, value) {
            self.gathered.truncate(before);
            return Err(e.into());
        }
        self.gathered.push(b'\n');
        self.offset += (self.gathered.len() - before) as u64;
        if self.gathered.len() >= HANDOVER_BYTES {
            self.hand_over()?;
        }
        Ok(())
    }

    /// The offset after the last line written: in the file a moment after
    /// it is handed over ([`Sink::hand_over`], which returns it), on the
    /// disk only after a [`Sink::sync`].
    #[cfg(test)]
    fn offset(&self) -> u64 {
        self.offset
    }

    /// Flushes and fsyncs; returns the offset that is now safe to record.
    pub fn sync(&mut self) -> Result<u64> {
        if self.offset == self.synced {
            return Ok(self.offset);
        }
        self.ask(|a| Job::Flush(true, a))
            .with_context(|| format!("cannot sync {}", self.path.display()))?;
        self.synced = self.offset;
        Ok(self.offset)
    }

    /// Drops everything after `offset` (a checkpoint at or before the
    /// last sync): the lines written since are taken back.
    pub fn cut_to(&mut self, offset: u64) -> Result<()> {
        if offset > self.synced {
            anyhow::bail!(
                "cannot cut {} to {offset} bytes: only {} are synced",
                self.path.display(),
                self.synced
            );
        }
        self.ask(|a| Job::Cut(offset, a))
            .with_context(|| format!("cannot truncate {}", self.path.display()))?;
        self.offset = offset;
        self.synced = offset;
        Ok(())
    }

    /// Waits until every line handed over is in the file (not fsynced);
    /// returns the offset written so far.
    pub fn flush(&mut self) -> Result<u64> {
        self.ask(|a| Job::Flush(false, a))
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(self.offset)
    }
}

impl Drop for Sink {
    /// The lines written are in the file before it closes.
    fn drop(&mut self) {
        if let Err(e) = self.hand_over() {
            tracing::warn!(error = %e, "lines lost at close");
        }
        self.jobs.take();
        if let Some(a) = self.appender.take()
            && a.join().is_err()
        {
            tracing::warn!(path = %self.path.display(), "the output's writer thread panicked");
        }
    }
}

/// Byte offsets of the outputs at a checkpoint, and the WARC archive's
/// position when the crawl archives. Stored as a JSON array `[kept,
/// duplicates, errors, changes]`, followed by `warc serial, warc offset`
/// when there is an archive; the forms of earlier versions (without
/// `changes`: 3 numbers, or 5 with the archive) still read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<u64>", into = "Vec<u64>")]
pub struct Offsets {
    pub kept: u64,
    pub duplicates: u64,
    pub errors: u64,
    /// changes.jsonl (revisits, `crate::revisit`).
    pub changes: u64,
    pub warc: Option<WarcAt>,
}

impl TryFrom<Vec<u64>> for Offsets {
    type Error = String;
    fn try_from(v: Vec<u64>) -> Result<Self, String> {
        let (kept, duplicates, errors, changes, warc) = match v[..] {
            [k, d, e] => (k, d, e, 0, None),
            [k, d, e, c] => (k, d, e, c, None),
            [k, d, e, serial, offset] => (k, d, e, 0, Some(WarcAt { serial, offset })),
            [k, d, e, c, serial, offset] => (k, d, e, c, Some(WarcAt { serial, offset })),
            _ => {
                return Err(format!(
                    "output offsets hold {} numbers: 4 (kept, duplicates, errors, changes) or 6 (and the \
                     WARC file's serial and offset) expected",
                    v.len()
                ));
            }
        };
        Ok(Offsets {
            kept,
            duplicates,
            errors,
            changes,
            warc,
        })
    }
}

impl From<Offsets> for Vec<u64> {
    fn from(o: Offsets) -> Self {
        let mut v = vec![o.kept, o.duplicates, o.errors, o.changes];
        if let Some(w) = o.warc {
            v.extend([w.serial, w.offset]);
        }
        v
    }
}

/// The outputs of the daemon and the batch tool, by name rather than by
/// index: kept pages, dropped copies, and failures or bad lines; and the
/// crawl's WARC archive when it keeps one.
#[derive(Debug)]
pub struct Outputs {
    pub kept: Sink,
    pub duplicates: Sink,
    pub errors: Sink,
    /// What each revisit found (`crate::revisit`).
    pub changes: Sink,
    pub warc: Option<WarcSink>,
}

impl Outputs {
    /// The file names, in [`Offsets`] order.
    pub const FILES: [&'static str; 4] = ["kept.jsonl", "duplicates.jsonl", "errors.jsonl", "changes.jsonl"];

    /// Opens the three files in `dir`, each cut back to its checkpoint.
    pub fn open(dir: &Path, at: Offsets) -> Result<Outputs> {
        let [kept, duplicates, errors, changes] = Self::FILES;
        Ok(Outputs {
            kept: Sink::open(&dir.join(kept), at.kept)?,
            duplicates: Sink::open(&dir.join(duplicates), at.duplicates)?,
            errors: Sink::open(&dir.join(errors), at.errors)?,
            changes: Sink::open(&dir.join(changes), at.changes)?,
            warc: None,
        })
    }

    /// The outputs also write the WARC archive `warc`.
    pub fn with_warc(mut self, warc: Option<WarcSink>) -> Outputs {
        self.warc = warc;
        self
    }

    /// Fsyncs all; returns the offsets now safe to record.
    pub fn sync(&mut self) -> Result<Offsets> {
        self.offsets_by(Sink::sync, WarcSink::sync)
    }

    /// The offsets `sink` gives for each file (and `warc` for the WARC
    /// archive), in [`Offsets`] order.
    fn offsets_by(
        &mut self,
        sink: fn(&mut Sink) -> Result<u64>,
        warc: fn(&mut WarcSink) -> Result<WarcAt>,
    ) -> Result<Offsets> {
        Ok(Offsets {
            kept: sink(&mut self.kept)?,
            duplicates: sink(&mut self.duplicates)?,
            errors: sink(&mut self.errors)?,
            changes: sink(&mut self.changes)?,
            warc: self.warc.as_mut().map(warc).transpose()?,
        })
    }

    /// Fsyncs all at the end of a run, and indexes the WARC archive's
    /// last file (CDXJ): nothing more is written to it unless a later run
    /// resumes, which removes that index first.
    pub fn close(&mut self) -> Result<Offsets> {
        let mut at = self.sync()?;
        at.warc = self.warc.as_mut().map(WarcSink::close).transpose()?;
        Ok(at)
    }

    /// Cuts all back to a checkpoint (see [`Sink::cut_to`]).
    pub fn cut_to(&mut self, at: Offsets) -> Result<()> {
        self.kept.cut_to(at.kept)?;
        self.duplicates.cut_to(at.duplicates)?;
        self.errors.cut_to(at.errors)?;
        self.changes.cut_to(at.changes)?;
        if let Some(w) = self.warc.as_mut() {
            w.cut_to(at.warc)?;
        }
        Ok(())
    }

    /// The lines written so far handed to the appenders, and their offsets,
    /// without waiting for them to be written (the WARC archive's flushed):
    /// what a commit that is not durable records, as a crash rolls it back
    /// to a durable one, whose offsets [`Outputs::sync`] gave.
    pub fn handed_over(&mut self) -> Result<Offsets> {
        self.offsets_by(Sink::hand_over, WarcSink::flush)
    }

    /// Flushes all to the OS; returns the offsets written so far.
    pub fn flush(&mut self) -> Result<Offsets> {
        self.offsets_by(Sink::flush, WarcSink::flush)
    }
}

/// Cuts the outputs in `dir` of a worker that is gone back to `at`, its
/// last acknowledged offsets (the lines after them are of pages another
/// worker took back and wrote); returns the bytes cut. A file shorter than
/// its offset was changed outside the crawl: left as it is, and named.
pub fn cut_gone_outputs(dir: &Path, at: Offsets) -> Result<(u64, Vec<PathBuf>)> {
    let mut cut = 0;
    let mut short = Vec::new();
    for (name, offset) in Outputs::FILES
        .iter()
        .zip([at.kept, at.duplicates, at.errors, at.changes])
    {
        let path = dir.join(name);
        let file = match OpenOptions::new().write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if offset > 0 {
                    short.push(path);
                }
                continue;
            }
            Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot open {}", path.display()))),
        };
        let len = file
            .metadata()
            .with_context(|| format!("cannot read the size of {}", path.display()))?
            .len();
        if len < offset {
            short.push(path);
        } else if len > offset {
            file.set_len(offset)
                .and_then(|()| file.sync_data())
                .with_context(|| format!("cannot truncate {}", path.display()))?;
            cut += len - offset;
        }
    }
    Ok((cut, short))
}

/// Output bytes in `dir` (the three files), for a worker that must not
/// truncate what it did not write.
pub fn output_bytes(dir: &Path) -> u64 {
    Outputs::FILES
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

/// Verdict counters shared by the daemon's stats and the batch tool's
/// progress: one place decides which counter a verdict adds to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct VerdictCounts {
    pub kept: u64,
    /// URL-tier hits: links and redirect targets already seen, or (batch)
    /// documents whose URL was seen.
    pub dup_url: u64,
    pub dup_title: u64,
    pub dup_content: u64,
}

impl VerdictCounts {
    /// Counts one verdict.
    pub fn record(&mut self, v: &Verdict) {
        match v {
            Verdict::Unique { .. } => self.kept += 1,
            Verdict::Duplicate(d) => self.record_duplicate(d.tier),
            _ => {} // non_exhaustive in simcrawl-dedup
        }
    }

    /// Counts one duplicate found by `tier`.
    pub fn record_duplicate(&mut self, tier: Tier) {
        match tier {
            Tier::Url => self.dup_url += 1,
            Tier::Title => self.dup_title += 1,
            Tier::Content => self.dup_content += 1,
            _ => {} // non_exhaustive in simcrawl-dedup
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn offsets_keep_the_checkpoint_form() {
        let o = Offsets {
            kept: 1,
            duplicates: 2,
            errors: 3,
            changes: 0,
            warc: None,
        };
        // Earlier versions' forms read.
        assert_eq!(serde_json::from_str::<Offsets>("[1,2,3]").unwrap(), o);
        let w = Offsets {
            warc: Some(WarcAt { serial: 4, offset: 5 }),
            ..o
        };
        assert_eq!(serde_json::from_str::<Offsets>("[1,2,3,4,5]").unwrap(), w);
        let c = Offsets { changes: 9, ..w };
        assert_eq!(serde_json::to_string(&c).unwrap(), "[1,2,3,9,4,5]");
        assert_eq!(serde_json::from_str::<Offsets>("[1,2,3,9,4,5]").unwrap(), c);
        let n = Offsets { warc: None, ..c };
        assert_eq!(serde_json::to_string(&n).unwrap(), "[1,2,3,9]");
        assert_eq!(serde_json::from_str::<Offsets>("[1,2,3,9]").unwrap(), n);
        let e = serde_json::from_str::<Offsets>("[1,2]").unwrap_err().to_string();
        assert!(e.contains("hold 2 numbers"), "{e}");
    }

    #[test]
    fn cut_to_takes_back_synced_lines_after_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("kept.jsonl");
        let mut s = Sink::open(&p, 0).unwrap();
        s.write(&serde_json::json!({"a": 1})).unwrap();
        let checkpoint = s.sync().unwrap();
        s.write(&serde_json::json!({"a": 2})).unwrap();
        s.write(&serde_json::json!({"a": 3})).unwrap();
        let later = s.sync().unwrap();
        assert!(later > checkpoint);
        s.cut_to(checkpoint).unwrap();
        s.write(&serde_json::json!({"a": 4})).unwrap();
        assert_eq!(s.sync().unwrap(), checkpoint * 2);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\":1}\n{\"a\":4}\n");
        // Past what is synced is refused, and names the file.
        s.write(&serde_json::json!({"a": 5})).unwrap();
        let err = s.cut_to(checkpoint * 3).unwrap_err().to_string();
        assert!(err.contains("kept.jsonl") && err.contains("synced"), "{err}");
    }

    /// A line handed over reaches the file without a flush or a sync (a
    /// consumer tailing the output sees it), its offset counted when it is
    /// written; dropping the sink writes what is still gathered or queued.
    #[test]
    fn lines_reach_the_file_without_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("kept.jsonl");
        let mut s = Sink::open(&p, 0).unwrap();
        s.write(&serde_json::json!({"a": 1})).unwrap();
        assert_eq!(s.offset(), 8);
        s.hand_over().unwrap();
        let waited = std::time::Instant::now();
        while std::fs::read_to_string(&p).unwrap() != "{\"a\":1}\n" {
            assert!(
                waited.elapsed() < std::time::Duration::from_secs(10),
                "the line never came"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        for n in 0..10_000 {
            s.write(&serde_json::json!({"n": n})).unwrap();
        }
        let at = s.offset();
        drop(s);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.len() as u64, at);
        assert!(text.ends_with("{\"n\":9999}\n"));
    }

    #[test]
    fn resume_cuts_uncommitted_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("o/kept.jsonl");
        let mut s = Sink::open(&p, 0).unwrap();
        s.write(&serde_json::json!({"a": 1})).unwrap();
        let committed = s.sync().unwrap();
        s.write(&serde_json::json!({"a": 2})).unwrap();
        s.flush().unwrap();
        drop(s);
        // Simulate a torn write after the checkpoint.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"{\"a\":")
            .unwrap();
        let mut s = Sink::open(&p, committed).unwrap();
        s.write(&serde_json::json!({"a": 3})).unwrap();
        s.sync().unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\":1}\n{\"a\":3}\n");
        // A file shorter than its checkpoint was tampered with.
        std::fs::write(&p, "").unwrap();
        let e = Sink::open(&p, committed).unwrap_err().to_string();
        assert!(e.contains("shorter"), "{e}");
    }
}
