//! The counts behind the journal's summary, one set per workspace ([`Counts`]), and the
//! summary of the workspaces a key sees, made by adding theirs up ([`summary`]).
//!
//! The counts cover every request since the start or the workspace's last reset, also those
//! the ring no longer holds, so coverage is never understated by the ring's size.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use contracts::operations::Catalogue;
use contracts::wire::{
    CohortStatus, Coverage, FailedUpload, FlaggedRequests, JournalSummary, OperationSummary,
    RefusedRequest, RefusedRequests, UnknownRoutes, Verdict, ViolationExample, ViolationKind,
};

use super::kept::Kept;

/// Violating requests kept as examples per operation in the summary.
pub const EXAMPLES_PER_OPERATION: usize = 5;
/// Requests answered 404, 409 or 413 that the summary lists one by one, per status.
pub(crate) const REFUSED_LISTED: usize = 100;

/// Counts of one operation.
#[derive(Debug, Clone, Default)]
struct OpCounts {
    calls: u64,
    statuses: BTreeMap<u16, u64>,
    violating: u64,
    examples: Vec<ViolationExample>,
    failed_uploads: u64,
    failed_examples: Vec<FailedUpload>,
}

/// The counts of one workspace (or of the requests of none).
#[derive(Debug, Clone)]
pub(crate) struct Counts {
    /// When counting started: start-up, or the workspace's last reset.
    pub(crate) since: DateTime<Utc>,
    requests: u64,
    conforming: u64,
    violating: u64,
    not_judged: u64,
    faults: u64,
    /// Entries of the workspace that left the ring.
    pub(crate) dropped: u64,
    /// By the operation's index in the catalogue; only operations called (a workspace
    /// seen once costs little).
    ops: BTreeMap<usize, OpCounts>,
    operations: usize,
    unknown: UnknownRoutes,
    not_found: RefusedRequests,
    conflicts: RefusedRequests,
    too_large: RefusedRequests,
    failed_uploads: u64,
    trailing_slash: FlaggedRequests,
    repeated_query: FlaggedRequests,
}

impl Counts {
    /// Nothing counted yet, from `since`, for a document of `operations` operations.
    pub(crate) fn new(since: DateTime<Utc>, operations: usize) -> Counts {
        Counts {
            since,
            requests: 0,
            conforming: 0,
            violating: 0,
            not_judged: 0,
            faults: 0,
            dropped: 0,
            ops: BTreeMap::new(),
            operations,
            unknown: UnknownRoutes::default(),
            not_found: RefusedRequests::default(),
            conflicts: RefusedRequests::default(),
            too_large: RefusedRequests::default(),
            failed_uploads: 0,
            trailing_slash: FlaggedRequests::default(),
            repeated_query: FlaggedRequests::default(),
        }
    }

    /// Requests counted.
    pub(crate) fn requests(&self) -> u64 {
        self.requests
    }

    /// Adds `e` to the counts.
    pub(crate) fn count(&mut self, e: &Kept, catalogue: &Catalogue) {
        self.requests += 1;
        match e.verdict {
            Verdict::Conforms => self.conforming += 1,
            Verdict::Violates => self.violating += 1,
            Verdict::NotJudged => self.not_judged += 1,
        }
        if e.fault.is_some() {
            self.faults += 1;
        }
        match e
            .operation
            .map(usize::from)
            .filter(|i| *i < self.operations)
        {
            Some(i) => {
                let op = self.ops.entry(i).or_default();
                op.calls += 1;
                *op.statuses.entry(e.status.unwrap_or(0)).or_default() += 1;
                if e.verdict == Verdict::Violates {
                    op.violating += 1;
                    if op.examples.len() < EXAMPLES_PER_OPERATION {
                        op.examples.push(e.example());
                    }
                }
                let refused = match e.status {
                    _ if e.verdict == Verdict::NotJudged => None,
                    Some(404) => Some(&mut self.not_found),
                    Some(409) => Some(&mut self.conflicts),
                    Some(413) => Some(&mut self.too_large),
                    _ => None,
                };
                if let Some(list) = refused {
                    list.requests += 1;
                    if list.listed.len() < REFUSED_LISTED {
                        list.listed.push(RefusedRequest {
                            seq: e.seq,
                            method: e.method.as_str().to_string(),
                            path: e.texts.path().to_string(),
                            operation_id: catalogue.operations()[i].operation_id.clone(),
                            message: e.error_message(),
                        });
                    }
                }
                if let Some(c) = e.cohort.as_deref()
                    && c.status == CohortStatus::Failed
                {
                    self.failed_upload(
                        i,
                        FailedUpload {
                            seq: e.seq,
                            method: e.method.as_str().to_string(),
                            path: e.texts.path().to_string(),
                            cohort_id: c.cohort_id.clone(),
                            failure_reason: c.failure_reason.clone().unwrap_or_default(),
                        },
                    );
                }
                for (kind, flagged) in [
                    (ViolationKind::TrailingSlash, &mut self.trailing_slash),
                    (ViolationKind::RepeatedQuery, &mut self.repeated_query),
                ] {
                    if let Some(example) = e.warning_example(kind) {
                        flagged.requests += 1;
                        if flagged.examples.len() < EXAMPLES_PER_OPERATION {
                            flagged.examples.push(example);
                        }
                    }
                }
            }
            None => {
                self.unknown.requests += 1;
                if self.unknown.examples.len() < EXAMPLES_PER_OPERATION {
                    self.unknown.examples.push(e.example());
                }
            }
        }
    }
}

impl Counts {
    /// Counts an upload of the operation at `operation` whose cohort failed.
    pub(crate) fn failed_upload(&mut self, operation: usize, failed: FailedUpload) {
        self.failed_uploads += 1;
        let op = self.ops.entry(operation).or_default();
        op.failed_uploads += 1;
        if op.failed_examples.len() < EXAMPLES_PER_OPERATION {
            op.failed_examples.push(failed);
        }
    }
}

/// Adds `from`'s requests and listed entries to `to`.
fn add_refused(to: &mut RefusedRequests, from: &RefusedRequests) {
    to.requests += from.requests;
    to.listed.extend(from.listed.iter().cloned());
}

/// Adds `from`'s requests and examples to `to`.
fn add_flagged(to: &mut FlaggedRequests, from: &FlaggedRequests) {
    to.requests += from.requests;
    to.examples.extend(from.examples.iter().cloned());
}

/// The summary of `parts` (the counts of the workspaces a key sees), with the ring's
/// figures: `kept` entries of theirs in it, `capacity` in all. `since` is the start of
/// counting when `parts` is empty.
pub(crate) fn summary<'a>(
    catalogue: &Catalogue,
    parts: impl IntoIterator<Item = &'a Counts>,
    since: DateTime<Utc>,
    kept: u64,
    capacity: u64,
) -> JournalSummary {
    let operations_n = catalogue.operations().len();
    let mut all = Counts::new(since, operations_n);
    let mut first = true;
    for c in parts {
        all.since = if first {
            c.since
        } else {
            all.since.min(c.since)
        };
        first = false;
        all.requests += c.requests;
        all.conforming += c.conforming;
        all.violating += c.violating;
        all.not_judged += c.not_judged;
        all.faults += c.faults;
        all.dropped += c.dropped;
        for (i, op) in &c.ops {
            let sum = all.ops.entry(*i).or_default();
            sum.calls += op.calls;
            for (status, n) in &op.statuses {
                *sum.statuses.entry(*status).or_default() += n;
            }
            sum.violating += op.violating;
            sum.examples.extend(op.examples.iter().cloned());
            sum.failed_uploads += op.failed_uploads;
            sum.failed_examples
                .extend(op.failed_examples.iter().cloned());
        }
        all.unknown.requests += c.unknown.requests;
        all.unknown
            .examples
            .extend(c.unknown.examples.iter().cloned());
        add_refused(&mut all.not_found, &c.not_found);
        add_refused(&mut all.conflicts, &c.conflicts);
        add_refused(&mut all.too_large, &c.too_large);
        all.failed_uploads += c.failed_uploads;
        add_flagged(&mut all.trailing_slash, &c.trailing_slash);
        add_flagged(&mut all.repeated_query, &c.repeated_query);
    }
    // The first of every workspace's first few, oldest first.
    for op in all.ops.values_mut() {
        op.examples.sort_by_key(|e| e.seq);
        op.examples.truncate(EXAMPLES_PER_OPERATION);
        op.failed_examples.sort_by_key(|e| e.seq);
        op.failed_examples.truncate(EXAMPLES_PER_OPERATION);
    }
    all.unknown.examples.sort_by_key(|e| e.seq);
    all.unknown.examples.truncate(EXAMPLES_PER_OPERATION);
    for list in [&mut all.not_found, &mut all.conflicts, &mut all.too_large] {
        list.listed.sort_by_key(|e| e.seq);
        list.listed.truncate(REFUSED_LISTED);
    }
    for flagged in [&mut all.trailing_slash, &mut all.repeated_query] {
        flagged.examples.sort_by_key(|e| e.seq);
        flagged.examples.truncate(EXAMPLES_PER_OPERATION);
    }

    let mut operations = Vec::with_capacity(operations_n);
    let mut not_called = Vec::new();
    for (i, op) in catalogue.operations().iter().enumerate() {
        let counts = all.ops.remove(&i).unwrap_or_default();
        if counts.calls == 0 {
            not_called.push(op.operation_id.clone());
        }
        operations.push(OperationSummary {
            operation_id: op.operation_id.clone(),
            method: op.method.to_string(),
            path: op.path.clone(),
            tag: op.tag.clone(),
            calls: counts.calls,
            statuses: counts
                .statuses
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            violating_requests: counts.violating,
            documented_statuses_not_seen: op
                .statuses
                .iter()
                .filter(|st| !counts.statuses.contains_key(st))
                .copied()
                .collect(),
            undocumented_statuses: counts
                .statuses
                .keys()
                .filter(|st| !op.statuses.contains(st))
                .copied()
                .collect(),
            examples: counts.examples,
            failed_uploads: counts.failed_uploads,
            failed_upload_examples: counts.failed_examples,
        });
    }
    let total = operations.len() as u32;
    let called = total - not_called.len() as u32;
    let percent = if total == 0 {
        100.0
    } else {
        (f64::from(called) * 1000.0 / f64::from(total)).round() / 10.0
    };
    JournalSummary {
        since: all.since,
        requests: all.requests,
        conforming: all.conforming,
        violating: all.violating,
        not_judged: all.not_judged,
        faults_injected: all.faults,
        entries_kept: kept,
        entries_dropped: all.dropped,
        capacity,
        coverage: Coverage {
            operations: total,
            called,
            percent,
        },
        operations,
        not_called,
        unknown_routes: all.unknown,
        not_found: all.not_found,
        conflicts: all.conflicts,
        too_large: all.too_large,
        failed_uploads: all.failed_uploads,
        trailing_slash: all.trailing_slash,
        repeated_query: all.repeated_query,
    }
}
