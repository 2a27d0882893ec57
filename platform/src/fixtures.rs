//! Fixtures: campaigns, deployments and cohorts created when the platform starts, with
//! ids the file fixes, so that a test suite can refer to them (`--fixtures FILE`).
//!
//! ```toml
//! [[deployments]]
//! org_id = "acme"
//! workspace_id = "prod"
//! deployment_id = "dep-front-desk"      # the id it gets
//! [deployments.body]                    # the body of POST .../deployments
//! name = "Front desk"
//! app_id = "receptionist"
//! app_version = 3
//! connection_configs = [{ connection_id = "twilio-main", phone_numbers = ["+14155550100"] }]
//!
//! [[campaigns]]
//! org_id = "acme"
//! workspace_id = "prod"
//! campaign_id = "cmp-spring"
//! start_in_seconds = 600                # start_timestamp = the platform's now + 600 s
//! end_in_seconds = 864000               # end_timestamp = now + 10 days
//! [campaigns.body]                      # the body of POST .../campaigns (timestamps
//! name = "Spring promo"                 #   may be left out when the two above are set)
//! allowed_schedule = { timezone = "Europe/London", allowed_days = ["Monday", "Tuesday"], allowed_start_time = "09:00", allowed_end_time = "17:00" }
//! [campaigns.body.app_config]
//! app_id = "sales-agent"
//! app_version = 1
//! app_type = "agent"
//! attempts_per_second = 2.0
//! connection_configs = [{ connection_id = "twilio-main", phone_numbers = ["+14155550101"], weight = 1 }]
//! retry_config = { max_retries = 2, retry_on = ["busy", "no_answer"], threshold_seconds = 20 }
//!
//! [[cohorts]]
//! org_id = "acme"
//! workspace_id = "prod"
//! cohort_id = "coh-vip"
//! deployment_id = "dep-front-desk"      # or campaign_id = "..."
//! [cohorts.body]                        # the body of POST .../cohorts/stream
//! name = "VIP callers"
//! users = [{ phone_number = "+442071838750", user_identifier = "u-1", app_variables = { tier = "gold" } }]
//! ```
//!
//! The same in JSON (a file ending in `.json`) has the same fields. Deployments are
//! created first, then campaigns, then cohorts, each as by its API call (same rules, same
//! errors) on behalf of a key named `fixtures`. A fixture whose id already exists (a
//! restart on the same database) is left as it is.

use std::path::Path;

use chrono::Duration;
use contracts::clock::format_instant;
use serde::Deserialize;
use serde_json::Value;

use crate::app::App;
use crate::auth::Principal;
use crate::error::ApiError;
use crate::service;
use crate::store::WorkspaceRef;
use crate::store::cohorts::Parent;

/// The file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixtures {
    /// Deployments, created first.
    #[serde(default)]
    pub deployments: Vec<DeploymentFixture>,
    /// Campaigns, created next.
    #[serde(default)]
    pub campaigns: Vec<CampaignFixture>,
    /// Cohorts (streamed, completed at once), created last.
    #[serde(default)]
    pub cohorts: Vec<CohortFixture>,
}

/// A deployment.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentFixture {
    /// Its org.
    pub(crate) org_id: String,
    /// Its workspace.
    pub(crate) workspace_id: String,
    /// The id it gets.
    pub(crate) deployment_id: String,
    /// The create request.
    pub(crate) body: Value,
}

/// A campaign.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignFixture {
    /// Its org.
    pub(crate) org_id: String,
    /// Its workspace.
    pub(crate) workspace_id: String,
    /// The id it gets.
    pub(crate) campaign_id: String,
    /// Sets `start_timestamp` to the platform's time at start plus this many seconds.
    #[serde(default)]
    pub(crate) start_in_seconds: Option<i64>,
    /// Sets `end_timestamp` to the platform's time at start plus this many seconds.
    #[serde(default)]
    pub(crate) end_in_seconds: Option<i64>,
    /// The create request.
    pub(crate) body: Value,
}

/// A cohort of a campaign or a deployment.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CohortFixture {
    /// Its org.
    pub(crate) org_id: String,
    /// Its workspace.
    pub(crate) workspace_id: String,
    /// The id it gets.
    pub(crate) cohort_id: String,
    /// The campaign it belongs to (or `deployment_id`).
    #[serde(default)]
    pub(crate) campaign_id: Option<String>,
    /// The deployment it belongs to (or `campaign_id`).
    #[serde(default)]
    pub(crate) deployment_id: Option<String>,
    /// The stream request (`name`, `users`, ...).
    pub(crate) body: Value,
}

/// Why fixtures could not be loaded or created.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The file could not be read.
    #[error("reading {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
    /// The file is not valid TOML or JSON of the fixture format.
    #[error("{path}: {message} (see the fixture format in the README's \"Fixtures\" section)")]
    Parse {
        /// The file.
        path: String,
        /// What is wrong, with the line where the parser tells it.
        message: String,
    },
    /// A fixture was refused.
    #[error("{fixture}: {message}")]
    Refused {
        /// Which (`deployments[0] dep-front-desk`).
        fixture: String,
        /// Why, as the API would answer.
        message: String,
    },
}

/// What starting with the fixtures did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Fixtures created now.
    pub created: Vec<String>,
    /// Fixtures whose id already existed.
    pub existing: Vec<String>,
}

impl Fixtures {
    /// Reads a fixture file: JSON when it ends in `.json`, TOML otherwise.
    pub fn load(path: &Path) -> Result<Fixtures, FixtureError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| FixtureError::Read {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        let json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let parsed = if json {
            serde_json::from_str::<Fixtures>(&text).map_err(|e| e.to_string())
        } else {
            toml::from_str::<Fixtures>(&text).map_err(|e| e.to_string())
        };
        let fixtures = parsed.map_err(|message| FixtureError::Parse {
            path: shown.clone(),
            message,
        })?;
        fixtures
            .check_ids()
            .map_err(|message| FixtureError::Parse {
                path: shown,
                message,
            })?;
        Ok(fixtures)
    }

    fn check_ids(&self) -> Result<(), String> {
        let ids = self
            .deployments
            .iter()
            .map(|f| ("deployments", &f.deployment_id))
            .chain(self.campaigns.iter().map(|f| ("campaigns", &f.campaign_id)))
            .chain(self.cohorts.iter().map(|f| ("cohorts", &f.cohort_id)));
        for (kind, id) in ids {
            let ok = (1..=64).contains(&id.len())
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !ok {
                return Err(format!(
                    "{kind}: the id '{id}' must be 1 to 64 of A-Z a-z 0-9 - _"
                ));
            }
        }
        for (i, c) in self.cohorts.iter().enumerate() {
            if c.campaign_id.is_some() == c.deployment_id.is_some() {
                return Err(format!(
                    "cohorts[{i}] ({}): give campaign_id or deployment_id (exactly one)",
                    c.cohort_id
                ));
            }
        }
        Ok(())
    }

    /// Creates what does not exist yet, in order: deployments, campaigns, cohorts. Stops
    /// at the first fixture refused.
    pub async fn apply(&self, app: &App) -> Result<Applied, FixtureError> {
        let mut out = Applied::default();
        let who = |org: &str, ws: &str| Principal {
            ws: WorkspaceRef::new(org, ws),
            name: "fixtures".into(),
        };
        for (i, f) in self.deployments.iter().enumerate() {
            let name = format!("deployments[{i}] {}", f.deployment_id);
            let who = who(&f.org_id, &f.workspace_id);
            match service::deployments::get(app, &who, &f.deployment_id).await {
                Ok(_) => out.existing.push(name),
                Err(ApiError::NotFound { .. }) => {
                    service::deployments::create_with_id(
                        app,
                        &who,
                        &f.body,
                        Some(f.deployment_id.clone()),
                    )
                    .await
                    .map_err(|e| refused(&name, e))?;
                    out.created.push(name);
                }
                Err(e) => return Err(refused(&name, e)),
            }
        }
        let now = app.clock.now();
        for (i, f) in self.campaigns.iter().enumerate() {
            let name = format!("campaigns[{i}] {}", f.campaign_id);
            let who = who(&f.org_id, &f.workspace_id);
            match service::campaigns::get(app, &who, &f.campaign_id).await {
                Ok(_) => out.existing.push(name),
                Err(ApiError::NotFound { .. }) => {
                    let mut body = f.body.clone();
                    if let Value::Object(m) = &mut body {
                        for (key, secs) in [
                            ("start_timestamp", f.start_in_seconds),
                            ("end_timestamp", f.end_in_seconds),
                        ] {
                            if let Some(s) = secs {
                                m.insert(
                                    key.into(),
                                    format_instant(now + Duration::seconds(s)).into(),
                                );
                            }
                        }
                    }
                    service::campaigns::create_with_id(
                        app,
                        &who,
                        &body,
                        Some(f.campaign_id.clone()),
                    )
                    .await
                    .map_err(|e| refused(&name, e))?;
                    out.created.push(name);
                }
                Err(e) => return Err(refused(&name, e)),
            }
        }
        for (i, f) in self.cohorts.iter().enumerate() {
            let name = format!("cohorts[{i}] {}", f.cohort_id);
            let who = who(&f.org_id, &f.workspace_id);
            let parent = match (&f.campaign_id, &f.deployment_id) {
                (Some(c), _) => Parent::campaign(c.clone()),
                (None, Some(d)) => Parent::deployment(d.clone()),
                (None, None) => unreachable!("checked when loaded"),
            };
            match service::cohorts::get(app, &who, &parent, &f.cohort_id).await {
                Ok(_) => out.existing.push(name),
                Err(ApiError::NotFound {
                    code: "cohort_not_found",
                    ..
                }) => {
                    service::cohorts::stream_with_id(
                        app,
                        &who,
                        &parent,
                        &f.body,
                        None,
                        Some(f.cohort_id.clone()),
                    )
                    .await
                    .map_err(|e| refused(&name, e))?;
                    out.created.push(name);
                }
                Err(e) => return Err(refused(&name, e)),
            }
        }
        Ok(out)
    }
}

fn refused(fixture: &str, e: ApiError) -> FixtureError {
    let message = match e {
        ApiError::Validation(v) => v
            .details()
            .iter()
            .map(|d| format!("{}: {}", d.dotted_loc(), d.msg))
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    };
    FixtureError::Refused {
        fixture: fixture.to_string(),
        message,
    }
}
