//! Inbound callers: the Poisson generator and the answer of an inbound call.

use chrono::{DateTime, Duration, Utc};
use telephony_sim::{InboundCall, InboundGenerator, Outcome, TelephonySim};

use crate::support::{assert_rate, secs, t0};

fn callers() -> Vec<String> {
    vec![
        "+447700900001".into(),
        "+447700900002".into(),
        "+447700900003".into(),
    ]
}

fn dialled() -> Vec<String> {
    vec!["+18005550100".into(), "+18005550101".into()]
}

fn generator(seed: u64, rate_per_hour: f64) -> InboundGenerator {
    InboundGenerator::new(seed, callers(), dialled(), rate_per_hour).unwrap()
}

#[test]
fn count_over_a_long_span_is_near_the_mean_rate() {
    // 600 calls an hour for 10 days: 144,000 expected. A Poisson count's standard deviation
    // is the square root of its mean, 379; five of them is 1,897 (1.3 %).
    let g = generator(17, 600.0);
    let start = t0() + Duration::milliseconds(123); // not on a minute boundary
    let end = start + Duration::days(10);
    let calls: Vec<InboundCall> = g.arrivals(start, end).collect();
    let expected = 144_000.0;
    assert!(
        (calls.len() as f64 - expected).abs() < 5.0 * expected.sqrt(),
        "{} calls",
        calls.len()
    );
    assert!(
        calls.iter().all(|c| start <= c.at && c.at < end),
        "inside [start, end)"
    );
    assert!(calls.windows(2).all(|w| w[0].at <= w[1].at), "sorted");

    // Callers and dialled numbers uniformly: 1/3 and 1/2 each, within 5 standard errors.
    for c in callers() {
        let n = calls.iter().filter(|x| x.caller == c).count();
        assert_rate(&format!("caller {c}"), n, calls.len(), 1.0 / 3.0);
    }
    let first = calls.iter().filter(|x| x.dialled == dialled()[0]).count();
    assert_rate("first dialled number", first, calls.len(), 0.5);

    // Poisson, not evenly spaced: hourly counts have variance about equal to their mean.
    // For 240 hours of mean 600 the sample variance has a standard error of
    // sqrt((600 + 2 * 600^2) / 239) = 55, that is 0.09 of the mean; 0.6 to 1.4 is
    // more than four of them either side. Evenly spaced calls would give almost 0.
    let mut hourly = vec![0f64; 240];
    for c in &calls {
        let h = (c.at - start).num_hours() as usize;
        hourly[h] += 1.0;
    }
    let mean = hourly.iter().sum::<f64>() / 240.0;
    let var = hourly.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 239.0;
    let dispersion = var / mean;
    assert!(
        (0.6..1.4).contains(&dispersion),
        "variance / mean = {dispersion}"
    );
}

#[test]
fn gaps_are_exponential() {
    // Mean gap 6 s at 600 an hour; the share of gaps above the mean is e^-1 = 0.368.
    let g = generator(2, 600.0);
    let calls: Vec<InboundCall> = g.arrivals(t0(), t0() + Duration::days(2)).collect();
    let gaps: Vec<f64> = calls.windows(2).map(|w| secs(w[1].at - w[0].at)).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    // Standard error of the mean gap: 6 / sqrt(28,800) = 0.035.
    assert!((mean - 6.0).abs() < 0.18, "mean gap {mean}");
    let above = gaps.iter().filter(|g| **g > 6.0).count();
    assert_rate("gaps above the mean", above, gaps.len(), (-1f64).exp());
}

#[test]
fn deterministic_by_seed_and_the_same_for_any_windows() {
    let start = t0();
    let end = start + Duration::hours(6);
    let a: Vec<_> = generator(5, 300.0).arrivals(start, end).collect();
    let b: Vec<_> = generator(5, 300.0).arrivals(start, end).collect();
    assert_eq!(a, b);
    let other: Vec<_> = generator(6, 300.0).arrivals(start, end).collect();
    assert_ne!(a, other);

    // Cut into uneven windows, as a step-driven engine asks for them.
    let g = generator(5, 300.0);
    let mut stitched = Vec::new();
    let mut from = start;
    let mut step = 1;
    while from < end {
        let until = (from + Duration::seconds(step)).min(end);
        stitched.extend(g.arrivals(from, until));
        from = until;
        step = step * 3 % 7_001 + 1;
    }
    assert_eq!(stitched, a);

    // A window inside the span sees exactly the span's calls in it.
    let (w0, w1) = (
        start + Duration::minutes(61),
        start + Duration::minutes(150),
    );
    let inside: Vec<_> = a
        .iter()
        .filter(|c| w0 <= c.at && c.at < w1)
        .cloned()
        .collect();
    assert_eq!(g.arrivals(w0, w1).collect::<Vec<_>>(), inside);
    assert!(!inside.is_empty());
}

#[test]
fn inbound_calls_serialise_with_rfc3339_instants() {
    let call = InboundCall {
        caller: "+447700900001".into(),
        dialled: "+18005550100".into(),
        at: "2026-03-02T09:00:00.25Z".parse::<DateTime<Utc>>().unwrap(),
    };
    let json = serde_json::to_string(&call).unwrap();
    assert_eq!(
        json,
        r#"{"caller":"+447700900001","dialled":"+18005550100","at":"2026-03-02T09:00:00.250Z"}"#
    );
    assert_eq!(serde_json::from_str::<InboundCall>(&json).unwrap(), call);
}

#[test]
fn answered_inbound_calls_are_deterministic_and_follow_the_model() {
    let sim = TelephonySim::new(9);
    let g = generator(9, 1200.0);
    let calls: Vec<_> = g.arrivals(t0(), t0() + Duration::hours(24)).collect();
    let answers: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| sim.answer_inbound(c, &format!("int-{i}")))
        .collect();
    // The same inputs, in reverse order, on another simulator with the same seed.
    let again = TelephonySim::new(9);
    for (i, c) in calls.iter().enumerate().rev() {
        assert_eq!(again.answer_inbound(c, &format!("int-{i}")), answers[i]);
    }
    // The interaction seed and the simulator seed are part of the key.
    let differ = calls
        .iter()
        .take(200)
        .enumerate()
        .filter(|(i, c)| sim.answer_inbound(c, &format!("other-{i}")) != answers[*i])
        .count();
    assert_eq!(differ, 200);
    assert_ne!(
        TelephonySim::new(10).answer_inbound(&calls[0], "int-0"),
        answers[0]
    );

    for a in &answers {
        assert_eq!(
            (a.outcome, a.failure_reason.as_deref()),
            (Outcome::Connected, None)
        );
        assert!((1.0..=3.0).contains(&secs(a.ring)), "{a:?}");
        assert!(secs(a.talk) >= 2.0 && secs(a.talk) <= 3600.0, "{a:?}");
    }
    // Talk like a connected outbound call: 30.1 % under 15 s (see model_stats).
    let short = answers.iter().filter(|a| secs(a.talk) < 15.0).count();
    assert_rate("short inbound calls", short, answers.len(), 0.301);
    assert!(sim.journal().is_empty(), "inbound calls are not dials");
}
