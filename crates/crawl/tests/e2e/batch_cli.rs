//! `crawl dedup`, `crawl fingerprint` and `crawl distance` as a user runs them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const CRAWL: &str = env!("CARGO_BIN_EXE_crawl");

fn crawl(args: &[&str]) -> Output {
    Command::new(CRAWL).args(args).output().unwrap()
}

/// `crawl dedup --input INPUT --out OUT`, with `--data-dir DATA` when given.
fn dedup_command(input: &Path, out: &Path, data: Option<&Path>) -> Command {
    let mut c = Command::new(CRAWL);
    c.arg("dedup").arg("--input").arg(input).arg("--out").arg(out);
    if let Some(data) = data {
        c.arg("--data-dir").arg(data);
    }
    c
}

/// Runs `crawl dedup` over `input` into `root/out` with the index in
/// `root/data`, plus `extra` arguments; returns the output and the out dir.
fn dedup_with_data(root: &Path, input: &Path, out: &str, extra: &[&str]) -> (Output, std::path::PathBuf) {
    dedup_with_env(root, input, out, extra, &[])
}

/// [`dedup_with_data`] with environment variables set.
fn dedup_with_env(
    root: &Path,
    input: &Path,
    out: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Output, std::path::PathBuf) {
    let out = root.join(out);
    let o = dedup_command(input, &out, Some(&root.join("data")))
        .args(extra)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (o, out)
}

/// Writes one JSON line per document.
fn write_docs(path: &Path, docs: &[serde_json::Value]) {
    let text: String = docs.iter().map(|d| d.to_string() + "\n").collect();
    std::fs::write(path, text).unwrap();
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("torn line {l:?} in {}: {e}", path.display()))
        })
        .collect()
}

const A: &str = "国家统计局今天发布数据显示，十月份全国规模以上工业增加值同比增长百分之五点三，环比增长零点四一。\
    分行业看，四十一个大类行业中有三十五个行业增加值保持同比增长。制造业采购经理指数回升至扩张区间。";
const B: &str = "气象台发布寒潮蓝色预警，受强冷空气影响，北方大部地区气温将下降八到十度，局地降温超过十二度并伴有大风天气。\
    内蒙古东部、东北地区有小到中雪，公众应注意防寒保暖，交通运输部门要做好道路除冰准备。";
const A_TRAD: &str = "國家統計局今天發佈數據顯示，十月份全國規模以上工業增加值同比增長百分之五點三，環比增長零點四一。\
    分行業看，四十一個大類行業中有三十五個行業增加值保持同比增長。製造業採購經理指數回升至擴張區間。";

#[test]
fn dedup_writes_verdicts_in_input_order_and_skips_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("docs.jsonl");
    let docs = [
        serde_json::json!({"url": "http://a.example/1", "title": "工业", "text": A}).to_string(),
        "{not json".to_string(),
        serde_json::json!({"url": "http://a.example/1?utm_source=x#f", "text": B}).to_string(),
        serde_json::json!({"url": "http://b.example/1", "title": "Index", "text": A_TRAD}).to_string(),
        serde_json::json!({"url": "http://b.example/2", "title": "Index", "text": B}).to_string(),
        serde_json::json!({"url": "http://b.example/3", "html": format!("<html><head><title>天气</title></head><body><article><p>{B}</p></article></body></html>")}).to_string(),
        serde_json::json!({"url": "http://b.example/4"}).to_string(),
        String::new(),
    ];
    std::fs::write(&input, docs.join("\n") + "\n").unwrap();
    let out = dir.path().join("out");
    let o = dedup_command(&input, &out, None).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("docs.jsonl:2: invalid JSON"), "{stderr}");
    assert!(
        stderr.contains("docs.jsonl:7: neither \"text\" nor \"html\""),
        "{stderr}"
    );
    assert!(stderr.contains("kept: 2"), "{stderr}");

    let kept = lines(&out.join("kept.jsonl"));
    let urls: Vec<&str> = kept.iter().map(|k| k["url"].as_str().unwrap()).collect();
    assert_eq!(urls, ["http://a.example/1", "http://b.example/2"]);
    assert_eq!(kept[0]["simhash"].as_str().unwrap().len(), 16);

    let dups = lines(&out.join("duplicates.jsonl"));
    let got: Vec<(&str, &str, &str)> = dups
        .iter()
        .map(|d| {
            (
                d["url"].as_str().unwrap(),
                d["tier"].as_str().unwrap(),
                d["duplicate_of"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("http://a.example/1?utm_source=x#f", "url", "http://a.example/1"),
            ("http://b.example/1", "content", "http://a.example/1"),
            ("http://b.example/3", "content", "http://b.example/2"),
        ]
    );
    assert!(dups[0].get("distance").is_none());
    assert!(
        dups[0].get("similarity").is_none(),
        "the URL tier compares no content"
    );
    assert!(dups[1]["distance"].as_u64().unwrap() <= 3);
    // The resemblance that decided, at or above the default threshold.
    for d in &dups[1..] {
        let sim = d["similarity"].as_f64().unwrap();
        assert!((0.75..=1.0).contains(&sim), "{d}");
    }

    // What each verdict rests on, as the crawl's lines say it (issue 35):
    // a `text` line is judged on its text, an `html` line on its identity.
    assert_eq!(kept[0]["basis"], "text", "{}", kept[0]);
    assert_eq!(kept[0]["lang"], "zh", "{}", kept[0]);
    assert_eq!(
        kept[0]["chars"].as_u64(),
        Some(A.chars().filter(|c| !c.is_whitespace()).count() as u64)
    );
    assert!(kept[0]["features"].as_u64().unwrap() >= 20, "{}", kept[0]);
    assert!(
        kept[0]["excerpt"].as_str().unwrap().starts_with("国家统计局"),
        "{}",
        kept[0]
    );
    assert_eq!(dups[1]["basis"], "text", "{}", dups[1]);
    assert!(
        dups[1]["excerpt"].as_str().unwrap().starts_with("国家统计局"),
        "{}",
        dups[1]
    );
    assert_eq!(dups[2]["basis"], "thin", "{}", dups[2]);
    assert_eq!(dups[2]["lang"], "zh", "{}", dups[2]);
    assert!(
        dups[0].get("basis").is_none(),
        "a URL-tier copy was judged on nothing"
    );

    let errors = lines(&out.join("errors.jsonl"));
    let bad: Vec<u64> = errors.iter().map(|e| e["line"].as_u64().unwrap()).collect();
    assert_eq!(bad, [2, 7, 8]);
}

#[test]
fn dedup_with_a_data_dir_remembers_earlier_runs_and_refuses_other_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let first = root.join("first.jsonl");
    write_docs(
        &first,
        &[serde_json::json!({"url": "http://a.example/1", "text": A})],
    );
    let second = root.join("second.jsonl");
    write_docs(
        &second,
        &[serde_json::json!({"url": "http://c.example/9", "text": A_TRAD})],
    );
    let (o, _) = dedup_with_data(root, &first, "o1", &[]);
    assert!(o.status.success());
    let (o, out2) = dedup_with_data(root, &second, "o2", &[]);
    assert!(o.status.success());
    let dups = lines(&out2.join("duplicates.jsonl"));
    assert_eq!(dups[0]["duplicate_of"], "http://a.example/1");

    let cfg = root.join("m6.toml");
    std::fs::write(&cfg, "[dedup]\nblocks = 6\n").unwrap();
    let (o, _) = dedup_with_data(root, &second, "o3", &["--config", cfg.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(stderr.contains("blocks: stored 4, requested 6"), "{stderr}");
    // The other width is refused too, and the index still works after.
    let (o, _) = dedup_with_data(root, &second, "o4", &["--set", "dedup.bits=128"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(stderr.contains("bits: stored 64, requested 128"), "{stderr}");
    let third = root.join("third.jsonl");
    write_docs(
        &third,
        &[serde_json::json!({"url": "http://d.example/3", "text": A_TRAD})],
    );
    let (o, out5) = dedup_with_data(root, &third, "o5", &[]);
    assert!(o.status.success());
    assert_eq!(
        lines(&out5.join("duplicates.jsonl"))[0]["duplicate_of"],
        "http://a.example/1"
    );
}

#[test]
fn dedup_with_a_data_dir_refuses_other_clean_settings() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let input = root.join("docs.jsonl");
    write_docs(
        &input,
        &[serde_json::json!({"url": "http://a.example/1", "text": A})],
    );
    let (o, _) = dedup_with_data(root, &input, "o1", &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The same settings again: accepted.
    let (o, _) = dedup_with_data(root, &input, "o2", &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Other cleaning makes other text, so other fingerprints: refused.
    let cfg = root.join("clean.toml");
    std::fs::write(&cfg, "[clean]\nchinese_variant = \"off\"\n").unwrap();
    let (o, _) = dedup_with_data(root, &input, "o3", &["--config", cfg.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    assert!(stderr.contains("clean: stored "), "{stderr}");
}

fn corpus(path: &Path, n: usize) {
    let mut s = String::new();
    let words: Vec<&str> = simcrawl_dedup::features::jieba_idf()
        .words()
        .filter(|w| w.chars().count() >= 2)
        .take(50_000)
        .collect();
    for i in 0..n {
        let mut text = String::new();
        // every fifth document repeats the one before it
        let seed = if i % 5 == 4 { i - 1 } else { i };
        let mut y = (seed as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
        for _ in 0..60 {
            y ^= y << 13;
            y ^= y >> 7;
            y ^= y << 17;
            text.push_str(words[(y % words.len() as u64) as usize]);
        }
        s.push_str(
            &serde_json::json!({"url": format!("http://corpus.example/{i}"), "text": text}).to_string(),
        );
        s.push('\n');
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn dedup_killed_midway_resumes_to_the_same_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.jsonl");
    corpus(&input, 12_000);
    let dedup = |name: &str| {
        let root = dir.path().join(name);
        dedup_command(&input, &root.join("out"), Some(&root.join("data")))
    };
    let o = dedup("whole").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let mut child = dedup("killed")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let kept = dir.path().join("killed/out/kept.jsonl");
    let start = Instant::now();
    let mut killed = false;
    while start.elapsed() < Duration::from_secs(120) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if std::fs::metadata(&kept).map(|m| m.len()).unwrap_or(0) > 0 {
            child.kill().unwrap();
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait().unwrap();
    assert!(
        killed,
        "the run ended before it could be killed; make the corpus larger"
    );
    let o = dedup("killed").output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    for name in ["kept.jsonl", "duplicates.jsonl", "errors.jsonl"] {
        let whole = std::fs::read_to_string(dir.path().join("whole/out").join(name)).unwrap();
        let resumed = std::fs::read_to_string(dir.path().join("killed/out").join(name)).unwrap();
        assert!(whole.lines().count() > 0 || name == "errors.jsonl");
        assert_eq!(whole, resumed, "{name} differs after kill and resume");
    }
    assert_eq!(lines(&dir.path().join("whole/out/duplicates.jsonl")).len(), 2400);
}

#[test]
fn fingerprint_and_distance_commands() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a.txt"),
        dir.path().join("b.txt"),
        dir.path().join("c.txt"),
    );
    std::fs::write(&a, A).unwrap();
    std::fs::write(&b, A_TRAD).unwrap();
    std::fs::write(&c, B).unwrap();
    let o = crawl(&["fingerprint", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    let fps: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(fps.len(), 2);
    assert_eq!(
        fps[0], fps[1],
        "traditional text must fingerprint like its simplified twin: {out}"
    );
    assert!(out.lines().next().unwrap().ends_with("a.txt"));

    let o = crawl(&["distance", a.to_str().unwrap(), c.to_str().unwrap(), "--top", "3"]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.starts_with("distance "), "{out}");
    let d: u32 = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(d > 3, "{out}");
    assert!(out.contains("增加值") || out.contains("工业"), "{out}");

    // 128 bits: 32 hex digits whose low half is the 64-bit fingerprint.
    let o = crawl(&["fingerprint", "--set", "dedup.bits=128", a.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let wide = String::from_utf8(o.stdout).unwrap();
    let wide = wide.split_whitespace().next().unwrap();
    assert_eq!((wide.len(), &wide[16..]), (32, fps[0]), "{wide} vs {}", fps[0]);
    let o = crawl(&["fingerprint", "--set", "dedup.bits=96", a.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("dedup.bits = 96: must be 64 or 128"));

    let o = crawl(&["fingerprint", dir.path().join("missing.txt").to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.txt"));
}

#[test]
fn dedup_window_lets_old_entries_expire_between_runs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cfg = root.join("w.toml");
    std::fs::write(&cfg, "[dedup]\nwindow = \"1h\"\n").unwrap();
    let input = root.join("a.jsonl");
    write_docs(
        &input,
        &[serde_json::json!({"url": "http://a.example/1", "text": A})],
    );
    let copy = root.join("copy.jsonl");
    write_docs(
        &copy,
        &[serde_json::json!({"url": "http://b.example/1", "text": A_TRAD})],
    );
    let run = |input: &Path, out: &str| {
        let (o, out) = dedup_with_data(root, input, out, &["--config", cfg.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    // The third run happens two hours later (CRAWL_CLOCK_OFFSET_SECS), so the
    // test does not depend on how long a run takes on a loaded machine.
    let later = |input: &Path, out: &str| {
        let (o, out) = dedup_with_env(
            root,
            input,
            out,
            &["--config", cfg.to_str().unwrap()],
            &[("CRAWL_CLOCK_OFFSET_SECS", "7200")],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    run(&input, "o1");
    // Within the window the copy is a duplicate...
    let out = run(&copy, "o2");
    assert_eq!(lines(&out.join("duplicates.jsonl")).len(), 1);
    // ... two hours later the original has expired and the copy is kept.
    let out = later(&copy, "o3");
    assert_eq!(lines(&out.join("kept.jsonl")).len(), 1);
    assert!(lines(&out.join("duplicates.jsonl")).is_empty());
}

/// `crawl bench` crawls its generated site over loopback and then runs the
/// batch tool on a generated corpus: the verdicts it reports are the ones
/// the generators plant (every tenth page and every fifth document a copy
/// of the one before), and it reports each measure it promises.
#[test]
fn bench_reports_the_planted_verdicts_of_its_crawl_and_its_batch() {
    let dir = crate::support::tempdir("e2e-bench-");
    let out = crawl(&[
        "bench",
        "--pages",
        "300",
        "--batch",
        "200",
        "--index",
        "3000",
        // The user's settings reach every part of the bench.
        "--set",
        "dedup.bands=6",
        "--concurrency",
        "8",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |name: &str| -> String {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("no {name:?} line in:\n{stdout}"))
    };
    assert_eq!(field("fetched"), "300");
    assert_eq!(field("kept / dup title / dup content"), "270 / 0 / 30");
    assert_eq!(field("batch documents"), "200 (160 kept, 40 duplicates)");
    // 3,000 stored, 1,000 checked, every tenth of them a planted copy.
    assert_eq!(field("index stored"), "3000 (memory store), 1000 checked");
    assert_eq!(field("index copies"), "100 / 100 found (100 without bands)");
    assert!(field("index checks/s").contains(" with 6x4 bands, "), "{stdout}");
    for measure in [
        "index checks/s",
        "pages/s",
        "cpu per page",
        "peak RSS",
        "batch docs/s",
        "batch cpu per doc",
    ] {
        let v = field(measure);
        let n: f64 = v.split_whitespace().next().unwrap().parse().unwrap();
        assert!(n > 0.0, "{measure}: {v}");
    }
}
