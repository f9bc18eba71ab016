//! `crawl bench`: crawls a generated local site and reports pages/s, peak
//! RSS and CPU per page. The site is served by a child process
//! (`crawl __serve-site`), so the crawler's RSS and CPU are its own.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader as TokioBufReader};

use crate::config::Config;

/// Options of `crawl bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Pages in the generated site.
    #[arg(long, default_value_t = 20_000)]
    pages: usize,
    /// A short run (seconds on 2 cores): 5,000 pages, 5,000 batch
    /// documents and an index of 50,000 (overrides `--pages`, `--batch`
    /// and `--index`).
    #[arg(long)]
    quick: bool,
    /// Then deduplicate this many generated documents with `crawl dedup`'s
    /// own code (in memory, both cores) and report docs/s and CPU per
    /// document; 0 skips it.
    #[arg(long, default_value_t = 20_000)]
    batch: usize,
    /// Then measure the dedup index alone: this many generated documents
    /// stored in the memory store, then a tenth more (at most 20,000)
    /// checked, once with the configured LSH bands and once without, and
    /// report both check rates; 0 skips it.
    #[arg(long, default_value_t = 200_000)]
    index: usize,
    /// Pages fetched at once.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Directory for the crawl's state and outputs (default: a temporary one).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Archive the crawl as WARC too (in DIR/warc), to measure what it costs.
    #[arg(long)]
    warc: bool,
    /// Run the local crawl as it runs when its writer thread is what it
    /// waits for (16 cores and more): page tasks take over the writer's
    /// look-ups from the first page. On 2 cores this measures the writer's
    /// CPU a page as many cores would see it (issue 37's Amdahl bound).
    #[arg(long, conflicts_with = "redis")]
    writer_saturated: bool,
    /// Crawl in the shared mode instead: `--workers` processes sharing one
    /// crawl through this Redis server (its `bench` namespace is cleared
    /// first).
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// Worker processes with `--redis`; each has `--concurrency` page tasks,
    /// and the site's per-host limit is `concurrency x workers`, so the
    /// shared frontier, not politeness, is what is measured.
    #[arg(long, default_value_t = 1, requires = "redis")]
    workers: usize,
    /// With `--redis`: where the workers keep the dedup tiers (`[redis]
    /// tiers`): `redis` or `replicated`.
    #[arg(long, default_value = "redis", requires = "redis", value_parser = ["redis", "replicated"])]
    tiers: String,
}

/// The settings the bench starts from: the built-in defaults, the file of
/// `--config` and `--set` overrides (a bench of one's own configuration).
/// The bench then sets what it must to crawl its own site flat out (the
/// state and output directories, concurrency, no politeness delay, the
/// depth).
#[derive(Debug, Clone)]
pub struct Settings {
    pub config: Config,
    /// `--config`, passed on to the shared mode's worker processes.
    pub file: Option<PathBuf>,
    /// `--set`, passed on likewise.
    pub sets: Vec<crate::config::Setting>,
}

/// The words of generated pages: jieba's dictionary, so pages differ the
/// way real articles do (a tiny vocabulary would make every page look alike
/// to TF-IDF SimHash).
fn vocabulary() -> &'static [&'static str] {
    static VOCAB: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    VOCAB.get_or_init(|| {
        let mut v: Vec<&'static str> = simcrawl_dedup::features::jieba_idf()
            .words()
            .filter(|w| w.chars().count() >= 2)
            .collect();
        v.sort_unstable();
        v
    })
}

/// `n` of [`vocabulary`]'s words drawn by [`rng`] from `seed`, joined by
/// commas: the text of a generated document (equal seeds, equal texts).
fn generated_text(seed: u64, n: usize) -> String {
    let words = vocabulary();
    let mut next = rng(seed);
    let text: Vec<&str> = (0..n)
        .map(|_| words[(next() % words.len() as u64) as usize])
        .collect();
    text.join("，")
}

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// Page `i` of an `n`-page site. Every tenth page repeats the previous
/// page's article under another title (a content duplicate).
pub fn page(i: usize, n: usize) -> String {
    let article = if i % 10 == 9 { i - 1 } else { i };
    let mut next = rng(article as u64 + 1);
    let mut text = String::new();
    for s in 0..12 {
        for _ in 0..14 {
            let words = vocabulary();
            text.push_str(words[(next() % words.len() as u64) as usize]);
        }
        text.push_str(if s % 3 == 2 { "。\n" } else { "，" });
    }
    let mut links = String::new();
    let mut lr = rng(i as u64 + 7_777);
    let targets = [
        2 * i + 1,
        2 * i + 2,
        (lr() % n as u64) as usize,
        (lr() % n as u64) as usize,
        (i + 1) % n,
    ];
    for t in targets {
        if t < n {
            links.push_str(&format!(
                "<li><a href=\"/p/{t}?utm_source=bench#top\">第{t}篇</a></li>"
            ));
        }
    }
    format!(
        "<!doctype html><html lang=\"zh\"><head><meta charset=\"utf-8\"><title>第{i}篇 新闻</title></head>\
         <body><nav><ul><li><a href=\"/p/0\">首页</a></li>{links}</ul></nav>\
         <article><h1>第{i}篇</h1><p>{text}</p></article><footer>版权所有</footer></body></html>"
    )
}

/// `crawl __serve-site`: serves the generated site on 127.0.0.1 and prints
/// its port on the first line of stdout.
pub fn serve_site(pages: usize) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("{}", listener.local_addr()?.port());
        loop {
            let (sock, _) = listener.accept().await?;
            let _ = sock.set_nodelay(true);
            tokio::spawn(async move {
                let (r, mut w) = sock.into_split();
                let mut r = TokioBufReader::new(r);
                loop {
                    let mut request_line = String::new();
                    if r.read_line(&mut request_line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if h == "\r\n" || h == "\n" {
                            break;
                        }
                    }
                    let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let n = path
                        .strip_prefix("/p/")
                        .and_then(|p| p.split(['?', '#']).next())
                        .and_then(|p| p.parse::<usize>().ok())
                        .filter(|&i| i < pages);
                    let (status, body) = match n {
                        Some(i) => ("200 OK", page(i, pages)),
                        None => ("404 Not Found", "not found".to_string()),
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if w.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    })
}

/// A `Vm*` line of /proc/self/status, in kB (`VmHWM` peak, `VmRSS` now).
fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn cpu_seconds() -> f64 {
    // User + system time of this process from /proc (getrusage would need
    // `unsafe`, which the workspace forbids); clock ticks are 1/100 s.
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let utime: f64 = f.get(11)?.parse().ok()?;
            let stime: f64 = f.get(12)?.parse().ok()?;
            Some((utime + stime) / 100.0)
        })
        .unwrap_or(0.0)
}

/// Runs the benchmark and prints its report.
pub fn bench(mut args: BenchArgs, settings: &Settings) -> Result<()> {
    if args.quick {
        args.pages = 5_000;
        args.batch = 5_000;
        args.index = 50_000;
    }
    let (mut server, port) = start_site(args.pages)?;
    let tmp = tempfile::tempdir()?;
    let dir = args.dir.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    let seeds = dir.join("seeds.txt");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(&seeds, format!("http://127.0.0.1:{port}/p/0\n"))?;
    if let Some(url) = &args.redis {
        let result = bench_shared(&args, settings, url, &dir, &seeds);
        let _ = server.kill();
        let _ = server.wait();
        return result;
    }
    let cfg = local_config(&args, settings, &dir);
    if args.writer_saturated {
        crate::daemon::load::force_saturated();
    }
    let cpu0 = cpu_seconds();
    let busy0 = crate::daemon::commit::WRITER_BUSY_NS.load(std::sync::atomic::Ordering::Relaxed);
    let t0 = Instant::now();
    // RSS over the run: it must stay flat while the frontier grows.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                samples.push(status_kb("VmRSS:"));
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
            samples
        })
    };
    let result = crate::run_crawl(
        cfg,
        Some(&seeds),
        crate::daemon::Start::Fresh,
        crate::daemon::Visits::Crawl,
    );
    let wall = t0.elapsed().as_secs_f64();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let samples = sampler.join().unwrap_or_default();
    let cpu = cpu_seconds() - cpu0;
    let _ = server.kill();
    let _ = server.wait();
    let stats = result?.stats;
    let busy = crate::daemon::commit::WRITER_BUSY_NS
        .load(std::sync::atomic::Ordering::Relaxed)
        .saturating_sub(busy0);
    print_crawl(&args, &stats, (wall, cpu), &dir);
    // The serial stage's share of the wall time (issue 37): near 100%, the
    // writer is what more cores wait for.
    println!(
        "writer busy       {:.1}% of wall{}",
        busy as f64 / 1e7 / wall.max(1e-9),
        if args.writer_saturated {
            " (counted as saturated from the start: --writer-saturated)"
        } else {
            ""
        }
    );
    if !samples.is_empty() {
        let at = |q: usize| samples[(samples.len() - 1) * q / 4] as f64 / 1024.0;
        println!(
            "RSS at 0/25/50/75/100% of the run   {:.0} / {:.0} / {:.0} / {:.0} / {:.0} MB",
            at(0),
            at(1),
            at(2),
            at(3),
            at(4)
        );
    }
    if args.batch > 0 {
        bench_batch(args.batch, &dir, &settings.config)?;
    }
    if args.index > 0 {
        bench_index(args.index, &settings.config)?;
    }
    Ok(())
}

/// Starts the generated site of `pages` pages (`crawl __serve-site`, a
/// child process); returns it and the port it listens on.
fn start_site(pages: usize) -> Result<(std::process::Child, u16)> {
    let exe = std::env::current_exe().context("cannot find the crawl binary")?;
    let mut server = Command::new(exe)
        .args(["__serve-site", "--pages", &pages.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start the bench site")?;
    let mut line = String::new();
    if let Some(out) = server.stdout.take() {
        BufReader::new(out).read_line(&mut line)?;
    }
    match line.trim().parse() {
        Ok(p) => Ok((server, p)),
        Err(_) => {
            let _ = server.kill();
            bail!("bench site did not report its port (got {line:?})");
        }
    }
}

/// The local crawl's settings: the user's, writing under `dir`, unthrottled
/// on the bench site.
fn local_config(args: &BenchArgs, settings: &Settings, dir: &std::path::Path) -> Config {
    let mut cfg = settings.config.clone();
    cfg.store.data_dir = dir.join("data");
    cfg.crawl.out_dir = dir.join("out");
    cfg.crawl.concurrency = args.concurrency;
    cfg.crawl.max_depth = 1_000;
    cfg.fetch.per_host_delay_ms = 0;
    cfg.fetch.per_host_concurrency = args.concurrency;
    cfg.fetch.concurrency = args.concurrency;
    // Nothing of the user's is written to: no archive unless `--warc`
    // (then in DIR), and the local mode unless `--redis`.
    cfg.output.warc_dir = if args.warc {
        dir.join("warc")
    } else {
        PathBuf::new()
    };
    cfg.redis.url.clear();
    cfg
}

/// The local crawl's report: its counters, rate, CPU (`wall` and `cpu`
/// seconds), peak memory and archive size.
fn print_crawl(
    args: &BenchArgs,
    stats: &crate::stats::Stats,
    (wall, cpu): (f64, f64),
    dir: &std::path::Path,
) {
    println!("site pages        {}", args.pages);
    println!("fetched           {}", stats.fetched);
    println!(
        "kept / dup title / dup content   {} / {} / {}",
        stats.verdicts.kept, stats.verdicts.dup_title, stats.verdicts.dup_content
    );
    println!("url-tier hits     {}", stats.verdicts.dup_url);
    println!("wall              {wall:.2} s");
    println!("pages/s           {:.0}", stats.fetched as f64 / wall.max(1e-9));
    println!(
        "cpu per page      {:.3} ms",
        cpu * 1000.0 / (stats.fetched.max(1) as f64)
    );
    println!("peak RSS          {:.1} MB", status_kb("VmHWM:") as f64 / 1024.0);
    if args.warc {
        let bytes: u64 = std::fs::read_dir(dir.join("warc"))
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0);
        println!(
            "WARC              {:.1} MB ({:.1} KB per page)",
            bytes as f64 / 1e6,
            bytes as f64 / 1e3 / (stats.fetched.max(1) as f64)
        );
    }
}

/// The dedup index alone, without the text work: `n` generated documents
/// (80 of jieba's words each, signed beforehand on both cores) stored in
/// the memory store, then a tenth more checked in batches of 1,000, every
/// tenth of those a copy of a stored one under another URL and title. Run
/// with the configured LSH bands and without any, so what the bands cost
/// is a ratio measured in one run (issue 28, target 3).
fn bench_index(n: usize, base: &Config) -> Result<()> {
    use rayon::prelude::*;
    use simcrawl_dedup::{DedupConfig, Deduper, Document, MemoryStore, UrlTier};

    let checks = (n / 10).clamp(1_000, 20_000);
    let configured = &base.dedup;
    let signer = Deduper::new(MemoryStore::new(), configured.clone())?;
    let sigs: Vec<_> = (0..n + checks)
        .into_par_iter()
        .map(|i| {
            let planted = i >= n && (i - n).is_multiple_of(10);
            let source = if planted { (i - n) % n.max(1) } else { i };
            signer.sign(&Document::new(
                &format!("http://index.example/{i}"),
                &format!("第{i}篇"),
                &generated_text(source as u64 + 7, 80),
            ))
        })
        .collect();
    let planted = (0..checks).filter(|c| c.is_multiple_of(10)).count();
    let mut rates = Vec::new();
    let mut found = Vec::new();
    for bands in [configured.bands, 0] {
        let d = Deduper::new(
            MemoryStore::new(),
            DedupConfig {
                bands,
                ..configured.clone()
            },
        )?;
        for chunk in sigs[..n].chunks(1_000) {
            d.check_batch(chunk, UrlTier::Skip)?;
        }
        let t0 = Instant::now();
        let mut copies = 0;
        for chunk in sigs[n..].chunks(1_000) {
            copies += d
                .check_batch(chunk, UrlTier::Skip)?
                .iter()
                .filter(|v| v.is_duplicate())
                .count();
        }
        rates.push(checks as f64 / t0.elapsed().as_secs_f64().max(1e-9));
        found.push(copies);
    }
    println!("index stored      {n} (memory store), {checks} checked");
    println!(
        "index checks/s    {:.0} with {}x{} bands, {:.0} without (ratio {:.2})",
        rates[0],
        configured.bands,
        configured.band_rows,
        rates[1],
        rates[0] / rates[1].max(1e-9)
    );
    println!(
        "index copies      {} / {planted} found ({} without bands)",
        found[0], found[1]
    );
    Ok(())
}

/// A generated corpus of `n` documents (400 of jieba's words each, every
/// fifth repeating the one before: docs/BENCHMARKS.md's batch corpus)
/// deduplicated in memory by `crawl dedup`'s own code; prints docs/s and
/// CPU per document.
fn bench_batch(n: usize, dir: &std::path::Path, base: &Config) -> Result<()> {
    let corpus = dir.join("corpus.jsonl");
    {
        use std::io::Write as _;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&corpus)?);
        for i in 0..n {
            let line = serde_json::json!({
                "url": format!("http://c.example/{i}"),
                "title": format!("第{i}篇"),
                "text": generated_text((i - usize::from(i % 5 == 4)) as u64 + 99, 400),
            });
            writeln!(f, "{line}")?;
        }
        std::io::Write::flush(&mut f)?;
    }
    let args = crate::batch::BatchArgs {
        inputs: vec![corpus],
        out: dir.join("batch-out"),
        data_dir: None,
    };
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    crate::batch::run(base, &args)?;
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let read = |f: &str| {
        std::fs::read_to_string(args.out.join(f))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    println!(
        "batch documents   {n} ({} kept, {} duplicates)",
        read("kept.jsonl"),
        read("duplicates.jsonl")
    );
    println!("batch docs/s      {:.0}", n as f64 / wall.max(1e-9));
    println!("batch cpu per doc {:.3} ms", cpu * 1000.0 / (n.max(1) as f64));
    Ok(())
}

/// CPU seconds of this process's children that were waited for.
fn children_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let cutime: f64 = f.get(13)?.parse().ok()?;
            let cstime: f64 = f.get(14)?.parse().ok()?;
            Some((cutime + cstime) / 100.0)
        })
        .unwrap_or(0.0)
}

/// The peak RSS (kB) of process `pid` so far, 0 once it is gone.
fn peak_kb_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// The Redis namespace of `crawl bench --redis`.
const SHARED_NAMESPACE: &str = "bench";

/// `crawl bench --redis URL --workers N`: N `crawl --redis` processes
/// share the crawl of the generated site; reports the merged counters.
fn bench_shared(
    args: &BenchArgs,
    settings: &Settings,
    url: &str,
    dir: &std::path::Path,
    seeds: &std::path::Path,
) -> Result<()> {
    let store = empty_shared_store(url, &args.tiers)?;
    let exe = std::env::current_exe().context("cannot find the crawl binary")?;
    let cpu0 = children_cpu_seconds();
    let t0 = Instant::now();
    let mut children = Vec::new();
    for w in 0..args.workers.max(1) {
        children.push(spawn_worker(&exe, args, settings, (url, w), seeds, dir)?);
    }
    let (peak_kb, failed) = wait_for_workers(&mut children)?;
    let wall = t0.elapsed().as_secs_f64();
    let cpu = children_cpu_seconds() - cpu0;
    if !failed.is_empty() {
        bail!(
            "bench workers {failed:?} failed; their logs are w*.log in {}",
            dir.display()
        );
    }
    let f = crate::backend::redis::frontier::RedisFrontier::open(url, SHARED_NAMESPACE)?;
    let counters = f.counters()?;
    let get = |k: &str| counters.get(k).copied().unwrap_or(0);
    let fetched = get("fetched");
    println!("site pages        {}", args.pages);
    println!(
        "workers           {} (redis {})",
        args.workers,
        crate::backend::redis::frontier::redact(url)
    );
    println!("fetched           {fetched}");
    println!(
        "kept / dup title / dup content   {} / {} / {}",
        get("kept"),
        get("dup_title"),
        get("dup_content")
    );
    println!("url-tier hits     {}", get("dup_url"));
    println!("wall              {wall:.2} s");
    println!("pages/s           {:.0}", fetched as f64 / wall.max(1e-9));
    println!(
        "cpu per page      {:.3} ms (all workers)",
        cpu * 1000.0 / (fetched.max(1) as f64)
    );
    let peaks: Vec<String> = peak_kb
        .iter()
        .map(|k| format!("{:.1}", *k as f64 / 1024.0))
        .collect();
    println!("peak RSS          {} MB (per worker)", peaks.join(" / "));
    if let Ok(m) = store.used_memory() {
        println!("redis memory      {:.1} MB", m as f64 / 1e6);
    }
    Ok(())
}

/// The bench namespace in Redis at `url`, emptied, with tiers of the
/// `tiers` kind (`--tiers`).
fn empty_shared_store(url: &str, tiers: &str) -> Result<crate::backend::redis::SharedStore> {
    let kind = if tiers == "replicated" {
        crate::config::SharedTiersKind::Replicated
    } else {
        crate::config::SharedTiersKind::Redis
    };
    // Emptied whatever kind of store used it last.
    crate::backend::redis::frontier::clear_namespace(url, SHARED_NAMESPACE).with_context(|| {
        format!(
            "Redis at {} is unreachable",
            crate::backend::redis::frontier::redact(url)
        )
    })?;
    let store = crate::backend::redis::SharedStore::open(url, SHARED_NAMESPACE, kind).with_context(|| {
        format!(
            "Redis at {} is unreachable",
            crate::backend::redis::frontier::redact(url)
        )
    })?;
    store.clear().context("cannot clear the bench namespace")?;
    Ok(store)
}

/// Starts bench worker `w`: `crawl --redis URL` on the bench namespace,
/// its log in `dir/wN.log`.
fn spawn_worker(
    exe: &std::path::Path,
    args: &BenchArgs,
    settings: &Settings,
    (url, w): (&str, usize),
    seeds: &std::path::Path,
    dir: &std::path::Path,
) -> Result<std::process::Child> {
    let c = args.concurrency.to_string();
    let cap = (args.concurrency * args.workers.max(1)).to_string();
    let log = std::fs::File::create(dir.join(format!("w{w}.log")))?;
    let mut cmd = Command::new(exe);
    // The user's settings first: the bench's own `--set`s come later
    // and win, as flags do.
    if let Some(file) = &settings.file {
        cmd.arg("--config").arg(file);
    }
    for s in &settings.sets {
        cmd.arg("--set").arg(format!("{}={}", s.key, s.value));
    }
    cmd.arg("--seeds")
        .arg(seeds)
        .arg("--out")
        .arg(dir.join("out"))
        .args(["--redis", url, "--worker-id", &format!("w{w}")])
        .args(["--set", &format!("redis.namespace={SHARED_NAMESPACE}")])
        .args(["--set", &format!("redis.tiers={}", args.tiers)])
        .args(["--set", "fetch.per_host_delay_ms=0"])
        .args(["--set", &format!("fetch.per_host_concurrency={cap}")])
        .args(["--set", &format!("fetch.concurrency={c}")])
        .args(["--set", &format!("crawl.concurrency={c}")])
        .args(["--set", "crawl.max_depth=1000"])
        // No archive of the user's is written to.
        .args(["--set", "output.warc_dir="])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .context("cannot start a bench worker")
}

/// Waits for the bench workers to exit; returns each one's peak RSS (kB)
/// and which of them failed.
fn wait_for_workers(children: &mut [std::process::Child]) -> Result<(Vec<u64>, Vec<usize>)> {
    let mut peak_kb = vec![0u64; children.len()];
    let mut failed = Vec::new();
    loop {
        let mut running = 0;
        for (i, ch) in children.iter_mut().enumerate() {
            match ch.try_wait()? {
                None => {
                    running += 1;
                    peak_kb[i] = peak_kb[i].max(peak_kb_of(ch.id()));
                }
                Some(st) if !st.success() && !failed.contains(&i) => failed.push(i),
                Some(_) => {}
            }
        }
        if running == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok((peak_kb, failed))
}
