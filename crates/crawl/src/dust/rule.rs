//! The URL rewrites DUST can learn ([`Rule`]) and which of them fold the
//! URL of a copy and the URL of its kept page onto one URL
//! ([`rules_for_pair`]).

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use simcrawl_dedup::Canonicalizer;
use url::Url;

use crate::rewrite::{self, Rewrite, Step};

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
    pub(super) fn candidates(url: &Url) -> Vec<Rule> {
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

/// The URL tier's canonical form of `url` (`canon` is the tiers'), so that
/// DUST calls two URLs one exactly when the URL tier does.
fn canonical(canon: &Canonicalizer, url: &Url) -> Option<String> {
    canon.from_url(url.clone()).ok().map(|c| c.as_str().to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::dust::tests_support::u;

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
}
