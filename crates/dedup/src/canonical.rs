//! Canonical URLs: the key of the URL tier.
//!
//! Crawlers meet one page under many spellings: `HTTP://Example.com:80/a`,
//! `http://example.com/a#top`, `http://example.com/a?utm_source=x`. The URL
//! tier hashes the canonical form so that all of them count as one URL.
//!
//! Two URLs get one canonical form only when they mean the same to a
//! server: spellings of one character (`%7e`, `%7E`, `~`; `%5E`, `^`) are
//! merged, reserved characters keep their spelling (`%2F` is not `/`), and
//! only query parameters known to track visitors are removed
//! ([`TRACKING_PARAMS`], configurable with [`UrlConfig`]).

use std::fmt;
use std::sync::LazyLock;

use url::Url;

use crate::digest::{hex, md5_of};

/// Version of the canonical forms, recorded by stores: a store whose URL
/// keys were computed by another version is refused
/// ([`crate::Error::OldUrlKeys`]), since the same URL would get another key.
///
/// 2: a `%` not followed by two hex digits is written `%25` (it was kept,
/// so a decoded escape could complete it into another one); escapes of
/// `^ | { } \`` are decoded and written as the URL parser writes the raw
/// character; the tracking list was curated (no more `ref_url`,
/// `share_token`, `from_source`, `ref_src`), and a tracking key whose value
/// is a URL is kept.
pub const CANONICAL_VERSION: u32 = 2;

/// The default tracking parameters: query keys that only say where a
/// visitor came from, set by ad and analytics vendors, and never change the
/// page a server returns.
///
/// Matched case-insensitively on the key (escapes of letters decoded);
/// entries ending in `*` are prefixes. A key whose value looks like a URL is
/// kept whatever the list says (see [`Canonicalizer::is_tracking`]). Names a
/// site might use for its own content (`ref`, `source`, `from`, `share`,
/// `token`, `id`...) are deliberately absent: removing one would merge
/// distinct pages, which costs a page; keeping a tracking key only costs a
/// fetch. Cross-checked with Firefox's query-stripping list and the
/// vendors' own documentation.
///
/// ```
/// use simcrawl_dedup::canonical::TRACKING_PARAMS;
/// assert!(TRACKING_PARAMS.contains(&"gclid"));
/// assert!(!TRACKING_PARAMS.contains(&"ref_url"));
/// ```
pub const TRACKING_PARAMS: &[&str] = &[
    // Google Analytics campaign parameters, from Urchin: utm_source,
    // utm_medium, utm_campaign, utm_term, utm_content, utm_id...
    "utm_*",
    // Google Ads auto-tagging click id, and its source marker (Search Ads 360).
    "gclid",
    "gclsrc",
    // Google Ads click ids of iOS campaigns (app to web, web to app).
    "gbraid",
    "wbraid",
    // Google Display & Video 360 / Campaign Manager (DoubleClick) click id.
    "dclid",
    // Google Analytics cross-domain linker (analytics.js `_ga`, gtag.js `_gl`).
    "_ga",
    "_gl",
    // Google Merchant Center auto-tagging of product listings.
    "srsltid",
    // Facebook (Meta) outbound-link click id.
    "fbclid",
    // Instagram share id.
    "igshid",
    // Microsoft Advertising (Bing Ads) click id.
    "msclkid",
    // Twitter/X Ads click id, and the marker of links from embedded tweets.
    "twclid",
    "__twitter_impression",
    // TikTok Ads click id.
    "ttclid",
    // LinkedIn Ads first-party click id.
    "li_fat_id",
    // Yandex Direct click id, and Yandex search's click id.
    "yclid",
    "ysclid",
    // Openstat (Yandex) ad tracking.
    "_openstat",
    // Mailchimp newsletter links: campaign id and member id.
    "mc_cid",
    "mc_eid",
    // HubSpot: email tracking (_hsenc, _hsmi), cross-domain visitor
    // cookies (__hstc, __hssc, __hsfp) and call-to-action tracking.
    "_hsenc",
    "_hsmi",
    "__hstc",
    "__hssc",
    "__hsfp",
    "hsctatracking",
    // Marketo (Adobe) email tracking token.
    "mkt_tok",
    // MailerLite subscriber ids in newsletter links.
    "ml_subscriber",
    "ml_subscriber_hash",
    // Omeda newsletter visitor ids.
    "oly_anon_id",
    "oly_enc_id",
    // Vero email tracking.
    "vero_id",
    "vero_conv",
    // Wicked Reports click id.
    "wickedid",
    // Adobe Analytics campaign id.
    "s_cid",
    // Webtrends campaign id (Microsoft's sites use `WT.mc_id`).
    "wt.mc_id",
    // Alibaba (Taobao, Tmall, 1688, AliExpress) click-position tracking
    // ("super position model", and its companion `scm`).
    "spm",
    "scm",
    // Baidu Tongji (百度统计) campaign parameters: source, plan, unit,
    // keyword, creative.
    "hmsr",
    "hmpl",
    "hmcu",
    "hmkw",
    "hmci",
];

/// Why a string is not a crawlable URL, or URL settings are unusable.
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
    /// An entry of [`UrlConfig::tracking_params`] that could never match a
    /// key, or would match every key.
    #[error("invalid tracking parameter {entry:?} in dedup.url.tracking_params: {reason}")]
    TrackingParam {
        /// The entry as given.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A [`CanonicalUrl`] made under other settings than the
    /// [`crate::Deduper`] it was given to: its key would not be the one the
    /// store's URL tier uses for that URL.
    #[error(
        "{url} was canonicalized with another tracking-parameter list than this deduper's; \
         canonicalize with Deduper::canonicalizer()"
    )]
    OtherSettings {
        /// The canonical URL.
        url: String,
    },
}

/// Settings of the URL tier (`[dedup.url]` in `config/crawl.toml`).
///
/// ```
/// use simcrawl_dedup::{Canonicalizer, UrlConfig};
/// let config = UrlConfig { tracking_params: vec!["sid".into(), "utm_*".into()] };
/// let c = Canonicalizer::new(&config)?;
/// assert_eq!(c.parse("http://a.example/p?sid=9&gclid=1&utm_medium=x")?.as_str(), "http://a.example/p?gclid=1");
/// # Ok::<(), simcrawl_dedup::UrlError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct UrlConfig {
    /// Query keys removed before a URL is keyed: case-insensitive, an entry
    /// ending in `*` is a prefix. Default: [`TRACKING_PARAMS`]. Stores
    /// record a digest of the list, since another list gives other keys.
    pub tracking_params: Vec<String>,
}

impl Default for UrlConfig {
    fn default() -> Self {
        UrlConfig {
            tracking_params: TRACKING_PARAMS.iter().map(|p| (*p).to_string()).collect(),
        }
    }
}

/// Canonicalizes URLs under one [`UrlConfig`]: the URL tier's key function.
/// A [`crate::Deduper`] holds one ([`crate::Deduper::canonicalizer`]);
/// crawlers that compute canonical forms off the writer thread use it, so
/// that their keys are the store's.
///
/// ```
/// use simcrawl_dedup::{Canonicalizer, UrlConfig};
/// let c = Canonicalizer::new(&UrlConfig::default())?;
/// let a = c.parse("http://a.example/s?q=%7bx%7D&utm_source=feed#top")?;
/// assert_eq!(a.as_str(), "http://a.example/s?q={x}");
/// // The list is part of what a store records.
/// assert_eq!(c.tracking_digest(), simcrawl_dedup::canonical::tracking_params_digest());
/// # Ok::<(), simcrawl_dedup::UrlError>(())
/// ```
#[derive(Clone)]
pub struct Canonicalizer {
    /// Exact keys, lower-case, sorted.
    exact: Vec<String>,
    /// Key prefixes, lower-case, sorted.
    prefixes: Vec<String>,
    /// MD5 of the normalized list.
    digest: [u8; 16],
}

impl PartialEq for Canonicalizer {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest
    }
}

impl Eq for Canonicalizer {}

impl fmt::Debug for Canonicalizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Canonicalizer")
            .field("tracking", &hex(&self.digest))
            .field("entries", &(self.exact.len() + self.prefixes.len()))
            .finish()
    }
}

impl Default for Canonicalizer {
    /// The default list, [`TRACKING_PARAMS`].
    fn default() -> Self {
        DEFAULT.clone()
    }
}

static DEFAULT: LazyLock<Canonicalizer> =
    LazyLock::new(|| Canonicalizer::build(TRACKING_PARAMS.iter().map(|p| p.to_ascii_lowercase())));

/// Characters an entry of the list may have: those a key keeps unescaped
/// once canonicalized (unreserved, RFC 3986 section 2.3). Any other
/// character of a key is escaped by then, so could never match.
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

impl Canonicalizer {
    /// A canonicalizer removing `config.tracking_params`; an entry that
    /// is empty, is `*` alone (every key) or has characters other than
    /// letters, digits and `- . _ ~` (before an optional trailing `*`) is
    /// refused rather than silently never matching.
    pub fn new(config: &UrlConfig) -> Result<Canonicalizer, UrlError> {
        let mut entries = Vec::with_capacity(config.tracking_params.len());
        for entry in &config.tracking_params {
            let bad = |reason| UrlError::TrackingParam {
                entry: entry.clone(),
                reason,
            };
            let name = entry.strip_suffix('*').unwrap_or(entry);
            if name.is_empty() {
                return Err(bad("empty: it would remove every query parameter"));
            }
            if !name.bytes().all(is_unreserved) {
                return Err(bad(
                    "a key is matched on letters, digits and - . _ ~ (an optional trailing * makes a prefix)",
                ));
            }
            entries.push(entry.to_ascii_lowercase());
        }
        Ok(Canonicalizer::build(entries.into_iter()))
    }

    fn build(entries: impl Iterator<Item = String>) -> Canonicalizer {
        let mut all: Vec<String> = entries.collect();
        all.sort();
        all.dedup();
        let digest = md5_of(&all.join("\n"));
        let (prefixes, exact): (Vec<String>, Vec<String>) = all.into_iter().partition(|e| e.ends_with('*'));
        let prefixes = prefixes
            .into_iter()
            .map(|p| p.trim_end_matches('*').to_string())
            .collect();
        Canonicalizer {
            exact,
            prefixes,
            digest,
        }
    }

    /// Parses and canonicalizes an absolute http(s) URL.
    pub fn parse(&self, input: &str) -> Result<CanonicalUrl, UrlError> {
        let url = Url::parse(input.trim()).map_err(|e| UrlError::Invalid {
            input: input.to_string(),
            reason: e.to_string(),
        })?;
        self.from_url(url).map_err(|scheme| UrlError::Scheme {
            input: input.to_string(),
            scheme,
        })
    }

    /// Canonicalizes an already parsed URL; the error is the refused scheme.
    pub fn from_url(&self, mut url: Url) -> Result<CanonicalUrl, String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(url.scheme().to_string());
        }
        url.set_fragment(None);
        // A trailing dot on the host names the same host.
        if let Some(host) = url.host_str().filter(|h| h.ends_with('.')).map(str::to_string)
            && let Some(stripped) = host.strip_suffix('.')
            && !stripped.is_empty()
        {
            let _ = url.set_host(Some(stripped));
        }
        // The URL parser writes the characters it escapes in this
        // component as browsers do, so the ones decoded here come out in
        // the form browsers send. A path without a `%` is its own normal
        // form, and setting a parsed http(s) path again leaves it as it
        // is: most links' paths, so neither is done for them (1.4% of a
        // crawl's instructions on the zh/en documentation mix, issue 37;
        // `canonical_paths_without_escapes_are_left_as_parsed`).
        if url.path().contains('%') {
            let path = normalize_percent(url.path(), false);
            url.set_path(&path);
        }
        let query = url.query().and_then(|q| self.canonical_query(q));
        url.set_query(query.as_deref());
        Ok(CanonicalUrl {
            url,
            settings: self.id(),
        })
    }

    /// Whether the query parameter `key` (with `value`, `None` for a bare
    /// key) is removed: its key is on the list, and its value is not a URL
    /// (`http://...`, `//host/...`, escaped or not). A redirector's target
    /// or an embed's source is the page, whatever the key is called.
    ///
    /// ```
    /// let c = simcrawl_dedup::Canonicalizer::default();
    /// assert!(c.is_tracking("UTM_Source", Some("newsletter")));
    /// assert!(!c.is_tracking("utm_source", Some("https%3A%2F%2Fa.example%2F")));
    /// assert!(!c.is_tracking("ref_url", Some("x")));
    /// ```
    pub fn is_tracking(&self, key: &str, value: Option<&str>) -> bool {
        let key = key.to_ascii_lowercase();
        let listed =
            self.exact.binary_search(&key).is_ok() || self.prefixes.iter().any(|p| key.starts_with(p));
        listed && !value.is_some_and(looks_like_url)
    }

    /// Hex MD5 of the list (lower-cased, sorted, without repeats): what
    /// stores record as `tracking`, so that an index built with one list
    /// refuses to open with another.
    pub fn tracking_digest(&self) -> String {
        hex(&self.digest)
    }

    /// Identifies the settings a [`CanonicalUrl`] was made under.
    pub(crate) fn id(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.digest[..8]);
        u64::from_le_bytes(b)
    }

    /// The canonical query, worked on the raw (percent-encoded) text so
    /// that bytes in any charset survive: the query of a GBK page is GBK,
    /// and decoding it as UTF-8 would turn every such escape into U+FFFD.
    ///
    /// Empty segments are dropped, escapes normalized ([`normalize_percent`],
    /// `%20` written `+`), tracking parameters removed by name, and the rest
    /// sorted by name then value. `None` when nothing is left.
    fn canonical_query(&self, query: &str) -> Option<String> {
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
            .filter(|(k, v)| !self.is_tracking(k, v.as_deref()))
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
}

/// A URL in canonical form: lower-case scheme and host, no default port, no
/// fragment, dot segments resolved, percent-encoding of unreserved characters
/// (and of `^ | { } \``) decoded, a stray `%` escaped, tracking parameters
/// removed and the remaining query parameters sorted.
///
/// ```
/// use simcrawl_dedup::CanonicalUrl;
/// let a = CanonicalUrl::parse("HTTP://Example.COM:80/a/./b/../c?z=1&utm_source=x&a=2#top").unwrap();
/// assert_eq!(a.as_str(), "http://example.com/a/c?a=2&z=1");
/// let b = CanonicalUrl::parse("http://example.com/a/c?a=2&z=1").unwrap();
/// assert_eq!(a.digest(), b.digest());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CanonicalUrl {
    url: Url,
    /// [`Canonicalizer::id`] of the settings it was made under.
    settings: u64,
}

impl CanonicalUrl {
    /// Parses and canonicalizes an absolute http(s) URL under the default
    /// settings ([`Canonicalizer::default`]). A [`crate::Deduper`]
    /// configured with another list canonicalizes with
    /// [`crate::Deduper::canonicalizer`] instead.
    pub fn parse(input: &str) -> Result<CanonicalUrl, UrlError> {
        DEFAULT.parse(input)
    }

    /// Canonicalizes an already parsed URL under the default settings; the
    /// error is the refused scheme.
    pub fn from_url(url: Url) -> Result<CanonicalUrl, String> {
        DEFAULT.from_url(url)
    }

    /// The canonical URL as text.
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    /// The parsed URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// MD5 of the canonical text: the key stored by the URL tier.
    pub fn digest(&self) -> [u8; 16] {
        md5_of(self.url.as_str())
    }

    /// Whether `c` made this (the tracking list is part of the key).
    pub(crate) fn made_by(&self, c: &Canonicalizer) -> bool {
        self.settings == c.id()
    }
}

impl fmt::Display for CanonicalUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.url.as_str())
    }
}

/// As its text.
#[cfg(feature = "serde")]
impl serde::Serialize for CanonicalUrl {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl fmt::Debug for CanonicalUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CanonicalUrl({})", self.url)
    }
}

/// A digest of the default list, [`TRACKING_PARAMS`]: stores record the
/// digest of the list in force ([`Canonicalizer::tracking_digest`]), since
/// the URL tier's keys depend on which parameters are removed, so an index
/// built with another list would treat spellings of one URL as different
/// (or the reverse).
///
/// ```
/// assert_eq!(simcrawl_dedup::canonical::tracking_params_digest().len(), 32);
/// ```
pub fn tracking_params_digest() -> String {
    DEFAULT.tracking_digest()
}

/// Whether a (canonicalized, so validly escaped) query value is a URL:
/// `scheme://...` or `//host...`, its `:` and `/` raw or escaped.
fn looks_like_url(value: &str) -> bool {
    let bytes = value.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match escaped_byte(bytes, i) {
            Some(c) => {
                decoded.push(c);
                i += 3;
            }
            None => {
                decoded.push(bytes[i]);
                i += 1;
            }
        }
    }
    decoded.starts_with(b"//") || decoded.windows(3).any(|w| w == b"://")
}

/// Characters that are neither reserved nor unreserved, written raw by some
/// pages and escaped by others: a server reads both as the character. They
/// are decoded here, and the URL parser then escapes those of them it
/// escapes in the component (`{ } \`` in paths), as browsers send them.
const MERGED_UNSAFE: &[u8] = b"^|{}`";

/// The byte an escape at `i` stands for, if `bytes[i..]` starts with `%`
/// and two hex digits.
fn escaped_byte(bytes: &[u8], i: usize) -> Option<u8> {
    if bytes.get(i) != Some(&b'%') {
        return None;
    }
    let h = hex_digit(*bytes.get(i + 1)?)?;
    let l = hex_digit(*bytes.get(i + 2)?)?;
    Some(h * 16 + l)
}

/// Normalizes the escapes of a path or a query parameter in one pass, on
/// the text as written:
///
/// - a `%` not followed by two hex digits is a literal `%`, written `%25`
///   (so no decoded character can complete it into an escape later, which
///   would merge `%2%35` with `%25`);
/// - escapes of unreserved characters (RFC 3986 section 6.2.2.2) and of
///   [`MERGED_UNSAFE`] are decoded, so `%7e`, `%7E` and `~` agree;
/// - the others keep their escape, hex digits upper-cased;
/// - with `space_as_plus` (queries), `%20` is written `+`, as forms do.
///
/// Its output has no `%` but in valid escapes it would not decode, so it is
/// its own normal form.
fn normalize_percent(text: &str, space_as_plus: bool) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            match escaped_byte(bytes, i) {
                Some(c) if is_unreserved(c) || MERGED_UNSAFE.contains(&c) => out.push(char::from(c)),
                Some(b' ') if space_as_plus => out.push('+'),
                Some(c) => {
                    out.push('%');
                    out.push(char::from(HEX[usize::from(c >> 4)]));
                    out.push(char::from(HEX[usize::from(c & 0xf)]));
                }
                None => {
                    out.push_str("%25");
                    i += 1;
                    continue;
                }
            }
            i += 3;
            continue;
        }
        // `text` is a &str, so a lead byte tells where its character ends.
        let ch_len = utf8_len(bytes[i]);
        out.push_str(text.get(i..(i + ch_len).min(text.len())).unwrap_or_default());
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

fn hex_digit(b: u8) -> Option<u8> {
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        /// Skipping the path's normalization when it has no `%` makes the
        /// URL that normalizing and setting it again makes: paths of
        /// segments with dots, slashes, backslashes, characters the
        /// parser escapes (which then have a `%`), letters beyond ASCII.
        #[test]
        fn canonical_paths_without_escapes_are_left_as_parsed(
            segments in proptest::collection::vec(
                proptest::sample::select(&[
                    "a", "B", ".", "..", "", "x.html", "%2e", "%2E%2e", "~", "%7e", "中文", "é",
                    " ", "\\", ";p=1", "a:b", "@", "!$&'()*+,=", "`{}<>\"", "|^", "%", "%zz",
                    "%41", "\u{7f}", "\t", "C:", "//",
                ][..]),
                0..8,
            ),
            https in proptest::bool::ANY,
            query in proptest::bool::ANY,
        ) {
            let scheme = if https { "https" } else { "http" };
            let text = format!("{scheme}://Example.COM./{}{}", segments.join("/"), if query { "?b=2&a=1" } else { "" });
            let Ok(parsed) = Url::parse(&text) else { return Ok(()); };
            let fast = Canonicalizer::default().from_url(parsed.clone()).unwrap();
            // The path normalized and set whatever it holds, as before.
            let mut slow = parsed;
            slow.set_fragment(None);
            let _ = slow.set_host(Some("example.com"));
            let path = normalize_percent(slow.path(), false);
            slow.set_path(&path);
            let q = slow.query().and_then(|q| Canonicalizer::default().canonical_query(q));
            slow.set_query(q.as_deref());
            proptest::prop_assert_eq!(fast.as_str(), slow.as_str(), "{}", text);
        }
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

    /// Issue item 8: a `%` not followed by two hex digits is a literal
    /// `%`, written `%25` before anything is decoded, so a decoded escape
    /// never completes it into another escape.
    #[test]
    fn a_stray_percent_is_escaped_before_decoding() {
        // `%2%35` is the text "%25" (a stray `%`, then `2`, then `5`), not
        // the escape `%25` (one `%`).
        assert_eq!(canon("http://example.com/%2%35"), "http://example.com/%2525");
        assert_ne!(canon("http://example.com/%2%35"), canon("http://example.com/%25"));
        // `a%2%66b` is "a%2fb", not "a/b" escaped.
        let once = canon("http://example.com/a%2%66b");
        assert_eq!(once, "http://example.com/a%252fb");
        assert_eq!(canon(&once), once, "not idempotent");
        assert_ne!(once, canon("http://example.com/a%2Fb"));
        // The same in queries, keys and values.
        assert_eq!(
            canon("http://example.com/s?q=%2%35"),
            "http://example.com/s?q=%2525"
        );
        assert_eq!(
            canon("http://example.com/s?%2%35=1"),
            "http://example.com/s?%2525=1"
        );
        // A stray `%` and `%25` spell one character.
        assert_eq!(
            canon("http://example.com/100%"),
            canon("http://example.com/100%25")
        );
        assert_eq!(
            canon("http://example.com/a%zz?b=%"),
            "http://example.com/a%25zz?b=%25"
        );
    }

    /// Issue item 9: only known tracking keys are removed, never a key
    /// whose value is a URL.
    #[test]
    fn only_known_tracking_keys_are_removed() {
        // `ref_url` is the target of many redirectors: two pages.
        assert_ne!(
            canon("http://example.com/go?ref_url=http://a.com/"),
            canon("http://example.com/go?ref_url=http://b.com/")
        );
        for kept in [
            "ref_url=x",
            "share_token=abc",
            "from_source=feed",
            "ref_src=x",
            "id=7",
        ] {
            let url = format!("http://example.com/p?{kept}");
            assert_eq!(canon(&url), url, "{kept} was removed");
        }
        // Keys of the curated list go, whatever their case.
        for tracking in [
            "utm_source=x",
            "UTM_Medium=y",
            "gclid=1",
            "fbclid=2",
            "msclkid=3",
            "dclid=4",
            "gbraid=5",
            "wbraid=6",
            "yclid=7",
            "mc_cid=8",
            "mc_eid=9",
            "_hsenc=a",
            "_hsmi=b",
            "igshid=c",
        ] {
            assert_eq!(
                canon(&format!("http://example.com/p?id=1&{tracking}")),
                "http://example.com/p?id=1",
                "{tracking} was kept"
            );
        }
        // A tracking key whose value is a URL is not tracking: kept.
        for value in [
            "http://a.com/",
            "https%3A%2F%2Fa.com%2F",
            "%2F%2Fa.com/x",
            "HTTP%3a//A.com",
        ] {
            let url = format!("http://example.com/go?utm_content={value}");
            assert!(canon(&url).contains("utm_content="), "{url} -> {}", canon(&url));
        }
    }

    /// Issue item 10: `^ | { } \`` and their escapes are one URL, written
    /// as the URL parser (WHATWG, as browsers send them) writes the raw
    /// character: `{ } \`` escaped in paths, the rest raw.
    #[test]
    fn raw_and_escaped_unsafe_characters_merge() {
        for (raw, escaped, path_form) in [
            ("^", "%5E", "^"),
            ("^", "%5e", "^"),
            ("|", "%7C", "|"),
            ("{", "%7B", "%7B"),
            ("}", "%7d", "%7D"),
            ("`", "%60", "%60"),
        ] {
            let a = canon(&format!("http://example.com/a{raw}b?q={raw}"));
            let b = canon(&format!("http://example.com/a{escaped}b?q={escaped}"));
            assert_eq!(a, b, "{raw} vs {escaped}");
            assert_eq!(a, format!("http://example.com/a{path_form}b?q={raw}"), "{raw}");
        }
    }

    /// The built-in list passes the checks a configured one gets, and has
    /// no repeats (each entry is there once, with its vendor).
    #[test]
    fn the_default_list_is_valid() {
        let c = Canonicalizer::new(&UrlConfig::default()).unwrap();
        assert_eq!(c, Canonicalizer::default());
        let mut entries: Vec<&str> = TRACKING_PARAMS.to_vec();
        entries.sort();
        entries.dedup();
        assert_eq!(entries.len(), TRACKING_PARAMS.len());
        assert!(TRACKING_PARAMS.iter().all(|e| *e == e.to_ascii_lowercase()));
    }

    #[test]
    fn bad_input_is_named() {
        let e = CanonicalUrl::parse("not a url").unwrap_err();
        assert!(e.to_string().contains("not a url"), "{e}");
        let e = CanonicalUrl::parse("ftp://example.com/x").unwrap_err();
        assert!(matches!(e, UrlError::Scheme { .. }), "{e}");
        // A truncated escape at the end must not panic.
        assert_eq!(canon("http://example.com/a%4"), "http://example.com/a%254");
        assert_eq!(canon("http://example.com/a%"), "http://example.com/a%25");
    }
}
