//! `config/crawl.toml`: every setting of the crawl binary and the libraries
//! it wires. Unknown keys are errors, so a typo never silently falls back to
//! a default.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

/// The whole configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub store: StoreConfig,
    pub dedup: simcrawl_dedup::DedupConfig,
    pub clean: simcrawl_clean::CleanConfig,
    pub fetch: simcrawl_fetch::FetchConfig,
    pub crawl: CrawlConfig,
    /// Site-level template learning (see `crate::template`).
    pub template: crate::template::TemplateSettings,
}

/// Where state lives.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// Directory of the embedded store (`index.redb`): dedup tiers, frontier
    /// and checkpoints.
    pub data_dir: PathBuf,
    /// Longest time between two fsyncs of the store during `crawl dedup`.
    pub sync_interval_ms: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            data_dir: PathBuf::from("data"),
            sync_interval_ms: 1000,
        }
    }
}

/// Which links the crawler follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Only the hosts of the seeds.
    Host,
    /// The registrable domains of the seeds (`news.example.com` and
    /// `www.example.com` together).
    Domain,
    /// Anything reachable.
    Any,
}

/// Crawler daemon settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrawlConfig {
    pub out_dir: PathBuf,
    pub scope: Scope,
    /// Regexes a URL must match one of (empty: all).
    pub include: Vec<String>,
    /// Regexes that exclude a URL.
    pub exclude: Vec<String>,
    /// Link depth from the seeds (seeds are depth 0).
    pub max_depth: u32,
    /// Pages fetched at most (0: no limit), counted across resumes.
    pub max_pages: u64,
    /// Follow links marked rel=nofollow (and pages with meta nofollow).
    pub follow_nofollow: bool,
    /// Pages with `<meta name=robots content=noindex>` are not kept nor
    /// indexed (their links are still followed, unless nofollow).
    pub respect_noindex: bool,
    /// Times a page that failed transiently (timeout, connection, 429/5xx,
    /// robots.txt unavailable) goes back to the frontier before its failure
    /// is final.
    pub max_requeues: u32,
    /// Wait before a requeued page is fetched again, doubled at each requeue.
    pub requeue_delay_ms: u64,
    /// Pages fetched at once (the fetcher also limits per host).
    pub concurrency: usize,
    /// Keep the page text in kept.jsonl.
    pub write_text: bool,
    /// Serve Prometheus-format counters on this address (e.g.
    /// "127.0.0.1:9898"); empty: off.
    pub metrics: String,
}

impl Default for CrawlConfig {
    fn default() -> Self {
        CrawlConfig {
            out_dir: PathBuf::from("out"),
            scope: Scope::Host,
            include: Vec::new(),
            exclude: Vec::new(),
            max_depth: 16,
            max_pages: 0,
            follow_nofollow: false,
            respect_noindex: true,
            max_requeues: 3,
            requeue_delay_ms: 60_000,
            concurrency: 64,
            write_text: true,
            metrics: String::new(),
        }
    }
}

impl Config {
    /// Reads `path`, or the defaults when no file is given. A missing file
    /// that was asked for is an error.
    pub fn load(path: Option<&Path>) -> Result<Config> {
        let Some(path) = path else {
            return Ok(Config::default());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        let mut cfg: Config =
            toml::from_str(&text).with_context(|| format!("invalid config file {}", path.display()))?;
        // Relative paths inside the file are relative to the file.
        let base = path.parent().unwrap_or(Path::new("."));
        if let Some(sw) = &cfg.dedup.features.stop_words
            && sw.is_relative()
            && !sw.exists()
        {
            cfg.dedup.features.stop_words = Some(base.join(sw));
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bundled_config_parses_and_matches_defaults_where_documented() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/crawl.toml");
        let cfg = Config::load(Some(&path)).unwrap();
        assert_eq!(cfg.dedup.blocks, 4);
        assert_eq!(cfg.dedup.max_distance, 3);
        assert_eq!(cfg.dedup.title_policy, simcrawl_dedup::TitlePolicy::Confirm);
        assert_eq!(cfg.crawl.scope, Scope::Host);
        assert_eq!(cfg.crawl.max_requeues, CrawlConfig::default().max_requeues);
        assert_eq!(
            cfg.crawl.requeue_delay_ms,
            CrawlConfig::default().requeue_delay_ms
        );
        assert!(cfg.dedup.features.stop_words.unwrap().exists());
    }

    #[test]
    fn unknown_keys_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "[dedup]\nblokcs = 6\n").unwrap();
        let e = format!("{:#}", Config::load(Some(&p)).unwrap_err());
        assert!(e.contains("blokcs") && e.contains("c.toml"), "{e}");
        std::fs::write(&p, "[dedup]\nwindow = \"7 parsecs\"\n").unwrap();
        let e = format!("{:#}", Config::load(Some(&p)).unwrap_err());
        assert!(e.contains("invalid window"), "{e}");
    }
}
