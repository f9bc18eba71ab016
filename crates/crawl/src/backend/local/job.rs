//! What a local crawl is (its job): the seeds it was started from, the
//! settings that decide what it fetches and how it compares pages, where
//! its outputs live, and how its last run ended. Recorded in the crawl
//! state (`crawl_state`, [`JOB_KEY`]) with the seeds, and again when a run
//! ends, so that a later `crawl` in the same data directory can tell the
//! interrupted crawl it should resume from another crawl it must not mix
//! into (Scrapy resumes only an explicit JOBDIR; wget never resumes).
//!
//! The shared (Redis) mode keeps no job record: there, workers join one
//! crawl by its namespace and each brings seeds that are added to it, so
//! other seeds are the normal case, not a mistake (docs/guide).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use url::Url;

use super::state;
use crate::config::Config;

/// Key of the [`Job`] in the `crawl_state` table.
pub const JOB_KEY: &str = "crawl:job";

/// Key of the job's seed list (one URL a line, sorted) in the
/// `crawl_state` table: kept apart from the [`Job`], which is read on
/// every start, since only `--add-seeds` and messages need it.
pub const SEEDS_KEY: &str = "crawl:job:seeds";

/// The `[crawl]` settings that make a crawl what it is: with others, the
/// same seeds reach other pages (or keep other ones), so mixing runs under
/// both would leave outputs no single setting explains. The budget
/// (`max_pages`) is not one of them: raising it continues the crawl.
/// Timings, concurrency and politeness change how fast, not what.
const JOB_SETTINGS: [&str; 9] = [
    "scope",
    "include",
    "exclude",
    "max_depth",
    "follow_nofollow",
    "respect_noindex",
    "languages",
    "sitemaps",
    "feeds",
];

/// How the last run of a crawl ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// A run started and did not record its end: it was killed (or
    /// crashed), unless it is still running (a running crawl holds the
    /// state's lock, so no other run reads this).
    Running,
    /// Every page of the frontier was fetched.
    Finished,
    /// The page budget (`crawl.max_pages`) was spent; pages are left.
    MaxPages,
    /// SIGINT or SIGTERM stopped it; pages are left.
    Signal,
    /// It stopped with pages left and neither a signal nor the budget
    /// (a page task failed): the next run fetches them.
    Incomplete,
}

impl Ended {
    /// The word `crawl status` prints (`interrupted` for a run that did not
    /// record its end).
    pub fn word(self) -> &'static str {
        match self {
            Ended::Running => "interrupted",
            Ended::Finished => "finished",
            Ended::MaxPages => "max_pages",
            Ended::Signal => "signal",
            Ended::Incomplete => "incomplete",
        }
    }
}

/// The job record (see the module documentation).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    /// MD5 of the sorted, distinct seed URLs, one a line.
    pub seeds_digest: String,
    /// How many distinct seeds.
    pub seeds: u64,
    /// [`JOB_SETTINGS`], as `crawl.KEY` -> value.
    pub settings: BTreeMap<String, Value>,
    /// Every `[clean]` and `[dedup]` setting, dotted: the index refuses
    /// others by digest, and these name the keys that differ.
    pub index_settings: BTreeMap<String, Value>,
    /// Where its outputs live (absolute).
    pub out_dir: PathBuf,
    /// How its last run ended.
    pub ended: Ended,
    /// When its last run ended (unix ms; 0 while running).
    #[serde(default)]
    pub ended_at_ms: u64,
    /// The budget of its last run (`crawl.max_pages`, 0: none).
    #[serde(default)]
    pub max_pages: u64,
}

impl Job {
    /// The job of a crawl from `list` (see [`seed_list`]) under `cfg`, running.
    pub fn new(cfg: &Config, list: &BTreeSet<String>) -> anyhow::Result<Job> {
        Ok(Job {
            seeds_digest: digest(list),
            seeds: list.len() as u64,
            settings: job_settings(cfg)?,
            index_settings: index_settings(cfg)?,
            out_dir: absolute(&cfg.crawl.out_dir),
            ended: Ended::Running,
            ended_at_ms: 0,
            max_pages: cfg.crawl.max_pages,
        })
    }

    /// The job recorded in `db`, if any (data directories from before job
    /// records have none).
    pub fn load(db: &impl redb::ReadableDatabase) -> anyhow::Result<Option<Job>> {
        state::read_json(db, JOB_KEY)
    }

    /// Writes it into `table` (the `crawl_state` table of a write transaction).
    pub fn put(
        &self,
        table: &mut redb::Table<'_, &'static str, &'static [u8]>,
    ) -> Result<(), simcrawl_dedup::Error> {
        state::put_json(table, JOB_KEY, self)
    }
}

/// The seeds as stored: distinct, sorted.
pub fn seed_list(seeds: &[Url]) -> BTreeSet<String> {
    seeds.iter().map(|u| u.as_str().to_owned()).collect()
}

/// The seed list recorded in `db` (empty if none).
pub fn load_seeds(db: &impl redb::ReadableDatabase) -> anyhow::Result<BTreeSet<String>> {
    Ok(state::read(db, SEEDS_KEY)?
        .map(|b| String::from_utf8_lossy(&b).lines().map(str::to_owned).collect())
        .unwrap_or_default())
}

/// Writes the seed list into `table`.
pub fn put_seeds(
    table: &mut redb::Table<'_, &'static str, &'static [u8]>,
    seeds: &BTreeSet<String>,
) -> Result<(), simcrawl_dedup::Error> {
    let text: String = seeds.iter().map(|s| format!("{s}\n")).collect();
    table.insert(SEEDS_KEY, text.as_bytes())?;
    Ok(())
}

/// MD5 (hex) of a seed list.
pub fn digest(seeds: &BTreeSet<String>) -> String {
    let mut h = Md5::new();
    for s in seeds {
        h.update(s.as_bytes());
        h.update(b"\n");
    }
    let d: [u8; 16] = h.finalize().into();
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// `path` made absolute (from the current directory), so that a crawl run
/// from elsewhere still names the same folder.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Whether two folders are the same (the same path, or the same folder by
/// two paths).
pub fn same_dir(a: &Path, b: &Path) -> bool {
    let (a, b) = (absolute(a), absolute(b));
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

fn job_settings(cfg: &Config) -> anyhow::Result<BTreeMap<String, Value>> {
    let crawl = serde_json::to_value(&cfg.crawl)?;
    Ok(JOB_SETTINGS
        .iter()
        .map(|k| {
            (
                format!("crawl.{k}"),
                crawl.get(*k).cloned().unwrap_or(Value::Null),
            )
        })
        .collect())
}

fn index_settings(cfg: &Config) -> anyhow::Result<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    flatten("clean", &serde_json::to_value(&cfg.clean)?, &mut out);
    flatten("dedup", &serde_json::to_value(&cfg.dedup)?, &mut out);
    Ok(out)
}

/// Tables become dotted keys; arrays and scalars are values.
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&format!("{prefix}.{k}"), v, out);
            }
        }
        other => {
            out.insert(prefix.to_owned(), other.clone());
        }
    }
}

/// `key: OLD there, NEW now` for each key whose value differs (a key only
/// one side has counts, shown as `unset`).
fn differences<'a>(
    old: &'a BTreeMap<String, Value>,
    new: &'a BTreeMap<String, Value>,
    keep: impl Fn(&str) -> bool,
) -> Vec<String> {
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let show = |v: Option<&Value>| v.map_or_else(|| "unset".to_owned(), Value::to_string);
    keys.into_iter()
        .filter(|k| keep(k) && old.get(*k) != new.get(*k))
        .map(|k| format!("{k}: {} there, {} now", show(old.get(k)), show(new.get(k))))
        .collect()
}

/// Why a crawl does not run in a data directory that holds another job.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Other seeds than the job's.
    #[error(
        "{data_dir} holds another crawl: {summary}. A crawl resumes only with its own seeds and settings; \
         choose one: --add-seeds (add these seeds to that crawl and go on with it), --fresh (delete its \
         state and outputs and start over), or another --data-dir (and --out) for a new crawl"
    )]
    OtherSeeds { data_dir: PathBuf, summary: String },
    /// Other job settings than the job's.
    #[error(
        "{data_dir} holds a crawl made with other settings ({differences}). A crawl resumes only with its own \
         seeds and settings; choose one: put the old values back to go on with it, or start a new crawl \
         with --fresh (deletes its state and outputs) or another --data-dir (and --out)"
    )]
    OtherSettings { data_dir: PathBuf, differences: String },
    /// Other index settings than the index was built with.
    #[error(
        "the crawl state in {data_dir} was built with other settings ({differences}); they change how pages \
         are compared, so its index cannot be used with them. Choose one: put the old values back to go on \
         with that crawl, or start a new one with --fresh (deletes its state and outputs) or another \
         --data-dir (and --out)"
    )]
    IndexSettings { data_dir: PathBuf, differences: String },
    /// A data directory from before job records, with outputs, and none in `--out`.
    #[error(
        "the crawl in {data_dir} has written outputs, but {requested} holds none of them: they are in the \
         --out of its earlier runs (this data directory is older than the record of where): run with that \
         --out to go on with it, or start a new crawl in {requested} with --fresh (deletes that crawl's state \
         and outputs) or another --data-dir"
    )]
    OutputsUnknown { data_dir: PathBuf, requested: PathBuf },
    /// `--out` is not where the job's outputs are.
    #[error(
        "the outputs of the crawl in {data_dir} live in {stored}, not in {requested}: run with --out {stored} \
         to go on with it, or start a new crawl in {requested} with --fresh (deletes that crawl's state and \
         outputs) or another --data-dir"
    )]
    OutputsElsewhere {
        data_dir: PathBuf,
        stored: PathBuf,
        requested: PathBuf,
    },
}

/// Compares the job `stored` with the crawl `cfg` asks for from `seeds`
/// (`adding`: with `--add-seeds`, more seeds are welcome): the settings
/// first (no seed list fixes them), then the seeds.
pub fn compare(
    stored: &Job,
    stored_seeds: &BTreeSet<String>,
    cfg: &Config,
    seeds: &[Url],
    adding: bool,
) -> Result<(), JobError> {
    let data_dir = cfg.store.data_dir.clone();
    let now = job_settings(cfg).unwrap_or_default();
    let diffs = differences(&stored.settings, &now, |_| true);
    if !diffs.is_empty() {
        return Err(JobError::OtherSettings {
            data_dir,
            differences: diffs.join("; "),
        });
    }
    let given = seed_list(seeds);
    if digest(&given) == stored.seeds_digest || adding {
        return Ok(());
    }
    let mut summary = format!(
        "it was started from {} seed(s), these are {}",
        stored.seeds,
        given.len()
    );
    if !stored_seeds.is_empty() {
        let new: Vec<&String> = given.difference(stored_seeds).collect();
        let left = stored_seeds.difference(&given).count();
        if let Some(first) = new.first() {
            let _ = write!(
                summary,
                "; {} of these not among its seeds (e.g. {first})",
                new.len()
            );
        }
        if left > 0 {
            let _ = write!(summary, "; {left} of its seeds not among these");
        }
    }
    Err(JobError::OtherSeeds { data_dir, summary })
}

/// The parameters the dedup crate and the crawl record in the index
/// (`Deduper::params`, [`state::recorded_params`]) and the settings
/// behind each: a refused index is explained by the keys under these.
const PARAM_KEYS: [(&str, &[&str]); 9] = [
    ("bits", &["dedup.bits"]),
    ("hash", &["dedup.bits"]),
    ("blocks", &["dedup.blocks"]),
    ("max_distance", &["dedup.max_distance"]),
    ("bands", &["dedup.bands", "dedup.band_rows"]),
    ("sketch", &["dedup.sketch_bits"]),
    ("features", &["dedup.features."]),
    ("tracking", &["dedup.url."]),
    ("clean", &["clean."]),
];

/// Explains an index that refused this crawl's settings
/// (`simcrawl_dedup::Error::ParamsMismatch`) by the setting keys that
/// differ: from the job's recorded settings when it has them, else (a data
/// directory from before job records, which keeps only digests) by the
/// section. Any other error, or a difference no setting explains (a
/// version of the segmenter, of the records), is returned as it was.
pub fn explain_refusal(e: anyhow::Error, stored: Option<&Job>, cfg: &Config) -> anyhow::Error {
    let Some(simcrawl_dedup::Error::ParamsMismatch { differences, .. }) = e.downcast_ref() else {
        return e;
    };
    let params: Vec<(&str, &str)> = differences
        .split("; ")
        .filter_map(|d| d.split_once(": "))
        .collect();
    let mut prefixes: Vec<&str> = Vec::new();
    for (name, _) in &params {
        match PARAM_KEYS.iter().find(|(p, _)| p == name) {
            Some((_, keys)) => prefixes.extend(keys.iter()),
            None => return e,
        }
    }
    let named = match stored {
        Some(job) => {
            let now = index_settings(cfg).unwrap_or_default();
            differences_of(&job.index_settings, &now, &prefixes)
        }
        None => Vec::new(),
    };
    let named = if named.is_empty() {
        // No record of the settings themselves: name the section, and the
        // values where the index records them as they are.
        let mut out: Vec<String> = Vec::new();
        for (name, detail) in &params {
            let line = match *name {
                "clean" => "a setting of [clean] (this data directory records only their digest)".to_owned(),
                "features" => "a setting of [dedup.features] (recorded only as a digest)".to_owned(),
                "tracking" => "dedup.url.tracking_params (recorded only as a digest)".to_owned(),
                "hash" => continue,
                "bands" => format!("dedup.bands x dedup.band_rows: {}", there_now(detail)),
                other => format!("dedup.{other}: {}", there_now(detail)),
            };
            if !out.contains(&line) {
                out.push(line);
            }
        }
        out
    } else {
        named
    };
    anyhow::Error::new(JobError::IndexSettings {
        data_dir: cfg.store.data_dir.clone(),
        differences: named.join("; "),
    })
}

fn differences_of(
    old: &BTreeMap<String, Value>,
    new: &BTreeMap<String, Value>,
    prefixes: &[&str],
) -> Vec<String> {
    differences(old, new, |k| {
        prefixes.iter().any(|p| {
            if p.ends_with('.') {
                k.starts_with(p)
            } else {
                k == *p
            }
        })
    })
}

/// `stored X, requested Y` (the dedup crate's words) as `X there, Y now`.
fn there_now(detail: &str) -> String {
    match detail
        .strip_prefix("stored ")
        .and_then(|d| d.split_once(", requested "))
    {
        Some((old, new)) => format!("{old} there, {new} now"),
        None => detail.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn urls(list: &[&str]) -> Vec<Url> {
        list.iter().map(|u| Url::parse(u).unwrap()).collect()
    }

    #[test]
    fn the_same_seeds_in_another_order_are_the_same_job() {
        let cfg = Config::default();
        let job = Job::new(&cfg, &seed_list(&urls(&["http://a.test/", "http://b.test/"]))).unwrap();
        let stored = seed_list(&urls(&["http://a.test/", "http://b.test/"]));
        let again = urls(&["http://b.test/", "http://a.test/", "http://a.test/"]);
        assert!(compare(&job, &stored, &cfg, &again, false).is_ok());
        let other = urls(&["http://c.test/"]);
        let e = compare(&job, &stored, &cfg, &other, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("1 of these not among its seeds (e.g. http://c.test/)"),
            "{e}"
        );
        assert!(
            e.contains("2 of its seeds not among these") && e.contains("--add-seeds"),
            "{e}"
        );
        assert!(compare(&job, &stored, &cfg, &other, true).is_ok());
    }

    #[test]
    fn other_job_settings_are_named_and_the_budget_is_not_one() {
        let cfg = Config::default();
        let seeds = urls(&["http://a.test/"]);
        let job = Job::new(&cfg, &seed_list(&seeds)).unwrap();
        let mut more = cfg.clone();
        more.crawl.max_pages = 10;
        more.crawl.concurrency = 3;
        assert!(compare(&job, &BTreeSet::new(), &more, &seeds, false).is_ok());
        more.crawl.max_depth = 1;
        let e = compare(&job, &BTreeSet::new(), &more, &seeds, false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("crawl.max_depth: 100 there, 1 now") || e.contains("crawl.max_depth:"),
            "{e}"
        );
    }

    #[test]
    fn a_refused_index_is_explained_by_its_keys_or_its_section() {
        let cfg = Config::default();
        let job = Job::new(&cfg, &seed_list(&urls(&["http://a.test/"]))).unwrap();
        let mut other = cfg.clone();
        other.clean.lowercase = !other.clean.lowercase;
        let refusal = || {
            anyhow::Error::new(simcrawl_dedup::Error::ParamsMismatch {
                path: "d/index.redb".into(),
                differences: "clean: stored 4c57, requested 7c23".into(),
            })
        };
        let e = explain_refusal(refusal(), Some(&job), &other).to_string();
        assert!(e.contains("clean.lowercase: "), "{e}");
        assert!(!e.contains("4c57"), "{e}");
        let e = explain_refusal(refusal(), None, &other).to_string();
        assert!(e.contains("a setting of [clean]"), "{e}");
        let version = anyhow::Error::new(simcrawl_dedup::Error::ParamsMismatch {
            path: "d/index.redb".into(),
            differences: "segmenter: stored a, requested b".into(),
        });
        let e = explain_refusal(version, None, &other).to_string();
        assert!(e.contains("segmenter: stored a"), "{e}");
    }
}
