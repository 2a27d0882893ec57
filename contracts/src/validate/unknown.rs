//! The unknown fields of a request body: what strict mode refuses with `extra_forbidden`
//! and lax mode (the default, [`Options::strict`] off) silently ignores.
//!
//! A client that sends a misspelt optional field (`"desciption"`) gets a 200 from a lax
//! platform and never learns its value was dropped. The request journal reports such
//! fields even when the platform ignores them: [`unknown_fields`] runs the operation's own
//! validation in strict mode and keeps its `extra_forbidden` failures, so the `loc`, `msg`
//! and `type` are exactly those strict mode would answer.

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};

use super::{Options, campaign, cohort, deployment, outbound};
use crate::error::{ErrorDetail, ErrorType, ValidationErrors};
use crate::model::{CampaignSpec, DeploymentSpec};

/// The fields of `body` that the operation `operation_id` (an `operationId` of the platform's
/// OpenAPI document) does not know, as strict mode reports them. Empty for an operation
/// without a JSON body, and for fields under a value that fails its own type check.
pub fn unknown_fields(operation_id: &str, body: &Value) -> Vec<ErrorDetail> {
    let strict = Options { strict: true };
    let result: Result<(), ValidationErrors> = match operation_id {
        "create_outbound" => outbound::outbound_request(body, strict).map(drop),
        "create_campaign" => campaign::campaign_create_unchecked_times(body, strict).map(drop),
        "patch_campaign" => campaign::campaign_patch(
            body,
            Utc.timestamp_opt(0, 0).unwrap(),
            &any_campaign(),
            strict,
        )
        .map(drop),
        "set_campaign_status" => campaign::campaign_status(body, strict).map(drop),
        "stream_campaign_cohort" | "stream_deployment_cohort" => {
            cohort::cohort_stream(body, strict).map(drop)
        }
        "create_deployment" => deployment::deployment_create(body, strict).map(drop),
        "patch_deployment" => {
            deployment::deployment_patch(body, &any_deployment(), strict).map(drop)
        }
        "set_deployment_status" => deployment::deployment_status(body, strict).map(drop),
        _ => Ok(()),
    };
    match result {
        Ok(()) => Vec::new(),
        Err(e) => e
            .details()
            .iter()
            .filter(|d| d.error_type == ErrorType::ExtraForbidden.as_str())
            .cloned()
            .collect(),
    }
}

/// A valid campaign for the patch walk: only its shape matters, not its values.
fn any_campaign() -> CampaignSpec {
    let body = json!({
        "name": "any",
        "start_timestamp": "2000-01-01T00:00:00Z",
        "end_timestamp": "2000-01-02T00:00:00Z",
        "allowed_schedule": {"timezone": "UTC", "allowed_days": ["Monday"],
            "allowed_start_time": "09:00", "allowed_end_time": "17:00"},
        "app_config": {"app_id": "a", "app_version": 1, "app_type": "agent",
            "attempts_per_second": 1,
            "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550100"], "weight": 1}],
            "retry_config": {"max_retries": 0, "retry_on": ["busy"], "threshold_seconds": 10}}
    });
    campaign::campaign_create_unchecked_times(&body, Options::default())
        .expect("the placeholder campaign is valid")
}

/// A valid deployment for the patch walk.
fn any_deployment() -> DeploymentSpec {
    let body = json!({
        "name": "any", "app_id": "a", "app_version": 1,
        "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550100"]}]
    });
    deployment::deployment_create(&body, Options::default())
        .expect("the placeholder deployment is valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locs(d: &[ErrorDetail]) -> Vec<String> {
        d.iter().map(ErrorDetail::dotted_loc).collect()
    }

    #[test]
    fn unknown_fields_are_found_at_every_depth_whatever_else_is_wrong() {
        let body = json!({
            "name": "Desk", "app_id": "a", "app_version": 0, "desciption": "typo",
            "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550100"], "weight": 3}]
        });
        let found = unknown_fields("create_deployment", &body);
        assert_eq!(
            locs(&found),
            ["body.desciption", "body.connection_configs.0.weight"]
        );
        assert!(found.iter().all(|d| d.error_type == "extra_forbidden"));
        assert_eq!(found[0].msg, "Extra inputs are not permitted");
    }

    #[test]
    fn patches_and_statuses_are_walked_without_the_stored_resource() {
        assert_eq!(
            locs(&unknown_fields(
                "patch_campaign",
                &json!({"app_config": {"attempts_per_second": 2, "rate": 1}})
            )),
            ["body.app_config.rate"]
        );
        assert_eq!(
            locs(&unknown_fields(
                "patch_deployment",
                &json!({"app_version": 2, "color": "red"})
            )),
            ["body.color"]
        );
        assert_eq!(
            locs(&unknown_fields(
                "set_deployment_status",
                &json!({"action": "pause", "why": "x"})
            )),
            ["body.why"]
        );
        assert!(unknown_fields("create_deployment", &json!({"name": "ok"})).is_empty());
        assert!(unknown_fields("list_deployments", &json!({"x": 1})).is_empty());
    }

    #[test]
    fn every_operation_with_a_json_body_is_walked() {
        for op in crate::operations::Catalogue::platform().operations() {
            if !op.json_body {
                continue;
            }
            assert_eq!(
                locs(&unknown_fields(&op.operation_id, &json!({"zz_unknown": 1}))),
                ["body.zz_unknown"],
                "{}",
                op.operation_id
            );
        }
    }
}
