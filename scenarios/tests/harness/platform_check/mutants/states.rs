//! Mutants of the `states` group (and the `sim` status checks that share their rule): a
//! status change refused, ignored or answered wrongly in one state.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use reqwest::Method;
use serde_json::{Value, json};

use super::super::support::{KEY, Mutation, Req, Resp};
use super::{
    answer_edit, drop_field, intercept, mutants, refuse, request_edit, respond, with_seen,
};

/// The `action` of a status change.
fn action(req: &Req) -> Option<String> {
    req.json()?["action"].as_str().map(str::to_string)
}

/// A resume of a paused `kind` answered with the resource as it is (still paused).
fn resume_ignored(kind: &'static str) -> Mutation {
    with_seen(move |req, status| {
        if req.is(Method::PUT, &[kind, "*", "status"])
            && action(req).as_deref() == Some("resume")
            && status.as_deref() == Some("paused")
        {
            let path = req.path.trim_end_matches("/status").to_string();
            req.make_read(path);
        }
        None
    })
}

mutants! {
    fn a_new_campaign_answered_active() fails ["states.campaign_created_scheduled"] {
        answer_edit(|r| r.is(Method::POST, &["campaigns"]), |v| v["status"] = json!("active"))
    }

    /// Resume answers 200 and leaves the campaign paused.
    fn a_campaign_resume_ignored() fails ["states.campaign_pause_resume", "sim.campaign_resume_after_start"] {
        resume_ignored("campaigns")
    }

    fn cancelling_a_paused_campaign_refused() fails ["states.campaign_cancel", "sim.campaign_cancel_running"] {
        with_seen(|req, status| {
            (req.is(Method::PUT, &["campaigns", "*", "status"])
                && action(req).as_deref() == Some("cancel")
                && status.as_deref() == Some("paused"))
            .then(|| refuse(409, "invalid_status_transition"))
        })
    }

    /// Actions on a cancelled campaign answer 200 (and change nothing).
    fn actions_on_a_cancelled_campaign_answered_200() fails ["states.campaign_cancelled_is_final", "states.campaign_refusals_are_409"] {
        with_seen(|req, status| {
            if req.is(Method::PUT, &["campaigns", "*", "status"]) && status.as_deref() == Some("cancelled") {
                let path = req.path.trim_end_matches("/status").to_string();
                req.make_read(path);
            }
            None
        })
    }

    fn refused_campaign_actions_a_400() fails ["states.campaign_refusals_are_409", "sim.campaign_ended_refusals_are_409"] {
        respond(|req, resp| {
            if req.is(Method::PUT, &["campaigns", "*", "status"]) && resp.status == 409 {
                resp.status = 400;
            }
        })
    }

    /// A second pause of a deployment refused with 409 in a framework's own shape.
    fn a_refusal_in_another_shape() fails ["states.refusals_in_error_shape"] {
        respond(|req, resp| {
            if req.is(Method::PUT, &["deployments", "*", "status"]) && resp.status == 409 {
                resp.body = br#"{"detail": "deployment already paused"}"#.to_vec();
            }
        })
    }

    /// (The PATCH of a paused campaign's retry policy is refused too.)
    fn a_patch_of_a_paused_campaign_refused() fails ["states.campaign_patch_states", "states.campaign_patch_merges"] {
        with_seen(|req, status| {
            (req.is(Method::PATCH, &["campaigns", "*"]) && status.as_deref() == Some("paused"))
                .then(|| refuse(409, "campaign_not_editable"))
        })
    }

    /// A PATCH of start_timestamp answers 200 with the new start (and changes nothing).
    fn a_start_change_answered_200() fails ["states.campaign_start_fixed"] {
        let mut m = intercept(|req| {
            if req.is(Method::PATCH, &["campaigns", "*"])
                && let Some(start) = req.json().and_then(|b| b["start_timestamp"].as_str().map(str::to_string))
            {
                let path = req.path.clone();
                req.make_read(path);
                req.headers.insert("x-mutant-start", start.parse().unwrap());
            }
            None
        });
        m.response = Some(Box::new(|req: &Req, resp: &mut Resp| {
            if let Some(start) = req.headers.get("x-mutant-start").and_then(|v| v.to_str().ok())
                && let Some(mut v) = resp.json()
            {
                v["start_timestamp"] = json!(start);
                resp.set_json(&v);
            }
        }));
        m
    }

    fn a_new_deployment_answered_paused() fails ["states.deployment_created_active"] {
        answer_edit(|r| r.is(Method::POST, &["deployments"]), |v| v["status"] = json!("paused"))
    }

    /// (The deployment the inbound checks delete stays paused, so it never answers before the
    /// delete either.)
    fn a_deployment_resume_ignored() fails [
        "states.deployment_pause_resume",
        "sim.inbound_paused_not_answered",
        "sim.rule6_delete_stops_inbound",
    ] {
        resume_ignored("deployments")
    }

    fn pausing_a_paused_deployment_answered_200() fails ["states.deployment_same_status_409"] {
        with_seen(|req, status| {
            if req.is(Method::PUT, &["deployments", "*", "status"])
                && action(req).as_deref() == Some("pause")
                && status.as_deref() == Some("paused")
            {
                let path = req.path.trim_end_matches("/status").to_string();
                req.make_read(path);
            }
            None
        })
    }

    /// (Also seen by the inbound calls to deployments PATCHed to another schedule.)
    fn a_deployment_patch_that_ignores_inbound_config() fails ["states.deployment_patch_applies", "states.deployment_patch_null_clears", "sim.inbound_zones"] {
        request_edit(|r| r.is(Method::PATCH, &["deployments", "*"]), |v| drop_field(v, "inbound_config"))
    }

    /// A PATCH of `connection_configs` appends the configs sent to the deployment's own.
    fn patched_connection_configs_appended() fails ["states.deployment_patch_applies"] {
        let lists: Arc<Mutex<BTreeMap<String, Value>>> = Arc::default();
        let note = lists.clone();
        Mutation {
            request: Some(Box::new(move |req| {
                if req.is(Method::PATCH, &["deployments", "*"])
                    && let Some(old) = req.deployment_id().and_then(|id| lists.lock().unwrap().get(id).cloned())
                {
                    req.edit_json(|v| {
                        if let Some(new) = v.get("connection_configs").and_then(Value::as_array).cloned() {
                            let mut all = old.as_array().cloned().unwrap_or_default();
                            all.extend(new);
                            v["connection_configs"] = Value::Array(all);
                        }
                    });
                }
                None
            })),
            response: Some(Box::new(move |req, resp| {
                if resp.status == 200
                    && let Some(id) = req.deployment_id()
                    && let Some(v) = resp.json()
                    && v["connection_configs"].is_array()
                {
                    note.lock().unwrap().insert(id.to_string(), v["connection_configs"].clone());
                }
            })),
            ..Mutation::default()
        }
    }

    /// A PATCH of `description: null` leaves the description as it was.
    fn a_null_description_ignored() fails ["states.deployment_patch_null_clears"] {
        request_edit(|r| r.is(Method::PATCH, &["deployments", "*"]), |v| {
            if v.get("description").is_some_and(Value::is_null) {
                drop_field(v, "description");
            }
        })
    }

    /// A PATCH of another app_id answers 200 (the app_id is dropped, not refused).
    fn an_app_id_change_answered_200() fails ["states.deployment_app_id_fixed"] {
        request_edit(|r| r.is(Method::PATCH, &["deployments", "*"]), |v| drop_field(v, "app_id"))
    }

    /// Remembers each deployment as last answered; once deleted, it reappears in lists whose
    /// search it matches.
    fn a_deleted_deployment_still_listed() fails ["states.deployment_delete_final"] {
        let known: Arc<Mutex<BTreeMap<String, Value>>> = Arc::default();
        let ghosts: Arc<Mutex<Vec<Value>>> = Arc::default();
        respond(move |req, resp| {
            if let Some(v) = resp.json()
                && let Some(id) = v["deployment_id"].as_str()
                && resp.status == 200
            {
                let mut item = v.clone();
                let numbers: Vec<Value> = v["connection_configs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|c| c["phone_numbers"].as_array().cloned().unwrap_or_default())
                    .collect();
                item["phone_numbers"] = json!(numbers);
                known.lock().unwrap().insert(id.to_string(), item);
            }
            if req.method == Method::DELETE
                && resp.status == 204
                && let Some(item) = req
                    .deployment_id()
                    .and_then(|id| known.lock().unwrap().get(id).cloned())
            {
                ghosts.lock().unwrap().push(item);
            }
            if req.is(Method::GET, &["deployments"]) && resp.status == 200 && req.headers.get("x-api-key").is_some_and(|k| k == KEY) {
                let search = req.param("search").unwrap_or_default().to_lowercase();
                let mut v = resp.json().unwrap();
                for g in ghosts.lock().unwrap().iter() {
                    let name = g["name"].as_str().unwrap_or_default().to_lowercase();
                    if name.contains(&search) {
                        v["items"].as_array_mut().unwrap().push(g.clone());
                        v["total"] = json!(v["total"].as_u64().unwrap() + 1);
                    }
                }
                resp.set_json(&v);
            }
        })
    }

    fn deleting_a_paused_deployment_refused() fails ["states.deployment_delete_paused", "endpoints.deployment_delete"] {
        with_seen(|req, status| {
            (req.is(Method::DELETE, &["deployments", "*"]) && status.as_deref() == Some("paused"))
                .then(|| refuse(409, "deployment_paused"))
        })
    }
}
