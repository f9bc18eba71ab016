//! robots.txt: fetching it (its redirects offered to the caller, a
//! connection that fails retried), caching it per host, and the verdict
//! for a URL, with the host's Crawl-delay taken from it.

use std::time::Duration;

use texting_robots::Robot;
use tokio::time::Instant;
use tracing::{debug, info, warn};
use url::Url;

use super::retry::backoff;
use super::{Fetcher, Outcome, resolve_location};
use crate::FetchError;
use crate::error;
use crate::exchange::{Exchange, Tape};
use crate::host::{Host, PauseReason, RobotsEntry, Rules};

/// robots.txt bytes read at most (Google's documented limit); the rest is ignored.
const ROBOTS_MAX_BYTES: usize = 500 * 1024;
/// Redirect hops followed for robots.txt itself (Google follows five).
const ROBOTS_MAX_REDIRECTS: usize = 5;

/// What robots.txt says about one URL.
pub(super) enum Verdict {
    Allowed,
    Disallowed,
    Unavailable(Duration),
    Unreachable(Duration, &'static str),
}

impl Fetcher {
    /// Whether robots.txt lets us fetch `url`, so the crawler can drop
    /// disallowed links before queueing them. Fetches and caches robots.txt
    /// if needed (its redirects offered to `allow_hop`, as in
    /// [`Fetcher::fetch`]); a host whose robots.txt is unavailable counts as
    /// disallowed for now. Always true when `respect_robots` is off; false
    /// for URLs that are not http(s).
    pub async fn robots_allowed(&self, url: &Url, allow_hop: &(dyn Fn(&Url) -> bool + Send + Sync)) -> bool {
        let Ok(host) = self.host(url) else {
            return false;
        };
        let tape = Tape::new(false);
        matches!(
            self.robots_verdict(&host, url, allow_hop, &tape).await,
            Verdict::Allowed
        )
    }

    pub(super) async fn robots_verdict(
        &self,
        host: &Host,
        url: &Url,
        allow_hop: &(dyn Fn(&Url) -> bool + Send + Sync),
        tape: &Tape,
    ) -> Verdict {
        let cfg = &self.inner.cfg;
        if !cfg.respect_robots {
            return Verdict::Allowed;
        }
        let mut guard = host.robots.lock().await;
        let now = Instant::now();
        let entry = match guard.take() {
            Some(e) if e.expires > now => e,
            _ => {
                let e = self.load_robots(host, allow_hop, tape).await;
                let delay = match &e.rules {
                    Rules::Robot(r) => crawl_delay(r, cfg.max_crawl_delay()),
                    _ => None,
                };
                host.set_crawl_delay(delay);
                e
            }
        };
        let verdict = match &entry.rules {
            Rules::AllowAll => Verdict::Allowed,
            Rules::Robot(r) => {
                if r.allowed(url.as_str()) {
                    Verdict::Allowed
                } else {
                    Verdict::Disallowed
                }
            }
            Rules::Unavailable => {
                Verdict::Unavailable(entry.expires.saturating_duration_since(Instant::now()))
            }
            Rules::Unreachable(cause) => {
                Verdict::Unreachable(entry.expires.saturating_duration_since(Instant::now()), cause)
            }
        };
        *guard = Some(entry);
        verdict
    }

    /// Fetches robots.txt for `host` and turns the answer into cached rules.
    /// Redirect hops obey `allow_hop`, like page redirects; a refused hop
    /// counts as no robots.txt (allow all), as too many redirects do.
    async fn load_robots(
        &self,
        host: &Host,
        allow_hop: &(dyn Fn(&Url) -> bool + Send + Sync),
        tape: &Tape,
    ) -> RobotsEntry {
        let cfg = &self.inner.cfg;
        let ttl = cfg.robots_ttl();
        let unavailable = || RobotsEntry {
            rules: Rules::Unavailable,
            expires: Instant::now() + cfg.robots_unavailable_retry(),
        };
        let allow_all = || RobotsEntry {
            rules: Rules::AllowAll,
            expires: Instant::now() + ttl,
        };
        let unreachable = |cause| RobotsEntry {
            rules: Rules::Unreachable(cause),
            expires: Instant::now() + cfg.robots_unavailable_retry(),
        };
        let Ok(mut robots_url) = Url::parse(&format!("{}/robots.txt", host.key)) else {
            return allow_all();
        };
        for _ in 0..=ROBOTS_MAX_REDIRECTS {
            let hop_host = match self.host(&robots_url) {
                Ok(h) => h,
                Err(_) => return allow_all(),
            };
            // A connection that cannot be made is retried like a page's
            // (the server may be restarting); after that the host is
            // unreachable.
            let mut retry = 0u32;
            let answer = loop {
                let a = self
                    .attempt(&hop_host, &robots_url, false, ROBOTS_MAX_BYTES, tape, None)
                    .await;
                if !matches!(a, Err((FetchError::Connect { .. }, _))) || retry >= cfg.retries {
                    break a;
                }
                let wait = backoff(cfg.backoff_base(), cfg.backoff_max(), retry);
                host.note_pause(Instant::now() + wait, PauseReason::Backoff);
                debug!(url = %robots_url, retry = retry + 1, wait_ms = wait.as_millis() as u64, "robots.txt: connection failed, retrying");
                tokio::time::sleep(wait).await;
                retry += 1;
            };
            match answer {
                Ok(Outcome::Page {
                    body,
                    status,
                    head,
                    truncated,
                    ..
                }) => {
                    let rules = match Robot::new(cfg.robots_agent(), &body) {
                        Ok(r) => Rules::Robot(Box::new(r)),
                        Err(e) => {
                            warn!(url = %robots_url, error = %e, "unparsable robots.txt, allowing all");
                            Rules::AllowAll
                        }
                    };
                    if let Some(head) = head {
                        tape.push(Exchange {
                            head: *head,
                            body,
                            truncated,
                        });
                    }
                    info!(url = %robots_url, status, "robots.txt loaded");
                    return RobotsEntry {
                        rules,
                        expires: Instant::now() + ttl,
                    };
                }
                Ok(Outcome::Redirect { location }) => match resolve_location(&robots_url, &location) {
                    Ok(next) if allow_hop(&next) => robots_url = next,
                    Ok(next) => {
                        info!(from = %robots_url, to = %next, "robots.txt redirect refused by caller, allowing all");
                        return allow_all();
                    }
                    Err(_) => return allow_all(),
                },
                Err((FetchError::Status { status, .. }, _))
                    if status != 429 && !(500..=599).contains(&status) =>
                {
                    info!(url = %robots_url, status, "no robots.txt, allowing all");
                    return allow_all();
                }
                Err((e @ FetchError::PrivateAddress { .. }, _)) => {
                    // The pages of this host fail the same way at connect
                    // time, each with its own private_address error.
                    info!(url = %robots_url, error = %e, "robots.txt host refused");
                    return allow_all();
                }
                Err((e @ FetchError::Connect { .. }, _)) => {
                    let cause = match &e {
                        FetchError::Connect { source, .. } => error::transport_cause(source),
                        _ => "connection failed",
                    };
                    warn!(url = %robots_url, error = %e, retries = retry,
                        wait_s = cfg.robots_unavailable_retry().as_secs(),
                        "robots.txt cannot be connected to: host unreachable, its pages fail as host_unreachable until robots.txt is tried again");
                    return unreachable(cause);
                }
                Err((e, _)) => {
                    warn!(url = %robots_url, error = %e, "robots.txt unavailable, pausing host");
                    return unavailable();
                }
            }
        }
        allow_all()
    }
}

fn crawl_delay(robot: &Robot, cap: Duration) -> Option<Duration> {
    let secs = robot.delay?;
    if !secs.is_finite() || secs <= 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f32(secs).map_or(cap, |d| d.min(cap)))
}

/// Fuzz harness (stable Rust, structure-aware) for robots.txt handling:
/// arbitrary files built from directives, odd values and raw bytes must
/// parse without panicking, answer every URL, and yield a Crawl-delay within
/// the cap. Long run: `SIMCRAWL_FUZZ_CASES=200000 cargo test --release -p
/// simcrawl-fetch robots_fuzz`.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod robots_fuzz {
    use super::*;
    use proptest::prelude::*;

    fn cases() -> u32 {
        std::env::var("SIMCRAWL_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256)
    }

    const LINES: &[&str] = &[
        "User-agent: *",
        "User-agent: simcrawl",
        "user-agent:SIMCRAWL/0.1",
        "User-agent: other",
        "Disallow: /",
        "Disallow:",
        "Disallow: /a",
        "Disallow: /*.php$",
        "Disallow: /%E4%B8%AD",
        "Disallow: /中文",
        "Allow: /a/b",
        "Allow: /$",
        "Allow: *",
        "Crawl-delay: 2",
        "Crawl-delay: 0.5",
        "Crawl-delay: -1",
        "Crawl-delay: NaN",
        "Crawl-delay: inf",
        "Crawl-delay: 1e30",
        "Crawl-delay: 99999999999999999999",
        "Crawl-delay:",
        "Sitemap: http://a.test/s.xml",
        "# comment",
        "",
        "Disallow /nocolon",
        ":",
        "Host: a.test",
        "\u{feff}User-agent: *",
        "Disallow: /a\0b",
        "Noindex: /x",
    ];

    fn robots_body() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            6 => prop::sample::select(LINES).prop_map(|l| l.as_bytes().to_vec()),
            2 => "[ -~]{0,40}".prop_map(String::into_bytes),
            1 => prop::collection::vec(any::<u8>(), 0..24),
        ];
        let sep = prop::sample::select(&["\n", "\r\n", "\r"][..]);
        prop::collection::vec((line, sep), 0..60).prop_map(|v| {
            v.into_iter()
                .flat_map(|(mut l, s)| {
                    l.extend_from_slice(s.as_bytes());
                    l
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn robots_files_parse_and_answer(body in robots_body(), path in "/[a-z0-9/%.*$?=中]{0,30}") {
            let cap = Duration::from_secs(30);
            if let Ok(robot) = Robot::new("simcrawl", &body) {
                let _ = robot.allowed(&format!("http://a.test{path}"));
                let _ = robot.allowed(&path);
                if let Some(d) = crawl_delay(&robot, cap) {
                    prop_assert!(d > Duration::ZERO && d <= cap, "delay {:?}", d);
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn crawl_delay_capped() {
        let cap = Duration::from_secs(30);
        let r = Robot::new("x", b"User-agent: *\nCrawl-delay: 2\n");
        let r = r.unwrap();
        assert_eq!(crawl_delay(&r, cap), Some(Duration::from_secs(2)));
        let r = Robot::new("x", b"User-agent: *\nCrawl-delay: 3600\n");
        let r = r.unwrap();
        assert_eq!(crawl_delay(&r, cap), Some(cap));
        let r = Robot::new("x", b"User-agent: *\nDisallow: /a\n");
        let r = r.unwrap();
        assert_eq!(crawl_delay(&r, cap), None);
    }
}
