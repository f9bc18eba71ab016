//! A file appended to by a thread of its own, whose offsets the caller
//! counts as it writes, so that it never waits for the disk but to make a
//! checkpoint durable: the JSON-lines outputs ([`crate::output::sinks`])
//! and the WARC archive's files ([`crate::output::warc`]) are written so.
//!
//! A sink only ever reports as committed the byte offset of its last
//! fsynced, complete write ([`Sink::sync`]). The caller stores that offset
//! in the same store transaction as the state the bytes describe; on
//! resume the file is cut back to the stored offset, so what was written
//! after the last checkpoint (possibly half a line or record) disappears
//! together with the state it belonged to, and is produced again.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

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
    /// Everything before this to the disk, the answer, then the work that
    /// needs those bytes on the disk first ([`Sink::sync_then`]): the
    /// caller waits for the disk, not for the work.
    SyncThen(std::sync::mpsc::SyncSender<std::io::Result<()>>, AfterSync),
}

/// Work an appender runs once the bytes before it are on the disk; its
/// error stops the appender like a failed write.
pub(crate) type AfterSync = Box<dyn FnOnce() -> std::io::Result<()> + Send>;

/// One output file (JSON lines, or a WARC file's records), appended to by
/// a thread of its own.
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
    /// Bytes gathered before they are handed over without a commit.
    handover_bytes: usize,
}

/// A sync a sink asked its appender for and has not waited for yet
/// ([`Sink::start_sync`]).
#[derive(Debug)]
pub(crate) struct SyncAsked {
    answered: std::sync::mpsc::Receiver<std::io::Result<()>>,
    /// The offset it makes safe to record.
    offset: u64,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Job::Lines(l) => write!(f, "Lines({} bytes)", l.len()),
            Job::Flush(sync, _) => write!(f, "Flush(sync: {sync})"),
            Job::Cut(at, _) => write!(f, "Cut({at})"),
            Job::SyncThen(..) => f.write_str("SyncThen"),
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
            Job::SyncThen(answer, then) => {
                let r = out.flush().and_then(|()| out.get_ref().sync_data());
                answer_with(answer, r)?;
                then()?;
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

/// Opens the `noun` (how errors name it) at `path`, created if missing,
/// cut to `offset` bytes (a checkpoint's) and positioned there; a file
/// shorter than that was changed outside the crawl and is refused.
pub(crate) fn open_cut_to(path: &Path, offset: u64, noun: &str) -> Result<File> {
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open {noun} {}", path.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len < offset {
        anyhow::bail!(
            "{noun} {} is shorter ({len} bytes) than its last checkpoint ({offset} bytes): it was \
             changed outside the crawl; use --fresh to start over",
            path.display()
        );
    }
    file.set_len(offset)
        .with_context(|| format!("cannot truncate {}", path.display()))?;
    file.seek(SeekFrom::Start(offset))?;
    Ok(file)
}

impl Sink {
    /// Opens `path`, cut to `resume_at` bytes (0 starts it afresh).
    pub fn open(path: &Path, resume_at: u64) -> Result<Sink> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let file = open_cut_to(path, resume_at, "output")?;
        Sink::on_file(path, file, resume_at, ("crawl-output", HANDOVER_BYTES))
    }

    /// A sink appending to `file` (the file at `path`, positioned at its
    /// end, `offset` bytes long) on a thread named `thread`, handing over
    /// what it gathered every `handover_bytes` between commits: the WARC
    /// archive's files are appended to so too ([`crate::output::warc`]).
    pub(crate) fn on_file(
        path: &Path,
        file: File,
        offset: u64,
        (thread, handover_bytes): (&str, usize),
    ) -> Result<Sink> {
        let (jobs, rx) = std::sync::mpsc::sync_channel(QUEUED_PIECES);
        let out = BufWriter::with_capacity(WRITE_BUFFER, file);
        let failed = std::sync::Arc::new(std::sync::Mutex::new(None));
        let failed_there = failed.clone();
        let appender = std::thread::Builder::new()
            .name(thread.into())
            .spawn(move || append(out, &rx, &failed_there))
            .with_context(|| format!("cannot start the thread that writes {}", path.display()))?;
        Ok(Sink {
            path: path.to_path_buf(),
            gathered: Vec::new(),
            jobs: Some(jobs),
            appender: Some(appender),
            failed,
            offset,
            synced: offset,
            handover_bytes,
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
            let room = (self.gathered.len() + self.gathered.len() / 4).min(2 * self.handover_bytes);
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
        let answered = self.ask_later(job)?;
        self.answer_to(&answered)
    }

    /// [`Sink::ask`] without waiting: the receiver of the answer, for
    /// [`Sink::answer_to`].
    fn ask_later(
        &mut self,
        job: impl FnOnce(std::sync::mpsc::SyncSender<std::io::Result<()>>) -> Job,
    ) -> Result<std::sync::mpsc::Receiver<std::io::Result<()>>> {
        self.hand_over()?;
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        self.send(job(answer))?;
        Ok(answered)
    }

    /// Waits for the answer to a job asked with [`Sink::ask_later`].
    fn answer_to(&self, answered: &std::sync::mpsc::Receiver<std::io::Result<()>>) -> Result<()> {
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
        self.hand_over_if_full()
    }

    /// Appends `bytes` as they are (a WARC record's gzip member).
    pub(crate) fn write_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        self.gathered.extend_from_slice(bytes);
        self.offset += bytes.len() as u64;
        self.hand_over_if_full()
    }

    /// Hands over what was gathered once it is [`Sink::handover_bytes`].
    fn hand_over_if_full(&mut self) -> Result<()> {
        if self.gathered.len() >= self.handover_bytes {
            self.hand_over()?;
        }
        Ok(())
    }

    /// The offset after the last line written: in the file a moment after
    /// it is handed over ([`Sink::hand_over`], which returns it), on the
    /// disk only after a [`Sink::sync`].
    #[cfg(test)]
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Flushes and fsyncs; returns the offset that is now safe to record.
    pub fn sync(&mut self) -> Result<u64> {
        let started = self.start_sync()?;
        self.finish_sync(started)
    }

    /// Asks the appender for a [`Sink::sync`] without waiting for it
    /// (`None`: nothing to sync), so that several files' fsyncs overlap;
    /// [`Sink::finish_sync`] waits and records it.
    pub(crate) fn start_sync(&mut self) -> Result<Option<SyncAsked>> {
        if self.offset == self.synced {
            return Ok(None);
        }
        self.ask_sync().map(Some)
    }

    /// Asks the appender to flush and fsync everything handed over.
    fn ask_sync(&mut self) -> Result<SyncAsked> {
        let answered = self
            .ask_later(|a| Job::Flush(true, a))
            .with_context(|| format!("cannot sync {}", self.path.display()))?;
        Ok(SyncAsked {
            answered,
            offset: self.offset,
        })
    }

    /// Waits for the sync `asked` ([`Sink::start_sync`]); returns the
    /// offset that is now safe to record.
    pub(crate) fn finish_sync(&mut self, asked: Option<SyncAsked>) -> Result<u64> {
        if let Some(asked) = asked {
            self.answer_to(&asked.answered)
                .with_context(|| format!("cannot sync {}", self.path.display()))?;
            self.synced = asked.offset;
        }
        Ok(self.offset)
    }

    /// Flushes and fsyncs even when nothing was written since the last
    /// sync (a file cut when it was opened: its new length to the disk).
    pub(crate) fn sync_file(&mut self) -> Result<()> {
        let asked = self.ask_sync()?;
        self.finish_sync(Some(asked)).map(drop)
    }

    /// [`Sink::sync_file`], then `then` on the appender thread, without
    /// waiting for it: work that needs the bytes on the disk first but
    /// need not hold up the caller (the WARC archive's revisit index,
    /// whose commit was a tenth of the crawl's writer thread with
    /// `--warc`, issue 37). A later [`Sink::flush`] returns only after it
    /// ran; its error is the sink's next one.
    pub(crate) fn sync_then(&mut self, then: AfterSync) -> Result<()> {
        self.ask(|a| Job::SyncThen(a, then))
            .with_context(|| format!("cannot sync {}", self.path.display()))?;
        self.synced = self.offset;
        Ok(())
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Syncs asked of two sinks at once are each recorded only once
    /// waited for: before that a cut to the offset they make safe is
    /// refused, after it allowed, and the files hold every line.
    #[test]
    fn syncs_asked_together_count_once_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let (pa, pb) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        let (mut a, mut b) = (Sink::open(&pa, 0).unwrap(), Sink::open(&pb, 0).unwrap());
        a.write(&"one").unwrap();
        b.write(&"two").unwrap();
        b.write(&"three").unwrap();
        let (sa, sb) = (a.start_sync().unwrap(), b.start_sync().unwrap());
        assert!(sa.is_some() && sb.is_some());
        let e = a.cut_to(a.offset()).unwrap_err().to_string();
        assert!(e.contains("only 0 are synced"), "{e}");
        assert_eq!(a.finish_sync(sa).unwrap(), 6);
        assert_eq!(b.finish_sync(sb).unwrap(), 14);
        assert!(a.start_sync().unwrap().is_none(), "nothing new to sync");
        assert_eq!(std::fs::read_to_string(&pa).unwrap(), "\"one\"\n");
        assert_eq!(std::fs::read_to_string(&pb).unwrap(), "\"two\"\n\"three\"\n");
        b.cut_to(6).unwrap();
        assert_eq!(std::fs::read_to_string(&pb).unwrap(), "\"two\"\n");
    }

    /// A file shorter than its checkpoint was changed outside the crawl:
    /// refused with what it is, where, and both lengths, and left as it
    /// is; a longer one is cut back to the checkpoint.
    #[test]
    fn a_file_is_cut_to_its_checkpoint_and_a_shorter_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x-00000.warc.gz");
        std::fs::write(&p, b"0123456789").unwrap();
        let e = open_cut_to(&p, 11, "WARC file").unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("WARC file {} is shorter (10 bytes)", p.display())),
            "{e}"
        );
        assert!(
            e.contains("last checkpoint (11 bytes)") && e.contains("--fresh"),
            "{e}"
        );
        assert_eq!(std::fs::read(&p).unwrap(), b"0123456789");
        drop(open_cut_to(&p, 4, "output").unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), b"0123");
    }
}
