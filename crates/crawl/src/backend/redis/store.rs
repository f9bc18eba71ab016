//! Where a shared crawl keeps its dedup tiers: [`SharedStore`], the tiers
//! in Redis or replicated in each worker, behind one [`Store`].

use simcrawl_dedup::{Deduper, ReadTables, RedisOptions, RedisStore, ReplicatedStore, Store, Tables};

use crate::config::SharedTiersKind;

/// The tiers of a shared crawl.
pub type SharedTiers = Deduper<SharedStore>;

/// Where a shared crawl keeps its tiers (`[redis] tiers`): in Redis, or
/// replicated in each worker with Redis ordering the writes. The pipeline
/// is the same for both; only the store differs.
#[derive(Debug)]
// One value per process: the size difference between the variants costs
// nothing, boxing would cost an indirection per call.
#[allow(clippy::large_enum_variant)]
pub enum SharedStore {
    /// [`RedisStore`]: the tiers in Redis.
    Redis(RedisStore),
    /// [`ReplicatedStore`]: a replica in this process, a log in Redis.
    Replicated(ReplicatedStore),
}

impl SharedStore {
    /// Opens namespace `namespace` at `url` as `kind`. A namespace written
    /// by the other kind is refused, naming both.
    pub fn open(url: &str, namespace: &str, kind: SharedTiersKind) -> simcrawl_dedup::Result<SharedStore> {
        let options = RedisOptions {
            namespace: namespace.to_string(),
            ..RedisOptions::default()
        };
        Ok(match kind {
            SharedTiersKind::Redis => SharedStore::Redis(RedisStore::open_with(url, options)?),
            SharedTiersKind::Replicated => SharedStore::Replicated(ReplicatedStore::open_with(url, options)?),
        })
    }

    /// The server's `used_memory`.
    pub fn used_memory(&self) -> simcrawl_dedup::Result<u64> {
        match self {
            SharedStore::Redis(s) => s.used_memory(),
            SharedStore::Replicated(s) => s.used_memory(),
        }
    }

    /// Deletes every key of the namespace.
    pub fn clear(&self) -> simcrawl_dedup::Result<()> {
        match self {
            SharedStore::Redis(s) => s.clear(),
            SharedStore::Replicated(s) => s.clear(),
        }
    }
}

impl Store for SharedStore {
    fn write<R>(
        &self,
        f: impl FnMut(&mut dyn Tables) -> simcrawl_dedup::Result<R>,
    ) -> simcrawl_dedup::Result<R> {
        match self {
            SharedStore::Redis(s) => s.write(f),
            SharedStore::Replicated(s) => s.write(f),
        }
    }

    fn read<R>(
        &self,
        f: impl FnMut(&dyn ReadTables) -> simcrawl_dedup::Result<R>,
    ) -> simcrawl_dedup::Result<R> {
        match self {
            SharedStore::Redis(s) => s.read(f),
            SharedStore::Replicated(s) => s.read(f),
        }
    }

    fn flush(&self) -> simcrawl_dedup::Result<()> {
        match self {
            SharedStore::Redis(s) => s.flush(),
            SharedStore::Replicated(s) => s.flush(),
        }
    }

    fn location(&self) -> Option<&std::path::Path> {
        match self {
            SharedStore::Redis(s) => s.location(),
            SharedStore::Replicated(s) => s.location(),
        }
    }
}
