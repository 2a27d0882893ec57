//! OpenAPI `links`: from each operation whose answer names a resource (a create, a status
//! change, a key rotation) to the operations that read, change or delete it, so that a
//! stateful client (or a fuzzer's stateful phase) follows real ids instead of guessing them.
//!
//! A link fills every path parameter of its target (from the request's path or the answer's
//! body) and, for a status change, the body of the change the resource may take next: a
//! created campaign may be paused or cancelled, a paused one resumed, a resumed one paused
//! again. A change its resource cannot take (a second pause) is the documented 409.

use serde_json::{Map, Value, json};

/// One link of a [`Source`]: its name, the operation it leads to and, when the follow-up
/// needs one, its request body (JSON text).
struct Link {
    name: &'static str,
    to: &'static str,
    body: Option<&'static str>,
}

/// The links of one operation's 200 answer. `values` names, for each path parameter a
/// target may have, the runtime expression that fills it; every path parameter of every
/// target must be there.
struct Source {
    from: &'static str,
    values: &'static [(&'static str, &'static str)],
    links: &'static [Link],
}

const fn to(name: &'static str, to: &'static str) -> Link {
    Link {
        name,
        to,
        body: None,
    }
}

const fn with_body(name: &'static str, to: &'static str, body: &'static str) -> Link {
    Link {
        name,
        to,
        body: Some(body),
    }
}

const PAUSE: &str = r#"{"action": "pause"}"#;
const RESUME: &str = r#"{"action": "resume"}"#;
const CANCEL: &str = r#"{"action": "cancel"}"#;

const ORG: (&str, &str) = ("org_id", "$request.path.org_id");
const WORKSPACE: (&str, &str) = ("workspace_id", "$request.path.workspace_id");

const PLATFORM: &[Source] = &[
    Source {
        from: "create_campaign",
        values: &[
            ORG,
            WORKSPACE,
            ("campaign_id", "$response.body#/campaign_id"),
        ],
        links: &[
            to("GetCampaign", "get_campaign"),
            to("PatchCampaign", "patch_campaign"),
            with_body("PauseCampaign", "set_campaign_status", PAUSE),
            with_body("CancelCampaign", "set_campaign_status", CANCEL),
            to("UploadCampaignCohort", "upload_campaign_cohort"),
            to("StreamCampaignCohort", "stream_campaign_cohort"),
            to("ListCampaignCohorts", "list_campaign_cohorts"),
            to("SimCampaignActivity", "sim_campaign_activity"),
            to("SimCampaignChart", "sim_campaign_chart"),
        ],
    },
    // After a pause the campaign may be resumed, patched or cancelled; after a resume,
    // paused again or cancelled.
    Source {
        from: "set_campaign_status",
        values: &[ORG, WORKSPACE, ("campaign_id", "$request.path.campaign_id")],
        links: &[
            with_body("ResumeCampaign", "set_campaign_status", RESUME),
            with_body("PauseCampaign", "set_campaign_status", PAUSE),
            with_body("CancelCampaign", "set_campaign_status", CANCEL),
            to("PatchCampaign", "patch_campaign"),
            to("GetCampaign", "get_campaign"),
        ],
    },
    Source {
        from: "create_deployment",
        values: &[
            ORG,
            WORKSPACE,
            ("deployment_id", "$response.body#/deployment_id"),
        ],
        links: &[
            to("GetDeployment", "get_deployment"),
            to("PatchDeployment", "patch_deployment"),
            with_body("PauseDeployment", "set_deployment_status", PAUSE),
            to("DeleteDeployment", "delete_deployment"),
            to("UploadDeploymentCohort", "upload_deployment_cohort"),
            to("StreamDeploymentCohort", "stream_deployment_cohort"),
            to("ListDeploymentCohorts", "list_deployment_cohorts"),
        ],
    },
    // After a pause the deployment may be resumed; after a resume, paused again.
    Source {
        from: "set_deployment_status",
        values: &[
            ORG,
            WORKSPACE,
            ("deployment_id", "$request.path.deployment_id"),
        ],
        links: &[
            with_body("ResumeDeployment", "set_deployment_status", RESUME),
            with_body("PauseDeployment", "set_deployment_status", PAUSE),
            to("GetDeployment", "get_deployment"),
            to("DeleteDeployment", "delete_deployment"),
        ],
    },
    Source {
        from: "stream_campaign_cohort",
        values: &[
            ORG,
            WORKSPACE,
            ("campaign_id", "$request.path.campaign_id"),
            ("cohort_id", "$response.body#/cohort_id"),
        ],
        links: &[
            to("GetCampaignCohort", "get_campaign_cohort"),
            to("GetCampaignCohortFile", "get_campaign_cohort_file"),
        ],
    },
    Source {
        from: "upload_campaign_cohort",
        values: &[
            ORG,
            WORKSPACE,
            ("campaign_id", "$request.path.campaign_id"),
            ("cohort_id", "$response.body#/cohort_id"),
        ],
        links: &[
            to("GetCampaignCohort", "get_campaign_cohort"),
            to("GetCampaignCohortFile", "get_campaign_cohort_file"),
        ],
    },
    Source {
        from: "stream_deployment_cohort",
        values: &[
            ORG,
            WORKSPACE,
            ("deployment_id", "$request.path.deployment_id"),
            ("cohort_id", "$response.body#/cohort_id"),
        ],
        links: &[
            to("GetDeploymentCohort", "get_deployment_cohort"),
            to("GetDeploymentCohortFile", "get_deployment_cohort_file"),
        ],
    },
    Source {
        from: "upload_deployment_cohort",
        values: &[
            ORG,
            WORKSPACE,
            ("deployment_id", "$request.path.deployment_id"),
            ("cohort_id", "$response.body#/cohort_id"),
        ],
        links: &[
            to("GetDeploymentCohort", "get_deployment_cohort"),
            to("GetDeploymentCohortFile", "get_deployment_cohort_file"),
        ],
    },
    Source {
        from: "sim_add_fault",
        values: &[("fault_id", "$response.body#/fault_id")],
        links: &[to("SimDeleteFault", "sim_delete_fault")],
    },
];

/// A rotation's new data key, decrypted under the alias it was wrapped for.
const BYOK: &[Source] = &[Source {
    from: "byok_rotate_key",
    values: &[("partner", "$request.path.partner")],
    links: &[with_body(
        "DecryptRotatedKey",
        "byok_decrypt_key",
        r#"{"data": {"key_alias": "$response.body#/data/key_alias", "encrypted_key": "$response.body#/data/encrypted_dek"}}"#,
    )],
}];

/// Adds the links of [`PLATFORM`] to the platform document. Panics on an unknown operation
/// or a path parameter no value fills.
pub(super) fn platform(doc: &mut Value) {
    add(doc, PLATFORM);
}

/// Adds the links of [`BYOK`] to the key service's document.
pub(super) fn byok(doc: &mut Value) {
    add(doc, BYOK);
}

fn add(doc: &mut Value, sources: &[Source]) {
    let path_params: Vec<(String, Vec<String>)> = super::edit::operations(doc)
        .iter()
        .filter_map(|(_, _, op)| {
            let id = op.get("operationId")?.as_str()?.to_string();
            let params = op
                .get("parameters")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "path")
                .filter_map(|p| p["name"].as_str().map(str::to_string))
                .collect();
            Some((id, params))
        })
        .collect();
    for s in sources {
        let mut links = Map::new();
        for l in s.links {
            let (_, params) = path_params
                .iter()
                .find(|(id, _)| id == l.to)
                .unwrap_or_else(|| panic!("no operation {}", l.to));
            let mut parameters = Map::new();
            for p in params {
                let (_, expression) = s
                    .values
                    .iter()
                    .find(|(name, _)| name == p)
                    .unwrap_or_else(|| panic!("link {} from {}: no value for {p}", l.name, s.from));
                parameters.insert(p.clone(), json!(expression));
            }
            let mut link = json!({"operationId": l.to, "parameters": parameters});
            if let Some(body) = l.body {
                link["requestBody"] = serde_json::from_str(body).expect("a link body is JSON");
            }
            assert!(
                links.insert(l.name.to_string(), link).is_none(),
                "two links {} from {}",
                l.name,
                s.from
            );
        }
        let mut found = false;
        for (_, _, op) in super::edit::operations(doc) {
            if op["operationId"] == s.from {
                op["responses"]["200"]["links"] = Value::Object(links.clone());
                found = true;
            }
        }
        assert!(found, "no operation {}", s.from);
    }
}
