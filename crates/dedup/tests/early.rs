//! Candidates looked up early (`Deduper::early_hits`, used by
//! `Deduper::check_in_with`) give the verdicts of a writer that looks them
//! up itself: over a stream of copies, near-copies and distinct texts, with
//! the early lookups made several documents before their check (as a crawl
//! page waits for the writer), across durable commits that move the block
//! lists into the side file.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use simcrawl_dedup::{
    DedupConfig, Deduper, Document, EarlyHits, RedbOptions, RedbStore, Signature, Store, UrlTier, Verdict,
};

const WORDS: &[&str] = &[
    "river", "council", "budget", "bridge", "harbour", "violin", "granite", "pepper", "lantern", "meadow",
    "winter", "storm", "railway", "station", "museum", "garden", "market", "festival", "library", "school",
    "engine", "kernel", "driver", "module", "option", "buffer", "socket", "thread", "signal", "parser",
    "北京", "上海", "降雨", "防汛", "统计", "工业", "增长", "预警", "气温", "交通",
];

/// A small deterministic generator.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// `n` documents: distinct texts of 60 to 140 words, and copies of
/// earlier ones, some exact, some with a few words changed, some under
/// the same title as their original.
fn corpus(n: usize) -> Vec<(String, String, String)> {
    let mut rng = Lcg(11);
    let mut texts: Vec<Vec<&str>> = Vec::new();
    let mut docs = Vec::new();
    for i in 0..n {
        let (words, title) = if texts.is_empty() || rng.below(5) < 3 {
            let len = 60 + rng.below(80);
            let words: Vec<&str> = (0..len).map(|_| WORDS[rng.below(WORDS.len())]).collect();
            texts.push(words.clone());
            (words, format!("page {i}"))
        } else {
            // Most copies are of a recent page, as in a crawl: some were
            // committed after their copy's candidates were looked up.
            let of = if rng.below(2) == 0 {
                texts.len() - 1 - rng.below(texts.len().min(8))
            } else {
                rng.below(texts.len())
            };
            let mut words = texts[of].clone();
            for _ in 0..rng.below(4) {
                let at = rng.below(words.len());
                words[at] = WORDS[rng.below(WORDS.len())];
            }
            let title = if rng.below(2) == 0 {
                format!("page {of}")
            } else {
                format!("copy {i}")
            };
            (words, title)
        };
        docs.push((format!("http://h{}.example/{i}", i % 7), title, words.join(" ")));
    }
    docs
}

/// A store whose commits are durable only when flushed; with `bands`, or
/// with the SimHash candidates alone (then a candidate the early hits
/// miss is a copy kept).
fn deduper(path: &std::path::Path, bands: bool) -> Deduper<RedbStore> {
    let options = RedbOptions {
        sync_interval: Duration::MAX,
        ..RedbOptions::default()
    };
    let config = DedupConfig {
        bands: if bands { DedupConfig::default().bands } else { 0 },
        ..DedupConfig::default()
    };
    Deduper::new(RedbStore::open_opts(path, options).unwrap(), config).unwrap()
}

fn summary(v: &Verdict) -> (bool, Option<String>, Option<String>, Option<String>) {
    (
        v.is_duplicate(),
        v.partner().map(str::to_owned),
        v.tier().map(|t| t.as_str().to_owned()),
        v.similarity().map(|s| format!("{s:.4}")),
    )
}

#[test]
fn early_candidates_give_the_single_writers_verdicts() {
    for bands in [false, true] {
        same_verdicts(bands);
    }
}

fn same_verdicts(bands: bool) {
    let docs = corpus(600);
    let dir = tempfile::tempdir().unwrap();
    let plain = deduper(&dir.path().join("plain.redb"), bands);
    let early = deduper(&dir.path().join("early.redb"), bands);
    let sigs: Vec<Signature> = docs
        .iter()
        .map(|(u, t, x)| early.sign(&Document::new(u, t, x)))
        .collect();
    const LAG: usize = 6;
    let mut found: Vec<Option<EarlyHits>> = vec![None; docs.len()];
    let (mut dropped, mut with_hits) = (0, 0);
    for (i, (u, t, x)) in docs.iter().enumerate() {
        // Looked up now, checked LAG documents later.
        if i + LAG < docs.len() {
            found[i + LAG] = early.early_hits(&sigs[i + LAG]).unwrap();
        }
        if i < LAG {
            found[i] = early.early_hits(&sigs[i]).unwrap();
        }
        with_hits += usize::from(found[i].as_ref().is_some_and(|e| !e.is_empty()));
        let expected = plain.check(&Document::new(u, t, x)).unwrap();
        let got = early
            .store()
            .write(|tables| early.check_in_with(tables, &sigs[i], UrlTier::Check, found[i].as_ref()))
            .unwrap();
        assert_eq!(
            summary(&got),
            summary(&expected),
            "document {i} ({u}), bands {bands}"
        );
        dropped += usize::from(expected.is_duplicate());
        if i % 50 == 49 {
            plain.flush().unwrap();
            early.flush().unwrap();
        }
    }
    assert!(dropped > 100, "{dropped} copies dropped");
    assert!(
        with_hits > 100,
        "{with_hits} documents had candidates found early"
    );
}
