//! HTTP exchanges as an archive keeps them (WARC request and response
//! records): recorded only when the caller asks ([`crate::Fetcher::set_recording`]),
//! so a crawl that archives nothing pays nothing.

use std::net::SocketAddr;
use std::time::SystemTime;

use parking_lot::Mutex;
use url::{Position, Url};

/// The head of one HTTP response and of the request that asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// The URL requested (the WARC-Target-URI).
    pub url: Url,
    /// When the response head arrived.
    pub date: SystemTime,
    /// The server's address, when the connection knows it.
    pub remote_addr: Option<SocketAddr>,
    /// The request head as sent, CRLF lines and the blank line included.
    /// Rebuilt from what the client sends (hyper does not expose the bytes
    /// it wrote): the method line, `Host`, `User-Agent`, `Accept` and
    /// `Accept-Encoding`.
    pub request: Vec<u8>,
    /// `HTTP/1.1`, `HTTP/1.0` or `HTTP/2`.
    pub version: &'static str,
    pub status: u16,
    /// The headers as received, in their order (names lower case: hyper
    /// does not keep their spelling), except that a body the client
    /// decompressed comes without its `Content-Encoding` and
    /// `Content-Length` (reqwest removes them with the coding).
    pub headers: Vec<(String, Vec<u8>)>,
}

impl ResponseHead {
    /// The head of `resp`, the answer to a GET of `url` by a client that
    /// sends `user_agent` and `accept`.
    pub(crate) fn of(resp: &reqwest::Response, url: &Url, user_agent: &str, accept: &str) -> Self {
        let version = match resp.version() {
            reqwest::Version::HTTP_09 => "HTTP/0.9",
            reqwest::Version::HTTP_10 => "HTTP/1.0",
            reqwest::Version::HTTP_2 => "HTTP/2",
            reqwest::Version::HTTP_3 => "HTTP/3",
            _ => "HTTP/1.1",
        };
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.as_bytes().to_vec()))
            .collect();
        ResponseHead {
            url: url.clone(),
            date: SystemTime::now(),
            remote_addr: resp.remote_addr(),
            request: request_head(url, user_agent, accept),
            version,
            status: resp.status().as_u16(),
            headers,
        }
    }

    /// The status line's reason phrase (hyper does not keep the server's):
    /// the standard one, or `Unknown`.
    pub fn reason(&self) -> &'static str {
        reqwest::StatusCode::from_u16(self.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Unknown")
    }

    /// The first value of header `name` (lower case), as text.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    }
}

/// One whole exchange: a response head and its body as decoded (transfer
/// and content codings removed, as the crawler reads it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub head: ResponseHead,
    pub body: Vec<u8>,
    /// The body was cut at the fetcher's limit.
    pub truncated: bool,
}

/// The exchanges of one fetch, in the order they happened: robots.txt
/// loaded for it, redirect hops, attempts that failed with a response.
#[derive(Debug, Default)]
pub(crate) struct Tape(Option<Mutex<Vec<Exchange>>>);

impl Tape {
    pub(crate) fn new(recording: bool) -> Tape {
        Tape(recording.then(Mutex::default))
    }

    pub(crate) fn recording(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn push(&self, e: Exchange) {
        if let Some(t) = &self.0 {
            t.lock().push(e);
        }
    }

    pub(crate) fn take(self) -> Vec<Exchange> {
        self.0.map(Mutex::into_inner).unwrap_or_default()
    }
}

/// What the client sends for a GET of `url` (see [`ResponseHead::request`]).
fn request_head(url: &Url, user_agent: &str, accept: &str) -> Vec<u8> {
    let target = &url[Position::BeforePath..Position::AfterQuery];
    let host = &url[Position::BeforeHost..Position::AfterPort];
    format!(
        "GET {} HTTP/1.1\r\nhost: {host}\r\nuser-agent: {user_agent}\r\naccept: {accept}\r\naccept-encoding: gzip, br, deflate\r\n\r\n",
        if target.is_empty() { "/" } else { target },
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_request_head_names_path_query_and_a_non_default_port() {
        let u = Url::parse("http://Example.com:8080/a/b?x=1&y=%20#frag").unwrap();
        let h = String::from_utf8(request_head(&u, "ua/1", "text/html")).unwrap();
        assert!(
            h.starts_with("GET /a/b?x=1&y=%20 HTTP/1.1\r\nhost: example.com:8080\r\n"),
            "{h}"
        );
        assert!(h.ends_with("\r\n\r\n") && !h.contains("frag"), "{h}");
        let h = String::from_utf8(request_head(&Url::parse("https://e.org").unwrap(), "u", "a")).unwrap();
        assert!(h.starts_with("GET / HTTP/1.1\r\nhost: e.org\r\n"), "{h}");
    }

    #[test]
    fn a_tape_that_does_not_record_keeps_nothing() {
        let off = Tape::new(false);
        let head = ResponseHead {
            url: Url::parse("http://e.org/").unwrap(),
            date: SystemTime::UNIX_EPOCH,
            remote_addr: None,
            request: vec![],
            version: "HTTP/1.1",
            status: 404,
            headers: vec![("content-type".into(), b"text/plain".to_vec())],
        };
        assert_eq!(head.reason(), "Not Found");
        assert_eq!(head.header("Content-Type").as_deref(), Some("text/plain"));
        let e = Exchange {
            head,
            body: b"x".to_vec(),
            truncated: false,
        };
        off.push(e.clone());
        assert!(off.take().is_empty());
        let on = Tape::new(true);
        on.push(e.clone());
        assert_eq!(on.take(), vec![e]);
    }
}
