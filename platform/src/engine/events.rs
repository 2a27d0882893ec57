//! The webhook payloads of finished calls, as in the notes. The conversation itself is
//! simulated: a connected call gets a short transcript and the agent's variables back.

use chrono::Duration;
use contracts::model::CampaignSpec;
use contracts::wire::{
    CallStatus, CampaignCallEvent, ChannelInfo, DeploymentCallEvent, JsonObject, OutboundCallEvent,
    OutboundRequest, TranscriptTurn, WebhookConfig,
};
use serde_json::Value;
use telephony_sim::Outcome;

use super::dialing::{CallResult, NextStep, interaction_id};
use crate::store::calls::Call;
use crate::store::cohorts::CohortUser;

fn seconds(talk: Duration) -> f64 {
    talk.num_milliseconds() as f64 / 1000.0
}

/// A simulated conversation: the agent's opening and the user's answer.
pub(crate) fn transcript(opening: Option<&str>) -> Vec<TranscriptTurn> {
    vec![
        TranscriptTurn {
            role: "agent".into(),
            content: opening
                .unwrap_or("Hello, this is your assistant calling.")
                .into(),
        },
        TranscriptTurn {
            role: "user".into(),
            content: "Hi, thanks for calling.".into(),
        },
    ]
}

/// Why a call did not complete, for `failure_reason`.
fn failure_reason(call: &Call, result: CallResult) -> Option<String> {
    match result {
        CallResult::Completed => None,
        CallResult::ShortDuration => Some("short_duration".into()),
        _ => Some(
            call.failure_reason
                .clone()
                .unwrap_or_else(|| result.as_str().to_string()),
        ),
    }
}

/// The instant outbound event.
pub(crate) fn outbound_event(
    seed: u64,
    call: &Call,
    outcome: Outcome,
    talk: Duration,
    request: &OutboundRequest,
    hook: &WebhookConfig,
) -> Value {
    let connected = outcome == Outcome::Connected;
    let status = match outcome {
        Outcome::Connected => CallStatus::Connected,
        Outcome::NoAnswer | Outcome::Voicemail => CallStatus::NoAnswer,
        Outcome::Busy => CallStatus::Busy,
        Outcome::Failed | Outcome::ProviderError | Outcome::InternalError => CallStatus::Failed,
    };
    let event = OutboundCallEvent {
        attempt_id: call.id.to_string(),
        status,
        channel_info: ChannelInfo {
            channel_type: "telephony".into(),
            channel_provider: request.app_config.connection_config.connection_id.clone(),
            agent_phone_number: request
                .app_config
                .connection_config
                .agent_phone_number
                .clone(),
        },
        duration: connected.then(|| seconds(talk)),
        interaction_id: connected.then(|| interaction_id(seed, &call.id)),
        failure_reason: (!connected).then(|| {
            call.failure_reason
                .clone()
                .unwrap_or_else(|| outcome.as_str().to_string())
        }),
        final_agent_variables: connected.then(|| {
            request
                .app_config
                .agent_variables
                .clone()
                .unwrap_or_default()
        }),
        webhook_config: hook.clone(),
        interaction_transcript: connected.then(|| {
            transcript(
                request
                    .app_config
                    .app_overrides
                    .as_ref()
                    .and_then(|o| o.initial_bot_message.as_deref()),
            )
        }),
    };
    serde_json::to_value(event).expect("events serialise")
}

/// The campaign event of one attempt.
#[allow(clippy::too_many_arguments)]
pub(crate) fn campaign_event(
    seed: u64,
    spec: &CampaignSpec,
    campaign_id: &str,
    call: &Call,
    outcome: Outcome,
    talk: Duration,
    result: CallResult,
    next: &NextStep,
    person: Option<&CohortUser>,
    hook: &contracts::model::WebhookTarget,
) -> Value {
    let connected = outcome == Outcome::Connected;
    let variables: Option<JsonObject> = person.map(|p| p.app_variables.clone());
    let event = CampaignCallEvent {
        app_id: spec.app_id.clone(),
        app_version: spec.app_version,
        attempt_id: call.id.to_string(),
        campaign_id: campaign_id.to_string(),
        cohort_id: call.cohort_id.as_deref().unwrap_or_default().to_string(),
        completion_status: result.completion(),
        connectivity_status: result.connectivity(),
        next_action_status: match next {
            NextStep::Retry { action, .. } => Some(*action),
            NextStep::Done => None,
        },
        failure_reason: failure_reason(call, result),
        user_identifier: person.and_then(|p| p.user_identifier.clone()),
        user_phone_number: person.map(|p| p.phone_number.clone()).unwrap_or_default(),
        agent_phone_number: call.agent_number.as_deref().unwrap_or_default().to_string(),
        duration: connected.then(|| seconds(talk)),
        interaction_id: connected.then(|| interaction_id(seed, &call.id)),
        retry_attempt: call.retry_attempt,
        executed_at: call.dialed_at.unwrap_or(call.created_at),
        initial_agent_variables: variables.clone(),
        final_agent_variables: if connected { variables } else { None },
        interaction_transcript: connected.then(|| {
            transcript(person.and_then(|p| p.app_overrides.initial_bot_message.as_deref()))
        }),
        metadata: hook.metadata.clone(),
    };
    serde_json::to_value(event).expect("events serialise")
}

/// The deployment event of an answered inbound call.
#[allow(clippy::too_many_arguments)]
pub(crate) fn deployment_event(
    app_id: &str,
    app_version: i64,
    deployment_id: &str,
    interaction: &str,
    caller: &str,
    dialled: &str,
    talk: Duration,
    start: chrono::DateTime<chrono::Utc>,
    end: chrono::DateTime<chrono::Utc>,
    variables: Option<JsonObject>,
    opening: Option<&str>,
) -> Value {
    let event = DeploymentCallEvent {
        app_id: app_id.to_string(),
        app_version,
        deployment_id: deployment_id.to_string(),
        interaction_id: interaction.to_string(),
        user_phone_number: caller.to_string(),
        agent_phone_number: dialled.to_string(),
        duration: Some(seconds(talk)),
        final_agent_variables: variables,
        output_agent_variables: Some(JsonObject::new()),
        start_datetime: start,
        end_datetime: end,
        interaction_transcript: Some(transcript(opening)),
    };
    serde_json::to_value(event).expect("events serialise")
}
