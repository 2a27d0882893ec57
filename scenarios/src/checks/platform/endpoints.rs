//! `endpoints`: every operation of the contract at its exact path and method, its success
//! answer against the contract's JSON Schema (every required field, enum values, formats).
//!
//! One campaign and one deployment are created, each given a cohort by upload and by
//! stream; the campaign is paused and the deployment deleted on the way.

use reqwest::Method;
use serde_json::json;

use super::cohorts_values::wait_for_cohort;
use super::context::Ctx;
use super::exchange::Body;
use super::exchange::Exchange;
use super::fixtures::{self, Kind, Makes, cohort_stream, magic_number, secs};
use super::patch_kept::unnamed_changes;
use super::target::Parent;
use super::verdicts::Verdicts;
use crate::checks::CheckDef;

const OUTBOUND: CheckDef = CheckDef::error(
    "endpoints.outbound_create",
    "POST .../outbounds places a call: 200 with an attempt_id (OutboundResponse)",
);
const CAMPAIGN_CREATE: CheckDef = CheckDef::error(
    "endpoints.campaign_create",
    "POST .../campaigns, its start and end sent with offsets (+05:30, -03:00), answers 200 with a campaign summary (CampaignSummary)",
);
const CAMPAIGN_LIST: CheckDef = CheckDef::error(
    "endpoints.campaign_list",
    "GET .../campaigns answers 200 with a page of summaries (Page_CampaignSummary) that lists the new campaign",
);
const CAMPAIGN_GET: CheckDef = CheckDef::error(
    "endpoints.campaign_get",
    "GET .../campaigns/{id} answers 200 with the campaign (Campaign), its start and end the instants sent with offsets",
);
const CAMPAIGN_PATCH: CheckDef = CheckDef::error(
    "endpoints.campaign_patch",
    "PATCH .../campaigns/{id} of description and name answers 200 with the updated campaign (Campaign): both new values, in the answer and on the GET after it, every field it does not name as read before it",
);
const CAMPAIGN_STATUS: CheckDef = CheckDef::error(
    "endpoints.campaign_status",
    "PUT .../campaigns/{id}/status answers 200 with the campaign (Campaign), now paused",
);
const CAMPAIGN_COHORT_UPLOAD: CheckDef = CheckDef::error(
    "endpoints.campaign_cohort_upload",
    "POST .../campaigns/{id}/cohorts/upload (multipart) answers 200 with the cohort (Cohort)",
);
const CAMPAIGN_COHORT_STREAM: CheckDef = CheckDef::error(
    "endpoints.campaign_cohort_stream",
    "POST .../campaigns/{id}/cohorts/stream answers 200 with the cohort (Cohort); of two users sent, one with an invalid number, its counts (in the answer and on GET, when shown) are 2, 1 valid, 1 rejected",
);
const CAMPAIGN_COHORT_LIST: CheckDef = CheckDef::error(
    "endpoints.campaign_cohort_list",
    "GET .../campaigns/{id}/cohorts answers 200 with a page of cohorts (Page_Cohort) listing the uploaded and the streamed one",
);
const CAMPAIGN_COHORT_GET: CheckDef = CheckDef::error(
    "endpoints.campaign_cohort_get",
    "GET .../campaigns/{id}/cohorts/{cohort_id} answers 200 with the cohort (Cohort), completed once processed",
);
const CAMPAIGN_COHORT_FILE: CheckDef = CheckDef::error(
    "endpoints.campaign_cohort_file",
    "GET .../campaigns/{id}/cohorts/{cohort_id}/files?file_type=rejected_records answers 200 with a CSV",
);
const DEPLOYMENT_CREATE: CheckDef = CheckDef::error(
    "endpoints.deployment_create",
    "POST .../deployments answers 200 with the deployment (Deployment)",
);
const DEPLOYMENT_LIST: CheckDef = CheckDef::error(
    "endpoints.deployment_list",
    "GET .../deployments answers 200 with a page of deployments (Page_DeploymentListItem) that lists the new deployment",
);
const DEPLOYMENT_GET: CheckDef = CheckDef::error(
    "endpoints.deployment_get",
    "GET .../deployments/{id} answers 200 with the deployment (Deployment)",
);
const DEPLOYMENT_PATCH: CheckDef = CheckDef::error(
    "endpoints.deployment_patch",
    "PATCH .../deployments/{id} of description and name answers 200 with the updated deployment (Deployment): both new values, in the answer and on the GET after it, every field it does not name as read before it",
);
const DEPLOYMENT_STATUS: CheckDef = CheckDef::error(
    "endpoints.deployment_status",
    "PUT .../deployments/{id}/status answers 200 with the deployment (Deployment), now paused",
);
const DEPLOYMENT_DELETE: CheckDef = CheckDef::error(
    "endpoints.deployment_delete",
    "DELETE .../deployments/{id} answers 2xx (204 with no body in this contract); GET then a 4xx",
);
const DEPLOYMENT_COHORT_UPLOAD: CheckDef = CheckDef::error(
    "endpoints.deployment_cohort_upload",
    "POST .../deployments/{id}/cohorts/upload (multipart) answers 200 with the cohort (Cohort)",
);
const DEPLOYMENT_COHORT_STREAM: CheckDef = CheckDef::error(
    "endpoints.deployment_cohort_stream",
    "POST .../deployments/{id}/cohorts/stream answers 200 with the cohort (Cohort); of two users sent, one with an invalid number, its counts (in the answer and on GET, when shown) are 2, 1 valid, 1 rejected",
);
const DEPLOYMENT_COHORT_LIST: CheckDef = CheckDef::error(
    "endpoints.deployment_cohort_list",
    "GET .../deployments/{id}/cohorts answers 200 with a page of cohorts (Page_Cohort) listing the uploaded and the streamed one",
);
const DEPLOYMENT_COHORT_GET: CheckDef = CheckDef::error(
    "endpoints.deployment_cohort_get",
    "GET .../deployments/{id}/cohorts/{cohort_id} answers 200 with the cohort (Cohort), completed once processed",
);
const DEPLOYMENT_COHORT_FILE: CheckDef = CheckDef::error(
    "endpoints.deployment_cohort_file",
    "GET .../deployments/{id}/cohorts/{cohort_id}/files?file_type=rejected_records answers 200 with a CSV",
);

/// The checks of this group.
pub(crate) const CHECKS: &[CheckDef] = &[
    OUTBOUND,
    CAMPAIGN_CREATE,
    CAMPAIGN_LIST,
    CAMPAIGN_GET,
    CAMPAIGN_PATCH,
    CAMPAIGN_STATUS,
    CAMPAIGN_COHORT_UPLOAD,
    CAMPAIGN_COHORT_STREAM,
    CAMPAIGN_COHORT_LIST,
    CAMPAIGN_COHORT_GET,
    CAMPAIGN_COHORT_FILE,
    DEPLOYMENT_CREATE,
    DEPLOYMENT_LIST,
    DEPLOYMENT_GET,
    DEPLOYMENT_PATCH,
    DEPLOYMENT_STATUS,
    DEPLOYMENT_DELETE,
    DEPLOYMENT_COHORT_UPLOAD,
    DEPLOYMENT_COHORT_STREAM,
    DEPLOYMENT_COHORT_LIST,
    DEPLOYMENT_COHORT_GET,
    DEPLOYMENT_COHORT_FILE,
];

const CAMPAIGN: Makes = Makes::new(Kind::Campaign, "endpoints", 1);
const DEPLOYMENT: Makes = Makes::new(Kind::Deployment, "endpoints", 1);
const CAMPAIGN_UPLOADED: Makes = Makes::new(Kind::Cohort, "endpoints-campaign-upload", 1);
const CAMPAIGN_STREAMED: Makes = Makes::new(Kind::Cohort, "endpoints-campaign-stream", 1);
const DEPLOYMENT_UPLOADED: Makes = Makes::new(Kind::Cohort, "endpoints-deployment-upload", 1);
const DEPLOYMENT_STREAMED: Makes = Makes::new(Kind::Cohort, "endpoints-deployment-stream", 1);
const CALL: Makes = Makes::new(Kind::OutboundCall, "endpoints", 1);

/// What each check creates.
pub(crate) const MAKES: &[(&CheckDef, &[Makes])] = &[
    (&OUTBOUND, &[CALL]),
    (&CAMPAIGN_CREATE, &[CAMPAIGN]),
    (&CAMPAIGN_LIST, &[CAMPAIGN]),
    (&CAMPAIGN_GET, &[CAMPAIGN]),
    (&CAMPAIGN_PATCH, &[CAMPAIGN]),
    (&CAMPAIGN_STATUS, &[CAMPAIGN]),
    (&CAMPAIGN_COHORT_UPLOAD, &[CAMPAIGN, CAMPAIGN_UPLOADED]),
    (&CAMPAIGN_COHORT_STREAM, &[CAMPAIGN, CAMPAIGN_STREAMED]),
    (
        &CAMPAIGN_COHORT_LIST,
        &[CAMPAIGN, CAMPAIGN_UPLOADED, CAMPAIGN_STREAMED],
    ),
    (&CAMPAIGN_COHORT_GET, &[CAMPAIGN, CAMPAIGN_UPLOADED]),
    (&CAMPAIGN_COHORT_FILE, &[CAMPAIGN, CAMPAIGN_UPLOADED]),
    (&DEPLOYMENT_CREATE, &[DEPLOYMENT]),
    (&DEPLOYMENT_LIST, &[DEPLOYMENT]),
    (&DEPLOYMENT_GET, &[DEPLOYMENT]),
    (&DEPLOYMENT_PATCH, &[DEPLOYMENT]),
    (&DEPLOYMENT_STATUS, &[DEPLOYMENT]),
    (&DEPLOYMENT_DELETE, &[DEPLOYMENT]),
    (
        &DEPLOYMENT_COHORT_UPLOAD,
        &[DEPLOYMENT, DEPLOYMENT_UPLOADED],
    ),
    (
        &DEPLOYMENT_COHORT_STREAM,
        &[DEPLOYMENT, DEPLOYMENT_STREAMED],
    ),
    (
        &DEPLOYMENT_COHORT_LIST,
        &[DEPLOYMENT, DEPLOYMENT_UPLOADED, DEPLOYMENT_STREAMED],
    ),
    (&DEPLOYMENT_COHORT_GET, &[DEPLOYMENT, DEPLOYMENT_UPLOADED]),
    (&DEPLOYMENT_COHORT_FILE, &[DEPLOYMENT, DEPLOYMENT_UPLOADED]),
];

/// Runs the group.
pub(crate) async fn run(cx: &Ctx, v: &mut Verdicts) {
    let agent = &cx.settings.agent;
    let x = cx
        .send(
            Method::POST,
            &cx.paths.outbounds(),
            fixtures::outbound(agent, &cx.names.number(), &cx.settings.user_phone_number),
        )
        .await;
    schema_check(cx, v, &OUTBOUND, &x, "OutboundResponse");

    campaign(cx, v).await;
    deployment(cx, v).await;
}

/// Judges `def` on a success answer conforming to `schema`, and records what the schema
/// says of the body less one field (so that a schema that accepts anything is seen).
fn schema_check(cx: &Ctx, v: &mut Verdicts, def: &CheckDef, x: &Exchange, schema: &str) {
    schema_check_and(cx, v, def, x, schema, true, "");
}

/// [`schema_check`], also requiring `more` (described by `also`).
fn schema_check_and(
    cx: &Ctx,
    v: &mut Verdicts,
    def: &CheckDef,
    x: &Exchange,
    schema: &str,
    more: bool,
    also: &str,
) {
    let (ok, e) = cx.conforms(x, schema);
    if x.is_success() {
        v.varied(def, "schema", cx.schemas.discriminates(schema, x.body()));
    }
    v.judge(
        def,
        ok && more,
        e,
        format!("200 with a body matching the schema {schema}{also}"),
    );
}

/// A PATCH answer `x` against the schema, `more` and what it must leave alone: every field of
/// `before` (the resource read before it) that `patch` does not name; `after`, the read after
/// it, shown beside.
#[allow(clippy::too_many_arguments)]
fn patch_check(
    cx: &Ctx,
    v: &mut Verdicts,
    def: &CheckDef,
    (before, x, after): (&Exchange, &Exchange, &Exchange),
    patch: &serde_json::Value,
    schema: &str,
    more: bool,
    also: &str,
) {
    let (ok, e) = cx.conforms(x, schema);
    let mut e = e.with("read_after", after.evidence().0);
    if x.is_success() {
        v.varied(def, "schema", cx.schemas.discriminates(schema, x.body()));
    }
    let unnamed = unnamed_changes(before.body(), x.body(), patch);
    if !unnamed.fields.is_empty() {
        e = e
            .with("changed_without_being_named", unnamed.fields.clone())
            .with("read_before", before.response());
    }
    v.judge(
        def,
        ok && more && unnamed.fields.is_empty(),
        e,
        format!(
            "200 with a body matching the schema {schema}{also}, and every field the PATCH does not name (but updated_at, updated_by) as read before it"
        ),
    );
}

/// Whether a page lists an item whose `field` is `id`.
fn lists(x: &Exchange, field: &str, id: &str) -> bool {
    x.body()["items"]
        .as_array()
        .is_some_and(|items| items.iter().any(|i| i[field].as_str() == Some(id)))
}

async fn campaign(cx: &Ctx, v: &mut Verdicts) {
    let now = match cx.now().await {
        Ok(n) => n,
        Err(x) => return v.blocked("reading the target's time", x.evidence()),
    };
    let start = now.at + secs(3600);
    let end = start + secs(86_400);
    let mut body = fixtures::campaign(
        &cx.settings.agent,
        &cx.names.name(CAMPAIGN.label),
        &cx.names.number(),
        start,
        end,
    );
    // The instants as a client elsewhere writes them: with its own offsets (ISO 8601). The
    // campaign must start and end at those instants, whatever offset it answers in.
    let sent = [
        fixtures::ts_at_offset(start, 5 * 3600 + 30 * 60),
        fixtures::ts_at_offset(end, -3 * 3600),
    ];
    body["start_timestamp"] = json!(sent[0]);
    body["end_timestamp"] = json!(sent[1]);
    // A calling window in a zone of its own (neither UTC nor either offset sent): an instant
    // is no wall-clock time of the schedule's zone.
    body["allowed_schedule"]["timezone"] = json!("Asia/Kathmandu");
    // The instants sent (to the millisecond, as written).
    let [start, end] = sent.each_ref().map(|s| {
        chrono::DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&chrono::Utc))
            .unwrap_or(start)
    });
    let described = body["description"].clone();
    let x = cx.create_campaign(body).await;
    schema_check(cx, v, &CAMPAIGN_CREATE, &x, "CampaignSummary");
    let Some(id) = x.str_field("campaign_id").map(str::to_string) else {
        return v.blocked_only(
            &[
                &CAMPAIGN_LIST,
                &CAMPAIGN_GET,
                &CAMPAIGN_PATCH,
                &CAMPAIGN_STATUS,
                &CAMPAIGN_COHORT_UPLOAD,
                &CAMPAIGN_COHORT_STREAM,
                &CAMPAIGN_COHORT_LIST,
                &CAMPAIGN_COHORT_GET,
                &CAMPAIGN_COHORT_FILE,
            ],
            "creating a campaign",
            x.evidence(),
        );
    };
    let x = cx
        .get(&cx.paths.campaigns(), &[("limit", "100".into())])
        .await;
    let listed = lists(&x, "campaign_id", &id);
    schema_check_and(
        cx,
        v,
        &CAMPAIGN_LIST,
        &x,
        "Page_CampaignSummary",
        listed,
        &format!(", listing {id}"),
    );
    let got = cx.get(&cx.paths.campaign(&id), &[]).await;
    let instants = |body: &serde_json::Value| {
        ["start_timestamp", "end_timestamp"].map(|f| {
            body[f]
                .as_str()
                .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
                .map(|t| t.with_timezone(&chrono::Utc))
        })
    };
    v.varied(&CAMPAIGN_GET, "offset sent", ["+05:30", "-03:00"]);
    schema_check_and(
        cx,
        v,
        &CAMPAIGN_GET,
        &got,
        "Campaign",
        instants(got.body()) == [Some(start), Some(end)],
        &format!(
            ", start_timestamp {} and end_timestamp {} as sent (with offsets +05:30 and -03:00, the schedule in Asia/Kathmandu), as instants",
            fixtures::ts(start),
            fixtures::ts(end)
        ),
    );
    let patched_text = "Patched by harness check platform.";
    let renamed = cx.names.name("endpoints-renamed");
    let patch = json!({"description": patched_text, "name": renamed});
    let x = cx
        .send(Method::PATCH, &cx.paths.campaign(&id), patch.clone())
        .await;
    // Stored, not only answered: the read after it shows both.
    let read = cx.get(&cx.paths.campaign(&id), &[]).await;
    v.varied(
        &CAMPAIGN_PATCH,
        "description",
        [described, x.body()["description"].clone()],
    );
    let applied = |x: &Exchange| {
        x.body()["description"] == json!(patched_text) && x.body()["name"] == json!(renamed)
    };
    patch_check(
        cx,
        v,
        &CAMPAIGN_PATCH,
        (&got, &x, &read),
        &patch,
        "Campaign",
        applied(&x) && applied(&read),
        &format!(
            ", \"description\": \"{patched_text}\" and \"name\": \"{renamed}\", in the answer and on the GET after it"
        ),
    );
    cohorts(cx, v, Parent::Campaign(&id), CAMPAIGN_COHORTS).await;
    let x = cx
        .send(
            Method::PUT,
            &cx.paths.campaign_status(&id),
            json!({"action": "pause"}),
        )
        .await;
    v.varied(
        &CAMPAIGN_STATUS,
        "status",
        [got.body()["status"].clone(), x.body()["status"].clone()],
    );
    schema_check_and(
        cx,
        v,
        &CAMPAIGN_STATUS,
        &x,
        "Campaign",
        x.str_field("status") == Some("paused"),
        ", \"status\": \"paused\"",
    );
}

/// The five cohort checks of one kind of parent (upload, stream, list, get, file) and what
/// its upload and stream create.
struct CohortDefs {
    uploaded: &'static Makes,
    streamed: &'static Makes,
    upload: &'static CheckDef,
    stream: &'static CheckDef,
    list: &'static CheckDef,
    get: &'static CheckDef,
    file: &'static CheckDef,
}

const CAMPAIGN_COHORTS: CohortDefs = CohortDefs {
    uploaded: &CAMPAIGN_UPLOADED,
    streamed: &CAMPAIGN_STREAMED,
    upload: &CAMPAIGN_COHORT_UPLOAD,
    stream: &CAMPAIGN_COHORT_STREAM,
    list: &CAMPAIGN_COHORT_LIST,
    get: &CAMPAIGN_COHORT_GET,
    file: &CAMPAIGN_COHORT_FILE,
};

const DEPLOYMENT_COHORTS: CohortDefs = CohortDefs {
    uploaded: &DEPLOYMENT_UPLOADED,
    streamed: &DEPLOYMENT_STREAMED,
    upload: &DEPLOYMENT_COHORT_UPLOAD,
    stream: &DEPLOYMENT_COHORT_STREAM,
    list: &DEPLOYMENT_COHORT_LIST,
    get: &DEPLOYMENT_COHORT_GET,
    file: &DEPLOYMENT_COHORT_FILE,
};

async fn cohorts(cx: &Ctx, v: &mut Verdicts, parent: Parent<'_>, defs: CohortDefs) {
    let up = cx
        .call(
            Method::POST,
            &cx.paths.cohorts(parent, &["upload"]),
            &[],
            Body::Multipart(fixtures::cohort_upload(
                &cx.names.name(defs.uploaded.label),
                "phone",
            )),
        )
        .await;
    schema_check(cx, v, defs.upload, &up, "Cohort");
    let uploaded = up.str_field("cohort_id").map(str::to_string);
    // One user the platform takes and one whose number it rejects (that user only).
    let users = [
        (magic_number(2, 1), "s1".to_string()),
        ("12345".to_string(), "s2".to_string()),
    ];
    let streamed = cx
        .send(
            Method::POST,
            &cx.paths.cohorts(parent, &["stream"]),
            cohort_stream(&cx.names.name(defs.streamed.label), &users),
        )
        .await;
    // The counts, wherever the answer shows them, are the users sent: 2 in all, 1 valid,
    // 1 rejected (valid + rejected = total).
    let counts = |x: &Exchange| {
        let r = &x.body()["result"];
        !r.is_object()
            || (r["total_records"] == json!(2)
                && r["valid_records"] == json!(1)
                && r["rejected_records"] == json!(1))
    };
    let streamed_read = match streamed.str_field("cohort_id") {
        Some(id) => Some(wait_for_cohort(cx, parent, id).await),
        None => None,
    };
    v.varied(
        defs.stream,
        "users sent",
        users
            .iter()
            .map(|(phone, _)| phone.clone())
            .collect::<Vec<_>>(),
    );
    schema_check_and(
        cx,
        v,
        defs.stream,
        &streamed,
        "Cohort",
        counts(&streamed) && streamed_read.as_ref().is_none_or(counts),
        ", and wherever it or the cohort read after it shows result: total_records 2, valid_records 1, rejected_records 1 (two users sent, one number invalid)",
    );
    let x = cx
        .get(&cx.paths.cohorts(parent, &[]), &[("limit", "100".into())])
        .await;
    let ids: Vec<&str> = [&up, &streamed]
        .iter()
        .filter_map(|c| c.str_field("cohort_id"))
        .collect();
    v.varied(defs.list, "cohort_id", ids.clone());
    schema_check_and(
        cx,
        v,
        defs.list,
        &x,
        "Page_Cohort",
        ids.len() == 2 && ids.iter().all(|id| lists(&x, "cohort_id", id)),
        ", listing the uploaded and the streamed cohort",
    );
    let Some(cohort_id) = uploaded else {
        return v.blocked_only(&[defs.get, defs.file], "uploading a cohort", up.evidence());
    };
    let done = wait_for_cohort(cx, parent, &cohort_id).await;
    v.varied(
        defs.get,
        "status",
        [up.body()["status"].clone(), done.body()["status"].clone()],
    );
    schema_check_and(
        cx,
        v,
        defs.get,
        &done,
        "Cohort",
        done.str_field("status") == Some("completed"),
        ", \"status\": \"completed\" once processed",
    );
    let x = cx
        .get(
            &cx.paths.cohorts(parent, &[&cohort_id, "files"]),
            &[("file_type", "rejected_records".into())],
        )
        .await;
    let lines: Vec<&str> = x.text.lines().take(2).collect();
    v.varied(defs.file, "lines", lines.clone());
    let csv = x.status == 200 && lines.first().is_some_and(|h| h.contains(','));
    v.judge(
        defs.file,
        csv,
        x.evidence(),
        "200 with the rejected records as CSV (a header row and the rejected rows)",
    );
}

async fn deployment(cx: &Ctx, v: &mut Verdicts) {
    let numbers = [cx.names.number()];
    let body = fixtures::deployment(
        &cx.settings.agent,
        &cx.names.name(DEPLOYMENT.label),
        &numbers,
    );
    let described = body["description"].clone();
    let x = cx.create_deployment(body).await;
    schema_check(cx, v, &DEPLOYMENT_CREATE, &x, "Deployment");
    let Some(id) = x.str_field("deployment_id").map(str::to_string) else {
        return v.blocked_only(
            &[
                &DEPLOYMENT_LIST,
                &DEPLOYMENT_GET,
                &DEPLOYMENT_PATCH,
                &DEPLOYMENT_STATUS,
                &DEPLOYMENT_DELETE,
                &DEPLOYMENT_COHORT_UPLOAD,
                &DEPLOYMENT_COHORT_STREAM,
                &DEPLOYMENT_COHORT_LIST,
                &DEPLOYMENT_COHORT_GET,
                &DEPLOYMENT_COHORT_FILE,
            ],
            "creating a deployment",
            x.evidence(),
        );
    };
    let x = cx
        .get(&cx.paths.deployments(), &[("limit", "100".into())])
        .await;
    let listed = lists(&x, "deployment_id", &id);
    schema_check_and(
        cx,
        v,
        &DEPLOYMENT_LIST,
        &x,
        "Page_DeploymentListItem",
        listed,
        &format!(", listing {id}"),
    );
    let got = cx.get(&cx.paths.deployment(&id), &[]).await;
    schema_check(cx, v, &DEPLOYMENT_GET, &got, "Deployment");
    let patched_text = "Patched by harness check platform.";
    let renamed = cx.names.name("endpoints-renamed");
    let patch = json!({"description": patched_text, "name": renamed});
    let x = cx
        .send(Method::PATCH, &cx.paths.deployment(&id), patch.clone())
        .await;
    // Stored, not only answered: the read after it shows both.
    let read = cx.get(&cx.paths.deployment(&id), &[]).await;
    v.varied(
        &DEPLOYMENT_PATCH,
        "description",
        [described, x.body()["description"].clone()],
    );
    let applied = |x: &Exchange| {
        x.body()["description"] == json!(patched_text) && x.body()["name"] == json!(renamed)
    };
    patch_check(
        cx,
        v,
        &DEPLOYMENT_PATCH,
        (&got, &x, &read),
        &patch,
        "Deployment",
        applied(&x) && applied(&read),
        &format!(
            ", \"description\": \"{patched_text}\" and \"name\": \"{renamed}\", in the answer and on the GET after it"
        ),
    );
    cohorts(cx, v, Parent::Deployment(&id), DEPLOYMENT_COHORTS).await;
    let x = cx
        .send(
            Method::PUT,
            &cx.paths.deployment_status(&id),
            json!({"action": "pause"}),
        )
        .await;
    v.varied(
        &DEPLOYMENT_STATUS,
        "status",
        [got.body()["status"].clone(), x.body()["status"].clone()],
    );
    schema_check_and(
        cx,
        v,
        &DEPLOYMENT_STATUS,
        &x,
        "Deployment",
        x.str_field("status") == Some("paused"),
        ", \"status\": \"paused\"",
    );
    let x = cx.delete_deployment(&id).await;
    let after = cx.get(&cx.paths.deployment(&id), &[]).await;
    v.varied(&DEPLOYMENT_DELETE, "GET status", [got.status, after.status]);
    v.judge(
        &DEPLOYMENT_DELETE,
        x.is_success() && (400..500).contains(&after.status),
        Exchange::all(&[&x, &after]),
        "a 2xx answer (204 with no body in this contract), then a 4xx for GET of the deployment",
    );
}
