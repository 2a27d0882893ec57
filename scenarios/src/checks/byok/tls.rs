//! The `tls` group: https off loopback, and a certificate chain that verifies (with the
//! system roots and `--ca-cert`). Also the diagnosis of plain http sent to a port that
//! speaks TLS, which the first contact reports instead of a parse error, and of a service
//! that asks for a client certificate none was given for.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustls::client::ResolvesClientCert;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::defs::*;
use super::probe::{CallError, CallErrorKind};
use super::settings::Settings;
use crate::checks::{Check, Evidence};

/// Whether the URL's host is this machine.
pub(crate) fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// `tls.https`, from the settings alone.
pub(super) fn https(s: &Settings) -> Check {
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
pub(super) fn chain(s: &Settings, first: Result<(), &CallError>) -> Check {
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
pub(crate) async fn speaks_tls(s: &Settings, error: &CallError) -> bool {
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

/// Whether the https service asks for a client certificate during the handshake.
///
/// With TLS 1.3 a service that requires one refuses a client without it only after the
/// client's side of the handshake is done, so the first request fails as a closed or reset
/// connection, or as an alert, depending on timing. The handshake's own request for a
/// certificate comes before that, always: a handshake of its own records it. The server's
/// certificate is not judged here (`tls.chain` does that).
pub(crate) async fn asks_for_client_certificate(s: &Settings) -> bool {
    let Some(name) = server_name(&s.base_url) else {
        return false;
    };
    let Some(port) = s.base_url.port_or_known_default() else {
        return false;
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let Ok(builder) = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
    else {
        return false;
    };
    let asked = Arc::new(Asked::default());
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServer(provider)))
        .with_client_cert_resolver(asked.clone());
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let host = name.to_str().into_owned();
    let handshake = async {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .ok()?;
        connector.connect(name, tcp).await.ok()
    };
    let timeout = Duration::from_millis(s.timeout_ms);
    let _ = tokio::time::timeout(timeout, handshake).await;
    asked.0.load(Ordering::SeqCst)
}

fn server_name(url: &url::Url) -> Option<ServerName<'static>> {
    match url.host()? {
        url::Host::Domain(d) => ServerName::try_from(d.to_string()).ok(),
        url::Host::Ipv4(ip) => Some(ServerName::from(IpAddr::V4(ip))),
        url::Host::Ipv6(ip) => Some(ServerName::from(IpAddr::V6(ip))),
    }
}

/// Records that the server asked for a client certificate, and offers none.
#[derive(Debug, Default)]
struct Asked(AtomicBool);

impl ResolvesClientCert for Asked {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        self.0.store(true, Ordering::SeqCst);
        None
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// Takes any server certificate (the handshake only asks what the server requests) and
/// checks the handshake's signatures as usual.
#[derive(Debug)]
struct AnyServer(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
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

    /// `tls.https` fails for plain http to another machine, passes for https and is
    /// skipped on loopback (no mutant of the plain-http simulator can reach it).
    #[test]
    fn plain_http_to_another_machine_fails_tls_https() {
        use crate::checks::Outcome;
        use crate::checks::byok::ByokArgs;
        for (url, want) in [
            ("http://kms.example.com", Outcome::Fail),
            ("https://kms.example.com", Outcome::Pass),
            ("http://127.0.0.1:8700", Outcome::Skip),
        ] {
            let s = Settings::resolve(&ByokArgs {
                base_url: Some(url.into()),
                partner: Some("acme".into()),
                api_key: Some("k".into()),
                key_alias: Some("tenant-a".into()),
                use_rotate: true,
                ..ByokArgs::default()
            })
            .unwrap();
            assert_eq!(https(&s).result, want, "{url}");
        }
    }
}
