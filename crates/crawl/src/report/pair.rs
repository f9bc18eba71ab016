//! How a dropped page and the page it was judged a copy of are related by
//! their URLs: the first thing a person checking a verdict needs, since
//! each relation fails in its own way (issue 35): pages of one host share
//! a template and a generated title (siblings taken for copies), one path
//! on two hosts is a mirror, a language version or another renderer
//! (translations around an untranslated block), and pages of two sites are
//! one story in two frames (matched by the article alone). The relation is
//! the verdict rules' own ([`SiteRelation`]), so the report names a pair as
//! the rules saw it.

use simcrawl_dedup::SiteRelation;
use url::Url;

/// The relation of the pages at `a` and `b`; `None` when either is not a
/// URL (a `crawl dedup` line's name, say).
pub fn of(a: &str, b: &str) -> Option<SiteRelation> {
    (Url::parse(a).is_ok() && Url::parse(b).is_ok()).then(|| SiteRelation::of(a, b))
}

/// Its words in the report (nothing for a pair that is not of URLs).
pub fn label(relation: Option<SiteRelation>) -> &'static str {
    match relation {
        Some(SiteRelation::SameHost) => "same host",
        Some(SiteRelation::SamePath) => "one path, two hosts",
        Some(SiteRelation::Mirrors) => "two hosts of one site",
        Some(SiteRelation::OtherSites) => "two sites",
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relations_ignore_port_www_and_case() {
        let label_of = |a, b| label(of(a, b));
        assert_eq!(
            label_of("http://www.A.test:8080/x", "https://a.test/y"),
            "same host"
        );
        assert_eq!(
            label_of(
                "http://man.zh-cn.test/man1/tar.1.html",
                "http://man.zh-tw.test/man1/tar.1.html"
            ),
            "one path, two hosts"
        );
        assert_eq!(
            label_of("http://a.test/p?id=1", "http://b.test/p?id=2"),
            "two sites"
        );
        assert_eq!(of("doc-17", "http://b.test/"), None);
        assert_eq!(label_of("doc-17", "http://b.test/"), "");
    }
}
