//! `harness up` as a user runs it: free ports, the ready file, the banner's curl commands
//! pasted into bash (a BYOK round trip: the call is sealed with the workspace's data key, which
//! the key service decrypted), `--json`, and a clean stop on SIGTERM and on Ctrl-C.

use serde_json::Value;

use crate::process::{Running, bash, binary, wait_for_file};

struct Up {
    running: Running,
    ready: std::path::PathBuf,
    dir: tempfile::TempDir,
}

/// `harness up --port-base 0 --ready-file <tmp>/ready.json ARGS...`.
fn up(args: &[&str]) -> Up {
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready.json");
    let ready_arg = ready.display().to_string();
    let mut all = vec!["up", "--port-base", "0", "--ready-file", &ready_arg];
    all.extend_from_slice(args);
    let running = Running::start(&binary("harness"), &all, &dir.path().join("stderr.log"));
    Up {
        running,
        ready,
        dir,
    }
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The object's keys, recursively, as `a.b.c` paths in order.
fn shape(v: &Value, prefix: &str, out: &mut Vec<String>) {
    if let Value::Object(m) = v {
        for (k, v) in m {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            out.push(path.clone());
            shape(v, &path, out);
        }
    }
}

fn audit(command: &str) -> Vec<Value> {
    parse(&bash(command))["entries"]
        .as_array()
        .expect("entries")
        .clone()
}

#[test]
fn the_printed_curl_makes_a_call_sealed_under_the_byok_key_and_sigterm_stops_cleanly() {
    let mut up = up(&[]);
    let details = parse(&wait_for_file(&up.ready, &mut up.running));
    let banner = up
        .running
        .lines_until(|l| l.starts_with("Ctrl-C stops everything"));
    let text = banner.join("\n");
    let platform = details["platform"]["url"].as_str().unwrap();
    let kms = details["key_service"]["url"].as_str().unwrap();
    assert!(!platform.ends_with(":0") && !kms.ends_with(":0"), "{text}");
    for (label, value) in [
        ("platform", &details["platform"]["url"]),
        ("API key", &details["platform"]["api_key"]),
        ("org", &details["platform"]["org_id"]),
        ("workspace", &details["platform"]["workspace_id"]),
        ("key service", &details["key_service"]["byok_base_url"]),
        ("client id", &details["key_service"]["client_id"]),
        ("client secret", &details["key_service"]["client_secret"]),
        ("key alias", &details["key_service"]["key_alias"]),
        ("admin token", &details["key_service"]["admin_token"]),
    ] {
        let value = value.as_str().unwrap();
        assert!(
            banner
                .iter()
                .any(|l| l.trim_start().starts_with(label) && l.contains(value)),
            "the banner shows {label} {value}:\n{text}"
        );
    }
    let command = |what: &str| {
        let c = banner
            .iter()
            .find(|l| l.starts_with("curl ") && l.contains(what))
            .unwrap_or_else(|| panic!("a curl command with {what}:\n{text}"))
            .clone();
        assert_eq!(
            c,
            details["curl"][match what {
                "/outbounds" => "outbound_call",
                "/data-keys" => "data_keys",
                _ => "key_service_audit",
            }],
            "the banner and the JSON show the same command"
        );
        c
    };

    assert!(
        audit(&command("/_admin/audit")).is_empty(),
        "no key is fetched before something needs it"
    );
    let call = parse(&bash(&command("/outbounds")));
    assert!(
        call["attempt_id"].as_str().is_some_and(|id| id.len() == 36),
        "{call}"
    );
    let keys = parse(&bash(&command("/data-keys")));
    assert_eq!(keys["items"].as_array().unwrap().len(), 1, "{keys}");
    assert_eq!(keys["items"][0]["provider"], "byok", "{keys}");
    assert_eq!(keys["items"][0]["key_alias"], "tenant-a", "{keys}");
    let entries = audit(&command("/_admin/audit"));
    let ok = |endpoint: &str| {
        entries
            .iter()
            .filter(|e| e["endpoint"] == endpoint && e["outcome"] == "OK")
            .count()
    };
    assert_eq!(ok("auth"), 1, "client credentials exchanged: {entries:?}");
    assert_eq!(ok("decrypt-key"), 1, "the data key decrypted: {entries:?}");
    assert!(
        entries
            .iter()
            .all(|e| e["caller"] == "platform" && e["outcome"] == "OK"),
        "{entries:?}"
    );

    up.running.signal("TERM");
    let status = up.running.wait();
    assert_eq!(status.code(), Some(0), "stderr:\n{}", up.running.stderr());
    let rest = up.running.rest();
    assert_eq!(
        rest,
        ["harness stopped"],
        "stderr:\n{}",
        up.running.stderr()
    );
    assert!(!up.ready.exists(), "the ready file goes with the stack");
    let db = std::path::Path::new(details["platform"]["database"]["path"].as_str().unwrap());
    assert_eq!(details["platform"]["database"]["kept"], false);
    assert!(
        !db.parent().unwrap().exists(),
        "the temporary database is removed: {}",
        db.display()
    );
}

#[test]
fn json_prints_one_object_the_ready_file_holds_and_ctrl_c_stops_cleanly() {
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("dev.db").display().to_string();
    let mut up = up(&[
        "--json",
        "--clock",
        "simulated",
        "--sim-start",
        "2026-03-02T08:00:00Z",
        "--seed",
        "42",
        "--database",
        &db_path,
    ]);
    let ready = wait_for_file(&up.ready, &mut up.running);
    let line = up.running.next_line().expect("one line of JSON");
    assert_eq!(
        ready.trim_end(),
        line,
        "the ready file holds what --json prints"
    );
    let details = parse(&line);
    let mut keys = Vec::new();
    shape(&details, "", &mut keys);
    assert_eq!(
        keys,
        [
            "platform",
            "platform.url",
            "platform.openapi_url",
            "platform.ui_url",
            "platform.api_key",
            "platform.org_id",
            "platform.workspace_id",
            "platform.database",
            "platform.database.path",
            "platform.database.kept",
            "platform.webhook_secret",
            "platform.seed",
            "key_service",
            "key_service.url",
            "key_service.byok_base_url",
            "key_service.partner",
            "key_service.client_id",
            "key_service.client_secret",
            "key_service.key_alias",
            "key_service.encrypted_key",
            "key_service.admin_url",
            "key_service.admin_token",
            "key_service.seed",
            "telephony",
            "telephony.seed",
            "telephony.magic_numbers",
            "clock",
            "clock.mode",
            "clock.sim_start",
            "seed",
            "curl",
            "curl.outbound_call",
            "curl.data_keys",
            "curl.key_service_audit",
        ]
    );
    assert_eq!(details["seed"], 42);
    assert_eq!(details["platform"]["seed"], 42);
    assert_eq!(details["key_service"]["seed"], 42);
    assert_eq!(details["telephony"]["seed"], 42);
    assert_eq!(details["clock"]["mode"], "simulated");
    assert_eq!(details["clock"]["sim_start"], "2026-03-02T08:00:00.000Z");
    assert_eq!(details["platform"]["database"]["path"], db_path.as_str());
    assert_eq!(details["platform"]["database"]["kept"], true);
    assert_eq!(details["platform"]["org_id"], "org-1");
    assert_eq!(details["platform"]["workspace_id"], "ws-1");
    assert_eq!(details["key_service"]["partner"], "acme");
    let url = details["platform"]["url"].as_str().unwrap();
    assert_eq!(
        details["platform"]["openapi_url"],
        format!("{url}/openapi.json")
    );

    // The call goes through on the simulated clock too: the key service checks request
    // timestamps against the same clock.
    let call = parse(&bash(details["curl"]["outbound_call"].as_str().unwrap()));
    assert!(call["attempt_id"].is_string(), "{call}");
    let clock = parse(&bash(&format!(
        "curl -sS {url}/sim/v1/clock -H 'X-API-Key: {}'",
        details["platform"]["api_key"].as_str().unwrap()
    )));
    assert_eq!(clock["now"], "2026-03-02T08:00:00.000Z", "{clock}");

    up.running.signal("INT");
    let status = up.running.wait();
    assert_eq!(status.code(), Some(0), "stderr:\n{}", up.running.stderr());
    assert!(
        up.running.rest().is_empty(),
        "nothing but the object on standard output"
    );
    assert!(
        db.path().join("dev.db").exists(),
        "a --database file is kept"
    );
    assert_eq!(
        std::fs::read_to_string(db.path().join("dev.db.seed"))
            .unwrap()
            .trim(),
        "42"
    );
    drop(up.dir);
}

#[test]
fn a_taken_port_stops_it_at_once_with_status_2_and_the_fix() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let mut running = Running::start(
        &binary("harness"),
        &["up", "--port-base", &port],
        &dir.path().join("stderr.log"),
    );
    let status = running.wait();
    assert_eq!(status.code(), Some(2));
    let stderr = running.stderr();
    assert!(
        stderr.contains(&format!(
            "cannot listen on 127.0.0.1:{port} for the platform"
        )) && stderr.contains("--port-base"),
        "{stderr}"
    );
    assert!(running.rest().is_empty(), "nothing printed as if it ran");
}

#[test]
fn fixtures_exist_once_ready_and_the_verdict_on_the_clients_is_written_at_exit_and_is_the_exit_status()
 {
    let work = tempfile::tempdir().unwrap();
    let fixtures = work.path().join("fixtures.toml");
    std::fs::write(
        &fixtures,
        r#"
[[deployments]]
org_id = "acme"
workspace_id = "prod"
deployment_id = "dep-front-desk"
[deployments.body]
name = "Front desk"
app_id = "receptionist"
app_version = 3
connection_configs = [{ connection_id = "main", phone_numbers = ["+14155550100"] }]
"#,
    )
    .unwrap();
    let reports = work.path().join("reports");
    let mut up = up(&[
        "--fixtures",
        &fixtures.display().to_string(),
        "--report-on-exit",
        &reports.display().to_string(),
        "--report-exit-status",
        "verdict",
    ]);
    let details = parse(&wait_for_file(&up.ready, &mut up.running));
    let url = details["platform"]["url"].as_str().unwrap();
    let key = details["platform"]["api_key"].as_str().unwrap();
    let deployments = format!("{url}/api/app-authoring/v1/orgs/acme/workspaces/prod/deployments");
    let got = parse(&bash(&format!(
        "curl -sS {deployments}/dep-front-desk -H 'X-API-Key: {key}'"
    )));
    assert_eq!(got["deployment_id"], "dep-front-desk", "{got}");
    assert_eq!(got["name"], "Front desk", "{got}");
    // A request that breaks the contract (a limit above 100).
    bash(&format!(
        "curl -sS '{deployments}?limit=500' -H 'X-API-Key: {key}'"
    ));

    up.running.signal("TERM");
    let status = up.running.wait();
    assert_eq!(
        status.code(),
        Some(1),
        "--report-exit-status verdict: the failed verdict; stderr:\n{}",
        up.running.stderr()
    );
    let junit = std::fs::read_to_string(reports.join("junit.xml"))
        .unwrap_or_else(|e| panic!("no junit.xml ({e}); stderr:\n{}", up.running.stderr()));
    let case = |name: &str| {
        junit
            .lines()
            .find(|l| l.contains(&format!("name=\"{name}\"")))
            .unwrap_or_else(|| panic!("a test case {name}:\n{junit}"))
            .to_string()
    };
    assert!(
        !case("deployments.get_deployment").contains("<failure"),
        "{junit}"
    );
    assert!(
        case("deployments.list_deployments").contains("<failure"),
        "{junit}"
    );
    let report = parse(&std::fs::read_to_string(reports.join("report.json")).unwrap());
    assert_eq!(report["suite"], "verify", "{report}");
    assert_eq!(report["target"], url, "{report}");
    assert!(
        std::fs::read_to_string(reports.join("report.txt"))
            .unwrap()
            .contains("FAIL  deployments.list_deployments")
    );
}

#[test]
fn a_fixture_the_platform_refuses_stops_it_with_status_2_and_the_reason() {
    let work = tempfile::tempdir().unwrap();
    let fixtures = work.path().join("fixtures.json");
    std::fs::write(
        &fixtures,
        r#"{"deployments": [{"org_id": "acme", "workspace_id": "prod", "deployment_id": "dep-1",
            "body": {"name": "Front desk!", "app_id": "a", "app_version": 1,
                     "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550100"]}]}}]}"#,
    )
    .unwrap();
    let mut up = up(&["--fixtures", &fixtures.display().to_string()]);
    let status = up.running.wait();
    assert_eq!(status.code(), Some(2), "stderr:\n{}", up.running.stderr());
    let stderr = up.running.stderr();
    assert!(
        stderr.contains("deployments[0] dep-1") && stderr.contains("body.name"),
        "{stderr}"
    );
    assert!(
        !up.ready.exists(),
        "no ready file for a stack that did not start"
    );
}
