//! The figures and notes of the verdict: what `harness verify` prints under its summary
//! line, by name in the JSON report (`figures`) and as the JUnit suite's properties, and
//! the same lines as printed (`notes`, the JUnit suite's `<system-out>`).
//!
//! They are the request counts and coverage, the journal's ring, the requests refused for
//! what the state or the size was (404, 409, 413: not violations, listed one by one), the
//! uploads whose files could not be processed, and the requests with warnings.

use contracts::wire::{JournalSummary, RefusedRequests};
use serde_json::{Map, Value, json};

use super::{failed_upload, refused_line};

/// The refusals listed, in the order printed: the summary's list, its status, its name in
/// `figures`, and what the note says of it.
fn refusals(summary: &JournalSummary) -> [(&RefusedRequests, u16, &'static str, &'static str); 3] {
    [
        (
            &summary.not_found,
            404,
            "not_found",
            "for an id that does not exist (not violations; a client that deletes twice or polls a wrong id makes them)",
        ),
        (
            &summary.conflicts,
            409,
            "conflicts",
            "for a state that said no (not violations; a client that resumes a cancelled campaign or uploads to an ended one makes them; --fail-on-status 409 fails them)",
        ),
        (
            &summary.too_large,
            413,
            "too_large",
            "for a body above the platform's limit (not violations; --fail-on-status 413 fails them)",
        ),
    ]
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "request" } else { "requests" }
}

/// The figures of `summary` the text prints (requests, coverage, the journal's ring, the
/// refusals, the failed uploads, the warnings), and the lines that tell them.
pub(super) fn figures(summary: &JournalSummary) -> (Map<String, Value>, Vec<String>) {
    let c = &summary.coverage;
    let mut figures = Map::new();
    figures.insert(
        "requests".into(),
        json!({
            "total": summary.requests,
            "conforming": summary.conforming,
            "violating": summary.violating,
            "not_judged": summary.not_judged,
            "faults_injected": summary.faults_injected,
        }),
    );
    figures.insert(
        "coverage".into(),
        json!({"operations": c.operations, "called": c.called, "percent": c.percent}),
    );
    figures.insert(
        "journal".into(),
        json!({
            "since": contracts::clock::format_instant(summary.since),
            "entries_kept": summary.entries_kept,
            "entries_dropped": summary.entries_dropped,
            "capacity": summary.capacity,
        }),
    );
    let mut notes = vec![format!(
        "{} {}: {} kept the contract, {} broke it, {} met a fault first; {} of {} operations called ({}%)",
        summary.requests,
        plural(summary.requests),
        summary.conforming,
        summary.violating,
        summary.not_judged,
        c.called,
        c.operations,
        c.percent
    )];
    if summary.entries_dropped > 0 {
        notes.push(format!(
            "the journal holds the latest {} entries ({} older ones left memory; the counts include them)",
            summary.entries_kept, summary.entries_dropped
        ));
    }
    for (list, status, name, why) in refusals(summary) {
        let lines: Vec<String> = list
            .listed
            .iter()
            .map(|r| refused_line(r, status))
            .collect();
        if list.requests > 0 {
            notes.push(format!(
                "{} {} answered {status} {why}:",
                list.requests,
                plural(list.requests)
            ));
            notes.extend(lines.iter().map(|l| format!("  {l}")));
            let unlisted = list.requests.saturating_sub(list.listed.len() as u64);
            if unlisted > 0 {
                notes.push(format!("  ... and {unlisted} more"));
            }
        }
        figures.insert(
            name.into(),
            json!({"requests": list.requests, "listed": lines}),
        );
    }
    let failed: Vec<String> = summary
        .operations
        .iter()
        .flat_map(|op| op.failed_upload_examples.iter().map(failed_upload))
        .collect();
    if summary.failed_uploads > 0 {
        notes.push(format!(
            "{} {} answered 200 whose file the platform could not process (the cohort failed; the upload's check fails, --allow-failed-uploads makes it a warning):",
            summary.failed_uploads,
            if summary.failed_uploads == 1 {
                "upload"
            } else {
                "uploads"
            }
        ));
        notes.extend(failed.iter().map(|l| format!("  {l}")));
    }
    figures.insert(
        "failed_uploads".into(),
        json!({"uploads": summary.failed_uploads, "listed": failed}),
    );
    figures.insert(
        "warnings".into(),
        json!({
            "trailing_slash": summary.trailing_slash.requests,
            "repeated_query": summary.repeated_query.requests,
        }),
    );
    (figures, notes)
}
