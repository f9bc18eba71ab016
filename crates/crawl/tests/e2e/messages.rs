//! What the binary says and how it exits (issue 40, items 8-13): how a
//! crawl ended (the last line, `stats.json`, the exit status), the words of
//! its errors (a mistyped setting, a seed that is not a URL, a refused
//! connection, an unreachable Redis), `crawl config`'s names and sources,
//! the log's flags and variables, `crawl revisit`'s summary, the demo's
//! last words, and `crawl check` beside the crawl's own verdict.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::server::{Reply, Server};
use crate::support::{CRAWL, Dirs, gibberish, page, site_crawl, tempdir, wait_for, write_config};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A port where nothing listens (it was free a moment ago).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Three pages that link each other, none alike.
fn small_site() -> Server {
    Server::start(|req| {
        let links: Vec<String> = ["/a", "/b"].iter().map(|s| s.to_string()).collect();
        match req.path.as_str() {
            "/robots.txt" => Reply::status(404),
            "/" => Reply::html(page("Home", &gibberish(1, 200), &links)),
            "/a" => Reply::html(page("A", &gibberish(2, 200), &links)),
            "/b" => Reply::html(page("B", &gibberish(3, 200), &links)),
            _ => Reply::status(404),
        }
    })
}

/// `crawl ARGS` with the log at info, without colours.
fn crawl(args: &[&str]) -> Output {
    Command::new(CRAWL)
        .args(args)
        .env("CRAWL_LOG", "info")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

// Item 8: how it ended.

#[test]
fn a_crawl_that_fetched_nothing_exits_4_and_says_why() {
    let root = tempdir("e2e-messages-nothing-");
    let dirs = site_crawl(
        root.path(),
        &format!("http://127.0.0.1:{}/", closed_port()),
        2,
        "",
    );
    let (status, _) = dirs.run(Duration::from_secs(60));
    let log = dirs.log();
    assert_eq!(status.code(), Some(4), "{log}");
    assert!(
        log.contains("crawl ended (nothing_fetched): every page tried failed (host_unreachable 1"),
        "{log}"
    );
    assert_eq!(dirs.stats()["ended"], "nothing_fetched");
    // The error says why in words, and nothing about a retry the exited
    // process will never make.
    let errors = dirs.errors();
    let e = errors[0]["error"].as_str().unwrap();
    assert!(e.contains("connection refused"), "{e}");
    assert!(
        !e.contains("tried again in") && !e.contains("error sending request"),
        "{e}"
    );
    assert!(!log.contains("error sending request"), "{log}");
}

#[test]
fn a_crawl_says_it_finished_or_reached_max_pages() {
    let site = small_site();
    let root = tempdir("e2e-messages-ended-");
    let dirs = site_crawl(root.path(), &format!("{}/", site.base()), 2, "");
    let (status, _) = dirs.run(Duration::from_secs(60));
    let log = dirs.log();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(
        log.trim_end()
            .ends_with("crawl ended (finished): the frontier is empty"),
        "{log}"
    );
    assert_eq!(dirs.stats()["ended"], "finished");

    let root = tempdir("e2e-messages-max-");
    let dirs = site_crawl(root.path(), &format!("{}/", site.base()), 2, "max_pages = 1");
    let (status, _) = dirs.run(Duration::from_secs(60));
    let log = dirs.log();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(log.contains("crawl ended (max_pages): 1 pages fetched"), "{log}");
    assert_eq!(dirs.stats()["ended"], "max_pages");
}

#[test]
fn a_signal_ends_it_and_pages_waiting_to_retry_are_left_for_the_next_run() {
    // `/flaky` answers 503 for ever: it goes back to the frontier for a
    // later attempt (a minute later by default), and the crawl waits.
    let site = Server::start(|req| match req.path.as_str() {
        "/robots.txt" => Reply::status(404),
        "/" => Reply::html(page("Home", &gibberish(1, 200), &["/flaky".to_string()])),
        "/flaky" => Reply::status(503),
        _ => Reply::status(404),
    });
    let root = tempdir("e2e-messages-signal-");
    let dirs = site_crawl(root.path(), &format!("{}/", site.base()), 2, "");
    let mut child = dirs.spawn();
    // Its fetch retries (2) are over after 3 requests; its requeue is
    // committed just after.
    dirs.wait_until(
        &mut child,
        Duration::from_secs(60),
        "the 503 fetched 3 times",
        || site.counts().get("/flaky").copied().unwrap_or(0) >= 3,
    );
    std::thread::sleep(Duration::from_millis(1000));
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let st = wait_for(&mut child, Duration::from_secs(40)).expect("the crawl stops on SIGTERM");
    let log = dirs.log();
    assert_eq!(st.code(), Some(0), "{log}");
    assert!(log.contains("crawl ended (signal SIGTERM)"), "{log}");
    assert!(
        log.contains("1 URL was queued for a later attempt: left in the frontier for the next run"),
        "{log}"
    );
    let stats = dirs.stats();
    assert_eq!(
        (&stats["ended"], &stats["signal"]),
        (&"signal".into(), &"SIGTERM".into())
    );
}

// Item 9: messages.

#[test]
fn a_mistyped_setting_gets_the_closest_name_in_full() {
    let o = crawl(&["config", "--set", "fetch.per_host_delay_m=0"]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("unknown setting `fetch.per_host_delay_m`: did you mean `fetch.per_host_delay_ms`?"),
        "{e}"
    );
    assert!(!e.contains("expected one of"), "not the table's 26 names: {e}");
    // In a file: the file, the line, the same suggestion.
    let root = tempdir("e2e-messages-typo-");
    let file = root.path().join("c.toml");
    std::fs::write(&file, "[crawl]\nmax_depth = 3\n\n[fetch]\nper_host_delay_m = 0\n").unwrap();
    let o = crawl(&["config", "--config", path(&file)]);
    let e = stderr(&o);
    assert!(
        e.contains("c.toml, line 5: unknown setting `fetch.per_host_delay_m`: did you mean `fetch.per_host_delay_ms`?"),
        "{e}"
    );
    // A mistyped value of a fixed set.
    let o = crawl(&["config", "--set", "crawl.scope=doman"]);
    assert!(
        stderr(&o).contains("`crawl.scope` cannot be \"doman\": did you mean \"domain\"?"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn crawl_config_refuses_what_the_crawl_refuses_with_the_full_name() {
    let o = crawl(&["config", "--set", "dedup.min_similarity=3"]);
    let e = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "`crawl config` accepted it:\n{}",
        stdout(&o)
    );
    assert!(
        e.contains("dedup.min_similarity = 3: must be between 0 and 1"),
        "{e}"
    );
    let root = tempdir("e2e-messages-range-");
    let dirs = site_crawl(root.path(), "http://127.0.0.1:1/", 2, "");
    let o = dirs
        .command()
        .args(["--set", "dedup.min_similarity=3"])
        .output()
        .unwrap();
    assert!(
        stderr(&o).contains("dedup.min_similarity = 3: must be between 0 and 1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn seed_lines_that_are_not_urls_are_named_with_their_line() {
    let site = small_site();
    let root = tempdir("e2e-messages-seeds-");
    let config = write_config(root.path(), 2, "max_pages = 1");
    let seeds = root.path().join("seeds.txt");
    std::fs::write(
        &seeds,
        format!(
            "# comments and blank lines are fine\n\nexample.com\n{0}/a.html extra\n{0}/\n",
            site.base()
        ),
    )
    .unwrap();
    let dirs = Dirs::new(root.path(), &config, &seeds);
    dirs.run_ok(Duration::from_secs(60));
    let log = dirs.log();
    assert!(
        log.contains(
            "seeds.txt:3: `example.com` is not a URL (no scheme): did you mean `http://example.com/`?"
        ),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "seeds.txt:4: `{}/a.html` is followed by `extra`",
            site.base()
        )),
        "{log}"
    );
    assert!(
        !site.counts().contains_key("/a.html%20extra"),
        "{:?}",
        site.counts()
    );
}

#[test]
fn an_unreachable_redis_is_said_once() {
    let root = tempdir("e2e-messages-redis-");
    let dirs = site_crawl(root.path(), "http://127.0.0.1:1/", 2, "");
    let url = format!("redis://127.0.0.1:{}/0", closed_port());
    let o = dirs.command().args(["--redis", &url]).output().unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    let error = e.lines().find(|l| l.starts_with("error: ")).unwrap_or_default();
    assert_eq!(
        error.to_lowercase().matches("connection refused").count(),
        1,
        "{e}"
    );
    assert_eq!(error.matches(&url).count(), 1, "{e}");
}

// Item 10: `crawl config` names and sources.

#[test]
fn crawl_config_prints_todays_names_and_where_set_values_came_from() {
    let o = crawl(&[
        "config",
        "--set",
        "clean.convert_chinese=off",
        "--set",
        "clean.order=[\"fold_width\", \"chinese\", \"whitespace\"]",
    ]);
    let text = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(text.contains("convert_chinese = \"off\"  # --set"), "{text}");
    assert!(
        text.contains("order = [\"fold_width\", \"convert_chinese\", \"fold_whitespace\"]  # --set"),
        "{text}"
    );
    assert!(!text.contains("chinese_variant"), "{text}");
    // The defaults too, and a file under the former name is the file's.
    let o = crawl(&["config"]);
    assert!(stdout(&o).contains("\"fold_width\", \"nfkc\", \"convert_chinese\""));
    let root = tempdir("e2e-messages-config-");
    let file = root.path().join("c.toml");
    std::fs::write(&file, "[clean]\nchinese_variant = \"off\"\n").unwrap();
    let o = crawl(&["config", "--config", path(&file)]);
    assert!(
        stdout(&o).contains("convert_chinese = \"off\"  # file"),
        "{}",
        stdout(&o)
    );
    // What it prints reads back as the same settings.
    let printed = root.path().join("printed.toml");
    std::fs::write(&printed, stdout(&o)).unwrap();
    let back = crawl(&["config", "--config", path(&printed)]);
    assert!(back.status.success(), "{}", stderr(&back));
    assert!(stdout(&back).contains("convert_chinese = \"off\"  # file"));
}

// Item 11: logging and `crawl revisit`.

fn log_run(dirs: &Dirs, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = dirs.command();
    c.env_remove("CRAWL_LOG").env_remove("RUST_LOG").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn log_level_flag_then_crawl_log_then_rust_log() {
    let root = tempdir("e2e-messages-log-");
    let dirs = site_crawl(
        root.path(),
        &format!("http://127.0.0.1:{}/", closed_port()),
        2,
        "",
    );
    let info = |o: &Output| stderr(o).contains(" INFO ");
    let debug = |o: &Output| stderr(o).contains(" DEBUG ");
    // RUST_LOG alone is honoured.
    let o = log_run(&dirs, &[("RUST_LOG", "warn")], &["--fresh"]);
    assert!(!info(&o), "{}", stderr(&o));
    let o = log_run(&dirs, &[("RUST_LOG", "debug")], &["--fresh"]);
    assert!(debug(&o), "{}", stderr(&o));
    // CRAWL_LOG over RUST_LOG, the flag over both.
    let o = log_run(
        &dirs,
        &[("RUST_LOG", "debug"), ("CRAWL_LOG", "warn")],
        &["--fresh"],
    );
    assert!(!info(&o) && !debug(&o), "{}", stderr(&o));
    let o = log_run(
        &dirs,
        &[("RUST_LOG", "warn"), ("CRAWL_LOG", "warn")],
        &["--fresh", "--log-level", "info"],
    );
    assert!(info(&o) && !debug(&o), "{}", stderr(&o));
    // --log-file takes the log; the summary stays on stderr.
    let file = root.path().join("crawl.log");
    let o = log_run(&dirs, &[], &["--fresh", "--log-file", path(&file)]);
    let logged = std::fs::read_to_string(&file).unwrap();
    assert!(
        logged.contains(" INFO ") && logged.contains("seeds loaded"),
        "{logged}"
    );
    assert!(!info(&o), "{}", stderr(&o));
    assert!(stderr(&o).contains("crawl ended"), "{}", stderr(&o));
    // A level that is not one.
    let o = log_run(&dirs, &[], &["--log-level", "loud"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--log-level \"loud\" is not a log level"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn revisit_with_nothing_due_says_when_and_counts_only_its_revisits() {
    let site = small_site();
    let root = tempdir("e2e-messages-revisit-");
    let dirs = site_crawl(root.path(), &format!("{}/", site.base()), 2, "");
    dirs.run_ok(Duration::from_secs(60));
    let o = dirs.revisit(false);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("no page is due for a revisit: the next is due at ")
            && e.contains("`crawl revisit --all` visits every page now"),
        "{e}"
    );
    assert!(
        e.contains("revisited 0: not_modified 0, same 0, similar 0, changed 0, gone 0"),
        "{e}"
    );
    assert!(!e.contains("\nfetched 3  kept 3"), "not the crawl's totals: {e}");
    let o = dirs.revisit(true);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("revisited 3: not_modified 0, same 3, similar 0, changed 0, gone 0"),
        "{e}"
    );
}

// Item 12: the demo.

#[test]
fn the_demo_ends_with_where_things_are_and_no_politeness_warning() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: the demo serves its site with python3");
        return;
    }
    let root = tempdir("e2e-messages-demo-");
    let out = root.path().join("demo");
    let o = Command::new("bash")
        .arg(crate::support::workspace().join("scripts/demo.sh"))
        .env("CRAWL", CRAWL)
        .env("DEMO_OUT", &out)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let (text, e) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{text}\n{e}");
    assert!(!e.contains("1 host: at most"), "{e}");
    assert!(e.contains("crawl ended (finished)"), "{e}");
    for want in [
        format!("outputs of the crawl:  {}/", out.display()),
        format!("the binary to run:     {CRAWL}"),
        "crawl your own site:".to_string(),
        "--seeds seeds.txt --out out/mysite".to_string(),
    ] {
        assert!(text.contains(&want), "{want:?} missing:\n{text}");
    }
}

// Item 13: `crawl check` beside the crawl's own verdict.

#[test]
fn check_shows_the_recorded_verdict_and_why_it_differs() {
    // `/copy` is `/a` during the crawl; the one dropped is edited after it.
    let edited: Arc<Mutex<String>> = Arc::default();
    let flag = edited.clone();
    let site = Server::start(move |req| {
        let body = gibberish(2, 200);
        let body = if *flag.lock().unwrap() == req.path {
            format!("{body} {}", gibberish(9, 12))
        } else {
            body
        };
        match req.path.as_str() {
            "/robots.txt" => Reply::status(404),
            "/" => Reply::html(page(
                "Home",
                &gibberish(1, 200),
                &["/a".to_string(), "/copy".to_string()],
            )),
            "/a" | "/copy" => Reply::html(page("A", &body, &[])),
            _ => Reply::status(404),
        }
    });
    let root = tempdir("e2e-messages-check-");
    let dirs = site_crawl(root.path(), &format!("{}/", site.base()), 1, "");
    dirs.run_ok(Duration::from_secs(60));
    let dups = dirs.duplicates();
    assert_eq!(dups.len(), 1, "{dups:?}");
    let (copy, of) = (
        dups[0]["url"].as_str().unwrap(),
        dups[0]["duplicate_of"].as_str().unwrap(),
    );
    *edited.lock().unwrap() = crate::support::path_of(copy);
    let o = Command::new(CRAWL)
        .args(["check", copy, "--config", path(&dirs.config)])
        .args(["--out", path(&dirs.out), "--data-dir", path(&dirs.data)])
        .output()
        .unwrap();
    let text = stdout(&o);
    assert!(
        text.contains(&format!("recorded      duplicate of {of} ("))
            && text.contains("distance 0, resemblance 1.000)"),
        "{text}\n{}",
        stderr(&o)
    );
    assert!(
        text.contains("differs       the crawl judged this page once"),
        "{text}"
    );
    assert!(text.contains("features then"), "{text}");
}

/// The case: a copy judged before its host's template was learnt
/// (an exact copy, distance 0), checked after: `crawl check` judges it
/// without the template, against a partner signed with it, and says so.
#[test]
fn check_says_a_template_learnt_since_changes_the_text_judged() {
    const BOILER: &str = "Share this story with your friends and subscribe to the weekly letter for more";
    let article = |title: &str, body: &str| {
        format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>\
             <article><h1>{title}</h1><p>{body}</p><p>{BOILER}</p></article></body></html>"
        )
    };
    let site = Server::start(move |req| {
        let p = req.path.as_str();
        match p {
            "/robots.txt" => Reply::status(404),
            "/" => {
                let mut links = String::new();
                for l in ["/a", "/copy"]
                    .iter()
                    .map(|s| s.to_string())
                    .chain((0..10).map(|i| format!("/p{i}")))
                {
                    links.push_str(&format!("<a href=\"{l}\">{l}</a> "));
                }
                Reply::html(format!(
                    "<html><body><nav>{links}</nav>{}</body></html>",
                    article("Home", &gibberish(1, 150))
                ))
            }
            "/a" | "/copy" => Reply::html(article("Story", &gibberish(2, 60))),
            _ if p.starts_with("/p") => Reply::html(article(
                p,
                &gibberish(100 + p.len() as u64 * 7 + p.as_bytes()[2] as u64, 150),
            )),
            _ => Reply::status(404),
        }
    });
    let root = tempdir("e2e-messages-template-");
    let dirs = site_crawl(root.path(), &format!("{}/", site.base()), 1, "");
    dirs.run_ok(Duration::from_secs(60));
    let dups = dirs.duplicates();
    let copy = dups
        .iter()
        .find(|d| d["url"].as_str().unwrap().ends_with("/copy") || d["url"].as_str().unwrap().ends_with("/a"))
        .unwrap_or_else(|| panic!("no copy dropped: {dups:?}"));
    let url = copy["url"].as_str().unwrap();
    let o = Command::new(CRAWL)
        .args(["check", url, "--config", path(&dirs.config)])
        .args(["--out", path(&dirs.out), "--data-dir", path(&dirs.data)])
        .output()
        .unwrap();
    let text = stdout(&o);
    assert!(text.contains("recorded      duplicate of "), "{text}");
    assert!(text.contains("distance 0, resemblance 1.000)"), "{text}");
    assert!(
        text.contains("differs       a template learnt for 127.0.0.1 removes 1 line from this page now"),
        "{text}"
    );
}

/// A worker of a shared crawl is judged on the whole crawl: one whose
/// only page failed while another fetched the site exits 0 (exit status 4
/// would fail a script running the workers); a shared crawl of which
/// nothing could be fetched ends every worker with 4.
#[test]
fn a_shared_worker_whose_own_pages_failed_is_judged_on_the_whole_crawl() {
    let Some(url) = crate::redis::redis_url("a_shared_worker_whose_own_pages_failed") else {
        return;
    };
    let server = Server::start(|req: &crate::support::server::Request| match req.path.as_str() {
        "/" => Reply::html(page("Home", &gibberish(41, 60), &[])),
        _ => Reply::status(404),
    });
    let dir = tempdir("e2e-shared-judged-");
    let ns = crate::redis::namespace("judged");
    let s = crate::redis::Shared::new(dir.path(), &format!("{}/", server.base()), &url, &ns, 10_000);
    let mut first = vec![s.spawn("j1")];
    s.wait_ok(&mut first, &["j1"]);
    // A second worker joins the finished crawl with a seed that is gone:
    // everything it fetches fails, the crawl fetched its site.
    std::fs::write(&s.seeds, format!("{}/gone\n", server.base())).unwrap();
    let mut second = vec![s.spawn("j2")];
    s.wait_ok(&mut second, &["j1", "j2"]);
    let log = s.logs(&["j2"]);
    assert!(log.contains("fetched 1 ") && log.contains("errors 1"), "{log}");
    assert!(log.contains("crawl ended (finished)"), "{log}");
    // Nothing of a shared crawl fetched: status 4.
    let dir = tempdir("e2e-shared-nothing-");
    let ns = crate::redis::namespace("nothing");
    let s = crate::redis::Shared::new(dir.path(), &format!("{}/gone", server.base()), &url, &ns, 10_000);
    let mut only = s.spawn("n1");
    let status = wait_for(&mut only, Duration::from_secs(40)).expect("the worker ends");
    assert_eq!(status.code(), Some(4), "{}", s.logs(&["n1"]));
}
