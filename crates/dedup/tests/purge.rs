//! The window purge reads only expired entries, in bounded slices, on
//! every store (a store contract, run by [`store_suite!`]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use simcrawl_dedup::store::{DocRecord, UrlRecord};
use simcrawl_dedup::{
    CanonicalUrl, DedupConfig, Deduper, DocId, Fingerprint, MemoryStore, PURGE_SLICE, ReadTables, Result,
    Store, Tables, UrlVerdict,
};

/// A store that logs how many URL entries each purge read returned and how
/// many URLs were removed: everything the purge touches goes through the
/// [`Tables`] trait.
#[derive(Debug)]
struct Counting<S> {
    inner: S,
    /// Entries returned by each `urls_seen_before` call.
    reads: Mutex<Vec<usize>>,
    removed: AtomicU64,
}

struct Tap<'a> {
    t: &'a mut dyn Tables,
    reads: &'a Mutex<Vec<usize>>,
    removed: &'a AtomicU64,
}

impl ReadTables for Tap<'_> {
    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.t.meta(key)
    }
    fn url(&self, digest: u128) -> Result<Option<UrlRecord>> {
        self.t.url(digest)
    }
    fn title_docs(&self, digest: u128, limit: usize, out: &mut Vec<DocId>) -> Result<()> {
        self.t.title_docs(digest, limit, out)
    }
    fn candidates(&self, table: usize, key: u64, out: &mut Vec<(Fingerprint, DocId)>) -> Result<()> {
        self.t.candidates(table, key, out)
    }
    fn band_docs(&self, key: u64, out: &mut Vec<DocId>) -> Result<()> {
        self.t.band_docs(key, out)
    }
    fn doc(&self, id: DocId) -> Result<Option<DocRecord>> {
        self.t.doc(id)
    }
    fn urls_seen_before(&self, cutoff: u64, limit: usize, out: &mut Vec<u128>) -> Result<()> {
        let before = out.len();
        self.t.urls_seen_before(cutoff, limit, out)?;
        assert!(out.len() - before <= limit);
        self.reads.lock().push(out.len() - before);
        Ok(())
    }
    fn oldest_docs(&self, limit: usize, out: &mut Vec<(DocId, DocRecord)>) -> Result<()> {
        self.t.oldest_docs(limit, out)
    }
    fn doc_count(&self) -> Result<u64> {
        self.t.doc_count()
    }
}

impl Tables for Tap<'_> {
    fn set_meta(&mut self, key: &str, value: &[u8]) -> Result<()> {
        self.t.set_meta(key, value)
    }
    fn put_url(&mut self, digest: u128, rec: &UrlRecord) -> Result<()> {
        self.t.put_url(digest, rec)
    }
    fn remove_url(&mut self, digest: u128) -> Result<bool> {
        self.removed.fetch_add(1, Ordering::Relaxed);
        self.t.remove_url(digest)
    }
    fn add_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        self.t.add_title(digest, id)
    }
    fn remove_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        self.t.remove_title(digest, id)
    }
    fn add_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        self.t.add_block(table, key, fp, id)
    }
    fn remove_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        self.t.remove_block(table, key, fp, id)
    }
    fn add_band(&mut self, key: u64, id: DocId) -> Result<()> {
        self.t.add_band(key, id)
    }
    fn remove_band(&mut self, key: u64, id: DocId) -> Result<()> {
        self.t.remove_band(key, id)
    }
    fn put_doc(&mut self, id: DocId, rec: DocRecord) -> Result<()> {
        self.t.put_doc(id, rec)
    }
    fn remove_doc(&mut self, id: DocId) -> Result<()> {
        self.t.remove_doc(id)
    }
}

impl<S: Store> Store for Counting<S> {
    fn write<R>(&self, mut f: impl FnMut(&mut dyn Tables) -> Result<R>) -> Result<R> {
        self.inner.write(|t| {
            f(&mut Tap {
                t,
                reads: &self.reads,
                removed: &self.removed,
            })
        })
    }
    fn read<R>(&self, f: impl FnMut(&dyn ReadTables) -> Result<R>) -> Result<R> {
        self.inner.read(f)
    }
    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }
    fn location(&self) -> Option<&std::path::Path> {
        self.inner.location()
    }
}

const DAY: u64 = 86_400;

store_suite! {
    all: [purge_reads_only_expired_urls, a_url_record_rewritten_keeps_one_time_entry],
    durable: [],
}

/// The time index the purge reads holds one entry per URL, at its record's
/// time: a record rewritten at the same time (a crawl clears a URL's
/// pending mark when its page is fetched) adds none, and one rewritten at
/// another time moves it.
fn a_url_record_rewritten_keeps_one_time_entry<S: Store>(open: impl Fn(&str) -> S) {
    let store = open("index");
    let (a, b) = (7u128, 9u128);
    let rec = |t: u64, url: &str| UrlRecord {
        first_seen: t,
        url: url.to_string(),
    };
    let seen_before = |cutoff: u64| {
        let mut out = Vec::new();
        store.read(|t| t.urls_seen_before(cutoff, 100, &mut out)).unwrap();
        out.sort_unstable();
        out
    };
    store
        .write(|t| {
            t.put_url(a, &rec(100, "http://a.example/1#pending"))?;
            t.put_url(b, &rec(200, "http://b.example/1"))
        })
        .unwrap();
    store
        .write(|t| t.put_url(a, &rec(100, "http://a.example/1")))
        .unwrap();
    assert_eq!(seen_before(u64::MAX), [a, b]);
    assert_eq!(seen_before(101), [a]);
    assert_eq!(
        store.read(|t| t.url(a)).unwrap().map(|r| r.url).as_deref(),
        Some("http://a.example/1")
    );
    // Seen again later: only the new time is indexed.
    store
        .write(|t| t.put_url(a, &rec(300, "http://a.example/1")))
        .unwrap();
    assert_eq!(seen_before(101), Vec::<u128>::new());
    assert_eq!(seen_before(301), [a, b]);
    assert!(store.write(|t| t.remove_url(a)).unwrap());
    assert_eq!(seen_before(u64::MAX), [b]);
}

fn purge_reads_only_expired_urls<S: Store>(open: impl Fn(&str) -> S) {
    let inner = open("index");
    let t0 = 1_700_000_000;
    let now = Arc::new(AtomicU64::new(t0));
    let clock = now.clone();
    let cfg = DedupConfig {
        window: Some(Duration::from_secs(7 * DAY)),
        ..Default::default()
    };
    let store = Counting {
        inner,
        reads: Mutex::new(Vec::new()),
        removed: AtomicU64::new(0),
    };
    let d = Deduper::new(store, cfg)
        .unwrap()
        .with_clock(move || clock.load(Ordering::Relaxed));
    let expired = 2 * PURGE_SLICE + 100;
    let live = 20_000;
    // Recorded in one transaction per batch: thousands of commits would
    // only slow the test down.
    let record = |prefix: &str, n: usize| {
        d.store()
            .write(|t| {
                for i in 0..n {
                    let url = format!("http://{prefix}.example/{i}");
                    d.check_url_in(t, &url, CanonicalUrl::parse(&url)?)?;
                }
                Ok(())
            })
            .unwrap();
    };
    record("old", expired);
    now.store(t0 + DAY, Ordering::Relaxed);
    record("new", live);
    now.store(t0 + 7 * DAY + 3600, Ordering::Relaxed);
    d.store().reads.lock().clear();
    d.store().removed.store(0, Ordering::Relaxed);

    let purged = d.purge_expired().unwrap();
    assert_eq!(purged.urls, expired as u64);
    // Only the expired entries were read, a slice per transaction, and only
    // they were removed.
    assert_eq!(*d.store().reads.lock(), vec![PURGE_SLICE, PURGE_SLICE, 100]);
    assert_eq!(d.store().removed.load(Ordering::Relaxed), expired as u64);
    // A second purge finds nothing: one empty read.
    d.store().reads.lock().clear();
    assert_eq!(d.purge_expired().unwrap().urls, 0);
    assert_eq!(*d.store().reads.lock(), vec![0]);

    // What remains: the live URLs are still seen, the expired ones are new.
    assert!(matches!(
        d.check_url("http://new.example/7").unwrap(),
        UrlVerdict::Seen { .. }
    ));
    assert!(matches!(
        d.check_url("http://old.example/7").unwrap(),
        UrlVerdict::New(_)
    ));
}

/// A URL seen again after it expired gets a new first-seen time: the index
/// must forget the old one, or a purge would remove the fresh record.
#[test]
fn a_url_recorded_again_is_purged_by_its_new_time() {
    let t0 = 1_700_000_000;
    let now = Arc::new(AtomicU64::new(t0));
    let clock = now.clone();
    let cfg = DedupConfig {
        window: Some(Duration::from_secs(DAY)),
        ..Default::default()
    };
    let d = Deduper::new(MemoryStore::new(), cfg)
        .unwrap()
        .with_clock(move || clock.load(Ordering::Relaxed));
    d.check_url("http://a.example/1").unwrap();
    now.store(t0 + 2 * DAY, Ordering::Relaxed);
    // Expired, so new again (recorded at t0 + 2 days); checked inside a
    // transaction of our own, so no purge runs first.
    let url = "http://a.example/1";
    let again = d
        .store()
        .write(|t| d.check_url_in(t, url, CanonicalUrl::parse(url)?))
        .unwrap();
    assert!(matches!(again, UrlVerdict::New(_)));
    now.store(t0 + 2 * DAY + 3600, Ordering::Relaxed);
    assert_eq!(d.purge_expired().unwrap().urls, 0);
    assert!(matches!(
        d.check_url("http://a.example/1").unwrap(),
        UrlVerdict::Seen { .. }
    ));
}

/// A redb store checked without a window leaves its URLs out of the
/// first-seen index (nothing reads it); opened with a window, it builds
/// the index from its URL records first, so the purge still finds every
/// expired URL, and keeps it from then on.
#[test]
fn a_redb_store_without_a_window_builds_its_url_time_index_when_one_is_set() {
    use simcrawl_dedup::RedbStore;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.redb");
    let indexed = |d: &Deduper<RedbStore>| {
        let mut out = Vec::new();
        d.store()
            .read(|t| t.urls_seen_before(u64::MAX, 100, &mut out))
            .unwrap();
        out.len()
    };
    {
        let d = Deduper::new(RedbStore::open(&path).unwrap(), DedupConfig::default())
            .unwrap()
            .with_clock(|| 1_000);
        for i in 0..5 {
            d.check_url(&format!("http://a.example/{i}")).unwrap();
        }
        d.flush().unwrap();
        assert_eq!(indexed(&d), 0, "no window: no time index");
    }
    let windowed = DedupConfig {
        window: Some(Duration::from_secs(3_600)),
        ..DedupConfig::default()
    };
    let now = Arc::new(AtomicU64::new(4_000));
    let clock = now.clone();
    let d = Deduper::new(RedbStore::open(&path).unwrap(), windowed)
        .unwrap()
        .with_clock(move || clock.load(Ordering::Relaxed));
    assert_eq!(indexed(&d), 5, "rebuilt from the URL records");
    d.check_url("http://a.example/new").unwrap();
    assert_eq!(indexed(&d), 6, "kept from then on");
    // The first five were seen at 1,000, over the hour before 5,000.
    now.store(5_000, Ordering::Relaxed);
    let purged = d.purge_expired().unwrap();
    assert_eq!(purged.urls, 5);
    assert!(matches!(
        d.check_url("http://a.example/0").unwrap(),
        UrlVerdict::New(_)
    ));
    assert!(matches!(
        d.check_url("http://a.example/new").unwrap(),
        UrlVerdict::Seen { .. }
    ));
}
