//! JSON-lines outputs that survive a crash without a torn line: the
//! kept pages, dropped copies, failures and revisit changes, each a
//! [`Sink`] ([`crate::output::appender`]), with the WARC archive when the
//! crawl keeps one, and the offsets a checkpoint records of them.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use simcrawl_dedup::{Tier, Verdict};

pub use super::appender::Sink;
use super::warc::{WarcAt, WarcSink};

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
    ///
    /// The four files' appenders are all asked first and the archive is
    /// synced while they work, so the writer thread waits for the slowest
    /// fsync, not for their sum: one after the other they held it 7% of
    /// the wall time of a `crawl bench` (two files with lines, 0.36 s of
    /// fsync each in a 10 s run; issue 37, target 1).
    pub fn sync(&mut self) -> Result<Offsets> {
        let kept = self.kept.start_sync()?;
        let duplicates = self.duplicates.start_sync()?;
        let errors = self.errors.start_sync()?;
        let changes = self.changes.start_sync()?;
        let warc = self.warc.as_mut().map(WarcSink::sync).transpose()?;
        Ok(Offsets {
            kept: self.kept.finish_sync(kept)?,
            duplicates: self.duplicates.finish_sync(duplicates)?,
            errors: self.errors.finish_sync(errors)?,
            changes: self.changes.finish_sync(changes)?,
            warc,
        })
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

    /// The lines (and WARC records) written so far handed to the
    /// appenders, and their offsets, without waiting for them to be
    /// written: what a commit that is not durable records, as a crash rolls it back
    /// to a durable one, whose offsets [`Outputs::sync`] gave.
    pub fn handed_over(&mut self) -> Result<Offsets> {
        self.offsets_by(Sink::hand_over, WarcSink::hand_over)
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
    use std::io::Write;

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
