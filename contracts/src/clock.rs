//! The one place where the time is read.
//!
//! Every component takes a [`SharedClock`]: token expiry, key-cache lifetimes, campaign
//! activation and end, calling windows, dial pacing, retry gaps and call durations all follow
//! it. [`SystemClock`] reads the wall clock; [`SimClock`] only moves when told, never
//! backwards, so a 30-day campaign runs in seconds and the same way every time.
//!
//! `Utc::now`, `SystemTime::now` and `Instant::now` are refused by the workspace lints
//! everywhere but here (see `clippy.toml`).
#![allow(clippy::disallowed_methods)]

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Duration, SecondsFormat, TimeZone, Utc};

/// A source of the current time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;

    /// Whether this clock only moves when told (a [`SimClock`]).
    fn is_simulated(&self) -> bool {
        false
    }
}

/// A clock shared between threads and components.
pub type SharedClock = Arc<dyn Clock>;

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl SystemClock {
    /// A shared system clock.
    pub fn shared() -> SharedClock {
        Arc::new(SystemClock)
    }
}

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Why a simulated clock refused to move.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    /// The requested instant is before the clock's current time.
    #[error("the simulated clock never goes backwards: it is {current}, asked for {requested}")]
    Backwards {
        /// The clock's time when asked.
        current: String,
        /// The instant asked for.
        requested: String,
    },
    /// A negative advance was asked for.
    #[error("cannot advance the simulated clock by a negative duration ({0} ms)")]
    NegativeAdvance(i64),
}

/// The current time of the system clock, truncated to the millisecond: where a simulated
/// clock starts when no start is given. The API writes instants with millisecond precision,
/// so a start with finer digits would make the clock's own reading differ from what the API
/// reports for the same instant.
pub fn sim_start_now() -> DateTime<Utc> {
    use chrono::SubsecRound;
    Clock::now(&SystemClock).trunc_subsecs(3)
}

/// A simulated clock: set or advanced, never backwards, shareable across threads.
///
/// Cloning gives another handle on the same time. The resolution is one microsecond.
#[derive(Clone)]
pub struct SimClock {
    micros: Arc<AtomicI64>,
}

impl SimClock {
    /// A simulated clock starting at `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        SimClock {
            micros: Arc::new(AtomicI64::new(start.timestamp_micros())),
        }
    }

    /// A simulated clock starting at an RFC 3339 instant; panics on a malformed literal,
    /// which is meant for tests and examples.
    pub fn at(rfc3339: &str) -> Self {
        let t = DateTime::parse_from_rfc3339(rfc3339)
            .unwrap_or_else(|e| panic!("bad RFC 3339 instant {rfc3339:?}: {e}"));
        SimClock::new(t.with_timezone(&Utc))
    }

    /// This clock as a [`SharedClock`] (same time, shared handle).
    pub fn shared(&self) -> SharedClock {
        Arc::new(self.clone())
    }

    /// Moves the clock to `t`. Setting the current time again is allowed; earlier is refused.
    pub fn set(&self, t: DateTime<Utc>) -> Result<DateTime<Utc>, ClockError> {
        let target = t.timestamp_micros();
        let mut current = self.micros.load(Ordering::SeqCst);
        loop {
            if target < current {
                return Err(ClockError::Backwards {
                    current: format_instant(from_micros(current)),
                    requested: format_instant(t),
                });
            }
            match self
                .micros
                .compare_exchange(current, target, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Ok(t),
                Err(actual) => current = actual,
            }
        }
    }

    /// Moves the clock forward by `d` and answers the new time.
    pub fn advance(&self, d: Duration) -> Result<DateTime<Utc>, ClockError> {
        let delta = d
            .num_microseconds()
            .ok_or(ClockError::NegativeAdvance(i64::MIN))?;
        if delta < 0 {
            return Err(ClockError::NegativeAdvance(d.num_milliseconds()));
        }
        let new = self.micros.fetch_add(delta, Ordering::SeqCst) + delta;
        Ok(from_micros(new))
    }

    /// Moves the clock to `t` if that is later than now; otherwise leaves it. Answers the
    /// time after the call. Used by drivers that step to a due time which may already have
    /// passed.
    pub fn advance_to(&self, t: DateTime<Utc>) -> DateTime<Utc> {
        let target = t.timestamp_micros();
        let prev = self.micros.fetch_max(target, Ordering::SeqCst);
        from_micros(prev.max(target))
    }
}

impl fmt::Debug for SimClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimClock")
            .field("now", &format_instant(self.now()))
            .finish()
    }
}

impl Clock for SimClock {
    fn now(&self) -> DateTime<Utc> {
        from_micros(self.micros.load(Ordering::SeqCst))
    }

    fn is_simulated(&self) -> bool {
        true
    }
}

fn from_micros(us: i64) -> DateTime<Utc> {
    Utc.timestamp_micros(us)
        .single()
        .expect("simulated clock out of chrono's range")
}

/// Measures elapsed wall time (request latencies, benchmark timings). Not for anything that
/// must follow a simulated clock.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch(std::time::Instant);

impl Stopwatch {
    /// Starts measuring now.
    pub fn start() -> Self {
        Stopwatch(std::time::Instant::now())
    }

    /// Time since start.
    pub fn elapsed(&self) -> std::time::Duration {
        self.0.elapsed()
    }

    /// Time since start in whole milliseconds.
    pub fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// Formats an instant the way every wire body does: RFC 3339, UTC, milliseconds, `Z`.
pub fn format_instant(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Serde adapter that writes instants with [`format_instant`] and reads any RFC 3339 instant.
pub mod rfc3339 {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serialises with [`super::format_instant`].
    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_instant(*t))
    }

    /// Reads an RFC 3339 instant with any offset, converted to UTC.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let s = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&s)
            .map(|t| t.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }

    /// The same for optional instants.
    pub mod option {
        use chrono::{DateTime, Utc};
        use serde::{Deserialize, Deserializer, Serializer};

        /// Serialises `Some` with [`super::super::format_instant`], `None` as null.
        pub fn serialize<S: Serializer>(
            t: &Option<DateTime<Utc>>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => s.serialize_str(&super::super::format_instant(*t)),
                None => s.serialize_none(),
            }
        }

        /// Reads an optional RFC 3339 instant.
        pub fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<DateTime<Utc>>, D::Error> {
            let s = Option::<String>::deserialize(d)?;
            s.map(|s| {
                DateTime::parse_from_rfc3339(&s)
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(serde::de::Error::custom)
            })
            .transpose()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_clock_moves_forward_only() {
        let c = SimClock::at("2026-03-01T00:00:00Z");
        let t0 = c.now();
        assert_eq!(format_instant(t0), "2026-03-01T00:00:00.000Z");
        let t1 = c.advance(Duration::seconds(90)).unwrap();
        assert_eq!(t1 - t0, Duration::seconds(90));
        assert_eq!(c.now(), t1);
        c.set(t1).expect("setting the same instant is allowed");
        let err = c.set(t0).unwrap_err();
        assert!(matches!(err, ClockError::Backwards { .. }));
        assert_eq!(c.now(), t1, "a refused set leaves the clock alone");
        assert!(c.advance(Duration::seconds(-1)).is_err());
        assert_eq!(c.advance_to(t0), t1, "advance_to never goes back");
    }

    #[test]
    fn sim_clock_handles_share_one_time_across_threads() {
        let c = SimClock::at("2026-03-01T00:00:00Z");
        let shared = c.shared();
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.advance(Duration::milliseconds(1)).unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(
            shared.now(),
            SimClock::at("2026-03-01T00:00:08Z").now(),
            "8 threads x 1000 x 1 ms"
        );
        assert!(shared.is_simulated());
        assert!(!SystemClock.is_simulated());
    }

    #[test]
    fn rfc3339_reads_offsets_and_writes_utc_millis() {
        #[derive(serde::Serialize, serde::Deserialize)]
        struct T {
            #[serde(with = "rfc3339")]
            at: DateTime<Utc>,
        }
        let t: T = serde_json::from_str(r#"{"at":"2026-03-01T05:30:00+05:30"}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"at":"2026-03-01T00:00:00.000Z"}"#
        );
    }

    #[test]
    fn a_simulated_clock_started_now_reads_what_the_api_writes() {
        use chrono::Timelike;
        let start = sim_start_now();
        assert_eq!(start.nanosecond() % 1_000_000, 0, "{start:?}");
        // The clock's own reading round-trips through the API's millisecond form unchanged.
        let sim = SimClock::new(start);
        let written = start.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        assert_eq!(DateTime::parse_from_rfc3339(&written).unwrap(), sim.now());
    }
}
