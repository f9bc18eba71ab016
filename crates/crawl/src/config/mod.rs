//! `config/crawl.toml`: every setting of the crawl binary and the libraries
//! it wires. Unknown keys are errors, so a typo never silently falls back to
//! a default.

mod suggest;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use suggest::suggestion;

/// The whole configuration file.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub store: StoreConfig,
    pub dedup: simcrawl_dedup::DedupConfig,
    pub clean: simcrawl_clean::CleanConfig,
    pub fetch: simcrawl_fetch::FetchConfig,
    pub crawl: CrawlConfig,
    /// Site-level template learning (see `crate::template`).
    pub template: crate::template::TemplateSettings,
    /// Many workers sharing one crawl through a Redis server (`--redis`).
    pub redis: RedisSettings,
    /// What a crawl writes besides its JSON lines: the WARC archive.
    pub output: crate::output::warc::WarcSettings,
    /// When crawled pages are visited again (`crawl revisit`, `--forever`).
    pub revisit: crate::revisit::RevisitSettings,
    /// Whether `clean.convert_chinese` was given (file or `--set`) rather
    /// than left to its default: only a default gives way to the profile an
    /// existing index was built with (`state::open_deduper`).
    #[serde(skip)]
    pub chinese_given: bool,
}

/// `[redis]`: the shared mode, where many `crawl` processes (on one machine
/// or many) share one frontier and one set of dedup tiers in Redis instead
/// of the local redb file (see `crate::backend::redis::frontier`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisSettings {
    /// `redis://[user:password@]HOST:PORT/DB`; empty: the single-machine
    /// redb mode. `--redis` overrides it.
    pub url: String,
    /// Key prefix and Redis Cluster hash tag of the crawl's keys: crawls
    /// with different namespaces share a server without seeing each other.
    pub namespace: String,
    /// This process's name among the workers: its outputs go to
    /// `OUT_DIR/<worker_id>/`. Empty: `HOSTNAME-PID`. `--worker-id`
    /// overrides it. A worker restarted under the same id resumes its
    /// outputs where its last acknowledged batch ended.
    pub worker_id: String,
    /// How long a leased URL stays a worker's before another may take it
    /// back (a live worker renews its leases every third of this): the
    /// longest a dead worker's URLs wait.
    pub lease_ms: u64,
    /// Where the dedup tiers live: `redis` keeps them in Redis (workers
    /// hold nothing), `replicated` keeps a copy in every worker's memory
    /// and uses Redis to order their writes (checks at in-memory speed and
    /// ~50x less server work per page, at the cost of each worker's memory
    /// holding the whole state; see `simcrawl_dedup::ReplicatedStore`).
    pub tiers: SharedTiersKind,
}

/// `[redis] tiers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SharedTiersKind {
    /// `simcrawl_dedup::RedisStore`.
    Redis,
    /// `simcrawl_dedup::ReplicatedStore`.
    Replicated,
}

impl Default for RedisSettings {
    fn default() -> Self {
        RedisSettings {
            url: String::new(),
            namespace: "simcrawl".to_string(),
            worker_id: String::new(),
            lease_ms: 60_000,
            tiers: SharedTiersKind::Redis,
        }
    }
}

/// Where state lives.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// Directory of the embedded store (`index.redb` and its block lists'
    /// `index.blocks.redb`): dedup tiers, frontier and checkpoints.
    pub data_dir: PathBuf,
    /// Longest time between two fsyncs of the store during `crawl dedup`.
    pub sync_interval_ms: u64,
    /// redb's page cache in MiB. 64 keeps a crawler's RSS small; a long
    /// crawl whose state outgrows it reads pages back through the kernel
    /// (docs/BENCHMARKS.md, "CPU per page as the crawl grows").
    pub cache_mb: usize,
}

impl StoreConfig {
    /// The redb options these settings ask for, with `sync_interval`.
    pub fn redb_options(
        &self,
        sync_interval: std::time::Duration,
    ) -> anyhow::Result<simcrawl_dedup::RedbOptions> {
        anyhow::ensure!(
            (1..=1 << 20).contains(&self.cache_mb),
            "store.cache_mb = {}: must be between 1 and 1048576 (MiB)",
            self.cache_mb
        );
        Ok(simcrawl_dedup::RedbOptions {
            sync_interval,
            cache_bytes: self.cache_mb << 20,
        })
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            data_dir: PathBuf::from("data"),
            sync_interval_ms: 1000,
            cache_mb: 64,
        }
    }
}

/// Which links the crawler follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
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
#[derive(Debug, Clone, Deserialize, Serialize)]
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
    /// One URL's time in the crawl, first attempt to last (requeue waits
    /// and attempts), at most (0: no bound but `max_requeues`): what one
    /// failing page can add to a finite crawl.
    pub retry_budget_ms: u64,
    /// Pages fetched at once (the fetcher also limits per host).
    pub concurrency: usize,
    /// Keep the page text in kept.jsonl.
    pub write_text: bool,
    /// Also write the normalized title and text (`title_normalized`,
    /// `text_normalized`: width folded, lower-cased, traditional Chinese
    /// made simplified, as the tiers compared them) beside the page's own
    /// `title` and `text`, in the crawl's and `crawl dedup`'s kept lines.
    /// Off by default: normalizing is for comparing, the outputs carry the
    /// page as written, and a second copy of every text doubles the file.
    pub write_normalized: bool,
    /// Keep the copy a page declares canonical (`crate::canonical`): a
    /// page naming another URL waits once behind it.
    pub canonical_first: bool,
    /// Serve Prometheus-format counters on this address (e.g.
    /// "127.0.0.1:9898"); empty: off.
    pub metrics: String,
    /// Languages kept (ISO 639-1, e.g. `["zh", "en"]`; empty: all): a page
    /// whose text is clearly in another is not judged (`filtered_lang`).
    pub languages: Vec<String>,
    /// Read the sitemaps a host's robots.txt names (or its /sitemap.xml)
    /// and queue their URLs (`crate::listing`).
    pub sitemaps: bool,
    /// Follow the RSS and Atom feeds pages announce.
    pub feeds: bool,
    /// URLs read from one sitemap or feed at most (the protocol's 50,000).
    pub sitemap_max_urls: usize,
    /// Sitemaps read through this many sitemap indexes at most (a sitemap
    /// a page, a seed or robots.txt names is at 0; the protocol allows one
    /// index level, some sites nest a few): an index that names the next
    /// index forever ends here.
    pub max_listing_depth: u32,
    /// Sitemaps and feeds read per host at most, all nesting levels and
    /// resumes together (and at most `max_pages` of them when that is
    /// set): what one host's listings can cost.
    pub max_listings_per_host: u64,
    /// Duplicate URL spaces: rewrite rules learnt from the verdicts
    /// (`[crawl.dust]`, see `crate::dust`). Last: a table after the values.
    pub dust: crate::dust::DustSettings,
}

/// URLs per sitemap file in the sitemap protocol (sitemaps.org): the
/// default of `crawl.sitemap_max_urls` (here, not in `crate::listing`,
/// which reads the settings: one direction between the two).
pub const SITEMAP_MAX_URLS: usize = 50_000;

/// The listing bounds of a crawl's settings. Here, not in
/// `crate::listing`, which the settings name: one direction between them.
impl crate::listing::Bounds {
    pub fn of(c: &CrawlConfig) -> crate::listing::Bounds {
        crate::listing::Bounds::new(c.max_listing_depth, c.max_listings_per_host, c.max_pages)
    }
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
            retry_budget_ms: 120_000,
            concurrency: 64,
            write_text: true,
            write_normalized: false,
            canonical_first: true,
            metrics: String::new(),
            languages: Vec::new(),
            sitemaps: true,
            feeds: true,
            sitemap_max_urls: SITEMAP_MAX_URLS,
            max_listing_depth: 3,
            max_listings_per_host: 1_000,
            dust: crate::dust::DustSettings::default(),
        }
    }
}

/// The commented default settings file (`config/crawl.toml`), printed by
/// `crawl config --default`.
pub const DEFAULT_FILE: &str = include_str!("../../default-config.toml");

/// Where an effective setting came from; later ones win.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// The built-in default.
    Default,
    /// The `--config` file.
    File,
    /// A `--set KEY=VALUE`.
    Set,
    /// A dedicated flag (`--out`, `--max-pages`, ...).
    Flag,
}

impl Source {
    /// How `crawl config` names it.
    pub fn name(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::File => "file",
            Source::Set => "--set",
            Source::Flag => "flag",
        }
    }
}

/// One `--set KEY=VALUE`: a dotted key of the settings file and its value,
/// typed when it is resolved against the key (see [`Config::load_with`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// `table.key`, as in the file (`fetch.per_host_delay_ms`).
    pub key: String,
    /// The text after `=`.
    pub value: String,
}

impl std::str::FromStr for Setting {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Setting, String> {
        let (key, value) = s
            .split_once('=')
            .ok_or_else(|| format!("expected KEY=VALUE (e.g. fetch.per_host_delay_ms=0), got `{s}`"))?;
        let key = key.trim();
        if key.is_empty() || key.split('.').any(|part| part.trim().is_empty()) {
            return Err(format!(
                "`{key}` is not a dotted key: expected TABLE.KEY (e.g. crawl.scope=domain)"
            ));
        }
        Ok(Setting {
            key: key.to_string(),
            value: value.trim().to_string(),
        })
    }
}

impl Setting {
    /// The value as TOML: an integer, float, boolean or array when it reads
    /// as one, otherwise a string; always a string where the setting is a
    /// string (`--set crawl.metrics=9898` is not a number).
    fn typed(&self, default: Option<&toml::Value>) -> toml::Value {
        if matches!(default, Some(toml::Value::String(_))) {
            return toml::Value::String(self.value.clone());
        }
        toml::from_str::<toml::Table>(&format!("v = {}", self.value))
            .ok()
            .filter(|t| t.len() == 1)
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(self.value.clone()))
    }
}

/// The settings in force and, per dotted key, where each value came from.
#[derive(Debug, Clone)]
pub struct Effective {
    /// The settings.
    pub config: Config,
    sources: BTreeMap<String, Source>,
}

fn lookup<'t>(table: &'t toml::Table, key: &str) -> Option<&'t toml::Value> {
    let mut parts = key.split('.');
    let mut v = table.get(parts.next()?)?;
    for p in parts {
        v = v.as_table()?.get(p)?;
    }
    Some(v)
}

/// Sets `key` in `table`, creating the tables on its path.
fn insert(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<()> {
    let parts: Vec<&str> = key.split('.').collect();
    let (last, path) = parts.split_last().context("empty key")?;
    let mut t = table;
    for (i, p) in path.iter().enumerate() {
        let entry = t
            .entry((*p).to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = entry.as_table_mut().with_context(|| {
            format!(
                "`{}` is a setting, not a table: `{key}` cannot be set",
                parts[..=i].join(".")
            )
        })?;
    }
    t.insert((*last).to_string(), value);
    Ok(())
}

fn type_name(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a number",
        toml::Value::Boolean(_) => "true or false",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "an array (e.g. [\"a\", \"b\"])",
        toml::Value::Table(_) => "a table",
    }
}

fn defaults_table() -> Result<toml::Table> {
    match toml::Value::try_from(Config::default()).context("cannot serialize the default settings")? {
        toml::Value::Table(t) => Ok(t),
        _ => anyhow::bail!("the default settings are not a table"),
    }
}

impl Config {
    /// Reads `path`, or the defaults when no file is given. A missing file
    /// that was asked for is an error.
    #[cfg(test)]
    pub fn load(path: Option<&Path>) -> Result<Config> {
        Ok(Config::load_with(path, &[])?.config)
    }

    /// Defaults, then the file at `path`, then each `--set` in order: the
    /// precedence `crawl` documents (flags come last, through
    /// [`Effective::flag`]). Each setting is checked on its own first, so a
    /// wrong key or value is reported with the key, the expected type and
    /// the default, not as an error of the merged whole.
    pub fn load_with(path: Option<&Path>, sets: &[Setting]) -> Result<Effective> {
        let mut merged = toml::Table::new();
        if let Some(path) = path {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read config file {}", path.display()))?;
            merged =
                toml::from_str(&text).with_context(|| format!("invalid config file {}", path.display()))?;
            // Parsed as settings too: toml's errors point at the line; a
            // mistyped key or value gets a suggestion.
            if let Err(e) = toml::from_str::<Config>(&text) {
                let e = e.to_string();
                let line = e
                    .split("at line ")
                    .nth(1)
                    .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                    .filter(|l| !l.is_empty())
                    .map(|l| format!(", line {l}"))
                    .unwrap_or_default();
                match suggestion(&e, &merged) {
                    Some(hint) => anyhow::bail!("invalid config file {}{line}: {hint}", path.display()),
                    None => anyhow::bail!("invalid config file {}: {e}", path.display()),
                }
            }
        }
        let file = merged.clone();
        let defaults = defaults_table()?;
        for s in sets {
            let parts: Vec<&str> = s.key.split('.').collect();
            for i in 1..parts.len() {
                let prefix = parts[..i].join(".");
                if lookup(&defaults, &prefix).is_some_and(|v| !v.is_table()) {
                    anyhow::bail!(
                        "--set {}={}: `{prefix}` is a setting, not a table (try --set {prefix}=VALUE)",
                        s.key,
                        s.value
                    );
                }
            }
            let default = lookup(&defaults, &s.key);
            let value = s.typed(default);
            let mut alone = toml::Table::new();
            insert(&mut alone, &s.key, value.clone())
                .with_context(|| format!("--set {}={}", s.key, s.value))?;
            let alone_copy = alone.clone();
            if let Err(e) = toml::Value::Table(alone).try_into::<Config>() {
                // toml appends "in `key`" on a line of its own; the key is named here.
                let e = e.to_string();
                if let Some(hint) = suggestion(&e, &alone_copy) {
                    anyhow::bail!("--set {}={}: {hint}", s.key, s.value);
                }
                let e = e.lines().next().unwrap_or_default();
                let expected = match default {
                    Some(d) => format!(" (`{}` takes {}; default: {d})", s.key, type_name(d)),
                    None => String::new(),
                };
                anyhow::bail!("--set {}={}: {e}{expected}", s.key, s.value);
            }
            insert(&mut merged, &s.key, value).with_context(|| format!("--set {}={}", s.key, s.value))?;
        }
        let mut config: Config = toml::Value::Table(merged)
            .try_into()
            .context("invalid settings (config file and --set together)")?;
        config.check()?;
        if let Some(path) = path {
            // Relative paths inside the file are relative to the file.
            let base = path.parent().unwrap_or(Path::new("."));
            if let Some(sw) = &config.dedup.features.stop_words
                && sw.is_relative()
                && !sw.exists()
                && lookup(&file, "dedup.features.stop_words").is_some()
            {
                config.dedup.features.stop_words = Some(base.join(sw));
            }
        }
        let mut sources = BTreeMap::new();
        let set_keys: BTreeSet<&str> = sets.iter().map(|s| s.key.as_str()).collect();
        let effective = shown(&config)?;
        let mut leaves = Vec::new();
        leaf_keys(&effective, "", &mut leaves);
        for key in leaves {
            // A setting given under its former name is the same setting.
            let names = [Some(key.as_str()), former_name(&key)];
            let names = names.iter().flatten();
            let source = if names.clone().any(|n| set_keys.contains(n)) {
                Source::Set
            } else if names.clone().any(|n| lookup(&file, n).is_some()) {
                Source::File
            } else {
                Source::Default
            };
            sources.insert(key, source);
        }
        config.chinese_given = sources
            .get("clean.convert_chinese")
            .is_some_and(|s| *s != Source::Default);
        Ok(Effective { config, sources })
    }
}

impl Config {
    /// The ranges the settings' types cannot say (`dedup.min_similarity`
    /// between 0 and 1...), checked when the settings are read: `crawl
    /// config` refuses what the crawl would refuse, and both name the
    /// setting in full.
    pub fn check(&self) -> Result<()> {
        if let Err(e) = self.dedup.check() {
            let msg = match &e {
                simcrawl_dedup::Error::Config(m) => m.clone(),
                other => other.to_string(),
            };
            // "min_similarity 3 is not between 0 and 1" (the library's
            // words) as the crawl's: the full name, `= value: must be ...`.
            let mut words = msg.splitn(3, ' ');
            let (name, value, rest) = (
                words.next().unwrap_or_default(),
                words.next().unwrap_or_default(),
                words.next().unwrap_or_default(),
            );
            if let Some(r) = msg.strip_prefix("bands ") {
                // "bands 100 x band_rows 4 must use between 1 and 128 sketch bins"
                anyhow::bail!(
                    "invalid setting: dedup.bands {}",
                    r.replace("band_rows", "dedup.band_rows")
                );
            }
            const RANGED: [&str; 5] = [
                "bits",
                "max_distance",
                "min_similarity",
                "title_min_similarity",
                "sketch_bits",
            ];
            if RANGED.contains(&name) {
                let rest = match (rest.strip_prefix("is not "), rest.strip_prefix("is above ")) {
                    (Some(r), _) => format!("must be {r}"),
                    (_, Some(r)) => format!("must be at most {r}"),
                    _ => rest.to_string(),
                };
                anyhow::bail!("invalid setting: dedup.{name} = {value}: {rest}");
            }
            anyhow::bail!("invalid [dedup] settings: {msg}");
        }
        self.store.redb_options(std::time::Duration::MAX)?;
        Ok(())
    }
}

/// The politeness in force, for the log at start.
pub fn politeness(cfg: &Config) -> String {
    let f = &cfg.fetch;
    format!(
        "politeness: a request starts at most every {} ms per host (fetch.per_host_delay_ms; robots.txt Crawl-delay can raise it), {} at once per host (fetch.per_host_concurrency), {} at once in all (fetch.concurrency); {} pages in flight (crawl.concurrency)",
        f.per_host_delay_ms, f.per_host_concurrency, f.concurrency, cfg.crawl.concurrency
    )
}

/// A hint when every seed is on one host: the per-host delay then bounds
/// the whole crawl, which surprises users crawling their own site.
pub fn one_host_hint(cfg: &Config, seeds: &[url::Url]) -> Option<String> {
    let hosts: BTreeSet<(Option<&str>, Option<u16>)> = seeds
        .iter()
        .map(|u| (u.host_str(), u.port_or_known_default()))
        .collect();
    if hosts.len() != 1 || cfg.crawl.scope == Scope::Any {
        return None;
    }
    let delay = cfg.fetch.per_host_delay_ms;
    if delay == 0 {
        return None;
    }
    let rate = 1000.0 / delay as f64;
    Some(format!(
        "1 host: at most {rate:.0} pages/s with fetch.per_host_delay_ms={delay}; for a site of your own, e.g. --set fetch.per_host_delay_ms=0 --set fetch.per_host_concurrency=16"
    ))
}

/// The seeds' hosts that are, or resolve to, private addresses: a crawl
/// seeded inside a private network may fetch its own hosts, while links
/// from them to other private hosts stay refused
/// (`fetch.private_addresses`).
pub fn private_seed_hosts(cfg: &Config, seeds: &[url::Url]) -> Vec<String> {
    use simcrawl_fetch::address::is_private;
    use std::net::ToSocketAddrs;
    let mut out = BTreeSet::new();
    for seed in seeds {
        let Some(host) = seed.host_str() else { continue };
        let private = match seed.host() {
            Some(url::Host::Ipv4(ip)) => is_private(ip.into()),
            Some(url::Host::Ipv6(ip)) => is_private(ip.into()),
            _ => match cfg.fetch.resolve.get(&host.to_ascii_lowercase()) {
                Some(ips) => ips.iter().any(|ip| is_private(*ip)),
                None => (host, 0)
                    .to_socket_addrs()
                    .map(|mut addrs| addrs.any(|a| is_private(a.ip())))
                    .unwrap_or(false),
            },
        };
        if private {
            out.insert(host.to_string());
        }
    }
    out.into_iter().collect()
}

/// Settings whose serialized form keeps a former name (the crawl stores a
/// digest of the serialized `[clean]` settings, which must not change for
/// the same settings: `simcrawl_clean::CleanConfig`): (former, today's).
/// Both are accepted in a file and by `--set`; `crawl config` prints
/// today's.
const RENAMED: [(&str, &str); 1] = [("clean.chinese_variant", "clean.convert_chinese")];

/// The former name of the setting `key` (today's name), if it had one.
fn former_name(key: &str) -> Option<&'static str> {
    RENAMED.iter().find(|(_, now)| *now == key).map(|(old, _)| *old)
}

/// The settings as a table under today's names: the serialized form with
/// [`RENAMED`] keys renamed and `clean.order`'s steps by their names
/// (`fold_width`, not the serialized `width`). What `crawl config` prints,
/// and the keys it says the source of.
fn shown(config: &Config) -> Result<toml::Table> {
    let mut table = match toml::Value::try_from(config).context("cannot serialize the settings")? {
        toml::Value::Table(t) => t,
        _ => toml::Table::new(),
    };
    for (old, now) in RENAMED {
        let (Some((old_table, old_key)), Some((_, now_key))) = (old.rsplit_once('.'), now.rsplit_once('.'))
        else {
            continue;
        };
        if let Some(toml::Value::Table(t)) = table.get_mut(old_table)
            && let Some(v) = t.remove(old_key)
        {
            t.insert(now_key.to_string(), v);
        }
    }
    if let Some(toml::Value::Table(clean)) = table.get_mut("clean") {
        let order = config
            .clean
            .order
            .iter()
            .map(|s| toml::Value::String(s.to_string()))
            .collect();
        clean.insert("order".to_string(), toml::Value::Array(order));
    }
    Ok(table)
}

/// `table.key`, or `key` at the top level.
fn dotted(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn leaf_keys(table: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in table {
        let key = dotted(prefix, k);
        match v {
            toml::Value::Table(t) => leaf_keys(t, &key, out),
            _ => out.push(key),
        }
    }
}

impl Effective {
    /// Records that a flag set `key` (the caller has set the value).
    pub fn flag(&mut self, key: &str) {
        self.sources.insert(key.to_string(), Source::Flag);
    }

    /// Where the value of `key` came from.
    pub fn source(&self, key: &str) -> Source {
        self.sources.get(key).copied().unwrap_or(Source::Default)
    }

    /// The settings as a TOML file, each value followed by where it came
    /// from, under today's names ([`shown`]). It reads back as the same
    /// settings (`--config` of its output).
    pub fn to_toml(&self) -> Result<String> {
        let table = shown(&self.config)?;
        let mut out = String::from(
            "# Effective simcrawl settings: each value with where it came from\n# (default < file < --set < flag).\n",
        );
        self.render(&table, "", &mut out);
        Ok(out)
    }

    fn render(&self, table: &toml::Table, prefix: &str, out: &mut String) {
        use std::fmt::Write as _;
        for (k, v) in table.iter().filter(|(_, v)| !v.is_table()) {
            let key = dotted(prefix, k);
            let _ = writeln!(out, "{k} = {v}  # {}", self.source(&key).name());
        }
        for (k, v) in table.iter() {
            if let toml::Value::Table(t) = v {
                let key = dotted(prefix, k);
                let _ = writeln!(out, "\n[{key}]");
                self.render(t, &key, out);
            }
        }
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
        assert_eq!(cfg.dedup.features.stop_words, None);
    }

    fn sets(list: &[&str]) -> Vec<Setting> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn serialized(c: &Config) -> toml::Value {
        toml::Value::try_from(c).unwrap()
    }

    #[test]
    fn the_default_file_says_what_the_defaults_are() {
        let from_file: Config = toml::from_str(DEFAULT_FILE).unwrap();
        assert_eq!(serialized(&from_file), serialized(&Config::default()));
    }

    #[test]
    fn precedence_is_default_file_set_flag() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(
            &p,
            "[crawl]\nmax_depth = 3\nmax_pages = 10\nconcurrency = 8\n[fetch]\nper_host_delay_ms = 100\n",
        )
        .unwrap();
        let mut e = Config::load_with(
            Some(&p),
            &sets(&[
                "crawl.max_pages=20",
                "crawl.concurrency=4",
                "crawl.scope=domain",
                "crawl.concurrency=5",
            ]),
        )
        .unwrap();
        // A flag comes last.
        e.config.crawl.concurrency = 2;
        e.flag("crawl.concurrency");
        let c = &e.config;
        assert_eq!(c.crawl.max_depth, 3);
        assert_eq!(e.source("crawl.max_depth"), Source::File);
        assert_eq!(c.crawl.max_pages, 20);
        assert_eq!(e.source("crawl.max_pages"), Source::Set);
        assert_eq!(c.crawl.scope, Scope::Domain);
        assert_eq!(e.source("crawl.scope"), Source::Set);
        assert_eq!(c.crawl.concurrency, 2);
        assert_eq!(e.source("crawl.concurrency"), Source::Flag);
        assert_eq!(c.fetch.per_host_delay_ms, 100);
        assert_eq!(e.source("fetch.per_host_delay_ms"), Source::File);
        assert_eq!(c.fetch.per_host_concurrency, 2);
        assert_eq!(e.source("fetch.per_host_concurrency"), Source::Default);
        // The last of two --set of one key wins.
        let e = Config::load_with(None, &sets(&["crawl.concurrency=4", "crawl.concurrency=5"])).unwrap();
        assert_eq!(e.config.crawl.concurrency, 5);
    }

    #[test]
    fn set_values_are_typed_by_their_setting() {
        let e = Config::load_with(
            None,
            &sets(&[
                "crawl.metrics=9898",
                "crawl.include=[\"^https?://a\\\\.test/\", \"b\"]",
                "dedup.min_similarity=0.8",
                "crawl.follow_nofollow=true",
                "dedup.window=7d",
                "fetch.user_agent=my bot/1.0 (+https://a.test/bot)",
                "dedup.features.stop_words=/tmp/words.txt",
            ]),
        )
        .unwrap();
        let c = &e.config;
        assert_eq!(c.crawl.metrics, "9898");
        assert_eq!(
            c.crawl.include,
            vec!["^https?://a\\.test/".to_string(), "b".to_string()]
        );
        assert!((c.dedup.min_similarity - 0.8).abs() < 1e-9);
        assert!(c.crawl.follow_nofollow);
        assert_eq!(c.fetch.user_agent, "my bot/1.0 (+https://a.test/bot)");
        assert_eq!(
            c.dedup.features.stop_words.as_deref(),
            Some(Path::new("/tmp/words.txt"))
        );
        assert_eq!(e.source("dedup.window"), Source::Set);
    }

    #[test]
    fn every_set_error_names_the_key_and_what_it_takes() {
        let cases: [(&str, &[&str]); 8] = [
            (
                "crawl.scop=x",
                &["unknown setting `crawl.scop`: did you mean `crawl.scope`?"],
            ),
            (
                "crawll.scope=x",
                &["unknown setting `crawll`: did you mean `crawl`?"],
            ),
            (
                "crawl.scope=doman",
                &["`crawl.scope` cannot be \"doman\": did you mean \"domain\"? (host, domain, any)"],
            ),
            (
                "fetch.per_host_delay_ms=abc",
                &["fetch.per_host_delay_ms", "an integer", "default: 250"],
            ),
            (
                "fetch.per_host_delay_ms=-5",
                &["fetch.per_host_delay_ms", "an integer"],
            ),
            (
                "crawl.follow_nofollow=yes",
                &["crawl.follow_nofollow", "true or false", "default: false"],
            ),
            ("crawl.scope.x=1", &["`crawl.scope` is a setting, not a table"]),
            ("crawl=1", &["--set crawl=1", "CrawlConfig"]),
        ];
        for (set, wants) in cases {
            let e = format!("{:#}", Config::load_with(None, &sets(&[set])).unwrap_err());
            for w in wants {
                assert!(e.contains(w), "--set {set}: `{e}` lacks `{w}`");
            }
        }
        for bad in ["fetch.per_host_delay_ms", "=1", "crawl..scope=host", ".x=1"] {
            let e = bad.parse::<Setting>().unwrap_err();
            assert!(e.contains("KEY=VALUE") || e.contains("dotted key"), "{bad}: {e}");
        }
        // A bad file is still reported as the file's error, with its name.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "[crawl]\nscope = \"doman\"\n").unwrap();
        let e = format!(
            "{:#}",
            Config::load_with(Some(&p), &sets(&["crawl.scope=host"])).unwrap_err()
        );
        assert!(e.contains("c.toml") && e.contains("doman"), "{e}");
    }

    #[test]
    fn the_store_cache_is_checked_and_given_to_redb() {
        let mut store = StoreConfig::default();
        let o = store.redb_options(std::time::Duration::from_secs(2)).unwrap();
        assert_eq!(
            (o.cache_bytes, o.sync_interval),
            (64 << 20, std::time::Duration::from_secs(2))
        );
        store.cache_mb = 256;
        assert_eq!(
            store.redb_options(std::time::Duration::MAX).unwrap().cache_bytes,
            256 << 20
        );
        store.cache_mb = 0;
        let e = store
            .redb_options(std::time::Duration::MAX)
            .unwrap_err()
            .to_string();
        assert!(e.contains("store.cache_mb = 0: must be between 1"), "{e}");
    }

    /// `crawl config` prints today's names (the serialized form keeps the
    /// first release's for the stored digest), and a value given under
    /// either name is marked as given.
    #[test]
    fn effective_settings_use_todays_names() {
        let e = Config::load_with(None, &sets(&["clean.convert_chinese=off"])).unwrap();
        let text = e.to_toml().unwrap();
        assert!(text.contains("convert_chinese = \"off\"  # --set"), "{text}");
        assert!(
            text.contains("\"fold_width\", \"nfkc\", \"convert_chinese\""),
            "{text}"
        );
        assert!(
            !text.contains("chinese_variant") && !text.contains("\"width\""),
            "{text}"
        );
        let e = Config::load_with(None, &sets(&["clean.chinese_variant=off"])).unwrap();
        assert!(
            e.to_toml()
                .unwrap()
                .contains("convert_chinese = \"off\"  # --set")
        );
        // Given under its former name is given: an index's recorded profile
        // does not replace it (state::adopt_recorded_defaults).
        assert!(e.config.chinese_given);
        assert!(!Config::load_with(None, &[]).unwrap().config.chinese_given);
    }

    #[test]
    fn effective_settings_read_back_as_the_same_settings() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "[dedup]\nblocks = 6\nwindow = \"12h\"\n").unwrap();
        let e = Config::load_with(
            Some(&p),
            &sets(&["crawl.scope=any", "crawl.include=[\"a\"]", "clean.max_links=7"]),
        )
        .unwrap();
        let text = e.to_toml().unwrap();
        assert!(text.contains("blocks = 6  # file"), "{text}");
        assert!(text.contains("scope = \"any\"  # --set"), "{text}");
        assert!(text.contains("max_distance = 3  # default"), "{text}");
        let out = dir.path().join("effective.toml");
        std::fs::write(&out, &text).unwrap();
        let back = Config::load_with(Some(&out), &[]).unwrap();
        assert_eq!(serialized(&back.config), serialized(&e.config));
    }

    #[test]
    fn private_seeds_allow_their_own_hosts_only() {
        let seeds: Vec<url::Url> = [
            "http://127.0.0.1:8080/",
            "http://[::1]/",
            "http://localhost/",
            "http://intranet.test/",
            "http://8.8.8.8/",
            "http://public.test/",
        ]
        .iter()
        .map(|u| u.parse().unwrap())
        .collect();
        let mut cfg = Config::default();
        cfg.fetch
            .resolve
            .insert("intranet.test".into(), vec!["10.1.2.3".parse().unwrap()]);
        cfg.fetch
            .resolve
            .insert("public.test".into(), vec!["8.8.4.4".parse().unwrap()]);
        assert_eq!(
            private_seed_hosts(&cfg, &seeds),
            vec!["127.0.0.1", "[::1]", "intranet.test", "localhost"]
        );
    }

    #[test]
    fn one_host_seeds_get_a_rate_hint() {
        let one: Vec<url::Url> = ["http://a.test/", "http://a.test/x"]
            .iter()
            .map(|u| u.parse().unwrap())
            .collect();
        let two: Vec<url::Url> = ["http://a.test/", "http://b.test/"]
            .iter()
            .map(|u| u.parse().unwrap())
            .collect();
        let cfg = Config::default();
        let hint = one_host_hint(&cfg, &one).unwrap();
        assert!(
            hint.contains("at most 4 pages/s") && hint.contains("per_host_delay_ms=250"),
            "{hint}"
        );
        assert_eq!(one_host_hint(&cfg, &two), None);
        let mut fast = Config::default();
        fast.fetch.per_host_delay_ms = 0;
        assert_eq!(one_host_hint(&fast, &one), None);
    }
}
