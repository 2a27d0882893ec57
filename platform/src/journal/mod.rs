//! The request journal: every request to the platform's interface (the paths under
//! `/api/`) with the contract's verdict on it, and the API coverage those requests give.
//!
//! - [`kept`]: the compact form the ring keeps a request in, made into the wire entry when
//!   listed.
//! - [`verdict`]: how one request is judged (the 422's items, unknown fields even when the
//!   platform ignores them, a wrong content type, an unknown route, a missing or wrong key).
//! - [`redact`]: what is kept of bodies and queries (shapes, ids, statuses; never a key, a
//!   phone number or a variable value).
//! - [`persist`]: the optional copy in the database.
//! - [`report`]: the journal's summary as a check report (`harness verify`,
//!   `--report-on-exit`).
//!
//! Entries live in a ring of [`JournalSettings::capacity`] (10,000 by default); when it is
//! full the oldest go and are counted as dropped. The counts per operation behind the
//! summary cover every request since the start (or the last reset), dropped or not, so
//! coverage is never understated by the ring's size. A request is recorded before its
//! answer is sent: a client that reads the journal after an answer finds the entry.

pub mod kept;
pub mod persist;
pub mod redact;
pub mod report;
pub mod verdict;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use contracts::operations::Catalogue;
use contracts::validate::JournalFilter;
use contracts::wire::{
    Coverage, JournalEntry, JournalSummary, OperationSummary, UnknownRoutes, Verdict,
    ViolationExample,
};

use kept::Kept;

/// Default of [`JournalSettings::capacity`].
pub const DEFAULT_CAPACITY: usize = 10_000;
/// Default of [`JournalSettings::body_limit_bytes`].
pub const DEFAULT_BODY_LIMIT_BYTES: usize = 8 * 1024;
/// Violating requests kept as examples per operation in the summary.
pub const EXAMPLES_PER_OPERATION: usize = 5;

/// How the journal is set up (the configuration's `[journal]` table).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JournalSettings {
    /// Entries kept in memory; 0 turns the journal off.
    pub capacity: usize,
    /// Bodies larger than this (in bytes) are described by their size only.
    pub body_limit_bytes: usize,
    /// Also keep every entry in the database (table `journal_entries`), so that the
    /// journal and its counts survive a restart.
    pub persist: bool,
    /// Which answers' bodies are kept (redacted): those of failed answers (the default), or
    /// all. Request bodies are always kept.
    pub response_bodies: ResponseBodies,
}

/// Which answers' bodies the journal keeps ([`JournalSettings::response_bodies`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseBodies {
    /// Answers of 400 and above, and those a fault rule touched: what a failed request
    /// needs to be understood. The body of a successful answer is what the platform made
    /// of the request, which the request itself shows; reading, parsing and redacting it
    /// for every request would cost more than the rest of the journal.
    #[default]
    Failures,
    /// Every answer.
    All,
}

impl Default for JournalSettings {
    fn default() -> Self {
        JournalSettings {
            capacity: DEFAULT_CAPACITY,
            body_limit_bytes: DEFAULT_BODY_LIMIT_BYTES,
            persist: false,
            response_bodies: ResponseBodies::Failures,
        }
    }
}

/// Counts of one operation.
#[derive(Debug, Clone, Default)]
struct OpCounts {
    calls: u64,
    statuses: BTreeMap<u16, u64>,
    violating: u64,
    examples: Vec<ViolationExample>,
}

#[derive(Debug)]
struct State {
    entries: VecDeque<Kept>,
    next_seq: u64,
    dropped: u64,
    since: DateTime<Utc>,
    requests: u64,
    conforming: u64,
    violating: u64,
    not_judged: u64,
    faults: u64,
    ops: Vec<OpCounts>,
    unknown: UnknownRoutes,
}

impl State {
    fn new(since: DateTime<Utc>, operations: usize) -> State {
        State {
            entries: VecDeque::new(),
            next_seq: 1,
            dropped: 0,
            since,
            requests: 0,
            conforming: 0,
            violating: 0,
            not_judged: 0,
            faults: 0,
            ops: vec![OpCounts::default(); operations],
            unknown: UnknownRoutes::default(),
        }
    }

    /// Adds `e` to the counts (not to the ring).
    fn count(&mut self, e: &Kept) {
        self.requests += 1;
        match e.verdict {
            Verdict::Conforms => self.conforming += 1,
            Verdict::Violates => self.violating += 1,
            Verdict::NotJudged => self.not_judged += 1,
        }
        if e.fault.is_some() {
            self.faults += 1;
        }
        match e.operation.map(usize::from).filter(|i| *i < self.ops.len()) {
            Some(i) => {
                let op = &mut self.ops[i];
                op.calls += 1;
                *op.statuses.entry(e.status.unwrap_or(0)).or_default() += 1;
                if e.verdict == Verdict::Violates {
                    op.violating += 1;
                    if op.examples.len() < EXAMPLES_PER_OPERATION {
                        op.examples.push(e.example());
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

/// The journal of one platform.
#[derive(Debug)]
pub struct Journal {
    settings: JournalSettings,
    catalogue: &'static Catalogue,
    state: Mutex<State>,
    persist: Option<persist::Persister>,
}

impl Journal {
    /// An empty journal; counting starts at `since`.
    pub fn new(settings: JournalSettings, since: DateTime<Utc>) -> Journal {
        let catalogue = Catalogue::platform();
        Journal {
            state: Mutex::new(State::new(since, catalogue.operations().len())),
            settings,
            catalogue,
            persist: None,
        }
    }

    /// A journal kept in the database of `store` too: entries of earlier runs are loaded
    /// (the latest into the ring, all into the counts), new ones are written behind.
    pub fn persistent(
        settings: JournalSettings,
        since: DateTime<Utc>,
        store: &crate::store::Store,
    ) -> Result<Journal, crate::store::StoreError> {
        let mut journal = Journal::new(settings, since);
        {
            let catalogue = journal.catalogue;
            let mut s = journal.lock();
            let loaded =
                persist::load(store, journal.settings.capacity, catalogue, |e| s.count(e))?;
            s.next_seq = loaded.next_seq;
            s.dropped = loaded.not_in_ring;
            s.entries = loaded.ring.into();
        }
        journal.persist = Some(persist::Persister::start(store.clone()));
        Ok(journal)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether requests are recorded (capacity above 0).
    pub fn enabled(&self) -> bool {
        self.settings.capacity > 0
    }

    /// The settings.
    pub fn settings(&self) -> &JournalSettings {
        &self.settings
    }

    /// Records `entry` (its `seq` is assigned here) and answers the number given.
    pub fn record(&self, mut entry: Kept) -> u64 {
        let old;
        let seq;
        {
            let mut s = self.lock();
            seq = s.next_seq;
            s.next_seq += 1;
            entry.seq = seq;
            s.count(&entry);
            old = if s.entries.len() >= self.settings.capacity {
                s.dropped += 1;
                s.entries.pop_front()
            } else {
                None
            };
            if let Some(p) = &self.persist {
                p.write(&entry.to_entry(self.catalogue));
            }
            s.entries.push_back(entry);
        }
        // The oldest entry is freed outside the lock.
        drop(old);
        seq
    }

    /// The entries that pass `filter`, oldest first: one page, and how many pass.
    pub fn list(&self, filter: &JournalFilter) -> (Vec<JournalEntry>, u64) {
        let s = self.lock();
        let catalogue = self.catalogue;
        let passes = |e: &&Kept| {
            filter
                .operation
                .as_deref()
                .is_none_or(|op| match e.operation_id(catalogue) {
                    Some(id) => id == op,
                    None => op == "unknown",
                })
                && filter.status.is_none_or(|st| e.status.unwrap_or(0) == st)
                && filter.verdict.is_none_or(|v| e.verdict == v)
        };
        let total = s.entries.iter().filter(passes).count() as u64;
        let page = s
            .entries
            .iter()
            .filter(passes)
            .skip(filter.offset.min(usize::MAX as u64) as usize)
            .take(filter.limit as usize)
            .map(|e| e.to_entry(catalogue))
            .collect();
        (page, total)
    }

    /// Empties the journal (and its table in the database); counting starts again at
    /// `since`, and entry numbers from 1.
    pub fn reset(&self, since: DateTime<Utc>) {
        let mut s = self.lock();
        *s = State::new(since, self.catalogue.operations().len());
        if let Some(p) = &self.persist {
            p.clear();
        }
    }

    /// Waits until every entry recorded so far is in the database (when kept there).
    pub fn flush(&self) {
        if let Some(p) = &self.persist {
            p.flush();
        }
    }

    /// Coverage and verdict counts per operation of the OpenAPI document.
    pub fn summary(&self) -> JournalSummary {
        let s = self.lock();
        let mut operations = Vec::with_capacity(s.ops.len());
        let mut not_called = Vec::new();
        for (op, counts) in self.catalogue.operations().iter().zip(&s.ops) {
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
                examples: counts.examples.clone(),
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
            since: s.since,
            requests: s.requests,
            conforming: s.conforming,
            violating: s.violating,
            not_judged: s.not_judged,
            faults_injected: s.faults,
            entries_kept: s.entries.len() as u64,
            entries_dropped: s.dropped,
            capacity: self.settings.capacity as u64,
            coverage: Coverage {
                operations: total,
                called,
                percent,
            },
            operations,
            not_called,
            unknown_routes: s.unknown.clone(),
        }
    }
}

/// The journal, shared.
pub type SharedJournal = Arc<Journal>;
