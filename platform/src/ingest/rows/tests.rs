//! Unit tests of the row rules.

use contracts::model::ColumnRule;

use super::*;
use crate::keys::DataKey;
use crate::store::cohorts;

/// A transformation: phone `phone`, identifier `id` (required), variable `plan` from
/// `plan` (optional) and `name` from `first_name` (required), override
/// `initial_bot_message` from `greeting`.
fn transformation() -> Transformation {
    let rule = |column: &str, required| ColumnRule {
        column: column.into(),
        required,
    };
    Transformation {
        phone_column: "phone".into(),
        country_code: Some("US".into()),
        user_identifier: Some(rule("id", true)),
        app_variables: vec![
            ("plan".into(), rule("plan", false)),
            ("name".into(), rule("first_name", true)),
        ],
        app_overrides: vec![("initial_bot_message".into(), "greeting".into())],
        unknown_overrides: Vec::new(),
    }
}

fn record(fields: &[&str]) -> StringRecord {
    StringRecord::from(fields.to_vec())
}

fn columns() -> Columns {
    let header = record(&[" phone ", "id", "plan", "first_name", "greeting"]);
    Columns::resolve(&transformation(), &header).unwrap()
}

fn json<V: Serialize>(user: &User<'_, V>) -> serde_json::Value {
    serde_json::to_value(user).unwrap()
}

#[test]
fn header_names_are_trimmed_and_the_first_of_repeated_names_wins() {
    let header = record(&["greeting", "phone", "id", "first_name", "plan", "phone"]);
    let c = Columns::resolve(&transformation(), &header).unwrap();
    let row = record(&["hi", "(415) 555-0100", "c-1", "Ann", "", "+14155550199"]);
    let user = c.check(&row, Some("US")).unwrap();
    assert_eq!(user.phone_number.as_str(), "+14155550100");
    assert_eq!(user.app_overrides.initial_bot_message, Some("hi"));
}

#[test]
fn missing_columns_fail_the_upload_without_quoting_the_header() {
    let header = record(&["secret-value", "id"]);
    let err = Columns::resolve(&transformation(), &header).unwrap_err();
    assert_eq!(
        err,
        "the header row (2 columns) lacks the columns 'phone' (phone_number), 'plan' (app_variables.plan), 'first_name' (app_variables.name) and 'greeting' (app_overrides.initial_bot_message) named by the transformation file; the first row of the file must name its columns, spelled exactly as in the transformation file"
    );
    assert!(!err.contains("secret-value"));
    let one =
        Columns::resolve(&transformation(), &record(&["id plan first_name greeting"])).unwrap_err();
    assert!(one.starts_with("the header row (1 column) lacks the columns 'phone'"));
    let t = Transformation {
        user_identifier: None,
        app_variables: Vec::new(),
        app_overrides: Vec::new(),
        ..transformation()
    };
    assert!(
        Columns::resolve(&t, &record(&["number"]))
            .unwrap_err()
            .contains("lacks the column 'phone' (phone_number) named")
    );
}

#[test]
fn an_accepted_row_leaves_its_empty_optional_values_out() {
    let c = columns();
    let row = record(&["415-555-0100", " c-1 ", "  ", "Ann", " \t"]);
    let user = c.check(&row, Some("US")).unwrap();
    assert_eq!(
        json(&user),
        serde_json::json!({
            "phone_number": "+14155550100",
            "user_identifier": " c-1 ",
            "app_variables": {"name": "Ann"},
        })
    );
    // No overrides are left out of the sealed JSON, and read back as none; users stored
    // with an empty object still read.
    let stored: crate::store::cohorts::CohortUser = serde_json::from_value(json(&user)).unwrap();
    assert_eq!(stored.app_overrides, Default::default());
    let mut older = json(&user);
    older["app_overrides"] = serde_json::json!({});
    let older: crate::store::cohorts::CohortUser = serde_json::from_value(older).unwrap();
    assert_eq!(older, stored);
    let row = record(&["+14155550100", "c-1", "gold", "Ann", "Hello!"]);
    let user = c.check(&row, None).unwrap();
    assert_eq!(
        json(&user)["app_variables"],
        serde_json::json!({"plan": "gold", "name": "Ann"})
    );
    assert_eq!(
        json(&user)["app_overrides"],
        serde_json::json!({"initial_bot_message": "Hello!"})
    );
}

#[test]
fn a_rejected_row_gives_every_reason() {
    let c = columns();
    assert_eq!(
        c.check(&record(&["+14155550100", "c-1"]), None)
            .unwrap_err(),
        "the row has 2 fields but the header has 5"
    );
    assert_eq!(
        c.check(&record(&[" ", "", "gold", "", ""]), None)
            .unwrap_err(),
        "the phone number is empty (column 'phone'); the required column 'id' (user_identifier) is empty; the required column 'first_name' (app_variables.name) is empty"
    );
    let bad = phone::normalize("12", Some("US")).unwrap_err().to_string();
    assert_eq!(
        c.check(&record(&["12", "c-1", "", "Ann", ""]), Some("US"))
            .unwrap_err(),
        bad
    );
    // A national number needs the region.
    assert!(
        c.check(&record(&["415-555-0100", "c-1", "", "Ann", ""]), None)
            .is_err()
    );
}

#[test]
fn a_streamed_user_follows_the_same_rules() {
    let u: CohortStreamUser = serde_json::from_value(serde_json::json!({
        "phone_number": "(415) 555-0100",
        "user_identifier": "  ",
        "app_overrides": {"initial_state_name": "intro", "initial_bot_message": " "},
    }))
    .unwrap();
    let user = stream_user(&u, Some("US")).unwrap();
    assert_eq!(
        json(&user),
        serde_json::json!({
            "phone_number": "+14155550100",
            "user_identifier": null,
            "app_variables": {},
            "app_overrides": {"initial_state_name": "intro"},
        })
    );
    let u: CohortStreamUser = serde_json::from_value(serde_json::json!({
        "phone_number": "+14155550100",
        "user_identifier": "c-9",
        "app_variables": {"plan": {"tier": 2}},
    }))
    .unwrap();
    assert_eq!(
        json(&stream_user(&u, None).unwrap())["app_variables"],
        serde_json::json!({"plan": {"tier": 2}})
    );
    let u: CohortStreamUser =
        serde_json::from_value(serde_json::json!({"phone_number": "415-555-0100"})).unwrap();
    assert_eq!(
        stream_user(&u, None).unwrap_err(),
        phone::normalize("415-555-0100", None)
            .unwrap_err()
            .to_string()
    );
}

#[test]
fn admission_rejects_a_repeated_number_naming_the_first_row_and_the_rest_seal_for_their_rows() {
    let keys = WorkspaceKeys::single(DataKey::new(1, &[3u8; 32]));
    let mut admission = Admission::new(&keys);
    let c = columns();
    let mut admitted = AdmittedUsers::default();
    let rows = [
        record(&["+14155550100", "c-1", "", "Ann", ""]),
        record(&["+14155550101", "c-2", "", "Bo", ""]),
        record(&["(415) 555-0100", "c-3", "", "Cy", ""]),
    ];
    let mut verdicts = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let user = c.check(row, Some("US")).unwrap();
        verdicts.push(admission.admit(i as u64 + 1, &user, &mut admitted));
    }
    assert_eq!(
        verdicts,
        [
            Ok(()),
            Ok(()),
            Err("duplicate phone number: +14155550100 is already in data row 1".into())
        ]
    );
    assert_eq!(admitted.len(), 2);
    let plain: Vec<_> = admitted.iter().map(|u| u.data.to_vec()).collect();
    let batch = admitted.seal(&keys, "coh-1");
    assert_eq!(batch.len(), 2);
    let second = batch.iter().nth(1).unwrap();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&plain[1]).unwrap()["phone_number"],
        "+14155550101",
        "admitted as JSON in the open"
    );
    assert_eq!(second.row_no, 2);
    assert_eq!(*second.phone_hash, keys.lookup_hash("+14155550101"));
    let opened = cohorts::open_user(&keys, "coh-1", 2, second.data).unwrap();
    assert_eq!(opened.phone_number, "+14155550101");
    assert_eq!(opened.user_identifier.as_deref(), Some("c-2"));
    assert!(
        cohorts::open_user(&keys, "coh-2", 2, second.data).is_err(),
        "sealed for its cohort and row"
    );
    let phones = admission.into_phones();
    assert_eq!(
        phones.iter().map(|p| p.row_no).collect::<Vec<_>>(),
        [1, 2],
        "the lookup entries of the admitted rows"
    );
    assert_eq!(phones[1].phone_hash, *second.phone_hash);
}

#[test]
fn unknown_override_reasons_name_the_keys() {
    assert_eq!(
        unknown_overrides_reason(&["voice".into()]),
        "app_overrides of the transformation file has a key that is not an override: 'voice'; the allowed keys are 'initial_bot_message', 'initial_state_name' and 'initial_language_name'"
    );
    assert!(
        unknown_overrides_reason(&["a".into(), "b".into()])
            .contains("keys that are not overrides: 'a', 'b'")
    );
}
