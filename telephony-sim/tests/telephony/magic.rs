//! Magic numbers: each assigned code, the unassigned ones, and the switch.

use rstest::rstest;
use telephony_sim::{
    DecidedBy, MAGIC_NUMBERS, Model, Outcome, TelephonySim, magic_code, magic_number,
};

use crate::support::{req, secs};

/// Each code on a first dial and on a retry: outcome, ring, talk, reason; then the retry's
/// outcome and talk.
#[rustfmt::skip]
#[rstest]
#[case::connected_90(0, Outcome::Connected, 5.0, 90.0, None, Outcome::Connected, 90.0)]
#[case::busy(1, Outcome::Busy, 2.0, 0.0, Some("busy"), Outcome::Busy, 0.0)]
#[case::no_answer(2, Outcome::NoAnswer, 30.0, 0.0, Some("no_answer"), Outcome::NoAnswer, 0.0)]
#[case::failed(3, Outcome::Failed, 2.0, 0.0, Some("call_rejected"), Outcome::Failed, 0.0)]
#[case::short_call(4, Outcome::Connected, 5.0, 5.0, None, Outcome::Connected, 5.0)]
#[case::provider_error(5, Outcome::ProviderError, 0.0, 0.0, Some("provider_error"), Outcome::ProviderError, 0.0)]
#[case::internal_error(6, Outcome::InternalError, 0.0, 0.0, Some("internal_error"), Outcome::InternalError, 0.0)]
#[case::voicemail(7, Outcome::Voicemail, 20.0, 25.0, Some("voicemail"), Outcome::Voicemail, 25.0)]
#[case::connected_30(8, Outcome::Connected, 5.0, 30.0, None, Outcome::Connected, 30.0)]
#[case::busy_then_connected(9, Outcome::Busy, 2.0, 0.0, Some("busy"), Outcome::Connected, 60.0)]
#[case::no_answer_then_connected(10, Outcome::NoAnswer, 30.0, 0.0, Some("no_answer"), Outcome::Connected, 60.0)]
#[case::short_then_connected(11, Outcome::Connected, 5.0, 5.0, None, Outcome::Connected, 60.0)]
#[case::provider_error_then_connected(12, Outcome::ProviderError, 0.0, 0.0, Some("provider_error"), Outcome::Connected, 60.0)]
fn each_magic_number(
    #[case] code: u8,
    #[case] first: Outcome,
    #[case] first_ring: f64,
    #[case] first_talk: f64,
    #[case] first_reason: Option<&str>,
    #[case] retry: Outcome,
    #[case] retry_talk: f64,
) {
    // Whatever the seed, area code or attempt id.
    for (seed, number) in [
        (1, magic_number(code)),
        (2, format!("+1917555{:04}", 100 + u32::from(code))),
    ] {
        let sim = TelephonySim::new(seed);
        for k in 0..5 {
            let r = sim.dial(&req(format!("att-{seed}-{k}"), number.clone(), 0));
            assert_eq!(
                (
                    r.outcome,
                    secs(r.ring),
                    secs(r.talk),
                    r.failure_reason.as_deref()
                ),
                (first, first_ring, first_talk, first_reason),
                "{number}, first dial"
            );
        }
        for index in 1..4 {
            let r = sim.dial(&req(format!("retry-{index}"), number.clone(), index));
            assert_eq!(
                (r.outcome, secs(r.talk)),
                (retry, retry_talk),
                "{number}, retry {index}"
            );
            if retry == Outcome::Connected {
                assert_eq!(secs(r.ring), 5.0);
            }
        }
        assert!(
            sim.journal()
                .iter()
                .all(|d| d.decided_by == DecidedBy::Magic { code }),
            "{:?}",
            sim.journal()
        );
    }
}

#[test]
fn the_table_has_a_case_for_every_assigned_code() {
    // The rstest cases above run codes 0 to 12; the table must not grow without them.
    assert_eq!(MAGIC_NUMBERS.len(), 13);
    assert_eq!(MAGIC_NUMBERS.last().unwrap().code, 12);
}

#[test]
fn unassigned_codes_and_near_misses_follow_the_model() {
    let sim = TelephonySim::new(4);
    for number in [
        magic_number(13),
        magic_number(99),
        "+12025550201".to_owned(),  // 555-02xx is not the fictional range
        "+442025550101".to_owned(), // not NANP
    ] {
        let outcomes: std::collections::BTreeSet<Outcome> = (0..100)
            .map(|i| {
                let r = sim.dial(&req(format!("{number}-{i}"), number.clone(), 0));
                r.outcome
            })
            .collect();
        assert!(outcomes.len() >= 4, "{number}: {outcomes:?}");
        assert!(
            sim.dials_to(&number)
                .iter()
                .all(|d| d.decided_by == DecidedBy::Model)
        );
    }
    assert_eq!(magic_code("+12025550201"), None);
}

#[test]
fn switched_off_magic_numbers_follow_the_model() {
    let sim = TelephonySim::with_model(
        4,
        Model {
            magic_numbers: false,
            ..Model::default()
        },
    )
    .unwrap();
    let busy = magic_number(1);
    let outcomes: Vec<Outcome> = (0..200)
        .map(|i| sim.dial(&req(format!("att-{i}"), busy.clone(), 0)).outcome)
        .collect();
    let busy_count = outcomes.iter().filter(|o| **o == Outcome::Busy).count();
    // At the model's 7 %: about 14 of 200, nowhere near all of them.
    assert!(busy_count < 40, "{busy_count}");
    assert!(outcomes.contains(&Outcome::Connected));
    assert!(
        sim.journal()
            .iter()
            .all(|d| d.decided_by == DecidedBy::Model)
    );
}
