//! Campaign statistics: users by state, attempts by outcome, retries due, and the attempt
//! budget beside the capacity that the rate and the remaining window allow (rule 3).

use chrono::{DateTime, Utc};
use contracts::wire::{AttemptCounts, CampaignStatistics};
use rusqlite::{Connection, params};

use crate::engine::dialing::CallResult;
use crate::store::campaigns::CampaignRecord;
use crate::store::states::UserState;
use crate::store::{StoreError, ms};

/// The statistics of a campaign at `now`.
pub fn campaign_statistics(
    c: &Connection,
    rec: &CampaignRecord,
    now: DateTime<Utc>,
) -> Result<CampaignStatistics, StoreError> {
    let mut s = CampaignStatistics::default();
    // Users the engine admitted, by state.
    let mut st = c.prepare_cached(
        "SELECT state, COUNT(*), SUM(attempts > 0 AND due_ms <= ?2) FROM campaign_users
         WHERE campaign_id = ?1 GROUP BY state",
    )?;
    let rows = st
        .query_map(params![rec.id, ms(now)], |r| {
            Ok((
                r.get::<_, UserState>(0)?,
                r.get::<_, i64>(1)? as u64,
                r.get::<_, Option<i64>>(2)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    for (state, n, due) in rows {
        match state {
            UserState::Ready => {
                s.users_pending += n;
                s.retries_due = due.unwrap_or(0) as u64;
            }
            UserState::Calling => s.users_in_progress += n,
            UserState::Done => s.users_done += n,
            UserState::Excluded => s.users_excluded += n,
            UserState::Unfinished => s.users_unfinished += n,
        }
    }
    // Users of completed uploads the engine has not admitted yet (it does so at its next
    // step); those in a stop file of the campaign are excluded.
    let (waiting, excluded): (i64, i64) = c.query_row(
        "SELECT COUNT(*),
                COALESCE(SUM(EXISTS (SELECT 1 FROM cohort_phones s JOIN cohorts sc ON sc.id = s.cohort_id
                                     WHERE sc.parent_kind = 'campaign' AND sc.parent_id = ?1
                                       AND sc.category = 'stop_file' AND sc.status = 'completed'
                                       AND s.phone_hash = u.phone_hash)), 0)
         FROM cohort_users u JOIN cohorts k ON k.id = u.cohort_id
         WHERE k.parent_kind = 'campaign' AND k.parent_id = ?1
           AND k.category = 'cohort' AND k.status = 'completed'
           AND NOT EXISTS (SELECT 1 FROM campaign_cohorts a WHERE a.campaign_id = ?1 AND a.cohort_id = k.id)",
        params![rec.id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    s.users_pending += (waiting - excluded).max(0) as u64;
    s.users_excluded += excluded as u64;
    s.users_total = s.users_pending + s.users_in_progress + s.users_done + s.users_unfinished;
    // Ended attempts by result, and the calls in progress.
    let mut st =
        c.prepare_cached("SELECT result, n FROM campaign_results WHERE campaign_id = ?1")?;
    let rows = st
        .query_map(params![rec.id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut by = AttemptCounts::default();
    s.attempts_total = s.users_in_progress;
    for (result, n) in rows {
        s.attempts_total += n;
        match CallResult::parse(&result) {
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
    // Rule 3: the budget beside what the rate allows in the open window time left.
    s.attempt_budget = s.users_total * u64::from(rec.spec.retry.max_attempts());
    let is_final = rec.status_at(now).is_final();
    let open = if is_final {
        0
    } else {
        rec.spec
            .window
            .open_seconds_between(now.max(rec.spec.start), rec.spec.end)
    };
    s.attempt_capacity =
        s.attempts_total + (rec.spec.attempts_per_second * open as f64).floor() as u64;
    // An ended or cancelled campaign dials no more: the shortfall is history, not a warning.
    if !is_final && s.attempt_budget > s.attempt_capacity {
        s.capacity_warning = Some(format!(
            "the attempt budget of {} ({} users x (1 + max_retries {})) exceeds the {} dials that {} per second allows in the {:.1} open hours left before end_timestamp (plus the {} made); some users may not finish all retries",
            s.attempt_budget,
            s.users_total,
            rec.spec.retry.max_retries,
            s.attempt_capacity,
            rec.spec.attempts_per_second,
            open as f64 / 3600.0,
            s.attempts_total
        ));
    }
    Ok(s)
}
