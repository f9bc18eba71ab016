//! Sitemaps and feeds: the documents in which sites list their pages.
//!
//! One parser for what a crawler finds pages in besides links: XML sitemaps
//! (`<urlset>`), sitemap indexes (`<sitemapindex>`), plain-text sitemaps
//! (one URL per line), RSS 2.0 (`<item><link>`) and Atom (`<entry><link
//! href>`), gzipped or not (by the bytes, not the name). XML is read as a
//! stream (quick-xml), never as a tree, so a 50 MB sitemap costs its bytes
//! and its URLs. The protocol's limits are enforced: 50,000 URLs and 50 MB
//! uncompressed per file; what is beyond them is dropped and said.

use std::io::Read;

use quick_xml::events::Event;
use url::Url;

/// The sitemap protocol's limit on bytes uncompressed (sitemaps.org; its
/// limit on URLs is `crate::config::SITEMAP_MAX_URLS`).
pub const MAX_BYTES: usize = simcrawl_fetch::LISTING_MAX_BYTES;

/// How far a crawl follows listings into listings, and how many it reads
/// per host: a sitemap index may name further indexes, and nothing in the
/// protocol stops a chain (or a generated index) from going on forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// `crawl.max_listing_depth`: the deepest `Entry::nest` read.
    pub max_nest: u32,
    /// Listings queued per host at most.
    pub per_host: u64,
}

impl Bounds {
    /// `crawl.max_listing_depth` and `crawl.max_listings_per_host`, and a
    /// page budget (`crawl.max_pages`, 0: none) bounds listings too: a
    /// 10-page crawl has no use for thousands of sitemaps.
    pub fn new(max_nest: u32, per_host: u64, max_pages: u64) -> Bounds {
        let per_host = if max_pages > 0 {
            per_host.min(max_pages)
        } else {
            per_host
        };
        Bounds { max_nest, per_host }
    }

    /// Whether a listing at `nest` is past `crawl.max_listing_depth`: not
    /// read (the per-host count is each backend's store's).
    pub fn too_deep(&self, nest: u32) -> bool {
        nest > self.max_nest
    }
}

/// What a listing said.
#[derive(Debug, Default, PartialEq)]
pub struct Listing {
    pub kind: Kind,
    /// The pages it lists, with the sitemap's hints.
    pub pages: Vec<Listed>,
    /// Further listings (a sitemap index's sitemaps).
    pub listings: Vec<Url>,
    /// What was wrong but did not stop the reading (a URL that is not one,
    /// the URL limit reached): for errors.jsonl.
    pub problems: Vec<String>,
    /// URLs the file lists, counted to its end: past the limit they are
    /// counted, not kept (a million-URL file costs no million `Url`s).
    pub listed: usize,
}

impl Listing {
    /// Keeps one more page unless the limit is reached; counts it anyway.
    fn push_page(&mut self, p: Listed, max_urls: usize) {
        self.listed += 1;
        if self.pages.len() + self.listings.len() < max_urls {
            self.pages.push(p);
        }
    }

    /// Keeps one more sitemap (of an index) unless the limit is reached.
    fn push_listing(&mut self, u: Url, max_urls: usize) {
        self.listed += 1;
        if self.pages.len() + self.listings.len() < max_urls {
            self.listings.push(u);
        }
    }
}

/// What kind of listing it was.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    #[default]
    Text,
    UrlSet,
    SitemapIndex,
    Rss,
    Atom,
}

impl Kind {
    /// Its name where the crawl state records it (the revisit schedule's
    /// `listing_kind`, the shared frontier's `listings` hash), so that a
    /// later poller can tell feeds (`rss`, `atom`) from sitemaps.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::UrlSet => "urlset",
            Kind::SitemapIndex => "sitemapindex",
            Kind::Rss => "rss",
            Kind::Atom => "atom",
        }
    }
}

/// What a sitemap says about one page besides its URL (`<lastmod>`,
/// `<changefreq>`, `<priority>`), kept in the crawl state for the revisit
/// schedule: see [`Hints::stored`] for the stored form and
/// docs/ARCHITECTURE.md for where each backend keeps it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Hints {
    /// `<lastmod>`, unix seconds (UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lastmod: Option<u64>,
    /// `<changefreq>` as written, lowercased (`always` ... `never`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changefreq: Option<String>,
    /// `<priority>`, 0.0 to 1.0 as the site gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f32>,
}

impl Hints {
    /// No hint at all (text sitemaps, feeds): nothing worth storing.
    pub fn is_empty(&self) -> bool {
        self.lastmod.is_none() && self.changefreq.is_none() && self.priority.is_none()
    }

    /// `changefreq` as seconds ([`changefreq_secs`]).
    pub fn every_secs(&self) -> Option<u64> {
        self.changefreq.as_deref().and_then(changefreq_secs)
    }

    /// The stored form, with the page's URL: one JSON object,
    /// `{"url":"https://e.org/a","lastmod":1795478400,"changefreq":"daily",
    /// "priority":0.8}`, absent hints left out; the same in redb
    /// (`sitemap_hints`) and in Redis (`{NS}:f:hints`), so one reader
    /// ([`Hints::from_stored`]) serves both.
    pub fn stored(&self, url: &str) -> String {
        serde_json::to_string(&Stored {
            url: url.to_string(),
            hints: self.clone(),
        })
        .unwrap_or_else(|_| "{}".to_string())
    }

    /// The URL and hints of a [`Hints::stored`] form; `None` if it is not
    /// one. For the revisit scheduler that reads them (not written yet).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn from_stored(s: &str) -> Option<(String, Hints)> {
        serde_json::from_str::<Stored>(s).ok().map(|s| (s.url, s.hints))
    }
}

/// [`Hints::stored`]'s form.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stored {
    url: String,
    #[serde(flatten)]
    hints: Hints,
}

/// A sitemap's `changefreq` as an interval in seconds: what a new page's
/// first revisit interval starts from (`always`: the shortest allowed,
/// `never`: the longest; bounded by `[revisit]` anyway).
pub fn changefreq_secs(f: &str) -> Option<u64> {
    Some(match f {
        "always" => 0,
        "hourly" => 3_600,
        "daily" => 86_400,
        "weekly" => 7 * 86_400,
        "monthly" => 30 * 86_400,
        "yearly" | "never" => u64::MAX,
        _ => return None,
    })
}

/// A listed page and the hints a sitemap gives about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub url: Url,
    /// `<lastmod>`, unix seconds.
    pub lastmod: Option<u64>,
    pub changefreq: Option<String>,
    pub priority: Option<f32>,
}

impl Listed {
    /// Its hints, as stored.
    pub fn hints(&self) -> Hints {
        Hints {
            lastmod: self.lastmod,
            changefreq: self.changefreq.clone(),
            priority: self.priority,
        }
    }
}

/// A listing that could not be read at all.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ListingError {
    #[error("{url}: over {max} bytes uncompressed (the sitemap protocol's limit)")]
    TooLarge { url: String, max: usize },
    #[error("{url}: not gzip as its first bytes say: {reason}")]
    BadGzip { url: String, reason: String },
    /// `position` is a byte offset into the XML as read (inflated when
    /// the file was gzipped); `line` and `column` (1-based, column in
    /// bytes) say the same for a person looking at the file.
    #[error("{url}: malformed XML at line {line}, column {column} (byte {position}): {reason}")]
    Xml {
        url: String,
        position: u64,
        line: usize,
        column: usize,
        reason: String,
    },
}

/// Reads the listing `body` fetched from `at` (relative URLs resolve
/// against it), at most `max_urls` URLs and `max_bytes` bytes.
pub fn parse(body: &[u8], at: &Url, max_urls: usize, max_bytes: usize) -> Result<Listing, ListingError> {
    let inflated;
    let body = if body.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(body)
            .take(max_bytes as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| ListingError::BadGzip {
                url: at.to_string(),
                reason: e.to_string(),
            })?;
        inflated = out;
        &inflated[..]
    } else {
        body
    };
    if body.len() > max_bytes {
        return Err(ListingError::TooLarge {
            url: at.to_string(),
            max: max_bytes,
        });
    }
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(body.len());
    let body = &body[start..];
    let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    let mut l = if body.starts_with(b"<") {
        parse_xml(body, at, max_urls)?
    } else {
        parse_text(body, at, max_urls)
    };
    if l.listed > max_urls {
        l.problems.push(format!(
            "{at}: lists {} URLs, over the limit of {max_urls} per file; the first {max_urls} are kept",
            l.listed
        ));
    }
    Ok(l)
}

fn parse_text(body: &[u8], at: &Url, max_urls: usize) -> Listing {
    let mut l = Listing::default();
    for (n, line) in String::from_utf8_lossy(body).lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match Url::parse(line) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => l.push_page(
                Listed {
                    url: u,
                    lastmod: None,
                    changefreq: None,
                    priority: None,
                },
                max_urls,
            ),
            _ => l
                .problems
                .push(format!("{at}: line {}: not an http(s) URL: {line:?}", n + 1)),
        }
    }
    l
}

/// The text of the element being read, with entities resolved.
fn push_ref(out: &mut String, r: &quick_xml::events::BytesRef<'_>) {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        out.push(c);
        return;
    }
    match &**r {
        b"amp" => out.push('&'),
        b"lt" => out.push('<'),
        b"gt" => out.push('>'),
        b"quot" => out.push('"'),
        b"apos" => out.push('\''),
        other => {
            out.push('&');
            out.push_str(&String::from_utf8_lossy(other));
            out.push(';');
        }
    }
}

fn parse_xml(body: &[u8], at: &Url, max_urls: usize) -> Result<Listing, ListingError> {
    let mut reader = quick_xml::Reader::from_reader(body);
    reader.config_mut().trim_text(true);
    let mut l = Listing::default();
    // Local names of the open elements.
    let mut path: Vec<Vec<u8>> = Vec::new();
    let mut text = String::new();
    let mut item = Item {
        listed: Listed {
            url: at.clone(),
            lastmod: None,
            changefreq: None,
            priority: None,
        },
        url: None,
    };
    let mut buf = Vec::new();
    let xml_err =
        |reader: &quick_xml::Reader<&[u8]>, e: &dyn std::fmt::Display| xml_error(body, at, reader, e);
    loop {
        let ev = reader
            .read_event_into(&mut buf)
            .map_err(|e| xml_err(&reader, &e))?;
        match ev {
            Event::Start(e) => {
                let name = e.local_name().as_ref().to_vec();
                if path.is_empty() {
                    l.kind = root_kind(&name).ok_or_else(|| {
                        xml_err(
                            &reader,
                            &format!(
                                "<{}> is not a sitemap (<urlset>, <sitemapindex>) nor a feed (<rss>, <feed>)",
                                String::from_utf8_lossy(&name)
                            ),
                        )
                    })?;
                }
                if matches!(&name[..], b"url" | b"sitemap" | b"item" | b"entry") {
                    item.url = None;
                    item.listed.lastmod = None;
                    item.listed.changefreq = None;
                    item.listed.priority = None;
                }
                if l.kind == Kind::Atom && &name[..] == b"link" {
                    atom_link(&e, &mut item.url);
                }
                path.push(name);
                text.clear();
            }
            Event::Empty(e) if l.kind == Kind::Atom && e.local_name().as_ref() == b"link" => {
                atom_link(&e, &mut item.url);
            }
            Event::Text(t) => {
                text.push_str(&t.decode().map_err(|e| xml_err(&reader, &e))?);
            }
            Event::CData(t) => {
                text.push_str(&t.decode().map_err(|e| xml_err(&reader, &e))?);
            }
            Event::GeneralRef(r) => push_ref(&mut text, &r),
            Event::End(_) => {
                let Some(name) = path.pop() else { continue };
                end_element(&mut l, &mut item, &name, text.trim(), at, max_urls);
                text.clear();
            }
            // Cut short (a download that stopped, a truncated file): an
            // error, not a quiet partial list.
            Event::Eof => {
                if let Some(open) = path.last() {
                    return Err(xml_err(
                        &reader,
                        &format!(
                            "the document ends inside <{}>: cut short?",
                            String::from_utf8_lossy(open)
                        ),
                    ));
                }
                break;
            }
            _ => {}
        }
        buf.clear();
    }
    Ok(l)
}

/// The entry (`<url>`, `<sitemap>`, `<item>`, `<entry>`) being read: its
/// facts so far, and its URL as written.
struct Item {
    listed: Listed,
    url: Option<String>,
}

/// What a listing is, by its root element (`None`: not a listing).
fn root_kind(name: &[u8]) -> Option<Kind> {
    match name {
        b"urlset" => Some(Kind::UrlSet),
        b"sitemapindex" => Some(Kind::SitemapIndex),
        b"rss" | b"RDF" => Some(Kind::Rss),
        b"feed" => Some(Kind::Atom),
        _ => None,
    }
}

/// The element `name` ended, with the text `value`: a fact of the entry
/// being read, or the end of an entry, which is listed (a page, or a
/// sitemap of an index).
fn end_element(l: &mut Listing, item: &mut Item, name: &[u8], value: &str, at: &Url, max_urls: usize) {
    match (name, l.kind) {
        (b"loc", Kind::UrlSet | Kind::SitemapIndex) | (b"link", Kind::Rss) if !value.is_empty() => {
            item.url = Some(value.to_string());
        }
        (b"lastmod", _) => item.listed.lastmod = parse_w3c_date(value),
        (b"changefreq", _) => item.listed.changefreq = Some(value.to_ascii_lowercase()),
        (b"priority", _) => item.listed.priority = value.parse().ok(),
        (b"url" | b"item" | b"entry", _) => {
            if let Some(u) = item.url.take() {
                match at.join(&u) {
                    Ok(url) if matches!(url.scheme(), "http" | "https") => {
                        l.push_page(
                            Listed {
                                url,
                                ..item.listed.clone()
                            },
                            max_urls,
                        );
                    }
                    _ => l.problems.push(format!("{at}: not an http(s) URL: {u:?}")),
                }
            }
        }
        (b"sitemap", Kind::SitemapIndex) => {
            if let Some(u) = item.url.take() {
                match at.join(&u) {
                    Ok(url) if matches!(url.scheme(), "http" | "https") => l.push_listing(url, max_urls),
                    _ => l.problems.push(format!("{at}: not an http(s) URL: {u:?}")),
                }
            }
        }
        _ => {}
    }
}

/// A parse error of the listing at `at`, where `reader` stopped in `body`
/// (its line and column, for people).
fn xml_error(
    body: &[u8],
    at: &Url,
    reader: &quick_xml::Reader<&[u8]>,
    e: &dyn std::fmt::Display,
) -> ListingError {
    let position = reader.error_position();
    let before = &body[..usize::try_from(position).unwrap_or(usize::MAX).min(body.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = before.len() - before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) + 1;
    ListingError::Xml {
        url: at.to_string(),
        position,
        line,
        column,
        reason: e.to_string(),
    }
}

/// An Atom `<link href>` of an entry: the one with no `rel` or
/// `rel="alternate"` (the page itself), the first such.
fn atom_link(e: &quick_xml::events::BytesStart<'_>, out: &mut Option<String>) {
    if out.is_some() {
        return;
    }
    let attr = |k: &[u8]| {
        e.try_get_attribute(k)
            .ok()
            .flatten()
            .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
    };
    let rel = attr(b"rel");
    if rel.as_deref().is_none_or(|r| r.eq_ignore_ascii_case("alternate")) {
        *out = attr(b"href");
    }
}

/// A W3C datetime (`2026-11-25`, `2026-11-25T10:00:00+08:00`, ...) as unix
/// seconds.
fn parse_w3c_date(s: &str) -> Option<u64> {
    let s = s.trim();
    let full = if s.len() == 10 {
        format!("{s}T00:00:00Z")
    } else if s.len() == 7 {
        format!("{s}-01T00:00:00Z")
    } else if s.len() == 4 {
        format!("{s}-01-01T00:00:00Z")
    } else {
        s.to_string()
    };
    // humantime reads UTC only: an offset is applied by hand.
    let (base, offset) = match full.rfind(['+', '-']).filter(|&i| i > 10) {
        Some(i) => {
            let (b, o) = full.split_at(i);
            let sign: i64 = if o.starts_with('-') { -1 } else { 1 };
            let mut hm = o[1..].split(':');
            let h: i64 = hm.next()?.parse().ok()?;
            let m: i64 = hm.next().unwrap_or("0").parse().ok()?;
            (format!("{b}Z"), sign * (h * 3600 + m * 60))
        }
        None => (full, 0),
    };
    let t = humantime::parse_rfc3339_weak(base.trim_end_matches('Z').trim()).ok()?;
    let secs = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    u64::try_from(i64::try_from(secs).ok()? - offset).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::SITEMAP_MAX_URLS as MAX_URLS;

    fn at() -> Url {
        Url::parse("https://e.org/sitemaps/s.xml").unwrap()
    }

    fn urls(l: &Listing) -> Vec<&str> {
        l.pages.iter().map(|p| p.url.as_str()).collect()
    }

    #[test]
    fn a_urlset_keeps_its_hints_and_resolves_entities() {
        let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
            <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
              <url><loc>https://e.org/a?x=1&amp;y=2</loc><lastmod>2026-11-24</lastmod>
                   <changefreq>Daily</changefreq><priority>0.8</priority></url>
              <url><loc> /b </loc></url>
              <url><loc>ftp://e.org/c</loc></url>
            </urlset>"#;
        let l = parse(xml, &at(), MAX_URLS, MAX_BYTES).unwrap();
        assert_eq!(l.kind, Kind::UrlSet);
        assert_eq!(urls(&l), ["https://e.org/a?x=1&y=2", "https://e.org/b"]);
        assert_eq!(l.pages[0].lastmod, Some(1_795_478_400)); // 2026-11-24T00:00:00Z
        assert_eq!(l.pages[0].changefreq.as_deref(), Some("daily"));
        assert_eq!(l.pages[0].priority, Some(0.8));
        assert_eq!(l.pages[1].lastmod, None);
        assert_eq!(l.problems.len(), 1, "{:?}", l.problems);
    }

    #[test]
    fn an_index_lists_sitemaps_and_gzip_is_read_by_its_bytes() {
        use std::io::Write;
        let xml = br#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
            <sitemap><loc>https://e.org/s1.xml.gz</loc><lastmod>2026-11-01T10:00:00+08:00</lastmod></sitemap>
            </sitemapindex>"#;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(xml).unwrap();
        let l = parse(&gz.finish().unwrap(), &at(), MAX_URLS, MAX_BYTES).unwrap();
        assert_eq!(l.kind, Kind::SitemapIndex);
        let s: Vec<&str> = l.listings.iter().map(Url::as_str).collect();
        assert_eq!(s, ["https://e.org/s1.xml.gz"]);
        assert_eq!(parse_w3c_date("2026-11-01T10:00:00+08:00"), Some(1_793_498_400)); // 02:00Z
    }

    #[test]
    fn feeds_rss_and_atom_give_their_entries_links() {
        let rss = br#"<rss version="2.0"><channel><title>T</title><link>https://e.org/</link>
            <item><title>One</title><link>https://e.org/one</link></item>
            <item><link><![CDATA[https://e.org/two?a=1&b=2]]></link></item></channel></rss>"#;
        let l = parse(rss, &at(), MAX_URLS, MAX_BYTES).unwrap();
        assert_eq!(l.kind, Kind::Rss);
        assert_eq!(urls(&l), ["https://e.org/one", "https://e.org/two?a=1&b=2"]);
        let atom = br#"<feed xmlns="http://www.w3.org/2005/Atom"><link href="https://e.org/"/>
            <entry><link rel="edit" href="/edit/1"/><link rel="alternate" href="/posts/1"/></entry>
            <entry><link href="https://e.org/posts/2"/></entry></feed>"#;
        let l = parse(atom, &at(), MAX_URLS, MAX_BYTES).unwrap();
        assert_eq!(l.kind, Kind::Atom);
        assert_eq!(urls(&l), ["https://e.org/posts/1", "https://e.org/posts/2"]);
    }

    #[test]
    fn text_sitemaps_limits_and_malformed_xml() {
        let l = parse(
            b"https://e.org/1\n\nnot a url\nhttps://e.org/2\nhttps://e.org/3\n",
            &at(),
            2,
            MAX_BYTES,
        )
        .unwrap();
        assert_eq!(urls(&l), ["https://e.org/1", "https://e.org/2"]);
        assert!(
            l.problems.iter().any(|p| p.contains("line 3")),
            "{:?}",
            l.problems
        );
        assert!(
            l.problems.iter().any(|p| p.contains("over the limit of 2")),
            "{:?}",
            l.problems
        );
        assert!(matches!(
            parse(b"x".repeat(11).as_slice(), &at(), MAX_URLS, 10),
            Err(ListingError::TooLarge { .. })
        ));
        let e = parse(
            b"<urlset>\n<url><loc>a</url></urlset>",
            &at(),
            MAX_URLS,
            MAX_BYTES,
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("https://e.org/sitemaps/s.xml: malformed XML at line 2, column "),
            "{e}"
        );
        assert!(matches!(e, ListingError::Xml { line: 2, .. }), "{e:?}");
        let e = parse(b"<html><body/></html>", &at(), MAX_URLS, MAX_BYTES).unwrap_err();
        assert!(e.to_string().contains("not a sitemap"), "{e}");
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(data).unwrap();
        gz.finish().unwrap()
    }

    /// Past the URL limit the rest is counted, not kept: the line says how
    /// many the file lists; an index's sitemaps count against the same
    /// limit.
    #[test]
    fn the_url_limit_counts_to_the_end_and_keeps_the_first() {
        let mut xml = String::from("<urlset>");
        for i in 0..10 {
            xml.push_str(&format!("<url><loc>https://e.org/{i}</loc></url>"));
        }
        xml.push_str("</urlset>");
        let l = parse(xml.as_bytes(), &at(), 4, MAX_BYTES).unwrap();
        assert_eq!(
            urls(&l),
            [
                "https://e.org/0",
                "https://e.org/1",
                "https://e.org/2",
                "https://e.org/3"
            ]
        );
        assert_eq!(l.listed, 10);
        assert_eq!(
            l.problems,
            [
                "https://e.org/sitemaps/s.xml: lists 10 URLs, over the limit of 4 per file; the first 4 are kept"
            ]
        );
        let index = b"<sitemapindex><sitemap><loc>/a.xml</loc></sitemap><sitemap><loc>/b.xml</loc></sitemap>\
            <sitemap><loc>/c.xml</loc></sitemap></sitemapindex>";
        let l = parse(index, &at(), 2, MAX_BYTES).unwrap();
        assert_eq!(l.listings.len(), 2);
        assert_eq!(l.problems.len(), 1, "{:?}", l.problems);
        // At the limit exactly: no line.
        assert!(parse(index, &at(), 3, MAX_BYTES).unwrap().problems.is_empty());
    }

    /// Gzip is told by its magic bytes whatever the name; a text sitemap
    /// may be gzipped too; the byte limit applies to what it inflates to
    /// (a small bomb is refused, not inflated whole); broken gzip is an
    /// error naming the file.
    #[test]
    fn gzip_by_its_bytes_and_the_byte_limit_after_inflation() {
        let plain = Url::parse("https://e.org/sitemap.txt").unwrap();
        let l = parse(
            &gzip(b"https://e.org/1\nhttps://e.org/2\n"),
            &plain,
            MAX_URLS,
            MAX_BYTES,
        )
        .unwrap();
        assert_eq!(
            (l.kind, urls(&l)),
            (Kind::Text, vec!["https://e.org/1", "https://e.org/2"])
        );
        let bomb = gzip(&vec![b' '; 100_000]);
        assert!(bomb.len() < 1_000);
        let e = parse(&bomb, &plain, MAX_URLS, 50_000).unwrap_err();
        assert_eq!(
            e,
            ListingError::TooLarge {
                url: plain.to_string(),
                max: 50_000
            }
        );
        let mut cut = gzip(b"<urlset><url><loc>https://e.org/1</loc></url></urlset>");
        cut.truncate(cut.len() / 2);
        let e = parse(&cut, &plain, MAX_URLS, MAX_BYTES).unwrap_err();
        assert!(matches!(e, ListingError::BadGzip { .. }), "{e:?}");
        assert!(
            e.to_string().starts_with("https://e.org/sitemap.txt: not gzip"),
            "{e}"
        );
        // A name that says gzip with a body that is not: read as it is.
        let named = Url::parse("https://e.org/s.xml.gz").unwrap();
        let l = parse(
            b"<urlset><url><loc>/x</loc></url></urlset>",
            &named,
            MAX_URLS,
            MAX_BYTES,
        )
        .unwrap();
        assert_eq!(urls(&l), ["https://e.org/x"]);
    }

    /// Malformed XML inside a gzipped sitemap: the position is in the
    /// inflated XML, with its line; a document cut short is an error too,
    /// not a quiet partial list.
    #[test]
    fn malformed_xml_names_the_sitemap_and_where() {
        let bad = b"<?xml version=\"1.0\"?>\n<urlset>\n  <url><loc>https://e.org/1</loc></url>\n  <url><loc>https://e.org/2</lox></url>\n</urlset>";
        let e = parse(&gzip(bad), &at(), MAX_URLS, MAX_BYTES).unwrap_err();
        let ListingError::Xml { url, line, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!((url.as_str(), *line), ("https://e.org/sitemaps/s.xml", 4));
        assert!(e.to_string().contains("line 4, column"), "{e}");
        let e = parse(
            b"<urlset><url><loc>https://e.org/1</loc>",
            &at(),
            MAX_URLS,
            MAX_BYTES,
        )
        .unwrap_err();
        assert!(e.to_string().contains("ends inside <url>"), "{e}");
    }

    #[test]
    fn hints_are_stored_as_one_json_object_with_the_url() {
        let h = Hints {
            lastmod: Some(1_795_478_400),
            changefreq: Some("weekly".into()),
            priority: None,
        };
        let s = h.stored("https://e.org/a");
        assert_eq!(
            s,
            r#"{"url":"https://e.org/a","lastmod":1795478400,"changefreq":"weekly"}"#
        );
        assert_eq!(
            Hints::from_stored(&s),
            Some(("https://e.org/a".to_string(), h.clone()))
        );
        assert_eq!(h.every_secs(), Some(7 * 86_400));
        assert!(Hints::default().is_empty());
        assert_eq!(Hints::from_stored("not json"), None);
    }
}
