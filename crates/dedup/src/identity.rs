//! A page's identity: the text it is judged on by the title and content
//! tiers, shared by the crawler, `crawl dedup` over `html` lines and the Python
//! bindings' `check_html`, so that one page gets one verdict on every path.
//!
//! The content tier drops a page whose text resembles a kept page's. That
//! is only safe when the text is what makes the page what it is. Main-content
//! extraction gets most pages right, but three kinds of page keep little of
//! their own in it, and were dropped as copies of unrelated pages
//! (the project's docs/EVAL.md, "The HTML gate"):
//!
//! - pages whose content is links (indexes, tables of contents, a help
//!   system's section pages): extraction leaves the site's footer;
//! - landing pages whose only paragraph is a notice every such page shares;
//! - translations that keep an untranslated paragraph in the block
//!   extraction picks, while their tables and headings are translated.
//!
//! So a page is judged on:
//!
//! 1. [`Basis::Main`]: its main text without the host's learnt template,
//!    when that has at least [`MIN_OWN_CHARS`] letters and digits and is at
//!    least [`MIN_MAIN_SHARE_PCT`]% of the page's own text, or of what the
//!    page *says* (its link text left out: teasers, related stories) while
//!    at least [`MIN_MAIN_SHOWN_PCT`]% of its own text (issue 35: a story
//!    inside another site's template was judged on the template's teasers);
//! 2. [`Basis::Page`]: else its own text without the host's learnt template,
//!    when that has at least [`MIN_OWN_CHARS`]. The own text is the visible
//!    text outside what the page declares template (`nav`, `header`,
//!    `footer`, `aside`, ARIA landmark roles), link text and script-toggled
//!    (`hidden`) variants included (simcrawl-clean's `Page::own_text`);
//! 3. [`Basis::Thin`]: else (too little text of its own for the tiers'
//!    thresholds to say anything) that same short text, and it is a copy
//!    only of a page with nearly the same text ([`THIN_MIN_SIMILARITY`]): a
//!    page is never dropped for sharing a template and a sentence with
//!    another;
//! 4. [`Basis::Template`]: a page whose own text is all its host's learnt
//!    template is judged on its own text, template included, and is a copy
//!    only of a page with exactly that text.
//!
//! A page judged on something other than its main text still carries
//! that text as its *article* ([`Identity::article`]): another site's page
//! with the same article is its copy (a story inside another site's
//! template, issue 35; `simcrawl_dedup::Article`).
//!
//! A site's **front page** (`/`, `/index.html`, ...) is judged as if it had
//! no main text: on all it shows (2. to 4.), with no article. It is the
//! site's listing, and the one block of prose extraction finds there is
//! the theme's (an author box, a notice), which every site built on that
//! theme shows: two news sites sharing a WordPress theme had front pages
//! with one main text, the author box, and different stories (0.64 alike
//! as shown), and one was dropped for the other (issue 35).
//!
//! A crawler that learns each host's template (its repeated lines) passes
//! the lines it would leave out ([`identity_of`]'s `own_lines`); the
//! simcrawl crawler learns it from the own texts (so a footer or notice
//! the markup does not declare is learnt wherever it sits) and is left out
//! of the main text as well. Learning it from the main texts only (which
//! spares normalizing the own text of most pages) lost a table-of-contents
//! page to the footer its own text is mostly made of.
//!
//! ```
//! use simcrawl_dedup::identity::{identity_of, Basis};
//! let story = "The council approved the budget on Tuesday after a long debate. ".repeat(8);
//! let own = format!("Home News Sport\n{story}\nContact us");
//! let id = identity_of("http://news.example/budget", &story, (&own, 0), |_| None);
//! assert_eq!(id.basis, Basis::Main);
//! // A page that is mostly links around a short notice is judged on all it shows.
//! let links = "Chapter one: installing\nChapter two: configuring\n".repeat(20);
//! let notice = "This manual is licensed under the GPL.";
//! let own = format!("{notice}\n{links}");
//! let id = identity_of("http://docs.example/manual/", notice, (&own, 0), |_| None);
//! assert_eq!(id.basis, Basis::Page);
//! ```

use std::borrow::Cow;

use serde::Serialize;

use crate::article::{Article, PageScripts};
use crate::dedup::{Deduper, Document, Signature};
use crate::store::Store;

/// Letters and digits a text must have to identify a page by resemblance:
/// about three sentences of English, a short paragraph of Chinese. Below
/// it, a text is a heading, a notice or a footer, shared by too many pages
/// to tell them apart by resemblance (60 still lost help pages judged on
/// two short lines).
pub const MIN_OWN_CHARS: usize = 200;

/// The main text is the page's identity when it is at least this share (in
/// percent) of the page's own text (letters and digits, learnt template
/// left out). A smaller share is a notice above a page of links, or the
/// untranslated paragraph of a partly translated page whose tables and
/// headings are translated.
pub const MIN_MAIN_SHARE_PCT: usize = 80;

/// ... but a main text that is most of what the page *says* (its link
/// text left out: teasers, related stories) is its identity too when it
/// is at least this share (in percent) of all the page's own text. Below
/// it the page is mostly links, and its main text is a block beside them:
/// gtk-doc's reference index and its part pages share one introduction
/// above different tables of contents (docs/eval-apiref.md).
pub const MIN_MAIN_SHOWN_PCT: usize = 50;

/// Which text a page was judged on (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Its main text, without the host's template.
    Main,
    /// Its own text (link text included), without the host's template.
    Page,
    /// Too little own text: judged on it, a copy only of the same text.
    Thin,
    /// Own text that is all template: judged on it, a copy only of the
    /// same text.
    Template,
    /// `crawl dedup` of a `text` line: the text as given (no page around
    /// it to tell its main text from).
    Text,
}

impl Basis {
    /// Its name in the outputs (`basis`) and the archive's metadata records.
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Main => "main",
            Basis::Page => "page",
            Basis::Thin => "thin",
            Basis::Template => "template",
            Basis::Text => "text",
        }
    }
}

/// The resemblance a page with too little text of its own must reach, on
/// that text, to be a copy (`Signature::min_similarity`): nearly the same
/// text. Measured on the full HTML gate (docs/EVAL.md), all losing no page:
/// exact copies only (1.0) find 0.947 of the near-duplicate components,
/// 0.9 finds 0.960, 0.85 0.963; judging such pages on everything they show
/// instead (template included, 0.75 to 0.9) also lost none but dropped
/// help pages of twelve words of their own in a template of a hundred and
/// fifty as copies of each other.
pub const THIN_MIN_SIMILARITY: f64 = 0.9;

impl Basis {
    /// The stricter resemblance a page judged on this basis must reach to
    /// be dropped, if any: [`THIN_MIN_SIMILARITY`] for a page with too
    /// little text of its own, exactly the same text (1.0) for one whose own
    /// text is all template.
    #[must_use]
    pub fn min_similarity(self) -> Option<f64> {
        match self {
            Basis::Main | Basis::Page | Basis::Text => None,
            Basis::Thin => Some(THIN_MIN_SIMILARITY),
            Basis::Template => Some(1.0),
        }
    }
}

/// The text a page is judged on, and why.
#[derive(Debug)]
pub struct Identity<'a> {
    /// The text the title and content tiers judge the page on.
    pub text: Cow<'a, str>,
    /// Which text that is.
    pub basis: Basis,
    /// Some of the host's learnt template was left out.
    pub template_stripped: bool,
    /// The page's article when it is judged on something else: its main
    /// text (without the learnt template) when that has [`MIN_OWN_CHARS`]
    /// letters and digits. Another site's page with the same article is a
    /// copy ([`Article`]): a story inside another site's
    /// template is judged on the template, and matches its original only
    /// by its article (issue 35).
    pub article: Option<Cow<'a, str>>,
}

impl<'a> Identity<'a> {
    /// The identity with its texts owned: kept past the texts it was
    /// taken from (a crawler that identifies pages in order and signs
    /// them later).
    pub fn into_owned(self) -> Identity<'static> {
        Identity {
            text: Cow::Owned(self.text.into_owned()),
            basis: self.basis,
            template_stripped: self.template_stripped,
            article: self.article.map(|a| Cow::Owned(a.into_owned())),
        }
    }
}

/// The signature of a page at `url` titled `title`, identified as `id`,
/// showing `own` (its text outside declared template): signed on the
/// identity's text, with its article (the page's scripts, and its main
/// text when it is judged on something else), the stricter resemblance
/// its basis asks ([`Basis::min_similarity`]) and its extent
/// ([`crate::Extent`]). Every path that judges pages signs them here, so
/// none judges a page on less.
///
/// ```
/// use simcrawl_dedup::identity::{identity_of, sign_page};
/// use simcrawl_dedup::Deduper;
/// let d = Deduper::in_memory().unwrap();
/// let story = "The council approved the budget on Tuesday after a long debate. ".repeat(8);
/// let judge = |url: &str, frame: &str| {
///     let own = format!("{frame}\n{story}");
///     let id = identity_of(url, &story, (&own, 0), |_| None);
///     d.check_signed(&sign_page(&d, (url, "Budget approved"), &id, &own)).unwrap()
/// };
/// assert!(judge("http://news-a.example/budget", "News A: home, world, sport").is_unique());
/// // The story inside another site's frame is a copy.
/// let v = judge("http://news-b.example/2024/budget", "News B: politics, business");
/// assert_eq!(v.partner(), Some("http://news-a.example/budget"));
/// ```
pub fn sign_page<S: Store>(
    d: &Deduper<S>,
    (url, title): (&str, &str),
    id: &Identity<'_>,
    own: &str,
) -> Signature {
    let mut sig = d.sign(&Document::new(url, title, &id.text));
    sig.article = match (&id.article, id.basis) {
        (_, Basis::Main) => Article::Text(PageScripts::of(own)),
        (Some(article), _) => d.article(article, PageScripts::of(own)),
        (None, _) => Article::None,
    };
    sig.min_similarity = id.basis.min_similarity();
    sig.extent = Some(crate::Extent::of(own));
    sig
}

fn own_chars(text: &str) -> usize {
    crate::letters::count_alphanumeric(text)
}

/// The identity of the page at `url` with main text `main` and own text `own` (both
/// normalized, one block per line), `own_link_chars` characters of which
/// are link text (simcrawl-clean's `Page::own_link_chars`); `own_lines`
/// gives a text without its host's learnt template (`None`: nothing of it
/// is template, or nothing is learnt). The main text's
/// share is of the text the page *says*: teasers, related links and
/// comment links around a news article are links, and counting them made
/// the page's everything its identity, so a story inside another site's
/// template matched nothing (issue 35). What a page says outside its
/// main text (a function's description beside a shared block, the
/// translated tables of a partly translated page) still counts.
pub fn identity_of<'a>(
    url: &str,
    main: &'a str,
    (own, own_link_chars): (&'a str, usize),
    own_lines: impl Fn(&str) -> Option<String>,
) -> Identity<'a> {
    // A site's front page is its listing: no block of it is its identity.
    let main = if crate::article::is_front_page_url(url) {
        ""
    } else {
        main
    };
    let main_own = own_lines(main);
    let page_own = own_lines(own);
    let m = own_chars(main_own.as_deref().unwrap_or(main));
    let p = own_chars(page_own.as_deref().unwrap_or(own));
    let says = p.saturating_sub(own_link_chars);
    let main_is_identity = m * 100 >= p * MIN_MAIN_SHARE_PCT
        || (m * 100 >= says * MIN_MAIN_SHARE_PCT && m * 100 >= p * MIN_MAIN_SHOWN_PCT);
    if m >= MIN_OWN_CHARS && main_is_identity {
        return Identity {
            template_stripped: main_own.is_some(),
            text: main_own.map_or(Cow::Borrowed(main), Cow::Owned),
            basis: Basis::Main,
            article: None,
        };
    }
    let article = (m >= MIN_OWN_CHARS).then(|| main_own.map_or(Cow::Borrowed(main), Cow::Owned));
    let basis = if p >= MIN_OWN_CHARS {
        Basis::Page
    } else if p > 0 || page_own.is_none() {
        Basis::Thin
    } else {
        Basis::Template
    };
    match page_own {
        Some(text) if basis != Basis::Template => Identity {
            text: Cow::Owned(text),
            basis,
            template_stripped: true,
            article,
        },
        _ => Identity {
            text: Cow::Borrowed(own),
            basis,
            template_stripped: false,
            article,
        },
    }
}
