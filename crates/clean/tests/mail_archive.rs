//! A mail archive's message page is flat: the body of the page holds the
//! archive's navigation, the message's header fields, the message in a
//! `<pre>`, the thread's links and the prev/next subjects. Scoring picks the
//! whole body, so two archives of one list showed one message inside two
//! different frames and were not found as copies (docs/eval-mailarchive.md).
//!
//! Fixtures (`tests/fixtures/mail/`): one real message of the Linux sound
//! list (from the test corpus of notmuch 0.37, Debian's source package)
//! rendered by MHonArc 2.6.19 as a list archive and as the mirror of the
//! gate's mail set (`scripts/build-mailarchive-set.sh`); lgamma(3) from
//! Debian's manpages package rendered by man2html, a flat page whose
//! synopsis and examples are `<pre>` blocks with its sections between them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use simcrawl_clean::{Cleaner, Page};
use url::Url;

fn page(name: &str) -> Page {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mail")
        .join(name);
    let html = std::fs::read(path).unwrap();
    let url = Url::parse("http://archive.test/msg00002.html").unwrap();
    Cleaner::shared_default()
        .unwrap()
        .parse(&html, Some("text/html"), &url)
        .unwrap()
}

#[test]
fn a_list_archive_page_has_its_message_as_main_text() {
    let p = page("list-archive.html");
    assert!(
        p.text
            .starts_with("on sun, 2010-11-14 at 19:05 -0800, joe perches wrote:"),
        "{}",
        p.text
    );
    for frame in [
        "mailing list archive",
        "list-id:",
        "prev by date",
        "delivered-to:",
    ] {
        assert!(!p.text.contains(frame), "{frame:?} in the main text: {}", p.text);
        assert!(p.own_text.contains(frame), "{frame:?} not in the own text");
    }
}

#[test]
fn one_message_in_two_archives_has_one_main_text() {
    let list = page("list-archive.html");
    let mirror = page("mirror.html");
    assert_eq!(list.text, mirror.text);
    assert_ne!(list.own_text, mirror.own_text);
    // Judged on the message, not on the frame (which a crawler still
    // learns its host's template from).
    assert!(list.framed && mirror.framed);
    assert_eq!(list.judged_own(), mirror.judged_own());
    assert_eq!(list.judged_own().0, list.text);
}

#[test]
fn a_flat_man_page_keeps_its_sections_beside_its_pre_blocks() {
    let p = page("man2html-lgamma.html");
    assert!(!p.framed);
    assert_eq!(p.judged_own(), (p.own_text.as_str(), p.own_link_chars));
    assert!(p.text.contains("log gamma function"), "{}", p.text);
    assert!(p.text.contains("description"), "{}", p.text);
}

#[test]
fn a_flat_page_with_prose_beside_its_listing_keeps_the_prose() {
    let prose = "This page explains, in a long paragraph of its own, why the listing below \
        matters, what each of its parts does, and how a reader should run it, step by step, \
        with the caveats that apply on older systems, where the defaults differ.";
    let listing = "fn main() {\n    println!(\"hello\");\n}\n".repeat(12);
    let html = format!(
        "<html><head><title>t</title></head><body><h1>A listing</h1><p>{prose}</p>\
         <pre>{listing}</pre></body></html>"
    );
    let url = Url::parse("http://docs.test/listing.html").unwrap();
    let p = Cleaner::shared_default()
        .unwrap()
        .parse(html.as_bytes(), Some("text/html"), &url)
        .unwrap();
    assert!(!p.framed);
    assert!(p.text.contains("why the listing below"), "{}", p.text);
    assert!(p.text.contains("println"), "{}", p.text);
}
