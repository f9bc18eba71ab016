//! `crawl check URL`: the verdict of one page explained against a crawl's
//! state, which it does not change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::server::{Reply, Server};
use crate::support::{field, gibberish, page, path_of, site_crawl};

fn site() -> Server {
    Server::start(|req| {
        let links: Vec<String> = ["/a", "/near"].iter().map(|s| s.to_string()).collect();
        match req.path.as_str() {
            "/robots.txt" => Reply::text("User-agent: *\nDisallow: /private\n"),
            "/" => Reply::html(page("Home", &gibberish(1, 200), &links)),
            "/a" => Reply::html(page("Story A", &gibberish(2, 200), &[])),
            // Not linked: asked about after the crawl.
            "/later-copy" => Reply::html(page(
                "Story A again",
                &format!("{} and a line more", gibberish(2, 200)),
                &[],
            )),
            "/near" => Reply::html(page("Story A", &format!("{} updated", gibberish(2, 200)), &[])),
            "/new" => Reply::html(page("New", &gibberish(3, 200), &[])),
            "/private/x" => Reply::html(page("Private", &gibberish(4, 200), &[])),
            _ => Reply::status(404),
        }
    })
}

fn check(dirs: &crate::support::Dirs, url: &str, json: bool) -> (i32, String) {
    let out = check_output(dirs, url, json);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// `crawl check URL` on the crawl of `dirs`, all of its output.
fn check_output(dirs: &crate::support::Dirs, url: &str, json: bool) -> std::process::Output {
    let mut c = std::process::Command::new(crate::support::CRAWL);
    c.arg("check")
        .arg(url)
        .arg("--config")
        .arg(&dirs.config)
        .arg("--data-dir")
        .arg(&dirs.data);
    if json {
        c.arg("--json");
    }
    c.output().unwrap()
}

/// [`site`] crawled in a directory named after `prefix`: the server, the
/// directory, the crawl's files, and the page of /a and /near that was
/// dropped with its partner (they are near copies: whichever was judged
/// first is kept).
fn crawled(prefix: &str) -> (Server, tempfile::TempDir, crate::support::Dirs, String, String) {
    let server = site();
    let dir = crate::support::tempdir(prefix);
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 2, "");
    dirs.run_ok(Duration::from_secs(60));
    let dups = dirs.duplicates();
    let dropped = dups
        .iter()
        .find(|d| ["/a", "/near"].contains(&path_of(field(d, "url")).as_str()))
        .expect("one of /a and /near dropped");
    let dropped_url = field(dropped, "url").to_string();
    let partner = field(dropped, "duplicate_of").to_string();
    (server, dir, dirs, dropped_url, partner)
}

#[test]
fn check_names_the_partner_of_a_dropped_page_and_changes_nothing() {
    let (server, dir, dirs, dropped_url, partner) = crawled("check");

    // The dropped page: its partner and the resemblance, as the crawl decided.
    let (code, text) = check(&dirs, &dropped_url, false);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains(&format!("duplicate of {partner}")), "{text}");
    assert!(
        text.contains("resemblance 0.9") || text.contains("resemblance 1.0"),
        "{text}"
    );
    let (code, json) = check(&dirs, &dropped_url, true);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdict"]["kind"], "duplicate", "{v}");
    assert_eq!(v["verdict"]["of"], partner.as_str(), "{v}");
    assert!(v["verdict"]["similarity"].as_f64().unwrap() >= 0.75, "{v}");
    // The reason names the content tier's bar (0.75), which the partner
    // reaches; a title verdict names the shared title and no bar, as the
    // deduper's title bar is not the content tier's.
    let reason = v["verdict"]["reason"].as_str().unwrap();
    if v["verdict"]["tier"] == "title" {
        assert!(reason.starts_with("title tier: the same title, "), "{reason}");
        assert!(!reason.contains(" >= "), "{reason}");
    } else {
        let (got, needed) = reason
            .rsplit_once("resemblance ")
            .and_then(|(_, r)| r.split_once(" >= "))
            .unwrap_or_else(|| panic!("{reason}"));
        assert_eq!(needed, "0.75", "{reason}");
        assert!(got.parse::<f64>().unwrap() >= 0.75, "{reason}");
    }
    assert!(
        v["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["url"] == partner.as_str()),
        "{v}"
    );
    assert_eq!(v["url_seen"], true);

    // A page the crawl never saw: a copy of the kept page, and a new one.
    let (_, json) = check(&dirs, &format!("{}/later-copy", server.base()), true);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdict"]["kind"], "duplicate", "{v}");
    assert_eq!(v["url_seen"], false);
    let (_, json) = check(&dirs, &format!("{}/new", server.base()), true);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdict"]["kind"], "unique", "{v}");
    // The kept page itself.
    let (_, json) = check(&dirs, &partner, true);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdict"]["kind"], "kept_as_itself", "{v}");

    // robots.txt says no: said, exit 1.
    let (code, text) = check(&dirs, &format!("{}/private/x", server.base()), false);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("robots        disallowed"), "{text}");

    // The checks changed nothing: /new, checked, is still new to the index.
    let (_, json) = check(&dirs, &format!("{}/new", server.base()), true);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (v["verdict"]["kind"].as_str(), v["url_seen"].as_bool()),
        (Some("unique"), Some(false)),
        "{v}"
    );
    // A bad URL and a missing state are clear errors.
    let out = std::process::Command::new(crate::support::CRAWL)
        .args(["check", "not a url", "--data-dir"])
        .arg(&dirs.data)
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("is not a URL"));
    let out = std::process::Command::new(crate::support::CRAWL)
        .args(["check", "http://127.0.0.1:9/", "--data-dir"])
        .arg(dir.path().join("nowhere"))
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("no crawl state"));
}

/// Every file under `dir`, with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            out.insert(path, bytes);
        }
    }
    out
}

/// Sets the mode of `dir`, of its subdirectories (`dirs`) and files
/// (`files`), children before a directory is made read-only.
#[cfg(unix)]
fn chmod_tree(dir: &Path, files: u32, dirs: u32) {
    use std::os::unix::fs::PermissionsExt;
    // Open the directory first, so that it can be listed when going back
    // from read-only.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(dirs | 0o500)).unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            chmod_tree(&path, files, dirs);
        } else {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(files)).unwrap();
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(dirs)).unwrap();
}

/// Makes a crawl state writable again when dropped, so that its temporary
/// directory can be removed whether the test passed or not.
#[cfg(unix)]
struct Writable<'a>(&'a Path);

#[cfg(unix)]
impl Drop for Writable<'_> {
    fn drop(&mut self) {
        chmod_tree(self.0, 0o644, 0o755);
    }
}

fn md5_hex(bytes: &[u8]) -> String {
    use md5::{Digest, Md5};
    Md5::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `crawl check` opens the crawl state read-only: it works on a read-only
/// copy (files 0444 in a 0555 directory) and leaves every byte of it as it
/// was. Tests may run as root, whom modes do not stop, so the checksums are
/// what is asserted; the verdicts must be the crawl's own.
#[cfg(unix)]
#[test]
fn check_reads_a_read_only_state_and_leaves_its_bytes_unchanged() {
    let (server, _dir, dirs, dropped_url, partner) = crawled("check-ro");

    let before = files(&dirs.data);
    assert!(
        before.keys().any(|p| p.ends_with("index.redb")),
        "{:?}",
        before.keys()
    );
    chmod_tree(&dirs.data, 0o444, 0o555);
    let _writable = Writable(&dirs.data);
    let cases = [
        (dropped_url.clone(), "duplicate", Some(partner.as_str())),
        (format!("{}/later-copy", server.base()), "duplicate", None),
        (format!("{}/new", server.base()), "unique", None),
        (partner.clone(), "kept_as_itself", Some(partner.as_str())),
    ];
    for (url, kind, of) in &cases {
        let out = check_output(&dirs, url, true);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "crawl check {url} on a read-only state: {}\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(v["verdict"]["kind"], *kind, "{url}: {v}");
        if let Some(of) = of {
            assert_eq!(v["verdict"]["of"], *of, "{url}: {v}");
        }
    }
    let after = files(&dirs.data);
    let sums = |m: &BTreeMap<PathBuf, Vec<u8>>| -> Vec<(PathBuf, usize, String)> {
        m.iter().map(|(p, b)| (p.clone(), b.len(), md5_hex(b))).collect()
    };
    assert_eq!(
        sums(&after),
        sums(&before),
        "crawl check changed the crawl state (path, size, md5)"
    );
}

/// While a crawl runs on a data directory it holds the store's lock; a
/// check then says so (the crawl's name for it and what to do), instead of
/// waiting or reading a state the crawl is writing.
#[test]
fn check_during_a_crawl_names_the_running_crawl() {
    let server = Server::start(|req| match req.path.as_str() {
        "/robots.txt" => Reply::text(""),
        "/" => {
            // Slow enough that the crawl is still running when checked.
            std::thread::sleep(Duration::from_secs(3));
            Reply::html(page("Home", &gibberish(1, 200), &[]))
        }
        _ => Reply::status(404),
    });
    let dir = crate::support::tempdir("check-lock");
    let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 1, "");
    let mut child = dirs.spawn();
    // The crawl opens its state before fetching anything.
    dirs.wait_until(&mut child, Duration::from_secs(30), "the seed requested", || {
        server.counts().contains_key("/")
    });
    let out = check_output(&dirs, &format!("{}/", server.base()), false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let _ = child.kill();
    let _ = child.wait();
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("in use") && stderr.contains("crawl running on it"),
        "{stderr}"
    );
}

/// `crawl check --redis` explains a page against a crawl shared by two
/// workers: their tiers in Redis, and the line one of them wrote under its
/// own folder of `--out`; it writes nothing to Redis (every key of the
/// crawl and its value are unchanged).
#[test]
fn check_explains_a_page_of_a_crawl_shared_in_redis() {
    let Some(url) = crate::redis::redis_url("check_explains_a_page_of_a_crawl_shared_in_redis") else {
        return;
    };
    let server = site();
    let dir = crate::support::tempdir("check-redis");
    let ns = crate::redis::namespace("check");
    let s = crate::redis::Shared::new(dir.path(), &format!("{}/", server.base()), &url, &ns, 30_000);
    let workers = ["k1", "k2"];
    let mut children: Vec<_> = workers.iter().map(|w| s.spawn(w)).collect();
    s.wait_ok(&mut children, &workers);
    let dropped = s
        .lines(&workers)
        .into_iter()
        .find(|(_, file, v)| {
            *file == "duplicates" && ["/a", "/near"].contains(&path_of(field(v, "url")).as_str())
        })
        .expect("one of /a and /near dropped");
    let (worker, _, line) = dropped;
    let (dropped_url, partner) = (
        field(&line, "url").to_string(),
        field(&line, "duplicate_of").to_string(),
    );
    // Every key of the crawl's namespace with its serialized value.
    let snapshot = || -> Vec<(Vec<u8>, Vec<u8>)> {
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut c = client.get_connection().unwrap();
        let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg(format!("*{ns}*")).query(&mut c).unwrap();
        keys.sort();
        keys.into_iter()
            .map(|k| {
                let value: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut c).unwrap_or_default();
                (k, value)
            })
            .collect()
    };
    let before = snapshot();
    let run = |u: &str| {
        let out = std::process::Command::new(crate::support::CRAWL)
            .args(["check", u, "--json", "--redis", &url, "--set"])
            .arg(format!("redis.namespace={ns}"))
            .arg("--config")
            .arg(&s.config)
            .arg("--out")
            .arg(s.out())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let v = run(&dropped_url);
    assert_eq!(v["verdict"]["kind"], "duplicate", "{v}");
    assert_eq!(v["verdict"]["of"], partner.as_str(), "{v}");
    assert_eq!(v["url_seen"], true, "{v}");
    assert_eq!(v["recorded"]["kind"], "duplicate", "{v}");
    assert!(
        v["recorded"]["file"]
            .as_str()
            .unwrap()
            .contains(&format!("/{worker}/duplicates.jsonl")),
        "{v}"
    );
    let v = run(&format!("{}/new", server.base()));
    assert_eq!(
        (v["verdict"]["kind"].as_str(), v["url_seen"].as_bool()),
        (Some("unique"), Some(false)),
        "{v}"
    );
    assert_eq!(v["recorded"], serde_json::Value::Null, "{v}");
    let after = snapshot();
    let changed: Vec<String> = after
        .iter()
        .filter(|kv| !before.contains(kv))
        .chain(before.iter().filter(|kv| !after.contains(kv)))
        .map(|(k, v)| format!("{} = {v:?}", String::from_utf8_lossy(k)))
        .collect();
    assert!(changed.is_empty(), "crawl check wrote to Redis: {changed:#?}");
}
