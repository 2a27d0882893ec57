//! Inbound calls: the deployment found by the dialled number answers when it is `active` and
//! inside its `inbound_config` (none: always). The caller's number is looked up in the
//! deployment's cohorts (the latest upload wins) and the agent gets that user's variables.
//! A paused deployment, a call outside the schedule, a deleted or unknown number: not
//! answered, recorded with the reason (rule 6: a deleted deployment's numbers are
//! `no_deployment` at once).

use chrono::{DateTime, Duration, Utc};
use contracts::domain::phone::E164;
use contracts::domain::schedule::CallingWindow;
use contracts::wire::{DeploymentStatus, InboundCallRecord, InboundRejection, JsonObject};
use serde::{Deserialize, Serialize};
use telephony_sim::InboundCall;

use super::dialing::interaction_id;
use super::{Engine, EngineError, State, StepKeys, StepReport};
use crate::keys::WorkspaceKeys;
use crate::store::batch::{Connection, in_transaction};
use crate::store::inbound::{InboundRow, end_inbound, inbound, inbound_context, insert_inbound};
use crate::store::{WorkspaceRef, cohorts as cohort_store, deployments, ms};

/// What is sealed of an inbound call: everything that identifies the caller.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Details {
    caller: String,
    user_identifier: Option<String>,
    agent_variables: Option<JsonObject>,
    opening: Option<String>,
    app_id: Option<String>,
    app_version: Option<i64>,
}

fn rejection_name(r: InboundRejection) -> &'static str {
    match r {
        InboundRejection::NoDeployment => "no_deployment",
        InboundRejection::DeploymentPaused => "deployment_paused",
        InboundRejection::OutsideSchedule => "outside_schedule",
        InboundRejection::KeyServiceUnavailable => "key_service_unavailable",
    }
}

fn parse_rejection(s: &str) -> Option<InboundRejection> {
    [
        InboundRejection::NoDeployment,
        InboundRejection::DeploymentPaused,
        InboundRejection::OutsideSchedule,
        InboundRejection::KeyServiceUnavailable,
    ]
    .into_iter()
    .find(|r| rejection_name(*r) == s)
}

/// The record of a stored inbound call; the caller and variables are shown when the keys
/// are at hand.
pub(crate) fn record(row: &InboundRow, keys: Option<&WorkspaceKeys>) -> InboundCallRecord {
    let details: Details = match (&row.details, keys) {
        (Some(sealed), Some(k)) => k
            .open(&inbound_context(&row.id), sealed)
            .ok()
            .and_then(|p| serde_json::from_slice(&p).ok())
            .unwrap_or_default(),
        _ => Details::default(),
    };
    InboundCallRecord {
        call_id: row.id.clone(),
        caller: details.caller,
        dialled: row.dialled.clone(),
        at: row.at,
        answered: row.answered,
        rejection: row.rejection.as_deref().and_then(parse_rejection),
        deployment_id: row.deployment_id.clone(),
        interaction_id: row.interaction_id.clone(),
        cohort_id: row.cohort_id.clone(),
        user_identifier: details.user_identifier,
        agent_variables: details.agent_variables,
        duration: row.talk_ms.map(|t| t as f64 / 1000.0),
        ends_at: row.ends_at,
    }
}

impl Engine {
    /// A call from `caller` to `dialled` in workspace `ws` at `at`, handled as the platform
    /// does; `keys` are the workspace's keys (`None`: its key service is down, the call is
    /// not answered). Answers the record.
    pub(crate) fn inbound_call(
        &self,
        ws: &WorkspaceRef,
        caller: &E164,
        dialled: &E164,
        at: DateTime<Utc>,
        keys: Option<&WorkspaceKeys>,
    ) -> Result<InboundCallRecord, EngineError> {
        let mut state = self.lock();
        let (id, row) = self.app.store.write_blocking(|c| {
            // Drawn (and its position kept) before the transaction: see store::ids.
            let id = self.app.resource_ids.draw(c, |g| g.prefixed("call-"))?;
            let row = in_transaction(c, |tx| {
                let row = self.answer(tx, &mut state, ws, &id, caller, dialled, at, keys)?;
                insert_inbound(tx, &row)?;
                Ok(row)
            })?;
            Ok((id, row))
        })?;
        if let Some(ends) = row.ends_at {
            state
                .inbound
                .push(std::cmp::Reverse((ms(ends), super::Id::from(id))));
        }
        drop(state);
        self.app.changes.bump();
        Ok(record(&row, keys))
    }

    #[allow(clippy::too_many_arguments)]
    fn answer(
        &self,
        c: &Connection,
        _st: &mut State,
        ws: &WorkspaceRef,
        id: &str,
        caller: &E164,
        dialled: &E164,
        at: DateTime<Utc>,
        keys: Option<&WorkspaceKeys>,
    ) -> Result<InboundRow, crate::store::StoreError> {
        let mut row = InboundRow {
            id: id.to_string(),
            ws: ws.clone(),
            dialled: dialled.to_string(),
            at,
            answered: false,
            rejection: None,
            deployment_id: None,
            interaction_id: None,
            cohort_id: None,
            talk_ms: None,
            ends_at: None,
            details: None,
        };
        let seal = |keys: &WorkspaceKeys, d: &Details| {
            keys.seal(
                &inbound_context(id),
                &serde_json::to_vec(d).expect("details serialise"),
            )
        };
        let mut details = Details {
            caller: caller.to_string(),
            ..Default::default()
        };
        let deployment = deployments::by_number(c, ws, dialled.as_str())?;
        let rejection = match &deployment {
            None => Some(InboundRejection::NoDeployment),
            Some(d) if d.status == DeploymentStatus::Paused => {
                Some(InboundRejection::DeploymentPaused)
            }
            Some(d) => {
                let window = d
                    .config
                    .inbound_config
                    .as_ref()
                    .and_then(|w| CallingWindow::try_from(w).ok());
                match window {
                    Some(w) if !w.contains(at) => Some(InboundRejection::OutsideSchedule),
                    _ if keys.is_none() => Some(InboundRejection::KeyServiceUnavailable),
                    _ => None,
                }
            }
        };
        row.deployment_id = deployment.as_ref().map(|d| d.id.clone());
        if let Some(r) = rejection {
            row.rejection = Some(rejection_name(r).to_string());
            row.details = keys.map(|k| seal(k, &details));
            return Ok(row);
        }
        let (Some(d), Some(keys)) = (deployment, keys) else {
            unreachable!("answered calls have a deployment and keys");
        };
        if let Some(user) =
            cohort_store::latest_deployment_user(c, ws, &d.id, &keys.lookup_hash(caller.as_str()))?
            && let Ok(person) = user.open(keys)
        {
            row.cohort_id = Some(user.cohort_id.clone());
            details.user_identifier = person.user_identifier;
            details.agent_variables = Some(person.app_variables);
            details.opening = person.app_overrides.initial_bot_message;
        }
        details.app_id = Some(d.config.app_id.clone());
        details.app_version = Some(d.config.app_version);
        let result = self.telephony.answer_inbound(
            &InboundCall {
                caller: caller.to_string(),
                dialled: dialled.to_string(),
                at,
            },
            id,
        );
        let start = at + result.ring;
        row.answered = true;
        row.interaction_id = Some(interaction_id(self.seed, id));
        row.talk_ms = Some(result.talk.num_milliseconds());
        row.ends_at = Some(start + result.talk);
        row.details = Some(seal(keys, &details));
        Ok(row)
    }

    pub(super) fn inbound_end(
        &self,
        c: &Connection,
        state: &mut State,
        call: super::Id,
        t: DateTime<Utc>,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let id: &str = &call;
        let Some(row) = inbound(c, id)? else {
            return Ok(());
        };
        let url = self
            .app
            .config
            .deployment_webhook(&row.ws)
            .map(str::to_string);
        let Some(url) = url else {
            end_inbound(c, id)?;
            report.calls_ended += 1;
            return Ok(());
        };
        let Some(keys) = keys.get(&row.ws) else {
            let until = state.hold_in_step(&row.ws, t);
            state
                .inbound
                .push(std::cmp::Reverse((ms(until), call.clone())));
            return Ok(());
        };
        end_inbound(c, id)?;
        let rec = record(&row, Some(keys));
        let details: Details = row
            .details
            .as_ref()
            .and_then(|s| keys.open(&inbound_context(id), s).ok())
            .and_then(|p| serde_json::from_slice(&p).ok())
            .unwrap_or_default();
        let talk = Duration::milliseconds(row.talk_ms.unwrap_or(0));
        let end = row.ends_at.unwrap_or(t);
        let interaction = row.interaction_id.clone().unwrap_or_default();
        let body = super::events::deployment_event(
            details.app_id.as_deref().unwrap_or_default(),
            details.app_version.unwrap_or_default(),
            row.deployment_id.as_deref().unwrap_or_default(),
            &interaction,
            &rec.caller,
            &row.dialled,
            talk,
            end - talk,
            end,
            details.agent_variables,
            details.opening.as_deref(),
        );
        self.queue_webhook(
            &mut state.pending,
            keys,
            &row.ws,
            crate::store::states::DeliveryKind::Deployment,
            &interaction,
            &url,
            &body,
            end,
        );
        report.calls_ended += 1;
        report.webhooks_queued += 1;
        Ok(())
    }
}
