//! `--metrics ADDR`: the crawl's counters in Prometheus text format.

use std::sync::Arc;

use anyhow::{Context, Result};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::daemon::Stats;

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
    counter("simcrawl_pages_kept_total", "Pages kept.", s.kept);
    counter("simcrawl_bytes_total", "Body bytes received.", s.bytes);
    counter(
        "simcrawl_truncated_total",
        "Bodies cut at the size limit.",
        s.truncated,
    );
    out.push_str(
        "# HELP simcrawl_duplicates_total Duplicates by tier.\n# TYPE simcrawl_duplicates_total counter\n",
    );
    for (tier, v) in [
        ("url", s.dup_url),
        ("title", s.dup_title),
        ("content", s.dup_content),
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

/// Binds `addr` and answers every request with the current counters.
pub async fn serve(addr: &str, stats: Arc<Mutex<Stats>>) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot serve metrics on {addr}"))?;
    tracing::info!("metrics at http://{}/metrics", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let stats = stats.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let _ = sock.read(&mut buf).await;
                let body = render(&stats.lock());
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_with_labels() {
        let mut s = Stats {
            fetched: 7,
            dup_content: 2,
            ..Default::default()
        };
        s.errors.insert("timeout".into(), 3);
        let text = render(&s);
        assert!(text.contains("simcrawl_pages_fetched_total 7\n"), "{text}");
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
