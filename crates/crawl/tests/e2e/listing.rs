//! Sitemaps and feeds against a real nginx: pages reachable only through
//! a gzipped sitemap behind a sitemap index declared in robots.txt, a
//! plain-text sitemap, RSS and Atom feeds announced by a page, a seed that
//! is a feed; the URL limit and a sitemap listing another host refused
//! with a line each.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::revisit::{Nginx, nginx_site};
use crate::support::{field, gibberish, page, path_of, site_crawl};

fn write(root: &Path, name: &str, body: &[u8]) {
    let p = root.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

fn gz(data: &str) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data.as_bytes()).unwrap();
    e.finish().unwrap()
}

fn urlset(base: &str, paths: &[&str]) -> String {
    let mut s = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
    );
    for p in paths {
        s.push_str(&format!(
            "<url><loc>{base}{p}</loc><lastmod>2026-11-20</lastmod></url>"
        ));
    }
    s.push_str("</urlset>");
    s
}

fn kept_paths(dirs: &crate::support::Dirs) -> BTreeSet<String> {
    dirs.kept().iter().map(|v| path_of(field(v, "url"))).collect()
}

#[test]
fn pages_listed_only_in_sitemaps_and_feeds_are_crawled() {
    let Some((dir, root, nginx)) = nginx_site("listing") else {
        return;
    };
    let base = nginx.base();
    // The home page links nowhere; it announces two feeds.
    let home = format!(
        "<!doctype html><html><head><title>Home</title>\
         <link rel=\"alternate\" type=\"application/rss+xml\" href=\"/feed.rss\">\
         <link rel=\"alternate\" type=\"application/atom+xml\" href=\"/atom.xml\">\
         </head><body><p>{}</p></body></html>",
        gibberish(1, 150)
    );
    write(&root, "index.html", home.as_bytes());
    write(
        &root,
        "robots.txt",
        format!("User-agent: *\nAllow: /\nSitemap: {base}/sitemap-index.xml\nSitemap: {base}/more.txt\n")
            .as_bytes(),
    );
    write(
        &root,
        "sitemap-index.xml",
        format!(
            "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
             <sitemap><loc>{base}/sitemaps/pages.xml.gz</loc></sitemap>\
             <sitemap><loc>{base}/sitemaps/big.xml</loc></sitemap>\
             <sitemap><loc>{base}/sitemaps/elsewhere.xml</loc></sitemap></sitemapindex>"
        )
        .as_bytes(),
    );
    write(
        &root,
        "sitemaps/pages.xml.gz",
        // s/1 says it changes all the time: its first revisit interval is
        // the shortest allowed; s/2 gets the default.
        &gz(&urlset(&base, &["/s/1.html", "/s/2.html"]).replace(
            "/s/1.html</loc>",
            "/s/1.html</loc><changefreq>always</changefreq>",
        )),
    );
    // Over the (test's) limit of 3 URLs per file: the first three only.
    write(
        &root,
        "sitemaps/big.xml",
        urlset(&base, &["/b/1.html", "/b/2.html", "/b/3.html", "/b/4.html"]).as_bytes(),
    );
    write(
        &root,
        "sitemaps/elsewhere.xml",
        urlset("http://other.example", &["/x.html"]).as_bytes(),
    );
    write(&root, "more.txt", format!("{base}/t/1.html\n").as_bytes());
    write(
        &root,
        "feed.rss",
        format!("<rss version=\"2.0\"><channel><item><link>{base}/r/1.html</link></item></channel></rss>")
            .as_bytes(),
    );
    write(
        &root,
        "atom.xml",
        format!("<feed xmlns=\"http://www.w3.org/2005/Atom\"><entry><link href=\"{base}/a/1.html\"/></entry></feed>")
            .as_bytes(),
    );
    let pages = [
        "s/1.html", "s/2.html", "b/1.html", "b/2.html", "b/3.html", "b/4.html", "t/1.html", "r/1.html",
        "a/1.html",
    ];
    for (i, p) in pages.iter().enumerate() {
        write(
            &root,
            p,
            page(&format!("Page {p}"), &gibberish(100 + i as u64, 150), &[]).as_bytes(),
        );
    }
    let dirs = site_crawl(
        dir.path(),
        &format!("{base}/index.html"),
        2,
        "sitemap_max_urls = 3\n[revisit]\ndefault_interval_s = 100000\nmin_interval_s = 1\n",
    );
    dirs.run_ok(Duration::from_secs(60));
    let kept = kept_paths(&dirs);
    for p in [
        "/s/1.html",
        "/s/2.html",
        "/t/1.html",
        "/r/1.html",
        "/a/1.html",
        "/b/1.html",
        "/b/2.html",
        "/b/3.html",
    ] {
        assert!(kept.contains(p), "{p} not kept: {kept:?}\n{}", dirs.log());
    }
    assert!(!kept.contains("/b/4.html"), "past the URL limit: {kept:?}");
    let errors = dirs.errors();
    let listing_errors: Vec<String> = errors
        .iter()
        .filter(|e| field(e, "kind") == "listing")
        .map(|e| field(e, "error").to_string())
        .collect();
    assert!(
        listing_errors
            .iter()
            .any(|e| e.contains("big.xml") && e.contains("over the limit of 3")),
        "{listing_errors:?}"
    );
    assert!(
        listing_errors
            .iter()
            .any(|e| e.contains("other.example/x.html") && e.contains("outside its own host")),
        "{listing_errors:?}"
    );
    let st = dirs.stats();
    assert!(st["listings"].as_u64() >= Some(6), "{st}");
    // Every listing fetched once.
    let log = nginx.log();
    for l in [
        "/sitemap-index.xml",
        "/sitemaps/pages.xml.gz",
        "/more.txt",
        "/feed.rss",
        "/atom.xml",
    ] {
        assert_eq!(log.iter().filter(|(p, _, _)| p == l).count(), 1, "{l}: {log:?}");
    }

    // After a second, only s/1 is due.
    std::thread::sleep(Duration::from_millis(1200));
    let revisit = |all: bool| {
        let mut c = std::process::Command::new(crate::support::CRAWL);
        c.arg("revisit")
            .arg("--config")
            .arg(&dirs.config)
            .arg("--out")
            .arg(&dirs.out);
        c.arg("--data-dir").arg(&dirs.data);
        if all {
            c.arg("--all");
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    revisit(false);
    let changed: Vec<String> = crate::support::read_jsonl(&dirs.out.join("changes.jsonl"))
        .iter()
        .map(|v| path_of(field(v, "url")))
        .collect();
    assert_eq!(changed, ["/s/1.html"], "changefreq always: due first");

    // The feed publishes a new entry: `crawl revisit --all` reads the feed
    // again (listings are revisited on their own interval) and finds it.
    write(
        &root,
        "r/2.html",
        page("Page r/2", &gibberish(300, 150), &[]).as_bytes(),
    );
    write(
        &root,
        "feed.rss",
        format!(
            "<rss version=\"2.0\"><channel><item><link>{base}/r/2.html</link></item>\
             <item><link>{base}/r/1.html</link></item></channel></rss>"
        )
        .as_bytes(),
    );
    revisit(true);
    assert!(kept_paths(&dirs).contains("/r/2.html"), "{:?}", kept_paths(&dirs));
    let feed_reads = nginx.log().iter().filter(|(p, _, _)| p == "/feed.rss").count();
    assert_eq!(feed_reads, 2);

    // A seed that is a feed.
    let dir2 = crate::support::tempdir("listing");
    let dirs2 = site_crawl(dir2.path(), &format!("{base}/feed.rss"), 2, "sitemaps = false\n");
    dirs2.run_ok(Duration::from_secs(60));
    assert_eq!(
        kept_paths(&dirs2),
        ["/r/1.html".to_string(), "/r/2.html".to_string()]
            .into_iter()
            .collect(),
        "{}",
        dirs2.log()
    );
}

/// Pages of [`listing_site`]'s gzipped sitemap, and the crawl's URL limit
/// per file in the tests that use it.
const N: usize = 12;

/// The complete lines of an output a running crawl is writing (the last
/// one may be half written).
fn lines_now(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let done = text.rfind('\n').map_or("", |i| &text[..i]);
    done.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The listings of [`listing_site`], by path.
const LISTINGS: [&str; 8] = [
    "/sitemap-index.xml",
    "/sitemaps/pages.xml.gz",
    "/sitemaps/big.xml",
    "/sitemaps/elsewhere.xml",
    "/more.txt",
    "/feed.rss",
    "/atom.xml",
    "/seed.atom",
];

/// A site whose pages are reachable only through listings: robots.txt
/// declares a sitemap index (a gzipped urlset of `n` pages, the first with
/// hints; a urlset of `n + 1`, over the crawl's limit of `n` URLs per
/// file; one listing another host), a text sitemap and a sitemap on
/// another host; the home page links nowhere and announces an RSS
/// and an Atom feed; `/seed.atom` is a feed to give as a seed. Returns the
/// paths every crawl from both seeds keeps.
fn listing_site(root: &Path, base: &str, n: usize) -> Vec<String> {
    let home = format!(
        "<!doctype html><html><head><title>Home</title>\
         <link rel=\"alternate\" type=\"application/rss+xml\" href=\"/feed.rss\">\
         <link rel=\"alternate\" type=\"application/atom+xml\" href=\"/atom.xml\">\
         </head><body><p>{}</p></body></html>",
        gibberish(1, 150)
    );
    write(root, "index.html", home.as_bytes());
    write(
        root,
        "robots.txt",
        format!(
            "User-agent: *\nAllow: /\nSitemap: {base}/sitemap-index.xml\nSitemap: {base}/more.txt\n\
             Sitemap: http://other.example/sitemap.xml\n"
        )
        .as_bytes(),
    );
    write(
        root,
        "sitemap-index.xml",
        format!(
            "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
             <sitemap><loc>{base}/sitemaps/pages.xml.gz</loc></sitemap>\
             <sitemap><loc>{base}/sitemaps/big.xml</loc></sitemap>\
             <sitemap><loc>{base}/sitemaps/elsewhere.xml</loc></sitemap></sitemapindex>"
        )
        .as_bytes(),
    );
    let s: Vec<String> = (0..n).map(|i| format!("/s/{i}.html")).collect();
    let s_refs: Vec<&str> = s.iter().map(String::as_str).collect();
    write(
        root,
        "sitemaps/pages.xml.gz",
        &gz(&urlset(base, &s_refs).replacen(
            "</lastmod>",
            "</lastmod><changefreq>weekly</changefreq><priority>0.9</priority>",
            1,
        )),
    );
    let b: Vec<String> = (0..=n).map(|i| format!("/b/{i}.html")).collect();
    let b_refs: Vec<&str> = b.iter().map(String::as_str).collect();
    write(root, "sitemaps/big.xml", urlset(base, &b_refs).as_bytes());
    write(
        root,
        "sitemaps/elsewhere.xml",
        urlset("http://other.example", &["/x.html", "/y.html"]).as_bytes(),
    );
    write(root, "more.txt", format!("{base}/t/1.html\n").as_bytes());
    write(
        root,
        "feed.rss",
        format!("<rss version=\"2.0\"><channel><item><link>{base}/r/1.html</link></item></channel></rss>")
            .as_bytes(),
    );
    write(
        root,
        "atom.xml",
        format!("<feed xmlns=\"http://www.w3.org/2005/Atom\"><entry><link href=\"{base}/a/1.html\"/></entry></feed>")
            .as_bytes(),
    );
    write(
        root,
        "seed.atom",
        b"<?xml version=\"1.0\"?><feed xmlns=\"http://www.w3.org/2005/Atom\"><title>Seed</title>\
          <entry><link rel=\"alternate\" href=\"/f/1.html\"/></entry></feed>",
    );
    let mut kept: Vec<String> = s.clone();
    kept.extend(b[..n].iter().cloned());
    kept.extend(["/t/1.html", "/r/1.html", "/a/1.html", "/f/1.html"].map(String::from));
    for (i, p) in kept.iter().chain(std::iter::once(&b[n])).enumerate() {
        write(
            root,
            &p[1..],
            page(&format!("Page {p}"), &gibberish(500 + i as u64, 150), &[]).as_bytes(),
        );
    }
    kept
}

/// The listing problems of a crawl's errors lines: the limit's (`n`) and
/// the other host's, once each.
fn assert_listing_lines(errors: &[serde_json::Value], n: usize) {
    let lines: Vec<&str> = errors
        .iter()
        .filter(|e| field(e, "kind") == "listing")
        .map(|e| field(e, "error"))
        .collect();
    let limit: Vec<&&str> = lines
        .iter()
        .filter(|e| {
            e.contains(&format!(
                "/sitemaps/big.xml: lists {} URLs, over the limit of {n}",
                n + 1
            ))
        })
        .collect();
    assert_eq!(limit.len(), 1, "{lines:?}");
    let other: Vec<&&str> = lines
        .iter()
        .filter(|e| e.contains("/sitemaps/elsewhere.xml: lists 2 URL(s) outside its own host"))
        .collect();
    assert_eq!(other.len(), 1, "{lines:?}");
    assert!(
        other[0].contains("other.example/x.html") && other[0].contains("refused"),
        "{other:?}"
    );
    // robots.txt may declare a sitemap on another host; the scope refuses
    // it, with a line (from each process that reads that robots.txt).
    assert!(
        lines.iter().any(|e| e.contains(
            "/robots.txt: Sitemap: http://other.example/sitemap.xml is outside this host, which the \
             crawl's scope does not allow: refused"
        )),
        "{lines:?}"
    );
}

/// Each listing fetched once, whatever happened to the crawl.
fn assert_listings_fetched_once(nginx: &Nginx) {
    let log = nginx.log();
    for l in LISTINGS {
        let n = log.iter().filter(|(p, _, _)| p == l).count();
        assert_eq!(n, 1, "{l} fetched {n} times: {log:?}");
    }
}

/// Sitemaps read before a kill -9 are not read again by the resumed
/// crawl (they are frontier entries, their URLs claimed in the URL tier
/// with the commit that read them); every page still kept once.
#[test]
fn a_resumed_crawl_does_not_read_its_sitemaps_again() {
    let Some((dir, root, nginx)) = nginx_site("listing") else {
        return;
    };
    let base = nginx.base();
    let want = listing_site(&root, &base, N);
    let dirs = site_crawl(
        dir.path(),
        &format!("{base}/index.html"),
        1,
        &format!("sitemap_max_urls = {N}\n"),
    );
    std::fs::write(&dirs.seeds, format!("{base}/index.html\n{base}/seed.atom\n")).unwrap();
    // 150 ms between two fetches: the sitemaps' pages take seconds after
    // the listings, time for the kill.
    dirs.edit_config("per_host_delay_ms = 0", "per_host_delay_ms = 150");
    let mut child = dirs.spawn();
    // Every listing committed: each one's pages kept, both problem lines
    // written (lines are written with the commit that reads the listing).
    dirs.wait_until(
        &mut child,
        Duration::from_secs(30),
        "every listing committed",
        || {
            let kept: BTreeSet<String> = lines_now(&dirs.out.join("kept.jsonl"))
                .iter()
                .map(|v| path_of(field(v, "url")))
                .collect();
            let errors = lines_now(&dirs.out.join("errors.jsonl"));
            let problems = errors.iter().filter(|e| field(e, "kind") == "listing").count();
            problems >= 2
                && ["/t/1.html", "/r/1.html", "/a/1.html", "/f/1.html", "/b/1.html"]
                    .iter()
                    .all(|p| kept.contains(*p))
        },
    );
    // Made durable within 250 ms of their commit.
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        child.try_wait().unwrap().is_none(),
        "ended before the kill:\n{}",
        dirs.log()
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let at_kill = dirs.kept_lines_now();
    assert!(at_kill < want.len(), "killed after the crawl had finished");
    dirs.run_ok(Duration::from_secs(60));
    let kept: Vec<String> = dirs.kept().iter().map(|v| path_of(field(v, "url"))).collect();
    let counts = crate::support::multiset(kept);
    for p in &want {
        assert_eq!(counts.get(p), Some(&1), "{p}: {counts:?}\n{}", dirs.log());
    }
    assert!(
        !counts.contains_key(&format!("/b/{N}.html")),
        "past the URL limit: {counts:?}"
    );
    assert_listing_lines(&dirs.errors(), N);
    assert_listings_fetched_once(&nginx);
}

/// `redis-cli -u URL ARGS...`, its output trimmed.
fn redis_cli(url: &str, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli")
        .arg("-u")
        .arg(url)
        .args(args)
        .output()
        .expect("redis-cli");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The shared mode: listings are frontier entries leased by one worker.
/// One worker reads every listing and is killed -9; restarted with a
/// second one, they finish the crawl without reading any listing again;
/// every page has one line in one worker's outputs; the sitemap's hints
/// and the listings' kinds are in Redis for the revisit schedule.
#[test]
fn shared_workers_read_each_listing_once_through_a_kill_9() {
    let Some(url) = crate::redis::redis_url("listing") else {
        return;
    };
    if std::process::Command::new("redis-cli")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: redis-cli is not installed");
        return;
    }
    let Some((dir, root, nginx)) = nginx_site("listing") else {
        return;
    };
    let base = nginx.base();
    let want = listing_site(&root, &base, N);
    let ns = crate::redis::namespace("listing");
    let shared = crate::redis::Shared::new(dir.path(), &format!("{base}/index.html"), &url, &ns, 2_000);
    std::fs::write(&shared.seeds, format!("{base}/index.html\n{base}/seed.atom\n")).unwrap();
    let config = std::fs::read_to_string(&shared.config)
        .unwrap()
        .replace("per_host_delay_ms = 0", "per_host_delay_ms = 150")
        .replace("[crawl]\n", &format!("[crawl]\nsitemap_max_urls = {N}\n"));
    std::fs::write(&shared.config, config).unwrap();
    let key = |k: &str| format!("{{{ns}}}:f:{k}");
    let mut w1 = shared.spawn("w1");
    // Every listing acknowledged: the ack records its kind.
    shared.wait_until(&["w1"], Duration::from_secs(30), "listings read", || {
        redis_cli(&url, &["HLEN", &key("listings")]) == LISTINGS.len().to_string()
    });
    assert!(
        w1.try_wait().unwrap().is_none(),
        "ended before the kill:\n{}",
        shared.logs(&["w1"])
    );
    w1.kill().unwrap(); // SIGKILL
    w1.wait().unwrap();
    let mut rest = [shared.spawn("w1"), shared.spawn("w2")];
    shared.wait_ok(&mut rest, &["w1", "w2"]);

    let lines = shared.lines(&["w1", "w2"]);
    let mut per_page = std::collections::BTreeMap::new();
    for (_, file, v) in &lines {
        if *file != "errors" || field(v, "kind") != "listing" {
            *per_page.entry((path_of(field(v, "url")), *file)).or_insert(0) += 1;
        }
    }
    for p in &want {
        assert_eq!(
            per_page.get(&(p.clone(), "kept")),
            Some(&1),
            "{p}: {per_page:?}\n{}",
            shared.logs(&["w1", "w2"])
        );
    }
    assert!(
        per_page
            .keys()
            .all(|(p, _)| want.contains(p) || p == "/index.html"),
        "a listing or an unwanted page has a page line: {per_page:?}"
    );
    let errors: Vec<serde_json::Value> = lines
        .into_iter()
        .filter(|(_, f, _)| *f == "errors")
        .map(|(_, _, v)| v)
        .collect();
    assert_listing_lines(&errors, N);
    assert_listings_fetched_once(&nginx);
    // What the revisit schedule will read.
    let hint = redis_cli(&url, &["HGET", &key("hints"), &format!("{base}/s/0.html")]);
    assert_eq!(
        hint,
        format!(r#"{{"url":"{base}/s/0.html","lastmod":1795132800,"changefreq":"weekly","priority":0.9}}"#)
    );
    assert_eq!(
        redis_cli(&url, &["HGET", &key("listings"), &format!("{base}/feed.rss")]),
        "rss"
    );
    assert_eq!(
        redis_cli(&url, &["HGET", &key("listings"), &format!("{base}/seed.atom")]),
        "atom"
    );
    assert_eq!(
        redis_cli(&url, &["HGET", &key("listings"), &format!("{base}/more.txt")]),
        "text"
    );
    assert_eq!(
        redis_cli(
            &url,
            &["HGET", &key("listings"), &format!("{base}/sitemap-index.xml")]
        ),
        "sitemapindex"
    );
    assert_eq!(
        redis_cli(&url, &["HGET", &key("stats"), "listings"]),
        LISTINGS.len().to_string()
    );
}

/// A sitemap index naming `/chain/{k+1}.xml` and a urlset of one page,
/// for k < 10,000 (only the page of each urlset the bounds let through is
/// written): robots.txt names the first index.
fn chain_site(root: &Path, base: &str) {
    write(
        root,
        "robots.txt",
        format!("User-agent: *\nAllow: /\nSitemap: {base}/chain/0.xml\n").as_bytes(),
    );
    write(
        root,
        "index.html",
        page("Home", &gibberish(7, 120), &[]).as_bytes(),
    );
    for k in 0..10_000 {
        write(
            root,
            &format!("chain/{k}.xml"),
            format!(
                "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
                 <sitemap><loc>{base}/chain/{}.xml</loc></sitemap>\
                 <sitemap><loc>{base}/pages/{k}.xml</loc></sitemap></sitemapindex>",
                k + 1
            )
            .as_bytes(),
        );
        write(
            root,
            &format!("pages/{k}.xml"),
            urlset(base, &[&format!("/c/{k}.html")]).as_bytes(),
        );
        if k < 8 {
            write(
                root,
                &format!("c/{k}.html"),
                page(&format!("C {k}"), &gibberish(100 + k as u64, 120), &[]).as_bytes(),
            );
        }
    }
}

/// A sitemap index of 300 urlsets of one page each.
fn wide_site(root: &Path, base: &str) {
    write(
        root,
        "robots.txt",
        format!("User-agent: *\nAllow: /\nSitemap: {base}/wide.xml\n").as_bytes(),
    );
    write(
        root,
        "index.html",
        page("Home", &gibberish(8, 120), &[]).as_bytes(),
    );
    let mut index = String::from("<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">");
    for j in 0..300 {
        index.push_str(&format!("<sitemap><loc>{base}/w/{j}.xml</loc></sitemap>"));
        write(
            root,
            &format!("w/{j}.xml"),
            urlset(base, &[&format!("/wp/{j}.html")]).as_bytes(),
        );
        write(
            root,
            &format!("wp/{j}.html"),
            page(&format!("W {j}"), &gibberish(1000 + j as u64, 120), &[]).as_bytes(),
        );
    }
    index.push_str("</sitemapindex>");
    write(root, "wide.xml", index.as_bytes());
}

/// The `.xml` paths nginx served.
fn listings_served(nginx: &Nginx) -> Vec<String> {
    nginx
        .log()
        .into_iter()
        .map(|(p, _, _)| p)
        .filter(|p| p.ends_with(".xml"))
        .collect()
}

/// An index that names the next index, 10,000 deep, is read to
/// `crawl.max_listing_depth` (3: robots.txt's index and three below it)
/// and the crawl ends; an index of 300 sitemaps is read to
/// `crawl.max_listings_per_host`; both say what they left in stats.json and
/// in the summary. (Before the bounds, the chain was read at the same
/// depth as its parent, forever.)
#[test]
fn sitemap_chains_and_wide_indexes_end_within_the_listing_bounds() {
    let Some((dir, root, nginx)) = nginx_site("listing-chain") else {
        return;
    };
    let base = nginx.base();
    chain_site(&root, &base);
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let dirs = site_crawl(&run, &format!("{base}/index.html"), 4, "");
    dirs.run_ok(Duration::from_secs(120));
    let served: BTreeSet<String> = listings_served(&nginx).into_iter().collect();
    let want: BTreeSet<String> = ["/chain/0.xml", "/chain/1.xml", "/chain/2.xml", "/chain/3.xml"]
        .iter()
        .chain(["/pages/0.xml", "/pages/1.xml", "/pages/2.xml"].iter())
        .map(ToString::to_string)
        .collect();
    assert_eq!(served, want, "{}", dirs.log());
    let kept = kept_paths(&dirs);
    for p in ["/c/0.html", "/c/1.html", "/c/2.html"] {
        assert!(kept.contains(p), "{p} not kept: {kept:?}");
    }
    let stats = dirs.stats();
    assert_eq!(stats["listings"], 7, "{stats}");
    // chain/4 and pages/3, offered by chain/3.
    assert_eq!(stats["listings_skipped"], 2, "{stats}");
    assert!(
        dirs.log().contains("2 not read (over crawl.max_listing_depth"),
        "{}",
        dirs.log()
    );

    let Some((dir, root, nginx)) = nginx_site("listing-wide") else {
        return;
    };
    let base = nginx.base();
    wide_site(&root, &base);
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let dirs = site_crawl(
        &run,
        &format!("{base}/index.html"),
        4,
        "max_listings_per_host = 40\n",
    );
    dirs.run_ok(Duration::from_secs(120));
    let served = listings_served(&nginx);
    assert_eq!(served.len(), 40, "{served:?}");
    let stats = dirs.stats();
    assert_eq!(stats["listings"], 40, "{stats}");
    assert_eq!(stats["listings_skipped"], 300 + 1 - 40, "{stats}");
    // Every urlset read gave its page.
    assert_eq!(
        kept_paths(&dirs).iter().filter(|p| p.starts_with("/wp/")).count(),
        39
    );
}

/// The same bounds in the shared mode: two workers read the chain to
/// `crawl.max_listing_depth`, and the wide index to
/// `crawl.max_listings_per_host` counted for both together (by the ack
/// script, in Redis).
#[test]
fn shared_workers_keep_the_listing_bounds_together() {
    let Some(url) = crate::redis::redis_url("listing-bounds") else {
        return;
    };
    let Some((dir, root, nginx)) = nginx_site("listing-chain-shared") else {
        return;
    };
    let base = nginx.base();
    chain_site(&root, &base);
    let ns = crate::redis::namespace("listing-chain");
    let shared = crate::redis::Shared::new(dir.path(), &format!("{base}/index.html"), &url, &ns, 2_000);
    let mut workers = [shared.spawn("w1"), shared.spawn("w2")];
    shared.wait_ok(&mut workers, &["w1", "w2"]);
    let served: BTreeSet<String> = listings_served(&nginx).into_iter().collect();
    let chain: BTreeSet<String> = served
        .iter()
        .filter(|p| p.starts_with("/chain/"))
        .cloned()
        .collect();
    assert_eq!(
        chain,
        (0..4).map(|k| format!("/chain/{k}.xml")).collect(),
        "{}",
        shared.logs(&["w1", "w2"])
    );
    assert_eq!(served.len(), 7, "{served:?}");

    let Some((dir, root, nginx)) = nginx_site("listing-wide-shared") else {
        return;
    };
    let base = nginx.base();
    wide_site(&root, &base);
    let ns = crate::redis::namespace("listing-wide");
    let shared = crate::redis::Shared::new(dir.path(), &format!("{base}/index.html"), &url, &ns, 2_000);
    let config = std::fs::read_to_string(&shared.config)
        .unwrap()
        .replace("[crawl]\n", "[crawl]\nmax_listings_per_host = 40\n");
    std::fs::write(&shared.config, config).unwrap();
    let mut workers = [shared.spawn("w1"), shared.spawn("w2")];
    shared.wait_ok(&mut workers, &["w1", "w2"]);
    let served = listings_served(&nginx);
    assert_eq!(served.len(), 40, "{served:?}");
    assert_eq!(
        redis_cli(&url, &["HGET", &format!("{{{ns}}}:f:stats"), "listings_skipped"]),
        (300 + 1 - 40).to_string()
    );
}
