//! Identifiers that are deterministic under a seed.
//!
//! Scheme (documented in `docs/interface.md`):
//! - resource ids are a prefix and 20 characters of Crockford base32 (100 random bits), for
//!   example `camp-8m2k4q0r7t1v3x5z9b6c`: [`CAMPAIGN`] `camp-`, [`DEPLOYMENT`] `dep-`,
//!   [`COHORT`] `coh-`, [`INTERACTION`] `int-`;
//! - attempt ids are UUIDv7: the 48-bit Unix-millisecond timestamp of the injected clock,
//!   then random bits, so they sort by creation time;
//! - request ids sent to the key service are UUIDv4.
//!
//! Random bits come from ChaCha12 seeded with a `u64`. With the same seed, the same clock and
//! the same order of calls, the same ids come out. Binaries print the seed they use.
//!
//! One seed gives several independent streams ([`stream`]): a program draws its stored ids
//! from one, and can keep that stream's position ([`IdGen::word_pos`]) to carry on from it
//! after a restart ([`IdGen::seeded_at`]), while incidental draws (request ids, secrets) come
//! from others and never move it.

use std::sync::Mutex;

use chrono::{DateTime, Utc};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;
use uuid::Uuid;

/// Prefix of campaign ids.
pub(crate) const CAMPAIGN: &str = "camp-";
/// Prefix of deployment ids.
pub(crate) const DEPLOYMENT: &str = "dep-";
/// Prefix of cohort ids.
pub(crate) const COHORT: &str = "coh-";
/// Prefix of interaction ids (one per answered call).
pub const INTERACTION: &str = "int-";

const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// The independent streams of one seed (ChaCha stream numbers).
pub mod stream {
    /// Ids of stored resources; [`super::IdGen::seeded`] draws from it.
    pub const RESOURCES: u64 = 0;
    /// Ids of outgoing requests (request and trace ids sent to other services).
    pub const REQUESTS: u64 = 1;
    /// Secrets drawn at start-up (a webhook signing secret), a fixed function of the seed.
    pub const SECRETS: u64 = 2;
}

/// A thread-safe, seedable source of ids and random bytes.
#[derive(Debug)]
pub struct IdGen {
    seed: u64,
    rng: Mutex<ChaCha12Rng>,
}

impl IdGen {
    /// A generator whose output is fixed by `seed` (the [`stream::RESOURCES`] stream, from
    /// its start).
    pub fn seeded(seed: u64) -> Self {
        IdGen::seeded_at(seed, stream::RESOURCES, 0)
    }

    /// A generator on `stream` of `seed`, at `word_pos` (a position read earlier with
    /// [`IdGen::word_pos`]): it draws what a generator that had reached that position would.
    pub fn seeded_at(seed: u64, stream: u64, word_pos: u128) -> Self {
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        rng.set_word_pos(word_pos);
        IdGen {
            seed,
            rng: Mutex::new(rng),
        }
    }

    /// How far this generator has drawn, in 32-bit words of its stream.
    pub fn word_pos(&self) -> u128 {
        self.with_rng(|rng| rng.get_word_pos())
    }

    /// Moves this generator to `word_pos` of its stream (back, to undo draws whose position
    /// could not be kept).
    pub fn set_word_pos(&self, word_pos: u128) {
        self.with_rng(|rng| rng.set_word_pos(word_pos));
    }

    /// A generator with a seed drawn from the operating system; read it back with
    /// [`IdGen::seed`] to pin a run.
    pub fn from_entropy() -> Self {
        IdGen::seeded(rand::rngs::OsRng.next_u64())
    }

    /// The seed this generator started from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn with_rng<T>(&self, f: impl FnOnce(&mut ChaCha12Rng) -> T) -> T {
        let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut rng)
    }

    /// `prefix` followed by 20 Crockford base32 characters.
    pub fn prefixed(&self, prefix: &str) -> String {
        let mut out = String::with_capacity(prefix.len() + 20);
        out.push_str(prefix);
        self.with_rng(|rng| {
            for _ in 0..20 {
                out.push(CROCKFORD[rng.gen_range(0..32)] as char);
            }
        });
        out
    }

    /// A new campaign id (`camp-…`).
    pub fn campaign_id(&self) -> String {
        self.prefixed(CAMPAIGN)
    }

    /// A new deployment id (`dep-…`).
    pub fn deployment_id(&self) -> String {
        self.prefixed(DEPLOYMENT)
    }

    /// A new cohort id (`coh-…`).
    pub fn cohort_id(&self) -> String {
        self.prefixed(COHORT)
    }

    /// A UUIDv7 for `now`: sortable by creation time, random in its remaining bits.
    pub fn attempt_id(&self, now: DateTime<Utc>) -> String {
        let ms = u64::try_from(now.timestamp_millis()).unwrap_or(0);
        let rand_bytes: [u8; 10] = self.bytes();
        uuid::Builder::from_unix_timestamp_millis(ms, &rand_bytes)
            .into_uuid()
            .to_string()
    }

    /// A random UUIDv4.
    pub fn uuid_v4(&self) -> Uuid {
        uuid::Builder::from_random_bytes(self.bytes()).into_uuid()
    }

    /// `N` random bytes.
    pub fn bytes<const N: usize>(&self) -> [u8; N] {
        let mut b = [0u8; N];
        self.with_rng(|rng| rng.fill_bytes(&mut b));
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, SimClock};

    #[test]
    fn same_seed_same_ids() {
        let a = IdGen::seeded(7);
        let b = IdGen::seeded(7);
        let clock = SimClock::at("2026-03-01T00:00:00Z");
        for _ in 0..5 {
            assert_eq!(a.campaign_id(), b.campaign_id());
            assert_eq!(a.attempt_id(clock.now()), b.attempt_id(clock.now()));
        }
        assert_ne!(
            IdGen::seeded(8).campaign_id(),
            IdGen::seeded(7).campaign_id()
        );
    }

    #[test]
    fn a_generator_placed_at_a_kept_position_carries_on_exactly() {
        let clock = SimClock::at("2026-03-01T00:00:00Z");
        let straight = IdGen::seeded(42);
        let first: Vec<String> = (0..3).map(|_| straight.campaign_id()).collect();
        let kept = straight.word_pos();
        let later = (straight.cohort_id(), straight.attempt_id(clock.now()));
        // A restart: a new generator of the same seed at the kept position.
        let restarted = IdGen::seeded_at(42, stream::RESOURCES, kept);
        assert_eq!(
            (restarted.cohort_id(), restarted.attempt_id(clock.now())),
            later
        );
        assert!(!first.contains(&later.0));
        // Undoing a draw gives the same id again.
        let pos = restarted.word_pos();
        let a = restarted.deployment_id();
        restarted.set_word_pos(pos);
        assert_eq!(restarted.deployment_id(), a);
        // Streams of one seed are independent.
        assert_ne!(
            IdGen::seeded_at(42, stream::REQUESTS, 0).campaign_id(),
            IdGen::seeded(42).campaign_id()
        );
    }

    #[test]
    fn id_shapes() {
        let g = IdGen::seeded(1);
        let c = g.campaign_id();
        assert!(c.starts_with("camp-") && c.len() == 25, "{c}");
        assert!(c[5..].bytes().all(|b| CROCKFORD.contains(&b)));
        assert!(g.deployment_id().starts_with("dep-"));
        assert!(g.cohort_id().starts_with("coh-"));
        let clock = SimClock::at("2026-03-01T00:00:00Z");
        let id = g.attempt_id(clock.now());
        let u = Uuid::parse_str(&id).unwrap();
        assert_eq!(u.get_version_num(), 7);
        let (secs, _) = u.get_timestamp().unwrap().to_unix();
        assert_eq!(secs as i64, clock.now().timestamp());
        assert_eq!(g.uuid_v4().get_version_num(), 4);
    }

    #[test]
    fn attempt_ids_sort_by_time() {
        let g = IdGen::seeded(3);
        let clock = SimClock::at("2026-03-01T00:00:00Z");
        let mut prev = g.attempt_id(clock.now());
        for _ in 0..100 {
            clock.advance(chrono::Duration::milliseconds(2)).unwrap();
            let next = g.attempt_id(clock.now());
            assert!(next > prev, "{next} <= {prev}");
            prev = next;
        }
    }
}
