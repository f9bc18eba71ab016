#![allow(clippy::unwrap_used)]
use super::*;
use crate::revisit::Schedule;
use redb::ReadableTableMetadata;

const CACHE: usize = 1 << 20;

fn rec(url: &str, next_ms: u64, dup_key: Option<u128>) -> PageRecord {
    PageRecord {
        url: url.into(),
        next_ms,
        dup_key,
        ..PageRecord::default()
    }
}

struct State {
    _dir: tempfile::TempDir,
    path: PathBuf,
    main: Database,
}

fn state() -> State {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.redb");
    let main = Database::create(&path).unwrap();
    State {
        _dir: dir,
        path,
        main,
    }
}

/// One transaction of the main file: `f` on its schedule, then the
/// schedule finished and the transaction committed (durably: redb's
/// default), or aborted with `abort`.
fn txn(s: &State, file: Option<&RevisitFile>, abort: bool, f: impl FnOnce(&mut Schedule<'_>)) {
    let txn = s.main.begin_write().unwrap();
    {
        let mut sched = Schedule::open(&txn, file).unwrap();
        f(&mut sched);
        sched.finish().unwrap();
    }
    if abort {
        txn.abort().unwrap();
    } else {
        txn.commit().unwrap();
    }
}

fn log_len(s: &State) -> u64 {
    let txn = s.main.begin_read().unwrap();
    txn.open_table(LOG).map_or(0, |t| t.len().unwrap())
}

/// What the writer reads is what it wrote, in the transaction that wrote
/// it, in the next ones, and once the thread holds it in the side file;
/// the log is trimmed once the side file holds it.
#[test]
fn the_writer_reads_what_it_wrote_before_and_after_the_thread_holds_it() {
    let s = state();
    let f = RevisitFile::open(&s.main, &s.path, CACHE).unwrap().unwrap();
    assert!(side_path(&s.path).exists());
    txn(&s, Some(&f), false, |sched| {
        sched.put(1, &rec("http://e.org/a", 50, None)).unwrap();
        sched.put(2, &rec("http://e.org/b", 10, Some(1))).unwrap();
        assert_eq!(sched.get(2).unwrap().unwrap().url, "http://e.org/b");
        assert_eq!(sched.copies_of(1).unwrap().len(), 1);
        assert_eq!(sched.next_due().unwrap(), Some(10));
    });
    txn(&s, Some(&f), false, |sched| {
        assert_eq!(sched.get(1).unwrap().unwrap().next_ms, 50);
        sched.put(2, &rec("http://e.org/b", 99, None)).unwrap();
        assert!(sched.copies_of(1).unwrap().is_empty());
    });
    assert_eq!(log_len(&s), 2);
    f.durable(&s.main).unwrap();
    f.drain().unwrap();
    assert_eq!(f.applied(), 2);
    txn(&s, Some(&f), false, |sched| {
        assert_eq!(sched.get(2).unwrap().unwrap().next_ms, 99);
        let due: Vec<String> = sched
            .take_due(60, false, 10)
            .unwrap()
            .into_iter()
            .map(|r| r.url)
            .collect();
        assert_eq!(due, ["http://e.org/a"]);
        assert_eq!(sched.next_due().unwrap(), Some(99));
        sched.remove(2).unwrap();
        assert_eq!(sched.get(2).unwrap(), None);
    });
    // The first two entries, held by the side file, are gone.
    assert_eq!(log_len(&s), 1);
    drop(f);
    // Reopened: the third, never handed over, is done by the open.
    let f = RevisitFile::open(&s.main, &s.path, CACHE).unwrap().unwrap();
    assert_eq!(f.applied(), 3);
    txn(&s, Some(&f), false, |sched| {
        assert_eq!(sched.get(2).unwrap(), None);
        assert_eq!(sched.get(1).unwrap().unwrap().url, "http://e.org/a");
        assert_eq!(sched.next_due().unwrap(), None, "a was taken, b removed");
    });
}

/// A crash after the main file's commits and before the thread wrote
/// them (here: never handed over, the file dropped) loses nothing: the
/// next open does the logged operations.
#[test]
fn a_crash_before_the_thread_wrote_is_made_good_by_the_next_open() {
    let s = state();
    {
        let f = RevisitFile::open(&s.main, &s.path, CACHE).unwrap().unwrap();
        txn(&s, Some(&f), false, |sched| {
            sched.put(7, &rec("http://e.org/x", 5, None)).unwrap();
            sched.put(8, &rec("http://e.org/y", 6, Some(7))).unwrap();
        });
    }
    let side = Database::create(side_path(&s.path)).unwrap();
    let before = side
        .begin_read()
        .unwrap()
        .open_table(PAGES)
        .map_or(0, |t| t.len().unwrap());
    assert_eq!(before, 0, "the side file does not hold them yet");
    drop(side);
    let f = RevisitFile::open(&s.main, &s.path, CACHE).unwrap().unwrap();
    txn(&s, Some(&f), false, |sched| {
        assert_eq!(sched.get(8).unwrap().unwrap().url, "http://e.org/y");
        assert_eq!(sched.copies_of(7).unwrap().len(), 1);
    });
}

/// The first transaction of a new state aborts, so the main file never
/// got a log: the next durable point drops its operations, it does not fail.
#[test]
fn an_aborted_first_transaction_leaves_no_log_and_no_error() {
    let s = state();
    let f = RevisitFile::open(&s.main, &s.path, CACHE).unwrap().unwrap();
    txn(&s, Some(&f), true, |sched| {
        sched.put(1, &rec("http://e.org/a", 1, None)).unwrap()
    });
    f.durable(&s.main).unwrap();
    txn(&s, Some(&f), false, |sched| {
        assert_eq!(sched.get(1).unwrap(), None)
    });
}

/// A transaction that does not commit leaves no record, in the writer's
/// reads or in the side file.
#[test]
fn an_aborted_transaction_leaves_nothing() {
    let s = state();
    let f = RevisitFile::open(&s.main, &s.path, CACHE).unwrap().unwrap();
    txn(&s, Some(&f), true, |sched| {
        sched.put(1, &rec("http://e.org/a", 1, None)).unwrap()
    });
    txn(&s, Some(&f), false, |sched| {
        assert_eq!(sched.get(1).unwrap(), None);
        sched.put(2, &rec("http://e.org/b", 2, None)).unwrap();
    });
    f.durable(&s.main).unwrap();
    f.drain().unwrap();
    txn(&s, Some(&f), false, |sched| {
        assert_eq!(sched.get(1).unwrap(), None);
        assert_eq!(sched.next_due().unwrap(), Some(2));
    });
}

/// The two files are a pair: a missing or foreign side file is refused
/// with its path; a main file made afresh replaces the side file it finds;
/// a state whose records are in the main file keeps them there.
#[test]
fn the_files_are_a_pair_and_older_states_keep_their_records() {
    let s = state();
    drop(RevisitFile::open(&s.main, &s.path, CACHE).unwrap().unwrap());
    let side = side_path(&s.path);
    let kept = std::fs::read(&side).unwrap();
    std::fs::remove_file(&side).unwrap();
    let e = RevisitFile::open(&s.main, &s.path, CACHE)
        .unwrap_err()
        .to_string();
    assert!(e.contains("index.revisit.redb is missing"), "{e}");

    let other = state();
    drop(
        RevisitFile::open(&other.main, &other.path, CACHE)
            .unwrap()
            .unwrap(),
    );
    std::fs::copy(side_path(&other.path), &side).unwrap();
    let e = RevisitFile::open(&s.main, &s.path, CACHE)
        .unwrap_err()
        .to_string();
    assert!(e.contains("another crawl state"), "{e}");

    // A new main file beside the old side file: replaced.
    let fresh = state();
    std::fs::write(side_path(&fresh.path), &kept).unwrap();
    let f = RevisitFile::open(&fresh.main, &fresh.path, CACHE)
        .unwrap()
        .unwrap();
    txn(&fresh, Some(&f), false, |sched| {
        assert_eq!(sched.next_due().unwrap(), None)
    });

    let old = state();
    txn(&old, None, false, |sched| {
        sched.put(1, &rec("http://e.org/a", 1, None)).unwrap()
    });
    assert!(RevisitFile::open(&old.main, &old.path, CACHE).unwrap().is_none());
    assert!(!side_path(&old.path).exists());
}

/// The batches the side file holds leave memory at the next durable
/// point, read or not: a first crawl that never reads a record keeps no
/// more than the batches still being written.
#[test]
fn written_batches_leave_memory_without_reads() {
    let s = state();
    let f = RevisitFile::open(&s.main, &s.path, CACHE).unwrap().unwrap();
    for i in 0..20u64 {
        txn(&s, Some(&f), false, |sched| {
            sched.put(u128::from(i), &rec("http://e.org/p", i, None)).unwrap()
        });
        f.durable(&s.main).unwrap();
    }
    f.drain().unwrap();
    f.durable(&s.main).unwrap();
    assert_eq!(f.held.lock().in_flight.len(), 0);
    assert_eq!(f.applied(), 20);
}

/// One step of [`the_side_file_reads_as_the_main_file_would`].
#[derive(Debug, Clone)]
enum Step {
    Put(u8, u64, Option<u8>),
    PutHeld(u8, u64, Option<u8>),
    Hold(u8),
    Remove(u8),
    TakeDue(u64),
    /// End the transaction: commit it (and make it durable with `true`),
    /// or abort it.
    End(bool, bool),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let key = 0u8..6;
    let dup = proptest::option::of(0u8..6);
    prop_oneof![
        4 => (key.clone(), 0u64..50, dup.clone()).prop_map(|(k, t, d)| Step::Put(k, t, d)),
        1 => (key.clone(), 0u64..50, dup).prop_map(|(k, t, d)| Step::PutHeld(k, t, d)),
        1 => key.clone().prop_map(Step::Hold),
        1 => key.prop_map(Step::Remove),
        1 => (0u64..50).prop_map(Step::TakeDue),
        2 => (any::<bool>(), any::<bool>()).prop_map(|(c, d)| Step::End(c, d)),
    ]
}

/// Everything a schedule can read, for one key.
fn reads(sched: &Schedule<'_>, k: u128) -> (Option<PageRecord>, Vec<(u128, PageRecord)>, Option<u64>) {
    (
        sched.get(k).unwrap(),
        sched.copies_of(k).unwrap(),
        sched.next_due().unwrap(),
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Any sequence of changes, commits, aborts and durable points reads
    /// back through the side file (operations held, in flight or written)
    /// exactly as through the tables of the main file: the records, the
    /// copies (stale entries a held put leaves included) and the pages due.
    #[test]
    fn the_side_file_reads_as_the_main_file_would(steps in proptest::collection::vec(step(), 1..60)) {
        let (side, main) = (state(), state());
        let f = RevisitFile::open(&side.main, &side.path, CACHE).unwrap().unwrap();
        let mut steps = steps.into_iter().peekable();
        while steps.peek().is_some() {
            let (ts, tm) = (side.main.begin_write().unwrap(), main.main.begin_write().unwrap());
            let mut end = (true, false);
            {
                let (mut s, mut m) = (Schedule::open(&ts, Some(&f)).unwrap(), Schedule::open(&tm, None).unwrap());
                for st in steps.by_ref() {
                    let url = |k: u8| format!("http://e.org/{k}");
                    match st {
                        Step::Put(k, t, d) => {
                            let r = rec(&url(k), t, d.map(u128::from));
                            s.put(k.into(), &r).unwrap();
                            m.put(k.into(), &r).unwrap();
                        }
                        Step::PutHeld(k, t, d) => {
                            let r = rec(&url(k), t, d.map(u128::from));
                            s.put_held(k.into(), &r).unwrap();
                            m.put_held(k.into(), &r).unwrap();
                        }
                        Step::Hold(k) => {
                            s.hold(k.into()).unwrap();
                            m.hold(k.into()).unwrap();
                        }
                        Step::Remove(k) => {
                            s.remove(k.into()).unwrap();
                            m.remove(k.into()).unwrap();
                        }
                        Step::TakeDue(now) => {
                            assert_eq!(s.take_due(now, false, 3).unwrap(), m.take_due(now, false, 3).unwrap());
                        }
                        Step::End(commit, durable) => {
                            end = (commit, durable);
                            break;
                        }
                    }
                    for k in 0..6u128 {
                        assert_eq!(reads(&s, k), reads(&m, k), "key {k}");
                    }
                }
                s.finish().unwrap();
                m.finish().unwrap();
            }
            if end.0 {
                ts.commit().unwrap();
                tm.commit().unwrap();
                if end.1 {
                    f.durable(&side.main).unwrap();
                }
            } else {
                ts.abort().unwrap();
                tm.abort().unwrap();
            }
        }
        // Reopened: the side file does what it lacks, and reads the same.
        drop(f);
        let f = RevisitFile::open(&side.main, &side.path, CACHE).unwrap().unwrap();
        let (ts, tm) = (side.main.begin_write().unwrap(), main.main.begin_write().unwrap());
        {
            let (s, m) = (Schedule::open(&ts, Some(&f)).unwrap(), Schedule::open(&tm, None).unwrap());
            for k in 0..6u128 {
                assert_eq!(reads(&s, k), reads(&m, k), "key {k} after reopening");
            }
            s.finish().unwrap();
            m.finish().unwrap();
        }
        ts.abort().unwrap();
        tm.abort().unwrap();
    }
}
