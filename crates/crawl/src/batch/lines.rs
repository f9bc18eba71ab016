//! The lines of a JSON-lines corpus, read on a thread of their own: the
//! next chunk is read while the one before is cleaned and signed, and the
//! first one while the dictionaries load (docs/BENCHMARKS.md, "Batch and
//! against Python").

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use anyhow::{Context, Result};

/// Read buffer over the input: lines are read one by one, and a large
/// buffer turns them into few read calls on corpora of hundreds of MB.
const READ_BUFFER: usize = 1 << 20;

/// Chunks read ahead of the one being judged.
const AHEAD: usize = 2;

/// Consecutive input lines (numbered from 1), and the bytes they took.
#[derive(Debug, Default)]
pub(super) struct Chunk {
    pub lines: Vec<(u64, String)>,
    pub bytes: u64,
}

/// Starts reading `file` (named `name` in errors) from byte `from`, whose
/// line is `after_line + 1`, in chunks of `per_chunk` lines, or fewer when
/// they reach `max_bytes` of input first (a chunk holds one line at least),
/// so that the chunks in flight hold a bounded number of bytes however
/// large the lines are. The chunks come in order; a read error comes as
/// the last item; the channel closes at the end of the input. Dropping the
/// receiver stops the reader.
pub(super) fn spawn(
    file: File,
    name: String,
    (from, after_line): (u64, u64),
    (per_chunk, max_bytes): (usize, u64),
) -> Result<Receiver<Result<Chunk>>> {
    let (tx, rx) = sync_channel(AHEAD);
    std::thread::Builder::new()
        .name("dedup-read".into())
        .spawn(move || {
            if let Err(e) = read(file, &name, (from, after_line), (per_chunk, max_bytes), &tx) {
                // The receiver may be gone: then nobody is waiting for it.
                let _ = tx.send(Err(e));
            }
        })
        .context("cannot start the thread that reads the input")?;
    Ok(rx)
}

fn read(
    file: File,
    name: &str,
    (from, after_line): (u64, u64),
    (per_chunk, max_bytes): (usize, u64),
    tx: &SyncSender<Result<Chunk>>,
) -> Result<()> {
    let mut reader = BufReader::with_capacity(READ_BUFFER, file);
    reader
        .seek(SeekFrom::Start(from))
        .with_context(|| format!("cannot seek in {name}"))?;
    let mut line_no = after_line;
    let mut chunk = Chunk::default();
    let mut buf = Vec::new();
    loop {
        let n = next_line(&mut reader, &mut buf, |line| {
            line_no += 1;
            chunk.bytes += line.len() as u64;
            chunk.lines.push((line_no, line_text(line)));
        })
        .with_context(|| format!("cannot read {name}"))?;
        let ends = chunk.lines.len() >= per_chunk || chunk.bytes >= max_bytes || n == 0;
        if ends && !chunk.lines.is_empty() {
            let full = std::mem::replace(
                &mut chunk,
                Chunk {
                    lines: Vec::with_capacity(per_chunk),
                    bytes: 0,
                },
            );
            if tx.send(Ok(full)).is_err() {
                return Ok(()); // the run stopped
            }
        }
        if n == 0 {
            return Ok(());
        }
    }
}

/// Reads the next line of `reader` (with its break, if it has one) and
/// hands it to `take`; returns its length, 0 at the end of the input. A
/// line that lies whole in the reader's buffer, as nearly every line does,
/// is handed over from there; one that runs past the buffer is gathered in
/// `buf` first. Each line gathered in `buf` before it was copied again
/// into its own `String`: 27 MB copied twice on the labelled set, on a
/// thread that shares the cores with the signing (issue 37).
fn next_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    take: impl FnOnce(&[u8]),
) -> std::io::Result<usize> {
    let available = loop {
        match reader.fill_buf() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    if let Some(end) = memchr::memchr(b'\n', available) {
        let n = end + 1;
        take(&available[..n]);
        reader.consume(n);
        return Ok(n);
    }
    buf.clear();
    let n = reader.read_until(b'\n', buf)?;
    if n > 0 {
        take(buf);
    }
    Ok(n)
}

/// An input line as text, without its line break: invalid UTF-8 replaced.
pub(super) fn line_text(line: &[u8]) -> String {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    let line = &line[..end];
    // Checked first the fast way: nearly every line is valid, and the lossy
    // decoder walks them char by char (1.5% of `crawl dedup`'s CPU); with
    // SIMD, as std's check was 1% of its instructions (issue 37).
    match simdutf8::basic::from_utf8(line) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(line).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write;

    #[test]
    fn a_line_loses_its_break_and_keeps_the_rest() {
        assert_eq!(line_text(b"{\"a\": 1}\r\n"), "{\"a\": 1}");
        assert_eq!(line_text(b"x\n\r\n"), "x");
        assert_eq!(line_text(b" x \n"), " x ");
        assert_eq!(line_text(b"\xff\xfeok\xe4\n"), "\u{fffd}\u{fffd}ok\u{fffd}");
        assert_eq!(line_text(b""), "");
    }

    /// Lines within the reader's buffer, across its end, longer than it,
    /// empty, and a last line without a break: each handed over whole,
    /// break included, and nothing after the end.
    #[test]
    fn lines_are_handed_over_whole_wherever_the_buffer_ends() {
        let text = "ab\n\ncdefghijk\nl\r\nmnopqrstuvwxyz0123\nlast";
        for capacity in [1, 3, 4, 7, 64] {
            let mut reader = BufReader::with_capacity(capacity, std::io::Cursor::new(text));
            let mut buf = Vec::new();
            let mut lines = Vec::new();
            loop {
                let n = next_line(&mut reader, &mut buf, |l| {
                    lines.push(String::from_utf8(l.to_vec()).unwrap())
                })
                .unwrap();
                if n == 0 {
                    break;
                }
                assert_eq!(lines.last().map(String::len), Some(n));
            }
            assert_eq!(
                lines,
                [
                    "ab\n",
                    "\n",
                    "cdefghijk\n",
                    "l\r\n",
                    "mnopqrstuvwxyz0123\n",
                    "last"
                ],
                "{capacity}"
            );
        }
    }

    #[test]
    fn chunks_come_in_order_from_the_resume_point() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.jsonl");
        let mut f = File::create(&path).unwrap();
        for i in 1..=7 {
            writeln!(f, "line {i}").unwrap();
        }
        write!(f, "last, no break").unwrap();
        drop(f);
        let whole = std::fs::metadata(&path).unwrap().len();
        let rx = spawn(File::open(&path).unwrap(), "in".into(), (0, 0), (3, u64::MAX)).unwrap();
        let chunks: Vec<Chunk> = rx.iter().map(Result::unwrap).collect();
        assert_eq!(
            chunks.iter().map(|c| c.lines.len()).collect::<Vec<_>>(),
            [3, 3, 2]
        );
        assert_eq!(chunks.iter().map(|c| c.bytes).sum::<u64>(), whole);
        assert_eq!(chunks[2].lines[1], (8, "last, no break".to_string()));
        // From the start of line 3 ("line 1\n" and "line 2\n" are 7 bytes each).
        let rx = spawn(File::open(&path).unwrap(), "in".into(), (14, 2), (100, u64::MAX)).unwrap();
        let rest: Vec<Chunk> = rx.iter().map(Result::unwrap).collect();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].lines[0], (3, "line 3".to_string()));
        assert_eq!(rest[0].lines.len(), 6);
        // A chunk ends once it holds 15 bytes (two 7-byte lines and one
        // more), or at the line bound, whichever comes first; a line longer
        // than the bound is a chunk of its own.
        let rx = spawn(File::open(&path).unwrap(), "in".into(), (0, 0), (100, 15)).unwrap();
        let by_bytes: Vec<Chunk> = rx.iter().map(Result::unwrap).collect();
        assert_eq!(
            by_bytes.iter().map(|c| c.lines.len()).collect::<Vec<_>>(),
            [3, 3, 2]
        );
        let rx = spawn(File::open(&path).unwrap(), "in".into(), (0, 0), (2, 1)).unwrap();
        let tiny: Vec<Chunk> = rx.iter().map(Result::unwrap).collect();
        assert_eq!(tiny.len(), 8);
        assert_eq!(tiny.iter().map(|c| c.bytes).sum::<u64>(), whole);
    }
}
