//! Fetch settings, deserializable from the crawl's TOML config.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// When adaptive politeness runs (`autothrottle`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AutoThrottle {
    /// On only when `per_host_delay_ms` is left at its default.
    #[default]
    Auto,
    On,
    Off,
}

/// Every knob of the fetcher in one place, so the crawl config can embed it as a
/// `[fetch]` table. Durations are plain integer milliseconds (`*_ms`) so a
/// config file needs no duration syntax and no unit can be misread.
///
/// Unknown keys are rejected: a typo in a politeness setting must not silently
/// fall back to a default and hammer a site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FetchConfig {
    /// Sent on every request. Its first product token (before `/` or a space)
    /// is also the agent name matched against robots.txt groups.
    pub user_agent: String,
    /// Time allowed to establish a TCP (and TLS) connection.
    pub connect_timeout_ms: u64,
    /// Deadline for one request attempt, from connecting to the last body byte.
    pub total_timeout_ms: u64,
    /// Longest silence tolerated between two body chunks (also applied to each
    /// socket read, so a server that accepts and never answers is caught too).
    pub idle_body_timeout_ms: u64,
    /// Decoded body bytes kept; the rest is never read and `truncated` is set.
    /// Counting decoded bytes also stops compression bombs.
    pub max_body_bytes: usize,
    /// Memory budget for bodies: bytes of all bodies together beyond the
    /// first [`crate::BODY_FREE_BYTES`] of each, from the first byte read
    /// until the caller drops the page (after parsing it). A body that grows
    /// past its free share reserves room for the rest at once (its
    /// Content-Length, else `max_body_bytes`) and waits for it, holding no
    /// other share meanwhile, so bodies never wait for each other in a
    /// cycle. Bodies in memory are then bounded by
    /// `concurrency` x 256 KiB + this, whatever the pages; a single body is
    /// cut at 256 KiB + this. The time waited extends that attempt's
    /// `total_timeout_ms`. A body whose Content-Length is over 256 KiB
    /// waits before its first byte is read; one without waits mid-body,
    /// where a wait longer than `idle_body_timeout_ms` can time it out.
    pub max_bytes_in_flight: usize,
    /// Redirect hops followed before giving up with `too_many_redirects`.
    pub max_redirects: usize,
    /// Media types (without parameters, case-insensitive) whose bodies are
    /// downloaded. Empty means accept everything. A response without a
    /// Content-Type header is accepted, so the caller can sniff it.
    pub allowed_content_types: Vec<String>,
    /// Extra attempts after the first, for timeouts, connection errors, 429
    /// and 5xx. Other 4xx are final at once.
    pub retries: u32,
    /// Base of the exponential backoff (full jitter) between attempts.
    pub backoff_base_ms: u64,
    /// Cap for the backoff and for a server's Retry-After.
    pub backoff_max_ms: u64,
    /// Minimum time between the starts of two requests to the same host
    /// (scheme + host + port). A robots.txt Crawl-delay can only raise it.
    pub per_host_delay_ms: u64,
    /// Adaptive politeness (Scrapy's AutoThrottle, see `Throttle` in the
    /// fetcher): each host's delay follows its latency, 429/503 back it
    /// off, and a request with no answer (timeout, failed connection)
    /// counts as a slow error answer. `auto`: on when `per_host_delay_ms` is left at its default
    /// (a site that is not the user's own), off when it was set.
    pub autothrottle: AutoThrottle,
    /// Requests a host should be answering at once: the delay aimed at is
    /// its latency divided by this.
    pub autothrottle_target_concurrency: u32,
    /// The adaptive delay's ceiling.
    pub autothrottle_max_delay_ms: u64,
    /// Cap applied to a robots.txt Crawl-delay, so one site cannot park a
    /// crawl worker for hours.
    pub max_crawl_delay_ms: u64,
    /// Requests in flight to one host at once.
    pub per_host_concurrency: usize,
    /// Requests in flight overall. Only held while a request is actually on
    /// the wire, never while waiting for a host's politeness delay.
    pub concurrency: usize,
    /// Fetch and obey robots.txt (including Crawl-delay).
    pub respect_robots: bool,
    /// How long a fetched robots.txt is trusted before it is fetched again.
    pub robots_ttl_ms: u64,
    /// After a robots.txt answered 5xx or could not be reached, the host is
    /// treated as fully disallowed for this long, then robots.txt is retried.
    pub robots_unavailable_retry_ms: u64,
    /// Hosts whose politeness state (spacing, cached robots.txt) is kept at
    /// most; beyond it the least recently used host not in use is evicted
    /// (its robots.txt is fetched again if it comes back; a delay adaptive
    /// politeness raised and a hold still running are kept, in a side table
    /// of at most as many entries).
    pub max_hosts: usize,
    /// Hosts that are, or resolve to, private addresses (loopback, RFC 1918,
    /// link-local such as 169.254.169.254, unique-local... see
    /// [`crate::address::is_private`]): `refuse` (default:
    /// a link from the web never probes the operator's network; checked on
    /// the address actually connected to, so DNS rebinding is refused too)
    /// or `allow`. The crawler allows its seeds' own hosts when they are
    /// private.
    pub private_addresses: crate::address::PrivateAddresses,
    /// Hosts allowed whatever they resolve to (names or IP literals).
    pub allow_private_hosts: Vec<String>,
    /// Fixed DNS answers, like curl's `--resolve`: `{ "intranet.test" =
    /// ["10.0.0.7"] }`. Still subject to `private_addresses`.
    pub resolve: std::collections::BTreeMap<String, Vec<std::net::IpAddr>>,
    /// A forward proxy for every request (http and https), as
    /// `http://[user:password@]host:port`; `None` (default) connects
    /// directly. Proxies named by the environment (`HTTP_PROXY`,
    /// `HTTPS_PROXY`, `ALL_PROXY`) are ignored: through a proxy the client
    /// never resolves the target, so the private-address check on the
    /// address connected to cannot run.
    ///
    /// A proxy resolves target names itself. So with one, private targets
    /// are refused before the request: IP literals, and names that resolve
    /// here (or by `resolve`) to any private address. A name that does not
    /// resolve here is left to the proxy, as is a name whose answer changes
    /// between this check and the proxy's lookup: the proxy's own rules
    /// must keep it out of private networks. `resolve` only feeds that
    /// check; the proxy still connects where its own DNS says. The proxy's
    /// host may itself be private.
    pub proxy: Option<String>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            user_agent: concat!(
                "simcrawl/",
                env!("CARGO_PKG_VERSION"),
                " (+https://crates.io/crates/simcrawl)"
            )
            .to_string(),
            connect_timeout_ms: 10_000,
            total_timeout_ms: 30_000,
            idle_body_timeout_ms: 10_000,
            max_body_bytes: 10 * 1024 * 1024,
            max_bytes_in_flight: 32 * 1024 * 1024,
            max_redirects: 5,
            allowed_content_types: vec!["text/html".into(), "application/xhtml+xml".into()],
            retries: 3,
            backoff_base_ms: 500,
            backoff_max_ms: 30_000,
            per_host_delay_ms: 250,
            autothrottle: AutoThrottle::Auto,
            autothrottle_target_concurrency: 1,
            autothrottle_max_delay_ms: 60_000,
            max_crawl_delay_ms: 30_000,
            per_host_concurrency: 2,
            concurrency: 32,
            respect_robots: true,
            robots_ttl_ms: 24 * 60 * 60 * 1000,
            robots_unavailable_retry_ms: 60_000,
            max_hosts: 10_000,
            private_addresses: crate::address::PrivateAddresses::Refuse,
            allow_private_hosts: Vec::new(),
            resolve: std::collections::BTreeMap::new(),
            proxy: None,
        }
    }
}

impl FetchConfig {
    pub(crate) fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }
    pub(crate) fn total_timeout(&self) -> Duration {
        Duration::from_millis(self.total_timeout_ms)
    }
    pub(crate) fn idle_body_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_body_timeout_ms)
    }
    pub(crate) fn backoff_base(&self) -> Duration {
        Duration::from_millis(self.backoff_base_ms)
    }
    pub(crate) fn backoff_max(&self) -> Duration {
        Duration::from_millis(self.backoff_max_ms)
    }
    pub(crate) fn per_host_delay(&self) -> Duration {
        Duration::from_millis(self.per_host_delay_ms)
    }
    pub(crate) fn max_crawl_delay(&self) -> Duration {
        Duration::from_millis(self.max_crawl_delay_ms)
    }
    pub(crate) fn robots_ttl(&self) -> Duration {
        Duration::from_millis(self.robots_ttl_ms)
    }
    pub(crate) fn robots_unavailable_retry(&self) -> Duration {
        Duration::from_millis(self.robots_unavailable_retry_ms)
    }

    /// The robots.txt agent token: the user agent's first product name.
    pub(crate) fn robots_agent(&self) -> &str {
        self.user_agent
            .split(|c: char| c == '/' || c.is_whitespace())
            .find(|s| !s.is_empty())
            .unwrap_or("*")
    }

    /// Whether a Content-Type header value passes the filter.
    pub fn content_type_allowed(&self, content_type: Option<&str>) -> bool {
        if self.allowed_content_types.is_empty() {
            return true;
        }
        let Some(ct) = content_type else {
            return true;
        };
        let essence = ct.split(';').next().unwrap_or("").trim();
        if essence.is_empty() {
            return true;
        }
        self.allowed_content_types
            .iter()
            .any(|a| a.trim().eq_ignore_ascii_case(essence))
    }
}

impl FetchConfig {
    /// Whether adaptive politeness runs with these settings.
    pub fn autothrottle_on(&self) -> bool {
        match self.autothrottle {
            AutoThrottle::On => true,
            AutoThrottle::Off => false,
            AutoThrottle::Auto => self.per_host_delay_ms == FetchConfig::default().per_host_delay_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_type_filter() {
        let c = FetchConfig::default();
        assert!(c.content_type_allowed(Some("text/html; charset=UTF-8")));
        assert!(c.content_type_allowed(Some("TEXT/HTML")));
        assert!(c.content_type_allowed(Some("application/xhtml+xml")));
        assert!(c.content_type_allowed(None));
        assert!(!c.content_type_allowed(Some("application/pdf")));
        assert!(!c.content_type_allowed(Some("text/htmlx")));
        let all = FetchConfig {
            allowed_content_types: vec![],
            ..FetchConfig::default()
        };
        assert!(all.content_type_allowed(Some("image/png")));
    }

    #[test]
    fn robots_agent_is_first_token() {
        let c = FetchConfig::default();
        assert_eq!(c.robots_agent(), "simcrawl");
        let c = FetchConfig {
            user_agent: "Mozilla/5.0 (compatible; Foo)".into(),
            ..FetchConfig::default()
        };
        assert_eq!(c.robots_agent(), "Mozilla");
        let c = FetchConfig {
            user_agent: String::new(),
            ..FetchConfig::default()
        };
        assert_eq!(c.robots_agent(), "*");
    }
}
