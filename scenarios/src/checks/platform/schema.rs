//! Success bodies against the JSON Schemas of the contract: the components of the platform's
//! OpenAPI document (`contracts::openapi`), JSON Schema 2020-12, formats checked
//! (`date-time` and the like).
//!
//! The document carries this project's assumptions beside the contract (fields of its own,
//! shapes the reference does not fix): a violation on such a point is advice, not a failure
//! ([`Schemas::classified`]; the table of which part is which is [`crate::differ::rules`]).
//!
//! A `$ref` to a schema the document does not define is dropped (the schema it sat in then
//! accepts anything there) and named in [`Schemas::dangling`], so that a gap in the document
//! weakens one check instead of stopping every one.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::differ::rules::Resource;

const PREFIX: &str = "#/components/schemas/";

/// The contract's schemas, compiled on first use.
pub(crate) struct Schemas {
    root: Value,
    dangling: Vec<String>,
    compiled: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schemas")
            .field("dangling", &self.dangling)
            .finish_non_exhaustive()
    }
}

impl Schemas {
    /// The schemas of the platform document of `contracts`.
    pub(crate) fn contract() -> Schemas {
        let doc = serde_json::to_value(contracts::openapi::platform_document())
            .expect("the OpenAPI document serialises");
        Schemas::from_document(doc)
    }

    /// The schemas of an OpenAPI document given as JSON.
    pub(crate) fn from_document(doc: Value) -> Schemas {
        let defined: BTreeSet<String> = doc
            .pointer("/components/schemas")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let mut root = json!({ "components": { "schemas": {} } });
        root["components"]["schemas"] = doc
            .pointer("/components/schemas")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut dangling = BTreeSet::new();
        drop_dangling(&mut root, &defined, &mut dangling);
        Schemas {
            root,
            dangling: dangling.into_iter().collect(),
            compiled: Mutex::new(HashMap::new()),
        }
    }

    /// Names the document refers to but does not define.
    pub(crate) fn dangling(&self) -> &[String] {
        &self.dangling
    }

    /// Whether the document defines `name`.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.root["components"]["schemas"].get(name).is_some()
    }

    fn validator(&self, name: &str) -> Result<Arc<jsonschema::Validator>, String> {
        let mut cache = self.compiled.lock().expect("not poisoned");
        if let Some(v) = cache.get(name) {
            return Ok(v.clone());
        }
        if !self.has(name) {
            return Err(format!("the contract defines no schema '{name}'"));
        }
        let mut schema = self.root.clone();
        schema["$ref"] = json!(format!("{PREFIX}{name}"));
        let v = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&schema)
            .map_err(|e| format!("the contract's schema '{name}' does not compile: {e}"))?;
        let v = Arc::new(v);
        cache.insert(name.to_string(), v.clone());
        Ok(v)
    }

    /// Every way `value` breaks the schema `name` on a point the contract fixes (the spec or
    /// a recorded fact) (`/path: message`), at most 10; empty when it conforms there.
    pub(crate) fn violations(&self, name: &str, value: &Value) -> Vec<String> {
        self.classified(name, value, Resource::Other).0
    }

    /// The violations of the schema `name` by `value`: those on points the contract fixes,
    /// and those on points only this project assumed (a field of its own missing, say), which
    /// are advice ([`crate::differ::rules`] says which is which, for an answer holding
    /// `resource`).
    pub(crate) fn classified(
        &self,
        name: &str,
        value: &Value,
        resource: Resource,
    ) -> (Vec<String>, Vec<String>) {
        let mut contract = Vec::new();
        let mut assumed = Vec::new();
        match self.validator(name) {
            Ok(v) => {
                for e in v.iter_errors(value).take(20) {
                    let at = e.instance_path().to_string();
                    let mut path: Vec<String> = at
                        .split('/')
                        .filter(|p| !p.is_empty())
                        .map(str::to_string)
                        .collect();
                    if let jsonschema::error::ValidationErrorKind::Required { property } = e.kind()
                        && let Some(p) = property.as_str()
                    {
                        path.push(p.to_string());
                    }
                    let at = if at.is_empty() { "/".to_string() } else { at };
                    let text = format!("{at}: {}", e.masked());
                    // Presence and type: a field whose value is free (who made a change, a
                    // message's wording) is still one the contract names.
                    if crate::differ::rules::presence(resource, &path)
                        .source
                        .is_contract()
                    {
                        contract.push(text);
                    } else {
                        assumed.push(text);
                    }
                }
            }
            Err(e) => contract.push(e),
        }
        contract.truncate(10);
        assumed.truncate(10);
        (contract, assumed)
    }

    /// What the schema `name` says of `value` and of `value` less one field: `["conforms",
    /// "without created_by: violates"]`. The first field whose removal the schema refuses is
    /// named; when no removal is refused, the second entry is missing, and a check that
    /// relies on the schema could not have failed on this body (a schema that accepts
    /// anything, or a body with only optional fields).
    pub(crate) fn discriminates(&self, name: &str, value: &Value) -> Vec<String> {
        let verdict = |v: &Value| {
            if self.violations(name, v).is_empty() {
                "conforms"
            } else {
                "violates"
            }
        };
        let mut out = vec![verdict(value).to_string()];
        if let Some(m) = value.as_object() {
            for k in m.keys() {
                let mut less = m.clone();
                less.remove(k);
                let v = verdict(&Value::Object(less));
                if v != out[0] {
                    out.push(format!("without {k}: {v}"));
                    break;
                }
            }
        }
        out
    }
}

fn drop_dangling(v: &mut Value, defined: &BTreeSet<String>, dangling: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref")
                && let Some(name) = r.strip_prefix(PREFIX)
                && !defined.contains(name)
            {
                dangling.insert(name.to_string());
                m.remove("$ref");
            }
            for child in m.values_mut() {
                drop_dangling(child, defined, dangling);
            }
        }
        Value::Array(items) => {
            for child in items {
                drop_dangling(child, defined, dangling);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_judged_with_required_fields_enums_and_formats() {
        let s = Schemas::contract();
        let ok = json!({
            "campaign_id": "camp-1", "name": "n", "status": "scheduled", "app_id": "a",
            "app_type": "agent", "app_version": 1, "description": null, "created_by": "k",
            "updated_by": "k", "created_at": "2026-03-02T08:00:00.000Z",
            "updated_at": "2026-03-02T08:00:00.000Z"
        });
        assert_eq!(s.violations("CampaignSummary", &ok), Vec::<String>::new());
        let mut missing = ok.clone();
        missing.as_object_mut().unwrap().remove("created_by");
        let v = s.violations("CampaignSummary", &missing);
        assert!(v.len() == 1 && v[0].contains("created_by"), "{v:?}");
        let mut bad_enum = ok.clone();
        bad_enum["status"] = json!("running");
        assert!(!s.violations("CampaignSummary", &bad_enum).is_empty());
        let mut bad_time = ok.clone();
        bad_time["created_at"] = json!("yesterday");
        let v = s.violations("CampaignSummary", &bad_time);
        assert!(v.iter().any(|e| e.starts_with("/created_at")), "{v:?}");
        assert!(s.violations("NoSuchSchema", &json!({}))[0].contains("NoSuchSchema"));
        assert_eq!(
            s.discriminates("CampaignSummary", &ok),
            ["conforms", "without campaign_id: violates"]
        );
        let anything = Schemas::from_document(json!({"components": {"schemas": {"Any": {}}}}));
        assert_eq!(anything.discriminates("Any", &ok), ["conforms"]);
    }

    #[test]
    fn a_reference_to_an_undefined_schema_is_dropped_and_named() {
        let doc = json!({"components": {"schemas": {
            "A": {"type": "object", "required": ["campaign_id", "total"], "properties": {
                "campaign_id": {"$ref": "#/components/schemas/Missing", "description": "gone"},
                "total": {"$ref": "#/components/schemas/B"}}},
            "B": {"type": "integer"}
        }}});
        let s = Schemas::from_document(doc);
        assert_eq!(s.dangling(), ["Missing"]);
        assert!(
            s.violations("A", &json!({"campaign_id": "anything", "total": 1}))
                .is_empty()
        );
        assert_eq!(
            s.violations("A", &json!({"campaign_id": 1, "total": "no"}))
                .len(),
            1
        );
    }
}
