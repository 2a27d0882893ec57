//! Property test of `/decrypt-key` over HTTP: arbitrary `encrypted_key` texts (junk, other
//! versions, real envelopes altered at one byte, envelopes of the other alias) are answered
//! 200 with the right plaintext only when the envelope is the real one; every refusal is a
//! 4xx in `{"error": {"code", "message"}}`, never a 5xx, never another plaintext.
//!
//! A bounded run (proptest's default of 256 cases) is part of `cargo test`; a longer one:
//! `PROPTEST_CASES=5000 cargo test --workspace --test kms fuzz`.

use proptest::prelude::*;
use reqwest::StatusCode;

use crate::helpers::*;

/// What is sent as `encrypted_key`, and under which alias.
#[derive(Debug, Clone)]
enum Key {
    /// Text of any shape.
    Junk(String),
    /// The real envelope of the alias, one byte after the prefix replaced.
    Altered { at: usize, with: u8 },
    /// The real envelope of tenant-b sent for tenant-a.
    OtherAlias,
    /// The real envelope, untouched.
    Real,
}

fn key() -> impl Strategy<Value = Key> {
    prop_oneof![
        prop_oneof![
            ".{0,60}",
            "byok:v1:[A-Za-z0-9+/=]{0,90}",
            "byok:v[0-9]{1,3}:[A-Za-z0-9+/=]{0,60}",
            "(byok:v1:)?[\\x00-\\x7f]{0,40}",
        ]
        .prop_map(Key::Junk),
        (any::<usize>(), any::<u8>()).prop_map(|(at, with)| Key::Altered { at, with }),
        Just(Key::OtherAlias),
        Just(Key::Real),
    ]
}

async fn case(app: &TestApp, token: &str, key: Key) -> Result<(), TestCaseError> {
    let real = app.wrapped(ALIAS_A);
    let (text, may_open) = match key {
        Key::Junk(t) => {
            let may = t == real;
            (t, may)
        }
        Key::Altered { at, with } => {
            let mut bytes = real.clone().into_bytes();
            let i = "byok:v1:".len() + at % (bytes.len() - "byok:v1:".len());
            bytes[i] = if with.is_ascii_graphic() { with } else { b'A' };
            let t = String::from_utf8(bytes).expect("ASCII");
            let may = t == real;
            (t, may)
        }
        Key::OtherAlias => (app.wrapped(ALIAS_B), false),
        Key::Real => (real, true),
    };
    let r = read(app.decrypt_request(token, ALIAS_A, &text)).await;
    if r.status == StatusCode::OK {
        prop_assert!(may_open, "{text:?} opened: {}", r.body);
        let plaintext = r.json()["data"]["plaintext_key"]
            .as_str()
            .map(unb64)
            .unwrap_or_default();
        prop_assert_eq!(
            plaintext,
            DATA_KEY.to_vec(),
            "another plaintext for {:?}",
            text
        );
    } else {
        prop_assert!(
            !may_open,
            "the real envelope was refused: {} {}",
            r.status,
            r.body
        );
        prop_assert!(
            r.status.is_client_error(),
            "{} for {text:?}: {}",
            r.status,
            r.body
        );
        let body: serde_json::Value = serde_json::from_str(&r.body)
            .map_err(|e| TestCaseError::fail(format!("not JSON ({e}): {}", r.body)))?;
        let code = body["error"]["code"].as_str().unwrap_or_default();
        let message = body["error"]["message"].as_str().unwrap_or_default();
        prop_assert!(!code.is_empty() && !message.is_empty(), "{}", body);
        prop_assert!(
            !message.contains(&text) || text.len() <= 12,
            "the key echoed: {message}"
        );
    }
    Ok(())
}

#[test]
fn decrypt_key_opens_only_the_real_envelope_and_refuses_the_rest_in_shape() {
    // One key service for every case, on a runtime of its own (proptest's cases are not
    // async).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (app, token) = rt.block_on(async {
        let app = spawn_app().await;
        let token = app.token().await;
        (app, token)
    });
    let config = ProptestConfig {
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct(
                "tests/kms/proptest-regressions/fuzz.txt",
            ),
        )),
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let outcome = runner.run(&key(), |k| rt.block_on(case(&app, &token, k)));
    if let Err(e) = outcome {
        panic!("{e}");
    }
}
