//! Randomness keyed by the inputs of one decision, not by the order of decisions.
//!
//! Every random choice the simulator makes (one dial's outcome and timings, one inbound call's
//! talk time, one minute of inbound arrivals) gets its own generator, seeded from a SHA-256
//! digest of a domain tag, the simulator's seed and the inputs that identify the decision.
//! So the same inputs give the same answer whatever was asked before, in any order, on any
//! thread, and after a restart.
//!
//! The digest feeds ChaCha8, whose output stream is fixed by its specification; uniform,
//! normal and exponential variates are computed here rather than through `rand`'s
//! distributions, so the values depend on this crate alone. (The normal and exponential
//! variates use `ln`, `cos` and `exp`, which may differ in the last bit between platforms'
//! maths libraries; durations are rounded to milliseconds, which hides that in practice.)

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

/// Builds the key of one decision: a domain tag, the seed, then length-prefixed fields.
pub(crate) struct Key(Sha256);

impl Key {
    /// A key in the domain `domain` (a fixed tag such as `"telephony-sim/dial/v1"`) under `seed`.
    pub(crate) fn new(domain: &'static str, seed: u64) -> Self {
        let mut h = Sha256::new();
        h.update((domain.len() as u64).to_le_bytes());
        h.update(domain.as_bytes());
        h.update(seed.to_le_bytes());
        Key(h)
    }

    /// Adds a string field. The length prefix keeps `("ab", "c")` apart from `("a", "bc")`.
    pub(crate) fn str(mut self, s: &str) -> Self {
        self.0.update((s.len() as u64).to_le_bytes());
        self.0.update(s.as_bytes());
        self
    }

    /// Adds an integer field.
    pub(crate) fn int(mut self, v: i64) -> Self {
        self.0.update(v.to_le_bytes());
        self
    }

    /// The generator for this decision.
    pub(crate) fn draw(self) -> Draw {
        let digest: [u8; 32] = self.0.finalize().into();
        Draw(ChaCha8Rng::from_seed(digest))
    }
}

/// A stream of variates for one decision.
pub(crate) struct Draw(ChaCha8Rng);

impl Draw {
    /// Uniform in `[0, 1)`, with 53 random bits.
    pub(crate) fn unit(&mut self) -> f64 {
        const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
        (self.0.next_u64() >> 11) as f64 * SCALE
    }

    /// Uniform in `[min, max)` (exactly `min` when `min == max`).
    pub(crate) fn uniform(&mut self, min: f64, max: f64) -> f64 {
        min + (max - min) * self.unit()
    }

    /// Uniform index in `0..n`; `n` must be at least 1.
    pub(crate) fn index(&mut self, n: usize) -> usize {
        debug_assert!(n > 0);
        // Lemire's multiply-shift; the bias for the small n used here is below 2^-50.
        ((u128::from(self.0.next_u64()) * n as u128) >> 64) as usize
    }

    /// Standard normal, by the Box–Muller transform.
    pub(crate) fn standard_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]: ln is finite
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Exponential with mean 1.
    pub(crate) fn exponential(&mut self) -> f64 {
        -(1.0 - self.unit()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_key_same_stream_and_fields_are_delimited() {
        let a: Vec<u64> = (0..4)
            .map(|_| Key::new("t", 1).str("ab").str("c").draw().0.next_u64())
            .collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut ab_c = Key::new("t", 1).str("ab").str("c").draw();
        let mut a_bc = Key::new("t", 1).str("a").str("bc").draw();
        assert_ne!(ab_c.0.next_u64(), a_bc.0.next_u64());
        let mut other_seed = Key::new("t", 2).str("ab").str("c").draw();
        let mut same = Key::new("t", 1).str("ab").str("c").draw();
        assert_ne!(other_seed.0.next_u64(), same.0.next_u64());
        let mut other_domain = Key::new("u", 1).str("ab").str("c").draw();
        let mut same = Key::new("t", 1).str("ab").str("c").draw();
        assert_ne!(other_domain.0.next_u64(), same.0.next_u64());
    }

    #[test]
    fn variates_have_their_moments() {
        let mut d = Key::new("moments", 7).draw();
        let n = 200_000;
        let (mut su, mut sn, mut sn2, mut se) = (0.0, 0.0, 0.0, 0.0);
        let mut counts = [0u32; 5];
        for _ in 0..n {
            let u = d.unit();
            assert!((0.0..1.0).contains(&u));
            su += u;
            let z = d.standard_normal();
            sn += z;
            sn2 += z * z;
            let e = d.exponential();
            assert!(e >= 0.0);
            se += e;
            counts[d.index(5)] += 1;
        }
        let n = f64::from(n);
        // Standard errors: uniform 0.289/sqrt(n) = 0.00065, normal 1/sqrt(n) = 0.0022,
        // normal variance sqrt(2/n) = 0.0032, exponential 1/sqrt(n) = 0.0022. Five of each.
        assert!((su / n - 0.5).abs() < 0.0033, "uniform mean {}", su / n);
        assert!((sn / n).abs() < 0.011, "normal mean {}", sn / n);
        assert!((sn2 / n - 1.0).abs() < 0.016, "normal variance {}", sn2 / n);
        assert!((se / n - 1.0).abs() < 0.011, "exponential mean {}", se / n);
        // Each index: p = 0.2, sd of the count = sqrt(n p (1-p)) = 179; five of them.
        for c in counts {
            assert!((f64::from(c) - n / 5.0).abs() < 900.0, "{counts:?}");
        }
    }
}
