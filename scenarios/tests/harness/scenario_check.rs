//! `harness scenario check` and the scenario file's errors: every refusal names the line and
//! column and says how to fix it (one snapshot per case), the JSON Schema covers the format,
//! and every example is valid.

use std::path::Path;

use scenarios::scenario::load_str;

/// A minimal valid scenario; cases change one thing.
const BASE: &str = r#"
seed = 1
start = "2026-03-02T08:00:00Z"

[[campaigns]]
key = "c"
start = "+1h"
end = "+1d"

[campaigns.request]
name = "Test"
allowed_schedule = { timezone = "UTC", allowed_days = ["Monday"], allowed_start_time = "09:00", allowed_end_time = "17:00" }

[campaigns.request.app_config]
app_id = "app-1"
app_version = 1
attempts_per_second = 1
connection_configs = [{ connection_id = "conn-a", phone_numbers = ["+14155550100"], weight = 1 }]
retry_config = { max_retries = 1, retry_on = ["busy"], threshold_seconds = 10 }

[[cohorts]]
key = "u"
campaign = "c"
generate = { count = 10, numbers = "+1312444####" }
"#;

fn problems(text: &str) -> String {
    match load_str(text, "case.toml", Path::new("."), "case") {
        Ok(_) => "ok".into(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_base_case_is_valid() {
    assert_eq!(problems(BASE), "ok");
}

macro_rules! case {
    ($name:ident, $text:expr) => {
        #[test]
        fn $name() {
            let out = problems(&$text);
            assert_ne!(out, "ok", "the case must be refused");
            insta::assert_snapshot!(out);
        }
    };
}

case!(toml_syntax, BASE.replace("seed = 1", "seed = = 1"));
case!(unknown_top_level_field, format!("colour = \"red\"\n{BASE}"));
case!(
    missing_start,
    BASE.replace("start = \"2026-03-02T08:00:00Z\"", "")
);
case!(
    relative_start,
    BASE.replace("start = \"2026-03-02T08:00:00Z\"", "start = \"+1h\"")
);
case!(
    bad_time,
    BASE.replace("end = \"+1d\"", "end = \"tomorrow\"")
);
case!(
    bad_duration_unit,
    BASE.replace("end = \"+1d\"", "end = \"+1y\"")
);
case!(
    unknown_action,
    format!("{BASE}\n[[timeline]]\nat = \"+2h\"\ndo = \"explode\"\n")
);
case!(
    unknown_action_field,
    format!("{BASE}\n[[timeline]]\nat = \"+2h\"\ndo = \"pause\"\ncampaign = \"c\"\nforce = true\n")
);
case!(
    unknown_check,
    format!("{BASE}\n[[expect]]\ncheck = \"vibes\"\n")
);
case!(
    unknown_campaign_reference,
    format!("{BASE}\n[[timeline]]\nat = \"+2h\"\ndo = \"pause\"\ncampaign = \"nope\"\n")
);
case!(
    duplicate_key,
    format!(
        "{BASE}\n[[cohorts]]\nkey = \"u\"\ncampaign = \"c\"\ncsv = \"phone_number\\n+14155550123\\n\"\n"
    )
);
case!(
    cohort_two_sources,
    BASE.replace("generate = {", "csv = \"phone_number\\n\"\ngenerate = {")
);
case!(
    cohort_file_missing,
    BASE.replace(
        "generate = { count = 10, numbers = \"+1312444####\" }",
        "file = \"no-such.csv\""
    )
);
case!(
    pattern_without_hashes,
    BASE.replace("\"+1312444####\"", "\"+13124440000\"")
);
case!(
    pattern_too_short,
    BASE.replace("count = 10,", "count = 100000,")
);
case!(
    api_refuses_campaign,
    BASE.replace("attempts_per_second = 1", "attempts_per_second = 0")
);
case!(
    timestamps_in_request,
    BASE.replace(
        "name = \"Test\"",
        "name = \"Test\"\nstart_timestamp = \"2026-03-02T09:00:00Z\""
    )
);
case!(
    campaign_starts_too_soon,
    BASE.replace("start = \"+1h\"", "start = \"+1m\"")
);
case!(
    expectation_before_start,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"campaign_status\"\nat = \"2026-03-01T00:00:00Z\"\ncampaign = \"c\"\nstatus = \"active\"\n"
    )
);
case!(
    negative_count,
    format!("{BASE}\n[[expect]]\ncheck = \"users\"\ncampaign = \"c\"\ntotal = -1\n")
);
case!(
    inverted_count,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"users\"\ncampaign = \"c\"\ntotal = {{ at_least = 5, at_most = 2 }}\n"
    )
);
case!(
    bad_status,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"campaign_status\"\ncampaign = \"c\"\nstatus = \"running\"\n"
    )
);
case!(
    shares_do_not_add_up,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"weight_split\"\ncampaign = \"c\"\nshares = {{ conn-a = 0.5 }}\n"
    )
);
case!(
    webhooks_not_enabled,
    format!("{BASE}\n[[expect]]\ncheck = \"webhooks\"\ncampaign = \"c\"\n")
);
case!(
    rule_without_matcher,
    format!("{BASE}\n[[telephony.rules]]\nanswers = [{{ outcome = \"busy\" }}]\n")
);
case!(
    rule_without_answers,
    format!("{BASE}\n[[telephony.rules]]\nnumber = \"+13124440001\"\nanswers = []\n")
);
case!(
    bad_answer_outcome,
    format!(
        "{BASE}\n[[telephony.rules]]\nnumber = \"+13124440001\"\nanswers = [{{ outcome = \"maybe\" }}]\n"
    )
);
case!(
    telephony_model_over_one,
    format!("{BASE}\n[telephony.model]\nconnected_rate = 0.9\n")
);
case!(
    telephony_model_unknown_field,
    format!("{BASE}\n[telephony.model]\nanswer_rate = 0.9\n")
);
case!(
    fault_next_zero,
    format!("{BASE}\n[[key_service.faults]]\nkind = \"service_unavailable\"\nnext = 0\n")
);
case!(
    fault_field_of_another_kind,
    format!("{BASE}\n[[key_service.faults]]\nkind = \"service_unavailable\"\ndelay = \"1s\"\n")
);
case!(
    fault_until_before_from,
    format!("{BASE}\n[[key_service.faults]]\nkind = \"hang\"\nfrom = \"+2h\"\nuntil = \"+1h\"\n")
);
case!(
    unknown_fault_kind,
    format!("{BASE}\n[[key_service.faults]]\nkind = \"meltdown\"\n")
);
case!(
    until_before_start,
    format!("until = \"2026-03-01T00:00:00Z\"\n{BASE}")
);
case!(shared_agent_number, {
    let campaign = &BASE[BASE.find("[[campaigns]]").unwrap()..BASE.find("[[cohorts]]").unwrap()];
    format!("{BASE}\n{}", campaign.replace("key = \"c\"", "key = \"d\""))
});
case!(
    inbound_unknown_call,
    format!("{BASE}\n[[expect]]\ncheck = \"inbound\"\ncall = \"x\"\nanswered = true\n")
);
case!(
    not_utf8_friendly_value,
    format!("{BASE}\n[[timeline]]\nat = 5\ndo = \"pause\"\ncampaign = \"c\"\n")
);

case!(empty_key, BASE.replace("key = \"u\"", "key = \" \""));
case!(
    no_such_kind_in_the_file,
    format!(
        "{BASE}\n[[timeline]]\nat = \"+2h\"\ndo = \"pause_deployment\"\ndeployment = \"desk\"\n"
    )
);
case!(
    fault_from_before_start,
    format!("{BASE}\n[[key_service.faults]]\nkind = \"hang\"\nfrom = \"2026-03-01T00:00:00Z\"\n")
);
case!(
    fault_probability_out_of_range,
    format!("{BASE}\n[[key_service.faults]]\nkind = \"hang\"\nprobability = 1.5\n")
);
case!(
    fault_next_and_probability,
    format!("{BASE}\n[[key_service.faults]]\nkind = \"hang\"\nnext = 2\nprobability = 0.5\n")
);
case!(
    fault_latency_over_ten_minutes,
    format!("{BASE}\n[[key_service.faults]]\nkind = \"latency\"\ndelay = \"11m\"\n")
);
case!(
    fault_truncated_key_too_long,
    format!("{BASE}\n[[key_service.faults]]\nkind = \"truncated_key\"\nlen = 32\n")
);
case!(
    key_service_client_without_secrets,
    format!("{BASE}\n[[key_service.clients]]\nid = \"platform\"\nsecrets = []\n")
);
case!(
    key_service_duration_under_a_second,
    format!("{BASE}\n[key_service]\ntoken_lifetime = \"500ms\"\n")
);
case!(
    campaign_request_not_a_table,
    format!(
        "{BASE}\n[[campaigns]]\nkey = \"d\"\nstart = \"+1h\"\nend = \"+1d\"\nrequest = \"all of it\"\n"
    )
);
case!(
    deployment_request_not_a_table,
    format!("{BASE}\n[[deployments]]\nkey = \"d\"\nrequest = [1, 2]\n")
);
case!(
    deployment_refused_by_the_api,
    format!("{BASE}\n[[deployments]]\nkey = \"d\"\n\n[deployments.request]\nname = \"Desk\"\napp_id = \"app-1\"\napp_version = 1\nconnection_configs = [{{ connection_id = \"conn-d\", phone_numbers = [\"+14155550999\"] }}]\n").replace("app_version = 1\nconnection_configs = [{ connection_id = \"conn-d\"", "app_version = 0\nconnection_configs = [{ connection_id = \"conn-d\"")
);
case!(
    cohort_both_campaign_and_deployment,
    format!("{BASE}\n[[deployments]]\nkey = \"d\"\n\n[deployments.request]\nname = \"Desk\"\napp_id = \"app-1\"\napp_version = 1\nconnection_configs = [{{ connection_id = \"conn-d\", phone_numbers = [\"+14155550999\"] }}]\n").replace("campaign = \"c\"\ngenerate", "campaign = \"c\"\ndeployment = \"d\"\ngenerate")
);
case!(
    cohort_bad_category,
    BASE.replace(
        "campaign = \"c\"\ngenerate",
        "campaign = \"c\"\ncategory = \"vip\"\ngenerate"
    )
);
case!(
    cohort_bad_transformation,
    format!("{BASE}transformation = {{ phone_number = 5 }}\n")
);
case!(
    cohort_upload_at_and_upload_step,
    format!(
        "{}\n[[timeline]]\nat = \"+30m\"\ndo = \"upload_cohort\"\ncohort = \"u\"\n",
        BASE.replace(
            "campaign = \"c\"\ngenerate",
            "campaign = \"c\"\nupload_at = \"+10m\"\ngenerate"
        )
    )
);
case!(
    cohort_upload_at_before_start,
    BASE.replace(
        "campaign = \"c\"\ngenerate",
        "campaign = \"c\"\nupload_at = \"2026-03-01T00:00:00Z\"\ngenerate"
    )
);
case!(
    step_before_start,
    format!(
        "{BASE}\n[[timeline]]\nat = \"2026-03-01T00:00:00Z\"\ndo = \"pause\"\ncampaign = \"c\"\n"
    )
);
case!(
    patch_not_a_table,
    format!(
        "{BASE}\n[[timeline]]\nat = \"+10m\"\ndo = \"patch_campaign\"\ncampaign = \"c\"\npatch = \"end later\"\n"
    )
);
case!(
    patch_sets_and_clears_a_field,
    format!(
        "{BASE}\n[[timeline]]\nat = \"+10m\"\ndo = \"patch_campaign\"\ncampaign = \"c\"\npatch = {{ description = \"New\" }}\nclear = [\"description\"]\n"
    )
);
case!(
    patch_clears_inside_a_value,
    format!(
        "{BASE}\n[[timeline]]\nat = \"+10m\"\ndo = \"patch_campaign\"\ncampaign = \"c\"\npatch = {{ name = \"New\" }}\nclear = [\"name.first\"]\n"
    )
);
case!(
    patch_changes_nothing,
    format!("{BASE}\n[[timeline]]\nat = \"+10m\"\ndo = \"patch_campaign\"\ncampaign = \"c\"\n")
);
case!(
    outage_for_zero,
    format!("{BASE}\n[[timeline]]\nat = \"+2h\"\ndo = \"key_service_outage\"\nfor = \"0s\"\n")
);
case!(
    inbound_variables_not_a_table,
    format!(
        "{BASE}\n[[timeline]]\nat = \"+2h\"\ndo = \"inbound_call\"\nkey = \"x\"\ncaller = \"+12025550188\"\ndialled = \"+14155550100\"\n\n[[expect]]\ncheck = \"inbound\"\ncall = \"x\"\nanswered = true\nvariables = \"Ada\"\n"
    )
);
case!(
    dial_rate_not_above_zero,
    format!("{BASE}\n[[expect]]\ncheck = \"dial_rate\"\ncampaign = \"c\"\nrate = 0\n")
);
case!(
    dial_rate_until_not_after_from,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"dial_rate\"\ncampaign = \"c\"\nrate = 1\nfrom = \"+3h\"\nuntil = \"+2h\"\n"
    )
);
case!(
    dial_rate_tolerance_out_of_range,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"dial_rate\"\ncampaign = \"c\"\nrate = 1\ntolerance = 2\n"
    )
);
case!(
    weight_split_tolerance_out_of_range,
    format!(
        "{BASE}\n[[expect]]\ncheck = \"weight_split\"\ncampaign = \"c\"\nshares = {{ conn-a = 1 }}\ntolerance = -0.1\n"
    )
);
case!(
    count_as_a_float,
    format!("{BASE}\n[[expect]]\ncheck = \"users\"\ncampaign = \"c\"\ntotal = 1.5\n")
);

mod caught_early;

/// Every refusal written in the loader's files (each `.at(span, message)`) has a snapshot above whose
/// message it made: a new refusal without a case fails here.
#[test]
fn every_refusal_of_the_loader_has_a_snapshot() {
    let source = [
        include_str!("../../src/scenario/load.rs"),
        include_str!("../../src/scenario/check.rs"),
        include_str!("../../src/scenario/api.rs"),
        include_str!("../../src/scenario/states.rs"),
        include_str!("../../src/scenario/meetable.rs"),
    ]
    .concat();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/harness");
    let mut messages = vec![];
    let entries = std::fs::read_dir(root.join("snapshots"))
        .unwrap()
        .chain(std::fs::read_dir(root.join("scenario_check/snapshots")).unwrap());
    for entry in entries {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("harness__scenario_check__") && name.ends_with(".snap") {
            let text = std::fs::read_to_string(&p).unwrap();
            messages.extend(text.lines().map(str::to_string));
        }
    }
    let mut sites = 0;
    for (at, _) in source
        .match_indices("self.at(")
        .chain(source.match_indices("v.at("))
    {
        let rest = &source[at..];
        let open = rest.find('"').unwrap() + 1;
        let mut literal = String::new();
        let mut chars = rest[open..].chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => literal.push(chars.next().unwrap()),
                '"' => break,
                c => literal.push(c),
            }
        }
        // The literal's fixed pieces, in order, between its `{...}` placeholders.
        let mut pieces = vec![];
        let mut piece = String::new();
        let mut depth = 0;
        for c in literal.chars() {
            match c {
                '{' => {
                    depth += 1;
                    pieces.push(std::mem::take(&mut piece));
                }
                '}' => depth -= 1,
                c if depth == 0 => piece.push(c),
                _ => {}
            }
        }
        pieces.push(piece);
        let made = messages.iter().any(|m| {
            let mut from = 0;
            pieces.iter().all(|p| match m[from..].find(p.as_str()) {
                Some(i) => {
                    from += i + p.len();
                    true
                }
                None => false,
            })
        });
        assert!(made, "no snapshot has the message {literal:?}: add a case!");
        sites += 1;
    }
    assert!(sites >= 40, "the refusals were found ({sites})");
}

/// The error shown in scenarios/README.md is what the loader prints for it: the example
/// `lifecycle.toml` with its first expectation's campaign misspelt.
#[test]
fn the_readme_error_example_is_real() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let errors = &readme[readme.find("## Errors").unwrap()..];
    let start = errors.find("```text\n").unwrap() + "```text\n".len();
    let shown = &errors[start..start + errors[start..].find("```").unwrap()];
    let text = std::fs::read_to_string(root.join("examples/lifecycle.toml"))
        .unwrap()
        .replacen(
            "campaign = \"spring\"\nstatus = \"scheduled\"",
            "campaign = \"sprin\"\nstatus = \"scheduled\"",
            1,
        );
    let out = match load_str(&text, "lifecycle.toml", Path::new("."), "lifecycle") {
        Ok(_) => panic!("the misspelt campaign is refused"),
        Err(e) => format!("{e}\n"),
    };
    assert_eq!(out, shown);
}

#[test]
fn several_problems_are_reported_at_once_in_file_order() {
    let text = format!(
        "{BASE}\n[[timeline]]\nat = \"+2h\"\ndo = \"pause\"\ncampaign = \"x\"\n\n[[expect]]\ncheck = \"users\"\ncampaign = \"y\"\ntotal = 1\n"
    );
    let out = problems(&text);
    let x = out.find("\"x\"").expect("the first problem");
    let y = out.find("\"y\"").expect("the second problem");
    assert!(x < y, "{out}");
    assert!(out.ends_with("2 problems"), "{out}");
}

#[test]
fn every_example_is_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            scenarios::scenario::load_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            n += 1;
        }
    }
    assert!(n >= 9, "the nine examples are there ({n})");
}

#[test]
fn the_schema_accepts_the_examples_and_refuses_unknown_fields() {
    let schema: serde_json::Value =
        serde_json::from_str(&scenarios::scenario::schema_json()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            let v: serde_json::Value =
                toml::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{}: {errors:?}", p.display());
        }
    }
    let bad: serde_json::Value =
        serde_json::json!({"start": "2026-03-02T08:00:00Z", "colour": "red"});
    assert!(!validator.is_valid(&bad));
    let props = schema["properties"].as_object().unwrap();
    for key in [
        "seed",
        "start",
        "until",
        "key_service",
        "telephony",
        "campaigns",
        "cohorts",
        "deployments",
        "timeline",
        "expect",
    ] {
        assert!(props.contains_key(key), "the schema documents {key}");
    }
}

#[test]
fn the_schema_refuses_unknown_fields_in_timeline_and_expect_entries() {
    let schema: serde_json::Value =
        serde_json::from_str(&scenarios::scenario::schema_json()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let with = |timeline: serde_json::Value, expect: serde_json::Value| {
        serde_json::json!({
            "start": "2026-03-02T08:00:00Z",
            "timeline": [timeline],
            "expect": [expect],
        })
    };
    let step = serde_json::json!({"at": "+1h", "do": "pause", "campaign": "c"});
    let check = serde_json::json!({
        "name": "n", "at": "+2h", "check": "campaign_status", "campaign": "c", "status": "paused"
    });
    assert!(validator.is_valid(&with(step.clone(), check.clone())));
    let mut bad_step = step.clone();
    bad_step["force"] = true.into();
    assert!(
        !validator.is_valid(&with(bad_step, check.clone())),
        "an unknown field of a timeline step"
    );
    let mut bad_check = check;
    bad_check["colour"] = "red".into();
    assert!(
        !validator.is_valid(&with(step, bad_check)),
        "an unknown field of an expectation"
    );
}

#[test]
fn the_check_command_prints_problems_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&good, BASE).unwrap();
    std::fs::write(&bad, BASE.replace("end = \"+1d\"", "end = \"soon\"")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["scenario", "check"])
        .arg(&good)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("good.toml: ok (1 campaign, 1 cohort"),
        "{stdout}"
    );
    assert!(
        stderr.contains("bad.toml:8:7: \"soon\" is not a time"),
        "{stderr}"
    );
    let missing = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["scenario", "check", "/no/such/file.toml"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let schema = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["scenario", "schema"])
        .output()
        .unwrap();
    assert!(schema.status.success());
    let v: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    assert_eq!(v["title"], "Scenario");
}
