//! Retries: a request attempted again while its error is retryable and
//! `retries` allows, after the server's Retry-After (which holds the whole
//! host) or an exponential backoff with full jitter.

use std::time::{Duration, SystemTime};

use rand::Rng;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use tokio::time::Instant;
use tracing::warn;
use url::Url;

use super::{Fetcher, Outcome, Validators};
use crate::exchange::Tape;
use crate::host::{Host, PauseReason};
use crate::{FetchError, LISTING_MAX_BYTES};

impl Fetcher {
    /// Requests `url` (a page, or a listing when `listing`), retrying as
    /// the error and `retries` allow; `attempts` counts every request made.
    pub(super) async fn request_with_retries(
        &self,
        host: &Host,
        url: &Url,
        attempts: &mut u32,
        tape: &Tape,
        since: Option<&Validators>,
        listing: bool,
    ) -> Result<Outcome, FetchError> {
        let cfg = &self.inner.cfg;
        let mut retry = 0u32;
        loop {
            *attempts += 1;
            let (err, retry_after) = match self
                .attempt(
                    host,
                    url,
                    !listing,
                    if listing {
                        LISTING_MAX_BYTES
                    } else {
                        cfg.max_body_bytes
                    },
                    tape,
                    since,
                )
                .await
            {
                Ok(o) => return Ok(o),
                Err(f) => f,
            };
            if !err.is_retryable() || retry >= cfg.retries {
                return Err(err);
            }
            let wait = match retry_after {
                Some(d) => {
                    let d = d.min(cfg.backoff_max());
                    // Everyone fetching from this host should respect it, not
                    // just this task.
                    host.hold_until(Instant::now() + d);
                    d
                }
                None => {
                    let wait = backoff(cfg.backoff_base(), cfg.backoff_max(), retry);
                    host.note_pause(Instant::now() + wait, PauseReason::Backoff);
                    wait
                }
            };
            warn!(url = %url, error = %err, retry = retry + 1, wait_ms = wait.as_millis() as u64, "retrying");
            tokio::time::sleep(wait).await;
            retry += 1;
        }
    }
}

/// Retry-After as delay-seconds or an HTTP date.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// Exponential backoff with full jitter (uniform in `[0, min(max, base*2^n)]`),
/// so retries from many workers do not synchronise.
pub(super) fn backoff(base: Duration, max: Duration, retry: u32) -> Duration {
    let factor = 1u32.checked_shl(retry.min(20)).unwrap_or(u32::MAX);
    let ceiling = base.saturating_mul(factor).min(max);
    let ms = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(rand::rng().random_range(0..=ms))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn backoff_is_bounded() {
        let base = Duration::from_millis(100);
        let max = Duration::from_millis(1000);
        for retry in 0..40 {
            let d = backoff(base, max, retry);
            assert!(d <= max, "{d:?}");
            let cap = base.saturating_mul(1 << retry.min(20)).min(max);
            assert!(d <= cap, "{d:?} > {cap:?}");
        }
    }

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(RETRY_AFTER, HeaderValue::from_static(" 7 "));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        let future = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        h.insert(RETRY_AFTER, HeaderValue::from_str(&future).unwrap());
        let d = retry_after(&h).unwrap_or_default();
        assert!(
            d > Duration::from_secs(100) && d <= Duration::from_secs(120),
            "{d:?}"
        );
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }
}
