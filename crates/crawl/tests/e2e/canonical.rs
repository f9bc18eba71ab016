//! End-to-end: declared canonicals decide which copy is kept
//! (`crawl.canonical_first`, see src/canonical.rs). Before, the copy
//! fetched first was kept: two runs of one site kept `tomatoes-copy.html`
//! once and `tomatoes.html` the other time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::support::server::{Reply, Request, Server};
use crate::support::{field, gibberish, page, path_of, site_crawl, tempdir};

/// A page with `<link rel=canonical href=to>` in its head.
fn declaring(title: &str, body: &str, links: &[String], to: &str) -> String {
    page(title, body, links).replacen(
        "<title>",
        &format!("<link rel=\"canonical\" href=\"{to}\"><title>"),
        1,
    )
}

/// The tomatoes site: the home page links the copy and the original in
/// the given order; the copy declares the original canonical. Also a
/// print version declaring a page nothing links (`/hidden`), a page whose
/// declared canonical is missing (404), and one that declares it in a
/// `Link` header only.
fn tomatoes(copy_first: bool) -> Server {
    let base: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
    let b = base.clone();
    let recipe = gibberish(7, 150);
    let hidden = gibberish(8, 150);
    let orphan = gibberish(9, 150);
    let headed = gibberish(10, 150);
    let server = Server::start(move |req: &Request| {
        let abs = |p: &str| format!("{}{p}", b.get().map_or("", String::as_str));
        match req.path.as_str() {
            "/" => {
                let mut links = vec!["/tomatoes-copy.html".to_string(), "/tomatoes.html".to_string()];
                if !copy_first {
                    links.reverse();
                }
                links.extend(["/print".to_string(), "/orphan".to_string(), "/headed".to_string()]);
                Reply::html(page("Home", &gibberish(6, 100), &links))
            }
            "/tomatoes.html" => Reply::html(page("Tomatoes", &recipe, &[])),
            "/tomatoes-copy.html" => Reply::html(declaring("Tomatoes", &recipe, &[], &abs("/tomatoes.html"))),
            "/print" => Reply::html(declaring("Hidden", &hidden, &[], "/hidden")),
            "/hidden" => Reply::html(page("Hidden", &hidden, &[])),
            "/orphan" => Reply::html(declaring("Orphan", &orphan, &[], "/gone")),
            "/headed" => Reply::HtmlWithHeader {
                header: format!("link: <{}>; rel=\"canonical\"", abs("/headed-original")),
                body: page("Headed", &headed, &[]),
            },
            "/headed-original" => Reply::html(page("Headed", &headed, &[])),
            _ => Reply::status(404),
        }
    });
    base.set(server.base()).unwrap();
    server
}

fn paths(lines: &[Value]) -> BTreeSet<String> {
    lines.iter().map(|v| path_of(field(v, "url"))).collect()
}

fn of_path(lines: &[Value], path: &str) -> String {
    let line = lines
        .iter()
        .find(|v| path_of(field(v, "url")) == path)
        .unwrap_or_else(|| panic!("no line for {path}: {lines:?}"));
    path_of(field(line, "duplicate_of"))
}

/// The kept and dropped copies are the same whichever the home page links
/// first: the declared canonical is kept, the page declaring it is its
/// copy; a canonical nothing links is fetched and kept; a missing one
/// loses nothing (the page is kept at its second fetch); a `Link` header
/// counts as the HTML's link.
#[test]
fn the_declared_canonical_is_kept_whichever_copy_comes_first() {
    for copy_first in [true, false] {
        let server = tomatoes(copy_first);
        let dir = tempdir("e2e-canonical-");
        let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 1, "");
        dirs.run_ok(Duration::from_secs(60));
        let (kept, dups) = (dirs.kept(), dirs.duplicates());
        let want: BTreeSet<String> = ["/", "/tomatoes.html", "/hidden", "/orphan", "/headed-original"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(paths(&kept), want, "copy first: {copy_first}\n{}", dirs.log());
        assert_eq!(of_path(&dups, "/tomatoes-copy.html"), "/tomatoes.html");
        assert_eq!(of_path(&dups, "/print"), "/hidden");
        assert_eq!(of_path(&dups, "/headed"), "/headed-original");
        // Every page has one line; those that waited were fetched twice
        // and counted once. Waited: the print version, the orphan and the headed page; the
        // copy only when the original was not judged yet when it was.
        let stats = dirs.stats();
        let waits = stats["canonical_waits"].as_u64().unwrap();
        assert!((3..=4).contains(&waits), "{stats}");
        let lines = kept.len() + dups.len() + dirs.errors().len();
        assert_eq!(stats["fetched"].as_u64(), Some(lines as u64), "{stats}");
        let counts = server.counts();
        assert_eq!(counts.get("/print"), Some(&2), "{counts:?}");
        assert_eq!(counts.get("/tomatoes.html"), Some(&1), "{counts:?}");
    }
}

/// A site whose every page declares a wrong canonical (a template bug:
/// each page of a chain names the next one): no page is lost, and once
/// enough of them proved not to be copies the host's canonicals are no
/// longer followed, so the rest of the site is fetched once.
#[test]
fn wrong_canonicals_lose_no_page_and_stop_costing_fetches() {
    const PAGES: u64 = 40;
    let server = Server::start(move |req: &Request| match req.path.as_str() {
        "/" => Reply::html(page("Home", &gibberish(1, 100), &["/p0".to_string()])),
        p => match p.strip_prefix("/p").and_then(|n| n.parse::<u64>().ok()) {
            Some(n) if n < PAGES => {
                let next = format!("/p{}", n + 1);
                let links = if n + 1 < PAGES {
                    vec![next.clone()]
                } else {
                    Vec::new()
                };
                Reply::html(declaring(
                    &format!("Page {n}"),
                    &gibberish(100 + n, 120),
                    &links,
                    &next,
                ))
            }
            _ => Reply::status(404),
        },
    });
    let dir = tempdir("e2e-canonical-wrong-");
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 1, "");
    dirs.run_ok(Duration::from_secs(60));
    let kept = paths(&dirs.kept());
    assert_eq!(
        kept.len() as u64,
        PAGES + 1,
        "every page kept: {kept:?}\n{}",
        dirs.log()
    );
    let fetches: u32 = server
        .counts()
        .iter()
        .filter(|(p, _)| p.starts_with("/p"))
        .map(|(_, n)| n)
        .sum();
    // DISTRUST_AFTER (8) pages waited and were kept, and those fetched
    // meanwhile waited too; then no more. Without the bound, 2 x 40.
    let waits = dirs.stats()["canonical_waits"].as_u64().unwrap();
    assert!(waits >= 8, "{waits}");
    assert_eq!(u64::from(fetches), PAGES + waits);
    assert!(waits < PAGES / 2, "{waits} waits for {PAGES} pages");
    assert!(dirs.log().contains("not followed any more"), "{}", dirs.log());
}

/// Off (`crawl.canonical_first = false`): judged in fetch order, as
/// before, each page fetched once.
#[test]
fn canonical_first_off_judges_in_fetch_order() {
    let server = tomatoes(true);
    let dir = tempdir("e2e-canonical-off-");
    let dirs = site_crawl(
        dir.path(),
        &format!("{}/", server.base()),
        1,
        "canonical_first = false",
    );
    dirs.run_ok(Duration::from_secs(60));
    let counts = server.counts();
    assert!(counts.values().all(|&n| n == 1), "{counts:?}");
    assert_eq!(dirs.stats()["canonical_waits"], 0);
    assert!(
        !counts.contains_key("/hidden"),
        "an undeclared-only page is not queued: {counts:?}"
    );
}

/// Two workers sharing the crawl through Redis keep the declared canonical
/// too (the waiting entry travels through the shared frontier).
#[test]
fn shared_workers_keep_the_declared_canonical() {
    let Some(url) = crate::redis::redis_url("shared_workers_keep_the_declared_canonical") else {
        return;
    };
    let server = tomatoes(true);
    let dir = tempdir("e2e-canonical-redis-");
    let s = crate::redis::Shared::new(
        dir.path(),
        &format!("{}/", server.base()),
        &url,
        &crate::redis::namespace("canonical"),
        30_000,
    );
    let workers = ["c1", "c2"];
    let mut children: Vec<_> = workers.iter().map(|w| s.spawn(w)).collect();
    s.wait_ok(&mut children, &workers);
    let (mut kept, mut dups) = (Vec::new(), Vec::new());
    for (_, file, v) in s.lines(&workers) {
        match file {
            "kept" => kept.push(v),
            "duplicates" => dups.push(v),
            _ => {}
        }
    }
    assert!(
        paths(&kept).contains("/tomatoes.html"),
        "{kept:?}\n{}",
        s.logs(&workers)
    );
    assert!(!paths(&kept).contains("/tomatoes-copy.html"), "{kept:?}");
    assert_eq!(of_path(&dups, "/tomatoes-copy.html"), "/tomatoes.html");
    assert_eq!(of_path(&dups, "/print"), "/hidden");
}
