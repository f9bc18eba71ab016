//! Runs the cleaner over the article-extraction benchmark and writes
//! `output/simcrawl.json` for its `evaluate.py`, printing our own score and the
//! throughput (MB of HTML per second, one thread, whole `Cleaner::parse`).
//!
//! Usage: `extract_bench BENCH_DIR [PASSES]` (BENCH_DIR: a writable copy of
//! `article-extraction-benchmark`). `scripts/extract-bench.sh` wraps it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/aeb.rs"]
mod aeb;

use std::path::PathBuf;
use std::time::Instant;

use simcrawl_clean::Cleaner;
use url::Url;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: extract_bench BENCH_DIR [PASSES]")?);
    let passes: usize = args.next().map(|p| p.parse()).transpose()?.unwrap_or(3);
    let pages = aeb::load(&dir)?;
    let cleaner = Cleaner::new(aeb::bench_config())?;
    let urls: Vec<Url> = pages
        .iter()
        .map(|p| Url::parse(&p.url).unwrap_or_else(|_| Url::parse("http://example.com/").unwrap()))
        .collect();

    let mut out = serde_json::Map::new();
    let mut per_page = Vec::new();
    for (p, u) in pages.iter().zip(&urls) {
        let page = cleaner.parse(&p.html, Some("text/html; charset=utf-8"), u)?;
        per_page.push(aeb::tp_fp_fn(&p.truth, &page.text));
        if std::env::var_os("AEB_SHOW").is_some_and(|v| v == p.id.as_str()) {
            println!("{}", page.text);
        }
        out.insert(p.id.clone(), serde_json::json!({ "articleBody": page.text }));
    }
    let out_dir = dir.join("output");
    std::fs::create_dir_all(&out_dir)?;
    std::fs::write(out_dir.join("simcrawl.json"), serde_json::to_string(&out)?)?;

    if std::env::var_os("AEB_PAGES").is_some() {
        let mut rows: Vec<(f64, &str)> = per_page
            .iter()
            .zip(&pages)
            .map(|(&(tp, fp, fnn), p)| (tp / (tp + (fp + fnn) / 2.0).max(1e-9), p.id.as_str()))
            .collect();
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (f, id) in rows.iter().take(40) {
            let i = pages.iter().position(|p| p.id == *id).unwrap();
            let (tp, fp, fnn) = per_page[i];
            println!(
                "{f:.3} p={:.3} r={:.3} {id} {}",
                tp / (tp + fp).max(1e-9),
                tp / (tp + fnn).max(1e-9),
                pages[i].url
            );
        }
    }

    let bytes: usize = pages.iter().map(|p| p.html.len()).sum();
    let mut best = f64::INFINITY;
    for _ in 0..passes {
        let t = Instant::now();
        for (p, u) in pages.iter().zip(&urls) {
            std::hint::black_box(cleaner.parse(&p.html, Some("text/html; charset=utf-8"), u)?);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    let (f1, prec, rec) = aeb::score(&per_page);
    println!(
        "pages {}  F1 {f1:.3}  precision {prec:.3}  recall {rec:.3}  speed {:.1} MB/s ({:.1} MiB/s; {:.1} MB in {:.3} s, best of {passes})",
        pages.len(),
        bytes as f64 / best / 1e6,
        bytes as f64 / best / (1024.0 * 1024.0),
        bytes as f64 / 1e6,
        best
    );
    Ok(())
}
