//! The text walk: per element, how much text and link text it holds and where its
//! text lies in a flat list of events, for main-content selection and rendering.
//!
//! [`Walker`] holds what the walk accumulates and has one handler per traversal
//! event (element opened, text, element closed); [`super::extract`] drives it.

use html5ever::{LocalName, local_name};

use crate::dom::{ElementRef, NodeId, is_heading};
use crate::same::Text;

use super::boilerplate::{NamesSoFar, TokenNames};
use super::{MAX_LINK_TEXT_BYTES, NONE, boilerplate, has_token, push_collapsed};

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

fn kind_of(name: &LocalName) -> Kind {
    match *name {
        local_name!("script")
        | local_name!("style")
        | local_name!("noscript")
        | local_name!("template")
        | local_name!("svg")
        | local_name!("math")
        | local_name!("iframe")
        | local_name!("object")
        | local_name!("embed")
        | local_name!("canvas")
        | local_name!("select")
        | local_name!("datalist")
        | local_name!("button")
        | local_name!("textarea")
        | local_name!("input")
        | local_name!("audio")
        | local_name!("video")
        | local_name!("title") => Kind::Skip,
        local_name!("address")
        | local_name!("article")
        | local_name!("aside")
        | local_name!("blockquote")
        | local_name!("body")
        | local_name!("center")
        | local_name!("dd")
        | local_name!("details")
        | local_name!("dialog")
        | local_name!("dir")
        | local_name!("div")
        | local_name!("dl")
        | local_name!("dt")
        | local_name!("fieldset")
        | local_name!("figcaption")
        | local_name!("figure")
        | local_name!("footer")
        | local_name!("form")
        | local_name!("h1")
        | local_name!("h2")
        | local_name!("h3")
        | local_name!("h4")
        | local_name!("h5")
        | local_name!("h6")
        | local_name!("header")
        | local_name!("hgroup")
        | local_name!("hr")
        | local_name!("html")
        | local_name!("legend")
        | local_name!("li")
        | local_name!("main")
        | local_name!("menu")
        | local_name!("nav")
        | local_name!("ol")
        | local_name!("p")
        | local_name!("pre")
        | local_name!("section")
        | local_name!("summary")
        | local_name!("table")
        | local_name!("tbody")
        | local_name!("thead")
        | local_name!("tfoot")
        | local_name!("tr")
        | local_name!("ul")
        | local_name!("caption")
        | local_name!("frameset")
        | local_name!("noframes")
        | local_name!("output") => Kind::Block,
        local_name!("td") | local_name!("th") => Kind::Cell,
        local_name!("br") => Kind::Br,
        _ => Kind::Inline,
    }
}

/// How explicitly the markup says an element is the page's content, weakest first
/// (the order is used: main-content selection trusts the strongest marker present).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Semantic {
    /// No marker.
    None,
    /// `<main>` or `role=main`: the page's main part, which may still hold
    /// related links, comments and the like.
    Main,
    /// `<article>`: an article, possibly one of several (a listing).
    Article,
    /// `itemprop=articleBody` or a content class or id name (`entry-content` ...):
    /// the body of the article itself.
    Body,
}

impl Semantic {
    /// The marker on an element named `name` with attributes `a`, whose
    /// class and id say `names`.
    fn of(name: &LocalName, a: &Marks<'_>, names: NameMarks) -> Self {
        if a.itemprop.is_some_and(|v| has_token(v, "articleBody")) || names.content {
            Self::Body
        } else if *name == local_name!("article") {
            Self::Article
        } else if *name == local_name!("main") || a.role.is_some_and(|r| has_token(r, "main")) {
            Self::Main
        } else {
            Self::None
        }
    }
}

/// Per-element facts gathered during the walk.
#[derive(Debug, Clone)]
pub(crate) struct El {
    pub parent: u32,
    /// Block or cell: can own paragraphs and be a main-content candidate.
    pub block: bool,
    pub semantic: Semantic,
    pub tag_boiler: bool,
    pub class_boiler: bool,
    /// Its class marks it template only by a generic box word
    /// ([`boilerplate::names_generic_box`]).
    pub generic_box: bool,
    /// A section that opens with a heading naming related content
    /// ([`boilerplate::names_related`]): other pages' teasers, template
    /// even when they outweigh the article (a WordPress theme's "you may
    /// also like" made of whole posts, which extraction took for the
    /// story: issue 35's news set).
    pub related: bool,
    /// Its class or id names an article's lead (`article__summary`,
    /// `standfirst`, `story-intro`): the paragraph a news template sets
    /// apart above the article's body ([`boilerplate::names_lead`]).
    pub lead: bool,
    /// Hidden from readers (`hidden`, `aria-hidden`, `display: none`), itself
    /// or by an ancestor: its text is in the events, for the page's own text
    /// (a help system un-hides the variant of a paragraph that fits the
    /// reader's module by script), but counts nowhere and is not main text.
    pub hidden: bool,
    /// A `<pre>`: text laid out by its author (a mail's body in every mail
    /// archive, a listing, a plain-text document), never a notice box.
    pub preformatted: bool,
    /// An `<hr>`: a thematic break, which ends a run of `<pre>` blocks (a
    /// message archive's message, then its thread and reply sections).
    pub rule: bool,
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

/// An open element on the walk's stack: what its descendants inherit.
#[derive(Debug, Clone, Copy)]
struct Frame {
    el: u32,
    kind: Kind,
    /// Nearest block or cell, self included.
    owner: u32,
    hidden: bool,
    pre: bool,
    /// The enclosing link, an index in [`Walker::links`].
    anchor: Option<usize>,
}

/// A link as written in the page, before resolution.
#[derive(Debug)]
pub(super) struct RawLink<'a> {
    pub(super) href: &'a str,
    pub(super) nofollow: bool,
    /// Its text, whitespace collapsed, capped at [`MAX_LINK_TEXT_BYTES`].
    pub(super) text: String,
}

/// The walk's output.
#[derive(Debug, Default)]
pub(crate) struct Walk<'a> {
    pub els: Vec<El>,
    pub events: Vec<Ev<'a>>,
}

/// The walk in progress: its output so far, the open elements and the links.
#[derive(Debug, Default)]
pub(super) struct Walker<'a> {
    walk: Walk<'a>,
    stack: Vec<Frame>,
    /// The skipped element (script, style ...) whose subtree the walk is in.
    skipping: Option<NodeId>,
    links: Vec<RawLink<'a>>,
    /// What each (class, id) pair said: a page repeats a few class values
    /// on thousands of elements (a highlighted listing's `class="n"` on
    /// every name), and reading the names was a third of the walk. Keyed
    /// by [`Text`], compared by `same`: `==` on the keys, libc's `memcmp`,
    /// was 12% of the cleaner's time on the zh/en docs mix for 1% of its
    /// instructions (`crate::same` says why).
    names: rustc_hash::FxHashMap<(Text<'a>, Text<'a>), NameMarks>,
    /// Whether links' texts are collected.
    link_texts: bool,
}

/// What an element's `class` and `id` say about it, whatever its tag.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct NameMarks {
    /// They name a template part ([`boilerplate::is_boilerplate_names`]).
    boiler: bool,
    /// ... only by a generic box word ([`boilerplate::names_generic_box`]).
    generic_box: bool,
    /// They name an article's lead ([`boilerplate::names_lead`]).
    lead: bool,
    /// They name an article's body ([`boilerplate::is_content_name`]).
    content: bool,
    /// The class hides the element on every screen ([`Marks::hidden`]).
    hidden: bool,
}

/// About the most bytes [`NameMarks::of`] keeps on a thread of the class
/// tokens it has read (the tokens, and [`TOKEN_OVERHEAD`] for each): a
/// pool of 64 threads holds 64 MB at most.
const REMEMBERED_BYTES: usize = 1 << 20;

/// What a remembered token costs beside its bytes: the boxed string, its
/// facts and the map's slot, roughly.
const TOKEN_OVERHEAD: usize = 40;

thread_local! {
    /// The facts of the class tokens a thread has read, across the pages it
    /// cleans, and the bytes they take.
    static CLASS_TOKENS: std::cell::RefCell<(usize, rustc_hash::FxHashMap<Box<str>, TokenNames>)> =
        std::cell::RefCell::default();
}

/// The facts of `token` from `by_token`, read and kept there when it is
/// not (the map started again when its `count` of bytes would pass
/// [`REMEMBERED_BYTES`]).
fn remember(
    count: &mut usize,
    by_token: &mut rustc_hash::FxHashMap<Box<str>, TokenNames>,
    token: &str,
) -> TokenNames {
    if let Some(facts) = by_token.get(token) {
        return *facts;
    }
    let facts = TokenNames::of(token);
    let bytes = token.len() + TOKEN_OVERHEAD;
    if *count + bytes > REMEMBERED_BYTES {
        by_token.clear();
        *count = 0;
    }
    by_token.insert(token.into(), facts);
    *count += bytes;
    facts
}

impl NameMarks {
    /// What `class` and `id` say, their tokens read once for every rule
    /// ([`TokenNames`]). A class token's facts are remembered across
    /// pages: a site's pages share their template's and their
    /// highlighter's class names. An id's are not: most ids are a page's
    /// own (a section's anchor), and remembering them filled the memory
    /// with names never met again (when it kept pairs of class and id,
    /// 23 of a page's elements a page missed it on the zh/en
    /// documentation mix, issue 37).
    fn of(class: &str, id: &str) -> Self {
        let mut names = NamesSoFar::default();
        let mut hidden = false;
        if !class.is_empty() {
            CLASS_TOKENS.with(|remembered| {
                let mut remembered = remembered.try_borrow_mut().ok();
                for token in class.split_ascii_whitespace() {
                    let facts = match remembered.as_deref_mut() {
                        Some((count, by_token)) => remember(count, by_token, token),
                        None => TokenNames::of(token),
                    };
                    facts.fold(&mut names);
                    hidden |= facts.hidden;
                }
            });
        }
        for token in id.split_ascii_whitespace() {
            TokenNames::of(token).fold(&mut names);
        }
        let boiler = names.boiler();
        Self {
            boiler,
            generic_box: boiler && boilerplate::names_generic_box(class, id),
            lead: names.lead,
            content: names.content,
            hidden,
        }
    }

    /// What `class` and `id` say, read rule by rule on the whole values:
    /// the reference [`NameMarks::of`] is tested against.
    #[cfg(test)]
    fn by_rules(class: &str, id: &str) -> Self {
        let boiler = boilerplate::is_boilerplate_names(class, id);
        Self {
            boiler,
            generic_box: boiler && boilerplate::names_generic_box(class, id),
            lead: boilerplate::names_lead(class) || boilerplate::names_lead(id),
            content: boilerplate::is_content_name(class) || boilerplate::is_content_name(id),
            hidden: has_token(class, "hidden") || has_token(class, "d-none"),
        }
    }
}

impl<'a> Walker<'a> {
    /// A walk over a tree of `nodes` nodes, its lists reserved for them (a
    /// large page's growing them was a hundredth of the cleaning).
    pub(super) fn for_nodes(nodes: usize, link_texts: bool) -> Self {
        let mut w = Self {
            link_texts,
            ..Self::default()
        };
        // A page's distinct pairs of class and id are some tens to a few
        // hundred: growing the map from nothing rehashed it six times.
        w.names.reserve((nodes / 64).min(256));
        // Links: some tens a page, hundreds on an index.
        w.links.reserve((nodes / 64).min(1024));
        w.walk.els.reserve(nodes / 2);
        w.walk.events.reserve(nodes);
        w
    }

    /// Whether the walk is inside a skipped subtree, whose nodes it ignores.
    pub(super) fn is_skipping(&self) -> bool {
        self.skipping.is_some()
    }

    /// An element opens: records it, its link, and the line or space it starts.
    pub(super) fn open_element(&mut self, node: NodeId, e: ElementRef<'a>) {
        let name = e.local();
        let kind = kind_of(name);
        if kind == Kind::Skip {
            self.skipping = Some(node);
            return;
        }
        let parent = self.stack.last().copied();
        let idx = u32::try_from(self.walk.els.len()).unwrap_or(NONE - 1);
        let block = matches!(kind, Kind::Block | Kind::Cell);
        let marks = Marks::of(e);
        let role = marks.role;
        let names = self.names_of(marks.class, marks.id);
        let semantic = Semantic::of(name, &marks, names);
        let tag_boiler =
            boilerplate::is_boilerplate_tag(name) || role.is_some_and(boilerplate::is_boilerplate_role);
        // Figures are images with captions and credits, which are not the
        // article's prose; like a class mark, a figure that holds most of
        // the page's text is kept after all.
        let class_boiler = matches!(*name, local_name!("figure") | local_name!("figcaption"))
            || !matches!(
                *name,
                local_name!("body") | local_name!("html") | local_name!("article") | local_name!("main")
            ) && names.boiler;
        // A heading naming related content that opens its parent (nothing
        // before it): the parent is that section.
        if is_heading(name)
            && (marks.class.is_some_and(boilerplate::names_related)
                || marks.id.is_some_and(boilerplate::names_related))
            && let Some(p) = parent
            && p.el.checked_add(1) == Some(idx)
            && let Some(section) = self.walk.els.get_mut(p.el as usize)
            && section.own_chars == 0
        {
            section.related = true;
        }
        let hidden = parent.is_some_and(|p| p.hidden) || marks.hidden(names);
        let ev_start = u32::try_from(self.walk.events.len()).unwrap_or(NONE);
        self.walk.els.push(El {
            parent: parent.map_or(NONE, |p| p.el),
            block,
            semantic,
            tag_boiler,
            class_boiler,
            generic_box: class_boiler && names.generic_box,
            related: false,
            lead: names.lead,
            hidden,
            preformatted: *name == local_name!("pre"),
            rule: *name == local_name!("hr"),
            own_chars: 0,
            own_link_chars: 0,
            para_chars: 0,
            para_commas: 0,
            ev_start,
            ev_end: ev_start,
        });
        let mut anchor = parent.and_then(|p| p.anchor);
        if matches!(*name, local_name!("a") | local_name!("area"))
            && let Some(href) = marks.href
        {
            self.links.push(RawLink {
                href,
                nofollow: marks.rel.is_some_and(|r| has_token(r, "nofollow")),
                text: String::new(),
            });
            anchor = Some(self.links.len() - 1);
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
            pre: parent.is_some_and(|p| p.pre) || *name == local_name!("pre"),
            anchor,
        };
        match kind {
            Kind::Block | Kind::Br => self.walk.events.push(Ev::Line { owner: idx }),
            Kind::Cell => self.walk.events.push(Ev::Space { owner: idx }),
            Kind::Inline | Kind::Skip => {}
        }
        self.stack.push(frame);
    }

    /// What a class and id say, computed once per distinct pair on a page.
    fn names_of(&mut self, class: Option<&'a str>, id: Option<&'a str>) -> NameMarks {
        if class.is_none() && id.is_none() {
            return NameMarks::default();
        }
        let key = (Text(class.unwrap_or("")), Text(id.unwrap_or("")));
        *self
            .names
            .entry(key)
            .or_insert_with(|| NameMarks::of(key.0.0, key.1.0))
    }

    /// A text node: counted for its element, its paragraph and its link.
    pub(super) fn text(&mut self, text: &'a str) {
        let Some(frame) = self.stack.last().copied() else {
            return;
        };
        if let Some(a) = frame.anchor
            && self.link_texts
            && let Some(link) = self.links.get_mut(a)
        {
            push_collapsed(&mut link.text, text, MAX_LINK_TEXT_BYTES);
        }
        if frame.hidden {
            self.walk.events.push(Ev::Text {
                owner: frame.el,
                text,
                pre: frame.pre,
            });
            return;
        }
        let (chars, commas) = count_text(text);
        if let Some(el) = self.walk.els.get_mut(frame.el as usize) {
            el.own_chars = el.own_chars.saturating_add(chars);
            if frame.anchor.is_some() {
                el.own_link_chars = el.own_link_chars.saturating_add(chars);
            }
        }
        if frame.anchor.is_none()
            && let Some(owner) = self.walk.els.get_mut(frame.owner as usize)
        {
            owner.para_chars = owner.para_chars.saturating_add(chars);
            owner.para_commas = owner.para_commas.saturating_add(commas);
        }
        self.walk.events.push(Ev::Text {
            owner: frame.el,
            text,
            pre: frame.pre,
        });
    }

    /// A node closes: ends a skipped subtree, or an element's line and event range.
    pub(super) fn close(&mut self, node: NodeId, is_element: bool) {
        if let Some(id) = self.skipping {
            if id == node {
                self.skipping = None;
            }
            return;
        }
        if !is_element {
            return;
        }
        let Some(frame) = self.stack.pop() else {
            return;
        };
        if frame.kind == Kind::Block {
            self.walk.events.push(Ev::Line { owner: frame.el });
        }
        let end = u32::try_from(self.walk.events.len()).unwrap_or(NONE);
        if let Some(el) = self.walk.els.get_mut(frame.el as usize) {
            el.ev_end = end;
        }
    }

    /// The walk and the page's links, in page order.
    pub(super) fn finish(self) -> (Walk<'a>, Vec<RawLink<'a>>) {
        (self.walk, self.links)
    }
}

/// The attributes the walk reads, found in one pass over an element's
/// attribute list. `Element::attr` interns its argument and searches the
/// list on every call, and the walk asks for up to ten per element: that
/// was a tenth of the extraction's time.
#[derive(Debug, Default)]
struct Marks<'a> {
    role: Option<&'a str>,
    itemprop: Option<&'a str>,
    class: Option<&'a str>,
    id: Option<&'a str>,
    hidden: bool,
    aria_hidden: Option<&'a str>,
    style: Option<&'a str>,
    href: Option<&'a str>,
    rel: Option<&'a str>,
}

impl<'a> Marks<'a> {
    fn of(e: ElementRef<'a>) -> Self {
        let mut m = Marks::default();
        // The parser keeps the first of repeated attributes, as `attr` finds.
        for (name, value) in e.attrs() {
            match *name {
                local_name!("role") => m.role = Some(value),
                local_name!("itemprop") => m.itemprop = Some(value),
                local_name!("class") => m.class = Some(value),
                local_name!("id") => m.id = Some(value),
                local_name!("hidden") => m.hidden = true,
                local_name!("aria-hidden") => m.aria_hidden = Some(value),
                local_name!("style") => m.style = Some(value),
                local_name!("href") => m.href = Some(value),
                local_name!("rel") => m.rel = Some(value),
                _ => {}
            }
        }
        m
    }

    /// Whether the element's text is hidden from readers: the `hidden`
    /// attribute, `aria-hidden`, an inline `display: none`, or the class
    /// that CSS frameworks define as `display: none` for every screen
    /// (Bootstrap's `hidden` and `d-none`; `hidden-xs` hides on one screen
    /// size only and is not one). News templates put schema.org metadata
    /// (image URLs, author, dates) in such a span after the article, and
    /// it read as the article's last paragraph: a short story and its copy
    /// on another site were then 0.66 alike (issue 35).
    fn hidden(&self, names: NameMarks) -> bool {
        if self.hidden {
            return true;
        }
        if names.hidden {
            return true;
        }
        if self
            .aria_hidden
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        {
            return true;
        }
        if let Some(style) = self.style {
            let squashed: String = style
                .chars()
                .filter(|c| !c.is_whitespace())
                .map(|c| c.to_ascii_lowercase())
                .collect();
            return squashed.contains("display:none") || squashed.contains("visibility:hidden");
        }
        false
    }
}

/// Counts non-whitespace chars and clause punctuation (readability's "commas", with
/// the Chinese ones). The chars and ASCII commas are counted byte by byte in a loop
/// without branches, which the compiler turns into vector code; the Chinese commas
/// (three bytes each) are looked for only at their lead bytes, found by `memchr`.
/// Counted a byte at a time with a branch for each, this was most of the walk's
/// cost on a Chinese page (issue 37).
fn count_text(s: &str) -> (u32, u32) {
    let b = s.as_bytes();
    let (mut chars, mut commas, mut leads) = (0usize, 0usize, 0usize);
    // Counts of a chunk fit a u32 lane; the chunks' sums do not need to.
    for chunk in b.chunks(1 << 16) {
        let (mut c, mut k, mut l) = (0u32, 0u32, 0u32);
        for &x in chunk {
            c += u32::from((x & 0xC0 != 0x80) & !x.is_ascii_whitespace());
            k += u32::from(x == b',');
            l += u32::from((x == 0xEF) | (x == 0xE3));
        }
        chars += c as usize;
        commas += k as usize;
        leads += l as usize;
    }
    if leads > 0 {
        commas += memchr::memchr2_iter(0xEF, 0xE3, b)
            .filter(|&i| match b.get(i..i + 3) {
                // ， U+FF0C
                Some([0xEF, 0xBC, 0x8C]) => true,
                // 、 U+3001, 。 U+3002
                Some([0xE3, 0x80, 0x81 | 0x82]) => true,
                _ => false,
            })
            .count();
    }
    let sat = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    (sat(chars), sat(commas))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The marks read token by token, with class tokens remembered, are
    /// the marks read rule by rule on the whole values, for tokens met
    /// again after the thread's memory filled up and started over too.
    #[test]
    fn name_marks_by_tokens_are_those_read_rule_by_rule() {
        let words = [
            "nav",
            "sidebar",
            "article-body",
            "content",
            "lead",
            "hidden",
            "d-none",
            "box",
            "post",
            "x",
            "widget",
            "comment-content",
            "foo,hidden",
        ];
        let mut pairs = Vec::new();
        for (i, a) in words.iter().enumerate() {
            for b in &words {
                pairs.push((format!("{a} {b}"), String::new()));
                pairs.push((a.to_string(), format!("{b}-{i}")));
                pairs.push((String::new(), format!("{a}  {b}")));
            }
        }
        let mut differing = 0;
        // Enough rounds of long classes to fill the memory several times.
        let padding = "p".repeat(4096);
        for round in 0..3 * REMEMBERED_BYTES / (pairs.len() * 4096) + 2 {
            for (k, (class, id)) in pairs.iter().enumerate() {
                let class = if round % 2 == 1 {
                    format!("{class} {padding}{k}")
                } else {
                    class.clone()
                };
                let by_rules = NameMarks::by_rules(&class, id);
                assert_eq!(NameMarks::of(&class, id), by_rules, "{class:?} {id:?}");
                assert_eq!(NameMarks::of(&class, id), by_rules, "{class:?} {id:?} again");
                differing += usize::from(by_rules != NameMarks::default());
            }
        }
        assert!(differing > 100, "the pairs mark something: {differing}");
        CLASS_TOKENS.with(|n| assert!(n.borrow().0 <= REMEMBERED_BYTES));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// Names made of the vocabulary's pieces, joined every way the
        /// rules split them.
        #[test]
        fn name_marks_of_any_names_are_those_read_rule_by_rule(
            class in proptest::collection::vec(proptest::sample::select(&NAME_PIECES[..]), 0..8),
            id in proptest::collection::vec(proptest::sample::select(&NAME_PIECES[..]), 0..5),
        ) {
            let (class, id) = (class.concat(), id.concat());
            proptest::prop_assert_eq!(NameMarks::of(&class, &id), NameMarks::by_rules(&class, &id), "{:?} {:?}", class, id);
        }
    }

    const NAME_PIECES: [&str; 40] = [
        " ",
        "  ",
        "\t",
        "-",
        "_",
        ":",
        ".",
        ",",
        "nav",
        "NAV",
        "menu",
        "sidebar",
        "comment",
        "related",
        "widget",
        "ad",
        "ads",
        "header",
        "tag",
        "article",
        "content",
        "body",
        "post",
        "entry",
        "text",
        "main",
        "lead",
        "summary",
        "intro",
        "hidden",
        "d-none",
        "Hidden",
        "story",
        "detail",
        "copy",
        "x",
        "box",
        "articlebody",
        "entrycontent",
        "é",
    ];

    #[test]
    fn counts() {
        assert_eq!(count_text("  ab c "), (3, 0));
        assert_eq!(count_text("中文，句子。列表、x,y"), (12, 4));
        // Lead bytes of other chars, and a comma's bytes cut off at the end.
        assert_eq!(count_text("ｆ〈》，"), (4, 1));
        assert_eq!(count_text("\t\n\x0c\r \x0b"), (1, 0));
    }

    /// The counts as they were taken before, a byte at a time.
    fn count_text_bytewise(s: &str) -> (u32, u32) {
        let b = s.as_bytes();
        let (mut chars, mut commas) = (0u32, 0u32);
        for (i, &c) in b.iter().enumerate() {
            if c & 0xC0 != 0x80 && !c.is_ascii_whitespace() {
                chars += 1;
            }
            let wide_comma = b.get(i..i + 3) == Some(&[0xEF, 0xBC, 0x8C])
                || (c == 0xE3 && b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(&0x81 | &0x82)));
            if c == b',' || wide_comma {
                commas += 1;
            }
        }
        (chars, commas)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn counts_are_the_bytewise_counts(
            pieces in proptest::collection::vec(
                proptest::sample::select(
                    &["a", ",", " ", "\n", "，", "、", "。", "〈", "ｆ", "中文", "é", "\x0b", "。x"][..],
                ),
                0..50,
            )
        ) {
            let text = pieces.concat();
            proptest::prop_assert_eq!(count_text(&text), count_text_bytewise(&text), "{:?}", text);
        }
    }

    #[test]
    fn semantic_levels_are_ordered_weakest_first() {
        assert!(Semantic::None < Semantic::Main);
        assert!(Semantic::Main < Semantic::Article);
        assert!(Semantic::Article < Semantic::Body);
    }
}
