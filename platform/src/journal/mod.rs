//! The request journal: every request to the platform's interface (the paths under
//! `/api/`), and every request to a path that serves nothing, with the contract's verdict on
//! it, and the API coverage those requests give.
//!
//! - [`kept`]: the compact form the ring keeps a request in, made into the wire entry when
//!   listed.
//! - [`verdict`]: how one request is judged (the 422's items, unknown fields even when the
//!   platform ignores them, a wrong content type, an unknown route, a missing or wrong key),
//!   and its warnings (a trailing `/`, a query parameter given twice).
//! - [`causes`]: what each violation and warning says, and the order of a request's
//!   violations (by what they cost the client).
//! - [`uploads`]: what the client's cohort uploads led to (a file the platform could not
//!   process fails the upload operation's check).
//! - [`redact`]: what is kept of bodies and queries (shapes, ids, statuses; never a key, a
//!   phone number or a variable value).
//! - [`counts`]: the counts behind the summary, per workspace.
//! - [`persist`]: the optional copy in the database.
//! - [`report`]: the journal's summary as a check report (`harness verify`,
//!   `--report-on-exit`).
//!
//! Every entry belongs to one workspace (see [`crate::auth::KeyTable::owner`]); a key
//! lists, summarises and clears what its [`Scope`] sees: its workspace's entries, or, for an
//! operator, all. Entries live in one ring of [`JournalSettings::capacity`] (10,000 by
//! default); when it is full the oldest go and are counted as dropped. The counts per
//! operation behind the summary are kept per workspace and cover every request since the
//! start (or the workspace's last reset), dropped or not, so coverage is never understated
//! by the ring's size. A request is recorded before its answer is sent: a client that reads
//! the journal after an answer finds the entry.

pub(crate) mod causes;
pub(crate) mod counts;
pub(crate) mod kept;
pub(crate) mod persist;
pub(crate) mod redact;
pub mod report;
pub(crate) mod seen;
pub(crate) mod uploads;
pub mod verdict;

use std::collections::VecDeque;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use contracts::operations::Catalogue;
use contracts::validate::JournalFilter;
use contracts::wire::{CohortStatus, JournalEntry, JournalSummary};
use rustc_hash::FxHashMap;

use crate::auth::Scope;
use crate::config::journal::JournalSettings;
use crate::store::WorkspaceRef;
use counts::Counts;
pub use counts::EXAMPLES_PER_OPERATION;
use kept::Kept;
use uploads::{Fate, PendingUpload, Uploads};

/// The most workspaces the journal counts apart. Requests of further workspaces (a client
/// that names ever new ones in its paths) count with those of no workspace, which only an
/// operator sees, so that memory stays bounded.
pub(crate) const MAX_OWNERS: usize = 10_000;

/// The workspaces entries belong to, each given a number once: an entry holds its
/// owner's number, and the counts are kept per number. Looked up on every request, under
/// the journal's lock: hashed with Fx, not SipHash (at most [`MAX_OWNERS`] keys).
#[derive(Debug, Default)]
struct Owners {
    refs: Vec<WorkspaceRef>,
    index: FxHashMap<WorkspaceRef, u32>,
}

impl Owners {
    /// The number of `ws`, given now if it has none; `None` once [`MAX_OWNERS`] have one.
    fn number(&mut self, ws: &WorkspaceRef) -> Option<u32> {
        if let Some(i) = self.index.get(ws) {
            return Some(*i);
        }
        if self.refs.len() >= MAX_OWNERS {
            return None;
        }
        let i = self.refs.len() as u32;
        self.refs.push(ws.clone());
        self.index.insert(ws.clone(), i);
        Some(i)
    }

    fn get(&self, owner: Option<u32>) -> Option<&WorkspaceRef> {
        owner.and_then(|i| self.refs.get(i as usize))
    }
}

#[derive(Debug)]
struct State {
    entries: VecDeque<Kept>,
    next_seq: u64,
    /// Start-up, or the last reset of the whole journal: where the counts of a workspace
    /// seen for the first time start.
    since: DateTime<Utc>,
    owners: Owners,
    /// Counts of the requests of no workspace (`[0]`) and of each owner (`[1 + number]`).
    counts: Vec<Counts>,
    /// The uploads whose cohorts are processing.
    uploads: Uploads,
}

impl State {
    fn new(since: DateTime<Utc>, operations: usize) -> State {
        State {
            entries: VecDeque::new(),
            next_seq: 1,
            since,
            owners: Owners::default(),
            counts: vec![Counts::new(since, operations)],
            uploads: Uploads::default(),
        }
    }

    fn slot(owner: Option<u32>) -> usize {
        owner.map_or(0, |i| i as usize + 1)
    }

    /// Gives `entry` the number of `owner` and counts it.
    fn count(&mut self, entry: &mut Kept, owner: Option<&WorkspaceRef>, catalogue: &Catalogue) {
        entry.owner = owner.and_then(|ws| self.owners.number(ws));
        let slot = State::slot(entry.owner);
        while self.counts.len() <= slot {
            let fresh = Counts::new(self.since, catalogue.operations().len());
            self.counts.push(fresh);
        }
        self.counts[slot].count(entry, catalogue);
    }

    /// Holds the upload `entry` is (one answered 200 whose cohort is processing) until its
    /// cohort's fate is known, or applies the fate known already.
    fn track_upload(&mut self, entry: &mut Kept, catalogue: &Catalogue) {
        let Some(cohort) = entry.cohort.as_deref() else {
            return;
        };
        let Some(operation) = entry.operation.map(usize::from) else {
            return;
        };
        if cohort.status != CohortStatus::Processing {
            return;
        }
        let upload = PendingUpload {
            seq: entry.seq,
            owner: entry.owner,
            operation,
            method: catalogue
                .operations()
                .get(operation)
                .map_or("POST", |op| op.method),
            path: entry.texts.path().into(),
        };
        let cohort_id = cohort.cohort_id.clone();
        if let Some(fate) = self.uploads.accepted(&cohort_id, upload.clone()) {
            set_fate(entry, &fate);
            self.count_fate(&upload, &cohort_id, &fate);
        }
    }

    /// Counts an upload whose cohort's fate is `fate` (only a failure counts).
    fn count_fate(&mut self, upload: &PendingUpload, cohort_id: &str, fate: &Fate) {
        if let Some(reason) = fate {
            let slot = State::slot(upload.owner);
            if let Some(counts) = self.counts.get_mut(slot) {
                counts.failed_upload(upload.operation, upload.failed(cohort_id, reason));
            }
        }
    }

    /// Puts `entry` in the ring; answers the oldest when it had to leave.
    fn push(&mut self, entry: Kept, capacity: usize) -> Option<Kept> {
        let old = if self.entries.len() >= capacity {
            self.entries.pop_front()
        } else {
            None
        };
        if let Some(o) = &old {
            self.counts[State::slot(o.owner)].dropped += 1;
        }
        if capacity > 0 {
            self.entries.push_back(entry);
        } else {
            self.counts[State::slot(entry.owner)].dropped += 1;
        }
        old
    }

    /// The counts slots `scope` sees.
    fn seen_slots<'s>(&'s self, scope: &'s Scope) -> impl Iterator<Item = usize> + 's {
        (0..self.counts.len()).filter(move |slot| {
            let owner = slot.checked_sub(1).map(|i| i as u32);
            scope.sees(self.owners.get(owner))
        })
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
    pub(crate) fn new(settings: JournalSettings, since: DateTime<Utc>) -> Journal {
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
    pub(crate) fn persistent(
        settings: JournalSettings,
        since: DateTime<Utc>,
        store: &crate::store::Store,
    ) -> Result<Journal, crate::store::StoreError> {
        let mut journal = Journal::new(settings, since);
        {
            let catalogue = journal.catalogue;
            let capacity = journal.settings.capacity;
            let mut s = journal.lock();
            let next_seq = persist::load(store, |e| {
                let owner = e
                    .owner
                    .as_ref()
                    .map(|o| WorkspaceRef::new(&o.org_id, &o.workspace_id));
                let mut kept = Kept::from_entry(e, catalogue);
                s.count(&mut kept, owner.as_ref(), catalogue);
                s.track_upload(&mut kept, catalogue);
                s.push(kept, capacity);
            })?;
            s.next_seq = next_seq;
        }
        journal.persist = Some(persist::Persister::start(store.clone()));
        Ok(journal)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether requests are recorded (capacity above 0).
    pub(crate) fn enabled(&self) -> bool {
        self.settings.capacity > 0
    }

    /// The settings.
    pub fn settings(&self) -> &JournalSettings {
        &self.settings
    }

    /// Records `entry` (its `seq` is assigned here) as a request of `owner` (see
    /// [`crate::auth::KeyTable::owner`]) and answers the number given.
    pub fn record(&self, mut entry: Kept, owner: Option<&WorkspaceRef>) -> u64 {
        let old;
        let seq;
        {
            let mut s = self.lock();
            seq = s.next_seq;
            s.next_seq += 1;
            entry.seq = seq;
            s.count(&mut entry, owner, self.catalogue);
            s.track_upload(&mut entry, self.catalogue);
            if let Some(p) = &self.persist {
                p.write(&entry.to_entry(self.catalogue, s.owners.get(entry.owner)));
            }
            old = s.push(entry, self.settings.capacity);
        }
        // The oldest entry is freed outside the lock.
        drop(old);
        seq
    }

    /// What became of the file of cohort `cohort_id`: read (`failure_reason` `None`), or
    /// not, for `failure_reason` (a file the client sent that the platform could not use).
    /// The cohort worker calls it before it stores the outcome, so that a client that sees
    /// the cohort settled finds the journal knowing it; the upload's entry (in the ring and
    /// in the database) shows the cohort's new status, and a failure is counted against the
    /// upload's operation ([`uploads`]).
    pub(crate) fn upload_settled(&self, cohort_id: &str, failure_reason: Option<&str>) {
        if !self.enabled() {
            return;
        }
        let fate: Fate = failure_reason.map(redact::scrub);
        let mut s = self.lock();
        let Some(upload) = s.uploads.settled(cohort_id, fate.clone()) else {
            return;
        };
        s.count_fate(&upload, cohort_id, &fate);
        if let Ok(i) = s.entries.binary_search_by_key(&upload.seq, |e| e.seq)
            && let Some(entry) = s.entries.get_mut(i)
        {
            set_fate(entry, &fate);
        }
        if let Some(p) = &self.persist {
            p.set_cohort_fate(upload.seq, &fate);
        }
    }

    /// Forgets the upload of cohort `cohort_id`, whose file is not the client's to answer
    /// for: the cohort was deleted while processed, or failed for the platform's own reason
    /// (its storage, the workspace's key service).
    pub(crate) fn upload_unjudged(&self, cohort_id: &str) {
        if self.enabled() {
            self.lock().uploads.forget_one(cohort_id);
        }
    }

    /// The entries `scope` sees that pass `filter`, oldest first: one page, and how many
    /// pass.
    pub(crate) fn list(&self, filter: &JournalFilter, scope: &Scope) -> (Vec<JournalEntry>, u64) {
        let s = self.lock();
        let catalogue = self.catalogue;
        let passes = |e: &&Kept| {
            scope.sees(s.owners.get(e.owner))
                && filter
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
            .map(|e| e.to_entry(catalogue, s.owners.get(e.owner)))
            .collect();
        (page, total)
    }

    /// Empties what `scope` sees of the journal (and of its table in the database), so that
    /// its counting starts again at `now`; answers how many requests its counts held. An
    /// operator's reset empties the whole journal, and entry numbers start again from 1;
    /// a workspace's leaves the others' entries and counts alone, and numbers go on.
    pub(crate) fn reset(&self, scope: &Scope, now: DateTime<Utc>) -> u64 {
        let mut s = self.lock();
        if *scope == Scope::Operator {
            let removed = s.counts.iter().map(Counts::requests).sum();
            *s = State::new(now, self.catalogue.operations().len());
            if let Some(p) = &self.persist {
                p.clear();
            }
            return removed;
        }
        let slots: Vec<usize> = s.seen_slots(scope).collect();
        self.clear_slots(&mut s, &slots, now)
    }

    /// Empties the entries and counts of exactly `ws` (not those of a key pattern that
    /// takes it in): the reset of one workspace. Answers how many requests they held.
    pub(crate) fn reset_workspace(&self, ws: &WorkspaceRef, now: DateTime<Utc>) -> u64 {
        let mut s = self.lock();
        let Some(i) = s.owners.index.get(ws).copied() else {
            return 0;
        };
        let slot = State::slot(Some(i));
        if slot >= s.counts.len() {
            return 0;
        }
        self.clear_slots(&mut s, &[slot], now)
    }

    fn clear_slots(&self, s: &mut State, slots: &[usize], now: DateTime<Utc>) -> u64 {
        let operations = self.catalogue.operations().len();
        let mut removed = 0;
        for &slot in slots {
            removed += s.counts[slot].requests();
            s.counts[slot] = Counts::new(now, operations);
        }
        s.entries.retain(|e| !slots.contains(&State::slot(e.owner)));
        s.uploads
            .forget(|owner| slots.contains(&State::slot(owner)));
        if let Some(p) = &self.persist {
            let owners: Vec<Option<WorkspaceRef>> = slots
                .iter()
                .map(|slot| s.owners.get(slot.checked_sub(1).map(|i| i as u32)).cloned())
                .collect();
            p.delete_owners(owners);
        }
        removed
    }

    /// Waits until every entry recorded so far is in the database (when kept there).
    pub fn flush(&self) {
        if let Some(p) = &self.persist {
            p.flush();
        }
    }

    /// Coverage and verdict counts per operation of the OpenAPI document, of the requests
    /// `scope` sees.
    pub fn summary(&self, scope: &Scope) -> JournalSummary {
        let s = self.lock();
        let kept = s
            .entries
            .iter()
            .filter(|e| scope.sees(s.owners.get(e.owner)))
            .count() as u64;
        let slots: Vec<usize> = s.seen_slots(scope).collect();
        counts::summary(
            self.catalogue,
            slots.iter().map(|slot| &s.counts[*slot]),
            s.since,
            kept,
            self.settings.capacity as u64,
        )
    }
}

/// `entry`'s cohort as its fate left it: `completed`, or `failed` with the reason.
fn set_fate(entry: &mut Kept, fate: &Fate) {
    if let Some(c) = entry.cohort.as_deref_mut() {
        match fate {
            Some(reason) => {
                c.status = CohortStatus::Failed;
                c.failure_reason = Some(reason.clone());
            }
            None => c.status = CohortStatus::Completed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contracts::wire::{ApiKeyUse, Verdict};
    use kept::{KeptBody, Media, Note, Texts};

    fn kept(path: &str) -> Kept {
        let body = KeptBody {
            media: Media::None,
            bytes: 0,
            json: None,
            note: Note::None,
        };
        Kept {
            seq: 0,
            at: "2026-03-02T12:00:00Z".parse().unwrap(),
            method: warp::http::Method::GET,
            texts: Texts::new(path, "", None),
            operation: None,
            api_key: ApiKeyUse::Missing,
            status: Some(404),
            duration_ms: 0.0,
            request: body.clone(),
            response: body,
            verdict: Verdict::Violates,
            violations: Vec::new(),
            warnings: Vec::new(),
            fault: None,
            cohort: None,
            owner: None,
        }
    }

    #[test]
    fn past_the_most_workspaces_new_ones_count_with_no_workspace() {
        let journal = Journal::new(
            JournalSettings::default(),
            "2026-03-02T12:00:00Z".parse().unwrap(),
        );
        for i in 0..MAX_OWNERS {
            let ws = WorkspaceRef::new("o", format!("w{i}"));
            journal.record(kept("/x"), Some(&ws));
        }
        let last = WorkspaceRef::new("o", "w-one-too-many");
        journal.record(kept("/x"), Some(&last));
        let first = Scope::Workspaces(vec![WorkspaceRef::new("o", "w0")]);
        assert_eq!(journal.summary(&first).requests, 1);
        let late = Scope::Workspaces(vec![last]);
        assert_eq!(journal.summary(&late).requests, 0, "counted apart no more");
        let all = journal.summary(&Scope::Operator);
        assert_eq!(all.requests, MAX_OWNERS as u64 + 1, "but counted");
        let (page, _) = journal.list(
            &contracts::validate::journal_query(&[("offset".into(), (MAX_OWNERS - 1).to_string())])
                .unwrap(),
            &Scope::Operator,
        );
        assert!(page[0].owner.is_none(), "{:?}", page[0]);
    }
}
