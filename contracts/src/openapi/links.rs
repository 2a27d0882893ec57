//! OpenAPI `links`: from each operation that creates a resource to the operations that read,
//! change or delete it, so that a stateful client (or a fuzzer's stateful phase) follows real
//! ids instead of guessing them.

use serde_json::{Map, Value, json};

/// From the create operation (its 200 answer) to the operations below, filling these path
/// parameters: org and workspace from the request (when `scoped`), the id from the answer's
/// body.
struct Links {
    from: &'static str,
    scoped: bool,
    id_param: &'static str,
    id_field: &'static str,
    parent_param: Option<&'static str>,
    to: &'static [&'static str],
}

const LINKS: &[Links] = &[
    Links {
        scoped: true,
        from: "create_campaign",
        id_param: "campaign_id",
        id_field: "campaign_id",
        parent_param: None,
        to: &[
            "get_campaign",
            "patch_campaign",
            "set_campaign_status",
            "upload_campaign_cohort",
            "stream_campaign_cohort",
            "list_campaign_cohorts",
        ],
    },
    Links {
        scoped: true,
        from: "create_deployment",
        id_param: "deployment_id",
        id_field: "deployment_id",
        parent_param: None,
        to: &[
            "get_deployment",
            "patch_deployment",
            "set_deployment_status",
            "delete_deployment",
            "upload_deployment_cohort",
            "stream_deployment_cohort",
            "list_deployment_cohorts",
        ],
    },
    Links {
        scoped: true,
        from: "stream_campaign_cohort",
        id_param: "cohort_id",
        id_field: "cohort_id",
        parent_param: Some("campaign_id"),
        to: &["get_campaign_cohort", "get_campaign_cohort_file"],
    },
    Links {
        scoped: true,
        from: "upload_campaign_cohort",
        id_param: "cohort_id",
        id_field: "cohort_id",
        parent_param: Some("campaign_id"),
        to: &["get_campaign_cohort", "get_campaign_cohort_file"],
    },
    Links {
        scoped: true,
        from: "stream_deployment_cohort",
        id_param: "cohort_id",
        id_field: "cohort_id",
        parent_param: Some("deployment_id"),
        to: &["get_deployment_cohort", "get_deployment_cohort_file"],
    },
    Links {
        scoped: true,
        from: "upload_deployment_cohort",
        id_param: "cohort_id",
        id_field: "cohort_id",
        parent_param: Some("deployment_id"),
        to: &["get_deployment_cohort", "get_deployment_cohort_file"],
    },
    Links {
        scoped: false,
        from: "sim_add_fault",
        id_param: "fault_id",
        id_field: "fault_id",
        parent_param: None,
        to: &["sim_delete_fault"],
    },
];

/// `get_campaign` -> `GetCampaign`.
fn link_name(operation_id: &str) -> String {
    operation_id
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Adds the links of [`LINKS`] to the platform document. Panics on an unknown operation.
pub(super) fn platform(doc: &mut Value) {
    let ids: Vec<String> = super::edit::operations(doc)
        .iter()
        .filter_map(|(_, _, op)| op["operationId"].as_str().map(str::to_string))
        .collect();
    for l in LINKS {
        let mut links = Map::new();
        for to in l.to {
            assert!(ids.iter().any(|i| i == to), "no operation {to}");
            let mut parameters = Map::new();
            if l.scoped {
                parameters.insert("org_id".into(), json!("$request.path.org_id"));
                parameters.insert("workspace_id".into(), json!("$request.path.workspace_id"));
            }
            if let Some(parent) = l.parent_param {
                parameters.insert(parent.into(), json!(format!("$request.path.{parent}")));
            }
            parameters.insert(
                l.id_param.into(),
                json!(format!("$response.body#/{}", l.id_field)),
            );
            links.insert(
                link_name(to),
                json!({"operationId": to, "parameters": parameters}),
            );
        }
        let mut found = false;
        for (_, _, op) in super::edit::operations(doc) {
            if op["operationId"] == l.from {
                op["responses"]["200"]["links"] = Value::Object(links.clone());
                found = true;
            }
        }
        assert!(found, "no operation {}", l.from);
    }
}
