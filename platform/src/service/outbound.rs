//! Instant outbound: check the request, record a queued attempt, answer its id.

use contracts::validate;
use contracts::wire::{OutboundRequest, OutboundResponse};
use serde_json::Value;

use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::store::calls::{self, Call};
use crate::store::states::CallKind;

/// `kind` of instant outbound attempts.
pub(crate) const KIND: CallKind = CallKind::Outbound;

/// Records a queued attempt for a valid request. The request (the user's number and the
/// agent's variables) is stored sealed under the workspace's data key.
pub(crate) async fn create(
    app: &App,
    who: &Principal,
    body: &Value,
    trace_id: Option<&str>,
) -> Result<OutboundResponse, ApiError> {
    let call = validate::outbound_request(body, app.validation)?;
    let keys = app.keys.workspace(&who.ws, trace_id).await?;
    let now = app.clock.now();
    let id = app.draw_id(move |g| g.attempt_id(now)).await?;
    let request = OutboundRequest {
        app_config: contracts::wire::OutboundAppConfig {
            app_id: call.app_id.clone(),
            app_version: call.app_version,
            connection_config: contracts::wire::OutboundConnectionConfig {
                connection_id: call.connection_id.clone(),
                agent_phone_number: call.agent_phone_number.to_string(),
            },
            agent_variables: Some(call.agent_variables.clone()),
            app_type: Some(call.app_type),
            app_overrides: Some(call.app_overrides.clone()),
        },
        user_config: contracts::wire::UserConfig {
            user_phone_number: call.user_phone_number.to_string(),
        },
        webhook_config: call.webhook.as_ref().map(|w| w.to_wire()),
    };
    let payload = keys.seal(
        &calls::payload_context(&id),
        &serde_json::to_vec(&request).expect("wire types serialise"),
    );
    let queued = Call::queued(
        id.as_str().into(),
        KIND,
        who.ws.clone().into(),
        payload,
        now,
    );
    app.store
        .write(move |c| calls::insert_queued(c, &queued))
        .await?;
    // Dialled at once by the engine.
    app.changes.bump();
    Ok(OutboundResponse { attempt_id: id })
}
