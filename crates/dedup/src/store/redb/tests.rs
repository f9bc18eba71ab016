//! Block-list changes written behind (`behind`), into a side file by its
//! thread (`side`) or into the main file of an index from before side
//! files: what each reader sees before and after the durable commit that
//! writes them, what the files hold, and how a crash between the two files
//! is repaired.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use redb::ReadableDatabase;

use super::{BLOCKS, Commit, MAX_BEHIND, RedbOptions, RedbStore};
use crate::fingerprint::Fingerprint;
use crate::store::{ReadTables, Store, block_key};

/// A store that makes no commit durable on its own.
pub(super) fn store(path: &std::path::Path) -> RedbStore {
    let options = RedbOptions {
        sync_interval: Duration::MAX,
        ..RedbOptions::default()
    };
    RedbStore::open_opts(path, options).unwrap()
}

/// The documents block `key` of table 0 lists, as readers see it.
fn listed(s: &RedbStore, key: u64) -> Vec<u64> {
    s.read(|t| listed_in(t, key)).unwrap()
}

fn listed_in(t: &dyn ReadTables, key: u64) -> crate::Result<Vec<u64>> {
    let mut out = Vec::new();
    t.candidates(0, key, &mut out)?;
    Ok(out.into_iter().map(|(_, id)| id).collect())
}

/// The documents block `key` of table 0 lists in the table of the file
/// that keeps the lists (the side file once its thread wrote the batches
/// handed to it, or the main file of an index from before side files).
fn in_file(s: &RedbStore, key: u64) -> Vec<u64> {
    let txn = match &s.side {
        Some(side) => {
            let upto = s.backlog.read().in_flight.last().map_or(0, |(u, _)| *u);
            side.wait_for(upto);
            side.database().begin_read().unwrap()
        }
        None => s.database().begin_read().unwrap(),
    };
    let table = txn.open_table(BLOCKS).unwrap();
    let Some(list) = table.get(block_key(0, key)).unwrap() else {
        return Vec::new();
    };
    crate::store::decode_postings(list.value())
        .map(|(_, id)| id)
        .collect()
}

fn add(s: &RedbStore, key: u64, id: u64) {
    s.write(|t| t.add_block(0, key, Fingerprint::new(id), id))
        .unwrap();
}

/// Changes committed without a durable commit are seen by readers and by
/// the next writer at once, in order (adds and removals), and reach the
/// file's table only with the durable commit; after it readers see the
/// same lists.
#[test]
fn held_changes_are_seen_at_once_and_written_durably() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir.path().join("i.redb"));
    add(&s, 5, 1);
    add(&s, 5, 2);
    s.write(|t| {
        t.add_block(0, 5, Fingerprint::new(3), 3)?;
        t.remove_block(0, 5, Fingerprint::new(1), 1)?;
        // This transaction's own changes are seen by it.
        assert_eq!(listed_in(t, 5)?, [2, 3]);
        Ok(())
    })
    .unwrap();
    assert_eq!(listed(&s, 5), [2, 3]);
    assert!(in_file(&s, 5).is_empty());
    s.write_with(Commit::Durable, |_, _| Ok(())).unwrap();
    assert_eq!(in_file(&s, 5), [2, 3]);
    assert_eq!(listed(&s, 5), [2, 3]);
    // A list emptied by held removals leaves the table.
    s.write(|t| {
        t.remove_block(0, 5, Fingerprint::new(2), 2)?;
        t.remove_block(0, 5, Fingerprint::new(3), 3)
    })
    .unwrap();
    assert!(listed(&s, 5).is_empty());
    assert_eq!(in_file(&s, 5), [2, 3]);
    s.flush().unwrap();
    assert!(in_file(&s, 5).is_empty());
}

/// A failed transaction's block changes are dropped with it.
#[test]
fn a_failed_transactions_changes_are_not_held() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir.path().join("i.redb"));
    add(&s, 9, 1);
    let failed: crate::Result<()> = s.write(|t| {
        t.add_block(0, 9, Fingerprint::new(2), 2)?;
        Err(crate::Error::Corrupt("no".into()))
    });
    assert!(failed.is_err());
    assert_eq!(listed(&s, 9), [1]);
    s.flush().unwrap();
    assert_eq!(in_file(&s, 9), [1]);
}

/// A reader keeps the view its snapshot began with: a durable commit that
/// writes the held changes meanwhile takes none of them from it, and a
/// later commit's changes are not added to it.
#[test]
fn a_reader_keeps_its_view_across_a_write_behind() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir.path().join("i.redb"));
    add(&s, 7, 1);
    let seen = s
        .read(|t| {
            std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        add(&s, 7, 2);
                        s.flush().unwrap();
                    })
                    .join()
                    .unwrap();
            });
            listed_in(t, 7)
        })
        .unwrap();
    assert_eq!(seen, [1]);
    assert_eq!(listed(&s, 7), [1, 2]);
    assert_eq!(in_file(&s, 7), [1, 2]);
}

/// A store dropped with changes held writes them: the reopened file lists
/// them (redb's close keeps the commits that made them).
#[test]
fn a_store_dropped_with_changes_held_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.redb");
    {
        let s = store(&path);
        add(&s, 3, 1);
        add(&s, 3, 2);
        assert!(in_file(&s, 3).is_empty());
    }
    let s = store(&path);
    assert_eq!(in_file(&s, 3), [1, 2]);
    assert_eq!(listed(&s, 3), [1, 2]);
}

/// Past `MAX_BEHIND` changes held, they are written without waiting for
/// a flush: a store that is never flushed holds a bounded backlog. (With a
/// side file, the commit after the one that crossed the bound is made
/// durable and hands them over.)
#[test]
fn too_many_held_changes_are_written_without_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir.path().join("i.redb"));
    let per_txn = 4096;
    let mut id = 0u64;
    while in_file(&s, 1).is_empty() {
        s.write(|t| {
            for _ in 0..per_txn {
                id += 1;
                t.add_block(0, id % 64, Fingerprint::new(id), id)?;
            }
            Ok(())
        })
        .unwrap();
        assert!(
            id as usize <= MAX_BEHIND + per_txn,
            "still held after {id} changes"
        );
    }
    assert!(id as usize >= MAX_BEHIND, "written after {id} changes only");
    assert_eq!(in_file(&s, 1).len(), id as usize / 64);
    assert_eq!(listed(&s, 1).len(), id as usize / 64);
}

/// Makes the store at `path` as a build from before side files left it:
/// document 1 in block 4 of table 0 in the main file, no side file (and
/// `params` recorded, when given).
fn as_before_side_files(path: &std::path::Path, params: Option<&str>) {
    {
        let s = store(path);
        let txn = s.database().begin_write().unwrap();
        {
            let mut meta = txn.open_table(super::META).unwrap();
            meta.remove("blocks:side").unwrap();
            meta.remove(super::side::RECORDS_SIDE).unwrap();
            if let Some(p) = params {
                meta.insert("params", p.as_bytes()).unwrap();
            }
            let mut blocks = txn.open_table(BLOCKS).unwrap();
            let list = crate::store::posting(Fingerprint::new(1), 1);
            blocks.insert(block_key(0, 4), list.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    std::fs::remove_file(super::side::side_path(path)).unwrap();
}

/// An index from before side files: its lists stay in the main file,
/// written behind there, and no side file is made for it.
#[test]
fn an_index_with_lists_in_its_main_file_keeps_them_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.redb");
    as_before_side_files(&path, None);
    let s = store(&path);
    assert!(s.side.is_none());
    add(&s, 4, 2);
    assert_eq!(listed(&s, 4), [1, 2]);
    s.flush().unwrap();
    assert_eq!(in_file(&s, 4), [1, 2]);
    assert!(!super::side::side_path(&path).exists());
}

/// A crash after the main file's durable commit and before the side
/// thread wrote its batch: the next open writes the main file's log into
/// the side file, and a read-only open sees the lists before that.
#[test]
fn the_side_file_catches_up_from_the_main_files_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.redb");
    {
        let s = store(&path);
        add(&s, 6, 1);
        s.flush().unwrap();
        assert_eq!(in_file(&s, 6), [1]);
        s.side
            .as_ref()
            .unwrap()
            .drop_batches
            .store(true, std::sync::atomic::Ordering::Release);
        add(&s, 6, 2);
        s.write(|t| t.remove_block(0, 6, Fingerprint::new(1), 1)).unwrap();
        add(&s, 7, 3);
        s.flush().unwrap();
    }
    let ro = super::RedbReadOnlyStore::open(&path).unwrap();
    assert_eq!(ro.read(|t| listed_in(t, 6)).unwrap(), [2]);
    assert_eq!(ro.read(|t| listed_in(t, 7)).unwrap(), [3]);
    drop(ro);
    let s = store(&path);
    assert_eq!(in_file(&s, 6), [2]);
    assert_eq!(in_file(&s, 7), [3]);
    // The log's numbering goes on: a later batch lands after them.
    add(&s, 7, 4);
    s.flush().unwrap();
    assert_eq!(in_file(&s, 7), [3, 4]);
    drop(s);
    let s = store(&path);
    assert_eq!(listed(&s, 7), [3, 4]);
}

/// A main file made afresh beside the side file of an index that is gone
/// does not meet its lists; a main file whose side file is missing, or
/// belongs to another index, is refused with the side file's path.
#[test]
fn the_two_files_are_one_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.redb");
    let side = super::side::side_path(&path);
    {
        let s = store(&path);
        add(&s, 2, 1);
        s.flush().unwrap();
    }
    std::fs::remove_file(&path).unwrap();
    {
        let s = store(&path);
        assert!(listed(&s, 2).is_empty());
        add(&s, 2, 5);
        s.flush().unwrap();
    }
    let saved = std::fs::read(&side).unwrap();
    std::fs::remove_file(&side).unwrap();
    let e = RedbStore::open(&path).unwrap_err().to_string();
    assert!(e.contains("i.blocks.redb") && e.contains("missing"), "{e}");
    let other = dir.path().join("other.redb");
    drop(store(&other));
    std::fs::copy(super::side::side_path(&other), &side).unwrap();
    let e = RedbStore::open(&path).unwrap_err().to_string();
    assert!(e.contains("another index"), "{e}");
    std::fs::write(&side, saved).unwrap();
    assert_eq!(listed(&store(&path), 2), [5]);
}

/// An index with a side file records its layout with its parameters: a
/// build that knows no side file (it asks for no layout) is refused with
/// the difference named, as a store with the lists in its own file shows
/// when it is given the parameters a side-file index recorded.
#[test]
fn a_build_without_side_files_refuses_an_index_with_one() {
    use crate::{DedupConfig, Deduper};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i.redb");
    let recorded = {
        let d = Deduper::new(store(&path), DedupConfig::default()).unwrap();
        assert!(d.params().contains("\nlayout=side-file\n"), "{}", d.params());
        d.params()
    };
    // The same parameters reopen it.
    drop(Deduper::new(store(&path), DedupConfig::default()).unwrap());
    // An index with its lists in its own file asks for no layout.
    let old = dir.path().join("old.redb");
    as_before_side_files(&old, Some(&recorded));
    let d = Deduper::new(store(&old), DedupConfig::default())
        .unwrap_err()
        .to_string();
    assert!(d.contains("layout: stored side-file, not requested"), "{d}");
    assert!(!Deduper::in_memory().unwrap().params().contains("layout="));
}
