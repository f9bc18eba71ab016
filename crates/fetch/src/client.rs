//! The [`Fetcher`]: its shared client and state, its configuration as
//! built ([`Fetcher::new`]), and the fetch entry points, which follow
//! redirects hop by hop through robots.txt ([`robots`]), retries
//! ([`retry`]) and single requests ([`attempt`]); and what a fetch returns
//! ([`Fetched`], [`Validators`]).

mod attempt;
mod hosts;
mod retry;
mod robots;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tracing::debug;
use url::Url;

use crate::body::{BUDGET_UNIT, BodyBudget};
use crate::exchange::{Exchange, ResponseHead, Tape};
use crate::host::{Host, PausedHost, Rules, Throttle, host_key};
use crate::{FetchConfig, FetchError, address};
use hosts::HostMap;
use robots::Verdict;

/// A successfully fetched page (final status 2xx).
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL the caller asked for.
    pub url: Url,
    /// Where the body actually came from, after redirects; the URL to resolve
    /// relative links against.
    pub final_url: Url,
    /// Final HTTP status (2xx).
    pub status: u16,
    /// Content-Type header of the final response, as sent.
    pub content_type: Option<String>,
    /// Decoded (decompressed) body, at most `max_body_bytes` long.
    pub body: Vec<u8>,
    /// True when the body was cut at `max_body_bytes`; the page is then
    /// incomplete and the caller may choose to skip or flag it.
    pub truncated: bool,
    /// Every redirect target followed, in order (the last one equals
    /// `final_url`); empty when the first response was the page.
    pub redirects: Vec<Url>,
    /// HTTP requests made, counting retries and redirect hops (not robots.txt).
    pub attempts: u32,
    /// The body's share of the memory budget (`max_bytes_in_flight`).
    pub budget: BodyBudget,
    /// Wall time of the whole fetch, including politeness waits and backoff.
    pub elapsed: Duration,
    /// The final response's head (its body is `body`), when the fetcher
    /// records exchanges ([`Fetcher::set_recording`]).
    pub head: Option<Box<ResponseHead>>,
    /// The final response's validators, for a later conditional request.
    pub validators: Validators,
    /// The final response's `Link` header values, as sent: a crawler reads
    /// the page's declared canonical there (`rel="canonical"`) as in its
    /// HTML.
    pub link: Vec<String>,
}

/// What a server said identifies the version of a page it sent (`ETag`,
/// `Last-Modified`): sent back on a revisit as `If-None-Match` and
/// `If-Modified-Since`, so an unchanged page costs a 304 and no body.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Validators {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Validators {
    /// Whether there is anything to send.
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }

    fn of(headers: &HeaderMap) -> Validators {
        let get = |name| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        Validators {
            etag: get(reqwest::header::ETAG),
            last_modified: get(reqwest::header::LAST_MODIFIED),
        }
    }
}

/// What one request attempt produced, when it was not an error.
enum Outcome {
    Page {
        status: u16,
        content_type: Option<String>,
        body: Vec<u8>,
        truncated: bool,
        budget: BodyBudget,
        /// When recording.
        head: Option<Box<ResponseHead>>,
        validators: Validators,
        link: Vec<String>,
    },
    Redirect {
        location: String,
    },
}

/// The `Accept` header of every request.
const ACCEPT_HTML: &str = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5";

struct Inner {
    cfg: FetchConfig,
    client: reqwest::Client,
    /// Which addresses may be connected to (also inside `client`'s resolver).
    policy: Arc<address::Policy>,
    global: Semaphore,
    /// `max_bytes_in_flight`, in [`BUDGET_UNIT`]s.
    budget: Arc<Semaphore>,
    budget_units: usize,
    hosts: Mutex<HostMap>,
    /// Exchanges are recorded for an archive ([`Fetcher::set_recording`]).
    record: AtomicBool,
    /// Feed and sitemap content types are read as pages are
    /// ([`Fetcher::set_accept_listings`]).
    accept_listings: AtomicBool,
    /// Adaptive politeness, when on.
    throttle: Option<Throttle>,
    /// 429 and 503 answers that backed a host off.
    throttled: AtomicU64,
}

/// The politeness-aware HTTP fetcher. Clones share one connection pool and
/// one set of per-host limits, so hand a clone to every crawl worker.
#[derive(Clone)]
pub struct Fetcher {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("cfg", &self.inner.cfg)
            .field("hosts", &self.inner.hosts.lock().map.len())
            .finish()
    }
}

impl Fetcher {
    /// Builds the shared client. Fails only if the TLS backend or the user
    /// agent cannot be set up.
    pub fn new(cfg: FetchConfig) -> Result<Self, FetchError> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_HTML));
        let policy = address::Policy::new(
            cfg.private_addresses,
            cfg.allow_private_hosts.iter().cloned(),
            cfg.resolve.clone(),
        );
        let (policy, builder) = match &cfg.proxy {
            // Not even the environment's proxy: through a proxy the resolver,
            // and so the private-address check, never sees the target.
            None => (policy, reqwest::Client::builder().no_proxy()),
            Some(p) => {
                let url = proxy_url(p)?;
                let host = url.host_str().unwrap_or_default().to_string();
                let proxy = reqwest::Proxy::all(url).map_err(|e| FetchError::InvalidProxy {
                    reason: error_chain(&e.without_url()),
                })?;
                (
                    policy.through_proxy(&host),
                    reqwest::Client::builder().proxy(proxy),
                )
            }
        };
        let policy = Arc::new(policy);
        let client = builder
            .dns_resolver(address::GuardedResolver {
                policy: Arc::clone(&policy),
            })
            .user_agent(cfg.user_agent.clone())
            .default_headers(headers)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(cfg.connect_timeout())
            .timeout(cfg.total_timeout())
            .read_timeout(cfg.idle_body_timeout())
            .pool_max_idle_per_host(cfg.per_host_concurrency.max(1))
            .gzip(true)
            .brotli(true)
            .deflate(true)
            .build()
            .map_err(FetchError::Client)?;
        let throttle = throttle_of(&cfg);
        let per_host_delay = cfg.per_host_delay();
        let global = Semaphore::new(cfg.concurrency.max(1));
        let budget_units = (cfg.max_bytes_in_flight / BUDGET_UNIT).clamp(1, Semaphore::MAX_PERMITS);
        Ok(Self {
            inner: Arc::new(Inner {
                cfg,
                client,
                policy,
                global,
                budget: Arc::new(Semaphore::new(budget_units)),
                budget_units,
                hosts: Mutex::new(HostMap::new(per_host_delay)),
                record: AtomicBool::new(false),
                accept_listings: AtomicBool::new(false),
                throttle,
                throttled: AtomicU64::new(0),
            }),
        })
    }

    /// Records every HTTP exchange from now on (for all clones): the heads
    /// of final responses in [`Fetched::head`], and what else each fetch
    /// received in [`Fetcher::fetch_recorded`]'s list. Error and redirect
    /// bodies are then read (bounded by `max_body_bytes`) to be kept.
    pub fn set_recording(&self, on: bool) {
        self.inner.record.store(on, Ordering::Relaxed);
    }

    /// Reads the body of an answer whose content type is a feed's or an
    /// XML sitemap's ([`is_listing_type`](crate::is_listing_type)) even when
    /// `allowed_content_types` does not name it, so that a seed or link
    /// that turns out to be a feed is read from this one request (the
    /// caller tells it from a page) instead of being refused and fetched
    /// again as a listing.
    pub fn set_accept_listings(&self, on: bool) {
        self.inner.accept_listings.store(on, Ordering::Relaxed);
    }

    /// The configuration this fetcher runs with.
    pub fn config(&self) -> &FetchConfig {
        &self.inner.cfg
    }

    /// Fetches `url` politely: robots.txt check, per-host spacing and
    /// concurrency, retries with backoff, and manual redirect following.
    ///
    /// Every redirect target is first offered to `allow_hop`, so the caller
    /// can apply its scope rules and URL-dedup tier; a refusal ends the fetch
    /// with [`FetchError::RedirectRefused`]. Each hop is checked against its
    /// own host's robots.txt and politeness.
    pub async fn fetch(
        &self,
        url: &Url,
        allow_hop: &(dyn Fn(&Url) -> bool + Send + Sync),
    ) -> Result<Fetched, FetchError> {
        self.fetch_recorded(url, allow_hop).await.0
    }

    /// [`Fetcher::fetch_recorded`] as a revisit: the request for `url`
    /// carries `If-None-Match` / `If-Modified-Since` from `since` (what the
    /// last fetch of it stored), and a `304 Not Modified` answer is a
    /// [`Fetched`] with status 304 and no body rather than an error.
    pub async fn fetch_conditional(
        &self,
        url: &Url,
        allow_hop: &(dyn Fn(&Url) -> bool + Send + Sync),
        since: &Validators,
    ) -> (Result<Fetched, FetchError>, Vec<Exchange>) {
        let tape = Tape::new(self.inner.record.load(Ordering::Relaxed));
        let result = self.fetch_on(url, allow_hop, &tape, Some(since), false).await;
        (result, tape.take())
    }

    /// [`Fetcher::fetch_recorded`] for a sitemap or a feed: any content type
    /// (XML, gzip, text), up to [`LISTING_MAX_BYTES`](crate::LISTING_MAX_BYTES).
    pub async fn fetch_listing(
        &self,
        url: &Url,
        allow_hop: &(dyn Fn(&Url) -> bool + Send + Sync),
    ) -> (Result<Fetched, FetchError>, Vec<Exchange>) {
        let tape = Tape::new(self.inner.record.load(Ordering::Relaxed));
        let result = self.fetch_on(url, allow_hop, &tape, None, true).await;
        (result, tape.take())
    }

    /// The sitemaps the robots.txt of `url`'s host declares (`Sitemap:`
    /// lines; empty when it has none or is not read), handed out once per
    /// host: `None` before its robots.txt is loaded, and after the first
    /// call that returned them. A crawler calls it after each fetch and
    /// queues what it gets.
    pub fn take_sitemaps(&self, url: &Url) -> Option<Vec<String>> {
        let key = host_key(url)?;
        let host = self.inner.hosts.lock().get(&key)?;
        let list = {
            let guard = host.robots.try_lock().ok()?;
            match guard.as_ref().map(|e| &e.rules) {
                Some(Rules::Robot(r)) => r.sitemaps.clone(),
                Some(Rules::AllowAll) => Vec::new(),
                None if !self.inner.cfg.respect_robots => Vec::new(),
                _ => return None,
            }
        };
        if host.sitemaps_taken.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(list)
    }

    /// [`Fetcher::fetch`], and the exchanges it made besides the final
    /// page's, in order (robots.txt loaded for it, redirect hops, attempts
    /// answered with an error status), whatever the result: empty unless
    /// the fetcher records ([`Fetcher::set_recording`]).
    pub async fn fetch_recorded(
        &self,
        url: &Url,
        allow_hop: &(dyn Fn(&Url) -> bool + Send + Sync),
    ) -> (Result<Fetched, FetchError>, Vec<Exchange>) {
        let tape = Tape::new(self.inner.record.load(Ordering::Relaxed));
        let result = self.fetch_on(url, allow_hop, &tape, None, false).await;
        (result, tape.take())
    }

    async fn fetch_on(
        &self,
        url: &Url,
        allow_hop: &(dyn Fn(&Url) -> bool + Send + Sync),
        tape: &Tape,
        since: Option<&Validators>,
        listing: bool,
    ) -> Result<Fetched, FetchError> {
        let started = Instant::now();
        let cfg = &self.inner.cfg;
        let mut current = url.clone();
        let mut redirects = Vec::new();
        let mut attempts = 0u32;
        loop {
            if let Err(reason) = self.inner.policy.check(&current) {
                return Err(FetchError::PrivateAddress {
                    url: current,
                    reason: Box::new(reason),
                });
            }
            let host = self.host(&current)?;
            match self.robots_verdict(&host, &current, allow_hop, tape).await {
                Verdict::Allowed => {}
                Verdict::Disallowed => {
                    debug!(url = %current, "disallowed by robots.txt");
                    return Err(FetchError::RobotsDisallowed { url: current });
                }
                Verdict::Unavailable(retry_in) => {
                    return Err(FetchError::RobotsUnavailable {
                        url: current,
                        retry_in,
                    });
                }
                Verdict::Unreachable(retry_in, cause) => {
                    return Err(FetchError::HostUnreachable {
                        url: current,
                        cause,
                        retry_in,
                    });
                }
            }
            // Validators belong to the URL asked for, not to a redirect hop.
            let cond = since.filter(|_| redirects.is_empty());
            match self
                .request_with_retries(&host, &current, &mut attempts, tape, cond, listing)
                .await?
            {
                Outcome::Page {
                    status,
                    content_type,
                    body,
                    truncated,
                    budget,
                    head,
                    validators,
                    link,
                } => {
                    debug!(url = %url, final_url = %current, status, bytes = body.len(), truncated, "fetched");
                    return Ok(Fetched {
                        url: url.clone(),
                        final_url: current,
                        status,
                        content_type,
                        body,
                        truncated,
                        redirects,
                        attempts,
                        elapsed: started.elapsed(),
                        budget,
                        head,
                        validators,
                        link,
                    });
                }
                Outcome::Redirect { location } => {
                    let target = resolve_location(&current, &location)?;
                    if redirects.len() >= cfg.max_redirects {
                        return Err(FetchError::TooManyRedirects {
                            url: current,
                            limit: cfg.max_redirects,
                        });
                    }
                    if !allow_hop(&target) {
                        debug!(from = %current, to = %target, "redirect refused by caller");
                        return Err(FetchError::RedirectRefused {
                            url: current,
                            target: Box::new(target),
                        });
                    }
                    debug!(from = %current, to = %target, "following redirect");
                    redirects.push(target.clone());
                    current = target;
                }
            }
        }
    }

    /// The Crawl-delay that `url`'s host's robots.txt asks for (capped at
    /// `max_crawl_delay_ms`), once that robots.txt was fetched; `None`
    /// when it asks for none or was not fetched yet. Crawlers that share
    /// one host schedule among several processes publish it, so every
    /// process spaces its requests by it.
    pub fn crawl_delay(&self, url: &Url) -> Option<Duration> {
        let key = host_key(url)?;
        let host = self.inner.hosts.lock().get(&key)?;
        host.crawl_delay()
    }

    /// Answers (429, 503) that made adaptive politeness back a host off.
    pub fn throttled(&self) -> u64 {
        self.inner.throttled.load(Ordering::Relaxed)
    }

    /// Hosts whose state was evicted because `max_hosts` was reached.
    pub fn hosts_evicted(&self) -> u64 {
        self.inner.hosts.lock().evicted
    }

    /// The hosts waited for right now (robots.txt unavailable or
    /// unreachable, a Retry-After, a retry backoff), the longest wait first:
    /// what a crawl that seems idle is waiting for.
    pub fn paused_hosts(&self) -> Vec<PausedHost> {
        let now = Instant::now();
        let (hosts, mut out): (Vec<Arc<Host>>, Vec<PausedHost>) = {
            let map = self.inner.hosts.lock();
            // Evicted hosts still held: their hold is kept, so they are
            // waited for just the same.
            let kept = map
                .kept
                .iter()
                .filter_map(|(key, (k, _))| {
                    k.paused(now).map(|(left, reason)| PausedHost {
                        host: key.clone(),
                        reason,
                        left,
                    })
                })
                .collect();
            (map.map.values().map(|(h, _)| Arc::clone(h)).collect(), kept)
        };
        out.extend(hosts.iter().filter_map(|h| {
            h.paused(now).map(|(left, reason)| PausedHost {
                host: h.key.clone(),
                reason,
                left,
            })
        }));
        out.sort_by(|a, b| b.left.cmp(&a.left).then_with(|| a.host.cmp(&b.host)));
        out
    }

    /// Finds or creates the politeness state for `url`'s host.
    fn host(&self, url: &Url) -> Result<Arc<Host>, FetchError> {
        check_url(url)?;
        let key = host_key(url).ok_or_else(|| FetchError::InvalidUrl {
            url: url.to_string(),
            reason: "no host or port".into(),
        })?;
        let mut hosts = self.inner.hosts.lock();
        if let Some(h) = hosts.get(&key) {
            return Ok(h);
        }
        let concurrency = self.inner.cfg.per_host_concurrency;
        let h = Arc::new(match hosts.take_kept(&key) {
            Some(kept) => Host::restored(key.clone(), concurrency, kept),
            None => Host::new(key.clone(), concurrency),
        });
        hosts.insert(key, Arc::clone(&h), self.inner.cfg.max_hosts);
        Ok(h)
    }
}

/// Adaptive politeness with `cfg`'s settings, when on.
fn throttle_of(cfg: &FetchConfig) -> Option<Throttle> {
    cfg.autothrottle_on().then(|| Throttle {
        start: cfg.per_host_delay(),
        max: Duration::from_millis(cfg.autothrottle_max_delay_ms).max(cfg.per_host_delay()),
        target_concurrency: cfg.autothrottle_target_concurrency.max(1),
    })
}

/// `fetch.proxy` as a URL; `host:port` alone means an http proxy, as in
/// reqwest and curl.
fn proxy_url(proxy: &str) -> Result<Url, FetchError> {
    let invalid = |reason: String| FetchError::InvalidProxy { reason };
    let url = match Url::parse(proxy) {
        Ok(u) if u.has_host() => u,
        // "proxy.internal:3128" parses as scheme "proxy.internal".
        Ok(_) | Err(url::ParseError::RelativeUrlWithoutBase) => {
            Url::parse(&format!("http://{proxy}")).map_err(|e| invalid(e.to_string()))?
        }
        Err(e) => return Err(invalid(e.to_string())),
    };
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!("scheme {:?}, not http or https", url.scheme())));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("no host".into()));
    }
    Ok(url)
}

/// An error and its sources, for errors (like reqwest's builder errors)
/// whose own message says little.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(err) = cur {
        out.push_str(": ");
        out.push_str(&err.to_string());
        cur = err.source();
    }
    out
}

fn check_url(url: &Url) -> Result<(), FetchError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::InvalidUrl {
            url: url.to_string(),
            reason: format!("unsupported scheme {:?}", url.scheme()),
        });
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(FetchError::InvalidUrl {
            url: url.to_string(),
            reason: "no host".into(),
        });
    }
    Ok(())
}

/// Resolves a Location header against the URL that sent it; the fragment is
/// dropped because it never reaches the server.
fn resolve_location(base: &Url, location: &str) -> Result<Url, FetchError> {
    let mut target = base.join(location).map_err(|e| FetchError::InvalidUrl {
        url: location.to_string(),
        reason: format!("bad Location header from {base}: {e}"),
    })?;
    target.set_fragment(None);
    check_url(&target).map_err(|_| FetchError::InvalidUrl {
        url: target.to_string(),
        reason: format!("redirect from {base} to a non-http(s) URL"),
    })?;
    Ok(target)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{AutoThrottle, PauseReason};

    fn throttled_cfg(max_hosts: usize) -> FetchConfig {
        FetchConfig {
            max_hosts,
            per_host_delay_ms: 100,
            autothrottle: AutoThrottle::On,
            autothrottle_max_delay_ms: 5_000,
            connect_timeout_ms: 1_000,
            retries: 0,
            respect_robots: false,
            allow_private_hosts: vec!["127.0.0.1".into()],
            ..FetchConfig::default()
        }
    }

    /// A connection that fails (refused: nothing listens on the port)
    /// raises the host's delay as an answer as slow as the connect timeout
    /// would: halfway from 100 ms to 1 s. Without adaptive politeness
    /// nothing is kept.
    #[tokio::test]
    async fn a_refused_connection_raises_the_hosts_delay() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let url = Url::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
        let f = Fetcher::new(throttled_cfg(10)).unwrap();
        let e = f.fetch(&url, &|_: &Url| true).await.unwrap_err();
        assert_eq!(e.kind(), "connect", "{e}");
        let delay = f.host(&url).unwrap().throttle_delay();
        assert_eq!(delay, Some(Duration::from_millis(550)));
        let off = Fetcher::new(FetchConfig {
            autothrottle: AutoThrottle::Off,
            ..throttled_cfg(10)
        })
        .unwrap();
        let _ = off.fetch(&url, &|_: &Url| true).await;
        assert_eq!(off.host(&url).unwrap().throttle_delay(), None);
    }

    /// A host evicted from the state table (`max_hosts`) comes back with
    /// the delay adaptive politeness raised and the Retry-After hold it
    /// was under: eviction must not make an overloaded host fast again.
    #[tokio::test]
    async fn eviction_keeps_a_raised_delay_and_a_retry_after_hold() {
        let f = Fetcher::new(throttled_cfg(2)).unwrap();
        let u = |i: u32| Url::parse(&format!("http://h{i}.example/")).unwrap();
        let t = f.inner.throttle.unwrap();
        // h0 answered slowly: (100 ms + 4 s) / 2.
        let raised = f.host(&u(0)).unwrap().throttle(&t, Duration::from_secs(4), 200);
        assert_eq!(raised, Duration::from_millis(2_050));
        // h1 said Retry-After: 60 s.
        f.host(&u(1))
            .unwrap()
            .hold_until(Instant::now() + Duration::from_secs(60));
        for i in 2..6 {
            f.host(&u(i)).unwrap();
        }
        assert!(f.hosts_evicted() >= 2, "{}", f.hosts_evicted());
        assert!(!f.inner.hosts.lock().map.contains_key("http://h0.example:80"));
        assert_eq!(f.host(&u(0)).unwrap().throttle_delay(), Some(raised));
        let h1 = f.host(&u(1)).unwrap();
        let (left, reason) = h1.paused(Instant::now()).unwrap();
        assert_eq!(reason, PauseReason::RetryAfter);
        assert!(left > Duration::from_secs(55), "{left:?}");
        assert!(
            f.paused_hosts().iter().any(|p| p.host == "http://h1.example:80"),
            "{:?}",
            f.paused_hosts()
        );
        // The hold is enforced, not only reported: no turn within 200 ms.
        let turn = tokio::time::timeout(Duration::from_millis(200), h1.wait_turn(Duration::ZERO)).await;
        assert!(turn.is_err(), "h1 got a turn during its Retry-After");
        // A host at rest is forgotten as before: h2 was evicted with nothing
        // to keep and comes back fresh.
        for i in 6..10 {
            f.host(&u(i)).unwrap();
        }
        assert_eq!(f.host(&u(2)).unwrap().throttle_delay(), None);
        // Bounded: however many raised hosts are evicted, at most
        // `max_hosts` are kept, the longest evicted out first.
        for i in 100..200 {
            f.host(&u(i)).unwrap().throttle_failed(&t, Duration::from_secs(1));
        }
        let hosts = f.inner.hosts.lock();
        assert_eq!(hosts.kept.len(), 2);
        assert!(
            hosts.kept.contains_key("http://h197.example:80"),
            "{:?}",
            hosts.kept.keys()
        );
    }

    #[test]
    fn location_resolution() {
        let base = Url::parse("http://a.com/x/y?q#f").unwrap();
        let t = resolve_location(&base, "../z#frag").map(|u| u.to_string());
        assert_eq!(t.ok().as_deref(), Some("http://a.com/z"));
        let t = resolve_location(&base, "https://b.com/").map(|u| u.to_string());
        assert_eq!(t.ok().as_deref(), Some("https://b.com/"));
        let e = resolve_location(&base, "mailto:a@b.c");
        assert_eq!(e.err().map(|e| e.kind()), Some("invalid_url"));
    }

    #[test]
    fn rejects_non_http() {
        let u = Url::parse("ftp://a.com/").unwrap();
        assert_eq!(check_url(&u).err().map(|e| e.kind()), Some("invalid_url"));
    }
}
