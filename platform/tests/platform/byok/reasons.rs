//! Why each call to the key service was made, as the live page shows it beside the key
//! service's audit (`GET .../key-service/calls`, `reason`): the platform records it by the
//! call's `x-request-id` when it makes the call.

use std::sync::{Arc, OnceLock};

use contracts::wire::{KeyServiceCall, KeyServiceCalls};
use platform::app::{AuditSource, KeyServiceAudit};

use super::*;

/// The audit of a key service made after the platform (it runs on the platform's clock), as
/// `harness up` hands it to the platform: with each call's request id.
struct LateAudit(Arc<OnceLock<customer_kms_sim::KeyService>>);

impl KeyServiceAudit for LateAudit {
    fn calls(&self, after: u64, limit: usize) -> KeyServiceCalls {
        let svc = self.0.get().expect("the key service runs");
        let log = svc.audit();
        KeyServiceCalls {
            items: log
                .since(after, limit)
                .into_iter()
                .map(|e| KeyServiceCall {
                    seq: e.seq,
                    at: e.time,
                    endpoint: e.endpoint.as_str().to_string(),
                    caller: e.caller,
                    key_alias: e.key_alias,
                    outcome: e.outcome,
                    status: e.status,
                    latency_ms: e.latency_ms,
                    faults: e.fault_kinds,
                    reason: None,
                    request_id: e.request_id,
                })
                .collect(),
            next_seq: log.next_seq(),
            dropped: log.dropped(),
        }
    }
}

/// [`byok_app`] with the key service's audit readable by the live page.
async fn audited_app() -> (TestApp, Kms) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let entry = byok_entry(
        &format!("http://{addr}"),
        &Method::ClientCredentials,
        "tenant-a",
        wrapped("tenant-a"),
    );
    let late = Arc::new(OnceLock::new());
    let audit = LateAudit(late.clone());
    let t = spawn_built(
        move |mut c| {
            c.byok.push(entry);
            c
        },
        |b| {
            b.key_service_audit(AuditSource {
                ws: WorkspaceRef::new(ORG, WS),
                audit: Arc::new(audit),
            })
        },
    )
    .await;
    let svc = customer_kms_sim::KeyService::new(kms_config(), t.clock.shared()).unwrap();
    late.set(svc.clone()).ok().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(customer_kms_sim::serve(listener, svc.clone(), async {
        let _ = rx.await;
    }));
    (
        t,
        Kms {
            svc,
            addr,
            stop: Some(tx),
        },
    )
}

/// The calls after `after` as the page reads them: `(endpoint, reason)`.
async fn reasons(t: &TestApp, after: u64) -> Vec<(String, String)> {
    let (s, v) = t
        .get(&format!(
            "/sim/v1/orgs/{ORG}/workspaces/{WS}/key-service/calls?after={after}"
        ))
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert!(c.get("request_id").is_none(), "never answered: {c}");
            (
                c["endpoint"].as_str().unwrap().to_string(),
                c["reason"].as_str().unwrap_or("null").to_string(),
            )
        })
        .collect()
}

fn calls(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(e, r)| (e.to_string(), r.to_string()))
        .collect()
}

#[tokio::test]
async fn the_live_page_says_why_each_call_to_the_key_service_was_made() {
    let (t, kms) = audited_app().await;
    let mut seen = 0;
    let mut next = async |t: &TestApp| {
        let got = reasons(t, seen).await;
        seen += got.len() as u64;
        got
    };
    outbound_ok(&t).await;
    assert_eq!(
        next(&t).await,
        calls(&[("auth", "cold_start"), ("decrypt-key", "configured_key")]),
        "a cold start: no token yet, the configured key opened for the first time"
    );
    // The data key stays in memory 300 s, the token 3,570 s (3,600 less 30).
    let start = now(&t);
    advance_to(&t, &format_instant(start + Duration::seconds(300))).await;
    outbound_ok(&t).await;
    assert_eq!(next(&t).await, calls(&[("decrypt-key", "key_expired")]));
    advance_to(&t, &format_instant(start + Duration::seconds(3_570))).await;
    outbound_ok(&t).await;
    assert_eq!(
        next(&t).await,
        calls(&[("auth", "token_expired"), ("decrypt-key", "key_expired")])
    );
    let (s, v) = t.post(&admin_path("/rotate"), &json!({})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        next(&t).await,
        calls(&[
            ("rotate-key", "rotation_asked"),
            ("decrypt-key", "rotation_check")
        ])
    );
    // The key service forgets its tokens: the cached one is refused, a new one is fetched
    // and the call made again.
    kms.svc.expire_all_tokens();
    advance_to(&t, &format_instant(start + Duration::seconds(3_570 + 300))).await;
    outbound_ok(&t).await;
    // Both keys expired: each decrypt-key is refused once, then made again (one new token).
    let got = next(&t).await;
    let refused = |endpoint: &str| {
        got.iter()
            .filter(|(e, r)| e == endpoint && r == "token_refused")
            .count()
    };
    assert_eq!(refused("auth"), 1, "{got:?}");
    assert!(refused("decrypt-key") >= 1, "{got:?}");
    assert!(
        got.iter().all(|(_, r)| r != "null"),
        "every call has its reason: {got:?}"
    );
}
