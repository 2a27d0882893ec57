//! [`KeyService`]: the state of one simulated key service (keys, credentials, faults, audit
//! log, clock), shared by the HTTP handlers and by in-process tests.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use contracts::clock::{SharedClock, SimClock};
use contracts::error::ByokErrorCode;
use contracts::ids::IdGen;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::audit::AuditLog;
use crate::auth::Authenticator;
use crate::config::{ConfigError, KmsConfig};
use crate::error::KmsError;
use crate::faults::{FaultEngine, FaultInfo, FaultSpec};
use crate::keys::{self, DATA_KEY_LEN, KeyError, KeyRing};
use crate::mutants::Mutants;

/// What [`KeyService::reset`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ResetSummary {
    /// Faults removed.
    pub(crate) faults_removed: usize,
    /// Audit entries removed.
    pub(crate) audit_removed: usize,
}

/// A data key freshly wrapped by [`KeyService::new_data_key`].
pub struct WrappedKey {
    /// The alias that wraps it.
    pub(crate) key_alias: String,
    /// The master-key version that wrapped it.
    pub(crate) key_version: u32,
    /// `byok:v1:...`.
    pub encrypted_key: String,
    /// The data key itself, wiped on drop.
    pub(crate) plaintext: Zeroizing<[u8; DATA_KEY_LEN]>,
}

impl std::fmt::Debug for WrappedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WrappedKey")
            .field("key_alias", &self.key_alias)
            .field("key_version", &self.key_version)
            .field("encrypted_key", &self.encrypted_key)
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: KmsConfig,
    seed: u64,
    clock: SharedClock,
    sim_clock: Option<SimClock>,
    keys: KeyRing,
    auth: Authenticator,
    faults: FaultEngine,
    audit: AuditLog,
    mutants: Mutants,
    ids: IdGen,
    admin_digest: Option<[u8; 32]>,
    release: tokio::sync::watch::Sender<u64>,
}

/// One simulated key service. Cloning gives another handle on the same state.
///
/// Build it from a [`KmsConfig`] and a clock, hand it to [`crate::serve`] (or
/// [`crate::routes`]), and keep a clone to change keys and faults and to read the audit log
/// while it runs.
#[derive(Clone)]
pub struct KeyService {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for KeyService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyService")
            .field("partner", &self.inner.config.partner)
            .field("seed", &self.inner.seed)
            .field("keys", &self.inner.keys)
            .field("faults", &self.inner.faults)
            .field("audit", &self.inner.audit)
            .field("mutants", &self.inner.mutants)
            .finish_non_exhaustive()
    }
}

impl KeyService {
    /// A service for `config` on `clock`. The configuration is validated; without a seed
    /// one is drawn from the operating system (read it back with [`KeyService::seed`]).
    pub fn new(config: KmsConfig, clock: SharedClock) -> Result<Self, ConfigError> {
        Self::build(config, clock, None)
    }

    /// A service on a simulated clock, which the admin API can then advance
    /// (`POST /_admin/clock/advance`).
    pub fn new_simulated(config: KmsConfig, clock: SimClock) -> Result<Self, ConfigError> {
        Self::build(config, clock.shared(), Some(clock))
    }

    fn build(
        config: KmsConfig,
        clock: SharedClock,
        sim_clock: Option<SimClock>,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let seed = config.seed.unwrap_or_else(|| rand::rngs::OsRng.next_u64());
        let signing_secret = match &config.token.signing_secret {
            Some(s) => Zeroizing::new(STANDARD.decode(s.expose()).expect("validated")),
            None => Zeroizing::new(keys::derive(seed, b"jwt-signing-secret").to_vec()),
        };
        let now = clock.now();
        let keys = KeyRing::new(seed, &config.aliases, now);
        let auth = Authenticator::new(&config, &signing_secret);
        let faults = FaultEngine::new(keys::derive_seed(seed, "faults"));
        let audit = AuditLog::new(config.audit_capacity);
        let mutants = Mutants::new(&config.mutants);
        let ids = IdGen::seeded(keys::derive_seed(seed, "ids"));
        let admin_digest = config
            .admin_token
            .as_ref()
            .map(|t| Sha256::digest(t.expose().as_bytes()).into());
        let (release, _) = tokio::sync::watch::channel(0);
        Ok(KeyService {
            inner: Arc::new(Inner {
                config,
                seed,
                clock,
                sim_clock,
                keys,
                auth,
                faults,
                audit,
                mutants,
                ids,
                admin_digest,
                release,
            }),
        })
    }

    /// The configuration it runs with.
    pub(crate) fn config(&self) -> &KmsConfig {
        &self.inner.config
    }

    /// The `{partner}` path segment.
    pub fn partner(&self) -> &str {
        &self.inner.config.partner
    }

    /// The seed of every random choice.
    pub fn seed(&self) -> u64 {
        self.inner.seed
    }

    /// The service clock.
    pub(crate) fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// The time on the service clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.inner.clock.now()
    }

    /// The simulated clock, when the service was built with [`KeyService::new_simulated`].
    pub(crate) fn sim_clock(&self) -> Option<&SimClock> {
        self.inner.sim_clock.as_ref()
    }

    /// Master keys: rotate, disable, enable, revoke, set the minimum version, list.
    pub fn keys(&self) -> &KeyRing {
        &self.inner.keys
    }

    /// Faults: add, remove, clear, list.
    pub fn faults(&self) -> &FaultEngine {
        &self.inner.faults
    }

    /// Adds a fault at the current service time.
    pub fn add_fault(&self, spec: FaultSpec) -> Result<FaultInfo, KmsError> {
        self.inner.faults.add(spec, self.now())
    }

    /// The audit log.
    pub fn audit(&self) -> &AuditLog {
        &self.inner.audit
    }

    /// The mutants: switches that make the service break one rule of the contract each.
    pub fn mutants(&self) -> &Mutants {
        &self.inner.mutants
    }

    /// Credentials and tokens.
    pub fn authenticator(&self) -> &Authenticator {
        &self.inner.auth
    }

    /// The seeded generator of token ids, nonces, data keys and request ids.
    pub(crate) fn ids(&self) -> &IdGen {
        &self.inner.ids
    }

    /// Refuses every access token minted so far; answers the new token epoch.
    pub fn expire_all_tokens(&self) -> u64 {
        self.inner.auth.expire_all()
    }

    /// Mints an access token for a configured client, as `/auth` would.
    pub fn issue_token(&self, client_id: &str) -> Result<String, KmsError> {
        if !self.inner.config.clients.iter().any(|c| c.id == client_id) {
            return Err(KmsError::new(ByokErrorCode::Unauthorized, "unknown client"));
        }
        Ok(self
            .inner
            .auth
            .issue(client_id, self.now(), &self.inner.ids)
            .0)
    }

    /// Removes every fault and audit entry and lets hanging requests go.
    pub(crate) fn reset(&self) -> ResetSummary {
        let summary = ResetSummary {
            faults_removed: self.inner.faults.clear(),
            audit_removed: self.inner.audit.clear(),
        };
        self.release_hangs();
        summary
    }

    /// Lets every request held by a `hang` fault go (they answer 503 if still connected).
    pub fn release_hangs(&self) {
        self.inner.release.send_modify(|g| *g += 1);
    }

    /// A ticket for [`KeyService::hang`], taken before a request's faults are decided, so
    /// that a release that comes after a hang fault fired always lets that request go.
    pub(crate) fn hang_ticket(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.release.subscribe()
    }

    /// Waits until [`KeyService::release_hangs`] is called after `ticket` was taken, or
    /// `max_hang_secs` of wall time.
    pub(crate) async fn hang(&self, mut rx: tokio::sync::watch::Receiver<u64>) {
        let max = Duration::from_secs(self.inner.config.max_hang_secs);
        tokio::select! {
            _ = rx.changed() => {}
            _ = tokio::time::sleep(max) => {}
        }
    }

    /// A fresh random data key (from the seeded generator) wrapped under the alias's
    /// current master-key version: what `/rotate-key` answers.
    pub fn new_data_key(&self, alias: &str) -> Result<WrappedKey, KeyError> {
        let plaintext = Zeroizing::new(self.inner.ids.bytes::<DATA_KEY_LEN>());
        let (encrypted_key, key_version) = self.wrap_data_key(alias, &plaintext)?;
        Ok(WrappedKey {
            key_alias: alias.to_string(),
            key_version,
            encrypted_key,
            plaintext,
        })
    }

    /// [`crate::Mutant::NonceFromKey`]: a new data key sealed with its own first 12 bytes as
    /// the nonce (which shows them in the envelope).
    pub(crate) fn new_data_key_sealed_by_itself(
        &self,
        alias: &str,
    ) -> Result<WrappedKey, KeyError> {
        let plaintext = Zeroizing::new(self.inner.ids.bytes::<DATA_KEY_LEN>());
        let nonce: [u8; 12] = plaintext[..12].try_into().expect("12 of 32 bytes");
        let (encrypted_key, key_version) = self.inner.keys.wrap(alias, nonce, &plaintext)?;
        Ok(WrappedKey {
            key_alias: alias.to_string(),
            key_version,
            encrypted_key,
            plaintext,
        })
    }

    /// Wraps a given 32-byte data key under the alias's current version (fresh nonce).
    pub fn wrap_data_key(
        &self,
        alias: &str,
        data_key: &[u8; DATA_KEY_LEN],
    ) -> Result<(String, u32), KeyError> {
        self.inner
            .keys
            .wrap(alias, self.inner.ids.bytes::<12>(), data_key)
    }

    /// Checks the admin API's bearer token, in constant time.
    pub(crate) fn check_admin(&self, authorization: Option<&str>) -> Result<(), KmsError> {
        let Some(expected) = &self.inner.admin_digest else {
            return Err(KmsError::new(
                ByokErrorCode::Unauthorized,
                "admin API disabled: no admin token configured",
            ));
        };
        let presented = authorization
            .and_then(|v| v.split_once(' '))
            .filter(|(s, _)| s.eq_ignore_ascii_case("Bearer"))
            .map(|(_, t)| t.trim())
            .ok_or_else(|| {
                KmsError::new(
                    ByokErrorCode::Unauthorized,
                    "admin API needs Bearer <admin token>",
                )
            })?;
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        if bool::from(digest.ct_eq(expected)) {
            Ok(())
        } else {
            Err(KmsError::new(
                ByokErrorCode::Unauthorized,
                "invalid admin token",
            ))
        }
    }
}
