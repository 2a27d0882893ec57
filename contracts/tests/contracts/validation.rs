//! Every limit just inside and just outside, and the shape of what is reported.

use chrono::{DateTime, Duration, Utc};
use contracts::clock::{Clock, SimClock, format_instant};
use contracts::error::{LocItem, ValidationErrors};
use contracts::validate::{self, Options};
use rstest::rstest;
use serde_json::{Value, json};

const NOW: &str = "2026-03-02T12:00:00Z";

fn now() -> DateTime<Utc> {
    SimClock::at(NOW).now()
}

fn ts(offset: Duration) -> String {
    format_instant(now() + offset)
}

fn campaign() -> Value {
    json!({
        "name": "Spring outreach",
        "description": "Reminder calls",
        "start_timestamp": ts(Duration::hours(1)),
        "end_timestamp": ts(Duration::days(3)),
        "allowed_schedule": {
            "timezone": "America/New_York",
            "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
            "allowed_start_time": "09:00",
            "allowed_end_time": "17:00"
        },
        "app_config": {
            "app_id": "app-1",
            "app_version": 3,
            "app_type": "agent",
            "attempts_per_second": 2,
            "connection_configs": [
                {"connection_id": "conn-a", "phone_numbers": ["+14155550100"], "weight": 3},
                {"connection_id": "conn-b", "phone_numbers": ["+14155550101", "+14155550102"], "weight": 1}
            ],
            "retry_config": {"max_retries": 2, "retry_on": ["busy", "short_duration"], "threshold_seconds": 10},
            "webhook_config": {"url": "https://hooks.example.com/calls", "metadata": {"team": "a"}}
        }
    })
}

fn deployment() -> Value {
    json!({
        "name": "Front desk",
        "app_id": "app-1",
        "app_version": 1,
        "connection_configs": [{"connection_id": "conn-a", "phone_numbers": ["+14155550100"]}],
        "description": null,
        "inbound_config": {"start_time": "09:00", "end_time": "17:00", "allowed_days": ["Monday"], "timezone": "Asia/Kolkata"}
    })
}

/// Sets the value at a dotted path (`app_config.connection_configs.0.weight`).
fn set(mut v: Value, path: &str, new: Value) -> Value {
    let mut cur = &mut v;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, p) in parts.iter().enumerate() {
        let last = i == parts.len() - 1;
        cur = match p.parse::<usize>() {
            Ok(idx) => &mut cur[idx],
            Err(_) if last => {
                cur[*p] = new;
                return v;
            }
            Err(_) => &mut cur[*p],
        };
        if last {
            *cur = new;
            return v;
        }
    }
    v
}

fn remove(mut v: Value, path: &str) -> Value {
    let (parent, key) = path.rsplit_once('.').unwrap_or(("", path));
    let mut cur = &mut v;
    if !parent.is_empty() {
        for p in parent.split('.') {
            cur = match p.parse::<usize>() {
                Ok(i) => &mut cur[i],
                Err(_) => &mut cur[p],
            };
        }
    }
    cur.as_object_mut().unwrap().remove(key);
    v
}

/// `(loc joined with '.', type)` of every failure.
fn report(e: &ValidationErrors) -> Vec<(String, String)> {
    e.details()
        .iter()
        .map(|d| {
            let loc: Vec<String> = d
                .loc
                .iter()
                .map(|l| match l {
                    LocItem::Key(k) => k.clone(),
                    LocItem::Index(i) => i.to_string(),
                })
                .collect();
            (loc.join("."), d.error_type.clone())
        })
        .collect()
}

fn create(v: &Value) -> Result<contracts::model::CampaignSpec, ValidationErrors> {
    validate::campaign_create(v, now(), Options::default())
}

fn assert_single(result: Result<impl std::fmt::Debug, ValidationErrors>, loc: &str, ty: &str) {
    let e = result.expect_err("expected a validation failure");
    assert_eq!(report(&e), vec![(loc.to_string(), ty.to_string())], "{e}");
}

#[test]
fn a_valid_campaign_passes_and_keeps_its_values() {
    let spec = create(&campaign()).unwrap();
    assert_eq!(spec.name.as_str(), "Spring outreach");
    assert_eq!(spec.attempts_per_second, 2.0);
    assert_eq!(spec.connections.len(), 2);
    assert_eq!(spec.connections[0].weight, 3);
    assert_eq!(spec.retry.max_retries, 2);
    assert_eq!(spec.retry.threshold_seconds, 10);
    assert_eq!(spec.retry.retry_interval_minutes, 30, "default interval");
    let app = spec.app_config_wire();
    assert_eq!(
        serde_json::to_value(&app.retry_config).unwrap(),
        json!({"max_retries": 2, "retry_on": ["busy", "short_duration"], "threshold_seconds": 10, "retry_interval_minutes": 30})
    );
    assert_eq!(
        serde_json::to_value(spec.allowed_schedule_wire()).unwrap(),
        campaign()["allowed_schedule"]
    );
}

#[rstest]
#[case(json!(0.1), None)]
#[case(json!(0.09), Some("greater_than_equal"))]
#[case(json!(500), None)]
#[case(json!(500.01), Some("less_than_equal"))]
#[case(json!(1), None)]
#[case(json!("2"), Some("float_type"))]
fn attempts_per_second_bounds(#[case] rate: Value, #[case] err: Option<&str>) {
    let r = create(&set(campaign(), "app_config.attempts_per_second", rate));
    match err {
        None => assert!(r.is_ok(), "{:?}", r.err()),
        Some(t) => assert_single(r, "body.app_config.attempts_per_second", t),
    }
}

#[rstest]
#[case(1, None)]
#[case(0, Some("greater_than_equal"))]
#[case(1200, None)]
#[case(1201, Some("less_than_equal"))]
fn threshold_bounds(#[case] t: i64, #[case] err: Option<&str>) {
    let r = create(&set(
        campaign(),
        "app_config.retry_config.threshold_seconds",
        json!(t),
    ));
    match err {
        None => assert_eq!(r.unwrap().retry.threshold_seconds, t as u32),
        Some(ty) => assert_single(r, "body.app_config.retry_config.threshold_seconds", ty),
    }
}

#[rstest]
#[case(0, None)]
#[case(10, None)]
#[case(11, Some("less_than_equal"))]
#[case(-1, Some("greater_than_equal"))]
fn max_retries_bounds(#[case] n: i64, #[case] err: Option<&str>) {
    let r = create(&set(
        campaign(),
        "app_config.retry_config.max_retries",
        json!(n),
    ));
    match err {
        None => assert_eq!(r.unwrap().retry.max_retries, n as u32),
        Some(ty) => assert_single(r, "body.app_config.retry_config.max_retries", ty),
    }
}

#[test]
fn descriptions_refuse_a_nul_character() {
    let with_nul = json!("before\u{0}after");
    assert_single(
        create(&set(campaign(), "description", with_nul.clone())),
        "body.description",
        "value_error",
    );
    let current = create(&campaign()).unwrap();
    assert_single(
        validate::campaign_patch(
            &json!({"description": with_nul}),
            now(),
            &current,
            Options::default(),
        ),
        "body.description",
        "value_error",
    );
    assert_single(
        validate::deployment_create(
            &set(deployment(), "description", with_nul.clone()),
            Options::default(),
        ),
        "body.description",
        "value_error",
    );
    // Other control characters stay allowed: a description may hold a line break or a tab.
    assert!(
        create(&set(
            campaign(),
            "description",
            json!("line one\nline\ttwo")
        ))
        .is_ok()
    );
}

#[rstest]
#[case(150, None)]
#[case(151, Some("string_too_long"))]
fn campaign_description_length(#[case] n: usize, #[case] err: Option<&str>) {
    let r = create(&set(campaign(), "description", json!("d".repeat(n))));
    match err {
        None => assert!(r.is_ok()),
        Some(ty) => assert_single(r, "body.description", ty),
    }
}

#[rstest]
#[case("n".repeat(50), None)]
#[case("n".repeat(51), Some("string_too_long"))]
#[case(String::new(), Some("string_too_short"))]
#[case("has.dot".to_string(), Some("string_pattern_mismatch"))]
#[case("under_score - hyphen 9".to_string(), None)]
fn campaign_name_rules(#[case] name: String, #[case] err: Option<&str>) {
    let r = create(&set(campaign(), "name", json!(name)));
    match err {
        None => assert!(r.is_ok()),
        Some(ty) => assert_single(r, "body.name", ty),
    }
}

#[rstest]
#[case(Duration::seconds(119), false)]
#[case(Duration::seconds(120), true)]
#[case(Duration::days(7), true)]
#[case(Duration::days(7) + Duration::seconds(1), false)]
#[case(Duration::seconds(-60), false)]
fn start_timestamp_window(#[case] ahead: Duration, #[case] ok: bool) {
    let start = now() + ahead;
    let body = set(
        set(campaign(), "start_timestamp", json!(format_instant(start))),
        "end_timestamp",
        json!(format_instant(start + Duration::days(1))),
    );
    let r = create(&body);
    if ok {
        assert_eq!(r.unwrap().start, start);
    } else {
        assert_single(r, "body.start_timestamp", "value_error");
    }
}

#[rstest]
#[case(Duration::seconds(119), false)]
#[case(Duration::seconds(120), true)]
#[case(Duration::days(30), true)]
#[case(Duration::days(30) + Duration::seconds(1), false)]
#[case(Duration::seconds(-1), false)]
fn end_timestamp_window(#[case] after_start: Duration, #[case] ok: bool) {
    let start = now() + Duration::hours(1);
    let body = set(
        set(campaign(), "start_timestamp", json!(format_instant(start))),
        "end_timestamp",
        json!(format_instant(start + after_start)),
    );
    let r = create(&body);
    if ok {
        assert_eq!(r.unwrap().end, start + after_start);
    } else {
        assert_single(r, "body.end_timestamp", "value_error");
    }
}

#[test]
fn timestamps_need_an_offset_and_a_valid_form() {
    assert_single(
        create(&set(
            campaign(),
            "start_timestamp",
            json!("2026-03-02T13:00:00"),
        )),
        "body.start_timestamp",
        "timezone_aware",
    );
    assert_single(
        create(&set(campaign(), "start_timestamp", json!("tomorrow"))),
        "body.start_timestamp",
        "datetime_parsing",
    );
    let r = create(&set(
        campaign(),
        "start_timestamp",
        json!("2026-03-02T18:30:00+05:30"),
    ))
    .unwrap();
    assert_eq!(format_instant(r.start), "2026-03-02T13:00:00.000Z");
}

#[rstest]
#[case(json!([]), Some(("body.app_config.connection_configs", "too_short")))]
#[case(json!([{"connection_id": "c", "phone_numbers": ["+14155550100"], "weight": 0}]), Some(("body.app_config.connection_configs.0.weight", "greater_than_equal")))]
#[case(json!([{"connection_id": "c", "phone_numbers": ["+14155550100"], "weight": 1}]), None)]
#[case(json!([{"connection_id": "c", "phone_numbers": [], "weight": 1}]), Some(("body.app_config.connection_configs.0.phone_numbers", "too_short")))]
#[case(json!([{"connection_id": "c", "phone_numbers": ["4155550100"], "weight": 1}]), Some(("body.app_config.connection_configs.0.phone_numbers.0", "value_error")))]
#[case(json!([{"connection_id": "", "phone_numbers": ["+14155550100"], "weight": 1}]), Some(("body.app_config.connection_configs.0.connection_id", "string_too_short")))]
#[case(json!([{"connection_id": "c", "phone_numbers": ["+14155550100"], "weight": 1.5}]), Some(("body.app_config.connection_configs.0.weight", "int_from_float")))]
fn campaign_connection_configs(#[case] configs: Value, #[case] err: Option<(&str, &str)>) {
    let r = create(&set(campaign(), "app_config.connection_configs", configs));
    match err {
        None => assert!(r.is_ok(), "{:?}", r.err()),
        Some((loc, ty)) => assert_single(r, loc, ty),
    }
}

#[test]
fn every_violation_is_reported_at_once_with_its_loc() {
    let mut body = campaign();
    body = remove(body, "name");
    body = set(body, "description", json!("x".repeat(151)));
    body = set(body, "start_timestamp", json!(ts(Duration::seconds(30))));
    body = set(body, "allowed_schedule.timezone", json!("Mars/Olympus"));
    body = set(
        body,
        "allowed_schedule.allowed_days",
        json!(["Monday", "Funday"]),
    );
    body = set(body, "app_config.attempts_per_second", json!(501));
    body = set(body, "app_config.connection_configs.0.weight", json!(0));
    body = set(
        body,
        "app_config.retry_config.retry_on",
        json!(["busy", "sometimes"]),
    );
    body = set(body, "app_config.webhook_config.url", json!("ftp://x.test"));
    let e = create(&body).unwrap_err();
    assert_eq!(
        report(&e),
        [
            ("body.name", "missing"),
            ("body.description", "string_too_long"),
            ("body.start_timestamp", "value_error"),
            ("body.allowed_schedule.timezone", "value_error"),
            ("body.allowed_schedule.allowed_days.1", "enum"),
            ("body.app_config.attempts_per_second", "less_than_equal"),
            (
                "body.app_config.connection_configs.0.weight",
                "greater_than_equal"
            ),
            ("body.app_config.retry_config.retry_on.1", "enum"),
            ("body.app_config.webhook_config.url", "url_scheme"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let body = serde_json::to_value(e.into_body()).unwrap();
    assert!(
        body["detail"][3]["msg"]
            .as_str()
            .unwrap()
            .contains("Mars/Olympus")
    );
}

#[test]
fn wrong_types_and_missing_parents_are_reported() {
    let e = create(&json!({"name": 5, "app_config": "x", "allowed_schedule": []})).unwrap_err();
    assert_eq!(
        report(&e),
        [
            ("body.name", "string_type"),
            ("body.start_timestamp", "missing"),
            ("body.end_timestamp", "missing"),
            ("body.allowed_schedule", "model_type"),
            ("body.app_config", "model_type"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert_single(create(&json!([1, 2])), "body", "model_type");
}

#[test]
fn retry_on_object_form_is_accepted_and_answered_as_a_list() {
    let body = set(
        campaign(),
        "app_config.retry_config",
        json!({"max_retries": 1, "retry_on": {
            "busy": {"enabled": true},
            "no_answer": {"enabled": false},
            "short_duration": {"enabled": true, "threshold_seconds": 15}
        }}),
    );
    let spec = create(&body).unwrap();
    assert_eq!(
        serde_json::to_value(spec.retry.to_wire()).unwrap(),
        json!({"max_retries": 1, "retry_on": ["busy", "short_duration"], "threshold_seconds": 15, "retry_interval_minutes": 30})
    );
    let conflicting = set(
        body.clone(),
        "app_config.retry_config.threshold_seconds",
        json!(20),
    );
    assert_single(
        create(&conflicting),
        "body.app_config.retry_config.threshold_seconds",
        "value_error",
    );
    let unknown = set(
        body,
        "app_config.retry_config.retry_on.sometimes",
        json!({"enabled": true}),
    );
    assert_single(
        create(&unknown),
        "body.app_config.retry_config.retry_on.sometimes",
        "extra_forbidden",
    );
}

#[test]
fn schedule_rules() {
    let same = set(
        campaign(),
        "allowed_schedule.allowed_end_time",
        json!("09:00"),
    );
    assert_single(
        create(&same),
        "body.allowed_schedule.allowed_end_time",
        "value_error",
    );
    let bad_time = set(
        campaign(),
        "allowed_schedule.allowed_start_time",
        json!("9:00"),
    );
    assert_single(
        create(&bad_time),
        "body.allowed_schedule.allowed_start_time",
        "value_error",
    );
    let no_days = set(campaign(), "allowed_schedule.allowed_days", json!([]));
    assert_single(
        create(&no_days),
        "body.allowed_schedule.allowed_days",
        "too_short",
    );
    let overnight = set(
        campaign(),
        "allowed_schedule.allowed_end_time",
        json!("02:00"),
    );
    let spec = create(&set(
        overnight,
        "allowed_schedule.allowed_start_time",
        json!("22:00"),
    ))
    .unwrap();
    assert!(spec.window.is_overnight());
}

#[test]
fn strict_mode_refuses_unknown_fields_lax_mode_ignores_them() {
    let body = set(
        set(campaign(), "color", json!("blue")),
        "app_config.speed",
        json!(1),
    );
    assert!(validate::campaign_create(&body, now(), Options::default()).is_ok());
    let e = validate::campaign_create(&body, now(), Options { strict: true }).unwrap_err();
    assert_eq!(
        report(&e),
        [
            ("body.color", "extra_forbidden"),
            ("body.app_config.speed", "extra_forbidden")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
}

#[test]
fn typed_requests_convert_with_try_from() {
    let req: contracts::wire::CampaignCreateRequest = serde_json::from_value(campaign()).unwrap();
    let spec = contracts::model::CampaignSpec::try_from((&req, now())).unwrap();
    assert_eq!(spec, create(&campaign()).unwrap());
    let again = spec.to_create_request();
    assert_eq!(
        contracts::model::CampaignSpec::try_from((&again, now())).unwrap(),
        spec,
        "spec -> wire -> spec round trip"
    );
    let late = now() + Duration::days(60);
    assert!(
        contracts::model::CampaignSpec::try_from((&req, late)).is_err(),
        "the time rules apply to typed requests too"
    );
    assert_eq!(
        contracts::model::CampaignSpec::from_stored(&req).unwrap(),
        spec
    );
}

mod patch {
    use super::*;

    fn current() -> contracts::model::CampaignSpec {
        create(&campaign()).unwrap()
    }

    fn patch(body: Value) -> Result<contracts::model::CampaignSpec, ValidationErrors> {
        validate::campaign_patch(&body, now(), &current(), Options::default())
    }

    #[test]
    fn partial_changes_keep_the_rest() {
        let next = patch(json!({
            "description": null,
            "app_config": {"attempts_per_second": 0.5, "retry_config": {"max_retries": 3}}
        }))
        .unwrap();
        assert_eq!(next.description, None);
        assert_eq!(next.attempts_per_second, 0.5);
        assert_eq!(next.retry.max_retries, 3);
        assert_eq!(next.retry.threshold_seconds, 10, "kept");
        assert_eq!(next.name, current().name);
    }

    #[test]
    fn start_and_app_id_are_fixed() {
        assert_single(
            patch(json!({"start_timestamp": ts(Duration::hours(2))})),
            "body.start_timestamp",
            "value_error",
        );
        assert!(patch(json!({"start_timestamp": format_instant(current().start)})).is_ok());
        assert_single(
            patch(json!({"app_config": {"app_id": "other"}})),
            "body.app_config.app_id",
            "value_error",
        );
    }

    #[rstest]
    #[case(Duration::seconds(119), false)]
    #[case(Duration::seconds(120), true)]
    #[case(Duration::days(30), true)]
    #[case(Duration::days(30) + Duration::seconds(1), false)]
    fn end_stays_within_bounds_of_the_start(#[case] after: Duration, #[case] ok: bool) {
        let r = patch(json!({"end_timestamp": format_instant(current().start + after)}));
        assert_eq!(r.is_ok(), ok, "{:?}", r.err());
    }

    #[test]
    fn end_must_be_in_the_future() {
        let cur = current();
        let later = cur.start + Duration::hours(1);
        let r = validate::campaign_patch(
            &json!({"end_timestamp": format_instant(later)}),
            later + Duration::minutes(5),
            &cur,
            Options::default(),
        );
        assert_single(r, "body.end_timestamp", "value_error");
    }
}

#[rstest]
#[case(json!({"action": "pause"}), None)]
#[case(json!({"action": "resume"}), None)]
#[case(json!({"action": "cancel"}), None)]
#[case(json!({"action": "stop"}), Some(("body.action", "enum")))]
#[case(json!({}), Some(("body.action", "missing")))]
#[case(json!("pause"), Some(("body", "model_type")))]
fn campaign_status_body(#[case] body: Value, #[case] err: Option<(&str, &str)>) {
    let r = validate::campaign_status(&body, Options::default());
    match err {
        None => assert!(r.is_ok()),
        Some((loc, ty)) => assert_single(r, loc, ty),
    }
}

mod deployments {
    use super::*;

    fn create(v: &Value) -> Result<contracts::model::DeploymentSpec, ValidationErrors> {
        validate::deployment_create(v, Options::default())
    }

    #[test]
    fn a_valid_deployment_passes() {
        let d = create(&deployment()).unwrap();
        assert_eq!(d.phone_numbers().len(), 1);
        assert!(d.inbound.is_some());
        let back = serde_json::to_value(d.to_create_request()).unwrap();
        assert_eq!(back["inbound_config"], deployment()["inbound_config"]);
    }

    #[rstest]
    #[case("n".repeat(50), None)]
    #[case("n".repeat(51), Some("string_too_long"))]
    #[case("bad!name".into(), Some("string_pattern_mismatch"))]
    #[case("".into(), Some("string_too_short"))]
    fn deployment_name(#[case] name: String, #[case] err: Option<&str>) {
        let r = create(&set(deployment(), "name", json!(name)));
        match err {
            None => assert!(r.is_ok()),
            Some(ty) => assert_single(r, "body.name", ty),
        }
    }

    #[rstest]
    #[case(150, true)]
    #[case(151, false)]
    fn description(#[case] n: usize, #[case] ok: bool) {
        let r = create(&set(deployment(), "description", json!("d".repeat(n))));
        if ok {
            assert!(r.is_ok());
        } else {
            assert_single(r, "body.description", "string_too_long");
        }
    }

    #[test]
    fn connection_configs() {
        assert_single(
            create(&set(deployment(), "connection_configs", json!([]))),
            "body.connection_configs",
            "too_short",
        );
        let twice = json!([
            {"connection_id": "a", "phone_numbers": ["+14155550100"]},
            {"connection_id": "b", "phone_numbers": ["+14155550100"]}
        ]);
        assert_single(
            create(&set(deployment(), "connection_configs", twice)),
            "body.connection_configs.1.phone_numbers.0",
            "value_error",
        );
    }

    #[test]
    fn inbound_config_is_optional_and_checked() {
        assert!(
            create(&remove(deployment(), "inbound_config"))
                .unwrap()
                .inbound
                .is_none()
        );
        assert!(
            create(&set(deployment(), "inbound_config", Value::Null))
                .unwrap()
                .inbound
                .is_none()
        );
        assert_single(
            create(&set(
                deployment(),
                "inbound_config.timezone",
                json!("Nowhere/Else"),
            )),
            "body.inbound_config.timezone",
            "value_error",
        );
        assert_single(
            create(&remove(deployment(), "inbound_config.end_time")),
            "body.inbound_config.end_time",
            "missing",
        );
    }

    #[test]
    fn patch_changes_what_is_sent() {
        let cur = create(&deployment()).unwrap();
        let next = validate::deployment_patch(
            &json!({"app_version": 2, "inbound_config": null, "description": "new"}),
            &cur,
            Options::default(),
        )
        .unwrap();
        assert_eq!(next.app_version, 2);
        assert!(next.inbound.is_none());
        assert_eq!(next.description.unwrap().as_str(), "new");
        assert_single(
            validate::deployment_patch(&json!({"app_id": "x"}), &cur, Options::default()),
            "body.app_id",
            "value_error",
        );
        assert_single(
            validate::deployment_patch(&json!({"app_version": 0}), &cur, Options::default()),
            "body.app_version",
            "greater_than_equal",
        );
    }

    #[rstest]
    #[case(json!({"action": "pause"}), true)]
    #[case(json!({"action": "resume"}), true)]
    #[case(json!({"action": "cancel"}), false)]
    fn status(#[case] body: Value, #[case] ok: bool) {
        assert_eq!(
            validate::deployment_status(&body, Options::default()).is_ok(),
            ok
        );
    }
}

mod queries {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[rstest]
    #[case("0", Some("greater_than_equal"))]
    #[case("1", None)]
    #[case("100", None)]
    #[case("101", Some("less_than_equal"))]
    #[case("ten", Some("int_parsing"))]
    fn limit(#[case] raw: &str, #[case] err: Option<&str>) {
        let r = validate::deployment_list_query(&q(&[("limit", raw)]));
        match err {
            None => assert_eq!(r.unwrap().limit, raw.parse::<u32>().unwrap()),
            Some(ty) => assert_single(r, "query.limit", ty),
        }
    }

    #[rstest]
    #[case("-1", Some("greater_than_equal"))]
    #[case("0", None)]
    #[case("250", None)]
    fn offset(#[case] raw: &str, #[case] err: Option<&str>) {
        let r = validate::deployment_list_query(&q(&[("offset", raw)]));
        match err {
            None => assert_eq!(r.unwrap().offset, raw.parse::<u64>().unwrap()),
            Some(ty) => assert_single(r, "query.offset", ty),
        }
    }

    #[rstest]
    #[case("a".repeat(1000), None)]
    #[case("é".repeat(1000), None)]
    #[case("a".repeat(1001), Some("string_too_long"))]
    #[case("front\0desk".to_string(), Some("value_error"))]
    #[case(String::new(), None)]
    fn search(#[case] raw: String, #[case] err: Option<&str>) {
        let want = Some(raw.clone()).filter(|s| !s.is_empty());
        let deployments = validate::deployment_list_query(&q(&[("search", &raw)]));
        let campaigns = validate::campaign_list_query(&q(&[("search", &raw)]));
        match err {
            None => {
                assert_eq!(deployments.unwrap().search, want);
                assert_eq!(campaigns.unwrap().0.search, want);
            }
            Some(ty) => {
                assert_single(deployments, "query.search", ty);
                assert_single(campaigns, "query.search", ty);
            }
        }
    }

    #[test]
    fn defaults_and_enums() {
        let p = validate::deployment_list_query(&[]).unwrap();
        assert_eq!((p.offset, p.limit), (0, 20));
        assert_eq!(p.sort_order, contracts::wire::SortOrder::Desc);
        let e = validate::campaign_list_query(&q(&[
            ("sort_by", "colour"),
            ("sort_order", "up"),
            ("campaign_status", "running"),
            ("limit", "0"),
        ]))
        .unwrap_err();
        assert_eq!(
            report(&e),
            [
                ("query.limit", "greater_than_equal"),
                ("query.sort_by", "enum"),
                ("query.sort_order", "enum"),
                ("query.campaign_status", "enum"),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        let (p, status) = validate::campaign_list_query(&q(&[
            ("campaign_status", "paused"),
            ("sort_by", "name"),
            ("sort_order", "asc"),
            ("search", "spring"),
        ]))
        .unwrap();
        assert_eq!(status, Some(contracts::wire::CampaignStatus::Paused));
        assert_eq!(p.search.as_deref(), Some("spring"));
        assert_single(
            validate::cohort_files_query(&[]),
            "query.file_type",
            "missing",
        );
        assert_single(
            validate::cohort_files_query(&q(&[("file_type", "secrets")])),
            "query.file_type",
            "enum",
        );
    }
}

mod outbound {
    use super::*;

    fn body() -> Value {
        json!({
            "app_config": {
                "app_id": "app-1", "app_version": 2,
                "connection_config": {"connection_id": "c1", "agent_phone_number": "+14155550100"},
                "agent_variables": {"name": "Ada"},
                "app_type": "agent",
                "app_overrides": {"initial_bot_message": "Hi", "initial_state_name": "greet"}
            },
            "user_config": {"user_phone_number": "+919876543210"},
            "webhook_config": {"url": "https://hooks.example.com/x", "metadata": {"k": 1}}
        })
    }

    #[test]
    fn valid_and_minimal() {
        let call = validate::outbound_request(&body(), Options::default()).unwrap();
        assert_eq!(call.user_phone_number.as_str(), "+919876543210");
        assert_eq!(call.agent_variables["name"], "Ada");
        let minimal = remove(
            remove(
                remove(
                    remove(body(), "webhook_config"),
                    "app_config.agent_variables",
                ),
                "app_config.app_overrides",
            ),
            "app_config.app_type",
        );
        assert!(validate::outbound_request(&minimal, Options::default()).is_ok());
    }

    #[test]
    fn all_failures_at_once() {
        let mut b = remove(body(), "user_config.user_phone_number");
        b = set(b, "app_config.app_version", json!("2"));
        b = set(
            b,
            "app_config.connection_config.agent_phone_number",
            json!("0415"),
        );
        b = set(b, "app_config.app_type", json!("bot"));
        b = set(b, "app_config.agent_variables", json!([1]));
        let e = validate::outbound_request(&b, Options::default()).unwrap_err();
        assert_eq!(
            report(&e),
            [
                ("body.app_config.app_version", "int_type"),
                (
                    "body.app_config.connection_config.agent_phone_number",
                    "value_error"
                ),
                ("body.app_config.agent_variables", "dict_type"),
                ("body.app_config.app_type", "enum"),
                ("body.user_config.user_phone_number", "missing"),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
    }
}

mod cohorts {
    use super::*;

    #[test]
    fn transformation_config() {
        let loc = contracts::error::Loc::body().at("cohort_transformation_file");
        let t = validate::transformation_config(
            &json!({
                "phone_number": {"column_name": "phone", "country_code": "IN"},
                "user_identifier": {"column_name": "id", "required": true},
                "app_variables": {"first_name": {"column_name": "name"}},
                "app_overrides": {"initial_bot_message": {"column_name": "greeting"}, "voice": {"column_name": "v"}}
            }),
            &loc,
            Options::default(),
        )
        .unwrap();
        assert_eq!(t.columns(), ["phone", "id", "name", "greeting"]);
        assert_eq!(
            t.unknown_overrides,
            ["voice"],
            "fails the upload later, not here"
        );
        let e = validate::transformation_config(
            &json!({"phone_number": {"country_code": "ZZ"}, "app_variables": {"x": {"column_name": 3}}}),
            &loc,
            Options::default(),
        )
        .unwrap_err();
        assert_eq!(
            report(&e),
            [
                (
                    "body.cohort_transformation_file.phone_number.column_name",
                    "missing"
                ),
                (
                    "body.cohort_transformation_file.phone_number.country_code",
                    "value_error"
                ),
                (
                    "body.cohort_transformation_file.app_variables.x.column_name",
                    "string_type"
                ),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
    }

    #[rstest]
    #[case(0, Some("too_short"))]
    #[case(1, None)]
    #[case(1000, None)]
    #[case(1001, Some("too_long"))]
    fn stream_size(#[case] n: usize, #[case] err: Option<&str>) {
        let users: Vec<Value> = (0..n)
            .map(|i| json!({"phone_number": format!("+1415555{i:04}")}))
            .collect();
        let r = validate::cohort_stream(&json!({"name": "s", "users": users}), Options::default());
        match err {
            None => assert_eq!(r.unwrap().users.len(), n),
            Some(ty) => assert_single(r, "body.users", ty),
        }
    }
}

/// `loc` holds integers for array indices (FastAPI's form), as `docs/interface.md` records.
#[test]
fn loc_array_indices_are_json_integers() {
    let e = create(&set(
        campaign(),
        "app_config.connection_configs.0.weight",
        json!(0),
    ))
    .unwrap_err();
    let body = serde_json::to_value(e.into_body()).unwrap();
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "app_config", "connection_configs", 0, "weight"]),
        "{body}"
    );
    assert!(body["detail"][0]["loc"][3].is_u64());
}
