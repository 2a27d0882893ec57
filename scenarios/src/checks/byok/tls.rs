//! The `tls` group: https off loopback, and a certificate chain that verifies (with the
//! system roots and `--ca-cert`). Also the diagnosis of plain http sent to a port that
//! speaks TLS, which the first contact reports instead of a parse error.

use std::net::IpAddr;
use std::time::Duration;

use super::defs::*;
use super::probe::{CallError, CallErrorKind};
use super::settings::Settings;
use crate::checks::{Check, Evidence};

/// Whether the URL's host is this machine.
pub fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// `tls.https`, from the settings alone.
pub fn https(s: &Settings) -> Check {
    if s.is_https() {
        Check::pass(&TLS_HTTPS, Evidence::new().with("scheme", "https"))
    } else if is_loopback(&s.base_url) {
        Check::skip(&TLS_HTTPS, "plain http on loopback")
    } else {
        Check::fail(
            &TLS_HTTPS,
            Evidence::new()
                .with("scheme", "http")
                .with("host", s.base_url.host_str().unwrap_or_default()),
            "https: tokens and plaintext keys over plain http can be read on the way",
        )
    }
}

/// `tls.chain`, from the first request: `Err` when the certificate did not verify.
pub fn chain(s: &Settings, first: Result<(), &CallError>) -> Check {
    if !s.is_https() {
        return Check::skip(&TLS_CHAIN, "the URL is http");
    }
    let roots = match &s.tls.ca_cert {
        Some(p) => format!("system roots and {}", p.display()),
        None => "system roots".into(),
    };
    match first {
        Ok(()) => Check::pass(
            &TLS_CHAIN,
            Evidence::new()
                .with("verified_against", roots)
                .with("client_certificate", s.tls.client_identity.is_some()),
        ),
        Err(e) => Check::fail(
            &TLS_CHAIN,
            Evidence::new()
                .with("verified_against", roots)
                .with("error", e.message.clone()),
            "a certificate for the host, chaining to a trusted root (give a private CA with \
             --ca-cert)",
        ),
    }
}

/// Whether a failed plain-http request went to a port that answers https.
pub async fn speaks_tls(s: &Settings, error: &CallError) -> bool {
    if s.is_https() || !matches!(error.kind, CallErrorKind::Protocol | CallErrorKind::Tls) {
        return false;
    }
    let mut url = s.base_url.clone();
    if url.set_scheme("https").is_err() {
        return false;
    }
    if url.port().is_none() {
        let _ = url.set_port(Some(80));
    }
    let Ok(client) = reqwest::Client::builder()
        .use_rustls_tls()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(3))
        .build()
    else {
        return false;
    };
    client.get(url).send().await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for (u, yes) in [
            ("http://127.0.0.1:8700", true),
            ("http://127.8.9.1", true),
            ("http://localhost:1", true),
            ("http://[::1]:80", true),
            ("http://kms.example.com", false),
            ("http://10.0.0.1", false),
        ] {
            assert_eq!(is_loopback(&url::Url::parse(u).unwrap()), yes, "{u}");
        }
    }
}
