//! The Redis store across processes and through failures, against real
//! servers: the one `SIMCRAWL_REDIS_URL` names (`scripts/test.sh` starts
//! it), and private ones this file starts with `SIMCRAWL_REDIS_SERVER` (or
//! `redis-server` on the PATH) when a test must stop its server.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use simcrawl_dedup::{
    DedupConfig, Deduper, Document, Error, MemoryStore, RedisOptions, RedisStore, ReplicatedStore, Store,
    UrlTier, Verdict,
};

const PROCESSES: usize = 3;
const THREADS: usize = 4;
const GROUPS: usize = 12;
const VARIANTS: usize = 4;

/// Group `g`'s base text: 40 dictionary words of its own, so groups are
/// far apart; variants differ by a short tail, so each is a near-duplicate
/// of every other of its group.
fn texts() -> Vec<Vec<String>> {
    let mut words: Vec<&str> = simcrawl_dedup::features::jieba_idf()
        .words()
        .filter(|w| w.chars().count() >= 2)
        .collect();
    words.sort_unstable();
    (0..GROUPS)
        .map(|g| {
            let base = words[g * 40..(g + 1) * 40].join("，");
            (0..VARIANTS).map(|v| format!("{base}（第{v}稿）")).collect()
        })
        .collect()
}

/// The child side of [`processes_and_threads_keep_exactly_one_per_group`]:
/// does nothing unless started by it (`SIMCRAWL_REDIS_CHILD` set). Checks
/// every variant from `THREADS` threads, each in its own order, half one at
/// a time and half in batches, and prints `KEPT g v` for each kept one.
#[test]
fn child_worker() {
    let (Ok(ns), Ok(me), Ok(url)) = (
        std::env::var("SIMCRAWL_REDIS_CHILD"),
        std::env::var("SIMCRAWL_REDIS_CHILD_INDEX"),
        std::env::var("SIMCRAWL_REDIS_CHILD_URL"),
    ) else {
        return;
    };
    let me: usize = me.parse().unwrap();
    let options = common::redis_options(&ns);
    if std::env::var("SIMCRAWL_REDIS_CHILD_STORE").as_deref() == Ok("replicated") {
        let store = ReplicatedStore::open_with(&url, options).unwrap();
        let d = Arc::new(Deduper::new(store, DedupConfig::default()).unwrap());
        child_checks(me, d.clone());
        eprintln!("child {me}: {} conflicts retried", d.store().conflicts());
    } else {
        let store = RedisStore::open_with(&url, options).unwrap();
        let d = Arc::new(Deduper::new(store, DedupConfig::default()).unwrap());
        child_checks(me, d.clone());
        eprintln!("child {me}: {} conflicts retried", d.store().conflicts());
    }
}

/// [`child_worker`]'s checks, on either store.
fn child_checks<S: Store + 'static>(me: usize, d: Arc<Deduper<S>>) {
    let texts = Arc::new(texts());
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (d, texts) = (d.clone(), texts.clone());
            std::thread::spawn(move || {
                let mut order: Vec<(usize, usize)> = (0..GROUPS)
                    .flat_map(|g| (0..VARIANTS).map(move |v| (g, v)))
                    .collect();
                // A different order per process and thread.
                let mut x = (me * 31 + t * 7 + 1) as u64;
                for i in (1..order.len()).rev() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    order.swap(i, (x % (i as u64 + 1)) as usize);
                }
                let mut kept = Vec::new();
                let mut dups = Vec::new();
                let doc =
                    |&(g, v): &(usize, usize)| (format!("http://g{g}.example/{v}"), texts[g][v].clone());
                if t % 2 == 0 {
                    for gv in &order {
                        let (url, text) = doc(gv);
                        match d.check(&Document::new(&url, "", &text)).unwrap() {
                            Verdict::Duplicate(dup) => {
                                dups.push(format!("{gv:?} {url} of {} {:?}", dup.of, dup.tier))
                            }
                            Verdict::Unique { .. } => kept.push(*gv),
                            other => panic!("{other:?}"),
                        }
                    }
                } else {
                    for chunk in order.chunks(4) {
                        let sigs: Vec<_> = chunk
                            .iter()
                            .map(|gv| {
                                let (url, text) = doc(gv);
                                d.sign(&Document::new(&url, "", &text))
                            })
                            .collect();
                        let verdicts = d.check_batch(&sigs, UrlTier::Check).unwrap();
                        for (gv, v) in chunk.iter().zip(&verdicts) {
                            match v {
                                Verdict::Duplicate(dup) => {
                                    dups.push(format!("{gv:?} of {} {:?}", dup.of, dup.tier))
                                }
                                Verdict::Unique { .. } => kept.push(*gv),
                                other => panic!("{other:?}"),
                            }
                        }
                    }
                }
                (kept, dups)
            })
        })
        .collect();
    for t in threads {
        let (kept, dups) = t.join().unwrap();
        for (g, v) in kept {
            println!("KEPT {g} {v}");
        }
        for line in dups {
            println!("DUP {line}");
        }
    }
}

/// M processes x N threads check the same near-duplicate groups at the same
/// moment against one Redis: exactly one document per group is kept, as in
/// a sequential run.
#[test]
fn processes_and_threads_keep_exactly_one_per_group() {
    let Some(url) = common::redis_url("processes_and_threads_keep_exactly_one_per_group") else {
        return;
    };
    race_processes(&url, &common::unique_namespace("procs"), Kind::Index);
}

/// The same race between processes holding replicas ([`ReplicatedStore`]).
#[test]
fn replicas_in_processes_and_threads_keep_exactly_one_per_group() {
    let Some(url) = common::redis_url("replicas_in_processes_and_threads_keep_exactly_one_per_group") else {
        return;
    };
    race_processes(&url, &common::unique_namespace("replicas"), Kind::Replicated);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Index,
    Replicated,
}

/// The same race against the 3-master cluster of
/// `scripts/redis-test-server.sh start-cluster` (`SIMCRAWL_REDIS_CLUSTER_URLS`),
/// in namespaces whose slots are served by different masters, each opened
/// through a different node: exactly one kept per group in each.
#[test]
fn processes_racing_on_a_cluster_keep_exactly_one_per_group() {
    let Ok(urls) = std::env::var("SIMCRAWL_REDIS_CLUSTER_URLS") else {
        eprintln!(
            "SKIPPED processes_racing_on_a_cluster_keep_exactly_one_per_group: set SIMCRAWL_REDIS_CLUSTER_URLS \
             (`eval \"$(bash scripts/redis-test-server.sh start-cluster)\"`; scripts/test.sh does)"
        );
        return;
    };
    let urls: Vec<&str> = urls.split(',').collect();
    let base = common::unique_namespace("cluster");
    let mut served_by = std::collections::BTreeSet::new();
    // `redis-cli --cluster create` gives each of 3 masters a third of the
    // 16384 slots: one namespace in each third.
    for third in 0..3u16 {
        let ns = (0..)
            .map(|j| format!("{base}-{j}"))
            .find(|ns| crc16(ns.as_bytes()) % 16384 / 5462 == third)
            .unwrap();
        let url = urls[usize::from(third) % urls.len()];
        // Opening records the layout marker, on the master of the slot.
        let store = RedisStore::open_cluster(&[url], common::redis_options(&ns)).unwrap();
        let owners: Vec<&str> = urls
            .iter()
            .copied()
            .filter(|u| {
                let out = Command::new("redis-cli")
                    .args(["-u", u, "EXISTS", &format!("{{{ns}}}:m:layout")])
                    .output()
                    .expect("redis-cli");
                String::from_utf8_lossy(&out.stdout).trim() == "1"
            })
            .collect();
        assert_eq!(owners.len(), 1, "namespace {ns} on {owners:?}");
        served_by.insert(owners[0].to_string());
        drop(store);
        race_processes(url, &ns, Kind::Index);
    }
    // Replicas too: the log of a namespace on a master that the node
    // given does not serve.
    let ns = (0..)
        .map(|j| format!("{base}-r{j}"))
        .find(|ns| crc16(ns.as_bytes()) % 16384 / 5462 == 2)
        .unwrap();
    race_processes(urls[0], &ns, Kind::Replicated);
    assert_eq!(served_by.len(), 3, "namespaces served by {served_by:?}");
}

/// Redis Cluster's key hash (CRC16-CCITT/XMODEM), as `CLUSTER KEYSLOT`.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// `PROCESSES` child processes x `THREADS` threads check every variant of
/// every group in namespace `ns` of the server at `url`; the test fails
/// unless exactly one per group is kept, as in a sequential run.
fn race_processes(url: &str, ns: &str, kind: Kind) {
    // The sequential model: one document per group.
    let model = Deduper::new(MemoryStore::new(), DedupConfig::default()).unwrap();
    let mut model_kept = 0;
    for (g, variants) in texts().iter().enumerate() {
        for (v, text) in variants.iter().enumerate() {
            let url = format!("http://g{g}.example/{v}");
            if !model
                .check(&Document::new(&url, "", text))
                .unwrap()
                .is_duplicate()
            {
                model_kept += 1;
            }
        }
    }
    assert_eq!(model_kept, GROUPS, "the groups are not what the test assumes");

    if kind == Kind::Replicated {
        let store = ReplicatedStore::open_with(url, common::redis_options(ns)).unwrap();
        store.clear().unwrap();
        // The parameters recorded before the children race for them.
        let d = Deduper::new(store, DedupConfig::default()).unwrap();
        run_children(url, ns, "replicated");
        assert_eq!(d.stats().unwrap().documents, GROUPS as u64);
        d.store().clear().unwrap();
    } else {
        let store = RedisStore::open_with(url, common::redis_options(ns)).unwrap();
        store.clear().unwrap();
        let d = Deduper::new(store, DedupConfig::default()).unwrap();
        run_children(url, ns, "index");
        assert_eq!(d.stats().unwrap().documents, GROUPS as u64);
        d.store().clear().unwrap();
    }
}

/// Starts the `PROCESSES` children on `ns` with the store `kind` and checks
/// that exactly one document per group was kept among them.
fn run_children(url: &str, ns: &str, kind: &str) {
    let exe = std::env::current_exe().unwrap();
    let children: Vec<Child> = (0..PROCESSES)
        .map(|i| {
            Command::new(&exe)
                .args(["--exact", "child_worker", "--nocapture", "--test-threads=1"])
                .env("SIMCRAWL_REDIS_CHILD", ns)
                .env("SIMCRAWL_REDIS_CHILD_URL", url)
                .env("SIMCRAWL_REDIS_CHILD_INDEX", i.to_string())
                .env("SIMCRAWL_REDIS_CHILD_STORE", kind)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut kept: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child {i} failed: {stderr}");
        eprintln!(
            "{}",
            stderr
                .lines()
                .filter(|l| l.starts_with("child"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            // libtest prints `test child_worker ... ` before the first line.
            if let Some(at) = line.find("KEPT ") {
                let rest = &line[at + 5..];
                let (g, v) = rest.split_once(' ').unwrap();
                kept.entry(g.parse().unwrap())
                    .or_default()
                    .push(format!("process {i} variant {v}"));
            }
        }
    }
    for g in 0..GROUPS {
        assert_eq!(
            kept.get(&g).map_or(0, Vec::len),
            1,
            "group {g}: kept {:?}",
            kept.get(&g)
        );
    }
}

#[test]
fn an_unreachable_server_is_a_typed_error_naming_the_url() {
    // Port 1 on the loopback: nothing listens there.
    let e = RedisStore::open("redis://crawler:secret@127.0.0.1:1/0").unwrap_err();
    match &e {
        Error::Unreachable { url, .. } => assert!(url.contains("127.0.0.1:1"), "{url}"),
        other => panic!("expected Unreachable, got {other:?}"),
    }
    assert!(e.is_transient());
    let msg = e.to_string();
    assert!(msg.contains("127.0.0.1:1") && !msg.contains("secret"), "{msg}");
    let e = RedisStore::open_with(
        "redis://127.0.0.1:1/0",
        RedisOptions {
            namespace: "a:b".into(),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, Error::Config(_)), "{e}");
}

/// `CLIENT KILL`s every connection of namespace `ns` (named
/// `simcrawl:NS`), through redis-cli.
fn kill_connections(url: &str, ns: &str) -> usize {
    let list = Command::new("redis-cli")
        .args(["-u", url, "CLIENT", "LIST"])
        .output()
        .expect("redis-cli (installed with redis-server)");
    let name = format!("name=simcrawl:{ns} ");
    let mut killed = 0;
    for line in String::from_utf8_lossy(&list.stdout).lines() {
        if line.contains(&name)
            && let Some(id) = line.split(' ').find_map(|f| f.strip_prefix("id="))
        {
            let out = Command::new("redis-cli")
                .args(["-u", url, "CLIENT", "KILL", "ID", id])
                .output()
                .unwrap();
            assert!(out.status.success());
            killed += 1;
        }
    }
    killed
}

#[test]
fn a_killed_connection_is_a_typed_error_and_leaves_nothing_half_written() {
    let Some(url) = common::redis_url("a_killed_connection_is_a_typed_error_and_leaves_nothing_half_written")
    else {
        return;
    };
    let ns = common::unique_namespace("killed");
    let store = RedisStore::open_with(&url, common::redis_options(&ns)).unwrap();
    store.clear().unwrap();
    let d = Deduper::new(store, DedupConfig::default()).unwrap();
    let [a, b, c] = &texts()[..3] else { unreachable!() };
    assert!(
        !d.check(&Document::new("http://a/1", "", &a[0]))
            .unwrap()
            .is_duplicate()
    );

    // Between transactions: the next one fails on the dead connection,
    // typed and transient; its retry works on a new connection.
    assert!(kill_connections(&url, &ns) >= 1);
    let e = d.check(&Document::new("http://b/1", "", &b[0])).unwrap_err();
    assert!(
        matches!(e, Error::Disconnected { .. }) && e.is_transient(),
        "{e:?}"
    );
    assert!(
        !d.check(&Document::new("http://b/1", "", &b[0]))
            .unwrap()
            .is_duplicate()
    );

    // Inside a transaction, after its reads and writes, before its commit:
    // nothing of it is applied.
    let mut first = true;
    let sig = d.sign(&Document::new("http://c/1", "", &c[0]));
    let r = d.store().write(|t| {
        let v = d.check_in(t, &sig, UrlTier::Check)?;
        t.set_meta("half", b"written")?;
        if std::mem::take(&mut first) {
            kill_connections(&url, &ns);
        }
        Ok(v)
    });
    let e = r.unwrap_err();
    assert!(matches!(e, Error::Disconnected { .. }), "{e:?}");
    let left = d
        .store()
        .read(|t| Ok((t.meta("half")?, t.url(sig.url_digest.unwrap())?, t.doc_count()?)))
        .unwrap();
    assert_eq!(left, (None, None, 2), "a killed transaction left writes behind");
    // The caller's retry keeps the document.
    assert!(
        !d.check(&Document::new("http://c/1", "", &c[0]))
            .unwrap()
            .is_duplicate()
    );
    assert!(
        d.check(&Document::new("http://c/2", "", &c[1]))
            .unwrap()
            .is_duplicate()
    );
    d.store().clear().unwrap();
}

/// A redis-server of this test's own, on a free port, with an append-only
/// file synced at every write, so a restart finds what was acknowledged.
struct Server {
    bin: String,
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
    extra: Vec<String>,
}

impl Server {
    fn start() -> Option<Server> {
        Self::start_with(&[])
    }

    fn start_with(extra: &[&str]) -> Option<Server> {
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
        let mut s = Server {
            bin,
            dir: tempfile::tempdir().unwrap(),
            port,
            child: None,
            extra: extra.iter().map(|a| a.to_string()).collect(),
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
            .args(&self.extra)
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let start = Instant::now();
        // Up, and done loading its append-only file (PING answers LOADING
        // until then).
        let ping = || {
            Command::new("redis-cli")
                .args(["-p", &self.port.to_string(), "PING"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "PONG")
        };
        while !ping() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server at once (SIGKILL), as a crash.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn a_server_lost_and_restarted_mid_run_loses_nothing_acknowledged() {
    if common::redis_url("a_server_lost_and_restarted_mid_run_loses_nothing_acknowledged").is_none() {
        return;
    }
    let Some(mut server) = Server::start() else {
        return;
    };
    let options = RedisOptions {
        io_timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_secs(1),
        ..common::redis_options("restart")
    };
    let d = Deduper::new(
        RedisStore::open_with(&server.url(), options.clone()).unwrap(),
        DedupConfig::default(),
    )
    .unwrap();
    let [a, b] = &texts()[..2] else { unreachable!() };
    assert!(
        !d.check(&Document::new("http://a/1", "", &a[0]))
            .unwrap()
            .is_duplicate()
    );

    server.kill();
    // Mid-run: each attempt fails, typed and transient (the crawler pauses
    // and retries); opening a store now says the server is unreachable.
    for _ in 0..2 {
        let e = d.check(&Document::new("http://b/1", "", &b[0])).unwrap_err();
        assert!(
            e.is_transient() && matches!(e, Error::Disconnected { .. }),
            "{e:?}"
        );
    }
    let e = RedisStore::open_with(&server.url(), options).unwrap_err();
    assert!(matches!(e, Error::Unreachable { .. }), "{e:?}");

    server.restart();
    // What was acknowledged is there; what failed was not half-applied.
    let v = d.check(&Document::new("http://a/2", "", &a[1])).unwrap();
    match v {
        Verdict::Duplicate(dup) => assert_eq!(dup.of, "http://a/1"),
        other => panic!("acknowledged document lost: {other:?}"),
    }
    assert_eq!(d.stats().unwrap().documents, 1);
    assert!(
        !d.check(&Document::new("http://b/1", "", &b[0]))
            .unwrap()
            .is_duplicate()
    );
    assert_eq!(d.stats().unwrap().documents, 2);
}

/// Many batches from one store, then the ids and counts add up: reserved
/// ids are unique, and a batch can see its own earlier documents.
#[test]
fn batches_reserve_unique_ids_and_see_their_own_documents() {
    let Some(store) = common::redis_store("batches_reserve_unique_ids_and_see_their_own_documents") else {
        return;
    };
    let d = Deduper::new(store, DedupConfig::default()).unwrap();
    let texts = texts();
    let sigs: Vec<_> = texts
        .iter()
        .enumerate()
        .flat_map(|(g, vs)| {
            vs.iter()
                .enumerate()
                .map(move |(v, t)| (format!("http://g{g}/{v}"), t.clone()))
        })
        .map(|(u, t)| d.sign(&Document::new(&u, "", &t)))
        .collect();
    let trips = d.store().round_trips();
    let verdicts = d.check_batch(&sigs, UrlTier::Check).unwrap();
    // One round trip for the reads and id reservation, one for the commit.
    assert_eq!(d.store().round_trips() - trips, 2);
    let ids: Vec<u64> = verdicts.iter().filter_map(Verdict::id).collect();
    assert_eq!(ids.len(), GROUPS);
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len());
    // Ids handed out by a transaction that did not announce its inserts.
    let more: Vec<u64> = d
        .store()
        .write(|t| (0..5).map(|_| t.next_doc_id()).collect())
        .unwrap();
    assert!(more.windows(2).all(|w| w[0] < w[1]) && more[0] > *unique.last().unwrap());
    d.store().clear().unwrap();
}

/// A namespace with glob characters is cleared alone: `SCAN MATCH` takes
/// it literally, so clearing `…*` leaves `…x`'s keys (it took them before).
#[test]
fn clearing_a_namespace_with_glob_characters_clears_only_it() {
    let Some(url) = common::redis_url("clearing_a_namespace_with_glob_characters_clears_only_it") else {
        return;
    };
    let base = common::unique_namespace("glob");
    let open = |ns: &str| {
        let store = RedisStore::open_with(&url, common::redis_options(ns)).unwrap();
        store.clear().unwrap();
        Deduper::new(store, DedupConfig::default()).unwrap()
    };
    let names = [
        format!("{base}*"),
        format!("{base}x"),
        format!("{base}[x]"),
        format!("{base}?"),
    ];
    let stores: Vec<_> = names.iter().map(|n| open(n)).collect();
    for (i, d) in stores.iter().enumerate() {
        let text = distinct_texts(4)[i].clone();
        d.check(&Document::new(&format!("http://g/{i}"), "", &text))
            .unwrap();
        assert_eq!(d.stats().unwrap().documents, 1);
    }
    stores[0].store().clear().unwrap();
    assert_eq!(stores[0].stats().unwrap().documents, 0);
    for d in &stores[1..] {
        assert_eq!(
            d.stats().unwrap().documents,
            1,
            "another namespace's keys were cleared"
        );
    }
    stores[2].store().clear().unwrap();
    assert_eq!(stores[1].stats().unwrap().documents, 1, "`[x]` matched `x`");
    for d in &stores {
        d.store().clear().unwrap();
    }
}

/// A 3-master Redis Cluster: namespaces whose slots live on each master
/// all work through a store opened on the first node (it finds the owner
/// of its slot), and threads racing on one namespace keep one copy.
#[test]
fn a_cluster_serves_each_namespace_from_the_master_of_its_slot() {
    if common::redis_url("a_cluster_serves_each_namespace_from_the_master_of_its_slot").is_none() {
        return;
    }
    let flags = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"];
    let (Some(a), Some(b), Some(c)) = (
        Server::start_with(&flags),
        Server::start_with(&flags),
        Server::start_with(&flags),
    ) else {
        return;
    };
    let nodes: Vec<String> = [&a, &b, &c]
        .iter()
        .map(|s| format!("127.0.0.1:{}", s.port))
        .collect();
    let out = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&nodes)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .output()
        .expect("redis-cli");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    // Wait until every node agrees the cluster is up.
    let start = Instant::now();
    for s in [&a, &b, &c] {
        loop {
            let info = Command::new("redis-cli")
                .args(["-p", &s.port.to_string(), "CLUSTER", "INFO"])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "cluster did not come up"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let [x, y] = &texts()[..2] else { unreachable!() };
    let mut owners = std::collections::BTreeSet::new();
    for ns in ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"] {
        let slot = Command::new("redis-cli")
            .args(["-p", &a.port.to_string(), "CLUSTER", "KEYSLOT", ns])
            .output()
            .unwrap();
        let store = RedisStore::open_with(&a.url(), common::redis_options(ns)).unwrap();
        let d = Arc::new(Deduper::new(store, DedupConfig::default()).unwrap());
        assert!(
            !d.check(&Document::new("http://a/1", "", &x[0]))
                .unwrap()
                .is_duplicate()
        );
        assert!(
            d.check(&Document::new("http://a/2", "", &x[1]))
                .unwrap()
                .is_duplicate()
        );
        // Threads racing on the same document: one copy.
        let kept: usize = (0..4)
            .map(|t| {
                let (d, text) = (d.clone(), y[t % 2].clone());
                std::thread::spawn(move || {
                    let url = format!("http://t{t}/");
                    usize::from(!d.check(&Document::new(&url, "", &text)).unwrap().is_duplicate())
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum();
        assert_eq!(kept, 1, "namespace {ns}");
        assert_eq!(d.stats().unwrap().documents, 2);
        // Which master holds it: the key lives where its slot is served.
        for s in [&a, &b, &c] {
            let n = Command::new("redis-cli")
                .args(["-p", &s.port.to_string(), "EXISTS", &format!("{{{ns}}}:m:params")])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&n.stdout).trim() == "1" {
                owners.insert(s.port);
            }
        }
        eprintln!(
            "namespace {ns}: slot {}",
            String::from_utf8_lossy(&slot.stdout).trim()
        );
    }
    assert!(
        owners.len() >= 2,
        "the namespaces all landed on one master: {owners:?}"
    );
}

/// `n` texts of 30 dictionary words each, no word shared: far apart.
fn distinct_texts(n: usize) -> Vec<String> {
    let mut words: Vec<&str> = simcrawl_dedup::features::jieba_idf()
        .words()
        .filter(|w| w.chars().count() >= 2)
        .collect();
    words.sort_unstable();
    words.dedup();
    (0..n).map(|i| words[i * 30..(i + 1) * 30].join("，")).collect()
}

/// Records are kept 64 to a hash; a purge of documents spread over several
/// of those buckets removes exactly the expired ones, their index entries
/// and their buckets, and the document count follows.
#[test]
fn a_purge_across_record_buckets_removes_exactly_the_expired() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let Some(store) = common::redis_store("a_purge_across_record_buckets_removes_exactly_the_expired") else {
        return;
    };
    let now = Arc::new(AtomicU64::new(1_000_000));
    let clock = now.clone();
    let config = DedupConfig {
        window: Some(Duration::from_secs(3600)),
        ..DedupConfig::default()
    };
    let d = Deduper::new(store, config)
        .unwrap()
        .with_clock(move || clock.load(Ordering::Relaxed));
    let texts = distinct_texts(210);
    let sign = |i: usize, host: &str| d.sign(&Document::new(&format!("http://{host}/{i}"), "", &texts[i]));
    let old: Vec<_> = (0..200).map(|i| sign(i, "old")).collect();
    for chunk in old.chunks(50) {
        let verdicts = d.check_batch(chunk, UrlTier::Check).unwrap();
        assert!(verdicts.iter().all(|v| !v.is_duplicate()));
    }
    let records = |d: &Deduper<RedisStore>| {
        d.store()
            .memory_by_part()
            .unwrap()
            .into_iter()
            .find(|p| p.part == "doc records")
            .map_or(0, |p| p.keys)
    };
    assert!(records(&d) >= 4, "200 documents in fewer than 4 buckets");
    now.fetch_add(7200, Ordering::Relaxed);
    let new: Vec<_> = (200..210).map(|i| sign(i, "new")).collect();
    let verdicts = d.check_batch(&new, UrlTier::Check).unwrap();
    assert!(verdicts.iter().all(|v| !v.is_duplicate()));
    d.purge_expired().unwrap();
    assert_eq!(d.stats().unwrap().documents, 10);
    assert!(records(&d) <= 2, "{} record buckets left", records(&d));
    // Expired documents are gone from every index: their copies are new.
    for i in [0, 63, 64, 130, 199] {
        let v = d
            .check(&Document::new(&format!("http://again/{i}"), "", &texts[i]))
            .unwrap();
        assert!(
            !v.is_duplicate(),
            "document {i} still found after its purge: {v:?}"
        );
    }
    // Live ones are still found.
    let v = d
        .check(&Document::new("http://again/205", "", &texts[205]))
        .unwrap();
    assert!(v.is_duplicate(), "{v:?}");
    assert_eq!(d.stats().unwrap().documents, 15);
    d.store().clear().unwrap();
}

fn replicated(url: &str, ns: &str) -> Deduper<ReplicatedStore> {
    Deduper::new(
        ReplicatedStore::open_with(url, common::redis_options(ns)).unwrap(),
        DedupConfig::default(),
    )
    .unwrap()
}

/// The log length and the snapshot's position, read from Redis directly.
fn log_state(url: &str, ns: &str) -> (u64, Option<u64>) {
    let client = redis::Client::open(url).unwrap();
    let mut c = client.get_connection().unwrap();
    let len: u64 = redis::cmd("LLEN")
        .arg(format!("{{{ns}}}:log"))
        .query(&mut c)
        .unwrap();
    let snap: Option<u64> = redis::cmd("HGET")
        .arg(format!("{{{ns}}}:lh"))
        .arg("snap_pos")
        .query(&mut c)
        .unwrap();
    (len, snap)
}

/// A replica that writes snapshots often: the log is trimmed to what came
/// after the snapshot, a process opened afterwards loads snapshot + log,
/// and one whose position was trimmed away while it idled reloads.
#[test]
fn snapshots_trim_the_log_and_late_replicas_reload_everything() {
    let Some(url) = common::redis_url("snapshots_trim_the_log_and_late_replicas_reload_everything") else {
        return;
    };
    let ns = common::unique_namespace("snap");
    let texts = distinct_texts(40);
    let store = ReplicatedStore::open_with(&url, common::redis_options(&ns))
        .unwrap()
        .compact_after(1);
    store.clear().unwrap();
    let writer = Deduper::new(store, DedupConfig::default()).unwrap();
    // Opening wrote the parameters, and with a compaction threshold of one
    // byte that commit started a snapshot (at the idle replica's position
    // to be). It must be done before the checks below: while one is being
    // written no other starts, and on a loaded machine a slow upload
    // spanned all twenty checks, so the only snapshot was the one at the
    // idle replica's position (CI, 2026-12-03).
    writer.store().finish_snapshot().unwrap();
    // Opened before the documents are written, then left idle.
    let idle = replicated(&url, &ns);
    let idle_at = idle.store().position();
    for (i, t) in texts.iter().enumerate().take(20) {
        assert!(
            !writer
                .check(&Document::new(&format!("http://s/{i}"), "", t))
                .unwrap()
                .is_duplicate()
        );
    }
    // Snapshots were written as the log outgrew half the last one (each
    // uploaded by a thread while checks went on): the log holds only what
    // came after the newest.
    writer.store().finish_snapshot().unwrap();
    let (len, snap) = log_state(&url, &ns);
    let snap = snap.expect("no snapshot written");
    assert!(
        snap > idle_at,
        "snapshot at {snap}, the idle replica at {idle_at}"
    );
    assert_eq!(snap + len, writer.store().position(), "log length {len}");

    let late = replicated(&url, &ns);
    assert_eq!(late.store().position(), writer.store().position());
    assert_eq!(late.stats().unwrap().documents, 20);
    for (i, t) in texts.iter().enumerate().take(20) {
        let v = late
            .check(&Document::new(&format!("http://late/{i}"), "", t))
            .unwrap();
        match v {
            Verdict::Duplicate(d) => assert_eq!(d.of, format!("http://s/{i}")),
            other => panic!("{i}: {other:?}"),
        }
    }
    // The idle replica's position was trimmed: it reloads.
    assert_eq!(idle.store().position(), idle_at);
    let v = idle
        .check(&Document::new("http://idle/0", "", &texts[0]))
        .unwrap();
    assert!(v.is_duplicate(), "{v:?}");
    assert!(
        !idle
            .check(&Document::new("http://idle/new", "", &texts[30]))
            .unwrap()
            .is_duplicate()
    );
    assert_eq!(writer.stats().unwrap().documents, 21);
    writer.store().clear().unwrap();
}

/// The replicated store through a server crash: typed transient errors
/// while it is down, nothing acknowledged lost after it restarts (from
/// its append-only file), and when a server comes back empty (no
/// persistence) every replica drops what the server no longer has.
#[test]
fn replicas_survive_a_restarted_server_and_follow_a_server_that_lost_its_data() {
    if common::redis_url("replicas_survive_a_restarted_server").is_none() {
        return;
    }
    let Some(mut server) = Server::start() else {
        return;
    };
    let options = RedisOptions {
        io_timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_secs(1),
        ..common::redis_options("restart-replicated")
    };
    let url = server.url();
    let open = || {
        Deduper::new(
            ReplicatedStore::open_with(&url, options.clone()).unwrap(),
            DedupConfig::default(),
        )
        .unwrap()
    };
    let d = open();
    let [a, b] = &texts()[..2] else { unreachable!() };
    assert!(
        !d.check(&Document::new("http://a/1", "", &a[0]))
            .unwrap()
            .is_duplicate()
    );
    server.kill();
    for _ in 0..2 {
        let e = d.check(&Document::new("http://b/1", "", &b[0])).unwrap_err();
        assert!(
            e.is_transient() && matches!(e, Error::Disconnected { .. }),
            "{e:?}"
        );
    }
    let e = ReplicatedStore::open_with(&url, options.clone()).unwrap_err();
    assert!(matches!(e, Error::Unreachable { .. }), "{e:?}");
    server.restart();
    match d.check(&Document::new("http://a/2", "", &a[1])).unwrap() {
        Verdict::Duplicate(dup) => assert_eq!(dup.of, "http://a/1"),
        other => panic!("acknowledged document lost: {other:?}"),
    }
    assert!(
        !d.check(&Document::new("http://b/1", "", &b[0]))
            .unwrap()
            .is_duplicate()
    );
    assert_eq!(d.stats().unwrap().documents, 2);
    assert_eq!(open().stats().unwrap().documents, 2);

    // Now the server loses everything (its files deleted, as a server
    // without persistence restarts).
    server.kill();
    for f in std::fs::read_dir(server.dir.path()).unwrap() {
        let p = f.unwrap().path();
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        } else {
            std::fs::remove_file(p).unwrap();
        }
    }
    server.restart();
    // The connection from before the crash fails once (transient, as the
    // crawler retries); then the write finds the log shorter than the
    // replica, reloads the (empty) state and goes on from it, as every
    // other process will.
    let doc = Document::new("http://a/3", "", &a[2]);
    let v = d.check(&doc).or_else(|e| {
        assert!(e.is_transient(), "{e:?}");
        d.check(&doc)
    });
    let v = v.unwrap();
    assert!(!v.is_duplicate(), "{v:?}");
    assert_eq!(d.stats().unwrap().documents, 1);
    assert_eq!(open().stats().unwrap().documents, 1);
}

/// A replica far behind (more entries than one reply carries, some of
/// them large) catches up over several replies, on a read and on a write
/// that conflicts, and ends equal to the writer.
#[test]
fn a_lagging_replica_catches_up_over_many_replies() {
    let Some(url) = common::redis_url("a_lagging_replica_catches_up_over_many_replies") else {
        return;
    };
    let ns = common::unique_namespace("lag");
    let writer = ReplicatedStore::open_with(&url, common::redis_options(&ns)).unwrap();
    writer.clear().unwrap();
    let reader = ReplicatedStore::open_with(&url, common::redis_options(&ns)).unwrap();
    let lagging = ReplicatedStore::open_with(&url, common::redis_options(&ns)).unwrap();
    // 1,200 small entries and 3 of 6 MB (16 MB per reply at most).
    for i in 0..1200u32 {
        writer
            .write(|t| t.set_meta(&format!("k{}", i % 7), &i.to_le_bytes()))
            .unwrap();
        if i % 400 == 0 {
            writer
                .write(|t| t.set_meta("big", &vec![i as u8; 6 << 20]))
                .unwrap();
        }
    }
    let end = writer.position();
    assert_eq!(end, 1203);
    // A read catches up first.
    let big = reader.read(|t| t.meta("big")).unwrap().unwrap();
    assert_eq!((big.len(), big[0]), (6 << 20, (800 % 256) as u8));
    assert_eq!(reader.position(), end);
    // A write from far behind: refused, caught up, run again, appended.
    lagging.write(|t| t.set_meta("last", b"x")).unwrap();
    assert_eq!(lagging.position(), end + 1);
    assert_eq!(lagging.conflicts(), 1);
    for k in 0..7 {
        let key = format!("k{k}");
        let want = writer.read(|t| t.meta(&key)).unwrap();
        assert_eq!(lagging.read(|t| t.meta(&key)).unwrap(), want, "{key}");
    }
    assert_eq!(writer.read(|t| t.meta("last")).unwrap(), Some(b"x".to_vec()));
    writer.clear().unwrap();
}

/// What a replica answers for each of `texts` without writing: the URL of
/// the copy it holds, if any.
fn answers(d: &Deduper<ReplicatedStore>, texts: &[String]) -> Vec<Option<String>> {
    texts
        .iter()
        .map(|t| {
            let sig = d.sign(&Document::new("http://probe/", "", t));
            d.lookup(&sig).unwrap().map(|dup| dup.of)
        })
        .collect()
}

/// Loses the last `n` entries of the namespace's log, as a failover to a
/// Redis replica that had not received them yet (replication is
/// asynchronous) or a restart from an append-only file synced every
/// second does: the entries, their chain values and their bytes in the
/// head go together, as each was written by one script.
fn lose_log_tail(url: &str, ns: &str, n: usize) {
    let client = redis::Client::open(url).unwrap();
    let mut c = client.get_connection().unwrap();
    for _ in 0..n {
        let e: Vec<u8> = redis::cmd("RPOP")
            .arg(format!("{{{ns}}}:log"))
            .query(&mut c)
            .unwrap();
        let _: Option<Vec<u8>> = redis::cmd("RPOP")
            .arg(format!("{{{ns}}}:lc"))
            .query(&mut c)
            .unwrap();
        let _: i64 = redis::cmd("HINCRBY")
            .arg(format!("{{{ns}}}:lh"))
            .arg("cb")
            .arg(-(e.len() as i64))
            .query(&mut c)
            .unwrap();
    }
}

/// The log loses its last entry after one replica applied it (a failover
/// to a Redis replica that lagged); another replica, which never saw it,
/// writes on from the shorter log past the first one's position. The
/// first must not apply the new entries on top of the lost one (it would
/// hold a state no log position describes, and answer differently from
/// every other replica, silently): it finds its history is not the log's
/// and reloads, and both answer alike.
#[test]
fn a_replica_whose_entries_the_log_lost_resyncs_instead_of_diverging() {
    let Some(url) = common::redis_url("a_replica_whose_entries_the_log_lost_resyncs") else {
        return;
    };
    let ns = common::unique_namespace("tail-lost");
    let texts = distinct_texts(6);
    let a = replicated(&url, &ns);
    a.store().clear().unwrap();
    let b = replicated(&url, &ns);
    for (i, t) in texts.iter().enumerate().take(3) {
        assert!(
            !a.check(&Document::new(&format!("http://a/{i}"), "", t))
                .unwrap()
                .is_duplicate()
        );
    }
    b.store().sync().unwrap();
    let end = a.store().position();
    assert_eq!(b.store().position(), end);
    // a's fourth document is appended and applied by a, then lost.
    assert!(
        !a.check(&Document::new("http://a/3", "", &texts[3]))
            .unwrap()
            .is_duplicate()
    );
    assert_eq!(a.store().position(), end + 1);
    lose_log_tail(&url, &ns, 1);
    // b writes two documents from the log's end: the log grows past a.
    for (i, t) in texts.iter().enumerate().take(6).skip(4) {
        assert!(
            !b.check(&Document::new(&format!("http://b/{i}"), "", t))
                .unwrap()
                .is_duplicate()
        );
    }
    assert_eq!(b.store().position(), end + 2);

    let want: Vec<Option<String>> = [
        "http://a/0",
        "http://a/1",
        "http://a/2",
        "",
        "http://b/4",
        "http://b/5",
    ]
    .iter()
    .map(|u| (!u.is_empty()).then(|| u.to_string()))
    .collect();
    assert_eq!(answers(&b, &texts), want, "b follows the log");
    assert_eq!(answers(&a, &texts), want, "a diverged from the log");
    assert_eq!(a.store().position(), b.store().position());
    assert_eq!(a.store().chain(), b.store().chain());
    assert_eq!(a.stats().unwrap().documents, b.stats().unwrap().documents);
    // a found it and reloaded once; b never applied the lost entry.
    assert_eq!((a.store().resyncs(), b.store().resyncs()), (1, 0));
    // a goes on from the log's state: the lost document is new again.
    assert!(
        !a.check(&Document::new("http://a/3b", "", &texts[3]))
            .unwrap()
            .is_duplicate()
    );
    assert_eq!(answers(&b, &texts)[3].as_deref(), Some("http://a/3b"));
    a.store().clear().unwrap();
}

/// The server loses the namespace whole (restarted without persistence)
/// and another replica writes past this one's position before it asks
/// again: the log is as long as its position but another history.
#[test]
fn a_replica_finds_a_recreated_log_that_grew_past_it() {
    let Some(url) = common::redis_url("a_replica_finds_a_recreated_log_that_grew_past_it") else {
        return;
    };
    let ns = common::unique_namespace("recreated");
    let texts = distinct_texts(7);
    let a = replicated(&url, &ns);
    a.store().clear().unwrap();
    let b = replicated(&url, &ns);
    for (i, t) in texts.iter().enumerate().take(3) {
        assert!(
            !a.check(&Document::new(&format!("http://a/{i}"), "", t))
                .unwrap()
                .is_duplicate()
        );
    }
    b.store().sync().unwrap();
    // Everything of the namespace is lost at once.
    let client = redis::Client::open(url.as_str()).unwrap();
    simcrawl_dedup::store::clear_namespace(&mut client.get_connection().unwrap(), &ns).unwrap();
    // b finds the log shorter than its replica, reloads (empty) and writes
    // four documents: the new log is longer than a's position.
    for (i, t) in texts.iter().enumerate().take(7).skip(3) {
        assert!(
            !b.check(&Document::new(&format!("http://b/{i}"), "", t))
                .unwrap()
                .is_duplicate()
        );
    }
    assert_eq!(b.store().position(), 4);
    let want: Vec<Option<String>> = (0..7)
        .map(|i| (i >= 3).then(|| format!("http://b/{i}")))
        .collect();
    assert_eq!(answers(&b, &texts), want, "b follows the log");
    assert_eq!(answers(&a, &texts), want, "a diverged from the log");
    assert_eq!(a.store().position(), 4);
    assert_eq!(a.store().chain(), b.store().chain());
    // b found the log shorter than its position, a found another history
    // at its position: each reloaded once.
    assert_eq!((a.store().resyncs(), b.store().resyncs()), (1, 1));
    a.store().clear().unwrap();
}

/// A store opened with `resync_diverged(false)` refuses to go on from a
/// state the log lost, with a typed error naming the replica, the position
/// and both histories, on that call and every later one; opening it again
/// loads the log's state.
#[test]
fn a_store_told_not_to_resync_refuses_a_diverged_replica() {
    let Some(url) = common::redis_url("a_store_told_not_to_resync_refuses_a_diverged_replica") else {
        return;
    };
    let ns = common::unique_namespace("refuse");
    let texts = distinct_texts(4);
    let open_strict = || {
        Deduper::new(
            ReplicatedStore::open_with(&url, common::redis_options(&ns))
                .unwrap()
                .resync_diverged(false),
            DedupConfig::default(),
        )
        .unwrap()
    };
    let a = open_strict();
    a.store().clear().unwrap();
    let b = replicated(&url, &ns);
    assert!(
        !a.check(&Document::new("http://a/0", "", &texts[0]))
            .unwrap()
            .is_duplicate()
    );
    b.store().sync().unwrap();
    assert!(
        !a.check(&Document::new("http://a/1", "", &texts[1]))
            .unwrap()
            .is_duplicate()
    );
    let at = a.store().position();
    let chain = a.store().chain();
    lose_log_tail(&url, &ns, 1);
    for (i, t) in texts.iter().enumerate().take(4).skip(2) {
        assert!(
            !b.check(&Document::new(&format!("http://b/{i}"), "", t))
                .unwrap()
                .is_duplicate()
        );
    }
    let e = a.store().sync().unwrap_err();
    match &e {
        Error::Diverged(d) => {
            assert_eq!((&d.namespace, d.position, &d.expected), (&ns, at, &chain));
            assert!(!d.replica.is_empty());
            assert!(d.found.contains("has chain value"), "{}", d.found);
            assert!(!d.found.contains(&chain), "{}", d.found);
        }
        other => panic!("{other:?}"),
    }
    assert!(!e.is_transient());
    assert!(
        e.to_string().contains(&ns) && e.to_string().contains("Open the store again"),
        "{e}"
    );
    // Every later call refuses too, reads and writes alike.
    let e = a.check(&Document::new("http://a/2", "", &texts[2])).unwrap_err();
    assert!(matches!(e, Error::Diverged(_)), "{e:?}");
    let e = a
        .lookup(&a.sign(&Document::new("http://p/", "", &texts[1])))
        .unwrap_err();
    assert!(matches!(e, Error::Diverged(_)), "{e:?}");
    assert_eq!(a.store().resyncs(), 0);
    // Opened again, it holds the log's state.
    let again = open_strict();
    assert_eq!(answers(&again, &texts), answers(&b, &texts));
    assert_eq!(answers(&b, &texts)[1], None);
    assert_eq!(again.store().chain(), b.store().chain());
    b.store().clear().unwrap();
}

/// Without a loss nothing resyncs: a replica that lagged behind a
/// snapshot reloads it (behind, not diverged), one that follows catches
/// up entry by entry, a writer whose snapshots trim the log goes on
/// writing, and a replica dropped and opened again (a restarted process)
/// loads the snapshot and the log after it at the same position and chain
/// value as the others.
#[test]
fn without_a_loss_replicas_catch_up_and_restart_without_resyncing() {
    let Some(url) = common::redis_url("without_a_loss_replicas_catch_up_and_restart_without_resyncing")
    else {
        return;
    };
    let ns = common::unique_namespace("no-loss");
    let texts = distinct_texts(30);
    let store = ReplicatedStore::open_with(&url, common::redis_options(&ns))
        .unwrap()
        .compact_after(1);
    store.clear().unwrap();
    let writer = Deduper::new(store, DedupConfig::default()).unwrap();
    let idle = replicated(&url, &ns);
    let follower = replicated(&url, &ns);
    for (i, t) in texts.iter().enumerate().take(20) {
        assert!(
            !writer
                .check(&Document::new(&format!("http://w/{i}"), "", t))
                .unwrap()
                .is_duplicate()
        );
        if i % 3 == 0 {
            follower.store().sync().unwrap();
        }
        if i % 5 == 0 {
            writer.store().finish_snapshot().unwrap();
        }
    }
    writer.store().finish_snapshot().unwrap();
    let (_, snap) = log_state(&url, &ns);
    assert!(snap.is_some_and(|p| p > 0), "no snapshot written");
    // The follower writes too, from the writer's history.
    assert!(
        !follower
            .check(&Document::new("http://f/20", "", &texts[20]))
            .unwrap()
            .is_duplicate()
    );
    let restarted = replicated(&url, &ns);
    let all = [&writer, &idle, &follower, &restarted];
    let want = answers(&writer, &texts);
    assert_eq!(want.iter().flatten().count(), 21);
    for (n, d) in all.iter().enumerate() {
        assert_eq!(answers(d, &texts), want, "replica {n}");
    }
    let (pos, chain) = (writer.store().position(), writer.store().chain());
    for (n, d) in all.iter().enumerate() {
        assert_eq!(
            (d.store().position(), d.store().chain()),
            (pos, chain.clone()),
            "replica {n}"
        );
        assert_eq!(d.store().resyncs(), 0, "replica {n}");
    }
    // The writer restarted: dropped and opened again.
    drop(writer);
    let writer = replicated(&url, &ns);
    assert_eq!((writer.store().position(), writer.store().chain()), (pos, chain));
    assert_eq!(answers(&writer, &texts), want);
    assert!(
        !writer
            .check(&Document::new("http://w/21", "", &texts[21]))
            .unwrap()
            .is_duplicate()
    );
    assert_eq!(answers(&idle, &texts)[21].as_deref(), Some("http://w/21"));
    for d in [&writer, &idle, &follower, &restarted] {
        assert_eq!(d.store().resyncs(), 0);
    }
    writer.store().clear().unwrap();
}

/// A namespace written before the chain (layout `replicated-1`: no chain
/// list, no chain values in the head), with a snapshot and without, is
/// upgraded when opened and read whole; an entry appended afterwards
/// without a chain value (an older process still running) is refused with
/// a message saying so, not followed.
#[test]
fn a_namespace_of_the_layout_before_the_chain_is_upgraded() {
    let Some(url) = common::redis_url("a_namespace_of_the_layout_before_the_chain_is_upgraded") else {
        return;
    };
    upgrade_from_the_layout_before_the_chain(&url, true);
    upgrade_from_the_layout_before_the_chain(&url, false);
}

fn upgrade_from_the_layout_before_the_chain(url: &str, with_snapshot: bool) {
    let url = url.to_string();
    let ns = common::unique_namespace("upgrade");
    let texts = distinct_texts(12);
    let store = ReplicatedStore::open_with(&url, common::redis_options(&ns))
        .unwrap()
        .compact_after(if with_snapshot { 1 } else { u64::MAX });
    store.clear().unwrap();
    let writer = Deduper::new(store, DedupConfig::default()).unwrap();
    for (i, t) in texts.iter().enumerate().take(9) {
        assert!(
            !writer
                .check(&Document::new(&format!("http://w/{i}"), "", t))
                .unwrap()
                .is_duplicate()
        );
    }
    writer.store().finish_snapshot().unwrap();
    // One entry after the snapshot, so the log has one to upgrade.
    writer.store().set_compact_after(u64::MAX);
    assert!(
        !writer
            .check(&Document::new("http://w/9", "", &texts[9]))
            .unwrap()
            .is_duplicate()
    );
    let want = answers(&writer, &texts);
    let position = writer.store().position();
    drop(writer);
    // What the older layout left: its marker, the log, a head without
    // chain values.
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut c = client.get_connection().unwrap();
    let key = |k: &str| format!("{{{ns}}}:{k}");
    let _: () = redis::cmd("SET")
        .arg(key("m:layout"))
        .arg("replicated-1")
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("DEL").arg(key("lc")).query(&mut c).unwrap();
    let _: () = redis::cmd("HDEL")
        .arg(key("lh"))
        .arg("bc")
        .arg("snap_chain")
        .query(&mut c)
        .unwrap();
    let (len, snap) = log_state(&url, &ns);
    assert!(
        len > 0 && snap.is_some() == with_snapshot,
        "log {len}, snapshot {snap:?}"
    );

    let d = replicated(&url, &ns);
    let layout: String = redis::cmd("GET").arg(key("m:layout")).query(&mut c).unwrap();
    assert_eq!(layout, "replicated-2");
    let chains: u64 = redis::cmd("LLEN").arg(key("lc")).query(&mut c).unwrap();
    assert_eq!(chains, len);
    assert_eq!(d.store().position(), position);
    assert_eq!(answers(&d, &texts), want);
    // Upgraded once: a second process finds it done, at the same chain.
    let e = replicated(&url, &ns);
    assert_eq!(e.store().chain(), d.store().chain());
    assert!(
        !d.check(&Document::new("http://d/10", "", &texts[10]))
            .unwrap()
            .is_duplicate()
    );
    assert_eq!(answers(&e, &texts)[10].as_deref(), Some("http://d/10"));

    // An older process appends an entry without a chain value.
    let last: Vec<u8> = redis::cmd("LINDEX")
        .arg(key("log"))
        .arg(-1)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("RPUSH")
        .arg(key("log"))
        .arg(last)
        .query(&mut c)
        .unwrap();
    let err = e.store().sync().unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err:?}");
    assert!(err.to_string().contains("older simcrawl"), "{err}");
    let err = d
        .check(&Document::new("http://d/11", "", &texts[11]))
        .unwrap_err();
    assert!(err.to_string().contains("older simcrawl"), "{err}");
    d.store().clear().unwrap();
}

/// A spread of `x` over 64 bits (splitmix64's finalizer).
fn spread(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One document of a namespace written in layout 2: its record and its
/// three band keys.
type Layout2Doc = (u64, simcrawl_dedup::store::DocRecord, [u64; 3]);

/// Key `rest` of namespace `ns`, as the store names it.
fn ns_key(ns: &str, rest: &[u8]) -> Vec<u8> {
    let mut k = format!("{{{ns}}}:").into_bytes();
    k.extend_from_slice(rest);
    k
}

/// The test server, a connection to it and namespace `ns` (this process's
/// own) filled with `docs` documents in layout 2 ([`write_layout_2`]);
/// `None` when the test is skipped.
fn layout_2_namespace(
    test: &str,
    ns: &str,
    docs: u64,
) -> Option<(String, String, redis::Connection, Vec<Layout2Doc>)> {
    let url = common::redis_url(test)?;
    let ns = format!("{ns}-{}", std::process::id());
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut c = client.get_connection().unwrap();
    let written = write_layout_2(&mut c, &ns, docs);
    Some((url, ns, c, written))
}

/// Writes `docs` documents into namespace `ns` byte for byte as layout 2
/// (records in hashes `d:`, a list per block key `b:`, 2^18 band buckets of
/// 4-byte tags `l:`) wrote them, marker included; returns what it wrote.
fn write_layout_2(c: &mut redis::Connection, ns: &str, docs: u64) -> Vec<Layout2Doc> {
    use simcrawl_dedup::store::DocRecord;
    use simcrawl_dedup::{BlockLayout, Fingerprint, Sketch};
    simcrawl_dedup::store::clear_namespace(c, ns).unwrap();
    let key = |rest: &[u8]| ns_key(ns, rest);
    let id5 = |id: u64| id.to_be_bytes()[3..].to_vec();
    let layout = BlockLayout::new(4, 3).unwrap();
    let mut written = Vec::new();
    for id in 0..docs {
        let text = format!("document number {id} of the layout two namespace, {}", spread(id));
        let rec = DocRecord {
            fingerprint: Fingerprint::new(spread(id ^ 0xabc)),
            inserted_at: 1_700_000_000 + id,
            title: None,
            sketch: Sketch::of(&text).unwrap().narrow(8),
            url: format!("http://a.example/{id}"),
            article: None,
            extent: None,
        };
        let fp = rec.fingerprint.low();
        let mut pipe = redis::pipe();
        pipe.cmd("HSET")
            .arg(key(format!("d:{}", id >> 6).as_bytes()))
            .arg((id & 63).to_string())
            .arg(rec.encode());
        pipe.cmd("ZADD").arg(key(b"o")).arg(id >> 6).arg(id >> 6);
        for (t, k) in layout.keys(fp) {
            let mut name = vec![b'b', b':', t as u8];
            name.extend_from_slice(&k.to_be_bytes());
            let mut entry = fp.to_be_bytes().to_vec();
            entry.extend(id5(id));
            pipe.cmd("APPEND").arg(key(&name)).arg(entry);
        }
        // Two band keys of its own and one it shares with its neighbour
        // (ids 2k and 2k + 1), which must stay in that order.
        let bands = [spread(id << 8), spread((id << 8) | 1), spread(1 << 40 | (id / 2))];
        for b in bands {
            let mut name = vec![b'l', b':'];
            name.extend_from_slice(&((b >> 46) as u32).to_be_bytes()[1..]);
            let mut entry = ((b >> 16) as u32).to_be_bytes().to_vec();
            entry.extend(id5(id));
            pipe.cmd("APPEND").arg(key(&name)).arg(entry);
        }
        pipe.query::<()>(c).unwrap();
        written.push((id, rec, bands));
    }
    redis::pipe()
        .cmd("SET")
        .arg(key(b"c"))
        .arg(docs)
        .cmd("SET")
        .arg(key(b"n"))
        .arg(docs)
        .cmd("SET")
        .arg(key(b"m:layout"))
        .arg("2")
        .query::<()>(c)
        .unwrap();
    written
}

/// A namespace written by the layout before this one (layout 2: records in
/// hashes `d:`, a list per block key `b:`, 2^18 band buckets of 4-byte
/// tags `l:`), built here byte for byte as that layout wrote it, is
/// converted when opened: every record, posting and band entry reads back
/// through the new layout, with the band entries still oldest first, the
/// count and the insertion order kept, and no old key left. A second open
/// finds the marker and converts nothing.
#[test]
fn a_namespace_of_layout_2_is_converted_when_opened() {
    use simcrawl_dedup::BlockLayout;
    const DOCS: u64 = 150; // three record buckets, the last one partly filled
    let Some((url, ns, mut c, docs)) = layout_2_namespace(
        "a_namespace_of_layout_2_is_converted_when_opened",
        "layout2",
        DOCS,
    ) else {
        return;
    };
    let key = |rest: &[u8]| ns_key(&ns, rest);
    let layout = BlockLayout::new(4, 3).unwrap();

    let store = RedisStore::open_with(&url, common::redis_options(&ns)).unwrap();
    let marker: String = redis::cmd("GET").arg(key(b"m:layout")).query(&mut c).unwrap();
    assert_eq!(marker, "3");
    let names: Vec<Vec<u8>> = redis::cmd("KEYS").arg(key(b"*")).query(&mut c).unwrap();
    let prefix = key(b"").len();
    for n in &names {
        assert!(
            !matches!(n[prefix..].first(), Some(b'd' | b'b' | b'l')),
            "old key left: {}",
            String::from_utf8_lossy(n)
        );
    }
    assert!(names.len() > 3, "{names:?}");
    store
        .read(|t| {
            assert_eq!(t.doc_count()?, DOCS);
            for (id, rec, bands) in &docs {
                assert_eq!(t.doc(*id)?.as_ref(), Some(rec), "record {id}");
                let fp = rec.fingerprint;
                let keys: Vec<(usize, u64)> = layout.keys(fp.low()).collect();
                let mut near = Vec::new();
                t.near_all(&keys, fp, 3, &mut near)?;
                assert!(near.contains(&(0, *id)), "postings of {id}: {near:?}");
                for (i, b) in bands.iter().enumerate() {
                    let mut ids = Vec::new();
                    t.band_docs(*b, &mut ids)?;
                    let want = if i < 2 {
                        vec![*id]
                    } else {
                        (id / 2 * 2..(id / 2 * 2 + 2).min(DOCS)).collect()
                    };
                    assert_eq!(ids, want, "band {i} of {id}");
                }
            }
            let mut oldest = Vec::new();
            t.oldest_docs(70, &mut oldest)?;
            let ids: Vec<u64> = oldest.iter().map(|(id, _)| *id).collect();
            assert_eq!(ids, (0..70).collect::<Vec<_>>());
            Ok(())
        })
        .unwrap();
    drop(store);
    let again = RedisStore::open_with(&url, common::redis_options(&ns)).unwrap();
    assert_eq!(again.read(|t| t.doc_count()).unwrap(), DOCS);
    again.clear().unwrap();
}

/// Records written out of id order (a transaction's records land in the
/// middle of their bucket, others replace or empty slots) read back as
/// written, through the server-side read and through the oldest-first
/// scan, and the document count follows exactly what was filled and
/// emptied.
#[test]
fn records_written_in_any_order_read_back_and_count_exactly() {
    use simcrawl_dedup::store::DocRecord;
    use simcrawl_dedup::{Fingerprint, Sketch};
    let Some(store) = common::redis_store("records_written_in_any_order") else {
        return;
    };
    let rec = |id: u64, url: &str| DocRecord {
        fingerprint: Fingerprint::new(spread(id)),
        inserted_at: 1_700_000_000 + id,
        title: None,
        sketch: Sketch::of(&format!("the text of record {id}, {}", spread(id))).unwrap(),
        url: url.to_string(),
        article: None,
        extent: None,
    };
    // Descending, then ascending into the gaps left, in three transactions.
    let first: Vec<u64> = (0..140).rev().filter(|id| id % 3 != 1).collect();
    let second: Vec<u64> = (0..140).filter(|id| id % 3 == 1).collect();
    for ids in [&first, &second] {
        store
            .write(|t| {
                for &id in ids.iter() {
                    t.put_doc(id, rec(id, &format!("http://a.example/{id}")))?;
                }
                Ok(())
            })
            .unwrap();
    }
    // Replace one record with a longer URL, remove every fifth.
    store
        .write(|t| {
            t.put_doc(70, rec(70, &format!("http://a.example/{}", "long/".repeat(100))))?;
            for id in (0..140).step_by(5) {
                t.remove_doc(id)?;
            }
            Ok(())
        })
        .unwrap();
    store
        .read(|t| {
            for id in 0..140u64 {
                // 70 was replaced, then removed.
                let want = if id % 5 == 0 {
                    None
                } else {
                    Some(rec(id, &format!("http://a.example/{id}")))
                };
                assert_eq!(t.doc(id)?, want, "record {id}");
            }
            assert_eq!(t.doc_count()?, 140 - 28);
            let mut oldest = Vec::new();
            t.oldest_docs(200, &mut oldest)?;
            let ids: Vec<u64> = oldest.iter().map(|(id, _)| *id).collect();
            assert_eq!(ids, (0..140).filter(|id| id % 5 != 0).collect::<Vec<_>>());
            Ok(())
        })
        .unwrap();
    store
        .write(|t| {
            t.put_doc(
                71,
                rec(71, &format!("http://a.example/{}", "longer/".repeat(100))),
            )?;
            Ok(())
        })
        .unwrap();
    // Ascending ids after every record of their bucket: appended (the
    // commit script's short path), in two transactions and one at a time.
    for ids in [200..230u64, 230..250, 250..251, 251..256] {
        store
            .write(|t| {
                for id in ids.clone() {
                    t.put_doc(id, rec(id, &format!("http://b.example/{id}")))?;
                }
                Ok(())
            })
            .unwrap();
    }
    store
        .read(|t| {
            for id in 200..256u64 {
                assert_eq!(
                    t.doc(id)?,
                    Some(rec(id, &format!("http://b.example/{id}"))),
                    "record {id}"
                );
            }
            assert_eq!(t.doc(199)?, None);
            assert_eq!(t.doc(256)?, None);
            Ok(())
        })
        .unwrap();
    let fresh = RedisStore::open_with(store.url(), common::redis_options(&ns_of(&store))).unwrap();
    fresh
        .read(|t| {
            assert_eq!(
                t.doc(71)?,
                Some(rec(71, &format!("http://a.example/{}", "longer/".repeat(100))))
            );
            assert_eq!(t.doc(72)?, Some(rec(72, "http://a.example/72")));
            assert_eq!(t.doc(69)?, Some(rec(69, "http://a.example/69")));
            assert_eq!(t.doc_count()?, 140 - 28 + 56);
            Ok(())
        })
        .unwrap();
    store.clear().unwrap();
}

/// The namespace a store was opened on, from its location.
fn ns_of(s: &RedisStore) -> String {
    let loc = s.location().unwrap().to_string_lossy().into_owned();
    loc.rsplit("(namespace ")
        .next()
        .unwrap()
        .trim_end_matches(')')
        .to_string()
}

/// Processes that open a layout 2 namespace at the same moment: one
/// converts it (under `m:migrating`), the others wait for the marker; all
/// then read the same converted documents, and nothing is converted twice
/// (a band or posting appended twice would show as a duplicate entry).
#[test]
fn concurrent_opens_of_a_layout_2_namespace_convert_it_once() {
    const DOCS: u64 = 600;
    let Some((url, ns, mut c, docs)) = layout_2_namespace(
        "concurrent_opens_of_a_layout_2_namespace_convert_it_once",
        "layout2-race",
        DOCS,
    ) else {
        return;
    };
    let stores: Vec<RedisStore> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| RedisStore::open_with(&url, common::redis_options(&ns)).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for store in &stores {
        store
            .read(|t| {
                assert_eq!(t.doc_count()?, DOCS);
                for (id, rec, bands) in docs.iter().step_by(7) {
                    assert_eq!(t.doc(*id)?.as_ref(), Some(rec), "record {id}");
                    let mut ids = Vec::new();
                    t.band_docs(bands[0], &mut ids)?;
                    assert_eq!(ids, vec![*id], "band of {id}");
                }
                Ok(())
            })
            .unwrap();
    }
    let lock: Option<String> = redis::cmd("GET")
        .arg(ns_key(&ns, b"m:migrating"))
        .query(&mut c)
        .unwrap();
    assert_eq!(lock, None, "the conversion's lock is released");
    stores[0].clear().unwrap();
}
