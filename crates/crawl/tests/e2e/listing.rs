//! Sitemaps and feeds against a real nginx: pages reachable only through
//! a gzipped sitemap behind a sitemap index declared in robots.txt, a
//! plain-text sitemap, RSS and Atom feeds announced by a page, a seed that
//! is a feed; the URL limit and a sitemap listing another host refused
//! with a line each.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::revisit::Nginx;
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
    let dir = crate::support::tempdir("listing");
    let root = dir.path().join("site");
    std::fs::create_dir_all(&root).unwrap();
    let Some(nginx) = Nginx::start(&root, &dir.path().join("nginx")) else {
        eprintln!("SKIPPED: nginx is not installed (scripts/install-deps.sh installs it)");
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
