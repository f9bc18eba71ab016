//! The CDXJ index of a WARC file (`X.cdxj` beside `X.warc.gz`), in the
//! format of pywb and OpenWayback as `cdxj-indexer` writes it: one line per
//! `response`, `revisit` and `resource` record (and `metadata` record that
//! is not `application/warc-fields`),
//! `SURT-KEY TIMESTAMP {"url": …, "mime": …, "status": …, "digest": …,
//! "length": …, "offset": …, "filename": …}`, sorted, so that pywb's
//! binary search finds a URL in it and a collection's `indexes/` takes it
//! as it is.
//!
//! A file the crawl wrote whole is indexed from the lines its writer kept
//! ([`RecordLine`]: the same header bytes through the same parsers as a
//! reading back; reading back inflated the file again, 14% of the writer
//! thread's CPU in a `--warc` crawl). Any other file is read back, gzip
//! member by gzip member. `cdxj-indexer` is the reference: the e2e tests
//! compare our files with its output line for line (docs/WARC.md), the
//! unit tests every kept index with a reading back of its file.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::bytes::Regex;
use thiserror::Error;

/// Why a WARC file could not be indexed.
#[derive(Debug, Error)]
pub enum IndexError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: the record at byte {offset} is not a WARC record: {why}")]
    Record { path: PathBuf, offset: u64, why: String },
    #[error("cannot write the index {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// The index of `warc` (`X.warc.gz` -> `X.cdxj`; any other name gets
/// `.cdxj` appended).
pub fn index_path(warc: &Path) -> PathBuf {
    let name = warc
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".warc.gz").unwrap_or(&name);
    warc.with_file_name(format!("{stem}.cdxj"))
}

/// Indexes the WARC file `warc` into its [`index_path`], atomically (a
/// temporary file renamed over it after an fsync, then the directory
/// synced): an index file, once there, is whole.
pub fn write_index(warc: &Path) -> Result<PathBuf, IndexError> {
    write_sorted(warc, &index_lines(warc)?)
}

/// Writes `lines` (as a writer kept them) as the index of `warc`, as
/// [`write_index`] does; sorted and deduplicated in place, so more may be
/// appended and the index written again.
pub fn write_index_lines(warc: &Path, lines: &mut Vec<String>) -> Result<PathBuf, IndexError> {
    lines.sort_unstable();
    lines.dedup();
    write_sorted(warc, lines)
}

/// Writes the sorted `lines` as the index of `warc` (see [`write_index`]).
fn write_sorted(warc: &Path, lines: &[String]) -> Result<PathBuf, IndexError> {
    let path = index_path(warc);
    let tmp = path.with_extension("cdxj.tmp");
    let write = |p: &Path| -> std::io::Result<()> {
        let mut f = std::io::BufWriter::new(File::create(p)?);
        for l in lines {
            f.write_all(l.as_bytes())?;
            f.write_all(b"\n")?;
        }
        f.into_inner().map_err(|e| e.into_error())?.sync_all()
    };
    write(&tmp)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .and_then(|()| match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => File::open(dir)?.sync_all(),
            _ => Ok(()),
        })
        .map_err(|source| IndexError::Write {
            path: path.clone(),
            source,
        })?;
    Ok(path)
}

/// Removes the index of `warc` if there is one (durably: before the file
/// is cut or written again, so that no index outlives the records it
/// names).
pub fn remove_index(warc: &Path) -> std::io::Result<()> {
    let path = index_path(warc);
    match std::fs::remove_file(&path) {
        Ok(()) => match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => File::open(dir)?.sync_all(),
            _ => Ok(()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Counts the compressed bytes its gzip decoders consume: a record's
/// offset and length are those of its gzip member.
struct Counted<R> {
    inner: R,
    pos: u64,
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.inner.consume(n);
        self.pos += n as u64;
    }
}

/// A header line longer than this ends the indexing with an error (a
/// file that is no WARC file, not a reason to buffer without bound).
const MAX_LINE: u64 = 64 * 1024;

/// What an index line needs of a record.
#[derive(Debug, Default)]
struct Head {
    kind: Option<String>,
    uri: Option<String>,
    date: Option<String>,
    payload_digest: Option<String>,
    content_type: Option<String>,
}

/// The sorted index lines of the WARC file `warc` (one gzip member per
/// record, as every writer of `.warc.gz` for replay does).
pub fn index_lines(warc: &Path) -> Result<Vec<String>, IndexError> {
    let read_err = |source| IndexError::Read {
        path: warc.to_path_buf(),
        source,
    };
    let filename = warc
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = File::open(warc).map_err(read_err)?;
    let mut input = Counted {
        inner: BufReader::with_capacity(1 << 16, file),
        pos: 0,
    };
    let mut lines = Vec::new();
    loop {
        let offset = input.pos;
        if input.fill_buf().map_err(read_err)?.is_empty() {
            break;
        }
        let bad = |why: String| IndexError::Record {
            path: warc.to_path_buf(),
            offset,
            why,
        };
        let mut rec = BufReader::new(flate2::bufread::GzDecoder::new(&mut input));
        let head = read_head(&mut rec).map_err(|e| bad(e.to_string()))?;
        let http = match head.kind.as_deref().unwrap_or_default() {
            "response" | "revisit"
                if head
                    .content_type
                    .as_deref()
                    .is_some_and(|t| t.starts_with("application/http")) =>
            {
                read_http_head(&mut rec).map_err(|e| bad(e.to_string()))?
            }
            _ => None,
        };
        // The rest of the member, to its end (and the gzip trailer's check).
        std::io::copy(&mut rec, &mut std::io::sink()).map_err(|e| bad(e.to_string()))?;
        drop(rec);
        let length = input.pos - offset;
        if let Some(line) = line_of(&head, http.as_ref(), length, offset, &filename) {
            lines.push(line);
        }
    }
    lines.sort_unstable();
    lines.dedup();
    Ok(lines)
}

/// The index line of a record, or `None` for a record the index leaves
/// out (cdxj-indexer's default: requests, warcinfo, and metadata or
/// resource records of `application/warc-fields`).
fn line_of(head: &Head, http: Option<&HttpHead>, length: u64, offset: u64, filename: &str) -> Option<String> {
    line_start(head, http).map(|l| l.finish(length, offset, filename))
}

/// A record's index line but for where it lies (its gzip member's length
/// and offset, its file): what a writer knows before it appends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordLine(String);

impl RecordLine {
    /// The line of a `response` or `revisit` record of `kind` whose WARC
    /// header names `uri`, `date` and `payload_digest` and whose block
    /// begins with the HTTP head `http` (ending in its blank line); `None`
    /// for a kind the index leaves out; an error where a reading back
    /// fails on the same bytes (a header line over 64 KiB).
    pub fn of(
        kind: &str,
        uri: &str,
        date: &str,
        payload_digest: &str,
        http: &[u8],
    ) -> std::io::Result<Option<RecordLine>> {
        let head = Head {
            kind: Some(kind.to_string()),
            uri: Some(uri.to_string()),
            date: Some(date.to_string()),
            payload_digest: Some(payload_digest.to_string()),
            content_type: Some("application/http; msgtype=response".to_string()),
        };
        // The same parser as a reading back: a block that is no HTTP head
        // gives the line without status and mime, as there.
        let http = read_http_head(&mut &http[..])?;
        Ok(line_start(&head, http.as_ref()))
    }

    /// The whole line, for the record appended at `offset` of `filename`
    /// as a gzip member of `length` bytes.
    pub fn finish(mut self, length: u64, offset: u64, filename: &str) -> String {
        let mut field = |k: &str, v: &str| {
            if !self.0.ends_with('{') {
                self.0.push_str(", ");
            }
            self.0.push('"');
            self.0.push_str(k);
            self.0.push_str("\": ");
            push_json_str(&mut self.0, v);
        };
        field("length", &length.to_string());
        field("offset", &offset.to_string());
        field("filename", filename);
        self.0.push('}');
        self.0
    }
}

/// [`line_of`] up to the record's place, without the closing brace.
fn line_start(head: &Head, http: Option<&HttpHead>) -> Option<RecordLine> {
    let kind = head.kind.as_deref().unwrap_or_default();
    match kind {
        "response" | "revisit" => {}
        "resource" | "metadata" if head.content_type.as_deref() != Some("application/warc-fields") => {}
        _ => return None,
    }
    let mime = if kind == "revisit" {
        Some("warc/revisit".to_string())
    } else if kind == "response" {
        http.and_then(|h| h.content_type.as_deref()).map(mime_of)
    } else {
        head.content_type.as_deref().map(mime_of)
    };
    let status = http.map(|h| h.status.clone());
    let mut json = String::from("{");
    let mut field = |k: &str, v: Option<&str>| {
        if let Some(v) = v {
            if json.len() > 1 {
                json.push_str(", ");
            }
            json.push('"');
            json.push_str(k);
            json.push_str("\": ");
            push_json_str(&mut json, v);
        }
    };
    field("url", head.uri.as_deref());
    field("mime", mime.as_deref());
    field("status", status.as_deref());
    field("digest", head.payload_digest.as_deref());
    let key = surt(head.uri.as_deref().unwrap_or_default());
    Some(RecordLine(format!(
        "{key} {} {json}",
        timestamp(head.date.as_deref().unwrap_or_default())
    )))
}

/// The media type of a Content-Type value: what comes before its first
/// `;` or white space (cdxj-indexer's rule; not lowercased).
fn mime_of(v: &str) -> String {
    v.split(|c: char| c == ';' || c.is_whitespace())
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// `YYYYmmddHHMMSS` of a WARC-Date (its first 14 digits).
fn timestamp(date: &str) -> String {
    let mut t: String = date.chars().filter(char::is_ascii_digit).take(14).collect();
    while t.len() < 14 {
        t.push('0');
    }
    t
}

/// A JSON string as Python's `json.dumps` writes it (`ensure_ascii`: every
/// character past ASCII as `\uXXXX`), so that lines compare byte for byte
/// with cdxj-indexer's and sort as pywb's do.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if !(' '..='~').contains(&c) => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// One line, at most [`MAX_LINE`] bytes; `None` at the end of the stream.
fn read_line(r: &mut impl BufRead) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let n = r.by_ref().take(MAX_LINE).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if !line.ends_with(b"\n") && n as u64 == MAX_LINE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "a header line is longer than 64 KiB",
        ));
    }
    while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        line.pop();
    }
    Ok(Some(line))
}

fn invalid(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string())
}

/// A record's WARC header block (its block follows in `r`).
fn read_head(r: &mut impl BufRead) -> std::io::Result<Head> {
    let first = loop {
        match read_line(r)? {
            None => return Err(invalid("an empty gzip member")),
            Some(l) if l.iter().all(u8::is_ascii_whitespace) => continue,
            Some(l) => break l,
        }
    };
    if !first.starts_with(b"WARC/") {
        return Err(invalid("it does not begin with a WARC version line"));
    }
    let mut h = Head::default();
    loop {
        let Some(line) = read_line(r)? else {
            return Err(invalid("the member ends inside the record's header block"));
        };
        if line.is_empty() {
            return Ok(h);
        }
        let line = String::from_utf8_lossy(&line);
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        // The first of a repeated field counts (warcio's `get_header`).
        let slot = match k.trim().to_ascii_lowercase().as_str() {
            "warc-type" => &mut h.kind,
            "warc-target-uri" => &mut h.uri,
            "warc-date" => &mut h.date,
            "warc-payload-digest" => &mut h.payload_digest,
            "content-type" => &mut h.content_type,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(v.trim().to_string());
        }
    }
}

/// What an index line needs of an HTTP response head.
#[derive(Debug)]
struct HttpHead {
    status: String,
    content_type: Option<String>,
}

/// The status and Content-Type of the HTTP head at the start of a
/// record's block; `None` when the block does not start with one.
fn read_http_head(r: &mut impl BufRead) -> std::io::Result<Option<HttpHead>> {
    let Some(status_line) = read_line(r)? else {
        return Ok(None);
    };
    let status_line = header_text(&status_line);
    // "HTTP/1.1 200 OK": the code is the word after the protocol.
    let Some((_, rest)) = status_line.split_once(' ') else {
        return Ok(None);
    };
    let status = rest
        .trim_start()
        .split(' ')
        .next()
        .unwrap_or_default()
        .to_string();
    let mut content_type = None;
    while let Some(line) = read_line(r)? {
        if line.is_empty() {
            break;
        }
        let line = header_text(&line);
        if let Some((k, v)) = line.split_once(':')
            && content_type.is_none()
            && k.trim().eq_ignore_ascii_case("content-type")
        {
            content_type = Some(v.trim().to_string());
        }
    }
    Ok(Some(HttpHead { status, content_type }))
}

/// An HTTP header line as text: UTF-8 when it is, else ISO-8859-1 (what
/// warcio reads headers as).
fn header_text(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => b.iter().map(|&c| char::from(c)).collect(),
    }
}

// ---------------------------------------------------------------------------
// SURT

/// The SURT key of `url` as Python's `surt.surt(url)` makes it (Internet
/// Archive canonicalization: lowercase, no `www.`, no default port, no
/// fragment, no session ids, sorted query, host labels reversed and joined
/// by `,` and ended by `)`), which is the key pywb and cdxj-indexer use.
/// No maintained crate does this: `surt-rs` 0.1 keeps fragments and does
/// not lowercase paths, so its keys are not pywb's.
///
/// A URL surt cannot take (an invalid port) is its own key, as
/// cdxj-indexer does.
pub fn surt(url: &str) -> String {
    surt_bytes(url.as_bytes())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_else(|| url.to_string())
}

fn surt_bytes(raw: &[u8]) -> Option<Vec<u8>> {
    let mut url: Vec<u8> = raw
        .trim_ascii()
        .iter()
        .copied()
        .filter(|b| !matches!(b, b'\n' | b'\r' | b'\t'))
        .collect();
    if url.is_empty() {
        return Some(b"-".to_vec());
    }
    if url.starts_with(b"filedesc") {
        return Some(url);
    }
    static HAS_SCHEME: LazyLock<Regex> = LazyLock::new(|| re(r"(?-u)^[a-zA-Z][a-zA-Z0-9+\-.]*:"));
    if !HAS_SCHEME.is_match(&url) {
        url.splice(0..0, b"http://".iter().copied());
    }
    // `http://http://x` is `http://x`.
    static PROTOCOLS: LazyLock<Regex> = LazyLock::new(|| re(r"(?-u)^(https?://)+"));
    if let Some(m) = PROTOCOLS.captures(&url)
        && let (Some(all), Some(last)) = (m.get(0), m.get(1))
    {
        let (end, keep) = (all.end(), last.as_bytes().to_vec());
        url.splice(0..end, keep);
    }
    static SPLIT: LazyLock<Regex> = LazyLock::new(|| {
        re(r"(?s-u)^(([a-zA-Z][a-zA-Z0-9+.-]*):)?((//([^/?#]*))?([^?#]*)(\?([^#]*))?)?(#(.*))?$")
    });
    let caps = SPLIT.captures(&url)?;
    let group = |i: usize| caps.get(i).map_or(&b""[..], |m| m.as_bytes());
    let scheme = group(2).to_vec();
    let mut netloc = group(5);
    while let Some(n) = netloc.strip_suffix(b":") {
        netloc = n;
    }
    let (mut host, port) = host_and_port(netloc)?;
    let mut path = Some(group(6).to_vec()).filter(|p| !p.is_empty());
    let mut query = Some(group(8).to_vec()).filter(|q| !q.is_empty());
    if scheme.starts_with(b"http")
        && host.is_none()
        && let Some(p) = &path
    {
        let p = trim_start_slashes(p);
        let (h, rest) = match p.iter().position(|&b| b == b'/') {
            Some(i) => (p[..i].to_vec(), p[i + 1..].to_vec()),
            None => (p.to_vec(), Vec::new()),
        };
        host = Some(h);
        let mut np = b"/".to_vec();
        np.extend(rest);
        path = Some(np);
    }

    // GoogleURLCanonicalizer.
    if let Some(q) = &query {
        query = Some(escape_once(&unescape_repeatedly(q)));
    }
    let mut host = host.filter(|h| !h.is_empty());
    if let Some(h) = &host {
        let mut h = unescape_repeatedly(h);
        if !h.is_ascii()
            && let Ok(url::Host::Domain(d)) = url::Host::parse(&String::from_utf8_lossy(&h))
        {
            h = d.into_bytes();
        }
        let h = replace_double_dots(&h);
        let h = trim_dots(&h);
        host = Some(match ip_format(h) {
            Some(ip) => ip.into_bytes(),
            None => escape_once(&h.to_ascii_lowercase()),
        });
    }
    let mut path = path.map(|p| unescape_repeatedly(&p));
    if host.as_ref().is_some_and(|h| !h.is_empty()) {
        path = Some(normalize_path(path.as_deref().unwrap_or_default()));
    }
    let path = path.map(|p| escape_once(&p));

    // IAURLCanonicalizer.
    let host = host.filter(|h| !h.is_empty()).map(|h| {
        let h = h.to_ascii_lowercase();
        if scheme == b"dns" {
            return h;
        }
        static WWW: LazyLock<Regex> = LazyLock::new(|| re(r"(?-u)^www[0-9]*\."));
        match WWW.find(&h) {
            Some(m) => h[m.end()..].to_vec(),
            None => h,
        }
    });
    let default_port = match scheme.to_ascii_lowercase().as_slice() {
        b"http" => Some(80),
        b"https" => Some(443),
        _ => None,
    };
    let port = port.filter(|p| Some(*p) != default_port);
    let path = path.filter(|p| !p.is_empty()).map(|p| {
        let mut p = strip_path_session_id(&p.to_ascii_lowercase());
        if p.len() > 1 && p.ends_with(b"/") {
            p.pop();
        }
        p
    });
    let query = query
        .map(|q| alpha_reorder_query(&strip_query_session_id(&q).to_ascii_lowercase()))
        .filter(|q| !q.is_empty());

    Some(surt_key(
        &scheme,
        host.as_deref(),
        port,
        path.as_deref(),
        query.as_deref(),
    ))
}

/// The SURT key from the canonicalized parts of a URL: host labels
/// reversed and joined by `,`, ended by `)` (the scheme instead when there
/// is no host), then the path and the query.
fn surt_key(
    scheme: &[u8],
    host: Option<&[u8]>,
    port: Option<u16>,
    path: Option<&[u8]>,
    query: Option<&[u8]>,
) -> Vec<u8> {
    let mut s = Vec::new();
    match host {
        Some(h) => {
            let mut labels: Vec<&[u8]> = h.split(|&b| b == b'.').collect();
            labels.reverse();
            s.extend(labels.join(&b","[..]));
            if let Some(p) = port {
                s.extend(format!(":{p}").into_bytes());
            }
            s.push(b')');
        }
        None => {
            s.extend(scheme);
            s.push(b':');
        }
    }
    match path {
        Some(p) => s.extend(p),
        None if query.is_some() => s.push(b'/'),
        None => {}
    }
    if let Some(q) = query {
        s.push(b'?');
        s.extend(q);
    }
    s
}

/// A regex of this module's constant patterns.
fn re(pattern: &str) -> Regex {
    match Regex::new(pattern) {
        Ok(r) => r,
        // The patterns are constants, checked by the tests.
        Err(e) => unreachable!("invalid constant pattern {pattern}: {e}"),
    }
}

fn trim_start_slashes(p: &[u8]) -> &[u8] {
    let i = p.iter().position(|&b| b != b'/').unwrap_or(p.len());
    &p[i..]
}

/// Python's `urlsplit` host name (lowercased, no brackets, no user) and
/// port of a network location; `None` for a port it refuses.
#[allow(clippy::type_complexity)]
fn host_and_port(netloc: &[u8]) -> Option<(Option<Vec<u8>>, Option<u16>)> {
    let hostinfo = match netloc.iter().rposition(|&b| b == b'@') {
        Some(i) => &netloc[i + 1..],
        None => netloc,
    };
    let (host, port) = match hostinfo.iter().position(|&b| b == b'[') {
        Some(i) => {
            let bracketed = &hostinfo[i + 1..];
            let (h, after) = match bracketed.iter().position(|&b| b == b']') {
                Some(j) => (&bracketed[..j], &bracketed[j + 1..]),
                None => (bracketed, &b""[..]),
            };
            let port = match after.iter().position(|&b| b == b':') {
                Some(k) => &after[k + 1..],
                None => &b""[..],
            };
            (h, port)
        }
        None => match hostinfo.iter().position(|&b| b == b':') {
            Some(i) => (&hostinfo[..i], &hostinfo[i + 1..]),
            None => (hostinfo, &b""[..]),
        },
    };
    let port = if port.is_empty() {
        None
    } else if port.iter().all(u8::is_ascii_digit) {
        // Python refuses a port past 65535 (ValueError).
        let p: u32 = std::str::from_utf8(port).ok()?.parse().ok()?;
        Some(u16::try_from(p).ok()?)
    } else {
        return None;
    };
    let host = (!host.is_empty()).then(|| host.to_ascii_lowercase());
    Some((host, port))
}

/// Python's `bytes.replace(b'..', b'.')`: one pass, left to right.
fn replace_double_dots(h: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(h.len());
    let mut i = 0;
    while i < h.len() {
        if h[i..].starts_with(b"..") {
            out.push(b'.');
            i += 2;
        } else {
            out.push(h[i]);
            i += 1;
        }
    }
    out
}

fn trim_dots(h: &[u8]) -> &[u8] {
    let start = h.iter().position(|&b| b != b'.').unwrap_or(h.len());
    let end = h.iter().rposition(|&b| b != b'.').map_or(start, |i| i + 1);
    &h[start..end.max(start)]
}

/// A host written as a number (`3232235777`, `192.168.1`, `0300.0250.1.1`)
/// as its dotted quad, as surt's `attemptIPFormats` (inet_aton) reads it.
fn ip_format(h: &[u8]) -> Option<String> {
    if !h.is_empty() && h.iter().all(u8::is_ascii_digit) {
        // All digits: the number modulo 2^32.
        let mut n: u32 = 0;
        for d in h {
            n = n.wrapping_mul(10).wrapping_add(u32::from(d - b'0'));
        }
        return Some(std::net::Ipv4Addr::from(n).to_string());
    }
    static DECIMAL: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?-u)^([1-9][0-9]*)(\.[0-9]+)?(\.[0-9]+)?(\.[0-9]+)?$"));
    static OCTAL: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?-u)^(0[0-7]*)(\.[0-7]+)?(\.[0-7]+)?(\.[0-7]+)?$"));
    if !DECIMAL.is_match(h) && !OCTAL.is_match(h) {
        return None;
    }
    inet_aton(h).map(|ip| ip.to_string())
}

/// inet_aton of digits and dots: 1 to 4 parts, octal with a leading 0,
/// the last part filling the bytes left.
fn inet_aton(h: &[u8]) -> Option<std::net::Ipv4Addr> {
    let parts: Vec<&[u8]> = h.split(|&b| b == b'.').collect();
    let mut nums = Vec::with_capacity(parts.len());
    for p in &parts {
        let s = std::str::from_utf8(p).ok()?;
        let n = if s.len() > 1 && s.starts_with('0') {
            u64::from_str_radix(&s[1..], 8).ok()?
        } else {
            s.parse::<u64>().ok()?
        };
        nums.push(n);
    }
    let (last, init) = nums.split_last()?;
    if init.iter().any(|&n| n > 255) {
        return None;
    }
    let room = 8 * (4 - init.len() as u32);
    if *last >= 1u64 << room {
        return None;
    }
    let mut v: u64 = 0;
    for (i, n) in init.iter().enumerate() {
        v |= n << (24 - 8 * i);
    }
    v |= last;
    u32::try_from(v).ok().map(std::net::Ipv4Addr::from)
}

/// `%XX` decoded until nothing changes (Python's `unquote_to_bytes`,
/// repeated).
fn unescape_repeatedly(s: &[u8]) -> Vec<u8> {
    let mut cur = s.to_vec();
    loop {
        let next = unquote(&cur);
        if next == cur {
            return cur;
        }
        cur = next;
    }
}

fn unquote(s: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%'
            && i + 2 < s.len()
            && let (Some(a), Some(b)) = (hex(s[i + 1]), hex(s[i + 2]))
        {
            out.push((a * 16 + b) as u8);
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// Every byte outside 0x21..0x7e, and `#` and `%`, as `%XX` (surt's
/// `escapeOnce`: `quote` with most punctuation safe).
fn escape_once(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for &b in s {
        if b <= 0x20 || b >= 0x7f || b == b'#' || b == b'%' {
            out.extend(format!("%{b:02X}").into_bytes());
        } else {
            out.push(b);
        }
    }
    out
}

/// `.` and `..` segments resolved, empty segments dropped (but a trailing
/// one), as surt's `normalizePath`.
fn normalize_path(path: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        return b"/".to_vec();
    }
    let mut kept: Vec<&[u8]> = Vec::new();
    for p in path.split(|&b| b == b'/').skip(1) {
        match p {
            b"." => {}
            b".." if !kept.is_empty() => {
                kept.pop();
            }
            p => kept.push(p),
        }
    }
    let mut out = b"/".to_vec();
    if let Some((last, init)) = kept.split_last() {
        for p in init.iter().filter(|p| !p.is_empty()) {
            out.extend(*p);
            out.push(b'/');
        }
        out.extend(*last);
    }
    out
}

fn strip_path_session_id(path: &[u8]) -> Vec<u8> {
    static PATTERNS: LazyLock<[Regex; 2]> = LazyLock::new(|| {
        [
            re(r"(?i-u)^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^\?]+\.aspx.*)$"),
            re(r"(?i-u)^(.*/)(\([0-9a-z]{24}\)/)([^\?]+\.aspx.*)$"),
        ]
    });
    let mut p = path.to_vec();
    for pattern in PATTERNS.iter() {
        if let Some(c) = pattern.captures(&p) {
            let mut next = c.get(1).map_or(&b""[..], |m| m.as_bytes()).to_vec();
            next.extend(c.get(3).map_or(&b""[..], |m| m.as_bytes()));
            p = next;
        }
    }
    p
}

fn strip_query_session_id(query: &[u8]) -> Vec<u8> {
    static PATTERNS: LazyLock<[Regex; 5]> = LazyLock::new(|| {
        [
            re(r"(?i-u)^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$"),
            re(r"(?i-u)^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$"),
            re(r"(?i-u)^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$"),
            re(r"(?i-u)^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$"),
            re(r"(?i-u)^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$"),
        ]
    });
    let mut q = query.to_vec();
    for pattern in PATTERNS.iter() {
        if let Some(c) = pattern.captures(&q) {
            let mut next = c.get(1).map_or(&b""[..], |m| m.as_bytes()).to_vec();
            if let Some(rest) = c.get(2).filter(|m| !m.as_bytes().is_empty()) {
                next.extend(rest.as_bytes());
            }
            q = next;
        }
    }
    q
}

/// The query's arguments sorted (by name, then value; a name without `=`
/// before the same name with one), as surt's `alphaReorderQuery`.
fn alpha_reorder_query(q: &[u8]) -> Vec<u8> {
    if q.len() <= 1 {
        return q.to_vec();
    }
    let mut args: Vec<(&[u8], Option<&[u8]>)> = q
        .split(|&b| b == b'&')
        .map(|a| match a.iter().position(|&b| b == b'=') {
            Some(i) => (&a[..i], Some(&a[i + 1..])),
            None => (a, None),
        })
        .collect();
    args.sort();
    let mut out = Vec::with_capacity(q.len());
    for (i, (k, v)) in args.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        out.extend(*k);
        if let Some(v) = v {
            out.push(b'=');
            out.extend(*v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Keys Python's `surt` 0.3.1 gives (`surt.surt(url)`, the function
    /// cdxj-indexer and pywb call), including its own README's examples.
    #[test]
    fn surt_keys_are_python_surts() {
        let cases = [
            ("http://www.archive.org/", "org,archive)/"),
            ("http://archive.org/goo/?a=2&b&a=1", "org,archive)/goo?a=1&a=2&b"),
            ("http://archive.org/goo/?", "org,archive)/goo"),
            ("http://archive.org/goo/?b&a", "org,archive)/goo?a&b"),
            ("http://archive.org/goo/?a=1&a", "org,archive)/goo?a&a=1"),
            (
                "http://www.example.com/Path/To/Page.html?B=2&a=1#frag",
                "com,example)/path/to/page.html?a=1&b=2",
            ),
            ("https://www.example.com:443/", "com,example)/"),
            ("http://example.com:8080/x/", "com,example:8080)/x"),
            ("http://127.0.0.1:8080/p/1", "1,0,0,127:8080)/p/1"),
            ("http://3232235777/", "1,1,168,192)/"),
            ("http://192.168.1/", "1,0,168,192)/"),
            ("http://0300.0250.1.1/", "1,1,168,192)/"),
            ("http://www2.example.com/a//b/./c/../d", "com,example)/a/b/d"),
            ("http://example.com/%7Efoo/%2541 b", "com,example)/~foo/a%20b"),
            ("http://user:pass@Example.COM/", "com,example)/"),
            (
                "http://example.com/a?jsessionid=0123456789abcdef0123456789ABCDEF&b=1",
                "com,example)/a?b=1",
            ),
            (
                "http://example.com/a?x=1&phpsessid=0123456789abcdef0123456789ABCDEF",
                "com,example)/a?&x=1",
            ),
            (
                "http://example.com/(a(0123456789abcdefghijklmn))/default.aspx?x",
                "com,example)/default.aspx?x",
            ),
            ("http://[::1]:8080/x", "::1:8080)/x"),
            ("http://xn--bcher-kva.example/", "example,xn--bcher-kva)/"),
            (
                "http://example.com/caf%C3%A9?q=%C3%A9",
                "com,example)/caf%c3%a9?q=%c3%a9",
            ),
            ("example.com/no-scheme", "com,example)/no-scheme"),
            ("http://http://example.com/double", "com,example)/double"),
            ("dns:www.example.com", "dns:www.example.com"),
            ("mailto:foo@example.com", "mailto:foo@example.com"),
            ("http://example.com", "com,example)/"),
            ("http://example.com?q=1", "com,example)/?q=1"),
            ("http://example..com./a", "com,example)/a"),
            ("http://www.example.com/a/../../b", "com,example)/../b"),
            ("https://example.com/a%23b#c", "com,example)/a%23b"),
            ("http://example.com:80/", "com,example)/"),
            ("http://example.com:/x", "com,example)/x"),
            ("filedesc:foo.arc.gz", "filedesc:foo.arc.gz"),
            ("", "-"),
        ];
        for (url, want) in cases {
            assert_eq!(surt(url), want, "{url}");
        }
        // A port Python refuses: the URL is its own key (cdxj-indexer).
        assert_eq!(surt("http://e.org:99999/"), "http://e.org:99999/");
    }

    #[test]
    fn json_strings_are_pythons_ensure_ascii() {
        let mut s = String::new();
        push_json_str(&mut s, "a\"b\\c\n\u{1}é😀\u{7f}/");
        // Python: json.dumps("a\"b\\c\n\x01é😀\x7f/")
        assert_eq!(s, r#""a\"b\\c\n\u0001\u00e9\ud83d\ude00\u007f/""#);
    }

    #[test]
    fn mime_is_the_type_before_parameters_and_timestamps_have_14_digits() {
        assert_eq!(mime_of("text/html; charset=utf-8"), "text/html");
        assert_eq!(mime_of("Text/HTML;charset=x"), "Text/HTML");
        assert_eq!(mime_of(""), "");
        assert_eq!(timestamp("2026-11-27T13:24:52Z"), "20261127132452");
        assert_eq!(timestamp("2026-11-27T13:24:52.123456Z"), "20261127132452");
    }

    /// A file that is not one gzip member per WARC record is an error
    /// naming the offset (the crawl warns and leaves the file unindexed),
    /// and writes no index.
    #[test]
    fn a_file_that_is_no_warc_is_an_error_and_gets_no_index() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("x-20260101000000-00000.warc.gz");
        std::fs::write(&plain, b"WARC/1.1\r\n\r\n").unwrap();
        let e = write_index(&plain).unwrap_err();
        assert!(matches!(e, IndexError::Record { offset: 0, .. }), "{e}");
        assert!(!index_path(&plain).exists());
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
        std::fs::write(&plain, gz.finish().unwrap()).unwrap();
        let e = index_lines(&plain).unwrap_err().to_string();
        assert!(e.contains("at byte 0") && e.contains("WARC version line"), "{e}");
    }

    #[test]
    fn index_paths_sit_beside_their_files() {
        assert_eq!(
            index_path(Path::new("/w/simcrawl-20261127000000-00003.warc.gz")),
            Path::new("/w/simcrawl-20261127000000-00003.cdxj")
        );
        assert_eq!(index_path(Path::new("x.warc")), Path::new("x.warc.cdxj"));
    }
}
