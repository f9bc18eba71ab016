//! End-to-end tests of the crawler daemon: the real `crawl` binary against
//! real HTTP servers on 127.0.0.1 (see `support/server.rs`).
//!
//! The fixture site (one crawl, shared by the `fixture_*` tests) has URL
//! variants, a robots.txt Disallow, a redirect chain, a 500-then-200 page, a
//! second host whose page never answers, a Chinese article in simplified,
//! traditional and re-templated copies, and distinct pages titled "Index".
//! The `big_site_*` tests interrupt a crawl of a generated site (SIGKILL,
//! SIGTERM) and check that the restarted crawl ends with the same pages kept
//! as an uninterrupted one, each exactly once, with no torn output line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use crate::support::server::{Reply, Request, Server};
use crate::support::{Dirs, field, gibberish, multiset, page, path_of, zh};
use serde_json::Value;

/// The path of a URL without its query and fragment: the page it names on
/// the fixture servers, whatever variant of the URL the crawler kept.
fn route(url: &str) -> String {
    path_of(url).split(['?', '#']).next().unwrap_or("/").to_string()
}

fn tempdir() -> tempfile::TempDir {
    crate::support::tempdir("e2e-crawl-")
}

// ---------------------------------------------------------------------------
// The fixture site

#[derive(Debug, Clone)]
enum Route {
    Page(String),
    Text(String),
    Redirect(u16, String),
    /// 500 on the first request, the page afterwards.
    FailOnce(String),
    /// Accept, read the request, never answer.
    Hang,
}

type Routes = Arc<RwLock<HashMap<String, Route>>>;

/// A server answering from a route table filled in after it started (the
/// pages need its port); unknown paths are 404.
fn route_server() -> (Server, Routes) {
    let routes: Routes = Arc::default();
    let r = routes.clone();
    let server = Server::start(
        move |req: &Request| match r.read().unwrap().get(&req.path).cloned() {
            Some(Route::Page(html)) => Reply::html(html),
            Some(Route::Text(t)) => Reply::text(t),
            Some(Route::Redirect(status, location)) => Reply::Redirect { status, location },
            Some(Route::FailOnce(html)) if req.nth > 1 => Reply::html(html),
            Some(Route::FailOnce(_)) => Reply::status(500),
            Some(Route::Hang) => Reply::Hang,
            None => Reply::status(404),
        },
    );
    (server, routes)
}

/// Pages of site A that must each be fetched exactly once.
const NEWS: usize = 6;

/// What the fixture crawl left behind (its directories are gone).
#[derive(Debug)]
struct Fixture {
    a: String,
    b: String,
    success: bool,
    elapsed: Duration,
    kept: Vec<Value>,
    duplicates: Vec<Value>,
    errors: Vec<Value>,
    stats: Value,
    log: String,
    counts_a: HashMap<String, u32>,
    counts_b: HashMap<String, u32>,
}

impl Fixture {
    fn kept_routes(&self) -> Vec<String> {
        self.kept.iter().map(|v| route(field(v, "url"))).collect()
    }

    fn kept_url(&self, r: &str) -> Option<&str> {
        self.kept.iter().map(|v| field(v, "url")).find(|u| route(u) == r)
    }

    fn count_a(&self, path: &str) -> u32 {
        self.counts_a.get(path).copied().unwrap_or(0)
    }
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(run_fixture)
}

fn run_fixture() -> Fixture {
    let (sa, ra) = route_server();
    let (sb, rb) = route_server();
    let (a, b) = (sa.base(), sb.base());
    let port = sa.port();

    // Five spellings of the same URL; every news page links to every other
    // one through a different spelling.
    let variant = |j: usize, k: usize| -> String {
        match k % 5 {
            0 => format!("/news/{j}"),
            1 => format!("/news/{j}?utm_source=x"),
            2 => format!("/news/{j}#frag"),
            3 => format!("HTTP://127.0.0.1:{port}/news/{j}"),
            _ => format!("/news/{j}?utm_medium=email&utm_source=feed#comments"),
        }
    };
    let mut routes = HashMap::new();
    routes.insert(
        "/robots.txt".to_string(),
        Route::Text("User-agent: *\nDisallow: /private/\n".to_string()),
    );
    let mut index_links: Vec<String> = (1..=NEWS).map(|j| variant(j, j)).collect();
    index_links.extend(
        [
            "/private/secret",
            "/r/a",
            "/flaky",
            "/zh/s",
            "/zh/t",
            "/zh/r",
            "/idx/1",
            "/idx/2",
            "/idx/3",
            "/list?b=2&a=1",
            "/?utm_source=self#top",
        ]
        .map(String::from),
    );
    index_links.push(format!("{b}/hang"));
    index_links.push(format!("{b}/ok"));
    routes.insert(
        "/".to_string(),
        Route::Page(page("Fixture home", &gibberish(1, 80), &index_links)),
    );
    for i in 1..=NEWS {
        let mut links: Vec<String> = (1..=NEWS)
            .filter(|&j| j != i)
            .map(|j| variant(j, i + j))
            .collect();
        links.push(if i % 2 == 0 {
            "/list?a=1&b=2".to_string()
        } else {
            "/list?utm_campaign=z&b=2&a=1".to_string()
        });
        links.push(format!("HTTP://127.0.0.1:{port}/?utm_source=news"));
        links.push("/private/secret#x".to_string());
        routes.insert(
            format!("/news/{i}"),
            Route::Page(page(&format!("News {i}"), &gibberish(100 + i as u64, 80), &links)),
        );
    }
    let zh_links = vec![variant(1, 0), "/zh/s".to_string(), "/zh/t".to_string()];
    routes.insert(
        "/list".to_string(),
        Route::Page(page("List", &gibberish(2, 80), &[variant(2, 3), variant(3, 4)])),
    );
    routes.insert(
        "/private/secret".to_string(),
        Route::Page(page("Secret", &gibberish(3, 80), &[])),
    );
    routes.insert("/r/a".to_string(), Route::Redirect(301, "/r/b".to_string()));
    routes.insert("/r/b".to_string(), Route::Redirect(302, format!("{a}/r/c")));
    routes.insert(
        "/r/c".to_string(),
        Route::Page(page("Redirect target", &gibberish(4, 80), &[])),
    );
    routes.insert(
        "/flaky".to_string(),
        Route::FailOnce(page("Flaky", &gibberish(5, 80), &[])),
    );
    routes.insert(
        "/zh/s".to_string(),
        Route::Page(zh::standard_page(zh::TITLE_SIMPLIFIED, zh::SIMPLIFIED, &zh_links)),
    );
    routes.insert(
        "/zh/t".to_string(),
        Route::Page(zh::standard_page(
            zh::TITLE_TRADITIONAL,
            zh::TRADITIONAL,
            &zh_links,
        )),
    );
    routes.insert(
        "/zh/r".to_string(),
        Route::Page(zh::retemplated_page(zh::TITLE_SIMPLIFIED, zh::SIMPLIFIED)),
    );
    for i in 1..=3u64 {
        routes.insert(
            format!("/idx/{i}"),
            Route::Page(page("Index", &gibberish(200 + i, 80), &["/idx/1".to_string()])),
        );
    }
    *ra.write().unwrap() = routes;

    let mut routes_b = HashMap::new();
    // robots.txt answers (404: allow all), so the host is usable; only
    // /hang never answers.
    routes_b.insert("/hang".to_string(), Route::Hang);
    routes_b.insert(
        "/ok".to_string(),
        Route::Page(page("Other host", &gibberish(6, 80), &[format!("{a}/news/1")])),
    );
    *rb.write().unwrap() = routes_b;

    let dir = tempdir();
    // No requeues: /hang fails after its fetch's own attempts (requeues have
    // their own tests below).
    let config = crate::support::write_config(dir.path(), 2, "max_requeues = 0");
    let seeds = dir.path().join("seeds.txt");
    std::fs::write(
        &seeds,
        format!("# fixture site\n{a}/\nnot a url at all\nftp://127.0.0.1/pub/file\n\n"),
    )
    .unwrap();
    let dirs = Dirs::new(dir.path(), &config, &seeds);
    let (status, elapsed) = dirs.run(Duration::from_secs(90));
    eprintln!("fixture crawl: {elapsed:?}");
    let f = Fixture {
        a,
        b,
        success: status.success(),
        elapsed,
        kept: dirs.kept(),
        duplicates: dirs.duplicates(),
        errors: dirs.errors(),
        stats: dirs.stats(),
        log: dirs.log(),
        counts_a: sa.counts(),
        counts_b: sb.counts(),
    };
    assert!(f.success, "crawl failed; stderr:\n{}", f.log);
    f
}

#[test]
fn fixture_every_page_fetched_once_and_url_variants_collapse() {
    let f = fixture();
    assert!(f.success, "{}", f.log);
    let mut once: Vec<String> = (1..=NEWS).map(|i| format!("/news/{i}")).collect();
    once.extend(
        [
            "/",
            "/list",
            "/r/a",
            "/r/b",
            "/r/c",
            "/zh/s",
            "/zh/t",
            "/zh/r",
            "/idx/1",
            "/idx/2",
            "/idx/3",
            "/robots.txt",
        ]
        .map(String::from),
    );
    for p in &once {
        assert_eq!(
            f.count_a(p),
            1,
            "{p} requested {} times: {:?}",
            f.count_a(p),
            f.counts_a
        );
    }
    assert_eq!(f.counts_b.get("/ok"), Some(&1), "{:?}", f.counts_b);
    // No URL the server does not know was requested (a mangled variant).
    let unknown: Vec<&String> = f
        .counts_a
        .keys()
        .filter(|p| !once.contains(p) && !["/flaky", "/sitemap.xml"].contains(&p.as_str()))
        .collect();
    assert!(unknown.is_empty(), "unexpected requests: {unknown:?}");

    // Each page appears once in the outputs, whatever spelling came first.
    let mut outputs: Vec<String> = f.kept_routes();
    outputs.extend(f.duplicates.iter().map(|v| route(field(v, "url"))));
    for (r, n) in multiset(outputs.clone()) {
        assert_eq!(n, 1, "{r} appears {n} times in kept.jsonl + duplicates.jsonl");
    }
    let mut expected: BTreeSet<String> = once.iter().cloned().collect();
    expected.extend(["/flaky".to_string(), "/ok".to_string()]);
    for gone in ["/robots.txt", "/r/b", "/r/c"] {
        expected.remove(gone);
    }
    assert_eq!(outputs.into_iter().collect::<BTreeSet<_>>(), expected);

    // Counters agree with the files.
    let n = |k: &str| {
        f.stats[k]
            .as_u64()
            .unwrap_or_else(|| panic!("stats.{k}: {}", f.stats))
    };
    assert_eq!(n("kept") as usize, f.kept.len());
    assert_eq!((n("dup_title") + n("dup_content")) as usize, f.duplicates.len());
    let errors: u64 = f.stats["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(errors as usize, f.errors.len());
    assert!(n("dup_url") > 0, "{}", f.stats);
    // Every fetched page left exactly one line.
    assert_eq!(
        (f.kept.len() + f.duplicates.len() + f.errors.len()) as u64,
        n("fetched"),
        "{}",
        f.stats
    );
}

#[test]
fn fixture_robots_disallow_is_honoured() {
    let f = fixture();
    assert_eq!(f.count_a("/robots.txt"), 1);
    assert_eq!(f.count_a("/private/secret"), 0, "disallowed path was requested");
    assert!(
        f.kept_routes().iter().all(|r| !r.starts_with("/private/")),
        "a disallowed page was kept"
    );
    let e: Vec<&Value> = f
        .errors
        .iter()
        .filter(|v| route(field(v, "url")) == "/private/secret")
        .collect();
    assert_eq!(e.len(), 1, "{:?}", f.errors);
    assert_eq!(field(e[0], "kind"), "robots_disallowed");
}

#[test]
fn fixture_redirect_chain_is_followed() {
    let f = fixture();
    assert_eq!(
        (f.count_a("/r/a"), f.count_a("/r/b"), f.count_a("/r/c")),
        (1, 1, 1)
    );
    let line = f
        .kept
        .iter()
        .find(|v| route(field(v, "url")) == "/r/a")
        .unwrap_or_else(|| panic!("/r/a not kept: {:?}", f.kept_routes()));
    assert_eq!(field(line, "final_url"), format!("{}/r/c", f.a));
    assert_eq!(line["status"], 200);
    assert!(!f.kept_routes().contains(&"/r/c".to_string()));
}

#[test]
fn fixture_500_then_200_is_retried_and_kept() {
    let f = fixture();
    assert_eq!(f.count_a("/flaky"), 2, "one 500, then the page");
    assert!(f.kept_url("/flaky").is_some(), "{:?}", f.kept_routes());
    assert!(
        f.errors.iter().all(|v| route(field(v, "url")) != "/flaky"),
        "{:?}",
        f.errors
    );
}

#[test]
fn fixture_hung_host_does_not_block_the_crawl() {
    let f = fixture();
    // 3 attempts of 2 s plus backoff: about 6.5 s. Generous bound.
    assert!(f.elapsed < Duration::from_secs(30), "crawl took {:?}", f.elapsed);
    let hang = format!("{}/hang", f.b);
    let e: Vec<&Value> = f.errors.iter().filter(|v| field(v, "url") == hang).collect();
    assert_eq!(e.len(), 1, "{:?}", f.errors);
    assert_eq!(field(e[0], "kind"), "timeout", "{}", e[0]);
    // retries = 2: three attempts, each timed out.
    assert_eq!(f.counts_b.get("/hang"), Some(&3), "{:?}", f.counts_b);
    // The other host's other page, and every page of site A, were fetched.
    assert!(f.kept_url("/ok").is_some());
    assert_eq!(
        f.errors.len(),
        2,
        "only /hang and the robots-disallowed page: {:?}",
        f.errors
    );
    for i in 1..=NEWS {
        assert!(f.kept_url(&format!("/news/{i}")).is_some(), "news {i} missing");
    }
}

#[test]
fn fixture_traditional_and_retemplated_copies_are_content_duplicates() {
    let f = fixture();
    let copies = ["/zh/s", "/zh/t", "/zh/r"];
    let kept: Vec<&str> = copies.iter().filter_map(|c| f.kept_url(c)).collect();
    assert_eq!(kept.len(), 1, "exactly one copy kept, got {kept:?}");
    let dups: Vec<&Value> = f
        .duplicates
        .iter()
        .filter(|v| copies.contains(&route(field(v, "url")).as_str()))
        .collect();
    assert_eq!(dups.len(), 2, "{:?}", f.duplicates);
    for d in dups {
        assert!(
            ["content", "title"].contains(&field(d, "tier")),
            "unexpected tier: {d}"
        );
        assert_eq!(field(d, "duplicate_of"), kept[0], "{d}");
        assert!(d["distance"].as_u64().is_some(), "{d}");
        assert!(d["similarity"].as_f64().is_some_and(|s| s >= 0.7), "{d}");
    }
}

#[test]
fn fixture_distinct_pages_sharing_a_title_are_all_kept() {
    let f = fixture();
    for i in 1..=3 {
        let url = f
            .kept_url(&format!("/idx/{i}"))
            .unwrap_or_else(|| panic!("/idx/{i} not kept; duplicates: {:?}", f.duplicates));
        let line = f.kept.iter().find(|v| field(v, "url") == url).unwrap();
        assert_eq!(field(line, "title").to_lowercase(), "index");
    }
}

#[test]
fn fixture_invalid_seed_lines_are_reported_and_skipped() {
    let f = fixture();
    // Lines 3 and 4 of seeds.txt; line 2 (the site) was crawled anyway.
    assert!(
        f.log.contains("seeds.txt:3:") && f.log.contains("not a url at all"),
        "no report of seed line 3 in stderr:\n{}",
        f.log
    );
    assert!(
        f.log.contains("seeds.txt:4:") && f.log.contains("ftp://127.0.0.1/pub/file"),
        "no report of seed line 4 in stderr:\n{}",
        f.log
    );
    assert!(!f.log.contains("seeds.txt:2:"), "{}", f.log);
    assert!(f.kept_url("/").is_some());
}

// ---------------------------------------------------------------------------
// Interrupted crawls of a generated site

/// Pages of the generated site.
const BIG: usize = 2000;

/// The generated site: page i links to 2i+1, 2i+2, two random pages and
/// i+1, through a mix of URL spellings; every page has its own text. Each
/// answer takes 2 ms, so the crawl is still running when it is interrupted.
fn big_site() -> Server {
    Server::start(|req: &Request| {
        let Some(i) = crate::support::generated_page(&req.path, BIG) else {
            return Reply::status(404);
        };
        std::thread::sleep(Duration::from_millis(2));
        let mut r = crate::support::rng(i as u64 + 7_777);
        let targets = [
            2 * i + 1,
            2 * i + 2,
            (r() % BIG as u64) as usize,
            (r() % BIG as u64) as usize,
            (i + 1) % BIG,
        ];
        let links: Vec<String> = targets
            .iter()
            .filter(|&&t| t < BIG)
            .enumerate()
            .map(|(k, t)| match (i + k) % 3 {
                0 => format!("/p/{t}"),
                1 => format!("/p/{t}?utm_source=gen"),
                _ => format!("/p/{t}#top"),
            })
            .collect();
        Reply::html(page(
            &format!("Page {i}"),
            &gibberish(10_000 + i as u64, 60),
            &links,
        ))
    })
}

fn big_dirs(root: &Path, server: &Server) -> Dirs {
    crate::support::site_crawl(root, &format!("{}/p/0", server.base()), 8, "")
}

fn all_big_routes() -> BTreeSet<String> {
    (0..BIG).map(|i| format!("/p/{i}")).collect()
}

/// Starts a crawl and returns it once kept.jsonl has `fraction` of the site
/// (panics if the crawl ends first: it was too fast to interrupt).
fn start_and_wait_for(dirs: &Dirs, fraction: f64) -> std::process::Child {
    let mut child = dirs.spawn();
    let want = (BIG as f64 * fraction) as usize;
    dirs.wait_until(
        &mut child,
        Duration::from_secs(60),
        &format!("it could be interrupted at {want} pages"),
        || dirs.kept_lines_now() >= want,
    );
    child
}

/// The outputs of a finished (possibly resumed) crawl of the generated
/// site: every line parses, no page appears twice in kept + duplicates, no
/// error, counters equal to the files; returns the routes kept.
fn check_outputs(dirs: &Dirs) -> BTreeSet<String> {
    let kept = dirs.kept();
    let dups = dirs.duplicates();
    let errors = dirs.errors();
    assert!(errors.is_empty(), "{errors:?}");
    let all = kept.iter().chain(&dups).map(|v| route(field(v, "url")));
    for (r, n) in multiset(all) {
        assert_eq!(n, 1, "{r} appears {n} times in kept.jsonl + duplicates.jsonl");
    }
    let stats = dirs.stats();
    assert_eq!(stats["kept"].as_u64(), Some(kept.len() as u64), "{stats}");
    assert_eq!(
        stats["fetched"].as_u64(),
        Some((kept.len() + dups.len()) as u64),
        "{stats}"
    );
    kept.iter().map(|v| route(field(v, "url"))).collect()
}

#[test]
fn big_site_kill9_twice_then_restart_matches_an_uninterrupted_crawl() {
    let server = big_site();

    let reference_dir = tempdir();
    let reference = big_dirs(reference_dir.path(), &server);
    let (st, took) = reference.run(Duration::from_secs(120));
    assert!(st.success(), "{st}; stderr:\n{}", reference.log());
    let reference_kept = check_outputs(&reference);
    // Every page has its own text: all are kept.
    assert_eq!(reference_kept, all_big_routes());
    eprintln!("uninterrupted crawl of {BIG} pages: {took:?}");

    // Killed twice (early, then after a resume), then left to finish.
    let dir = tempdir();
    let dirs = big_dirs(dir.path(), &server);
    for fraction in [0.1, 0.5] {
        let mut child = start_and_wait_for(&dirs, fraction);
        child.kill().unwrap(); // SIGKILL
        let st = child.wait().unwrap();
        assert!(!st.success());
        let at_kill = dirs.kept_lines_now();
        assert!(at_kill < BIG, "killed after the crawl had finished");
        eprintln!("killed with {at_kill} lines in kept.jsonl");
    }

    dirs.run_ok(Duration::from_secs(120));
    assert!(dirs.log().contains("resuming"), "{}", dirs.log());
    assert_eq!(check_outputs(&dirs), reference_kept);
}

#[test]
fn big_site_sigterm_exits_zero_and_restart_completes() {
    let server = big_site();
    let dir = tempdir();
    let dirs = big_dirs(dir.path(), &server);
    let mut child = start_and_wait_for(&dirs, 0.4);
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let st = crate::support::wait_for(&mut child, Duration::from_secs(40))
        .unwrap_or_else(|| panic!("crawl ignored SIGTERM; stderr:\n{}", dirs.log()));
    assert_eq!(st.code(), Some(0), "stderr:\n{}", dirs.log());
    // A clean stop leaves consistent outputs and the rest in the frontier.
    let stopped = check_outputs(&dirs);
    assert!(stopped.len() < BIG, "SIGTERM did not stop the crawl early");
    eprintln!("stopped by SIGTERM with {} pages kept", stopped.len());

    dirs.run_ok(Duration::from_secs(120));
    let kept = check_outputs(&dirs);
    assert!(stopped.is_subset(&kept));
    assert_eq!(kept, all_big_routes());
}

#[test]
fn big_site_page_budget_counts_across_resumes_and_depth_limit_holds() {
    let server = big_site();
    let dir = tempdir();
    let root = dir.path();
    let seed = format!("{}/p/0", server.base());

    // --max-pages 100: exactly 100 pages, then a rerun with 250 adds 150.
    let dirs = crate::support::site_crawl(root, &seed, 8, "max_pages = 100");
    dirs.run_ok(Duration::from_secs(60));
    assert_eq!(check_outputs(&dirs).len(), 100);
    let dirs = crate::support::site_crawl(root, &seed, 8, "max_pages = 250");
    dirs.run_ok(Duration::from_secs(60));
    assert_eq!(check_outputs(&dirs).len(), 250);

    // max_depth = 2 from /p/0: only pages within two links of the seed.
    let depth_dir = tempdir();
    let dirs = crate::support::site_crawl(depth_dir.path(), &seed, 8, "");
    dirs.edit_config("max_depth = 100", "max_depth = 2");
    dirs.run_ok(Duration::from_secs(60));
    let kept = dirs.kept();
    assert!(kept.iter().all(|k| k["depth"].as_u64().unwrap() <= 2));
    let depth2 = kept.iter().filter(|k| k["depth"].as_u64() == Some(2)).count();
    assert!(depth2 > 0, "no page at depth 2");
    let requested: u32 = server
        .counts()
        .iter()
        .filter(|(p, _)| p.starts_with("/p/"))
        .map(|(_, n)| n)
        .sum();
    assert!(requested < (BIG as u32), "depth limit did not stop the crawl");
}

#[test]
fn robots_txt_unavailable_then_back_the_pages_wait_and_are_kept() {
    // robots.txt answers 503 twice, then allows everything.
    let server = Server::start(|req: &Request| match req.path.as_str() {
        "/robots.txt" if req.nth <= 2 => Reply::status(503),
        "/robots.txt" => Reply::text("User-agent: *\nAllow: /\n"),
        "/" => Reply::html(page("首页", &gibberish(1, 60), &["/a".to_string()])),
        "/a" => Reply::html(page("文章", &gibberish(2, 60), &[])),
        _ => Reply::status(404),
    });
    let dir = tempdir();
    let dirs = crate::support::site_crawl(dir.path(), &format!("{}/", server.base()), 2, "");
    dirs.edit_config(
        "robots_unavailable_retry_ms = 60000",
        "robots_unavailable_retry_ms = 300",
    );
    dirs.run_ok(Duration::from_secs(60));
    let kept: BTreeSet<String> = dirs.kept().iter().map(|v| route(field(v, "url"))).collect();
    assert_eq!(kept, BTreeSet::from(["/".to_string(), "/a".to_string()]));
    assert!(dirs.errors().is_empty(), "{:?}", dirs.errors());
    assert!(server.counts()["/robots.txt"] >= 3);
}

#[test]
fn noindex_pages_are_followed_but_not_kept() {
    let server = Server::start(|req: &Request| match req.path.as_str() {
        "/" => Reply::html(
            page("首页", &gibberish(3, 60), &["/a".to_string()])
                .replace("<head>", "<head><meta name=\"robots\" content=\"noindex\">"),
        ),
        "/a" => Reply::html(page("文章", &gibberish(4, 60), &[])),
        _ => Reply::status(404),
    });
    let dir = tempdir();
    let dirs = crate::support::site_crawl(dir.path(), &format!("{}/", server.base()), 2, "");
    dirs.run_ok(Duration::from_secs(60));
    let kept: Vec<String> = dirs.kept().iter().map(|v| route(field(v, "url"))).collect();
    assert_eq!(kept, ["/a"]);
    assert!(dirs.duplicates().is_empty());
    // The noindex page is accounted for in errors.jsonl, kind "noindex".
    let errors = dirs.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(route(field(&errors[0], "url")), "/");
    assert_eq!(field(&errors[0], "kind"), "noindex");
    assert_eq!(dirs.stats()["noindex"].as_u64(), Some(1));
    assert_eq!(dirs.stats()["fetched"].as_u64(), Some(2));
}

/// A small site: `/` links to `/a` and `/b`.
fn three_page_site() -> Server {
    Server::start(|req: &Request| match req.path.as_str() {
        "/" => Reply::html(page(
            "Home",
            &gibberish(11, 60),
            &["/a".to_string(), "/b".to_string()],
        )),
        "/a" => Reply::html(page("A", &gibberish(12, 60), &[])),
        "/b" => Reply::html(page("B", &gibberish(13, 60), &[])),
        _ => Reply::status(404),
    })
}

#[test]
fn writer_panic_fails_the_crawl_and_leaves_it_resumable() {
    let server = three_page_site();
    let dir = tempdir();
    let dirs = crate::support::site_crawl(dir.path(), &format!("{}/", server.base()), 2, "");
    // Debug builds only: the writer panics when it makes its final commit durable.
    let status = dirs
        .command()
        .env("SIMCRAWL_TEST_WRITER_PANIC", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(
        !status.status.success(),
        "a writer panic exited 0; stderr:\n{stderr}"
    );
    assert!(stderr.contains("writer thread panicked"), "{stderr}");
    // The same command again finishes the crawl: every page kept once.
    dirs.run_ok(Duration::from_secs(60));
    let kept = multiset(dirs.kept().iter().map(|v| route(field(v, "url"))));
    let want: std::collections::BTreeMap<String, usize> =
        ["/", "/a", "/b"].iter().map(|p| (p.to_string(), 1)).collect();
    assert_eq!(kept, want);
}

#[test]
fn a_page_failing_longer_than_the_fetch_retries_is_requeued_and_kept() {
    // 5 failures: more than one fetch with its 2 retries (3 requests) absorbs.
    let server = Server::start(|req: &Request| match req.path.as_str() {
        "/" => Reply::html(page("Home", &gibberish(21, 60), &["/down".to_string()])),
        "/down" if req.nth <= 5 => Reply::status(503),
        "/down" => Reply::html(page("Back", &gibberish(22, 60), &[])),
        _ => Reply::status(404),
    });
    let dir = tempdir();
    let dirs = crate::support::site_crawl(
        dir.path(),
        &format!("{}/", server.base()),
        2,
        "requeue_delay_ms = 200",
    );
    dirs.run_ok(Duration::from_secs(60));
    let kept: BTreeSet<String> = dirs.kept().iter().map(|v| route(field(v, "url"))).collect();
    assert_eq!(kept, BTreeSet::from(["/".to_string(), "/down".to_string()]));
    assert!(dirs.errors().is_empty(), "{:?}", dirs.errors());
    assert_eq!(server.counts()["/down"], 6);
    let stats = dirs.stats();
    assert_eq!(stats["fetched"].as_u64(), Some(2), "{stats}");
    assert_eq!(stats["requeued"].as_u64(), Some(1), "{stats}");
}

#[test]
fn a_page_failing_past_the_requeue_limit_is_a_final_error() {
    let server = Server::start(|req: &Request| match req.path.as_str() {
        "/" => Reply::html(page("Home", &gibberish(23, 60), &["/down".to_string()])),
        "/down" => Reply::status(503),
        _ => Reply::status(404),
    });
    let dir = tempdir();
    let dirs = crate::support::site_crawl(
        dir.path(),
        &format!("{}/", server.base()),
        2,
        "requeue_delay_ms = 100\nmax_requeues = 2",
    );
    dirs.run_ok(Duration::from_secs(60));
    let errors = dirs.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(field(&errors[0], "kind"), "status_5xx");
    // 1 + 2 requeues, 3 requests each (2 fetch retries).
    assert_eq!(server.counts()["/down"], 9);
    assert_eq!(dirs.stats()["requeued"].as_u64(), Some(2));
}

/// A page that always fails holds a finite crawl open no longer than the
/// retry budget: requeues stop when their waits and attempts would pass it
/// (here 1 s, then what is left of 2 s after it and the attempts, where
/// `max_requeues = 3` alone would wait 1 + 2 + 4 s), and the failure is
/// final. One request per attempt (no fetch retries), so an attempt takes
/// milliseconds.
#[test]
fn a_page_failing_past_the_retry_budget_is_a_final_error() {
    let server = Server::start(|req: &Request| match req.path.as_str() {
        "/" => Reply::html(page("Home", &gibberish(29, 60), &["/down".to_string()])),
        "/down" => Reply::status(503),
        _ => Reply::status(404),
    });
    let dir = tempdir();
    let dirs = crate::support::site_crawl(
        dir.path(),
        &format!("{}/", server.base()),
        2,
        "requeue_delay_ms = 1000\nmax_requeues = 3\nretry_budget_ms = 2000",
    );
    dirs.edit_config("retries = 2", "retries = 0");
    dirs.run_ok(Duration::from_secs(60));
    let errors = dirs.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(field(&errors[0], "kind"), "status_5xx");
    assert_eq!(dirs.stats()["requeued"].as_u64(), Some(2), "{}", dirs.stats());
    // 1 + 2 requeues, 1 request each.
    assert_eq!(server.counts()["/down"], 3);
    assert_eq!(dirs.kept().len(), 1);
}

/// Lines a consumer has read stay: the writer makes its last commit durable
/// shortly after it, even when no further result arrives (here the crawl is
/// stuck on a page that never answers), so a SIGKILL then cuts nothing and
/// the restart fetches none of those pages again.
#[test]
fn visible_lines_become_durable_without_further_results() {
    let server = Server::start(|req: &Request| match req.path.as_str() {
        "/" => Reply::html(page(
            "Home",
            &gibberish(31, 60),
            &["/a".to_string(), "/slow".to_string()],
        )),
        "/a" => Reply::html(page("A", &gibberish(32, 60), &[])),
        "/slow" => Reply::Hang,
        _ => Reply::status(404),
    });
    let dir = tempdir();
    let dirs = crate::support::site_crawl(dir.path(), &format!("{}/", server.base()), 2, "max_requeues = 0");
    let mut child = dirs.spawn();
    dirs.wait_until(&mut child, Duration::from_secs(30), "two pages kept", || {
        dirs.kept_lines_now() >= 2
    });
    // A consumer reads the lines; /slow keeps the crawl busy meanwhile.
    let seen = std::fs::read_to_string(dirs.out.join("kept.jsonl")).unwrap();
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        child.try_wait().unwrap().is_none(),
        "ended early:\n{}",
        dirs.log()
    );
    child.kill().unwrap();
    child.wait().unwrap();
    dirs.run_ok(Duration::from_secs(60));
    let after = std::fs::read_to_string(dirs.out.join("kept.jsonl")).unwrap();
    assert!(after.starts_with(&seen), "lines read before the kill were cut");
    let counts = server.counts();
    assert_eq!(counts["/"], 1, "{counts:?}");
    assert_eq!(counts["/a"], 1, "{counts:?}");
}

/// Every fetched page leaves one line: kept, duplicates (a redirect to a URL
/// already seen is a URL-tier duplicate of its target) or errors (noindex
/// pages, final failures), and the lines add up to `fetched`.
#[test]
fn every_fetched_page_leaves_one_output_line() {
    let server = Server::start(|req: &Request| match req.path.as_str() {
        "/" => Reply::html(page(
            "Home",
            &gibberish(41, 60),
            &["/a", "/r", "/n", "/gone"].map(String::from),
        )),
        "/a" => Reply::html(page("A", &gibberish(42, 60), &[])),
        "/r" => Reply::Redirect {
            status: 301,
            location: "/a".to_string(),
        },
        "/n" => Reply::html(
            page("N", &gibberish(43, 60), &[])
                .replace("<head>", "<head><meta name=\"robots\" content=\"noindex\">"),
        ),
        _ => Reply::status(404),
    });
    let dir = tempdir();
    let dirs = crate::support::site_crawl(dir.path(), &format!("{}/", server.base()), 1, "");
    dirs.run_ok(Duration::from_secs(60));
    let (kept, dups, errors) = (dirs.kept(), dirs.duplicates(), dirs.errors());
    let stats = dirs.stats();
    assert_eq!(stats["fetched"].as_u64(), Some(5), "{stats}");
    assert_eq!(
        (kept.len() + dups.len() + errors.len()) as u64,
        stats["fetched"].as_u64().unwrap(),
        "kept {kept:?}\nduplicates {dups:?}\nerrors {errors:?}\n{stats}"
    );
    let lines: BTreeSet<String> = kept
        .iter()
        .chain(&dups)
        .chain(&errors)
        .map(|v| route(field(v, "url")))
        .collect();
    assert_eq!(lines, ["/", "/a", "/r", "/n", "/gone"].map(String::from).into());
    // /r redirects to /a, which the URL tier knows (a link of /): /r is its
    // URL-tier duplicate, /a is kept under its own name.
    let url_dups: Vec<&Value> = dups.iter().filter(|v| field(v, "tier") == "url").collect();
    assert_eq!(url_dups.len(), 1, "{dups:?}");
    assert_eq!(route(field(url_dups[0], "duplicate_of")), "/a");
}

/// 400 product pages of one shop, each with 2 to 20 characters of its own
/// Chinese text (all distinct) in a shared template; half share the shop's
/// title, half have their own. Short texts have few character n-grams, so
/// their sketches are thin (a 5-character text has one 5-gram): none of
/// them may be dropped as a copy of another (issue 36: 8-bit sketches of
/// one shingle matched 1 time in 256 and dropped hundreds).
#[test]
fn short_chinese_pages_are_all_kept() {
    const N: usize = 400;
    const CHARS: &str = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质";

    let chars: Vec<char> = CHARS.chars().collect();
    let mut next = crate::support::rng(36);
    let mut texts = BTreeSet::new();
    while texts.len() < N {
        let len = 2 + (next() % 19) as usize;
        let t: String = (0..len)
            .map(|_| chars[(next() % chars.len() as u64) as usize])
            .collect();
        texts.insert(t);
    }
    let texts: Vec<String> = texts.into_iter().collect();
    let links: Vec<String> = (0..N).map(|i| format!("/p/{i}")).collect();
    let shop = |title: &str, own: &str| {
        format!(
            "<!doctype html><html lang=\"zh\"><head><meta charset=\"utf-8\"><title>{title}</title></head>\
             <body><header><nav><a href=\"/\">首页</a> <a href=\"/\">新品上市</a> <a href=\"/\">热卖排行</a> \
             <a href=\"/\">会员中心</a></nav></header>\
             <main><h2>商品详情</h2><p>{own}</p></main>\
             <footer>客服热线 400-800-1234 本店所有商品均为正品 七天无理由退换</footer></body></html>"
        )
    };
    let pages: Arc<Vec<String>> = Arc::new(
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let title = if i % 2 == 0 {
                    "商品详情 - 好物商城".to_string()
                } else {
                    format!("{t} - 好物商城")
                };
                shop(&title, t)
            })
            .collect(),
    );
    let home = page("好物商城", &gibberish(36, 120), &links);
    let p = pages.clone();
    let server = Server::start(move |req| {
        if req.path == "/" {
            return Reply::html(home.clone());
        }
        match req.path.strip_prefix("/p/").and_then(|i| i.parse::<usize>().ok()) {
            Some(i) if i < p.len() => Reply::html(p[i].clone()),
            _ => Reply::status(404),
        }
    });
    let dir = crate::support::tempdir("short-zh");
    let dirs = crate::support::site_crawl(dir.path(), &format!("{}/", server.base()), 4, "");
    dirs.run_ok(Duration::from_secs(120));
    let dropped: Vec<(String, String, String)> = dirs
        .duplicates()
        .iter()
        .map(|d| {
            let i: usize = path_of(field(d, "url"))
                .trim_start_matches("/p/")
                .parse()
                .unwrap_or(0);
            (
                field(d, "url").to_string(),
                texts.get(i).cloned().unwrap_or_default(),
                field(d, "duplicate_of").to_string(),
            )
        })
        .collect();
    assert!(
        dropped.is_empty(),
        "{} of {N} distinct short pages dropped: {dropped:?}",
        dropped.len()
    );
    let kept: BTreeSet<String> = dirs.kept().iter().map(|v| path_of(field(v, "url"))).collect();
    assert_eq!(kept.len(), N + 1, "{:?}", dirs.errors());
}
