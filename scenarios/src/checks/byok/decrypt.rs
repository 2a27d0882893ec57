//! The `decrypt` group: `/decrypt-key` answers the expected plaintext, the same way twice,
//! and refuses bad credentials (401, every form: [`super::refusals`]), bad keys (a 4xx,
//! never 200 or 5xx; the alterations are in [`super::tamper`]) and bad requests (4xx, with a
//! code that names the problem; every malformed body, every other label, oversized bodies
//! with and without their length).

use std::sync::Arc;

use contracts::envelope::PREFIX;
use serde_json::{Value, json};

use super::context::{
    Case, Ctx, TargetKey, Want, judge_cases, judge_status, judge_statuses, skip_all,
};
use super::defs::*;
use super::errors;
use super::plaintext;
use super::probe::{Call, CallError, CallErrorKind, Endpoint, Exchange, data_object, decrypt_body};
use super::refusals;
use super::setup;
use super::tamper::{Alteration, every_flip, extended, with_bad_character};
use crate::checks::{Check, CheckDef, Evidence};

/// The size of the oversized body.
pub(crate) const OVERSIZED_BYTES: usize = 1 << 20;
pub(crate) use super::settings::UNKNOWN_ALIAS;

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
    let mut evidence = Evidence::new()
        .with("plaintext", plaintext::describe(got))
        .with("expected", plaintext::describe(expected));
    if plaintext::decode(expected).is_none() {
        evidence = evidence.with(
            "cause",
            "the key the encrypted key holds (as given) is not 32 bytes: data keys are AES-256 keys",
        );
    }
    Check::judge(
        def,
        ok,
        evidence,
        "base64 of the expected 32-byte key (the same length and SHA-256)",
    )
}

/// The checks that send their own requests, after the first decrypt: the bearer refusals
/// ([`super::refusals`]), then the keys and bodies this endpoint must refuse.
pub(super) async fn checks(
    ctx: &Ctx,
    target: &TargetKey,
    baseline: &Result<Arc<Exchange>, CallError>,
) -> Vec<Check> {
    let body = decrypt_body(&ctx.s.key_alias, &target.encrypted_key);
    let (refusals, keys) = tokio::join!(
        refusals::checks(ctx, &refusals::DECRYPT, Endpoint::DecryptKey, &body),
        keys_and_bodies(ctx, target, baseline),
    );
    // The report puts every check in table order.
    let mut out = keys;
    out.extend(refusals);
    out
}

async fn keys_and_bodies(
    ctx: &Ctx,
    target: &TargetKey,
    baseline: &Result<Arc<Exchange>, CallError>,
) -> Vec<Check> {
    let alias = ctx.s.key_alias.as_str();
    let e = target.encrypted_key.as_str();
    let body = decrypt_body(alias, e);
    let bearer = ctx.bearer().await;
    let p = &ctx.probe;
    let post = || {
        Call::post(Endpoint::DecryptKey)
            .maybe_authorization(bearer.clone())
            .json(&body)
    };
    let send_body = |check: &'static str, b: Value| p.send(check, post().json(&b));
    let key = |text: String| decrypt_body(alias, &text);
    let payload = e.strip_prefix(PREFIX).unwrap_or(e);
    let other = ctx.s.other_key_alias.as_ref().map(|b| decrypt_body(b, e));

    let key_cases = |def: &'static CheckDef, forms: Vec<(&'static str, String)>| {
        futures_util::future::join_all(forms.into_iter().map(move |(name, text)| async move {
            Case::new(name, send_body(def.id, key(text)).await, Want::ClientError)
        }))
    };
    let (repeat, unknown, missing_prefix, wrong_prefix, v2, bad_b64) = tokio::join!(
        p.send(DECRYPT_REPEATABLE.id, post()),
        futures_util::future::join_all(unknown_aliases(alias).into_iter().map(
            |(name, a)| async move {
                let r = send_body(DECRYPT_UNKNOWN_ALIAS.id, decrypt_body(&a, e)).await;
                Case::new(name, r, Want::ClientError)
            }
        )),
        send_body(DECRYPT_MISSING_PREFIX.id, key(payload.to_string())),
        key_cases(&DECRYPT_WRONG_PREFIX, wrong_prefixes(payload)),
        send_body(DECRYPT_V2_PREFIX.id, key(format!("byok:v2:{payload}"))),
        key_cases(&DECRYPT_BAD_BASE64, bad_payloads(e)),
    );
    let flips = every_flip(e);
    let (flipped_any, extended) = tokio::join!(
        futures_util::future::join_all(flips.into_iter().map(|(name, text)| async move {
            let r = send_body(DECRYPT_FLIPPED_ANY_BYTE.id, key(text)).await;
            Case::new(name, r, Want::ClientError)
        })),
        futures_util::future::join_all([1usize, 16].map(|n| async move {
            let r = send_body(DECRYPT_EXTENDED_KEY.id, key(extended(e, n))).await;
            let name = if n == 1 {
                "1 byte appended".to_string()
            } else {
                format!("{n} bytes appended")
            };
            Case::new(name, r, Want::ClientError)
        })),
    );
    let (flipped, truncated, other_r) = tokio::join!(
        futures_util::future::join_all(
            Alteration::CHECKS
                .map(|(def, how)| async move { (def, send_body(def.id, key(how.apply(e))).await) })
        ),
        futures_util::future::join_all(Alteration::truncations().map(|how| async move {
            let Alteration::Truncate(n) = how else {
                unreachable!("truncations are cuts")
            };
            let r = send_body(DECRYPT_TRUNCATED_KEY.id, key(how.apply(e))).await;
            let name = if n == 1 {
                "1 byte cut".to_string()
            } else {
                format!("{n} bytes cut")
            };
            Case::new(name, r, Want::ClientError)
        })),
        async {
            match other {
                Some(b) => Some(send_body(DECRYPT_OTHER_ALIAS.id, b).await),
                None => None,
            }
        },
    );
    let (fields, malformed, content_type, oversized) = tokio::join!(
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
        futures_util::future::join_all(malformed_bodies(alias, e).into_iter().map(
            |(name, raw)| async move {
                let r = p
                    .send(
                        DECRYPT_MALFORMED_BODY.id,
                        post().raw(raw, Some("application/json")),
                    )
                    .await;
                Case::new(name, r, Want::ClientError)
            }
        )),
        futures_util::future::join_all(content_types(&body).into_iter().map(
            |(name, raw, ct, want)| async move {
                let r = p.send(DECRYPT_CONTENT_TYPE.id, post().raw(raw, ct)).await;
                Case::new(name, r, want)
            }
        )),
        oversized(ctx, &body, bearer.clone()),
    );

    let r = "POST /decrypt-key";
    let refused = Want::ClientError;
    let mut out = vec![judge_repeat(baseline, &repeat)];
    out.push(judge_cases(&DECRYPT_UNKNOWN_ALIAS, unknown));
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
    out.push(judge_cases(&DECRYPT_WRONG_PREFIX, wrong_prefix));
    out.push(judge_status(&DECRYPT_V2_PREFIX, r, &v2, refused));
    out.push(judge_cases(&DECRYPT_BAD_BASE64, bad_b64));
    for (def, res) in &flipped {
        out.push(judge_status(def, r, res, refused));
    }
    out.push(judge_cases(&DECRYPT_FLIPPED_ANY_BYTE, flipped_any));
    out.push(judge_cases(&DECRYPT_EXTENDED_KEY, extended));
    out.push(judge_cases(&DECRYPT_TRUNCATED_KEY, truncated));
    out.push(judge_statuses(&DECRYPT_MISSING_FIELDS, &fields, refused));
    out.push(judge_missing_fields_code(&fields));
    let mut malformed = malformed;
    if let Some(r) = p.raw(DECRYPT_MALFORMED_BODY.id, post(), "abc").await {
        malformed.push(Case::new(
            "Content-Length: abc (over plain http)",
            r.map(Arc::new),
            Want::ClientError,
        ));
    }
    out.push(judge_cases(&DECRYPT_MALFORMED_BODY, malformed));
    out.push(judge_cases(&DECRYPT_CONTENT_TYPE, content_type));
    out.push(oversized_verdict(oversized));
    out
}

/// Aliases the service does not have: one of its own, and the alias given in other cases,
/// with a space after it, with a character appended (an alias compared loosely decrypts
/// under them).
fn unknown_aliases(alias: &str) -> Vec<(&'static str, String)> {
    let mut v = vec![
        (
            "an alias the service does not have",
            UNKNOWN_ALIAS.to_string(),
        ),
        ("the alias in upper case", alias.to_uppercase()),
        ("the alias in lower case", alias.to_lowercase()),
        ("the alias with a space after it", format!("{alias} ")),
        ("the alias with a character appended", format!("{alias}x")),
    ];
    v.retain(|(_, a)| a != alias);
    v
}

/// The key under prefixes that are not `byok:v1:`, each with its name: another scheme, the
/// prefix in other cases, with a space before it, with its colon doubled.
fn wrong_prefixes(payload: &str) -> Vec<(&'static str, String)> {
    vec![
        ("kms:v1:", format!("kms:v1:{payload}")),
        ("BYOK:V1: (upper case)", format!("BYOK:V1:{payload}")),
        ("byok:V1:", format!("byok:V1:{payload}")),
        ("a space before byok:v1:", format!(" {PREFIX}{payload}")),
        ("byok:v1:: (colon doubled)", format!("{PREFIX}:{payload}")),
        ("byok:v1: twice", format!("{PREFIX}{PREFIX}{payload}")),
        ("the prefix at the end", format!("{payload}{PREFIX}")),
    ]
}

/// Keys whose text after the prefix is not base64 of an envelope, each with its name.
fn bad_payloads(e: &str) -> Vec<(&'static str, String)> {
    let payload = e.strip_prefix(PREFIX).unwrap_or(e);
    let mid = payload.len() / 2;
    let mid = (0..=mid)
        .rev()
        .find(|i| payload.is_char_boundary(*i))
        .unwrap_or(0);
    vec![
        ("a character outside base64", with_bad_character(e)),
        (
            "a space inside",
            format!("{PREFIX}{} {}", &payload[..mid], &payload[mid..]),
        ),
        ("nothing after the prefix", PREFIX.to_string()),
        ("one byte after the prefix", format!("{PREFIX}AA==")),
        ("four bytes after the prefix", format!("{PREFIX}AAAAAA==")),
        (
            "a character that is not ASCII inside",
            format!("{PREFIX}{}é{}", &payload[..mid], &payload[mid..]),
        ),
    ]
}

/// Bodies that are not a decrypt request, each with its name: invalid JSON, another top
/// level, and each field of a wrong type, null or nested once more.
fn malformed_bodies(alias: &str, e: &str) -> Vec<(&'static str, Vec<u8>)> {
    let whole = decrypt_body(alias, e).to_string();
    let cut = whole[..whole.len() / 2].to_string();
    let with = |data: Value| json!({ "data": data }).to_string();
    [
        ("invalid JSON (cut short)", cut),
        ("an empty body", String::new()),
        ("JSON null", "null".into()),
        ("a JSON number", "7".into()),
        ("a JSON string", format!("\"{e}\"")),
        ("JSON true", "true".into()),
        ("a JSON array", format!("[{whole}]")),
        ("data null", with(Value::Null)),
        ("data a string", with(json!(e))),
        ("data an array", with(json!([alias, e]))),
        (
            "key_alias a number",
            with(json!({"key_alias": 7, "encrypted_key": e})),
        ),
        (
            "key_alias null",
            with(json!({"key_alias": null, "encrypted_key": e})),
        ),
        (
            "key_alias an object",
            with(json!({"key_alias": {"name": alias}, "encrypted_key": e})),
        ),
        (
            "encrypted_key a number",
            with(json!({"key_alias": alias, "encrypted_key": 7})),
        ),
        (
            "encrypted_key null",
            with(json!({"key_alias": alias, "encrypted_key": null})),
        ),
        (
            "encrypted_key an array",
            with(json!({"key_alias": alias, "encrypted_key": [e]})),
        ),
        (
            "the request nested once more",
            with(json!({"data": {"key_alias": alias, "encrypted_key": e}})),
        ),
        // Deep enough to overflow a recursive parser's stack or limit, small enough (10 KB)
        // to stay under any body limit, so that the answer is the parser's, not the limit's.
        (
            "arrays nested 5,000 deep",
            format!("{}{}", "[".repeat(5_000), "]".repeat(5_000)),
        ),
        (
            "a number of 5,000 digits for key_alias",
            format!(
                "{{\"data\": {{\"key_alias\": {}, \"encrypted_key\": \"{e}\"}}}}",
                "7".repeat(5_000)
            ),
        ),
    ]
    .into_iter()
    .map(|(n, b)| (n, b.into_bytes()))
    .chain(std::iter::once((
        "a byte that is not UTF-8 inside a string",
        {
            let mut b = format!("{{\"data\": {{\"key_alias\": \"{alias}").into_bytes();
            b.push(0xff);
            b.extend(format!("\", \"encrypted_key\": \"{e}\"}}}}").into_bytes());
            b
        },
    )))
    .collect()
}

/// The labels a client could put on the request, each with what it must get: every label
/// but JSON refused, JSON with a charset served.
pub(crate) fn content_types(
    body: &Value,
) -> Vec<(&'static str, Vec<u8>, Option<&'static str>, Want)> {
    let json = body.to_string().into_bytes();
    let multipart = format!(
        "--{MULTIPART_BOUNDARY}\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n{body}\r\n--{MULTIPART_BOUNDARY}--\r\n"
    )
    .into_bytes();
    let refused = Want::ClientError;
    vec![
        (
            "labelled text/plain",
            json.clone(),
            Some("text/plain"),
            refused,
        ),
        (
            "labelled application/x-www-form-urlencoded",
            json.clone(),
            Some("application/x-www-form-urlencoded"),
            refused,
        ),
        (
            "sent as multipart/form-data",
            multipart,
            Some(MULTIPART),
            refused,
        ),
        ("without Content-Type", json.clone(), None, refused),
        (
            "labelled application/json-seq",
            json.clone(),
            Some("application/json-seq"),
            refused,
        ),
        (
            "labelled application/jsonx",
            json.clone(),
            Some("application/jsonx"),
            refused,
        ),
        (
            "application/json; charset=utf-8 (must be served)",
            json,
            Some("application/json; charset=utf-8"),
            Want::Status(200),
        ),
    ]
}

/// The boundary of the multipart bodies sent.
const MULTIPART_BOUNDARY: &str = "byok-check-boundary";
/// Their `Content-Type`.
pub(crate) const MULTIPART: &str = "multipart/form-data; boundary=byok-check-boundary";

/// A 1 MiB body, announced with `Content-Length` and sent chunked.
async fn oversized(
    ctx: &Ctx,
    body: &Value,
    bearer: Option<String>,
) -> Vec<(&'static str, Result<Arc<Exchange>, CallError>)> {
    // The request with a padding field, written out once (serialising a megabyte is slow).
    let text = body.to_string();
    let mut big = Vec::with_capacity(OVERSIZED_BYTES + text.len() + 16);
    big.extend_from_slice(&text.as_bytes()[..text.len() - 1]);
    big.extend_from_slice(b",\"padding\":\"");
    big.resize(big.len() + OVERSIZED_BYTES, b'a');
    big.extend_from_slice(b"\"}");
    let call = || {
        Call::post(Endpoint::DecryptKey)
            .maybe_authorization(bearer.clone())
            .raw(big.clone(), Some("application/json"))
            .close_connection()
    };
    let (length, chunked) = tokio::join!(
        ctx.probe.send(DECRYPT_OVERSIZED.id, call()),
        ctx.probe.send(DECRYPT_OVERSIZED.id, call().chunked()),
    );
    vec![("with Content-Length", length), ("chunked", chunked)]
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

/// Each form a 4xx, or the connection closed while the body was still being sent: a service
/// (or a proxy in front of it) that answers 413 and closes can reset the connection before
/// the answer is read.
fn oversized_verdict(results: Vec<(&'static str, Result<Arc<Exchange>, CallError>)>) -> Check {
    let mut closed = Vec::new();
    let cases = results
        .into_iter()
        .map(|(name, r)| match r {
            Err(e) if e.kind == CallErrorKind::Protocol => {
                closed.push(name);
                Case::closed_early(name, e)
            }
            r => Case::new(name, r, Want::ClientError),
        })
        .collect();
    let mut c = judge_cases(&DECRYPT_OVERSIZED, cases);
    if !closed.is_empty() {
        c.evidence = c.evidence.with("closed_before_the_body_was_sent", closed);
    }
    c
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
