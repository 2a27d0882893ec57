//! What the client's uploads led to: a cohort upload answered 200 whose file the platform
//! then could not process (the cohort ends `failed` with its `failure_reason`) is a file the
//! client's users never reached the platform in, and the verdict says so.
//!
//! The journal holds each upload answered 200 while its cohort is `processing`
//! ([`Uploads::accepted`]); the cohort worker tells it what became of the file
//! ([`super::Journal::upload_settled`]) before it stores the outcome, so that a client that
//! sees the cohort `failed` finds the journal knowing it. A worker may finish a small file
//! before the upload's answer is recorded: such a fate waits for its upload, among the
//! last [`EARLY_KEPT`] of them ([`Uploads::settled`]). Only the uploads still processing
//! are held, so memory follows the worker's queue, not the number of uploads.

use std::collections::VecDeque;

use contracts::wire::FailedUpload;
use rustc_hash::FxHashMap;

/// Fates of cohorts whose upload was not recorded yet that are kept (those of cohorts the
/// journal never saw, such as uploads of an earlier run, leave after these).
pub(super) const EARLY_KEPT: usize = 256;

/// An upload answered 200 whose cohort is still `processing`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PendingUpload {
    /// The upload's entry number.
    pub(super) seq: u64,
    /// The number of the workspace it belongs to.
    pub(super) owner: Option<u32>,
    /// The upload operation's index in the catalogue.
    pub(super) operation: usize,
    /// The upload's method.
    pub(super) method: &'static str,
    /// The upload's path.
    pub(super) path: Box<str>,
}

impl PendingUpload {
    /// The summary's record of this upload, whose cohort `cohort_id` failed for `reason`.
    pub(super) fn failed(&self, cohort_id: &str, reason: &str) -> FailedUpload {
        FailedUpload {
            seq: self.seq,
            method: self.method.to_string(),
            path: self.path.to_string(),
            cohort_id: cohort_id.to_string(),
            failure_reason: reason.to_string(),
        }
    }
}

/// The uploads whose cohorts are processing, and fates that came before their upload.
#[derive(Debug, Default)]
pub(super) struct Uploads {
    pending: FxHashMap<String, PendingUpload>,
    /// `(cohort_id, failure_reason)`; `None`: completed.
    early: VecDeque<(String, Option<String>)>,
}

/// What became of a cohort's file: `None` when it was read, else why it could not be.
pub(super) type Fate = Option<String>;

impl Uploads {
    /// Holds `upload`, which created `cohort_id`, until its fate is known; answers the fate
    /// when it is known already.
    pub(super) fn accepted(&mut self, cohort_id: &str, upload: PendingUpload) -> Option<Fate> {
        if let Some(i) = self.early.iter().position(|(id, _)| id == cohort_id) {
            return self.early.remove(i).map(|(_, fate)| fate);
        }
        self.pending.insert(cohort_id.to_string(), upload);
        None
    }

    /// The upload of `cohort_id`, whose fate is now known, no longer held; `None` when its
    /// upload is not recorded yet (the fate then waits for it).
    pub(super) fn settled(&mut self, cohort_id: &str, fate: Fate) -> Option<PendingUpload> {
        if let Some(upload) = self.pending.remove(cohort_id) {
            return Some(upload);
        }
        if self.early.len() >= EARLY_KEPT {
            self.early.pop_front();
        }
        self.early.push_back((cohort_id.to_string(), fate));
        None
    }

    /// Forgets the upload of `cohort_id`, whatever becomes of its cohort.
    pub(super) fn forget_one(&mut self, cohort_id: &str) {
        self.pending.remove(cohort_id);
    }

    /// Forgets the uploads of the workspaces whose counts slots `gone` says (a reset).
    pub(super) fn forget(&mut self, gone: impl Fn(Option<u32>) -> bool) {
        self.pending.retain(|_, u| !gone(u.owner));
    }

    /// How many uploads are held.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(seq: u64) -> PendingUpload {
        PendingUpload {
            seq,
            owner: Some(0),
            operation: 6,
            method: "POST",
            path: "/api/x/cohorts/upload".into(),
        }
    }

    #[test]
    fn a_fate_finds_its_upload_whichever_comes_first() {
        let mut u = Uploads::default();
        assert_eq!(u.accepted("coh-1", upload(1)), None);
        assert_eq!(
            u.settled("coh-1", Some("no header".into())),
            Some(upload(1))
        );
        assert_eq!(u.held(), 0, "settled uploads are not held");
        // The worker was faster than the answer.
        assert_eq!(u.settled("coh-2", Some("no header".into())), None);
        assert_eq!(
            u.accepted("coh-2", upload(2)),
            Some(Some("no header".into()))
        );
        assert_eq!(u.held(), 0);
    }

    #[test]
    fn fates_of_uploads_never_recorded_are_bounded() {
        let mut u = Uploads::default();
        for i in 0..EARLY_KEPT + 10 {
            u.settled(&format!("coh-{i}"), None);
        }
        assert_eq!(u.early.len(), EARLY_KEPT);
        assert_eq!(u.accepted("coh-0", upload(1)), None, "the oldest left");
    }

    #[test]
    fn a_reset_forgets_its_workspaces_uploads() {
        let mut u = Uploads::default();
        u.accepted("coh-1", upload(1));
        let mut other = upload(2);
        other.owner = Some(1);
        u.accepted("coh-2", other);
        u.forget(|owner| owner == Some(0));
        assert_eq!(u.held(), 1);
        assert!(u.settled("coh-2", None).is_some());
    }
}
