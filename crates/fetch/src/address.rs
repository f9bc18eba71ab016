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
//! (`GuardedResolver`) drops private addresses from every DNS answer, so a
//! name that resolved to a public address when the link was judged and to a
//! private one at connect time (DNS rebinding) still never reaches the
//! private address. IP-literal hosts are not resolved, so [`Policy::check`]
//! refuses them before a request is made.
//!
//! Through a proxy (`fetch.proxy`) the client never resolves the target:
//! the proxy does. So proxies from the environment (`HTTP_PROXY`...) are
//! ignored, and with a configured one [`Policy::check_proxied`] resolves
//! the name here first and refuses it if any answer is private. That cannot
//! see what the proxy's own DNS answers: a name unknown here, or rebound
//! between the two lookups, is for the proxy's rules to keep out.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

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

/// Whether `ip` is anything but a globally reachable unicast address:
/// every range of the IANA IPv4 and IPv6 special-purpose address registries
/// marked not globally reachable (loopback, RFC 1918, CGNAT, link-local such
/// as 169.254.169.254, documentation, benchmarking, unique-local...), plus
/// multicast, broadcast and reserved space.
///
/// An IPv6 address that carries an IPv4 address the network may translate
/// to or tunnel into (IPv4-mapped `::ffff:0:0/96`, NAT64 `64:ff9b::/96`,
/// 6to4 `2002::/16`) is judged by that IPv4 address, since
/// `64:ff9b::a9fe:a9fe` reaches 169.254.169.254 through a NAT64 gateway.
/// Other IPv6 space is judged by where it lies; see [`is_private_v6`].
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => is_private_v6(v6),
    }
}

/// The IPv4 rule of [`is_private`]: the special-purpose registry's ranges
/// that are not globally reachable, multicast and everything above.
///
/// 192.0.0.0/24 is refused whole, although its two anycast addresses
/// 192.0.0.9 and 192.0.0.10 are globally reachable: they serve PCP and
/// TURN, never a web page.
pub fn is_private_v4(v4: Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    v4.is_private() // 10/8, 172.16/12, 192.168/16
        || v4.is_loopback() // 127/8
        || v4.is_link_local() // 169.254/16, cloud metadata services
        || v4.is_documentation() // 192.0.2/24, 198.51.100/24, 203.0.113/24
        // 0.0.0.0/8, "this network" (0.0.0.0 reaches the local host on Linux).
        || a == 0
        // 100.64.0.0/10, shared address space (carrier-grade NAT).
        || (a == 100 && (b & 0xc0) == 64)
        // 192.0.0.0/24, IETF protocol assignments (DS-Lite, NAT64 discovery...).
        || (a == 192 && b == 0 && c == 0)
        // 198.18.0.0/15, benchmarking.
        || (a == 198 && (b & 0xfe) == 18)
        // 224.0.0.0/4 multicast, 240.0.0.0/4 reserved, 255.255.255.255 broadcast.
        || a >= 224
}

/// The IPv6 rule of [`is_private`].
///
/// Only 2000::/3 is allocated for global unicast (IANA's IPv6 address
/// space registry), so everything outside it is refused except the two
/// prefixes that stand for an IPv4 address (IPv4-mapped and NAT64
/// `64:ff9b::/96`, judged by that address). This covers `::` and `::1`,
/// IPv4-compatible `::/96` (deprecated; some stacks still tunnel it to the
/// IPv4 address), the local-use NAT64 prefix `64:ff9b:1::/48` (whole: it
/// names the operator's own translator, whatever address it embeds),
/// discard-only `100::/64`, SRv6 `5f00::/16`, unique-local `fc00::/7`,
/// link-local `fe80::/10`, the deprecated site-local `fec0::/10`,
/// multicast `ff00::/8` and all reserved space.
///
/// Inside 2000::/3: 6to4 `2002::/16` is judged by the IPv4 address in its
/// second and third groups (a 6to4 relay delivers to it); the
/// documentation prefixes `2001:db8::/32` and `3fff::/20` are refused; of
/// `2001::/23` (IETF protocol assignments) only the globally reachable
/// entries pass: the anycast addresses `2001:1::1`, `::2` and `::3`, AMT
/// `2001:3::/32`, AS112 `2001:4:112::/48`, ORCHIDv2 `2001:20::/28` and DRIP
/// `2001:30::/28`.
///
/// Teredo (`2001::/32`, part of `2001::/23`) is refused whole. Its
/// addresses embed a server IPv4 address and the client's IPv4 address
/// obfuscated (bits inverted), and decoding that client address would
/// still leave the choice of route to a Teredo relay or a local Teredo
/// interface; the registry does not call Teredo globally reachable, the
/// public service is defunct, and no web content is served from it.
pub fn is_private_v6(v6: Ipv6Addr) -> bool {
    let s = v6.segments();
    if let Some(v4) = v6.to_ipv4_mapped() {
        return is_private_v4(v4);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_private_v4(embedded_v4(s[6], s[7]));
    }
    if s[0] & 0xe000 != 0x2000 {
        return true;
    }
    match s[0] {
        0x2002 => is_private_v4(embedded_v4(s[1], s[2])),
        // 3fff::/20, documentation.
        0x3fff => s[1] < 0x1000,
        // 2001:db8::/32, documentation.
        0x2001 if s[1] == 0x0db8 => true,
        // 2001::/23, IETF protocol assignments.
        0x2001 if s[1] < 0x0200 => !ietf_assignment_is_global(&s),
        _ => false,
    }
}

/// The IPv4 address in two 16-bit groups of an IPv6 address.
fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    let [a, b] = hi.to_be_bytes();
    let [c, d] = lo.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// The globally reachable entries of 2001::/23 in the IANA IPv6
/// special-purpose registry; the rest of it is not.
fn ietf_assignment_is_global(s: &[u16; 8]) -> bool {
    match s[1] {
        // 2001:1::1 PCP, 2001:1::2 TURN, 2001:1::3 DNS-SD SRP anycast.
        0x0001 => s[2..7] == [0; 5] && (1..=3).contains(&s[7]),
        // 2001:3::/32, AMT.
        0x0003 => true,
        // 2001:4:112::/48, AS112-v6.
        0x0004 => s[2] == 0x0112,
        // 2001:20::/28 ORCHIDv2 and 2001:30::/28 DRIP DETs.
        0x0020..=0x003f => true,
        _ => false,
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
    /// The configured proxy's host: the resolver lets its addresses through
    /// (a proxy on the operator's network is usual), but it is not an
    /// allowed crawl target.
    proxy_host: Option<String>,
}

/// Why a host may not be connected to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{host} is or resolves to a private address ({addrs}); refused (fetch.private_addresses)")]
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
            proxy_host: None,
        }
    }

    /// The same policy for a client whose requests all go through the proxy
    /// on `host`: the resolver then only ever resolves the proxy, whose
    /// address may be private.
    pub fn through_proxy(mut self, host: &str) -> Policy {
        self.proxy_host = Some(host_name(host));
        self
    }

    fn is_proxy(&self, host: &str) -> bool {
        self.proxy_host.as_deref() == Some(host_name(host).as_str())
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

    /// [`Policy::check`] for a request through a proxy, which resolves the
    /// target's name itself and so never shows it to the resolver's check:
    /// a name is resolved here first (the overrides, else the system
    /// resolver, waiting `timeout` at most) and refused when any of its
    /// addresses is private, since the proxy may connect to any of them.
    ///
    /// A name that does not resolve here (or not in time) passes: behind a
    /// proxy the local resolver often knows no public names, and the proxy
    /// decides where it leads.
    pub async fn check_proxied(
        &self,
        url: &url::Url,
        timeout: Duration,
    ) -> Result<(), PrivateAddressRefused> {
        self.check(url)?;
        let Some(url::Host::Domain(host)) = url.host() else {
            return Ok(());
        };
        if self.allows_any(host) {
            return Ok(());
        }
        let ips: Vec<IpAddr> = match self.overrides.get(&host_name(host)) {
            Some(ips) => ips.clone(),
            None => match tokio::time::timeout(timeout, tokio::net::lookup_host((host, 0))).await {
                Ok(Ok(addrs)) => addrs.map(|a| a.ip()).collect(),
                Ok(Err(_)) | Err(_) => return Ok(()),
            },
        };
        let private: Vec<String> = ips
            .iter()
            .filter(|ip| is_private(**ip))
            .map(ToString::to_string)
            .collect();
        if private.is_empty() {
            return Ok(());
        }
        Err(PrivateAddressRefused {
            host: host.to_string(),
            addrs: private.join(", "),
        })
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
/// overrides), then [`Policy::filter`], at every connection. The configured
/// proxy's host is the exception: it is where every request goes, not a
/// crawl target.
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
            let kept = if policy.is_proxy(&host) {
                addrs
            } else {
                policy.filter(&host, addrs)?
            };
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

    /// Every non-global range of the IANA IPv4 and IPv6 special-purpose
    /// registries (plus multicast, and the IPv6 space outside 2000::/3),
    /// with an address at each edge, and the embedded-IPv4 forms: (range,
    /// address).
    const SPECIAL_PURPOSE: &[(&str, &str)] = &[
        // IPv4
        ("0.0.0.0/8 this network", "0.1.2.3"),
        ("10/8", "10.255.255.255"),
        ("100.64/10 shared (CGNAT)", "100.64.0.0"),
        ("100.64/10 shared (CGNAT), top", "100.127.255.255"),
        ("127/8 loopback", "127.255.0.1"),
        ("169.254/16 link-local", "169.254.0.1"),
        ("172.16/12", "172.31.255.255"),
        ("192.0.0/24 IETF protocol assignments", "192.0.0.8"),
        ("192.0.0/24 IETF protocol assignments, DS-Lite", "192.0.0.170"),
        ("192.0.2/24 TEST-NET-1", "192.0.2.1"),
        ("192.168/16", "192.168.255.1"),
        ("198.18/15 benchmarking", "198.19.255.255"),
        ("198.51.100/24 TEST-NET-2", "198.51.100.7"),
        ("203.0.113/24 TEST-NET-3", "203.0.113.7"),
        ("224/4 multicast", "239.255.255.250"),
        ("240/4 reserved", "240.0.0.1"),
        ("255.255.255.255 broadcast", "255.255.255.255"),
        // IPv6
        ("::/128 unspecified", "::"),
        ("::1/128 loopback", "::1"),
        ("::ffff:0:0/96 IPv4-mapped, private IPv4", "::ffff:10.0.0.1"),
        ("::ffff:0:0/96 IPv4-mapped, metadata", "::ffff:169.254.169.254"),
        ("::/96 IPv4-compatible, private IPv4", "::10.0.0.1"),
        ("::/96 IPv4-compatible, public IPv4", "::8.8.8.8"),
        ("::/96 IPv4-compatible, loopback", "::127.0.0.1"),
        ("64:ff9b::/96 NAT64, 10.0.0.1", "64:ff9b::a00:1"),
        ("64:ff9b::/96 NAT64, 169.254.169.254", "64:ff9b::a9fe:a9fe"),
        ("64:ff9b::/96 NAT64, 127.0.0.1", "64:ff9b::7f00:1"),
        ("64:ff9b:1::/48 local-use NAT64, 10.0.0.1", "64:ff9b:1::a00:1"),
        (
            "64:ff9b:1::/48 local-use NAT64, 8.8.8.8",
            "64:ff9b:1:ffff::808:808",
        ),
        ("100::/64 discard-only", "100::1"),
        ("100::/64 discard-only, top", "100::ffff:ffff:ffff:ffff"),
        ("2001::/32 Teredo", "2001::1"),
        (
            "2001::/32 Teredo, embedding public IPv4s",
            "2001:0:4136:e378:8000:63bf:f7f7:f7f7",
        ),
        ("2001:2::/48 benchmarking", "2001:2::1"),
        ("2001:10::/28 deprecated ORCHID", "2001:10::1"),
        ("2001::/23 unassigned rest", "2001:1ff::1"),
        ("2001:1::/48 besides its anycast addresses", "2001:1::4"),
        ("2001:db8::/32 documentation", "2001:db8::1"),
        (
            "2001:db8::/32 documentation, top",
            "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
        ),
        ("3fff::/20 documentation", "3fff:fff::1"),
        ("2002::/16 6to4, 10.0.0.1", "2002:0a00:0001::"),
        ("2002::/16 6to4, 192.168.1.1", "2002:c0a8:0101::1"),
        ("2002::/16 6to4, 169.254.169.254", "2002:a9fe:a9fe::1"),
        ("2002::/16 6to4, 127.0.0.1", "2002:7f00:1::"),
        ("5f00::/16 SRv6 SIDs", "5f00::1"),
        ("fc00::/7 unique-local", "fc00::1"),
        ("fc00::/7 unique-local, fd", "fdff:ffff::1"),
        ("fe80::/10 link-local", "fe80::1"),
        ("fe80::/10 link-local, top", "febf::1"),
        ("fec0::/10 site-local (deprecated)", "fec0::1"),
        ("fec0::/10 site-local (deprecated), top", "feff::1"),
        ("ff00::/8 multicast", "ff02::1"),
        ("ff00::/8 multicast, global scope", "ff0e::1"),
        ("::/8 reserved", "::1:0:0:1"),
        ("outside 2000::/3, reserved", "4000::1"),
        ("outside 2000::/3, reserved (1000::/4)", "1000::1"),
    ];

    /// Global addresses just outside those ranges, and the globally
    /// reachable exceptions inside them: (what, address).
    const GLOBAL: &[(&str, &str)] = &[
        ("IPv4 unicast", "8.8.8.8"),
        ("IPv4 unicast", "93.184.216.34"),
        ("just above 0/8", "1.0.0.1"),
        ("just below 10/8", "9.255.255.255"),
        ("just above 10/8", "11.0.0.1"),
        ("just below 100.64/10", "100.63.255.255"),
        ("just above 100.64/10", "100.128.0.1"),
        ("just above 172.16/12", "172.32.0.1"),
        ("just below 192.0.0/24", "191.255.255.255"),
        ("between 192.0.0/24 and 192.0.2/24", "192.0.1.1"),
        ("just above 192.0.2/24", "192.0.3.1"),
        ("AS112-v4 (globally reachable)", "192.31.196.1"),
        ("AMT (globally reachable)", "192.52.193.1"),
        ("just below 198.18/15", "198.17.255.255"),
        ("just above 198.18/15", "198.20.0.1"),
        ("next to TEST-NET-2", "198.51.101.1"),
        ("next to TEST-NET-3", "203.0.114.1"),
        ("just below 224/4", "223.255.255.255"),
        ("::ffff:0:0/96 IPv4-mapped, public IPv4", "::ffff:8.8.8.8"),
        ("64:ff9b::/96 NAT64, 8.8.8.8", "64:ff9b::808:808"),
        ("64:ff9b::/96 NAT64, 93.184.216.34", "64:ff9b::5db8:d822"),
        ("2002::/16 6to4, 8.8.8.8", "2002:0808:0808::"),
        ("2002::/16 6to4, 8.8.8.8 with a subnet", "2002:808:808:1::1"),
        ("2001:1::1 PCP anycast (globally reachable)", "2001:1::1"),
        ("2001:1::2 TURN anycast (globally reachable)", "2001:1::2"),
        ("2001:1::3 DNS-SD SRP anycast (globally reachable)", "2001:1::3"),
        ("2001:3::/32 AMT (globally reachable)", "2001:3::1"),
        ("2001:4:112::/48 AS112-v6 (globally reachable)", "2001:4:112::1"),
        ("2001:20::/28 ORCHIDv2 (globally reachable)", "2001:20::1"),
        ("2001:30::/28 DRIP (globally reachable)", "2001:3f::1"),
        ("just above 2001::/23", "2001:200::1"),
        ("global unicast", "2606:4700::1111"),
        ("global unicast", "2a00:1450:4001:80b::200e"),
        ("just below 2001:db8::/32", "2001:db7::1"),
        ("just above 2001:db8::/32", "2001:db9::1"),
        ("AS112 direct delegation (globally reachable)", "2620:4f:8000::1"),
        ("just below 3fff::/20", "3ffe::1"),
        ("top of 2000::/3, past 3fff::/20", "3fff:1000::1"),
    ];

    /// The addresses of `table` that `is_private` does not judge `private`.
    fn misjudged(table: &[(&str, &str)], private: bool) -> Vec<String> {
        let should = if private { "private" } else { "public" };
        table
            .iter()
            .filter(|(_, ip)| is_private(ip.parse().unwrap()) != private)
            .map(|(range, ip)| format!("{ip} ({range}) should be {should}"))
            .collect()
    }

    #[test]
    fn special_purpose_ranges_are_private() {
        let wrong = misjudged(SPECIAL_PURPOSE, true);
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn addresses_beside_special_purpose_ranges_are_public() {
        let wrong = misjudged(GLOBAL, false);
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
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
