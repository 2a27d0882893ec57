//! Property tests over what outside users send: phone numbers, `byok:v1:` envelopes, and
//! campaign and deployment bodies (valid documents with random changes, and arbitrary JSON).
//! Nothing panics, and every refusal is in the documented shape.
//!
//! A bounded run is part of `cargo test`; a longer one:
//! `PROPTEST_CASES=20000 cargo test --workspace --test contracts fuzz`. Inputs that once
//! failed are replayed first, from `fuzz_corpus/` (and proptest's own
//! `proptest-regressions/` files, written when a run fails).

use contracts::domain::phone::{normalize, parse_e164};
use contracts::envelope;
use contracts::error::{LocItem, ValidationErrors};
use contracts::validate::{self, Options};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::fixtures::{campaign, deployment, now};

// ----- strategies -----

/// Strings that tend to matter: empty, NUL, long, unicode digits and spaces, timestamps,
/// numbers as text, names of the interface.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("\u{0}".to_string()),
        Just("a\u{0}b".to_string()),
        Just("x".repeat(151)),
        Just("9".repeat(400)),
        Just("\u{0661}\u{0662}\u{0663}".to_string()),
        Just("\u{a0}\u{2003}".to_string()),
        Just("2026-03-02T13:00:00Z".to_string()),
        Just("2026-03-02T13:00:00".to_string()),
        Just("9999-12-31T23:59:59Z".to_string()),
        Just("+14155550100".to_string()),
        Just("Monday".to_string()),
        Just("America/New_York".to_string()),
        Just("busy".to_string()),
        Just("short_duration".to_string()),
        Just("09:00".to_string()),
        Just("24:00".to_string()),
        Just("https://hooks.example.com/calls".to_string()),
        Just("javascript:alert(1)".to_string()),
        ".{0,24}",
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1000i64..2000).prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(Value::from),
        Just(json!(0.1)),
        Just(json!(500.0000001)),
        Just(json!(1e308)),
        Just(json!(-0.0)),
        Just(json!(2.0)),
    ]
}

/// Arbitrary JSON, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        number(),
        tricky_string().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(tricky_string(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

/// One change to a document: at the `n`-th place of it (any depth), replace the value,
/// remove it, or add an unknown field beside it.
#[derive(Debug, Clone)]
enum Change {
    Replace(usize, Value),
    Remove(usize),
    AddField(usize, String, Value),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        3 => (any::<usize>(), any_json()).prop_map(|(n, v)| Change::Replace(n, v)),
        1 => any::<usize>().prop_map(Change::Remove),
        1 => (any::<usize>(), tricky_string(), any_json()).prop_map(|(n, k, v)| Change::AddField(n, k, v)),
    ]
}

/// Every place in `v` as a path of keys and indices.
fn places(v: &Value, prefix: &mut Vec<LocItem>, out: &mut Vec<Vec<LocItem>>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                prefix.push(LocItem::Key(k.clone()));
                out.push(prefix.clone());
                places(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                prefix.push(LocItem::Index(i));
                out.push(prefix.clone());
                places(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn parent_mut<'a>(root: &'a mut Value, path: &[LocItem]) -> Option<&'a mut Value> {
    let mut cur = root;
    for step in path {
        cur = match (step, cur) {
            (LocItem::Key(k), Value::Object(m)) => m.get_mut(k)?,
            (LocItem::Index(i), Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn apply(mut doc: Value, changes: &[Change]) -> Value {
    for change in changes {
        let mut all = Vec::new();
        places(&doc, &mut Vec::new(), &mut all);
        if all.is_empty() {
            return doc;
        }
        let pick = |n: usize| all[n % all.len()].clone();
        match change {
            Change::Replace(n, v) => {
                let path = pick(*n);
                if let Some(slot) = parent_mut(&mut doc, &path) {
                    *slot = v.clone();
                }
            }
            Change::Remove(n) => {
                let path = pick(*n);
                let (last, parent) = path.split_last().expect("a place has a step");
                match (last, parent_mut(&mut doc, parent)) {
                    (LocItem::Key(k), Some(Value::Object(m))) => {
                        m.remove(k);
                    }
                    (LocItem::Index(i), Some(Value::Array(a))) if *i < a.len() => {
                        a.remove(*i);
                    }
                    _ => {}
                }
            }
            Change::AddField(n, key, v) => {
                let path = pick(*n);
                if let Some(Value::Object(m)) = parent_mut(&mut doc, &path[..path.len() - 1]) {
                    m.insert(key.clone(), v.clone());
                }
            }
        }
    }
    doc
}

/// A campaign or deployment body: valid with a few changes (most), or arbitrary JSON.
fn body_from(base: fn() -> Value) -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::collection::vec(change(), 1..4).prop_map(move |c| apply(base(), &c)),
        1 => any_json(),
    ]
}

// ----- checks -----

/// Validation `type` values, as `docs/interface.md` lists them.
const TYPES: &[&str] = &[
    "missing",
    "string_type",
    "int_type",
    "int_from_float",
    "int_parsing",
    "float_type",
    "bool_type",
    "list_type",
    "dict_type",
    "model_type",
    "greater_than_equal",
    "less_than_equal",
    "string_too_short",
    "string_too_long",
    "string_pattern_mismatch",
    "too_short",
    "too_long",
    "enum",
    "datetime_parsing",
    "timezone_aware",
    "url_parsing",
    "url_scheme",
    "value_error",
    "json_invalid",
    "extra_forbidden",
];

/// A refusal in the documented shape: `{"detail": [{"loc", "msg", "type"}]}`, at least one
/// failure, each `loc` from `body`, each `msg` said, each `type` a documented one.
fn assert_documented(e: ValidationErrors) -> Result<(), TestCaseError> {
    let body = serde_json::to_value(e.into_body()).expect("the body serialises");
    let detail = body["detail"].as_array().expect("detail is a list");
    prop_assert!(!detail.is_empty(), "{}", body);
    for d in detail {
        let loc = d["loc"].as_array().expect("loc is a list");
        prop_assert_eq!(&loc[0], &json!("body"), "{}", d);
        prop_assert!(loc.iter().all(|l| l.is_string() || l.is_u64()), "{}", d);
        prop_assert!(d["msg"].as_str().is_some_and(|m| !m.is_empty()), "{}", d);
        let ty = d["type"].as_str().expect("type is a string");
        prop_assert!(TYPES.contains(&ty), "undocumented type {}: {}", ty, d);
    }
    Ok(())
}

fn check<T>(r: Result<T, ValidationErrors>) -> Result<(), TestCaseError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) => assert_documented(e),
    }
}

fn strictness() -> impl Strategy<Value = Options> {
    any::<bool>().prop_map(|strict| Options { strict })
}

proptest! {
    // proptest's default: 256 cases, or `PROPTEST_CASES`.
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn campaign_bodies_are_accepted_or_refused_in_the_documented_shape(
        body in body_from(campaign),
        opts in strictness(),
    ) {
        check(validate::campaign_create(&body, now(), opts))?;
        let current = validate::campaign_create(&campaign(), now(), Options::default())
            .expect("the base campaign is valid");
        check(validate::campaign_patch(&body, now(), &current, opts))?;
    }

    #[test]
    fn deployment_bodies_are_accepted_or_refused_in_the_documented_shape(
        body in body_from(deployment),
        opts in strictness(),
    ) {
        check(validate::deployment_create(&body, opts))?;
        let current = validate::deployment_create(&deployment(), Options::default())
            .expect("the base deployment is valid");
        check(validate::deployment_patch(&body, &current, opts))?;
    }

    #[test]
    fn phone_numbers_normalise_to_valid_e164_or_are_refused_with_a_reason(
        raw in prop_oneof![
            "[+0-9 ().\\-]{0,24}",
            "(\\+|00)?[0-9]{1,20}",
            tricky_string(),
        ],
        region in prop_oneof![
            Just(None),
            Just(Some("US".to_string())),
            Just(Some("in".to_string())),
            Just(Some("+91".to_string())),
            Just(Some("44".to_string())),
            proptest::option::of("[A-Za-z+0-9]{0,5}"),
        ],
    ) {
        match normalize(&raw, region.as_deref()) {
            Ok(e) => {
                let text = e.as_str();
                let digits = text.strip_prefix('+').expect("E.164 starts with +");
                prop_assert!((7..=15).contains(&digits.len()), "{}", text);
                prop_assert!(digits.bytes().all(|b| b.is_ascii_digit()), "{}", text);
                prop_assert_eq!(parse_e164(text).map(|p| p.as_str().to_string()), Ok(text.to_string()));
                let again = normalize(text, None).expect("E.164 normalises to itself");
                prop_assert_eq!(again.as_str(), text);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
        if let Ok(e) = parse_e164(&raw) {
            prop_assert_eq!(e.as_str(), raw.as_str());
        }
    }

    #[test]
    fn envelopes_parse_or_are_refused_and_never_open_when_altered(
        key in prop::array::uniform32(any::<u8>()),
        alias in "[a-z0-9-]{1,12}",
        version in 1u32..5,
        nonce in prop::array::uniform12(any::<u8>()),
        plaintext in prop::collection::vec(any::<u8>(), 0..48),
        flip in any::<usize>(),
        junk in prop_oneof![".{0,40}", "byok:v1:[A-Za-z0-9+/=]{0,80}", "byok:v[0-9]{1,3}:.{0,20}"],
    ) {
        // Arbitrary text: parsed or refused, never a panic.
        if let Ok(env) = envelope::parse(&junk) {
            let _ = envelope::unwrap(&key, &alias, &env);
        }
        // A real envelope opens; altered anywhere, it is refused or does not open.
        let text = envelope::wrap(&key, &alias, version, nonce, &plaintext).expect("wraps");
        let env = envelope::parse(&text).expect("parses");
        prop_assert_eq!(envelope::unwrap(&key, &alias, &env).expect("opens").to_vec(), plaintext.clone());
        let mut bytes = text.clone().into_bytes();
        let at = "byok:v1:".len() + flip % (bytes.len() - "byok:v1:".len());
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(bytes).expect("still ASCII");
        if let Ok(env) = envelope::parse(&altered) {
            match envelope::unwrap(&key, &alias, &env) {
                Ok(opened) => prop_assert_eq!(
                    opened.to_vec(), plaintext,
                    "an altered envelope opened to something else"
                ),
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
        prop_assert!(envelope::unwrap(&key, &format!("{alias}x"), &env).is_err(), "another alias");
    }
}

/// Inputs that once failed, kept and replayed on every run: each file of
/// `fuzz_corpus/campaign/` and `fuzz_corpus/deployment/` is a body.
#[test]
fn the_corpus_of_inputs_that_once_failed_is_handled() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/contracts/fuzz_corpus");
    let current_campaign =
        validate::campaign_create(&campaign(), now(), Options::default()).unwrap();
    let current_deployment =
        validate::deployment_create(&deployment(), Options::default()).unwrap();
    let mut seen = 0;
    for kind in ["campaign", "deployment"] {
        let mut files: Vec<_> = std::fs::read_dir(dir.join(kind))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let body: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            for strict in [false, true] {
                let opts = Options { strict };
                let results = match kind {
                    "campaign" => vec![
                        validate::campaign_create(&body, now(), opts).map(|_| ()),
                        validate::campaign_patch(&body, now(), &current_campaign, opts).map(|_| ()),
                    ],
                    _ => vec![
                        validate::deployment_create(&body, opts).map(|_| ()),
                        validate::deployment_patch(&body, &current_deployment, opts).map(|_| ()),
                    ],
                };
                for r in results {
                    if let Err(e) = r {
                        assert_documented(e).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                    }
                }
            }
            // Each corpus body is refused at create: that is why it is kept.
            let refused = match kind {
                "campaign" => validate::campaign_create(&body, now(), Options::default()).is_err(),
                _ => validate::deployment_create(&body, Options::default()).is_err(),
            };
            assert!(refused, "{} is accepted", file.display());
            seen += 1;
        }
    }
    assert!(seen >= 2, "the corpus is there");
}
