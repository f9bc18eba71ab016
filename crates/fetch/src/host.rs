//! Per-host politeness state: concurrency permits, request spacing, robots cache.

use std::time::Duration;

use parking_lot::Mutex;
use texting_robots::Robot;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;
use url::Url;

use crate::PauseReason;

/// Identity of a host for politeness: scheme + host + port, because two ports
/// on one machine are usually two servers with separate capacity, and robots.txt
/// is defined per origin. `None` for a URL without a host or a port.
pub(crate) fn host_key(url: &Url) -> Option<String> {
    url.host_str()?;
    url.port_or_known_default()?;
    Some(politeness_key(url))
}

/// The key politeness is kept under (`scheme://host:port`), for the
/// crawler's frontiers: the per-host queues and limits of a crawl are the
/// fetcher's hosts, one definition for all of them. A URL without a host
/// gets an empty host, without a known port port 0.
///
/// ```
/// let u = url::Url::parse("https://Example.com/a?b").unwrap();
/// assert_eq!(simcrawl_fetch::politeness_key(&u), "https://example.com:443");
/// ```
pub fn politeness_key(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// What robots.txt says about a host, as cached.
#[derive(Debug)]
pub(crate) enum Rules {
    /// No usable robots.txt (4xx, unparsable, too many redirects): crawl freely.
    AllowAll,
    /// Parsed rules for our agent.
    Robot(Box<Robot>),
    /// 5xx or a timeout: the whole host is off limits until the entry expires.
    Unavailable,
    /// The connection to robots.txt failed (refused, no such name) after
    /// the fetcher's retries: the host's pages fail at once until the entry
    /// expires.
    Unreachable,
}

#[derive(Debug)]
pub(crate) struct RobotsEntry {
    pub(crate) rules: Rules,
    pub(crate) expires: Instant,
}

#[derive(Debug)]
struct Gate {
    /// Earliest start time of the next request to this host.
    next_start: Instant,
    /// Crawl-delay from robots.txt, already capped.
    crawl_delay: Option<Duration>,
    /// Until when the host is waited for, and why (a Retry-After, a retry
    /// backoff): reported by [`crate::Fetcher::paused_hosts`].
    pause: Option<(Instant, PauseReason)>,
}

/// State shared by every request to one host.
#[derive(Debug)]
pub(crate) struct Host {
    pub(crate) key: String,
    permits: Semaphore,
    gate: Mutex<Gate>,
    /// Async mutex so that concurrent first requests to a host wait for a
    /// single robots.txt fetch instead of each fetching it.
    pub(crate) robots: tokio::sync::Mutex<Option<RobotsEntry>>,
    /// Its robots.txt's sitemaps were handed out ([`crate::Fetcher::take_sitemaps`]).
    pub(crate) sitemaps_taken: std::sync::atomic::AtomicBool,
}

impl Host {
    pub(crate) fn new(key: String, concurrency: usize) -> Self {
        Self {
            key,
            permits: Semaphore::new(concurrency.max(1)),
            gate: Mutex::new(Gate {
                next_start: Instant::now(),
                crawl_delay: None,
                pause: None,
            }),
            robots: tokio::sync::Mutex::new(None),
            sitemaps_taken: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Waits for a per-host slot, then for this host's turn. Returns the
    /// host permit, to be held until the response body has been read.
    ///
    /// The start time is reserved under the lock before sleeping, so N waiting
    /// tasks get N distinct, evenly spaced start times.
    pub(crate) async fn wait_turn(&self, base_delay: Duration) -> Option<SemaphorePermit<'_>> {
        // The semaphore is never closed, so this only fails in theory; a
        // missing permit then means no per-host cap rather than a deadlock.
        let permit = self.permits.acquire().await.ok();
        let start = {
            let mut g = self.gate.lock();
            let delay = g.crawl_delay.map_or(base_delay, |c| c.max(base_delay));
            let now = Instant::now();
            let start = g.next_start.max(now);
            g.next_start = start + delay;
            start
        };
        tokio::time::sleep_until(start).await;
        permit
    }

    /// Pushes the next allowed start back (server asked us to wait).
    pub(crate) fn hold_until(&self, until: Instant) {
        let mut g = self.gate.lock();
        if until > g.next_start {
            g.next_start = until;
        }
        drop(g);
        self.note_pause(until, PauseReason::RetryAfter);
    }

    /// Records that requests to this host wait until `until` (for reports
    /// only: [`Host::hold_until`] is what delays them).
    pub(crate) fn note_pause(&self, until: Instant, reason: PauseReason) {
        let mut g = self.gate.lock();
        if g.pause.is_none_or(|(t, _)| until > t) {
            g.pause = Some((until, reason));
        }
    }

    /// Why and for how long this host is waited for now, if it is: robots.txt
    /// unavailable or unreachable, a Retry-After, a retry backoff.
    pub(crate) fn paused(&self, now: Instant) -> Option<(Duration, PauseReason)> {
        let mut out = self
            .gate
            .lock()
            .pause
            .filter(|(t, _)| *t > now)
            .map(|(t, r)| (t - now, r));
        // A robots.txt being fetched holds the lock: not paused for that.
        if let Ok(robots) = self.robots.try_lock()
            && let Some(e) = robots.as_ref()
            && e.expires > now
        {
            let reason = match e.rules {
                Rules::Unavailable => Some(PauseReason::RobotsUnavailable),
                Rules::Unreachable => Some(PauseReason::Unreachable),
                _ => None,
            };
            if let Some(r) = reason
                && out.is_none_or(|(d, _)| e.expires - now > d)
            {
                out = Some((e.expires - now, r));
            }
        }
        out
    }

    pub(crate) fn set_crawl_delay(&self, delay: Option<Duration>) {
        self.gate.lock().crawl_delay = delay;
    }

    /// The robots.txt Crawl-delay in force (capped), if any.
    pub(crate) fn crawl_delay(&self) -> Option<Duration> {
        self.gate.lock().crawl_delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_includes_scheme_and_port() {
        let k = |s: &str| Url::parse(s).ok().and_then(|u| host_key(&u));
        assert_eq!(k("http://Example.com/a?b"), Some("http://example.com:80".into()));
        assert_eq!(k("https://example.com/"), Some("https://example.com:443".into()));
        assert_eq!(k("http://127.0.0.1:8080/x"), Some("http://127.0.0.1:8080".into()));
        assert_ne!(k("http://a.com/"), k("https://a.com/"));
        assert_eq!(k("mailto:x@y.z"), None);
    }

    #[tokio::test]
    async fn turns_are_spaced() {
        let h = Host::new("k".into(), 4);
        let d = Duration::from_millis(40);
        let t0 = Instant::now();
        let _a = h.wait_turn(d).await;
        let _b = h.wait_turn(d).await;
        let _c = h.wait_turn(d).await;
        assert!(t0.elapsed() >= Duration::from_millis(80));
    }

    #[tokio::test]
    async fn crawl_delay_raises_spacing() {
        let h = Host::new("k".into(), 4);
        h.set_crawl_delay(Some(Duration::from_millis(60)));
        let t0 = Instant::now();
        let _a = h.wait_turn(Duration::ZERO).await;
        let _b = h.wait_turn(Duration::ZERO).await;
        assert!(t0.elapsed() >= Duration::from_millis(60));
    }
}
