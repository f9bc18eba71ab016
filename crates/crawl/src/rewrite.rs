//! What distinguishes a dropped page's URL from its kept page's: the URL
//! rewrites behind duplicate URL spaces (`//` merged by the server, an
//! ignored query parameter, `index.html`), which a site owner can fix and a
//! crawler can learn (DUST, Bar-Yossef et al. 2007).
//!
//! One classification, two readers: the report names the rewrites per host
//! ([`crate::report`]), and the crawler learns link canonicalization rules
//! from them ([`crate::dust`]). The structured [`Step`]s are what the
//! crawler needs (the direction of a trailing slash, the names of the
//! parameters); their display is the report's wording.

use std::fmt;

use url::Url;

/// Index files servers answer for their directory.
pub const INDEX_FILES: [&str; 7] = [
    "index.html",
    "index.htm",
    "index.shtml",
    "index.php",
    "index.asp",
    "default.aspx",
    "default.htm",
];

/// One rewrite between a dropped URL and its kept URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Another scheme (the dropped URL's).
    Scheme(String),
    /// A `www.` prefix on one of the hosts; `dropped_has` when it is on the
    /// dropped URL's.
    Www { dropped_has: bool },
    /// Another port.
    Port,
    /// `//` in the path (a server that merges slashes).
    DoubleSlash,
    /// `;` path parameters (`;jsessionid=...`).
    PathParams,
    /// An index file (`index.html`) for its directory.
    IndexFile,
    /// A trailing `/`; `dropped_has` when it is on the dropped URL.
    TrailingSlash { dropped_has: bool },
    /// The case of the path.
    PathCase,
    /// Another path, under this first segment if it has several.
    AnotherPath(Option<String>),
    /// Query parameters the dropped URL has and the kept one has not.
    ParamsAdded(Vec<String>),
    /// Query parameters the kept URL has and the dropped one has not.
    ParamsRemoved(Vec<String>),
    /// The same parameters and values in another order.
    QueryOrder,
    /// The same parameter names with other values.
    QueryValues(Vec<String>),
}

/// How the dropped URL relates to the kept one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rewrite {
    /// One of them is not a URL.
    Unparsable,
    /// A copy on another host (the kept page's).
    AnotherHost(String),
    /// No difference: a redirect target or a variant the canonical form
    /// already merges.
    Same,
    /// These rewrites, in the order they were found.
    Steps(Vec<Step>),
}

/// The rewrites that turn the kept URL into the dropped one. Each step is
/// tried in turn on both paths, so a URL that differs by two rewrites names
/// both; what no rewrite explains is "another path".
pub fn classify(dropped: &str, kept: &str) -> Rewrite {
    let (Ok(d), Ok(k)) = (Url::parse(dropped), Url::parse(kept)) else {
        return Rewrite::Unparsable;
    };
    let mut steps: Vec<Step> = Vec::new();
    if d.scheme() != k.scheme() {
        steps.push(Step::Scheme(d.scheme().to_string()));
    }
    let (dh, kh) = (d.host_str().unwrap_or(""), k.host_str().unwrap_or(""));
    if dh != kh {
        if dh.strip_prefix("www.") == Some(kh) {
            steps.push(Step::Www { dropped_has: true });
        } else if kh.strip_prefix("www.") == Some(dh) {
            steps.push(Step::Www { dropped_has: false });
        } else {
            return Rewrite::AnotherHost(kh.to_string());
        }
    }
    if d.port() != k.port() {
        steps.push(Step::Port);
    }
    path_steps(d.path(), k.path(), &mut steps);
    query_steps(&d, &k, &mut steps);
    if steps.is_empty() {
        Rewrite::Same
    } else {
        Rewrite::Steps(steps)
    }
}

fn path_steps(dropped: &str, kept: &str, steps: &mut Vec<Step>) {
    let (mut d, mut k) = (dropped.to_string(), kept.to_string());
    if d == k {
        return;
    }
    type Rw = fn(&str) -> String;
    let rewrites: [(Step, Rw); 5] = [
        (Step::DoubleSlash, collapse_slashes),
        (Step::PathParams, strip_path_params),
        (Step::IndexFile, strip_index_file),
        (Step::TrailingSlash { dropped_has: true }, |p| {
            p.trim_end_matches('/').to_string()
        }),
        (Step::PathCase, str::to_lowercase),
    ];
    let mut applied = Vec::new();
    for (step, f) in rewrites {
        let (d2, k2) = (f(&d), f(&k));
        if d2 != d || k2 != k {
            applied.push(match step {
                Step::TrailingSlash { .. } => Step::TrailingSlash { dropped_has: d2 != d },
                s => s,
            });
            (d, k) = (d2, k2);
        }
        if d == k {
            steps.extend(applied);
            return;
        }
    }
    let first = dropped.trim_start_matches('/').split('/').next().unwrap_or("");
    if dropped.trim_start_matches('/').contains('/') && !first.is_empty() {
        steps.push(Step::AnotherPath(Some(first.to_string())));
    } else {
        steps.push(Step::AnotherPath(None));
    }
}

/// `//` runs in a path collapsed to one `/`.
pub fn collapse_slashes(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for c in p.chars() {
        if !(c == '/' && out.ends_with('/')) {
            out.push(c);
        }
    }
    out
}

/// Every segment's `;` parameters removed (`/a;jsessionid=1/b` -> `/a/b`).
pub fn strip_path_params(p: &str) -> String {
    p.split('/')
        .map(|seg| seg.split_once(';').map_or(seg, |(s, _)| s))
        .collect::<Vec<_>>()
        .join("/")
}

/// A trailing index file removed (`/d/index.html` -> `/d/`).
pub fn strip_index_file(p: &str) -> String {
    for f in INDEX_FILES {
        if let Some(dir) = p.strip_suffix(f)
            && dir.ends_with('/')
        {
            return dir.to_string();
        }
    }
    p.to_string()
}

fn query_steps(d: &Url, k: &Url, steps: &mut Vec<Step>) {
    if d.query() == k.query() {
        return;
    }
    let (dn, kn) = (param_names(d), param_names(k));
    let added: Vec<String> = dn.iter().filter(|n| !kn.contains(n)).cloned().collect();
    let removed: Vec<String> = kn.iter().filter(|n| !dn.contains(n)).cloned().collect();
    if !added.is_empty() {
        steps.push(Step::ParamsAdded(added));
    }
    if !removed.is_empty() {
        steps.push(Step::ParamsRemoved(removed));
    }
    if dn == kn {
        let dv: Vec<(String, String)> = d.query_pairs().into_owned().collect();
        let kv: Vec<(String, String)> = k.query_pairs().into_owned().collect();
        let mut differ: Vec<String> = dv
            .iter()
            .filter(|(n, v)| !kv.iter().any(|(kn, kv)| kn == n && kv == v))
            .map(|(n, _)| n.clone())
            .collect();
        differ.dedup();
        if differ.is_empty() {
            steps.push(Step::QueryOrder);
        } else {
            steps.push(Step::QueryValues(differ));
        }
    }
}

/// The distinct query parameter names of `u`, sorted.
pub fn param_names(u: &Url) -> Vec<String> {
    let mut v: Vec<String> = u.query_pairs().map(|(n, _)| n.into_owned()).collect();
    v.sort();
    v.dedup();
    v
}

fn list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Scheme(s) => write!(f, "scheme {s}"),
            Step::Www { .. } => f.write_str("`www.` prefix"),
            Step::Port => f.write_str("port"),
            Step::DoubleSlash => f.write_str("`//` in the path"),
            Step::PathParams => f.write_str("`;` path parameters (session id)"),
            Step::IndexFile => f.write_str("index file"),
            Step::TrailingSlash { .. } => f.write_str("trailing `/`"),
            Step::PathCase => f.write_str("case of the path"),
            Step::AnotherPath(Some(first)) => write!(f, "another path (under `/{first}/`)"),
            Step::AnotherPath(None) => f.write_str("another path"),
            Step::ParamsAdded(n) => write!(f, "query parameter {} added", list(n)),
            Step::ParamsRemoved(n) => write!(f, "query parameter {} removed", list(n)),
            Step::QueryOrder => f.write_str("query order"),
            Step::QueryValues(n) => write!(f, "query values of {}", list(n)),
        }
    }
}

impl fmt::Display for Rewrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rewrite::Unparsable => f.write_str("unparsable URL"),
            Rewrite::AnotherHost(h) => write!(f, "another host (copy of {h})"),
            Rewrite::Same => f.write_str("same URL (redirect target or URL variant)"),
            Rewrite::Steps(steps) => {
                let names: Vec<String> = steps.iter().map(ToString::to_string).collect();
                f.write_str(&names.join(" + "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn directions_are_recorded() {
        assert_eq!(
            classify("http://a.test/x/", "http://a.test/x"),
            Rewrite::Steps(vec![Step::TrailingSlash { dropped_has: true }])
        );
        assert_eq!(
            classify("http://a.test/x", "http://a.test/x/"),
            Rewrite::Steps(vec![Step::TrailingSlash { dropped_has: false }])
        );
        assert_eq!(
            classify("http://a.test/p", "http://www.a.test/p"),
            Rewrite::Steps(vec![Step::Www { dropped_has: false }])
        );
        assert_eq!(
            classify("http://a.test/p?sid=1&b=2&a=3", "http://a.test/p?a=3"),
            Rewrite::Steps(vec![Step::ParamsAdded(vec!["b".into(), "sid".into()])])
        );
    }
}
