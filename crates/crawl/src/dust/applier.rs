//! The rules in force applied: links and frontier entries rewritten
//! ([`Dust::fold_by`]) or folded as known copies of kept pages.

use std::collections::BTreeSet;

use url::Url;

use super::{Dust, Rule, digest, host_key_of};

/// What the rules say of a URL ([`Dust::fold`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fold {
    /// Fetch it under this URL instead.
    Rewritten(Url),
    /// Its page is known: kept under a URL a rule maps onto this one.
    Known,
}

impl Dust {
    /// `url` with the rules of its host applied, or `None` when they leave it
    /// as it is (or DUST is off). The crawl folds ([`Dust::fold_by`]); the
    /// tests read the rewrite alone.
    #[cfg(test)]
    pub fn rewrite(&self, url: &Url) -> Option<Url> {
        self.rewrite_by(url, host_key_of(url)?).map(|(u, _)| u)
    }

    /// [`Dust::rewrite`] of `url`, whose host key is `host`, and the rules
    /// that changed the URL.
    fn rewrite_by(&self, url: &Url, host: &str) -> Option<(Url, Vec<Rule>)> {
        if !self.enabled {
            return None;
        }
        let own = self
            .rules
            .get(host)
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
    /// under which the caller records `url` ([`Rewrites::record`](super::Rewrites::record)) so that
    /// it is fetched after all if one of them is withdrawn. Configured rules
    /// are not named: they are never withdrawn.
    pub fn fold_by(&self, url: &Url) -> Option<(Fold, Vec<(String, Rule)>)> {
        if !self.enabled {
            return None;
        }
        let host = host_key_of(url)?;
        let rewritten = self.rewrite_by(url, host);
        let target = rewritten.as_ref().map_or(url, |(u, _)| u);
        let mut by: Vec<Rule> = rewritten.as_ref().map(|(_, by)| by.clone()).unwrap_or_default();
        let known = match &rewritten {
            None => self.image_of_kept_by(target, host),
            Some((t, _)) => host_key_of(t).map_or_else(Vec::new, |h| self.image_of_kept_by(t, h)),
        };
        let fold = if known.is_empty() {
            Fold::Rewritten(rewritten?.0)
        } else {
            by.extend(known);
            Fold::Known
        };
        let mut keys: Vec<(String, Rule)> = Vec::new();
        for r in by {
            let key = (host.to_string(), r);
            if self.learnt_keys.contains(&key) && !keys.contains(&key) {
                keys.push(key);
            }
        }
        Some((fold, keys))
    }

    /// The rules in force for `url`'s host (`host`, its key) that map a
    /// remembered kept URL (not `url` itself) onto `url`; empty when none
    /// does.
    fn image_of_kept_by(&self, url: &Url, host: &str) -> Vec<Rule> {
        if !self.enabled {
            return Vec::new();
        }
        let own = self.rules.get(host);
        if self.everywhere.is_empty() && own.is_none() {
            return Vec::new();
        }
        let Some(me) = digest(&self.canon, url) else {
            return Vec::new();
        };
        let mut by: Vec<Rule> = Vec::new();
        for (r, origin) in self
            .tracks
            .get(host)
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
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::dust::DustSettings;
    use crate::dust::tests_support::{dust, u};
    use simcrawl_dedup::Canonicalizer;

    /// A host key is borrowed from the URL, port and all, and is the
    /// `host:port` (or the host) the rules were keyed by when it was
    /// formatted: IPv6, IDN, userinfo, a default port written out.
    #[test]
    fn host_keys_borrowed_from_the_url_are_the_formatted_ones() {
        for s in [
            "http://a.test/x",
            "http://a.test:8080/x?q#f",
            "https://a.test:443/x",
            "http://user:pw@a.test:81/",
            "http://[::1]:9000/a",
            "http://[::1]/a",
            "http://例子.测试:8000/路径",
            "http://127.0.0.1:65535",
            "https://A.Test:0/",
        ] {
            let url = u(s);
            let formatted = url.host_str().map(|h| match url.port() {
                Some(p) => format!("{h}:{p}"),
                None => h.to_string(),
            });
            // Borrowed from the URL by its type.
            let key: Option<&str> = host_key_of(&url);
            assert_eq!(key, formatted.as_deref(), "{s}");
        }
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
}
