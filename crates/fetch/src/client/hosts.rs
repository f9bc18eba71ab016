//! The fetcher's table of per-host state ([`HostMap`]): bounded by
//! `max_hosts`, least recently used out first, and what an evicted host
//! must not forget kept aside for its return.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::host::{self, Host};

/// Per-host state, least recently used first out once `max_hosts` is
/// reached. A host in use (some request holds its `Arc`) is never evicted,
/// so two states never exist for one host; the map may exceed the cap by
/// the number of hosts in use.
///
/// An evicted host's delay raised by adaptive politeness and its holds
/// still running (Retry-After, backoff, robots.txt unavailable) are kept in
/// `kept` ([`host::Kept`], a few dozen bytes each instead of a host's
/// robots rules and permits) and given back when the host returns: else
/// an overloaded host, idle for a while among many, would be asked at the
/// floor rate again, and a Retry-After ignored. `kept` holds at most
/// `max_hosts` entries, the longest evicted first out, so memory stays
/// bounded whatever the number of hosts.
pub(super) struct HostMap {
    /// key -> (state, tick of last use).
    pub(super) map: HashMap<String, (Arc<Host>, u64)>,
    /// tick of last use -> key: the eviction order.
    order: BTreeMap<u64, String>,
    tick: u64,
    pub(super) evicted: u64,
    /// key -> (what its evicted state kept, tick of eviction).
    pub(super) kept: HashMap<String, (host::Kept, u64)>,
    /// tick of eviction -> key: which kept entry goes first.
    kept_order: BTreeMap<u64, String>,
    /// The configured delay: a throttle delay above it is worth keeping.
    floor: Duration,
}

impl HostMap {
    pub(super) fn get(&mut self, key: &str) -> Option<Arc<Host>> {
        let tick = self.tick + 1;
        let (h, used) = self.map.get_mut(key)?;
        self.order.remove(used);
        *used = tick;
        self.order.insert(tick, key.to_string());
        self.tick = tick;
        Some(Arc::clone(h))
    }

    pub(super) fn new(floor: Duration) -> Self {
        HostMap {
            map: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
            evicted: 0,
            kept: HashMap::new(),
            kept_order: BTreeMap::new(),
            floor,
        }
    }

    pub(super) fn insert(&mut self, key: String, h: Arc<Host>, cap: usize) {
        let now = Instant::now();
        while self.map.len() >= cap.max(1) {
            let idle = self
                .order
                .iter()
                .find(|(_, k)| self.map.get(*k).is_some_and(|(h, _)| Arc::strong_count(h) == 1))
                .map(|(t, k)| (*t, k.clone()));
            let Some((t, k)) = idle else { break };
            self.order.remove(&t);
            if let Some((gone, _)) = self.map.remove(&k)
                && let Some(kept) = gone.kept(self.floor, now)
            {
                self.keep(k, kept, cap);
            }
            self.evicted += 1;
        }
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.map.insert(key, (h, self.tick));
    }

    /// Keeps what an evicted host's state must not forget, the longest kept
    /// entry out first beyond `cap` entries.
    fn keep(&mut self, key: String, kept: host::Kept, cap: usize) {
        if let Some((_, t)) = self.kept.remove(&key) {
            self.kept_order.remove(&t);
        }
        while self.kept.len() >= cap.max(1) {
            let Some((_, oldest)) = self.kept_order.pop_first() else {
                break;
            };
            self.kept.remove(&oldest);
        }
        self.tick += 1;
        self.kept_order.insert(self.tick, key.clone());
        self.kept.insert(key, (kept, self.tick));
    }

    /// What the evicted state of `key`'s host kept, taken to restore it.
    pub(super) fn take_kept(&mut self, key: &str) -> Option<host::Kept> {
        let (kept, t) = self.kept.remove(key)?;
        self.kept_order.remove(&t);
        Some(kept)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::client::Fetcher;
    use crate::host::{RobotsEntry, Rules};
    use crate::{FetchConfig, Url};

    fn cache_robots(h: &Host) {
        // A robots.txt valid for a day: this host is never "idle".
        *h.robots.try_lock().unwrap() = Some(RobotsEntry {
            rules: Rules::AllowAll,
            expires: Instant::now() + Duration::from_secs(86_400),
        });
    }

    #[test]
    fn host_map_is_capped_even_when_every_host_has_robots_rules() {
        let f = Fetcher::new(FetchConfig::default()).unwrap();
        for i in 0..12_000 {
            let url = Url::parse(&format!("http://h{i}.example/")).unwrap();
            cache_robots(&f.host(&url).unwrap());
        }
        let n = f.inner.hosts.lock().map.len();
        assert!(n <= 10_000, "{n} hosts cached");
        assert_eq!(f.hosts_evicted(), 2_000);
    }

    #[test]
    fn host_eviction_is_lru_and_spares_hosts_in_use() {
        let f = Fetcher::new(FetchConfig {
            max_hosts: 3,
            ..FetchConfig::default()
        })
        .unwrap();
        let u = |i: u32| Url::parse(&format!("http://h{i}.example/")).unwrap();
        let held = f.host(&u(0)).unwrap(); // in use all along
        f.host(&u(1)).unwrap();
        f.host(&u(2)).unwrap();
        f.host(&u(1)).unwrap(); // 1 used more recently than 2
        f.host(&u(3)).unwrap(); // evicts 2: 0 is in use, 1 is recent
        let keys = |f: &Fetcher| {
            let mut k: Vec<String> = f.inner.hosts.lock().map.keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(
            keys(&f),
            [
                "http://h0.example:80",
                "http://h1.example:80",
                "http://h3.example:80"
            ]
        );
        assert_eq!(f.hosts_evicted(), 1);
        assert!(Arc::ptr_eq(&held, &f.host(&u(0)).unwrap()));
    }
}
