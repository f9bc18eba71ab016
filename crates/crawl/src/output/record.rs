//! The page recorder: a page's outcome turned into its one output line and
//! its counters, in one place for both backends of the daemon (local redb
//! and shared Redis) and for `crawl dedup`. Each backend decides *when* (in
//! which transaction, before which acknowledgement); this module decides
//! *what*: which file, which line, which WARC record, which counter.

use anyhow::Result;
use simcrawl_dedup::{Fingerprint, Tier, Verdict};

use super::lines::{DuplicateLine, ErrorLine, json_text};
use super::sinks::Outputs;
use super::warc::CopyNote;
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
    /// counters, and the archive's records of the fetch's other exchanges
    /// (robots.txt, redirect hops).
    pub fn fetched(&mut self, p: &PageResult) -> Result<()> {
        self.stats.fetched += 1;
        self.stats.bytes += p.bytes as u64;
        self.stats.truncated += u64::from(p.truncated);
        self.exchanges(&p.archived.exchanges)
    }

    /// Responses received by a fetch that failed (its error answers,
    /// robots.txt, redirect hops), whether it is retried or not: archived
    /// as they came.
    pub fn exchanges(&mut self, list: &[simcrawl_fetch::Exchange]) -> Result<()> {
        match &mut self.outputs.warc {
            Some(w) if !list.is_empty() => w.exchanges(list),
            _ => Ok(()),
        }
    }

    /// A page that redirected to a URL the crawl already knows: a URL-tier
    /// copy of it (the target is, or will be, fetched under its own name).
    pub fn url_copy(&mut self, p: &PageResult) -> Result<()> {
        self.stats.verdicts.record_duplicate(Tier::Url);
        let (url, of) = (p.entry.url.as_str(), p.final_url.as_str());
        let via = Some(p.entry.via.as_deref());
        self.archive(
            p,
            Some(CopyNote {
                tier: Tier::Url.as_str(),
                of,
                similarity: None,
                basis: None,
            }),
        )?;
        self.outputs.duplicates.write(&DuplicateLine {
            via,
            ..DuplicateLine::url_tier(url, of)
        })
    }

    /// The page's own response in the archive, with the metadata record of
    /// its verdict when it is a copy.
    fn archive(&mut self, p: &PageResult, note: Option<CopyNote<'_>>) -> Result<()> {
        if let (Some(w), Some(a)) = (&mut self.outputs.warc, &p.archived.page) {
            w.page(a, note)?;
        }
        Ok(())
    }

    /// What was wrong with a sitemap or feed (`crate::listing`): a line in
    /// errors.jsonl (kind `listing`), not a page (not counted as fetched);
    /// `via`: what led to the listing, when known.
    pub fn listing_problem(&mut self, url: &str, via: Option<&str>, problem: &str) -> Result<()> {
        self.outputs
            .errors
            .write(&ErrorLine::page(url, "listing", problem).via(via))
    }

    /// What a revisit found: its line in changes.jsonl and its counters.
    pub fn change(&mut self, line: &super::lines::ChangeLine<'_>) -> Result<()> {
        use crate::revisit::Change;
        let st = &mut *self.stats;
        st.revisited += 1;
        *match line.status {
            Change::NotModified => &mut st.not_modified,
            Change::Same => &mut st.same,
            Change::Similar => &mut st.similar,
            Change::Changed => &mut st.changed,
            Change::Gone => &mut st.gone,
        } += 1;
        self.outputs.changes.write(line)
    }

    /// A page whose failure is final (after its retries and requeues);
    /// `via`: what led to it (`None`: a seed).
    pub fn failure(&mut self, url: &str, via: Option<&str>, kind: &str, error: &str) -> Result<()> {
        self.stats.count_failure(kind);
        self.outputs
            .errors
            .write(&ErrorLine::page(url, kind, error).via(via))
    }

    /// A page the tiers judged (`verdict`), or that asked not to be
    /// indexed (`None`: a `noindex` line in errors.jsonl, counted in
    /// `noindex`, not in `errors`). A page found to copy *itself* (an
    /// earlier attempt of it was recorded before a crash or a lost reply,
    /// which only the shared mode can see) is the kept copy.
    pub fn judged(&mut self, p: &PageResult, verdict: Option<&Verdict>) -> Result<()> {
        self.stats.template_stripped += u64::from(p.template_stripped);
        let url = p.entry.url.as_str();
        let via = p.entry.via.as_deref();
        match verdict {
            None if p.filtered_lang => {
                self.stats.filtered_lang += 1;
                self.archive(p, None)?;
                let why = format!("language {}: not in crawl.languages", p.lang.unwrap_or("?"));
                self.outputs
                    .errors
                    .write(&ErrorLine::page(url, "filtered_lang", &why).via(via))
            }
            None => {
                self.stats.noindex += 1;
                self.archive(p, None)?;
                self.outputs.errors.write(&ErrorLine::noindex(url).via(via))
            }
            Some(Verdict::Unique { fingerprint, .. }) => self.kept(p, *fingerprint),
            Some(Verdict::Duplicate(d)) if d.of == url => self.kept(p, d.fingerprint),
            Some(Verdict::Duplicate(d)) => {
                self.stats.verdicts.record_duplicate(d.tier);
                let note = CopyNote {
                    tier: d.tier.as_str(),
                    of: &d.of,
                    similarity: d.similarity,
                    basis: Some(p.facts.basis.as_str()),
                };
                self.archive(p, Some(note))?;
                self.outputs.duplicates.write(&p.duplicate_line(d))
            }
            Some(_) => Ok(()), // non_exhaustive in simcrawl-dedup
        }
    }

    /// A kept page's line, its text as the page task escaped it (escaped
    /// here only for a page that came without it).
    fn kept(&mut self, p: &PageResult, fingerprint: Option<Fingerprint>) -> Result<()> {
        self.stats.verdicts.kept += 1;
        self.archive(p, None)?;
        let escaped_here;
        let text = match (&p.text_json, self.write_text) {
            (_, false) => None,
            (Some(t), true) => Some(&**t),
            (None, true) => {
                escaped_here = json_text(&p.text)?;
                Some(&*escaped_here)
            }
        };
        self.outputs.kept.write(&p.kept_line(fingerprint, text))
    }
}
