//! Crawls one site with spider-rs and prints what it fetched and what it
//! cost: `{"pages": N, "wall_s": W, "cpu_s": C}` on stdout, CPU from
//! /proc/self/stat (this process only; the server is another one).
//!
//! Settings are those `scripts/spider-compare.sh` gives `crawl`: robots.txt
//! off (the site has none), no delay, the same concurrency.

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::Instant;

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which ends with the last ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after ')'.
    (ticks(11) + ticks(12)) / 100.0
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let Some(url) = args.next() else {
        eprintln!("usage: spider-compare URL [CONCURRENCY]");
        std::process::exit(2);
    };
    let concurrency: usize = args.next().and_then(|c| c.parse().ok()).unwrap_or(32);
    let started = Instant::now();
    let mut website = spider::website::Website::new(&url);
    website
        .with_respect_robots_txt(false)
        .with_concurrency_limit(Some(concurrency))
        .with_delay(0);
    website.crawl().await;
    let links = website.get_links();
    let pages = links.len();
    // SPIDER_LINKS=FILE writes the URLs it visited, one per line, to see
    // what it missed or fetched twice.
    if let Ok(path) = std::env::var("SPIDER_LINKS") {
        let mut list: Vec<String> = links.iter().map(|l| l.as_ref().to_string()).collect();
        list.sort();
        if let Err(e) = std::fs::write(&path, list.join("\n") + "\n") {
            eprintln!("cannot write {path}: {e}");
        }
    }
    println!(
        "{{\"pages\": {pages}, \"wall_s\": {:.3}, \"cpu_s\": {:.3}}}",
        started.elapsed().as_secs_f64(),
        cpu_seconds()
    );
}
