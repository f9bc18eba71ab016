//! A tokenizer for the markup real pages are made of, feeding html5ever's
//! tree builder.
//!
//! html5ever's tokenizer pops the input one character at a time and pushes
//! tag names, attribute names and values a character at a time: on a
//! documentation site's pages (highlighted code, a tag every few bytes) it
//! was three fifths of the cleaner's instructions (issue 37, target 2).
//! This one finds the next `<` or `&` with `memchr`, hands out text and
//! attribute values as slices of the page's one buffer, and gives the tree
//! builder the tokens html5ever's tokenizer would give it, following the
//! WHATWG tokenization states for the markup it knows.
//!
//! It knows the data, tag, attribute, comment, bogus comment, DOCTYPE,
//! RCDATA, RAWTEXT and script data states (escaped and double escaped
//! included), and character references.
//! Anything else (a NUL, `<![CDATA[`, `<plaintext>`, a tag or comment cut by the end of the page, a comment
//! closed by `--!>`, a DOCTYPE it cannot read)
//! is given up on: [`parse`] returns `None` and the page is parsed by
//! html5ever's own tokenizer instead, so such pages get html5ever's tree
//! whatever happens. The tree of every other page is the one html5ever's
//! tokenizer makes (tested on generated markup against it, and over the
//! evaluation sites by `examples/clean_dir.rs`'s digests).

use html5ever::data::NAMED_ENTITIES;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    CharacterTokens, CommentToken, Doctype, DoctypeToken, EOFToken, EndTag, StartTag, Tag, TagKind, TagToken,
    Token, TokenSink, TokenSinkResult,
};
use html5ever::tree_builder::{TreeBuilder, TreeBuilderOpts, TreeSink};
use html5ever::{Attribute, LocalName, QualName, local_name, ns};

use super::build::AttrLists;

/// The tokenizer met markup it leaves to html5ever.
#[derive(Debug)]
pub(super) struct GiveUp;

type Step<T> = Result<T, GiveUp>;

/// Parses `html` into `sink`'s tree with html5ever's tree builder, or
/// gives up (see the module docs).
pub(super) fn parse<S: TreeSink>(html: &str, sink: S) -> Option<S::Output>
where
    S::Handle: Clone,
{
    let html = prepared(html)?;
    let builder = TreeBuilder::new(sink, TreeBuilderOpts::default());
    run(&html, &builder).ok()?;
    builder.end();
    Some(builder.sink.finish())
}

/// Who gave up on a page [`parse_own`] could not build.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum GaveUp {
    /// This tokenizer: html5ever's tokenizer must read the page.
    Tokenizer,
    /// Our tree builder ([`super::build`]): html5ever's tree builder must
    /// build it, from this tokenizer's tokens.
    Builder,
    /// Our tree builder, at more than the cap of open elements it was
    /// given: the page is to be flattened first ([`crate::nesting`]).
    TooDeep,
}

/// Parses `html` into `dom` with our tree builder ([`super::build`]),
/// giving up once more than `depth_cap` elements are open at once.
pub(super) fn parse_own(html: &str, dom: super::Dom, depth_cap: usize) -> Result<super::Dom, GaveUp> {
    let html = prepared(html).ok_or(GaveUp::Tokenizer)?;
    let builder = super::build::Builder::new(dom, depth_cap);
    match run(&html, &builder) {
        Ok(()) => Ok(builder.finish()),
        Err(GiveUp) if builder.too_deep() => Err(GaveUp::TooDeep),
        Err(GiveUp) if builder.gave_up() => Err(GaveUp::Builder),
        Err(GiveUp) => Err(GaveUp::Tokenizer),
    }
}

/// The page as the tokenizer reads it: newlines normalized and a leading
/// byte order mark dropped, as html5ever's input stream does; `None` for a
/// page with a NUL (given up on).
fn prepared(html: &str) -> Option<std::borrow::Cow<'_, str>> {
    if memchr::memchr(0, html.as_bytes()).is_some() {
        return None;
    }
    // html5ever's default options drop a leading byte order mark (the
    // newline step below can neither make nor remove one).
    let html = html.strip_prefix('\u{FEFF}').unwrap_or(html);
    // Newlines are normalized before tokenizing (the input stream's
    // preprocessing), as html5ever does as it reads.
    Some(if memchr::memchr(b'\r', html.as_bytes()).is_some() {
        std::borrow::Cow::Owned(html.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        std::borrow::Cow::Borrowed(html)
    })
}

/// Tokenizes `html` (prepared) into `builder`.
fn run<B: TokenSink + AttrLists>(html: &str, builder: &B) -> Step<()> {
    let mut t = Tokenizer {
        buf: StrTendril::from_slice(html),
        html,
        src: html.as_bytes(),
        at: 0,
        builder,
        last_start: None,
    };
    t.run()
}

struct Tokenizer<'a, B> {
    /// The page, shared by the text and attribute values handed out.
    buf: StrTendril,
    /// The page as text and as bytes: names and values are cut from it
    /// at ASCII delimiters, so slicing the text never fails.
    html: &'a str,
    src: &'a [u8],
    at: usize,
    builder: &'a B,
    /// The last start tag's name: raw text ends at its end tag.
    last_start: Option<LocalName>,
}

/// The tag and attribute names pages use most (counted over the
/// evaluation sites), as html5ever's static atoms: one look-up in
/// [`common_name`]'s table instead of `LocalName::from`'s hash of the
/// name (SipHash) and search of the static set, 2.7% of the cleaner's
/// instructions on a documentation site (issue 37).
const COMMON_NAMES: &[(&str, LocalName)] = &[
    ("class", local_name!("class")),
    ("span", local_name!("span")),
    ("a", local_name!("a")),
    ("href", local_name!("href")),
    ("id", local_name!("id")),
    ("div", local_name!("div")),
    ("p", local_name!("p")),
    ("title", local_name!("title")),
    ("li", local_name!("li")),
    ("td", local_name!("td")),
    ("code", local_name!("code")),
    ("name", local_name!("name")),
    ("dir", local_name!("dir")),
    ("tr", local_name!("tr")),
    ("type", local_name!("type")),
    ("b", local_name!("b")),
    ("em", local_name!("em")),
    ("src", local_name!("src")),
    ("dd", local_name!("dd")),
    ("dt", local_name!("dt")),
    ("meta", local_name!("meta")),
    ("br", local_name!("br")),
    ("content", local_name!("content")),
    ("rel", local_name!("rel")),
    ("ul", local_name!("ul")),
    ("script", local_name!("script")),
    ("section", local_name!("section")),
    ("i", local_name!("i")),
    ("style", local_name!("style")),
    ("link", local_name!("link")),
    ("target", local_name!("target")),
    ("h3", local_name!("h3")),
    ("role", local_name!("role")),
    ("alt", local_name!("alt")),
    ("h4", local_name!("h4")),
    ("itemprop", local_name!("itemprop")),
    ("h2", local_name!("h2")),
    ("width", local_name!("width")),
    ("in", local_name!("in")),
    ("img", local_name!("img")),
    ("pre", local_name!("pre")),
    ("dl", local_name!("dl")),
    ("to", local_name!("to")),
    ("colspan", local_name!("colspan")),
    ("table", local_name!("table")),
    ("h1", local_name!("h1")),
    ("col", local_name!("col")),
    ("defer", local_name!("defer")),
    ("input", local_name!("input")),
    ("valign", local_name!("valign")),
    ("summary", local_name!("summary")),
    ("strong", local_name!("strong")),
    ("details", local_name!("details")),
    ("itemtype", local_name!("itemtype")),
    ("itemscope", local_name!("itemscope")),
    ("rowspan", local_name!("rowspan")),
    ("open", local_name!("open")),
    ("tabindex", local_name!("tabindex")),
    ("value", local_name!("value")),
    ("aria-label", local_name!("aria-label")),
    ("hr", local_name!("hr")),
    ("for", local_name!("for")),
    ("property", local_name!("property")),
    ("html", local_name!("html")),
    ("body", local_name!("body")),
    ("nav", local_name!("nav")),
    ("head", local_name!("head")),
    ("height", local_name!("height")),
    ("or", local_name!("or")),
    ("align", local_name!("align")),
    ("http-equiv", local_name!("http-equiv")),
    ("border", local_name!("border")),
    ("charset", local_name!("charset")),
    ("as", local_name!("as")),
    ("tbody", local_name!("tbody")),
    ("version", local_name!("version")),
    ("th", local_name!("th")),
    ("button", local_name!("button")),
    ("onclick", local_name!("onclick")),
    ("and", local_name!("and")),
    ("aside", local_name!("aside")),
    ("header", local_name!("header")),
    ("colgroup", local_name!("colgroup")),
    ("noscript", local_name!("noscript")),
    ("path", local_name!("path")),
    ("option", local_name!("option")),
    ("lang", local_name!("lang")),
    ("d", local_name!("d")),
    ("footer", local_name!("footer")),
    ("wbr", local_name!("wbr")),
    ("label", local_name!("label")),
    ("acronym", local_name!("acronym")),
    ("placeholder", local_name!("placeholder")),
    ("hidden", local_name!("hidden")),
    ("scope", local_name!("scope")),
    ("svg", local_name!("svg")),
    ("accesskey", local_name!("accesskey")),
    ("h5", local_name!("h5")),
    ("xmlns", local_name!("xmlns")),
    ("fill", local_name!("fill")),
    ("form", local_name!("form")),
    ("article", local_name!("article")),
    ("base", local_name!("base")),
    ("main", local_name!("main")),
    ("sizes", local_name!("sizes")),
    ("action", local_name!("action")),
    ("media", local_name!("media")),
    ("aria-hidden", local_name!("aria-hidden")),
    ("cellpadding", local_name!("cellpadding")),
    ("cellspacing", local_name!("cellspacing")),
    ("method", local_name!("method")),
    ("crossorigin", local_name!("crossorigin")),
    ("disabled", local_name!("disabled")),
    ("shape", local_name!("shape")),
    ("area", local_name!("area")),
    ("coords", local_name!("coords")),
    ("use", local_name!("use")),
    ("xlink:href", local_name!("xlink:href")),
    ("aria-expanded", local_name!("aria-expanded")),
    ("srcset", local_name!("srcset")),
    ("fill-rule", local_name!("fill-rule")),
    ("bgcolor", local_name!("bgcolor")),
    ("iframe", local_name!("iframe")),
    ("aria-labelledby", local_name!("aria-labelledby")),
    ("aria-controls", local_name!("aria-controls")),
    ("symbol", local_name!("symbol")),
    ("by", local_name!("by")),
    ("size", local_name!("size")),
    ("figure", local_name!("figure")),
    ("ol", local_name!("ol")),
    ("frameborder", local_name!("frameborder")),
    ("scrolling", local_name!("scrolling")),
    ("time", local_name!("time")),
    ("aria-haspopup", local_name!("aria-haspopup")),
    ("font", local_name!("font")),
    ("source", local_name!("source")),
    ("x", local_name!("x")),
    ("small", local_name!("small")),
    ("mode", local_name!("mode")),
    ("from", local_name!("from")),
    ("y", local_name!("y")),
    ("g", local_name!("g")),
    ("caption", local_name!("caption")),
    ("points", local_name!("points")),
    ("cite", local_name!("cite")),
    ("picture", local_name!("picture")),
    ("blockquote", local_name!("blockquote")),
    ("not", local_name!("not")),
    ("h6", local_name!("h6")),
    ("data", local_name!("data")),
    ("rect", local_name!("rect")),
    ("text", local_name!("text")),
    ("aria-pressed", local_name!("aria-pressed")),
    ("autocomplete", local_name!("autocomplete")),
    ("datetime", local_name!("datetime")),
    ("var", local_name!("var")),
    ("compact", local_name!("compact")),
    ("video", local_name!("video")),
    ("aria-selected", local_name!("aria-selected")),
    ("onkeydown", local_name!("onkeydown")),
    ("polygon", local_name!("polygon")),
    ("when", local_name!("when")),
    ("vlink", local_name!("vlink")),
    ("alink", local_name!("alink")),
    ("clip-rule", local_name!("clip-rule")),
    ("z", local_name!("z")),
    ("default", local_name!("default")),
    ("transform", local_name!("transform")),
    ("r", local_name!("r")),
    ("spellcheck", local_name!("spellcheck")),
    ("space", local_name!("space")),
    ("thead", local_name!("thead")),
    ("color", local_name!("color")),
    ("viewbox", local_name!("viewbox")),
];

/// Slots of [`common_name`]'s table.
const NAME_SLOTS: usize = 1024;

/// The slot of a name in [`common_name`]'s table: its length and first,
/// second and last bytes, mixed.
const fn name_slot(b: &[u8]) -> usize {
    const fn at(b: &[u8], i: usize) -> u32 {
        if i < b.len() { b[i] as u32 } else { 0 }
    }
    let n = b.len();
    let key = (n as u32) << 24 ^ at(b, 0) << 16 ^ at(b, 1) << 8 ^ at(b, n.wrapping_sub(1));
    (key.wrapping_mul(0x9E37_79B1) >> (32 - NAME_SLOTS.trailing_zeros())) as usize
}

/// Each slot's entry of [`COMMON_NAMES`], plus one (0: none), built at
/// compile time; a name whose slot is taken is left out.
const NAME_TABLE: [u16; NAME_SLOTS] = {
    let mut t = [0u16; NAME_SLOTS];
    let mut i = 0;
    while i < COMMON_NAMES.len() {
        let slot = name_slot(COMMON_NAMES[i].0.as_bytes());
        if t[slot] == 0 {
            t[slot] = (i + 1) as u16;
        }
        i += 1;
    }
    t
};

/// The atom of a lower-case tag or attribute name: a static one from
/// [`COMMON_NAMES`] when the name is there (a name sharing its slot with
/// another is looked up as any other), else `LocalName::from`.
fn common_name(raw: &str) -> LocalName {
    let found = NAME_TABLE
        .get(name_slot(raw.as_bytes()))
        .and_then(|&i| COMMON_NAMES.get(usize::from(i).checked_sub(1)?));
    match found {
        // Compared in place, not by `==` (crate::same says why).
        Some((name, atom)) if crate::same::same(name.as_bytes(), raw.as_bytes()) => atom.clone(),
        _ => LocalName::from(raw),
    }
}

/// The most bytes a tendril holds without a buffer of its own
/// (tendril's `MAX_INLINE_LEN`).
const INLINE_BYTES: usize = 8;

fn is_space(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | b'\x0C' | b' ')
}

impl<B: TokenSink + AttrLists> Tokenizer<'_, B> {
    fn slice(&self, from: usize, to: usize) -> StrTendril {
        // A tendril of up to 8 bytes holds them itself: copied from the
        // text, sliced at ASCII delimiters, it skips the check of both
        // ends as UTF-8 that a shared one makes (most class names of a
        // highlighted code block are one or two letters).
        if to - from <= INLINE_BYTES
            && let Some(short) = self.html.get(from..to)
        {
            return StrTendril::from_slice(short);
        }
        // Offsets are within the page, which is far under 4 GiB (the
        // cleaner caps pages).
        self.buf.subtendril(from as u32, (to - from) as u32)
    }

    fn peek(&self, off: usize) -> Option<u8> {
        self.src.get(self.at + off).copied()
    }

    /// Hands a token to the tree builder and does what it asks.
    fn emit(&mut self, token: Token) -> Step<()> {
        match self.builder.process_token(token, 0) {
            TokenSinkResult::Continue => Ok(()),
            TokenSinkResult::Script(_) | TokenSinkResult::EncodingIndicator(_) => {
                // html5ever's driver feeds the tokenizer again after a
                // script's end tag or a `<meta charset>`, and every feed
                // drops a byte order mark where it starts.
                if self.src[self.at..].starts_with("\u{FEFF}".as_bytes()) {
                    self.at += 3;
                }
                Ok(())
            }
            TokenSinkResult::Plaintext => Err(GiveUp),
            TokenSinkResult::RawData(kind) => self.raw(kind),
        }
    }

    fn text(&mut self, from: usize, to: usize) -> Step<()> {
        if from < to {
            let t = self.slice(from, to);
            self.emit(CharacterTokens(t))?;
        }
        Ok(())
    }

    fn run(&mut self) -> Step<()> {
        loop {
            let start = self.at;
            let Some(off) = memchr::memchr2(b'<', b'&', &self.src[start..]) else {
                self.text(start, self.src.len())?;
                self.at = self.src.len();
                return self.emit(EOFToken);
            };
            let at = start + off;
            self.text(start, at)?;
            self.at = at;
            if self.src[at] == b'&' {
                self.char_ref_in_text()?;
            } else {
                self.tag_open()?;
            }
        }
    }

    /// At a `&` in text: emits what it stands for, or itself.
    fn char_ref_in_text(&mut self) -> Step<()> {
        match char_ref(&self.src[self.at..], false) {
            Some((chars, len)) => {
                self.emit(CharacterTokens(StrTendril::from_slice(&chars)))?;
                self.at += len;
            }
            None => {
                self.text(self.at, self.at + 1)?;
                self.at += 1;
            }
        }
        Ok(())
    }

    /// At a `<`.
    fn tag_open(&mut self) -> Step<()> {
        match self.peek(1) {
            Some(b'!') => self.markup_declaration(),
            Some(b'/') => match self.peek(2) {
                Some(c) if c.is_ascii_alphabetic() => {
                    self.at += 2;
                    self.tag(EndTag)
                }
                // `</>` is dropped; `</` at the end is text; the rest is a
                // bogus comment.
                Some(b'>') => {
                    self.at += 3;
                    Ok(())
                }
                None => {
                    self.text(self.at, self.src.len())?;
                    self.at = self.src.len();
                    Ok(())
                }
                Some(_) => self.bogus_comment(self.at + 2),
            },
            Some(c) if c.is_ascii_alphabetic() => {
                self.at += 1;
                self.tag(StartTag)
            }
            // `<?xml ...?>`, which XHTML pages open with.
            Some(b'?') => self.bogus_comment(self.at + 1),
            // A `<` that opens nothing is text.
            _ => {
                self.text(self.at, self.at + 1)?;
                self.at += 1;
                Ok(())
            }
        }
    }

    /// A tag whose name starts at `self.at`, up to its `>`.
    fn tag(&mut self, kind: TagKind) -> Step<()> {
        let name = self.name(|c| is_space(c) || c == b'/' || c == b'>')?;
        let mut tag = Tag {
            kind,
            name,
            self_closing: false,
            attrs: Vec::new(),
            had_duplicate_attributes: false,
        };
        loop {
            // Before an attribute's name.
            while self.peek(0).is_some_and(is_space) {
                self.at += 1;
            }
            match self.peek(0).ok_or(GiveUp)? {
                b'>' => {
                    self.at += 1;
                    break;
                }
                b'/' => {
                    self.at += 1;
                    if self.peek(0) == Some(b'>') {
                        self.at += 1;
                        tag.self_closing = true;
                        break;
                    }
                    // A stray `/` is dropped; the attributes go on.
                }
                b'=' => return Err(GiveUp),
                _ => self.attribute(&mut tag)?,
            }
        }
        if kind == EndTag && (!tag.attrs.is_empty() || tag.self_closing) {
            return Err(GiveUp);
        }
        if kind == StartTag {
            self.last_start = Some(tag.name.clone());
        }
        self.emit(TagToken(tag))
    }

    /// A tag or attribute name from `self.at` to the first byte `end`
    /// accepts, ASCII lower-cased.
    fn name(&mut self, end: impl Fn(u8) -> bool) -> Step<LocalName> {
        let from = self.at;
        let len = self.src[from..].iter().position(|&c| end(c)).ok_or(GiveUp)?;
        self.at = from + len;
        let raw = self.html.get(from..from + len).ok_or(GiveUp)?;
        Ok(if raw.bytes().any(|c| c.is_ascii_uppercase()) {
            common_name(&raw.to_ascii_lowercase())
        } else {
            common_name(raw)
        })
    }

    /// An attribute from its name's first byte to the end of its value.
    fn attribute(&mut self, tag: &mut Tag) -> Step<()> {
        let name = self.name(|c| is_space(c) || c == b'/' || c == b'>' || c == b'=')?;
        while self.peek(0).is_some_and(is_space) {
            self.at += 1;
        }
        let value = if self.peek(0) == Some(b'=') {
            self.at += 1;
            while self.peek(0).is_some_and(is_space) {
                self.at += 1;
            }
            match self.peek(0).ok_or(GiveUp)? {
                q @ (b'"' | b'\'') => {
                    let from = self.at + 1;
                    let len = memchr::memchr(q, &self.src[from..]).ok_or(GiveUp)?;
                    self.at = from + len + 1;
                    // After a quoted value: a space, `/` or `>`, or (a
                    // parse error) the next attribute at once.
                    self.value(from, from + len)
                }
                // A missing value: the attribute is empty.
                b'>' => StrTendril::new(),
                _ => {
                    let from = self.at;
                    let len = self.src[from..]
                        .iter()
                        .position(|&c| is_space(c) || c == b'>')
                        .ok_or(GiveUp)?;
                    self.at = from + len;
                    self.value(from, from + len)
                }
            }
        } else {
            StrTendril::new()
        };
        if tag.attrs.iter().any(|a| a.name.local == name) {
            tag.had_duplicate_attributes = true;
        } else {
            if tag.attrs.capacity() == 0 {
                tag.attrs = self.builder.attr_list();
            }
            tag.attrs.push(Attribute {
                name: QualName::new(None, ns!(), name),
                value,
            });
        }
        Ok(())
    }

    /// An attribute's value between `from` and `to`, references decoded.
    fn value(&self, from: usize, to: usize) -> StrTendril {
        let raw = &self.src[from..to];
        if memchr::memchr(b'&', raw).is_none() {
            return self.slice(from, to);
        }
        let mut out = String::with_capacity(raw.len());
        let mut i = 0;
        while let Some(off) = memchr::memchr(b'&', &raw[i..]) {
            let amp = i + off;
            out.push_str(self.html.get(from + i..from + amp).unwrap_or_default());
            match char_ref(&raw[amp..], true) {
                Some((chars, len)) => {
                    out.push_str(&chars);
                    i = amp + len;
                }
                None => {
                    out.push('&');
                    i = amp + 1;
                }
            }
        }
        out.push_str(self.html.get(from + i..to).unwrap_or_default());
        StrTendril::from_slice(&out)
    }

    /// At `<!`: a comment or a DOCTYPE.
    fn markup_declaration(&mut self) -> Step<()> {
        let rest = &self.src[self.at + 2..];
        if rest.starts_with(b"--") {
            let from = self.at + 4;
            let body = &self.src[from..];
            // `<!-->` and `<!--->` close at once, `--!>` closes too: left
            // to html5ever, as is a comment the page never closes.
            if body.starts_with(b">") || body.starts_with(b"->") {
                return Err(GiveUp);
            }
            let end = memchr::memmem::find(body, b"-->").ok_or(GiveUp)?;
            if memchr::memmem::find(&body[..end + 2], b"--!").is_some() {
                return Err(GiveUp);
            }
            let text = self.slice(from, from + end);
            self.at = from + end + 3;
            return self.emit(CommentToken(text));
        }
        if rest.len() >= 7 && rest[..7].eq_ignore_ascii_case(b"doctype") {
            self.at += 9;
            return self.doctype();
        }
        if rest.starts_with(b"[CDATA[") {
            // Text in foreign content, a bogus comment elsewhere: the tree
            // builder's state decides.
            return Err(GiveUp);
        }
        self.bogus_comment(self.at + 2)
    }

    /// Markup that is neither a tag nor a comment (`<?xml ...?>`, `<!x>`,
    /// `</ x>`): a comment from `from` up to the next `>`.
    fn bogus_comment(&mut self, from: usize) -> Step<()> {
        let len = memchr::memchr(b'>', &self.src[from..]).ok_or(GiveUp)?;
        let text = self.slice(from, from + len);
        self.at = from + len + 1;
        self.emit(CommentToken(text))
    }

    /// After `<!DOCTYPE`: a name, and the public and system identifiers of
    /// the usual forms.
    fn doctype(&mut self) -> Step<()> {
        if !self.peek(0).is_some_and(is_space) {
            return Err(GiveUp);
        }
        self.skip_spaces();
        let from = self.at;
        let len = self.src[from..]
            .iter()
            .position(|&c| is_space(c) || c == b'>')
            .ok_or(GiveUp)?;
        if len == 0 {
            return Err(GiveUp);
        }
        self.at = from + len;
        let name = StrTendril::from_slice(
            &self
                .html
                .get(from..from + len)
                .ok_or(GiveUp)?
                .to_ascii_lowercase(),
        );
        self.skip_spaces();
        let mut doctype = Doctype {
            name: Some(name),
            public_id: None,
            system_id: None,
            force_quirks: false,
        };
        let keyword = self.src.get(self.at..self.at + 6).unwrap_or_default();
        if keyword.eq_ignore_ascii_case(b"public") {
            self.at += 6;
            doctype.public_id = Some(self.identifier()?);
            if self.peek(0).is_some_and(is_space) {
                self.skip_spaces();
                if matches!(self.peek(0), Some(b'"' | b'\'')) {
                    doctype.system_id = Some(self.quoted()?);
                    self.skip_spaces();
                }
            }
        } else if keyword.eq_ignore_ascii_case(b"system") {
            self.at += 6;
            doctype.system_id = Some(self.identifier()?);
            self.skip_spaces();
        }
        if self.peek(0) != Some(b'>') {
            return Err(GiveUp);
        }
        self.at += 1;
        self.emit(DoctypeToken(doctype))
    }

    fn skip_spaces(&mut self) {
        while self.peek(0).is_some_and(is_space) {
            self.at += 1;
        }
    }

    /// Spaces, then a quoted identifier.
    fn identifier(&mut self) -> Step<StrTendril> {
        if !self.peek(0).is_some_and(is_space) {
            return Err(GiveUp);
        }
        self.skip_spaces();
        self.quoted()
    }

    /// A quoted DOCTYPE identifier (no `>` inside: that ends the DOCTYPE).
    fn quoted(&mut self) -> Step<StrTendril> {
        let q = self.peek(0).filter(|&q| q == b'"' || q == b'\'').ok_or(GiveUp)?;
        let from = self.at + 1;
        let len = memchr::memchr(q, &self.src[from..]).ok_or(GiveUp)?;
        if memchr::memchr(b'>', &self.src[from..from + len]).is_some() {
            return Err(GiveUp);
        }
        self.at = from + len + 1;
        Ok(self.slice(from, from + len))
    }

    /// After a start tag the tree builder reads as raw text (`<title>`,
    /// `<style>`, `<script>` ...): its text up to the matching end tag.
    fn raw(&mut self, kind: RawKind) -> Step<()> {
        let name = self.last_start.clone().ok_or(GiveUp)?;
        let from = self.at;
        let end = if kind == RawKind::ScriptData {
            script_end(self.src, from)
        } else {
            end_tag_at(self.src, from, name.as_bytes())
        };
        match kind {
            RawKind::Rawtext => self.text(from, end)?,
            RawKind::ScriptData => self.text(from, end)?,
            RawKind::Rcdata => {
                let mut i = from;
                while let Some(off) = memchr::memchr(b'&', &self.src[i..end]) {
                    let amp = i + off;
                    self.text(i, amp)?;
                    self.at = amp;
                    match char_ref(&self.src[amp..end], false) {
                        Some((chars, len)) => {
                            self.emit(CharacterTokens(StrTendril::from_slice(&chars)))?;
                            i = amp + len;
                        }
                        None => {
                            self.text(amp, amp + 1)?;
                            i = amp + 1;
                        }
                    }
                }
                self.text(i, end)?;
            }
            RawKind::ScriptDataEscaped(_) => return Err(GiveUp),
        }
        self.at = end;
        if end < self.src.len() {
            self.at += 2;
            self.tag(EndTag)?;
        }
        Ok(())
    }
}

/// Whether `</name` followed by a space, `/` or `>` (an end tag for
/// `name`, any case) starts at `at`.
fn is_end_tag(src: &[u8], at: usize, name: &[u8]) -> bool {
    let after = at + 2 + name.len();
    src.get(at..at + 2) == Some(b"</")
        && src
            .get(at + 2..after)
            .is_some_and(|n| n.eq_ignore_ascii_case(name))
        && src
            .get(after)
            .is_some_and(|&c| is_space(c) || c == b'/' || c == b'>')
}

/// Where raw text from `from` ends: at the first end tag for `name`, or at
/// the end of the page.
fn end_tag_at(src: &[u8], from: usize, name: &[u8]) -> usize {
    let mut search = from;
    while let Some(off) = memchr::memmem::find(&src[search..], b"</") {
        let lt = search + off;
        if is_end_tag(src, lt, name) {
            return lt;
        }
        search = lt + 2;
    }
    src.len()
}

/// Where a script's text from `from` ends, by the script data states: at
/// the first `</script>` outside an escaped `<!-- ... -->` that holds
/// `<script>` (old pages hide their scripts in comments, and javadoc's
/// still do), or at the end of the page.
fn script_end(src: &[u8], from: usize) -> usize {
    #[derive(PartialEq)]
    enum State {
        /// Script data.
        Data,
        /// Inside `<!--`.
        Escaped,
        /// Inside `<!--` and then `<script>`: `</script>` only returns to
        /// `Escaped`.
        Double,
    }
    let delimited = |at: usize| {
        src.get(at)
            .is_some_and(|&c| is_space(c) || c == b'/' || c == b'>')
    };
    let mut state = State::Data;
    let mut i = from;
    loop {
        if state == State::Data {
            let Some(off) = memchr::memchr(b'<', &src[i..]) else {
                return src.len();
            };
            let lt = i + off;
            if is_end_tag(src, lt, b"script") {
                return lt;
            }
            if src[lt + 1..].starts_with(b"!--") {
                // The two dashes count towards a closing `-->`: `<!-->`
                // opens and closes.
                state = State::Escaped;
                i = lt + 2;
            } else {
                i = lt + 1;
            }
            continue;
        }
        let Some(off) = memchr::memchr2(b'<', b'-', &src[i..]) else {
            return src.len();
        };
        let p = i + off;
        if src[p] == b'-' {
            let dashes = src[p..].iter().take_while(|&&c| c == b'-').count();
            i = p + dashes;
            if dashes >= 2 && src.get(i) == Some(&b'>') {
                state = State::Data;
                i += 1;
            }
            continue;
        }
        if state == State::Escaped {
            if is_end_tag(src, p, b"script") {
                return p;
            }
            if src
                .get(p + 1..p + 7)
                .is_some_and(|n| n.eq_ignore_ascii_case(b"script"))
                && delimited(p + 7)
            {
                state = State::Double;
                i = p + 7;
                continue;
            }
        } else if is_end_tag(src, p, b"script") {
            state = State::Escaped;
            i = p + 8;
            continue;
        }
        i = p + 1;
    }
}

/// `bytes` as text: they are a slice of the page between ASCII bytes.
fn utf8(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or_default()
}

/// The character reference at the start of `s` (which starts with `&`):
/// what it stands for and how many bytes it takes, or `None` when it is
/// text. `in_attribute`: the rule for a named reference without `;`
/// followed by `=` or a letter or digit (left as written in attributes).
fn char_ref(s: &[u8], in_attribute: bool) -> Option<(String, usize)> {
    match s.get(1)? {
        b'#' => numeric_ref(s),
        c if c.is_ascii_alphanumeric() => named_ref(s, in_attribute),
        _ => None,
    }
}

fn numeric_ref(s: &[u8]) -> Option<(String, usize)> {
    let (radix, digits_at) = match s.get(2) {
        Some(b'x' | b'X') => (16, 3),
        _ => (10, 2),
    };
    let digits = s
        .get(digits_at..)?
        .iter()
        .take_while(|c| {
            if radix == 16 {
                c.is_ascii_hexdigit()
            } else {
                c.is_ascii_digit()
            }
        })
        .count();
    if digits == 0 {
        // `&#` or `&#x` with no digits is text.
        return None;
    }
    let mut n: u32 = 0;
    for &c in &s[digits_at..digits_at + digits] {
        let d = char::from(c).to_digit(radix).unwrap_or(0);
        n = n.saturating_mul(radix).saturating_add(d).min(0x11_0000);
    }
    let mut len = digits_at + digits;
    if s.get(len) == Some(&b';') {
        len += 1;
    }
    Some((
        crate::normalize::strip_markup::numeric_reference(n).to_string(),
        len,
    ))
}

fn named_ref(s: &[u8], in_attribute: bool) -> Option<(String, usize)> {
    // No name in the table is longer than this.
    const LONGEST: usize = 40;
    let run = s[1..]
        .iter()
        .take(LONGEST)
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    let name = utf8(&s[1..=run]);
    let with_semi = s.get(1 + run) == Some(&b';');
    // The longest name in the table that the text starts with: the whole
    // run with its `;`, else a prefix of it (the legacy names, `&amp`,
    // `&not`, need no `;`).
    let found = with_semi
        .then(|| lookup(utf8(&s[1..run + 2])).map(|v| (v, run + 2)))
        .flatten()
        .or_else(|| {
            (1..=run)
                .rev()
                .find_map(|k| lookup(&name[..k]).map(|v| (v, k + 1)))
        });
    let ((a, b), len) = found?;
    let semi = s[len - 1] == b';';
    if in_attribute
        && !semi
        && s.get(len)
            .is_some_and(|&c| c == b'=' || c.is_ascii_alphanumeric())
    {
        return None;
    }
    let mut out = String::new();
    out.push(char::from_u32(a)?);
    if b != 0 {
        out.push(char::from_u32(b)?);
    }
    Some((out, len))
}

/// A name's code points, when it is a whole name (the table also lists
/// every prefix of every name, with no code points).
fn lookup(key: &str) -> Option<(u32, u32)> {
    NAMED_ENTITIES.get(key).copied().filter(|&(a, _)| a != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table's atoms are the names' own, and a name that is not in it
    /// (or shares a slot) still gets its atom.
    #[test]
    fn common_names_are_their_atoms() {
        let mut hits = 0;
        for (name, atom) in COMMON_NAMES {
            assert_eq!(*atom, LocalName::from(*name), "{name}");
            assert_eq!(common_name(name), LocalName::from(*name), "{name}");
            let table_hit =
                std::ptr::eq(name.as_ptr(), COMMON_NAMES[0].0.as_ptr()) || common_name(name) == *atom;
            hits += usize::from(table_hit);
        }
        assert_eq!(hits, COMMON_NAMES.len());
        for other in ["data-toggle", "x", "", "classx", "clas", "sig-object", "中"] {
            assert_eq!(common_name(other), LocalName::from(other), "{other}");
        }
    }
}
