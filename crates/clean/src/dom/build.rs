//! A tree builder for the markup most pages are made of, fed by our
//! tokenizer ([`super::tokens`]).
//!
//! Behind our tokenizer, html5ever's tree builder was a fifth of the
//! cleaner's instructions on a documentation site (issue 37, target 2): a
//! queue made and dropped for every token, scope checks through its sink's
//! handles, a name looked up through a `RefCell` for each open element. The
//! pages of documentation, news and mail sites use a part of the WHATWG
//! tree construction rules: the modes from "initial" to "in body" and
//! "after after body", the table modes ([`table`]), implied end tags,
//! formatting elements and their reconstruction, SVG icons ([`svg`]). This
//! builder follows html5ever 0.40's rules for that part, operation for
//! operation (the tree, its text merges and the order of attributes are
//! html5ever's), and gives up on the rest: foster parenting, a table in a
//! table, `<select>`, templates, frames, ruby, MathML, SVG's HTML
//! integration points, `<applet>`, `<object>`, `<marquee>`, `<nobr>`, `<a>`
//! inside an open `<a>`, the adoption agency's furthest block, a fourth
//! open formatting element of one name (Noah's Ark), `</br>`, `</option>`,
//! `<table>` after an open `<p>` under a DOCTYPE whose quirks mode it does
//! not read. A page it gives up on is built again by html5ever's tree
//! builder from our tokenizer's tokens, so every page gets html5ever's tree
//! (tested against it on generated markup, and over the evaluation sites by
//! `examples/clean_dir.rs`'s digests).

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{Tag, TagKind, Token, TokenSink, TokenSinkResult};
use html5ever::{Attribute, LocalName, QualName, local_name, ns};

use super::{Dom, NIL, Node, NodeData, NodeId, ROOT};

mod body;
mod sets;
mod svg;
mod table;

use self::sets::{bounds, from_head, is_heading, is_implied_end};
use self::svg::{SVG, adjust_svg_attributes};

/// The builder met markup it leaves to html5ever's tree builder (its own
/// type: the tokenizer, which stops then too, imports this module).
#[derive(Debug)]
struct GiveUp;

type Step<T> = Result<T, GiveUp>;

/// The insertion modes this builder knows (the WHATWG's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Initial,
    BeforeHtml,
    BeforeHead,
    InHead,
    AfterHead,
    InBody,
    Text,
    InTable,
    InTableText,
    InCaption,
    InColumnGroup,
    InTableBody,
    InRow,
    InCell,
    AfterBody,
    AfterAfterBody,
}

/// What the DOCTYPE says of quirks mode, as far as this builder reads it:
/// only `<table>` after an open `<p>` depends on it, and there an unknown
/// mode is given up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quirks {
    No,
    Yes,
    Unknown,
}

/// A marker in the list of active formatting elements (cells and captions
/// push one).
const MARKER: NodeId = NIL;

/// A token as the insertion modes see it.
enum Tok {
    Chars(StrTendril),
    Comment,
    Start(Tag),
    End(LocalName),
    Eof,
}

/// What a step did: finished with the token (and what to tell the
/// tokenizer), or hands it to another mode.
enum Did {
    Done(TokenSinkResult<NodeId>),
    Reprocess(Mode, Tok),
}

const DONE: Step<Did> = Ok(Did::Done(TokenSinkResult::Continue));

/// The scopes of "has an element in scope".
#[derive(Clone, Copy)]
enum Scope {
    Default,
    ListItem,
    Button,
    Table,
}

struct State {
    dom: Dom,
    mode: Mode,
    /// The mode the `Text` mode returns to.
    orig: Mode,
    /// The stack of open elements, with their names.
    open: Vec<(NodeId, LocalName)>,
    head: Option<NodeId>,
    form: Option<NodeId>,
    /// The list of active formatting elements ([`MARKER`] for a marker).
    formatting: Vec<(NodeId, LocalName)>,
    ignore_lf: bool,
    quirks: Quirks,
    /// "In table text": the text gathered, and the mode to return to.
    table_text: Vec<StrTendril>,
    table_orig: Mode,
    gave_up: bool,
    /// Open elements at most: past it the builder gives up
    /// ([`Builder::too_deep`]).
    depth_cap: usize,
    too_deep: bool,
    /// The emptied buffer of the last attribute list moved into the tree,
    /// for the tokenizer's next tag ([`AttrLists`]).
    spare_attrs: Vec<Attribute>,
}

/// The tree builder: a [`TokenSink`] for our tokenizer.
pub(super) struct Builder(RefCell<State>);

/// Where the tokenizer gets a tag's attribute list: our builder hands back
/// the buffer of the last list it moved into the tree, so that a page's
/// tags reuse a buffer instead of allocating one each (issue 37).
pub(super) trait AttrLists {
    /// An empty list to gather a tag's attributes in.
    fn attr_list(&self) -> Vec<Attribute> {
        Vec::new()
    }
}

impl AttrLists for Builder {
    fn attr_list(&self) -> Vec<Attribute> {
        self.0
            .try_borrow_mut()
            .map(|mut s| std::mem::take(&mut s.spare_attrs))
            .unwrap_or_default()
    }
}

/// html5ever's tree builder keeps the lists it is given.
impl<Handle, Sink> AttrLists for html5ever::tree_builder::TreeBuilder<Handle, Sink> {}

impl Builder {
    /// A builder that gives up once more than `depth_cap` elements are
    /// open at once.
    pub(super) fn new(dom: Dom, depth_cap: usize) -> Self {
        Builder(RefCell::new(State {
            dom,
            mode: Mode::Initial,
            orig: Mode::InBody,
            open: Vec::with_capacity(64),
            head: None,
            form: None,
            formatting: Vec::new(),
            ignore_lf: false,
            quirks: Quirks::Unknown,
            table_text: Vec::new(),
            table_orig: Mode::InTable,
            gave_up: false,
            depth_cap,
            too_deep: false,
            spare_attrs: Vec::new(),
        }))
    }

    /// Whether the builder gave up (the tokenizer then stops too).
    pub(super) fn gave_up(&self) -> bool {
        self.0.borrow().gave_up
    }

    /// Whether it gave up because more than its cap of elements were open
    /// at once.
    pub(super) fn too_deep(&self) -> bool {
        self.0.borrow().too_deep
    }

    /// The tree built.
    pub(super) fn finish(self) -> Dom {
        self.0.into_inner().dom
    }
}

impl TokenSink for Builder {
    type Handle = NodeId;

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<NodeId> {
        let mut s = self.0.borrow_mut();
        if s.gave_up {
            return TokenSinkResult::Plaintext;
        }
        match s.token(token) {
            // Checked after each token: one can open several elements (the
            // formatting elements it reconstructs, then its own).
            Ok(_) if s.open.len() > s.depth_cap => {
                s.gave_up = true;
                s.too_deep = true;
                TokenSinkResult::Plaintext
            }
            Ok(r) => r,
            Err(GiveUp) => {
                s.gave_up = true;
                // The tokenizer gives up on `Plaintext`: the caller sees
                // the flag and builds the tree with html5ever's builder.
                TokenSinkResult::Plaintext
            }
        }
    }
}

fn is_ws(c: u8) -> bool {
    c.is_ascii_whitespace()
}

/// Whether a meta element's `content` names an encoding (the WHATWG's
/// "extracting a character encoding from a meta element", as html5ever
/// reads it): html5ever's tree builder then reports an encoding, after
/// which its driver drops a byte order mark.
fn content_names_encoding(content: &str) -> bool {
    let b = content.as_bytes();
    let mut at = 0;
    loop {
        loop {
            let Some(candidate) = b.get(at..at + 7) else {
                return false;
            };
            if candidate.eq_ignore_ascii_case(b"charset") {
                break;
            }
            at += 1;
        }
        at += 7;
        while b.get(at).is_some_and(|&c| is_ws(c)) {
            at += 1;
        }
        match b.get(at) {
            Some(b'=') => break,
            Some(_) => {}
            None => return false,
        }
    }
    at += 1;
    while b.get(at).is_some_and(|&c| is_ws(c)) {
        at += 1;
    }
    match b.get(at) {
        None => false,
        Some(&q @ (b'"' | b'\'')) => b.get(at + 1..).is_some_and(|rest| rest.contains(&q)),
        Some(_) => true,
    }
}

fn attr(attrs: &[Attribute], name: LocalName) -> Option<&StrTendril> {
    attrs.iter().find(|a| a.name.local == name).map(|a| &a.value)
}

impl State {
    fn token(&mut self, token: Token) -> Step<TokenSinkResult<NodeId>> {
        let ignore_lf = std::mem::take(&mut self.ignore_lf);
        let tok = match token {
            Token::ParseError(_) => return Ok(TokenSinkResult::Continue),
            Token::DoctypeToken(d) => {
                if self.mode == Mode::Initial {
                    // `<!DOCTYPE html>` (and the legacy-compat form) is
                    // no-quirks; other DOCTYPEs are left unread.
                    let plain = d.name.as_deref() == Some("html")
                        && d.public_id.is_none()
                        && d.system_id.as_deref().is_none_or(|s| s == "about:legacy-compat");
                    self.quirks = if plain { Quirks::No } else { Quirks::Unknown };
                    let id = self.dom.add(NodeData::Other);
                    self.dom.append_child(ROOT, id);
                    self.mode = Mode::BeforeHtml;
                }
                return Ok(TokenSinkResult::Continue);
            }
            Token::TagToken(tag) => match tag.kind {
                TagKind::StartTag => Tok::Start(tag),
                TagKind::EndTag => Tok::End(tag.name),
            },
            Token::CommentToken(_) => Tok::Comment,
            Token::NullCharacterToken => return Err(GiveUp),
            Token::EOFToken => Tok::Eof,
            Token::CharacterTokens(mut text) => {
                if ignore_lf && text.starts_with('\n') {
                    text.pop_front(1);
                }
                if text.is_empty() {
                    return Ok(TokenSinkResult::Continue);
                }
                Tok::Chars(text)
            }
        };
        self.process(tok)
    }

    fn process(&mut self, mut tok: Tok) -> Step<TokenSinkResult<NodeId>> {
        loop {
            let foreign = !matches!(tok, Tok::Eof) && self.open.last().is_some_and(|(_, n)| *n == SVG);
            let did = match self.mode {
                _ if foreign => self.in_svg(tok)?,
                Mode::Text => self.text(tok)?,
                Mode::InTableText => self.in_table_text(tok)?,
                // The modes `by_mode` serves, dispatched here directly: a
                // call through it on every token cost 1.3% of the cleaner.
                Mode::InBody => self.in_body(tok)?,
                Mode::InTable => self.in_table(tok)?,
                Mode::InCaption => self.in_caption(tok)?,
                Mode::InTableBody => self.in_table_body(tok)?,
                Mode::InRow => self.in_row(tok)?,
                Mode::InCell => self.in_cell(tok)?,
                mode => {
                    // The modes before and after the body see text in two
                    // parts: its leading whitespace, then the rest (as
                    // html5ever's `SplitWhitespace` hands them over); the rest
                    // ends in the body whatever the mode, where it is
                    // appended as one text, as html5ever's pieces merge.
                    let tok = match tok {
                        Tok::Chars(mut text) => {
                            let ws = text.bytes().take_while(|&c| is_ws(c)).count();
                            if ws > 0 {
                                let lead = text.subtendril(0, ws as u32);
                                self.whitespace(mode, lead)?;
                                text.pop_front(ws as u32);
                                if text.is_empty() {
                                    return Ok(TokenSinkResult::Continue);
                                }
                            }
                            Tok::Chars(text)
                        }
                        other => other,
                    };
                    self.outside_body(mode, tok)?
                }
            };
            match did {
                Did::Done(r) => return Ok(r),
                Did::Reprocess(mode, t) => {
                    self.mode = mode;
                    tok = t;
                }
            }
        }
    }

    /// Leading whitespace of text in a mode other than "in body" and
    /// "text".
    fn whitespace(&mut self, mode: Mode, text: StrTendril) -> Step<()> {
        match mode {
            Mode::Initial | Mode::BeforeHtml | Mode::BeforeHead => Ok(()),
            Mode::InHead | Mode::AfterHead | Mode::InColumnGroup => {
                self.append_text(text);
                Ok(())
            }
            _ => self.in_body(Tok::Chars(text)).map(|_| ()),
        }
    }

    fn outside_body(&mut self, mode: Mode, tok: Tok) -> Step<Did> {
        match mode {
            Mode::Initial => match tok {
                Tok::Comment => self.comment_to(ROOT),
                tok => {
                    self.quirks = Quirks::Yes;
                    Ok(Did::Reprocess(Mode::BeforeHtml, tok))
                }
            },
            Mode::BeforeHtml => match tok {
                Tok::Comment => self.comment_to(ROOT),
                Tok::Start(tag) if tag.name == local_name!("html") => {
                    self.create_root(tag.attrs);
                    self.mode = Mode::BeforeHead;
                    DONE
                }
                Tok::End(name) if !Self::ends_head_early(&name)? => DONE,
                tok => {
                    self.create_root(Vec::new());
                    Ok(Did::Reprocess(Mode::BeforeHead, tok))
                }
            },
            Mode::BeforeHead => match tok {
                Tok::Comment => self.comment_to(self.current()),
                Tok::Start(tag) if tag.name == local_name!("html") => self.in_body(Tok::Start(tag)),
                Tok::Start(tag) if tag.name == local_name!("head") => {
                    self.head = Some(self.insert(tag.name, tag.attrs, true));
                    self.mode = Mode::InHead;
                    DONE
                }
                Tok::End(name) if !Self::ends_head_early(&name)? => DONE,
                tok => {
                    self.head = Some(self.insert(local_name!("head"), Vec::new(), true));
                    Ok(Did::Reprocess(Mode::InHead, tok))
                }
            },
            Mode::InHead => self.in_head(tok),
            Mode::AfterHead => match tok {
                Tok::Comment => self.comment_to(self.current()),
                Tok::Start(tag) => match tag.name {
                    local_name!("html") => self.in_body(Tok::Start(tag)),
                    local_name!("body") => {
                        self.insert(tag.name, tag.attrs, true);
                        self.mode = Mode::InBody;
                        DONE
                    }
                    _ if from_head(&tag.name) => {
                        let head = self.head.ok_or(GiveUp)?;
                        self.open.push((head, local_name!("head")));
                        let did = self.in_head(Tok::Start(tag));
                        if let Some(at) = self.open.iter().rposition(|&(id, _)| id == head) {
                            self.open.remove(at);
                        }
                        did
                    }
                    local_name!("head") => DONE,
                    local_name!("frameset") | local_name!("template") => Err(GiveUp),
                    _ => self.body_first(Tok::Start(tag)),
                },
                Tok::End(name) => match name {
                    local_name!("body") | local_name!("html") => self.body_first(Tok::End(name)),
                    local_name!("br") => Err(GiveUp),
                    _ => DONE,
                },
                tok => self.body_first(tok),
            },
            Mode::AfterBody => match tok {
                Tok::Comment => {
                    let html = self.open.first().map_or(NIL, |&(id, _)| id);
                    self.comment_to(html)
                }
                Tok::Start(tag) if tag.name == local_name!("html") => self.in_body(Tok::Start(tag)),
                Tok::End(local_name!("html")) => {
                    self.mode = Mode::AfterAfterBody;
                    DONE
                }
                Tok::Eof => DONE,
                tok => Ok(Did::Reprocess(Mode::InBody, tok)),
            },
            Mode::AfterAfterBody => match tok {
                Tok::Comment => self.comment_to(ROOT),
                Tok::Start(tag) if tag.name == local_name!("html") => self.in_body(Tok::Start(tag)),
                Tok::Eof => DONE,
                tok => Ok(Did::Reprocess(Mode::InBody, tok)),
            },
            Mode::InColumnGroup => self.in_column_group(tok),
            _ => Err(GiveUp),
        }
    }

    /// Whether an end tag before the body is one of those that end the
    /// mode as anything else does (`</head>`, `</body>`, `</html>`; every
    /// other end tag is ignored there). `</br>` is given up on.
    fn ends_head_early(name: &LocalName) -> Step<bool> {
        match *name {
            local_name!("br") => Err(GiveUp),
            local_name!("head") | local_name!("body") | local_name!("html") => Ok(true),
            _ => Ok(false),
        }
    }

    /// "After head", anything else: a `<body>` is implied.
    fn body_first(&mut self, tok: Tok) -> Step<Did> {
        self.insert(local_name!("body"), Vec::new(), true);
        Ok(Did::Reprocess(Mode::InBody, tok))
    }

    fn in_head(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Comment => self.comment_to(self.current()),
            Tok::Start(tag) => match tag.name {
                local_name!("html") => self.in_body(Tok::Start(tag)),
                local_name!("base")
                | local_name!("basefont")
                | local_name!("bgsound")
                | local_name!("link")
                | local_name!("meta") => {
                    let charset = attr(&tag.attrs, local_name!("charset")).cloned();
                    let declares = charset.is_none()
                        && attr(&tag.attrs, local_name!("http-equiv"))
                            .is_some_and(|v| v.eq_ignore_ascii_case("content-type"))
                        && attr(&tag.attrs, local_name!("content"))
                            .is_some_and(|c| content_names_encoding(c));
                    self.insert(tag.name, tag.attrs, false);
                    if let Some(charset) = charset {
                        return Ok(Did::Done(TokenSinkResult::EncodingIndicator(charset)));
                    }
                    if declares {
                        return Ok(Did::Done(TokenSinkResult::EncodingIndicator(StrTendril::new())));
                    }
                    DONE
                }
                local_name!("title") => self.raw(tag, RawKind::Rcdata),
                local_name!("noframes") | local_name!("style") | local_name!("noscript") => {
                    self.raw(tag, RawKind::Rawtext)
                }
                local_name!("script") => self.raw(tag, RawKind::ScriptData),
                local_name!("template") => Err(GiveUp),
                local_name!("head") => DONE,
                _ => self.head_done(Tok::Start(tag)),
            },
            Tok::End(name) => match name {
                local_name!("head") => {
                    self.open.pop();
                    self.mode = Mode::AfterHead;
                    DONE
                }
                local_name!("body") | local_name!("html") => self.head_done(Tok::End(name)),
                local_name!("br") | local_name!("template") => Err(GiveUp),
                _ => DONE,
            },
            tok => self.head_done(tok),
        }
    }

    /// "In head", anything else: the head is closed.
    fn head_done(&mut self, tok: Tok) -> Step<Did> {
        self.open.pop();
        Ok(Did::Reprocess(Mode::AfterHead, tok))
    }

    fn text(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Chars(text) => {
                self.append_text(text);
                DONE
            }
            Tok::End(name) => {
                let (node, _) = self.open.pop().ok_or(GiveUp)?;
                self.mode = self.orig;
                if name == local_name!("script") {
                    return Ok(Did::Done(TokenSinkResult::Script(node)));
                }
                DONE
            }
            _ => Err(GiveUp),
        }
    }

    /// Reconstructs the active formatting elements: those closed by an
    /// element they were in are opened again, as clones with the same
    /// attributes, before text or an element goes in.
    fn reconstruct(&mut self) -> Step<()> {
        let is_open = |open: &[(NodeId, LocalName)], id: NodeId| open.iter().rev().any(|&(o, _)| o == id);
        let Some(&(last, _)) = self.formatting.last() else {
            return Ok(());
        };
        if last == MARKER || is_open(&self.open, last) {
            return Ok(());
        }
        let mut from = self.formatting.len() - 1;
        while from > 0 {
            let before = self.formatting[from - 1].0;
            if before == MARKER || is_open(&self.open, before) {
                break;
            }
            from -= 1;
        }
        for i in from..self.formatting.len() {
            let (old, name) = self.formatting[i].clone();
            let attrs = self.dom.attrs_of(old).ok_or(GiveUp)?.to_vec();
            let id = self.insert(name, attrs, true);
            self.formatting[i].0 = id;
        }
        Ok(())
    }

    fn raw(&mut self, tag: Tag, kind: RawKind) -> Step<Did> {
        self.insert(tag.name, tag.attrs, true);
        self.orig = self.mode;
        self.mode = Mode::Text;
        Ok(Did::Done(TokenSinkResult::RawData(kind)))
    }

    /// The active formatting elements after the last marker, last first.
    fn since_marker(&self) -> impl Iterator<Item = &(NodeId, LocalName)> {
        self.formatting.iter().rev().take_while(|&&(id, _)| id != MARKER)
    }

    fn current(&self) -> NodeId {
        self.open.last().map_or(ROOT, |&(id, _)| id)
    }

    fn current_is_heading(&self) -> bool {
        self.open.last().is_some_and(|(_, n)| is_heading(n))
    }

    /// Whether an open element that `is` holds for is in `scope`: met,
    /// from the current node down, before a node that bounds the scope.
    #[inline]
    fn scope_has(&self, scope: Scope, is: impl Fn(NodeId, &LocalName) -> bool) -> bool {
        for &(id, ref n) in self.open.iter().rev() {
            if is(id, n) {
                return true;
            }
            if bounds(scope, n) {
                return false;
            }
        }
        false
    }

    #[inline]
    fn in_scope(&self, scope: Scope, name: &LocalName) -> bool {
        self.scope_has(scope, |_, n| n == name)
    }

    fn node_in_scope(&self, node: NodeId) -> bool {
        self.scope_has(Scope::Default, |id, _| id == node)
    }

    /// Pops the elements whose end tags are implied, but not `except`.
    fn implied_end_tags(&mut self, except: Option<&LocalName>) {
        while let Some((_, n)) = self.open.last() {
            if !is_implied_end(n) || except == Some(n) {
                break;
            }
            self.open.pop();
        }
    }

    /// Pops elements up to the first named `name`, that one included.
    fn pop_until(&mut self, name: &LocalName) {
        self.pop_through(|n| n == name);
    }

    /// Pops elements up to the first that `is` holds for, that one included.
    fn pop_through(&mut self, is: impl Fn(&LocalName) -> bool) {
        while let Some((_, n)) = self.open.pop() {
            if is(&n) {
                break;
            }
        }
    }

    fn close_p(&mut self) {
        self.implied_end_tags(Some(&local_name!("p")));
        self.pop_until(&local_name!("p"));
    }

    #[inline]
    fn close_p_in_button_scope(&mut self) {
        if self.in_scope(Scope::Button, &local_name!("p")) {
            self.close_p();
        }
    }

    fn create_root(&mut self, attrs: Vec<Attribute>) {
        let id = self.element(QualName::new(None, ns!(html), local_name!("html")), attrs);
        self.dom.append_child(ROOT, id);
        self.open.push((id, local_name!("html")));
    }

    fn element(&mut self, name: QualName, mut attrs: Vec<Attribute>) -> NodeId {
        let id = self.dom.add_element(name, &mut attrs);
        if attrs.capacity() > self.spare_attrs.capacity() {
            self.spare_attrs = attrs;
        }
        id
    }

    /// An element appended to the current node.
    fn append_element(&mut self, name: QualName, attrs: Vec<Attribute>) -> NodeId {
        let parent = self.current();
        let id = self.element(name, attrs);
        self.dom.append_child(parent, id);
        id
    }

    /// An HTML element for a tag, appended to the current node, and pushed
    /// onto the stack when `push`.
    fn insert(&mut self, name: LocalName, attrs: Vec<Attribute>, push: bool) -> NodeId {
        let id = self.append_element(QualName::new(None, ns!(html), name.clone()), attrs);
        if push {
            self.open.push((id, name));
        }
        id
    }

    fn append_text(&mut self, text: StrTendril) {
        let parent = self.current();
        let last = self.dom.node(parent).map_or(NIL, |p| p.last);
        if !self.dom.merge_text(last, &text) {
            let id = self.dom.add(NodeData::Text(text));
            self.dom.append_child(parent, id);
        }
    }

    fn comment_to(&mut self, parent: NodeId) -> Step<Did> {
        let id = self.dom.add(NodeData::Other);
        self.dom.append_child(parent, id);
        DONE
    }

    fn add_attrs_if_missing(&mut self, target: NodeId, attrs: Vec<Attribute>) {
        self.dom.add_attrs_if_missing(target, attrs);
    }
}
