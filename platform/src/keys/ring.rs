//! The data-key ring: hands out each workspace's data keys, single flight per workspace,
//! cached in memory for a bounded lifetime on the injected clock and zeroed when dropped.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use contracts::clock::SharedClock;
use subtle::ConstantTimeEq;

use super::blob::{DataKey, WorkspaceKeys};
use super::service::{DataKeySource, KeyCallReason, KeyServiceError, key_check};
use crate::store::{DataKeyRow, Store, WorkspaceRef};

struct Cached {
    key: Arc<DataKey>,
    expires: DateTime<Utc>,
}

/// Hands out each workspace's data keys: it creates the first on demand, decrypts through the
/// workspace's [`DataKeySource`], caches plaintext keys until their lifetime ends on the
/// injected clock (then drops them, which zeroes them), rotates, and keeps the rows of
/// `data_keys` of each workspace in memory (the store is read once per workspace).
///
/// Single flight: all work that calls a key service (creation, decryption, rotation) runs
/// under one lock per workspace. Concurrent callers on a cold or expired cache wait for the
/// one flight in progress and share its outcome: one decrypt call per key, not one per
/// caller, and when that call fails every caller that waited gets its error at once instead
/// of calling again.
pub struct DataKeyRing {
    store: Store,
    pub(super) clock: SharedClock,
    default_service: Arc<dyn DataKeySource>,
    services: Mutex<HashMap<WorkspaceRef, Arc<dyn DataKeySource>>>,
    slots: Mutex<HashMap<WorkspaceRef, Arc<Slot>>>,
}

impl fmt::Debug for DataKeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataKeyRing")
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
    /// The rows whose key has been in memory since the platform started (or the cache was
    /// last cleared): a key missing from `keys` is then one that expired, else a cold start.
    opened: std::collections::HashSet<u32>,
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
pub enum DataKeyRingError {
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

impl DataKeyRing {
    /// A key ring over `store`, using `default_service` for workspaces without their own.
    pub(crate) fn new(
        store: Store,
        clock: SharedClock,
        default_service: Arc<dyn DataKeySource>,
    ) -> Self {
        DataKeyRing {
            store,
            clock,
            default_service,
            services: Mutex::new(HashMap::new()),
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// Uses `service` for the keys of `ws` from now on.
    pub fn set_service(&self, ws: WorkspaceRef, service: Arc<dyn DataKeySource>) {
        self.services.lock().expect("lock").insert(ws, service);
    }

    /// The service that holds the keys of `ws`.
    pub(crate) fn service(&self, ws: &WorkspaceRef) -> Arc<dyn DataKeySource> {
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
        ws_service: &Arc<dyn DataKeySource>,
        row: &DataKeyRow,
    ) -> Result<Arc<dyn DataKeySource>, KeyServiceError> {
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
            let mut state = slot.state.lock().expect("lock");
            state.keys.clear();
            state.opened.clear();
        }
    }

    /// Drops every plaintext key whose lifetime has ended by now, in every workspace. Keys are
    /// also dropped when their workspace is next used; this catches idle workspaces (the
    /// server calls it every second).
    pub(crate) fn purge_expired(&self) {
        let now = self.clock.now();
        for slot in self.slots.lock().expect("lock").values() {
            slot.state.lock().expect("lock").purge(now);
        }
    }

    /// Calls [`DataKeyRing::purge_expired`] every `every` (wall clock) until dropped or aborted.
    pub(crate) async fn purge_periodically(self: Arc<Self>, every: std::time::Duration) {
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
    ) -> Result<WorkspaceKeys, DataKeyRingError> {
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
        let result = self.run_flight(ws, &slot, &service, trace_id).await;
        flight.error = match &result {
            Err(DataKeyRingError::Service(e)) => Some(e.clone()),
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
        service: &Arc<dyn DataKeySource>,
    ) -> Option<WorkspaceKeys> {
        let now = self.clock.now();
        let mut state = slot.state.lock().expect("lock");
        state.purge(now);
        let rows = state.rows.as_ref()?;
        if rows.is_empty()
            || needs_adoption(rows, service.configured_key(ws).as_ref())
            || rotation_due(rows, service.as_ref(), now, state.rotation_retry_at)
        {
            return None;
        }
        state.assemble()
    }

    /// The work of one flight (under the workspace's flight lock).
    async fn run_flight(
        &self,
        ws: &WorkspaceRef,
        slot: &Slot,
        service: &Arc<dyn DataKeySource>,
        trace_id: Option<&str>,
    ) -> Result<WorkspaceKeys, DataKeyRingError> {
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
            let plain = service
                .decrypt(
                    ws,
                    &alias,
                    &encrypted,
                    trace_id,
                    KeyCallReason::ConfiguredKey,
                )
                .await?;
            self.insert(ws, slot, service.as_ref(), alias, encrypted, &plain)
                .await?;
        } else if rows.is_empty() {
            self.add_generated(ws, slot, service, trace_id, KeyCallReason::ColdStart)
                .await?;
        }
        self.decrypt_missing(ws, slot, service, trace_id).await?;
        let now = self.clock.now();
        let due = {
            let state = slot.state.lock().expect("lock");
            let rows = state.rows.as_deref().unwrap_or_default();
            rotation_due(rows, service.as_ref(), now, state.rotation_retry_at)
        };
        if due {
            match self
                .add_generated(ws, slot, service, trace_id, KeyCallReason::RotationDue)
                .await
            {
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
        let mut state = slot.state.lock().expect("lock");
        state.purge(self.clock.now());
        state.assemble().ok_or_else(|| {
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
        service: &Arc<dyn DataKeySource>,
        trace_id: Option<&str>,
    ) -> Result<(), DataKeyRingError> {
        // Each missing key with why it is missing: it expired, or it was never opened.
        let missing: Vec<(DataKeyRow, KeyCallReason)> = {
            let mut state = slot.state.lock().expect("lock");
            state.purge(self.clock.now());
            let cached: Vec<u32> = state.keys.keys().copied().collect();
            state
                .rows
                .as_deref()
                .unwrap_or_default()
                .iter()
                .filter(|r| !cached.contains(&r.id))
                .map(|r| {
                    let why = if state.opened.contains(&r.id) {
                        KeyCallReason::KeyExpired
                    } else {
                        KeyCallReason::ColdStart
                    };
                    (r.clone(), why)
                })
                .collect()
        };
        let results = futures_util::future::join_all(missing.iter().map(|(row, why)| async move {
            let svc = self.service_for_row(service, row)?;
            let plain = svc
                .decrypt(ws, &row.key_alias, &row.encrypted_key, trace_id, *why)
                .await?;
            Ok::<_, KeyServiceError>((svc.cache_lifetime(), plain))
        }))
        .await;
        let mut first_error = None;
        for ((row, _), result) in missing.iter().zip(results) {
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
                        let mut state = slot.state.lock().expect("lock");
                        if let Some(r) = state
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
        service: &Arc<dyn DataKeySource>,
        trace_id: Option<&str>,
        why: KeyCallReason,
    ) -> Result<DataKeyRow, DataKeyRingError> {
        let (alias, encrypted, plain) = service.generate(ws, trace_id, why).await?;
        let back = service
            .decrypt(
                ws,
                &alias,
                &encrypted,
                trace_id,
                KeyCallReason::RotationCheck,
            )
            .await?;
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
        service: &dyn DataKeySource,
        alias: String,
        encrypted_key: String,
        plain: &[u8; 32],
    ) -> Result<DataKeyRow, DataKeyRingError> {
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

    /// Rotates the data key of `ws`: a new data key from its key service (for BYOK,
    /// `rotate-key`), checked by decrypting it back, becomes the active key; new data is
    /// sealed with it from now on and older data stays readable with the older keys.
    /// Answers the new key's row.
    pub(crate) async fn rotate(
        &self,
        ws: &WorkspaceRef,
        trace_id: Option<&str>,
    ) -> Result<DataKeyRow, DataKeyRingError> {
        // The current keys first: the first key exists (it keys lookups) and older keys open.
        self.workspace(ws, trace_id).await?;
        let slot = self.slot(ws);
        let service = self.service(ws);
        let _flight = slot.flight.lock().await;
        let row = self
            .add_generated(ws, &slot, &service, trace_id, KeyCallReason::RotationAsked)
            .await?;
        slot.state.lock().expect("lock").rotation_retry_at = None;
        tracing::info!(workspace = %ws, key_id = row.id, alias = %row.key_alias, "data key rotated");
        Ok(row)
    }

    /// The data-key rows of `ws`, oldest first (no key service involved).
    pub async fn rows(&self, ws: &WorkspaceRef) -> Result<Vec<DataKeyRow>, DataKeyRingError> {
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
        let mut state = slot.state.lock().expect("lock");
        state.keys.insert(
            id,
            Cached {
                key: Arc::new(DataKey::new(id, plain)),
                expires: now + lifetime,
            },
        );
        state.opened.insert(id);
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
    service: &dyn DataKeySource,
    now: DateTime<Utc>,
    retry_at: Option<DateTime<Utc>>,
) -> bool {
    let (Some(period), Some(active)) = (service.rotation_period(), rows.last()) else {
        return false;
    };
    active.created_at + period <= now && retry_at.is_none_or(|t| t <= now)
}
