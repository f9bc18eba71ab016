//! A proxy named by the environment (HTTP_PROXY, http_proxy, ALL_PROXY) must
//! not carry the fetcher's requests: through a proxy the client never
//! resolves the target itself, so the private-address guard would not see
//! where a link leads. This file is a test binary of its own with a single
//! test, because it changes the process environment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use simcrawl_fetch::{FetchConfig, Fetcher, Url};

/// A "proxy" on 127.0.0.1 that counts connections and answers every request
/// with a page, so a request that reaches it would succeed.
fn start_proxy() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let body = "<p>via the proxy</p>";
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (format!("http://{addr}"), hits)
}

#[test]
fn environment_proxy_is_not_used_and_private_targets_stay_refused() {
    let (proxy, hits) = start_proxy();
    // SAFETY: this binary has no other test, and no other thread reads or
    // writes the environment yet (the proxy thread does not touch it; the
    // runtime is built below, after these calls).
    #[allow(unsafe_code)]
    unsafe {
        for var in [
            "HTTP_PROXY",
            "http_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            std::env::set_var(var, &proxy);
        }
        std::env::remove_var("NO_PROXY");
        std::env::remove_var("no_proxy");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // The default config: no proxy configured, private addresses refused.
        let f = Fetcher::new(FetchConfig {
            retries: 0,
            ..FetchConfig::default()
        })
        .unwrap();
        let any = |_: &Url| true;
        for target in [
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.1/admin",
            // A name: only a local resolution can tell it is loopback.
            "http://localhost:9/",
        ] {
            let url = Url::parse(target).unwrap();
            match f.fetch(&url, &any).await {
                Ok(page) => panic!(
                    "{target} was fetched ({:?}), through the environment's proxy",
                    String::from_utf8_lossy(&page.body)
                ),
                Err(e) => assert_eq!(e.kind(), "private_address", "{target}: {e}"),
            }
        }
    });
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the environment's proxy received a connection"
    );
}
