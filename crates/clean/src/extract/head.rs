//! The page's metadata: title, robots hints, base URL, canonical URL, language.
//!
//! Collected during the same walk as the text (one pass over the tree), from every
//! element the text walk does not skip; kept apart from the text handlers because
//! none of it depends on where the element is or what text it holds.

use html5ever::local_name;
use url::Url;

use super::{MAX_TITLE_BYTES, collapse, has_token};
use crate::dom::{Dom, ElementRef, NodeId};

/// Feeds a page may announce that are kept (a page listing hundreds is not
/// announcing its feeds).
const MAX_FEEDS: usize = 8;

/// What the metadata elements said; the first occurrence of each wins.
#[derive(Debug, Default)]
pub(super) struct HeadMeta<'a> {
    /// `<title>`.
    title: Option<String>,
    /// `<meta property="og:title">`, when the title is empty.
    og_title: Option<String>,
    /// The first `<h1>`, the last resort for a title (its text is read only then).
    first_h1: Option<NodeId>,
    /// `<base href>`: relative links resolve against it.
    base_href: Option<&'a str>,
    /// `<link rel="canonical" href>`.
    canonical_href: Option<&'a str>,
    /// `<link rel="alternate" type="application/rss+xml|atom+xml" href>`:
    /// the page's feeds.
    feed_hrefs: Vec<&'a str>,
    /// `<html lang>`.
    html_lang: Option<String>,
    /// `<meta http-equiv="content-language" content>`, when `<html>` has no `lang`.
    content_language: Option<&'a str>,
    /// `<meta name="robots">` said `noindex` or `none`.
    pub(super) noindex: bool,
    /// `<meta name="robots">` said `nofollow` or `none`.
    pub(super) nofollow: bool,
}

impl<'a> HeadMeta<'a> {
    /// Looks at one element for metadata.
    pub(super) fn element(&mut self, dom: &Dom, node: NodeId, e: ElementRef<'a>) {
        match *e.local() {
            local_name!("title") if self.title.is_none() => {
                self.title = Some(collapse(&dom.text_of(node), MAX_TITLE_BYTES));
            }
            local_name!("meta") => self.meta(e),
            local_name!("link")
                if self.canonical_href.is_none()
                    && e.attr("rel").is_some_and(|r| has_token(r, "canonical")) =>
            {
                self.canonical_href = e.attr("href");
            }
            local_name!("link")
                if e.attr("rel").is_some_and(|r| has_token(r, "alternate"))
                    && e.attr("type").is_some_and(|t| {
                        let t = t.trim();
                        t.eq_ignore_ascii_case("application/rss+xml")
                            || t.eq_ignore_ascii_case("application/atom+xml")
                    })
                    && self.feed_hrefs.len() < MAX_FEEDS =>
            {
                if let Some(h) = e.attr("href") {
                    self.feed_hrefs.push(h);
                }
            }
            local_name!("base") if self.base_href.is_none() => self.base_href = e.attr("href"),
            local_name!("html") if self.html_lang.is_none() => {
                self.html_lang = e
                    .attr("lang")
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned);
            }
            local_name!("h1") if self.first_h1.is_none() => self.first_h1 = Some(node),
            _ => {}
        }
    }

    /// `<meta>`: robots hints, `og:title`, `content-language`.
    fn meta(&mut self, e: ElementRef<'a>) {
        let content = e.attr("content").unwrap_or("");
        if let Some(key) = e.attr("name").or_else(|| e.attr("property")) {
            if key.eq_ignore_ascii_case("robots") {
                let none = has_token(content, "none");
                self.noindex |= none || has_token(content, "noindex");
                self.nofollow |= none || has_token(content, "nofollow");
            } else if key.eq_ignore_ascii_case("og:title") && self.og_title.is_none() {
                self.og_title = Some(collapse(content, MAX_TITLE_BYTES));
            }
        }
        if e.attr("http-equiv")
            .is_some_and(|h| h.eq_ignore_ascii_case("content-language"))
            && self.content_language.is_none()
        {
            self.content_language = Some(content);
        }
    }

    /// The title: `<title>`, else `og:title`, else the first `<h1>` (empty if none).
    pub(super) fn title(&mut self, dom: &Dom) -> String {
        let h1 = || {
            self.first_h1
                .map(|h1| collapse(&dom.text_of(h1), MAX_TITLE_BYTES))
        };
        self.title
            .take()
            .filter(|t| !t.is_empty())
            .or_else(|| self.og_title.take().filter(|t| !t.is_empty()))
            .or_else(h1)
            .unwrap_or_default()
    }

    /// The language the page declares: `<html lang>`, else `content-language`.
    pub(super) fn lang_hint(&mut self) -> Option<String> {
        self.html_lang.take().or_else(|| {
            self.content_language
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
        })
    }

    /// What relative links resolve against: `<base href>` (itself resolved against
    /// the page URL) when it is an http(s) URL, else the page URL.
    pub(super) fn base(&self, url: &Url) -> Url {
        self.base_href
            .and_then(|h| url.join(h.trim()).ok())
            .filter(|b| matches!(b.scheme(), "http" | "https"))
            .unwrap_or_else(|| url.clone())
    }

    /// The canonical link's `href`, untrimmed and unresolved.
    pub(super) fn canonical_href(&self) -> Option<&'a str> {
        self.canonical_href
    }

    /// The feeds' `href`s, untrimmed and unresolved.
    pub(super) fn feed_hrefs(&self) -> &[&'a str] {
        &self.feed_hrefs
    }
}
