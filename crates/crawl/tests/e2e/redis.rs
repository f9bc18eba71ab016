//! End-to-end tests of the shared mode (`crawl --redis`): several real
//! `crawl` processes crawl one local site (with groups of near-duplicate
//! pages) against one real Redis server.
//!
//! They read `SIMCRAWL_REDIS_URL` (`scripts/test.sh` starts a throwaway
//! server and exports it) and print SKIPPED and pass without it; the
//! restart test starts a server of its own with `SIMCRAWL_REDIS_SERVER`.
//! Each test uses a namespace of its own, so they share the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::server::{Reply, Request, Server};
use crate::support::{field, gibberish, page, path_of, read_jsonl, wait_for};
use serde_json::Value;

/// Pages of the site: `/p/0` .. `/p/{PAGES-1}`.
const PAGES: usize = 48;

/// Each group of six pages ends with three near-duplicates of one article
/// (`6k+3`, `6k+4`, `6k+5`: the same text, each with a short tail of its
/// own, under its own title); the other pages are unique.
fn group_of(i: usize) -> Option<usize> {
    (i % 6 >= 3).then_some(i / 6)
}

fn site_page(i: usize) -> String {
    let text = match group_of(i) {
        Some(g) => format!(
            "{} {}",
            gibberish(10_000 + g as u64, 160),
            gibberish(20_000 + i as u64, 4)
        ),
        None => gibberish(i as u64, 160),
    };
    let links: Vec<String> = [2 * i + 1, 2 * i + 2, (i + 7) % PAGES, 0]
        .into_iter()
        .filter(|&t| t < PAGES)
        .map(|t| format!("/p/{t}"))
        .collect();
    page(&format!("Page number {i}"), &text, &links)
}

/// The fixture site; every answer takes `delay`, so a crawl lasts long
/// enough for several workers to share it.
fn site(delay: Duration) -> Server {
    Server::start(move |req: &Request| {
        std::thread::sleep(delay);
        match crate::support::generated_page(&req.path, PAGES) {
            Some(n) => Reply::html(site_page(n)),
            None => Reply::status(404),
        }
    })
}

pub(crate) fn redis_url(test: &str) -> Option<String> {
    match std::env::var("SIMCRAWL_REDIS_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            eprintln!("SKIPPED {test}: SIMCRAWL_REDIS_URL is not set (scripts/test.sh sets it)");
            None
        }
    }
}

/// A namespace of this test's own on the shared server.
pub(crate) fn namespace(test: &str) -> String {
    format!("e2e-{test}-{}", std::process::id())
}

/// The files of one shared crawl: config (with `[redis]`), seeds, the
/// outputs' root and a log per worker.
pub(crate) struct Shared {
    root: PathBuf,
    pub(crate) config: PathBuf,
    pub(crate) seeds: PathBuf,
    url: String,
}

impl Shared {
    pub(crate) fn new(root: &Path, seed: &str, url: &str, ns: &str, lease_ms: u64) -> Shared {
        Self::with_tiers(root, seed, url, ns, lease_ms, "redis")
    }

    /// With `[redis] tiers = TIERS`.
    fn with_tiers(root: &Path, seed: &str, url: &str, ns: &str, lease_ms: u64, tiers: &str) -> Shared {
        let extra = format!("\n[redis]\nnamespace = \"{ns}\"\nlease_ms = {lease_ms}\ntiers = \"{tiers}\"\n");
        let config = crate::support::write_config(root, 2, &extra);
        let seeds = root.join("seeds.txt");
        std::fs::write(&seeds, format!("{seed}\n")).unwrap();
        Shared {
            root: root.to_path_buf(),
            config,
            seeds,
            url: url.to_string(),
        }
    }

    pub(crate) fn out(&self) -> PathBuf {
        self.root.join("out")
    }

    fn log(&self, worker: &str) -> PathBuf {
        self.root.join(format!("{worker}.log"))
    }

    /// `crawl` as one worker of this crawl, its stderr in the log named
    /// `log`; `worker_id` `None`: the default id (`HOSTNAME-PID`).
    fn command(&self, log: &str, worker_id: Option<&str>) -> Command {
        let err = std::fs::File::create(self.log(log)).unwrap();
        let mut cmd = Command::new(crate::support::CRAWL);
        cmd.arg("--config")
            .arg(&self.config)
            .arg("--seeds")
            .arg(&self.seeds)
            .arg("--out")
            .arg(self.out())
            .args(["--redis", &self.url])
            .env("CRAWL_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(err));
        if let Some(id) = worker_id {
            cmd.args(["--worker-id", id]);
        }
        cmd
    }

    pub(crate) fn spawn(&self, worker: &str) -> Child {
        self.command(worker, Some(worker)).spawn().unwrap()
    }

    pub(crate) fn logs(&self, workers: &[&str]) -> String {
        workers
            .iter()
            .map(|w| {
                format!(
                    "--- {w}\n{}",
                    std::fs::read_to_string(self.log(w)).unwrap_or_default()
                )
            })
            .collect()
    }

    /// Waits (polling every 20 ms) until `done` holds, failing with `what`
    /// and the logs of `workers` after `limit`.
    pub(crate) fn wait_until(&self, workers: &[&str], limit: Duration, what: &str, done: impl Fn() -> bool) {
        let t0 = Instant::now();
        while !done() {
            assert!(t0.elapsed() < limit, "{what}:\n{}", self.logs(workers));
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Every output line of every worker: (worker, file, line).
    pub(crate) fn lines(&self, workers: &[&str]) -> Vec<(String, &'static str, Value)> {
        let mut out = Vec::new();
        for w in workers {
            for file in ["kept", "duplicates", "errors"] {
                for v in read_jsonl(&self.out().join(w).join(format!("{file}.jsonl"))) {
                    out.push((w.to_string(), file, v));
                }
            }
        }
        out
    }

    /// Complete lines in a running worker's three outputs.
    fn lines_now(&self, worker: &str) -> usize {
        ["kept", "duplicates", "errors"]
            .iter()
            .map(|f| {
                std::fs::read(self.out().join(worker).join(format!("{f}.jsonl")))
                    .map(|b| b.iter().filter(|&&c| c == b'\n').count())
                    .unwrap_or(0)
            })
            .sum()
    }

    /// Waits for each of `children` to exit successfully (40 s each).
    pub(crate) fn wait_ok(&self, children: &mut [Child], workers: &[&str]) {
        for c in children {
            let st = wait_for(c, Duration::from_secs(40))
                .unwrap_or_else(|| panic!("a worker did not finish:\n{}", self.logs(workers)));
            assert!(st.success(), "{st}:\n{}", self.logs(workers));
        }
    }

    /// The kept pages, after checking that every page of the site has
    /// exactly one line in exactly one worker's outputs.
    fn every_page_once(&self, workers: &[&str]) -> Vec<usize> {
        let (kept, per_page) = tally(&self.lines(workers));
        let missing: Vec<usize> = (0..PAGES).filter(|i| !per_page.contains_key(i)).collect();
        assert!(
            missing.is_empty(),
            "pages lost: {missing:?}\n{}",
            self.logs(workers)
        );
        assert!(
            per_page.values().all(|&n| n == 1),
            "a page with more than one line: {per_page:?}\n{}",
            self.logs(workers)
        );
        kept
    }

    /// `crawl stats --redis URL --namespace NS`, parsed.
    fn merged_stats(&self, ns: &str) -> Value {
        let out = Command::new(crate::support::CRAWL)
            .args(["stats", "--redis", &self.url, "--namespace", ns])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "crawl stats failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// The page number of a fixture URL.
fn page_no(url: &str) -> usize {
    path_of(url)
        .strip_prefix("/p/")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a page URL: {url}"))
}

/// Kept page numbers and per-page line counts of a crawl's lines.
fn tally(lines: &[(String, &'static str, Value)]) -> (Vec<usize>, BTreeMap<usize, usize>) {
    let mut kept = Vec::new();
    let mut per_page = BTreeMap::new();
    for (_, file, v) in lines {
        let n = page_no(field(v, "url"));
        *per_page.entry(n).or_insert(0) += 1;
        if *file == "kept" {
            kept.push(n);
        }
    }
    kept.sort_unstable();
    (kept, per_page)
}

/// What any correct crawl of the site keeps: every unique page, and one
/// page (any) of each near-duplicate group.
fn assert_kept_like_one_process(kept: &BTreeSet<usize>, what: &str) {
    for i in 0..PAGES {
        if group_of(i).is_none() {
            assert!(kept.contains(&i), "{what}: unique page {i} not kept: {kept:?}");
        }
    }
    for g in 0..PAGES / 6 {
        let members: Vec<usize> = kept.iter().copied().filter(|&i| group_of(i) == Some(g)).collect();
        assert_eq!(
            members.len(),
            1,
            "{what}: group {g} must have exactly one kept page: {members:?}"
        );
    }
}

#[test]
fn three_workers_keep_what_one_process_keeps_and_fetch_each_url_once() {
    let Some(url) = redis_url("three_workers_keep_what_one_process_keeps") else {
        return;
    };
    three_workers(&url, "redis");
}

/// The same with the tiers replicated in each worker (`tiers =
/// "replicated"`): same pages kept, each fetched once.
#[test]
fn three_workers_with_replicated_tiers_keep_what_one_process_keeps() {
    let Some(url) = redis_url("three_workers_with_replicated_tiers") else {
        return;
    };
    three_workers(&url, "replicated");
}

fn three_workers(url: &str, tiers: &str) {
    let t0 = Instant::now();
    // One process, the single-machine mode: the reference.
    let server = site(Duration::from_millis(20));
    let dir = crate::support::tempdir("e2e-redis-");
    std::fs::create_dir_all(dir.path().join("one")).unwrap();
    let one = crate::support::site_crawl(&dir.path().join("one"), &format!("{}/p/0", server.base()), 2, "");
    one.run_ok(Duration::from_secs(40));
    let one_kept: BTreeSet<usize> = one.kept().iter().map(|v| page_no(field(v, "url"))).collect();
    assert_kept_like_one_process(&one_kept, "one process");

    // Three workers against one Redis, on a fresh server of the site.
    let server = site(Duration::from_millis(20));
    let ns = namespace(&format!("three-{tiers}"));
    let root = dir.path().join("three");
    std::fs::create_dir_all(&root).unwrap();
    let s = Shared::with_tiers(&root, &format!("{}/p/0", server.base()), url, &ns, 10_000, tiers);
    let workers = ["w1", "w2", "w3"];
    let mut children: Vec<Child> = workers.iter().map(|w| s.spawn(w)).collect();
    s.wait_ok(&mut children, &workers);
    // Every page exactly once in exactly one worker's outputs, nothing else.
    let kept = s.every_page_once(&workers);
    let lines = s.lines(&workers);
    assert_eq!(lines.len(), PAGES);
    let kept_set: BTreeSet<usize> = kept.iter().copied().collect();
    assert_eq!(kept.len(), kept_set.len(), "a page kept twice: {kept:?}");
    assert_kept_like_one_process(&kept_set, "three workers");
    assert_eq!(kept_set.len(), one_kept.len());
    // No URL fetched twice, across all workers.
    let counts = server.counts();
    for i in 0..PAGES {
        assert_eq!(counts.get(&format!("/p/{i}")), Some(&1), "/p/{i}: {counts:?}");
    }
    // The work was shared.
    let busy: BTreeSet<&str> = lines.iter().map(|(w, _, _)| w.as_str()).collect();
    assert!(
        busy.len() >= 2,
        "only {busy:?} wrote lines:\n{}",
        s.logs(&workers)
    );
    // Merged counters add up to the lines.
    let st = s.merged_stats(&ns);
    assert_eq!(st["fetched"], PAGES as u64, "{st}");
    assert_eq!(st["kept"], kept.len() as u64, "{st}");
    assert_eq!(
        st["dup_content"].as_u64().unwrap() + st["dup_title"].as_u64().unwrap(),
        (PAGES - kept.len()) as u64,
        "{st}"
    );
    assert_eq!(st["workers"].as_object().unwrap().len(), 3, "{st}");
    // Nothing left behind in the frontier.
    assert_eq!(st["frontier"]["leases_out"], 0, "{st}");
    assert_eq!(st["frontier"]["ready_hosts"], 0, "{st}");
    // Each worker's own stats.json counts its own lines.
    let mut sum = 0;
    for w in workers {
        let text = std::fs::read_to_string(s.out().join(w).join("stats.json")).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        sum += v["fetched"].as_u64().unwrap();
    }
    assert_eq!(sum, PAGES as u64);
    eprintln!(
        "three workers, tiers {tiers}: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn a_killed_worker_loses_nothing_the_others_finish_the_site() {
    let Some(url) = redis_url("a_killed_worker_loses_nothing") else {
        return;
    };
    let server = site(Duration::from_millis(40));
    let dir = crate::support::tempdir("e2e-redis-kill-");
    let ns = namespace("kill");
    let s = Shared::new(dir.path(), &format!("{}/p/0", server.base()), &url, &ns, 3_000);
    let workers = ["k1", "k2", "k3"];
    let mut children: Vec<Child> = workers.iter().map(|w| s.spawn(w)).collect();
    // Midway: the first worker that has written lines is killed.
    let t0 = Instant::now();
    let victim = loop {
        let lines: Vec<usize> = workers.iter().map(|w| s.lines_now(w)).collect();
        if lines.iter().sum::<usize>() >= PAGES / 4
            && let Some(i) = lines.iter().position(|&n| n > 0)
        {
            break i;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no progress:\n{}",
            s.logs(&workers)
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    children[victim].kill().unwrap();
    children[victim].wait().unwrap();
    for (i, c) in children.iter_mut().enumerate() {
        if i == victim {
            continue;
        }
        let st = wait_for(c, Duration::from_secs(40))
            .unwrap_or_else(|| panic!("a worker did not finish:\n{}", s.logs(&workers)));
        assert!(st.success(), "{st}:\n{}", s.logs(&workers));
    }
    // The dead worker, restarted under its id, cuts its outputs back to
    // its last acknowledged batch (the pages after it were taken back and
    // done by the others; a line torn by the kill goes with them), finds
    // the crawl over and exits.
    let mut again = s.spawn(workers[victim]);
    let st = wait_for(&mut again, Duration::from_secs(40))
        .unwrap_or_else(|| panic!("the restarted worker did not finish:\n{}", s.logs(&workers)));
    assert!(st.success(), "{st}:\n{}", s.logs(&workers));
    // Nothing lost, nothing twice.
    let kept = s.every_page_once(&workers);
    let kept_set: BTreeSet<usize> = kept.iter().copied().collect();
    for i in 0..PAGES {
        if group_of(i).is_none() {
            assert!(kept_set.contains(&i), "unique page {i} not kept: {kept_set:?}");
        }
    }
    for g in 0..PAGES / 6 {
        assert!(
            kept_set.iter().any(|&i| group_of(i) == Some(g)),
            "group {g} has no kept page"
        );
    }
    // A second fetch only for what the dead worker held (at most its
    // host's concurrency, 2, plus what it had leased and not started).
    // (Each worker reads robots.txt once for itself.)
    let mut counts = server.counts();
    assert!(counts.remove("/robots.txt").unwrap_or(0) <= 3, "{counts:?}");
    let twice: Vec<(&String, &u32)> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(counts.values().all(|&n| n <= 2), "{counts:?}");
    assert!(twice.len() <= 2, "fetched twice: {twice:?}");
    // Every page acknowledged once: the dead worker's unacknowledged
    // pages by the worker that took them back.
    let st = s.merged_stats(&ns);
    assert_eq!(st["fetched"], PAGES as u64, "{st}");
    assert_eq!(st["leased"], PAGES as u64, "{st}");
    // The survivors' logs say they took leases back when there were any.
    if !twice.is_empty() {
        assert!(st["reclaimed"].as_u64().unwrap() >= 1, "{st}");
    }
}

/// Sends `signal` (`STOP`, `CONT`) to a worker.
fn signal(child: &Child, signal: &str) {
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!("kill -{signal} {}", child.id()))
        .status()
        .unwrap();
    assert!(st.success(), "kill -{signal} failed");
}

/// A worker frozen past its leases (a VM pause, swap, a stalled disk) comes
/// back with results of pages another worker took back and did: its ack is
/// refused, it writes its batch again without them, and no page has lines
/// in two workers' outputs.
#[test]
fn a_worker_paused_past_its_leases_writes_no_page_twice() {
    let Some(url) = redis_url("a_worker_paused_past_its_leases") else {
        return;
    };
    let server = site(Duration::from_millis(100));
    let dir = crate::support::tempdir("e2e-redis-pause-");
    let ns = namespace("pause");
    let s = Shared::new(dir.path(), &format!("{}/p/0", server.base()), &url, &ns, 1_500);
    let workers = ["z1", "z2"];
    // The first worker crawls alone for a while, then is paused at a
    // moment it holds leases (while it is paused, every lease out is its).
    let first = s.spawn(workers[0]);
    let t0 = Instant::now();
    loop {
        if s.lines_now(workers[0]) >= PAGES / 4 {
            signal(&first, "STOP");
            if s.merged_stats(&ns)["frontier"]["leases_out"].as_u64().unwrap() > 0 {
                break;
            }
            signal(&first, "CONT");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no pause with leases held:\n{}",
            s.logs(&workers)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The second takes them back once they expire, and goes on; the first
    // comes back after that (however long the second took to start on a
    // loaded machine).
    let second = s.spawn(workers[1]);
    let t0 = Instant::now();
    while s.merged_stats(&ns)["reclaimed"].as_u64().unwrap_or(0) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the paused worker's leases were never taken back:\n{}",
            s.logs(&workers)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    signal(&first, "CONT");
    let mut children = [first, second];
    s.wait_ok(&mut children, &workers);
    let kept = s.every_page_once(&workers);
    let kept_set: BTreeSet<usize> = kept.iter().copied().collect();
    assert_eq!(kept.len(), kept_set.len(), "a page kept twice: {kept:?}");
    assert_kept_like_one_process(&kept_set, "a paused worker and another");
    // The pause did take leases away, and every page counts once.
    let st = s.merged_stats(&ns);
    eprintln!(
        "paused worker: {} leases taken back, {} results refused",
        st["reclaimed"], st["stale_acks"]
    );
    assert!(st["reclaimed"].as_u64().unwrap() >= 1, "{st}");
    assert_eq!(st["fetched"], PAGES as u64, "{st}");
    assert_eq!(st["kept"], kept.len() as u64, "{st}");
}

#[test]
fn unreachable_redis_at_start_is_a_clear_error() {
    let dir = crate::support::tempdir("e2e-redis-down-");
    let seeds = dir.path().join("seeds.txt");
    std::fs::write(&seeds, "http://127.0.0.1:9/\n").unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}/0");
    let out = Command::new(crate::support::CRAWL)
        .arg("--seeds")
        .arg(&seeds)
        .arg("--out")
        .arg(dir.path().join("out"))
        .args(["--redis", &url])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(&url), "the error must name the server: {err}");
    assert!(err.to_lowercase().contains("unreachable"), "{err}");
    assert!(
        !dir.path().join("out").exists(),
        "nothing is written before the server answers"
    );
}

/// A redis-server of the test's own, persisting every write, so that a
/// restart finds what was acknowledged.
struct OwnRedis {
    bin: String,
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl OwnRedis {
    fn start() -> Option<OwnRedis> {
        let bin = std::env::var("SIMCRAWL_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        if Command::new(&bin).arg("--version").output().is_err() {
            eprintln!("SKIPPED: no redis-server (SIMCRAWL_REDIS_SERVER or PATH)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut s = OwnRedis {
            bin,
            dir: crate::support::tempdir("e2e-redis-server-"),
            port,
            child: None,
        };
        s.restart();
        Some(s)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    fn restart(&mut self) {
        let child = Command::new(&self.bin)
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let t0 = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn workers_pause_while_redis_is_down_and_finish_when_it_is_back() {
    if redis_url("workers_pause_while_redis_is_down").is_none() {
        return;
    }
    let Some(mut redis) = OwnRedis::start() else {
        return;
    };
    let server = site(Duration::from_millis(40));
    let dir = crate::support::tempdir("e2e-redis-restart-");
    let s = Shared::new(
        dir.path(),
        &format!("{}/p/0", server.base()),
        &redis.url(),
        "restart",
        30_000,
    );
    let workers = ["r1", "r2"];
    let mut children: Vec<Child> = workers.iter().map(|w| s.spawn(w)).collect();
    let now = |s: &Shared| workers.iter().map(|w| s.lines_now(w)).sum::<usize>();
    s.wait_until(&workers, Duration::from_secs(30), "no progress", || {
        now(&s) >= PAGES / 4
    });
    redis.kill();
    let during = now(&s);
    std::thread::sleep(Duration::from_millis(1500));
    // Paused: at most the results already on their way were written.
    let paused = now(&s);
    assert!(
        paused < PAGES,
        "the crawl went on without Redis ({during} -> {paused})"
    );
    for (c, w) in children.iter_mut().zip(workers) {
        if let Some(status) = c.try_wait().unwrap() {
            panic!(
                "worker {w} exited ({status}) while Redis was down:\n{}",
                s.logs(&workers)
            );
        }
    }
    redis.restart();
    s.wait_ok(&mut children, &workers);
    let (_, per_page) = tally(&s.lines(&workers));
    let missing: Vec<usize> = (0..PAGES).filter(|i| !per_page.contains_key(i)).collect();
    assert!(
        missing.is_empty(),
        "pages lost: {missing:?}\n{}",
        s.logs(&workers)
    );
    let logs = s.logs(&workers);
    assert!(logs.contains("unavailable"), "the pause is logged:\n{logs}");
    assert!(logs.contains("is back"), "the recovery is logged:\n{logs}");
}

#[test]
fn politeness_and_the_page_budget_hold_across_workers_together() {
    use std::sync::{Arc, Mutex};
    let Some(url) = redis_url("politeness_and_the_page_budget_hold_across_workers") else {
        return;
    };
    // robots.txt asks for 1 s between requests; one page at a time
    // (fetch.per_host_concurrency = 1). Each worker alone would obey both;
    // three uncoordinated workers would not.
    let starts: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let open = Arc::new(Mutex::new((0usize, 0usize)));
    // The default /sitemap.xml (a 404 here): a listing, not a page.
    let sitemap_reads = Arc::new(Mutex::new(0usize));
    let (st, op, sm) = (starts.clone(), open.clone(), sitemap_reads.clone());
    let server = Server::start(move |req: &Request| {
        if req.path == "/robots.txt" {
            return Reply::text("User-agent: *\nCrawl-delay: 1\n");
        }
        if req.path == "/sitemap.xml" {
            *sm.lock().unwrap() += 1;
        } else {
            st.lock().unwrap().push(Instant::now());
        }
        {
            let mut o = op.lock().unwrap();
            o.0 += 1;
            o.1 = o.1.max(o.0);
        }
        std::thread::sleep(Duration::from_millis(30));
        op.lock().unwrap().0 -= 1;
        match crate::support::generated_page(&req.path, PAGES) {
            Some(n) => Reply::html(site_page(n)),
            None => Reply::status(404),
        }
    });
    let dir = crate::support::tempdir("e2e-redis-polite-");
    let ns = namespace("polite");
    let s = Shared::new(dir.path(), &format!("{}/p/0", server.base()), &url, &ns, 10_000);
    let text = std::fs::read_to_string(&s.config).unwrap();
    let text = text
        .replace("per_host_concurrency = 2", "per_host_concurrency = 1")
        .replace("[crawl]\n", "[crawl]\nmax_pages = 6\n");
    std::fs::write(&s.config, text).unwrap();
    let workers = ["p1", "p2", "p3"];
    let mut children: Vec<Child> = workers.iter().map(|w| s.spawn(w)).collect();
    s.wait_ok(&mut children, &workers);
    // One budget for all: 6 pages fetched, whoever fetched them.
    let starts = starts.lock().unwrap().clone();
    assert_eq!(starts.len(), 6, "pages requested");
    // The sitemap does not count against the budget, and is read once at
    // most (never when the budget is spent before its turn).
    assert!(*sitemap_reads.lock().unwrap() <= 1);
    let st = s.merged_stats(&ns);
    assert_eq!(st["fetched"], 6, "{st}");
    // One request at a time at the server, all workers together.
    assert_eq!(open.lock().unwrap().1, 1, "requests in flight at once");
    // Spaced by the Crawl-delay, all workers together: the seed is leased
    // before any worker read robots.txt, the four gaps after the next one
    // are 1 s each at the server's clock, less the jitter between a lease
    // and its request (measured up to ~0.5 s on a loaded 2-core machine, a
    // worker starting up while another fetches). Three uncoordinated
    // workers would fetch the 6 pages in about 2 s, requests 1..5 within
    // ~1.3 s.
    let span = starts[5].duration_since(starts[1]);
    assert!(
        span >= Duration::from_millis(3_000),
        "requests 1..5 over {span:?}: not spaced by the Crawl-delay"
    );
}

/// The retry budget holds in the shared mode too: a page that always fails
/// is requeued while its waits and attempts fit `crawl.retry_budget_ms` (1 s,
/// then what is left of 2 s; `max_requeues = 3` alone would requeue it three
/// times), then its failure is final. One request per attempt (no fetch
/// retries).
#[test]
fn a_page_failing_past_the_retry_budget_is_a_final_error_in_shared_mode() {
    let Some(url) = redis_url("a_page_failing_past_the_retry_budget") else {
        return;
    };
    let server = Server::start(|req: &Request| match req.path.as_str() {
        "/" => Reply::html(page("Home", &gibberish(29, 60), &["/down".to_string()])),
        "/down" => Reply::status(503),
        _ => Reply::status(404),
    });
    let dir = crate::support::tempdir("e2e-redis-budget-");
    let ns = namespace("budget");
    let s = Shared::new(dir.path(), &format!("{}/", server.base()), &url, &ns, 10_000);
    let text = std::fs::read_to_string(&s.config).unwrap();
    let text = text
        .replace(
            "[crawl]\n",
            "[crawl]\nrequeue_delay_ms = 1000\nmax_requeues = 3\nretry_budget_ms = 2000\n",
        )
        .replace("retries = 2", "retries = 0");
    std::fs::write(&s.config, text).unwrap();
    let mut children = vec![s.spawn("b1")];
    s.wait_ok(&mut children, &["b1"]);
    let st = s.merged_stats(&ns);
    assert_eq!(st["requeued"], 2, "{st}");
    let errors: Vec<_> = s
        .lines(&["b1"])
        .into_iter()
        .filter(|(_, file, _)| *file == "errors")
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(crate::support::field(&errors[0].2, "kind"), "status_5xx");
    // 1 + 2 requeues, 1 request each.
    assert_eq!(server.counts()["/down"], 3);
}

/// A site whose page `/a` redirects to `/b`, a page no other page links to:
/// its content is kept only if `/a`'s fetch keeps it.
fn redirect_site() -> Server {
    Server::start(|req: &Request| {
        std::thread::sleep(Duration::from_millis(30));
        let links = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match req.path.as_str() {
            "/" => Reply::html(page(
                "Start",
                &gibberish(500, 120),
                &links(&["/a", "/p1", "/p2", "/p3"]),
            )),
            "/a" => Reply::Redirect {
                status: 302,
                location: "/b".to_string(),
            },
            "/b" => Reply::html(page("The redirect target", &gibberish(501, 160), &links(&["/"]))),
            "/p1" | "/p2" | "/p3" => {
                let seed = 502 + u64::from(req.path.as_bytes()[2] - b'0');
                Reply::html(page(
                    &format!("Page {}", req.path),
                    &gibberish(seed, 140),
                    &links(&["/"]),
                ))
            }
            _ => Reply::status(404),
        }
    })
}

/// A worker killed after the verdicts of a batch holding a redirected page
/// and before their acknowledgement (the pages' lines on disk, not
/// acknowledged) must not leave the redirect target recorded as seen: the
/// page's next fetch, by another worker, would find it and write the page
/// off as a URL-tier copy of a target whose content is kept nowhere.
#[test]
fn a_redirect_target_counts_as_seen_only_once_its_page_is_committed() {
    let Some(url) = redis_url("a_redirect_target_counts_as_seen") else {
        return;
    };
    let server = redirect_site();
    let dir = crate::support::tempdir("e2e-redis-redirect-");
    let ns = namespace("redirect");
    let s = Shared::new(dir.path(), &format!("{}/", server.base()), &url, &ns, 1_500);
    let workers = ["r1", "r2"];
    // r1 dies (abort, as kill -9) right before acknowledging the batch that
    // holds /a.
    let mut first = s
        .command("r1", Some("r1"))
        .env("SIMCRAWL_TEST_ABORT_BEFORE_ACK", "redirect")
        .spawn()
        .unwrap();
    let st = wait_for(&mut first, Duration::from_secs(40))
        .unwrap_or_else(|| panic!("r1 did not die at the injected point:\n{}", s.logs(&workers)));
    assert!(
        !st.success(),
        "r1 was to abort before its ack: {st}\n{}",
        s.logs(&workers)
    );
    assert_eq!(server.counts().get("/a"), Some(&1), "{:?}", server.counts());
    // r2 takes r1's leases back once they expire and finishes the site; r1,
    // restarted under its id, cuts its unacknowledged lines and finds the
    // crawl over.
    let mut children = [s.spawn("r2")];
    s.wait_ok(&mut children, &workers);
    let mut again = [s.spawn("r1")];
    s.wait_ok(&mut again, &workers);
    let lines = s.lines(&workers);
    let line_of = |path: &str| -> Vec<(String, &'static str, Value)> {
        lines
            .iter()
            .filter(|(_, _, v)| path_of(field(v, "url")) == path)
            .cloned()
            .collect()
    };
    // /a was fetched again, and its one line keeps /b's content.
    assert_eq!(server.counts().get("/a"), Some(&2), "{:?}", server.counts());
    let a = line_of("/a");
    assert_eq!(
        a.len(),
        1,
        "/a must have exactly one line: {a:?}\n{}",
        s.logs(&workers)
    );
    let (_, file, v) = &a[0];
    assert_eq!(
        *file,
        "kept",
        "/a redirects to /b, linked from nowhere else: its fetch must keep /b's content, got {v}\n{}",
        s.logs(&workers)
    );
    assert_eq!(path_of(v["final_url"].as_str().unwrap_or_default()), "/b", "{v}");
    // Every other page once, kept (all are unique).
    for p in ["/", "/p1", "/p2", "/p3"] {
        let l = line_of(p);
        assert_eq!(l.len(), 1, "{p}: {l:?}");
        assert_eq!(l[0].1, "kept", "{p}: {l:?}");
    }
}

impl Shared {
    /// The worker directories under the outputs' root (ids given or not).
    fn worker_dirs(&self) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(self.out())
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }
}

/// A worker under the default id (`HOSTNAME-PID`) killed with a batch's
/// lines written and not acknowledged is never restarted under that id:
/// the workers that finish the crawl cut its outputs back to what it
/// acknowledged, so the union of all outputs holds every page once.
#[test]
fn a_worker_killed_before_its_ack_and_never_restarted_leaves_no_page_twice() {
    let Some(url) = redis_url("a_worker_killed_before_its_ack_and_never_restarted") else {
        return;
    };
    let server = site(Duration::from_millis(40));
    let dir = crate::support::tempdir("e2e-redis-gone-");
    let ns = namespace("gone");
    let s = Shared::new(dir.path(), &format!("{}/p/0", server.base()), &url, &ns, 1_500);
    let logs = ["victim", "g1", "g2"];
    // The victim crawls alone until it dies (with others beside it, they
    // could finish the site before its 3rd batch); the others start after
    // and take its leases back once they expire.
    let mut victim = s
        .command("victim", None)
        .env("SIMCRAWL_TEST_ABORT_BEFORE_ACK", "3")
        .spawn()
        .unwrap();
    let st = wait_for(&mut victim, Duration::from_secs(40))
        .unwrap_or_else(|| panic!("the victim did not die at its 3rd ack:\n{}", s.logs(&logs)));
    assert!(!st.success(), "{st}:\n{}", s.logs(&logs));
    let victim_dirs = s.worker_dirs();
    assert_eq!(victim_dirs.len(), 1, "{victim_dirs:?}");
    let mut others = [
        s.command("g1", None).spawn().unwrap(),
        s.command("g2", None).spawn().unwrap(),
    ];
    s.wait_ok(&mut others, &logs);
    let dirs = s.worker_dirs();
    assert_eq!(dirs.len(), 3, "one directory per worker: {dirs:?}");
    let names: Vec<&str> = dirs.iter().map(String::as_str).collect();
    let kept = s.every_page_once(&names);
    let kept_set: BTreeSet<usize> = kept.iter().copied().collect();
    assert_kept_like_one_process(&kept_set, "a worker killed before its ack and two others");
    // The victim did leave lines: its first two batches.
    let victim_lines = s.lines(&[victim_dirs[0].as_str()]).len();
    assert!(
        victim_lines > 0 && victim_lines < PAGES / 2,
        "{victim_lines} lines in {victim_dirs:?}\n{}",
        s.logs(&logs)
    );
    let log = s.logs(&logs);
    assert!(
        log.contains("gone worker's outputs cut"),
        "the finishing workers say they cut the victim's outputs:\n{log}"
    );
}

/// A worker whose output directory holds files the shared crawl has no
/// record of (another crawl's, or Redis was cleared) refuses to start
/// rather than truncate them; a second live process under one id refuses
/// too.
#[test]
fn a_worker_never_truncates_outputs_it_did_not_write() {
    let Some(url) = redis_url("a_worker_never_truncates_outputs") else {
        return;
    };
    let server = site(Duration::from_millis(200));
    let dir = crate::support::tempdir("e2e-redis-foreign-");
    let ns = namespace("foreign");
    let s = Shared::new(dir.path(), &format!("{}/p/0", server.base()), &url, &ns, 3_000);
    let foreign = s.out().join("w9");
    std::fs::create_dir_all(&foreign).unwrap();
    let text = "{\"url\":\"http://elsewhere.example/\",\"title\":\"another crawl's page\"}\n";
    std::fs::write(foreign.join("kept.jsonl"), text).unwrap();
    let mut w9 = s.spawn("w9");
    let st = wait_for(&mut w9, Duration::from_secs(20)).expect("w9 must refuse at once");
    assert!(!st.success(), "{st}");
    let log = std::fs::read_to_string(s.log("w9")).unwrap();
    assert!(
        log.contains("no record of") && log.contains(&foreign.display().to_string()),
        "the error names the directory and why: {log}"
    );
    assert_eq!(std::fs::read_to_string(foreign.join("kept.jsonl")).unwrap(), text);
    // One id, two live processes: the second refuses.
    let mut first = s.spawn("twin");
    s.wait_until(&["twin"], Duration::from_secs(30), "no progress", || {
        s.lines_now("twin") > 0
    });
    let second = s.command("twin2", Some("twin")).status().unwrap();
    assert!(!second.success());
    let log2 = std::fs::read_to_string(s.log("twin2")).unwrap();
    assert!(log2.contains("is in use"), "{log2}");
    first.kill().unwrap();
    first.wait().unwrap();
}

/// SIGTERM reaches a worker that waits for Redis to come back: it stops
/// within seconds, with a message that says why, and loses nothing (its
/// restart, once Redis is back, finishes the site with every page once).
#[test]
fn a_stop_signal_ends_a_worker_waiting_for_redis() {
    if redis_url("a_stop_signal_ends_a_worker_waiting_for_redis").is_none() {
        return;
    }
    let Some(mut redis) = OwnRedis::start() else {
        return;
    };
    let server = site(Duration::from_millis(40));
    let dir = crate::support::tempdir("e2e-redis-sigterm-");
    let s = Shared::new(
        dir.path(),
        &format!("{}/p/0", server.base()),
        &redis.url(),
        "sigterm",
        2_000,
    );
    let workers = ["s1"];
    let mut child = s.spawn("s1");
    s.wait_until(&workers, Duration::from_secs(30), "no progress", || {
        s.lines_now("s1") >= PAGES / 4
    });
    redis.kill();
    s.wait_until(
        &workers,
        Duration::from_secs(20),
        "the worker never noticed Redis was down",
        || s.logs(&workers).contains("unavailable"),
    );
    signal(&child, "TERM");
    let st = wait_for(&mut child, Duration::from_secs(10))
        .unwrap_or_else(|| panic!("SIGTERM was ignored while Redis was down:\n{}", s.logs(&workers)));
    let log = s.logs(&workers);
    assert_eq!(
        st.code(),
        Some(5),
        "stopped short of the crawl, as redis_gone: {st}\n{log}"
    );
    assert!(log.contains("stopped by a signal while Redis"), "{log}");
    assert!(log.contains("crawl ended (redis_gone)"), "{log}");
    let stats = std::fs::read_to_string(s.out().join("s1").join("stats.json")).unwrap();
    assert!(stats.contains("\"ended\": \"redis_gone\""), "{stats}");
    // Nothing lost: restarted once Redis is back, it finishes the site.
    redis.restart();
    let mut again = [s.spawn("s1")];
    s.wait_ok(&mut again, &workers);
    let kept = s.every_page_once(&workers);
    assert_kept_like_one_process(
        &kept.into_iter().collect(),
        "a worker stopped while Redis was down",
    );
}

/// `--warc` in the shared mode: each worker archives in its own directory;
/// a worker killed before its ack and never restarted has its archive cut
/// back by the others like its lines, so every page has exactly one final
/// record across all the workers' sets.
#[test]
fn shared_workers_archive_every_page_once_across_their_warc_sets() {
    let Some(url) = redis_url("shared_workers_archive_every_page_once") else {
        return;
    };
    let server = site(Duration::from_millis(40));
    let dir = crate::support::tempdir("e2e-redis-warc-");
    let ns = namespace("warc");
    let s = Shared::new(dir.path(), &format!("{}/p/0", server.base()), &url, &ns, 1_500);
    let warc = dir.path().join("warc");
    let mut config = std::fs::read_to_string(&s.config).unwrap();
    config.push_str(&format!(
        "\n[output]\nwarc_dir = {:?}\n",
        warc.display().to_string()
    ));
    std::fs::write(&s.config, config).unwrap();
    let logs = ["victim", "w1", "w2"];
    let mut victim = s
        .command("victim", None)
        .env("SIMCRAWL_TEST_ABORT_BEFORE_ACK", "3")
        .spawn()
        .unwrap();
    let st = wait_for(&mut victim, Duration::from_secs(40))
        .unwrap_or_else(|| panic!("the victim did not die at its 3rd ack:\n{}", s.logs(&logs)));
    assert!(!st.success(), "{st}:\n{}", s.logs(&logs));
    let mut others = [s.spawn("w1"), s.spawn("w2")];
    s.wait_ok(&mut others, &logs);
    let names = s.worker_dirs();
    assert_eq!(names.len(), 3, "{names:?}");
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    s.every_page_once(&refs);
    // One set per worker, each under its id; together, one final record
    // per page.
    let mut finals: BTreeMap<String, usize> = BTreeMap::new();
    for name in &names {
        let set = warc.join(name);
        assert!(set.is_dir(), "no WARC set for worker {name}");
        for r in crate::warc::read_set(&set) {
            if matches!(r.kind(), "response" | "revisit") && r.uri_path().starts_with("/p/") {
                *finals.entry(r.uri_path()).or_default() += 1;
            }
        }
        crate::warc::warcio_check(&set);
        // The victim's set too: indexed by the worker that cut it.
        crate::warc::cdxj_check(&set);
    }
    let twice: Vec<_> = finals.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "pages archived more than once: {twice:?}");
    assert_eq!(finals.len(), PAGES, "{finals:?}");
}
