//! A cap on element nesting, applied before the HTML parser runs.
//!
//! The HTML tree builder checks "is there a `<p>` in button scope?" at every
//! block start tag by walking the stack of open elements, so its cost grows
//! with the square of the nesting depth: 60,000 nested `<div>`s (a 300 KB
//! page) took 26 s of CPU in a release build. Browsers cap the depth too
//! (Blink at 512). Here start tags that would open more than [`MAX_DEPTH`]
//! elements are removed before parsing, with their end tags, so the
//! elements beyond the cap become siblings and their text is kept.
//!
//! The count is an estimate made in one linear scan, erring on the side of
//! fewer open elements: void elements (`<br>`), elements whose end tag is
//! optional (`<p>`, `<li>`, `<td>`...) and self-closed tags are not counted,
//! and the contents of `<script>`, `<style>`, `<textarea>`, `<title>` and
//! comments are skipped. Real pages stay far below the cap.

/// Open elements at most; deeper markup is cut.
pub const MAX_DEPTH: usize = 512;

/// Elements that never have content.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
    "wbr", "keygen", "frame", "basefont", "bgsound", "image", "isindex",
];

/// Elements whose end tag may be omitted: the parser closes them itself, so
/// unclosed ones do not nest.
const OPTIONAL_END: &[&str] = &[
    "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th", "thead", "tbody", "tfoot", "rb", "rt",
    "rtc", "rp", "colgroup", "caption", "html", "head", "body",
];

/// Elements whose content is raw text, not markup.
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

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|p| p + from)
}

/// `html` with the start tags that would open more than `max_depth`
/// elements removed, and as many end tags of the same names; `None` when it
/// stays within the cap (the common case: nothing is copied).
pub fn flatten(html: &str, max_depth: usize) -> Option<String> {
    let b = html.as_bytes();
    let mut depth = 0usize;
    // Start tags removed and not yet matched by a removed end tag, by name.
    let mut excess: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    // Byte ranges to leave out, in order.
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
    fn unterminated_markup_ends_the_scan() {
        assert_eq!(flatten("<div", 0).unwrap(), "");
        assert_eq!(flatten("<!-- never closed <div><div>", 0), None);
        assert_eq!(flatten("<script><div><div>", 0), None);
        assert_eq!(
            flatten("<div class='a>b'><div>t", 1).unwrap(),
            "<div class='a>b'>t"
        );
    }
}
