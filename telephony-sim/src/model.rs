//! The seeded statistical model of call outcomes and timings: [`Model`].

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::call::{DialResult, MAX_SECS, Outcome, secs_to_duration};
use crate::draw::Draw;

/// A range of seconds from which a duration is drawn uniformly, `[min, max)`; a fixed
/// duration when `min == max`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecondsRange {
    /// The shortest duration, in seconds.
    pub(crate) min: f64,
    /// The longest duration, in seconds.
    pub(crate) max: f64,
}

impl SecondsRange {
    /// `[min, max)` seconds.
    pub const fn new(min: f64, max: f64) -> Self {
        SecondsRange { min, max }
    }

    pub(crate) fn sample(&self, d: &mut Draw) -> f64 {
        d.uniform(self.min, self.max)
    }
}

impl fmt::Display for SecondsRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} to {} s", self.min, self.max)
    }
}

/// The statistical model of a dial: how often each outcome happens and how long each kind
/// of call rings and talks. Numbers that no rule or magic number claims follow it.
///
/// Every field is a parameter; [`Model::default`] is the documented default model (see the
/// crate documentation). Build a variant with struct update syntax and check it with
/// [`Model::validate`] (which [`crate::TelephonySim::with_model`] does):
///
/// ```
/// use telephony_sim::{Model, SecondsRange};
///
/// let model = Model {
///     connected_rate: 0.30,
///     no_answer_rate: 0.35,
///     voicemail_talk_secs: SecondsRange::new(5.0, 20.0),
///     ..Model::default()
/// };
/// model.validate().unwrap();
/// // Voicemail takes the rest: 1 - (0.30 + 0.35 + 0.07 + 0.08).
/// assert!((model.voicemail_rate() - 0.20).abs() < 1e-9);
///
/// let too_much = Model { connected_rate: 0.9, ..Model::default() };
/// let err = too_much.validate().unwrap_err();
/// assert!(err.to_string().contains("more than 1"), "{err}");
/// ```
///
/// It deserialises from any serde format with every field optional (missing fields take
/// their default) and unknown fields refused, so a scenario file can say just
/// `connected_rate = 0.3`. Durations are seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Model {
    /// Share of dials a person answers. Default 0.20.
    pub connected_rate: f64,
    /// Share of dials nobody answers before [`Model::no_answer_timeout_secs`]. Default 0.40.
    pub no_answer_rate: f64,
    /// Share of dials that find the line busy. Default 0.07.
    pub busy_rate: f64,
    /// Share of dials the network fails (reason drawn from [`Model::failed_reasons`]).
    /// Default 0.08.
    pub failed_rate: f64,
    /// Share of dials lost to a provider error. Default 0.
    pub provider_error_rate: f64,
    /// Share of dials lost to an internal error. Default 0.
    pub internal_error_rate: f64,
    /// How long an unanswered call rings before it is given up (the ring time of every
    /// `no_answer`). Default 30 s.
    pub no_answer_timeout_secs: f64,
    /// Ring time of a connected call. Default 3 to 15 s.
    pub connected_ring_secs: SecondsRange,
    /// Time until a busy signal. Default 1 to 4 s.
    pub busy_ring_secs: SecondsRange,
    /// Time until a network failure. Default 1 to 4 s.
    pub failed_ring_secs: SecondsRange,
    /// Ring time before an answering machine picks up. Default 15 to 25 s.
    pub voicemail_ring_secs: SecondsRange,
    /// Time until a provider or internal error. Default 0 to 1 s.
    pub error_ring_secs: SecondsRange,
    /// Share of connected calls that are short (the person hangs up at once). Default 0.30.
    pub short_call_share: f64,
    /// Talk time of a short call, uniform. Default 2 to 15 s.
    pub short_call_secs: SecondsRange,
    /// Median talk time of the other connected calls, which are log-normal. Default 90 s.
    pub long_call_median_secs: f64,
    /// Sigma of that log-normal (the standard deviation of the natural logarithm of the
    /// talk time), 0 to 5. Default 0.6: half of the long calls last between 60 and 135 s.
    pub long_call_sigma: f64,
    /// No talk time exceeds this. Default 3600 s (one hour).
    pub talk_cap_secs: f64,
    /// Talk time of a voicemail: the greeting, the beep, perhaps a message. Default 10 to
    /// 40 s.
    pub voicemail_talk_secs: SecondsRange,
    /// Time before an inbound call is answered (see
    /// [`crate::TelephonySim::answer_inbound`]). Default 1 to 3 s.
    pub inbound_ring_secs: SecondsRange,
    /// The `failure_reason`s of failed calls, drawn uniformly. Default
    /// `unallocated_number`, `call_rejected`, `network_unreachable`, `congestion`.
    pub failed_reasons: Vec<String>,
    /// Whether the magic numbers of the crate documentation apply. Default true; when
    /// false, they follow the model like any other number.
    pub magic_numbers: bool,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            connected_rate: 0.20,
            no_answer_rate: 0.40,
            busy_rate: 0.07,
            failed_rate: 0.08,
            provider_error_rate: 0.0,
            internal_error_rate: 0.0,
            no_answer_timeout_secs: 30.0,
            connected_ring_secs: SecondsRange::new(3.0, 15.0),
            busy_ring_secs: SecondsRange::new(1.0, 4.0),
            failed_ring_secs: SecondsRange::new(1.0, 4.0),
            voicemail_ring_secs: SecondsRange::new(15.0, 25.0),
            error_ring_secs: SecondsRange::new(0.0, 1.0),
            short_call_share: 0.30,
            short_call_secs: SecondsRange::new(2.0, 15.0),
            long_call_median_secs: 90.0,
            long_call_sigma: 0.6,
            talk_cap_secs: 3600.0,
            voicemail_talk_secs: SecondsRange::new(10.0, 40.0),
            inbound_ring_secs: SecondsRange::new(1.0, 3.0),
            failed_reasons: [
                "unallocated_number",
                "call_rejected",
                "network_unreachable",
                "congestion",
            ]
            .map(String::from)
            .to_vec(),
            magic_numbers: true,
        }
    }
}

/// One thing wrong with a [`Model`]. Field names are those of the struct (and of its serde
/// form), so the message says what to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelProblem {
    /// A rate or share outside `[0, 1]`, or not a number.
    #[error("{field} must be between 0 and 1, got {value}")]
    RateOutOfRange {
        /// The field.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// The outcome rates add up to more than 1 (voicemail takes what they leave).
    #[error(
        "the outcome rates (connected, no_answer, busy, failed, provider_error, internal_error) add up to {sum}, more than 1"
    )]
    RatesAboveOne {
        /// Their sum.
        sum: f64,
    },
    /// A duration that is not a finite number of seconds in its allowed interval.
    #[error("{field} must be {expected}, got {value}")]
    BadDuration {
        /// The field.
        field: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },
    /// A range whose ends are not finite, negative, above [`MAX_SECS`], or the wrong way
    /// round.
    #[error("{field} must satisfy 0 <= min <= max <= {MAX_SECS} seconds, got min {min}, max {max}")]
    BadRange {
        /// The field.
        field: &'static str,
        /// Its `min`.
        min: f64,
        /// Its `max`.
        max: f64,
    },
    /// A call that rings longer than the no-answer timeout could never be answered.
    #[error(
        "{field}.max ({max} s) is longer than no_answer_timeout_secs ({timeout} s): the caller would have hung up"
    )]
    RingsPastTimeout {
        /// The field.
        field: &'static str,
        /// Its `max`.
        max: f64,
        /// The timeout.
        timeout: f64,
    },
    /// `failed_reasons` is empty or holds an empty string.
    #[error("failed_reasons must list at least one reason and no empty one")]
    BadFailedReasons,
}

/// Why a [`Model`] was refused: every problem found, not only the first.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ModelError {
    /// The problems, in field order.
    pub problems: Vec<ModelProblem>,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid telephony model: ")?;
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                write!(f, "; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl Model {
    /// The voicemail rate: what the other outcome rates leave (never below 0).
    pub fn voicemail_rate(&self) -> f64 {
        (1.0 - self.rates_sum()).max(0.0)
    }

    fn rates_sum(&self) -> f64 {
        self.connected_rate
            + self.no_answer_rate
            + self.busy_rate
            + self.failed_rate
            + self.provider_error_rate
            + self.internal_error_rate
    }

    /// The rate of each outcome, in the order the model draws them.
    pub(crate) fn rates(&self) -> [(Outcome, f64); 7] {
        [
            (Outcome::Connected, self.connected_rate),
            (Outcome::NoAnswer, self.no_answer_rate),
            (Outcome::Busy, self.busy_rate),
            (Outcome::Failed, self.failed_rate),
            (Outcome::ProviderError, self.provider_error_rate),
            (Outcome::InternalError, self.internal_error_rate),
            (Outcome::Voicemail, self.voicemail_rate()),
        ]
    }

    /// Checks every parameter: rates in `[0, 1]` adding up to at most 1, ranges with
    /// `0 <= min <= max <= MAX_SECS`, a timeout, median and cap above 0 and at most
    /// `MAX_SECS`, a sigma from 0 to 5, connected and voicemail rings that end by the
    /// no-answer timeout, and at least one failure reason. Lists every problem found.
    pub fn validate(&self) -> Result<(), ModelError> {
        let mut problems = Vec::new();
        let rates = [
            ("connected_rate", self.connected_rate),
            ("no_answer_rate", self.no_answer_rate),
            ("busy_rate", self.busy_rate),
            ("failed_rate", self.failed_rate),
            ("provider_error_rate", self.provider_error_rate),
            ("internal_error_rate", self.internal_error_rate),
        ];
        let mut rates_ok = true;
        for (field, value) in rates {
            if !(0.0..=1.0).contains(&value) {
                rates_ok = false;
                problems.push(ModelProblem::RateOutOfRange { field, value });
            }
        }
        // A little slack for sums such as 0.1 + 0.2 + 0.7 that floating point puts above 1.
        let sum = self.rates_sum();
        if rates_ok && sum > 1.0 + 1e-9 {
            problems.push(ModelProblem::RatesAboveOne { sum });
        }
        let positive = |field: &'static str, value: f64, problems: &mut Vec<_>| {
            if !(value > 0.0 && value <= MAX_SECS) {
                problems.push(ModelProblem::BadDuration {
                    field,
                    value,
                    expected: "above 0 and at most 86400 seconds",
                });
            }
        };
        positive(
            "no_answer_timeout_secs",
            self.no_answer_timeout_secs,
            &mut problems,
        );
        let ranges = [
            ("connected_ring_secs", self.connected_ring_secs),
            ("busy_ring_secs", self.busy_ring_secs),
            ("failed_ring_secs", self.failed_ring_secs),
            ("voicemail_ring_secs", self.voicemail_ring_secs),
            ("error_ring_secs", self.error_ring_secs),
        ];
        for (field, r) in ranges {
            check_range(field, r, &mut problems);
        }
        // Only calls that are answered must be answered before the caller gives up.
        for (field, r) in [
            ("connected_ring_secs", self.connected_ring_secs),
            ("voicemail_ring_secs", self.voicemail_ring_secs),
        ] {
            if r.max > self.no_answer_timeout_secs && self.no_answer_timeout_secs > 0.0 {
                problems.push(ModelProblem::RingsPastTimeout {
                    field,
                    max: r.max,
                    timeout: self.no_answer_timeout_secs,
                });
            }
        }
        if !(0.0..=1.0).contains(&self.short_call_share) {
            problems.push(ModelProblem::RateOutOfRange {
                field: "short_call_share",
                value: self.short_call_share,
            });
        }
        check_range("short_call_secs", self.short_call_secs, &mut problems);
        positive(
            "long_call_median_secs",
            self.long_call_median_secs,
            &mut problems,
        );
        if !(self.long_call_sigma >= 0.0 && self.long_call_sigma <= 5.0) {
            problems.push(ModelProblem::BadDuration {
                field: "long_call_sigma",
                value: self.long_call_sigma,
                expected: "between 0 and 5",
            });
        }
        positive("talk_cap_secs", self.talk_cap_secs, &mut problems);
        check_range(
            "voicemail_talk_secs",
            self.voicemail_talk_secs,
            &mut problems,
        );
        check_range("inbound_ring_secs", self.inbound_ring_secs, &mut problems);
        if self.failed_reasons.is_empty() || self.failed_reasons.iter().any(|r| r.is_empty()) {
            problems.push(ModelProblem::BadFailedReasons);
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ModelError { problems })
        }
    }

    fn pick_outcome(&self, u: f64) -> Outcome {
        let rates = self.rates();
        let mut cumulative = 0.0;
        for (outcome, rate) in rates {
            cumulative += rate;
            if u < cumulative {
                return outcome;
            }
        }
        // Rates that add up to 1 may leave a rounding sliver above their sum: give it to the
        // last outcome that can happen at all.
        rates
            .iter()
            .rev()
            .find(|(_, rate)| *rate > 0.0)
            .map_or(Outcome::Voicemail, |(o, _)| *o)
    }

    /// Draws the talk time of a connected call, in seconds.
    pub(crate) fn sample_connected_talk(&self, d: &mut Draw) -> f64 {
        let secs = if d.unit() < self.short_call_share {
            self.short_call_secs.sample(d)
        } else {
            (self.long_call_median_secs.ln() + self.long_call_sigma * d.standard_normal()).exp()
        };
        secs.min(self.talk_cap_secs)
    }

    /// Draws one dial: the outcome first, then its ring, talk and reason.
    pub(crate) fn sample_dial(&self, d: &mut Draw) -> DialResult {
        let outcome = self.pick_outcome(d.unit());
        let (ring, talk, reason) = match outcome {
            Outcome::Connected => {
                let ring = self.connected_ring_secs.sample(d);
                (ring, self.sample_connected_talk(d), None)
            }
            Outcome::NoAnswer => (self.no_answer_timeout_secs, 0.0, Some("no_answer".into())),
            Outcome::Busy => (self.busy_ring_secs.sample(d), 0.0, Some("busy".into())),
            Outcome::Voicemail => {
                let ring = self.voicemail_ring_secs.sample(d);
                let talk = self.voicemail_talk_secs.sample(d).min(self.talk_cap_secs);
                (ring, talk, Some("voicemail".into()))
            }
            Outcome::Failed => {
                let ring = self.failed_ring_secs.sample(d);
                let reason = self.failed_reasons[d.index(self.failed_reasons.len())].clone();
                (ring, 0.0, Some(reason))
            }
            Outcome::ProviderError => (
                self.error_ring_secs.sample(d),
                0.0,
                Some("provider_error".into()),
            ),
            Outcome::InternalError => (
                self.error_ring_secs.sample(d),
                0.0,
                Some("internal_error".into()),
            ),
        };
        DialResult {
            outcome,
            ring: secs_to_duration(ring),
            talk: secs_to_duration(talk),
            failure_reason: reason,
        }
    }
}

fn check_range(field: &'static str, r: SecondsRange, problems: &mut Vec<ModelProblem>) {
    let ok = r.min.is_finite()
        && r.max.is_finite()
        && r.min >= 0.0
        && r.min <= r.max
        && r.max <= MAX_SECS;
    if !ok {
        problems.push(ModelProblem::BadRange {
            field,
            min: r.min,
            max: r.max,
        });
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::draw::Key;

    #[test]
    fn default_model_is_valid_and_leaves_a_quarter_to_voicemail() {
        let m = Model::default();
        m.validate().unwrap();
        assert!((m.voicemail_rate() - 0.25).abs() < 1e-12);
    }

    #[test]
    fn pick_outcome_follows_cumulative_rates() {
        let m = Model::default();
        // connected [0, .2), no_answer [.2, .6), busy [.6, .67), failed [.67, .75),
        // voicemail [.75, 1).
        assert_eq!(m.pick_outcome(0.0), Outcome::Connected);
        assert_eq!(m.pick_outcome(0.199), Outcome::Connected);
        assert_eq!(m.pick_outcome(0.2), Outcome::NoAnswer);
        assert_eq!(m.pick_outcome(0.65), Outcome::Busy);
        assert_eq!(m.pick_outcome(0.7), Outcome::Failed);
        assert_eq!(m.pick_outcome(0.8), Outcome::Voicemail);
        let all_busy = Model {
            connected_rate: 0.0,
            no_answer_rate: 0.0,
            busy_rate: 1.0,
            failed_rate: 0.0,
            ..Model::default()
        };
        assert_eq!(all_busy.pick_outcome(0.999_999_999), Outcome::Busy);
        // Rates whose float sum lands a hair below 1: the sliver goes to the last possible
        // outcome, never to voicemail, whose rate is 0.
        let thirds = Model {
            connected_rate: 0.1,
            no_answer_rate: 0.2,
            busy_rate: 0.0,
            failed_rate: 0.0,
            provider_error_rate: 0.7 - 1e-17,
            ..Model::default()
        };
        assert_eq!(
            thirds.pick_outcome(1.0 - f64::EPSILON),
            Outcome::ProviderError
        );
    }

    #[test]
    fn sampled_timings_stay_in_their_ranges() {
        let m = Model::default();
        for i in 0..20_000 {
            let mut d = Key::new("model-test", 1).int(i).draw();
            let r = m.sample_dial(&mut d);
            let ring = r.ring.num_milliseconds() as f64 / 1000.0;
            let talk = r.talk.num_milliseconds() as f64 / 1000.0;
            let within = |range: SecondsRange, v: f64| range.min <= v && v <= range.max;
            match r.outcome {
                Outcome::Connected => {
                    assert!(within(m.connected_ring_secs, ring), "{r:?}");
                    assert!(talk > 0.0 && talk <= m.talk_cap_secs, "{r:?}");
                    assert_eq!(r.failure_reason, None);
                }
                Outcome::NoAnswer => {
                    assert_eq!(r.ring, Duration::seconds(30));
                    assert_eq!(talk, 0.0);
                }
                Outcome::Busy => assert!(within(m.busy_ring_secs, ring) && talk == 0.0),
                Outcome::Failed => {
                    assert!(within(m.failed_ring_secs, ring) && talk == 0.0);
                    assert!(
                        m.failed_reasons
                            .contains(r.failure_reason.as_ref().unwrap())
                    );
                }
                Outcome::Voicemail => {
                    assert!(within(m.voicemail_ring_secs, ring), "{r:?}");
                    assert!(within(m.voicemail_talk_secs, talk), "{r:?}");
                    assert_eq!(r.failure_reason.as_deref(), Some("voicemail"));
                }
                Outcome::ProviderError | Outcome::InternalError => {
                    panic!("rate 0 in the default model: {r:?}")
                }
            }
        }
    }

    #[test]
    fn talk_cap_applies_to_every_connected_call() {
        let m = Model {
            talk_cap_secs: 60.0,
            ..Model::default()
        };
        let mut at_cap = 0;
        for i in 0..2_000 {
            let mut d = Key::new("cap", 1).int(i).draw();
            let t = m.sample_connected_talk(&mut d);
            assert!(t <= 60.0);
            if t == 60.0 {
                at_cap += 1;
            }
        }
        // P(long) * P(log-normal above 60 s) = 0.7 * 0.75 = 0.52 of the calls sit at the cap.
        assert!((900..1200).contains(&at_cap), "{at_cap}");
    }
}
