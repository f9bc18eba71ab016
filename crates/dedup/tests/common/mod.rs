//! Shared by the integration tests: a Redis store on the test server.
#![allow(dead_code)]

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
