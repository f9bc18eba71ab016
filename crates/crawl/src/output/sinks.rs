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

/// Write buffer per output file: a group commit writes many lines at once,
/// and 256 KiB turns them into few write calls before each flush.
const WRITE_BUFFER: usize = 256 << 10;

/// One JSON-lines output file.
#[derive(Debug)]
pub struct Sink {
    path: PathBuf,
    out: BufWriter<File>,
    offset: u64,
    /// Offset at the last fsync.
    synced: u64,
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
        Ok(Sink {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(WRITE_BUFFER, file),
            offset: resume_at,
            synced: resume_at,
        })
    }

    /// Appends one JSON line.
    pub fn write<T: Serialize>(&mut self, value: &T) -> Result<()> {
        let mut line = serde_json::to_vec(value)?;
        line.push(b'\n');
        self.out
            .write_all(&line)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        self.offset += line.len() as u64;
        Ok(())
    }

    /// Flushes and fsyncs; returns the offset that is now safe to record.
    pub fn sync(&mut self) -> Result<u64> {
        if self.offset == self.synced {
            return Ok(self.offset);
        }
        self.out
            .flush()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        self.out
            .get_ref()
            .sync_data()
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
        let cut = |e| anyhow::Error::new(e).context(format!("cannot truncate {}", self.path.display()));
        self.out.flush().map_err(cut)?;
        let file = self.out.get_mut();
        file.set_len(offset).map_err(cut)?;
        file.seek(SeekFrom::Start(offset)).map_err(cut)?;
        file.sync_data().map_err(cut)?;
        self.offset = offset;
        self.synced = offset;
        Ok(())
    }

    /// Flushes to the OS without fsync; returns the offset written so far.
    pub fn flush(&mut self) -> Result<u64> {
        self.out
            .flush()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(self.offset)
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
        Ok(Offsets {
            kept: self.kept.sync()?,
            duplicates: self.duplicates.sync()?,
            errors: self.errors.sync()?,
            changes: self.changes.sync()?,
            warc: self.warc.as_mut().map(WarcSink::sync).transpose()?,
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

    /// Flushes all to the OS; returns the offsets written so far.
    pub fn flush(&mut self) -> Result<Offsets> {
        Ok(Offsets {
            kept: self.kept.flush()?,
            duplicates: self.duplicates.flush()?,
            errors: self.errors.flush()?,
            changes: self.changes.flush()?,
            warc: self.warc.as_mut().map(WarcSink::flush).transpose()?,
        })
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
