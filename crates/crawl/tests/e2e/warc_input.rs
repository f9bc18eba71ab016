//! `crawl dedup` over WARC files another tool wrote, built here record by
//! record (one gzip member each, as warcio and Heritrix write them): revisit
//! records resolved against earlier files across a resume, and
//! content-encoded payloads that inflate without end.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use crate::support::{field, gibberish, page, path_of, read_jsonl};

fn sha1_label(b: &[u8]) -> String {
    format!("sha1:{}", data_encoding::BASE32.encode(&Sha1::digest(b)))
}

/// One WARC record: its header fields (WARC-Type first) and block.
fn record(kind: &str, fields: &[(&str, &str)], block: &[u8]) -> Vec<u8> {
    let mut head = format!("WARC/1.1\r\nWARC-Type: {kind}\r\n");
    for (k, v) in fields {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", block.len()));
    let mut out = head.into_bytes();
    out.extend_from_slice(block);
    out.extend_from_slice(b"\r\n\r\n");
    out
}

fn warcinfo() -> Vec<u8> {
    record(
        "warcinfo",
        &[
            ("WARC-Record-ID", &format!("<urn:uuid:info-{}>", rand_id())),
            ("WARC-Date", "2026-01-01T00:00:00Z"),
            ("Content-Type", "application/warc-fields"),
        ],
        b"software: test\r\n",
    )
}

fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// A 200 text/html response of `payload` as stored (`coding`: its
/// Content-Encoding, when it is stored encoded).
fn response(id: &str, uri: &str, date: &str, payload: &[u8], coding: Option<&str>) -> Vec<u8> {
    let mut http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n".to_vec();
    if let Some(c) = coding {
        http.extend_from_slice(format!("Content-Encoding: {c}\r\n").as_bytes());
    }
    http.extend_from_slice(format!("Content-Length: {}\r\n\r\n", payload.len()).as_bytes());
    http.extend_from_slice(payload);
    let digest = sha1_label(payload);
    record(
        "response",
        &[
            ("WARC-Record-ID", id),
            ("WARC-Date", date),
            ("WARC-Target-URI", uri),
            ("WARC-Payload-Digest", &digest),
            ("Content-Type", "application/http; msgtype=response"),
        ],
        &http,
    )
}

/// A revisit record of `uri` with the given `WARC-Refers-To*` and
/// `WARC-Payload-Digest` fields (as warcio, pywb and Heritrix write them).
fn revisit(id: &str, uri: &str, date: &str, refers: &[(&str, &str)]) -> Vec<u8> {
    let mut fields = vec![
        ("WARC-Record-ID", id),
        ("WARC-Date", date),
        ("WARC-Target-URI", uri),
        (
            "WARC-Profile",
            "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
        ),
        ("Content-Type", "application/http; msgtype=response"),
    ];
    fields.extend_from_slice(refers);
    record(
        "revisit",
        &fields,
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n",
    )
}

/// A gzip member per record.
fn members(records: &[Vec<u8>]) -> Vec<Vec<u8>> {
    records
        .iter()
        .map(|r| {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(r).unwrap();
            gz.finish().unwrap()
        })
        .collect()
}

/// `crawl dedup --input INPUTS --out OUT --data-dir DATA [--set ...]`.
fn dedup(inputs: &Path, out: &Path, data: &Path, set: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new(crate::support::CRAWL);
    c.arg("dedup")
        .arg("--input")
        .arg(inputs)
        .arg("--out")
        .arg(out)
        .arg("--data-dir")
        .arg(data)
        .env("NO_COLOR", "1");
    for s in set {
        c.arg("--set").arg(s);
    }
    c.output().unwrap()
}

/// The three outputs of a run, as written.
fn outputs(out: &Path) -> BTreeMap<&'static str, String> {
    ["kept.jsonl", "duplicates.jsonl", "errors.jsonl"]
        .into_iter()
        .map(|f| (f, std::fs::read_to_string(out.join(f)).unwrap_or_default()))
        .collect()
}

/// Two WARC files: the second's revisits refer to payloads of the first
/// (by payload digest, by `WARC-Refers-To-Target-URI` + `-Date`, by
/// `WARC-Refers-To`), one of them a near copy that the tiers judged a copy
/// of another page.
fn two_files() -> [(&'static str, Vec<Vec<u8>>); 2] {
    let a1 = page("One", &gibberish(1, 220), &[]);
    let near = page("One", &format!("{} and a line more", gibberish(1, 220)), &[]);
    let a2 = page("Two", &gibberish(2, 220), &[]);
    let b1 = page("Three", &gibberish(3, 220), &[]);
    let d = |s: &str| sha1_label(s.as_bytes());
    let a = vec![
        warcinfo(),
        response(
            "<urn:uuid:a1>",
            "http://a.test/a1",
            "2026-01-01T00:00:01Z",
            a1.as_bytes(),
            None,
        ),
        response(
            "<urn:uuid:a2>",
            "http://a.test/a2",
            "2026-01-01T00:00:02Z",
            a2.as_bytes(),
            None,
        ),
        response(
            "<urn:uuid:near>",
            "http://a.test/near",
            "2026-01-01T00:00:03Z",
            near.as_bytes(),
            None,
        ),
        revisit(
            "<urn:uuid:r1>",
            "http://a.test/a1-again",
            "2026-01-01T00:00:04Z",
            &[("WARC-Payload-Digest", &d(&a1))],
        ),
    ];
    let b = vec![
        warcinfo(),
        response(
            "<urn:uuid:b1>",
            "http://b.test/b1",
            "2026-01-02T00:00:01Z",
            b1.as_bytes(),
            None,
        ),
        // By digest: a copy of the page the near copy was judged a copy of.
        revisit(
            "<urn:uuid:r2>",
            "http://b.test/near-again",
            "2026-01-02T00:00:02Z",
            &[
                ("WARC-Payload-Digest", &d(&near)),
                ("WARC-Refers-To-Target-URI", "http://a.test/near"),
                ("WARC-Refers-To-Date", "2026-01-01T00:00:03Z"),
            ],
        ),
        // No digest: by the original's URI and date.
        revisit(
            "<urn:uuid:r3>",
            "http://b.test/a2-again",
            "2026-01-02T00:00:03Z",
            &[
                ("WARC-Refers-To-Target-URI", "http://a.test/a2"),
                ("WARC-Refers-To-Date", "2026-01-01T00:00:02Z"),
            ],
        ),
        // No digest, no URI: by the original's record id.
        revisit(
            "<urn:uuid:r4>",
            "http://b.test/a1-third",
            "2026-01-02T00:00:04Z",
            &[("WARC-Refers-To", "<urn:uuid:a1>")],
        ),
        // A payload no earlier response has: an error line, every time.
        revisit(
            "<urn:uuid:r5>",
            "http://b.test/unknown",
            "2026-01-02T00:00:05Z",
            &[("WARC-Payload-Digest", "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")],
        ),
    ];
    [("a.warc.gz", a), ("b.warc.gz", b)]
}

/// A run cut inside any record (the file ends there, as a kill mid-copy
/// leaves it: the run fails after committing the records before it) and
/// resumed with the file whole gives the same lines, byte for byte, as an
/// uninterrupted run: revisits of payloads from records done before the
/// resume, in this file or an earlier one, still find their originals.
#[test]
fn crawl_dedup_of_warc_resumed_at_any_record_gives_the_uninterrupted_verdicts() {
    let dir = crate::support::tempdir("warc_input");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).unwrap();
    let files: Vec<(PathBuf, Vec<Vec<u8>>)> = two_files()
        .into_iter()
        .map(|(name, recs)| (inputs.join(name), members(&recs)))
        .collect();
    let restore = || {
        for (p, m) in &files {
            std::fs::write(p, m.concat()).unwrap();
        }
    };
    restore();

    let whole = dir.path().join("whole");
    let o = dedup(&inputs, &whole, &dir.path().join("whole-data"), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = outputs(&whole);
    let dups: BTreeMap<String, String> = read_jsonl(&whole.join("duplicates.jsonl"))
        .iter()
        .map(|v| (path_of(field(v, "url")), path_of(field(v, "duplicate_of"))))
        .collect();
    let expected: BTreeMap<String, String> = [
        ("/near", "/a1"),
        ("/a1-again", "/a1"),
        ("/near-again", "/a1"),
        ("/a2-again", "/a2"),
        ("/a1-third", "/a1"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(dups, expected, "{want:?}");
    let errors = read_jsonl(&whole.join("errors.jsonl"));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(field(&errors[0], "kind"), "warc_revisit");
    assert_eq!(path_of(field(&errors[0], "url")), "/unknown");

    for (fi, (path, m)) in files.iter().enumerate() {
        for (ri, member) in m.iter().enumerate() {
            let name = format!("cut-{fi}-{ri}");
            let out = dir.path().join(&name);
            let data = dir.path().join(format!("{name}-data"));
            // The file ends inside record `ri`.
            let mut cut = m[..ri].concat();
            cut.extend_from_slice(&member[..member.len() / 2]);
            std::fs::write(path, &cut).unwrap();
            let o = dedup(&inputs, &out, &data, &[]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success() && err.contains("unreadable"), "{name}: {err}");
            restore();
            let o = dedup(&inputs, &out, &data, &[]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{name}: {err}");
            assert_eq!(
                outputs(&out),
                want,
                "{name}: resumed after a cut in record {ri} of file {fi}"
            );
        }
    }
}

/// `prefix` followed by `zeros` bytes of zeros, compressed as it is
/// streamed (never held inflated): gzip, or brotli (`br`).
fn bomb(coding: &str, prefix: &[u8], zeros: usize) -> Vec<u8> {
    fn fill(w: &mut impl Write, prefix: &[u8], zeros: usize) {
        let block = vec![0u8; 1 << 20];
        w.write_all(prefix).unwrap();
        for _ in 0..zeros / block.len() {
            w.write_all(&block).unwrap();
        }
    }
    if coding == "gzip" {
        // The best level: a bomb's ratio (about 1000:1 on zeros). Level 1
        // is zlib-rs's static-code mode, which stops near 100:1.
        let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        fill(&mut w, prefix, zeros);
        w.finish().unwrap()
    } else {
        let mut w = brotli::CompressorWriter::new(Vec::new(), 1 << 16, 1, 22);
        fill(&mut w, prefix, zeros);
        w.flush().unwrap();
        w.into_inner()
    }
}

/// Peak RSS (VmHWM) of a running process, in MiB.
fn peak_mib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024)
}

/// Payloads stored content-encoded (as wget and Common Crawl store them)
/// that inflate to 1 GiB (gzip) and 512 MiB (brotli): each is read to
/// `fetch.max_body_bytes` decoded bytes and no further, judged on that, and
/// its line says `"truncated": true`; the run's memory stays far below one
/// inflated payload.
#[test]
fn crawl_dedup_of_warc_caps_content_encoded_bombs_at_the_body_limit() {
    const LIMIT_MIB: u64 = 400;
    let dir = crate::support::tempdir("warc_input");
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).unwrap();
    let prefix = |title: &str, seed| {
        format!(
            "<!doctype html><html><head><title>{title}</title></head><body><p>{}</p><p>",
            gibberish(seed, 220)
        )
    };
    let gz = bomb("gzip", prefix("Gz", 21).as_bytes(), 1 << 30);
    let br = bomb("br", prefix("Br", 22).as_bytes(), 1 << 29);
    assert!(
        gz.len() < 8 << 20 && br.len() < 8 << 20,
        "not bombs: {} {}",
        gz.len(),
        br.len()
    );
    let small = page("Small", &gibberish(23, 220), &[]);
    let records = vec![
        warcinfo(),
        response(
            "<urn:uuid:gz>",
            "http://c.test/gz",
            "2026-01-03T00:00:01Z",
            &gz,
            Some("gzip"),
        ),
        response(
            "<urn:uuid:br>",
            "http://c.test/br",
            "2026-01-03T00:00:02Z",
            &br,
            Some("br"),
        ),
        response(
            "<urn:uuid:small>",
            "http://c.test/small",
            "2026-01-03T00:00:03Z",
            small.as_bytes(),
            None,
        ),
    ];
    std::fs::write(inputs.join("bombs.warc.gz"), members(&records).concat()).unwrap();

    let out = dir.path().join("out");
    let mut child = std::process::Command::new(crate::support::CRAWL)
        .arg("dedup")
        .arg("--input")
        .arg(&inputs)
        .arg("--out")
        .arg(&out)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--set", "fetch.max_body_bytes=4194304"])
        .env("NO_COLOR", "1")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        peak = peak.max(peak_mib(child.id()).unwrap_or(0));
        if peak > LIMIT_MIB || started.elapsed() > std::time::Duration::from_secs(300) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "crawl dedup holds {peak} MiB (limit {LIMIT_MIB}) after {:.1} s: the payloads inflate unbounded",
                started.elapsed().as_secs_f64()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    eprintln!("peak RSS {peak} MiB, {:.1} s", started.elapsed().as_secs_f64());
    let lines: Vec<serde_json::Value> = read_jsonl(&out.join("kept.jsonl"))
        .into_iter()
        .chain(read_jsonl(&out.join("duplicates.jsonl")))
        .collect();
    let truncated: BTreeMap<String, bool> = lines
        .iter()
        .map(|v| {
            (
                path_of(field(v, "url")),
                v.get("truncated")
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false),
            )
        })
        .collect();
    let want: BTreeMap<String, bool> = [("/gz", true), ("/br", true), ("/small", false)]
        .iter()
        .map(|(p, t)| (p.to_string(), *t))
        .collect();
    assert_eq!(truncated, want, "{lines:?}");
}
