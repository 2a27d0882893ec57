//! What happens next: the choice of the next event among everything the engine waits for,
//! and when a campaign next dials. Pure functions of the engine's memory: they change
//! nothing and read no database.

use std::cmp::Reverse;

use chrono::{DateTime, Utc};
use contracts::wire::CampaignStatus;

use super::Id;
use super::state::{Hold, Run, State};
use crate::lifecycle::next_time_transition;
use crate::store::from_ms;

/// Something the engine does at a time. Events due at one instant happen in the order of
/// the variants: calls end first, then inbound calls end, then campaigns start and end, then
/// instant outbound calls are dialled, then campaign dials; ties within a kind by id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Event {
    /// A call in progress ends (by attempt id).
    CallEnd(Id),
    /// An answered inbound call ends (by call id).
    InboundEnd(Id),
    /// A campaign's change with time to `active` (its start).
    Activate(Id),
    /// A campaign's change with time to `ended` (its end).
    End(Id),
    /// A queued instant outbound call is dialled (by attempt id).
    Outbound(Id),
    /// A campaign dials its next user.
    Dial(Id),
}

/// Rule 2 (waiting for the pace's slot), the calling window and the end: when a run next
/// dials. The earliest due user, no sooner than the pace allows, inside the window, before
/// the end, after any hold on its workspace and no sooner than the run was (re)loaded.
/// `None`: no user waits, or the next dial would fall at or after the end.
pub(super) fn next_dial(run: &Run, hold: Option<&Hold>) -> Option<DateTime<Utc>> {
    let (&(due_ms, _), _) = run.ready.iter().next()?;
    let mut t = from_ms(due_ms).max(run.spec.start).max(run.floor);
    if let Some(p) = run.pacing {
        t = t.max(p.next_slot(run.spec.attempts_per_second));
    }
    if let Some(h) = hold {
        t = t.max(h.until);
    }
    if !run.spec.window.contains(t) {
        t = run.spec.window.next_open(t);
    }
    (t < run.spec.end).then_some(t)
}

/// The next event and its time: the earliest of the next call end, inbound call end, queued
/// instant outbound call, each run's next change with time ([`next_time_transition`]: the
/// start of a scheduled run, the end of an active one) and each active run's next dial.
/// Paused runs wait. `None`: nothing will happen until something changes.
pub(super) fn next_event(state: &State) -> Option<(DateTime<Utc>, Event)> {
    let mut best: Option<(DateTime<Utc>, Event)> = None;
    let mut offer = |t: DateTime<Utc>, ev: Event| {
        let better = match &best {
            None => true,
            Some((bt, bev)) => (t, &ev) < (*bt, bev),
        };
        if better {
            best = Some((t, ev));
        }
    };
    if let Some(Reverse((t, id))) = state.calls.peek() {
        offer(from_ms(*t), Event::CallEnd(id.clone()));
    }
    if let Some(Reverse((t, id))) = state.inbound.peek() {
        offer(from_ms(*t), Event::InboundEnd(id.clone()));
    }
    if let Some(Reverse((t, id))) = state.outbound.peek() {
        offer(from_ms(*t), Event::Outbound(id.clone()));
    }
    for run in state.runs.values() {
        if let Some((t, to)) = next_time_transition(run.status, run.spec.start, run.spec.end) {
            let ev = if to == CampaignStatus::Active {
                Event::Activate(run.id.clone())
            } else {
                Event::End(run.id.clone())
            };
            offer(t, ev);
        }
        if run.status == CampaignStatus::Active
            && let Some(t) = next_dial(run, state.holds.get(&run.ws))
        {
            offer(t, Event::Dial(run.id.clone()));
        }
    }
    best
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use crate::engine::state::DialNumber;

    use contracts::model::CampaignSpec;
    use serde_json::json;

    use super::*;
    use crate::engine::dialing::{Pacing, Routing};
    use crate::engine::state::Waiting;
    use crate::store::{WorkspaceRef, ms};

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// A campaign from Monday 2026-03-02 09:00 to Friday 17:00 UTC, dialling at 2 per second
    /// inside 09:00-17:00 on weekdays, busy calls retried once after 30 minutes.
    pub(in crate::engine) fn spec() -> CampaignSpec {
        contracts::validate::campaign_create(
            &json!({
                "name": "Queue",
                "start_timestamp": "2026-03-02T09:00:00Z",
                "end_timestamp": "2026-03-06T17:00:00Z",
                "allowed_schedule": {"timezone": "UTC", "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
                                     "allowed_start_time": "09:00", "allowed_end_time": "17:00"},
                "app_config": {
                    "app_id": "app-1", "app_version": 1, "attempts_per_second": 2,
                    "connection_configs": [{"connection_id": "a", "phone_numbers": ["+14155550100"], "weight": 1}],
                    "retry_config": {"max_retries": 1, "retry_on": ["busy"], "threshold_seconds": 15, "retry_interval_minutes": 30}
                }
            }),
            at("2026-03-01T00:00:00Z"),
            Default::default(),
        )
        .unwrap()
    }

    /// A run of [`spec`] as campaign `id`, with users due at `due`.
    fn run(id: &str, status: CampaignStatus, due: &[&str]) -> Run {
        let ready: BTreeMap<(i64, i64), Waiting> = due
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let w = Waiting {
                    attempts: 0,
                    number: DialNumber::NONE,
                };
                ((ms(at(t)), i as i64 + 1), w)
            })
            .collect();
        Run {
            id: Id::from(id),
            ws: Arc::new(WorkspaceRef::new("org", "ws")),
            lines: crate::engine::state::lines(&spec()),
            spec: Arc::new(spec()),
            status,
            revision: 0,
            cohorts: vec!["coh-1".into()],
            has_stop_files: false,
            ready,
            data: Default::default(),
            calling: Default::default(),
            pacing: None,
            routing: Routing::default(),
            dirty: false,
            floor: at("2026-03-01T00:00:00Z"),
        }
    }

    fn with(runs: Vec<Run>) -> State {
        let mut state = State::default();
        for r in runs {
            state.runs.insert(r.id.to_string(), r);
        }
        state
    }

    #[test]
    fn a_user_due_inside_the_window_is_dialled_when_due() {
        let r = run("cmp-a", CampaignStatus::Active, &["2026-03-02T10:00:00Z"]);
        assert_eq!(next_dial(&r, None), Some(at("2026-03-02T10:00:00Z")));
    }

    #[test]
    fn no_user_waiting_no_dial() {
        let r = run("cmp-a", CampaignStatus::Active, &[]);
        assert_eq!(next_dial(&r, None), None);
    }

    #[test]
    fn a_dial_waits_for_the_start_the_floor_and_the_window() {
        // Due before the start: at the start (09:00, the window's opening).
        let r = run("cmp-a", CampaignStatus::Active, &["2026-03-01T12:00:00Z"]);
        assert_eq!(next_dial(&r, None), Some(at("2026-03-02T09:00:00Z")));
        // Due after the window closed on Monday: Tuesday's opening.
        let r = run("cmp-a", CampaignStatus::Active, &["2026-03-02T17:00:00Z"]);
        assert_eq!(next_dial(&r, None), Some(at("2026-03-03T09:00:00Z")));
        // Reloaded later than the user was due: from the reload on, never in the past.
        let mut r = run("cmp-a", CampaignStatus::Active, &["2026-03-02T10:00:00Z"]);
        r.floor = at("2026-03-02T11:30:00Z");
        assert_eq!(next_dial(&r, None), Some(at("2026-03-02T11:30:00Z")));
    }

    #[test]
    fn a_dial_waits_for_its_slot_of_the_pace_and_for_a_hold() {
        let mut r = run("cmp-a", CampaignStatus::Active, &["2026-03-02T10:00:00Z"]);
        // Three dials since 10:00:00 at 2 per second: the fourth is due at 10:00:01.5.
        r.pacing = Some(Pacing {
            epoch_us: at("2026-03-02T10:00:00Z").timestamp_micros(),
            count: 3,
        });
        assert_eq!(next_dial(&r, None), Some(at("2026-03-02T10:00:01.500Z")));
        let hold = Hold {
            until: at("2026-03-02T10:00:04Z"),
            tries: 2,
        };
        assert_eq!(next_dial(&r, Some(&hold)), Some(at("2026-03-02T10:00:04Z")));
    }

    #[test]
    fn a_change_through_the_api_restarts_the_pace_from_the_last_dial_once() {
        let mut r = run("cmp-a", CampaignStatus::Active, &["2026-03-02T10:00:00Z"]);
        // Three dials from 10:00:00 at 2 per second: the last at 10:00:01.
        let dialled = Pacing {
            epoch_us: at("2026-03-02T10:00:00Z").timestamp_micros(),
            count: 3,
        };
        r.pacing = Some(dialled);
        r.restart_pace();
        let restarted = Pacing {
            epoch_us: at("2026-03-02T10:00:01Z").timestamp_micros(),
            count: 1,
        };
        assert_eq!(r.pacing, Some(restarted));
        assert!(r.dirty, "the new pace is written");
        // The next dial one slot after the last: no burst.
        assert_eq!(next_dial(&r, None), Some(at("2026-03-02T10:00:01.500Z")));
        // Taken in again (the engine looked between two changes at one instant): the same.
        r.restart_pace();
        assert_eq!(r.pacing, Some(restarted));
        // A PATCH to 0.5 per second: one slot of the new rate after the last dial.
        let mut spec = (*r.spec).clone();
        spec.attempts_per_second = 0.5;
        r.spec = Arc::new(spec);
        r.restart_pace();
        assert_eq!(r.pacing, Some(restarted));
        assert_eq!(next_dial(&r, None), Some(at("2026-03-02T10:00:03Z")));
        // A run that never dialled has no pace to restart.
        let mut r = run("cmp-b", CampaignStatus::Active, &["2026-03-02T10:00:00Z"]);
        r.restart_pace();
        assert_eq!((r.pacing, r.dirty), (None, false));
    }

    #[test]
    fn no_dial_at_or_after_the_end() {
        // Due on Friday after the window closed: the next opening is after the end.
        let r = run("cmp-a", CampaignStatus::Active, &["2026-03-06T17:00:00Z"]);
        assert_eq!(next_dial(&r, None), None);
    }

    #[test]
    fn the_earliest_event_wins_and_at_one_instant_calls_end_before_campaigns_move() {
        let ten = at("2026-03-02T10:00:00Z");
        let mut state = with(vec![run(
            "cmp-a",
            CampaignStatus::Active,
            &["2026-03-02T10:00:00Z"],
        )]);
        assert_eq!(
            next_event(&state),
            Some((ten, Event::Dial(Id::from("cmp-a"))))
        );
        state.outbound.push(Reverse((ms(ten), Id::from("att-o"))));
        assert_eq!(
            next_event(&state),
            Some((ten, Event::Outbound(Id::from("att-o"))))
        );
        state.inbound.push(Reverse((ms(ten), Id::from("call-i"))));
        assert_eq!(
            next_event(&state),
            Some((ten, Event::InboundEnd(Id::from("call-i"))))
        );
        state.calls.push(Reverse((ms(ten), Id::from("att-c"))));
        assert_eq!(
            next_event(&state),
            Some((ten, Event::CallEnd(Id::from("att-c"))))
        );
        // An earlier dial beats a later call end.
        state.calls.clear();
        state
            .calls
            .push(Reverse((ms(ten) + 1, Id::from("att-later"))));
        state.inbound.clear();
        state.outbound.clear();
        state.runs.get_mut("cmp-a").unwrap().ready =
            BTreeMap::from([((ms(ten) - 1, 1), state.runs["cmp-a"].ready[&(ms(ten), 1)])]);
        assert_eq!(
            next_event(&state),
            Some((
                ten - chrono::Duration::milliseconds(1),
                Event::Dial(Id::from("cmp-a"))
            ))
        );
    }

    #[test]
    fn scheduled_runs_start_active_runs_end_paused_runs_wait() {
        let scheduled = run(
            "cmp-s",
            CampaignStatus::Scheduled,
            &["2026-03-02T09:00:00Z"],
        );
        let state = with(vec![scheduled]);
        assert_eq!(
            next_event(&state),
            Some((
                at("2026-03-02T09:00:00Z"),
                Event::Activate(Id::from("cmp-s"))
            ))
        );
        // With no user left, an active run's next event is its end.
        let state = with(vec![run("cmp-a", CampaignStatus::Active, &[])]);
        assert_eq!(
            next_event(&state),
            Some((at("2026-03-06T17:00:00Z"), Event::End(Id::from("cmp-a"))))
        );
        let state = with(vec![run(
            "cmp-p",
            CampaignStatus::Paused,
            &["2026-03-02T10:00:00Z"],
        )]);
        assert_eq!(next_event(&state), None);
    }

    #[test]
    fn between_two_runs_due_at_once_the_smaller_id_dials_first() {
        let state = with(vec![
            run("cmp-b", CampaignStatus::Active, &["2026-03-02T10:00:00Z"]),
            run("cmp-a", CampaignStatus::Active, &["2026-03-02T10:00:00Z"]),
        ]);
        assert_eq!(
            next_event(&state),
            Some((at("2026-03-02T10:00:00Z"), Event::Dial(Id::from("cmp-a"))))
        );
    }
}
