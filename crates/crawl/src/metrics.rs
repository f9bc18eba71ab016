//! `--metrics ADDR`: the crawl's counters in Prometheus text format.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;

use simcrawl_fetch::{Fetcher, PauseReason, PausedHost};

use crate::stats::Stats;

/// Connections served at once; more wait in the listen backlog.
pub const MAX_CONNECTIONS: usize = 16;

/// Paused hosts listed one by one at most (the longest waits first): the
/// count per reason covers them all, the list bounds the label values.
pub const PAUSED_LISTED: usize = 20;

/// The paused hosts as gauges: how many per reason, and the seconds left for
/// the first [`PAUSED_LISTED`].
pub fn render_paused(paused: &[PausedHost]) -> String {
    let mut out = String::from(
        "# HELP simcrawl_hosts_paused Hosts waited for, by reason.\n# TYPE simcrawl_hosts_paused gauge\n",
    );
    for r in [
        PauseReason::RobotsUnavailable,
        PauseReason::Unreachable,
        PauseReason::RetryAfter,
        PauseReason::Backoff,
    ] {
        let n = paused.iter().filter(|p| p.reason == r).count();
        out.push_str(&format!(
            "simcrawl_hosts_paused{{reason=\"{}\"}} {n}\n",
            r.as_str()
        ));
    }
    out.push_str(
        "# HELP simcrawl_host_paused_seconds Seconds before a paused host is tried again.\n# TYPE simcrawl_host_paused_seconds gauge\n",
    );
    for p in paused.iter().take(PAUSED_LISTED) {
        let host = p.host.replace(['\\', '"', '\n'], "_");
        out.push_str(&format!(
            "simcrawl_host_paused_seconds{{host=\"{host}\",reason=\"{}\"}} {:.1}\n",
            p.reason.as_str(),
            p.left.as_secs_f64()
        ));
    }
    out
}

/// Renders the counters in the Prometheus exposition format.
pub fn render(s: &Stats) -> String {
    let mut out = String::new();
    let mut counter = |name: &str, help: &str, value: u64| {
        out.push_str(&format!(
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"
        ));
    };
    counter(
        "simcrawl_pages_fetched_total",
        "Pages whose fetch finished.",
        s.fetched,
    );
    counter("simcrawl_pages_kept_total", "Pages kept.", s.verdicts.kept);
    counter("simcrawl_bytes_total", "Body bytes received.", s.bytes);
    counter(
        "simcrawl_truncated_total",
        "Bodies cut at the size limit.",
        s.truncated,
    );
    counter(
        "simcrawl_requeued_total",
        "Transient failures put back in the frontier.",
        s.requeued,
    );
    counter(
        "simcrawl_hosts_evicted_total",
        "Hosts whose politeness state was evicted (fetch.max_hosts).",
        s.hosts_evicted,
    );
    out.push_str(
        "# HELP simcrawl_duplicates_total Duplicates by tier.\n# TYPE simcrawl_duplicates_total counter\n",
    );
    for (tier, v) in [
        ("url", s.verdicts.dup_url),
        ("title", s.verdicts.dup_title),
        ("content", s.verdicts.dup_content),
    ] {
        out.push_str(&format!("simcrawl_duplicates_total{{tier=\"{tier}\"}} {v}\n"));
    }
    out.push_str(
        "# HELP simcrawl_errors_total Final failures by kind.\n# TYPE simcrawl_errors_total counter\n",
    );
    for (kind, v) in &s.errors {
        out.push_str(&format!("simcrawl_errors_total{{kind=\"{kind}\"}} {v}\n"));
    }
    out
}

/// Longest request head read: a Prometheus scrape's is a few hundred
/// bytes; a client sending more is answered as if it had ended there.
pub const MAX_REQUEST_HEAD: usize = 2048;

/// Pause after a failed accept (e.g. out of file descriptors): the error
/// usually lasts a moment, and retrying at once would spin a core.
pub const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// How long a client may take to send its request, and then to read the
/// answer; a silent client is hung up on after this.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// Binds `addr` and answers every request with the current counters.
///
/// At most [`MAX_CONNECTIONS`] clients are served at once, each for at most
/// [`CLIENT_TIMEOUT`] per phase, so clients that connect and send nothing
/// cannot starve the others; an accept error (e.g. out of file descriptors)
/// is logged and accepting goes on.
/// With `fetcher`, the hosts it waits for are served too ([`render_paused`]).
pub async fn serve(addr: &str, stats: Arc<Mutex<Stats>>, fetcher: Option<Fetcher>) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot serve metrics on {addr}"))?;
    tracing::info!("metrics at http://{}/metrics", listener.local_addr()?);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::spawn(async move {
        loop {
            // A slot first: beyond the cap, clients wait in the backlog.
            let Ok(permit) = slots.clone().acquire_owned().await else {
                return;
            };
            let sock = match listener.accept().await {
                Ok((sock, _)) => sock,
                Err(e) => {
                    tracing::warn!("metrics endpoint: cannot accept a connection: {e}");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            };
            let stats = stats.clone();
            let fetcher = fetcher.clone();
            tokio::spawn(async move {
                answer(sock, &stats, fetcher.as_ref()).await;
                drop(permit);
            });
        }
    });
    Ok(())
}

/// Reads one request head (within [`CLIENT_TIMEOUT`]) and writes the counters.
async fn answer(mut sock: tokio::net::TcpStream, stats: &Mutex<Stats>, fetcher: Option<&Fetcher>) {
    let mut buf = [0u8; MAX_REQUEST_HEAD];
    let mut len = 0;
    let read = tokio::time::timeout(CLIENT_TIMEOUT, async {
        while len < buf.len() {
            match sock.read(&mut buf[len..]).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => len += n,
            }
            if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
        true
    })
    .await;
    if !matches!(read, Ok(true)) {
        tracing::debug!("metrics endpoint: no request within {CLIENT_TIMEOUT:?}; hanging up");
        return;
    }
    let mut body = render(&stats.lock());
    if let Some(f) = fetcher {
        body.push_str(&render_paused(&f.paused_hosts()));
    }
    let resp = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(CLIENT_TIMEOUT, sock.write_all(resp.as_bytes())).await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::time::Instant;
    use tokio::net::TcpStream;

    async fn get(addr: &str) -> String {
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).await.unwrap();
        out
    }

    /// Clients that connect and send nothing neither keep their connection
    /// forever nor stop others from getting the counters.
    #[tokio::test]
    async fn silent_clients_do_not_starve_the_endpoint() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let stats = Arc::new(Mutex::new(Stats {
            fetched: 42,
            ..Stats::default()
        }));
        serve(&addr, stats, None).await.unwrap();
        let mut silent = Vec::new();
        for _ in 0..(MAX_CONNECTIONS + 8) {
            silent.push(TcpStream::connect(&addr).await.unwrap());
        }
        let got = tokio::time::timeout(Duration::from_secs(10), get(&addr))
            .await
            .expect("metrics not served while silent clients hold connections");
        assert!(got.contains("simcrawl_pages_fetched_total 42"), "{got}");
        // The server hangs up on a silent client after its read timeout.
        let t0 = Instant::now();
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(10), silent[0].read(&mut buf))
            .await
            .expect("a silent connection was kept open");
        assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn renders_paused_hosts() {
        let paused = vec![
            PausedHost {
                host: "http://a.test:80".into(),
                reason: PauseReason::Unreachable,
                left: Duration::from_millis(59_500),
            },
            PausedHost {
                host: "http://b.test:80".into(),
                reason: PauseReason::RetryAfter,
                left: Duration::from_secs(3),
            },
        ];
        let text = render_paused(&paused);
        assert!(
            text.contains("simcrawl_hosts_paused{reason=\"unreachable\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("simcrawl_hosts_paused{reason=\"backoff\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "simcrawl_host_paused_seconds{host=\"http://a.test:80\",reason=\"unreachable\"} 59.5\n"
            ),
            "{text}"
        );
        let line = crate::progress::waiting_for(&paused);
        assert_eq!(
            line,
            "  waiting for 2 hosts: http://a.test:80 (unreachable, its pages fail, 60 s left), \
             http://b.test:80 (Retry-After, 3 s left)"
        );
        assert_eq!(crate::progress::waiting_for(&[]), "");
    }

    #[test]
    fn renders_counters_with_labels() {
        let mut s = Stats {
            fetched: 7,
            verdicts: crate::output::sinks::VerdictCounts {
                dup_content: 2,
                ..Default::default()
            },
            hosts_evicted: 5,
            ..Default::default()
        };
        s.errors.insert("timeout".into(), 3);
        let text = render(&s);
        assert!(text.contains("simcrawl_pages_fetched_total 7\n"), "{text}");
        assert!(text.contains("simcrawl_hosts_evicted_total 5\n"), "{text}");
        assert!(
            text.contains("simcrawl_duplicates_total{tier=\"content\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("simcrawl_errors_total{kind=\"timeout\"} 3\n"),
            "{text}"
        );
    }
}
