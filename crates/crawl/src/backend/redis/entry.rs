//! A shared frontier entry as stored in Redis (its text in a host's queue,
//! a lease, a requeue): encoding and decoding, and the claim tokens that
//! tell an entry's own claim in the URL tier from another's (see
//! [`super::frontier`] for the format and the lease protocol).

use url::Url;

use crate::frontier::Entry;

/// The host part of a queue key: the fetcher's politeness key (scheme, host
/// and port), so that politeness applies to what one server sees.
pub use simcrawl_fetch::politeness_key as host_key;

/// Where a queued entry's URL stands in the URL tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Claimed already (an entry requeued or given back by the worker that
    /// claimed it): fetched without a claim.
    Held,
    /// To be claimed by the worker that leases it. The token is the entry's
    /// own and is recorded with the claim, so that a claim this entry made
    /// before (by a worker whose lease then expired, or in a commit whose
    /// reply was lost) is told from another entry's: the first is fetched,
    /// the second dropped. Entries of older crawls have an empty token.
    Pending(String),
}

/// A page's queue entry as stored: `c ATTEMPTS DEPTH URL` ([`Claim::Held`])
/// or `n ATTEMPTS DEPTH URL TOKEN` ([`Claim::Pending`]); a serialized URL
/// has no spaces.
pub fn encode_entry(claim: &Claim, attempts: u32, depth: u32, url: &Url) -> String {
    encode_kind(claim, attempts, depth, url, None, None)
}

/// [`encode_entry`] for a page (`listing` `None`) or a sitemap or feed
/// (`crate::listing`) at its nest (`Entry::nest`): the same with the flag
/// `cl` / `nl`, or `clN` / `nlN` for a nest N > 0. The flag's first
/// letter is the claim, so the `lease` script's reclaim (which rewrites
/// that letter only) keeps the rest; a listing is leased, claimed,
/// acknowledged and given back like a page.
///
/// `via`, what led to the URL (`Entry::via`), ends the entry as ` <VIA`:
/// a URL holds no space, a claim token never starts with `<`, and an entry
/// without a token then has 4 spaces, which the `lease` script's reclaim
/// reads as "has a token" and so leaves alone (only an `n` entry without
/// a token, of versions before tokens, is rewritten there; `c` entries
/// are held already).
pub fn encode_kind(
    claim: &Claim,
    attempts: u32,
    depth: u32,
    url: &Url,
    listing: Option<u32>,
    via: Option<&str>,
) -> String {
    let l = match listing {
        None => String::new(),
        Some(0) => "l".to_string(),
        Some(nest) => format!("l{nest}"),
    };
    let mut s = match claim {
        Claim::Held => format!("c{l} {attempts} {depth} {}", url.as_str()),
        Claim::Pending(token) => format!("n{l} {attempts} {depth} {} {token}", url.as_str()),
    };
    if let Some(via) = via.filter(|v| !v.is_empty() && !v.contains(char::is_whitespace)) {
        s.push_str(" <");
        s.push_str(via);
    }
    s
}

/// `e` as stored again (given back, requeued), its claim now held.
pub fn encode_again(e: &Entry, attempts: u32) -> String {
    let s = encode_kind(
        &Claim::Held,
        attempts,
        e.depth,
        &e.url,
        e.listing.then_some(e.nest),
        e.via.as_deref(),
    );
    if e.waited {
        // `ck`: the flag's first letter stays the claim (see `encode_kind`).
        format!("ck{}", &s[1..])
    } else {
        s
    }
}

/// A leased entry: its claim, and the entry (its `seq` is the lease id).
pub fn decode_entry(id: u64, s: &str) -> Option<(Claim, Entry)> {
    let mut parts = s.splitn(5, ' ');
    let flag = parts.next()?;
    let attempts = parts.next()?.parse().ok()?;
    let depth = parts.next()?.parse().ok()?;
    let url = Url::parse(parts.next()?).ok()?;
    let mut token = "";
    let mut via = None;
    for field in parts.next().unwrap_or("").split(' ').filter(|f| !f.is_empty()) {
        match field.strip_prefix('<') {
            Some(v) => via = Some(v.to_string()),
            None => token = field,
        }
    }
    let (flag, kind) = flag.split_at_checked(1)?;
    // `k`: put back once behind its page's declared canonical.
    let (waited, kind) = match kind.strip_prefix('k') {
        Some(rest) => (true, rest),
        None => (false, kind),
    };
    let (listing, nest) = match kind.strip_prefix('l') {
        Some("") => (true, 0),
        Some(n) => (true, n.parse().ok()?),
        None if kind.is_empty() => (false, 0),
        None => return None,
    };
    let claim = match flag {
        "c" => Claim::Held,
        "n" => Claim::Pending(token.to_string()),
        _ => return None,
    };
    Some((
        claim,
        Entry {
            attempts,
            listing,
            nest,
            via,
            waited,
            ..Entry::new(id, url, depth)
        },
    ))
}

/// The URL as recorded by the claim of an entry with `token`.
pub fn claimed_as(url: &Url, token: &str) -> String {
    if token.is_empty() {
        url.to_string()
    } else {
        format!("{} {token}", url.as_str())
    }
}

/// Whether a URL recorded as `first` was claimed by the entry with
/// `token` (see [`Claim::Pending`]).
pub fn claimed_by(first: &str, token: &str) -> bool {
    !token.is_empty() && first.rsplit_once(' ').is_some_and(|(_, t)| t == token)
}

/// Tokens for new entries ([`Claim::Pending`]): a random prefix per
/// process and a counter, unique across workers and restarts.
#[derive(Debug)]
pub struct Tokens {
    prefix: u64,
    next: u64,
}

impl Tokens {
    pub fn new() -> Tokens {
        use std::hash::BuildHasher;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Tokens {
            prefix: std::hash::RandomState::new().hash_one((std::process::id(), nanos)),
            next: 0,
        }
    }

    /// A token never handed out before.
    pub fn next(&mut self) -> String {
        self.next += 1;
        format!("{:x}.{:x}", self.prefix, self.next)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn entries_read_back_and_bad_ones_are_refused() {
        let url = Url::parse("http://example.com:8080/a?b=1%20c").unwrap();
        let s = encode_entry(&Claim::Pending("ab.1".into()), 2, 7, &url);
        assert_eq!(s, "n 2 7 http://example.com:8080/a?b=1%20c ab.1");
        let (claim, e) = decode_entry(42, &s).unwrap();
        assert_eq!(claim, Claim::Pending("ab.1".into()));
        assert_eq!((e.seq, e.attempts, e.depth, e.url), (42, 2, 7, url.clone()));
        let held = encode_entry(&Claim::Held, 0, 1, &url);
        assert_eq!(decode_entry(1, &held).unwrap().0, Claim::Held);
        // An entry of an older crawl, without a token.
        let (claim, _) = decode_entry(1, "n 0 0 http://a/").unwrap();
        assert_eq!(claim, Claim::Pending(String::new()));
        // A claim is the entry's own only when it recorded the entry's token.
        let first = claimed_as(&url, "ab.1");
        assert!(claimed_by(&first, "ab.1"));
        assert!(!claimed_by(&first, "ab.2"));
        assert!(!claimed_by(url.as_str(), ""));
        assert!(!claimed_by(&claimed_as(&url, ""), ""));
        let mut tokens = Tokens::new();
        let (t1, t2) = (tokens.next(), tokens.next());
        assert_ne!(t1, t2);
        assert_ne!(Tokens::new().next(), t1, "another process's tokens differ");
        assert!(!t1.contains(' '));
        assert!(!e.listing);
        // A sitemap or feed: the same, flagged; the lease script's reclaim
        // rewrites the first letter only, which keeps the flag.
        let l = encode_kind(&Claim::Pending("ab.2".into()), 0, 3, &url, Some(0), None);
        assert_eq!(l, "nl 0 3 http://example.com:8080/a?b=1%20c ab.2");
        let (claim, e) = decode_entry(7, &l).unwrap();
        assert_eq!(
            (claim, e.listing, e.depth),
            (Claim::Pending("ab.2".into()), true, 3)
        );
        let again = encode_again(&e, 1);
        assert_eq!(again, "cl 1 3 http://example.com:8080/a?b=1%20c");
        let reclaimed = format!("c{}", &l[1..]);
        assert!(decode_entry(7, &reclaimed).unwrap().1.listing);
        // One found in another keeps its nest through the trip and a reclaim.
        let nested = encode_again(&Entry { nest: 4, ..e.clone() }, 0);
        assert_eq!(nested, "cl4 0 3 http://example.com:8080/a?b=1%20c");
        assert_eq!(decode_entry(7, &nested).unwrap().1.nest, 4);
        // What led to it rides at the end, with a token or without, and
        // through a requeue; a reclaimed `c` entry with it is left alone
        // by the lease script (4 spaces: "has a token").
        let page = "http://example.com:8080/list?p=2";
        let v = encode_kind(&Claim::Pending("ab.3".into()), 0, 2, &url, None, Some(page));
        assert_eq!(v, format!("n 0 2 {} ab.3 <{page}", url.as_str()));
        let (claim, e) = decode_entry(9, &v).unwrap();
        assert_eq!(
            (claim, e.via.as_deref()),
            (Claim::Pending("ab.3".into()), Some(page))
        );
        let again = encode_again(&e, 1);
        assert_eq!(again, format!("c 1 2 {} <{page}", url.as_str()));
        assert_eq!(again.matches(' ').count(), 4);
        let (claim, back) = decode_entry(9, &again).unwrap();
        assert_eq!(
            (claim, back.via.as_deref(), back.url.clone()),
            (Claim::Held, Some(page), url.clone())
        );
        assert_eq!(decode_entry(9, &held).unwrap().1.via, None);
        // Put back behind its canonical: `ck`, through a requeue and a
        // reclaim (which rewrites the first letter only).
        let waited = encode_again(
            &Entry {
                waited: true,
                ..back.clone()
            },
            0,
        );
        assert_eq!(waited, format!("ck 0 2 {} <{page}", url.as_str()));
        let (claim, w) = decode_entry(9, &waited).unwrap();
        assert_eq!(
            (claim, w.waited, w.listing, w.via.as_deref()),
            (Claim::Held, true, false, Some(page))
        );
        assert!(!back.waited);
        assert!(decode_entry(1, "clx 0 0 http://a/").is_none());
        assert!(decode_entry(1, "cx 0 0 http://a/").is_none());
        assert!(decode_entry(1, "xl 0 0 http://a/").is_none());
        assert!(decode_entry(1, "x 0 0 http://a/").is_none());
        assert!(decode_entry(1, "n zero 0 http://a/").is_none());
        assert!(decode_entry(1, "n 0 0 not a url").is_none());
        assert_eq!(host_key(&url), "http://example.com:8080");
        assert_eq!(
            host_key(&Url::parse("https://Example.com/x").unwrap()),
            "https://example.com:443"
        );
    }
}
