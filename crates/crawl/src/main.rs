//! `crawl`: the simcrawl binary. It parses arguments and wires the
//! libraries: `fetch` (HTTP), `clean` (HTML to text) and `dedup` (the three
//! tiers).

mod batch;
mod bench;
mod config;
mod daemon;
mod eval;
mod frontier;
mod lines;
mod metrics;
mod progress;
mod sinks;
mod state;
mod stats;
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
}

/// Flags shared by every command.
#[derive(Debug, Args, Clone)]
struct Common {
    /// Settings file (default: built-in defaults; see config/crawl.toml).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct CrawlArgs {
    /// Seed URLs: one per line, `#` comments and blank lines allowed.
    #[arg(long)]
    seeds: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
    /// Output directory (kept.jsonl, duplicates.jsonl, errors.jsonl, stats.json).
    #[arg(long)]
    out: Option<PathBuf>,
    /// State directory (index.redb: frontier and dedup tiers).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Stop after fetching this many pages (counted across resumes).
    #[arg(long)]
    max_pages: Option<u64>,
    /// Follow links at most this deep (seeds are depth 0).
    #[arg(long)]
    max_depth: Option<u32>,
    /// Pages fetched at once.
    #[arg(long)]
    concurrency: Option<usize>,
    /// Forget earlier state and outputs and start over.
    #[arg(long)]
    fresh: bool,
    /// Serve Prometheus-format counters at http://ADDR/metrics (e.g. 127.0.0.1:9898).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Deduplicate a JSON-lines corpus: {"url", "title"?, "text" | "html"} per line.
    Dedup {
        /// The corpus.
        #[arg(long)]
        input: PathBuf,
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
        #[arg(long)]
        input: PathBuf,
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
        /// Print up to N lost pages per setting.
        #[arg(long, default_value_t = 10)]
        show: usize,
        #[command(flatten)]
        common: Common,
    },
    /// Print `<16 hex>  <name>` for each file (standard input when none).
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
    /// Crawl a generated local site and report pages/s, peak RSS and CPU per page.
    Bench(bench::BenchArgs),
    /// Serve the generated bench site (used by `crawl bench`).
    #[command(name = "__serve-site", hide = true)]
    ServeSite {
        #[arg(long)]
        pages: usize,
    },
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CRAWL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
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
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Some(Command::Dedup {
            input,
            out,
            data_dir,
            common,
        }) => {
            let cfg = Config::load(common.config.as_deref())?;
            let summary = batch::run(&cfg, &batch::BatchArgs { input, out, data_dir })?;
            eprintln!("{summary}");
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Eval {
            input,
            labels,
            sweep,
            near,
            ambiguous,
            show,
            common,
        }) => {
            let cfg = Config::load(common.config.as_deref())?;
            let report = eval::run(
                &cfg,
                &eval::EvalArgs {
                    input,
                    labels,
                    sweep,
                    near,
                    ambiguous,
                    show,
                },
            )?;
            println!("{report}");
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Fingerprint { files, html, common }) => {
            let cfg = Config::load(common.config.as_deref())?;
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
            let cfg = Config::load(common.config.as_deref())?;
            tools::distance(&cfg, &a, &b, tools::Input::from_html_flag(html), top)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::ServeSite { pages }) => {
            bench::serve_site(pages)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Bench(args)) => {
            bench::bench(args)?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let a = cli.crawl;
            let seeds = a
                .seeds
                .context("nothing to do: give --seeds FILE to crawl, or a subcommand (see --help)")?;
            let mut cfg = Config::load(a.common.config.as_deref())?;
            if let Some(v) = a.out {
                cfg.crawl.out_dir = v;
            }
            if let Some(v) = a.data_dir {
                cfg.store.data_dir = v;
            }
            if let Some(v) = a.max_pages {
                cfg.crawl.max_pages = v;
            }
            if let Some(v) = a.max_depth {
                cfg.crawl.max_depth = v;
            }
            if let Some(v) = a.concurrency {
                cfg.crawl.concurrency = v;
            }
            if let Some(v) = a.metrics {
                cfg.crawl.metrics = v;
            }
            let stats = daemon::run(
                cfg,
                &seeds,
                if a.fresh {
                    daemon::Start::Fresh
                } else {
                    daemon::Start::Resume
                },
            )?;
            eprintln!("{stats}");
            Ok(ExitCode::SUCCESS)
        }
    }
}
