//! A proxy named in the config (`fetch.proxy`): the proxy resolves target
//! names itself, so the fetcher refuses private targets before sending
//! anything to it: IP literals, and names that resolve locally (or by
//! `fetch.resolve`) to a private address.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use simcrawl_fetch::{FetchConfig, FetchError, Fetcher, Url};

/// A forward proxy on 127.0.0.1 that records each request line and answers
/// a page (or, for paths starting with `/to/`, a redirect to the rest of the
/// path as an absolute URL: `/to/http://10.0.0.1/` redirects there).
struct Proxy {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&requests);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let line = head.lines().next().unwrap_or_default().to_string();
                log.lock().push(line.clone());
                let target = line.split(' ').nth(1).unwrap_or_default();
                let path = Url::parse(target)
                    .map(|u| u.path().to_string())
                    .unwrap_or_default();
                let reply = match path.strip_prefix("/to/") {
                    Some(location) => format!(
                        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    ),
                    None => {
                        let body = "<p>via the proxy</p>";
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        )
                    }
                };
                let _ = conn.write_all(reply.as_bytes());
            }
        });
        Proxy { port, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().clone()
    }
}

fn resolving(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<IpAddr>> {
    pairs
        .iter()
        .map(|(h, ip)| (h.to_string(), vec![ip.parse().unwrap()]))
        .collect()
}

/// The default config, through `proxy`, with names pinned by `resolve`.
fn via(proxy: String) -> FetchConfig {
    FetchConfig {
        proxy: Some(proxy),
        connect_timeout_ms: 2_000,
        total_timeout_ms: 5_000,
        retries: 0,
        per_host_delay_ms: 0,
        resolve: resolving(&[
            ("intranet.test", "10.0.0.7"),
            ("nat64-metadata.test", "64:ff9b::a9fe:a9fe"),
            ("public.test", "93.184.216.34"),
            ("allowed.test", "10.0.0.8"),
        ]),
        allow_private_hosts: vec!["allowed.test".into()],
        ..FetchConfig::default()
    }
}

fn any(_: &Url) -> bool {
    true
}

fn refused(r: Result<simcrawl_fetch::Fetched, FetchError>, target: &str) {
    match r {
        Ok(page) => panic!(
            "{target} was fetched through the proxy: {:?}",
            String::from_utf8_lossy(&page.body)
        ),
        Err(e) => assert_eq!(e.kind(), "private_address", "{target}: {e}"),
    }
}

#[tokio::test]
async fn configured_proxy_never_receives_private_targets() {
    let proxy = Proxy::start();
    let f = Fetcher::new(via(format!("http://127.0.0.1:{}", proxy.port))).unwrap();
    for target in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[::1]/",
        "http://[64:ff9b::a00:1]/",
        // Names the proxy would resolve itself: checked locally first.
        "http://intranet.test/",
        "http://nat64-metadata.test/",
        "http://localhost/",
    ] {
        refused(f.fetch(&Url::parse(target).unwrap(), &any).await, target);
    }
    assert_eq!(
        proxy.requests(),
        Vec::<String>::new(),
        "the proxy received requests"
    );
}

#[tokio::test]
async fn configured_proxy_carries_public_names_and_allowed_hosts() {
    let proxy = Proxy::start();
    // The proxy named by a host that resolves to loopback: the proxy itself
    // is not a crawl target, so its address is not refused.
    let f = Fetcher::new(via(format!("http://localhost:{}", proxy.port))).unwrap();
    let page = f
        .fetch(&Url::parse("http://public.test/page").unwrap(), &any)
        .await
        .unwrap();
    assert_eq!(page.body, b"<p>via the proxy</p>");
    // A name that does not resolve here is left to the proxy to resolve.
    let page = f
        .fetch(&Url::parse("http://unknown-name.invalid/x").unwrap(), &any)
        .await
        .unwrap();
    assert_eq!(page.status, 200);
    // An allowed private host goes through as well.
    let page = f
        .fetch(&Url::parse("http://allowed.test/y").unwrap(), &any)
        .await
        .unwrap();
    assert_eq!(page.status, 200);
    let seen = proxy.requests();
    for line in [
        "GET http://public.test/page HTTP/1.1",
        "GET http://unknown-name.invalid/x HTTP/1.1",
        "GET http://allowed.test/y HTTP/1.1",
    ] {
        assert!(seen.iter().any(|l| l == line), "{line:?} not in {seen:?}");
    }
}

#[tokio::test]
async fn redirects_through_the_proxy_into_private_targets_are_refused() {
    let proxy = Proxy::start();
    let f = Fetcher::new(FetchConfig {
        respect_robots: false,
        ..via(format!("http://127.0.0.1:{}", proxy.port))
    })
    .unwrap();
    for private in ["http://10.0.0.1/admin", "http://intranet.test/admin"] {
        let from = format!("http://public.test/to/{private}");
        refused(f.fetch(&Url::parse(&from).unwrap(), &any).await, private);
    }
    let seen = proxy.requests();
    assert_eq!(seen.len(), 2, "only the two redirecting pages: {seen:?}");
    assert!(seen.iter().all(|l| l.contains("public.test/to/")), "{seen:?}");
}

#[test]
fn an_unusable_proxy_is_a_config_error() {
    let e = Fetcher::new(FetchConfig {
        proxy: Some("http://".into()),
        ..FetchConfig::default()
    })
    .unwrap_err();
    assert_eq!(e.kind(), "client", "{e}");
    assert!(e.to_string().contains("fetch.proxy"), "{e}");
}
