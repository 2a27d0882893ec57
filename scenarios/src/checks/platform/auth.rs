//! `auth`: every route of the contract without a key, with a wrong key and with another
//! workspace's key is refused: a 4xx, never a 2xx and never a 5xx. The routes are called with
//! real ids and valid bodies, so that a target that does not check the key would answer 2xx.
//!
//! With `--other-api-key` and `--other-workspace`, also: the other workspace cannot see this
//! workspace's resources through its own paths.

use reqwest::Method;
use serde_json::{Value, json};

use super::auth_isolation as isolation;
use super::context::{Ctx, is_error_shape};
use super::exchange::Body;
use super::exchange::Exchange;
use super::fixtures::{self, Created, Kind, Makes, Side, cohort_stream, magic_number, secs};
use super::target::{Key, Parent, Paths};
use super::verdicts::Verdicts;
use crate::checks::{CheckDef, Evidence};

const NO_KEY: CheckDef = CheckDef::error(
    "auth.no_key",
    "every route without X-API-Key is refused (4xx, never 2xx or 5xx)",
);
const WRONG_KEY: CheckDef = CheckDef::error(
    "auth.wrong_key",
    "every route with a wrong X-API-Key is refused (4xx, never 2xx or 5xx)",
);
const OTHER_KEY: CheckDef = CheckDef::error(
    "auth.other_workspace_key",
    "every route with another workspace's key is refused (4xx, never 2xx or 5xx)",
);
const OTHER_PATHS: CheckDef = CheckDef::error(
    "auth.other_workspace_ids",
    "another workspace's key on its own paths cannot reach this workspace's ids (4xx, 404 in this contract)",
);
const STATUS_401: CheckDef = CheckDef::warning(
    "auth.refusals_are_401",
    "a missing or wrong key is a 401 in the error shape {error: {message, type, code}} (assumed)",
);

/// The checks of this group.
pub const CHECKS: &[CheckDef] = &[
    NO_KEY,
    WRONG_KEY,
    OTHER_KEY,
    OTHER_PATHS,
    STATUS_401,
    isolation::LIST_ISOLATION,
];

const CAMPAIGN: Makes = Makes::new(Kind::Campaign, "auth", 1);
const DEPLOYMENT: Makes = Makes::new(Kind::Deployment, "auth", 1);
const COHORTS: Makes = Makes::new(Kind::Cohort, "auth", 2);
const FIXTURE: [Makes; 3] = [CAMPAIGN, DEPLOYMENT, COHORTS];
const DELETED_NO_KEY: Makes = Makes::new(Kind::Deployment, "auth-delete-no-key", 1);
const DELETED_WRONG_KEY: Makes = Makes::new(Kind::Deployment, "auth-delete-wrong-key", 1);
const DELETED_OTHER_KEY: Makes = Makes::new(Kind::Deployment, "auth-delete-other-key", 1);
const VICTIM: Makes = Makes::new(Kind::Deployment, "auth-delete-other", 1);

/// What each check creates: a campaign and a deployment with a cohort each, whose routes
/// are called (with bodies that would create more on a target that does not check the
/// key), and a deployment for each DELETE.
pub(crate) const MAKES: &[(&CheckDef, &[Makes])] = &[
    (&NO_KEY, &[CAMPAIGN, DEPLOYMENT, COHORTS, DELETED_NO_KEY]),
    (
        &WRONG_KEY,
        &[CAMPAIGN, DEPLOYMENT, COHORTS, DELETED_WRONG_KEY],
    ),
    (
        &OTHER_KEY,
        &[CAMPAIGN, DEPLOYMENT, COHORTS, DELETED_OTHER_KEY],
    ),
    (&OTHER_PATHS, &[CAMPAIGN, DEPLOYMENT, COHORTS, VICTIM]),
    (&STATUS_401, &FIXTURE),
    (&isolation::LIST_ISOLATION, &isolation::ISOLATED),
];

/// Why the checks that need another workspace are skipped without one.
pub const NEEDS_OTHER: &str = "needs another workspace: give --other-api-key and --other-workspace (a key that does not open --workspace)";

/// Whether `def` needs another workspace's key.
pub fn needs_other(def: &CheckDef) -> bool {
    [&OTHER_KEY, &OTHER_PATHS, &isolation::LIST_ISOLATION]
        .iter()
        .any(|d| d.id == def.id)
}

/// The resources the routes are called with.
struct Fixture {
    campaign: String,
    campaign_cohort: String,
    deployment: String,
    deployment_cohort: String,
}

/// One route of the contract, ready to call.
struct Route {
    method: Method,
    path: Vec<String>,
    query: Vec<(&'static str, String)>,
    body: Body,
}

/// Every route of the contract but DELETE, with the ids of `f` on `paths`.
fn routes(
    cx: &Ctx,
    paths: &Paths,
    f: &Fixture,
    start: chrono::DateTime<chrono::Utc>,
) -> Vec<Route> {
    let agent = &cx.settings.agent;
    let r = |method: Method, path: Vec<String>, body: Body| Route {
        method,
        path,
        query: Vec::new(),
        body,
    };
    let json = |v: Value| Body::Json(v);
    let campaign = fixtures::campaign(
        agent,
        &cx.names.name("auth-campaign"),
        &cx.names.number(),
        start,
        start + secs(86_400),
    );
    let deployment = fixtures::deployment(
        agent,
        &cx.names.name("auth-deployment"),
        &[cx.names.number()],
    );
    let users = [(magic_number(2, 7), "auth-user".to_string())];
    let mut v = vec![
        r(
            Method::POST,
            paths.outbounds(),
            json(fixtures::outbound(
                agent,
                &cx.names.number(),
                &cx.settings.user_phone_number,
            )),
        ),
        r(Method::POST, paths.campaigns(), json(campaign)),
        r(Method::GET, paths.campaigns(), Body::Empty),
        r(Method::GET, paths.campaign(&f.campaign), Body::Empty),
        r(
            Method::PATCH,
            paths.campaign(&f.campaign),
            json(json!({"description": "patched by harness check platform"})),
        ),
        r(
            Method::PUT,
            paths.campaign_status(&f.campaign),
            json(json!({"action": "pause"})),
        ),
        r(Method::POST, paths.deployments(), json(deployment)),
        r(Method::GET, paths.deployments(), Body::Empty),
        r(Method::GET, paths.deployment(&f.deployment), Body::Empty),
        r(
            Method::PATCH,
            paths.deployment(&f.deployment),
            json(json!({"app_version": agent.app_version})),
        ),
        r(
            Method::PUT,
            paths.deployment_status(&f.deployment),
            json(json!({"action": "pause"})),
        ),
    ];
    for (parent, cohort) in [
        (Parent::Campaign(&f.campaign), &f.campaign_cohort),
        (Parent::Deployment(&f.deployment), &f.deployment_cohort),
    ] {
        v.push(r(
            Method::POST,
            paths.cohorts(parent, &["upload"]),
            Body::Multipart(fixtures::cohort_upload(
                &cx.names.name("auth-cohort"),
                "phone",
            )),
        ));
        v.push(r(
            Method::POST,
            paths.cohorts(parent, &["stream"]),
            json(cohort_stream(&cx.names.name("auth-cohort"), &users)),
        ));
        v.push(r(Method::GET, paths.cohorts(parent, &[]), Body::Empty));
        v.push(r(
            Method::GET,
            paths.cohorts(parent, &[cohort]),
            Body::Empty,
        ));
        let mut file = r(
            Method::GET,
            paths.cohorts(parent, &[cohort, "files"]),
            Body::Empty,
        );
        file.query.push(("file_type", "rejected_records".into()));
        v.push(file);
    }
    v
}

/// Calls every route with `key`; records anything a broken target created.
async fn call_all(cx: &Ctx, routes: Vec<Route>, key: Key<'_>) -> Vec<Exchange> {
    let mut out = Vec::new();
    for r in routes {
        let x = cx.http.call(r.method, &r.path, &r.query, key, r.body).await;
        if x.is_success() {
            if let Some(id) = x.str_field("campaign_id") {
                cx.ledger.add(Created::Campaign(Side::Main, id.to_string()));
            }
            if let Some(id) = x.str_field("deployment_id") {
                cx.ledger
                    .add(Created::Deployment(Side::Main, id.to_string()));
            }
        }
        out.push(x);
    }
    out
}

/// Judges "every call refused": a 4xx each. Evidence: each call's status, and the full
/// exchange of every call that was not refused. `granted` are the statuses of the same
/// reads with the right key: what the refusals are told apart from.
fn judge_refused(
    v: &mut Verdicts,
    def: &CheckDef,
    granted: &[u16],
    calls: &[Exchange],
    expected: &str,
) {
    v.varied(
        def,
        "status",
        granted
            .iter()
            .copied()
            .chain(calls.iter().map(|x| x.status)),
    );
    let refused = |x: &Exchange| (400..500).contains(&x.status);
    let statuses: Vec<String> = calls
        .iter()
        .map(|x| format!("{} -> {}", x.request, x.outcome()))
        .collect();
    let wrong: Vec<Value> = calls
        .iter()
        .filter(|x| !refused(x))
        .map(|x| Value::Object(x.evidence().0))
        .collect();
    let ok = wrong.is_empty();
    let mut e = Evidence::new().with("calls", statuses);
    if !ok {
        e = e.with("not_refused", wrong);
    }
    v.judge(def, ok, e, expected);
}

/// The statuses of the reads among `routes` with the workspace's own key: what a refusal is
/// told apart from (a read that fails with the right key too would make a refusal check
/// pass whatever the key).
async fn granted(cx: &Ctx, routes: Vec<Route>) -> Vec<u16> {
    let reads: Vec<Route> = routes
        .into_iter()
        .filter(|r| r.method == Method::GET)
        .collect();
    call_all(cx, reads, Key::Value(&cx.main.key))
        .await
        .iter()
        .map(|x| x.status)
        .collect()
}

/// Runs the group.
pub(crate) async fn run(cx: &Ctx, v: &mut Verdicts) {
    let fixture = match fixture(cx).await {
        Ok(f) => f,
        Err(x) => {
            return v.blocked(
                "creating a campaign and a deployment with cohorts",
                x.evidence(),
            );
        }
    };
    let start = match cx.now().await {
        Ok(n) => n.at + secs(3600),
        Err(x) => return v.blocked("reading the target's time", x.evidence()),
    };
    let reads = granted(cx, routes(cx, &cx.paths, &fixture, start)).await;
    let wrong = format!("harness-check-wrong-key-{}", cx.names.run());
    let mut all_refusals = Vec::new();
    let conditions: [(&CheckDef, Key<'_>, &Makes, &str); 2] = [
        (
            &NO_KEY,
            Key::Missing,
            &DELETED_NO_KEY,
            "a 4xx for every route without X-API-Key",
        ),
        (
            &WRONG_KEY,
            Key::Value(&wrong),
            &DELETED_WRONG_KEY,
            "a 4xx for every route with a wrong X-API-Key",
        ),
    ];
    for (def, key, deleted, expected) in conditions {
        let mut calls = call_all(cx, routes(cx, &cx.paths, &fixture, start), key).await;
        calls.push(delete_one(cx, key, deleted.label).await);
        judge_refused(v, def, &reads, &calls, expected);
        all_refusals.extend(calls);
    }
    let ok = all_refusals
        .iter()
        .all(|x| x.status == 401 && is_error_shape(x.body()));
    let odd: Vec<Value> = all_refusals
        .iter()
        .filter(|x| !(x.status == 401 && is_error_shape(x.body())))
        .map(|x| Value::Object(x.evidence().0))
        .collect();
    v.varied(
        &STATUS_401,
        "status",
        reads
            .iter()
            .copied()
            .chain(all_refusals.iter().map(|x| x.status)),
    );
    v.judge(
        &STATUS_401,
        ok,
        Evidence::new()
            .with("calls", all_refusals.len())
            .with("other_answers", odd),
        "401 with {\"error\": {\"message\", \"type\", \"code\"}} for every call without a key or with a wrong one",
    );

    let Some(other) = &cx.other else {
        return v.skip_rest(NEEDS_OTHER);
    };
    let key = Key::Value(&other.ws.key);
    let mut calls = call_all(cx, routes(cx, &cx.paths, &fixture, start), key).await;
    calls.push(delete_one(cx, key, DELETED_OTHER_KEY.label).await);
    judge_refused(
        v,
        &OTHER_KEY,
        &reads,
        &calls,
        "a 4xx for every route of this workspace with the other workspace's key",
    );

    let own = granted(cx, id_routes(&cx.paths, &fixture)).await;
    let mut calls = call_all(cx, id_routes(&other.paths, &fixture), key).await;
    let victim = cx
        .create_plain_deployment(&cx.names.name(VICTIM.label))
        .await;
    if let Some(id) = victim.str_field("deployment_id") {
        calls.push(
            cx.http
                .call(
                    Method::DELETE,
                    &other.paths.deployment(id),
                    &[],
                    key,
                    Body::Empty,
                )
                .await,
        );
    }
    judge_refused(
        v,
        &OTHER_PATHS,
        &own,
        &calls,
        "a 4xx (404 in this contract) for every id of this workspace asked through the other workspace's paths",
    );
    isolation::run(cx, v, start).await;
}

/// The routes that take an id, with this workspace's ids on `paths` (another workspace's).
fn id_routes(paths: &Paths, f: &Fixture) -> Vec<Route> {
    let ids = [
        paths.campaign(&f.campaign),
        paths.deployment(&f.deployment),
        paths.cohorts(Parent::Campaign(&f.campaign), &[]),
        paths.cohorts(Parent::Campaign(&f.campaign), &[&f.campaign_cohort]),
        paths.cohorts(Parent::Deployment(&f.deployment), &[]),
        paths.cohorts(Parent::Deployment(&f.deployment), &[&f.deployment_cohort]),
    ];
    let mut v: Vec<Route> = ids
        .into_iter()
        .map(|path| Route {
            method: Method::GET,
            path,
            query: Vec::new(),
            body: Body::Empty,
        })
        .collect();
    v.push(Route {
        method: Method::PUT,
        path: paths.deployment_status(&f.deployment),
        query: Vec::new(),
        body: Body::Json(json!({"action": "pause"})),
    });
    v.push(Route {
        method: Method::PATCH,
        path: paths.campaign(&f.campaign),
        query: Vec::new(),
        body: Body::Json(json!({"description": "patched through another workspace"})),
    });
    v
}

/// A DELETE with `key` of a deployment made for it (a target that does not check the key
/// deletes it).
async fn delete_one(cx: &Ctx, key: Key<'_>, label: &str) -> Exchange {
    let x = cx.create_plain_deployment(&cx.names.name(label)).await;
    let Some(id) = x.str_field("deployment_id") else {
        return x;
    };
    cx.http
        .call(
            Method::DELETE,
            &cx.paths.deployment(id),
            &[],
            key,
            Body::Empty,
        )
        .await
}

async fn fixture(cx: &Ctx) -> Result<Fixture, Exchange> {
    let x = cx
        .create_scheduled_campaign(&cx.names.name(CAMPAIGN.label))
        .await;
    let campaign = x.str_field("campaign_id").ok_or(x.clone())?.to_string();
    let x = cx
        .create_plain_deployment(&cx.names.name(DEPLOYMENT.label))
        .await;
    let deployment = x.str_field("deployment_id").ok_or(x.clone())?.to_string();
    let mut cohorts = Vec::new();
    for parent in [Parent::Campaign(&campaign), Parent::Deployment(&deployment)] {
        let x = super::cohorts_values::upload(cx, parent, COHORTS.label, "phone").await;
        let id = x.str_field("cohort_id").ok_or(x.clone())?.to_string();
        let done = super::cohorts_values::wait_for_cohort(cx, parent, &id).await;
        if done.str_field("status") != Some("completed") {
            return Err(done);
        }
        cohorts.push(id);
    }
    let deployment_cohort = cohorts.pop().unwrap_or_default();
    let campaign_cohort = cohorts.pop().unwrap_or_default();
    Ok(Fixture {
        campaign,
        campaign_cohort,
        deployment,
        deployment_cohort,
    })
}
