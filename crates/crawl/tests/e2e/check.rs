//! `crawl check URL`: the verdict of one page explained against a crawl's
//! state, which it does not change.

use std::time::Duration;

use crate::support::server::{Reply, Server};
use crate::support::{field, gibberish, page, path_of, site_crawl};

fn site() -> Server {
    Server::start(|req| {
        let links: Vec<String> = ["/a", "/near"].iter().map(|s| s.to_string()).collect();
        match req.path.as_str() {
            "/robots.txt" => Reply::text("User-agent: *\nDisallow: /private\n"),
            "/" => Reply::html(page("Home", &gibberish(1, 200), &links)),
            "/a" => Reply::html(page("Story A", &gibberish(2, 200), &[])),
            // Not linked: asked about after the crawl.
            "/later-copy" => Reply::html(page(
                "Story A again",
                &format!("{} and a line more", gibberish(2, 200)),
                &[],
            )),
            "/near" => Reply::html(page("Story A", &format!("{} updated", gibberish(2, 200)), &[])),
            "/new" => Reply::html(page("New", &gibberish(3, 200), &[])),
            "/private/x" => Reply::html(page("Private", &gibberish(4, 200), &[])),
            _ => Reply::status(404),
        }
    })
}

fn check(dirs: &crate::support::Dirs, url: &str, json: bool) -> (i32, String) {
    let mut c = std::process::Command::new(crate::support::CRAWL);
    c.arg("check")
        .arg(url)
        .arg("--config")
        .arg(&dirs.config)
        .arg("--data-dir")
        .arg(&dirs.data);
    if json {
        c.arg("--json");
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn check_names_the_partner_of_a_dropped_page_and_changes_nothing() {
    let server = site();
    let dir = crate::support::tempdir("check");
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 2, "");
    dirs.run_ok(Duration::from_secs(60));
    // /a and /near are near copies: whichever was judged first is kept.
    let dups = dirs.duplicates();
    let dropped = dups
        .iter()
        .find(|d| ["/a", "/near"].contains(&path_of(field(d, "url")).as_str()))
        .expect("one of /a and /near dropped");
    let dropped_url = field(dropped, "url").to_string();
    let partner = field(dropped, "duplicate_of").to_string();

    // The dropped page: its partner and the resemblance, as the crawl decided.
    let (code, text) = check(&dirs, &dropped_url, false);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains(&format!("duplicate of {partner}")), "{text}");
    assert!(
        text.contains("resemblance 0.9") || text.contains("resemblance 1.0"),
        "{text}"
    );
    let (code, json) = check(&dirs, &dropped_url, true);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdict"]["kind"], "duplicate", "{v}");
    assert_eq!(v["verdict"]["of"], partner.as_str(), "{v}");
    assert!(v["verdict"]["similarity"].as_f64().unwrap() >= 0.75, "{v}");
    assert!(
        v["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["url"] == partner.as_str()),
        "{v}"
    );
    assert_eq!(v["url_seen"], true);

    // A page the crawl never saw: a copy of the kept page, and a new one.
    let (_, json) = check(&dirs, &format!("{}/later-copy", server.base()), true);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdict"]["kind"], "duplicate", "{v}");
    assert_eq!(v["url_seen"], false);
    let (_, json) = check(&dirs, &format!("{}/new", server.base()), true);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdict"]["kind"], "unique", "{v}");
    // The kept page itself.
    let (_, json) = check(&dirs, &partner, true);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdict"]["kind"], "kept_as_itself", "{v}");

    // robots.txt says no: said, exit 1.
    let (code, text) = check(&dirs, &format!("{}/private/x", server.base()), false);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("robots        disallowed"), "{text}");

    // The checks changed nothing: /new, checked, is still new to the index.
    let (_, json) = check(&dirs, &format!("{}/new", server.base()), true);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (v["verdict"]["kind"].as_str(), v["url_seen"].as_bool()),
        (Some("unique"), Some(false)),
        "{v}"
    );
    // A bad URL and a missing state are clear errors.
    let out = std::process::Command::new(crate::support::CRAWL)
        .args(["check", "not a url", "--data-dir"])
        .arg(&dirs.data)
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("is not a URL"));
    let out = std::process::Command::new(crate::support::CRAWL)
        .args(["check", "http://127.0.0.1:9/", "--data-dir"])
        .arg(dir.path().join("nowhere"))
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("no crawl state"));
}
