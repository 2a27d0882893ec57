//! Unit tests of the blob format, the local key service and the data-key ring.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use chrono::Duration;
use zeroize::Zeroizing;

use super::*;
use crate::store::{Store, WorkspaceRef};

#[test]
fn blobs_open_only_in_their_context_and_with_their_key() {
    let k1 = Arc::new(DataKey::new(1, &[7u8; 32]));
    let k2 = Arc::new(DataKey::new(2, &[9u8; 32]));
    let keys = WorkspaceKeys {
        active: k2.clone(),
        lookup: k1.clone(),
        all: HashMap::from([(1, k1.clone()), (2, k2.clone())]),
    };
    let old = k1.seal("users/1", b"+14155550100");
    let new = keys.seal("users/2", b"+14155550101");
    assert_eq!(blob_key_id(&old).unwrap(), 1);
    assert_eq!(blob_key_id(&new).unwrap(), 2);
    assert_eq!(keys.open("users/1", &old).unwrap(), b"+14155550100");
    assert_eq!(keys.open("users/2", &new).unwrap(), b"+14155550101");
    assert!(matches!(
        keys.open("users/2", &old),
        Err(CryptoError::Tampered { .. })
    ));
    let mut flipped = new.clone();
    *flipped.last_mut().unwrap() ^= 1;
    assert!(keys.open("users/2", &flipped).is_err());
    assert_eq!(blob_key_id(&[1, 2, 3]), Err(CryptoError::Malformed));
    assert_eq!(
        keys.lookup_hash("+1415"),
        k1.lookup_hash("+1415"),
        "stable across rotation"
    );
    let only_new = WorkspaceKeys {
        active: k2.clone(),
        lookup: k2.clone(),
        all: HashMap::from([(2, k2)]),
    };
    assert_eq!(
        only_new.open("users/1", &old),
        Err(CryptoError::UnknownKey(1))
    );
}

#[test]
fn blobs_sealed_onto_a_buffer_open_on_their_own_in_their_context() {
    let keys = WorkspaceKeys::single(DataKey::new(3, &[5u8; 32]));
    // Contexts on both sides of the associated data's stack buffer (128 bytes with the
    // 12-byte prefix), and one far past it.
    let contexts: Vec<String> = [1usize, 115, 116, 117, 400]
        .iter()
        .map(|n| "c".repeat(*n))
        .collect();
    let mut buf = b"before".to_vec();
    let mut spans = vec![];
    for (i, ctx) in contexts.iter().enumerate() {
        let start = buf.len();
        keys.seal_append(ctx, format!("user {i}").as_bytes(), &mut buf);
        spans.push(start..buf.len());
    }
    assert_eq!(&buf[..6], b"before", "what the buffer held stays");
    // The format, independently: AES-256-GCM over the body with "vap-blob:v1:" || context
    // as associated data (what blobs stored before keep needing).
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    let reference = aes_gcm::Aes256Gcm::new(&[5u8; 32].into());
    for (i, (ctx, span)) in contexts.iter().zip(&spans).enumerate() {
        let blob = &buf[span.clone()];
        assert_eq!(blob.len(), 1 + 4 + 12 + format!("user {i}").len() + 16);
        assert_eq!(&blob[..5], &[1, 0, 0, 0, 3], "version and key id");
        let aad = format!("vap-blob:v1:{ctx}");
        let plain = reference
            .decrypt(
                aes_gcm::Nonce::from_slice(&blob[5..17]),
                Payload {
                    msg: &blob[17..],
                    aad: aad.as_bytes(),
                },
            )
            .expect("opens with the documented associated data");
        assert_eq!(plain, format!("user {i}").as_bytes());
        assert_eq!(
            keys.open(ctx, blob).unwrap(),
            format!("user {i}").as_bytes()
        );
        let mut other = ctx.clone();
        other.push('x');
        assert!(keys.open(&other, blob).is_err(), "bound to its context");
        other.pop();
        other.pop();
        assert!(
            keys.open(&other, blob).is_err(),
            "bound to its whole context"
        );
    }
}

#[test]
fn lookup_hashes_are_keyed() {
    let a = DataKey::new(1, &[1u8; 32]);
    let b = DataKey::new(2, &[2u8; 32]);
    assert_eq!(a.lookup_hash("+1415"), a.lookup_hash("+1415"));
    assert_ne!(a.lookup_hash("+1415"), b.lookup_hash("+1415"));
    assert_ne!(a.lookup_hash("+1415"), a.lookup_hash("+1416"));
}

/// A key service over the local envelope, counting calls, that can be made to fail,
/// answer wrong keys, or wait at a gate the test opens.
#[derive(Debug)]
struct Fake {
    provider: &'static str,
    local: LocalKeyService,
    configured: Mutex<Option<(String, String)>>,
    decrypts: std::sync::atomic::AtomicUsize,
    generates: std::sync::atomic::AtomicUsize,
    fail: Mutex<Option<KeyServiceError>>,
    wrong: std::sync::atomic::AtomicBool,
    lifetime: Duration,
    period: Option<Duration>,
    /// When set, a decrypt waits for a permit of it.
    gate: Mutex<Option<Arc<tokio::sync::Semaphore>>>,
    /// Each call as asked: `decrypt` or `generate`, and why.
    calls: Mutex<Vec<(&'static str, KeyCallReason)>>,
}

impl Fake {
    fn new(provider: &'static str) -> Fake {
        Fake {
            provider,
            local: LocalKeyService::new(&[3u8; 32]),
            configured: Mutex::new(None),
            decrypts: Default::default(),
            generates: Default::default(),
            fail: Mutex::new(None),
            wrong: Default::default(),
            lifetime: Duration::seconds(300),
            period: None,
            gate: Mutex::new(None),
            calls: Mutex::new(Vec::new()),
        }
    }

    fn decrypts(&self) -> usize {
        self.decrypts.load(Ordering::SeqCst)
    }

    /// Makes decrypts wait until the returned gate gets permits.
    fn close_gate(&self) -> Arc<tokio::sync::Semaphore> {
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        *self.gate.lock().unwrap() = Some(gate.clone());
        gate
    }
}

impl DataKeySource for Fake {
    fn provider(&self) -> &'static str {
        self.provider
    }

    fn configured_key(&self, _ws: &WorkspaceRef) -> Option<(String, String)> {
        self.configured.lock().unwrap().clone()
    }

    fn decrypt<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        alias: &'a str,
        encrypted_key: &'a str,
        trace_id: Option<&'a str>,
        reason: KeyCallReason,
    ) -> KeyFuture<'a, Zeroizing<[u8; 32]>> {
        Box::pin(async move {
            self.decrypts.fetch_add(1, Ordering::SeqCst);
            self.calls.lock().unwrap().push(("decrypt", reason));
            let gate = self.gate.lock().unwrap().clone();
            if let Some(gate) = gate {
                let _permit = gate.acquire().await;
            }
            if let Some(e) = self.fail.lock().unwrap().clone() {
                return Err(e);
            }
            let mut key = self
                .local
                .decrypt(ws, alias, encrypted_key, trace_id, reason)
                .await?;
            if self.wrong.load(Ordering::SeqCst) {
                key[0] ^= 1;
            }
            Ok(key)
        })
    }

    fn generate<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        trace_id: Option<&'a str>,
        reason: KeyCallReason,
    ) -> KeyFuture<'a, (String, String, Zeroizing<[u8; 32]>)> {
        Box::pin(async move {
            self.generates.fetch_add(1, Ordering::SeqCst);
            self.calls.lock().unwrap().push(("generate", reason));
            if let Some(e) = self.fail.lock().unwrap().clone() {
                return Err(e);
            }
            self.local.generate(ws, trace_id, reason).await
        })
    }

    fn cache_lifetime(&self) -> Duration {
        self.lifetime
    }

    fn rotation_period(&self) -> Option<Duration> {
        self.period
    }
}

fn ring(fake: Arc<Fake>) -> (Arc<DataKeyRing>, contracts::clock::SimClock, Store) {
    let clock = contracts::clock::SimClock::at("2026-03-02T12:00:00Z");
    let store = Store::in_memory().unwrap();
    let ring = Arc::new(DataKeyRing::new(store.clone(), clock.shared(), fake));
    (ring, clock, store)
}

fn ws() -> WorkspaceRef {
    WorkspaceRef::new("o", "w")
}

/// `n` concurrent callers of a workspace's keys, while the key service holds its first
/// decrypt at a gate: on this one-thread runtime every caller has reached the flight (or
/// waits behind it) before the gate opens, however loaded the machine is.
async fn concurrently(
    ring: &Arc<DataKeyRing>,
    fake: &Fake,
    n: usize,
) -> Vec<Result<WorkspaceKeys, DataKeyRingError>> {
    let gate = fake.close_gate();
    let before = fake.decrypts();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let ring = ring.clone();
            tokio::spawn(async move { ring.workspace(&ws(), None).await })
        })
        .collect();
    // The flight reaches the key service; the other tasks, queued before this one on the
    // one thread, have each run until they wait.
    while fake.decrypts() == before {
        tokio::task::yield_now().await;
    }
    for _ in 0..n {
        tokio::task::yield_now().await;
    }
    gate.add_permits(usize::MAX >> 4);
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    *fake.gate.lock().unwrap() = None;
    out
}

#[tokio::test]
async fn concurrent_callers_on_a_cold_or_expired_cache_share_one_flight() {
    let fake = Arc::new(Fake::new("local"));
    let (ring, clock, _) = ring(fake.clone());
    let results = concurrently(&ring, &fake, 50).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(fake.generates.load(Ordering::SeqCst), 1, "one key made");
    assert_eq!(fake.decrypts(), 1, "and decrypted back once to check it");
    clock.advance(Duration::seconds(299)).unwrap();
    assert!(ring.workspace(&ws(), None).await.is_ok());
    assert_eq!(fake.decrypts(), 1, "still cached");
    clock.advance(Duration::seconds(1)).unwrap();
    let results = concurrently(&ring, &fake, 50).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(
        fake.decrypts(),
        2,
        "one decrypt for 50 callers on an expired cache"
    );
}

#[tokio::test]
async fn callers_that_waited_for_a_failed_flight_get_its_error_without_calling_again() {
    let fake = Arc::new(Fake::new("local"));
    let (ring, clock, _) = ring(fake.clone());
    ring.workspace(&ws(), None).await.unwrap();
    clock.advance(Duration::seconds(300)).unwrap();
    *fake.fail.lock().unwrap() = Some(KeyServiceError::Unavailable("down".into()));
    let before = fake.decrypts();
    let results = concurrently(&ring, &fake, 20).await;
    assert!(results.iter().all(|r| matches!(
        r,
        Err(DataKeyRingError::Service(KeyServiceError::Unavailable(m))) if m == "down"
    )));
    assert_eq!(fake.decrypts() - before, 1, "one call for 20 callers");
    *fake.fail.lock().unwrap() = None;
    assert!(
        ring.workspace(&ws(), None).await.is_ok(),
        "the next caller tries again"
    );
    assert_eq!(fake.decrypts() - before, 2);
}

#[tokio::test]
async fn expired_keys_are_dropped_even_when_nobody_asks() {
    let fake = Arc::new(Fake::new("local"));
    let (ring, clock, _) = ring(fake.clone());
    let keys = ring.workspace(&ws(), None).await.unwrap();
    let weak = Arc::downgrade(&keys.active);
    drop(keys);
    assert_eq!(ring.cached_key_count(), 1);
    clock.advance(Duration::seconds(299)).unwrap();
    ring.purge_expired();
    assert_eq!(ring.cached_key_count(), 1);
    clock.advance(Duration::seconds(1)).unwrap();
    ring.purge_expired();
    assert_eq!(ring.cached_key_count(), 0);
    assert!(
        weak.upgrade().is_none(),
        "the key itself is gone (and zeroed)"
    );
}

#[tokio::test]
async fn a_wrong_plaintext_is_caught_by_the_check_value_and_not_cached() {
    let fake = Arc::new(Fake::new("local"));
    let (ring, _, store) = ring(fake.clone());
    let keys = ring.workspace(&ws(), None).await.unwrap();
    let sealed = keys.seal("users/1", b"+14155550100");
    drop(keys);
    ring.clear_cache();
    fake.wrong.store(true, Ordering::SeqCst);
    match ring.workspace(&ws(), None).await {
        Err(DataKeyRingError::Service(KeyServiceError::Unavailable(m))) => {
            assert!(m.contains("check value"), "{m}")
        }
        other => panic!("expected a check failure, got {other:?}"),
    }
    assert_eq!(ring.cached_key_count(), 0);
    fake.wrong.store(false, Ordering::SeqCst);
    let keys = ring.workspace(&ws(), None).await.unwrap();
    assert_eq!(keys.open("users/1", &sealed).unwrap(), b"+14155550100");
    // A key stored before check values existed gets one at its next decryption.
    let check = store.data_keys(ws()).await.unwrap()[0].key_check.clone();
    assert_eq!(check.as_ref().map(Vec::len), Some(16));
    store
        .write(|c| {
            c.execute("UPDATE data_keys SET key_check = NULL", [])?;
            Ok::<_, crate::store::StoreError>(())
        })
        .await
        .unwrap();
    let fresh = DataKeyRing::new(store.clone(), ring.clock.clone(), fake.clone());
    fresh.workspace(&ws(), None).await.unwrap();
    assert_eq!(store.data_keys(ws()).await.unwrap()[0].key_check, check);
}

#[tokio::test]
async fn rotation_keeps_older_data_readable_and_lookups_stable() {
    let mut fake = Fake::new("local");
    fake.period = Some(Duration::hours(1));
    let fake = Arc::new(fake);
    let (ring, clock, _) = ring(fake.clone());
    let first = ring.workspace(&ws(), None).await.unwrap();
    let old = first.seal("users/1", b"+14155550100");
    let hash = first.lookup_hash("+14155550100");
    let row = ring.rotate(&ws(), None).await.unwrap();
    let second = ring.workspace(&ws(), None).await.unwrap();
    assert_eq!(second.active().id(), row.id);
    assert_ne!(row.id, first.active().id());
    let new = second.seal("users/2", b"+14155550101");
    assert_eq!(blob_key_id(&new).unwrap(), row.id);
    assert_eq!(second.open("users/1", &old).unwrap(), b"+14155550100");
    assert_eq!(second.lookup_hash("+14155550100"), hash);
    // The period counts from the newest key's creation, on the injected clock.
    clock.advance(Duration::minutes(59)).unwrap();
    assert_eq!(
        ring.workspace(&ws(), None).await.unwrap().active().id(),
        row.id
    );
    clock.advance(Duration::minutes(1)).unwrap();
    let third = ring.workspace(&ws(), None).await.unwrap();
    assert_ne!(third.active().id(), row.id, "rotated by the period");
    assert_eq!(third.open("users/2", &new).unwrap(), b"+14155550101");
    let rows = ring.rows(&ws()).await.unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[2].created_at, contracts::clock::Clock::now(&clock));
}

#[tokio::test]
async fn each_call_to_the_key_service_says_why_the_ring_makes_it() {
    use KeyCallReason::*;
    let mut fake = Fake::new("local");
    fake.period = Some(Duration::hours(1));
    let fake = Arc::new(fake);
    let (ring, clock, store) = ring(fake.clone());
    let take = || std::mem::take(&mut *fake.calls.lock().unwrap());
    ring.workspace(&ws(), None).await.unwrap();
    assert_eq!(
        take(),
        [("generate", ColdStart), ("decrypt", RotationCheck)],
        "the first key, made and checked"
    );
    let restarted = DataKeyRing::new(store.clone(), ring.clock.clone(), fake.clone());
    restarted.workspace(&ws(), None).await.unwrap();
    assert_eq!(take(), [("decrypt", ColdStart)], "a cold start");
    clock.advance(Duration::seconds(300)).unwrap();
    ring.workspace(&ws(), None).await.unwrap();
    assert_eq!(take(), [("decrypt", KeyExpired)], "the cached key expired");
    ring.rotate(&ws(), None).await.unwrap();
    assert_eq!(
        take(),
        [("generate", RotationAsked), ("decrypt", RotationCheck)]
    );
    clock.advance(Duration::hours(1)).unwrap();
    ring.workspace(&ws(), None).await.unwrap();
    assert_eq!(
        take(),
        [
            ("decrypt", KeyExpired),
            ("decrypt", KeyExpired),
            ("generate", RotationDue),
            ("decrypt", RotationCheck)
        ]
    );
    ring.clear_cache();
    ring.workspace(&ws(), None).await.unwrap();
    assert_eq!(
        take(),
        [("decrypt", ColdStart); 3],
        "a cleared cache starts cold"
    );
}

#[tokio::test]
async fn a_failed_periodic_rotation_keeps_the_current_key_and_waits() {
    let mut fake = Fake::new("local");
    fake.period = Some(Duration::hours(1));
    fake.lifetime = Duration::days(1);
    let fake = Arc::new(fake);
    let (ring, clock, _) = ring(fake.clone());
    let first = ring.workspace(&ws(), None).await.unwrap().active().id();
    clock.advance(Duration::hours(1)).unwrap();
    *fake.fail.lock().unwrap() = Some(KeyServiceError::Unavailable("down".into()));
    let keys = ring.workspace(&ws(), None).await.unwrap();
    assert_eq!(keys.active().id(), first, "goes on with the current key");
    assert_eq!(fake.generates.load(Ordering::SeqCst), 2);
    clock.advance(Duration::seconds(59)).unwrap();
    ring.workspace(&ws(), None).await.unwrap();
    assert_eq!(
        fake.generates.load(Ordering::SeqCst),
        2,
        "no retry within a minute"
    );
    *fake.fail.lock().unwrap() = None;
    clock.advance(Duration::seconds(1)).unwrap();
    let keys = ring.workspace(&ws(), None).await.unwrap();
    assert_ne!(keys.active().id(), first);
    assert_eq!(fake.generates.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_configured_key_is_adopted_and_older_local_keys_still_open() {
    let local = Arc::new(Fake::new("local"));
    let (ring, _, _) = ring(local.clone());
    let keys = ring.workspace(&ws(), None).await.unwrap();
    let old = keys.seal("users/1", b"+14155550100");
    let hash = keys.lookup_hash("+14155550100");
    // The workspace moves to BYOK: a customer key, wrapped by the customer's service.
    let byok = Arc::new(Fake::new("byok"));
    let (alias, encrypted, _) = byok
        .local
        .generate(&ws(), None, KeyCallReason::ColdStart)
        .await
        .unwrap();
    *byok.configured.lock().unwrap() = Some((alias, encrypted.clone()));
    ring.set_service(ws(), byok.clone());
    ring.clear_cache();
    let keys = ring.workspace(&ws(), None).await.unwrap();
    let rows = ring.rows(&ws()).await.unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].provider, "byok");
    assert_eq!(rows[1].encrypted_key, encrypted);
    assert_eq!(
        keys.active().id(),
        rows[1].id,
        "new data under the customer's key"
    );
    assert_eq!(
        keys.open("users/1", &old).unwrap(),
        b"+14155550100",
        "through the local service"
    );
    assert_eq!(keys.lookup_hash("+14155550100"), hash);
    assert_eq!(
        byok.decrypts(),
        1,
        "only the customer's key went to the customer"
    );
    // A key of a service that is no longer configured is refused clearly.
    let other = Arc::new(Fake::new("other"));
    ring.set_service(ws(), other);
    ring.clear_cache();
    match ring.workspace(&ws(), None).await {
        Err(DataKeyRingError::Service(KeyServiceError::Refused(m))) => {
            assert!(m.contains("'byok' key service"), "{m}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
