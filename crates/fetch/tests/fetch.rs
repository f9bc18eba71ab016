//! End-to-end fetcher tests against a real HTTP server on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use common::{Reply, Server};
use parking_lot::Mutex;
use simcrawl_fetch::{FetchConfig, FetchError, Fetcher, Url};
use tokio::time::Instant;

/// Short timeouts and no waiting, so tests stay fast; robots off unless a
/// test is about robots.
fn fast() -> FetchConfig {
    FetchConfig {
        connect_timeout_ms: 2_000,
        total_timeout_ms: 5_000,
        idle_body_timeout_ms: 2_000,
        retries: 3,
        backoff_base_ms: 10,
        backoff_max_ms: 200,
        per_host_delay_ms: 0,
        respect_robots: false,
        // The test servers listen on loopback.
        allow_private_hosts: vec!["127.0.0.1".into()],
        ..FetchConfig::default()
    }
}

fn any(_: &Url) -> bool {
    true
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn err_kind(r: Result<simcrawl_fetch::Fetched, FetchError>) -> &'static str {
    match r {
        Ok(f) => panic!("expected an error, got a page from {}", f.final_url),
        Err(e) => e.kind(),
    }
}

#[tokio::test]
async fn gzip_body_is_decoded() {
    let page = "<html><body>".to_string() + &"hello gzip ".repeat(500) + "</body></html>";
    let compressed = gzip(page.as_bytes());
    let server = Server::start(move |_, _| Reply::Full {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "text/html".into()),
            ("Content-Encoding".into(), "gzip".into()),
        ],
        body: compressed.clone(),
    })
    .await;
    let f = Fetcher::new(fast()).unwrap();
    let got = f.fetch(&server.url("/"), &any).await.unwrap();
    assert_eq!(got.body, page.as_bytes());
    assert!(!got.truncated);
    assert_eq!(got.status, 200);
    assert!(server.requests()[0].headers.contains("accept-encoding"));
    assert!(server.requests()[0].headers.contains("gzip"));
}

#[tokio::test]
async fn brotli_body_is_decoded() {
    let page = "<html>".to_string() + &"brotli 你好 ".repeat(300) + "</html>";
    let mut compressed = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut compressed, 4096, 5, 22);
        w.write_all(page.as_bytes()).unwrap();
    }
    let server = Server::start(move |_, _| Reply::Full {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "text/html".into()),
            ("Content-Encoding".into(), "br".into()),
        ],
        body: compressed.clone(),
    })
    .await;
    let f = Fetcher::new(fast()).unwrap();
    let got = f.fetch(&server.url("/br"), &any).await.unwrap();
    assert_eq!(String::from_utf8(got.body).unwrap(), page);
}

#[tokio::test]
async fn redirect_chain_is_followed_and_recorded() {
    let server = Server::start(|path, _| match path {
        "/a" => Reply::redirect(302, "/b?x=1#frag"),
        "/b?x=1" => Reply::redirect(301, "c"),
        "/c" => Reply::html("<p>end</p>"),
        _ => Reply::status(404),
    })
    .await;
    let f = Fetcher::new(fast()).unwrap();
    let offered = Arc::new(Mutex::new(Vec::new()));
    let o2 = Arc::clone(&offered);
    let allow = move |u: &Url| {
        o2.lock().push(u.clone());
        true
    };
    let start = server.url("/a");
    let got = f.fetch(&start, &allow).await.unwrap();
    let b = server.url("/b?x=1");
    let c = server.url("/c");
    assert_eq!(got.url, start);
    assert_eq!(got.final_url, c);
    assert_eq!(got.redirects, vec![b.clone(), c.clone()]);
    assert_eq!(*offered.lock(), vec![b, c]);
    assert_eq!(got.body, b"<p>end</p>");
    assert_eq!(got.attempts, 3);
}

#[tokio::test]
async fn refused_hop_is_reported_and_not_fetched() {
    let server = Server::start(|path, _| match path {
        "/a" => Reply::redirect(302, "/b"),
        "/b" => Reply::redirect(307, "/c"),
        _ => Reply::html("c"),
    })
    .await;
    let f = Fetcher::new(fast()).unwrap();
    let allow = |u: &Url| u.path() != "/c";
    let err = f.fetch(&server.url("/a"), &allow).await.unwrap_err();
    assert_eq!(err.kind(), "redirect_refused");
    match &err {
        FetchError::RedirectRefused { url, target } => {
            assert_eq!(url.path(), "/b");
            assert_eq!(target.path(), "/c");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("/b"));
    assert_eq!(server.count("/c"), 0);
    assert_eq!(server.count("/b"), 1);
}

#[tokio::test]
async fn too_many_redirects() {
    let server = Server::start(|path, _| {
        let n: u32 = path.trim_start_matches("/r/").parse().unwrap_or(0);
        Reply::redirect(302, &format!("/r/{}", n + 1))
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        max_redirects: 3,
        ..fast()
    })
    .unwrap();
    let r = f.fetch(&server.url("/r/0"), &any).await;
    assert_eq!(err_kind(r), "too_many_redirects");
    // The start plus three followed hops; the fourth Location is not fetched.
    assert_eq!(server.requests().len(), 4);
    assert_eq!(server.count("/r/4"), 0);
}

#[tokio::test]
async fn server_error_then_success_is_retried() {
    let server = Server::start(|_, n| {
        if n == 0 {
            Reply::status(500)
        } else {
            Reply::html("ok")
        }
    })
    .await;
    let f = Fetcher::new(fast()).unwrap();
    let got = f.fetch(&server.url("/flaky"), &any).await.unwrap();
    assert_eq!(got.body, b"ok");
    assert_eq!(got.attempts, 2);
    assert_eq!(server.count("/flaky"), 2);
}

#[tokio::test]
async fn persistent_5xx_gives_up_after_retries() {
    let server = Server::start(|_, _| Reply::status(503)).await;
    let f = Fetcher::new(FetchConfig { retries: 2, ..fast() }).unwrap();
    let err = f.fetch(&server.url("/down"), &any).await.unwrap_err();
    assert_eq!(err.kind(), "status_5xx");
    assert_eq!(err.status(), Some(503));
    assert_eq!(server.count("/down"), 3);
}

#[tokio::test]
async fn not_found_is_not_retried() {
    let server = Server::start(|_, _| Reply::status(404)).await;
    let f = Fetcher::new(fast()).unwrap();
    let err = f.fetch(&server.url("/missing"), &any).await.unwrap_err();
    assert_eq!(err.kind(), "status_4xx");
    assert_eq!(err.status(), Some(404));
    assert!(err.to_string().contains("/missing"));
    assert_eq!(server.count("/missing"), 1);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let server = Server::start(|_, n| {
        if n == 0 {
            Reply::status(429).header("Retry-After", "1")
        } else {
            Reply::html("ok")
        }
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        backoff_base_ms: 1,
        backoff_max_ms: 5_000,
        ..fast()
    })
    .unwrap();
    let got = f.fetch(&server.url("/busy"), &any).await.unwrap();
    assert_eq!(got.body, b"ok");
    let t = server.times("/busy");
    assert_eq!(t.len(), 2);
    assert!(
        t[1] - t[0] >= Duration::from_millis(900),
        "retried after {:?}",
        t[1] - t[0]
    );
}

#[tokio::test]
async fn retry_after_is_capped_by_max_backoff() {
    let server = Server::start(|_, n| {
        if n == 0 {
            Reply::status(503).header("Retry-After", "3600")
        } else {
            Reply::html("ok")
        }
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        backoff_max_ms: 100,
        ..fast()
    })
    .unwrap();
    let started = Instant::now();
    let got = f.fetch(&server.url("/later"), &any).await.unwrap();
    assert_eq!(got.body, b"ok");
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[tokio::test]
async fn large_body_is_truncated_at_limit() {
    let limit = 64 * 1024;
    let big: Vec<u8> = (0..limit * 10).map(|i| b'a' + (i % 26) as u8).collect();
    let big2 = big.clone();
    let server = Server::start(move |_, _| Reply::Full {
        status: 200,
        headers: vec![("Content-Type".into(), "text/html".into())],
        body: big2.clone(),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        max_body_bytes: limit,
        ..fast()
    })
    .unwrap();
    let got = f.fetch(&server.url("/big"), &any).await.unwrap();
    assert!(got.truncated);
    assert_eq!(got.body.len(), limit);
    assert_eq!(got.body[..], big[..limit]);
}

#[tokio::test]
async fn body_at_exact_limit_is_not_truncated() {
    let server = Server::start(|_, _| Reply::html("0123456789")).await;
    let f = Fetcher::new(FetchConfig {
        max_body_bytes: 10,
        ..fast()
    })
    .unwrap();
    let got = f.fetch(&server.url("/ten"), &any).await.unwrap();
    assert!(!got.truncated);
    assert_eq!(got.body, b"0123456789");
}

/// The server announces 50 MB, sends a little more than the limit and then
/// goes silent: only a fetcher that stops reading at the limit (instead of
/// buffering the whole body) returns, and it must do so long before the
/// idle timeout.
#[tokio::test]
async fn truncation_stops_reading_without_waiting_for_the_rest() {
    let limit = 100 * 1024;
    let server = Server::start(move |_, _| Reply::Partial {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "text/html".into()),
            ("Content-Length".into(), "50000000".into()),
        ],
        body: vec![b'x'; limit * 2],
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        max_body_bytes: limit,
        idle_body_timeout_ms: 20_000,
        total_timeout_ms: 20_000,
        ..fast()
    })
    .unwrap();
    let started = Instant::now();
    let got = f.fetch(&server.url("/endless"), &any).await.unwrap();
    assert!(got.truncated);
    assert_eq!(got.body.len(), limit);
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn gzip_bomb_is_stopped_at_the_limit() {
    let limit = 1024 * 1024;
    let compressed = gzip(&vec![0u8; 16 * limit]);
    assert!(compressed.len() < limit / 4, "not a bomb: {}", compressed.len());
    let server = Server::start(move |_, _| Reply::Full {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "text/html".into()),
            ("Content-Encoding".into(), "gzip".into()),
        ],
        body: compressed.clone(),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        max_body_bytes: limit,
        ..fast()
    })
    .unwrap();
    let got = f.fetch(&server.url("/bomb"), &any).await.unwrap();
    assert!(got.truncated);
    assert_eq!(got.body.len(), limit);
    assert!(got.body.iter().all(|&b| b == 0));
}

/// The server sends the headers of a huge PDF and then nothing: the fetcher
/// must refuse from the headers alone, without waiting on the body.
#[tokio::test]
async fn non_html_is_refused_without_downloading() {
    let server = Server::start(|_, _| Reply::Partial {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "application/pdf".into()),
            ("Content-Length".into(), "50000000".into()),
        ],
        body: b"%PDF-1.7".to_vec(),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        idle_body_timeout_ms: 20_000,
        total_timeout_ms: 20_000,
        ..fast()
    })
    .unwrap();
    let started = Instant::now();
    let err = f.fetch(&server.url("/doc.pdf"), &any).await.unwrap_err();
    assert_eq!(err.kind(), "content_type");
    assert!(err.to_string().contains("application/pdf"));
    assert_eq!(server.count("/doc.pdf"), 1);
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn empty_allow_list_accepts_any_type() {
    let server = Server::start(|_, _| Reply::text("plain")).await;
    let f = Fetcher::new(FetchConfig {
        allowed_content_types: vec![],
        ..fast()
    })
    .unwrap();
    let got = f.fetch(&server.url("/t"), &any).await.unwrap();
    assert_eq!(got.content_type.as_deref(), Some("text/plain"));
    let strict = Fetcher::new(fast()).unwrap();
    let r = strict.fetch(&server.url("/t"), &any).await;
    assert_eq!(err_kind(r), "content_type");
}

/// A feed served as one (`application/atom+xml`) is read, from one
/// request, by a fetcher told to accept listings; without it, refused by
/// type as before; other types stay refused either way.
#[tokio::test]
async fn feed_types_are_read_when_listings_are_accepted() {
    let server = Server::start(|path, _| match path {
        "/feed" => Reply::Full {
            status: 200,
            headers: vec![(
                "Content-Type".into(),
                "application/atom+xml; charset=utf-8".into(),
            )],
            body: b"<feed xmlns=\"http://www.w3.org/2005/Atom\"></feed>".to_vec(),
        },
        _ => Reply::text("plain"),
    })
    .await;
    let strict = Fetcher::new(fast()).unwrap();
    assert_eq!(
        err_kind(strict.fetch(&server.url("/feed"), &any).await),
        "content_type"
    );
    let f = Fetcher::new(fast()).unwrap();
    f.set_accept_listings(true);
    let got = f.fetch(&server.url("/feed"), &any).await.unwrap();
    assert!(got.body.starts_with(b"<feed"));
    assert_eq!(server.count("/feed"), 2, "one request each");
    assert_eq!(err_kind(f.fetch(&server.url("/t"), &any).await), "content_type");
    for t in [
        "application/rss+xml",
        "text/xml; charset=utf-8",
        "Application/XML",
        "application/atom+xml",
    ] {
        assert!(simcrawl_fetch::is_listing_type(t), "{t}");
    }
    for t in [
        "text/html",
        "application/xhtml+xml",
        "application/pdf",
        "text/plain",
        "",
    ] {
        assert!(!simcrawl_fetch::is_listing_type(t), "{t}");
    }
}

fn robots_cfg() -> FetchConfig {
    FetchConfig {
        respect_robots: true,
        ..fast()
    }
}

#[tokio::test]
async fn robots_disallow_is_honoured_and_fetched_once() {
    let server = Server::start(|path, _| match path {
        "/robots.txt" => Reply::text("User-agent: *\nDisallow: /private\n"),
        _ => Reply::html("page"),
    })
    .await;
    let f = Fetcher::new(robots_cfg()).unwrap();
    let r = f.fetch(&server.url("/private/x"), &any).await;
    assert_eq!(err_kind(r), "robots_disallowed");
    let mut tasks = Vec::new();
    for i in 0..6 {
        let f = f.clone();
        let u = server.url(&format!("/pub/{i}"));
        tasks.push(tokio::spawn(async move { f.fetch(&u, &any).await }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().body, b"page");
    }
    assert!(!f.robots_allowed(&server.url("/private/y"), &any).await);
    assert!(f.robots_allowed(&server.url("/public"), &any).await);
    assert_eq!(server.count("/robots.txt"), 1);
    assert_eq!(server.count("/private/x"), 0);
}

#[tokio::test]
async fn concurrent_first_requests_share_one_robots_fetch() {
    let server = Server::start(|path, _| match path {
        "/robots.txt" => Reply::text("User-agent: *\nAllow: /\n"),
        _ => Reply::html("page"),
    })
    .await;
    let f = Fetcher::new(robots_cfg()).unwrap();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let f = f.clone();
        let u = server.url(&format!("/p/{i}"));
        tasks.push(tokio::spawn(async move { f.fetch(&u, &any).await }));
    }
    for t in tasks {
        assert!(t.await.unwrap().is_ok());
    }
    assert_eq!(server.count("/robots.txt"), 1);
    assert_eq!(server.times("/p/").len(), 8);
}

#[tokio::test]
async fn robots_group_for_our_agent_wins() {
    let server = Server::start(|path, _| match path {
        "/robots.txt" => Reply::text("User-agent: simcrawl\nDisallow: /\n\nUser-agent: *\nAllow: /\n"),
        _ => Reply::html("page"),
    })
    .await;
    let f = Fetcher::new(robots_cfg()).unwrap();
    let r = f.fetch(&server.url("/any"), &any).await;
    assert_eq!(err_kind(r), "robots_disallowed");
    let other = Fetcher::new(FetchConfig {
        user_agent: "otherbot/1.0".into(),
        ..robots_cfg()
    })
    .unwrap();
    assert!(other.fetch(&server.url("/any"), &any).await.is_ok());
}

#[tokio::test]
async fn missing_robots_allows_all() {
    let server = Server::start(|path, _| match path {
        "/robots.txt" => Reply::status(404),
        _ => Reply::html("page"),
    })
    .await;
    let f = Fetcher::new(robots_cfg()).unwrap();
    for i in 0..3 {
        let got = f.fetch(&server.url(&format!("/x{i}")), &any).await.unwrap();
        assert_eq!(got.body, b"page");
    }
    assert_eq!(server.count("/robots.txt"), 1);
}

#[tokio::test]
async fn forbidden_robots_allows_all() {
    let server = Server::start(|path, _| match path {
        "/robots.txt" => Reply::status(403),
        _ => Reply::html("page"),
    })
    .await;
    let f = Fetcher::new(robots_cfg()).unwrap();
    assert!(f.fetch(&server.url("/x"), &any).await.is_ok());
}

#[tokio::test]
async fn robots_5xx_pauses_host_then_retries() {
    let server = Server::start(|path, n| match path {
        "/robots.txt" if n == 0 => Reply::status(500),
        "/robots.txt" => Reply::text("User-agent: *\nDisallow: /no\n"),
        _ => Reply::html("page"),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        robots_unavailable_retry_ms: 300,
        ..robots_cfg()
    })
    .unwrap();
    let err = f.fetch(&server.url("/yes"), &any).await.unwrap_err();
    assert_eq!(err.kind(), "robots_unavailable");
    // Still paused: no new robots.txt request, no page request.
    assert!(!f.robots_allowed(&server.url("/yes"), &any).await);
    assert_eq!(server.count("/robots.txt"), 1);
    assert_eq!(server.count("/yes"), 0);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let got = f.fetch(&server.url("/yes"), &any).await.unwrap();
    assert_eq!(got.body, b"page");
    assert_eq!(server.count("/robots.txt"), 2);
    let r = f.fetch(&server.url("/no"), &any).await;
    assert_eq!(err_kind(r), "robots_disallowed");
}

#[tokio::test]
async fn redirect_target_is_checked_against_robots() {
    let server = Server::start(|path, _| match path {
        "/robots.txt" => Reply::text("User-agent: *\nDisallow: /secret\n"),
        "/open" => Reply::redirect(302, "/secret"),
        _ => Reply::html("page"),
    })
    .await;
    let f = Fetcher::new(robots_cfg()).unwrap();
    let r = f.fetch(&server.url("/open"), &any).await;
    assert_eq!(err_kind(r), "robots_disallowed");
    assert_eq!(server.count("/secret"), 0);
}

/// A 429's Retry-After pauses the whole host, not just the URL that got it.
#[tokio::test]
async fn retry_after_pauses_the_whole_host() {
    let server = Server::start(|path, n| match path {
        "/busy" if n == 0 => Reply::status(429).header("Retry-After", "1"),
        _ => Reply::html("ok"),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        backoff_max_ms: 5_000,
        ..fast()
    })
    .unwrap();
    let f2 = f.clone();
    let u = server.url("/busy");
    let busy = tokio::spawn(async move { f2.fetch(&u, &any).await });
    while server.count("/busy") == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    f.fetch(&server.url("/other"), &any).await.unwrap();
    busy.await.unwrap().unwrap();
    let first = server.times("/busy")[0];
    let other = server.times("/other")[0];
    assert!(
        other - first >= Duration::from_millis(800),
        "other URL fetched {:?} after the 429",
        other - first
    );
}

#[tokio::test]
async fn robots_redirect_is_followed() {
    let server = Server::start(|path, _| match path {
        "/robots.txt" => Reply::redirect(301, "/real-robots.txt"),
        "/real-robots.txt" => Reply::text("User-agent: *\nDisallow: /x\n"),
        _ => Reply::html("page"),
    })
    .await;
    let f = Fetcher::new(robots_cfg()).unwrap();
    assert!(!f.robots_allowed(&server.url("/x/1"), &any).await);
    assert!(f.robots_allowed(&server.url("/y"), &any).await);
    assert_eq!(server.count("/real-robots.txt"), 1);
}

/// Server-side arrival times of the requests, sorted, as gaps. Bounds below
/// are lower bounds with slack for connection latency; never upper bounds.
fn gaps(mut t: Vec<Instant>) -> Vec<Duration> {
    t.sort();
    t.windows(2).map(|w| w[1] - w[0]).collect()
}

#[tokio::test]
async fn per_host_delay_spaces_request_starts() {
    let server = Server::start(|_, _| Reply::html("page")).await;
    let f = Fetcher::new(FetchConfig {
        per_host_delay_ms: 300,
        per_host_concurrency: 4,
        ..fast()
    })
    .unwrap();
    assert_spaced(&f, &server, "/d/", 4, Duration::from_millis(200)).await;
}

/// Fetches `n` paths under `prefix` at once and checks that the server saw
/// their requests start at least `min_gap` apart (a lower bound only: a
/// loaded machine can make gaps longer, never shorter).
async fn assert_spaced(f: &Fetcher, server: &Server, prefix: &str, n: usize, min_gap: Duration) {
    let mut tasks = Vec::new();
    for i in 0..n {
        let f = f.clone();
        let u = server.url(&format!("{prefix}{i}"));
        tasks.push(tokio::spawn(async move { f.fetch(&u, &any).await }));
    }
    for t in tasks {
        assert!(t.await.unwrap().is_ok());
    }
    let g = gaps(server.times(prefix));
    assert_eq!(g.len(), n - 1);
    for gap in g {
        assert!(gap >= min_gap, "gap {gap:?}");
    }
}

#[tokio::test]
async fn crawl_delay_raises_spacing() {
    let server = Server::start(|path, _| match path {
        "/robots.txt" => Reply::text("User-agent: *\nCrawl-delay: 1\n"),
        _ => Reply::html("page"),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        per_host_concurrency: 4,
        ..robots_cfg()
    })
    .unwrap();
    assert_spaced(&f, &server, "/cd/", 3, Duration::from_millis(800)).await;
}

/// A host that accepts connections and never answers ties up at most one
/// global permit per in-flight request (here: one, per-host concurrency 1),
/// so with two global permits the healthy host keeps going.
#[tokio::test]
async fn hung_host_does_not_stall_other_hosts() {
    let hung = Server::start(|_, _| Reply::Hang).await;
    let good = Server::start(|_, _| Reply::html("fine")).await;
    let f = Fetcher::new(FetchConfig {
        total_timeout_ms: 3_000,
        idle_body_timeout_ms: 3_000,
        retries: 0,
        concurrency: 2,
        per_host_concurrency: 1,
        ..fast()
    })
    .unwrap();
    let mut hung_tasks = Vec::new();
    for i in 0..2 {
        let f = f.clone();
        let u = hung.url(&format!("/h/{i}"));
        hung_tasks.push(tokio::spawn(async move {
            let r = f.fetch(&u, &any).await;
            (r.map(|_| ()), Instant::now())
        }));
    }
    // Let the hung requests get on the wire first.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut good_tasks = Vec::new();
    for i in 0..5 {
        let f = f.clone();
        let u = good.url(&format!("/g/{i}"));
        good_tasks.push(tokio::spawn(async move {
            let r = f.fetch(&u, &any).await;
            (r.map(|p| p.body), Instant::now())
        }));
    }
    let mut last_good = None;
    for t in good_tasks {
        let (r, at) = t.await.unwrap();
        assert_eq!(r.unwrap(), b"fine");
        last_good = last_good.max(Some(at));
    }
    let mut first_hung_end = None;
    for t in hung_tasks {
        let (r, at) = t.await.unwrap();
        assert_eq!(r.unwrap_err().kind(), "timeout");
        first_hung_end = match first_hung_end {
            None => Some(at),
            Some(x) => Some(std::cmp::min(x, at)),
        };
    }
    assert!(hung.count("/h/0") + hung.count("/h/1") >= 1);
    assert!(
        last_good.unwrap() < first_hung_end.unwrap(),
        "healthy host waited for the hung one"
    );
}

/// A task sleeping for its host's delay must not hold the only global
/// permit: another host's request runs meanwhile.
#[tokio::test]
async fn politeness_wait_holds_no_global_permit() {
    let a = Server::start(|_, _| Reply::html("a")).await;
    let b = Server::start(|_, _| Reply::html("b")).await;
    let f = Fetcher::new(FetchConfig {
        concurrency: 1,
        per_host_delay_ms: 1_500,
        ..fast()
    })
    .unwrap();
    f.fetch(&a.url("/1"), &any).await.unwrap();
    let fa = f.clone();
    let ua = a.url("/2");
    let a2 = tokio::spawn(async move {
        fa.fetch(&ua, &any).await.unwrap();
        Instant::now()
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let fb = f.clone();
    let ub = b.url("/1");
    let b1 = tokio::spawn(async move {
        fb.fetch(&ub, &any).await.unwrap();
        Instant::now()
    });
    let b_done = b1.await.unwrap();
    let a_done = a2.await.unwrap();
    assert!(b_done < a_done, "host b waited behind host a's delay");
    let t = a.times("/");
    assert!(t[1] - t[0] >= Duration::from_millis(1_200));
}

#[tokio::test]
async fn connection_refused_is_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let f = Fetcher::new(FetchConfig { retries: 1, ..fast() }).unwrap();
    let url = Url::parse(&format!("http://{addr}/x")).unwrap();
    let err = f.fetch(&url, &any).await.unwrap_err();
    assert_eq!(err.kind(), "connect");
    assert!(err.to_string().contains(&addr.to_string()));
}

#[tokio::test]
async fn non_http_urls_are_invalid() {
    let f = Fetcher::new(fast()).unwrap();
    for u in ["ftp://example.com/a", "mailto:a@b.c", "file:///etc/passwd"] {
        let url = Url::parse(u).unwrap();
        let r = f.fetch(&url, &any).await;
        assert_eq!(err_kind(r), "invalid_url", "{u}");
        assert!(!f.robots_allowed(&url, &any).await);
    }
}

#[tokio::test]
async fn redirect_to_non_http_is_invalid() {
    let server = Server::start(|_, _| Reply::redirect(302, "mailto:x@y.z")).await;
    let f = Fetcher::new(fast()).unwrap();
    let r = f.fetch(&server.url("/m"), &any).await;
    assert_eq!(err_kind(r), "invalid_url");
}

#[test]
fn config_defaults_and_unknown_fields() {
    let c: FetchConfig = serde_json::from_str(r#"{"per_host_delay_ms": 10}"#).unwrap();
    assert_eq!(c.per_host_delay_ms, 10);
    assert_eq!(c.max_body_bytes, 10 * 1024 * 1024);
    assert_eq!(c.max_redirects, 5);
    assert_eq!(c.retries, 3);
    assert_eq!(c.per_host_concurrency, 2);
    assert_eq!(c.concurrency, 32);
    assert!(c.respect_robots);
    assert_eq!(
        c.allowed_content_types,
        vec!["text/html".to_string(), "application/xhtml+xml".to_string()]
    );
    let bad = serde_json::from_str::<FetchConfig>(r#"{"per_host_delay": 10}"#);
    assert!(bad.is_err());
}

/// robots.txt redirects obey the caller's hop policy, like page redirects:
/// a hop the caller refuses is not requested, and robots.txt then counts as
/// missing (allow all), as after too many redirects.
#[tokio::test]
async fn robots_redirect_out_of_scope_is_not_followed() {
    let other = Server::start(|path, _| match path {
        "/robots.txt" => Reply::text("User-agent: *\nDisallow: /\n"),
        _ => Reply::html("other"),
    })
    .await;
    let elsewhere = other.url("/robots.txt").to_string();
    let server = Server::start(move |path, _| match path {
        "/robots.txt" => Reply::redirect(301, &elsewhere),
        _ => Reply::html("page"),
    })
    .await;
    let home = server.url("/");
    let same_host = move |u: &Url| u.port() == home.port();
    let f = Fetcher::new(robots_cfg()).unwrap();
    let got = f.fetch(&server.url("/page"), &same_host).await.unwrap();
    assert_eq!(got.body, b"page");
    assert_eq!(
        other.count("/robots.txt"),
        0,
        "out-of-scope robots.txt hop was requested"
    );
    assert!(f.robots_allowed(&server.url("/x"), &same_host).await);
    assert_eq!(other.count("/robots.txt"), 0);
}

// Private addresses: refused by default, checked on the address connected to.

/// The server's URL under another host name, resolved by `resolve`.
fn named(server: &Server, host: &str, path: &str) -> Url {
    Url::parse(&format!("http://{host}:{}{path}", server.addr.port())).unwrap()
}

fn resolving(pairs: &[(&str, &[&str])]) -> std::collections::BTreeMap<String, Vec<std::net::IpAddr>> {
    pairs
        .iter()
        .map(|(h, ips)| (h.to_string(), ips.iter().map(|ip| ip.parse().unwrap()).collect()))
        .collect()
}

#[tokio::test]
async fn private_literal_hosts_are_refused_without_a_request() {
    let server = Server::start(|_, _| Reply::html("<p>inside</p>")).await;
    let f = Fetcher::new(FetchConfig {
        allow_private_hosts: vec![],
        respect_robots: true,
        ..fast()
    })
    .unwrap();
    let e = f.fetch(&server.url("/"), &any).await.unwrap_err();
    assert_eq!(e.kind(), "private_address");
    assert!(!e.is_transient(), "a refusal is final");
    assert!(e.to_string().contains("127.0.0.1"), "{e}");
    assert!(
        server.requests().is_empty(),
        "nothing reached the server, robots.txt included"
    );
    // The cloud metadata address, whatever the port.
    let meta = Url::parse("http://169.254.169.254/latest/meta-data/").unwrap();
    assert_eq!(err_kind(f.fetch(&meta, &any).await), "private_address");
}

#[tokio::test]
async fn names_resolving_to_private_addresses_are_refused_at_connect() {
    let server = Server::start(|_, _| Reply::html("<p>inside</p>")).await;
    let f = Fetcher::new(FetchConfig {
        allow_private_hosts: vec![],
        respect_robots: true,
        resolve: resolving(&[("rebind.test", &["127.0.0.1"])]),
        ..fast()
    })
    .unwrap();
    let e = f
        .fetch(&named(&server, "rebind.test", "/"), &any)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), "private_address", "{e}");
    assert!(e.to_string().contains("rebind.test"), "{e}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_mixed_answer_never_connects_to_its_private_address() {
    let server = Server::start(|_, _| Reply::html("<p>inside</p>")).await;
    let f = Fetcher::new(FetchConfig {
        allow_private_hosts: vec![],
        connect_timeout_ms: 300,
        total_timeout_ms: 600,
        retries: 0,
        // 192.88.99.1 is public (the deprecated 6to4 relay anycast, RFC
        // 7526) and nothing answers on it.
        resolve: resolving(&[("mixed.test", &["192.88.99.1", "127.0.0.1"])]),
        ..fast()
    })
    .unwrap();
    let e = f
        .fetch(&named(&server, "mixed.test", "/"), &any)
        .await
        .unwrap_err();
    assert!(matches!(e.kind(), "timeout" | "connect"), "{e}");
    assert!(server.requests().is_empty(), "the loopback address was not tried");
}

#[tokio::test]
async fn allowed_hosts_and_allow_mode_reach_private_addresses() {
    let server = Server::start(|_, _| Reply::html("<p>inside</p>")).await;
    let f = Fetcher::new(FetchConfig {
        allow_private_hosts: vec!["Intranet.test".into()],
        resolve: resolving(&[("intranet.test", &["127.0.0.1"])]),
        ..fast()
    })
    .unwrap();
    let page = f
        .fetch(&named(&server, "intranet.test", "/"), &any)
        .await
        .unwrap();
    assert_eq!(page.status, 200);
    let open = Fetcher::new(FetchConfig {
        allow_private_hosts: vec![],
        private_addresses: simcrawl_fetch::PrivateAddresses::Allow,
        ..fast()
    })
    .unwrap();
    assert_eq!(open.fetch(&server.url("/"), &any).await.unwrap().status, 200);
}

#[tokio::test]
async fn a_redirect_into_a_private_address_is_refused() {
    let server = Server::start(|path, _| match path {
        "/" => Reply::redirect(302, "http://10.255.255.1/admin"),
        _ => Reply::html("<p>x</p>"),
    })
    .await;
    let f = Fetcher::new(fast()).unwrap();
    let e = f.fetch(&server.url("/"), &any).await.unwrap_err();
    assert_eq!(e.kind(), "private_address", "{e}");
    assert!(e.to_string().contains("10.255.255.1"), "{e}");
}

/// A robots.txt redirect is a request like any other: one into a private
/// IP literal is refused too (IP literals are never resolved, so the
/// resolver's check does not see them). 127.0.0.2 is loopback, and only
/// 127.0.0.1 is allowed here.
#[tokio::test]
async fn a_robots_redirect_into_a_private_literal_is_not_requested() {
    let inside = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let inside_addr = inside.local_addr().unwrap();
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    std::thread::spawn(move || {
        for conn in inside.incoming() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(conn);
        }
    });
    let target = format!("http://{inside_addr}/robots.txt");
    let server = Server::start(move |path, _| match path {
        "/robots.txt" => Reply::redirect(302, &target),
        _ => Reply::html("page"),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        retries: 0,
        ..robots_cfg()
    })
    .unwrap();
    let got = f.fetch(&server.url("/page"), &any).await;
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the private robots.txt redirect target was connected to"
    );
    assert_eq!(got.unwrap().body, b"page", "robots.txt refused counts as none");
}

// What the fetcher waits for, and failing fast when robots.txt cannot be
// connected to (issue 10).

#[tokio::test]
async fn robots_connection_refused_marks_the_host_unreachable_after_retries() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let f = Fetcher::new(FetchConfig {
        retries: 2,
        robots_unavailable_retry_ms: 60_000,
        ..robots_cfg()
    })
    .unwrap();
    let t0 = Instant::now();
    let err = f
        .fetch(&Url::parse(&format!("http://{addr}/a")).unwrap(), &any)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "host_unreachable", "{err}");
    assert!(!err.is_transient());
    // The host's other pages fail at once, without a new attempt.
    let t1 = Instant::now();
    let err = f
        .fetch(&Url::parse(&format!("http://{addr}/b")).unwrap(), &any)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "host_unreachable");
    assert!(t1.elapsed() < Duration::from_millis(100), "{:?}", t1.elapsed());
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let paused = f.paused_hosts();
    assert_eq!(paused.len(), 1, "{paused:?}");
    assert_eq!(paused[0].host, format!("http://{addr}"));
    assert_eq!(paused[0].reason, simcrawl_fetch::PauseReason::Unreachable);
    assert!(paused[0].left > Duration::from_secs(50) && paused[0].left <= Duration::from_secs(60));
}

#[tokio::test]
async fn robots_5xx_and_retry_after_show_as_paused() {
    let server = Server::start(|path, _| match path {
        "/robots.txt" => Reply::status(503),
        _ => Reply::html("page"),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        robots_unavailable_retry_ms: 30_000,
        ..robots_cfg()
    })
    .unwrap();
    assert!(f.paused_hosts().is_empty());
    let err = f.fetch(&server.url("/x"), &any).await.unwrap_err();
    assert_eq!(err.kind(), "robots_unavailable");
    let paused = f.paused_hosts();
    assert_eq!(paused.len(), 1, "{paused:?}");
    assert_eq!(paused[0].reason, simcrawl_fetch::PauseReason::RobotsUnavailable);
    assert!(
        paused[0].to_string().contains("robots.txt unavailable"),
        "{}",
        paused[0]
    );
}

#[tokio::test]
async fn large_bodies_share_the_memory_budget() {
    // 4 bodies of 1 MiB at once, a budget of 1.5 MiB beyond the free 256 KiB
    // of each: each gets its share in turn, none is cut, and the shares are
    // given back when the pages are dropped.
    let big = vec![b'a'; 1024 * 1024];
    let server = Server::start(move |_, _| Reply::Full {
        status: 200,
        headers: vec![("Content-Type".into(), "text/html".into())],
        body: big.clone(),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        max_bytes_in_flight: 1536 * 1024,
        per_host_concurrency: 4,
        ..fast()
    })
    .unwrap();
    let mut tasks = Vec::new();
    for i in 0..4 {
        let (f, url) = (f.clone(), server.url(&format!("/p{i}")));
        tasks.push(tokio::spawn(async move {
            let page = f.fetch(&url, &any).await.unwrap();
            let share = page.budget.bytes();
            // Held while the page is "parsed".
            tokio::time::sleep(Duration::from_millis(100)).await;
            (page.body.len(), page.truncated, share)
        }));
    }
    for t in tasks {
        let (len, truncated, share) = t.await.unwrap();
        assert_eq!(len, 1024 * 1024);
        assert!(!truncated);
        assert_eq!(
            share,
            768 * 1024,
            "the share is what the body uses beyond 256 KiB"
        );
    }
    // All given back: a body as large as the whole budget allows is read.
    let page = f.fetch(&server.url("/again"), &any).await.unwrap();
    assert_eq!(page.body.len(), 1024 * 1024);
}

#[tokio::test]
async fn a_body_larger_than_the_budget_is_cut_at_it() {
    let big = vec![b'a'; 2 * 1024 * 1024];
    let server = Server::start(move |_, _| Reply::Full {
        status: 200,
        headers: vec![("Content-Type".into(), "text/html".into())],
        body: big.clone(),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        max_bytes_in_flight: 512 * 1024,
        ..fast()
    })
    .unwrap();
    let page = f.fetch(&server.url("/x"), &any).await.unwrap();
    assert!(page.truncated);
    assert_eq!(page.body.len(), 768 * 1024);
}

#[tokio::test]
async fn a_recording_fetcher_keeps_every_response_it_received() {
    let page = "<html><body>".to_string() + &"archived ".repeat(200) + "</body></html>";
    let compressed = gzip(page.as_bytes());
    let server = Server::start(move |path, _| match path {
        "/robots.txt" => Reply::Full {
            status: 404,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: b"no robots here".to_vec(),
        },
        "/a" => Reply::redirect(301, "/b"),
        "/b" => Reply::Full {
            status: 200,
            headers: vec![
                ("Content-Type".into(), "text/html".into()),
                ("Content-Encoding".into(), "gzip".into()),
                ("X-Order".into(), "1".into()),
            ],
            body: compressed.clone(),
        },
        "/gone" => Reply::Full {
            status: 410,
            headers: vec![("Content-Type".into(), "text/html".into())],
            body: b"<p>gone for good</p>".to_vec(),
        },
        _ => Reply::status(404),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        respect_robots: true,
        ..fast()
    })
    .unwrap();
    // Off (the default): nothing is kept.
    let (got, tape) = f.fetch_recorded(&server.url("/a"), &any).await;
    assert!(got.unwrap().head.is_none() && tape.is_empty());

    let f = Fetcher::new(FetchConfig {
        respect_robots: true,
        ..fast()
    })
    .unwrap();
    f.set_recording(true);
    let (got, tape) = f.fetch_recorded(&server.url("/a"), &any).await;
    let got = got.unwrap();
    // robots.txt (404, its body kept), then the redirect hop.
    let seen: Vec<(String, u16)> = tape
        .iter()
        .map(|e| (e.head.url.path().to_string(), e.head.status))
        .collect();
    assert_eq!(seen, vec![("/robots.txt".into(), 404), ("/a".into(), 301)]);
    assert_eq!(tape[0].body, b"no robots here");
    assert_eq!(tape[1].head.header("location").as_deref(), Some("/b"));
    let head = got.head.expect("the final response's head");
    assert_eq!(
        (head.url.path(), head.status, head.version),
        ("/b", 200, "HTTP/1.1")
    );
    // The headers as the client hands them over: decoding the body, it
    // drops Content-Encoding and Content-Length (the archive then writes
    // the decoded body's length).
    assert_eq!(head.header("content-encoding"), None);
    assert_eq!(head.header("content-type").as_deref(), Some("text/html"));
    assert_eq!(head.header("x-order").as_deref(), Some("1"));
    assert_eq!(got.body, page.as_bytes());
    assert_eq!(
        head.remote_addr.map(|a| a.ip().to_string()).as_deref(),
        Some("127.0.0.1")
    );
    let req = String::from_utf8(head.request.clone()).unwrap();
    assert!(
        req.starts_with("GET /b HTTP/1.1\r\n") && req.contains("\r\nhost: 127.0.0.1:"),
        "{req}"
    );

    // An error status: the fetch fails, and its response is kept.
    let (got, tape) = f.fetch_recorded(&server.url("/gone"), &any).await;
    assert_eq!(err_kind(got), "status_4xx");
    assert_eq!(tape.len(), 1, "robots.txt is cached: only the 410");
    assert_eq!(
        (tape[0].head.status, &tape[0].body[..]),
        (410, &b"<p>gone for good</p>"[..])
    );
}

#[tokio::test]
async fn a_revisit_sends_the_validators_and_a_304_is_a_page_without_body() {
    let server = Server::start(|path, n| match (path, n) {
        ("/p", 0) => Reply::html("<p>v1</p>")
            .header("ETag", "\"abc\"")
            .header("Last-Modified", "Wed, 21 Oct 2026 07:28:00 GMT"),
        ("/p", _) => Reply::status(304),
        _ => Reply::status(404),
    })
    .await;
    let f = Fetcher::new(fast()).unwrap();
    let first = f.fetch(&server.url("/p"), &any).await.unwrap();
    assert_eq!(first.validators.etag.as_deref(), Some("\"abc\""));
    assert_eq!(
        first.validators.last_modified.as_deref(),
        Some("Wed, 21 Oct 2026 07:28:00 GMT")
    );
    let (again, _) = f
        .fetch_conditional(&server.url("/p"), &any, &first.validators)
        .await;
    let again = again.unwrap();
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let req = &server.requests()[1].headers;
    assert!(req.contains("if-none-match: \"abc\""), "{req}");
    assert!(
        req.contains("if-modified-since: wed, 21 oct 2026 07:28:00 gmt"),
        "{req}"
    );
    // Without validators a 304 stays what it is for a plain fetch: an error.
    assert_eq!(err_kind(f.fetch(&server.url("/p"), &any).await), "status_other");
}

/// A host that accepts the connection and never answers is overloaded,
/// not idle: the timeout counts as an answer as slow as the wait (the
/// delay moves halfway to it), so the next requests to it are spaced by
/// more than the floor.
#[tokio::test]
async fn autothrottle_counts_a_timeout_as_a_slow_answer() {
    let server = Server::start(|path, _| match path {
        "/slow" => Reply::Hang,
        _ => Reply::html("<p>ok</p>"),
    })
    .await;
    let f = Fetcher::new(FetchConfig {
        per_host_delay_ms: 100,
        autothrottle: simcrawl_fetch::AutoThrottle::On,
        autothrottle_max_delay_ms: 5_000,
        connect_timeout_ms: 500,
        total_timeout_ms: 1_000,
        idle_body_timeout_ms: 1_000,
        retries: 0,
        ..fast()
    })
    .unwrap();
    assert_eq!(err_kind(f.fetch(&server.url("/slow"), &any).await), "timeout");
    assert_eq!(server.count("/slow"), 1, "the request reached the server");
    // Halfway from 100 ms to the 1 s waited: 550 ms between the next two
    // starts (a lower bound: a loaded machine only adds to it), where the
    // floor alone gives 100 ms.
    f.fetch(&server.url("/first"), &any).await.unwrap();
    f.fetch(&server.url("/second"), &any).await.unwrap();
    let a = server.times("/first")[0];
    let b = server.times("/second")[0];
    assert!(b - a >= Duration::from_millis(500), "{:?}", b - a);
    assert_eq!(f.throttled(), 0, "no 429 or 503 was answered");
}

#[tokio::test]
async fn autothrottle_backs_a_host_off_after_429_and_counts_it() {
    let server = Server::start(|path, _| match path {
        "/busy" => Reply::status(429),
        _ => Reply::html("<p>ok</p>"),
    })
    .await;
    let cfg = FetchConfig {
        per_host_delay_ms: 100,
        autothrottle: simcrawl_fetch::AutoThrottle::On,
        autothrottle_max_delay_ms: 5_000,
        retries: 0,
        ..fast()
    };
    let f = Fetcher::new(cfg.clone()).unwrap();
    assert_eq!(err_kind(f.fetch(&server.url("/busy"), &any).await), "status_4xx");
    assert_eq!(f.throttled(), 1);
    // The delay doubled from 100 ms: the next two requests are at least
    // 200 ms apart (a lower bound: a loaded machine only adds to it).
    f.fetch(&server.url("/first"), &any).await.unwrap();
    f.fetch(&server.url("/second"), &any).await.unwrap();
    let a = server.times("/first")[0];
    let b = server.times("/second")[0];
    assert!(b - a >= Duration::from_millis(190), "{:?}", b - a);
    // Off (or auto with a delay set by hand): nothing counted.
    let off = Fetcher::new(FetchConfig {
        autothrottle: simcrawl_fetch::AutoThrottle::Auto,
        ..cfg
    })
    .unwrap();
    let _ = off.fetch(&server.url("/busy"), &any).await;
    assert_eq!(off.throttled(), 0);
    assert!(
        !FetchConfig {
            per_host_delay_ms: 0,
            ..FetchConfig::default()
        }
        .autothrottle_on()
    );
    assert!(FetchConfig::default().autothrottle_on());
}
