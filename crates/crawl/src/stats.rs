//! The counters of a crawl: kept by the daemon's writer, read by the
//! progress line, `SIGUSR1`, `stats.json` and the metrics endpoint. A module
//! of its own so the daemon and [`crate::metrics`] both use it without
//! depending on each other.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::output::sinks::VerdictCounts;

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
    /// Pages put back once behind the canonical URL they declared
    /// (`crate::canonical`), judged at their second fetch (not counted as
    /// fetched at their first).
    #[serde(default)]
    pub canonical_waits: u64,
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
    /// Revisits of pages already crawled (`crate::revisit`), and what they
    /// found: a 304, the same text, a similar text (a date, an ad), a real
    /// change (judged again), a 404 or 410 (out of the index).
    #[serde(default)]
    pub revisited: u64,
    #[serde(default)]
    pub not_modified: u64,
    #[serde(default)]
    pub same: u64,
    #[serde(default)]
    pub similar: u64,
    #[serde(default)]
    pub changed: u64,
    #[serde(default)]
    pub gone: u64,
    /// 429 and 503 answers that made adaptive politeness back a host off
    /// (`fetch.autothrottle`).
    #[serde(default)]
    pub throttled: u64,
    /// Pages not judged because their language is not in `crawl.languages`.
    #[serde(default)]
    pub filtered_lang: u64,
    /// Sitemaps and feeds read (`crate::listing`), and the new URLs they
    /// gave.
    #[serde(default)]
    pub listings: u64,
    #[serde(default)]
    pub listed: u64,
    /// Sitemaps and feeds not read: deeper than `crawl.max_listing_depth`
    /// or over their host's `crawl.max_listings_per_host`.
    #[serde(default)]
    pub listings_skipped: u64,
    /// Copies judged again because the page they copied changed or is gone.
    #[serde(default)]
    pub rejudged: u64,
    /// The URL rewrite rules learnt (`HOST RULE (N examples)`), in the
    /// order they were learnt.
    #[serde(default)]
    pub dust_rules: Vec<String>,
    /// Wall-clock seconds spent crawling, over all runs.
    pub seconds: f64,
}

/// Fields of [`Stats`] that are not additive counters: the time (each
/// backend measures it its own way) and the rules learnt (a list).
const NOT_COUNTERS: [&str; 2] = ["seconds", "dust_rules"];

impl Stats {
    /// The additive counters, by their `stats.json` names, errors as
    /// `error:KIND`. Derived from the serialized form, so a counter added
    /// to [`Stats`] is carried by every backend that merges counters (the
    /// shared mode's `HINCRBY`s) without a list to update.
    pub fn counters(&self) -> BTreeMap<String, i64> {
        let mut out = BTreeMap::new();
        let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(self) else {
            return out;
        };
        for (k, v) in fields {
            if NOT_COUNTERS.contains(&k.as_str()) {
                continue;
            }
            match v {
                serde_json::Value::Number(n) => {
                    out.insert(k, n.as_i64().unwrap_or(i64::MAX));
                }
                serde_json::Value::Object(kinds) if k == "errors" => {
                    for (kind, n) in kinds {
                        out.insert(format!("error:{kind}"), n.as_i64().unwrap_or(i64::MAX));
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The counters that take `self` to `to` (those that changed).
    pub fn counter_delta(&self, to: &Stats) -> Vec<(String, i64)> {
        let before = self.counters();
        to.counters()
            .into_iter()
            .filter_map(|(k, y)| {
                let x = before.get(&k).copied().unwrap_or(0);
                (x != y).then(|| (k, y.saturating_sub(x)))
            })
            .collect()
    }

    /// The [`Stats`] of merged counters (as [`Stats::counters`] names
    /// them; other keys are ignored, negative values read as 0).
    pub fn from_counters(c: &BTreeMap<String, i64>) -> Stats {
        let mut fields = match serde_json::to_value(Stats::default()) {
            Ok(serde_json::Value::Object(f)) => f,
            _ => return Stats::default(),
        };
        let mut errors = serde_json::Map::new();
        for (k, &v) in c {
            let v = serde_json::Value::from(u64::try_from(v).unwrap_or(0));
            if let Some(kind) = k.strip_prefix("error:") {
                errors.insert(kind.to_string(), v);
            } else if fields.get(k).is_some_and(serde_json::Value::is_u64)
                && !NOT_COUNTERS.contains(&k.as_str())
            {
                fields.insert(k.clone(), v);
            }
        }
        fields.insert("errors".to_string(), serde_json::Value::Object(errors));
        serde_json::from_value(serde_json::Value::Object(fields)).unwrap_or_default()
    }

    /// Whether every page these counters fetched failed (none counts as
    /// all failed: a crawl judges that only once it tried some).
    pub fn every_fetch_failed(&self) -> bool {
        self.errors.values().sum::<u64>() >= self.fetched
    }

    /// A page whose fetch failed for good: fetched, and one more error of
    /// its kind (both backends' writers count failures so).
    pub fn count_failure(&mut self, kind: &str) {
        self.fetched += 1;
        *self.errors.entry(kind.to_string()).or_insert(0) += 1;
    }
}

/// Why a crawl stopped, as Scrapy's "Spider closed (finished)" says it:
/// printed last, written to `stats.json` (`ended`, and `signal` for a
/// signal), and turned into the exit status ([`Ended::exit_code`]) so that
/// a script or a service manager can tell a crawl that ran from one that
/// could fetch nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The frontier ran out: everything in scope was fetched.
    Finished,
    /// `crawl.max_pages` was reached (across resumes).
    MaxPages,
    /// SIGINT or SIGTERM stopped it (the rest stays in the frontier).
    Signal(&'static str),
    /// A stop signal arrived while the shared crawl's Redis server was
    /// unreachable (the shared mode waits for it otherwise).
    RedisGone,
    /// Pages were tried and every one the crawl (all its runs) tried
    /// failed: nothing could be fetched (wget's "network failure").
    NothingFetched,
}

/// What a run of the crawler returns: the counters at its end, those it
/// started from (an earlier run's, resumed), and how it ended.
#[derive(Debug, Clone)]
pub struct Run {
    pub stats: Stats,
    pub before: Stats,
    pub ended: Ended,
}

impl Run {
    /// `crawl revisit`'s summary: what this run's revisits found, not the
    /// crawl's totals since its start.
    pub fn revisit_summary(&self) -> String {
        let (a, b) = (&self.stats, &self.before);
        let d = |now: u64, then: u64| now.saturating_sub(then);
        let errors = d(a.errors.values().sum(), b.errors.values().sum());
        format!(
            "revisited {}: not_modified {}, same {}, similar {}, changed {}, gone {}  \
             (fetched {} this run, errors {errors}, new pages kept {})",
            d(a.revisited, b.revisited),
            d(a.not_modified, b.not_modified),
            d(a.same, b.same),
            d(a.similar, b.similar),
            d(a.changed, b.changed),
            d(a.gone, b.gone),
            d(a.fetched, b.fetched),
            d(a.verdicts.kept, b.verdicts.kept),
        )
    }
}

/// The exit status of a crawl that fetched nothing (wget's for a network
/// failure): documented in docs/guide/crawling.md, "Exit status".
pub const EXIT_NOTHING_FETCHED: u8 = 4;
/// The exit status of a shared crawl stopped while its Redis server was
/// unreachable.
pub const EXIT_REDIS_GONE: u8 = 5;

impl Ended {
    /// The name in `stats.json` and in the last line.
    pub fn name(self) -> &'static str {
        match self {
            Ended::Finished => "finished",
            Ended::MaxPages => "max_pages",
            Ended::Signal(_) => "signal",
            Ended::RedisGone => "redis_gone",
            Ended::NothingFetched => "nothing_fetched",
        }
    }

    /// 0, except [`EXIT_NOTHING_FETCHED`] and [`EXIT_REDIS_GONE`]. A
    /// signal is a stop asked for, and resumable: 0, like a finished crawl.
    pub fn exit_code(self) -> u8 {
        match self {
            Ended::NothingFetched => EXIT_NOTHING_FETCHED,
            Ended::RedisGone => EXIT_REDIS_GONE,
            _ => 0,
        }
    }

    /// A crawl that stopped for `self` with counters `now`, from `before`
    /// (those it resumed with): [`Ended::NothingFetched`] when this run
    /// tried pages and the crawl, all its runs together, has every page it
    /// tried failed, whatever stopped it otherwise (a signal excepted: it
    /// may have stopped the crawl before any answer). A resumed crawl whose
    /// last pages failed has fetched something all the same.
    pub fn judge(self, before: &Stats, now: &Stats) -> Ended {
        if matches!(self, Ended::Signal(_) | Ended::RedisGone) {
            return self;
        }
        let tried = now.fetched.saturating_sub(before.fetched);
        if tried > 0 && now.every_fetch_failed() {
            Ended::NothingFetched
        } else {
            self
        }
    }

    /// The last line of a crawl: `crawl ended (finished)`, with what a
    /// user should know for the others.
    pub fn line(self, now: &Stats) -> String {
        match self {
            Ended::Finished => "crawl ended (finished): the frontier is empty".to_string(),
            Ended::MaxPages => format!(
                "crawl ended (max_pages): {} pages fetched, crawl.max_pages reached; \
                 the rest stays in the frontier",
                now.fetched
            ),
            Ended::Signal(sig) => format!(
                "crawl ended (signal {sig}): the rest stays in the frontier; run the same command to resume"
            ),
            Ended::RedisGone => format!(
                "crawl ended (redis_gone): stopped while Redis was unreachable; exit status {EXIT_REDIS_GONE}"
            ),
            Ended::NothingFetched => {
                let kinds: Vec<String> = now.errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
                format!(
                    "crawl ended (nothing_fetched): every page tried failed ({}; errors.jsonl says why); \
                     exit status {EXIT_NOTHING_FETCHED}",
                    kinds.join(", ")
                )
            }
        }
    }

    /// `stats.json` with the counters `stats` and how the crawl ended.
    pub fn stats_json(self, stats: &Stats) -> serde_json::Result<String> {
        let mut v = serde_json::to_value(stats)?;
        if let serde_json::Value::Object(m) = &mut v {
            m.insert("ended".into(), self.name().into());
            if let Ended::Signal(sig) = self {
                m.insert("signal".into(), sig.into());
            }
        }
        serde_json::to_string_pretty(&v)
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
        )?;
        if self.listings > 0 || self.listings_skipped > 0 {
            write!(
                f,
                "\nsitemaps and feeds: read {}, new URLs {}",
                self.listings, self.listed
            )?;
            if self.listings_skipped > 0 {
                write!(
                    f,
                    ", {} not read (over crawl.max_listing_depth or crawl.max_listings_per_host)",
                    self.listings_skipped
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Nothing fetched: this run tried pages and every one failed; a
    /// signal or a run that tried nothing (a finished crawl resumed) is
    /// not.
    #[test]
    fn a_run_whose_every_page_failed_fetched_nothing() {
        let before = Stats::default();
        let mut failed = Stats::default();
        failed.count_failure("host_unreachable");
        assert_eq!(Ended::Finished.judge(&before, &failed), Ended::NothingFetched);
        assert_eq!(Ended::MaxPages.judge(&before, &failed), Ended::NothingFetched);
        assert_eq!(
            Ended::Signal("SIGINT").judge(&before, &failed),
            Ended::Signal("SIGINT")
        );
        assert_eq!(
            Ended::Finished.judge(&failed, &failed),
            Ended::Finished,
            "tried nothing"
        );
        let mut one_ok = failed.clone();
        one_ok.fetched += 1;
        assert_eq!(Ended::Finished.judge(&before, &one_ok), Ended::Finished);
        // Resumed after a page was fetched, this run's only page failed:
        // the crawl fetched something.
        let mut resumed = Stats {
            fetched: 1,
            ..Stats::default()
        };
        let before_resume = resumed.clone();
        resumed.count_failure("timeout");
        assert_eq!(Ended::Finished.judge(&before_resume, &resumed), Ended::Finished);
        assert_eq!(Ended::NothingFetched.exit_code(), 4);
        assert_eq!(Ended::Signal("SIGTERM").exit_code(), 0);
        let json: serde_json::Value =
            serde_json::from_str(&Ended::Signal("SIGTERM").stats_json(&failed).unwrap()).unwrap();
        assert_eq!(
            (&json["ended"], &json["signal"]),
            (&"signal".into(), &"SIGTERM".into())
        );
        assert_eq!(json["fetched"], 1);
    }

    /// Every counter of [`Stats`], whatever its name, survives the trip
    /// through merged counters: set each to a value of its own (found from
    /// the serialized form, so a field added later is covered too).
    #[test]
    fn every_counter_round_trips_through_merged_counters() {
        let serde_json::Value::Object(mut fields) = serde_json::to_value(Stats::default()).unwrap() else {
            panic!("Stats serializes to an object");
        };
        let mut n = 0u64;
        for (k, v) in fields.iter_mut() {
            if v.is_u64() {
                n += 1;
                *v = serde_json::Value::from(n * 7);
            } else if k == "errors" {
                *v = serde_json::json!({"timeout": 3, "status_5xx": 4});
            }
        }
        assert!(n >= 12, "the counters were found: {n}");
        let s: Stats = serde_json::from_value(serde_json::Value::Object(fields)).unwrap();
        let c = s.counters();
        assert_eq!(c.len() as u64, n + 2, "{c:?}");
        let back = Stats::from_counters(&c);
        assert_eq!(
            back,
            Stats {
                seconds: 0.0,
                dust_rules: Vec::new(),
                ..s.clone()
            }
        );
        // Increments add up to the same.
        let delta: BTreeMap<String, i64> = Stats::default().counter_delta(&s).into_iter().collect();
        assert_eq!(Stats::from_counters(&delta), back);
        assert!(s.counter_delta(&s).is_empty(), "unchanged counters send nothing");
        assert_eq!(
            Stats::from_counters(&BTreeMap::from([
                ("leased".to_string(), 5),
                ("fetched".to_string(), -1)
            ])),
            Stats::default(),
            "keys that are not counters are ignored, negatives read as 0"
        );
    }
}
