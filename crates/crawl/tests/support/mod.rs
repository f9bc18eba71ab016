//! Helpers of the end-to-end tests: the fixture HTTP server, generated
//! text, running the `crawl` binary, and reading its outputs.

pub mod server;
pub mod zh;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The crawl binary built by cargo for this test.
pub const CRAWL: &str = env!("CARGO_BIN_EXE_crawl");

/// Deterministic pseudo-random numbers (xorshift64).
pub fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

const SYLLABLES: [&str; 40] = [
    "ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "pi", "nex", "qua", "ri", "zen", "bo", "fal", "gri",
    "hu", "jo", "mar", "ne", "os", "pla", "ru", "sto", "tem", "ul", "vi", "wex", "yan", "zu", "bra", "cle",
    "dri", "ema", "fro", "gla", "ist", "kor", "lum", "mos",
];

/// `words` pseudo-words (2 or 3 syllables) from `seed`: texts from distinct
/// seeds share few words, so their SimHash fingerprints are far apart.
pub fn gibberish(seed: u64, words: usize) -> String {
    let mut next = rng(seed.wrapping_add(1));
    let mut out = String::new();
    for i in 0..words {
        let n = 2 + (next() % 2) as usize;
        for _ in 0..n {
            out.push_str(SYLLABLES[(next() % SYLLABLES.len() as u64) as usize]);
        }
        out.push_str(if i % 12 == 11 { ". " } else { " " });
    }
    out
}

/// A page in the fixture site's usual template.
pub fn page(title: &str, body: &str, links: &[String]) -> String {
    let mut nav = String::new();
    for l in links {
        nav.push_str(&format!("<li><a href=\"{l}\">link</a></li>"));
    }
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><header><ul>{nav}</ul></header><article><h1>{title}</h1><p>{body}</p></article>\
         <footer>Fixture site footer</footer></body></html>"
    )
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Writes a crawl config with small timeouts into `dir`; `extra` is
/// appended verbatim inside the `[crawl]` table.
pub fn write_config(dir: &Path, per_host_concurrency: usize, extra_crawl: &str) -> PathBuf {
    let stop_words = workspace().join("config/stopwords.txt");
    let text = format!(
        r#"[dedup.features]
stop_words = "{}"

[fetch]
connect_timeout_ms = 1000
total_timeout_ms = 2000
idle_body_timeout_ms = 1000
retries = 2
backoff_base_ms = 50
backoff_max_ms = 200
per_host_delay_ms = 0
per_host_concurrency = {per_host_concurrency}
concurrency = 32
robots_unavailable_retry_ms = 60000

[crawl]
scope = "host"
max_depth = 100
concurrency = 32
{extra_crawl}
"#,
        stop_words.display()
    );
    let path = dir.join("crawl.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A temporary directory for one test, under cargo's directory for test
/// files; `prefix` names the test file, so what a failed test left is found.
pub fn tempdir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// The files of a crawl in `root` from the one URL `seed`: the config of
/// [`write_config`] (`per_host_concurrency`, `extra_crawl` in `[crawl]`)
/// and a seeds file.
pub fn site_crawl(root: &Path, seed: &str, per_host_concurrency: usize, extra_crawl: &str) -> Dirs {
    let config = write_config(root, per_host_concurrency, extra_crawl);
    let seeds = root.join("seeds.txt");
    std::fs::write(&seeds, format!("{seed}\n")).unwrap();
    Dirs::new(root, &config, &seeds)
}

/// One crawl's files.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub config: PathBuf,
    pub seeds: PathBuf,
    pub out: PathBuf,
    pub data: PathBuf,
    pub stderr: PathBuf,
}

impl Dirs {
    pub fn new(root: &Path, config: &Path, seeds: &Path) -> Dirs {
        Dirs {
            config: config.to_path_buf(),
            seeds: seeds.to_path_buf(),
            out: root.join("out"),
            data: root.join("data"),
            stderr: root.join("stderr.log"),
        }
    }

    /// `crawl [SUBCOMMAND] --config --out --data-dir` of this crawl,
    /// logging at `info` without colours.
    fn on_state(&self, subcommand: Option<&str>) -> Command {
        let mut c = Command::new(CRAWL);
        c.args(subcommand)
            .arg("--config")
            .arg(&self.config)
            .arg("--out")
            .arg(&self.out)
            .arg("--data-dir")
            .arg(&self.data)
            .env("CRAWL_LOG", "info")
            .env("NO_COLOR", "1");
        c
    }

    /// `crawl --config --seeds --out --data-dir`, logging at `info` without
    /// colours.
    pub fn command(&self) -> Command {
        let mut c = self.on_state(None);
        c.arg("--seeds").arg(&self.seeds);
        c
    }

    /// Replaces `from` by `to` in the config file (a setting that
    /// [`write_config`] writes itself).
    pub fn edit_config(&self, from: &str, to: &str) {
        let text = std::fs::read_to_string(&self.config).unwrap();
        assert!(text.contains(from), "{from:?} not in the config:\n{text}");
        std::fs::write(&self.config, text.replace(from, to)).unwrap();
    }

    /// Starts [`Dirs::command`]; stderr is appended to `self.stderr` (a
    /// file, so a child never blocks on a full pipe).
    pub fn spawn(&self) -> Child {
        let err = File::options()
            .create(true)
            .append(true)
            .open(&self.stderr)
            .unwrap();
        self.command()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap()
    }

    /// Runs a crawl to the end (killed after `limit`); returns its exit
    /// status and wall time.
    pub fn run(&self, limit: Duration) -> (ExitStatus, Duration) {
        let t0 = Instant::now();
        let mut child = self.spawn();
        let status = wait_for(&mut child, limit)
            .unwrap_or_else(|| panic!("crawl still running after {limit:?}; stderr:\n{}", self.log()));
        (status, t0.elapsed())
    }

    /// [`Dirs::run`], and the crawl must succeed (its stderr is shown if not).
    pub fn run_ok(&self, limit: Duration) {
        let (st, _) = self.run(limit);
        assert!(st.success(), "{st}; stderr:\n{}", self.log());
    }

    /// `crawl revisit` of this crawl (`--all`: every page, not only those
    /// due), logging at `info` without colours; its output.
    pub fn revisit(&self, all: bool) -> std::process::Output {
        let mut c = self.on_state(Some("revisit"));
        if all {
            c.arg("--all");
        }
        c.output().unwrap()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Polls `done` while the crawl `child` runs: panics, with the crawl's
    /// log, if the crawl ends first or `done` does not hold within `limit`
    /// (`what` names what was awaited). For tests that act on a running
    /// crawl (kill it, read its outputs) once it has got somewhere.
    pub fn wait_until(&self, child: &mut Child, limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !done() {
            if let Some(st) = child.try_wait().unwrap() {
                panic!("the crawl ended ({st}) before {what}:\n{}", self.log());
            }
            assert!(
                t0.elapsed() < limit,
                "not {what} within {limit:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn kept(&self) -> Vec<Value> {
        read_jsonl(&self.out.join("kept.jsonl"))
    }

    pub fn duplicates(&self) -> Vec<Value> {
        read_jsonl(&self.out.join("duplicates.jsonl"))
    }

    pub fn errors(&self) -> Vec<Value> {
        read_jsonl(&self.out.join("errors.jsonl"))
    }

    pub fn stats(&self) -> Value {
        let text = std::fs::read_to_string(self.out.join("stats.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// Complete lines in kept.jsonl right now (the crawl may be running).
    pub fn kept_lines_now(&self) -> usize {
        std::fs::read(self.out.join("kept.jsonl"))
            .map(|b| b.iter().filter(|&&c| c == b'\n').count())
            .unwrap_or(0)
    }
}

/// Waits for `child` at most `limit`; kills it (and returns None) after.
pub fn wait_for(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every line of a JSON-lines file, parsed; panics on a line that is not
/// one complete JSON object (a torn line). A missing file is empty.
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{} does not end with a newline (torn last line)",
        path.display()
    );
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{}:{}: not JSON ({e}): {l:?}", path.display(), i + 1));
            assert!(v.is_object(), "{}:{}: not an object", path.display(), i + 1);
            v
        })
        .collect()
}

/// The string field `key` of a JSON line.
pub fn field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string {key:?} in {v}"))
}

/// The path (and query) of an absolute URL, without scheme, host and port.
pub fn path_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    match rest.find('/') {
        Some(i) => rest[i..].to_string(),
        None => "/".to_string(),
    }
}

/// The page a request path names on a generated site of `pages` pages
/// served under `/p/N`: `N`, or `None` (a 404) for any other path.
pub fn generated_page(path: &str, pages: usize) -> Option<usize> {
    path.strip_prefix("/p/")
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n < pages)
}

/// Counts of each value in `items`.
pub fn multiset<I: IntoIterator<Item = String>>(items: I) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for i in items {
        *m.entry(i).or_insert(0) += 1;
    }
    m
}
