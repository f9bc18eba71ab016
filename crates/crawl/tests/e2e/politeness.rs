//! Adaptive politeness (`fetch.autothrottle`): on by default for a site
//! that is not the user's own (per_host_delay_ms left at its default), a
//! 503 backs the host off and is counted; off when the delay is set.

use std::time::Duration;

use crate::support::server::{Reply, Server};
use crate::support::{gibberish, page, site_crawl};

fn site() -> Server {
    Server::start(|req| {
        let links: Vec<String> = ["/a", "/b"].iter().map(|s| s.to_string()).collect();
        match (req.path.as_str(), req.nth) {
            ("/", _) => Reply::html(page("Home", &gibberish(1, 150), &links)),
            // Busy once, then fine.
            ("/a", 1) => Reply::status(503),
            ("/a", _) => Reply::html(page("A", &gibberish(2, 150), &[])),
            ("/b", _) => Reply::html(page("B", &gibberish(3, 150), &[])),
            _ => Reply::status(404),
        }
    })
}

#[test]
fn a_503_backs_the_host_off_when_the_delay_is_left_at_its_default() {
    let server = site();
    let dir = crate::support::tempdir("politeness");
    let dirs = site_crawl(
        dir.path(),
        &format!("{}/", server.base()),
        2,
        "sitemaps = false\n",
    );
    dirs.edit_config("per_host_delay_ms = 0", "per_host_delay_ms = 250");
    dirs.run_ok(Duration::from_secs(60));
    let st = dirs.stats();
    assert_eq!(st["throttled"].as_u64(), Some(1), "{st}");
    assert_eq!(
        st["kept"].as_u64(),
        Some(3),
        "the busy page was retried and kept: {st}"
    );

    // The user's own delay: no adaptive politeness.
    let server = site();
    let dir = crate::support::tempdir("politeness");
    let dirs = site_crawl(
        dir.path(),
        &format!("{}/", server.base()),
        2,
        "sitemaps = false\n",
    );
    dirs.run_ok(Duration::from_secs(60));
    let st = dirs.stats();
    assert_eq!(st["throttled"].as_u64(), Some(0), "{st}");
    assert_eq!(st["kept"].as_u64(), Some(3), "{st}");
}
