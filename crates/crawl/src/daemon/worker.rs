//! One frontier entry through the page stages: fetch (async, polite), then
//! clean, extract links and sign (CPU work, on the CPU pool). The
//! result goes to the writer, which alone judges it against the tiers.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use simcrawl_dedup::{CanonicalUrl, Canonicalizer, Duplicate, Fingerprint, Signature};
use url::Url;

pub use super::stages::{EarlyProbe, PageStages, Signer, UrlProbe};
use crate::frontier::{Candidate, Entry};
use crate::output::lines::{DuplicateLine, JsonText, Judged, KeptLine, json_text};
use crate::template::host_of;
use serde_json::value::RawValue;

/// Times a page waits for a host whose robots.txt is unavailable before it
/// counts as failed: with the fetcher's `robots_unavailable_retry_ms`
/// between waits, this rides out a short outage of robots.txt (a restart, a
/// 503 for a minute) without holding a fetch slot for long.
pub const ROBOTS_WAITS: u32 = 3;

/// Longest wait of a page for the verdicts of the probes of a URL rewrite
/// rule (`crate::dust::Dust::admit_fetch`): about what a page takes to be
/// parsed and judged under load; a probe stuck in a slow fetch holds the
/// others no longer than this.
pub const PROBE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How often a waiting page looks again.
const PROBE_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// Pages larger than this are parsed one at a time (see `PageStages::parsing`).
pub const LARGE_PARSE_BYTES: usize = 1024 * 1024;

/// What became of one frontier entry.
#[derive(Debug)]
pub enum Outcome {
    Page(Box<PageResult>),
    Failed {
        entry: Entry,
        kind: &'static str,
        error: String,
        /// The failure may pass: worth another attempt later.
        transient: bool,
        /// How long the attempt took (its fetch retries included): what a
        /// retry of it is expected to cost (see `requeue_delay_within`).
        took_ms: u64,
        /// The responses it received, for the archive (`--warc`): error
        /// answers, robots.txt, redirect hops.
        exchanges: Vec<simcrawl_fetch::Exchange>,
        /// The HTTP status that failed it, if it got an answer (a revisit
        /// told 404 or 410 finds its page gone).
        status: Option<u16>,
    },
    /// A sitemap or feed read (`crate::listing`): the pages and further
    /// listings it gave, within scope, and what was wrong with it.
    Listing {
        entry: Entry,
        /// What it was (a feed or a sitemap), recorded in the state.
        kind: crate::listing::Kind,
        /// Pages, with what the sitemap says of each (`lastmod`,
        /// `changefreq`, `priority`), kept for the revisit schedule.
        pages: Vec<(Candidate, crate::listing::Hints)>,
        listings: Vec<Candidate>,
        problems: Vec<String>,
        exchanges: Vec<simcrawl_fetch::Exchange>,
    },
    /// A revisit answered `304 Not Modified` (`crate::revisit`): nothing
    /// parsed, nothing judged.
    NotModified {
        entry: Entry,
        /// The validators the answer carried (a server may send new ones).
        validators: simcrawl_fetch::Validators,
        exchanges: Vec<simcrawl_fetch::Exchange>,
    },
    /// Not fetched: a URL rewrite rule learnt after the entry was queued
    /// maps it to another URL, or maps a kept page's URL onto it
    /// (`crate::dust`). The writer folds it again when it commits (a rule
    /// may be withdrawn meanwhile) and records it with the rules that made
    /// the rewrite.
    Rewritten {
        entry: Entry,
    },
}

impl Outcome {
    /// The fetch of `entry`, started at `started`, failed with `e` (after
    /// the `exchanges` it made).
    fn fetch_failed(
        entry: Entry,
        e: &simcrawl_fetch::FetchError,
        started: std::time::Instant,
        exchanges: Vec<simcrawl_fetch::Exchange>,
    ) -> Outcome {
        Outcome::Failed {
            entry,
            kind: e.kind(),
            error: e.to_string(),
            transient: e.is_transient(),
            took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            exchanges,
            status: e.status(),
        }
    }

    /// The URL of the entry it is the outcome of.
    pub fn url(&self) -> &Url {
        match self {
            Outcome::Page(p) => &p.entry.url,
            Outcome::Failed { entry, .. }
            | Outcome::Rewritten { entry, .. }
            | Outcome::Listing { entry, .. }
            | Outcome::NotModified { entry, .. } => &entry.url,
        }
    }

    /// The frontier sequence number of the entry it is the outcome of.
    pub fn seq(&self) -> u64 {
        match self {
            Outcome::Page(p) => p.entry.seq,
            Outcome::Failed { entry, .. }
            | Outcome::Rewritten { entry, .. }
            | Outcome::Listing { entry, .. }
            | Outcome::NotModified { entry, .. } => entry.seq,
        }
    }
}

/// A fetched page, cleaned and signed, waiting for its verdict.
#[derive(Debug)]
pub struct PageResult {
    pub entry: Entry,
    pub final_url: Url,
    pub status: u16,
    /// The title as the page wrote it (`Page::raw_title`): what kept.jsonl
    /// shows. The tiers signed its normalized form.
    pub title: String,
    /// The main text as the page wrote it (`Page::raw_text`), for kept.jsonl.
    pub text: String,
    /// That text as a JSON string, with `crawl.write_text`: escaped here,
    /// off the writer thread, which copies it into the kept line.
    pub text_json: Option<JsonText>,
    /// The normalized title and text, as the tiers compared them: kept only
    /// with `crawl.write_normalized` (a second copy of the text otherwise
    /// dropped once signed).
    pub normalized: Option<Box<Normalized>>,
    pub links: Vec<Candidate>,
    /// The URL's images under the URL rewrite rules (`crate::dust`),
    /// computed here so that the writer only looks them up if the page is
    /// kept; `None` when the crawl learns no rules.
    pub url_images: Option<crate::dust::UrlImages>,
    pub sig: Signature,
    pub bytes: usize,
    pub truncated: bool,
    pub fetched_at: u64,
    /// The page asked not to be indexed (and noindex is respected).
    pub noindex: bool,
    /// It was signed without its host's template blocks.
    pub template_stripped: bool,
    /// The page's own visible text (`crawl check` tells what its host's
    /// template removes from it now).
    pub own_text: String,
    /// The blocks of that text: what its host's template is learnt from
    /// (hashed here, off the writer thread, which only counts them; empty
    /// when no template is learnt).
    pub own_blocks: simcrawl_clean::PageBlocks,
    /// What the page was judged on (`crate::identity`), and the facts a
    /// person checking its verdict needs.
    pub facts: PageFacts,
    /// What the archive keeps of its fetch (empty without `--warc`).
    pub archived: Archived,
    /// The answer's ETag and Last-Modified, for its revisits.
    pub validators: simcrawl_fetch::Validators,
    /// Sitemaps (its host's, the first time the host is fetched) and the
    /// feeds it announces, to be read.
    pub listings: Vec<Candidate>,
    /// Sitemaps its host's robots.txt declares that the scope refuses
    /// (another host): `(robots.txt URL, why)`, one `listing` line each.
    pub listing_problems: Vec<(String, String)>,
    /// The language of its text (`crate::lang`).
    pub lang: Option<&'static str>,
    /// Its key in the revisit schedule (`crate::revisit::url_key`),
    /// computed here rather than on the single writer thread.
    pub url_key: Option<u128>,
    /// Its SimHash candidates, looked up here on a snapshot
    /// (`PageStages::early_hits`), for the writer to bring up to date.
    pub early: Option<simcrawl_dedup::EarlyHits>,
    /// Its language is not one of `crawl.languages`: not judged (a line in
    /// errors.jsonl), its links followed.
    pub filtered_lang: bool,
    /// The canonical URL the page declared, when it must be fetched and
    /// judged first (`crate::canonical`): the writer puts this entry back
    /// behind it instead of judging the page.
    pub wait_for: Option<Candidate>,
}

/// A page's title and text as the tiers compared them
/// (`crawl.write_normalized`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    pub title: String,
    pub text: String,
}

/// The HTTP exchanges of one page's fetch, kept for the WARC archive until
/// its verdict is committed (the writer decides which records they become).
#[derive(Debug, Default)]
pub struct Archived {
    /// The page's own response, its records compressed here (off the
    /// writer thread); `None` without `--warc`.
    pub page: Option<crate::output::warc::Prepared>,
    /// The fetch's other exchanges, in order: robots.txt, redirect hops,
    /// attempts answered with an error.
    pub exchanges: Vec<simcrawl_fetch::Exchange>,
}

/// What a page was judged on, written with its verdict: `crawl report`
/// flags a drop that rests on little (`crate::output::lines::Suspect`).
#[derive(Debug, Clone, PartialEq)]
pub struct PageFacts {
    pub basis: crate::identity::Basis,
    /// Characters (not whitespace) of the page's whole visible text.
    pub chars: usize,
    /// Features of the text it was signed with.
    pub features: usize,
    /// The beginning of the text it was signed with.
    pub excerpt: String,
}

/// Characters of a page's text shown in `kept.jsonl` and `duplicates.jsonl`.
pub const EXCERPT_CHARS: usize = 160;

impl PageFacts {
    /// The facts of a page judged on `id`, signed as `sig`, showing
    /// `visible_chars` characters.
    pub fn of(id: &crate::identity::Identity<'_>, sig: &Signature, visible_chars: usize) -> Self {
        Self::judged_on(id.basis, &id.text, sig, visible_chars)
    }

    /// The facts of a document judged on `text` (`basis`), signed as
    /// `sig`, showing `visible_chars` characters: a page's, or one of
    /// `crawl dedup`'s documents.
    pub fn judged_on(
        basis: crate::identity::Basis,
        text: &str,
        sig: &Signature,
        visible_chars: usize,
    ) -> Self {
        PageFacts {
            basis,
            chars: visible_chars,
            features: sig.features,
            excerpt: crate::identity::excerpt(text, EXCERPT_CHARS),
        }
    }

    /// What a verdict line says of it, with its language.
    pub fn judged(&self, lang: Option<&'static str>) -> Judged<'_> {
        Judged {
            basis: self.basis,
            chars: self.chars,
            features: self.features,
            excerpt: &self.excerpt,
            lang,
        }
    }
}

impl PageResult {
    /// The URL this page was redirected to, with its canonical form, when
    /// that canonicalizes apart from the page's own URL (`None`: not
    /// redirected, or only to a variant of its own URL). Both backends ask
    /// the URL tier whether it knows that target: then the page is a
    /// URL-tier copy of it.
    pub fn redirect_target(&self, canon: &Canonicalizer) -> Option<(String, CanonicalUrl)> {
        if self.final_url == self.entry.url {
            return None;
        }
        let c = canon.from_url(self.final_url.clone()).ok()?;
        let own = canon.from_url(self.entry.url.clone()).ok()?;
        (c != own).then(|| (self.final_url.to_string(), c))
    }

    /// The page's line in `kept.jsonl`, with `text` (its text as a JSON
    /// string) only with `crawl.write_text`.
    pub fn kept_line<'a>(
        &'a self,
        fingerprint: Option<Fingerprint>,
        text: Option<&'a RawValue>,
    ) -> KeptLine<'a> {
        let write_text = text.is_some();
        KeptLine {
            via: Some(self.entry.via.as_deref()),
            final_url: Some(self.final_url.as_str()),
            status: Some(self.status),
            text,
            title_normalized: self.normalized.as_ref().map(|n| n.title.as_str()),
            text_normalized: self
                .normalized
                .as_ref()
                .filter(|_| write_text)
                .map(|n| n.text.as_str()),
            depth: Some(self.entry.depth),
            fetched_at: Some(self.fetched_at),
            judged: Some(self.judged()),
            ..KeptLine::new(self.entry.url.as_str(), &self.title, fingerprint)
        }
    }

    /// The page's line in `duplicates.jsonl`, found a copy by the tiers.
    pub fn duplicate_line<'a>(&'a self, d: &'a Duplicate) -> DuplicateLine<'a> {
        DuplicateLine {
            via: Some(self.entry.via.as_deref()),
            judged: Some(self.judged()),
            ..DuplicateLine::new(self.entry.url.as_str(), d)
        }
    }

    fn judged(&self) -> Judged<'_> {
        self.facts.judged(self.lang)
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Fetches and reads one sitemap or feed.
async fn process_listing(
    stages: Arc<PageStages>,
    entry: Entry,
    mut exchanges: Vec<simcrawl_fetch::Exchange>,
) -> Outcome {
    let scope_stages = stages.clone();
    let allow = move |u: &Url| scope_stages.scope.allows(u);
    let started = std::time::Instant::now();
    let (result, tape) = stages.fetcher.fetch_listing(&entry.url, &allow).await;
    exchanges.extend(tape);
    let fetched = match result {
        Ok(f) => f,
        Err(e) => return Outcome::fetch_failed(entry, &e, started, exchanges),
    };
    read_listing_off_reactor(stages, entry, fetched, exchanges).await
}

/// [`read_listing`] on the blocking pool (parsing a 50 MB sitemap is CPU
/// work).
async fn read_listing_off_reactor(
    stages: Arc<PageStages>,
    entry: Entry,
    fetched: simcrawl_fetch::Fetched,
    exchanges: Vec<simcrawl_fetch::Exchange>,
) -> Outcome {
    let job_entry = entry.clone();
    let job = tokio::task::spawn_blocking(move || read_listing(&stages, job_entry, fetched, exchanges));
    match job.await {
        Ok(o) => o,
        Err(e) => Outcome::Failed {
            entry,
            kind: "internal",
            error: format!("listing processing failed: {e}"),
            transient: false,
            took_ms: 0,
            exchanges: Vec::new(),
            status: None,
        },
    }
}

/// The CPU part of a sitemap or feed: parse, and keep what the scope
/// allows; a URL on another host the scope does not allow is refused with
/// a line saying so (the sitemap protocol lets a sitemap list its own
/// host only).
fn read_listing(
    stages: &PageStages,
    entry: Entry,
    fetched: simcrawl_fetch::Fetched,
    mut exchanges: Vec<simcrawl_fetch::Exchange>,
) -> Outcome {
    let parsed = crate::listing::parse(
        &fetched.body,
        &fetched.final_url,
        stages.sitemap_max_urls,
        crate::listing::MAX_BYTES,
    );
    if let Some(head) = fetched.head {
        exchanges.push(simcrawl_fetch::Exchange {
            head: *head,
            body: fetched.body,
            truncated: fetched.truncated,
        });
    }
    let l = match parsed {
        Ok(l) => l,
        Err(e) => {
            return Outcome::Failed {
                entry,
                kind: "listing",
                error: e.to_string(),
                transient: false,
                took_ms: 0,
                exchanges,
                status: None,
            };
        }
    };
    let host = fetched.final_url.host_str().unwrap_or_default().to_string();
    let mut problems = l.problems;
    // URLs on other hosts the scope refuses: one line per listing (the
    // first of them and how many), not one per URL.
    let mut outside: (usize, Option<Url>) = (0, None);
    let mut admit = |u: &Url| {
        if stages.scope.allows(u) {
            return Candidate::new(&stages.canon, u.clone());
        }
        if u.host_str() != Some(host.as_str()) {
            outside.0 += 1;
            if outside.1.is_none() {
                outside.1 = Some(u.clone());
            }
        }
        None
    };
    let pages = l
        .pages
        .iter()
        .filter_map(|p| admit(&p.url).map(|c| (c, p.hints())))
        .collect();
    let listings = l.listings.iter().filter_map(&mut admit).collect();
    if let (n, Some(first)) = outside {
        problems.push(format!(
            "{}: lists {n} URL(s) outside its own host (the first: {first}), which the crawl's scope \
             does not allow: refused",
            fetched.final_url
        ));
    }
    Outcome::Listing {
        entry,
        kind: l.kind,
        pages,
        listings,
        problems,
        exchanges,
    }
}

/// The sitemaps and feeds a fetched page leads to: its host's sitemaps the
/// first time the host is fetched (robots.txt's `Sitemap:` lines, else
/// `/sitemap.xml`), and the feeds it announces; and the declared sitemaps
/// the scope refuses (on another host, which robots.txt may name but the
/// crawl does not go to), each with a line saying so: a silent drop would
/// leave a site's owner wondering why its sitemap was ignored.
fn listings_of(
    stages: &PageStages,
    final_url: &Url,
    feeds: &[Url],
) -> (Vec<Candidate>, Vec<(String, String)>) {
    let mut urls: Vec<Url> = Vec::new();
    let mut problems = Vec::new();
    if stages.sitemaps
        && let Some(declared) = stages.fetcher.take_sitemaps(final_url)
    {
        let robots = final_url
            .join("/robots.txt")
            .map_or_else(|_| final_url.to_string(), |u| u.to_string());
        let mut declared_urls = Vec::new();
        for s in &declared {
            match Url::parse(s) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => declared_urls.push(u),
                _ => problems.push((
                    robots.clone(),
                    format!("{robots}: Sitemap: {s:?} is not an http(s) URL: ignored"),
                )),
            }
        }
        if declared.is_empty() {
            urls.extend(final_url.join("/sitemap.xml").ok());
        }
        for u in declared_urls {
            if stages.scope.allows(&u) {
                urls.push(u);
            } else {
                problems.push((
                    robots.clone(),
                    format!(
                        "{robots}: Sitemap: {u} is outside this host, which the crawl's scope does not allow: \
                         refused"
                    ),
                ));
            }
        }
    }
    if stages.feeds {
        urls.extend(feeds.iter().cloned());
    }
    let listings = urls
        .into_iter()
        .filter(|u| stages.scope.allows(u))
        .filter_map(|u| Candidate::new(&stages.canon, u))
        .collect();
    (listings, problems)
}

/// Fetches, cleans and signs the page of one frontier entry.
pub async fn process_entry(stages: Arc<PageStages>, entry: Entry) -> Outcome {
    if entry.listing {
        return process_listing(stages, entry, Vec::new()).await;
    }
    if folded_by_dust(&stages, &entry).await {
        return Outcome::Rewritten { entry };
    }
    let started = std::time::Instant::now();
    let mut exchanges = Vec::new();
    let fetched = match fetch_waiting_for_robots(&stages, &entry, &mut exchanges).await {
        Ok(f) => f,
        // A seed (or link) that is a feed: read as one.
        Err(simcrawl_fetch::FetchError::ContentType { content_type, .. })
            if stages.feeds && is_feed_type(&content_type) =>
        {
            let listing = Entry {
                listing: true,
                ..entry
            };
            return process_listing(stages, listing, exchanges).await;
        }
        Err(e) => return Outcome::fetch_failed(entry, &e, started, exchanges),
    };
    // A feed or sitemap served as a page (a seed, a link): read as one,
    // from this answer (the fetcher reads feed types' bodies for this)
    // unless it was cut at the page size limit.
    if stages.feeds && looks_like_listing(&fetched.body) {
        let listing = Entry {
            listing: true,
            ..entry
        };
        if fetched.truncated {
            return process_listing(stages, listing, exchanges).await;
        }
        return read_listing_off_reactor(stages, listing, fetched, exchanges).await;
    }
    // XML that is neither: refused by its type, as without feeds.
    if let Some(e) = refused_listing_type(&stages, &fetched) {
        return Outcome::Failed {
            entry,
            kind: e.kind(),
            error: e.to_string(),
            transient: false,
            took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            exchanges,
            status: None,
        };
    }
    if fetched.status == 304 {
        return not_modified(entry, fetched, exchanges);
    }
    clean_and_sign_off_reactor(stages, entry, fetched, exchanges).await
}

/// DUST: a URL a learnt rule rewrites is not fetched (true: it is folded);
/// one a candidate rule would rewrite waits (briefly) for the verdicts of
/// its probes. A revisit is not a new URL: its page is in the index (kept
/// or a copy) and only its visits keep that record true, so no rule folds
/// it (a folded revisit left the schedule for good).
async fn folded_by_dust(stages: &PageStages, entry: &Entry) -> bool {
    let waiting = std::time::Instant::now();
    while entry.revisit.is_none() {
        let force = waiting.elapsed() >= PROBE_WAIT;
        let admitted = {
            let mut dust = stages.dust.lock();
            if dust.fold(&entry.url).is_some() {
                return true;
            }
            dust.admit_fetch(&entry.url, force)
        };
        if admitted {
            break;
        }
        tokio::time::sleep(PROBE_POLL).await;
    }
    false
}

/// Fetches the entry's page (conditionally, for a revisit), recording the
/// exchanges in `exchanges`. A host whose robots.txt answered 5xx or could
/// not be reached is unavailable for a while (the fetcher says how long);
/// the page waits for it a few times before it counts as failed. The
/// per-host limit of the frontier window bounds how many tasks can wait on
/// one host.
async fn fetch_waiting_for_robots(
    stages: &Arc<PageStages>,
    entry: &Entry,
    exchanges: &mut Vec<simcrawl_fetch::Exchange>,
) -> Result<simcrawl_fetch::Fetched, simcrawl_fetch::FetchError> {
    let scope_stages = stages.clone();
    let allow = move |u: &Url| scope_stages.scope.allows(u);
    let mut waits = 0;
    loop {
        let (result, tape) = match &entry.revisit {
            Some(r) => {
                stages
                    .fetcher
                    .fetch_conditional(&entry.url, &allow, &r.since)
                    .await
            }
            None => stages.fetcher.fetch_recorded(&entry.url, &allow).await,
        };
        exchanges.extend(tape);
        match result {
            Err(simcrawl_fetch::FetchError::RobotsUnavailable { retry_in, .. }) if waits < ROBOTS_WAITS => {
                waits += 1;
                tokio::time::sleep(retry_in).await;
            }
            other => return other,
        }
    }
}

/// The error that refuses a fetched sitemap or feed type the crawl does not
/// read as a listing, unless the settings accept the type as a page.
fn refused_listing_type(
    stages: &PageStages,
    fetched: &simcrawl_fetch::Fetched,
) -> Option<simcrawl_fetch::FetchError> {
    let refused = fetched
        .content_type
        .as_deref()
        .is_some_and(simcrawl_fetch::is_listing_type)
        && !stages
            .fetcher
            .config()
            .content_type_allowed(fetched.content_type.as_deref());
    refused.then(|| simcrawl_fetch::FetchError::ContentType {
        url: fetched.final_url.clone(),
        content_type: fetched.content_type.clone().unwrap_or_default(),
    })
}

/// A revisit answered 304: the page did not change.
fn not_modified(
    entry: Entry,
    fetched: simcrawl_fetch::Fetched,
    mut exchanges: Vec<simcrawl_fetch::Exchange>,
) -> Outcome {
    if let Some(head) = fetched.head {
        exchanges.push(simcrawl_fetch::Exchange {
            head: *head,
            body: Vec::new(),
            truncated: false,
        });
    }
    Outcome::NotModified {
        entry,
        validators: fetched.validators,
        exchanges,
    }
}

/// [`clean_and_sign`] on the CPU pool ([`super::cpu`]).
async fn clean_and_sign_off_reactor(
    stages: Arc<PageStages>,
    entry: Entry,
    fetched: simcrawl_fetch::Fetched,
    exchanges: Vec<simcrawl_fetch::Exchange>,
) -> Outcome {
    let fetched_at = now_secs();
    let job_stages = stages.clone();
    let job_entry = entry.clone();
    // Parsing, conversion, segmentation and hashing are CPU work: off the
    // reactor threads, so fetching continues meanwhile.
    // The semaphore is never closed; without a permit the page is parsed
    // anyway rather than lost.
    // A large page is parsed alone: its DOM and the copies of its text are
    // many times its size, the largest share of a crawl's peak memory.
    let slots = if fetched.body.len() > LARGE_PARSE_BYTES {
        stages.parse_slots.max(1)
    } else {
        1
    };
    let _parsing = stages.parsing.acquire_many(slots).await.ok();
    let job = super::cpu::on_cpu_pool(move || {
        clean_and_sign(&job_stages, job_entry, fetched, fetched_at, exchanges)
    });
    match job.await {
        Ok(o) => o,
        Err(e) => Outcome::Failed {
            entry,
            kind: "internal",
            error: format!("page processing failed: {e}"),
            transient: false,
            took_ms: 0,
            exchanges: Vec::new(),
            status: None,
        },
    }
}

/// The CPU stages of a fetched page: clean, extract the links to follow,
/// strip the host's template and sign.
fn clean_and_sign(
    stages: &PageStages,
    entry: Entry,
    fetched: simcrawl_fetch::Fetched,
    fetched_at: u64,
    exchanges: Vec<simcrawl_fetch::Exchange>,
) -> Outcome {
    let page = match stages
        .cleaner
        .parse(&fetched.body, fetched.content_type.as_deref(), &fetched.final_url)
    {
        Ok(p) => p,
        Err(e) => {
            let error = format!("cannot clean {}: {e}", fetched.final_url);
            return not_cleaned(entry, fetched, exchanges, error);
        }
    };
    let links = links_to_follow(stages, &page);
    let judged_own = page.judged_own();
    let host = host_of(&fetched.final_url);
    let (id, own_blocks) = identify(
        stages,
        (entry.url.as_str(), host),
        (&page.text, judged_own),
        &page.own_text,
    );
    // With its article, its basis's bar and how much it shows
    // (simcrawl_dedup::identity::sign_page).
    let sig = (stages.sign)((entry.url.as_str(), &page.title), &id, judged_own.0);
    let facts = PageFacts::of(&id, &sig, page.visible_chars);
    let template_stripped = id.template_stripped;
    drop(id);
    let (listings, listing_problems) = listings_of(stages, &fetched.final_url, &page.feeds);
    let lang = stages.lang.detect(
        (host_of(&fetched.final_url), fetched.final_url.path()),
        page.lang_hint.as_deref(),
        &page.text,
        &stages.languages,
    );
    // An unknown language is kept: a page is not dropped on a guess.
    let filtered_lang = lang.is_some_and(|l| !crate::lang::keeps(&stages.languages, l));
    let bytes = fetched.body.len();
    let record = match fetched
        .head
        .as_deref()
        .map(|head| crate::output::warc::Prepared::new(head, &fetched.body, fetched.truncated))
        .transpose()
    {
        Ok(p) => p,
        Err(e) => {
            return Outcome::Failed {
                entry,
                kind: "internal",
                error: format!("cannot archive {}: {e:#}", fetched.final_url),
                transient: false,
                took_ms: 0,
                exchanges,
                status: None,
            };
        }
    };
    let archived = Archived {
        page: record,
        exchanges,
    };
    let url_key = crate::revisit::url_key(&stages.canon, &entry.url);
    let declared = declared_canonical(&page, &fetched);
    let wait_for = stages.canonicals.wait_for(
        &entry,
        url_key,
        &fetched.final_url,
        declared.as_ref(),
        &stages.canon,
        &stages.scope,
    );
    // The outputs show the page as written; its normalized text served the
    // signature and the language and is dropped here, unless asked for.
    let normalized = stages.write_normalized.then(|| {
        Box::new(Normalized {
            title: page.title,
            text: page.text,
        })
    });
    let (own_blocks, url_images) = for_the_learners(stages, &entry.url, own_blocks);
    let (text_json, early) = off_the_writer(stages, &page.raw_text, &sig, filtered_lang);
    Outcome::Page(Box::new(PageResult {
        final_url: fetched.final_url,
        status: fetched.status,
        title: page.raw_title,
        text: page.raw_text,
        text_json,
        normalized,
        links,
        url_images,
        sig,
        bytes,
        truncated: fetched.truncated,
        fetched_at,
        noindex: stages.respect_noindex && page.meta_noindex,
        template_stripped,
        own_text: page.own_text,
        own_blocks,
        facts,
        entry,
        archived,
        validators: fetched.validators,
        listings,
        listing_problems,
        lang,
        filtered_lang,
        url_key,
        wait_for,
        early,
    }))
}

/// The page's text escaped for its kept line, and its SimHash candidates
/// looked up on a snapshot (while the writer is what the crawl waits for,
/// for a page to be judged): work taken off the writer. Looked up last, so
/// that the writer has the fewest commits to add to them.
fn off_the_writer(
    stages: &PageStages,
    text: &str,
    sig: &Signature,
    filtered_lang: bool,
) -> (Option<JsonText>, Option<simcrawl_dedup::EarlyHits>) {
    // An escape of a `&str` cannot fail; were it to, the writer escapes
    // the text itself (`Recorder::judged`).
    let text_json = stages.write_text.then(|| json_text(text).ok()).flatten();
    let early = match stages.early_hits.get() {
        Some(probe) if stages.writer_load.saturated() && !filtered_lang => probe(sig),
        _ => None,
    };
    (text_json, early)
}

/// A page the cleaner refused (`error`): failed.
fn not_cleaned(
    entry: Entry,
    mut fetched: simcrawl_fetch::Fetched,
    mut exchanges: Vec<simcrawl_fetch::Exchange>,
    error: String,
) -> Outcome {
    // Fetched all the same: its response is archived.
    if let Some(head) = fetched.head.take() {
        exchanges.push(simcrawl_fetch::Exchange {
            head: *head,
            body: std::mem::take(&mut fetched.body),
            truncated: fetched.truncated,
        });
    }
    Outcome::Failed {
        entry,
        kind: "clean",
        error,
        transient: false,
        took_ms: 0,
        exchanges,
        status: None,
    }
}

/// What the page is judged on: the text that makes it what it is, without
/// the host's template once learnt (crate::identity; a message in an
/// archive's frame has its message as its own text:
/// `simcrawl_clean::Page::judged_own`). With it, its own text's blocks,
/// digested once for both the identity (which strips them) and the
/// learner (which counts them); `None` when templates are not learnt.
/// (The texts are borrowed apart from the page, so that its other texts
/// can move out while the own text's blocks wait for the learner.)
fn identify<'p, 'o>(
    stages: &PageStages,
    (url, host): (&str, &str),
    (main, judged_own): (&'p str, (&'p str, usize)),
    own_text: &'o str,
) -> (
    crate::identity::Identity<'p>,
    Option<simcrawl_clean::TextBlocks<'o>>,
) {
    let own_blocks = stages
        .templates
        .is_learning()
        .then(|| simcrawl_clean::TextBlocks::of(own_text));
    let id = crate::identity::identity_with_blocks(
        &stages.templates,
        (url, host),
        main,
        judged_own,
        own_blocks.as_ref(),
    );
    (id, own_blocks)
}

/// What the writer's learners take from a page, computed here so that the
/// writer only counts it: the blocks of its own text (templates, from its
/// digested blocks `own`) and its URL's images under the rewrite rules
/// (DUST); each empty when that learner is off.
fn for_the_learners(
    stages: &PageStages,
    url: &Url,
    own: Option<simcrawl_clean::TextBlocks<'_>>,
) -> (simcrawl_clean::PageBlocks, Option<crate::dust::UrlImages>) {
    let blocks = own.map(|b| b.page_blocks()).unwrap_or_default();
    let images = stages
        .dust
        .lock()
        .is_enabled()
        .then(|| crate::dust::UrlImages::of(&stages.canon, url))
        .flatten();
    (blocks, images)
}

/// The page's links the crawl follows (none under `<meta name=robots
/// content=nofollow>` unless told to), in scope, each canonical URL once.
/// Canonical forms are computed here, on the worker pool, so the single
/// writer only does store lookups.
fn links_to_follow(stages: &PageStages, page: &simcrawl_clean::Page) -> Vec<Candidate> {
    let follow = stages.follow_nofollow || !page.meta_nofollow;
    let mut links: Vec<Candidate> = Vec::new();
    if follow {
        // Fx hashing: the std's SipHash of every link's document and
        // digest was 0.5% of a crawl's instructions on the zh/en
        // documentation mix (issue 37); these sets only answer "seen?".
        let mut seen = rustc_hash::FxHashSet::default();
        seen.reserve(page.links.len());
        // Links to sections of one document are one candidate (it drops
        // the fragment): the first in scope stands for the rest, which
        // are not canonicalized again (a documentation page links to
        // three sections of a document for each document it links to).
        let mut documents = rustc_hash::FxHashSet::default();
        documents.reserve(page.links.len());
        for l in &page.links {
            if (stages.follow_nofollow || !l.nofollow)
                && stages.scope.allows(&l.url)
                && documents.insert(crate::frontier::document_of(&l.url))
                && let Some(c) = Candidate::new(&stages.canon, l.url.clone())
                && seen.insert(c.canonical().digest())
            {
                links.push(c);
            }
        }
    }
    // While the writer is what the crawl waits for, the links it knows
    // already are read here, on a snapshot (`PageStages::url_probe`).
    if let Some(probe) = stages.url_probe.get()
        && stages.writer_load.saturated()
    {
        let canonicals: Vec<_> = links.iter().map(|l| l.canonical().clone()).collect();
        for (l, at) in links.iter_mut().zip(probe(&canonicals)) {
            l.known_since = at;
        }
    }
    links
}

/// What the page says its canonical URL is: its HTML, else its Link
/// header.
fn declared_canonical(page: &simcrawl_clean::Page, fetched: &simcrawl_fetch::Fetched) -> Option<Url> {
    page.canonical.clone().or_else(|| {
        fetched.link.iter().find_map(|v| {
            crate::canonical::from_link_header(v, &fetched.final_url)
                .into_iter()
                .next()
        })
    })
}

/// Whether a body is a feed or sitemap by its first element (`<rss`,
/// `<feed`, `<urlset`, `<sitemapindex`, after an XML declaration).
fn looks_like_listing(body: &[u8]) -> bool {
    let head = &body[..body.len().min(1024)];
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if !t.starts_with('<') || t.starts_with("<!") || t.to_ascii_lowercase().starts_with("<html") {
        return false;
    }
    let first = t
        .split('<')
        .map(str::trim)
        .find(|s| !s.is_empty() && !s.starts_with('?') && !s.starts_with('!'))
        .unwrap_or("");
    ["rss", "feed", "urlset", "sitemapindex", "rdf:RDF"]
        .iter()
        .any(|n| first.starts_with(n) && first[n.len()..].starts_with([' ', '>', '\n', '\r', '\t', '/']))
}

/// A content type a feed or sitemap is served with.
fn is_feed_type(ct: &str) -> bool {
    let ct = ct.to_ascii_lowercase();
    ct.contains("rss") || ct.contains("atom") || ct.contains("xml")
}
