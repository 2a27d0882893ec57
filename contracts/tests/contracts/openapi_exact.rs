//! The documents say exactly what the servers check: every reference resolves, every
//! constraint is the constant the validators use, and for bodies at and past every limit the
//! schema and the validator give the same verdict.

use chrono::{DateTime, TimeZone, Utc};
use contracts::domain::{phone, schedule};
use contracts::openapi::{byok_document, platform_document};
use contracts::validate::{self, Options, limits};
use serde_json::{Value, json};

fn walk_refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref" {
                    out.push(x.as_str().expect("a $ref is a string"));
                } else {
                    walk_refs(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| walk_refs(x, out)),
        _ => {}
    }
}

fn committed(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("openapi")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// In the generated documents and in the committed files (which users read).
#[test]
fn every_reference_resolves() {
    for (name, doc) in [
        ("platform", platform_document()),
        ("byok", byok_document()),
        ("platform.json", committed("platform.json")),
        ("byok.json", committed("byok.json")),
    ] {
        let mut refs = Vec::new();
        walk_refs(&doc, &mut refs);
        assert!(!refs.is_empty());
        let broken: Vec<&str> = refs
            .iter()
            .copied()
            .filter(|r| {
                r.strip_prefix('#')
                    .is_none_or(|pointer| doc.pointer(pointer).is_none())
            })
            .collect();
        assert!(
            broken.is_empty(),
            "{name}: unresolved references {broken:?}"
        );
    }
}

#[test]
fn every_link_names_an_operation_and_its_parameters() {
    let doc = platform_document();
    let mut ops = std::collections::BTreeMap::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            let params: Vec<String> = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "path")
                .map(|p| p["name"].as_str().unwrap().to_string())
                .collect();
            ops.insert(op["operationId"].as_str().unwrap().to_string(), params);
        }
    }
    let mut count = 0;
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            for (_, link) in op["responses"]["200"]["links"]
                .as_object()
                .into_iter()
                .flatten()
            {
                let target = link["operationId"].as_str().unwrap();
                let path_params = ops.get(target).unwrap_or_else(|| panic!("no {target}"));
                let mut given: Vec<&String> =
                    link["parameters"].as_object().unwrap().keys().collect();
                given.sort();
                let mut wanted: Vec<&String> = path_params.iter().collect();
                wanted.sort();
                assert_eq!(given, wanted, "link to {target} fills every path parameter");
                count += 1;
            }
        }
    }
    assert!(
        count >= 19,
        "links from every create operation, found {count}"
    );
}

/// A link to a status change carries the change its resource may take next: `pause` or
/// `cancel` after a create, `resume` (or `cancel`) after a pause; and the key service's
/// rotation leads to the decryption of the key it made, under its alias.
#[test]
fn links_carry_the_next_status_and_the_rotated_key() {
    let doc = platform_document();
    let links = |from: &str| -> Value {
        let op = doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|item| item.as_object().unwrap().values())
            .find(|op| op["operationId"] == from)
            .unwrap_or_else(|| panic!("no {from}"));
        op["responses"]["200"]["links"].clone()
    };
    let action = |from: &str, name: &str| links(from)[name]["requestBody"]["action"].clone();
    assert_eq!(action("create_campaign", "PauseCampaign"), json!("pause"));
    assert_eq!(action("create_campaign", "CancelCampaign"), json!("cancel"));
    assert_eq!(
        action("set_campaign_status", "ResumeCampaign"),
        json!("resume")
    );
    assert_eq!(
        action("create_deployment", "PauseDeployment"),
        json!("pause")
    );
    assert_eq!(
        action("set_deployment_status", "ResumeDeployment"),
        json!("resume")
    );
    for (from, name) in [
        ("create_campaign", "PauseCampaign"),
        ("set_campaign_status", "ResumeCampaign"),
        ("create_deployment", "PauseDeployment"),
        ("set_deployment_status", "ResumeDeployment"),
    ] {
        let body = json!({"action": action(from, name)});
        let valid = if from.contains("campaign") {
            validate::campaign_status(&body, Options::default()).is_ok()
        } else {
            validate::deployment_status(&body, Options::default()).is_ok()
        };
        assert!(valid, "{from} {name}: {body}");
    }
    // After a status change the campaign's id is the request's.
    assert_eq!(
        links("set_campaign_status")["GetCampaign"]["parameters"]["campaign_id"],
        json!("$request.path.campaign_id")
    );

    let byok = byok_document();
    let decrypt = &byok["paths"]["/{partner}/byok/v1/rotate-key"]["post"]["responses"]["200"]["links"]
        ["DecryptRotatedKey"];
    assert_eq!(decrypt["operationId"], "byok_decrypt_key");
    assert_eq!(
        decrypt["parameters"],
        json!({"partner": "$request.path.partner"})
    );
    assert_eq!(
        decrypt["requestBody"],
        json!({"data": {"key_alias": "$response.body#/data/key_alias",
                        "encrypted_key": "$response.body#/data/encrypted_dek"}})
    );
}

fn at(doc: &Value, pointer: &str) -> Value {
    doc.pointer(pointer)
        .unwrap_or_else(|| panic!("no {pointer}"))
        .clone()
}

fn prop(schema: &str, property: &str) -> String {
    format!("/components/schemas/{schema}/properties/{property}")
}

/// Each schema constraint read back and compared with the constant the validators use: a
/// changed limit changes the generated document (and so the committed one).
#[test]
fn constraints_are_the_validators_constants() {
    use limits::*;
    let doc = platform_document();
    let checks: Vec<(String, &str, Value)> = vec![
        (
            prop("DeploymentCreateRequest", "name"),
            "maxLength",
            json!(NAME_MAX_CHARS),
        ),
        (
            prop("DeploymentCreateRequest", "name"),
            "pattern",
            json!(NAME_PATTERN),
        ),
        (
            prop("CampaignCreateRequest", "name"),
            "pattern",
            json!(NAME_PATTERN),
        ),
        (
            prop("CohortStreamRequest", "name"),
            "pattern",
            json!(NAME_PATTERN),
        ),
        (
            prop("CohortUploadForm", "name"),
            "pattern",
            json!(NAME_PATTERN),
        ),
        (
            prop("CampaignPatchRequest", "name"),
            "maxLength",
            json!(NAME_MAX_CHARS),
        ),
        (
            prop("DeploymentPatchRequest", "name"),
            "maxLength",
            json!(NAME_MAX_CHARS),
        ),
        (
            prop("CampaignCreateRequest", "description"),
            "maxLength",
            json!(DESCRIPTION_MAX_CHARS),
        ),
        (
            prop("CampaignPatchRequest", "description"),
            "maxLength",
            json!(DESCRIPTION_MAX_CHARS),
        ),
        (
            prop("DeploymentCreateRequest", "description"),
            "maxLength",
            json!(DESCRIPTION_MAX_CHARS),
        ),
        (
            prop("DeploymentPatchRequest", "description"),
            "maxLength",
            json!(DESCRIPTION_MAX_CHARS),
        ),
        (
            prop("CampaignCreateRequest", "description"),
            "pattern",
            json!(limits::NO_NUL_PATTERN),
        ),
        (
            prop("CampaignPatchRequest", "description"),
            "pattern",
            json!(limits::NO_NUL_PATTERN),
        ),
        (
            prop("DeploymentCreateRequest", "description"),
            "pattern",
            json!(limits::NO_NUL_PATTERN),
        ),
        (
            prop("DeploymentPatchRequest", "description"),
            "pattern",
            json!(limits::NO_NUL_PATTERN),
        ),
        (
            prop("CampaignAppConfigRequest", "attempts_per_second"),
            "minimum",
            json!(RATE_MIN),
        ),
        (
            prop("CampaignAppConfigRequest", "attempts_per_second"),
            "maximum",
            json!(RATE_MAX),
        ),
        (
            prop("CampaignAppConfigPatch", "attempts_per_second"),
            "maximum",
            json!(RATE_MAX),
        ),
        (
            prop("RetryConfigRequest", "threshold_seconds"),
            "minimum",
            json!(THRESHOLD_MIN),
        ),
        (
            prop("RetryConfigRequest", "threshold_seconds"),
            "maximum",
            json!(THRESHOLD_MAX),
        ),
        (
            prop("ShortDurationToggle", "threshold_seconds"),
            "maximum",
            json!(THRESHOLD_MAX),
        ),
        (
            prop("RetryConfigRequest", "max_retries"),
            "maximum",
            json!(MAX_RETRIES_MAX),
        ),
        (
            prop("RetryConfigRequest", "retry_interval_minutes"),
            "minimum",
            json!(RETRY_INTERVAL_MIN),
        ),
        (
            prop("RetryConfigRequest", "retry_interval_minutes"),
            "maximum",
            json!(RETRY_INTERVAL_MAX),
        ),
        (
            prop("CampaignConnectionConfig", "weight"),
            "minimum",
            json!(WEIGHT_MIN),
        ),
        (
            prop("CampaignConnectionConfig", "weight"),
            "maximum",
            json!(WEIGHT_MAX),
        ),
        (
            prop("OutboundAppConfig", "app_version"),
            "minimum",
            json!(APP_VERSION_MIN),
        ),
        (
            prop("CampaignAppConfigRequest", "app_version"),
            "minimum",
            json!(APP_VERSION_MIN),
        ),
        (
            prop("DeploymentCreateRequest", "app_version"),
            "minimum",
            json!(APP_VERSION_MIN),
        ),
        (
            prop("DeploymentPatchRequest", "app_version"),
            "minimum",
            json!(APP_VERSION_MIN),
        ),
        (
            prop("DeploymentCreateRequest", "connection_configs"),
            "minItems",
            json!(CONNECTION_CONFIGS_MIN),
        ),
        (
            prop("CampaignAppConfigRequest", "connection_configs"),
            "minItems",
            json!(CONNECTION_CONFIGS_MIN),
        ),
        (
            prop("CohortStreamRequest", "users"),
            "minItems",
            json!(STREAM_USERS_MIN),
        ),
        (
            prop("CohortStreamRequest", "users"),
            "maxItems",
            json!(STREAM_USERS_MAX),
        ),
        (
            prop("AllowedSchedule", "allowed_days"),
            "maxItems",
            json!(WEEKDAYS_MAX),
        ),
        (
            prop("InboundConfig", "allowed_days"),
            "maxItems",
            json!(WEEKDAYS_MAX),
        ),
        (
            prop("ClockAdvanceRequest", "seconds"),
            "maximum",
            json!(CLOCK_MOVE_MAX_SECS as f64),
        ),
        (
            prop("UserConfig", "user_phone_number"),
            "pattern",
            json!(phone::e164_pattern()),
        ),
        (
            prop("InboundCallRequest", "caller"),
            "pattern",
            json!(phone::e164_pattern()),
        ),
        (
            prop("InboundConfig", "start_time"),
            "pattern",
            json!(schedule::TIME_OF_DAY_PATTERN),
        ),
        (
            prop("AllowedSchedule", "allowed_end_time"),
            "pattern",
            json!(schedule::TIME_OF_DAY_PATTERN),
        ),
        (
            prop("CohortStreamRequest", "country_code"),
            "pattern",
            json!(phone::region_pattern()),
        ),
    ];
    for (pointer, keyword, expected) in checks {
        assert_eq!(at(&doc, &pointer)[keyword], expected, "{pointer}/{keyword}");
    }
    let zones: Vec<&str> = schedule::timezone_names().collect();
    assert_eq!(at(&doc, "/components/schemas/TimeZone/enum"), json!(zones));
    let mut lists = 0;
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                match p["name"].as_str().unwrap() {
                    "limit" => {
                        lists += 1;
                        assert_eq!(p["schema"]["minimum"], json!(LIST_LIMIT_MIN));
                        assert_eq!(p["schema"]["maximum"], json!(LIST_LIMIT_MAX));
                    }
                    "offset" => assert_eq!(p["schema"]["minimum"], json!(LIST_OFFSET_MIN)),
                    "search" => {
                        assert_eq!(p["schema"]["maxLength"], json!(LIST_SEARCH_MAX_CHARS))
                    }
                    _ => {}
                }
            }
        }
    }
    assert_eq!(
        lists, 9,
        "every list operation: the interface's six, the journal, the fault rules and the key service's calls"
    );
}

fn schema_validator(doc: &Value, schema: &str) -> jsonschema::Validator {
    let mut root = doc.clone();
    root["$ref"] = json!(format!("#/components/schemas/{schema}"));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&root)
        .unwrap_or_else(|e| panic!("{schema}: {e}"))
}

/// Sets `value` at the JSON pointer `pointer` of a copy of `base` (`null` stays `null`;
/// `Value::Null` with key `~` removes the field).
fn with(base: &Value, pointer: &str, value: Value) -> Value {
    let mut v = base.clone();
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let parent = v
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("no {parent}"));
    match parent {
        Value::Object(m) if value == json!("~absent") => {
            m.remove(key);
        }
        Value::Object(m) => {
            m.insert(key.to_string(), value);
        }
        Value::Array(a) => a[key.parse::<usize>().unwrap()] = value,
        _ => panic!("{pointer}: not a container"),
    }
    v
}

/// Asserts that the schema and the validator agree on `base` with each change, and that
/// each change gets the verdict given (so the cases test both sides of each limit).
fn agree(
    schema: &str,
    base: &Value,
    cases: &[(&str, Value, bool)],
    server: impl Fn(&Value) -> bool,
) {
    let doc = platform_document();
    let v = schema_validator(&doc, schema);
    assert!(v.is_valid(base), "{schema}: the base body fits the schema");
    assert!(server(base), "{schema}: the server takes the base body");
    for (pointer, value, ok) in cases {
        let body = with(base, pointer, value.clone());
        assert_eq!(server(&body), *ok, "{schema} server, {pointer} = {value}");
        let errors: Vec<String> = v.iter_errors(&body).map(|e| e.to_string()).collect();
        assert_eq!(
            errors.is_empty(),
            *ok,
            "{schema} schema, {pointer} = {value}: {errors:?}"
        );
    }
}

fn s(n: usize) -> Value {
    json!("a".repeat(n))
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 2, 8, 0, 0).unwrap()
}

fn phone_cases(pointer: &str) -> Vec<(String, Value, bool)> {
    [
        ("+1415555", true),
        ("+141555", false),
        ("+141555501001234", true),
        ("+1415555010012345", false),
        ("+04155550100", false),
        ("14155550100", false),
        ("+1 415 555 0100", false),
        ("", false),
    ]
    .into_iter()
    .map(|(p, ok)| (pointer.to_string(), json!(p), ok))
    .collect()
}

fn owned(cases: &[(String, Value, bool)]) -> Vec<(&str, Value, bool)> {
    cases
        .iter()
        .map(|(p, v, ok)| (p.as_str(), v.clone(), *ok))
        .collect()
}

fn deployment_body() -> Value {
    json!({
        "name": "Front desk-1",
        "app_id": "app-1",
        "app_version": 1,
        "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550100"]}],
        "inbound_config": {"start_time": "09:00", "end_time": "17:00", "allowed_days": ["Monday"], "timezone": "America/New_York"},
    })
}

#[test]
fn deployment_bodies_agree_with_the_validator() {
    let base = deployment_body();
    let mut cases = vec![
        ("/name", s(limits::NAME_MAX_CHARS), true),
        ("/name", s(limits::NAME_MAX_CHARS + 1), false),
        ("/name", json!(""), false),
        ("/name", json!("a!b"), false),
        ("/name", json!(null), false),
        ("/description", s(limits::DESCRIPTION_MAX_CHARS), true),
        ("/description", s(limits::DESCRIPTION_MAX_CHARS + 1), false),
        ("/description", json!(null), true),
        ("/description", json!("a\u{0}b"), false),
        ("/app_id", json!(""), false),
        ("/app_id", json!("app\u{0}1"), false),
        (
            "/connection_configs/0/connection_id",
            json!("c\u{0}"),
            false,
        ),
        ("/app_version", json!(0), false),
        ("/app_version", json!(2.0), true),
        ("/app_version", json!(1.5), false),
        ("/app_version", json!(i64::MAX), true),
        ("/connection_configs", json!([]), false),
        ("/connection_configs/0/connection_id", json!(""), false),
        ("/connection_configs/0/phone_numbers", json!([]), false),
        (
            "/connection_configs/0/phone_numbers",
            json!(["+14155550100", "+14155550100"]),
            false,
        ),
        ("/inbound_config", json!(null), true),
        ("/inbound_config/start_time", json!("23:59"), true),
        ("/inbound_config/start_time", json!("00:00"), true),
        ("/inbound_config/start_time", json!("24:00"), false),
        ("/inbound_config/start_time", json!("9:00"), false),
        ("/inbound_config/start_time", json!("09:60"), false),
        ("/inbound_config/timezone", json!("UTC"), true),
        ("/inbound_config/timezone", json!("utc"), false),
        (
            "/inbound_config/timezone",
            json!("Mars/Olympus_Mons"),
            false,
        ),
        ("/inbound_config/allowed_days", json!([]), false),
        (
            "/inbound_config/allowed_days",
            json!(vec!["Friday"; limits::WEEKDAYS_MAX]),
            true,
        ),
        (
            "/inbound_config/allowed_days",
            json!(vec!["Friday"; limits::WEEKDAYS_MAX + 1]),
            false,
        ),
        ("/inbound_config/allowed_days", json!(["Funday"]), false),
    ];
    let phones = phone_cases("/connection_configs/0/phone_numbers/0");
    cases.extend(owned(&phones));
    agree("DeploymentCreateRequest", &base, &cases, |b| {
        validate::deployment_create(b, Options::default()).is_ok()
    });
}

#[test]
fn deployment_patches_agree_with_the_validator() {
    let current = validate::deployment_create(&deployment_body(), Options::default()).unwrap();
    let base = json!({"app_version": 2});
    let cases = [
        ("/name", json!(null), false),
        ("/name", json!("New name"), true),
        ("/description", json!(null), true),
        ("/inbound_config", json!(null), true),
        ("/app_version", json!(null), false),
        ("/app_version", json!(0), false),
        ("/connection_configs", json!(null), false),
        ("/connection_configs", json!([]), false),
        ("/app_id", json!(null), false),
        ("/app_id", json!("app-1"), true),
    ];
    agree("DeploymentPatchRequest", &base, &cases, |b| {
        validate::deployment_patch(b, &current, Options::default()).is_ok()
    });
}

fn campaign_body() -> Value {
    json!({
        "name": "Spring",
        "start_timestamp": "2026-03-02T09:00:00Z",
        "end_timestamp": "2026-03-09T09:00:00Z",
        "allowed_schedule": {"timezone": "UTC", "allowed_days": ["Monday"], "allowed_start_time": "09:00", "allowed_end_time": "17:00"},
        "app_config": {
            "app_id": "app-1",
            "app_version": 1,
            "attempts_per_second": 1.0,
            "connection_configs": [{"connection_id": "c", "phone_numbers": ["+14155550100"], "weight": 1}],
            "retry_config": {"max_retries": 1, "retry_on": ["busy"], "threshold_seconds": 10},
            "webhook_config": {"url": "https://hooks.example.com/x"},
        },
    })
}

#[test]
fn campaign_bodies_agree_with_the_validator() {
    use limits::*;
    let base = campaign_body();
    let cases = [
        ("/app_config/attempts_per_second", json!(RATE_MIN), true),
        (
            "/app_config/attempts_per_second",
            json!(RATE_MIN - 0.01),
            false,
        ),
        ("/app_config/attempts_per_second", json!(RATE_MAX), true),
        (
            "/app_config/attempts_per_second",
            json!(RATE_MAX + 0.01),
            false,
        ),
        ("/app_config/app_type", json!(null), true),
        ("/app_config/app_type", json!("bot"), false),
        ("/app_config/app_id", json!("app\u{0}"), false),
        (
            "/app_config/connection_configs/0/connection_id",
            json!("\u{0}c"),
            false,
        ),
        (
            "/app_config/connection_configs/0/weight",
            json!(WEIGHT_MIN - 1),
            false,
        ),
        (
            "/app_config/connection_configs/0/weight",
            json!(WEIGHT_MAX),
            true,
        ),
        (
            "/app_config/connection_configs/0/weight",
            json!(WEIGHT_MAX + 1),
            false,
        ),
        (
            "/app_config/retry_config/max_retries",
            json!(MAX_RETRIES_MAX),
            true,
        ),
        (
            "/app_config/retry_config/max_retries",
            json!(MAX_RETRIES_MAX + 1),
            false,
        ),
        ("/app_config/retry_config/max_retries", json!(null), true),
        (
            "/app_config/retry_config/threshold_seconds",
            json!(THRESHOLD_MIN - 1),
            false,
        ),
        (
            "/app_config/retry_config/threshold_seconds",
            json!(THRESHOLD_MAX),
            true,
        ),
        (
            "/app_config/retry_config/threshold_seconds",
            json!(THRESHOLD_MAX + 1),
            false,
        ),
        (
            "/app_config/retry_config/retry_interval_minutes",
            json!(RETRY_INTERVAL_MIN - 1),
            false,
        ),
        (
            "/app_config/retry_config/retry_interval_minutes",
            json!(RETRY_INTERVAL_MAX),
            true,
        ),
        (
            "/app_config/retry_config/retry_interval_minutes",
            json!(RETRY_INTERVAL_MAX + 1),
            false,
        ),
        (
            "/app_config/retry_config/retry_on",
            json!({"busy": {"enabled": true}}),
            true,
        ),
        (
            "/app_config/retry_config/retry_on",
            json!({"busy": null}),
            false,
        ),
        (
            "/app_config/retry_config/retry_on",
            json!({"voicemail": {"enabled": true}}),
            false,
        ),
        (
            "/app_config/retry_config/retry_on",
            json!(["busy", "busy"]),
            true,
        ),
        ("/app_config/retry_config/retry_on", json!(["maybe"]), false),
        ("/app_config/retry_config", json!(null), true),
        ("/app_config/webhook_config", json!(null), true),
        (
            "/app_config/webhook_config/url",
            json!("http://127.0.0.1:8080/hooks?a=b"),
            true,
        ),
        (
            "/app_config/webhook_config/url",
            json!("HTTPS://hooks.example.com"),
            true,
        ),
        (
            "/app_config/webhook_config/url",
            json!("ftp://hooks.example.com/x"),
            false,
        ),
        (
            "/app_config/webhook_config/url",
            json!("hooks.example.com"),
            false,
        ),
        ("/app_config/webhook_config/url", json!("http://"), false),
        ("/app_config/webhook_config/metadata", json!({"k": 1}), true),
        ("/app_config/webhook_config/metadata", json!([1]), false),
        ("/allowed_schedule/allowed_start_time", json!("7:00"), false),
        ("/description", s(DESCRIPTION_MAX_CHARS + 1), false),
        ("/description", json!(null), true),
        ("/description", json!("a\u{0}b"), false),
    ];
    agree("CampaignCreateRequest", &base, &cases, |b| {
        validate::campaign_create(b, now(), Options::default()).is_ok()
    });
}

/// A calling window whose end equals its start: the schema cannot refuse it (two fields at
/// once), so the description says what the validator does (422), and the validator does
/// it; an end before the start is an overnight window, for both.
#[test]
fn an_end_time_equal_to_the_start_is_refused_as_the_documents_say() {
    let doc = platform_document();
    for (schema, property) in [
        ("AllowedSchedule", "allowed_end_time"),
        ("InboundConfig", "end_time"),
    ] {
        let text = at(&doc, &format!("{}/description", prop(schema, property)));
        let text = text.as_str().unwrap().replace('\n', " ");
        assert!(
            text.contains("qual to the start is refused") && !text.contains("or equal"),
            "{schema}.{property}: {text}"
        );
    }
    let with_end = |end: &str| {
        with(
            &campaign_body(),
            "/allowed_schedule/allowed_end_time",
            json!(end),
        )
    };
    let refused = validate::campaign_create(&with_end("09:00"), now(), Options::default())
        .expect_err("an end equal to the start");
    let text = refused.to_string();
    assert!(text.contains("starts and ends at 09:00"), "{text}");
    validate::campaign_create(&with_end("06:00"), now(), Options::default())
        .expect("an end before the start: overnight");
    let deployment = with(
        &deployment_body(),
        "/inbound_config/end_time",
        json!("09:00"),
    );
    assert!(validate::deployment_create(&deployment, Options::default()).is_err());
}

#[test]
fn campaign_patches_agree_with_the_validator() {
    let current = validate::campaign_create(&campaign_body(), now(), Options::default()).unwrap();
    let base = json!({"name": "Renamed"});
    let cases = [
        ("/name", json!(null), false),
        ("/description", json!(null), true),
        ("/end_timestamp", json!(null), false),
        ("/end_timestamp", json!("2026-03-10T09:00:00Z"), true),
        ("/allowed_schedule", json!(null), false),
        ("/app_config", json!(null), false),
        ("/app_config", json!({"webhook_config": null}), true),
        ("/app_config", json!({"retry_config": null}), false),
        ("/app_config", json!({"app_version": null}), false),
        ("/app_config", json!({"app_id": "app-1"}), true),
        ("/app_config", json!({"app_type": null}), false),
        ("/start_timestamp", json!("2026-03-02T09:00:00Z"), true),
        ("/start_timestamp", json!(null), false),
    ];
    agree("CampaignPatchRequest", &base, &cases, |b| {
        validate::campaign_patch(b, now(), &current, Options::default()).is_ok()
    });
}

#[test]
fn outbound_bodies_agree_with_the_validator() {
    let base = json!({
        "app_config": {"app_id": "a", "app_version": 1, "connection_config": {"connection_id": "c", "agent_phone_number": "+14155550100"}},
        "user_config": {"user_phone_number": "+14155550101"},
    });
    let mut cases = vec![
        (
            "/app_config/app_overrides",
            json!({"initial_bot_message": null}),
            true,
        ),
        ("/app_config/agent_variables", json!(null), true),
        ("/app_config/agent_variables", json!("x"), false),
        ("/webhook_config", json!(null), true),
    ];
    let phones = phone_cases("/user_config/user_phone_number");
    cases.extend(owned(&phones));
    let agents = phone_cases("/app_config/connection_config/agent_phone_number");
    cases.extend(owned(&agents));
    agree("OutboundRequest", &base, &cases, |b| {
        validate::outbound_request(b, Options::default()).is_ok()
    });
}

#[test]
fn cohort_bodies_agree_with_the_validator() {
    use limits::*;
    let user = json!({"phone_number": "9876543210"});
    let base = json!({"name": "Batch", "country_code": "IN", "users": [user]});
    let cases = [
        ("/users", json!(vec![user.clone(); STREAM_USERS_MAX]), true),
        (
            "/users",
            json!(vec![user.clone(); STREAM_USERS_MAX + 1]),
            false,
        ),
        ("/users", json!([]), false),
        ("/country_code", json!("in"), true),
        ("/country_code", json!("+91"), true),
        ("/country_code", json!("1"), true),
        ("/country_code", json!("1234"), false),
        ("/country_code", json!("ZZ"), false),
        ("/country_code", json!("+"), false),
        ("/country_code", json!(null), true),
        ("/cohort_category", json!(null), true),
        ("/cohort_category", json!("stop_file"), true),
        ("/cohort_category", json!("other"), false),
        (
            "/users/0/app_overrides",
            json!({"initial_language_name": "hi"}),
            true,
        ),
        ("/users/0/app_variables", json!(null), true),
    ];
    agree("CohortStreamRequest", &base, &cases, |b| {
        validate::cohort_stream(b, Options::default()).is_ok()
    });
    let base = json!({"phone_number": {"column_name": "phone"}});
    let cases = [
        ("/phone_number/column_name", json!(""), false),
        ("/phone_number/country_code", json!("us"), true),
        ("/phone_number/country_code", json!("USA"), false),
        ("/app_variables", json!(null), true),
        ("/app_variables", json!({"": {"column_name": "x"}}), false),
        (
            "/app_variables",
            json!({"first": {"column_name": "x", "required": null}}),
            true,
        ),
        (
            "/user_identifier",
            json!({"column_name": "id", "required": true}),
            true,
        ),
        (
            "/app_overrides",
            json!({"initial_bot_message": null}),
            false,
        ),
    ];
    let loc = contracts::error::Loc::body();
    agree("TransformationConfig", &base, &cases, |b| {
        validate::transformation_config(b, &loc, Options::default()).is_ok()
    });
}

#[test]
fn clock_bodies_agree_with_the_validator() {
    let base = json!({"seconds": 60});
    let max = limits::CLOCK_MOVE_MAX_SECS as f64;
    let cases = [
        ("/seconds", json!(0), true),
        ("/seconds", json!(-0.5), false),
        ("/seconds", json!(max), true),
        ("/seconds", json!(max + 1.0), false),
        ("/seconds", json!("~absent"), false),
        ("/seconds", json!(null), false),
        ("/to", json!("2026-03-02T12:00:00Z"), false),
        ("/to", json!(null), true),
    ];
    agree("ClockAdvanceRequest", &base, &cases, |b| {
        validate::sim::clock_advance(b, Options::default()).is_ok()
    });
    let base = json!({"to": "2026-03-02T12:00:00Z"});
    let cases = [
        ("/seconds", json!(null), true),
        ("/to", json!("soon"), false),
        ("/to", json!(null), false),
    ];
    agree("ClockAdvanceRequest", &base, &cases, |b| {
        validate::sim::clock_advance(b, Options::default()).is_ok()
    });
}

/// The list query parameters: each value as the schema reads it (an integer, a string) and as
/// the server reads the query string.
#[test]
fn list_queries_agree_with_the_validator() {
    let doc = platform_document();
    let op = &doc["paths"]["/api/app-authoring/v1/orgs/{org_id}/workspaces/{workspace_id}/deployments"]
        ["get"];
    let schema = |name: &str| {
        let p = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap();
        let mut root = doc.clone();
        root["$ref"] = json!("#/x");
        root["x"] = p["schema"].clone();
        jsonschema::draft202012::new(&root).unwrap()
    };
    let cases: Vec<(&str, Value, bool)> = vec![
        ("limit", json!(limits::LIST_LIMIT_MIN - 1), false),
        ("limit", json!(limits::LIST_LIMIT_MIN), true),
        ("limit", json!(limits::LIST_LIMIT_MAX), true),
        ("limit", json!(limits::LIST_LIMIT_MAX + 1), false),
        ("offset", json!(-1), false),
        ("offset", json!(0), true),
        ("offset", json!(i64::MAX), true),
        ("search", s(limits::LIST_SEARCH_MAX_CHARS), true),
        ("search", s(limits::LIST_SEARCH_MAX_CHARS + 1), false),
        ("search", json!("a\u{0}b"), false),
        ("sort_by", json!("name"), true),
        ("sort_by", json!("phone"), false),
        ("sort_order", json!("asc"), true),
        ("sort_order", json!("ASC"), false),
    ];
    for (name, value, ok) in cases {
        let raw = match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let server = validate::deployment_list_query(&[(name.to_string(), raw)]).is_ok();
        assert_eq!(server, ok, "server, {name} = {value}");
        assert_eq!(
            schema(name).is_valid(&value),
            ok,
            "schema, {name} = {value}"
        );
    }
}

/// Every example of a component fits its schema, and the platform's validator takes the
/// request examples (at the walkthrough's time, 2026-03-02T08:00:00Z).
#[test]
fn examples_fit_their_schemas_and_the_validators() {
    let doc = platform_document();
    let mut seen = 0;
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        for example in schema["examples"].as_array().into_iter().flatten() {
            let errors: Vec<String> = schema_validator(&doc, name)
                .iter_errors(example)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{name} example: {errors:?}");
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen} examples");
    let example = |name: &str| doc["components"]["schemas"][name]["examples"][0].clone();
    let o = Options::default();
    validate::campaign_create(&example("CampaignCreateRequest"), now(), o).unwrap();
    validate::deployment_create(&example("DeploymentCreateRequest"), o).unwrap();
    validate::outbound_request(&example("OutboundRequest"), o).unwrap();
    validate::cohort_stream(&example("CohortStreamRequest"), o).unwrap();
    validate::sim::clock_advance(&example("ClockAdvanceRequest"), o).unwrap();
}

/// The document's `encrypted_key` accepts a `byok:v1:` text exactly when the envelope parser
/// reads it (every body length around the minimum, and bodies that are not base64), so a
/// generator that keeps to the schema never meets a 400 for a short or malformed key.
#[test]
fn the_encrypted_key_schema_is_the_envelope_parser() {
    use base64::Engine;
    use contracts::envelope::{MIN_BODY_LEN, PREFIX, parse};
    let doc = byok_document();
    let validator = schema_validator(&doc, "DecryptKeyData");
    let body = |key: &str| json!({"key_alias": "k", "encrypted_key": key});
    let mut texts: Vec<String> = (0..=MIN_BODY_LEN + 8)
        .map(|n| {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            format!(
                "{PREFIX}{}",
                base64::engine::general_purpose::STANDARD.encode(bytes)
            )
        })
        .collect();
    let long = texts.last().unwrap().clone();
    texts.extend([
        long.trim_end_matches('=').to_string(),
        format!("{long}="),
        long.replace('A', "-"),
        long.replacen(PREFIX, "byok:v2:", 1),
        long[PREFIX.len()..].to_string(),
    ]);
    for text in texts {
        assert_eq!(
            validator.is_valid(&body(&text)),
            parse(&text).is_ok(),
            "{text:?}: {:?}",
            parse(&text).err()
        );
    }
}
