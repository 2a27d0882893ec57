//! The timeline: actions at simulated times.
//!
//! Each `[[timeline]]` entry is a [`Step`]: a time `at` and an action named by `do`. Steps run
//! in time order (steps at the same time in file order); the clock is moved to each step's
//! time first, with every engine event due before it run. To add an action: a variant here,
//! its reference checks in `load.rs`, and its effect in the runner's `play.rs`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::time::{At, Span};
use contracts::wire::byok::EndpointScope;

/// One entry of the timeline.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
pub(crate) struct Step {
    /// When.
    pub(crate) at: At,
    /// What.
    #[serde(flatten)]
    pub(crate) action: Action,
}

/// What a step does; `do` names it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Action {
    /// `PUT .../campaigns/{id}/status` with `{"action": "pause"}`.
    Pause {
        /// The campaign's key.
        campaign: String,
    },
    /// `PUT .../campaigns/{id}/status` with `{"action": "resume"}`.
    Resume {
        /// The campaign's key.
        campaign: String,
    },
    /// `PUT .../campaigns/{id}/status` with `{"action": "cancel"}`.
    Cancel {
        /// The campaign's key.
        campaign: String,
    },
    /// `PATCH .../campaigns/{id}` with `patch` as the body, and `null` for each field of
    /// `clear`.
    PatchCampaign {
        /// The campaign's key.
        campaign: String,
        /// The body, as the API takes it (default: empty).
        #[serde(default = "empty_table")]
        #[schemars(with = "BTreeMap<String, Value>")]
        patch: Value,
        /// Fields sent as `null`, which clears them (TOML has no null): `"description"`,
        /// `"app_config.webhook_config"` (a dotted path for a nested one).
        #[serde(default)]
        clear: Vec<String>,
    },
    /// Uploads a cohort defined under `[[cohorts]]`.
    UploadCohort {
        /// The cohort's key.
        cohort: String,
    },
    /// `PUT .../deployments/{id}/status` with `{"action": "pause"}`.
    PauseDeployment {
        /// The deployment's key.
        deployment: String,
    },
    /// `PUT .../deployments/{id}/status` with `{"action": "resume"}`.
    ResumeDeployment {
        /// The deployment's key.
        deployment: String,
    },
    /// `DELETE .../deployments/{id}`.
    DeleteDeployment {
        /// The deployment's key.
        deployment: String,
    },
    /// `PATCH .../deployments/{id}` with `patch` as the body, and `null` for each field of
    /// `clear`.
    PatchDeployment {
        /// The deployment's key.
        deployment: String,
        /// The body, as the API takes it (default: empty).
        #[serde(default = "empty_table")]
        #[schemars(with = "BTreeMap<String, Value>")]
        patch: Value,
        /// Fields sent as `null`, which clears them (TOML has no null): `"inbound_config"`,
        /// `"description"`.
        #[serde(default)]
        clear: Vec<String>,
    },
    /// A simulated inbound call: `caller` dials `dialled` now.
    InboundCall {
        /// The scenario's name for the call, for `inbound` expectations.
        key: String,
        /// The caller's number.
        caller: String,
        /// The number dialled (a deployment's).
        dialled: String,
    },
    /// The key service answers 503 to every call for a while.
    KeyServiceOutage {
        /// How long.
        #[serde(rename = "for")]
        duration: Span,
        /// Which endpoint (default all).
        #[serde(default)]
        endpoint: EndpointScope,
    },
    /// `POST /admin/v1/.../data-keys/rotate`: a new data key from the key service.
    RotateDataKey {},
    /// Stops the platform (requests in flight finish) and starts it again on the same
    /// database, as after a crash or a deploy.
    RestartPlatform {},
}

fn empty_table() -> Value {
    Value::Object(Default::default())
}

/// The body of a patch step: `patch` with each field of `clear` set to `null` (a dotted
/// path names a field inside a table: `app_config.webhook_config`). `None` when `patch` is
/// not a table, or a path of `clear` goes through a value that is not one.
pub(crate) fn patch_body(patch: &Value, clear: &[String]) -> Option<Value> {
    let mut body = patch.clone();
    body.as_object()?;
    for path in clear {
        let mut at = &mut body;
        let mut names = path.split('.').peekable();
        while let Some(name) = names.next() {
            let table = at.as_object_mut()?;
            if names.peek().is_none() {
                table.insert(name.to_string(), Value::Null);
                break;
            }
            at = table.entry(name).or_insert_with(empty_table);
        }
    }
    Some(body)
}

/// The fields of `clear` that `patch` also sets (each once, in `clear`'s order).
pub(crate) fn set_and_cleared<'c>(patch: &Value, clear: &'c [String]) -> Vec<&'c str> {
    let mut out: Vec<&str> = vec![];
    for path in clear {
        let mut at = Some(patch);
        for name in path.split('.') {
            at = at.and_then(|v| v.get(name));
        }
        if at.is_some() && !out.contains(&path.as_str()) {
            out.push(path);
        }
    }
    out
}

impl Action {
    /// The body a patch step sends ([`patch_body`]); `None` for other steps.
    pub(crate) fn body(&self) -> Option<Value> {
        match self {
            Action::PatchCampaign { patch, clear, .. }
            | Action::PatchDeployment { patch, clear, .. } => patch_body(patch, clear),
            _ => None,
        }
    }

    /// What it acts on: the key of its campaign, cohort, deployment or inbound call.
    pub(crate) fn subject(&self) -> Option<&str> {
        match self {
            Action::Pause { campaign }
            | Action::Resume { campaign }
            | Action::Cancel { campaign }
            | Action::PatchCampaign { campaign, .. } => Some(campaign),
            Action::UploadCohort { cohort } => Some(cohort),
            Action::PauseDeployment { deployment }
            | Action::ResumeDeployment { deployment }
            | Action::DeleteDeployment { deployment }
            | Action::PatchDeployment { deployment, .. } => Some(deployment),
            Action::InboundCall { key, .. } => Some(key),
            Action::KeyServiceOutage { .. }
            | Action::RotateDataKey {}
            | Action::RestartPlatform {} => None,
        }
    }

    /// The `do` name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Action::Pause { .. } => "pause",
            Action::Resume { .. } => "resume",
            Action::Cancel { .. } => "cancel",
            Action::PatchCampaign { .. } => "patch_campaign",
            Action::UploadCohort { .. } => "upload_cohort",
            Action::PauseDeployment { .. } => "pause_deployment",
            Action::ResumeDeployment { .. } => "resume_deployment",
            Action::DeleteDeployment { .. } => "delete_deployment",
            Action::PatchDeployment { .. } => "patch_deployment",
            Action::InboundCall { .. } => "inbound_call",
            Action::KeyServiceOutage { .. } => "key_service_outage",
            Action::RotateDataKey {} => "rotate_data_key",
            Action::RestartPlatform {} => "restart_platform",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cleared_fields_are_sent_as_null() {
        let clear = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            patch_body(&json!({"name": "N"}), &clear(&["inbound_config"])),
            Some(json!({"name": "N", "inbound_config": null}))
        );
        assert_eq!(
            patch_body(
                &json!({"app_config": {"app_version": 2}}),
                &clear(&["app_config.webhook_config", "description"])
            ),
            Some(
                json!({"app_config": {"app_version": 2, "webhook_config": null}, "description": null})
            )
        );
        assert_eq!(
            patch_body(&json!({}), &clear(&["app_config.webhook_config"])),
            Some(json!({"app_config": {"webhook_config": null}}))
        );
        assert_eq!(patch_body(&json!("x"), &[]), None);
        assert_eq!(
            patch_body(&json!({"app_config": 1}), &clear(&["app_config.x"])),
            None
        );
        assert_eq!(
            set_and_cleared(
                &json!({"inbound_config": {}, "app_config": {"webhook_config": {}}}),
                &clear(&["inbound_config", "description", "app_config.webhook_config"])
            ),
            ["inbound_config", "app_config.webhook_config"]
        );
    }
}
