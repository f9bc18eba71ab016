//! URL records and title lists in the side file (`side`, issue 37): what
//! the writer and readers see before and after the durable commit that
//! hands them to the side thread, what each file holds, how a crash
//! between the two files is repaired, and that an index whose records are
//! in its main file keeps them there; a model of the URL and title tiers'
//! tables says what every read must answer.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use redb::{ReadableDatabase, ReadableTable};

use super::side::TITLE_LISTS;
use super::tests::store;
use super::{RedbStore, TITLES, URL_TIMES, URLS};
use crate::store::{ReadTables, Store, UrlRecord};

fn rec(first_seen: u64, url: &str) -> UrlRecord {
    UrlRecord {
        first_seen,
        url: url.to_string(),
    }
}

fn put(s: &RedbStore, digest: u128, r: &UrlRecord) {
    s.write(|t| t.put_url(digest, r)).unwrap();
}

/// The URL records a file's `dedup_urls` holds (the side file's once its
/// thread wrote what was handed to it).
fn records_in(db: &redb::Database) -> BTreeMap<u128, UrlRecord> {
    let txn = db.begin_read().unwrap();
    let Ok(t) = txn.open_table(URLS) else {
        return BTreeMap::new();
    };
    t.iter()
        .unwrap()
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.value(), UrlRecord::decode(v.value()).unwrap())
        })
        .collect()
}

/// The title lists a side file holds (its thread's writes done).
fn title_lists_in(db: &redb::Database) -> BTreeMap<u128, Vec<u64>> {
    let txn = db.begin_read().unwrap();
    let t = txn.open_table(TITLE_LISTS).unwrap();
    t.iter()
        .unwrap()
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.value(), super::behind::decode_title_list(v.value()))
        })
        .collect()
}

/// How many entries the main file's title multimap holds.
fn main_titles(s: &RedbStore) -> u64 {
    use redb::ReadableTableMetadata;
    let txn = s.database().begin_read().unwrap();
    txn.open_multimap_table(TITLES).unwrap().len().unwrap()
}

/// The documents under title `digest`, newest first, as readers see them.
fn titled(t: &dyn ReadTables, digest: u128, limit: usize) -> Vec<u64> {
    let mut out = Vec::new();
    t.title_docs(digest, limit, &mut out).unwrap();
    out
}

/// The main file's time index.
fn times_in(s: &RedbStore) -> Vec<(u64, u128)> {
    let txn = s.database().begin_read().unwrap();
    let t = txn.open_table(URL_TIMES).unwrap();
    t.iter().unwrap().map(|e| e.unwrap().0.value()).collect()
}

/// Waits until the side thread wrote every batch handed to it.
fn settled(s: &RedbStore) {
    let upto = s.backlog.read().in_flight.last().map_or(0, |(u, _)| *u);
    s.side.as_ref().unwrap().wait_for(upto);
}

fn seen_before(t: &dyn ReadTables, cutoff: u64) -> Vec<u128> {
    let mut out = Vec::new();
    t.urls_seen_before(cutoff, usize::MAX, &mut out).unwrap();
    out.sort_unstable();
    out
}

/// A new index keeps its URL records in the side file: the writer's own
/// transaction, the next one and every reader see a change at once; the
/// durable commit hands it to the side thread; the main file keeps only
/// the time index, moved when a record's time changes and left alone when
/// it does not.
#[test]
fn url_records_are_held_then_written_into_the_side_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.redb");
    let s = store(&path);
    assert!(s.side.as_ref().unwrap().records);
    assert_eq!(s.layout(), Some("side-file"));
    s.write(|t| {
        assert_eq!(t.url(1)?, None);
        t.put_url(1, &rec(10, "a"))?;
        assert_eq!(t.url(1)?, Some(rec(10, "a")));
        Ok(())
    })
    .unwrap();
    assert_eq!(s.read(|t| t.url(1)).unwrap(), Some(rec(10, "a")));
    s.write(|t| {
        t.add_title(7, 3)?;
        t.add_title(7, 1)?;
        t.add_title(7, 2)?;
        t.remove_title(7, 3)?;
        assert_eq!(titled(t, 7, 10), [2, 1]);
        Ok(())
    })
    .unwrap();
    s.write(|t| t.add_title(7, 5)).unwrap();
    assert_eq!(s.read(|t| Ok(titled(t, 7, 2))).unwrap(), [5, 2]);
    put(&s, 1, &rec(10, "a2"));
    put(&s, 2, &rec(20, "b"));
    put(&s, 3, &rec(5, "c"));
    put(&s, 3, &rec(30, "c"));
    assert_eq!(s.read(|t| t.url(1)).unwrap(), Some(rec(10, "a2")));
    assert_eq!(times_in(&s), [(10, 1), (20, 2), (30, 3)]);
    assert!(records_in(s.side.as_ref().unwrap().database()).is_empty());
    s.flush().unwrap();
    settled(&s);
    let side = records_in(s.side.as_ref().unwrap().database());
    assert_eq!(
        side.into_iter().collect::<Vec<_>>(),
        [(1, rec(10, "a2")), (2, rec(20, "b")), (3, rec(30, "c"))]
    );
    assert!(
        records_in(s.database()).is_empty(),
        "the main file holds no record"
    );
    assert_eq!(
        title_lists_in(s.side.as_ref().unwrap().database()),
        BTreeMap::from([(7, vec![1, 2, 5])])
    );
    assert_eq!(main_titles(&s), 0, "the main file holds no title");
    // Read from the side file alone: newest first, at most the limit.
    assert_eq!(s.read(|t| Ok(titled(t, 7, 2))).unwrap(), [5, 2]);
    assert_eq!(s.write(|t| Ok(titled(t, 7, 9))).unwrap(), [5, 2, 1]);
    assert_eq!(s.read(|t| Ok(seen_before(t, 21))).unwrap(), [1, 2]);
    assert!(s.write(|t| t.remove_url(1)).unwrap());
    assert!(!s.write(|t| t.remove_url(1)).unwrap());
    assert_eq!(s.read(|t| t.url(1)).unwrap(), None);
    assert_eq!(times_in(&s), [(20, 2), (30, 3)]);
    s.flush().unwrap();
    settled(&s);
    let side = records_in(s.side.as_ref().unwrap().database());
    assert_eq!(side.keys().copied().collect::<Vec<_>>(), [2, 3]);
    drop(s);
    let s = store(&path);
    assert_eq!(s.read(|t| t.url(2)).unwrap(), Some(rec(20, "b")));
    assert_eq!(s.read(|t| t.url(1)).unwrap(), None);
}

/// A crash after the main file's durable commit and before the side
/// thread wrote its batch: a read-only open reads the records from the
/// main file's URL log, and the next open writes them into the side file.
#[test]
fn url_records_the_side_file_lacks_come_from_the_main_files_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.redb");
    {
        let s = store(&path);
        put(&s, 1, &rec(10, "a"));
        s.flush().unwrap();
        settled(&s);
        s.side
            .as_ref()
            .unwrap()
            .drop_batches
            .store(true, std::sync::atomic::Ordering::Release);
        put(&s, 2, &rec(20, "b"));
        assert!(s.write(|t| t.remove_url(1)).unwrap());
        s.write(|t| {
            t.add_title(4, 8)?;
            t.add_title(4, 9)
        })
        .unwrap();
        s.write(|t| t.remove_title(4, 8)).unwrap();
        s.flush().unwrap();
    }
    let ro = super::RedbReadOnlyStore::open(&path).unwrap();
    assert_eq!(ro.read(|t| t.url(1)).unwrap(), None);
    assert_eq!(ro.read(|t| t.url(2)).unwrap(), Some(rec(20, "b")));
    assert_eq!(ro.read(|t| Ok(titled(t, 4, 5))).unwrap(), [9]);
    drop(ro);
    let s = store(&path);
    let side = records_in(s.side.as_ref().unwrap().database());
    assert_eq!(side.into_iter().collect::<Vec<_>>(), [(2, rec(20, "b"))]);
    assert_eq!(
        title_lists_in(s.side.as_ref().unwrap().database()),
        BTreeMap::from([(4, vec![9])])
    );
    // The log's numbering goes on: a later batch lands after them.
    put(&s, 3, &rec(30, "c"));
    s.flush().unwrap();
    settled(&s);
    let side = records_in(s.side.as_ref().unwrap().database());
    assert_eq!(side.keys().copied().collect::<Vec<_>>(), [2, 3]);
}

/// Makes the index at `path` as a build from before side-file URL records
/// left it: block lists in the side file, URL records in the main file.
fn as_before_side_urls(path: &std::path::Path) {
    let s = store(path);
    let txn = s.database().begin_write().unwrap();
    {
        let mut meta = txn.open_table(super::META).unwrap();
        meta.remove(super::side::RECORDS_SIDE).unwrap();
    }
    txn.commit().unwrap();
}

/// An index whose block lists went to a side file before URL records did
/// keeps its URL records in its main file, and says so by its layout.
#[test]
fn an_index_with_url_records_in_its_main_file_keeps_them_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.redb");
    as_before_side_urls(&path);
    let s = store(&path);
    assert!(!s.side.as_ref().unwrap().records);
    assert_eq!(s.layout(), Some("blocks-file"));
    put(&s, 1, &rec(10, "a"));
    s.write(|t| t.add_title(3, 1)).unwrap();
    assert_eq!(s.read(|t| t.url(1)).unwrap(), Some(rec(10, "a")));
    assert_eq!(s.read(|t| Ok(titled(t, 3, 5))).unwrap(), [1]);
    assert_eq!(records_in(s.database()).len(), 1);
    assert_eq!(main_titles(&s), 1);
    s.flush().unwrap();
    settled(&s);
    assert!(records_in(s.side.as_ref().unwrap().database()).is_empty());
    assert_eq!(records_in(s.database()).len(), 1);
}

/// A build that keeps URL records in the main file would find none of a
/// side-file index's there: the index records its layout, and such a
/// build (emulated by an index whose main file lost the mark) is refused
/// with the difference named.
#[test]
fn a_build_with_url_records_in_the_main_file_refuses_an_index_with_them_beside() {
    use crate::{DedupConfig, Deduper};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.redb");
    drop(Deduper::new(store(&path), DedupConfig::default()).unwrap());
    as_before_side_urls(&path);
    let e = Deduper::new(store(&path), DedupConfig::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("layout: stored side-file, requested blocks-file"),
        "{e}"
    );
}

/// One step of [`both_layouts_answer_as_the_model_does`].
#[derive(Clone, Debug)]
enum Step {
    /// Puts (time `Some`) or removes (`None`) records in one transaction.
    Write(Vec<(u8, Option<u8>)>),
    /// Adds (`true`) or removes documents under titles, in one transaction.
    Titles(Vec<(u8, u8, bool)>),
    Flush,
    Reopen,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        6 => proptest::collection::vec((0u8..6, proptest::option::of(0u8..4)), 1..4).prop_map(Step::Write),
        4 => proptest::collection::vec((0u8..3, 0u8..6, proptest::bool::ANY), 1..5).prop_map(Step::Titles),
        1 => Just(Step::Flush),
        1 => Just(Step::Reopen),
    ]
}

/// Runs `steps` on the index at `path` and checks every read (writer,
/// reader, expired URLs) against a model after each.
fn run_model(path: &std::path::Path, side_urls: bool, steps: &[Step]) {
    if !side_urls {
        as_before_side_urls(path);
    }
    let mut s = store(path);
    let mut model: BTreeMap<u128, UrlRecord> = BTreeMap::new();
    let mut titles: BTreeMap<u128, std::collections::BTreeSet<u64>> = BTreeMap::new();
    for (n, st) in steps.iter().enumerate() {
        match st {
            Step::Write(ops) => {
                s.write(|t| {
                    for &(d, at) in ops {
                        match at {
                            Some(at) => {
                                t.put_url(u128::from(d), &rec(u64::from(at), &format!("u{d}-{n}")))?
                            }
                            None => {
                                t.remove_url(u128::from(d))?;
                            }
                        }
                    }
                    Ok(())
                })
                .unwrap();
                for &(d, at) in ops {
                    match at {
                        Some(at) => model.insert(u128::from(d), rec(u64::from(at), &format!("u{d}-{n}"))),
                        None => model.remove(&u128::from(d)),
                    };
                }
            }
            Step::Titles(ops) => {
                s.write(|t| {
                    for &(d, id, add) in ops {
                        if add {
                            t.add_title(u128::from(d), u64::from(id))?;
                        } else {
                            t.remove_title(u128::from(d), u64::from(id))?;
                        }
                    }
                    Ok(())
                })
                .unwrap();
                for &(d, id, add) in ops {
                    let set = titles.entry(u128::from(d)).or_default();
                    if add {
                        set.insert(u64::from(id));
                    } else {
                        set.remove(&u64::from(id));
                    }
                }
            }
            Step::Flush => s.flush().unwrap(),
            Step::Reopen => {
                drop(s);
                s = store(path);
            }
        }
        assert_eq!(s.side.as_ref().unwrap().records, side_urls);
        let expired: Vec<u128> = model
            .iter()
            .filter(|(_, r)| r.first_seen < 2)
            .map(|(d, _)| *d)
            .collect();
        for d in 0..6u128 {
            let want = model.get(&d).cloned();
            assert_eq!(s.read(|t| t.url(d)).unwrap(), want, "reader, {d} after {n}");
            assert_eq!(s.write(|t| t.url(d)).unwrap(), want, "writer, {d} after {n}");
        }
        assert_eq!(s.read(|t| Ok(seen_before(t, 2))).unwrap(), expired, "after {n}");
        for d in 0..3u128 {
            let all: Vec<u64> = titles.get(&d).into_iter().flatten().rev().copied().collect();
            for limit in [2, 100] {
                let want: Vec<u64> = all.iter().take(limit).copied().collect();
                assert_eq!(
                    s.read(|t| Ok(titled(t, d, limit))).unwrap(),
                    want,
                    "reader, title {d} after {n}"
                );
                assert_eq!(
                    s.write(|t| Ok(titled(t, d, limit))).unwrap(),
                    want,
                    "writer, title {d} after {n}"
                );
            }
        }
    }
    drop(s);
    let s = store(path);
    let ro_model: Vec<(u128, Option<UrlRecord>)> = (0..6u128).map(|d| (d, model.get(&d).cloned())).collect();
    for (d, want) in ro_model {
        assert_eq!(s.read(|t| t.url(d)).unwrap(), want, "reopened, {d}");
    }
    for d in 0..3u128 {
        let all: Vec<u64> = titles.get(&d).into_iter().flatten().rev().copied().collect();
        assert_eq!(
            s.read(|t| Ok(titled(t, d, 100))).unwrap(),
            all,
            "reopened, title {d}"
        );
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Puts, removals, durable commits and reopens, in any order: an index
    /// with its URL records in the side file and one with them in its main
    /// file answer every read as the model does.
    #[test]
    fn both_layouts_answer_as_the_model_does(steps in proptest::collection::vec(step(), 1..24)) {
        let dir = tempfile::tempdir().unwrap();
        run_model(&dir.path().join("side.redb"), true, &steps);
        run_model(&dir.path().join("main.redb"), false, &steps);
    }
}
