//! Site-level template learning (`[template]` in `config/crawl.toml`), wired into the
//! crawler and `crawl dedup` over `html` lines.
//!
//! A block (a line of the cleaned text: paragraph, list item, notice, menu) that is on
//! many pages of one host is that host's template, whatever its text density. The
//! learner ([`simcrawl_clean::TemplateLearner`]) counts, per host, on how many observed pages
//! each block was. The text a page is signed with (its resemblance sketch, SimHash and
//! exact digest) is its cleaned text without its host's template blocks; the page is
//! observed after its verdict, so the first pages of a host are judged without it.
//! The text written to `kept.jsonl` stays the page's full text.
//!
//! The learner's state lives in the store (`crawl_state` table, key
//! [`STATE_KEY`]) and is loaded at start, so a resumed crawl (or a later `crawl dedup
//! --data-dir` run) judges its first pages with what earlier runs learnt. Saving the
//! whole state is not free, so it is written in a checkpoint transaction at most every
//! `save_interval_ms`, and once more when the run ends; a crash forgets at most the
//! observations of that interval (the tiers and outputs are not affected).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use parking_lot::{Mutex, RwLock};
use serde::Deserialize;
use simcrawl_clean::{TemplateConfig, TemplateLearner};
use tracing::{info, warn};

use crate::state;

/// Key of the learner's state in the `crawl_state` table.
pub const STATE_KEY: &str = "template:learner";

/// The `[template]` table of `config/crawl.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TemplateSettings {
    /// Learn each host's template and leave it out of the text used for dedup
    /// (default on).
    pub enabled: bool,
    /// Pages of a host observed before any of its blocks counts as template (5).
    pub min_pages: u32,
    /// Share of the host's observed pages a block must be on to be template (0.5).
    pub min_share: f64,
    /// A page left with fewer characters than this once its template is removed is
    /// judged on its full text (20).
    pub min_kept_chars: usize,
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
    /// checkpoints of a running crawl or batch, where saving the whole state
    /// every time would cost more than the observations it protects.
    IfDue,
    /// Now: the end of a run, so nothing learnt is lost.
    Now,
}

struct Inner {
    learner: RwLock<TemplateLearner>,
    save_every: Duration,
    /// When the state was last saved, and whether it changed since.
    saved: Mutex<(Instant, bool)>,
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
    /// The learner of a run: the state saved in `db` when there is one (a resume),
    /// put under the current settings, or an empty one. A saved state that cannot be
    /// read is reported and replaced by an empty one (learning starts over; nothing
    /// else depends on it).
    pub fn load(settings: &TemplateSettings, db: Option<&redb::Database>) -> Result<Self> {
        if !settings.enabled {
            return Ok(Templates::default());
        }
        let config = settings.learner_config();
        let empty = TemplateLearner::new(config.clone()).context("invalid [template] settings")?;
        let learner = match db.map(|db| state::read_json::<TemplateLearner>(db, STATE_KEY)) {
            None | Some(Ok(None)) => empty,
            Some(Ok(Some(mut saved))) => {
                if saved.config() != &config {
                    saved.reconfigure(config).context("invalid [template] settings")?;
                }
                info!(hosts = saved.hosts(), "site templates loaded");
                saved
            }
            Some(Err(e)) => {
                warn!("the saved site templates cannot be read ({e:#}); learning starts over");
                empty
            }
        };
        Ok(Templates {
            inner: Some(Arc::new(Inner {
                learner: RwLock::new(learner),
                save_every: Duration::from_millis(settings.save_interval_ms),
                saved: Mutex::new((Instant::now(), false)),
            })),
        })
    }

    /// The lines of `text` that are not `host`'s template, however few
    /// ([`TemplateLearner::own_lines`]); `None` when none is (or learning is off).
    #[must_use]
    pub fn own_lines(&self, host: &str, text: &str) -> Option<String> {
        self.inner.as_ref()?.learner.read().own_lines(host, text)
    }

    /// Records a page of `host` (its full cleaned text), once its verdict is known.
    pub fn observe(&self, host: &str, text: &str) {
        if let Some(inner) = &self.inner {
            inner.learner.write().observe(host, text);
            inner.saved.lock().1 = true;
        }
    }

    /// Writes the state into `table` (the `crawl_state` table of a write transaction)
    /// when it changed, and `when` is [`Save::Now`] or `save_interval_ms` has passed
    /// since the last save.
    pub fn save_if_due(
        &self,
        table: &mut redb::Table<'_, &'static str, &'static [u8]>,
        when: Save,
    ) -> Result<(), simcrawl_dedup::Error> {
        let Some(inner) = &self.inner else {
            return Ok(());
        };
        let mut saved = inner.saved.lock();
        let due = match when {
            Save::Now => true,
            Save::IfDue => saved.0.elapsed() >= inner.save_every,
        };
        if !saved.1 || !due {
            return Ok(());
        }
        state::put_json(table, STATE_KEY, &*inner.learner.read())?;
        *saved = (Instant::now(), false);
        Ok(())
    }

    /// Saves the state in a transaction of its own if it changed since the last save
    /// (at the end of a run; made durable by the store's next flush).
    pub fn save(&self, store: &simcrawl_dedup::RedbStore) -> Result<()> {
        if !self.inner.as_ref().is_some_and(|i| i.saved.lock().1) {
            return Ok(());
        }
        store
            .write_with(simcrawl_dedup::Commit::Periodic, |txn, _| {
                let mut t = state::open(txn)?;
                self.save_if_due(&mut t, Save::Now)
            })
            .context("cannot save the site templates")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::tools::Input;

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
            let t = Templates::load(&settings(), Some(store.database())).unwrap();
            for i in 0..3 {
                t.observe("h.example", &page(i));
            }
            // Not due yet (the interval is an hour): nothing written.
            store
                .write_with(simcrawl_dedup::Commit::Durable, |txn, _| {
                    let mut st = state::open(txn)?;
                    t.save_if_due(&mut st, Save::IfDue)
                })
                .unwrap();
            assert!(state::read(store.database(), STATE_KEY).unwrap().is_none());
            t.save(&store).unwrap();
            simcrawl_dedup::Store::flush(&store).unwrap();
        }
        let store = open(dir.path());
        let t = Templates::load(&settings(), Some(store.database())).unwrap();
        assert_eq!(
            t.own_lines("h.example", &page(5)).as_deref(),
            Some("facts about topic number 5, at some length")
        );
        // Loaded under other settings: the counts stay, the new settings rule.
        let stricter = TemplateSettings {
            min_pages: 4,
            ..settings()
        };
        let t = Templates::load(&stricter, Some(store.database())).unwrap();
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
                st.insert(STATE_KEY, b"not json".as_slice())?;
                Ok(())
            })
            .unwrap();
        let t = Templates::load(&settings(), Some(store.database())).unwrap();
        assert_eq!(t.own_lines("h.example", &page(1)), None);
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
            input: input.to_path_buf(),
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
