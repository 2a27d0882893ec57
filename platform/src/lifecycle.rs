//! The campaign life cycle as one function of the clock: the one owner of when `scheduled`
//! becomes `active` and `active` becomes `ended`. The API reads statuses through
//! [`effective_status`], the store's settle and the engine's start and end events through
//! [`settle_status`] and [`next_time_transition`]; none of them states the rule again.
//!
//! ```text
//! scheduled --start reached--> active --end reached--> ended
//!     |  \                       |
//!     |   `------pause-------> paused --resume--> active (or scheduled before the start,
//!     |                          |                        or ended after the end)
//!     `--cancel--> cancelled <---'  (cancel also from active)
//! ```
//!
//! Source states (assumed): pause from `scheduled` or `active`; resume from `paused`; cancel
//! from `scheduled`, `active` or `paused`. `ended` and `cancelled` are final.

use chrono::{DateTime, Utc};
use contracts::wire::{CampaignAction, CampaignStatus, CampaignStatusChange, StatusChangeCause};

/// The statuses that the clock alone changes (`scheduled` and `active`); every other status
/// changes only by an action. The store pre-filters on these before asking [`settle_status`].
pub(crate) const MOVED_BY_TIME: [CampaignStatus; 2] =
    [CampaignStatus::Scheduled, CampaignStatus::Active];

/// The status a campaign has at `now`, given the status last stored and its time window.
/// `scheduled` becomes `active` at the start and `ended` at the end; `active` becomes
/// `ended` at the end; `paused` waits for a resume.
pub fn effective_status(
    stored: CampaignStatus,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    now: DateTime<Utc>,
) -> CampaignStatus {
    match stored {
        CampaignStatus::Scheduled | CampaignStatus::Active if now >= end => CampaignStatus::Ended,
        CampaignStatus::Scheduled if now >= start => CampaignStatus::Active,
        s => s,
    }
}

/// The status to store at `now` when the clock has moved a campaign stored as `stored`, or
/// `None` when it stays as it is.
pub(crate) fn settle_status(
    stored: CampaignStatus,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Option<CampaignStatus> {
    let next = effective_status(stored, start, end, now);
    (next != stored).then_some(next)
}

/// The next change the clock makes to a campaign stored as `stored`: when, and the status it
/// moves to. Every change with time falls at the start or the end (the store's pre-filter
/// relies on it). `None`: only an action changes it (`paused`, or a final status).
pub fn next_time_transition(
    stored: CampaignStatus,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Option<(DateTime<Utc>, CampaignStatus)> {
    [start, end]
        .into_iter()
        .filter(|t| *t <= end)
        .find_map(|t| settle_status(stored, start, end, t).map(|to| (t, to)))
}

/// An action that the campaign's status does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cannot {} a campaign that is {}", action.as_str(), from.as_str())]
pub struct TransitionError {
    /// The action asked for.
    pub(crate) action: CampaignAction,
    /// The status the campaign was in.
    pub(crate) from: CampaignStatus,
}

/// The status after `action`, from the campaign's effective status `from`.
pub fn apply_action(
    from: CampaignStatus,
    action: CampaignAction,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<CampaignStatus, TransitionError> {
    use CampaignStatus::*;
    match (action, from) {
        (CampaignAction::Pause, Scheduled | Active) => Ok(Paused),
        (CampaignAction::Resume, Paused) => Ok(effective_status(Scheduled, start, end, now)),
        (CampaignAction::Cancel, Scheduled | Active | Paused) => Ok(Cancelled),
        _ => Err(TransitionError { action, from }),
    }
}

/// A campaign's status changes up to `now`, told again from its creation, its `actions`
/// (oldest first, each with the status it led to and the key's name) and the rule above:
/// between two actions, the clock moves the status stored after the first at the start and
/// the end. Exact because a PATCH (which may move the end) is taken only while `scheduled`
/// or `paused`, before any change with time that would follow.
pub(crate) fn history(
    created: (DateTime<Utc>, &str),
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    actions: &[(DateTime<Utc>, CampaignAction, CampaignStatus, &str)],
    now: DateTime<Utc>,
) -> Vec<CampaignStatusChange> {
    let mut out = vec![CampaignStatusChange {
        at: created.0,
        status: CampaignStatus::Scheduled,
        cause: StatusChangeCause::Created,
        by: Some(created.1.to_string()),
    }];
    let mut stored = CampaignStatus::Scheduled;
    let with_time = |out: &mut Vec<CampaignStatusChange>, stored: &mut CampaignStatus, until| {
        while let Some((at, status)) = next_time_transition(*stored, start, end)
            && at <= until
        {
            let cause = if at == end {
                StatusChangeCause::EndReached
            } else {
                StatusChangeCause::StartReached
            };
            out.push(CampaignStatusChange {
                at,
                status,
                cause,
                by: None,
            });
            *stored = status;
        }
    };
    for (at, action, status, by) in actions {
        with_time(&mut out, &mut stored, *at);
        out.push(CampaignStatusChange {
            at: *at,
            status: *status,
            cause: match action {
                CampaignAction::Pause => StatusChangeCause::Pause,
                CampaignAction::Resume => StatusChangeCause::Resume,
                CampaignAction::Cancel => StatusChangeCause::Cancel,
            },
            by: Some(by.to_string()),
        });
        stored = *status;
    }
    with_time(&mut out, &mut stored, now);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;
    use rstest::rstest;

    fn t(h: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_772_000_000, 0).unwrap() + Duration::hours(h)
    }

    #[rstest]
    #[case(CampaignStatus::Scheduled, -1, CampaignStatus::Scheduled)]
    #[case(CampaignStatus::Scheduled, 0, CampaignStatus::Active)]
    #[case(CampaignStatus::Scheduled, 10, CampaignStatus::Ended)]
    #[case(CampaignStatus::Active, 9, CampaignStatus::Active)]
    #[case(CampaignStatus::Active, 10, CampaignStatus::Ended)]
    #[case(CampaignStatus::Paused, 11, CampaignStatus::Paused)]
    #[case(CampaignStatus::Cancelled, 11, CampaignStatus::Cancelled)]
    #[case(CampaignStatus::Ended, 5, CampaignStatus::Ended)]
    fn time_moves_status(
        #[case] stored: CampaignStatus,
        #[case] at: i64,
        #[case] want: CampaignStatus,
    ) {
        assert_eq!(effective_status(stored, t(0), t(10), t(at)), want);
        assert_eq!(
            settle_status(stored, t(0), t(10), t(at)),
            (want != stored).then_some(want)
        );
    }

    #[rstest]
    #[case(CampaignStatus::Scheduled, Some((0, CampaignStatus::Active)))]
    #[case(CampaignStatus::Active, Some((10, CampaignStatus::Ended)))]
    #[case(CampaignStatus::Paused, None)]
    #[case(CampaignStatus::Ended, None)]
    #[case(CampaignStatus::Cancelled, None)]
    fn the_next_change_with_time(
        #[case] stored: CampaignStatus,
        #[case] want: Option<(i64, CampaignStatus)>,
    ) {
        let next = next_time_transition(stored, t(0), t(10));
        assert_eq!(next, want.map(|(h, s)| (t(h), s)));
        assert_eq!(next.is_some(), MOVED_BY_TIME.contains(&stored));
    }

    #[rstest]
    #[case(
        CampaignAction::Pause,
        CampaignStatus::Scheduled,
        0,
        Some(CampaignStatus::Paused)
    )]
    #[case(
        CampaignAction::Pause,
        CampaignStatus::Active,
        1,
        Some(CampaignStatus::Paused)
    )]
    #[case(CampaignAction::Pause, CampaignStatus::Paused, 1, None)]
    #[case(CampaignAction::Pause, CampaignStatus::Ended, 1, None)]
    #[case(CampaignAction::Resume, CampaignStatus::Paused, -1, Some(CampaignStatus::Scheduled))]
    #[case(
        CampaignAction::Resume,
        CampaignStatus::Paused,
        1,
        Some(CampaignStatus::Active)
    )]
    #[case(
        CampaignAction::Resume,
        CampaignStatus::Paused,
        10,
        Some(CampaignStatus::Ended)
    )]
    #[case(CampaignAction::Resume, CampaignStatus::Active, 1, None)]
    #[case(CampaignAction::Resume, CampaignStatus::Cancelled, 1, None)]
    #[case(CampaignAction::Cancel, CampaignStatus::Scheduled, -1, Some(CampaignStatus::Cancelled))]
    #[case(
        CampaignAction::Cancel,
        CampaignStatus::Active,
        1,
        Some(CampaignStatus::Cancelled)
    )]
    #[case(
        CampaignAction::Cancel,
        CampaignStatus::Paused,
        1,
        Some(CampaignStatus::Cancelled)
    )]
    #[case(CampaignAction::Cancel, CampaignStatus::Ended, 11, None)]
    #[case(CampaignAction::Cancel, CampaignStatus::Cancelled, 1, None)]
    fn actions(
        #[case] action: CampaignAction,
        #[case] from: CampaignStatus,
        #[case] at: i64,
        #[case] want: Option<CampaignStatus>,
    ) {
        assert_eq!(apply_action(from, action, t(0), t(10), t(at)).ok(), want);
    }

    fn told(changes: &[CampaignStatusChange]) -> Vec<(i64, CampaignStatus, StatusChangeCause)> {
        changes
            .iter()
            .map(|c| ((c.at - t(0)).num_hours(), c.status, c.cause))
            .collect()
    }

    #[test]
    fn history_tells_the_changes_with_time_between_the_actions() {
        use CampaignStatus::*;
        use StatusChangeCause as C;
        let created = (t(-2), "ci");
        // Nothing done: scheduled, then active at the start, ended at the end.
        assert_eq!(
            told(&history(created, t(0), t(10), &[], t(-1))),
            [(-2, Scheduled, C::Created)]
        );
        assert_eq!(
            told(&history(created, t(0), t(10), &[], t(11))),
            [
                (-2, Scheduled, C::Created),
                (0, Active, C::StartReached),
                (10, Ended, C::EndReached)
            ]
        );
        // Paused while active, resumed later, then the end.
        let actions = [
            (t(2), CampaignAction::Pause, Paused, "ops"),
            (t(4), CampaignAction::Resume, Active, "ops"),
        ];
        let h = history(created, t(0), t(10), &actions, t(12));
        assert_eq!(
            told(&h),
            [
                (-2, Scheduled, C::Created),
                (0, Active, C::StartReached),
                (2, Paused, C::Pause),
                (4, Active, C::Resume),
                (10, Ended, C::EndReached),
            ]
        );
        assert_eq!(h[2].by.as_deref(), Some("ops"));
        assert_eq!(h[1].by, None);
        // Paused before the start: no activation while paused; resumed before the start,
        // activated at it.
        let actions = [
            (t(-1), CampaignAction::Pause, Paused, "ops"),
            (t(3), CampaignAction::Resume, Active, "ops"),
            (t(5), CampaignAction::Cancel, Cancelled, "ops"),
        ];
        assert_eq!(
            told(&history(created, t(0), t(10), &actions, t(12))),
            [
                (-2, Scheduled, C::Created),
                (-1, Paused, C::Pause),
                (3, Active, C::Resume),
                (5, Cancelled, C::Cancel),
            ]
        );
        // An action at the very start comes after the activation it follows.
        let actions = [(t(0), CampaignAction::Pause, Paused, "ops")];
        assert_eq!(
            told(&history(created, t(0), t(10), &actions, t(1))),
            [
                (-2, Scheduled, C::Created),
                (0, Active, C::StartReached),
                (0, Paused, C::Pause)
            ]
        );
    }
}
