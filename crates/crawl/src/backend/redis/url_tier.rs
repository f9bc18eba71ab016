//! What the shared backend reads of the URL tier outside a claim: which
//! links (and redirect targets) it has not seen, and the seeds offered to
//! the shared frontier on that basis.

use anyhow::Result;
use simcrawl_dedup::{Prefetch, Store};
use url::Url;

use super::SharedTiers;
use super::frontier::{Ack, Claim, RedisFrontier, Tokens, encode_entry, host_key, retry};
use crate::frontier::Candidate;

/// Offers the seeds to the shared frontier: each one the URL tier has not
/// seen is queued (every worker offers them; the claim at lease time keeps
/// one copy). Returns how many were queued.
pub(super) fn enqueue_seeds(
    d: &SharedTiers,
    f: &RedisFrontier,
    seeds: &[Url],
    worker: &str,
    cap: usize,
) -> Result<u64> {
    let candidates: Vec<Candidate> = seeds
        .iter()
        .filter_map(|s| Candidate::new(d.canonicalizer(), s.clone()))
        .collect();
    let mut tokens = Tokens::new();
    let fresh = retry("check the seeds", f.url(), || unseen(d, &candidates))?;
    let links: Vec<(String, String)> = candidates
        .iter()
        .zip(fresh)
        .filter(|(_, new)| *new)
        .map(|(c, _)| {
            (
                host_key(c.url()),
                encode_entry(&Claim::Pending(tokens.next()), 0, 0, c.url()),
            )
        })
        .collect();
    let n = links.len() as u64;
    let ack = Ack::held(Vec::new(), links, Vec::new());
    retry("queue the seeds", f.url(), || f.ack_held(worker, cap, &ack))?;
    Ok(n)
}

/// Seconds since the epoch before which the URL tier forgets (the dedup
/// window), 0 without one.
fn url_cutoff(d: &SharedTiers) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.as_secs());
    d.config().window.map_or(0, |w| now.saturating_sub(w.as_secs()))
}

/// Which of `links` the URL tier has not seen (a read, one round trip).
pub(super) fn unseen(d: &SharedTiers, links: &[Candidate]) -> Result<Vec<bool>> {
    let digests: Vec<u128> = links
        .iter()
        .map(|c| u128::from_be_bytes(c.canonical().digest()))
        .collect();
    unseen_digests(d, &digests)
}

/// Which of the canonical URL `digests` the URL tier has not seen (a read,
/// one round trip).
pub(super) fn unseen_digests(d: &SharedTiers, digests: &[u128]) -> Result<Vec<bool>> {
    if digests.is_empty() {
        return Ok(Vec::new());
    }
    let cutoff = url_cutoff(d);
    Ok(d.store().read(|t| {
        t.prefetch(&Prefetch {
            urls: digests.to_vec(),
            ..Prefetch::default()
        })?;
        digests
            .iter()
            .map(|&dg| Ok(t.url(dg)?.is_none_or(|r| r.first_seen < cutoff)))
            .collect()
    })?)
}
