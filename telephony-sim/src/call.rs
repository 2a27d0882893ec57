//! What a dial asks and what it answers: [`DialRequest`], [`Outcome`], [`DialResult`].

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// The longest duration any model parameter may name: one day, in seconds.
pub const MAX_SECS: f64 = 86_400.0;

/// Seconds (finite, non-negative, at most [`MAX_SECS`]) as a duration, rounded to the
/// millisecond.
pub(crate) fn secs_to_duration(secs: f64) -> Duration {
    Duration::milliseconds((secs * 1000.0).round() as i64)
}

/// One dial the platform places: the first call to a user or one of its retries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DialRequest {
    /// The platform's id of this attempt. Part of the key of the simulated outcome, so a
    /// replayed attempt (same id, same number, same index) gets the same outcome.
    pub attempt_id: String,
    /// The number the call originates from (the agent's number), E.164.
    pub from: String,
    /// The number called (the user's number), E.164. Rules, magic numbers and the model
    /// all look at this one.
    pub to: String,
    /// When the dial is placed. Timings in the result count from here.
    #[serde(with = "contracts::clock::rfc3339")]
    pub at: DateTime<Utc>,
    /// 0 for a user's first dial, 1 for the first retry, and so on.
    pub attempt_index: u32,
}

/// How a dial ended.
///
/// The platform's webhooks know `connected`, `busy`, `no_answer` and `failed`, and its retry
/// policy knows `provider_error` and `internal_error`. [`Outcome::Voicemail`] is the
/// simulator's own: an answering machine picked up. The platform counts it as `no_answer`
/// with `failure_reason: "voicemail"`, because the person was not reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A person answered and talked for the result's `talk` time.
    Connected,
    /// The line was busy.
    Busy,
    /// Nobody answered before the ring timeout.
    NoAnswer,
    /// An answering machine picked up: a greeting, a beep, perhaps a message.
    Voicemail,
    /// The network could not complete the call (unallocated number, rejected, ...).
    Failed,
    /// The telephony provider failed (an error of the carrier, not of the number).
    ProviderError,
    /// The platform's own telephony layer failed.
    InternalError,
}

impl Outcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Outcome; 7] = [
        Outcome::Connected,
        Outcome::Busy,
        Outcome::NoAnswer,
        Outcome::Voicemail,
        Outcome::Failed,
        Outcome::ProviderError,
        Outcome::InternalError,
    ];

    /// The snake_case name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Connected => "connected",
            Outcome::Busy => "busy",
            Outcome::NoAnswer => "no_answer",
            Outcome::Voicemail => "voicemail",
            Outcome::Failed => "failed",
            Outcome::ProviderError => "provider_error",
            Outcome::InternalError => "internal_error",
        }
    }

    /// Whether the call was picked up (by a person or a machine), so that it has talk time.
    pub fn is_answered(self) -> bool {
        matches!(self, Outcome::Connected | Outcome::Voicemail)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of [`Outcome::as_str`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown call outcome {0:?}; expected one of connected, busy, no_answer, voicemail, failed, provider_error, internal_error"
)]
pub struct UnknownOutcome(pub String);

impl FromStr for Outcome {
    type Err = UnknownOutcome;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Outcome::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| UnknownOutcome(s.to_owned()))
    }
}

/// The outcome of a dial and its timings.
///
/// The call starts at the request's `at`, rings for `ring`, then (when answered) lasts
/// `talk`. Durations have millisecond resolution and serialise as seconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DialResult {
    /// How the call ended.
    pub outcome: Outcome,
    /// From the dial until the call was answered, or until it ended unanswered.
    #[serde(with = "secs")]
    pub ring: Duration,
    /// From the answer to the hang-up. Zero unless [`Outcome::is_answered`].
    #[serde(with = "secs")]
    pub talk: Duration,
    /// Why the call did not connect: `None` for connected calls, otherwise a short
    /// snake_case reason (`busy`, `no_answer`, `voicemail`, `unallocated_number`, ...).
    pub failure_reason: Option<String>,
}

impl DialResult {
    /// The whole length of the call: ring plus talk.
    pub fn total(&self) -> Duration {
        self.ring + self.talk
    }

    /// When a call dialled at `at` ends.
    pub fn ends_at(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        at + self.total()
    }

    /// When a call dialled at `at` was answered, if it was.
    #[cfg(test)]
    pub(crate) fn answered_at(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.outcome.is_answered().then(|| at + self.ring)
    }
}

/// Serde adapter: a [`Duration`] as seconds (a number, millisecond precision).
pub(crate) mod secs {
    use chrono::Duration;
    use serde::{Deserialize, Deserializer, Serializer};

    use super::{MAX_SECS, secs_to_duration};

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.num_milliseconds() as f64 / 1000.0)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        if !v.is_finite() || !(0.0..=MAX_SECS).contains(&v) {
            return Err(serde::de::Error::custom(format!(
                "a duration must be 0 to {} seconds, got {v}",
                MAX_SECS
            )));
        }
        Ok(secs_to_duration(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_names_round_trip() {
        for o in Outcome::ALL {
            assert_eq!(o.as_str().parse::<Outcome>().unwrap(), o);
            assert_eq!(
                serde_json::to_string(&o).unwrap(),
                format!("\"{}\"", o.as_str())
            );
            assert_eq!(o.to_string(), o.as_str());
        }
        let err = "ringing".parse::<Outcome>().unwrap_err();
        assert!(err.to_string().contains("\"ringing\""), "{err}");
    }

    #[test]
    fn result_timings() {
        let at = DateTime::parse_from_rfc3339("2026-03-02T09:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let r = DialResult {
            outcome: Outcome::Connected,
            ring: Duration::milliseconds(4_500),
            talk: Duration::seconds(60),
            failure_reason: None,
        };
        assert_eq!(r.total(), Duration::milliseconds(64_500));
        assert_eq!(r.ends_at(at), at + Duration::milliseconds(64_500));
        assert_eq!(r.answered_at(at), Some(at + Duration::milliseconds(4_500)));
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            json,
            r#"{"outcome":"connected","ring":4.5,"talk":60.0,"failure_reason":null}"#
        );
        assert_eq!(serde_json::from_str::<DialResult>(&json).unwrap(), r);
        let busy = DialResult {
            outcome: Outcome::Busy,
            ring: Duration::seconds(2),
            talk: Duration::zero(),
            failure_reason: Some("busy".into()),
        };
        assert_eq!(busy.answered_at(at), None);
        assert!(
            serde_json::from_str::<DialResult>(
                r#"{"outcome":"busy","ring":-1,"talk":0,"failure_reason":null}"#
            )
            .is_err()
        );
    }
}
