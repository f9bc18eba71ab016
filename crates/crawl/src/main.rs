//! `crawl`: the simcrawl binary. It parses arguments and wires the
//! libraries: `fetch` (HTTP), `clean` (HTML to text) and `dedup` (the three
//! tiers).

mod backend;
mod batch;
mod bench;
mod canonical;
mod check;
mod config;
mod daemon;
mod dust;
mod eval;
mod frontier;
mod identity;
mod lang;
mod learn;
mod listing;
mod metrics;
mod output;
mod progress;
mod report;
mod revisit;
mod rewrite;
mod sched;
mod stats;
mod status;
mod template;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::config::Config;

/// Crawl web pages and drop duplicates by URL, title and near-duplicate content.
#[derive(Debug, Parser)]
#[command(name = "crawl", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    crawl: CrawlArgs,
    #[command(flatten)]
    log: LogArgs,
    /// How the kernel schedules the crawl's threads (Linux): `batch` (a
    /// woken thread waits for the running one's time slice: less CPU a
    /// page when the crawl has more threads than cores) or `normal` (the
    /// kernel's default).
    #[arg(long, global = true, value_enum, default_value_t = sched::Scheduling::Batch)]
    scheduling: sched::Scheduling,
}

/// Where the log goes and how much of it (every command).
#[derive(Debug, Args, Clone, Default)]
struct LogArgs {
    /// Log level: error, warn, info (the default), debug, trace, or
    /// tracing directives (`info,simcrawl_fetch=debug`). Precedence:
    /// --log-level > CRAWL_LOG > RUST_LOG > info.
    #[arg(long, global = true, value_name = "LEVEL")]
    log_level: Option<String>,
    /// Append the log to this file instead of stderr (the progress line
    /// and the final summary stay on stderr).
    #[arg(long, global = true, value_name = "FILE")]
    log_file: Option<PathBuf>,
}

/// Flags shared by every command.
#[derive(Debug, Args, Clone)]
struct Common {
    /// Settings file (default: built-in defaults; `crawl config --default`
    /// prints the commented file).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Override one setting of the file, in dotted form (repeatable):
    /// `--set fetch.per_host_delay_ms=0 --set crawl.scope=domain`.
    /// Precedence: defaults < file < --set < flags.
    #[arg(long = "set", value_name = "KEY=VALUE", global = true)]
    set: Vec<config::Setting>,
}

impl Common {
    fn load(&self) -> Result<config::Effective> {
        Config::load_with(self.config.as_deref(), &self.set)
    }
}

/// Flags of the crawler that override settings (the last word in
/// precedence).
#[derive(Debug, Args, Clone, Default)]
struct Overrides {
    /// Output directory (kept.jsonl, duplicates.jsonl, errors.jsonl, stats.json) [crawl.out_dir].
    #[arg(long)]
    out: Option<PathBuf>,
    /// State directory (index.redb: frontier and dedup tiers) [store.data_dir].
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Stop after fetching this many pages, counted across resumes [crawl.max_pages].
    #[arg(long)]
    max_pages: Option<u64>,
    /// Follow links at most this deep; seeds are depth 0 [crawl.max_depth].
    #[arg(long)]
    max_depth: Option<u32>,
    /// Pages fetched at once [crawl.concurrency].
    #[arg(long)]
    concurrency: Option<usize>,
    /// Serve Prometheus-format counters at http://ADDR/metrics (e.g. 127.0.0.1:9898) [crawl.metrics].
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Share the crawl with other workers through this Redis server
    /// (redis://HOST:PORT/DB): frontier and dedup tiers in Redis, outputs in
    /// OUT/<worker id>/ [redis.url].
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// This worker's name among those sharing a crawl (default HOSTNAME-PID) [redis.worker_id].
    #[arg(long, value_name = "ID")]
    worker_id: Option<String>,
    /// Archive every HTTP exchange as WARC/1.1 files in this directory
    /// (docs/WARC.md) [output.warc_dir].
    #[arg(long, value_name = "DIR")]
    warc: Option<PathBuf>,
}

impl Overrides {
    fn apply(self, e: &mut config::Effective) {
        let c = &mut e.config;
        let mut set = Vec::new();
        if let Some(v) = self.out {
            c.crawl.out_dir = v;
            set.push("crawl.out_dir");
        }
        if let Some(v) = self.data_dir {
            c.store.data_dir = v;
            set.push("store.data_dir");
        }
        if let Some(v) = self.max_pages {
            c.crawl.max_pages = v;
            set.push("crawl.max_pages");
        }
        if let Some(v) = self.max_depth {
            c.crawl.max_depth = v;
            set.push("crawl.max_depth");
        }
        if let Some(v) = self.concurrency {
            c.crawl.concurrency = v;
            set.push("crawl.concurrency");
        }
        if let Some(v) = self.metrics {
            c.crawl.metrics = v;
            set.push("crawl.metrics");
        }
        if let Some(v) = self.redis {
            c.redis.url = v;
            set.push("redis.url");
        }
        if let Some(v) = self.worker_id {
            c.redis.worker_id = v;
            set.push("redis.worker_id");
        }
        if let Some(v) = self.warc {
            c.output.warc_dir = v;
            set.push("output.warc_dir");
        }
        for key in set {
            e.flag(key);
        }
    }
}

#[derive(Debug, Args)]
struct CrawlArgs {
    /// Seed URLs: one per line, `#` comments and blank lines allowed.
    #[arg(long)]
    seeds: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    overrides: Overrides,
    /// Forget earlier state and outputs and start over.
    #[arg(long)]
    fresh: bool,
    /// Add these seeds to the crawl in the data directory and go on with it
    /// (without it, a crawl resumes only with the seeds it was started from).
    #[arg(long, conflicts_with = "fresh")]
    add_seeds: bool,
    /// Keep running: new links and revisits of the pages crawled (as they
    /// fall due, [revisit]) in one frontier, until stopped (SIGINT/SIGTERM).
    #[arg(long)]
    forever: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Explain one page: fetch it as the crawl would (robots.txt, template,
    /// identity, signature) and show the candidates in a crawl's index and
    /// the verdict, without changing the index.
    Check {
        /// The page's URL.
        url: String,
        /// One JSON object instead of the steps for a person.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        overrides: Overrides,
    },
    /// Visit again, once, the pages of a crawl whose revisit is due (with
    /// --all: every page): conditional requests, changes.jsonl, changed
    /// pages judged again. Then exits.
    Revisit {
        /// Every page crawled, due or not.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        overrides: Overrides,
    },
    /// Deduplicate a JSON-lines corpus ({"url", "title"?, "text" | "html"} per
    /// line), or the HTML responses of WARC files (.warc, .warc.gz, several,
    /// or directories of them) with the crawl's own pipeline.
    Dedup {
        /// The corpus: one JSON-lines file, or WARC files and directories.
        #[arg(long, num_args = 1.., required = true)]
        input: Vec<PathBuf>,
        /// Output directory: kept.jsonl, duplicates.jsonl, errors.jsonl.
        #[arg(long)]
        out: PathBuf,
        /// Keep the index here (persistent, resumable); in memory when absent.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Score the verdicts on a labelled corpus: unique pages lost, component
    /// recall, pair precision and recall.
    Eval {
        /// The corpus, as for `crawl dedup` (URLs must be unique).
        #[arg(long, required_unless_present = "crawled", conflicts_with = "crawled")]
        input: Option<PathBuf>,
        /// Score a crawl's own verdicts instead: its output folder
        /// (kept.jsonl, duplicates.jsonl), with --pages.
        #[arg(long, requires = "pages")]
        crawled: Option<PathBuf>,
        /// With --crawled: the labelled pages, {"url", "source"} per line
        /// (scripts/build-html-gate.sh writes them); scores are per source.
        #[arg(long, requires = "crawled")]
        pages: Option<PathBuf>,
        /// Labelled pairs: {"a": URL, "b": URL, "jaccard": exact resemblance} per
        /// line; pairs not listed are distinct.
        #[arg(long)]
        labels: PathBuf,
        /// Also score reference settings (SimHash only, the seeds' recipe,
        /// no band index) and a sweep of thresholds.
        #[arg(long)]
        sweep: bool,
        /// Resemblance at or above which a pair is a near-duplicate.
        #[arg(long, default_value_t = 0.8)]
        near: f64,
        /// Resemblance below which a pair is distinct (a dropped page with no
        /// kept page at least this close is a unique page lost).
        #[arg(long, default_value_t = 0.5)]
        ambiguous: f64,
        /// Print up to N lost pages per setting (with --crawled: up to N
        /// lost pages and N false drops).
        #[arg(long, default_value_t = 10)]
        show: usize,
        #[command(flatten)]
        common: Common,
    },
    /// Print `<hex>  <name>` for each file (standard input when none): 16 hex digits, 32 at `dedup.bits = 128`.
    Fingerprint {
        files: Vec<PathBuf>,
        /// The files are HTML pages: clean them first.
        #[arg(long)]
        html: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Explain two files: SimHash distance, resemblance (estimated and exact),
    /// the verdict each tier would give the second, the heaviest features.
    Distance {
        a: PathBuf,
        b: PathBuf,
        /// The files are HTML pages: clean them first.
        #[arg(long)]
        html: bool,
        /// Features shown per file.
        #[arg(long, default_value_t = 12)]
        top: usize,
        #[command(flatten)]
        common: Common,
    },
    /// Write OUT_DIR/report.html: totals, similarity of the dropped pages,
    /// duplicate clusters, hosts, the URL patterns behind the duplicates,
    /// errors (from the outputs of a crawl or of `crawl dedup`).
    Report {
        /// The output directory of a crawl (`--out`) or of `crawl dedup`.
        #[arg(value_name = "OUT_DIR")]
        dir: PathBuf,
        /// Open the report in the default browser.
        #[arg(long)]
        open: bool,
        /// Duplicate clusters listed (all are counted).
        #[arg(long, default_value_t = 500)]
        clusters: usize,
    },
    /// Print the effective settings as TOML, each value with where it came
    /// from (default, file, --set, flag); the output reads back as a
    /// settings file.
    Config {
        /// Print the commented default settings file instead.
        #[arg(long, conflicts_with_all = ["config", "set"])]
        default: bool,
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        overrides: Overrides,
    },
    /// Print a shell completion script: `crawl completions bash > /etc/bash_completion.d/crawl`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the merged counters of a crawl shared through Redis (JSON on
    /// stdout, a summary on stderr).
    Stats {
        /// The Redis server of the crawl (redis://HOST:PORT/DB) [redis.url].
        #[arg(long, value_name = "URL")]
        redis: Option<String>,
        /// The crawl's namespace [redis.namespace].
        #[arg(long)]
        namespace: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Where a local crawl stands, read without changing its state: how its
    /// last run ended, frontier, fetched, kept, dropped, revisits due.
    Status {
        /// The crawl's state directory [store.data_dir].
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// One JSON object instead of lines for a person.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Crawl a generated local site and report pages/s, peak RSS and CPU per page.
    Bench(bench::BenchArgs),
    /// Serve the generated bench site (used by `crawl bench`).
    #[command(name = "__serve-site", hide = true)]
    ServeSite {
        #[arg(long)]
        pages: usize,
    },
}

/// The log filter: `--log-level`, else `CRAWL_LOG`, else `RUST_LOG` (the
/// variable every Rust program reads, so that a user's habit works too),
/// else `info`. A bad filter in a flag is an error; in a variable it is
/// said, and `info` used.
fn log_filter(flag: Option<&str>) -> Result<(tracing_subscriber::EnvFilter, Option<String>)> {
    use tracing_subscriber::EnvFilter;
    if let Some(f) = flag {
        // A lone word is a level: tracing would read `loud` as a target
        // name and log nothing from it, without a word.
        const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
        if !f.contains(['=', ',', ':']) && !LEVELS.contains(&f.to_ascii_lowercase().as_str()) {
            anyhow::bail!(
                "--log-level {f:?} is not a log level (one of {})",
                LEVELS.join(", ")
            );
        }
        let filter =
            EnvFilter::try_new(f).with_context(|| format!("--log-level {f:?} is not a log level"))?;
        return Ok((filter, None));
    }
    for var in ["CRAWL_LOG", "RUST_LOG"] {
        if let Ok(v) = std::env::var(var)
            && !v.trim().is_empty()
        {
            return Ok(match EnvFilter::try_new(&v) {
                Ok(filter) => (filter, None),
                Err(e) => (
                    EnvFilter::new("info"),
                    Some(format!("{var}={v:?} is not a log level ({e}); logging at info")),
                ),
            });
        }
    }
    Ok((EnvFilter::new("info"), None))
}

/// Starts the log: on stderr (coloured at a terminal), or appended to
/// `--log-file`.
fn init_logging(args: &LogArgs) -> Result<()> {
    let (filter, problem) = log_filter(args.log_level.as_deref())?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    match &args.log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open the log file {}", path.display()))?;
            builder
                .with_writer(std::sync::Arc::new(file))
                .with_ansi(false)
                .init();
        }
        None => builder
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
    }
    if let Some(p) = problem {
        tracing::warn!("{p}");
    }
    Ok(())
}

/// `--version` also names the store format, since an index written by
/// another format is refused.
fn cli_command() -> clap::Command {
    use clap::CommandFactory;
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let version = VERSION.get_or_init(|| {
        format!(
            "{} (store format {})",
            env!("CARGO_PKG_VERSION"),
            simcrawl_dedup::FORMAT_VERSION
        )
    });
    Cli::command().version(version.as_str())
}

/// jemalloc: 9-15% less CPU per crawled page than glibc's malloc at the
/// same peak RSS, where mimalloc cost 62% more memory (docs/BENCHMARKS.md,
/// "Allocator"). Pages are parsed into many short-lived DOM nodes and
/// strings on threads that come and go; jemalloc's thread caches serve
/// those without the arena locks and chunk coalescing glibc spends on them.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings: a background thread returns freed pages to the
/// system after a second, so an idle daemon (waiting on politeness or on
/// its next revisit) gives memory back. `_RJEM_MALLOC_CONF` overrides.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[allow(unsafe_code, non_upper_case_globals)]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: &[u8; 43] = b"background_thread:true,dirty_decay_ms:1000\0";

/// Without jemalloc (`--no-default-features`; with it, there is nothing to
/// bound and this returns at once): bounds glibc's malloc arenas
/// to two per core (unless `MALLOC_ARENA_MAX` is set). By default glibc
/// gives threads that contend an arena of their own, up to 8 per core, and
/// keeps each arena's freed pages: pages are parsed on tokio's blocking
/// pool, whose threads come and go, so peak memory grew with the arenas
/// rather than with the pages in flight. Measured on the hostile suite
/// (release, 2 cores): peak RSS 273-282 MB with glibc's default (16
/// arenas), 233-243 MB with 4 (docs/BENCHMARKS.md, "Hostile server"). One
/// per core saves no more and contends more.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn limit_malloc_arenas() {
    // On glibc targets the feature means jemalloc is the allocator.
    if cfg!(feature = "jemalloc") || std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    let arenas = std::thread::available_parallelism().map_or(4, |n| n.get().saturating_mul(2).clamp(2, 64));
    let arenas = libc::c_int::try_from(arenas).unwrap_or(4);
    // SAFETY: mallopt only sets a tuning parameter of the allocator; it is
    // called first thing in `main`, before this process starts a thread.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn limit_malloc_arenas() {}

fn main() -> ExitCode {
    limit_malloc_arenas();
    let cli = {
        use clap::FromArgMatches;
        let matches = cli_command().get_matches();
        match Cli::from_arg_matches(&matches) {
            Ok(cli) => cli,
            Err(e) => e.exit(),
        }
    };
    if let Err(e) = init_logging(&cli.log) {
        eprintln!("error: {}", error_text(&e));
        return ExitCode::from(2);
    }
    // Before any thread of the runtimes or pools starts: they inherit it.
    sched::set(cli.scheduling);
    match run(cli) {
        Ok(code) => code,
        // A closed pipe (`crawl fingerprint | head`) is not an error.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", error_text(&e));
            ExitCode::from(2)
        }
    }
}

/// An error and its causes on one line, each cause once: many errors
/// (the store's, redis's) already repeat their source in their own message,
/// and `{:#}` would print it again at every level ("Connection refused (os
/// error 111)" three times). A cause whose text the line already holds is
/// left out.
fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if text.is_empty() || out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Some(Command::Dedup {
            input,
            out,
            data_dir,
            common,
        }) => run_dedup(
            batch::BatchArgs {
                inputs: input,
                out,
                data_dir,
            },
            &common,
        ),
        Some(Command::Eval {
            input,
            crawled,
            pages,
            labels,
            sweep,
            near,
            ambiguous,
            show,
            common,
        }) => run_eval(
            input,
            crawled.zip(pages),
            eval::EvalArgs {
                input: PathBuf::new(),
                labels,
                sweep,
                near,
                ambiguous,
                show,
            },
            &common,
        ),
        Some(Command::Fingerprint { files, html, common }) => {
            let cfg = common.load()?.config;
            let empty = tools::fingerprint(&cfg, &files, tools::Input::from_html_flag(html))?;
            Ok(if empty > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Some(Command::Distance {
            a,
            b,
            html,
            top,
            common,
        }) => {
            let cfg = common.load()?.config;
            tools::distance(&cfg, &a, &b, tools::Input::from_html_flag(html), top)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Report { dir, open, clusters }) => run_report(&dir, open, clusters),
        Some(Command::ServeSite { pages }) => {
            bench::serve_site(pages)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Stats {
            redis,
            namespace,
            common,
        }) => run_stats(redis, namespace, &common),
        Some(Command::Status {
            data_dir,
            json,
            common,
        }) => run_status(data_dir, json, &common),
        // `--config` and `--set` are global flags: given after `bench`,
        // clap hands them to the top level's.
        Some(Command::Bench(args)) => run_bench(args, &cli.crawl.common),
        Some(Command::Config {
            default,
            common,
            overrides,
        }) => run_config(default, &common, overrides),
        Some(Command::Completions { shell }) => {
            let mut cmd = cli_command();
            // Into a buffer first: clap_complete panics on a closed pipe.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "crawl", &mut script);
            std::io::Write::write_all(&mut std::io::stdout(), &script)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Check {
            url,
            json,
            common,
            overrides,
        }) => run_check(&url, json, &common, overrides),
        Some(Command::Revisit {
            all,
            common,
            overrides,
        }) => run_revisit(all, &common, overrides),
        None => run_default_crawl(cli.crawl),
    }
}

/// `crawl dedup`: a batch of documents through the tiers.
fn run_dedup(args: batch::BatchArgs, common: &Common) -> Result<ExitCode> {
    let cfg = common.load()?.config;
    let summary = batch::run(&cfg, &args)?;
    eprintln!("{summary}");
    Ok(ExitCode::SUCCESS)
}

/// `crawl bench`, with the top level's `--config` and `--set` (`common`).
fn run_bench(args: bench::BenchArgs, common: &Common) -> Result<ExitCode> {
    let settings = bench::Settings {
        config: common.load()?.config,
        file: common.config.clone(),
        sets: common.set.clone(),
    };
    bench::bench(args, &settings)?;
    Ok(ExitCode::SUCCESS)
}

/// `crawl eval`: over a crawl's output (`crawled`: the out dir and the
/// pages it was crawled from), else over `--input`; `args` holds the rest
/// of the flags (its `input` is filled here).
fn run_eval(
    input: Option<PathBuf>,
    crawled: Option<(PathBuf, PathBuf)>,
    args: eval::EvalArgs,
    common: &Common,
) -> Result<ExitCode> {
    if let Some((out, pages)) = crawled {
        let report = eval::crawled::run(&eval::crawled::CrawledArgs {
            out,
            pages,
            labels: args.labels,
            near: args.near,
            ambiguous: args.ambiguous,
            show: args.show,
        })?;
        println!("{report}");
        return Ok(ExitCode::SUCCESS);
    }
    let input = input.context("--input or --crawled is required")?;
    let cfg = common.load()?.config;
    let report = eval::run(&cfg, &eval::EvalArgs { input, ..args })?;
    println!("{report}");
    Ok(ExitCode::SUCCESS)
}
/// `crawl report`: writes the HTML report of an out dir, and opens it.
fn run_report(dir: &std::path::Path, open: bool, clusters: usize) -> Result<ExitCode> {
    let limits = report::Limits {
        clusters,
        ..report::Limits::default()
    };
    let (r, path) = report::write(dir, limits)?;
    eprintln!(
        "report of {} kept, {} dropped, {} errors written to {}",
        r.kept,
        r.dropped.total(),
        r.errors,
        path.display()
    );
    println!("{}", path.display());
    if open {
        opener::open(&path).with_context(|| format!("cannot open {} in a browser", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `crawl stats`: the shared crawl's counters in Redis.
fn run_stats(redis: Option<String>, namespace: Option<String>, common: &Common) -> Result<ExitCode> {
    let cfg = common.load()?.config;
    let url = redis.unwrap_or(cfg.redis.url);
    if url.is_empty() {
        anyhow::bail!("crawl stats: give --redis URL (or redis.url in the settings)");
    }
    backend::redis::print_stats(&url, &namespace.unwrap_or(cfg.redis.namespace))?;
    Ok(ExitCode::SUCCESS)
}

/// `crawl status`: the local store's state, for people or as JSON.
fn run_status(data_dir: Option<PathBuf>, json: bool, common: &Common) -> Result<ExitCode> {
    let data_dir = match data_dir {
        Some(d) => d,
        None => common.load()?.config.store.data_dir,
    };
    let status = status::run(&data_dir)?;
    if json {
        println!("{}", serde_json::to_string(&status)?);
    } else {
        print!("{}", status::human(&status));
    }
    Ok(ExitCode::SUCCESS)
}

/// `crawl config`: the default settings file, or the effective settings.
fn run_config(default: bool, common: &Common, overrides: Overrides) -> Result<ExitCode> {
    let text = if default {
        config::DEFAULT_FILE.to_string()
    } else {
        let mut effective = common.load()?;
        overrides.apply(&mut effective);
        effective.to_toml()?
    };
    std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// `crawl check URL`: what a crawl would do with one page; exit 1 when it fails.
fn run_check(url: &str, json: bool, common: &Common, overrides: Overrides) -> Result<ExitCode> {
    let mut effective = common.load()?;
    overrides.apply(&mut effective);
    let report = check::run(&effective.config, url)?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{}", check::human(&report));
    }
    Ok(if check::failed(&report) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `crawl revisit`: visits the stored pages that are due (or all of them).
fn run_revisit(all: bool, common: &Common, overrides: Overrides) -> Result<ExitCode> {
    let mut effective = common.load()?;
    overrides.apply(&mut effective);
    let visits = if all {
        daemon::Visits::All
    } else {
        daemon::Visits::Due
    };
    let run = run_crawl(effective.config, None, daemon::Start::Resume, visits)?;
    eprintln!("{}", run.revisit_summary());
    eprintln!("{}", run.ended.line(&run.stats));
    Ok(ExitCode::from(run.ended.exit_code()))
}

/// `crawl --seeds FILE` (no subcommand): the crawl itself.
fn run_default_crawl(a: CrawlArgs) -> Result<ExitCode> {
    let seeds = a
        .seeds
        .context("nothing to do: give --seeds FILE to crawl, or a subcommand (see --help)")?;
    let mut effective = a.common.load()?;
    a.overrides.apply(&mut effective);
    let cfg = effective.config;
    let stats::Run { stats, ended, .. } = run_crawl(
        cfg,
        Some(&seeds),
        if a.fresh {
            daemon::Start::Fresh
        } else if a.add_seeds {
            daemon::Start::AddSeeds
        } else {
            daemon::Start::Resume
        },
        if a.forever {
            daemon::Visits::Forever
        } else {
            daemon::Visits::Crawl
        },
    )?;
    eprintln!("{stats}");
    if let Some(rules) = dust::summary(&stats.dust_rules) {
        eprintln!("{rules}");
    }
    eprintln!("{}", ended.line(&stats));
    Ok(ExitCode::from(ended.exit_code()))
}

/// Runs a crawl to completion (or until stopped) on the backend the settings
/// name; returns its counters (this worker's, in the shared mode).
pub(crate) fn run_crawl(
    cfg: Config,
    seeds_path: Option<&std::path::Path>,
    start: daemon::Start,
    visits: daemon::Visits,
) -> Result<stats::Run> {
    let seeds = match seeds_path {
        Some(p) => daemon::read_seeds(p)?,
        None => Vec::new(),
    };
    tracing::info!("{}", crate::config::politeness(&cfg));
    if let Some(hint) = crate::config::one_host_hint(&cfg, &seeds) {
        tracing::warn!("{hint}");
    }
    if cfg.redis.url.is_empty() {
        backend::local::run(cfg, &seeds, start, visits)
    } else if visits != daemon::Visits::Crawl {
        anyhow::bail!(
            "revisits (crawl revisit, --forever) keep their schedule in the single-machine crawl state: \
             run them without --redis"
        )
    } else {
        crate::backend::redis::run(cfg, &seeds, start)
    }
}
