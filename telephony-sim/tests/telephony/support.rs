//! Shared helpers: requests, instants and a statistical tolerance.

use chrono::{DateTime, Utc};
use telephony_sim::DialRequest;

/// A fixed instant for requests (the simulator reads no clock).
pub fn t0() -> DateTime<Utc> {
    "2026-03-02T09:00:00Z".parse().unwrap()
}

/// A request to `to` with `attempt_id` and `attempt_index`, from a fixed agent number at
/// [`t0`].
pub fn req(
    attempt_id: impl Into<String>,
    to: impl Into<String>,
    attempt_index: u32,
) -> DialRequest {
    DialRequest {
        attempt_id: attempt_id.into(),
        from: "+14155550000".into(),
        to: to.into(),
        at: t0(),
        attempt_index,
    }
}

/// The `i`-th of a family of ordinary (non-magic) UK numbers.
pub fn uk_number(i: u32) -> String {
    format!("+44207{i:07}")
}

/// Asserts that `count` successes in `n` trials fit a rate `p`.
///
/// The tolerance is five binomial standard errors, `5 * sqrt(p (1 - p) / n)`. The seeds are
/// fixed, so each test is deterministic; the bound says how unlucky a seed would have to
/// be to fail a correct model (beyond 5 sigma: about 1 in 1.7 million), while a model off
/// by one percentage point at n = 100,000 is off by at least 6 standard errors for any
/// rate up to 50 % and fails. A rate of 0 must give exactly 0.
pub fn assert_rate(what: &str, count: usize, n: usize, p: f64) {
    let observed = count as f64 / n as f64;
    if p == 0.0 {
        assert_eq!(count, 0, "{what}: expected none, got {count} of {n}");
        return;
    }
    let se = (p * (1.0 - p) / n as f64).sqrt();
    assert!(
        (observed - p).abs() <= 5.0 * se,
        "{what}: observed {observed:.5} ({count} of {n}), expected {p} +/- {:.5} (5 SE)",
        5.0 * se
    );
}

/// Seconds of a duration, with millisecond precision.
pub fn secs(d: chrono::Duration) -> f64 {
    d.num_milliseconds() as f64 / 1000.0
}
