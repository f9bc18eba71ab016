//! Canonical URLs: the key of the URL tier.
//!
//! Crawlers meet one page under many spellings: `HTTP://Example.com:80/a`,
//! `http://example.com/a#top`, `http://example.com/a?utm_source=x`. The URL
//! tier hashes the canonical form so that all of them count as one URL.

use std::fmt;

use md5::{Digest, Md5};
use url::Url;

/// Query parameters that only track the visitor and never change the page.
///
/// Matched case-insensitively; entries ending in `*` are prefixes.
pub const TRACKING_PARAMS: &[&str] = &[
    "utm_*",
    "gclid",
    "gclsrc",
    "dclid",
    "fbclid",
    "msclkid",
    "yclid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "_gl",
    "igshid",
    "spm",
    "scm",
    "from_source",
    "share_token",
    "ref_src",
    "ref_url",
    "__twitter_impression",
    "wt.mc_id",
    "hmsr",
    "hmpl",
    "hmcu",
    "hmkw",
    "hmci",
];

/// Why a string is not a crawlable URL.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UrlError {
    /// The text does not parse as an absolute URL.
    #[error("invalid URL {input:?}: {reason}")]
    Invalid {
        /// The text as given.
        input: String,
        /// What the URL parser objected to.
        reason: String,
    },
    /// Only web pages are deduplicated.
    #[error("unsupported URL scheme {scheme:?} in {input:?}: only http and https are crawled")]
    Scheme {
        /// The text as given.
        input: String,
        /// The scheme found.
        scheme: String,
    },
}

/// A URL in canonical form: lower-case scheme and host, no default port, no
/// fragment, dot segments resolved, percent-encoding of unreserved characters
/// decoded, tracking parameters removed and the remaining query parameters
/// sorted.
///
/// ```
/// use simcrawl_dedup::CanonicalUrl;
/// let a = CanonicalUrl::parse("HTTP://Example.COM:80/a/./b/../c?z=1&utm_source=x&a=2#top").unwrap();
/// assert_eq!(a.as_str(), "http://example.com/a/c?a=2&z=1");
/// let b = CanonicalUrl::parse("http://example.com/a/c?a=2&z=1").unwrap();
/// assert_eq!(a.digest(), b.digest());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CanonicalUrl(Url);

impl CanonicalUrl {
    /// Parses and canonicalizes an absolute http(s) URL.
    pub fn parse(input: &str) -> Result<CanonicalUrl, UrlError> {
        let url = Url::parse(input.trim()).map_err(|e| UrlError::Invalid {
            input: input.to_string(),
            reason: e.to_string(),
        })?;
        Self::from_url(url).map_err(|scheme| UrlError::Scheme {
            input: input.to_string(),
            scheme,
        })
    }

    /// Canonicalizes an already parsed URL; the error is the refused scheme.
    pub fn from_url(mut url: Url) -> Result<CanonicalUrl, String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(url.scheme().to_string());
        }
        url.set_fragment(None);
        // A trailing dot on the host names the same host.
        if let Some(host) = url.host_str().map(str::to_string)
            && let Some(stripped) = host.strip_suffix('.')
            && !stripped.is_empty()
        {
            let _ = url.set_host(Some(stripped));
        }
        let path = normalize_percent(url.path(), false);
        url.set_path(&path);
        let query = url.query().and_then(canonical_query);
        url.set_query(query.as_deref());
        Ok(CanonicalUrl(url))
    }

    /// The canonical URL as text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The parsed URL.
    pub fn url(&self) -> &Url {
        &self.0
    }

    /// MD5 of the canonical text: the key stored by the URL tier.
    pub fn digest(&self) -> [u8; 16] {
        md5_of(self.0.as_str())
    }
}

impl fmt::Display for CanonicalUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

impl fmt::Debug for CanonicalUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CanonicalUrl({})", self.0)
    }
}

/// A digest of [`TRACKING_PARAMS`], recorded by stores: the URL tier's keys
/// depend on which parameters are removed, so an index built with another
/// list would treat spellings of one URL as different (or the reverse).
///
/// ```
/// assert_eq!(simcrawl_dedup::canonical::tracking_params_digest().len(), 32);
/// ```
pub fn tracking_params_digest() -> String {
    crate::features::hex(&md5_of(&TRACKING_PARAMS.join("\n")))
}

pub(crate) fn md5_of(text: &str) -> [u8; 16] {
    let mut h = Md5::new();
    h.update(text.as_bytes());
    h.finalize().into()
}

fn is_tracking(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    TRACKING_PARAMS.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => key == *p,
    })
}

/// The canonical query, worked on the raw (percent-encoded) text so that
/// bytes in any charset survive: the query of a GBK page is GBK, and
/// decoding it as UTF-8 would turn every such escape into U+FFFD.
///
/// Empty segments are dropped, escapes normalized ([`normalize_percent`],
/// `%20` written `+`), tracking parameters removed by name, and the rest
/// sorted by name then value. `None` when nothing is left.
fn canonical_query(query: &str) -> Option<String> {
    let mut kept: Vec<(String, Option<String>)> = query
        .split('&')
        .filter(|seg| !seg.is_empty())
        .map(|seg| {
            let seg = normalize_percent(seg, true);
            match seg.split_once('=') {
                Some((k, v)) => (k.to_string(), Some(v.to_string())),
                None => (seg, None),
            }
        })
        .filter(|(k, _)| !is_tracking(k))
        .collect();
    if kept.is_empty() {
        return None;
    }
    kept.sort();
    let mut out = String::with_capacity(query.len());
    for (i, (k, v)) in kept.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(k);
        if let Some(v) = v {
            out.push('=');
            out.push_str(v);
        }
    }
    Some(out)
}

/// Decodes percent-escapes of unreserved characters (RFC 3986 section 6.2.2.2)
/// and upper-cases the hex digits of the others, so `%7e`, `%7E` and `~` agree.
/// With `space_as_plus` (queries), `%20` is written `+`, as forms do.
fn normalize_percent(path: &str, space_as_plus: bool) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            let c = h * 16 + l;
            if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(c));
            } else if space_as_plus && c == b' ' {
                out.push('+');
            } else {
                out.push('%');
                out.push(char::from(bytes[i + 1].to_ascii_uppercase()));
                out.push(char::from(bytes[i + 2].to_ascii_uppercase()));
            }
            i += 3;
            continue;
        }
        // `path` is a &str, so a lead byte tells where its character ends.
        let ch_len = utf8_len(bytes[i]);
        out.push_str(&path[i..(i + ch_len).min(path.len())]);
        i += ch_len;
    }
    out
}

fn utf8_len(lead: u8) -> usize {
    match lead {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn canon(s: &str) -> String {
        CanonicalUrl::parse(s).unwrap().to_string()
    }

    #[test]
    fn variants_collapse() {
        let want = "http://example.com/news/1?id=7&page=2";
        for v in [
            "http://example.com/news/1?page=2&id=7",
            "HTTP://EXAMPLE.com:80/news/1?id=7&page=2",
            "http://example.com/news/1?id=7&page=2#comments",
            "http://example.com/news/./x/../1?utm_source=a&id=7&utm_medium=b&page=2",
            "http://example.com./news/1?id=7&page=2&fbclid=zz",
            "http://example.com/n%65ws/1?id=7&page=2",
        ] {
            assert_eq!(canon(v), want, "{v}");
        }
    }

    #[test]
    fn different_urls_stay_different() {
        assert_ne!(
            canon("http://example.com/a?id=1"),
            canon("http://example.com/a?id=2")
        );
        assert_ne!(canon("https://example.com/a"), canon("http://example.com/a"));
        assert_ne!(canon("http://example.com:8080/a"), canon("http://example.com/a"));
        assert_eq!(canon("https://example.com:443/a"), "https://example.com/a");
        // Reserved escapes stay escaped, normalized to upper-case hex.
        assert_eq!(canon("http://example.com/a%2fb"), "http://example.com/a%2Fb");
        assert_eq!(
            canon("http://example.com/%E4%b8%ad"),
            "http://example.com/%E4%B8%AD"
        );
        assert_eq!(canon("http://example.com/a?"), "http://example.com/a");
    }

    #[test]
    fn non_utf8_query_bytes_stay_distinct() {
        // GBK/Big5 escapes are not UTF-8: they must not collapse to U+FFFD.
        let a = CanonicalUrl::parse("http://example.com/s?kw=%B0%A1").unwrap();
        let b = CanonicalUrl::parse("http://example.com/s?kw=%B0%A2").unwrap();
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.as_str(), "http://example.com/s?kw=%B0%A1");
        // Hex case, unreserved escapes, order and tracking parameters are
        // still normalized on raw bytes.
        assert_eq!(
            canon("http://example.com/s?utm_source=x&kw=%b0%a1&%61=%7e&UTM%5FMEDIUM=y"),
            "http://example.com/s?a=~&kw=%B0%A1"
        );
        // Reserved characters keep their escaped or raw spelling.
        assert_ne!(
            canon("http://example.com/s?a=b%26c"),
            canon("http://example.com/s?a=b&c")
        );
        assert_eq!(canon("http://example.com/s?a=%2f"), "http://example.com/s?a=%2F");
        // A space is a space, however it was written.
        assert_eq!(
            canon("http://example.com/s?q=a%20b"),
            canon("http://example.com/s?q=a+b")
        );
        // Empty segments are dropped; a bare key keeps its shape.
        assert_eq!(
            canon("http://example.com/s?&b=1&&a"),
            "http://example.com/s?a&b=1"
        );
    }

    #[test]
    fn bad_input_is_named() {
        let e = CanonicalUrl::parse("not a url").unwrap_err();
        assert!(e.to_string().contains("not a url"), "{e}");
        let e = CanonicalUrl::parse("ftp://example.com/x").unwrap_err();
        assert!(matches!(e, UrlError::Scheme { .. }), "{e}");
        // A truncated escape at the end must not panic.
        assert_eq!(canon("http://example.com/a%4"), "http://example.com/a%4");
        assert_eq!(canon("http://example.com/a%"), "http://example.com/a%");
    }
}
