//! When two answered values are the same: the comparisons of the differ, which judge values
//! as the contract means them, not as text. An instant is the same instant in any offset and
//! with any fraction of a second (within a tolerance); a number is the same number of the
//! same kind (an integer is not `1.0`); an id of the target is the same as the reference's id
//! it was mapped to; a URL is the same path and query whatever its host (a page link of the
//! target points at the target).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

/// Ids of the target mapped to the references' ids of the same resource, learnt as each
/// resource is created (both sides answered the same request).
#[derive(Debug, Default, Clone)]
pub struct IdMap {
    map: HashMap<String, [Option<String>; 2]>,
}

impl IdMap {
    /// Maps the target's `target` to reference `which`'s `reference` (a later, different
    /// mapping of the same id is ignored: the first answer that named it created it).
    pub fn learn(&mut self, target: &str, which: usize, reference: &str) {
        let slot = &mut self.map.entry(target.to_string()).or_default()[which];
        if slot.is_none() {
            *slot = Some(reference.to_string());
        }
    }

    /// Reference `which`'s id for the target's `target`, when one was learnt.
    pub fn to_reference(&self, target: &str, which: usize) -> Option<&str> {
        self.map.get(target)?[which].as_deref()
    }

    /// The target's id that reference `which`'s `reference` was mapped from.
    pub fn to_target(&self, reference: &str, which: usize) -> Option<&str> {
        self.map
            .iter()
            .find(|(_, r)| r[which].as_deref() == Some(reference))
            .map(|(t, _)| t.as_str())
    }

    /// How many ids are mapped.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no id is mapped.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// An RFC 3339 instant.
pub(crate) fn instant(v: &Value) -> Option<DateTime<Utc>> {
    let s = v.as_str()?;
    // Only text that looks like a date and a time: a plain id or word never parses anyway,
    // but "2026" alone must not be taken for one.
    if s.len() < 20 || !s.as_bytes()[4].eq(&b'-') {
        return None;
    }
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Milliseconds between two instants.
pub(crate) fn millis_between(a: DateTime<Utc>, b: DateTime<Utc>) -> i64 {
    (a - b).num_milliseconds().abs()
}

/// An http(s) URL's path from its `/api/` or `/sim/` part on (or whole), each segment mapped
/// from the target's ids, and its query pairs sorted: what a page link says whatever host
/// it names.
pub(crate) fn url_meaning(v: &Value, ids: &IdMap, which: Option<usize>) -> Option<String> {
    let s = v.as_str()?;
    if !(s.starts_with("http://") || s.starts_with("https://")) {
        return None;
    }
    let url = url::Url::parse(s).ok()?;
    let path = url.path();
    let from = path
        .find("/api/")
        .or_else(|| path.find("/sim/"))
        .unwrap_or(0);
    let segments: Vec<String> = path[from..]
        .split('/')
        .map(|seg| match which {
            Some(w) => ids.to_reference(seg, w).unwrap_or(seg).to_string(),
            None => seg.to_string(),
        })
        .collect();
    let mut pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let v = match which {
                Some(w) => ids
                    .to_reference(&v, w)
                    .map(str::to_string)
                    .unwrap_or(v.into_owned()),
                None => v.into_owned(),
            };
            (k.into_owned(), v)
        })
        .collect();
    pairs.sort();
    Some(format!("{}?{pairs:?}", segments.join("/")))
}

/// Whether the target's value `t` is the reference `which`'s value `r`: the same JSON value,
/// or the same number of the same kind, the same instant (within `tolerance_ms`), the id
/// mapped to it, the same URL meaning.
pub(crate) fn same(t: &Value, r: &Value, ids: &IdMap, which: usize, tolerance_ms: i64) -> bool {
    match (t, r) {
        (Value::Number(a), Value::Number(b)) => same_number(a, b),
        (Value::String(a), Value::String(b)) => {
            a == b
                || ids.to_reference(a, which) == Some(b.as_str())
                || matches!((instant(t), instant(r)), (Some(x), Some(y)) if millis_between(x, y) <= tolerance_ms)
                || matches!(
                    (url_meaning(t, ids, Some(which)), url_meaning(r, ids, None)),
                    (Some(x), Some(y)) if x == y
                )
        }
        _ => t == r,
    }
}

/// The same number of the same kind: an integer only equals an integer.
fn same_number(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    let int = |n: &serde_json::Number| n.is_i64() || n.is_u64();
    match (int(a), int(b)) {
        (true, true) => a == b,
        (false, false) => {
            let (x, y) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        }
        _ => false,
    }
}

/// The kind of a JSON value, for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number with a fraction",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_compared_as_the_contract_means_them() {
        let mut ids = IdMap::default();
        ids.learn("cmp-T1", 0, "cmp-R1");
        let same0 = |t: Value, r: Value| same(&t, &r, &ids, 0, 1);
        assert!(same0(json!(1), json!(1)));
        assert!(!same0(json!(1.0), json!(1)), "1.0 is no integer");
        assert!(same0(json!(2.5), json!(2.5)));
        assert!(same0(json!("cmp-T1"), json!("cmp-R1")));
        assert!(!same0(json!("cmp-T2"), json!("cmp-R1")));
        assert!(same0(
            json!("2026-03-02T09:00:00.000+01:00"),
            json!("2026-03-02T08:00:00Z")
        ));
        assert!(same0(
            json!("2026-03-02T08:00:00.000456Z"),
            json!("2026-03-02T08:00:00.000Z")
        ));
        assert!(
            !same0(json!("2026-03-02T09:00:00Z"), json!("2026-03-02T08:00:00Z")),
            "an hour off"
        );
        assert!(same0(
            json!("http://target:1/api/x/campaigns/cmp-T1?offset=5&limit=2"),
            json!("http://127.0.0.1:9/api/x/campaigns/cmp-R1?limit=2&offset=5")
        ));
        assert!(!same0(
            json!("http://target:1/api/x/campaigns?limit=2"),
            json!("http://127.0.0.1:9/api/x/campaigns?limit=2&search=a")
        ));
    }
}
