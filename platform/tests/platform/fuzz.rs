//! Property tests of cohort uploads: arbitrary CSV files (quoting, line endings, byte-order
//! marks, bytes that are not UTF-8, rows of the wrong length, phone numbers in every form)
//! with transformation configs (valid, wrong, or not JSON), through the API. Every upload is
//! refused in the error shape or accepted and then `completed` (its counts adding up, its
//! rejected rows a CSV file with a `rejected_reason`) or `failed` with a reason; never stuck,
//! never a 500.
//!
//! A bounded run (proptest's default of 256 cases) is part of `cargo test`; a longer one:
//! `PROPTEST_CASES=2000 cargo test --workspace --test platform fuzz`.

use std::time::Duration;

use contracts::clock::Stopwatch;
use proptest::prelude::*;
use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use crate::helpers::*;

/// The platform every case uploads to, and the cohorts path of a deployment of it.
struct Target {
    app: TestApp,
    base: String,
    /// Cases refused at upload, completed, failed: printed, to see what a run covered.
    tally: std::sync::Mutex<[usize; 3]>,
}

/// Column names a header is made of; the transformation names them too (mostly the usual
/// four, so that most uploads get as far as their rows).
const COLUMNS: &[&str] = &[
    "phone",
    "id",
    "first_name",
    "plan",
    " phone ",
    "Phone",
    "",
    "a,b",
];
const USUAL_COLUMNS: &[&str] = &["phone", "id", "first_name", "plan"];

fn field() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"+1 202 555 0100".to_vec()),
        Just(b"(202) 555-0101".to_vec()),
        Just(b"202.555.0109".to_vec()),
        Just(b"00442079460018".to_vec()),
        Just(b"098765 43210".to_vec()),
        Just(b"12345".to_vec()),
        Just(b"+0000000".to_vec()),
        Just(b"".to_vec()),
        Just(b"   ".to_vec()),
        Just(b"\xff\xfe".to_vec()),
        Just("\u{0}".as_bytes().to_vec()),
        Just("\u{0661}\u{0662}\u{0663}".as_bytes().to_vec()),
        "[a-zA-Z0-9 ,\"\n\r;]{0,12}".prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..8),
    ]
}

/// One CSV field as written: quoted when it must be (or at random), quotes doubled.
fn write_field(out: &mut Vec<u8>, value: &[u8], quote: bool) {
    let must = value
        .iter()
        .any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'));
    if quote || must {
        out.push(b'"');
        for b in value {
            if *b == b'"' {
                out.push(b'"');
            }
            out.push(*b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(value);
    }
}

#[derive(Debug, Clone)]
struct Upload {
    csv: Vec<u8>,
    transformation: Vec<u8>,
}

fn upload() -> impl Strategy<Value = Upload> {
    let header = prop_oneof![
        4 => Just(USUAL_COLUMNS.to_vec()),
        1 => prop::collection::vec(prop::sample::select(COLUMNS), 1..5),
    ];
    let rows = prop::collection::vec((prop::collection::vec(field(), 0..6), any::<bool>()), 0..10);
    let shape = (any::<bool>(), any::<bool>(), any::<bool>(), 0u8..3);
    (header, rows, shape, transformation()).prop_map(
        |(header, rows, (bom, crlf, quote_all, blank_lines), transformation)| {
            let eol: &[u8] = if crlf { b"\r\n" } else { b"\n" };
            let mut csv = Vec::new();
            if bom {
                csv.extend_from_slice("\u{feff}".as_bytes());
            }
            for (i, h) in header.iter().enumerate() {
                if i > 0 {
                    csv.push(b',');
                }
                write_field(&mut csv, h.as_bytes(), quote_all);
            }
            csv.extend_from_slice(eol);
            for (fields, quote) in rows {
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        csv.push(b',');
                    }
                    write_field(&mut csv, f, quote || quote_all);
                }
                csv.extend_from_slice(eol);
                for _ in 0..blank_lines {
                    csv.extend_from_slice(eol);
                }
            }
            Upload {
                csv,
                transformation,
            }
        },
    )
}

fn column() -> impl Strategy<Value = Value> {
    prop_oneof![
        12 => prop::sample::select(USUAL_COLUMNS).prop_map(Value::from),
        2 => prop::sample::select(COLUMNS).prop_map(Value::from),
        1 => Just(json!("missing_column")),
        1 => Just(json!(7)),
    ]
}

fn rule() -> impl Strategy<Value = Value> {
    (column(), proptest::option::of(any::<bool>())).prop_map(|(c, required)| match required {
        Some(r) => json!({"column_name": c, "required": r}),
        None => json!({ "column_name": c }),
    })
}

fn transformation() -> impl Strategy<Value = Vec<u8>> {
    let country = prop_oneof![
        4 => Just(json!("US")),
        2 => Just(json!("in")),
        1 => Just(json!("+44")),
        1 => Just(json!("91")),
        1 => Just(json!("ZZ")),
        1 => Just(json!(1)),
    ];
    let key = prop_oneof![
        6 => prop::sample::select(
            &["initial_bot_message", "initial_state_name", "initial_language_name"][..]
        ),
        1 => Just("greeting"),
    ];
    let overrides = prop::collection::btree_map(
        key,
        column().prop_map(|c| json!({ "column_name": c })),
        0..2,
    );
    let phone_column = prop_oneof![8 => Just(json!("phone")), 1 => column()];
    let config = (
        phone_column,
        proptest::option::of(country),
        proptest::option::of(rule()),
        prop::collection::btree_map("[a-z_]{1,8}", rule(), 0..2),
        overrides,
    )
        .prop_map(|(phone, country, id, vars, overrides)| {
            let mut phone_rule = json!({ "column_name": phone });
            if let Some(c) = country {
                phone_rule["country_code"] = c;
            }
            let mut t = json!({ "phone_number": phone_rule });
            if let Some(id) = id {
                t["user_identifier"] = id;
            }
            if !vars.is_empty() {
                t["app_variables"] = json!(vars);
            }
            if !overrides.is_empty() {
                t["app_overrides"] = json!(overrides);
            }
            serde_json::to_vec(&t).unwrap()
        });
    prop_oneof![
        12 => config,
        1 => Just(b"{\"phone_number\": ".to_vec()),
        1 => Just(b"[]".to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..16),
    ]
}

/// The platform's error shapes: `{"detail": [...]}` for 422, `{"error": {...}}` otherwise.
fn assert_error_shape(status: StatusCode, body: &Value) -> Result<(), TestCaseError> {
    prop_assert!(
        [400, 413, 415, 422].contains(&status.as_u16()),
        "{} {}",
        status,
        body
    );
    if status == StatusCode::UNPROCESSABLE_ENTITY {
        let detail = body["detail"].as_array().expect("detail");
        prop_assert!(!detail.is_empty());
        for d in detail {
            prop_assert_eq!(&d["loc"][0], &json!("body"), "{}", d);
            prop_assert!(d["msg"].as_str().is_some_and(|m| !m.is_empty()), "{}", d);
            prop_assert!(d["type"].is_string(), "{}", d);
        }
    } else {
        for field in ["message", "type", "code"] {
            prop_assert!(body["error"][field].is_string(), "{}", body);
        }
    }
    Ok(())
}

async fn check(s: &Target, u: Upload) -> Result<(), TestCaseError> {
    let app = &s.app;
    let form = Form::new()
        .text("name", "fuzz")
        .part(
            "cohort_file",
            Part::bytes(u.csv)
                .file_name("users.csv")
                .mime_str("text/csv")
                .unwrap(),
        )
        .part(
            "cohort_transformation_file",
            Part::bytes(u.transformation)
                .file_name("t.json")
                .mime_str("application/json")
                .unwrap(),
        );
    let resp = app
        .client
        .post(app.url(&format!("{}/upload", s.base)))
        .header("x-api-key", KEY)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let body: Value = resp.json().await.expect("a JSON answer");
    if status != StatusCode::OK {
        s.tally.lock().unwrap()[0] += 1;
        return assert_error_shape(status, &body);
    }
    let id = body["cohort_id"].as_str().expect("cohort_id").to_string();
    prop_assert_eq!(&body["status"], &json!("processing"));
    let watch = Stopwatch::start();
    let done = loop {
        let (st, v) = app.get(&format!("{}/{id}", s.base)).await;
        prop_assert_eq!(st, StatusCode::OK, "{}", v);
        if v["status"] != "processing" {
            break v;
        }
        prop_assert!(watch.elapsed() < Duration::from_secs(60), "stuck: {}", v);
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    match done["status"].as_str() {
        Some("completed") => {
            s.tally.lock().unwrap()[1] += 1;
            let r = &done["result"];
            let (total, valid, rejected) = (
                r["total_records"].as_u64().unwrap(),
                r["valid_records"].as_u64().unwrap(),
                r["rejected_records"].as_u64().unwrap(),
            );
            prop_assert_eq!(total, valid + rejected, "{}", done);
            if rejected > 0 {
                let resp = app
                    .client
                    .get(app.url(&format!("{}/{id}/files?file_type=rejected_records", s.base)))
                    .header("x-api-key", KEY)
                    .send()
                    .await
                    .unwrap();
                prop_assert_eq!(resp.status(), StatusCode::OK);
                let bytes = resp.bytes().await.unwrap();
                let mut reader = csv::ReaderBuilder::new()
                    .flexible(true)
                    .from_reader(&bytes[..]);
                let header = reader.byte_headers().unwrap().clone();
                prop_assert_eq!(header.iter().next_back(), Some(&b"rejected_reason"[..]));
                let rows = reader.byte_records().count() as u64;
                prop_assert_eq!(rows, rejected, "{}", String::from_utf8_lossy(&bytes));
            }
        }
        Some("failed") => {
            s.tally.lock().unwrap()[2] += 1;
            prop_assert!(
                done["failure_reason"]
                    .as_str()
                    .is_some_and(|r| !r.is_empty()),
                "{}",
                done
            );
            prop_assert!(done["result"].is_null(), "{}", done);
        }
        other => prop_assert!(false, "status {:?}: {}", other, done),
    }
    Ok(())
}

#[test]
fn any_cohort_upload_is_refused_in_shape_or_completes_or_fails_with_a_reason() {
    // One platform for every case, on a runtime of its own (proptest's cases are not async).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let target = rt.block_on(async {
        let app = spawn_app().await;
        let dep = create_deployment(&app, "Fuzz", "+14155550199").await;
        let base =
            format!("/api/scheduling/v1/orgs/{ORG}/workspaces/{WS}/deployments/{dep}/cohorts");
        Target {
            app,
            base,
            tally: Default::default(),
        }
    });
    // Seeds of failing cases are written to (and replayed from) the regressions file.
    let config = ProptestConfig {
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "tests/platform/proptest-regressions/fuzz.txt",
            ),
        )),
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let outcome = runner.run(&upload(), |u| rt.block_on(check(&target, u)));
    let [refused, completed, failed] = *target.tally.lock().unwrap();
    eprintln!("uploads: {refused} refused, {completed} completed, {failed} failed");
    drop(target);
    if let Err(e) = outcome {
        panic!("{e}");
    }
}
