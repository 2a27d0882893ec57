//! The `errors` group, judged on every error answer the other checks collected: JSON,
//! labelled so; the `{"error": {"code", "message"}}` shape; documented codes; short
//! printable messages; and, on every answer, no secret where it does not belong.

use std::sync::Arc;

use contracts::error::ByokErrorCode;
use serde_json::{Value, json};

use super::defs::*;
use super::probe::{Exchange, SecretKind};
use crate::checks::{Check, CheckDef, Evidence};

/// Longest acceptable error message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 200;
/// Secrets shorter than this are redacted from reports but not looked for in answers (they
/// would match ordinary words).
pub const MIN_SCANNED_SECRET: usize = 6;
/// Answers named in evidence, at most.
const MAX_LISTED: usize = 5;

/// The documented codes that go with `status`.
fn codes_for(status: u16) -> Vec<&'static str> {
    ByokErrorCode::ALL
        .iter()
        .filter(|c| c.http_status() == status)
        .map(|c| c.as_str())
        .collect()
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
pub fn checks(journal: &[Arc<Exchange>], secrets: &[(String, SecretKind)]) -> Vec<Check> {
    let errors: Vec<&Arc<Exchange>> = journal.iter().filter(|e| e.status >= 400).collect();
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
    out.push(judge_secrets(journal, secrets));
    out
}

fn judge_bodies(errors: &[&Arc<Exchange>]) -> Vec<Check> {
    let mut not_json = Vec::new();
    let mut shaped = Vec::new();
    let mut bad_shape = Vec::new();
    let mut json_count = 0;
    for ex in errors {
        let body = ex.json();
        match (&body, ex.is_json_labelled()) {
            (Some(_), true) => {}
            (Some(_), false) => not_json.push(listed(ex, "JSON, not labelled application/json")),
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
            let shown: String = message.chars().take(80).collect();
            bad_message.push(listed(
                ex,
                json!({"message_start": shown, "characters": chars}),
            ));
        }
    }
    out.push(verdict(
        &ERRORS_CODE,
        shaped.len(),
        bad_code,
        "UNAUTHORIZED 401, INVALID_REQUEST 400, KEY_NOT_FOUND or NOT_FOUND 404, KEY_DISABLED \
         or KEY_REVOKED 403, DECRYPTION_FAILED 422, METHOD_NOT_ALLOWED 405, PAYLOAD_TOO_LARGE \
         413, RATE_LIMITED 429, INTERNAL_ERROR 500, SERVICE_UNAVAILABLE 503",
    ));
    out.push(verdict(
        &ERRORS_MESSAGE,
        shaped.len(),
        bad_message,
        &format!("a message of 1 to {MAX_MESSAGE_CHARS} characters without control characters"),
    ));
    out
}

fn judge_secrets(journal: &[Arc<Exchange>], secrets: &[(String, SecretKind)]) -> Check {
    let scanned: Vec<&(String, SecretKind)> = secrets
        .iter()
        .filter(|(s, _)| s.chars().count() >= MIN_SCANNED_SECRET)
        .collect();
    let mut leaks = Vec::new();
    for ex in journal {
        let body = String::from_utf8_lossy(&ex.body);
        let success = (200..300).contains(&ex.status);
        let mut found: Vec<String> = Vec::new();
        for (secret, kind) in &scanned {
            let allowed_in_body = success && *kind != SecretKind::Credential;
            if !allowed_in_body && body.contains(secret.as_str()) {
                found.push(format!("the body holds {}", kind.label()));
            }
            for (name, value) in &ex.headers {
                if String::from_utf8_lossy(value.as_bytes()).contains(secret.as_str()) {
                    found.push(format!("header {name} holds {}", kind.label()));
                }
            }
        }
        found.sort();
        found.dedup();
        leaks.extend(found.into_iter().map(|f| listed(ex, f)));
    }
    verdict(
        &ERRORS_NO_SECRET,
        journal.len(),
        leaks,
        "no client secret or API key in any answer; no token or plaintext key in an error \
         answer or a header",
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
    }
}
