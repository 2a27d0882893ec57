//! The `rotate` group (with `--use-rotate`): `/rotate-key` answers a new data key under the
//! alias, that key decrypts to the plaintext it came with, a second rotation gives another
//! key, and keys from before still decrypt. The second rotation runs after every other
//! check, so a service that drops old keys on rotation fails only `rotate.old_keys`; two
//! more follow, and the keys of all [`ROTATIONS`] (and `--encrypted-key`) are looked at for
//! a repeated nonce and a key in sight ([`super::sealing`]). `/rotate-key` answers a
//! plaintext key, so it gets every bearer refusal `/decrypt-key` gets
//! ([`super::refusals`]).

use std::sync::Arc;

use contracts::envelope::PREFIX;
use serde_json::{Value, json};

use super::context::{Case, Ctx, TargetKey, Want, judge_cases, judge_status, skip_all};
use super::decrypt::{UNKNOWN_ALIAS, plaintext_of};
use super::defs::*;
use super::plaintext;
use super::probe::{Call, CallError, Endpoint, Exchange, data_object, type_name};
use super::refusals;
use super::sealing::{self, Sealed};
use crate::checks::{Check, CheckDef, Evidence};

/// Every check of the group.
pub(crate) const ALL_ROTATE: &[CheckDef] = &[
    ROTATE_STATUS,
    ROTATE_SHAPE,
    ROTATE_ALIAS,
    ROTATE_PLAINTEXT,
    ROTATE_ROUNDTRIP,
    ROTATE_FRESH,
    ROTATE_OLD_KEYS,
    ROTATE_BODY,
    ROTATE_UNKNOWN_ALIAS,
    ROTATE_UNIQUE_NONCE,
    ROTATE_KEY_HIDDEN,
    ROTATE_NO_TOKEN,
    ROTATE_GARBAGE_TOKEN,
    ROTATE_TAMPERED_TOKEN,
    ROTATE_ALG_NONE,
    ROTATE_BASIC_CREDENTIALS,
    ROTATE_WRONG_API_KEY,
];

/// Rotations a run asks for, in all (their keys are compared for a repeated nonce).
pub(crate) const ROTATIONS: usize = 4;

/// One `/rotate-key` answer and the key in it.
pub(super) struct Rotation {
    /// The answer.
    pub(crate) result: Result<Arc<Exchange>, CallError>,
    /// The new key, when the answer has one.
    pub(crate) key: Option<TargetKey>,
}

/// Asks for a new data key under the configured alias.
pub(super) async fn mint(ctx: &Ctx, check: &'static str) -> Rotation {
    mint_under(ctx, check, &ctx.s.key_alias).await
}

/// Asks for a new data key under `alias`.
async fn mint_under(ctx: &Ctx, check: &'static str, alias: &str) -> Rotation {
    let call = Call::post(Endpoint::RotateKey)
        .maybe_authorization(ctx.bearer().await)
        .json(&json!({"data": {"key_alias": alias}}));
    let result = ctx.probe.send(check, call).await;
    let key = result.as_ref().ok().and_then(|ex| key_of(ex));
    Rotation { result, key }
}

/// The key a `/rotate-key` success answers.
fn key_of(ex: &Exchange) -> Option<TargetKey> {
    if ex.status != 200 {
        return None;
    }
    let body = ex.json()?;
    let data = data_object(&body)?;
    Some(TargetKey {
        encrypted_key: data.get("encrypted_dek")?.as_str()?.to_string(),
        plaintext: data.get("plaintext_dek")?.as_str()?.to_string(),
        rotated: true,
    })
}

/// The group's checks. `first` is the rotation made at the start when it gave the key the
/// decrypt checks use (`target`); otherwise the first rotation happens here.
pub(super) async fn checks(
    ctx: &Ctx,
    first: Option<Rotation>,
    target: Option<&TargetKey>,
    target_decrypt: Option<&Result<Arc<Exchange>, CallError>>,
) -> Vec<Check> {
    if !ctx.s.use_rotate {
        return skip_all(ALL_ROTATE, "/rotate-key is not checked: give --use-rotate");
    }
    if !ctx.runs("rotate") {
        return Vec::new();
    }
    let r1 = match first {
        Some(r) => r,
        None => mint(ctx, ROTATE_STATUS.id).await,
    };
    let alias = ctx.s.key_alias.as_str();
    // Each rotated key through /decrypt-key under the alias it was asked for, at once,
    // before any other rotation (a service that forgets old keys fails only
    // rotate.old_keys); the first is the decrypt checks' own when it was theirs.
    let mut roundtrips = Vec::new();
    if let Some(k1) = &r1.key {
        let first = match (target, target_decrypt) {
            (Some(t), Some(d)) if t.rotated && t.encrypted_key == k1.encrypted_key => d.clone(),
            _ => {
                ctx.decrypt(ROTATE_ROUNDTRIP.id, alias, &k1.encrypted_key)
                    .await
            }
        };
        roundtrips.push(decrypts_to(
            format!("rotation 1 under {alias}"),
            first,
            &k1.plaintext,
        ));
    }
    let mut other = None;
    if let Some(b) = &ctx.s.other_key_alias {
        let r = mint_under(ctx, ROTATE_ALIAS.id, b).await;
        // An alias the service does not have is the setting's mistake, not the service's
        // (decrypt.other_alias says so): this alias is left out.
        let missing = r
            .result
            .as_ref()
            .is_ok_and(|ex| super::setup::alias_refusal(ex) == Some("KEY_NOT_FOUND"));
        if let Some(k) = &r.key {
            let d = ctx.decrypt(ROTATE_ROUNDTRIP.id, b, &k.encrypted_key).await;
            roundtrips.push(decrypts_to(
                format!("the rotation of {b} under {b}"),
                d,
                &k.plaintext,
            ));
        }
        if !missing {
            other = Some((b.clone(), r));
        }
    }
    let body = json!({"data": {"key_alias": alias}});
    let (mut out, bodies, unknown) = tokio::join!(
        refusals::checks(ctx, &refusals::ROTATE, Endpoint::RotateKey, &body),
        bodies(ctx),
        mint_under(ctx, ROTATE_UNKNOWN_ALIAS.id, UNKNOWN_ALIAS),
    );
    out.extend(judge_answer(&r1.result));
    let (bodies, bodyless) = bodies;
    out.push(judge_cases(&ROTATE_BODY, bodies));
    out.push(judge_status(
        &ROTATE_UNKNOWN_ALIAS,
        "POST /rotate-key",
        &unknown.result,
        Want::ClientError,
    ));
    let mut asked = vec![(alias.to_string(), &r1)];
    if let Some((b, r)) = &other {
        asked.push((b.clone(), r));
    }
    out.push(judge_aliases(&asked));
    let Some(k1) = r1.key.clone() else {
        let reason = "/rotate-key gave no key (see rotate.status, rotate.shape)";
        out.push(if roundtrips.is_empty() {
            Check::skip(&ROTATE_ROUNDTRIP, reason)
        } else {
            judge_cases(&ROTATE_ROUNDTRIP, roundtrips)
        });
        out.extend(skip_all(
            &[
                ROTATE_FRESH,
                ROTATE_OLD_KEYS,
                ROTATE_UNIQUE_NONCE,
                ROTATE_KEY_HIDDEN,
            ],
            reason,
        ));
        return out;
    };

    // Every later rotation's key decrypts as soon as it is made (a service that answers a
    // cached plaintext for another key of the alias fails here).
    let mut rotations = vec![Some(k1.clone())];
    let mut seconds = None;
    for n in 2..=ROTATIONS {
        let check = if n == 2 {
            ROTATE_FRESH.id
        } else {
            ROTATE_UNIQUE_NONCE.id
        };
        let r = mint(ctx, check).await;
        if let Some(k) = &r.key {
            let d = ctx
                .decrypt(ROTATE_ROUNDTRIP.id, alias, &k.encrypted_key)
                .await;
            roundtrips.push(decrypts_to(
                format!("rotation {n} under {alias}"),
                d,
                &k.plaintext,
            ));
        }
        rotations.push(r.key.clone());
        seconds.get_or_insert(r.result);
    }
    out.push(judge_cases(&ROTATE_ROUNDTRIP, roundtrips));
    let mut old = vec![(
        "the first rotated key",
        k1.encrypted_key.clone(),
        k1.plaintext.clone(),
    )];
    if let Some(given) = &ctx.s.key {
        old.push((
            "--encrypted-key",
            given.encrypted_key.clone(),
            given.expected_plaintext.expose().to_string(),
        ));
    }
    let mut cases = Vec::new();
    for (name, encrypted, expected) in old {
        let res = ctx.decrypt(ROTATE_OLD_KEYS.id, alias, &encrypted).await;
        cases.push(decrypts_to(name, res, &expected));
    }
    out.push(judge_cases(&ROTATE_OLD_KEYS, cases));

    // Every key the run saw sealed under the alias: the given one, then every rotation's.
    let mut sealed = Vec::new();
    if let Some(given) = &ctx.s.key {
        sealed.push(Sealed {
            source: "--encrypted-key".into(),
            encrypted: given.encrypted_key.clone(),
            plaintext: given.expected_plaintext.expose().to_string(),
        });
    }
    for (n, k) in rotations.into_iter().enumerate() {
        if let Some(k) = k {
            sealed.push(Sealed {
                source: format!("rotation {}", n + 1),
                encrypted: k.encrypted_key,
                plaintext: k.plaintext,
            });
        }
    }
    // The other alias's key, and the key of the rotation without a body, for repeats.
    if let Some((b, Rotation { key: Some(k), .. })) = &other {
        sealed.push(Sealed {
            source: format!("the rotation of {b}"),
            encrypted: k.encrypted_key.clone(),
            plaintext: k.plaintext.clone(),
        });
    }
    if let Some(k) = bodyless {
        sealed.push(Sealed {
            source: "the rotation without a body".into(),
            encrypted: k.encrypted_key,
            plaintext: k.plaintext,
        });
    }
    let second = seconds.expect("ROTATIONS is at least 2");
    out.push(judge_fresh(&sealed, &second));
    out.extend(sealing::checks(&sealed));
    out
}

/// `rotate.fresh`: no two keys the run saw (the given one, every rotation's) hold the same
/// data key or are the same encrypted key.
fn judge_fresh(sealed: &[Sealed], second: &Result<Arc<Exchange>, CallError>) -> Check {
    let rotations = sealed
        .iter()
        .filter(|k| k.source.starts_with("rotation"))
        .count();
    if rotations < 2 {
        return Check::fail(
            &ROTATE_FRESH,
            outcome(second),
            "a second rotation answers 200 with a new key",
        );
    }
    let mut repeats = Vec::new();
    for (i, a) in sealed.iter().enumerate() {
        for b in &sealed[i + 1..] {
            let same_key = plaintext::same_key(&a.plaintext, &b.plaintext);
            if same_key || a.encrypted == b.encrypted {
                repeats.push(json!({
                    "keys": [a.source, b.source],
                    "same": if same_key { "data key" } else { "encrypted key" },
                }));
            }
        }
    }
    let keys: Vec<Value> = sealed
        .iter()
        .map(|k| json!({"key": k.source, "plaintext": plaintext::describe(&k.plaintext)}))
        .collect();
    Check::judge(
        &ROTATE_FRESH,
        repeats.is_empty(),
        Evidence::new().with("keys", keys).with("repeated", repeats),
        "a data key never seen before (neither an earlier rotation's nor --encrypted-key's) \
         on every rotation",
    )
}

/// `rotate.alias`: each rotation answers the alias it was asked for.
fn judge_aliases(asked: &[(String, &Rotation)]) -> Check {
    let mut cases = Vec::new();
    for (alias, r) in asked {
        let answered = r
            .result
            .as_ref()
            .ok()
            .filter(|ex| ex.status == 200)
            .and_then(|ex| ex.json())
            .and_then(|b| b.pointer("/data/key_alias").cloned());
        let mut c = Case::new(
            format!("asked for {alias}"),
            r.result.clone(),
            Want::Status(200),
        );
        match answered {
            Some(Value::String(a)) if a == *alias => {}
            Some(other) => c = c.with_problem(format!("answered key_alias {other}")),
            None => c = c.with_problem("no data.key_alias"),
        }
        cases.push(c);
    }
    judge_cases(&ROTATE_ALIAS, cases)
}

/// `/rotate-key` bodies: none (the reference's own call) served, the others refused; with
/// the key the call without a body gave.
async fn bodies(ctx: &Ctx) -> (Vec<Case>, Option<TargetKey>) {
    let bearer = ctx.bearer().await;
    let alias = ctx.s.key_alias.as_str();
    let with = |data: Value| json!({ "data": data }).to_string();
    let right = with(json!({ "key_alias": alias }));
    let json = Some("application/json");
    let forms: Vec<(&str, Option<String>, Option<&'static str>, Want)> = vec![
        (
            "no body (the caller's default alias)",
            None,
            None,
            Want::Status(200),
        ),
        (
            "invalid JSON",
            Some("{\"data\": {".into()),
            json,
            Want::ClientError,
        ),
        ("JSON null", Some("null".into()), json, Want::ClientError),
        (
            "data null",
            Some(with(Value::Null)),
            json,
            Want::ClientError,
        ),
        (
            "data a string",
            Some(with(json!(alias))),
            json,
            Want::ClientError,
        ),
        (
            "data an array",
            Some(with(json!([alias]))),
            json,
            Want::ClientError,
        ),
        (
            "key_alias a number",
            Some(with(json!({"key_alias": 7}))),
            json,
            Want::ClientError,
        ),
        (
            "key_alias null",
            Some(with(json!({"key_alias": null}))),
            json,
            Want::ClientError,
        ),
        (
            "key_alias an array",
            Some(with(json!({"key_alias": [alias]}))),
            json,
            Want::ClientError,
        ),
        (
            "key_alias an object",
            Some(with(json!({"key_alias": {"name": alias}}))),
            json,
            Want::ClientError,
        ),
        (
            "the request labelled text/plain",
            Some(right.clone()),
            Some("text/plain"),
            Want::ClientError,
        ),
        (
            "the request without Content-Type",
            Some(right.clone()),
            None,
            Want::ClientError,
        ),
        (
            "the request padded to 1 MiB",
            Some(format!(
                "{{\"data\": {{\"key_alias\": \"{alias}\"}}, \"padding\": \"{}\"}}",
                "a".repeat(super::decrypt::OVERSIZED_BYTES)
            )),
            json,
            Want::ClientError,
        ),
    ];
    let cases =
        futures_util::future::join_all(forms.into_iter().map(|(name, body, label, want)| {
            let call = Call::post(Endpoint::RotateKey).maybe_authorization(bearer.clone());
            let call = match body {
                Some(b) if b.len() > 1024 => call.raw(b, label).close_connection(),
                Some(b) => call.raw(b, label),
                None => call,
            };
            async move {
                match ctx.probe.send(ROTATE_BODY.id, call).await {
                    Err(e)
                        if e.kind == super::probe::CallErrorKind::Protocol
                            && name.contains("1 MiB") =>
                    {
                        Case::closed_early(name, e)
                    }
                    r => Case::new(name, r, want),
                }
            }
        }))
        .await;
    let key = cases[0].result.as_ref().ok().and_then(|ex| key_of(ex));
    (cases, key)
}

/// A case of a decrypt that must answer `expected` (base64 of the key).
fn decrypts_to(
    name: impl Into<String>,
    result: Result<Arc<Exchange>, CallError>,
    expected: &str,
) -> Case {
    let problem = match &result {
        Ok(ex) if ex.status == 200 => match plaintext_of(ex) {
            Some(p) if plaintext::same_key(&p, expected) => None,
            Some(_) => Some("200 with another key's plaintext"),
            None => Some("200 without data.plaintext_key"),
        },
        _ => None,
    };
    let c = Case::new(name, result, Want::Status(200));
    match problem {
        Some(p) => c.with_problem(p),
        None => c,
    }
}

fn outcome(result: &Result<Arc<Exchange>, CallError>) -> Evidence {
    super::probe::outcome_evidence("POST /rotate-key", result)
}

fn judge_answer(result: &Result<Arc<Exchange>, CallError>) -> Vec<Check> {
    let mut out = vec![judge_status(
        &ROTATE_STATUS,
        "POST /rotate-key",
        result,
        Want::Status(200),
    )];
    let ex = match result {
        Ok(ex) if ex.status == 200 => ex,
        _ => {
            out.extend(skip_all(
                &[ROTATE_SHAPE, ROTATE_PLAINTEXT],
                "/rotate-key did not answer 200 (see rotate.status)",
            ));
            return out;
        }
    };
    let body = ex.json();
    let data = body.as_ref().and_then(data_object);
    let field = |n: &str| data.and_then(|d| d.get(n));
    let mut problems = Vec::new();
    if !ex.is_json_labelled() {
        problems.push("Content-Type is not application/json".to_string());
    }
    for name in ["encrypted_dek", "key_alias", "plaintext_dek"] {
        match field(name) {
            None => problems.push(format!("data.{name} is missing")),
            Some(Value::String(_)) => {}
            Some(v) => problems.push(format!("data.{name} is a {}", type_name(v))),
        }
    }
    if let Some(Value::String(e)) = field("encrypted_dek")
        && !e.starts_with(PREFIX)
    {
        problems.push(format!("data.encrypted_dek does not start with {PREFIX}"));
    }
    out.push(Check::judge(
        &ROTATE_SHAPE,
        problems.is_empty(),
        ex.evidence().with("problems", problems),
        "application/json {\"data\": {\"encrypted_dek\": \"byok:v1:...\", \"key_alias\": \
         string, \"plaintext_dek\": string}}",
    ));
    out.push(match field("plaintext_dek").and_then(Value::as_str) {
        Some(p) => Check::judge(
            &ROTATE_PLAINTEXT,
            plaintext::decode(p).is_some(),
            Evidence::new().with("plaintext_dek", plaintext::describe(p)),
            "base64 of 32 bytes",
        ),
        None => Check::skip(
            &ROTATE_PLAINTEXT,
            "no data.plaintext_dek (see rotate.shape)",
        ),
    });
    out
}
