//! The page's tree: html5ever's tree builder writes it, the extractor walks
//! it once.
//!
//! A general DOM (scraper's `Html` over ego-tree) keeps what selectors and
//! serialization need: per element its id and classes prepared, attributes
//! sorted, nodes twice this size. The cleaner reads each element once, in
//! document order, so this tree keeps only the links between nodes, the
//! element's name, its attributes as the tokenizer made them and the text,
//! in one vector with `u32` links. What the tree builder asks of a sink
//! (merging adjacent text, moving nodes, template contents) is done exactly
//! as scraper does it, so the walk sees the same nodes in the same order
//! (`examples/clean_dir.rs` digests every output over the evaluation
//! sites; the test below compares the two trees node by node).

mod build;
mod tokens;

use std::borrow::Cow;
use std::cell::{Ref, RefCell};

use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName, expanded_name, local_name, ns};

use crate::nesting;

/// A node's place in [`Dom::nodes`].
pub(crate) type NodeId = u32;

/// Marks "no such node" in a link.
const NIL: NodeId = u32::MAX;

/// The document node: the tree's root.
pub(crate) const ROOT: NodeId = 0;

/// An element: its name, and where its attributes lie in the tree's list
/// of them ([`Dom::element`] reads both). One list for the page, where
/// each element held a vector of its own: allocating and freeing a
/// vector for every tag with attributes was 1.7% of a crawl's
/// instructions on the zh/en documentation mix (issue 37).
#[derive(Debug)]
pub(crate) struct Element {
    name: QualName,
    attrs: std::ops::Range<u32>,
}

/// An element as the walk reads it: its name and its attributes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ElementRef<'a> {
    name: &'a QualName,
    attrs: &'a [Attribute],
}

impl<'a> ElementRef<'a> {
    /// The local name (`div`) as its atom: the walk matches on it with
    /// `local_name!` patterns, which compare one integer where a match on
    /// the name's text compared bytes arm after arm (`memcmp` was 5% of a
    /// crawl's CPU, issue 37).
    pub(crate) fn local(&self) -> &'a html5ever::LocalName {
        &self.name.local
    }

    /// Every attribute as (local name's atom, value), in the tokenizer's
    /// order (repeated names were dropped by the tokenizer, the first kept).
    pub(crate) fn attrs(&self) -> impl Iterator<Item = (&'a html5ever::LocalName, &'a str)> + use<'a> {
        self.attrs.iter().map(|a| (&a.name.local, &*a.value))
    }

    /// The value of the attribute named `name` without a namespace (as
    /// scraper's `Element::attr` reads it).
    pub(crate) fn attr(&self, name: &str) -> Option<&'a str> {
        self.attrs
            .iter()
            .find(|a| a.name.prefix.is_none() && a.name.ns == ns!() && &*a.name.local == name)
            .map(|a| &*a.value)
    }
}

/// Whether `n` is a heading, `h1` to `h6` (html5ever's `heading_tag`):
/// the tree builder's rules and the walk's test for a related-content
/// heading both ask.
pub(crate) fn is_heading(n: &html5ever::LocalName) -> bool {
    matches!(
        *n,
        local_name!("h1")
            | local_name!("h2")
            | local_name!("h3")
            | local_name!("h4")
            | local_name!("h5")
            | local_name!("h6")
    )
}

/// What a node is.
#[derive(Debug)]
pub(crate) enum NodeData {
    Document,
    /// A `<template>`'s contents, its only child.
    Fragment,
    Element(Element),
    Text(StrTendril),
    /// A comment, doctype or processing instruction: kept in the tree
    /// because it separates the text around it (two text nodes, not one).
    Other,
}

#[derive(Debug)]
struct Node {
    parent: NodeId,
    prev: NodeId,
    next: NodeId,
    first: NodeId,
    last: NodeId,
    data: NodeData,
}

impl Node {
    fn new(data: NodeData) -> Self {
        Self {
            parent: NIL,
            prev: NIL,
            next: NIL,
            first: NIL,
            last: NIL,
            data,
        }
    }
}

/// A step of a walk in document order: a node is opened, then its
/// children are walked, then it is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Edge {
    Open(NodeId),
    Close(NodeId),
}

/// The part of html5ever a page was left to ([`Dom::by_html5ever`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Html5ever {
    /// Its tree builder, from our tokenizer's tokens.
    TreeBuilder,
    /// Its tokenizer and tree builder.
    Tokenizer,
}

/// A parsed page.
#[derive(Debug)]
pub(crate) struct Dom {
    nodes: Vec<Node>,
    /// Every element's attributes, an element's in a row ([`Element`]).
    attrs: Vec<Attribute>,
    /// What [`TreeSink::elem_name`] answers for a node that is not an
    /// element (the tree builder never asks; no panic if it did).
    no_name: QualName,
    /// See [`Dom::by_html5ever`].
    by_html5ever: Option<Html5ever>,
    /// See [`Dom::flattened`].
    flattened: bool,
}

/// A page has about as many nodes as `<`s (each tag opens at most one
/// element, and text lies between tags): the vector is reserved for them,
/// since doubling it as a large page's nodes arrived copied every node up
/// to a dozen times. Capped, so a page of nothing but `<`s reserves no more
/// than a large real page uses.
const MAX_RESERVED_NODES: usize = 1 << 17;

impl Dom {
    /// Parses a whole document, as a browser would (html5ever's tokenizer
    /// and tree builder).
    ///
    /// Markup nested deeper than [`nesting::MAX_DEPTH`] open elements is
    /// flattened first ([`nesting`] says why). Our builder knows its depth
    /// as it goes, so a page is flattened only when it reaches the cap, or
    /// when it is left to html5ever (whose depth we do not see): the scan
    /// for depth was a fifteenth of the cleaner's instructions on the
    /// zh/en documentation mix, run on every page (issue 37).
    pub(crate) fn parse(html: &str) -> Self {
        let tags = memchr::memchr_iter(b'<', html.as_bytes()).count();
        let gave_up = match tokens::parse_own(html, Self::empty(tags), nesting::MAX_DEPTH) {
            Ok(dom) => return dom,
            Err(who) => who,
        };
        let flat = nesting::flatten(html, nesting::MAX_DEPTH);
        let gave_up = match (&flat, gave_up) {
            // The same markup gives up the same way: not parsed again.
            (None, who @ (tokens::GaveUp::Tokenizer | tokens::GaveUp::Builder)) => who,
            // Flattened, or deeper than the cap by our builder's count and
            // not by the scan's estimate: the cap is not checked again
            // (html5ever's builder would not check it either).
            (_, _) => match tokens::parse_own(flat.as_deref().unwrap_or(html), Self::empty(tags), usize::MAX)
            {
                Ok(mut dom) => {
                    dom.flattened = flat.is_some();
                    return dom;
                }
                Err(who) => who,
            },
        };
        let html = flat.as_deref().unwrap_or(html);
        let by_tree_builder = match gave_up {
            tokens::GaveUp::Builder => tokens::parse(html, Self::sink(tags)),
            tokens::GaveUp::Tokenizer | tokens::GaveUp::TooDeep => None,
        };
        let mut dom = by_tree_builder
            .map(|mut dom| {
                dom.by_html5ever = Some(Html5ever::TreeBuilder);
                dom
            })
            .unwrap_or_else(|| {
                let mut dom = Self::parse_with_html5ever(html, tags);
                dom.by_html5ever = Some(Html5ever::Tokenizer);
                dom
            });
        dom.flattened = flat.is_some();
        dom
    }

    /// Whether the page was flattened ([`Dom::parse`]): for logs.
    pub(crate) fn flattened(&self) -> bool {
        self.flattened
    }

    /// Which part of html5ever built the page, where our tokenizer or
    /// tree builder gave up on its markup: for logs.
    pub(crate) fn by_html5ever(&self) -> Option<Html5ever> {
        self.by_html5ever
    }

    /// The same tree, tokenized by html5ever's own tokenizer: for the
    /// pages [`tokens`] leaves to it, and the reference it is tested
    /// against.
    fn parse_with_html5ever(html: &str, tags: usize) -> Self {
        html5ever::driver::parse_document(Self::sink(tags), html5ever::ParseOpts::default()).one(html)
    }

    /// An empty tree for html5ever's tree builder to build
    /// ([`Dom::empty`]).
    fn sink(tags: usize) -> Sink {
        Sink(RefCell::new(Self::empty(tags)))
    }

    /// An empty tree, reserved for a page with `tags` `<`s.
    fn empty(tags: usize) -> Dom {
        let mut nodes = Vec::with_capacity((tags + tags / 4 + 16).min(MAX_RESERVED_NODES));
        nodes.push(Node::new(NodeData::Document));
        Dom {
            nodes,
            // Up to one attribute a `<` (class names, anchors and links):
            // reserved for a quarter of that, the list grew and was copied
            // twice a page on the zh/en documentation mix.
            attrs: Vec::with_capacity(tags.min(MAX_RESERVED_NODES)),
            no_name: QualName::new(None, ns!(), local_name!("")),
            by_html5ever: None,
            flattened: false,
        }
    }

    /// How many nodes the tree has.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// What node `id` is (a document node for an id out of range, which
    /// the walk never asks for).
    pub(crate) fn data(&self, id: NodeId) -> &NodeData {
        self.nodes
            .get(id as usize)
            .map_or(&NodeData::Document, |n| &n.data)
    }

    /// Element `e` of this tree with its attributes.
    pub(crate) fn element<'a>(&'a self, e: &'a Element) -> ElementRef<'a> {
        ElementRef {
            name: &e.name,
            attrs: self.attrs_in(&e.attrs),
        }
    }

    /// The attributes in `range` of [`Dom::attrs`] (none if it is out of
    /// the list, which the builder never makes).
    fn attrs_in(&self, range: &std::ops::Range<u32>) -> &[Attribute] {
        self.attrs
            .get(range.start as usize..range.end as usize)
            .unwrap_or_default()
    }

    /// Adds an element named `name` with the attributes of `attrs`, which
    /// are moved out of it (its buffer is left for the caller to reuse).
    fn add_element(&mut self, name: QualName, attrs: &mut Vec<Attribute>) -> NodeId {
        let start = self.attrs.len();
        self.attrs.append(attrs);
        let range = Self::attr_range(start, self.attrs.len());
        self.add(NodeData::Element(Element { name, attrs: range }))
    }

    /// `start..end` in [`Dom::attrs`] as an element keeps it (a page's
    /// attributes are far fewer than 2^32: the cleaner caps pages).
    fn attr_range(start: usize, end: usize) -> std::ops::Range<u32> {
        u32::try_from(start).unwrap_or(u32::MAX)..u32::try_from(end).unwrap_or(u32::MAX)
    }

    /// Adds to element `target` those of `attrs` it has no attribute of
    /// that name for (the tree builder's rule for a second `<html>` or
    /// `<body>` tag). Its attributes are moved to the end of the list
    /// first, unless they are there already (this happens a few times a
    /// page at most).
    fn add_attrs_if_missing(&mut self, target: NodeId, attrs: Vec<Attribute>) {
        let Some(Node {
            data: NodeData::Element(e),
            ..
        }) = self.nodes.get(target as usize)
        else {
            return;
        };
        let (start, end) = (e.attrs.start as usize, e.attrs.end as usize);
        let mut now: Vec<Attribute> = self.attrs_in(&e.attrs).to_vec();
        for a in attrs {
            if !now.iter().any(|b| b.name == a.name) {
                now.push(a);
            }
        }
        if end == self.attrs.len() {
            self.attrs.truncate(start);
        }
        let start = self.attrs.len();
        self.attrs.append(&mut now);
        let range = Self::attr_range(start, self.attrs.len());
        if let Some(Node {
            data: NodeData::Element(e),
            ..
        }) = self.nodes.get_mut(target as usize)
        {
            e.attrs = range;
        }
    }

    /// The attributes of node `id`, when it is an element.
    fn attrs_of(&self, id: NodeId) -> Option<&[Attribute]> {
        match self.node(id) {
            Some(Node {
                data: NodeData::Element(e),
                ..
            }) => Some(self.attrs_in(&e.attrs)),
            _ => None,
        }
    }

    /// The whole tree in document order, without recursion (a page of a
    /// million nested elements must not overflow the stack).
    pub(crate) fn traverse(&self) -> Traverse<'_> {
        self.traverse_from(ROOT)
    }

    /// The subtree under `top`, `top` included, in document order.
    pub(crate) fn traverse_from(&self, top: NodeId) -> Traverse<'_> {
        Traverse {
            dom: self,
            top,
            next: Some(Edge::Open(top)),
        }
    }

    /// The text of every text node under `id`, concatenated (scraper's
    /// `ElementRef::text`).
    pub(crate) fn text_of(&self, id: NodeId) -> String {
        let mut out = String::new();
        for edge in self.traverse_from(id) {
            if let Edge::Open(n) = edge
                && let NodeData::Text(t) = self.data(n)
            {
                out.push_str(t);
            }
        }
        out
    }

    fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id as usize)
    }

    fn node_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        self.nodes.get_mut(id as usize)
    }

    fn add(&mut self, data: NodeData) -> NodeId {
        let id = NodeId::try_from(self.nodes.len()).unwrap_or(NIL);
        self.nodes.push(Node::new(data));
        id
    }

    /// Takes `id` out of its parent's children (ego-tree's `detach`).
    fn detach(&mut self, id: NodeId) {
        let Some(n) = self.node_mut(id) else { return };
        let (parent, prev, next) = (n.parent, n.prev, n.next);
        if parent == NIL {
            return;
        }
        n.parent = NIL;
        n.prev = NIL;
        n.next = NIL;
        if let Some(p) = self.node_mut(prev) {
            p.next = next;
        }
        if let Some(x) = self.node_mut(next) {
            x.prev = prev;
        }
        if let Some(p) = self.node_mut(parent) {
            if p.first == id {
                p.first = next;
            }
            if p.last == id {
                p.last = prev;
            }
        }
    }

    /// Makes `child` the last child of `parent` (ego-tree's `append_id`).
    fn append_child(&mut self, parent: NodeId, child: NodeId) {
        if parent == child || self.node(child).is_none() {
            return;
        }
        let Some(last) = self.node(parent).map(|p| p.last) else {
            return;
        };
        if last == child {
            return;
        }
        self.detach(child);
        if let Some(c) = self.node_mut(child) {
            c.parent = parent;
            c.prev = last;
        }
        if let Some(l) = self.node_mut(last) {
            l.next = child;
        }
        if let Some(p) = self.node_mut(parent) {
            if p.first == NIL {
                p.first = child;
            }
            p.last = child;
        }
    }

    /// Puts `new` just before `sibling`, which has a parent (ego-tree's
    /// `insert_id_before`).
    fn insert_before(&mut self, sibling: NodeId, new: NodeId) {
        if sibling == new || self.node(new).is_none() {
            return;
        }
        self.detach(new);
        let Some((parent, prev)) = self.node(sibling).map(|s| (s.parent, s.prev)) else {
            return;
        };
        if let Some(n) = self.node_mut(new) {
            n.parent = parent;
            n.prev = prev;
            n.next = sibling;
        }
        if let Some(p) = self.node_mut(prev) {
            p.next = new;
        }
        if let Some(s) = self.node_mut(sibling) {
            s.prev = new;
        }
        if let Some(p) = self.node_mut(parent)
            && p.first == sibling
        {
            p.first = new;
        }
    }

    /// Appends `text` to the text node `id` when it is one.
    fn merge_text(&mut self, id: NodeId, text: &StrTendril) -> bool {
        match self.node_mut(id) {
            Some(Node {
                data: NodeData::Text(t),
                ..
            }) => {
                t.push_tendril(text);
                true
            }
            _ => false,
        }
    }
}

/// The iterator of [`Dom::traverse`].
#[derive(Debug)]
pub(crate) struct Traverse<'a> {
    dom: &'a Dom,
    top: NodeId,
    next: Option<Edge>,
}

impl Iterator for Traverse<'_> {
    type Item = Edge;

    fn next(&mut self) -> Option<Edge> {
        let edge = self.next?;
        self.next = match edge {
            Edge::Open(id) => match self.dom.node(id) {
                Some(n) if n.first != NIL => Some(Edge::Open(n.first)),
                _ => Some(Edge::Close(id)),
            },
            Edge::Close(id) if id == self.top => None,
            Edge::Close(id) => match self.dom.node(id) {
                Some(n) if n.next != NIL => Some(Edge::Open(n.next)),
                Some(n) if n.parent != NIL => Some(Edge::Close(n.parent)),
                _ => None,
            },
        };
        Some(edge)
    }
}

/// The tree builder's view of a [`Dom`] being built.
struct Sink(RefCell<Dom>);

impl TreeSink for Sink {
    type Handle = NodeId;
    type Output = Dom;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Dom {
        self.0.into_inner()
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> NodeId {
        ROOT
    }

    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Ref<'a, QualName> {
        Ref::map(self.0.borrow(), |dom| match dom.node(*target) {
            Some(Node {
                data: NodeData::Element(e),
                ..
            }) => &e.name,
            _ => &dom.no_name,
        })
    }

    fn create_element(&self, name: QualName, mut attrs: Vec<Attribute>, _flags: ElementFlags) -> NodeId {
        let template = name.expanded() == expanded_name!(html "template");
        let mut dom = self.0.borrow_mut();
        let id = dom.add_element(name, &mut attrs);
        if template {
            let contents = dom.add(NodeData::Fragment);
            dom.append_child(id, contents);
        }
        id
    }

    fn create_comment(&self, _text: StrTendril) -> NodeId {
        self.0.borrow_mut().add(NodeData::Other)
    }

    fn create_pi(&self, _target: StrTendril, _data: StrTendril) -> NodeId {
        self.0.borrow_mut().add(NodeData::Other)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        let mut dom = self.0.borrow_mut();
        match child {
            NodeOrText::AppendNode(id) => dom.append_child(*parent, id),
            NodeOrText::AppendText(text) => {
                let last = dom.node(*parent).map_or(NIL, |p| p.last);
                if !dom.merge_text(last, &text) {
                    let id = dom.add(NodeData::Text(text));
                    dom.append_child(*parent, id);
                }
            }
        }
    }

    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        let has_parent = self.0.borrow().node(*element).is_some_and(|n| n.parent != NIL);
        if has_parent {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev_element, child);
        }
    }

    fn append_doctype_to_document(&self, _name: StrTendril, _public_id: StrTendril, _system_id: StrTendril) {
        let mut dom = self.0.borrow_mut();
        let id = dom.add(NodeData::Other);
        dom.append_child(ROOT, id);
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.0.borrow().node(*target).map_or(NIL, |n| n.first)
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        x == y
    }

    fn set_quirks_mode(&self, _mode: QuirksMode) {}

    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        let mut dom = self.0.borrow_mut();
        if let NodeOrText::AppendNode(id) = new_node {
            dom.detach(id);
        }
        let Some((parent, prev)) = dom.node(*sibling).map(|s| (s.parent, s.prev)) else {
            return;
        };
        if parent == NIL {
            return;
        }
        match new_node {
            NodeOrText::AppendNode(id) => dom.insert_before(*sibling, id),
            NodeOrText::AppendText(text) => {
                if !dom.merge_text(prev, &text) {
                    let id = dom.add(NodeData::Text(text));
                    dom.insert_before(*sibling, id);
                }
            }
        }
    }

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.0.borrow_mut().add_attrs_if_missing(*target, attrs);
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.0.borrow_mut().detach(*target);
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        let mut dom = self.0.borrow_mut();
        if node == new_parent {
            return;
        }
        let Some((first, last)) = dom.node_mut(*node).map(|n| {
            let ids = (n.first, n.last);
            n.first = NIL;
            n.last = NIL;
            ids
        }) else {
            return;
        };
        if first == NIL {
            return;
        }
        let mut child = first;
        while let Some(c) = dom.node_mut(child) {
            c.parent = *new_parent;
            child = c.next;
        }
        let old_last = dom.node(*new_parent).map_or(NIL, |p| p.last);
        if old_last == NIL {
            if let Some(p) = dom.node_mut(*new_parent) {
                p.first = first;
                p.last = last;
            }
            return;
        }
        if let Some(l) = dom.node_mut(old_last) {
            l.next = first;
        }
        if let Some(f) = dom.node_mut(first) {
            f.prev = old_last;
        }
        if let Some(p) = dom.node_mut(*new_parent) {
            p.last = last;
        }
    }
}

#[cfg(test)]
mod tests;
