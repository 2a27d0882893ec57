//! What the derive cannot take from the types, added to the generated document:
//!
//! - **Constraints** from the constants the validators use ([`limits`], the patterns of
//!   [`phone`] and [`schedule`]): lengths, ranges, item counts, patterns, the time-zone names.
//!   A rule whose schema or property is missing panics, so a renamed field cannot silently
//!   lose its constraint (the document tests generate every document).
//! - **Shared answers**: 400, 408, 414 and 431 of the HTTP layer on every operation, 401 on
//!   every operation that takes `X-API-Key`, 413 and 415 on every operation with a body, 502
//!   and 503 on the operations that need the workspace's data key.
//! - **Headers** of the key service's answers, and **links** from the operations whose answer
//!   names a resource (a create, a status change, a key rotation) to those that read, change
//!   or delete it, with the body of the status change it may take next.
//!
//! What no schema can say (a start time relative to the clock, a rule between two fields) is
//! in the descriptions, and listed in `docs/interface.md`.

use serde_json::{Value, json};

use super::edit::{error_answer, merge, operations, set, sort_by_status};
use crate::domain::{phone, schedule};
use crate::validate::limits;

/// Refines the platform document.
pub(super) fn platform(doc: &mut Value) {
    platform_constraints(doc);
    time_zone_component(doc);
    parameters(doc);
    shared_answers(doc);
    cohort_files(doc);
    upload_form(doc);
    super::sim_refine::apply(doc);
    super::links::platform(doc);
    super::examples::platform(doc);
}

/// Refines the key service's document.
pub(super) fn byok(doc: &mut Value) {
    super::byok_refine::apply(doc);
    super::links::byok(doc);
}

// ----- constraint fragments, each from one constant -----

fn non_empty() -> Value {
    json!({"minLength": 1, "pattern": limits::NO_NUL_PATTERN})
}

fn name() -> Value {
    json!({"pattern": limits::NAME_PATTERN, "minLength": 1, "maxLength": limits::NAME_MAX_CHARS})
}

fn description() -> Value {
    json!({"maxLength": limits::DESCRIPTION_MAX_CHARS, "pattern": limits::NO_NUL_PATTERN})
}

fn e164() -> Value {
    json!({"pattern": phone::e164_pattern()})
}

fn phone_list() -> Value {
    json!({"minItems": 1, "uniqueItems": true, "items": {"type": "string", "pattern": phone::e164_pattern()}})
}

fn time_of_day() -> Value {
    json!({"pattern": schedule::TIME_OF_DAY_PATTERN})
}

fn days() -> Value {
    json!({"minItems": 1, "maxItems": limits::WEEKDAYS_MAX})
}

fn time_zone() -> Value {
    json!({"$ref": "#/components/schemas/TimeZone"})
}

fn region() -> Value {
    json!({"pattern": phone::region_pattern()})
}

fn app_version() -> Value {
    json!({"minimum": limits::APP_VERSION_MIN, "maximum": i64::MAX})
}

fn range<T: Into<Value>>(min: T, max: T) -> Value {
    json!({"minimum": min.into(), "maximum": max.into()})
}

fn at_least(n: usize) -> Value {
    json!({"minItems": n})
}

/// An `http`/`https` URL with a host name (a letter in its last label) or an IPv4 address,
/// an optional port and any printable path: the part of what the server accepts (WHATWG URL
/// parsing) that a pattern can state without refusing common addresses.
pub(crate) const WEBHOOK_URL_PATTERN: &str = concat!(
    r"^[Hh][Tt][Tt][Pp][Ss]?://",
    r"(([A-Za-z0-9-]+\.)*[A-Za-z][A-Za-z0-9-]*|",
    r"((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9]))",
    r"(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?",
    r"([/?#][!-~]*)?$"
);

fn url() -> Value {
    json!({"pattern": WEBHOOK_URL_PATTERN})
}

// ----- applying fragments -----

/// Makes an optional property that refuses `null` non-nullable: `["string", "null"]` becomes
/// `"string"`, `oneOf: [X, {"type": "null"}]` becomes `X`.
pub(super) fn not_null(doc: &mut Value, schema: &str, property: &str) {
    let p = format!("/components/schemas/{schema}/properties/{property}");
    let target = doc
        .pointer_mut(&p)
        .unwrap_or_else(|| panic!("no {p} in the document"));
    let t = target.as_object_mut().expect("a schema object");
    if let Some(Value::Array(types)) = t.get("type") {
        let rest: Vec<Value> = types.iter().filter(|v| *v != "null").cloned().collect();
        t.insert(
            "type".into(),
            if rest.len() == 1 {
                rest[0].clone()
            } else {
                Value::Array(rest)
            },
        );
    } else if let Some(Value::Array(options)) = t.get("oneOf").cloned() {
        let mut rest: Vec<Value> = options
            .into_iter()
            .filter(|o| o != &json!({"type": "null"}))
            .collect();
        assert_eq!(rest.len(), 1, "{p}: one schema besides null");
        t.remove("oneOf");
        let Value::Object(inner) = rest.remove(0) else {
            panic!("{p}: a schema object")
        };
        for (k, v) in inner {
            t.entry(k).or_insert(v);
        }
    } else {
        panic!("{p} is not nullable");
    }
}

/// Lets a property be `null` too.
fn nullable(doc: &mut Value, schema: &str, property: &str) {
    let p = format!("/components/schemas/{schema}/properties/{property}");
    let t = doc.pointer_mut(&p).unwrap_or_else(|| panic!("no {p}"));
    match t.get("type").cloned() {
        Some(Value::String(ty)) => t["type"] = json!([ty, "null"]),
        other => panic!("{p}: a single type expected, found {other:?}"),
    }
}

fn platform_constraints(doc: &mut Value) {
    use limits::*;
    let rules: Vec<(&str, &str, Value)> = vec![
        // Instant outbound
        ("OutboundAppConfig", "/properties/app_id", non_empty()),
        (
            "OutboundAppConfig",
            "/properties/app_version",
            app_version(),
        ),
        (
            "OutboundConnectionConfig",
            "/properties/connection_id",
            non_empty(),
        ),
        (
            "OutboundConnectionConfig",
            "/properties/agent_phone_number",
            e164(),
        ),
        ("UserConfig", "/properties/user_phone_number", e164()),
        ("WebhookConfig", "/properties/url", url()),
        // Campaigns
        ("CampaignCreateRequest", "/properties/name", name()),
        (
            "CampaignCreateRequest",
            "/properties/description",
            description(),
        ),
        ("AllowedSchedule", "/properties/timezone", time_zone()),
        ("AllowedSchedule", "/properties/allowed_days", days()),
        (
            "AllowedSchedule",
            "/properties/allowed_start_time",
            time_of_day(),
        ),
        (
            "AllowedSchedule",
            "/properties/allowed_end_time",
            time_of_day(),
        ),
        (
            "CampaignAppConfigRequest",
            "/properties/app_id",
            non_empty(),
        ),
        (
            "CampaignAppConfigRequest",
            "/properties/app_version",
            app_version(),
        ),
        (
            "CampaignAppConfigRequest",
            "/properties/attempts_per_second",
            range(RATE_MIN, RATE_MAX),
        ),
        (
            "CampaignAppConfigRequest",
            "/properties/connection_configs",
            at_least(CONNECTION_CONFIGS_MIN),
        ),
        (
            "CampaignConnectionConfig",
            "/properties/connection_id",
            non_empty(),
        ),
        (
            "CampaignConnectionConfig",
            "/properties/phone_numbers",
            phone_list(),
        ),
        (
            "CampaignConnectionConfig",
            "/properties/weight",
            range(WEIGHT_MIN, WEIGHT_MAX),
        ),
        (
            "RetryConfigRequest",
            "/properties/max_retries",
            range(0, MAX_RETRIES_MAX),
        ),
        (
            "RetryConfigRequest",
            "/properties/threshold_seconds",
            range(THRESHOLD_MIN, THRESHOLD_MAX),
        ),
        (
            "RetryConfigRequest",
            "/properties/retry_interval_minutes",
            range(RETRY_INTERVAL_MIN, RETRY_INTERVAL_MAX),
        ),
        (
            "ShortDurationToggle",
            "/properties/threshold_seconds",
            range(THRESHOLD_MIN, THRESHOLD_MAX),
        ),
        ("RetryOnObject", "", json!({"additionalProperties": false})),
        ("CampaignPatchRequest", "/properties/name", name()),
        (
            "CampaignPatchRequest",
            "/properties/description",
            description(),
        ),
        (
            "CampaignAppConfigPatch",
            "/properties/app_version",
            app_version(),
        ),
        (
            "CampaignAppConfigPatch",
            "/properties/attempts_per_second",
            range(RATE_MIN, RATE_MAX),
        ),
        (
            "CampaignAppConfigPatch",
            "/properties/connection_configs",
            at_least(CONNECTION_CONFIGS_MIN),
        ),
        // Deployments
        ("DeploymentCreateRequest", "/properties/name", name()),
        ("DeploymentCreateRequest", "/properties/app_id", non_empty()),
        (
            "DeploymentCreateRequest",
            "/properties/app_version",
            app_version(),
        ),
        (
            "DeploymentCreateRequest",
            "/properties/connection_configs",
            at_least(CONNECTION_CONFIGS_MIN),
        ),
        (
            "DeploymentCreateRequest",
            "/properties/description",
            description(),
        ),
        (
            "DeploymentConnectionConfig",
            "/properties/connection_id",
            non_empty(),
        ),
        (
            "DeploymentConnectionConfig",
            "/properties/phone_numbers",
            phone_list(),
        ),
        ("InboundConfig", "/properties/start_time", time_of_day()),
        ("InboundConfig", "/properties/end_time", time_of_day()),
        ("InboundConfig", "/properties/allowed_days", days()),
        ("InboundConfig", "/properties/timezone", time_zone()),
        ("DeploymentPatchRequest", "/properties/name", name()),
        (
            "DeploymentPatchRequest",
            "/properties/description",
            description(),
        ),
        (
            "DeploymentPatchRequest",
            "/properties/app_version",
            app_version(),
        ),
        (
            "DeploymentPatchRequest",
            "/properties/connection_configs",
            at_least(CONNECTION_CONFIGS_MIN),
        ),
        // Cohorts
        ("CohortStreamRequest", "/properties/name", name()),
        ("CohortStreamRequest", "/properties/country_code", region()),
        (
            "CohortStreamRequest",
            "/properties/users",
            json!({"minItems": STREAM_USERS_MIN, "maxItems": STREAM_USERS_MAX}),
        ),
        ("CohortUploadForm", "/properties/name", name()),
        ("PhoneNumberMapping", "/properties/column_name", non_empty()),
        ("PhoneNumberMapping", "/properties/country_code", region()),
        ("ColumnMapping", "/properties/column_name", non_empty()),
        ("OverrideMapping", "/properties/column_name", non_empty()),
        // Every override, named or not, maps a column: an unknown name passes the upload and
        // fails the cohort (`validate::transformation_config`).
        (
            "OverrideMappings",
            "",
            json!({"additionalProperties": {"$ref": "#/components/schemas/OverrideMapping"}}),
        ),
        (
            "TransformationConfig",
            "/properties/app_variables",
            json!({"propertyNames": {"minLength": 1}}),
        ),
        // Simulation
        ("InboundCallRequest", "/properties/caller", e164()),
        ("InboundCallRequest", "/properties/dialled", e164()),
    ];
    for (schema, pointer, fragment) in rules {
        set(doc, schema, pointer, fragment);
    }
    // Optional fields that refuse `null` (only a PATCH's `description`, `inbound_config` and
    // `webhook_config` take `null`, to clear; elsewhere `null` is as if absent).
    let not_nullable: &[(&str, &str)] = &[
        ("CampaignPatchRequest", "name"),
        ("CampaignPatchRequest", "end_timestamp"),
        ("CampaignPatchRequest", "allowed_schedule"),
        ("CampaignPatchRequest", "app_config"),
        ("CampaignPatchRequest", "start_timestamp"),
        ("CampaignAppConfigPatch", "app_id"),
        ("CampaignAppConfigPatch", "app_type"),
        ("CampaignAppConfigPatch", "app_version"),
        ("CampaignAppConfigPatch", "attempts_per_second"),
        ("CampaignAppConfigPatch", "connection_configs"),
        ("CampaignAppConfigPatch", "retry_config"),
        ("DeploymentPatchRequest", "name"),
        ("DeploymentPatchRequest", "app_id"),
        ("DeploymentPatchRequest", "app_version"),
        ("DeploymentPatchRequest", "connection_configs"),
        ("RetryOnObject", "busy"),
        ("RetryOnObject", "no_answer"),
        ("RetryOnObject", "failed"),
        ("RetryOnObject", "short_duration"),
        ("RetryOnObject", "provider_error"),
        ("RetryOnObject", "internal_error"),
        ("OverrideMappings", "initial_bot_message"),
        ("OverrideMappings", "initial_state_name"),
        ("OverrideMappings", "initial_language_name"),
        ("CohortUploadForm", "cohort_category"),
    ];
    for (schema, property) in not_nullable {
        not_null(doc, schema, property);
    }
    // Fields that take `null` as if absent, though the type has no `Option`.
    for (schema, property) in [
        ("TransformationConfig", "app_variables"),
        ("ColumnMapping", "required"),
    ] {
        set(doc, schema, &format!("/properties/{property}"), json!({}));
        nullable(doc, schema, property);
    }
    clock_advance(doc);
    cohort_user_overrides(doc);
    // An instant call reads two overrides; the language override is a cohort's only.
    let overrides = doc
        .pointer_mut("/components/schemas/AppOverrides/properties")
        .and_then(Value::as_object_mut)
        .expect("AppOverrides");
    assert!(overrides.remove("initial_language_name").is_some());
}

/// A streamed user's overrides are the one overrides type, [`crate::wire::AppOverrides`]; the
/// document publishes them under their own name, `CohortUserOverrides`, with all three
/// overrides (an instant call reads two) and the texts of a cohort's user.
fn cohort_user_overrides(doc: &mut Value) {
    const NAME: &str = "CohortUserOverrides";
    let mut schema = doc["components"]["schemas"]["AppOverrides"].clone();
    schema["description"] = json!("Overrides of one streamed user.");
    for (property, text) in [
        ("initial_bot_message", "The agent's first message."),
        ("initial_state_name", "The agent's starting state."),
        ("initial_language_name", "The agent's starting language."),
    ] {
        schema["properties"][property]["description"] = json!(text);
    }
    let schemas = doc["components"]["schemas"]
        .as_object_mut()
        .expect("the document's schemas");
    let at = schemas
        .keys()
        .position(|k| k.as_str() > NAME)
        .unwrap_or(schemas.len());
    schemas.shift_insert(at, NAME.to_string(), schema);
    let reference = doc
        .pointer_mut("/components/schemas/CohortStreamUser/properties/app_overrides/oneOf/0/$ref")
        .expect("a streamed user's overrides");
    *reference = json!(format!("#/components/schemas/{NAME}"));
}

/// `{"seconds": n}` or `{"to": instant}`: exactly one of the two, not null.
fn clock_advance(doc: &mut Value) {
    let seconds = json!({
        "type": "number",
        "minimum": 0.0,
        "maximum": (limits::CLOCK_MOVE_MAX_SECS as f64),
    });
    let to = json!({"type": "string", "format": "date-time"});
    set(
        doc,
        "ClockAdvanceRequest",
        "",
        json!({"oneOf": [
            {"required": ["seconds"], "properties": {"seconds": seconds, "to": {"type": "null"}}},
            {"required": ["to"], "properties": {"to": to, "seconds": {"type": "null"}}},
        ]}),
    );
    set(
        doc,
        "ClockAdvanceRequest",
        "/properties/seconds",
        json!({"minimum": 0.0, "maximum": (limits::CLOCK_MOVE_MAX_SECS as f64)}),
    );
}

/// `TimeZone`: every IANA name the platform accepts, spelled exactly.
fn time_zone_component(doc: &mut Value) {
    let names: Vec<&str> = schedule::timezone_names().collect();
    doc["components"]["schemas"]["TimeZone"] = json!({
        "type": "string",
        "description": "An IANA time-zone name, spelled exactly as in the time-zone database (for example `America/New_York`, `Asia/Kolkata`, `UTC`).",
        "enum": names,
    });
}

/// Path parameters are one non-empty segment; list paging and search follow the limits.
fn parameters(doc: &mut Value) {
    for (_, _, op) in operations(doc) {
        let Some(Value::Array(params)) = op.get_mut("parameters") else {
            continue;
        };
        for p in params {
            let fragment = match (p["in"].as_str(), p["name"].as_str()) {
                (Some("path"), _) => non_empty(),
                (Some("query"), Some("offset")) => range(limits::LIST_OFFSET_MIN, i64::MAX),
                (Some("query"), Some("limit")) => {
                    range(limits::LIST_LIMIT_MIN, limits::LIST_LIMIT_MAX)
                }
                (Some("query"), Some("search")) => json!({
                    "maxLength": limits::LIST_SEARCH_MAX_CHARS,
                    "pattern": limits::NO_NUL_PATTERN,
                }),
                _ => continue,
            };
            let schema = p["schema"].as_object_mut().expect("a parameter schema");
            merge(schema, fragment);
        }
    }
}

/// Operations whose work needs the workspace's data key, so its key service.
const NEEDS_DATA_KEY: &[&str] = &[
    "create_outbound",
    "upload_campaign_cohort",
    "stream_campaign_cohort",
    "get_campaign_cohort_file",
    "upload_deployment_cohort",
    "stream_deployment_cohort",
    "get_deployment_cohort_file",
    "admin_rotate_data_key",
];

/// The answers of the HTTP layer, which every operation may get before any route reads the
/// request: status and name in `components/responses`.
const HTTP_LAYER_ANSWERS: [(&str, &str); 4] = [
    ("400", "MalformedRequest"),
    ("408", "RequestTimeout"),
    ("414", "UriTooLong"),
    ("431", "RequestHeaderFieldsTooLarge"),
];

/// The HTTP layer's answers as `components/responses`, in the order of
/// [`HTTP_LAYER_ANSWERS`].
fn http_layer_responses() -> [Value; 4] {
    [
        error_answer(
            "The request is not valid HTTP/1.1: a malformed request line or header field, or a \
             chunked body whose framing is broken (code bad_request); the connection closes",
        ),
        error_answer(
            "The request's head, or its body, did not arrive in time (code request_timeout); \
             the connection closes",
        ),
        error_answer(&format!(
            "The request target (path and query) is longer than {} bytes (code uri_too_long); \
             the connection closes",
            limits::HTTP_MAX_URI_BYTES
        )),
        error_answer(&format!(
            "More than {} header fields, or a head (request line and fields) over {} bytes \
             (code request_header_fields_too_large); the connection closes",
            limits::HTTP_MAX_HEADERS,
            limits::HTTP_MAX_HEAD_BYTES
        )),
    ]
}

fn shared_answers(doc: &mut Value) {
    let components = doc["components"]
        .as_object_mut()
        .expect("components")
        .entry("responses")
        .or_insert_with(|| json!({}));
    for ((_, name), answer) in HTTP_LAYER_ANSWERS.iter().zip(http_layer_responses()) {
        components[*name] = answer;
    }
    for (_, _, op) in operations(doc) {
        let open = op.get("security") == Some(&json!([{}]));
        let has_body = op.contains_key("requestBody");
        let id = op["operationId"].as_str().unwrap_or_default().to_string();
        let responses = op["responses"].as_object_mut().expect("responses");
        for (status, name) in HTTP_LAYER_ANSWERS {
            responses
                .entry(status.to_string())
                .or_insert_with(|| json!({"$ref": format!("#/components/responses/{name}")}));
        }
        let mut add = |status: &str, description: &str| {
            responses
                .entry(status.to_string())
                .or_insert_with(|| error_answer(description));
        };
        if !open {
            add(
                "401",
                "Missing or wrong X-API-Key (code missing_api_key or invalid_api_key)",
            );
        }
        if has_body {
            add(
                "413",
                "The body is larger than the limit (code request_too_large)",
            );
            add(
                "415",
                "The body is not of the media type the route reads (code unsupported_media_type)",
            );
        }
        if NEEDS_DATA_KEY.contains(&id.as_str()) {
            add(
                "502",
                "The workspace's key service refused (code key_service_refused); nothing was kept",
            );
            add(
                "503",
                "The workspace's key service is unavailable (code key_service_unavailable); nothing was kept",
            );
        }
        sort_by_status(responses);
    }
}

/// A cohort file is CSV, or JSON for the transformation config.
fn cohort_files(doc: &mut Value) {
    for (_, _, op) in operations(doc) {
        if !op["operationId"]
            .as_str()
            .is_some_and(|i| i.ends_with("_cohort_file"))
        {
            continue;
        }
        op["responses"]["200"]["content"] = json!({
            "text/csv": {"schema": {"type": "string", "description": "`file_type` `cohort` (the CSV as uploaded) or `rejected_records` (its rejected rows, with a `rejected_reason` column), UTF-8"}},
            "application/json": {"schema": {"$ref": "#/components/schemas/TransformationConfig"}},
        });
    }
}

/// The upload form's parts: the CSV as a file, the transformation config as a JSON part.
/// Other parts are read past, but a part's name travels in its `Content-Disposition` header,
/// where control characters cannot appear (RFC 9110): such a body is refused as unreadable.
fn upload_form(doc: &mut Value) {
    set(
        doc,
        "CohortUploadForm",
        "",
        json!({"propertyNames": {"pattern": "^[^\\u0000-\\u001f\\u007f]*$"}}),
    );
    set(
        doc,
        "CohortUploadForm",
        "/properties/cohort_transformation_file",
        json!({"$ref": "#/components/schemas/TransformationConfig"}),
    );
    set(
        doc,
        "CohortUploadForm",
        "/properties/cohort_file",
        json!({"contentMediaType": "text/csv"}),
    );
    for (_, _, op) in operations(doc) {
        if let Some(form) = op
            .get_mut("requestBody")
            .and_then(|b| b.pointer_mut("/content/multipart~1form-data"))
        {
            form["encoding"] = json!({
                "cohort_file": {"contentType": "text/csv"},
                "cohort_transformation_file": {"contentType": "application/json"},
            });
        }
    }
}
