//! [`LearnStore`] over a redb write transaction: the local crawl's (and
//! `crawl dedup`'s) learners commit in the writer's transaction, with the
//! outputs' offsets and the tiers, so a resume finds them as of one
//! checkpoint. The tables are those earlier versions wrote
//! (`template_hosts`, `crawl_dust_rewrites`, `crawl_dust_rewrite_counts`,
//! the `crawl_state` blobs), plus `crawl_dust_rules`.

use anyhow::{Context, Result};
use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};

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
