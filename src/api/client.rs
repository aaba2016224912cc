//! Where a request comes from: the connection's peer address, or, when that peer is a proxy
//! listed in `FLOW_TRUSTED_PROXIES`, the client it names in `Forwarded` or `X-Forwarded-For`
//! (read right to left, past every trusted hop, so a client cannot prepend a fake address).
//! The request span, every log line in it and every audit row carry it.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The client address of a request (an extension set before the request span opens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

impl std::fmt::Display for ClientAddr {
    /// As `IpAddr` writes it. An IPv4 address, the common case, is written from a stack buffer:
    /// the request span writes the client of every request, and `core::fmt`'s padding-aware
    /// integer path cost about 1,000 instructions per address (callgrind).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let IpAddr::V4(v4) = self.0 else {
            return self.0.fmt(f);
        };
        let mut text = [0u8; 15];
        let mut len = 0;
        for (i, octet) in v4.octets().into_iter().enumerate() {
            if i > 0 {
                text[len] = b'.';
                len += 1;
            }
            // No leading zeros: the hundreds only from 100, the tens only from 10.
            if octet >= 100 {
                text[len] = b'0' + octet / 100;
                len += 1;
            }
            if octet >= 10 {
                text[len] = b'0' + octet / 10 % 10;
                len += 1;
            }
            text[len] = b'0' + octet % 10;
            len += 1;
        }
        // Only ASCII digits and dots are written; `pad` keeps any width the caller asked for.
        f.pad(std::str::from_utf8(&text[..len]).unwrap_or("-"))
    }
}

/// The proxies whose forwarding headers are believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Arc<Vec<IpNet>>);

impl TrustedProxies {
    pub fn new(networks: Vec<IpNet>) -> Self {
        Self(Arc::new(networks))
    }

    /// Whether `addr` is one of the trusted proxies.
    pub fn trusts(&self, addr: IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(&addr))
    }

    /// The client: the peer itself unless it is trusted, else the nearest untrusted hop the
    /// forwarding headers name (`Forwarded` when present, else `X-Forwarded-For`).
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let hops = forwarded_for(headers);
        hops.iter()
            .rev()
            .copied()
            .find(|hop| !self.trusts(*hop))
            .or_else(|| hops.first().copied())
            .unwrap_or(peer)
    }
}

/// The addresses of the forwarding headers, nearest last; unparseable entries (`unknown`,
/// obfuscated names) end the chain there, so nothing before them is believed.
fn forwarded_for(headers: &HeaderMap) -> Vec<IpAddr> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(',').map(|s| s.trim().to_string()))
            .collect()
    };
    let forwarded = values("forwarded");
    let items: Vec<String> = if forwarded.is_empty() {
        values("x-forwarded-for")
    } else {
        forwarded
            .iter()
            .filter_map(|element| {
                element.split(';').find_map(|pair| {
                    let (key, value) = pair.trim().split_once('=')?;
                    key.eq_ignore_ascii_case("for")
                        .then(|| value.trim_matches('"').to_string())
                })
            })
            .collect()
    };
    let mut hops = Vec::new();
    for item in items.iter().rev() {
        match parse_hop(item) {
            Some(addr) => hops.push(addr),
            None => break,
        }
    }
    hops.reverse();
    hops
}

/// `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]:4711` or `2001:db8::1`.
fn parse_hop(item: &str) -> Option<IpAddr> {
    if let Ok(addr) = item.parse::<IpAddr>() {
        return Some(addr);
    }
    if let Ok(addr) = item.parse::<SocketAddr>() {
        return Some(addr.ip());
    }
    item.strip_prefix('[')
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(ip, _)| ip.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_address_is_written_as_std_writes_it() {
        for a in 0..=255u8 {
            for (b, c, d) in [(0, 0, 0), (9, 10, 99), (100, 255, 1), (a, a / 3, 255 - a)] {
                let ip = IpAddr::from([a, b, c, d]);
                assert_eq!(ClientAddr(ip).to_string(), ip.to_string());
            }
        }
        for text in [
            "::1",
            "fe80::1",
            "2001:db8::8a2e:370:7334",
            "::ffff:10.0.0.1",
        ] {
            let ip: IpAddr = text.parse().unwrap();
            assert_eq!(ClientAddr(ip).to_string(), ip.to_string());
        }
        let ip = IpAddr::from([10, 0, 0, 1]);
        assert_eq!(format!("{:>12}|", ClientAddr(ip)), format!("{ip:>12}|"));
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    #[test]
    fn forwarding_headers_count_only_from_trusted_proxies() {
        let trusted = TrustedProxies::new(vec!["10.0.0.0/8".parse().unwrap()]);
        let proxy: IpAddr = "10.0.0.5".parse().unwrap();
        let stranger: IpAddr = "192.0.2.9".parse().unwrap();
        let xff = headers(&[("x-forwarded-for", "6.6.6.6, 198.51.100.7, 10.0.0.4")]);
        assert_eq!(trusted.client(stranger, &xff), stranger, "not a proxy");
        assert_eq!(
            trusted.client(proxy, &xff).to_string(),
            "198.51.100.7",
            "the nearest untrusted hop, not the prepended one"
        );
        let fwd = headers(&[(
            "forwarded",
            "for=6.6.6.6, for=\"[2001:db8::7]:4711\";proto=https",
        )]);
        assert_eq!(trusted.client(proxy, &fwd).to_string(), "2001:db8::7");
        let unknown = headers(&[("x-forwarded-for", "6.6.6.6, unknown")]);
        assert_eq!(trusted.client(proxy, &unknown), proxy, "chain broken");
        assert_eq!(trusted.client(proxy, &HeaderMap::new()), proxy);
    }
}
