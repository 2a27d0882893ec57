//! Instant outbound calls: dialled as soon as they are queued (no window, no pace), their
//! webhook queued when they end. The request (numbers, variables, webhook) stays sealed in
//! the call's row; the engine opens it to dial and again at the end, so it keeps none of it
//! in memory while the call is in progress.

use std::cmp::Reverse;

use chrono::{DateTime, Utc};
use contracts::wire::OutboundRequest;
use telephony_sim::DialRequest;

use super::batch::BatchDb;
use super::call_end::Ended;
use super::dialing::CallResult;
use super::state::State;
use super::{Engine, EngineError, Id, StepKeys, StepReport, events};
use crate::keys::WorkspaceKeys;
use crate::store::batch::Connection;
use crate::store::calls::Dialed;
use crate::store::states::{CallStatus, DeliveryKind};
use crate::store::{calls, ms};

/// The instant outbound request sealed in an attempt's payload, if it opens.
fn open_outbound_request(
    keys: &WorkspaceKeys,
    attempt_id: &str,
    payload: &[u8],
) -> Option<OutboundRequest> {
    let plain = keys
        .open(&calls::payload_context(attempt_id), payload)
        .ok()?;
    serde_json::from_slice(&plain).ok()
}

impl Engine {
    /// Dials a queued instant outbound call at `t` (held while its workspace's keys are
    /// missing; ended as an internal error when its request does not open).
    pub(super) fn outbound(
        &self,
        c: &Connection,
        state: &mut State,
        attempt: Id,
        t: DateTime<Utc>,
        keys: &StepKeys,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let attempt_id: &str = &attempt;
        let Some(call) = calls::call(c, attempt_id)? else {
            return Ok(());
        };
        if call.status != CallStatus::Queued {
            return Ok(());
        }
        let Some(keys) = keys.get(&call.ws) else {
            let until = state.hold_in_step(&call.ws, t);
            state.outbound.push(Reverse((ms(until), attempt.clone())));
            return Ok(());
        };
        let request = match open_outbound_request(keys, attempt_id, &call.payload) {
            Some(r) => r,
            None => {
                tracing::error!(
                    attempt = attempt_id,
                    "an outbound request does not open; dropped as failed"
                );
                calls::end_call(c, attempt_id, CallResult::InternalError.as_str(), t)?;
                return Ok(());
            }
        };
        let from = request
            .app_config
            .connection_config
            .agent_phone_number
            .clone();
        let result = self.telephony.dial(&DialRequest {
            attempt_id: attempt_id.to_string(),
            from: from.clone(),
            to: request.user_config.user_phone_number.clone(),
            at: t,
            attempt_index: 0,
        });
        let ends = result.ends_at(t);
        calls::set_outbound_dialed(
            c,
            &Dialed {
                id: attempt_id,
                at: t,
                ends,
                outcome: result.outcome.as_str(),
                failure_reason: result.failure_reason.as_deref(),
                talk_ms: result.talk.num_milliseconds(),
                connection_id: &request.app_config.connection_config.connection_id,
                agent_number: &from,
            },
        )?;
        state.calls.push(Reverse((ms(ends), attempt.clone())));
        state.inflight.insert(
            attempt.clone(),
            calls::Call {
                status: CallStatus::Calling,
                dialed_at: Some(t),
                ends_at: Some(ends),
                outcome: Some(super::campaign::outcome_text(result.outcome)),
                failure_reason: result.failure_reason.clone(),
                talk_ms: Some(result.talk.num_milliseconds()),
                connection_id: Some(Id::from(
                    request.app_config.connection_config.connection_id.as_str(),
                )),
                agent_number: Some(Id::from(from)),
                // Read back from the database when the call ends.
                payload: Vec::new(),
                ..call
            },
        );
        report.dials += 1;
        Ok(())
    }

    /// The end of an instant outbound call: its row ended with its result (no threshold: an
    /// instant call has none), and its webhook, when the request asked for one, queued.
    pub(super) fn end_outbound(
        &self,
        db: &mut BatchDb<'_>,
        state: &mut State,
        keys: &WorkspaceKeys,
        ended: Ended,
        report: &mut StepReport,
    ) -> Result<(), EngineError> {
        let Ended {
            attempt,
            call,
            at,
            outcome,
            talk,
        } = ended;
        let attempt_id: &str = &attempt;
        let result = CallResult::classify(outcome, talk, 0);
        calls::end_call(db.conn()?, attempt_id, result.as_str(), at)?;
        let payload = if call.payload.is_empty() {
            calls::call_payload(db.conn()?, attempt_id)?
        } else {
            call.payload.clone()
        };
        let Some(request) = open_outbound_request(keys, attempt_id, &payload) else {
            tracing::error!(
                attempt = attempt_id,
                "an outbound request does not open; no webhook"
            );
            return Ok(());
        };
        if let Some(hook) = &request.webhook_config {
            let body = events::outbound_event(self.seed, &call, outcome, talk, &request, hook);
            self.queue_webhook(
                &mut state.pending,
                keys,
                &call.ws,
                DeliveryKind::Outbound,
                attempt_id,
                &hook.url,
                &body,
                at,
            );
            report.webhooks_queued += 1;
        }
        Ok(())
    }
}
