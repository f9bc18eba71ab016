//! A page's identity (`simcrawl_dedup::identity`: the text it is judged
//! on, and why) with the crawl's learnt templates: what each host repeats
//! is left out of the texts compared.

#[cfg(test)]
pub use simcrawl_dedup::identity::THIN_MIN_SIMILARITY;
pub use simcrawl_dedup::identity::{Basis, Identity, sign_page};

use simcrawl_clean::TextBlocks;

use crate::template::Templates;

/// The identity of a page of `host` with main text `main` and own text
/// `own` (both normalized, one block per line), counting none of it as
/// link text.
#[cfg(test)]
pub fn identity<'a>(templates: &Templates, host: &str, main: &'a str, own: &'a str) -> Identity<'a> {
    identity_of(templates, ("http://h/page.html", host), main, (own, 0))
}

/// [`simcrawl_dedup::identity::identity_of`] of the page at `url`, with
/// `host`'s template as learnt so far left out.
pub fn identity_of<'a>(
    templates: &Templates,
    (url, host): (&str, &str),
    main: &'a str,
    (own, own_link_chars): (&'a str, usize),
) -> Identity<'a> {
    identity_with_blocks(templates, (url, host), main, (own, own_link_chars), None)
}

/// [`identity_of`] with the blocks of a text digested beforehand
/// (`blocks`, the page's own text's, which its learner counts too): when
/// that text is one the identity strips, its lines are not digested again.
pub fn identity_with_blocks<'a>(
    templates: &Templates,
    (url, host): (&str, &str),
    main: &'a str,
    (own, own_link_chars): (&'a str, usize),
    blocks: Option<&TextBlocks<'_>>,
) -> Identity<'a> {
    simcrawl_dedup::identity::identity_of(url, main, (own, own_link_chars), |text| {
        templates.own_lines_known(host, text, blocks)
    })
}

/// One page of a sequence judged in order (`crawl dedup` over `html`
/// lines): its host, main and own text.
#[derive(Debug, Clone, Copy)]
pub struct InOrder<'a> {
    pub url: &'a str,
    pub host: &'a str,
    pub main: &'a str,
    /// What its host's template is learnt from.
    pub own: &'a str,
    /// What it is judged on, with its link chars
    /// (`simcrawl_clean::Page::judged_own`).
    pub judged_own: (&'a str, usize),
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
            let own = templates.is_learning().then(|| TextBlocks::of(p.own));
            let id = identity_with_blocks(templates, (p.url, p.host), p.main, p.judged_own, own.as_ref());
            let out = id.into_owned();
            match &own {
                Some(own) => templates.observe_blocks(p.host, &own.page_blocks()),
                None => templates.observe(p.host, p.own),
            }
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
            chars_of(FOOTER),
            chars_of(&own)
        );
        assert_eq!(id.text, own);
        assert!(!id.template_stripped);
    }

    #[test]
    fn an_article_is_judged_on_its_main_text_without_the_template() {
        let t = learnt_footer("home news sports\n");
        let main = format!("{}\n{FOOTER}", article("parks"));
        let own = format!("home news sports\n{main}");
        let id = identity(&t, "h", &main, &own);
        assert_eq!(id.basis, Basis::Main);
        assert_eq!(id.text, article("parks"));
        assert!(id.template_stripped);
    }

    /// A learner that has seen three pages of one host, each `prefix`,
    /// an article and [`FOOTER`]: the prefix and the footer are template.
    fn learnt_footer(prefix: &str) -> Templates {
        let pages: Vec<String> = ["x", "y", "z"]
            .iter()
            .map(|topic| format!("{prefix}{}\n{FOOTER}", article(topic)))
            .collect();
        learnt(&pages.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Characters of `text` other than whitespace (what `own_link_chars`
    /// counts).
    fn chars_of(text: &str) -> usize {
        text.chars().filter(|c| !c.is_whitespace()).count()
    }

    #[test]
    fn blocks_digested_beforehand_strip_as_the_text_does() {
        let t = learnt_footer("");
        // The main text holds the footer too: both texts are stripped.
        let main = format!("{}\n{FOOTER}", article("the harbour"));
        let own = format!("a menu\n{main}\nlayout");
        let url = ("http://h/page.html", "h");
        let plain = identity_of(&t, url, &main, (&own, 0));
        assert!(plain.template_stripped);
        let own_blocks = TextBlocks::of(&own);
        let reused = identity_with_blocks(&t, url, &main, (&own, 0), Some(&own_blocks));
        assert_eq!((reused.basis, &reused.text), (plain.basis, &plain.text));
        // Blocks of a copy of the text are not its blocks: it is digested
        // as if none were given, and says the same.
        let copy = own.clone();
        let copied = TextBlocks::of(&copy);
        let other = identity_with_blocks(&t, url, &main, (&own, 0), Some(&copied));
        assert_eq!((other.basis, &other.text), (plain.basis, &plain.text));
        // The main text is never stripped by the own text's blocks.
        assert!(!plain.text.contains("a menu") && !plain.text.contains(FOOTER));
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
        let id = identity_of(
            &learnt(&[]),
            ("http://h/page.html", "h"),
            &main,
            (&own, chars_of(&teasers)),
        );
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
        let id = identity_of(
            &learnt(&[]),
            ("http://h/page.html", "h"),
            &intro,
            (&own, chars_of(&toc)),
        );
        assert_eq!(id.basis, Basis::Page);
    }

    #[test]
    fn what_a_page_says_outside_its_main_text_keeps_it_on_its_whole_text() {
        // A shared block picked as main text beside the function's own
        // description (text, not links).
        let shared = article("date functions");
        let own = format!("{shared}\n{}\n{}", article("yearfrac"), article("its arguments"));
        assert_eq!(
            identity_of(&learnt(&[]), ("http://h/page.html", "h"), &shared, (&own, 0)).basis,
            Basis::Page
        );
    }

    #[test]
    fn a_page_with_little_of_its_own_is_judged_on_it_at_a_stricter_resemblance() {
        let t = learnt_footer("");
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
        let t = learnt_footer("");
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
