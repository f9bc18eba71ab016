//! What enters a frontier, whichever backend keeps it: an [`Entry`] to
//! fetch, a [`Candidate`] link with its canonical form, and the crawl's
//! [`ScopeRules`]. The local frontier (redb) is `crate::backend::local::frontier`,
//! the shared one `crate::backend::redis::frontier`.

use std::collections::HashSet;

use anyhow::{Context, Result};
use regex::Regex;
use simcrawl_dedup::{CanonicalUrl, Canonicalizer};
use url::Url;

use crate::config::{CrawlConfig, Scope};

/// One URL to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Position in breadth-first order; the frontier key.
    pub seq: u64,
    pub url: Url,
    pub depth: u32,
    /// Times this URL was put back after a transient failure.
    pub attempts: u32,
    /// Not fetched before this time (unix milliseconds; 0: at once).
    pub not_before_ms: u64,
    /// A visit again of a page already crawled (`crate::revisit`).
    pub revisit: Option<Box<Revisit>>,
    /// A sitemap or a feed (`crate::listing`), not a page.
    pub listing: bool,
    /// For a listing: how many listings led to it (0: a seed, a page or
    /// robots.txt named it), bounded by `crawl.max_listing_depth` so that
    /// an index naming the next index forever ends. Listings keep their
    /// parent's `depth` (their pages are one link from it), so `depth`
    /// cannot bound them.
    pub nest: u32,
    /// The page, sitemap or feed that led to this URL (its `url` in the
    /// outputs), as Heritrix's crawl.log names a URL's referrer: written as
    /// `via` on every line of the URL. `None`: a seed, a revisit, a URL put
    /// back by a withdrawn rewrite rule.
    pub via: Option<String>,
    /// Put back once behind the canonical URL its page declared
    /// (`crate::canonical`): judged at this fetch, whatever it declares.
    pub waited: bool,
}

impl Entry {
    /// A page entry of `url` at `depth` under `seq`: never tried, due at
    /// once, found by no page. Every kind of entry starts from it (struct
    /// update syntax), so a new field is set in one place.
    pub fn new(seq: u64, url: Url, depth: u32) -> Entry {
        Entry {
            seq,
            url,
            depth,
            attempts: 0,
            not_before_ms: 0,
            revisit: None,
            listing: false,
            nest: 0,
            via: None,
            waited: false,
        }
    }
}

/// What a revisit entry carries: the validators its page's last fetch
/// stored (sent back as a conditional request), and whether the page must
/// be judged again whatever its text (the page it copied changed or is
/// gone).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Revisit {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rejudge: bool,
    #[serde(default)]
    pub since: simcrawl_fetch::Validators,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Which URLs the crawl may fetch.
#[derive(Debug)]
pub struct ScopeRules {
    scope: Scope,
    hosts: HashSet<String>,
    domains: HashSet<String>,
    include: Vec<Regex>,
    exclude: Vec<Regex>,
}

/// The registrable domain of a URL's host (`news.example.com` ->
/// `example.com`). An IP literal is its own scope: the public-suffix rule
/// would make `1.1` the domain of `192.168.1.1`.
fn registrable(url: &Url) -> Option<String> {
    match url.host()? {
        url::Host::Domain(host) => Some(psl::domain_str(host).unwrap_or(host).to_ascii_lowercase()),
        url::Host::Ipv4(ip) => Some(ip.to_string()),
        url::Host::Ipv6(ip) => Some(format!("[{ip}]")),
    }
}

impl ScopeRules {
    /// Rules for a crawl started from `seeds`.
    pub fn new(cfg: &CrawlConfig, seeds: &[Url]) -> Result<ScopeRules> {
        let compile = |list: &[String], what: &str| -> Result<Vec<Regex>> {
            list.iter()
                .map(|r| Regex::new(r).with_context(|| format!("invalid crawl.{what} regex {r:?}")))
                .collect()
        };
        Ok(ScopeRules {
            scope: cfg.scope,
            hosts: seeds
                .iter()
                .filter_map(|u| u.host_str().map(str::to_ascii_lowercase))
                .collect(),
            domains: seeds.iter().filter_map(registrable).collect(),
            include: compile(&cfg.include, "include")?,
            exclude: compile(&cfg.exclude, "exclude")?,
        })
    }

    /// Whether `url` is in scope.
    pub fn allows(&self, url: &Url) -> bool {
        if !matches!(url.scheme(), "http" | "https") {
            return false;
        }
        let Some(host) = url.host_str() else { return false };
        let in_scope = match self.scope {
            Scope::Host => self.hosts.contains(&host.to_ascii_lowercase()),
            Scope::Domain => registrable(url).is_some_and(|d| self.domains.contains(&d)),
            Scope::Any => true,
        };
        in_scope
            && (self.include.is_empty() || self.include.iter().any(|r| r.is_match(url.as_str())))
            && !self.exclude.iter().any(|r| r.is_match(url.as_str()))
    }
}

/// A link ready for the frontier: fragment removed and canonical form
/// computed (CPU work done by the fetch workers, not the writer).
#[derive(Debug, Clone)]
pub struct Candidate {
    pub(crate) url: Url,
    pub(crate) canonical: CanonicalUrl,
    /// When the URL tier first saw it, as the page task read it on a
    /// snapshot of the store ([`simcrawl_dedup::Deduper::urls_first_seen`]):
    /// the writer skips a link known this way instead of looking it up in
    /// its transaction. `None`: not known then (or not asked), so the
    /// writer's own check decides.
    pub(crate) known_since: Option<u64>,
}

impl Candidate {
    /// `None` for URLs that cannot be crawled (not http(s)). `canon` is the
    /// URL tier's ([`simcrawl_dedup::Deduper::canonicalizer`]): the form is its key.
    pub fn new(canon: &Canonicalizer, mut url: Url) -> Option<Candidate> {
        url.set_fragment(None);
        let canonical = canon.from_url(url.clone()).ok()?;
        Some(Candidate {
            url,
            canonical,
            known_since: None,
        })
    }

    /// The canonical form (the URL tier's key).
    pub fn canonical(&self) -> &CanonicalUrl {
        &self.canonical
    }

    /// The URL as it will be fetched (without fragment).
    pub fn url(&self) -> &Url {
        &self.url
    }
}

/// `url` up to its fragment: the document a [`Candidate`] is made from.
pub fn document_of(url: &Url) -> &str {
    &url[..url::Position::AfterQuery]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn rules(scope: Scope, seeds: &[&str]) -> ScopeRules {
        let cfg = CrawlConfig {
            scope,
            ..CrawlConfig::default()
        };
        let seeds: Vec<Url> = seeds.iter().map(|s| Url::parse(s).unwrap()).collect();
        ScopeRules::new(&cfg, &seeds).unwrap()
    }

    fn allows(r: &ScopeRules, u: &str) -> bool {
        r.allows(&Url::parse(u).unwrap())
    }

    #[test]
    fn domain_scope_of_an_ip_seed_is_that_ip() {
        let r = rules(Scope::Domain, &["http://192.168.1.1/", "http://[::1]:8080/"]);
        assert!(allows(&r, "http://192.168.1.1/x"));
        assert!(allows(&r, "http://192.168.1.1:81/x"));
        // The public-suffix rule would make `1.1` the "domain" of both.
        assert!(!allows(&r, "http://10.0.1.1/x"));
        assert!(allows(&r, "http://[::1]/x"));
        assert!(!allows(&r, "http://[::2]/x"));
        // Names still group by registrable domain.
        let r = rules(Scope::Domain, &["http://news.example.com/"]);
        assert!(allows(&r, "http://www.example.com/"));
        assert!(!allows(&r, "http://example.org/"));
        assert!(!allows(&r, "http://127.0.0.1/"));
    }

    #[test]
    fn a_url_without_its_fragment_keeps_encoded_hashes_of_its_path_and_query() {
        let cases = [
            ("https://d.test/a.html#sec-1", "https://d.test/a.html"),
            ("https://d.test/a.html", "https://d.test/a.html"),
            (
                "https://d.test/a%23b.html?q=%23#x#y",
                "https://d.test/a%23b.html?q=%23",
            ),
            ("https://d.test/?q=1#", "https://d.test/?q=1"),
        ];
        for (url, document) in cases {
            let url = Url::parse(url).unwrap();
            assert_eq!(document_of(&url), document, "{url}");
            // What Candidate::new keys on: the URL with its fragment removed.
            let mut bare = url.clone();
            bare.set_fragment(None);
            assert_eq!(bare.as_str(), document);
        }
        // A `#` the page wrote in a path is percent-encoded by the parser.
        let joined = Url::parse("https://d.test/dir/")
            .unwrap()
            .join("a b#c#d")
            .unwrap();
        assert_eq!(document_of(&joined), "https://d.test/dir/a%20b");
    }
}
