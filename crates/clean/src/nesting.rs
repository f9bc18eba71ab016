//! A cap on element nesting, applied before the HTML parser runs.
//!
//! The HTML tree builder checks "is there a `<p>` in button scope?" at every
//! block start tag by walking the stack of open elements, so its cost grows
//! with the square of the nesting depth: 60,000 nested `<div>`s (a 300 KB
//! page) took 26 s of CPU in a release build. Browsers cap the depth too
//! (Blink at 512). Here the document is cut where the number of open
//! elements would pass [`MAX_DEPTH`]: the text up to that point is kept, the
//! pathological rest is not parsed.
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

/// The byte offset at which `html` should be cut so that no more than
/// `max_depth` elements are open, or `None` when it stays within the cap.
/// The offset is always at a `<`, so a char boundary.
pub fn cut_at(html: &str, max_depth: usize) -> Option<usize> {
    let b = html.as_bytes();
    let mut depth = 0usize;
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
        i = (gt + 1).min(b.len());
        let counted = !VOID.contains(&name.as_str()) && !OPTIONAL_END.contains(&name.as_str());
        if closing {
            if counted {
                depth = depth.saturating_sub(1);
            }
            continue;
        }
        if RAW_TEXT.contains(&name.as_str()) {
            let end = format!("</{name}");
            i = find(b, i, end.as_bytes()).unwrap_or(b.len());
            continue;
        }
        if counted && !self_closed {
            depth += 1;
            if depth > max_depth {
                return Some(lt);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn deep_nesting_is_cut_at_the_cap() {
        let html = format!("<html><body>{}deep", "<div>".repeat(1000));
        let cut = cut_at(&html, 512).unwrap();
        assert_eq!(cut, "<html><body>".len() + 512 * "<div>".len());
        assert_eq!(cut_at(&"<div>".repeat(512), 512), None);
    }

    #[test]
    fn closed_void_optional_and_raw_elements_do_not_count() {
        let flat = "<div><span>x</span></div>".repeat(5000);
        assert_eq!(cut_at(&flat, 8), None);
        let unclosed = "<p>para<li>item<br><img src=x><td>cell<hr/><x-a/>".repeat(5000);
        assert_eq!(cut_at(&unclosed, 8), None);
        let raw = format!(
            "<script>{}</script><style>{}</style><!-- {} -->",
            "<div>".repeat(100),
            "<b>".repeat(100),
            "<i>".repeat(100)
        );
        assert_eq!(cut_at(&raw, 8), None);
        assert_eq!(cut_at("a < b and <3 <<>>", 0), None);
    }

    #[test]
    fn unterminated_markup_ends_the_scan() {
        assert_eq!(cut_at("<div", 0), Some(0));
        assert_eq!(cut_at("<!-- never closed <div><div>", 0), None);
        assert_eq!(cut_at("<script><div><div>", 0), None);
        assert_eq!(
            cut_at("<div class='a>b'><div>", 1),
            Some("<div class='a>".len() + "b'>".len())
        );
    }
}
