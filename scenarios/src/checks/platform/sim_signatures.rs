//! Part of the `sim` group ([`super::sim`]): the webhooks' signatures. Every delivery the
//! run received is verified under the secret the target signs with: the HMAC-SHA256 of
//! `{timestamp}.{raw body}` (a recorded fact, `sim.webhook_signatures`, an error), then the
//! form the record assumes (`sim.webhook_signature_form`, a warning): lower-case hex, and a
//! timestamp in Unix seconds of the target's clock at the try (the simulated time on a
//! simulated clock), not milliseconds nor this machine's time.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};

use super::context::Ctx;
use super::receiver::Delivery;
use super::sim_defs::{SIGNATURE_FORM, SIGNATURES};
use super::verdicts::Verdicts;
use crate::checks::{Check, Evidence};

/// How far a try's timestamp may stand outside the span of the target's clock the run saw
/// (a try between two reads of it, rounded down to the second).
const SLACK_SECS: i64 = 60;

/// Judges both checks; `span` is the target's clock before the group and after it.
pub(super) fn judge(
    cx: &Ctx,
    v: &mut Verdicts,
    deliveries: &[Delivery],
    span: Option<(DateTime<Utc>, DateTime<Utc>)>,
) {
    signatures(cx, v, deliveries);
    form(v, deliveries, span);
}

/// The lower-case hex HMAC-SHA256 of `{ts}.{body}` under `secret`.
fn hmac(secret: &str, ts: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(ts.as_bytes());
    mac.update(b".");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// `sim.webhook_signatures`: every delivery's timestamp and signature verify under the
/// secret the target signs with (skipped without `--webhook-secret`).
fn signatures(cx: &Ctx, v: &mut Verdicts, deliveries: &[Delivery]) {
    let Some(secret) = &cx.settings.webhook_secret else {
        v.add(Check::skip(
            &SIGNATURES,
            "give --webhook-secret (the secret the target signs its webhooks with) to verify the signatures",
        ));
        return;
    };
    if deliveries.is_empty() {
        v.add(Check::skip(&SIGNATURES, "no webhook was delivered"));
        return;
    }
    let verifies =
        |ts: &str, body: &[u8], sig: &str| sig.trim().eq_ignore_ascii_case(&hmac(secret, ts, body));
    let mut bad = Vec::new();
    for d in deliveries {
        let problem = match (&d.timestamp, &d.signature) {
            (None, _) => Some("no x-webhook-timestamp".to_string()),
            (_, None) => Some("no x-webhook-signature".to_string()),
            (Some(ts), Some(_)) if ts.trim().parse::<i64>().is_err() => {
                Some(format!("x-webhook-timestamp {ts:?} is not Unix seconds"))
            }
            (Some(ts), Some(sig)) => (!verifies(ts, &d.body, sig)).then(|| {
                "the signature is not the HMAC-SHA256 of {timestamp}.{the body as received}"
                    .to_string()
            }),
        };
        if let Some(p) = problem {
            let event: Value = serde_json::from_slice(&d.body).unwrap_or(Value::Null);
            bad.push(json!({
                "problem": p,
                "attempt_id": event.get("attempt_id").cloned().unwrap_or(Value::Null),
                "x_webhook_timestamp": d.timestamp,
                // The target's request to the receiver that showed it (its body less the
                // variables a campaign's users carry).
                "request": {
                    "method": "POST",
                    "headers": {
                        "x-webhook-timestamp": d.timestamp,
                        "x-webhook-signature": d.signature,
                    },
                    "body_bytes": d.body.len(),
                },
            }));
        }
    }
    // What the verification says of the first delivery and of it with one byte changed: a
    // check that passes must have told them apart.
    let first = &deliveries[0];
    if let (Some(ts), Some(sig)) = (&first.timestamp, &first.signature) {
        let mut changed = first.body.to_vec();
        changed.push(b' ');
        v.varied(
            &SIGNATURES,
            "verifies",
            [verifies(ts, &first.body, sig), verifies(ts, &changed, sig)],
        );
    }
    let n = bad.len();
    v.judge(
        &SIGNATURES,
        bad.is_empty(),
        Evidence::new()
            .with("deliveries", deliveries.len())
            .with("not_verified", n)
            .with("examples", bad.into_iter().take(5).collect::<Vec<_>>()),
        "every delivery signed: x-webhook-signature = hex HMAC-SHA256(secret, \"{x-webhook-timestamp}.{raw body}\")",
    );
}

/// What is wrong with the form of one delivery's headers, if anything: the signature not
/// 64 lower-case hex digits, the timestamp not Unix seconds within `span` (widened by
/// [`SLACK_SECS`]).
fn form_problem(
    timestamp: &str,
    signature: &str,
    span: (DateTime<Utc>, DateTime<Utc>),
) -> Option<String> {
    let sig = signature.trim();
    if sig.len() != 64
        || !sig
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Some(format!(
            "x-webhook-signature {sig:?} is not 64 lower-case hex digits"
        ));
    }
    let Ok(secs) = timestamp.trim().parse::<i64>() else {
        return Some(format!(
            "x-webhook-timestamp {timestamp:?} is not Unix seconds"
        ));
    };
    let (from, to) = (
        span.0.timestamp() - SLACK_SECS,
        span.1.timestamp() + SLACK_SECS,
    );
    (!(from..=to).contains(&secs)).then(|| {
        format!(
            "x-webhook-timestamp {secs} is not a second of the target's clock while the run \
             went ({} to {}): milliseconds, or another clock than the target's",
            span.0.to_rfc3339(),
            span.1.to_rfc3339()
        )
    })
}

/// `sim.webhook_signature_form`: every delivery's headers in the form the record assumes.
fn form(v: &mut Verdicts, deliveries: &[Delivery], span: Option<(DateTime<Utc>, DateTime<Utc>)>) {
    let Some(span) = span else {
        v.add(Check::skip(
            &SIGNATURE_FORM,
            "the target's clock could not be read before and after the group",
        ));
        return;
    };
    let signed: Vec<(&Delivery, &str, &str)> = deliveries
        .iter()
        .filter_map(|d| Some((d, d.timestamp.as_deref()?, d.signature.as_deref()?)))
        .collect();
    let Some((_, ts0, sig0)) = signed.first() else {
        v.add(Check::skip(
            &SIGNATURE_FORM,
            "no signed webhook was delivered",
        ));
        return;
    };
    // What the rule says of the first delivery, and of its timestamp in milliseconds: a
    // pass must have told them apart.
    let millis = ts0
        .trim()
        .parse::<i64>()
        .map_or(String::new(), |s| (s * 1000).to_string());
    v.varied(
        &SIGNATURE_FORM,
        "timestamp judged",
        [
            form_problem(ts0, sig0, span).is_none(),
            form_problem(&millis, sig0, span).is_none(),
        ],
    );
    let bad: Vec<Value> = signed
        .iter()
        .filter_map(|(d, ts, sig)| {
            let problem = form_problem(ts, sig, span)?;
            let event: Value = serde_json::from_slice(&d.body).unwrap_or(Value::Null);
            Some(json!({
                "problem": problem,
                "attempt_id": event.get("attempt_id").cloned().unwrap_or(Value::Null),
                // The target's request to the receiver that showed it.
                "request": {
                    "method": "POST",
                    "headers": {"x-webhook-timestamp": ts, "x-webhook-signature": sig},
                    "body_bytes": d.body.len(),
                },
            }))
        })
        .collect();
    let n = bad.len();
    v.judge(
        &SIGNATURE_FORM,
        bad.is_empty(),
        Evidence::new()
            .with("deliveries", signed.len())
            .with("not_in_form", n)
            .with("examples", bad.into_iter().take(5).collect::<Vec<_>>()),
        "x-webhook-signature in lower-case hex, x-webhook-timestamp the Unix seconds of the target's clock at the try",
    );
}
