//! What the platform would refuse of a scenario's timeline, known before anything runs: the
//! statuses the campaigns and deployments go through (their starts and ends, as the
//! platform's life cycle moves them, and every step before), so that a step the platform
//! would answer 409 or 404 (a `patch_campaign` while active, a `resume` after a `cancel`, a
//! second `delete_deployment`, an upload to a cancelled campaign) is refused by `scenario
//! check` at its `do` line, saying why; and a patch is checked against the campaign or
//! deployment as the steps before it leave it.
//!
//! Steps run in time order, steps at one time in file order, after the uploads due then and
//! after the campaign starts and ends due then (as the runner plays them).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use contracts::model::{CampaignSpec, DeploymentSpec};
use contracts::validate::Options;
use contracts::wire::{CampaignAction, CampaignStatus};
use platform::lifecycle::{apply_action, effective_status};

use super::check::Checker;
use super::locate::ApiPlace;
use super::located::line_col;
use super::model::Scenario;
use super::setup::CohortDef;
use super::setup::campaign_body;
use super::time::At;
use super::timeline::Action;

/// A campaign as the steps leave it.
struct CampaignState {
    spec: CampaignSpec,
    /// Its status as last set (the clock moves it on at its start and end).
    stored: CampaignStatus,
    /// What set it, for messages.
    by: String,
}

impl CampaignState {
    /// Its status at `t`, and what made it so.
    fn at(&self, t: DateTime<Utc>) -> (CampaignStatus, String) {
        let now = effective_status(self.stored, self.spec.start, self.spec.end, t);
        let by = match now {
            s if s == self.stored => self.by.clone(),
            CampaignStatus::Ended => format!(
                "it ended at its end_timestamp, {}",
                contracts::clock::format_instant(self.spec.end)
            ),
            _ => format!(
                "it started at its start_timestamp, {}",
                contracts::clock::format_instant(self.spec.start)
            ),
        };
        (now, by)
    }
}

/// What a step did, as said after it: `pause_deployment` paused.
fn past(name: &str) -> &'static str {
    match name {
        "pause" | "pause_deployment" => "paused",
        "resume" | "resume_deployment" => "resumed",
        "cancel" => "cancelled",
        "delete_deployment" => "deleted",
        _ => "changed",
    }
}

/// A deployment's status as the steps leave it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Deployment {
    Active,
    Paused,
    Deleted,
}

struct DeploymentState {
    spec: DeploymentSpec,
    status: Deployment,
    by: String,
}

/// Something at a time that the platform may refuse.
enum Due {
    /// A cohort uploaded at its `upload_at` (index in the file).
    Upload(usize),
    /// A timeline step (index in the file).
    Step(usize),
}

impl Checker<'_> {
    /// Refuses each step (and each `upload_at` upload) the platform would refuse, given the
    /// statuses the steps before it lead to.
    pub(super) fn timeline_states(&mut self, s: &Scenario, start: DateTime<Utc>) {
        let mut campaigns: BTreeMap<&str, CampaignState> = BTreeMap::new();
        for c in &s.campaigns {
            let body = campaign_body(c, start, "http://127.0.0.1:9/scenario-webhooks");
            if let Ok(spec) = contracts::validate::campaign_create(&body, start, Options::default())
            {
                let by = "as created".to_string();
                let stored = CampaignStatus::Scheduled;
                campaigns.insert(&c.key, CampaignState { spec, stored, by });
            }
        }
        let mut deployments: BTreeMap<&str, DeploymentState> = BTreeMap::new();
        for d in &s.deployments {
            if let Ok(spec) = contracts::validate::deployment_create(&d.request, Options::default())
            {
                let by = "as created".to_string();
                let status = Deployment::Active;
                deployments.insert(&d.key, DeploymentState { spec, status, by });
            }
        }
        let mut due: Vec<(DateTime<Utc>, u8, usize, Due)> = vec![];
        for (i, c) in s.cohorts.iter().enumerate() {
            if let Some(a) = c.upload_at {
                due.push((a.resolve(start), 0, i, Due::Upload(i)));
            }
        }
        for (i, st) in s.timeline.iter().enumerate() {
            due.push((st.at.resolve(start), 1, i, Due::Step(i)));
        }
        due.sort_by_key(|(t, kind, i, _)| (*t, *kind, *i));
        for (t, _, _, d) in due {
            let (i, span, action, when) = match d {
                Due::Upload(i) => {
                    let c = &s.cohorts[i];
                    let when = c.upload_at.unwrap_or(At::Absolute(t));
                    let place =
                        self.place(&["cohorts".into(), i.into(), "upload_at".into()], &c.span);
                    self.upload(c, (t, when), &place, &campaigns, &deployments);
                    continue;
                }
                Due::Step(i) => {
                    let st = &s.timeline[i];
                    (i, st.span.clone(), &st.action, st.at)
                }
            };
            let place = self.place(&["timeline".into(), i.into(), "do".into()], &span);
            let line = line_col(self.text, place.start).0;
            let name = action.name();
            match action {
                Action::Pause { campaign }
                | Action::Resume { campaign }
                | Action::Cancel { campaign } => {
                    let Some(c) = campaigns.get_mut(campaign.as_str()) else {
                        continue;
                    };
                    let verb = match action {
                        Action::Pause { .. } => CampaignAction::Pause,
                        Action::Resume { .. } => CampaignAction::Resume,
                        _ => CampaignAction::Cancel,
                    };
                    let (now, by) = c.at(t);
                    match apply_action(now, verb, c.spec.start, c.spec.end, t) {
                        Ok(to) => {
                            c.stored = to;
                            c.by = format!("{} by the step on line {line}", past(name));
                        }
                        Err(e) => self.at(
                            &place,
                            format!(
                                "{name} at {when}: the platform would refuse it (409: {e}): campaign {campaign:?} is {} then ({by})",
                                now.as_str()
                            ),
                        ),
                    }
                }
                Action::PatchCampaign { campaign, .. } => {
                    let Some(c) = campaigns.get_mut(campaign.as_str()) else {
                        continue;
                    };
                    let (now, by) = c.at(t);
                    if !matches!(now, CampaignStatus::Scheduled | CampaignStatus::Paused) {
                        let hint = if now.is_final() {
                            "it no longer changes"
                        } else {
                            "pause it first, or patch it before its start"
                        };
                        self.at(
                            &place,
                            format!(
                                "patch_campaign at {when}: the platform would refuse it (409: a campaign can be changed only while scheduled or paused): campaign {campaign:?} is {} then ({by}); {hint}",
                                now.as_str()
                            ),
                        );
                        continue;
                    }
                    let Some(patch) = action.body() else {
                        continue; // refused as such in check.rs
                    };
                    match contracts::validate::campaign_patch(
                        &patch,
                        t,
                        &c.spec,
                        Options { strict: true },
                    ) {
                        Ok(spec) => {
                            c.spec = spec;
                            c.stored = now;
                        }
                        Err(e) => {
                            let at = ApiPlace::new("patch", &["timeline".into(), i.into()], &span);
                            self.api_errors(&at, &format!("patch_campaign at {when}"), &e);
                        }
                    }
                }
                Action::UploadCohort { cohort } => {
                    if let Some(c) = s.cohorts.iter().find(|c| &c.key == cohort) {
                        self.upload(c, (t, when), &place, &campaigns, &deployments);
                    }
                }
                Action::PauseDeployment { deployment }
                | Action::ResumeDeployment { deployment }
                | Action::DeleteDeployment { deployment }
                | Action::PatchDeployment { deployment, .. } => {
                    let Some(d) = deployments.get_mut(deployment.as_str()) else {
                        continue;
                    };
                    let refusal = match (action, d.status) {
                        (_, Deployment::Deleted) => Some(format!(
                            "404: deployment {deployment:?} no longer exists ({})",
                            d.by
                        )),
                        (Action::PauseDeployment { .. }, Deployment::Paused) => Some(format!(
                            "409: cannot pause a deployment that is paused ({})",
                            d.by
                        )),
                        (Action::ResumeDeployment { .. }, Deployment::Active) => Some(format!(
                            "409: cannot resume a deployment that is active ({})",
                            d.by
                        )),
                        _ => None,
                    };
                    if let Some(why) = refusal {
                        self.at(
                            &place,
                            format!("{name} at {when}: the platform would refuse it ({why})"),
                        );
                        continue;
                    }
                    let by = format!("{} by the step on line {line}", past(name));
                    match action {
                        Action::PauseDeployment { .. } => {
                            (d.status, d.by) = (Deployment::Paused, by)
                        }
                        Action::ResumeDeployment { .. } => {
                            (d.status, d.by) = (Deployment::Active, by)
                        }
                        Action::DeleteDeployment { .. } => {
                            (d.status, d.by) = (Deployment::Deleted, by)
                        }
                        Action::PatchDeployment { .. } => {
                            let Some(patch) = action.body() else {
                                continue; // refused as such in check.rs
                            };
                            match contracts::validate::deployment_patch(
                                &patch,
                                &d.spec,
                                Options { strict: true },
                            ) {
                                Ok(spec) => d.spec = spec,
                                Err(e) => {
                                    let at = ApiPlace::new(
                                        "patch",
                                        &["timeline".into(), i.into()],
                                        &span,
                                    );
                                    self.api_errors(
                                        &at,
                                        &format!("patch_deployment at {when}"),
                                        &e,
                                    );
                                }
                            }
                        }
                        _ => {}
                    }
                }
                Action::InboundCall { .. }
                | Action::KeyServiceOutage { .. }
                | Action::RotateDataKey {}
                | Action::RestartPlatform {} => {}
            }
        }
    }

    /// An upload of cohort `c` at `t` (written `when`): refused by a campaign that is ended or cancelled
    /// then (409), or a deployment deleted before (404).
    fn upload(
        &mut self,
        c: &CohortDef,
        (t, when): (DateTime<Utc>, At),
        place: &std::ops::Range<usize>,
        campaigns: &BTreeMap<&str, CampaignState>,
        deployments: &BTreeMap<&str, DeploymentState>,
    ) {
        let (key, campaign, deployment) = (&c.key, c.campaign.as_deref(), c.deployment.as_deref());
        if let Some(c) = campaign.and_then(|k| campaigns.get(k)) {
            let (now, by) = c.at(t);
            if now.is_final() {
                self.at(
                    place,
                    format!(
                        "the upload of cohort {key:?} at {when}: the platform would refuse it (409: a campaign that is {} takes no cohort): campaign {:?} is {} then ({by})",
                        now.as_str(),
                        campaign.unwrap_or(""),
                        now.as_str()
                    ),
                );
            }
        }
        if let Some(d) = deployment.and_then(|k| deployments.get(k))
            && d.status == Deployment::Deleted
        {
            self.at(
                place,
                format!(
                    "the upload of cohort {key:?} at {when}: the platform would refuse it (404: deployment {:?} no longer exists ({}))",
                    deployment.unwrap_or(""),
                    d.by
                ),
            );
        }
    }
}
