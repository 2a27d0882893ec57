//! The key service's document, refined: the body and header constraints the simulated key
//! service enforces, the answers every endpoint shares (404 for another partner, 413), and
//! the headers of every answer.

use serde_json::{Value, json};

use super::edit::{operations, set};
use crate::envelope::{MIN_BODY_LEN, PREFIX};
use crate::wire::byok::GRANT_TYPE_CLIENT_CREDENTIALS;

/// `byok:v1:` and the standard, padded base64 of at least [`MIN_BODY_LEN`] bytes (the last
/// symbol without stray bits, as the key service's decoder demands). A base64 text of `q`
/// full quads holds `3q` bytes, plus 1 with a last quad ending `==` or 2 with one ending `=`,
/// so each ending has its own least number of quads.
pub(crate) fn encrypted_key_pattern() -> String {
    let quads = |extra: usize| (MIN_BODY_LEN.saturating_sub(extra)).div_ceil(3);
    let (none, one, two) = (quads(0), quads(1), quads(2));
    format!(
        r"^{PREFIX}(([A-Za-z0-9+/]{{4}}){{{none},}}|([A-Za-z0-9+/]{{4}}){{{one},}}[A-Za-z0-9+/][AQgw]==|([A-Za-z0-9+/]{{4}}){{{two},}}[A-Za-z0-9+/]{{2}}[AEIMQUYcgkosw048]=)$"
    )
}

/// The length of the shortest encrypted key the pattern's base64 can hold.
pub(crate) fn encrypted_key_min_length() -> usize {
    PREFIX.len() + MIN_BODY_LEN.div_ceil(3) * 4
}

fn header(description: &str, schema: Value) -> Value {
    json!({"description": description, "schema": schema})
}

pub(super) fn apply(doc: &mut Value) {
    set(
        doc,
        "AuthForm",
        "/properties/grant_type",
        json!({"enum": [GRANT_TYPE_CLIENT_CREDENTIALS]}),
    );
    set(
        doc,
        "DecryptKeyData",
        "/properties/key_alias",
        json!({"minLength": 1}),
    );
    set(
        doc,
        "DecryptKeyData",
        "/properties/encrypted_key",
        json!({"pattern": encrypted_key_pattern(), "minLength": encrypted_key_min_length()}),
    );
    set(
        doc,
        "RotateKeyData",
        "/properties/key_alias",
        json!({"minLength": 1}),
    );
    doc["components"]["headers"] = json!({
        "X-Request-Id": header(
            "The caller's x-request-id when it is a UUID, otherwise one the service made",
            json!({"type": "string", "format": "uuid"}),
        ),
        "X-Request-Duration": header(
            "Milliseconds the service spent on the request, three decimals",
            json!({"type": "string", "pattern": "^[0-9]+\\.[0-9]{3}$"}),
        ),
        "X-Trace-Id": header(
            "The caller's x-trace-id, when it sent a valid one",
            json!({"type": "string", "format": "uuid"}),
        ),
        "Retry-After": header(
            "Seconds to wait before the next try",
            json!({"type": "integer", "minimum": 0}),
        ),
    });
    let answer_headers = json!({
        "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"},
        "X-Request-Duration": {"$ref": "#/components/headers/X-Request-Duration"},
        "X-Trace-Id": {"$ref": "#/components/headers/X-Trace-Id"},
    });
    for (_, _, op) in operations(doc) {
        // The rotate body is optional: absent, or the object (a JSON `null` is neither).
        if op["operationId"] == "byok_rotate_key" {
            op["requestBody"]["required"] = json!(false);
            op["requestBody"]["content"]["application/json"]["schema"] =
                json!({"$ref": "#/components/schemas/RotateKeyRequest"});
        }
        for p in op["parameters"].as_array_mut().into_iter().flatten() {
            let extra = match p["name"].as_str() {
                Some("partner") => json!({"minLength": 1}),
                // A header is absent or a string, never null: an optional one is
                // `required: false`, not a nullable type.
                Some("x-request-id") | Some("x-trace-id") => {
                    json!({"type": "string", "format": "uuid"})
                }
                _ => continue,
            };
            for (k, v) in extra.as_object().expect("an object") {
                p["schema"][k] = v.clone();
            }
        }
        let responses = op["responses"].as_object_mut().expect("responses");
        let error = |description: &str| {
            json!({
                "description": description,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ByokErrorBody"}}},
            })
        };
        responses
            .entry("404")
            .or_insert_with(|| error("NOT_FOUND: no endpoint at this path (another partner)"));
        responses.entry("413").or_insert_with(|| {
            error("PAYLOAD_TOO_LARGE: the body is larger than the service accepts")
        });
        let mut sorted: Vec<(String, Value)> = std::mem::take(responses).into_iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        for (status, mut r) in sorted {
            r["headers"] = answer_headers.clone();
            if status == "429" {
                r["headers"]["Retry-After"] = json!({"$ref": "#/components/headers/Retry-After"});
            }
            responses.insert(status, r);
        }
    }
}
