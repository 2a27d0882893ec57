//! What a successful answer of the key service must hold, field by field, so that an answer
//! the platform cannot use is refused with a message naming the field and its problem
//! (`data.expires_in is a string, not an integer of seconds`; `plaintext_key is URL-safe
//! base64 ...`), not only the expected shape. Messages name types and alphabets, never a
//! value: a value could be part of a token or a key.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::Value;

/// What a field must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    /// A JSON object.
    Object,
    /// A JSON string.
    String,
    /// A JSON integer of 0 or more (seconds).
    Seconds,
}

impl Want {
    fn holds(self, v: &Value) -> bool {
        match self {
            Want::Object => v.is_object(),
            Want::String => v.is_string(),
            Want::Seconds => v.is_u64(),
        }
    }

    fn text(self) -> &'static str {
        match self {
            Want::Object => "an object",
            Want::String => "a string",
            Want::Seconds => "an integer of seconds (0 or more)",
        }
    }
}

/// A successful answer's shape: its text for messages and its fields in order, parents
/// first (dotted paths).
pub(super) struct Shape {
    /// `{"data": {"plaintext_key"}}`.
    pub(crate) text: &'static str,
    /// Each field with what it must be.
    pub(crate) fields: &'static [(&'static str, Want)],
}

/// `/auth`.
pub(super) const AUTH: Shape = Shape {
    text: "{\"data\": {\"access_token\", \"token_type\", \"expires_in\"}}",
    fields: &[
        ("data", Want::Object),
        ("data.access_token", Want::String),
        ("data.token_type", Want::String),
        ("data.expires_in", Want::Seconds),
    ],
};

/// `/decrypt-key`.
pub(super) const DECRYPT: Shape = Shape {
    text: "{\"data\": {\"plaintext_key\"}}",
    fields: &[("data", Want::Object), ("data.plaintext_key", Want::String)],
};

/// `/rotate-key`.
pub(super) const ROTATE: Shape = Shape {
    text: "{\"data\": {\"encrypted_dek\", \"key_alias\", \"plaintext_dek\"}}",
    fields: &[
        ("data", Want::Object),
        ("data.encrypted_dek", Want::String),
        ("data.key_alias", Want::String),
        ("data.plaintext_dek", Want::String),
    ],
};

/// The type of a JSON value, for messages (no value).
fn found(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_u64() => "a number",
        Value::Number(n) if n.is_i64() => "a negative number",
        Value::Number(_) => "a number with a fraction",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Shape {
    /// The first problem of `body` against the shape (`data.expires_in is a string, not an
    /// integer of seconds (0 or more)`), or `None` when every field is right.
    pub(super) fn problem(&self, body: &Value) -> Option<String> {
        if !body.is_object() {
            return Some(format!("a body that is {}, not an object", found(body)));
        }
        for (path, want) in self.fields {
            let pointer = format!("/{}", path.replace('.', "/"));
            match body.pointer(&pointer) {
                None => return Some(format!("no {path}")),
                Some(v) if !want.holds(v) => {
                    return Some(format!("{path} {}, not {}", found(v), want.text()));
                }
                Some(_) => {}
            }
        }
        None
    }
}

/// Why a key text that is not standard base64 is not: URL-safe base64 (`-`, `_`) where the
/// interface uses the standard alphabet (`+`, `/`), base64 with whitespace inside, or not
/// base64 at all.
pub(super) fn why_not_base64(text: &str) -> &'static str {
    const CONFIG: GeneralPurposeConfig =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, CONFIG);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, CONFIG);
    let without_whitespace: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if text.contains(['-', '_']) && URL_SAFE.decode(text).is_ok() {
        "is URL-safe base64 (with - or _) where the interface uses standard base64 (+ and /)"
    } else if without_whitespace.len() < text.len() && STANDARD.decode(&without_whitespace).is_ok()
    {
        "is base64 with whitespace or line breaks inside"
    } else {
        "is not base64"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_wrong_field_is_named_with_its_problem_and_no_value() {
        let ok = json!({"data": {"access_token": "t", "token_type": "Bearer", "expires_in": 60}});
        assert_eq!(AUTH.problem(&ok), None);
        let cases = [
            (
                json!({"data": {"access_token": "t", "token_type": "Bearer", "expires_in": "3600"}}),
                "data.expires_in a string, not an integer of seconds (0 or more)",
            ),
            (
                json!({"data": {"access_token": "t", "token_type": "Bearer", "expires_in": -5}}),
                "data.expires_in a negative number, not an integer of seconds (0 or more)",
            ),
            (
                json!({"data": {"access_token": "t", "token_type": "Bearer", "expires_in": 1.5}}),
                "data.expires_in a number with a fraction, not an integer of seconds (0 or more)",
            ),
            (
                json!({"data": {"token_type": "Bearer", "expires_in": 60}}),
                "no data.access_token",
            ),
            (json!({"data": "x"}), "data a string, not an object"),
            (json!([1]), "a body that is an array, not an object"),
        ];
        for (body, want) in cases {
            assert_eq!(AUTH.problem(&body).as_deref(), Some(want), "{body}");
        }
        let secret_value = json!({"data": {"plaintext_key": 12345678901234_u64}});
        let p = DECRYPT.problem(&secret_value).unwrap();
        assert_eq!(p, "data.plaintext_key a number, not a string");
        assert!(!p.contains("1234"));
    }

    #[test]
    fn url_safe_keys_are_named_as_such() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        // A key whose base64 has + or / in the standard alphabet.
        let key = [0xfbu8; 32];
        assert!(STANDARD.encode(key).contains('+') || STANDARD.encode(key).contains('/'));
        assert!(why_not_base64(&URL_SAFE_NO_PAD.encode(key)).starts_with("is URL-safe base64"));
        let wrapped = format!(
            "{}\n{}",
            &STANDARD.encode(key)[..20],
            &STANDARD.encode(key)[20..]
        );
        assert_eq!(
            why_not_base64(&wrapped),
            "is base64 with whitespace or line breaks inside"
        );
        assert_eq!(why_not_base64("%%%"), "is not base64");
        assert_eq!(why_not_base64("not base64!"), "is not base64");
    }
}
