//! The simulation API's journal routes, refined: the `operation` filter is one of the
//! interface's operation ids (those under `/api/`) or `unknown`, the `verdict` filter one of the verdicts, and a
//! recorded body any JSON value; and the 405 that a GET of a cohort "by id" gets for the
//! ids `stream` and `upload`, which are routes of their own.

use serde_json::{Value, json};

use super::INTERFACE_PREFIX;
use super::edit::{error_answer, operations, sort_by_status};
use crate::validate::JOURNAL_STATUS_MAX;
use crate::wire::journal::Verdict;

pub(super) fn apply(doc: &mut Value) {
    // The journal's operations are the interface's: those under /api/ (`operations::Catalogue`).
    let mut ids: Vec<String> = operations(doc)
        .iter()
        .filter(|(path, _, _)| path.starts_with(INTERFACE_PREFIX))
        .filter_map(|(_, _, op)| op.get("operationId")?.as_str().map(str::to_string))
        .collect();
    ids.sort();
    ids.push("unknown".into());
    let verdicts: Vec<&str> = [Verdict::Conforms, Verdict::Violates, Verdict::NotJudged]
        .into_iter()
        .map(Verdict::as_str)
        .collect();
    for (_, _, op) in operations(doc) {
        match op.get("operationId").and_then(Value::as_str) {
            Some("sim_list_journal") => {
                for p in op["parameters"].as_array_mut().into_iter().flatten() {
                    match p["name"].as_str() {
                        Some("operation") => p["schema"]["enum"] = json!(ids),
                        Some("verdict") => p["schema"]["enum"] = json!(verdicts),
                        Some("status") => p["schema"]["maximum"] = json!(JOURNAL_STATUS_MAX),
                        _ => {}
                    }
                }
            }
            Some("get_campaign_cohort" | "get_deployment_cohort") => {
                let responses = op["responses"].as_object_mut().expect("responses");
                responses.insert(
                    "405".into(),
                    error_answer(
                        "`method_not_allowed`: `stream` and `upload` are routes of their own (POST), and a literal path segment wins over `{cohort_id}`",
                    ),
                );
                sort_by_status(responses);
            }
            _ => {}
        }
    }
    if let Some(Value::Object(body)) =
        doc.pointer_mut("/components/schemas/JournalBody/properties/json")
    {
        // A recorded JSON body is any JSON value (an array, a number, ...), or null.
        body.remove("type");
    }
}
