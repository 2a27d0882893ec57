//! The differ judged on the differences a broken platform shows, and on the freedoms a
//! conforming one takes.

use serde_json::{Value, json};

use super::rules::Source;
use super::*;

fn judging(creates: bool) -> Judging {
    Judging {
        tol: Tolerance(1),
        creates,
        items_order: None,
        resource: rules::Resource::Other,
    }
}

fn answer(status: u16, json: &Value) -> (u16, Value) {
    (status, json.clone())
}

/// Compares `t` with two references, `a` and `b`, all JSON answers.
fn run(t: (u16, Value), a: (u16, Value), b: (u16, Value), ids: &mut IdMap) -> Outcome {
    let text = [t.1.to_string(), a.1.to_string(), b.1.to_string()];
    let ta = Answer {
        status: t.0,
        content_type: Some("application/json"),
        json: Some(&t.1),
        text: &text[0],
    };
    let aa = Answer {
        status: a.0,
        content_type: Some("application/json; charset=utf-8"),
        json: Some(&a.1),
        text: &text[1],
    };
    let ba = Answer {
        status: b.0,
        content_type: Some("application/json"),
        json: Some(&b.1),
        text: &text[2],
    };
    diff(&ta, [&aa, &ba], ids, &judging(true))
}

fn campaign(id: &str, description: &str, created: &str) -> Value {
    json!({
        "campaign_id": id, "name": "spring", "status": "scheduled", "app_id": "a",
        "app_type": "agent", "app_version": 1, "description": description,
        "created_by": "ci", "updated_by": "ci", "created_at": created, "updated_at": created,
        "statistics": {"users_total": 0}
    })
}

const AT: &str = "2026-03-02T08:00:00.000Z";

#[test]
fn a_conforming_answer_in_its_own_form_has_no_difference() {
    let mut ids = IdMap::default();
    // Ids of another form, another offset and more digits, keys in another order, the
    // maker named otherwise: all free or the same.
    let t = json!({
        "updated_at": "2026-03-02T09:00:00.000000+01:00", "created_at": "2026-03-02T08:00:00Z",
        "campaign_id": "7f3e9c", "name": "spring", "status": "scheduled", "app_id": "a",
        "app_type": "agent", "app_version": 1, "description": "d",
        "created_by": "user-42", "updated_by": "user-42", "statistics": {"users_total": 0},
        "extension_of_theirs": true
    });
    let out = run(
        answer(200, &t),
        answer(200, &campaign("cmp-A", "d", AT)),
        answer(200, &campaign("cmp-B", "d", AT)),
        &mut ids,
    );
    assert!(out.differences.is_empty(), "{:#?}", out.differences);
    assert_eq!(ids.to_reference("7f3e9c", 0), Some("cmp-A"));
    assert_eq!(
        out.free, 2,
        "the makers are free (the id is compared through the map)"
    );
    assert!(out.compared >= 8);

    // A later answer naming the same campaign compares through the map; another id does not.
    let out = run(
        answer(200, &json!({"items": [{"campaign_id": "7f3e9c"}]})),
        answer(200, &json!({"items": [{"campaign_id": "cmp-A"}]})),
        answer(200, &json!({"items": [{"campaign_id": "cmp-B"}]})),
        &mut ids,
    );
    assert!(out.differences.is_empty(), "{:#?}", out.differences);
    let out = run(
        answer(200, &json!({"items": [{"campaign_id": "other"}]})),
        answer(200, &json!({"items": [{"campaign_id": "cmp-A"}]})),
        answer(200, &json!({"items": [{"campaign_id": "cmp-B"}]})),
        &mut ids,
    );
    assert_eq!(out.differences.len(), 2, "{:#?}", out.differences);
    assert!(
        out.differences
            .iter()
            .all(|d| d.rule.source == Source::Spec)
    );
}

#[test]
fn values_that_disagree_with_the_reference_differ_with_their_rule() {
    let mut ids = IdMap::default();
    let a = campaign("cmp-A", "d", AT);
    let b = campaign("cmp-B", "d", AT);
    // A PATCH that cleared the description; a time an hour off labelled Z; 1.0 for 1.
    let mut t = campaign("x", "", "2026-03-02T09:00:00.000Z");
    t["app_version"] = json!(1.0);
    let out = run(answer(200, &t), answer(200, &a), answer(200, &b), &mut ids);
    let paths: Vec<&str> = out.differences.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/app_version", "/description", "/created_at", "/updated_at"],
        "{:#?}",
        out.differences
    );
    assert_eq!(
        out.differences[0].what,
        "a number with a fraction where the reference answers an integer"
    );
    assert!(out.differences.iter().all(|d| d.rule.source.is_contract()));

    // The project's own field missing: a difference on an assumption.
    let mut t = campaign("x", "d", AT);
    t.as_object_mut().unwrap().remove("statistics");
    let out = run(answer(200, &t), answer(200, &a), answer(200, &b), &mut ids);
    assert_eq!(out.differences.len(), 1);
    assert_eq!(out.differences[0].rule.source, Source::Assumed);

    // A status of its own.
    let out = run(answer(201, &t), answer(200, &a), answer(200, &b), &mut ids);
    assert_eq!(out.differences[0].path, "status");
    assert!(out.differences[0].rule.source.is_contract());
}

#[test]
fn refusals_are_judged_on_their_shape_not_their_wording() {
    let mut ids = IdMap::default();
    let reference = json!({"detail": [
        {"loc": ["body", "name"], "msg": "String should match pattern", "type": "string_pattern_mismatch"},
        {"loc": ["body", "description"], "msg": "too long", "type": "string_too_long"}
    ]});
    // Another order, other words.
    let t = json!({"detail": [
        {"loc": ["body", "description"], "msg": "at most 150 characters", "type": "string_too_long"},
        {"loc": ["body", "name"], "msg": "letters, digits, _ - and space", "type": "string_pattern_mismatch"}
    ]});
    let out = run(
        answer(422, &t),
        answer(422, &reference),
        answer(422, &reference),
        &mut ids,
    );
    assert!(out.differences.is_empty(), "{:#?}", out.differences);
    // An item without msg, and a loc the reference does not name.
    let t = json!({"detail": [
        {"loc": ["body", "description"], "type": "string_too_long"},
        {"loc": ["body", "nom"], "msg": "x", "type": "string_pattern_mismatch"}
    ]});
    let out = run(
        answer(422, &t),
        answer(422, &reference),
        answer(422, &reference),
        &mut ids,
    );
    let whats: Vec<&str> = out.differences.iter().map(|d| d.what.as_str()).collect();
    assert!(whats.contains(&"no msg"), "{whats:?}");
    assert!(
        whats
            .iter()
            .any(|w| w.starts_with("no item with the reference's loc")),
        "{whats:?}"
    );
    assert!(
        whats.contains(&"an item the reference does not answer"),
        "{whats:?}"
    );
}

#[test]
fn a_list_holds_exactly_the_references_items() {
    let mut ids = IdMap::default();
    ids.learn("t1", 0, "a1");
    ids.learn("t1", 1, "b1");
    ids.learn("t2", 0, "a2");
    ids.learn("t2", 1, "b2");
    let list =
        |x: &str, y: &str| json!({"items": [{"cohort_id": x}, {"cohort_id": y}], "total": 2});
    // In another order: the same.
    let out = run(
        answer(200, &list("t2", "t1")),
        answer(200, &list("a1", "a2")),
        answer(200, &list("b2", "b1")),
        &mut ids,
    );
    assert!(out.differences.is_empty(), "{:#?}", out.differences);
    // Another campaign's cohort beside them.
    let t = json!({"items": [{"cohort_id": "t1"}, {"cohort_id": "t2"}, {"cohort_id": "t9"}], "total": 3});
    let out = run(
        answer(200, &t),
        answer(200, &list("a1", "a2")),
        answer(200, &list("b1", "b2")),
        &mut ids,
    );
    let whats: Vec<&str> = out.differences.iter().map(|d| d.what.as_str()).collect();
    assert!(
        whats.contains(&"3 items where the reference answers 2"),
        "{whats:?}"
    );
    assert!(
        whats.contains(&"an item the reference does not answer"),
        "{whats:?}"
    );
    assert!(whats.contains(&"another value"), "total: {whats:?}");
}

#[test]
fn a_csv_file_is_compared_row_by_row_but_its_reasons_wording() {
    let mut ids = IdMap::default();
    let reference = "phone,id,rejected_reason\n12345,u5,too short\n";
    let answer_of = |text: &'static str| Answer {
        status: 200,
        content_type: Some("text/csv"),
        json: None,
        text,
    };
    let (a, b) = (answer_of(reference), answer_of(reference));
    let same = answer_of("phone,id,rejected_reason\n12345,u5,has 5 digits\n");
    assert!(
        diff(&same, [&a, &b], &mut ids, &judging(false))
            .differences
            .is_empty()
    );
    let dropped = answer_of("phone,rejected_reason\n12345,too short\n");
    let out = diff(&dropped, [&a, &b], &mut ids, &judging(false));
    assert_eq!(out.differences[0].what, "another header row");
}

#[test]
fn a_list_in_another_order_differs_where_the_order_is_fixed() {
    let mut ids = IdMap::default();
    for (t, a, b) in [("t1", "a1", "b1"), ("t2", "a2", "b2")] {
        ids.learn(t, 0, a);
        ids.learn(t, 1, b);
    }
    let list = |x: &str, y: &str| json!({"items": [{"campaign_id": x}, {"campaign_id": y}]});
    let (t, a, b) = (list("t2", "t1"), list("a1", "a2"), list("b1", "b2"));
    let text = String::new();
    let view = |v| Answer {
        status: 200,
        content_type: Some("application/json"),
        json: Some(v),
        text: &text,
    };
    let sorted = Judging {
        items_order: Some(rules::Rule {
            source: Source::Ref,
            row: "sort_order desc by default",
        }),
        ..judging(false)
    };
    let out = diff(&view(&t), [&view(&a), &view(&b)], &mut ids, &sorted);
    assert_eq!(out.differences.len(), 1, "{:#?}", out.differences);
    assert_eq!(out.differences[0].what, "the items in another order");
    // Without a fixed order, the same items pass.
    let out = diff(&view(&t), [&view(&a), &view(&b)], &mut ids, &judging(false));
    assert!(out.differences.is_empty());
    // References that order ties otherwise fix no order.
    let b2 = list("b2", "b1");
    let out = diff(&view(&t), [&view(&a), &view(&b2)], &mut ids, &sorted);
    assert!(out.differences.is_empty());
}
