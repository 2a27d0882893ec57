//! Many test suites on one platform: each workspace's key sees, judges and clears only its
//! workspace's requests and fault rules; a workspace is reset in one call; and no answer to
//! one workspace's key, on any route, holds another's data.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::engine::{advance, advance_to, magic};
use crate::helpers::*;

const JOURNAL: &str = "/sim/v1/journal";
const FAULTS: &str = "/sim/v1/faults";

/// A workspace of the test platform and its key.
#[derive(Clone, Copy)]
struct Tenant {
    ws: &'static str,
    key: &'static str,
}

const ALICE: Tenant = Tenant { ws: WS, key: KEY };
const BOB: Tenant = Tenant { ws: WS2, key: KEY2 };

impl Tenant {
    fn deployments(self) -> String {
        format!(
            "/api/app-authoring/v1/orgs/{ORG}/workspaces/{}/deployments",
            self.ws
        )
    }

    fn campaigns(self) -> String {
        format!(
            "/api/scheduling/v1/orgs/{ORG}/workspaces/{}/campaigns",
            self.ws
        )
    }

    fn outbounds(self) -> String {
        format!(
            "/api/outbounds/v1/orgs/{ORG}/workspaces/{}/outbounds",
            self.ws
        )
    }

    fn sim(self, rest: &str) -> String {
        format!("/sim/v1/orgs/{ORG}/workspaces/{}/{rest}", self.ws)
    }

    async fn call(
        self,
        app: &TestApp,
        m: Method,
        path: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        app.call(m, path, Some(self.key), body).await
    }

    async fn get(self, app: &TestApp, path: &str) -> Value {
        let (s, v) = self.call(app, Method::GET, path, None).await;
        assert_eq!(s, StatusCode::OK, "GET {path}: {v}");
        v
    }

    async fn post(self, app: &TestApp, path: &str, body: Value) -> Value {
        let (s, v) = self.call(app, Method::POST, path, Some(&body)).await;
        assert_eq!(s, StatusCode::OK, "POST {path}: {v}");
        v
    }

    async fn summary(self, app: &TestApp) -> Value {
        self.get(app, &format!("{JOURNAL}/summary")).await
    }

    async fn entries(self, app: &TestApp) -> Vec<Value> {
        self.get(app, &format!("{JOURNAL}?limit=100")).await["items"]
            .as_array()
            .unwrap()
            .clone()
    }
}

async fn operator(app: &TestApp, m: Method, path: &str) -> (StatusCode, Value) {
    app.call(m, path, Some(OPS_KEY), None).await
}

fn owner(e: &Value) -> String {
    format!(
        "{}/{}",
        e["owner"]["org_id"].as_str().unwrap_or("-"),
        e["owner"]["workspace_id"].as_str().unwrap_or("-")
    )
}

#[tokio::test]
async fn each_workspace_lists_judges_and_clears_only_its_own_requests() {
    let app = spawn_app().await;
    ALICE
        .post(
            &app,
            &ALICE.deployments(),
            deployment_body("Alice desk", "+14155550110"),
        )
        .await;
    let (s, _) = ALICE
        .call(
            &app,
            Method::GET,
            &format!("{}?limit=500", ALICE.deployments()),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    BOB.post(
        &app,
        &BOB.deployments(),
        deployment_body("Bob desk", "+14155550120"),
    )
    .await;
    // Without a key, and with a wrong key: the workspace the path names.
    let (s, _) = app
        .call(Method::GET, &ALICE.deployments(), None, None)
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = app
        .call(Method::GET, &BOB.deployments(), Some("not-a-key"), None)
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    // With a valid key: the key's workspace, whatever the path.
    let (s, _) = ALICE
        .call(&app, Method::GET, &BOB.deployments(), None)
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let wrong_base = format!("/apis/app-authoring/v1/orgs/{ORG}/workspaces/{WS}/deployments");
    let (s, _) = ALICE.call(&app, Method::GET, &wrong_base, None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    // Neither: only an operator sees it.
    let (s, _) = app.call(Method::GET, "/nothing-here", None, None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    let alice = ALICE.entries(&app).await;
    let paths: Vec<&str> = alice.iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        [
            ALICE.deployments().as_str(),
            ALICE.deployments().as_str(),
            ALICE.deployments().as_str(),
            BOB.deployments().as_str(),
            wrong_base.as_str(),
        ],
        "alice's create and 422, the keyless request to her path, her request to bob's path, her wrong base path"
    );
    assert!(
        alice.iter().all(|e| owner(e) == format!("{ORG}/{WS}")),
        "{alice:?}"
    );
    assert_eq!(alice[2]["api_key"], "missing");
    assert_eq!(alice[3]["api_key"], "invalid");
    assert_eq!(alice[4]["violations"][0]["kind"], "unknown_route");
    let bob = BOB.entries(&app).await;
    assert_eq!(
        bob.len(),
        2,
        "bob's create and the wrong key aimed at him: {bob:?}"
    );
    assert!(
        bob.iter().all(|e| owner(e) == format!("{ORG}/{WS2}")),
        "{bob:?}"
    );
    let (_, all) = operator(&app, Method::GET, &format!("{JOURNAL}?limit=100")).await;
    assert_eq!(all["total"], 8, "{all}");
    assert!(all["items"][7]["owner"].is_null(), "{all}");

    let a = ALICE.summary(&app).await;
    assert_eq!(
        (&a["requests"], &a["violating"]),
        (&json!(5), &json!(4)),
        "{a}"
    );
    assert_eq!(a["unknown_routes"]["requests"], 1);
    let b = BOB.summary(&app).await;
    assert_eq!(
        (&b["requests"], &b["violating"]),
        (&json!(2), &json!(1)),
        "{b}"
    );
    assert_eq!(b["unknown_routes"]["requests"], 0);
    let (_, o) = operator(&app, Method::GET, &format!("{JOURNAL}/summary")).await;
    assert_eq!(o["requests"], 8);
    assert_eq!(o["unknown_routes"]["requests"], 2);

    // Alice clears hers; bob's and the unowned stay, and numbers go on.
    let (s, _) = ALICE.call(&app, Method::DELETE, JOURNAL, None).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    assert_eq!(ALICE.summary(&app).await["requests"], 0);
    assert!(ALICE.entries(&app).await.is_empty());
    assert_eq!(BOB.summary(&app).await["requests"], 2);
    let (_, o) = operator(&app, Method::GET, &format!("{JOURNAL}/summary")).await;
    assert_eq!(o["requests"], 3);
    ALICE.get(&app, &ALICE.deployments()).await;
    assert_eq!(ALICE.entries(&app).await[0]["seq"], 9, "numbers go on");
    // An operator clears everything.
    let (s, _) = operator(&app, Method::DELETE, JOURNAL).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    assert_eq!(BOB.summary(&app).await["requests"], 0);
}

#[tokio::test]
async fn a_persisted_journal_keeps_each_workspaces_entries_and_clears_them_apart() {
    let app = spawn_with(|mut c| {
        c.journal.persist = true;
        c
    })
    .await;
    ALICE.get(&app, &ALICE.deployments()).await;
    BOB.get(&app, &BOB.deployments()).await;
    BOB.get(&app, &BOB.deployments()).await;
    let (s, _) = ALICE.call(&app, Method::DELETE, JOURNAL, None).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    app.app.journal.flush();
    let app = app.restart().await;
    assert_eq!(
        ALICE.summary(&app).await["requests"],
        0,
        "gone from the database too"
    );
    assert_eq!(
        BOB.summary(&app).await["requests"],
        2,
        "kept, with its owner"
    );
    assert_eq!(owner(&BOB.entries(&app).await[0]), format!("{ORG}/{WS2}"));
}

#[tokio::test]
async fn a_workspaces_fault_rules_touch_only_its_requests() {
    let app = spawn_app().await;
    let rule = ALICE
        .post(
            &app,
            FAULTS,
            json!({"kind": "status", "status": 503, "method": "GET"}),
        )
        .await;
    assert_eq!(
        rule["applies_to"],
        json!([{"org_id": ORG, "workspace_id": WS}]),
        "{rule}"
    );
    let (s, _) = ALICE
        .call(&app, Method::GET, &ALICE.deployments(), None)
        .await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE);
    let (s, _) = BOB.call(&app, Method::GET, &BOB.deployments(), None).await;
    assert_eq!(s, StatusCode::OK, "bob's requests are not alice's to fault");
    let (s, _) = ALICE
        .call(&app, Method::GET, &BOB.deployments(), None)
        .await;
    assert_eq!(
        s,
        StatusCode::SERVICE_UNAVAILABLE,
        "alice's request to bob's path is alice's"
    );
    // Only alice (or an operator) sees and deletes it.
    assert_eq!(BOB.get(&app, FAULTS).await["total"], 0);
    assert_eq!(ALICE.get(&app, FAULTS).await["total"], 1);
    let (s, v) = BOB
        .call(&app, Method::DELETE, &format!("{FAULTS}/flt-1"), None)
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    let (s, _) = BOB.call(&app, Method::DELETE, FAULTS, None).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    assert_eq!(
        ALICE.get(&app, FAULTS).await["total"],
        1,
        "bob's clear left it"
    );
    // A rule for another workspace is refused: it could never fire.
    let (s, v) = ALICE
        .call(
            &app,
            Method::POST,
            FAULTS,
            Some(&json!({"kind": "drop", "workspace_id": WS2})),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["detail"][0]["loc"], json!(["body", "workspace_id"]));
    let (s, v) = ALICE
        .call(
            &app,
            Method::POST,
            FAULTS,
            Some(&json!({"kind": "drop", "org_id": "org-9"})),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["detail"][0]["loc"], json!(["body", "org_id"]));
    // An operator sees every rule and clears them all.
    let (_, all) = operator(&app, Method::GET, FAULTS).await;
    assert_eq!(all["total"], 1);
    let (s, _) = operator(&app, Method::DELETE, FAULTS).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, _) = ALICE
        .call(&app, Method::GET, &ALICE.deployments(), None)
        .await;
    assert_eq!(s, StatusCode::OK);
}

/// What a workspace holds: its lists' totals, its journal, its rules.
async fn holdings(app: &TestApp, t: Tenant) -> Value {
    json!({
        "deployments": t.get(app, &t.deployments()).await["total"],
        "campaigns": t.get(app, &t.campaigns()).await["total"],
        "inbound_calls": t.get(app, &t.sim("inbound-calls")).await["total"],
        "webhook_deliveries": t.get(app, &t.sim("webhook-deliveries")).await["total"],
        "fault_rules": t.get(app, FAULTS).await["total"],
    })
}

/// A deployment, a campaign with a cohort, an instant outbound call whose webhook is
/// queued, an inbound call, a fault rule that hits nothing: one of everything a reset clears.
async fn fill(app: &TestApp, t: Tenant, n: u32) -> String {
    let dialled = format!("+1415555{:04}", 300 + n);
    t.post(app, &t.deployments(), deployment_body("Desk", &dialled))
        .await;
    let camp = t.post(app, &t.campaigns(), campaign_body()).await["campaign_id"]
        .as_str()
        .unwrap()
        .to_string();
    let cohort = t
        .post(
            app,
            &format!("{}/{camp}/cohorts/stream", t.campaigns()),
            json!({"name": "users", "users": [{"phone_number": magic(200 + n, 0), "user_identifier": "u1"}]}),
        )
        .await;
    assert_eq!(cohort["status"], "completed", "{cohort}");
    t.post(
        app,
        &t.outbounds(),
        json!({
            "app_config": {"app_id": "a", "app_version": 1,
                           "connection_config": {"connection_id": "c", "agent_phone_number": "+14155550100"}},
            "user_config": {"user_phone_number": magic(300 + n, 4)},
            "webhook_config": {"url": "http://127.0.0.1:9/hooks"}
        }),
    )
    .await;
    t.post(
        app,
        &t.sim("inbound-calls"),
        json!({"caller": magic(400 + n, 0), "dialled": dialled}),
    )
    .await;
    t.post(
        app,
        FAULTS,
        json!({"kind": "delay", "delay_ms": 1, "operation_id": "delete_deployment"}),
    )
    .await;
    camp
}

#[tokio::test]
async fn a_workspace_resets_in_one_call_and_the_others_stay() {
    let app = spawn_app().await;
    fill(&app, ALICE, 1).await;
    let bobs_campaign = fill(&app, BOB, 2).await;
    // The calls end and their webhooks are tried (the receiver is not there).
    advance(&app, 60.0).await;
    let before = holdings(&app, BOB).await;
    assert_eq!(
        holdings(&app, ALICE).await,
        before,
        "both hold one of each: {before}"
    );
    for (what, n) in before.as_object().unwrap() {
        assert_eq!(n, 1, "{what}: {before}");
    }
    let (_, clock) = app.get("/sim/v1/clock").await;

    // Another workspace's key may not reset alice; no key may.
    let (s, _) = BOB
        .call(&app, Method::POST, &ALICE.sim("reset"), None)
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = app
        .call(Method::POST, &ALICE.sim("reset"), None, None)
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);

    let alice_requests = ALICE.summary(&app).await["requests"].clone();
    let bob_requests = BOB.summary(&app).await["requests"].clone();
    let reset = ALICE.post(&app, &ALICE.sim("reset"), json!({})).await;
    assert_eq!(
        reset,
        json!({
            "workspace": {"org_id": ORG, "workspace_id": WS},
            "removed": {"campaigns": 1, "deployments": 1, "cohorts": 1, "calls": 1,
                        "inbound_calls": 1, "webhook_deliveries": 1,
                        "journal_entries": alice_requests, "fault_rules": 1}
        })
    );
    assert_eq!(
        ALICE.summary(&app).await["requests"],
        0,
        "the journal is empty"
    );
    assert_eq!(
        BOB.summary(&app).await["requests"],
        bob_requests,
        "bob's journal kept"
    );
    let after = holdings(&app, ALICE).await;
    for (what, n) in after.as_object().unwrap() {
        assert_eq!(n, 0, "{what}: {after}");
    }
    assert_eq!(holdings(&app, BOB).await, before, "bob's are untouched");
    assert_eq!(
        app.get("/sim/v1/clock").await.1,
        clock,
        "one clock, not moved"
    );

    // Alice starts again with the same number; bob's campaign runs on.
    fill(&app, ALICE, 1).await;
    advance_to_campaign_start(&app).await;
    let stats = BOB
        .get(&app, &format!("{}/{bobs_campaign}", BOB.campaigns()))
        .await["statistics"]
        .clone();
    assert_eq!(
        stats["attempts_total"], 1,
        "bob's user was dialled: {stats}"
    );
    // An operator may reset any workspace.
    let (s, v) = operator(&app, Method::POST, &BOB.sim("reset")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["removed"]["campaigns"], 1);
}

/// Moves the clock past the start of [`campaign_body`]'s campaigns (13:00Z) into their
/// calling window (09:00 to 17:00 New York: from 14:00Z).
async fn advance_to_campaign_start(app: &TestApp) {
    advance_to(app, "2026-03-02T14:00:30Z").await;
}

#[tokio::test]
async fn no_route_answers_anothers_key_or_no_key_with_a_workspaces_data() {
    let app = spawn_app().await;
    // Alice's data, each with something only she knows.
    let dep = ALICE
        .post(
            &app,
            &ALICE.deployments(),
            deployment_body("Secret desk", "+14155550177"),
        )
        .await["deployment_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut campaign = campaign_body();
    campaign["name"] = json!("Secret campaign");
    let camp = ALICE.post(&app, &ALICE.campaigns(), campaign).await["campaign_id"]
        .as_str()
        .unwrap()
        .to_string();
    let coh = ALICE
        .post(
            &app,
            &format!("{}/{camp}/cohorts/stream", ALICE.campaigns()),
            json!({"name": "Secret cohort", "users": [{"phone_number": "+14155550188", "user_identifier": "secret-user"}]}),
        )
        .await["cohort_id"]
        .as_str()
        .unwrap()
        .to_string();
    let fault = ALICE
        .post(
            &app,
            FAULTS,
            json!({"kind": "delay", "delay_ms": 1, "operation_id": "delete_deployment"}),
        )
        .await["fault_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (s, _) = ALICE
        .call(
            &app,
            Method::GET,
            &format!("{}?search=Secret", ALICE.deployments()),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let markers = [
        dep.as_str(),
        camp.as_str(),
        coh.as_str(),
        "Secret",
        "secret-user",
        "alice",
    ];
    let routes = crate::errors::documented_routes_with(&[
        ("{org_id}", ORG),
        ("{workspace_id}", WS),
        ("{campaign_id}", &camp),
        ("{deployment_id}", &dep),
        ("{cohort_id}", &coh),
        ("{fault_id}", &fault),
    ]);
    assert!(routes.len() >= 40, "{}", routes.len());
    let alice_before = ALICE.summary(&app).await;

    // First the routes of the whole instance, before bob sent anything that names alice's
    // ids: bob's key is scoped there, and sees none of hers.
    let instance_wide = |p: &str| {
        ["/sim/v1/clock", JOURNAL, FAULTS, "/sim/v1/stack"]
            .iter()
            .any(|w| p.starts_with(w))
    };
    let mut scoped = 0;
    for (method, path) in routes.iter().filter(|(_, p)| instance_wide(p)) {
        let (s, v) = BOB.call(&app, method.clone(), path, Some(&json!({}))).await;
        assert_ne!(s, StatusCode::UNAUTHORIZED, "{method} {path}: {v}");
        let text = v.to_string();
        for m in markers {
            assert!(
                !text.contains(m),
                "{method} {path} answers bob with alice's {m}: {text}"
            );
        }
        scoped += 1;
    }
    assert!(scoped >= 9, "{scoped}");
    assert_eq!(
        ALICE.get(&app, FAULTS).await["total"],
        1,
        "bob's deletes left alice's rule"
    );
    assert_eq!(
        ALICE.summary(&app).await["requests"],
        alice_before["requests"],
        "bob's journal reset left alice's"
    );

    // Every route: refused to a wrong key and to no key, and (but for the instance's) to
    // bob, in the error shape, naming none of alice's data.
    for (method, path) in &routes {
        if path == "/openapi.json" || path == "/healthz" || path == "/ui" {
            continue;
        }
        let keys: &[Option<&str>] = if instance_wide(path) {
            &[Some("not-a-key"), None]
        } else {
            &[Some(KEY2), Some("not-a-key"), None]
        };
        for key in keys.iter().copied() {
            let (s, v) = app.call(method.clone(), path, key, Some(&json!({}))).await;
            assert_eq!(
                s,
                StatusCode::UNAUTHORIZED,
                "{method} {path} with {key:?}: {v}"
            );
            assert_eq!(v["error"]["type"], "authentication_error", "{v}");
            let text = v.to_string();
            for m in markers {
                assert!(!text.contains(m), "{method} {path} with {key:?}: {text}");
            }
        }
    }
    // And what bob's key reads afterwards holds only his own requests (which name alice's
    // paths: he sent them), never her answers' data.
    for path in [
        format!("{JOURNAL}?limit=100"),
        format!("{JOURNAL}/summary"),
        FAULTS.to_string(),
    ] {
        let v = BOB.get(&app, &path).await;
        let text = v.to_string();
        for m in ["Secret", "secret-user", "alice"] {
            assert!(!text.contains(m), "{path}: {text}");
        }
    }
    // Alice's data is all still there.
    assert_eq!(ALICE.get(&app, &ALICE.deployments()).await["total"], 1);
    assert_eq!(ALICE.get(&app, &ALICE.campaigns()).await["total"], 1);
}
