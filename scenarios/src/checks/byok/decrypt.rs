//! The `decrypt` group: `/decrypt-key` answers the expected plaintext, the same way twice,
//! and refuses bad credentials (401), bad keys (a 4xx, never 200 or 5xx; the alterations are
//! in [`super::tamper`]) and bad requests (4xx, with a code that names the problem).

use std::sync::Arc;

use contracts::envelope::PREFIX;
use serde_json::{Value, json};

use super::context::{Ctx, TargetKey, Want, judge_status, judge_statuses, skip_all};
use super::defs::*;
use super::errors;
use super::jwt;
use super::plaintext;
use super::probe::{
    Call, CallError, CallErrorKind, Endpoint, Exchange, SecretKind, data_object, decrypt_body,
};
use super::settings::Credentials;
use super::setup;
use super::tamper::{Alteration, with_bad_character};
use crate::checks::{Check, CheckDef, Evidence};

/// The size of the oversized body.
pub(crate) const OVERSIZED_BYTES: usize = 1 << 20;
/// An alias no service has.
pub(crate) const UNKNOWN_ALIAS: &str = "byok-check-no-such-alias";

/// The checks judged on the first decrypt.
const BASELINE: &[CheckDef] = &[DECRYPT_STATUS, DECRYPT_SHAPE, DECRYPT_PLAINTEXT];

/// The plaintext an answer carries, when it has the contract's shape.
pub(crate) fn plaintext_of(ex: &Exchange) -> Option<String> {
    let body = ex.json()?;
    Some(
        data_object(&body)?
            .get("plaintext_key")?
            .as_str()?
            .to_string(),
    )
}

/// Judges the first decrypt of `target`: status, shape, plaintext.
pub(crate) fn judge_baseline(
    target: &TargetKey,
    result: &Result<Arc<Exchange>, CallError>,
) -> Vec<Check> {
    let mut out = vec![judge_status(
        &DECRYPT_STATUS,
        "POST /decrypt-key",
        result,
        Want::Status(200),
    )];
    let ex = match result {
        Ok(ex) if ex.status == 200 => ex,
        _ => {
            out.extend(skip_all(
                &BASELINE[1..],
                "/decrypt-key did not answer 200 (see decrypt.status)",
            ));
            return out;
        }
    };
    let got = plaintext_of(ex);
    let labelled = ex.is_json_labelled();
    out.push(Check::judge(
        &DECRYPT_SHAPE,
        got.is_some() && labelled,
        ex.evidence().with("json_content_type", labelled),
        "application/json {\"data\": {\"plaintext_key\": string}}",
    ));
    out.push(match got {
        Some(p) => judge_plaintext(&DECRYPT_PLAINTEXT, &p, &target.plaintext),
        None => Check::skip(
            &DECRYPT_PLAINTEXT,
            "no data.plaintext_key (see decrypt.shape)",
        ),
    });
    out
}

/// Judges a plaintext against the expected one, showing only fingerprints.
pub(crate) fn judge_plaintext(def: &CheckDef, got: &str, expected: &str) -> Check {
    let ok = plaintext::decode(got).is_some() && plaintext::same_key(got, expected);
    Check::judge(
        def,
        ok,
        Evidence::new()
            .with("plaintext", plaintext::describe(got))
            .with("expected", plaintext::describe(expected)),
        "base64 of the expected 32-byte key (the same length and SHA-256)",
    )
}

/// The checks that send their own requests, after the first decrypt.
pub(super) async fn checks(
    ctx: &Ctx,
    target: &TargetKey,
    baseline: &Result<Arc<Exchange>, CallError>,
) -> Vec<Check> {
    let alias = ctx.s.key_alias.as_str();
    let e = target.encrypted_key.as_str();
    let body = decrypt_body(alias, e);
    let bearer = ctx.bearer().await;
    let post = |bearer: Option<String>| {
        Call::post(Endpoint::DecryptKey)
            .maybe_authorization(bearer)
            .json(&body)
    };

    // Tokens.
    let token = bearer
        .as_deref()
        .and_then(|b| b.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_string();
    let garbage = jwt::garbage(contracts::ids::IdGen::from_entropy().bytes::<24>());
    let tampered = jwt::tamper(&token);
    let parsed = jwt::parse(&token).ok();
    let subject = match &ctx.s.credentials {
        Credentials::Client { id, .. } => id.clone(),
        Credentials::ApiKey(_) => "byok-check".into(),
    };
    let none = jwt::alg_none(parsed.as_ref(), &subject, ctx.s.time.now().timestamp());
    for t in [&garbage, &tampered, &none] {
        ctx.probe.secret(t.clone(), SecretKind::Token);
    }

    // Keys.
    let key = |text: String| decrypt_body(alias, &text);
    let payload = e.strip_prefix(PREFIX).unwrap_or(e);
    let other = ctx.s.other_key_alias.as_ref().map(|b| decrypt_body(b, e));
    let mut oversized = body.clone();
    oversized["padding"] = Value::String("a".repeat(OVERSIZED_BYTES));

    let p = &ctx.probe;
    let send_body = |check: &'static str, b: Value| {
        p.send(
            check,
            Call::post(Endpoint::DecryptKey)
                .maybe_authorization(bearer.clone())
                .json(&b),
        )
    };
    let basic = match &ctx.s.credentials {
        Credentials::Client { id, secret } => Some(ctx.basic(id, secret.expose())),
        Credentials::ApiKey(_) => None,
    };
    let (repeat, no_token, garbage_r, tampered_r, none_r, basic_r, unknown) = tokio::join!(
        p.send(DECRYPT_REPEATABLE.id, post(bearer.clone())),
        p.send(DECRYPT_NO_TOKEN.id, post(None)),
        p.send(
            DECRYPT_GARBAGE_TOKEN.id,
            post(Some(format!("Bearer {garbage}")))
        ),
        p.send(
            DECRYPT_TAMPERED_TOKEN.id,
            post(Some(format!("Bearer {tampered}")))
        ),
        p.send(DECRYPT_ALG_NONE.id, post(Some(format!("Bearer {none}")))),
        async {
            match basic.clone() {
                Some(b) => Some(p.send(DECRYPT_BASIC_CREDENTIALS.id, post(Some(b))).await),
                None => None,
            }
        },
        send_body(DECRYPT_UNKNOWN_ALIAS.id, decrypt_body(UNKNOWN_ALIAS, e)),
    );
    let (missing_prefix, wrong_prefix, v2, bad_b64, tampered_keys) = tokio::join!(
        send_body(DECRYPT_MISSING_PREFIX.id, key(payload.to_string())),
        send_body(DECRYPT_WRONG_PREFIX.id, key(format!("kms:v1:{payload}"))),
        send_body(DECRYPT_V2_PREFIX.id, key(format!("byok:v2:{payload}"))),
        send_body(DECRYPT_BAD_BASE64.id, key(with_bad_character(e))),
        futures_util::future::join_all(
            Alteration::CHECKS
                .map(|(def, how)| async move { (def, send_body(def.id, key(how.apply(e))).await) })
        ),
    );
    let (other_r, fields, content_type, oversized_r) = tokio::join!(
        async {
            match other {
                Some(b) => Some(send_body(DECRYPT_OTHER_ALIAS.id, b).await),
                None => None,
            }
        },
        async {
            let cases = [
                ("no encrypted_key", json!({"data": {"key_alias": alias}})),
                ("no key_alias", json!({"data": {"encrypted_key": e}})),
                ("no data", json!({})),
            ];
            let mut out = Vec::new();
            for (name, b) in cases {
                out.push((name, send_body(DECRYPT_MISSING_FIELDS.id, b).await));
            }
            out
        },
        p.send(
            DECRYPT_CONTENT_TYPE.id,
            post(bearer.clone()).content_type("text/plain")
        ),
        p.send(
            DECRYPT_OVERSIZED.id,
            Call::post(Endpoint::DecryptKey)
                .maybe_authorization(bearer.clone())
                .json(&oversized)
                .close_connection()
        ),
    );

    let r = "POST /decrypt-key";
    let mut out = vec![judge_repeat(baseline, &repeat)];
    if bearer.is_none() {
        out.extend(skip_all(
            &[
                DECRYPT_GARBAGE_TOKEN,
                DECRYPT_TAMPERED_TOKEN,
                DECRYPT_ALG_NONE,
            ],
            "no access token to start from (see auth.status)",
        ));
        out.push(judge_status(
            &DECRYPT_NO_TOKEN,
            r,
            &no_token,
            Want::Status(401),
        ));
    } else {
        out.push(judge_status(
            &DECRYPT_NO_TOKEN,
            r,
            &no_token,
            Want::Status(401),
        ));
        out.push(judge_status(
            &DECRYPT_GARBAGE_TOKEN,
            r,
            &garbage_r,
            Want::Status(401),
        ));
        out.push(judge_status(
            &DECRYPT_TAMPERED_TOKEN,
            r,
            &tampered_r,
            Want::Status(401),
        ));
        out.push(judge_status(
            &DECRYPT_ALG_NONE,
            r,
            &none_r,
            Want::Status(401),
        ));
    }
    out.push(match &basic_r {
        Some(res) => judge_status(&DECRYPT_BASIC_CREDENTIALS, r, res, Want::Status(401)),
        None => Check::skip(
            &DECRYPT_BASIC_CREDENTIALS,
            "a static API key: there are no client credentials to send",
        ),
    });
    let refused = Want::ClientError;
    out.push(judge_status(&DECRYPT_UNKNOWN_ALIAS, r, &unknown, refused));
    out.push(match &other_r {
        // The refusal names the alias, not the key: --other-key-alias is not an alias of the
        // service, so the check could not try what it is for.
        Some(Ok(ex)) if setup::alias_refusal(ex) == Some("KEY_NOT_FOUND") => Check::skip(
            &DECRYPT_OTHER_ALIAS,
            format!(
                "the service has no alias '{}' (404 KEY_NOT_FOUND): check --other-key-alias",
                ctx.s.other_key_alias.as_deref().unwrap_or_default()
            ),
        ),
        Some(res) => judge_status(&DECRYPT_OTHER_ALIAS, r, res, refused),
        None => Check::skip(
            &DECRYPT_OTHER_ALIAS,
            "give --other-key-alias (another alias the service has) to check that a key \
             only decrypts under its own alias",
        ),
    });
    out.push(judge_status(
        &DECRYPT_MISSING_PREFIX,
        r,
        &missing_prefix,
        refused,
    ));
    out.push(judge_status(
        &DECRYPT_WRONG_PREFIX,
        r,
        &wrong_prefix,
        refused,
    ));
    out.push(judge_status(&DECRYPT_V2_PREFIX, r, &v2, refused));
    out.push(judge_status(&DECRYPT_BAD_BASE64, r, &bad_b64, refused));
    for (def, res) in &tampered_keys {
        out.push(judge_status(def, r, res, refused));
    }
    out.push(judge_statuses(&DECRYPT_MISSING_FIELDS, &fields, refused));
    out.push(judge_missing_fields_code(&fields));
    out.push(judge_status(
        &DECRYPT_CONTENT_TYPE,
        r,
        &content_type,
        refused,
    ));
    out.push(judge_oversized(&oversized_r));
    for res in [
        &repeat,
        &unknown,
        &missing_prefix,
        &wrong_prefix,
        &v2,
        &bad_b64,
    ]
    .into_iter()
    .chain(tampered_keys.iter().map(|(_, r)| r))
    .chain(other_r.as_ref())
    .chain(basic_r.as_ref())
    .flatten()
    {
        ctx.note_plaintexts(res);
    }
    out
}

/// `decrypt.missing_fields_code`: the missing-field requests that were refused with a 4xx
/// are refused with a code that names a bad request. A code that names another problem
/// (`KEY_NOT_FOUND`, `UNAUTHORIZED`, `DECRYPTION_FAILED`, ...) or a status that does (401,
/// 403, 404, 405, 413) sends the operator after the wrong setting.
fn judge_missing_fields_code(fields: &[(&str, Result<Arc<Exchange>, CallError>)]) -> Check {
    let mut cases = Vec::new();
    let mut contradicting = Vec::new();
    for (name, res) in fields {
        let Ok(ex) = res else { continue };
        if !(400..500).contains(&ex.status) {
            continue;
        }
        let body = ex.json();
        let code = body
            .as_ref()
            .and_then(|b| b.pointer("/error/code"))
            .and_then(Value::as_str);
        let other_problem = matches!(ex.status, 401 | 403 | 404 | 405 | 413)
            || code.is_some_and(|c| c != "INVALID_REQUEST" && errors::is_documented(c));
        if other_problem {
            contradicting.push(*name);
        }
        cases.push(json!({"case": name, "status": ex.status, "code": code}));
    }
    if cases.is_empty() {
        return Check::skip(
            &DECRYPT_MISSING_FIELDS_CODE,
            "no missing-field request was refused with a 4xx (see decrypt.missing_fields)",
        );
    }
    Check::judge(
        &DECRYPT_MISSING_FIELDS_CODE,
        contradicting.is_empty(),
        Evidence::new()
            .with("cases", cases)
            .with("naming_another_problem", contradicting),
        "400 INVALID_REQUEST (or another 4xx whose code names a bad request) for every case",
    )
}

/// A 4xx, or the connection closed while the body was still being sent: a service (or a
/// proxy in front of it) that answers 413 on `Content-Length` and closes can reset the
/// connection before the answer is read.
fn judge_oversized(result: &Result<Arc<Exchange>, CallError>) -> Check {
    match result {
        Err(e) if e.kind == CallErrorKind::Protocol => Check::pass(
            &DECRYPT_OVERSIZED,
            e.evidence("POST /decrypt-key").with(
                "refused",
                "the connection was closed before the body was sent",
            ),
        ),
        _ => judge_status(
            &DECRYPT_OVERSIZED,
            "POST /decrypt-key",
            result,
            Want::ClientError,
        ),
    }
}

fn judge_repeat(
    first: &Result<Arc<Exchange>, CallError>,
    second: &Result<Arc<Exchange>, CallError>,
) -> Check {
    let Some(a) = first.as_ref().ok().and_then(|ex| plaintext_of(ex)) else {
        return Check::skip(
            &DECRYPT_REPEATABLE,
            "the first decrypt gave no plaintext (see decrypt.status)",
        );
    };
    match second {
        Ok(ex) => {
            let b = plaintext_of(ex);
            let same = b.as_deref().is_some_and(|b| plaintext::same_key(&a, b));
            Check::judge(
                &DECRYPT_REPEATABLE,
                ex.status == 200 && same,
                ex.evidence().with("first", plaintext::describe(&a)).with(
                    "second",
                    b.map(|b| plaintext::describe(&b)).unwrap_or(Value::Null),
                ),
                "200 with the same plaintext_key as the first call",
            )
        }
        Err(e) => Check::fail(
            &DECRYPT_REPEATABLE,
            e.evidence("POST /decrypt-key"),
            "200 with the same plaintext_key as the first call",
        ),
    }
}
