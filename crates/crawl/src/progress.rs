//! A progress bar at a terminal; periodic log lines otherwise.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use simcrawl_fetch::PausedHost;

/// Paused hosts named in the progress line and the SIGUSR1 log at most
/// (the longest waits first); the rest are counted.
pub const PAUSED_SHOWN: usize = 3;

/// What a crawl waits for, for the progress line and the SIGUSR1 log:
/// "waiting for 2 hosts: http://a.test:80 (robots.txt unavailable, 52 s
/// left), ..."; empty when no host is paused.
pub fn waiting_for(paused: &[PausedHost]) -> String {
    if paused.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = paused
        .iter()
        .take(PAUSED_SHOWN)
        .map(ToString::to_string)
        .collect();
    let more = paused.len().saturating_sub(PAUSED_SHOWN);
    let hosts = if paused.len() == 1 { "host" } else { "hosts" };
    let mut s = format!("  waiting for {} {hosts}: {}", paused.len(), shown.join(", "));
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

/// The URLs a crawl has put back to be retried later, each with when and
/// why: what a finite crawl that seems idle waits for ("3 URLs wait to
/// retry until 16:40:05 UTC (slowloris.test: timeout)"). Shared by the
/// writer, which records them, and the progress line.
#[derive(Clone, Debug, Default)]
pub struct RetryWaits(Arc<Mutex<HashMap<String, (u64, &'static str)>>>);

impl RetryWaits {
    /// `url` is to be retried at `due_ms` (Unix milliseconds) after a
    /// failure of kind `why`.
    pub fn waiting(&self, url: &url::Url, due_ms: u64, why: &'static str) {
        self.0.lock().insert(url.as_str().to_string(), (due_ms, why));
    }

    /// `url` is back (retried, or its failure is final).
    pub fn done(&self, url: &url::Url) {
        let mut m = self.0.lock();
        if !m.is_empty() {
            m.remove(url.as_str());
        }
    }

    /// How many URLs wait for a retry.
    pub fn len(&self) -> usize {
        self.0.lock().len()
    }

    /// The progress line's part: how many wait, until when (the last of
    /// them), and the hosts and failures of the last few; empty when none.
    #[must_use]
    pub fn describe(&self) -> String {
        let m = self.0.lock();
        let Some(last) = m.values().map(|v| v.0).max() else {
            return String::new();
        };
        let mut by_due: Vec<(&String, &(u64, &'static str))> = m.iter().collect();
        by_due.sort_by(|a, b| b.1.0.cmp(&a.1.0).then_with(|| a.0.cmp(b.0)));
        let mut shown: Vec<String> = Vec::new();
        for (u, (_, why)) in by_due {
            let host = url::Url::parse(u)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .unwrap_or_default();
            let item = format!("{host}: {why}");
            if !shown.contains(&item) {
                shown.push(item);
            }
            if shown.len() == PAUSED_SHOWN {
                break;
            }
        }
        let secs = last / 1000 % 86_400;
        format!(
            "  {} {} to retry until {:02}:{:02}:{:02} UTC ({})",
            m.len(),
            if m.len() == 1 { "URL waits" } else { "URLs wait" },
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            shown.join(", ")
        )
    }
}

/// Progress of a long run.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A byte-counting bar (batch input).
    pub fn bytes(total: u64, what: &str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        ) {
            bar.set_style(style);
        }
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar: Some(bar) }
    }

    /// A spinner with a message (crawl counters).
    pub fn spinner(what: &str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{prefix} [{elapsed_precise}] {spinner} {msg}") {
            bar.set_style(style);
        }
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar: Some(bar) }
    }

    /// Whether a bar is drawn (otherwise the caller logs).
    pub fn is_bar(&self) -> bool {
        self.bar.is_some()
    }

    /// Sets the position.
    pub fn set(&self, pos: u64) {
        if let Some(b) = &self.bar {
            b.set_position(pos);
        }
    }

    /// Sets the message.
    pub fn message(&self, msg: String) {
        if let Some(b) = &self.bar {
            b.set_message(msg);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn retry_waits_say_how_many_until_when_and_why() {
        let w = RetryWaits::default();
        assert_eq!(w.describe(), "");
        let a = url::Url::parse("http://slowloris.test/a").unwrap();
        let b = url::Url::parse("http://slowloris.test/b").unwrap();
        let c = url::Url::parse("http://flaky.test/c").unwrap();
        // 16:40:05 UTC on some day.
        let at = (20_000 * 86_400 + 16 * 3600 + 40 * 60 + 5) * 1000;
        w.waiting(&a, at - 60_000, "timeout");
        w.waiting(&b, at, "timeout");
        w.waiting(&c, at - 1000, "status_5xx");
        assert_eq!(
            w.describe(),
            "  3 URLs wait to retry until 16:40:05 UTC (slowloris.test: timeout, flaky.test: status_5xx)"
        );
        w.done(&b);
        w.done(&c);
        assert_eq!(
            w.describe(),
            "  1 URL waits to retry until 16:39:05 UTC (slowloris.test: timeout)"
        );
    }
}
