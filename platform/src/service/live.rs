//! What the live page (`/ui`) reads that no other route gives: the platform as a key sees it
//! ([`stack`]), a campaign's status changes and dials over time ([`activity()`]), and the audit
//! of a key service that runs in the same process ([`key_service_calls`], through a
//! [`KeyServiceAudit`](crate::app::KeyServiceAudit) that `harness up` hands the platform).

use chrono::{DateTime, Duration, Utc};
use contracts::clock::format_instant;
use contracts::report::chart;
use contracts::validate;
use contracts::wire::{
    CampaignActivity, CampaignStatus, KeyServiceCalls, KeyServiceView, StackClock, StackView,
    WorkspaceId,
};

use crate::app::App;
use crate::auth::{ClockMover, Principal, Scope};
use crate::engine::dialing::CallResult;
use crate::engine::driver::Driver;
use crate::error::ApiError;
use crate::lifecycle;
use crate::store::{activity, campaigns};

/// The platform as `presented` (a key that may read the clock) sees it; `base_url` is the
/// address the request came to.
pub(crate) async fn stack(
    app: &App,
    driver: &Driver,
    presented: &str,
    base_url: String,
) -> StackView {
    let keys = app.auth.configs_of(presented);
    let operator = app.auth.scope(presented) == Some(Scope::Operator);
    let key_name = keys
        .first()
        .map_or_else(|| "clock admin".to_string(), |k| k.name.clone());
    let key_services = app
        .config
        .byok
        .iter()
        .filter(|b| keys.iter().any(|k| k.opens(&b.workspace())))
        .map(|b| KeyServiceView {
            org_id: b.org_id.clone(),
            workspace_id: b.workspace_id.clone(),
            byok_base_url: format!(
                "{}/{}/byok/v1",
                b.customer_base_url.trim_end_matches('/'),
                b.partner
            ),
            client_id: b.client_id.clone(),
            key_alias: b.key_alias.clone(),
            audit: app
                .key_service_audit
                .as_ref()
                .is_some_and(|a| a.ws == b.workspace()),
        })
        .collect();
    let simulated = app.sim.is_some();
    StackView {
        openapi_url: format!("{base_url}{}", contracts::openapi::OPENAPI_PATH),
        platform_url: base_url,
        key_name,
        workspaces: keys
            .iter()
            .map(|k| WorkspaceId {
                org_id: k.org_id.clone(),
                workspace_id: k.workspace_id.clone(),
            })
            .collect(),
        clock: StackClock {
            now: app.clock.now(),
            simulated,
            may_move: simulated && app.auth.clock_mover(presented) == ClockMover::Allowed,
            next_due_at: driver.next_due().await,
        },
        seed: operator.then(|| app.ids.seed()),
        key_services,
    }
}

/// Bucket widths of a campaign's chart, in seconds: the least that keeps it within
/// [`MAX_BUCKETS`] is used.
const BUCKET_SECS: [i64; 9] = [60, 300, 900, 1_800, 3_600, 10_800, 21_600, 43_200, 86_400];
/// The most buckets a campaign's chart has (a campaign lasts at most 30 days: 30 buckets
/// of a day).
const MAX_BUCKETS: i64 = 120;
/// The least span of a campaign's chart.
const MIN_SPAN_MINUTES: i64 = 10;

/// The bucket width for a chart of `span`.
fn bucket_secs(span: Duration) -> i64 {
    let secs = span.num_seconds().max(1);
    BUCKET_SECS
        .into_iter()
        .find(|b| (secs + b - 1) / b <= MAX_BUCKETS)
        .unwrap_or(86_400)
}

/// The series of the dials not ended yet, after the results.
const IN_PROGRESS: &str = "in_progress";

/// The name of a result in the chart and in `attempts_by_outcome`.
fn series_name(r: CallResult) -> &'static str {
    match r {
        CallResult::Completed => "connected",
        other => other.as_str(),
    }
}

/// The campaign's status changes and its dials over time (ended ones by result, then those
/// in progress), from its start to now (at most its end).
pub(crate) async fn activity(
    app: &App,
    who: &Principal,
    id: &str,
) -> Result<CampaignActivity, ApiError> {
    let now = app.clock.now();
    let (ws, id) = (who.ws.clone(), id.to_string());
    app.store
        .read(move |c| {
            let Some(rec) = campaigns::get(c, &ws, &id)? else {
                return Err(ApiError::not_found("campaign", &id));
            };
            let actions = activity::actions(c, &id)?;
            let minutes = activity::dial_minutes(c, &id)?;
            let live = activity::live_dial_minutes(c, &id)?;
            Ok(tell(&rec, &actions, &minutes, &live, now))
        })
        .await
}

/// [`activity()`] from what the store keeps.
fn tell(
    rec: &campaigns::CampaignRecord,
    actions: &[activity::ActionRow],
    minutes: &[(i64, String, u64)],
    live: &[(i64, u64)],
    now: DateTime<Utc>,
) -> CampaignActivity {
    let (start, end) = (rec.spec.start, rec.spec.end);
    let acts: Vec<_> = actions
        .iter()
        .map(|a| (a.at, a.action, a.status, a.actor.as_str()))
        .collect();
    let status_changes =
        lifecycle::history((rec.created_at, &rec.created_by), start, end, &acts, now);
    // Now, but at least the least span (a campaign shorter than that: its end), at most the
    // end.
    let until = now
        .min(end)
        .max((start + Duration::minutes(MIN_SPAN_MINUTES)).min(end));
    let width = bucket_secs(until - start);
    let mut series: Vec<&str> = CallResult::ALL.into_iter().map(series_name).collect();
    series.push(IN_PROGRESS);
    let index = |minute: i64| {
        let at = DateTime::<Utc>::from_timestamp(minute * 60, 0).unwrap_or(start);
        ((at - start).num_seconds().max(0) / width) as u64
    };
    // (bucket, series, n) of the ended dials, then of those in progress (the last series).
    let ended = minutes.iter().filter_map(|(minute, result, n)| {
        CallResult::parse(result)
            .and_then(|r| series.iter().position(|s| *s == series_name(r)))
            .map(|k| (index(*minute), k, *n))
    });
    let going = live
        .iter()
        .map(|(minute, n)| (index(*minute), series.len() - 1, *n));
    let mut by_bucket: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for (i, k, n) in ended.chain(going) {
        by_bucket.entry(i).or_insert_with(|| vec![0; series.len()])[k] += n;
    }
    let buckets: Vec<Vec<u64>> = by_bucket
        .into_iter()
        .map(|(i, counts)| std::iter::once(i).chain(counts).collect())
        .collect();
    let windows = rec
        .spec
        .window
        .windows_between(start, until)
        .into_iter()
        .map(|(open, close)| [format_instant(open), format_instant(close)])
        .collect();
    CampaignActivity {
        campaign_id: rec.id.clone(),
        name: rec.spec.name.as_str().to_string(),
        status: rec.status_at(now),
        status_changes,
        from: start,
        until,
        bucket_secs: width,
        series: series.into_iter().map(str::to_string).collect(),
        buckets,
        windows,
    }
}

/// The campaign's activity as the scenario report's chart draws it ([`chart::render_in`]),
/// `width` wide (the page's width for it), its calling windows in a neutral grey: its dials
/// by outcome and those in progress, its calling windows, and its status changes since its
/// start as marks numbered as in `status_changes` (from 1).
pub(crate) fn chart(a: &CampaignActivity, width: u32) -> String {
    let mut marks = Vec::new();
    let mut before: Option<CampaignStatus> = None;
    for (i, c) in a.status_changes.iter().enumerate() {
        if c.at >= a.from {
            marks.push(chart::Mark {
                n: i + 1,
                at: format_instant(c.at),
                kind: "status".into(),
                subject: a.name.clone(),
                detail: match before {
                    Some(from) => format!("{} -> {}", from.as_str(), c.status.as_str()),
                    None => c.status.as_str().to_string(),
                },
            });
        }
        before = Some(c.status);
    }
    chart::render_in(
        &chart::Chart {
            from: format_instant(a.from),
            until: format_instant(a.until),
            run_until: format_instant(a.until),
            bucket_secs: a.bucket_secs,
            series: a.series.clone(),
            buckets: a.buckets.clone(),
            windows: a.windows.clone(),
            faults: Vec::new(),
            marks,
        },
        chart::Frame {
            width,
            window_fill: chart::Frame::NEUTRAL_WINDOWS,
        },
    )
}

/// The calls the workspace's key service received, as its audit recorded them, each with
/// the reason the platform recorded when it made it (found by its request id): only for the
/// workspace `harness up` wired to the key service it runs (404 otherwise).
pub(crate) fn key_service_calls(
    app: &App,
    who: &Principal,
    query: &[(String, String)],
) -> Result<KeyServiceCalls, ApiError> {
    let (after, limit) = validate::key_service_calls_query(query)?;
    match &app.key_service_audit {
        Some(source) if source.ws == who.ws => {
            let mut calls = source.audit.calls(after, limit as usize);
            // Why the platform made each call, as it recorded it when it made it.
            for call in &mut calls.items {
                call.reason = call
                    .request_id
                    .as_deref()
                    .and_then(|id| app.key_call_reasons.get(id));
            }
            Ok(calls)
        }
        _ => Err(ApiError::NotFound {
            code: "key_service_audit_not_available",
            message: format!(
                "no key service audit for {}: only the key service that harness up runs beside the platform is audited here; read another key service's own logs",
                who.ws
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_keep_the_chart_within_its_limit() {
        assert_eq!(bucket_secs(Duration::minutes(10)), 60);
        assert_eq!(bucket_secs(Duration::minutes(120)), 60);
        assert_eq!(bucket_secs(Duration::minutes(121)), 300);
        assert_eq!(bucket_secs(Duration::hours(8)), 300);
        assert_eq!(bucket_secs(Duration::days(1)), 900);
        assert_eq!(bucket_secs(Duration::days(7)), 10_800);
        assert_eq!(bucket_secs(Duration::days(30)), 21_600);
        for days in 1..=30 {
            let span = Duration::days(days);
            assert!(span.num_seconds() / bucket_secs(span) <= MAX_BUCKETS);
        }
    }
}
