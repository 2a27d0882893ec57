//! TLS: the simulator behind a TLS terminator in the test, with a CA, a server and a client
//! certificate made here (rcgen). The chain verifies with `--ca-cert` and not without it;
//! mutual TLS works with `--client-cert/--client-key`; plain http to the TLS port is
//! reported as such.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use scenarios::checks::Outcome;
use scenarios::checks::byok::ByokArgs;

use super::*;

struct Pki {
    dir: tempfile::TempDir,
    ca_der: CertificateDer<'static>,
    server_der: CertificateDer<'static>,
    server_key: Vec<u8>,
}

impl Pki {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, the
/// PEM files written to a temporary directory (`ca.pem`, `client.pem`, `client.key`).
fn pki() -> Pki {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "check byok test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();

    let mut server = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_key = KeyPair::generate().unwrap();
    let server_cert = server.signed_by(&server_key, &ca_cert, &ca_key).unwrap();

    let mut client = CertificateParams::new(vec!["platform".into()]).unwrap();
    client
        .distinguished_name
        .push(DnType::CommonName, "platform");
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_key = KeyPair::generate().unwrap();
    let client_cert = client.signed_by(&client_key, &ca_cert, &ca_key).unwrap();

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).unwrap();
    std::fs::write(dir.path().join("client.pem"), client_cert.pem()).unwrap();
    std::fs::write(dir.path().join("client.key"), client_key.serialize_pem()).unwrap();
    Pki {
        dir,
        ca_der: ca_cert.der().clone(),
        server_der: server_cert.der().clone(),
        server_key: server_key.serialize_der(),
    }
}

/// What the TLS terminator asks of clients.
#[derive(Clone, Copy, PartialEq)]
enum ClientAuth {
    /// No client certificate asked for.
    None,
    /// A certificate from the test CA required: the handshake refuses a client without one.
    Required,
    /// A certificate asked for but optional in the handshake; a client without one gets its
    /// connection closed before any answer (what a client sees of `Required` when the
    /// service's alert loses the race with the closed connection).
    AskedThenClosed,
}

/// A TLS terminator on a free port forwarding to `upstream`.
async fn tls_front(pki: &Pki, upstream: SocketAddr, client_auth: ClientAuth) -> SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if client_auth == ClientAuth::None {
        builder.with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(pki.ca_der.clone()).unwrap();
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        let verifier = if client_auth == ClientAuth::AskedThenClosed {
            verifier.allow_unauthenticated()
        } else {
            verifier
        };
        builder.with_client_cert_verifier(verifier.build().unwrap())
    };
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pki.server_key.clone()));
    let config = builder
        .with_single_cert(vec![pki.server_der.clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                if client_auth == ClientAuth::AskedThenClosed
                    && tls.get_ref().1.peer_certificates().is_none()
                {
                    return;
                }
                let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
            });
        }
    });
    addr
}

fn https_args(kms: &Kms, front: SocketAddr, ca: Option<&Path>) -> ByokArgs {
    ByokArgs {
        base_url: Some(format!("https://{front}")),
        ca_cert: ca.map(Path::to_path_buf),
        ..kms.args()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_ca_the_chain_verifies_and_every_check_passes_over_https() {
    let pki = pki();
    let kms = spawn_kms(config()).await;
    let front = tls_front(&pki, kms.addr, ClientAuth::None).await;
    let report = check(&https_args(&kms, front, Some(&pki.path("ca.pem")))).await;
    assert_eq!(failing(&report), BTreeSet::new(), "{report:#?}");
    let passed = ids_with(&report, Outcome::Pass);
    assert!(
        passed.contains("tls.https") && passed.contains("tls.chain"),
        "{passed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_ca_tls_chain_fails_and_the_rest_is_skipped() {
    let pki = pki();
    let kms = spawn_kms(config()).await;
    let front = tls_front(&pki, kms.addr, ClientAuth::None).await;
    let report = check(&https_args(&kms, front, None)).await;
    assert!(!report.holds());
    assert_eq!(failing(&report), BTreeSet::from(["tls.chain".to_string()]));
    let chain = report.checks.iter().find(|c| c.id == "tls.chain").unwrap();
    let evidence = serde_json::to_string(&chain.evidence).unwrap();
    assert!(evidence.contains("invalid peer certificate"), "{evidence}");
    assert_eq!(
        ids_with(&report, Outcome::Skip).len(),
        report.checks.len() - 2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_needs_the_client_certificate() {
    let pki = pki();
    let kms = spawn_kms(config()).await;
    let front = tls_front(&pki, kms.addr, ClientAuth::Required).await;
    let mut args = https_args(&kms, front, Some(&pki.path("ca.pem")));
    args.only = vec!["tls".into(), "auth".into(), "decrypt".into()];
    let err = cannot_run(&args).await;
    assert!(
        err.contains("TLS") && err.contains("--client-cert"),
        "{err}"
    );

    args.client_cert = Some(pki.path("client.pem"));
    args.client_key = Some(pki.path("client.key"));
    let report = check(&args).await;
    assert_eq!(failing(&report), BTreeSet::new(), "{report:#?}");
    let chain = report.checks.iter().find(|c| c.id == "tls.chain").unwrap();
    assert_eq!(chain.evidence.0["client_certificate"], true);
}

/// The service asked for a certificate and closed the connection without an alert: the
/// checker still names the missing client certificate (the handshake shows the request),
/// rather than "did not answer HTTP".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_connection_after_a_certificate_request_names_the_client_certificate() {
    let pki = pki();
    let kms = spawn_kms(config()).await;
    let front = tls_front(&pki, kms.addr, ClientAuth::AskedThenClosed).await;
    let mut args = https_args(&kms, front, Some(&pki.path("ca.pem")));
    args.only = vec!["tls".into(), "auth".into()];
    let err = cannot_run(&args).await;
    assert!(
        err.contains("asks for a TLS client certificate") && err.contains("--client-cert"),
        "{err}"
    );

    args.client_cert = Some(pki.path("client.pem"));
    args.client_key = Some(pki.path("client.key"));
    let report = check(&args).await;
    assert_eq!(failing(&report), BTreeSet::new(), "{report:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_to_an_https_only_service_is_reported() {
    let pki = pki();
    let kms = spawn_kms(config()).await;
    let front = tls_front(&pki, kms.addr, ClientAuth::None).await;
    let args = ByokArgs {
        base_url: Some(format!("http://{front}")),
        ..kms.args()
    };
    let err = cannot_run(&args).await;
    assert!(err.contains("speaks TLS"), "{err}");
    assert!(err.contains(&format!("https://{front}")), "{err}");
}
