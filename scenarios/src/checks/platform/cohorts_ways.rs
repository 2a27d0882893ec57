//! Part of the `cohorts` group ([`super::cohorts`]): the other ways a cohort comes in, both
//! only this project's record (warnings): a stream whose numbers are written nationally, read
//! with the body's `country_code`, and an upload to a paused deployment.

use reqwest::Method;
use serde_json::json;

use super::cohorts_values::{upload, wait_for_cohort};
use super::context::Ctx;
use super::exchange::Exchange;
use super::fixtures::{self, Kind, Makes};
use super::target::Parent;
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

pub(super) const STREAM_COUNTRY: CheckDef = CheckDef::warning(
    "cohorts.stream_country_code",
    "a stream with country_code US takes users whose numbers are written nationally ((202) 555-0147, 202.555.0148): both valid, none rejected, in the answer and on GET (the record's stream body, assumed)",
);
pub(super) const PAUSED_DEPLOYMENT: CheckDef = CheckDef::warning(
    "cohorts.upload_to_paused_deployment",
    "a paused deployment takes a cohort upload, processed to completed with the counts of the rows sent (the record: deployments take cohorts whether active or paused, assumed)",
);

pub(super) const STREAMED: Makes = Makes::new(Kind::Cohort, "cohorts-national", 1);
pub(super) const DEPLOYMENT: Makes = Makes::new(Kind::Deployment, "cohorts-paused", 1);
pub(super) const DEPLOYMENT_COHORT: Makes =
    Makes::new(Kind::Cohort, "cohorts-paused-deployment", 1);

/// The national numbers of the stream, each with its user.
const NATIONAL: [(&str, &str); 2] = [("(202) 555-0147", "n1"), ("202.555.0148", "n2")];

/// Runs both checks; the stream goes to the group's campaign `campaign` (paused by now,
/// which takes cohorts as it takes uploads).
pub(super) async fn run(cx: &Ctx, v: &mut Verdicts, campaign: &str) {
    stream_country(cx, v, campaign).await;
    paused_deployment(cx, v).await;
}

async fn stream_country(cx: &Ctx, v: &mut Verdicts, campaign: &str) {
    let parent = Parent::Campaign(campaign);
    let users: Vec<(String, String)> = NATIONAL
        .iter()
        .map(|(n, id)| (n.to_string(), id.to_string()))
        .collect();
    let mut body = fixtures::cohort_stream(&cx.names.name(STREAMED.label), &users);
    body["country_code"] = json!("US");
    let x = cx
        .send(Method::POST, &cx.paths.cohorts(parent, &["stream"]), body)
        .await;
    let read = match x.str_field("cohort_id") {
        Some(id) => wait_for_cohort(cx, parent, id).await,
        None => x.clone(),
    };
    // The counts, wherever the answer shows them; the read once processed must.
    let counts = |x: &Exchange| {
        let r = &x.body()["result"];
        r["total_records"] == json!(2)
            && r["valid_records"] == json!(2)
            && r["rejected_records"] == json!(0)
    };
    let answered = x.status == 200 && (!x.body()["result"].is_object() || counts(&x));
    v.varied(
        &STREAM_COUNTRY,
        "number",
        NATIONAL.iter().map(|(n, _)| n.to_string()),
    );
    v.judge(
        &STREAM_COUNTRY,
        answered && read.status == 200 && counts(&read),
        Exchange::all(&[&x, &read]),
        "200 with result {\"total_records\": 2, \"valid_records\": 2, \"rejected_records\": 0} in the answer and on GET: both national numbers read in the body's country_code US",
    );
}

async fn paused_deployment(cx: &Ctx, v: &mut Verdicts) {
    let created = cx
        .create_plain_deployment(&cx.names.name(DEPLOYMENT.label))
        .await;
    let Some(id) = created.str_field("deployment_id").map(str::to_string) else {
        return v.blocked_only(
            &[&PAUSED_DEPLOYMENT],
            "creating a deployment",
            created.evidence(),
        );
    };
    let paused = cx
        .send(
            Method::PUT,
            &cx.paths.deployment_status(&id),
            json!({"action": "pause"}),
        )
        .await;
    let parent = Parent::Deployment(&id);
    let x = upload(cx, parent, DEPLOYMENT_COHORT.label, "phone").await;
    let done = match x.str_field("cohort_id") {
        Some(c) => wait_for_cohort(cx, parent, c).await,
        None => x.clone(),
    };
    v.varied(
        &PAUSED_DEPLOYMENT,
        "cohort status",
        [x.body()["status"].clone(), done.body()["status"].clone()],
    );
    v.judge(
        &PAUSED_DEPLOYMENT,
        paused.body()["status"] == "paused"
            && x.status == 200
            && x.str_field("status") == Some("processing")
            && done.str_field("status") == Some("completed")
            && super::cohorts_values::counts_ok(&done.body()["result"]),
        Exchange::all(&[&paused, &x, &done]),
        format!(
            "the deployment paused; the upload answered 200 \"status\": \"processing\" and completed with result {{\"total_records\": {}, \"valid_records\": {}, \"rejected_records\": {}}}",
            fixtures::COHORT_CSV_ROWS,
            fixtures::COHORT_CSV_ROWS - fixtures::COHORT_CSV_REJECTED,
            fixtures::COHORT_CSV_REJECTED
        ),
    );
}
