//! Mutants of the `auth` group: a key that should be refused opens a workspace, or one
//! workspace sees another's resources.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use reqwest::Method;
use serde_json::{Value, json};

use super::super::support::{KEY, KEY2, Mutation, WS, WS2};
use super::{intercept, mutants};

mutants! {
    fn a_request_without_a_key_accepted() fails ["auth.no_key", "auth.refusals_are_401", "errors.missing_key_401"] {
        intercept(|req| {
            if !req.headers.contains_key("x-api-key") && req.path.starts_with("/api/") {
                req.headers.insert("x-api-key", KEY.parse().unwrap());
            }
            None
        })
    }

    fn a_wrong_key_accepted() fails ["auth.wrong_key", "auth.refusals_are_401", "errors.deployment_list_error_shape"] {
        intercept(|req| {
            let wrong = req.headers.get("x-api-key").is_some_and(|k| k != KEY && k != KEY2);
            if wrong && req.path.starts_with("/api/") {
                req.headers.insert("x-api-key", KEY.parse().unwrap());
            }
            None
        })
    }

    fn another_workspaces_key_accepted() fails ["auth.other_workspace_key"] {
        intercept(|req| {
            let other = req.headers.get("x-api-key").is_some_and(|k| k == KEY2);
            if other && req.path.contains(&format!("/workspaces/{WS}/")) {
                req.headers.insert("x-api-key", KEY.parse().unwrap());
            }
            None
        })
    }

    /// Ids of this workspace answered through the other workspace's paths.
    fn another_workspaces_paths_reach_this_ones_ids() fails ["auth.other_workspace_ids"] {
        let ids: Arc<Mutex<BTreeSet<String>>> = Arc::default();
        let note = ids.clone();
        Mutation {
            request: Some(Box::new(move |req| {
                let theirs = req.workspace() == Some(WS2)
                    && req.rest().iter().any(|s| ids.lock().unwrap().contains(*s));
                if theirs {
                    req.path = req.path.replace(&format!("/workspaces/{WS2}/"), &format!("/workspaces/{WS}/"));
                    req.headers.insert("x-api-key", KEY.parse().unwrap());
                }
                None
            })),
            response: Some(Box::new(move |req, resp| {
                if req.workspace() == Some(WS) && req.method == Method::POST
                    && let Some(v) = resp.json()
                {
                    for field in ["campaign_id", "deployment_id", "cohort_id"] {
                        if let Some(id) = v[field].as_str() {
                            note.lock().unwrap().insert(id.to_string());
                        }
                    }
                }
            })),
            ..Mutation::default()
        }
    }

    /// The lists of this workspace also show what the other one created (searched by name).
    fn lists_leak_the_other_workspaces_items() fails ["auth.list_isolation"] {
        let theirs: Arc<Mutex<Vec<(&'static str, Value)>>> = Arc::default();
        super::respond(move |req, resp| {
            let Some(mut v) = resp.json() else { return };
            if req.workspace() == Some(WS2) && req.method == Method::POST && resp.status == 200 {
                for (list, field) in [("deployments", "deployment_id"), ("campaigns", "campaign_id")] {
                    if req.is(Method::POST, &[list]) && v[field].is_string() {
                        let mut item = v.clone();
                        item["phone_numbers"] = json!([]);
                        theirs.lock().unwrap().push((list, item));
                    }
                }
            }
            for list in ["deployments", "campaigns"] {
                if req.workspace() == Some(WS) && req.is(Method::GET, &[list]) && resp.status == 200 {
                    let search = req.param("search").unwrap_or_default();
                    for (l, item) in theirs.lock().unwrap().iter() {
                        if *l == list && item["name"].as_str().is_some_and(|n| n.contains(&search)) {
                            v["items"].as_array_mut().unwrap().push(item.clone());
                        }
                    }
                    resp.set_json(&v);
                }
            }
        })
    }
}
