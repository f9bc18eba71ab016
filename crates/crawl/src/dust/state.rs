//! What is stored of the rules: learnt and blocked rules as entries of
//! [`Map::DustRules`] (loaded, merged from other workers, saved), and the
//! record of the URLs each learnt rule rewrote ([`Rewrites`]).

use std::collections::BTreeSet;
use std::fmt;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use simcrawl_dedup::Canonicalizer;
use tracing::{info, warn};
use url::Url;

use super::{Dust, DustSettings, Rule};
use crate::learn::{LearnError, LearnStore, Map, RULE_BLOCKED, RULE_LEARNT, Restored};

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
pub(super) fn rule_key(host: &str, rule: &Rule) -> String {
    format!("{host} {rule}")
}

/// A rule's host and rule, from its key in the store.
pub(super) fn parse_rule_key(key: &str) -> Option<(String, Rule)> {
    let (host, rule) = key.split_once(' ')?;
    Some((host.to_string(), rule.parse().ok()?))
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
            canon_digest: canon.tracking_digest(),
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::backend::local::learn::{RedbLearn, with_store};
    use crate::dust::tests_support::{dust, u};

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
