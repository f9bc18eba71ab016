//! A mail archive's message page is flat: the body of the page holds the
//! archive's navigation, the message's header fields, the message in a
//! `<pre>`, the thread's links and the prev/next subjects. Scoring picks the
//! whole body, so two archives of one list showed one message inside two
//! different frames and were not found as copies (docs/eval-mailarchive.md).
//!
//! Fixtures (`tests/fixtures/mail/`): one real message of the Linux sound
//! list (from the test corpus of notmuch 0.37, Debian's source package)
//! rendered by MHonArc 2.6.19 as a list archive and as the mirror of the
//! gate's mail set (`scripts/build-mailarchive-set.sh`), and the same
//! message served by public-inbox 1.9 (the archiver of lore.kernel.org:
//! header fields, a blank line and the body in one `<pre>`, then after an
//! `<hr>` the thread's overview and the reply instructions in `<pre>`
//! blocks of their own); a reply on the linux-fsdevel archive whose header
//! fields include a long `Organization` and `Cc` list; lgamma(3) from
//! Debian's manpages package rendered by man2html, a flat page whose
//! synopsis and examples are `<pre>` blocks with its sections between them;
//! two short replies of one thread by one sender (alsa-devel's msg00003
//! and msg00005 in the gate's mail set) and the second's copy on the
//! linux-kernel archive.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use simcrawl_clean::{Cleaner, Page};
use url::Url;

/// A page of `html` at `url`, cleaned with the default settings.
fn parse(html: &[u8], url: &str) -> Page {
    let url = Url::parse(url).unwrap();
    Cleaner::shared_default()
        .unwrap()
        .parse(html, Some("text/html"), &url)
        .unwrap()
}

fn page(name: &str) -> Page {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mail")
        .join(name);
    parse(&std::fs::read(path).unwrap(), "http://archive.test/msg00002.html")
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
fn public_inbox_shows_the_message_without_its_header_block_and_thread() {
    let lore = page("public-inbox.html");
    let list = page("list-archive.html");
    assert!(lore.framed);
    assert!(
        lore.text
            .starts_with("on sun, 2010-11-14 at 19:05 -0800, joe perches wrote:"),
        "{}",
        lore.text
    );
    // what the archive adds: the header block above the body, the thread
    // overview and the reply instructions after the break
    for frame in [
        "from: liam girdwood",
        "message-id:",
        "thread overview",
        "reply instructions",
        "git send-email",
    ] {
        assert!(
            !lore.text.contains(frame),
            "{frame:?} in the main text: {}",
            lore.text
        );
        assert!(lore.own_text.contains(frame), "{frame:?} not in the own text");
    }
    // the body as the list archive shows it
    assert!(lore.text.contains("acked-by: liam girdwood"), "{}", lore.text);
    let words = |t: &str| {
        t.split_whitespace()
            .map(str::to_owned)
            .collect::<std::collections::BTreeSet<_>>()
    };
    let (a, b) = (words(&lore.text), words(&list.text));
    let shared = a.intersection(&b).count();
    assert!(
        shared * 10 >= a.union(&b).count() * 9,
        "{}\n---\n{}",
        lore.text,
        list.text
    );
}

#[test]
fn a_header_block_needs_two_fields_and_a_blank_line() {
    // A message whose body opens with one in-body field keeps it.
    let body = "From: Someone Else <else@example.org>\n\nThis patch fixes the driver, \
        which failed to probe on the older boards because the clock was not enabled, \
        and it was tested on three of them by the people who reported it.\n"
        .repeat(3);
    let html = format!(
        "<html><head><title>t</title></head><body><pre>{body}</pre><hr><pre>overview</pre></body></html>"
    );
    let p = parse(html.as_bytes(), "http://archive.test/m.html");
    assert!(p.framed);
    assert!(p.text.starts_with("from: someone else"), "{}", p.text);
    assert!(!p.text.contains("overview"), "{}", p.text);
}

#[test]
fn header_fields_with_commas_are_not_prose_beside_the_message() {
    // `Organization: Red Hat UK Ltd. Registered Address: ..., Windsor,
    // Berkshire, ...` and a `Cc` list are longer than half this short
    // reply, and have commas, but they are fields, not an introduction.
    let p = page("list-archive-long-fields.html");
    assert!(p.framed);
    assert!(
        p.text.starts_with("suresh jayaraman <sjayaraman@suse.de> wrote:"),
        "{}",
        p.text
    );
    assert!(!p.text.contains("organization:"), "{}", p.text);
    assert!(p.own_text.contains("organization: red hat uk ltd"));
}

#[test]
fn a_short_reply_under_long_header_fields_is_its_message() {
    // Two replies of one thread by one sender, of two and three lines
    // under sixteen header fields (`Cc` of seven people, six `List-*`):
    // the fields are nearly all their text and nearly the same in both.
    // Counted against the message's share of the page they made each be
    // judged on its fields, 0.70 alike, where a long reply was judged on
    // its message alone.
    let a = page("short-reply-a.html");
    let b = page("short-reply-b.html");
    for (p, says) in [
        (&a, "this doesn't apply against current -next"),
        (&b, "applied, thanks."),
    ] {
        assert!(p.framed, "{}", p.text);
        assert!(p.text.starts_with("on "), "{}", p.text);
        assert!(p.text.contains(says), "{}", p.text);
        for field in ["cc:", "list-id:", "delivered-to:", "to: joe perches"] {
            assert!(!p.text.contains(field), "{field:?} in the main text: {}", p.text);
            assert!(p.own_text.contains(field), "{field:?} not in the own text");
        }
        assert_eq!(p.judged_own().0, p.text);
    }
    assert!(!a.text.contains("applied, thanks.") && !b.text.contains("doesn't apply"));
    // The same message on another list's archive: the same main text.
    let cross = page("short-reply-b-cross.html");
    assert_eq!(cross.text, b.text);
    assert_ne!(cross.own_text, b.own_text);
}

#[test]
fn prose_that_opens_with_a_word_and_a_colon_is_still_prose() {
    let prose = "Note: this page explains, in a long paragraph of its own, why the listing \
        below matters, what each of its parts does, and how a reader should run it, step by \
        step, with the caveats that apply on older systems, where the defaults differ.";
    let listing = "fn main() {\n    println!(\"hello\");\n}\n".repeat(12);
    let html =
        format!("<html><head><title>t</title></head><body><p>{prose}</p><pre>{listing}</pre></body></html>");
    let p = parse(html.as_bytes(), "http://docs.test/listing.html");
    assert!(!p.framed);
    assert!(p.text.contains("why the listing"), "{}", p.text);
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
    let p = parse(html.as_bytes(), "http://docs.test/listing.html");
    assert!(!p.framed);
    assert!(p.text.contains("why the listing below"), "{}", p.text);
    assert!(p.text.contains("println"), "{}", p.text);
}
