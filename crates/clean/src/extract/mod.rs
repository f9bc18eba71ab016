//! HTML to title, visible text, links and robots hints.
//!
//! One iterative pass over the page's tree ([`crate::dom`]; no recursion: a page of a million nested
//! `<div>`s must not overflow the stack) feeds every node to two collectors: the
//! page's metadata ([`head`]: title, robots hints, base and canonical URLs, language)
//! and the text walk ([`walk`]), which records, per element, how much text and link
//! text it holds and where its text lies in a flat list of events. Main-content
//! selection ([`main_content`]) then picks element ranges and the renderer turns their
//! events into text. Everything is linear in the size of the document.

mod boilerplate;
mod head;
mod main_content;
mod walk;

use url::Url;

use self::head::HeadMeta;
pub(crate) use self::walk::{El, Ev, Semantic, Walk};
use self::walk::{RawLink, Walker};
use crate::Link;
use crate::dom::{Dom, Edge, NodeData};

/// Marks "no parent".
pub(crate) const NONE: u32 = u32::MAX;

/// Link texts are for logs and anchor-text features, not for storage: capped.
const MAX_LINK_TEXT_BYTES: usize = 256;
/// Titles longer than this are not titles.
const MAX_TITLE_BYTES: usize = 1024;

/// What the extractor produced, before normalization.
#[derive(Debug, Default)]
pub(crate) struct Extracted {
    pub raw_title: String,
    pub text: String,
    /// The visible text outside the marked template, link text included.
    pub own_text: String,
    /// Characters (not whitespace) of `own_text` that are link text.
    pub own_link_chars: usize,
    /// The main text is a message in an archive's frame ([`crate::Page::framed`]).
    pub framed: bool,
    /// Non-whitespace characters of the page's visible text.
    pub visible_chars: usize,
    pub links: Vec<Link>,
    pub canonical: Option<Url>,
    pub feeds: Vec<Url>,
    pub lang_hint: Option<String>,
    pub meta_nofollow: bool,
    pub meta_noindex: bool,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct ExtractOptions {
    /// The page's encoding: link queries are encoded in it, as browsers do.
    pub encoding: &'static encoding_rs::Encoding,
    pub main_content: bool,
    pub max_text_bytes: usize,
    pub max_links: usize,
    /// Whether links' texts are collected ([`crate::Cleaner::without_link_texts`]).
    pub link_texts: bool,
}

/// Appends `s` to `out` with HTML whitespace collapsed, up to `cap` bytes.
fn push_collapsed(out: &mut String, s: &str, cap: usize) {
    for w in s.split_ascii_whitespace() {
        if out.len() >= cap {
            return;
        }
        if !out.is_empty() && !out.ends_with(' ') {
            out.push(' ');
        }
        push_capped(out, w, cap);
    }
    if s.ends_with(|c: char| c.is_ascii_whitespace()) && !out.is_empty() && out.len() < cap {
        out.push(' ');
    }
}

/// Appends as much of `s` as fits in `cap` bytes, cutting on a char boundary.
pub(crate) fn push_capped(out: &mut String, s: &str, cap: usize) -> bool {
    let room = cap.saturating_sub(out.len());
    if s.len() <= room {
        out.push_str(s);
        true
    } else {
        let mut end = room;
        while end > 0 && !s.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&s[..end]);
        false
    }
}

fn collapse(s: &str, cap: usize) -> String {
    let mut out = String::new();
    push_collapsed(&mut out, s, cap);
    out.truncate(out.trim_end().len());
    out
}

/// Whether `value`, split at ASCII whitespace and commas, holds `token`
/// (any ASCII case). Split on its bytes: the separators are ASCII, so no
/// char needs decoding to find them.
fn has_token(value: &str, token: &str) -> bool {
    value
        .as_bytes()
        .split(|&b| b.is_ascii_whitespace() || b == b',')
        .any(|t| t.eq_ignore_ascii_case(token.as_bytes()))
}

/// Extracts everything from a parsed document, in one walk over its tree that feeds
/// every node to the metadata collector and the text walk.
pub(crate) fn extract(dom: &Dom, url: &Url, opts: &ExtractOptions) -> Extracted {
    let mut head = HeadMeta::default();
    let mut walker = Walker::for_nodes(dom.len(), opts.link_texts);
    for edge in dom.traverse() {
        match edge {
            Edge::Open(_) if walker.is_skipping() => {}
            Edge::Open(node) => match dom.data(node) {
                NodeData::Element(e) => {
                    let e = dom.element(e);
                    head.element(dom, node, e);
                    walker.open_element(node, e);
                }
                NodeData::Text(t) => walker.text(t),
                _ => {}
            },
            Edge::Close(node) => walker.close(node, matches!(dom.data(node), NodeData::Element(_))),
        }
    }
    let (walk, raw_links) = walker.finish();

    let base = head.base(url);
    let join = |href: &str| join_encoded(&base, href, opts.encoding);
    let canonical = head
        .canonical_href()
        .and_then(|h| join(h.trim()))
        .filter(|u| matches!(u.scheme(), "http" | "https"));
    let feeds = head
        .feed_hrefs()
        .iter()
        .filter_map(|h| join(h.trim()))
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .collect();
    let links = resolve_links(raw_links, join, opts.max_links);
    let texts = main_content::select_texts(&walk, opts.main_content, opts.max_text_bytes);
    Extracted {
        raw_title: head.title(dom),
        text: texts.main,
        own_text: texts.own,
        own_link_chars: texts.own_link_chars,
        framed: texts.framed,
        visible_chars: walk.els.iter().map(|e| e.own_chars as usize).sum(),
        links,
        canonical,
        feeds,
        lang_hint: head.lang_hint(),
        meta_nofollow: head.nofollow,
        meta_noindex: head.noindex,
    }
}

/// The page's links worth crawling, resolved with `join` (against the base URL), at
/// most `max`: same-document links and other schemes than http(s) are left out.
///
/// A page links to the same documents over and over, most often to
/// sections of them (the zh/en documentation mix: 123,000 links to
/// resolve, 34,000 documents): each document is resolved once per page
/// and its fragments joined to it ([`split_fragment`]).
fn resolve_links(raw_links: Vec<RawLink<'_>>, join: impl Fn(&str) -> Option<Url>, max: usize) -> Vec<Link> {
    let mut links = Vec::new();
    let mut documents: rustc_hash::FxHashMap<&str, Option<Url>> = rustc_hash::FxHashMap::default();
    for raw in raw_links {
        if links.len() >= max {
            break;
        }
        let href = raw.href.trim();
        // Same-document links ("#top", "") point back at this page: nothing to crawl.
        if href.is_empty() || href.starts_with('#') {
            continue;
        }
        let url = match split_fragment(href) {
            Some((document, fragment)) => {
                documents
                    .entry(document)
                    .or_insert_with(|| join(document))
                    .as_ref()
                    .and_then(|doc| match fragment {
                        None => Some(doc.clone()),
                        // `#fragment` joined to the document: the parser
                        // reserves the whole URL at once, where setting the
                        // fragment on a copy of the document grew the copy
                        // (0.3% of a crawl's instructions, issue 37).
                        Some(_) => doc.join(&href[document.len()..]).ok(),
                    })
            }
            None => join(href),
        };
        if let Some(u) = url
            && matches!(u.scheme(), "http" | "https")
        {
            let mut text = raw.text;
            text.truncate(text.trim_end().len());
            links.push(Link {
                url: u,
                nofollow: raw.nofollow,
                text,
            });
        }
    }
    links
}

/// `href` as the document it names and its fragment, where resolving the
/// document and then setting the fragment makes the URL that resolving
/// `href` makes: a fragment of bytes above the space (the parser drops
/// tabs and newlines and trims controls and spaces at the end, which
/// setting a fragment does not). `None` where that is not sure.
fn split_fragment(href: &str) -> Option<(&str, Option<&str>)> {
    match href.split_once('#') {
        None => Some((href, None)),
        Some((document, fragment)) if fragment.bytes().all(|b| b > b' ' && b != 0x7F) => {
            Some((document, Some(fragment)))
        }
        Some(_) => None,
    }
}

/// Resolves `href` against `base` the way a browser does on a page decoded
/// with `encoding`: the path is UTF-8, the query is encoded in the page's
/// (output) encoding, characters it cannot represent as `&#N;` references.
fn join_encoded(base: &Url, href: &str, encoding: &'static encoding_rs::Encoding) -> Option<Url> {
    let encoding = encoding.output_encoding();
    if encoding == encoding_rs::UTF_8 {
        return base.join(href).ok();
    }
    fn encode_in(encoding: &'static encoding_rs::Encoding) -> impl Fn(&str) -> std::borrow::Cow<'_, [u8]> {
        move |s| encoding.encode(s).0
    }
    let encode = encode_in(encoding);
    Url::options()
        .base_url(Some(base))
        .encoding_override(Some(&encode))
        .parse(href)
        .ok()
}

/// The separator the renderer owes before the next word, weakest first: a newline
/// wins over a space (the order is used).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Pending {
    Nothing,
    Space,
    Newline,
}

/// Turns events into text: one line per block, HTML whitespace collapsed.
#[derive(Debug)]
pub(crate) struct Renderer {
    pub out: String,
    /// The separator owed before the next word.
    pending: Pending,
    cap: usize,
    pub full: bool,
}

impl Renderer {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            out: String::new(),
            pending: Pending::Nothing,
            cap,
            full: false,
        }
    }

    fn flush(&mut self) {
        if !self.out.is_empty() {
            match self.pending {
                Pending::Newline => self.out.push('\n'),
                Pending::Space => self.out.push(' '),
                Pending::Nothing => {}
            }
        }
        self.pending = Pending::Nothing;
    }

    fn word(&mut self, w: &str) {
        self.flush();
        if !push_capped(&mut self.out, w, self.cap) {
            self.full = true;
        }
    }

    pub(crate) fn event(&mut self, ev: &Ev<'_>) {
        if self.full {
            return;
        }
        match *ev {
            Ev::Line { .. } => self.pending = Pending::Newline,
            Ev::Space { .. } => self.pending = self.pending.max(Pending::Space),
            Ev::Text { text, pre, .. } => {
                if pre {
                    for (i, line) in text.split('\n').enumerate() {
                        if i > 0 {
                            self.pending = Pending::Newline;
                        }
                        self.words(line);
                    }
                } else {
                    self.words(text);
                }
            }
        }
    }

    /// The words of `text` split at ASCII whitespace, as `str::split` would,
    /// found on its bytes: a whitespace byte is never inside a character,
    /// and decoding every character to find them was the renderer's cost.
    /// Words separated by one space each are what they render to: such a
    /// run is pushed whole when it fits under the cap, the bulk of a page's
    /// text in one copy instead of a push and a separator per word (issue
    /// 37); a run that does not fit goes word by word, as before, so the
    /// cap cuts where it did ([`Renderer::words_one_by_one`]).
    fn words(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if b.is_ascii_whitespace() {
                self.pending = self.pending.max(Pending::Space);
                i += 1;
                continue;
            }
            // A run of words separated by single spaces, from `i` to `j`.
            let mut j = i;
            loop {
                j = next_whitespace(bytes, j);
                match (bytes.get(j), bytes.get(j + 1)) {
                    (Some(b' '), Some(next)) if !next.is_ascii_whitespace() => j += 1,
                    _ => break,
                }
            }
            let Some(run) = text.get(i..j) else { return };
            self.flush();
            if run.len() <= self.cap.saturating_sub(self.out.len()) {
                self.out.push_str(run);
            } else {
                self.words_one_by_one(run);
                if self.full {
                    return;
                }
            }
            i = j;
        }
    }

    /// The words of `text` (separated by single spaces, the first one's
    /// separator already flushed), each pushed under the cap.
    fn words_one_by_one(&mut self, text: &str) {
        for (k, w) in text.split(' ').enumerate() {
            if k > 0 {
                self.pending = self.pending.max(Pending::Space);
            }
            self.word(w);
            if self.full {
                return;
            }
        }
    }
}

/// The offset of the first ASCII whitespace byte at or after `i`
/// (`bytes.len()` if none), as `position(u8::is_ascii_whitespace)` finds
/// it, eight bytes at a time: a word whose bytes are all above 0x20 holds
/// none. Between two spaces of English are a few bytes, but a Chinese
/// paragraph is one run of hundreds, passed here in an eighth of the
/// steps (issue 37).
#[inline]
fn next_whitespace(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    loop {
        while let Some(Ok(word)) = bytes.get(i..i + 8).map(<[u8; 8]>::try_from) {
            let x = u64::from_le_bytes(word);
            // The high bit of each byte below 0x21 (a byte from 0x80 is
            // not: `!x` clears it). Borrows run only up, to later bytes, so
            // the first flagged byte is the first such byte.
            let low = x.wrapping_sub(ONES * 0x21) & !x & HIGH;
            if low != 0 {
                i += low.trailing_zeros() as usize / 8;
                break;
            }
            i += 8;
        }
        match bytes.get(i) {
            None => return bytes.len(),
            Some(b) if b.is_ascii_whitespace() => return i,
            // A control byte below the space, or the last bytes of the text.
            Some(_) => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text of which [`next_whitespace`] is tried at every offset: every
    /// ASCII whitespace byte, controls beside them, and runs without any.
    const PIECES: &[&str] = &[
        "a",
        "中文",
        " ",
        "\t",
        "\n",
        "\r",
        "\x0c",
        "\x0b",
        "\x01",
        "é",
        "!",
        "~",
        "\x7f",
        "文字文字文字",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        #[test]
        fn next_whitespace_finds_what_a_byte_scan_finds(
            // Mostly text without whitespace, so long runs are tried.
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    4 => proptest::sample::select(&["a", "中文", "é"][..]),
                    1 => proptest::sample::select(PIECES),
                ],
                0..40,
            )
        ) {
            let text = pieces.concat();
            let bytes = text.as_bytes();
            for from in 0..=bytes.len() {
                let want = bytes[from..]
                    .iter()
                    .position(u8::is_ascii_whitespace)
                    .map_or(bytes.len(), |p| from + p);
                proptest::prop_assert_eq!(next_whitespace(bytes, from), want, "{:?} from {}", text, from);
            }
        }
    }

    #[test]
    fn capped_push_cuts_on_char_boundary() {
        let mut s = String::new();
        assert!(!push_capped(&mut s, "中文字", 7));
        assert_eq!(s, "中文");
    }

    /// The words pushed by the run as they were one by one, cap included.
    #[test]
    fn runs_render_as_words_one_by_one() {
        fn one_by_one(r: &mut Renderer, text: &str) {
            let bytes = text.as_bytes();
            let mut start = 0;
            loop {
                let end = bytes[start..]
                    .iter()
                    .position(u8::is_ascii_whitespace)
                    .map_or(bytes.len(), |p| start + p);
                if start < end {
                    r.word(&text[start..end]);
                    if r.full {
                        return;
                    }
                }
                if end >= bytes.len() {
                    return;
                }
                r.pending = r.pending.max(Pending::Space);
                start = end + 1;
            }
        }
        let texts = [
            "a b c",
            " lead and trail ",
            "two  spaces\nand\tline",
            "中文 字 x",
            "",
            " ",
            "word",
            "a b",
            "é ü  ö",
        ];
        for cap in [0, 1, 2, 3, 5, 8, 13, 100] {
            for pending in [Pending::Nothing, Pending::Space, Pending::Newline] {
                for (t1, t2) in texts.iter().zip(texts.iter().rev()) {
                    let (mut a, mut b) = (Renderer::new(cap), Renderer::new(cap));
                    for r in [&mut a, &mut b] {
                        r.out.push('x');
                        r.pending = pending;
                    }
                    // As `event` calls it: not once the text is full.
                    a.words(t1);
                    if !a.full {
                        a.words(t2);
                    }
                    one_by_one(&mut b, t1);
                    if !b.full {
                        one_by_one(&mut b, t2);
                    }
                    assert_eq!(
                        (&a.out, a.full, a.pending),
                        (&b.out, b.full, b.pending),
                        "{t1:?} {t2:?} cap {cap}"
                    );
                }
            }
        }
    }

    #[test]
    fn collapse_text() {
        assert_eq!(collapse("  a \n b  ", 100), "a b");
    }

    /// Documents, fragments and bases of every kind, joined in every
    /// pair: each document resolved once and its fragment joined to it
    /// gives the URL that resolving the whole href gives, in UTF-8 and in
    /// a legacy encoding (which encodes queries, not fragments).
    #[test]
    #[allow(clippy::unwrap_used)]
    fn links_resolved_once_per_document_are_those_resolved_whole() {
        let documents = [
            "a.html",
            "../b/c.html",
            "/abs/d.html",
            "?q=1",
            "?q=中文",
            "e.html?x=a b&y=é",
            "//other.test/p",
            "http://h.test",
            "HTTP://H.TEST:80/x",
            "https://h.test:99999/",
            "mailto:x@y.test",
            "javascript:void(0)",
            "f%zz.html",
            "g%41.html",
            "  spaced.html",
            "tab\tbed.html",
            "./",
            ".",
            "..",
            "h.html?",
            "中文.html",
            "http://[::1]/",
            "http://bad host/",
            "file.html\u{7f}",
        ];
        let fragments = [
            "",
            "top",
            "sec-1.2",
            "中文",
            "a%20b",
            "a b",
            "a\tb",
            "end ",
            "x\u{1}",
            "x\u{7f}",
            "#",
            "a#b",
            "é",
            "!$&'()*+,;=:@/?",
            "`{}<>\"",
        ];
        let bases = [
            "https://docs.test/lib/x/index.html?p=1#f",
            "http://h.test/",
            "https://h.test/a/b/",
        ];
        for (base, encoding) in bases.iter().flat_map(|b| {
            [
                (b, encoding_rs::UTF_8),
                (b, encoding_rs::GBK),
                (b, encoding_rs::WINDOWS_1252),
            ]
        }) {
            let base = Url::parse(base).unwrap();
            let join = |h: &str| join_encoded(&base, h, encoding);
            let mut hrefs = Vec::new();
            for d in documents {
                hrefs.push(d.to_string());
                for f in fragments {
                    hrefs.push(format!("{d}#{f}"));
                }
            }
            // Each document again, after its fragments: from the cache.
            hrefs.extend(documents.iter().map(|d| d.to_string()));
            let raw: Vec<RawLink<'_>> = hrefs
                .iter()
                .map(|h| RawLink {
                    href: h,
                    nofollow: false,
                    text: h.clone(),
                })
                .collect();
            let got = resolve_links(raw, join, usize::MAX);
            let want: Vec<(String, String)> = hrefs
                .iter()
                .filter_map(|h| {
                    let u = join(h.trim())?;
                    matches!(u.scheme(), "http" | "https").then(|| (u.to_string(), h.trim_end().to_string()))
                })
                .collect();
            let got: Vec<(String, String)> = got.into_iter().map(|l| (l.url.to_string(), l.text)).collect();
            assert!(want.len() > 300, "{} links", want.len());
            assert_eq!(got, want, "base {base}, {}", encoding.name());
        }
    }
}
