//! What can be seen of a key service's cryptography from outside, over the keys it sealed
//! (every rotation, and `--encrypted-key`): `rotate.unique_nonce` and `rotate.key_hidden`.
//!
//! The envelope after `byok:v1:` is the service's own: its layout is not known. Two tests
//! need none:
//! - **A repeated nonce.** AES-GCM and ChaCha20-Poly1305 encrypt by XOR with a keystream
//!   drawn from the master key and the nonce. Two data keys sealed under one key and one
//!   nonce therefore show, at the place of the ciphertext, the XOR of the two plaintext keys
//!   in the XOR of the two envelopes; 32 bytes equal by chance is out of the question. Where
//!   the envelope reads as the documented layout ([`contracts::envelope`]), equal nonces
//!   are also compared directly.
//! - **A nonce that counts.** A counter starts again with the process, so its nonces repeat
//!   across restarts, which one run cannot see happen; it can see the counter: at least
//!   [`COUNTER_ZEROS`] zero bytes (the high bytes of a counter that started low) before a
//!   byte that grows by a few from one rotation to the next. Random nonces hold eight zero
//!   bytes in a row with a chance of 2^-64.
//! - **A key in sight.** Any 8 bytes of a plaintext key inside its envelope (decoded from
//!   base64 or hex, or as text: the key's base64 or hex), which a service that encodes the
//!   key instead of sealing it shows.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use contracts::envelope::{self, PREFIX};
use serde_json::{Value, json};

use super::defs::{ROTATE_KEY_HIDDEN, ROTATE_UNIQUE_NONCE};
use super::plaintext;
use crate::checks::{Check, Evidence};

/// Zero bytes before a byte that counts, for a nonce to be taken as a counter (a 64-bit
/// version field has seven).
const COUNTER_ZEROS: usize = 8;

/// The shortest run of a key's bytes that counts as the key seen in its envelope.
const SEEN_BYTES: usize = 8;

/// A data key a service sealed, and where it came from (for the report: never the key).
pub(crate) struct Sealed {
    /// `the first rotation`, `--encrypted-key`, ...
    pub(crate) source: String,
    /// `byok:v1:...`.
    pub(crate) encrypted: String,
    /// Base64 of the key.
    pub(crate) plaintext: String,
}

/// The envelope's bytes after its prefix: base64 (either alphabet, padded or not), else hex.
fn envelope_bytes(encrypted: &str) -> Option<Vec<u8>> {
    let body = encrypted.strip_prefix(PREFIX).unwrap_or(encrypted);
    let trimmed = body.trim_end_matches('=');
    [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD]
        .into_iter()
        .find_map(|e| e.decode(trimmed).ok())
        .or_else(|| hex::decode(body).ok())
}

fn xor(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}

/// Where two sealed keys show one nonce: the documented layout's nonces equal, or the XOR of
/// the keys inside the XOR of the envelopes (at the offset where it appears).
fn shared_nonce(a: &Sealed, b: &Sealed) -> Option<Value> {
    if let (Ok(x), Ok(y)) = (envelope::parse(&a.encrypted), envelope::parse(&b.encrypted))
        && x.nonce() == y.nonce()
    {
        return Some(json!({"how": "the same nonce in the documented byok:v1 layout"}));
    }
    let (ea, eb) = (envelope_bytes(&a.encrypted)?, envelope_bytes(&b.encrypted)?);
    let (pa, pb) = (
        plaintext::decode(&a.plaintext)?,
        plaintext::decode(&b.plaintext)?,
    );
    if pa == pb {
        return None;
    }
    let keys = xor(&pa, &pb);
    let envelopes = xor(&ea, &eb);
    let at = envelopes
        .windows(keys.len())
        .position(|w| w == keys.as_slice())?;
    Some(json!({
        "how": "the XOR of the two keys stands in the XOR of the two envelopes: one keystream \
                sealed both",
        "offset": at,
    }))
}

/// Where the envelopes of consecutive rotations (in order) hold a counter: the offset of a
/// byte that grows by 1 to 16 from each to the next after [`COUNTER_ZEROS`] zero bytes in
/// all.
fn counter(rotations: &[&Sealed]) -> Option<usize> {
    let envelopes: Vec<Vec<u8>> = rotations
        .iter()
        .map(|k| envelope_bytes(&k.encrypted))
        .collect::<Option<_>>()?;
    let len = envelopes.first()?.len();
    if envelopes.len() < 3 || envelopes.iter().any(|e| e.len() != len) {
        return None;
    }
    (COUNTER_ZEROS..len).find(|&i| {
        envelopes
            .iter()
            .all(|e| e[i - COUNTER_ZEROS..i].iter().all(|b| *b == 0))
            && envelopes
                .windows(2)
                .all(|w| (1..=16).contains(&(i16::from(w[1][i]) - i16::from(w[0][i]))))
    })
}

/// Where a sealed key can be read in its envelope.
fn key_seen(s: &Sealed) -> Option<Value> {
    let key = plaintext::decode(&s.plaintext)?;
    if let Some(bytes) = envelope_bytes(&s.encrypted)
        && let Some(at) = key
            .windows(SEEN_BYTES)
            .find_map(|w| bytes.windows(SEEN_BYTES).position(|b| b == w))
    {
        return Some(json!({"how": "bytes of the key inside the decoded envelope", "offset": at}));
    }
    let text = s.encrypted.to_ascii_lowercase();
    let forms = [
        STANDARD_NO_PAD.encode(&key).to_ascii_lowercase(),
        URL_SAFE_NO_PAD.encode(&key).to_ascii_lowercase(),
        hex::encode(&key),
    ];
    // 12 characters of base64 are 9 bytes; 16 of hex are 8.
    forms
        .iter()
        .any(|f| {
            let chars: Vec<char> = f.chars().collect();
            chars
                .windows(16)
                .any(|w| text.contains(&w.iter().collect::<String>()))
        })
        .then(|| json!({"how": "the key's base64 or hex in the envelope's text"}))
}

/// `rotate.unique_nonce` and `rotate.key_hidden` over `keys`.
pub(crate) fn checks(keys: &[Sealed]) -> Vec<Check> {
    let usable: Vec<&Sealed> = keys
        .iter()
        .filter(|k| plaintext::decode(&k.plaintext).is_some())
        .collect();
    let mut out = Vec::new();
    if usable.len() < 2 {
        out.push(Check::skip(
            &ROTATE_UNIQUE_NONCE,
            "fewer than two keys with a 32-byte plaintext to compare (see rotate.status)",
        ));
    } else {
        let mut repeated = Vec::new();
        let mut pairs = 0;
        for (i, a) in usable.iter().enumerate() {
            for b in &usable[i + 1..] {
                pairs += 1;
                if let Some(how) = shared_nonce(a, b) {
                    repeated.push(json!({"keys": [a.source, b.source], "found": how}));
                }
            }
        }
        let rotations: Vec<&Sealed> = usable
            .iter()
            .copied()
            .filter(|k| k.source.starts_with("rotation"))
            .collect();
        let counter = counter(&rotations);
        out.push(Check::judge(
            &ROTATE_UNIQUE_NONCE,
            repeated.is_empty() && counter.is_none(),
            Evidence::new()
                .with("keys", usable.len())
                .with("pairs", pairs)
                .with("sharing_a_nonce", repeated)
                .with(
                    "counter_at_offset",
                    counter.map(Value::from).unwrap_or(Value::Null),
                ),
            "every key sealed under its own random nonce (none repeated, none counting)",
        ));
    }
    if usable.is_empty() {
        out.push(Check::skip(
            &ROTATE_KEY_HIDDEN,
            "no key with a 32-byte plaintext (see rotate.status)",
        ));
    } else {
        let seen: Vec<Value> = usable
            .iter()
            .filter_map(|k| key_seen(k).map(|how| json!({"key": k.source, "found": how})))
            .collect();
        out.push(Check::judge(
            &ROTATE_KEY_HIDDEN,
            seen.is_empty(),
            Evidence::new()
                .with("keys", usable.len())
                .with("readable", seen),
            format!("no {SEEN_BYTES} bytes of a key readable in its encrypted key"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Outcome;
    use base64::engine::general_purpose::STANDARD;

    fn sealed(source: &str, key: [u8; 32], nonce: [u8; 12]) -> Sealed {
        Sealed {
            source: source.into(),
            encrypted: envelope::wrap(&[1; 32], "tenant-a", 1, nonce, &key).unwrap(),
            plaintext: STANDARD.encode(key),
        }
    }

    /// A layout nobody documented: prefix, 3 bytes of header, nonce last, keystream XOR.
    fn own_layout(source: &str, key: [u8; 32], stream: [u8; 32]) -> Sealed {
        let mut body = vec![9, 9, 9];
        body.extend(xor(&key, &stream));
        body.extend([7u8; 16]);
        Sealed {
            source: source.into(),
            encrypted: format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(body)),
            plaintext: STANDARD.encode(key),
        }
    }

    fn outcome(checks: &[Check], id: &str) -> Outcome {
        checks.iter().find(|c| c.id == id).unwrap().result
    }

    #[test]
    fn fresh_nonces_pass_and_a_repeated_one_fails_in_any_layout() {
        // Keys and nonces of different bytes (a key of repeated bytes would be found in a
        // nonce of the same bytes).
        let good = [
            sealed("a", [1; 32], [0xa1; 12]),
            sealed("b", [2; 32], [0xa2; 12]),
        ];
        let c = checks(&good);
        assert_eq!(outcome(&c, ROTATE_UNIQUE_NONCE.id), Outcome::Pass);
        assert_eq!(outcome(&c, ROTATE_KEY_HIDDEN.id), Outcome::Pass);
        let same = [sealed("a", [1; 32], [5; 12]), sealed("b", [2; 32], [5; 12])];
        assert_eq!(
            outcome(&checks(&same), ROTATE_UNIQUE_NONCE.id),
            Outcome::Fail
        );
        let stream = [0x3c; 32];
        let own = [
            own_layout("a", [1; 32], stream),
            own_layout("b", [0x77; 32], stream),
        ];
        let c = checks(&own);
        assert_eq!(outcome(&c, ROTATE_UNIQUE_NONCE.id), Outcome::Fail);
        let shown = serde_json::to_string(&c).unwrap();
        assert!(
            !shown.contains(&STANDARD.encode([0x77u8; 32])),
            "no key in the report"
        );
        let fresh = [
            own_layout("a", [1; 32], [0x3c; 32]),
            own_layout("b", [0x77; 32], [0x5e; 32]),
        ];
        assert_eq!(
            outcome(&checks(&fresh), ROTATE_UNIQUE_NONCE.id),
            Outcome::Pass
        );
    }

    #[test]
    fn a_nonce_that_counts_is_found() {
        let with_nonce = |n: u64, key: u8| {
            let mut nonce = [0u8; 12];
            nonce[4..].copy_from_slice(&n.to_be_bytes());
            let mut s = sealed("", [key; 32], nonce);
            s.source = format!("rotation {n}");
            s
        };
        let counting: Vec<Sealed> = (1..=4).map(|n| with_nonce(n, 0x30 + n as u8)).collect();
        assert_eq!(
            outcome(&checks(&counting), ROTATE_UNIQUE_NONCE.id),
            Outcome::Fail
        );
        // The documented layout's version (four bytes, 0 0 0 1) is no counter.
        let random: Vec<Sealed> = (1..=4u8)
            .map(|n| {
                let mut s = sealed("", [0x40 + n; 32], [0x11 * n; 12]);
                s.source = format!("rotation {n}");
                s
            })
            .collect();
        assert_eq!(
            outcome(&checks(&random), ROTATE_UNIQUE_NONCE.id),
            Outcome::Pass
        );
    }

    #[test]
    fn a_key_carried_in_sight_is_found() {
        let key: [u8; 32] = std::array::from_fn(|i| (i * 7 + 3) as u8);
        let in_clear = Sealed {
            source: "a".into(),
            encrypted: format!(
                "{PREFIX}{}",
                STANDARD.encode([b"tenant-a:".as_slice(), &key].concat())
            ),
            plaintext: STANDARD.encode(key),
        };
        let as_text = Sealed {
            source: "b".into(),
            encrypted: format!("{PREFIX}v1.{}", hex::encode(key)),
            plaintext: STANDARD.encode(key),
        };
        for s in [in_clear, as_text] {
            assert_eq!(outcome(&checks(&[s]), ROTATE_KEY_HIDDEN.id), Outcome::Fail);
        }
    }
}
