//! `crawl eval --crawled OUT`: the verdicts a crawl wrote, scored against
//! labelled pages, per source.
//!
//! The text gate (`crawl eval --input`) signs texts someone else extracted;
//! this one reads what the crawler itself decided on the HTML it fetched, so
//! a loss in extraction, template learning or page identity shows up here.
//! The pages are named by URL in `pages.jsonl` (`{"url", "source"}`); the
//! crawl's URLs are matched to them without port, query and fragment (the
//! gate's server answers every host on one loopback port, and a help system
//! links one page under several queries). A page is reached when one of its
//! URLs has a line in `kept.jsonl` or `duplicates.jsonl`; it is kept when
//! any of its URLs was kept. A drop whose partner is the same page (another
//! query of it) and URL-tier drops (a redirect to a known page) decide
//! nothing about content and are left out.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;
use url::Url;

use super::{Labels, UnionFind, load_labels_filtered};
use crate::report::DupLine;

/// Options of `crawl eval --crawled`.
#[derive(Debug)]
pub struct CrawledArgs {
    /// The crawl's output folder (kept.jsonl, duplicates.jsonl).
    pub out: PathBuf,
    /// `{"url", "source"}` per labelled page.
    pub pages: PathBuf,
    pub labels: PathBuf,
    pub near: f64,
    pub ambiguous: f64,
    pub show: usize,
}

#[derive(Deserialize)]
struct PageMeta {
    url: String,
    source: String,
    /// Its character 5-grams (the labelled sets write them): a page of N
    /// letters and digits has N - 4. Unknown: counted as large.
    #[serde(default)]
    shingles: Option<usize>,
}

/// The issue 35 gate's recall counts the components that hold a page of
/// at least this many characters: below it a page is a stub (a heading
/// and its navigation), which keeping costs nothing.
pub const RECALL_MIN_CHARS: usize = 300;

impl PageMeta {
    fn is_large(&self) -> bool {
        self.shingles.is_none_or(|s| s + 4 >= RECALL_MIN_CHARS)
    }
}

#[derive(Deserialize)]
struct Kept {
    url: String,
    #[serde(default)]
    final_url: Option<String>,
    #[serde(default)]
    chars: Option<usize>,
}

/// The page a crawled URL is: scheme, host and path (no port, query or
/// fragment).
fn page_key(url: &str) -> Option<String> {
    let u = Url::parse(url).ok()?;
    Some(format!("{}://{}{}", u.scheme(), u.host_str()?, u.path()))
}

/// What the crawl decided about one labelled page.
#[derive(Clone, Debug, PartialEq)]
enum Decision {
    Unreached,
    Kept,
    Dropped {
        of: usize,
        tier: String,
        similarity: Option<f64>,
        suspect: Vec<String>,
    },
}

/// A drop whose partner resembles the dropped page less than this (exact
/// resemblance) is a false drop.
pub const FALSE_DROP_BELOW: f64 = 0.65;

/// One source's row of the table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceRow {
    pub pages: usize,
    pub reached: usize,
    pub dropped: usize,
    pub lost: usize,
    /// Drops whose named partner's exact resemblance is below
    /// [`FALSE_DROP_BELOW`]: not a loss when another kept page holds the
    /// text, but a verdict that names the wrong reason (issue 35).
    pub false_drops: usize,
    /// Pages that should go (all but one per near-duplicate component) and
    /// those that went.
    pub should: usize,
    pub did: usize,
    /// The same over the components that hold a page of at least
    /// [`RECALL_MIN_CHARS`] characters.
    pub should_large: usize,
    pub did_large: usize,
    /// Near pairs and those found in one verdict cluster.
    pub near_pairs: usize,
    pub near_found: usize,
    /// Drops the report flags for a person to check, by reason.
    pub suspects: BTreeMap<String, usize>,
}

impl SourceRow {
    fn add(&mut self, o: &SourceRow) {
        self.pages += o.pages;
        self.reached += o.reached;
        self.dropped += o.dropped;
        self.lost += o.lost;
        self.false_drops += o.false_drops;
        self.should += o.should;
        self.did += o.did;
        self.should_large += o.should_large;
        self.did_large += o.did_large;
        self.near_pairs += o.near_pairs;
        self.near_found += o.near_found;
        for (k, v) in &o.suspects {
            *self.suspects.entry(k.clone()).or_default() += v;
        }
    }

    /// Component recall: the share of the pages that should go that went.
    pub fn recall(&self) -> f64 {
        if self.should == 0 {
            1.0
        } else {
            self.did as f64 / self.should as f64
        }
    }

    /// [`SourceRow::recall`] over the components with a page of at least
    /// [`RECALL_MIN_CHARS`] characters (the gate's recall, issue 35).
    pub fn recall_large(&self) -> f64 {
        if self.should_large == 0 {
            1.0
        } else {
            self.did_large as f64 / self.should_large as f64
        }
    }

    /// Near pairs whose two pages ended in one verdict cluster.
    pub fn pair_recall(&self) -> f64 {
        if self.near_pairs == 0 {
            1.0
        } else {
            self.near_found as f64 / self.near_pairs as f64
        }
    }
}

/// The scores of a crawl: one row per source and the total, and the lost
/// pages and false drops to look at.
#[derive(Debug)]
pub struct CrawlScores {
    pub rows: BTreeMap<String, SourceRow>,
    pub total: SourceRow,
    pub lost: Vec<String>,
    /// Drops whose named partner resembles them below [`FALSE_DROP_BELOW`],
    /// each with both URLs: what a gate checks against its known cases.
    pub false_drops: Vec<String>,
    /// Lines whose URL is no labelled page (e.g. a folder URL).
    pub unlabelled: usize,
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path, what: &str) -> Result<Vec<T>> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("{}:{}: cannot read", path.display(), n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(&line)
                .with_context(|| format!("{}:{}: not a {what} line", path.display(), n + 1))?,
        );
    }
    Ok(out)
}

/// Scores the crawl in `args.out` against the labelled pages.
pub fn score_crawl(args: &CrawledArgs) -> Result<CrawlScores> {
    let pages: Vec<PageMeta> = read_jsonl(&args.pages, "page ({\"url\", \"source\"})")?;
    let index: HashMap<&str, usize> = pages
        .iter()
        .enumerate()
        .map(|(i, p)| (p.url.as_str(), i))
        .collect();
    anyhow::ensure!(
        index.len() == pages.len(),
        "{}: page URLs must be unique",
        args.pages.display()
    );
    let kept: Vec<Kept> = read_jsonl(&args.out.join("kept.jsonl"), "kept")?;
    let dropped: Vec<DupLine> = read_jsonl(&args.out.join("duplicates.jsonl"), "duplicates")?;
    let find = |url: &str| page_key(url).and_then(|k| index.get(k.as_str()).copied());
    let mut decision = vec![Decision::Unreached; pages.len()];
    let mut unlabelled = 0;
    for k in &kept {
        match find(&k.url).or_else(|| k.final_url.as_deref().and_then(find)) {
            Some(i) => decision[i] = Decision::Kept,
            None => unlabelled += 1,
        }
    }
    let kept_chars: HashMap<&str, usize> = kept
        .iter()
        .filter_map(|k| Some((k.url.as_str(), k.chars?)))
        .collect();
    for d in &dropped {
        if d.tier == "url" {
            continue;
        }
        let (Some(i), Some(of)) = (find(&d.url), find(&d.duplicate_of)) else {
            unlabelled += 1;
            continue;
        };
        if i != of && decision[i] == Decision::Unreached {
            decision[i] = Decision::Dropped {
                of,
                tier: d.tier.clone(),
                similarity: d.similarity,
                suspect: d
                    .suspects(kept_chars.get(d.duplicate_of.as_str()).copied())
                    .into_iter()
                    .map(|s| s.as_str().to_string())
                    .collect(),
            };
        }
    }
    // Scored among the reached pages only: a page the crawl never fetched
    // was neither kept nor lost by a verdict.
    let reached: Vec<usize> = (0..pages.len())
        .filter(|&i| decision[i] != Decision::Unreached)
        .collect();
    let reached_index: HashMap<&str, usize> = reached
        .iter()
        .enumerate()
        .map(|(r, &i)| (pages[i].url.as_str(), r))
        .collect();
    let labels = load_labels_filtered(&args.labels, &reached_index, args.near)?;
    Ok(aggregate(&pages, &reached, &decision, &labels, args, unlabelled))
}

fn aggregate(
    pages: &[PageMeta],
    reached: &[usize],
    decision: &[Decision],
    labels: &Labels,
    args: &CrawledArgs,
    unlabelled: usize,
) -> CrawlScores {
    let n = reached.len();
    let pos: HashMap<usize, usize> = reached.iter().enumerate().map(|(r, &i)| (i, r)).collect();
    let j = |a: usize, b: usize| labels.pairs.get(&(a, b)).copied().unwrap_or(0.0);
    let kept: Vec<bool> = reached.iter().map(|&i| decision[i] == Decision::Kept).collect();
    let mut resembling_kept = vec![false; n];
    for (&(a, b), &jab) in &labels.pairs {
        if jab >= args.ambiguous && kept[b] {
            resembling_kept[a] = true;
        }
    }
    let mut rows: BTreeMap<String, SourceRow> = BTreeMap::new();
    for p in pages {
        rows.entry(p.source.clone()).or_default().pages += 1;
    }
    let source_of = |r: usize| pages[reached[r]].source.clone();
    let mut clusters = UnionFind::new(n);
    let mut lost = Vec::new();
    let mut false_drops = Vec::new();
    for r in 0..n {
        let row = rows.entry(source_of(r)).or_default();
        row.reached += 1;
        if let Decision::Dropped {
            of,
            tier,
            similarity,
            suspect,
        } = &decision[reached[r]]
        {
            row.dropped += 1;
            for s in suspect {
                *row.suspects.entry(s.clone()).or_default() += 1;
            }
            let o = pos.get(of).copied().unwrap_or(r);
            clusters.union(r, o);
            // A partner that was not reached is `r` itself: resemblance 0.
            let exact = j(r, o);
            let named = |what: &str| {
                format!(
                    "{what}: {} (tier {tier}, estimated {}, exact {exact:.3} with {})",
                    pages[reached[r]].url,
                    similarity.map_or("-".into(), |s| format!("{s:.3}")),
                    pages[*of].url
                )
            };
            if exact < FALSE_DROP_BELOW {
                row.false_drops += 1;
                if false_drops.len() < args.show {
                    false_drops.push(named("false drop"));
                }
            }
            if !resembling_kept[r] {
                row.lost += 1;
                if lost.len() < args.show {
                    lost.push(named("lost"));
                }
            }
        }
    }
    // Components of near pairs, each counted in the source of its first page.
    // root -> (first, size, dropped, holds a large page)
    let mut comp: HashMap<usize, (usize, usize, usize, bool)> = HashMap::new();
    for (r, (&root, &k)) in labels.component.iter().zip(&kept).enumerate() {
        let e = comp.entry(root).or_insert((r, 0, 0, false));
        e.1 += 1;
        if !k {
            e.2 += 1;
        }
        e.3 |= pages[reached[r]].is_large();
    }
    for &(first, size, gone, large) in comp.values() {
        if size >= 2 {
            let row = rows.entry(source_of(first)).or_default();
            row.should += size - 1;
            row.did += gone.min(size - 1);
            if large {
                row.should_large += size - 1;
                row.did_large += gone.min(size - 1);
            }
        }
    }
    for &(a, b) in &labels.near {
        let row = rows.entry(source_of(a)).or_default();
        row.near_pairs += 1;
        if clusters.find(a) == clusters.find(b) {
            row.near_found += 1;
        }
    }
    let mut total = SourceRow::default();
    for row in rows.values() {
        total.add(row);
    }
    CrawlScores {
        rows,
        total,
        lost,
        false_drops,
        unlabelled,
    }
}

/// Runs `crawl eval --crawled`; returns the report (a Markdown table).
pub fn run(args: &CrawledArgs) -> Result<String> {
    let s = score_crawl(args)?;
    let mut out = String::new();
    let reasons: Vec<String> = {
        let mut all: Vec<String> = s.total.suspects.keys().cloned().collect();
        for r in crate::output::lines::Suspect::ALL.iter().map(|s| s.as_str()) {
            if !all.iter().any(|a| a == r) {
                all.push(r.to_string());
            }
        }
        all.sort();
        all
    };
    writeln!(
        out,
        "{} labelled pages, {} reached by the crawl ({} output lines name no labelled page)\n",
        s.total.pages, s.total.reached, s.unlabelled
    )?;
    let head: String = reasons.iter().map(|r| format!(" suspect: {r} |")).collect();
    writeln!(
        out,
        "| source | pages | reached | dropped | unique lost | component recall | recall (>= {RECALL_MIN_CHARS} chars) | pair recall | false drops |{head}"
    )?;
    writeln!(
        out,
        "|---|---|---|---|---|---|---|---|---|{}",
        "---|".repeat(reasons.len())
    )?;
    let line = |name: &str, r: &SourceRow| {
        let counts: String = reasons
            .iter()
            .map(|k| format!(" {} |", r.suspects.get(k).copied().unwrap_or(0)))
            .collect();
        format!(
            "| {name} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {} |{counts}\n",
            r.pages,
            r.reached,
            r.dropped,
            r.lost,
            r.recall(),
            r.recall_large(),
            r.pair_recall(),
            r.false_drops
        )
    };
    for (name, r) in &s.rows {
        out.push_str(&line(name, r));
    }
    out.push_str(&line("all", &s.total));
    for l in s.lost.iter().chain(&s.false_drops) {
        writeln!(out, "  {l}")?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write(dir: &Path, name: &str, lines: &[&str]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        p
    }

    #[test]
    fn crawl_verdicts_are_matched_to_pages_and_scored_per_source() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let pages = write(
            d,
            "pages.jsonl",
            &[
                r#"{"url":"http://a.test/1.html","source":"A"}"#,
                r#"{"url":"http://a.test/2.html","source":"A"}"#,
                r#"{"url":"http://b.test/x.html","source":"B"}"#,
                r#"{"url":"http://b.test/y.html","source":"B"}"#,
                r#"{"url":"http://b.test/never.html","source":"B"}"#,
                r#"{"url":"http://c.test/s1.html","source":"C","shingles":40}"#,
                r#"{"url":"http://c.test/s2.html","source":"C","shingles":41}"#,
            ],
        );
        // 1-2 near; x and y distinct; the stubs s1-s2 near.
        let labels = write(
            d,
            "pairs.jsonl",
            &[
                r#"{"a":"http://a.test/1.html","b":"http://a.test/2.html","jaccard":0.9}"#,
                r#"{"a":"http://c.test/s1.html","b":"http://c.test/s2.html","jaccard":0.95}"#,
            ],
        );
        let out = d.join("out");
        std::fs::create_dir(&out).unwrap();
        write(
            &out,
            "kept.jsonl",
            &[
                r#"{"url":"http://a.test:8080/1.html?q=1","final_url":"http://a.test:8080/1.html?q=1"}"#,
                r#"{"url":"http://b.test:8080/x.html","chars":300}"#,
                r#"{"url":"http://b.test:8080/"}"#,
                r#"{"url":"http://c.test:8080/s1.html"}"#,
                r#"{"url":"http://c.test:8080/s2.html"}"#,
            ],
        );
        write(
            &out,
            "duplicates.jsonl",
            &[
                // right: 2 is a near copy of 1
                r#"{"url":"http://a.test:8080/2.html","tier":"content","duplicate_of":"http://a.test:8080/1.html?q=1","similarity":0.9}"#,
                // another query of a kept page: decides nothing
                r#"{"url":"http://a.test:8080/1.html?q=2","tier":"content","duplicate_of":"http://a.test:8080/1.html?q=1","similarity":1.0}"#,
                // wrong: y lost, flagged
                r#"{"url":"http://b.test:8080/y.html","tier":"content","duplicate_of":"http://b.test:8080/x.html","similarity":1.0,"basis":"main","chars":9000,"features":5}"#,
                r#"{"url":"http://b.test:8080/r","tier":"url","duplicate_of":"http://b.test:8080/x.html"}"#,
            ],
        );
        let args = CrawledArgs {
            out,
            pages,
            labels,
            near: 0.8,
            ambiguous: 0.5,
            show: 10,
        };
        let s = score_crawl(&args).unwrap();
        let a = &s.rows["A"];
        assert_eq!((a.pages, a.reached, a.dropped, a.lost), (2, 2, 1, 0));
        assert_eq!((a.should, a.did), (1, 1));
        assert_eq!((a.near_pairs, a.near_found), (1, 1));
        assert_eq!((a.should_large, a.did_large), (1, 1), "no shingle count: large");
        // Two stubs kept side by side: a miss, but not one the gate's
        // recall counts (no page of 300 characters).
        let c = &s.rows["C"];
        assert_eq!((c.should, c.did, c.should_large), (1, 0, 0));
        assert_eq!((c.recall(), c.recall_large()), (0.0, 1.0));
        let b = &s.rows["B"];
        assert_eq!((b.pages, b.reached, b.dropped, b.lost), (3, 2, 1, 1));
        assert_eq!(b.suspects.get("few_features"), Some(&1));
        assert_eq!(b.suspects.get("larger"), Some(&1), "9000 chars against 300");
        assert_eq!(b.suspects.get("template"), None);
        assert_eq!(s.total.lost, 1);
        // y's partner x resembles it not at all: a false drop; 2's partner
        // 1 at 0.9 is a right one.
        assert_eq!((a.false_drops, b.false_drops), (0, 1));
        assert_eq!(s.unlabelled, 1, "the folder URL names no page");
        assert!(s.lost[0].contains("http://b.test/y.html"), "{:?}", s.lost);
        assert_eq!(s.false_drops.len(), 1, "{:?}", s.false_drops);
        assert!(
            s.false_drops[0].starts_with("false drop: http://b.test/y.html ")
                && s.false_drops[0].ends_with("exact 0.000 with http://b.test/x.html)"),
            "{:?}",
            s.false_drops
        );
        let report = run(&args).unwrap();
        assert!(report.contains("| B | 3 | 2 | 1 | 1 |"), "{report}");
        assert!(
            report.contains("| recall (>= 300 chars) | pair recall | false drops |"),
            "{report}"
        );
        assert!(
            report.contains("| C | 2 | 2 | 0 | 0 | 0.000 | 1.000 |"),
            "{report}"
        );
    }
}
