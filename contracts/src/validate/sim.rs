//! Bodies of the simulation API.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::{Ctx, Options, limits};
use crate::domain::phone::E164;
use crate::error::{ErrorType, Loc, ValidationErrors};

/// How far to move a simulated clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    /// Forward by this much.
    By(Duration),
    /// To this instant.
    To(DateTime<Utc>),
}

/// Checks `{"seconds": n}` or `{"to": "<instant>"}` (exactly one; seconds at least 0 and at
/// most [`limits::CLOCK_MOVE_MAX_SECS`]; the same bound for `to` is checked against the
/// clock by whoever moves it, see [`clock_move_too_far`]).
pub fn clock_advance(body: &Value, opts: Options) -> Result<Advance, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let loc = Loc::body();
    let out = c.object(body, &loc, &["seconds", "to"]).and_then(|m| {
        let seconds = Ctx::optional(m, "seconds").map(|v| {
            c.number_in(
                v,
                &loc.at("seconds"),
                0.0,
                limits::CLOCK_MOVE_MAX_SECS as f64,
            )
        });
        let to = Ctx::optional(m, "to").map(|v| c.timestamp(v, &loc.at("to")));
        match (seconds, to) {
            (Some(s), None) => {
                s.map(|s| Advance::By(Duration::microseconds((s * 1e6).round() as i64)))
            }
            (None, Some(t)) => t.map(Advance::To),
            (Some(_), Some(_)) => {
                c.value_error(&loc, "give either seconds or to, not both");
                None
            }
            (None, None) => {
                c.add(
                    &loc.at("seconds"),
                    ErrorType::Missing,
                    "Field required (or give to)",
                );
                None
            }
        }
    });
    c.into_result(out)
}

/// The failure of a move of the simulated clock from `current` to `target` farther than
/// [`limits::CLOCK_MOVE_MAX_SECS`], reported at `field` of the body (`to` or `now`); `None`
/// when the move is within the bound.
pub fn clock_move_too_far(
    current: DateTime<Utc>,
    target: DateTime<Utc>,
    field: &str,
) -> Option<ValidationErrors> {
    let max = Duration::seconds(limits::CLOCK_MOVE_MAX_SECS);
    (target - current > max).then(|| {
        ValidationErrors::single(
            &Loc::body().at(field),
            ErrorType::ValueError,
            format!(
                "the simulated clock moves at most {} days at a time; it is {}, so {field} may be at most {}",
                limits::CLOCK_MOVE_MAX_SECS / 86_400,
                crate::clock::format_instant(current),
                crate::clock::format_instant(current + max),
            ),
        )
    })
}

/// Checks `{"now": "<instant>"}`.
pub fn clock_set(body: &Value, opts: Options) -> Result<DateTime<Utc>, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let loc = Loc::body();
    let out = c.object(body, &loc, &["now"]).and_then(|m| {
        c.required(m, "now", &loc)
            .and_then(|v| c.timestamp(v, &loc.at("now")))
    });
    c.into_result(out)
}

/// Checks `{"caller": "+...", "dialled": "+..."}` (both E.164).
pub fn inbound_call(body: &Value, opts: Options) -> Result<(E164, E164), ValidationErrors> {
    let mut c = Ctx::new(opts);
    let loc = Loc::body();
    let out = c.object(body, &loc, &["caller", "dialled"]).and_then(|m| {
        let caller = c
            .required(m, "caller", &loc)
            .and_then(|v| c.e164(v, &loc.at("caller")));
        let dialled = c
            .required(m, "dialled", &loc)
            .and_then(|v| c.e164(v, &loc.at("dialled")));
        Some((caller?, dialled?))
    });
    c.into_result(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn advance_takes_one_of_seconds_or_to() {
        let o = Options::default();
        assert_eq!(
            clock_advance(&json!({"seconds": 1.5}), o).unwrap(),
            Advance::By(Duration::milliseconds(1500))
        );
        assert!(matches!(
            clock_advance(&json!({"to": "2026-03-02T12:00:00Z"}), o).unwrap(),
            Advance::To(_)
        ));
        for bad in [
            json!({}),
            json!({"seconds": -1}),
            json!({"seconds": 1, "to": "2026-03-02T12:00:00Z"}),
            json!({"to": "soon"}),
        ] {
            assert!(clock_advance(&bad, o).is_err(), "{bad}");
        }
    }

    #[test]
    fn inbound_numbers_must_be_e164() {
        let o = Options::default();
        assert!(
            inbound_call(
                &json!({"caller": "+919876543210", "dialled": "+14155550100"}),
                o
            )
            .is_ok()
        );
        let e = inbound_call(&json!({"caller": "98765", "dialled": 1}), o).unwrap_err();
        assert_eq!(e.details().len(), 2);
        assert!(clock_set(&json!({"now": "2026-03-02T12:00:00Z"}), o).is_ok());
        assert!(clock_set(&json!({}), o).is_err());
    }

    #[test]
    fn a_target_instant_is_bounded_like_seconds() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-03-02T12:00:00Z")
            .unwrap()
            .to_utc();
        let max = Duration::seconds(limits::CLOCK_MOVE_MAX_SECS);
        assert!(clock_move_too_far(now, now + max, "to").is_none());
        let e = clock_move_too_far(now, now + max + Duration::milliseconds(1), "to").unwrap();
        assert!(e.details()[0].msg.contains("at most 400 days"), "{e:?}");
        let year_9999 = chrono::DateTime::parse_from_rfc3339("9999-01-01T00:00:00Z")
            .unwrap()
            .to_utc();
        assert!(clock_move_too_far(now, year_9999, "now").is_some());
    }
}
