//! Inbound callers: [`InboundCall`] and the Poisson [`InboundGenerator`].

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::draw::{Draw, Key};

const ARRIVALS_DOMAIN: &str = "telephony-sim/inbound-arrivals/v1";

/// Arrivals are drawn per fixed minute of Unix time, so any window sees the same calls.
const BUCKET_MICROS: i64 = 60 * 1_000_000;

/// A call arriving at one of the platform's numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboundCall {
    /// The number calling in, E.164; the platform looks it up in the deployment's cohorts.
    pub caller: String,
    /// The platform's number called, E.164; the platform finds the deployment by it.
    pub dialled: String,
    /// When the call arrives.
    #[serde(with = "contracts::clock::rfc3339")]
    pub at: DateTime<Utc>,
}

/// An [`InboundGenerator`] that could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InboundError {
    /// No caller numbers were given.
    #[error("an inbound generator needs at least one caller number")]
    NoCallers,
    /// No dialled numbers were given.
    #[error("an inbound generator needs at least one dialled number")]
    NoDialled,
    /// The rate is negative or not finite.
    #[error("the inbound rate must be a finite number of calls per hour, at least 0, got {0}")]
    BadRate(f64),
}

/// Inbound calls arriving as a Poisson process: at a mean rate per hour, each from a caller
/// drawn uniformly from `callers` to a number drawn uniformly from `dialled`.
///
/// The arrivals are a function of the seed and of time alone: they are drawn minute by
/// minute of Unix time, each minute from its own keyed generator, so the calls of a window
/// are the same however the span is cut into windows (`arrivals(a, c)` is
/// `arrivals(a, b)` followed by `arrivals(b, c)`), and a driver that asks for each step's
/// window as it goes, or restarts, sees one consistent stream.
#[derive(Debug, Clone)]
pub struct InboundGenerator {
    seed: u64,
    callers: Vec<String>,
    dialled: Vec<String>,
    rate_per_hour: f64,
}

impl InboundGenerator {
    /// A generator of calls from `callers` to `dialled` at `rate_per_hour` on average.
    pub fn new(
        seed: u64,
        callers: Vec<String>,
        dialled: Vec<String>,
        rate_per_hour: f64,
    ) -> Result<Self, InboundError> {
        if callers.is_empty() {
            return Err(InboundError::NoCallers);
        }
        if dialled.is_empty() {
            return Err(InboundError::NoDialled);
        }
        if !(rate_per_hour.is_finite() && rate_per_hour >= 0.0) {
            return Err(InboundError::BadRate(rate_per_hour));
        }
        Ok(InboundGenerator {
            seed,
            callers,
            dialled,
            rate_per_hour,
        })
    }

    /// The calls arriving in `[from, until)`, in time order (empty when `until <= from`).
    /// Times have microsecond resolution.
    pub fn arrivals(&self, from: DateTime<Utc>, until: DateTime<Utc>) -> Arrivals<'_> {
        let from_us = from.timestamp_micros();
        let until_us = until.timestamp_micros();
        Arrivals {
            generator: self,
            from_us,
            until_us,
            bucket: from_us.div_euclid(BUCKET_MICROS),
            current: None,
            done: until_us <= from_us || self.rate_per_hour == 0.0,
        }
    }
}

/// The iterator of [`InboundGenerator::arrivals`].
pub struct Arrivals<'a> {
    generator: &'a InboundGenerator,
    from_us: i64,
    until_us: i64,
    bucket: i64,
    /// The draw of the current bucket and the seconds elapsed in it so far.
    current: Option<(Draw, f64)>,
    done: bool,
}

impl Iterator for Arrivals<'_> {
    type Item = InboundCall;

    fn next(&mut self) -> Option<InboundCall> {
        let g = self.generator;
        let mean_gap_secs = 3600.0 / g.rate_per_hour;
        while !self.done {
            let bucket_start = self.bucket * BUCKET_MICROS;
            if bucket_start >= self.until_us {
                self.done = true;
                break;
            }
            let (draw, elapsed) = self.current.get_or_insert_with(|| {
                (
                    Key::new(ARRIVALS_DOMAIN, g.seed).int(self.bucket).draw(),
                    0.0,
                )
            });
            *elapsed += draw.exponential() * mean_gap_secs;
            let offset_us = (*elapsed * 1e6).round();
            if offset_us >= BUCKET_MICROS as f64 {
                self.bucket += 1;
                self.current = None;
                continue;
            }
            let at_us = bucket_start + offset_us as i64;
            // Choose both numbers even for a call outside the window, so that the choices
            // do not depend on where the window starts.
            let caller = draw.index(g.callers.len());
            let dialled = draw.index(g.dialled.len());
            if at_us < self.from_us {
                continue;
            }
            if at_us >= self.until_us {
                self.done = true;
                break;
            }
            let at = DateTime::<Utc>::UNIX_EPOCH + Duration::microseconds(at_us);
            return Some(InboundCall {
                caller: g.callers[caller].clone(),
                dialled: g.dialled[dialled].clone(),
                at,
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn construction_is_checked() {
        let n = || vec!["+12025550123".to_owned()];
        assert_eq!(
            InboundGenerator::new(1, vec![], n(), 1.0).unwrap_err(),
            InboundError::NoCallers
        );
        assert_eq!(
            InboundGenerator::new(1, n(), vec![], 1.0).unwrap_err(),
            InboundError::NoDialled
        );
        assert!(matches!(
            InboundGenerator::new(1, n(), n(), -1.0),
            Err(InboundError::BadRate(_))
        ));
        assert!(matches!(
            InboundGenerator::new(1, n(), n(), f64::NAN),
            Err(InboundError::BadRate(_))
        ));
        let zero = InboundGenerator::new(1, n(), n(), 0.0).unwrap();
        assert_eq!(
            zero.arrivals(at("2026-01-01T00:00:00Z"), at("2027-01-01T00:00:00Z"))
                .count(),
            0
        );
    }

    #[test]
    fn windows_before_the_epoch_and_reversed_windows() {
        let g = InboundGenerator::new(
            3,
            vec!["+12025550123".into()],
            vec!["+12025550124".into()],
            600.0,
        )
        .unwrap();
        let calls: Vec<_> = g
            .arrivals(at("1969-12-31T23:00:00Z"), at("1970-01-01T01:00:00Z"))
            .collect();
        assert!(calls.len() > 1000, "{}", calls.len());
        assert!(calls.windows(2).all(|w| w[0].at <= w[1].at));
        assert_eq!(
            g.arrivals(at("2026-01-01T01:00:00Z"), at("2026-01-01T00:00:00Z"))
                .count(),
            0
        );
    }
}
