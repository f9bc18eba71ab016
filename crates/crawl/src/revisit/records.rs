//! The revisit records, due times and copy relations on one write
//! transaction, and the changes the writer makes to them ([`Op`]): what
//! the main file holds for a state made before they had a file of their
//! own, and what that file's thread does with the logged operations.

use redb::{ReadableTable, Table, WriteTransaction};
use serde::{Deserialize, Serialize};

use super::{COPIES, DUE, PAGES, PageRecord, record};

type Result<T> = std::result::Result<T, simcrawl_dedup::Error>;

/// A change to the revisit records, as [`super::Schedule`]'s methods of
/// the same names make it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Op {
    Put(u128, #[serde(with = "as_record")] PageRecord),
    PutHeld(u128, #[serde(with = "as_record")] PageRecord),
    Hold(u128),
    Remove(u128),
    /// The due entry (due time, key) [`super::Schedule::take_due`] took.
    Taken(u64, u128),
}

/// A record in an [`Op`] in its stored form (`record`): postcard cannot
/// carry [`PageRecord`]'s optional fields as serde writes them.
mod as_record {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::{PageRecord, record};

    pub(super) fn serialize<S: Serializer>(rec: &PageRecord, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&record::encode(rec))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PageRecord, D::Error> {
        let bytes = <Vec<u8>>::deserialize(d)?;
        record::decode(&bytes).ok_or_else(|| serde::de::Error::custom("a damaged revisit record"))
    }
}

/// The records, due times and copy relations on one write transaction
/// (of the main file or of the records' own file).
pub(crate) struct Records<'t> {
    pages: Table<'t, u128, &'static [u8]>,
    due: Table<'t, (u64, u128), ()>,
    copies: Table<'t, (u128, u128), ()>,
}

impl<'t> Records<'t> {
    pub(crate) fn open(txn: &'t WriteTransaction) -> Result<Records<'t>> {
        Ok(Records {
            pages: txn.open_table(PAGES)?,
            due: txn.open_table(DUE)?,
            copies: txn.open_table(COPIES)?,
        })
    }

    /// `op` done, as the writer asked it.
    pub(crate) fn apply(&mut self, op: &Op) -> Result<()> {
        match op {
            Op::Put(key, rec) => self.put(*key, rec),
            Op::PutHeld(key, rec) => self.put_held(*key, rec),
            Op::Hold(key) => self.hold(*key),
            Op::Remove(key) => self.remove(*key),
            Op::Taken(at, key) => {
                self.due.remove((*at, *key))?;
                Ok(())
            }
        }
    }

    pub(crate) fn get(&self, key: u128) -> Result<Option<PageRecord>> {
        let Some(v) = self.pages.get(key)? else {
            return Ok(None);
        };
        Ok(record::decode(v.value()))
    }

    fn put(&mut self, key: u128, rec: &PageRecord) -> Result<()> {
        self.unschedule(key)?;
        self.pages.insert(key, record::encode(rec).as_slice())?;
        self.due.insert((rec.next_ms, key), ())?;
        if let Some(k) = rec.dup_key {
            self.copies.insert((k, key), ())?;
        }
        Ok(())
    }

    fn hold(&mut self, key: u128) -> Result<()> {
        if let Some(old) = self.get(key)? {
            self.due.remove((old.next_ms, key))?;
        }
        Ok(())
    }

    fn put_held(&mut self, key: u128, rec: &PageRecord) -> Result<()> {
        self.pages.insert(key, record::encode(rec).as_slice())?;
        Ok(())
    }

    fn remove(&mut self, key: u128) -> Result<()> {
        self.unschedule(key)?;
        self.pages.remove(key)?;
        Ok(())
    }

    /// Takes `key` out of the schedule and out of the copies of the page it
    /// copied (it is being visited, and will be put back).
    fn unschedule(&mut self, key: u128) -> Result<()> {
        if let Some(old) = self.get(key)? {
            self.due.remove((old.next_ms, key))?;
            if let Some(k) = old.dup_key {
                self.copies.remove((k, key))?;
            }
        }
        Ok(())
    }

    pub(crate) fn copies_of(&self, key: u128) -> Result<Vec<(u128, PageRecord)>> {
        let mut out = Vec::new();
        for item in self.copies.range((key, 0)..=(key, u128::MAX))? {
            let (k, _) = item?;
            let copy = k.value().1;
            if let Some(rec) = self.get(copy)? {
                out.push((copy, rec));
            }
        }
        Ok(out)
    }

    /// The due entries (due time, key) [`super::Schedule::take_due`] takes,
    /// each with its page's record (`None`: an entry left by a record that
    /// a held put replaced).
    pub(crate) fn take_due(
        &mut self,
        now_ms: u64,
        all: bool,
        limit: usize,
    ) -> Result<Vec<(u64, u128, Option<PageRecord>)>> {
        let upto = if all { u64::MAX } else { now_ms };
        let mut keys = Vec::new();
        for item in self.due.range((0, 0)..=(upto, u128::MAX))? {
            let (k, _) = item?;
            keys.push(k.value());
            if keys.len() >= limit {
                break;
            }
        }
        let mut out = Vec::with_capacity(keys.len());
        for (at, key) in keys {
            self.due.remove((at, key))?;
            out.push((at, key, self.get(key)?));
        }
        Ok(out)
    }

    pub(crate) fn next_due(&self) -> Result<Option<u64>> {
        Ok(self.due.first()?.map(|(k, _)| k.value().0))
    }
}
