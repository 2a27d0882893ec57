//! What the runner sees of the dials, told by the telephony simulator (the carrier) of each
//! call as it is placed ([`Shared`]), attributed to campaigns by the number they left from.
//!
//! Kept compactly so a 1,000,000-user, 30-day run stays small: per campaign, counts by
//! result and connection, each dial's called number and attempt index (8 bytes,
//! [`UserLog`]), the dial times (4 bytes each, [`DialTimes`]); for the chart, counts per time
//! bucket. No dial is kept whole.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use super::times::DialTimes;
use super::users::{UserLog, number_key};
use chrono::{DateTime, Utc};
use contracts::model::CampaignSpec;
use platform::engine::dialing::CallResult;
use telephony_sim::{DecidedBy, DialRequest, DialResult, DialWatcher};

/// The results in chart and table order, named as the campaign statistics name them.
pub(crate) const RESULTS: [(CallResult, &str); 7] = [
    (CallResult::Completed, "connected"),
    (CallResult::ShortDuration, "short_duration"),
    (CallResult::Busy, "busy"),
    (CallResult::NoAnswer, "no_answer"),
    (CallResult::Failed, "failed"),
    (CallResult::ProviderError, "provider_error"),
    (CallResult::InternalError, "internal_error"),
];

fn result_index(r: CallResult) -> usize {
    RESULTS.iter().position(|(x, _)| *x == r).unwrap_or(0)
}

/// A campaign's dials.
#[derive(Clone, Debug, Default)]
pub(crate) struct CampaignDials {
    /// Dials by result (index into [`RESULTS`]).
    pub(crate) by_result: [u64; 7],
    /// Dials by `connection_id`.
    pub(crate) by_connection: BTreeMap<String, u64>,
    /// Dials by the agent number they left from (rule 4: a connection's numbers in turn).
    pub(crate) by_number: BTreeMap<String, u64>,
    /// Dials by called number ([`number_key`]: an integer, not a string, per user).
    pub(crate) users: UserLog,
    /// Dial times, in order.
    pub(crate) times: DialTimes,
    /// Dials placed outside the calling window or the campaign's span.
    pub(crate) outside: u64,
    /// The first few of those, described.
    pub(crate) outside_examples: Vec<String>,
    /// Attempt ids, kept only for campaigns whose webhooks are judged.
    pub(crate) attempt_ids: Option<BTreeSet<String>>,
}

impl CampaignDials {
    /// Dials in `[from, until)`.
    pub(crate) fn dials_between(&self, from: DateTime<Utc>, until: DateTime<Utc>) -> u64 {
        self.times
            .between(from.timestamp_millis(), until.timestamp_millis())
    }

    /// Every dial.
    pub(crate) fn total(&self) -> u64 {
        self.by_result.iter().sum()
    }
}

/// A campaign as the observer knows it: the versions of its spec (a patch makes
/// a new one), by the time they took effect.
#[derive(Clone, Debug)]
pub(crate) struct Watched {
    /// Specs by the time they took effect, oldest first.
    pub(crate) specs: Vec<(DateTime<Utc>, CampaignSpec)>,
}

impl Watched {
    /// The spec in force at `t`.
    pub(crate) fn spec_at(&self, t: DateTime<Utc>) -> &CampaignSpec {
        self.specs
            .iter()
            .rev()
            .find(|(from, _)| *from <= t)
            .or(self.specs.first())
            .map(|(_, s)| s)
            .expect("a watched campaign has a spec")
    }

    /// The openings of the calling window from the campaign's start to `until` (the end of
    /// the run, or the instant it was cancelled), each under the spec in force at its time: a
    /// spec's window counts from the instant it took effect to the next one's, within its
    /// own start and end. Openings that touch where one spec gives way to another are one
    /// when they ask the same rate.
    pub(crate) fn openings(&self, until: DateTime<Utc>) -> Vec<Opening> {
        let mut out: Vec<Opening> = vec![];
        for (i, (from, spec)) in self.specs.iter().enumerate() {
            let next = self
                .specs
                .get(i + 1)
                .map_or(until, |(t, _)| (*t).min(until));
            let a = if i == 0 {
                spec.start
            } else {
                (*from).max(spec.start)
            };
            let b = next.min(spec.end);
            for (open, close) in spec.window.windows_between(a, b) {
                match out.last_mut() {
                    Some(last)
                        if last.close == open
                            && last.attempts_per_second == spec.attempts_per_second =>
                    {
                        last.close = close;
                    }
                    _ => out.push(Opening {
                        open,
                        close,
                        attempts_per_second: spec.attempts_per_second,
                    }),
                }
            }
        }
        out
    }

    /// The whole seconds of [`Watched::openings`] (to `until`) within `[from, to)`.
    pub(crate) fn open_seconds_between(
        &self,
        until: DateTime<Utc>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> i64 {
        self.openings(until)
            .iter()
            .map(|o| (o.close.min(to) - o.open.max(from)).max(chrono::TimeDelta::zero()))
            .sum::<chrono::TimeDelta>()
            .num_seconds()
    }

    /// Every connection the campaign had, in the order they first appeared: its last
    /// weight, its phone numbers (each once, in the order they appeared) and, for one that a
    /// later spec no longer has, the instant that spec took effect.
    pub(crate) fn connections(&self) -> Vec<ConnectionSeen> {
        let mut out: Vec<ConnectionSeen> = vec![];
        for (at, spec) in &self.specs {
            for c in &spec.connections {
                let seen = match out.iter().position(|k| k.connection_id == c.connection_id) {
                    Some(i) => &mut out[i],
                    None => {
                        out.push(ConnectionSeen {
                            connection_id: c.connection_id.clone(),
                            weight: c.weight,
                            phone_numbers: vec![],
                            removed_at: None,
                        });
                        out.last_mut().expect("just pushed")
                    }
                };
                seen.weight = c.weight;
                seen.removed_at = None;
                for n in &c.phone_numbers {
                    if !seen.phone_numbers.iter().any(|p| p == n.as_str()) {
                        seen.phone_numbers.push(n.as_str().to_string());
                    }
                }
            }
            for k in &mut out {
                if k.removed_at.is_none()
                    && !spec
                        .connections
                        .iter()
                        .any(|c| c.connection_id == k.connection_id)
                {
                    k.removed_at = Some(*at);
                }
            }
        }
        out
    }
}

/// An opening of a campaign's calling window ([`Watched::openings`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Opening {
    /// When it opens.
    pub(crate) open: DateTime<Utc>,
    /// When it closes (or the campaign ends, is cancelled, or another spec takes over).
    pub(crate) close: DateTime<Utc>,
    /// The rate the spec in force asks.
    pub(crate) attempts_per_second: f64,
}

/// A connection a campaign had at some time ([`Watched::connections`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ConnectionSeen {
    /// `connection_id`.
    pub(crate) connection_id: String,
    /// Its weight in the last spec that had it.
    pub(crate) weight: u32,
    /// Its numbers, in every spec that had it.
    pub(crate) phone_numbers: Vec<String>,
    /// When a patch took it away (and none brought it back).
    pub(crate) removed_at: Option<DateTime<Utc>>,
}

/// The chart's series: the results in [`RESULTS`] order, then inbound calls answered and
/// not answered.
pub(crate) const SERIES: usize = RESULTS.len() + 2;
/// The series of answered inbound calls.
pub(crate) const INBOUND_ANSWERED: usize = RESULTS.len();
/// The series of inbound calls not answered.
pub(crate) const INBOUND_NOT_ANSWERED: usize = RESULTS.len() + 1;

/// The names of the chart's series, in order.
pub fn series_names() -> Vec<String> {
    RESULTS
        .iter()
        .map(|(_, n)| n.to_string())
        .chain(["inbound_answered".into(), "inbound_not_answered".into()])
        .collect()
}

/// Dials and inbound calls over time, by result, in fixed buckets fine enough to show any
/// part of the run: the report shows the part with activity in coarser ones
/// ([`Chart::rebin`]).
#[derive(Clone, Debug)]
pub(crate) struct Chart {
    /// The first bucket's start.
    pub(crate) from: DateTime<Utc>,
    /// Bucket width in seconds.
    pub(crate) bucket_secs: i64,
    /// Counts per bucket, by series.
    pub(crate) buckets: Vec<[u64; SERIES]>,
}

/// Bucket widths the chart chooses from (seconds).
const WIDTHS: [i64; 11] = [
    60, 300, 900, 1_800, 3_600, 7_200, 10_800, 21_600, 43_200, 86_400, 604_800,
];

/// The most buckets a report's chart has (its points stay few whatever the run's length).
pub const MAX_BUCKETS: i64 = 800;

/// The most buckets the runner counts in (about 1.5 MB at most), fine enough for a chart of
/// a fortieth of the run in [`MAX_BUCKETS`].
const FINE_BUCKETS: i64 = 20_000;

impl Chart {
    /// An empty chart of `[from, until)`.
    pub(crate) fn new(from: DateTime<Utc>, until: DateTime<Utc>) -> Chart {
        let span = (until - from).num_seconds().max(1);
        let bucket_secs = WIDTHS
            .iter()
            .copied()
            .find(|w| span / w < FINE_BUCKETS)
            .unwrap_or(604_800);
        let n = (span + bucket_secs - 1) / bucket_secs;
        Chart {
            from,
            bucket_secs,
            buckets: vec![[0; SERIES]; n as usize],
        }
    }

    /// Counts one dial or call of `series` at `at`.
    pub(crate) fn add(&mut self, at: DateTime<Utc>, series: usize) {
        let i = (at - self.from).num_seconds().div_euclid(self.bucket_secs);
        if let Ok(i) = usize::try_from(i) {
            if i >= self.buckets.len() {
                self.buckets.resize(i + 1, [0; SERIES]);
            }
            self.buckets[i][series] += 1;
        }
    }

    /// The end of the last bucket with something in it.
    pub(crate) fn last_active(&self) -> Option<DateTime<Utc>> {
        let i = self
            .buckets
            .iter()
            .rposition(|b| b.iter().any(|n| *n > 0))?;
        Some(self.from + chrono::Duration::seconds((i as i64 + 1) * self.bucket_secs))
    }

    /// The buckets of `[from, until)` in the widest width that keeps them within
    /// [`MAX_BUCKETS`], a multiple of this chart's: the width, and the non-empty buckets as
    /// `(index, counts)`.
    pub(crate) fn rebin(&self, until: DateTime<Utc>) -> (i64, Vec<(u64, [u64; SERIES])>) {
        let span = (until - self.from).num_seconds().max(1);
        let width = WIDTHS
            .iter()
            .copied()
            .filter(|w| w % self.bucket_secs == 0)
            .find(|w| span / w < MAX_BUCKETS)
            .unwrap_or(604_800.max(self.bucket_secs));
        let per = (width / self.bucket_secs) as usize;
        let shown = ((span + width - 1) / width) as usize;
        let mut out: Vec<(u64, [u64; SERIES])> = vec![];
        for (i, b) in self.buckets.iter().enumerate().take(shown * per) {
            if b.iter().all(|n| *n == 0) {
                continue;
            }
            let k = (i / per) as u64;
            match out.last_mut() {
                Some((j, acc)) if *j == k => {
                    for (a, n) in acc.iter_mut().zip(b) {
                        *a += n;
                    }
                }
                _ => out.push((k, *b)),
            }
        }
        (width, out)
    }
}

/// Everything the runner saw of the dials.
#[derive(Debug)]
pub(crate) struct Observer {
    /// Campaigns by key.
    pub(crate) campaigns: BTreeMap<String, CampaignDials>,
    /// What is known of each campaign, by key.
    pub(crate) watched: BTreeMap<String, Watched>,
    /// The campaign of each agent number.
    from_numbers: rustc_hash::FxHashMap<String, (String, String)>,
    /// Dials no campaign of the scenario made (instant outbound calls, other numbers).
    pub(crate) unattributed: u64,
    /// The chart.
    pub(crate) chart: Chart,
    /// Every dial written out as it is taken in (`harness run --dials`).
    pub(crate) export: Option<super::dials::DialExport>,
    /// Every dial taken in, attributed or not (for the progress line).
    pub(crate) seen: u64,
    /// The export's first failure to write: the run stops at its next stop with it.
    pub(crate) export_error: Option<anyhow::Error>,
}

impl Observer {
    /// An observer of a run over `[from, until)`.
    pub(crate) fn new(from: DateTime<Utc>, until: DateTime<Utc>) -> Observer {
        Observer {
            campaigns: BTreeMap::new(),
            watched: BTreeMap::new(),
            from_numbers: Default::default(),
            unattributed: 0,
            chart: Chart::new(from, until),
            export: None,
            seen: 0,
            export_error: None,
        }
    }

    /// A campaign's dials (none for a campaign not watched).
    pub(crate) fn dials(&self, key: &str) -> &CampaignDials {
        static NONE: std::sync::LazyLock<CampaignDials> =
            std::sync::LazyLock::new(CampaignDials::default);
        self.campaigns.get(key).unwrap_or(&NONE)
    }

    /// A campaign's dials, to be grouped (none for a campaign not watched).
    pub(crate) fn dials_mut(&mut self, key: &str) -> Option<&mut CampaignDials> {
        self.campaigns.get_mut(key)
    }

    /// Starts watching a campaign (or records a new spec of it from `at`).
    pub(crate) fn watch(
        &mut self,
        key: &str,
        at: DateTime<Utc>,
        spec: CampaignSpec,
        keep_ids: bool,
    ) {
        for c in &spec.connections {
            for n in &c.phone_numbers {
                self.from_numbers.insert(
                    n.as_str().to_string(),
                    (key.to_string(), c.connection_id.clone()),
                );
            }
        }
        let w = self
            .watched
            .entry(key.to_string())
            .or_insert_with(|| Watched { specs: vec![] });
        w.specs.push((at, spec));
        let d = self.campaigns.entry(key.to_string()).or_default();
        if keep_ids && d.attempt_ids.is_none() {
            d.attempt_ids = Some(BTreeSet::new());
        }
    }

    /// Takes in one dial (and writes it to the export, if any): told by the telephony
    /// simulator as the dial is made ([`Shared`]), so that no dial waits in its journal.
    pub(crate) fn take(&mut self, req: &DialRequest, result: &DialResult) {
        self.seen += 1;
        let Some((key, connection)) = self.from_numbers.get(&req.from) else {
            self.unattributed += 1;
            return;
        };
        let w = &self.watched[key];
        let spec = w.spec_at(req.at);
        let class = CallResult::classify(result.outcome, result.talk, spec.retry.threshold_seconds);
        let ri = result_index(class);
        self.chart.add(req.at, ri);
        let d = self
            .campaigns
            .get_mut(key)
            .expect("watched campaigns have dials");
        d.by_result[ri] += 1;
        match d.by_connection.get_mut(connection) {
            Some(n) => *n += 1,
            None => {
                d.by_connection.insert(connection.clone(), 1);
            }
        }
        match d.by_number.get_mut(&req.from) {
            Some(n) => *n += 1,
            None => {
                d.by_number.insert(req.from.clone(), 1);
            }
        }
        d.times.push(req.at.timestamp_millis());
        d.users.push(number_key(&req.to), req.attempt_index);
        if !(spec.window.contains(req.at) && req.at >= spec.start && req.at < spec.end) {
            d.outside += 1;
            if d.outside_examples.len() < 5 {
                d.outside_examples.push(format!(
                    "{} to {} at {}",
                    req.attempt_id,
                    req.to,
                    contracts::clock::format_instant(req.at)
                ));
            }
        }
        if let Some(ids) = &mut d.attempt_ids {
            ids.insert(req.attempt_id.clone());
        }
        if self.export_error.is_none()
            && let Some(x) = &mut self.export
        {
            let local = req
                .at
                .with_timezone(&spec.window.timezone())
                .format("%Y-%m-%dT%H:%M:%S%.3f%:z")
                .to_string();
            let written = x.write(&super::dials::Row {
                campaign: key,
                at: req.at,
                local_time: &local,
                attempt_id: &req.attempt_id,
                user_phone_number: &req.to,
                agent_phone_number: &req.from,
                connection_id: connection,
                result: RESULTS[ri].1,
                talk_ms: Some(result.talk.num_milliseconds()),
                attempt_index: req.attempt_index,
            });
            self.export_error = written.err();
        }
    }
}

/// The observer of a run, shared with the telephony simulator, which tells it of each dial
/// as the engine makes it ([`DialWatcher`]): the runner reads it at its stops.
#[derive(Clone, Debug)]
pub(crate) struct Shared(Arc<Mutex<Observer>>);

impl Shared {
    /// `observer`, to be told of dials.
    pub(crate) fn new(observer: Observer) -> Shared {
        Shared(Arc::new(Mutex::new(observer)))
    }

    /// The observer, locked: dials wait until the guard is dropped (never held across an
    /// `await`).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Observer> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl DialWatcher for Shared {
    fn dialled(&self, request: &DialRequest, result: &DialResult, _: &DecidedBy) {
        self.lock().take(request, result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    /// A dial: from, to, at, attempt index, outcome and talk seconds.
    type Dial<'a> = (&'a str, &'a str, &'a str, u32, telephony_sim::Outcome, i64);

    fn dial(o: &mut Observer, (from, to, at, index, outcome, talk_secs): Dial<'_>) {
        let req = DialRequest {
            attempt_id: format!("att-{to}-{index}"),
            from: from.into(),
            to: to.into(),
            at: t(at),
            attempt_index: index,
        };
        let result = DialResult {
            outcome,
            ring: chrono::Duration::seconds(5),
            talk: chrono::Duration::seconds(talk_secs),
            failure_reason: None,
        };
        o.take(&req, &result);
    }

    #[test]
    fn each_dial_told_is_counted_by_result_user_window_and_time() {
        use telephony_sim::Outcome::{Busy, Connected};
        let start = t("2026-03-02T08:00:00Z");
        let spec = contracts::validate::campaign_create(
            &serde_json::json!({
                "name": "Told",
                "start_timestamp": "2026-03-02T09:00:00Z",
                "end_timestamp": "2026-03-03T17:00:00Z",
                "allowed_schedule": {"timezone": "UTC", "allowed_days": ["Monday", "Tuesday"],
                    "allowed_start_time": "09:00", "allowed_end_time": "17:00"},
                "app_config": {
                    "app_id": "app-1", "app_version": 1, "attempts_per_second": 2,
                    "connection_configs": [{"connection_id": "a", "phone_numbers": ["+14155550100"], "weight": 1}],
                    "retry_config": {"max_retries": 2, "retry_on": ["busy"], "threshold_seconds": 15,
                                     "retry_interval_minutes": 30}
                }
            }),
            start,
            Default::default(),
        )
        .unwrap();
        let mut o = Observer::new(start, t("2026-03-04T08:00:00Z"));
        o.watch("c", start, spec, true);
        let a = "+14155550100";
        let other = "+14155559999";
        for d in [
            (a, "+13125550001", "2026-03-02T09:00:00Z", 0, Busy, 0),
            (
                a,
                "+13125550002",
                "2026-03-02T09:00:00.500Z",
                0,
                Connected,
                10,
            ),
            (a, "+13125550001", "2026-03-02T09:30:00Z", 1, Connected, 60),
            // The same attempt index again: a repeat.
            (a, "+13125550001", "2026-03-02T10:00:00Z", 1, Busy, 0),
            // At 17:00: outside the window.
            (a, "+13125550003", "2026-03-02T17:00:00Z", 0, Busy, 0),
            // From a number no campaign uses.
            (other, "+13125550004", "2026-03-02T11:00:00Z", 0, Busy, 0),
        ] {
            dial(&mut o, d);
        }
        assert_eq!((o.seen, o.unattributed), (6, 1));
        let d = o.dials("c");
        assert_eq!(d.total(), 5);
        // connected, short_duration, busy, no_answer, ...
        assert_eq!(d.by_result, [1, 1, 3, 0, 0, 0, 0]);
        assert_eq!(d.by_connection["a"], 5);
        assert_eq!(d.by_number[a], 5);
        let u = d.users.user(number_key("+13125550001"));
        assert_eq!((u.attempts, u.repeats, u.seen), (3, 1, 0b11));
        assert_eq!(o.dials_mut("c").map(|d| d.users.users().count()), Some(3));
        let d = o.dials("c");
        assert_eq!(d.outside, 1);
        assert!(d.outside_examples[0].contains("+13125550003"));
        assert_eq!(d.attempt_ids.as_ref().map(BTreeSet::len), Some(4));
        assert_eq!(
            d.dials_between(t("2026-03-02T09:00:00.500Z"), t("2026-03-02T10:00:00Z")),
            2
        );
        assert_eq!(o.dials("not watched").total(), 0);
    }

    /// A spec with this schedule and these `(connection_id, weight)`s.
    fn spec(schedule: serde_json::Value, connections: &[(&str, u32)]) -> CampaignSpec {
        let configs: Vec<serde_json::Value> = connections
            .iter()
            .enumerate()
            .map(|(i, (id, w))| {
                serde_json::json!({"connection_id": id, "weight": w,
                    "phone_numbers": [format!("+1415555070{i}")]})
            })
            .collect();
        contracts::validate::campaign_create(
            &serde_json::json!({
                "name": "Patched",
                "start_timestamp": "2026-03-02T09:00:00Z",
                "end_timestamp": "2026-03-04T08:00:00Z",
                "allowed_schedule": schedule,
                "app_config": {
                    "app_id": "app-1", "app_version": 1, "attempts_per_second": 0.1,
                    "connection_configs": configs,
                    "retry_config": {"max_retries": 0, "retry_on": ["busy"], "threshold_seconds": 10}
                }
            }),
            t("2026-03-02T08:00:00Z"),
            Default::default(),
        )
        .unwrap()
    }

    #[test]
    fn openings_and_connections_follow_the_spec_in_force() {
        let days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];
        let evening = serde_json::json!({"timezone": "UTC", "allowed_days": days,
            "allowed_start_time": "18:00", "allowed_end_time": "20:00"});
        let new_york = serde_json::json!({"timezone": "America/New_York", "allowed_days": days,
            "allowed_start_time": "09:00", "allowed_end_time": "10:00"});
        let patched = t("2026-03-02T20:31:00Z");
        let w = Watched {
            specs: vec![
                (
                    t("2026-03-02T08:00:00Z"),
                    spec(evening.clone(), &[("a", 7), ("b", 3)]),
                ),
                (patched, spec(new_york, &[("a", 1)])),
            ],
        };
        let end = t("2026-03-04T09:00:00Z");
        let spans: Vec<(DateTime<Utc>, DateTime<Utc>)> =
            w.openings(end).iter().map(|o| (o.open, o.close)).collect();
        // Monday evening under the first schedule; Monday 14:00-15:00 UTC of the second
        // came before the patch, Tuesday's is the first it has.
        assert_eq!(
            spans,
            [
                (t("2026-03-02T18:00:00Z"), t("2026-03-02T20:00:00Z")),
                (t("2026-03-03T14:00:00Z"), t("2026-03-03T15:00:00Z")),
            ]
        );
        assert_eq!(
            w.open_seconds_between(end, t("2026-03-02T09:00:00Z"), end),
            10_800
        );
        assert_eq!(
            w.open_seconds_between(end, t("2026-03-02T19:00:00Z"), t("2026-03-03T14:30:00Z")),
            3_600 + 1_800
        );
        // Cancelled at 14:20 on Tuesday: that opening ends there, and none follows.
        let cancelled = w.openings(t("2026-03-03T14:20:00Z"));
        assert_eq!(cancelled.len(), 2);
        assert_eq!(cancelled[1].close, t("2026-03-03T14:20:00Z"));
        // The same schedule patched mid-opening: one opening.
        let same = Watched {
            specs: vec![
                (
                    t("2026-03-02T08:00:00Z"),
                    spec(evening.clone(), &[("a", 1)]),
                ),
                (
                    t("2026-03-02T19:00:00Z"),
                    spec(evening.clone(), &[("a", 2)]),
                ),
            ],
        };
        assert_eq!(same.openings(t("2026-03-02T23:00:00Z")).len(), 1);
        let seen = w.connections();
        assert_eq!(
            seen.iter()
                .map(|c| (c.connection_id.as_str(), c.weight, c.removed_at))
                .collect::<Vec<_>>(),
            [("a", 1, None), ("b", 3, Some(patched))]
        );
        assert_eq!(seen[1].phone_numbers, ["+14155550701"]);
        // Brought back by a later patch: no longer removed.
        let mut back = w.clone();
        back.specs.push((
            t("2026-03-03T16:00:00Z"),
            spec(evening, &[("a", 1), ("b", 5)]),
        ));
        assert_eq!(back.connections()[1].removed_at, None);
        assert_eq!(back.connections()[1].weight, 5);
    }

    #[test]
    fn a_chart_shows_a_part_of_the_run_in_coarser_buckets() {
        // A 30-day run counts in 5-minute buckets (8,640 of them).
        let mut c = Chart::new(t("2026-03-02T08:00:00Z"), t("2026-04-01T08:00:00Z"));
        assert_eq!(c.bucket_secs, 300);
        c.add(t("2026-03-02T09:00:00Z"), 0);
        c.add(t("2026-03-02T09:14:59Z"), 2);
        c.add(t("2026-03-02T09:15:00Z"), INBOUND_ANSWERED);
        c.add(t("2026-03-02T12:59:00Z"), 0);
        assert_eq!(c.last_active(), Some(t("2026-03-02T13:00:00Z")));
        // Shown to 13:00: five hours in 60-second buckets would be 300; the fine width is
        // 5 minutes, so 5 minutes it is (60 buckets).
        let (w, b) = c.rebin(t("2026-03-02T13:00:00Z"));
        assert_eq!(w, 300);
        let idx: Vec<u64> = b.iter().map(|(i, _)| *i).collect();
        assert_eq!(idx, [12, 14, 15, 59]);
        // The whole run: hours (720 buckets); 09:00 and 09:14:59 in one.
        let (w, b) = c.rebin(t("2026-04-01T08:00:00Z"));
        assert_eq!(w, 3_600);
        assert_eq!(b[0].0, 1);
        assert_eq!(b[0].1[0], 1);
        assert_eq!(b[0].1[2], 1);
        assert_eq!(b[0].1[INBOUND_ANSWERED], 1);
        assert_eq!(b.len(), 2);
        assert!(b.iter().map(|(i, _)| *i).all(|i| (i as i64) < MAX_BUCKETS));
    }
}
