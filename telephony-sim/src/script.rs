//! The pieces of a scripted rule: which numbers it claims ([`NumberMatcher`]) and what they
//! answer ([`Script`] of [`Response`]s).

use std::fmt;

use chrono::Duration;

use crate::call::{DialResult, Outcome};

/// Which dialled numbers (`DialRequest::to`) a rule claims. Numbers are compared as
/// written, so give them in E.164 as the platform dials them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NumberMatcher {
    /// Exactly this number.
    Exact(String),
    /// Numbers starting with this text (a country or area code, say `+44` or `+1212`).
    Prefix(String),
    /// Numbers ending with this text (say `0101`).
    Suffix(String),
    /// Every number.
    Any,
}

impl NumberMatcher {
    /// Exactly `number`.
    pub fn exact(number: impl Into<String>) -> Self {
        NumberMatcher::Exact(number.into())
    }

    /// Numbers starting with `prefix`.
    pub fn prefix(prefix: impl Into<String>) -> Self {
        NumberMatcher::Prefix(prefix.into())
    }

    /// Numbers ending with `suffix`.
    pub fn suffix(suffix: impl Into<String>) -> Self {
        NumberMatcher::Suffix(suffix.into())
    }

    /// Every number.
    pub fn any() -> Self {
        NumberMatcher::Any
    }

    /// Whether `number` is claimed.
    pub(crate) fn matches(&self, number: &str) -> bool {
        match self {
            NumberMatcher::Exact(n) => number == n,
            NumberMatcher::Prefix(p) => number.starts_with(p.as_str()),
            NumberMatcher::Suffix(s) => number.ends_with(s.as_str()),
            NumberMatcher::Any => true,
        }
    }
}

impl fmt::Display for NumberMatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumberMatcher::Exact(n) => write!(f, "number {n:?}"),
            NumberMatcher::Prefix(p) => write!(f, "numbers starting {p:?}"),
            NumberMatcher::Suffix(s) => write!(f, "numbers ending {s:?}"),
            NumberMatcher::Any => write!(f, "any number"),
        }
    }
}

/// One scripted answer: an outcome with explicit timings.
///
/// The constructors give fixed, documented timings (the same as the magic numbers'); change
/// the ring time with [`Response::ring`].
///
/// | Constructor | Outcome | Ring | Talk | `failure_reason` |
/// |---|---|---|---|---|
/// | [`Response::connected`]`(secs)` | connected | 5 s | `secs` | none |
/// | [`Response::busy`] | busy | 2 s | 0 | `busy` |
/// | [`Response::no_answer`] | no_answer | 30 s | 0 | `no_answer` |
/// | [`Response::voicemail`] | voicemail | 20 s | 25 s | `voicemail` |
/// | [`Response::voicemail_for`]`(secs)` | voicemail | 20 s | `secs` | `voicemail` |
/// | [`Response::failed`]`(reason)` | failed | 2 s | 0 | `reason` |
/// | [`Response::provider_error`] | provider_error | 0 s | 0 | `provider_error` |
/// | [`Response::internal_error`] | internal_error | 0 s | 0 | `internal_error` |
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    result: DialResult,
}

impl Response {
    fn unanswered(outcome: Outcome, ring_secs: i64, reason: &str) -> Self {
        Response {
            result: DialResult {
                outcome,
                ring: Duration::seconds(ring_secs),
                talk: Duration::zero(),
                failure_reason: Some(reason.to_owned()),
            },
        }
    }

    /// A person answers after 5 s and talks for `talk_secs`.
    pub fn connected(talk_secs: u32) -> Self {
        Response {
            result: DialResult {
                outcome: Outcome::Connected,
                ring: Duration::seconds(5),
                talk: Duration::seconds(i64::from(talk_secs)),
                failure_reason: None,
            },
        }
    }

    /// Busy after 2 s.
    pub fn busy() -> Self {
        Response::unanswered(Outcome::Busy, 2, "busy")
    }

    /// Rings 30 s, nobody answers.
    pub fn no_answer() -> Self {
        Response::unanswered(Outcome::NoAnswer, 30, "no_answer")
    }

    /// An answering machine picks up after 20 s; the call lasts 25 s more.
    pub fn voicemail() -> Self {
        Response::voicemail_for(25)
    }

    /// An answering machine picks up after 20 s; the call lasts `talk_secs` more.
    pub fn voicemail_for(talk_secs: u32) -> Self {
        Response {
            result: DialResult {
                outcome: Outcome::Voicemail,
                ring: Duration::seconds(20),
                talk: Duration::seconds(i64::from(talk_secs)),
                failure_reason: Some("voicemail".to_owned()),
            },
        }
    }

    /// The network fails the call after 2 s with `reason` as `failure_reason`.
    pub fn failed(reason: impl Into<String>) -> Self {
        let mut r = Response::unanswered(Outcome::Failed, 2, "");
        r.result.failure_reason = Some(reason.into());
        r
    }

    /// The provider fails at once.
    pub fn provider_error() -> Self {
        Response::unanswered(Outcome::ProviderError, 0, "provider_error")
    }

    /// The platform's telephony layer fails at once.
    pub fn internal_error() -> Self {
        Response::unanswered(Outcome::InternalError, 0, "internal_error")
    }

    /// The same answer with a ring time of `secs`.
    pub fn ring(mut self, secs: u32) -> Self {
        self.result.ring = Duration::seconds(i64::from(secs));
        self
    }

    /// The outcome this answer gives.
    pub(crate) fn outcome(&self) -> Outcome {
        self.result.outcome
    }

    /// The dial result this answer gives.
    pub(crate) fn result(&self) -> &DialResult {
        &self.result
    }
}

impl From<Response> for DialResult {
    fn from(r: Response) -> Self {
        r.result
    }
}

/// What a rule answers to the dials it claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    kind: ScriptKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ScriptKind {
    Always(Response),
    Sequence(Vec<Response>),
    ByAttempt(Vec<Response>),
}

/// A script that could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// A sequence needs at least one response.
    #[error("a script sequence needs at least one response")]
    EmptySequence,
}

impl Script {
    /// The same answer to every claimed dial.
    pub fn always(response: Response) -> Self {
        Script {
            kind: ScriptKind::Always(response),
        }
    }

    /// Successive claimed dials take successive responses; once they run out, the last one
    /// repeats. The position counts dials in the order the simulator receives them, so it
    /// restarts with a new simulator (see [`Script::by_attempt`] for a script that
    /// survives a replay).
    ///
    /// # Panics
    /// When `responses` is empty (see [`Script::try_sequence`]).
    pub fn sequence(responses: Vec<Response>) -> Self {
        Script::try_sequence(responses).expect("Script::sequence needs at least one response")
    }

    /// [`Script::sequence`] that reports an empty list instead of panicking.
    pub fn try_sequence(responses: Vec<Response>) -> Result<Self, ScriptError> {
        if responses.is_empty() {
            return Err(ScriptError::EmptySequence);
        }
        Ok(Script {
            kind: ScriptKind::Sequence(responses),
        })
    }

    /// A response per attempt index: a user's first dial (`attempt_index` 0) takes the
    /// first response, the first retry the second, and later retries the last. Unlike
    /// [`Script::sequence`], this depends only on the request, so a campaign replayed on a
    /// fresh simulator gets the same answers.
    ///
    /// # Panics
    /// When `responses` is empty (see [`Script::try_by_attempt`]).
    pub fn by_attempt(responses: Vec<Response>) -> Self {
        Script::try_by_attempt(responses).expect("Script::by_attempt needs at least one response")
    }

    /// [`Script::by_attempt`] that reports an empty list instead of panicking.
    pub fn try_by_attempt(responses: Vec<Response>) -> Result<Self, ScriptError> {
        if responses.is_empty() {
            return Err(ScriptError::EmptySequence);
        }
        Ok(Script {
            kind: ScriptKind::ByAttempt(responses),
        })
    }

    /// The response for the rule's `hit`-th claimed dial (0-based) with `attempt_index`,
    /// and its position in the script.
    pub(crate) fn pick(&self, hit: u64, attempt_index: u32) -> (usize, &Response) {
        fn pick_in(list: &[Response], i: u64) -> (usize, &Response) {
            let i = usize::try_from(i).unwrap_or(usize::MAX).min(list.len() - 1);
            (i, &list[i])
        }
        match &self.kind {
            ScriptKind::Always(r) => (0, r),
            ScriptKind::Sequence(list) => pick_in(list, hit),
            ScriptKind::ByAttempt(list) => pick_in(list, u64::from(attempt_index)),
        }
    }
}

impl fmt::Display for Script {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |list: &[Response]| {
            list.iter()
                .map(|r| r.outcome().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &self.kind {
            ScriptKind::Always(r) => write!(f, "always {}", r.outcome()),
            ScriptKind::Sequence(list) => write!(f, "sequence [{}]", names(list)),
            ScriptKind::ByAttempt(list) => write!(f, "by attempt [{}]", names(list)),
        }
    }
}

impl From<Response> for Script {
    fn from(r: Response) -> Self {
        Script::always(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers() {
        let n = "+12025550101";
        assert!(NumberMatcher::exact(n).matches(n));
        assert!(!NumberMatcher::exact(n).matches("+120255501011"));
        assert!(NumberMatcher::prefix("+1202").matches(n));
        assert!(!NumberMatcher::prefix("+44").matches(n));
        assert!(NumberMatcher::suffix("0101").matches(n));
        assert!(!NumberMatcher::suffix("0102").matches(n));
        assert!(NumberMatcher::any().matches(""));
        assert_eq!(
            NumberMatcher::suffix("01").to_string(),
            "numbers ending \"01\""
        );
    }

    #[test]
    fn scripts_pick_and_repeat_the_last() {
        let seq = Script::sequence(vec![Response::busy(), Response::connected(3)]);
        assert_eq!(seq.pick(0, 9).1.outcome(), Outcome::Busy);
        assert_eq!(seq.pick(1, 0).1.outcome(), Outcome::Connected);
        assert_eq!(seq.pick(u64::MAX, 0), (1, &Response::connected(3)));
        let by = Script::by_attempt(vec![Response::no_answer(), Response::busy()]);
        assert_eq!(by.pick(5, 0).1.outcome(), Outcome::NoAnswer);
        assert_eq!(by.pick(0, 1).1.outcome(), Outcome::Busy);
        assert_eq!(by.pick(0, u32::MAX).0, 1);
        assert_eq!(Script::always(Response::busy()).pick(7, 7).0, 0);
        assert_eq!(
            Script::try_sequence(vec![]),
            Err(ScriptError::EmptySequence)
        );
        assert_eq!(
            Script::try_by_attempt(vec![]),
            Err(ScriptError::EmptySequence)
        );
        assert_eq!(seq.to_string(), "sequence [busy, connected]");
    }

    #[test]
    fn response_timings() {
        let r = Response::failed("unallocated_number").ring(7);
        assert_eq!(r.result().ring, Duration::seconds(7));
        assert_eq!(
            r.result().failure_reason.as_deref(),
            Some("unallocated_number")
        );
        let v = Response::voicemail();
        assert_eq!(v.result().total(), Duration::seconds(45));
        let c: DialResult = Response::connected(90).into();
        assert_eq!(c.total(), Duration::seconds(95));
        assert_eq!(c.failure_reason, None);
    }
}
