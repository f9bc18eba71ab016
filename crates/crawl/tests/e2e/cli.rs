//! The command line as a user meets it: `--set`, `crawl config`,
//! `--version`, completions and the one-host hint, through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use crate::support::CRAWL;
use crate::support::server::{Reply, Request, Server};

fn crawl(args: &[&str]) -> Output {
    Command::new(CRAWL)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn config_prints_effective_settings_with_their_source() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "[crawl]\nmax_depth = 2\nmax_pages = 50\n").unwrap();
    let o = crawl(&[
        "config",
        "--config",
        file.to_str().unwrap(),
        "--set",
        "crawl.scope=domain",
        "--set",
        "crawl.max_pages=70",
        "--max-pages",
        "3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for line in [
        "max_depth = 2  # file",
        "scope = \"domain\"  # --set",
        "max_pages = 3  # flag",
        "per_host_delay_ms = 250  # default",
    ] {
        assert!(out.lines().any(|l| l == line), "no line `{line}` in:\n{out}");
    }
    // The output is a settings file: fed back, it prints the same values.
    let again = dir.path().join("effective.toml");
    std::fs::write(&again, &out).unwrap();
    let o2 = crawl(&["config", "--config", again.to_str().unwrap()]);
    assert!(o2.status.success(), "{}", stderr(&o2));
    let strip = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split("  # ").next().unwrap().to_string())
            .collect()
    };
    assert_eq!(strip(&stdout(&o2)), strip(&out));
}

#[test]
fn config_default_prints_the_commented_file() {
    let o = crawl(&["config", "--default"]);
    assert!(o.status.success());
    let bundled = std::fs::read_to_string(crate::support::workspace().join("config/crawl.toml")).unwrap();
    assert_eq!(stdout(&o), bundled);
}

#[test]
fn a_wrong_set_names_the_key_and_fails_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("docs.jsonl");
    std::fs::write(&input, "{\"url\":\"http://a.test/\",\"text\":\"x\"}\n").unwrap();
    let out = dir.path().join("out");
    for args in [
        vec!["config", "--set", "fetch.per_host_delay_ms=fast"],
        vec![
            "dedup",
            "--input",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--set",
            "fetch.per_host_delay_ms=fast",
        ],
        vec![
            "--seeds",
            input.to_str().unwrap(),
            "--set",
            "fetch.per_host_delay_ms=fast",
        ],
    ] {
        let o = crawl(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr(&o);
        assert!(
            e.contains("--set fetch.per_host_delay_ms=fast")
                && e.contains("an integer")
                && e.contains("default: 250"),
            "{args:?}: {e}"
        );
    }
    assert!(!out.exists(), "a refused run writes nothing");
    let o = crawl(&["config", "--set", "nonsense"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("expected KEY=VALUE"), "{}", stderr(&o));
}

#[test]
fn version_names_the_store_format_and_completions_cover_the_flags() {
    let o = crawl(&["--version"]);
    assert!(o.status.success());
    let v = stdout(&o);
    assert!(
        v.contains(&format!("store format {}", simcrawl_dedup::FORMAT_VERSION)),
        "{v}"
    );
    for shell in ["bash", "zsh", "fish"] {
        let o = crawl(&["completions", shell]);
        assert!(o.status.success(), "{shell}");
        let script = stdout(&o);
        assert!(script.contains("--set") && script.contains("report"), "{shell}");
    }
    let o = crawl(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn one_host_crawl_logs_its_politeness_and_the_rate_bound() {
    let site = Server::start(|_: &Request| {
        Reply::html("<html><title>t</title><body><p>only page</p></body></html>")
    });
    let dir = tempfile::tempdir().unwrap();
    let seeds = dir.path().join("seeds.txt");
    std::fs::write(&seeds, format!("{}/\n", site.base())).unwrap();
    let args = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "--seeds",
            seeds.to_str().unwrap(),
            "--out",
            dir.path().join("out").to_str().unwrap(),
            "--data-dir",
            dir.path().join("data").to_str().unwrap(),
            "--fresh",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let o = Command::new(CRAWL)
        .args(args(&[]))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("1 host: at most 4 pages/s with fetch.per_host_delay_ms=250"),
        "{e}"
    );
    assert!(
        e.contains("politeness: a request starts at most every 250 ms per host"),
        "{e}"
    );
    let o = Command::new(CRAWL)
        .args(args(&["--set", "fetch.per_host_delay_ms=0"]))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(!e.contains("1 host: at most"), "{e}");
    assert!(e.contains("every 0 ms per host"), "{e}");
}

/// `--scheduling` takes `batch` (the default) or `normal` on every command,
/// and a value it does not know is refused naming the flag and both values.
#[test]
fn scheduling_is_batch_or_normal_on_every_command() {
    for value in ["batch", "normal"] {
        let o = crawl(&["config", "--default", "--scheduling", value]);
        assert!(o.status.success(), "--scheduling {value}: {}", stderr(&o));
        assert!(stdout(&o).contains("[crawl]"), "{}", stdout(&o));
    }
    let o = crawl(&["config", "--default", "--scheduling", "fifo"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("invalid value 'fifo' for '--scheduling"), "{err}");
    assert!(err.contains("batch") && err.contains("normal"), "{err}");
}
