//! Master keys per alias, with versions, and the derivation of keys from the seed.
//!
//! Each alias has master-key versions 1, 2, ...: rotating adds a version, which wraps from
//! then on; older versions keep decrypting unless they are below the alias's minimum
//! version. An alias is `enabled`, `disabled` (refused, can be enabled again) or `revoked`
//! (refused for good).
//!
//! Keys come from configuration (base64) or are derived from the seed, so that `serve`,
//! `wrap` and `unwrap` started with the same seed agree:
//!
//! ```text
//! derive(seed, info)     = HMAC-SHA256(key = u64be(seed), message = info)
//! master key (alias, v)  = derive(seed, "master-key" || 0x00 || alias || 0x00 || u32be(v))
//! JWT signing secret     = derive(seed, "jwt-signing-secret")
//! ```

use std::collections::BTreeMap;
use std::sync::RwLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use contracts::envelope::{self, Envelope, EnvelopeError, EnvelopeKey};
use contracts::error::ByokErrorCode;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::config::{AliasConfig, AliasStatus, MAX_VERSIONS};

/// Length of a data key: only 32-byte keys are wrapped or returned.
pub(crate) const DATA_KEY_LEN: usize = 32;

/// `HMAC-SHA256(key = u64be(seed), message = info)`.
pub fn derive(seed: u64, info: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&seed.to_be_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(info);
    Zeroizing::new(mac.finalize().into_bytes().into())
}

/// The master key of `alias` at `version` derived from `seed`.
pub fn derive_master_key(seed: u64, alias: &str, version: u32) -> Zeroizing<[u8; 32]> {
    let mut info = Vec::with_capacity(16 + alias.len());
    info.extend_from_slice(b"master-key\0");
    info.extend_from_slice(alias.as_bytes());
    info.push(0);
    info.extend_from_slice(&version.to_be_bytes());
    derive(seed, &info)
}

/// A sub-seed for one random stream (`"rng:" || name`), so that streams do not disturb
/// each other.
pub(crate) fn derive_seed(seed: u64, name: &str) -> u64 {
    let d = derive(seed, format!("rng:{name}").as_bytes());
    u64::from_be_bytes(d[..8].try_into().expect("32 bytes"))
}

/// The master keys of an alias at start, versions 1.. in order: configured ones first,
/// the rest derived from the seed.
pub(crate) fn master_keys(seed: u64, alias: &AliasConfig) -> Vec<(Zeroizing<[u8; 32]>, KeySource)> {
    (1..=alias.version_count())
        .map(|v| match alias.keys.get(v as usize - 1) {
            Some(b64) => {
                let mut key = Zeroizing::new([0u8; 32]);
                let bytes = Zeroizing::new(
                    STANDARD
                        .decode(b64.expose())
                        .expect("configuration validated"),
                );
                key.copy_from_slice(&bytes);
                (key, KeySource::Config)
            }
            None => (derive_master_key(seed, &alias.name, v), KeySource::Derived),
        })
        .collect()
}

/// Where a master-key version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// Configured as base64.
    Config,
    /// Derived from the seed.
    Derived,
}

/// One master-key version, without its key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionInfo {
    /// The version number (1 for the first).
    pub(crate) version: u32,
    /// Where its key came from.
    pub(crate) source: KeySource,
    /// When it was added (service clock; start time for configured versions).
    #[serde(with = "contracts::clock::rfc3339")]
    pub(crate) added_at: DateTime<Utc>,
}

/// The state of one alias, without key material: what the admin API shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AliasInfo {
    /// The alias.
    pub(crate) key_alias: String,
    /// Enabled, disabled or revoked.
    pub status: AliasStatus,
    /// The version new keys are wrapped under.
    pub current_version: u32,
    /// The lowest version that still decrypts.
    pub(crate) min_version: u32,
    /// All versions, oldest first.
    pub(crate) versions: Vec<VersionInfo>,
}

/// Why a key operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// No alias of this name.
    #[error("unknown key alias")]
    UnknownAlias,
    /// The alias is disabled.
    #[error("key alias is disabled")]
    Disabled,
    /// The alias is revoked.
    #[error("key alias is revoked")]
    Revoked,
    /// The encrypted key is not a readable `byok:v1:` envelope.
    #[error("{0}")]
    Malformed(EnvelopeError),
    /// The envelope names a version this alias does not have.
    #[error("encrypted key does not decrypt under this key alias")]
    UnknownVersion {
        /// The version in the envelope.
        version: u32,
    },
    /// The envelope's version is below the alias's minimum.
    #[error("key version {version} is below the minimum version {min} of this alias")]
    BelowMinimum {
        /// The version in the envelope.
        version: u32,
        /// The alias's minimum.
        min: u32,
    },
    /// The envelope does not open (tampered, other alias, other key).
    #[error("encrypted key does not decrypt under this key alias")]
    DecryptionFailed,
    /// The envelope opens, but not to a 32-byte data key.
    #[error("decrypted key is not a 32-byte data key")]
    NotADataKey,
    /// A minimum version outside 1..=current.
    #[error("min_version must be 1 to {current} (the current version)")]
    InvalidMinVersion {
        /// The alias's current version.
        current: u32,
    },
    /// No more versions can be added.
    #[error("alias already has the largest number of versions")]
    TooManyVersions,
    /// Revocation is permanent.
    #[error("key alias is revoked; revocation is permanent")]
    RevokedForGood,
}

impl KeyError {
    /// The error code on the wire.
    pub(crate) fn code(&self) -> ByokErrorCode {
        match self {
            KeyError::UnknownAlias => ByokErrorCode::KeyNotFound,
            KeyError::Disabled => ByokErrorCode::KeyDisabled,
            KeyError::Revoked | KeyError::RevokedForGood => ByokErrorCode::KeyRevoked,
            KeyError::Malformed(EnvelopeError::DecryptionFailed) => ByokErrorCode::DecryptionFailed,
            KeyError::Malformed(_)
            | KeyError::InvalidMinVersion { .. }
            | KeyError::TooManyVersions => ByokErrorCode::InvalidRequest,
            KeyError::UnknownVersion { .. }
            | KeyError::BelowMinimum { .. }
            | KeyError::DecryptionFailed
            | KeyError::NotADataKey => ByokErrorCode::DecryptionFailed,
        }
    }
}

impl From<EnvelopeError> for KeyError {
    fn from(e: EnvelopeError) -> Self {
        match e {
            EnvelopeError::DecryptionFailed => KeyError::DecryptionFailed,
            other => KeyError::Malformed(other),
        }
    }
}

struct Version {
    version: u32,
    key: EnvelopeKey,
    source: KeySource,
    added_at: DateTime<Utc>,
}

struct Alias {
    status: AliasStatus,
    min_version: u32,
    /// Versions 1..=n in order: `versions[v - 1]` is version `v`.
    versions: Vec<Version>,
}

impl Alias {
    fn usable(&self) -> Result<(), KeyError> {
        match self.status {
            AliasStatus::Enabled => Ok(()),
            AliasStatus::Disabled => Err(KeyError::Disabled),
            AliasStatus::Revoked => Err(KeyError::Revoked),
        }
    }

    fn current(&self) -> &Version {
        self.versions
            .last()
            .expect("an alias has at least one version")
    }

    fn info(&self, name: &str) -> AliasInfo {
        AliasInfo {
            key_alias: name.to_string(),
            status: self.status,
            current_version: self.current().version,
            min_version: self.min_version,
            versions: self
                .versions
                .iter()
                .map(|v| VersionInfo {
                    version: v.version,
                    source: v.source,
                    added_at: v.added_at,
                })
                .collect(),
        }
    }
}

/// The master keys of every alias. Each version keeps its AES-256-GCM key schedule, so a
/// decrypt costs one AES-GCM open and no key derivation.
pub struct KeyRing {
    seed: u64,
    aliases: RwLock<BTreeMap<String, Alias>>,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing")
            .field("aliases", &self.list().len())
            .finish_non_exhaustive()
    }
}

impl KeyRing {
    /// The key ring of a validated configuration, at time `now`.
    pub(crate) fn new(seed: u64, aliases: &[AliasConfig], now: DateTime<Utc>) -> Self {
        let map = aliases
            .iter()
            .map(|a| {
                let versions = master_keys(seed, a)
                    .into_iter()
                    .zip(1u32..)
                    .map(|((key, source), version)| Version {
                        version,
                        key: EnvelopeKey::new(&key),
                        source,
                        added_at: now,
                    })
                    .collect();
                let alias = Alias {
                    status: a.status,
                    min_version: a.min_version.unwrap_or(1),
                    versions,
                };
                (a.name.clone(), alias)
            })
            .collect();
        KeyRing {
            seed,
            aliases: RwLock::new(map),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Alias>> {
        self.aliases.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Alias>> {
        self.aliases.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens `envelope` under `alias`: checks the alias's status, the version against the
    /// alias's versions and minimum, opens it, and insists on a 32-byte data key.
    pub(crate) fn open(
        &self,
        alias: &str,
        envelope: &Envelope,
    ) -> Result<Zeroizing<Vec<u8>>, KeyError> {
        let aliases = self.read();
        let a = aliases.get(alias).ok_or(KeyError::UnknownAlias)?;
        a.usable()?;
        let version = envelope.version();
        let v = version
            .checked_sub(1)
            .and_then(|i| a.versions.get(i as usize))
            .ok_or(KeyError::UnknownVersion { version })?;
        if version < a.min_version {
            return Err(KeyError::BelowMinimum {
                version,
                min: a.min_version,
            });
        }
        let plaintext = v.key.unwrap(alias, envelope)?;
        if plaintext.len() != DATA_KEY_LEN {
            return Err(KeyError::NotADataKey);
        }
        Ok(plaintext)
    }

    /// Parses and opens a `byok:v1:` text; see [`KeyRing::open`].
    pub fn open_text(&self, alias: &str, text: &str) -> Result<Zeroizing<Vec<u8>>, KeyError> {
        self.open(alias, &envelope::parse(text)?)
    }

    /// Wraps a 32-byte data key under the alias's current version with `nonce`; answers
    /// the text and the version.
    pub(crate) fn wrap(
        &self,
        alias: &str,
        nonce: [u8; 12],
        data_key: &[u8; DATA_KEY_LEN],
    ) -> Result<(String, u32), KeyError> {
        let aliases = self.read();
        let a = aliases.get(alias).ok_or(KeyError::UnknownAlias)?;
        a.usable()?;
        let v = a.current();
        let text = v.key.wrap(alias, v.version, nonce, data_key)?;
        Ok((text, v.version))
    }

    /// Wraps under a given version (for `wrap --key-version` and tests of old versions);
    /// ignores the alias's status and minimum.
    pub fn wrap_at(
        &self,
        alias: &str,
        version: u32,
        nonce: [u8; 12],
        data_key: &[u8; DATA_KEY_LEN],
    ) -> Result<String, KeyError> {
        let aliases = self.read();
        let a = aliases.get(alias).ok_or(KeyError::UnknownAlias)?;
        let v = version
            .checked_sub(1)
            .and_then(|i| a.versions.get(i as usize))
            .ok_or(KeyError::UnknownVersion { version })?;
        Ok(v.key.wrap(alias, version, nonce, data_key)?)
    }

    /// Adds a master-key version (derived from the seed) and makes it current.
    pub fn rotate(&self, alias: &str, now: DateTime<Utc>) -> Result<AliasInfo, KeyError> {
        let mut aliases = self.write();
        let a = aliases.get_mut(alias).ok_or(KeyError::UnknownAlias)?;
        if a.status == AliasStatus::Revoked {
            return Err(KeyError::Revoked);
        }
        let version = a.current().version + 1;
        if version > MAX_VERSIONS {
            return Err(KeyError::TooManyVersions);
        }
        let key = derive_master_key(self.seed, alias, version);
        a.versions.push(Version {
            version,
            key: EnvelopeKey::new(&key),
            source: KeySource::Derived,
            added_at: now,
        });
        Ok(a.info(alias))
    }

    /// Sets the status: `enabled`, `disabled` or `revoked`. A revoked alias stays revoked.
    pub fn set_status(&self, alias: &str, status: AliasStatus) -> Result<AliasInfo, KeyError> {
        let mut aliases = self.write();
        let a = aliases.get_mut(alias).ok_or(KeyError::UnknownAlias)?;
        if a.status == AliasStatus::Revoked && status != AliasStatus::Revoked {
            return Err(KeyError::RevokedForGood);
        }
        a.status = status;
        Ok(a.info(alias))
    }

    /// Sets the lowest version that still decrypts (1 to the current version).
    pub fn set_min_version(&self, alias: &str, min: u32) -> Result<AliasInfo, KeyError> {
        let mut aliases = self.write();
        let a = aliases.get_mut(alias).ok_or(KeyError::UnknownAlias)?;
        let current = a.current().version;
        if min == 0 || min > current {
            return Err(KeyError::InvalidMinVersion { current });
        }
        a.min_version = min;
        Ok(a.info(alias))
    }

    /// The state of one alias.
    pub fn info(&self, alias: &str) -> Result<AliasInfo, KeyError> {
        self.read()
            .get(alias)
            .map(|a| a.info(alias))
            .ok_or(KeyError::UnknownAlias)
    }

    /// The state of every alias, by name.
    pub(crate) fn list(&self) -> Vec<AliasInfo> {
        self.read().iter().map(|(n, a)| a.info(n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::KmsConfig;

    fn t0() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn ring() -> KeyRing {
        let c = KmsConfig::new("p")
            .with_alias("a", 2)
            .with_alias_keys("b", &[[0x11; 32]]);
        KeyRing::new(7, &c.aliases, t0())
    }

    #[test]
    fn derivation_is_stable_and_separated() {
        // Pinned (computed independently with Python's hmac module) so that a change of
        // derivation, which would break every key made with a seed, cannot pass unnoticed.
        assert_eq!(
            hex(&derive_master_key(42, "tenant-a", 1)[..]),
            "e46d877fa3f4190c025a45d93f88349a78c7750fd8e91dd2e478bfbdc2378007"
        );
        assert_eq!(
            hex(&derive(42, b"jwt-signing-secret")[..]),
            "55e9a429d79c8d95a44e275661155767eeb711f8c0028725b01b32a74a0a0c08"
        );
        assert_ne!(
            derive_master_key(42, "tenant-a", 1),
            derive_master_key(42, "tenant-a", 2)
        );
        assert_ne!(
            derive_master_key(42, "tenant-a", 1),
            derive_master_key(43, "tenant-a", 1)
        );
        assert_ne!(derive_seed(1, "faults"), derive_seed(1, "ids"));
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn configured_keys_are_used_and_later_versions_derived() {
        let mut a = KmsConfig::new("p")
            .with_alias_keys("b", &[[0x11; 32]])
            .aliases;
        a[0].versions = Some(2);
        let keys = master_keys(5, &a[0]);
        assert_eq!(*keys[0].0, [0x11; 32]);
        assert_eq!(keys[0].1, KeySource::Config);
        assert_eq!(keys[1].0, derive_master_key(5, "b", 2));
        assert_eq!(keys[1].1, KeySource::Derived);
    }

    #[test]
    fn wrap_open_rotate_min_version() {
        let r = ring();
        let dk = [9u8; 32];
        let (v2_text, v) = r.wrap("a", [1; 12], &dk).unwrap();
        assert_eq!(v, 2);
        let v1_text = r.wrap_at("a", 1, [2; 12], &dk).unwrap();
        assert_eq!(&r.open_text("a", &v1_text).unwrap()[..], &dk);

        let info = r.rotate("a", t0()).unwrap();
        assert_eq!(info.current_version, 3);
        assert_eq!(info.versions[2].source, KeySource::Derived);
        let (v3_text, v) = r.wrap("a", [3; 12], &dk).unwrap();
        assert_eq!(v, 3);
        for t in [&v1_text, &v2_text, &v3_text] {
            assert_eq!(
                &r.open_text("a", t).unwrap()[..],
                &dk,
                "old versions decrypt"
            );
        }

        r.set_min_version("a", 2).unwrap();
        assert_eq!(
            r.open_text("a", &v1_text),
            Err(KeyError::BelowMinimum { version: 1, min: 2 })
        );
        assert!(r.open_text("a", &v2_text).is_ok());
        assert_eq!(
            r.set_min_version("a", 4),
            Err(KeyError::InvalidMinVersion { current: 3 })
        );
        assert_eq!(
            r.set_min_version("a", 0),
            Err(KeyError::InvalidMinVersion { current: 3 })
        );
    }

    #[test]
    fn alias_swap_and_unknown_version() {
        let r = ring();
        let (text, _) = r.wrap("a", [1; 12], &[9; 32]).unwrap();
        assert_eq!(
            r.open_text("b", &text),
            Err(KeyError::UnknownVersion { version: 2 })
        );
        let (text_b, _) = r.wrap("b", [1; 12], &[9; 32]).unwrap();
        assert_eq!(r.open_text("a", &text_b), Err(KeyError::DecryptionFailed));
        assert_eq!(r.open_text("zz", &text_b), Err(KeyError::UnknownAlias));
    }

    #[test]
    fn non_32_byte_plaintexts_are_refused() {
        let r = ring();
        let text = envelope::wrap(&[0x11; 32], "b", 1, [0; 12], &[1; 16]).unwrap();
        assert_eq!(r.open_text("b", &text), Err(KeyError::NotADataKey));
        let text = envelope::wrap(&[0x11; 32], "b", 1, [0; 12], &[1; 32]).unwrap();
        assert!(r.open_text("b", &text).is_ok());
    }

    #[test]
    fn status_changes() {
        let r = ring();
        let (text, _) = r.wrap("a", [1; 12], &[9; 32]).unwrap();
        r.set_status("a", AliasStatus::Disabled).unwrap();
        assert_eq!(r.open_text("a", &text), Err(KeyError::Disabled));
        assert_eq!(r.wrap("a", [1; 12], &[9; 32]), Err(KeyError::Disabled));
        r.set_status("a", AliasStatus::Enabled).unwrap();
        assert!(r.open_text("a", &text).is_ok());
        r.set_status("a", AliasStatus::Revoked).unwrap();
        assert_eq!(r.open_text("a", &text), Err(KeyError::Revoked));
        assert_eq!(
            r.set_status("a", AliasStatus::Enabled),
            Err(KeyError::RevokedForGood)
        );
        assert_eq!(r.rotate("a", t0()), Err(KeyError::Revoked));
        assert_eq!(r.info("a").unwrap().status, AliasStatus::Revoked);
    }

    #[test]
    fn codes() {
        assert_eq!(KeyError::UnknownAlias.code(), ByokErrorCode::KeyNotFound);
        assert_eq!(KeyError::Disabled.code(), ByokErrorCode::KeyDisabled);
        assert_eq!(KeyError::Revoked.code(), ByokErrorCode::KeyRevoked);
        assert_eq!(
            KeyError::Malformed(EnvelopeError::BadBase64).code(),
            ByokErrorCode::InvalidRequest
        );
        assert_eq!(
            KeyError::BelowMinimum { version: 1, min: 2 }.code(),
            ByokErrorCode::DecryptionFailed
        );
        assert_eq!(
            KeyError::NotADataKey.code(),
            ByokErrorCode::DecryptionFailed
        );
    }
}
