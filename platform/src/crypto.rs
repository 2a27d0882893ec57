//! Encryption at rest: data keys, sealed blobs, keyed lookup hashes, and the key ring that
//! hands out a workspace's keys.
//!
//! Every value that identifies a person (phone numbers, identifiers, agent variables, the
//! uploaded and rejected files) is stored as a *sealed blob*:
//!
//! ```text
//! blob = 0x01 || u32be(data_key_id) || nonce (12) || AES-256-GCM(ciphertext || tag)
//! aad  = "vap-blob:v1:" || context
//! ```
//!
//! `data_key_id` is the row of `data_keys` whose encrypted key protects the blob, so data
//! stays readable after a rotation. `context` names where the blob lives (for example
//! `cohort_users/coh-…/17`), so a blob copied to another row fails to open.
//!
//! Each data key comes from a [`KeyService`]: the platform's local key service (a master key
//! held by the platform, wrapping per-workspace data keys in the `byok:v1:` envelope) or the
//! customer's key service (BYOK). The [`KeyRing`] caches plaintext data keys in memory for a
//! bounded lifetime on the injected clock and zeroes them when dropped.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use chrono::{DateTime, Duration, Utc};
use contracts::clock::SharedClock;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::store::{DataKeyRow, Store, WorkspaceRef};

const BLOB_VERSION: u8 = 1;
const BLOB_HEADER: usize = 1 + 4 + 12;
const AAD_PREFIX: &[u8] = b"vap-blob:v1:";

/// A plaintext data key, with its cipher and lookup key ready. Zeroed when dropped: the
/// lookup key is `Zeroizing`, the AES round keys are zeroed by `aes` (its `zeroize` feature,
/// checked below at compile time).
pub struct DataKey {
    id: u32,
    cipher: Aes256Gcm,
    lookup: Zeroizing<[u8; 32]>,
}

// Fails to compile when the `zeroize` feature of `aes` is lost.
const _: fn() = || {
    fn zeroed_on_drop<T: zeroize::ZeroizeOnDrop>() {}
    zeroed_on_drop::<aes::Aes256>();
};

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DataKey(id {})", self.id)
    }
}

impl DataKey {
    /// Prepares the 32-byte key stored as `data_keys` row `id`.
    pub fn new(id: u32, key: &[u8; 32]) -> Self {
        // A separate key for lookup hashes, derived so that the hash reveals nothing about
        // the encryption key: HMAC-SHA256(key, "vap-lookup:v1").
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key");
        mac.update(b"vap-lookup:v1");
        let lookup: [u8; 32] = mac.finalize().into_bytes().into();
        DataKey {
            id,
            cipher: Aes256Gcm::new(key.into()),
            lookup: Zeroizing::new(lookup),
        }
    }

    /// The `data_keys` row of this key.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Seals `plaintext` for `context`.
    pub fn seal(&self, context: &str, plaintext: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; 12];
        rand::thread_rng().fill_bytes(&mut nonce);
        let aad = aad(context);
        let sealed = self
            .cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            .expect("AES-GCM encrypts any plaintext under 64 GiB");
        let mut out = Vec::with_capacity(BLOB_HEADER + sealed.len());
        out.push(BLOB_VERSION);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    fn open_body(&self, context: &str, blob: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let nonce = &blob[5..BLOB_HEADER];
        let aad = aad(context);
        self.cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: &blob[BLOB_HEADER..],
                    aad: &aad,
                },
            )
            .map_err(|_| CryptoError::Tampered {
                context: context.to_string(),
            })
    }

    /// A keyed hash of a value (a phone number) for equality lookups without storing it.
    pub fn lookup_hash(&self, value: &str) -> [u8; 16] {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.lookup[..]).expect("HMAC takes any key");
        mac.update(value.as_bytes());
        let full = mac.finalize().into_bytes();
        let mut out = [0u8; 16];
        out.copy_from_slice(&full[..16]);
        out
    }
}

fn aad(context: &str) -> Vec<u8> {
    let mut a = Vec::with_capacity(AAD_PREFIX.len() + context.len());
    a.extend_from_slice(AAD_PREFIX);
    a.extend_from_slice(context.as_bytes());
    a
}

/// The data key id a blob was sealed with.
pub fn blob_key_id(blob: &[u8]) -> Result<u32, CryptoError> {
    if blob.len() < BLOB_HEADER + 16 || blob[0] != BLOB_VERSION {
        return Err(CryptoError::Malformed);
    }
    Ok(u32::from_be_bytes(blob[1..5].try_into().expect("4 bytes")))
}

/// Why a blob or a key could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// Not a sealed blob of this format.
    #[error("stored data is not a sealed blob")]
    Malformed,
    /// The blob does not open: altered, or moved from another place.
    #[error("stored data at {context} failed authentication")]
    Tampered {
        /// Where the blob was read.
        context: String,
    },
    /// No key with this id is known for the workspace.
    #[error("no data key {0} for this workspace")]
    UnknownKey(u32),
}

/// The keys of one workspace at one moment: the active key for new data and every key that
/// may protect existing data.
#[derive(Debug, Clone)]
pub struct WorkspaceKeys {
    active: Arc<DataKey>,
    lookup: Arc<DataKey>,
    all: HashMap<u32, Arc<DataKey>>,
}

impl WorkspaceKeys {
    /// The key new data is sealed with.
    pub fn active(&self) -> &DataKey {
        &self.active
    }

    /// Seals with the active key.
    pub fn seal(&self, context: &str, plaintext: &[u8]) -> Vec<u8> {
        self.active.seal(context, plaintext)
    }

    /// Opens a blob with whichever of the workspace's keys sealed it.
    pub fn open(&self, context: &str, blob: &[u8]) -> Result<Vec<u8>, CryptoError> {
        let id = blob_key_id(blob)?;
        let key = self.all.get(&id).ok_or(CryptoError::UnknownKey(id))?;
        key.open_body(context, blob)
    }

    /// The keyed lookup hash of `value` (a phone number). It is derived from the
    /// workspace's first data key, so it stays the same across rotations and rows written
    /// before and after one still match.
    pub fn lookup_hash(&self, value: &str) -> [u8; 16] {
        self.lookup.lookup_hash(value)
    }
}

/// A future returned by a [`KeyService`].
pub type KeyFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, KeyServiceError>> + Send + 'a>>;

/// Where data keys come from: the platform's own local key, or the customer's key service.
pub trait KeyService: Send + Sync + fmt::Debug {
    /// A short name for logs and the `data_keys.provider` column (`local`, `byok`).
    fn provider(&self) -> &'static str;

    /// The encrypted data key to use for a workspace that has none yet, with its alias.
    /// `None` means "generate one" ([`KeyService::generate`]).
    fn configured_key(&self, ws: &WorkspaceRef) -> Option<(String, String)>;

    /// Decrypts an encrypted data key (`byok:v1:...`) of `alias` into the 32-byte key.
    fn decrypt<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        alias: &'a str,
        encrypted_key: &'a str,
        trace_id: Option<&'a str>,
    ) -> KeyFuture<'a, Zeroizing<[u8; 32]>>;

    /// Makes a new data key: its alias, its encrypted form and the plaintext.
    fn generate<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        trace_id: Option<&'a str>,
    ) -> KeyFuture<'a, (String, String, Zeroizing<[u8; 32]>)>;

    /// How long a plaintext data key may stay in memory.
    fn cache_lifetime(&self) -> Duration;

    /// How old the active data key may get before the key ring rotates it by itself (on the
    /// injected clock); `None`: only on request.
    fn rotation_period(&self) -> Option<Duration> {
        None
    }
}

/// Why a key service could not hand out a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyServiceError {
    /// The key service is unreachable, timed out, failed, or answered something unusable;
    /// trying again later may work.
    #[error("the key service is unavailable: {0}")]
    Unavailable(String),
    /// The key service refused (unknown alias, disabled key, decryption failure, bad
    /// credentials); trying again will not help until the configuration changes.
    #[error("the key service refused: {0}")]
    Refused(String),
}

/// The platform's local key service: a 32-byte master key held by the platform wraps one
/// data key per workspace in the `byok:v1:` envelope under the alias `local`. Used when no
/// BYOK is configured for a workspace.
pub struct LocalKeyService {
    master: contracts::envelope::EnvelopeKey,
}

impl fmt::Debug for LocalKeyService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LocalKeyService(..)")
    }
}

/// The alias of data keys wrapped by the local key service.
pub const LOCAL_ALIAS: &str = "local";

impl LocalKeyService {
    /// A local key service with this master key.
    pub fn new(master_key: &[u8; 32]) -> Self {
        LocalKeyService {
            master: contracts::envelope::EnvelopeKey::new(master_key),
        }
    }
}

impl KeyService for LocalKeyService {
    fn provider(&self) -> &'static str {
        "local"
    }

    fn configured_key(&self, _ws: &WorkspaceRef) -> Option<(String, String)> {
        None
    }

    fn decrypt<'a>(
        &'a self,
        _ws: &'a WorkspaceRef,
        alias: &'a str,
        encrypted_key: &'a str,
        _trace_id: Option<&'a str>,
    ) -> KeyFuture<'a, Zeroizing<[u8; 32]>> {
        Box::pin(async move {
            let env = contracts::envelope::parse(encrypted_key)
                .map_err(|e| KeyServiceError::Refused(e.to_string()))?;
            let plain = self
                .master
                .unwrap(alias, &env)
                .map_err(|e| KeyServiceError::Refused(format!("local data key: {e}")))?;
            let key: [u8; 32] = plain[..]
                .try_into()
                .map_err(|_| KeyServiceError::Refused("local data key is not 32 bytes".into()))?;
            Ok(Zeroizing::new(key))
        })
    }

    fn generate<'a>(
        &'a self,
        _ws: &'a WorkspaceRef,
        _trace_id: Option<&'a str>,
    ) -> KeyFuture<'a, (String, String, Zeroizing<[u8; 32]>)> {
        Box::pin(async move {
            let mut key = Zeroizing::new([0u8; 32]);
            rand::rngs::OsRng.fill_bytes(&mut key[..]);
            let mut nonce = [0u8; 12];
            rand::rngs::OsRng.fill_bytes(&mut nonce);
            let wrapped = self
                .master
                .wrap(LOCAL_ALIAS, 1, nonce, &key[..])
                .map_err(|e| KeyServiceError::Refused(e.to_string()))?;
            Ok((LOCAL_ALIAS.to_string(), wrapped, key))
        })
    }

    fn cache_lifetime(&self) -> Duration {
        // The master key is in memory anyway; keep unwrapped data keys for a day.
        Duration::days(1)
    }
}

/// A check value of a plaintext data key: the first 16 bytes of
/// HMAC-SHA256(key, "vap-key-check:v1"). Stored beside each encrypted data key, it tells a
/// right decryption from a wrong one (a key service that answers another 32-byte key) before
/// anything is opened or sealed with it; it reveals nothing about the key.
pub fn key_check(key: &[u8; 32]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(b"vap-key-check:v1");
    mac.finalize().into_bytes()[..16].to_vec()
}

struct Cached {
    key: Arc<DataKey>,
    expires: DateTime<Utc>,
}

/// Hands out each workspace's data keys: it creates the first on demand, decrypts through the
/// workspace's [`KeyService`], caches plaintext keys until their lifetime ends on the
/// injected clock (then drops them, which zeroes them), rotates, and keeps the rows of
/// `data_keys` of each workspace in memory (the store is read once per workspace).
///
/// Single flight: all work that calls a key service (creation, decryption, rotation) runs
/// under one lock per workspace. Concurrent callers on a cold or expired cache wait for the
/// one flight in progress and share its outcome: one decrypt call per key, not one per
/// caller, and when that call fails every caller that waited gets its error at once instead
/// of calling again.
pub struct KeyRing {
    store: Store,
    clock: SharedClock,
    default_service: Arc<dyn KeyService>,
    services: Mutex<HashMap<WorkspaceRef, Arc<dyn KeyService>>>,
    slots: Mutex<HashMap<WorkspaceRef, Arc<Slot>>>,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("default_service", &self.default_service)
            .finish_non_exhaustive()
    }
}

/// One workspace's keys and its flight lock.
#[derive(Default)]
struct Slot {
    /// Held by the flight in progress; remembers how the last flight ended.
    flight: tokio::sync::Mutex<FlightOutcome>,
    /// How many flights have ended.
    flights_done: AtomicU64,
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct FlightOutcome {
    /// The key-service failure of the last flight, shared with the callers that waited for it.
    error: Option<KeyServiceError>,
}

#[derive(Default)]
struct SlotState {
    /// The workspace's `data_keys` rows, oldest first; `None` until read from the store.
    rows: Option<Vec<DataKeyRow>>,
    /// Plaintext keys by row id, each until its expiry.
    keys: HashMap<u32, Cached>,
    /// After a failed periodic rotation: the earliest instant of the next try.
    rotation_retry_at: Option<DateTime<Utc>>,
}

impl SlotState {
    /// Drops the keys whose lifetime has ended (each is zeroed when its last user lets go).
    fn purge(&mut self, now: DateTime<Utc>) {
        self.keys.retain(|_, c| c.expires > now);
    }

    fn assemble(&self) -> Option<WorkspaceKeys> {
        let rows = self.rows.as_ref()?;
        let mut all = HashMap::with_capacity(rows.len());
        for row in rows {
            all.insert(row.id, self.keys.get(&row.id)?.key.clone());
        }
        // Rows come oldest first: the newest is active, the oldest keys lookups.
        let active = all.get(&rows.last()?.id)?.clone();
        let lookup = all.get(&rows.first()?.id)?.clone();
        Some(WorkspaceKeys {
            active,
            lookup,
            all,
        })
    }
}

/// Why the key ring could not give keys.
#[derive(Debug, thiserror::Error)]
pub enum KeyRingError {
    /// The key service failed.
    #[error(transparent)]
    Service(#[from] KeyServiceError),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] crate::store::StoreError),
}

/// How long a failed periodic rotation waits before it is tried again (the workspace goes on
/// with its current key meanwhile).
const ROTATION_RETRY: i64 = 60;

impl KeyRing {
    /// A key ring over `store`, using `default_service` for workspaces without their own.
    pub fn new(store: Store, clock: SharedClock, default_service: Arc<dyn KeyService>) -> Self {
        KeyRing {
            store,
            clock,
            default_service,
            services: Mutex::new(HashMap::new()),
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// Uses `service` for the keys of `ws` from now on.
    pub fn set_service(&self, ws: WorkspaceRef, service: Arc<dyn KeyService>) {
        self.services.lock().expect("lock").insert(ws, service);
    }

    /// The service that holds the keys of `ws`.
    pub fn service(&self, ws: &WorkspaceRef) -> Arc<dyn KeyService> {
        self.services
            .lock()
            .expect("lock")
            .get(ws)
            .cloned()
            .unwrap_or_else(|| self.default_service.clone())
    }

    /// The service that decrypts `row`: the workspace's own when the row came from it, else
    /// the default (local) service when the row came from that one (a workspace that moved
    /// from the local key to BYOK keeps reading its older data).
    fn service_for_row(
        &self,
        ws_service: &Arc<dyn KeyService>,
        row: &DataKeyRow,
    ) -> Result<Arc<dyn KeyService>, KeyServiceError> {
        if row.provider == ws_service.provider() {
            Ok(ws_service.clone())
        } else if row.provider == self.default_service.provider() {
            Ok(self.default_service.clone())
        } else {
            Err(KeyServiceError::Refused(format!(
                "data key {} of this workspace comes from the '{}' key service, which is not configured for it",
                row.id, row.provider
            )))
        }
    }

    fn slot(&self, ws: &WorkspaceRef) -> Arc<Slot> {
        self.slots
            .lock()
            .expect("lock")
            .entry(ws.clone())
            .or_default()
            .clone()
    }

    /// Forgets every cached plaintext key (the rows stay).
    pub fn clear_cache(&self) {
        for slot in self.slots.lock().expect("lock").values() {
            slot.state.lock().expect("lock").keys.clear();
        }
    }

    /// Drops every plaintext key whose lifetime has ended by now, in every workspace. Keys are
    /// also dropped when their workspace is next used; this catches idle workspaces (the
    /// server calls it every second).
    pub fn purge_expired(&self) {
        let now = self.clock.now();
        for slot in self.slots.lock().expect("lock").values() {
            slot.state.lock().expect("lock").purge(now);
        }
    }

    /// Calls [`KeyRing::purge_expired`] every `every` (wall clock) until dropped or aborted.
    pub async fn purge_periodically(self: Arc<Self>, every: std::time::Duration) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.purge_expired();
        }
    }

    /// How many plaintext data keys are in memory now, over all workspaces.
    pub fn cached_key_count(&self) -> usize {
        self.slots
            .lock()
            .expect("lock")
            .values()
            .map(|s| s.state.lock().expect("lock").keys.len())
            .sum()
    }

    /// The keys of `ws`, ready at once when cached; else after one flight that creates the
    /// first key when there is none, adopts the configured key when it is new, decrypts the
    /// keys not in the cache, and rotates when the rotation period has passed. `trace_id` is
    /// the `x-trace-id` of the request that needs the keys, carried to the key service.
    pub async fn workspace(
        &self,
        ws: &WorkspaceRef,
        trace_id: Option<&str>,
    ) -> Result<WorkspaceKeys, KeyRingError> {
        let slot = self.slot(ws);
        let service = self.service(ws);
        if let Some(keys) = self.ready(ws, &slot, &service) {
            return Ok(keys);
        }
        let seen = slot.flights_done.load(Ordering::SeqCst);
        let mut flight = slot.flight.lock().await;
        if slot.flights_done.load(Ordering::SeqCst) != seen {
            // A flight ended while this caller waited: share its outcome.
            if let Some(e) = &flight.error {
                return Err(e.clone().into());
            }
            if let Some(keys) = self.ready(ws, &slot, &service) {
                return Ok(keys);
            }
        }
        let result = self.fly(ws, &slot, &service, trace_id).await;
        flight.error = match &result {
            Err(KeyRingError::Service(e)) => Some(e.clone()),
            _ => None,
        };
        slot.flights_done.fetch_add(1, Ordering::SeqCst);
        result
    }

    /// The keys of `ws` if nothing needs a key service: rows known, every key cached, the
    /// configured key adopted, no rotation due.
    fn ready(
        &self,
        ws: &WorkspaceRef,
        slot: &Slot,
        service: &Arc<dyn KeyService>,
    ) -> Option<WorkspaceKeys> {
        let now = self.clock.now();
        let mut st = slot.state.lock().expect("lock");
        st.purge(now);
        let rows = st.rows.as_ref()?;
        if rows.is_empty()
            || needs_adoption(rows, service.configured_key(ws).as_ref())
            || rotation_due(rows, service.as_ref(), now, st.rotation_retry_at)
        {
            return None;
        }
        st.assemble()
    }

    /// The work of one flight (under the workspace's flight lock).
    async fn fly(
        &self,
        ws: &WorkspaceRef,
        slot: &Slot,
        service: &Arc<dyn KeyService>,
        trace_id: Option<&str>,
    ) -> Result<WorkspaceKeys, KeyRingError> {
        let loaded = slot.state.lock().expect("lock").rows.clone();
        let rows = match loaded {
            Some(rows) => rows,
            None => {
                let rows = self.store.data_keys(ws.clone()).await?;
                slot.state.lock().expect("lock").rows = Some(rows.clone());
                rows
            }
        };
        if let Some((alias, encrypted)) = service.configured_key(ws)
            && needs_adoption(&rows, Some(&(alias.clone(), encrypted.clone())))
        {
            // BYOK's configured key, new to this workspace: it becomes the active key.
            let plain = service.decrypt(ws, &alias, &encrypted, trace_id).await?;
            self.insert(ws, slot, service.as_ref(), alias, encrypted, &plain)
                .await?;
        } else if rows.is_empty() {
            self.add_generated(ws, slot, service, trace_id).await?;
        }
        self.decrypt_missing(ws, slot, service, trace_id).await?;
        let now = self.clock.now();
        let due = {
            let st = slot.state.lock().expect("lock");
            let rows = st.rows.as_deref().unwrap_or_default();
            rotation_due(rows, service.as_ref(), now, st.rotation_retry_at)
        };
        if due {
            match self.add_generated(ws, slot, service, trace_id).await {
                Ok(row) => {
                    tracing::info!(workspace = %ws, key_id = row.id, alias = %row.key_alias, "data key rotated (rotation period)");
                    slot.state.lock().expect("lock").rotation_retry_at = None;
                }
                Err(e) => {
                    // The current key stays in use; the rotation is tried again later.
                    tracing::warn!(workspace = %ws, error = %e, "periodic data-key rotation failed; retrying in {ROTATION_RETRY} s");
                    slot.state.lock().expect("lock").rotation_retry_at =
                        Some(now + Duration::seconds(ROTATION_RETRY));
                }
            }
        }
        let mut st = slot.state.lock().expect("lock");
        st.purge(self.clock.now());
        st.assemble().ok_or_else(|| {
            KeyServiceError::Unavailable("a data key expired while it was fetched".into()).into()
        })
    }

    /// Decrypts every key of the workspace that is not cached, concurrently (one call per
    /// key), checking each against its stored check value. Keys that opened are cached even
    /// when another failed.
    async fn decrypt_missing(
        &self,
        ws: &WorkspaceRef,
        slot: &Slot,
        service: &Arc<dyn KeyService>,
        trace_id: Option<&str>,
    ) -> Result<(), KeyRingError> {
        let missing: Vec<DataKeyRow> = {
            let mut st = slot.state.lock().expect("lock");
            st.purge(self.clock.now());
            let cached: Vec<u32> = st.keys.keys().copied().collect();
            st.rows
                .as_deref()
                .unwrap_or_default()
                .iter()
                .filter(|r| !cached.contains(&r.id))
                .cloned()
                .collect()
        };
        let results = futures_util::future::join_all(missing.iter().map(|row| async move {
            let svc = self.service_for_row(service, row)?;
            let plain = svc
                .decrypt(ws, &row.key_alias, &row.encrypted_key, trace_id)
                .await?;
            Ok::<_, KeyServiceError>((svc.cache_lifetime(), plain))
        }))
        .await;
        let mut first_error = None;
        for (row, result) in missing.iter().zip(results) {
            let checked = result.and_then(|(lifetime, plain)| {
                let check = key_check(&plain);
                match &row.key_check {
                    Some(stored) if !bool::from(stored.ct_eq(&check)) => {
                        Err(KeyServiceError::Unavailable(format!(
                            "the key service answered a data key for key {} that is not the one this workspace's data is sealed with (its check value differs); not used",
                            row.id
                        )))
                    }
                    stored => Ok((lifetime, plain, stored.is_none().then_some(check))),
                }
            });
            match checked {
                Ok((lifetime, plain, new_check)) => {
                    if let Some(check) = new_check {
                        self.store.set_data_key_check(row.id, check.clone()).await?;
                        let mut st = slot.state.lock().expect("lock");
                        if let Some(r) = st
                            .rows
                            .as_mut()
                            .and_then(|rows| rows.iter_mut().find(|r| r.id == row.id))
                        {
                            r.key_check = Some(check);
                        }
                    }
                    self.remember(slot, row.id, &plain, lifetime);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Asks the service for a new data key, checks that the service decrypts its envelope
    /// back to the same key (a key that could not be decrypted later would make everything
    /// sealed under it unreadable), and makes it the active key.
    async fn add_generated(
        &self,
        ws: &WorkspaceRef,
        slot: &Slot,
        service: &Arc<dyn KeyService>,
        trace_id: Option<&str>,
    ) -> Result<DataKeyRow, KeyRingError> {
        let (alias, encrypted, plain) = service.generate(ws, trace_id).await?;
        let back = service.decrypt(ws, &alias, &encrypted, trace_id).await?;
        if !bool::from(back[..].ct_eq(&plain[..])) {
            return Err(KeyServiceError::Unavailable(
                "the key service's new data key does not decrypt back to the key it answered with; not adopted".into(),
            )
            .into());
        }
        self.insert(ws, slot, service.as_ref(), alias, encrypted, &plain)
            .await
    }

    async fn insert(
        &self,
        ws: &WorkspaceRef,
        slot: &Slot,
        service: &dyn KeyService,
        alias: String,
        encrypted_key: String,
        plain: &[u8; 32],
    ) -> Result<DataKeyRow, KeyRingError> {
        let now = self.clock.now();
        let row = self
            .store
            .insert_data_key(
                ws.clone(),
                service.provider(),
                alias,
                encrypted_key,
                key_check(plain),
                now,
            )
            .await?;
        slot.state
            .lock()
            .expect("lock")
            .rows
            .get_or_insert_with(Vec::new)
            .push(row.clone());
        self.remember(slot, row.id, plain, service.cache_lifetime());
        Ok(row)
    }

    /// Adds a new active data key for `ws` (after a rotation at the key service); older keys
    /// stay to read older data.
    pub async fn add_active_key(
        &self,
        ws: &WorkspaceRef,
        alias: String,
        encrypted_key: String,
        plain: &[u8; 32],
    ) -> Result<u32, KeyRingError> {
        // The workspace's rows first, so that the new key is appended to them.
        self.workspace(ws, None).await?;
        let slot = self.slot(ws);
        let service = self.service(ws);
        let _flight = slot.flight.lock().await;
        let row = self
            .insert(ws, &slot, service.as_ref(), alias, encrypted_key, plain)
            .await?;
        Ok(row.id)
    }

    /// Rotates the data key of `ws`: a new data key from its key service (for BYOK,
    /// `rotate-key`), checked by decrypting it back, becomes the active key; new data is
    /// sealed with it from now on and older data stays readable with the older keys.
    /// Answers the new key's row.
    pub async fn rotate(
        &self,
        ws: &WorkspaceRef,
        trace_id: Option<&str>,
    ) -> Result<DataKeyRow, KeyRingError> {
        // The current keys first: the first key exists (it keys lookups) and older keys open.
        self.workspace(ws, trace_id).await?;
        let slot = self.slot(ws);
        let service = self.service(ws);
        let _flight = slot.flight.lock().await;
        let row = self.add_generated(ws, &slot, &service, trace_id).await?;
        slot.state.lock().expect("lock").rotation_retry_at = None;
        tracing::info!(workspace = %ws, key_id = row.id, alias = %row.key_alias, "data key rotated");
        Ok(row)
    }

    /// The data-key rows of `ws`, oldest first (no key service involved).
    pub async fn rows(&self, ws: &WorkspaceRef) -> Result<Vec<DataKeyRow>, KeyRingError> {
        let slot = self.slot(ws);
        if let Some(rows) = slot.state.lock().expect("lock").rows.clone() {
            return Ok(rows);
        }
        let _flight = slot.flight.lock().await;
        if let Some(rows) = slot.state.lock().expect("lock").rows.clone() {
            return Ok(rows);
        }
        let rows = self.store.data_keys(ws.clone()).await?;
        slot.state.lock().expect("lock").rows = Some(rows.clone());
        Ok(rows)
    }

    fn remember(&self, slot: &Slot, id: u32, plain: &[u8; 32], lifetime: Duration) {
        let now = self.clock.now();
        slot.state.lock().expect("lock").keys.insert(
            id,
            Cached {
                key: Arc::new(DataKey::new(id, plain)),
                expires: now + lifetime,
            },
        );
    }
}

/// Whether the configured key (BYOK) is not among the workspace's keys yet.
fn needs_adoption(rows: &[DataKeyRow], configured: Option<&(String, String)>) -> bool {
    configured.is_some_and(|(_, encrypted)| !rows.iter().any(|r| &r.encrypted_key == encrypted))
}

/// Whether the active key is older than the service's rotation period (and no failed try is
/// waiting out its pause).
fn rotation_due(
    rows: &[DataKeyRow],
    service: &dyn KeyService,
    now: DateTime<Utc>,
    retry_at: Option<DateTime<Utc>>,
) -> bool {
    let (Some(period), Some(active)) = (service.rotation_period(), rows.last()) else {
        return false;
    };
    active.created_at + period <= now && retry_at.is_none_or(|t| t <= now)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    impl KeyService for Fake {
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
        ) -> KeyFuture<'a, Zeroizing<[u8; 32]>> {
            Box::pin(async move {
                self.decrypts.fetch_add(1, Ordering::SeqCst);
                let gate = self.gate.lock().unwrap().clone();
                if let Some(gate) = gate {
                    let _permit = gate.acquire().await;
                }
                if let Some(e) = self.fail.lock().unwrap().clone() {
                    return Err(e);
                }
                let mut key = self
                    .local
                    .decrypt(ws, alias, encrypted_key, trace_id)
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
        ) -> KeyFuture<'a, (String, String, Zeroizing<[u8; 32]>)> {
            Box::pin(async move {
                self.generates.fetch_add(1, Ordering::SeqCst);
                if let Some(e) = self.fail.lock().unwrap().clone() {
                    return Err(e);
                }
                self.local.generate(ws, trace_id).await
            })
        }

        fn cache_lifetime(&self) -> Duration {
            self.lifetime
        }

        fn rotation_period(&self) -> Option<Duration> {
            self.period
        }
    }

    fn ring(fake: Arc<Fake>) -> (Arc<KeyRing>, contracts::clock::SimClock, Store) {
        let clock = contracts::clock::SimClock::at("2026-03-02T12:00:00Z");
        let store = Store::in_memory().unwrap();
        let ring = Arc::new(KeyRing::new(store.clone(), clock.shared(), fake));
        (ring, clock, store)
    }

    fn ws() -> WorkspaceRef {
        WorkspaceRef::new("o", "w")
    }

    /// `n` concurrent callers of a workspace's keys, while the key service holds its first
    /// decrypt at a gate: on this one-thread runtime every caller has reached the flight (or
    /// waits behind it) before the gate opens, however loaded the machine is.
    async fn concurrently(
        ring: &Arc<KeyRing>,
        fake: &Fake,
        n: usize,
    ) -> Vec<Result<WorkspaceKeys, KeyRingError>> {
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
            Err(KeyRingError::Service(KeyServiceError::Unavailable(m))) if m == "down"
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
            Err(KeyRingError::Service(KeyServiceError::Unavailable(m))) => {
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
                Ok(())
            })
            .await
            .unwrap();
        let fresh = KeyRing::new(store.clone(), ring.clock.clone(), fake.clone());
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
        let (alias, encrypted, _) = byok.local.generate(&ws(), None).await.unwrap();
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
            Err(KeyRingError::Service(KeyServiceError::Refused(m))) => {
                assert!(m.contains("'byok' key service"), "{m}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}
