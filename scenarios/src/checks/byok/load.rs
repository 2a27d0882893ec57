//! The `load` group: `--calls` decrypts of the key, `--concurrency` at a time, after the
//! other checks; the median and the 99th percentile against `--latency-budget-ms`, and no
//! error (every answer 200 with the plaintext the first decrypt gave).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use contracts::clock::Stopwatch;
use serde_json::{Value, json};

use super::context::{Ctx, TargetKey};
use super::decrypt::plaintext_of;
use super::defs::*;
use super::plaintext;
use super::probe::{Call, Endpoint, decrypt_body};
use crate::checks::{Check, Evidence};

/// Failed calls named in evidence, at most.
const MAX_LISTED: usize = 5;

/// What one call under load gave.
struct Sample {
    ms: f64,
    error: Option<Value>,
}

/// The nearest-rank percentile `p` (0 to 100) of sorted values.
pub(super) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The group's checks; `reference` is the plaintext the first decrypt answered.
pub(super) async fn checks(
    ctx: &Arc<Ctx>,
    target: &TargetKey,
    reference: Option<String>,
) -> Vec<Check> {
    if !ctx.runs("load") {
        return Vec::new();
    }
    let reference = reference.unwrap_or_else(|| target.plaintext.clone());
    let calls = ctx.s.calls;
    let next = Arc::new(AtomicUsize::new(0));
    let body = Arc::new(decrypt_body(&ctx.s.key_alias, &target.encrypted_key));
    let wall = Stopwatch::start();
    let workers: Vec<_> = (0..ctx.s.concurrency.min(calls))
        .map(|_| {
            let ctx = ctx.clone();
            let next = next.clone();
            let body = body.clone();
            let reference = reference.clone();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    samples.push(one(&ctx, &body, &reference).await);
                }
                samples
            })
        })
        .collect();
    let mut samples = Vec::with_capacity(calls);
    for w in workers {
        match w.await {
            Ok(s) => samples.extend(s),
            Err(e) => samples.push(Sample {
                ms: 0.0,
                error: Some(json!({"error": format!("a load worker failed: {e}")})),
            }),
        }
    }
    let wall_ms = wall.elapsed().as_secs_f64() * 1000.0;
    let mut ms: Vec<f64> = samples.iter().map(|s| s.ms).collect();
    ms.sort_by(f64::total_cmp);
    let (p50, p99) = (percentile(&ms, 50.0), percentile(&ms, 99.0));
    let errors: Vec<Value> = samples.into_iter().filter_map(|s| s.error).collect();
    let round = |v: f64| (v * 10.0).round() / 10.0;
    let budget = ctx.s.latency_budget_ms as f64;
    let evidence = Evidence::new()
        .with("calls", calls)
        .with("concurrency", ctx.s.concurrency)
        .with("p50_ms", round(p50))
        .with("p99_ms", round(p99))
        .with("max_ms", round(ms.last().copied().unwrap_or(0.0)))
        .with("budget_ms", ctx.s.latency_budget_ms)
        .with("wall_ms", round(wall_ms))
        .with("errors", errors.len());
    vec![
        Check::judge(
            &LOAD_P50,
            p50 <= budget,
            evidence.clone(),
            format!("p50 at most {} ms", ctx.s.latency_budget_ms),
        ),
        Check::judge(
            &LOAD_P99,
            p99 <= budget,
            evidence.clone(),
            format!("p99 at most {} ms", ctx.s.latency_budget_ms),
        ),
        Check::judge(
            &LOAD_ERRORS,
            errors.is_empty(),
            evidence.with(
                "examples",
                errors.into_iter().take(MAX_LISTED).collect::<Vec<_>>(),
            ),
            "every call 200 with the plaintext_key of the first decrypt",
        ),
    ]
}

async fn one(ctx: &Ctx, body: &Value, reference: &str) -> Sample {
    let call = Call::post(Endpoint::DecryptKey)
        .maybe_authorization(ctx.bearer().await)
        .json(body);
    match ctx.probe.send_unrecorded(LOAD_ERRORS.id, call).await {
        Ok(ex) => {
            let ms = ex.elapsed.as_secs_f64() * 1000.0;
            let got = plaintext_of(&ex);
            let error = match got {
                _ if ex.status != 200 => {
                    Some(json!({"status": ex.status, "body": ex.body_evidence()}))
                }
                None => Some(json!({"status": 200, "body": ex.body_evidence()})),
                Some(p) if !plaintext::same_key(&p, reference) => {
                    Some(json!({"status": 200, "plaintext": plaintext::describe(&p)}))
                }
                Some(_) => None,
            };
            Sample { ms, error }
        }
        Err(e) => Sample {
            ms: 0.0,
            error: Some(json!({"error": e.message})),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&[3.0], 99.0), 3.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }
}
