//! End-to-end test of `crawl report`: crawl the bundled demo site (served
//! from `demo/site` on 127.0.0.1), write the report, and load it in a real
//! headless Chromium. The page must run its script without an error and
//! show the counts the output files hold.
//!
//! `scripts/test.sh` installs Debian's `chromium` and sets
//! `SIMCRAWL_REQUIRE_BROWSER=1`, so in CI a missing browser fails the test;
//! elsewhere it is skipped with a message. `SIMCRAWL_CHROMIUM` names another
//! browser binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::server::{Reply, Request, Server};
use crate::support::{Dirs, field, workspace, write_config};

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SIMCRAWL_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Serves the files of `demo/site`, `/` being `index.html`.
fn demo_site() -> Server {
    let root = workspace().join("demo/site");
    Server::start(move |req: &Request| {
        let rel = req.path.split('?').next().unwrap_or("/").trim_start_matches('/');
        let rel = if rel.is_empty() || rel.ends_with('/') {
            format!("{rel}index.html")
        } else {
            rel.to_string()
        };
        if rel.split('/').any(|s| s == "..") {
            return Reply::status(404);
        }
        match std::fs::read_to_string(root.join(&rel)) {
            Ok(body) if rel.ends_with(".html") => Reply::html(body),
            Ok(body) => Reply::text(body),
            Err(_) => Reply::status(404),
        }
    })
}

/// The integer in `data-value` of the element with this id.
fn shown(dom: &str, id: &str) -> u64 {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the rendered page"));
    let rest = &dom[at..];
    let v = rest.find("data-value=\"").unwrap() + "data-value=\"".len();
    rest[v..].split('"').next().unwrap().parse().unwrap()
}

fn text_of(dom: &str, id: &str) -> String {
    let at = dom.find(&format!("id=\"{id}\"")).unwrap();
    let rest = &dom[at..];
    let start = rest.find('>').unwrap() + 1;
    rest[start..].split('<').next().unwrap().to_string()
}

fn render(browser: &Path, page: &Path) -> String {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} failed: {}",
        browser.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn demo_crawl_report_renders_in_a_real_browser() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("SIMCRAWL_REQUIRE_BROWSER").is_none(),
            "SIMCRAWL_REQUIRE_BROWSER is set but no chromium was found on PATH (set SIMCRAWL_CHROMIUM)"
        );
        eprintln!("skipped: no chromium on PATH (scripts/test.sh installs Debian's chromium)");
        return;
    };
    let root = tempfile::Builder::new()
        .prefix("e2e-report-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let site = demo_site();
    let config = write_config(root.path(), 2, "");
    let seeds = root.path().join("seeds.txt");
    std::fs::write(&seeds, format!("{}/\n", site.base())).unwrap();
    let dirs = Dirs::new(root.path(), &config, &seeds);
    let (status, _) = dirs.run(Duration::from_secs(120));
    assert!(status.success(), "crawl failed:\n{}", dirs.log());

    let report = Command::new(crate::support::CRAWL)
        .arg("report")
        .arg(&dirs.out)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let page = PathBuf::from(String::from_utf8(report.stdout).unwrap().trim());
    assert_eq!(page, dirs.out.join("report.html"));

    let dom = render(&browser, &page.canonicalize().unwrap());
    assert!(
        dom.contains("data-status=\"ok\""),
        "the page's script did not finish:\n{dom}"
    );

    let kept = dirs.kept();
    let dups = dirs.duplicates();
    let errors = dirs.errors();
    assert!(
        !kept.is_empty() && !dups.is_empty() && !errors.is_empty(),
        "the demo has all three outputs"
    );
    let tier = |t: &str| dups.iter().filter(|d| field(d, "tier") == t).count() as u64;
    assert_eq!(shown(&dom, "count-kept"), kept.len() as u64);
    assert_eq!(shown(&dom, "count-dropped"), dups.len() as u64);
    assert_eq!(shown(&dom, "count-url"), tier("url"));
    assert_eq!(shown(&dom, "count-title"), tier("title"));
    assert_eq!(shown(&dom, "count-content"), tier("content"));
    assert_eq!(shown(&dom, "count-errors"), errors.len() as u64);
    // Every fetched page left one line, and the report says so.
    assert_eq!(
        shown(&dom, "count-lines"),
        dirs.stats()["fetched"].as_u64().unwrap()
    );

    // Clusters: one per kept page with copies, the largest listed first.
    let mut sizes: BTreeMap<&str, u64> = BTreeMap::new();
    for d in &dups {
        *sizes.entry(field(d, "duplicate_of")).or_default() += 1;
    }
    assert_eq!(shown(&dom, "cluster-count"), sizes.len() as u64);
    let largest = sizes.iter().max_by_key(|(_, n)| **n).unwrap().0;
    let list = &dom[dom.find("id=\"cluster-list\"").unwrap()..];
    let first = &list[..list.find("</summary>").unwrap()];
    assert!(
        first.contains(largest),
        "largest cluster {largest} not first: {first}"
    );
    // The filter ran over every listed cluster.
    assert_eq!(text_of(&dom, "clusters-shown"), text_of(&dom, "clusters-listed"));
    // Each error kind of errors.jsonl is in the errors table.
    let table = &dom[dom.find("id=\"error-table\"").unwrap()..];
    for e in &errors {
        assert!(
            table.contains(field(e, "kind")),
            "kind {} missing",
            field(e, "kind")
        );
    }
}
