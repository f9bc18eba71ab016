//! A page's identity: the text it is judged on by the title and content
//! tiers, shared by the crawler and `crawl dedup` over `html` lines.
//!
//! The content tier drops a page whose text resembles a kept page's. That
//! is only safe when the text is what makes the page what it is. Main-content
//! extraction gets most pages right, but three kinds of page keep little of
//! their own in it, and were dropped as copies of unrelated pages
//! (docs/EVAL.md, "The HTML gate"):
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
//!    (`hidden`) variants included ([`simcrawl_clean::Page::own_text`]);
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
//! The host's template is learnt from the own texts (so a footer or notice
//! the markup does not declare is learnt wherever it sits) and is left out
//! of the main text as well. Learning it from the main texts only (which
//! spares normalizing the own text of most pages) lost a table-of-contents
//! page to the footer its own text is mostly made of.

use std::borrow::Cow;

use serde::Serialize;
use simcrawl_dedup::{Article, PageScripts};

use crate::template::Templates;

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
    pub text: Cow<'a, str>,
    pub basis: Basis,
    /// Some of the host's learnt template was left out.
    pub template_stripped: bool,
    /// The page's article when it is judged on something else: its main
    /// text (without the learnt template) when that has [`MIN_OWN_CHARS`]
    /// letters and digits. Another site's page with the same article is a
    /// copy ([`simcrawl_dedup::Article`]): a story inside another site's
    /// template is judged on the template, and matches its original only
    /// by its article (issue 35).
    pub article: Option<Cow<'a, str>>,
}

/// What a page offers the article rule, before signing.
#[derive(Debug, Clone, Copy)]
pub enum ArticleText<'a> {
    /// No article (a `text` line, or too little main text).
    None,
    /// The page is judged on its article; the scripts of its own text.
    Judged(PageScripts),
    /// The page is judged on something else; its article, and the scripts
    /// of its own text.
    Separate(&'a str, PageScripts),
}

impl<'a> Identity<'a> {
    /// The page's [`ArticleText`], the scripts taken from its own text
    /// `own` (everything it shows outside declared template).
    pub fn article_text(&'a self, own: &str) -> ArticleText<'a> {
        match (&self.article, self.basis) {
            (_, Basis::Main) => ArticleText::Judged(PageScripts::of(own)),
            (Some(a), _) => ArticleText::Separate(a, PageScripts::of(own)),
            (None, _) => ArticleText::None,
        }
    }

    /// The identity with its texts owned: kept past the texts it was
    /// taken from ([`identities_in_order`]).
    pub fn into_owned(self) -> Identity<'static> {
        Identity {
            text: Cow::Owned(self.text.into_owned()),
            basis: self.basis,
            template_stripped: self.template_stripped,
            article: self.article.map(|a| Cow::Owned(a.into_owned())),
        }
    }
}

/// A page's signature with its article ([`Identity::article_text`]).
pub fn sign_page<S: simcrawl_dedup::Store>(
    d: &simcrawl_dedup::Deduper<S>,
    doc: &simcrawl_dedup::Document<'_>,
    article: ArticleText<'_>,
) -> simcrawl_dedup::Signature {
    let mut sig = d.sign(doc);
    sig.article = match article {
        ArticleText::None => Article::None,
        ArticleText::Judged(scripts) => Article::Text(scripts),
        ArticleText::Separate(text, scripts) => d.article(text, scripts),
    };
    sig
}

fn own_chars(text: &str) -> usize {
    text.chars()
        .filter(|&c| simcrawl_dedup::letters::is_alphanumeric(c))
        .count()
}

/// The identity of a page of `host` with main text `main` and own text
/// `own` (both normalized, one block per line), counting none of it as
/// link text.
#[cfg(test)]
pub fn identity<'a>(templates: &Templates, host: &str, main: &'a str, own: &'a str) -> Identity<'a> {
    identity_of(templates, host, main, (own, 0))
}

/// [`identity`] of a page whose own text has `own_link_chars` characters
/// of link text ([`simcrawl_clean::Page::own_link_chars`]). The main text's
/// share is of the text the page *says*: teasers, related links and
/// comment links around a news article are links, and counting them made
/// the page's everything its identity, so a story inside another site's
/// template matched nothing (issue 35). What a page says outside its
/// main text (a function's description beside a shared block, the
/// translated tables of a partly translated page) still counts.
pub fn identity_of<'a>(
    templates: &Templates,
    host: &str,
    main: &'a str,
    (own, own_link_chars): (&'a str, usize),
) -> Identity<'a> {
    let main_own = templates.own_lines(host, main);
    let page_own = templates.own_lines(host, own);
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

/// One page of a sequence judged in order (`crawl dedup` over `html`
/// lines): its host, main and own text.
#[derive(Debug, Clone, Copy)]
pub struct InOrder<'a> {
    pub host: &'a str,
    pub main: &'a str,
    pub own: &'a str,
    pub own_link_chars: usize,
}

/// For a sequence of pages (`None` for a line that is not one), in order:
/// each page's identity with what was learnt from the pages before it, and
/// the page observed. Observing does not depend on verdicts, so this is
/// "identify, judge, observe" page by page with the signing left parallel.
pub fn identities_in_order<'a>(
    templates: &Templates,
    pages: impl Iterator<Item = Option<InOrder<'a>>>,
) -> Vec<Option<Identity<'static>>> {
    pages
        .map(|p| {
            let p = p?;
            let id = identity_of(templates, p.host, p.main, (p.own, p.own_link_chars));
            let out = id.into_owned();
            templates.observe(p.host, p.own);
            Some(out)
        })
        .collect()
}

/// A text's first `max_chars` characters, on one line: what a person needs
/// to recognise a page in `crawl report`.
#[must_use]
pub fn excerpt(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n >= max_chars {
            out.push('…');
            break;
        }
        out.push(if c == '\n' { ' ' } else { c });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::template::TemplateSettings;

    fn learnt(pages: &[&str]) -> Templates {
        let t = Templates::load(
            &TemplateSettings {
                min_pages: 3,
                ..TemplateSettings::default()
            },
            None,
        )
        .unwrap();
        for p in pages {
            t.observe("h", p);
        }
        t
    }

    const FOOTER: &str = "copyright 2001-2023 python software foundation, all rights reserved. \
        this page is licensed under the python software foundation license version 2. \
        see history and license for more information. the python software foundation \
        is a non-profit corporation, please donate.";

    fn links(n: usize) -> String {
        (0..n)
            .map(|i| format!("module number {i} of the library\n"))
            .collect()
    }

    fn article(topic: &str) -> String {
        format!(
            "an article about {topic}, told over several long sentences that give the page \
             enough text of its own to be judged on it, with details, numbers and names: \
             the council met on tuesday and approved the budget for {topic} after a debate \
             that lasted well into the night, and the vote was close"
        )
    }

    #[test]
    fn a_page_of_links_is_judged_on_its_links_not_on_its_footer() {
        let t = learnt(&[
            &format!("{}\n{FOOTER}", article("sockets")),
            &format!("{}\n{FOOTER}", article("threads")),
            &format!("{}\n{FOOTER}", article("files")),
        ]);
        let own = format!("{}{FOOTER}", links(12));
        let id = identity(&t, "h", FOOTER, &own);
        assert_eq!(id.basis, Basis::Page);
        assert_eq!(id.text, links(12).trim_end());
        assert!(id.template_stripped);
    }

    #[test]
    fn before_the_template_is_learnt_a_footer_is_too_small_a_share_of_the_page() {
        let t = learnt(&[]);
        let own = format!("{}{FOOTER}", links(40));
        let id = identity(&t, "h", FOOTER, &own);
        assert_eq!(
            id.basis,
            Basis::Page,
            "{} of {}",
            own_chars(FOOTER),
            own_chars(&own)
        );
        assert_eq!(id.text, own);
        assert!(!id.template_stripped);
    }

    #[test]
    fn an_article_is_judged_on_its_main_text_without_the_template() {
        let t = learnt(&[
            &format!("home news sports\n{}\n{FOOTER}", article("a")),
            &format!("home news sports\n{}\n{FOOTER}", article("b")),
            &format!("home news sports\n{}\n{FOOTER}", article("c")),
        ]);
        let main = format!("{}\n{FOOTER}", article("parks"));
        let own = format!("home news sports\n{main}");
        let id = identity(&t, "h", &main, &own);
        assert_eq!(id.basis, Basis::Main);
        assert_eq!(id.text, article("parks"));
        assert!(id.template_stripped);
    }

    /// Characters of `text` other than whitespace (what `own_link_chars`
    /// counts).
    fn chars_of(text: &str) -> usize {
        text.chars().filter(|c| !c.is_whitespace()).count()
    }

    #[test]
    fn an_article_among_teasers_is_judged_on_its_main_text() {
        // A story, then teaser links of the site's other stories: under
        // 80% of what the page shows, all of what it says.
        let teasers: String = (0..6)
            .map(|i| format!("read more: the {i}th story of the day\n"))
            .collect();
        let main = article("the harbour");
        let own = format!("{main}\n{teasers}");
        let id = identity_of(&learnt(&[]), "h", &main, (&own, chars_of(&teasers)));
        assert_eq!((id.basis, id.text.as_ref()), (Basis::Main, main.as_str()));
        // Counted as text, the same teasers keep the page on everything.
        assert_eq!(identity(&learnt(&[]), "h", &main, &own).basis, Basis::Page);
    }

    #[test]
    fn a_block_beside_a_table_of_contents_is_no_identity_even_if_the_rest_is_links() {
        // gtk-doc's reference index: its introduction is most of what it
        // says, but under half of what it shows (the rest: links).
        let toc = links(60);
        let intro = article("the type system");
        let own = format!("{intro}\n{toc}");
        let id = identity_of(&learnt(&[]), "h", &intro, (&own, chars_of(&toc)));
        assert_eq!(id.basis, Basis::Page);
    }

    #[test]
    fn what_a_page_says_outside_its_main_text_keeps_it_on_its_whole_text() {
        // A shared block picked as main text beside the function's own
        // description (text, not links).
        let shared = article("date functions");
        let own = format!("{shared}\n{}\n{}", article("yearfrac"), article("its arguments"));
        assert_eq!(
            identity_of(&learnt(&[]), "h", &shared, (&own, 0)).basis,
            Basis::Page
        );
    }

    #[test]
    fn a_page_with_little_of_its_own_is_judged_on_it_at_a_stricter_resemblance() {
        let t = learnt(&[
            &format!("{}\n{FOOTER}", article("x")),
            &format!("{}\n{FOOTER}", article("y")),
            &format!("{}\n{FOOTER}", article("z")),
        ]);
        let own = format!("layout\nopens a submenu\n{FOOTER}");
        let id = identity(&t, "h", FOOTER, &own);
        assert_eq!(id.basis, Basis::Thin);
        assert_eq!(id.text, "layout\nopens a submenu");
        assert_eq!(id.basis.min_similarity(), Some(THIN_MIN_SIMILARITY));
        // Nothing learnt yet, a long footer cannot be told from content:
        // it is most of the page.
        let id = identity(&learnt(&[]), "h", FOOTER, &own);
        assert_eq!((id.basis, id.text.as_ref()), (Basis::Main, FOOTER));
        // A short page with nothing learnt is judged on all of its own text.
        let id = identity(&learnt(&[]), "h", "opens a submenu", "layout\nopens a submenu");
        assert_eq!(
            (id.basis, id.text.as_ref()),
            (Basis::Thin, "layout\nopens a submenu")
        );
    }

    #[test]
    fn a_page_made_of_its_host_s_template_is_judged_on_it() {
        let t = learnt(&[
            &format!("{}\n{FOOTER}", article("x")),
            &format!("{}\n{FOOTER}", article("y")),
            &format!("{}\n{FOOTER}", article("z")),
        ]);
        let id = identity(&t, "h", FOOTER, FOOTER);
        assert_eq!(id.basis, Basis::Template);
        assert_eq!(id.text, FOOTER);
        assert_eq!(id.basis.min_similarity(), Some(1.0));
        assert_eq!(Basis::Main.min_similarity(), None);
        assert_eq!(Basis::Page.min_similarity(), None);
    }

    #[test]
    fn excerpts_are_one_line_and_capped() {
        assert_eq!(excerpt("ab\ncd", 10), "ab cd");
        assert_eq!(excerpt("中文字符", 2), "中文…");
    }
}
