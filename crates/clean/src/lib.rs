//! From the raw bytes of a web page to a normalized title, main text and links.
//!
//! This is what makes two copies of one article look the same to the dedup tiers,
//! whatever their encoding (UTF-8, GBK, Big5 ...), script variant (traditional or
//! simplified Chinese), character width or site template. It has no network code and
//! knows nothing of the dedup crate.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let url = url::Url::parse("https://news.example.com/a/1.html")?;
//! let html = "<html><head><title>開放　ＡＰＩ</title></head>\
//!             <body><nav><a href='/'>首頁</a></nav>\
//!             <article><p>這是一篇關於開放資料的新聞報導，內容很長很長。</p></article></body></html>";
//! let page = simcrawl_clean::Page::parse(html.as_bytes(), Some("text/html; charset=utf-8"), &url)?;
//! assert_eq!(page.title, "开放 api");
//! // Taiwan words too: 資料 is mainland 数据.
//! assert_eq!(page.text, "这是一篇关于开放数据的新闻报导,内容很长很长。");
//! // What people read, index and train on: the page as it wrote it.
//! assert_eq!(page.raw_title, "開放　ＡＰＩ");
//! assert_eq!(page.raw_text, "這是一篇關於開放資料的新聞報導，內容很長很長。");
//! assert_eq!(page.links[0].url.as_str(), "https://news.example.com/");
//! # Ok(())
//! # }
//! ```
//!
//! Build one [`Cleaner`] and share it (it is `Send + Sync`): building the OpenCC
//! converter is the expensive part. [`Page::parse`] uses a lazily built default one.

// The README's example is compiled and run with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

use std::sync::{Arc, OnceLock};

use url::Url;

pub mod config;
pub mod decode;
mod dom;
pub mod error;
mod extract;
mod nesting;
pub mod normalize;
mod same;
pub mod template;
mod zeros;

pub use config::{ChineseVariant, CleanConfig, Step};
pub use decode::{Decoded, EncodingSource, decode};
pub use error::CleanError;
pub use normalize::fold_whitespace::visible_chars;
pub use normalize::{Normalizer, Pipeline};
pub use template::{
    HostBlocks, HostChanges, PageBlocks, TemplateBlocks, TemplateConfig, TemplateLearner, TextBlocks,
};

/// A link found on a page, resolved to an absolute http(s) URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Resolved against the page URL and `<base href>`; the fragment is kept (the
    /// crawler canonicalizes).
    pub url: Url,
    /// `rel="nofollow"` on this link. A page-level `<meta name=robots
    /// content=nofollow>` is reported separately in [`Page::meta_nofollow`].
    pub nofollow: bool,
    /// The link's visible text, whitespace collapsed, not normalized, capped at 256 bytes.
    pub text: String,
}

/// A cleaned page: what the dedup tiers and the crawler frontier need from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Normalized title: the key of the title tier.
    pub title: String,
    /// The title as the page shows it (whitespace collapsed), for people and logs.
    pub raw_title: String,
    /// Normalized main text, one block (paragraph, heading, list item) per line:
    /// what the content tier signs, never what a reader should be shown.
    pub text: String,
    /// The main text as the page wrote it: the same blocks as [`Page::text`],
    /// one per line, HTML whitespace collapsed, and nothing else changed (case,
    /// width, script variant, symbols kept). Outputs carry this one: their users
    /// index and train on the page's own words. Captured by the same extraction
    /// pass as `text`, so it costs no second parse.
    pub raw_text: String,
    /// Normalized visible text outside the parts the page declares template
    /// (`nav`, `header`, `footer`, `aside`, ARIA landmark roles), link text and
    /// script-toggled (`hidden`) variants included, one block per line. What the
    /// page has of its own when its main text is too little of it to say what
    /// the page is (an index, a table of contents, a landing page made of
    /// links); a crawler learns a site's undeclared template from it.
    pub own_text: String,
    /// Characters (not whitespace) of `own_text` that are link text (raw,
    /// before normalization): teasers, related links and tables of contents
    /// are links, so a crawler can tell what a page *says* of its own from
    /// what it *links to* when it decides which text is its identity.
    pub own_link_chars: usize,
    /// The main text is a message shown in an archive's frame: a flat page
    /// whose text is one run of `<pre>` blocks (MHonArc, Pipermail,
    /// public-inbox). The header fields, thread links and prev/next
    /// subjects around it are shared by the messages of one thread, not by
    /// the whole host, so no learnt template takes them out, and judged with
    /// them two replies of one thread looked alike; the page is judged on
    /// its message ([`Page::judged_own`]).
    pub framed: bool,
    /// Characters (not counting whitespace) of the page's whole visible text,
    /// template included: its size as a reader sees it, to tell a page from
    /// a much smaller one it is said to copy.
    pub visible_chars: usize,
    /// Every http(s) link of the page (template included: the crawler needs them).
    pub links: Vec<Link>,
    /// `<link rel=canonical>`, resolved.
    pub canonical: Option<Url>,
    /// The RSS and Atom feeds the page announces (`<link rel=alternate
    /// type=application/rss+xml|atom+xml>`), resolved: a crawler follows
    /// them to find pages as the site publishes them.
    pub feeds: Vec<Url>,
    /// `<html lang>` (or `<meta http-equiv=content-language>`), as written.
    pub lang_hint: Option<String>,
    /// The encoding the bytes were decoded with (WHATWG name, e.g. `GBK`, `Big5`).
    pub encoding: &'static str,
    /// `<meta name=robots>` says `nofollow` (or `none`): follow no link of this page.
    pub meta_nofollow: bool,
    /// `<meta name=robots>` says `noindex` (or `none`).
    pub meta_noindex: bool,
}

/// [`Page::judged_own`] for a caller that kept a page's parts but not the
/// page (`framed`, its main text, its own text and that text's link chars):
/// one rule wherever a page is judged.
///
/// ```
/// assert_eq!(simcrawl_clean::judged_own(true, "the message", ("frame and message", 5)), ("the message", 0));
/// assert_eq!(simcrawl_clean::judged_own(false, "main", ("own text", 3)), ("own text", 3));
/// ```
#[must_use]
pub fn judged_own<'a>(
    framed: bool,
    main: &'a str,
    (own, own_link_chars): (&'a str, usize),
) -> (&'a str, usize) {
    if framed { (main, 0) } else { (own, own_link_chars) }
}

impl Page {
    /// What the page has of its own to be judged on, and how much of it is
    /// link text: its own text, or its main text when that is a message in
    /// an archive's frame ([`Page::framed`]). A crawler still learns its
    /// host's template from [`Page::own_text`].
    ///
    /// ```
    /// let url = url::Url::parse("http://lists.example/msg00001.html").unwrap();
    /// let html = "<html><body><ul><li><em>From</em>: Ann</li><li><em>Date</em>: Mon</li></ul>\
    ///     <pre>Thanks, applied to the tree, and queued for the next release with the fix.\n\
    ///     It builds and the tests pass on both machines here, so it goes out today.</pre>\
    ///     <ul><li>Prev by Date: <a href=\"msg00000.html\">Re: the patch</a></li></ul></body></html>";
    /// let page = simcrawl_clean::Page::parse(html.as_bytes(), Some("text/html"), &url).unwrap();
    /// assert!(page.framed);
    /// assert_eq!(page.judged_own().0, page.text);
    /// assert!(page.own_text.contains("prev by date"));
    /// ```
    #[must_use]
    pub fn judged_own(&self) -> (&str, usize) {
        judged_own(self.framed, &self.text, (&self.own_text, self.own_link_chars))
    }

    /// Cleans a page with the default configuration, using a cleaner built once per
    /// process on first use.
    pub fn parse(bytes: &[u8], content_type: Option<&str>, url: &Url) -> Result<Page, CleanError> {
        Cleaner::shared_default()?.parse(bytes, content_type, url)
    }

    /// The links a polite crawler may follow: neither the page nor the link says nofollow.
    pub fn followable_links(&self) -> impl Iterator<Item = &Link> {
        let page_nofollow = self.meta_nofollow;
        self.links.iter().filter(move |l| !page_nofollow && !l.nofollow)
    }
}

/// Configuration plus the prebuilt normalizer pipelines; build once, share everywhere.
#[derive(Debug, Clone)]
pub struct Cleaner {
    config: CleanConfig,
    text_pipeline: Pipeline,
    title_pipeline: Pipeline,
    /// See [`Cleaner::without_link_texts`].
    link_texts: bool,
}

impl Cleaner {
    /// Builds the pipelines (and the OpenCC converter, once, shared by both).
    pub fn new(config: CleanConfig) -> Result<Self, CleanError> {
        if config.max_text_bytes == 0 || config.max_html_bytes == 0 {
            return Err(CleanError::InvalidConfig(
                "max_text_bytes and max_html_bytes must be positive".to_owned(),
            ));
        }
        let chinese = if config.enabled(Step::ConvertChinese) && config.order.contains(&Step::ConvertChinese)
        {
            Some(Arc::new(normalize::ConvertChinese::new(config.convert_chinese)?))
        } else {
            None
        };
        let text_pipeline = Pipeline::from_config(&config, false, chinese.as_ref())?;
        let title_pipeline = Pipeline::from_config(&config, true, chinese.as_ref())?;
        Ok(Self {
            config,
            text_pipeline,
            title_pipeline,
            link_texts: true,
        })
    }

    /// The same cleaner, leaving every [`Link::text`] empty. A crawler
    /// that follows links and never reads their texts need not collect
    /// them: a documentation page's hundreds of links each gathered its
    /// text into a string of its own, about 1% of a crawl's instructions
    /// (issue 37). Nothing else of the page changes; not a setting of
    /// [`CleanConfig`], since what a page's text and links are does not
    /// depend on it.
    ///
    /// ```
    /// use simcrawl_clean::{CleanConfig, Cleaner};
    /// let url = url::Url::parse("http://docs.example/").unwrap();
    /// let html = r#"<p>See <a href="/install">the install guide</a>.</p>"#;
    /// let full = Cleaner::new(CleanConfig::default()).unwrap();
    /// let lean = Cleaner::new(CleanConfig::default()).unwrap().without_link_texts();
    /// let (a, b) = (full.parse_str(html, &url).unwrap(), lean.parse_str(html, &url).unwrap());
    /// assert_eq!(a.links[0].text, "the install guide");
    /// assert_eq!(b.links[0].text, "");
    /// assert_eq!(a.links[0].url, b.links[0].url);
    /// assert_eq!(a.text, b.text);
    /// ```
    #[must_use]
    pub fn without_link_texts(mut self) -> Self {
        self.link_texts = false;
        self
    }

    /// The process-wide default cleaner behind [`Page::parse`].
    pub fn shared_default() -> Result<&'static Cleaner, CleanError> {
        static DEFAULT: OnceLock<Result<Cleaner, CleanError>> = OnceLock::new();
        DEFAULT
            .get_or_init(|| Cleaner::new(CleanConfig::default()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The configuration this cleaner was built with.
    #[must_use]
    pub fn config(&self) -> &CleanConfig {
        &self.config
    }

    /// Decodes, parses, extracts and normalizes one page.
    ///
    /// Input beyond `max_html_bytes` is ignored; parsing never fails (broken HTML is
    /// repaired the way browsers do, broken bytes become U+FFFD).
    pub fn parse(&self, bytes: &[u8], content_type: Option<&str>, url: &Url) -> Result<Page, CleanError> {
        let bytes = &bytes[..bytes.len().min(self.config.max_html_bytes)];
        let decoded = decode::decode(bytes, content_type, Some(url));
        if decoded.had_errors {
            tracing::debug!(%url, encoding = decoded.encoding.name(), "malformed bytes replaced");
        }
        self.parse_decoded(&decoded.text, decoded.encoding, url)
    }

    /// Like [`Cleaner::parse`] for a page that is already text (e.g. from a corpus).
    pub fn parse_str(&self, html: &str, url: &Url) -> Result<Page, CleanError> {
        let mut end = html.len().min(self.config.max_html_bytes);
        while !html.is_char_boundary(end) {
            end -= 1;
        }
        self.parse_decoded(&html[..end], encoding_rs::UTF_8, url)
    }

    fn parse_decoded(
        &self,
        html: &str,
        encoding: &'static encoding_rs::Encoding,
        url: &Url,
    ) -> Result<Page, CleanError> {
        let doc = dom::Dom::parse(html);
        if doc.flattened() {
            tracing::debug!(%url, "elements nested deeper than {} flattened", nesting::MAX_DEPTH);
        }
        match doc.by_html5ever() {
            Some(dom::Html5ever::Tokenizer) => tracing::debug!(%url, "markup left to html5ever's tokenizer"),
            Some(dom::Html5ever::TreeBuilder) => {
                tracing::debug!(%url, "markup left to html5ever's tree builder")
            }
            None => {}
        }
        let ex = extract::extract(
            &doc,
            url,
            &extract::ExtractOptions {
                encoding,
                main_content: self.config.main_content,
                max_text_bytes: self.config.max_text_bytes,
                max_links: self.config.max_links,
                link_texts: self.link_texts,
            },
        );
        drop(doc);
        let title = self.normalize_title(&ex.raw_title);
        let text = self.normalize_text(&ex.text);
        // Many pages' main text is all their own text: normalized once then.
        let own_text = if ex.own_text == ex.text {
            text.clone()
        } else {
            self.normalize_text(&ex.own_text)
        };
        Ok(Page {
            title,
            raw_title: ex.raw_title,
            text,
            raw_text: ex.text,
            own_text,
            own_link_chars: ex.own_link_chars,
            framed: ex.framed,
            visible_chars: ex.visible_chars,
            links: ex.links,
            canonical: ex.canonical,
            feeds: ex.feeds,
            lang_hint: ex.lang_hint,
            encoding: encoding.name(),
            meta_nofollow: ex.meta_nofollow,
            meta_noindex: ex.meta_noindex,
        })
    }

    /// Applies the text pipeline to plain text (e.g. a corpus without HTML); the result
    /// is capped at `max_text_bytes`.
    #[must_use]
    pub fn normalize_text(&self, text: &str) -> String {
        let mut out = self.text_pipeline.run(text).into_owned();
        cap_string(&mut out, self.config.max_text_bytes);
        out
    }

    /// Applies the title pipeline (the text one, with newlines folded too).
    #[must_use]
    pub fn normalize_title(&self, title: &str) -> String {
        self.title_pipeline.run(title).into_owned()
    }

    /// The text pipeline, for callers that normalize their own fields.
    #[must_use]
    pub fn text_pipeline(&self) -> &Pipeline {
        &self.text_pipeline
    }
}

/// Truncates `s` to at most `cap` bytes on a char boundary.
fn cap_string(s: &mut String, cap: usize) {
    if s.len() > cap {
        let mut end = cap;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaner_is_send_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Cleaner>();
        assert_send_sync::<Page>();
    }

    /// Normalization feeds the signatures only: the raw fields keep the page's
    /// case, width and script, and the normalized ones are unchanged by them.
    #[test]
    fn raw_text_is_the_page_as_written() -> Result<(), Box<dyn std::error::Error>> {
        let url = Url::parse("https://help.example.com/zh-tw/sort")?;
        let html = "<html><head><title>使用瀏覽  Reorder Files</title></head><body>\
                    <article><h1>Sort Your Files</h1><p>使用瀏覽 按鈕   重新排序 ＡＢＣ。</p></article></body></html>";
        let page = Cleaner::shared_default()?.parse(html.as_bytes(), None, &url)?;
        assert_eq!(page.raw_title, "使用瀏覽 Reorder Files");
        assert_eq!(page.raw_text, "Sort Your Files\n使用瀏覽 按鈕 重新排序 ＡＢＣ。");
        assert_eq!(page.title, "使用浏览 reorder files");
        assert_eq!(page.text, "sort your files\n使用浏览 按钮 重新排序 abc。");
        Ok(())
    }

    #[test]
    fn cap_on_char_boundary() {
        let mut s = "中文字".to_owned();
        cap_string(&mut s, 4);
        assert_eq!(s, "中");
    }
}
