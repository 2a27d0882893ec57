//! Data keys as the endpoints carry them: base64 of 32 bytes. Reports never show a key, only
//! its length and a short fingerprint, so two keys can be told apart without either leaking.

use base64::Engine as _;
use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The length of a data key.
pub(crate) const DATA_KEY_LEN: usize = 32;

/// Standard alphabet, padding optional (the platform reads keys this way too).
const LENIENT_PADDING: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The bytes of a base64 data key of exactly 32 bytes.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    LENIENT_PADDING
        .decode(text)
        .ok()
        .filter(|b| b.len() == DATA_KEY_LEN)
}

/// The bytes of a base64 key of any length: a key the user gives is taken as it is, and its
/// length judged by the checks (`decrypt.plaintext`), not refused as a setting.
pub(crate) fn decode_any(text: &str) -> Option<Vec<u8>> {
    LENIENT_PADDING.decode(text).ok().filter(|b| !b.is_empty())
}

/// What a report may say about a key text: its decoded length and the first 8 hex digits of
/// its SHA-256 (`{"bytes": 32, "sha256": "1a2b3c4d"}`), or that it is not base64.
pub(crate) fn describe(text: &str) -> Value {
    match LENIENT_PADDING.decode(text) {
        Ok(bytes) => json!({
            "bytes": bytes.len(),
            "sha256": hex::encode(&Sha256::digest(&bytes)[..4]),
        }),
        Err(_) => json!({"base64": false, "characters": text.chars().count()}),
    }
}

/// Whether two key texts hold the same bytes (padding aside).
pub(crate) fn same_key(a: &str, b: &str) -> bool {
    match (LENIENT_PADDING.decode(a), LENIENT_PADDING.decode(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_32_bytes_with_or_without_padding() {
        let padded = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        assert!(decode(&padded).is_some());
        assert!(decode(padded.trim_end_matches('=')).is_some());
        assert!(decode(&base64::engine::general_purpose::STANDARD.encode([7u8; 16])).is_none());
        assert!(decode("not base64!").is_none());
        assert!(same_key(&padded, padded.trim_end_matches('=')));
        let d = describe(&padded);
        assert_eq!(d["bytes"], 32);
        assert_eq!(d["sha256"].as_str().unwrap().len(), 8);
        assert!(!d.to_string().contains(&padded));
    }
}
