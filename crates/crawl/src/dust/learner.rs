//! Learning rules from the verdicts: evidence (distinct duplicates a
//! rewrite explains), probes (fetches held back until the verdicts of
//! those in flight), counter-examples (kept pages a rule would merge), and
//! the examples and images the workers of a shared crawl pool.

use std::collections::{HashMap, HashSet};

use tracing::{info, warn};
use url::Url;

use super::state::{Learnt, parse_rule_key, rule_key};
use super::{Dust, Rule, UrlImages, digest, host_key, rules_for_pair};

/// Kept URLs of one host, for counter-examples: their digests, and per
/// rule the digest each maps to.
#[derive(Debug, Default)]
pub(super) struct HostTrack {
    pub(super) kept: HashSet<u64>,
    /// Image digest -> (rule, digest of the kept URL it came from).
    pub(super) images: HashMap<u64, Vec<(Rule, u64)>>,
}

/// Fetches in flight (started, not judged yet) whose URL a candidate rule
/// of a host would change, and how many such pages were kept: the probes of
/// [`Dust::admit_fetch`].
#[derive(Debug, Default)]
pub(super) struct Probe {
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

impl Dust {
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
    #[cfg(test)]
    pub fn observe_kept(&mut self, url: &Url) {
        self.observe_kept_as(url, None);
    }

    /// [`Dust::observe_kept`] with the URL's images computed beforehand
    /// (by the page task, off the writer thread: [`UrlImages::of`]); they
    /// are computed here when missing or made under other settings.
    pub fn observe_kept_as(&mut self, url: &Url, images: Option<&UrlImages>) {
        if !self.enabled {
            return;
        }
        let computed;
        let images = match images {
            Some(i) if i.canon == self.canon_digest => i,
            _ => {
                let Some(i) = UrlImages::of(&self.canon, url) else {
                    return;
                };
                computed = i;
                &computed
            }
        };
        let (host, me) = (images.host.clone(), images.me);
        let mut countered: Vec<Rule> = Vec::new();
        let remember = self.tracked < self.max_urls;
        let track = self.tracks.entry(host.clone()).or_default();
        if let Some(from) = track.images.get(&me) {
            countered.extend(from.iter().filter(|(_, o)| *o != me).map(|(r, _)| r.clone()));
        }
        for (r, image) in &images.images {
            let (r, image) = (r.clone(), *image);
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

    /// Whether it learns at all (`crawl.dust.enabled`): page tasks compute
    /// [`UrlImages`] only then.
    pub fn is_enabled(&self) -> bool {
        self.enabled
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
    /// worker folds a URL as a copy of a kept page ([`Fold::Known`](super::Fold::Known)) only
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
    pub(super) fn share_images_of(&mut self, host: &str, rule: &Rule) {
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
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::dust::Fold;
    use crate::dust::tests_support::{dust, u};

    /// The images a page task computes stand for those the learner would
    /// compute: the same counter-examples block the same rule. Images
    /// made under other URL settings are not trusted but computed again.
    #[test]
    fn images_computed_beforehand_learn_what_the_learner_would() {
        let canon = simcrawl_dedup::Canonicalizer::default();
        let other = simcrawl_dedup::Canonicalizer::new(&simcrawl_dedup::UrlConfig {
            tracking_params: vec!["sid".into()],
        })
        .unwrap();
        let elsewhere = u("http://z.test/x");
        let run = |given: &dyn Fn(&Url) -> Option<UrlImages>| {
            let mut d = dust(2);
            // Both spellings kept: distinct pages, so collapsing the
            // slashes would merge them.
            for k in ["http://a.test/s/0", "http://a.test//s/0", "http://a.test/s/1"] {
                let k = u(k);
                d.observe_kept_as(&k, given(&k).as_ref());
            }
            d.observe_duplicate(&u("http://a.test//s/1"), "http://a.test/s/1");
            d.observe_duplicate(&u("http://a.test//s/2"), "http://a.test/s/2");
            d.observe_duplicate(&u("http://a.test//s/3"), "http://a.test/s/3");
            d.learnt().len()
        };
        let computed = run(&|_| None);
        assert_eq!(computed, 0, "the kept pair counters the rule");
        assert_eq!(run(&|k| UrlImages::of(&canon, k)), computed);
        // Trusted images are used as given: another URL's miss the
        // counter-example, and the rule is learnt...
        assert_eq!(run(&|_| UrlImages::of(&canon, &elsewhere)), 1);
        // ...but images made under other settings are computed again.
        assert_eq!(run(&|_| UrlImages::of(&other, &elsewhere)), computed);
        assert!(dust(2).is_enabled());
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
}
