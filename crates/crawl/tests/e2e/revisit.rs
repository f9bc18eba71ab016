//! Revisits against a real nginx (ETag and Last-Modified as it sends them,
//! 304 answers to conditional requests): `crawl revisit --all` after the
//! site was edited, and `crawl --forever` through a kill -9.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Dirs, field, gibberish, page, path_of, read_jsonl, site_crawl, wait_for};

/// nginx serving `root` on a free loopback port, stopped when dropped.
pub(crate) struct Nginx {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Nginx {
    /// `None` (the test says it skips) where nginx is not installed.
    pub(crate) fn start(root: &Path, dir: &Path) -> Option<Nginx> {
        let bin = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).exists())?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        let d = dir.display();
        let conf = format!(
            "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 64; }}\n\
             http {{\n  log_format cond '$request_uri $status \"$http_if_none_match\" \"$http_if_modified_since\"';\n\
             access_log {d}/access.log cond;\n  client_body_temp_path {d}/tmp;\n  \
             default_type text/html;\n  {}server {{\n    listen 127.0.0.1:{port};\n    root {};\n  }}\n}}\n",
            // Content types as a real site sends them (.rss, .xml, .gz).
            if Path::new("/etc/nginx/mime.types").exists() {
                "include /etc/nginx/mime.types;\n  "
            } else {
                ""
            },
            root.display()
        );
        // As root, the workers would run as nobody, who cannot read a test's
        // private directory.
        let conf = if unsafe_is_root() {
            format!("user root;\n{conf}")
        } else {
            conf
        };
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let child = Command::new(bin)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-p")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let n = Nginx {
            child,
            port,
            dir: dir.to_path_buf(),
        };
        let t0 = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "nginx did not start: {}",
                std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(n)
    }

    pub(crate) fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The access log: (path, status, If-None-Match sent).
    pub(crate) fn log(&self) -> Vec<(String, u16, String)> {
        std::fs::read_to_string(self.dir.join("access.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let mut it = l.splitn(3, ' ');
                let path = it.next()?.to_string();
                let status = it.next()?.parse().ok()?;
                Some((path, status, it.next()?.to_string()))
            })
            .collect()
    }
}

/// A temporary directory whose empty `site/` folder nginx serves: the
/// directory, the site's root (to write pages into; nginx reads them at
/// each request) and the server. `None`, after saying the test skips,
/// where nginx is not installed.
pub(crate) fn nginx_site(prefix: &str) -> Option<(tempfile::TempDir, PathBuf, Nginx)> {
    let dir = crate::support::tempdir(prefix);
    let root = dir.path().join("site");
    std::fs::create_dir_all(&root).unwrap();
    let Some(nginx) = Nginx::start(&root, &dir.path().join("nginx")) else {
        eprintln!("SKIPPED: nginx is not installed (scripts/install-deps.sh installs it)");
        return None;
    };
    Some((dir, root, nginx))
}

impl Drop for Nginx {
    /// One process (`master_process off`): killing it leaves no worker
    /// behind (with a master, SIGKILL orphaned its workers, which kept
    /// running after the tests).
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether this process runs as root (nginx's `user` directive).
fn unsafe_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// A crawl that never ends by itself: killed when the test ends, even
/// when it fails.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn write(root: &Path, name: &str, html: &str) {
    std::fs::write(root.join(name), html).unwrap();
}

fn article(seed: u64) -> String {
    gibberish(seed, 200)
}

/// index -> a, b, c, d; c -> e, a copy of c with a line of its own.
fn build_site(root: &Path) {
    let links: Vec<String> = ["a.html", "b.html", "c.html", "d.html"]
        .iter()
        .map(|s| format!("/{s}"))
        .collect();
    write(root, "index.html", &page("Home", &article(1), &links));
    write(root, "a.html", &page("Story A", &article(2), &[]));
    write(root, "b.html", &page("Story B", &article(3), &[]));
    write(
        root,
        "c.html",
        &page("Story C", &article(4), &["/e.html".to_string()]),
    );
    write(root, "d.html", &page("Story D", &article(5), &[]));
    write(
        root,
        "e.html",
        &page(
            "Story C",
            &format!("{} reposted", article(4)),
            &["/e.html".to_string()],
        ),
    );
}

fn changes(dirs: &Dirs) -> Vec<Value> {
    read_jsonl(&dirs.out.join("changes.jsonl"))
}

/// The last verdict line of each page path in kept.jsonl and
/// duplicates.jsonl (file order: a revisit appends).
fn verdicts(dirs: &Dirs) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for (file, what) in [("kept.jsonl", "kept"), ("duplicates.jsonl", "duplicate")] {
        for v in read_jsonl(&dirs.out.join(file)) {
            let at = v.get("fetched_at").and_then(Value::as_u64).unwrap_or(0);
            m.entry(path_of(field(&v, "url")))
                .or_insert_with(Vec::new)
                .push((at, what.to_string()));
        }
    }
    m.into_iter()
        .map(|(k, mut v)| {
            v.sort();
            (k, v.last().map(|x| x.1.clone()).unwrap_or_default())
        })
        .collect()
}

#[test]
fn a_revisit_after_edits_tells_not_modified_similar_changed_and_gone() {
    let Some((dir, root, nginx)) = nginx_site("revisit") else {
        return;
    };
    build_site(&root);
    let dirs = site_crawl(dir.path(), &format!("{}/index.html", nginx.base()), 2, "");
    dirs.run_ok(Duration::from_secs(60));
    let first = verdicts(&dirs);
    assert_eq!(first["/c.html"], "kept", "{first:?}");
    assert_eq!(first["/e.html"], "duplicate", "{first:?}");

    // The edits: b gets one word more, c is rewritten, d is deleted; a
    // and the index are untouched.
    std::thread::sleep(Duration::from_millis(1100)); // a new Last-Modified second
    write(
        &root,
        "b.html",
        &page("Story B", &format!("{} updated", article(3)), &[]),
    );
    write(
        &root,
        "c.html",
        &page("Story C", &article(40), &["/e.html".to_string()]),
    );
    std::fs::remove_file(root.join("d.html")).unwrap();

    let out = dirs.revisit(true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ch: BTreeMap<String, (String, Option<String>)> = changes(&dirs)
        .iter()
        .map(|v| {
            (
                path_of(field(v, "url")),
                (
                    field(v, "status").to_string(),
                    v.get("verdict").and_then(Value::as_str).map(str::to_string),
                ),
            )
        })
        .collect();
    let status = |p: &str| ch.get(p).map(|c| c.0.as_str()).unwrap_or("none");
    assert_eq!(status("/a.html"), "not_modified", "{ch:?}");
    assert_eq!(status("/index.html"), "not_modified", "{ch:?}");
    assert_eq!(status("/b.html"), "similar", "{ch:?}");
    assert_eq!(status("/c.html"), "changed", "{ch:?}");
    assert_eq!(status("/d.html"), "gone", "{ch:?}");
    // The copy of c's old text is judged again, and kept: its original
    // changed, so it is the only page with that text now.
    assert_eq!(ch["/e.html"].1.as_deref(), Some("kept"), "{ch:?}");
    let now = verdicts(&dirs);
    assert_eq!(now["/c.html"], "kept");
    assert_eq!(now["/e.html"], "kept");
    // Conditional requests went out, and nginx answered 304 to the
    // untouched pages.
    let log = nginx.log();
    let revisit_a: Vec<_> = log.iter().filter(|(p, _, _)| p == "/a.html").collect();
    assert_eq!(revisit_a.len(), 2, "{log:?}");
    assert_eq!(revisit_a[1].1, 304, "{log:?}");
    // nginx logs the header it got ("-": none).
    assert!(
        !revisit_a[1].2.starts_with("\"-\""),
        "If-None-Match sent: {log:?}"
    );
    assert!(revisit_a[0].2.starts_with("\"-\""), "{log:?}");

    // The index followed: c's old text is e's now (a page with it is a
    // copy of e), c's new text is c's, d's is nobody's.
    write(&root, "f.html", &page("Story F", &article(4), &[]));
    write(&root, "g.html", &page("Story G", &article(5), &[]));
    let links: Vec<String> = ["a.html", "b.html", "c.html", "f.html", "g.html"]
        .iter()
        .map(|s| format!("/{s}"))
        .collect();
    std::thread::sleep(Duration::from_millis(1100));
    write(&root, "index.html", &page("Home", &article(1), &links));
    let out = dirs.revisit(true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dups: BTreeMap<String, String> = dirs
        .duplicates()
        .iter()
        .map(|d| (path_of(field(d, "url")), path_of(field(d, "duplicate_of"))))
        .collect();
    assert_eq!(
        dups.get("/f.html").map(String::as_str),
        Some("/e.html"),
        "{dups:?}"
    );
    let now = verdicts(&dirs);
    assert_eq!(now["/g.html"], "kept", "d's text left the index with d: {now:?}");
    let st = dirs.stats();
    assert!(
        st["gone"].as_u64() == Some(1) && st["rejudged"].as_u64() >= Some(1),
        "{st}"
    );
}

#[test]
fn a_forever_crawl_revisits_due_pages_and_survives_kill9() {
    let Some((dir, root, nginx)) = nginx_site("revisit") else {
        return;
    };
    build_site(&root);
    let extra = "\n[revisit]\ndefault_interval_s = 1\nmin_interval_s = 1\nmax_interval_s = 2\n";
    let dirs = site_crawl(dir.path(), &format!("{}/index.html", nginx.base()), 2, extra);
    let mut cmd = dirs.command();
    cmd.arg("--forever");
    let spawn = |cmd: &mut Command| {
        let err = std::fs::File::options()
            .create(true)
            .append(true)
            .open(&dirs.stderr)
            .unwrap();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap()
    };
    let wait_changes = |n: usize, child: &mut Child| {
        dirs.wait_until(child, Duration::from_secs(60), &format!("{n} revisits"), || {
            changes(&dirs).len() >= n
        });
    };
    let mut child = Reaped(spawn(&mut cmd));
    let child = &mut child.0;
    // Every page is due a second after its fetch: the first revisits come.
    wait_changes(6, child);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // An edit while it is down: found on a revisit after the resume (c
    // was never edited before, so any `changed` line of c is of this run).
    write(
        &root,
        "c.html",
        &page("Story C", &article(41), &["/e.html".to_string()]),
    );
    let mut again = Reaped(spawn(&mut cmd));
    let child = &mut again.0;
    let t0 = Instant::now();
    loop {
        let ch = changes(&dirs);
        if ch
            .iter()
            .any(|v| path_of(field(v, "url")) == "/c.html" && field(v, "status") == "changed")
        {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "exited: {}", dirs.log());
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "c's change not seen: {}",
            dirs.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SIGTERM ends a forever crawl cleanly.
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let st = wait_for(child, Duration::from_secs(30)).expect("--forever ignored SIGTERM");
    assert!(st.success(), "{st}: {}", dirs.log());
    assert!(dirs.log().contains("resuming"), "{}", dirs.log());
    // Every page once in the first crawl's verdicts, then only judged
    // again when changed: c twice, the untouched a once.
    let kept = dirs.kept();
    let count = |p: &str| kept.iter().filter(|v| path_of(field(v, "url")) == p).count();
    assert_eq!(count("/a.html"), 1, "{kept:?}");
    assert!(count("/c.html") >= 2, "{kept:?}");
    let st = dirs.stats();
    assert!(st["not_modified"].as_u64() >= Some(3), "{st}");
}

/// `crawl check URL --json`: the verdict kind and the page it names.
fn check_verdict(dirs: &Dirs, url: &str) -> (String, Option<String>) {
    let out = Command::new(crate::support::CRAWL)
        .arg("check")
        .arg(url)
        .arg("--json")
        .arg("--config")
        .arg(&dirs.config)
        .arg("--data-dir")
        .arg(&dirs.data)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (
        v["verdict"]["kind"].as_str().unwrap_or_default().to_string(),
        v["verdict"]["of"].as_str().map(path_of),
    )
}

/// `/b` copies `/a`. Then `/a` changes while `/b` answers 403 to the
/// revisit that was to judge it again; then `/b` serves its old text
/// again. That text is nobody's in the index now, so `/b` must be kept:
/// the judgement it was owed survives the failed visit (it lives in its
/// stored record, not only in the queued revisit). Every page's last line
/// agrees with `crawl check`. (Before, `/b` stayed "same" and "duplicate
/// of /a" forever, while check said unique.)
#[test]
fn a_copy_owed_a_judgement_keeps_it_through_a_failed_revisit() {
    use crate::support::server::{Reply, Server};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU8, Ordering};
    let phase = Arc::new(AtomicU8::new(0));
    let p = phase.clone();
    let server = Server::start(move |req| {
        let old = page("Story", &article(20), &[]);
        match (req.path.as_str(), p.load(Ordering::SeqCst)) {
            ("/", _) => Reply::html(page("Home", &article(1), &["/a".to_string()])),
            ("/a", 0) => Reply::html(page("Story", &article(20), &["/b".to_string()])),
            ("/a", _) => Reply::html(page("Story", &article(21), &["/b".to_string()])),
            ("/b", 1) => Reply::status(403),
            ("/b", _) => Reply::html(old),
            _ => Reply::status(404),
        }
    });
    let dir = crate::support::tempdir("revisit-owed");
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 1, "");
    dirs.run_ok(Duration::from_secs(60));
    let first = verdicts(&dirs);
    assert_eq!(
        (first["/a"].as_str(), first["/b"].as_str()),
        ("kept", "duplicate"),
        "{first:?}"
    );

    phase.store(1, Ordering::SeqCst);
    let out = dirs.revisit(true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    phase.store(2, Ordering::SeqCst);
    let out = dirs.revisit(true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let now = verdicts(&dirs);
    assert_eq!(
        now["/b"],
        "kept",
        "/b's text is in no kept line: {now:?}\n{:?}",
        changes(&dirs)
    );
    // kept.jsonl and duplicates.jsonl say what `crawl check` says.
    for (path, verdict) in &now {
        let (kind, of) = check_verdict(&dirs, &format!("{}{path}", server.base()));
        match verdict.as_str() {
            "kept" => assert_eq!(kind, "kept_as_itself", "{path}: {now:?}"),
            _ => assert_eq!(kind, "duplicate", "{path} ({of:?}): {now:?}"),
        }
    }
}
