//! Block-list changes written behind (`behind`): what each reader sees
//! before and after the durable commit that writes them, and what the
//! file holds.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use redb::ReadableDatabase;

use super::{BLOCKS, Commit, MAX_BEHIND, RedbOptions, RedbStore};
use crate::fingerprint::Fingerprint;
use crate::store::{ReadTables, Store, block_key};

/// A store that makes no commit durable on its own.
fn store(path: &std::path::Path) -> RedbStore {
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

/// The documents block `key` of table 0 lists in the file's table itself.
fn in_file(s: &RedbStore, key: u64) -> Vec<u64> {
    let txn = s.database().begin_read().unwrap();
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

/// Past `MAX_BEHIND` changes held, the next commit writes them, durable
/// or not: a store that is never flushed holds a bounded backlog.
#[test]
fn too_many_held_changes_are_written_by_the_next_commit() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir.path().join("i.redb"));
    let per_txn = 4096;
    let mut id = 0u64;
    let mut txns = 0;
    while in_file(&s, 1).is_empty() {
        s.write(|t| {
            for _ in 0..per_txn {
                id += 1;
                t.add_block(0, id % 64, Fingerprint::new(id), id)?;
            }
            Ok(())
        })
        .unwrap();
        txns += 1;
        assert!(
            txns * per_txn <= MAX_BEHIND,
            "still held after {} changes",
            txns * per_txn
        );
    }
    assert_eq!(txns * per_txn, MAX_BEHIND);
    assert_eq!(in_file(&s, 1).len(), MAX_BEHIND / 64);
    assert_eq!(listed(&s, 1).len(), MAX_BEHIND / 64);
}
