//! `crawl report OUT_DIR`: one self-contained HTML page that shows what a
//! crawl (or a `crawl dedup` run) kept, dropped and why, built from its
//! output files alone.
//!
//! The report aggregates while it streams the JSONL files (each read once),
//! so a run of millions of lines costs one pass and memory proportional to
//! the kept pages that have copies, not to the lines: clusters, hosts and
//! URL patterns are counted in full and only their largest entries are
//! listed.

mod html;
mod pair;
mod patterns;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::output::lines::Suspect;

pub use patterns::rewrite;

/// How much of each aggregate the page lists (everything is counted).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest duplicate clusters listed.
    pub clusters: usize,
    /// Dropped copies listed per cluster.
    pub members: usize,
    /// Hosts listed, most fetched first.
    pub hosts: usize,
    /// URL patterns listed, most duplicates first.
    pub patterns: usize,
    /// Example lines per error kind.
    pub error_examples: usize,
    /// Suspicious drops listed with their text.
    pub suspects: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            clusters: 500,
            members: 20,
            hosts: 200,
            patterns: 50,
            error_examples: 5,
            suspects: 100,
        }
    }
}

/// The dedup tiers as they appear in `duplicates.jsonl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Same canonical URL (a redirect target or a URL variant).
    Url,
    /// Same normalized title, verified by resemblance.
    Title,
    /// Near-duplicate content, verified by resemblance.
    Content,
    /// A tier this version does not know (a newer writer).
    Other,
}

impl Tier {
    fn parse(s: &str) -> Tier {
        match s {
            "url" => Tier::Url,
            "title" => Tier::Title,
            "content" => Tier::Content,
            _ => Tier::Other,
        }
    }

    /// The name used in the outputs.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Url => "url",
            Tier::Title => "title",
            Tier::Content => "content",
            Tier::Other => "other",
        }
    }
}

/// Dropped pages per tier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierCounts {
    /// URL tier.
    pub url: u64,
    /// Title tier.
    pub title: u64,
    /// Content tier.
    pub content: u64,
    /// Unknown tiers.
    pub other: u64,
}

impl TierCounts {
    fn add(&mut self, tier: Tier) {
        match tier {
            Tier::Url => self.url += 1,
            Tier::Title => self.title += 1,
            Tier::Content => self.content += 1,
            Tier::Other => self.other += 1,
        }
    }

    /// All dropped pages.
    pub fn total(&self) -> u64 {
        self.url + self.title + self.content + self.other
    }
}

/// One dropped copy, as listed under its cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// The dropped page.
    pub url: String,
    /// The tier that dropped it.
    pub tier: Tier,
    /// Estimated resemblance to the kept page, when the tier measured one.
    pub similarity: Option<f64>,
    /// SimHash distance to the kept page, when known.
    pub distance: Option<u32>,
    /// Its 1-based line in `duplicates.jsonl`.
    pub line: u64,
}

/// A kept page and the pages dropped as its copies.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// The kept page every member was judged a copy of.
    pub kept: String,
    /// Its title, when `kept.jsonl` has it.
    pub title: Option<String>,
    /// Dropped copies in all (listed or not).
    pub size: u64,
    /// The first [`Limits::members`] copies, in output order.
    pub members: Vec<Member>,
}

/// Counts for one host (of the page's URL).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostRow {
    /// Host name (or `(none)` for lines without a parsable URL).
    pub host: String,
    /// Kept pages.
    pub kept: u64,
    /// Dropped pages per tier.
    pub dropped: TierCounts,
    /// Lines in `errors.jsonl`.
    pub errors: u64,
}

impl HostRow {
    /// Every output line of this host: what it cost to fetch or read.
    pub fn fetched(&self) -> u64 {
        self.kept + self.dropped.total() + self.errors
    }
}

/// A URL rewrite that produced duplicates on one host (see [`rewrite`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternRow {
    /// Host of the dropped pages.
    pub host: String,
    /// What distinguishes the dropped URL from the kept one.
    pub rewrite: String,
    /// Dropped pages that differ from their kept page this way.
    pub count: u64,
    /// One (dropped, kept) pair.
    pub example: (String, String),
}

/// Lines of one error kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorKind {
    /// Lines of this kind.
    pub count: u64,
    /// The first few: (URL or `line N` of the input, message).
    pub examples: Vec<(String, String)>,
}

/// A drop a person should check (`crate::output::lines::Suspect`), with both
/// pages' text side by side.
#[derive(Clone, Debug, PartialEq)]
pub struct SuspectRow {
    /// The dropped page.
    pub url: String,
    /// The kept page it was judged a copy of.
    pub kept: String,
    pub tier: Tier,
    pub similarity: Option<f64>,
    /// Why it is listed: `larger`, `template`, `few_features`.
    pub reasons: Vec<&'static str>,
    /// Characters of the dropped page's visible text, and of the kept one's.
    pub chars: usize,
    pub kept_chars: Option<usize>,
    /// Features of the dropped page's signature.
    pub features: usize,
    /// The beginning of the text each was judged on.
    pub excerpt: String,
    pub kept_excerpt: Option<String>,
    /// Its 1-based line in `duplicates.jsonl`.
    pub line: u64,
    /// How the two URLs are related, what the dropped page was judged on
    /// (`basis`), and whether it matched by its article alone: the class
    /// of the verdict, for a person telling where a rule fails.
    pub pair: Option<simcrawl_dedup::SiteRelation>,
    pub basis: String,
    pub article: bool,
}

/// Everything the page shows.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Drops to check, per reason (all of them), and the first
    /// [`Limits::suspects`] listed.
    pub suspect_counts: BTreeMap<&'static str, u64>,
    pub suspects: Vec<SuspectRow>,
    /// The directory the outputs were read from.
    pub dir: PathBuf,
    /// Lines of `kept.jsonl`.
    pub kept: u64,
    /// Lines of `duplicates.jsonl`, per tier.
    pub dropped: TierCounts,
    /// Lines of `errors.jsonl`.
    pub errors: u64,
    /// Lines no output type could read (a torn last line, another format).
    pub unreadable: u64,
    /// Dropped pages per 0.05-wide bin of similarity, `[0, 0.05)` first,
    /// the last bin closed (`[0.95, 1.0]`).
    pub similarity: [u64; 20],
    /// Dropped pages per SimHash distance (0..=64).
    pub distance: Vec<u64>,
    /// Kept pages with at least one dropped copy.
    pub cluster_count: u64,
    /// The largest clusters, largest first.
    pub clusters: Vec<Cluster>,
    /// Hosts seen.
    pub host_count: u64,
    /// The most fetched hosts, most first.
    pub hosts: Vec<HostRow>,
    /// The rewrites that produced the most duplicates, most first.
    pub patterns: Vec<PatternRow>,
    /// Errors by kind (`malformed line` for the batch tool's bad input lines).
    pub error_kinds: BTreeMap<String, ErrorKind>,
    /// Kept pages per time bucket: (bucket start, unix seconds; count), when
    /// `kept.jsonl` carries `fetched_at` (the daemon's output).
    pub timeline: Vec<(u64, u64)>,
    /// Seconds per timeline bucket.
    pub bucket_secs: u64,
    /// `stats.json` as written by the daemon, when present.
    pub stats: Option<serde_json::Map<String, serde_json::Value>>,
}

// The fields the report reads; the rest of each line (a kept page's text)
// is skipped by the parser without being stored.
#[derive(Deserialize)]
struct KeptLine {
    url: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    fetched_at: Option<u64>,
    #[serde(default)]
    chars: Option<usize>,
    #[serde(default)]
    excerpt: Option<String>,
}

/// A line of `duplicates.jsonl` as its readers (the report, `crawl eval
/// --crawled`) see it.
#[derive(Deserialize)]
pub(crate) struct DupLine {
    pub url: String,
    pub tier: String,
    pub duplicate_of: String,
    #[serde(default)]
    pub distance: Option<u32>,
    #[serde(default)]
    pub similarity: Option<f64>,
    /// The crawler's facts of what the page was judged on (`lines::Judged`).
    #[serde(default)]
    pub basis: Option<String>,
    #[serde(default)]
    pub chars: Option<usize>,
    #[serde(default)]
    pub features: Option<usize>,
    #[serde(default)]
    pub excerpt: Option<String>,
    /// Dropped as another site's copy by its article alone.
    #[serde(default)]
    pub article: bool,
}

impl DupLine {
    /// Why a person should look at this drop, given its kept page's size
    /// when known (`Suspect::of`); nothing for lines without the crawler's
    /// facts (`crawl dedup`, older crawls).
    pub fn suspects(&self, partner_chars: Option<usize>) -> Vec<Suspect> {
        match (&self.basis, self.chars, self.features) {
            (Some(basis), Some(chars), Some(features)) => Suspect::of(basis, chars, features, partner_chars),
            _ => Vec::new(),
        }
    }
}

/// Dropped pages large enough to be much larger than their kept page
/// (`Suspect::Larger` needs 2,000 characters more): checked once the kept
/// pages' sizes are read.
struct LargeDrop {
    row: SuspectRow,
    /// Already counted and listed for another reason.
    listed: Option<usize>,
}

#[derive(Deserialize)]
struct ErrorLine {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    line: Option<u64>,
}

/// A kept page's copies while reading: the count and the first members.
#[derive(Default)]
struct ClusterAcc {
    size: u64,
    members: Vec<Member>,
}

#[derive(Default)]
struct PatternAcc {
    count: u64,
    example: (String, String),
}

fn host_of(url: &str) -> &str {
    // Faster than a full parse, and only used to group: scheme://host[:port]/...
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.is_empty() { "(none)" } else { host }
}

/// Lines parsed at once: enough to keep both cores busy, small enough
/// that a block of long kept lines stays a few tens of MB.
const BLOCK_LINES: usize = 8192;

/// Parses each non-empty line of `path` with `parse` (in parallel, a block
/// of lines at a time) and hands the results to `consume` in file order,
/// with 1-based line numbers (`None`: the line did not parse). A missing
/// file is no lines (a run may not have written every output); returns
/// whether the file exists.
fn each_line<T: Send>(
    path: &Path,
    parse: impl Fn(&[u8]) -> Option<T> + Sync,
    mut consume: impl FnMut(u64, Option<T>),
) -> Result<bool> {
    use rayon::prelude::*;
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
    };
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut buf: Vec<u8> = Vec::new();
    let mut spans: Vec<(u64, usize, usize)> = Vec::with_capacity(BLOCK_LINES);
    let mut n = 0u64;
    loop {
        buf.clear();
        spans.clear();
        while spans.len() < BLOCK_LINES {
            let start = buf.len();
            let read = reader
                .read_until(b'\n', &mut buf)
                .with_context(|| format!("cannot read {} after line {n}", path.display()))?;
            if read == 0 {
                break;
            }
            n += 1;
            let line = buf[start..].trim_ascii();
            if !line.is_empty() {
                spans.push((n, start, buf.len()));
            }
        }
        if spans.is_empty() {
            return Ok(true);
        }
        let parsed: Vec<Option<T>> = spans
            .par_iter()
            .map(|&(_, a, b)| parse(buf[a..b].trim_ascii()))
            .collect();
        for (&(line, _, _), item) in spans.iter().zip(parsed) {
            consume(line, item);
        }
    }
}

/// What the outputs add up to beyond the report's own counters, while they
/// are read.
#[derive(Default)]
struct Tally {
    hosts: HashMap<String, HostRow>,
    clusters: HashMap<String, ClusterAcc>,
    patterns: HashMap<(String, String), PatternAcc>,
    large: Vec<LargeDrop>,
}

/// What kept.jsonl says that the report needs.
#[derive(Default)]
struct KeptFacts {
    /// The kept pages' size and text that a suspicious drop needs.
    partner_facts: HashMap<String, (Option<usize>, Option<String>)>,
    /// The listed clusters' titles.
    titles: HashMap<String, String>,
    /// When each kept page was fetched.
    times: Vec<u64>,
}

/// Reads the outputs in `dir` and aggregates them.
pub fn build(dir: &Path, limits: Limits) -> Result<Report> {
    let mut r = Report {
        dir: dir.to_path_buf(),
        distance: vec![0; 65],
        ..Report::default()
    };
    let mut t = Tally::default();
    let found_dups = read_duplicates(dir, limits, &mut r, &mut t)?;

    r.cluster_count = t.clusters.len() as u64;
    let mut top: Vec<(String, ClusterAcc)> = std::mem::take(&mut t.clusters).into_iter().collect();
    top.sort_by(|a, b| b.1.size.cmp(&a.1.size).then_with(|| a.0.cmp(&b.0)));
    top.truncate(limits.clusters);
    let listed: HashSet<&str> = top.iter().map(|(k, _)| k.as_str()).collect();
    // The kept pages whose size or text a suspicious drop needs.
    let partners: HashSet<String> = r
        .suspects
        .iter()
        .map(|s| s.kept.clone())
        .chain(t.large.iter().map(|l| l.row.kept.clone()))
        .collect();
    let mut kept = KeptFacts::default();
    let found_kept = read_kept(dir, &listed, &partners, &mut r, &mut t.hosts, &mut kept)?;
    let found_errors = read_errors(dir, limits, &mut r, &mut t.hosts)?;

    if !(found_dups || found_kept || found_errors) {
        anyhow::bail!(
            "{} holds no kept.jsonl, duplicates.jsonl or errors.jsonl: give the --out directory of a crawl or of `crawl dedup`",
            dir.display()
        );
    }
    r.stats = read_stats(dir)?;

    resolve_suspects(&mut r, t.large, &kept.partner_facts, limits);

    r.clusters = top
        .into_iter()
        .map(|(kept_url, acc)| Cluster {
            title: kept.titles.remove(&kept_url),
            kept: kept_url,
            size: acc.size,
            members: acc.members,
        })
        .collect();

    r.host_count = t.hosts.len() as u64;
    let mut host_rows: Vec<HostRow> = t.hosts.into_values().collect();
    host_rows.sort_by(|a, b| b.fetched().cmp(&a.fetched()).then_with(|| a.host.cmp(&b.host)));
    host_rows.truncate(limits.hosts);
    r.hosts = host_rows;
    r.patterns = pattern_rows(t.patterns, limits);

    (r.timeline, r.bucket_secs) = timeline(&kept.times);
    let last = r.distance.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
    r.distance.truncate(last);
    Ok(r)
}

/// Reads duplicates.jsonl into the report and the tally; returns whether it exists.
fn read_duplicates(dir: &Path, limits: Limits, r: &mut Report, t: &mut Tally) -> Result<bool> {
    each_line(
        &dir.join("duplicates.jsonl"),
        |line| {
            let d = serde_json::from_slice::<DupLine>(line).ok()?;
            let rewrite = rewrite(&d.url, &d.duplicate_of);
            Some((d, rewrite))
        },
        |n, parsed| {
            let Some((d, rewrite)) = parsed else {
                r.unreadable += 1;
                return;
            };
            add_drop(r, t, limits, n, d, rewrite);
        },
    )
}

/// Counts one dropped page (line `n` of duplicates.jsonl): its tier and
/// scores, whether it looks suspicious, its host, cluster and URL pattern.
fn add_drop(r: &mut Report, t: &mut Tally, limits: Limits, n: u64, d: DupLine, rewrite: String) {
    let tier = Tier::parse(&d.tier);
    r.dropped.add(tier);
    if let Some(s) = d.similarity.filter(|s| s.is_finite()) {
        let bin = ((s.clamp(0.0, 1.0) * 20.0) as usize).min(19);
        r.similarity[bin] += 1;
    }
    if let Some(dist) = d.distance {
        r.distance[(dist as usize).min(64)] += 1;
    }
    if let Some(row) = suspect_row(&d, tier, n) {
        let mut listed = None;
        if !row.reasons.is_empty() {
            for reason in &row.reasons {
                *r.suspect_counts.entry(reason).or_default() += 1;
            }
            if r.suspects.len() < limits.suspects {
                listed = Some(r.suspects.len());
                r.suspects.push(row.clone());
            }
        }
        if row.chars >= 2000 {
            t.large.push(LargeDrop { row, listed });
        }
    }
    let host = host_of(&d.url);
    host_row(&mut t.hosts, host).dropped.add(tier);
    let acc = match t.clusters.get_mut(d.duplicate_of.as_str()) {
        Some(acc) => acc,
        None => t.clusters.entry(d.duplicate_of.clone()).or_default(),
    };
    acc.size += 1;
    if acc.members.len() < limits.members {
        acc.members.push(Member {
            url: d.url.clone(),
            tier,
            similarity: d.similarity,
            distance: d.distance,
            line: n,
        });
    }
    let p = t.patterns.entry((host.to_string(), rewrite)).or_default();
    if p.count == 0 {
        p.example = (d.url.clone(), d.duplicate_of.clone());
    }
    p.count += 1;
}

/// A dropped page (line `n`) as a row of the suspects' table, with the reasons
/// it looks suspicious (none: it does not); `None` when the line has no size.
fn suspect_row(d: &DupLine, tier: Tier, n: u64) -> Option<SuspectRow> {
    let (Some(chars), Some(features)) = (d.chars, d.features) else {
        return None;
    };
    let reasons: Vec<&'static str> = d.suspects(None).into_iter().map(Suspect::as_str).collect();
    Some(SuspectRow {
        url: d.url.clone(),
        kept: d.duplicate_of.clone(),
        tier,
        similarity: d.similarity,
        reasons,
        chars,
        kept_chars: None,
        features,
        excerpt: d.excerpt.clone().unwrap_or_default(),
        kept_excerpt: None,
        line: n,
        pair: pair::of(&d.url, &d.duplicate_of),
        basis: d.basis.clone().unwrap_or_default(),
        article: d.article,
    })
}

/// Reads kept.jsonl: counts the kept pages per host, and keeps the titles of
/// the `listed` clusters' pages, the `partners`' size and text and the fetch
/// times in `kept`; returns whether it exists.
fn read_kept(
    dir: &Path,
    listed: &HashSet<&str>,
    partners: &HashSet<String>,
    r: &mut Report,
    hosts: &mut HashMap<String, HostRow>,
    kept: &mut KeptFacts,
) -> Result<bool> {
    each_line(
        &dir.join("kept.jsonl"),
        |line| {
            let k = serde_json::from_slice::<KeptLine>(line).ok()?;
            // Titles are kept only for the listed clusters' pages.
            let title = k.title.filter(|_| listed.contains(k.url.as_str()));
            let facts = partners.contains(&k.url).then_some((k.chars, k.excerpt));
            Some((k.url, title, k.fetched_at, facts))
        },
        |_, parsed| {
            let Some((url, title, fetched_at, facts)) = parsed else {
                r.unreadable += 1;
                return;
            };
            if let Some(f) = facts {
                kept.partner_facts.insert(url.clone(), f);
            }
            r.kept += 1;
            host_row(hosts, host_of(&url)).kept += 1;
            if let Some(t) = fetched_at {
                kept.times.push(t);
            }
            if let Some(title) = title {
                kept.titles.insert(url, title);
            }
        },
    )
}

/// Reads errors.jsonl: counts per host and per kind, with a few examples of
/// each kind; returns whether it exists.
fn read_errors(
    dir: &Path,
    limits: Limits,
    r: &mut Report,
    hosts: &mut HashMap<String, HostRow>,
) -> Result<bool> {
    each_line(
        &dir.join("errors.jsonl"),
        |line| serde_json::from_slice::<ErrorLine>(line).ok(),
        |_, parsed| {
            let Some(e) = parsed else {
                r.unreadable += 1;
                return;
            };
            r.errors += 1;
            if let Some(url) = e.url.as_deref() {
                host_row(hosts, host_of(url)).errors += 1;
            }
            let kind = e.kind.unwrap_or_else(|| "malformed line".to_string());
            let k = r.error_kinds.entry(kind).or_default();
            k.count += 1;
            if k.examples.len() < limits.error_examples {
                let at = match (e.url, e.line) {
                    (Some(u), _) => u,
                    (None, Some(l)) => format!("input line {l}"),
                    (None, None) => String::new(),
                };
                k.examples.push((at, e.error.unwrap_or_default()));
            }
        },
    )
}

/// The run's stats.json, when it has one.
fn read_stats(dir: &Path) -> Result<Option<serde_json::Map<String, serde_json::Value>>> {
    let stats_path = dir.join("stats.json");
    if !stats_path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&stats_path)
        .with_context(|| format!("cannot read {}", stats_path.display()))?;
    Ok(Some(serde_json::from_str(&text).with_context(|| {
        format!("{} is not a JSON object", stats_path.display())
    })?))
}

/// The URL patterns of the drops, most frequent first.
fn pattern_rows(patterns: HashMap<(String, String), PatternAcc>, limits: Limits) -> Vec<PatternRow> {
    let mut pattern_rows: Vec<PatternRow> = patterns
        .into_iter()
        .map(|((host, rewrite), acc)| PatternRow {
            host,
            rewrite,
            count: acc.count,
            example: acc.example,
        })
        .collect();
    pattern_rows.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.host.cmp(&b.host))
            .then_with(|| a.rewrite.cmp(&b.rewrite))
    });
    pattern_rows.truncate(limits.patterns);
    pattern_rows
}

/// Gives the listed suspicious drops their kept page's size and text, and
/// adds the drops much larger than their kept page.
fn resolve_suspects(
    r: &mut Report,
    large: Vec<LargeDrop>,
    partner_facts: &HashMap<String, (Option<usize>, Option<String>)>,
    limits: Limits,
) {
    for l in large {
        let kept_chars = partner_facts.get(&l.row.kept).and_then(|f| f.0);
        let larger = Suspect::of("", l.row.chars, usize::MAX, kept_chars).contains(&Suspect::Larger);
        if !larger {
            continue;
        }
        *r.suspect_counts.entry(Suspect::Larger.as_str()).or_default() += 1;
        match l.listed {
            Some(i) => {
                if let Some(row) = r.suspects.get_mut(i) {
                    row.reasons.insert(0, Suspect::Larger.as_str());
                }
            }
            None if r.suspects.len() < limits.suspects => {
                let mut row = l.row;
                row.reasons = vec![Suspect::Larger.as_str()];
                r.suspects.push(row);
            }
            None => {}
        }
    }
    for row in &mut r.suspects {
        if let Some((chars, excerpt)) = partner_facts.get(&row.kept) {
            row.kept_chars = *chars;
            row.kept_excerpt.clone_from(excerpt);
        }
    }
    // Larger first (a part of a page matched), then by line.
    r.suspects
        .sort_by_key(|s| (!s.reasons.contains(&Suspect::Larger.as_str()), s.line));
}

fn host_row<'m>(hosts: &'m mut HashMap<String, HostRow>, host: &str) -> &'m mut HostRow {
    hosts.entry(host.to_string()).or_insert_with(|| HostRow {
        host: host.to_string(),
        ..HostRow::default()
    })
}

/// Buckets kept pages by time: at most [`MAX_BUCKETS`] bars, each a round
/// number of minutes (or seconds, for a short run).
fn timeline(times: &[u64]) -> (Vec<(u64, u64)>, u64) {
    const MAX_BUCKETS: u64 = 120;
    let (Some(&first), Some(&last)) = (times.iter().min(), times.iter().max()) else {
        return (Vec::new(), 0);
    };
    let span = last - first + 1;
    let steps = [1, 5, 10, 30, 60, 300, 600, 1800, 3600, 21600, 86400];
    let bucket = steps
        .iter()
        .copied()
        .find(|s| span.div_ceil(*s) <= MAX_BUCKETS)
        .unwrap_or_else(|| span.div_ceil(MAX_BUCKETS));
    let start = first - first % bucket;
    let n = (last - start) / bucket + 1;
    let mut counts = vec![0u64; n as usize];
    for t in times {
        counts[((t - start) / bucket) as usize] += 1;
    }
    let rows = counts
        .into_iter()
        .enumerate()
        .map(|(i, c)| (start + i as u64 * bucket, c))
        .collect();
    (rows, bucket)
}

/// Builds the report of `dir` and writes it to `dir/report.html`; returns
/// the report and the file's path.
pub fn write(dir: &Path, limits: Limits) -> Result<(Report, PathBuf)> {
    let report = build(dir, limits)?;
    let page = html::render(&report);
    let path = dir.join("report.html");
    let tmp = dir.join(".report.html.tmp");
    std::fs::write(&tmp, page).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok((report, path))
}

#[cfg(test)]
mod tests;
