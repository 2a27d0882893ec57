//! The names a request may give at a place of an operation (the properties of its body's
//! objects, the parts of its form, its query parameters), read from the platform's OpenAPI
//! document, and the one a misspelt name most likely meant: what turns "Extra inputs are
//! not permitted" into a cause a developer can act on.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::Value;

use crate::error::LocItem;
use crate::operations::{Catalogue, Operation};
use crate::spelling;

/// The names the operation `operation_id` knows at `loc` (`["query"]`, `["body"]`,
/// `["body", "app_config"]`, `["body", "app_config", "connection_configs", 0]`): its query
/// parameters, or the properties of the body's schema there. Empty for a place the
/// document does not describe as an object.
pub fn known_names(operation_id: &str, loc: &[LocItem]) -> BTreeSet<String> {
    let Some(op) = operation(operation_id) else {
        return BTreeSet::new();
    };
    match loc.split_first() {
        Some((LocItem::Key(root), [])) if root == "query" => {
            op.query_params.iter().cloned().collect()
        }
        Some((LocItem::Key(root), rest)) if root == "body" => body_schemas(operation_id, rest)
            .into_iter()
            .flat_map(|s| properties(document(), s))
            .collect(),
        _ => BTreeSet::new(),
    }
}

/// The operation `operation_id` of the platform's document.
fn operation(operation_id: &str) -> Option<&'static Operation> {
    let catalogue = Catalogue::platform();
    catalogue
        .index_of(operation_id)
        .and_then(|i| catalogue.operations().get(i))
}

/// The schemas of the body of `operation_id` at `rest` (a place below `body`).
fn body_schemas(operation_id: &str, rest: &[LocItem]) -> Vec<&'static Value> {
    let Some(op) = operation(operation_id) else {
        return Vec::new();
    };
    let doc = document();
    let method = op.method.to_ascii_lowercase();
    let content = &doc["paths"][&op.path][&method]["requestBody"]["content"];
    let Some(media) = content.as_object().and_then(|c| c.values().next()) else {
        return Vec::new();
    };
    let mut at = vec![&media["schema"]];
    for item in rest {
        at = at.into_iter().flat_map(|s| step(doc, s, item)).collect();
    }
    at
}

/// The names the body of `operation_id` must give at its top level (its required
/// properties, or the form's required parts).
pub fn required_names(operation_id: &str) -> BTreeSet<String> {
    body_schemas(operation_id, &[])
        .into_iter()
        .flat_map(|s| resolved(document(), s))
        .filter_map(|s| s["required"].as_array())
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The known name that `name` most likely meant, of `known` less those the request gave
/// (`given`): a typo (a small edit distance for its length, case and `-`/`_` aside), or a
/// name made of the other's words (`file` for `cohort_file`, `sort` for `sort_by`,
/// `agent_config` for `app_config`: the same last word). The closest wins; none when no
/// known name is near.
pub fn closest<'a>(
    name: &str,
    known: &'a BTreeSet<String>,
    given: &BTreeSet<String>,
) -> Option<&'a str> {
    if let Some(k) = SYNONYMS
        .iter()
        .find(|(_, others)| others.contains(&normalise(name).as_str()))
        .map(|(k, _)| *k)
        .filter(|k| known.contains(*k) && !given.contains(*k))
    {
        return known.get(k).map(String::as_str);
    }
    let norm = normalise(name);
    let ours: Vec<&str> = words(name);
    known
        .iter()
        .filter(|k| !given.contains(*k) && k.as_str() != name)
        .filter_map(|k| {
            let d = spelling::distance(&norm, &normalise(k));
            let typo = d <= (norm.len().min(k.len()) / 3).max(1);
            let theirs = words(k);
            let contained =
                ours.iter().all(|w| theirs.contains(w)) || theirs.iter().all(|w| ours.contains(w));
            let same_last = ours.len() > 1
                && theirs.len() > 1
                && ours.last() == theirs.last()
                && ours.last().is_some_and(|w| w.len() >= 4);
            (typo || contained || same_last).then_some((d, k.as_str()))
        })
        .min()
        .map(|(_, k)| k)
}

/// Names other APIs, and this one's other resources, give the same thing (`page_size` for
/// `limit`, a campaign's `allowed_schedule` for a deployment's `inbound_config`), each as
/// [`normalise`] leaves it: no spelling is near them.
const SYNONYMS: [(&str, &[&str]); 6] = [
    (
        "limit",
        &["pagesize", "perpage", "size", "count", "maxresults", "top"],
    ),
    ("offset", &["skip", "start", "from", "page"]),
    ("sort_by", &["orderby", "sortfield", "sortkey"]),
    (
        "sort_order",
        &["order", "direction", "dir", "sortdir", "sortdirection"],
    ),
    ("search", &["q", "query", "filter", "name"]),
    (
        "inbound_config",
        &[
            "allowedschedule",
            "schedule",
            "callingwindow",
            "inboundschedule",
        ],
    ),
];

/// The platform's document, parsed once.
fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(super::platform_document)
}

/// The schemas `schema` stands for: itself, what its `$ref` names, and the branches of its
/// `allOf`, `anyOf` and `oneOf`, each resolved in turn.
fn resolved<'a>(doc: &'a Value, schema: &'a Value) -> Vec<&'a Value> {
    let mut out = Vec::new();
    let mut todo = vec![schema];
    while let Some(s) = todo.pop() {
        if out.len() > 64 {
            break;
        }
        if let Some(r) = s["$ref"].as_str() {
            if let Some(target) = r.strip_prefix('#').and_then(|p| doc.pointer(p)) {
                todo.push(target);
            }
            continue;
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(branches) = s[key].as_array() {
                todo.extend(branches);
            }
        }
        out.push(s);
    }
    out
}

/// The schemas one step down from `schema`: a property's by its key, a list's items by an
/// index (a map's values, when the key is not a property).
fn step<'a>(doc: &'a Value, schema: &'a Value, item: &LocItem) -> Vec<&'a Value> {
    resolved(doc, schema)
        .into_iter()
        .filter_map(|s| match item {
            LocItem::Key(k) => s["properties"]
                .get(k)
                .or_else(|| s.get("additionalProperties").filter(|a| a.is_object())),
            LocItem::Index(_) => s.get("items"),
        })
        .collect()
}

/// The property names of `schema`, its references and branches followed.
fn properties<'a>(doc: &'a Value, schema: &'a Value) -> Vec<String> {
    resolved(doc, schema)
        .into_iter()
        .filter_map(|s| s["properties"].as_object())
        .flat_map(|p| p.keys().cloned())
        .collect()
}

fn normalise(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

fn words(s: &str) -> Vec<&str> {
    s.split(['_', '-']).filter(|w| !w.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(items: &[&str]) -> Vec<LocItem> {
        items
            .iter()
            .map(|s| match s.parse() {
                Ok(i) => LocItem::Index(i),
                Err(_) => LocItem::Key((*s).into()),
            })
            .collect()
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn the_names_of_each_place_are_the_documents() {
        let top = known_names("create_campaign", &loc(&["body"]));
        assert!(
            top.contains("app_config") && top.contains("start_timestamp"),
            "{top:?}"
        );
        let nested = known_names(
            "create_campaign",
            &loc(&["body", "app_config", "connection_configs", "0"]),
        );
        assert!(
            nested.contains("phone_numbers") && nested.contains("weight"),
            "{nested:?}"
        );
        let parts = known_names("upload_campaign_cohort", &loc(&["body"]));
        assert!(parts.contains("cohort_file"), "{parts:?}");
        assert_eq!(
            required_names("upload_campaign_cohort"),
            set(&["name", "cohort_file", "cohort_transformation_file"])
        );
        let query = known_names("list_deployments", &loc(&["query"]));
        assert!(query.contains("sort_by"), "{query:?}");
        assert!(known_names("no_such_operation", &loc(&["body"])).is_empty());
        assert!(known_names("create_campaign", &loc(&["body", "name"])).is_empty());
    }

    #[test]
    fn a_misspelt_name_finds_the_one_it_meant() {
        let known = set(&["description", "app_config", "name", "start_timestamp"]);
        let none = BTreeSet::new();
        assert_eq!(closest("desciption", &known, &none), Some("description"));
        assert_eq!(closest("Description", &known, &none), Some("description"));
        assert_eq!(
            closest("start-timestamp", &known, &none),
            Some("start_timestamp")
        );
        assert_eq!(closest("agent_config", &known, &none), Some("app_config"));
        assert_eq!(closest("colour", &known, &none), None);
        let parts = set(&["name", "cohort_file", "cohort_transformation_file"]);
        assert_eq!(closest("file", &parts, &none), Some("cohort_file"));
        let query = set(&["limit", "offset", "sort_by", "sort_order"]);
        assert_eq!(closest("sort", &query, &none), Some("sort_by"));
        assert_eq!(
            closest("sort", &query, &set(&["sort_by"])),
            Some("sort_order")
        );
        assert_eq!(closest("page", &query, &none), Some("offset"));
        assert_eq!(closest("page_size", &query, &none), Some("limit"));
        assert_eq!(closest("pageSize", &query, &none), Some("limit"));
        assert_eq!(closest("page_size", &query, &set(&["limit"])), None);
        let deployment = set(&["name", "inbound_config", "connection_configs"]);
        assert_eq!(
            closest("allowed_schedule", &deployment, &none),
            Some("inbound_config")
        );
    }
}
