//! The counters of a crawl: kept by the daemon's writer, read by the
//! progress line, `SIGUSR1`, `stats.json` and the metrics endpoint. A module
//! of its own so the daemon and [`crate::metrics`] both use it without
//! depending on each other.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::sinks::VerdictCounts;

/// Counters of a crawl, persisted with each checkpoint so they add up
/// across resumes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Stats {
    /// Pages whose fetch finished (success or final failure).
    pub fetched: u64,
    /// Kept pages and drops per tier (stored flat: `kept`, `dup_url`...).
    /// `dup_url` counts URL-tier hits: links and redirect targets already
    /// seen.
    #[serde(flatten)]
    pub verdicts: VerdictCounts,
    /// Final failures by kind (`timeout`, `status_4xx`, `robots_disallowed`...).
    pub errors: BTreeMap<String, u64>,
    /// Body bytes received.
    pub bytes: u64,
    /// Bodies cut at the size limit.
    pub truncated: u64,
    /// Pages whose `<meta name=robots>` says noindex: their links are
    /// followed, but they are neither kept nor indexed.
    #[serde(default)]
    pub noindex: u64,
    /// Transient failures put back in the frontier for another attempt
    /// (not counted as fetched).
    #[serde(default)]
    pub requeued: u64,
    /// Hosts whose politeness state and cached robots.txt the fetcher
    /// evicted (`fetch.max_hosts` reached).
    #[serde(default)]
    pub hosts_evicted: u64,
    /// Pages judged without their host's learnt template blocks (`[template]`).
    #[serde(default)]
    pub template_stripped: u64,
    /// Frontier entries rewritten by a URL rewrite rule (`[crawl.dust]`)
    /// before their fetch: put back under the rewritten URL (or dropped by
    /// the URL tier), never fetched, not counted as fetched.
    #[serde(default)]
    pub dust_rewritten: u64,
    /// Links rewritten by a URL rewrite rule before they entered the
    /// frontier.
    #[serde(default)]
    pub dust_links_rewritten: u64,
    /// URLs a withdrawn rule had rewritten, put back in the frontier under
    /// their own URL (`crate::dust`): their pages are fetched after all.
    #[serde(default)]
    pub dust_restored: u64,
    /// Rewrites not recorded because their rule's record was full
    /// (`crawl.dust.max_recorded`): their URLs are not given back if the
    /// rule is withdrawn.
    #[serde(default)]
    pub dust_unrecorded: u64,
    /// The URL rewrite rules learnt (`HOST RULE (N examples)`), in the
    /// order they were learnt.
    #[serde(default)]
    pub dust_rules: Vec<String>,
    /// Wall-clock seconds spent crawling, over all runs.
    pub seconds: f64,
}

impl Stats {
    /// A page whose fetch failed for good: fetched, and one more error of
    /// its kind (both backends' writers count failures so).
    pub fn count_failure(&mut self, kind: &str) {
        self.fetched += 1;
        *self.errors.entry(kind.to_string()).or_insert(0) += 1;
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let errors: u64 = self.errors.values().sum();
        write!(
            f,
            "fetched {}  kept {}  dropped: title {} / content {}  url-tier hits {}  errors {}",
            self.fetched,
            self.verdicts.kept,
            self.verdicts.dup_title,
            self.verdicts.dup_content,
            self.verdicts.dup_url,
            errors
        )?;
        if !self.errors.is_empty() {
            let kinds: Vec<String> = self.errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
            write!(f, " ({})", kinds.join(", "))?;
        }
        write!(
            f,
            "  {:.1} MB  {:.0} pages/s",
            self.bytes as f64 / 1e6,
            self.fetched as f64 / self.seconds.max(1e-9)
        )
    }
}
