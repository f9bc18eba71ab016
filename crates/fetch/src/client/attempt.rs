//! One HTTP request ([`Fetcher::attempt`]): the private-address guard, the
//! wait for the host's turn and a global permit, the request (conditional
//! on validators when revisiting), the answer classified as a page, a
//! redirect or an error, and the total deadline, which a wait for the
//! memory budget does not use up.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, LOCATION};
use tokio::time::Instant;
use tracing::debug;
use url::Url;

use super::retry::retry_after;
use super::{ACCEPT_HTML, Fetcher, Outcome, Validators};
use crate::body::{BodyBudget, BodyLimits, read_body};
use crate::exchange::{Exchange, ResponseHead, Tape};
use crate::host::Host;
use crate::{FetchError, is_listing_type};

/// A failed attempt, with the server's requested wait if it gave one.
pub(super) type AttemptError = (FetchError, Option<Duration>);

/// How often an attempt whose body waits for the memory budget looks again
/// at its deadline (which does not run while it waits).
const BUDGET_WAIT_POLL: Duration = Duration::from_millis(250);

impl Fetcher {
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
    pub(super) async fn attempt(
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
        let limits = BodyLimits {
            max: max_bytes,
            idle: cfg.idle_body_timeout(),
            budget: &self.inner.budget,
            budget_units: self.inner.budget_units,
            waited_ms: &budget_wait_ms,
            waiting: &budget_waiting,
        };
        let exchange = self.exchange(host, url, check_type, &limits, tape, since);
        let result = within_deadline(exchange, cfg.total_timeout(), &limits, url).await;
        self.note_unanswered(host, url, asked, &result);
        result
    }

    /// Sends the request for `url` and reads its answer: a page (its body
    /// within `limits`), a redirect, or an error status with the server's
    /// Retry-After.
    async fn exchange(
        &self,
        host: &Host,
        url: &Url,
        check_type: bool,
        limits: &BodyLimits<'_>,
        tape: &Tape,
        since: Option<&Validators>,
    ) -> Result<Outcome, AttemptError> {
        let request = self.request(url, since);
        let sent = Instant::now();
        let mut resp = request
            .send()
            .await
            .map_err(|e| (FetchError::from_reqwest(url, e, "waiting for response"), None))?;
        let status = resp.status().as_u16();
        self.note_answer(host, sent, status);
        let head = tape
            .recording()
            .then(|| ResponseHead::of(&resp, url, &self.inner.cfg.user_agent, ACCEPT_HTML));
        // Unchanged since the validators we sent: no body to read.
        if status == 304 && since.is_some() {
            return Ok(not_modified(&resp, status, head));
        }
        if matches!(status, 301 | 302 | 303 | 307 | 308)
            && let Some(loc) = resp.headers().get(LOCATION)
        {
            let location = String::from_utf8_lossy(loc.as_bytes()).trim().to_string();
            keep(&mut resp, head, url, limits, tape).await;
            return Ok(Outcome::Redirect { location });
        }
        if !(200..=299).contains(&status) {
            let retry_after = if status == 429 || (500..=599).contains(&status) {
                retry_after(resp.headers())
            } else {
                None
            };
            keep(&mut resp, head, url, limits, tape).await;
            return Err((
                FetchError::Status {
                    url: url.clone(),
                    status,
                },
                retry_after,
            ));
        }
        self.page(resp, status, head, url, check_type, limits).await
    }

    /// The GET for `url`, conditional on `since` (`If-None-Match`,
    /// `If-Modified-Since`) when given.
    fn request(&self, url: &Url, since: Option<&Validators>) -> reqwest::RequestBuilder {
        let mut request = self.inner.client.get(url.clone());
        if let Some(v) = since {
            if let Some(etag) = &v.etag {
                request = request.header(reqwest::header::IF_NONE_MATCH, etag);
            }
            if let Some(lm) = &v.last_modified {
                request = request.header(reqwest::header::IF_MODIFIED_SINCE, lm);
            }
        }
        request
    }

    /// An answer (to a request sent at `sent`) for adaptive politeness,
    /// when on; 429 and 503 are counted ([`Fetcher::throttled`]).
    fn note_answer(&self, host: &Host, sent: Instant, status: u16) {
        if let Some(t) = &self.inner.throttle {
            host.throttle(t, sent.elapsed(), status);
            if status == 429 || status == 503 {
                self.inner.throttled.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// A 2xx answer: its content type checked when `check_type`, its body
    /// read within `limits`.
    async fn page(
        &self,
        mut resp: reqwest::Response,
        status: u16,
        head: Option<ResponseHead>,
        url: &Url,
        check_type: bool,
        limits: &BodyLimits<'_>,
    ) -> Result<Outcome, AttemptError> {
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if check_type && !self.type_accepted(content_type.as_deref()) {
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
        let (body, truncated, budget) = read_body(&mut resp, url, limits).await.map_err(|e| (e, None))?;
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
    }

    /// Whether a page of `content_type` is read: `allowed_content_types`
    /// names it, or it is a feed's or a sitemap's while listings are
    /// accepted ([`Fetcher::set_accept_listings`]).
    fn type_accepted(&self, content_type: Option<&str>) -> bool {
        self.inner.cfg.content_type_allowed(content_type)
            || (self.inner.accept_listings.load(Ordering::Relaxed)
                && content_type.is_some_and(is_listing_type))
    }

    /// No answer (a timeout, a failed connection) is a slow answer for
    /// adaptive politeness, not none: see `Throttle::failed`. A refusal
    /// comes at once: it counts as slow as the connect timeout.
    fn note_unanswered(
        &self,
        host: &Host,
        url: &Url,
        asked: Instant,
        result: &Result<Outcome, AttemptError>,
    ) {
        if let (Some(t), Err((e, _))) = (&self.inner.throttle, result)
            && e.is_unanswered()
        {
            let waited = asked.elapsed().max(self.inner.cfg.connect_timeout());
            let delay = host.throttle_failed(t, waited);
            debug!(url = %url, error = %e, delay_ms = delay.as_millis() as u64, "no answer: host delay raised");
        }
    }
}

/// Unchanged since the validators sent (304): a page with no body, and the
/// validators the answer carries.
fn not_modified(resp: &reqwest::Response, status: u16, head: Option<ResponseHead>) -> Outcome {
    let validators = Validators::of(resp.headers());
    Outcome::Page {
        status,
        content_type: None,
        body: Vec::new(),
        truncated: false,
        budget: BodyBudget::default(),
        head: head.map(Box::new),
        validators,
        link: Vec::new(),
    }
}

/// A response that is not the page (a redirect, an error) is kept whole
/// when recording (`head` is then given); a body that cannot be read is
/// kept as far as it came, marked truncated.
async fn keep(
    resp: &mut reqwest::Response,
    head: Option<ResponseHead>,
    url: &Url,
    limits: &BodyLimits<'_>,
    tape: &Tape,
) {
    if let Some(head) = head {
        let (body, truncated) = match read_body(resp, url, limits).await {
            Ok((body, truncated, _budget)) => (body, truncated),
            Err(_) => (Vec::new(), true),
        };
        tape.push(Exchange {
            head,
            body,
            truncated,
        });
    }
}

/// Runs `exchange` within the total deadline. The deadline moves by the
/// time the body waited for its share of the memory budget: a wait on this
/// crawl's own memory is not the server's slowness.
async fn within_deadline(
    exchange: impl Future<Output = Result<Outcome, AttemptError>>,
    total: Duration,
    limits: &BodyLimits<'_>,
    url: &Url,
) -> Result<Outcome, AttemptError> {
    tokio::pin!(exchange);
    let mut deadline = Instant::now() + total;
    loop {
        tokio::select! {
            r = &mut exchange => break r,
            () = tokio::time::sleep_until(deadline) => {
                if limits.waiting.load(Ordering::Relaxed) {
                    deadline += BUDGET_WAIT_POLL;
                    continue;
                }
                let extra = limits.waited_ms.swap(0, Ordering::Relaxed);
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
    }
}
