//! The state of a scenario run while it plays ([`Run`]): what it created, what it saw, the
//! stops still ahead. `play.rs` moves it through time, `judge.rs` reads it for each
//! expectation, `collect.rs` turns it into the report.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde_json::Value;
use telephony_sim::RuleHandle;

use super::client::Api;
use super::observe::Shared;
use super::webhooks::Receiver;
use crate::checks::Check;
use crate::report::scenario::TimelineEntry;
use crate::scenario::Loaded;
use crate::stack::Stack;

/// Something to do at a stop.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Event {
    /// Remove a key-service fault (by the runner's index of it).
    FaultOff(usize),
    /// Set a key-service fault of the file.
    FaultOn(usize),
    /// Upload a cohort (index in the file).
    Upload(usize),
    /// A timeline step (index in the file).
    Step(usize),
    /// Judge an expectation (index in the file).
    Judge(usize),
    /// Only stop here (a campaign edge, a progress tick).
    Look,
}

/// A key-service fault the run set.
#[derive(Clone, Debug)]
pub(crate) struct FaultSet {
    /// Its id at the key service.
    pub(crate) id: String,
    /// What it is (`service_unavailable on all`).
    pub(crate) label: String,
    /// When it was set.
    pub(crate) from: DateTime<Utc>,
    /// When it was removed.
    pub(crate) until: Option<DateTime<Utc>>,
    /// Whether it covers a stretch of time (not only its next N calls).
    pub(crate) timed: bool,
}

/// A campaign created by the run.
#[derive(Clone, Debug)]
pub(crate) struct Created {
    /// The platform's id.
    pub(crate) id: String,
    /// The status last seen.
    pub(crate) status: String,
    /// When it was cancelled: its calling window opens no more.
    pub(crate) cancelled_at: Option<DateTime<Utc>>,
}

impl Run<'_> {
    /// The end of a campaign's openings ([`super::observe::Watched::openings`]) as seen at
    /// `now`: the end of the run, or the instant it was cancelled.
    pub(crate) fn openings_until(&self, key: &str) -> DateTime<Utc> {
        let end = self.now.min(self.loaded.until);
        self.campaigns
            .get(key)
            .and_then(|c| c.cancelled_at)
            .map_or(end, |t| t.min(end))
    }
}

/// The state of a run while it plays; the collector reads it at the end.
pub(crate) struct Run<'a> {
    /// The scenario.
    pub(crate) loaded: &'a Loaded,
    /// The seed in use.
    pub(crate) seed: u64,
    /// The stack.
    pub(crate) stack: Stack,
    /// The client.
    pub(crate) api: Api,
    /// The webhook receiver.
    pub(crate) receiver: Receiver,
    /// What was seen of the dials (told of each by the telephony simulator).
    pub(crate) observer: Shared,
    /// Campaigns by key.
    pub(crate) campaigns: BTreeMap<String, Created>,
    /// Deployments by key: their ids.
    pub(crate) deployments: BTreeMap<String, String>,
    /// Cohorts by key: their path once uploaded, and the record last read.
    pub(crate) cohorts: BTreeMap<String, (String, Value)>,
    /// Inbound calls in the order they were made (the timeline's): key and the platform's
    /// record.
    pub(crate) inbound: Vec<(String, Value)>,
    /// What happened.
    pub(crate) timeline: Vec<TimelineEntry>,
    /// The expectations judged so far, by index.
    pub(crate) checks: BTreeMap<usize, Check>,
    /// Steps and uploads the platform refused, each a failed check, in time order.
    pub(crate) refused: Vec<Check>,
    /// Scripted rules and their expected dials.
    pub(crate) rules: Vec<(String, RuleHandle, Option<u64>, String)>,
    /// The key-service faults set, by the runner's index: the fault's id and the stretch it
    /// covers (until `None`: not removed yet).
    pub(super) faults: Vec<FaultSet>,
    pub(super) stops: BTreeMap<DateTime<Utc>, BTreeSet<Event>>,
    /// A campaign's status may have changed since the statuses were last read: set by an
    /// advance that reports a campaign transition and by a stop that ran a step or an
    /// upload. Reading a campaign computes its statistics (a pass over its users), so the
    /// statuses are not read at stops where nothing could have changed them.
    pub(super) statuses_stale: bool,
    /// Campaigns read at this stop, by key: the expectations judged at one stop and the
    /// report read a campaign once (a read is a pass over its users). Emptied when the clock
    /// moves and after a step or an upload.
    pub(super) reads: std::sync::Mutex<BTreeMap<String, Value>>,
    /// The simulated time of the current stop.
    pub(crate) now: DateTime<Utc>,
}
