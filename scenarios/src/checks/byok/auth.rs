//! The `auth` group: `/auth` with the right client credentials (status, shape, token type,
//! lifetime, the JWT) and refusals of wrong ones. With a static API key `/auth` is not used
//! and the group is skipped.

use std::sync::Arc;

use serde_json::{Value, json};

use super::context::{Ctx, Want, judge_status, judge_statuses, skip_all};
use super::defs::*;
use super::jwt;
use super::probe::{Call, CallError, Endpoint, Exchange, data_object, type_name};
use super::settings::Credentials;
use crate::checks::{Check, Evidence};

/// The checks judged on the answer to the right credentials.
const BASELINE: &[crate::checks::CheckDef] = &[
    AUTH_STATUS,
    AUTH_SHAPE,
    AUTH_TOKEN_TYPE,
    AUTH_EXPIRES_IN,
    AUTH_JWT,
    AUTH_JWT_ALG,
    AUTH_JWT_EXP,
];

/// Largest difference between `exp - iat` and `expires_in`, in seconds.
const EXP_TOLERANCE_SECS: i64 = 5;
/// Largest difference between `exp` and the local clock plus `expires_in`, when the token
/// has no `iat`.
const EXP_CLOCK_TOLERANCE_SECS: i64 = 120;

/// The checks that need the right credentials to mean anything: skipped when the service
/// refused them (see `setup.credentials`).
const NEED_CREDENTIALS: &[crate::checks::CheckDef] =
    &[AUTH_WRONG_SECRET, AUTH_WRONG_GRANT_TYPE, AUTH_JSON_BODY];

/// The checks of the group, judged on `baseline` (the answer to the right credentials)
/// and on the refusals this sends. `None`: a static API key, the group is skipped.
/// `refused`: the service refused the credentials given, so the checks that need them are
/// skipped with that reason.
pub(super) async fn checks(
    ctx: &Ctx,
    baseline: Option<&Result<Arc<Exchange>, CallError>>,
    refused: Option<&str>,
) -> Vec<Check> {
    let Some(baseline) = baseline else {
        let reason = "a static API key: /auth is not used";
        let mut v = skip_all(BASELINE, reason);
        v.extend(skip_all(
            &[
                AUTH_WRONG_SECRET,
                AUTH_UNKNOWN_CLIENT,
                AUTH_NO_AUTHORIZATION,
                AUTH_MALFORMED_BASIC,
                AUTH_WRONG_GRANT_TYPE,
                AUTH_JSON_BODY,
            ],
            reason,
        ));
        return v;
    };
    if !ctx.runs("auth") {
        return Vec::new();
    }
    let mut out = match refused {
        Some(reason) => skip_all(BASELINE, reason),
        None => judge_baseline(baseline, ctx.s.time.now().timestamp()),
    };
    out.extend(refusals(ctx, refused).await);
    out
}

fn judge_baseline(result: &Result<Arc<Exchange>, CallError>, now: i64) -> Vec<Check> {
    let request = "POST /auth";
    let mut out = vec![judge_status(
        &AUTH_STATUS,
        request,
        result,
        Want::Status(200),
    )];
    let ex = match result {
        Ok(ex) if ex.status == 200 => ex,
        _ => {
            out.extend(skip_all(
                &BASELINE[1..],
                "/auth did not answer 200 (see auth.status)",
            ));
            return out;
        }
    };
    let body = ex.json();
    let data = body.as_ref().and_then(data_object);
    let field = |name: &str| data.and_then(|d| d.get(name));
    let evidence = ex.evidence();

    let mut problems = Vec::new();
    if !ex.is_json_labelled() {
        problems.push("Content-Type is not application/json".to_string());
    }
    match data {
        None => problems.push("no data object".into()),
        Some(_) => {
            for (name, want) in [
                ("access_token", "string"),
                ("token_type", "string"),
                ("expires_in", "number"),
            ] {
                match field(name) {
                    None => problems.push(format!("data.{name} is missing")),
                    Some(v) if type_name(v) != want => {
                        problems.push(format!("data.{name} is a {}", type_name(v)))
                    }
                    Some(_) => {}
                }
            }
        }
    }
    out.push(Check::judge(
        &AUTH_SHAPE,
        problems.is_empty(),
        evidence.clone().with("problems", problems),
        "application/json {\"data\": {\"access_token\": string, \"token_type\": string, \
         \"expires_in\": integer}}",
    ));

    let evidence_of = |name: &str| {
        Evidence::new()
            .status(ex.status)
            .with(name, field(name).cloned().unwrap_or(Value::Null))
    };
    out.push(match field("token_type") {
        Some(v) => Check::judge(
            &AUTH_TOKEN_TYPE,
            v.as_str().is_some_and(|t| t.eq_ignore_ascii_case("Bearer")),
            evidence_of("token_type"),
            "\"Bearer\", compared without regard to case (RFC 6749 section 5.1), as the \
             platform reads it",
        ),
        None => Check::skip(&AUTH_TOKEN_TYPE, "no data.token_type (see auth.shape)"),
    });
    let expires_in = field("expires_in")
        .and_then(Value::as_u64)
        .filter(|e| *e > 0);
    out.push(match field("expires_in") {
        Some(_) => Check::judge(
            &AUTH_EXPIRES_IN,
            expires_in.is_some(),
            evidence_of("expires_in"),
            "an integer above 0 (seconds)",
        ),
        None => Check::skip(&AUTH_EXPIRES_IN, "no data.expires_in (see auth.shape)"),
    });

    let Some(token) = field("access_token").and_then(Value::as_str) else {
        out.extend(skip_all(
            &[AUTH_JWT, AUTH_JWT_ALG, AUTH_JWT_EXP],
            "no data.access_token (see auth.shape)",
        ));
        return out;
    };
    let parsed = jwt::parse(token);
    out.push(match &parsed {
        Ok(_) => Check::pass(&AUTH_JWT, Evidence::new().with("jwt", true)),
        Err(why) => Check::fail(
            &AUTH_JWT,
            Evidence::new().with("access_token", format!("not a JWT: {why}")),
            "a JWT: base64url JSON header, base64url JSON claims and a signature, dot-separated",
        ),
    });
    let Ok(jwt) = parsed else {
        out.extend(skip_all(
            &[AUTH_JWT_ALG, AUTH_JWT_EXP],
            "the access token is not a JWT (see auth.jwt)",
        ));
        return out;
    };
    let alg = jwt.alg();
    out.push(Check::judge(
        &AUTH_JWT_ALG,
        alg.is_some_and(|a| !a.eq_ignore_ascii_case("none")),
        Evidence::new().with("header", jwt.header.clone()),
        "a signing algorithm in alg (HS256, RS256, ...), not \"none\"",
    ));
    out.push(judge_exp(&jwt, expires_in, now));
    out
}

/// `now`: the run's time, Unix seconds (for a token with `exp` and no `iat`).
fn judge_exp(jwt: &jwt::Jwt, expires_in: Option<u64>, now: i64) -> Check {
    let Some(expires_in) = expires_in else {
        return Check::skip(
            &AUTH_JWT_EXP,
            "expires_in is not a positive integer (see auth.expires_in)",
        );
    };
    let expires_in = i64::try_from(expires_in).unwrap_or(i64::MAX);
    let (exp, iat) = (jwt.int_claim("exp"), jwt.int_claim("iat"));
    let evidence = Evidence::new()
        .with("expires_in", expires_in)
        .with("exp", exp)
        .with("iat", iat);
    match (exp, iat) {
        (None, _) => Check::fail(&AUTH_JWT_EXP, evidence, "an exp claim (Unix seconds)"),
        (Some(exp), Some(iat)) => Check::judge(
            &AUTH_JWT_EXP,
            (exp - iat - expires_in).abs() <= EXP_TOLERANCE_SECS,
            evidence.with("exp_minus_iat", exp - iat),
            format!("exp - iat within {EXP_TOLERANCE_SECS} s of expires_in"),
        ),
        (Some(exp), None) => Check::judge(
            &AUTH_JWT_EXP,
            (exp - now - expires_in).abs() <= EXP_CLOCK_TOLERANCE_SECS,
            evidence.with("exp_minus_now", exp - now),
            format!("exp within {EXP_CLOCK_TOLERANCE_SECS} s of the local clock plus expires_in"),
        ),
    }
}

async fn refusals(ctx: &Ctx, refused: Option<&str>) -> Vec<Check> {
    let Credentials::Client { id, secret } = &ctx.s.credentials else {
        return Vec::new();
    };
    let secret = secret.expose();
    let form = "grant_type=client_credentials";
    let with_secret = |s: &str| {
        Call::post(Endpoint::Auth)
            .authorization(ctx.basic(id, s))
            .form(form)
    };
    // A secret cut short catches a comparison that stops at the end of the presented one.
    let cut: String = secret
        .chars()
        .take(secret.chars().count().saturating_sub(1))
        .collect();
    let unknown_client = Call::post(Endpoint::Auth)
        .authorization(ctx.basic("byok-check-unknown-client", secret))
        .form(form);
    let no_authorization = Call::post(Endpoint::Auth).form(form);
    let malformed = Call::post(Endpoint::Auth)
        .authorization("Basic !!not-base64!!")
        .form(form);
    let right = ctx.basic(id, secret);
    let wrong_grant = Call::post(Endpoint::Auth)
        .authorization(right.clone())
        .form("grant_type=password");
    let json_body = Call::post(Endpoint::Auth)
        .authorization(right)
        .json(&json!({"grant_type": "client_credentials"}));
    let p = &ctx.probe;
    let independent = async {
        tokio::join!(
            p.send(AUTH_UNKNOWN_CLIENT.id, unknown_client),
            p.send(AUTH_NO_AUTHORIZATION.id, no_authorization),
            p.send(AUTH_MALFORMED_BASIC.id, malformed),
        )
    };
    // Made from the credentials given: meaningless when the service refused them (a secret
    // cut short from a wrong one can even be a right one).
    let dependent = async {
        match refused {
            Some(_) => None,
            None => Some(tokio::join!(
                p.send(
                    AUTH_WRONG_SECRET.id,
                    with_secret(&format!("{secret}-wrong"))
                ),
                p.send(AUTH_WRONG_SECRET.id, with_secret(&cut)),
                p.send(AUTH_WRONG_GRANT_TYPE.id, wrong_grant),
                p.send(AUTH_JSON_BODY.id, json_body),
            )),
        }
    };
    let ((unknown, none, malformed), dependent) = tokio::join!(independent, dependent);
    let r = "POST /auth";
    let mut out = vec![
        judge_status(&AUTH_UNKNOWN_CLIENT, r, &unknown, Want::Status(401)),
        judge_status(&AUTH_NO_AUTHORIZATION, r, &none, Want::Status(401)),
        judge_status(
            &AUTH_MALFORMED_BASIC,
            r,
            &malformed,
            Want::OneOf(&[400, 401]),
        ),
    ];
    match dependent {
        Some((longer, shorter, grant, json)) => {
            out.push(judge_statuses(
                &AUTH_WRONG_SECRET,
                &[
                    ("the secret with characters appended", longer),
                    ("the secret without its last character", shorter),
                ],
                Want::Status(401),
            ));
            out.push(judge_status(
                &AUTH_WRONG_GRANT_TYPE,
                r,
                &grant,
                Want::Status(400),
            ));
            out.push(judge_status(
                &AUTH_JSON_BODY,
                r,
                &json,
                Want::OneOf(&[400, 415]),
            ));
        }
        None => out.extend(skip_all(NEED_CREDENTIALS, refused.unwrap_or_default())),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Outcome;
    use reqwest::Method;
    use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};

    fn auth_answer(token_type: &str) -> Result<Arc<Exchange>, CallError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let body = serde_json::json!({"data": {
            "access_token": "x.y.z", "token_type": token_type, "expires_in": 120,
        }});
        Ok(Arc::new(Exchange {
            check: AUTH_STATUS.id,
            endpoint: super::super::probe::Endpoint::Auth,
            method: Method::POST,
            trace_id: None,
            sent: super::super::probe::Sent::new(Method::POST, "/acme/byok/v1/auth"),
            status: 200,
            headers,
            body: serde_json::to_vec(&body).unwrap().into(),
            truncated: false,
            elapsed: std::time::Duration::from_millis(1),
        }))
    }

    fn token_type_result(token_type: &str) -> Outcome {
        judge_baseline(&auth_answer(token_type), 0)
            .into_iter()
            .find(|c| c.id == AUTH_TOKEN_TYPE.id)
            .expect("auth.token_type judged")
            .result
    }

    #[test]
    fn token_type_is_bearer_in_any_case_as_the_platform_reads_it() {
        for ok in ["Bearer", "bearer", "BEARER"] {
            assert_eq!(token_type_result(ok), Outcome::Pass, "{ok}");
        }
        for bad in ["mac", "Bearer ", "", "Basic"] {
            assert_eq!(token_type_result(bad), Outcome::Fail, "{bad:?}");
        }
    }
}
