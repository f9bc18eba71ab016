//! `crawl --seeds FILE`: the crawler.
//!
//! Sources -> transforms -> sinks, one module per stage:
//!
//! - [`dispatch`]: the frontier feeds page tasks (async, polite), within the
//!   concurrency limits, until the frontier is done, the budget spent or a
//!   signal ([`signals`]) stops the crawl;
//! - [`worker`]: each task fetches its page, then cleans and signs it on
//!   the CPU pool ([`cpu`]: rayon's, off the reactor);
//! - [`commit`]: one writer thread takes the results as they come, in
//!   groups (whatever is ready: groups grow with load and no result waits
//!   for a timer), and hands each group to the backend's
//!   [`crate::backend::Commits`], which judges the pages against the dedup
//!   tiers, records their lines (`crate::output::record`) and commits.
//!
//! The stored state is reached through one contract with two backends
//! ([`crate::backend`]: a `Source` for the dispatcher, a `Commits` for the
//! writer): the redb file of one machine (`crate::backend::local`: frontier,
//! tiers and checkpoints committed in one transaction, made durable at most
//! every quarter second), or a Redis server shared by many workers
//! (`crate::backend::redis`, `--redis`). Everything in this module is the
//! same code for both.

pub(crate) mod commit;
pub(crate) mod cpu;
pub(crate) mod dispatch;
pub(crate) mod load;
pub(crate) mod signals;
pub(crate) mod stages;
pub(crate) mod worker;

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use parking_lot::Mutex;
use simcrawl_dedup::{Deduper, RedbStore};
use tokio::sync::mpsc;
use tracing::{info, warn};
use url::Url;

use self::commit::{join_writer, writer_loop};
use self::dispatch::{Dispatch, dispatch};
use self::worker::{Outcome, PageStages, Signer};
use crate::backend::{Commits, Source};
use crate::config::Config;
use crate::dust::Dust;
use crate::frontier::ScopeRules;
use crate::stats::{Ended, Stats};
use crate::template::Templates;

/// The verdict store of a crawl: the dedup tiers over the redb file that
/// also holds the frontier and the checkpoints (one transaction commits
/// all of them).
pub type Tiers = Deduper<RedbStore>;

/// How long the async runtime may take to wind down its remaining tasks
/// (hung fetches, the metrics server) once the crawl is over: they hold
/// nothing that needs saving.
const RUNTIME_SHUTDOWN: Duration = Duration::from_secs(1);

/// Reads a seeds file: one URL per line, `#` comments, blank lines. Invalid
/// lines are reported with the file and line number and skipped; a line
/// that is a URL with something after it (`http://x/a.html extra`) is one
/// of them, since the URL parser would fetch it as `a.html%20extra`. A
/// host without a scheme (`example.com`) gets the URL it likely meant.
pub fn read_seeds(path: &Path) -> Result<Vec<Url>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read seeds file {}", path.display()))?;
    let mut seeds = Vec::new();
    let mut first_problem = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = format!("{}:{}", path.display(), i + 1);
        match seed_url(line) {
            Ok(u) => seeds.push(u),
            Err(why) => {
                warn!("{at}: {why}; skipped");
                first_problem.get_or_insert(format!("{at}: {why}"));
            }
        }
    }
    if seeds.is_empty() {
        match first_problem {
            Some(p) => bail!("no valid seed URL in {} ({p})", path.display()),
            None => bail!("no valid seed URL in {}", path.display()),
        }
    }
    Ok(seeds)
}

/// One seed line (comment and blanks removed) as a URL, or why not.
fn seed_url(line: &str) -> std::result::Result<Url, String> {
    if let Some((url, rest)) = line.split_once(char::is_whitespace) {
        return Err(match Url::parse(url) {
            Ok(u) if u.host_str().is_some() => format!(
                "`{url}` is followed by `{}`: one URL per line (a space inside a URL is written %20)",
                rest.trim()
            ),
            _ => format!("{line:?} is not a URL"),
        });
    }
    match Url::parse(line) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => Ok(u),
        Ok(u) => Err(format!("{line:?} is not an http(s) URL (scheme {})", u.scheme())),
        Err(url::ParseError::RelativeUrlWithoutBase) => match Url::parse(&format!("http://{line}")) {
            Ok(u) if u.host_str().is_some_and(|h| h.contains('.') || h == "localhost") => {
                Err(format!("`{line}` is not a URL (no scheme): did you mean `{u}`?"))
            }
            _ => Err(format!("`{line}` is not a URL (no http:// or https://)")),
        },
        Err(e) => Err(format!("invalid seed URL {line:?}: {e}")),
    }
}

/// Which pages a run visits (`crate::revisit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visits {
    /// A crawl from the seeds, once.
    Crawl,
    /// `crawl revisit`: the pages due, once (and what they link to).
    Due,
    /// `crawl revisit --all`: every page crawled, once.
    All,
    /// `crawl --forever`: new links and revisits in one frontier, until
    /// stopped.
    Forever,
}

/// How a crawl treats the state and outputs of an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Delete them and start over (`--fresh`).
    Fresh,
    /// Resume where the earlier crawl stopped (the default): only the
    /// interrupted crawl of the same seeds and settings
    /// (`crate::backend::local::job`).
    Resume,
    /// Resume, adding the seeds given to the earlier crawl's (`--add-seeds`).
    AddSeeds,
}

/// The page stages of a crawl from `seeds`: the fetcher (seeds on private
/// addresses open their own hosts), the cleaner, `sign`, the scope.
pub(crate) fn page_stages(
    cfg: &Config,
    seeds: &[Url],
    sign: Signer,
    canon: simcrawl_dedup::Canonicalizer,
    templates: Templates,
    dust: Arc<Mutex<Dust>>,
) -> Result<Arc<PageStages>> {
    let mut fetch_cfg = cfg.fetch.clone();
    let private = crate::config::private_seed_hosts(cfg, seeds);
    if !private.is_empty() {
        info!(hosts = ?private, "seeds on private addresses: their hosts may be fetched");
    }
    fetch_cfg.allow_private_hosts.extend(private);
    let fetcher = simcrawl_fetch::Fetcher::new(fetch_cfg).context("invalid [fetch] settings")?;
    // The archive needs every exchange, with heads and error bodies.
    fetcher.set_recording(cfg.output.enabled());
    // A seed or link that is a feed is read from its one request.
    fetcher.set_accept_listings(cfg.crawl.feeds);
    let parse_slots = std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1));
    Ok(Arc::new(PageStages {
        fetcher,
        // The crawl follows links and never reads their texts.
        cleaner: simcrawl_clean::Cleaner::new(cfg.clean.clone())
            .context("invalid [clean] settings")?
            .without_link_texts(),
        sign,
        canon,
        scope: ScopeRules::new(&cfg.crawl, seeds)?,
        sitemaps: cfg.crawl.sitemaps,
        feeds: cfg.crawl.feeds,
        sitemap_max_urls: cfg.crawl.sitemap_max_urls,
        follow_nofollow: cfg.crawl.follow_nofollow,
        respect_noindex: cfg.crawl.respect_noindex,
        write_normalized: cfg.crawl.write_normalized,
        write_text: cfg.crawl.write_text,
        languages: cfg.crawl.languages.clone(),
        lang: crate::lang::SiteLanguages::default(),
        templates,
        parsing: tokio::sync::Semaphore::new(parse_slots as usize),
        parse_slots,
        dust,
        retry_waits: crate::progress::RetryWaits::default(),
        canonicals: Arc::new(crate::canonical::Canonicals::new(cfg.crawl.canonical_first)),
        url_probe: std::sync::OnceLock::new(),
        early_hits: std::sync::OnceLock::new(),
        writer_load: Arc::new(crate::daemon::load::WriterLoad::new()),
    }))
}

/// Runs the pipeline over one backend: the writer thread on `writer`, the
/// dispatcher (and its page tasks) on `source`, until the crawl is over or
/// stopped and the writer has committed everything.
pub(crate) fn drive<S: Source, W: Commits>(
    stages: Arc<PageStages>,
    source: S,
    writer: W,
    settings: Dispatch,
    shared: Arc<Mutex<Stats>>,
) -> Result<Ended> {
    let (out_tx, out_rx) = std_mpsc::channel::<Outcome>();
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let writer_thread = std::thread::Builder::new()
        .name("crawl-writer".into())
        .spawn({
            let stages = stages.clone();
            move || writer_loop(writer, out_rx, done_tx, &stages.writer_load)
        })
        .context("cannot start the writer thread")?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let dispatched = runtime.block_on(dispatch(stages, source, settings, out_tx, done_rx, shared));
    // The writer ends when every sender is gone (the dispatcher dropped its own).
    let joined = join_writer(writer_thread);
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
    // A writer panic first: it explains whatever the dispatcher saw. Nothing
    // is flushed after it (outputs were not synced).
    joined?;
    dispatched
}

/// `stats.json` in `out_dir`: the counters and how the crawl `ended`.
pub(crate) fn write_stats(out_dir: &Path, stats: &Stats, ended: Ended) -> Result<()> {
    let json = ended.stats_json(stats)?;
    std::fs::write(out_dir.join("stats.json"), json)
        .with_context(|| format!("cannot write {}", out_dir.display()))
}

pub(crate) fn remove_if_exists(p: &Path) -> Result<()> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", p.display())),
    }
}
