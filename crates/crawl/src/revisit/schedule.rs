//! The revisit schedule on the writer's transaction. Its records, due
//! times and copy relations ([`Records`]) are in the main file for a state
//! made before they had a file of their own, else in that file
//! ([`super::side`]): there the writer's changes are operations, logged in
//! the main file and written by the file's own thread, and a read sees the
//! file with the operations it does not hold yet on top. The sitemaps'
//! hints stay in the main file.

use redb::{ReadableTable, Table, WriteTransaction};

use super::records::{Op, Records};
use super::side::{Pending, RevisitFile};
use super::{HINTS, PageRecord, SITEMAP_HINTS};

type Result<T> = std::result::Result<T, simcrawl_dedup::Error>;

/// Where a schedule's records are (the tables boxed: a schedule is opened
/// once a commit).
enum Home<'t> {
    InFile(Box<Records<'t>>),
    Side(Pending<'t>),
}

/// The revisit tables on a write transaction of the main file. A schedule
/// with its records in their own file must be closed by
/// [`Schedule::finish`], which logs its changes in the transaction.
pub struct Schedule<'t> {
    hints: Table<'t, u128, u64>,
    sitemap: Table<'t, u128, &'static str>,
    records: Home<'t>,
}

impl<'t> Schedule<'t> {
    /// The schedule on `txn`, its records in `side` when the state has
    /// that file (else in the main file).
    pub fn open(txn: &'t WriteTransaction, side: Option<&'t RevisitFile>) -> Result<Schedule<'t>> {
        let records = match side {
            Some(file) => Home::Side(file.pending(txn)?),
            None => Home::InFile(Box::new(Records::open(txn)?)),
        };
        Ok(Schedule {
            hints: txn.open_table(HINTS)?,
            sitemap: txn.open_table(SITEMAP_HINTS)?,
            records,
        })
    }

    /// Logs the changes made in the records' own file into the
    /// transaction (nothing to do when they are in the main file).
    pub fn finish(self) -> Result<()> {
        match self.records {
            Home::InFile(_) => Ok(()),
            Home::Side(p) => p.finish(),
        }
    }

    /// The record of the page with canonical digest `key`.
    pub fn get(&self, key: u128) -> Result<Option<PageRecord>> {
        match &self.records {
            Home::InFile(r) => r.get(key),
            Home::Side(p) => p.get(key),
        }
    }

    /// `op` done now (in the main file) or logged (in the records' file).
    fn change(&mut self, op: Op) -> Result<()> {
        match &mut self.records {
            Home::InFile(r) => r.apply(&op),
            Home::Side(p) => {
                p.push(op);
                Ok(())
            }
        }
    }

    /// Stores `rec` under `key`, its due time in the schedule and its
    /// copy relation (`rec.dup_key`), replacing what `key` had.
    pub fn put(&mut self, key: u128, rec: &PageRecord) -> Result<()> {
        self.change(Op::Put(key, rec.clone()))
    }

    /// A first revisit interval for the page `key`, not crawled yet.
    pub fn hint(&mut self, key: u128, interval_s: u64) -> Result<()> {
        self.hints.insert(key, interval_s)?;
        Ok(())
    }

    /// The first revisit interval a sitemap gave the page `key`, if any
    /// (used once).
    pub fn take_hint(&mut self, key: u128) -> Result<Option<u64>> {
        Ok(self.hints.remove(key)?.map(|v| v.value()))
    }

    /// Records what a sitemap said of the page `key` at `url` (see
    /// [`SITEMAP_HINTS`]); empty hints are not stored.
    pub fn put_sitemap_hints(&mut self, key: u128, url: &str, hints: &crate::listing::Hints) -> Result<()> {
        if !hints.is_empty() {
            self.sitemap.insert(key, hints.stored(url).as_str())?;
        }
        Ok(())
    }

    /// What the last sitemap listing the page `key` said of it: its URL
    /// and hints. For the revisit scheduler that reads them (not written
    /// yet).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn sitemap_hints(&self, key: u128) -> Result<Option<(String, crate::listing::Hints)>> {
        let Some(v) = self.sitemap.get(key)? else {
            return Ok(None);
        };
        Ok(crate::listing::Hints::from_stored(v.value()))
    }

    /// Takes the page `key` out of the schedule (it is queued to be
    /// visited now; its visit puts it back).
    pub fn hold(&mut self, key: u128) -> Result<()> {
        self.change(Op::Hold(key))
    }

    /// Replaces the record of the page `key`, held out of the schedule
    /// ([`Schedule::hold`]), leaving it out: its queued visit puts it back.
    pub fn put_held(&mut self, key: u128, rec: &PageRecord) -> Result<()> {
        self.change(Op::PutHeld(key, rec.clone()))
    }

    /// Forgets the page `key` (gone), keeping the record of its copies.
    pub fn remove(&mut self, key: u128) -> Result<()> {
        self.change(Op::Remove(key))
    }

    /// The copies of the page `key`, with their records.
    pub fn copies_of(&self, key: u128) -> Result<Vec<(u128, PageRecord)>> {
        match &self.records {
            Home::InFile(r) => r.copies_of(key),
            Home::Side(p) => p.copies_of(key),
        }
    }

    /// Up to `limit` pages due at `now_ms` (every page with `all`), in due
    /// order; they leave the schedule (their revisit puts them back).
    pub fn take_due(&mut self, now_ms: u64, all: bool, limit: usize) -> Result<Vec<PageRecord>> {
        let taken = match &mut self.records {
            Home::InFile(r) => r.take_due(now_ms, all, limit)?,
            Home::Side(p) => {
                let taken = p.view(|r| r.take_due(now_ms, all, limit))?;
                // Out of the schedule as `take_due` took them: their due
                // entries, as the scan found them.
                for (at, key, _) in &taken {
                    p.push(Op::Taken(*at, *key));
                }
                taken
            }
        };
        Ok(taken.into_iter().filter_map(|(_, _, rec)| rec).collect())
    }

    /// When the next page is due (unix ms), if any is scheduled.
    pub fn next_due(&self) -> Result<Option<u64>> {
        match &self.records {
            Home::InFile(r) => r.next_due(),
            Home::Side(p) => p.view(|r| r.next_due()),
        }
    }
}
