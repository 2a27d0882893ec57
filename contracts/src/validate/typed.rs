//! The rules of [`crate::validate`] for typed wire values: the `TryFrom` impls that build
//! the domain types of [`crate::model`] from a typed request (each goes through its JSON
//! form, so a typed value meets exactly the rules a request body meets).

use chrono::{DateTime, Utc};

use super::Options;
use crate::domain::schedule::CallingWindow;
use crate::error::{Loc, ValidationErrors};
use crate::model::{CampaignSpec, DeploymentSpec, OutboundCall, RetryPolicy};
use crate::wire;

impl TryFrom<&wire::RetryConfig> for RetryPolicy {
    type Error = ValidationErrors;

    fn try_from(w: &wire::RetryConfig) -> Result<Self, Self::Error> {
        let v = serde_json::to_value(w).expect("wire types serialise");
        super::retry_policy(&v, &Loc::root(), None, Options::default())
    }
}

fn window_from_value(
    v: serde_json::Value,
    keys: super::WindowKeys,
) -> Result<CallingWindow, ValidationErrors> {
    let mut c = super::Ctx::new(Options::default());
    let loc = Loc::root();
    let w = c
        .object(&v, &loc, &[])
        .and_then(|m| c.window(m, &loc, keys));
    match w {
        Some(w) if c.errors.is_empty() => Ok(w),
        _ => Err(c.errors),
    }
}

impl TryFrom<&wire::AllowedSchedule> for CallingWindow {
    type Error = ValidationErrors;

    fn try_from(w: &wire::AllowedSchedule) -> Result<Self, Self::Error> {
        window_from_value(
            serde_json::to_value(w).expect("wire types serialise"),
            super::ALLOWED_SCHEDULE_KEYS,
        )
    }
}

impl TryFrom<&wire::InboundConfig> for CallingWindow {
    type Error = ValidationErrors;

    fn try_from(w: &wire::InboundConfig) -> Result<Self, Self::Error> {
        window_from_value(
            serde_json::to_value(w).expect("wire types serialise"),
            super::INBOUND_CONFIG_KEYS,
        )
    }
}

impl CampaignSpec {
    /// Rebuilds a campaign from its create request without the rules that depend on the time
    /// of creation (the start may be long past): how campaigns stored as their create request
    /// (before the serde form) are read.
    pub fn from_stored(req: &wire::CampaignCreateRequest) -> Result<Self, ValidationErrors> {
        let v = serde_json::to_value(req).expect("wire types serialise");
        super::campaign_create_unchecked_times(&v, Options::default())
    }
}

impl TryFrom<(&wire::CampaignCreateRequest, DateTime<Utc>)> for CampaignSpec {
    type Error = ValidationErrors;

    /// Checks a typed create request at time `now`.
    fn try_from(
        (req, now): (&wire::CampaignCreateRequest, DateTime<Utc>),
    ) -> Result<Self, Self::Error> {
        let v = serde_json::to_value(req).expect("wire types serialise");
        super::campaign_create(&v, now, Options::default())
    }
}

impl TryFrom<&wire::DeploymentCreateRequest> for DeploymentSpec {
    type Error = ValidationErrors;

    fn try_from(req: &wire::DeploymentCreateRequest) -> Result<Self, Self::Error> {
        let v = serde_json::to_value(req).expect("wire types serialise");
        super::deployment_create(&v, Options::default())
    }
}

impl TryFrom<&wire::OutboundRequest> for OutboundCall {
    type Error = ValidationErrors;

    fn try_from(req: &wire::OutboundRequest) -> Result<Self, Self::Error> {
        let v = serde_json::to_value(req).expect("wire types serialise");
        super::outbound_request(&v, Options::default())
    }
}
