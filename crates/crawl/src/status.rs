//! `crawl status --data-dir D`: where a local crawl stands, read from its
//! state without changing it (the single-machine counterpart of
//! `crawl stats`, which reads a shared crawl's counters in Redis): its
//! frontier, its counters, its revisits, how its last run ended.
//!
//! The state is opened read-only ([`RedbReadOnlyStore`], as `crawl check`
//! does): not a byte changes, and a read-only copy can be read. redb lets
//! no reader beside a running crawl (its writer holds the file's lock and
//! reuses pages), so a running crawl is named as such, with where its live
//! counters are, rather than waited for.

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use anyhow::Result;
use redb::{ReadableDatabase, ReadableTableMetadata};
use serde::Serialize;
use simcrawl_dedup::RedbReadOnlyStore;

use crate::backend::local::frontier::FRONTIER;
use crate::backend::local::job::{Ended, Job};
use crate::backend::local::writer::Checkpoint;

/// Why `crawl status` cannot read a crawl state.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// No `index.redb` in the folder.
    #[error("no crawl state in {0} (index.redb): give the --data-dir of a local crawl")]
    NoState(PathBuf),
    /// A crawl is running on it.
    #[error(
        "a crawl is running on {0}: it holds the lock of index.redb, and redb lets no reader beside it. \
         Its live counters are on its progress line (stderr), `kill -USR1 <its pid>` logs them, and \
         --metrics serves them; `crawl status` reads the state once it stops"
    )]
    Running(PathBuf),
}

/// What `crawl status` found, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct Status {
    pub data_dir: PathBuf,
    /// `finished`, `interrupted` (killed, or crashed), `max_pages`,
    /// `signal` (SIGINT, SIGTERM), `incomplete`, `unknown` (a data
    /// directory older than job records), `not_started`.
    pub ended: &'static str,
    /// When its last run ended (RFC 3339), when it recorded it.
    pub ended_at: Option<String>,
    pub out_dir: Option<PathBuf>,
    pub seeds: Option<u64>,
    /// `crawl.max_pages` of its last run (0: none).
    pub max_pages: Option<u64>,
    /// The rest is `None` when the state cannot be read (a crawl killed
    /// without closing it: only the next crawl's read-write open repairs it).
    pub frontier: Option<u64>,
    pub fetched: Option<u64>,
    pub kept: Option<u64>,
    pub dropped: Option<Dropped>,
    pub errors: Option<u64>,
    pub revisits_due: Option<u64>,
    /// When the next page not yet due is due (RFC 3339).
    pub next_revisit_at: Option<String>,
    /// Seconds until then.
    pub next_revisit_in_s: Option<u64>,
    /// What to do next, in words.
    pub hint: String,
}

/// Drops per tier.
#[derive(Debug, Serialize)]
pub struct Dropped {
    pub url: u64,
    pub title: u64,
    pub content: u64,
}

fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// Reads the crawl state in `data_dir`.
pub fn run(data_dir: &Path) -> Result<Status> {
    let db_path = data_dir.join("index.redb");
    if !db_path.exists() {
        return Err(StatusError::NoState(data_dir.to_path_buf()).into());
    }
    let store = match RedbReadOnlyStore::open(&db_path) {
        Ok(s) => s,
        Err(simcrawl_dedup::Error::Locked { .. }) => {
            return Err(StatusError::Running(data_dir.to_path_buf()).into());
        }
        Err(simcrawl_dedup::Error::NeedsRepair { .. }) => {
            return Ok(Status {
                data_dir: data_dir.to_path_buf(),
                ended: Ended::Running.word(),
                ended_at: None,
                out_dir: None,
                seeds: None,
                max_pages: None,
                frontier: None,
                fetched: None,
                kept: None,
                dropped: None,
                errors: None,
                revisits_due: None,
                next_revisit_at: None,
                next_revisit_in_s: None,
                hint: "its last run was killed without closing the state, which only a read-write open \
                       repairs (so its counters cannot be read here): run the same crawl command to \
                       resume it"
                    .into(),
            });
        }
        Err(e) => {
            return Err(anyhow::Error::new(e)
                .context(format!("cannot open the crawl state in {}", data_dir.display())));
        }
    };
    let db = store.database();
    let job = Job::load(db)?;
    let cp = Checkpoint::load(db)?;
    let frontier = {
        let txn = db.begin_read()?;
        match txn.open_table(FRONTIER) {
            Ok(t) => t.len()?,
            Err(redb::TableError::TableDoesNotExist(_)) => 0,
            Err(e) => return Err(e.into()),
        }
    };
    let now = crate::frontier::now_ms();
    let (due, next) = crate::revisit::side::due_summary(db, &db_path, now)?;
    let ended = match &job {
        Some(j) => j.ended.word(),
        None if cp.stats.fetched == 0 && frontier == 0 => "not_started",
        None => "unknown",
    };
    let hint = match job.as_ref().map(|j| j.ended) {
        Some(Ended::Finished) if due > 0 => "finished; `crawl revisit` visits the pages due".to_owned(),
        Some(Ended::Finished) => {
            "finished; the same command does nothing (see --add-seeds, --fresh)".to_owned()
        }
        Some(Ended::MaxPages) => {
            "stopped at its page budget; a higher --max-pages goes on with it".to_owned()
        }
        Some(_) => "the same crawl command resumes it".to_owned(),
        None => "the same crawl command resumes it (this data directory predates job records)".to_owned(),
    };
    let v = &cp.stats.verdicts;
    Ok(Status {
        data_dir: data_dir.to_path_buf(),
        ended,
        ended_at: job
            .as_ref()
            .filter(|j| j.ended_at_ms > 0 && j.ended != Ended::Running)
            .map(|j| rfc3339(j.ended_at_ms)),
        out_dir: job.as_ref().map(|j| j.out_dir.clone()),
        seeds: job.as_ref().map(|j| j.seeds),
        max_pages: job.as_ref().map(|j| j.max_pages),
        frontier: Some(frontier),
        fetched: Some(cp.stats.fetched),
        kept: Some(v.kept),
        dropped: Some(Dropped {
            url: v.dup_url,
            title: v.dup_title,
            content: v.dup_content,
        }),
        errors: Some(cp.stats.errors.values().sum()),
        revisits_due: Some(due),
        next_revisit_at: next.map(rfc3339),
        next_revisit_in_s: next.map(|at| at.saturating_sub(now).div_ceil(1000)),
        hint,
    })
}

/// The status for a person.
pub fn human(s: &Status) -> String {
    use std::fmt::Write as _;
    let mut out = format!("crawl in {}: {}", s.data_dir.display(), s.ended);
    if let Some(at) = &s.ended_at {
        let _ = write!(out, " (at {at})");
    }
    out.push('\n');
    if let Some(dir) = &s.out_dir {
        let _ = writeln!(out, "  outputs: {}", dir.display());
    }
    if let Some(n) = s.seeds {
        let _ = write!(out, "  seeds: {n}");
        match s.max_pages {
            Some(m) if m > 0 => {
                let _ = writeln!(out, "  max_pages: {m}");
            }
            _ => out.push('\n'),
        }
    }
    if let (Some(fetched), Some(kept), Some(d), Some(errors)) = (s.fetched, s.kept, &s.dropped, s.errors) {
        let _ = writeln!(
            out,
            "  fetched {fetched}  kept {kept}  dropped: title {} / content {}  url-tier hits {}  errors {errors}",
            d.title, d.content, d.url
        );
    }
    if let Some(f) = s.frontier {
        let _ = writeln!(out, "  frontier: {f} waiting");
    }
    if let Some(due) = s.revisits_due {
        let _ = write!(out, "  revisits due: {due}");
        match (&s.next_revisit_at, s.next_revisit_in_s) {
            (Some(at), Some(secs)) => {
                let _ = writeln!(
                    out,
                    "; next due at {at} (in {})",
                    humantime::format_duration(Duration::from_secs(secs))
                );
            }
            _ => out.push('\n'),
        }
    }
    let _ = writeln!(out, "  {}", s.hint);
    out
}
