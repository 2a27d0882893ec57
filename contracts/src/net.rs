//! Addresses as users are given them: a server that listens on every address (`0.0.0.0` in a
//! container) is reached at loopback on its own machine, and URLs carry IPv6 addresses in
//! brackets. Shared by the three servers' banners and ready files.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The address a process on this machine reaches a listener on `host` at: loopback for the
/// unspecified addresses (`0.0.0.0`, `::`), else `host` itself.
pub fn reachable(host: IpAddr) -> IpAddr {
    match host {
        IpAddr::V4(a) if a.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(a) if a.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        other => other,
    }
}

/// `http://HOST:PORT`, with an IPv6 address in brackets.
pub fn http_url(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("http://[{host}]:{port}")
    } else {
        format!("http://{host}:{port}")
    }
}

/// The URL a process on this machine reaches the listener at `addr` by.
pub fn local_url(addr: SocketAddr) -> String {
    http_url(&reachable(addr.ip()).to_string(), addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_an_address_the_machine_reaches() {
        let any4: IpAddr = "0.0.0.0".parse().unwrap();
        let any6: IpAddr = "::".parse().unwrap();
        let one: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(reachable(any4).to_string(), "127.0.0.1");
        assert_eq!(reachable(any6).to_string(), "::1");
        assert_eq!(reachable(one), one);
        assert_eq!(http_url("::1", 8080), "http://[::1]:8080");
        assert_eq!(http_url("stack", 8081), "http://stack:8081");
        assert_eq!(
            local_url("0.0.0.0:8700".parse().unwrap()),
            "http://127.0.0.1:8700"
        );
        assert_eq!(local_url("[::]:80".parse().unwrap()), "http://[::1]:80");
    }
}
