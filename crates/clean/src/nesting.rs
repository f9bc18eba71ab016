//! A cap on element nesting, applied before the HTML parser runs.
//!
//! The HTML tree builder checks "is there a `<p>` in button scope?" at every
//! block start tag by walking the stack of open elements, so its cost grows
//! with the square of the nesting depth: 60,000 nested `<div>`s (a 300 KB
//! page) took 26 s of CPU in a release build. Browsers cap the depth too
//! (Blink at 512). Here start tags that would open more than [`MAX_DEPTH`]
//! elements are removed before parsing, with their end tags, so the
//! elements beyond the cap become siblings and their text is kept. Our own
//! tree builder counts its open elements and stops at the cap, so a page
//! is flattened only when it reaches it there, or when it is left to
//! html5ever's builder (`Dom::parse`).
//!
//! The count is an estimate made in one linear scan, erring on the side of
//! fewer open elements: void elements (`<br>`), elements whose end tag is
//! optional (`<p>`, `<li>`, `<td>`...) and self-closed tags are not counted,
//! and the contents of `<script>`, `<style>`, `<textarea>`, `<title>` and
//! comments are skipped. Real pages stay far below the cap.

/// Open elements at most; deeper markup is cut.
pub const MAX_DEPTH: usize = 512;

/// Elements that never have content ([`Listed::of`] matches these lists;
/// its test holds it to them).
#[cfg(test)]
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
    "wbr", "keygen", "frame", "basefont", "bgsound", "image", "isindex",
];

/// Elements whose end tag may be omitted: the parser closes them itself, so
/// unclosed ones do not nest.
#[cfg(test)]
const OPTIONAL_END: &[&str] = &[
    "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th", "thead", "tbody", "tfoot", "rb", "rt",
    "rtc", "rp", "colgroup", "caption", "html", "head", "body",
];

/// Elements whose content is raw text, not markup.
#[cfg(test)]
const RAW_TEXT: &[&str] = &[
    "script",
    "style",
    "textarea",
    "title",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "plaintext",
];

/// Where `needle` next occurs in `hay` from `from` on, ASCII case
/// ignored. Every needle here starts with a byte that has no case (`<`,
/// `-`, `>`), so candidates are found by that byte alone (a vectorized
/// scan) and only they are compared.
fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut at = from;
    loop {
        let p = at + memchr::memchr(first, hay.get(at..)?)?;
        let tail = hay.get(p + 1..p + needle.len())?;
        if tail.eq_ignore_ascii_case(rest) {
            return Some(p);
        }
        at = p + 1;
    }
}

/// Which of the lists above a (lower-case) name is in, by one `match`
/// rather than a search of each list at every tag (a tenth of the scan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listed {
    Void,
    OptionalEnd,
    RawText,
    Other,
}

impl Listed {
    fn of(name: &[u8]) -> Self {
        match name {
            b"area" | b"base" | b"br" | b"col" | b"embed" | b"hr" | b"img" | b"input" | b"link" | b"meta"
            | b"param" | b"source" | b"track" | b"wbr" | b"keygen" | b"frame" | b"basefont" | b"bgsound"
            | b"image" | b"isindex" => Self::Void,
            b"p" | b"li" | b"dt" | b"dd" | b"option" | b"optgroup" | b"tr" | b"td" | b"th" | b"thead"
            | b"tbody" | b"tfoot" | b"rb" | b"rt" | b"rtc" | b"rp" | b"colgroup" | b"caption" | b"html"
            | b"head" | b"body" => Self::OptionalEnd,
            b"script" | b"style" | b"textarea" | b"title" | b"xmp" | b"iframe" | b"noembed" | b"noframes"
            | b"plaintext" => Self::RawText,
            _ => Self::Other,
        }
    }
}

/// A bound on the names in the lists above (the longest, `plaintext`, has
/// 9 bytes): a longer name is in none of them.
const LISTED_NAME_MAX: usize = 16;

/// `html` with the start tags that would open more than `max_depth`
/// elements removed, and as many end tags of the same names; `None` when it
/// stays within the cap (the common case: nothing is copied).
pub fn flatten(html: &str, max_depth: usize) -> Option<String> {
    let b = html.as_bytes();
    // Every element opened takes a `<`: a page with no more of them than
    // the cap cannot exceed it (most pages), and counting one byte is a
    // vectorized pass, far cheaper than the scan below (and stops at the
    // cap).
    memchr::memchr_iter(b'<', b).nth(max_depth)?;
    let mut depth = 0usize;
    // Start tags removed and not yet matched by a removed end tag, by name.
    let mut excess: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    // Byte ranges to leave out, in order.
    let mut removed: Vec<(usize, usize)> = Vec::new();
    let mut i = 0usize;
    while let Some(off) = b.get(i..).and_then(|rest| memchr::memchr(b'<', rest)) {
        let lt = i + off;
        let next = b.get(lt + 1).copied().unwrap_or(0);
        if next == b'!' {
            i = if b[lt..].starts_with(b"<!--") {
                find(b, lt + 4, b"-->").map_or(b.len(), |p| p + 3)
            } else {
                find(b, lt, b">").map_or(b.len(), |p| p + 1)
            };
            continue;
        }
        let closing = next == b'/';
        let name_start = lt + 1 + usize::from(closing);
        let name_len = b[name_start.min(b.len())..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-' || **c == b':')
            .count();
        if name_len == 0 || !b[name_start].is_ascii_alphabetic() {
            i = lt + 1;
            continue;
        }
        // The name, lower-cased on the stack: most tags need no allocation.
        let raw_name = &b[name_start..name_start + name_len];
        let mut lower = [0u8; LISTED_NAME_MAX];
        let listed = if name_len <= LISTED_NAME_MAX {
            lower[..name_len].copy_from_slice(raw_name);
            lower[..name_len].make_ascii_lowercase();
            Listed::of(&lower[..name_len])
        } else {
            Listed::Other
        };
        let owned_name = || html[name_start..name_start + name_len].to_ascii_lowercase();
        let gt = find(b, name_start + name_len, b">").unwrap_or(b.len());
        let self_closed = gt > 0 && b.get(gt - 1) == Some(&b'/');
        let tag_end = (gt + 1).min(b.len());
        i = tag_end;
        let counted = listed == Listed::Other || listed == Listed::RawText;
        if closing {
            if counted {
                let matched = if excess.is_empty() {
                    None
                } else {
                    excess.get_mut(&owned_name())
                };
                match matched {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        removed.push((lt, tag_end));
                    }
                    _ => depth = depth.saturating_sub(1),
                }
            }
            continue;
        }
        if listed == Listed::RawText {
            let mut end = [0u8; LISTED_NAME_MAX + 2];
            end[..2].copy_from_slice(b"</");
            end[2..2 + name_len].copy_from_slice(&lower[..name_len]);
            i = find(b, i, &end[..2 + name_len]).unwrap_or(b.len());
            continue;
        }
        if counted && !self_closed {
            if depth >= max_depth {
                *excess.entry(owned_name()).or_insert(0) += 1;
                removed.push((lt, tag_end));
            } else {
                depth += 1;
            }
        }
    }
    if removed.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(html.len());
    let mut at = 0;
    for (a, z) in removed {
        out.push_str(&html[at..a]);
        at = z;
    }
    out.push_str(&html[at.min(html.len())..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn deep_nesting_is_flattened_at_the_cap_and_keeps_its_text() {
        let html = format!(
            "<html><body>{}deep{}",
            "<div>".repeat(1000),
            "</div>".repeat(1000)
        );
        let flat = flatten(&html, 512).unwrap();
        assert_eq!(
            flat,
            format!("<html><body>{}deep{}", "<div>".repeat(512), "</div>".repeat(512))
        );
        assert_eq!(flatten(&flat, 512), None, "flattened markup stays within the cap");
        assert_eq!(flatten(&"<div>".repeat(512), 512), None);
        // Unclosed: the extra start tags go, the text stays.
        let open = format!("{}x", "<span>".repeat(600));
        assert_eq!(flatten(&open, 512).unwrap(), format!("{}x", "<span>".repeat(512)));
    }

    #[test]
    fn closed_void_optional_and_raw_elements_do_not_count() {
        let flat = "<div><span>x</span></div>".repeat(5000);
        assert_eq!(flatten(&flat, 8), None);
        let unclosed = "<p>para<li>item<br><img src=x><td>cell<hr/><x-a/>".repeat(5000);
        assert_eq!(flatten(&unclosed, 8), None);
        let raw = format!(
            "<script>{}</script><style>{}</style><!-- {} -->",
            "<div>".repeat(100),
            "<b>".repeat(100),
            "<i>".repeat(100)
        );
        assert_eq!(flatten(&raw, 8), None);
        assert_eq!(flatten("a < b and <3 <<>>", 0), None);
    }

    #[test]
    fn the_match_lists_what_the_lists_hold() {
        for (list, listed) in [
            (VOID, Listed::Void),
            (OPTIONAL_END, Listed::OptionalEnd),
            (RAW_TEXT, Listed::RawText),
        ] {
            for name in list {
                assert_eq!(Listed::of(name.as_bytes()), listed, "{name}");
            }
        }
        for name in ["div", "span", "a", "pre", "section", "bodyx", "", "scrip"] {
            assert_eq!(Listed::of(name.as_bytes()), Listed::Other, "{name}");
        }
    }

    #[test]
    fn unterminated_markup_ends_the_scan() {
        assert_eq!(flatten("<div", 0).unwrap(), "");
        assert_eq!(flatten("<!-- never closed <div><div>", 0), None);
        assert_eq!(flatten("<script><div><div>", 0), None);
        assert_eq!(
            flatten("<div class='a>b'><div>t", 1).unwrap(),
            "<div class='a>b'>t"
        );
    }

    /// The scan as it was before the `<` count and the stack-allocated
    /// names: the reference the faster one must equal.
    fn flatten_reference(html: &str, max_depth: usize) -> Option<String> {
        fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
            hay.get(from..)?
                .windows(needle.len())
                .position(|w| w.eq_ignore_ascii_case(needle))
                .map(|p| p + from)
        }
        let b = html.as_bytes();
        let mut depth = 0usize;
        let mut excess: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        let mut removed: Vec<(usize, usize)> = Vec::new();
        let mut i = 0usize;
        while let Some(off) = b.get(i..).and_then(|rest| rest.iter().position(|&c| c == b'<')) {
            let lt = i + off;
            let next = b.get(lt + 1).copied().unwrap_or(0);
            if next == b'!' {
                i = if b[lt..].starts_with(b"<!--") {
                    find(b, lt + 4, b"-->").map_or(b.len(), |p| p + 3)
                } else {
                    find(b, lt, b">").map_or(b.len(), |p| p + 1)
                };
                continue;
            }
            let closing = next == b'/';
            let name_start = lt + 1 + usize::from(closing);
            let name_len = b[name_start.min(b.len())..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-' || **c == b':')
                .count();
            if name_len == 0 || !b[name_start].is_ascii_alphabetic() {
                i = lt + 1;
                continue;
            }
            let name = html[name_start..name_start + name_len].to_ascii_lowercase();
            let gt = find(b, name_start + name_len, b">").unwrap_or(b.len());
            let self_closed = gt > 0 && b.get(gt - 1) == Some(&b'/');
            let tag_end = (gt + 1).min(b.len());
            i = tag_end;
            let counted = !VOID.contains(&name.as_str()) && !OPTIONAL_END.contains(&name.as_str());
            if closing {
                if counted {
                    match excess.get_mut(&name) {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            removed.push((lt, tag_end));
                        }
                        _ => depth = depth.saturating_sub(1),
                    }
                }
                continue;
            }
            if RAW_TEXT.contains(&name.as_str()) {
                let end = format!("</{name}");
                i = find(b, i, end.as_bytes()).unwrap_or(b.len());
                continue;
            }
            if counted && !self_closed {
                if depth >= max_depth {
                    *excess.entry(name).or_insert(0) += 1;
                    removed.push((lt, tag_end));
                } else {
                    depth += 1;
                }
            }
        }
        if removed.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(html.len());
        let mut at = 0;
        for (a, z) in removed {
            out.push_str(&html[at..a]);
            at = z;
        }
        out.push_str(&html[at.min(html.len())..]);
        Some(out)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]

        /// Markup made of the pieces the scan treats specially, in any
        /// order and case, flattened at small caps.
        #[test]
        fn equals_the_reference_scan(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "<div>", "</div>", "<DIV class='a>b'>", "</Div >", "<span>", "</span>", "<p>", "</p>",
                "<br>", "<img src=x/>", "<x-a/>", "<script>", "</SCRIPT>", "<style>", "</style>",
                "<!--", "-->", "<!doctype html>", "<", ">", "/", "text", "中文", "<3", "<a:b>", "</a:b>",
                "<plaintext>", "<averyveryverylongelementname>", "</averyveryverylongelementname>",
                "<textarea>", "</textarea>",
            ]), 0..60),
            max_depth in 0usize..6,
        ) {
            let html: String = pieces.concat();
            proptest::prop_assert_eq!(flatten(&html, max_depth), flatten_reference(&html, max_depth));
        }
    }
}
