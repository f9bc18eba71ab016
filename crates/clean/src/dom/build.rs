//! A tree builder for the markup most pages are made of, fed by our
//! tokenizer ([`super::tokens`]).
//!
//! Behind our tokenizer, html5ever's tree builder was a fifth of the
//! cleaner's instructions on a documentation site (issue 37, target 2): a
//! queue made and dropped for every token, scope checks through its sink's
//! handles, a name looked up through a `RefCell` for each open element. The
//! pages of documentation, news and mail sites use a small part of the
//! WHATWG tree construction rules: the modes from "initial" to "in body"
//! and "after after body", implied end tags, well-nested formatting
//! elements and their reconstruction. This builder follows html5ever 0.40's
//! rules for that part, operation for operation (the tree, its text merges
//! and the order of attributes are html5ever's), and gives up on the rest:
//! tables (foster parenting), `<select>`, templates, frames, ruby, foreign
//! content (`<svg>`, `<math>`), `<applet>`, `<object>`, `<marquee>`,
//! `<nobr>`, `<a>` inside an open `<a>`, a formatting element that would
//! need the adoption agency's furthest block, a fourth open formatting
//! element of one name (Noah's Ark), `</br>`, `</option>`. A page it gives
//! up on is built again by html5ever's tree builder from our tokenizer's
//! tokens, so every page gets html5ever's tree (tested against it on
//! generated markup, and over the evaluation sites by
//! `examples/clean_dir.rs`'s digests).

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{Tag, TagKind, Token, TokenSink, TokenSinkResult};
use html5ever::{Attribute, LocalName, QualName, local_name, namespace_prefix, ns};

use super::{Dom, Element, NIL, Node, NodeData, NodeId, ROOT};

/// The builder met markup it leaves to html5ever's tree builder.
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
}

/// The tree builder: a [`TokenSink`] for our tokenizer.
pub(super) struct Builder(RefCell<State>);

impl Builder {
    pub(super) fn new(dom: Dom) -> Self {
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
        }))
    }

    /// Whether the builder gave up (the tokenizer then stops too).
    pub(super) fn gave_up(&self) -> bool {
        self.0.borrow().gave_up
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

/// "Special" elements (html5ever's `special_tag`).
fn is_special(n: &LocalName) -> bool {
    matches!(
        *n,
        local_name!("address")
            | local_name!("applet")
            | local_name!("area")
            | local_name!("article")
            | local_name!("aside")
            | local_name!("base")
            | local_name!("basefont")
            | local_name!("bgsound")
            | local_name!("blockquote")
            | local_name!("body")
            | local_name!("br")
            | local_name!("button")
            | local_name!("caption")
            | local_name!("center")
            | local_name!("col")
            | local_name!("colgroup")
            | local_name!("dd")
            | local_name!("details")
            | local_name!("dir")
            | local_name!("div")
            | local_name!("dl")
            | local_name!("dt")
            | local_name!("embed")
            | local_name!("fieldset")
            | local_name!("figcaption")
            | local_name!("figure")
            | local_name!("footer")
            | local_name!("form")
            | local_name!("frame")
            | local_name!("frameset")
            | local_name!("h1")
            | local_name!("h2")
            | local_name!("h3")
            | local_name!("h4")
            | local_name!("h5")
            | local_name!("h6")
            | local_name!("head")
            | local_name!("header")
            | local_name!("hgroup")
            | local_name!("hr")
            | local_name!("html")
            | local_name!("iframe")
            | local_name!("img")
            | local_name!("input")
            | local_name!("isindex")
            | local_name!("li")
            | local_name!("link")
            | local_name!("listing")
            | local_name!("main")
            | local_name!("marquee")
            | local_name!("menu")
            | local_name!("meta")
            | local_name!("nav")
            | local_name!("noembed")
            | local_name!("noframes")
            | local_name!("noscript")
            | local_name!("object")
            | local_name!("ol")
            | local_name!("p")
            | local_name!("param")
            | local_name!("plaintext")
            | local_name!("pre")
            | local_name!("script")
            | local_name!("section")
            | local_name!("select")
            | local_name!("source")
            | local_name!("style")
            | local_name!("summary")
            | local_name!("table")
            | local_name!("tbody")
            | local_name!("td")
            | local_name!("template")
            | local_name!("textarea")
            | local_name!("tfoot")
            | local_name!("th")
            | local_name!("thead")
            | local_name!("title")
            | local_name!("tr")
            | local_name!("track")
            | local_name!("ul")
            | local_name!("wbr")
            | local_name!("xmp")
    )
}

fn is_heading(n: &LocalName) -> bool {
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

/// html5ever's `cursory_implied_end`.
fn is_implied_end(n: &LocalName) -> bool {
    matches!(
        *n,
        local_name!("dd")
            | local_name!("dt")
            | local_name!("li")
            | local_name!("option")
            | local_name!("optgroup")
            | local_name!("p")
            | local_name!("rb")
            | local_name!("rp")
            | local_name!("rt")
            | local_name!("rtc")
    )
}

/// html5ever's `table_scope` as a stop for popping: "clear the stack
/// back to a table context".
fn table_context(n: &LocalName) -> bool {
    matches!(
        *n,
        local_name!("html") | local_name!("table") | local_name!("template")
    )
}

fn table_body_context(n: &LocalName) -> bool {
    matches!(
        *n,
        local_name!("tbody")
            | local_name!("tfoot")
            | local_name!("thead")
            | local_name!("template")
            | local_name!("html")
    )
}

fn table_row_context(n: &LocalName) -> bool {
    matches!(
        *n,
        local_name!("tr") | local_name!("template") | local_name!("html")
    )
}

/// The tokens that end a table section or row and go on in the table:
/// `<caption>`, `<col>`, `<colgroup>`, `<tbody>`, `<tfoot>`, `<thead>`
/// and `</table>`.
fn table_section_ends(tok: &Tok) -> bool {
    match tok {
        Tok::Start(tag) => matches!(
            tag.name,
            local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("tbody")
                | local_name!("tfoot")
                | local_name!("thead")
        ),
        Tok::End(name) => *name == local_name!("table"),
        _ => false,
    }
}

fn bounds(scope: Scope, n: &LocalName) -> bool {
    if let Scope::Table = scope {
        return matches!(
            *n,
            local_name!("html") | local_name!("table") | local_name!("template")
        );
    }
    // html5ever's `html_default_scope` (the MathML and SVG integration
    // points never open here: foreign content is given up on).
    let default = matches!(
        *n,
        local_name!("applet")
            | local_name!("caption")
            | local_name!("html")
            | local_name!("table")
            | local_name!("td")
            | local_name!("th")
            | local_name!("marquee")
            | local_name!("object")
            | local_name!("select")
            | local_name!("template")
    );
    default
        || match scope {
            Scope::Default => false,
            Scope::ListItem => matches!(*n, local_name!("ol") | local_name!("ul")),
            Scope::Button => *n == local_name!("button"),
            Scope::Table => false,
        }
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

/// html5ever's `adjust_svg_tag_name`: SVG's camel-case element names.
fn svg_tag_name(name: LocalName) -> LocalName {
    match name {
        local_name!("altglyph") => local_name!("altGlyph"),
        local_name!("altglyphdef") => local_name!("altGlyphDef"),
        local_name!("altglyphitem") => local_name!("altGlyphItem"),
        local_name!("animatecolor") => local_name!("animateColor"),
        local_name!("animatemotion") => local_name!("animateMotion"),
        local_name!("animatetransform") => local_name!("animateTransform"),
        local_name!("clippath") => local_name!("clipPath"),
        local_name!("feblend") => local_name!("feBlend"),
        local_name!("fecolormatrix") => local_name!("feColorMatrix"),
        local_name!("fecomponenttransfer") => local_name!("feComponentTransfer"),
        local_name!("fecomposite") => local_name!("feComposite"),
        local_name!("feconvolvematrix") => local_name!("feConvolveMatrix"),
        local_name!("fediffuselighting") => local_name!("feDiffuseLighting"),
        local_name!("fedisplacementmap") => local_name!("feDisplacementMap"),
        local_name!("fedistantlight") => local_name!("feDistantLight"),
        local_name!("fedropshadow") => local_name!("feDropShadow"),
        local_name!("feflood") => local_name!("feFlood"),
        local_name!("fefunca") => local_name!("feFuncA"),
        local_name!("fefuncb") => local_name!("feFuncB"),
        local_name!("fefuncg") => local_name!("feFuncG"),
        local_name!("fefuncr") => local_name!("feFuncR"),
        local_name!("fegaussianblur") => local_name!("feGaussianBlur"),
        local_name!("feimage") => local_name!("feImage"),
        local_name!("femerge") => local_name!("feMerge"),
        local_name!("femergenode") => local_name!("feMergeNode"),
        local_name!("femorphology") => local_name!("feMorphology"),
        local_name!("feoffset") => local_name!("feOffset"),
        local_name!("fepointlight") => local_name!("fePointLight"),
        local_name!("fespecularlighting") => local_name!("feSpecularLighting"),
        local_name!("fespotlight") => local_name!("feSpotLight"),
        local_name!("fetile") => local_name!("feTile"),
        local_name!("feturbulence") => local_name!("feTurbulence"),
        local_name!("foreignobject") => local_name!("foreignObject"),
        local_name!("glyphref") => local_name!("glyphRef"),
        local_name!("lineargradient") => local_name!("linearGradient"),
        local_name!("radialgradient") => local_name!("radialGradient"),
        local_name!("textpath") => local_name!("textPath"),
        other => other,
    }
}

/// html5ever's `adjust_svg_attributes` and `adjust_foreign_attributes`
/// (in that order) on an SVG element's attributes.
fn adjust_svg_attributes(attrs: &mut [Attribute]) {
    for a in attrs {
        let svg = match a.name.local {
            local_name!("attributename") => Some(QualName::new(None, ns!(), local_name!("attributeName"))),
            local_name!("attributetype") => Some(QualName::new(None, ns!(), local_name!("attributeType"))),
            local_name!("basefrequency") => Some(QualName::new(None, ns!(), local_name!("baseFrequency"))),
            local_name!("baseprofile") => Some(QualName::new(None, ns!(), local_name!("baseProfile"))),
            local_name!("calcmode") => Some(QualName::new(None, ns!(), local_name!("calcMode"))),
            local_name!("clippathunits") => Some(QualName::new(None, ns!(), local_name!("clipPathUnits"))),
            local_name!("diffuseconstant") => {
                Some(QualName::new(None, ns!(), local_name!("diffuseConstant")))
            }
            local_name!("edgemode") => Some(QualName::new(None, ns!(), local_name!("edgeMode"))),
            local_name!("filterunits") => Some(QualName::new(None, ns!(), local_name!("filterUnits"))),
            local_name!("glyphref") => Some(QualName::new(None, ns!(), local_name!("glyphRef"))),
            local_name!("gradienttransform") => {
                Some(QualName::new(None, ns!(), local_name!("gradientTransform")))
            }
            local_name!("gradientunits") => Some(QualName::new(None, ns!(), local_name!("gradientUnits"))),
            local_name!("kernelmatrix") => Some(QualName::new(None, ns!(), local_name!("kernelMatrix"))),
            local_name!("kernelunitlength") => {
                Some(QualName::new(None, ns!(), local_name!("kernelUnitLength")))
            }
            local_name!("keypoints") => Some(QualName::new(None, ns!(), local_name!("keyPoints"))),
            local_name!("keysplines") => Some(QualName::new(None, ns!(), local_name!("keySplines"))),
            local_name!("keytimes") => Some(QualName::new(None, ns!(), local_name!("keyTimes"))),
            local_name!("lengthadjust") => Some(QualName::new(None, ns!(), local_name!("lengthAdjust"))),
            local_name!("limitingconeangle") => {
                Some(QualName::new(None, ns!(), local_name!("limitingConeAngle")))
            }
            local_name!("markerheight") => Some(QualName::new(None, ns!(), local_name!("markerHeight"))),
            local_name!("markerunits") => Some(QualName::new(None, ns!(), local_name!("markerUnits"))),
            local_name!("markerwidth") => Some(QualName::new(None, ns!(), local_name!("markerWidth"))),
            local_name!("maskcontentunits") => {
                Some(QualName::new(None, ns!(), local_name!("maskContentUnits")))
            }
            local_name!("maskunits") => Some(QualName::new(None, ns!(), local_name!("maskUnits"))),
            local_name!("numoctaves") => Some(QualName::new(None, ns!(), local_name!("numOctaves"))),
            local_name!("pathlength") => Some(QualName::new(None, ns!(), local_name!("pathLength"))),
            local_name!("patterncontentunits") => {
                Some(QualName::new(None, ns!(), local_name!("patternContentUnits")))
            }
            local_name!("patterntransform") => {
                Some(QualName::new(None, ns!(), local_name!("patternTransform")))
            }
            local_name!("patternunits") => Some(QualName::new(None, ns!(), local_name!("patternUnits"))),
            local_name!("pointsatx") => Some(QualName::new(None, ns!(), local_name!("pointsAtX"))),
            local_name!("pointsaty") => Some(QualName::new(None, ns!(), local_name!("pointsAtY"))),
            local_name!("pointsatz") => Some(QualName::new(None, ns!(), local_name!("pointsAtZ"))),
            local_name!("preservealpha") => Some(QualName::new(None, ns!(), local_name!("preserveAlpha"))),
            local_name!("preserveaspectratio") => {
                Some(QualName::new(None, ns!(), local_name!("preserveAspectRatio")))
            }
            local_name!("primitiveunits") => Some(QualName::new(None, ns!(), local_name!("primitiveUnits"))),
            local_name!("refx") => Some(QualName::new(None, ns!(), local_name!("refX"))),
            local_name!("refy") => Some(QualName::new(None, ns!(), local_name!("refY"))),
            local_name!("repeatcount") => Some(QualName::new(None, ns!(), local_name!("repeatCount"))),
            local_name!("repeatdur") => Some(QualName::new(None, ns!(), local_name!("repeatDur"))),
            local_name!("requiredextensions") => {
                Some(QualName::new(None, ns!(), local_name!("requiredExtensions")))
            }
            local_name!("requiredfeatures") => {
                Some(QualName::new(None, ns!(), local_name!("requiredFeatures")))
            }
            local_name!("specularconstant") => {
                Some(QualName::new(None, ns!(), local_name!("specularConstant")))
            }
            local_name!("specularexponent") => {
                Some(QualName::new(None, ns!(), local_name!("specularExponent")))
            }
            local_name!("spreadmethod") => Some(QualName::new(None, ns!(), local_name!("spreadMethod"))),
            local_name!("startoffset") => Some(QualName::new(None, ns!(), local_name!("startOffset"))),
            local_name!("stddeviation") => Some(QualName::new(None, ns!(), local_name!("stdDeviation"))),
            local_name!("stitchtiles") => Some(QualName::new(None, ns!(), local_name!("stitchTiles"))),
            local_name!("surfacescale") => Some(QualName::new(None, ns!(), local_name!("surfaceScale"))),
            local_name!("systemlanguage") => Some(QualName::new(None, ns!(), local_name!("systemLanguage"))),
            local_name!("tablevalues") => Some(QualName::new(None, ns!(), local_name!("tableValues"))),
            local_name!("targetx") => Some(QualName::new(None, ns!(), local_name!("targetX"))),
            local_name!("targety") => Some(QualName::new(None, ns!(), local_name!("targetY"))),
            local_name!("textlength") => Some(QualName::new(None, ns!(), local_name!("textLength"))),
            local_name!("viewbox") => Some(QualName::new(None, ns!(), local_name!("viewBox"))),
            local_name!("viewtarget") => Some(QualName::new(None, ns!(), local_name!("viewTarget"))),
            local_name!("xchannelselector") => {
                Some(QualName::new(None, ns!(), local_name!("xChannelSelector")))
            }
            local_name!("ychannelselector") => {
                Some(QualName::new(None, ns!(), local_name!("yChannelSelector")))
            }
            local_name!("zoomandpan") => Some(QualName::new(None, ns!(), local_name!("zoomAndPan"))),
            _ => None,
        };
        if let Some(name) = svg {
            a.name = name;
        }
        let foreign = match a.name.local {
            local_name!("xlink:actuate") => Some(QualName::new(
                Some(namespace_prefix!("xlink")),
                ns!(xlink),
                local_name!("actuate"),
            )),
            local_name!("xlink:arcrole") => Some(QualName::new(
                Some(namespace_prefix!("xlink")),
                ns!(xlink),
                local_name!("arcrole"),
            )),
            local_name!("xlink:href") => Some(QualName::new(
                Some(namespace_prefix!("xlink")),
                ns!(xlink),
                local_name!("href"),
            )),
            local_name!("xlink:role") => Some(QualName::new(
                Some(namespace_prefix!("xlink")),
                ns!(xlink),
                local_name!("role"),
            )),
            local_name!("xlink:show") => Some(QualName::new(
                Some(namespace_prefix!("xlink")),
                ns!(xlink),
                local_name!("show"),
            )),
            local_name!("xlink:title") => Some(QualName::new(
                Some(namespace_prefix!("xlink")),
                ns!(xlink),
                local_name!("title"),
            )),
            local_name!("xlink:type") => Some(QualName::new(
                Some(namespace_prefix!("xlink")),
                ns!(xlink),
                local_name!("type"),
            )),
            local_name!("xml:lang") => Some(QualName::new(
                Some(namespace_prefix!("xml")),
                ns!(xml),
                local_name!("lang"),
            )),
            local_name!("xml:space") => Some(QualName::new(
                Some(namespace_prefix!("xml")),
                ns!(xml),
                local_name!("space"),
            )),
            local_name!("xmlns") => Some(QualName::new(
                Some(namespace_prefix!("")),
                ns!(xmlns),
                local_name!("xmlns"),
            )),
            local_name!("xmlns:xlink") => Some(QualName::new(
                Some(namespace_prefix!("xmlns")),
                ns!(xmlns),
                local_name!("xlink"),
            )),
            _ => None,
        };
        if let Some(name) = foreign {
            a.name = name;
        }
    }
}

/// The name an SVG element has on the stack of open elements: none of
/// html5ever's rules for HTML elements matches it by name, as none matches
/// an element of another namespace; its own name is in the tree.
const SVG: LocalName = local_name!("");

/// Start tags that break out of foreign content (html5ever's list), and
/// `<font>` with a presentational attribute.
fn breaks_out(tag: &Tag) -> bool {
    matches!(
        tag.name,
        local_name!("b")
            | local_name!("big")
            | local_name!("blockquote")
            | local_name!("body")
            | local_name!("br")
            | local_name!("center")
            | local_name!("code")
            | local_name!("dd")
            | local_name!("div")
            | local_name!("dl")
            | local_name!("dt")
            | local_name!("em")
            | local_name!("embed")
            | local_name!("h1")
            | local_name!("h2")
            | local_name!("h3")
            | local_name!("h4")
            | local_name!("h5")
            | local_name!("h6")
            | local_name!("head")
            | local_name!("hr")
            | local_name!("i")
            | local_name!("img")
            | local_name!("li")
            | local_name!("listing")
            | local_name!("menu")
            | local_name!("meta")
            | local_name!("nobr")
            | local_name!("ol")
            | local_name!("p")
            | local_name!("pre")
            | local_name!("ruby")
            | local_name!("s")
            | local_name!("small")
            | local_name!("span")
            | local_name!("strong")
            | local_name!("strike")
            | local_name!("sub")
            | local_name!("sup")
            | local_name!("table")
            | local_name!("tt")
            | local_name!("u")
            | local_name!("ul")
            | local_name!("var")
    ) || (tag.name == local_name!("font")
        && tag.attrs.iter().any(|a| {
            a.name.ns == ns!()
                && matches!(
                    a.name.local,
                    local_name!("color") | local_name!("face") | local_name!("size")
                )
        }))
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
                Mode::InBody => self.in_body(tok)?,
                Mode::Text => self.text(tok)?,
                Mode::InTable => self.in_table(tok)?,
                Mode::InTableText => self.in_table_text(tok)?,
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
                    local_name!("base")
                    | local_name!("basefont")
                    | local_name!("bgsound")
                    | local_name!("link")
                    | local_name!("meta")
                    | local_name!("noframes")
                    | local_name!("script")
                    | local_name!("style")
                    | local_name!("title") => {
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

    fn in_body(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Chars(text) => {
                self.reconstruct()?;
                self.append_text(text);
                DONE
            }
            Tok::Comment => self.comment_to(self.current()),
            Tok::Start(tag) => self.start_in_body(tag),
            Tok::End(name) => self.end_in_body(name),
            Tok::Eof => DONE,
        }
    }

    fn start_in_body(&mut self, tag: Tag) -> Step<Did> {
        match tag.name {
            local_name!("html") => {
                let html = self.open.first().map_or(NIL, |&(id, _)| id);
                self.add_attrs_if_missing(html, tag.attrs);
                DONE
            }
            local_name!("base")
            | local_name!("basefont")
            | local_name!("bgsound")
            | local_name!("link")
            | local_name!("meta")
            | local_name!("noframes")
            | local_name!("script")
            | local_name!("style")
            | local_name!("title") => self.in_head(Tok::Start(tag)),
            local_name!("body") => {
                if self.open.len() != 1
                    && let Some(&(body, local_name!("body"))) = self.open.get(1)
                {
                    self.add_attrs_if_missing(body, tag.attrs);
                }
                DONE
            }
            local_name!("address")
            | local_name!("article")
            | local_name!("aside")
            | local_name!("blockquote")
            | local_name!("center")
            | local_name!("details")
            | local_name!("dialog")
            | local_name!("dir")
            | local_name!("div")
            | local_name!("dl")
            | local_name!("fieldset")
            | local_name!("figcaption")
            | local_name!("figure")
            | local_name!("footer")
            | local_name!("header")
            | local_name!("hgroup")
            | local_name!("main")
            | local_name!("nav")
            | local_name!("ol")
            | local_name!("p")
            | local_name!("search")
            | local_name!("section")
            | local_name!("summary")
            | local_name!("ul")
            | local_name!("menu") => {
                self.close_p_in_button_scope();
                self.insert(tag.name, tag.attrs, true);
                DONE
            }
            local_name!("h1")
            | local_name!("h2")
            | local_name!("h3")
            | local_name!("h4")
            | local_name!("h5")
            | local_name!("h6") => {
                self.close_p_in_button_scope();
                if self.current_is_heading() {
                    self.open.pop();
                }
                self.insert(tag.name, tag.attrs, true);
                DONE
            }
            local_name!("pre") | local_name!("listing") => {
                self.close_p_in_button_scope();
                self.insert(tag.name, tag.attrs, true);
                self.ignore_lf = true;
                DONE
            }
            local_name!("form") => {
                if self.form.is_none() {
                    self.close_p_in_button_scope();
                    self.form = Some(self.insert(tag.name, tag.attrs, true));
                }
                DONE
            }
            local_name!("li") | local_name!("dd") | local_name!("dt") => {
                let list = tag.name == local_name!("li");
                let mut to_close = None;
                for (_, name) in self.open.iter().rev() {
                    let closes = if list {
                        *name == local_name!("li")
                    } else {
                        matches!(*name, local_name!("dd") | local_name!("dt"))
                    };
                    if closes {
                        to_close = Some(name.clone());
                        break;
                    }
                    if is_special(name)
                        && !matches!(
                            *name,
                            local_name!("address") | local_name!("div") | local_name!("p")
                        )
                    {
                        break;
                    }
                }
                if let Some(name) = to_close {
                    self.implied_end_tags(Some(&name));
                    self.pop_until(&name);
                }
                self.close_p_in_button_scope();
                self.insert(tag.name, tag.attrs, true);
                DONE
            }
            local_name!("button") => {
                if self.in_scope(Scope::Default, &local_name!("button")) {
                    self.implied_end_tags(None);
                    self.pop_until(&local_name!("button"));
                }
                self.reconstruct()?;
                self.insert(tag.name, tag.attrs, true);
                DONE
            }
            local_name!("a") => {
                if self.since_marker().any(|(_, n)| *n == local_name!("a")) {
                    return Err(GiveUp);
                }
                self.reconstruct()?;
                self.formatting_element(tag)
            }
            local_name!("b")
            | local_name!("big")
            | local_name!("code")
            | local_name!("em")
            | local_name!("font")
            | local_name!("i")
            | local_name!("s")
            | local_name!("small")
            | local_name!("strike")
            | local_name!("strong")
            | local_name!("tt")
            | local_name!("u") => {
                self.reconstruct()?;
                self.formatting_element(tag)
            }
            local_name!("area")
            | local_name!("br")
            | local_name!("embed")
            | local_name!("img")
            | local_name!("keygen")
            | local_name!("wbr")
            | local_name!("input") => {
                self.reconstruct()?;
                self.insert(tag.name, tag.attrs, false);
                DONE
            }
            local_name!("image") => {
                self.reconstruct()?;
                self.insert(local_name!("img"), tag.attrs, false);
                DONE
            }
            local_name!("param") | local_name!("source") | local_name!("track") => {
                self.insert(tag.name, tag.attrs, false);
                DONE
            }
            local_name!("hr") => {
                self.close_p_in_button_scope();
                self.insert(tag.name, tag.attrs, false);
                DONE
            }
            local_name!("table") => {
                if self.in_scope(Scope::Button, &local_name!("p")) {
                    match self.quirks {
                        Quirks::No => self.close_p(),
                        Quirks::Yes => {}
                        Quirks::Unknown => return Err(GiveUp),
                    }
                }
                self.insert(tag.name, tag.attrs, true);
                self.mode = Mode::InTable;
                DONE
            }
            local_name!("textarea") => {
                self.ignore_lf = true;
                self.raw(tag, RawKind::Rcdata)
            }
            local_name!("xmp") => {
                self.close_p_in_button_scope();
                self.reconstruct()?;
                self.raw(tag, RawKind::Rawtext)
            }
            local_name!("iframe") | local_name!("noembed") | local_name!("noscript") => {
                self.raw(tag, RawKind::Rawtext)
            }
            local_name!("caption")
            | local_name!("col")
            | local_name!("colgroup")
            | local_name!("frame")
            | local_name!("head")
            | local_name!("tbody")
            | local_name!("td")
            | local_name!("tfoot")
            | local_name!("th")
            | local_name!("thead")
            | local_name!("tr") => DONE,
            local_name!("template")
            | local_name!("frameset")
            | local_name!("plaintext")
            | local_name!("nobr")
            | local_name!("applet")
            | local_name!("marquee")
            | local_name!("object")
            | local_name!("select")
            | local_name!("option")
            | local_name!("optgroup")
            | local_name!("rb")
            | local_name!("rtc")
            | local_name!("rp")
            | local_name!("rt")
            | local_name!("math") => Err(GiveUp),
            local_name!("svg") => {
                self.reconstruct()?;
                let mut tag = tag;
                adjust_svg_attributes(&mut tag.attrs);
                self.insert_svg(tag)
            }
            _ => {
                self.reconstruct()?;
                self.insert(tag.name, tag.attrs, true);
                DONE
            }
        }
    }

    fn end_in_body(&mut self, name: LocalName) -> Step<Did> {
        match name {
            local_name!("template") => DONE,
            local_name!("body") => {
                if self.in_scope(Scope::Default, &local_name!("body")) {
                    self.mode = Mode::AfterBody;
                }
                DONE
            }
            local_name!("html") => {
                if self.in_scope(Scope::Default, &local_name!("body")) {
                    return Ok(Did::Reprocess(Mode::AfterBody, Tok::End(name)));
                }
                DONE
            }
            local_name!("address")
            | local_name!("article")
            | local_name!("aside")
            | local_name!("blockquote")
            | local_name!("button")
            | local_name!("center")
            | local_name!("details")
            | local_name!("dialog")
            | local_name!("dir")
            | local_name!("div")
            | local_name!("dl")
            | local_name!("fieldset")
            | local_name!("figcaption")
            | local_name!("figure")
            | local_name!("footer")
            | local_name!("header")
            | local_name!("hgroup")
            | local_name!("listing")
            | local_name!("main")
            | local_name!("menu")
            | local_name!("nav")
            | local_name!("ol")
            | local_name!("pre")
            | local_name!("search")
            | local_name!("section")
            | local_name!("select")
            | local_name!("summary")
            | local_name!("ul") => {
                if self.in_scope(Scope::Default, &name) {
                    self.implied_end_tags(None);
                    self.pop_until(&name);
                }
                DONE
            }
            local_name!("form") => {
                let Some(form) = self.form.take() else {
                    return DONE;
                };
                if !self.node_in_scope(form) {
                    return DONE;
                }
                self.implied_end_tags(None);
                if let Some(at) = self.open.iter().rposition(|&(id, _)| id == form) {
                    self.open.remove(at);
                }
                DONE
            }
            local_name!("p") => {
                if !self.in_scope(Scope::Button, &local_name!("p")) {
                    self.insert(local_name!("p"), Vec::new(), true);
                }
                self.close_p();
                DONE
            }
            local_name!("li") | local_name!("dd") | local_name!("dt") => {
                let scope = if name == local_name!("li") {
                    Scope::ListItem
                } else {
                    Scope::Default
                };
                if self.in_scope(scope, &name) {
                    self.implied_end_tags(Some(&name));
                    self.pop_until(&name);
                }
                DONE
            }
            local_name!("h1")
            | local_name!("h2")
            | local_name!("h3")
            | local_name!("h4")
            | local_name!("h5")
            | local_name!("h6") => {
                let mut in_scope = false;
                for (_, n) in self.open.iter().rev() {
                    if is_heading(n) {
                        in_scope = true;
                        break;
                    }
                    if bounds(Scope::Default, n) {
                        break;
                    }
                }
                if in_scope {
                    self.implied_end_tags(None);
                    while let Some((_, n)) = self.open.pop() {
                        if is_heading(&n) {
                            break;
                        }
                    }
                }
                DONE
            }
            local_name!("a")
            | local_name!("b")
            | local_name!("big")
            | local_name!("code")
            | local_name!("em")
            | local_name!("font")
            | local_name!("i")
            | local_name!("nobr")
            | local_name!("s")
            | local_name!("small")
            | local_name!("strike")
            | local_name!("strong")
            | local_name!("tt")
            | local_name!("u") => {
                self.adoption_agency(name)?;
                DONE
            }
            local_name!("applet") | local_name!("marquee") | local_name!("object") => {
                if self.in_scope(Scope::Default, &name) {
                    return Err(GiveUp);
                }
                DONE
            }
            local_name!("br") | local_name!("option") => Err(GiveUp),
            _ => {
                self.any_other_end_tag(&name);
                DONE
            }
        }
    }

    /// html5ever's `process_end_tag_in_body`.
    fn any_other_end_tag(&mut self, name: &LocalName) {
        let mut matched = None;
        for (i, (_, n)) in self.open.iter().enumerate().rev() {
            if n == name {
                matched = Some(i);
                break;
            }
            if is_special(n) {
                return;
            }
        }
        let Some(at) = matched else { return };
        self.implied_end_tags(Some(name));
        self.open.truncate(at);
    }

    /// The adoption agency algorithm where no furthest block is found (a
    /// formatting element closed with only phrasing elements above it); a
    /// furthest block is given up on.
    fn adoption_agency(&mut self, subject: LocalName) -> Step<()> {
        if let Some(&(current, ref name)) = self.open.last()
            && *name == subject
            && !self.formatting.iter().any(|&(id, _)| id == current)
        {
            self.open.pop();
            return Ok(());
        }
        let marker = self
            .formatting
            .iter()
            .rposition(|&(id, _)| id == MARKER)
            .map_or(0, |m| m + 1);
        let found = self.formatting[marker..].iter().rposition(|(_, n)| *n == subject);
        let Some(entry) = found.map(|i| marker + i) else {
            self.any_other_end_tag(&subject);
            return Ok(());
        };
        let element = self.formatting[entry].0;
        let Some(at) = self.open.iter().rposition(|&(id, _)| id == element) else {
            self.formatting.remove(entry);
            return Ok(());
        };
        if !self.node_in_scope(element) {
            return Ok(());
        }
        if self.open[at..].iter().any(|(_, n)| is_special(n)) {
            return Err(GiveUp);
        }
        self.open.truncate(at);
        self.formatting.remove(entry);
        Ok(())
    }

    /// A formatting element inserted and added to the list. Noah's Ark
    /// (at most three equal entries) is given up on.
    fn formatting_element(&mut self, tag: Tag) -> Step<Did> {
        if self.since_marker().filter(|(_, n)| *n == tag.name).count() >= 3 {
            return Err(GiveUp);
        }
        let id = self.insert(tag.name.clone(), tag.attrs, true);
        self.formatting.push((id, tag.name));
        DONE
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
            let attrs = match self.dom.node(old) {
                Some(Node {
                    data: NodeData::Element(e),
                    ..
                }) => e.attrs.clone(),
                _ => return Err(GiveUp),
            };
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

    fn clear_formatting_to_marker(&mut self) {
        while let Some((id, _)) = self.formatting.pop() {
            if id == MARKER {
                break;
            }
        }
    }

    /// Pops elements until the current node is one of `stop`'s.
    fn pop_until_current(&mut self, stop: fn(&LocalName) -> bool) {
        while let Some((_, n)) = self.open.last() {
            if stop(n) {
                break;
            }
            self.open.pop();
        }
    }

    /// html5ever's `reset_insertion_mode` (no fragment context; templates,
    /// selects and framesets never open here).
    fn reset_mode(&self) -> Step<Mode> {
        for (i, (_, n)) in self.open.iter().enumerate().rev() {
            let last = i == 0;
            match *n {
                local_name!("td") | local_name!("th") if !last => return Ok(Mode::InCell),
                local_name!("tr") => return Ok(Mode::InRow),
                local_name!("tbody") | local_name!("thead") | local_name!("tfoot") => {
                    return Ok(Mode::InTableBody);
                }
                local_name!("caption") => return Ok(Mode::InCaption),
                local_name!("colgroup") => return Ok(Mode::InColumnGroup),
                local_name!("table") => return Ok(Mode::InTable),
                local_name!("head") if !last => return Ok(Mode::InHead),
                local_name!("body") => return Ok(Mode::InBody),
                local_name!("select") | local_name!("template") | local_name!("frameset") => {
                    return Err(GiveUp);
                }
                local_name!("html") => {
                    return Ok(if self.head.is_none() {
                        Mode::BeforeHead
                    } else {
                        Mode::AfterHead
                    });
                }
                _ => {}
            }
        }
        Ok(Mode::InBody)
    }

    fn in_table(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Chars(text) => {
                let outer = self.open.last().is_some_and(|(_, n)| {
                    matches!(
                        *n,
                        local_name!("table")
                            | local_name!("tbody")
                            | local_name!("tfoot")
                            | local_name!("thead")
                            | local_name!("tr")
                    )
                });
                if !outer {
                    // Foster parenting.
                    return Err(GiveUp);
                }
                self.table_orig = self.mode;
                Ok(Did::Reprocess(Mode::InTableText, Tok::Chars(text)))
            }
            Tok::Comment => self.comment_to(self.current()),
            Tok::Start(tag) => match tag.name {
                local_name!("caption") => {
                    self.pop_until_current(table_context);
                    self.formatting.push((MARKER, local_name!("")));
                    self.insert(tag.name, tag.attrs, true);
                    self.mode = Mode::InCaption;
                    DONE
                }
                local_name!("colgroup") => {
                    self.pop_until_current(table_context);
                    self.insert(tag.name, tag.attrs, true);
                    self.mode = Mode::InColumnGroup;
                    DONE
                }
                local_name!("col") => {
                    self.pop_until_current(table_context);
                    self.insert(local_name!("colgroup"), Vec::new(), true);
                    Ok(Did::Reprocess(Mode::InColumnGroup, Tok::Start(tag)))
                }
                local_name!("tbody") | local_name!("tfoot") | local_name!("thead") => {
                    self.pop_until_current(table_context);
                    self.insert(tag.name, tag.attrs, true);
                    self.mode = Mode::InTableBody;
                    DONE
                }
                local_name!("td") | local_name!("th") | local_name!("tr") => {
                    self.pop_until_current(table_context);
                    self.insert(local_name!("tbody"), Vec::new(), true);
                    Ok(Did::Reprocess(Mode::InTableBody, Tok::Start(tag)))
                }
                local_name!("style") | local_name!("script") => self.in_head(Tok::Start(tag)),
                local_name!("input")
                    if attr(&tag.attrs, local_name!("type"))
                        .is_some_and(|t| t.eq_ignore_ascii_case("hidden")) =>
                {
                    self.insert(tag.name, tag.attrs, false);
                    DONE
                }
                local_name!("form") => {
                    if self.form.is_none() {
                        self.form = Some(self.insert(tag.name, tag.attrs, false));
                    }
                    DONE
                }
                // A table in a table, templates, and foster parenting.
                _ => Err(GiveUp),
            },
            Tok::End(name) => match name {
                local_name!("table") => {
                    if self.in_scope(Scope::Table, &name) {
                        self.pop_until(&name);
                        self.mode = self.reset_mode()?;
                    }
                    DONE
                }
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("tbody")
                | local_name!("td")
                | local_name!("tfoot")
                | local_name!("th")
                | local_name!("thead")
                | local_name!("tr") => DONE,
                _ => Err(GiveUp),
            },
            Tok::Eof => self.in_body(Tok::Eof),
        }
    }

    fn in_table_text(&mut self, tok: Tok) -> Step<Did> {
        if let Tok::Chars(text) = tok {
            self.table_text.push(text);
            return DONE;
        }
        let pending = std::mem::take(&mut self.table_text);
        if pending.iter().any(|t| t.bytes().any(|c| !is_ws(c))) {
            // Foster parenting.
            return Err(GiveUp);
        }
        for text in pending {
            self.append_text(text);
        }
        Ok(Did::Reprocess(self.table_orig, tok))
    }

    fn in_caption(&mut self, tok: Tok) -> Step<Did> {
        let closes = match &tok {
            Tok::Start(tag) => matches!(
                tag.name,
                local_name!("caption")
                    | local_name!("col")
                    | local_name!("colgroup")
                    | local_name!("tbody")
                    | local_name!("td")
                    | local_name!("tfoot")
                    | local_name!("th")
                    | local_name!("thead")
                    | local_name!("tr")
            ),
            Tok::End(name) => matches!(*name, local_name!("table") | local_name!("caption")),
            _ => false,
        };
        if closes {
            if !self.in_scope(Scope::Table, &local_name!("caption")) {
                return DONE;
            }
            self.implied_end_tags(None);
            self.pop_until(&local_name!("caption"));
            self.clear_formatting_to_marker();
            if let Tok::End(local_name!("caption")) = tok {
                self.mode = Mode::InTable;
                return DONE;
            }
            return Ok(Did::Reprocess(Mode::InTable, tok));
        }
        match tok {
            Tok::End(
                local_name!("body")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("tbody")
                | local_name!("td")
                | local_name!("tfoot")
                | local_name!("th")
                | local_name!("thead")
                | local_name!("tr"),
            ) => DONE,
            tok => self.in_body(tok),
        }
    }

    fn in_column_group(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Comment => self.comment_to(self.current()),
            Tok::Start(tag) if tag.name == local_name!("html") => self.in_body(Tok::Start(tag)),
            Tok::Start(tag) if tag.name == local_name!("col") => {
                self.insert(tag.name, tag.attrs, false);
                DONE
            }
            Tok::Start(tag) if tag.name == local_name!("template") => Err(GiveUp),
            Tok::End(local_name!("colgroup")) => {
                if self
                    .open
                    .last()
                    .is_some_and(|(_, n)| *n == local_name!("colgroup"))
                {
                    self.open.pop();
                    self.mode = Mode::InTable;
                }
                DONE
            }
            Tok::End(local_name!("col")) => DONE,
            Tok::End(local_name!("template")) => Err(GiveUp),
            Tok::Eof => self.in_body(Tok::Eof),
            tok => {
                if self
                    .open
                    .last()
                    .is_some_and(|(_, n)| *n == local_name!("colgroup"))
                {
                    self.open.pop();
                    return Ok(Did::Reprocess(Mode::InTable, tok));
                }
                DONE
            }
        }
    }

    fn in_table_body(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Start(tag) if tag.name == local_name!("tr") => {
                self.pop_until_current(table_body_context);
                self.insert(tag.name, tag.attrs, true);
                self.mode = Mode::InRow;
                DONE
            }
            Tok::Start(tag) if matches!(tag.name, local_name!("th") | local_name!("td")) => {
                self.pop_until_current(table_body_context);
                self.insert(local_name!("tr"), Vec::new(), true);
                Ok(Did::Reprocess(Mode::InRow, Tok::Start(tag)))
            }
            Tok::End(name @ (local_name!("tbody") | local_name!("tfoot") | local_name!("thead"))) => {
                if self.in_scope(Scope::Table, &name) {
                    self.pop_until_current(table_body_context);
                    self.open.pop();
                    self.mode = Mode::InTable;
                }
                DONE
            }
            tok @ (Tok::Start(_) | Tok::End(local_name!("table"))) if table_section_ends(&tok) => {
                let outer = self.open.iter().rev().find_map(|(_, n)| {
                    if matches!(
                        *n,
                        local_name!("table") | local_name!("tbody") | local_name!("tfoot")
                    ) {
                        Some(true)
                    } else if bounds(Scope::Table, n) {
                        Some(false)
                    } else {
                        None
                    }
                });
                if outer == Some(true) {
                    self.pop_until_current(table_body_context);
                    self.open.pop();
                    return Ok(Did::Reprocess(Mode::InTable, tok));
                }
                DONE
            }
            Tok::End(
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("td")
                | local_name!("th")
                | local_name!("tr"),
            ) => DONE,
            tok => self.in_table(tok),
        }
    }

    fn in_row(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Start(tag) if matches!(tag.name, local_name!("th") | local_name!("td")) => {
                self.pop_until_current(table_row_context);
                self.insert(tag.name, tag.attrs, true);
                self.mode = Mode::InCell;
                self.formatting.push((MARKER, local_name!("")));
                DONE
            }
            Tok::End(local_name!("tr")) => {
                if self.in_scope(Scope::Table, &local_name!("tr")) {
                    self.pop_until_current(table_row_context);
                    self.open.pop();
                    self.mode = Mode::InTableBody;
                }
                DONE
            }
            tok @ (Tok::Start(_) | Tok::End(local_name!("table")))
                if table_section_ends(&tok)
                    || matches!(&tok, Tok::Start(t) if t.name == local_name!("tr")) =>
            {
                if self.in_scope(Scope::Table, &local_name!("tr")) {
                    self.pop_until_current(table_row_context);
                    self.open.pop();
                    return Ok(Did::Reprocess(Mode::InTableBody, tok));
                }
                DONE
            }
            Tok::End(name @ (local_name!("tbody") | local_name!("tfoot") | local_name!("thead"))) => {
                if !self.in_scope(Scope::Table, &name) {
                    return DONE;
                }
                if self.in_scope(Scope::Table, &local_name!("tr")) {
                    self.pop_until_current(table_row_context);
                    self.open.pop();
                    return Ok(Did::Reprocess(Mode::InTableBody, Tok::End(name)));
                }
                DONE
            }
            Tok::End(
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html")
                | local_name!("td")
                | local_name!("th"),
            ) => DONE,
            tok => self.in_table(tok),
        }
    }

    fn in_cell(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::End(name @ (local_name!("td") | local_name!("th"))) => {
                if self.in_scope(Scope::Table, &name) {
                    self.implied_end_tags(None);
                    self.pop_until(&name);
                    self.clear_formatting_to_marker();
                    self.mode = Mode::InRow;
                }
                DONE
            }
            Tok::Start(tag)
                if matches!(
                    tag.name,
                    local_name!("caption")
                        | local_name!("col")
                        | local_name!("colgroup")
                        | local_name!("tbody")
                        | local_name!("td")
                        | local_name!("tfoot")
                        | local_name!("th")
                        | local_name!("thead")
                        | local_name!("tr")
                ) =>
            {
                let cell = self.open.iter().rev().find_map(|(_, n)| {
                    if matches!(*n, local_name!("td") | local_name!("th")) {
                        Some(true)
                    } else if bounds(Scope::Table, n) {
                        Some(false)
                    } else {
                        None
                    }
                });
                if cell == Some(true) {
                    self.close_cell();
                    return Ok(Did::Reprocess(Mode::InRow, Tok::Start(tag)));
                }
                DONE
            }
            Tok::End(
                local_name!("body")
                | local_name!("caption")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("html"),
            ) => DONE,
            Tok::End(
                name @ (local_name!("table")
                | local_name!("tbody")
                | local_name!("tfoot")
                | local_name!("thead")
                | local_name!("tr")),
            ) => {
                if self.in_scope(Scope::Table, &name) {
                    self.close_cell();
                    return Ok(Did::Reprocess(Mode::InRow, Tok::End(name)));
                }
                DONE
            }
            tok => self.in_body(tok),
        }
    }

    /// The rules for tokens in foreign content, for SVG (the current node
    /// is an SVG element). Breaking out of it and HTML integration points
    /// are given up on.
    fn in_svg(&mut self, tok: Tok) -> Step<Did> {
        match tok {
            Tok::Chars(text) => {
                self.append_text(text);
                DONE
            }
            Tok::Comment => self.comment_to(self.current()),
            Tok::Start(mut tag) => {
                if breaks_out(&tag) {
                    return Err(GiveUp);
                }
                tag.name = svg_tag_name(tag.name);
                adjust_svg_attributes(&mut tag.attrs);
                self.insert_svg(tag)
            }
            Tok::End(name) => {
                if matches!(name, local_name!("br") | local_name!("p")) {
                    return Err(GiveUp);
                }
                let mut first = true;
                let mut at = self.open.len().saturating_sub(1);
                loop {
                    if at == 0 {
                        return DONE;
                    }
                    let (id, n) = &self.open[at];
                    if *n != SVG {
                        if !first {
                            return self.by_mode(Tok::End(name));
                        }
                    } else if let Some(Node {
                        data: NodeData::Element(e),
                        ..
                    }) = self.dom.node(*id)
                        && e.name.local.eq_ignore_ascii_case(&name)
                    {
                        self.open.truncate(at);
                        return DONE;
                    }
                    first = false;
                    at -= 1;
                }
            }
            Tok::Eof => Err(GiveUp),
        }
    }

    /// A token processed by the rules of the current insertion mode (an
    /// end tag that left foreign content).
    fn by_mode(&mut self, tok: Tok) -> Step<Did> {
        match self.mode {
            Mode::InBody => self.in_body(tok),
            Mode::InTable => self.in_table(tok),
            Mode::InCaption => self.in_caption(tok),
            Mode::InTableBody => self.in_table_body(tok),
            Mode::InRow => self.in_row(tok),
            Mode::InCell => self.in_cell(tok),
            _ => Err(GiveUp),
        }
    }

    /// An SVG element for `tag` (names and attributes adjusted), pushed
    /// unless the tag closes itself. Its HTML integration points
    /// (`foreignObject`, `desc`, `title`) are given up on.
    fn insert_svg(&mut self, tag: Tag) -> Step<Did> {
        if matches!(
            tag.name,
            local_name!("foreignObject") | local_name!("desc") | local_name!("title")
        ) {
            return Err(GiveUp);
        }
        let parent = self.current();
        let id = self.dom.add(NodeData::Element(Element {
            name: QualName::new(None, ns!(svg), tag.name),
            attrs: tag.attrs,
        }));
        self.dom.append_child(parent, id);
        if !tag.self_closing {
            self.open.push((id, SVG));
        }
        DONE
    }

    fn close_cell(&mut self) {
        self.implied_end_tags(None);
        while let Some((_, n)) = self.open.pop() {
            if matches!(n, local_name!("td") | local_name!("th")) {
                break;
            }
        }
        self.clear_formatting_to_marker();
    }

    fn current(&self) -> NodeId {
        self.open.last().map_or(ROOT, |&(id, _)| id)
    }

    fn current_is_heading(&self) -> bool {
        self.open.last().is_some_and(|(_, n)| is_heading(n))
    }

    fn in_scope(&self, scope: Scope, name: &LocalName) -> bool {
        for (_, n) in self.open.iter().rev() {
            if n == name {
                return true;
            }
            if bounds(scope, n) {
                return false;
            }
        }
        false
    }

    fn node_in_scope(&self, node: NodeId) -> bool {
        for (id, n) in self.open.iter().rev() {
            if *id == node {
                return true;
            }
            if bounds(Scope::Default, n) {
                return false;
            }
        }
        false
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
        while let Some((_, n)) = self.open.pop() {
            if n == *name {
                break;
            }
        }
    }

    fn close_p(&mut self) {
        self.implied_end_tags(Some(&local_name!("p")));
        self.pop_until(&local_name!("p"));
    }

    fn close_p_in_button_scope(&mut self) {
        if self.in_scope(Scope::Button, &local_name!("p")) {
            self.close_p();
        }
    }

    fn create_root(&mut self, attrs: Vec<Attribute>) {
        let id = self.element(local_name!("html"), attrs);
        self.dom.append_child(ROOT, id);
        self.open.push((id, local_name!("html")));
    }

    fn element(&mut self, name: LocalName, attrs: Vec<Attribute>) -> NodeId {
        self.dom.add(NodeData::Element(Element {
            name: QualName::new(None, ns!(html), name),
            attrs,
        }))
    }

    /// An element for a tag, appended to the current node, and pushed
    /// onto the stack when `push`.
    fn insert(&mut self, name: LocalName, attrs: Vec<Attribute>, push: bool) -> NodeId {
        let parent = self.current();
        let id = self.element(name.clone(), attrs);
        self.dom.append_child(parent, id);
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
        if let Some(Node {
            data: NodeData::Element(e),
            ..
        }) = self.dom.node_mut(target)
        {
            for a in attrs {
                if !e.attrs.iter().any(|b| b.name == a.name) {
                    e.attrs.push(a);
                }
            }
        }
    }
}
