//! `crawl dedup` over real mail archive pages (MHonArc's, from the gate's
//! mail set, docs/eval-mailarchive.md): replies of one thread share their
//! archive's frame (header fields, thread links, prev/next subjects) and
//! their title, not their message. Judged with the frame, two of them were
//! dropped one for the other (0.41 and 0.62 alike by their messages);
//! judged on the message, only the mirror's copy of a reply and a reply
//! cross-posted to a second list are duplicates.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

#[allow(dead_code)]
mod support;

const PAGES: &[(&str, &str)] = &[
    // Two short replies first, before the thread's title is its
    // archive's template (`TEMPLATE_TITLE_PAGES`): judged on their header
    // fields they were 0.70 alike, and the second went as a copy of the
    // first in the title tier; the second's copy on another list's
    // archive followed it.
    ("http://alsa-devel.lists.test/msg00003.html", "short-reply-a.html"),
    ("http://alsa-devel.lists.test/msg00005.html", "short-reply-b.html"),
    (
        "http://linux-kernel.lists.test/msg00104.html",
        "short-reply-b-cross.html",
    ),
    (
        "http://alsa-devel.lists.test/msg00006.html",
        "thread-reply-a.html",
    ),
    (
        "http://alsa-devel.lists.test/msg00008.html",
        "thread-reply-b.html",
    ),
    (
        "http://alsa-devel.lists.test/msg00025.html",
        "thread-reply-c.html",
    ),
    (
        "http://alsa-devel.lists.test/msg00031.html",
        "thread-reply-d.html",
    ),
    ("http://mirror.test/msg00115.html", "thread-reply-b-mirror.html"),
];

#[test]
fn replies_of_one_thread_are_kept_and_a_mirrored_reply_is_dropped() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clean/tests/fixtures/mail");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("mail.jsonl");
    let mut lines = String::new();
    for (url, file) in PAGES {
        let html = std::fs::read_to_string(fixtures.join(file)).unwrap();
        lines.push_str(&serde_json::json!({ "url": url, "html": html }).to_string());
        lines.push('\n');
    }
    std::fs::write(&input, lines).unwrap();
    let out = dir.path().join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_crawl"))
        .arg("dedup")
        .arg("--input")
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let drops = support::read_jsonl(&out.join("duplicates.jsonl"));
    let drops: Vec<(&str, &str)> = drops
        .iter()
        .map(|v| (support::field(v, "url"), support::field(v, "duplicate_of")))
        .collect();
    assert_eq!(
        drops,
        [
            (
                "http://linux-kernel.lists.test/msg00104.html",
                "http://alsa-devel.lists.test/msg00005.html"
            ),
            (
                "http://mirror.test/msg00115.html",
                "http://alsa-devel.lists.test/msg00008.html"
            )
        ]
    );
}
