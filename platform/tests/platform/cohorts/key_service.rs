//! Processing while the key service is unavailable, and after it refuses.

use super::*;

/// A key service that can be made to fail: the local service with the test app's master
/// key, behind a switch.
#[derive(Debug)]
struct Switchable {
    inner: platform::keys::LocalKeyService,
    mode: std::sync::Mutex<Option<platform::keys::KeyServiceError>>,
    /// Decrypts answered with the error of `mode`.
    failed: std::sync::atomic::AtomicUsize,
}

impl platform::keys::DataKeySource for Switchable {
    fn provider(&self) -> &'static str {
        "local"
    }

    fn configured_key(&self, _ws: &WorkspaceRef) -> Option<(String, String)> {
        None
    }

    fn decrypt<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        alias: &'a str,
        encrypted_key: &'a str,
        trace_id: Option<&'a str>,
        reason: platform::keys::KeyCallReason,
    ) -> platform::keys::KeyFuture<'a, zeroize::Zeroizing<[u8; 32]>> {
        if let Some(e) = self.mode.lock().unwrap().clone() {
            self.failed
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return Box::pin(async move { Err(e) });
        }
        self.inner
            .decrypt(ws, alias, encrypted_key, trace_id, reason)
    }

    fn generate<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        trace_id: Option<&'a str>,
        reason: platform::keys::KeyCallReason,
    ) -> platform::keys::KeyFuture<'a, (String, String, zeroize::Zeroizing<[u8; 32]>)> {
        self.inner.generate(ws, trace_id, reason)
    }

    fn cache_lifetime(&self) -> chrono::Duration {
        chrono::Duration::days(1)
    }
}

#[tokio::test]
async fn processing_waits_for_an_unavailable_key_service_and_fails_on_a_refusal() {
    use platform::keys::KeyServiceError;
    let t = spawn_app().await;
    let camp = create_campaign(&t).await;
    let base = campaign_cohorts(&camp);
    // The workspace's data key exists (the campaign's first upload makes it) and is cached.
    let first = upload_ok(&t, &base, "First", USERS).await;
    wait_done(&t, &base, &first).await;
    let mut key_file = t.db.clone().into_os_string();
    key_file.push(".key");
    let master: [u8; 32] = std::fs::read(&key_file).unwrap().try_into().unwrap();
    let service = std::sync::Arc::new(Switchable {
        inner: platform::keys::LocalKeyService::new(&master),
        mode: std::sync::Mutex::new(None),
        failed: Default::default(),
    });
    t.app.keys.set_service(ws(), service.clone());
    t.app.cohorts.shutdown().await;
    let waiting = upload_ok(&t, &base, "Waiting", USERS).await;
    // The key service goes down and the cached key expires: the worker must wait.
    *service.mode.lock().unwrap() =
        Some(KeyServiceError::Unavailable("down for maintenance".into()));
    t.app.keys.clear_cache();
    platform::ingest::start(&t.app);
    // Once the worker has met the outage (waited for, not slept on), the upload still waits.
    let watch = Stopwatch::start();
    while service.failed.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(
            watch.elapsed() < Duration::from_secs(30),
            "the worker never asked the key service"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (_, v) = t.get(&format!("{base}/{waiting}")).await;
    assert_eq!(
        v["status"], "processing",
        "waits while the key service is down"
    );
    // It comes back: the first cohort completes; then it refuses: the next one fails.
    *service.mode.lock().unwrap() = None;
    let done = wait_done(&t, &base, &waiting).await;
    assert_eq!(done["status"], "completed");
    t.app.cohorts.shutdown().await;
    let refused = upload_ok(&t, &base, "Refused", USERS).await;
    *service.mode.lock().unwrap() = Some(KeyServiceError::Refused(
        "key alias 'local' is disabled".into(),
    ));
    t.app.keys.clear_cache();
    platform::ingest::start(&t.app);
    let done = wait_done(&t, &base, &refused).await;
    assert_eq!(done["status"], "failed");
    insta::assert_snapshot!(
        "failure_key_refused",
        done["failure_reason"].as_str().unwrap()
    );
}
