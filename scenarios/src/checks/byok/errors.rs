//! The `errors` group, judged on every error answer the other checks collected: JSON,
//! labelled so; the `{"error": {"code", "message"}}` shape; documented codes; short
//! printable messages; and, on every answer, no secret where it does not belong.

use std::sync::Arc;

use contracts::error::ByokErrorCode;
use serde_json::{Value, json};

use super::defs::*;
use super::probe::Exchange;
use super::secrets::Secrets;
use crate::checks::{Check, CheckDef, Evidence};

/// Longest acceptable error message, in characters.
pub(crate) const MAX_MESSAGE_CHARS: usize = 200;
/// Answers named in evidence, at most.
const MAX_LISTED: usize = 5;

/// The code of a 415 beside `INVALID_REQUEST`. `auth.content_type` and `decrypt.content_type`
/// accept a 415 for a body of the wrong media type; the code that names it is accepted with
/// it, so the `errors` checks never warn about an answer another check accepts.
const UNSUPPORTED_MEDIA_TYPE: &str = "UNSUPPORTED_MEDIA_TYPE";

/// Whether the answer is labelled `application/json` (any parameters): the error bodies are
/// the contract's own shape, not another JSON media type's (`application/problem+json`).
fn is_application_json(ex: &Exchange) -> bool {
    ex.header("content-type").is_some_and(|v| {
        v.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("application/json")
    })
}

/// The documented codes that go with `status`.
fn codes_for(status: u16) -> Vec<&'static str> {
    if status == 415 {
        return vec![
            UNSUPPORTED_MEDIA_TYPE,
            ByokErrorCode::InvalidRequest.as_str(),
        ];
    }
    ByokErrorCode::ALL
        .iter()
        .filter(|c| c.http_status() == status)
        .map(|c| c.as_str())
        .collect()
}

/// Whether `code` is one of the documented codes (of any status).
pub(crate) fn is_documented(code: &str) -> bool {
    code == UNSUPPORTED_MEDIA_TYPE || ByokErrorCode::ALL.iter().any(|c| c.as_str() == code)
}

fn listed(ex: &Exchange, problem: impl Into<Value>) -> Value {
    json!({
        "check": ex.check,
        "request": ex.request_line(),
        "status": ex.status,
        "problem": problem.into(),
    })
}

fn verdict(def: &CheckDef, judged: usize, bad: Vec<Value>, expected: &str) -> Check {
    let n = bad.len();
    Check::judge(
        def,
        bad.is_empty(),
        Evidence::new()
            .with("answers", judged)
            .with("failing", n)
            .with(
                "examples",
                bad.into_iter().take(MAX_LISTED).collect::<Vec<_>>(),
            ),
        expected,
    )
}

/// The group's checks over `journal`, with the `secrets` the run handled.
pub(super) fn checks(journal: &[Arc<Exchange>], secrets: &Secrets) -> Vec<Check> {
    // An answer to HEAD has no body, by definition (RFC 9110).
    let errors: Vec<&Arc<Exchange>> = journal
        .iter()
        .filter(|e| e.status >= 400 && e.method != reqwest::Method::HEAD)
        .collect();
    let mut out = Vec::new();
    if errors.is_empty() {
        out.extend(
            [ERRORS_JSON, ERRORS_SHAPE, ERRORS_CODE, ERRORS_MESSAGE]
                .iter()
                .map(|d| Check::skip(d, "no error answer was seen")),
        );
    } else {
        out.extend(judge_bodies(&errors));
    }
    out.push(judge_www_authenticate(journal));
    out.push(judge_no_store(journal));
    out.push(judge_secrets(journal, secrets));
    out
}

/// `errors.www_authenticate`: every 401 names the scheme it wants.
fn judge_www_authenticate(journal: &[Arc<Exchange>]) -> Check {
    let refused: Vec<&Arc<Exchange>> = journal.iter().filter(|e| e.status == 401).collect();
    if refused.is_empty() {
        return Check::skip(&ERRORS_WWW_AUTHENTICATE, "no 401 was seen");
    }
    let bad: Vec<Value> = refused
        .iter()
        .filter(|ex| {
            let want = match ex.endpoint {
                super::probe::Endpoint::Auth => "basic",
                _ => "bearer",
            };
            !ex.header("www-authenticate")
                .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with(want))
        })
        .map(|ex| {
            listed(
                ex,
                json!({"www_authenticate": ex.header("www-authenticate")}),
            )
        })
        .collect();
    verdict(
        &ERRORS_WWW_AUTHENTICATE,
        refused.len(),
        bad,
        "WWW-Authenticate: Basic on every 401 of /auth, Bearer on every other 401",
    )
}

/// `errors.no_store`: every success that holds a token or a key says not to keep it.
fn judge_no_store(journal: &[Arc<Exchange>]) -> Check {
    let holding: Vec<&Arc<Exchange>> = journal
        .iter()
        .filter(|e| e.status == 200 && e.method == reqwest::Method::POST)
        .collect();
    if holding.is_empty() {
        return Check::skip(&ERRORS_NO_STORE, "no answer held a token or a key");
    }
    let bad: Vec<Value> = holding
        .iter()
        .filter(|ex| {
            !ex.header("cache-control")
                .is_some_and(|v| v.to_ascii_lowercase().contains("no-store"))
        })
        .map(|ex| listed(ex, json!({"cache_control": ex.header("cache-control")})))
        .collect();
    verdict(
        &ERRORS_NO_STORE,
        holding.len(),
        bad,
        "Cache-Control: no-store on every answer holding a token or a key",
    )
}

fn judge_bodies(errors: &[&Arc<Exchange>]) -> Vec<Check> {
    let mut not_json = Vec::new();
    let mut shaped = Vec::new();
    let mut bad_shape = Vec::new();
    let mut json_count = 0;
    for ex in errors {
        let body = ex.json();
        match (&body, is_application_json(ex)) {
            (Some(_), true) => {}
            (Some(_), false) => not_json.push(listed(
                ex,
                json!({
                    "problem": "JSON, not labelled application/json",
                    "content_type": ex.header("content-type"),
                }),
            )),
            (None, _) => not_json.push(listed(ex, ex.body_evidence())),
        }
        let Some(body) = body else { continue };
        json_count += 1;
        let code = body.pointer("/error/code").and_then(Value::as_str);
        let message = body.pointer("/error/message").and_then(Value::as_str);
        match (code, message) {
            (Some(c), Some(m)) => shaped.push((*ex, c.to_string(), m.to_string())),
            _ => bad_shape.push(listed(ex, body.clone())),
        }
    }
    let mut out = vec![verdict(
        &ERRORS_JSON,
        errors.len(),
        not_json,
        "a JSON body labelled application/json on every error answer",
    )];
    if json_count == 0 {
        out.push(Check::skip(
            &ERRORS_SHAPE,
            "no error answer was JSON (see errors.json)",
        ));
    } else {
        out.push(verdict(
            &ERRORS_SHAPE,
            json_count,
            bad_shape,
            "{\"error\": {\"code\": string, \"message\": string}}",
        ));
    }
    if shaped.is_empty() {
        let reason = "no error answer had the documented shape (see errors.shape)";
        out.push(Check::skip(&ERRORS_CODE, reason));
        out.push(Check::skip(&ERRORS_MESSAGE, reason));
        return out;
    }
    let mut bad_code = Vec::new();
    let mut bad_message = Vec::new();
    for (ex, code, message) in &shaped {
        let allowed = codes_for(ex.status);
        if !allowed.contains(&code.as_str()) {
            bad_code.push(listed(ex, json!({"code": code, "documented": allowed})));
        }
        let chars = message.chars().count();
        if message.trim().is_empty()
            || chars > MAX_MESSAGE_CHARS
            || message.chars().any(char::is_control)
        {
            // Whole: the report cuts it once its secrets are removed.
            bad_message.push(listed(ex, json!({"message": message, "characters": chars})));
        }
    }
    out.push(verdict(
        &ERRORS_CODE,
        shaped.len(),
        bad_code,
        "UNAUTHORIZED 401, INVALID_REQUEST 400, KEY_NOT_FOUND or NOT_FOUND 404, KEY_DISABLED \
         or KEY_REVOKED 403, DECRYPTION_FAILED 422, METHOD_NOT_ALLOWED 405, PAYLOAD_TOO_LARGE \
         413, UNSUPPORTED_MEDIA_TYPE or INVALID_REQUEST 415, RATE_LIMITED 429, INTERNAL_ERROR \
         500, SERVICE_UNAVAILABLE 503",
    ));
    out.push(verdict(
        &ERRORS_MESSAGE,
        shaped.len(),
        bad_message,
        &format!("a message of 1 to {MAX_MESSAGE_CHARS} characters without control characters"),
    ));
    out
}

fn judge_secrets(journal: &[Arc<Exchange>], secrets: &Secrets) -> Check {
    let detector = secrets.detector();
    let mut leaks = Vec::new();
    for ex in journal {
        let found = detector.leaks(
            ex.endpoint,
            ex.status,
            &ex.headers,
            &ex.body,
            &ex.sent.headers,
        );
        leaks.extend(found.into_iter().map(|f| listed(ex, f)));
    }
    verdict(
        &ERRORS_NO_SECRET,
        journal.len(),
        leaks,
        "no client secret or API key in any answer; no token or plaintext key in an error \
         answer, a header, or a success of another endpoint: not whole, not 6 characters of \
         one, not base64-, URL- or JSON-encoded, not in hex",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_status() {
        assert_eq!(codes_for(401), ["UNAUTHORIZED"]);
        assert_eq!(codes_for(403), ["KEY_DISABLED", "KEY_REVOKED"]);
        assert_eq!(codes_for(404), ["KEY_NOT_FOUND", "NOT_FOUND"]);
        assert!(codes_for(418).is_empty());
        assert!(is_documented("KEY_NOT_FOUND") && is_documented(UNSUPPORTED_MEDIA_TYPE));
        assert!(!is_documented("ERROR"));
    }

    fn answer(status: u16, body: Value) -> Arc<Exchange> {
        use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Arc::new(Exchange {
            check: AUTH_CONTENT_TYPE.id,
            endpoint: super::super::probe::Endpoint::Auth,
            method: reqwest::Method::POST,
            trace_id: None,
            sent: super::super::probe::Sent::new(reqwest::Method::POST, "/acme/byok/v1/auth"),
            status,
            headers,
            body: serde_json::to_vec(&body).unwrap().into(),
            truncated: false,
            elapsed: std::time::Duration::from_millis(1),
        })
    }

    fn outcome(checks: &[Check], id: &str) -> crate::checks::Outcome {
        checks.iter().find(|c| c.id == id).unwrap().result
    }

    #[test]
    fn a_415_that_auth_json_body_accepts_is_not_warned_about() {
        use crate::checks::Outcome;
        for code in ["UNSUPPORTED_MEDIA_TYPE", "INVALID_REQUEST"] {
            let body = json!({"error": {"code": code, "message": "use a form"}});
            let checks = checks(&[answer(415, body)], &Secrets::default());
            assert_eq!(outcome(&checks, ERRORS_CODE.id), Outcome::Pass, "{code}");
        }
        let body = json!({"error": {"code": "KEY_NOT_FOUND", "message": "use a form"}});
        let checks = checks(&[answer(415, body)], &Secrets::default());
        assert_eq!(outcome(&checks, ERRORS_CODE.id), Outcome::Fail);
    }

    #[test]
    fn an_encoded_echo_of_a_secret_is_a_leak() {
        use crate::checks::Outcome;
        use base64::Engine as _;
        let secret = "Zq7v/N2p+Xw4Lk9sRt";
        let secrets = Secrets::default();
        secrets.add(secret, super::super::secrets::SecretKind::Credential);
        let b64 = base64::engine::general_purpose::STANDARD_NO_PAD.encode(secret);
        let url = "Zq7v%2FN2p%2BXw4Lk9sRt".to_string();
        let hex = hex::encode(&secret.as_bytes()[4..12]);
        for echoed in [secret.to_string(), b64, url, secret[..6].to_string(), hex] {
            let body =
                json!({"error": {"code": "UNAUTHORIZED", "message": format!("bad {echoed}")}});
            let checks = checks(&[answer(401, body)], &secrets);
            assert_eq!(
                outcome(&checks, ERRORS_NO_SECRET.id),
                Outcome::Fail,
                "{echoed}"
            );
        }
        let body = json!({"error": {"code": "UNAUTHORIZED", "message": "bad credentials"}});
        let checks = checks(&[answer(401, body)], &secrets);
        assert_eq!(outcome(&checks, ERRORS_NO_SECRET.id), Outcome::Pass);
    }
}
