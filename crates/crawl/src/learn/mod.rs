//! Where the learners ([`crate::dust`], [`crate::template`]) keep what they
//! learnt: one small trait, [`LearnStore`], so that they never name a
//! backend. The local crawl implements it over the writer's redb
//! transaction ([`crate::backend::local::learn::RedbLearn`]: what is learnt commits with the
//! outputs' offsets, one atomic checkpoint); the shared crawl over Redis
//! (`crate::backend::redis::learn`: reads at once, writes carried by the worker's
//! next acknowledgement, applied with it by the `ack` script).
//!
//! The learners import neither redb nor the crawl state, and the settings
//! types they define need nothing of the crate's configuration: the module
//! graph has no cycle (config -> learners -> learn, and state -> config).

use url::Url;

/// An error of a learner's store, its cause chain kept.
#[derive(Debug, thiserror::Error)]
pub enum LearnError {
    /// The store failed (redb, Redis).
    #[error("the learners' store failed")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A learner's state could not be encoded.
    #[error("cannot encode a learner's state")]
    Encode(#[from] serde_json::Error),
}

impl LearnError {
    /// Wraps a store's own error.
    pub fn store(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> LearnError {
        LearnError::Store(e.into())
    }
}

/// The keyed maps the learners keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Map {
    /// Site templates: host -> JSON of its learnt blocks.
    TemplateHosts,
    /// DUST rules: "HOST RULE" -> [`RULE_LEARNT`] and the examples, or
    /// [`RULE_BLOCKED`]. Blocked wins: a store shared by several learners
    /// never turns a blocked rule back into a learnt one.
    DustRules,
}

/// Value prefix of a learnt rule in [`Map::DustRules`] (`learnt N`).
pub const RULE_LEARNT: &str = "learnt";
/// Value of a blocked (or withdrawn) rule in [`Map::DustRules`].
pub const RULE_BLOCKED: &str = "blocked";

/// A URL a learnt rewrite rule rewrote, recorded with the rule so that it is
/// fetched under its own URL if the rule is withdrawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    pub url: Url,
    pub depth: u32,
    /// It was a frontier entry (the URL tier knows it, its page was never
    /// fetched), not a link (which the URL tier never saw).
    pub was_queued: bool,
}

/// What a learner's store offers: named blobs (read and removed: what older
/// versions saved whole), keyed maps ([`Map`]), and the bounded records of
/// DUST rewrites.
///
/// Reads see what was committed before; whether they see the writes of the
/// same checkpoint is the store's (redb does, Redis does not: its writes
/// are applied with the acknowledgement).
pub trait LearnStore {
    /// The blob named `name`.
    fn get(&mut self, name: &str) -> Result<Option<Vec<u8>>, LearnError>;
    /// Removes the blob named `name`.
    fn remove(&mut self, name: &str) -> Result<(), LearnError>;
    /// Every entry of `map`.
    fn entries(&mut self, map: Map) -> Result<Vec<(String, Vec<u8>)>, LearnError>;
    /// Sets an entry of `map`.
    fn put_entry(&mut self, map: Map, key: &str, value: &[u8]) -> Result<(), LearnError>;
    /// Removes an entry of `map`; `true` when it was there (or may have
    /// been: a store that applies writes later cannot tell).
    fn remove_entry(&mut self, map: Map, key: &str) -> Result<bool, LearnError>;
    /// Removes every entry of `map`.
    fn clear(&mut self, map: Map) -> Result<(), LearnError>;
    /// Records `r` under the rule named `rule` ("HOST RULE"), at most
    /// `max_per_rule` URLs per rule (a URL recorded already is updated, not
    /// counted again); `false` when the bound left it out.
    fn record(&mut self, rule: &str, r: &Restored, max_per_rule: u64) -> Result<bool, LearnError>;
    /// Removes and returns the URLs recorded under the `withdrawn` rules,
    /// each once, and forgets them under the rules named in `others` (a URL
    /// given back is recorded again if a rule in force still rewrites it).
    /// A store that gives them back itself (Redis: the `ack` script queues
    /// them, atomically with their removal) returns none.
    fn give_back(&mut self, withdrawn: &[String], others: &[String]) -> Result<Vec<Restored>, LearnError>;
}

/// A [`Restored`] as stored: depth (u32 LE) and where the URL was (1 byte).
pub fn encode_record(r: &Restored) -> Vec<u8> {
    let mut v = r.depth.to_le_bytes().to_vec();
    v.push(u8::from(r.was_queued));
    v
}

/// The [`Restored`] of `url` stored as `value`; `None` when it does not
/// decode (never written so: it cannot name a page to give back).
pub fn decode_record(url: &str, value: &[u8]) -> Option<Restored> {
    let depth = value
        .get(0..4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)?;
    Some(Restored {
        url: Url::parse(url).ok()?,
        depth,
        was_queued: value.get(4) == Some(&1),
    })
}
