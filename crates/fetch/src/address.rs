//! Which network addresses the crawler may connect to.
//!
//! A page on the open web can link to `http://169.254.169.254/` (a cloud
//! metadata service), `http://localhost:6379/` or a name whose DNS answer is
//! a private address, and a crawler that follows it probes the operator's
//! own network. So by default only public addresses are connected to; the
//! hosts of private seeds (a crawl of one's own intranet) and hosts listed in
//! the config are allowed by name.
//!
//! The check runs where the connection is made: the client's resolver
//! ([`GuardedResolver`]) drops private addresses from every DNS answer, so a
//! name that resolved to a public address when the link was judged and to a
//! private one at connect time (DNS rebinding) still never reaches the
//! private address. IP-literal hosts are not resolved, so [`Policy::check`]
//! refuses them before a request is made.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde::{Deserialize, Serialize};

/// What to do with hosts that resolve to private addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrivateAddresses {
    /// Connect only to public addresses, except for allowed hosts (default).
    #[default]
    Refuse,
    /// Connect anywhere (a crawl inside a trusted network).
    Allow,
}

/// Loopback, private (RFC 1918), shared (CGNAT), link-local (including
/// 169.254.169.254), unique-local, unspecified, broadcast, multicast and
/// documentation-free "this network" addresses: everything that is not a
/// public unicast address on the internet.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || o[0] == 0
                // 100.64.0.0/10, carrier-grade NAT (shared address space).
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                // 192.0.0.0/24, IETF protocol assignments.
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                // 198.18.0.0/15, benchmarking.
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                // 240.0.0.0/4, reserved.
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private(IpAddr::V4(v4));
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_unique_local()
                || v6.is_unicast_link_local()
        }
    }
}

/// The address rules of one fetcher.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    mode: PrivateAddresses,
    /// Lower-case host names (or IP literals) allowed whatever they resolve to.
    allowed: BTreeSet<String>,
    /// Fixed answers, like curl's `--resolve`: host -> addresses.
    overrides: BTreeMap<String, Vec<IpAddr>>,
}

/// Why a host may not be connected to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{host} resolves only to private addresses ({addrs}); refused (fetch.private_addresses)")]
pub struct PrivateAddressRefused {
    /// The host name or IP literal.
    pub host: String,
    /// The refused addresses, comma-separated.
    pub addrs: String,
}

fn host_name(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

impl Policy {
    /// A policy from the config's mode, allowed hosts and overrides.
    pub fn new(
        mode: PrivateAddresses,
        allowed: impl IntoIterator<Item = String>,
        overrides: BTreeMap<String, Vec<IpAddr>>,
    ) -> Policy {
        Policy {
            mode,
            allowed: allowed.into_iter().map(|h| host_name(&h)).collect(),
            overrides: overrides.into_iter().map(|(h, a)| (host_name(&h), a)).collect(),
        }
    }

    fn allows_any(&self, host: &str) -> bool {
        self.mode == PrivateAddresses::Allow || self.allowed.contains(&host_name(host))
    }

    /// Refuses an IP-literal host that is private and not allowed. Named
    /// hosts pass here: their addresses are checked when they are resolved.
    pub fn check(&self, url: &url::Url) -> Result<(), PrivateAddressRefused> {
        let ip = match url.host() {
            Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
            _ => return Ok(()),
        };
        let host = url.host_str().unwrap_or_default();
        if is_private(ip) && !self.allows_any(host) {
            return Err(PrivateAddressRefused {
                host: host.to_string(),
                addrs: ip.to_string(),
            });
        }
        Ok(())
    }

    /// Keeps the addresses `host` may be connected to; an error when none
    /// is left.
    pub fn filter(
        &self,
        host: &str,
        addrs: Vec<SocketAddr>,
    ) -> Result<Vec<SocketAddr>, PrivateAddressRefused> {
        if self.allows_any(host) {
            return Ok(addrs);
        }
        let (public, private): (Vec<SocketAddr>, Vec<SocketAddr>) =
            addrs.into_iter().partition(|a| !is_private(a.ip()));
        if public.is_empty() && !private.is_empty() {
            return Err(PrivateAddressRefused {
                host: host.to_string(),
                addrs: private
                    .iter()
                    .map(|a| a.ip().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        Ok(public)
    }

    fn overridden(&self, host: &str) -> Option<Vec<SocketAddr>> {
        self.overrides
            .get(&host_name(host))
            .map(|ips| ips.iter().map(|ip| SocketAddr::new(*ip, 0)).collect())
    }
}

/// The client's DNS resolver: the system resolver (or the configured
/// overrides), then [`Policy::filter`], at every connection.
#[derive(Debug, Clone)]
pub(crate) struct GuardedResolver {
    pub(crate) policy: Arc<Policy>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = match policy.overridden(&host) {
                Some(a) => a,
                None => tokio::net::lookup_host((host.as_str(), 0)).await?.collect(),
            };
            let kept = policy.filter(&host, addrs)?;
            let it: Addrs = Box::new(kept.into_iter());
            Ok(it)
        })
    }
}

/// Whether a transport error was caused by a refused private address (the
/// resolver's error travels inside reqwest's connect error).
pub(crate) fn refused_in(e: &(dyn std::error::Error + 'static)) -> Option<PrivateAddressRefused> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<PrivateAddressRefused>() {
            return Some(r.clone());
        }
        cur = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn private_ranges() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "198.18.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip} should be private");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_private(ip.parse().unwrap()), "{ip} should be public");
        }
    }

    #[test]
    fn literals_are_checked_and_allowed_hosts_pass() {
        let p = Policy::new(
            PrivateAddresses::Refuse,
            ["10.0.0.5".to_string()],
            BTreeMap::new(),
        );
        let url = |s: &str| url::Url::parse(s).unwrap();
        assert!(p.check(&url("http://169.254.169.254/latest/meta-data/")).is_err());
        assert!(p.check(&url("http://[::1]:8080/")).is_err());
        assert!(p.check(&url("http://10.0.0.5/")).is_ok());
        assert!(p.check(&url("http://8.8.8.8/")).is_ok());
        assert!(
            p.check(&url("http://internal.test/")).is_ok(),
            "names are checked when resolved"
        );
        let open = Policy::new(PrivateAddresses::Allow, [], BTreeMap::new());
        assert!(open.check(&url("http://127.0.0.1/")).is_ok());
    }

    #[test]
    fn resolved_private_addresses_are_dropped() {
        let p = Policy::new(
            PrivateAddresses::Refuse,
            ["intranet.test".to_string()],
            BTreeMap::new(),
        );
        let sa = |s: &str| SocketAddr::new(s.parse().unwrap(), 0);
        let e = p
            .filter("evil.test", vec![sa("127.0.0.1"), sa("10.0.0.1")])
            .unwrap_err();
        assert_eq!(e.host, "evil.test");
        assert_eq!(e.addrs, "127.0.0.1, 10.0.0.1");
        // A mixed answer keeps only the public address.
        assert_eq!(
            p.filter("mixed.test", vec![sa("127.0.0.1"), sa("8.8.8.8")])
                .unwrap(),
            vec![sa("8.8.8.8")]
        );
        assert_eq!(
            p.filter("INTRANET.test", vec![sa("10.0.0.1")]).unwrap(),
            vec![sa("10.0.0.1")]
        );
    }
}
