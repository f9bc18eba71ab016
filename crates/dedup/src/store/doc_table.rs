//! The memory store's documents, by id.
//!
//! Ids are handed out in ascending order and a purge removes the oldest,
//! so the live ids are mostly one run: an array from the oldest id on
//! holds them with no hashing, an insert writes next to the one before
//! (a hash map wrote each record at a random place of a table of hundreds
//! of megabytes: two cache misses per new document), and the array's
//! order is the insertion order that purges walk (no second index).
//!
//! Ids that do not fit the run (older than its start, or far beyond its
//! end: a store shared by processes hands out ids in reserved ranges, and
//! a replica may apply an older one late) are kept aside in a tree, so an
//! odd id costs a tree entry, never a huge gap in the array.
//!
//! Records are kept encoded ([`DocRecord::encode`]), one allocation of
//! exactly their bytes: a `DocRecord` plus its URL's own allocation took
//! about 80 bytes more per document (the struct's padding and the URL's
//! `String`), and only candidates are ever read back, which cloned the
//! record anyway.

use std::collections::{BTreeMap, VecDeque};

use super::{DocId, DocRecord};

/// Empty slots an insert beyond the run's end may leave behind it before
/// the id is kept aside instead: at most as many as the run holds (so the
/// array stays at most about twice the documents), and never fewer than
/// this.
const MIN_GAP: u64 = 4096;

#[derive(Debug, Default)]
pub(crate) struct DocTable {
    /// Id of `run[0]`.
    base: DocId,
    /// Documents `base`, `base + 1`, ...; `None` for ids not stored. Never
    /// starts or ends with `None`.
    run: VecDeque<Option<Box<[u8]>>>,
    /// `Some` entries of `run`.
    in_run: usize,
    /// Documents whose id does not fit the run.
    aside: BTreeMap<DocId, Box<[u8]>>,
}

impl DocTable {
    pub(crate) fn len(&self) -> usize {
        self.in_run + self.aside.len()
    }

    /// Where `id` is in the run, if it is inside it.
    fn at(&self, id: DocId) -> Option<usize> {
        let off = usize::try_from(id.checked_sub(self.base)?).ok()?;
        (off < self.run.len()).then_some(off)
    }

    /// The record stored under `id`, encoded ([`DocRecord::encode`]).
    pub(crate) fn get(&self, id: DocId) -> Option<&[u8]> {
        // An id kept aside may have come inside the run since, as an
        // empty slot.
        let in_run = self
            .at(id)
            .and_then(|at| self.run.get(at))
            .and_then(|d| d.as_deref());
        in_run.or_else(|| self.aside.get(&id).map(|d| &**d))
    }

    /// Takes `id` out of the ids kept aside (it goes in the run).
    fn unset_aside(&mut self, id: DocId) {
        if !self.aside.is_empty() {
            self.aside.remove(&id);
        }
    }

    /// Stores `rec` under `id`, replacing what was there.
    pub(crate) fn insert(&mut self, id: DocId, rec: &DocRecord) {
        let rec = rec.encode().into_boxed_slice();
        if self.run.is_empty() {
            self.base = id;
        }
        if let Some(at) = self.at(id) {
            if let Some(slot) = self.run.get_mut(at) {
                if slot.is_none() {
                    self.in_run += 1;
                }
                *slot = Some(rec);
            }
            self.unset_aside(id);
            return;
        }
        let end = self.base + self.run.len() as u64;
        match id.checked_sub(end) {
            Some(gap) if gap <= MIN_GAP.max(self.run.len() as u64) => {
                self.run.extend((0..gap).map(|_| None));
                self.run.push_back(Some(rec));
                self.in_run += 1;
                self.unset_aside(id);
            }
            _ => {
                self.aside.insert(id, rec);
            }
        }
    }

    pub(crate) fn remove(&mut self, id: DocId) {
        self.unset_aside(id);
        let Some(at) = self.at(id) else {
            return;
        };
        if let Some(slot) = self.run.get_mut(at)
            && slot.take().is_some()
        {
            self.in_run -= 1;
        }
        while matches!(self.run.front(), Some(None)) {
            self.run.pop_front();
            self.base += 1;
        }
        while matches!(self.run.back(), Some(None)) {
            self.run.pop_back();
        }
    }

    /// Every document in id order (the order they were stored in),
    /// encoded.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (DocId, &[u8])> {
        let run = self
            .run
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.as_deref().map(|d| (self.base + i as u64, d)));
        Merge {
            a: run.peekable(),
            b: self.aside.iter().map(|(&id, d)| (id, &**d)).peekable(),
        }
    }
}

/// Two id-ordered iterators as one.
struct Merge<A: Iterator, B: Iterator> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<'a, A, B> Iterator for Merge<A, B>
where
    A: Iterator<Item = (DocId, &'a [u8])>,
    B: Iterator<Item = (DocId, &'a [u8])>,
{
    type Item = (DocId, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        match (self.a.peek(), self.b.peek()) {
            (Some(x), Some(y)) if y.0 < x.0 => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::fingerprint::Fingerprint;
    use crate::sketch::Sketch;
    use proptest::prelude::*;

    fn record(id: DocId) -> DocRecord {
        DocRecord {
            fingerprint: Fingerprint::new(id),
            inserted_at: id,
            title: None,
            sketch: Sketch::from_bins([0; crate::sketch::SKETCH_BINS], 0),
            url: format!("u{id}"),
            article: None,
            extent: None,
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(DocId),
        Remove(DocId),
    }

    /// Ids mostly ascending near the end (as stores hand them out), some
    /// far ahead, some old, some removals of ids just used.
    fn ops() -> impl Strategy<Value = Vec<Op>> {
        prop::collection::vec((0..10u8, 0..50u64, any::<u64>()), 0..400).prop_map(|raw| {
            let mut next = 1000u64;
            let mut out = Vec::new();
            for (kind, step, far) in raw {
                match kind {
                    0..=4 => {
                        next += step / 10;
                        out.push(Op::Insert(next));
                        next += 1;
                    }
                    5 => out.push(Op::Insert(next + 5000 + step)),
                    6 => out.push(Op::Insert(next.saturating_sub(1500 + step))),
                    7 => out.push(Op::Insert(far)),
                    _ => out.push(Op::Remove(next.saturating_sub(step))),
                }
            }
            out
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Reads back as a map from id to record, in id order, and the run
        /// never holds empty ends.
        #[test]
        fn matches_a_map(ops in ops()) {
            let mut t = DocTable::default();
            let mut model: BTreeMap<DocId, DocRecord> = BTreeMap::new();
            for op in &ops {
                match *op {
                    Op::Insert(id) => {
                        t.insert(id, &record(id));
                        model.insert(id, record(id));
                    }
                    Op::Remove(id) => {
                        t.remove(id);
                        model.remove(&id);
                    }
                }
                prop_assert_eq!(t.len(), model.len());
                prop_assert!(!matches!(t.run.front(), Some(None)) && !matches!(t.run.back(), Some(None)));
            }
            let got: Vec<(DocId, DocRecord)> = t.iter().map(|(id, b)| (id, DocRecord::decode(b).unwrap())).collect();
            let want: Vec<(DocId, DocRecord)> = model.iter().map(|(&id, r)| (id, r.clone())).collect();
            prop_assert_eq!(got, want);
            let get = |id: DocId| t.get(id).map(|b| DocRecord::decode(b).unwrap());
            for op in &ops {
                let (Op::Insert(id) | Op::Remove(id)) = *op;
                prop_assert_eq!(get(id), model.get(&id).cloned());
                prop_assert_eq!(get(id.wrapping_add(1)), model.get(&id.wrapping_add(1)).cloned());
            }
        }
    }

    #[test]
    fn ascending_ids_stay_in_the_run() {
        let mut t = DocTable::default();
        for id in 10..2010u64 {
            t.insert(id, &record(id));
        }
        for id in 10..1010u64 {
            t.remove(id);
        }
        assert_eq!((t.base, t.run.len(), t.aside.len()), (1010, 1000, 0));
        let rec = t.get(1500).map(|b| DocRecord::decode(b).unwrap());
        assert_eq!(rec.map(|r| r.url), Some("u1500".to_string()));
    }
}
