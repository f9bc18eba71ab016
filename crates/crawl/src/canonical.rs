//! Declared canonicals: which copy of a page is kept.
//!
//! A page may name the URL it is a copy of (`<link rel=canonical>`, or a
//! `Link: <...>; rel="canonical"` header): the print version names the
//! article, `?ref=` and `?sort=` variants name the plain URL. Judged in
//! fetch order, whichever copy came first was kept, so two runs of one site
//! could keep different copies. Here a page that declares another URL,
//! within the crawl's scope, is not judged at its first fetch: its
//! canonical is queued (unless the URL tier knows it already) and the page
//! goes back to the end of the frontier once ([`crate::frontier::Entry::waited`]).
//! Breadth-first, the canonical is fetched and judged first, so it is the
//! one kept; at its second fetch the page is judged as any, whatever it
//! declares: a copy of its canonical is dropped as such, a page that
//! differs is kept. Nothing is lost: a canonical that fails, is disallowed
//! or differs leaves the page to be judged on its own.
//!
//! The price is a second fetch of each such page. A site whose canonicals
//! are wrong (every page naming the home page is a known mistake) would pay
//! it for every page, so a host stops being trusted once
//! [`DISTRUST_AFTER`] of its pages put back proved not to be copies of
//! their canonical (compared when the canonical is fetched, by the page's
//! signature kept meanwhile), and at least as many as proved copies. When the canonical was already judged
//! before (the single-machine mode knows, from its page records), the page
//! is judged at once.
//!
//! When the canonical arrives only after its copy was kept (the copy was
//! judged at its second fetch before the canonical's fetch ended, or the
//! host is no longer trusted), the canonical is judged a copy of the kept
//! page, as before: no line is rewritten.

use std::collections::HashMap;

use parking_lot::Mutex;
use simcrawl_dedup::Canonicalizer;
use tracing::info;
use url::Url;

use crate::frontier::{Candidate, Entry, ScopeRules};

/// How long a page put back behind its canonical waits at least before
/// its second fetch. Breadth-first the canonical, queued before it, is
/// fetched first, but its verdict comes after its cleaning and commit:
/// a page fetched again at once could be judged before it (and kept,
/// making the canonical its copy) on a small site or at a crawl's end.
pub const WAIT_MS: u64 = 2_000;

/// Pages of a host put back behind their canonical that were not copies of
/// it, after which the host's canonicals are not followed, when they are at
/// least as many as the copies.
pub const DISTRUST_AFTER: u32 = 8;

/// What the crawl learnt of each host's declared canonicals (see the
/// module documentation); shared by the page tasks, which ask, and the
/// writer, which tells.
#[derive(Debug, Default)]
pub struct Canonicals {
    enabled: bool,
    hosts: Mutex<HashMap<String, Tally>>,
    /// The pages waiting behind each canonical (its canonical digest):
    /// their host and signature, compared with the canonical's when it is
    /// judged. At most [`MAX_HELD`] in all.
    held: Mutex<Waiting>,
}

/// The pages waiting behind each canonical, and how many in all.
#[derive(Debug, Default)]
struct Waiting {
    by_canonical: HashMap<[u8; 16], Vec<Held>>,
    count: usize,
}

/// A page waiting behind its canonical, as far as telling whether it is a
/// copy of it goes.
#[derive(Debug)]
struct Held {
    host: String,
    title: Option<u128>,
    fingerprint: Option<simcrawl_dedup::Fingerprint>,
}

/// Pages remembered waiting behind their canonicals at most (a few dozen
/// bytes each); past it a host learns only from the others.
const MAX_HELD: usize = 100_000;

/// Fingerprint distance within which a waiting page counts as a copy of
/// its canonical for [`Canonicals`]' trust (the content tier's default).
const COPY_DISTANCE: u32 = 3;

/// Of a host's pages put back behind their canonical: how many were not
/// copies of it, how many were, when it was fetched.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    kept: u32,
    copies: u32,
}

impl Tally {
    fn distrusted(self) -> bool {
        self.kept >= DISTRUST_AFTER && self.kept >= self.copies
    }
}

impl Canonicals {
    /// `enabled`: `crawl.canonical_first`.
    pub fn new(enabled: bool) -> Self {
        Canonicals {
            enabled,
            ..Canonicals::default()
        }
    }

    /// The canonical the page of `entry` (fetched from `final_url`; `own`:
    /// the digest of its URL's canonical form, which the page task computed
    /// already) must wait for, given what it `declared`: `None` when it is
    /// judged now
    /// (none declared, the URL itself or its redirect target, out of
    /// scope, a revisit, already put back once, or a host whose canonicals
    /// proved wrong).
    pub fn wait_for(
        &self,
        entry: &Entry,
        own: Option<u128>,
        final_url: &Url,
        declared: Option<&Url>,
        canon: &Canonicalizer,
        scope: &ScopeRules,
    ) -> Option<Candidate> {
        if !self.enabled || entry.waited || entry.revisit.is_some() || entry.listing {
            return None;
        }
        let c = Candidate::new(canon, declared?.clone())?;
        let digest = c.canonical().digest();
        let redirected_to_it = || {
            final_url != &entry.url
                && canon
                    .from_url(final_url.clone())
                    .is_ok_and(|f| f.digest() == digest)
        };
        if own == Some(u128::from_be_bytes(digest)) || redirected_to_it() || !scope.allows(c.url()) {
            return None;
        }
        let host = host_of(&entry.url);
        if self.hosts.lock().get(&host).is_some_and(|t| t.distrusted()) {
            return None;
        }
        Some(c)
    }

    /// The page of `entry` (signed `sig`) waits behind the canonical `c`:
    /// remembered until `c` is fetched ([`Canonicals::fetched`]).
    pub fn waits(&self, entry: &Entry, sig: &simcrawl_dedup::Signature, c: &Candidate) {
        let mut held = self.held.lock();
        if held.count >= MAX_HELD {
            return;
        }
        held.count += 1;
        held.by_canonical
            .entry(c.canonical().digest())
            .or_default()
            .push(Held {
                host: host_of(&entry.url),
                title: sig.title_digest,
                fingerprint: sig.fingerprint,
            });
    }

    /// The page whose URL has the canonical digest `digest` was fetched
    /// and signed `sig` (judged, or waiting behind a canonical of its own):
    /// the pages waiting behind it are told copies or not, by title or
    /// fingerprint, and their hosts' trust follows. Told here, not at their
    /// second fetch: a site whose canonicals are wrong stops costing
    /// fetches before it has paid them all.
    pub fn fetched(&self, digest: [u8; 16], sig: &simcrawl_dedup::Signature) {
        let waiting = {
            let mut held = self.held.lock();
            match held.by_canonical.remove(&digest) {
                Some(w) => {
                    held.count -= w.len();
                    w
                }
                None => return,
            }
        };
        let mut hosts = self.hosts.lock();
        for w in waiting {
            let copy = (w.title.is_some() && w.title == sig.title_digest)
                || matches!((w.fingerprint, sig.fingerprint), (Some(a), Some(b)) if a.distance(b) <= COPY_DISTANCE);
            let t = hosts.entry(w.host.clone()).or_default();
            let was = t.distrusted();
            if copy {
                t.copies += 1;
            } else {
                t.kept += 1;
            }
            if !was && t.distrusted() {
                info!(
                    host = %w.host,
                    not_copies = t.kept,
                    copies = t.copies,
                    "declared canonicals of this host are not followed any more: most pages put back \
                     behind theirs were not copies of them"
                );
            }
        }
    }
}

fn host_of(url: &Url) -> String {
    url.host_str().unwrap_or_default().to_ascii_lowercase()
}

/// The canonical URLs a `Link` header value names (`<URL>; rel="canonical"`,
/// RFC 8288), resolved against `base`. Why not a crate: the only
/// parameter read is `rel`, and a header is read in one pass here.
pub fn from_link_header(value: &str, base: &Url) -> Vec<Url> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('>') else { break };
        let target = after[..close].trim();
        let params_and_more = &after[close + 1..];
        let end = params_and_more.find('<').unwrap_or(params_and_more.len());
        let params = &params_and_more[..end];
        let canonical = params.split(';').any(|p| {
            let Some((name, v)) = p.split_once('=') else {
                return false;
            };
            name.trim().eq_ignore_ascii_case("rel")
                && v.trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|r| r.eq_ignore_ascii_case("canonical"))
        });
        if canonical && let Ok(u) = base.join(target) {
            out.push(u);
        }
        rest = &params_and_more[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::CrawlConfig;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn entry(url: &str) -> Entry {
        Entry::new(1, u(url), 1)
    }

    #[test]
    fn link_headers_name_their_canonicals_resolved() {
        let base = u("http://a.test/dir/page?x=1");
        assert_eq!(
            from_link_header(r#"</dir/page>; rel="canonical""#, &base),
            vec![u("http://a.test/dir/page")]
        );
        assert_eq!(
            from_link_header(
                r#"<style.css>; rel=preload; as=style, <https://b.test/x,y>; rel="alternate canonical""#,
                &base
            ),
            vec![u("https://b.test/x,y")]
        );
        assert!(from_link_header(r#"</next>; rel="next""#, &base).is_empty());
        assert!(from_link_header("garbage <unclosed", &base).is_empty());
    }

    #[test]
    fn a_page_waits_for_another_canonical_once_and_distrust_ends_it_per_host() {
        let canon = Canonicalizer::default();
        let key = |e: &Entry| crate::revisit::url_key(&canon, &e.url);
        let seed = u("http://a.test/");
        let scope = ScopeRules::new(&CrawlConfig::default(), std::slice::from_ref(&seed)).unwrap();
        let c = Canonicals::new(true);
        let copy = entry("http://a.test/tomatoes-copy.html");
        let declared = u("http://a.test/tomatoes.html");
        let wait = c.wait_for(&copy, key(&copy), &copy.url, Some(&declared), &canon, &scope);
        assert_eq!(wait.as_ref().map(|w| w.url().clone()), Some(declared.clone()));
        // Itself (the canonical form: a fragment, the redirect target), out
        // of scope, none, or already put back once: judged now.
        let itself = u("http://a.test/tomatoes-copy.html#top");
        assert!(
            c.wait_for(&copy, key(&copy), &copy.url, Some(&itself), &canon, &scope)
                .is_none()
        );
        assert!(
            c.wait_for(&copy, key(&copy), &declared, Some(&declared), &canon, &scope)
                .is_none()
        );
        assert!(
            c.wait_for(
                &copy,
                key(&copy),
                &copy.url,
                Some(&u("http://b.test/x")),
                &canon,
                &scope
            )
            .is_none()
        );
        assert!(
            c.wait_for(&copy, key(&copy), &copy.url, None, &canon, &scope)
                .is_none()
        );
        let waited = Entry {
            waited: true,
            ..copy.clone()
        };
        assert!(
            c.wait_for(&waited, key(&waited), &copy.url, Some(&declared), &canon, &scope)
                .is_none()
        );
        // Off: never.
        let off = Canonicals::new(false);
        assert!(
            off.wait_for(&copy, key(&copy), &copy.url, Some(&declared), &canon, &scope)
                .is_none()
        );
        // A host whose waiting pages prove not to be copies of their
        // canonicals, when those are judged, stops being trusted: not
        // before DISTRUST_AFTER, and not while copies outnumber them.
        let sig = |title: u128, fp: u64| simcrawl_dedup::Signature {
            url: String::new(),
            url_digest: None,
            title_digest: Some(title),
            fingerprint: Some(simcrawl_dedup::Fingerprint::new(fp)),
            sketch: None,
            features: 0,
            min_similarity: None,
            article: simcrawl_dedup::Article::None,
            extent: None,
        };
        let target = wait.unwrap();
        let digest = target.canonical().digest();
        for _ in 0..DISTRUST_AFTER {
            // Same title: a copy.
            c.waits(&copy, &sig(1, 0), &target);
            c.fetched(digest, &sig(1, u64::MAX));
        }
        for i in 0..DISTRUST_AFTER {
            assert!(
                c.wait_for(&copy, key(&copy), &copy.url, Some(&declared), &canon, &scope)
                    .is_some(),
                "{i}"
            );
            // Another title, a fingerprint 4 bits away: not a copy.
            c.waits(&copy, &sig(2, 0b1111), &target);
            c.fetched(digest, &sig(3, 0));
        }
        assert!(
            c.wait_for(&copy, key(&copy), &copy.url, Some(&declared), &canon, &scope)
                .is_none()
        );
        // Another host is trusted still; a fingerprint 3 bits away is a copy.
        let other_host = entry("http://b.test/x");
        let scope_b = ScopeRules::new(&CrawlConfig::default(), &[u("http://b.test/")]).unwrap();
        let to_b = u("http://b.test/y");
        let w = c
            .wait_for(
                &other_host,
                key(&other_host),
                &other_host.url,
                Some(&to_b),
                &canon,
                &scope_b,
            )
            .unwrap();
        for _ in 0..2 * DISTRUST_AFTER {
            c.waits(&other_host, &sig(4, 0b111), &w);
            c.fetched(w.canonical().digest(), &sig(5, 0));
        }
        assert!(
            c.wait_for(
                &other_host,
                key(&other_host),
                &other_host.url,
                Some(&to_b),
                &canon,
                &scope_b
            )
            .is_some()
        );
        // A canonical judged with nothing waiting: nothing learnt.
        c.fetched([0; 16], &sig(9, 9));
    }
}
