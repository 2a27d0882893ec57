//! Token buckets of `rate_limit` rules: one per API key, filled at the rule's rate on the
//! real clock (a rate limit is about real requests per second, whatever the platform's
//! simulated time says), holding at most `burst` tokens.
//!
//! Keys are held as a SHA-256 digest, never in plain text. Requests without a key share
//! one bucket. At most [`MAX_KEYS`] buckets are kept per rule: past that, all are dropped
//! (a full bucket is what a key that was quiet would have anyway, so the cost is letting a
//! few requests through early).

use std::collections::HashMap;

use contracts::clock::Stopwatch;
use sha2::{Digest, Sha256};

/// Buckets kept per rule at most.
pub(crate) const MAX_KEYS: usize = 10_000;

/// Seconds since the platform started, on a monotonic clock.
#[derive(Debug)]
pub(crate) struct Monotonic(Stopwatch);

impl Monotonic {
    /// Starts counting.
    pub(crate) fn start() -> Monotonic {
        Monotonic(Stopwatch::start())
    }

    /// Seconds since the start.
    pub(crate) fn seconds(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: f64,
}

/// The buckets of one rule.
#[derive(Debug, Default)]
pub(crate) struct Buckets(HashMap<[u8; 16], Bucket>);

impl Buckets {
    /// Takes a token of `key`'s bucket at time `now` (seconds), or answers how many
    /// seconds until one is there.
    pub(crate) fn take(
        &mut self,
        key: Option<&str>,
        rate: f64,
        burst: u32,
        now: f64,
    ) -> Result<(), f64> {
        let digest = digest(key);
        if self.0.len() >= MAX_KEYS && !self.0.contains_key(&digest) {
            self.0.clear();
        }
        let burst = f64::from(burst.max(1));
        let b = self.0.entry(digest).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        b.tokens = (b.tokens + (now - b.at).max(0.0) * rate).min(burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err((1.0 - b.tokens) / rate)
        }
    }
}

fn digest(key: Option<&str>) -> [u8; 16] {
    let mut out = [0u8; 16];
    if let Some(k) = key {
        out.copy_from_slice(&Sha256::digest(k.as_bytes())[..16]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_the_burst_then_the_rate() {
        let mut b = Buckets::default();
        assert!(b.take(Some("k"), 2.0, 3, 0.0).is_ok());
        assert!(b.take(Some("k"), 2.0, 3, 0.0).is_ok());
        assert!(b.take(Some("k"), 2.0, 3, 0.0).is_ok());
        let wait = b.take(Some("k"), 2.0, 3, 0.0).unwrap_err();
        assert!((wait - 0.5).abs() < 1e-9, "{wait}");
        assert!(
            b.take(Some("k"), 2.0, 3, 0.5).is_ok(),
            "refilled at the rate"
        );
        assert!(b.take(Some("other"), 2.0, 3, 0.5).is_ok(), "keys are apart");
    }
}
