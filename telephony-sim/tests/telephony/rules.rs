//! Scripted rules: matchers, scripts, precedence and expectations.

use std::sync::Arc;
use std::thread;

use telephony_sim::{
    DecidedBy, NumberMatcher, Outcome, Response, Script, TelephonySim, magic_number,
};

use crate::support::{req, secs, uk_number};

fn dial(sim: &TelephonySim, id: &str, to: &str) -> Outcome {
    sim.dial(&req(id, to, 0)).outcome
}

fn decided(sim: &TelephonySim, to: &str) -> Vec<DecidedBy> {
    sim.dials_to(to).into_iter().map(|d| d.decided_by).collect()
}

#[test]
fn exact_claims_only_its_number() {
    let sim = TelephonySim::new(1);
    let target = uk_number(1);
    sim.given(NumberMatcher::exact(target.clone()))
        .respond_with(Response::busy());
    for i in 0..20 {
        assert_eq!(dial(&sim, &format!("a{i}"), &target), Outcome::Busy);
    }
    // Another number, and the target with a digit more (which it is a prefix of).
    for other in [uk_number(10), format!("{target}9")] {
        let outcomes: Vec<_> = (0..50)
            .map(|i| dial(&sim, &format!("b{i}"), &other))
            .collect();
        assert!(outcomes.iter().any(|o| *o != Outcome::Busy), "{other}");
        assert!(decided(&sim, &other).iter().all(|d| *d == DecidedBy::Model));
    }
}

#[test]
fn prefix_and_suffix_claim_what_they_say() {
    let sim = TelephonySim::new(1);
    sim.given(NumberMatcher::prefix("+33"))
        .respond_with(Response::no_answer());
    sim.given(NumberMatcher::suffix("4242"))
        .respond_with(Response::connected(12));
    assert_eq!(dial(&sim, "1", "+33612345678"), Outcome::NoAnswer);
    assert_eq!(dial(&sim, "2", "+14155554242"), Outcome::Connected);
    // Both match: the newer (suffix) rule wins.
    assert_eq!(dial(&sim, "3", "+33612344242"), Outcome::Connected);
    // "+33" elsewhere than the start, "4242" elsewhere than the end: not claimed.
    sim.dial(&req("4", "+44733612345", 0));
    sim.dial(&req("5", "+14242555123", 0));
    assert_eq!(decided(&sim, "+44733612345"), vec![DecidedBy::Model]);
    assert_eq!(decided(&sim, "+14242555123"), vec![DecidedBy::Model]);
}

#[test]
fn any_claims_every_number_even_magic_and_invalid_ones() {
    let sim = TelephonySim::new(1);
    sim.given(NumberMatcher::any())
        .respond_with(Response::failed("carrier_down"));
    for to in [uk_number(1), magic_number(0), "not a number".to_owned()] {
        let r = sim.dial(&req("x", to.clone(), 0));
        assert_eq!(
            (r.outcome, r.failure_reason.as_deref()),
            (Outcome::Failed, Some("carrier_down")),
            "{to}"
        );
    }
}

#[test]
fn sequence_takes_successive_entries_then_repeats_the_last() {
    let sim = TelephonySim::new(1);
    let to = uk_number(5);
    let rule = sim
        .given(NumberMatcher::exact(to.clone()))
        .respond_with(Script::sequence(vec![
            Response::busy().ring(3),
            Response::no_answer(),
            Response::connected(45),
        ]));
    let results: Vec<_> = (0..6)
        .map(|i| sim.dial(&req(format!("a{i}"), to.clone(), 0)))
        .collect();
    let outcomes: Vec<_> = results.iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Busy,
            Outcome::NoAnswer,
            Outcome::Connected,
            Outcome::Connected,
            Outcome::Connected,
            Outcome::Connected
        ]
    );
    assert_eq!(secs(results[0].ring), 3.0, ".ring(3) applies");
    assert_eq!(secs(results[5].talk), 45.0);
    let entries: Vec<usize> = decided(&sim, &to)
        .into_iter()
        .map(|d| match d {
            DecidedBy::Rule { entry, .. } => entry,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(entries, [0, 1, 2, 2, 2, 2]);
    assert_eq!(rule.hits(), 6);
}

#[test]
fn sequence_positions_are_handed_out_once_under_concurrency() {
    let sim = Arc::new(TelephonySim::new(1));
    sim.given(NumberMatcher::any())
        .respond_with(Script::sequence(vec![
            Response::busy(),
            Response::no_answer(),
            Response::connected(1),
        ]));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let sim = Arc::clone(&sim);
            thread::spawn(move || {
                for i in 0..250 {
                    sim.dial(&req(format!("{t}-{i}"), uk_number(i), 0));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let outcomes: Vec<Outcome> = sim.journal().iter().map(|d| d.result.outcome).collect();
    let count = |o| outcomes.iter().filter(|x| **x == o).count();
    assert_eq!(
        (
            count(Outcome::Busy),
            count(Outcome::NoAnswer),
            count(Outcome::Connected)
        ),
        (1, 1, 998)
    );
    assert_eq!(outcomes[0], Outcome::Busy, "the journal is in dial order");
}

#[test]
fn by_attempt_follows_the_attempt_index_not_the_dial_count() {
    let sim = TelephonySim::new(1);
    let to = uk_number(6);
    sim.given(NumberMatcher::exact(to.clone()))
        .respond_with(Script::by_attempt(vec![
            Response::busy(),
            Response::connected(20),
        ]));
    // A replayed campaign dials index 1 twice and index 0 last: answers follow the index.
    let got: Vec<_> = [1, 1, 0, 5]
        .iter()
        .map(|k| sim.dial(&req(format!("a{k}"), to.clone(), *k)).outcome)
        .collect();
    assert_eq!(
        got,
        [
            Outcome::Connected,
            Outcome::Connected,
            Outcome::Busy,
            Outcome::Connected
        ]
    );
}

#[test]
fn newest_rule_wins_and_rules_come_before_magic_numbers() {
    let sim = TelephonySim::new(1);
    let busy_magic = magic_number(1);
    let vip = uk_number(7);
    let all = sim
        .given(NumberMatcher::any())
        .respond_with(Response::voicemail())
        .named("everyone voicemail");
    let one = sim
        .given(NumberMatcher::exact(vip.clone()))
        .respond_with(Response::connected(300))
        .named("vip answers");
    assert_eq!(dial(&sim, "1", &vip), Outcome::Connected);
    assert_eq!(
        dial(&sim, "2", &busy_magic),
        Outcome::Voicemail,
        "rule before magic"
    );
    assert_eq!(dial(&sim, "3", &uk_number(8)), Outcome::Voicemail);
    let override_all = sim
        .given(NumberMatcher::any())
        .respond_with(Response::internal_error());
    assert_eq!(dial(&sim, "4", &vip), Outcome::InternalError);
    assert_eq!((all.hits(), one.hits(), override_all.hits()), (2, 1, 1));
    assert_eq!((all.id(), one.id(), override_all.id()), (1, 2, 3));
    assert_eq!(
        decided(&sim, &vip),
        [
            DecidedBy::Rule {
                id: 2,
                name: Some("vip answers".into()),
                entry: 0
            },
            DecidedBy::Rule {
                id: 3,
                name: None,
                entry: 0
            },
        ]
    );
}

#[test]
fn expectations_met_and_unmet() {
    let sim = TelephonySim::new(1);
    let a = uk_number(1);
    let b = uk_number(2);
    sim.given(NumberMatcher::exact(a.clone()))
        .respond_with(Response::busy())
        .named("a is busy")
        .expect(2);
    sim.given(NumberMatcher::exact(b.clone()))
        .respond_with(Response::no_answer())
        .expect(0);
    // No expectation: never reported.
    sim.given(NumberMatcher::prefix("+33"))
        .respond_with(Response::busy());

    let err = sim.verify().unwrap_err();
    assert_eq!(err.unmet.len(), 1, "{err}");
    assert_eq!(
        (err.unmet[0].id, err.unmet[0].expected, err.unmet[0].actual),
        (1, 2, 0)
    );
    assert_eq!(err.unmet[0].name.as_deref(), Some("a is busy"));

    dial(&sim, "1", &a);
    dial(&sim, "2", &a);
    sim.verify().unwrap();

    dial(&sim, "3", &a);
    dial(&sim, "4", &b);
    let err = sim.verify().unwrap_err();
    let unmet: Vec<_> = err
        .unmet
        .iter()
        .map(|u| (u.id, u.expected, u.actual))
        .collect();
    assert_eq!(unmet, [(1, 2, 3), (2, 0, 1)]);
    let message = err.to_string();
    assert!(
        message.starts_with("2 telephony rule expectation(s) not met:"),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "rule #1 \"a is busy\" (number \"{a}\": always busy): expected 2 dial(s), got 3"
        )),
        "{message}"
    );
    assert!(message.contains("rule #2 (number"), "{message}");
}

#[test]
fn a_shadowed_rule_does_not_count_dials_it_did_not_answer() {
    let sim = TelephonySim::new(1);
    let to = uk_number(3);
    let old = sim
        .given(NumberMatcher::exact(to.clone()))
        .respond_with(Response::busy())
        .expect(1);
    dial(&sim, "1", &to);
    sim.given(NumberMatcher::any())
        .respond_with(Response::no_answer());
    dial(&sim, "2", &to);
    assert_eq!(old.hits(), 1);
    sim.verify().unwrap();
}

#[test]
fn reset_rules_returns_numbers_to_magic_and_model() {
    let sim = TelephonySim::new(1);
    let rule = sim
        .given(NumberMatcher::any())
        .respond_with(Response::connected(1))
        .expect(5);
    dial(&sim, "1", &magic_number(1));
    assert_eq!(sim.rule_count(), 1);
    sim.reset_rules();
    assert_eq!(sim.rule_count(), 0);
    sim.verify().unwrap(); // the unmet rule went with the reset
    assert_eq!(dial(&sim, "2", &magic_number(1)), Outcome::Busy);
    assert_eq!(rule.hits(), 1, "the handle still reads its count");
    let next = sim
        .given(NumberMatcher::any())
        .respond_with(Response::busy());
    assert_eq!(next.id(), 2, "ids keep counting");
}

#[test]
fn an_empty_sequence_is_refused() {
    assert!(Script::try_sequence(vec![]).is_err());
    assert!(Script::try_by_attempt(vec![]).is_err());
    let panicked = std::panic::catch_unwind(|| Script::sequence(vec![])).is_err();
    assert!(panicked);
}
