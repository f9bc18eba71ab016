//! A page's article: the story other sites republish inside their own
//! templates (issue 35).
//!
//! A crawler judges a page on the text that makes it what it is: its main
//! text when that is most of what the page says, else everything the page
//! shows. A news story inside another site's template is neither: its
//! article is often under half of what the page says (teasers, bylines,
//! comments, the site's other stories), so the copy is judged on the
//! template and no longer matches its original. Judging every page on its
//! main text instead loses pages on documentation sites, where a block
//! that extraction picks (an introduction above a table of contents, an
//! untranslated table inside a translated page) is shared by sibling pages
//! that say different things.
//!
//! So a page also carries its article when it has one, and the article
//! matches **another site's** article: across sites two pages with one
//! article are one story in two frames. Within a site (one host, or one
//! path on two hosts: a mirror, a language version on its own host) two
//! pages with one article may be siblings around a block extraction
//! picks, so there an article matches only when the two pages are also
//! alike by everything they show ([`crate::Outline`]): a page whose
//! navigation lists its own neighbours saying what its sibling says, or a
//! page judged on its main text and its twin judged on all it shows. A front page (`/`, `/index.html`) is every
//! site's, so two hosts' front pages are two sites. Across sites a
//! translation can still carry an untranslated block, so a
//! page written in a script its partner does not have at all is not a copy
//! of it ([`PageScripts::foreign_to`]), and an article must reach
//! [`ARTICLE_MIN_SIMILARITY`] (the labels' own near-duplicate line), not
//! the content tier's lower threshold.
//!
//! The article also keeps a page: a page with one of its own is not the
//! copy of a page that does not carry it, however alike the two are by
//! all they show, when what it shows beyond that page is about its story's
//! size (`Refusal::ArticleMissing`). A host's story page and its front
//! page, before the host's template is learnt, are both judged on all
//! they show and are alike by the template; only the story tells them
//! apart.

use crate::fingerprint::Fingerprint;
use crate::sketch::Sketch;

/// The resemblance two articles on different sites must reach: the line
/// the gates label near-duplicates by (0.8). The content tier's 0.75 is
/// for whole texts that differ by a template's few lines; articles are
/// compared without their templates, and copies of one story measure
/// 0.81-1.00 (docs/EVAL.md, "Articles across sites").
pub const ARTICLE_MIN_SIMILARITY: f64 = 0.8;

/// The resemblance under which two articles are apart: the line the gates
/// label distinct pages by (0.5). A page with an article of its own is not
/// the copy of a page whose article is this far from it, or that has none,
/// however alike all they show (`Refusal::ArticleMissing`).
pub const ARTICLE_APART: f64 = 0.5;

/// What a checked page says about its article.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Article {
    /// No article: a text line, or a page whose main text is too short to
    /// identify it.
    #[default]
    None,
    /// The text signed is the page's article (a crawler's `main` basis).
    Text(PageScripts),
    /// The page was judged on another text; this is its article's
    /// signature, and the scripts of the whole page.
    Separate {
        /// SimHash of the article.
        fingerprint: Fingerprint,
        /// Resemblance sketch of the article (boxed: most pages have none).
        sketch: Box<Sketch>,
        /// The scripts of the whole page.
        scripts: PageScripts,
        /// The article's distinct 5-grams ([`crate::sketch::shingle_count`]):
        /// how much of what the page shows is its story.
        shingles: u32,
    },
}

impl Article {
    /// The scripts of the page, when it has an article.
    #[must_use]
    pub fn scripts(&self) -> Option<PageScripts> {
        match self {
            Article::None => None,
            Article::Text(s) | Article::Separate { scripts: s, .. } => Some(*s),
        }
    }
}

/// Which scripts a page is written in: those that hold at least a tenth of
/// its letters (`major`) and those that hold any real part of them, a
/// hundredth (`present`), one bit per script family (a Han, kana or Hangul
/// character counted as three letters).
///
/// ```
/// use simcrawl_dedup::PageScripts;
/// let ja = PageScripts::of("ISO 8859-1 文字集合の符号化。以下の表は表示可能な文字を示している。 240 160 a0 no-break space");
/// let en = PageScripts::of("ISO 8859-1 character set. The following table displays the printable characters. 240 160 a0 no-break space");
/// assert!(ja.foreign_to(en), "Japanese headings around an English table");
/// assert!(!en.foreign_to(en));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageScripts {
    major: u8,
    present: u8,
}

/// Script families, one bit each: Latin, Greek, Cyrillic, Hebrew and
/// Arabic, Indic and Southeast Asian, Hangul, Han and kana, other.
fn family(c: char) -> u8 {
    let bit = match u32::from(c) {
        0..=0x024F | 0x1E00..=0x1EFF => 0,
        0x0370..=0x03FF | 0x1F00..=0x1FFF => 1,
        0x0400..=0x052F => 2,
        0x0590..=0x06FF | 0x0750..=0x077F | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFF => 3,
        0x0900..=0x0DFF | 0x0E00..=0x0EFF | 0x1000..=0x109F | 0x1780..=0x17FF => 4,
        0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF => 5,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF => 6,
        _ => 7,
    };
    1 << bit
}

impl PageScripts {
    /// The scripts of a text.
    #[must_use]
    pub fn of(text: &str) -> PageScripts {
        let mut counts = [0usize; 8];
        let mut total = 0usize;
        // An ASCII letter is Latin (family 0) and weighs 1: a run of ASCII
        // is counted whole.
        let mut latin = 0usize;
        crate::letters::for_each_run(
            text,
            |run| latin += crate::letters::count_ascii(run, false),
            |c| {
                if !crate::letters::is_alphabetic(c) {
                    return;
                }
                let f = family(c).trailing_zeros() as usize;
                // A Han, kana or Hangul character says about what a word of
                // four or five letters says: counted as three, the Chinese
                // headings of a page around an untranslated English chapter
                // are a tenth of it, as they are of what a reader sees.
                let weight = if f == 5 || f == 6 { 3 } else { 1 };
                counts[f] += weight;
                total += weight;
            },
        );
        counts[0] += latin;
        total += latin;
        let mut s = PageScripts::default();
        for (bit, &n) in counts.iter().enumerate() {
            if n > 0 && n * 10 >= total {
                s.major |= 1 << bit;
            }
            if n > 0 && n * 100 >= total {
                s.present |= 1 << bit;
            }
        }
        s
    }

    /// Whether this page holds a tenth of its letters in a script `other`
    /// has next to none of: a Japanese manual page around an English table
    /// is not a copy of the English page, however alike the tables.
    #[must_use]
    pub fn foreign_to(self, other: PageScripts) -> bool {
        self.major & !other.present != 0
    }

    /// Whether either page is [foreign](PageScripts::foreign_to) to the other.
    #[must_use]
    pub fn apart(self, other: PageScripts) -> bool {
        self.foreign_to(other) || other.foreign_to(self)
    }

    pub(crate) fn to_bytes(self) -> [u8; 2] {
        [self.major, self.present]
    }

    pub(crate) fn from_bytes(b: [u8; 2]) -> PageScripts {
        PageScripts {
            major: b[0],
            present: b[1],
        }
    }
}

/// The site of a URL for the article rule: its host, lower case, without
/// port and a leading `www.`. Two pages on one host are siblings, never
/// one story in two frames.
fn site(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host.rfind(':') {
        Some(i) if !host.ends_with(']') => &host[..i],
        _ => host,
    };
    host.strip_prefix("www.").unwrap_or(host)
}

/// A URL's path and query, without its fragment: what names a page within
/// its site.
fn page_path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find(['/', '?']).map_or("", |i| &rest[i..]);
    path.split_once('#').map_or(path, |(p, _)| p)
}

/// Whether a page path is a site's front page (`/`, `/index.html`, ...):
/// every site has one, so two hosts' front pages are two sites, not one
/// site in two places (the news gate's front pages of two sites that list
/// the same syndicated stories: 0.96 alike as shown, in two frames).
fn is_front_page(path: &str) -> bool {
    let path = path.trim_start_matches('/');
    path.is_empty()
        || path.split_once('.').is_some_and(|(name, ext)| {
            ["index", "default", "home", "main"]
                .iter()
                .any(|n| name.eq_ignore_ascii_case(n))
                && ["html", "htm", "php", "asp", "aspx", "jsp", "shtml"]
                    .iter()
                    .any(|e| ext.eq_ignore_ascii_case(e))
        })
}

/// Whether `url` is its site's front page ([`is_front_page`]).
pub(crate) fn is_front_page_url(url: &str) -> bool {
    is_front_page(page_path(url))
}

/// How two pages' URLs are related: what the rules that look past a
/// page's text go by (an article matches across [`SiteRelation::OtherSites`], and
/// at [`SiteRelation::SamePath`], [`SiteRelation::Mirrors`] or on one host
/// when the pages show the same, sizes only compare [`SiteRelation::SameHost`], outlines
/// the pages of one site: not [`SiteRelation::OtherSites`]), and what a person
/// checking a verdict is shown (`crawl report`).
///
/// ```
/// use simcrawl_dedup::SiteRelation;
/// let of = SiteRelation::of;
/// assert_eq!(of("http://www.A.test:8080/x", "https://a.test/y"), SiteRelation::SameHost);
/// assert_eq!(
///     of("http://man.zh-cn.test/man1/tar.1.html", "http://man.zh-tw.test/man1/tar.1.html#x"),
///     SiteRelation::SamePath
/// );
/// assert_eq!(of("http://a.test/p?id=1", "http://b.test/p?id=2"), SiteRelation::OtherSites);
/// // Two sites' front pages.
/// assert_eq!(of("http://a.test/index.html", "http://b.test/index.html"), SiteRelation::OtherSites);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiteRelation {
    /// One host, its port and a leading `www.` ignored, in any case.
    SameHost,
    /// One path and query on two hosts, other than a front page: one
    /// site's page served twice, a
    /// mirror or a language version on its own host (`man.zh-cn` and
    /// `man.zh-tw`, a handbook per language), whose translations of one
    /// text are judged by everything they show, not by a block they share.
    SamePath,
    /// Two pages at different paths of two hosts that serve one set of
    /// paths: the pages' own host also has the other's path, or the other
    /// host has theirs (a language version on its own host, a mirror). One
    /// site in two places, so judged as pages of one host are: a page and
    /// another page's translation sharing a table are not one story in two
    /// frames. Only articles are told apart this way: pages judged on their
    /// own text compare as pages of two sites do (two mailing lists
    /// archived by one program number their messages alike, and a message
    /// cross-posted to both is a copy). [`SiteRelation::of`] cannot tell it
    /// from the URLs alone; a deduper that has seen the URLs does.
    Mirrors,
    /// Pages of two sites.
    OtherSites,
}

impl SiteRelation {
    /// The relation of the pages at URLs `a` and `b`, read without parsing
    /// (a URL as given is compared as it is written).
    #[must_use]
    pub fn of(a: &str, b: &str) -> SiteRelation {
        if site(a).eq_ignore_ascii_case(site(b)) {
            SiteRelation::SameHost
        } else if page_path(a) == page_path(b) && !is_front_page(page_path(a)) {
            SiteRelation::SamePath
        } else {
            SiteRelation::OtherSites
        }
    }
}

/// For pages at `a` and `b` of two hosts and two paths (neither a front
/// page, which every site has): `a`'s path on `b`'s host and `b`'s path
/// on `a`'s host. Either seen says the hosts serve one set of paths
/// ([`SiteRelation::Mirrors`]).
pub(crate) fn crossed_urls(a: &str, b: &str) -> Option<[String; 2]> {
    let (pa, pb) = (page_path(a), page_path(b));
    if pa == pb || is_front_page(pa) || is_front_page(pb) || site(a).eq_ignore_ascii_case(site(b)) {
        return None;
    }
    fn origin(url: &str) -> Option<&str> {
        let (scheme, rest) = url.split_once("://")?;
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        url.get(..scheme.len() + 3 + end)
    }
    let with_path = |origin: &str, path: &str| {
        if path.starts_with('/') {
            format!("{origin}{path}")
        } else {
            format!("{origin}/{path}")
        }
    };
    Some([with_path(origin(b)?, pa), with_path(origin(a)?, pb)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossed_urls_swap_the_paths_of_two_hosts() {
        assert_eq!(
            crossed_urls(
                "http://man.pl.test:81/man7/iso_8859-15.7.html#x",
                "http://man.en.test:81/man7/iso_8859-1.7.html"
            ),
            Some([
                "http://man.en.test:81/man7/iso_8859-15.7.html".to_string(),
                "http://man.pl.test:81/man7/iso_8859-1.7.html".to_string()
            ])
        );
        assert_eq!(
            crossed_urls("http://a.test/p?id=1", "https://b.test/q"),
            Some(["https://b.test/p?id=1".to_string(), "http://a.test/q".to_string()])
        );
        // One path, one host, or a front page: nothing to learn.
        assert_eq!(crossed_urls("http://a.test/x", "http://b.test/x"), None);
        assert_eq!(crossed_urls("http://a.test/x", "http://www.a.test/y"), None);
        assert_eq!(crossed_urls("http://a.test/", "http://b.test/y"), None);
        assert_eq!(crossed_urls("http://a.test/x", "http://b.test/index.html"), None);
    }

    #[test]
    fn sites_ignore_port_www_and_case() {
        let other_site = |a, b| SiteRelation::of(a, b) == SiteRelation::OtherSites;
        assert!(!other_site("http://www.A.test:8080/x", "https://a.test/y"));
        assert!(other_site(
            "http://news-a.test/story/1",
            "http://news-b.test/news/1-2"
        ));
        // One path on two hosts: one site's page in two places.
        assert!(!other_site(
            "http://man.zh-cn.test/man1/tar.1.html",
            "http://man.zh-tw.test/man1/tar.1.html#x"
        ));
        assert!(other_site("http://a.test/p?id=1", "http://b.test/p?id=2"));
        // Every site has a front page: two of them are two sites.
        for front in ["", "/", "/index.html", "/Default.aspx", "/home.php"] {
            let (a, b) = (format!("http://a.test{front}"), format!("http://b.test{front}"));
            assert_eq!(SiteRelation::of(&a, &b), SiteRelation::OtherSites, "{front}");
        }
        assert!(!other_site(
            "http://a.test/man7/index.html",
            "http://b.test/man7/index.html"
        ));
        assert!(!other_site(
            "http://a.test/index.php?p=5",
            "http://b.test/index.php?p=5"
        ));
        assert_eq!(page_path("http://h.test"), "");
        assert!(!other_site("http://u@h.test/x", "http://h.test"));
        assert_eq!(site("http://[::1]:80/x"), "[::1]");
    }

    #[test]
    fn scripts_are_counted_as_char_by_char() {
        // The scripts as they were counted before ASCII runs were read whole.
        fn char_by_char(text: &str) -> PageScripts {
            let (mut counts, mut total) = ([0usize; 8], 0usize);
            for c in text.chars().filter(|&c| c.is_alphabetic()) {
                let f = family(c).trailing_zeros() as usize;
                let weight = if f == 5 || f == 6 { 3 } else { 1 };
                counts[f] += weight;
                total += weight;
            }
            let mut s = PageScripts::default();
            for (bit, &n) in counts.iter().enumerate() {
                s.major |= u8::from(n > 0 && n * 10 >= total) << bit;
                s.present |= u8::from(n > 0 && n * 100 >= total) << bit;
            }
            s
        }
        let english = "The function returns the number of bytes read. ".repeat(20);
        for text in [
            String::new(),
            english.clone(),
            format!("{english}第一章 概述"),
            format!("概述{}", "中文".repeat(40)),
            format!("Привет мир {english} Ελληνικά ภาษาไทย 한국어 カタカナ"),
            "ß é ŋ 1 2 3 — “quoted”".to_owned(),
        ] {
            assert_eq!(PageScripts::of(&text), char_by_char(&text), "{text}");
        }
    }

    #[test]
    fn scripts_tell_a_translation_from_a_copy() {
        let en = PageScripts::of("the council met on tuesday and approved the budget");
        let ru = PageScripts::of("совет собрался во вторник и утвердил бюджет the budget");
        assert!(ru.foreign_to(en));
        assert!(!en.foreign_to(ru), "ru has some Latin");
        assert!(en.apart(ru));
        // An English template around a Japanese story, and the story's own
        // Japanese site with a few Latin words: neither is foreign.
        let copy = PageScripts::of(
            "news home sport weather contact 気象台は寒波の警報を出した 北の地方では気温が下がる",
        );
        let orig = PageScripts::of("気象台は寒波の警報を出した 北の地方では気温が下がる iPhone news");
        assert!(!copy.apart(orig));
        assert_eq!(PageScripts::from_bytes(copy.to_bytes()), copy);
    }

    #[test]
    fn chinese_headings_around_an_english_chapter_are_a_translation() {
        // The handbook's zh-TW "packaging system" chapter: 330 Han
        // characters of headings and navigation around 3,400 letters of
        // untranslated English (docs/EVAL.md, "Articles across sites").
        let zh_tw = format!(
            "{} {}",
            "套件系統工具與基本原則".repeat(30),
            "the package ".repeat(340)
        );
        let en = "the package ".repeat(400);
        assert!(PageScripts::of(&zh_tw).apart(PageScripts::of(&en)));
    }
}
