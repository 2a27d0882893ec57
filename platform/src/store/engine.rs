//! What the campaign engine keeps: users admitted to campaigns, calls, the pacing and routing
//! of each campaign, webhook deliveries and inbound calls. Every state the engine needs to
//! resume after a crash is here; the engine's memory is a cache of it.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, Row, Statement, params};

use super::states::{CallKind, CallStatus, DeliveryKind, DeliveryState, UserState};
use super::{StoreError, WorkspaceRef, from_ms, ms, optional};

/// The engine's schema (a migration).
pub(super) const MIGRATION: &str = r#"
    -- Engine state of a campaign: pacing and routing (JSON), and which cohorts it admitted.
    ALTER TABLE campaigns ADD COLUMN engine_state TEXT;
    CREATE TABLE campaign_cohorts (
        campaign_id TEXT NOT NULL,
        cohort_id   TEXT NOT NULL,
        position    INTEGER NOT NULL,
        admitted_ms INTEGER NOT NULL,
        PRIMARY KEY (campaign_id, cohort_id)
    ) WITHOUT ROWID;

    -- One row per user admitted to a campaign.
    --   ready      waits for a dial (due_ms: the earliest)
    --   calling    a call is in progress
    --   done       finished: completed, or a final outcome, or out of retries
    --   excluded   in a stop file of the campaign; never dialled (again)
    --   unfinished the campaign ended or was cancelled before the user was done
    -- queue_seq: the cohort's admission position in the high 32 bits, its row in the low.
    CREATE TABLE campaign_users (
        campaign_id TEXT NOT NULL,
        queue_seq   INTEGER NOT NULL,
        cohort_id   TEXT NOT NULL,
        row_no      INTEGER NOT NULL,
        state       TEXT NOT NULL,
        attempts    INTEGER NOT NULL DEFAULT 0,
        due_ms      INTEGER NOT NULL,
        last_result TEXT,
        PRIMARY KEY (campaign_id, queue_seq)
    ) WITHOUT ROWID;

    -- Calls: campaign dials and instant outbound calls. Rebuilt without rowid (one B-tree
    -- keyed by the time-ordered attempt id) with the engine's columns.
    CREATE TABLE attempts_v3 (
        id             TEXT PRIMARY KEY,
        kind           TEXT NOT NULL,
        org_id         TEXT NOT NULL,
        workspace_id   TEXT NOT NULL,
        status         TEXT NOT NULL,
        payload        BLOB NOT NULL,
        created_ms     INTEGER NOT NULL,
        updated_ms     INTEGER NOT NULL,
        campaign_id    TEXT,
        cohort_id      TEXT,
        row_no         INTEGER,
        retry_attempt  INTEGER,
        dialed_ms      INTEGER,
        ends_ms        INTEGER,
        outcome        TEXT,
        failure_reason TEXT,
        talk_ms        INTEGER,
        connection_id  TEXT,
        agent_number   TEXT,
        result         TEXT
    ) WITHOUT ROWID;
    INSERT INTO attempts_v3 (id, kind, org_id, workspace_id, status, payload, created_ms, updated_ms)
        SELECT id, kind, org_id, workspace_id, status, payload, created_ms, updated_ms FROM attempts;
    DROP TABLE attempts;
    ALTER TABLE attempts_v3 RENAME TO attempts;
    -- Only calls not yet ended need finding by status: a partial index stays small.
    CREATE INDEX attempts_live ON attempts (status, ends_ms) WHERE status <> 'ended';

    -- Ended campaign attempts counted by result (the statistics read these).
    CREATE TABLE campaign_results (
        campaign_id TEXT NOT NULL,
        result      TEXT NOT NULL,
        n           INTEGER NOT NULL,
        PRIMARY KEY (campaign_id, result)
    ) WITHOUT ROWID;

    CREATE TABLE webhook_deliveries (
        id           TEXT PRIMARY KEY,
        seq          INTEGER NOT NULL UNIQUE,
        org_id       TEXT NOT NULL,
        workspace_id TEXT NOT NULL,
        kind         TEXT NOT NULL,
        subject_id   TEXT NOT NULL,
        url          TEXT NOT NULL,
        body         BLOB NOT NULL,
        status       TEXT NOT NULL,
        tries        INTEGER NOT NULL DEFAULT 0,
        next_try_ms  INTEGER,
        last_status  INTEGER,
        last_error   TEXT,
        created_ms   INTEGER NOT NULL,
        delivered_ms INTEGER
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_try_ms, seq);
    CREATE INDEX webhook_deliveries_ws ON webhook_deliveries (org_id, workspace_id, seq);

    CREATE TABLE inbound_calls (
        id             TEXT PRIMARY KEY,
        seq            INTEGER NOT NULL UNIQUE,
        org_id         TEXT NOT NULL,
        workspace_id   TEXT NOT NULL,
        dialled        TEXT NOT NULL,
        at_ms          INTEGER NOT NULL,
        answered       INTEGER NOT NULL,
        rejection      TEXT,
        deployment_id  TEXT,
        interaction_id TEXT,
        cohort_id      TEXT,
        talk_ms        INTEGER,
        ends_ms        INTEGER,
        ended          INTEGER NOT NULL DEFAULT 0,
        details        BLOB
    );
    CREATE INDEX inbound_calls_ws ON inbound_calls (org_id, workspace_id, seq);
    CREATE INDEX inbound_calls_open ON inbound_calls (answered, ended, ends_ms);
"#;

// ----- campaigns -----

/// Campaigns the engine runs: not ended, not cancelled.
pub fn live_campaign_ids(c: &Connection) -> Result<Vec<(String, i64)>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT id, updated_ms FROM campaigns WHERE status IN ('scheduled', 'active', 'paused') ORDER BY seq",
    )?;
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The engine state (pacing, routing) of a campaign, as JSON.
pub fn engine_state(c: &Connection, campaign_id: &str) -> Result<Option<String>, StoreError> {
    Ok(optional(c.query_row(
        "SELECT engine_state FROM campaigns WHERE id = ?1",
        params![campaign_id],
        |r| r.get::<_, Option<String>>(0),
    ))?
    .flatten())
}

/// Writes the engine state of a campaign.
pub fn set_engine_state(c: &Connection, campaign_id: &str, state: &str) -> Result<(), StoreError> {
    c.prepare_cached("UPDATE campaigns SET engine_state = ?2 WHERE id = ?1")?
        .execute(params![campaign_id, state])?;
    Ok(())
}

/// The completed cohorts of a campaign, both categories, in upload order:
/// `(id, is_stop_file, completed at)`.
pub fn completed_campaign_cohorts(
    c: &Connection,
    campaign_id: &str,
) -> Result<Vec<(String, bool, DateTime<Utc>)>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT id, category, updated_ms FROM cohorts
         WHERE parent_kind = 'campaign' AND parent_id = ?1 AND status = 'completed' ORDER BY seq",
    )?;
    let rows = st
        .query_map(params![campaign_id], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, String>(1)? == "stop_file",
                from_ms(r.get(2)?),
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The cohorts a campaign admitted, in admission order.
pub fn admitted_cohorts(c: &Connection, campaign_id: &str) -> Result<Vec<String>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT cohort_id FROM campaign_cohorts WHERE campaign_id = ?1 ORDER BY position",
    )?;
    let rows = st
        .query_map(params![campaign_id], |r| r.get(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Admits a completed `cohort` upload: its users join the campaign, ready from `at`, queued
/// after every user admitted before. Answers how many joined.
pub fn admit_cohort(
    c: &Connection,
    campaign_id: &str,
    cohort_id: &str,
    position: u32,
    at: DateTime<Utc>,
) -> Result<u64, StoreError> {
    c.prepare_cached(
        "INSERT INTO campaign_cohorts (campaign_id, cohort_id, position, admitted_ms) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![campaign_id, cohort_id, position, ms(at)])?;
    // queue_seq: the cohort's position in the high bits, the row in the low ones.
    let n = c
        .prepare_cached(
            "INSERT INTO campaign_users (campaign_id, queue_seq, cohort_id, row_no, state, attempts, due_ms)
             SELECT ?1, (?3 << 32) + row_no, cohort_id, row_no, 'ready', 0, ?4
             FROM cohort_users WHERE cohort_id = ?2",
        )?
        .execute(params![campaign_id, cohort_id, i64::from(position), ms(at)])?;
    Ok(n as u64)
}

/// Records a completed stop file as admitted (its numbers are checked at dial time).
pub fn admit_stop_file(
    c: &Connection,
    campaign_id: &str,
    cohort_id: &str,
    position: u32,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO campaign_cohorts (campaign_id, cohort_id, position, admitted_ms) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![campaign_id, cohort_id, position, ms(at)])?;
    Ok(())
}

/// Marks the users of a stop file's numbers that are waiting for a dial as excluded.
/// Answers how many.
pub fn exclude_by_stop_file(
    c: &Connection,
    campaign_id: &str,
    stop_cohort_id: &str,
) -> Result<u64, StoreError> {
    let n = c
        .prepare_cached(
            "UPDATE campaign_users SET state = 'excluded'
             WHERE campaign_id = ?1 AND state = 'ready'
               AND EXISTS (SELECT 1 FROM cohort_phones s
                           JOIN cohort_phones u ON u.phone_hash = s.phone_hash
                           WHERE s.cohort_id = ?2 AND u.cohort_id = campaign_users.cohort_id
                             AND u.row_no = campaign_users.row_no)",
        )?
        .execute(params![campaign_id, stop_cohort_id])?;
    Ok(n as u64)
}

/// A user waiting for a dial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyUser {
    /// Admission order of the cohort (index into the campaign's admitted cohorts).
    pub cohort_position: u32,
    /// Row in the cohort.
    pub row_no: u64,
    /// Queue order.
    pub queue_seq: i64,
    /// Dials so far.
    pub attempts: u32,
    /// Earliest next dial (Unix ms).
    pub due_ms: i64,
}

/// A user's queue order, number hash and sealed data.
pub type SealedUser = (i64, [u8; 16], Vec<u8>);

/// The sealed data of a campaign's users not yet finished (waiting or in a call).
pub fn open_users_data(c: &Connection, campaign_id: &str) -> Result<Vec<SealedUser>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT cu.queue_seq, u.phone_hash, u.data FROM campaign_users cu
         JOIN cohort_users u ON u.cohort_id = cu.cohort_id AND u.row_no = cu.row_no
         WHERE cu.campaign_id = ?1 AND cu.state IN ('ready', 'calling')",
    )?;
    let rows = st
        .query_map(params![campaign_id], |r| {
            let hash: Vec<u8> = r.get(1)?;
            let mut phone_hash = [0u8; 16];
            if hash.len() == 16 {
                phone_hash.copy_from_slice(&hash);
            }
            Ok((r.get(0)?, phone_hash, r.get(2)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The users of a campaign waiting for a dial.
pub fn ready_users(c: &Connection, campaign_id: &str) -> Result<Vec<ReadyUser>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT queue_seq, row_no, attempts, due_ms FROM campaign_users
         WHERE campaign_id = ?1 AND state = 'ready'",
    )?;
    let rows = st
        .query_map(params![campaign_id], |r| {
            let queue_seq: i64 = r.get(0)?;
            Ok(ReadyUser {
                cohort_position: (queue_seq >> 32) as u32,
                row_no: r.get::<_, i64>(1)? as u64,
                queue_seq,
                attempts: r.get::<_, i64>(2)? as u32,
                due_ms: r.get(3)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// A user at admission: row, queue order, number hash, sealed data.
pub type AdmittedRow = (u64, i64, [u8; 16], Box<[u8]>);

/// Every user of a cohort admitted at `position`.
pub fn admitted_rows(
    c: &Connection,
    cohort_id: &str,
    position: u32,
) -> Result<Vec<AdmittedRow>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT row_no, phone_hash, data FROM cohort_users WHERE cohort_id = ?1 ORDER BY row_no",
    )?;
    let rows = st
        .query_map(params![cohort_id], |r| {
            let n: i64 = r.get(0)?;
            let hash: Vec<u8> = r.get(1)?;
            let mut phone_hash = [0u8; 16];
            if hash.len() == 16 {
                phone_hash.copy_from_slice(&hash);
            }
            let data: Vec<u8> = r.get(2)?;
            Ok((
                n as u64,
                queue_seq(position, n as u64),
                phone_hash,
                data.into_boxed_slice(),
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// A user of a campaign: the campaign and the user's queue order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRef<'a> {
    /// The campaign.
    pub campaign_id: &'a str,
    /// The user's queue order: `(admission position << 32) + row`.
    pub queue_seq: i64,
}

/// The queue order of row `row_no` of the cohort admitted at `position`.
pub fn queue_seq(position: u32, row_no: u64) -> i64 {
    (i64::from(position) << 32) + row_no as i64
}

/// The statement of [`set_user`]: prepare it once for many users.
pub const SET_USER: &str = "UPDATE campaign_users SET state = ?3, attempts = ?4, due_ms = ?5, last_result = COALESCE(?6, last_result)
         WHERE campaign_id = ?1 AND queue_seq = ?2";

/// Sets a user's state after a dial or a call, with the statement [`SET_USER`].
pub fn set_user(
    st: &mut Statement<'_>,
    user: &UserRef<'_>,
    state: UserState,
    attempts: u32,
    due_ms: i64,
    last_result: Option<&str>,
) -> Result<(), StoreError> {
    st.execute(params![
        user.campaign_id,
        user.queue_seq,
        state,
        i64::from(attempts),
        due_ms,
        last_result
    ])?;
    Ok(())
}

/// Marks every user still waiting as unfinished (the campaign ended or was cancelled).
pub fn mark_unfinished(c: &Connection, campaign_id: &str) -> Result<u64, StoreError> {
    let n = c
        .prepare_cached(
            "UPDATE campaign_users SET state = 'unfinished' WHERE campaign_id = ?1 AND state = 'ready'",
        )?
        .execute(params![campaign_id])?;
    Ok(n as u64)
}

// ----- calls -----

/// A call as the engine stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The attempt id.
    pub id: String,
    /// A campaign dial or an instant outbound call.
    pub kind: CallKind,
    /// Its workspace.
    pub ws: WorkspaceRef,
    /// Queued, calling or ended.
    pub status: CallStatus,
    /// Sealed request (instant outbound) or empty.
    pub payload: Vec<u8>,
    /// The campaign, cohort and row of a campaign dial.
    pub campaign_id: Option<String>,
    /// See `campaign_id`.
    pub cohort_id: Option<String>,
    /// See `campaign_id`.
    pub row_no: Option<u64>,
    /// 0 for a first dial.
    pub retry_attempt: u32,
    /// When it was dialled.
    pub dialed_at: Option<DateTime<Utc>>,
    /// When it ends.
    pub ends_at: Option<DateTime<Utc>>,
    /// The telephony outcome.
    pub outcome: Option<String>,
    /// The telephony's failure reason.
    pub failure_reason: Option<String>,
    /// Talk time in ms.
    pub talk_ms: Option<i64>,
    /// The connection used.
    pub connection_id: Option<String>,
    /// The number called from.
    pub agent_number: Option<String>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

const CALL_COLUMNS: &str = "id, kind, org_id, workspace_id, status, payload, campaign_id, cohort_id, row_no,
    retry_attempt, dialed_ms, ends_ms, outcome, failure_reason, talk_ms, connection_id, agent_number, created_ms";

fn read_call(r: &Row<'_>) -> rusqlite::Result<Call> {
    Ok(Call {
        id: r.get(0)?,
        kind: r.get(1)?,
        ws: WorkspaceRef::new(r.get::<_, String>(2)?, r.get::<_, String>(3)?),
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
pub fn call(c: &Connection, id: &str) -> Result<Option<Call>, StoreError> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {CALL_COLUMNS} FROM attempts WHERE id = ?1"
    ))?;
    optional(st.query_row(params![id], read_call))
}

/// The sealed request of an attempt (empty for a campaign dial or an unknown attempt).
pub fn call_payload(c: &Connection, id: &str) -> Result<Vec<u8>, StoreError> {
    let mut st = c.prepare_cached("SELECT payload FROM attempts WHERE id = ?1")?;
    Ok(optional(st.query_row(params![id], |r| r.get(0)))?.unwrap_or_default())
}

/// Calls in progress, ending first first.
pub fn calls_in_progress(c: &Connection) -> Result<Vec<Call>, StoreError> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {CALL_COLUMNS} FROM attempts WHERE status = 'calling' ORDER BY ends_ms, id"
    ))?;
    let rows = st
        .query_map([], read_call)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The workspaces with calls queued (instant outbound, campaign) or inbound calls open: with
/// the calls in progress, which the engine knows from memory, the keys its next steps may
/// need.
pub fn workspaces_with_live_calls(c: &Connection) -> Result<Vec<WorkspaceRef>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT DISTINCT org_id, workspace_id FROM attempts WHERE status = 'queued'
         UNION SELECT DISTINCT org_id, workspace_id FROM inbound_calls WHERE answered = 1 AND ended = 0",
    )?;
    let rows = st
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
pub fn queued_outbound(c: &Connection) -> Result<Vec<(i64, String)>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT created_ms, id FROM attempts WHERE kind = 'outbound' AND status = 'queued' ORDER BY created_ms, id",
    )?;
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// What a dial needs to store.
#[derive(Debug, Clone)]
pub struct Dialed<'a> {
    /// The attempt id.
    pub id: &'a str,
    /// When.
    pub at: DateTime<Utc>,
    /// When the call ends.
    pub ends: DateTime<Utc>,
    /// The telephony outcome.
    pub outcome: &'a str,
    /// The telephony's failure reason.
    pub failure_reason: Option<&'a str>,
    /// Talk time in ms.
    pub talk_ms: i64,
    /// The connection.
    pub connection_id: &'a str,
    /// The number called from.
    pub agent_number: &'a str,
}

/// Inserts a campaign call with its state (`calling`, or `ended` with its result when the
/// call began and ended within one engine batch).
pub fn insert_call(
    c: &Connection,
    call: &Call,
    status: CallStatus,
    result: Option<&str>,
) -> Result<(), StoreError> {
    insert_call_with(&mut *c.prepare_cached(INSERT_CALL)?, call, status, result)
}

/// The statement of [`insert_call_with`]: prepare it once for many calls.
pub const INSERT_CALL: &str = "INSERT INTO attempts (id, kind, org_id, workspace_id, status, payload, created_ms, updated_ms,
                               campaign_id, cohort_id, row_no, retry_attempt, dialed_ms, ends_ms, outcome,
                               failure_reason, talk_ms, connection_id, agent_number, result)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)";

/// [`insert_call`] with a statement of [`INSERT_CALL`].
pub fn insert_call_with(
    st: &mut Statement<'_>,
    call: &Call,
    status: CallStatus,
    result: Option<&str>,
) -> Result<(), StoreError> {
    let dialed = call.dialed_at.map(ms);
    st.execute(params![
        call.id,
        call.kind,
        call.ws.org_id,
        call.ws.workspace_id,
        status,
        call.payload,
        ms(call.created_at),
        call.campaign_id,
        call.cohort_id,
        call.row_no.map(|n| n as i64),
        i64::from(call.retry_attempt),
        dialed,
        call.ends_at.map(ms),
        call.outcome,
        call.failure_reason,
        call.talk_ms,
        call.connection_id,
        call.agent_number,
        result
    ])?;
    Ok(())
}

/// How many calls one statement of [`insert_calls`] inserts.
const CALLS_PER_INSERT: usize = 32;

/// Inserts many calls, [`CALLS_PER_INSERT`] rows a statement: one statement's start and end
/// for 32 rows instead of one each. Each entry: the call, its status, its result.
pub fn insert_calls(
    c: &Connection,
    calls: &[(&Call, CallStatus, Option<&str>)],
) -> Result<(), StoreError> {
    let mut chunks = calls.chunks_exact(CALLS_PER_INSERT);
    if chunks.len() > 0 {
        let values: Vec<String> = (0..CALLS_PER_INSERT)
            .map(|k| {
                let b = k * 19;
                let p: Vec<String> = [
                    1, 2, 3, 4, 5, 6, 7, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                ]
                .iter()
                .map(|i| format!("?{}", b + i))
                .collect();
                format!("({})", p.join(", "))
            })
            .collect();
        let sql = format!(
            "INSERT INTO attempts (id, kind, org_id, workspace_id, status, payload, created_ms, updated_ms,
                                   campaign_id, cohort_id, row_no, retry_attempt, dialed_ms, ends_ms, outcome,
                                   failure_reason, talk_ms, connection_id, agent_number, result)
             VALUES {}",
            values.join(", ")
        );
        let mut st = c.prepare_cached(&sql)?;
        for chunk in &mut chunks {
            for (k, (call, status, result)) in chunk.iter().enumerate() {
                let b = k * 19;
                st.raw_bind_parameter(b + 1, &call.id)?;
                st.raw_bind_parameter(b + 2, call.kind)?;
                st.raw_bind_parameter(b + 3, &call.ws.org_id)?;
                st.raw_bind_parameter(b + 4, &call.ws.workspace_id)?;
                st.raw_bind_parameter(b + 5, status)?;
                st.raw_bind_parameter(b + 6, &call.payload)?;
                st.raw_bind_parameter(b + 7, ms(call.created_at))?;
                st.raw_bind_parameter(b + 8, &call.campaign_id)?;
                st.raw_bind_parameter(b + 9, &call.cohort_id)?;
                st.raw_bind_parameter(b + 10, call.row_no.map(|n| n as i64))?;
                st.raw_bind_parameter(b + 11, i64::from(call.retry_attempt))?;
                st.raw_bind_parameter(b + 12, call.dialed_at.map(ms))?;
                st.raw_bind_parameter(b + 13, call.ends_at.map(ms))?;
                st.raw_bind_parameter(b + 14, &call.outcome)?;
                st.raw_bind_parameter(b + 15, &call.failure_reason)?;
                st.raw_bind_parameter(b + 16, call.talk_ms)?;
                st.raw_bind_parameter(b + 17, &call.connection_id)?;
                st.raw_bind_parameter(b + 18, &call.agent_number)?;
                st.raw_bind_parameter(b + 19, result)?;
            }
            st.raw_execute()?;
        }
    }
    let mut one = c.prepare_cached(INSERT_CALL)?;
    for (call, status, result) in chunks.remainder() {
        insert_call_with(&mut one, call, *status, *result)?;
    }
    Ok(())
}

/// Adds ended attempts of a campaign to its count for `result`.
pub fn count_results(
    c: &Connection,
    campaign_id: &str,
    result: &str,
    n: u64,
) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO campaign_results (campaign_id, result, n) VALUES (?1, ?2, ?3)
         ON CONFLICT (campaign_id, result) DO UPDATE SET n = n + excluded.n",
    )?
    .execute(params![campaign_id, result, n as i64])?;
    Ok(())
}

/// Marks a queued instant outbound call as dialled.
pub fn set_outbound_dialed(c: &Connection, d: &Dialed<'_>) -> Result<(), StoreError> {
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
pub fn end_call(
    c: &Connection,
    id: &str,
    result: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    end_call_with(&mut *c.prepare_cached(END_CALL)?, id, result, at)
}

/// The statement of [`end_call_with`]: prepare it once for many calls.
pub const END_CALL: &str =
    "UPDATE attempts SET status = 'ended', result = ?2, updated_ms = ?3 WHERE id = ?1";

/// [`end_call`] with a statement of [`END_CALL`].
pub fn end_call_with(
    st: &mut Statement<'_>,
    id: &str,
    result: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    st.execute(params![id, result, ms(at)])?;
    Ok(())
}

// ----- webhook deliveries -----

/// A delivery to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// `whd-…`.
    pub id: String,
    /// Its workspace.
    pub ws: WorkspaceRef,
    /// What it tells of.
    pub kind: DeliveryKind,
    /// The attempt or interaction.
    pub subject_id: String,
    /// Where.
    pub url: String,
    /// Sealed JSON body.
    pub body: Vec<u8>,
    /// Tries so far.
    pub tries: u32,
    /// When the event was created.
    pub created_at: DateTime<Utc>,
}

/// The context a delivery body is sealed for.
pub fn delivery_context(id: &str) -> String {
    format!("webhook_deliveries/{id}")
}

/// Queues a delivery, due at `at`.
pub fn insert_delivery(c: &Connection, d: &Delivery, at: DateTime<Utc>) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO webhook_deliveries (id, seq, org_id, workspace_id, kind, subject_id, url, body, status,
                                         tries, next_try_ms, created_ms)
         VALUES (?1, (SELECT IFNULL(MAX(seq), 0) + 1 FROM webhook_deliveries), ?2, ?3, ?4, ?5, ?6, ?7,
                 'pending', 0, ?8, ?8)",
    )?
    .execute(params![
        d.id,
        d.ws.org_id,
        d.ws.workspace_id,
        d.kind,
        d.subject_id,
        d.url,
        d.body,
        ms(at)
    ])?;
    Ok(())
}

/// When the earliest pending delivery is due.
pub fn next_delivery_due(c: &Connection) -> Result<Option<DateTime<Utc>>, StoreError> {
    let v: Option<i64> = c
        .prepare_cached("SELECT MIN(next_try_ms) FROM webhook_deliveries WHERE status = 'pending'")?
        .query_row([], |r| r.get(0))?;
    Ok(v.map(from_ms))
}

/// Pending deliveries due at or before `at`, oldest first, at most `limit`.
pub fn due_deliveries(
    c: &Connection,
    at: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<(DateTime<Utc>, Delivery)>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT id, org_id, workspace_id, kind, subject_id, url, body, tries, created_ms, next_try_ms
         FROM webhook_deliveries WHERE status = 'pending' AND next_try_ms <= ?1
         ORDER BY next_try_ms, seq LIMIT ?2",
    )?;
    let rows = st
        .query_map(params![ms(at), i64::from(limit)], |r| {
            Ok((
                from_ms(r.get(9)?),
                Delivery {
                    id: r.get(0)?,
                    ws: WorkspaceRef::new(r.get::<_, String>(1)?, r.get::<_, String>(2)?),
                    kind: r.get(3)?,
                    subject_id: r.get(4)?,
                    url: r.get(5)?,
                    body: r.get(6)?,
                    tries: r.get::<_, i64>(7)? as u32,
                    created_at: from_ms(r.get(8)?),
                },
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// What became of one delivery in a round: a try delivered it, or failed with the next try
/// at `next` (`None`: given up), or no try was made and it waits until `next`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TryRecord {
    /// The delivery.
    pub id: String,
    /// Tries so far, this one included.
    pub tries: u32,
    /// When it was delivered (the platform's clock), if it was.
    pub delivered_at: Option<DateTime<Utc>>,
    /// When the next try is due; `None` with `delivered_at` also `None`: given up.
    pub next: Option<DateTime<Utc>>,
    /// The receiver's answer, when there was one.
    pub status_code: Option<u16>,
    /// What went wrong, when something did.
    pub error: Option<String>,
}

/// Records the tries of a round, in one transaction.
pub fn record_tries(c: &mut Connection, records: &[TryRecord]) -> Result<(), StoreError> {
    let tx = c.transaction()?;
    {
        let mut st = tx.prepare_cached(
            "UPDATE webhook_deliveries SET status = ?2, tries = ?3, next_try_ms = ?4, last_status = ?5,
                    last_error = ?6, delivered_ms = ?7 WHERE id = ?1",
        )?;
        for r in records {
            let status = DeliveryState::after_try(r.delivered_at.is_some(), r.next.is_some());
            st.execute(params![
                r.id,
                status,
                i64::from(r.tries),
                r.next.map(ms),
                r.status_code.map(i64::from),
                r.error,
                r.delivered_at.map(ms)
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// A stored delivery, for listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRow {
    /// Its id.
    pub id: String,
    /// What it tells of.
    pub kind: DeliveryKind,
    /// Its subject.
    pub subject_id: String,
    /// Where.
    pub url: String,
    /// Pending, delivered or failed.
    pub status: DeliveryState,
    /// Tries so far.
    pub tries: u32,
    /// Last status code.
    pub last_status: Option<u16>,
    /// Last error.
    pub last_error: Option<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Next try.
    pub next_try_at: Option<DateTime<Utc>>,
    /// Delivered.
    pub delivered_at: Option<DateTime<Utc>>,
}

/// A page of a workspace's deliveries, oldest first, and their total.
pub fn list_deliveries(
    c: &Connection,
    ws: &WorkspaceRef,
    offset: u64,
    limit: u32,
) -> Result<(Vec<DeliveryRow>, u64), StoreError> {
    let total: i64 = c
        .prepare_cached(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE org_id = ?1 AND workspace_id = ?2",
        )?
        .query_row(params![ws.org_id, ws.workspace_id], |r| r.get(0))?;
    let mut st = c.prepare_cached(
        "SELECT id, kind, subject_id, url, status, tries, last_status, last_error, created_ms, next_try_ms, delivered_ms
         FROM webhook_deliveries WHERE org_id = ?1 AND workspace_id = ?2 ORDER BY seq LIMIT ?3 OFFSET ?4",
    )?;
    let rows = st
        .query_map(
            params![ws.org_id, ws.workspace_id, i64::from(limit), offset as i64],
            |r| {
                let status: DeliveryState = r.get(4)?;
                Ok(DeliveryRow {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    subject_id: r.get(2)?,
                    url: r.get(3)?,
                    next_try_at: if status == DeliveryState::Pending {
                        r.get::<_, Option<i64>>(9)?.map(from_ms)
                    } else {
                        None
                    },
                    status,
                    tries: r.get::<_, i64>(5)? as u32,
                    last_status: r.get::<_, Option<i64>>(6)?.map(|s| s as u16),
                    last_error: r.get(7)?,
                    created_at: from_ms(r.get(8)?),
                    delivered_at: r.get::<_, Option<i64>>(10)?.map(from_ms),
                })
            },
        )?
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rows, total as u64))
}

// ----- inbound calls -----

/// An inbound call as stored. `details` is sealed JSON (caller, identifier, variables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundRow {
    /// Its id.
    pub id: String,
    /// Its workspace.
    pub ws: WorkspaceRef,
    /// The number dialled.
    pub dialled: String,
    /// When it arrived.
    pub at: DateTime<Utc>,
    /// Whether it was answered.
    pub answered: bool,
    /// Why not.
    pub rejection: Option<String>,
    /// The deployment.
    pub deployment_id: Option<String>,
    /// The interaction.
    pub interaction_id: Option<String>,
    /// The cohort the caller was found in.
    pub cohort_id: Option<String>,
    /// Talk time.
    pub talk_ms: Option<i64>,
    /// When it ends.
    pub ends_at: Option<DateTime<Utc>>,
    /// Sealed details.
    pub details: Option<Vec<u8>>,
}

/// The context inbound details are sealed for.
pub fn inbound_context(id: &str) -> String {
    format!("inbound_calls/{id}")
}

/// Inserts an inbound call.
pub fn insert_inbound(c: &Connection, row: &InboundRow) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO inbound_calls (id, seq, org_id, workspace_id, dialled, at_ms, answered, rejection,
                                    deployment_id, interaction_id, cohort_id, talk_ms, ends_ms, ended, details)
         VALUES (?1, (SELECT IFNULL(MAX(seq), 0) + 1 FROM inbound_calls), ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,
                 ?10, ?11, ?12, ?13, ?14)",
    )?
    .execute(params![
        row.id,
        row.ws.org_id,
        row.ws.workspace_id,
        row.dialled,
        ms(row.at),
        row.answered,
        row.rejection,
        row.deployment_id,
        row.interaction_id,
        row.cohort_id,
        row.talk_ms,
        row.ends_at.map(ms),
        !row.answered,
        row.details
    ])?;
    Ok(())
}

const INBOUND_COLUMNS: &str =
    "id, org_id, workspace_id, dialled, at_ms, answered, rejection, deployment_id,
    interaction_id, cohort_id, talk_ms, ends_ms, details";

fn read_inbound(r: &Row<'_>) -> rusqlite::Result<InboundRow> {
    Ok(InboundRow {
        id: r.get(0)?,
        ws: WorkspaceRef::new(r.get::<_, String>(1)?, r.get::<_, String>(2)?),
        dialled: r.get(3)?,
        at: from_ms(r.get(4)?),
        answered: r.get(5)?,
        rejection: r.get(6)?,
        deployment_id: r.get(7)?,
        interaction_id: r.get(8)?,
        cohort_id: r.get(9)?,
        talk_ms: r.get(10)?,
        ends_at: r.get::<_, Option<i64>>(11)?.map(from_ms),
        details: r.get(12)?,
    })
}

/// An inbound call by id.
pub fn inbound(c: &Connection, id: &str) -> Result<Option<InboundRow>, StoreError> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {INBOUND_COLUMNS} FROM inbound_calls WHERE id = ?1"
    ))?;
    optional(st.query_row(params![id], read_inbound))
}

/// Answered inbound calls that have not ended: `(ends, id)`.
pub fn open_inbound(c: &Connection) -> Result<Vec<(i64, String)>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT ends_ms, id FROM inbound_calls WHERE answered = 1 AND ended = 0 ORDER BY ends_ms, id",
    )?;
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Marks an inbound call ended.
pub fn end_inbound(c: &Connection, id: &str) -> Result<(), StoreError> {
    c.prepare_cached("UPDATE inbound_calls SET ended = 1 WHERE id = ?1")?
        .execute(params![id])?;
    Ok(())
}

/// A page of a workspace's inbound calls, oldest first, and their total.
pub fn list_inbound(
    c: &Connection,
    ws: &WorkspaceRef,
    offset: u64,
    limit: u32,
) -> Result<(Vec<InboundRow>, u64), StoreError> {
    let total: i64 = c
        .prepare_cached(
            "SELECT COUNT(*) FROM inbound_calls WHERE org_id = ?1 AND workspace_id = ?2",
        )?
        .query_row(params![ws.org_id, ws.workspace_id], |r| r.get(0))?;
    let mut st = c.prepare_cached(&format!(
        "SELECT {INBOUND_COLUMNS} FROM inbound_calls WHERE org_id = ?1 AND workspace_id = ?2 ORDER BY seq LIMIT ?3 OFFSET ?4"
    ))?;
    let rows = st
        .query_map(
            params![ws.org_id, ws.workspace_id, i64::from(limit), offset as i64],
            read_inbound,
        )?
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rows, total as u64))
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
            id: format!("att-{i:04}"),
            kind: CallKind::Campaign,
            ws: WorkspaceRef::new("org", "ws"),
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
    fn many_calls_inserted_32_a_statement_read_back_as_inserted() {
        let store = Store::in_memory().unwrap();
        // Two whole statements and a remainder of 6, half of them ended.
        let calls: Vec<Call> = (0..70).map(a_call).collect();
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
                let n: i64 = c.query_row("SELECT COUNT(*) FROM attempts", [], |r| r.get(0))?;
                assert_eq!(n, 70);
                Ok(())
            })
            .unwrap();
    }
}
