//! Hits found early on a snapshot (`early`) and brought up to date by the
//! writer: always the lists the writer would read itself, whatever was
//! committed, made durable or written into the side file in between, and
//! never from hits the writer cannot bring up to date.

#![allow(clippy::unwrap_used)]

use super::tests::store;
use super::{Commit, RedbStore};
use crate::fingerprint::Fingerprint;
use crate::store::{DocId, EarlyHits, ReadTables, Store, Tables};

/// The keys looked up: one block in each of four tables.
const KEYS: [(usize, u64); 4] = [(0, 11), (1, 12), (2, 13), (3, 14)];
const MAX: u32 = 3;
/// The title looked up with them.
const TITLE: u128 = 0x7171;

/// The fingerprint looked up; postings sit 0 to 5 bits from it, so some
/// are within `MAX` and some are not.
fn target() -> Fingerprint {
    Fingerprint::new(0x0f0f_0f0f_0f0f_0f0f)
}

/// (distance, document) hits, sorted, each once.
type Hits = Vec<(u32, DocId)>;

fn sorted(mut hits: Hits) -> Hits {
    hits.sort_unstable();
    hits.dedup();
    hits
}

/// Hits and the title's newest documents.
type Found = (Hits, Vec<DocId>);

/// The writer's hits and title list from `early`, and from the lists, in
/// one transaction (`None` from `early`: it said it cannot).
fn both(t: &dyn ReadTables, early: &EarlyHits) -> (Option<Found>, Found) {
    let mut from_early = Vec::new();
    let caught_up = t
        .near_since(early, &KEYS, target(), MAX, &mut from_early)
        .unwrap();
    let mut titled = Vec::new();
    let titles_caught_up = t.title_docs_since(early, TITLE, 5, &mut titled).unwrap();
    assert_eq!(caught_up, titles_caught_up, "both or neither");
    let (mut read, mut listed) = (Vec::new(), Vec::new());
    t.near_all(&KEYS, target(), MAX, &mut read).unwrap();
    t.title_docs(TITLE, 5, &mut listed).unwrap();
    (
        caught_up.then(|| (sorted(from_early), titled)),
        (sorted(read), listed),
    )
}

/// A small deterministic generator (the test needs no more).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Random adds and removals under the four keys, commits durable or not,
/// and early hits taken between them and used several commits later: each
/// time the writer can use them, they are the lists it reads.
#[test]
fn early_hits_brought_up_to_date_are_the_lists() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir.path().join("i.redb"));
    let mut rng = Lcg(7);
    let mut live: Vec<(usize, DocId, Fingerprint)> = Vec::new();
    let mut waiting: Vec<EarlyHits> = Vec::new();
    let (mut used, mut refused) = (0, 0);
    for round in 0..300u64 {
        if rng.below(2) == 0 {
            waiting.push(s.near_early(&KEYS, target(), MAX, Some(TITLE)).unwrap().unwrap());
        }
        let commit = if rng.below(10) == 0 {
            Commit::Durable
        } else {
            Commit::Periodic
        };
        let outcome = s.write_with(commit, |_, t| {
            let mut checked = Vec::new();
            for early in &waiting {
                checked.push(both(t, early));
            }
            for i in 0..3 {
                let id = round * 3 + i;
                let fp = Fingerprint::new(target().low() ^ ((1u64 << rng.below(64)) | (1 << rng.below(64))));
                let fp = if rng.below(3) == 0 {
                    Fingerprint::new(fp.low() ^ 0b111 << 20)
                } else {
                    fp
                };
                let table = rng.below(4) as usize;
                t.add_block(table, KEYS[table].1, fp, id)?;
                live.push((table, id, fp));
                if rng.below(2) == 0 {
                    t.add_title(TITLE, id)?;
                }
                if rng.below(3) == 0 && !live.is_empty() {
                    let (table, id, fp) = live.swap_remove(rng.below(live.len() as u64) as usize);
                    t.remove_block(table, KEYS[table].1, fp, id)?;
                    t.remove_title(TITLE, id)?;
                }
            }
            // This transaction's own changes count too.
            for early in &waiting {
                checked.push(both(t, early));
            }
            Ok(checked)
        });
        for (from_early, read) in outcome.unwrap() {
            match from_early {
                Some(hits) => {
                    assert_eq!(hits, read, "round {round}");
                    used += 1;
                }
                None => refused += 1,
            }
        }
        // Early hits live a few commits, as a page waits for the writer.
        if waiting.len() > 4 {
            waiting.remove(0);
        }
    }
    assert!(used > 500, "early hits used {used} times");
    // Durable commits hand batches to the side file; hits older than what
    // the writer holds are refused, not used.
    assert!(refused > 0, "refused {refused} times");
}

/// Hits of another store, or of another lookup, are refused; so is a
/// title list for another title, or where none was looked up.
#[test]
fn early_hits_of_another_store_or_lookup_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = store(&dir.path().join("a.redb"));
    let b = store(&dir.path().join("b.redb"));
    for s in [&a, &b] {
        s.write(|t| t.add_block(0, 11, target(), 1)).unwrap();
    }
    let early = a.near_early(&KEYS, target(), MAX, None).unwrap().unwrap();
    assert_eq!(early.len(), 1);
    let mut out = Vec::new();
    let caught_up = |s: &RedbStore, keys: &[(usize, u64)], fp: Fingerprint, out: &mut Vec<_>| {
        s.write(|t| t.near_since(&early, keys, fp, MAX, out)).unwrap()
    };
    assert!(!caught_up(&b, &KEYS, target(), &mut out));
    assert!(!caught_up(&a, &KEYS[..3], target(), &mut out));
    assert!(!caught_up(&a, &KEYS, Fingerprint::new(1), &mut out));
    assert!(out.is_empty());
    assert!(caught_up(&a, &KEYS, target(), &mut out));
    assert_eq!(out, [(0, 1)]);
    let mut ids = Vec::new();
    assert!(
        !a.write(|t| t.title_docs_since(&early, TITLE, 5, &mut ids))
            .unwrap()
    );
    a.write(|t| t.add_title(TITLE, 1)).unwrap();
    let titled = a.near_early(&KEYS, target(), MAX, Some(TITLE)).unwrap().unwrap();
    assert_eq!(titled.title_len(), Some(1));
    assert!(
        !a.write(|t| t.title_docs_since(&titled, TITLE + 1, 5, &mut ids))
            .unwrap()
    );
    assert!(
        !b.write(|t| t.title_docs_since(&titled, TITLE, 5, &mut ids))
            .unwrap()
    );
    assert!(ids.is_empty());
    assert!(
        a.write(|t| t.title_docs_since(&titled, TITLE, 5, &mut ids))
            .unwrap()
    );
    assert_eq!(ids, [1]);
}

/// Hits found on a snapshot whose changes the side file has written since
/// (and the writer no longer holds) are refused; the writer reads the
/// lists instead, and finds what was added since.
#[test]
fn early_hits_older_than_the_changes_held_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir.path().join("i.redb"));
    let early = s.near_early(&KEYS, target(), MAX, None).unwrap().unwrap();
    assert!(early.is_empty());
    s.write(|t| t.add_block(0, 11, target(), 1)).unwrap();
    s.flush().unwrap();
    let upto = s.backlog.read().in_flight.last().map_or(0, |(u, _)| *u);
    if let Some(side) = &s.side {
        side.wait_for(upto);
    }
    // A write retains only the batches the side file lacks.
    s.write(|_| Ok(())).unwrap();
    let mut out = Vec::new();
    let caught_up = s
        .write(|t| t.near_since(&early, &KEYS, target(), MAX, &mut out))
        .unwrap();
    assert!(!caught_up);
    let mut read = Vec::new();
    s.write(|t| t.near_all(&KEYS, target(), MAX, &mut read)).unwrap();
    assert_eq!(read, [(0, 1)]);
}
