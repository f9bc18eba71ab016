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
//! Rules, blocks and records live in a [`LearnStore`](crate::learn::LearnStore): the local crawl's
//! redb state, or Redis for the workers of a shared crawl, each of which
//! learns from its own verdicts, publishes what it learns with its
//! acknowledgements and takes up the others' ([`Dust::merge`]).
//!
//! The parts: [`rule`] (the rewrites and which of them explain a copy),
//! [`learner`] (evidence, probes, counter-examples), [`applier`] (the rules
//! in force applied to links and frontier entries) and [`state`] (what is
//! stored of them, and the record of rewrites).

mod applier;
mod learner;
mod rule;
mod state;

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use simcrawl_dedup::Canonicalizer;
use url::Url;

pub use applier::Fold;
use learner::{HostTrack, Probe};
pub use rule::{Rule, rules_for_pair};
pub use state::{Learnt, Rewrites};

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

/// The host a rule belongs to: host and explicit port, as in the URL.
fn host_key(url: &Url) -> Option<String> {
    host_key_of(url).map(str::to_owned)
}

/// [`host_key`] borrowed from the URL: the writer folds every link of
/// every page through the rules of its host, and the `format!` of a key
/// for each look-up (twice a link) was most of the 7% of the saturated
/// writer's perf samples spent formatting (issue 37). The key is the
/// URL's own host and explicit port (the `url` crate serializes the host
/// as `host_str` gives it and omits a scheme's default port, so the slice
/// is the host, or what `format!("{host}:{port}")` made).
fn host_key_of(url: &Url) -> Option<&str> {
    url.host_str()?;
    Some(&url[url::Position::BeforeHost..url::Position::AfterPort])
}

fn digest(canon: &Canonicalizer, url: &Url) -> Option<u64> {
    let c = canon.from_url(url.clone()).ok()?;
    let d = c.digest();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    Some(u64::from_le_bytes(b))
}

/// What [`Dust::observe_kept`] needs of a kept page's URL: its host, its
/// digest and its image under every candidate rule. Pure functions of the
/// URL (a canonical form and an MD5 each), so the page task computes them
/// and the writer, the crawl's one serial stage, only looks them up.
#[derive(Debug, Clone)]
pub struct UrlImages {
    /// [`Canonicalizer::tracking_digest`] of the settings they were made
    /// under.
    pub(super) canon: String,
    pub(super) host: String,
    pub(super) me: u64,
    pub(super) images: Vec<(Rule, u64)>,
}

impl UrlImages {
    /// `None` for a URL without a host or canonical form (nothing to learn).
    pub fn of(canon: &Canonicalizer, url: &Url) -> Option<UrlImages> {
        let (host, me) = (host_key(url)?, digest(canon, url)?);
        let images = Rule::candidates(url)
            .into_iter()
            .filter_map(|r| {
                let image = r.apply(url).and_then(|u| digest(canon, &u))?;
                Some((r, image))
            })
            .collect();
        Some(UrlImages {
            canon: canon.tracking_digest(),
            host,
            me,
            images,
        })
    }
}

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
    /// `canon`'s [`Canonicalizer::tracking_digest`], taken once: the
    /// writer compares it with each kept page's [`UrlImages`].
    canon_digest: String,
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
mod tests_support {
    #![allow(clippy::unwrap_used)]
    use super::*;

    pub(super) fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    pub(super) fn dust(min: usize) -> Dust {
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
}
