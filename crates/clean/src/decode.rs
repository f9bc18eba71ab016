//! Bytes to text: which charset a page is in.
//!
//! Precedence, and why:
//!
//! 1. **Byte order mark.** As in the WHATWG encoding standard, a BOM beats the header:
//!    it is written by the tool that produced the bytes, the header by a server
//!    config that is often wrong.
//! 2. **`Content-Type` header charset** — unless it names a legacy encoding while the
//!    bytes are valid UTF-8 with non-ASCII in them. Servers default to `iso-8859-1`
//!    (or `gbk` on Chinese hosting) for files that are really UTF-8; non-ASCII text in
//!    a legacy encoding is practically never valid UTF-8 by accident, so UTF-8 wins.
//! 3. **`<meta charset>` / `<meta http-equiv=content-type>`** in the first 8 KiB,
//!    with the same UTF-8 override.
//! 4. **Detection**: valid UTF-8 is UTF-8; otherwise `chardetng` guesses, helped by
//!    the URL's top-level domain (`.tw` favours Big5, `.cn` GBK).
//!
//! Decoding never fails: malformed sequences become U+FFFD.

use std::borrow::Cow;

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252};
use url::Url;

/// Where the chosen encoding came from (for logs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodingSource {
    /// A byte order mark.
    Bom,
    /// The `Content-Type` header's `charset`.
    Header,
    /// A `<meta>` tag.
    Meta,
    /// The bytes were valid UTF-8 although a header or meta said otherwise.
    Utf8Override,
    /// Valid UTF-8 with no label, or detection by `chardetng`.
    Detected,
}

/// A decoded document.
#[derive(Debug, Clone)]
pub struct Decoded<'a> {
    /// The text, borrowed when the input was already UTF-8.
    pub text: Cow<'a, str>,
    /// The encoding used to decode.
    pub encoding: &'static Encoding,
    /// Why that encoding was chosen.
    pub source: EncodingSource,
    /// Whether some bytes were malformed and replaced by U+FFFD.
    pub had_errors: bool,
}

/// How far into the document `<meta>` charset declarations are looked for. The
/// standard says 1024 bytes; real Chinese pages put scripts and styles first.
const META_SCAN_BYTES: usize = 8 * 1024;
/// How many bytes chardetng sees: enough for a reliable guess, bounded for speed.
const DETECT_BYTES: usize = 256 * 1024;

/// Decodes `bytes` following the precedence in the module documentation. `url`, when
/// given, lends its top-level domain to detection.
#[must_use]
pub fn decode<'a>(bytes: &'a [u8], content_type: Option<&str>, url: Option<&Url>) -> Decoded<'a> {
    let (encoding, source) = sniff(bytes, content_type, url);
    let (text, had_errors) = if source == EncodingSource::Bom {
        let (text, _, had_errors) = encoding.decode(bytes); // removes the BOM
        (text, had_errors)
    } else {
        encoding.decode_without_bom_handling(bytes)
    };
    Decoded {
        text,
        encoding,
        source,
        had_errors,
    }
}

/// Chooses the encoding of `bytes` without decoding them.
#[must_use]
pub fn sniff(
    bytes: &[u8],
    content_type: Option<&str>,
    url: Option<&Url>,
) -> (&'static Encoding, EncodingSource) {
    if let Some((enc, _)) = Encoding::for_bom(bytes) {
        return (enc, EncodingSource::Bom);
    }
    let utf8 = Utf8Check::new(bytes);
    if let Some(enc) = content_type.and_then(charset_from_content_type) {
        return labelled(enc, EncodingSource::Header, &utf8);
    }
    if let Some(enc) = meta_charset(&bytes[..bytes.len().min(META_SCAN_BYTES)]) {
        return labelled(enc, EncodingSource::Meta, &utf8);
    }
    if utf8.valid {
        return (UTF_8, EncodingSource::Detected);
    }
    let mut det = EncodingDetector::new(Iso2022JpDetection::Deny);
    let sample = &bytes[..bytes.len().min(DETECT_BYTES)];
    det.feed(sample, sample.len() == bytes.len());
    let tld = url.and_then(tld_of);
    (
        det.guess(tld.as_deref().map(str::as_bytes), Utf8Detection::Allow),
        EncodingSource::Detected,
    )
}

/// Whether the bytes are UTF-8, and enough to count their non-ASCII
/// characters when a label asks (most pages have none to override).
struct Utf8Check<'a> {
    valid: bool,
    bytes: &'a [u8],
}

impl<'a> Utf8Check<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        let valid = match std::str::from_utf8(bytes) {
            Ok(_) => true,
            // A page cut at a size limit may end inside a sequence; that is still UTF-8.
            Err(e) => e.error_len().is_none() && e.valid_up_to() + 4 > bytes.len(),
        };
        Self { valid, bytes }
    }

    /// Whether the (valid) text has at least `n` non-ASCII characters: a
    /// count of lead bytes that stops at `n`, since a whole page's count
    /// was read only against 1 or 8.
    fn non_ascii_at_least(&self, n: usize) -> bool {
        self.valid && self.bytes.iter().filter(|&&b| b >= 0xC0).take(n).count() >= n
    }
}

/// Applies a label, unless the bytes say UTF-8 more convincingly.
fn labelled(
    enc: &'static Encoding,
    source: EncodingSource,
    utf8: &Utf8Check<'_>,
) -> (&'static Encoding, EncodingSource) {
    // A meta tag cannot say UTF-16: the bytes it was read from were ASCII-compatible.
    let enc = if enc == UTF_16LE || enc == UTF_16BE {
        UTF_8
    } else {
        enc
    };
    if enc == UTF_8 {
        return (enc, source);
    }
    // Single-byte legacy text that happens to be valid UTF-8 is vanishingly rare; a
    // short double-byte (GBK, Big5) text can be, so ask for a few more characters.
    let needed = if enc.is_single_byte() { 1 } else { 8 };
    if utf8.non_ascii_at_least(needed) {
        (UTF_8, EncodingSource::Utf8Override)
    } else {
        (enc, source)
    }
}

/// The encoding named by a `Content-Type` value's `charset` parameter.
#[must_use]
pub fn charset_from_content_type(content_type: &str) -> Option<&'static Encoding> {
    content_type.split(';').skip(1).find_map(|param| {
        let (k, v) = param.split_once('=')?;
        if !k.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
        Encoding::for_label(v.as_bytes()).map(x_user_defined_to_1252)
    })
}

fn x_user_defined_to_1252(enc: &'static Encoding) -> &'static Encoding {
    if enc == encoding_rs::X_USER_DEFINED {
        WINDOWS_1252
    } else {
        enc
    }
}

/// The top-level domain of `url`'s host, in the form chardetng accepts (lower-case
/// ASCII letters, digits and hyphens, no dot), or `None`.
fn tld_of(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    let tld = host.rsplit('.').next()?;
    if tld.is_empty()
        || !tld
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return None;
    }
    Some(tld.to_owned())
}

/// Finds a charset declared by a `<meta>` tag in `head` (a prefix of the document).
#[must_use]
pub fn meta_charset(head: &[u8]) -> Option<&'static Encoding> {
    let mut i = 0;
    while let Some(off) = find_ci(&head[i..], b"<meta") {
        let start = i + off + 5;
        let end = head[start..]
            .iter()
            .position(|&b| b == b'>')
            .map_or(head.len(), |p| start + p);
        let attrs = parse_attrs(&head[start..end]);
        let mut charset = None;
        let mut http_equiv_ct = false;
        let mut content = None;
        for (name, value) in &attrs {
            if name.eq_ignore_ascii_case(b"charset") {
                charset = Encoding::for_label(value);
            } else if name.eq_ignore_ascii_case(b"http-equiv") {
                http_equiv_ct = value.eq_ignore_ascii_case(b"content-type");
            } else if name.eq_ignore_ascii_case(b"content") {
                content = Some(*value);
            }
        }
        if let Some(enc) = charset {
            return Some(x_user_defined_to_1252(enc));
        }
        if http_equiv_ct
            && let Some(enc) = content
                .and_then(|c| std::str::from_utf8(c).ok())
                .and_then(|c| charset_from_content_type(&format!("x;{c}")))
        {
            return Some(enc);
        }
        i = end;
    }
    None
}

fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

/// A forgiving attribute scanner: `name`, `name=value`, `name="value"`, `name='value'`.
fn parse_attrs(s: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = s.len();
    while i < n {
        while i < n && (s[i].is_ascii_whitespace() || s[i] == b'/') {
            i += 1;
        }
        let name_start = i;
        while i < n && !s[i].is_ascii_whitespace() && s[i] != b'=' && s[i] != b'/' {
            i += 1;
        }
        let name = &s[name_start..i];
        while i < n && s[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value: &[u8] = b"";
        if i < n && s[i] == b'=' {
            i += 1;
            while i < n && s[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < n && (s[i] == b'"' || s[i] == b'\'') {
                let q = s[i];
                i += 1;
                let vs = i;
                while i < n && s[i] != q {
                    i += 1;
                }
                value = &s[vs..i];
                i += 1;
            } else {
                let vs = i;
                while i < n && !s[i].is_ascii_whitespace() {
                    i += 1;
                }
                value = &s[vs..i];
            }
        }
        if !name.is_empty() {
            out.push((name, value));
        } else if i < n {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use encoding_rs::{BIG5, GBK, SHIFT_JIS};

    use super::*;

    #[test]
    fn header_charset_is_parsed() {
        assert_eq!(charset_from_content_type("text/html; charset=GB2312"), Some(GBK));
        assert_eq!(
            charset_from_content_type("text/html;charset=\"big5\""),
            Some(BIG5)
        );
        assert_eq!(charset_from_content_type("text/html"), None);
        assert_eq!(charset_from_content_type("text/html; charset=bogus"), None);
    }

    #[test]
    fn meta_forms() {
        assert_eq!(meta_charset(b"<html><meta charset=gbk>"), Some(GBK));
        assert_eq!(
            meta_charset(b"<META HTTP-EQUIV=\"Content-Type\" CONTENT=\"text/html; charset=shift_jis\">"),
            Some(SHIFT_JIS)
        );
        assert_eq!(
            meta_charset(b"<meta name='x' content='y'><meta charset='utf-8'/>"),
            Some(UTF_8)
        );
        assert_eq!(meta_charset(b"<meta content=\"text/html; charset=gbk\">"), None);
        assert_eq!(meta_charset(b"<meta"), None);
    }

    #[test]
    fn bom_beats_header() {
        let bytes = b"\xEF\xBB\xBFcaf\xC3\xA9";
        let d = decode(bytes, Some("text/html; charset=iso-8859-1"), None);
        assert_eq!(d.text, "café");
        assert_eq!(d.source, EncodingSource::Bom);
    }

    #[test]
    fn utf8_overrides_wrong_latin1_header() {
        let d = decode(
            "<p>Grüße 中文</p>".as_bytes(),
            Some("text/html; charset=ISO-8859-1"),
            None,
        );
        assert_eq!(d.encoding, UTF_8);
        assert_eq!(d.source, EncodingSource::Utf8Override);
        assert!(d.text.contains("Grüße 中文"));
    }

    #[test]
    fn true_latin1_stays_latin1() {
        let d = decode(b"caf\xE9 cr\xE8me", Some("text/html; charset=iso-8859-1"), None);
        assert_eq!(d.text, "café crème");
        assert_eq!(d.source, EncodingSource::Header);
    }

    #[test]
    fn invalid_bytes_become_replacement() {
        let d = decode(b"ok \xFF\xFE\xFD end", Some("text/html; charset=utf-8"), None);
        assert!(d.had_errors);
        assert!(d.text.contains('\u{FFFD}'));
    }

    #[test]
    fn truncated_utf8_is_still_utf8() {
        let s = "中文中文中文".as_bytes();
        let (enc, _) = sniff(&s[..s.len() - 1], None, None);
        assert_eq!(enc, UTF_8);
    }

    #[test]
    fn tld_is_sanitized() {
        let u = Url::parse("http://example.com.tw/x").unwrap();
        assert_eq!(tld_of(&u).as_deref(), Some("tw"));
        let ip = Url::parse("http://127.0.0.1/").unwrap();
        assert_eq!(tld_of(&ip).as_deref(), Some("1"));
        // Must not panic inside chardetng.
        let _ = sniff(b"\xB0\xA1\xB0\xA2", None, Some(&ip));
    }
}
