//! The `headers` group (the tracing headers: a call without the optional `x-trace-id`, an
//! `x-request-timestamp` an hour old and one an hour ahead, and on every answer the
//! `X-Trace-Id` echo and `X-Request-Duration`) and the `methods` group (every method but
//! POST answers 405 with `Allow: POST`).

use std::sync::Arc;

use contracts::wire::byok::{
    HEADER_REQUEST_DURATION, HEADER_REQUEST_ID, HEADER_REQUEST_TIMESTAMP, HEADER_TRACE_ID,
};
use reqwest::Method;
use serde_json::json;

use super::context::{Case, Ctx, TargetKey, Want, judge_cases, judge_status, skip_all};
use super::defs::*;
use super::probe::{Call, Endpoint, Exchange, Headers, decrypt_body};
use crate::checks::{Check, CheckDef, Evidence};

/// How far from now the skewed timestamps are, back and ahead.
pub(crate) const SKEW_SECS: i64 = 3600;
/// How far from now the nearer skewed timestamps are: a replay window of minutes is
/// enough (the simulated key service allows 300 s).
pub(crate) const NEAR_SKEW_SECS: i64 = 600;
/// Answers named in evidence, at most.
const MAX_LISTED: usize = 5;

/// The checks that send requests: without `x-trace-id`, with skewed timestamps.
pub(super) async fn requests(ctx: &Ctx, target: &TargetKey) -> Vec<Check> {
    if !ctx.runs("headers") {
        return Vec::new();
    }
    let body = decrypt_body(&ctx.s.key_alias, &target.encrypted_key);
    let bearer = ctx.bearer().await;
    let call = |h: Headers| {
        Call::post(Endpoint::DecryptKey)
            .maybe_authorization(bearer.clone())
            .json(&body)
            .headers(h)
    };
    let p = &ctx.probe;
    let skewed = [
        ("x-request-timestamp an hour old", SKEW_SECS),
        ("x-request-timestamp an hour ahead", -SKEW_SECS),
        ("x-request-timestamp ten minutes old", NEAR_SKEW_SECS),
        ("x-request-timestamp ten minutes ahead", -NEAR_SKEW_SECS),
    ];
    let (no_trace, skewed) = tokio::join!(
        p.send(HEADERS_NO_TRACE_ID.id, call(Headers::NoTraceId)),
        futures_util::future::join_all(skewed.map(|(name, ago)| async move {
            let r = p
                .send(
                    HEADERS_SKEWED_TIMESTAMP.id,
                    call(Headers::TimestampAgo(ago)),
                )
                .await;
            Case::new(name, r, Want::ClientError)
        })),
    );
    let malformed = [
        (
            "x-request-timestamp not a date",
            HEADER_REQUEST_TIMESTAMP,
            Some("not-a-date"),
        ),
        (
            "x-request-timestamp without an offset",
            HEADER_REQUEST_TIMESTAMP,
            Some("2026-03-02T12:00:00.000"),
        ),
        (
            "x-request-timestamp a date only",
            HEADER_REQUEST_TIMESTAMP,
            Some("2026-03-02"),
        ),
        ("no x-request-timestamp", HEADER_REQUEST_TIMESTAMP, None),
        (
            "x-request-id not a UUID",
            HEADER_REQUEST_ID,
            Some("not-a-uuid"),
        ),
        ("no x-request-id", HEADER_REQUEST_ID, None),
        ("x-trace-id not a UUID", HEADER_TRACE_ID, Some("not-a-uuid")),
    ];
    let malformed =
        futures_util::future::join_all(malformed.map(|(name, header, value)| async move {
            let r = p
                .send(HEADERS_MALFORMED.id, call(Headers::Override(header, value)))
                .await;
            (header, Case::new(name, r, Want::NoServerError))
        }))
        .await;
    // The same answers, judged on a missing or malformed x-request-id only: refused.
    let request_id: Vec<Case> = malformed
        .iter()
        .filter(|(h, _)| *h == HEADER_REQUEST_ID)
        .map(|(_, c)| Case::new(c.name.clone(), c.result.clone(), Want::ClientError))
        .collect();
    let malformed: Vec<Case> = malformed.into_iter().map(|(_, c)| c).collect();
    vec![
        judge_status(
            &HEADERS_NO_TRACE_ID,
            "POST /decrypt-key",
            &no_trace,
            Want::Status(200),
        ),
        judge_cases(&HEADERS_MALFORMED, malformed),
        judge_cases(&HEADERS_REQUEST_ID_REQUIRED, request_id),
        judge_cases(&HEADERS_SKEWED_TIMESTAMP, skewed),
    ]
}

/// The checks judged on every recorded answer: the trace echo and the duration header.
pub(crate) fn judge_journal(journal: &[Arc<Exchange>]) -> Vec<Check> {
    let traced: Vec<&Arc<Exchange>> = journal.iter().filter(|e| e.trace_id.is_some()).collect();
    if traced.is_empty() {
        return vec![
            Check::skip(&HEADERS_TRACE_ECHO, "no answer to judge"),
            Check::skip(&HEADERS_REQUEST_DURATION, "no answer to judge"),
        ];
    }
    let mut no_echo = Vec::new();
    let mut no_duration = Vec::new();
    for ex in &traced {
        if ex.header(HEADER_TRACE_ID) != ex.trace_id.as_deref() {
            no_echo.push(json!({
                "check": ex.check,
                "request": ex.request_line(),
                "status": ex.status,
                "x_trace_id": ex.header(HEADER_TRACE_ID),
            }));
        }
        let duration = ex.header(HEADER_REQUEST_DURATION);
        if !duration.is_some_and(|d| d.trim().parse::<f64>().is_ok_and(|ms| ms >= 0.0)) {
            no_duration.push(json!({
                "check": ex.check,
                "request": ex.request_line(),
                "status": ex.status,
                "x_request_duration": duration,
            }));
        }
    }
    let judge = |def, bad: Vec<serde_json::Value>, expected: &str| {
        let n = bad.len();
        Check::judge(
            def,
            bad.is_empty(),
            Evidence::new()
                .with("answers", traced.len())
                .with("without", n)
                .with(
                    "examples",
                    bad.into_iter().take(MAX_LISTED).collect::<Vec<_>>(),
                ),
            expected,
        )
    };
    vec![
        judge(
            &HEADERS_TRACE_ECHO,
            no_echo,
            "X-Trace-Id equal to the x-trace-id sent, on every answer",
        ),
        judge(
            &HEADERS_REQUEST_DURATION,
            no_duration,
            "X-Request-Duration: a number of milliseconds, on every answer",
        ),
    ]
}

/// The methods other than POST each endpoint is sent.
const OTHER_METHODS: [&str; 7] = ["GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"];

/// The `methods` group: every method but POST on each endpoint, with good credentials and
/// the endpoint's own body, answers 405 with an `Allow` that names POST (and not the method
/// refused); an OPTIONS may instead answer 2xx with such an `Allow`.
/// `refused`: the service refused the credentials, so the group is skipped with that reason.
pub(super) async fn methods(ctx: &Ctx, refused: Option<&str>) -> Vec<Check> {
    if !ctx.runs("methods") {
        return Vec::new();
    }
    if let Some(reason) = refused {
        return skip_all(&[METHODS_AUTH, METHODS_DECRYPT, METHODS_ROTATE], reason);
    }
    let bearer = ctx.bearer().await;
    let auth = ctx.auth_call();
    let decrypt = Call::post(Endpoint::DecryptKey)
        .maybe_authorization(bearer.clone())
        .json(&decrypt_body(&ctx.s.key_alias, "byok:v1:AAAA"));
    let rotate = Call::post(Endpoint::RotateKey)
        .maybe_authorization(bearer.clone())
        .json(&json!({"data": {"key_alias": ctx.s.key_alias}}));
    let (a, d, r) = tokio::join!(
        async {
            match &auth {
                Some(call) => Some(every_method(ctx, &METHODS_AUTH, call).await),
                None => None,
            }
        },
        every_method(ctx, &METHODS_DECRYPT, &decrypt),
        async {
            if ctx.s.use_rotate {
                Some(every_method(ctx, &METHODS_ROTATE, &rotate).await)
            } else {
                None
            }
        },
    );
    vec![
        a.unwrap_or_else(|| Check::skip(&METHODS_AUTH, "a static API key: /auth is not used")),
        d,
        r.unwrap_or_else(|| {
            Check::skip(
                &METHODS_ROTATE,
                "/rotate-key is not checked: give --use-rotate",
            )
        }),
    ]
}

/// `call` sent with every other method; each judged on its status and `Allow`.
async fn every_method(ctx: &Ctx, def: &CheckDef, call: &Call) -> Check {
    let cases = futures_util::future::join_all(OTHER_METHODS.map(|m| async move {
        let method = Method::from_bytes(m.as_bytes()).expect("a method");
        let result = ctx.probe.send(def.id, call.clone().method(method)).await;
        let options = m == "OPTIONS";
        let want = if options {
            Want::OneOf(&[200, 204, 405])
        } else {
            Want::Status(405)
        };
        let problem = result.as_ref().ok().and_then(|ex| {
            let judged = ex.status == 405 || (options && (200..300).contains(&ex.status));
            judged
                .then(|| allow_problem(ex.header("allow"), m))
                .flatten()
        });
        let case = Case::new(m, result, want);
        match problem {
            Some(p) => case.with_problem(p),
            None => case,
        }
    }))
    .await;
    judge_cases(def, cases)
}

/// What is wrong with the `Allow` of an answer refusing `method`: missing, without POST, or
/// naming the method refused.
fn allow_problem(allow: Option<&str>, method: &str) -> Option<String> {
    let Some(allow) = allow else {
        return Some("no Allow header (RFC 9110: a 405 must list the methods it takes)".into());
    };
    let listed: Vec<String> = allow
        .split(',')
        .map(|m| m.trim().to_ascii_uppercase())
        .collect();
    if !listed.iter().any(|m| m == "POST") {
        return Some(format!("Allow: {allow} does not name POST"));
    }
    if method != "OPTIONS" && listed.iter().any(|m| m == method) {
        return Some(format!("Allow: {allow} names {method}, which was refused"));
    }
    None
}
