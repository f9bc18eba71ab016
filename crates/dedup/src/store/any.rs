//! [`AnyStore`]: the backend chosen at run time.

use std::path::Path;

use super::{DocRecord, EarlyHits, MemoryStore, ReadTables, Store, Tables};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;

/// Any of this crate's stores, chosen at run time (from a config file, a
/// command-line flag). [`Store`]'s methods are generic, so it cannot be a
/// `dyn Store`; this enum is the store a program holds when the backend is
/// not known at compile time. Each call goes to the store inside (one
/// `match`, no allocation).
///
/// ```
/// use simcrawl_dedup::{AnyStore, DedupConfig, Deduper, Document};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("index.redb");
/// for spec in ["memory".to_string(), format!("redb:{}", path.display())] {
///     let d = Deduper::new(AnyStore::open(&spec)?, DedupConfig::default())?;
///     let text = "长江流域今年夏季降雨偏多，防汛形势严峻，水利部门启动应急响应。";
///     assert!(!d.check(&Document::new("http://a.example/1", "", text))?.is_duplicate());
///     assert!(d.check(&Document::new("http://b.example/2", "", text))?.is_duplicate(), "{spec}");
/// }
/// # Ok::<(), simcrawl_dedup::Error>(())
/// ```
///
/// New variants may be added in minor versions (and with features).
#[derive(Debug)]
#[non_exhaustive]
// The shared stores are large, but a program holds one store, opened once:
// boxing them would put an indirection on every call for nothing.
#[allow(clippy::large_enum_variant)]
pub enum AnyStore {
    /// [`MemoryStore`].
    Memory(MemoryStore),
    /// [`crate::RedbStore`] (feature `redb`).
    #[cfg(feature = "redb")]
    Redb(super::RedbStore),
    /// [`crate::SledStore`] (feature `sled`).
    #[cfg(feature = "sled")]
    Sled(super::SledStore),
    /// [`crate::RedisStore`] (feature `redis`).
    #[cfg(feature = "redis")]
    Redis(super::RedisStore),
    /// [`crate::ReplicatedStore`] (feature `redis`).
    #[cfg(feature = "redis")]
    Replicated(super::ReplicatedStore),
}

/// `$body` with `$s` bound to the store inside `$any`.
macro_rules! each {
    ($any:expr, $s:ident => $body:expr) => {
        match $any {
            AnyStore::Memory($s) => $body,
            #[cfg(feature = "redb")]
            AnyStore::Redb($s) => $body,
            #[cfg(feature = "sled")]
            AnyStore::Sled($s) => $body,
            #[cfg(feature = "redis")]
            AnyStore::Redis($s) => $body,
            #[cfg(feature = "redis")]
            AnyStore::Replicated($s) => $body,
        }
    };
}

impl AnyStore {
    /// A new, empty [`MemoryStore`].
    pub fn memory() -> AnyStore {
        AnyStore::Memory(MemoryStore::new())
    }

    /// Opens or creates a [`crate::RedbStore`] file (its directory is
    /// created).
    #[cfg(feature = "redb")]
    pub fn redb(path: impl AsRef<Path>) -> Result<AnyStore> {
        super::RedbStore::open(path).map(AnyStore::Redb)
    }

    /// Opens the store a setting names:
    ///
    /// | `spec`                          | store                          |
    /// |---------------------------------|--------------------------------|
    /// | `memory`                        | [`MemoryStore`]                |
    /// | `redb:PATH`, or a bare `PATH`   | `RedbStore` file (feature `redb`) |
    /// | `sled:PATH`                     | `SledStore` directory (feature `sled`) |
    /// | `redis://…`, `rediss://…`       | `RedisStore` (feature `redis`) |
    ///
    /// A kind this build lacks is an [`Error::Config`] that names the
    /// feature to enable.
    pub fn open(spec: &str) -> Result<AnyStore> {
        if spec == "memory" {
            Ok(AnyStore::memory())
        } else if spec.starts_with("redis://") || spec.starts_with("rediss://") {
            open_redis(spec)
        } else if let Some(path) = spec.strip_prefix("sled:") {
            open_sled(spec, path)
        } else {
            let path = spec.strip_prefix("redb:").unwrap_or(spec);
            if path.is_empty() {
                return Err(Error::Config(format!(
                    "store {spec:?}: expected memory, redb:PATH, sled:PATH or redis://HOST"
                )));
            }
            open_redb(spec, path)
        }
    }

    /// Which kind of store it is: `memory`, `redb`, `sled`, `redis` or
    /// `replicated`.
    pub fn kind(&self) -> &'static str {
        match self {
            AnyStore::Memory(_) => "memory",
            #[cfg(feature = "redb")]
            AnyStore::Redb(_) => "redb",
            #[cfg(feature = "sled")]
            AnyStore::Sled(_) => "sled",
            #[cfg(feature = "redis")]
            AnyStore::Redis(_) => "redis",
            #[cfg(feature = "redis")]
            AnyStore::Replicated(_) => "replicated",
        }
    }
}

/// A store this build lacks.
#[allow(dead_code)] // with every feature
fn missing(spec: &str, feature: &str) -> Error {
    Error::Config(format!(
        "store {spec:?} needs the simcrawl-dedup feature {feature:?}, which this build lacks"
    ))
}

#[cfg(feature = "redb")]
fn open_redb(_spec: &str, path: &str) -> Result<AnyStore> {
    AnyStore::redb(path)
}

#[cfg(not(feature = "redb"))]
fn open_redb(spec: &str, _path: &str) -> Result<AnyStore> {
    Err(missing(spec, "redb"))
}

#[cfg(feature = "sled")]
fn open_sled(_spec: &str, path: &str) -> Result<AnyStore> {
    super::SledStore::open(path).map(AnyStore::Sled)
}

#[cfg(not(feature = "sled"))]
fn open_sled(spec: &str, _path: &str) -> Result<AnyStore> {
    Err(missing(spec, "sled"))
}

#[cfg(feature = "redis")]
fn open_redis(spec: &str) -> Result<AnyStore> {
    super::RedisStore::open(spec).map(AnyStore::Redis)
}

#[cfg(not(feature = "redis"))]
fn open_redis(spec: &str) -> Result<AnyStore> {
    Err(missing(spec, "redis"))
}

impl Store for AnyStore {
    fn write<R>(&self, f: impl FnMut(&mut dyn Tables) -> Result<R>) -> Result<R> {
        each!(self, s => s.write(f))
    }

    fn read<R>(&self, f: impl FnMut(&dyn ReadTables) -> Result<R>) -> Result<R> {
        each!(self, s => s.read(f))
    }

    fn flush(&self) -> Result<()> {
        each!(self, s => s.flush())
    }

    fn location(&self) -> Option<&Path> {
        each!(self, s => s.location())
    }

    fn layout(&self) -> Option<&'static str> {
        each!(self, s => s.layout())
    }

    fn rebuild_bands(&self, keys: &dyn Fn(&DocRecord) -> Vec<u64>) -> Result<()> {
        each!(self, s => s.rebuild_bands(keys))
    }

    fn near_early(
        &self,
        keys: &[(usize, u64)],
        fp: Fingerprint,
        max: u32,
        title: Option<u128>,
    ) -> Result<Option<EarlyHits>> {
        each!(self, s => s.near_early(keys, fp, max, title))
    }

    fn keep_url_times(&self, keep: bool) -> Result<()> {
        each!(self, s => s.keep_url_times(keep))
    }
}

impl From<MemoryStore> for AnyStore {
    fn from(s: MemoryStore) -> AnyStore {
        AnyStore::Memory(s)
    }
}

#[cfg(feature = "redb")]
impl From<super::RedbStore> for AnyStore {
    fn from(s: super::RedbStore) -> AnyStore {
        AnyStore::Redb(s)
    }
}

#[cfg(feature = "sled")]
impl From<super::SledStore> for AnyStore {
    fn from(s: super::SledStore) -> AnyStore {
        AnyStore::Sled(s)
    }
}

#[cfg(feature = "redis")]
impl From<super::RedisStore> for AnyStore {
    fn from(s: super::RedisStore) -> AnyStore {
        AnyStore::Redis(s)
    }
}

#[cfg(feature = "redis")]
impl From<super::ReplicatedStore> for AnyStore {
    fn from(s: super::ReplicatedStore) -> AnyStore {
        AnyStore::Replicated(s)
    }
}
