//! The platform's side of the interface: the HTTP API (outbound calls, campaigns, cohorts,
//! deployments) over a SQLite store, with customer data encrypted at rest, and the engine
//! that dials campaigns, answers inbound calls and delivers webhooks.
//!
//! - [`app`]: the shared state of a running platform.
//! - [`auth`]: the configured API keys and who a request is ([`auth::Principal`]).
//! - [`config`]: configuration from the file, the environment and flags; BYOK settings in
//!   [`config::byok`].
//! - [`api`]: warp routes, one module per resource; a request's key checked against its
//!   path in [`api::auth`]; the live page (`/ui`) in [`api::ui`], the routes it reads in
//!   [`api::live`].
//! - [`service`]: what each operation does, apart from HTTP.
//! - [`store`]: SQLite, migrations, rows of each resource.
//! - [`keys`]: encryption at rest as one story: the sealed-blob format, the data-key sources
//!   (local, and the customer's key service: BYOK), the data-key ring (single flight, cache).
//! - [`ingest`]: cohort ingest: the background worker that turns uploaded CSV files into
//!   users, and the row rules that uploads and streams share.
//! - [`lifecycle`]: the campaign life cycle as one function of the clock.
//! - [`stats`]: campaign statistics (the arithmetic; the counts are [`store::statistics`]).
//! - [`engine`]: what moves in time: dialling, retries, windows, inbound calls, webhook
//!   delivery; stepped by a real-time driver or on the simulated clock.
//! - [`webhooks`]: webhook signing, verification and backoff.
//! - [`error`]: every failure and its answer.
//! - [`server`]: serving the routes on a listener, with graceful shutdown.
//! - [`intercept`]: what every request to the interface passes through: the fault rules
//!   and the request journal.
//! - [`media_type`]: reading a `Content-Type` (its essence, whether it is JSON).
//! - [`journal`]: the request journal, the contract's verdict per request, API coverage.
//! - [`faults`]: the platform's failures on demand.
//! - [`fixtures`]: campaigns, deployments and cohorts created at start with fixed ids.
//! - [`connection`]: HTTP/1.1 connections: limits, timeouts, refusals in the error shape.
//! - [`process`]: settings and limits of the server process (malloc arenas, open files).
//! - [`cli`]: the `platform` command (`platform serve`), shared by the `platform` binary and
//!   `harness`.
//!
//! A user of the crate (the `platform` binary, `harness`, the tests and the benchmarks)
//! touches the public modules: `app` ([`App`]), `auth`, `cli`, `config`, `engine`,
//! `fixtures`, `ingest`, `journal`, `keys`, `lifecycle`, `process`, `server`, `service`,
//! `store`, `webhooks`, and `api::ui`. The others (`connection`, `error`, `faults`,
//! `intercept`, `media_type`, `stats`), like the modules not public inside these, are
//! internal.
//!
//! # The spec's rules and the state transitions, in one hop
//!
//! The interface spec is `../shared/seeds/000_1e05a60a91bd1e66.txt` (its "Rules:" list is
//! numbered 1 to 6). Each rule, and each change of a stored state, names the function that
//! makes it happen and the tests that prove it (`tests/platform/<file>.rs::<test>` are the
//! integration tests of this crate; `mod::tests::<test>` are unit tests).
//!
//! | Rule | Code | Tests |
//! |---|---|---|
//! | 1. every dial is one attempt; `max_retries: N` gives N+1 | [`engine::dialing::next_step`], [`contracts::model::RetryPolicy::max_attempts`] | `engine.rs::rule_1_max_retries_2_gives_exactly_3_attempts_of_an_always_busy_number`, `engine::dialing::tests::classification_and_retries` |
//! | 2. `attempts_per_second` is a dial rate | [`engine::dialing::Pacing`] (the slots), `Run::take_slot` in `engine/state.rs` (a dial takes a slot), `engine::queue::next_dial` (waits for it) | `engine.rs::rule_2_the_rate_is_a_dial_rate_120_dials_in_the_first_window_minute_at_2_per_second`, `engine::dialing::tests::pacing_places_exactly_the_rate`, `engine::queue::tests::a_dial_waits_for_its_slot_of_the_pace_and_for_a_hold` |
//! | 3. budget = users x (1 + max_retries), warned when above capacity | [`stats::campaign_statistics`], [`stats::from_counts`] (the arithmetic over [`store::statistics::campaign_counts`]) | `engine.rs::rule_3_warns_when_the_budget_exceeds_the_capacity`, `campaigns.rs::statistics_show_the_budget_beside_the_capacity`, `stats::tests::a_budget_above_the_capacity_warns_until_the_campaign_is_final` |
//! | 4. dials split by `weight`, numbers of a connection used equally | `engine::dialing::Routing::pick` | `engine.rs::rule_4_weights_3_and_1_split_1000_dials_750_250_within_one_at_every_prefix`, `engine::dialing::tests::weights_3_and_1_split_750_250_within_one_at_every_prefix`, `engine::dialing::tests::any_weights_track_their_share` |
//! | 5. connected but shorter than `threshold_seconds` is short, retried only with `short_duration` in `retry_on` | [`engine::dialing::CallResult::classify`], [`engine::dialing::next_step`] (through `engine::call_end::decide_retry`) | `engine.rs::rule_5_a_short_call_is_retried_only_with_short_duration_in_retry_on`, `engine::dialing::tests::classification_and_retries` |
//! | 6. deleting a deployment is permanent and stops inbound handling at once | [`service::deployments::delete`], [`engine::inbound`] (`no_deployment`) | `engine.rs::rule_6_after_delete_an_inbound_call_to_its_number_is_not_answered`, `deployments.rs::delete_is_permanent` |
//!
//! | Transition | Code | Tests |
//! |---|---|---|
//! | campaign `scheduled` -> `active` -> `ended` with the clock | [`lifecycle`], the one owner: [`lifecycle::effective_status`] (every read), [`lifecycle::settle_status`] (stored by [`store::campaigns::settle`] for lists and [`store::campaigns::settle_one`] for the engine), [`lifecycle::next_time_transition`] (when the engine's `Activate` and `End` events fall, chosen by `engine::queue::next_event` and made by `Engine::move_with_time` in `engine/campaign.rs`) | `lifecycle::tests::time_moves_status`, `lifecycle::tests::the_next_change_with_time`, `store::campaigns::tests::settle_one_stores_what_the_lifecycle_decides`, `campaigns.rs::status_follows_the_clock`, `engine.rs::the_end_leaves_unfinished_users_counted`, `engine::queue::tests::scheduled_runs_start_active_runs_end_paused_runs_wait` |
//! | campaign pause, resume, cancel | [`lifecycle::apply_action`] via [`service::campaigns::set_status`]; the engine takes each change in by the campaign's revision ([`store::campaigns::update`] counts it up; `Engine::load_run` in `engine/campaign.rs`) | `lifecycle::tests::actions`, `campaigns.rs::pause_resume_cancel_and_their_409s`, `engine.rs::pause_stops_dialling_at_once_resume_continues_cancel_stops_for_good`, `engine_changes.rs::pause_and_resume_at_one_instant_dials_on_deterministically`, `engine_changes.rs::a_schedule_patched_while_paused_is_the_one_dialled_after_the_resume` |
//! | campaign user `ready` -> `calling` -> `ready` (retry) / `done` / `unfinished`; `ready` -> `excluded` (stop file) | `Engine::dial` (`engine/campaign.rs`), `engine::call_end::update_user` (after `engine::call_end::decide_retry`), [`store::campaign_users::mark_unfinished`], [`store::campaign_users::exclude_by_stop_file`] | `engine.rs::rule_1_max_retries_2_gives_exactly_3_attempts_of_an_always_busy_number`, `engine.rs::the_end_leaves_unfinished_users_counted`, `engine.rs::stop_files_exclude_users_already_in_the_campaign`, `durability.rs::an_engine_rebuilt_between_every_two_steps_carries_on_exactly`, `engine::call_end::tests::a_retry_of_a_campaign_no_longer_live_is_cut_short` |
//! | call (attempt) `queued` -> `calling` -> `ended` | [`service::outbound`] ([`store::calls::insert_queued`]: queued), `Engine::outbound` (`engine/outbound.rs`) and `Engine::dial` (`engine/campaign.rs`) (calling), `Engine::end_outbound` (`engine/outbound.rs`) and `engine::call_end::record_result` (ended), written by the batch (`engine/batch.rs`, [`store::batch`]) | `engine.rs::instant_outbound_is_dialled_at_once_and_its_webhook_sent_when_it_ends`, `durability.rs::batches_of_two_events_whose_writes_overlap_the_next_batch_give_the_same_run` |
//! | webhook delivery `pending` -> `delivered` / `failed` (retried with backoff while `pending`) | [`store::deliveries::record_tries`], [`webhooks::backoff`], [`engine::driver`] | `engine.rs::failed_webhooks_are_retried_with_backoff_on_the_clock`, `webhooks.rs::a_failed_try_in_a_parallel_round_is_retried_after_its_backoff`, `webhooks::tests::backoff_doubles_up_to_the_cap` |
//! | cohort `processing` -> `completed` / `failed` | [`ingest::worker`], [`store::cohorts::mark_completed`], [`store::cohorts::mark_failed`] | `cohorts/reading.rs::an_upload_is_answered_processing_and_completes_with_its_rejections`, `cohorts/refusals.rs::whole_upload_failures_say_why` |
//! | deployment `active` <-> `paused`, deleted | [`service::deployments::set_status`], [`service::deployments::delete`] | `deployments.rs::create_get_patch_and_status_bodies`, `deployments.rs::delete_is_permanent` |
//! | inbound call answered or refused (`no_deployment`, `deployment_paused`, `outside_schedule`, `key_service_unavailable`) | [`engine::inbound`] | `engine.rs::inbound_calls_are_personalised_from_the_latest_cohort_and_refused_when_paused_or_outside`, `engine.rs::rule_6_after_delete_an_inbound_call_to_its_number_is_not_answered` |

#![warn(missing_docs)]
// An item no other crate can reach is `pub(crate)`, so the compiler reports what is unused.
#![warn(unreachable_pub)]
// Module docs map the modules inside the crate too, which the public docs do not show;
// CI also builds the docs with the private items, where every such link is checked.
#![allow(rustdoc::private_intra_doc_links)]

pub mod api;
pub mod app;
pub mod auth;
pub mod cli;
pub mod config;
pub(crate) mod connection;
pub mod engine;
pub(crate) mod error;
pub(crate) mod faults;
pub mod fixtures;
pub mod ingest;
pub(crate) mod intercept;
pub mod journal;
pub mod keys;
pub mod lifecycle;
pub(crate) mod media_type;
pub mod process;
pub mod server;
pub mod service;
pub(crate) mod stats;
pub mod store;
pub mod webhooks;

pub use app::App;
