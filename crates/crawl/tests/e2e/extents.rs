//! End-to-end: two reference pages of one host under one generated title,
//! one list inside the other (issue 35, `simcrawl_dedup::extent`). The
//! member list shows an introduction of links beside its list (its own
//! text, not its main text); the function list is most of the same lines.
//! Judged on their main texts the two are near-duplicates; as pages the
//! member list is more than twice the size, so both are kept, over
//! loopback and by `crawl dedup` over their `html` lines. A print copy of
//! the member list is still dropped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::support::server::{Reply, Request, Server};
use crate::support::{CRAWL, field, gibberish, path_of, read_jsonl, site_crawl, tempdir};

/// A doxygen-like "Namespace Members" page: `intro` links above a list of
/// the first `n` members.
fn members_page(intro: bool, n: usize) -> String {
    let links: String = if intro {
        (0..14)
            .map(|i| format!("<a href=\"/doc{i}.html\">{}</a> ", gibberish(500 + i, 9)))
            .collect()
    } else {
        String::new()
    };
    let items: String = (0..n)
        .map(|i| format!("<li>operator{i}() : __gnu_cxx, std::chrono, std, std::rel_ops</li>"))
        .collect();
    format!(
        "<!doctype html><html><head><title>libx: Namespace Members</title></head><body>\
         <div class=\"header\"><p>{links}</p></div>\
         <div class=\"contents\"><h3>- o -</h3><ul>{items}</ul></div></body></html>"
    )
}

fn site() -> Server {
    Server::start(|req: &Request| match req.path.as_str() {
        "/" => Reply::html(
            "<!doctype html><html><head><title>libx</title></head><body>\
             <a href=\"/members_o.html\">all</a> <a href=\"/members_func_o.html\">functions</a> \
             <a href=\"/print/members_o.html\">print</a></body></html>"
                .to_string(),
        ),
        "/members_o.html" | "/print/members_o.html" => Reply::html(members_page(true, 60)),
        "/members_func_o.html" => Reply::html(members_page(false, 54)),
        _ => Reply::status(404),
    })
}

const LISTS: [&str; 3] = ["/members_o.html", "/members_func_o.html", "/print/members_o.html"];

/// The verdicts on the three lists: both lists kept, the print copy (or
/// the member list, whichever came second) dropped for the other.
fn assert_two_lists_kept_and_the_copy_dropped(kept: &[Value], dups: &[Value], log: &dyn Fn() -> String) {
    let is = |v: &Value, p: &str| path_of(field(v, "url")) == p;
    assert!(
        kept.iter().any(|v| is(v, "/members_func_o.html")),
        "the function list must be kept: {dups:?}\n{}",
        log()
    );
    let dropped: Vec<&Value> = dups.iter().filter(|v| LISTS.iter().any(|p| is(v, p))).collect();
    assert_eq!(
        dropped.len(),
        1,
        "one copy of the member list: {dups:?}\n{}",
        log()
    );
    let d = dropped[0];
    let copies = ["/members_o.html", "/print/members_o.html"];
    assert!(copies.contains(&path_of(field(d, "url")).as_str()), "{d}");
    assert!(
        copies.contains(&path_of(field(d, "duplicate_of")).as_str()),
        "{d}"
    );
}

#[test]
fn a_list_inside_a_larger_page_of_its_host_is_kept_and_its_copy_is_not() {
    let server = site();
    let dir = tempdir("e2e-extents-");
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 1, "");
    dirs.run_ok(Duration::from_secs(60));
    let (kept, dups) = (dirs.kept(), dirs.duplicates());
    assert_two_lists_kept_and_the_copy_dropped(&kept, &dups, &|| dirs.log());
    // `crawl check` on the function list says why the member list, alike
    // enough by text, is not its partner.
    let check = Command::new(CRAWL)
        .arg("check")
        .arg(format!("{}/members_func_o.html", server.base()))
        .arg("--config")
        .arg(&dirs.config)
        .arg("--data-dir")
        .arg(&dirs.data)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let report: Value = serde_json::from_slice(&check.stdout).unwrap();
    let refused: Vec<&Value> = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["url"].as_str().unwrap_or("").contains("members_o.html"))
        .collect();
    assert!(!refused.is_empty(), "{report}");
    for c in refused {
        let why = c["refused"].as_str().unwrap_or_default();
        assert!(why.contains("too far apart in size"), "{c}");
        // How alike the two look as shown (their outlines): a list can be
        // at most 177/284 alike with the larger one, so never a copy.
        let shown = c["shown"].as_f64();
        assert!(shown.is_some_and(|s| (0.0..0.8).contains(&s)), "{c}");
    }

    // The same pages as `html` lines of `crawl dedup`, the function list
    // first this time.
    let input = dir.path().join("docs.jsonl");
    let docs: String = [LISTS[1], LISTS[0], LISTS[2]]
        .iter()
        .map(|p| {
            let html = if *p == LISTS[1] {
                members_page(false, 54)
            } else {
                members_page(true, 60)
            };
            serde_json::json!({"url": format!("http://libx.test{p}"), "html": html}).to_string() + "\n"
        })
        .collect();
    std::fs::write(&input, docs).unwrap();
    let out = dir.path().join("batch");
    let o = Command::new(CRAWL)
        .arg("dedup")
        .arg("--input")
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (kept, dups) = (
        read_jsonl(&out.join("kept.jsonl")),
        read_jsonl(&out.join("duplicates.jsonl")),
    );
    assert_two_lists_kept_and_the_copy_dropped(&kept, &dups, &|| {
        String::from_utf8_lossy(&o.stderr).into_owned()
    });
    assert_eq!(
        path_of(field(&dups[0], "url")),
        "/print/members_o.html",
        "the print copy, third, is the one dropped: {dups:?}"
    );
}
