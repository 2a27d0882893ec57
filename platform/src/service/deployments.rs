//! Inbound deployments: create, list, get, patch, status, delete.

use contracts::validate;
use contracts::wire::{Deployment, DeploymentAction, DeploymentListItem, DeploymentStatus, Page};
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use super::conflict;
use super::deployment_lists::{Lookup, MAX_CACHED, Snapshot};
use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::store::deployments::{self, DeploymentRecord, NumberTaken};

fn taken(t: NumberTaken) -> ApiError {
    conflict(
        "phone_number_in_use",
        format!(
            "{} already belongs to deployment '{}' of this workspace; a number routes to one deployment at a time",
            t.phone_number, t.deployment_id
        ),
    )
}

/// Creates a deployment in status `active`; its numbers must be free in the workspace.
pub(crate) async fn create(
    app: &App,
    who: &Principal,
    body: &Value,
) -> Result<Deployment, ApiError> {
    create_with_id(app, who, body, None).await
}

/// [`create`] with a given id (fixtures), which must be new; `None` draws one.
pub(crate) async fn create_with_id(
    app: &App,
    who: &Principal,
    body: &Value,
    id: Option<String>,
) -> Result<Deployment, ApiError> {
    let spec = validate::deployment_create(body, app.validation)?;
    let now = app.clock.now();
    let (ws, name) = (who.ws.clone(), who.name.clone());
    let ids = app.resource_ids.clone();
    let lists = app.deployment_lists.clone();
    // One write: the id drawn (and its record) and the deployment commit together.
    app.store
        .write(move |c| {
            let tx = c.transaction()?;
            let id = match id {
                Some(id) => id,
                None => ids.draw(&tx, |g| g.deployment_id())?,
            };
            let rec = DeploymentRecord {
                id,
                ws,
                status: DeploymentStatus::Active,
                config: spec.to_create_request(),
                created_by: name,
                updated_by: None,
                created_at: now,
                updated_at: now,
            };
            if let Some(t) = deployments::number_conflict(&tx, &rec.ws, &rec.phone_numbers(), None)?
            {
                // The id drawn stays drawn, as every id the stream gave: a restart carries on
                // after it.
                tx.commit()?;
                return Err(taken(t));
            }
            deployments::insert(&tx, &rec)?;
            tx.commit()?;
            // Inside the write: a request dropped while it waits still drops the snapshot.
            lists.invalidate(&rec.ws);
            Ok(rec.to_wire())
        })
        .await
}

/// The in-memory snapshot of the workspace's deployments ([`super::deployment_lists`]),
/// loaded when missing; `None` for a workspace too large for it.
async fn snapshot(app: &App, who: &Principal) -> Result<Option<Arc<Snapshot>>, ApiError> {
    Ok(match app.deployment_lists.lookup(&who.ws) {
        Lookup::Hit(s) => Some(s),
        Lookup::TooBig => None,
        Lookup::Miss(generation) => {
            let ws = who.ws.clone();
            let records = app
                .store
                .read(move |c| deployments::all(c, &ws, MAX_CACHED + 1))
                .await?;
            if records.len() > MAX_CACHED {
                app.deployment_lists.offer_too_big(&who.ws, generation);
                None
            } else {
                let s = Arc::new(Snapshot::build(&records));
                app.deployment_lists.offer(&who.ws, generation, s.clone());
                Some(s)
            }
        }
    })
}

/// One page of the workspace's deployments, from the in-memory snapshot of the workspace
/// ([`super::deployment_lists`]), and that snapshot (where the answer may be kept); a
/// workspace too large for it is listed by SQL.
pub(crate) async fn list(
    app: &App,
    who: &Principal,
    query: &[(String, String)],
) -> Result<(Page<Box<RawValue>>, Option<Arc<Snapshot>>), ApiError> {
    let params = validate::deployment_list_query(query)?;
    let snapshot = snapshot(app, who).await?;
    let (items, total) = match &snapshot {
        Some(s) => {
            let (items, total) = s.page(&params);
            (items.into_iter().map(RawValue::to_owned).collect(), total)
        }
        None => {
            let (ws, p) = (who.ws.clone(), params.clone());
            let (rows, total) = app
                .store
                .read(move |c| deployments::list(c, &ws, &p))
                .await?;
            let items = rows
                .iter()
                .map(|r| {
                    serde_json::value::to_raw_value(&DeploymentListItem {
                        deployment: r.to_wire(),
                        phone_numbers: r.phone_numbers(),
                    })
                    .expect("a deployment list item serialises")
                })
                .collect();
            (items, total)
        }
    };
    let page = Page {
        items,
        total,
        limit: params.limit,
        offset: params.offset,
        next_page_uri: None,
        prev_page_uri: None,
    };
    Ok((page, snapshot))
}

/// A deployment.
pub(crate) async fn get(app: &App, who: &Principal, id: &str) -> Result<Deployment, ApiError> {
    let found = app.store.read_short(|c| deployments::get(c, &who.ws, id))?;
    found
        .map(|r| r.to_wire())
        .ok_or_else(|| ApiError::not_found("deployment", id))
}

/// Applies a PATCH; new numbers must be free in the workspace.
pub(crate) async fn patch(
    app: &App,
    who: &Principal,
    id: &str,
    body: Value,
) -> Result<Deployment, ApiError> {
    let now = app.clock.now();
    let (ws, id, name, opts) = (
        who.ws.clone(),
        id.to_string(),
        who.name.clone(),
        app.validation,
    );
    let lists = app.deployment_lists.clone();
    app.store
        .write(move |c| {
            let tx = c.transaction()?;
            let Some(mut rec) = deployments::get(&tx, &ws, &id)? else {
                return Err(ApiError::not_found("deployment", &id));
            };
            let next = validate::deployment_patch(&body, &rec.spec()?, opts)?;
            rec.config = next.to_create_request();
            if let Some(t) =
                deployments::number_conflict(&tx, &ws, &rec.phone_numbers(), Some(&id))?
            {
                return Err(taken(t));
            }
            rec.updated_by = Some(name);
            rec.updated_at = now;
            deployments::update(&tx, &rec)?;
            tx.commit()?;
            // Inside the write: a request dropped while it waits still drops the snapshot.
            lists.invalidate(&ws);
            Ok(rec.to_wire())
        })
        .await
}

/// `pause` (from `active`) or `resume` (from `paused`); the same status again is a 409.
pub(crate) async fn set_status(
    app: &App,
    who: &Principal,
    id: &str,
    body: &Value,
) -> Result<Deployment, ApiError> {
    let action = validate::deployment_status(body, app.validation)?;
    let now = app.clock.now();
    let (ws, id, name) = (who.ws.clone(), id.to_string(), who.name.clone());
    let lists = app.deployment_lists.clone();
    app.store
        .write(move |c| {
            let tx = c.transaction()?;
            let Some(mut rec) = deployments::get(&tx, &ws, &id)? else {
                return Err(ApiError::not_found("deployment", &id));
            };
            let to = match (action, rec.status) {
                (DeploymentAction::Pause, DeploymentStatus::Active) => DeploymentStatus::Paused,
                (DeploymentAction::Resume, DeploymentStatus::Paused) => DeploymentStatus::Active,
                (action, from) => {
                    let verb = match action {
                        DeploymentAction::Pause => "pause",
                        DeploymentAction::Resume => "resume",
                    };
                    return Err(conflict(
                        "invalid_status_transition",
                        format!("cannot {verb} a deployment that is {}", from.as_str()),
                    ));
                }
            };
            rec.status = to;
            rec.updated_by = Some(name);
            rec.updated_at = now;
            deployments::update(&tx, &rec)?;
            tx.commit()?;
            // Inside the write: a request dropped while it waits still drops the snapshot.
            lists.invalidate(&ws);
            Ok(rec.to_wire())
        })
        .await
}

/// Deletes a deployment for good (rule 6): its numbers are free at once and every later call on
/// its id is a 404.
pub(crate) async fn delete(app: &App, who: &Principal, id: &str) -> Result<(), ApiError> {
    let (ws, id2) = (who.ws.clone(), id.to_string());
    let lists = app.deployment_lists.clone();
    let existed = app
        .store
        .write(move |c| {
            let tx = c.transaction()?;
            let existed = deployments::delete(&tx, &ws, &id2)?;
            tx.commit()?;
            // Inside the write: a request dropped while it waits still drops the snapshot.
            lists.invalidate(&ws);
            Ok::<_, crate::store::StoreError>(existed)
        })
        .await?;
    if existed {
        Ok(())
    } else {
        Err(ApiError::not_found("deployment", id))
    }
}
