//! Recognising template parts (navigation, headers, footers, sidebars, banners) by
//! their tag, ARIA role, or class and id names.
//!
//! Every site names these differently, but from a small shared vocabulary; the lists
//! follow Mozilla Readability's "unlikely candidates", extended with names common on
//! Chinese portals (`top`, `foot`, `hot`, `rank`, `friend` links).

/// Tags whose whole content is template by definition.
pub(crate) fn is_boilerplate_tag(name: &str) -> bool {
    matches!(name, "nav" | "header" | "footer" | "aside" | "menu" | "dialog")
}

/// ARIA landmark roles of template parts.
pub(crate) fn is_boilerplate_role(role: &str) -> bool {
    role.split_ascii_whitespace().any(|r| {
        [
            "navigation",
            "banner",
            "contentinfo",
            "complementary",
            "search",
            "menu",
            "menubar",
            "dialog",
            "alertdialog",
            "toolbar",
        ]
        .iter()
        .any(|b| r.eq_ignore_ascii_case(b))
    })
}

/// Segment prefixes that mark template whatever else the name says (`main-nav`).
const STRONG: &[&str] = &[
    "nav",
    "menu",
    "breadcrumb",
    "crumb",
    "cookie",
    "consent",
    "gdpr",
    "footer",
    "sidebar",
    "share",
    "sharing",
    "social",
    "copyright",
    "skip",
    "pagination",
    "pager",
    "advert",
    "sponsor",
    "popup",
    "modal",
    "newsletter",
    "subscribe",
    "friendlink",
];

/// Segment prefixes that mark template unless another segment says content
/// (`comment-list` is template; `comment-content` inside it is handled by its parent).
const WEAK_PREFIX: &[&str] = &[
    "comment",
    "related",
    "recommend",
    "banner",
    "widget",
    "login",
    "signin",
    "promo",
    "toolbar",
    "topbar",
    "masthead",
    "footnav",
    "hotnews",
    "ranking",
    "disqus",
    "outbrain",
    "taboola",
];

/// Whole segments that mark template unless another segment says content.
const WEAK_EXACT: &[&str] = &[
    "ad", "ads", "header", "head", "foot", "side", "top", "bottom", "tags", "tag", "hot", "rank", "links",
    "friend", "aside",
];

/// Whole segments that say "this is the content".
const OK: &[&str] = &[
    "article", "artical", "content", "body", "main", "post", "entry", "text", "story", "detail", "con",
];

fn starts_with_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// Whether a `class` or `id` value names a template part.
pub(crate) fn is_boilerplate_name(value: &str) -> bool {
    value.split_ascii_whitespace().any(|token| {
        let mut strong = false;
        let mut weak = false;
        let mut ok = false;
        for seg in token.split(['-', '_', ':', '.']).filter(|s| !s.is_empty()) {
            if STRONG.iter().any(|p| starts_with_ci(seg, p)) {
                strong = true;
            } else if WEAK_PREFIX.iter().any(|p| starts_with_ci(seg, p))
                || WEAK_EXACT.iter().any(|p| seg.eq_ignore_ascii_case(p))
            {
                weak = true;
            }
            if OK.iter().any(|p| seg.eq_ignore_ascii_case(p)) {
                ok = true;
            }
        }
        strong || (weak && !ok)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for b in [
            "nav",
            "main-nav",
            "site-footer",
            "sidebar right",
            "cookie-banner",
            "breadcrumbs",
            "share_box",
            "comment-list",
            "ad",
            "top",
            "hot-news",
            "friendlinks",
            "navbar-inverse",
            "Skip-To-Content",
        ] {
            assert!(is_boilerplate_name(b), "{b} should be boilerplate");
        }
        for c in [
            "article-content",
            "content",
            "post-body",
            "main",
            "comment-content",
            "story text",
            "headline",
            "adjacent",
            "shadow",
            "",
        ] {
            assert!(!is_boilerplate_name(c), "{c} should not be boilerplate");
        }
    }

    #[test]
    fn roles() {
        assert!(is_boilerplate_role("navigation"));
        assert!(is_boilerplate_role("Banner"));
        assert!(!is_boilerplate_role("main"));
        assert!(!is_boilerplate_role("article"));
    }
}
