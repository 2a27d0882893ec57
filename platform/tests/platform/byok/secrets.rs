//! No secret reaches an answer, the audit, debug output or the binary's output; a bad BYOK
//! entry stops the start; other workspaces keep the local key.

use super::*;

/// Every text a secret could leak into must hold none: the client secret, static keys, the
/// data key (base64 or hex), a JWT (all start with the base64 of `{"`), Basic credentials.
fn assert_no_secret(text: &str, extra: &[&str]) {
    assert!(!text.is_empty());
    let basic = STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
    let data_key_b64 = STANDARD.encode(DATA_KEY);
    let data_key_hex = hex::encode(DATA_KEY);
    for secret in [
        CLIENT_SECRET,
        STATIC_KEY,
        &data_key_b64,
        &data_key_hex,
        "eyJ",
        &basic,
    ]
    .iter()
    .chain(extra)
    {
        assert!(!text.contains(secret), "{secret} leaked:\n{text}");
    }
}

#[tokio::test]
async fn secrets_tokens_and_keys_never_reach_answers_the_audit_or_debug_output() {
    let mut seen = Vec::new();
    // Client credentials: a token, decrypts, a refused token, an outage, a rotation, a
    // wrong plaintext.
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    outbound_ok(&t).await;
    t.clock.advance(Duration::seconds(300)).unwrap();
    kms.svc.expire_all_tokens();
    outbound_ok(&t).await;
    kms.fault(
        FaultKind::ServiceUnavailable,
        EndpointScope::DecryptKey,
        FaultTrigger::Next(1),
    );
    t.clock.advance(Duration::seconds(300)).unwrap();
    seen.push(post_outbound(&t, None).await.1);
    seen.push(t.post(&admin_path("/rotate"), &json!({})).await.1);
    seen.push(t.get(&admin_path("")).await.1);
    kms.fault(
        FaultKind::WrongPlaintext,
        EndpointScope::DecryptKey,
        FaultTrigger::Next(1),
    );
    t.clock.advance(Duration::seconds(300)).unwrap();
    seen.push(post_outbound(&t, None).await.1);
    seen.push(serde_json::to_value(kms.svc.audit().entries()).unwrap());
    seen.push(json!(format!("{:?} {:?}", t.app.config, t.app.keys)));
    // Refusals: a wrong secret, a wrong static key.
    let (t2, _k2) = byok_app(Method::ClientCredentials, |e| {
        e.client_secret = Some(Secret::new("wrong-secret-77"))
    })
    .await;
    seen.push(post_outbound(&t2, None).await.1);
    seen.push(json!(format!("{:?}", t2.app.config)));
    let (t3, _k3) = byok_app(Method::StaticKey, |e| {
        e.api_key = Some(Secret::new("sk_test_wrong_1234"))
    })
    .await;
    seen.push(post_outbound(&t3, None).await.1);
    seen.push(json!(format!("{:?}", t3.app.config)));
    let text = serde_json::to_string(&seen).unwrap();
    assert!(text.contains("key_service_unavailable") && text.contains("key_service_refused"));
    assert_no_secret(&text, &["wrong-secret-77", "sk_test_wrong_1234"]);
}

/// Reads a child's pipe to the end on a thread.
fn drain(pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let mut pipe = pipe;
        let _ = std::io::Read::read_to_string(&mut pipe, &mut s);
        s
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_takes_byok_from_flags_and_env_and_never_prints_or_logs_a_secret() {
    use std::io::BufRead;
    // The key service on the real clock. The platform runs on a simulated clock that starts
    // at the wall clock's time and is moved a few seconds, so the data key's one-second
    // lifetime ends exactly when the test moves it, whatever the machine's load (the key
    // service accepts request timestamps within 300 s of its own clock).
    let svc =
        customer_kms_sim::KeyService::new(kms_config(), contracts::clock::SystemClock::shared())
            .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let kms_url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(customer_kms_sim::serve(listener, svc.clone(), async {
        let _ = stopped.await;
    }));
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_platform"))
        .args(["serve", "--listen", "127.0.0.1:0", "--seed", "5"])
        .args(["--clock", "simulated"])
        .arg("--database")
        .arg(dir.path().join("p.db"))
        .args(["--api-key", &format!("{ORG}/{WS}={KEY}:alice")])
        .args(["--byok-workspace", &format!("{ORG}/{WS}")])
        .args(["--byok-base-url", &kms_url, "--byok-partner", PARTNER])
        .args(["--byok-key-alias", "tenant-a"])
        .args(["--byok-encrypted-key", &wrapped("tenant-a")])
        .args(["--byok-data-key-cache-secs", "1"])
        .env("PLATFORM_BYOK_CLIENT_ID", CLIENT_ID)
        .env("PLATFORM_BYOK_CLIENT_SECRET", CLIENT_SECRET)
        .env("RUST_LOG", "platform=debug")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the platform binary starts");
    let stderr = drain(child.stderr.take().unwrap());
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let addr = first
        .trim()
        .strip_prefix("platform listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_string();
    let stdout = drain(stdout);
    let client = reqwest::Client::new();
    let post = |path: String| {
        client
            .post(format!("{addr}{path}"))
            .header("x-api-key", KEY)
            .json(&outbound())
            .send()
    };
    let advance = |seconds: u64| {
        client
            .post(format!("{addr}/sim/v1/clock/advance"))
            .header("x-api-key", KEY)
            .json(&json!({ "seconds": seconds }))
            .send()
    };
    let ok = post(outbounds_path()).await.unwrap();
    assert_eq!(ok.status(), StatusCode::OK, "{}", ok.text().await.unwrap());
    // The data key lives a second: after it, a refused token is replaced (by the engine's
    // step or by the request, whichever needs the key first), then an outage.
    svc.expire_all_tokens();
    assert_eq!(advance(2).await.unwrap().status(), StatusCode::OK);
    let ok = post(outbounds_path()).await.unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    // Every decrypt fails now, the engine's and the request's alike.
    svc.add_fault(
        FaultSpec::new(FaultKind::ServiceUnavailable)
            .on(EndpointScope::DecryptKey)
            .when(FaultTrigger::Always),
    )
    .unwrap();
    assert_eq!(advance(2).await.unwrap().status(), StatusCode::OK);
    let out = post(outbounds_path()).await.unwrap();
    assert_eq!(out.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = out.text().await.unwrap();
    svc.faults().clear();
    let rotated = post(admin_path("/rotate")).await.unwrap();
    assert_eq!(rotated.status(), StatusCode::OK);
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = stop.send(());
    let printed = stdout.join().unwrap();
    let logged = stderr.join().unwrap();
    let byok_line = format!(
        "byok: {ORG}/{WS} -> {kms_url}/{PARTNER}/byok/v1 (alias tenant-a, client credentials of client 'platform', data keys cached 1 s)"
    );
    assert!(printed.contains(&byok_line), "{printed}");
    assert!(
        logged.contains("key service call"),
        "debug logs were on: {logged}"
    );
    assert!(
        logged.contains("token refused; fetching a new one"),
        "{logged}"
    );
    assert_eq!(
        svc.audit().count(|e| e.endpoint == Endpoint::Auth),
        2,
        "the client id and secret from the environment were used"
    );
    assert_no_secret(&format!("{first}{printed}\n{logged}\n{body}"), &[]);
}

#[tokio::test]
async fn a_platform_with_a_bad_byok_entry_does_not_start_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&dir.path().join("p.db"));
    let mut entry = byok_entry(
        "http://127.0.0.1:9",
        &Method::ClientCredentials,
        "tenant-a",
        "AAAA".into(),
    );
    entry.api_key = Some(Secret::new(STATIC_KEY));
    config.byok.push(entry);
    let err = platform::App::builder(config)
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("byok for org-1/ws-1"), "{err}");
    assert!(err.contains("encrypted_key must be"), "{err}");
    assert!(err.contains("not both"), "{err}");
    assert!(
        !err.contains(STATIC_KEY) && !err.contains(CLIENT_SECRET),
        "{err}"
    );
}

#[tokio::test]
async fn other_workspaces_keep_the_local_key() {
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    let path = outbounds_path().replace(
        &format!("/workspaces/{WS}/"),
        &format!("/workspaces/{WS2}/"),
    );
    let (s, v) = t
        .call(reqwest::Method::POST, &path, Some(KEY2), Some(&outbound()))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(kms.svc.audit().len(), 0, "ws-2 never calls the customer");
    let rows = t.app.keys.rows(&WorkspaceRef::new(ORG, WS2)).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].provider, "local");
}
