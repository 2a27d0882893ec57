//! Model validation, and models read from a scenario file.

use rstest::rstest;
use telephony_sim::{Model, ModelProblem, SecondsRange, TelephonySim};

fn problems(model: Model) -> Vec<ModelProblem> {
    model.validate().map_or_else(|e| e.problems, |()| vec![])
}

#[rstest]
#[case::negative_rate(
    Model { busy_rate: -0.1, ..Model::default() },
    ModelProblem::RateOutOfRange { field: "busy_rate", value: -0.1 }
)]
#[case::rate_above_one(
    Model { provider_error_rate: 1.5, ..Model::default() },
    ModelProblem::RateOutOfRange { field: "provider_error_rate", value: 1.5 }
)]
#[case::short_share(
    Model { short_call_share: 2.0, ..Model::default() },
    ModelProblem::RateOutOfRange { field: "short_call_share", value: 2.0 }
)]
#[case::range_backwards(
    Model { busy_ring_secs: SecondsRange::new(4.0, 1.0), ..Model::default() },
    ModelProblem::BadRange { field: "busy_ring_secs", min: 4.0, max: 1.0 }
)]
#[case::range_negative(
    Model { short_call_secs: SecondsRange::new(-1.0, 15.0), ..Model::default() },
    ModelProblem::BadRange { field: "short_call_secs", min: -1.0, max: 15.0 }
)]
#[case::range_over_a_day(
    Model { voicemail_talk_secs: SecondsRange::new(10.0, 100_000.0), ..Model::default() },
    ModelProblem::BadRange { field: "voicemail_talk_secs", min: 10.0, max: 100_000.0 }
)]
#[case::zero_median(
    Model { long_call_median_secs: 0.0, ..Model::default() },
    ModelProblem::BadDuration {
        field: "long_call_median_secs",
        value: 0.0,
        expected: "above 0 and at most 86400 seconds"
    }
)]
#[case::zero_cap(
    Model { talk_cap_secs: 0.0, ..Model::default() },
    ModelProblem::BadDuration {
        field: "talk_cap_secs",
        value: 0.0,
        expected: "above 0 and at most 86400 seconds"
    }
)]
#[case::negative_sigma(
    Model { long_call_sigma: -0.5, ..Model::default() },
    ModelProblem::BadDuration { field: "long_call_sigma", value: -0.5, expected: "between 0 and 5" }
)]
#[case::rings_past_timeout(
    Model { connected_ring_secs: SecondsRange::new(3.0, 40.0), ..Model::default() },
    ModelProblem::RingsPastTimeout { field: "connected_ring_secs", max: 40.0, timeout: 30.0 }
)]
#[case::no_failed_reasons(
    Model { failed_reasons: vec![], ..Model::default() },
    ModelProblem::BadFailedReasons
)]
fn one_problem_each(#[case] model: Model, #[case] expected: ModelProblem) {
    assert_eq!(problems(model.clone()), [expected]);
    let err = TelephonySim::with_model(1, model).unwrap_err();
    assert!(
        err.to_string().starts_with("invalid telephony model: "),
        "{err}"
    );
}

#[test]
fn rates_above_one_in_sum() {
    let p = problems(Model {
        connected_rate: 0.5,
        no_answer_rate: 0.5,
        ..Model::default()
    });
    assert_eq!(p.len(), 1, "{p:?}");
    let ModelProblem::RatesAboveOne { sum } = p[0] else {
        panic!("{p:?}")
    };
    assert!((sum - 1.15).abs() < 1e-9);
    // Exactly 1 is allowed (voicemail then never happens), float rounding included.
    let exact = Model {
        connected_rate: 0.1,
        no_answer_rate: 0.2,
        busy_rate: 0.3,
        failed_rate: 0.4,
        ..Model::default()
    };
    exact.validate().unwrap();
    assert_eq!(exact.voicemail_rate(), 0.0);
}

#[test]
fn nan_is_refused_everywhere() {
    let p = problems(Model {
        connected_rate: f64::NAN,
        no_answer_timeout_secs: f64::NAN,
        failed_ring_secs: SecondsRange::new(f64::NAN, 2.0),
        long_call_sigma: f64::INFINITY,
        ..Model::default()
    });
    let fields: Vec<String> = p.iter().map(|x| x.to_string()).collect();
    assert_eq!(p.len(), 4, "{fields:#?}");
    for f in [
        "connected_rate",
        "no_answer_timeout_secs",
        "failed_ring_secs",
        "long_call_sigma",
    ] {
        assert!(
            fields.iter().any(|m| m.starts_with(f)),
            "{f} in {fields:#?}"
        );
    }
}

#[test]
fn every_problem_is_listed_in_one_message() {
    let err = Model {
        busy_rate: 2.0,
        voicemail_ring_secs: SecondsRange::new(15.0, 45.0),
        failed_reasons: vec![String::new()],
        ..Model::default()
    }
    .validate()
    .unwrap_err();
    assert_eq!(err.problems.len(), 3, "{err}");
    assert_eq!(
        err.to_string(),
        "invalid telephony model: busy_rate must be between 0 and 1, got 2; \
         voicemail_ring_secs.max (45 s) is longer than no_answer_timeout_secs (30 s): the caller would have hung up; \
         failed_reasons must list at least one reason and no empty one"
    );
}

#[test]
fn a_scenario_file_sets_only_what_it_names() {
    let model: Model = toml::from_str(
        r#"
        connected_rate = 0.35
        no_answer_rate = 0.3
        magic_numbers = false
        short_call_secs = { min = 1, max = 9.5 }
        "#,
    )
    .unwrap();
    assert_eq!(
        model,
        Model {
            connected_rate: 0.35,
            no_answer_rate: 0.3,
            magic_numbers: false,
            short_call_secs: SecondsRange::new(1.0, 9.5),
            ..Model::default()
        }
    );
    model.validate().unwrap();
    let typo = toml::from_str::<Model>("conected_rate = 0.3").unwrap_err();
    assert!(
        typo.to_string().contains("unknown field `conected_rate`"),
        "{typo}"
    );
}
