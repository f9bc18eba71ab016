//! A crawler embedding simcrawl-dedup, end to end, on a generated corpus:
//!
//! 1. opens an on-disk store in a temporary directory (`Deduper::open`;
//!    jieba's dictionary and the IDF table are compiled in, nothing to
//!    warm up);
//! 2. generates a few thousand documents with planted copies: near copies
//!    (a few words edited, on a mirror), exact copies, and pages re-crawled
//!    under the same URL with new text;
//! 3. checks them from 4 threads: each signs a batch (`sign`, the CPU work,
//!    in parallel) and checks it in one transaction (`check_batch`), the
//!    batches committed in stream order (so a copy always meets its
//!    original first, and the run is the same every time);
//! 4. flushes, reopens the store, and filters a page's links with the
//!    read-only `url_seen`, then fetches and checks one (`check_url`, then
//!    `check`: never a copy of itself);
//! 5. prints some verdicts as JSON lines, and a summary;
//! 6. exits non-zero unless every planted copy was found and no unique
//!    document was dropped.
//!
//! `cargo run -p simcrawl-dedup --example embed_crawler [DOCS]`

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use simcrawl_dedup::{Deduper, Document, Signature, UrlTier, Verdict};

/// Documents checked per transaction.
const BATCH: usize = 64;
const THREADS: usize = 4;

/// A small deterministic generator (xorshift64*): the corpus is the same on
/// every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const SYLLABLES: &[&str] = &[
    "ka", "to", "ri", "mu", "sen", "la", "po", "ve", "di", "qua", "bel", "no", "tar", "gi", "fu", "stro",
    "ne", "pal", "mi", "dor", "ex", "ul", "ban", "cre", "si", "vor", "ta", "lem", "ost", "ja", "pri", "zu",
    "hal", "ro", "men", "tis", "ga", "we", "nod", "ar",
];

fn word(rng: &mut Rng) -> String {
    (0..2 + rng.below(3))
        .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
        .collect()
}

fn text(rng: &mut Rng) -> Vec<String> {
    (0..90 + rng.below(60)).map(|_| word(rng)).collect()
}

/// One generated page, and the group of copies it belongs to (every page
/// of a group but one must be dropped; a group of one is a unique page).
struct Page {
    url: String,
    title: String,
    text: String,
    group: usize,
    planted: &'static str,
}

fn corpus(originals: usize) -> Vec<Page> {
    let mut rng = Rng(0x5eed_cafe_f00d_0001);
    let mut pages: Vec<Page> = (0..originals)
        .map(|i| Page {
            url: format!("http://site{}.example/news/{i}.html", i % 37),
            title: format!("{} {}", word(&mut rng), word(&mut rng)),
            text: text(&mut rng).join(" "),
            group: i,
            planted: "original",
        })
        .collect();
    // Planted copies, each inserted somewhere after its original.
    for k in 0..originals / 8 {
        let group = rng.below(originals);
        // The first page of a group is its original: copies go after it.
        let Some(first) = pages.iter().position(|p| p.group == group) else {
            continue;
        };
        let o = &pages[first];
        let title = o.title.clone();
        let mut words: Vec<String> = o.text.split(' ').map(str::to_string).collect();
        let (url, text, planted) = match k % 4 {
            // Near copy: three words edited, on a mirror.
            0 | 1 => {
                for _ in 0..3 {
                    let at = rng.below(words.len());
                    words[at] = word(&mut rng);
                }
                (
                    format!("http://mirror{}.example/copy/{k}", k % 5),
                    words.join(" "),
                    "near copy",
                )
            }
            // Exact copy elsewhere.
            2 => (
                format!("http://aggregator.example/item?id={k}"),
                o.text.clone(),
                "exact copy",
            ),
            // The same URL (another spelling) re-crawled with other text.
            _ => (
                o.url.replace("http://", "HTTP://") + "#reload",
                text(&mut rng).join(" "),
                "same URL",
            ),
        };
        let at = first + 1 + rng.below(pages.len() - first);
        pages.insert(
            at,
            Page {
                url,
                title,
                text,
                group,
                planted,
            },
        );
    }
    pages
}

fn main() {
    let originals: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3000);
    if let Err(e) = run(originals) {
        eprintln!("embed_crawler: {e}");
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            eprintln!("  caused by: {c}");
            cause = c.source();
        }
        std::process::exit(2);
    }
}

fn run(originals: usize) -> Result<(), simcrawl_dedup::Error> {
    let started = std::time::Instant::now();
    let dir = tempfile::tempdir().map_err(|e| simcrawl_dedup::Error::Caller(Box::new(e)))?;
    let pages = corpus(originals);
    let dedup = Deduper::open(dir.path())?;

    // Check from 4 threads: take a batch, sign it (parallel), then check
    // it in one transaction when its turn comes (commits in stream order).
    let next = AtomicUsize::new(0);
    let turn = (Mutex::new(0usize), Condvar::new());
    let verdicts: Mutex<Vec<Option<Verdict>>> = Mutex::new(vec![None; pages.len()]);
    let failed: Mutex<Option<simcrawl_dedup::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                loop {
                    let start = next.fetch_add(BATCH, Ordering::Relaxed);
                    if start >= pages.len() {
                        return;
                    }
                    let batch = &pages[start..(start + BATCH).min(pages.len())];
                    let sigs: Vec<Signature> = batch
                        .iter()
                        .map(|p| dedup.sign(&Document::new(&p.url, &p.title, &p.text)))
                        .collect();
                    let mut at = turn.0.lock().unwrap_or_else(|e| e.into_inner());
                    while *at != start {
                        at = turn.1.wait(at).unwrap_or_else(|e| e.into_inner());
                    }
                    match dedup.check_batch(&sigs, UrlTier::Check) {
                        Ok(v) => {
                            let mut all = verdicts.lock().unwrap_or_else(|e| e.into_inner());
                            for (i, v) in v.into_iter().enumerate() {
                                all[start + i] = Some(v);
                            }
                        }
                        Err(e) => {
                            failed.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
                        }
                    }
                    *at += batch.len();
                    turn.1.notify_all();
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    let verdicts: Vec<Verdict> = verdicts
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(verdicts.len(), pages.len(), "every page checked");
    let checked_in = started.elapsed();

    // Judge: one page kept per group, each dropped page's partner in its
    // group.
    let group_of_url: HashMap<&str, usize> = pages.iter().map(|p| (p.url.as_str(), p.group)).collect();
    let mut kept_per_group: HashMap<usize, usize> = HashMap::new();
    let mut failures = Vec::new();
    let mut found: HashMap<&str, usize> = HashMap::new();
    for (p, v) in pages.iter().zip(&verdicts) {
        if v.is_unique() {
            *kept_per_group.entry(p.group).or_default() += 1;
            if p.planted != "original" {
                failures.push(format!("planted {} {} kept: {v:?}", p.planted, p.url));
            }
            continue;
        }
        if p.planted == "original" {
            failures.push(format!("unique page {} dropped: {v:?}", p.url));
        }
        *found.entry(p.planted).or_default() += 1;
        let partner = v.partner().unwrap_or_default();
        if group_of_url.get(partner) != Some(&p.group) {
            failures.push(format!(
                "{} ({}) dropped as a copy of {partner}, not of its group",
                p.url, p.planted
            ));
        }
    }
    let groups = originals;
    for g in 0..groups {
        match kept_per_group.get(&g).copied().unwrap_or(0) {
            1 => {}
            n => failures.push(format!("group {g}: {n} pages kept, expected 1")),
        }
    }
    let kept: usize = kept_per_group.values().sum();
    let planted = pages.len() - originals;

    // Durable, closed, reopened: the index is still there.
    dedup.flush()?;
    drop(dedup);
    let dedup = Deduper::open(dir.path())?;
    let documents = dedup.stats()?.documents;
    if documents != kept as u64 {
        failures.push(format!(
            "reopened store holds {documents} documents, {kept} were kept"
        ));
    }

    // A page's links: drop those the URL tier has seen (url_seen only
    // asks), queue the rest.
    let links = [
        pages[0].url.clone(),
        pages[1].url.replace("http://", "HTTP://") + "#top",
        "http://new.example/a".to_string(),
        "http://new.example/b?utm_source=feed".to_string(),
        "/relative/link.html".to_string(),
    ];
    let queue: Vec<&String> = links
        .iter()
        .filter(|l| matches!(dedup.url_seen(l), Ok(false)))
        .collect();
    if queue != [&links[2], &links[3]] || dedup.url_seen(&links[2])? {
        failures.push(format!("link filter queued {queue:?}"));
    }
    // Fetch-then-check: the fetched page is not a copy of itself.
    dedup.check_url(&links[2])?;
    let v = dedup.check(&Document::new(&links[2], "", &text(&mut Rng(7)).join(" ")))?;
    if v.is_duplicate() {
        failures.push(format!("fetched page judged a copy: {v:?}"));
    }

    // Verdicts as JSON lines: the first copy of each kind, then a summary.
    let mut shown = std::collections::HashSet::new();
    for (p, v) in pages.iter().zip(&verdicts) {
        if v.is_duplicate() && shown.insert(p.planted) {
            println!(
                "{}",
                serde_json::json!({"url": p.url, "planted": p.planted, "verdict": v})
            );
        }
    }
    let summary = serde_json::json!({
        "documents": pages.len(),
        "planted_copies": planted,
        "found": found,
        "kept": kept,
        "stored_after_reopen": documents,
        "threads": THREADS,
        "batch": BATCH,
        "seconds": checked_in.as_secs_f64(),
        "failures": failures.len(),
    });
    println!("{summary}");
    if !failures.is_empty() {
        for f in failures.iter().take(20) {
            eprintln!("FAIL {f}");
        }
        std::process::exit(1);
    }
    Ok(())
}
