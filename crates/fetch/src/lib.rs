//! Polite async HTTP fetching for simcrawl.
//!
//! One [`Fetcher`] owns a pooled HTTP client and all politeness state
//! (robots.txt cache, per-host spacing and concurrency, a global concurrency
//! cap). It knows nothing about deduplication or the crawl frontier: the
//! caller decides scope through the `allow_hop` callback given to
//! [`Fetcher::fetch`] for every redirect hop, robots.txt redirects included.
//!
//! Waiting is always per host: a task sleeping for its host's delay, or for
//! a retry backoff, holds no global permit, so a slow or dead host cannot
//! stall fetches from other hosts beyond the one global permit each of its
//! in-flight requests holds.
//!
//! robots.txt follows Google's documented handling: 2xx is parsed, 4xx
//! (including 401/403) means allow all, 429/5xx or a timeout means the
//! whole host is disallowed for `robots_unavailable_retry_ms`, after which
//! robots.txt is fetched again ([`FetchError::RobotsUnavailable`]: the
//! caller may wait and try again). A connection that cannot be made at all
//! (refused, no such name), still after the fetcher's `retries` with
//! backoff, is an answer rather than a silence: the host is unreachable,
//! and its pages fail at once with [`FetchError::HostUnreachable`] (not
//! transient) for the same period, instead of each waiting for it.
//! [`Fetcher::paused_hosts`] says which hosts are waited for, why and for
//! how long.
//!
//! ```no_run
//! # async fn demo() -> Result<(), simcrawl_fetch::FetchError> {
//! use simcrawl_fetch::{FetchConfig, Fetcher, Url};
//!
//! let fetcher = Fetcher::new(FetchConfig::default())?;
//! let url = Url::parse("https://example.com/").map_err(|e| simcrawl_fetch::FetchError::InvalidUrl {
//!     url: "https://example.com/".into(),
//!     reason: e.to_string(),
//! })?;
//! // Follow only redirects that stay on the same host.
//! let same_host = |hop: &Url| hop.host_str() == url.host_str();
//! match fetcher.fetch(&url, &same_host).await {
//!     Ok(page) => println!("{} bytes from {}", page.body.len(), page.final_url),
//!     Err(e) => println!("{}: {e}", e.kind()),
//! }
//! # Ok(())
//! # }
//! ```

pub mod address;
mod config;
mod error;
mod exchange;
mod host;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use rand::Rng;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue, LOCATION, RETRY_AFTER};
use texting_robots::Robot;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tracing::{debug, info, warn};
pub use url::Url;

pub use crate::address::PrivateAddresses;
pub use crate::config::{AutoThrottle, FetchConfig};
pub use crate::error::{FetchError, Rounded, transport_cause};
use crate::exchange::Tape;
pub use crate::exchange::{Exchange, ResponseHead};
pub use crate::host::politeness_key;
use crate::host::{Host, RobotsEntry, Rules, Throttle, host_key};

/// Bytes of each body read without touching the memory budget
/// (`max_bytes_in_flight`): nearly every page fits, and needs no
/// coordination; only bodies beyond it reserve a share.
pub const BODY_FREE_BYTES: usize = 256 * 1024;

/// Unit of the memory budget's semaphore (its permits count KiB, so a
/// budget of gigabytes fits in a `u32` request).
const BUDGET_UNIT: usize = 1024;

/// The share of `fetch.max_bytes_in_flight` a body holds: given back when the
/// last clone of its [`Fetched`] is dropped. Keep the page (or this) while
/// its body, or what is derived from it, is in memory.
#[derive(Debug, Clone, Default)]
pub struct BodyBudget(Option<Arc<tokio::sync::OwnedSemaphorePermit>>);

impl BodyBudget {
    /// Bytes of the budget held (0 for a body within [`BODY_FREE_BYTES`]).
    pub fn bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |p| p.num_permits() * BUDGET_UNIT)
    }
}

/// How often an attempt whose body waits for the memory budget looks again
/// at its deadline (which does not run while it waits).
const BUDGET_WAIT_POLL: Duration = Duration::from_millis(250);

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

/// Bytes of a sitemap or feed read at most ([`Fetcher::fetch_listing`]):
/// the sitemap protocol's 50 MB.
pub const LISTING_MAX_BYTES: usize = 50 * 1024 * 1024;

/// robots.txt bytes read at most (Google's documented limit); the rest is ignored.
const ROBOTS_MAX_BYTES: usize = 500 * 1024;
/// Redirect hops followed for robots.txt itself (Google follows five).
const ROBOTS_MAX_REDIRECTS: usize = 5;

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

/// A failed attempt, with the server's requested wait if it gave one.
type AttemptError = (FetchError, Option<Duration>);

enum Verdict {
    Allowed,
    Disallowed,
    Unavailable(Duration),
    Unreachable(Duration, &'static str),
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

/// Per-host state, least recently used first out once `max_hosts` is
/// reached. A host in use (some request holds its `Arc`) is never evicted,
/// so two states never exist for one host; the map may exceed the cap by
/// the number of hosts in use.
///
/// An evicted host's delay raised by adaptive politeness and its holds
/// still running (Retry-After, backoff, robots.txt unavailable) are kept in
/// `kept` ([`host::Kept`], a few dozen bytes each instead of a host's
/// robots rules and permits) and given back when the host returns: else
/// an overloaded host, idle for a while among many, would be asked at the
/// floor rate again, and a Retry-After ignored. `kept` holds at most
/// `max_hosts` entries, the longest evicted first out, so memory stays
/// bounded whatever the number of hosts.
struct HostMap {
    /// key -> (state, tick of last use).
    map: HashMap<String, (Arc<Host>, u64)>,
    /// tick of last use -> key: the eviction order.
    order: BTreeMap<u64, String>,
    tick: u64,
    evicted: u64,
    /// key -> (what its evicted state kept, tick of eviction).
    kept: HashMap<String, (host::Kept, u64)>,
    /// tick of eviction -> key: which kept entry goes first.
    kept_order: BTreeMap<u64, String>,
    /// The configured delay: a throttle delay above it is worth keeping.
    floor: Duration,
}

impl HostMap {
    fn get(&mut self, key: &str) -> Option<Arc<Host>> {
        let tick = self.tick + 1;
        let (h, used) = self.map.get_mut(key)?;
        self.order.remove(used);
        *used = tick;
        self.order.insert(tick, key.to_string());
        self.tick = tick;
        Some(Arc::clone(h))
    }

    fn new(floor: Duration) -> Self {
        HostMap {
            map: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
            evicted: 0,
            kept: HashMap::new(),
            kept_order: BTreeMap::new(),
            floor,
        }
    }

    fn insert(&mut self, key: String, h: Arc<Host>, cap: usize) {
        let now = Instant::now();
        while self.map.len() >= cap.max(1) {
            let idle = self
                .order
                .iter()
                .find(|(_, k)| self.map.get(*k).is_some_and(|(h, _)| Arc::strong_count(h) == 1))
                .map(|(t, k)| (*t, k.clone()));
            let Some((t, k)) = idle else { break };
            self.order.remove(&t);
            if let Some((gone, _)) = self.map.remove(&k)
                && let Some(kept) = gone.kept(self.floor, now)
            {
                self.keep(k, kept, cap);
            }
            self.evicted += 1;
        }
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.map.insert(key, (h, self.tick));
    }

    /// Keeps what an evicted host's state must not forget, the longest kept
    /// entry out first beyond `cap` entries.
    fn keep(&mut self, key: String, kept: host::Kept, cap: usize) {
        if let Some((_, t)) = self.kept.remove(&key) {
            self.kept_order.remove(&t);
        }
        while self.kept.len() >= cap.max(1) {
            let Some((_, oldest)) = self.kept_order.pop_first() else {
                break;
            };
            self.kept.remove(&oldest);
        }
        self.tick += 1;
        self.kept_order.insert(self.tick, key.clone());
        self.kept.insert(key, (kept, self.tick));
    }

    /// What the evicted state of `key`'s host kept, taken to restore it.
    fn take_kept(&mut self, key: &str) -> Option<host::Kept> {
        let (kept, t) = self.kept.remove(key)?;
        self.kept_order.remove(&t);
        Some(kept)
    }
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
    /// XML sitemap's ([`is_listing_type`]) even when
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
    /// (XML, gzip, text), up to [`LISTING_MAX_BYTES`].
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

    async fn robots_verdict(
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

    async fn request_with_retries(
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

    /// Refuses `url` when its host is private and not allowed: IP literals
    /// always (the resolver never sees them), and through a proxy names too
    /// (the proxy resolves them, not the resolver).
    async fn guard(&self, url: &Url) -> Result<(), FetchError> {
        let policy = &self.inner.policy;
        let checked = if self.inner.cfg.proxy.is_some() {
            policy.check_proxied(url, self.inner.cfg.connect_timeout()).await
        } else {
            policy.check(url)
        };
        checked.map_err(|reason| FetchError::PrivateAddress {
            url: url.clone(),
            reason: Box::new(reason),
        })
    }

    /// One HTTP request, after waiting for the host's turn. The host permit
    /// and the global permit are held until the body is read; the global one
    /// is taken only after the politeness wait.
    ///
    /// Every request passes here, robots.txt and its redirect hops included,
    /// so this is where a private target is refused before anything is sent.
    async fn attempt(
        &self,
        host: &Host,
        url: &Url,
        check_type: bool,
        max_bytes: usize,
        tape: &Tape,
        since: Option<&Validators>,
    ) -> Result<Outcome, AttemptError> {
        self.guard(url).await.map_err(|e| (e, None))?;
        let cfg = &self.inner.cfg;
        let base_delay = cfg.per_host_delay();
        let _host_permit = host.wait_turn(base_delay).await;
        let _global_permit = self.inner.global.acquire().await.ok();
        let asked = Instant::now();
        debug!(url = %url, "GET");
        let budget_wait_ms = AtomicU64::new(0);
        let budget_waiting = AtomicBool::new(false);
        let exchange = async {
            let mut request = self.inner.client.get(url.clone());
            if let Some(v) = since {
                if let Some(etag) = &v.etag {
                    request = request.header(reqwest::header::IF_NONE_MATCH, etag);
                }
                if let Some(lm) = &v.last_modified {
                    request = request.header(reqwest::header::IF_MODIFIED_SINCE, lm);
                }
            }
            let sent = Instant::now();
            let mut resp = request
                .send()
                .await
                .map_err(|e| (FetchError::from_reqwest(url, e, "waiting for response"), None))?;
            let status = resp.status().as_u16();
            if let Some(t) = &self.inner.throttle {
                host.throttle(t, sent.elapsed(), status);
                if status == 429 || status == 503 {
                    self.inner.throttled.fetch_add(1, Ordering::Relaxed);
                }
            }
            let head = tape
                .recording()
                .then(|| ResponseHead::of(&resp, url, &cfg.user_agent, ACCEPT_HTML));
            let limits = BodyLimits {
                max: max_bytes,
                idle: cfg.idle_body_timeout(),
                budget: &self.inner.budget,
                budget_units: self.inner.budget_units,
                waited_ms: &budget_wait_ms,
                waiting: &budget_waiting,
            };
            // A response that is not the page (a redirect, an error) is
            // kept whole when recording; a body that cannot be read is
            // kept as far as it came, marked truncated.
            let keep = async |resp: &mut reqwest::Response, head: Option<ResponseHead>| {
                if let Some(head) = head {
                    let (body, truncated) = match read_body(resp, url, &limits).await {
                        Ok((body, truncated, _budget)) => (body, truncated),
                        Err(_) => (Vec::new(), true),
                    };
                    tape.push(Exchange {
                        head,
                        body,
                        truncated,
                    });
                }
            };
            // Unchanged since the validators we sent: no body to read.
            if status == 304 && since.is_some() {
                let validators = Validators::of(resp.headers());
                return Ok(Outcome::Page {
                    status,
                    content_type: None,
                    body: Vec::new(),
                    truncated: false,
                    budget: BodyBudget::default(),
                    head: head.map(Box::new),
                    validators,
                    link: Vec::new(),
                });
            }
            if matches!(status, 301 | 302 | 303 | 307 | 308)
                && let Some(loc) = resp.headers().get(LOCATION)
            {
                let location = String::from_utf8_lossy(loc.as_bytes()).trim().to_string();
                keep(&mut resp, head).await;
                return Ok(Outcome::Redirect { location });
            }
            if !(200..=299).contains(&status) {
                let retry_after = if status == 429 || (500..=599).contains(&status) {
                    retry_after(resp.headers())
                } else {
                    None
                };
                keep(&mut resp, head).await;
                return Err((
                    FetchError::Status {
                        url: url.clone(),
                        status,
                    },
                    retry_after,
                ));
            }
            let content_type = resp
                .headers()
                .get(CONTENT_TYPE)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            if check_type
                && !cfg.content_type_allowed(content_type.as_deref())
                && !(self.inner.accept_listings.load(Ordering::Relaxed)
                    && content_type.as_deref().is_some_and(is_listing_type))
            {
                return Err((
                    FetchError::ContentType {
                        url: url.clone(),
                        content_type: content_type.unwrap_or_default(),
                    },
                    None,
                ));
            }
            let validators = Validators::of(resp.headers());
            let link: Vec<String> = resp
                .headers()
                .get_all(reqwest::header::LINK)
                .iter()
                .filter_map(|v| v.to_str().ok().map(str::to_string))
                .collect();
            let (body, truncated, budget) =
                read_body(&mut resp, url, &limits).await.map_err(|e| (e, None))?;
            Ok(Outcome::Page {
                status,
                content_type,
                body,
                truncated,
                budget,
                head: head.map(Box::new),
                validators,
                link,
            })
        };
        // The deadline moves by the time the body waited for its share of
        // the memory budget: a wait on this crawl's own memory is not the
        // server's slowness.
        tokio::pin!(exchange);
        let mut deadline = Instant::now() + cfg.total_timeout();
        let result = loop {
            tokio::select! {
                r = &mut exchange => break r,
                () = tokio::time::sleep_until(deadline) => {
                    if budget_waiting.load(Ordering::Relaxed) {
                        deadline += BUDGET_WAIT_POLL;
                        continue;
                    }
                    let extra = budget_wait_ms.swap(0, Ordering::Relaxed);
                    if extra == 0 {
                        break Err((
                            FetchError::Timeout {
                                url: url.clone(),
                                phase: "(total deadline)",
                            },
                            None,
                        ));
                    }
                    deadline += Duration::from_millis(extra);
                }
            }
        };
        // No answer (a timeout, a failed connection) is a slow answer for
        // adaptive politeness, not none: see `Throttle::failed`. A refusal
        // comes at once: it counts as slow as the connect timeout.
        if let (Some(t), Err((e, _))) = (&self.inner.throttle, &result)
            && e.is_unanswered()
        {
            let waited = asked.elapsed().max(cfg.connect_timeout());
            let delay = host.throttle_failed(t, waited);
            debug!(url = %url, error = %e, delay_ms = delay.as_millis() as u64, "no answer: host delay raised");
        }
        result
    }
}

/// What bounds one body: its own size, the silence between chunks, and the
/// shared memory budget.
struct BodyLimits<'a> {
    max: usize,
    idle: Duration,
    budget: &'a Arc<Semaphore>,
    budget_units: usize,
    /// Time spent waiting for the budget, added to the attempt's deadline.
    waited_ms: &'a AtomicU64,
    /// Set while the body waits for the budget.
    waiting: &'a AtomicBool,
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
async fn read_body(
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

/// Retry-After as delay-seconds or an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// Exponential backoff with full jitter (uniform in `[0, min(max, base*2^n)]`),
/// so retries from many workers do not synchronise.
fn backoff(base: Duration, max: Duration, retry: u32) -> Duration {
    let factor = 1u32.checked_shl(retry.min(20)).unwrap_or(u32::MAX);
    let ceiling = base.saturating_mul(factor).min(max);
    let ms = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(rand::rng().random_range(0..=ms))
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

    fn cache_robots(h: &Host) {
        // A robots.txt valid for a day: this host is never "idle".
        *h.robots.try_lock().unwrap() = Some(RobotsEntry {
            rules: Rules::AllowAll,
            expires: Instant::now() + Duration::from_secs(86_400),
        });
    }

    #[test]
    fn host_map_is_capped_even_when_every_host_has_robots_rules() {
        let f = Fetcher::new(FetchConfig::default()).unwrap();
        for i in 0..12_000 {
            let url = Url::parse(&format!("http://h{i}.example/")).unwrap();
            cache_robots(&f.host(&url).unwrap());
        }
        let n = f.inner.hosts.lock().map.len();
        assert!(n <= 10_000, "{n} hosts cached");
        assert_eq!(f.hosts_evicted(), 2_000);
    }

    #[test]
    fn host_eviction_is_lru_and_spares_hosts_in_use() {
        let f = Fetcher::new(FetchConfig {
            max_hosts: 3,
            ..FetchConfig::default()
        })
        .unwrap();
        let u = |i: u32| Url::parse(&format!("http://h{i}.example/")).unwrap();
        let held = f.host(&u(0)).unwrap(); // in use all along
        f.host(&u(1)).unwrap();
        f.host(&u(2)).unwrap();
        f.host(&u(1)).unwrap(); // 1 used more recently than 2
        f.host(&u(3)).unwrap(); // evicts 2: 0 is in use, 1 is recent
        let keys = |f: &Fetcher| {
            let mut k: Vec<String> = f.inner.hosts.lock().map.keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(
            keys(&f),
            [
                "http://h0.example:80",
                "http://h1.example:80",
                "http://h3.example:80"
            ]
        );
        assert_eq!(f.hosts_evicted(), 1);
        assert!(Arc::ptr_eq(&held, &f.host(&u(0)).unwrap()));
    }

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

    #[test]
    fn rejects_non_http() {
        let u = Url::parse("ftp://a.com/").unwrap();
        assert_eq!(check_url(&u).err().map(|e| e.kind()), Some("invalid_url"));
    }
}
