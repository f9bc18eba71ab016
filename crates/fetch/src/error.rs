//! Why a fetch produced no page, in a form both humans and stats can use.

use std::time::Duration;

use thiserror::Error;
use url::Url;

/// A failed fetch. Every message names the URL that failed; [`FetchError::kind`]
/// gives a stable short label so the crawler can count outcomes without
/// parsing messages.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FetchError {
    /// Not an absolute http(s) URL with a host, or a Location header that
    /// does not resolve to one.
    #[error("{url}: invalid URL: {reason}")]
    InvalidUrl {
        /// The offending text (a URL, or a raw Location value).
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Connect, total or idle-body timeout (after retries).
    #[error("{url}: timed out {phase}")]
    Timeout {
        /// The URL whose request timed out.
        url: Url,
        /// Where it stalled, e.g. "waiting for response" or "reading body".
        phase: &'static str,
    },
    /// The host is (or resolves only to) a private address and is not
    /// allowed: loopback, RFC 1918, link-local, unique-local... (see
    /// `FetchConfig::private_addresses`). Through a proxy, a name with any
    /// private address in its local answer. Never retried.
    #[error("{url}: {reason}")]
    PrivateAddress {
        /// The URL whose host was refused.
        url: Url,
        /// The host and the addresses refused.
        #[source]
        reason: Box<crate::address::PrivateAddressRefused>,
    },
    /// The connection could not be established (after retries). The
    /// message says why in words (`connection refused`, `DNS lookup failed`,
    /// ...: [`transport_cause`]); reqwest's own ("error sending request")
    /// says nothing a user can act on.
    #[error("{url}: connection failed: {}", transport_cause(source))]
    Connect {
        /// The URL that could not be reached.
        url: Url,
        /// The underlying transport error.
        #[source]
        source: reqwest::Error,
    },
    /// Any other transport failure before a response arrived (after retries).
    #[error("{url}: request failed: {}", transport_cause(source))]
    Request {
        /// The URL whose request failed.
        url: Url,
        /// The underlying transport error.
        #[source]
        source: reqwest::Error,
    },
    /// A final non-success status (4xx at once; 429 and 5xx after retries).
    #[error("{url}: HTTP status {status}")]
    Status {
        /// The URL that answered.
        url: Url,
        /// The HTTP status code.
        status: u16,
    },
    /// More redirect hops than `max_redirects`.
    #[error("{url}: more than {limit} redirects")]
    TooManyRedirects {
        /// The URL whose response would have been hop `limit + 1`.
        url: Url,
        /// The configured limit.
        limit: usize,
    },
    /// The caller's `allow_hop` refused a redirect target (out of scope, or
    /// already seen). Not a failure of the site: counted separately.
    #[error("{url}: redirect to {target} refused by caller")]
    RedirectRefused {
        /// The URL that answered with the redirect.
        url: Url,
        /// The refused redirect target (boxed to keep the error small).
        target: Box<Url>,
    },
    /// robots.txt forbids this URL for our agent.
    #[error("{url}: disallowed by robots.txt")]
    RobotsDisallowed {
        /// The forbidden URL.
        url: Url,
    },
    /// robots.txt answered 5xx or could not be fetched, so the whole host is
    /// off limits for a while; the caller may retry the URL later.
    #[error("{url}: robots.txt unavailable, host paused for {}", Rounded(*retry_in))]
    RobotsUnavailable {
        /// The URL that was not fetched.
        url: Url,
        /// Time until robots.txt will be tried again.
        retry_in: Duration,
    },
    /// robots.txt could not be connected to (connection refused, no such
    /// name), still after the fetcher's retries: the host's pages fail at
    /// once until robots.txt is tried again. Not transient: a refused
    /// connection is an answer, and waiting for it held every page of the
    /// host for minutes. The message names the cause and not `retry_in`:
    /// it ends up in a crawl's errors.jsonl, read after the process that
    /// would have tried again has exited.
    #[error("{url}: host unreachable: robots.txt could not be connected to ({cause})")]
    HostUnreachable {
        /// The URL that was not fetched.
        url: Url,
        /// Why the connection failed, in words ([`transport_cause`]).
        cause: &'static str,
        /// Time until robots.txt will be tried again.
        retry_in: Duration,
    },
    /// The Content-Type is not in `allowed_content_types`; the body was not
    /// downloaded.
    #[error("{url}: content type {content_type:?} not accepted")]
    ContentType {
        /// The URL that answered.
        url: Url,
        /// The Content-Type header as sent.
        content_type: String,
    },
    /// The body could not be read or decoded (after retries, unless it was a
    /// decoding error).
    #[error("{url}: reading body failed: {source}")]
    Body {
        /// The URL whose body failed.
        url: Url,
        /// The underlying error.
        #[source]
        source: reqwest::Error,
    },
    /// The HTTP client could not be built from the configuration.
    #[error("building HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// `fetch.proxy` is not a usable proxy URL. The value itself is not
    /// repeated: it may hold a password.
    #[error("fetch.proxy is not a proxy URL (http://[user:password@]host:port): {reason}")]
    InvalidProxy {
        /// What is wrong with it.
        reason: String,
    },
}

/// A duration as a person reads it: whole seconds (`60 s`), or
/// milliseconds under a second, never `59.999961513s`.
#[derive(Debug, Clone, Copy)]
pub struct Rounded(pub Duration);

impl std::fmt::Display for Rounded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = self.0.as_millis();
        if ms < 1000 {
            write!(f, "{ms} ms")
        } else {
            write!(f, "{} s", (ms + 500) / 1000)
        }
    }
}

/// Why a transport error happened, in words a user can act on, found by
/// walking its chain of sources (reqwest -> hyper -> io): `connection
/// refused`, `DNS lookup failed`, `TLS handshake failed`, `timed out`,
/// `connection reset`; otherwise `connection failed`. reqwest's top-level
/// message ("error sending request for url (...)") names none of them.
pub fn transport_cause(e: &(dyn std::error::Error + 'static)) -> &'static str {
    use std::io::ErrorKind;
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut text_causes = None;
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            match io.kind() {
                ErrorKind::ConnectionRefused => return "connection refused",
                ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => return "connection reset",
                ErrorKind::TimedOut => return "timed out",
                ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => return "no route to host",
                _ => {}
            }
        }
        let text = err.to_string().to_ascii_lowercase();
        if text_causes.is_none() {
            if text.contains("dns error")
                || text.contains("failed to lookup address")
                || text.contains("name or service not known")
                || text.contains("no address associated")
            {
                text_causes = Some("DNS lookup failed (no such host)");
            } else if text.contains("certificate") || text.contains("tls") || text.contains("handshake") {
                text_causes = Some("TLS handshake failed");
            } else if text.contains("timed out") || text.contains("timeout") {
                text_causes = Some("timed out");
            }
        }
        next = err.source();
    }
    text_causes.unwrap_or("connection failed")
}

impl FetchError {
    /// Stable short label for stats: one of `invalid_url`, `timeout`,
    /// `connect`, `request`, `status_4xx`, `status_5xx`, `status_other`,
    /// `too_many_redirects`, `redirect_refused`, `robots_disallowed`,
    /// `robots_unavailable`, `host_unreachable`, `content_type`, `body`,
    /// `client`.
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::InvalidUrl { .. } => "invalid_url",
            FetchError::Timeout { .. } => "timeout",
            FetchError::Connect { .. } => "connect",
            FetchError::PrivateAddress { .. } => "private_address",
            FetchError::Request { .. } => "request",
            FetchError::Status { status, .. } => match status {
                400..=499 => "status_4xx",
                500..=599 => "status_5xx",
                _ => "status_other",
            },
            FetchError::TooManyRedirects { .. } => "too_many_redirects",
            FetchError::RedirectRefused { .. } => "redirect_refused",
            FetchError::RobotsDisallowed { .. } => "robots_disallowed",
            FetchError::RobotsUnavailable { .. } => "robots_unavailable",
            FetchError::HostUnreachable { .. } => "host_unreachable",
            FetchError::ContentType { .. } => "content_type",
            FetchError::Body { .. } => "body",
            FetchError::Client(_) | FetchError::InvalidProxy { .. } => "client",
        }
    }

    /// The HTTP status, when the failure is a status code, so callers can
    /// tell 404/410 (drop the URL) from 429 (slow down).
    pub fn status(&self) -> Option<u16> {
        match self {
            FetchError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether the failure may go away later (timeouts, connection errors,
    /// 429 and 5xx after the fetcher's own retries, robots.txt unavailable):
    /// a crawler can try the URL again after a while.
    pub fn is_transient(&self) -> bool {
        self.is_retryable() || matches!(self, FetchError::RobotsUnavailable { .. })
    }

    /// Whether another attempt could plausibly succeed.
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            FetchError::Timeout { .. } | FetchError::Connect { .. } => true,
            FetchError::Request { source, .. } => !source.is_builder(),
            FetchError::Status { status, .. } => *status == 429 || (500..=599).contains(status),
            FetchError::Body { source, .. } => !source.is_decode(),
            _ => false,
        }
    }

    /// Whether the server gave no answer: the request timed out (before
    /// or during the response) or the connection failed. Adaptive
    /// politeness counts it as the slowest answer.
    pub(crate) fn is_unanswered(&self) -> bool {
        match self {
            FetchError::Timeout { .. } | FetchError::Connect { .. } => true,
            FetchError::Request { source, .. } => !source.is_builder(),
            _ => false,
        }
    }

    /// Classifies a transport error from reqwest for `url`.
    pub(crate) fn from_reqwest(url: &Url, e: reqwest::Error, phase: &'static str) -> Self {
        let url = url.clone();
        if let Some(reason) = crate::address::refused_in(&e) {
            return FetchError::PrivateAddress {
                url,
                reason: Box::new(reason),
            };
        }
        if e.is_timeout() {
            FetchError::Timeout { url, phase }
        } else if e.is_connect() {
            FetchError::Connect { url, source: e }
        } else {
            FetchError::Request { url, source: e }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_rounded_and_causes_named() {
        assert_eq!(Rounded(Duration::from_nanos(59_999_961_513)).to_string(), "60 s");
        assert_eq!(Rounded(Duration::from_millis(250)).to_string(), "250 ms");
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(transport_cause(&refused), "connection refused");
        let dns = std::io::Error::other("failed to lookup address information: Name or service not known");
        assert_eq!(transport_cause(&dns), "DNS lookup failed (no such host)");
        assert_eq!(transport_cause(&std::io::Error::other("?")), "connection failed");
        let e = FetchError::HostUnreachable {
            url: Url::parse("http://a.test/").unwrap(),
            cause: "connection refused",
            retry_in: Duration::from_nanos(59_999_961_513),
        };
        assert_eq!(
            e.to_string(),
            "http://a.test/: host unreachable: robots.txt could not be connected to (connection refused)"
        );
    }

    #[test]
    fn kinds_and_messages() {
        let url = Url::parse("http://example.com/a").unwrap();
        let e = FetchError::Status {
            url: url.clone(),
            status: 404,
        };
        assert_eq!(e.kind(), "status_4xx");
        assert_eq!(e.status(), Some(404));
        assert!(!e.is_retryable());
        assert!(e.to_string().contains("http://example.com/a"));
        let e = FetchError::Status {
            url: url.clone(),
            status: 503,
        };
        assert_eq!(e.kind(), "status_5xx");
        assert!(e.is_retryable());
        let e = FetchError::Status {
            url: url.clone(),
            status: 429,
        };
        assert!(e.is_retryable() && e.is_transient());
        let e = FetchError::RobotsUnavailable {
            url: url.clone(),
            retry_in: std::time::Duration::from_secs(1),
        };
        assert!(e.is_transient());
        let e = FetchError::RobotsDisallowed { url };
        assert!(!e.is_transient());
        assert_eq!(e.kind(), "robots_disallowed");
        assert!(e.to_string().contains("example.com/a"));
    }
}
