//! The engine's memory: the campaigns it runs with their queues of waiting users, the calls
//! in progress, the queued work, and the holds on workspaces whose keys could not be had.
//!
//! It is a cache of the database, rebuilt from it when the engine starts and after a failed
//! batch (`Engine::sync`); what changed in it and is not written yet waits in
//! [`State::pending`] until the batch's end.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use contracts::model::CampaignSpec;
use contracts::wire::CampaignStatus;
use rustc_hash::FxHashMap;

use super::Id;
use super::dialing::{Pacing, Routing};
use super::inflight::Inflight;
use super::writes::WriteBatch;
use crate::store::WorkspaceRef;

/// A user waiting in a campaign's queue. Its cohort's position and its row are in its
/// queue order (`campaign_users::queue_seq`), the key it waits under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Waiting {
    /// Dials made so far.
    pub(super) attempts: u32,
    /// The number the user's last dial called, for a retry to call without reading and
    /// opening the user's record again (none before the first dial, or after a restart).
    pub(super) number: DialNumber,
}

/// A number in E.164 form in 8 bytes: its digits' value
/// ([`contracts::domain::phone::digits_value`], never 0). `NONE` (0) stands for no number,
/// or one not in that form (it is then read and opened again at each dial).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct DialNumber(u64);

impl DialNumber {
    pub(super) const NONE: DialNumber = DialNumber(0);

    pub(super) fn pack(number: &str) -> DialNumber {
        DialNumber(contracts::domain::phone::digits_value(number).unwrap_or(0))
    }

    /// The number as it was packed, if any.
    pub(super) fn unpack(self) -> Option<String> {
        (self != DialNumber::NONE).then(|| contracts::domain::phone::from_digits_value(self.0))
    }
}

/// A campaign the engine runs.
#[derive(Debug)]
pub(super) struct Run {
    pub(super) id: Id,
    pub(super) ws: Arc<WorkspaceRef>,
    pub(super) spec: Arc<CampaignSpec>,
    /// The spec's connections as the dials record them: each connection's id and its
    /// numbers, as shared texts ([`Run::set_spec`] keeps them in step with `spec`).
    pub(super) lines: Vec<(Id, Vec<Id>)>,
    pub(super) status: CampaignStatus,
    /// The campaign row's revision when loaded (counted up by every change through the API):
    /// one that moved is taken in at the next look (`Engine::sync`). Not `updated_at`: two
    /// changes at one instant leave it as it was.
    pub(super) revision: i64,
    /// Admitted cohorts by position.
    pub(super) cohorts: Vec<Id>,
    pub(super) has_stop_files: bool,
    /// Users waiting, by (due ms, queue order).
    pub(super) ready: BTreeMap<(i64, i64), Waiting>,
    /// The sealed data of the next users to dial, by queue order: read ahead about a
    /// thousand at a time at the dials (the users next in `ready`'s order), and dropped at
    /// each dial, so that memory holds a few thousand users' data whatever the campaign's
    /// size (the database holds it all).
    pub(super) data: FxHashMap<i64, UserData>,
    /// The numbers of the users with a call in progress, by queue order: a user the call's
    /// end puts back in the queue takes its number along ([`Waiting::number`]).
    pub(super) calling: FxHashMap<i64, DialNumber>,
    pub(super) pacing: Option<Pacing>,
    pub(super) routing: Routing,
    /// Pacing or routing changed since the last write.
    pub(super) dirty: bool,
    /// No dial before this: the time the engine (re)loaded the campaign. A campaign paused
    /// for a while, or an engine restarted after a stop, dials from now on, never in the past.
    pub(super) floor: DateTime<Utc>,
}

impl Run {
    /// Takes in a campaign's spec (at its load, or a change through the API).
    pub(super) fn set_spec(&mut self, spec: CampaignSpec) {
        self.lines = lines(&spec);
        self.spec = Arc::new(spec);
    }

    /// A change through the API (a pause, a resume, a PATCH, which may change the rate):
    /// the pace starts afresh from the last dial, whose time is kept at the rate its slots
    /// were taken at (call this before taking in a new spec). The next dial comes one slot of
    /// the spec's rate after it, or later as a new epoch ([`Run::take_slot`]): never a burst,
    /// never a wait left over from an old rate. Doing it again changes nothing, so that the
    /// pace after several changes at one instant is the same whether the engine looked
    /// between them or only after the last.
    pub(super) fn restart_pace(&mut self) {
        let Some(p) = self.pacing else {
            return;
        };
        let restarted = Pacing {
            epoch_us: p.last_slot_us(self.spec.attempts_per_second),
            count: 1,
        };
        if restarted != p {
            self.pacing = Some(restarted);
            self.dirty = true;
        }
    }

    /// Rule 2: takes the pace's slot for a dial at `t` (the time [`super::queue::next_dial`]
    /// chose): the next slot when `t` is it, else a new epoch at `t` (the run was idle: no
    /// user due, window closed, paused, held), so an idle spell never turns into a burst.
    pub(super) fn take_slot(&mut self, t: DateTime<Utc>) {
        let rate = self.spec.attempts_per_second;
        self.pacing = Some(match self.pacing {
            Some(p) if p.next_slot(rate) == t => Pacing {
                count: p.count + 1,
                ..p
            },
            _ => Pacing {
                epoch_us: t.timestamp_micros(),
                count: 1,
            },
        });
    }
}

/// The connections of `spec` as [`Run::lines`] holds them.
pub(super) fn lines(spec: &CampaignSpec) -> Vec<(Id, Vec<Id>)> {
    spec.connections
        .iter()
        .map(|c| {
            let numbers = c
                .phone_numbers
                .iter()
                .map(|n| Id::from(n.to_string()))
                .collect();
            (Id::from(c.connection_id.as_str()), numbers)
        })
        .collect()
}

/// A user's number hash and sealed record.
#[derive(Debug)]
pub(super) struct UserData {
    pub(super) phone_hash: [u8; 16],
    pub(super) sealed: Box<[u8]>,
}

/// What the engine keeps of a run across restarts (stored as JSON with the campaign).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub(super) struct RunState {
    pub(super) pacing: Option<Pacing>,
    pub(super) routing: Routing,
}

/// A hold on a workspace whose keys could not be had.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hold {
    pub(super) until: DateTime<Utc>,
    pub(super) tries: u32,
}

/// Everything the engine holds in memory.
#[derive(Debug, Default)]
pub(super) struct State {
    /// The writes of the current batch.
    pub(super) pending: WriteBatch,
    /// Whether the memory was built from the database.
    pub(super) loaded: bool,
    /// The API's change counter when the memory was last brought up to date.
    pub(super) seen_changes: u64,
    /// Campaigns scheduled, active or paused, by id.
    pub(super) runs: BTreeMap<String, Run>,
    /// (processing time ms, attempt id) of calls in progress.
    pub(super) calls: BinaryHeap<Reverse<(i64, Id)>>,
    /// What the engine knows of the calls in progress (a cache of their rows, without the
    /// sealed request of an instant outbound call, which is read back when the call ends:
    /// every call in progress is here, so each byte kept counts many times).
    pub(super) inflight: Inflight,
    /// (created ms, attempt id) of queued instant outbound calls.
    pub(super) outbound: BinaryHeap<Reverse<(i64, Id)>>,
    /// (ends ms, call id) of answered inbound calls.
    pub(super) inbound: BinaryHeap<Reverse<(i64, Id)>>,
    pub(super) holds: FxHashMap<WorkspaceRef, Hold>,
    /// Set when an event of the current step held a workspace: the step ends there, so that
    /// the driver fetches the workspace's keys again before the hold lapses (a step's keys
    /// are fixed; going on would run the whole backoff without asking the key service).
    pub(super) held_in_step: bool,
}

/// How long a workspace is held after `tries` failures in a row before this one.
fn hold_backoff(tries: u32) -> Duration {
    // 1 s, 2 s, 4 s ... at most 256 s.
    Duration::seconds(1i64 << tries.min(8))
}

impl State {
    /// Holds a workspace whose keys could not be had at `now` (1 s, 2 s, 4 s ... later on
    /// each try in a row); answers until when.
    pub(super) fn hold(&mut self, ws: &WorkspaceRef, now: DateTime<Utc>) -> DateTime<Utc> {
        let tries = self.holds.get(ws).map_or(0, |h| h.tries + 1);
        let until = now + hold_backoff(tries);
        self.holds.insert(ws.clone(), Hold { until, tries });
        until
    }

    /// [`State::hold`] from inside a step: the step ends after this event.
    pub(super) fn hold_in_step(&mut self, ws: &WorkspaceRef, now: DateTime<Utc>) -> DateTime<Utc> {
        self.held_in_step = true;
        self.hold(ws, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_back_off_doubling_up_to_256_seconds() {
        let mut state = State::default();
        let ws = WorkspaceRef::new("org", "ws");
        let t = crate::store::from_ms(0);
        let waits: Vec<i64> = (0..11)
            .map(|_| (state.hold(&ws, t) - t).num_seconds())
            .collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 256, 256]);
        assert!(!state.held_in_step);
        state.hold_in_step(&ws, t);
        assert!(state.held_in_step);
    }

    #[test]
    fn a_dial_number_keeps_every_digit_of_an_e164_number() {
        for n in ["+14155550100", "+1", "+999999999999999", "+100000000000000"] {
            assert_eq!(DialNumber::pack(n).unpack().as_deref(), Some(n));
        }
        assert_ne!(
            DialNumber::pack("+14155550100"),
            DialNumber::pack("+14155550101")
        );
        // Not E.164 (a leading 0 among them): read and opened again at each dial.
        for n in [
            "",
            "+",
            "+007",
            "+014155550100",
            "14155550100",
            "+1234567890123456",
            "+1 415",
            "+1a",
            "++1",
        ] {
            assert_eq!(DialNumber::pack(n), DialNumber::NONE, "{n}");
        }
        assert_eq!(DialNumber::NONE.unpack(), None);
        assert_eq!(std::mem::size_of::<Waiting>(), 16);
    }
}
