//! Calls: the `attempts` table. A campaign dial or an instant outbound call is one row
//! ([`Call`]), from `queued` (instant outbound, waiting for the engine) through `calling` to
//! `ended` with its result.
//!
//! An instant outbound request is stored as a `queued` call whose payload (the request, with
//! the user's number and variables) is a sealed blob bound to [`payload_context`]; the store
//! moves it sealed and never opens it.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, Row, Statement, params};

use super::states::{CallKind, CallStatus};
use super::{StoreError, WorkspaceRef, bulk, from_ms, ms, optional};

/// The context a sealed attempt payload is bound to.
pub(crate) fn payload_context(id: &str) -> String {
    format!("attempts/{id}")
}

/// A row of the `attempts` table: a campaign dial or an instant outbound call, from queued to
/// ended. The one row type of the table: the outbound service stores a queued call with
/// [`insert_queued`], the engine the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
///
/// Its texts are shared (`Arc`): the engine makes one per dial from values its campaign
/// holds, and keeps it in memory until the call ends, so a copy costs a count, not an
/// allocation.
pub(crate) struct Call {
    /// The attempt id.
    pub(crate) id: Arc<str>,
    /// A campaign dial or an instant outbound call.
    pub(crate) kind: CallKind,
    /// Its workspace.
    pub(crate) ws: Arc<WorkspaceRef>,
    /// Queued, calling or ended.
    pub(crate) status: CallStatus,
    /// Sealed request (instant outbound) or empty.
    pub(crate) payload: Vec<u8>,
    /// The campaign, cohort and row of a campaign dial.
    pub(crate) campaign_id: Option<Arc<str>>,
    /// See `campaign_id`.
    pub(crate) cohort_id: Option<Arc<str>>,
    /// See `campaign_id`.
    pub(crate) row_no: Option<u64>,
    /// 0 for a first dial.
    pub(crate) retry_attempt: u32,
    /// When it was dialled.
    pub(crate) dialed_at: Option<DateTime<Utc>>,
    /// When it ends.
    pub(crate) ends_at: Option<DateTime<Utc>>,
    /// The telephony outcome.
    pub(crate) outcome: Option<Arc<str>>,
    /// The telephony's failure reason.
    pub(crate) failure_reason: Option<String>,
    /// Talk time in ms.
    pub(crate) talk_ms: Option<i64>,
    /// The connection used.
    pub(crate) connection_id: Option<Arc<str>>,
    /// The number called from.
    pub(crate) agent_number: Option<Arc<str>>,
    /// When it was created.
    pub(crate) created_at: DateTime<Utc>,
}

impl Call {
    /// A call waiting for the engine: nothing dialled yet, created at `at`.
    pub(crate) fn queued(
        id: Arc<str>,
        kind: CallKind,
        ws: Arc<WorkspaceRef>,
        payload: Vec<u8>,
        at: DateTime<Utc>,
    ) -> Call {
        Call {
            id,
            kind,
            ws,
            status: CallStatus::Queued,
            payload,
            campaign_id: None,
            cohort_id: None,
            row_no: None,
            retry_attempt: 0,
            dialed_at: None,
            ends_at: None,
            outcome: None,
            failure_reason: None,
            talk_ms: None,
            connection_id: None,
            agent_number: None,
            created_at: at,
        }
    }
}

// The queries by status below repeat `status <> 'ended'`, the condition of the partial
// index `attempts_live`: SQLite uses a partial index only for a query whose WHERE names its
// condition, and without it each of them read every attempt ever made (2.6 million in the
// 1,000,000-user run, at each engine step).
const CALL_COLUMNS: &str = "id, kind, org_id, workspace_id, status, payload, campaign_id, cohort_id, row_no,
    retry_attempt, dialed_ms, ends_ms, outcome, failure_reason, talk_ms, connection_id, agent_number, created_ms";

fn read_call(r: &Row<'_>) -> rusqlite::Result<Call> {
    Ok(Call {
        id: r.get(0)?,
        kind: r.get(1)?,
        ws: Arc::new(WorkspaceRef::new(
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
        )),
        status: r.get(4)?,
        payload: r.get(5)?,
        campaign_id: r.get(6)?,
        cohort_id: r.get(7)?,
        row_no: r.get::<_, Option<i64>>(8)?.map(|n| n as u64),
        retry_attempt: r.get::<_, Option<i64>>(9)?.unwrap_or(0) as u32,
        dialed_at: r.get::<_, Option<i64>>(10)?.map(from_ms),
        ends_at: r.get::<_, Option<i64>>(11)?.map(from_ms),
        outcome: r.get(12)?,
        failure_reason: r.get(13)?,
        talk_ms: r.get(14)?,
        connection_id: r.get(15)?,
        agent_number: r.get(16)?,
        created_at: from_ms(r.get(17)?),
    })
}

/// A call by id.
pub(crate) fn call(c: &Connection, id: &str) -> Result<Option<Call>, StoreError> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {CALL_COLUMNS} FROM attempts WHERE id = ?1"
    ))?;
    optional(stmt.query_row(params![id], read_call))
}

/// The sealed request of an attempt (empty for a campaign dial or an unknown attempt).
pub(crate) fn call_payload(c: &Connection, id: &str) -> Result<Vec<u8>, StoreError> {
    let mut stmt = c.prepare_cached("SELECT payload FROM attempts WHERE id = ?1")?;
    Ok(optional(stmt.query_row(params![id], |r| r.get(0)))?.unwrap_or_default())
}

fn calls_in_progress_sql() -> String {
    format!(
        "SELECT {CALL_COLUMNS} FROM attempts WHERE status = 'calling' AND status <> 'ended'
         ORDER BY ends_ms, id"
    )
}

/// See [`workspaces_with_live_calls`].
const LIVE_WORKSPACES: &str = "SELECT DISTINCT org_id, workspace_id FROM attempts
     WHERE status = 'queued' AND status <> 'ended'
     UNION SELECT DISTINCT org_id, workspace_id FROM inbound_calls WHERE answered = 1 AND ended = 0";

/// See [`queued_outbound`].
const QUEUED_OUTBOUND: &str = "SELECT created_ms, id FROM attempts
     WHERE kind = 'outbound' AND status = 'queued' AND status <> 'ended' ORDER BY created_ms, id";

/// Calls in progress, ending first first.
pub(crate) fn calls_in_progress(c: &Connection) -> Result<Vec<Call>, StoreError> {
    let mut stmt = c.prepare_cached(&calls_in_progress_sql())?;
    let rows = stmt
        .query_map([], read_call)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The workspaces with calls queued (instant outbound, campaign) or inbound calls open: with
/// the calls in progress, which the engine knows from memory, the keys its next steps may
/// need.
pub(crate) fn workspaces_with_live_calls(c: &Connection) -> Result<Vec<WorkspaceRef>, StoreError> {
    let mut stmt = c.prepare_cached(LIVE_WORKSPACES)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(WorkspaceRef::new(
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Instant outbound calls waiting to be dialled: `(created, id)`.
pub(crate) fn queued_outbound(c: &Connection) -> Result<Vec<(i64, String)>, StoreError> {
    let mut stmt = c.prepare_cached(QUEUED_OUTBOUND)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// What a dial needs to store.
#[derive(Debug, Clone)]
pub(crate) struct Dialed<'a> {
    /// The attempt id.
    pub(crate) id: &'a str,
    /// When.
    pub(crate) at: DateTime<Utc>,
    /// When the call ends.
    pub(crate) ends: DateTime<Utc>,
    /// The telephony outcome.
    pub(crate) outcome: &'a str,
    /// The telephony's failure reason.
    pub(crate) failure_reason: Option<&'a str>,
    /// Talk time in ms.
    pub(crate) talk_ms: i64,
    /// The connection.
    pub(crate) connection_id: &'a str,
    /// The number called from.
    pub(crate) agent_number: &'a str,
}

/// Inserts a queued instant outbound call: its id, kind, workspace, status and sealed
/// payload, created (and last changed) at `created_at`. The engine's columns stay empty until
/// it dials ([`set_outbound_dialed`]).
pub(crate) fn insert_queued(c: &Connection, call: &Call) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO attempts (id, kind, org_id, workspace_id, status, payload, created_ms, updated_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            call.id,
            call.kind,
            call.ws.org_id,
            call.ws.workspace_id,
            call.status,
            call.payload,
            ms(call.created_at),
            ms(call.created_at)
        ],
    )?;
    Ok(())
}

/// The columns of a call as [`insert_calls`] writes them.
const INSERTED_COLUMNS: [&str; 20] = [
    "id",
    "kind",
    "org_id",
    "workspace_id",
    "status",
    "payload",
    "created_ms",
    "updated_ms",
    "campaign_id",
    "cohort_id",
    "row_no",
    "retry_attempt",
    "dialed_ms",
    "ends_ms",
    "outcome",
    "failure_reason",
    "talk_ms",
    "connection_id",
    "agent_number",
    "result",
];

/// Inserts many campaign calls, each with its state (`calling`, or `ended` with its result
/// when the call began and ended within one engine batch), [`bulk::ROWS_PER_STATEMENT`] rows
/// a statement. Each entry: the call, its status, its result.
pub(crate) fn insert_calls(
    c: &Connection,
    calls: &[(&Call, CallStatus, Option<&str>)],
) -> Result<(), StoreError> {
    bulk::insert_rows(
        c,
        "attempts",
        &INSERTED_COLUMNS,
        calls,
        |s, i, (call, status, result)| {
            let created = ms(call.created_at);
            s.raw_bind_parameter(i, &call.id)?;
            s.raw_bind_parameter(i + 1, call.kind)?;
            s.raw_bind_parameter(i + 2, &call.ws.org_id)?;
            s.raw_bind_parameter(i + 3, &call.ws.workspace_id)?;
            s.raw_bind_parameter(i + 4, status)?;
            s.raw_bind_parameter(i + 5, &call.payload)?;
            s.raw_bind_parameter(i + 6, created)?;
            s.raw_bind_parameter(i + 7, created)?;
            s.raw_bind_parameter(i + 8, &call.campaign_id)?;
            s.raw_bind_parameter(i + 9, &call.cohort_id)?;
            s.raw_bind_parameter(i + 10, call.row_no.map(|n| n as i64))?;
            s.raw_bind_parameter(i + 11, i64::from(call.retry_attempt))?;
            s.raw_bind_parameter(i + 12, call.dialed_at.map(ms))?;
            s.raw_bind_parameter(i + 13, call.ends_at.map(ms))?;
            s.raw_bind_parameter(i + 14, &call.outcome)?;
            s.raw_bind_parameter(i + 15, &call.failure_reason)?;
            s.raw_bind_parameter(i + 16, call.talk_ms)?;
            s.raw_bind_parameter(i + 17, &call.connection_id)?;
            s.raw_bind_parameter(i + 18, &call.agent_number)?;
            s.raw_bind_parameter(i + 19, result)
        },
    )
}

/// Marks a queued instant outbound call as dialled.
pub(crate) fn set_outbound_dialed(c: &Connection, d: &Dialed<'_>) -> Result<(), StoreError> {
    c.prepare_cached(
        "UPDATE attempts SET status = 'calling', updated_ms = ?2, dialed_ms = ?2, ends_ms = ?3, outcome = ?4,
                failure_reason = ?5, talk_ms = ?6, connection_id = ?7, agent_number = ?8
         WHERE id = ?1 AND status = 'queued'",
    )?
    .execute(params![
        d.id,
        ms(d.at),
        ms(d.ends),
        d.outcome,
        d.failure_reason,
        d.talk_ms,
        d.connection_id,
        d.agent_number
    ])?;
    Ok(())
}

/// Marks a call ended with its result.
pub(crate) fn end_call(
    c: &Connection,
    id: &str,
    result: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    end_call_with(&mut *c.prepare_cached(END_CALL)?, id, result, at)
}

/// The statement of [`end_call_with`]: prepare it once for many calls.
pub(crate) const END_CALL: &str =
    "UPDATE attempts SET status = 'ended', result = ?2, updated_ms = ?3 WHERE id = ?1";

/// [`end_call`] with a statement of [`END_CALL`].
pub(crate) fn end_call_with(
    stmt: &mut Statement<'_>,
    id: &str,
    result: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    stmt.execute(params![id, result, ms(at)])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::store::Store;

    fn a_call(i: usize) -> Call {
        let at = Utc.with_ymd_and_hms(2026, 3, 2, 9, 0, 0).unwrap()
            + chrono::Duration::seconds(i as i64);
        Call {
            id: format!("att-{i:04}").into(),
            kind: CallKind::Campaign,
            ws: WorkspaceRef::new("org", "ws").into(),
            status: CallStatus::Calling,
            payload: Vec::new(),
            campaign_id: Some("camp-1".into()),
            cohort_id: Some("coh-1".into()),
            row_no: Some(i as u64),
            retry_attempt: (i % 4) as u32,
            dialed_at: Some(at),
            ends_at: Some(at + chrono::Duration::seconds(30)),
            outcome: Some(
                if i.is_multiple_of(2) {
                    "busy"
                } else {
                    "connected"
                }
                .into(),
            ),
            failure_reason: (i.is_multiple_of(2)).then(|| "busy".to_string()),
            talk_ms: (i % 2 == 1).then_some(12_345),
            connection_id: Some("conn-a".into()),
            agent_number: Some("+14155550100".into()),
            created_at: at,
        }
    }

    #[test]
    fn many_calls_inserted_many_a_statement_read_back_as_inserted() {
        let store = Store::in_memory().unwrap();
        // Two whole statements and a remainder of 6, half of them ended.
        let n = 2 * bulk::ROWS_PER_STATEMENT + 6;
        let calls: Vec<Call> = (0..n).map(a_call).collect();
        let rows: Vec<(&Call, CallStatus, Option<&str>)> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i.is_multiple_of(2) {
                    (c, CallStatus::Ended, Some("busy"))
                } else {
                    (c, CallStatus::Calling, None)
                }
            })
            .collect();
        store.write_blocking(|c| insert_calls(c, &rows)).unwrap();
        store
            .read_blocking(|c| {
                for (i, want) in calls.iter().enumerate() {
                    let got = call(c, &want.id)?.expect("inserted");
                    let status = if i.is_multiple_of(2) {
                        CallStatus::Ended
                    } else {
                        CallStatus::Calling
                    };
                    assert_eq!(
                        got,
                        Call {
                            status,
                            ..want.clone()
                        },
                        "call {i}"
                    );
                    let result: Option<String> = c.query_row(
                        "SELECT result FROM attempts WHERE id = ?1",
                        params![want.id],
                        |r| r.get(0),
                    )?;
                    assert_eq!(result.as_deref(), (i.is_multiple_of(2)).then_some("busy"));
                }
                let count: i64 = c.query_row("SELECT COUNT(*) FROM attempts", [], |r| r.get(0))?;
                assert_eq!(count as usize, n);
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn calls_of_several_campaigns_and_workspaces_mixed_read_back_as_inserted() {
        let store = Store::in_memory().unwrap();
        // Interleaved as the engine's ids interleave them: three campaigns, two workspaces,
        // through whole statements and a remainder.
        let calls: Vec<Call> = (0..3 * bulk::ROWS_PER_STATEMENT + 40)
            .map(|i| {
                let call = a_call(i);
                match i % 3 {
                    0 => call,
                    1 => Call {
                        campaign_id: Some("camp-2".into()),
                        cohort_id: Some("coh-2".into()),
                        ..call
                    },
                    _ => Call {
                        ws: WorkspaceRef::new("org", "ws-2").into(),
                        campaign_id: Some("camp-3".into()),
                        ..call
                    },
                }
            })
            .collect();
        let rows: Vec<(&Call, CallStatus, Option<&str>)> = calls
            .iter()
            .map(|c| (c, CallStatus::Calling, None))
            .collect();
        store.write_blocking(|c| insert_calls(c, &rows)).unwrap();
        store
            .read_blocking(|c| {
                for want in &calls {
                    assert_eq!(call(c, &want.id)?.as_ref(), Some(want), "{}", want.id);
                }
                let count: i64 = c.query_row("SELECT COUNT(*) FROM attempts", [], |r| r.get(0))?;
                assert_eq!(count as usize, calls.len());
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn a_queued_call_reads_back_with_nothing_dialled() {
        let store = Store::in_memory().unwrap();
        let at = Utc.with_ymd_and_hms(2026, 3, 2, 9, 0, 0).unwrap();
        let queued = Call::queued(
            "att-q".into(),
            CallKind::Outbound,
            WorkspaceRef::new("org", "ws").into(),
            vec![1, 2, 3],
            at,
        );
        store.write_blocking(|c| insert_queued(c, &queued)).unwrap();
        store
            .read_blocking(|c| {
                assert_eq!(call(c, "att-q")?, Some(queued.clone()));
                assert_eq!(call_payload(c, "att-q")?, vec![1, 2, 3]);
                assert_eq!(queued_outbound(c)?, vec![(ms(at), "att-q".to_string())]);
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn the_queries_by_status_read_the_live_calls_index_not_every_attempt() {
        let store = Store::in_memory().unwrap();
        store
            .read_blocking(|c| {
                for sql in [
                    calls_in_progress_sql().as_str(),
                    LIVE_WORKSPACES,
                    QUEUED_OUTBOUND,
                ] {
                    let plan: Vec<String> = c
                        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?
                        .query_map([], |r| r.get::<_, String>(3))?
                        .collect::<Result<_, _>>()?;
                    let plan = plan.join("; ");
                    assert!(
                        plan.contains("attempts USING") && plan.contains("attempts_live"),
                        "{sql}: {plan}"
                    );
                    assert!(!plan.contains("SCAN attempts"), "{sql}: {plan}");
                }
                Ok(())
            })
            .unwrap();
    }
}
