//! A progress bar at a terminal; periodic log lines otherwise.

use std::io::IsTerminal;
use std::time::Duration;

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
