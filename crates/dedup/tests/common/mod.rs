//! Shared by the integration tests: a Redis store on the test server, and
//! [`store_suite!`], which runs store contracts against every store.
#![allow(dead_code, unused_macros)]

use std::path::Path;

/// A [`simcrawl_dedup::RedisStore`] on the server `SIMCRAWL_REDIS_URL`
/// names (`scripts/redis-test-server.sh` starts one; `scripts/test.sh`
/// does so for CI), in a namespace of its own, emptied first. `None`, with
/// a message saying so, when the variable is not set: the Redis tests
/// then pass without running.
#[cfg(feature = "redis")]
pub fn redis_store(test: &str) -> Option<simcrawl_dedup::RedisStore> {
    let url = redis_url(test)?;
    let store = simcrawl_dedup::RedisStore::open_with(&url, redis_options(&unique_namespace(test)))
        .unwrap_or_else(|e| panic!("SIMCRAWL_REDIS_URL={url}: {e}"));
    store.clear().unwrap();
    Some(store)
}

/// The test server's URL, or `None` after printing why the test is
/// skipped.
pub fn redis_url(test: &str) -> Option<String> {
    match std::env::var("SIMCRAWL_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "SKIPPED {test}: SIMCRAWL_REDIS_URL is not set; run \
                 `eval \"$(bash scripts/redis-test-server.sh start)\"` first (scripts/test.sh does)"
            );
            None
        }
    }
}

/// A namespace no other test (or run) uses.
pub fn unique_namespace(test: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "t-{test}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(feature = "redis")]
pub fn redis_options(namespace: &str) -> simcrawl_dedup::RedisOptions {
    simcrawl_dedup::RedisOptions {
        namespace: namespace.to_string(),
        ..Default::default()
    }
}

/// A [`simcrawl_dedup::ReplicatedStore`] on the test server, in a namespace
/// of its own, emptied first; `None` when `SIMCRAWL_REDIS_URL` is not set.
#[cfg(feature = "redis")]
pub fn replicated_store(test: &str) -> Option<simcrawl_dedup::ReplicatedStore> {
    let url = redis_url(test)?;
    let store = simcrawl_dedup::ReplicatedStore::open_with(&url, redis_options(&unique_namespace(test)))
        .unwrap_or_else(|e| panic!("SIMCRAWL_REDIS_URL={url}: {e}"));
    store.clear().unwrap();
    Some(store)
}

/// Runs store contracts, each written once as a generic function, against
/// every store:
///
/// ```ignore
/// store_suite! {
///     all: [window_expires_and_purges_old_entries],
///     durable: [persists_and_refuses_other_parameters],
/// }
/// ```
///
/// A contract is `fn NAME<S: Store + 'static>(open: impl Fn(&str) -> S)`.
/// `open(name)` opens the store `name` of the test: a file, directory or
/// namespace of the test's own, empty at its first opening; opened again
/// under the same name it is the same store (a reopen), under another name
/// another one. Each contract becomes one test per store: `memory::NAME`,
/// `redb::NAME`, `sled::NAME` (feature `sled`), `redis::NAME` and
/// `replicated::NAME` (feature `redis`; without `SIMCRAWL_REDIS_URL` they
/// print SKIPPED and pass). `all` contracts run on every store; `durable`
/// ones on every store but the memory store, which is new at every opening
/// and does not roll a failed write back.
macro_rules! store_suite {
    (all: [$($all:ident),* $(,)?], durable: [$($durable:ident),* $(,)?] $(,)?) => {
        store_suite!(@store memory, $crate::common::memory_stores, [$($all),*]);
        store_suite!(@store redb, $crate::common::redb_stores, [$($all,)* $($durable),*]);
        #[cfg(feature = "sled")]
        store_suite!(@store sled, $crate::common::sled_stores, [$($all,)* $($durable),*]);
        #[cfg(feature = "redis")]
        store_suite!(@store redis, $crate::common::redis_stores, [$($all,)* $($durable),*]);
        #[cfg(feature = "redis")]
        store_suite!(@store replicated, $crate::common::replicated_stores, [$($all,)* $($durable),*]);
    };
    (@store $store:ident, $stores:path, [$($contract:ident),* $(,)?]) => {
        mod $store {
            $(
                #[test]
                fn $contract() {
                    let test = concat!(stringify!($store), "_", stringify!($contract));
                    let dir = tempfile::tempdir().unwrap();
                    let Some(open) = $stores(test, dir.path()) else {
                        return;
                    };
                    super::$contract(open);
                }
            )*
        }
    };
}

/// [`store_suite!`]'s memory stores: a new one at every opening.
pub fn memory_stores(_test: &str, _dir: &Path) -> Option<impl Fn(&str) -> simcrawl_dedup::MemoryStore> {
    Some(|_: &str| simcrawl_dedup::MemoryStore::new())
}

/// [`store_suite!`]'s redb stores: `NAME.redb` in the test's directory.
pub fn redb_stores(_test: &str, dir: &Path) -> Option<impl Fn(&str) -> simcrawl_dedup::RedbStore> {
    let dir = dir.to_path_buf();
    Some(move |name: &str| simcrawl_dedup::RedbStore::open(dir.join(format!("{name}.redb"))).unwrap())
}

/// [`store_suite!`]'s sled stores: `NAME.sled` in the test's directory.
#[cfg(feature = "sled")]
pub fn sled_stores(_test: &str, dir: &Path) -> Option<impl Fn(&str) -> simcrawl_dedup::SledStore> {
    let dir = dir.to_path_buf();
    Some(move |name: &str| simcrawl_dedup::SledStore::open(dir.join(format!("{name}.sled"))).unwrap())
}

/// [`store_suite!`]'s Redis stores: namespace `NAME` of the test's own on
/// the test server, emptied at its first opening; `None` (SKIPPED) when
/// `SIMCRAWL_REDIS_URL` is not set.
#[cfg(feature = "redis")]
pub fn redis_stores(test: &str, _dir: &Path) -> Option<impl Fn(&str) -> simcrawl_dedup::RedisStore> {
    let url = redis_url(test)?;
    let namespaces = Namespaces::new(test);
    Some(move |name: &str| {
        let (ns, first) = namespaces.get(name);
        let store = simcrawl_dedup::RedisStore::open_with(&url, redis_options(&ns))
            .unwrap_or_else(|e| panic!("SIMCRAWL_REDIS_URL={url}: {e}"));
        if first {
            store.clear().unwrap();
        }
        store
    })
}

/// [`store_suite!`]'s replicated stores, as [`redis_stores`].
#[cfg(feature = "redis")]
pub fn replicated_stores(
    test: &str,
    _dir: &Path,
) -> Option<impl Fn(&str) -> simcrawl_dedup::ReplicatedStore> {
    let url = redis_url(test)?;
    let namespaces = Namespaces::new(test);
    Some(move |name: &str| {
        let (ns, first) = namespaces.get(name);
        let store = simcrawl_dedup::ReplicatedStore::open_with(&url, redis_options(&ns))
            .unwrap_or_else(|e| panic!("SIMCRAWL_REDIS_URL={url}: {e}"));
        if first {
            store.clear().unwrap();
        }
        store
    })
}

/// A test's Redis namespaces, one per store name, each new to the server.
#[cfg(feature = "redis")]
struct Namespaces {
    test: String,
    made: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

#[cfg(feature = "redis")]
impl Namespaces {
    fn new(test: &str) -> Self {
        Namespaces {
            test: test.to_string(),
            made: Default::default(),
        }
    }

    /// The namespace of store `name`, and whether this is its first opening.
    fn get(&self, name: &str) -> (String, bool) {
        let mut made = self.made.lock().unwrap();
        if let Some(ns) = made.get(name) {
            return (ns.clone(), false);
        }
        let ns = unique_namespace(&format!("{}-{name}", self.test));
        made.insert(name.to_string(), ns.clone());
        (ns, true)
    }
}
