//! HTML to title, visible text, links and robots hints.
//!
//! One iterative pass over scraper's tree (no recursion: a page of a million nested
//! `<div>`s must not overflow the stack) records, per element, how much text and link
//! text it holds and where its text lies in a flat list of events. Main-content
//! selection ([`main_content`]) then picks element ranges and the renderer turns their
//! events into text. Everything is linear in the size of the document.

mod boilerplate;
mod main_content;

use ego_tree::NodeRef;
use ego_tree::iter::Edge;
use scraper::{ElementRef, Html, Node};
use url::Url;

use crate::Link;

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
    pub links: Vec<Link>,
    pub canonical: Option<Url>,
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
}

/// What an element does to the flow of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Not rendered at all (script, style, svg ...): the subtree is skipped.
    Skip,
    /// Starts and ends a line.
    Block,
    /// A table cell: separated by a space, but a paragraph owner like a block.
    Cell,
    /// A line break.
    Br,
    /// Flows with the text around it.
    Inline,
}

fn kind_of(name: &str) -> Kind {
    match name {
        "script" | "style" | "noscript" | "template" | "svg" | "math" | "iframe" | "object" | "embed"
        | "canvas" | "select" | "datalist" | "button" | "textarea" | "input" | "audio" | "video"
        | "title" => Kind::Skip,
        "address" | "article" | "aside" | "blockquote" | "body" | "center" | "dd" | "details" | "dialog"
        | "dir" | "div" | "dl" | "dt" | "fieldset" | "figcaption" | "figure" | "footer" | "form" | "h1"
        | "h2" | "h3" | "h4" | "h5" | "h6" | "header" | "hgroup" | "hr" | "html" | "legend" | "li"
        | "main" | "menu" | "nav" | "ol" | "p" | "pre" | "section" | "summary" | "table" | "tbody"
        | "thead" | "tfoot" | "tr" | "ul" | "caption" | "frameset" | "noframes" | "output" => Kind::Block,
        "td" | "th" => Kind::Cell,
        "br" => Kind::Br,
        _ => Kind::Inline,
    }
}

/// Per-element facts gathered during the walk.
#[derive(Debug, Clone)]
pub(crate) struct El {
    pub parent: u32,
    /// Block or cell: can own paragraphs and be a main-content candidate.
    pub block: bool,
    /// 3 `itemprop=articleBody` or a content class name (`entry-content` ...), 2 `<article>`, 1 `<main>`/`role=main`, 0 none.
    pub semantic: u8,
    pub tag_boiler: bool,
    pub class_boiler: bool,
    /// Text chars (non-whitespace) of text nodes directly inside.
    pub own_chars: u32,
    /// The part of `own_chars` inside links.
    pub own_link_chars: u32,
    /// Non-link text chars of the paragraph this block owns (its text and that of its
    /// inline descendants).
    pub para_chars: u32,
    pub para_commas: u32,
    pub ev_start: u32,
    pub ev_end: u32,
}

/// The flat text stream: each event names the element that emitted it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ev<'a> {
    Text { owner: u32, text: &'a str, pre: bool },
    Line { owner: u32 },
    Space { owner: u32 },
}

impl Ev<'_> {
    pub(crate) fn owner(&self) -> u32 {
        match *self {
            Ev::Text { owner, .. } | Ev::Line { owner } | Ev::Space { owner } => owner,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    el: u32,
    kind: Kind,
    /// Nearest block or cell, self included.
    owner: u32,
    hidden: bool,
    pre: bool,
    anchor: Option<usize>,
}

#[derive(Debug)]
struct RawLink<'a> {
    href: &'a str,
    nofollow: bool,
    text: String,
}

/// The walk's output.
#[derive(Debug, Default)]
pub(crate) struct Walk<'a> {
    pub els: Vec<El>,
    pub events: Vec<Ev<'a>>,
}

/// Whether an element's text is hidden from readers.
fn is_hidden(e: &scraper::node::Element) -> bool {
    if e.attr("hidden").is_some() {
        return true;
    }
    if e.attr("aria-hidden")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return true;
    }
    if let Some(style) = e.attr("style") {
        let squashed: String = style
            .chars()
            .filter(|c| !c.is_whitespace())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        return squashed.contains("display:none") || squashed.contains("visibility:hidden");
    }
    false
}

/// Counts non-whitespace chars and clause punctuation (readability's "commas", with
/// the Chinese ones) in one pass over the bytes.
fn count_text(s: &str) -> (u32, u32) {
    let b = s.as_bytes();
    let mut chars = 0u32;
    let mut commas = 0u32;
    for (i, &c) in b.iter().enumerate() {
        if c & 0xC0 != 0x80 && !c.is_ascii_whitespace() {
            chars = chars.saturating_add(1);
        }
        if c == b',' {
            commas = commas.saturating_add(1);
        } else if c == 0xEF {
            // ， U+FF0C
            if b.get(i + 1) == Some(&0xBC) && b.get(i + 2) == Some(&0x8C) {
                commas = commas.saturating_add(1);
            }
        } else if c == 0xE3 {
            // 、 U+3001, 。 U+3002
            if b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(&0x81 | &0x82)) {
                commas = commas.saturating_add(1);
            }
        }
    }
    (chars, commas)
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

fn has_token(value: &str, token: &str) -> bool {
    value
        .split(|c: char| c.is_ascii_whitespace() || c == ',')
        .any(|t| t.eq_ignore_ascii_case(token))
}

/// Extracts everything from a parsed document.
pub(crate) fn extract(html: &Html, url: &Url, opts: &ExtractOptions) -> Extracted {
    let mut out = Extracted::default();
    let mut walk = Walk::default();
    let mut stack: Vec<Frame> = Vec::new();
    let mut skipping: Option<ego_tree::NodeId> = None;
    let mut raw_links: Vec<RawLink<'_>> = Vec::new();
    let mut title: Option<String> = None;
    let mut og_title: Option<String> = None;
    let mut first_h1: Option<NodeRef<'_, Node>> = None;
    let mut base_href: Option<&str> = None;
    let mut canonical_href: Option<&str> = None;
    let mut content_language: Option<&str> = None;

    for edge in html.tree.root().traverse() {
        match edge {
            Edge::Open(node) => {
                if skipping.is_some() {
                    continue;
                }
                match node.value() {
                    Node::Element(e) => {
                        let name = e.name();
                        match name {
                            "title" if title.is_none() => {
                                if let Some(er) = ElementRef::wrap(node) {
                                    title = Some(collapse(&er.text().collect::<String>(), MAX_TITLE_BYTES));
                                }
                            }
                            "meta" => {
                                let content = e.attr("content").unwrap_or("");
                                let key = e.attr("name").or_else(|| e.attr("property"));
                                if let Some(key) = key {
                                    if key.eq_ignore_ascii_case("robots") {
                                        let none = has_token(content, "none");
                                        out.meta_noindex |= none || has_token(content, "noindex");
                                        out.meta_nofollow |= none || has_token(content, "nofollow");
                                    } else if key.eq_ignore_ascii_case("og:title") && og_title.is_none() {
                                        og_title = Some(collapse(content, MAX_TITLE_BYTES));
                                    }
                                }
                                if e.attr("http-equiv")
                                    .is_some_and(|h| h.eq_ignore_ascii_case("content-language"))
                                    && content_language.is_none()
                                {
                                    content_language = Some(content);
                                }
                            }
                            "link"
                                if canonical_href.is_none()
                                    && e.attr("rel").is_some_and(|r| has_token(r, "canonical")) =>
                            {
                                canonical_href = e.attr("href");
                            }
                            "base" if base_href.is_none() => base_href = e.attr("href"),
                            "html" if out.lang_hint.is_none() => {
                                out.lang_hint = e
                                    .attr("lang")
                                    .map(str::trim)
                                    .filter(|l| !l.is_empty())
                                    .map(str::to_owned);
                            }
                            "h1" if first_h1.is_none() => first_h1 = Some(node),
                            _ => {}
                        }
                        let kind = kind_of(name);
                        if kind == Kind::Skip {
                            skipping = Some(node.id());
                            continue;
                        }
                        let parent = stack.last().copied();
                        let idx = u32::try_from(walk.els.len()).unwrap_or(NONE - 1);
                        let block = matches!(kind, Kind::Block | Kind::Cell);
                        let role = e.attr("role");
                        let semantic = if e.attr("itemprop").is_some_and(|v| has_token(v, "articleBody"))
                            || e.attr("class").is_some_and(boilerplate::is_content_name)
                            || e.attr("id").is_some_and(boilerplate::is_content_name)
                        {
                            3
                        } else if name == "article" {
                            2
                        } else if name == "main" || role.is_some_and(|r| has_token(r, "main")) {
                            1
                        } else {
                            0
                        };
                        let tag_boiler = boilerplate::is_boilerplate_tag(name)
                            || role.is_some_and(boilerplate::is_boilerplate_role);
                        // Figures are images with captions and credits, which are not the
                        // article's prose; like a class mark, a figure that holds most of
                        // the page's text is kept after all.
                        let class_boiler = matches!(name, "figure" | "figcaption")
                            || !matches!(name, "body" | "html" | "article" | "main")
                                && boilerplate::is_boilerplate_names(
                                    e.attr("class").unwrap_or(""),
                                    e.attr("id").unwrap_or(""),
                                );
                        let hidden = parent.is_some_and(|p| p.hidden) || is_hidden(e);
                        let ev_start = u32::try_from(walk.events.len()).unwrap_or(NONE);
                        walk.els.push(El {
                            parent: parent.map_or(NONE, |p| p.el),
                            block,
                            semantic,
                            tag_boiler,
                            class_boiler,
                            own_chars: 0,
                            own_link_chars: 0,
                            para_chars: 0,
                            para_commas: 0,
                            ev_start,
                            ev_end: ev_start,
                        });
                        let mut anchor = parent.and_then(|p| p.anchor);
                        if matches!(name, "a" | "area")
                            && let Some(href) = e.attr("href")
                        {
                            raw_links.push(RawLink {
                                href,
                                nofollow: e.attr("rel").is_some_and(|r| has_token(r, "nofollow")),
                                text: String::new(),
                            });
                            anchor = Some(raw_links.len() - 1);
                        }
                        let frame = Frame {
                            el: idx,
                            kind,
                            owner: if block {
                                idx
                            } else {
                                parent.map_or(idx, |p| p.owner)
                            },
                            hidden,
                            pre: parent.is_some_and(|p| p.pre) || name == "pre",
                            anchor,
                        };
                        if !hidden {
                            match kind {
                                Kind::Block | Kind::Br => walk.events.push(Ev::Line { owner: idx }),
                                Kind::Cell => walk.events.push(Ev::Space { owner: idx }),
                                Kind::Inline | Kind::Skip => {}
                            }
                        }
                        stack.push(frame);
                    }
                    Node::Text(t) => {
                        let Some(frame) = stack.last().copied() else {
                            continue;
                        };
                        let text: &str = t;
                        if let Some(a) = frame.anchor
                            && let Some(link) = raw_links.get_mut(a)
                        {
                            push_collapsed(&mut link.text, text, MAX_LINK_TEXT_BYTES);
                        }
                        if frame.hidden {
                            continue;
                        }
                        let (chars, commas) = count_text(text);
                        if let Some(el) = walk.els.get_mut(frame.el as usize) {
                            el.own_chars = el.own_chars.saturating_add(chars);
                            if frame.anchor.is_some() {
                                el.own_link_chars = el.own_link_chars.saturating_add(chars);
                            }
                        }
                        if frame.anchor.is_none()
                            && let Some(owner) = walk.els.get_mut(frame.owner as usize)
                        {
                            owner.para_chars = owner.para_chars.saturating_add(chars);
                            owner.para_commas = owner.para_commas.saturating_add(commas);
                        }
                        walk.events.push(Ev::Text {
                            owner: frame.el,
                            text,
                            pre: frame.pre,
                        });
                    }
                    _ => {}
                }
            }
            Edge::Close(node) => {
                if let Some(id) = skipping {
                    if id == node.id() {
                        skipping = None;
                    }
                    continue;
                }
                if !node.value().is_element() {
                    continue;
                }
                let Some(frame) = stack.pop() else {
                    continue;
                };
                if !frame.hidden && frame.kind == Kind::Block {
                    walk.events.push(Ev::Line { owner: frame.el });
                }
                let end = u32::try_from(walk.events.len()).unwrap_or(NONE);
                if let Some(el) = walk.els.get_mut(frame.el as usize) {
                    el.ev_end = end;
                }
            }
        }
    }

    // Title: <title>, then og:title, then the first <h1>.
    let h1 = || {
        first_h1
            .and_then(ElementRef::wrap)
            .map(|er| collapse(&er.text().collect::<String>(), MAX_TITLE_BYTES))
    };
    out.raw_title = title
        .filter(|t| !t.is_empty())
        .or_else(|| og_title.filter(|t| !t.is_empty()))
        .or_else(h1)
        .unwrap_or_default();

    if out.lang_hint.is_none() {
        out.lang_hint = content_language
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned);
    }

    // Links, resolved against <base href> (itself resolved against the page URL).
    let base = base_href
        .and_then(|h| url.join(h.trim()).ok())
        .filter(|b| matches!(b.scheme(), "http" | "https"))
        .unwrap_or_else(|| url.clone());
    let join = |href: &str| join_encoded(&base, href, opts.encoding);
    out.canonical = canonical_href
        .and_then(|h| join(h.trim()))
        .filter(|u| matches!(u.scheme(), "http" | "https"));
    for raw in raw_links {
        if out.links.len() >= opts.max_links {
            break;
        }
        let href = raw.href.trim();
        // Same-document links ("#top", "") point back at this page: nothing to crawl.
        if href.is_empty() || href.starts_with('#') {
            continue;
        }
        if let Some(u) = join(href)
            && matches!(u.scheme(), "http" | "https")
        {
            let mut text = raw.text;
            text.truncate(text.trim_end().len());
            out.links.push(Link {
                url: u,
                nofollow: raw.nofollow,
                text,
            });
        }
    }

    out.text = main_content::select_text(&walk, opts.main_content, opts.max_text_bytes);
    out
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

/// Turns events into text: one line per block, HTML whitespace collapsed.
#[derive(Debug)]
pub(crate) struct Renderer {
    pub out: String,
    /// 0 nothing pending, 1 a space, 2 a newline.
    pending: u8,
    cap: usize,
    pub full: bool,
}

impl Renderer {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            out: String::new(),
            pending: 0,
            cap,
            full: false,
        }
    }

    fn flush(&mut self) {
        if !self.out.is_empty() {
            match self.pending {
                2 => self.out.push('\n'),
                1 => self.out.push(' '),
                _ => {}
            }
        }
        self.pending = 0;
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
            Ev::Line { .. } => self.pending = 2,
            Ev::Space { .. } => self.pending = self.pending.max(1),
            Ev::Text { text, pre, .. } => {
                if pre {
                    for (i, line) in text.split('\n').enumerate() {
                        if i > 0 {
                            self.pending = 2;
                        }
                        self.words(line);
                    }
                } else {
                    self.words(text);
                }
            }
        }
    }

    fn words(&mut self, text: &str) {
        let mut first = true;
        for w in text.split(|c: char| c.is_ascii_whitespace()) {
            if !first {
                self.pending = self.pending.max(1);
            }
            first = false;
            if !w.is_empty() {
                self.word(w);
                if self.full {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(count_text("  ab c "), (3, 0));
        assert_eq!(count_text("中文，句子。列表、x,y"), (12, 4));
    }

    #[test]
    fn capped_push_cuts_on_char_boundary() {
        let mut s = String::new();
        assert!(!push_capped(&mut s, "中文字", 7));
        assert_eq!(s, "中文");
    }

    #[test]
    fn collapse_text() {
        assert_eq!(collapse("  a \n b  ", 100), "a b");
    }
}
