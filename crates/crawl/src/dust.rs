//! Duplicate URL spaces (DUST, Bar-Yossef, Keidar, Schonfeld, "Do Not Crawl
//! in the DUST", WWW 2007): URL rewrite rules learnt from the dedup
//! verdicts, applied to links before they enter the frontier.
//!
//! A server that merges `//` in paths, ignores an unknown query parameter or
//! answers `dir/index.html` for `dir/` opens a whole space of URLs that all
//! name pages the crawl already has. The content tiers drop those pages,
//! but only after fetching them. Here every duplicate verdict is compared
//! with the URL of the kept page it copies ([`crate::rewrite::classify`],
//! the same classification the report prints); when `min_examples` distinct
//! duplicates of one host are explained by the same rewrite ([`Rule`]) and
//! no counter-example was seen, that rule is learnt for the host: its new
//! links are rewritten before the URL tier sees them, so the copies are
//! never fetched, and frontier entries queued before the rule are rewritten
//! when they come up (never fetched either).
//!
//! A counter-example is two kept pages (not duplicates of each other) whose
//! URLs the rule maps to the same URL: e.g. `/list?page=2` kept next to
//! `/list` blocks "drop `page`" for that host for good. Counter-examples
//! are checked against the kept URLs remembered in memory (at most
//! `max_urls` of them; beyond that bound new kept URLs are not remembered,
//! so late counter-examples may be missed). Learnt and blocked rules are
//! stored with the crawl state and survive a resume; the evidence for rules
//! not learnt yet and the remembered kept URLs do not (a resumed crawl
//! gathers them again).
//!
//! A learnt rule can turn out wrong: a counter-example may come only after
//! it was learnt (a page in flight meanwhile). It is then withdrawn, and the
//! URLs it rewrote while it was in force (links mapped to another URL or
//! dropped, frontier entries never fetched) are given back: every rewrite a
//! learnt rule makes is recorded with the rule ([`Rewrites`], in the
//! learners' store, at most `max_recorded` URLs per rule), and the writer puts
//! the recorded URLs back in the frontier, under their own URL, in the
//! transaction that withdraws the rule. Rewrites past the bound are counted
//! (`dust_unrecorded` in stats.json), not recorded.
//!
//! Rules, blocks and records live in a [`LearnStore`]: the local crawl's
//! redb state, or Redis for the workers of a shared crawl, each of which
//! learns from its own verdicts, publishes what it learns with its
//! acknowledgements and takes up the others' ([`Dust::merge`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use simcrawl_dedup::Canonicalizer;
use tracing::{info, warn};
use url::Url;

pub use crate::learn::Restored;
use crate::learn::{LearnError, LearnStore, Map, RULE_BLOCKED, RULE_LEARNT};
use crate::rewrite::{self, Rewrite, Step};

/// `[crawl.dust]`: learning and applying URL rewrite rules.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DustSettings {
    /// Learn rules from the verdicts and apply them (learnt and configured
    /// ones). Off: links are admitted as they are.
    pub enabled: bool,
    /// Distinct duplicate pages of one host a rewrite must explain, with no
    /// counter-example, before it becomes a rule of that host.
    pub min_examples: usize,
    /// Rules applied from the start, as "HOST RULE" ("*" for every host),
    /// e.g. "* collapse_slashes", "shop.example drop_param:sid".
    pub rules: Vec<String>,
    /// Kept URLs remembered to find counter-examples (memory bound: about
    /// 100 bytes each).
    pub max_urls: usize,
    /// URLs recorded per learnt rule among those it rewrote, to be fetched
    /// under their own URL if the rule is withdrawn (store bound: about 100
    /// bytes each). Rewrites past it are only counted.
    pub max_recorded: usize,
}

impl Default for DustSettings {
    fn default() -> Self {
        DustSettings {
            enabled: true,
            min_examples: 3,
            rules: Vec::new(),
            max_urls: 200_000,
            max_recorded: 100_000,
        }
    }
}

/// One URL rewrite, applied to a link of a host that learnt it. The
/// variants are in the order rules are applied.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// `//` runs in the path become `/`.
    CollapseSlashes,
    /// `;` path parameters (session ids) are removed.
    StripPathParams,
    /// A trailing index file (`index.html`) is removed.
    StripIndexFile,
    /// A trailing `/` is removed (not from the root path).
    StripTrailingSlash,
    /// The path is lower-cased.
    LowercasePath,
    /// Query parameter of this name removed.
    DropParam(String),
    /// A leading `www.` is removed from the host.
    StripWww,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::CollapseSlashes => f.write_str("collapse_slashes"),
            Rule::StripPathParams => f.write_str("strip_path_params"),
            Rule::StripIndexFile => f.write_str("strip_index_file"),
            Rule::StripTrailingSlash => f.write_str("strip_trailing_slash"),
            Rule::LowercasePath => f.write_str("lowercase_path"),
            Rule::DropParam(n) => write!(f, "drop_param:{n}"),
            Rule::StripWww => f.write_str("strip_www"),
        }
    }
}

impl FromStr for Rule {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Rule, String> {
        Ok(match s.trim() {
            "collapse_slashes" => Rule::CollapseSlashes,
            "strip_path_params" => Rule::StripPathParams,
            "strip_index_file" => Rule::StripIndexFile,
            "strip_trailing_slash" => Rule::StripTrailingSlash,
            "lowercase_path" => Rule::LowercasePath,
            "strip_www" => Rule::StripWww,
            other => match other.strip_prefix("drop_param:") {
                Some(n) if !n.is_empty() => Rule::DropParam(n.to_string()),
                _ => {
                    return Err(format!(
                        "unknown rule `{other}` (collapse_slashes, strip_path_params, strip_index_file, \
                         strip_trailing_slash, lowercase_path, drop_param:NAME, strip_www)"
                    ));
                }
            },
        })
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Rule, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl Rule {
    /// `url` rewritten, or `None` when the rule does not change it.
    pub fn apply(&self, url: &Url) -> Option<Url> {
        let mut out = url.clone();
        match self {
            Rule::CollapseSlashes => out.set_path(&rewrite::collapse_slashes(url.path())),
            Rule::StripPathParams => out.set_path(&rewrite::strip_path_params(url.path())),
            Rule::StripIndexFile => out.set_path(&rewrite::strip_index_file(url.path())),
            Rule::StripTrailingSlash => {
                let p = url.path().trim_end_matches('/');
                out.set_path(if p.is_empty() { "/" } else { p });
            }
            Rule::LowercasePath => out.set_path(&url.path().to_lowercase()),
            Rule::DropParam(name) => {
                let q = url.query()?;
                // On the raw pairs, so the other parameters keep their
                // bytes (a GBK escape stays as it was).
                let kept: Vec<&str> = q
                    .split('&')
                    .filter(|pair| {
                        let key = pair.split('=').next().unwrap_or("");
                        url::form_urlencoded::parse(key.as_bytes())
                            .next()
                            .is_none_or(|(k, _)| k != name.as_str())
                    })
                    .collect();
                out.set_query((!kept.is_empty()).then(|| kept.join("&")).as_deref());
            }
            Rule::StripWww => {
                let host = url.host_str()?.strip_prefix("www.")?;
                if host.is_empty() || out.set_host(Some(host)).is_err() {
                    return None;
                }
            }
        }
        (out != *url).then_some(out)
    }

    /// The rules that would change `url`: the candidates a kept page can be
    /// a counter-example of.
    fn candidates(url: &Url) -> Vec<Rule> {
        let path = url.path();
        let mut out = Vec::new();
        if path.contains("//") {
            out.push(Rule::CollapseSlashes);
        }
        if path.contains(';') {
            out.push(Rule::StripPathParams);
        }
        if rewrite::strip_index_file(path) != path {
            out.push(Rule::StripIndexFile);
        }
        if path.len() > 1 && path.ends_with('/') {
            out.push(Rule::StripTrailingSlash);
        }
        if path.chars().any(char::is_uppercase) {
            out.push(Rule::LowercasePath);
        }
        out.extend(rewrite::param_names(url).into_iter().map(Rule::DropParam));
        if url.host_str().is_some_and(|h| h.starts_with("www.")) {
            out.push(Rule::StripWww);
        }
        out
    }
}

/// The rules that fold the URL of a copy and the URL of its kept page onto
/// one URL, whichever of the two carries the rewrite (the copy met first
/// may be the one kept: `//a` kept, `/a` its copy; or each carries one:
/// `/a?ref=x` the copy of `//a`). `None` unless the classification of the
/// pair is made only of rewrites a crawler can apply and applying them to
/// both really gives one URL (canonical forms compared).
pub fn rules_for_pair(canon: &Canonicalizer, dup: &Url, kept: &Url) -> Option<BTreeSet<Rule>> {
    let Rewrite::Steps(steps) = rewrite::classify(dup.as_str(), kept.as_str()) else {
        return None;
    };
    let mut rules = BTreeSet::new();
    for s in steps {
        match s {
            Step::DoubleSlash => rules.insert(Rule::CollapseSlashes),
            Step::PathParams => rules.insert(Rule::StripPathParams),
            Step::IndexFile => rules.insert(Rule::StripIndexFile),
            Step::TrailingSlash { .. } => rules.insert(Rule::StripTrailingSlash),
            Step::PathCase => rules.insert(Rule::LowercasePath),
            Step::Www { .. } => rules.insert(Rule::StripWww),
            Step::ParamsAdded(names) | Step::ParamsRemoved(names) => {
                rules.extend(names.into_iter().map(Rule::DropParam));
                true
            }
            _ => return None,
        };
    }
    let fold = |url: &Url| {
        let mut u = url.clone();
        for r in &rules {
            if let Some(v) = r.apply(&u) {
                u = v;
            }
        }
        canonical(canon, &u)
    };
    (fold(dup)? == fold(kept)?).then_some(rules)
}

/// The host a rule belongs to: host and explicit port, as in the URL.
fn host_key(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    Some(match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    })
}

/// The URL tier's canonical form of `url` (`canon` is the tiers'), so that
/// DUST calls two URLs one exactly when the URL tier does.
fn canonical(canon: &Canonicalizer, url: &Url) -> Option<String> {
    canon.from_url(url.clone()).ok().map(|c| c.as_str().to_string())
}

fn digest(canon: &Canonicalizer, url: &Url) -> Option<u64> {
    let c = canon.from_url(url.clone()).ok()?;
    let d = c.digest();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    Some(u64::from_le_bytes(b))
}

/// What the rules say of a URL ([`Dust::fold`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fold {
    /// Fetch it under this URL instead.
    Rewritten(Url),
    /// Its page is known: kept under a URL a rule maps onto this one.
    Known,
}

/// A rule learnt for a host, as stored and as printed in the summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Learnt {
    pub host: String,
    pub rule: Rule,
    /// Distinct duplicate pages it explained when it was learnt.
    pub examples: usize,
}

impl fmt::Display for Learnt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ({} examples)", self.host, self.rule, self.examples)
    }
}

/// What earlier versions stored whole, as one blob ([`STATE_KEY`]);
/// converted to [`Map::DustRules`] entries when loaded.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    learnt: Vec<Learnt>,
    blocked: Vec<(String, Rule)>,
}

/// Name of the [`Stored`] blob of earlier versions.
const STATE_KEY: &str = "crawl:dust";

/// A rule's key in the store: "HOST RULE".
fn rule_key(host: &str, rule: &Rule) -> String {
    format!("{host} {rule}")
}

/// A rule's host and rule, from its key in the store.
fn parse_rule_key(key: &str) -> Option<(String, Rule)> {
    let (host, rule) = key.split_once(' ')?;
    Some((host.to_string(), rule.parse().ok()?))
}

/// Kept URLs of one host, for counter-examples: their digests, and per
/// rule the digest each maps to.
#[derive(Debug, Default)]
struct HostTrack {
    kept: HashSet<u64>,
    /// Image digest -> (rule, digest of the kept URL it came from).
    images: HashMap<u64, Vec<(Rule, u64)>>,
}

/// Fetches in flight (started, not judged yet) whose URL a candidate rule
/// of a host would change, and how many such pages were kept: the probes of
/// [`Dust::admit_fetch`].
#[derive(Debug, Default)]
struct Probe {
    /// Fetches the rule would rewrite.
    in_flight: usize,
    /// Of those, pages kept.
    kept: usize,
    /// Fetches of URLs the rule maps a kept page's URL onto.
    reverse_in_flight: usize,
}

/// A candidate rule stops holding pages back after this many kept pages
/// per `min_examples` among its probes (with no example): on many sites a
/// parameter changes content without a counter-example being seen, and
/// its pages must not be fetched a few at a time for the whole crawl.
const KEPT_PROBES_PER_EXAMPLE: usize = 4;

/// The learner and rewriter of one crawl (see the module documentation).
#[derive(Debug, Default)]
pub struct Dust {
    enabled: bool,
    min_examples: usize,
    max_urls: usize,
    /// Configured rules for every host.
    everywhere: BTreeSet<Rule>,
    /// Configured and learnt rules per host.
    rules: HashMap<String, BTreeSet<Rule>>,
    learnt: Vec<Learnt>,
    /// The keys of `learnt`: a rewrite is recorded only for learnt rules
    /// (configured ones are never withdrawn).
    learnt_keys: HashSet<(String, Rule)>,
    /// Learnt rules withdrawn since the last [`Dust::take_withdrawn`]: the
    /// writer gives back what they rewrote.
    withdrawn: Vec<(String, Rule)>,
    max_recorded: usize,
    blocked: HashSet<(String, Rule)>,
    /// Distinct duplicate URLs (digests) each candidate rule explained.
    evidence: HashMap<(String, Rule), HashSet<u64>>,
    tracks: HashMap<String, HostTrack>,
    tracked: usize,
    probes: HashMap<(String, Rule), Probe>,
    /// Fetches admitted as probes (URL digest): their host and the rules
    /// they test, forward and reverse, until their verdict.
    admitted: HashMap<u64, (String, Vec<Rule>, Vec<Rule>)>,
    /// Learnt or blocked rules changed since the last save.
    dirty: BTreeSet<(String, Rule)>,
    /// The URL tier's canonical forms, which name URLs here.
    canon: Canonicalizer,
    /// Workers of a shared crawl: examples observed since the last
    /// [`Dust::take_examples`] (rule key, URL digest), pooled with the
    /// other workers' ([`Dust::share_examples`]). `None`: one learner.
    shared_examples: Option<Vec<(String, u64)>>,
    /// Workers of a shared crawl: images of this learner's kept URLs under
    /// rules in force (rule key, image digest) since the last
    /// [`Dust::take_images`]: the others fold those URLs as known.
    shared_images: Option<Vec<(String, u64)>>,
}

impl Dust {
    /// The configured rules and, from `store`, those an earlier run of
    /// this crawl (or another worker of a shared one) learnt or blocked. A
    /// configured rule that does not parse is an error naming it. `canon` is
    /// the URL tier's canonicalizer. Rules an earlier version stored as one
    /// blob are converted to entries.
    pub fn load(
        settings: &DustSettings,
        store: Option<&mut dyn LearnStore>,
        canon: Canonicalizer,
    ) -> Result<Dust> {
        let mut d = Dust {
            enabled: settings.enabled,
            min_examples: settings.min_examples.max(1),
            max_urls: settings.max_urls,
            canon,
            max_recorded: settings.max_recorded,
            ..Dust::default()
        };
        for line in &settings.rules {
            let (host, rule) = line
                .trim()
                .split_once(char::is_whitespace)
                .with_context(|| format!("crawl.dust.rules: `{line}` is not \"HOST RULE\""))?;
            let rule: Rule = rule
                .parse()
                .map_err(|e: String| anyhow::anyhow!("crawl.dust.rules: `{line}`: {e}"))?;
            if host.is_empty() {
                bail!("crawl.dust.rules: `{line}` has no host");
            }
            if host == "*" {
                d.everywhere.insert(rule);
            } else {
                d.rules.entry(host.to_ascii_lowercase()).or_default().insert(rule);
            }
        }
        let Some(store) = store else {
            return Ok(d);
        };
        if !d.enabled {
            return Ok(d);
        }
        let stored = match store.get(STATE_KEY) {
            Ok(None) => None,
            Ok(Some(bytes)) => Some(serde_json::from_slice::<Stored>(&bytes).unwrap_or_else(|e| {
                warn!("the saved URL rewrite rules cannot be read ({e}); learning starts over");
                Stored::default()
            })),
            Err(e) => {
                warn!("the saved URL rewrite rules cannot be read ({e:#}); learning starts over");
                None
            }
        };
        if let Some(stored) = stored {
            for l in &stored.learnt {
                let v = format!("{RULE_LEARNT} {}", l.examples);
                store.put_entry(Map::DustRules, &rule_key(&l.host, &l.rule), v.as_bytes())?;
            }
            for (host, rule) in &stored.blocked {
                store.put_entry(Map::DustRules, &rule_key(host, rule), RULE_BLOCKED.as_bytes())?;
            }
            store.remove(STATE_KEY)?;
        }
        let entries = store
            .entries(Map::DustRules)
            .context("cannot read the saved URL rewrite rules")?;
        d.merge(&entries);
        Ok(d)
    }

    /// Takes up the rules of `entries` ([`Map::DustRules`], read from the
    /// store: saved by an earlier run, or published by other workers): a
    /// learnt rule not blocked here is applied, a blocked one is blocked
    /// (and withdrawn if learnt here, without giving back what it rewrote:
    /// whoever blocked it did). Nothing of it is saved again.
    pub fn merge(&mut self, entries: &[(String, Vec<u8>)]) {
        if !self.enabled {
            return;
        }
        for (key, value) in entries {
            let Some((host, rule)) = parse_rule_key(key) else {
                continue;
            };
            let value = String::from_utf8_lossy(value);
            let k = (host, rule);
            if value == RULE_BLOCKED {
                if self.blocked.contains(&k) {
                    continue;
                }
                if self.learnt_keys.remove(&k) {
                    info!(host = %k.0, rule = %k.1, "URL rewrite rule (DUST) withdrawn elsewhere (another worker)");
                    self.learnt.retain(|l| !(l.host == k.0 && l.rule == k.1));
                    if let Some(set) = self.rules.get_mut(&k.0) {
                        set.remove(&k.1);
                    }
                }
                self.evidence.remove(&k);
                self.blocked.insert(k);
            } else if let Some(n) = value.strip_prefix(RULE_LEARNT) {
                if self.blocked.contains(&k) || self.learnt_keys.contains(&k) {
                    continue;
                }
                let examples = n.trim().parse().unwrap_or(0);
                info!(host = %k.0, rule = %k.1, "URL rewrite rule (DUST) from the earlier run (or another worker of a shared crawl)");
                self.evidence.remove(&k);
                self.rules.entry(k.0.clone()).or_default().insert(k.1.clone());
                self.learnt_keys.insert(k.clone());
                self.share_images_of(&k.0, &k.1);
                self.learnt.push(Learnt {
                    host: k.0,
                    rule: k.1,
                    examples,
                });
            }
        }
    }

    /// `url` with the rules of its host applied, or `None` when they leave it
    /// as it is (or DUST is off). The crawl folds ([`Dust::fold_by`]); the
    /// tests read the rewrite alone.
    #[cfg(test)]
    pub fn rewrite(&self, url: &Url) -> Option<Url> {
        self.rewrite_by(url).map(|(u, _)| u)
    }

    /// [`Dust::rewrite`], and the rules that changed the URL.
    fn rewrite_by(&self, url: &Url) -> Option<(Url, Vec<Rule>)> {
        if !self.enabled {
            return None;
        }
        let host = host_key(url)?;
        let own = self
            .rules
            .get(&host)
            .or_else(|| url.host_str().and_then(|h| self.rules.get(h)));
        if self.everywhere.is_empty() && own.is_none() {
            return None;
        }
        let mut all: BTreeSet<&Rule> = self.everywhere.iter().collect();
        all.extend(own.into_iter().flatten());
        let mut u = url.clone();
        let mut by = Vec::new();
        for r in all {
            if let Some(v) = r.apply(&u) {
                u = v;
                by.push(r.clone());
            }
        }
        (!by.is_empty()).then_some((u, by))
    }

    /// What the rules say of a link or frontier entry: fetch it under
    /// another URL, or not at all because a rule maps the URL of a kept page
    /// onto it (the copy met first was kept under the rewritten form, e.g.
    /// `//a` kept, then `/a` found); `None`: as it is.
    pub fn fold(&self, url: &Url) -> Option<Fold> {
        self.fold_by(url).map(|(f, _)| f)
    }

    /// [`Dust::fold`], and the learnt rules that made it (host and rule),
    /// under which the caller records `url` ([`Rewrites::record`]) so that
    /// it is fetched after all if one of them is withdrawn. Configured rules
    /// are not named: they are never withdrawn.
    pub fn fold_by(&self, url: &Url) -> Option<(Fold, Vec<(String, Rule)>)> {
        let rewritten = self.rewrite_by(url);
        let target = rewritten.as_ref().map_or(url, |(u, _)| u);
        let mut by: Vec<Rule> = rewritten.as_ref().map(|(_, by)| by.clone()).unwrap_or_default();
        let known = self.image_of_kept_by(target);
        let fold = if known.is_empty() {
            Fold::Rewritten(rewritten?.0)
        } else {
            by.extend(known);
            Fold::Known
        };
        let host = host_key(url).unwrap_or_default();
        let mut keys: Vec<(String, Rule)> = Vec::new();
        for r in by {
            let key = (host.clone(), r);
            if self.learnt_keys.contains(&key) && !keys.contains(&key) {
                keys.push(key);
            }
        }
        Some((fold, keys))
    }

    /// The rules in force for `url`'s host that map a remembered kept URL
    /// (not `url` itself) onto `url`; empty when none does.
    fn image_of_kept_by(&self, url: &Url) -> Vec<Rule> {
        if !self.enabled {
            return Vec::new();
        }
        let Some(host) = host_key(url) else {
            return Vec::new();
        };
        let own = self.rules.get(&host);
        if self.everywhere.is_empty() && own.is_none() {
            return Vec::new();
        }
        let Some(me) = digest(&self.canon, url) else {
            return Vec::new();
        };
        let mut by: Vec<Rule> = Vec::new();
        for (r, origin) in self
            .tracks
            .get(&host)
            .and_then(|t| t.images.get(&me))
            .into_iter()
            .flatten()
        {
            if *origin != me
                && (self.everywhere.contains(r) || own.is_some_and(|s| s.contains(r)))
                && !by.contains(r)
            {
                by.push(r.clone());
            }
        }
        by
    }

    /// Whether the page at `url` may be fetched now; if so (or when
    /// `force`), its fetch is counted as a probe of the candidate rules that
    /// would change its URL, until [`Dust::probe_done`].
    ///
    /// Why: pages are fetched well ahead of their verdicts (they wait to be
    /// parsed and judged), so a burst of links into one duplicate space
    /// would all be fetched before the first verdicts teach the rule. A URL
    /// a candidate rule would change waits while `min_examples` probes of
    /// that rule are in flight or already explained: their verdicts learn
    /// the rule (and the URL is then rewritten instead of fetched) or show
    /// that the rewrite changes content (`min_examples` such pages kept: no
    /// more waiting for it).
    pub fn admit_fetch(&mut self, url: &Url, force: bool) -> bool {
        if !self.enabled {
            return true;
        }
        let (Some(host), Some(me)) = (host_key(url), digest(&self.canon, url)) else {
            return true;
        };
        let open = |r: &Rule| {
            !self.everywhere.contains(r)
                && !self.rules.get(&host).is_some_and(|s| s.contains(r))
                && !self.blocked.contains(&(host.clone(), r.clone()))
        };
        let forward: Vec<Rule> = Rule::candidates(url).into_iter().filter(open).collect();
        let mut reverse: Vec<Rule> = Vec::new();
        if let Some(from) = self.tracks.get(&host).and_then(|t| t.images.get(&me)) {
            for (r, origin) in from {
                if *origin != me && open(r) && !forward.contains(r) && !reverse.contains(r) {
                    reverse.push(r.clone());
                }
            }
        }
        if !force {
            let busy = |r: &Rule, reverse: bool| {
                let key = (host.clone(), r.clone());
                let p = self.probes.get(&key);
                let explained = self.evidence.get(&key).map_or(0, HashSet::len);
                if reverse {
                    // Its verdict teaches either way: a copy is an example,
                    // a kept page a counter-example.
                    p.map_or(0, |p| p.reverse_in_flight) + explained >= self.min_examples
                } else {
                    // A kept page is no counter-example (its image may not
                    // be known yet), so after enough of them stop waiting.
                    p.map_or(0, |p| p.kept) < self.min_examples * KEPT_PROBES_PER_EXAMPLE
                        && p.map_or(0, |p| p.in_flight) + explained >= self.min_examples
                }
            };
            if forward.iter().any(|r| busy(r, false)) || reverse.iter().any(|r| busy(r, true)) {
                return false;
            }
        }
        for r in &forward {
            self.probes
                .entry((host.clone(), r.clone()))
                .or_default()
                .in_flight += 1;
        }
        for r in &reverse {
            self.probes
                .entry((host.clone(), r.clone()))
                .or_default()
                .reverse_in_flight += 1;
        }
        if !forward.is_empty() || !reverse.is_empty() {
            self.admitted.insert(me, (host, forward, reverse));
        }
        true
    }

    /// The fetch of `url` (admitted by [`Dust::admit_fetch`]) is over and
    /// judged: `kept` when its page was kept.
    pub fn probe_done(&mut self, url: &Url, kept: bool) {
        let Some(me) = digest(&self.canon, url) else {
            return;
        };
        let Some((host, forward, reverse)) = self.admitted.remove(&me) else {
            return;
        };
        for r in forward {
            if let Some(p) = self.probes.get_mut(&(host.clone(), r)) {
                p.in_flight = p.in_flight.saturating_sub(1);
                p.kept += usize::from(kept);
            }
        }
        for r in reverse {
            if let Some(p) = self.probes.get_mut(&(host.clone(), r)) {
                p.reverse_in_flight = p.reverse_in_flight.saturating_sub(1);
            }
        }
    }

    /// A page at `url` was kept: remembered, and checked as a
    /// counter-example of every rule that would merge it with another kept
    /// page.
    pub fn observe_kept(&mut self, url: &Url) {
        if !self.enabled {
            return;
        }
        let (Some(host), Some(me)) = (host_key(url), digest(&self.canon, url)) else {
            return;
        };
        let mut countered: Vec<Rule> = Vec::new();
        let remember = self.tracked < self.max_urls;
        let track = self.tracks.entry(host.clone()).or_default();
        if let Some(from) = track.images.get(&me) {
            countered.extend(from.iter().filter(|(_, o)| *o != me).map(|(r, _)| r.clone()));
        }
        for r in Rule::candidates(url) {
            let Some(image) = r.apply(url).and_then(|u| digest(&self.canon, &u)) else {
                continue;
            };
            let seen = track.kept.contains(&image)
                || track
                    .images
                    .get(&image)
                    .is_some_and(|v| v.iter().any(|(r2, o)| *r2 == r && *o != me));
            if seen {
                countered.push(r.clone());
            }
            if let Some(shared) = &mut self.shared_images
                && self
                    .rules
                    .get(&host)
                    .is_some_and(|in_force| in_force.contains(&r))
            {
                shared.push((rule_key(&host, &r), image));
            }
            if remember {
                track.images.entry(image).or_default().push((r, me));
            }
        }
        if remember && track.kept.insert(me) {
            self.tracked += 1;
        }
        for r in countered {
            self.counter(&host, r, url);
        }
    }

    fn counter(&mut self, host: &str, rule: Rule, url: &Url) {
        let key = (host.to_string(), rule);
        if self.blocked.contains(&key) {
            return;
        }
        self.evidence.remove(&key);
        let (host, rule) = key;
        if self.learnt.iter().any(|l| l.host == host && l.rule == rule) {
            warn!(%host, %rule, counter_example = %url, "URL rewrite rule (DUST) withdrawn: it merges two distinct kept pages");
            self.learnt.retain(|l| !(l.host == host && l.rule == rule));
            if let Some(set) = self.rules.get_mut(&host) {
                set.remove(&rule);
            }
            self.learnt_keys.remove(&(host.clone(), rule.clone()));
            self.withdrawn.push((host.clone(), rule.clone()));
        } else {
            info!(%host, %rule, counter_example = %url, "URL rewrite (DUST) not learnt: it would merge two distinct kept pages");
        }
        self.dirty.insert((host.clone(), rule.clone()));
        self.blocked.insert((host, rule));
    }

    /// The page at `url` was judged a copy of the kept page at `kept`:
    /// evidence for the rewrites between them; a rule with enough distinct
    /// examples and no counter-example is learnt.
    pub fn observe_duplicate(&mut self, url: &Url, kept: &str) {
        if !self.enabled {
            return;
        }
        let Ok(kept) = Url::parse(kept) else { return };
        let (Some(host), Some(me)) = (host_key(url), digest(&self.canon, url)) else {
            return;
        };
        let Some(rules) = rules_for_pair(&self.canon, url, &kept) else {
            return;
        };
        for rule in rules {
            let key = (host.clone(), rule);
            if self.blocked.contains(&key)
                || self.rules.get(&host).is_some_and(|s| s.contains(&key.1))
                || self.everywhere.contains(&key.1)
            {
                continue;
            }
            let ex = self.evidence.entry(key.clone()).or_default();
            if ex.insert(me)
                && let Some(shared) = &mut self.shared_examples
            {
                shared.push((rule_key(&key.0, &key.1), me));
            }
            let examples = ex.len();
            if examples >= self.min_examples {
                self.evidence.remove(&key);
                let (host, rule) = key;
                info!(%host, %rule, examples, example = %url, of = %kept,
                    "URL rewrite rule (DUST) learnt: links of this host are rewritten before the frontier");
                self.rules.entry(host.clone()).or_default().insert(rule.clone());
                self.learnt_keys.insert((host.clone(), rule.clone()));
                self.dirty.insert((host.clone(), rule.clone()));
                self.share_images_of(&host, &rule);
                self.learnt.push(Learnt { host, rule, examples });
            }
        }
    }

    /// Pools this learner's examples with other learners' (the workers of
    /// a shared crawl). Why: each worker sees only its own verdicts, and
    /// the pages that would teach a rule are spread over all of them; the
    /// reverse probes that hold a duplicate space back in one process
    /// need the kept page's URL, which only the worker that kept it knows.
    /// So three workers each wanting `min_examples` of their own fetched a
    /// whole duplicate section before any of them learnt its rule; pooled,
    /// the rule is learnt when `min_examples` examples exist among all.
    ///
    /// The images of kept URLs under a rule in force are shared too: a
    /// worker folds a URL as a copy of a kept page ([`Fold::Known`]) only
    /// if it knows that page's URL, and the pages of a duplicate space are
    /// kept by all workers.
    pub fn share_examples(&mut self) {
        self.shared_examples.get_or_insert_with(Vec::new);
        self.shared_images.get_or_insert_with(Vec::new);
    }

    /// The images of kept URLs (rule key, image digest) under the rules in
    /// force found since the last call, for the other learners (see
    /// [`Dust::share_examples`]).
    pub fn take_images(&mut self) -> Vec<(String, u64)> {
        self.shared_images
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Takes up images of URLs other learners kept (rule key, image
    /// digest): a URL among them is folded as known once the rule is in
    /// force here. Within the memory bound of `crawl.dust.max_urls`.
    pub fn merge_images(&mut self, images: &[(String, u64)]) {
        if !self.enabled {
            return;
        }
        for (key, image) in images {
            let Some((host, rule)) = parse_rule_key(key) else {
                continue;
            };
            if self.tracked >= self.max_urls {
                return;
            }
            let from = self
                .tracks
                .entry(host)
                .or_default()
                .images
                .entry(*image)
                .or_default();
            if !from.iter().any(|(r, _)| *r == rule) {
                // Origin 0: a page kept elsewhere (never this URL's digest
                // but by a 1 in 2^64 chance).
                from.push((rule, 0));
                self.tracked += 1;
            }
        }
    }

    /// Queues for the other learners the images of this learner's kept
    /// URLs under `rule` of `host`, which just came into force.
    fn share_images_of(&mut self, host: &str, rule: &Rule) {
        let Some(shared) = &mut self.shared_images else {
            return;
        };
        let Some(track) = self.tracks.get(host) else {
            return;
        };
        let key = rule_key(host, rule);
        for (image, from) in &track.images {
            if from.iter().any(|(r, o)| r == rule && *o != 0 && o != image) {
                shared.push((key.clone(), *image));
            }
        }
    }

    /// The examples observed since the last call (rule key as stored,
    /// URL digest), for the other learners (see [`Dust::share_examples`]).
    pub fn take_examples(&mut self) -> Vec<(String, u64)> {
        self.shared_examples
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Examples needed to learn a rule (`crawl.dust.min_examples`).
    pub fn min_examples(&self) -> usize {
        self.min_examples
    }

    /// The rules learnt so far, in the order they were learnt.
    pub fn learnt(&self) -> &[Learnt] {
        &self.learnt
    }

    /// The learnt rules withdrawn since the last call: the URLs they
    /// rewrote are to be given back ([`Rewrites::take`]) in the transaction
    /// that stores their withdrawal.
    pub fn take_withdrawn(&mut self) -> Vec<(String, Rule)> {
        std::mem::take(&mut self.withdrawn)
    }

    /// The learnt rules of `host` in force.
    pub fn learnt_of(&self, host: &str) -> Vec<Rule> {
        self.learnt
            .iter()
            .filter(|l| l.host == host)
            .map(|l| l.rule.clone())
            .collect()
    }

    /// `crawl.dust.max_recorded`: URLs recorded per learnt rule.
    pub fn max_recorded(&self) -> usize {
        self.max_recorded
    }

    /// Whether learnt or blocked rules changed since the last save.
    pub fn changed(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Stores the learnt and blocked rules changed since the last save in
    /// `store` (the writer's checkpoint), one entry each.
    pub fn save_if_changed(&mut self, store: &mut dyn LearnStore) -> Result<(), LearnError> {
        for (host, rule) in std::mem::take(&mut self.dirty) {
            let key = rule_key(&host, &rule);
            let k = (host, rule);
            if self.blocked.contains(&k) {
                store.put_entry(Map::DustRules, &key, RULE_BLOCKED.as_bytes())?;
            } else if let Some(l) = self.learnt.iter().find(|l| l.host == k.0 && l.rule == k.1) {
                let v = format!("{RULE_LEARNT} {}", l.examples);
                store.put_entry(Map::DustRules, &key, v.as_bytes())?;
            }
        }
        Ok(())
    }
}

/// The record of rewrites, on the learners' store of the writer's
/// checkpoint (see the module documentation): what a rule rewrote is
/// recorded in the commit that rewrote it, and given back in the commit
/// that withdraws the rule.
pub struct Rewrites<'s> {
    store: &'s mut dyn LearnStore,
    max_per_rule: u64,
}

impl std::fmt::Debug for Rewrites<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rewrites")
            .field("max_per_rule", &self.max_per_rule)
            .finish_non_exhaustive()
    }
}

impl<'s> Rewrites<'s> {
    /// The record on `store`, with at most `max_per_rule` URLs per rule.
    pub fn new(store: &'s mut dyn LearnStore, max_per_rule: usize) -> Self {
        Rewrites {
            store,
            max_per_rule: u64::try_from(max_per_rule).unwrap_or(u64::MAX),
        }
    }

    /// Records `url` (a link when `!was_queued`, a frontier entry
    /// otherwise, at `depth`) under each rule of `by` ([`Dust::fold_by`]);
    /// `false` when a rule's bound left it unrecorded under that rule.
    pub fn record(
        &mut self,
        by: &[(String, Rule)],
        url: &Url,
        depth: u32,
        was_queued: bool,
    ) -> Result<bool, LearnError> {
        let r = Restored {
            url: url.clone(),
            depth,
            was_queued,
        };
        let mut all = true;
        for (host, rule) in by {
            all &= self.store.record(&rule_key(host, rule), &r, self.max_per_rule)?;
        }
        Ok(all)
    }

    /// Removes and returns the URLs recorded under the `withdrawn` rules,
    /// each once, and forgets them under the other rules of their host
    /// (`others(host)`, the learnt ones still in force): a URL given back
    /// is recorded again if a rule still in force rewrites it. On a store
    /// that gives them back itself (Redis), none.
    pub fn take(
        &mut self,
        withdrawn: &[(String, Rule)],
        others: impl Fn(&str) -> Vec<Rule>,
    ) -> Result<Vec<Restored>, LearnError> {
        let keys: Vec<String> = withdrawn.iter().map(|(h, r)| rule_key(h, r)).collect();
        let mut other_keys: Vec<String> = keys.clone();
        let hosts: BTreeSet<&str> = withdrawn.iter().map(|(h, _)| h.as_str()).collect();
        for host in hosts {
            other_keys.extend(others(host).iter().map(|r| rule_key(host, r)));
        }
        self.store.give_back(&keys, &other_keys)
    }
}

/// The learnt rules as the end-of-crawl summary prints them.
pub fn summary(learnt: &[String]) -> Option<String> {
    if learnt.is_empty() {
        return None;
    }
    let mut s = String::from("URL rewrite rules learnt (DUST, [crawl.dust]):");
    for l in learnt {
        s.push_str("\n  ");
        s.push_str(l);
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::backend::local::learn::{RedbLearn, with_store};

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn dust(min: usize) -> Dust {
        Dust::load(
            &DustSettings {
                min_examples: min,
                ..DustSettings::default()
            },
            None,
            Canonicalizer::default(),
        )
        .unwrap()
    }

    #[test]
    fn rules_apply_and_parse_back() {
        let cases = [
            (
                Rule::CollapseSlashes,
                "http://a.test//x//y",
                Some("http://a.test/x/y"),
            ),
            (
                Rule::StripPathParams,
                "http://a.test/a;jsessionid=1/b",
                Some("http://a.test/a/b"),
            ),
            (
                Rule::StripIndexFile,
                "http://a.test/d/index.html",
                Some("http://a.test/d/"),
            ),
            (
                Rule::StripTrailingSlash,
                "http://a.test/d/",
                Some("http://a.test/d"),
            ),
            (Rule::StripTrailingSlash, "http://a.test/", None),
            (Rule::LowercasePath, "http://a.test/A", Some("http://a.test/a")),
            (
                Rule::DropParam("sid".into()),
                "http://a.test/p?sid=1&id=%B0%A1",
                Some("http://a.test/p?id=%B0%A1"),
            ),
            (
                Rule::DropParam("sid".into()),
                "http://a.test/p?sid=1",
                Some("http://a.test/p"),
            ),
            (Rule::DropParam("sid".into()), "http://a.test/p?id=2", None),
            (Rule::StripWww, "http://www.a.test/p", Some("http://a.test/p")),
        ];
        for (rule, from, want) in cases {
            assert_eq!(
                rule.apply(&u(from)).map(|x| x.to_string()).as_deref(),
                want,
                "{rule} {from}"
            );
            assert_eq!(rule.to_string().parse::<Rule>().unwrap(), rule);
        }
        assert!("drop_param:".parse::<Rule>().is_err());
        assert!("nonsense".parse::<Rule>().is_err());
    }

    #[test]
    fn pairs_give_rules_only_when_they_explain_the_copy() {
        let r = |d: &str, k: &str| {
            rules_for_pair(&Canonicalizer::default(), &u(d), &u(k)).map(|s| s.into_iter().collect::<Vec<_>>())
        };
        assert_eq!(
            r("http://a.test//s/p", "http://a.test/s/p"),
            Some(vec![Rule::CollapseSlashes])
        );
        assert_eq!(
            r("http://a.test/p?ref=x&id=1", "http://a.test/p?id=1"),
            Some(vec![Rule::DropParam("ref".into())])
        );
        assert_eq!(
            r("http://a.test//d/index.html", "http://a.test/d/"),
            Some(vec![Rule::CollapseSlashes, Rule::StripIndexFile])
        );
        // The kept page in the rewritten form: the same rule folds both.
        assert_eq!(
            r("http://a.test/s/p", "http://a.test//s/p"),
            Some(vec![Rule::CollapseSlashes])
        );
        assert_eq!(
            r("http://a.test/x", "http://a.test/x/"),
            Some(vec![Rule::StripTrailingSlash])
        );
        // Each URL carries one rewrite.
        assert_eq!(
            r("http://a.test/s/p?ref=x", "http://a.test//s/p"),
            Some(vec![Rule::CollapseSlashes, Rule::DropParam("ref".into())])
        );
        // Not rewrites a crawler can apply: no rule.
        assert_eq!(r("http://a.test/p?page=2", "http://a.test/p?page=1"), None);
        assert_eq!(r("http://a.test/q", "http://a.test/p"), None);
        assert_eq!(r("http://b.test/p", "http://a.test/p"), None);
    }

    #[test]
    fn a_rule_is_learnt_after_enough_distinct_examples() {
        let mut d = dust(3);
        for i in 0..3 {
            d.observe_kept(&u(&format!("http://a.test/s/{i}")));
        }
        let link = u("http://a.test//s/9");
        assert_eq!(d.rewrite(&link), None);
        d.observe_duplicate(&u("http://a.test//s/0"), "http://a.test/s/0");
        d.observe_duplicate(&u("http://a.test//s/0"), "http://a.test/s/0");
        d.observe_duplicate(&u("http://a.test//s/1"), "http://a.test/s/1");
        assert_eq!(d.rewrite(&link), None, "two distinct examples are not enough");
        d.observe_duplicate(&u("http://a.test//s/2"), "http://a.test/s/2");
        assert_eq!(d.rewrite(&link), Some(u("http://a.test/s/9")));
        // Only on that host.
        assert_eq!(d.rewrite(&u("http://b.test//s/9")), None);
        assert_eq!(d.learnt().len(), 1);
        assert!(d.changed());
    }

    /// Two workers of a shared crawl: each keeps half of a `//` section,
    /// the other half's copies are met by the other worker. Pooled, their
    /// examples learn the rule (neither has enough alone), and the images
    /// of each one's kept URLs, taken up by the other, fold every copy as
    /// known; without the images a worker folds only the copies of the
    /// pages it kept itself.
    #[test]
    fn shared_learners_pool_examples_and_fold_copies_of_pages_kept_elsewhere() {
        let mut a = dust(3);
        let mut b = dust(3);
        a.share_examples();
        b.share_examples();
        for i in 0..6 {
            let kept = u(&format!("http://a.test//s/p{i}"));
            if i % 2 == 0 {
                a.observe_kept(&kept)
            } else {
                b.observe_kept(&kept)
            }
        }
        // Two examples seen by a, one by b: nobody learns alone.
        a.observe_duplicate(&u("http://a.test/s/p0"), "http://a.test//s/p0");
        a.observe_duplicate(&u("http://a.test/s/p2"), "http://a.test//s/p2");
        b.observe_duplicate(&u("http://a.test/s/p1"), "http://a.test//s/p1");
        assert!(a.learnt().is_empty() && b.learnt().is_empty());
        let mut pool: HashMap<String, HashSet<u64>> = HashMap::new();
        for (k, d) in a.take_examples().into_iter().chain(b.take_examples()) {
            pool.entry(k).or_default().insert(d);
        }
        let rule = rule_key("a.test", &"collapse_slashes".parse().unwrap());
        assert_eq!(pool.get(&rule).map(HashSet::len), Some(3), "{pool:?}");
        assert!(a.take_examples().is_empty(), "taken once");
        // Learnt from the pool (as the ack script does): both take it up.
        let learnt = vec![(rule.clone(), b"learnt 3".to_vec())];
        a.merge(&learnt);
        b.merge(&learnt);
        let copy_of_b = u("http://a.test/s/p5");
        let copy_of_a = u("http://a.test/s/p4");
        assert_eq!(a.fold(&copy_of_a), Some(Fold::Known));
        assert_eq!(a.fold(&copy_of_b), None, "a knows only the pages it kept");
        // The images each publishes, taken up by the other.
        let from_a = a.take_images();
        let from_b = b.take_images();
        assert_eq!(from_a.len(), 3, "{from_a:?}");
        a.merge_images(&from_b);
        b.merge_images(&from_a);
        assert_eq!(a.fold(&copy_of_b), Some(Fold::Known));
        assert_eq!(b.fold(&copy_of_a), Some(Fold::Known));
        // A page kept after the rule is in force is published at once.
        a.observe_kept(&u("http://a.test//s/p8"));
        assert_eq!(a.take_images().len(), 1);
        // One learner alone shares nothing.
        let mut alone = dust(3);
        alone.observe_duplicate(&u("http://a.test/s/p0"), "http://a.test//s/p0");
        assert!(alone.take_examples().is_empty());
    }

    #[test]
    fn probes_of_a_candidate_rule_are_limited_until_their_verdicts() {
        let mut d = dust(2);
        let a = |i: u32| u(&format!("http://a.test//s/{i}"));
        assert!(d.admit_fetch(&a(0), false));
        assert!(d.admit_fetch(&a(1), false));
        assert!(!d.admit_fetch(&a(2), false), "two probes in flight");
        assert!(
            d.admit_fetch(&u("http://a.test/plain"), false),
            "no candidate rule"
        );
        assert!(d.admit_fetch(&u("http://b.test//s/2"), false), "another host");
        // Many probes kept, no example: no more waiting.
        for i in 0..(2 * KEPT_PROBES_PER_EXAMPLE as u32) {
            let x = a(10 + i);
            assert!(d.admit_fetch(&x, true));
            d.observe_kept(&x);
            d.probe_done(&x, true);
            if i + 1 < 2 * KEPT_PROBES_PER_EXAMPLE as u32 {
                assert!(!d.admit_fetch(&a(2), false), "{i}");
            }
        }
        assert!(d.admit_fetch(&a(2), false));
        // The other direction: a URL a candidate maps a kept page onto.
        let mut d = dust(1);
        d.observe_kept(&u("http://a.test//t/0"));
        d.observe_kept(&u("http://a.test//t/1"));
        assert!(d.admit_fetch(&u("http://a.test/t/0"), false));
        assert!(!d.admit_fetch(&u("http://a.test/t/1"), false));
        assert!(
            d.admit_fetch(&u("http://a.test/t/1"), true),
            "forced after the wait"
        );
    }

    #[test]
    fn a_url_a_rule_maps_a_kept_page_onto_is_known() {
        let mut d = dust(2);
        // The `//` forms were met first and kept.
        for i in 0..3 {
            d.observe_kept(&u(&format!("http://a.test//s/{i}")));
        }
        assert_eq!(d.fold(&u("http://a.test/s/2")), None);
        d.observe_duplicate(&u("http://a.test/s/0"), "http://a.test//s/0");
        d.observe_duplicate(&u("http://a.test/s/1"), "http://a.test//s/1");
        assert_eq!(d.learnt().len(), 1);
        assert_eq!(d.fold(&u("http://a.test/s/2")), Some(Fold::Known));
        assert_eq!(d.fold(&u("http://a.test//s/2")), Some(Fold::Known));
        assert_eq!(
            d.fold(&u("http://a.test//s/7")),
            Some(Fold::Rewritten(u("http://a.test/s/7")))
        );
        assert_eq!(d.fold(&u("http://a.test/s/7")), None);
    }

    #[test]
    fn a_counter_example_blocks_the_rule() {
        let mut d = dust(3);
        // `page` changes the content of the list: both kept.
        d.observe_kept(&u("http://a.test/list"));
        d.observe_kept(&u("http://a.test/list?page=2"));
        // ... while articles ignore it.
        for i in 0..5 {
            d.observe_kept(&u(&format!("http://a.test/a/{i}")));
            d.observe_duplicate(
                &u(&format!("http://a.test/a/{i}?page=1")),
                &format!("http://a.test/a/{i}"),
            );
        }
        assert_eq!(d.rewrite(&u("http://a.test/list?page=3")), None);
        assert!(d.learnt().is_empty());
        // The other order: kept with the parameter first, then without.
        let mut d = dust(1);
        d.observe_kept(&u("http://a.test/list?sort=up"));
        d.observe_kept(&u("http://a.test/list"));
        d.observe_duplicate(&u("http://a.test/a?sort=up"), "http://a.test/a");
        assert!(d.learnt().is_empty(), "{:?}", d.learnt());
    }

    #[test]
    fn a_counter_example_after_learning_withdraws_the_rule() {
        let mut d = dust(1);
        d.observe_kept(&u("http://a.test/a"));
        d.observe_duplicate(&u("http://a.test/a?v=1"), "http://a.test/a");
        assert!(d.rewrite(&u("http://a.test/b?v=1")).is_some());
        d.observe_kept(&u("http://a.test/c"));
        d.observe_kept(&u("http://a.test/c?v=2"));
        assert_eq!(d.rewrite(&u("http://a.test/b?v=1")), None);
        assert!(d.learnt().is_empty());
    }

    #[test]
    fn a_fold_names_the_learnt_rules_that_made_it() {
        let s = DustSettings {
            rules: vec!["* collapse_slashes".into()],
            min_examples: 1,
            ..DustSettings::default()
        };
        let mut d = Dust::load(&s, None, Canonicalizer::default()).unwrap();
        d.observe_kept(&u("http://a.test/a"));
        d.observe_duplicate(&u("http://a.test/a?v=1"), "http://a.test/a");
        let v = ("a.test".to_string(), Rule::DropParam("v".into()));
        // Configured rules are not named: they are never withdrawn.
        assert_eq!(
            d.fold_by(&u("http://a.test//b?v=2")),
            Some((Fold::Rewritten(u("http://a.test/b")), vec![v.clone()]))
        );
        assert_eq!(
            d.fold_by(&u("http://a.test//b")),
            Some((Fold::Rewritten(u("http://a.test/b")), vec![]))
        );
        // A URL the rule maps a kept page onto: known, by that rule.
        d.observe_kept(&u("http://a.test/k?v=3"));
        assert_eq!(
            d.fold_by(&u("http://a.test/k")),
            Some((Fold::Known, vec![v.clone()]))
        );
        assert_eq!(d.fold_by(&u("http://a.test/plain")), None);
        // Withdrawn: reported once, then no longer applied or named.
        d.observe_kept(&u("http://a.test/c"));
        d.observe_kept(&u("http://a.test/c?v=2"));
        assert_eq!(d.take_withdrawn(), vec![v]);
        assert!(d.take_withdrawn().is_empty());
        assert_eq!(d.fold_by(&u("http://a.test/b?v=2")), None);
        assert!(d.learnt_of("a.test").is_empty());
    }

    #[test]
    fn rewrites_are_recorded_within_the_bound_and_given_back_once() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("s.redb")).unwrap();
        let key = |r: &str| ("a.test".to_string(), r.parse::<Rule>().unwrap());
        let (v, w) = (key("drop_param:v"), key("drop_param:w"));
        let txn = db.begin_write().unwrap();
        {
            let mut store = RedbLearn::new(&txn);
            let mut rw = Rewrites::new(&mut store, 3);
            for i in 0..3 {
                let url = u(&format!("http://a.test/p{i}?v=1&w=1"));
                assert!(rw.record(&[v.clone(), w.clone()], &url, 2, i == 0).unwrap());
            }
            // Recording one again does not count twice.
            assert!(
                rw.record(std::slice::from_ref(&v), &u("http://a.test/p0?v=1&w=1"), 2, true)
                    .unwrap()
            );
            // The bound: a fourth URL is not recorded under `v`.
            assert!(
                !rw.record(std::slice::from_ref(&v), &u("http://a.test/p9?v=1"), 1, false)
                    .unwrap()
            );
            // Another host's rule of the same name is another record.
            let other = ("b.test".to_string(), v.1.clone());
            assert!(rw.record(&[other], &u("http://b.test/x?v=1"), 1, false).unwrap());
        }
        txn.commit().unwrap();
        // Withdrawn in another transaction (the record is in the store).
        let txn = db.begin_write().unwrap();
        {
            let mut store = RedbLearn::new(&txn);
            let mut rw = Rewrites::new(&mut store, 3);
            let back = rw.take(std::slice::from_ref(&v), |_| vec![w.1.clone()]).unwrap();
            let mut urls: Vec<(String, u32, bool)> = back
                .iter()
                .map(|r| (r.url.to_string(), r.depth, r.was_queued))
                .collect();
            urls.sort();
            assert_eq!(
                urls,
                [
                    ("http://a.test/p0?v=1&w=1".to_string(), 2, true),
                    ("http://a.test/p1?v=1&w=1".to_string(), 2, false),
                    ("http://a.test/p2?v=1&w=1".to_string(), 2, false),
                ]
            );
            // Given back once: forgotten under `w` too, and under `v`.
            assert!(
                rw.take(&[v.clone(), w.clone()], |_| Vec::new())
                    .unwrap()
                    .is_empty()
            );
            // Room again under `w` (its count followed).
            for i in 0..3 {
                let url = u(&format!("http://a.test/q{i}?w=1"));
                assert!(rw.record(std::slice::from_ref(&w), &url, 1, false).unwrap());
            }
            // The other host's record is untouched.
            let other = ("b.test".to_string(), v.1.clone());
            assert_eq!(rw.take(&[other], |_| Vec::new()).unwrap().len(), 1);
        }
        txn.commit().unwrap();
    }

    #[test]
    fn configured_rules_and_the_off_switch() {
        let s = DustSettings {
            rules: vec!["* collapse_slashes".into(), "a.test drop_param:sid".into()],
            ..DustSettings::default()
        };
        let d = Dust::load(&s, None, Canonicalizer::default()).unwrap();
        assert_eq!(
            d.rewrite(&u("http://b.test//x?sid=1")),
            Some(u("http://b.test/x?sid=1"))
        );
        assert_eq!(
            d.rewrite(&u("http://a.test//x?sid=1")),
            Some(u("http://a.test/x"))
        );
        let off = Dust::load(
            &DustSettings {
                enabled: false,
                ..s.clone()
            },
            None,
            Canonicalizer::default(),
        )
        .unwrap();
        assert_eq!(off.rewrite(&u("http://a.test//x?sid=1")), None);
        let bad = DustSettings {
            rules: vec!["a.test drop_everything".into()],
            ..DustSettings::default()
        };
        let e = format!(
            "{:#}",
            Dust::load(&bad, None, Canonicalizer::default()).unwrap_err()
        );
        assert!(e.contains("drop_everything"), "{e}");
    }

    #[test]
    fn learnt_rules_survive_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("s.redb")).unwrap();
        let mut d = dust(1);
        d.observe_kept(&u("http://a.test/x"));
        d.observe_duplicate(&u("http://a.test//x"), "http://a.test/x");
        with_store(&db, |s| Ok(d.save_if_changed(s)?)).unwrap();
        assert!(!d.changed());
        let again = with_store(&db, |s| {
            Dust::load(&DustSettings::default(), Some(s), Canonicalizer::default())
        })
        .unwrap();
        assert_eq!(again.rewrite(&u("http://a.test//y")), Some(u("http://a.test/y")));
        assert_eq!(again.learnt(), d.learnt());
    }
}
