//! What the campaign engine keeps, under the path the engine uses: every item lives with its
//! table and is re-exported here. Every state the engine needs to resume after a crash is in
//! these tables; the engine's memory is a cache of them. The schema is migration 3 in
//! `migrations.rs`.

/// The engine's columns of `campaigns` ([`super::campaigns`]): the live campaigns, their
/// pacing and routing state.
pub use super::campaigns::{engine_state, live_campaign_ids, set_engine_state};

/// Admission and users of a campaign ([`super::campaign_users`]): `campaign_cohorts` and
/// `campaign_users`.
pub use super::campaign_users::{
    AdmittedRow, ReadyUser, SET_USER, SealedUser, UserRef, admit_cohort, admit_stop_file,
    admitted_cohorts, admitted_rows, completed_campaign_cohorts, exclude_by_stop_file,
    mark_unfinished, open_users_data, queue_seq, ready_users, set_user,
};

/// Calls, the `attempts` table ([`super::calls`]).
pub use super::calls::{
    Call, Dialed, END_CALL, INSERT_CALL, call, call_payload, calls_in_progress, end_call,
    end_call_with, insert_call, insert_call_with, insert_calls, queued_outbound,
    set_outbound_dialed, workspaces_with_live_calls,
};

/// Ended attempts counted by result, `campaign_results` ([`super::statistics`]).
pub use super::statistics::count_results;

/// Ended attempts counted by the minute dialled and result, `campaign_dial_minutes`
/// ([`super::activity`]).
pub use super::activity::{count_dials, minute_of};

/// Webhook deliveries, `webhook_deliveries` ([`super::deliveries`]).
pub use super::deliveries::{
    Delivery, DeliveryRow, TryRecord, delivery_context, due_deliveries, insert_delivery,
    list_deliveries, next_delivery_due, record_tries,
};

/// Inbound calls, `inbound_calls` ([`super::inbound`]).
pub use super::inbound::{
    InboundRow, end_inbound, inbound, inbound_context, insert_inbound, list_inbound, open_inbound,
};
