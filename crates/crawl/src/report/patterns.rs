//! What distinguishes a dropped page's URL from its kept page's: the URL
//! rewrites behind duplicate URL spaces (`//` merged by the server, an
//! ignored query parameter, `index.html`), which a site owner can fix and a
//! crawler can learn (DUST, Bar-Yossef et al. 2007).

use url::Url;

/// Index files servers answer for their directory.
const INDEX_FILES: [&str; 7] = [
    "index.html",
    "index.htm",
    "index.shtml",
    "index.php",
    "index.asp",
    "default.aspx",
    "default.htm",
];

/// The rewrites that turn the kept URL into the dropped one, e.g.
/// "`//` in the path + trailing `/`", "query parameter `sid` added",
/// "another host (mirror.example)" or "another path (under `/mirror/`)".
///
/// Each step is tried in turn on both paths, so a URL that differs by two
/// rewrites names both; what no rewrite explains is "another path".
pub fn rewrite(dropped: &str, kept: &str) -> String {
    let (Ok(d), Ok(k)) = (Url::parse(dropped), Url::parse(kept)) else {
        return "unparsable URL".to_string();
    };
    let mut steps: Vec<String> = Vec::new();
    if d.scheme() != k.scheme() {
        steps.push(format!("scheme {}", d.scheme()));
    }
    let (dh, kh) = (d.host_str().unwrap_or(""), k.host_str().unwrap_or(""));
    if dh != kh {
        if dh.strip_prefix("www.") == Some(kh) || kh.strip_prefix("www.") == Some(dh) {
            steps.push("`www.` prefix".to_string());
        } else {
            return format!("another host (copy of {kh})");
        }
    }
    if d.port() != k.port() {
        steps.push("port".to_string());
    }
    path_steps(d.path(), k.path(), &mut steps);
    query_steps(&d, &k, &mut steps);
    if steps.is_empty() {
        "same URL (redirect target or URL variant)".to_string()
    } else {
        steps.join(" + ")
    }
}

fn path_steps(dropped: &str, kept: &str, steps: &mut Vec<String>) {
    let (mut d, mut k) = (dropped.to_string(), kept.to_string());
    if d == k {
        return;
    }
    type Step = (&'static str, fn(&str) -> String);
    let rewrites: [Step; 5] = [
        ("`//` in the path", collapse_slashes),
        ("`;` path parameters (session id)", strip_path_params),
        ("index file", strip_index_file),
        ("trailing `/`", |p| p.trim_end_matches('/').to_string()),
        ("case of the path", str::to_lowercase),
    ];
    let mut applied = Vec::new();
    for (name, f) in rewrites {
        let (d2, k2) = (f(&d), f(&k));
        if d2 != d || k2 != k {
            applied.push(name.to_string());
            (d, k) = (d2, k2);
        }
        if d == k {
            steps.extend(applied);
            return;
        }
    }
    let first = dropped.trim_start_matches('/').split('/').next().unwrap_or("");
    if dropped.trim_start_matches('/').contains('/') && !first.is_empty() {
        steps.push(format!("another path (under `/{first}/`)"));
    } else {
        steps.push("another path".to_string());
    }
}

fn collapse_slashes(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for c in p.chars() {
        if !(c == '/' && out.ends_with('/')) {
            out.push(c);
        }
    }
    out
}

fn strip_path_params(p: &str) -> String {
    p.split('/')
        .map(|seg| seg.split_once(';').map_or(seg, |(s, _)| s))
        .collect::<Vec<_>>()
        .join("/")
}

fn strip_index_file(p: &str) -> String {
    for f in INDEX_FILES {
        if let Some(dir) = p.strip_suffix(f)
            && dir.ends_with('/')
        {
            return dir.to_string();
        }
    }
    p.to_string()
}

fn query_steps(d: &Url, k: &Url, steps: &mut Vec<String>) {
    if d.query() == k.query() {
        return;
    }
    let names = |u: &Url| {
        let mut v: Vec<String> = u.query_pairs().map(|(n, _)| n.into_owned()).collect();
        v.sort();
        v.dedup();
        v
    };
    let (dn, kn) = (names(d), names(k));
    let list = |v: Vec<&String>| v.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
    let added: Vec<&String> = dn.iter().filter(|n| !kn.contains(n)).collect();
    let removed: Vec<&String> = kn.iter().filter(|n| !dn.contains(n)).collect();
    if !added.is_empty() {
        steps.push(format!("query parameter {} added", list(added)));
    }
    if !removed.is_empty() {
        steps.push(format!("query parameter {} removed", list(removed)));
    }
    if dn == kn {
        let dv: Vec<(String, String)> = d.query_pairs().into_owned().collect();
        let kv: Vec<(String, String)> = k.query_pairs().into_owned().collect();
        let mut differ: Vec<&String> = dv
            .iter()
            .filter(|(n, v)| !kv.iter().any(|(kn, kv)| kn == n && kv == v))
            .map(|(n, _)| n)
            .collect();
        differ.dedup();
        if differ.is_empty() {
            steps.push("query order".to_string());
        } else {
            steps.push(format!("query values of {}", list(differ)));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::rewrite;

    #[test]
    fn names_the_rewrites() {
        let cases = [
            ("http://a.test//x", "http://a.test/x", "`//` in the path"),
            (
                "http://a.test//x/",
                "http://a.test/x",
                "`//` in the path + trailing `/`",
            ),
            ("http://a.test/d/index.html", "http://a.test/d/", "index file"),
            (
                "http://a.test/d;jsessionid=42/p",
                "http://a.test/d/p",
                "`;` path parameters (session id)",
            ),
            ("http://a.test/P", "http://a.test/p", "case of the path"),
            (
                "http://a.test/p?sid=1&id=2",
                "http://a.test/p?id=2",
                "query parameter `sid` added",
            ),
            (
                "http://a.test/p",
                "http://a.test/p?lang=zh",
                "query parameter `lang` removed",
            ),
            (
                "http://a.test/p?page=2",
                "http://a.test/p?page=1",
                "query values of `page`",
            ),
            ("http://www.a.test/p", "http://a.test/p", "`www.` prefix"),
            ("https://a.test/p", "http://a.test/p", "scheme https"),
            (
                "http://m.test/p",
                "http://a.test/p",
                "another host (copy of a.test)",
            ),
            (
                "http://a.test/mirror/p.html",
                "http://a.test/p.html",
                "another path (under `/mirror/`)",
            ),
            ("http://a.test/q.html", "http://a.test/p.html", "another path"),
            (
                "http://a.test/p",
                "http://a.test/p",
                "same URL (redirect target or URL variant)",
            ),
            ("not a url", "http://a.test/p", "unparsable URL"),
        ];
        for (d, k, want) in cases {
            assert_eq!(rewrite(d, k), want, "{d} vs {k}");
        }
    }
}
