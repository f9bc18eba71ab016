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
mod body;
mod client;
mod config;
mod error;
mod exchange;
mod host;

pub use url::Url;

pub use crate::address::PrivateAddresses;
pub use crate::body::{BODY_FREE_BYTES, BodyBudget, LISTING_MAX_BYTES, is_listing_type};
pub use crate::client::{Fetched, Fetcher, Validators};
pub use crate::config::{AutoThrottle, FetchConfig};
pub use crate::error::{FetchError, Rounded, transport_cause};
pub use crate::exchange::{Exchange, ResponseHead};
pub use crate::host::{PauseReason, PausedHost, politeness_key};
