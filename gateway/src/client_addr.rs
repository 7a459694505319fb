//! Who the client is, for per-client limits: the peer address, or — when the peer is a
//! trusted proxy (`BATON_GATEWAY__TRUSTED_PROXIES`) — the nearest untrusted address its
//! `X-Forwarded-For` names.
//!
//! `X-Forwarded-For` is read right to left: each trusted hop appended the address it received
//! from, so the first address from the right that is not itself a trusted proxy is the client.
//! Anything left of it was written by the client and is never believed. A header from an
//! untrusted peer is ignored altogether, so a caller cannot pick its own bucket.

use std::net::IpAddr;

/// An address block: `10.0.0.0/8`, `::1/128`, or a bare address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix_len: u8,
}

impl Cidr {
    /// Parses `addr` or `addr/len`.
    pub fn parse(text: &str) -> Option<Cidr> {
        let (address, prefix_len) = match text.trim().split_once('/') {
            Some((address, len)) => (address, Some(len.parse::<u8>().ok()?)),
            None => (text.trim(), None),
        };
        let network: IpAddr = address.parse().ok()?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix_len = prefix_len.unwrap_or(max);
        (prefix_len <= max).then_some(Cidr {
            network,
            prefix_len,
        })
    }

    /// Whether `address` lies in this block.
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, canonical(address)) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix_len))
                    .unwrap_or(0);
                u32::from(network) & mask == u32::from(address) & mask
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix_len))
                    .unwrap_or(0);
                u128::from(network) & mask == u128::from(address) & mask
            }
            _ => false,
        }
    }
}

/// Parses a comma-separated list of blocks; `None` names the first bad entry.
pub fn parse_list(text: &str) -> Result<Vec<Cidr>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| Cidr::parse(entry).ok_or_else(|| entry.to_string()))
        .collect()
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    }
}

/// The client of a request that arrived from `peer` carrying `forwarded_for` (every
/// `X-Forwarded-For` value, joined in order).
pub fn client_address(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[Cidr]) -> IpAddr {
    let is_trusted = |address: IpAddr| trusted.iter().any(|block| block.contains(address));
    let peer = canonical(peer);
    if !is_trusted(peer) {
        return peer;
    }
    let mut client = peer;
    for hop in forwarded_for.unwrap_or("").rsplit(',') {
        let Ok(address) = hop.trim().parse::<IpAddr>() else {
            // An unparseable hop ends the chain we can vouch for.
            break;
        };
        client = canonical(address);
        if !is_trusted(client) {
            break;
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("address")
    }

    #[test]
    fn blocks_parse_and_match() {
        let block = Cidr::parse("10.0.0.0/8").expect("valid");
        assert!(block.contains(ip("10.200.1.1")));
        assert!(!block.contains(ip("11.0.0.1")));
        assert!(block.contains(ip("::ffff:10.1.2.3")), "v4-mapped");
        assert!(Cidr::parse("::1").expect("valid").contains(ip("::1")));
        assert!(
            Cidr::parse("0.0.0.0/0")
                .expect("valid")
                .contains(ip("8.8.8.8"))
        );
        for bad in ["10.0.0.0/33", "nope", "10.0.0.0/x", "::/129"] {
            assert!(Cidr::parse(bad).is_none(), "{bad}");
        }
        assert_eq!(parse_list("10.0.0.0/8, 127.0.0.1").expect("valid").len(), 2);
        assert_eq!(parse_list(""), Ok(vec![]));
        assert_eq!(parse_list("10.0.0.1,bad"), Err("bad".to_string()));
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_hops() {
        let trusted = parse_list("10.0.0.0/8").expect("valid");
        // (peer, X-Forwarded-For, expected client)
        let table = [
            ("203.0.113.9", None, "203.0.113.9"),
            ("203.0.113.9", Some("1.2.3.4"), "203.0.113.9"),
            ("10.0.0.2", None, "10.0.0.2"),
            ("10.0.0.2", Some("198.51.100.7"), "198.51.100.7"),
            ("10.0.0.2", Some("6.6.6.6, 198.51.100.7"), "198.51.100.7"),
            (
                "10.0.0.2",
                Some("6.6.6.6, 198.51.100.7, 10.0.0.5"),
                "198.51.100.7",
            ),
            ("10.0.0.2", Some("10.0.0.9, 10.0.0.5"), "10.0.0.9"),
            ("10.0.0.2", Some("garbage, 198.51.100.7"), "198.51.100.7"),
            ("10.0.0.2", Some("198.51.100.7, garbage"), "10.0.0.2"),
            ("::ffff:10.0.0.2", Some("198.51.100.7"), "198.51.100.7"),
        ];
        for (peer, header, expected) in table {
            assert_eq!(
                client_address(ip(peer), header, &trusted),
                ip(expected),
                "{peer} {header:?}"
            );
        }
        assert_eq!(
            client_address(ip("10.0.0.2"), Some("198.51.100.7"), &[]),
            ip("10.0.0.2"),
            "no trusted proxies: the header is ignored"
        );
    }
}
