//! Campaigns: create, list, get, patch, status changes.

use contracts::validate;
use contracts::wire::{Campaign, CampaignStatus, CampaignSummary, Page};
use rusqlite::Connection;
use serde_json::Value;

use super::conflict;
use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::lifecycle::apply_action;
use crate::store::StoreError;
use crate::store::activity;
use crate::store::campaigns::{self, CampaignRecord};

/// The summary of a campaign at `now`.
pub(crate) fn summary(rec: &CampaignRecord, now: chrono::DateTime<chrono::Utc>) -> CampaignSummary {
    CampaignSummary {
        campaign_id: rec.id.clone(),
        name: rec.spec.name.as_str().to_string(),
        status: rec.status_at(now),
        app_id: rec.spec.app_id.clone(),
        app_type: rec.spec.app_type,
        app_version: rec.spec.app_version,
        description: rec
            .spec
            .description
            .as_ref()
            .map(|d| d.as_str().to_string()),
        created_by: rec.created_by.clone(),
        updated_by: rec.updated_by.clone(),
        created_at: rec.created_at,
        updated_at: rec.updated_at,
    }
}

/// The full campaign at `now`, with its statistics.
pub(crate) fn detail(
    c: &Connection,
    rec: &CampaignRecord,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Campaign, StoreError> {
    Ok(Campaign {
        summary: summary(rec, now),
        app_config: rec.spec.app_config_wire(),
        start_timestamp: rec.spec.start,
        end_timestamp: rec.spec.end,
        allowed_schedule: rec.spec.allowed_schedule_wire(),
        statistics: crate::stats::campaign_statistics(c, rec, now)?,
    })
}

/// Creates a campaign in status `scheduled`.
pub async fn create(app: &App, who: &Principal, body: &Value) -> Result<CampaignSummary, ApiError> {
    create_with_id(app, who, body, None).await
}

/// [`create`] with a given id (fixtures), which must be new; `None` draws one.
pub(crate) async fn create_with_id(
    app: &App,
    who: &Principal,
    body: &Value,
    id: Option<String>,
) -> Result<CampaignSummary, ApiError> {
    let now = app.clock.now();
    let spec = validate::campaign_create(body, now, app.validation)?;
    let (ws, name) = (who.ws.clone(), who.name.clone());
    let ids = app.resource_ids.clone();
    // One write: the id drawn (and its record) and the campaign commit together.
    let answer = app
        .store
        .write(move |c| {
            let tx = c.transaction()?;
            let id = match id {
                Some(id) => id,
                None => ids.draw(&tx, |g| g.campaign_id())?,
            };
            let rec = CampaignRecord {
                id,
                ws,
                status: CampaignStatus::Scheduled,
                spec,
                created_by: name.clone(),
                updated_by: name,
                created_at: now,
                updated_at: now,
            };
            campaigns::insert(&tx, &rec)?;
            tx.commit()?;
            Ok::<_, StoreError>(summary(&rec, now))
        })
        .await?;
    app.changes.bump();
    Ok(answer)
}

/// One page of the workspace's campaigns.
pub(crate) async fn list(
    app: &App,
    who: &Principal,
    query: &[(String, String)],
) -> Result<Page<CampaignSummary>, ApiError> {
    let (params, status) = validate::campaign_list_query(query)?;
    let now = app.clock.now();
    let ws = who.ws.clone();
    let p = params.clone();
    let (rows, total) = app
        .store
        .write(move |c| {
            // Store due time transitions so the status filter sees what clients see.
            campaigns::settle(c, Some(&ws), now)?;
            campaigns::list(c, &ws, &p, status)
        })
        .await?;
    let page = Page {
        items: rows.iter().map(|r| summary(r, now)).collect(),
        total,
        limit: params.limit,
        offset: params.offset,
        next_page_uri: None,
        prev_page_uri: None,
    };
    Ok(page)
}

/// The campaign with its statistics.
pub async fn get(app: &App, who: &Principal, id: &str) -> Result<Campaign, ApiError> {
    let now = app.clock.now();
    let (ws, id) = (who.ws.clone(), id.to_string());
    app.store
        .read(move |c| {
            let Some(rec) = campaigns::get(c, &ws, &id)? else {
                return Err(ApiError::not_found("campaign", &id));
            };
            Ok(detail(c, &rec, now)?)
        })
        .await
}

/// Applies a PATCH while the campaign is `scheduled` or `paused`.
pub async fn patch(
    app: &App,
    who: &Principal,
    id: &str,
    body: Value,
) -> Result<Campaign, ApiError> {
    let now = app.clock.now();
    let (ws, id, name, opts) = (
        who.ws.clone(),
        id.to_string(),
        who.name.clone(),
        app.validation,
    );
    let answer = app
        .store
        .write(move |c| {
            let tx = c.transaction()?;
            let Some(mut rec) = campaigns::get(&tx, &ws, &id)? else {
                return Err(ApiError::not_found("campaign", &id));
            };
            let status = rec.status_at(now);
            if !matches!(status, CampaignStatus::Scheduled | CampaignStatus::Paused) {
                return Err(conflict(
                    "campaign_not_editable",
                    format!(
                        "a campaign can be changed only while scheduled or paused; '{id}' is {}",
                        status.as_str()
                    ),
                ));
            }
            rec.spec = validate::campaign_patch(&body, now, &rec.spec, opts)?;
            rec.status = status;
            rec.updated_by = name;
            rec.updated_at = now;
            campaigns::update(&tx, &rec)?;
            let answer = detail(&tx, &rec, now)?;
            tx.commit()?;
            Ok(answer)
        })
        .await;
    app.changes.bump();
    answer
}

/// `pause`, `resume` or `cancel`, from the states that allow it (409 otherwise).
pub async fn set_status(
    app: &App,
    who: &Principal,
    id: &str,
    body: &Value,
) -> Result<Campaign, ApiError> {
    let action = validate::campaign_status(body, app.validation)?;
    let now = app.clock.now();
    let (ws, id, name) = (who.ws.clone(), id.to_string(), who.name.clone());
    let answer = app
        .store
        .write(move |c| {
            let tx = c.transaction()?;
            let Some(mut rec) = campaigns::get(&tx, &ws, &id)? else {
                return Err(ApiError::not_found("campaign", &id));
            };
            let from = rec.status_at(now);
            let to = match apply_action(from, action, rec.spec.start, rec.spec.end, now) {
                Ok(to) => to,
                Err(e) => return Err(conflict("invalid_status_transition", e.to_string())),
            };
            rec.status = to;
            rec.updated_by = name;
            rec.updated_at = now;
            campaigns::update(&tx, &rec)?;
            let row = activity::ActionRow {
                at: now,
                action,
                status: to,
                actor: rec.updated_by.clone(),
            };
            activity::record_action(&tx, &id, &row)?;
            let answer = detail(&tx, &rec, now)?;
            tx.commit()?;
            Ok(answer)
        })
        .await;
    app.changes.bump();
    answer
}
