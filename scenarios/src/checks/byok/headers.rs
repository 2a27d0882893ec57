//! The `headers` group (the tracing headers: a call without the optional `x-trace-id`, an
//! `x-request-timestamp` an hour old and one an hour ahead, and on every answer the
//! `X-Trace-Id` echo and `X-Request-Duration`) and the `methods` group (GET answers 405).

use std::sync::Arc;

use contracts::wire::byok::{HEADER_REQUEST_DURATION, HEADER_TRACE_ID};
use reqwest::Method;
use serde_json::json;

use super::context::{Ctx, TargetKey, Want, judge_status, judge_statuses, skip_all};
use super::defs::*;
use super::probe::{Call, Endpoint, Exchange, Headers, decrypt_body};
use crate::checks::{Check, Evidence};

/// How far from now the skewed timestamps are, back and ahead.
pub(crate) const SKEW_SECS: i64 = 3600;
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
    let (no_trace, old, ahead) = tokio::join!(
        p.send(HEADERS_NO_TRACE_ID.id, call(Headers::NoTraceId)),
        p.send(
            HEADERS_SKEWED_TIMESTAMP.id,
            call(Headers::TimestampAgo(SKEW_SECS))
        ),
        p.send(
            HEADERS_SKEWED_TIMESTAMP.id,
            call(Headers::TimestampAgo(-SKEW_SECS))
        ),
    );
    for ex in [&no_trace, &old, &ahead].into_iter().flatten() {
        ctx.note_plaintexts(ex);
    }
    let accepted = [&old, &ahead]
        .into_iter()
        .any(|r| r.as_ref().is_ok_and(|ex| ex.status == 200));
    let mut skew = judge_statuses(
        &HEADERS_SKEWED_TIMESTAMP,
        &[
            ("x-request-timestamp an hour old", old),
            ("x-request-timestamp an hour ahead", ahead),
        ],
        Want::ClientError,
    );
    if accepted {
        skew.expected = Some(
            "a 4xx for both: a request-timestamp an hour away is accepted, so a captured \
             request can be replayed; refuse timestamps far from the service clock, either way"
                .into(),
        );
    }
    vec![
        judge_status(
            &HEADERS_NO_TRACE_ID,
            "POST /decrypt-key",
            &no_trace,
            Want::Status(200),
        ),
        skew,
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

/// The `methods` group: GET on each endpoint, with good credentials, answers 405.
/// `refused`: the service refused the credentials, so the group is skipped with that reason.
pub(super) async fn methods(ctx: &Ctx, refused: Option<&str>) -> Vec<Check> {
    if !ctx.runs("methods") {
        return Vec::new();
    }
    if let Some(reason) = refused {
        return skip_all(
            &[METHODS_AUTH_GET, METHODS_DECRYPT_GET, METHODS_ROTATE_GET],
            reason,
        );
    }
    let bearer = ctx.bearer().await;
    let get = |e: Endpoint, auth: Option<String>| {
        Call::post(e).method(Method::GET).maybe_authorization(auth)
    };
    let p = &ctx.probe;
    let auth = ctx.auth_call().and_then(|c| c.authorization);
    let (a, d, r) = tokio::join!(
        async {
            match &auth {
                Some(basic) => Some(
                    p.send(
                        METHODS_AUTH_GET.id,
                        get(Endpoint::Auth, Some(basic.clone())),
                    )
                    .await,
                ),
                None => None,
            }
        },
        p.send(
            METHODS_DECRYPT_GET.id,
            get(Endpoint::DecryptKey, bearer.clone())
        ),
        async {
            if ctx.s.use_rotate {
                Some(
                    p.send(
                        METHODS_ROTATE_GET.id,
                        get(Endpoint::RotateKey, bearer.clone()),
                    )
                    .await,
                )
            } else {
                None
            }
        },
    );
    if let Some(Ok(ex)) = &r {
        ctx.note_plaintexts(ex);
    }
    vec![
        match &a {
            Some(res) => judge_status(&METHODS_AUTH_GET, "GET /auth", res, Want::Status(405)),
            None => Check::skip(&METHODS_AUTH_GET, "a static API key: /auth is not used"),
        },
        judge_status(
            &METHODS_DECRYPT_GET,
            "GET /decrypt-key",
            &d,
            Want::Status(405),
        ),
        match &r {
            Some(res) => judge_status(
                &METHODS_ROTATE_GET,
                "GET /rotate-key",
                res,
                Want::Status(405),
            ),
            None => Check::skip(
                &METHODS_ROTATE_GET,
                "/rotate-key is not checked: give --use-rotate",
            ),
        },
    ]
}
