//! The pure parts of dialling: which connection and number a dial uses, when the next dial
//! of a campaign may happen, what a call's outcome means for the user, and attempt ids.

use chrono::{DateTime, Duration, Utc};
use contracts::model::{RetryPolicy, WeightedConnection};
use contracts::wire::{CompletionStatus, ConnectivityStatus, NextActionStatus, RetryOutcome};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use telephony_sim::Outcome;

/// Rule 4: dials split by weight. Connection choice by smooth weighted round robin (as in
/// nginx): every dial, each connection's credit grows by its weight, the one with the most
/// credit is chosen and pays the total weight. Weights 3 and 1 give A A B A, A A B A, ...:
/// at every prefix each connection's share is within one dial of its weight's share.
/// Numbers within a connection are used in turn.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct Routing {
    /// Credit per connection.
    pub(crate) credit: Vec<i64>,
    /// Next number per connection.
    pub(crate) next_number: Vec<usize>,
}

impl Routing {
    /// Brings the state in line with a (possibly patched) connection list: new connections
    /// start at zero, removed ones are dropped.
    pub(crate) fn fit(&mut self, connections: &[WeightedConnection]) {
        self.credit.resize(connections.len(), 0);
        self.next_number.resize(connections.len(), 0);
        for (i, c) in connections.iter().enumerate() {
            if self.next_number[i] >= c.phone_numbers.len() {
                self.next_number[i] = 0;
            }
        }
    }

    /// Picks the connection and number of the next dial: `(connection index, number index)`.
    pub(crate) fn pick(&mut self, connections: &[WeightedConnection]) -> (usize, usize) {
        self.fit(connections);
        let total: i64 = connections.iter().map(|c| i64::from(c.weight)).sum();
        let mut best = 0;
        for (i, c) in connections.iter().enumerate() {
            self.credit[i] += i64::from(c.weight);
            if self.credit[i] > self.credit[best] {
                best = i;
            }
        }
        self.credit[best] -= total;
        let n = self.next_number[best];
        self.next_number[best] = (n + 1) % connections[best].phone_numbers.len();
        (best, n)
    }
}

/// Rule 2: `attempts_per_second` is a dial rate. Dial pacing at exactly
/// `attempts_per_second`: the k-th dial since the epoch is due at `epoch + k / rate`. The
/// epoch restarts whenever the campaign was idle (no user to dial, window closed, paused),
/// so an idle spell never turns into a burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pacing {
    /// The first dial of this run, in Unix microseconds.
    pub(crate) epoch_us: i64,
    /// Dials since the epoch.
    pub(crate) count: i64,
}

impl Pacing {
    /// When the next dial of this run is due at `rate` dials per second.
    pub(crate) fn next_slot(&self, rate: f64) -> DateTime<Utc> {
        micros(self.epoch_us + slot_offset_us(self.count, rate))
    }

    /// When the last dial of this pace was (its last slot taken), at `rate` dials per second.
    pub(crate) fn last_slot_us(&self, rate: f64) -> i64 {
        self.epoch_us + slot_offset_us((self.count - 1).max(0), rate)
    }

    /// How many dials the pace fits into one opening of the window `span` long, when the
    /// first is dialled as it opens: the slots `0, 1/rate, 2/rate, ...` (as [`Pacing::next_slot`]
    /// places them) that fall before it closes. An opening of 3,601 s at 0.3 a second fits
    /// 1,081, not the 1,080 of `floor(0.3 x 3601)`.
    pub(crate) fn dials_within(rate: f64, span: Duration) -> u64 {
        let span_us = span.num_microseconds().unwrap_or(i64::MAX);
        if span_us <= 0 || rate.is_nan() || rate <= 0.0 {
            return 0;
        }
        // An estimate, then the exact count by the slots' own arithmetic.
        let mut k = (span_us as f64 * rate / 1_000_000.0).ceil().max(0.0) as i64;
        while k > 0 && slot_offset_us(k - 1, rate) >= span_us {
            k -= 1;
        }
        while slot_offset_us(k, rate) < span_us {
            k += 1;
        }
        k as u64
    }
}

/// Microseconds from a pace's epoch to its `count`-th slot (from 0).
fn slot_offset_us(count: i64, rate: f64) -> i64 {
    (count as f64 * 1_000_000.0 / rate).ceil() as i64
}

/// An instant from Unix microseconds.
pub(crate) fn micros(us: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp_micros(us).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// What one call meant, from the telephony outcome and the talk time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallResult {
    /// Connected for at least `threshold_seconds`: the user is done.
    Completed,
    /// Connected, shorter than `threshold_seconds`.
    ShortDuration,
    /// Busy.
    Busy,
    /// Not answered; voicemail counts here (the person was not reached).
    NoAnswer,
    /// Could not be placed.
    Failed,
    /// The provider failed.
    ProviderError,
    /// The platform failed.
    InternalError,
}

impl CallResult {
    /// Every result.
    pub const ALL: [CallResult; 7] = [
        CallResult::Completed,
        CallResult::ShortDuration,
        CallResult::Busy,
        CallResult::NoAnswer,
        CallResult::Failed,
        CallResult::ProviderError,
        CallResult::InternalError,
    ];

    /// Classifies a call (rule 5: connected but shorter than the threshold is short).
    pub fn classify(outcome: Outcome, talk: Duration, threshold_seconds: u32) -> Self {
        match outcome {
            Outcome::Connected if talk < Duration::seconds(i64::from(threshold_seconds)) => {
                CallResult::ShortDuration
            }
            Outcome::Connected => CallResult::Completed,
            Outcome::Busy => CallResult::Busy,
            Outcome::NoAnswer | Outcome::Voicemail => CallResult::NoAnswer,
            Outcome::Failed => CallResult::Failed,
            Outcome::ProviderError => CallResult::ProviderError,
            Outcome::InternalError => CallResult::InternalError,
        }
    }

    /// The stored name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CallResult::Completed => "completed",
            CallResult::ShortDuration => "short_duration",
            CallResult::Busy => "busy",
            CallResult::NoAnswer => "no_answer",
            CallResult::Failed => "failed",
            CallResult::ProviderError => "provider_error",
            CallResult::InternalError => "internal_error",
        }
    }

    /// Parses a stored name.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        CallResult::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The `retry_on` value this result answers to (`None`: completed, never retried).
    pub(crate) fn retry_outcome(self) -> Option<RetryOutcome> {
        match self {
            CallResult::Completed => None,
            CallResult::ShortDuration => Some(RetryOutcome::ShortDuration),
            CallResult::Busy => Some(RetryOutcome::Busy),
            CallResult::NoAnswer => Some(RetryOutcome::NoAnswer),
            CallResult::Failed => Some(RetryOutcome::Failed),
            CallResult::ProviderError => Some(RetryOutcome::ProviderError),
            CallResult::InternalError => Some(RetryOutcome::InternalError),
        }
    }

    /// `completion_status` of the campaign event.
    pub(crate) fn completion(self) -> CompletionStatus {
        match self {
            CallResult::Completed => CompletionStatus::Completed,
            CallResult::ShortDuration => CompletionStatus::Partial,
            _ => CompletionStatus::Failed,
        }
    }

    /// `connectivity_status` of the campaign event (`None` when the call was never placed).
    pub(crate) fn connectivity(self) -> Option<ConnectivityStatus> {
        match self {
            CallResult::Completed | CallResult::ShortDuration => {
                Some(ConnectivityStatus::Connected)
            }
            CallResult::Busy => Some(ConnectivityStatus::Busy),
            CallResult::NoAnswer => Some(ConnectivityStatus::NoAnswer),
            CallResult::Failed => Some(ConnectivityStatus::Failed),
            CallResult::ProviderError | CallResult::InternalError => None,
        }
    }
}

/// What happens to a user after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NextStep {
    /// Dial again no sooner than this.
    Retry {
        /// The earliest next dial.
        due: DateTime<Utc>,
        /// `next_action_status` of the event.
        action: NextActionStatus,
    },
    /// No more dials.
    Done,
}

/// Rule 1 and the retry policy: a result is retried only when it is in `retry_on`, at most
/// `max_retries` times after the first dial, no sooner than `retry_interval_minutes` after
/// the attempt ended. `attempts` counts the dials made so far, this one included.
pub(crate) fn next_step(
    result: CallResult,
    attempts: u32,
    policy: &RetryPolicy,
    ended: DateTime<Utc>,
    window: &contracts::domain::schedule::CallingWindow,
) -> NextStep {
    let Some(outcome) = result.retry_outcome() else {
        return NextStep::Done;
    };
    if !policy.retries(outcome) || attempts >= policy.max_attempts() {
        return NextStep::Done;
    }
    let due = ended + Duration::minutes(i64::from(policy.retry_interval_minutes));
    let action = if !window.contains(due) {
        NextActionStatus::Reschedule
    } else {
        match result {
            CallResult::ShortDuration => NextActionStatus::ShortDurationRetry,
            CallResult::ProviderError => NextActionStatus::ProviderErrorRetry,
            CallResult::InternalError => NextActionStatus::InternalErrorRetry,
            _ => NextActionStatus::Retry,
        }
    };
    NextStep::Retry { due, action }
}

/// The id of a campaign dial: a UUIDv7 with the dial time, and random bits derived from the
/// seed and the dial's identity (campaign, cohort, row, attempt number), so that the same
/// dial has the same id when a restarted engine replays it, and no two dials share one.
pub(crate) fn campaign_attempt_id(
    seed: u64,
    campaign_id: &str,
    cohort_id: &str,
    row_no: u64,
    retry_attempt: u32,
    at: DateTime<Utc>,
) -> String {
    let mut h = Sha256::new();
    h.update(seed.to_be_bytes());
    h.update(campaign_id.as_bytes());
    h.update([0]);
    h.update(cohort_id.as_bytes());
    h.update([0]);
    h.update(row_no.to_be_bytes());
    h.update(retry_attempt.to_be_bytes());
    let digest = h.finalize();
    let mut rand = [0u8; 10];
    rand.copy_from_slice(&digest[..10]);
    let ms = u64::try_from(at.timestamp_millis()).unwrap_or(0);
    uuid::Builder::from_unix_timestamp_millis(ms, &rand)
        .into_uuid()
        .to_string()
}

/// The interaction id of an answered call, derived from its attempt or call id.
pub(crate) fn interaction_id(seed: u64, subject: &str) -> String {
    let mut h = Sha256::new();
    h.update(seed.to_be_bytes());
    h.update(b"interaction");
    h.update(subject.as_bytes());
    let digest = h.finalize();
    const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let mut out = String::from(contracts::ids::INTERACTION);
    for b in &digest[..20] {
        out.push(CROCKFORD[usize::from(b % 32)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use contracts::domain::phone::parse_e164;
    use rstest::rstest;

    fn conn(weight: u32, numbers: usize) -> WeightedConnection {
        WeightedConnection {
            connection_id: format!("c{weight}"),
            phone_numbers: (0..numbers)
                .map(|i| parse_e164(&format!("+1415555{i:04}")).unwrap())
                .collect(),
            weight,
        }
    }

    #[test]
    fn weights_3_and_1_split_750_250_within_one_at_every_prefix() {
        let conns = [conn(3, 2), conn(1, 3)];
        let mut r = Routing::default();
        let mut counts = [0u32; 2];
        let mut numbers = [[0u32; 3]; 2];
        for n in 1..=1000u32 {
            let (c, num) = r.pick(&conns);
            counts[c] += 1;
            numbers[c][num] += 1;
            let expected_a = f64::from(n) * 0.75;
            assert!(
                (f64::from(counts[0]) - expected_a).abs() <= 1.0,
                "prefix {n}: {counts:?}"
            );
        }
        assert_eq!(counts, [750, 250]);
        assert_eq!(
            numbers[0][..2],
            [375, 375],
            "numbers of a connection used equally"
        );
        assert!(
            numbers[1].iter().all(|n| (83..=84).contains(n)),
            "{:?}",
            numbers[1]
        );
    }

    #[rstest]
    #[case(vec![1, 1, 1])]
    #[case(vec![5, 3, 2])]
    #[case(vec![100, 1])]
    fn any_weights_track_their_share(#[case] weights: Vec<u32>) {
        let conns: Vec<_> = weights.iter().map(|w| conn(*w, 1)).collect();
        let total: u32 = weights.iter().sum();
        let mut r = Routing::default();
        let mut counts = vec![0u32; weights.len()];
        for n in 1..=2000u32 {
            counts[r.pick(&conns).0] += 1;
            for (i, w) in weights.iter().enumerate() {
                let share = f64::from(n) * f64::from(*w) / f64::from(total);
                assert!(
                    (f64::from(counts[i]) - share).abs() < 1.0 + 1e-9,
                    "{weights:?} at {n}: {counts:?}"
                );
            }
        }
    }

    #[rstest]
    #[case(2.0, 120)]
    #[case(0.1, 6)]
    #[case(3.0, 180)]
    #[case(500.0, 30_000)]
    fn pacing_places_exactly_the_rate(#[case] rate: f64, #[case] in_a_minute: i64) {
        let p0 = Pacing {
            epoch_us: 1_000_000_000,
            count: 0,
        };
        let minute_end = micros(p0.epoch_us + 60_000_000);
        let mut p = p0;
        let mut n = 0;
        while p.next_slot(rate) < minute_end {
            n += 1;
            p.count += 1;
        }
        assert_eq!(n, in_a_minute);
    }

    /// The count of dials an opening fits is the count of slots the pace places in it, for
    /// rates and spans where `floor(rate x span)` and `ceil` differ and where they agree.
    #[rstest]
    #[case(0.3, 3_601_000_000)]
    #[case(0.1, 3_600_000_000)]
    #[case(33.3, 3_600_000_000)]
    #[case(0.123, 3_600_000_000)]
    #[case(7.0, 59_999_999)]
    #[case(500.0, 1)]
    #[case(2.0, 0)]
    fn an_opening_fits_the_slots_the_pace_places(#[case] rate: f64, #[case] span_us: i64) {
        let p0 = Pacing {
            epoch_us: 1_000_000_000,
            count: 0,
        };
        let close = micros(p0.epoch_us + span_us);
        let mut p = p0;
        let mut n = 0u64;
        while p.next_slot(rate) < close {
            n += 1;
            p.count += 1;
        }
        assert_eq!(
            Pacing::dials_within(rate, Duration::microseconds(span_us)),
            n,
            "{rate}/s over {span_us} us"
        );
    }

    #[test]
    fn classification_and_retries() {
        use contracts::domain::schedule::{CallingWindow, TimeOfDay, WeekdaySet};
        let window = CallingWindow::new(
            chrono_tz::UTC,
            WeekdaySet::ALL,
            TimeOfDay::new(9, 0).unwrap(),
            TimeOfDay::new(17, 0).unwrap(),
        )
        .unwrap();
        assert_eq!(
            CallResult::classify(Outcome::Connected, Duration::seconds(5), 10),
            CallResult::ShortDuration
        );
        assert_eq!(
            CallResult::classify(Outcome::Connected, Duration::seconds(10), 10),
            CallResult::Completed
        );
        assert_eq!(
            CallResult::classify(Outcome::Voicemail, Duration::seconds(20), 10),
            CallResult::NoAnswer
        );
        let mut policy = RetryPolicy {
            max_retries: 2,
            retry_on: [RetryOutcome::Busy].into(),
            threshold_seconds: 10,
            retry_interval_minutes: 30,
        };
        let t = DateTime::parse_from_rfc3339("2026-03-02T10:00:00Z")
            .unwrap()
            .to_utc();
        assert!(matches!(
            next_step(CallResult::Busy, 1, &policy, t, &window),
            NextStep::Retry {
                action: NextActionStatus::Retry,
                ..
            }
        ));
        assert!(matches!(
            next_step(CallResult::Busy, 2, &policy, t, &window),
            NextStep::Retry { .. }
        ));
        assert_eq!(
            next_step(CallResult::Busy, 3, &policy, t, &window),
            NextStep::Done,
            "max_retries + 1 attempts"
        );
        assert_eq!(
            next_step(CallResult::NoAnswer, 1, &policy, t, &window),
            NextStep::Done,
            "not in retry_on"
        );
        assert_eq!(
            next_step(CallResult::ShortDuration, 1, &policy, t, &window),
            NextStep::Done
        );
        policy.retry_on.insert(RetryOutcome::ShortDuration);
        assert!(matches!(
            next_step(CallResult::ShortDuration, 1, &policy, t, &window),
            NextStep::Retry {
                action: NextActionStatus::ShortDurationRetry,
                ..
            }
        ));
        let late = DateTime::parse_from_rfc3339("2026-03-02T16:45:00Z")
            .unwrap()
            .to_utc();
        assert!(matches!(
            next_step(CallResult::Busy, 1, &policy, late, &window),
            NextStep::Retry {
                action: NextActionStatus::Reschedule,
                ..
            }
        ));
        assert_eq!(
            next_step(CallResult::Completed, 1, &policy, t, &window),
            NextStep::Done
        );
    }

    #[test]
    fn attempt_ids_are_stable_and_distinct() {
        let t = DateTime::parse_from_rfc3339("2026-03-02T10:00:00Z")
            .unwrap()
            .to_utc();
        let a = campaign_attempt_id(7, "camp-1", "coh-1", 1, 0, t);
        assert_eq!(a, campaign_attempt_id(7, "camp-1", "coh-1", 1, 0, t));
        assert_ne!(a, campaign_attempt_id(7, "camp-1", "coh-1", 1, 1, t));
        assert_ne!(a, campaign_attempt_id(7, "camp-1", "coh-1", 2, 0, t));
        assert_ne!(a, campaign_attempt_id(8, "camp-1", "coh-1", 1, 0, t));
        assert_eq!(uuid::Uuid::parse_str(&a).unwrap().get_version_num(), 7);
        assert!(interaction_id(7, &a).starts_with("int-"));
    }
}
