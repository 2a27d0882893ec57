//! The keyed lookup hash: HMAC-SHA256 (RFC 2104) under a data key's lookup key, truncated to
//! 16 bytes, with the two key blocks hashed once when the key is loaded.
//!
//! HMAC hashes `key ^ ipad` and `key ^ opad` as the first block of its inner and outer hash;
//! those two states depend only on the key, so they are kept ([`LookupKey`]) and a hash of a
//! phone number (one block with its padding) costs two SHA-256 compressions instead of four
//! and no key schedule. The states are as secret as the key: they are zeroed when dropped, as
//! is each copy taken for a hash.

use sha2::compress256;
use sha2::digest::consts::U64;
use sha2::digest::generic_array::GenericArray;
use zeroize::Zeroizing;

/// SHA-256's initial state (FIPS 180-4, 5.3.3).
const IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// SHA-256's block size; an HMAC key block.
const BLOCK: usize = 64;

/// A lookup key ready to hash: the SHA-256 states after its inner and outer key blocks.
pub(crate) struct LookupKey {
    inner: Zeroizing<[u32; 8]>,
    outer: Zeroizing<[u32; 8]>,
}

impl LookupKey {
    /// Prepares the 32-byte lookup key `key`.
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        let keyed = |pad: u8| {
            let mut block = Zeroizing::new([pad; BLOCK]);
            for (b, k) in block.iter_mut().zip(key) {
                *b ^= k;
            }
            let mut state = Zeroizing::new(IV);
            compress(&mut state, &block[..]);
            state
        };
        LookupKey {
            inner: keyed(0x36),
            outer: keyed(0x5c),
        }
    }

    /// The first 16 bytes of HMAC-SHA256(key, `value`).
    pub(crate) fn hash(&self, value: &[u8]) -> [u8; 16] {
        let mut state = self.inner.clone();
        finish(&mut state, value);
        let mut inner = [0u8; 32];
        for (out, word) in inner.chunks_exact_mut(4).zip(state.iter()) {
            out.copy_from_slice(&word.to_be_bytes());
        }
        let mut state = self.outer.clone();
        finish(&mut state, &inner);
        let mut out = [0u8; 16];
        for (out, word) in out.chunks_exact_mut(4).zip(state.iter()) {
            out.copy_from_slice(&word.to_be_bytes());
        }
        out
    }
}

/// One 64-byte block into `state`.
fn compress(state: &mut [u32; 8], block: &[u8]) {
    compress256(
        state,
        std::slice::from_ref(GenericArray::<u8, U64>::from_slice(block)),
    );
}

/// Hashes `data` into `state`, which has taken one key block, and pads the message
/// (FIPS 180-4, 5.1.1: a 1 bit, zeros, the length in bits over the last 8 bytes).
fn finish(state: &mut [u32; 8], data: &[u8]) {
    let mut whole = data.chunks_exact(BLOCK);
    for block in &mut whole {
        compress(state, block);
    }
    let rest = whole.remainder();
    let mut last = [0u8; 2 * BLOCK];
    last[..rest.len()].copy_from_slice(rest);
    last[rest.len()] = 0x80;
    let end = if rest.len() < BLOCK - 8 {
        BLOCK
    } else {
        2 * BLOCK
    };
    let bits = ((BLOCK + data.len()) as u64) * 8;
    last[end - 8..end].copy_from_slice(&bits.to_be_bytes());
    for block in last[..end].chunks_exact(BLOCK) {
        compress(state, block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmac::{Hmac, Mac};
    use sha2::Sha256;

    fn hmac16(key: &[u8; 32], value: &[u8]) -> [u8; 16] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap();
        mac.update(value);
        mac.finalize().into_bytes()[..16].try_into().unwrap()
    }

    #[test]
    fn the_hash_is_hmac_sha256_for_every_length_around_the_blocks() {
        for key in [[0u8; 32], [0xff; 32], std::array::from_fn(|i| i as u8 * 7)] {
            let lookup = LookupKey::new(&key);
            // Every length up to three blocks: one block, the 55/56 and 63/64 boundaries of
            // the padding, several whole blocks.
            let value: Vec<u8> = (0..200u8).map(|i| i.wrapping_mul(31)).collect();
            for n in 0..=value.len() {
                assert_eq!(
                    lookup.hash(&value[..n]),
                    hmac16(&key, &value[..n]),
                    "{n} bytes"
                );
            }
            assert_eq!(lookup.hash(b"+14155550100"), hmac16(&key, b"+14155550100"));
        }
    }

    #[test]
    fn another_key_gives_another_hash() {
        let a = LookupKey::new(&[1; 32]);
        let b = LookupKey::new(&[2; 32]);
        assert_ne!(a.hash(b"+14155550100"), b.hash(b"+14155550100"));
    }
}
