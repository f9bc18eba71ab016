//! `crawl eval`: verdict quality against labelled pairs.
//!
//! Runs the tiers over a corpus (in memory, in input order, as `crawl
//! dedup` does) and scores the verdicts against a labelled set of pairs
//! (`{"a", "b", "jaccard"}` per line: the exact resemblance of two
//! documents). Pairs not listed count as distinct. Measures, as in
//! text-dedup's benchmark tables:
//!
//! - **unique lost**: pages dropped although no kept page resembles them at
//!   even `--ambiguous` (0.5): content that exists nowhere in the output;
//! - **component recall**: of the near-duplicate components (connected by
//!   pairs >= `--near`, 0.8), the share of the pages that should go (all but
//!   one per component) that went;
//! - **pair precision / recall**: pairs (dropped page, the page it was
//!   judged a copy of) that are near-duplicates (strict) or at least
//!   ambiguous (lenient); near pairs whose two pages ended in the same
//!   verdict cluster.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use serde::Deserialize;
use simcrawl_dedup::{DedupConfig, Deduper, MemoryStore, Signature, Tier, TitlePolicy, Verdict};

use crate::config::Config;

pub mod crawled;

/// Options of `crawl eval`.
#[derive(Debug)]
pub struct EvalArgs {
    pub input: PathBuf,
    pub labels: PathBuf,
    /// Also score the reference settings and a threshold sweep.
    pub sweep: bool,
    /// Resemblance at or above which a pair is a near-duplicate.
    pub near: f64,
    /// Resemblance below which a pair is distinct.
    pub ambiguous: f64,
    /// Print this many lost pages (and missed near pairs) to look at.
    pub show: usize,
}

#[derive(Debug, Deserialize)]
struct Pair {
    a: String,
    b: String,
    jaccard: f64,
}

/// The scores of one setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    pub docs: usize,
    pub dropped_title: usize,
    pub dropped_content: usize,
    pub unique_lost: usize,
    pub component_recall: f64,
    pub pair_precision_strict: f64,
    pub pair_precision_lenient: f64,
    pub pair_recall: f64,
    pub near_pairs: usize,
    pub components: usize,
    pub lost: Vec<String>,
}

struct Labels {
    /// Exact resemblance of each listed pair, both orders, by document index.
    pairs: HashMap<(usize, usize), f64>,
    /// Near pairs, by index.
    near: Vec<(usize, usize)>,
    /// Each document's near-duplicate component (a representative index).
    component: Vec<usize>,
    /// Components of two or more documents.
    components: usize,
}

fn load_labels(path: &Path, index: &HashMap<&str, usize>, near: f64) -> Result<Labels> {
    let (labels, unknown) = read_labels(path, index, near)?;
    if unknown > 0 {
        tracing::warn!(
            "{}: {unknown} pairs name URLs that are not in the input; ignored",
            path.display()
        );
    }
    Ok(labels)
}

/// [`load_labels`] for a subset of the labelled pages (those a crawl
/// reached): pairs naming other pages are left out without a warning.
fn load_labels_filtered(path: &Path, index: &HashMap<&str, usize>, near: f64) -> Result<Labels> {
    Ok(read_labels(path, index, near)?.0)
}

/// The labels of the pages in `index`, and how many pairs named others.
fn read_labels(path: &Path, index: &HashMap<&str, usize>, near: f64) -> Result<(Labels, usize)> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read labels {}", path.display()))?;
    let mut pairs = HashMap::new();
    let mut near_pairs = Vec::new();
    let mut unknown = 0usize;
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("{}:{}: cannot read", path.display(), n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let p: Pair = serde_json::from_str(&line).with_context(|| {
            format!(
                "{}:{}: invalid pair (want {{\"a\", \"b\", \"jaccard\"}})",
                path.display(),
                n + 1
            )
        })?;
        if !(0.0..=1.0).contains(&p.jaccard) {
            bail!(
                "{}:{}: jaccard {} is not between 0 and 1",
                path.display(),
                n + 1,
                p.jaccard
            );
        }
        let (Some(&a), Some(&b)) = (index.get(p.a.as_str()), index.get(p.b.as_str())) else {
            unknown += 1;
            continue;
        };
        pairs.insert((a, b), p.jaccard);
        pairs.insert((b, a), p.jaccard);
        if p.jaccard >= near && a != b {
            near_pairs.push((a.min(b), a.max(b)));
        }
    }
    near_pairs.sort_unstable();
    near_pairs.dedup();
    let mut uf = UnionFind::new(index.len());
    for &(a, b) in &near_pairs {
        uf.union(a, b);
    }
    let component: Vec<usize> = (0..index.len()).map(|i| uf.find(i)).collect();
    let mut sizes: HashMap<usize, usize> = HashMap::new();
    for &c in &component {
        *sizes.entry(c).or_default() += 1;
    }
    let labels = Labels {
        pairs,
        near: near_pairs,
        components: sizes.values().filter(|&&n| n >= 2).count(),
        component,
    };
    Ok((labels, unknown))
}

struct UnionFind(Vec<usize>);

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind((0..n).collect())
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0[ra] = rb;
        }
    }
}

/// Scores the verdicts of one setting. `urls[i]` is document i's URL;
/// `index` maps it back.
fn score(
    urls: &[String],
    index: &HashMap<&str, usize>,
    verdicts: &[Verdict],
    labels: &Labels,
    ambiguous: f64,
    near: f64,
    show: usize,
) -> Result<Scores> {
    let n = urls.len();
    let j = |a: usize, b: usize| labels.pairs.get(&(a, b)).copied().unwrap_or(0.0);
    let mut kept = vec![false; n];
    let mut of: Vec<Option<usize>> = vec![None; n];
    let (mut dropped_title, mut dropped_content) = (0, 0);
    for (i, v) in verdicts.iter().enumerate() {
        match v {
            Verdict::Unique { .. } => kept[i] = true,
            Verdict::Duplicate(d) => {
                match d.tier {
                    Tier::Title => dropped_title += 1,
                    Tier::Content => dropped_content += 1,
                    _ => {} // Url (Tier is non_exhaustive)
                }
                of[i] = Some(
                    *index
                        .get(d.of.as_str())
                        .with_context(|| format!("verdict names an unknown document {}", d.of))?,
                );
            }
            _ => kept[i] = true, // non_exhaustive in simcrawl-dedup
        }
    }
    // Unique lost: dropped, and no kept page resembles it at >= ambiguous.
    let mut resembling_kept = vec![false; n];
    for (&(a, b), &jab) in &labels.pairs {
        if jab >= ambiguous && kept[b] {
            resembling_kept[a] = true;
        }
    }
    let lost: Vec<usize> = (0..n).filter(|&i| !kept[i] && !resembling_kept[i]).collect();
    // Components of near pairs.
    let mut comp: HashMap<usize, (usize, usize)> = HashMap::new(); // root -> (size, dropped)
    for (i, &k) in kept.iter().enumerate() {
        let e = comp.entry(labels.component[i]).or_default();
        e.0 += 1;
        if !k {
            e.1 += 1;
        }
    }
    let (mut should, mut did) = (0usize, 0usize);
    for &(size, dropped) in comp.values() {
        if size >= 2 {
            should += size - 1;
            did += dropped.min(size - 1);
        }
    }
    // Pairs.
    let reported: Vec<(usize, usize)> = (0..n).filter_map(|i| of[i].map(|o| (i, o))).collect();
    let strict = reported.iter().filter(|&&(a, b)| j(a, b) >= near).count();
    let lenient = reported.iter().filter(|&&(a, b)| j(a, b) >= ambiguous).count();
    let mut clusters = UnionFind::new(n);
    for &(a, b) in &reported {
        clusters.union(a, b);
    }
    let found = labels
        .near
        .iter()
        .filter(|&&(a, b)| clusters.find(a) == clusters.find(b))
        .count();
    let ratio = |x: usize, y: usize| if y == 0 { 1.0 } else { x as f64 / y as f64 };
    let lost_lines = lost
        .iter()
        .take(show)
        .map(|&i| {
            let o = of[i].unwrap_or(i);
            let (tier, sim) = match &verdicts[i] {
                Verdict::Duplicate(d) => (d.tier.as_str(), d.similarity),
                _ => ("-", None), // Unique (non_exhaustive)
            };
            format!(
                "lost: {} (tier {tier}, estimated {}, exact {:.3} with {})",
                urls[i],
                sim.map_or("-".into(), |s| format!("{s:.3}")),
                j(i, o),
                urls[o]
            )
        })
        .collect();
    Ok(Scores {
        docs: n,
        dropped_title,
        dropped_content,
        unique_lost: lost.len(),
        component_recall: ratio(did, should),
        pair_precision_strict: ratio(strict, reported.len()),
        pair_precision_lenient: ratio(lenient, reported.len()),
        pair_recall: ratio(found, labels.near.len()),
        near_pairs: labels.near.len(),
        components: labels.components,
        lost: lost_lines,
    })
}

/// The named settings a sweep scores, besides the configured one.
fn sweep_settings(base: &DedupConfig) -> Vec<(String, DedupConfig)> {
    let mut out = vec![
        (
            format!(
                "SimHash only ({} bits, k={}, no verification, no title tier)",
                base.bits, base.max_distance
            ),
            DedupConfig {
                min_similarity: 0.0,
                bands: 0,
                title_policy: TitlePolicy::Off,
                ..base.clone()
            },
        ),
        (
            format!(
                "seeds: title MD5 (strict) + SimHash {} bits, k={}",
                base.bits, base.max_distance
            ),
            DedupConfig {
                min_similarity: 0.0,
                bands: 0,
                title_policy: TitlePolicy::Strict,
                ..base.clone()
            },
        ),
        (
            format!(
                "verified, SimHash candidates only (no band index), min {}/{}",
                base.min_similarity, base.title_min_similarity
            ),
            DedupConfig {
                bands: 0,
                ..base.clone()
            },
        ),
    ];
    for (content, title) in [
        (0.5, 0.5),
        (0.6, 0.55),
        (0.7, 0.65),
        (0.75, 0.7),
        (0.8, 0.75),
        (0.9, 0.85),
    ] {
        out.push((
            format!(
                "verified + bands {}x{}, min {content}/{title}",
                base.bands, base.band_rows
            ),
            DedupConfig {
                min_similarity: content,
                title_min_similarity: title,
                ..base.clone()
            },
        ));
    }
    out
}

/// Runs `crawl eval`; returns the report.
pub fn run(cfg: &Config, args: &EvalArgs) -> Result<String> {
    if !(0.0 < args.ambiguous && args.ambiguous <= args.near && args.near <= 1.0) {
        bail!(
            "--ambiguous {} and --near {} must satisfy 0 < ambiguous <= near <= 1",
            args.ambiguous,
            args.near
        );
    }
    let started = Instant::now();
    let cleaner = simcrawl_clean::Cleaner::new(cfg.clean.clone()).context("invalid [clean] settings")?;
    let signer = Deduper::new(MemoryStore::new(), cfg.dedup.clone())?;
    let file = std::fs::File::open(&args.input)
        .with_context(|| format!("cannot read input {}", args.input.display()))?;
    let lines: Vec<(usize, String)> = BufReader::new(file)
        .lines()
        .enumerate()
        .map(|(i, l)| l.map(|l| (i + 1, l)))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("cannot read input {}", args.input.display()))?;
    let parsed: Vec<crate::batch::Parsed> = lines
        .par_iter()
        .map(|(_, l)| crate::batch::parse_line(&signer, &cleaner, l))
        .collect();
    let mut urls = Vec::new();
    let mut sigs: Vec<Signature> = Vec::new();
    for ((line, _), p) in lines.iter().zip(parsed) {
        match p {
            Ok(doc) => {
                urls.push(doc.url);
                sigs.push(doc.sig);
            }
            Err(e) => bail!("{}:{line}: {e}", args.input.display()),
        }
    }
    let signed = started.elapsed();
    let index: HashMap<&str, usize> = urls.iter().enumerate().map(|(i, u)| (u.as_str(), i)).collect();
    if index.len() != urls.len() {
        bail!("{}: URLs must be unique for an evaluation", args.input.display());
    }
    let labels = load_labels(&args.labels, &index, args.near)?;
    let mut settings = vec![("configured".to_string(), cfg.dedup.clone())];
    if args.sweep {
        settings.extend(sweep_settings(&cfg.dedup));
    }
    let mut report = String::new();
    writeln!(
        report,
        "{} documents, {} near pairs (>= {}) in {} components; signed in {:.1} s\n",
        urls.len(),
        labels.near.len(),
        args.near,
        labels.components,
        signed.as_secs_f64()
    )?;
    writeln!(
        report,
        "| setting | unique lost | component recall | pair precision (>= {}) | pair precision (>= {}) | pair recall | dropped: title | content |",
        args.near, args.ambiguous
    )?;
    writeln!(report, "|---|---|---|---|---|---|---|---|")?;
    let mut details = String::new();
    for (name, dc) in settings {
        let d = Deduper::new(MemoryStore::new(), dc)?;
        let verdicts = d.check_batch(&sigs, simcrawl_dedup::UrlTier::Check)?;
        let s = score(
            &urls,
            &index,
            &verdicts,
            &labels,
            args.ambiguous,
            args.near,
            args.show,
        )?;
        writeln!(
            report,
            "| {name} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {} |",
            s.unique_lost,
            s.component_recall,
            s.pair_precision_strict,
            s.pair_precision_lenient,
            s.pair_recall,
            s.dropped_title,
            s.dropped_content
        )?;
        if !s.lost.is_empty() {
            writeln!(details, "\n{name}:")?;
            for l in &s.lost {
                writeln!(details, "  {l}")?;
            }
        }
    }
    report.push_str(&details);
    Ok(report)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use simcrawl_dedup::Duplicate;

    fn dup(of: &str) -> Verdict {
        Verdict::Duplicate(Duplicate {
            tier: Tier::Content,
            of: of.into(),
            distance: Some(0),
            similarity: Some(1.0),
            fingerprint: None,
            of_id: None,
            url_skipped: false,
            article: false,
        })
    }

    fn keep() -> Verdict {
        Verdict::Unique {
            id: None,
            fingerprint: None,
            url_skipped: false,
        }
    }

    #[test]
    fn scores_count_losses_components_and_pairs() {
        let urls: Vec<String> = ["a", "b", "c", "d", "e"].iter().map(|s| s.to_string()).collect();
        let index: HashMap<&str, usize> = urls.iter().enumerate().map(|(i, u)| (u.as_str(), i)).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pairs.jsonl");
        // a-b near, b-c near (one component of 3), d-e ambiguous.
        std::fs::write(
            &path,
            "{\"a\":\"a\",\"b\":\"b\",\"jaccard\":0.9}\n{\"a\":\"b\",\"b\":\"c\",\"jaccard\":0.85}\n\
             {\"a\":\"d\",\"b\":\"e\",\"jaccard\":0.6}\n{\"a\":\"zz\",\"b\":\"a\",\"jaccard\":0.9}\n",
        )
        .unwrap();
        let labels = load_labels(&path, &index, 0.8).unwrap();
        assert_eq!(labels.near, vec![(0, 1), (1, 2)]);
        // b dropped as a copy of a (right); c kept (missed); e dropped as a
        // copy of d (ambiguous: not lost); d dropped as a copy of a (lost:
        // nothing kept resembles d).
        let verdicts = vec![keep(), dup("a"), keep(), dup("a"), dup("d")];
        let s = score(&urls, &index, &verdicts, &labels, 0.5, 0.8, 10).unwrap();
        assert_eq!(
            s.unique_lost, 2,
            "d lost; e resembles only d, which was dropped: {:?}",
            s.lost
        );
        assert_eq!(s.components, 1);
        assert!((s.component_recall - 0.5).abs() < 1e-9);
        assert!((s.pair_precision_strict - 1.0 / 3.0).abs() < 1e-9);
        assert!((s.pair_precision_lenient - 2.0 / 3.0).abs() < 1e-9);
        assert!((s.pair_recall - 0.5).abs() < 1e-9);
    }

    #[test]
    fn bad_labels_are_named() {
        let urls = ["a".to_string()];
        let index: HashMap<&str, usize> = urls.iter().enumerate().map(|(i, u)| (u.as_str(), i)).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pairs.jsonl");
        std::fs::write(&path, "{\"a\":\"a\",\"b\":\"a\",\"jaccard\":1.5}\n").unwrap();
        let e = load_labels(&path, &index, 0.8).err().unwrap();
        assert!(format!("{e:#}").contains("pairs.jsonl:1: jaccard 1.5"), "{e:#}");
        std::fs::write(&path, "{\"a\":\"a\"}\n").unwrap();
        let e = load_labels(&path, &index, 0.8).err().unwrap();
        assert!(format!("{e:#}").contains("pairs.jsonl:1: invalid pair"), "{e:#}");
    }
}
