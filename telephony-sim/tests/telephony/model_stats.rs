//! The default model, measured over 100,000 dials.

use std::collections::BTreeMap;

use telephony_sim::{DialResult, Model, Outcome, TelephonySim};

use crate::support::{assert_rate, req, secs, uk_number};

const N: usize = 100_000;

fn dial_many(sim: &TelephonySim, n: usize) -> Vec<DialResult> {
    // The journal would hold 100,000 records for nothing here.
    sim.set_journal_limit(Some(0));
    (0..n)
        .map(|i| {
            let i = u32::try_from(i).unwrap();
            // A mix of first dials and retries, to distinct numbers.
            sim.dial(&req(format!("att-{i}"), uk_number(i), i % 4))
        })
        .collect()
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn default_rates_over_100k_dials() {
    let sim = TelephonySim::new(20260302);
    let results = dial_many(&sim, N);
    let mut counts: BTreeMap<Outcome, usize> = BTreeMap::new();
    for r in &results {
        *counts.entry(r.outcome).or_default() += 1;
    }
    let count = |o| counts.get(&o).copied().unwrap_or(0);
    assert_rate("connected", count(Outcome::Connected), N, 0.20);
    assert_rate("no_answer", count(Outcome::NoAnswer), N, 0.40);
    assert_rate("busy", count(Outcome::Busy), N, 0.07);
    assert_rate("failed", count(Outcome::Failed), N, 0.08);
    assert_rate("voicemail", count(Outcome::Voicemail), N, 0.25);
    assert_rate("provider_error", count(Outcome::ProviderError), N, 0.0);
    assert_rate("internal_error", count(Outcome::InternalError), N, 0.0);
    assert_eq!(sim.journal_dropped(), N as u64);
}

#[test]
fn connected_talk_times_short_share_median_and_spread() {
    let sim = TelephonySim::new(7);
    let talks: Vec<f64> = dial_many(&sim, N)
        .iter()
        .filter(|r| r.outcome == Outcome::Connected)
        .map(|r| secs(r.talk))
        .collect();
    let connected = talks.len();
    assert!(connected > 19_000, "{connected}");

    // Short calls are uniform in [2, 15) s; a log-normal long call is under 15 s with
    // probability Phi(ln(15/90)/0.6) = 0.0014, so the share under 15 s is
    // 0.3 + 0.7 * 0.0014 = 0.301.
    let short: Vec<f64> = talks.iter().copied().filter(|t| *t < 15.0).collect();
    assert_rate("short share of connected", short.len(), connected, 0.301);
    assert!(short.iter().all(|t| *t >= 2.0), "no short call under 2 s");
    // Mean of U[2, 15) is 8.5, standard error 13 / sqrt(12 n) = 0.05 for n = 6,000.
    let mean_short = short.iter().sum::<f64>() / short.len() as f64;
    assert!((mean_short - 8.5).abs() < 0.25, "{mean_short}");

    let mut long: Vec<f64> = talks.iter().copied().filter(|t| *t >= 15.0).collect();
    long.sort_by(f64::total_cmp);
    // In log space the long calls are normal (mean ln 90, sigma 0.6). The sample median's
    // standard error is sigma * sqrt(pi / 2 / n) = 0.0064 for n = 14,000; five of them make
    // the median 90 s within a factor e^0.032 (about +/- 2.9 s). Cutting the 0.14 % under
    // 15 s moves it by 0.1 s.
    let median = quantile(&long, 0.5);
    assert!(
        (median.ln() - 90f64.ln()).abs() < 0.032,
        "median of long calls {median}"
    );
    // The spread shows sigma: ln(q75 / q25) = 2 * 0.6745 * 0.6 = 0.809, each quartile
    // with a standard error of 0.007 in log space; 0.07 is five standard errors of the
    // difference. Sigma 0.5 would give 0.674.
    let iqr_log = (quantile(&long, 0.75) / quantile(&long, 0.25)).ln();
    assert!((iqr_log - 0.809).abs() < 0.07, "ln(q75/q25) = {iqr_log}");
    assert!(long.last().unwrap() <= &3600.0, "capped at one hour");
}

#[test]
fn settable_rates_and_timings_are_followed() {
    let model = Model {
        connected_rate: 0.5,
        no_answer_rate: 0.1,
        busy_rate: 0.1,
        failed_rate: 0.1,
        provider_error_rate: 0.1,
        internal_error_rate: 0.1,
        no_answer_timeout_secs: 45.0,
        short_call_share: 1.0,
        ..Model::default()
    };
    let sim = TelephonySim::with_model(3, model).unwrap();
    let n = 20_000;
    let results = dial_many(&sim, n);
    let count = |o: Outcome| results.iter().filter(|r| r.outcome == o).count();
    assert_rate("connected", count(Outcome::Connected), n, 0.5);
    assert_rate("provider_error", count(Outcome::ProviderError), n, 0.1);
    assert_rate("internal_error", count(Outcome::InternalError), n, 0.1);
    assert_rate("voicemail", count(Outcome::Voicemail), n, 0.0);
    for r in &results {
        match r.outcome {
            Outcome::NoAnswer => assert_eq!(secs(r.ring), 45.0),
            Outcome::Connected => {
                // Uniform in [2, 15) s, rounded to the millisecond: 15.000 is possible.
                assert!(
                    (2.0..=15.0).contains(&secs(r.talk)),
                    "all calls short: {r:?}"
                )
            }
            Outcome::ProviderError | Outcome::InternalError => {
                assert!(secs(r.ring) <= 1.0);
                assert_eq!(r.failure_reason.as_deref(), Some(r.outcome.as_str()));
            }
            _ => {}
        }
    }
}

#[test]
fn talk_is_zero_unless_answered_and_results_add_up() {
    let sim = TelephonySim::new(11);
    for r in dial_many(&sim, 5_000) {
        assert_eq!(
            r.outcome.is_answered(),
            r.talk > chrono::Duration::zero(),
            "{r:?}"
        );
        assert_eq!(
            r.failure_reason.is_none(),
            r.outcome == Outcome::Connected,
            "{r:?}"
        );
        assert_eq!(r.total(), r.ring + r.talk);
        let at = crate::support::t0();
        assert_eq!(r.ends_at(at), at + r.ring + r.talk);
    }
}
