//! The simulation API's operations (the harness's own `/sim/v1`, not the platform's
//! interface): read and move the clock, place an inbound call by hand, list what the
//! engine recorded (inbound calls, webhook deliveries), and reset one workspace.

use contracts::validate::{self, sim as sim_rules};
use contracts::wire::{
    ClockAdvanceResult, InboundCallRecord, Page, SimClockState, WebhookDeliveryRecord, WorkspaceId,
    WorkspaceReset,
};
use serde_json::Value;

use crate::app::App;
use crate::auth::Principal;
use crate::engine::driver::{AdvanceError, Driver};
use crate::engine::inbound;
use crate::error::ApiError;
use crate::store::{WorkspaceRef, deliveries, inbound as inbound_store};

/// The clock now, and whether it is simulated.
pub(crate) fn clock(app: &App) -> SimClockState {
    SimClockState {
        now: app.clock.now(),
        simulated: app.sim.is_some(),
    }
}

/// Sets the simulated clock to the body's `now`, running everything due on the way.
pub(crate) async fn set_clock(
    app: &App,
    driver: &Driver,
    body: &Value,
) -> Result<ClockAdvanceResult, ApiError> {
    let to = sim_rules::clock_set(body, app.validation)?;
    driver
        .advance(sim_rules::Advance::To(to))
        .await
        .map_err(|e| advance_error(e, "now"))
}

/// Moves the simulated clock by the body's `seconds` or to its `to`, running everything due
/// on the way.
pub(crate) async fn advance(
    app: &App,
    driver: &Driver,
    body: &Value,
) -> Result<ClockAdvanceResult, ApiError> {
    let how = sim_rules::clock_advance(body, app.validation)?;
    let field = match how {
        sim_rules::Advance::By(_) => "seconds",
        sim_rules::Advance::To(_) => "to",
    };
    driver
        .advance(how)
        .await
        .map_err(|e| advance_error(e, field))
}

/// `field` names the body field of the target (`to` or `now`) for a move that goes too far.
fn advance_error(e: AdvanceError, field: &str) -> ApiError {
    match e {
        AdvanceError::TooFar { current, target } => ApiError::Validation(
            sim_rules::clock_move_too_far(current, target, field)
                .expect("the driver refuses only moves past the bound"),
        ),
        AdvanceError::RealClock => ApiError::Conflict {
            code: "real_clock",
            message: e.to_string(),
        },
        AdvanceError::Backwards(_) => ApiError::Conflict {
            code: "clock_backwards",
            message: e.to_string(),
        },
        AdvanceError::Engine(e) => ApiError::Internal(e.to_string()),
    }
}

/// Places an inbound call from the body's caller to its dialled number now, answered or
/// refused by the engine as a real one would be. Without the workspace's keys (its key
/// service down) the engine refuses it with `key_service_unavailable`.
pub(crate) async fn inbound_call(
    app: &App,
    driver: &Driver,
    who: &Principal,
    body: &Value,
    trace_id: Option<&str>,
) -> Result<InboundCallRecord, ApiError> {
    let (caller, dialled) = sim_rules::inbound_call(body, app.validation)?;
    let keys = app.keys.workspace(&who.ws, trace_id).await.ok();
    let at = app.clock.now();
    let engine = driver.engine().clone();
    let ws = who.ws.clone();
    tokio::task::spawn_blocking(move || {
        engine.inbound_call(&ws, &caller, &dialled, at, keys.as_ref())
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))?
    .map_err(|e| ApiError::Internal(e.to_string()))
}

/// A page of the workspace's inbound calls, oldest first. Their details are opened with the
/// workspace's keys; without them (its key service down) the records carry none.
pub(crate) async fn list_inbound(
    app: &App,
    who: &Principal,
    query: &[(String, String)],
    trace_id: Option<&str>,
) -> Result<Page<InboundCallRecord>, ApiError> {
    let (offset, limit) = validate::cohort_list_query(query)?;
    let keys = app.keys.workspace(&who.ws, trace_id).await.ok();
    let w = who.ws.clone();
    let (rows, total) = app
        .store
        .read(move |c| inbound_store::list_inbound(c, &w, offset, limit))
        .await?;
    Ok(Page {
        items: rows
            .iter()
            .map(|r| inbound::record(r, keys.as_ref()))
            .collect(),
        total,
        limit,
        offset,
        next_page_uri: None,
        prev_page_uri: None,
    })
}

/// A page of the workspace's webhook deliveries, oldest first (never their bodies).
pub(crate) async fn list_deliveries(
    app: &App,
    who: &Principal,
    query: &[(String, String)],
) -> Result<Page<WebhookDeliveryRecord>, ApiError> {
    let (offset, limit) = validate::cohort_list_query(query)?;
    let w = who.ws.clone();
    let (rows, total) = app
        .store
        .read(move |c| deliveries::list_deliveries(c, &w, offset, limit))
        .await?;
    let items = rows
        .into_iter()
        .map(|r| WebhookDeliveryRecord {
            delivery_id: r.id,
            kind: r.kind.as_str().to_string(),
            subject_id: r.subject_id,
            url: r.url,
            status: r.status.into(),
            tries: r.tries,
            last_status_code: r.last_status,
            last_error: r.last_error,
            created_at: r.created_at,
            next_try_at: r.next_try_at,
            delivered_at: r.delivered_at,
        })
        .collect();
    Ok(Page {
        items,
        total,
        limit,
        offset,
        next_page_uri: None,
        prev_page_uri: None,
    })
}

/// Empties `ws` for the next test: its campaigns, deployments, cohorts, calls, inbound calls
/// and webhook deliveries (in one transaction, the engine's memory rebuilt), its journal
/// entries and the fault rules its key added. Other workspaces, its data keys and the clock
/// (one per platform) are left as they are. Requests of the workspace in flight meanwhile
/// may fail: a reset is for between tests.
pub(crate) async fn reset_workspace(
    app: &App,
    driver: &Driver,
    ws: &WorkspaceRef,
) -> Result<WorkspaceReset, ApiError> {
    let mut removed = driver
        .reset_workspace(ws)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    app.deployment_lists.invalidate(ws);
    removed.journal_entries = app.journal.reset_workspace(ws, app.clock.now());
    removed.fault_rules = app.faults.clear_workspace(ws) as u64;
    app.changes.bump();
    Ok(WorkspaceReset {
        workspace: WorkspaceId {
            org_id: ws.org_id.clone(),
            workspace_id: ws.workspace_id.clone(),
        },
        removed,
    })
}
