//! The switches of one service ([`Mutants`]) and the state a few mutants keep: tokens
//! handed out, keys decrypted or rotated before, the calls in flight.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use contracts::envelope::{NONCE_LEN, TAG_LEN, VERSION_LEN};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::{Mutant, MutantInfo};
use crate::keys::DATA_KEY_LEN;

/// How many successful decrypts may be in flight under [`Mutant::SmallPool`].
pub(crate) const SMALL_POOL_SIZE: usize = 4;
/// How long [`Mutant::SmallPool`] holds a successful decrypt.
pub(crate) const SMALL_POOL_HOLD: std::time::Duration = std::time::Duration::from_millis(50);
/// How long [`Mutant::SlowDecrypt`] holds every decrypt.
pub(crate) const SLOW_DECRYPT: std::time::Duration = std::time::Duration::from_millis(600);
/// Remembered tokens and keys are forgotten beyond this many (bounded memory).
const MAX_REMEMBERED: usize = 100_000;
/// Envelopes remembered for the tampering mutants, at most (the oldest are forgotten).
const MAX_OPENED: usize = 1024;
/// How many bytes a key may be cut short by under [`Mutant::TruncatedTagAccepted`] and
/// still decrypt: half the tag.
pub(crate) const TAMPER_TRUNCATION: usize = TAG_LEN / 2;

/// The mutants that let a tampered key decrypt: each ignores one part of the envelope.
const TAMPER_MUTANTS: [Mutant; 5] = [
    Mutant::FirstByteIgnored,
    Mutant::LastByteIgnored,
    Mutant::NonceIgnored,
    Mutant::TagStartIgnored,
    Mutant::TruncatedTagAccepted,
];

/// An envelope that opened: its alias, its decoded body and the key it held.
struct Opened {
    alias: String,
    body: Vec<u8>,
    key: Zeroizing<Vec<u8>>,
}

#[derive(Default)]
struct State {
    /// Encrypted keys decrypted before ([`Mutant::UnstablePlaintext`]), by SHA-256.
    decrypted: HashSet<[u8; 32]>,
    /// The first rotated key per alias ([`Mutant::RotateSameKey`]).
    rotated: HashMap<String, (String, Zeroizing<[u8; DATA_KEY_LEN]>)>,
    /// Stand-in token -> the JWT it stands for ([`Mutant::OpaqueToken`],
    /// [`Mutant::AlgNoneHeader`]).
    opaque: HashMap<String, String>,
    /// Envelopes that opened, newest last (the tampering mutants).
    opened: Vec<Opened>,
    /// The first token issued to each client ([`Mutant::FirstTokenForever`]).
    first_tokens: HashMap<String, String>,
}

/// Words of [`Mutants::on`]: room for every mutant.
const WORDS: usize = Mutant::ALL.len().div_ceil(64);

/// The switches of one service, and the state a few mutants keep.
pub struct Mutants {
    /// One bit per mutant, 64 to a word ([`Mutant::word`], [`Mutant::bit`]).
    on: [AtomicU64; WORDS],
    in_flight: AtomicUsize,
    state: Mutex<State>,
}

impl std::fmt::Debug for Mutants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mutants")
            .field("on", &self.active())
            .finish_non_exhaustive()
    }
}

impl Mutants {
    /// Switches with `on` switched on.
    pub(crate) fn new(on: &[Mutant]) -> Self {
        let m = Mutants {
            on: std::array::from_fn(|_| AtomicU64::new(0)),
            in_flight: AtomicUsize::new(0),
            state: Mutex::new(State::default()),
        };
        m.replace(on);
        m
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `m` is on.
    pub(crate) fn is_on(&self, m: Mutant) -> bool {
        self.on[m.word()].load(Ordering::Relaxed) & m.bit() != 0
    }

    /// Switches `m` on or off.
    pub(crate) fn set(&self, m: Mutant, on: bool) {
        if on {
            self.on[m.word()].fetch_or(m.bit(), Ordering::SeqCst);
        } else {
            self.on[m.word()].fetch_and(!m.bit(), Ordering::SeqCst);
        }
    }

    /// Exactly `on` are on afterwards; the state of every mutant is forgotten.
    pub(crate) fn replace(&self, on: &[Mutant]) {
        let mut bits = [0u64; WORDS];
        for m in on {
            bits[m.word()] |= m.bit();
        }
        *self.state() = State::default();
        for (word, b) in self.on.iter().zip(bits) {
            word.store(b, Ordering::SeqCst);
        }
    }

    /// Switches every mutant off; answers how many were on.
    pub(crate) fn clear(&self) -> usize {
        let n = self.active().len();
        self.replace(&[]);
        n
    }

    /// The mutants switched on, in documentation order.
    pub fn active(&self) -> Vec<Mutant> {
        Mutant::ALL.into_iter().filter(|m| self.is_on(*m)).collect()
    }

    /// Every mutant with its rule and whether it is on.
    pub(crate) fn list(&self) -> Vec<MutantInfo> {
        Mutant::ALL
            .into_iter()
            .map(|m| MutantInfo {
                name: m.name().into(),
                rule: m.rule().into(),
                on: self.is_on(m),
            })
            .collect()
    }

    /// [`Mutant::UnstablePlaintext`]: whether this encrypted key was decrypted before
    /// (and remembers it).
    pub(crate) fn decrypted_before(&self, encrypted_key: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(encrypted_key.as_bytes()).into();
        let mut s = self.state();
        if s.decrypted.len() >= MAX_REMEMBERED {
            s.decrypted.clear();
        }
        !s.decrypted.insert(digest)
    }

    /// [`Mutant::RotateSameKey`]: the first key rotated for `alias`, or `fresh` remembered
    /// as that key.
    pub(crate) fn first_rotated(
        &self,
        alias: &str,
        fresh: (String, Zeroizing<[u8; DATA_KEY_LEN]>),
    ) -> (String, Zeroizing<[u8; DATA_KEY_LEN]>) {
        self.state()
            .rotated
            .entry(alias.to_string())
            .or_insert(fresh)
            .clone()
    }

    /// [`Mutant::FirstTokenForever`]: the first token issued to `client`, or `fresh` (then
    /// remembered) for its first.
    pub(crate) fn first_token(&self, client: &str, fresh: String) -> String {
        let mut s = self.state();
        if s.first_tokens.len() >= MAX_REMEMBERED {
            s.first_tokens.clear();
        }
        s.first_tokens
            .entry(client.to_string())
            .or_insert(fresh)
            .clone()
    }

    /// [`Mutant::OpaqueToken`]: an opaque token standing for `jwt`.
    pub(crate) fn opaque_for(&self, jwt: String, random: [u8; 16]) -> String {
        let token: String = std::iter::once("opq_".to_string())
            .chain(random.iter().map(|b| format!("{b:02x}")))
            .collect();
        self.stand_in(token, jwt)
    }

    /// Remembers `token` as standing for `jwt`; answers `token`.
    pub(crate) fn stand_in(&self, token: String, jwt: String) -> String {
        let mut s = self.state();
        if s.opaque.len() >= MAX_REMEMBERED {
            s.opaque.clear();
        }
        s.opaque.insert(token.clone(), jwt);
        token
    }

    /// [`Mutant::OpaqueToken`], [`Mutant::AlgNoneHeader`]: the JWT a stand-in token stands
    /// for.
    pub(crate) fn jwt_of(&self, opaque: &str) -> Option<String> {
        self.state().opaque.get(opaque).cloned()
    }

    /// Whether one of the tampering mutants ([`Mutant::FirstByteIgnored`] and the four after
    /// it) is on: then envelopes that open are remembered.
    pub(crate) fn tampering(&self) -> bool {
        TAMPER_MUTANTS.iter().any(|m| self.is_on(*m))
    }

    /// The tampering mutants: remembers that `body` (a decoded envelope) opened under
    /// `alias` to `key`.
    pub(crate) fn remember_opened(&self, alias: &str, body: Vec<u8>, key: &[u8]) {
        let mut s = self.state();
        if s.opened.iter().any(|o| o.alias == alias && o.body == body) {
            return;
        }
        if s.opened.len() >= MAX_OPENED {
            s.opened.remove(0);
        }
        s.opened.push(Opened {
            alias: alias.to_string(),
            body,
            key: Zeroizing::new(key.to_vec()),
        });
    }

    /// The tampering mutants: the key of a remembered envelope of `alias` that `body`
    /// differs from only in the part a mutant that is on ignores (the first byte, the last,
    /// the nonce, the first byte of the tag; or a tag cut short by at most
    /// [`TAMPER_TRUNCATION`] bytes).
    pub(crate) fn opened_like(&self, alias: &str, body: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
        let s = self.state();
        s.opened
            .iter()
            .filter(|o| o.alias == alias)
            .find(|o| self.ignores_difference(&o.body, body))
            .map(|o| o.key.clone())
    }

    fn ignores_difference(&self, original: &[u8], altered: &[u8]) -> bool {
        let n = original.len();
        if altered.len() < n {
            return self.is_on(Mutant::TruncatedTagAccepted)
                && n - altered.len() <= TAMPER_TRUNCATION
                && original.starts_with(altered);
        }
        if altered.len() != n || n < VERSION_LEN + NONCE_LEN + TAG_LEN {
            return false;
        }
        let differ: Vec<usize> = (0..n).filter(|i| original[*i] != altered[*i]).collect();
        let only = |range: std::ops::Range<usize>| differ.iter().all(|i| range.contains(i));
        (self.is_on(Mutant::FirstByteIgnored) && only(0..1))
            || (self.is_on(Mutant::LastByteIgnored) && only(n - 1..n))
            || (self.is_on(Mutant::NonceIgnored) && only(VERSION_LEN..VERSION_LEN + NONCE_LEN))
            || (self.is_on(Mutant::TagStartIgnored) && only(n - TAG_LEN..n - TAG_LEN + 1))
    }

    /// [`Mutant::SmallPool`]: counts a decrypt in flight until the guard drops; the guard
    /// says whether the pool had room for it.
    pub(crate) fn enter_pool(&self) -> PoolGuard<'_> {
        let n = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        PoolGuard {
            count: &self.in_flight,
            admitted: n <= SMALL_POOL_SIZE,
        }
    }
}

/// A decrypt counted in flight by `Mutants::enter_pool`.
pub(crate) struct PoolGuard<'a> {
    count: &'a AtomicUsize,
    admitted: bool,
}

impl PoolGuard<'_> {
    /// Whether the pool had room for this decrypt.
    pub(crate) fn admitted(&self) -> bool {
        self.admitted
    }
}

impl Drop for PoolGuard<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mutant_switches_alone() {
        for m in Mutant::ALL {
            let switches = Mutants::new(&[m]);
            let on: Vec<Mutant> = Mutant::ALL
                .into_iter()
                .filter(|o| switches.is_on(*o))
                .collect();
            assert_eq!(on, vec![m]);
            switches.set(m, false);
            assert!(!switches.is_on(m));
        }
    }

    #[test]
    fn switches() {
        let m = Mutants::new(&[Mutant::SlowDecrypt]);
        assert!(m.is_on(Mutant::SlowDecrypt) && !m.is_on(Mutant::AnyMethod));
        m.set(Mutant::AnyMethod, true);
        assert_eq!(m.active(), [Mutant::AnyMethod, Mutant::SlowDecrypt]);
        m.set(Mutant::SlowDecrypt, false);
        assert_eq!(m.active(), [Mutant::AnyMethod]);
        assert_eq!(m.clear(), 1);
        assert!(m.active().is_empty());
    }

    #[test]
    fn the_pool_counts_and_releases() {
        let m = Mutants::new(&[]);
        let guards: Vec<_> = (0..SMALL_POOL_SIZE).map(|_| m.enter_pool()).collect();
        assert!(guards.iter().all(PoolGuard::admitted));
        assert!(!m.enter_pool().admitted(), "full");
        drop(guards);
        assert!(m.enter_pool().admitted(), "released");
    }

    #[test]
    fn remembered_state() {
        let m = Mutants::new(&[]);
        assert!(!m.decrypted_before("byok:v1:A"));
        assert!(m.decrypted_before("byok:v1:A"));
        let first = m.first_rotated("a", ("e1".into(), Zeroizing::new([1; 32])));
        let second = m.first_rotated("a", ("e2".into(), Zeroizing::new([2; 32])));
        assert_eq!(first.0, "e1");
        assert_eq!(second.0, "e1");
        let t = m.opaque_for("jwt".into(), [7; 16]);
        assert!(t.starts_with("opq_") && !t.contains('.'));
        assert_eq!(m.jwt_of(&t).as_deref(), Some("jwt"));
    }

    #[test]
    fn each_tampering_mutant_ignores_its_own_part_only() {
        let body: Vec<u8> = (0..64).collect();
        let altered = |at: usize| {
            let mut b = body.clone();
            b[at] ^= 0xff;
            b
        };
        let cases: [(Mutant, Vec<u8>); 5] = [
            (Mutant::FirstByteIgnored, altered(0)),
            (Mutant::LastByteIgnored, altered(63)),
            (Mutant::NonceIgnored, altered(VERSION_LEN + 6)),
            (Mutant::TagStartIgnored, altered(64 - TAG_LEN)),
            (
                Mutant::TruncatedTagAccepted,
                body[..64 - TAMPER_TRUNCATION].to_vec(),
            ),
        ];
        for (on, _) in &cases {
            let m = Mutants::new(&[*on]);
            assert!(m.tampering());
            m.remember_opened("a", body.clone(), &[7; 32]);
            for (which, tampered) in &cases {
                let opened = m.opened_like("a", tampered);
                assert_eq!(
                    opened.is_some(),
                    on == which,
                    "{on} on, {which}'s alteration"
                );
                assert!(m.opened_like("b", tampered).is_none(), "another alias");
            }
            assert!(m.opened_like("a", &altered(32)).is_none(), "the middle");
            assert!(m.opened_like("a", &body[..40]).is_none(), "cut too short");
        }
        assert!(!Mutants::new(&[Mutant::AnyMethod]).tampering());
    }
}
