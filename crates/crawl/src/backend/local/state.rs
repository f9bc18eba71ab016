//! The crawl binary's own records, kept in the dedup store's redb file so
//! they commit in the same transaction as the dedup tiers.

use anyhow::{Context, Result};
use redb::{ReadableDatabase, Table, TableDefinition, WriteTransaction};
use simcrawl_clean::{ChineseVariant, CleanConfig};
use simcrawl_dedup::{Deduper, Store};
use tracing::warn;

use crate::config::Config;

/// Version of the frontier entries ([`crate::backend::local::frontier::FRONTIER`]): 2 is
/// depth + URL, or depth + retry mark + attempts + not-before + URL. Bump it
/// when their encoding changes, so an older or newer crawl state is refused
/// instead of misread.
pub const FRONTIER_RECORDS: u32 = 2;

/// Version of the JSON checkpoints in [`STATE`] (the crawl's sink offsets
/// and counters, the batch tool's progress). Bump it when their fields
/// change meaning. 2: the batch progress counts verdicts as `kept`,
/// `dup_url`, `dup_title`, `dup_content` (was `kept` and `dropped`).
pub const CHECKPOINT_RECORDS: u32 = 2;

/// What the crawl binary records in the store next to the dedup crate's own
/// parameters: a digest of the `[clean]` settings (they change the text
/// every fingerprint is computed from) and the versions of its own records.
pub fn recorded_params(cfg: &Config) -> Result<Vec<(&'static str, String)>> {
    Ok(vec![
        ("clean", clean_digest(&cfg.clean)?),
        ("frontier_records", FRONTIER_RECORDS.to_string()),
        ("checkpoint_records", CHECKPOINT_RECORDS.to_string()),
    ])
}

/// The digest of `[clean]` settings the index records (`clean=`).
fn clean_digest(clean: &CleanConfig) -> Result<String> {
    clean.digest().context("cannot serialize the [clean] settings")
}

/// `[clean] convert_chinese` defaults of earlier versions, newest first.
/// An index built under one of them keeps it while the setting is left
/// unset, so that changing the default does not make every existing data
/// directory refuse to resume (`t2s` was the default until Taiwan
/// vocabulary was folded too, issue 35).
const FORMER_CHINESE_DEFAULTS: [ChineseVariant; 1] = [ChineseVariant::T2s];

/// Puts back the Chinese profile an existing index was built with, when
/// these settings leave it to a default that has changed since and that is
/// the only difference in `[clean]`: the index keeps matching its own
/// fingerprints, and the log says how to fold Taiwan vocabulary (a fresh
/// data directory). A new store, a setting the user gave, or any other
/// difference leaves `cfg` as it is (the opening then refuses, naming it).
fn adopt_recorded_defaults<S: Store>(store: &S, cfg: &mut Config) -> Result<()> {
    if cfg.chinese_given {
        return Ok(());
    }
    let Some(stored) = Deduper::recorded_param(store, "clean")? else {
        return Ok(());
    };
    if clean_digest(&cfg.clean)? == stored {
        return Ok(());
    }
    for former in FORMER_CHINESE_DEFAULTS {
        let then = CleanConfig {
            convert_chinese: former,
            ..cfg.clean.clone()
        };
        if clean_digest(&then)? == stored {
            warn!(
                "this index was built with clean.convert_chinese = \"{}\", the default of earlier versions: \
                 keeping it (the default is now \"{}\", which also folds Taiwan vocabulary; a fresh data \
                 directory or namespace gets it, and setting clean.convert_chinese silences this)",
                former.name(),
                cfg.clean.convert_chinese.name()
            );
            cfg.clean.convert_chinese = former;
            return Ok(());
        }
    }
    Ok(())
}

/// Version of the revisit records, recorded by the states made since they
/// have a file of their own (`crate::revisit::side`, postcard records): a
/// build from before would find no records in the main file and write its
/// own there, so it refuses such a state. A state made before records no
/// version and keeps its records in the main file.
pub const REVISIT_RECORDS: u32 = 2;

/// Opens the dedup tiers over `store` with the crawl's recorded parameters:
/// a data directory built under other `[clean]` settings or by a crawl with
/// other record versions is refused, naming each difference. First, `cfg`
/// takes the Chinese profile an existing index was built with where it was
/// left to a default that changed since ([`adopt_recorded_defaults`]):
/// build the cleaner from `cfg` after this.
pub fn open_deduper<S: Store>(store: S, cfg: &mut Config) -> Result<Deduper<S>> {
    adopt_recorded_defaults(&store, cfg)?;
    let mut params = recorded_params(cfg)?;
    let made_before = Deduper::recorded_param(&store, "clean")?.is_some()
        && Deduper::recorded_param(&store, "revisit_records")?.is_none();
    if !made_before {
        params.push(("revisit_records", REVISIT_RECORDS.to_string()));
    }
    let extra: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Ok(Deduper::with_params(store, cfg.dedup.clone(), &extra)?)
}

/// Checkpoints: sink offsets, batch progress, counters.
pub const STATE: TableDefinition<&str, &[u8]> = TableDefinition::new("crawl_state");

/// Opens the state table on a write transaction.
pub fn open(txn: &WriteTransaction) -> Result<Table<'_, &'static str, &'static [u8]>, redb::TableError> {
    txn.open_table(STATE)
}

/// Reads a value outside any write transaction.
pub fn read(db: &impl ReadableDatabase, key: &str) -> Result<Option<Vec<u8>>> {
    let txn = db.begin_read()?;
    let table = match txn.open_table(STATE) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(table.get(key)?.map(|v| v.value().to_vec()))
}

/// Reads a JSON value outside any write transaction.
pub fn read_json<T: serde::de::DeserializeOwned>(db: &impl ReadableDatabase, key: &str) -> Result<Option<T>> {
    match read(db, key)? {
        Some(bytes) => Ok(Some(serde_json::from_slice(&bytes)?)),
        None => Ok(None),
    }
}

/// Writes a JSON value in a write transaction.
pub fn put_json<T: serde::Serialize>(
    table: &mut Table<'_, &'static str, &'static [u8]>,
    key: &str,
    value: &T,
) -> Result<(), simcrawl_dedup::Error> {
    let bytes = serde_json::to_vec(value).map_err(caller_err)?;
    table.insert(key, bytes.as_slice())?;
    Ok(())
}

/// Carries one of the crawl's own errors (an output write, a JSON
/// encoding) out of a `RedbStore::write_with` closure, cause chain intact;
/// redb's own errors convert with `?`.
pub fn caller_err(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> simcrawl_dedup::Error {
    simcrawl_dedup::Error::Caller(e.into())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A state at `path` that recorded `extra` with the default settings,
    /// as a build recording them would have left it.
    fn made_recording(path: &std::path::Path, extra: &[(&str, &str)]) {
        let d = Deduper::with_params(
            simcrawl_dedup::RedbStore::open(path).unwrap(),
            Config::default().dedup,
            extra,
        )
        .unwrap();
        d.flush().unwrap();
    }

    fn reopen_recording(name: &str, value: &str) -> anyhow::Error {
        let cfg = Config::default();
        let params = recorded_params(&cfg).unwrap();
        let extra: Vec<(&str, &str)> = params
            .iter()
            .map(|(k, v)| (*k, if *k == name { value } else { v.as_str() }))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        made_recording(&path, &extra);
        open_deduper(simcrawl_dedup::RedbStore::open(&path).unwrap(), &mut cfg.clone()).unwrap_err()
    }

    #[test]
    fn a_store_with_other_frontier_records_is_refused() {
        let e = format!("{:#}", reopen_recording("frontier_records", "1"));
        assert!(
            e.contains(&format!(
                "frontier_records: stored 1, requested {FRONTIER_RECORDS}"
            )),
            "{e}"
        );
        let e = format!("{:#}", reopen_recording("checkpoint_records", "9"));
        assert!(e.contains("checkpoint_records: stored 9"), "{e}");
    }

    /// A new state records the revisit records' version, so that a build
    /// from before their file refuses it; a state made before (no version
    /// recorded) still opens, as it was; another version is refused.
    #[test]
    fn states_record_the_revisit_records_version_from_now_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        let d = open_deduper(
            simcrawl_dedup::RedbStore::open(&path).unwrap(),
            &mut Config::default(),
        )
        .unwrap();
        assert!(
            d.params()
                .contains(&format!("revisit_records={REVISIT_RECORDS}\n"))
        );
        drop(d);
        open_deduper(
            simcrawl_dedup::RedbStore::open(&path).unwrap(),
            &mut Config::default(),
        )
        .unwrap();

        let cfg = Config::default();
        let before = dir.path().join("before.redb");
        let params = recorded_params(&cfg).unwrap();
        let extra: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        made_recording(&before, &extra);
        let d = open_deduper(
            simcrawl_dedup::RedbStore::open(&before).unwrap(),
            &mut cfg.clone(),
        )
        .unwrap();
        assert!(!d.params().contains("revisit_records="));
        drop(d);

        let other = dir.path().join("other.redb");
        let mut extra = extra.clone();
        extra.push(("revisit_records", "1"));
        made_recording(&other, &extra);
        let e = format!(
            "{:#}",
            open_deduper(simcrawl_dedup::RedbStore::open(&other).unwrap(), &mut cfg.clone()).unwrap_err()
        );
        assert!(e.contains("revisit_records: stored 1"), "{e}");
    }

    /// A data directory from before the canonical URL forms had a version
    /// (its URL keys were computed by version 1) is refused with a message
    /// that says so, not resumed with keys that no longer match.
    #[test]
    fn a_store_keyed_by_older_canonical_urls_is_refused() {
        let mut cfg = Config::default();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.redb");
        let d = open_deduper(simcrawl_dedup::RedbStore::open(&path).unwrap(), &mut cfg).unwrap();
        let old: String = d
            .params()
            .lines()
            .filter(|l| !l.starts_with("url_canon="))
            .map(|l| format!("{l}\n"))
            .collect();
        d.store().write(|t| t.set_meta("params", old.as_bytes())).unwrap();
        d.flush().unwrap();
        drop(d);
        let e = open_deduper(simcrawl_dedup::RedbStore::open(&path).unwrap(), &mut cfg).unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.contains("keyed by URL canonicalization version 1") && text.contains("new data directory"),
            "{text}"
        );
        assert!(matches!(
            e.downcast_ref::<simcrawl_dedup::Error>(),
            Some(simcrawl_dedup::Error::OldUrlKeys { .. })
        ));
    }

    #[test]
    fn errors_out_of_a_transaction_keep_their_cause_chain() {
        let io = std::io::Error::other("disk full");
        let inner = anyhow::Error::new(io).context("cannot write out/kept.jsonl");
        let back = anyhow::Error::new(caller_err(inner)).context("cannot commit crawl results");
        assert_eq!(
            format!("{back:#}"),
            "cannot commit crawl results: cannot write out/kept.jsonl: disk full"
        );
        assert!(back.chain().any(|e| e.downcast_ref::<std::io::Error>().is_some()));
    }

    /// The digest of the default `[clean]` settings as data directories store it
    /// (since before the normalizer steps got one name each, issue 13): renaming a
    /// step or a key must not change it, or existing data directories would refuse
    /// to resume with the same settings.
    ///
    /// The default Chinese profile changed from `t2s` to `t2s_tw` (issue 35): the
    /// first digest is what every data directory built before holds, which
    /// [`adopt_recorded_defaults`] must recognise.
    #[test]
    fn the_clean_digest_of_the_defaults_is_the_stored_one() {
        let mut former = Config::default();
        former.clean.convert_chinese = ChineseVariant::T2s;
        let digest = recorded_params(&former).unwrap()[0].clone();
        assert_eq!(digest, ("clean", "4c5784360f16e323f59a2f24aacccc01".to_owned()));
        let digest = recorded_params(&Config::default()).unwrap()[0].clone();
        assert_eq!(digest, ("clean", DEFAULT_DIGEST.to_owned()));
    }

    const DEFAULT_DIGEST: &str = "e1741999f3e8c3bc5888f9130d88526a";

    /// An index built under the former default, opened with the setting left
    /// unset: it keeps `t2s` and opens; given explicitly, the new profile is
    /// kept and the index refuses it, naming `clean`.
    #[test]
    fn an_index_of_the_former_chinese_default_keeps_it_unless_told_otherwise() {
        use simcrawl_dedup::MemoryStore;
        let mut former = Config::default();
        former.clean.convert_chinese = ChineseVariant::T2s;
        let store = open_deduper(MemoryStore::new(), &mut former.clone())
            .unwrap()
            .into_store();

        let mut cfg = Config::default();
        let store = open_deduper(store, &mut cfg).unwrap().into_store();
        assert_eq!(cfg.clean.convert_chinese, ChineseVariant::T2s);

        let mut given = Config {
            chinese_given: true,
            ..Config::default()
        };
        let e = open_deduper(store, &mut given).unwrap_err();
        assert_eq!(given.clean.convert_chinese, ChineseVariant::T2sTw);
        assert!(format!("{e:#}").contains("clean: stored"), "{e:#}");

        // Another difference in [clean] is not the former default: refused as before.
        let store = open_deduper(MemoryStore::new(), &mut former)
            .unwrap()
            .into_store();
        let mut other = Config::default();
        other.clean.lowercase = false;
        assert!(open_deduper(store, &mut other).is_err());
        assert_eq!(other.clean.convert_chinese, ChineseVariant::T2sTw);

        // A new index takes the new default.
        let mut fresh = Config::default();
        open_deduper(MemoryStore::new(), &mut fresh).unwrap();
        assert_eq!(fresh.clean.convert_chinese, ChineseVariant::T2sTw);
    }

    #[test]
    fn the_clean_digest_follows_the_settings() {
        let a = Config::default();
        let mut b = Config::default();
        b.clean.lowercase = !b.clean.lowercase;
        let digest = |c: &Config| recorded_params(c).unwrap()[0].clone();
        assert_eq!(digest(&a), digest(&Config::default()));
        assert_ne!(digest(&a), digest(&b));
    }
}
