//! Site-level template learning: text blocks that recur on many pages of one host are
//! that host's template, whatever markup they sit in.
//!
//! Main-content extraction works on one page at a time and cannot tell a site's
//! boilerplate from its content when the markup gives no hint (an unnamed `<div>` with
//! a disclaimer, a notice box, a "related" list written as plain paragraphs). Across
//! pages it is easy: a block that appears on most pages of a host is not what any one
//! of them is about. Left in, such blocks make two distinct pages of the host look
//! alike to the near-duplicate tier, and two copies of one article under different
//! hosts look different.
//!
//! [`TemplateLearner`] keeps, per host, how many observed pages contained each block
//! (a line of [`crate::Page::text`]: a paragraph, heading or list item), by a stable
//! 64-bit digest. Memory is bounded: at most `max_hosts` hosts (the least recently
//! seen are evicted) and `max_blocks_per_host` digests per host (the rarest are
//! evicted: template blocks are by definition the frequent ones). The state is
//! `serde`-serialisable so a crawler can persist it and resume, whole or host by
//! host: [`TemplateLearner::take_changes`] names the hosts changed or evicted since
//! its last call, so a caller that stores one entry per host
//! ([`TemplateLearner::host_state`]) rewrites only those, and
//! [`TemplateLearner::from_hosts`] puts the entries back together.
//!
//! A block is template once its host has at least `min_pages` observed pages and the
//! block was on at least `min_share` of them. [`TemplateLearner::strip`] removes those
//! lines from a text, except when that would leave less than `min_kept_chars`
//! characters: a page made only of template (or nearly) keeps its text, so that two
//! distinct pages are never both reduced to nothing and then taken for duplicates.
//!
//! ```
//! use simcrawl_clean::{TemplateConfig, TemplateLearner};
//!
//! # fn main() -> Result<(), simcrawl_clean::CleanError> {
//! let mut learner = TemplateLearner::new(TemplateConfig { min_pages: 3, ..TemplateConfig::default() })?;
//! for i in 0..5 {
//!     learner.observe("docs.example.org", &format!("this page is incomplete, please help\nfacts about topic {i}, at length"));
//! }
//! assert_eq!(
//!     learner.strip("docs.example.org", "this page is incomplete, please help\nfacts about topic 9, at length"),
//!     "facts about topic 9, at length"
//! );
//! # Ok(())
//! # }
//! ```

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::CleanError;

mod blocks;

pub use blocks::{TemplateBlocks, TextBlocks};
use blocks::{blocks, digest};

/// Settings of a [`TemplateLearner`].
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TemplateConfig {
    /// Hosts remembered at once (default 10 000); the least recently observed go first.
    pub max_hosts: usize,
    /// Block digests kept per host (default 2048); the rarest go first.
    pub max_blocks_per_host: usize,
    /// Pages of a host to observe before any of its blocks counts as template
    /// (default 5): with fewer, every block of the first page would look like template.
    pub min_pages: u32,
    /// Share of the host's observed pages a block must be on to be template
    /// (default 0.8). A site's frame (menus, footers) is on nearly every
    /// page of its host; a block on half of them is as often the
    /// content's own structure, shared by the pages of one kind: the
    /// headings of every API item (`Returns:`, `Method Summary`, `See
    /// also`), a man page's sections, a mail's signature separator. Left out
    /// at half, those made sibling pages that say the same look less alike
    /// than they are, and by how much depended on which pages a crawl met
    /// first (issue 35, docs/EVAL.md "Issue 35, thirteenth round").
    pub min_share: f64,
    /// A stripped text shorter than this (in chars) is not stripped at all
    /// (default 20).
    pub min_kept_chars: usize,
    /// Pages of a host after which its template *settles* (default 50; 0: it
    /// never does): what counts as template is then the set its blocks made at
    /// that moment, for [`Self::settle_for_pages`] more pages, so sibling pages
    /// judged far apart in a crawl are signed with the same lines left out. The
    /// counts go on meanwhile, and the set is taken again from them at the end
    /// of each stretch: a redesigned site is followed.
    pub settle_pages: u32,
    /// Pages of a host a settled template holds before it is taken again from
    /// the counts (default 500).
    pub settle_for_pages: u32,
}

impl Default for TemplateConfig {
    fn default() -> Self {
        Self {
            max_hosts: 10_000,
            max_blocks_per_host: 2048,
            min_pages: 5,
            min_share: 0.8,
            min_kept_chars: 20,
            settle_pages: 50,
            settle_for_pages: 500,
        }
    }
}

impl TemplateConfig {
    fn validate(&self) -> Result<(), CleanError> {
        if self.max_hosts == 0 || self.max_blocks_per_host == 0 || self.min_pages == 0 {
            return Err(CleanError::InvalidConfig(
                "template max_hosts, max_blocks_per_host and min_pages must be positive".to_owned(),
            ));
        }
        if self.settle_pages > 0 && self.settle_for_pages == 0 {
            return Err(CleanError::InvalidConfig(
                "template settle_for_pages must be positive when settle_pages is".to_owned(),
            ));
        }
        if !(self.min_share > 0.0 && self.min_share <= 1.0) {
            return Err(CleanError::InvalidConfig(format!(
                "template min_share must be in (0, 1], not {}",
                self.min_share
            )));
        }
        Ok(())
    }
}

/// What is known of one host: the entry a caller stores per host
/// ([`TemplateLearner::host_state`], [`TemplateLearner::from_hosts`]). Its fields
/// are private; it is serialised as in the whole learner's state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct HostBlocks {
    /// Pages observed.
    pages: u32,
    /// Logical time of the last observation, for host eviction.
    last_seen: u64,
    /// Block digest -> pages it was on.
    blocks: BlockCounts,
    /// The settled template, once there is one (see
    /// [`TemplateConfig::settle_pages`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    settled: Option<Settled>,
}

/// How the maps of block digests hash them: foldhash, seeded per process.
/// A crawl's writer thread counts every line of every page it judges
/// ([`TemplateLearner::observe_blocks`]), and std's SipHash of each digest
/// was most of that count; a seeded hash still keeps a page's crafted lines
/// from piling into one bucket. The maps' order is never read (ties are
/// broken by digest, [`evict_rare`]), so the state is the same.
type DigestState = foldhash::fast::RandomState;

/// Block digest -> pages it was on ([`DigestState`]).
type BlockCounts = HashMap<u64, u32, DigestState>;

/// A host's template as it was when it settled.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
struct Settled {
    /// Pages of the host observed then.
    at: u32,
    /// Its blocks' digests, sorted.
    blocks: Vec<u64>,
}

/// Hosts whose entry changed since the last [`TemplateLearner::take_changes`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostChanges {
    /// Hosts observed or trimmed: their entry is to be written again.
    pub changed: Vec<String>,
    /// Hosts evicted (and not observed again since): their entry is to be removed.
    pub evicted: Vec<String>,
}

impl HostChanges {
    /// Whether nothing changed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.evicted.is_empty()
    }
}

/// Learns each host's template blocks from the pages it sees; see the module docs.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct TemplateLearner {
    config: TemplateConfig,
    clock: u64,
    hosts: HashMap<String, HostBlocks>,
    /// Hosts changed since the last [`TemplateLearner::take_changes`] (not part of
    /// the state: a learner read back has none).
    #[serde(skip)]
    changed: HashSet<String>,
    /// Hosts evicted since then.
    #[serde(skip)]
    evicted: HashSet<String>,
}

/// Equal when the learnt state is: the pending changes are not compared.
impl PartialEq for TemplateLearner {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config && self.clock == other.clock && self.hosts == other.hosts
    }
}

/// Pages a block must be on, of a host's `pages`, to be template.
fn need(pages: u32, min_share: f64) -> u32 {
    // At most `pages` or 2 (min_share <= 1): the cast cannot truncate.
    (f64::from(pages) * min_share).ceil().max(2.0) as u32
}

/// The distinct blocks of one page's text as [`TemplateLearner::observe`]
/// counts them (their digests, in order of first appearance). Hashing a
/// page's lines is the costly part of observing it and needs nothing of
/// the learner, so whoever reads the page can do it, and the learner's
/// owner only counts: a crawl's page tasks compute them in parallel, and
/// its one writer thread, which observes pages in the order it judges
/// them, holds the learner's lock for less time.
///
/// ```
/// use simcrawl_clean::{PageBlocks, TemplateConfig, TemplateLearner};
/// let mut a = TemplateLearner::new(TemplateConfig::default())?;
/// let mut b = TemplateLearner::new(TemplateConfig::default())?;
/// let page = "首页 | 关于我们\n正文第一段。\n首页 | 关于我们\n";
/// a.observe("help.example", page);
/// b.observe_blocks("help.example", &PageBlocks::of(page));
/// assert_eq!(a.host_state("help.example"), b.host_state("help.example"));
/// assert_eq!(PageBlocks::of(page).len(), 2, "a repeated block counts once");
/// # Ok::<(), simcrawl_clean::CleanError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageBlocks(Vec<u64>);

impl PageBlocks {
    /// The blocks of `text` (one per non-blank line, trimmed).
    pub fn of(text: &str) -> PageBlocks {
        TextBlocks::of(text).page_blocks()
    }

    /// How many distinct blocks the page has.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the page has no block (a blank text).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl TemplateLearner {
    /// An empty learner, refusing an inconsistent configuration.
    pub fn new(config: TemplateConfig) -> Result<Self, CleanError> {
        config.validate()?;
        Ok(Self {
            config,
            ..Self::default()
        })
    }

    /// A learner made of per-host entries saved earlier ([`Self::host_state`]), under
    /// `config`: the logical clock resumes from the latest entry, and the entries are
    /// cut down to `config`'s bounds at once (what that trims is reported by the next
    /// [`Self::take_changes`]). An inconsistent configuration is refused.
    pub fn from_hosts(
        config: TemplateConfig,
        hosts: impl IntoIterator<Item = (String, HostBlocks)>,
    ) -> Result<Self, CleanError> {
        let hosts: HashMap<String, HostBlocks> = hosts.into_iter().collect();
        let mut learner = Self {
            clock: hosts.values().map(|h| h.last_seen).max().unwrap_or(0),
            hosts,
            ..Self::new(config.clone())?
        };
        learner.reconfigure(config)?;
        Ok(learner)
    }

    /// The entry of `host`, to be stored on its own; `None` when the host is not
    /// remembered (never observed, or evicted).
    #[must_use]
    pub fn host_state(&self, host: &str) -> Option<&HostBlocks> {
        self.hosts.get(host)
    }

    /// The remembered hosts, in no particular order (e.g. to store every entry once,
    /// when a state saved whole is converted to per-host entries).
    pub fn host_names(&self) -> impl Iterator<Item = &str> {
        self.hosts.keys().map(String::as_str)
    }

    /// Whether any host changed or was evicted since the last [`Self::take_changes`].
    #[must_use]
    pub fn has_changes(&self) -> bool {
        !self.changed.is_empty() || !self.evicted.is_empty()
    }

    /// The hosts changed and evicted since the last call, and forgets them: a caller
    /// storing one entry per host writes the changed ones and removes the evicted
    /// ones, so a save costs what changed, not the whole state.
    pub fn take_changes(&mut self) -> HostChanges {
        let mut changed: Vec<String> = self.changed.drain().collect();
        let mut evicted: Vec<String> = self.evicted.drain().collect();
        changed.sort_unstable();
        evicted.sort_unstable();
        HostChanges { changed, evicted }
    }

    /// Records that `host`'s entry changed.
    fn touch(&mut self, host: &str) {
        if !self.changed.contains(host) {
            self.changed.insert(host.to_owned());
        }
        self.evicted.remove(host);
    }

    /// The configuration in force.
    #[must_use]
    pub fn config(&self) -> &TemplateConfig {
        &self.config
    }

    /// Hosts currently remembered.
    #[must_use]
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    /// Puts `config` in force, e.g. on a learner restored from a store that was written
    /// under other settings; the learnt counts are kept, cut down to the new bounds at
    /// once. An inconsistent configuration is refused and the learner left as it was.
    pub fn reconfigure(&mut self, config: TemplateConfig) -> Result<(), CleanError> {
        config.validate()?;
        self.config = config;
        while self.hosts.len() > self.config.max_hosts {
            self.evict_hosts();
        }
        let max_blocks = self.config.max_blocks_per_host;
        for (name, h) in &mut self.hosts {
            if h.blocks.len() > max_blocks {
                evict_rare(&mut h.blocks, max_blocks);
                if !self.changed.contains(name) {
                    self.changed.insert(name.clone());
                }
            }
        }
        Ok(())
    }

    /// Records one page of `host` (its cleaned text, one block per line). A block
    /// repeated within the page counts once.
    pub fn observe(&mut self, host: &str, text: &str) {
        self.observe_blocks(host, &PageBlocks::of(text));
    }

    /// [`Self::observe`] of a page whose blocks were computed beforehand
    /// ([`PageBlocks::of`] its text): the same counts.
    pub fn observe_blocks(&mut self, host: &str, page: &PageBlocks) {
        self.clock += 1;
        if !self.hosts.contains_key(host) && self.hosts.len() >= self.config.max_hosts {
            self.evict_hosts();
        }
        self.touch(host);
        let max_blocks = self.config.max_blocks_per_host;
        let entry = self.hosts.entry(host.to_owned()).or_default();
        entry.pages = entry.pages.saturating_add(1);
        entry.last_seen = self.clock;
        for &d in &page.0 {
            let c = entry.blocks.entry(d).or_insert(0);
            *c = c.saturating_add(1);
        }
        if entry.blocks.len() > max_blocks {
            evict_rare(&mut entry.blocks, max_blocks);
        }
        let (settle, stretch) = (self.config.settle_pages, self.config.settle_for_pages);
        let due = match &entry.settled {
            None => entry.pages >= settle,
            Some(s) => entry.pages >= s.at.saturating_add(stretch),
        };
        if settle > 0 && due && entry.pages >= self.config.min_pages {
            let need = need(entry.pages, self.config.min_share);
            let mut blocks: Vec<u64> = entry
                .blocks
                .iter()
                .filter(|&(_, &c)| c >= need)
                .map(|(&d, _)| d)
                .collect();
            blocks.sort_unstable();
            entry.settled = Some(Settled {
                at: entry.pages,
                blocks,
            });
        }
    }

    /// Whether `block` (one line of a cleaned text) is part of `host`'s template.
    #[must_use]
    pub fn is_template(&self, host: &str, block: &str) -> bool {
        self.hosts
            .get(host)
            .is_some_and(|h| self.frequent(h, digest(block.trim())))
    }

    fn frequent(&self, h: &HostBlocks, d: u64) -> bool {
        if self.config.settle_pages > 0
            && let Some(settled) = &h.settled
        {
            return settled.blocks.binary_search(&d).is_ok();
        }
        if h.pages < self.config.min_pages {
            return false;
        }
        h.blocks
            .get(&d)
            .is_some_and(|&c| c >= need(h.pages, self.config.min_share))
    }

    /// `text` without the lines that are `host`'s template; `text` itself when the host
    /// is not learnt yet or when too little would be left (see the module docs).
    #[must_use]
    pub fn strip(&self, host: &str, text: &str) -> String {
        let Some(h) = self.hosts.get(host) else {
            return text.to_owned();
        };
        let mut out = String::with_capacity(text.len());
        for b in blocks(text) {
            if !self.frequent(h, digest(b)) {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(b);
            }
        }
        let kept = out.chars().filter(|c| !c.is_whitespace()).count();
        if kept < self.config.min_kept_chars {
            return text.to_owned();
        }
        out
    }

    /// The lines of `text` that are not `host`'s template, however few are left
    /// (unlike [`TemplateLearner::strip`], which keeps a text that would be left
    /// almost empty): for callers that decide themselves what a page made of
    /// template is judged on. `None` when nothing is template.
    ///
    /// ```
    /// use simcrawl_clean::{TemplateConfig, TemplateLearner};
    /// let mut l = TemplateLearner::new(TemplateConfig { min_pages: 2, ..TemplateConfig::default() }).unwrap();
    /// l.observe("h", "copyright the docs team\nabout a");
    /// l.observe("h", "copyright the docs team\nabout b");
    /// assert_eq!(l.own_lines("h", "copyright the docs team\nabout c").as_deref(), Some("about c"));
    /// assert_eq!(l.own_lines("h", "copyright the docs team").as_deref(), Some(""));
    /// assert_eq!(l.own_lines("h", "about d"), None);
    /// ```
    #[must_use]
    pub fn own_lines(&self, host: &str, text: &str) -> Option<String> {
        self.hosts.get(host)?;
        let blocks = TextBlocks::of(text);
        self.template_of(host, &blocks).map(|t| blocks.without(&t))
    }

    /// Which of `blocks` are `host`'s template, looked up by the digests
    /// they carry: [`Self::own_lines`] without digesting or copying, for a
    /// learner shared behind a lock (its readers hold it only for this).
    /// `None` when none is.
    #[must_use]
    pub fn template_of(&self, host: &str, blocks: &TextBlocks<'_>) -> Option<TemplateBlocks> {
        let h = self.hosts.get(host)?;
        let flags: Vec<bool> = blocks.digests().iter().map(|&d| self.frequent(h, d)).collect();
        flags.contains(&true).then_some(TemplateBlocks(flags))
    }

    /// Drops the least recently observed tenth of the hosts (at least one).
    fn evict_hosts(&mut self) {
        let mut times: Vec<u64> = self.hosts.values().map(|h| h.last_seen).collect();
        let k = (times.len() / 10).max(1).min(times.len());
        if k == 0 {
            return;
        }
        times.select_nth_unstable(k - 1);
        let cutoff = times[k - 1];
        let mut left = k;
        let mut gone = Vec::with_capacity(k);
        self.hosts.retain(|name, h| {
            if left > 0 && h.last_seen <= cutoff {
                left -= 1;
                gone.push(name.clone());
                false
            } else {
                true
            }
        });
        for name in gone {
            self.changed.remove(&name);
            self.evicted.insert(name);
        }
    }
}

/// Keeps the `max / 2` most frequent digests (ties: arbitrary), so that eviction runs
/// once per `max / 2` new blocks, not on every page.
fn evict_rare(blocks: &mut BlockCounts, max: usize) {
    let keep = (max / 2).max(1);
    let mut counts: Vec<u32> = blocks.values().copied().collect();
    if counts.len() <= keep {
        return;
    }
    // The keep-th largest count: strictly greater ones stay, equal ones fill up.
    let idx = counts.len() - keep;
    counts.select_nth_unstable(idx);
    let threshold = counts[idx];
    let room_at_threshold = keep - blocks.values().filter(|&&c| c > threshold).count();
    // Which of the blocks at the threshold stay is decided by their digests,
    // never by the map's (randomly seeded) order: the same pages must learn
    // the same template in every run, or `crawl dedup` of one corpus judges
    // a page on different text from one run to the next.
    let mut tied: Vec<u64> = blocks
        .iter()
        .filter(|&(_, &c)| c == threshold)
        .map(|(&d, _)| d)
        .collect();
    tied.sort_unstable();
    tied.truncate(room_at_threshold);
    let tied: HashSet<u64, DigestState> = tied.into_iter().collect();
    blocks.retain(|d, c| *c > threshold || (*c == threshold && tied.contains(d)));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_template_settles_for_a_stretch_then_follows_the_counts() {
        let settled = |settle_pages| {
            TemplateLearner::new(TemplateConfig {
                min_pages: 3,
                min_share: 0.5,
                settle_pages,
                settle_for_pages: 20,
                ..TemplateConfig::default()
            })
            .unwrap()
        };
        let (mut l, mut never) = (settled(10), settled(0));
        for i in 0..10 {
            let page = format!("site menu\ncontent of page {i}");
            l.observe("h", &page);
            never.observe("h", &page);
        }
        assert!(l.is_template("h", "site menu"));
        // Settled: a block on the next 10 pages (half of all) is not template
        // yet, while a learner that never settles takes it at once.
        for i in 0..10 {
            let page = format!("new sidebar\nmore of page {i}");
            l.observe("h", &page);
            never.observe("h", &page);
        }
        assert!(l.is_template("h", "site menu"));
        assert!(!l.is_template("h", "new sidebar"));
        assert!(never.is_template("h", "new sidebar"));
        assert_eq!(
            l.strip("h", "site menu\nnew sidebar\nthe page itself"),
            "new sidebar\nthe page itself"
        );
        // At the end of the stretch (page 30) the set is taken again from
        // the counts: the redesign's block is template, the old menu (on 10
        // pages of 30) no longer.
        for i in 0..10 {
            l.observe("h", &format!("new sidebar\nreport {i}"));
        }
        assert!(l.is_template("h", "new sidebar"));
        assert!(!l.is_template("h", "site menu"));
        // The settled set is part of the saved state.
        let back = TemplateLearner::from_hosts(
            l.config().clone(),
            [("h".to_owned(), l.host_state("h").unwrap().clone())],
        )
        .unwrap();
        assert!(back.is_template("h", "new sidebar"));
        assert!(!back.is_template("h", "site menu"));
        // settle_pages without a stretch is refused.
        assert!(
            TemplateLearner::new(TemplateConfig {
                settle_for_pages: 0,
                ..TemplateConfig::default()
            })
            .is_err()
        );
    }

    #[test]
    fn a_heading_on_most_pages_of_one_kind_is_content_and_the_frame_is_template() {
        // An API reference: a menu on every page, "Returns:" on the pages of
        // its functions (6 of 10), the rest its own.
        let observed = |config: TemplateConfig| {
            let mut l = TemplateLearner::new(config).unwrap();
            for i in 0..10 {
                let heading = if i < 6 { "returns:\n" } else { "" };
                l.observe(
                    "api",
                    &format!("all modules index search\n{heading}what item {i} does"),
                );
            }
            l
        };
        let l = observed(TemplateConfig::default());
        assert!(l.is_template("api", "all modules index search"));
        assert!(!l.is_template("api", "returns:"));
        assert_eq!(
            l.strip("api", "all modules index search\nreturns:\nwhat item 11 does"),
            "returns:\nwhat item 11 does"
        );
        // At half, as before the thirteenth round, the heading went too.
        let half = observed(TemplateConfig {
            min_share: 0.5,
            ..TemplateConfig::default()
        });
        assert!(half.is_template("api", "returns:"));
    }

    fn learner() -> TemplateLearner {
        TemplateLearner::new(TemplateConfig {
            min_pages: 3,
            ..TemplateConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn repeated_blocks_become_template_after_enough_pages() {
        let mut l = learner();
        let page = |i: usize| {
            format!(
                "本帮助页面尚不完整，请帮助我们完善\n第{i}页的内容，和别的页面都不一样，说明这个功能的用法。\n© example"
            )
        };
        l.observe("h.example", &page(0));
        l.observe("h.example", &page(1));
        // Two pages: too early to tell.
        assert_eq!(l.strip("h.example", &page(2)), page(2));
        l.observe("h.example", &page(2));
        assert!(l.is_template("h.example", "© example"));
        assert!(!l.is_template(
            "h.example",
            "第1页的内容，和别的页面都不一样，说明这个功能的用法。"
        ));
        assert_eq!(
            l.strip("h.example", &page(7)),
            "第7页的内容，和别的页面都不一样，说明这个功能的用法。"
        );
        // Other hosts are not affected.
        assert_eq!(l.strip("other.example", &page(7)), page(7));
    }

    #[test]
    fn a_page_of_template_only_keeps_its_text() {
        let mut l = learner();
        for i in 0..5 {
            l.observe(
                "h.example",
                &format!("menu home about contact\nfooter text here\npage {i} body text long enough"),
            );
        }
        let only = "menu home about contact\nfooter text here";
        assert_eq!(l.strip("h.example", only), only);
    }

    #[test]
    fn tables_stay_bounded() {
        let mut l = TemplateLearner::new(TemplateConfig {
            max_hosts: 10,
            max_blocks_per_host: 64,
            min_pages: 3,
            ..TemplateConfig::default()
        })
        .unwrap();
        for i in 0..1000 {
            let host = format!("h{}.example", i % 37);
            l.observe(
                &host,
                &format!("shared template line\nunique line {i}\nanother unique {i}"),
            );
            assert!(l.hosts() <= 10);
            assert!(l.hosts.values().all(|h| h.blocks.len() <= 64));
        }
        // The frequent block survived eviction of the rare ones.
        let last = format!("h{}.example", 999 % 37);
        for i in 0..5 {
            l.observe(&last, &format!("shared template line\nfresh {i}"));
        }
        assert!(l.is_template(&last, "shared template line"));
    }

    #[test]
    fn eviction_keeps_the_same_blocks_in_every_learner() {
        // Blocks tied at the eviction threshold: which stay must not depend
        // on a map's seed (two learners fed the same pages learn the same).
        let learn = || {
            let mut l = TemplateLearner::new(TemplateConfig {
                max_blocks_per_host: 16,
                min_pages: 2,
                ..TemplateConfig::default()
            })
            .unwrap();
            for i in 0..40 {
                l.observe("h.example", &format!("line a{i}\nline b{i}\nline c{i}"));
            }
            let mut kept: Vec<u64> = l.hosts["h.example"].blocks.keys().copied().collect();
            kept.sort_unstable();
            kept
        };
        let first = learn();
        assert!(!first.is_empty() && first.len() <= 16);
        for _ in 0..8 {
            assert_eq!(learn(), first);
        }
    }

    #[test]
    fn state_round_trips_through_serde() {
        let mut l = learner();
        for i in 0..4 {
            l.observe("h.example", &format!("banner\nbody {i}"));
        }
        let json = serde_json::to_string(&l).unwrap();
        let back: TemplateLearner = serde_json::from_str(&json).unwrap();
        assert_eq!(back, l);
        assert!(back.is_template("h.example", "banner"));
    }

    #[test]
    fn changes_name_the_hosts_to_write_and_to_remove() {
        let mut l = TemplateLearner::new(TemplateConfig {
            max_hosts: 10,
            min_pages: 2,
            ..TemplateConfig::default()
        })
        .unwrap();
        for i in 0..10 {
            l.observe(&format!("h{i}.example"), &format!("banner\nbody {i}"));
        }
        assert_eq!(l.take_changes().changed.len(), 10);
        assert!(!l.has_changes());
        l.observe("h3.example", "banner\nmore");
        assert_eq!(
            l.take_changes(),
            HostChanges {
                changed: vec!["h3.example".into()],
                evicted: Vec::new()
            }
        );
        // An eleventh host evicts the least recently seen one.
        l.observe("new.example", "banner\nbody");
        let c = l.take_changes();
        assert_eq!(c.changed, vec!["new.example".to_owned()]);
        assert_eq!(c.evicted, vec!["h0.example".to_owned()]);
        assert!(l.host_state("h0.example").is_none());
        // Evicted, then observed again before a save: written, not removed.
        for i in 20..32 {
            l.observe(&format!("h{i}.example"), "x");
        }
        l.observe("h1.example", "banner\nagain");
        let c = l.take_changes();
        assert!(c.changed.contains(&"h1.example".to_owned()));
        assert!(!c.evicted.contains(&"h1.example".to_owned()));
    }

    #[test]
    fn per_host_entries_rebuild_the_learner() {
        let mut l = learner();
        for i in 0..4 {
            l.observe("h.example", &format!("banner\nbody {i}"));
            l.observe("g.example", &format!("footer\ntext {i}"));
        }
        let entries: Vec<(String, HostBlocks)> = l
            .host_names()
            .map(|h| (h.to_owned(), l.host_state(h).unwrap().clone()))
            .collect();
        let back = TemplateLearner::from_hosts(l.config().clone(), entries.clone()).unwrap();
        assert_eq!(back, l, "the clock resumes from the latest entry");
        assert!(!back.has_changes());
        assert!(back.is_template("g.example", "footer"));
        // Under tighter bounds: trimmed at once, and the trim is a change to save.
        let mut small = TemplateLearner::from_hosts(
            TemplateConfig {
                max_hosts: 1,
                min_pages: 3,
                ..TemplateConfig::default()
            },
            entries,
        )
        .unwrap();
        assert_eq!(small.hosts(), 1);
        assert_eq!(small.take_changes().evicted, vec!["h.example".to_owned()]);
    }

    #[test]
    fn reconfigure_keeps_counts_within_the_new_bounds() {
        let mut l = learner();
        for i in 0..20 {
            l.observe(&format!("h{i}.example"), &format!("banner\nbody {i}"));
        }
        for i in 0..4 {
            l.observe("h.example", &format!("banner\nbody {i}"));
        }
        let bad = TemplateConfig {
            min_pages: 0,
            ..TemplateConfig::default()
        };
        assert!(l.reconfigure(bad).is_err());
        assert_eq!(l.config().min_pages, 3);
        l.reconfigure(TemplateConfig {
            max_hosts: 5,
            min_pages: 4,
            ..TemplateConfig::default()
        })
        .unwrap();
        assert!(l.hosts() <= 5);
        assert_eq!(l.config().max_hosts, 5);
        // The most recently observed host survived, with its counts.
        assert!(l.is_template("h.example", "banner"));
    }

    #[test]
    fn invalid_config_is_refused() {
        for c in [
            TemplateConfig {
                max_hosts: 0,
                ..TemplateConfig::default()
            },
            TemplateConfig {
                min_share: 0.0,
                ..TemplateConfig::default()
            },
            TemplateConfig {
                min_share: f64::NAN,
                ..TemplateConfig::default()
            },
        ] {
            assert!(TemplateLearner::new(c).is_err());
        }
    }

    #[test]
    fn digest_is_stable() {
        // Persisted state depends on these values never changing.
        assert_eq!(digest(""), 0xefd0_1f60_ba99_2926);
        assert_eq!(digest("template"), 0xfd55_258e_cfa4_a4ec);
        assert_eq!(digest("本帮助页面"), 0x8d8d_0c2c_4d3d_0dd5);
    }
}
