//! The encrypted keys the `decrypt` checks send altered: a character outside base64, one
//! byte flipped at each place an envelope can fail to authenticate (the first byte, the
//! nonce, the middle, the first and the last byte of the tag), or cut short by 1 to
//! [`MAX_TRUNCATED_BYTES`] bytes (a verifier that compares only as many tag bytes as it was
//! given, or a fixed shorter tag, accepts some of those cuts and refuses others). A service must
//! refuse each: a single flip can hit a part that fails for another reason, while the tag or
//! the nonce goes unchecked.
//!
//! The places are those of the documented `byok:v1:` layout ([`contracts::envelope`]:
//! version 4 bytes, nonce 12, ciphertext, tag 16); a service with its own layout gets the
//! same positions, which still cover its start, middle and end.

use base64::Engine as _;
use base64::engine::GeneralPurpose;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use contracts::envelope::{NONCE_LEN, PREFIX, TAG_LEN, VERSION_LEN};

use super::defs::*;
use super::jwt;
use crate::checks::CheckDef;

/// The encodings an envelope's text may be in, tried in turn; an altered envelope is encoded
/// again in the one it was read in (padded or not, either alphabet).
const ENGINES: [&GeneralPurpose; 4] = [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD];

/// The most bytes [`Alteration::Truncate`] cuts off: half a tag.
pub(crate) const MAX_TRUNCATED_BYTES: usize = TAG_LEN / 2;

/// One way to alter an encrypted key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Alteration {
    /// The first byte flipped (the version's high byte in `byok:v1:`).
    First,
    /// A byte of the nonce flipped (byte 11 in `byok:v1:`).
    Nonce,
    /// The middle byte flipped (in the ciphertext).
    Middle,
    /// The first byte of the tag flipped (16th from the end).
    Tag,
    /// The last byte flipped (the tag's last).
    Last,
    /// The last `n` bytes cut off (1 to [`MAX_TRUNCATED_BYTES`]).
    Truncate(usize),
}

impl Alteration {
    /// Every flip with the check that sends it.
    pub(super) const CHECKS: [(CheckDef, Alteration); 5] = [
        (DECRYPT_FLIPPED_FIRST, Alteration::First),
        (DECRYPT_FLIPPED_NONCE, Alteration::Nonce),
        (DECRYPT_FLIPPED_BYTE, Alteration::Middle),
        (DECRYPT_FLIPPED_TAG, Alteration::Tag),
        (DECRYPT_FLIPPED_LAST, Alteration::Last),
    ];

    /// Every cut `decrypt.truncated_key` sends: 1 to [`MAX_TRUNCATED_BYTES`] bytes.
    pub(super) fn truncations() -> impl Iterator<Item = Alteration> {
        (1..=MAX_TRUNCATED_BYTES).map(Alteration::Truncate)
    }

    /// The byte flipped in a body of `n` bytes (`n` > 0).
    fn position(self, n: usize) -> usize {
        let at = match self {
            Alteration::First => 0,
            Alteration::Nonce if n > VERSION_LEN + NONCE_LEN => VERSION_LEN + NONCE_LEN / 2,
            Alteration::Nonce | Alteration::Middle => n / 2,
            Alteration::Tag => n.saturating_sub(TAG_LEN),
            Alteration::Last | Alteration::Truncate(_) => n - 1,
        };
        at.min(n - 1)
    }

    /// `encrypted_key` altered: its base64 payload decoded, changed and encoded again in the
    /// same alphabet, so only the bytes change; a payload that is not base64 gets the
    /// character at the same place changed (or its end cut).
    pub(super) fn apply(self, encrypted_key: &str) -> String {
        let payload = encrypted_key.strip_prefix(PREFIX).unwrap_or(encrypted_key);
        for engine in ENGINES {
            if let Ok(mut bytes) = engine.decode(payload)
                && !bytes.is_empty()
            {
                self.alter(&mut bytes);
                return format!("{PREFIX}{}", engine.encode(bytes));
            }
        }
        let mut chars: Vec<char> = payload.chars().collect();
        if chars.is_empty() {
            return format!("{PREFIX}A");
        }
        match self {
            Alteration::Truncate(cut) => {
                let keep = chars.len().saturating_sub((cut * 4).div_ceil(3)).max(1);
                chars.truncate(keep);
                format!("{PREFIX}{}", chars.into_iter().collect::<String>())
            }
            _ => {
                let at = self.position(chars.len());
                let original: String = chars.iter().collect();
                let text = jwt::tamper_at(&original, at);
                format!("{PREFIX}{text}")
            }
        }
    }

    fn alter(self, bytes: &mut Vec<u8>) {
        match self {
            Alteration::Truncate(cut) => {
                let keep = bytes.len().saturating_sub(cut).max(1);
                bytes.truncate(keep);
            }
            _ => {
                let at = self.position(bytes.len());
                bytes[at] ^= 0xff;
            }
        }
    }
}

/// The most positions `decrypt.flipped_any_byte` flips (evenly spread over a longer key).
const MAX_FLIPS: usize = 160;

/// `encrypted_key` with each byte of its decoded envelope flipped in turn (each its own key,
/// re-encoded in the same alphabet), named by the position: any byte a verifier leaves
/// unauthenticated (a header, an alias, a key id) decrypts.
pub(crate) fn every_flip(encrypted_key: &str) -> Vec<(String, String)> {
    let payload = encrypted_key.strip_prefix(PREFIX).unwrap_or(encrypted_key);
    for engine in ENGINES {
        if let Ok(bytes) = engine.decode(payload)
            && !bytes.is_empty()
        {
            let n = bytes.len();
            let step = n.div_ceil(MAX_FLIPS).max(1);
            return (0..n)
                .step_by(step)
                .map(|at| {
                    let mut b = bytes.clone();
                    b[at] ^= 0x01;
                    (
                        format!("byte {at} of {n}"),
                        format!("{PREFIX}{}", engine.encode(b)),
                    )
                })
                .collect();
        }
    }
    Vec::new()
}

/// `encrypted_key` with `n` bytes appended to its decoded envelope (re-encoded in the same
/// alphabet), or a character appended when it is not base64.
pub(crate) fn extended(encrypted_key: &str, n: usize) -> String {
    let payload = encrypted_key.strip_prefix(PREFIX).unwrap_or(encrypted_key);
    for engine in ENGINES {
        if let Ok(mut bytes) = engine.decode(payload) {
            bytes.extend(std::iter::repeat_n(0x5a, n));
            return format!("{PREFIX}{}", engine.encode(bytes));
        }
    }
    format!("{encrypted_key}A")
}

/// `encrypted_key` with a `!` in the middle of its base64.
pub(crate) fn with_bad_character(encrypted_key: &str) -> String {
    let payload = encrypted_key.strip_prefix(PREFIX).unwrap_or(encrypted_key);
    let mid = payload.len() / 2;
    let mid = (0..=mid)
        .rev()
        .find(|i| payload.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{PREFIX}{}!{}", &payload[..mid], &payload[mid..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use contracts::envelope;

    fn key() -> String {
        envelope::wrap(&[1; 32], "tenant-a", 1, [2; 12], &[0x42; 32]).unwrap()
    }

    fn body(text: &str) -> Vec<u8> {
        STANDARD.decode(text.strip_prefix(PREFIX).unwrap()).unwrap()
    }

    #[test]
    fn each_alteration_changes_its_own_part_of_the_envelope() {
        let original = body(&key());
        assert_eq!(original.len(), 64);
        let changed = |a: Alteration| -> Vec<usize> {
            let b = body(&a.apply(&key()));
            (0..b.len()).filter(|i| b[*i] != original[*i]).collect()
        };
        assert_eq!(changed(Alteration::First), [0]);
        let nonce = changed(Alteration::Nonce);
        assert!(nonce.len() == 1 && (VERSION_LEN..VERSION_LEN + NONCE_LEN).contains(&nonce[0]));
        assert_eq!(changed(Alteration::Middle), [32]);
        assert_eq!(changed(Alteration::Tag), [64 - TAG_LEN]);
        assert_eq!(changed(Alteration::Last), [63]);
        for n in 1..=MAX_TRUNCATED_BYTES {
            let cut = body(&Alteration::Truncate(n).apply(&key()));
            assert_eq!(cut.len(), 64 - n);
            assert!(original.starts_with(&cut));
        }
        // Each opens no more under the master key.
        for a in Alteration::CHECKS
            .map(|(_, a)| a)
            .into_iter()
            .chain(Alteration::truncations())
        {
            let text = a.apply(&key());
            let opened = envelope::parse(&text)
                .and_then(|env| envelope::unwrap(&[1; 32], "tenant-a", &env).map(|_| ()));
            assert!(opened.is_err(), "{a:?} still opens");
        }
    }

    #[test]
    fn url_safe_and_foreign_payloads_are_altered_in_their_own_form() {
        let url_safe = format!("{PREFIX}{}", URL_SAFE.encode([0xfb_u8; 40]));
        let altered = Alteration::Last.apply(&url_safe);
        assert!(
            URL_SAFE
                .decode(altered.strip_prefix(PREFIX).unwrap())
                .is_ok()
        );
        assert_ne!(altered, url_safe);
        let foreign = format!("{PREFIX}not*base64*at*all");
        for a in Alteration::CHECKS
            .map(|(_, a)| a)
            .into_iter()
            .chain(Alteration::truncations())
        {
            let t = a.apply(&foreign);
            assert!(t.starts_with(PREFIX) && t != foreign, "{a:?}: {t}");
        }
    }

    #[test]
    fn bad_character_lands_in_the_payload() {
        let t = with_bad_character(&key());
        assert!(t.starts_with(PREFIX) && t.contains('!'));
    }
}
