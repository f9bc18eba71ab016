//! Articles across sites (issue 35): a story inside another site's
//! template is a copy of its original by its article, never of a sibling
//! on its own site, never of a page in a script it does not have, and
//! never by a text that is not an article.
#![allow(clippy::unwrap_used)]

use simcrawl_dedup::{Article, Deduper, Document, PageScripts, Signature, Verdict};

const STORY: &str = "The council met on Tuesday and approved the budget for the new bridge after a \
    debate that lasted well into the night; the vote was close, seven to six, and the mayor said \
    work would start in the spring once the contracts are signed and the river authority agrees.";

/// A template's text: different words for every `site`, as different
/// sites' menus, teasers and footers are.
fn frame(site: &str) -> String {
    const WORDS: &[&str] = &[
        "harbour", "violin", "granite", "pepper", "lantern", "meadow", "copper", "saddle", "orchid",
        "thunder", "marble", "falcon", "velvet", "canyon", "walnut", "ember", "glacier", "hammock",
        "juniper", "kettle", "lagoon", "mosaic", "nectar", "oyster", "parrot", "quartz", "ribbon",
    ];
    let seed = site
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    (0..60u64)
        .map(|i| WORDS[((seed.wrapping_mul(i + 1) >> 7) % WORDS.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

/// A page of `site` at `url`: its template around `story`, judged on all
/// of it (the story is under half), with `story` as its article.
fn page(d: &Deduper<simcrawl_dedup::MemoryStore>, url: &str, site: &str, story: &str) -> Signature {
    let shown = format!("{} {story} {}", frame(site), frame(site));
    let mut sig = d.sign(&Document::new(url, "", &shown));
    sig.article = d.article(story, PageScripts::of(&shown));
    sig
}

fn check(d: &Deduper<simcrawl_dedup::MemoryStore>, sig: &Signature) -> Verdict {
    d.check_signed(sig).unwrap()
}

#[test]
fn a_story_in_another_sites_template_is_a_copy_of_its_original() {
    let d = Deduper::in_memory().unwrap();
    assert!(check(&d, &page(&d, "http://a.test/1", "Alpha", STORY)).is_unique());
    let copy = check(&d, &page(&d, "http://b.test/9", "Beta", STORY));
    let dup = copy.duplicate().unwrap();
    assert_eq!((dup.of.as_str(), dup.article), ("http://a.test/1", true));
    assert!(dup.similarity.unwrap() >= simcrawl_dedup::ARTICLE_MIN_SIMILARITY);
    // The copy was not kept: a third site's copy names the original too.
    let third = check(&d, &page(&d, "http://c.test/2", "Gamma", STORY));
    assert_eq!(third.partner(), Some("http://a.test/1"));
}

#[test]
fn a_page_judged_on_its_article_matches_an_original_judged_on_its_template() {
    let d = Deduper::in_memory().unwrap();
    assert!(check(&d, &page(&d, "http://a.test/1", "Alpha", STORY)).is_unique());
    // A copy whose article is all it shows: judged on it (`Article::Text`).
    let mut sig = d.sign(&Document::new("http://b.test/7", "", STORY));
    sig.article = Article::Text(PageScripts::of(STORY));
    let v = check(&d, &sig);
    assert_eq!(v.partner(), Some("http://a.test/1"));
    assert!(v.duplicate().unwrap().article);
    // The same text with no article (a `text` line) does not match an
    // article alone: the original's whole page is not that text.
    let d2 = Deduper::in_memory().unwrap();
    assert!(check(&d2, &page(&d2, "http://a.test/1", "Alpha", STORY)).is_unique());
    let plain = d2.sign(&Document::new("http://b.test/2", "", STORY));
    assert!(check(&d2, &plain).is_unique());
}

#[test]
fn siblings_on_one_site_and_translations_are_not_copies() {
    let d = Deduper::in_memory().unwrap();
    assert!(check(&d, &page(&d, "http://a.test/1", "Alpha", STORY)).is_unique());
    // Same site (port and www. aside): siblings sharing a block.
    assert!(check(&d, &page(&d, "http://www.a.test:8080/2", "Alpha sports", STORY)).is_unique());
    // One path on another host: the same site's page in another language
    // (or a mirror), judged by what it shows, not by the block it shares.
    let d2 = Deduper::in_memory().unwrap();
    assert!(check(&d2, &page(&d2, "http://a.test/1", "Alpha", STORY)).is_unique());
    assert!(check(&d2, &page(&d2, "http://zh-tw.a.test/1", "Alpha zh-tw", STORY)).is_unique());
    // ... where another path on another site is a copy.
    assert!(check(&d2, &page(&d2, "http://b.test/1/", "Beta", STORY)).is_duplicate());
    // Another site, but the page around the block is Russian: a
    // translation that kept a block untranslated.
    let ru = "Совет собрался во вторник и утвердил бюджет нового моста после долгих споров, \
              которые продолжались до поздней ночи; голосование было близким.";
    let shown = format!("{ru} {STORY} {ru}");
    let mut sig = d.sign(&Document::new("http://ru.test/world/3", "", &shown));
    sig.article = d.article(STORY, PageScripts::of(&shown));
    assert!(check(&d, &sig).is_unique());
}

#[test]
fn a_different_story_in_the_same_template_is_kept() {
    let d = Deduper::in_memory().unwrap();
    assert!(check(&d, &page(&d, "http://a.test/1", "Alpha", STORY)).is_unique());
    let other = "Firefighters were called to a warehouse near the harbour on Sunday morning, where \
        a fire had spread through the roof; nobody was hurt, the owner said, and the cause is not \
        known yet, though an electrical fault in the old wiring is suspected by the inspectors.";
    assert!(check(&d, &page(&d, "http://b.test/1", "Alpha", other)).is_unique());
}

#[test]
fn with_articles_off_no_article_is_indexed_or_matched() {
    let d = Deduper::new(
        simcrawl_dedup::MemoryStore::new(),
        simcrawl_dedup::DedupConfig {
            articles: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(check(&d, &page(&d, "http://a.test/1", "Alpha", STORY)).is_unique());
    // One record (the page), none for its article.
    assert_eq!(d.stats().unwrap().documents, 1);
    assert!(check(&d, &page(&d, "http://b.test/9", "Beta", STORY)).is_unique());
    assert_eq!(d.article(STORY, PageScripts::of(STORY)), Article::None);
    // On, the same two pages: two records for the first, and a copy.
    let on = Deduper::in_memory().unwrap();
    assert!(check(&on, &page(&on, "http://a.test/1", "Alpha", STORY)).is_unique());
    assert_eq!(on.stats().unwrap().documents, 2);
    assert!(check(&on, &page(&on, "http://b.test/9", "Beta", STORY)).is_duplicate());
}

/// A page at `url` showing `shown`, judged on all of it, with `story` as
/// its article and the extent of what it shows.
fn shown_page(d: &Deduper<simcrawl_dedup::MemoryStore>, url: &str, shown: &str) -> Signature {
    let mut sig = d.sign(&Document::new(url, "", shown));
    sig.article = d.article(STORY, PageScripts::of(shown));
    sig.extent = Some(simcrawl_dedup::Extent::of(shown));
    sig
}

#[test]
fn one_path_on_two_hosts_matches_by_article_only_when_the_pages_show_the_same() {
    // One manual page on two hosts: one judged on its main text (the
    // story is most of what it shows), its twin on everything it shows
    // (the same note beside the story, under the share that makes a main
    // text the page's identity on its host): their judged texts differ,
    // their articles and what they show do not.
    let note = "This page is part of the system manual of the release; the index lists its other \
        sections, the authors and the license, and each section says which package installs it \
        and which options of the program it describes were added in which version.";
    let shown = format!("{note} {STORY}");
    let d = Deduper::in_memory().unwrap();
    let mut main = d.sign(&Document::new("http://man.example/man7/x.7.html", "", STORY));
    main.article = Article::Text(PageScripts::of(&shown));
    main.extent = Some(simcrawl_dedup::Extent::of(&shown));
    assert!(check(&d, &main).is_unique());
    let twin = check(
        &d,
        &shown_page(
            &d,
            "http://mirror.example/man7/x.7.html",
            &format!("{shown} {note}"),
        ),
    );
    assert_eq!(twin.partner(), Some("http://man.example/man7/x.7.html"));
    assert!(twin.duplicate().unwrap().article);
    // The same article at one path on a host whose page shows much more
    // of its own (another site that happens to use the path, a
    // translation around a kept block): not a copy.
    let framed = format!("{} {STORY} {}", frame("Beta"), frame("Gamma"));
    let other = check(
        &d,
        &shown_page(&d, "http://news-b.example/man7/x.7.html", &framed),
    );
    assert!(other.is_unique(), "{other:?}");
}
