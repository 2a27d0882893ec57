//! Fault rules of the simulation API ([`crate::wire::faults`]): the body of
//! `POST /sim/v1/faults`, and the same rules for rules read from files.

use serde_json::Value;

use super::{Ctx, Options};
use crate::error::{Loc, ValidationErrors};
use crate::openapi::INTERFACE_PREFIX;
use crate::operations::Catalogue;
use crate::wire::faults::{FaultKind, FaultRule};

const KEYS: &[&str] = &[
    "kind",
    "operation_id",
    "path",
    "method",
    "org_id",
    "workspace_id",
    "probability",
    "times",
    "from",
    "until",
    "status",
    "retry_after_seconds",
    "delay_ms",
    "delay_max_ms",
    "requests_per_second",
    "burst",
];

const KINDS: &[(&str, FaultKind)] = &[
    ("status", FaultKind::Status),
    ("delay", FaultKind::Delay),
    ("drop", FaultKind::Drop),
    ("truncate", FaultKind::Truncate),
    ("rate_limit", FaultKind::RateLimit),
];

const METHODS: &[(&str, &str)] = &[
    ("GET", "GET"),
    ("POST", "POST"),
    ("PUT", "PUT"),
    ("PATCH", "PATCH"),
    ("DELETE", "DELETE"),
];

/// The statuses a `status` rule may answer.
pub const FAULT_STATUSES: &[u16] = &[429, 500, 502, 503, 504];
/// The longest delay a rule may add, in milliseconds.
pub const FAULT_DELAY_MAX_MS: u64 = 120_000;
/// The longest `Retry-After` a rule may announce, in seconds.
pub const FAULT_RETRY_AFTER_MAX_SECONDS: u64 = 86_400;
/// The highest rate a `rate_limit` rule may allow, per second.
pub const FAULT_RATE_MAX: f64 = 1_000_000.0;

/// Which fields each kind takes, beyond the matchers and triggers.
fn own_fields(kind: FaultKind) -> &'static [&'static str] {
    match kind {
        FaultKind::Status => &["status", "retry_after_seconds"],
        FaultKind::Delay => &["delay_ms", "delay_max_ms"],
        FaultKind::Drop | FaultKind::Truncate => &[],
        FaultKind::RateLimit => &["requests_per_second", "burst"],
    }
}

const KIND_FIELDS: &[&str] = &[
    "status",
    "retry_after_seconds",
    "delay_ms",
    "delay_max_ms",
    "requests_per_second",
    "burst",
];

/// Checks a fault rule, reporting every problem at once. Method names are taken in any
/// case and answered in capitals.
pub fn fault_rule(body: &Value, opts: Options) -> Result<FaultRule, ValidationErrors> {
    let mut c = Ctx::new(opts);
    let rule = walk(&mut c, body, &Loc::body());
    c.into_result(rule)
}

/// Checks a rule read from a file (already deserialised), with `loc` as the root of the
/// messages (`faults.0`).
pub fn fault_rule_value(rule: &FaultRule, root: &Loc) -> Result<(), ValidationErrors> {
    let value = serde_json::to_value(rule).expect("a rule serialises");
    let mut c = Ctx::new(Options { strict: true });
    let checked = walk(&mut c, &value, root);
    c.into_result(checked).map(drop)
}

/// A number above 0 and at most `max`.
fn positive(c: &mut Ctx, v: &Value, loc: &Loc, max: f64) -> Option<f64> {
    let x = c.number_in(v, loc, 0.0, max)?;
    if x == 0.0 {
        c.value_error(loc, "Input should be greater than 0");
        return None;
    }
    Some(x)
}

fn walk(c: &mut Ctx, body: &Value, loc: &Loc) -> Option<FaultRule> {
    let m = c.object(body, loc, KEYS)?;
    let kind = c
        .required(m, "kind", loc)
        .and_then(|v| c.choice(v, &loc.at("kind"), KINDS));
    let mut ok = true;
    let text = |c: &mut Ctx, key: &str| -> Option<Option<String>> {
        match Ctx::optional(m, key) {
            None => Some(None),
            Some(v) => c.nonempty_string(v, &loc.at(key)).map(Some),
        }
    };
    let operation_id = text(c, "operation_id");
    let path = text(c, "path");
    let org_id = text(c, "org_id");
    let workspace_id = text(c, "workspace_id");
    let method = match Ctx::optional(m, "method") {
        None => Some(None),
        Some(v) => {
            let upper = v.as_str().map(|s| Value::String(s.to_ascii_uppercase()));
            c.choice(upper.as_ref().unwrap_or(v), &loc.at("method"), METHODS)
                .map(|m| Some(m.to_string()))
        }
    };
    if let Some(Some(id)) = &operation_id
        && Catalogue::platform().get(id).is_none()
    {
        c.value_error(
            &loc.at("operation_id"),
            format_args!(
                "no operation '{id}' in the platform's OpenAPI document; see the operationId values of GET /openapi.json"
            ),
        );
        ok = false;
    }
    if let Some(Some(p)) = &path
        && !p.starts_with(INTERFACE_PREFIX)
    {
        c.value_error(
            &loc.at("path"),
            "faults apply to the platform's interface: the path must start with /api/",
        );
        ok = false;
    }
    if let (Some(Some(_)), Some(Some(_))) = (&operation_id, &path) {
        c.value_error(loc, "give operation_id or path, not both");
        ok = false;
    }
    if let (Some(None), Some(Some(_))) = (&org_id, &workspace_id) {
        c.value_error(
            &loc.at("workspace_id"),
            "a workspace_id needs its org_id beside it",
        );
        ok = false;
    }
    let probability = match Ctx::optional(m, "probability") {
        None => Some(None),
        Some(v) => positive(c, v, &loc.at("probability"), 1.0).map(Some),
    };
    let times = match Ctx::optional(m, "times") {
        None => Some(None),
        Some(v) => c
            .int_in(v, &loc.at("times"), Some(1), None)
            .map(|t| Some(t as u64)),
    };
    let from = match Ctx::optional(m, "from") {
        None => Some(None),
        Some(v) => c.timestamp(v, &loc.at("from")).map(Some),
    };
    let until = match Ctx::optional(m, "until") {
        None => Some(None),
        Some(v) => c.timestamp(v, &loc.at("until")).map(Some),
    };
    if let (Some(Some(f)), Some(Some(u))) = (from, until)
        && u <= f
    {
        c.value_error(&loc.at("until"), "until must be after from");
        ok = false;
    }
    let u64_in = |c: &mut Ctx, key: &str, min: i64, max: u64| -> Option<Option<u64>> {
        match Ctx::optional(m, key) {
            None => Some(None),
            Some(v) => c
                .int_in(v, &loc.at(key), Some(min), Some(max as i64))
                .map(|x| Some(x as u64)),
        }
    };
    let status = u64_in(c, "status", 100, 599);
    let retry_after = u64_in(c, "retry_after_seconds", 0, FAULT_RETRY_AFTER_MAX_SECONDS);
    let delay_ms = u64_in(c, "delay_ms", 0, FAULT_DELAY_MAX_MS);
    let delay_max_ms = u64_in(c, "delay_max_ms", 0, FAULT_DELAY_MAX_MS);
    let rate = match Ctx::optional(m, "requests_per_second") {
        None => Some(None),
        Some(v) => positive(c, v, &loc.at("requests_per_second"), FAULT_RATE_MAX).map(Some),
    };
    let burst = u64_in(c, "burst", 1, u64::from(u32::MAX));
    if let Some(kind) = kind {
        let own = own_fields(kind);
        for key in KIND_FIELDS {
            if !own.contains(key) && Ctx::optional(m, key).is_some() {
                c.value_error(
                    &loc.at(*key),
                    format_args!(
                        "{key} does not apply to a fault of kind '{}'",
                        kind.as_str()
                    ),
                );
                ok = false;
            }
        }
        let required = |c: &mut Ctx, key: &str, present: bool| {
            if !present && Ctx::optional(m, key).is_none() {
                c.add(
                    &loc.at(key),
                    crate::error::ErrorType::Missing,
                    format!("Field required for a fault of kind '{}'", kind.as_str()),
                );
            }
        };
        match kind {
            FaultKind::Status => {
                required(c, "status", false);
                if let Some(Some(s)) = status
                    && !FAULT_STATUSES.contains(&(s as u16))
                {
                    c.value_error(
                        &loc.at("status"),
                        format_args!("a fault answers one of {FAULT_STATUSES:?}, not {s}"),
                    );
                    ok = false;
                }
            }
            FaultKind::Delay => {
                required(c, "delay_ms", false);
                if let (Some(Some(lo)), Some(Some(hi))) = (delay_ms, delay_max_ms)
                    && hi < lo
                {
                    c.value_error(
                        &loc.at("delay_max_ms"),
                        "delay_max_ms must be at least delay_ms",
                    );
                    ok = false;
                }
            }
            FaultKind::RateLimit => {
                required(c, "requests_per_second", false);
                for key in ["probability", "times"] {
                    if Ctx::optional(m, key).is_some() {
                        c.value_error(
                            &loc.at(key),
                            format_args!(
                                "{key} does not apply to a rate limit: it holds for every request it matches"
                            ),
                        );
                        ok = false;
                    }
                }
            }
            FaultKind::Drop | FaultKind::Truncate => {}
        }
    }
    let rule = FaultRule {
        kind: kind?,
        operation_id: operation_id?,
        path: path?,
        method: method?,
        org_id: org_id?,
        workspace_id: workspace_id?,
        probability: probability?,
        times: times?,
        from: from?,
        until: until?,
        status: status?.map(|s| s as u16),
        retry_after_seconds: retry_after?,
        delay_ms: delay_ms?,
        delay_max_ms: delay_max_ms?,
        requests_per_second: rate?,
        burst: burst?.map(|b| b as u32),
    };
    ok.then_some(rule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(v: Value) -> Vec<(String, String)> {
        fault_rule(&v, Options::default())
            .unwrap_err()
            .details()
            .iter()
            .map(|d| (d.dotted_loc(), d.error_type.clone()))
            .collect()
    }

    #[test]
    fn good_rules_read_back_with_the_method_in_capitals() {
        let r = fault_rule(
            &json!({"kind": "status", "status": 503, "operation_id": "list_deployments",
                    "method": "get", "probability": 0.5, "times": 3,
                    "from": "2026-03-02T12:00:00Z", "until": "2026-03-02T13:00:00Z"}),
            Options { strict: true },
        )
        .unwrap();
        assert_eq!(r.method.as_deref(), Some("GET"));
        assert_eq!(r.status, Some(503));
        assert_eq!(r.times, Some(3));
        let r = fault_rule(
            &json!({"kind": "rate_limit", "requests_per_second": 2.5, "burst": 5}),
            Options::default(),
        )
        .unwrap();
        assert_eq!(r.burst, Some(5));
        assert!(
            fault_rule(
                &json!({"kind": "drop", "path": "/api/*/v1/x"}),
                Options::default()
            )
            .is_ok()
        );
        assert!(
            fault_rule(
                &json!({"kind": "delay", "delay_ms": 10, "delay_max_ms": 20}),
                Options::default()
            )
            .is_ok()
        );
    }

    #[test]
    fn every_problem_is_reported_where_it_is() {
        assert_eq!(
            problems(json!({"kind": "status"})),
            [("body.status".into(), "missing".into())]
        );
        assert_eq!(
            problems(json!({"kind": "status", "status": 404, "delay_ms": 5})),
            [
                ("body.delay_ms".into(), "value_error".into()),
                ("body.status".into(), "value_error".into())
            ]
        );
        assert_eq!(
            problems(json!({"kind": "explode", "operation_id": "nope", "probability": 0})),
            [
                ("body.kind".into(), "enum".into()),
                ("body.operation_id".into(), "value_error".into()),
                ("body.probability".into(), "value_error".into())
            ]
        );
        assert_eq!(
            problems(json!({"kind": "rate_limit", "requests_per_second": 1, "times": 2})),
            [("body.times".into(), "value_error".into())]
        );
        assert_eq!(
            problems(
                json!({"kind": "drop", "path": "/sim/v1/clock", "workspace_id": "w",
                            "from": "2026-03-02T12:00:00Z", "until": "2026-03-02T12:00:00Z"})
            ),
            [
                ("body.path".into(), "value_error".into()),
                ("body.workspace_id".into(), "value_error".into()),
                ("body.until".into(), "value_error".into())
            ]
        );
    }

    #[test]
    fn rules_from_files_get_the_same_checks() {
        let mut rule = FaultRule::new(FaultKind::Delay);
        let e = fault_rule_value(&rule, &Loc::root().at("faults").at(0)).unwrap_err();
        assert_eq!(
            e.details()[0].msg,
            "Field required for a fault of kind 'delay'"
        );
        rule.delay_ms = Some(5);
        assert!(fault_rule_value(&rule, &Loc::root()).is_ok());
    }
}
