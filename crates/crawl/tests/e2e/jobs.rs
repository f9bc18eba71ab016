//! End-to-end tests of what a data directory holds: one crawl (its job),
//! resumed only with its own seeds and settings, refused otherwise with
//! the ways forward, and read by `crawl status` (issue 40, items 4 to 7).

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

use crate::support::server::{Reply, Request, Server};
use crate::support::{Dirs, field, gibberish, page, path_of, site_crawl};

fn tempdir() -> tempfile::TempDir {
    crate::support::tempdir("e2e-jobs-")
}

/// `/` links to `/a` and `/b`; each answer takes `delay_ms`; `text`
/// picks the texts (sites with another are not duplicates).
fn three_pages(delay_ms: u64, text: u64) -> Server {
    Server::start(move |req: &Request| {
        std::thread::sleep(Duration::from_millis(delay_ms));
        match req.path.as_str() {
            "/" => Reply::html(page(
                "Home",
                &gibberish(text, 60),
                &["/a".to_string(), "/b".to_string()],
            )),
            "/a" => Reply::html(page("A", &gibberish(text + 1, 60), &[])),
            "/b" => Reply::html(page("B", &gibberish(text + 2, 60), &[])),
            _ => Reply::status(404),
        }
    })
}

/// Runs `c` to the end; returns its output.
fn output(mut c: Command) -> Output {
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn kept_paths(dirs: &Dirs) -> Vec<String> {
    let mut v: Vec<String> = dirs.kept().iter().map(|k| path_of(field(k, "url"))).collect();
    v.sort();
    v
}

fn kept_bytes(out: &Path) -> Vec<u8> {
    std::fs::read(out.join("kept.jsonl")).unwrap_or_default()
}

/// `crawl status --data-dir D [--json]`.
fn status(data: &Path, json: bool) -> Output {
    let mut c = Command::new(crate::support::CRAWL);
    c.arg("status").arg("--data-dir").arg(data);
    if json {
        c.arg("--json");
    }
    c.env("NO_COLOR", "1").output().unwrap()
}

fn status_json(data: &Path) -> Value {
    let o = status(data, true);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Item 4: a finished crawl run again says it is finished, with its
/// counts, fetches nothing and appends nothing (it used to log "resuming
/// an interrupted crawl").
#[test]
fn a_finished_crawl_run_again_says_so_and_does_nothing() {
    let server = three_pages(0, 21);
    let dir = tempdir();
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 2, "");
    dirs.run_ok(Duration::from_secs(60));
    assert_eq!(kept_paths(&dirs), ["/", "/a", "/b"]);
    let before = kept_bytes(&dirs.out);
    let requests: u32 = server.counts().values().sum();

    let o = output(dirs.command());
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("is finished: fetched 3, kept 3, dropped 0") && err.contains("Nothing to do"),
        "{err}"
    );
    assert!(err.contains("crawl revisit") && err.contains("--fresh"), "{err}");
    assert!(!err.contains("resuming"), "{err}");
    assert_eq!(kept_bytes(&dirs.out), before);
    assert_eq!(server.counts().values().sum::<u32>(), requests, "fetched again");
}

/// Item 4: other seeds in the data directory of a crawl are refused (non-zero
/// exit, the three ways forward); `--add-seeds` adds them to the crawl, which
/// goes on with both sites. They used to be appended to the old outputs as a
/// "resumed" crawl.
#[test]
fn other_seeds_are_refused_and_add_seeds_adds_them_to_the_crawl() {
    let first = three_pages(0, 21);
    let second = three_pages(0, 31);
    let dir = tempdir();
    let dirs = site_crawl(dir.path(), &format!("{}/", first.base()), 2, "");
    dirs.run_ok(Duration::from_secs(60));
    let before = kept_bytes(&dirs.out);

    let other = dir.path().join("other-seeds.txt");
    std::fs::write(&other, format!("{}/\n", second.base())).unwrap();
    let others = Dirs {
        seeds: other.clone(),
        ..dirs.clone()
    };
    let o = output(others.command());
    let err = stderr(&o);
    assert!(!o.status.success(), "other seeds accepted:\n{err}");
    assert!(err.contains("holds another crawl"), "{err}");
    assert!(
        err.contains(&format!(
            "1 of these not among its seeds (e.g. {}/)",
            second.base()
        )),
        "{err}"
    );
    for way in ["--add-seeds", "--fresh", "--data-dir"] {
        assert!(err.contains(way), "{way} not offered:\n{err}");
    }
    assert_eq!(kept_bytes(&dirs.out), before, "outputs changed");
    assert!(second.counts().is_empty(), "the other site was fetched");

    let mut c = others.command();
    c.arg("--add-seeds");
    let o = output(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let kept = dirs.kept();
    assert_eq!(kept.len(), 6, "{kept:?}");
    assert!(kept_bytes(&dirs.out).starts_with(&before));
    // Both sites are the crawl now: the first seeds file alone is not it.
    let o = output(dirs.command());
    assert!(
        !o.status.success() && stderr(&o).contains("holds another crawl"),
        "{}",
        stderr(&o)
    );
}

/// Item 4: a crawl stopped at its page budget says so when run again with
/// the same budget, and a higher one continues it; a changed setting that
/// makes the crawl (scope) is refused by name.
#[test]
fn the_page_budget_continues_and_a_changed_scope_is_refused_by_name() {
    let server = three_pages(0, 21);
    let dir = tempdir();
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 1, "max_pages = 1");
    dirs.run_ok(Duration::from_secs(60));
    assert_eq!(dirs.kept().len(), 1);
    let o = output(dirs.command());
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("stopped at its page budget") && err.contains("--max-pages"),
        "{err}"
    );

    let mut c = dirs.command();
    c.args(["--set", "crawl.scope=domain", "--max-pages", "10"]);
    let o = output(c);
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("crawl.scope: \"host\" there, \"domain\" now")
            && err.contains("put the old values back"),
        "{err}"
    );

    let mut c = dirs.command();
    c.args(["--max-pages", "10"]);
    let o = output(c);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("continuing a crawl that stopped at its page budget"),
        "{err}"
    );
    assert_eq!(kept_paths(&dirs), ["/", "/a", "/b"]);
}

/// Item 5: `--out` pointing at a new folder for an existing data directory
/// names where that crawl's outputs live (it used to say "output
/// .../kept.jsonl is shorter (0 bytes) than its last checkpoint ... changed
/// outside the crawl").
#[test]
fn a_new_out_for_an_existing_data_dir_names_where_its_outputs_live() {
    let server = three_pages(0, 21);
    let dir = tempdir();
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 1, "max_pages = 1");
    dirs.run_ok(Duration::from_secs(60));
    let o20 = dir.path().join("o20");
    let mut c = Dirs {
        out: o20.clone(),
        ..dirs.clone()
    }
    .command();
    c.args(["--max-pages", "10"]);
    let o = output(c);
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(!err.contains("shorter"), "{err}");
    assert!(
        err.contains(&format!(
            "live in {}, not in {}",
            dirs.out.display(),
            o20.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("--out {}", dirs.out.display())) && err.contains("--fresh"),
        "{err}"
    );
    // The old outputs, moved with the crawl, are found there.
    let moved = dir.path().join("moved");
    std::fs::rename(&dirs.out, &moved).unwrap();
    let mut c = Dirs {
        out: moved.clone(),
        ..dirs.clone()
    }
    .command();
    c.args(["--max-pages", "10"]);
    let o = output(c);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(crate::support::read_jsonl(&moved.join("kept.jsonl")).len(), 3);
}

/// Item 6: a changed `[clean]` setting, or `dedup.bits`, names the keys
/// that differ and the ways forward (they used to print digests and hash
/// names: `clean: stored 4c5784..., requested 7c2332...`).
#[test]
fn changed_index_settings_are_named_by_their_keys() {
    let server = three_pages(0, 21);
    let dir = tempdir();
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 1, "max_pages = 1");
    dirs.run_ok(Duration::from_secs(60));

    let mut c = dirs.command();
    c.args(["--set", "clean.lowercase=false"]);
    let o = output(c);
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("clean.lowercase: true there, false now"), "{err}");
    assert!(
        err.contains("put the old values back") && err.contains("--fresh"),
        "{err}"
    );
    assert!(!err.contains("4c5784"), "{err}");

    let mut c = dirs.command();
    c.args(["--set", "dedup.bits=128"]);
    let o = output(c);
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("dedup.bits: 64 there, 128 now"), "{err}");
    assert!(!err.contains("fnv") && !err.contains("hash:"), "{err}");
}

/// Item 7: `crawl status` reads a local crawl without changing a byte of
/// it: how it ended, frontier, counters, revisits; `--json`; and a running
/// crawl is named as such.
#[test]
fn crawl_status_reports_a_local_crawl_read_only() {
    let server = three_pages(0, 21);
    let dir = tempdir();
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 1, "max_pages = 1");
    dirs.run_ok(Duration::from_secs(60));
    let db = dirs.data.join("index.redb");
    let bytes = std::fs::read(&db).unwrap();
    let s = status_json(&dirs.data);
    assert_eq!(s["ended"], "max_pages", "{s}");
    assert_eq!(s["fetched"], 1, "{s}");
    assert_eq!(s["kept"], 1, "{s}");
    // `/a`, `/b` (and the host's sitemap) are left.
    assert!(s["frontier"].as_u64() >= Some(2), "{s}");
    assert_eq!(s["out_dir"].as_str(), Some(dirs.out.to_str().unwrap()), "{s}");
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "status changed the state");

    let mut c = dirs.command();
    c.args(["--max-pages", "10"]);
    assert!(output(c).status.success());
    let s = status_json(&dirs.data);
    assert_eq!(s["ended"], "finished", "{s}");
    assert_eq!(
        (s["fetched"].as_u64(), s["frontier"].as_u64()),
        (Some(3), Some(0)),
        "{s}"
    );
    assert_eq!(s["revisits_due"], 0, "{s}");
    assert!(s["next_revisit_at"].is_string(), "{s}");
    let o = status(&dirs.data, false);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        text.contains(": finished") && text.contains("fetched 3  kept 3"),
        "{text}"
    );
    assert!(
        text.contains("frontier: 0 waiting") && text.contains("next due at"),
        "{text}"
    );

    // While a crawl runs (each page takes a second), status says so.
    let slow = three_pages(1000, 21);
    let dir2 = tempdir();
    let running = site_crawl(dir2.path(), &format!("{}/", slow.base()), 1, "");
    let mut child = running.spawn();
    running.wait_until(&mut child, Duration::from_secs(30), "the state open", || {
        running.data.join("index.redb").exists() && running.log().contains("seeds loaded")
    });
    let o = status(&running.data, false);
    let _ = child.kill();
    let _ = child.wait();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("a crawl is running on"), "{}", stderr(&o));
}
