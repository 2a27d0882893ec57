//! The counts behind the journal's summary, one set per workspace ([`Counts`]), and the
//! summary of the workspaces a key sees, made by adding theirs up ([`summary`]).
//!
//! The counts cover every request since the start or the workspace's last reset, also those
//! the ring no longer holds, so coverage is never understated by the ring's size.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use contracts::operations::Catalogue;
use contracts::wire::{
    Coverage, JournalSummary, NotFoundRequest, NotFoundRequests, OperationSummary, UnknownRoutes,
    Verdict, ViolationExample,
};

use super::kept::Kept;

/// Violating requests kept as examples per operation in the summary.
pub const EXAMPLES_PER_OPERATION: usize = 5;
/// Requests answered 404 for an unknown id that the summary lists one by one.
pub(crate) const NOT_FOUND_LISTED: usize = 100;

/// Counts of one operation.
#[derive(Debug, Clone, Default)]
struct OpCounts {
    calls: u64,
    statuses: BTreeMap<u16, u64>,
    violating: u64,
    examples: Vec<ViolationExample>,
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
    not_found: NotFoundRequests,
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
            not_found: NotFoundRequests::default(),
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
                if e.status == Some(404) && e.verdict != Verdict::NotJudged {
                    self.not_found.requests += 1;
                    if self.not_found.listed.len() < NOT_FOUND_LISTED {
                        self.not_found.listed.push(NotFoundRequest {
                            seq: e.seq,
                            method: e.method.as_str().to_string(),
                            path: e.texts.path().to_string(),
                            operation_id: catalogue.operations()[i].operation_id.clone(),
                            message: e.error_message(),
                        });
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
        }
        all.unknown.requests += c.unknown.requests;
        all.unknown
            .examples
            .extend(c.unknown.examples.iter().cloned());
        all.not_found.requests += c.not_found.requests;
        all.not_found
            .listed
            .extend(c.not_found.listed.iter().cloned());
    }
    // The first of every workspace's first few, oldest first.
    for op in all.ops.values_mut() {
        op.examples.sort_by_key(|e| e.seq);
        op.examples.truncate(EXAMPLES_PER_OPERATION);
    }
    all.unknown.examples.sort_by_key(|e| e.seq);
    all.unknown.examples.truncate(EXAMPLES_PER_OPERATION);
    all.not_found.listed.sort_by_key(|e| e.seq);
    all.not_found.listed.truncate(NOT_FOUND_LISTED);

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
    }
}
