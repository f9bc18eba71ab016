//! Site-level template learning (`[template]` in `config/crawl.toml`), wired into the
//! crawler and `crawl dedup` over `html` lines.
//!
//! A block (a line of the cleaned text: paragraph, list item, notice, menu) that is on
//! many pages of one host is that host's template, whatever its text density. The
//! learner ([`simcrawl_clean::TemplateLearner`]) counts, per host, on how many observed pages
//! each block was. The text a page is signed with (its resemblance sketch, SimHash and
//! exact digest) is its cleaned text without its host's template blocks; the page is
//! observed after its verdict, so the first pages of a host are judged without it.
//! After `settle_pages` pages the host's template settles for `settle_for_pages`
//! more (the learner's counts go on and the set is taken again after each
//! stretch): a page's signed text then no longer depends on how many pages of
//! its host came before it (issue 35, docs/EVAL.md).
//! The text written to `kept.jsonl` stays the page's full text.
//!
//! The learner's state lives in the store, one entry per host
//! ([`Map::TemplateHosts`] of a [`LearnStore`]: a redb table for a local crawl,
//! a Redis hash shared by the workers of `crawl --redis`), and is loaded at start, so a resumed crawl (or a later `crawl dedup
//! --data-dir` run) judges its first pages with what earlier runs learnt. A save
//! writes only the hosts observed since the previous one and removes the evicted
//! ones ([`simcrawl_clean::TemplateLearner::take_changes`]): its cost follows what
//! changed, not how many hosts are known. It is made in a checkpoint transaction at
//! most every `save_interval_ms` (a host observed many times in that interval is
//! written once), and once more when the run ends; a crash forgets at most the
//! observations of that interval (the tiers and outputs are not affected), and what
//! a restart resumes from is always one save's state, every host as of that save.
//!
//! A store written before per-host entries holds the whole learner as one JSON
//! value ([`LEGACY_KEY`] in the `crawl_state` table): it is read and converted to
//! per-host entries when the store is opened, in one transaction.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use parking_lot::{Mutex, RwLock};
use serde::Deserialize;
use simcrawl_clean::{HostBlocks, TemplateConfig, TemplateLearner, TextBlocks};
use tracing::{info, warn};

use crate::learn::{LearnError, LearnStore, Map};

/// Blob holding the whole learner's state, as stores written before
/// per-host entries hold it; converted when the store is opened.
pub const LEGACY_KEY: &str = "template:learner";

/// The `[template]` table of `config/crawl.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TemplateSettings {
    /// Learn each host's template and leave it out of the text used for dedup
    /// (default on).
    pub enabled: bool,
    /// Pages of a host observed before any of its blocks counts as template (5).
    pub min_pages: u32,
    /// Share of the host's observed pages a block must be on to be template (0.8:
    /// a frame is on nearly every page; a block on half of them is as often
    /// the structure of one kind of page, `simcrawl_clean::TemplateConfig`).
    pub min_share: f64,
    /// A page left with fewer characters than this once its template is removed is
    /// judged on its full text (20).
    pub min_kept_chars: usize,
    /// Pages of a host after which its template settles for a stretch (50; 0:
    /// never).
    pub settle_pages: u32,
    /// Pages a settled template holds before it is taken again from the
    /// counts (500).
    pub settle_for_pages: u32,
    /// Hosts remembered at once; the least recently seen go first (10 000).
    pub max_hosts: usize,
    /// Block digests remembered per host; the rarest go first (2048).
    pub max_blocks_per_host: usize,
    /// Longest time between two saves of the learner in the store (5000 ms).
    pub save_interval_ms: u64,
}

impl Default for TemplateSettings {
    fn default() -> Self {
        let c = TemplateConfig::default();
        TemplateSettings {
            enabled: true,
            min_pages: c.min_pages,
            min_share: c.min_share,
            min_kept_chars: c.min_kept_chars,
            settle_pages: c.settle_pages,
            settle_for_pages: c.settle_for_pages,
            max_hosts: c.max_hosts,
            max_blocks_per_host: c.max_blocks_per_host,
            save_interval_ms: 5000,
        }
    }
}

impl TemplateSettings {
    /// The learner's settings.
    #[must_use]
    pub fn learner_config(&self) -> TemplateConfig {
        TemplateConfig {
            max_hosts: self.max_hosts,
            max_blocks_per_host: self.max_blocks_per_host,
            min_pages: self.min_pages,
            min_share: self.min_share,
            min_kept_chars: self.min_kept_chars,
            settle_pages: self.settle_pages,
            settle_for_pages: self.settle_for_pages,
        }
    }
}

/// The host a page's blocks are counted under (empty for a URL without one).
#[must_use]
pub fn host_of(url: &url::Url) -> &str {
    url.host_str().unwrap_or("")
}

/// When [`Templates::save_if_due`] writes a changed state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Save {
    /// Only when `save_interval_ms` has passed since the last save: the
    /// checkpoints of a running crawl or batch. A host observed on many pages
    /// in between is written once, not once per checkpoint.
    IfDue,
    /// Now: the end of a run, so nothing learnt is lost.
    Now,
}

/// What one save wrote: deterministic measures of its cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Saved {
    /// Host entries written.
    pub hosts: usize,
    /// Host entries removed (evicted hosts).
    pub removed: usize,
    /// Bytes of the entries written.
    pub bytes: usize,
}

struct Inner {
    learner: RwLock<TemplateLearner>,
    save_every: Duration,
    /// When the state was last saved (what changed since, the learner
    /// knows).
    saved: Mutex<Instant>,
}

/// The learner of a run, shared by the threads that sign pages (read: [`Self::own_lines`])
/// and the one that records verdicts (write: [`Self::observe`], saves). Cloning shares
/// it. Disabled (`[template] enabled = false`): strips and learns nothing.
#[derive(Clone, Default)]
pub struct Templates {
    inner: Option<Arc<Inner>>,
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates")
            .field("enabled", &self.inner.is_some())
            .finish_non_exhaustive()
    }
}

impl Templates {
    /// The learner of a run: the state saved in `store` when there is one (a
    /// resume, or the other workers of a shared crawl), put under the current
    /// settings, or an empty one. A state saved whole by an earlier version is
    /// converted to per-host entries first ([`migrate`]). A saved entry that
    /// cannot be read is reported and left out (learning starts over for its
    /// host; nothing else depends on it).
    pub fn load(settings: &TemplateSettings, store: Option<&mut dyn LearnStore>) -> Result<Self> {
        if !settings.enabled {
            return Ok(Templates::default());
        }
        let config = settings.learner_config();
        let learner = match store {
            None => TemplateLearner::new(config).context("invalid [template] settings")?,
            Some(store) => {
                migrate(store)?;
                let entries = read_hosts(store).context("cannot read the saved site templates")?;
                let learner =
                    TemplateLearner::from_hosts(config, entries).context("invalid [template] settings")?;
                if learner.hosts() > 0 {
                    info!(hosts = learner.hosts(), "site templates loaded");
                }
                learner
            }
        };
        Ok(Templates {
            inner: Some(Arc::new(Inner {
                learner: RwLock::new(learner),
                save_every: Duration::from_millis(settings.save_interval_ms),
                saved: Mutex::new(Instant::now()),
            })),
        })
    }

    /// The lines of `text` that are not `host`'s template, however few
    /// ([`TemplateLearner::own_lines`]); `None` when none is (or learning is off).
    #[must_use]
    pub fn own_lines(&self, host: &str, text: &str) -> Option<String> {
        self.own_lines_known(host, text, None)
    }

    /// [`Self::own_lines`], with the blocks of a text digested beforehand
    /// (`known`, used when they are `text`'s: [`TextBlocks::of_known`]).
    /// The blocks are digested outside the learner's lock: page tasks hold
    /// its read lock only to look the digests up, so the writer, which
    /// takes it to observe each page, waits less for them.
    #[must_use]
    pub fn own_lines_known(&self, host: &str, text: &str, known: Option<&TextBlocks<'_>>) -> Option<String> {
        let inner = self.inner.as_ref()?;
        let blocks = TextBlocks::of_known(text, known);
        let template = inner.learner.read().template_of(host, &blocks)?;
        Some(blocks.without(&template))
    }

    /// Records a page of `host` (its full cleaned text), once its verdict is known.
    pub fn observe(&self, host: &str, text: &str) {
        if let Some(inner) = &self.inner {
            inner.learner.write().observe(host, text);
        }
    }

    /// [`Templates::observe`] of the blocks of a page's text, computed
    /// by its page task: the writer only counts them, and holds the
    /// learner's lock (which page tasks read) for less time.
    pub fn observe_blocks(&self, host: &str, page: &simcrawl_clean::PageBlocks) {
        if let Some(inner) = &self.inner {
            inner.learner.write().observe_blocks(host, page);
        }
    }

    /// Whether pages are learnt from at all (`template.enabled`): page
    /// tasks compute their [`simcrawl_clean::PageBlocks`] only then.
    pub fn is_learning(&self) -> bool {
        self.inner.is_some()
    }

    /// Whether hosts were observed or evicted since the last save.
    pub fn has_changes(&self) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|i| i.learner.read().has_changes())
    }

    /// Writes the hosts changed since the last save into `store` (on a
    /// checkpoint's transaction, or with a shared worker's next
    /// acknowledgement) and removes the evicted ones, when `when` is
    /// [`Save::Now`] or `save_interval_ms` has passed since the last save.
    /// Returns what it wrote: the cost of a save follows the hosts observed
    /// since the previous one, not the hosts known.
    pub fn save_if_due(&self, store: &mut dyn LearnStore, when: Save) -> Result<Saved, LearnError> {
        let Some(inner) = &self.inner else {
            return Ok(Saved::default());
        };
        let mut saved = inner.saved.lock();
        let due = match when {
            Save::Now => true,
            Save::IfDue => saved.elapsed() >= inner.save_every,
        };
        if !due || !inner.learner.read().has_changes() {
            return Ok(Saved::default());
        }
        let mut learner = inner.learner.write();
        let changes = learner.take_changes();
        let mut out = Saved::default();
        for host in &changes.changed {
            let Some(entry) = learner.host_state(host) else {
                continue;
            };
            let bytes = serde_json::to_vec(entry)?;
            store.put_entry(Map::TemplateHosts, host, &bytes)?;
            out.hosts += 1;
            out.bytes += bytes.len();
        }
        for host in &changes.evicted {
            if store.remove_entry(Map::TemplateHosts, host)? {
                out.removed += 1;
            }
        }
        *saved = Instant::now();
        Ok(out)
    }
}

/// The saved host entries of `store`; one that cannot be read is reported and left out.
fn read_hosts(store: &mut dyn LearnStore) -> Result<Vec<(String, HostBlocks)>> {
    let mut out = Vec::new();
    for (host, bytes) in store.entries(Map::TemplateHosts)? {
        match serde_json::from_slice::<HostBlocks>(&bytes) {
            Ok(entry) => out.push((host, entry)),
            Err(e) => warn!(
                host = host.as_str(),
                "the saved site template of this host cannot be read ({e}); learning starts over for it"
            ),
        }
    }
    Ok(out)
}

/// Converts a learner saved whole ([`LEGACY_KEY`], written before per-host
/// entries) into [`Map::TemplateHosts`] entries and removes it, in the
/// store's transaction: a crash leaves either form, never a mix. The whole
/// value wins over entries already there: only an earlier version writes it,
/// so it is the newer state. One that cannot be read is reported and removed
/// (learning starts over). Nothing to do (the usual case) costs one read.
fn migrate(store: &mut dyn LearnStore) -> Result<()> {
    let Some(bytes) = store.get(LEGACY_KEY)? else {
        return Ok(());
    };
    let learner = match serde_json::from_slice::<TemplateLearner>(&bytes) {
        Ok(l) => Some(l),
        Err(e) => {
            warn!("the saved site templates cannot be read ({e}); learning starts over");
            None
        }
    };
    store.clear(Map::TemplateHosts)?;
    if let Some(learner) = &learner {
        for host in learner.host_names() {
            if let Some(entry) = learner.host_state(host) {
                let bytes = serde_json::to_vec(entry).context("cannot encode a site template")?;
                store.put_entry(Map::TemplateHosts, host, &bytes)?;
            }
        }
    }
    store.remove(LEGACY_KEY)?;
    info!(
        hosts = learner.as_ref().map_or(0, TemplateLearner::hosts),
        "site templates saved whole by an earlier version converted to per-host entries"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::backend::local::learn::{HOSTS, RedbLearn, save_templates, with_store};
    use crate::backend::local::state;
    use crate::tools::Input;

    fn load(s: &TemplateSettings, store: &simcrawl_dedup::RedbStore) -> Templates {
        with_store(store.database(), |l| Templates::load(s, Some(l))).unwrap()
    }

    fn settings() -> TemplateSettings {
        TemplateSettings {
            min_pages: 3,
            save_interval_ms: 3_600_000,
            ..TemplateSettings::default()
        }
    }

    fn page(i: usize) -> String {
        format!(
            "this help page is incomplete, please help us improve it\n\
             facts about topic number {i}, at some length\n\
             copyright the example help team"
        )
    }

    fn open(dir: &std::path::Path) -> simcrawl_dedup::RedbStore {
        simcrawl_dedup::RedbStore::open(dir.join("index.redb")).unwrap()
    }

    #[test]
    fn strip_is_none_until_learnt_then_removes_the_template() {
        let t = Templates::load(&settings(), None).unwrap();
        assert!(t.inner.is_some());
        for i in 0..3 {
            assert_eq!(t.own_lines("h.example", &page(i)), None);
            t.observe("h.example", &page(i));
        }
        assert_eq!(
            t.own_lines("h.example", &page(9)).as_deref(),
            Some("facts about topic number 9, at some length")
        );
        assert_eq!(t.own_lines("other.example", &page(9)), None);
        // A text with nothing to remove is judged as it is, blank lines and all.
        assert_eq!(t.own_lines("h.example", "new words\n\nmore new words"), None);
    }

    #[test]
    fn disabled_strips_and_learns_nothing() {
        let t = Templates::load(
            &TemplateSettings {
                enabled: false,
                ..settings()
            },
            None,
        )
        .unwrap();
        for i in 0..10 {
            t.observe("h.example", &page(i));
        }
        assert!(t.inner.is_none());
        assert_eq!(t.own_lines("h.example", &page(11)), None);
    }

    #[test]
    fn state_round_trips_through_the_store() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            let t = load(&settings(), &store);
            for i in 0..3 {
                t.observe("h.example", &page(i));
            }
            // Not due yet (the interval is an hour): nothing written.
            let saved = store
                .write_with(simcrawl_dedup::Commit::Durable, |txn, _| {
                    t.save_if_due(&mut RedbLearn::new(txn), Save::IfDue)
                        .map_err(Into::into)
                })
                .unwrap();
            assert_eq!(saved, Saved::default());
            assert!(stored_hosts(&store).is_empty());
            save_templates(&t, &store).unwrap();
            simcrawl_dedup::Store::flush(&store).unwrap();
        }
        let store = open(dir.path());
        let t = load(&settings(), &store);
        assert_eq!(
            t.own_lines("h.example", &page(5)).as_deref(),
            Some("facts about topic number 5, at some length")
        );
        // Loaded under other settings: the counts stay, the new settings rule.
        let stricter = TemplateSettings {
            min_pages: 4,
            ..settings()
        };
        let t = load(&stricter, &store);
        assert_eq!(t.own_lines("h.example", &page(5)), None);
        t.observe("h.example", &page(3));
        assert!(t.own_lines("h.example", &page(5)).is_some());
    }

    #[test]
    fn an_unreadable_saved_state_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        store
            .write_with(simcrawl_dedup::Commit::Durable, |txn, _| {
                let mut st = state::open(txn)?;
                st.insert(LEGACY_KEY, b"not json".as_slice())?;
                let mut hosts = txn.open_table(HOSTS)?;
                hosts.insert("g.example", b"not json either".as_slice())?;
                Ok(())
            })
            .unwrap();
        let t = load(&settings(), &store);
        assert_eq!(t.own_lines("h.example", &page(1)), None);
        assert!(state::read(store.database(), LEGACY_KEY).unwrap().is_none());
        // An unreadable host entry is left out, the others load.
        let t = learnt(&store, &["h.example"]);
        save_templates(&t, &store).unwrap();
        store
            .write_with(simcrawl_dedup::Commit::Durable, |txn, _| {
                txn.open_table(HOSTS)?.insert("g.example", b"{".as_slice())?;
                Ok(())
            })
            .unwrap();
        let t = load(&settings(), &store);
        assert!(t.own_lines("h.example", &page(7)).is_some());
        assert_eq!(t.own_lines("g.example", &page(7)), None);
    }

    /// The host entries in the store.
    fn stored_hosts(store: &simcrawl_dedup::RedbStore) -> Vec<String> {
        use redb::{ReadableDatabase, ReadableTable};
        let txn = store.database().begin_read().unwrap();
        let Ok(t) = txn.open_table(HOSTS) else {
            return Vec::new();
        };
        t.iter()
            .unwrap()
            .map(|r| r.unwrap().0.value().to_owned())
            .collect()
    }

    /// A learner over `store` that observed three pages of each of `hosts`.
    fn learnt(store: &simcrawl_dedup::RedbStore, hosts: &[&str]) -> Templates {
        let t = load(&settings(), store);
        for h in hosts {
            for i in 0..3 {
                t.observe(h, &page(i));
            }
        }
        t
    }

    fn save_now(store: &simcrawl_dedup::RedbStore, t: &Templates) -> Saved {
        store
            .write_with(simcrawl_dedup::Commit::Periodic, |txn, _| {
                t.save_if_due(&mut RedbLearn::new(txn), Save::Now)
                    .map_err(Into::into)
            })
            .unwrap()
    }

    #[test]
    fn a_state_saved_whole_by_an_earlier_version_is_converted_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        // The whole learner as one JSON value, as earlier versions saved it.
        let mut old = TemplateLearner::new(settings().learner_config()).unwrap();
        for i in 0..3 {
            old.observe("h.example", &page(i));
            old.observe("g.example", &format!("shared banner line\ntopic {i}"));
        }
        store
            .write_with(simcrawl_dedup::Commit::Durable, |txn, _| {
                let mut st = state::open(txn)?;
                state::put_json(&mut st, LEGACY_KEY, &old)
            })
            .unwrap();
        let t = load(&settings(), &store);
        assert_eq!(
            t.own_lines("h.example", &page(5)).as_deref(),
            Some("facts about topic number 5, at some length")
        );
        // Converted: per-host entries, the whole value gone, nothing left to save.
        assert_eq!(stored_hosts(&store), ["g.example", "h.example"]);
        assert!(state::read(store.database(), LEGACY_KEY).unwrap().is_none());
        assert_eq!(save_now(&store, &t), Saved::default());
        // And a later run loads the converted state as it was.
        let again = load(&settings(), &store);
        assert_eq!(*again.inner.as_ref().unwrap().learner.read(), old);
    }

    #[test]
    fn a_save_writes_only_the_hosts_observed_since_the_last_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let hosts: Vec<String> = (0..1000).map(|i| format!("h{i}.example")).collect();
        let names: Vec<&str> = hosts.iter().map(String::as_str).collect();
        let t = learnt(&store, &names);
        let first = save_now(&store, &t);
        assert_eq!(first.hosts, 1000);
        // A page of one host out of 1000: one entry written, not the whole state.
        t.observe("h7.example", &page(9));
        let one = save_now(&store, &t);
        assert_eq!(one.hosts, 1, "{one:?}");
        assert!(one.bytes * 500 < first.bytes, "{one:?} vs {first:?}");
        // Nothing observed since: nothing written.
        assert_eq!(save_now(&store, &t), Saved::default());
        // Evicted hosts leave the store with the next save.
        let small = TemplateSettings {
            max_hosts: 100,
            ..settings()
        };
        let t = load(&small, &store);
        let kept = t.inner.as_ref().unwrap().learner.read().hosts();
        assert!(kept <= 100, "{kept}");
        let trimmed = save_now(&store, &t);
        assert_eq!((trimmed.hosts, trimmed.removed), (0, 1000 - kept), "{trimmed:?}");
        assert_eq!(stored_hosts(&store).len(), kept);
        // The most recently observed host is among those kept.
        assert!(t.own_lines("h7.example", &page(5)).is_some());
    }

    /// Cost of one checkpoint's save with `n` hosts known and one of them
    /// observed since the last save: the whole state (as saved before
    /// per-host entries) against the changed hosts' entries. Run with
    /// `cargo test -p simcrawl --release template_save_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing comparison, printed; run on demand"]
    fn template_save_cost() {
        let dir = tempfile::tempdir().unwrap();
        println!("hosts | whole state: bytes, ms | changed hosts only: bytes, ms");
        for n in [100usize, 1_000, 10_000] {
            let store = simcrawl_dedup::RedbStore::open(dir.path().join(format!("{n}.redb"))).unwrap();
            let set = TemplateSettings {
                max_hosts: n,
                ..settings()
            };
            let t = load(&set, &store);
            for h in 0..n {
                for i in 0..5 {
                    t.observe(
                        &format!("h{h}.example"),
                        &format!("{}\n{}", page(i), words(h as u64, 40)),
                    );
                }
            }
            save_now(&store, &t);
            let runs = 20;
            let (mut whole_bytes, mut whole) = (0, Duration::ZERO);
            let (mut inc_bytes, mut inc) = (0, Duration::ZERO);
            for r in 0..runs {
                t.observe(&format!("h{}.example", r % n), &page(r));
                let t0 = Instant::now();
                store
                    .write_with(simcrawl_dedup::Commit::Periodic, |txn, _| {
                        let mut st = state::open(txn)?;
                        let l = t.inner.as_ref().unwrap().learner.read();
                        let bytes = serde_json::to_vec(&*l).map_err(state::caller_err)?;
                        whole_bytes = bytes.len();
                        st.insert(LEGACY_KEY, bytes.as_slice())?;
                        Ok(())
                    })
                    .unwrap();
                whole += t0.elapsed();
                let t0 = Instant::now();
                inc_bytes = save_now(&store, &t).bytes;
                inc += t0.elapsed();
            }
            let ms = |d: Duration| d.as_secs_f64() * 1e3 / runs as f64;
            println!(
                "{n} | {whole_bytes}, {:.3} | {inc_bytes}, {:.3}",
                ms(whole),
                ms(inc)
            );
        }
    }

    /// `words` pseudo-words from `seed` (distinct seeds share few character 5-grams).
    fn words(seed: u64, words: usize) -> String {
        const SYL: [&str; 16] = [
            "ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "pi", "nex", "qua", "ri", "zen", "bo", "fal",
            "gri",
        ];
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut out = Vec::new();
        for _ in 0..words {
            let mut w = String::new();
            for _ in 0..3 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w.push_str(SYL[(x % 16) as usize]);
            }
            out.push(w);
        }
        out.join(" ")
    }

    /// `crawl dedup` input: `n` help pages of one host from `first`, sharing a large
    /// template around short distinct bodies, as `html` lines ([`Input::Html`]) or,
    /// cleaned, `text` lines.
    fn corpus(path: &std::path::Path, first: usize, n: usize, input: Input) {
        let mut out = String::new();
        for i in first..first + n {
            // Bodies of about 200 letters: enough text of their own to be
            // judged on it once the template is learnt (`crate::identity`).
            let (head, notice, foot, body) = (
                words(900, 30),
                words(901, 250),
                words(902, 60),
                words(1000 + i as u64, 36),
            );
            let url = format!("http://help.example/topic/{i}");
            let line = if input == Input::Html {
                let html = format!(
                    "<html><head><title>Topic {i}</title></head><body><div><p>{head}</p><p>{notice}</p>\
                     <p>{body}</p><p>{foot}</p></div></body></html>"
                );
                serde_json::json!({"url": url, "html": html})
            } else {
                let text = format!("{head}\n{notice}\n{body}\n{foot}");
                serde_json::json!({"url": url, "title": format!("Topic {i}"), "text": text})
            };
            out.push_str(&format!("{line}\n"));
        }
        std::fs::write(path, out).unwrap();
    }

    fn dedup(
        cfg: &crate::config::Config,
        input: &std::path::Path,
        out: &std::path::Path,
        data: Option<&std::path::Path>,
    ) -> Vec<u64> {
        let args = crate::batch::BatchArgs {
            inputs: vec![input.to_path_buf()],
            out: out.to_path_buf(),
            data_dir: data.map(std::path::Path::to_path_buf),
        };
        crate::batch::run(cfg, &args).unwrap();
        let dups = std::fs::read_to_string(out.join("duplicates.jsonl")).unwrap();
        dups.lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["line"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    }

    fn bundled() -> crate::config::Config {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/crawl.toml");
        crate::config::Config::load(Some(&path)).unwrap()
    }

    #[test]
    fn batch_html_lines_are_judged_without_the_learnt_template() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut cfg = bundled();
        corpus(&d.join("html.jsonl"), 0, 30, Input::Html);
        corpus(&d.join("text.jsonl"), 0, 30, Input::Text);
        // Learning on: the first five lines are judged on their full text (0 to 4
        // pages observed), every later one without the template: none dropped.
        let dropped = dedup(&cfg, &d.join("html.jsonl"), &d.join("on"), None);
        assert!(dropped.iter().all(|&l| l <= 5), "{dropped:?}");
        assert!(
            !dropped.is_empty(),
            "the first pages were not judged on their full text"
        );
        // Text lines are left as they are: the template makes them duplicates.
        let dropped = dedup(&cfg, &d.join("text.jsonl"), &d.join("text"), None);
        assert!(dropped.len() >= 25, "{dropped:?}");
        // Learning off: html lines are duplicates too.
        cfg.template.enabled = false;
        let dropped = dedup(&cfg, &d.join("html.jsonl"), &d.join("off"), None);
        assert!(dropped.len() >= 25, "{dropped:?}");
    }

    #[test]
    fn batch_learnt_template_persists_in_the_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let cfg = bundled();
        corpus(&d.join("a.jsonl"), 0, 5, Input::Html);
        corpus(&d.join("b.jsonl"), 5, 20, Input::Html);
        let data = d.join("data");
        dedup(&cfg, &d.join("a.jsonl"), &d.join("a"), Some(&data));
        // A later run over the same data directory starts with the five pages
        // learnt: none of its pages is judged with the template.
        let dropped = dedup(&cfg, &d.join("b.jsonl"), &d.join("b"), Some(&data));
        assert!(dropped.is_empty(), "{dropped:?}");
        // Without the learnt state (in memory), its first pages are duplicates.
        let dropped = dedup(&cfg, &d.join("b.jsonl"), &d.join("c"), None);
        assert!(!dropped.is_empty());
    }

    #[test]
    fn bundled_config_matches_the_defaults() {
        assert_eq!(bundled().template, TemplateSettings::default());
    }
}
