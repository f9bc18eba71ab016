//! [`LearnStore`] over a redb write transaction: the local crawl's (and
//! `crawl dedup`'s) learners commit in the writer's transaction, with the
//! outputs' offsets and the tiers, so a resume finds them as of one
//! checkpoint. The tables are those earlier versions wrote
//! (`template_hosts`, `crawl_dust_rewrites`, `crawl_dust_rewrite_counts`,
//! the `crawl_state` blobs), plus `crawl_dust_rules`.
//!
//! [`with_snapshot`] loads the learners from a read snapshot instead, for
//! tools that must leave the file as it is (`crawl check`).

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use redb::{ReadTransaction, ReadableDatabase, ReadableTable, Table, TableDefinition, WriteTransaction};

use crate::backend::local::state;
use crate::learn::{LearnError, LearnStore, Map, Restored, decode_record, encode_record};

/// Site templates: host -> JSON of its blocks.
pub const HOSTS: TableDefinition<&str, &[u8]> = TableDefinition::new("template_hosts");

/// DUST rules: "HOST RULE" -> `learnt N` or `blocked` (they were one JSON
/// blob in `crawl_state` before; [`crate::dust::Dust::load`] converts it).
pub const RULES: TableDefinition<&str, &[u8]> = TableDefinition::new("crawl_dust_rules");

/// The URLs learnt rules rewrote: ("HOST RULE", URL) -> depth (u32 LE) and
/// where the URL was (1 byte: 0 a link, 1 a frontier entry).
pub const REWRITES: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("crawl_dust_rewrites");

/// Rows of [`REWRITES`] per "HOST RULE": the bound is checked without
/// counting rows.
const REWRITE_COUNTS: TableDefinition<&str, u64> = TableDefinition::new("crawl_dust_rewrite_counts");

/// The rewrite record's two tables, open.
type RewriteTables<'a, 't> = (
    &'a mut Table<'t, (&'static str, &'static str), &'static [u8]>,
    &'a mut Table<'t, &'static str, u64>,
);

fn err(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> LearnError {
    LearnError::store(e)
}

/// Out of a `RedbStore::write_with` closure with `?`, cause chain intact.
impl From<LearnError> for simcrawl_dedup::Error {
    fn from(e: LearnError) -> Self {
        state::caller_err(e)
    }
}

/// The learners' store on one write transaction. Tables are opened when
/// first used and held until it is dropped, so the caller opens
/// `crawl_state` itself only after (redb refuses a table opened twice).
pub struct RedbLearn<'t> {
    txn: &'t WriteTransaction,
    hosts: Option<Table<'t, &'static str, &'static [u8]>>,
    rules: Option<Table<'t, &'static str, &'static [u8]>>,
    rows: Option<Table<'t, (&'static str, &'static str), &'static [u8]>>,
    counts: Option<Table<'t, &'static str, u64>>,
}

impl std::fmt::Debug for RedbLearn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbLearn").finish_non_exhaustive()
    }
}

impl<'t> RedbLearn<'t> {
    pub fn new(txn: &'t WriteTransaction) -> Self {
        RedbLearn {
            txn,
            hosts: None,
            rules: None,
            rows: None,
            counts: None,
        }
    }

    fn map(&mut self, map: Map) -> Result<&mut Table<'t, &'static str, &'static [u8]>, LearnError> {
        let (slot, def) = match map {
            Map::TemplateHosts => (&mut self.hosts, HOSTS),
            Map::DustRules => (&mut self.rules, RULES),
        };
        if slot.is_none() {
            *slot = Some(self.txn.open_table(def).map_err(err)?);
        }
        slot.as_mut().ok_or_else(|| err("table not open"))
    }

    fn rewrites(&mut self) -> Result<RewriteTables<'_, 't>, LearnError> {
        if self.rows.is_none() {
            self.rows = Some(self.txn.open_table(REWRITES).map_err(err)?);
        }
        if self.counts.is_none() {
            self.counts = Some(self.txn.open_table(REWRITE_COUNTS).map_err(err)?);
        }
        match (self.rows.as_mut(), self.counts.as_mut()) {
            (Some(r), Some(c)) => Ok((r, c)),
            _ => Err(err("tables not open")),
        }
    }
}

impl LearnStore for RedbLearn<'_> {
    fn get(&mut self, name: &str) -> Result<Option<Vec<u8>>, LearnError> {
        let t = state::open(self.txn).map_err(err)?;
        Ok(t.get(name).map_err(err)?.map(|v| v.value().to_vec()))
    }

    fn remove(&mut self, name: &str) -> Result<(), LearnError> {
        let mut t = state::open(self.txn).map_err(err)?;
        t.remove(name).map_err(err)?;
        Ok(())
    }

    fn entries(&mut self, map: Map) -> Result<Vec<(String, Vec<u8>)>, LearnError> {
        let t = self.map(map)?;
        let mut out = Vec::new();
        for row in t.iter().map_err(err)? {
            let (k, v) = row.map_err(err)?;
            out.push((k.value().to_owned(), v.value().to_vec()));
        }
        Ok(out)
    }

    fn put_entry(&mut self, map: Map, key: &str, value: &[u8]) -> Result<(), LearnError> {
        self.map(map)?.insert(key, value).map_err(err)?;
        Ok(())
    }

    fn remove_entry(&mut self, map: Map, key: &str) -> Result<bool, LearnError> {
        Ok(self.map(map)?.remove(key).map_err(err)?.is_some())
    }

    fn clear(&mut self, map: Map) -> Result<(), LearnError> {
        self.map(map)?.retain(|_, _| false).map_err(err)
    }

    fn record(&mut self, rule: &str, r: &Restored, max_per_rule: u64) -> Result<bool, LearnError> {
        let value = encode_record(r);
        let (rows, counts) = self.rewrites()?;
        let row = (rule, r.url.as_str());
        if rows.get(row).map_err(err)?.is_some() {
            // Recorded already (an entry folded again): the latest form
            // wins, the count stays.
            rows.insert(row, value.as_slice()).map_err(err)?;
            return Ok(true);
        }
        let n = counts.get(rule).map_err(err)?.map_or(0, |v| v.value());
        if n >= max_per_rule {
            return Ok(false);
        }
        rows.insert(row, value.as_slice()).map_err(err)?;
        counts.insert(rule, n + 1).map_err(err)?;
        Ok(true)
    }

    fn give_back(&mut self, withdrawn: &[String], others: &[String]) -> Result<Vec<Restored>, LearnError> {
        let (rows_t, counts) = self.rewrites()?;
        let mut out = Vec::new();
        let mut given = std::collections::HashSet::new();
        for key in withdrawn {
            let mut rows: Vec<(String, Vec<u8>)> = Vec::new();
            for row in rows_t.range((key.as_str(), "")..).map_err(err)? {
                let (k, v) = row.map_err(err)?;
                let (rk, url) = k.value();
                if rk != key {
                    break;
                }
                rows.push((url.to_string(), v.value().to_vec()));
            }
            for (url, _) in &rows {
                rows_t.remove((key.as_str(), url.as_str())).map_err(err)?;
            }
            counts.remove(key.as_str()).map_err(err)?;
            for (url, value) in rows {
                if !given.insert(url.clone()) {
                    continue;
                }
                for other in others.iter().filter(|o| *o != key) {
                    if rows_t
                        .remove((other.as_str(), url.as_str()))
                        .map_err(err)?
                        .is_some()
                    {
                        let n = counts.get(other.as_str()).map_err(err)?.map_or(0, |v| v.value());
                        counts.insert(other.as_str(), n.saturating_sub(1)).map_err(err)?;
                    }
                }
                out.extend(decode_record(&url, &value));
            }
        }
        Ok(out)
    }
}

/// Runs `f` on the learners' store of a write transaction of its own on
/// `db`, committed when `f` succeeds: loading the learners at start (they
/// convert what earlier versions saved, in the same transaction).
pub fn with_store<T>(db: &redb::Database, f: impl FnOnce(&mut dyn LearnStore) -> Result<T>) -> Result<T> {
    let txn = db.begin_write().context("cannot open the learners' store")?;
    let out = {
        let mut store = RedbLearn::new(&txn);
        f(&mut store)?
    };
    txn.commit().context("cannot commit the learners' store")?;
    Ok(out)
}

/// Runs `f` on a learners' store over a read snapshot of `db` (a
/// read-only database): loading the learners without changing the file.
/// What loading writes (the conversion of what earlier versions saved)
/// lands in memory and is dropped with the store, so the learners load as
/// they would from a read-write store.
pub fn with_snapshot<T>(
    db: &impl ReadableDatabase,
    f: impl FnOnce(&mut dyn LearnStore) -> Result<T>,
) -> Result<T> {
    let txn = db.begin_read().context("cannot read the learners' store")?;
    let mut store = SnapshotLearn {
        txn,
        blobs: BTreeMap::new(),
        maps: BTreeMap::new(),
    };
    f(&mut store)
}

/// A learners' store over a read snapshot, its writes kept in memory over
/// it ([`with_snapshot`]). `None` in an overlay is a removal.
struct SnapshotLearn {
    txn: ReadTransaction,
    blobs: BTreeMap<String, Option<Vec<u8>>>,
    maps: BTreeMap<(MapKey, String), Option<Vec<u8>>>,
}

/// [`Map`], ordered, as a key of the overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum MapKey {
    TemplateHosts,
    DustRules,
}

impl From<Map> for MapKey {
    fn from(m: Map) -> Self {
        match m {
            Map::TemplateHosts => MapKey::TemplateHosts,
            Map::DustRules => MapKey::DustRules,
        }
    }
}

impl SnapshotLearn {
    /// The committed entries of `map` (none when the table was never made).
    fn stored(&self, map: Map) -> Result<BTreeMap<String, Vec<u8>>, LearnError> {
        let def = match map {
            Map::TemplateHosts => HOSTS,
            Map::DustRules => RULES,
        };
        let t = match self.txn.open_table(def) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(BTreeMap::new()),
            Err(e) => return Err(err(e)),
        };
        let mut out = BTreeMap::new();
        for row in t.iter().map_err(err)? {
            let (k, v) = row.map_err(err)?;
            out.insert(k.value().to_owned(), v.value().to_vec());
        }
        Ok(out)
    }

    /// Refuses what only a crawl does (recording rewrites, giving them
    /// back): a loader never calls it, and an in-memory copy of the
    /// bounded records would answer the bound wrongly.
    fn refused(what: &str) -> LearnError {
        err(format!("the learners' store is a read snapshot: cannot {what}"))
    }
}

impl LearnStore for SnapshotLearn {
    fn get(&mut self, name: &str) -> Result<Option<Vec<u8>>, LearnError> {
        if let Some(v) = self.blobs.get(name) {
            return Ok(v.clone());
        }
        let t = match self.txn.open_table(state::STATE) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(err(e)),
        };
        Ok(t.get(name).map_err(err)?.map(|v| v.value().to_vec()))
    }

    fn remove(&mut self, name: &str) -> Result<(), LearnError> {
        self.blobs.insert(name.to_owned(), None);
        Ok(())
    }

    fn entries(&mut self, map: Map) -> Result<Vec<(String, Vec<u8>)>, LearnError> {
        let mut all = self.stored(map)?;
        let key = MapKey::from(map);
        for ((m, k), v) in &self.maps {
            if *m != key {
                continue;
            }
            match v {
                Some(v) => all.insert(k.clone(), v.clone()),
                None => all.remove(k),
            };
        }
        Ok(all.into_iter().collect())
    }

    fn put_entry(&mut self, map: Map, key: &str, value: &[u8]) -> Result<(), LearnError> {
        self.maps
            .insert((map.into(), key.to_owned()), Some(value.to_vec()));
        Ok(())
    }

    fn remove_entry(&mut self, map: Map, key: &str) -> Result<bool, LearnError> {
        let was = match self.maps.get(&(map.into(), key.to_owned())) {
            Some(v) => v.is_some(),
            None => self.stored(map)?.contains_key(key),
        };
        self.maps.insert((map.into(), key.to_owned()), None);
        Ok(was)
    }

    fn clear(&mut self, map: Map) -> Result<(), LearnError> {
        let key = MapKey::from(map);
        let stored: Vec<String> = self.stored(map)?.into_keys().collect();
        self.maps.retain(|(m, _), _| *m != key);
        for k in stored {
            self.maps.insert((key, k), None);
        }
        Ok(())
    }

    fn record(&mut self, _rule: &str, _r: &Restored, _max_per_rule: u64) -> Result<bool, LearnError> {
        Err(Self::refused("record a rewritten URL"))
    }

    fn give_back(&mut self, _withdrawn: &[String], _others: &[String]) -> Result<Vec<Restored>, LearnError> {
        Err(Self::refused("give rewritten URLs back"))
    }
}

/// Saves the site templates changed since the last save in a transaction of
/// their own (at the end of a run; made durable by the store's next flush).
pub fn save_templates(t: &crate::template::Templates, store: &simcrawl_dedup::RedbStore) -> Result<()> {
    if !t.has_changes() {
        return Ok(());
    }
    store
        .write_with(simcrawl_dedup::Commit::Periodic, |txn, _| {
            t.save_if_due(&mut RedbLearn::new(txn), crate::template::Save::Now)
                .map(drop)
                .map_err(Into::into)
        })
        .context("cannot save the site templates")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A snapshot store reads what was committed, sees its own writes
    /// (a loader's conversion of an old blob), and leaves the file as it
    /// was.
    #[test]
    fn a_snapshot_store_keeps_its_writes_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        {
            let db = redb::Database::create(&path).unwrap();
            with_store(&db, |s| {
                s.put_entry(Map::DustRules, "a.example r1", b"learnt 3")?;
                s.put_entry(Map::DustRules, "a.example r2", b"learnt 4")?;
                Ok(())
            })
            .unwrap();
            let txn = db.begin_write().unwrap();
            state::open(&txn)
                .unwrap()
                .insert("old", b"blob".as_slice())
                .unwrap();
            txn.commit().unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let db = redb::ReadOnlyDatabase::open(&path).unwrap();
        let rules = with_snapshot(&db, |s| {
            assert_eq!(s.get("old")?, Some(b"blob".to_vec()));
            s.remove("old")?;
            assert_eq!(s.get("old")?, None);
            assert!(s.remove_entry(Map::DustRules, "a.example r1")?);
            s.put_entry(Map::DustRules, "b.example r3", b"blocked")?;
            assert!(s.entries(Map::TemplateHosts)?.is_empty());
            assert!(
                s.record(
                    "a.example r2",
                    &Restored {
                        url: url::Url::parse("http://a.example/x").unwrap(),
                        depth: 1,
                        was_queued: false,
                    },
                    10
                )
                .is_err()
            );
            Ok(s.entries(Map::DustRules)?)
        })
        .unwrap();
        let keys: Vec<&str> = rules.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a.example r2", "b.example r3"]);
        let again = with_snapshot(&db, |s| Ok((s.get("old")?, s.entries(Map::DustRules)?.len()))).unwrap();
        assert_eq!(again, (Some(b"blob".to_vec()), 2), "nothing was written");
        drop(db);
        assert!(std::fs::read(&path).unwrap() == before, "the file changed");
    }
}
