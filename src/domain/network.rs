//! The management network (`FLOW_BMC_ALLOWED_NETWORKS`): the only addresses a BMC or PMC login
//! may be sent to. The inventory refuses BMC addresses outside it at write time and the device
//! clients refuse to contact stored ones outside it, so an editor cannot point Flow's logins at
//! an address of their own.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

/// The setting's name, for messages.
pub const SETTING: &str = "FLOW_BMC_ALLOWED_NETWORKS";

/// Listed networks; an empty list allows nothing.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ManagementNetworks(Vec<IpNet>);

impl fmt::Debug for ManagementNetworks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(ToString::to_string))
            .finish()
    }
}

/// Ranges no BMC lives in: an address inside one is refused unless a listed network lies
/// inside that same range (`127.0.0.0/8` allows loopback, `0.0.0.0/0` does not).
fn special_range(ip: IpAddr) -> Option<IpNet> {
    let net = |text: &str| text.parse::<IpNet>().ok();
    match ip {
        IpAddr::V4(v4) if v4.is_unspecified() => net("0.0.0.0/32"),
        IpAddr::V4(v4) if v4.is_loopback() => net("127.0.0.0/8"),
        IpAddr::V4(v4) if v4.is_link_local() => net("169.254.0.0/16"),
        IpAddr::V4(v4) if v4.is_multicast() => net("224.0.0.0/4"),
        IpAddr::V4(v4) if v4 == Ipv4Addr::BROADCAST => net("255.255.255.255/32"),
        IpAddr::V6(v6) if v6.is_unspecified() => net("::/128"),
        IpAddr::V6(v6) if v6.is_loopback() => net("::1/128"),
        IpAddr::V6(v6) if v6.is_unicast_link_local() => net("fe80::/10"),
        IpAddr::V6(v6) if v6.is_multicast() => net("ff00::/8"),
        _ => None,
    }
}

/// `10.0.0.1`, `[fd00::1]` or `::ffff:10.0.0.1` (compared as the IPv4 address it maps).
fn parse_ip(text: &str) -> Option<IpAddr> {
    let text = text.trim();
    let text = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    let ip = text.parse::<IpAddr>().ok()?;
    Some(match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    })
}

impl ManagementNetworks {
    /// Networks (`10.20.0.0/16`, `fd00:20::/48`) or single addresses; an error names the item.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<Self, String> {
        items
            .iter()
            .map(|item| {
                let item = item.as_ref().trim();
                item.parse::<IpNet>()
                    .or_else(|_| parse_ip(item).map(IpNet::from).ok_or(()))
                    .map(|n| n.trunc())
                    .map_err(|()| format!("{item:?} is not an address or CIDR"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Self)
    }

    /// Whether nothing is listed (nothing is allowed).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` may be contacted: inside a listed network, not that network's broadcast
    /// address, and in a special range only where the listed network is inside it too.
    pub fn allows(&self, ip: &str) -> Result<(), String> {
        let addr = parse_ip(ip).ok_or_else(|| format!("{ip:?} is not an IP address"))?;
        let special = special_range(addr);
        let inside = self.0.iter().filter(|n| n.contains(&addr)).any(|n| {
            let broadcast = n.prefix_len() + 1 < n.max_prefix_len() && n.broadcast() == addr;
            !broadcast && special.is_none_or(|range| range.contains(n))
        });
        match (inside, special) {
            (true, _) => Ok(()),
            (false, Some(_)) => Err(format!(
                "{addr} is a loopback, link-local, multicast, broadcast or unspecified address, \
                 which no network in {SETTING} lists"
            )),
            (false, None) => Err(format!("{addr} is outside {SETTING}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(items: &[&str]) -> ManagementNetworks {
        ManagementNetworks::parse(items).unwrap()
    }

    #[test]
    fn only_listed_networks_are_allowed() {
        let n = nets(&["10.20.0.0/16", "fd00:20::/48"]);
        assert_eq!(n.allows("10.20.3.4"), Ok(()));
        assert_eq!(n.allows("fd00:20::9"), Ok(()));
        assert_eq!(n.allows("[fd00:20::9]"), Ok(()));
        assert_eq!(n.allows("::ffff:10.20.3.4"), Ok(()));
        assert!(n.allows("10.21.0.1").unwrap_err().contains(SETTING));
        assert!(
            n.allows("10.20.255.255").is_err(),
            "the network's broadcast"
        );
        assert!(n.allows("not-an-ip").is_err());
        assert!(ManagementNetworks::default().allows("10.20.3.4").is_err());
        assert!(ManagementNetworks::parse(&["10.0.0.0/33"]).is_err());
    }

    #[test]
    fn special_addresses_need_a_network_inside_their_range() {
        let everything = nets(&["0.0.0.0/0", "::/0"]);
        for ip in [
            "0.0.0.0",
            "127.0.0.1",
            "169.254.169.254",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(everything.allows(ip).is_err(), "{ip}");
        }
        assert_eq!(everything.allows("10.1.2.3"), Ok(()));
        let loopback = nets(&["127.0.0.0/8", "169.254.169.254"]);
        assert_eq!(loopback.allows("127.0.0.7"), Ok(()));
        assert_eq!(loopback.allows("169.254.169.254"), Ok(()));
        assert!(loopback.allows("169.254.1.1").is_err());
        assert!(loopback.allows("::1").is_err());
    }
}
