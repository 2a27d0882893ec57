//! The timeline's actions of a scenario run: key-service faults switched on and off, cohort
//! uploads, and each step (pause, resume, cancel, patch, upload, inbound call, outage, data-key
//! rotation, platform restart).

use super::*;

impl Run<'_> {
    pub(super) fn fault_on(&mut self, i: usize) -> Result<()> {
        let f = &self.loaded.scenario.key_service.faults[i];
        let spec = fault_spec(f);
        let info = self.stack.kms().add_fault(spec).map_err(|e| {
            anyhow!(
                "setting a key-service fault ({}): {e}",
                self.loaded.location(&f.span)
            )
        })?;
        let until = f.until.map(|a| self.at(a));
        let label = format!(
            "key service {} on {}",
            crate::scenario::kms::kind_name(f.kind),
            f.endpoint.as_str()
        );
        self.faults.push(FaultSet {
            id: info.id.clone(),
            label,
            from: self.now,
            until: None,
            timed: f.next.is_none(),
        });
        let idx = self.faults.len() - 1;
        self.note(
            "fault",
            "key service",
            format!(
                "{} on {} ({}){}",
                crate::scenario::kms::kind_name(f.kind),
                f.endpoint.as_str(),
                info.id,
                until.map_or(String::new(), |u| format!(" until {}", format_instant(u)))
            ),
        );
        if let Some(u) = until {
            self.stop_at(u, Event::FaultOff(idx));
        }
        Ok(())
    }

    pub(super) async fn upload(&mut self, i: usize) -> Result<()> {
        let c = &self.loaded.scenario.cohorts[i];
        let (parent, parent_key) = match (&c.campaign, &c.deployment) {
            (Some(k), _) => ("campaigns", k),
            (_, Some(k)) => ("deployments", k),
            _ => bail!("a cohort without a parent passed the checks"),
        };
        let id = if parent == "campaigns" {
            self.campaigns[parent_key].id.clone()
        } else {
            self.deployments[parent_key].clone()
        };
        let (csv, transformation) = crate::runner::cohorts::build(c, &self.loaded.dir)?;
        let rows = crate::runner::cohorts::rows(c, &csv);
        let base = format!("{}/{parent}/{id}/cohorts", self.api.scheduling());
        let v = self
            .api
            .upload_cohort(
                &format!("{base}/upload"),
                c.name.as_deref().unwrap_or(&c.key),
                c.category.as_deref(),
                csv,
                &transformation,
            )
            .await
            .with_context(|| {
                format!(
                    "uploading cohort {:?} ({})",
                    c.key,
                    self.loaded.location(&c.span)
                )
            })?;
        let cohort_id = str_field(&v, "cohort_id")?;
        let path = format!("{base}/{cohort_id}");
        // The cohort worker runs beside the simulated clock: wait for it (wall clock) so that
        // the users are in before time moves on.
        let deadline = contracts::clock::Stopwatch::start();
        let v = loop {
            let v = self.api.get(&path).await?;
            if v["status"] != "processing" {
                break v;
            }
            if deadline.elapsed() > std::time::Duration::from_secs(300) {
                bail!("cohort {:?} was still processing after 5 minutes", c.key);
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        };
        let key = c.key.clone();
        let record = v.clone();
        self.note(
            "cohort",
            &key,
            format!(
                "uploaded to {} {parent_key} ({cohort_id}, {rows} row{}): {}, {} rejected",
                parent.trim_end_matches('s'),
                crate::scenario::plural(rows as usize),
                v["status"].as_str().unwrap_or("?"),
                v["result"]["rejected_records"]
            ),
        );
        self.cohorts.insert(key, (path, record));
        Ok(())
    }

    pub(super) async fn step(&mut self, i: usize) -> Result<()> {
        let st = &self.loaded.scenario.timeline[i];
        let loc = self.loaded.location(&st.span);
        let sched = self.api.scheduling();
        let auth = self.api.authoring();
        let (subject, detail) = match &st.action {
            Action::Pause { campaign }
            | Action::Resume { campaign }
            | Action::Cancel { campaign } => {
                let id = &self.campaigns[campaign].id;
                let v = self
                    .api
                    .call(
                        Method::PUT,
                        &format!("{sched}/campaigns/{id}/status"),
                        Some(&json!({"action": st.action.name()})),
                    )
                    .await
                    .with_context(|| format!("{} ({loc})", st.action.name()))?;
                // The change is the answer's, at the instant of the call.
                self.note("action", campaign, st.action.name());
                self.status_now(campaign, self.now, &str_field(&v, "status")?);
                return Ok(());
            }
            Action::PatchCampaign { campaign, .. } => {
                let id = self.campaigns[campaign].id.clone();
                let patch = &patch_body(&st.action)?;
                let v = self
                    .api
                    .call(
                        Method::PATCH,
                        &format!("{sched}/campaigns/{id}"),
                        Some(patch),
                    )
                    .await
                    .with_context(|| format!("patch_campaign ({loc})"))?;
                let spec = spec_of(&v)?;
                // A new end is a stop, where the campaign ends.
                self.stop_at(spec.end, Event::Look);
                let mut observer = self.observer.lock();
                let keep = observer.campaigns[campaign].attempt_ids.is_some();
                observer.watch(campaign, self.now, spec, keep);
                (campaign.clone(), format!("patched: {patch}"))
            }
            Action::UploadCohort { cohort } => {
                let idx = self
                    .loaded
                    .scenario
                    .cohorts
                    .iter()
                    .position(|c| &c.key == cohort)
                    .ok_or_else(|| anyhow!("no cohort {cohort:?}"))?;
                self.upload(idx).await?;
                return Ok(());
            }
            Action::PauseDeployment { deployment } | Action::ResumeDeployment { deployment } => {
                let id = &self.deployments[deployment];
                let action = if matches!(st.action, Action::PauseDeployment { .. }) {
                    "pause"
                } else {
                    "resume"
                };
                self.api
                    .call(
                        Method::PUT,
                        &format!("{auth}/deployments/{id}/status"),
                        Some(&json!({"action": action})),
                    )
                    .await
                    .with_context(|| format!("{} ({loc})", st.action.name()))?;
                (deployment.clone(), format!("deployment {action}d"))
            }
            Action::DeleteDeployment { deployment } => {
                let id = &self.deployments[deployment];
                self.api
                    .call(Method::DELETE, &format!("{auth}/deployments/{id}"), None)
                    .await
                    .with_context(|| format!("delete_deployment ({loc})"))?;
                (deployment.clone(), "deployment deleted".into())
            }
            Action::PatchDeployment { deployment, .. } => {
                let id = &self.deployments[deployment];
                let patch = &patch_body(&st.action)?;
                self.api
                    .call(
                        Method::PATCH,
                        &format!("{auth}/deployments/{id}"),
                        Some(patch),
                    )
                    .await
                    .with_context(|| format!("patch_deployment ({loc})"))?;
                (deployment.clone(), format!("deployment patched: {patch}"))
            }
            Action::InboundCall {
                key,
                caller,
                dialled,
            } => {
                let v = self
                    .api
                    .post(
                        &format!("{}/inbound-calls", self.api.sim()),
                        &json!({"caller": caller, "dialled": dialled}),
                    )
                    .await
                    .with_context(|| format!("inbound_call ({loc})"))?;
                let answered = v["answered"].as_bool().unwrap_or(false);
                self.observer.lock().chart.add(
                    self.now,
                    if answered {
                        super::super::observe::INBOUND_ANSWERED
                    } else {
                        super::super::observe::INBOUND_NOT_ANSWERED
                    },
                );
                let detail = if answered {
                    format!("{caller} -> {dialled}: answered")
                } else {
                    format!(
                        "{caller} -> {dialled}: not answered ({})",
                        v["rejection"].as_str().unwrap_or("?")
                    )
                };
                self.inbound.push((key.clone(), v));
                (key.clone(), detail)
            }
            Action::KeyServiceOutage { duration, endpoint } => {
                let info = self
                    .stack
                    .kms()
                    .add_fault(FaultSpec::new(FaultKind::ServiceUnavailable).on(*endpoint))
                    .map_err(|e| anyhow!("key_service_outage ({loc}): {e}"))?;
                self.faults.push(FaultSet {
                    id: info.id.clone(),
                    label: format!("key service outage (503) on {}", endpoint.as_str()),
                    from: self.now,
                    until: None,
                    timed: true,
                });
                let idx = self.faults.len() - 1;
                let until = self.now + duration.0;
                self.stop_at(until, Event::FaultOff(idx));
                self.note(
                    "fault",
                    "key service",
                    format!(
                        "outage (503) on {} ({}) until {}",
                        endpoint.as_str(),
                        info.id,
                        format_instant(until)
                    ),
                );
                return Ok(());
            }
            Action::RotateDataKey {} => {
                let v = self
                    .api
                    .post(
                        &format!("{}/data-keys/rotate", self.api.admin()),
                        &json!({}),
                    )
                    .await
                    .with_context(|| format!("rotate_data_key ({loc})"))?;
                (
                    "data keys".to_string(),
                    format!("rotated: key {} active", v["key_id"]),
                )
            }
            Action::RestartPlatform {} => {
                self.stack
                    .restart_platform()
                    .await
                    .context("restarting the platform")?;
                (
                    "platform".to_string(),
                    "restarted on the same database".into(),
                )
            }
        };
        let kind = if matches!(st.action, Action::RestartPlatform {}) {
            "restart"
        } else {
            "action"
        };
        self.note(kind, &subject, detail);
        Ok(())
    }
}

/// What the platform may refuse at a stop: a timeline step or a cohort's upload at its
/// `upload_at` (by index in the file).
#[derive(Clone, Copy, Debug)]
pub(super) enum Refusable {
    /// A `[[timeline]]` step.
    Step(usize),
    /// A `[[cohorts]]` entry uploaded at its `upload_at`.
    Upload(usize),
}

impl Run<'_> {
    /// The outcome of a step or an upload: an answer of the platform that refuses it (a 4xx)
    /// becomes a failed check with that answer, and the run goes on; any other failure ends
    /// the run.
    pub(super) fn refusal(&mut self, done: Result<()>, what: Refusable) -> Result<()> {
        let Err(e) = done else {
            return Ok(());
        };
        let Some(r) = e
            .downcast_ref::<super::super::client::Refused>()
            .filter(|r| (400..500).contains(&r.status))
            .cloned()
        else {
            return Err(e);
        };
        let s = &self.loaded.scenario;
        let (span, name, subject) = match what {
            Refusable::Step(i) => {
                let st = &s.timeline[i];
                (
                    st.span.clone(),
                    st.action.name().to_string(),
                    st.action.subject().unwrap_or("").to_string(),
                )
            }
            Refusable::Upload(i) => {
                let c = &s.cohorts[i];
                (c.span.clone(), "upload_cohort".to_string(), c.key.clone())
            }
        };
        let location = self.loaded.location(&span);
        let line = location.rsplit(':').next().unwrap_or("0").to_string();
        let what = format!("{name} {subject}").trim().to_string();
        let at = format_instant(self.now);
        self.note(
            "action",
            if subject.is_empty() { &name } else { &subject },
            format!("{name} refused: {}", r.summary()),
        );
        self.refused.push(Check {
            id: format!("step.line{line}"),
            group: "step".into(),
            description: format!("{what} at {at}"),
            severity: crate::checks::Severity::Error,
            result: crate::checks::Outcome::Fail,
            evidence: crate::checks::Evidence::new().with("at", at).with(
                "observed",
                json!({"status": r.status, "answer": r.body_json()}),
            ),
            expected: Some(format!(
                "the platform accepts {what} ({} {})",
                r.method, r.path
            )),
            how_to_fix: Some(
                "change the step so that the platform accepts it at that time (its answer says why it refused)"
                    .into(),
            ),
            skip_reason: None,
            location: Some(location),
        });
        Ok(())
    }
}

/// The body of a patch step (`patch`, and `null` for each field of `clear`).
fn patch_body(action: &Action) -> Result<Value> {
    action
        .body()
        .ok_or_else(|| anyhow!("a patch that is not a table passed the checks"))
}

fn fault_spec(f: &KmsFaultDef) -> FaultSpec {
    let kind = match f.kind {
        KmsFaultKind::ServiceUnavailable => FaultKind::ServiceUnavailable,
        KmsFaultKind::RateLimited => FaultKind::RateLimited {
            retry_after_secs: f.retry_after_secs.unwrap_or(1),
        },
        KmsFaultKind::InternalError => FaultKind::InternalError,
        KmsFaultKind::Latency => FaultKind::Latency {
            ms: f
                .delay
                .map_or(100, |d| d.0.num_milliseconds().max(0) as u64),
            jitter_ms: 0,
        },
        KmsFaultKind::Hang => FaultKind::Hang,
        KmsFaultKind::MalformedJson => FaultKind::MalformedJson,
        KmsFaultKind::WrongContentType => FaultKind::WrongContentType,
        KmsFaultKind::WrongPlaintext => FaultKind::WrongPlaintext,
        KmsFaultKind::TruncatedKey => FaultKind::TruncatedKey {
            len: f.len.unwrap_or(16),
        },
    };
    let trigger = match (f.next, f.probability) {
        (Some(n), _) => FaultTrigger::Next(n),
        (_, Some(p)) => FaultTrigger::Probability(p),
        _ => FaultTrigger::Always,
    };
    FaultSpec::new(kind).on(f.endpoint).when(trigger)
}

pub(super) fn response(a: &Answer) -> Response {
    let secs = |s: Option<crate::scenario::time::Span>, d: u32| {
        s.map_or(d, |s| {
            s.0.num_seconds().clamp(0, i64::from(u32::MAX)) as u32
        })
    };
    let r = match a.outcome {
        AnswerOutcome::Connected => Response::connected(secs(a.talk, 60)),
        AnswerOutcome::Busy => Response::busy(),
        AnswerOutcome::NoAnswer => Response::no_answer(),
        AnswerOutcome::Voicemail => Response::voicemail_for(secs(a.talk, 25)),
        AnswerOutcome::Failed => {
            Response::failed(a.reason.clone().unwrap_or_else(|| "call_rejected".into()))
        }
        AnswerOutcome::ProviderError => Response::provider_error(),
        AnswerOutcome::InternalError => Response::internal_error(),
    };
    match a.ring {
        Some(ring) => r.ring(secs(Some(ring), 0)),
        None => r,
    }
}
