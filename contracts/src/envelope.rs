//! The `byok:v1:` envelope: a data key encrypted under a customer master key.
//!
//! The platform treats `encrypted_key` as opaque text beyond its `byok:v1:` prefix; only the
//! key service reads inside it. This module is the layout the simulated key service
//! (`customer-kms-sim`) uses, documented so that a third party can produce and read the same
//! text.
//!
//! # Layout
//!
//! ```text
//! encrypted_key = "byok:v1:" || base64(body)
//! body          = version || nonce || ciphertext || tag
//!
//! version    4 bytes   master-key version, unsigned 32-bit big-endian (1 for the first key)
//! nonce     12 bytes   AES-GCM nonce (96 bits), fresh and random for every wrap
//! ciphertext n bytes   AES-256-GCM encryption of the data key (n = length of the data key)
//! tag       16 bytes   AES-GCM authentication tag
//! ```
//!
//! - `base64` is the standard alphabet (`A-Z a-z 0-9 + /`) **with** `=` padding (RFC 4648
//!   section 4), no line breaks, no whitespace. Non-canonical encodings are refused.
//! - The cipher is AES-256-GCM (NIST SP 800-38D) with a 256-bit master key, a 96-bit nonce
//!   and a 128-bit tag.
//! - The associated data (authenticated, not transmitted) binds the format, the key alias and
//!   the version:
//!
//!   ```text
//!   aad = "byok:v1:" || u16be(len(alias)) || alias || u32be(version)
//!   ```
//!
//!   where `alias` is the UTF-8 bytes of the `key_alias` and `len(alias)` its length in bytes
//!   (at most 65 535). An envelope made under alias `A` therefore fails to open under alias
//!   `B`, and rewriting the version field makes the tag check fail.
//! - The shortest valid body is 4 + 12 + 16 = 32 bytes (an empty plaintext); data keys of the
//!   interface are 32 bytes, giving a 64-byte body and 88 base64 characters after the prefix.
//!
//! A reader takes these steps, in order, and each failure has its own [`EnvelopeError`]:
//! check the `byok:` prefix ([`EnvelopeError::MissingPrefix`]) and the `v1:` version label
//! ([`EnvelopeError::UnsupportedVersion`]); decode base64 ([`EnvelopeError::BadBase64`]);
//! check the length ([`EnvelopeError::Truncated`]); pick the master key by `version` (the key
//! service's business: [`parse`] gives the version without decrypting); open with AES-GCM
//! ([`EnvelopeError::DecryptionFailed`], which by design does not say whether the tag, the
//! nonce, the ciphertext, the alias or the version was wrong).
//!
//! # Worked example
//!
//! Master key: the 32 bytes `00 01 02 .. 1f`; alias `tenant-a`; version 1; nonce: the 12
//! bytes `a0 a1 .. ab`; plaintext (the data key): 32 bytes of `0x42`.
//!
//! ```text
//! aad  = 62796f6b3a76313a 0008 74656e616e742d61 00000001
//!        "byok:v1:"       len  "tenant-a"       version 1
//! body = 00000001                                                          version
//!        a0a1a2a3a4a5a6a7a8a9aaab                                          nonce
//!        a45a3e6f078940fd2027c5914538829c32ee1b52d0f5002ede4c64c43de93743  ciphertext
//!        dc72a3300b64c3b7988a00a8625d8cd6                                  tag
//! text = byok:v1:AAAAAaChoqOkpaanqKmqq6RaPm8HiUD9ICfFkUU4gpwy7htS0PUALt5MZMQ96TdD3HKjMAtkw7eYigCoYl2M1g==
//! ```
//!
//! The same text comes out of any AES-GCM implementation; for example, with Python's
//! `cryptography` package:
//!
//! ```text
//! aad  = b"byok:v1:" + struct.pack(">H", len(alias)) + alias + struct.pack(">I", version)
//! body = struct.pack(">I", version) + nonce + AESGCM(master_key).encrypt(nonce, data_key, aad)
//! text = "byok:v1:" + base64.b64encode(body).decode()
//! ```
//!
//! ```
//! use contracts::envelope::{self, EnvelopeError};
//!
//! let master_key: [u8; 32] = std::array::from_fn(|i| i as u8);
//! let nonce: [u8; 12] = std::array::from_fn(|i| 0xa0 + i as u8);
//! let data_key = [0x42u8; 32];
//!
//! let text = envelope::wrap(&master_key, "tenant-a", 1, nonce, &data_key).unwrap();
//! assert_eq!(
//!     text,
//!     "byok:v1:AAAAAaChoqOkpaanqKmqq6RaPm8HiUD9ICfFkUU4gpwy7htS0PUALt5MZMQ96TdD3HKjMAtkw7eYigCoYl2M1g=="
//! );
//!
//! let env = envelope::parse(&text).unwrap();
//! assert_eq!(env.version(), 1);
//! assert_eq!(env.nonce(), &nonce);
//! assert_eq!(env.ciphertext().len(), 32 + 16);
//!
//! let opened = envelope::unwrap(&master_key, "tenant-a", &env).unwrap();
//! assert_eq!(&opened[..], &data_key[..]);
//! assert_eq!(
//!     envelope::unwrap(&master_key, "tenant-b", &env),
//!     Err(EnvelopeError::DecryptionFailed),
//! );
//! ```

use std::fmt;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use zeroize::Zeroizing;

/// The text every envelope of this format starts with.
pub const PREFIX: &str = "byok:v1:";
/// Length of the version field, in bytes.
pub const VERSION_LEN: usize = 4;
/// Length of the nonce, in bytes.
pub const NONCE_LEN: usize = 12;
/// Length of the AES-GCM tag, in bytes.
pub const TAG_LEN: usize = 16;
/// Length of a master key, in bytes.
pub(crate) const MASTER_KEY_LEN: usize = 32;
/// The shortest decoded body: version, nonce and tag around an empty ciphertext.
pub const MIN_BODY_LEN: usize = VERSION_LEN + NONCE_LEN + TAG_LEN;
/// The longest alias the associated data can carry (its length is a `u16`).
pub(crate) const MAX_ALIAS_LEN: usize = u16::MAX as usize;

/// The family prefix shared by all versions of the format (`byok:v1:`, `byok:v2:`, ...).
const FAMILY: &str = "byok:";

/// Why an envelope could not be made, read or opened.
///
/// Messages describe the failure without echoing key material; they are safe to return to
/// a caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// The text does not start with `byok:`.
    #[error("encrypted key does not start with the byok:v1: prefix")]
    MissingPrefix,
    /// The text is a `byok:` envelope of another version, such as `byok:v2:`.
    #[error("unsupported envelope version byok:{0}: (only byok:v1: is supported)")]
    UnsupportedVersion(String),
    /// The text after the prefix is not standard, padded base64.
    #[error("encrypted key is not valid base64 (standard alphabet, padded) after the prefix")]
    BadBase64,
    /// The decoded body is shorter than version, nonce and tag together.
    #[error("encrypted key is truncated: {len} bytes after decoding, at least {min} needed")]
    Truncated {
        /// Decoded length found.
        len: usize,
        /// Minimum length ([`MIN_BODY_LEN`]).
        min: usize,
    },
    /// The envelope does not open under this master key, alias and version: the tag, nonce,
    /// ciphertext, alias or version is wrong. Deliberately one case.
    #[error("encrypted key does not decrypt under this key alias")]
    DecryptionFailed,
    /// The alias is longer than the associated data can carry ([`MAX_ALIAS_LEN`] bytes).
    #[error("key alias is longer than {MAX_ALIAS_LEN} bytes")]
    AliasTooLong,
    /// The plaintext is too long for AES-GCM.
    #[error("plaintext is too long to encrypt")]
    PlaintextTooLong,
}

/// A parsed, still encrypted envelope: what [`parse`] reads without a key.
#[derive(Clone, PartialEq, Eq)]
pub struct Envelope {
    version: u32,
    nonce: [u8; NONCE_LEN],
    /// Ciphertext followed by the 16-byte tag.
    sealed: Vec<u8>,
}

impl Envelope {
    /// Builds an envelope from its parts; `ciphertext_and_tag` is the ciphertext followed by
    /// the tag. Fails when it is shorter than the tag.
    #[cfg(test)]
    pub(crate) fn from_parts(
        version: u32,
        nonce: [u8; NONCE_LEN],
        ciphertext_and_tag: Vec<u8>,
    ) -> Result<Self, EnvelopeError> {
        if ciphertext_and_tag.len() < TAG_LEN {
            return Err(EnvelopeError::Truncated {
                len: VERSION_LEN + NONCE_LEN + ciphertext_and_tag.len(),
                min: MIN_BODY_LEN,
            });
        }
        Ok(Envelope {
            version,
            nonce,
            sealed: ciphertext_and_tag,
        })
    }

    /// The master-key version that wrapped this key.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The 96-bit nonce.
    pub fn nonce(&self) -> &[u8; NONCE_LEN] {
        &self.nonce
    }

    /// The ciphertext followed by the 16-byte tag.
    pub fn ciphertext(&self) -> &[u8] {
        &self.sealed
    }

    /// The length of the plaintext this envelope opens to.
    pub(crate) fn plaintext_len(&self) -> usize {
        self.sealed.len() - TAG_LEN
    }

    /// The decoded body: version, nonce, ciphertext and tag.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(VERSION_LEN + NONCE_LEN + self.sealed.len());
        out.extend_from_slice(&self.version.to_be_bytes());
        out.extend_from_slice(&self.nonce);
        out.extend_from_slice(&self.sealed);
        out
    }

    /// The envelope as text, `byok:v1:` and base64 of [`Envelope::to_bytes`].
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::with_capacity(PREFIX.len() + (self.sealed.len() + 16) * 4 / 3 + 4);
        out.push_str(PREFIX);
        STANDARD.encode_string(self.to_bytes(), &mut out);
        out
    }
}

impl fmt::Display for Envelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl fmt::Debug for Envelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Envelope")
            .field("version", &self.version)
            .field("plaintext_len", &self.plaintext_len())
            .finish_non_exhaustive()
    }
}

/// A master key ready to wrap and unwrap: the AES-256-GCM key schedule computed once.
///
/// A key service holds one per master-key version instead of re-expanding the key on every
/// request. `Debug` never prints the key.
#[derive(Clone)]
pub struct EnvelopeKey {
    cipher: Aes256Gcm,
}

impl EnvelopeKey {
    /// Prepares `master_key`.
    pub fn new(master_key: &[u8; MASTER_KEY_LEN]) -> Self {
        EnvelopeKey {
            cipher: Aes256Gcm::new(master_key.into()),
        }
    }

    /// Encrypts `plaintext` under this key for `alias` and `version`, with `nonce`, and gives
    /// the `byok:v1:` text. The nonce must never repeat under one master key: draw it at
    /// random for every call.
    pub fn wrap(
        &self,
        alias: &str,
        version: u32,
        nonce: [u8; NONCE_LEN],
        plaintext: &[u8],
    ) -> Result<String, EnvelopeError> {
        let aad = associated_data(alias, version)?;
        let sealed = self
            .cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            .map_err(|_| EnvelopeError::PlaintextTooLong)?;
        Ok(Envelope {
            version,
            nonce,
            sealed,
        }
        .to_text())
    }

    /// Opens `envelope` under this key for `alias`. The plaintext is wiped from memory when
    /// the answer is dropped.
    pub fn unwrap(
        &self,
        alias: &str,
        envelope: &Envelope,
    ) -> Result<Zeroizing<Vec<u8>>, EnvelopeError> {
        let aad = associated_data(alias, envelope.version)?;
        self.cipher
            .decrypt(
                Nonce::from_slice(&envelope.nonce),
                Payload {
                    msg: &envelope.sealed,
                    aad: &aad,
                },
            )
            .map(Zeroizing::new)
            .map_err(|_| EnvelopeError::DecryptionFailed)
    }
}

impl fmt::Debug for EnvelopeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnvelopeKey(..)")
    }
}

/// Encrypts `plaintext` under `master_key` for `alias` and master-key `version`, with
/// `nonce`, and gives the `byok:v1:` text. See [`EnvelopeKey::wrap`].
pub fn wrap(
    master_key: &[u8; MASTER_KEY_LEN],
    alias: &str,
    version: u32,
    nonce: [u8; NONCE_LEN],
    plaintext: &[u8],
) -> Result<String, EnvelopeError> {
    EnvelopeKey::new(master_key).wrap(alias, version, nonce, plaintext)
}

/// Reads a `byok:v1:` text without decrypting it, so that the key service can pick the
/// master-key version before opening it.
pub fn parse(text: &str) -> Result<Envelope, EnvelopeError> {
    let Some(rest) = text.strip_prefix(FAMILY) else {
        return Err(EnvelopeError::MissingPrefix);
    };
    let Some(b64) = rest.strip_prefix("v1:") else {
        return Err(match version_label(rest) {
            Some(label) => EnvelopeError::UnsupportedVersion(label.to_string()),
            None => EnvelopeError::MissingPrefix,
        });
    };
    let body = STANDARD
        .decode(b64.as_bytes())
        .map_err(|_| EnvelopeError::BadBase64)?;
    if body.len() < MIN_BODY_LEN {
        return Err(EnvelopeError::Truncated {
            len: body.len(),
            min: MIN_BODY_LEN,
        });
    }
    let (version, rest) = body.split_at(VERSION_LEN);
    let (nonce, sealed) = rest.split_at(NONCE_LEN);
    Ok(Envelope {
        version: u32::from_be_bytes(version.try_into().expect("split at VERSION_LEN")),
        nonce: nonce.try_into().expect("split at NONCE_LEN"),
        sealed: sealed.to_vec(),
    })
}

/// Opens `envelope` under `master_key` for `alias`. See [`EnvelopeKey::unwrap`].
pub fn unwrap(
    master_key: &[u8; MASTER_KEY_LEN],
    alias: &str,
    envelope: &Envelope,
) -> Result<Zeroizing<Vec<u8>>, EnvelopeError> {
    EnvelopeKey::new(master_key).unwrap(alias, envelope)
}

/// `"byok:v1:" || u16be(len(alias)) || alias || u32be(version)`.
pub(crate) fn associated_data(alias: &str, version: u32) -> Result<Vec<u8>, EnvelopeError> {
    let len = u16::try_from(alias.len()).map_err(|_| EnvelopeError::AliasTooLong)?;
    let mut aad = Vec::with_capacity(PREFIX.len() + 2 + alias.len() + 4);
    aad.extend_from_slice(PREFIX.as_bytes());
    aad.extend_from_slice(&len.to_be_bytes());
    aad.extend_from_slice(alias.as_bytes());
    aad.extend_from_slice(&version.to_be_bytes());
    Ok(aad)
}

/// `v<digits>` when `rest` starts with a version label such as `v2:`.
fn version_label(rest: &str) -> Option<&str> {
    let end = rest.find(':')?;
    let label = &rest[..end];
    let digits = label.strip_prefix('v')?;
    (!digits.is_empty() && digits.len() <= 9 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then_some(label)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7; 32];
    const OTHER_KEY: [u8; 32] = [8; 32];
    const NONCE: [u8; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
    const DATA_KEY: [u8; 32] = [0x42; 32];

    fn wrapped() -> String {
        wrap(&KEY, "tenant-a", 3, NONCE, &DATA_KEY).unwrap()
    }

    /// The decoded body of `text`, for tampering.
    fn body(text: &str) -> Vec<u8> {
        STANDARD.decode(&text[PREFIX.len()..]).unwrap()
    }

    fn text_of(body: &[u8]) -> String {
        format!("{PREFIX}{}", STANDARD.encode(body))
    }

    fn open(text: &str, alias: &str) -> Result<Zeroizing<Vec<u8>>, EnvelopeError> {
        unwrap(&KEY, alias, &parse(text)?)
    }

    #[test]
    fn round_trip() {
        let text = wrapped();
        assert!(text.starts_with(PREFIX));
        assert_eq!(
            text.len(),
            PREFIX.len() + 88,
            "64-byte body, 88 base64 chars"
        );
        let env = parse(&text).unwrap();
        assert_eq!(env.version(), 3);
        assert_eq!(env.nonce(), &NONCE);
        assert_eq!(env.ciphertext().len(), 32 + TAG_LEN);
        assert_eq!(env.plaintext_len(), 32);
        assert_eq!(env.to_text(), text, "parse and to_text are inverse");
        assert_eq!(&open(&text, "tenant-a").unwrap()[..], &DATA_KEY);
    }

    #[test]
    fn ciphertext_is_not_the_plaintext() {
        let b = body(&wrapped());
        assert_ne!(&b[16..48], &DATA_KEY);
    }

    #[test]
    fn prepared_key_matches_free_functions() {
        let k = EnvelopeKey::new(&KEY);
        let text = k.wrap("tenant-a", 3, NONCE, &DATA_KEY).unwrap();
        assert_eq!(text, wrapped());
        assert_eq!(
            &k.unwrap("tenant-a", &parse(&text).unwrap()).unwrap()[..],
            &DATA_KEY
        );
        assert_eq!(format!("{k:?}"), "EnvelopeKey(..)");
    }

    #[test]
    fn empty_plaintext_round_trips() {
        let text = wrap(&KEY, "a", 1, NONCE, &[]).unwrap();
        let env = parse(&text).unwrap();
        assert_eq!(env.ciphertext().len(), TAG_LEN);
        assert_eq!(env.to_bytes().len(), MIN_BODY_LEN);
        assert!(unwrap(&KEY, "a", &env).unwrap().is_empty());
        assert_eq!(
            unwrap(&KEY, "b", &env),
            Err(EnvelopeError::DecryptionFailed)
        );
    }

    #[test]
    fn tampering_any_bit_of_nonce_ciphertext_or_tag_fails() {
        let b = body(&wrapped());
        // Bytes 4..16 are the nonce, 16..48 the ciphertext, 48..64 the tag.
        for (what, range) in [("nonce", 4..16), ("ciphertext", 16..48), ("tag", 48..64)] {
            for i in range {
                for bit in [0x01u8, 0x80] {
                    let mut t = b.clone();
                    t[i] ^= bit;
                    assert_eq!(
                        open(&text_of(&t), "tenant-a"),
                        Err(EnvelopeError::DecryptionFailed),
                        "{what} byte {i} bit {bit:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn appended_or_removed_bytes_fail() {
        let b = body(&wrapped());
        let mut longer = b.clone();
        longer.push(0);
        assert_eq!(
            open(&text_of(&longer), "tenant-a"),
            Err(EnvelopeError::DecryptionFailed)
        );
        assert_eq!(
            open(&text_of(&b[..b.len() - 1]), "tenant-a"),
            Err(EnvelopeError::DecryptionFailed)
        );
    }

    #[test]
    fn alias_swap_fails() {
        let text = wrapped();
        for alias in ["tenant-b", "tenant-", "tenant-aa", "TENANT-A", ""] {
            assert_eq!(
                open(&text, alias),
                Err(EnvelopeError::DecryptionFailed),
                "{alias:?}"
            );
        }
    }

    #[test]
    fn alias_length_is_bound_not_just_the_bytes() {
        // Without the length prefix, alias "ab" + version bytes could collide with a longer
        // alias; the aad differs, so the envelope does not open.
        assert_ne!(
            associated_data("ab", 1).unwrap(),
            associated_data("a", 1).unwrap()
        );
        assert_eq!(
            associated_data("tenant-a", 1).unwrap(),
            b"byok:v1:\x00\x08tenant-a\x00\x00\x00\x01".to_vec()
        );
    }

    #[test]
    fn version_swap_fails() {
        let mut b = body(&wrapped());
        for v in [0u32, 2, 4, u32::MAX] {
            b[..4].copy_from_slice(&v.to_be_bytes());
            let text = text_of(&b);
            assert_eq!(parse(&text).unwrap().version(), v);
            assert_eq!(
                open(&text, "tenant-a"),
                Err(EnvelopeError::DecryptionFailed),
                "v{v}"
            );
        }
    }

    #[test]
    fn wrong_master_key_fails() {
        let env = parse(&wrapped()).unwrap();
        assert_eq!(
            unwrap(&OTHER_KEY, "tenant-a", &env),
            Err(EnvelopeError::DecryptionFailed)
        );
    }

    #[test]
    fn nonces_make_texts_differ() {
        let a = wrap(&KEY, "t", 1, [0; 12], &DATA_KEY).unwrap();
        let b = wrap(&KEY, "t", 1, [1; 12], &DATA_KEY).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn wrong_prefix() {
        let text = wrapped();
        let b64 = &text[PREFIX.len()..];
        for bad in [
            b64.to_string(),
            format!("BYOK:v1:{b64}"),
            format!("byok-v1:{b64}"),
            format!(" byok:v1:{b64}"),
            format!("kms:v1:{b64}"),
            String::new(),
            "byok".into(),
            "byok:".into(),
            format!("byok:x1:{b64}"),
            format!("byok:v:{b64}"),
            format!("byok:V1:{b64}"),
        ] {
            assert_eq!(parse(&bad), Err(EnvelopeError::MissingPrefix), "{bad:?}");
        }
    }

    #[test]
    fn other_versions_are_unsupported() {
        let b64 = &wrapped()[PREFIX.len()..];
        for (label, text) in [
            ("v2", format!("byok:v2:{b64}")),
            ("v0", format!("byok:v0:{b64}")),
            ("v10", format!("byok:v10:{b64}")),
            ("v2", "byok:v2:".to_string()),
        ] {
            let err = parse(&text).unwrap_err();
            assert_eq!(
                err,
                EnvelopeError::UnsupportedVersion(label.into()),
                "{text:?}"
            );
            assert!(err.to_string().contains(&format!("byok:{label}:")));
        }
    }

    #[test]
    fn bad_base64() {
        // A 35-byte body: its base64 has '+', '/' and one '=' of padding, so the alphabet
        // and the padding rules are both exercised.
        let good = text_of(&[0xfb; 35]);
        let b64 = &good[PREFIX.len()..];
        assert!(b64.contains('+') && b64.contains('/') && b64.ends_with('='));
        assert!(parse(&good).is_ok());
        for bad in [
            format!("{b64}!"),
            format!("{b64} "),
            format!("{b64}\n"),
            format!(" {b64}"),
            format!("{}{}", &b64[..10], &b64[11..]), // length not a multiple of 4
            format!("{b64}="),                       // extra padding
            b64.trim_end_matches('=').to_string(),   // missing padding
            b64.replace('+', "-").replace('/', "_"), // URL-safe alphabet
            "@@@@".to_string(),
        ] {
            assert_eq!(
                parse(&format!("{PREFIX}{bad}")),
                Err(EnvelopeError::BadBase64),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn every_length_below_the_minimum_is_truncated() {
        let b = body(&wrapped());
        for len in 0..MIN_BODY_LEN {
            let text = text_of(&b[..len]);
            assert_eq!(
                parse(&text),
                Err(EnvelopeError::Truncated {
                    len,
                    min: MIN_BODY_LEN
                }),
                "length {len}"
            );
        }
        assert!(parse(&text_of(&b[..MIN_BODY_LEN])).is_ok());
        assert_eq!(
            Envelope::from_parts(1, NONCE, vec![0; TAG_LEN - 1]),
            Err(EnvelopeError::Truncated {
                len: MIN_BODY_LEN - 1,
                min: MIN_BODY_LEN
            })
        );
    }

    #[test]
    fn from_parts_round_trips() {
        let env = parse(&wrapped()).unwrap();
        let again =
            Envelope::from_parts(env.version(), *env.nonce(), env.ciphertext().to_vec()).unwrap();
        assert_eq!(again, env);
        assert_eq!(again.to_string(), wrapped());
    }

    #[test]
    fn alias_too_long() {
        let long = "a".repeat(MAX_ALIAS_LEN + 1);
        assert_eq!(
            wrap(&KEY, &long, 1, NONCE, &DATA_KEY),
            Err(EnvelopeError::AliasTooLong)
        );
        let env = parse(&wrapped()).unwrap();
        assert_eq!(unwrap(&KEY, &long, &env), Err(EnvelopeError::AliasTooLong));
        let longest = "a".repeat(MAX_ALIAS_LEN);
        let text = wrap(&KEY, &longest, 1, NONCE, &DATA_KEY).unwrap();
        assert_eq!(&open(&text, &longest).unwrap()[..], &DATA_KEY);
    }

    #[test]
    fn debug_never_prints_key_material() {
        let env = parse(&wrapped()).unwrap();
        let dbg = format!("{env:?}");
        assert_eq!(dbg, "Envelope { version: 3, plaintext_len: 32, .. }");
    }

    #[test]
    fn messages_are_stable() {
        assert_eq!(
            EnvelopeError::MissingPrefix.to_string(),
            "encrypted key does not start with the byok:v1: prefix"
        );
        assert_eq!(
            EnvelopeError::Truncated { len: 3, min: 32 }.to_string(),
            "encrypted key is truncated: 3 bytes after decoding, at least 32 needed"
        );
        assert_eq!(
            EnvelopeError::DecryptionFailed.to_string(),
            "encrypted key does not decrypt under this key alias"
        );
    }
}
