//! Per-host politeness state: concurrency permits, request spacing, robots
//! cache, and why a host is waited for ([`PauseReason`], [`PausedHost`]).

use std::time::Duration;

use parking_lot::Mutex;
use texting_robots::Robot;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;
use url::Url;

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

/// Why a host is waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseReason {
    /// robots.txt answered 429/5xx or timed out: the host's pages wait.
    RobotsUnavailable,
    /// robots.txt could not be connected to: the host's pages fail.
    Unreachable,
    /// The server asked for a pause (Retry-After).
    RetryAfter,
    /// A request is waiting before its retry.
    Backoff,
}

impl PauseReason {
    /// A stable short label (`robots_unavailable`, `unreachable`,
    /// `retry_after`, `backoff`), for metrics labels.
    pub fn as_str(self) -> &'static str {
        match self {
            PauseReason::RobotsUnavailable => "robots_unavailable",
            PauseReason::Unreachable => "unreachable",
            PauseReason::RetryAfter => "retry_after",
            PauseReason::Backoff => "backoff",
        }
    }

    /// What it means, for people.
    pub fn describe(self) -> &'static str {
        match self {
            PauseReason::RobotsUnavailable => "robots.txt unavailable",
            PauseReason::Unreachable => "unreachable, its pages fail",
            PauseReason::RetryAfter => "Retry-After",
            PauseReason::Backoff => "retry backoff",
        }
    }
}

/// A host the fetcher is waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PausedHost {
    /// `scheme://host:port`.
    pub host: String,
    pub reason: PauseReason,
    /// Time left before the host is tried again.
    pub left: Duration,
}

impl std::fmt::Display for PausedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, {} s left)",
            self.host,
            self.reason.describe(),
            self.left.as_secs_f64().ceil()
        )
    }
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
    /// expires. With why ([`crate::error::transport_cause`]), for the
    /// pages' errors.
    Unreachable(&'static str),
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
    /// The delay adaptive politeness keeps for this host (`None`: off, or
    /// no response yet), see [`Throttle`].
    throttle: Option<Duration>,
    /// Crawl-delay from robots.txt, already capped.
    crawl_delay: Option<Duration>,
    /// Until when the host is waited for, and why (a Retry-After, a retry
    /// backoff): reported by [`crate::Fetcher::paused_hosts`].
    pause: Option<(Instant, PauseReason)>,
}

/// What an evicted host's state must not forget ([`Host::kept`]): the
/// delay adaptive politeness raised and the holds still running (a
/// Retry-After or backoff, robots.txt unavailable or unreachable). Small
/// (no robots rules, no permits), so the fetcher keeps a bounded table of
/// them beside its hosts and gives each back when its host returns.
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    throttle: Option<Duration>,
    next_start: Instant,
    pause: Option<(Instant, PauseReason)>,
    /// An unavailable or unreachable robots.txt, until it is tried again.
    robots: Option<(Instant, PauseReason)>,
}

impl Kept {
    /// Why and for how long the host is waited for, as [`Host::paused`]
    /// says it for a host in the table.
    pub(crate) fn paused(&self, now: Instant) -> Option<(Duration, PauseReason)> {
        [self.pause, self.robots]
            .into_iter()
            .flatten()
            .filter(|(t, _)| *t > now)
            .max_by_key(|(t, _)| *t)
            .map(|(t, r)| (t - now, r))
    }
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
                throttle: None,
                crawl_delay: None,
                pause: None,
            }),
            robots: tokio::sync::Mutex::new(None),
            sitemaps_taken: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// A host back after its state was evicted, with what that state had
    /// to keep ([`Host::kept`]).
    pub(crate) fn restored(key: String, concurrency: usize, kept: Kept) -> Self {
        let h = Self::new(key, concurrency);
        {
            let mut g = h.gate.lock();
            g.throttle = kept.throttle;
            g.next_start = g.next_start.max(kept.next_start);
            g.pause = kept.pause;
        }
        if let Some((expires, reason)) = kept.robots
            && let Ok(mut robots) = h.robots.try_lock()
        {
            let rules = if reason == PauseReason::Unreachable {
                // Why is not kept through an eviction.
                Rules::Unreachable("connection failed")
            } else {
                Rules::Unavailable
            };
            *robots = Some(RobotsEntry { rules, expires });
        }
        h
    }

    /// What must outlive this host's state if it is evicted: its delay when
    /// adaptive politeness raised it above `floor` (else the next request
    /// would go at the floor rate to a host that was too slow for it), and
    /// any hold still running at `now` (a Retry-After would be ignored,
    /// an unavailable robots.txt asked again at once). `None` when the
    /// host is at rest: nothing is lost by forgetting it.
    pub(crate) fn kept(&self, floor: Duration, now: Instant) -> Option<Kept> {
        let g = self.gate.lock();
        let robots = self.robots.try_lock().ok().and_then(|r| {
            let e = r.as_ref()?;
            let reason = match e.rules {
                Rules::Unavailable => PauseReason::RobotsUnavailable,
                Rules::Unreachable(_) => PauseReason::Unreachable,
                _ => return None,
            };
            (e.expires > now).then_some((e.expires, reason))
        });
        let raised = g.throttle.is_some_and(|t| t > floor);
        let held = g.next_start > now || g.pause.is_some_and(|(t, _)| t > now) || robots.is_some();
        (raised || held).then(|| Kept {
            throttle: g.throttle.filter(|_| raised),
            next_start: g.next_start,
            pause: g.pause.filter(|(t, _)| *t > now),
            robots,
        })
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
            let delay = g.throttle.map_or(delay, |t| t.max(delay));
            let now = Instant::now();
            let start = g.next_start.max(now);
            g.next_start = start + delay;
            start
        };
        tokio::time::sleep_until(start).await;
        permit
    }

    /// Adapts this host's delay to a response that took `latency` to come
    /// ([`Throttle::next`]); returns the new delay.
    pub(crate) fn throttle(&self, t: &Throttle, latency: Duration, status: u16) -> Duration {
        let mut g = self.gate.lock();
        let next = t.next(g.throttle, latency, status);
        g.throttle = Some(next);
        next
    }

    /// The delay adaptive politeness keeps for this host (`None`: off, or
    /// nothing answered yet).
    #[cfg(test)]
    pub(crate) fn throttle_delay(&self) -> Option<Duration> {
        self.gate.lock().throttle
    }

    /// Adapts this host's delay to a request that got no answer after
    /// `waited`: it timed out, or its connection failed
    /// ([`Throttle::failed`]); returns the new delay.
    pub(crate) fn throttle_failed(&self, t: &Throttle, waited: Duration) -> Duration {
        let mut g = self.gate.lock();
        let next = t.failed(g.throttle, waited);
        g.throttle = Some(next);
        next
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
                Rules::Unreachable(_) => Some(PauseReason::Unreachable),
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

/// Adaptive politeness, as Scrapy's AutoThrottle: each response's latency
/// says how fast the server answers, and the host's delay moves halfway to
/// `latency / target_concurrency` (so about `target_concurrency` requests
/// are in the server's hands at once), never below the configured floor
/// (`per_host_delay_ms`, and robots.txt's Crawl-delay, applied by the
/// gate) nor above `max`. An error answer never lowers the delay; a 429 or
/// 503 doubles it (and its Retry-After holds the host besides). A request
/// that got no answer at all (a timeout, a failed connection) counts as an
/// error answer as slow as the wait it cost, at least the connect timeout
/// ([`Throttle::failed`]). It comes down again, halfway at a time, as fast
/// answers come.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Throttle {
    pub(crate) start: Duration,
    pub(crate) max: Duration,
    pub(crate) target_concurrency: u32,
}

impl Throttle {
    pub(crate) fn next(&self, current: Option<Duration>, latency: Duration, status: u16) -> Duration {
        let current = current.unwrap_or(self.start);
        if status == 429 || status == 503 {
            return (current * 2).max(self.start).min(self.max);
        }
        let target = latency / self.target_concurrency.max(1);
        let next = (current + target) / 2;
        let next = if (200..400).contains(&status) {
            next
        } else {
            next.max(current)
        };
        next.min(self.max)
    }

    /// The delay after a request that got no answer: it timed out, or its
    /// connection failed (refused, reset), after `waited`. Scrapy's
    /// AutoThrottle sees only responses, so an overloaded server that
    /// stops answering would keep being asked at the rate its last fast
    /// answers set. Here it counts as an error answer that took `waited`
    /// (the caller passes at least the connect timeout: a refusal takes no
    /// time, yet says the server is not coping): the delay moves halfway to
    /// `waited / target_concurrency`, never down, within `max`.
    pub(crate) fn failed(&self, current: Option<Duration>, waited: Duration) -> Duration {
        // Not a 2xx/3xx: `next` never lowers the delay for it.
        self.next(current, waited, 0)
    }
}

#[cfg(test)]
mod throttle_tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_delay_follows_latency_and_backs_off_on_429_and_503() {
        let t = Throttle {
            start: ms(1000),
            max: ms(60_000),
            target_concurrency: 1,
        };
        // A server answering in 200 ms: the delay comes down towards it.
        let mut d = None;
        for _ in 0..12 {
            d = Some(t.next(d, ms(200), 200));
        }
        let d = d.unwrap_or_default();
        assert!(d >= ms(200) && d < ms(201), "{d:?}");
        // Two at once: half the latency.
        let t2 = Throttle {
            target_concurrency: 2,
            ..t
        };
        assert_eq!(t2.next(Some(ms(100)), ms(200), 200), ms(100));
        // 429 and 503 double it, within the maximum.
        assert_eq!(t.next(Some(ms(300)), ms(10), 503), ms(1000));
        assert_eq!(t.next(Some(ms(4000)), ms(10), 429), ms(8000));
        assert_eq!(t.next(Some(ms(50_000)), ms(10), 429), ms(60_000));
        // An error answer never lowers it; a slow one raises it.
        assert_eq!(t.next(Some(ms(1000)), ms(10), 500), ms(1000));
        assert_eq!(t.next(Some(ms(1000)), ms(3000), 200), ms(2000));
    }

    #[test]
    fn no_answer_counts_as_a_slow_error_answer() {
        let t = Throttle {
            start: ms(1000),
            max: ms(60_000),
            target_concurrency: 4,
        };
        // The first request to a host timed out after 30 s: from the
        // floor, halfway to 30 s / 4.
        assert_eq!(t.failed(None, ms(30_000)), ms(4_250));
        assert_eq!(t.failed(Some(ms(4_250)), ms(30_000)), ms(5_875));
        // Never down, never above the maximum.
        assert_eq!(t.failed(Some(ms(20_000)), ms(30_000)), ms(20_000));
        assert_eq!(t.failed(Some(ms(59_000)), ms(900_000)), ms(60_000));
        // Fast answers bring it down again.
        assert_eq!(t.next(Some(ms(5_875)), ms(500), 200), ms(3_000));
    }
}
