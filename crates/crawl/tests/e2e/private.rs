//! End-to-end: a crawl seeded on a loopback site may fetch that site, but
//! its links and redirects into other private addresses (another name for
//! loopback, the cloud metadata address, a DNS answer that is private) are
//! refused and recorded as `private_address`, and nothing reaches them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::server::{Reply, Request, Server};
use crate::support::{Dirs, field, gibberish, page, workspace};

#[test]
fn links_into_private_addresses_are_refused_and_recorded() {
    // The "inside" server stands for the operator's network: nothing may reach it.
    let inside = Server::start(|_: &Request| Reply::html("<html><body><p>secret</p></body></html>"));
    let port = inside.port();
    let site = Server::start(move |req: &Request| match req.path.as_str() {
        "/" => Reply::html(page(
            "home",
            &gibberish(1, 60),
            &[
                "/a".to_string(),
                format!("http://localhost:{port}/secret"),
                "http://169.254.169.254/latest/meta-data/".to_string(),
                format!("http://rebind.test:{port}/admin"),
                "/to-inside".to_string(),
            ],
        )),
        "/a" => Reply::html(page("a", &gibberish(2, 60), &[])),
        "/to-inside" => Reply::Redirect {
            status: 302,
            location: format!("http://localhost:{port}/redirected"),
        },
        _ => Reply::status(404),
    });
    let root = tempfile::Builder::new()
        .prefix("e2e-private-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let config = root.path().join("crawl.toml");
    std::fs::write(
        &config,
        format!(
            r#"[dedup.features]
stop_words = "{}"

[fetch]
connect_timeout_ms = 1000
total_timeout_ms = 2000
retries = 0
per_host_delay_ms = 0
robots_unavailable_retry_ms = 60000

[fetch.resolve]
"rebind.test" = ["127.0.0.1"]

[crawl]
scope = "any"
max_requeues = 0
"#,
            workspace().join("config/stopwords.txt").display()
        ),
    )
    .unwrap();
    let seeds = root.path().join("seeds.txt");
    std::fs::write(&seeds, format!("{}/\n", site.base())).unwrap();
    let dirs = Dirs::new(root.path(), &config, &seeds);
    let (status, _) = dirs.run(Duration::from_secs(60));
    assert!(status.success(), "{}", dirs.log());

    let kept: Vec<String> = dirs.kept().iter().map(|k| field(k, "url").to_string()).collect();
    assert_eq!(kept.len(), 2, "the seed's own host is fetched: {kept:?}");
    let refused: Vec<(String, String)> = dirs
        .errors()
        .iter()
        .map(|e| (field(e, "url").to_string(), field(e, "kind").to_string()))
        .collect();
    for url in [
        format!("http://localhost:{port}/secret"),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        format!("http://rebind.test:{port}/admin"),
        format!("{}/to-inside", site.base()),
    ] {
        assert!(
            refused.iter().any(|(u, k)| *u == url && k == "private_address"),
            "{url} not refused as private_address: {refused:?}"
        );
    }
    assert!(
        inside.counts().is_empty(),
        "the inside server was reached: {:?}",
        inside.counts()
    );
    // Refusals are final: not requeued, one line each.
    assert_eq!(dirs.stats()["requeued"].as_u64(), Some(0));
    assert_eq!(dirs.stats()["errors"]["private_address"].as_u64(), Some(4));
}
