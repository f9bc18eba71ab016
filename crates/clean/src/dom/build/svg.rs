//! SVG as foreign content: its elements go on the stack under a name no
//! HTML rule matches, with their camel-case names and adjusted attributes
//! (html5ever's tables). Breaking out of it, HTML integration points and
//! MathML are given up on.

use html5ever::tokenizer::Tag;
use html5ever::{Attribute, LocalName, QualName, local_name, namespace_prefix, ns};

use super::{DONE, Did, GiveUp, Mode, Node, NodeData, State, Step, Tok};

/// html5ever's `adjust_svg_tag_name`: SVG's camel-case element names.
pub(super) fn svg_tag_name(name: LocalName) -> LocalName {
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
pub(super) fn adjust_svg_attributes(attrs: &mut [Attribute]) {
    for a in attrs {
        if let Some(local) = svg_attribute(&a.name.local) {
            a.name = QualName::new(None, ns!(), local);
        }
        if let Some(name) = foreign_attribute(&a.name.local) {
            a.name = name;
        }
    }
}

/// SVG's camel-case attribute names (`adjust_svg_attributes`).
fn svg_attribute(local: &LocalName) -> Option<LocalName> {
    Some(match *local {
        local_name!("attributename") => local_name!("attributeName"),
        local_name!("attributetype") => local_name!("attributeType"),
        local_name!("basefrequency") => local_name!("baseFrequency"),
        local_name!("baseprofile") => local_name!("baseProfile"),
        local_name!("calcmode") => local_name!("calcMode"),
        local_name!("clippathunits") => local_name!("clipPathUnits"),
        local_name!("diffuseconstant") => local_name!("diffuseConstant"),
        local_name!("edgemode") => local_name!("edgeMode"),
        local_name!("filterunits") => local_name!("filterUnits"),
        local_name!("glyphref") => local_name!("glyphRef"),
        local_name!("gradienttransform") => local_name!("gradientTransform"),
        local_name!("gradientunits") => local_name!("gradientUnits"),
        local_name!("kernelmatrix") => local_name!("kernelMatrix"),
        local_name!("kernelunitlength") => local_name!("kernelUnitLength"),
        local_name!("keypoints") => local_name!("keyPoints"),
        local_name!("keysplines") => local_name!("keySplines"),
        local_name!("keytimes") => local_name!("keyTimes"),
        local_name!("lengthadjust") => local_name!("lengthAdjust"),
        local_name!("limitingconeangle") => local_name!("limitingConeAngle"),
        local_name!("markerheight") => local_name!("markerHeight"),
        local_name!("markerunits") => local_name!("markerUnits"),
        local_name!("markerwidth") => local_name!("markerWidth"),
        local_name!("maskcontentunits") => local_name!("maskContentUnits"),
        local_name!("maskunits") => local_name!("maskUnits"),
        local_name!("numoctaves") => local_name!("numOctaves"),
        local_name!("pathlength") => local_name!("pathLength"),
        local_name!("patterncontentunits") => local_name!("patternContentUnits"),
        local_name!("patterntransform") => local_name!("patternTransform"),
        local_name!("patternunits") => local_name!("patternUnits"),
        local_name!("pointsatx") => local_name!("pointsAtX"),
        local_name!("pointsaty") => local_name!("pointsAtY"),
        local_name!("pointsatz") => local_name!("pointsAtZ"),
        local_name!("preservealpha") => local_name!("preserveAlpha"),
        local_name!("preserveaspectratio") => local_name!("preserveAspectRatio"),
        local_name!("primitiveunits") => local_name!("primitiveUnits"),
        local_name!("refx") => local_name!("refX"),
        local_name!("refy") => local_name!("refY"),
        local_name!("repeatcount") => local_name!("repeatCount"),
        local_name!("repeatdur") => local_name!("repeatDur"),
        local_name!("requiredextensions") => local_name!("requiredExtensions"),
        local_name!("requiredfeatures") => local_name!("requiredFeatures"),
        local_name!("specularconstant") => local_name!("specularConstant"),
        local_name!("specularexponent") => local_name!("specularExponent"),
        local_name!("spreadmethod") => local_name!("spreadMethod"),
        local_name!("startoffset") => local_name!("startOffset"),
        local_name!("stddeviation") => local_name!("stdDeviation"),
        local_name!("stitchtiles") => local_name!("stitchTiles"),
        local_name!("surfacescale") => local_name!("surfaceScale"),
        local_name!("systemlanguage") => local_name!("systemLanguage"),
        local_name!("tablevalues") => local_name!("tableValues"),
        local_name!("targetx") => local_name!("targetX"),
        local_name!("targety") => local_name!("targetY"),
        local_name!("textlength") => local_name!("textLength"),
        local_name!("viewbox") => local_name!("viewBox"),
        local_name!("viewtarget") => local_name!("viewTarget"),
        local_name!("xchannelselector") => local_name!("xChannelSelector"),
        local_name!("ychannelselector") => local_name!("yChannelSelector"),
        local_name!("zoomandpan") => local_name!("zoomAndPan"),
        _ => return None,
    })
}

/// The `xlink:`, `xml:` and `xmlns` attributes' prefixes and namespaces
/// (`adjust_foreign_attributes`).
fn foreign_attribute(local: &LocalName) -> Option<QualName> {
    let (prefix, ns, local) = match *local {
        local_name!("xlink:actuate") => (namespace_prefix!("xlink"), ns!(xlink), local_name!("actuate")),
        local_name!("xlink:arcrole") => (namespace_prefix!("xlink"), ns!(xlink), local_name!("arcrole")),
        local_name!("xlink:href") => (namespace_prefix!("xlink"), ns!(xlink), local_name!("href")),
        local_name!("xlink:role") => (namespace_prefix!("xlink"), ns!(xlink), local_name!("role")),
        local_name!("xlink:show") => (namespace_prefix!("xlink"), ns!(xlink), local_name!("show")),
        local_name!("xlink:title") => (namespace_prefix!("xlink"), ns!(xlink), local_name!("title")),
        local_name!("xlink:type") => (namespace_prefix!("xlink"), ns!(xlink), local_name!("type")),
        local_name!("xml:lang") => (namespace_prefix!("xml"), ns!(xml), local_name!("lang")),
        local_name!("xml:space") => (namespace_prefix!("xml"), ns!(xml), local_name!("space")),
        local_name!("xmlns") => (namespace_prefix!(""), ns!(xmlns), local_name!("xmlns")),
        local_name!("xmlns:xlink") => (namespace_prefix!("xmlns"), ns!(xmlns), local_name!("xlink")),
        _ => return None,
    };
    Some(QualName::new(Some(prefix), ns, local))
}

/// The name an SVG element has on the stack of open elements: none of
/// html5ever's rules for HTML elements matches it by name, as none matches
/// an element of another namespace; its own name is in the tree.
pub(super) const SVG: LocalName = local_name!("");

/// Start tags that break out of foreign content (html5ever's list), and
/// `<font>` with a presentational attribute.
pub(super) fn breaks_out(tag: &Tag) -> bool {
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

impl State {
    /// The rules for tokens in foreign content, for SVG (the current node
    /// is an SVG element). Breaking out of it and HTML integration points
    /// are given up on.
    pub(super) fn in_svg(&mut self, tok: Tok) -> Step<Did> {
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

    /// A token processed by the rules of the current insertion mode, one of
    /// the modes of the body and its tables (an end tag that left foreign
    /// content is processed so too).
    pub(super) fn by_mode(&mut self, tok: Tok) -> Step<Did> {
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
    pub(super) fn insert_svg(&mut self, tag: Tag) -> Step<Did> {
        if matches!(
            tag.name,
            local_name!("foreignObject") | local_name!("desc") | local_name!("title")
        ) {
            return Err(GiveUp);
        }
        let id = self.append_element(QualName::new(None, ns!(svg), tag.name), tag.attrs);
        if !tag.self_closing {
            self.open.push((id, SVG));
        }
        DONE
    }
}
