//! Mutants of the `endpoints` group: one answer of one operation breaks its schema (or does
//! not do what it says).

use reqwest::Method;
use serde_json::json;

use super::super::support::Mutation;
use super::{
    answer_edit, drop_field, drop_item_field, intercept, mutants, request_edit, respond, under,
};

/// The rejected records of a cohort of `parent` answered as JSON, not CSV.
fn rejected_file_in_json(parent: &'static str) -> Mutation {
    respond(move |req, resp| {
        if under(req, Method::GET, parent, &["*", "cohorts", "*", "files"])
            && resp.status == 200
            && req.param("file_type").as_deref() == Some("rejected_records")
        {
            resp.set_json(&json!({"rows": resp.body.len()}));
        }
    })
}

/// A campaign's instants written as the wall-clock time of its schedule's zone with a `Z`
/// (Asia/Kathmandu is UTC+05:45 all year).
fn local_as_utc(campaign: &mut serde_json::Value) {
    if campaign["allowed_schedule"]["timezone"] != "Asia/Kathmandu" {
        return;
    }
    for f in ["start_timestamp", "end_timestamp"] {
        if let Some(t) = campaign[f]
            .as_str()
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        {
            let local = t.naive_utc() + chrono::Duration::minutes(5 * 60 + 45);
            campaign[f] = json!(local.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string());
        }
    }
}

mutants! {
    /// A campaign read shows its instants as its schedule's local time labelled UTC.
    fn campaign_instants_local_time_as_utc() fails ["endpoints.campaign_get", "endpoints.campaign_patch"] {
        answer_edit(|r| r.method == Method::GET && r.is_campaign(), local_as_utc)
    }

    /// The instant outbound answer has no attempt_id (so its event cannot be found either).
    fn an_outbound_answer_without_attempt_id() fails ["endpoints.outbound_create", "sim.outbound_event", "sim.webhook_retried"] {
        answer_edit(|r| r.is(Method::POST, &["outbounds"]), |v| drop_field(v, "attempt_id"))
    }

    fn a_campaign_summary_without_created_by() fails ["endpoints.campaign_create"] {
        answer_edit(|r| r.is(Method::POST, &["campaigns"]), |v| drop_field(v, "created_by"))
    }

    fn campaign_list_items_without_created_by() fails ["endpoints.campaign_list"] {
        answer_edit(|r| r.is(Method::GET, &["campaigns"]), |v| drop_item_field(v, "created_by"))
    }

    fn a_campaign_read_without_allowed_schedule() fails ["endpoints.campaign_get"] {
        answer_edit(|r| r.is(Method::GET, &["campaigns", "*"]), |v| drop_field(v, "allowed_schedule"))
    }

    /// A campaign PATCH answers 200 without applying the description.
    fn a_campaign_patch_that_ignores_the_description() fails ["endpoints.campaign_patch", "states.campaign_patch_states"] {
        request_edit(|r| r.is(Method::PATCH, &["campaigns", "*"]), |v| drop_field(v, "description"))
    }

    fn a_campaign_status_answer_without_start_timestamp() fails ["endpoints.campaign_status"] {
        answer_edit(|r| r.is(Method::PUT, &["campaigns", "*", "status"]), |v| drop_field(v, "start_timestamp"))
    }

    /// The status the spec fixes in the answer to making a cohort, in another letter case.
    fn a_campaign_cohort_upload_answer_with_a_status_of_another_case() fails ["endpoints.campaign_cohort_upload", "cohorts.upload_answers_processing", "cohorts.upload_to_paused_campaign", "sim.cohort_upload_active"] {
        answer_edit(|r| under(r, Method::POST, "campaigns", &["*", "cohorts", "upload"]), |v| v["status"] = json!("Processing"))
    }

    /// The status the spec fixes in the answer to making a cohort, in another letter case.
    fn a_campaign_cohort_stream_answer_with_a_status_of_another_case() fails ["endpoints.campaign_cohort_stream"] {
        answer_edit(|r| under(r, Method::POST, "campaigns", &["*", "cohorts", "stream"]), |v| v["status"] = json!("Completed"))
    }

    fn a_campaign_cohort_list_without_streamed_cohorts() fails ["endpoints.campaign_cohort_list"] {
        answer_edit(|r| under(r, Method::GET, "campaigns", &["*", "cohorts"]), |v| {
            if let Some(items) = v["items"].as_array_mut() {
                items.retain(|c| c["source_type"] != "stream");
            }
        })
    }

    fn a_campaign_cohort_read_without_name() fails ["endpoints.campaign_cohort_get"] {
        answer_edit(|r| under(r, Method::GET, "campaigns", &["*", "cohorts", "*"]), |v| drop_field(v, "name"))
    }

    /// The rejected records of a campaign cohort answered as JSON, not CSV.
    fn a_campaign_rejected_records_file_in_json() fails ["endpoints.campaign_cohort_file", "cohorts.rejected_records_file"] {
        rejected_file_in_json("campaigns")
    }

    fn a_deployment_answer_without_channel_direction() fails ["endpoints.deployment_create"] {
        answer_edit(|r| r.is(Method::POST, &["deployments"]), |v| drop_field(v, "channel_direction"))
    }

    fn deployment_list_items_without_phone_numbers() fails ["endpoints.deployment_list"] {
        answer_edit(|r| r.is(Method::GET, &["deployments"]), |v| drop_item_field(v, "phone_numbers"))
    }

    fn a_deployment_read_without_created_by() fails ["endpoints.deployment_get"] {
        answer_edit(|r| r.is(Method::GET, &["deployments", "*"]), |v| drop_field(v, "created_by"))
    }

    /// A deployment PATCH answers 200 without applying the description.
    fn a_deployment_patch_that_ignores_the_description() fails ["endpoints.deployment_patch", "states.deployment_patch_null_clears"] {
        request_edit(|r| r.is(Method::PATCH, &["deployments", "*"]), |v| drop_field(v, "description"))
    }

    fn a_deployment_status_answer_without_connection_configs() fails ["endpoints.deployment_status"] {
        answer_edit(|r| r.is(Method::PUT, &["deployments", "*", "status"]), |v| drop_field(v, "connection_configs"))
    }

    /// DELETE answers 204 and deletes nothing (an unknown id still answers the GET's 404).
    fn a_delete_that_deletes_nothing() fails [
        "endpoints.deployment_delete",
        "states.deployment_delete_final",
        "states.deployment_delete_paused",
        "sim.rule6_delete_stops_inbound",
    ] {
        let mut m = intercept(|req| {
            if req.is(Method::DELETE, &["deployments", "*"]) {
                let path = req.path.clone();
                req.make_read(path);
                req.headers.insert("x-mutant", "delete".parse().unwrap());
            }
            None
        });
        m.response = Some(Box::new(|req, resp| {
            if req.headers.contains_key("x-mutant") && resp.status == 200 {
                resp.status = 204;
                resp.body.clear();
                resp.content_type = None;
            }
        }));
        m
    }

    /// The status the spec fixes in the answer to making a cohort, in another letter case.
    fn a_deployment_cohort_upload_answer_with_a_status_of_another_case() fails ["endpoints.deployment_cohort_upload", "cohorts.upload_to_paused_deployment"] {
        answer_edit(|r| under(r, Method::POST, "deployments", &["*", "cohorts", "upload"]), |v| v["status"] = json!("Processing"))
    }

    /// The status the spec fixes in the answer to making a cohort, in another letter case.
    fn a_deployment_cohort_stream_answer_with_a_status_of_another_case() fails ["endpoints.deployment_cohort_stream"] {
        answer_edit(|r| under(r, Method::POST, "deployments", &["*", "cohorts", "stream"]), |v| v["status"] = json!("Completed"))
    }

    fn a_deployment_cohort_list_without_streamed_cohorts() fails ["endpoints.deployment_cohort_list"] {
        answer_edit(|r| under(r, Method::GET, "deployments", &["*", "cohorts"]), |v| {
            if let Some(items) = v["items"].as_array_mut() {
                items.retain(|c| c["source_type"] != "stream");
            }
        })
    }

    fn a_deployment_cohort_read_without_name() fails ["endpoints.deployment_cohort_get"] {
        answer_edit(|r| under(r, Method::GET, "deployments", &["*", "cohorts", "*"]), |v| drop_field(v, "name"))
    }

    fn a_deployment_rejected_records_file_in_json() fails ["endpoints.deployment_cohort_file"] {
        rejected_file_in_json("deployments")
    }
}
