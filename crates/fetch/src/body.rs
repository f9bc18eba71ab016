//! Reading response bodies within limits: the per-body byte cap, the idle
//! timeout between chunks, and the shared memory budget
//! (`max_bytes_in_flight`) a large body takes its share of ([`BodyBudget`]);
//! and which content types are feeds or sitemaps ([`is_listing_type`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;
use tracing::debug;
use url::Url;

use crate::FetchError;

/// Bytes of each body read without touching the memory budget
/// (`max_bytes_in_flight`): nearly every page fits, and needs no
/// coordination; only bodies beyond it reserve a share.
pub const BODY_FREE_BYTES: usize = 256 * 1024;

/// Unit of the memory budget's semaphore (its permits count KiB, so a
/// budget of gigabytes fits in a `u32` request).
pub(crate) const BUDGET_UNIT: usize = 1024;

/// The share of `fetch.max_bytes_in_flight` a body holds: given back when the
/// last clone of its [`Fetched`](crate::Fetched) is dropped. Keep the page
/// (or this) while its body, or what is derived from it, is in memory.
#[derive(Debug, Clone, Default)]
pub struct BodyBudget(Option<Arc<tokio::sync::OwnedSemaphorePermit>>);

impl BodyBudget {
    /// Bytes of the budget held (0 for a body within [`BODY_FREE_BYTES`]).
    pub fn bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |p| p.num_permits() * BUDGET_UNIT)
    }
}

/// Whether `content_type` is one feeds and XML sitemaps are served with:
/// RSS, Atom, or XML (`application/rss+xml`, `application/atom+xml`,
/// `application/xml`, `text/xml`, with parameters or not).
pub fn is_listing_type(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    matches!(
        essence.as_str(),
        "application/rss+xml"
            | "application/atom+xml"
            | "application/xml"
            | "text/xml"
            | "application/rdf+xml"
    )
}

/// Bytes of a sitemap or feed read at most ([`Fetcher::fetch_listing`](crate::Fetcher::fetch_listing)):
/// the sitemap protocol's 50 MB.
pub const LISTING_MAX_BYTES: usize = 50 * 1024 * 1024;

/// What bounds one body: its own size, the silence between chunks, and the
/// shared memory budget.
pub(crate) struct BodyLimits<'a> {
    pub(crate) max: usize,
    pub(crate) idle: Duration,
    pub(crate) budget: &'a Arc<Semaphore>,
    pub(crate) budget_units: usize,
    /// Time spent waiting for the budget, added to the attempt's deadline.
    pub(crate) waited_ms: &'a AtomicU64,
    /// Set while the body waits for the budget.
    pub(crate) waiting: &'a AtomicBool,
}

/// Reads the decoded body chunk by chunk, stopping at `limits.max` bytes.
/// Because reqwest decompresses before we count, a small compressed body that
/// inflates past the limit is stopped too.
///
/// Past [`BODY_FREE_BYTES`] the body reserves its share of the memory budget
/// for the rest at once (its Content-Length, else the limit; the whole
/// budget at most, which then cuts it) and waits for it holding no share,
/// so no two bodies can wait for each other; what it did not use is given
/// back once it is read.
pub(crate) async fn read_body(
    resp: &mut reqwest::Response,
    url: &Url,
    limits: &BodyLimits<'_>,
) -> Result<(Vec<u8>, bool, BodyBudget), FetchError> {
    let hint = resp
        .content_length()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let mut limit = limits.max;
    let mut share: Option<tokio::sync::OwnedSemaphorePermit> = None;
    let mut body = Vec::with_capacity(hint.min(limit).min(BODY_FREE_BYTES));
    let finish = |body: Vec<u8>, truncated: bool, share: Option<tokio::sync::OwnedSemaphorePermit>| {
        let share = share.map(|mut p| {
            // Give back what the body did not use.
            let used = body.len().saturating_sub(BODY_FREE_BYTES).div_ceil(BUDGET_UNIT);
            let spare = p.num_permits().saturating_sub(used);
            drop(p.split(spare));
            Arc::new(p)
        });
        (body, truncated, BodyBudget(share))
    };
    loop {
        // Before the first chunk when the Content-Length announces a large
        // body (reqwest's read timeout does not run before the body is
        // polled, so the wait cannot time the body out), else once the free
        // part is read.
        if share.is_none()
            && limit > BODY_FREE_BYTES
            && (hint > BODY_FREE_BYTES || body.len() >= BODY_FREE_BYTES)
        {
            let expected = if hint > body.len() { hint } else { limit };
            let units = expected
                .min(limit)
                .saturating_sub(BODY_FREE_BYTES)
                .div_ceil(BUDGET_UNIT)
                .clamp(1, limits.budget_units);
            let Ok(n) = u32::try_from(units) else {
                return Ok(finish(body, true, share));
            };
            debug!(url = %url, bytes = units * BUDGET_UNIT, "large body: waiting for a share of max_bytes_in_flight");
            // The semaphore is never closed; without a share the body is cut
            // at its free part rather than read past the budget.
            let waiting = Instant::now();
            limits.waiting.store(true, Ordering::Relaxed);
            let acquired = Arc::clone(limits.budget).acquire_many_owned(n).await;
            limits.waiting.store(false, Ordering::Relaxed);
            let waited = u64::try_from(waiting.elapsed().as_millis()).unwrap_or(u64::MAX);
            limits.waited_ms.fetch_add(waited, Ordering::Relaxed);
            let Ok(p) = acquired else {
                return Ok(finish(body, true, share));
            };
            limit = limit.min(BODY_FREE_BYTES + units * BUDGET_UNIT);
            body.reserve(expected.min(limit).saturating_sub(body.len()));
            share = Some(p);
        }
        let chunk = match tokio::time::timeout(limits.idle, resp.chunk()).await {
            Err(_) => {
                return Err(FetchError::Timeout {
                    url: url.clone(),
                    phase: "reading body (idle)",
                });
            }
            Ok(Err(e)) if e.is_timeout() => {
                return Err(FetchError::Timeout {
                    url: url.clone(),
                    phase: "reading body",
                });
            }
            Ok(Err(e)) => {
                return Err(FetchError::Body {
                    url: url.clone(),
                    source: e,
                });
            }
            Ok(Ok(None)) => return Ok(finish(body, false, share)),
            Ok(Ok(Some(c))) => c,
        };
        let room = limit.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            debug!(url = %url, limit, "body truncated at limit");
            return Ok(finish(body, true, share));
        }
        body.extend_from_slice(&chunk);
    }
}
