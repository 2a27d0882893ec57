//! Editing the generated document as JSON: the helpers every refining step shares.

use serde_json::{Map, Value, json};

/// Merges `fragment` into the schema at `pointer` below `#/components/schemas/{schema}`.
/// A `$ref` in the fragment replaces the type of the target (its description stays).
pub(super) fn set(doc: &mut Value, schema: &str, pointer: &str, fragment: Value) {
    let target = doc
        .pointer_mut(&format!("/components/schemas/{schema}{pointer}"))
        .unwrap_or_else(|| panic!("no {schema}{pointer} in the document"))
        .as_object_mut()
        .unwrap_or_else(|| panic!("{schema}{pointer} is not a schema object"));
    merge(target, fragment);
}

/// Merges `fragment` into `target`, object into object.
pub(super) fn merge(target: &mut Map<String, Value>, fragment: Value) {
    let Value::Object(fragment) = fragment else {
        panic!("a fragment is an object")
    };
    if fragment.contains_key("$ref") {
        for k in ["type", "format", "enum", "oneOf"] {
            target.remove(k);
        }
    }
    for (k, v) in fragment {
        match (target.get_mut(&k), v) {
            (Some(Value::Object(inner)), Value::Object(v)) => merge(inner, Value::Object(v)),
            (_, v) => {
                target.insert(k, v);
            }
        }
    }
}

/// Every operation of the document, with its path and method.
pub(super) fn operations(doc: &mut Value) -> Vec<(String, String, &mut Map<String, Value>)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object_mut().expect("paths").iter_mut() {
        for (method, op) in item.as_object_mut().expect("a path item").iter_mut() {
            if let Value::Object(op) = op {
                out.push((path.clone(), method.clone(), op));
            }
        }
    }
    out
}

/// A response of the platform's error shape, with this description.
pub(super) fn error_answer(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PlatformErrorBody"}}},
    })
}

/// Responses in the order of their status codes.
pub(super) fn sort_by_status(responses: &mut Map<String, Value>) {
    let mut all: Vec<(String, Value)> = std::mem::take(responses).into_iter().collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    responses.extend(all);
}
