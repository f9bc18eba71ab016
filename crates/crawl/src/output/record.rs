//! The page recorder: a page's outcome turned into its one output line and
//! its counters, in one place for both backends of the daemon (local redb
//! and shared Redis) and for `crawl dedup`. Each backend decides *when* (in
//! which transaction, before which acknowledgement); this module decides
//! *what*: which file, which line, which counter.

use anyhow::Result;
use simcrawl_dedup::{Tier, Verdict};

use super::lines::{DuplicateLine, ErrorLine, KeptLine};
use super::sinks::Outputs;
use crate::daemon::worker::PageResult;
use crate::stats::Stats;

/// Writes the lines of a group of outcomes into `outputs` and counts them
/// in `stats`.
pub struct Recorder<'a> {
    pub outputs: &'a mut Outputs,
    pub stats: &'a mut Stats,
    /// `crawl.write_text`: kept lines carry the page's text.
    pub write_text: bool,
}

impl Recorder<'_> {
    /// A page whose fetch finished, whatever its verdict: the fetch
    /// counters.
    pub fn fetched(&mut self, p: &PageResult) {
        self.stats.fetched += 1;
        self.stats.bytes += p.bytes as u64;
        self.stats.truncated += u64::from(p.truncated);
    }

    /// A page that redirected to a URL the crawl already knows: a URL-tier
    /// copy of it (the target is, or will be, fetched under its own name).
    pub fn url_copy(&mut self, url: &str, of: &str) -> Result<()> {
        self.stats.verdicts.record_duplicate(Tier::Url);
        self.outputs.duplicates.write(&DuplicateLine::url_tier(url, of))
    }

    /// A page whose failure is final (after its retries and requeues).
    pub fn failure(&mut self, url: &str, kind: &str, error: &str) -> Result<()> {
        self.stats.count_failure(kind);
        self.outputs.errors.write(&ErrorLine::page(url, kind, error))
    }

    /// A page the tiers judged (`verdict`), or that asked not to be
    /// indexed (`None`: a `noindex` line in errors.jsonl, counted in
    /// `noindex`, not in `errors`). A page found to copy *itself* (an
    /// earlier attempt of it was recorded before a crash or a lost reply,
    /// which only the shared mode can see) is the kept copy.
    pub fn judged(&mut self, p: &PageResult, verdict: Option<&Verdict>) -> Result<()> {
        self.stats.template_stripped += u64::from(p.template_stripped);
        let url = p.entry.url.as_str();
        match verdict {
            None => {
                self.stats.noindex += 1;
                self.outputs.errors.write(&ErrorLine::noindex(url))
            }
            Some(Verdict::Unique { fingerprint, .. }) => {
                self.stats.verdicts.kept += 1;
                self.outputs
                    .kept
                    .write(&p.kept_line(*fingerprint, self.write_text))
            }
            Some(Verdict::Duplicate(d)) if d.of == url => {
                self.stats.verdicts.kept += 1;
                self.outputs
                    .kept
                    .write(&p.kept_line(d.fingerprint, self.write_text))
            }
            Some(Verdict::Duplicate(d)) => {
                self.stats.verdicts.record_duplicate(d.tier);
                self.outputs.duplicates.write(&p.duplicate_line(d))
            }
        }
    }
}

/// The line of one document of `crawl dedup` (input line `line`).
pub fn document(outputs: &mut Outputs, v: Verdict, url: &str, title: &str, line: u64) -> Result<()> {
    match v {
        Verdict::Unique { fingerprint, .. } => outputs.kept.write(&KeptLine {
            line: Some(line),
            ..KeptLine::new(url, title, fingerprint)
        }),
        Verdict::Duplicate(d) => outputs.duplicates.write(&DuplicateLine {
            line: Some(line),
            ..DuplicateLine::new(url, &d)
        }),
    }
}
