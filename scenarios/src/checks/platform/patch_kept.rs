//! What a PATCH leaves alone, judged by value: every field of the resource the PATCH does
//! not name keeps its value (a partial update: the spec's PATCH of a deployment and of a
//! campaign), and inside an object it names, the members it does not name keep theirs (the
//! record's merge rule for `app_config`, `retry_config` and the like: assumed). The
//! resource as read before the PATCH is compared with the answer to it and with a read
//! after it; `updated_at` and `updated_by` say who changed it last and are left out.
//! Timestamps compare as instants, so another offset or precision is the same value.

use chrono::DateTime;
use serde_json::{Value, json};

use super::exchange::Exchange;

/// Fields that record the update itself.
const BOOKKEEPING: [&str; 2] = ["updated_at", "updated_by"];

/// The values a PATCH changed without naming them.
#[derive(Debug, Default)]
pub(super) struct Unnamed {
    /// Top-level fields the PATCH does not name (a partial update keeps them: an error).
    pub(super) fields: Vec<Value>,
    /// Members of an object the PATCH names, left out of it (kept by the merge rule:
    /// assumed, a warning).
    pub(super) members: Vec<Value>,
}

impl Unnamed {
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.members.is_empty()
    }
}

/// What `after` (the answer to the PATCH `patch`, or a read after it) changed of `before`
/// without the PATCH naming it.
pub(super) fn unnamed_changes(before: &Value, after: &Value, patch: &Value) -> Unnamed {
    let mut out = Unnamed::default();
    let (Some(b), Some(a)) = (before.as_object(), after.as_object()) else {
        return out;
    };
    // Only the fields the read before showed: one it left out is the read's matter.
    for key in b.keys() {
        if BOOKKEEPING.contains(&key.as_str()) {
            continue;
        }
        let (old, new) = (
            b.get(key).unwrap_or(&Value::Null),
            a.get(key).unwrap_or(&Value::Null),
        );
        match patch.get(key) {
            None => {
                if !same(old, new) {
                    out.fields.push(change(key, old, new));
                }
            }
            Some(named) => members(key, old, new, named, &mut out.members),
        }
    }
    out
}

/// The members of `old` that the object `named` leaves out and `new` changed, recursively.
fn members(path: &str, old: &Value, new: &Value, named: &Value, out: &mut Vec<Value>) {
    let (Some(o), Some(n), Some(p)) = (old.as_object(), new.as_object(), named.as_object()) else {
        return;
    };
    for (key, was) in o {
        let now = n.get(key).unwrap_or(&Value::Null);
        let at = format!("{path}.{key}");
        match p.get(key) {
            None if !same(was, now) => out.push(change(&at, was, now)),
            None => {}
            Some(inner) => members(&at, was, now, inner, out),
        }
    }
}

fn change(path: &str, before: &Value, after: &Value) -> Value {
    json!({"field": path, "before": before, "after": after})
}

/// Equal values, timestamps as instants.
fn same(a: &Value, b: &Value) -> bool {
    if a == b {
        return true;
    }
    match (a, b) {
        (Value::String(x), Value::String(y)) => {
            matches!((DateTime::parse_from_rfc3339(x), DateTime::parse_from_rfc3339(y)), (Ok(p), Ok(q)) if p == q)
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => false,
    }
}

/// What a refused request changed of a resource, read `before` and `after` it: every field
/// that differs (timestamps as instants; who updated it and when left out), none when
/// either read failed (another check judges those).
pub(super) fn refused_changed(before: &Exchange, after: &Exchange) -> Vec<Value> {
    if before.status != 200 || after.status != 200 {
        return Vec::new();
    }
    unnamed_changes(before.body(), after.body(), &json!({})).fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_the_patch_does_not_name_must_keep_its_value() {
        let before = json!({"name": "a", "description": "d", "app_version": 1,
            "updated_at": "2026-03-02T08:00:00.000Z", "created_at": "2026-03-02T08:00:00.000Z"});
        let patch = json!({"app_version": 2});
        // Bookkeeping moves, the named field changes, a timestamp in another form is the same.
        let good = json!({"name": "a", "description": "d", "app_version": 2,
            "updated_at": "2026-03-02T09:00:00Z", "created_at": "2026-03-02T09:00:00+01:00"});
        assert!(unnamed_changes(&before, &good, &patch).is_empty());
        let cleared = json!({"name": "a", "description": null, "app_version": 2,
            "updated_at": "2026-03-02T09:00:00Z", "created_at": "2026-03-02T08:00:00.000Z"});
        let u = unnamed_changes(&before, &cleared, &patch);
        assert_eq!(
            u.fields,
            [json!({"field": "description", "before": "d", "after": null})]
        );
        // A field dropped from the answer is a change too.
        let dropped = json!({"name": "a", "app_version": 2, "created_at": "2026-03-02T08:00:00Z"});
        assert_eq!(unnamed_changes(&before, &dropped, &patch).fields.len(), 1);
    }

    #[test]
    fn members_an_object_of_the_patch_leaves_out_are_merged() {
        let before = json!({"app_config": {"retry_config": {"max_retries": 1, "retry_on": ["no_answer"], "threshold_seconds": 30}, "attempts_per_second": 2}});
        let patch = json!({"app_config": {"retry_config": {"max_retries": 2}}});
        let merged = json!({"app_config": {"retry_config": {"max_retries": 2, "retry_on": ["no_answer"], "threshold_seconds": 30}, "attempts_per_second": 2}});
        assert!(unnamed_changes(&before, &merged, &patch).is_empty());
        let reset = json!({"app_config": {"retry_config": {"max_retries": 2, "retry_on": [], "threshold_seconds": 10}, "attempts_per_second": 2}});
        let u = unnamed_changes(&before, &reset, &patch);
        assert!(u.fields.is_empty());
        let paths: Vec<&str> = u
            .members
            .iter()
            .filter_map(|c| c["field"].as_str())
            .collect();
        assert_eq!(
            paths,
            [
                "app_config.retry_config.retry_on",
                "app_config.retry_config.threshold_seconds"
            ]
        );
    }
}
