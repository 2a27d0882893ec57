//! The journal of dials: contents, what decided, filtering, clearing, taking and its limit.

use chrono::Duration;
use std::sync::{Arc, Mutex};

use telephony_sim::{
    DecidedBy, DialRecord, DialRequest, DialResult, DialWatcher, NumberMatcher, Outcome, Response,
    TelephonySim, magic_number,
};

use crate::support::{req, uk_number};

#[test]
fn every_dial_is_recorded_with_what_decided_it() {
    let sim = TelephonySim::new(1);
    let scripted = uk_number(1);
    sim.given(NumberMatcher::exact(scripted.clone()))
        .respond_with(Response::busy())
        .named("scripted busy");
    let requests = [
        req("a1", scripted.clone(), 0),
        req("a2", magic_number(7), 0),
        req("a3", uk_number(2), 1),
        req("a4", "+0123", 0),
        req("a5", "12025550123", 0),
    ];
    let results: Vec<_> = requests.iter().map(|r| sim.dial(r)).collect();
    let journal = sim.journal();
    assert_eq!(journal.len(), 5);
    for ((record, request), result) in journal.iter().zip(&requests).zip(&results) {
        assert_eq!(&record.request, request);
        assert_eq!(&record.result, result);
    }
    let decided: Vec<_> = journal.iter().map(|d| d.decided_by.clone()).collect();
    assert_eq!(
        decided,
        [
            DecidedBy::Rule {
                id: 1,
                name: Some("scripted busy".into()),
                entry: 0
            },
            DecidedBy::Magic { code: 7 },
            DecidedBy::Model,
            DecidedBy::InvalidNumber,
            DecidedBy::InvalidNumber,
        ]
    );
    let invalid = &journal[3].result;
    assert_eq!(
        (
            invalid.outcome,
            invalid.failure_reason.as_deref(),
            invalid.total()
        ),
        (Outcome::Failed, Some("invalid_number"), Duration::zero())
    );
}

#[test]
fn dials_to_filters_by_number_and_clear_empties() {
    let sim = TelephonySim::new(1);
    for i in 0..10u32 {
        sim.dial(&req(format!("a{i}"), uk_number(i % 3), i / 3));
    }
    let to_one = sim.dials_to(&uk_number(1));
    assert_eq!(
        to_one
            .iter()
            .map(|d| d.request.attempt_id.as_str())
            .collect::<Vec<_>>(),
        ["a1", "a4", "a7"]
    );
    assert!(sim.dials_to("+19999999999").is_empty());
    sim.clear_journal();
    assert!(sim.journal().is_empty());
    sim.dial(&req("b", uk_number(1), 0));
    assert_eq!(sim.dials_to(&uk_number(1)).len(), 1);
}

#[test]
fn taking_the_journal_empties_it_and_each_dial_is_taken_once() {
    let sim = TelephonySim::new(1);
    for i in 0..3u32 {
        sim.dial(&req(format!("a{i}"), uk_number(i), 0));
    }
    sim.set_journal_limit(Some(2));
    assert_eq!(sim.journal_dropped(), 1);
    let ids = |records: Vec<DialRecord>| -> Vec<String> {
        records.into_iter().map(|d| d.request.attempt_id).collect()
    };
    assert_eq!(ids(sim.take_journal()), ["a1", "a2"]);
    assert!(sim.journal().is_empty());
    assert_eq!(
        sim.journal_dropped(),
        0,
        "the count of dropped records restarts"
    );
    sim.dial(&req("b", uk_number(0), 0));
    assert_eq!(ids(sim.take_journal()), ["b"]);
    assert!(sim.take_journal().is_empty());
}

#[test]
fn a_journal_limit_keeps_the_latest_and_counts_the_rest() {
    let sim = TelephonySim::new(1);
    for i in 0..10u32 {
        sim.dial(&req(format!("a{i}"), uk_number(i), 0));
    }
    sim.set_journal_limit(Some(4));
    assert_eq!(sim.journal_dropped(), 6, "shrinking drops the oldest");
    for i in 10..13u32 {
        sim.dial(&req(format!("a{i}"), uk_number(i), 0));
    }
    let ids: Vec<_> = sim
        .journal()
        .into_iter()
        .map(|d| d.request.attempt_id)
        .collect();
    assert_eq!(ids, ["a9", "a10", "a11", "a12"]);
    assert_eq!(sim.journal_dropped(), 9);
    sim.set_journal_limit(Some(0));
    assert!(sim.journal().is_empty());
    sim.dial(&req("z", uk_number(0), 0));
    assert!(sim.journal().is_empty());
    assert_eq!(sim.journal_dropped(), 14);
    sim.set_journal_limit(None);
    sim.dial(&req("y", uk_number(0), 0));
    assert_eq!(sim.journal().len(), 1);
}

/// A watcher that keeps what it is told.
#[derive(Default)]
struct Seen(Mutex<Vec<DialRecord>>);

impl DialWatcher for Seen {
    fn dialled(&self, request: &DialRequest, result: &DialResult, decided_by: &DecidedBy) {
        self.0.lock().unwrap().push(DialRecord {
            request: request.clone(),
            result: result.clone(),
            decided_by: decided_by.clone(),
        });
    }
}

#[test]
fn a_watcher_is_told_of_every_dial_in_order_whatever_the_journal_keeps() {
    let sim = TelephonySim::new(1);
    sim.given(NumberMatcher::exact(uk_number(1)))
        .respond_with(Response::busy());
    sim.dial(&req("before", uk_number(0), 0));
    let seen = Arc::new(Seen::default());
    sim.watch_dials(Some(seen.clone()));
    sim.set_journal_limit(Some(0));
    for i in 0..5u32 {
        sim.dial(&req(format!("a{i}"), uk_number(i % 2), i));
    }
    assert!(sim.journal().is_empty(), "the journal kept none");
    let told = std::mem::take(&mut *seen.0.lock().unwrap());
    let ids: Vec<_> = told.iter().map(|d| d.request.attempt_id.as_str()).collect();
    assert_eq!(
        ids,
        ["a0", "a1", "a2", "a3", "a4"],
        "each dial once, in order"
    );
    assert_eq!(
        told[1].decided_by,
        DecidedBy::Rule {
            id: 1,
            name: None,
            entry: 0
        }
    );
    assert_eq!(told[1].result.outcome, Outcome::Busy);
    assert_eq!(told[0].decided_by, DecidedBy::Model);
    // Beside a journal that keeps everything, the two see the same dials.
    sim.set_journal_limit(None);
    sim.dial(&req("b", magic_number(7), 0));
    assert_eq!(sim.journal(), *seen.0.lock().unwrap());
    sim.watch_dials(None);
    sim.dial(&req("c", uk_number(0), 0));
    assert_eq!(seen.0.lock().unwrap().len(), 1, "no longer told");
}

#[test]
fn records_serialise_for_reports() {
    let sim = TelephonySim::new(1);
    sim.dial(&req("a1", magic_number(8), 2));
    let record = sim.journal().remove(0);
    let json = serde_json::to_value(&record).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "request": {
                "attempt_id": "a1",
                "from": "+14155550000",
                "to": "+12025550108",
                "at": "2026-03-02T09:00:00.000Z",
                "attempt_index": 2
            },
            "result": {"outcome": "connected", "ring": 5.0, "talk": 30.0, "failure_reason": null},
            "decided_by": {"kind": "magic", "code": 8}
        })
    );
    let back: DialRecord = serde_json::from_value(json).unwrap();
    assert_eq!(back, record);
}
