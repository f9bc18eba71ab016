//! `crawl --warc`: the archive of a crawl over loopback, read back record
//! by record (digests recomputed here), checked by warcio when the test
//! script provides it (`SIMCRAWL_WARC_CHECK`, scripts/test.sh), and kept
//! whole through kill -9 and resume; its CDXJ indexes checked against the
//! records, and against cdxj-indexer's when the test script provides it
//! (`SIMCRAWL_CDXJ_INDEXER`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha1::{Digest, Sha1};

use crate::support::server::{Reply, Server};
use crate::support::{Dirs, field, gibberish, multiset, page, path_of, site_crawl};

/// One record of a WARC file.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    headers: BTreeMap<String, String>,
    block: Vec<u8>,
}

impl Record {
    fn get(&self, k: &str) -> &str {
        self.headers
            .get(&k.to_ascii_lowercase())
            .map_or("", String::as_str)
    }
    pub(crate) fn kind(&self) -> &str {
        self.get("WARC-Type")
    }
    pub(crate) fn uri_path(&self) -> String {
        path_of(self.get("WARC-Target-URI"))
    }
    /// The HTTP payload (after the head) of a response record.
    fn payload(&self) -> &[u8] {
        let at = self
            .block
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(self.block.len(), |i| i + 4);
        &self.block[at..]
    }
}

fn sha1_label(b: &[u8]) -> String {
    format!("sha1:{}", data_encoding::BASE32.encode(&Sha1::digest(b)))
}

/// The WARC files of `dir`, by name (their serial orders them).
fn warc_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    v.sort();
    v
}

/// Every record of the set in `dir`, in order; panics on a torn or
/// malformed record, a wrong digest, or a gzip member holding more or
/// less than one record.
pub(crate) fn read_set(dir: &Path) -> Vec<Record> {
    let mut out = Vec::new();
    for path in warc_files(dir) {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut rest = &bytes[..];
        let mut first = true;
        while !rest.is_empty() {
            // One gzip member = one record.
            let mut dec = flate2::bufread::GzDecoder::new(rest);
            let mut plain = Vec::new();
            dec.read_to_end(&mut plain)
                .unwrap_or_else(|e| panic!("{name}: torn gzip member: {e}"));
            rest = dec.into_inner();
            let mut r = BufReader::new(&plain[..]);
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            assert_eq!(line, "WARC/1.1\r\n", "{name}");
            let mut headers = BTreeMap::new();
            loop {
                line.clear();
                r.read_line(&mut line).unwrap();
                if line == "\r\n" {
                    break;
                }
                let (k, v) = line.trim_end().split_once(": ").unwrap();
                headers.insert(k.to_ascii_lowercase(), v.to_string());
            }
            let len: usize = headers["content-length"].parse().unwrap();
            let mut block = vec![0; len];
            r.read_exact(&mut block).unwrap();
            let mut tail = Vec::new();
            r.read_to_end(&mut tail).unwrap();
            assert_eq!(tail, b"\r\n\r\n", "{name}: a member holds more than one record");
            let rec = Record { headers, block };
            assert_eq!(rec.get("WARC-Block-Digest"), sha1_label(&rec.block), "{rec:?}");
            if rec.kind() == "response" {
                assert_eq!(
                    rec.get("WARC-Payload-Digest"),
                    sha1_label(rec.payload()),
                    "{rec:?}"
                );
            }
            if first {
                assert_eq!(rec.kind(), "warcinfo", "{name} does not begin with its warcinfo");
                first = false;
            }
            out.push(rec);
        }
    }
    out
}

/// The gzip members of a WARC file, each inflated: one record each.
fn members(path: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(path).unwrap();
    let mut rest = &bytes[..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let mut dec = flate2::bufread::GzDecoder::new(rest);
        let mut plain = Vec::new();
        dec.read_to_end(&mut plain).unwrap();
        rest = dec.into_inner();
        out.push(plain);
    }
    out
}

/// The gzip members of a WARC file: (offset, compressed length, inflated).
fn members_at(path: &Path) -> Vec<(u64, u64, Vec<u8>)> {
    let bytes = std::fs::read(path).unwrap();
    let mut rest = &bytes[..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let at = bytes.len() - rest.len();
        let mut dec = flate2::bufread::GzDecoder::new(rest);
        let mut plain = Vec::new();
        dec.read_to_end(&mut plain).unwrap();
        rest = dec.into_inner();
        let len = bytes.len() - rest.len() - at;
        out.push((at as u64, len as u64, plain));
    }
    out
}

/// A WARC header field of an inflated record ("" when absent).
fn header_of(rec: &[u8], name: &str) -> String {
    let text = String::from_utf8_lossy(rec);
    let head = text.split("\r\n\r\n").next().unwrap_or_default();
    head.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_default()
        .to_string()
}

/// The CDXJ index beside each WARC file of `dir` (`X.cdxj` beside
/// `X.warc.gz`): sorted; one line per response and revisit record of the
/// file, each naming its record's gzip member (offset, length), URL, date,
/// payload digest and file; the very lines cdxj-indexer writes for the
/// file (sorted) when the test script provides it. Returns every line.
pub(crate) fn cdxj_check(dir: &Path) -> Vec<String> {
    let indexer = std::env::var_os("SIMCRAWL_CDXJ_INDEXER");
    if indexer.is_none() {
        eprintln!(
            "SKIPPED cdxj-indexer comparison: SIMCRAWL_CDXJ_INDEXER is not set (scripts/test.sh sets it)"
        );
    }
    // No index outlives its file (one deleted by a resume or a cut).
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".cdxj") {
            assert!(
                dir.join(format!("{stem}.warc.gz")).exists(),
                "{name} indexes no file"
            );
        }
        assert!(!name.ends_with(".cdxj.tmp"), "{name} left behind");
    }
    let mut all = Vec::new();
    for warc in warc_files(dir) {
        let name = warc.file_name().unwrap().to_string_lossy().into_owned();
        let index = warc.with_file_name(name.replace(".warc.gz", ".cdxj"));
        let text = std::fs::read_to_string(&index)
            .unwrap_or_else(|e| panic!("no CDXJ index {} beside {name}: {e}", index.display()));
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        assert!(text.is_empty() || text.ends_with('\n'), "{}", index.display());
        let mut sorted = lines.clone();
        sorted.sort();
        assert_eq!(lines, sorted, "{} is not sorted", index.display());
        // Every response and revisit record, and nothing else.
        let want: BTreeMap<u64, (u64, Vec<u8>)> = members_at(&warc)
            .into_iter()
            .filter(|(_, _, r)| matches!(header_of(r, "WARC-Type").as_str(), "response" | "revisit"))
            .map(|(at, len, r)| (at, (len, r)))
            .collect();
        let mut seen = BTreeSet::new();
        for line in &lines {
            let mut parts = line.splitn(3, ' ');
            let (key, ts, json) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            let f = |k: &str| {
                v[k].as_str()
                    .unwrap_or_else(|| panic!("{k} in {line}"))
                    .to_string()
            };
            let offset: u64 = f("offset").parse().unwrap();
            let (len, rec) = want
                .get(&offset)
                .unwrap_or_else(|| panic!("{line}: no response or revisit at that offset of {name}"));
            assert_eq!(f("length").parse::<u64>().unwrap(), *len, "{line}");
            assert_eq!(f("url"), header_of(rec, "WARC-Target-URI"), "{line}");
            assert!(key.contains(")/") && key.starts_with("1,0,0,127:"), "{line}");
            let date: String = header_of(rec, "WARC-Date")
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            assert_eq!(ts, date, "{line}");
            assert_eq!(f("digest"), header_of(rec, "WARC-Payload-Digest"), "{line}");
            assert_eq!(f("filename"), name, "{line}");
            let status = String::from_utf8_lossy(rec)
                .split("\r\n\r\n")
                .nth(1)
                .and_then(|http| http.split(' ').nth(1))
                .unwrap_or_default()
                .to_string();
            assert_eq!(f("status"), status, "{line}");
            if header_of(rec, "WARC-Type") == "revisit" {
                assert_eq!(f("mime"), "warc/revisit", "{line}");
            }
            assert!(seen.insert(offset), "{line}: twice");
        }
        assert_eq!(
            seen.len(),
            want.len(),
            "{}: records missing from the index",
            index.display()
        );
        if let Some(tool) = &indexer {
            let out = std::process::Command::new(tool).arg(&warc).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let mut theirs: Vec<String> = String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect();
            theirs.sort();
            assert_eq!(
                lines,
                theirs,
                "{} differs from cdxj-indexer's index of {name}",
                index.display()
            );
        }
        all.extend(lines);
    }
    all
}

/// Writes `records` (inflated) as a WARC file of one gzip member each.
fn write_members(path: &Path, records: &[Vec<u8>]) {
    use std::io::Write;
    let mut out = Vec::new();
    for r in records {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(r).unwrap();
        out.extend(gz.finish().unwrap());
    }
    std::fs::write(path, out).unwrap();
}

/// The warcio check must fail on a copy of the set in `dir` with one
/// payload byte changed, and on one whose revisit lost its original: a
/// check that cannot fail checks nothing.
fn warcio_check_fails_on_broken_copies(dir: &Path, root: &Path) {
    let Some(script) = std::env::var_os("SIMCRAWL_WARC_CHECK") else {
        return;
    };
    let file = warc_files(dir).remove(0);
    let recs = members(&file);
    let is = |r: &Vec<u8>, kind: &str| r.windows(kind.len()).any(|w| w == kind.as_bytes());
    let fails = |name: &str, recs: Vec<Vec<u8>>| {
        let d = root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        write_members(&d.join("broken-20260101000000-00000.warc.gz"), &recs);
        let out = std::process::Command::new("bash")
            .arg(&script)
            .arg(&d)
            .output()
            .unwrap();
        assert!(!out.status.success(), "warc-check passed a set with {name}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // A payload byte changed in the first response.
    let mut flipped = recs.clone();
    let i = flipped.iter().position(|r| is(r, "WARC-Type: response")).unwrap();
    let last = flipped[i].len() - 6;
    flipped[i][last] ^= 0x20;
    let err = fails("a-flipped-byte", flipped);
    assert!(err.contains("check"), "{err}");
    // The revisit's original removed.
    let refers = recs
        .iter()
        .find(|r| is(r, "WARC-Type: revisit"))
        .map(|r| {
            let text = String::from_utf8_lossy(r);
            let line = text
                .lines()
                .find(|l| l.starts_with("WARC-Refers-To: "))
                .unwrap()
                .to_string();
            line.trim_start_matches("WARC-Refers-To: ").to_string()
        })
        .unwrap();
    let orphan: Vec<Vec<u8>> = recs
        .into_iter()
        .filter(|r| !is(r, &format!("WARC-Record-ID: {refers}")))
        .collect();
    let err = fails("a-dangling-revisit", orphan);
    assert!(err.contains("refers to no response"), "{err}");
}

/// warcio's check and index over `dir`, when scripts/test.sh provides them.
pub(crate) fn warcio_check(dir: &Path) {
    match std::env::var_os("SIMCRAWL_WARC_CHECK") {
        Some(script) => {
            let out = std::process::Command::new("bash")
                .arg(&script)
                .arg(dir)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "warcio check of {} failed:\n{}{}",
                dir.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        None => eprintln!("SKIPPED warcio check: SIMCRAWL_WARC_CHECK is not set (scripts/test.sh sets it)"),
    }
}

fn article(seed: u64) -> String {
    gibberish(seed, 220)
}

/// A site with one of each: a kept page, a byte-identical copy, a near
/// copy, a redirect, a 404, a page robots.txt forbids.
fn site() -> Server {
    Server::start(|req| {
        let links: Vec<String> = ["/a", "/copy", "/old", "/missing", "/private/x", "/b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        match req.path.as_str() {
            "/robots.txt" => Reply::text("User-agent: *\nDisallow: /private\n"),
            "/" => Reply::html(page("Home", &article(1), &links)),
            // The near copy is linked from them only: it is fetched after
            // one of them is judged.
            "/a" | "/copy" => Reply::html(page("Story A", &article(2), &["/near".to_string()])),
            "/near" => Reply::html(page(
                "Story A",
                &article(2).replacen("ka", "kb", 1).replacen("lo", "lu", 1),
                &["/near".to_string()],
            )),
            "/old" => Reply::Redirect {
                status: 301,
                location: "/b".into(),
            },
            "/b" => Reply::html(page("Story B", &article(3), &[])),
            "/private/x" => Reply::html(page("Private", &article(4), &[])),
            // Not the default 404 body, which /sitemap.xml gets (a revisit
            // of the first 404 archived).
            "/missing" => Reply::Body {
                status: 404,
                content_type: "text/plain; charset=utf-8",
                body: "no such page".into(),
            },
            _ => Reply::status(404),
        }
    })
}

fn warc_crawl(root: &Path, server: &Server, output: &str) -> (Dirs, PathBuf) {
    let warc = root.join("warc");
    let extra = format!(
        "\n[output]\nwarc_dir = {:?}\n{output}",
        warc.display().to_string()
    );
    let dirs = site_crawl(root, &format!("{}/", server.base()), 4, &extra);
    (dirs, warc)
}

/// The one response or revisit record of each path, and the records of
/// every other kind, by path.
fn by_path(records: &[Record]) -> BTreeMap<String, Vec<&Record>> {
    let mut m: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.kind() != "warcinfo") {
        m.entry(r.uri_path()).or_default().push(r);
    }
    m
}

fn kinds(rs: &[&Record]) -> Vec<String> {
    rs.iter().map(|r| r.kind().to_string()).collect()
}

#[test]
fn a_warc_crawl_archives_every_exchange_its_copies_as_revisits_and_verdicts() {
    let server = site();
    let dir = crate::support::tempdir("warc");
    let (dirs, warc) = warc_crawl(dir.path(), &server, "");
    dirs.run_ok(Duration::from_secs(60));
    let records = read_set(&warc);
    let m = by_path(&records);
    let ids: BTreeMap<&str, &Record> = records.iter().map(|r| (r.get("WARC-Record-ID"), r)).collect();

    // The verdicts the archive must carry.
    let dups: BTreeMap<String, String> = dirs
        .duplicates()
        .iter()
        .map(|d| (path_of(field(d, "url")), path_of(field(d, "duplicate_of"))))
        .collect();
    // Of the byte-identical pair, the page judged first is kept (k); the
    // other (c) is its copy, and so is the near copy.
    let (k, c) = match dups.get("/copy") {
        Some(_) => ("/a", "/copy"),
        None => ("/copy", "/a"),
    };
    assert_eq!(dups.get(c).map(String::as_str), Some(k), "{dups:?}");
    assert_eq!(dups.get("/near").map(String::as_str), Some(k), "{dups:?}");

    // Exchanges that are not pages: robots.txt, the redirect hop, the 404.
    assert_eq!(kinds(&m["/robots.txt"]), ["request", "response"]);
    let hop = m["/old"][1];
    assert!(
        hop.block.starts_with(b"HTTP/1.1 301 Moved Permanently\r\n"),
        "{hop:?}"
    );
    assert_eq!(kinds(&m["/missing"]), ["request", "response"]);
    assert!(m["/missing"][1].block.starts_with(b"HTTP/1.1 404 Not Found\r\n"));
    assert_eq!(m["/missing"][1].payload(), b"no such page");
    // Never requested: nothing archived.
    assert!(!m.contains_key("/private/x"), "{:?}", m.keys());

    // Kept pages: request and response, the payload as served.
    assert_eq!(kinds(&m[k]), ["request", "response"]);
    let a = m[k][1];
    assert_eq!(
        a.payload(),
        page("Story A", &article(2), &["/near".to_string()]).as_bytes()
    );
    assert_eq!(a.get("WARC-IP-Address"), "127.0.0.1");
    assert_eq!(a.get("Content-Type"), "application/http; msgtype=response");
    // The byte-identical copy: a revisit of /a's response, and its verdict.
    assert_eq!(kinds(&m[c]), ["request", "revisit", "metadata"]);
    let rv = m[c][1];
    assert_eq!(
        rv.get("WARC-Profile"),
        "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
    );
    assert_eq!(rv.get("WARC-Refers-To-Target-URI"), a.get("WARC-Target-URI"));
    assert_eq!(rv.get("WARC-Refers-To-Date"), a.get("WARC-Date"));
    assert_eq!(rv.get("WARC-Refers-To"), a.get("WARC-Record-ID"));
    assert_eq!(rv.get("WARC-Payload-Digest"), a.get("WARC-Payload-Digest"));
    assert!(rv.payload().is_empty(), "a revisit holds the HTTP head only");
    let note = String::from_utf8(m[c][2].block.clone()).unwrap();
    assert!(
        note.contains("simcrawl-duplicate-of: ") && note.contains(&format!("{k}\r\n")),
        "{note}"
    );
    assert_eq!(m[c][2].get("WARC-Concurrent-To"), rv.get("WARC-Record-ID"));
    // The near copy keeps its response, with its verdict.
    assert_eq!(kinds(&m["/near"]), ["request", "response", "metadata"]);
    let note = String::from_utf8(m["/near"][2].block.clone()).unwrap();
    assert!(
        (note.contains("simcrawl-tier: title\r\n") || note.contains("simcrawl-tier: content\r\n"))
            && note.contains("simcrawl-similarity: ")
            && note.contains("simcrawl-basis: main\r\n"),
        "{note}"
    );
    // Every request and metadata record points at a record of the set.
    for r in &records {
        if matches!(r.kind(), "request" | "metadata") {
            let to = r.get("WARC-Concurrent-To");
            assert!(ids.contains_key(to), "{} names no record: {r:?}", to);
        }
    }
    warcio_check(&warc);
    warcio_check_fails_on_broken_copies(&warc, dir.path());
    cdxj_check(&warc);

    // The setting for archives of unique content: a near copy leaves only
    // its verdict.
    let dir2 = crate::support::tempdir("warc");
    let (dirs2, warc2) = warc_crawl(dir2.path(), &server, "warc_near_duplicates = \"metadata\"\n");
    dirs2.run_ok(Duration::from_secs(60));
    let records2 = read_set(&warc2);
    let m2 = by_path(&records2);
    let copy_of_a = dirs2
        .duplicates()
        .iter()
        .any(|d| path_of(field(d, "url")) == "/copy");
    let (k2, c2) = if copy_of_a {
        ("/a", "/copy")
    } else {
        ("/copy", "/a")
    };
    assert_eq!(kinds(&m2["/near"]), ["metadata"]);
    assert_eq!(kinds(&m2[c2]), ["metadata"]);
    assert_eq!(kinds(&m2[k2]), ["request", "response"]);
    warcio_check(&warc2);
}

const PAGES: usize = 300;

/// PAGES pages in a chain of links; every 10th is a byte-identical copy of
/// the page before it.
fn big_site() -> Server {
    Server::start(|req| {
        let Some(i) = req.path.strip_prefix("/p/").and_then(|n| n.parse::<usize>().ok()) else {
            return Reply::status(404);
        };
        if i >= PAGES {
            return Reply::status(404);
        }
        // A little slow, so that a kill lands mid-crawl.
        std::thread::sleep(Duration::from_millis(5));
        let links: Vec<String> = (i + 1..(i + 4).min(PAGES)).map(|j| format!("/p/{j}")).collect();
        let seed = if i % 10 == 9 { i - 1 } else { i } as u64;
        Reply::html(page(
            &format!("Page {seed}"),
            &gibberish(100 + seed, 150),
            &links_of(seed as usize, &links),
        ))
    })
}

/// A copy must be byte-identical: its links are its original's.
fn links_of(seed: usize, mine: &[String]) -> Vec<String> {
    if seed % 10 == 8 {
        // The original of a copy links to the copy and past it.
        (seed + 1..(seed + 5).min(PAGES))
            .map(|j| format!("/p/{j}"))
            .collect()
    } else {
        mine.to_vec()
    }
}

/// The final response (or revisit) records of pages, by path: each page
/// the outputs name has exactly one.
fn page_records(records: &[Record]) -> BTreeMap<String, usize> {
    multiset(
        records
            .iter()
            .filter(|r| matches!(r.kind(), "response" | "revisit") && r.uri_path().starts_with("/p/"))
            .map(Record::uri_path),
    )
    .into_iter()
    .collect()
}

#[test]
fn a_warc_crawl_killed_twice_resumes_with_every_page_archived_once() {
    let server = big_site();
    let dir = crate::support::tempdir("warc");
    let warc = dir.path().join("warc");
    // Small files, so that the kills also land across rotations.
    let extra = format!(
        "\n[output]\nwarc_dir = {:?}\nwarc_max_bytes = 20000\n",
        warc.display().to_string()
    );
    let dirs = site_crawl(dir.path(), &format!("{}/p/0", server.base()), 4, &extra);
    for want in [PAGES / 5, PAGES / 2] {
        let mut child = dirs.spawn();
        dirs.wait_until(&mut child, Duration::from_secs(60), "the kill", || {
            dirs.kept_lines_now() >= want
        });
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
    }
    // A kill between a rotation and its index leaves a finished file
    // without one: the resume indexes it. A stale index of the newest file
    // (the one the checkpoint writes on, or one begun after it) goes.
    let files = warc_files(&warc);
    assert!(files.len() > 2, "the archive rotated before the kills");
    let cdxj = |p: &Path| {
        p.with_file_name(
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .replace(".warc.gz", ".cdxj"),
        )
    };
    let _ = std::fs::remove_file(cdxj(&files[0]));
    std::fs::write(cdxj(files.last().unwrap()), "stale 20000101000000 {}\n").unwrap();
    dirs.run_ok(Duration::from_secs(120));
    assert!(dirs.log().contains("resuming"), "{}", dirs.log());

    let kept = dirs.kept();
    let dups = dirs.duplicates();
    let pages: BTreeSet<String> = kept
        .iter()
        .chain(&dups)
        .map(|v| path_of(field(v, "url")))
        .collect();
    assert_eq!(pages.len(), PAGES, "every page once in the outputs");
    let records = read_set(&warc);
    assert!(warc_files(&warc).len() > 3, "the archive rotated");
    let archived = page_records(&records);
    for p in &pages {
        assert_eq!(
            archived.get(p),
            Some(&1),
            "{p}: {:?} final records",
            archived.get(p)
        );
    }
    assert_eq!(archived.len(), PAGES);
    // Of each pair of byte-identical pages, the one archived second (the
    // one judged a copy) is a revisit of the other, across the kills.
    let revisits: BTreeSet<String> = records
        .iter()
        .filter(|r| r.kind() == "revisit" && r.uri_path().starts_with("/p/"))
        .map(Record::uri_path)
        .collect();
    let dropped: BTreeSet<String> = dups.iter().map(|v| path_of(field(v, "url"))).collect();
    assert_eq!(dropped.len(), PAGES / 10, "{dropped:?}");
    assert_eq!(revisits, dropped);
    warcio_check(&warc);
    // The indexes name every final record once, and nothing cut.
    let lines = cdxj_check(&warc);
    let indexed = multiset(lines.iter().filter(|l| l.contains(")/p/")).map(|l| {
        let v: serde_json::Value = serde_json::from_str(l.splitn(3, ' ').nth(2).unwrap()).unwrap();
        path_of(v["url"].as_str().unwrap())
    }));
    assert_eq!(indexed.len(), PAGES);
    assert!(indexed.values().all(|n| *n == 1), "{indexed:?}");
}

/// The CDXJ index beside each WARC file, across rotations: one sorted line
/// per response and revisit, with the status of redirects and errors, the
/// `warc/revisit` type of the byte-identical copy, and (with
/// `SIMCRAWL_CDXJ_INDEXER`) the very lines cdxj-indexer writes.
#[test]
fn a_warc_crawl_writes_a_cdxj_index_beside_each_file_as_cdxj_indexer_does() {
    let server = site();
    let dir = crate::support::tempdir("warc");
    let (dirs, warc) = warc_crawl(dir.path(), &server, "warc_max_bytes = 3000\n");
    dirs.run_ok(Duration::from_secs(60));
    let files = warc_files(&warc);
    assert!(files.len() > 2, "the archive rotated: {files:?}");
    let lines = cdxj_check(&warc);
    let json =
        |l: &String| -> serde_json::Value { serde_json::from_str(l.splitn(3, ' ').nth(2).unwrap()).unwrap() };
    let by: BTreeMap<String, Vec<serde_json::Value>> = lines.iter().fold(BTreeMap::new(), |mut m, l| {
        let v = json(l);
        m.entry(path_of(v["url"].as_str().unwrap())).or_default().push(v);
        m
    });
    let one = |p: &str, k: &str| by[p][0][k].as_str().unwrap().to_string();
    assert_eq!(one("/old", "status"), "301");
    assert_eq!(one("/missing", "status"), "404");
    assert_eq!(one("/missing", "mime"), "text/plain");
    assert_eq!(one("/robots.txt", "status"), "200");
    let revisits: Vec<&serde_json::Value> = by
        .values()
        .flatten()
        .filter(|v| v["mime"] == "warc/revisit")
        .collect();
    assert!(!revisits.is_empty(), "{lines:#?}");
    // The key of a page: host reversed, port, then the path.
    let port = server.base().rsplit(':').next().unwrap().to_string();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("1,0,0,127:{port})/b "))),
        "{lines:#?}"
    );
    // Not indexed: requests, warcinfo, verdicts.
    assert_eq!(
        lines.len(),
        read_set(&warc)
            .iter()
            .filter(|r| matches!(r.kind(), "response" | "revisit"))
            .count()
    );
    warcio_check(&warc);
}

/// `crawl dedup --input ARGS --out OUT [--data-dir DATA]`.
fn dedup(inputs: &[&Path], out: &Path, data: Option<&Path>) -> std::process::Output {
    let mut c = std::process::Command::new(crate::support::CRAWL);
    c.arg("dedup").arg("--input");
    for i in inputs {
        c.arg(i);
    }
    c.arg("--out").arg(out).env("NO_COLOR", "1");
    if let Some(d) = data {
        c.arg("--data-dir").arg(d);
    }
    c.output().unwrap()
}

fn paths_of(lines: &[serde_json::Value], key: &str) -> BTreeSet<String> {
    lines.iter().map(|v| path_of(field(v, key))).collect()
}

#[test]
fn crawl_dedup_of_a_crawls_archive_keeps_what_the_crawl_kept() {
    let server = site();
    let dir = crate::support::tempdir("warc");
    let (dirs, warc) = warc_crawl(dir.path(), &server, "");
    dirs.run_ok(Duration::from_secs(60));
    let crawl_kept: BTreeSet<String> = dirs
        .kept()
        .iter()
        .map(|v| {
            path_of(
                v.get("final_url")
                    .and_then(|u| u.as_str())
                    .unwrap_or(field(v, "url")),
            )
        })
        .collect();

    let out = dir.path().join("dedup");
    let r = dedup(&[&warc], &out, None);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let kept = crate::support::read_jsonl(&out.join("kept.jsonl"));
    let dups = crate::support::read_jsonl(&out.join("duplicates.jsonl"));
    assert_eq!(paths_of(&kept, "url"), crawl_kept);
    // Every line names its record and file; the byte-identical copy (a
    // revisit record) is a copy of the page the crawl kept.
    for v in kept.iter().chain(&dups) {
        assert!(field(v, "record").starts_with("<urn:uuid:"), "{v}");
        assert!(field(v, "warc").ends_with(".warc.gz"), "{v}");
    }
    let dropped = paths_of(&dups, "url");
    assert!(
        dropped.contains("/near") && (dropped.contains("/copy") || dropped.contains("/a")),
        "{dups:?}"
    );
    // Not documents: robots.txt, the redirect hop, the 404.
    for p in ["/robots.txt", "/old", "/missing"] {
        assert!(!dropped.contains(p) && !paths_of(&kept, "url").contains(p), "{p}");
    }

    // The same archive uncompressed gives the same verdicts.
    let plain_dir = dir.path().join("plain");
    std::fs::create_dir_all(&plain_dir).unwrap();
    let plain = plain_dir.join("crawl.warc");
    let mut all = Vec::new();
    for f in warc_files(&warc) {
        flate2::read::MultiGzDecoder::new(std::fs::File::open(f).unwrap())
            .read_to_end(&mut all)
            .unwrap();
    }
    std::fs::write(&plain, all).unwrap();
    let out2 = dir.path().join("dedup-plain");
    let r = dedup(&[&plain], &out2, None);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let same = |f: &str| {
        let strip = |p: &Path| -> Vec<(String, String)> {
            crate::support::read_jsonl(&p.join(f))
                .iter()
                .map(|v| {
                    (
                        field(v, "url").to_string(),
                        v.get("duplicate_of").map(|d| d.to_string()).unwrap_or_default(),
                    )
                })
                .collect()
        };
        assert_eq!(strip(&out), strip(&out2), "{f}");
    };
    same("kept.jsonl");
    same("duplicates.jsonl");
}

#[test]
fn crawl_dedup_reads_wgets_warc_and_resumes_after_a_cut_file() {
    if std::process::Command::new("wget")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: wget is not installed (scripts/install-deps.sh installs it)");
        return;
    }
    // A site with two copies planted: an exact one and one with a line
    // changed; an image and a text file wget archives too.
    let server = Server::start(|req| {
        let links: Vec<String> = ["/u1", "/u2", "/u3", "/same", "/near", "/notes.txt"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        match req.path.as_str() {
            "/" => Reply::html(page("Home", &article(10), &links)),
            "/u1" | "/same" => Reply::html(page("One", &article(11), &[])),
            "/u2" => Reply::html(page("Two", &article(12), &[])),
            "/near" => Reply::html(page("Two", &format!("{} and a line more", article(12)), &[])),
            "/u3" => Reply::html(page("Three", &article(13), &[])),
            "/notes.txt" => Reply::text(article(14)),
            _ => Reply::status(404),
        }
    });
    let dir = crate::support::tempdir("warc");
    let st = std::process::Command::new("wget")
        .current_dir(dir.path())
        .args(["-q", "-r", "-l", "2", "--warc-file=site", "-P", "mirror"])
        .arg(format!("{}/", server.base()))
        .status()
        .unwrap();
    // wget exits 8 when a page answered 404 (robots.txt): the archive is whole.
    assert!(st.code().is_some_and(|c| c == 0 || c == 8), "wget: {st}");
    let wget_warc = dir.path().join("site.warc.gz");
    assert!(wget_warc.exists());
    warcio_check_file(&wget_warc);

    let out = dir.path().join("dedup");
    let r = dedup(&[&wget_warc], &out, None);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let kept = paths_of(&crate::support::read_jsonl(&out.join("kept.jsonl")), "url");
    let dups = crate::support::read_jsonl(&out.join("duplicates.jsonl"));
    let dropped = paths_of(&dups, "url");
    let want: BTreeSet<String> = ["/", "/u2", "/u3"].iter().map(|s| s.to_string()).collect();
    assert!(kept.is_superset(&want), "{kept:?}");
    assert_eq!(
        kept.len() + dropped.len(),
        6,
        "the six HTML pages, not the text file: {kept:?} {dropped:?}"
    );
    assert!(dropped.contains("/near"), "{dropped:?}");
    assert!(dropped.contains("/same") ^ dropped.contains("/u1"), "{dropped:?}");

    // A file cut in the middle of a record: a clear error naming it, the
    // records before it judged and committed; with the file whole again
    // the run resumes and judges each record once.
    let ours = dir.path().join("ours");
    std::fs::create_dir_all(&ours).unwrap();
    let ours_server = site();
    let (dirs, warc) = warc_crawl(&ours, &ours_server, "");
    dirs.run_ok(Duration::from_secs(60));
    let whole = warc_files(&warc).remove(0);
    let bytes = std::fs::read(&whole).unwrap();
    let inputs = dir.path().join("inputs");
    std::fs::create_dir_all(&inputs).unwrap();
    let first = inputs.join("a.warc.gz");
    let second = inputs.join("b.warc.gz");
    std::fs::copy(&wget_warc, &first).unwrap();
    std::fs::write(&second, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let data = dir.path().join("data");
    let out = dir.path().join("resumed");
    let r = dedup(&[&inputs], &out, Some(&data));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success(), "{err}");
    assert!(err.contains("b.warc.gz") && err.contains("unreadable"), "{err}");
    let before = crate::support::read_jsonl(&out.join("kept.jsonl")).len()
        + crate::support::read_jsonl(&out.join("duplicates.jsonl")).len();
    assert!(before >= 6, "the first file's pages are committed: {before}");
    std::fs::write(&second, &bytes).unwrap();
    let r = dedup(&[&inputs], &out, Some(&data));
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("resumed"),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let all: Vec<serde_json::Value> = crate::support::read_jsonl(&out.join("kept.jsonl"))
        .into_iter()
        .chain(crate::support::read_jsonl(&out.join("duplicates.jsonl")))
        .collect();
    let records = multiset(all.iter().map(|v| field(v, "record").to_string()));
    assert!(
        records.values().all(|&n| n == 1),
        "a record judged twice: {records:?}"
    );
    // Six pages of wget's, and the six pages of our crawl's archive.
    assert_eq!(
        records.len(),
        12,
        "{all:?}\n{:?}",
        crate::support::read_jsonl(&out.join("errors.jsonl"))
    );
}

/// warcio's check of one file, when scripts/test.sh provides it.
fn warcio_check_file(file: &Path) {
    if let Some(script) = std::env::var_os("SIMCRAWL_WARC_CHECK") {
        let out = std::process::Command::new("bash")
            .arg(&script)
            .arg(file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
