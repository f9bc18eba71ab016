//! The frontier: URLs waiting to be fetched, in breadth-first order, kept
//! in the store so a killed crawl resumes where it was.
//!
//! An entry leaves the frontier only in the transaction that records its
//! page's result (and the sink offsets of the lines describing it), so after
//! a crash every URL is either done, with its output committed, or still
//! waiting: none is lost and none is fetched again after its result was
//! written.

use std::collections::{BTreeMap, HashMap, VecDeque};

use anyhow::Result;
use redb::{ReadableDatabase, ReadableTable, Table, TableDefinition, WriteTransaction};
use simcrawl_dedup::{Deduper, RedbStore, Tables, UrlVerdict};
use simcrawl_fetch::politeness_key as host_key;
use url::Url;

use crate::frontier::{Candidate, Entry, now_ms};

/// seq -> depth (u32 LE) + URL, or, for an entry put back after a
/// transient failure, depth (u32 LE) + [`RETRY_MARK`] + attempts (u32 LE) +
/// not-before (unix ms, u64 LE) + URL, or, for a revisit of a page
/// (`crate::revisit`), depth + [`REVISIT_MARK`] + attempts + not-before +
/// the length (u32 LE) of the revisit's JSON + that JSON + URL. The marks
/// cannot start a URL (0xFF and 0xFE never occur in UTF-8), so every form
/// is read back. A listing nested in others (`Entry::nest` > 0) is the
/// listing form under [`NESTED_LISTING_MARK`] with its nest (u32 LE)
/// before the URL.
///
/// An entry a page, sitemap or feed led to (`Entry::via`) is one of these
/// forms with, between its depth and the rest, [`VIA_MARK`] + the length
/// (u32 LE) of the referrer's URL + that URL, or, when the referrer has the
/// entry's origin (most links), [`SAME_ORIGIN_VIA_MARK`] + the length + the
/// referrer's path and query only: a few dozen bytes per queued URL. Entries
/// stored before `via` existed have no such prefix and read as before. An
/// entry put back behind its page's declared canonical (`Entry::waited`)
/// has [`WAITED_MARK`] right after its depth, before all of that.
pub const FRONTIER: TableDefinition<u64, &[u8]> = TableDefinition::new("crawl_frontier");

const RETRY_MARK: u8 = 0xFF;
const REVISIT_MARK: u8 = 0xFE;
/// A sitemap or feed entry: the retry form under its own mark.
const LISTING_MARK: u8 = 0xFD;
/// A sitemap or feed found in another: the listing form and its nest.
const NESTED_LISTING_MARK: u8 = 0xFC;
/// The referrer's whole URL before the rest of the entry.
const VIA_MARK: u8 = 0xFB;
/// The referrer's path and query before the rest of the entry: its origin
/// is the entry's.
const SAME_ORIGIN_VIA_MARK: u8 = 0xFA;
/// Before all of the above: the entry was put back once behind the
/// canonical URL its page declared (`Entry::waited`).
const WAITED_MARK: u8 = 0xF9;

/// Sitemaps and feeds queued per host (`crawl.max_listings_per_host`):
/// host key -> count, all runs together.
pub const LISTINGS_PER_HOST: TableDefinition<&str, u64> = TableDefinition::new("crawl_listings_per_host");

fn encode(depth: u32, url: &Url) -> Vec<u8> {
    let mut v = depth.to_le_bytes().to_vec();
    v.extend_from_slice(url.as_str().as_bytes());
    v
}

/// `entry` in its shortest form (see [`FRONTIER`]): the plain one when it
/// has no attempts, wait, revisit or listing, its referrer (if any) first.
fn encode_entry(e: &Entry) -> Vec<u8> {
    let mut v = encode_unwaited(e);
    if e.waited && v.len() >= 4 {
        v.insert(4, WAITED_MARK);
    }
    v
}

/// [`encode_entry`] but for [`WAITED_MARK`].
fn encode_unwaited(e: &Entry) -> Vec<u8> {
    let plain = e.attempts == 0 && e.not_before_ms == 0 && e.revisit.is_none() && !e.listing;
    let body = if plain {
        encode(e.depth, &e.url)
    } else {
        encode_retry(e)
    };
    let Some(via) = e.via.as_deref() else {
        return body;
    };
    let origin = origin_of(&e.url);
    let (mark, stored) = match via.strip_prefix(&*origin) {
        Some(rest) if rest.starts_with('/') => (SAME_ORIGIN_VIA_MARK, rest),
        _ => (VIA_MARK, via),
    };
    let Ok(len) = u32::try_from(stored.len()) else {
        return body;
    };
    let mut v = Vec::with_capacity(body.len() + 5 + stored.len());
    v.extend_from_slice(&body[..4]);
    v.push(mark);
    v.extend_from_slice(&len.to_le_bytes());
    v.extend_from_slice(stored.as_bytes());
    v.extend_from_slice(&body[4..]);
    v
}

/// The ASCII serialization of `url`'s origin, borrowed from the URL where
/// it is the URL's beginning (http and https without user info: the `url`
/// crate writes the host as the origin does and leaves a default port
/// out): the writer asks it of every link it queues with a referrer, and
/// formatting it each time was a few percent of the saturated writer's
/// perf samples (issue 37).
fn origin_of(url: &Url) -> std::borrow::Cow<'_, str> {
    if matches!(url.scheme(), "http" | "https") && url.username().is_empty() && url.password().is_none() {
        std::borrow::Cow::Borrowed(&url[..url::Position::BeforePath])
    } else {
        std::borrow::Cow::Owned(url.origin().ascii_serialization())
    }
}

/// An entry with its referrer (see [`FRONTIER`]), or as stored without.
fn decode(seq: u64, bytes: &[u8]) -> Option<Entry> {
    if bytes.get(4) == Some(&WAITED_MARK) {
        let mut rest = bytes.get(..4)?.to_vec();
        rest.extend_from_slice(bytes.get(5..)?);
        let mut e = decode_unwaited(seq, &rest)?;
        e.waited = true;
        return Some(e);
    }
    decode_unwaited(seq, bytes)
}

/// [`decode`] of an entry without [`WAITED_MARK`].
fn decode_unwaited(seq: u64, bytes: &[u8]) -> Option<Entry> {
    let mark = bytes.get(4).copied();
    if !matches!(mark, Some(VIA_MARK | SAME_ORIGIN_VIA_MARK)) {
        return decode_body(seq, bytes);
    }
    let len = u32::from_le_bytes(bytes.get(5..9)?.try_into().ok()?) as usize;
    let stored = std::str::from_utf8(bytes.get(9..9 + len)?).ok()?;
    let mut rest = bytes.get(..4)?.to_vec();
    rest.extend_from_slice(bytes.get(9 + len..)?);
    let mut e = decode_body(seq, &rest)?;
    e.via = Some(if mark == Some(SAME_ORIGIN_VIA_MARK) {
        format!("{}{stored}", origin_of(&e.url))
    } else {
        stored.to_owned()
    });
    Some(e)
}

/// An entry with its attempts, wait and revisit (see [`FRONTIER`]).
fn encode_retry(e: &Entry) -> Vec<u8> {
    let mut v = e.depth.to_le_bytes().to_vec();
    v.push(if e.revisit.is_some() {
        REVISIT_MARK
    } else if e.listing && e.nest > 0 {
        NESTED_LISTING_MARK
    } else if e.listing {
        LISTING_MARK
    } else {
        RETRY_MARK
    });
    v.extend_from_slice(&e.attempts.to_le_bytes());
    v.extend_from_slice(&e.not_before_ms.to_le_bytes());
    if e.revisit.is_none() && e.listing && e.nest > 0 {
        v.extend_from_slice(&e.nest.to_le_bytes());
    }
    if let Some(r) = &e.revisit {
        let json = serde_json::to_vec(r).unwrap_or_default();
        v.extend_from_slice(&u32::try_from(json.len()).unwrap_or(0).to_le_bytes());
        v.extend_from_slice(&json);
    }
    v.extend_from_slice(e.url.as_str().as_bytes());
    v
}

fn decode_body(seq: u64, bytes: &[u8]) -> Option<Entry> {
    let depth = u32::from_le_bytes(bytes.get(0..4)?.try_into().ok()?);
    let mark = bytes.get(4).copied();
    let (attempts, not_before_ms, mut rest) = if matches!(
        mark,
        Some(RETRY_MARK | REVISIT_MARK | LISTING_MARK | NESTED_LISTING_MARK)
    ) {
        (
            u32::from_le_bytes(bytes.get(5..9)?.try_into().ok()?),
            u64::from_le_bytes(bytes.get(9..17)?.try_into().ok()?),
            bytes.get(17..)?,
        )
    } else {
        (0, 0, bytes.get(4..)?)
    };
    let mut revisit = None;
    let mut nest = 0;
    if mark == Some(NESTED_LISTING_MARK) {
        nest = u32::from_le_bytes(rest.get(0..4)?.try_into().ok()?);
        rest = rest.get(4..)?;
    }
    if mark == Some(REVISIT_MARK) {
        let len = u32::from_le_bytes(rest.get(0..4)?.try_into().ok()?) as usize;
        revisit = Some(Box::new(serde_json::from_slice(rest.get(4..4 + len)?).ok()?));
        rest = rest.get(4 + len..)?;
    }
    let url = Url::parse(std::str::from_utf8(rest).ok()?).ok()?;
    Some(Entry {
        attempts,
        not_before_ms,
        revisit,
        listing: matches!(mark, Some(LISTING_MARK | NESTED_LISTING_MARK)),
        nest,
        ..Entry::new(seq, url, depth)
    })
}

/// What became of a sitemap or feed offered to the frontier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    Queued,
    /// The URL tier has seen its URL.
    Seen,
    /// Beyond `crawl.max_listing_depth` or its host's listing budget.
    OverBound,
}

/// The listing bounds of a crawl (`crate::listing::Bounds`) and, on a
/// write transaction, the count they are checked against: what was queued
/// per host commits with the entries themselves, so a resumed crawl goes
/// on counting where the last one stopped.
pub struct ListingBudget<'t> {
    per_host: Table<'t, &'static str, u64>,
    bounds: crate::listing::Bounds,
}

impl<'t> ListingBudget<'t> {
    pub fn open(txn: &'t WriteTransaction, bounds: crate::listing::Bounds) -> simcrawl_dedup::Result<Self> {
        Ok(ListingBudget {
            per_host: txn.open_table(LISTINGS_PER_HOST)?,
            bounds,
        })
    }
}

/// Adds a sitemap or feed at `depth` and `nest`, found by `via`, unless
/// the URL tier has seen its URL or it is over the listing bounds (counted
/// in `budget`, in the caller's transaction like the entry itself).
pub fn enqueue_listing(
    d: &Deduper<RedbStore>,
    tables: &mut dyn Tables,
    (frontier, budget): (&mut Table<'_, u64, &'static [u8]>, &mut ListingBudget<'_>),
    next_seq: &mut u64,
    link: &Candidate,
    (depth, nest, via): (u32, u32, Option<&str>),
) -> simcrawl_dedup::Result<Offered> {
    if budget.bounds.too_deep(nest) {
        return Ok(Offered::OverBound);
    }
    let host = host_key(&link.url);
    let queued = budget.per_host.get(host.as_str())?.map_or(0, |v| v.value());
    if queued >= budget.bounds.per_host {
        return Ok(Offered::OverBound);
    }
    match d.check_url_in(tables, link.url.as_str(), link.canonical.clone())? {
        UrlVerdict::Seen { .. } => Ok(Offered::Seen),
        // New (UrlVerdict is non_exhaustive).
        _ => {
            budget.per_host.insert(host.as_str(), queued + 1)?;
            insert_listing(frontier, next_seq, &link.url, (depth, nest), via)?;
            Ok(Offered::Queued)
        }
    }
}

/// A sitemap or feed entry at the end of the frontier.
fn insert_listing(
    frontier: &mut Table<'_, u64, &'static [u8]>,
    next_seq: &mut u64,
    url: &Url,
    (depth, nest): (u32, u32),
    via: Option<&str>,
) -> simcrawl_dedup::Result<()> {
    let e = Entry {
        listing: true,
        nest,
        via: via.map(str::to_owned),
        ..fresh(*next_seq, url, depth)
    };
    append(frontier, next_seq, &e)
}

/// Puts the revisits of the pages `due` (taken out of the schedule) at the
/// end of the frontier, with the validators of their last fetch; returns
/// their URLs.
pub fn enqueue_due(
    frontier: &mut Table<'_, u64, &'static [u8]>,
    next_seq: &mut u64,
    due: Vec<crate::revisit::PageRecord>,
) -> simcrawl_dedup::Result<Vec<Url>> {
    let mut urls = Vec::with_capacity(due.len());
    for rec in due {
        let Ok(url) = Url::parse(&rec.url) else { continue };
        if rec.listing {
            // Read again as it is: a sitemap or feed is never judged.
            insert_listing(frontier, next_seq, &url, (rec.depth, rec.nest), None)?;
            urls.push(url);
            continue;
        }
        // A pending judgement asks for the whole page: a 304 to the old
        // validators would leave nothing to judge.
        let r = crate::frontier::Revisit {
            rejudge: rec.rejudge,
            since: if rec.rejudge {
                Default::default()
            } else {
                rec.since
            },
        };
        enqueue_revisit(frontier, next_seq, &url, rec.depth, r)?;
        urls.push(url);
    }
    Ok(urls)
}

/// Puts a revisit of `url` at the end of the frontier (`crate::revisit`):
/// not through the URL tier, which knows the URL.
pub fn enqueue_revisit(
    frontier: &mut Table<'_, u64, &'static [u8]>,
    next_seq: &mut u64,
    url: &Url,
    depth: u32,
    revisit: crate::frontier::Revisit,
) -> simcrawl_dedup::Result<()> {
    let e = Entry {
        revisit: Some(Box::new(revisit)),
        ..fresh(*next_seq, url, depth)
    };
    append(frontier, next_seq, &e)
}

/// Adds a link at `depth`, found by `via` (`None`: a seed), unless the URL
/// tier has seen it; returns whether it was added. Runs inside the caller's
/// transaction.
pub fn enqueue(
    d: &Deduper<RedbStore>,
    tables: &mut dyn Tables,
    frontier: &mut Table<'_, u64, &'static [u8]>,
    next_seq: &mut u64,
    link: &Candidate,
    (depth, via): (u32, Option<&str>),
) -> simcrawl_dedup::Result<bool> {
    match d.check_url_in(tables, link.url.as_str(), link.canonical.clone())? {
        UrlVerdict::Seen { .. } => Ok(false),
        // New (UrlVerdict is non_exhaustive).
        _ => {
            reinsert(frontier, next_seq, &link.url, (depth, via))?;
            Ok(true)
        }
    }
}

/// Puts `url` back at the end of the frontier at `depth`, without asking
/// the URL tier: for a URL it knows whose page was never fetched (an entry
/// a URL rewrite rule folded before its fetch, given back when the rule is
/// withdrawn, `crate::dust`). The caller makes sure it is not queued twice.
pub fn reinsert(
    frontier: &mut Table<'_, u64, &'static [u8]>,
    next_seq: &mut u64,
    url: &Url,
    (depth, via): (u32, Option<&str>),
) -> simcrawl_dedup::Result<()> {
    let e = Entry {
        via: via.map(str::to_owned),
        ..fresh(*next_seq, url, depth)
    };
    append(frontier, next_seq, &e)
}

/// Puts `entry` back at the end of the frontier after a transient failure:
/// one more attempt, not fetched before `not_before_ms`. The caller removes
/// the old entry in the same transaction.
pub fn requeue(
    frontier: &mut Table<'_, u64, &'static [u8]>,
    next_seq: &mut u64,
    entry: &Entry,
    not_before_ms: u64,
) -> simcrawl_dedup::Result<()> {
    let again = Entry {
        seq: *next_seq,
        attempts: entry.attempts + 1,
        not_before_ms,
        ..entry.clone()
    };
    append(frontier, next_seq, &again)
}

/// Puts `entry` back at the end of the frontier, behind the canonical URL
/// its page declared (`crate::canonical`), not before
/// [`crate::canonical::WAIT_MS`], to be judged at its next fetch whatever
/// it declares then. Not an attempt: its attempts stay. The
/// caller removes the old entry in the same transaction.
pub fn wait_behind_canonical(
    frontier: &mut Table<'_, u64, &'static [u8]>,
    next_seq: &mut u64,
    entry: &Entry,
) -> simcrawl_dedup::Result<()> {
    let again = Entry {
        seq: *next_seq,
        not_before_ms: crate::frontier::now_ms().saturating_add(crate::canonical::WAIT_MS),
        waited: true,
        ..entry.clone()
    };
    append(frontier, next_seq, &again)
}

/// A page entry of `url` at `depth` under `seq`, never tried, due at once,
/// found by no page: what the kinds of entry start from.
fn fresh(seq: u64, url: &Url, depth: u32) -> Entry {
    Entry::new(seq, url.clone(), depth)
}

/// `e` (whose `seq` is `next_seq`) at the end of the frontier.
fn append(
    frontier: &mut Table<'_, u64, &'static [u8]>,
    next_seq: &mut u64,
    e: &Entry,
) -> simcrawl_dedup::Result<()> {
    frontier.insert(*next_seq, encode_entry(e).as_slice())?;
    *next_seq += 1;
    Ok(())
}

/// Opens the frontier table on a write transaction.
pub fn open(txn: &WriteTransaction) -> simcrawl_dedup::Result<Table<'_, u64, &'static [u8]>> {
    Ok(txn.open_table(FRONTIER)?)
}

/// The in-memory window over the stored frontier: entries loaded in order,
/// the ones being fetched, and per-host counts so that one slow host cannot
/// take every fetch slot.
///
/// Entries wait in one queue per host, and hosts are ordered by the seq of
/// their first entry: handing out the next entry looks at one queue per
/// host at most, never at every entry (a crawl of one busy host has 20,000
/// entries of it in the window, all behind its full slots).
#[derive(Debug, Default)]
pub struct Window {
    /// Each host's entries, in seq order.
    queues: HashMap<String, VecDeque<Entry>>,
    /// Hosts with entries, by the seq of their first one.
    order: BTreeMap<u64, String>,
    /// Entries in `queues`.
    len: usize,
    /// Highest seq loaded so far.
    loaded_upto: Option<u64>,
    /// Entries not yet committed, with their host while their fetch runs.
    in_flight: HashMap<u64, Option<String>>,
    per_host: HashMap<String, usize>,
    /// Whether the last load found the stored frontier exhausted.
    exhausted: bool,
    /// Set when a scan found nothing to hand out. Until a host slot is
    /// freed, entries are loaded or an entry falls due, another scan would
    /// find nothing either: the dispatcher asks again at every turn.
    stalled: Option<Stall>,
}

/// Why the last scan of the window found nothing (see `Window::stalled`).
#[derive(Debug, Clone, Copy)]
struct Stall {
    per_host_limit: usize,
    /// When the soonest entry that was not yet due falls due.
    retry_at_ms: u64,
}

/// Entries kept in memory at most.
const WINDOW: usize = 20_000;

impl Window {
    /// Whether [`Window::refill`] could load anything: the window is low and
    /// the store was not found empty since the last [`Window::poke`].
    pub fn wants_refill(&self) -> bool {
        self.len < WINDOW / 2 && !self.exhausted
    }

    /// Loads more stored entries when the window runs low.
    pub fn refill(&mut self, db: &redb::Database) -> Result<()> {
        if self.len >= WINDOW / 2 {
            return Ok(());
        }
        let txn = db.begin_read()?;
        let table = match txn.open_table(FRONTIER) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => {
                self.exhausted = true;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let start = self.loaded_upto.map_or(0, |s| s + 1);
        let mut n = 0;
        for item in table.range(start..)? {
            let (k, v) = item?;
            let seq = k.value();
            self.loaded_upto = Some(seq);
            n += 1;
            if let Some(e) = decode(seq, v.value()) {
                self.push(host_key(&e.url), e);
            } else {
                tracing::warn!(seq, "unreadable frontier entry skipped");
            }
            if self.len >= WINDOW {
                break;
            }
        }
        self.exhausted = n == 0;
        Ok(())
    }

    /// Adds a loaded entry (seqs come in increasing order).
    fn push(&mut self, host: String, e: Entry) {
        match self.queues.get_mut(&host) {
            Some(q) => q.push_back(e),
            None => {
                self.order.insert(e.seq, host.clone());
                self.queues.insert(host, VecDeque::from([e]));
            }
        }
        self.len += 1;
        self.stalled = None;
    }

    /// The next entry that is due and whose host has room, if any (it is
    /// marked in flight).
    pub fn next(&mut self, per_host_limit: usize) -> Option<Entry> {
        let now = now_ms();
        if let Some(s) = self.stalled
            && s.per_host_limit == per_host_limit
            && now < s.retry_at_ms
        {
            return None;
        }
        let mut soonest = u64::MAX;
        let mut found = None;
        for (&first, host) in &self.order {
            if self.per_host.get(host).copied().unwrap_or(0) >= per_host_limit {
                continue;
            }
            let Some(q) = self.queues.get(host) else {
                continue;
            };
            // Usually the first: only retried entries wait.
            match q.iter().position(|e| e.not_before_ms <= now) {
                Some(i) => {
                    found = Some((first, host.clone(), i));
                    break;
                }
                None => soonest = q.iter().map(|e| e.not_before_ms).fold(soonest, u64::min),
            }
        }
        let Some((first, host, i)) = found else {
            self.stalled = Some(Stall {
                per_host_limit,
                retry_at_ms: soonest,
            });
            return None;
        };
        let q = self.queues.get_mut(&host)?;
        let e = q.remove(i)?;
        self.len -= 1;
        if i == 0 {
            self.order.remove(&first);
            match q.front() {
                Some(next) => {
                    self.order.insert(next.seq, host.clone());
                }
                None => {
                    self.queues.remove(&host);
                }
            }
        }
        *self.per_host.entry(host.clone()).or_insert(0) += 1;
        self.in_flight.insert(e.seq, Some(host));
        Some(e)
    }

    /// Frees the entry's host slot: its fetch is over, though its result may
    /// not be committed yet. Host limits count fetches, not commits, so a
    /// slow disk never throttles fetching.
    pub fn released(&mut self, seq: u64) {
        if let Some(Some(host)) = self.in_flight.get_mut(&seq).map(Option::take)
            && let Some(n) = self.per_host.get_mut(&host)
        {
            *n -= 1;
            self.stalled = None;
            if *n == 0 {
                self.per_host.remove(&host);
            }
        }
    }

    /// Marks an entry done (its result is committed).
    pub fn done(&mut self, seq: u64) {
        self.released(seq);
        self.in_flight.remove(&seq);
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    pub fn pending(&self) -> usize {
        self.len
    }

    /// Nothing loaded, nothing in flight, nothing more stored.
    pub fn is_finished(&self) -> bool {
        self.len == 0 && self.in_flight.is_empty() && self.exhausted
    }

    /// Forces the next refill to look at the store again (new entries were
    /// committed).
    pub fn poke(&mut self) {
        self.exhausted = false;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn retry_state_survives_the_store_and_old_entries_still_read() {
        let url = Url::parse("http://example.com/a?b=1").unwrap();
        let old = decode(7, &encode(3, &url)).unwrap();
        assert_eq!((old.depth, old.attempts, old.not_before_ms), (3, 0, 0));
        assert_eq!(old.url, url);
        let again = Entry {
            attempts: 2,
            not_before_ms: 1_700_000_000_123,
            ..old
        };
        assert_eq!(decode(7, &encode_retry(&again)), Some(again.clone()));
        assert_eq!(decode(7, &[1, 0, 0, 0, RETRY_MARK, 1]), None);
        // A revisit keeps its validators and its rejudge flag, retried too.
        let revisit = Entry {
            revisit: Some(Box::new(crate::frontier::Revisit {
                rejudge: true,
                since: simcrawl_fetch::Validators {
                    etag: Some("\"x\"".into()),
                    last_modified: None,
                },
            })),
            ..again
        };
        assert_eq!(decode(7, &encode_retry(&revisit)), Some(revisit));
        assert_eq!(decode(7, &[1, 0, 0, 0, REVISIT_MARK, 1, 0, 0, 0]), None);
    }

    /// An origin borrowed from the URL is the one `url` serializes, and
    /// URLs whose beginning is not their origin (user info, other schemes)
    /// still get theirs.
    #[test]
    fn origins_borrowed_from_the_url_are_the_serialized_ones() {
        for (s, borrowed) in [
            ("http://example.com/a", true),
            ("https://example.com:443/a?b#c", true),
            ("http://example.com:8080", true),
            ("http://[::1]:9000/x", true),
            ("http://例子.测试/路径", true),
            ("HTTP://EXAMPLE.COM:80/", true),
            ("http://user:pw@example.com/a", false),
            ("http://user@example.com:81/a", false),
            ("ftp://example.com/a", false),
            ("file:///tmp/a", false),
        ] {
            let url = Url::parse(s).unwrap();
            let origin = origin_of(&url);
            assert_eq!(*origin, url.origin().ascii_serialization(), "{s}");
            assert_eq!(matches!(origin, std::borrow::Cow::Borrowed(_)), borrowed, "{s}");
        }
    }

    /// The referrer is read back, whole or by path when it shares the
    /// entry's origin, with every form; entries stored without one read as
    /// before, with none.
    #[test]
    fn via_survives_the_store_compactly_and_old_entries_have_none() {
        let url = Url::parse("http://example.com:8080/a?b=1").unwrap();
        let old = decode(3, &encode(2, &url)).unwrap();
        assert_eq!(old.via, None);
        let same = Entry {
            via: Some("http://example.com:8080/index?page=2".into()),
            ..old.clone()
        };
        let stored = encode_entry(&same);
        assert_eq!(stored[4], SAME_ORIGIN_VIA_MARK);
        assert_eq!(stored.len(), encode(2, &url).len() + 5 + "/index?page=2".len());
        assert_eq!(decode(3, &stored), Some(same.clone()));
        for e in [
            Entry {
                via: Some("https://other.example/feed.xml".into()),
                ..old.clone()
            },
            Entry {
                attempts: 2,
                not_before_ms: 9,
                ..same.clone()
            },
            Entry {
                listing: true,
                nest: 3,
                ..same.clone()
            },
            Entry {
                revisit: Some(Box::default()),
                ..same.clone()
            },
            // Put back behind its canonical: with and without a referrer,
            // plain or with attempts and a due time.
            Entry {
                waited: true,
                ..old.clone()
            },
            Entry {
                waited: true,
                attempts: 1,
                not_before_ms: 7,
                ..same.clone()
            },
        ] {
            assert_eq!(decode(3, &encode_entry(&e)), Some(e));
        }
        assert!(!decode(3, &encode_entry(&same)).unwrap().waited);
        // A torn prefix is unreadable, not misread.
        assert_eq!(decode(3, &[1, 0, 0, 0, VIA_MARK, 200, 0, 0, 0, b'x']), None);
    }

    #[test]
    fn entries_wait_until_due() {
        let mut w = Window::default();
        let url = Url::parse("http://example.com/").unwrap();
        let later = Entry {
            attempts: 1,
            not_before_ms: now_ms() + 60_000,
            ..Entry::new(0, url.clone(), 0)
        };
        let now = Entry {
            seq: 1,
            not_before_ms: 0,
            ..later.clone()
        };
        w.push(host_key(&url), later);
        w.push(host_key(&url), now);
        assert_eq!(w.next(8).map(|e| e.seq), Some(1));
        assert_eq!(w.next(8), None);
        assert_eq!(w.pending(), 1);
    }

    /// A loaded entry of `url`, with its host key, due at `not_before_ms`.
    fn entry(seq: u64, url: &str, not_before_ms: u64) -> (String, Entry) {
        let url = Url::parse(url).unwrap();
        (
            host_key(&url),
            Entry {
                not_before_ms,
                ..Entry::new(seq, url, 0)
            },
        )
    }

    /// A scan that found nothing is not repeated until something changes,
    /// and each change that can make an entry eligible ends the stall.
    #[test]
    fn a_stalled_window_wakes_on_a_freed_slot_a_due_entry_and_a_load() {
        let mut w = Window::default();
        let (h, e) = entry(0, "http://a.test/0", 0);
        w.push(h, e);
        let (h, e) = entry(1, "http://a.test/1", 0);
        w.push(h, e);
        let (h, e) = entry(2, "http://b.test/0", now_ms() + 150);
        w.push(h, e);
        assert_eq!(w.next(1).map(|e| e.seq), Some(0));
        // a.test is full, b.test's entry not due yet.
        assert_eq!(w.pending(), 2);
        assert_eq!(w.next(1), None);
        assert!(w.stalled.is_some());
        // A larger limit is another question.
        assert_eq!(w.next(2).map(|e| e.seq), Some(1));
        assert_eq!(w.next(2), None);
        // A freed slot of a.test: nothing of a.test is left, still nothing.
        w.released(0);
        assert!(w.stalled.is_none());
        assert_eq!(w.next(2), None);
        // A new entry (as a load pushes it) ends the stall.
        let (h, e) = entry(3, "http://c.test/0", 0);
        w.push(h, e);
        assert_eq!(w.next(2).map(|e| e.seq), Some(3));
        // b.test's entry is handed out once due, without any other change.
        assert_eq!(w.next(2), None);
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert_eq!(w.next(2).map(|e| e.seq), Some(2));
    }

    /// Hosts with room are served in the order their entries were loaded.
    #[test]
    fn entries_of_hosts_with_room_leave_in_seq_order() {
        let mut w = Window::default();
        for (seq, url) in [
            (0, "http://a.test/0"),
            (1, "http://b.test/0"),
            (2, "http://a.test/1"),
            (3, "http://c.test/0"),
        ] {
            let (h, e) = entry(seq, url, 0);
            w.push(h, e);
        }
        let order: Vec<u64> = std::iter::from_fn(|| w.next(8).map(|e| e.seq)).collect();
        assert_eq!(order, [0, 1, 2, 3]);
        assert_eq!(w.pending(), 0);
        assert_eq!(w.in_flight(), 4);
        // One slot per host: a.test's second entry waits for its first.
        let mut w2 = Window::default();
        for (seq, url) in [
            (0, "http://a.test/0"),
            (1, "http://a.test/1"),
            (2, "http://b.test/0"),
        ] {
            let (h, e) = entry(seq, url, 0);
            w2.push(h, e);
        }
        let first: Vec<u64> = std::iter::from_fn(|| w2.next(1).map(|e| e.seq)).collect();
        assert_eq!(first, [0, 2]);
        w2.done(0);
        assert_eq!(w2.next(1).map(|e| e.seq), Some(1));
    }
}
