//! Riding out a Redis that is away: which errors may pass once it is back
//! ([`is_transient`]), and [`retry`], which pauses the worker and tries
//! again with backoff (or ends it as [`RedisGone`] on a stop signal).

use std::time::{Duration, Instant};

use anyhow::Result;
use tracing::{info, warn};

/// Whether a Redis error means the connection is gone (so the operation
/// may succeed on a new one once the server is back).
pub(super) fn is_connection_error(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_timeout() || e.is_connection_refusal()
}

/// Replies of a server that is up but not serving yet: still loading its
/// data after a restart, or a replica or cluster in the middle of a
/// failover.
const NOT_READY: [&str; 4] = ["LOADING", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN"];

/// Whether `e` may pass once Redis is reachable again: a connection error
/// of the frontier's or of the store's, a server still loading its data
/// after a restart, or a store transaction that kept conflicting.
pub fn is_transient(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<redis::RedisError>()
            .is_some_and(|r| is_connection_error(r) || r.code().is_some_and(|code| NOT_READY.contains(&code)))
            || (c.downcast_ref::<simcrawl_dedup::Error>().is_some()
                && (NOT_READY.iter().any(|n| c.to_string().contains(n))
                    || c.to_string().contains("busy loading")))
            || c.downcast_ref::<simcrawl_dedup::Error>()
                .is_some_and(simcrawl_dedup::Error::is_transient)
            || c.downcast_ref::<std::io::Error>().is_some_and(|io| {
                matches!(
                    io.kind(),
                    std::io::ErrorKind::ConnectionRefused
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::BrokenPipe
                        | std::io::ErrorKind::TimedOut
                )
            })
    })
}

/// A stop signal arrived while Redis was unreachable: the crawl ends as
/// `redis_gone` (`crate::stats::Ended::RedisGone`), found by this type in
/// the error's chain.
#[derive(Debug, thiserror::Error)]
#[error(
    "{what}: stopped by a signal while Redis at {url} was unavailable (what was not acknowledged \
     is done again by another worker, or by this one restarted)"
)]
pub struct RedisGone {
    what: String,
    url: String,
}

/// First and longest wait between two attempts while Redis is away.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(2);
/// How often a retry's wait looks for a stop signal.
const RETRY_POLL: Duration = Duration::from_millis(50);

/// Runs `op` until it succeeds or fails for a reason that will not pass:
/// while Redis is unreachable the caller pauses here (logged once when it
/// starts and once when it ends), retrying with exponential backoff.
pub fn retry<T>(what: &str, url: &str, mut op: impl FnMut() -> Result<T>) -> Result<T> {
    let mut wait = RETRY_FIRST;
    let mut since: Option<Instant> = None;
    loop {
        match op() {
            Ok(v) => {
                if let Some(t) = since {
                    info!(
                        "Redis at {url} is back after {:.1} s: {what} done, crawl continues",
                        t.elapsed().as_secs_f64()
                    );
                }
                return Ok(v);
            }
            Err(e) if is_transient(&e) => {
                if since.is_none() {
                    warn!("Redis at {url} unavailable ({what}: {e:#}); pausing, retrying with backoff");
                    since = Some(Instant::now());
                }
                // A stop signal ends the wait: nothing unacknowledged is
                // lost (its leases expire and another worker, or this one
                // restarted, does the pages again; lines past the last
                // acknowledgement are cut).
                let until = Instant::now() + wait;
                while Instant::now() < until {
                    if crate::daemon::signals::stop_requested() {
                        return Err(e.context(RedisGone {
                            what: what.to_string(),
                            url: url.to_string(),
                        }));
                    }
                    std::thread::sleep(RETRY_POLL.min(until.saturating_duration_since(Instant::now())));
                }
                wait = (wait * 2).min(RETRY_MAX);
            }
            Err(e) => return Err(e.context(format!("{what} (Redis at {url})"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_loading_its_data_is_waited_for_other_errors_are_not() {
        let loading = simcrawl_dedup::Error::Storage(
            "Redis at redis://h/0: LOADING: Redis is loading the dataset in memory".into(),
        );
        assert!(is_transient(&anyhow::Error::new(loading).context("check pages")));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(is_transient(&anyhow::Error::new(refused)));
        let config = simcrawl_dedup::Error::Config("bands 0".into());
        assert!(!is_transient(&anyhow::Error::new(config)));
        assert!(!is_transient(&anyhow::anyhow!(
            "unexpected reply from the lease script"
        )));
    }
}
