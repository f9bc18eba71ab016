//! End-to-end: what the crawler waits for. A link to a port where nothing
//! listens fails fast, as `host_unreachable`, after the fetcher's own
//! retries (not after minutes of waits and requeues); a host whose
//! robots.txt answers 503 is named, with the time left, in the SIGUSR1 log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::server::{Reply, Server};
use crate::support::{field, gibberish, page, site_crawl, tempdir, wait_for};

fn normal_site(extra_links: Vec<String>) -> Server {
    Server::start(move |req| match req.path.as_str() {
        "/robots.txt" => Reply::status(404),
        "/" => {
            let mut links: Vec<String> = (0..5).map(|i| format!("/p/{i}")).collect();
            links.extend(extra_links.iter().cloned());
            Reply::html(page("Home", &gibberish(1, 50), &links))
        }
        p => match p.strip_prefix("/p/").and_then(|i| i.parse::<u64>().ok()) {
            Some(i) if i < 5 => Reply::html(page(&format!("Page {i}"), &gibberish(100 + i, 60), &[])),
            _ => Reply::status(404),
        },
    })
}

#[test]
fn a_closed_port_fails_fast_as_host_unreachable() {
    // A port that was just free: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead: Vec<String> = (0..3)
        .map(|i| format!("http://127.0.0.1:{closed}/dead/{i}"))
        .collect();
    let site = normal_site(dead.clone());
    let root = tempdir("e2e-waits-closed-");
    // Default requeues (3, from 60 s) and waits for robots.txt (60 s): a
    // transient failure would take minutes.
    let dirs = site_crawl(root.path(), &format!("{}/", site.base()), 2, "max_requeues = 3");
    let (status, took) = dirs.run(Duration::from_secs(120));
    let log = dirs.log();
    eprintln!("closed port: crawl took {:.1} s", took.as_secs_f64());
    assert!(status.success(), "{status}:\n{log}");
    assert!(took < Duration::from_secs(20), "took {took:?}:\n{log}");
    let errors = dirs.errors();
    for d in &dead {
        let e = errors
            .iter()
            .find(|e| field(e, "url") == d)
            .unwrap_or_else(|| panic!("{d} left no error line:\n{log}"));
        assert_eq!(field(e, "kind"), "host_unreachable", "{e}");
    }
    assert_eq!(dirs.kept().len(), 6, "{log}");
    assert_eq!(dirs.stats()["requeued"].as_u64(), Some(0), "{log}");
    assert!(log.contains("host unreachable"), "the reason is logged:\n{log}");
}

#[test]
fn paused_hosts_are_named_with_the_time_left() {
    let paused = Server::start(|req| match req.path.as_str() {
        "/robots.txt" => Reply::status(503),
        _ => Reply::html(page("never", "never fetched", &[])),
    });
    let site = normal_site(vec![format!("{}/x", paused.base())]);
    let root = tempdir("e2e-waits-paused-");
    let dirs = site_crawl(root.path(), &format!("{}/", site.base()), 2, "max_requeues = 0");
    std::fs::write(&dirs.seeds, format!("{}/\n{}/x\n", site.base(), paused.base())).unwrap();
    dirs.edit_config(
        "robots_unavailable_retry_ms = 60000",
        "robots_unavailable_retry_ms = 4000",
    );
    let mut child = dirs.spawn();
    let t0 = Instant::now();
    let host = format!("{} (robots.txt unavailable", paused.base());
    let mut seen = String::new();
    while t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(300));
        if child.try_wait().unwrap().is_some() {
            break;
        }
        // SIGUSR1 kills a process that has no handler yet: wait for the
        // crawl to be under way (its handlers are installed first).
        if !dirs.log().contains("robots.txt unavailable") {
            continue;
        }
        let _ = Command::new("kill")
            .arg("-USR1")
            .arg(child.id().to_string())
            .status();
        std::thread::sleep(Duration::from_millis(200));
        let log = dirs.log();
        if let Some(line) = log
            .lines()
            .find(|l| l.contains("waiting for") && l.contains(&host))
        {
            seen = line.to_string();
            break;
        }
    }
    let status = wait_for(&mut child, Duration::from_secs(60)).expect("crawl hung");
    let log = dirs.log();
    assert!(status.success(), "{log}");
    assert!(
        !seen.is_empty(),
        "no SIGUSR1 line names the paused host {host}:\n{log}"
    );
    assert!(seen.contains(" s left)"), "{seen}");
    // Its page failed after the waits, as robots_unavailable.
    let e = dirs.errors();
    assert!(
        e.iter()
            .any(|e| field(e, "url").starts_with(&paused.base()) && field(e, "kind") == "robots_unavailable"),
        "{log}"
    );
}
