//! The sets of element names the tree construction rules test (html5ever's
//! `tag_sets`), as `match`es on static atoms.

use html5ever::{LocalName, local_name};

use super::{Scope, Tok};

/// "Special" elements (html5ever's `special_tag`).
pub(super) fn is_special(n: &LocalName) -> bool {
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

// `h1` to `h6`: the walk tests them too, so they live with the tree.
pub(super) use crate::dom::is_heading;

/// html5ever's `cursory_implied_end`.
pub(super) fn is_implied_end(n: &LocalName) -> bool {
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
pub(super) fn table_context(n: &LocalName) -> bool {
    matches!(
        *n,
        local_name!("html") | local_name!("table") | local_name!("template")
    )
}

pub(super) fn table_body_context(n: &LocalName) -> bool {
    matches!(
        *n,
        local_name!("tbody")
            | local_name!("tfoot")
            | local_name!("thead")
            | local_name!("template")
            | local_name!("html")
    )
}

pub(super) fn table_row_context(n: &LocalName) -> bool {
    matches!(
        *n,
        local_name!("tr") | local_name!("template") | local_name!("html")
    )
}

/// The tokens that end a table section or row and go on in the table:
/// `<caption>`, `<col>`, `<colgroup>`, `<tbody>`, `<tfoot>`, `<thead>`
/// and `</table>`.
pub(super) fn table_section_ends(tok: &Tok) -> bool {
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

pub(super) fn bounds(scope: Scope, n: &LocalName) -> bool {
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

/// Start tags "in body" processes by the rules for "in head".
pub(super) fn from_head(n: &LocalName) -> bool {
    matches!(
        *n,
        local_name!("base")
            | local_name!("basefont")
            | local_name!("bgsound")
            | local_name!("link")
            | local_name!("meta")
            | local_name!("noframes")
            | local_name!("script")
            | local_name!("style")
            | local_name!("title")
    )
}

/// Start tags that close an open `<p>` and open a block ("in body").
pub(super) fn opens_block(n: &LocalName) -> bool {
    matches!(
        *n,
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
            | local_name!("menu")
    )
}

/// Formatting elements other than `<a>` and `<nobr>` (their start tags).
pub(super) fn is_formatting(n: &LocalName) -> bool {
    matches!(
        *n,
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
            | local_name!("u")
    )
}

/// Void elements reconstructed before ("in body"): `<area>`, `<br>`, `<embed>`, `<img>`, `<keygen>`, `<wbr>`, `<input>`.
pub(super) fn is_void_in_body(n: &LocalName) -> bool {
    matches!(
        *n,
        local_name!("area")
            | local_name!("br")
            | local_name!("embed")
            | local_name!("img")
            | local_name!("keygen")
            | local_name!("wbr")
            | local_name!("input")
    )
}

/// Start tags "in body" ignores (table parts, `<frame>`, `<head>`).
pub(super) fn is_ignored_in_body(n: &LocalName) -> bool {
    matches!(
        *n,
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
            | local_name!("tr")
    )
}

/// Start tags this builder leaves to html5ever (see the module docs).
pub(super) fn is_given_up_in_body(n: &LocalName) -> bool {
    matches!(
        *n,
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
            | local_name!("math")
    )
}

/// End tags that close a block element in scope ("in body").
pub(super) fn closes_block(n: &LocalName) -> bool {
    matches!(
        *n,
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
            | local_name!("ul")
    )
}

/// End tags of the formatting elements (the adoption agency).
pub(super) fn is_formatting_end(n: &LocalName) -> bool {
    matches!(
        *n,
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
            | local_name!("u")
    )
}

/// A table's parts, whose start tags close a caption or a cell.
pub(super) fn table_part(n: &LocalName) -> bool {
    matches!(
        *n,
        local_name!("caption")
            | local_name!("col")
            | local_name!("colgroup")
            | local_name!("tbody")
            | local_name!("td")
            | local_name!("tfoot")
            | local_name!("th")
            | local_name!("thead")
            | local_name!("tr")
    )
}
