//! Mutants of the `cohorts` group: an upload answered, processed or filed wrongly.

use reqwest::Method;
use serde_json::json;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::super::support::Mutation;
use super::{answer_edit, mutants, refuse, respond, under, with_seen};

mutants! {
    /// A cohort is served under any campaign's path: the read goes to the campaign that
    /// holds it.
    fn a_cohort_read_under_any_campaign() fails ["cohorts.read_only_under_its_campaign"] {
        let owner: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
        let note = owner.clone();
        Mutation {
            request: Some(Box::new(move |req| {
                let rest: Vec<String> = req.rest().iter().map(|s| s.to_string()).collect();
                if req.method == Method::GET && rest.len() >= 4 && rest[0] == "campaigns" && rest[2] == "cohorts"
                    && let Some(holder) = owner.lock().unwrap().get(&rest[3])
                    && *holder != rest[1]
                {
                    req.path = req.path.replace(&format!("/campaigns/{}/", rest[1]), &format!("/campaigns/{holder}/"));
                }
                None
            })),
            response: Some(Box::new(move |req, resp| {
                if under(req, Method::POST, "campaigns", &["*", "cohorts", "upload"])
                    && let Some(v) = resp.json()
                    && let Some(id) = v["cohort_id"].as_str()
                {
                    note.lock().unwrap().insert(id.to_string(), req.rest()[1].to_string());
                }
            })),
            ..Mutation::default()
        }
    }

    /// The cohorts group's upload answers completed at once.
    fn an_upload_answered_completed() fails ["cohorts.upload_answers_processing"] {
        answer_edit(
            |r| under(r, Method::POST, "campaigns", &["*", "cohorts", "upload"])
                && r.form_text("name").is_some_and(|n| n.ends_with("-cohorts-upload")),
            |v| v["status"] = json!("completed"),
        )
    }

    fn rejected_rows_not_counted() fails ["cohorts.upload_completes", "cohorts.upload_to_paused_deployment", "endpoints.campaign_cohort_stream", "endpoints.deployment_cohort_stream"] {
        answer_edit(|r| r.method == Method::GET && r.is_cohort(), |v| {
            if v["result"].is_object() {
                v["result"]["rejected_records"] = json!(0);
            }
        })
    }

    /// The rejected records file gives no reason.
    fn rejected_rows_without_a_reason() fails ["cohorts.rejected_records_file"] {
        respond(|req, resp| {
            if req.param("file_type").as_deref() == Some("rejected_records") && resp.status == 200 {
                let text = String::from_utf8_lossy(&resp.body).into_owned();
                // The upload's three columns kept, the reason emptied.
                let blanked: Vec<String> = text
                    .lines()
                    .enumerate()
                    .map(|(i, l)| match (i, l.match_indices(',').nth(2)) {
                        (0, _) | (_, None) => l.to_string(),
                        (_, Some((at, _))) => format!("{},", &l[..at]),
                    })
                    .collect();
                resp.body = (blanked.join("\n") + "\n").into_bytes();
            }
        })
    }

    /// An upload missing a named column ends completed.
    fn a_failed_upload_answered_completed() fails ["cohorts.missing_column_fails"] {
        answer_edit(|r| r.method == Method::GET && r.is_cohort(), |v| {
            if v["status"] == "failed" {
                v["status"] = json!("completed");
            }
        })
    }

    /// The uploaded CSV comes back with other line endings.
    fn the_uploaded_file_not_as_uploaded() fails ["cohorts.uploaded_files"] {
        respond(|req, resp| {
            if req.param("file_type").as_deref() == Some("cohort") && resp.status == 200 {
                resp.body = String::from_utf8_lossy(&resp.body).replace('\n', "\r\n").into_bytes();
            }
        })
    }

    /// A campaign's cohort list leaves out one of its own cohorts.
    fn a_cohort_list_missing_one_of_its_own() fails ["cohorts.list_only_its_campaign"] {
        answer_edit(
            |r| under(r, Method::GET, "campaigns", &["*", "cohorts"]),
            |v| {
                if let Some(items) = v["items"].as_array_mut() {
                    items.retain(|i| !i["name"].as_str().is_some_and(|n| n.ends_with("-cohorts-upload")));
                }
            },
        )
    }

    /// A campaign's cohort list newest first.
    fn a_cohort_list_newest_first() fails ["cohorts.list_upload_order"] {
        answer_edit(
            |r| under(r, Method::GET, "campaigns", &["*", "cohorts"]),
            |v| {
                if let Some(items) = v["items"].as_array_mut() {
                    items.reverse();
                }
            },
        )
    }

    /// The transformation file comes back re-serialised (same JSON, other bytes).
    fn the_transformation_file_reformatted() fails ["cohorts.files_byte_for_byte"] {
        respond(|req, resp| {
            if req.param("file_type").as_deref() == Some("cohort_transformation") && resp.status == 200
                && let Ok(v) = serde_json::from_slice::<serde_json::Value>(&resp.body)
            {
                resp.body = serde_json::to_vec_pretty(&v).unwrap_or_default();
            }
        })
    }

    /// The rejected-records file lists its first rejected row only.
    fn the_rejected_file_with_its_first_row_only() fails ["cohorts.rejected_records_file"] {
        respond(|req, resp| {
            if req.param("file_type").as_deref() == Some("rejected_records") && resp.status == 200 {
                let text = String::from_utf8_lossy(&resp.body).into_owned();
                let kept: Vec<&str> = text.lines().take(2).collect();
                resp.body = (kept.join("\n") + "\n").into_bytes();
            }
        })
    }

    /// A stream's `country_code` ignored: national numbers rejected.
    fn a_streams_country_code_ignored() fails ["cohorts.stream_country_code"] {
        super::request_edit(
            |r| r.method == Method::POST && r.path.ends_with("/cohorts/stream"),
            |v| super::drop_field(v, "country_code"),
        )
    }

    fn an_upload_to_a_paused_deployment_refused() fails ["cohorts.upload_to_paused_deployment"] {
        with_seen(|req, status| {
            (under(req, Method::POST, "deployments", &["*", "cohorts", "upload"]) && status.as_deref() == Some("paused"))
                .then(|| refuse(409, "deployment_paused"))
        })
    }

    fn an_upload_to_a_paused_campaign_refused() fails ["cohorts.upload_to_paused_campaign"] {
        with_seen(|req, status| {
            (under(req, Method::POST, "campaigns", &["*", "cohorts", "upload"]) && status.as_deref() == Some("paused"))
                .then(|| refuse(409, "campaign_paused"))
        })
    }
}
