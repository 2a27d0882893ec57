//! Campaign statistics: users, attempts by outcome, the attempt budget beside the capacity
//! that the rate and the remaining window allow (rule 3).

use chrono::{DateTime, Utc};
use contracts::wire::CampaignStatistics;
use rusqlite::{Connection, params};

use crate::store::StoreError;
use crate::store::campaigns::CampaignRecord;

/// The statistics of a campaign at `now`.
pub fn campaign_statistics(
    c: &Connection,
    rec: &CampaignRecord,
    now: DateTime<Utc>,
) -> Result<CampaignStatistics, StoreError> {
    // Users of completed `cohort` uploads; those whose number is in a completed `stop_file`
    // upload of the same campaign are excluded (matched by keyed hash).
    let (users, excluded): (i64, i64) = c.query_row(
        "SELECT COUNT(*),
                COALESCE(SUM(EXISTS (SELECT 1 FROM cohort_phones s JOIN cohorts sc ON sc.id = s.cohort_id
                                     WHERE sc.parent_kind = 'campaign' AND sc.parent_id = ?1
                                       AND sc.category = 'stop_file' AND sc.status = 'completed'
                                       AND s.phone_hash = u.phone_hash)), 0)
         FROM cohort_users u JOIN cohorts k ON k.id = u.cohort_id
         WHERE k.parent_kind = 'campaign' AND k.parent_id = ?1
           AND k.category = 'cohort' AND k.status = 'completed'",
        params![rec.id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let users_total = (users - excluded).max(0) as u64;
    let budget = users_total * u64::from(rec.spec.retry.max_attempts());
    let from = now.max(rec.spec.start);
    let open = if rec.status_at(now).is_final() {
        0
    } else {
        rec.spec.window.open_seconds_between(from, rec.spec.end)
    };
    let capacity = (rec.spec.attempts_per_second * open as f64).floor() as u64;
    let capacity_warning = (budget > capacity).then(|| {
        format!(
            "the attempt budget of {budget} ({users_total} users x (1 + max_retries {})) exceeds the {capacity} dials that {} per second allows in the {:.1} open hours left before end_timestamp; some users may not finish all retries",
            rec.spec.retry.max_retries,
            rec.spec.attempts_per_second,
            open as f64 / 3600.0
        )
    });
    Ok(CampaignStatistics {
        users_total,
        users_excluded: excluded as u64,
        users_pending: users_total,
        attempt_budget: budget,
        attempt_capacity: capacity,
        capacity_warning,
        ..Default::default()
    })
}
