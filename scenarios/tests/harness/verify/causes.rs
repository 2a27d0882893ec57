//! What `harness verify` says of each kind of client mistake, made as a client makes it,
//! beside correct requests to the same operation, in text, JSON and JUnit alike: causes
//! that point the way to the fix (the media type an operation reads, a scheme before the
//! key, a body that is not UTF-8, an ignored write first, an example number kept), uploads
//! whose files the platform could not process, the 409s and 413s listed (and failed with
//! `--fail-on-status`), and the requests real platforms treat otherwise (warnings).

use std::time::Duration;

use contracts::report::junit::escape;
use serde_json::{Value, json};

use super::{KEY, Mock, deployment, harness, text, verify_args_as};

/// The verdict of `harness verify` in its three forms.
struct Verdict {
    code: Option<i32>,
    stdout: String,
    json: Value,
    xml: String,
}

/// Runs `harness verify` with `key` (and `extra` flags), writing JSON and JUnit too.
async fn verdict(mock: &Mock, key: &str, extra: &[&str]) -> Verdict {
    let dir = tempfile::tempdir().unwrap();
    let (json_path, junit) = (dir.path().join("v.json"), dir.path().join("v.xml"));
    let mut args = vec![
        "--json",
        json_path.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = harness(verify_args_as(mock, key, &args)).await;
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    let json = std::fs::read_to_string(&json_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| panic!("no JSON report: {stdout}{stderr}"));
    Verdict {
        code: out.status.code(),
        stdout,
        json,
        xml: std::fs::read_to_string(&junit).unwrap(),
    }
}

impl Verdict {
    fn check(&self, id: &str) -> &Value {
        self.json["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no check {id}: {}", self.json))
    }

    /// The cause of check `id`, failed with `tag` (`FAIL`: an error, JUnit's failure
    /// message; `WARN`: a warning, the passing case's `<system-out>`), the same in the
    /// text, the JSON and the JUnit file.
    fn cause(&self, id: &str, tag: &str) -> String {
        let check = self.check(id);
        assert_eq!(check["result"], "fail", "{check}");
        let severity = if tag == "FAIL" { "error" } else { "warning" };
        assert_eq!(check["severity"], severity, "{check}");
        let cause = check["evidence"]["cause"].as_str().unwrap().to_string();
        assert!(
            self.stdout.contains(&format!("  {tag}  {id} ")),
            "{id}: {}",
            self.stdout
        );
        assert!(
            self.stdout.contains(&format!("cause:    {cause}\n")),
            "{cause}\n{}",
            self.stdout
        );
        let in_junit = if tag == "FAIL" {
            format!("<failure message=\"{}\"", escape(&cause))
        } else {
            format!("<system-out>{}", escape(&format!("warning: {cause}")))
        };
        assert!(self.xml.contains(&in_junit), "{in_junit}\n{}", self.xml);
        cause
    }
}

fn deployments(ws: &str) -> String {
    format!("/api/app-authoring/v1/orgs/acme/workspaces/{ws}/deployments")
}

fn uploads(ws: &str, dep: &str) -> String {
    format!("/api/scheduling/v1/orgs/acme/workspaces/{ws}/deployments/{dep}/cohorts")
}

/// A deployment of `ws` (key `sk-{ws}`); answers its id.
async fn create_deployment(mock: &Mock, ws: &str, number: &str) -> String {
    let resp = reqwest::Client::new()
        .post(format!("{}{}", mock.url(), deployments(ws)))
        .header("x-api-key", format!("sk-{ws}"))
        .json(&deployment("Desk", number))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    v["deployment_id"].as_str().unwrap().to_string()
}

/// The upload form of `csv`, with a transformation that names the columns `phone` and `id`.
fn form(csv: &[u8]) -> reqwest::multipart::Form {
    let transformation = json!({
        "phone_number": {"column_name": "phone", "country_code": "US"},
        "user_identifier": {"column_name": "id"}
    });
    reqwest::multipart::Form::new()
        .text("name", "march")
        .part(
            "cohort_file",
            reqwest::multipart::Part::bytes(csv.to_vec()).file_name("users.csv"),
        )
        .part(
            "cohort_transformation_file",
            reqwest::multipart::Part::bytes(transformation.to_string().into_bytes())
                .file_name("t.json"),
        )
}

/// A request of `ws`'s client: `build` adds what it sends; answers the status.
async fn send(
    mock: &Mock,
    method: reqwest::Method,
    path: &str,
    build: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
) -> u16 {
    let req = reqwest::Client::new().request(method, format!("{}{path}", mock.url()));
    build(req).send().await.unwrap().status().as_u16()
}

/// Polls the cohort until it leaves `processing`, as a client does; answers it.
async fn settled(mock: &Mock, ws: &str, dep: &str, id: &str) -> Value {
    for _ in 0..6000 {
        let v: Value = reqwest::Client::new()
            .get(format!("{}{}/{id}", mock.url(), uploads(ws, dep)))
            .header("x-api-key", format!("sk-{ws}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if v["status"] != "processing" {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("cohort {id} still processing");
}

const WORKSPACES: [&str; 7] = ["form", "json", "bare", "bearer", "latin1", "patch", "phone"];

#[tokio::test]
async fn each_cause_points_the_way_to_its_fix() {
    let keys: Vec<String> = WORKSPACES
        .iter()
        .map(|ws| format!("acme/{ws}=sk-{ws}:{ws}"))
        .collect();
    let mock = Mock::with_keys(&keys).await;
    use reqwest::Method;
    let key = |ws: &str| format!("sk-{ws}");

    // A cohort upload sent as a form, and one sent as JSON, each beside a right one.
    for ws in ["form", "json"] {
        let dep = create_deployment(&mock, ws, "+14155550100").await;
        let path = format!("{}/upload", uploads(ws, &dep));
        let ok = send(&mock, Method::POST, &path, |r| {
            r.header("x-api-key", key(ws))
                .multipart(form(b"phone,id\n4155550123,u1\n"))
        })
        .await;
        assert_eq!(ok, 200);
        let wrong = send(&mock, Method::POST, &path, |r| {
            let r = r.header("x-api-key", key(ws));
            if ws == "form" {
                r.form(&[("name", "march")])
            } else {
                r.json(&json!({"name": "march"}))
            }
        })
        .await;
        assert_eq!(wrong, 415);
    }
    let v = verdict(&mock, &key("form"), &[]).await;
    assert_eq!(v.code, Some(1), "{}", v.stdout);
    let cause = v.cause("cohorts.upload_deployment_cohort", "FAIL");
    assert!(
        cause.ends_with("-> 415: header.content-type: the operation reads multipart/form-data, not 'application/x-www-form-urlencoded'"),
        "{cause}"
    );
    let cause = verdict(&mock, &key("json"), &[])
        .await
        .cause("cohorts.upload_deployment_cohort", "FAIL");
    assert!(
        cause.ends_with("the operation reads multipart/form-data, not 'application/json'"),
        "{cause}"
    );

    // A create without a Content-Type, beside a right one.
    create_deployment(&mock, "bare", "+14155550101").await;
    let status = send(&mock, Method::POST, &deployments("bare"), |r| {
        r.header("x-api-key", key("bare"))
            .body(deployment("Desk two", "+14155550102").to_string())
    })
    .await;
    assert_eq!(status, 415);
    let cause = verdict(&mock, &key("bare"), &[])
        .await
        .cause("deployments.create_deployment", "FAIL");
    assert!(
        cause.contains("-> 415: header.content-type: no Content-Type header: the operation reads application/json"),
        "{cause}"
    );
    assert!(!cause.contains("''"), "{cause}");

    // The key sent as a bearer token in X-API-Key, beside a right list.
    assert_eq!(
        mock.call_as(&key("bearer"), Method::GET, &deployments("bearer"), None)
            .await,
        200
    );
    let status = send(&mock, Method::GET, &deployments("bearer"), |r| {
        r.header("x-api-key", format!("Bearer {}", key("bearer")))
    })
    .await;
    assert_eq!(status, 401);
    let v = verdict(&mock, &key("bearer"), &[]).await;
    let cause = v.cause("deployments.list_deployments", "FAIL");
    assert!(
        cause.contains("-> 401: header.x-api-key: the X-API-Key header starts with 'Bearer ': it takes the key alone"),
        "{cause}"
    );
    for form in [&v.stdout, &v.json.to_string(), &v.xml] {
        assert!(!form.contains(&key("bearer")), "never the key: {form}");
    }

    // A body in Latin-1, beside a right one.
    create_deployment(&mock, "latin1", "+14155550103").await;
    let mut latin1 = br#"{"name": "Caf"#.to_vec();
    latin1.push(0xE9);
    latin1.extend_from_slice(br#"", "app_id": "a", "app_version": 1, "connection_configs": []}"#);
    let status = send(&mock, Method::POST, &deployments("latin1"), |r| {
        r.header("x-api-key", key("latin1"))
            .header("content-type", "application/json")
            .body(latin1)
    })
    .await;
    assert_eq!(status, 422);
    let cause = verdict(&mock, &key("latin1"), &[])
        .await
        .cause("deployments.create_deployment", "FAIL");
    assert!(
        cause.contains(
            "-> 422: body: JSON decode error: the body is not UTF-8 (byte 0xE9 at offset 13)"
        ) && cause.contains("must be UTF-8 text"),
        "{cause}"
    );

    // A PATCH that means to pause, among six mistakes the answer shows, beside a rename.
    let campaigns = "/api/scheduling/v1/orgs/acme/workspaces/patch/campaigns";
    let created: Value = reqwest::Client::new()
        .post(format!("{}{campaigns}", mock.url()))
        .header("x-api-key", key("patch"))
        .json(&campaign())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let one = format!("{campaigns}/{}", created["campaign_id"].as_str().unwrap());
    let rename = json!({"name": "Renamed"});
    assert_eq!(
        mock.call_as(&key("patch"), Method::PATCH, &one, Some(rename))
            .await,
        200
    );
    let patch = json!({"status": "paused", "name": "bad/name", "description": 7,
                       "end_timestamp": "tomorrow", "attempts_per_second": 9000,
                       "allowed_schedule": {"timezone": "Mars/Base"}});
    assert_eq!(
        mock.call_as(&key("patch"), Method::PATCH, &one, Some(patch))
            .await,
        422
    );
    let cause = verdict(&mock, &key("patch"), &[])
        .await
        .cause("campaigns.patch_campaign", "FAIL");
    assert!(
        cause.contains("-> 422: body.status: Extra inputs are not permitted (the platform ignored it: a PATCH never changes the status")
            && cause.contains("PUT /api/scheduling/v1/orgs/{org_id}/workspaces/{workspace_id}/campaigns/{campaign_id}/status does)")
            && cause.contains(" more)"),
        "the ignored write first, not behind the others: {cause}"
    );

    // A number not in E.164 form, beside a right one: the example shows the form.
    create_deployment(&mock, "phone", "+14155550104").await;
    let status = mock
        .call_as(
            &key("phone"),
            Method::POST,
            &deployments("phone"),
            Some(deployment("Desk two", "+1 212 000 9999")),
        )
        .await;
    assert_eq!(status, 422);
    let v = verdict(&mock, &key("phone"), &[]).await;
    let cause = v.cause("deployments.create_deployment", "FAIL");
    assert!(
        cause.contains("'<number>' is not an E.164 number")
            && cause.contains("for example '+14155550100'"),
        "{cause}"
    );
    assert!(!v.json.to_string().contains("212 000"), "{}", v.json);
}

#[tokio::test]
async fn an_unknown_name_says_the_one_it_most_likely_meant() {
    let keys: Vec<String> = ["agent", "sort", "part"]
        .iter()
        .map(|ws| format!("acme/{ws}=sk-{ws}:{ws}"))
        .collect();
    let mock = Mock::with_keys(&keys).await;
    use reqwest::Method;

    // A campaign whose app_config is named for the agent: refused, for app_config is missing.
    let campaigns = "/api/scheduling/v1/orgs/acme/workspaces/agent/campaigns";
    assert_eq!(
        mock.call_as("sk-agent", Method::POST, campaigns, Some(campaign()))
            .await,
        200
    );
    let mut wrong = campaign();
    let app = wrong.as_object_mut().unwrap().remove("app_config").unwrap();
    wrong["agent_config"] = app;
    assert_eq!(
        mock.call_as("sk-agent", Method::POST, campaigns, Some(wrong))
            .await,
        422
    );
    let cause = verdict(&mock, "sk-agent", &[])
        .await
        .cause("campaigns.create_campaign", "FAIL");
    assert!(
        cause.contains(
            "-> 422: body.agent_config: Extra inputs are not permitted (did you mean 'app_config'?)"
        ),
        "{cause}"
    );

    // A list sorted with `sort`: answered, unsorted.
    create_deployment(&mock, "sort", "+14155550100").await;
    let sorted = format!("{}?sort=name&sort_order=asc", deployments("sort"));
    assert_eq!(
        mock.call_as("sk-sort", Method::GET, &sorted, None).await,
        200
    );
    let cause = verdict(&mock, "sk-sort", &[])
        .await
        .cause("deployments.list_deployments", "FAIL");
    assert!(
        cause.contains("-> 200: query.sort: Extra inputs are not permitted (the platform ignored it; did you mean 'sort_by'?)"),
        "{cause}"
    );

    // An upload whose file part is called `file`, beside a right one.
    let dep = create_deployment(&mock, "part", "+14155550101").await;
    let path = format!("{}/upload", uploads("part", &dep));
    let ok = send(&mock, Method::POST, &path, |r| {
        r.header("x-api-key", "sk-part")
            .multipart(form(b"phone,id\n4155550123,u1\n"))
    })
    .await;
    assert_eq!(ok, 200);
    let misnamed = reqwest::multipart::Form::new()
        .text("name", "march")
        .part(
            "file",
            reqwest::multipart::Part::bytes(b"phone,id\n4155550123,u1\n".to_vec())
                .file_name("users.csv"),
        )
        .text(
            "cohort_transformation_file",
            json!({"phone_number": {"column_name": "phone"}, "user_identifier": {"column_name": "id"}})
                .to_string(),
        );
    let status = send(&mock, Method::POST, &path, |r| {
        r.header("x-api-key", "sk-part").multipart(misnamed)
    })
    .await;
    assert_eq!(status, 422);
    let cause = verdict(&mock, "sk-part", &[])
        .await
        .cause("cohorts.upload_deployment_cohort", "FAIL");
    assert!(
        cause.contains("body.file: Extra inputs are not permitted: the operation has no such multipart part (did you mean 'cohort_file'?)"),
        "{cause}"
    );
}

/// A campaign body that starts an hour after the mock's clock.
fn campaign() -> Value {
    json!({
        "name": "Spring",
        "start_timestamp": "2026-03-02T13:00:00Z",
        "end_timestamp": "2026-03-05T13:00:00Z",
        "allowed_schedule": {"timezone": "UTC", "allowed_days": ["Monday"],
                             "allowed_start_time": "09:00", "allowed_end_time": "17:00"},
        "app_config": {"app_id": "app-1", "app_version": 1, "attempts_per_second": 1,
                       "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550100"], "weight": 1}]}
    })
}

#[tokio::test]
async fn an_upload_the_platform_could_not_process_fails_its_operation() {
    let mock = Mock::with_keys(&["acme/up=sk-up:ci".to_string()]).await;
    let dep = create_deployment(&mock, "up", "+14155550100").await;
    let path = format!("{}/upload", uploads("up", &dep));
    let mut ids = Vec::new();
    // A right file, then one whose header row lacks the column the transformation names.
    for csv in [
        &b"phone,id\n4155550123,u1\n"[..],
        b"number,id\n4155550124,u2\n",
    ] {
        let resp = reqwest::Client::new()
            .post(format!("{}{path}", mock.url()))
            .header("x-api-key", "sk-up")
            .multipart(form(csv))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let v: Value = resp.json().await.unwrap();
        ids.push(v["cohort_id"].as_str().unwrap().to_string());
    }
    assert_eq!(
        settled(&mock, "up", &dep, &ids[0]).await["status"],
        "completed"
    );
    let failed = settled(&mock, "up", &dep, &ids[1]).await;
    assert_eq!(failed["status"], "failed");
    let reason = failed["failure_reason"].as_str().unwrap();

    let v = verdict(&mock, "sk-up", &[]).await;
    assert_eq!(v.code, Some(1), "{}", v.stdout);
    let cause = v.cause("cohorts.upload_deployment_cohort", "FAIL");
    assert_eq!(
        cause,
        format!("#3 POST {path} -> 200: cohort {} failed: {reason}", ids[1])
    );
    let check = v.check("cohorts.upload_deployment_cohort");
    assert_eq!(check["evidence"]["failed_uploads"], 1);
    assert!(
        check["how_to_fix"]
            .as_str()
            .unwrap()
            .contains("failure_reason")
    );
    assert_eq!(v.json["figures"]["failed_uploads"]["uploads"], 1);
    assert_eq!(
        v.json["figures"]["requests"]["violating"], 0,
        "the requests kept the contract"
    );
    assert!(
        v.stdout
            .contains("1 upload answered 200 whose file the platform could not process"),
        "{}",
        v.stdout
    );
    assert!(
        v.xml
            .contains("name=\"failed_uploads.uploads\" value=\"1\""),
        "{}",
        v.xml
    );

    // Downgraded: a warning, and the job passes.
    let v = verdict(&mock, "sk-up", &["--allow-failed-uploads"]).await;
    assert_eq!(v.code, Some(0), "{}", v.stdout);
    v.cause("cohorts.upload_deployment_cohort", "WARN");
}

#[tokio::test]
async fn conflicts_and_bodies_too_large_are_listed_and_may_fail() {
    let mock = Mock::start().await;
    use reqwest::Method;
    let campaigns = "/api/scheduling/v1/orgs/acme/workspaces/prod/campaigns";
    let created: Value = reqwest::Client::new()
        .post(format!("{}{campaigns}", mock.url()))
        .header("x-api-key", KEY)
        .json(&campaign())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let status = format!(
        "{campaigns}/{}/status",
        created["campaign_id"].as_str().unwrap()
    );
    let act = |a: &str| Some(json!({"action": a}));
    assert_eq!(mock.call(Method::PUT, &status, act("pause")).await, 200);
    assert_eq!(mock.call(Method::PUT, &status, act("cancel")).await, 200);
    assert_eq!(mock.call(Method::PUT, &status, act("resume")).await, 409);
    // An 11 MiB body, beside a right create.
    let deployments = "/api/app-authoring/v1/orgs/acme/workspaces/prod/deployments";
    assert_eq!(
        mock.call(
            Method::POST,
            deployments,
            Some(deployment("Desk", "+14155550100"))
        )
        .await,
        200
    );
    let mut big = deployment("Desk two", "+14155550101");
    big["description"] = json!("x".repeat(11 * 1024 * 1024));
    assert_eq!(mock.call(Method::POST, deployments, Some(big)).await, 413);

    let v = verdict(&mock, KEY, &[]).await;
    assert_eq!(v.code, Some(0), "not violations: {}", v.stdout);
    let conflict = format!("#4 PUT {status} -> 409: cannot resume a campaign that is cancelled");
    let too_large = format!("#6 POST {deployments} -> 413: ");
    assert!(
        v.stdout
            .contains("1 request answered 409 for a state that said no")
            && v.stdout.contains(&format!("  {conflict}\n")),
        "{}",
        v.stdout
    );
    assert!(
        v.stdout
            .contains("1 request answered 413 for a body above the platform's limit")
            && v.stdout.contains(&format!("  {too_large}")),
        "{}",
        v.stdout
    );
    assert_eq!(
        v.json["figures"]["conflicts"]["listed"][0],
        conflict.as_str()
    );
    assert_eq!(v.json["figures"]["too_large"]["requests"], 1);
    assert!(
        v.xml.contains(&escape(&conflict)),
        "in the suite's system-out: {}",
        v.xml
    );

    // A suite that expects neither.
    let v = verdict(&mock, KEY, &["--fail-on-status", "409,413"]).await;
    assert_eq!(v.code, Some(1), "{}", v.stdout);
    assert_eq!(
        v.cause("campaigns.set_campaign_status", "FAIL"),
        format!("{conflict} (--fail-on-status 409)")
    );
    let cause = v.cause("deployments.create_deployment", "FAIL");
    assert!(
        cause.starts_with(&too_large) && cause.ends_with("(--fail-on-status 413)"),
        "{cause}"
    );
    // The limit is the platform's own figure, said as a number of bytes.
    assert!(
        cause.contains("larger than the limit of 10485760 bytes"),
        "{cause}"
    );
    let v = verdict(&mock, KEY, &["--fail-on-status", "404"]).await;
    assert_eq!(v.code, Some(0), "no 404 here: {}", v.stdout);
    let out = harness(verify_args_as(&mock, KEY, &["--fail-on-status", "500"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("404, 409, 413"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn a_trailing_slash_and_a_repeated_parameter_are_warnings() {
    let mock = Mock::start().await;
    use reqwest::Method;
    let deployments = "/api/app-authoring/v1/orgs/acme/workspaces/prod/deployments";
    assert_eq!(
        mock.call(
            Method::POST,
            deployments,
            Some(deployment("Desk", "+14155550100"))
        )
        .await,
        200
    );
    assert_eq!(mock.call(Method::GET, deployments, None).await, 200);
    assert_eq!(
        mock.call(Method::GET, &format!("{deployments}/"), None)
            .await,
        200
    );
    assert_eq!(
        mock.call(
            Method::GET,
            &format!("{deployments}?limit=10&limit=50"),
            None
        )
        .await,
        200
    );
    let v = verdict(&mock, KEY, &[]).await;
    assert_eq!(v.code, Some(0), "warnings only: {}", v.stdout);
    let cause = v.cause("portability.trailing_slash", "WARN");
    assert!(
        cause.starts_with(&format!(
            "#3 GET {deployments}/ -> 200: path: the path ends with '/'"
        )) && cause.contains("redirect")
            && cause.contains("404"),
        "{cause}"
    );
    let cause = v.cause("portability.repeated_query", "WARN");
    assert!(
        cause.starts_with(&format!("#4 GET {deployments} -> 200: query.limit: 'limit' is given more than once (limit=10&limit=50): this platform took the last (limit=50)"))
            && cause.contains("take the first (limit=10)"),
        "{cause}"
    );
    assert_eq!(v.json["figures"]["warnings"]["trailing_slash"], 1);
    assert_eq!(v.json["figures"]["requests"]["conforming"], 4);
    assert_eq!(v.json["summary"]["warnings"], 2);
    assert_eq!(v.json["summary"]["failures"], 0);
}
