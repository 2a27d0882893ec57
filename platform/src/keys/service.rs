//! Where data keys come from: the [`DataKeySource`] trait, and the platform's own local key
//! service (a master key held by the platform, wrapping per-workspace data keys in the
//! `byok:v1:` envelope). The customer's key service (BYOK) is the other source
//! ([`super::byok`]).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use chrono::Duration;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::store::WorkspaceRef;

pub use contracts::wire::KeyCallReason;

/// A future returned by a [`DataKeySource`].
pub type KeyFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, KeyServiceError>> + Send + 'a>>;

/// Where data keys come from: the platform's own local key, or the customer's key service.
pub trait DataKeySource: Send + Sync + fmt::Debug {
    /// A short name for logs and the `data_keys.provider` column (`local`, `byok`).
    fn provider(&self) -> &'static str;

    /// The encrypted data key to use for a workspace that has none yet, with its alias.
    /// `None` means "generate one" ([`DataKeySource::generate`]).
    fn configured_key(&self, ws: &WorkspaceRef) -> Option<(String, String)>;

    /// Decrypts an encrypted data key (`byok:v1:...`) of `alias` into the 32-byte key;
    /// `reason` says why the key ring needs it (a key service records it with its call).
    fn decrypt<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        alias: &'a str,
        encrypted_key: &'a str,
        trace_id: Option<&'a str>,
        reason: KeyCallReason,
    ) -> KeyFuture<'a, Zeroizing<[u8; 32]>>;

    /// Makes a new data key: its alias, its encrypted form and the plaintext; `reason` as
    /// for [`DataKeySource::decrypt`].
    fn generate<'a>(
        &'a self,
        ws: &'a WorkspaceRef,
        trace_id: Option<&'a str>,
        reason: KeyCallReason,
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

impl DataKeySource for LocalKeyService {
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
        _reason: KeyCallReason,
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
        _reason: KeyCallReason,
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
