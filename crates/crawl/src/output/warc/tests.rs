//! The archive written, read back, cut and resumed.

#![allow(clippy::unwrap_used)]
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Read, Write};
use std::path::Path;

use super::record::*;
use super::set::*;
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

/// A payload synced is found while the appender commits it to the
/// index (held at a gate here) and after, from a read snapshot taken
/// anew: each copy is a revisit of the first response, never a second
/// original.
#[test]
fn originals_being_committed_are_found_until_the_index_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    let mut w = WarcSink::open(&s, String::new(), None).unwrap();
    let gate = std::sync::Arc::new(std::sync::Barrier::new(2));
    w.commit_gate = Some(gate.clone());
    w.page(&prep("http://e.org/a", b"<p>x</p>"), None).unwrap();
    // A look-up now takes the index's snapshot, which lacks a.
    w.page(&prep("http://e.org/other", b"<p>y</p>"), None).unwrap();
    w.sync().unwrap();
    // The commit waits at the gate: a's original is only in `committing`.
    assert_eq!(w.committing.len(), 1);
    assert!(w.pending.is_empty());
    w.page(&prep("http://e.org/b", b"<p>x</p>"), None).unwrap();
    gate.wait();
    w.commit_gate = None;
    w.flush().unwrap();
    assert!(w.committing.is_empty());
    // Now only the index has it, read on a new snapshot.
    w.page(&prep("http://e.org/c", b"<p>x</p>"), None).unwrap();
    w.page(&prep("http://e.org/d", b"<p>y</p>"), None).unwrap();
    w.close().unwrap();
    assert_revisits(
        dir.path(),
        0,
        &[
            ("response", "http://e.org/a", ""),
            ("response", "http://e.org/other", ""),
            ("revisit", "http://e.org/b", "http://e.org/a"),
            ("revisit", "http://e.org/c", "http://e.org/a"),
            ("revisit", "http://e.org/d", "http://e.org/other"),
        ],
    );
    assert_eq!(
        w.index
            .get(&prep("http://e.org/z", b"<p>x</p>").payload_digest)
            .unwrap()
            .map(|o| o.uri),
        Some("http://e.org/a".to_string())
    );
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
/// The revisit index reads back what it was given and what a cut took
/// away at once, though it keeps its read snapshot between changes.
#[test]
fn the_revisit_index_reads_its_own_changes() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(&settings(dir.path())).unwrap();
    let original = |uri: &str| Original {
        uri: uri.into(),
        date: "2026-12-06T00:00:00Z".into(),
        id: format!("<urn:uuid:{uri}>"),
    };
    let add = |digest: [u8; 20], offset: u64, uri: &str| {
        let at = WarcAt { serial: 0, offset };
        index
            .add(&HashMap::from([(digest, (at, original(uri)))]))
            .unwrap();
    };
    let uri_of = |digest: [u8; 20]| index.get(&digest).unwrap().map(|o| o.uri);
    let (a, b) = ([1u8; 20], [2u8; 20]);
    assert_eq!(uri_of(a), None);
    add(a, 100, "http://e.org/a");
    assert_eq!(uri_of(a).as_deref(), Some("http://e.org/a"));
    assert_eq!(uri_of(b), None);
    add(b, 200, "http://e.org/b");
    assert_eq!(uri_of(b).as_deref(), Some("http://e.org/b"));
    index
        .cut(WarcAt {
            serial: 0,
            offset: 150,
        })
        .unwrap();
    assert_eq!(uri_of(b), None);
    assert_eq!(uri_of(a).as_deref(), Some("http://e.org/a"));
}

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
                let v: serde_json::Value = serde_json::from_str(l.splitn(3, ' ').nth(2).unwrap()).unwrap();
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

/// The members of one thread's reused gzip stream: each inflates, alone, to
/// exactly its parts (nothing of the member before it), whatever their size
/// (empty, text, incompressible bytes that outgrow the first output
/// buffer), and is the same bytes a fresh stream on another thread gives.
#[test]
fn each_member_of_the_reused_stream_stands_alone() {
    let text: Vec<u8> = (0..200_000u32)
        .flat_map(|i| format!("<p>line {} of a page</p>\n", i % 977).into_bytes())
        .collect();
    // xorshift: bytes deflate cannot shrink, so the output grows past the
    // capacity it was given for text.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..300_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let cases: Vec<Vec<&[u8]>> = vec![
        vec![b"WARC/1.1\r\n\r\n", &text, b"\r\n\r\n"],
        vec![],
        vec![b"", b""],
        vec![&noise, b"tail"],
        vec![b"short", &text[..1000]],
    ];
    let mut here = Vec::new();
    for parts in &cases {
        let len = parts.iter().map(|p| p.len()).sum();
        here.push(gzip_member(parts.iter().copied(), len).unwrap());
    }
    let fresh: Vec<Vec<u8>> = std::thread::scope(|s| {
        cases
            .iter()
            .map(|parts| {
                s.spawn(move || {
                    let len = parts.iter().map(|p| p.len()).sum();
                    gzip_member(parts.iter().copied(), len).unwrap()
                })
                .join()
                .unwrap()
            })
            .collect()
    });
    for ((parts, member), fresh) in cases.iter().zip(&here).zip(&fresh) {
        let mut inflated = Vec::new();
        flate2::read::GzDecoder::new(member.as_slice())
            .read_to_end(&mut inflated)
            .unwrap();
        assert_eq!(inflated, parts.concat(), "a member inflates to its parts");
        assert_eq!(member, fresh, "a reused stream writes what a fresh one does");
    }
    // Incompressible input really did outgrow the text-sized buffer.
    assert!(here[3].len() > noise.len() / 3 + 512);
    // Text compresses: the level is not "stored".
    assert!(
        here[0].len() < text.len() / 4,
        "{} of {}",
        here[0].len(),
        text.len()
    );
}

/// The index of a file the sink wrote whole comes from the lines it kept
/// as it appended (no reading back), and is the very index a reading back
/// makes: responses of every kind of head, revisits, metadata records of
/// copies, exchanges, a URL past ASCII, a record written after the end;
/// a file the sink went on writing after a resume is read back instead.
#[test]
fn an_index_from_the_kept_lines_is_the_one_a_reading_back_makes() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    let mut w = WarcSink::open(&s, String::new(), None).unwrap();
    let note = CopyNote {
        tier: "content",
        of: "http://e.org/a",
        similarity: Some(0.91),
        basis: Some("article"),
    };
    w.page(&prep("http://e.org/a", b"first"), None).unwrap();
    // The same payload: a revisit record, with its metadata record.
    w.page(&prep("http://e.org/a?again=1", b"first"), Some(note))
        .unwrap();
    w.page(
        &prep("http://xn--fsq.example/%E4%B8%AD%E6%96%87?q=%C3%A9", b"idn"),
        None,
    )
    .unwrap();
    let mut odd = head("http://e.org/odd", 404);
    odd.headers = vec![
        ("Content-Type".into(), b"text/plain; charset=\"gbk\"".to_vec()),
        ("content-type".into(), b"text/html".to_vec()),
        ("X-Bytes".into(), vec![0xe9, b'\r', b'x']),
    ];
    w.exchanges(&[
        Exchange {
            head: head("http://e.org/robots.txt", 200),
            body: b"User-agent: *".to_vec(),
            truncated: false,
        },
        Exchange {
            head: odd,
            body: Vec::new(),
            truncated: true,
        },
    ])
    .unwrap();
    let mut no_type = head("http://e.org/bare", 200);
    no_type.headers.clear();
    w.page(&Prepared::new(&no_type, b"bare", false).unwrap(), None)
        .unwrap();
    w.close().unwrap();
    assert!(w.lines.is_some(), "a file the sink began keeps its lines");
    let kept = w.lines.clone().unwrap();
    assert_eq!(kept.len(), 6, "five responses and one revisit: {kept:#?}");
    let path = set_files(dir.path(), "simcrawl").unwrap()[0].1.clone();
    let read_back = super::super::cdxj::index_lines(&path).unwrap();
    let mut sorted = kept;
    sorted.sort_unstable();
    assert_eq!(sorted, read_back);
    assert!(read_back.iter().any(|l| l.contains("\"mime\": \"warc/revisit\"")));
    assert!(read_back.iter().any(|l| l.contains("\"status\": \"404\"")));
    assert_eq!(indexed(dir.path(), 0).map(|u| u.len()), Some(6));
    // Lines past the sink's limit: the file is read back instead.
    let dir2 = tempfile::tempdir().unwrap();
    let mut small = WarcSink::open(&settings(dir2.path()), String::new(), None).unwrap();
    small.max_lines_bytes = 500;
    small.page(&prep("http://e.org/1", b"1"), None).unwrap();
    assert!(small.lines.is_some(), "one line is under 500 bytes");
    small.page(&prep("http://e.org/2", b"2"), None).unwrap();
    small.page(&prep("http://e.org/3", b"3"), None).unwrap();
    assert!(small.lines.is_none(), "three are over");
    small.close().unwrap();
    assert_eq!(indexed(dir2.path(), 0).map(|u| u.len()), Some(3));
    // Written on after the end: the index names that record too.
    w.page(&prep("http://e.org/late", b"late"), None).unwrap();
    let at = w.sync().unwrap();
    w.close().unwrap();
    assert_eq!(indexed(dir.path(), 0).map(|u| u.len()), Some(7));
    drop(w);
    // A resume goes on writing the file: it is read back at the end.
    let mut w = WarcSink::open(&s, String::new(), Some(at)).unwrap();
    assert!(w.lines.is_none());
    w.page(&prep("http://e.org/resumed", b"resumed"), None).unwrap();
    w.close().unwrap();
    assert_eq!(indexed(dir.path(), 0).map(|u| u.len()), Some(8));
}

/// A header line a reading back cannot read (over 64 KiB) is not indexed
/// from kept lines either: the file is read back, which fails as it always
/// did (a warning, the archive whole without its index), so the two ways
/// never disagree.
#[test]
fn a_head_a_reading_back_refuses_leaves_the_file_to_be_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcSink::open(&settings(dir.path()), String::new(), None).unwrap();
    w.page(&prep("http://e.org/a", b"a"), None).unwrap();
    assert!(w.lines.is_some());
    let mut huge = head("http://e.org/huge", 200);
    huge.headers.push(("X-Huge".into(), vec![b'x'; 70 * 1024]));
    w.page(&Prepared::new(&huge, b"huge", false).unwrap(), None)
        .unwrap();
    assert!(w.lines.is_none(), "the file is left to a reading back");
    w.close().unwrap();
    let path = set_files(dir.path(), "simcrawl").unwrap()[0].1.clone();
    assert!(super::super::cdxj::index_lines(&path).is_err());
    assert!(!super::super::cdxj::index_path(&path).exists());
}
