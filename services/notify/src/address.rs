//! Which addresses a delivery may connect to (SSRF and DNS rebinding).
//!
//! A webhook URL is the tenant's input, so without a guard the service would POST wherever a
//! name points: its own loopback, the cluster's pods, the cloud metadata endpoint. In hosted
//! mode ([`AddressPolicy::PublicOnly`]) the address actually connected to must be public:
//!
//! - a host written as an IP literal is checked before anything is sent ([`vet_literal`]);
//! - a host name is resolved by [`VettedResolver`], the HTTP client's only resolver: it drops
//!   every non-public answer and fails when none is left, and the client connects only to the
//!   addresses it returned. The check and the connection use the same answer, so a name that
//!   changes its answer between the two (rebinding) cannot slip through.
//!
//! Proxies from the environment are never used and redirects never followed (`deliver`), both
//! of which would connect somewhere this module did not vet.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Where deliveries may connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressPolicy {
    /// Hosted: public unicast addresses only.
    PublicOnly,
    /// Self-hosted (`BATON_NOTIFY__ALLOW_PRIVATE_ADDRESSES`): any address.
    AllowPrivate,
}

impl AddressPolicy {
    pub fn from_allow_private(allow_private: bool) -> AddressPolicy {
        if allow_private {
            AddressPolicy::AllowPrivate
        } else {
            AddressPolicy::PublicOnly
        }
    }

    pub fn permits(self, address: IpAddr) -> bool {
        match self {
            AddressPolicy::AllowPrivate => true,
            AddressPolicy::PublicOnly => is_public(address),
        }
    }
}

/// A delivery's host resolved only to addresses the policy refuses (or is such a literal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the webhook host resolves only to non-public addresses")]
pub struct AddressRefused;

/// The host name did not resolve.
#[derive(Debug, thiserror::Error)]
#[error("the webhook host did not resolve: {0}")]
pub struct ResolveFailed(#[source] std::io::Error);

/// Whether `address` is a public unicast address: reachable on the internet and none of the
/// special-purpose ranges (IANA's registries) a server must not be made to call.
pub fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn in_v4(address: Ipv4Addr, network: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    (u32::from(address) & mask) == (u32::from(Ipv4Addr::from(network)) & mask)
}

fn is_public_v4(address: Ipv4Addr) -> bool {
    const REFUSED: &[([u8; 4], u32)] = &[
        ([0, 0, 0, 0], 8),       // "this network", unspecified
        ([10, 0, 0, 0], 8),      // private (RFC 1918)
        ([100, 64, 0, 0], 10),   // carrier-grade NAT (RFC 6598)
        ([127, 0, 0, 0], 8),     // loopback
        ([169, 254, 0, 0], 16),  // link-local, cloud metadata endpoints
        ([172, 16, 0, 0], 12),   // private (RFC 1918)
        ([192, 0, 0, 0], 24),    // IETF protocol assignments
        ([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
        ([192, 88, 99, 0], 24),  // 6to4 relay anycast
        ([192, 168, 0, 0], 16),  // private (RFC 1918)
        ([198, 18, 0, 0], 15),   // benchmarking
        ([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
        ([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
        ([224, 0, 0, 0], 4),     // multicast
        ([240, 0, 0, 0], 4),     // reserved, and the broadcast address
    ];
    !REFUSED
        .iter()
        .any(|(network, prefix)| in_v4(address, *network, *prefix))
}

fn in_v6(address: Ipv6Addr, network: [u16; 8], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix)
    };
    (u128::from(address) & mask) == (u128::from(Ipv6Addr::from(network)) & mask)
}

/// The IPv4 address embedded in the forms that reach IPv4 hosts: IPv4-mapped `::ffff:a.b.c.d`,
/// the deprecated IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d` and 6to4 `2002:ab:cd::`.
fn embedded_v4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(address);
    let low = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if in_v6(address, [0, 0, 0, 0, 0, 0xffff, 0, 0], 96)
        || in_v6(address, [0; 8], 96)
        || in_v6(address, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96)
    {
        return Some(low);
    }
    if in_v6(address, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    None
}

fn is_public_v6(address: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(address) {
        // `::` and `::1` fall in the IPv4-compatible range and embed 0.0.0.0 and 0.0.0.1,
        // which are refused with the rest of 0.0.0.0/8.
        return is_public_v4(v4);
    }
    // Global unicast is 2000::/3; everything else (unique-local fc00::/7, link-local
    // fe80::/10, site-local fec0::/10, multicast ff00::/8, discard 100::/64, ...) is refused.
    if !in_v6(address, [0x2000, 0, 0, 0, 0, 0, 0, 0], 3) {
        return false;
    }
    const REFUSED: &[([u16; 8], u32)] = &[
        ([0x2001, 0, 0, 0, 0, 0, 0, 0], 32), // Teredo (reaches IPv4 hosts)
        ([0x2001, 0x2, 0, 0, 0, 0, 0, 0], 48), // benchmarking
        ([0x2001, 0x10, 0, 0, 0, 0, 0, 0], 28), // ORCHID
        ([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28), // ORCHIDv2
        ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), // documentation
        ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), // documentation (RFC 9637)
    ];
    !REFUSED
        .iter()
        .any(|(network, prefix)| in_v6(address, *network, *prefix))
}

/// Checks a host written as an IP literal (the client connects to it without resolving).
pub fn vet_literal(policy: AddressPolicy, host: &url::Host<&str>) -> Result<(), AddressRefused> {
    let address = match host {
        url::Host::Ipv4(v4) => IpAddr::V4(*v4),
        url::Host::Ipv6(v6) => IpAddr::V6(*v6),
        url::Host::Domain(_) => return Ok(()),
    };
    if policy.permits(address) {
        Ok(())
    } else {
        Err(AddressRefused)
    }
}

/// The HTTP client's resolver: the system's answer, less what the policy refuses.
#[derive(Debug, Clone, Copy)]
pub struct VettedResolver {
    policy: AddressPolicy,
}

impl VettedResolver {
    pub fn new(policy: AddressPolicy) -> VettedResolver {
        VettedResolver { policy }
    }
}

/// Keeps the permitted addresses; refuses when the answer had some and none is permitted.
pub fn filter(
    policy: AddressPolicy,
    answer: impl IntoIterator<Item = SocketAddr>,
) -> Result<Vec<SocketAddr>, AddressRefused> {
    let answer: Vec<SocketAddr> = answer.into_iter().collect();
    let permitted: Vec<SocketAddr> = answer
        .iter()
        .copied()
        .filter(|address| policy.permits(address.ip()))
        .collect();
    if permitted.is_empty() && !answer.is_empty() {
        return Err(AddressRefused);
    }
    Ok(permitted)
}

impl Resolve for VettedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        Box::pin(async move {
            // Port 0: the connector sets the URL's port on each address.
            type BoxError = Box<dyn std::error::Error + Send + Sync>;
            let answer = tokio::net::lookup_host((name.as_str(), 0))
                .await
                .map_err(|error| -> BoxError { Box::new(ResolveFailed(error)) })?;
            let permitted =
                filter(policy, answer).map_err(|refused| -> BoxError { Box::new(refused) })?;
            let addresses: Addrs = Box::new(permitted.into_iter());
            Ok(addresses)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(text: &str) -> bool {
        is_public(text.parse().expect("an address"))
    }

    #[test]
    fn special_purpose_ipv4_ranges_are_refused() {
        for refused in [
            "0.0.0.0",
            "127.0.0.1",
            "127.255.255.254",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "255.255.255.255",
            "192.0.2.10",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "192.0.0.8",
        ] {
            assert!(!public(refused), "{refused} must be refused");
        }
        for allowed in [
            "1.1.1.1",
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "93.184.215.14",
        ] {
            assert!(public(allowed), "{allowed} must be allowed");
        }
    }

    #[test]
    fn special_purpose_ipv6_ranges_and_embedded_ipv4_are_refused() {
        for refused in [
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "3fff::1",
            "2001::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "2002:c0a8:0101::1",
            "100::1",
        ] {
            assert!(!public(refused), "{refused} must be refused");
        }
        for allowed in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
        ] {
            assert!(public(allowed), "{allowed} must be allowed");
        }
    }

    #[test]
    fn an_answer_with_no_public_address_is_refused_and_a_mixed_one_is_narrowed() {
        let loopback: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let outside: SocketAddr = "1.1.1.1:0".parse().expect("addr");
        assert_eq!(
            filter(AddressPolicy::PublicOnly, [loopback]),
            Err(AddressRefused)
        );
        assert_eq!(
            filter(AddressPolicy::PublicOnly, [loopback, outside]),
            Ok(vec![outside])
        );
        assert_eq!(
            filter(AddressPolicy::AllowPrivate, [loopback]),
            Ok(vec![loopback])
        );
        assert_eq!(
            vet_literal(
                AddressPolicy::PublicOnly,
                &url::Host::Ipv4("10.0.0.1".parse().expect("v4"))
            ),
            Err(AddressRefused)
        );
    }
}
