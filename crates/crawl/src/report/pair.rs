//! How a dropped page and the page it was judged a copy of are related by
//! their URLs: the first thing a person checking a verdict needs, since
//! each relation fails in its own way (issue 35): pages of one host share
//! a template and a generated title (siblings taken for copies), one path
//! on two hosts is a mirror, a language version or another renderer
//! (translations around an untranslated block), and pages of two sites are
//! one story in two frames (matched by the article alone).

use url::Url;

/// The relation of two pages' URLs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pair {
    /// One host (port and `www.` ignored).
    SameHost,
    /// One path and query on two hosts.
    OnePathTwoHosts,
    /// Two sites.
    TwoSites,
    /// A URL that does not parse (a `crawl dedup` line's name, say).
    Unknown,
}

impl Pair {
    /// The relation of the pages at `a` and `b`.
    pub fn of(a: &str, b: &str) -> Pair {
        let (Ok(a), Ok(b)) = (Url::parse(a), Url::parse(b)) else {
            return Pair::Unknown;
        };
        let host = |u: &Url| {
            let h = u.host_str().unwrap_or_default().to_ascii_lowercase();
            h.strip_prefix("www.").map(str::to_string).unwrap_or(h)
        };
        if host(&a) == host(&b) {
            Pair::SameHost
        } else if a.path() == b.path() && a.query() == b.query() {
            Pair::OnePathTwoHosts
        } else {
            Pair::TwoSites
        }
    }

    /// Its words in the report.
    pub fn label(self) -> &'static str {
        match self {
            Pair::SameHost => "same host",
            Pair::OnePathTwoHosts => "one path, two hosts",
            Pair::TwoSites => "two sites",
            Pair::Unknown => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relations_ignore_port_www_and_case() {
        assert_eq!(
            Pair::of("http://www.A.test:8080/x", "https://a.test/y"),
            Pair::SameHost
        );
        assert_eq!(
            Pair::of(
                "http://man.zh-cn.test/man1/tar.1.html",
                "http://man.zh-tw.test/man1/tar.1.html"
            ),
            Pair::OnePathTwoHosts
        );
        assert_eq!(
            Pair::of("http://a.test/p?id=1", "http://b.test/p?id=2"),
            Pair::TwoSites
        );
        assert_eq!(Pair::of("doc-17", "http://b.test/"), Pair::Unknown);
        assert_eq!(Pair::Unknown.label(), "");
    }
}
