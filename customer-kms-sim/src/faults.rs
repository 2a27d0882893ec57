//! Faults on demand: the key service misbehaving in the ways a platform must survive.
//!
//! A fault is a [`FaultKind`], a [`EndpointScope`] (one endpoint or all) and a
//! [`FaultTrigger`] (always, the next N calls, a time window on the service clock, or a
//! seeded probability). Faults are set through the admin API (`POST /_admin/faults`) or
//! the library ([`FaultEngine::add`]).
//!
//! A call meets faults at two points:
//!
//! 1. **On arrival** (after the path and method are matched, before anything else):
//!    every matching `latency` fault adds its delay; then the first matching fault of
//!    `service_unavailable`, `rate_limited`, `internal_error` or `hang` (in the order they
//!    were added) decides the answer.
//! 2. **On success** (the call would answer 200): the first matching fault of
//!    `malformed_json`, `wrong_content_type`, `wrong_plaintext` or `truncated_key` changes
//!    the answer. `wrong_plaintext` and `truncated_key` only touch answers that carry a data
//!    key (`decrypt-key`, `rotate-key`).
//!
//! A fault that does not fire for a call is not consumed by it: a `next: 2` fault scoped to
//! `decrypt-key` fires on the next two decrypt calls that reach its point.
//!
//! Latency and hangs are real wall-clock time (`tokio::time::sleep`), also when the service
//! runs on a simulated clock: they exist to exercise the caller's timeouts.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;
use serde::{Deserialize, Serialize};

use crate::error::KmsError;

/// Longest latency a fault may add, in milliseconds (10 minutes).
pub(crate) const MAX_LATENCY_MS: u64 = 600_000;

pub use contracts::wire::byok::Endpoint;
use contracts::wire::byok::EndpointScope;

/// What a fault does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultKind {
    /// 503 `SERVICE_UNAVAILABLE`.
    ServiceUnavailable,
    /// 429 `RATE_LIMITED` with `Retry-After`.
    RateLimited {
        /// `Retry-After` seconds (default 1).
        #[serde(default = "one")]
        retry_after_secs: u64,
    },
    /// 500 `INTERNAL_ERROR`.
    InternalError,
    /// Waits `ms` plus a uniform random 0..=`jitter_ms` (seeded) of wall time, then goes on.
    Latency {
        /// Fixed delay in milliseconds.
        ms: u64,
        /// Extra random delay, up to this many milliseconds.
        #[serde(default)]
        jitter_ms: u64,
    },
    /// Holds the request without answering until the client gives up, the fault list is
    /// reset, the service shuts down, or `max_hang_secs` pass (then 503).
    Hang,
    /// 200 whose body is the real body cut in half: not valid JSON.
    MalformedJson,
    /// 200 with the real JSON body labelled `Content-Type: text/html; charset=utf-8`.
    WrongContentType,
    /// 200 whose data key has one bit flipped (a seeded random bit).
    WrongPlaintext,
    /// 200 whose data key is cut to `len` bytes (default 16).
    TruncatedKey {
        /// Bytes kept.
        #[serde(default = "sixteen")]
        len: usize,
    },
}

fn one() -> u64 {
    1
}
fn sixteen() -> usize {
    16
}

impl FaultKind {
    fn stage(&self) -> Stage {
        match self {
            FaultKind::Latency { .. } => Stage::Delay,
            FaultKind::ServiceUnavailable
            | FaultKind::RateLimited { .. }
            | FaultKind::InternalError
            | FaultKind::Hang => Stage::Arrival,
            FaultKind::MalformedJson | FaultKind::WrongContentType => Stage::Success,
            FaultKind::WrongPlaintext | FaultKind::TruncatedKey { .. } => Stage::KeySuccess,
        }
    }

    /// The kind's name, as in the admin API.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            FaultKind::ServiceUnavailable => "service_unavailable",
            FaultKind::RateLimited { .. } => "rate_limited",
            FaultKind::InternalError => "internal_error",
            FaultKind::Latency { .. } => "latency",
            FaultKind::Hang => "hang",
            FaultKind::MalformedJson => "malformed_json",
            FaultKind::WrongContentType => "wrong_content_type",
            FaultKind::WrongPlaintext => "wrong_plaintext",
            FaultKind::TruncatedKey { .. } => "truncated_key",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Delay,
    Arrival,
    Success,
    KeySuccess,
}

/// When a fault fires.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultTrigger {
    /// Every matching call, until removed.
    #[default]
    Always,
    /// The next N matching calls.
    Next(u32),
    /// Matching calls while the service clock is in `[from, until)`.
    Window {
        /// Start (default: when the fault is added).
        #[serde(default, with = "contracts::clock::rfc3339::option")]
        from: Option<DateTime<Utc>>,
        /// End, excluded.
        #[serde(with = "contracts::clock::rfc3339")]
        until: DateTime<Utc>,
    },
    /// Matching calls during the next N seconds of the service clock (stored as a window).
    ForSecs(u64),
    /// Each matching call with this probability (0 to 1), drawn from the seeded generator.
    Probability(f64),
}

/// A fault to add: kind, scope and trigger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// What it does.
    pub(crate) kind: FaultKind,
    /// Which endpoint (default all).
    #[serde(default)]
    pub(crate) scope: EndpointScope,
    /// When (default always).
    #[serde(default)]
    pub(crate) trigger: FaultTrigger,
}

impl FaultSpec {
    /// A fault of `kind` on every endpoint, always.
    pub fn new(kind: FaultKind) -> Self {
        FaultSpec {
            kind,
            scope: EndpointScope::All,
            trigger: FaultTrigger::Always,
        }
    }

    /// Restricts it to one endpoint.
    pub fn on(mut self, scope: EndpointScope) -> Self {
        self.scope = scope;
        self
    }

    /// Sets when it fires.
    pub fn when(mut self, trigger: FaultTrigger) -> Self {
        self.trigger = trigger;
        self
    }

    fn check(&self) -> Result<(), KmsError> {
        match &self.kind {
            FaultKind::Latency { ms, jitter_ms }
                if ms.saturating_add(*jitter_ms) > MAX_LATENCY_MS =>
            {
                return Err(KmsError::invalid(format!(
                    "latency ms + jitter_ms must be at most {MAX_LATENCY_MS}"
                )));
            }
            FaultKind::RateLimited { retry_after_secs } if *retry_after_secs > 86_400 => {
                return Err(KmsError::invalid("retry_after_secs must be at most 86400"));
            }
            FaultKind::TruncatedKey { len } if *len >= crate::keys::DATA_KEY_LEN => {
                return Err(KmsError::invalid("truncated_key len must be below 32"));
            }
            FaultKind::WrongPlaintext | FaultKind::TruncatedKey { .. }
                if matches!(self.scope, EndpointScope::Auth) =>
            {
                return Err(KmsError::invalid(
                    "wrong_plaintext and truncated_key apply to decrypt-key and rotate-key, not auth",
                ));
            }
            _ => {}
        }
        match &self.trigger {
            FaultTrigger::Next(0) => Err(KmsError::invalid("next must be at least 1")),
            FaultTrigger::Probability(p) if !(0.0..=1.0).contains(p) => {
                Err(KmsError::invalid("probability must be from 0 to 1"))
            }
            FaultTrigger::Window {
                from: Some(f),
                until,
            } if f >= until => Err(KmsError::invalid("window from must be before until")),
            FaultTrigger::ForSecs(0) => Err(KmsError::invalid("for_secs must be at least 1")),
            FaultTrigger::ForSecs(s) if *s > 366 * 86_400 => {
                Err(KmsError::invalid("for_secs must be at most one year"))
            }
            _ => Ok(()),
        }
    }
}

/// A fault as it stands: what the admin API lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultInfo {
    /// Id, `flt-1`, `flt-2`, ...
    pub id: String,
    /// What it does.
    pub(crate) kind: FaultKind,
    /// Which endpoint.
    pub(crate) scope: EndpointScope,
    /// When it fires (`for_secs` shown as the window it became).
    pub(crate) trigger: FaultTrigger,
    /// Calls left for a `next` trigger.
    pub remaining: Option<u32>,
    /// How many calls it has fired on.
    pub fired: u64,
    /// When it was added (service clock).
    #[serde(with = "contracts::clock::rfc3339")]
    pub(crate) added_at: DateTime<Utc>,
}

/// What the arrival point decided.
#[derive(Debug, Default)]
pub(crate) struct Arrival {
    /// Total added latency.
    pub(crate) delay: Duration,
    /// The answer that replaces the call, if any.
    pub(crate) outcome: Option<ArrivalOutcome>,
    /// Ids of the faults that fired.
    pub(crate) fired: Vec<String>,
    /// Their kinds ([`FaultKind::name`]), in the same order.
    pub(crate) fired_kinds: Vec<&'static str>,
}

/// An answer decided on arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArrivalOutcome {
    /// 503.
    Unavailable,
    /// 429 with `Retry-After`.
    RateLimited(u64),
    /// 500.
    Internal,
    /// No answer until the client gives up.
    Hang,
}

/// A change to a successful answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SuccessFault {
    /// Body cut in half.
    MalformedJson,
    /// `text/html` content type.
    WrongContentType,
    /// Flip bit `bit` (0..256) of the data key.
    WrongPlaintext {
        /// Which bit: byte `bit / 8`, bit `bit % 8`.
        bit: u16,
    },
    /// Cut the data key to `len` bytes.
    TruncatedKey {
        /// Bytes kept.
        len: usize,
    },
}

struct Fault {
    info: FaultInfo,
}

impl Fault {
    /// Whether the trigger allows firing at `now`; draws and consumes when it does.
    fn fires(&mut self, now: DateTime<Utc>, rng: &mut ChaCha12Rng) -> bool {
        let fire = match &self.info.trigger {
            FaultTrigger::Always => true,
            FaultTrigger::Next(_) => self.info.remaining.unwrap_or(0) > 0,
            FaultTrigger::Window { from, until } => from.is_none_or(|f| now >= f) && now < *until,
            FaultTrigger::ForSecs(_) => unreachable!("stored as a window"),
            FaultTrigger::Probability(p) => rng.gen_bool(*p),
        };
        if fire {
            if let Some(r) = self.info.remaining.as_mut() {
                *r -= 1;
            }
            self.info.fired += 1;
        }
        fire
    }
}

struct State {
    faults: Vec<Fault>,
    next_id: u64,
    rng: ChaCha12Rng,
}

/// The faults of one key service, with their seeded random generator.
pub struct FaultEngine {
    state: Mutex<State>,
    /// Fast path: no lock when no fault is set.
    any: AtomicBool,
}

impl std::fmt::Debug for FaultEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultEngine")
            .field("faults", &self.list().len())
            .finish()
    }
}

impl FaultEngine {
    /// No faults; random draws seeded with `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        FaultEngine {
            state: Mutex::new(State {
                faults: Vec::new(),
                next_id: 1,
                rng: ChaCha12Rng::seed_from_u64(seed),
            }),
            any: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a fault at `now`; answers it as listed.
    pub(crate) fn add(&self, spec: FaultSpec, now: DateTime<Utc>) -> Result<FaultInfo, KmsError> {
        spec.check()?;
        let trigger = match spec.trigger {
            FaultTrigger::ForSecs(s) => FaultTrigger::Window {
                from: Some(now),
                until: now + chrono::Duration::seconds(i64::try_from(s).unwrap_or(i64::MAX)),
            },
            FaultTrigger::Window { from, until } => FaultTrigger::Window {
                from: Some(from.unwrap_or(now)),
                until,
            },
            other => other,
        };
        let remaining = match trigger {
            FaultTrigger::Next(n) => Some(n),
            _ => None,
        };
        let mut st = self.lock();
        let info = FaultInfo {
            id: format!("flt-{}", st.next_id),
            kind: spec.kind,
            scope: spec.scope,
            trigger,
            remaining,
            fired: 0,
            added_at: now,
        };
        st.next_id += 1;
        st.faults.push(Fault { info: info.clone() });
        self.any.store(true, Ordering::SeqCst);
        Ok(info)
    }

    /// Removes one fault; whether it existed.
    pub fn remove(&self, id: &str) -> bool {
        let mut st = self.lock();
        let before = st.faults.len();
        st.faults.retain(|f| f.info.id != id);
        self.any.store(!st.faults.is_empty(), Ordering::SeqCst);
        st.faults.len() != before
    }

    /// Removes every fault; answers how many there were.
    pub fn clear(&self) -> usize {
        let mut st = self.lock();
        let n = st.faults.len();
        st.faults.clear();
        self.any.store(false, Ordering::SeqCst);
        n
    }

    /// Every fault, in the order added.
    pub fn list(&self) -> Vec<FaultInfo> {
        self.lock().faults.iter().map(|f| f.info.clone()).collect()
    }

    /// One fault.
    pub(crate) fn get(&self, id: &str) -> Option<FaultInfo> {
        self.lock()
            .faults
            .iter()
            .find(|f| f.info.id == id)
            .map(|f| f.info.clone())
    }

    /// The arrival point of a call to `endpoint` at `now`.
    pub(crate) fn on_arrival(&self, endpoint: Endpoint, now: DateTime<Utc>) -> Arrival {
        let mut out = Arrival::default();
        if !self.any.load(Ordering::SeqCst) {
            return out;
        }
        let mut st = self.lock();
        let State { faults, rng, .. } = &mut *st;
        for f in faults.iter_mut() {
            if !f.info.scope.covers(endpoint) {
                continue;
            }
            let considered = match f.info.kind.stage() {
                Stage::Delay => true,
                // Only the first arrival fault that fires decides; later ones are not drawn.
                Stage::Arrival => out.outcome.is_none(),
                Stage::Success | Stage::KeySuccess => false,
            };
            if !considered || !f.fires(now, rng) {
                continue;
            }
            out.fired.push(f.info.id.clone());
            out.fired_kinds.push(f.info.kind.name());
            match f.info.kind {
                FaultKind::Latency { ms, jitter_ms } => {
                    let jitter = if jitter_ms > 0 {
                        rng.gen_range(0..=jitter_ms)
                    } else {
                        0
                    };
                    out.delay += Duration::from_millis(ms + jitter);
                }
                FaultKind::ServiceUnavailable => out.outcome = Some(ArrivalOutcome::Unavailable),
                FaultKind::RateLimited { retry_after_secs } => {
                    out.outcome = Some(ArrivalOutcome::RateLimited(retry_after_secs));
                }
                FaultKind::InternalError => out.outcome = Some(ArrivalOutcome::Internal),
                FaultKind::Hang => out.outcome = Some(ArrivalOutcome::Hang),
                _ => unreachable!("arrival-stage kinds only"),
            }
        }
        out
    }

    /// The success point of a call to `endpoint` at `now`: the change to its answer, if
    /// any, and the id and kind name of the fault that made it.
    pub(crate) fn on_success(
        &self,
        endpoint: Endpoint,
        now: DateTime<Utc>,
    ) -> Option<(SuccessFault, String, &'static str)> {
        if !self.any.load(Ordering::SeqCst) {
            return None;
        }
        let mut st = self.lock();
        let State { faults, rng, .. } = &mut *st;
        for f in faults.iter_mut() {
            if !f.info.scope.covers(endpoint) {
                continue;
            }
            let applies = match f.info.kind.stage() {
                Stage::Success => true,
                Stage::KeySuccess => endpoint.returns_key(),
                Stage::Delay | Stage::Arrival => false,
            };
            if applies && f.fires(now, rng) {
                let change = match f.info.kind {
                    FaultKind::MalformedJson => SuccessFault::MalformedJson,
                    FaultKind::WrongContentType => SuccessFault::WrongContentType,
                    FaultKind::WrongPlaintext => SuccessFault::WrongPlaintext {
                        bit: rng.gen_range(0..256),
                    },
                    FaultKind::TruncatedKey { len } => SuccessFault::TruncatedKey { len },
                    _ => unreachable!("success-stage kinds only"),
                };
                return Some((change, f.info.id.clone(), f.info.kind.name()));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t0() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn specs_parse_from_admin_json() {
        let s: FaultSpec = serde_json::from_value(serde_json::json!({
            "kind": "service_unavailable", "scope": "decrypt-key", "trigger": {"next": 3}
        }))
        .unwrap();
        assert_eq!(
            s,
            FaultSpec::new(FaultKind::ServiceUnavailable)
                .on(EndpointScope::DecryptKey)
                .when(FaultTrigger::Next(3))
        );
        let s: FaultSpec = serde_json::from_value(serde_json::json!({
            "kind": {"latency": {"ms": 50, "jitter_ms": 10}}, "trigger": {"probability": 0.5}
        }))
        .unwrap();
        assert_eq!(
            s.kind,
            FaultKind::Latency {
                ms: 50,
                jitter_ms: 10
            }
        );
        assert_eq!(s.scope, EndpointScope::All);
        let s: FaultSpec =
            serde_json::from_value(serde_json::json!({"kind": {"rate_limited": {}}})).unwrap();
        assert_eq!(
            s.kind,
            FaultKind::RateLimited {
                retry_after_secs: 1
            }
        );
        assert_eq!(s.trigger, FaultTrigger::Always);
        assert!(serde_json::from_value::<FaultSpec>(serde_json::json!({"kind": "nope"})).is_err());
    }

    #[test]
    fn next_n_fires_n_times_then_stops() {
        let e = FaultEngine::new(1);
        e.add(
            FaultSpec::new(FaultKind::ServiceUnavailable).when(FaultTrigger::Next(2)),
            t0(),
        )
        .unwrap();
        let outcomes: Vec<_> = (0..4)
            .map(|_| e.on_arrival(Endpoint::Auth, t0()).outcome)
            .collect();
        assert_eq!(
            outcomes,
            [
                Some(ArrivalOutcome::Unavailable),
                Some(ArrivalOutcome::Unavailable),
                None,
                None
            ]
        );
        assert_eq!(e.list()[0].remaining, Some(0));
        assert_eq!(e.list()[0].fired, 2);
    }

    #[test]
    fn scope_limits_and_unfired_faults_are_not_consumed() {
        let e = FaultEngine::new(1);
        e.add(
            FaultSpec::new(FaultKind::InternalError)
                .on(EndpointScope::DecryptKey)
                .when(FaultTrigger::Next(1)),
            t0(),
        )
        .unwrap();
        assert_eq!(e.on_arrival(Endpoint::Auth, t0()).outcome, None);
        assert_eq!(
            e.on_arrival(Endpoint::DecryptKey, t0()).outcome,
            Some(ArrivalOutcome::Internal)
        );
        // A key fault scoped to all is not consumed by /auth successes.
        e.add(
            FaultSpec::new(FaultKind::WrongPlaintext).when(FaultTrigger::Next(1)),
            t0(),
        )
        .unwrap();
        assert_eq!(e.on_success(Endpoint::Auth, t0()), None);
        assert!(matches!(
            e.on_success(Endpoint::DecryptKey, t0()),
            Some((SuccessFault::WrongPlaintext { .. }, _, "wrong_plaintext"))
        ));
        assert_eq!(e.on_success(Endpoint::DecryptKey, t0()), None);
    }

    #[test]
    fn first_outcome_wins_and_latencies_add_up() {
        let e = FaultEngine::new(1);
        let lat = |ms| FaultSpec::new(FaultKind::Latency { ms, jitter_ms: 0 });
        e.add(lat(10), t0()).unwrap();
        e.add(
            FaultSpec::new(FaultKind::RateLimited {
                retry_after_secs: 7,
            })
            .when(FaultTrigger::Next(1)),
            t0(),
        )
        .unwrap();
        e.add(
            FaultSpec::new(FaultKind::ServiceUnavailable).when(FaultTrigger::Next(1)),
            t0(),
        )
        .unwrap();
        e.add(lat(5), t0()).unwrap();
        let a = e.on_arrival(Endpoint::DecryptKey, t0());
        assert_eq!(a.delay, Duration::from_millis(15));
        assert_eq!(a.outcome, Some(ArrivalOutcome::RateLimited(7)));
        assert_eq!(a.fired, ["flt-1", "flt-2", "flt-4"]);
        assert_eq!(a.fired_kinds, ["latency", "rate_limited", "latency"]);
        // The 503 was not consumed by the call the 429 answered.
        let a = e.on_arrival(Endpoint::DecryptKey, t0());
        assert_eq!(a.outcome, Some(ArrivalOutcome::Unavailable));
    }

    #[test]
    fn latency_jitter_is_drawn_within_its_range() {
        let e = FaultEngine::new(7);
        e.add(
            FaultSpec::new(FaultKind::Latency {
                ms: 50,
                jitter_ms: 100,
            }),
            t0(),
        )
        .unwrap();
        let draws: Vec<Duration> = (0..500)
            .map(|_| e.on_arrival(Endpoint::DecryptKey, t0()).delay)
            .collect();
        let (lo, hi) = (Duration::from_millis(50), Duration::from_millis(150));
        assert!(draws.iter().all(|d| (lo..=hi).contains(d)), "{draws:?}");
        let distinct: std::collections::BTreeSet<_> = draws.iter().collect();
        assert!(distinct.len() > 50, "jitter varies: {distinct:?}");
        // Both ends are reached (the engine is seeded: the same draws every run).
        assert!(draws.iter().any(|d| *d < lo + Duration::from_millis(5)));
        assert!(draws.iter().any(|d| *d > hi - Duration::from_millis(5)));
    }

    #[test]
    fn windows_follow_the_clock() {
        let e = FaultEngine::new(1);
        let info = e
            .add(
                FaultSpec::new(FaultKind::ServiceUnavailable).when(FaultTrigger::ForSecs(60)),
                t0(),
            )
            .unwrap();
        assert_eq!(
            info.trigger,
            FaultTrigger::Window {
                from: Some(t0()),
                until: t0() + chrono::Duration::seconds(60)
            }
        );
        let at = |s| t0() + chrono::Duration::seconds(s);
        assert!(e.on_arrival(Endpoint::Auth, at(0)).outcome.is_some());
        assert!(e.on_arrival(Endpoint::Auth, at(59)).outcome.is_some());
        assert!(e.on_arrival(Endpoint::Auth, at(60)).outcome.is_none());
        e.clear();
        e.add(
            FaultSpec::new(FaultKind::ServiceUnavailable).when(FaultTrigger::Window {
                from: Some(at(100)),
                until: at(200),
            }),
            t0(),
        )
        .unwrap();
        assert!(e.on_arrival(Endpoint::Auth, at(99)).outcome.is_none());
        assert!(e.on_arrival(Endpoint::Auth, at(100)).outcome.is_some());
    }

    #[test]
    fn probability_is_seeded_and_roughly_right() {
        let run = |seed| {
            let e = FaultEngine::new(seed);
            e.add(
                FaultSpec::new(FaultKind::ServiceUnavailable).when(FaultTrigger::Probability(0.3)),
                t0(),
            )
            .unwrap();
            (0..2000)
                .map(|_| e.on_arrival(Endpoint::Auth, t0()).outcome.is_some())
                .collect::<Vec<_>>()
        };
        let a = run(9);
        assert_eq!(a, run(9), "same seed, same draws");
        assert_ne!(a, run(10));
        let share = a.iter().filter(|x| **x).count() as f64 / a.len() as f64;
        assert!((0.25..0.35).contains(&share), "{share}");
    }

    #[test]
    fn bad_specs_are_refused() {
        let e = FaultEngine::new(1);
        for spec in [
            FaultSpec::new(FaultKind::Hang).when(FaultTrigger::Next(0)),
            FaultSpec::new(FaultKind::Hang).when(FaultTrigger::Probability(1.5)),
            FaultSpec::new(FaultKind::Hang).when(FaultTrigger::Probability(f64::NAN)),
            FaultSpec::new(FaultKind::Latency {
                ms: MAX_LATENCY_MS,
                jitter_ms: 1,
            }),
            FaultSpec::new(FaultKind::WrongPlaintext).on(EndpointScope::Auth),
            FaultSpec::new(FaultKind::TruncatedKey { len: 32 }),
            FaultSpec::new(FaultKind::Hang).when(FaultTrigger::ForSecs(0)),
            FaultSpec::new(FaultKind::Hang).when(FaultTrigger::Window {
                from: Some(t0()),
                until: t0(),
            }),
        ] {
            let err = e.add(spec.clone(), t0()).unwrap_err();
            assert_eq!(
                err.code,
                contracts::error::ByokErrorCode::InvalidRequest,
                "{spec:?}"
            );
        }
        assert!(e.list().is_empty());
    }

    #[test]
    fn remove_and_clear() {
        let e = FaultEngine::new(1);
        let a = e.add(FaultSpec::new(FaultKind::Hang), t0()).unwrap();
        e.add(FaultSpec::new(FaultKind::Hang), t0()).unwrap();
        assert!(e.remove(&a.id));
        assert!(!e.remove(&a.id));
        assert_eq!(e.list().len(), 1);
        assert_eq!(e.clear(), 1);
        assert_eq!(e.on_arrival(Endpoint::Auth, t0()).outcome, None);
    }
}
