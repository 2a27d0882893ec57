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
    /// `PATCH .../campaigns/{id}` with `patch` as the body.
    PatchCampaign {
        /// The campaign's key.
        campaign: String,
        /// The body, as the API takes it.
        #[schemars(with = "BTreeMap<String, Value>")]
        patch: Value,
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
    /// `PATCH .../deployments/{id}` with `patch` as the body.
    PatchDeployment {
        /// The deployment's key.
        deployment: String,
        /// The body, as the API takes it.
        #[schemars(with = "BTreeMap<String, Value>")]
        patch: Value,
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

impl Action {
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
