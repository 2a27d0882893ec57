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

use super::context::{Ctx, TargetKey, Want, judge_status, skip_all};
use super::decrypt::{judge_plaintext, plaintext_of};
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
    let call = Call::post(Endpoint::RotateKey)
        .maybe_authorization(ctx.bearer().await)
        .json(&json!({"data": {"key_alias": ctx.s.key_alias}}));
    let result = ctx.probe.send(check, call).await;
    let key = result.as_ref().ok().and_then(|ex| {
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
    });
    Rotation { result, key }
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
    let body = json!({"data": {"key_alias": ctx.s.key_alias}});
    let mut out =
        refusals::checks(ctx, &refusals::ROTATE, Endpoint::RotateKey, &body).await;
    out.extend(judge_answer(ctx, &r1.result));
    let Some(k1) = r1.key else {
        out.extend(skip_all(
            &[
                ROTATE_ROUNDTRIP,
                ROTATE_FRESH,
                ROTATE_OLD_KEYS,
                ROTATE_UNIQUE_NONCE,
                ROTATE_KEY_HIDDEN,
            ],
            "/rotate-key gave no key (see rotate.status, rotate.shape)",
        ));
        return out;
    };

    // The first decrypt of the rotated key: the decrypt checks' own when it was theirs.
    let own;
    let roundtrip = match (target, target_decrypt) {
        (Some(t), Some(d)) if t.rotated && t.encrypted_key == k1.encrypted_key => d,
        _ => {
            own = ctx
                .decrypt(ROTATE_ROUNDTRIP.id, &ctx.s.key_alias, &k1.encrypted_key)
                .await;
            &own
        }
    };
    out.push(judge_decrypts_to(
        &ROTATE_ROUNDTRIP,
        roundtrip,
        &k1.plaintext,
    ));

    let r2 = mint(ctx, ROTATE_FRESH.id).await;
    out.push(match &r2.key {
        Some(k2) => Check::judge(
            &ROTATE_FRESH,
            !plaintext::same_key(&k1.plaintext, &k2.plaintext)
                && k1.encrypted_key != k2.encrypted_key,
            Evidence::new()
                .with("first", plaintext::describe(&k1.plaintext))
                .with("second", plaintext::describe(&k2.plaintext))
                .with("same_encrypted_dek", k1.encrypted_key == k2.encrypted_key),
            "another data key (other plaintext_dek and encrypted_dek) on every rotation",
        ),
        None => Check::fail(
            &ROTATE_FRESH,
            outcome(&r2.result),
            "a second rotation answers 200 with a new key",
        ),
    });

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
    let mut ok = true;
    let mut cases = Vec::new();
    for (name, encrypted, expected) in old {
        let res = ctx
            .decrypt(ROTATE_OLD_KEYS.id, &ctx.s.key_alias, &encrypted)
            .await;
        let c = judge_decrypts_to(&ROTATE_OLD_KEYS, &res, &expected);
        ok &= c.result == crate::checks::Outcome::Pass;
        cases.push(json!({"key": name, "answer": Value::Object(c.evidence.0)}));
    }
    out.push(Check::judge(
        &ROTATE_OLD_KEYS,
        ok,
        Evidence::new().with("cases", cases),
        "keys from before the rotation still decrypt to their plaintext",
    ));

    let mut sealed = vec![Sealed {
        source: "the first rotation".into(),
        encrypted: k1.encrypted_key.clone(),
        plaintext: k1.plaintext.clone(),
    }];
    if let Some(k2) = &r2.key {
        sealed.push(Sealed {
            source: "the second rotation".into(),
            encrypted: k2.encrypted_key.clone(),
            plaintext: k2.plaintext.clone(),
        });
    }
    for n in 3..=ROTATIONS {
        if let Some(k) = mint(ctx, ROTATE_UNIQUE_NONCE.id).await.key {
            sealed.push(Sealed {
                source: format!("rotation {n}"),
                encrypted: k.encrypted_key,
                plaintext: k.plaintext,
            });
        }
    }
    if let Some(given) = &ctx.s.key {
        sealed.push(Sealed {
            source: "--encrypted-key".into(),
            encrypted: given.encrypted_key.clone(),
            plaintext: given.expected_plaintext.expose().to_string(),
        });
    }
    out.extend(sealing::checks(&sealed));
    out
}

fn outcome(result: &Result<Arc<Exchange>, CallError>) -> Evidence {
    super::probe::outcome_evidence("POST /rotate-key", result)
}

fn judge_decrypts_to(
    def: &CheckDef,
    result: &Result<Arc<Exchange>, CallError>,
    expected: &str,
) -> Check {
    match result {
        Ok(ex) if ex.status == 200 => match plaintext_of(ex) {
            Some(p) => {
                let mut c = judge_plaintext(def, &p, expected);
                c.evidence = c.evidence.status(200);
                c
            }
            None => Check::fail(def, ex.evidence(), "200 with data.plaintext_key"),
        },
        _ => Check::fail(def, outcome(result), "200 with the key's plaintext"),
    }
}

fn judge_answer(ctx: &Ctx, result: &Result<Arc<Exchange>, CallError>) -> Vec<Check> {
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
                &[ROTATE_SHAPE, ROTATE_ALIAS, ROTATE_PLAINTEXT],
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
    out.push(match field("key_alias") {
        Some(a) => Check::judge(
            &ROTATE_ALIAS,
            a == ctx.s.key_alias.as_str(),
            Evidence::new()
                .with("key_alias", a.clone())
                .with("asked", ctx.s.key_alias.clone()),
            format!("{:?}", ctx.s.key_alias),
        ),
        None => Check::skip(&ROTATE_ALIAS, "no data.key_alias (see rotate.shape)"),
    });
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
