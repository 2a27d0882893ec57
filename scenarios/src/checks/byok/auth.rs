//! The `auth` group: `/auth` with the right client credentials (status, shape, token type,
//! lifetime, the JWT) and refusals of wrong ones. With a static API key `/auth` is not used
//! and the group is skipped.

use std::sync::Arc;

use serde_json::{Value, json};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::context::{
    Case, Ctx, TargetKey, Want, judge_cases, judge_status, refusals_alike, skip_all,
};
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
    AUTH_EXPIRES_IN_BOUND,
    AUTH_JWT,
    AUTH_JWT_ALG,
    AUTH_JWT_EXP,
];

pub(crate) use super::settings::UNKNOWN_CLIENT;
/// The longest lifetime of a short-lived token, in seconds (an assumption of this project:
/// docs/interface.md, "The BYOK check").
pub(crate) const MAX_EXPIRES_IN: u64 = 86_400;
/// Largest difference between `exp - iat` and `expires_in`, in seconds.
const EXP_TOLERANCE_SECS: i64 = 5;
/// Largest difference between `exp` and the local clock plus `expires_in`, when the token
/// has no `iat`.
const EXP_CLOCK_TOLERANCE_SECS: i64 = 120;

/// The checks that need the right credentials to mean anything: skipped when the service
/// refused them (see `setup.credentials`).
const NEED_CREDENTIALS: &[crate::checks::CheckDef] =
    &[AUTH_WRONG_SECRET, AUTH_WRONG_GRANT_TYPE, AUTH_CONTENT_TYPE];

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
                AUTH_BEARER_CREDENTIALS,
                AUTH_NO_AUTHORIZATION,
                AUTH_MALFORMED_BASIC,
                AUTH_WRONG_GRANT_TYPE,
                AUTH_CONTENT_TYPE,
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
    out.push(match expires_in {
        Some(e) => Check::judge(
            &AUTH_EXPIRES_IN_BOUND,
            e <= MAX_EXPIRES_IN,
            evidence_of("expires_in").with("bound_s", MAX_EXPIRES_IN),
            format!("at most {MAX_EXPIRES_IN} s (a day): a short-lived token"),
        ),
        None => Check::skip(
            &AUTH_EXPIRES_IN_BOUND,
            "expires_in is not a positive integer (see auth.expires_in)",
        ),
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

/// The forms of a wrong secret: appended to, cut short, a prefix, a suffix, its case
/// changed, empty, with white space around it, followed by another colon-separated part. A
/// form equal to the secret itself (a one-character secret has no prefix) is left out.
fn wrong_secrets(secret: &str) -> Vec<(&'static str, String)> {
    let chars: Vec<char> = secret.chars().collect();
    let n = chars.len();
    let text = |c: &[char]| c.iter().collect::<String>();
    let swapped: String = chars
        .iter()
        .map(|c| {
            if c.is_lowercase() {
                c.to_uppercase().next().unwrap_or(*c)
            } else {
                c.to_lowercase().next().unwrap_or(*c)
            }
        })
        .collect();
    let mut out = vec![
        (
            "the secret with characters appended",
            format!("{secret}-wrong"),
        ),
        (
            "the secret without its last character",
            text(&chars[..n.saturating_sub(1)]),
        ),
        (
            "the secret without its first character",
            text(&chars[n.min(1)..]),
        ),
        ("the first half of the secret", text(&chars[..n / 2])),
        ("the secret with its case changed", swapped),
        ("an empty secret", String::new()),
        ("the secret with a space before it", format!(" {secret}")),
        ("the secret with a space after it", format!("{secret} ")),
        ("the secret with a tab after it", format!("{secret}\t")),
        ("the secret followed by :x", format!("{secret}:x")),
    ];
    out.retain(|(_, s)| s != secret);
    out
}

async fn refusals(ctx: &Ctx, refused: Option<&str>) -> Vec<Check> {
    let Credentials::Client { id, secret } = &ctx.s.credentials else {
        return Vec::new();
    };
    let secret = secret.expose();
    let form = "grant_type=client_credentials";
    let right = ctx.basic(id, secret);
    let p = &ctx.probe;
    let send = |check: &'static str, name: String, call: Call, want: Want| async move {
        Case::new(name, p.send(check, call).await, want)
    };
    let auth = || Call::post(Endpoint::Auth);
    let swapped: String = id
        .chars()
        .map(|c| {
            if c.is_lowercase() {
                c.to_uppercase().next().unwrap_or(c)
            } else {
                c.to_lowercase().next().unwrap_or(c)
            }
        })
        .collect();
    let mut clients = vec![
        (
            "a client id the service does not have",
            UNKNOWN_CLIENT.to_string(),
        ),
        ("the client id with its case changed", swapped),
        ("the client id with a character appended", format!("{id}x")),
        (
            "the client id without its last character",
            id.chars()
                .take(id.chars().count().saturating_sub(1))
                .collect(),
        ),
    ];
    clients.retain(|(_, c)| c != id && !c.is_empty());
    let in_form = format!(
        "grant_type=client_credentials&client_id={}&client_secret={}",
        url::form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>(),
        url::form_urlencoded::byte_serialize(secret.as_bytes()).collect::<String>()
    );
    let no_authorization = [
        ("no Authorization header", auth().form(form)),
        (
            "no Authorization, the client credentials in the form instead",
            auth().form(&in_form),
        ),
    ];
    let bearer = ctx.bearer().await;
    let mut bearers = vec![(
        "the client secret as a bearer token",
        format!("Bearer {secret}"),
    )];
    if let Some(b) = bearer {
        bearers.push(("an access token from /auth as a bearer token", b));
    }
    let malformed = [
        ("not base64", "Basic !!not-base64!!".to_string()),
        (
            "base64 without a colon",
            format!("Basic {}", STANDARD.encode(id)),
        ),
        ("the scheme alone", "Basic".to_string()),
        (
            "base64 of bytes that are not UTF-8 (with a colon)",
            format!("Basic {}", STANDARD.encode(b"\xff\xfe:\xfd")),
        ),
    ];
    let independent = async {
        tokio::join!(
            futures_util::future::join_all(clients.into_iter().map(|(name, client)| {
                send(
                    AUTH_UNKNOWN_CLIENT.id,
                    name.to_string(),
                    auth().authorization(ctx.basic(&client, secret)).form(form),
                    Want::Status(401),
                )
            })),
            futures_util::future::join_all(no_authorization.into_iter().map(|(name, call)| {
                send(
                    AUTH_NO_AUTHORIZATION.id,
                    name.to_string(),
                    call,
                    Want::Status(401),
                )
            })),
            futures_util::future::join_all(bearers.into_iter().map(|(name, value)| {
                send(
                    AUTH_BEARER_CREDENTIALS.id,
                    name.to_string(),
                    auth().authorization(value).form(form),
                    Want::Status(401),
                )
            })),
            futures_util::future::join_all(malformed.into_iter().map(|(name, value)| {
                send(
                    AUTH_MALFORMED_BASIC.id,
                    name.to_string(),
                    auth().authorization(value).form(form),
                    Want::OneOf(&[400, 401]),
                )
            })),
        )
    };
    // Made from the credentials given: meaningless when the service refused them (a secret
    // cut short from a wrong one can even be a right one).
    let dependent = async {
        if refused.is_some() {
            return None;
        }
        let forms = wrong_secrets(secret);
        let lengths: Vec<usize> = forms.iter().map(|(_, s)| s.chars().count()).collect();
        let wrong = async {
            let mut cases = futures_util::future::join_all(forms.into_iter().map(|(name, s)| {
                send(
                    AUTH_WRONG_SECRET.id,
                    name.to_string(),
                    auth().authorization(ctx.basic(id, &s)).form(form),
                    Want::Status(401),
                )
            }))
            .await;
            refusals_alike(&mut cases, &lengths);
            cases
        };
        let grants = [
            ("grant_type=password", "grant_type=password"),
            (
                "grant_type=authorization_code",
                "grant_type=authorization_code",
            ),
            (
                "a longer value (client_credentials_v2)",
                "grant_type=client_credentials_v2",
            ),
            ("a prefix of it (client)", "grant_type=client"),
            (
                "CLIENT_CREDENTIALS (values are case-sensitive)",
                "grant_type=CLIENT_CREDENTIALS",
            ),
            ("Client_Credentials", "grant_type=Client_Credentials"),
            ("an empty grant_type", "grant_type="),
            ("no grant_type", "scope=decrypt"),
            (
                "grant_type twice, client_credentials last (RFC 6749 section 3.1)",
                "grant_type=password&grant_type=client_credentials",
            ),
            (
                "grant_type twice, client_credentials first",
                "grant_type=client_credentials&grant_type=password",
            ),
        ];
        let grant = futures_util::future::join_all(grants.into_iter().map(|(name, body)| {
            send(
                AUTH_WRONG_GRANT_TYPE.id,
                name.to_string(),
                auth().authorization(right.clone()).form(body),
                Want::Status(400),
            )
        }));
        let multipart = "--byok-check-boundary\r\nContent-Disposition: form-data; name=\"grant_type\"\r\n\r\nclient_credentials\r\n--byok-check-boundary--\r\n".to_string();
        let refused_type = Want::OneOf(&[400, 415]);
        let types: Vec<(&str, Vec<u8>, Option<&'static str>, Want)> = vec![
            (
                "a JSON body",
                json!({"grant_type": "client_credentials"})
                    .to_string()
                    .into_bytes(),
                Some("application/json"),
                refused_type,
            ),
            (
                "the form labelled text/plain",
                form.into(),
                Some("text/plain"),
                refused_type,
            ),
            (
                "multipart/form-data",
                multipart.into_bytes(),
                Some(super::decrypt::MULTIPART),
                refused_type,
            ),
            (
                "the form without Content-Type",
                form.into(),
                None,
                refused_type,
            ),
            (
                "the form with charset=utf-8 (must be served)",
                form.into(),
                Some("application/x-www-form-urlencoded; charset=utf-8"),
                Want::Status(200),
            ),
        ];
        let types =
            futures_util::future::join_all(types.into_iter().map(|(name, body, ct, want)| {
                send(
                    AUTH_CONTENT_TYPE.id,
                    name.to_string(),
                    auth().authorization(right.clone()).raw(body, ct),
                    want,
                )
            }));
        Some(tokio::join!(wrong, grant, types))
    };
    let ((unknown, none, bearers, malformed), dependent) = tokio::join!(independent, dependent);
    let mut out = vec![
        judge_cases(&AUTH_UNKNOWN_CLIENT, unknown),
        judge_cases(&AUTH_NO_AUTHORIZATION, none),
        judge_cases(&AUTH_BEARER_CREDENTIALS, bearers),
        judge_cases(&AUTH_MALFORMED_BASIC, malformed),
    ];
    match dependent {
        Some((wrong, grant, types)) => {
            out.push(judge_cases(&AUTH_WRONG_SECRET, wrong));
            out.push(judge_cases(&AUTH_WRONG_GRANT_TYPE, grant));
            out.push(judge_cases(&AUTH_CONTENT_TYPE, types));
        }
        None => out.extend(skip_all(NEED_CREDENTIALS, refused.unwrap_or_default())),
    }
    out
}

/// `auth.repeat`: `/auth` twice more, after the first token was used, each token then used
/// on `/decrypt-key` with the target key (which must answer its plaintext).
pub(super) async fn repeat(ctx: &Ctx, target: Option<&TargetKey>) -> Check {
    let Some(call) = ctx.auth_call() else {
        return Check::skip(&AUTH_REPEAT, "a static API key: /auth is not used");
    };
    let Some(target) = target else {
        return Check::skip(&AUTH_REPEAT, "no key to decrypt with the new tokens");
    };
    let mut cases = Vec::new();
    for name in ["after the first token was used", "once more, at once"] {
        let result = ctx.probe.send(AUTH_REPEAT.id, call.clone()).await;
        let token = result.as_ref().ok().and_then(|ex| {
            (ex.status == 200).then(|| super::context::token_of(ex, ctx.s.time.mark()))?
        });
        cases.push(Case::new(
            format!("/auth {name}"),
            result,
            Want::Status(200),
        ));
        let Some(token) = token else { break };
        let used = ctx
            .probe
            .send(
                AUTH_REPEAT.id,
                Call::post(Endpoint::DecryptKey)
                    .authorization(format!("Bearer {}", token.value))
                    .json(&super::probe::decrypt_body(
                        &ctx.s.key_alias,
                        &target.encrypted_key,
                    )),
            )
            .await;
        let wrong_key = matches!(&used, Ok(ex) if ex.status == 200
            && !super::decrypt::plaintext_of(ex)
                .is_some_and(|p| super::plaintext::same_key(&p, &target.plaintext)));
        let mut c = Case::new(
            format!("its token on /decrypt-key ({name})"),
            used,
            Want::Status(200),
        );
        if wrong_key {
            c = c.with_problem("200 without the key's plaintext");
        }
        cases.push(c);
    }
    judge_cases(&AUTH_REPEAT, cases)
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
