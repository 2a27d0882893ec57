//! Mutants of the `errors` group: an error answer in another shape or with another status.

use reqwest::Method;
use serde_json::json;

use super::super::support::Resp;
use super::{mutants, respond};

mutants! {
    /// The outbound validation answer names the field in its own spelling.
    fn an_outbound_validation_loc_misspelt() fails ["errors.outbound_validation_shape", "errors.outbound_required_fields"] {
        respond(|req, resp| {
            if req.is(Method::POST, &["outbounds"]) && resp.status == 422
                && let Some(mut v) = resp.json()
            {
                for e in v["detail"].as_array_mut().into_iter().flatten() {
                    for part in e["loc"].as_array_mut().into_iter().flatten() {
                        if part == "app_config" {
                            *part = json!("appConfig");
                        }
                    }
                }
                resp.set_json(&v);
            }
        })
    }

    /// A refused outbound request lists its first failure only.
    fn an_outbound_validation_lists_its_first_failure_only() fails ["errors.outbound_validation_shape"] {
        respond(|req, resp| {
            if req.is(Method::POST, &["outbounds"]) && resp.status == 422
                && let Some(mut v) = resp.json()
                && let Some(d) = v["detail"].as_array_mut()
            {
                d.truncate(1);
                resp.set_json(&v);
            }
        })
    }

    /// An outbound request without `user_config` is placed, to a number of the platform's
    /// choosing.
    fn an_outbound_without_user_config_placed() fails ["errors.outbound_required_fields"] {
        super::request_edit(
            |req| req.is(Method::POST, &["outbounds"]),
            |v| {
                if v.get("user_config").is_none() {
                    v["user_config"] = json!({"user_phone_number": "+12025550100"});
                }
            },
        )
    }

    /// A refused deployment list answers `{"detail": ...}`.
    fn a_refused_deployment_list_in_another_shape() fails ["errors.deployment_list_error_shape", "auth.refusals_are_401"] {
        respond(|req, resp| {
            if req.is(Method::GET, &["deployments"]) && resp.status == 401 {
                resp.set_json(&json!({"detail": "unauthorized"}));
            }
        })
    }

    /// (The second delete of the `states` group's deleted deployment is such a refusal too.)
    fn a_failed_delete_in_another_shape() fails ["errors.deployment_delete_error_shape", "states.refusals_in_error_shape"] {
        respond(|req, resp| {
            if req.is(Method::DELETE, &["deployments", "*"]) && resp.status == 404 {
                resp.set_json(&json!({"message": "not found"}));
            }
        })
    }

    fn a_500_for_a_malformed_body() fails ["errors.malformed_json"] {
        super::intercept(|req| {
            let json = req
                .headers
                .get("content-type")
                .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
            let writes = matches!(req.method, Method::POST | Method::PUT | Method::PATCH);
            (writes && json && req.json().is_none()).then(|| {
                Resp::json_answer(
                    500,
                    &json!({"error": {"message": "internal", "type": "internal_error", "code": "internal_error"}}),
                )
            })
        })
    }

    /// An unknown campaign id is a 400.
    fn an_unknown_campaign_a_400() fails ["errors.unknown_id_404"] {
        respond(|req, resp| {
            if req.is(Method::GET, &["campaigns", "*"]) && resp.status == 404 {
                resp.status = 400;
            }
        })
    }

    /// A campaign list without a key is a 403.
    fn a_missing_key_a_403() fails ["errors.missing_key_401", "auth.refusals_are_401"] {
        respond(|req, resp| {
            if req.is(Method::GET, &["campaigns"]) && resp.status == 401 && !req.headers.contains_key("x-api-key") {
                resp.status = 403;
            }
        })
    }
}
