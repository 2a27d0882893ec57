//! Campaign statistics: users by state, attempts by outcome, retries due, and the attempt
//! budget beside the capacity that the rate and the remaining window allow (rule 3).
//!
//! The counts come from the store ([`crate::store::statistics::campaign_counts`]);
//! [`from_counts`] is the arithmetic over them, apart from SQL.

use chrono::{DateTime, Utc};
use contracts::wire::{AttemptCounts, CampaignStatistics};
use rusqlite::Connection;

use crate::engine::dialing::{CallResult, Pacing};
use crate::store::StoreError;
use crate::store::campaigns::CampaignRecord;
use crate::store::states::UserState;
use crate::store::statistics::{CampaignCounts, campaign_counts};

/// The statistics of a campaign at `now`.
pub(crate) fn campaign_statistics(
    c: &Connection,
    rec: &CampaignRecord,
    now: DateTime<Utc>,
) -> Result<CampaignStatistics, StoreError> {
    Ok(from_counts(&campaign_counts(c, &rec.id, now)?, rec, now))
}

/// The statistics of a campaign at `now` from its stored counts.
pub(crate) fn from_counts(
    counts: &CampaignCounts,
    rec: &CampaignRecord,
    now: DateTime<Utc>,
) -> CampaignStatistics {
    let mut s = CampaignStatistics::default();
    // Users the engine admitted, by state.
    for u in &counts.users {
        let n = u.users;
        match u.state {
            UserState::Ready => {
                s.users_pending += n;
                s.retries_due = u.retries_due;
            }
            UserState::Calling => s.users_in_progress += n,
            UserState::Done => s.users_done += n,
            UserState::Excluded => s.users_excluded += n,
            UserState::Unfinished => s.users_unfinished += n,
        }
    }
    // Users of completed uploads the engine has not admitted yet (it does so at its next
    // step); those in a stop file of the campaign are excluded.
    s.users_pending += counts
        .not_admitted
        .saturating_sub(counts.not_admitted_excluded);
    s.users_excluded += counts.not_admitted_excluded;
    s.users_total = s.users_pending + s.users_in_progress + s.users_done + s.users_unfinished;
    // Ended attempts by result, and the calls in progress.
    let mut by = AttemptCounts::default();
    s.attempts_total = s.users_in_progress;
    for (result, n) in &counts.results {
        let n = *n;
        s.attempts_total += n;
        match CallResult::parse(result) {
            Some(CallResult::Completed) => by.connected += n,
            Some(CallResult::ShortDuration) => by.short_duration += n,
            Some(CallResult::Busy) => by.busy += n,
            Some(CallResult::NoAnswer) => by.no_answer += n,
            Some(CallResult::Failed) => by.failed += n,
            Some(CallResult::ProviderError) => by.provider_error += n,
            Some(CallResult::InternalError) => by.internal_error += n,
            None => {}
        }
    }
    s.attempts_by_outcome = by;
    // Rule 3: the budget beside what the rate allows in the open window time left: each
    // opening of the window from now (or the start) to the end fits the dials the pace
    // places in it, the first as it opens (the engine's own arithmetic).
    s.attempt_budget = s.users_total * u64::from(rec.spec.retry.max_attempts());
    let is_final = rec.status_at(now).is_final();
    let openings = if is_final {
        vec![]
    } else {
        rec.spec
            .window
            .windows_between(now.max(rec.spec.start), rec.spec.end)
    };
    let open: chrono::Duration = openings.iter().map(|(a, b)| *b - *a).sum();
    let more: u64 = openings
        .iter()
        .map(|(a, b)| Pacing::dials_within(rec.spec.attempts_per_second, *b - *a))
        .sum();
    s.attempt_capacity = s.attempts_total + more;
    // An ended or cancelled campaign dials no more: the shortfall is history, not a warning.
    if !is_final && s.attempt_budget > s.attempt_capacity {
        s.capacity_warning = Some(format!(
            "the attempt budget of {} ({} users x (1 + max_retries {})) exceeds the {} attempts possible: the {} made and the {} more that {} per second allows in the {} of open window left before end_timestamp; some users may not finish all retries",
            s.attempt_budget,
            s.users_total,
            rec.spec.retry.max_retries,
            s.attempt_capacity,
            s.attempts_total,
            more,
            rec.spec.attempts_per_second,
            open_time(open),
        ));
    }
    s
}

/// Open window time as a person reads it: `45 minutes`, `8.0 hours`, `3 days 4.5 hours`.
fn open_time(d: chrono::Duration) -> String {
    let secs = d.num_seconds();
    let count = |n: i64, unit: &str| format!("{n} {unit}{}", if n == 1 { "" } else { "s" });
    let hours = |s: i64| format!("{:.1} hours", s as f64 / 3600.0);
    match secs {
        s if s < 60 => count(s, "second"),
        s if s < 3_600 => count(s / 60, "minute"),
        s if s < 86_400 => hours(s),
        s => format!("{} {}", count(s / 86_400, "day"), hours(s % 86_400)),
    }
}

#[cfg(test)]
mod tests {
    use contracts::validate::{Options, campaign_create};
    use contracts::wire::CampaignStatus;
    use serde_json::json;

    use super::*;
    use crate::store::WorkspaceRef;
    use crate::store::statistics::UsersInState;

    /// A campaign open 09:00-17:00 UTC on Monday 2026-03-02, 2 dials a second, 3 retries,
    /// read at 08:00 the same day.
    fn a_campaign(status: CampaignStatus) -> (CampaignRecord, DateTime<Utc>) {
        let now: DateTime<Utc> = "2026-03-02T08:00:00Z".parse().unwrap();
        let spec = campaign_create(
            &json!({
                "name": "Stats",
                "start_timestamp": "2026-03-02T09:00:00Z",
                "end_timestamp": "2026-03-02T17:00:00Z",
                "allowed_schedule": {"timezone": "UTC",
                    "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
                    "allowed_start_time": "09:00", "allowed_end_time": "17:00"},
                "app_config": {
                    "app_id": "app-1", "app_version": 1, "attempts_per_second": 2,
                    "connection_configs": [{"connection_id": "a", "phone_numbers": ["+14155550100"], "weight": 1}],
                    "retry_config": {"max_retries": 3, "retry_on": ["busy"], "threshold_seconds": 15,
                                     "retry_interval_minutes": 30}
                }
            }),
            now,
            Options::default(),
        )
        .unwrap();
        let rec = CampaignRecord {
            id: "camp-1".into(),
            ws: WorkspaceRef::new("org", "ws"),
            status,
            spec,
            created_by: "k".into(),
            updated_by: "k".into(),
            created_at: now,
            updated_at: now,
        };
        (rec, now)
    }

    fn counts(done: u64) -> CampaignCounts {
        let users = |state, users, retries_due| UsersInState {
            state,
            users,
            retries_due,
        };
        CampaignCounts {
            users: vec![
                users(UserState::Ready, 10, 4),
                users(UserState::Calling, 2, 0),
                users(UserState::Done, done, 0),
                users(UserState::Excluded, 1, 0),
            ],
            not_admitted: 7,
            not_admitted_excluded: 3,
            results: vec![
                ("completed".into(), 3),
                ("busy".into(), 4),
                ("no_longer_known".into(), 1),
            ],
        }
    }

    #[test]
    fn counts_add_up_and_the_budget_stands_beside_the_capacity() {
        let (rec, now) = a_campaign(CampaignStatus::Scheduled);
        let s = from_counts(&counts(5), &rec, now);
        // Not admitted yet: 7, of which 3 in a stop file.
        assert_eq!(s.users_pending, 10 + 4);
        assert_eq!(s.users_excluded, 1 + 3);
        assert_eq!(
            (s.users_in_progress, s.users_done, s.retries_due),
            (2, 5, 4)
        );
        assert_eq!(s.users_total, 14 + 2 + 5);
        // Calls in progress count as attempts; a result no longer known counts in the total only.
        assert_eq!(s.attempts_total, 2 + 3 + 4 + 1);
        assert_eq!(
            (s.attempts_by_outcome.connected, s.attempts_by_outcome.busy),
            (3, 4)
        );
        // Rule 3: 21 users x (1 + 3); 8 open hours at 2 a second, plus the attempts made.
        assert_eq!(s.attempt_budget, 84);
        assert_eq!(s.attempt_capacity, 10 + 2 * 8 * 3600);
        assert_eq!(s.capacity_warning, None);
    }

    #[test]
    fn a_budget_above_the_capacity_warns_until_the_campaign_is_final() {
        let (rec, now) = a_campaign(CampaignStatus::Scheduled);
        let s = from_counts(&counts(100_000), &rec, now);
        assert!(s.attempt_budget > s.attempt_capacity);
        let warning = s.capacity_warning.expect("a warning");
        assert!(
            warning.contains(
                "exceeds the 57610 attempts possible: the 10 made and the 57600 more that 2 per second allows in the 8.0 hours of open window left"
            ),
            "{warning}"
        );
        let (cancelled, now) = a_campaign(CampaignStatus::Cancelled);
        let s = from_counts(&counts(100_000), &cancelled, now);
        assert_eq!(s.capacity_warning, None);
        assert_eq!(s.attempt_capacity, s.attempts_total);
    }
}
